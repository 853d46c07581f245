package main

import (
	"testing"
)

// TestExampleConfig: examples/agent.yaml, which lists the options, loads.
func TestExampleConfig(t *testing.T) {
	cfg, err := loadConfig([]string{"--config", "../../examples/agent.yaml"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Linux.Disabled || !cfg.Linux.AdoptOriginalRoutes || cfg.VPP.Disabled || cfg.VPP.Socket != "/run/vpp/api.sock" {
		t.Errorf("examples/agent.yaml: linux %+v, vpp %+v", cfg.Linux, cfg.VPP)
	}
}

package main

// Changes to confirm through the agent (issue 19): the state directory, the
// pending confirmation in /info/status and the metrics, and over a restart.

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

func TestStateDirConfig(t *testing.T) {
	cfg, err := loadConfig(nil, env(nil))
	if err != nil || cfg.StateDir != "/var/lib/netagent" {
		t.Fatalf("default state_dir %q, %v", cfg.StateDir, err)
	}
	file := writeFile(t, "agent.yaml", "state_dir: /tmp/from-file\n")
	if cfg, err = loadConfig([]string{"--config", file}, env(nil)); err != nil || cfg.StateDir != "/tmp/from-file" {
		t.Errorf("state_dir from the file: %q, %v", cfg.StateDir, err)
	}
	if cfg, err = loadConfig([]string{"--config", file, "--state-dir", "/tmp/from-flag"}, env(nil)); err != nil || cfg.StateDir != "/tmp/from-flag" {
		t.Errorf("--state-dir: %q, %v", cfg.StateDir, err)
	}
	cfg = defaultConfig()
	cfg.StateDir = ""
	if _, err := New(cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "state_dir: empty") {
		t.Errorf("New with no state_dir: %v", err)
	}
}

// A change to confirm shows in /info/status and the metrics; a restart
// keeps it pending (the state directory holds it), and Confirm ends it.
func TestE2EConfirmOverRestart(t *testing.T) {
	needRoot(t)
	cfg := testConfig(t)
	cfg.Linux.Disabled = true
	a := startAgent(t, cfg, true)
	ctx := context.Background()
	doc := &configpb.Config{VppConfig: &configpb.VppConfig{Interfaces: []*vppif.Interface{{Name: "lo-confirm", Type: vppif.Interface_SOFTWARE_LOOPBACK}}}}
	resp, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{Update: doc, ConfirmWithin: durationpb.New(time.Hour)})
	if err != nil {
		t.Fatalf("update to confirm: %v", err)
	}
	seq := resp.GetSeqNum()
	checkPending := func(a *agent, want bool) {
		t.Helper()
		var st statusJSON
		a.getJSON("/info/status", &st)
		if got := st.PendingConfirmation != nil; got != want || (want && (st.PendingConfirmation.Seq != seq || st.PendingConfirmation.TimeLeft == "")) {
			t.Errorf("/info/status pending_confirmation %+v, want pending %v (#%d)", st.PendingConfirmation, want, seq)
		}
		_, metrics := a.do("GET", "/metrics", nil)
		gauge := "netagent_confirm_pending 0"
		if want {
			gauge = "netagent_confirm_pending 1"
		}
		if !strings.Contains(string(metrics), gauge) || !strings.Contains(string(metrics), "netagent_confirm_reverts_total 0") {
			t.Errorf("/metrics has no %q or no reverts_total 0", gauge)
		}
	}
	checkPending(a, true)
	if fi, err := os.Stat(filepath.Join(cfg.StateDir, "confirm-pending.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, %v", fi, err)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}

	again := testConfig(t)
	again.Linux.Disabled, again.StateDir = true, cfg.StateDir
	b := startAgent(t, again, true)
	checkPending(b, true)
	if got, err := b.configurator().Confirm(ctx, &configuratorpb.ConfirmRequest{SeqNum: seq}); err != nil || got.GetSeqNum() != seq {
		t.Fatalf("Confirm after the restart: %v, %v", got, err)
	}
	checkPending(b, false)
}

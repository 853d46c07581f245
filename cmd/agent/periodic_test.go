package main

import (
	"context"
	"strings"
	"testing"
	"time"

	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// TestE2EPeriodicResync: with drift only reported (scheduler.drift:
// report), a route deleted behind the agent's back stays MISSING with the
// cause; the periodic resync (scheduler.periodic_resync) puts it back.
// Without the periodic resync nothing would (the mutant check: the route
// never comes back).
func TestE2EPeriodicResync(t *testing.T) {
	needRoot(t)
	n := uniqueNames(t, "pr")
	cfg := testConfig(t)
	cfg.Scheduler.Drift = DriftReport
	cfg.Scheduler.PeriodicResync = Duration{MinPeriodicResync}
	a := startAgent(t, cfg, true)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	doc := &configpb.Config{LinuxConfig: &configpb.LinuxConfig{
		Interfaces: []*linuxif.Interface{veth(n.host, n.peer, "", 0, "172.30.31.1/24"), veth(n.peer, n.host, n.ns, 0, "172.30.31.2/24")},
		Routes:     []*linuxl3.Route{route(n.peer, "10.31.0.0/16", "172.30.31.1")},
	}}
	if up, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{Update: doc, WaitDone: true}); err != nil || len(up.GetErrors()) != 0 {
		t.Fatalf("Update: %v %v", up, err)
	}
	key := keyOf(t, doc.LinuxConfig.Routes[0])
	if _, err := ipCmd("-n", n.ns, "route", "del", "10.31.0.0/16"); err != nil {
		t.Fatal(err)
	}
	st := a.waitState(key, "MISSING")
	if !strings.Contains(strings.Join(st.Value.Details, " "), "out of sync with the SB: gone") {
		t.Errorf("the route after its deletion: %+v, want MISSING saying it is gone", st.Value)
	}
	start := time.Now()
	a.waitState(key, "CONFIGURED")
	if out, err := ipCmd("-n", n.ns, "route", "show", "10.31.0.0/16"); err != nil || !strings.Contains(out, "via 172.30.31.1") {
		t.Errorf("the kernel after the periodic resync: %q %v", out, err)
	}
	t.Logf("repaired by the periodic resync %v after it was found gone", time.Since(start).Round(time.Second))
}

package l3plugin_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// TestPrefetchedRoutesOfARestartedVPP: the route dump a resync prefetches
// (read while the interfaces are) is not used when VPP restarts before
// the route Retrieve: the routes went with that VPP, so the Retrieve reads
// the new one, finds them missing, and the resync creates them again.
// Used, the old dump would have them CONFIGURED and VPP without them.
func TestPrefetchedRoutesOfARestartedVPP(t *testing.T) {
	e := newEnv(t)
	if !e.vpp.CanRestart() {
		t.Skip("restarts VPP: not the user's VPP")
	}
	cfg := []kv{
		iface("if1"),
		routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1", OutgoingInterface: "if1"}),
		routeKV(t, &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.3.0.0/16"}),
	}
	e.mustCommit(cfg...)
	routes := e.routes()
	if len(routes) != 2 {
		t.Fatalf("created routes %v", routes)
	}

	// The agent restarts; VPP restarts between the route dump's prefetch
	// and the route Retrieve (in the interfaces' Retrieve, which comes
	// first).
	standIn := vpptest.InterfaceStandIn(e.m)
	retrieve := standIn.Retrieve
	var restarted, prefetched bool
	standIn.Retrieve = func(ctx context.Context, c []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
		if !restarted {
			restarted = true
			prefetched = l3plugin.WaitRoutePrefetch(ctx)
			e.vpp.Restart()
		}
		return retrieve(ctx, c)
	}
	e.s.Close()
	e.s, e.p = vpptest.StartAgent(t, e.m, l3plugin.New, standIn)
	seq, err := e.resync(api.FullResync, cfg...)
	if err != nil {
		t.Fatal(err)
	}
	if !prefetched {
		t.Fatal("the full resync did not prefetch the routes")
	}
	var created []string
	for _, op := range e.executed(seq) {
		if strings.Contains(op, "route/") {
			created = append(created, op)
		}
	}
	if len(created) != 2 {
		t.Errorf("the resync's route operations: %v, want the 2 routes created", created)
	}
	if got := e.routes(); !slices.Equal(got, routes) {
		t.Errorf("routes after the resync:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(routes, "\n"))
	}
	for _, x := range cfg {
		if st := e.state(x.key); st != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", x.key, st)
		}
	}
}

package l3plugin_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// TestRouteBatchFailures: routes created in one transaction go to VPP as
// one batch, pipelined; a route VPP refuses (its interface was deleted
// behind the agent's back, VPP lacks its index) fails alone, with its own
// error, and the routes before and after it in the batch are applied (read
// back from VPP). Deleting them in one transaction is a batch too, and the
// refused route's delete (nothing in VPP) succeeds.
func TestRouteBatchFailures(t *testing.T) {
	e := newEnv(t)
	e.waitConnected()
	e.mustCommit(iface("a"), iface("b"))
	a, b := e.swIfIndex("a"), e.swIfIndex("b")
	e.deleteLoopback(b)

	const n = 40
	var routes []kv
	via := map[string]string{}
	for j := range n {
		dev := "a"
		if j == n/2 {
			dev = "b"
		}
		r := routeKV(t, &vppl3.Route{DstNetwork: fmt.Sprintf("20.0.%d.0/24", j), NextHopAddr: "10.0.0.2", OutgoingInterface: dev})
		routes = append(routes, r)
		via[r.key] = dev
	}
	_, err := e.commit(routes...)
	if err == nil || !strings.Contains(err.Error(), "20.0.20.0/24") {
		t.Fatalf("commit: %v, want the error of the route via b (20.0.20.0/24)", err)
	}
	for _, r := range routes {
		st := e.status(r.key)
		if via[r.key] == "b" {
			if st.GetState() != api.ValueStateFailed || !strings.Contains(st.GetError(), "ip_route_add_del (add vrf 0 20.0.20.0/24") {
				t.Errorf("route via b: %v %q, want FAILED with its ip_route_add_del error", st.GetState(), st.GetError())
			}
			continue
		}
		if st.GetState() != api.ValueStateConfigured {
			t.Errorf("route %s via a: %v %q, want CONFIGURED", r.key, st.GetState(), st.GetError())
		}
	}
	inVPP := map[netip.Prefix]bool{}
	for _, r := range e.vpp.NewRoutes(vpptest.SourceAPI) {
		if len(r.Paths) != 1 || r.Paths[0].SwIfIndex != a {
			t.Errorf("VPP route %s: paths %+v, want one via a (%d)", r, r.Paths, a)
		}
		inVPP[r.Prefix] = true
	}
	if len(inVPP) != n-1 || inVPP[netip.MustParsePrefix("20.0.20.0/24")] {
		t.Errorf("VPP has %d of the routes (the one via b: %v), want the %d via a", len(inVPP), inVPP[netip.MustParsePrefix("20.0.20.0/24")], n-1)
	}

	dels := make([]kv, len(routes))
	for i, r := range routes {
		dels[i] = del(r.key)
	}
	if _, err := e.commit(dels...); err != nil {
		t.Fatalf("deleting the routes: %v", err)
	}
	if left := e.vpp.NewRoutes(vpptest.SourceAPI); len(left) != 0 {
		t.Errorf("VPP still has %d of the routes: %v", len(left), left)
	}
}

package l3plugin

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// A route depends on its interface being up and, with a gateway (not an
// IPv6 link-local one), on the gateway being reachable from it; routes
// through the same interface and gateway share them (one slice, which the
// scheduler copies).
func TestRouteDependenciesOfEachRoute(t *testing.T) {
	up := api.Dependency{Label: "interface e1 up", Key: ifplugin.StateKey("e1", true)}
	for _, tc := range []struct {
		name      string
		r         *linuxl3.Route
		reachable string // the gateway of the AnyOf ("": none)
	}{
		{"link route", &linuxl3.Route{OutgoingInterface: "e1", DstNetwork: "10.1.0.0/16"}, ""},
		{"via a gateway", &linuxl3.Route{OutgoingInterface: "e1", DstNetwork: "10.2.0.0/16", GwAddr: "192.168.1.1"}, "192.168.1.1"},
		{"another route via it", &linuxl3.Route{OutgoingInterface: "e1", DstNetwork: "10.3.0.0/16", GwAddr: "192.168.1.1"}, "192.168.1.1"},
		{"IPv6 via a link-local gateway", &linuxl3.Route{OutgoingInterface: "e1", DstNetwork: "2001:db8::/32", GwAddr: "fe80::1"}, ""},
		{"a bad destination", &linuxl3.Route{OutgoingInterface: "e1", DstNetwork: "nonsense", GwAddr: "192.168.1.1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deps := routeDependencies("", tc.r)
			if len(deps) == 0 || fmt.Sprint(deps[0]) != fmt.Sprint(up) {
				t.Fatalf("dependencies %v, want %v first", deps, up)
			}
			if tc.reachable == "" {
				if len(deps) != 1 {
					t.Errorf("dependencies %v, want the interface's only", deps)
				}
				return
			}
			if len(deps) != 2 || deps[1].Label != "gateway "+tc.reachable+" reachable" {
				t.Fatalf("dependencies %v, want the gateway %s reachable second", deps, tc.reachable)
			}
			sel := deps[1].AnyOf.KeySelector
			if !sel(ifplugin.AddressKeyPrefix("e1")+"192.168.1.7/24") || sel(ifplugin.AddressKeyPrefix("e1")+"192.168.2.7/24") || sel(ifplugin.AddressKeyPrefix("e2")+"192.168.1.7/24") {
				t.Errorf("the AnyOf selector does not accept exactly an address of e1 whose subnet holds %s", tc.reachable)
			}
			// Shared by the routes through the same interface and gateway
			// (the scheduler copies them), and an append copies them.
			other := proto.Clone(tc.r).(*linuxl3.Route)
			other.DstNetwork = "172.16.0.0/12"
			if again := routeDependencies("", other); &again[0] != &deps[0] || cap(deps) != len(deps) {
				t.Errorf("another route through e1 via %s: a slice of its own, or the shared one with room to append (cap %d, len %d)", tc.reachable, cap(deps), len(deps))
			}
		})
	}
}

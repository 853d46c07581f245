package l3plugin

import (
	"fmt"
	"testing"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// A route depends on its outgoing interface and on the VRF tables other
// than 0 it is in or goes via; table 0 routes skip the parse.
func TestRouteDependencies(t *testing.T) {
	iface := api.Dependency{Label: "interface if1", Key: "config/vpp/v2/interfaces/if1"}
	table := func(id uint32, v6 bool) api.Dependency {
		return api.Dependency{Label: tableKey{id, v6}.String(), Key: models.VrfTableKey(id, v6)}
	}
	for _, tc := range []struct {
		name string
		r    *vppl3.Route
		want []api.Dependency
	}{
		{"table 0", &vppl3.Route{DstNetwork: "10.1.0.0/16", OutgoingInterface: "if1"}, []api.Dependency{iface}},
		{"table 0, a bad network", &vppl3.Route{DstNetwork: "10.1.0.0/99", OutgoingInterface: "if1"}, []api.Dependency{iface}},
		{"table 5", &vppl3.Route{VrfId: 5, DstNetwork: "10.1.0.0/16", OutgoingInterface: "if1"}, []api.Dependency{iface, table(5, false)}},
		{"table 5, IPv6", &vppl3.Route{VrfId: 5, DstNetwork: "2001:db8::/32"}, []api.Dependency{table(5, true)}},
		{"from 0 via 7", &vppl3.Route{Type: vppl3.Route_INTER_VRF, DstNetwork: "10.9.0.0/16", ViaVrfId: 7}, []api.Dependency{table(7, false)}},
		{"from 6 via 0", &vppl3.Route{Type: vppl3.Route_INTER_VRF, VrfId: 6, DstNetwork: "10.9.0.0/16"}, []api.Dependency{table(6, false)}},
		{"table 5, a bad network", &vppl3.Route{VrfId: 5, DstNetwork: "nonsense", OutgoingInterface: "if1"}, []api.Dependency{iface}},
		{"table 0, no interface", &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := routeDependencies("", tc.r); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("dependencies %v, want %v", got, tc.want)
			}
		})
	}
}

// The routes of table 0 through one interface share their dependencies:
// one slice (the scheduler copies it), with no room to append in place;
// another interface has its own.
func TestRouteDependenciesShared(t *testing.T) {
	a := routeDependencies("", &vppl3.Route{DstNetwork: "10.1.0.0/16", OutgoingInterface: "if1"})
	b := routeDependencies("", &vppl3.Route{DstNetwork: "10.2.0.0/16", OutgoingInterface: "if1", NextHopAddr: "10.0.0.1"})
	c := routeDependencies("", &vppl3.Route{DstNetwork: "10.1.0.0/16", OutgoingInterface: "if2"})
	if len(a) != 1 || &a[0] != &b[0] || cap(a) != 1 {
		t.Errorf("two routes through if1: %v and %v, want one shared slice of one (cap %d)", a, b, cap(a))
	}
	if len(c) != 1 || &c[0] == &a[0] || c[0].Key != "config/vpp/v2/interfaces/if2" {
		t.Errorf("a route through if2: %v", c)
	}
}

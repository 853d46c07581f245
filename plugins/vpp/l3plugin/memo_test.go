package l3plugin_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// callsByMessage reads the Manager's call counts by message from reg
// (vppconn.Manager.Register).
func (e *env) callsByMessage(reg *prometheus.Registry) map[string]int {
	e.t.Helper()
	families, err := reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "netagent_vpp_api_call_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "message" {
					out[l.GetValue()] += int(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return out
}

// TestResyncDumpsInterfacesOnce: the Retrieves of one resync (interfaces,
// admin states, addresses, unnumbered, routes, ARP entries) share one dump
// of every interface with its addresses and tables (api.RefreshMemo), and
// still find VPP in sync: one sw_interface_dump, one ip_unnumbered_dump,
// and one ip_address_dump per interface and address family, where each
// Retrieve dumping for itself made five, two and two more per interface of
// the agent's; and one dump of the tables and their routes, which the
// route descriptor's Prefetch starts.
func TestResyncDumpsInterfacesOnce(t *testing.T) {
	e := newEnvWith(t, envOptions{ifplugin: true})
	lo := func(name string, ips ...string) kv {
		return kv{ifplugin.InterfaceKey(name), &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: ips}}
	}
	// Its name sorts before its donor's: the resync must leave it alone all
	// the same (the engine once deleted and re-created it).
	un := &vppif.Interface{Name: "memo-un", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true,
		Unnumbered: &vppif.Interface_Unnumbered{InterfaceWithIp: "memo1"}}
	cfg := []kv{
		lo("memo1", "10.61.0.1/24", "2001:db8:61::1/64"),
		lo("memo2", "10.62.0.1/24"),
		lo("memo-down"),
		{ifplugin.InterfaceKey(un.Name), un},
		routeKV(t, &vppl3.Route{DstNetwork: "10.63.0.0/16", NextHopAddr: "10.61.0.2", OutgoingInterface: "memo1"}),
		routeKV(t, &vppl3.Route{DstNetwork: "10.64.0.0/16", NextHopAddr: "10.62.0.2", OutgoingInterface: "memo2"}),
		arpKV(t, &vppl3.ARPEntry{Interface: "memo2", IpAddress: "10.62.0.3", PhysAddress: "02:00:00:00:62:03", Static: true}),
	}
	cfg[2].value.(*vppif.Interface).Enabled = false
	e.mustCommit(cfg...)
	n := len(e.vpp.DumpInterfaces()) // the agent's and VPP's own (local0, ...)

	reg := prometheus.NewRegistry()
	if err := e.m.Register(reg); err != nil {
		t.Fatal(err)
	}
	before := e.callsByMessage(reg)
	e.restartInSync(cfg...)
	calls := e.callsByMessage(reg)
	for msg, k := range before {
		calls[msg] -= k
	}
	want := map[string]int{
		"sw_interface_dump":      1,
		"ip_unnumbered_dump":     1,
		"ip_address_dump":        2 * n,
		"sw_interface_get_table": 2 * n,
		// The routes: the dump prefetched while the interfaces were read
		// is the one the route Retrieve uses (not read again).
		"ip_table_dump": 1,
	}
	got := map[string]int{}
	for msg := range want {
		got[msg] = calls[msg]
	}
	if !maps.Equal(got, want) {
		t.Errorf("the in-sync resync of %d interfaces made %v, want %v (all its calls: %v)", n, got, want, calls)
	}

	// An SB-view dump of everything is a refresh of its own: one
	// sw_interface_dump again (none would be the resync's kept beyond it).
	before = e.callsByMessage(reg)
	everything, err := e.s.DumpValuesByKeyPrefix("", api.SBView)
	if err != nil {
		t.Fatal(err)
	}
	if k := e.callsByMessage(reg)["sw_interface_dump"] - before["sw_interface_dump"]; k != 1 {
		t.Errorf("an SB-view dump of every value made %d sw_interface_dump, want 1", k)
	}

	// The address Retrieve finds the same addresses in the refresh's dump
	// (after the interface Retrieve) as on its own (dumping them itself).
	addressKeys := func(kvs []api.KVWithMetadata) []string {
		var out []string
		for _, x := range kvs {
			if _, _, ok := ifplugin.ParseAddressKey(x.Key); ok && x.Value != nil {
				out = append(out, x.Key)
			}
		}
		slices.Sort(out)
		return out
	}
	alone, err := e.s.DumpValuesByDescriptor(ifplugin.AddressDescriptorName, api.SBView)
	if err != nil {
		t.Fatal(err)
	}
	wantAddrs := []string{
		ifplugin.AddressKey("memo1", "10.61.0.1/24"), ifplugin.AddressKey("memo1", "2001:db8:61::1/64"),
		ifplugin.AddressKey("memo2", "10.62.0.1/24"),
	}
	slices.Sort(wantAddrs)
	if got := addressKeys(everything); !slices.Equal(got, wantAddrs) {
		t.Errorf("addresses in the SB-view dump of everything: %v, want %v", got, wantAddrs)
	}
	if got := addressKeys(alone); !slices.Equal(got, wantAddrs) {
		t.Errorf("addresses in the SB-view dump of the addresses alone: %v, want %v", got, wantAddrs)
	}
}

package l3plugin_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	"github.com/netagent-io/netagent/tests/vpprun"
)

// byHand makes a change as an operator would on VPP's console: the vppctl
// command on a real VPP (the tests' own, or the user's when vppctl is
// found); on vppsim, which has no console, the binary-API requests the
// command makes (api).
func (e *env) byHand(api func(), cli ...string) {
	e.t.Helper()
	real := e.vpp.Own
	if real == nil && e.sim == nil {
		real = vpprun.Attach(e.vpp.Socket)
		if _, err := exec.LookPath("vppctl"); real.Dir == "" && err != nil {
			real = nil
		}
	}
	if real == nil {
		if e.sim == nil {
			e.t.Logf("no vppctl for the VPP at %s (set %s): its binary-API requests instead of: vppctl %s", e.vpp.Socket, vpprun.DirEnv, strings.Join(cli, " "))
		}
		api()
		return
	}
	out, err := real.CLI(cli...)
	if err != nil || strings.TrimSpace(out) != "" {
		e.t.Fatalf("vppctl %s: %v %s", strings.Join(cli, " "), err, out)
	}
}

// retrieve calls the Retrieve of one of the plugin's descriptors directly,
// with the given values to correlate with.
func (e *env) retrieve(descriptor string, correlate ...kv) map[string]proto.Message {
	e.t.Helper()
	var c []api.KVWithMetadata
	for _, x := range correlate {
		c = append(c, api.KVWithMetadata{Key: x.key, Value: x.value, Origin: api.FromNB})
	}
	for _, d := range e.p.Descriptors() {
		if d.Name != descriptor {
			continue
		}
		kvs, err := d.Retrieve(e.t.Context(), c)
		if err != nil {
			e.t.Fatalf("%s Retrieve: %v", descriptor, err)
		}
		out := map[string]proto.Message{}
		for _, x := range kvs {
			out[x.Key] = x.Value
		}
		return out
	}
	e.t.Fatalf("no descriptor %s", descriptor)
	return nil
}

// TestRetrieveFieldByField: every kind of route and ARP entry the model
// has, read back from VPP field by field: with dumps (what VPP has), and by
// the Retrieves on their own (values made from what VPP reports only, no
// configured value to correlate with). An agent restarting on that VPP
// executes nothing; changes made by hand on VPP's console (vppctl) or
// through its API are found by a resync and repaired.
func TestRetrieveFieldByField(t *testing.T) {
	e := newEnv(t)
	routes := []*vppl3.Route{
		{DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1"},
		{DstNetwork: "10.2.0.0/16", OutgoingInterface: "if1"},
		{VrfId: 5, DstNetwork: "10.3.0.0/24", NextHopAddr: "10.9.9.9", OutgoingInterface: "if2", Weight: 3, Preference: 2},
		{VrfId: 6, DstNetwork: "2001:db8:4::/48", NextHopAddr: "2001:db8::4"},
		{DstNetwork: "2001:db8:5::/48", OutgoingInterface: "if1", Weight: 7},
		{DstNetwork: "2001:db8:6::/48", NextHopAddr: "fe80::6", OutgoingInterface: "if2", Preference: 9},
		{Type: vppl3.Route_DROP, VrfId: 5, DstNetwork: "10.7.0.0/16", Weight: 2, Preference: 4},
		{Type: vppl3.Route_DROP, DstNetwork: "2001:db8:8::/48"},
		{Type: vppl3.Route_INTER_VRF, DstNetwork: "10.9.0.0/16", ViaVrfId: 5},
		{Type: vppl3.Route_INTER_VRF, VrfId: 5, DstNetwork: "10.10.0.0/16", ViaVrfId: 7, NextHopAddr: "172.16.0.1"},
		{Type: vppl3.Route_INTER_VRF, VrfId: 6, DstNetwork: "2001:db8:11::/48", ViaVrfId: 0},
		{DstNetwork: "10.12.0.0/16", NextHopAddr: "192.168.1.1", Weight: 2},
		{DstNetwork: "10.12.0.0/16", NextHopAddr: "192.168.1.2", Weight: 5, Preference: 1},
		{DstNetwork: "10.14.0.1/32", NextHopAddr: "192.168.1.1"},
		{VrfId: 7, DstNetwork: "0.0.0.0/0", NextHopAddr: "192.168.1.254"},
	}
	arps := []*vppl3.ARPEntry{
		{Interface: "if1", IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01", Static: true},
		{Interface: "if1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02"},
		{Interface: "if2", IpAddress: "2001:db8::1", PhysAddress: "02:00:00:00:00:03", Static: true},
		{Interface: "if2", IpAddress: "2001:db8::2", PhysAddress: "02:00:00:00:00:04"},
		{Interface: "if2", IpAddress: "fe80::1", PhysAddress: "02:00:00:00:00:05", Static: true},
	}
	cfg := []kv{iface("if1"), iface("if2"), table(5, false), table(7, false), table(6, true)}
	var routeKVs, arpKVs []kv
	for _, r := range routes {
		routeKVs = append(routeKVs, routeKV(t, r))
	}
	for _, a := range arps {
		arpKVs = append(arpKVs, arpKV(t, a))
	}
	cfg = append(append(cfg, routeKVs...), arpKVs...)
	e.mustCommit(cfg...)
	for _, x := range cfg {
		if st := e.state(x.key); st != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", x.key, st)
		}
	}

	// 1. What VPP has.
	wantRoutes := []string{
		"0 10.1.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=1 p=0",
		"0 10.12.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=2 p=0",
		"0 10.12.0.0/16 NORMAL nh=192.168.1.2 if=- table=0 w=5 p=1",
		"0 10.14.0.1/32 NORMAL nh=192.168.1.1 if=- table=0 w=1 p=0",
		"0 10.2.0.0/16 NORMAL nh=- if=if1 table=0 w=1 p=0",
		"0 10.9.0.0/16 NORMAL nh=- if=- table=5 w=1 p=0",
		"0 2001:db8:5::/48 NORMAL nh=- if=if1 table=0 w=7 p=0",
		"0 2001:db8:6::/48 NORMAL nh=fe80::6 if=if2 table=0 w=1 p=9",
		"0 2001:db8:8::/48 DROP nh=- if=- table=0 w=1 p=0",
		"5 10.10.0.0/16 NORMAL nh=172.16.0.1 if=- table=7 w=1 p=0",
		"5 10.3.0.0/24 NORMAL nh=10.9.9.9 if=if2 table=0 w=3 p=2",
		"5 10.7.0.0/16 DROP nh=- if=- table=0 w=2 p=4",
		"6 2001:db8:11::/48 NORMAL nh=- if=- table=0 w=1 p=0",
		"6 2001:db8:4::/48 NORMAL nh=2001:db8::4 if=- table=6 w=1 p=0",
		"7 0.0.0.0/0 NORMAL nh=192.168.1.254 if=- table=7 w=1 p=0",
	}
	wantNeighbors := []string{
		"if1 10.0.0.1 02:00:00:00:00:01 static=true",
		"if1 10.0.0.2 02:00:00:00:00:02 static=false",
		"if2 2001:db8::1 02:00:00:00:00:03 static=true",
		"if2 2001:db8::2 02:00:00:00:00:04 static=false",
		"if2 fe80::1 02:00:00:00:00:05 static=true",
	}
	inVPP := func(when string) {
		t.Helper()
		if got := e.routes(); !slices.Equal(got, wantRoutes) {
			t.Errorf("%s: routes in VPP:\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(wantRoutes, "\n"))
		}
		if got := e.neighbors(); !slices.Equal(got, wantNeighbors) {
			t.Errorf("%s: neighbours in VPP:\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(wantNeighbors, "\n"))
		}
	}
	inVPP("created")
	for _, tb := range []vpptest.Table{{ID: 5}, {ID: 7}, {ID: 6, IPv6: true}} {
		if !e.hasTable(tb.ID, tb.IPv6) {
			t.Errorf("table %d (ipv6 %v) missing", tb.ID, tb.IPv6)
		}
	}

	// 2. The Retrieves on their own. Routes: every path of the API source
	// is reported as the value that makes it, weight 1 for VPP's default.
	got := e.retrieve(l3plugin.RouteDescriptorName)
	for _, x := range routeKVs {
		want := proto.Clone(x.value).(*vppl3.Route)
		want.Weight = max(want.Weight, 1)
		if !proto.Equal(got[x.key], want) {
			t.Errorf("route retrieved on its own: %v, want %v", got[x.key], want)
		}
		delete(got, x.key)
	}
	for k := range got {
		if !slices.ContainsFunc(e.vpp.Before.Routes, func(r vpptest.Route) bool { return strings.Contains(k, "/dst/"+r.Prefix.String()) }) {
			t.Errorf("route retrieved that is not configured: %s %v", k, got[k])
		}
	}
	// ARP entries: correlated with values that differ from VPP's (another
	// MAC), each is reported as VPP has it.
	var wrong []kv
	for _, x := range arpKVs {
		w := proto.Clone(x.value).(*vppl3.ARPEntry)
		w.PhysAddress = "02:ff:ff:ff:ff:ff"
		wrong = append(wrong, kv{x.key, w})
	}
	got = e.retrieve(l3plugin.ARPDescriptorName, wrong...)
	for _, x := range arpKVs {
		if !proto.Equal(got[x.key], x.value) {
			t.Errorf("ARP entry retrieved: %v, want %v", got[x.key], x.value)
		}
		delete(got, x.key)
	}
	if len(got) != 0 {
		t.Errorf("ARP entries retrieved that are not configured: %v", got)
	}

	// 3. The agent restarts on an in-sync VPP: nothing to do.
	e.restartInSync(cfg...)

	// 4. Changes by hand, each found and repaired by a resync.
	if1, if2 := e.vppName("if1"), e.vppName("if2")
	for _, c := range []struct {
		name    string
		cli     []string
		api     func()
		wantOps []string // "<operation> <key>"
	}{
		{
			// The console's routes have a source of their own (CLI): its
			// "ip route del" does not remove the agent's path.
			name: "ip route del of a route of the agent's",
			cli:  []string{"ip", "route", "del", "10.1.0.0/16", "via", "192.168.1.1"},
			api:  func() { e.routeV2(false, vpptest.SourceCLI, 0, "10.1.0.0/16", ip4Path("192.168.1.1", vpptest.NoIndex)) },
		},
		{
			name: "a route of the agent's deleted through the API",
			api: func() {
				e.routeV2(false, vpptest.SourceAPI, 0, "10.14.0.1/32", ip4Path("192.168.1.1", vpptest.NoIndex))
			},
			wantOps: []string{"CREATE " + routeKVs[13].key},
		},
		{
			name:    "the MAC of a static entry changed",
			cli:     []string{"set", "ip", "neighbor", if1, "10.0.0.1", "02:00:00:00:00:99", "static"},
			api:     func() { _ = e.neighborAPI(true, e.swIfIndex("if1"), "10.0.0.1", "02:00:00:00:00:99", true) },
			wantOps: []string{"UPDATE " + arpKVs[0].key},
		},
		{
			name:    "a static entry deleted",
			cli:     []string{"set", "ip", "neighbor", "del", if2, "2001:db8::1", "02:00:00:00:00:03"},
			api:     func() { _ = e.neighborAPI(false, e.swIfIndex("if2"), "2001:db8::1", "02:00:00:00:00:03", true) },
			wantOps: []string{"CREATE " + arpKVs[2].key},
		},
		{
			name:    "a dynamic entry made static",
			cli:     []string{"set", "ip", "neighbor", if2, "2001:db8::2", "02:00:00:00:00:04", "static"},
			api:     func() { _ = e.neighborAPI(true, e.swIfIndex("if2"), "2001:db8::2", "02:00:00:00:00:04", true) },
			wantOps: []string{"DELETE " + arpKVs[3].key, "CREATE " + arpKVs[3].key},
		},
		{
			name:    "a dynamic entry deleted",
			cli:     []string{"set", "ip", "neighbor", "del", if1, "10.0.0.2", "02:00:00:00:00:02"},
			api:     func() { _ = e.neighborAPI(false, e.swIfIndex("if1"), "10.0.0.2", "02:00:00:00:00:02", false) },
			wantOps: []string{"CREATE " + arpKVs[1].key},
		},
	} {
		if c.cli != nil {
			e.byHand(c.api, c.cli...)
		} else {
			c.api()
		}
		seq, err := e.resync(api.DownstreamResync)
		if err != nil {
			t.Fatalf("%s: resync: %v", c.name, err)
		}
		var ops []string
		for _, op := range e.executed(seq) {
			ops = append(ops, strings.Join(strings.Fields(op)[:2], " "))
		}
		if !slices.Equal(ops, c.wantOps) {
			t.Errorf("%s: the resync executed %v, want %v", c.name, e.executed(seq), c.wantOps)
		}
		inVPP("after " + c.name + " and a resync")
	}
}

// vppName is VPP's name of the interface tagged name.
func (e *env) vppName(name string) string {
	e.t.Helper()
	i, ok := e.vpp.InterfaceTagged(name)
	if !ok {
		e.t.Fatalf("VPP has no interface tagged %s", name)
	}
	return i.Name
}

// routeV2 adds or deletes one path of a route of the FIB source src
// (ip_route_add_del_v2, multipath), as a program other than the agent
// would.
func (e *env) routeV2(add bool, src uint8, table uint32, prefix string, path fib_types.FibPath) {
	e.t.Helper()
	dst, err := ip_types.ParsePrefix(prefix)
	if err != nil {
		e.t.Fatal(err)
	}
	e.vppAPI(func(ctx context.Context, ipc ip.RPCService, _ interfaces.RPCService) error {
		_, err := ipc.IPRouteAddDelV2(ctx, &ip.IPRouteAddDelV2{IsAdd: add, IsMultipath: true, Route: ip.IPRouteV2{
			TableID: table, Prefix: dst, Src: src, NPaths: 1, Paths: []fib_types.FibPath{path},
		}})
		return err
	})
}

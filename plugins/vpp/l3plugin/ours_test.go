package l3plugin_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// sourcedRoutes renders the routes of the API and CLI sources VPP did not
// have when the test started, read back with dumps, one line per path of
// each entry's best source: "<source> <table> <prefix> <type> nh=<nh>
// if=<name> table=<lookup> w=<w> p=<p>", interfaces by tag (VPP's name
// without one).
func (e *env) sourcedRoutes() []string {
	e.t.Helper()
	return renderRoutes(e.vpp.NewRoutes(vpptest.SourceAPI, vpptest.SourceCLI), e.ifNames(), true)
}

// vppAPI runs f with a client of VPP's ip and interface APIs, as a program
// other than the agent would.
func (e *env) vppAPI(f func(ctx context.Context, ipc ip.RPCService, ic interfaces.RPCService) error) {
	e.t.Helper()
	conn, err := e.m.Conn(l3plugin.AreaName)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := e.m.CallContext(context.Background())
	defer cancel()
	if err := f(ctx, ip.NewServiceClient(conn), interfaces.NewServiceClient(conn)); err != nil {
		e.t.Fatal(err)
	}
}

func ip4Path(nh string, sw uint32) fib_types.FibPath {
	a, _ := ip_types.ParseAddress(nh)
	return fib_types.FibPath{SwIfIndex: sw, Weight: 1, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4, Nh: fib_types.FibPathNh{Address: a.Un}}
}

// addCLIRoute adds a route with the CLI's FIB source (what "ip route add"
// on VPP's console does) through ip_route_add_del_v2.
func (e *env) addCLIRoute(table uint32, prefix string, path fib_types.FibPath) {
	e.t.Helper()
	dst, err := ip_types.ParsePrefix(prefix)
	if err != nil {
		e.t.Fatal(err)
	}
	e.vppAPI(func(ctx context.Context, ipc ip.RPCService, _ interfaces.RPCService) error {
		_, err := ipc.IPRouteAddDelV2(ctx, &ip.IPRouteAddDelV2{IsAdd: true, IsMultipath: true, Route: ip.IPRouteV2{
			TableID: table, Prefix: dst, Src: vpptest.SourceCLI, NPaths: 1, Paths: []fib_types.FibPath{path},
		}})
		return err
	})
}

// TestResyncDeletesRoutesNoLongerConfigured: the agent restarts with a
// configuration that lost some routes; the full resync deletes exactly
// those (their paths only, in every table, a whole VRF's included) and
// touches neither the routes it keeps, nor the routes of other sources,
// nor the entries VPP makes itself.
func TestResyncDeletesRoutesNoLongerConfigured(t *testing.T) {
	e := newEnv(t)
	keep := []kv{
		iface("if1"), iface("if2"), table(5, false),
		routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1"}),
		routeKV(t, &vppl3.Route{VrfId: 5, DstNetwork: "10.4.0.0/24", NextHopAddr: "10.9.9.9", OutgoingInterface: "if2"}),
		routeKV(t, &vppl3.Route{DstNetwork: "10.8.0.0/16", NextHopAddr: "192.168.1.1"}),
		routeKV(t, &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "0.0.0.0/0"}),
	}
	gone := []kv{
		routeKV(t, &vppl3.Route{DstNetwork: "10.2.0.0/16", OutgoingInterface: "if1", Weight: 2, Preference: 1}),
		routeKV(t, &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.3.0.0/16"}),
		routeKV(t, &vppl3.Route{Type: vppl3.Route_INTER_VRF, DstNetwork: "10.5.0.0/16", ViaVrfId: 5}),
		routeKV(t, &vppl3.Route{VrfId: 6, DstNetwork: "2001:db8:1::/48", NextHopAddr: "2001:db8::1", OutgoingInterface: "if1"}),
		routeKV(t, &vppl3.Route{DstNetwork: "10.8.0.0/16", NextHopAddr: "192.168.1.2"}), // the other path of a kept route
	}
	e.mustCommit(append(append(slices.Clone(keep), table(6, true)), gone...)...)

	// Others' doings: routes of the CLI's source (one to the destination
	// of a route of ours), and an address whose attached and local entries
	// have the interface source.
	if1 := e.swIfIndex("if1")
	e.addCLIRoute(0, "10.9.0.0/16", ip4Path("192.168.1.9", vpptest.NoIndex))
	e.addCLIRoute(0, "10.3.0.0/16", ip4Path("192.168.1.3", vpptest.NoIndex))
	e.vppAPI(func(ctx context.Context, _ ip.RPCService, ic interfaces.RPCService) error {
		a, _ := ip_types.ParseAddressWithPrefix("192.168.1.100/24")
		if _, err := ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: interface_types.InterfaceIndex(if1), IsAdd: true, Prefix: a}); err != nil {
			return err
		}
		_, err := ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: interface_types.InterfaceIndex(if1), Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP})
		return err
	})
	want := []string{
		"api 0 0.0.0.0/0 DROP nh=- if=- table=0 w=1 p=0",
		"api 0 10.1.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=1 p=0",
		"api 0 10.8.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=1 p=0",
		"api 5 10.4.0.0/24 NORMAL nh=10.9.9.9 if=if2 table=0 w=1 p=0",
		"cli 0 10.3.0.0/16 NORMAL nh=192.168.1.3 if=- table=0 w=1 p=0",
		"cli 0 10.9.0.0/16 NORMAL nh=192.168.1.9 if=- table=0 w=1 p=0",
	}
	// A dump shows the paths of an entry's best source: 10.3.0.0/16's CLI
	// path is behind ours.
	if got := e.sourcedRoutes(); len(got) != len(want)+len(gone)-1 {
		t.Fatalf("set up routes:\n%s", strings.Join(got, "\n"))
	}

	// The agent restarts with the kept values only.
	e.startScheduler()
	e.resetCalls()
	seq, err := e.resync(api.FullResync, keep...)
	if err != nil {
		t.Fatalf("full resync: %v", err)
	}
	var wantOps []string
	for _, g := range gone {
		wantOps = append(wantOps, "DELETE "+g.key+" []")
	}
	ops := e.executed(seq)
	sort.Strings(ops)
	sort.Strings(wantOps)
	if !slices.Equal(ops, wantOps) {
		t.Errorf("full resync executed\n%s\nwant\n%s", strings.Join(ops, "\n"), strings.Join(wantOps, "\n"))
	}
	if w, ok := e.writes(); ok && (len(w) != len(gone) || slices.ContainsFunc(w, func(c string) bool { return c != "ip_route_add_del" })) {
		t.Errorf("VPP writes %v, want %d ip_route_add_del", w, len(gone))
	}
	if got := e.sourcedRoutes(); !slices.Equal(got, want) {
		t.Errorf("routes in VPP:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, x := range keep {
		if st := e.state(x.key); st != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", x.key, st)
		}
	}
	for _, x := range gone {
		if st := e.state(x.key); st != api.ValueStateNonexistent {
			t.Errorf("%s: %v after the resync, want NONEXISTENT", x.key, st)
		}
	}

	// In sync now: another resync does nothing, and VPP shows our routes
	// only.
	e.resetCalls()
	seq, err = e.resync(api.FullResync, keep...)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("second full resync executed %v", ops)
	}
	if w, _ := e.writes(); len(w) != 0 {
		t.Errorf("second full resync wrote %v", w)
	}
	keys := e.sbRouteKeys()
	var wantKeys []string
	for _, x := range keep[3:] {
		wantKeys = append(wantKeys, x.key)
	}
	sort.Strings(wantKeys)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("SB view %v, want %v", keys, wantKeys)
	}
}

// TestUnconfiguredRouteThroughForeignInterface: a route of the agent
// through an interface the agent did not create (OBTAINED under VPP's name)
// is found by the resync of a new agent that no longer has it, and deleted;
// the interface stays.
func TestUnconfiguredRouteThroughForeignInterface(t *testing.T) {
	e := newEnvWith(t, envOptions{ifplugin: true})
	var loop0 uint32
	e.vppAPI(func(ctx context.Context, _ ip.RPCService, ic interfaces.RPCService) error {
		r, err := ic.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		loop0 = uint32(r.SwIfIndex)
		return err
	})
	foreign := e.ifNames()[loop0] // VPP's name
	if _, err := e.resync(api.FullResync); err != nil {
		t.Fatal(err)
	}
	if st := e.state(ifplugin.InterfaceKey(foreign)); st != api.ValueStateObtained {
		t.Fatalf("foreign %s: %v, want OBTAINED", foreign, st)
	}
	mine := kv{ifplugin.InterfaceKey("mine"), &vppif.Interface{Name: "mine", Type: vppif.Interface_SOFTWARE_LOOPBACK}}
	viaForeign := routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1", OutgoingInterface: foreign})
	viaMine := routeKV(t, &vppl3.Route{DstNetwork: "10.2.0.0/16", OutgoingInterface: "mine"})
	e.mustCommit(mine, viaForeign, viaMine)
	if st := e.state(viaForeign.key); st != api.ValueStateConfigured {
		t.Fatalf("route through the foreign %s: %v, want CONFIGURED", foreign, st)
	}

	e.startScheduler()
	e.resetCalls()
	seq, err := e.resync(api.FullResync, mine, viaMine)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); !slices.Equal(ops, []string{"DELETE " + viaForeign.key + " []"}) {
		t.Errorf("full resync executed %v, want the route through %s deleted", ops, foreign)
	}
	want := []string{"api 0 10.2.0.0/16 NORMAL nh=- if=mine table=0 w=1 p=0"}
	if got := e.sourcedRoutes(); !slices.Equal(got, want) {
		t.Errorf("routes in VPP %v, want %v", got, want)
	}
	if i, ok := e.vpp.InterfaceNamed(foreign); !ok || i.SwIfIndex != loop0 || i.Tag != "" {
		t.Errorf("the foreign %s: %+v, %v", foreign, i, ok)
	}
	if st := e.state(ifplugin.InterfaceKey(foreign)); st != api.ValueStateObtained {
		t.Errorf("foreign %s: %v after the resync, want OBTAINED", foreign, st)
	}
}

// TestResyncRestoresWeightChangedInVPP: Retrieve reports a route with the
// weight and preference VPP has. The same as configured (weight 0 and 1
// are one), the configured value is reported as it is and a resync does
// nothing; changed behind the agent's back, the route is re-created with
// the configured ones.
func TestResyncRestoresWeightChangedInVPP(t *testing.T) {
	e := newEnv(t)
	weighted := routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1", Weight: 2, Preference: 1})
	unweighted := routeKV(t, &vppl3.Route{DstNetwork: "10.2.0.0/16", NextHopAddr: "192.168.1.1"})
	e.mustCommit(weighted, unweighted)
	seq, err := e.resync(api.FullResync, weighted, unweighted)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Fatalf("resync of an in-sync VPP executed %v", ops)
	}

	// Someone replaces the path of 10.1.0.0/16 with one of weight 7 and
	// preference 3 (the API source, as the agent adds it).
	path := ip4Path("192.168.1.1", vpptest.NoIndex)
	dst, _ := ip_types.ParsePrefix("10.1.0.0/16")
	e.vppAPI(func(ctx context.Context, ipc ip.RPCService, _ interfaces.RPCService) error {
		_, err := ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{
			Prefix: dst, NPaths: 1, Paths: []fib_types.FibPath{{SwIfIndex: path.SwIfIndex, Weight: 7, Preference: 3, Proto: path.Proto, Nh: path.Nh}},
		}})
		return err
	})
	if got := e.sourcedRoutes(); !slices.Contains(got, "api 0 10.1.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=7 p=3") {
		t.Fatalf("routes in VPP %v, want the path of weight 7", got)
	}
	e.resetCalls()
	seq, err = e.resync(api.FullResync, weighted, unweighted)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DELETE " + weighted.key + " [RECREATE]", "CREATE " + weighted.key + " [RECREATE]"}
	if ops := e.executed(seq); !slices.Equal(ops, want) {
		t.Errorf("resync executed %v, want %v", ops, want)
	}
	wantRoutes := []string{
		"api 0 10.1.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=2 p=1",
		"api 0 10.2.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=1 p=0",
	}
	if got := e.sourcedRoutes(); !slices.Equal(got, wantRoutes) {
		t.Errorf("routes in VPP %v, want %v", got, wantRoutes)
	}
}

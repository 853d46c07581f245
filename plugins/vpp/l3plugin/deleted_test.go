package l3plugin_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"

	kvapi "github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// neighborsAt renders the neighbours VPP has under sw_if_index sw ("<ip>
// <mac> static=<bool>", sorted), whether or not an interface has that
// index now.
func (e *env) neighborsAt(sw uint32) []string {
	e.t.Helper()
	var out []string
	for _, n := range e.vpp.DumpNeighbors() {
		if n.SwIfIndex == sw {
			out = append(out, fmt.Sprintf("%s %s static=%v", n.IP, n.MAC, n.Static))
		}
	}
	sort.Strings(out)
	return out
}

// pathsAt renders the paths through sw_if_index sw of the API routes VPP
// did not have when the test started ("<table> <prefix> nh=<nh>", sorted).
func (e *env) pathsAt(sw uint32) []string {
	e.t.Helper()
	var out []string
	for _, r := range e.vpp.NewRoutes(vpptest.SourceAPI) {
		for _, p := range r.Paths {
			if p.SwIfIndex == sw {
				out = append(out, fmt.Sprintf("%d %s nh=%s", r.TableID, r.Prefix, p.NextHop))
			}
		}
	}
	sort.Strings(out)
	return out
}

// neighborAPI adds (or deletes) a neighbour as a program other than the
// agent would, returning VPP's answer.
func (e *env) neighborAPI(add bool, sw uint32, addr, mac string, static bool) error {
	e.t.Helper()
	a, err := ip_types.ParseAddress(addr)
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := ethernet_types.ParseMacAddress(mac)
	if err != nil {
		e.t.Fatal(err)
	}
	flags := ip_neighbor.IP_API_NEIGHBOR_FLAG_NONE
	if static {
		flags = ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC
	}
	conn, err := e.m.Conn(l3plugin.AreaName)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := e.m.CallContext(context.Background())
	defer cancel()
	_, err = ip_neighbor.NewServiceClient(conn).IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: add, Neighbor: ip_neighbor.IPNeighbor{
		SwIfIndex: interface_types.InterfaceIndex(sw), Flags: flags, MacAddress: m, IPAddress: a,
	}})
	return err
}

// createLoopback creates an untagged loopback behind the agent's back.
func (e *env) createLoopback() uint32 {
	e.t.Helper()
	var sw uint32
	e.vppAPI(func(ctx context.Context, _ ip.RPCService, ic interfaces.RPCService) error {
		r, err := ic.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		if err == nil {
			sw = uint32(r.SwIfIndex)
		}
		return err
	})
	return sw
}

// deleteLoopback deletes a loopback behind the agent's back.
func (e *env) deleteLoopback(sw uint32) {
	e.t.Helper()
	e.vppAPI(func(ctx context.Context, _ ip.RPCService, ic interfaces.RPCService) error {
		_, err := ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(sw)})
		return err
	})
}

func wantVPPError(t *testing.T, what string, err error, want api.VPPApiError) {
	t.Helper()
	var e api.VPPApiError
	if !errors.As(err, &e) || e != want {
		t.Errorf("%s: %v, want VPP error %d (%v)", what, err, int32(want), want)
	}
}

// TestVPPNeighborAndRouteBehaviour checks, on vppsim and on a real VPP
// alike, what VPP 25.10 does with the neighbours and route paths of an
// interface that is deleted, on which the agent relies: the dynamic
// neighbours go; the static ones and the route paths stay under the
// sw_if_index, where the messages cannot name them (INVALID_SW_IF_INDEX,
// NO_MATCHING_INTERFACE) until an interface gets that index again, and has
// them. And that an add without the STATIC flag does not make a static
// neighbour dynamic.
func TestVPPNeighborAndRouteBehaviour(t *testing.T) {
	e := newEnv(t)
	loop := e.createLoopback()
	for _, n := range []struct {
		ip, mac string
		static  bool
	}{
		{"10.0.0.1", "02:00:00:00:00:01", true}, {"10.0.0.2", "02:00:00:00:00:02", false},
		{"2001:db8::1", "02:00:00:00:00:03", true}, {"2001:db8::2", "02:00:00:00:00:04", false},
	} {
		if err := e.neighborAPI(true, loop, n.ip, n.mac, n.static); err != nil {
			t.Fatal(err)
		}
	}
	// A dynamic add over a static entry: the same MAC changes nothing,
	// another is refused (-2, VPP's return value for it).
	if err := e.neighborAPI(true, loop, "10.0.0.1", "02:00:00:00:00:01", false); err != nil {
		t.Errorf("dynamic add of a static entry's MAC: %v", err)
	}
	wantVPPError(t, "dynamic add of another MAC over a static entry", e.neighborAPI(true, loop, "10.0.0.1", "02:00:00:00:00:09", false), api.INVALID_SW_IF_INDEX)
	path := ip4Path("10.0.0.1", loop)
	e.vppAPI(func(ctx context.Context, ipc ip.RPCService, _ interfaces.RPCService) error {
		dst, _ := ip_types.ParsePrefix("10.77.0.0/16")
		_, err := ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, IsMultipath: true, Route: ip.IPRoute{Prefix: dst, NPaths: 1, Paths: []fib_types.FibPath{path}}})
		return err
	})

	e.deleteLoopback(loop)
	wantNeighbors := []string{"10.0.0.1 02:00:00:00:00:01 static=true", "2001:db8::1 02:00:00:00:00:03 static=true"}
	if got := e.neighborsAt(loop); !slices.Equal(got, wantNeighbors) {
		t.Errorf("neighbours under the deleted sw_if_index %d: %v, want the static ones %v", loop, got, wantNeighbors)
	}
	wantPaths := []string{"0 10.77.0.0/16 nh=10.0.0.1"}
	if got := e.pathsAt(loop); !slices.Equal(got, wantPaths) {
		t.Errorf("route paths through the deleted sw_if_index %d: %v, want %v", loop, got, wantPaths)
	}
	wantVPPError(t, "deleting a neighbour of a deleted interface", e.neighborAPI(false, loop, "10.0.0.1", "02:00:00:00:00:01", true), api.INVALID_SW_IF_INDEX)
	conn, err := e.m.Conn(l3plugin.AreaName)
	if err != nil {
		t.Fatal(err)
	}
	dst, _ := ip_types.ParsePrefix("10.77.0.0/16")
	_, err = ip.NewServiceClient(conn).IPRouteAddDel(context.Background(), &ip.IPRouteAddDel{IsMultipath: true, Route: ip.IPRoute{Prefix: dst, NPaths: 1, Paths: []fib_types.FibPath{path}}})
	wantVPPError(t, "deleting a path through a deleted interface", err, api.NO_MATCHING_INTERFACE)

	// The next interface gets the index (VPP reuses the last one freed),
	// and the neighbours and paths with it; now they can be deleted.
	again := e.createLoopback()
	if again != loop {
		t.Fatalf("new loopback at %d, want the freed %d", again, loop)
	}
	if got := e.neighborsAt(again); !slices.Equal(got, wantNeighbors) {
		t.Errorf("neighbours of the new loopback: %v, want %v", got, wantNeighbors)
	}
	for _, a := range []string{"10.0.0.1", "2001:db8::1"} {
		if err := e.neighborAPI(false, again, a, "00:00:00:00:00:00", false); err != nil {
			t.Errorf("deleting %s from the new loopback: %v", a, err)
		}
	}
	if got := e.pathsAt(again); !slices.Equal(got, wantPaths) {
		t.Errorf("route paths through the new loopback: %v, want %v", got, wantPaths)
	}
}

// TestARPAndRoutesGoBeforeTheirInterface: the agent deletes the ARP entries
// (static and dynamic, IPv4 and IPv6) and routes of an interface before the
// interface, whether the interface alone is deleted (they wait, PENDING) or
// everything at once: VPP would keep the static neighbours and the paths of
// a deleted interface and give them to the next one at its index.
func TestARPAndRoutesGoBeforeTheirInterface(t *testing.T) {
	e := newEnv(t)
	cfg := []kv{
		iface("if1"),
		arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01", Static: true}),
		arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02"}),
		arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "2001:db8::1", PhysAddress: "02:00:00:00:00:03", Static: true}),
		routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "if1"}),
	}
	for _, deleteAll := range []bool{false, true} {
		e.mustCommit(cfg...)
		sw := e.swIfIndex("if1")
		if got := e.neighborsAt(sw); len(got) != 3 {
			t.Fatalf("neighbours on if1: %v", got)
		}
		if deleteAll {
			var dels []kv
			for _, x := range cfg {
				dels = append(dels, del(x.key))
			}
			e.mustCommit(dels...)
		} else {
			e.mustCommit(del(cfg[0].key))
			for _, x := range cfg[1:] {
				if st := e.state(x.key); st != kvapi.ValueStatePending {
					t.Errorf("%s: %v after its interface went, want PENDING", x.key, st)
				}
			}
		}
		if got := e.neighborsAt(sw); len(got) != 0 {
			t.Errorf("delete all %v: neighbours left under if1's sw_if_index %d: %v", deleteAll, sw, got)
		}
		if got := e.pathsAt(sw); len(got) != 0 {
			t.Errorf("delete all %v: route paths left through if1's sw_if_index %d: %v", deleteAll, sw, got)
		}
	}
}

// TestInterfaceDeletedBehindTheAgentsBack: an interface of the agent is
// deleted by someone else, and another loopback takes its sw_if_index,
// with the static neighbour and the route path VPP kept there. The resync
// that follows does not take them for the agent's ARP entry and route (the
// interface metadata still names the old index while the Retrieves run):
// it re-creates the interface at another index, and the entry and route on
// it.
func TestInterfaceDeletedBehindTheAgentsBack(t *testing.T) {
	e := newEnv(t)
	arp := arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01", Static: true})
	route := routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "if1"})
	cfg := []kv{iface("if1"), arp, route}
	e.mustCommit(cfg...)
	old := e.swIfIndex("if1")

	e.deleteLoopback(old)
	foreign := e.createLoopback()
	if foreign != old {
		t.Fatalf("the other loopback got %d, want if1's freed %d", foreign, old)
	}
	seq, err := e.resync(kvapi.DownstreamResync)
	if err != nil {
		t.Fatal(err)
	}
	// if1, its route and its entry created; nothing deleted (the entry and
	// the route were not found, whatever the other loopback has).
	var ops, wantOps []string
	for _, op := range e.executed(seq) {
		ops = append(ops, strings.Join(strings.Fields(op)[:2], " "))
	}
	for _, x := range cfg {
		wantOps = append(wantOps, "CREATE "+x.key)
	}
	sort.Strings(ops)
	sort.Strings(wantOps)
	if !slices.Equal(ops, wantOps) {
		t.Errorf("resync executed %v, want %v", e.executed(seq), wantOps)
	}
	sw := e.swIfIndex("if1")
	if sw == old {
		t.Fatalf("if1 re-created at its old index %d, which the other loopback has", sw)
	}
	if got, want := e.neighborsAt(sw), []string{"10.0.0.1 02:00:00:00:00:01 static=true"}; !slices.Equal(got, want) {
		t.Errorf("neighbours on the re-created if1 (%d): %v, want %v", sw, got, want)
	}
	if got, want := e.pathsAt(sw), []string{"0 10.1.0.0/16 nh=10.0.0.1"}; !slices.Equal(got, want) {
		t.Errorf("route paths through the re-created if1 (%d): %v, want %v", sw, got, want)
	}
	for _, x := range cfg {
		if st := e.state(x.key); st != kvapi.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", x.key, st)
		}
	}
	seq, err = e.resync(kvapi.DownstreamResync)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("the next resync executed %v", ops)
	}
}

// TestRouteDeletedAfterItsInterfaceWent: the interface of a route is
// deleted by someone else; the route's path stays in VPP, through an
// interface VPP no longer has. Deleting the route removes that path (VPP
// refuses to name the interface, NO_MATCHING_INTERFACE: the entry's other
// paths are kept), and the route of another next hop to the same
// destination stays.
func TestRouteDeletedAfterItsInterfaceWent(t *testing.T) {
	e := newEnv(t)
	viaIf := routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "if1", Weight: 2})
	other := routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.5", Weight: 3, Preference: 1})
	onlyIf := routeKV(t, &vppl3.Route{DstNetwork: "10.2.0.0/16", OutgoingInterface: "if1"})
	e.mustCommit(iface("if1"), viaIf, other, onlyIf)
	sw := e.swIfIndex("if1")
	e.deleteLoopback(sw)

	if _, err := e.commit(del(viaIf.key), del(onlyIf.key)); err != nil {
		t.Fatalf("deleting the routes through the deleted if1: %v", err)
	}
	if got := e.pathsAt(sw); len(got) != 0 {
		t.Errorf("route paths left through the deleted if1's sw_if_index %d: %v", sw, got)
	}
	want := []string{"0 10.1.0.0/16 NORMAL nh=10.0.0.5 if=- table=0 w=3 p=1"}
	if got := e.routes(); !slices.Equal(got, want) {
		t.Errorf("routes in VPP:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st := e.state(other.key); st != kvapi.ValueStateConfigured {
		t.Errorf("%s: %v, want CONFIGURED", other.key, st)
	}
}

// TestRouteInTableDeletedByOthers: someone deletes a VRF table of the
// agent's through the API. VPP keeps it while a route resolves in it (the
// route's next hop without interface holds it), with its routes; deleting
// that route then took the table's last hold, which crashes VPP 25.10: the
// agent takes the API's hold on the table again first. The route added
// again afterwards finds its table.
func TestRouteInTableDeletedByOthers(t *testing.T) {
	e := newEnv(t)
	inVRF := routeKV(t, &vppl3.Route{VrfId: 5, DstNetwork: "10.5.0.0/16", NextHopAddr: "10.0.0.1"})
	e.mustCommit(table(5, false), inVRF)
	e.vppAPI(func(ctx context.Context, ipc ip.RPCService, _ interfaces.RPCService) error {
		_, err := ipc.IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: false, Table: ip.IPTable{TableID: 5}})
		return err
	})
	want := []string{"5 10.5.0.0/16 NORMAL nh=10.0.0.1 if=- table=5 w=1 p=0"}
	if got := e.routes(); !e.hasTable(5, false) || !slices.Equal(got, want) {
		t.Fatalf("after the table's delete: table 5 %v, routes %v, want the table kept with %v", e.hasTable(5, false), got, want)
	}
	if _, err := e.commit(del(inVRF.key)); err != nil {
		t.Fatalf("deleting the route: %v", err)
	}
	if got := e.routes(); len(got) != 0 {
		t.Errorf("routes left: %v", got)
	}
	e.mustCommit(inVRF)
	if got := e.routes(); !slices.Equal(got, want) {
		t.Errorf("the route added again: routes %v, want %v", got, want)
	}
}

// TestLeftoverNeighborOnReusedIndex: someone deletes an interface of
// theirs that has a static neighbour; VPP keeps the neighbour, and the
// agent's next interface gets that index and the neighbour with it. It is
// on the agent's interface now: the Retrieve reports it as a static entry
// of unknown origin (OBTAINED), which no resync deletes, and an entry the
// configuration puts at that address takes it over.
func TestLeftoverNeighborOnReusedIndex(t *testing.T) {
	e := newEnv(t)
	other := e.createLoopback()
	if err := e.neighborAPI(true, other, "10.0.0.9", "02:00:00:00:00:09", true); err != nil {
		t.Fatal(err)
	}
	e.deleteLoopback(other)
	e.mustCommit(iface("if1"))
	if sw := e.swIfIndex("if1"); sw != other {
		t.Fatalf("if1 at %d, want the freed %d", sw, other)
	}
	leftover := arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.9", PhysAddress: "02:00:00:00:00:09", Static: true})
	seq, err := e.resync(kvapi.FullResync, iface("if1"))
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("full resync executed %v", ops)
	}
	if st := e.state(leftover.key); st != kvapi.ValueStateObtained {
		t.Errorf("the leftover neighbour on if1: %v, want OBTAINED", st)
	}
	mine := arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.9", PhysAddress: "02:00:00:00:00:0a", Static: true})
	e.mustCommit(mine)
	if got, want := e.neighbors(), []string{"if1 10.0.0.9 02:00:00:00:00:0a static=true"}; !slices.Equal(got, want) {
		t.Errorf("neighbours %v, want %v", got, want)
	}
	e.mustCommit(del(mine.key))
	if got := e.neighbors(); len(got) != 0 {
		t.Errorf("neighbours left: %v", got)
	}
}

// messageCount is a log handler counting the records of one message.
type messageCount struct {
	msg string
	n   *atomic.Int64
}

func (h messageCount) Enabled(context.Context, slog.Level) bool { return true }
func (h messageCount) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}
func (h messageCount) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h messageCount) WithGroup(string) slog.Handler      { return h }

// TestResyncIndexesInterfacesOnce: the route and ARP Retrieves of one
// resync share the index of the interfaces they look for (the same names:
// every configured interface's, with the lister), so an interface deleted
// behind the agent's back is found missing once a resync, and said once.
func TestResyncIndexesInterfacesOnce(t *testing.T) {
	e := newEnv(t)
	var said atomic.Int64
	log := slog.New(messageCount{msg: "retrieve: VPP has no interface of that name at the sw_if_index of its metadata (deleted by someone else?); its items are not looked for", n: &said})
	e.s, e.p = vpptest.StartAgent(t, e.m, func(m *vppconn.Manager, ifaces ifplugin.InterfaceLookup, _ *slog.Logger) *l3plugin.Plugin {
		return l3plugin.New(m, ifaces, log)
	}, vpptest.InterfaceStandIn(e.m))
	route := routeKV(t, &vppl3.Route{DstNetwork: "10.79.0.0/16", NextHopAddr: "10.79.0.1", OutgoingInterface: "ix2"})
	arp := arpKV(t, &vppl3.ARPEntry{Interface: "ix1", IpAddress: "192.168.79.1", PhysAddress: "02:00:00:00:00:79", Static: true})
	cfg := []kv{iface("ix1"), iface("ix2"), route, arp}
	e.mustCommit(cfg...)
	e.deleteLoopback(e.swIfIndex("ix2"))
	if _, err := e.resync(kvapi.FullResync, cfg...); err != nil {
		t.Logf("resync: %v", err)
	}
	if n := said.Load(); n != 1 {
		t.Errorf("the resync said %d times that ix2 is missing from VPP, want once", n)
	}
	if got := e.vpp.NewRoutes(vpptest.SourceAPI); len(got) != 1 {
		t.Errorf("VPP routes after the resync: %v, want the route through ix2, re-created", got)
	}
}

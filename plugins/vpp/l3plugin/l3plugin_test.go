package l3plugin_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

func routeKV(t *testing.T, r *vppl3.Route) kv {
	t.Helper()
	k, err := models.VPPRoute.Key(r)
	if err != nil {
		t.Fatal(err)
	}
	return kv{k, r}
}

func arpKV(t *testing.T, a *vppl3.ARPEntry) kv {
	t.Helper()
	k, err := models.VPPARP.Key(a)
	if err != nil {
		t.Fatal(err)
	}
	return kv{k, a}
}

// ifNames names VPP's interfaces for the renderings: by tag (the logical
// name), by VPP's name when untagged, "-" for no interface.
func (e *env) ifNames() map[uint32]string {
	e.t.Helper()
	names := map[uint32]string{vpptest.NoIndex: "-"}
	for _, i := range e.vpp.DumpInterfaces() {
		names[i.SwIfIndex] = i.Tag
		if i.Tag == "" {
			names[i.SwIfIndex] = i.Name
		}
	}
	return names
}

// renderRoutes renders routes one line per path: "[<source> ]<table>
// <prefix> <type> nh=<nh> if=<name> table=<lookup> w=<w> p=<p>", sorted.
func renderRoutes(routes []vpptest.Route, names map[uint32]string, withSource bool) []string {
	var out []string
	for _, r := range routes {
		src := ""
		if withSource {
			switch r.Source {
			case vpptest.SourceAPI:
				src = "api "
			case vpptest.SourceCLI:
				src = "cli "
			default:
				src = fmt.Sprint(r.Source, " ")
			}
		}
		for _, p := range r.Paths {
			nh := "-"
			if p.NextHop.IsValid() {
				nh = p.NextHop.String()
			}
			typ := strings.TrimPrefix(p.Type.String(), "FIB_API_PATH_TYPE_")
			out = append(out, fmt.Sprintf("%s%d %s %s nh=%s if=%s table=%d w=%d p=%d", src, r.TableID, r.Prefix, typ, nh, names[p.SwIfIndex], p.TableID, p.Weight, p.Preference))
		}
	}
	sort.Strings(out)
	return out
}

// routes renders the routes of the API source (the agent's) that VPP did
// not have when the test started, read back with dumps.
func (e *env) routes() []string {
	e.t.Helper()
	return renderRoutes(e.vpp.NewRoutes(vpptest.SourceAPI), e.ifNames(), false)
}

// neighbors renders the neighbours of the interfaces VPP did not have when
// the test started, interfaces by tag (VPP's name when untagged).
func (e *env) neighbors() []string {
	e.t.Helper()
	names := map[uint32]string{}
	for _, i := range e.vpp.NewInterfaces() {
		names[i.SwIfIndex] = i.Tag
		if i.Tag == "" {
			names[i.SwIfIndex] = i.Name
		}
	}
	var out []string
	for _, n := range e.vpp.DumpNeighbors() {
		if name, ok := names[n.SwIfIndex]; ok {
			out = append(out, fmt.Sprintf("%s %s %s static=%v", name, n.IP, n.MAC, n.Static))
		}
	}
	sort.Strings(out)
	return out
}

// hasTable tells whether VPP has the IP table.
func (e *env) hasTable(id uint32, ipv6 bool) bool {
	e.t.Helper()
	return slices.Contains(e.vpp.DumpTables(), vpptest.Table{ID: id, IPv6: ipv6})
}

// sbRouteKeys lists the keys of the routes the route descriptor retrieves,
// sorted, the routes VPP had when the test started aside.
func (e *env) sbRouteKeys() []string {
	e.t.Helper()
	sb, err := e.s.DumpValuesByDescriptor(l3plugin.RouteDescriptorName, api.SBView)
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for _, v := range sb {
		parts, err := models.VPPRoute.ParseKey(v.Key)
		if err != nil {
			e.t.Fatalf("retrieved %s: %v", v.Key, err)
		}
		vrf, _ := strconv.ParseUint(parts["vrf_id"], 10, 32)
		dst, err := netip.ParsePrefix(parts["dst_network"])
		if err == nil && e.vpp.Before.HasRoute(uint32(vrf), dst.Masked()) {
			continue
		}
		keys = append(keys, v.Key)
	}
	sort.Strings(keys)
	return keys
}

func TestRoutes(t *testing.T) {
	e := newEnv(t)
	nhOnly := routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1"})
	ifOnly := routeKV(t, &vppl3.Route{DstNetwork: "10.2.0.0/16", OutgoingInterface: "if1"})
	drop := routeKV(t, &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.3.0.0/16"})
	vrf := routeKV(t, &vppl3.Route{VrfId: 5, DstNetwork: "10.4.0.0/24", NextHopAddr: "10.9.9.9", OutgoingInterface: "if1", Weight: 3, Preference: 2})
	inter := routeKV(t, &vppl3.Route{Type: vppl3.Route_INTER_VRF, DstNetwork: "10.5.0.0/16", ViaVrfId: 7})
	v6 := routeKV(t, &vppl3.Route{VrfId: 6, DstNetwork: "2001:db8:1::/48", NextHopAddr: "2001:db8::1", OutgoingInterface: "if1"})
	waiting := routeKV(t, &vppl3.Route{DstNetwork: "10.7.0.0/16", OutgoingInterface: "if2"})
	e.mustCommit(iface("if1"), table(5, false), table(7, false), table(6, true), nhOnly, ifOnly, drop, vrf, inter, v6, waiting)

	for _, x := range []kv{nhOnly, ifOnly, drop, vrf, inter, v6} {
		if st := e.state(x.key); st != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", x.key, st)
		}
	}
	if st := e.status(waiting.key); st.GetState() != api.ValueStatePending || !slices.Contains(st.GetDetails(), "interface if2") {
		t.Errorf("route through the missing if2: %v, want PENDING on its interface", st)
	}
	want := []string{
		"0 10.1.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=1 p=0",
		"0 10.2.0.0/16 NORMAL nh=- if=if1 table=0 w=1 p=0",
		"0 10.3.0.0/16 DROP nh=- if=- table=0 w=1 p=0",
		"0 10.5.0.0/16 NORMAL nh=- if=- table=7 w=1 p=0",
		"5 10.4.0.0/24 NORMAL nh=10.9.9.9 if=if1 table=0 w=3 p=2",
		"6 2001:db8:1::/48 NORMAL nh=2001:db8::1 if=if1 table=0 w=1 p=0",
	}
	if got := e.routes(); !slices.Equal(got, want) {
		t.Errorf("routes in VPP:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, tk := range []vpptest.Table{{ID: 5}, {ID: 7}, {ID: 6, IPv6: true}} {
		if !e.hasTable(tk.ID, tk.IPv6) {
			t.Errorf("table %d (ipv6 %v) not created: %+v", tk.ID, tk.IPv6, e.vpp.DumpTables())
		}
	}

	// The interface comes: the route waiting for it is added.
	e.mustCommit(iface("if2"))
	if st := e.state(waiting.key); st != api.ValueStateConfigured {
		t.Errorf("route through if2: %v after if2 came, want CONFIGURED", st)
	}
	if got := e.routes(); !slices.Contains(got, "0 10.7.0.0/16 NORMAL nh=- if=if2 table=0 w=1 p=0") {
		t.Errorf("routes in VPP %v lack the one through if2", got)
	}

	// Retrieve reports our routes only, not the entries VPP makes itself.
	keys := e.sbRouteKeys()
	wantKeys := []string{nhOnly.key, ifOnly.key, drop.key, vrf.key, inter.key, v6.key, waiting.key}
	sort.Strings(wantKeys)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("retrieved %v, want %v", keys, wantKeys)
	}

	// A change re-creates the route; an equivalent value changes nothing.
	e.resetCalls()
	seq := e.mustCommit(kv{nhOnly.key, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1", Weight: 5}})
	if ops := e.executed(seq); !slices.Equal(ops, []string{"DELETE " + nhOnly.key + " [RECREATE]", "CREATE " + nhOnly.key + " [RECREATE]"}) {
		t.Errorf("executed %v, want DELETE and CREATE", ops)
	}
	if w, ok := e.writes(); ok && !slices.Equal(w, []string{"ip_route_add_del", "ip_route_add_del"}) {
		t.Errorf("VPP writes %v", w)
	}
	if got := e.routes(); !slices.Contains(got, "0 10.1.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=5 p=0") {
		t.Errorf("routes in VPP %v lack the new weight", got)
	}
	e.resetCalls()
	seq = e.mustCommit(
		kv{ifOnly.key, &vppl3.Route{DstNetwork: "10.2.3.4/16", OutgoingInterface: "if1", Weight: 1}},
		kv{drop.key, &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.3.0.0/16", Weight: 1}},
	)
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("equivalent values executed %v", ops)
	}
	if w, _ := e.writes(); len(w) != 0 {
		t.Errorf("equivalent values wrote %v", w)
	}

	// Two keys to one destination are two paths of one VPP route.
	ecmp1 := routeKV(t, &vppl3.Route{DstNetwork: "10.8.0.0/16", NextHopAddr: "192.168.1.1"})
	ecmp2 := routeKV(t, &vppl3.Route{DstNetwork: "10.8.0.0/16", NextHopAddr: "192.168.1.2"})
	e.mustCommit(ecmp1, ecmp2)
	n := 0
	for _, r := range e.vpp.NewRoutes(vpptest.SourceAPI) {
		if r.TableID == 0 && r.Prefix == netip.MustParsePrefix("10.8.0.0/16") {
			n = len(r.Paths)
		}
	}
	if n != 2 {
		t.Errorf("10.8.0.0/16 has %d paths, want 2", n)
	}
	e.mustCommit(del(ecmp1.key))
	if got := e.routes(); slices.Contains(got, "0 10.8.0.0/16 NORMAL nh=192.168.1.1 if=- table=0 w=1 p=0") ||
		!slices.Contains(got, "0 10.8.0.0/16 NORMAL nh=192.168.1.2 if=- table=0 w=1 p=0") {
		t.Errorf("after deleting one of two paths: %v", got)
	}

	// Deleting the interface deletes the routes through it first.
	e.mustCommit(del(iface("if2").key))
	if st := e.state(waiting.key); st != api.ValueStatePending {
		t.Errorf("route through if2: %v after if2 went, want PENDING", st)
	}
	for _, r := range e.routes() {
		if strings.Contains(r, "10.7.0.0/16") {
			t.Errorf("route through the deleted if2 still in VPP: %s", r)
		}
	}
	e.mustCommit(del(nhOnly.key), del(ifOnly.key), del(drop.key), del(vrf.key), del(inter.key), del(v6.key), del(ecmp2.key), del(waiting.key))
	if got := e.routes(); len(got) != 0 {
		t.Errorf("routes left in VPP: %v", got)
	}
}

func TestInvalidRoutes(t *testing.T) {
	e := newEnv(t)
	prefix := models.VPPRoute.KeyPrefix
	for _, c := range []struct {
		key    string // the value's own where the model gives one
		r      *vppl3.Route
		fields []string
		want   string
	}{
		// VPP's limits (the model has none).
		{"", &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1", Weight: 256, Preference: 300}, []string{"weight", "preference"}, "VPP keeps 8 bits"},
		// The model's rules of the route types, found before the key's
		// (a DROP route's next hop is not "missing from the key").
		{prefix + "vrf/0/dst/10.0.0.0/8", &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1"}, []string{"next_hop_addr"}, "a DROP route has no next hop"},
		{prefix + "if/x/vrf/0/dst/10.0.0.0/8", &vppl3.Route{Type: vppl3.Route_INTER_VRF, DstNetwork: "10.0.0.0/8", OutgoingInterface: "x"}, []string{"outgoing_interface", "via_vrf_id"}, "no outgoing interface"},
		{prefix + "vrf/0/dst/10.0.0.0/8", &vppl3.Route{DstNetwork: "10.0.0.0/8"}, []string{"next_hop_addr"}, "needs a next hop or an outgoing interface"},
		{prefix + "vrf/0/dst/10.0.0.0/8/gw/1.1.1.1", &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1", ViaVrfId: 3}, []string{"via_vrf_id"}, "only an INTER_VRF route"},
	} {
		x := kv{c.key, c.r}
		if c.key == "" {
			x = routeKV(t, c.r)
		}
		_, err := e.commit(x)
		var inv *api.InvalidValueError
		if !errors.As(err, &inv) {
			t.Errorf("%v: commit error %v, want InvalidValueError", c.r, err)
			continue
		}
		if !slices.Equal(inv.InvalidFields, c.fields) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "belongs under") {
			t.Errorf("%v: invalid fields %v (%v), want %v and %q", c.r, inv.InvalidFields, err, c.fields, c.want)
		}
		if st := e.state(x.key); st != api.ValueStateInvalid {
			t.Errorf("%v: %v, want INVALID", c.r, st)
		}
		e.mustCommit(del(x.key))
	}
	// A model error names the field too.
	_, err := e.commit(kv{models.VPPRoute.KeyPrefix + "vrf/0/dst/10.0.0.0/8", &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "fe80::1"}})
	var inv *api.InvalidValueError
	if !errors.As(err, &inv) || !slices.Contains(inv.InvalidFields, "next_hop_addr") {
		t.Errorf("next hop of another family: %v", err)
	}
	if got := e.routes(); len(got) != 0 {
		t.Errorf("invalid routes reached VPP: %v", got)
	}
}

// A transaction that creates an interface, an ARP entry and a route on it,
// all or nothing: the route fails, the others are undone.
func TestRevertWhenRouteFails(t *testing.T) {
	vpptest.NeedSim(t, "fails requests (FailNext)")
	e := newEnv(t)
	route := routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1", OutgoingInterface: "rv"})
	arp := arpKV(t, &vppl3.ARPEntry{Interface: "rv", IpAddress: "192.168.1.1", PhysAddress: "02:00:00:00:00:01", Static: true})
	e.sim.FailNext("ip_route_add_del", -1, 1)
	seq, err := e.commitWith(api.TxnOptions{Revert: true}, iface("rv"), arp, route)
	var te *api.TransactionError
	if !errors.As(err, &te) || te.ErrorOf(route.key) == nil {
		t.Fatalf("commit: %v, want the route's error", err)
	}
	if _, ok := e.vpp.InterfaceTagged("rv"); ok {
		t.Errorf("interface rv still in VPP after the revert")
	}
	if n := e.neighbors(); len(n) != 0 {
		t.Errorf("neighbours left after the revert: %v", n)
	}
	if r := e.routes(); len(r) != 0 {
		t.Errorf("routes left after the revert: %v", r)
	}
	rec := e.s.GetRecordedTransaction(seq)
	reverted := map[string]bool{}
	for _, op := range rec.Executed {
		if op.IsRevert {
			reverted[op.Key] = true
		}
	}
	if !reverted[iface("rv").key] || !reverted[arp.key] {
		t.Errorf("reverted %v, want the interface and the ARP entry", reverted)
	}
	for _, k := range []string{iface("rv").key, arp.key, route.key} {
		if st := e.state(k); st == api.ValueStateConfigured {
			t.Errorf("%s CONFIGURED after the revert", k)
		}
	}
	// The same transaction without the failure goes through.
	seq = e.mustCommit(iface("rv"), arp, route)
	if len(e.routes()) != 1 || len(e.neighbors()) != 1 {
		t.Errorf("after a clean commit: routes %v, neighbours %v (executed %v)", e.routes(), e.neighbors(), e.executed(seq))
	}
}

func TestARPEntries(t *testing.T) {
	e := newEnv(t)
	a4 := &vppl3.ARPEntry{Interface: "if1", IpAddress: "192.168.1.10", PhysAddress: "02:00:00:00:00:0a", Static: true}
	a6 := &vppl3.ARPEntry{Interface: "if1", IpAddress: "2001:db8::10", PhysAddress: "02:00:00:00:00:0b", Static: true}
	k4, k6 := arpKV(t, a4), arpKV(t, a6)
	e.mustCommit(iface("if1"), k4, k6)
	want := []string{"if1 192.168.1.10 02:00:00:00:00:0a static=true", "if1 2001:db8::10 02:00:00:00:00:0b static=true"}
	if got := e.neighbors(); !slices.Equal(got, want) {
		t.Errorf("neighbours %v, want %v", got, want)
	}

	// A new MAC: updated in place.
	e.resetCalls()
	seq := e.mustCommit(kv{k4.key, &vppl3.ARPEntry{Interface: "if1", IpAddress: "192.168.1.10", PhysAddress: "02:00:00:00:00:aa", Static: true}})
	if ops := e.executed(seq); !slices.Equal(ops, []string{"UPDATE " + k4.key + " []"}) {
		t.Errorf("executed %v, want one UPDATE", ops)
	}
	if w, ok := e.writes(); ok && !slices.Equal(w, []string{"ip_neighbor_add_del"}) {
		t.Errorf("VPP writes %v, want one ip_neighbor_add_del", w)
	}
	if got := e.neighbors(); !slices.Contains(got, "if1 192.168.1.10 02:00:00:00:00:aa static=true") {
		t.Errorf("neighbours %v lack the new MAC", got)
	}

	// The same entry spelled differently: nothing.
	seq = e.mustCommit(kv{k4.key, &vppl3.ARPEntry{Interface: "if1", IpAddress: "192.168.1.10", PhysAddress: "02:00:00:00:00:AA", Static: true}})
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("equivalent entry executed %v", ops)
	}

	// Static to dynamic: VPP keeps a static entry static, so re-created.
	seq = e.mustCommit(kv{k4.key, &vppl3.ARPEntry{Interface: "if1", IpAddress: "192.168.1.10", PhysAddress: "02:00:00:00:00:aa"}})
	if ops := e.executed(seq); !slices.Equal(ops, []string{"DELETE " + k4.key + " [RECREATE]", "CREATE " + k4.key + " [RECREATE]"}) {
		t.Errorf("executed %v, want a re-creation", ops)
	}
	if got := e.neighbors(); !slices.Contains(got, "if1 192.168.1.10 02:00:00:00:00:aa static=false") {
		t.Errorf("neighbours %v, want the entry dynamic", got)
	}
	// And back: in place.
	seq = e.mustCommit(kv{k4.key, &vppl3.ARPEntry{Interface: "if1", IpAddress: "192.168.1.10", PhysAddress: "02:00:00:00:00:aa", Static: true}})
	if ops := e.executed(seq); !slices.Equal(ops, []string{"UPDATE " + k4.key + " []"}) {
		t.Errorf("executed %v, want one UPDATE", ops)
	}

	// Delete.
	e.mustCommit(del(k4.key), del(k6.key))
	if got := e.neighbors(); len(got) != 0 {
		t.Errorf("neighbours left: %v", got)
	}
	// An entry waits for its interface.
	k := arpKV(t, &vppl3.ARPEntry{Interface: "if2", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02", Static: true})
	e.mustCommit(k)
	if st := e.state(k.key); st != api.ValueStatePending {
		t.Errorf("entry on the missing if2: %v, want PENDING", st)
	}
	e.mustCommit(iface("if2"))
	if st := e.state(k.key); st != api.ValueStateConfigured {
		t.Errorf("entry on if2: %v after if2 came, want CONFIGURED", st)
	}
}

func TestResyncAndVPPRestart(t *testing.T) {
	e := newEnv(t)
	cfg := []kv{
		iface("if1"), iface("if2"), table(5, false),
		routeKV(t, &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1"}),
		routeKV(t, &vppl3.Route{DstNetwork: "10.2.0.0/16", OutgoingInterface: "if1", Weight: 2, Preference: 1}),
		routeKV(t, &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.3.0.0/16"}),
		routeKV(t, &vppl3.Route{VrfId: 5, DstNetwork: "10.4.0.0/24", NextHopAddr: "10.9.9.9", OutgoingInterface: "if2"}),
		routeKV(t, &vppl3.Route{Type: vppl3.Route_INTER_VRF, DstNetwork: "10.5.0.0/16", ViaVrfId: 5}),
		routeKV(t, &vppl3.Route{DstNetwork: "2001:db8:1::/48", NextHopAddr: "2001:db8::1", OutgoingInterface: "if1"}),
		arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "192.168.1.1", PhysAddress: "02:00:00:00:00:01", Static: true}),
		arpKV(t, &vppl3.ARPEntry{Interface: "if2", IpAddress: "2001:db8::1", PhysAddress: "02:00:00:00:00:02"}),
	}
	e.mustCommit(cfg...)
	routes, neighbors := e.routes(), e.neighbors()
	if len(routes) != 6 || len(neighbors) != 2 {
		t.Fatalf("created routes %v, neighbours %v", routes, neighbors)
	}
	check := func(when string) {
		t.Helper()
		if got := e.routes(); !slices.Equal(got, routes) {
			t.Errorf("%s: routes\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(routes, "\n"))
		}
		if got := e.neighbors(); !slices.Equal(got, neighbors) {
			t.Errorf("%s: neighbours %v, want %v", when, got, neighbors)
		}
		if !e.hasTable(5, false) {
			t.Errorf("%s: table 5 missing", when)
		}
		for _, x := range cfg {
			if st := e.state(x.key); st != api.ValueStateConfigured {
				t.Errorf("%s: %s is %v", when, x.key, st)
			}
		}
	}

	// The agent restarts; VPP kept everything: a full resync does nothing.
	e.restartInSync(cfg...)
	check("after the full resync")

	// A static neighbour someone else added on if1 is left alone (OBTAINED).
	conn, err := e.m.Conn(l3plugin.AreaName)
	if err != nil {
		t.Fatal(err)
	}
	var mac ethernet_types.MacAddress
	copy(mac[:], net.HardwareAddr{2, 0, 0, 0, 0, 0x99})
	if _, err := ip_neighbor.NewServiceClient(conn).IPNeighborAddDel(context.Background(), &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{
		SwIfIndex: interface_types.InterfaceIndex(e.swIfIndex("if1")), Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac,
		IPAddress: ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4([4]byte{192, 168, 1, 99})},
	}}); err != nil {
		t.Fatal(err)
	}
	foreign := arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "192.168.1.99", PhysAddress: "02:00:00:00:00:99", Static: true})
	if _, err := e.resync(api.FullResync, cfg...); err != nil {
		t.Fatal(err)
	}
	if st := e.state(foreign.key); st != api.ValueStateObtained {
		t.Errorf("foreign neighbour: %v, want OBTAINED", st)
	}
	if got := e.neighbors(); !slices.Contains(got, "if1 192.168.1.99 02:00:00:00:00:99 static=true") {
		t.Errorf("the foreign neighbour was removed: %v", got)
	}
	neighbors = e.neighbors()

	// VPP restarts, empty: a downstream resync creates everything again
	// (not on the user's VPP, which the tests do not restart).
	if !e.vpp.CanRestart() {
		t.Log("the VPP restart is left out: the tests do not restart the user's VPP")
		return
	}
	e.vpp.Restart()
	if len(e.vpp.DumpRoutes(vpptest.SourceAPI)) != 0 || e.hasTable(5, false) || len(e.vpp.DumpNeighbors()) != 0 {
		t.Fatalf("VPP kept routes, tables or neighbours over a restart")
	}
	neighbors = slices.DeleteFunc(neighbors, func(s string) bool { return strings.Contains(s, "192.168.1.99") })
	if _, err := e.resync(api.DownstreamResync); err != nil {
		t.Fatal(err)
	}
	check("after the VPP restart")
}

// TestARPRetrieveDumpsAllInterfacesOnce: the ARP Retrieve asks VPP for the
// neighbours of all interfaces at once (one ip_neighbor_dump per address
// family, whatever the number of interfaces), and reports only those of the
// interfaces it knows: the configured entries, and a static entry someone
// else added on one of them (OBTAINED); a neighbour on an interface without
// metadata is not reported, and stays in VPP.
func TestARPRetrieveDumpsAllInterfacesOnce(t *testing.T) {
	e := newEnv(t)
	cfg := []kv{
		iface("if1"), iface("if2"), iface("if3"),
		arpKV(t, &vppl3.ARPEntry{Interface: "if2", IpAddress: "192.168.2.1", PhysAddress: "02:00:00:00:00:21", Static: true}),
		arpKV(t, &vppl3.ARPEntry{Interface: "if3", IpAddress: "2001:db8::31", PhysAddress: "02:00:00:00:00:31"}),
	}
	e.mustCommit(cfg...)
	var untagged uint32
	e.vppAPI(func(ctx context.Context, _ ip.RPCService, ic interfaces.RPCService) error {
		r, err := ic.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		untagged = uint32(r.SwIfIndex)
		return err
	})
	addStatic := func(sw uint32, addr [4]byte, last byte) {
		t.Helper()
		conn, err := e.m.Conn(l3plugin.AreaName)
		if err != nil {
			t.Fatal(err)
		}
		mac := ethernet_types.MacAddress{2, 0, 0, 0, 0, last}
		if _, err := ip_neighbor.NewServiceClient(conn).IPNeighborAddDel(context.Background(), &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{
			SwIfIndex: interface_types.InterfaceIndex(sw), Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac,
			IPAddress: ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(addr)},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	addStatic(e.swIfIndex("if1"), [4]byte{192, 168, 1, 99}, 0x99)
	addStatic(untagged, [4]byte{192, 168, 9, 9}, 0x09)

	e.startScheduler()
	e.resetCalls()
	seq, err := e.resync(api.FullResync, cfg...)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("full resync executed %v", ops)
	}
	if e.sim != nil { // the requests VPP received: vppsim's log only
		dumps := 0
		for _, c := range e.sim.Calls() {
			if c == "ip_neighbor_dump" {
				dumps++
			}
		}
		if dumps != 2 {
			t.Errorf("%d ip_neighbor_dump calls, want 2 (IPv4 and IPv6, each for all interfaces)", dumps)
		}
	}
	for _, x := range cfg {
		if st := e.state(x.key); st != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", x.key, st)
		}
	}
	foreign := arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "192.168.1.99", PhysAddress: "02:00:00:00:00:99", Static: true})
	if st := e.state(foreign.key); st != api.ValueStateObtained {
		t.Errorf("static entry added by someone else on if1: %v, want OBTAINED", st)
	}
	var untaggedName string
	for _, i := range e.vpp.DumpInterfaces() {
		if i.SwIfIndex == untagged {
			untaggedName = i.Name
		}
	}
	onUntagged := arpKV(t, &vppl3.ARPEntry{Interface: untaggedName, IpAddress: "192.168.9.9", PhysAddress: "02:00:00:00:00:09", Static: true})
	if st := e.state(onUntagged.key); st != api.ValueStateNonexistent {
		t.Errorf("entry on an interface without metadata: %v, want NONEXISTENT", st)
	}
	if got := e.neighbors(); len(got) != 4 {
		t.Errorf("neighbours in VPP %v, want 4 (two configured, two added by someone else)", got)
	}
}

package ifplugin

import (
	"net"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// An event's object id: distinct for objects that differ in any part of
// their identity (kind, namespace, link, address, prefix length, a route's
// family, table, TOS, metric; the default route apart), the same for one
// object whatever form its IP came in (4 or 16 bytes), and built without
// allocating.
func TestObjectID(t *testing.T) {
	_, v4, _ := net.ParseCIDR("10.1.2.0/24")
	_, v4b, _ := net.ParseCIDR("10.1.2.0/25")
	_, v6, _ := net.ParseCIDR("2001:db8::/64")
	_, any4, _ := net.ParseCIDR("0.0.0.0/0")
	v4long := &net.IPNet{IP: v4.IP.To16(), Mask: v4.Mask}
	pf1 := nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: "pf1"}
	route := func(ns nsplugin.Ref, r netlink.Route) nsEvent {
		return nsEvent{ns: ns, route: &netlink.RouteUpdate{Route: r}}
	}
	base := netlink.Route{Family: 2, Table: 254, Dst: v4, Priority: 100, LinkIndex: 7}
	with := func(f func(r *netlink.Route)) netlink.Route { r := base; f(&r); return r }
	distinct := map[string]nsEvent{
		"route":               route(nsplugin.Ref{}, base),
		"in another ns":       route(pf1, base),
		"another metric":      route(nsplugin.Ref{}, with(func(r *netlink.Route) { r.Priority = 101 })),
		"another link":        route(nsplugin.Ref{}, with(func(r *netlink.Route) { r.LinkIndex = 8 })),
		"another table":       route(nsplugin.Ref{}, with(func(r *netlink.Route) { r.Table = 1000 })),
		"another TOS":         route(nsplugin.Ref{}, with(func(r *netlink.Route) { r.Tos = 4 })),
		"another length":      route(nsplugin.Ref{}, with(func(r *netlink.Route) { r.Dst = v4b })),
		"default":             route(nsplugin.Ref{}, with(func(r *netlink.Route) { r.Dst = nil })),
		"0.0.0.0/0":           route(nsplugin.Ref{}, with(func(r *netlink.Route) { r.Dst = any4 })),
		"IPv6":                route(nsplugin.Ref{}, netlink.Route{Family: 10, Table: 254, Dst: v6, LinkIndex: 7}),
		"the link":            {link: &netlink.LinkUpdate{Link: &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Index: 7}}}},
		"an address":          {addr: &netlink.AddrUpdate{LinkIndex: 7, LinkAddress: *v4}},
		"an address, another": {addr: &netlink.AddrUpdate{LinkIndex: 7, LinkAddress: *v4b}},
		"a neighbour":         {neigh: &netlink.NeighUpdate{Neigh: netlink.Neigh{LinkIndex: 7, IP: v4.IP}}},
	}
	seen := map[objectID]string{}
	for name, ev := range distinct {
		id := objectOf(ev)
		if id == (objectID{}) {
			t.Errorf("%s: no object id", name)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("%s and %s: one object id %+v", name, other, id)
		}
		seen[id] = name
	}
	same := map[string][2]nsEvent{
		"route, IPv4 in 16 bytes": {route(nsplugin.Ref{}, base), route(nsplugin.Ref{}, with(func(r *netlink.Route) { r.Dst = v4long }))},
		"neighbour, IPv4 in 16 bytes": {{neigh: &netlink.NeighUpdate{Neigh: netlink.Neigh{LinkIndex: 7, IP: v4.IP.To4()}}},
			{neigh: &netlink.NeighUpdate{Neigh: netlink.Neigh{LinkIndex: 7, IP: v4.IP.To16()}}}},
		"route, other attributes": {route(nsplugin.Ref{}, base), route(nsplugin.Ref{}, with(func(r *netlink.Route) { r.Protocol = 4; r.Gw = v4.IP }))},
	}
	for name, evs := range same {
		if a, b := objectOf(evs[0]), objectOf(evs[1]); a != b {
			t.Errorf("%s: two object ids %+v and %+v", name, a, b)
		}
	}
	if objectOf(nsEvent{lost: "x"}) != (objectID{}) {
		t.Error("an event of no object has an object id")
	}
	ev := distinct["route"]
	if n := testing.AllocsPerRun(100, func() { _ = objectOf(ev) }); n != 0 {
		t.Errorf("a route's object id: %v allocations, want none", n)
	}
}

// A batch keeps the last event of each object, in the order of the
// objects' first events.
func TestBatchKeepsTheLastEventOfEachObject(t *testing.T) {
	_, a, _ := net.ParseCIDR("10.1.0.0/16")
	_, c, _ := net.ParseCIDR("10.3.0.0/16")
	route := func(dst *net.IPNet, typ uint16) nsEvent {
		return nsEvent{route: &netlink.RouteUpdate{Type: typ, Route: netlink.Route{Family: 2, Table: 254, Dst: dst, LinkIndex: 7}}}
	}
	b := newDriftBatch()
	evs := []nsEvent{route(a, 24), route(c, 24), route(a, 25), route(c, 25), route(a, 24)}
	for _, ev := range evs {
		b.keep(objectOf(ev), ev)
	}
	if len(b.kept) != 2 || b.kept[0].ev != evs[4] || b.kept[1].ev != evs[3] || b.kept[0].id != objectOf(evs[0]) {
		t.Fatalf("kept %+v, want the last events of 10.1.0.0/16 (first) and 10.3.0.0/16", b.kept)
	}
}

// The next batch of events gets the room of the last one's kept events,
// which holds no event once that batch is done, unless the last used less
// than a quarter of a room of more than 1,024 objects.
func TestBatchOfEventsReusesTheRoom(t *testing.T) {
	d := &driftWatch{}
	fill := func(b *driftBatch, n int) {
		for i := range n {
			ev := nsEvent{neigh: &netlink.NeighUpdate{Neigh: netlink.Neigh{LinkIndex: 7, IP: net.IPv4(10, 0, byte(i>>8), byte(i))}}}
			b.keep(objectOf(ev), ev)
		}
	}
	b := d.batchOfEvents()
	fill(b, 2000)
	room := cap(b.kept)
	d.doneWith(b)
	if held := b.kept[:cap(b.kept)]; slices.ContainsFunc(held, func(k keptEvent) bool { return k.ev.neigh != nil }) || len(b.last) != 0 {
		t.Fatal("a batch done with still holds its events")
	}
	next := d.batchOfEvents()
	if len(next.kept) != 0 || len(next.last) != 0 || cap(next.kept) != room {
		t.Fatalf("after 2,000 objects: the next batch has %d kept, %d in its map, room %d (want 0, 0, %d)", len(next.kept), len(next.last), cap(next.kept), room)
	}
	fill(next, 100) // under a quarter of the room
	d.doneWith(next)
	if fresh := d.batchOfEvents(); cap(fresh.kept) != 0 {
		t.Fatalf("after a batch of 100 objects in a room of %d: the next batch keeps the room (%d)", room, cap(fresh.kept))
	}
	small := d.batchOfEvents()
	fill(small, 10)
	d.doneWith(small)
	if again := d.batchOfEvents(); cap(again.kept) != cap(small.kept) || cap(again.kept) == 0 {
		t.Fatalf("a small room is not reused: %d, then %d", cap(small.kept), cap(again.kept))
	}
}

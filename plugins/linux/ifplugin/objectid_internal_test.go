package ifplugin

import (
	"fmt"
	"net"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
)

// A route event's object id is built by hand: the same text as the
// formatted one, default routes (no destination) included, and distinct
// for routes that differ in any of its fields.
func TestRouteObjectID(t *testing.T) {
	_, v4, _ := net.ParseCIDR("10.1.2.0/24")
	_, v6, _ := net.ParseCIDR("2001:db8::/64")
	seen := map[string]bool{}
	for _, r := range []netlink.Route{
		{Family: 2, Table: 254, Dst: v4, Priority: 100, LinkIndex: 7},
		{Family: 2, Table: 254, Dst: v4, Priority: 101, LinkIndex: 7},
		{Family: 2, Table: 254, Dst: nil, LinkIndex: 7},
		{Family: 10, Table: 1000, Dst: v6, Tos: 4, LinkIndex: 3},
	} {
		ev := nsEvent{ns: nsplugin.Ref{}, route: &netlink.RouteUpdate{Route: r}}
		got := objectOf(ev)
		want := fmt.Sprintf("route %s %d %d %v %d %d %d", ev.ns.String(), r.Family, r.Table, r.Dst, r.Tos, r.Priority, r.LinkIndex)
		if got != want {
			t.Errorf("object id %q, want %q", got, want)
		}
		if seen[got] {
			t.Errorf("object id %q of two different routes", got)
		}
		seen[got] = true
	}
}

package l3plugin

import (
	"net"
	"slices"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// TestDriftIndex: the metadata maps index the values by link and target,
// follow a value that moves (re-created on another link) or goes, and map
// each event to the values of its link and target; events that cannot be
// the agent's give nothing.
func TestDriftIndex(t *testing.T) {
	p := &Plugin{}
	for _, d := range p.Descriptors() {
		d.MetadataMapFactory() // as the scheduler does at registration
	}
	ns := nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: "app"}
	at := func(index int) *Placement { return &Placement{Namespace: ns, LinkIndex: index} }
	routes, arps := p.routes.Load(), p.arps.Load()

	const (
		r1  = "config/linux/l3/v2/route/10.1.0.0/16/eth1"
		r1b = "config/linux/l3/v2/route/10.1.0.0/24/eth1"
		r2  = "config/linux/l3/v2/route/fd00::/64/eth1"
		a1  = "config/linux/l3/v2/arp/eth1/10.1.0.9"
	)
	routes.Put(r1, at(5))
	routes.Put(r1b, at(5))
	routes.Put(r2, at(5))
	arps.Put(a1, at(5))

	route := func(dst string, proto netlink.RouteProtocol, index int) *netlink.Route {
		_, n, err := net.ParseCIDR(dst)
		if err != nil {
			t.Fatal(err)
		}
		family := netlink.FAMILY_V4
		if n.IP.To4() == nil {
			family = netlink.FAMILY_V6
		}
		return &netlink.Route{Dst: n, Protocol: proto, LinkIndex: index, Table: syscall.RT_TABLE_MAIN, Family: family}
	}
	for _, c := range []struct {
		name  string
		route *netlink.Route
		want  []string
	}{
		{"ours", route("10.1.0.0/16", RouteProtocol, 5), []string{r1}},
		{"ours, a longer prefix", route("10.1.0.0/24", RouteProtocol, 5), []string{r1b}},
		{"IPv6", route("fd00::/64", RouteProtocol, 5), []string{r2}},
		{"another link", route("10.1.0.0/16", RouteProtocol, 6), nil},
		{"another protocol", route("10.1.0.0/16", netlink.RouteProtocol(syscall.RTPROT_STATIC), 5), nil},
		{"another destination", route("10.2.0.0/16", RouteProtocol, 5), nil},
	} {
		if got := p.RouteKeys(ns, c.route); !slices.Equal(got, c.want) {
			t.Errorf("%s: RouteKeys %v, want %v", c.name, got, c.want)
		}
	}
	other := route("10.1.0.0/16", RouteProtocol, 5)
	other.Table = 100
	if got := p.RouteKeys(ns, other); got != nil {
		t.Errorf("a route of ours in table 100: %v", got)
	}
	if got := p.RouteKeys(nsplugin.Ref{}, route("10.1.0.0/16", RouteProtocol, 5)); got != nil {
		t.Errorf("a route of another namespace: %v", got)
	}

	neigh := &netlink.Neigh{LinkIndex: 5, IP: net.ParseIP("10.1.0.9")}
	if got := p.NeighKeys(ns, neigh); !slices.Equal(got, []string{a1}) {
		t.Errorf("NeighKeys %v", got)
	}
	neigh.Flags = netlink.NTF_PROXY
	if got := p.NeighKeys(ns, neigh); got != nil {
		t.Errorf("a proxy entry: %v", got)
	}
	if got, want := p.OnLink(ns, 5), []string{r1, r1b, r2, a1}; !slices.Equal(got, want) {
		t.Errorf("OnLink %v, want %v", got, want)
	}

	// Re-created on another link, deleted: the index follows.
	routes.Put(r1, at(7))
	routes.Delete(r2)
	arps.Delete(a1)
	if got, want := p.OnLink(ns, 5), []string{r1b}; !slices.Equal(got, want) {
		t.Errorf("OnLink after the moves: %v, want %v", got, want)
	}
	if got, want := p.RouteKeys(ns, route("10.1.0.0/16", RouteProtocol, 7)), []string{r1}; !slices.Equal(got, want) {
		t.Errorf("RouteKeys on the new link: %v, want %v", got, want)
	}
	if v, ok := routes.GetValue(r1); !ok || *v.(*Placement) != *at(7) {
		t.Errorf("the metadata itself: %v %v", v, ok)
	}
	if got := p.OnLink(ns, 5); len(routes.byLink) != 2 || len(arps.byLink) != 0 || !slices.Equal(got, []string{r1b}) {
		t.Errorf("indexes left behind: routes by link %v, ARP entries by link %v", routes.byLink, arps.byLink)
	}
}

package l3plugin

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
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
		if got := p.RouteDrift(ns, c.route, false); !slices.Equal(got, c.want) {
			t.Errorf("%s: RouteDrift %v, want %v", c.name, got, c.want)
		}
	}
	other := route("10.1.0.0/16", RouteProtocol, 5)
	other.Table = 100
	if got := p.RouteDrift(ns, other, false); got != nil {
		t.Errorf("a route of ours in table 100: %v", got)
	}
	if got := p.RouteDrift(nsplugin.Ref{}, route("10.1.0.0/16", RouteProtocol, 5), false); got != nil {
		t.Errorf("a route of another namespace: %v", got)
	}

	neigh := &netlink.Neigh{LinkIndex: 5, IP: net.ParseIP("10.1.0.9")}
	if got := p.NeighDrift(ns, neigh, false); !slices.Equal(got, []string{a1}) {
		t.Errorf("NeighDrift %v", got)
	}
	neigh.Flags = netlink.NTF_PROXY
	if got := p.NeighDrift(ns, neigh, false); got != nil {
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
	if got, want := p.RouteDrift(ns, route("10.1.0.0/16", RouteProtocol, 7), false), []string{r1}; !slices.Equal(got, want) {
		t.Errorf("RouteDrift on the new link: %v, want %v", got, want)
	}
	if v, ok := routes.GetValue(r1); !ok || *v.(*Placement) != *at(7) {
		t.Errorf("the metadata itself: %v %v", v, ok)
	}
	if got := p.OnLink(ns, 5); len(routes.byLink) != 2 || len(arps.byLink) != 0 || !slices.Equal(got, []string{r1b}) {
		t.Errorf("indexes left behind: routes by link %v, ARP entries by link %v", routes.byLink, arps.byLink)
	}
}

// TestDriftAppliedEcho: with what the agent applied in the metadata, an
// event that shows a route or ARP entry as applied (the echo of the
// agent's own change) gives nothing; one that shows it otherwise (another
// gateway, metric, scope, a foreign protocol in its place, deleted; a
// neighbour with another MAC or no longer permanent) gives its key.
func TestDriftAppliedEcho(t *testing.T) {
	p := &Plugin{}
	for _, d := range p.Descriptors() {
		d.MetadataMapFactory()
	}
	ns := nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: "app"}
	const (
		rKey = "config/linux/l3/v2/route/10.1.0.0/16/eth1"
		r6   = "config/linux/l3/v2/route/fd00::/64/eth1"
		aKey = "config/linux/l3/v2/arp/eth1/10.1.0.9"
	)
	spec, err := parseRoute(&linuxl3.Route{OutgoingInterface: "eth1", DstNetwork: "10.1.0.0/16", GwAddr: "10.0.0.1", Metric: 10})
	if err != nil {
		t.Fatal(err)
	}
	spec6, err := parseRoute(&linuxl3.Route{OutgoingInterface: "eth1", DstNetwork: "fd00::/64", GwAddr: "fd01::1"})
	if err != nil {
		t.Fatal(err)
	}
	arp, err := parseARP(&linuxl3.ARPEntry{Interface: "eth1", IpAddress: "10.1.0.9", HwAddress: "02:AA:00:00:00:09"})
	if err != nil {
		t.Fatal(err)
	}
	p.routes.Load().Put(rKey, &Placement{Namespace: ns, LinkIndex: 5, Applied: spec.applied()})
	p.routes.Load().Put(r6, &Placement{Namespace: ns, LinkIndex: 5, Applied: spec6.applied()})
	p.arps.Load().Put(aKey, &Placement{Namespace: ns, LinkIndex: 5, Applied: arp.applied()})

	// The kernel's event of the route the agent made, as it comes.
	echo := func(s routeSpec) *netlink.Route {
		r := s.netlink(5)
		r.Family = netlink.FAMILY_V4
		if s.v6() {
			r.Family, r.Scope = netlink.FAMILY_V6, netlink.SCOPE_UNIVERSE
		}
		return r
	}
	for _, c := range []struct {
		name    string
		change  func(r *netlink.Route)
		spec    routeSpec
		deleted bool
		want    []string
	}{
		{"the echo of the agent's route", func(*netlink.Route) {}, spec, false, nil},
		{"the echo of the agent's IPv6 route", func(*netlink.Route) {}, spec6, false, nil},
		{"another gateway", func(r *netlink.Route) { r.Gw = net.ParseIP("10.0.0.2") }, spec, false, []string{rKey}},
		{"another scope", func(r *netlink.Route) { r.Scope = netlink.SCOPE_LINK }, spec, false, []string{rKey}},
		{"another IPv6 gateway", func(r *netlink.Route) { r.Gw = net.ParseIP("fd01::2") }, spec6, false, []string{r6}},
		{"a TOS", func(r *netlink.Route) { r.Tos = 4 }, spec, false, []string{rKey}},
		{"deleted", func(*netlink.Route) {}, spec, true, []string{rKey}},
		{"another metric deleted (not the agent's route)", func(r *netlink.Route) { r.Priority = 11 }, spec, true, nil},
		{"another metric added", func(r *netlink.Route) { r.Priority = 11 }, spec, false, []string{rKey}},
		{"a foreign route in its place", func(r *netlink.Route) { r.Protocol = netlink.RouteProtocol(syscall.RTPROT_BOOT) }, spec, false, []string{rKey}},
		{"a foreign route of another metric", func(r *netlink.Route) {
			r.Protocol, r.Priority = netlink.RouteProtocol(syscall.RTPROT_BOOT), 11
		}, spec, false, nil},
		{"a foreign route deleted", func(r *netlink.Route) { r.Protocol = netlink.RouteProtocol(syscall.RTPROT_BOOT) }, spec, true, nil},
	} {
		r := echo(c.spec)
		c.change(r)
		if got := p.RouteDrift(ns, r, c.deleted); !slices.Equal(got, c.want) {
			t.Errorf("%s: RouteDrift %v, want %v", c.name, got, c.want)
		}
	}

	neigh := func(mac string, state int) *netlink.Neigh {
		hw, err := net.ParseMAC(mac)
		if err != nil {
			t.Fatal(err)
		}
		return &netlink.Neigh{LinkIndex: 5, IP: net.ParseIP("10.1.0.9"), HardwareAddr: hw, State: state}
	}
	for _, c := range []struct {
		name    string
		n       *netlink.Neigh
		deleted bool
		want    []string
	}{
		{"the echo", neigh("02:aa:00:00:00:09", netlink.NUD_PERMANENT), false, nil},
		{"another MAC", neigh("02:aa:00:00:00:10", netlink.NUD_PERMANENT), false, []string{aKey}},
		{"not permanent", neigh("02:aa:00:00:00:09", netlink.NUD_REACHABLE), false, []string{aKey}},
		{"deleted", neigh("02:aa:00:00:00:09", netlink.NUD_PERMANENT), true, []string{aKey}},
	} {
		if got := p.NeighDrift(ns, c.n, c.deleted); !slices.Equal(got, c.want) {
			t.Errorf("%s: NeighDrift %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPlacementIndexShrinks: after a bulk delete the index gives its
// memory back (its maps are rebuilt below a quarter of their peak), and
// what is left is still found.
func TestPlacementIndexShrinks(t *testing.T) {
	const n = 20000
	ns := nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: "app"}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("config/linux/l3/v2/route/10.%d.%d.0/24/eth1", i/256, i%256)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	x := newPlacementIndex(routeTarget)
	for i, k := range keys {
		x.Put(k, &Placement{Namespace: ns, LinkIndex: 5 + i%2})
	}
	full := heap()
	const kept = 100
	for _, k := range keys[kept:] {
		x.Delete(k)
	}
	after := heap()
	grew, left := int64(full)-int64(base), int64(after)-int64(base)
	t.Logf("heap: %d bytes for %d routes, %d bytes left with %d", grew, n, left, kept)
	if left > grew/5 {
		t.Errorf("after deleting %d of %d routes the index still holds %d of the %d bytes it took", n-kept, n, left, grew)
	}
	if n := len(x.MemMetadataMap.ListLabels()); n != kept || x.byDest.Len() != kept {
		t.Errorf("metadata of %d keys, byDest %d, want %d", n, x.byDest.Len(), kept)
	}
	for i, k := range keys[:kept] {
		want := []string{k}
		if got := x.at(Placement{Namespace: ns, LinkIndex: 5 + i%2}, routeTarget(k)); !slices.Equal(got, want) {
			t.Fatalf("after the shrink: at %v, want %v", got, want)
		}
	}
	runtime.KeepAlive(x)
}

// TestPlacementCarriesTheKeysTarget: the metadata a Create and a Retrieve
// give carries the target the drift index would work out from the key
// (the index then does not parse keys), for every spelling of a
// destination or IP the key canonicalizes (IPv4-mapped addresses are not
// valid values: models' TestValidateLinuxRoute).
func TestPlacementCarriesTheKeysTarget(t *testing.T) {
	ns := nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: "app"}
	p := &Plugin{log: slog.New(slog.DiscardHandler), ifaces: func(context.Context, string) (ifplugin.Metadata, bool) {
		return ifplugin.Metadata{Namespace: ns, Index: 5}, true
	}}
	ctx := context.Background()
	// created checks the target of a Create's metadata against want, the
	// key's.
	created := func(key string, v proto.Message, want netip.Prefix, prepare func(context.Context, *batchCall)) {
		t.Helper()
		if !want.IsValid() {
			t.Fatalf("%s: no target from the key", key)
		}
		c := &batchCall{op: &api.BatchOp{Op: api.OpCreate, Key: key, To: v}}
		prepare(ctx, c)
		if c.md == nil || c.md.target != want {
			t.Errorf("Create of %s: metadata %+v, want the target %s", key, c.md, want)
		}
	}
	for _, r := range []*linuxl3.Route{
		{OutgoingInterface: "eth1", DstNetwork: "10.1.0.0/16", GwAddr: "10.0.0.1"},
		{OutgoingInterface: "eth1", DstNetwork: "10.1.2.3/16", Scope: linuxl3.Route_LINK},
		{OutgoingInterface: "eth1", DstNetwork: "0.0.0.0/0", GwAddr: "10.0.0.1"},
		{OutgoingInterface: "eth1", DstNetwork: "fd00:0::1/64", GwAddr: "fd01::1"},
		{OutgoingInterface: "eth1", DstNetwork: "::/0"},
	} {
		key, err := models.LinuxRoute.Key(r)
		if err != nil {
			t.Fatal(err)
		}
		want := routeTarget(key)
		created(key, r, want, func(ctx context.Context, c *batchCall) { p.prepareRoute(ctx, c) })
		// What Retrieve finds of it in the kernel.
		s, err := parseRoute(r)
		if err != nil {
			t.Fatal(err)
		}
		kr := *s.netlink(5)
		kr.Family = netlink.FAMILY_V4
		if s.v6() {
			kr.Family = netlink.FAMILY_V6
		}
		if s.dst.Bits() == 0 {
			kr.Dst = nil // the kernel's default route
		}
		v, err := routeFromKernel("eth1", kr)
		if err != nil {
			t.Fatal(err)
		}
		if k, err := models.LinuxRoute.Key(v); err != nil || k != key {
			t.Fatalf("the kernel's %s has key %q (%v), want %q", r, k, err, key)
		}
		if got := kernelRoutePlacement(ns, kr).target; got != want {
			t.Errorf("Retrieve of %s: target %s, want %s", key, got, want)
		}
	}
	for _, a := range []*linuxl3.ARPEntry{
		{Interface: "eth1", IpAddress: "10.1.0.9", HwAddress: "02:00:00:00:00:09"},
		{Interface: "eth1", IpAddress: "fd00:0::9", HwAddress: "02:00:00:00:00:0b"},
	} {
		key, err := models.LinuxARP.Key(a)
		if err != nil {
			t.Fatal(err)
		}
		want := arpTarget(key)
		created(key, a, want, p.prepareARP)
		s, err := parseARP(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := addrTarget(netip.AddrFrom16(s.ip.As16())); got != want {
			t.Errorf("Retrieve of %s (the kernel's 16-byte IP): target %s, want %s", key, got, want)
		}
	}
}

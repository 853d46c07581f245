package l3plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/internal/depcache"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// ip6DefaultMetric is the metric the kernel gives an IPv6 route added
// without one (IP6_RT_PRIO_USER); IPv4 routes keep 0.
const ip6DefaultMetric = 1024

// routeSpec is a valid route value in kernel terms.
type routeSpec struct {
	iface  string
	dst    netip.Prefix // masked
	gw     netip.Addr   // invalid: no gateway
	scope  linuxl3.Route_Scope
	metric uint32
}

func parseRoute(r *linuxl3.Route) (routeSpec, error) {
	dst, err := netip.ParsePrefix(r.GetDstNetwork())
	if err != nil {
		return routeSpec{}, fmt.Errorf("dst_network: %w", err)
	}
	dst = netip.PrefixFrom(dst.Addr().Unmap(), dst.Bits()).Masked()
	if dst.Addr().Is4() && dst.Bits() > 32 {
		return routeSpec{}, fmt.Errorf("dst_network %q: prefix length", r.GetDstNetwork())
	}
	gw, err := parseAddr(r.GetGwAddr())
	if err != nil {
		return routeSpec{}, fmt.Errorf("gw_addr: %w", err)
	}
	if gw.IsValid() && gw.Is4() != dst.Addr().Is4() {
		return routeSpec{}, fmt.Errorf("gw_addr %s is not of the IP version of dst_network %s", gw, dst)
	}
	return routeSpec{iface: r.GetOutgoingInterface(), dst: dst, gw: gw, scope: r.GetScope(), metric: r.GetMetric()}, nil
}

func (s routeSpec) v6() bool { return !s.dst.Addr().Is4() }

// kernelScope maps the scope; UNDEFINED lets the kernel's rule decide, as
// `ip route add` does: universe with a gateway, link without.
func (s routeSpec) kernelScope() netlink.Scope {
	switch s.scope {
	case linuxl3.Route_GLOBAL:
		return netlink.SCOPE_UNIVERSE
	case linuxl3.Route_SITE:
		return netlink.SCOPE_SITE
	case linuxl3.Route_LINK:
		return netlink.SCOPE_LINK
	case linuxl3.Route_HOST:
		return netlink.SCOPE_HOST
	}
	if s.gw.IsValid() {
		return netlink.SCOPE_UNIVERSE
	}
	return netlink.SCOPE_LINK
}

// kernelMetric is the metric the route has in the kernel: IPv6 turns 0 into
// 1024.
func (s routeSpec) kernelMetric() uint32 {
	if s.v6() && s.metric == 0 {
		return ip6DefaultMetric
	}
	return s.metric
}

// linkLocal tells whether the route makes its destination reachable on the
// link: no gateway, link scope (set or chosen by the kernel).
func (s routeSpec) linkLocal() bool {
	return !s.gw.IsValid() && s.kernelScope() == netlink.SCOPE_LINK
}

func (s routeSpec) String() string {
	var b strings.Builder
	b.WriteString(s.dst.String())
	if s.gw.IsValid() {
		b.WriteString(" via " + s.gw.String())
	}
	fmt.Fprintf(&b, " dev %s metric %d", s.iface, s.kernelMetric())
	return b.String()
}

// kernel is the route on link index as nlbatch.AppendRoute encodes it
// (TestKernelAsNetlink: the bytes of the library's netlink.Route for it).
func (s routeSpec) kernel(index int) nlbatch.Route {
	return nlbatch.Route{
		LinkIndex: index,
		Dst:       s.dst,
		Gw:        s.gw,
		Scope:     uint8(s.kernelScope()),
		Priority:  int(s.kernelMetric()),
		Protocol:  uint8(RouteProtocol),
		Table:     syscall.RT_TABLE_MAIN,
	}
}

// sameAs tells whether two specs give the same kernel route (scope is not
// kept for IPv6 routes: the kernel reports universe for all of them).
func (s routeSpec) sameAs(o routeSpec) bool {
	return s.iface == o.iface && s.dst == o.dst && s.gw == o.gw &&
		s.kernelMetric() == o.kernelMetric() && (s.v6() || s.kernelScope() == o.kernelScope())
}

// matchesKernel tells whether a kernel route is this route on link index.
func (s routeSpec) matchesKernel(kr netlink.Route, index int) bool {
	if kr.LinkIndex != index || len(kr.MultiPath) > 0 || uint32(kr.Priority) != s.kernelMetric() || kr.Tos != 0 {
		return false
	}
	dst, ok := ipNetToPrefix(kr.Dst, s.v6())
	if !ok || dst != s.dst {
		return false
	}
	gw, _ := netip.AddrFromSlice(kr.Gw)
	if gw.Unmap() != s.gw {
		return false
	}
	return s.v6() || kr.Scope == s.kernelScope()
}

// ipNetToPrefix converts a kernel destination; nil is the default route.
func ipNetToPrefix(n *net.IPNet, v6 bool) (netip.Prefix, bool) {
	if n == nil {
		if v6 {
			return netip.PrefixFrom(netip.IPv6Unspecified(), 0), true
		}
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), true
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones).Masked(), true
}

// routesEquivalent is the ValueComparator: values that give the same kernel
// route are equivalent (dst "10.1.2.3/16" and "10.1.0.0/16", scope UNDEFINED
// and the one the kernel chooses, IPv6 metric 0 and 1024, gateway spellings).
func routesEquivalent(a, b *linuxl3.Route) bool {
	sa, errA := parseRoute(a)
	sb, errB := parseRoute(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return sa.sameAs(sb)
}

func (p *Plugin) routeDescriptor() *api.TypedDescriptor[*linuxl3.Route, *Placement] {
	return &api.TypedDescriptor[*linuxl3.Route, *Placement]{
		Name:        RouteDescriptorName,
		NBKeyPrefix: models.LinuxRoute.KeyPrefix,
		KeySelector: func(key string) bool { return strings.HasPrefix(key, models.LinuxRoute.KeyPrefix) },
		ValueComparator: func(_ string, a, b *linuxl3.Route) bool {
			return routesEquivalent(a, b)
		},
		WithMetadata: true,
		MetadataMapFactory: func() api.MetadataMapRW {
			m := newPlacementIndex(routeTarget)
			p.routes.Store(m)
			return m
		},
		Validate:           validateRoute,
		Create:             p.createRoute,
		Update:             p.updateRoute,
		UpdateWithRecreate: routeNeedsRecreate,
		Delete:             p.deleteRoute,
		Retrieve:           p.retrieveRoutes,
		IsRetriableFailure: isRetriable,
		DerivedValues:      routeDerivedValues,
		Dependencies:       routeDependencies,
		RetrieveDependencies: []string{
			ifplugin.InterfaceDescriptorName,
		},
	}
}

func validateRoute(key string, r *linuxl3.Route) error {
	if err := models.LinuxRoute.CheckKey(key, r); err != nil {
		return invalid(err)
	}
	if r.GetScope() == linuxl3.Route_HOST && r.GetGwAddr() != "" {
		return api.NewInvalidValueError(errors.New("a route of scope HOST cannot have a gateway"), "gw_addr")
	}
	return nil
}

// routeNeedsRecreate: the metric is part of the identity of a kernel route
// (two routes to one destination may differ by metric only), so a new
// metric is a new route: delete the old, add the new.
func routeNeedsRecreate(_ string, oldValue, newValue *linuxl3.Route, _ *Placement) bool {
	o, err1 := parseRoute(oldValue)
	n, err2 := parseRoute(newValue)
	if err1 != nil || err2 != nil {
		return true
	}
	return o.kernelMetric() != n.kernelMetric() || o.dst != n.dst || o.iface != n.iface
}

func routeDependencies(_ string, r *linuxl3.Route) []api.Dependency {
	iface := r.GetOutgoingInterface()
	s, err := parseRoute(r)
	gw := s.gw
	if err != nil || (gw.Is6() && gw.IsLinkLocalUnicast()) {
		// fe80::/10 is on every IPv6 link: the kernel needs no address or
		// route to reach it.
		gw = netip.Addr{}
	}
	return routeDeps.Of(depsOf{iface, gw}, func() []api.Dependency {
		deps := []api.Dependency{{Label: "interface " + iface + " up", Key: ifplugin.StateKey(iface, true)}}
		if gw.IsValid() {
			deps = append(deps, api.Dependency{Label: "gateway " + gw.String() + " reachable", AnyOf: gatewayReachable(iface, gw)})
		}
		return deps
	})
}

// routeDeps are the dependencies of the routes by interface and gateway
// (none: the zero Addr; see depcache): the same for every route through
// them, so that a bulk change builds their labels, keys and AnyOf
// selector once rather than per route, for at most 4,096 pairs at a time.
var routeDeps = depcache.New[depsOf](4096)

type depsOf struct {
	iface string
	gw    netip.Addr
}

// gatewayReachable accepts an address of iface whose subnet contains gw, or
// a link-local route of iface whose destination contains it.
func gatewayReachable(iface string, gw netip.Addr) api.AnyOfDependency {
	addrPrefix := ifplugin.AddressKeyPrefix(iface)
	llPrefix := linkLocalRouteKeyPrefix(iface)
	return api.AnyOfDependency{
		KeyPrefixes: []string{addrPrefix, linkLocalRoutePrefix + iface + "/"},
		KeySelector: func(key string) bool {
			var cidr string
			if strings.HasPrefix(key, addrPrefix) {
				name, c, ok := ifplugin.ParseAddressKey(key)
				if !ok || name != iface {
					return false
				}
				cidr = c
			} else if c, ok := strings.CutPrefix(key, llPrefix); ok {
				cidr = c
			} else {
				return false
			}
			p, err := netip.ParsePrefix(cidr)
			return err == nil && p.Contains(gw)
		},
	}
}

func routeDerivedValues(_ string, r *linuxl3.Route) []api.KeyValuePair {
	s, err := parseRoute(r)
	if err != nil || !s.linkLocal() {
		return nil
	}
	dst := s.dst.String()
	return []api.KeyValuePair{{Key: LinkLocalRouteKey(s.iface, dst), Value: wrapperspb.String(dst)}}
}

// createRoute adds the route. A route of ours that is already there as
// asked (a previous run, a lost reply) is success; one of ours with other
// attributes on the same link is replaced, and so is the route the
// original agent made for this value (adopted: see original.go); anything
// else with the same destination and metric (a foreign route, or ours on
// another link) is a conflict the agent does not resolve. A batch of one
// (routeBatch).
func (p *Plugin) createRoute(ctx context.Context, key string, r *linuxl3.Route) (*Placement, error) {
	return single(ctx, p.routeBatch, api.BatchOp{Op: api.OpCreate, Key: key, To: r})
}

// routeExists explains an EEXIST of RouteAdd from the routes of the
// table (routes, of the route's IP family): nil when the route is there
// as asked, replace when one of ours with other attributes is on the same
// link, or when the only route in the way is the one the original agent
// made for this value (originalRoute; adopted unless SetAdoptOriginalRoutes
// turned that off): RouteReplace then makes it ours in place. Anything
// else in the way is the conflict.
func (p *Plugin) routeExists(routes []netlink.Route, s routeSpec, index int) (replace bool, err error) {
	var inTheWay []*netlink.Route
	for i := range routes {
		kr := routes[i]
		dst, ok := ipNetToPrefix(kr.Dst, s.v6())
		if !ok || dst != s.dst || uint32(kr.Priority) != s.kernelMetric() || kr.Tos != 0 {
			continue
		}
		if kr.Protocol == RouteProtocol && kr.LinkIndex == index && len(kr.MultiPath) == 0 {
			if s.matchesKernel(kr, index) {
				return false, nil
			}
			p.log.Info("route of ours with other attributes found, replacing it", "route", s.String(), "found", kr.String())
			return true, nil
		}
		inTheWay = append(inTheWay, &routes[i])
	}
	if len(inTheWay) == 0 {
		return false, fmt.Errorf("%w (but not found in the table afterwards)", syscall.EEXIST)
	}
	conflict := inTheWay[0]
	if conflict.Protocol == RouteProtocol {
		return false, fmt.Errorf("%w: a route of ours to the same destination with the same metric uses link %d (give the routes different metrics)", syscall.EEXIST, conflict.LinkIndex)
	}
	err = fmt.Errorf("%w: a foreign route (protocol %s) to the same destination with the same metric is in the way", syscall.EEXIST, conflict.Protocol)
	if conflict.Protocol != OriginalRouteProtocol {
		return false, err
	}
	why := p.whyNotAdopted(*conflict, s, index, len(inTheWay) == 1)
	if why != "" {
		return false, fmt.Errorf("%w; not adopted as the original agent's: %s", err, why)
	}
	p.log.Info("adopting the route the original agent made (protocol boot, as this value asks): replacing it in place with ours", "route", s.String())
	return true, nil
}

// updateRoute changes gateway or scope in place (same destination and
// metric: RouteReplace replaces the route of that identity). A batch of
// one (routeBatch).
func (p *Plugin) updateRoute(ctx context.Context, key string, oldValue, newValue *linuxl3.Route, oldMd *Placement) (*Placement, error) {
	md, err := single(ctx, p.routeBatch, api.BatchOp{Op: api.OpUpdate, Key: key, From: oldValue, To: newValue, Metadata: oldMd})
	if err != nil {
		return oldMd, err
	}
	return md, nil
}

// deleteRoute removes our route; one already gone (with its link or
// namespace) is success. The kernel matches the protocol, so a foreign route
// to the same destination is never removed instead. A batch of one
// (routeBatch).
func (p *Plugin) deleteRoute(ctx context.Context, key string, r *linuxl3.Route, md *Placement) error {
	_, err := single(ctx, p.routeBatch, api.BatchOp{Op: api.OpDelete, Key: key, From: r, Metadata: md})
	return err
}

// routeFromKernel builds the value of a kernel route of ours.
// kernelRoutePlacement is the metadata of a route of ours Retrieve found
// (routeFromKernel accepted it).
func kernelRoutePlacement(ref nsplugin.Ref, kr netlink.Route) *Placement {
	dst, _ := ipNetToPrefix(kr.Dst, kr.Family == netlink.FAMILY_V6)
	return &Placement{Namespace: ref, LinkIndex: kr.LinkIndex, Applied: routeApplied(kr), target: dst}
}

func routeFromKernel(iface string, kr netlink.Route) (*linuxl3.Route, error) {
	v6 := kr.Family == netlink.FAMILY_V6
	dst, ok := ipNetToPrefix(kr.Dst, v6)
	if !ok {
		return nil, fmt.Errorf("destination %v", kr.Dst)
	}
	r := &linuxl3.Route{OutgoingInterface: iface, DstNetwork: dst.String(), Metric: uint32(kr.Priority)}
	if len(kr.Gw) > 0 {
		gw, ok := netip.AddrFromSlice(kr.Gw)
		if !ok {
			return nil, fmt.Errorf("gateway %v", kr.Gw)
		}
		r.GwAddr = gw.Unmap().String()
	}
	if !v6 {
		switch kr.Scope {
		case netlink.SCOPE_UNIVERSE:
			r.Scope = linuxl3.Route_GLOBAL
		case netlink.SCOPE_SITE:
			r.Scope = linuxl3.Route_SITE
		case netlink.SCOPE_LINK:
			r.Scope = linuxl3.Route_LINK
		case netlink.SCOPE_HOST:
			r.Scope = linuxl3.Route_HOST
		default:
			return nil, fmt.Errorf("scope %d", kr.Scope)
		}
	}
	return r, nil
}

// retrieveRoutes lists the routes of ours (protocol RouteProtocol, main
// table) in the namespaces of the interfaces the expected routes use (and of
// every interface, with SetInterfaceLister), on links that map back to a
// logical interface. A value equivalent to the expected one is returned as
// the expected one.
func (p *Plugin) retrieveRoutes(ctx context.Context, correlate []api.TypedKV[*linuxl3.Route, *Placement]) ([]api.TypedKV[*linuxl3.Route, *Placement], error) {
	names := map[string]struct{}{}
	expected := make(map[string]*linuxl3.Route, len(correlate))
	for _, c := range correlate {
		if c.Value != nil {
			names[c.Value.GetOutgoingInterface()] = struct{}{}
			expected[c.Key] = c.Value
		}
	}
	byNS := p.interfacesByNamespace(ctx, names)
	var out []api.TypedKV[*linuxl3.Route, *Placement]
	found := map[string]int{}
	for _, ref := range sortedRefs(byNS) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		idx := byNS[ref]
		if len(idx) == 0 {
			continue
		}
		h, err := p.handle(ref)
		if err != nil {
			if isGone(err) {
				p.log.Debug("retrieve: namespace is gone, and its routes with it", "namespace", ref.String())
				continue
			}
			return nil, err
		}
		routes, err := dump("routes of "+ref.String(), func() ([]netlink.Route, error) {
			return h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
		})
		if err != nil {
			return nil, err
		}
		for _, kr := range routes {
			if kr.Protocol != RouteProtocol || len(kr.MultiPath) > 0 || kr.LinkIndex <= 0 {
				continue
			}
			name, ok := idx[kr.LinkIndex]
			if !ok {
				p.log.Debug("retrieve: route of ours on a link of no known interface, skipped", "namespace", ref.String(), "route", kr.String())
				continue
			}
			v, err := routeFromKernel(name, kr)
			if err != nil {
				p.log.Warn("retrieve: route of ours not understood, skipped", "namespace", ref.String(), "route", kr.String(), "error", err)
				continue
			}
			key, err := models.LinuxRoute.Key(v)
			if err != nil {
				p.log.Warn("retrieve: route of ours has no valid key, skipped", "namespace", ref.String(), "route", kr.String(), "error", err)
				continue
			}
			matches := false
			if exp, ok := expected[key]; ok && routesEquivalent(exp, v) {
				v, matches = proto.Clone(exp).(*linuxl3.Route), true
			}
			kv := api.TypedKV[*linuxl3.Route, *Placement]{
				Key: key, Value: v, Origin: api.FromNB,
				Metadata: kernelRoutePlacement(ref, kr),
			}
			if i, dup := found[key]; dup {
				// Two routes of ours for one key (same destination and link,
				// different metrics: left by an interrupted re-creation).
				// Report the expected one; the other stays in the kernel.
				p.log.Warn("retrieve: two routes of ours for one key", "key", key, "namespace", ref.String(), "route", kr.String())
				if matches {
					out[i] = kv
				}
				continue
			}
			found[key] = len(out)
			out = append(out, kv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

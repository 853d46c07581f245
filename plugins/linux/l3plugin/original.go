package l3plugin

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// OriginalRouteProtocol is the protocol of the routes the original agent
// (Ligato vpp-agent) added: it gave none, so the kernel recorded the
// netlink library's default, RTPROT_BOOT (`ip route` shows "proto boot").
// `ip route add` without "proto" gives the same.
const OriginalRouteProtocol = netlink.RouteProtocol(unix.RTPROT_BOOT)

// SetAdoptOriginalRoutes turns the adoption of the original agent's
// routes on (the default) or off. On, a Create whose route is in the
// kernel already as the original agent made it (originalRoute) takes that
// route over: one RTM_NEWROUTE with NLM_F_REPLACE gives it protocol
// RouteProtocol in place, with no moment without the route. Off, such a
// route is a foreign route in the way, as any other: the value fails
// with the conflict. Call it before registering the descriptors.
func (p *Plugin) SetAdoptOriginalRoutes(adopt bool) { p.adoptOriginal = adopt }

// userRouteFlags are the route flags its maker chooses (onlink,
// pervasive); the others (dead, linkdown, offload, trap) are the kernel's
// account of the next hop.
const userRouteFlags = unix.RTNH_F_ONLINK | unix.RTNH_F_PERVASIVE

// originalRoute tells whether kr is the route the original agent made for
// s on link index: protocol boot, main table, unicast, on that link alone
// (no multipath), and every attribute the model has (destination,
// gateway, metric, scope; no TOS) the same, with none it lacks
// (hasUnmodelled). Only such a route is adopted: replacing it with ours
// changes nothing in forwarding. A route with any other difference is
// somebody's choice, and is left alone.
func originalRoute(kr netlink.Route, s routeSpec, index int) bool {
	return kr.Protocol == OriginalRouteProtocol && kr.Table == unix.RT_TABLE_MAIN && kr.Type == unix.RTN_UNICAST &&
		s.matchesKernel(kr, index) && !hasUnmodelled(kr)
}

// hasUnmodelled tells whether a kernel route has an attribute that the
// route model has no field for (a preferred source, onlink, route
// metrics such as mtu, an encapsulation, ...): the original agent never
// set one, and a replace with ours would drop it.
func hasUnmodelled(kr netlink.Route) bool {
	return kr.Src != nil || kr.Flags&userRouteFlags != 0 || kr.ILinkIndex != 0 ||
		kr.MPLSDst != nil || kr.NewDst != nil || kr.Encap != nil || kr.Via != nil || kr.Realm != 0 ||
		kr.MTU != 0 || kr.Window != 0 || kr.Rtt != 0 || kr.RttVar != 0 || kr.Ssthresh != 0 ||
		kr.Cwnd != 0 || kr.AdvMSS != 0 || kr.Reordering != 0 || kr.Hoplimit != 0 || kr.InitCwnd != 0 ||
		kr.Features != 0 || kr.RtoMin != 0 || kr.InitRwnd != 0 || kr.QuickACK != 0 ||
		kr.Congctl != "" || kr.FastOpenNoCookie != 0
}

// whyNotAdopted says why a route of protocol boot in the way of s on link
// index is not adopted, for the conflict error.
func (p *Plugin) whyNotAdopted(kr netlink.Route, s routeSpec, index int, alone bool) string {
	switch {
	case !originalRoute(kr, s, index):
		return "it is not the route this value asks for (" + describeKernelRoute(kr, s.v6()) + ")"
	case !p.adoptOriginal:
		return "adopting the original agent's routes is off"
	case !alone:
		return "another route to the same destination has the same metric"
	}
	return ""
}

// describeKernelRoute writes a kernel route as `ip route` would, with
// what the model compares.
func describeKernelRoute(kr netlink.Route, v6 bool) string {
	var b strings.Builder
	if dst, ok := ipNetToPrefix(kr.Dst, v6); ok {
		b.WriteString(dst.String())
	}
	if gw, ok := netip.AddrFromSlice(kr.Gw); ok {
		b.WriteString(" via " + gw.Unmap().String())
	}
	fmt.Fprintf(&b, " link %d metric %d scope %s", kr.LinkIndex, kr.Priority, kr.Scope)
	if len(kr.MultiPath) > 0 {
		b.WriteString(" multipath")
	}
	if kr.Tos != 0 {
		fmt.Fprintf(&b, " tos %d", kr.Tos)
	}
	if kr.Table != unix.RT_TABLE_MAIN {
		fmt.Fprintf(&b, " table %d", kr.Table)
	}
	if kr.Type != unix.RTN_UNICAST {
		fmt.Fprintf(&b, " type %d", kr.Type)
	}
	if hasUnmodelled(kr) {
		b.WriteString(", with attributes the model has no field for")
	}
	return b.String()
}

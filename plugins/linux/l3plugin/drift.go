package l3plugin

import (
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/internal/shrinkmap"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
)

// Drift: the interface watcher (ifplugin.Watcher, SetLinkObjects) asks the
// plugin which routes and ARP entries a netlink event shows out of sync.
// The metadata maps of both descriptors (placementIndex) index the values
// by where the agent put them: the link (Placement), and on it the masked
// destination of a route or the IP of an ARP entry (keys are canonical, so
// an event's destination or IP, spelled canonically, finds them). Each
// value's Placement carries what the agent applied (Applied): an event
// that shows the object as applied (the echo of the agent's own change, or
// someone re-adding it as it was) is no drift.

var _ ifplugin.LinkObjects = (*Plugin)(nil)

// Applied are the attributes of a route or ARP entry in the kernel beyond
// its key, as the agent made it (Create, Update) or Retrieve found it.
type Applied struct {
	// Known is false for metadata that does not say (every event of the
	// object is then reported).
	Known bool
	// Routes: gateway (invalid: none), metric as the kernel has it, scope
	// (IPv4 only: the kernel reports universe for every IPv6 route).
	Gateway netip.Addr
	Metric  uint32
	Scope   netlink.Scope
	// ARP entries: the MAC, lower case.
	MAC string
}

func (s routeSpec) applied() Applied {
	a := Applied{Known: true, Gateway: s.gw, Metric: s.kernelMetric()}
	if !s.v6() {
		a.Scope = s.kernelScope()
	}
	return a
}

// routeApplied returns the attributes of a kernel route of ours.
func routeApplied(kr netlink.Route) Applied {
	gw, _ := netip.AddrFromSlice(kr.Gw)
	a := Applied{Known: true, Gateway: gw.Unmap(), Metric: uint32(kr.Priority)}
	if kr.Family != netlink.FAMILY_V6 && (kr.Dst == nil || kr.Dst.IP.To4() != nil) {
		a.Scope = kr.Scope
	}
	return a
}

func (s arpSpec) applied() Applied {
	return Applied{Known: true, MAC: strings.ToLower(s.mac.String())}
}

// neighApplied returns the attributes of a kernel neighbour.
func neighApplied(n netlink.Neigh) Applied {
	return Applied{Known: true, MAC: strings.ToLower(n.HardwareAddr.String())}
}

// OnLink implements ifplugin.LinkObjects: the routes and ARP entries on the
// link.
func (p *Plugin) OnLink(ns nsplugin.Ref, index int) []string {
	at := Placement{Namespace: ns, LinkIndex: index}
	return append(p.routes.Load().onLink(at), p.arps.Load().onLink(at)...)
}

// RouteDrift implements ifplugin.LinkObjects: the routes of the agent on
// the event's link to its destination (main table, one link) that the
// event shows out of sync with what the agent applied. A route of ours
// (protocol RouteProtocol) deleted with the metric the agent gave it; one
// added or replaced with another gateway, scope or metric, or a TOS; a
// route of another protocol added with the metric of ours (a replace by
// hand without "proto 181" takes its place). Events of other routes, and
// of routes as the agent made them, give none.
func (p *Plugin) RouteDrift(ns nsplugin.Ref, r *netlink.Route, deleted bool) []string {
	if r.LinkIndex <= 0 || len(r.MultiPath) > 0 || (r.Table != 0 && r.Table != syscall.RT_TABLE_MAIN) {
		return nil
	}
	if deleted && r.Protocol != RouteProtocol {
		return nil
	}
	dst, ok := ipNetToPrefix(r.Dst, r.Family == netlink.FAMILY_V6)
	if !ok {
		return nil
	}
	got := routeApplied(*r)
	return p.routes.Load().drifted(Placement{Namespace: ns, LinkIndex: r.LinkIndex}, dst, func(a Applied) bool {
		switch {
		case !a.Known:
			return r.Protocol == RouteProtocol
		case r.Protocol != RouteProtocol || deleted:
			return got.Metric == a.Metric
		}
		return got != a || r.Tos != 0
	})
}

// NeighDrift implements ifplugin.LinkObjects: the ARP entry of the event's
// IP on its link when the event shows it deleted, or not permanent with
// the MAC the agent set.
func (p *Plugin) NeighDrift(ns nsplugin.Ref, n *netlink.Neigh, deleted bool) []string {
	if n.Flags&netlink.NTF_PROXY != 0 || n.LinkIndex <= 0 {
		return nil
	}
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return nil
	}
	got := neighApplied(*n)
	return p.arps.Load().drifted(Placement{Namespace: ns, LinkIndex: n.LinkIndex}, addrTarget(ip), func(a Applied) bool {
		return deleted || !a.Known || n.State&netlink.NUD_PERMANENT == 0 || got != a
	})
}

// routeTarget is the masked destination of a route key (invalid when the
// key does not parse): the index's target of a route whose metadata does
// not carry it.
func routeTarget(key string) netip.Prefix {
	parts, err := models.LinuxRoute.ParseKey(key)
	if err != nil {
		return netip.Prefix{}
	}
	dst, err := netip.ParsePrefix(parts["dst_network"])
	if err != nil {
		return netip.Prefix{}
	}
	// As parseRoute: an IPv4-mapped destination is an IPv4 route.
	return netip.PrefixFrom(dst.Addr().Unmap(), dst.Bits()).Masked()
}

// arpTarget is the IP of an ARP key as a single-address prefix (invalid
// when the key does not parse).
func arpTarget(key string) netip.Prefix {
	parts, err := models.LinuxARP.ParseKey(key)
	if err != nil {
		return netip.Prefix{}
	}
	ip, err := netip.ParseAddr(parts["ip_address"])
	if err != nil {
		return netip.Prefix{}
	}
	return addrTarget(ip)
}

// addrTarget is the target of an ARP entry of IP ip.
func addrTarget(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap()
	return netip.PrefixFrom(ip, ip.BitLen())
}

// placementIndex is the metadata map of the route or ARP descriptor (label:
// the key; metadata: *Placement), indexed by link and by target on the
// link (the masked destination of a route, the IP of an ARP entry); each
// value's Placement says what the agent applied. The scheduler is its only
// writer; the watcher reads it. The metadata map itself is written under
// the index's lock too, so that a reader holding it finds each key's
// Placement where the indexes put it.
//
// A Go map keeps its buckets when entries are deleted: byDest, which holds
// one entry per value, is rebuilt once it holds less than a quarter of its
// peak (of at least shrinkmap.MinPeak entries), as the metadata map is, so
// that the memory of a bulk delete comes back. Each rebuild copies at most
// a third of the entries deleted since the peak: O(1) per Delete,
// amortized.
type placementIndex struct {
	*api.MemMetadataMap
	// target is the target of a key whose Placement does not carry it
	// (metadata put by hand, as the tests do).
	target func(key string) netip.Prefix
	mu     sync.RWMutex
	byLink map[linkAt]map[string]struct{}
	// byDest: the keys of a target on a link (nearly always one: a key
	// names its destination or IP and its interface).
	byDest shrinkmap.Map[placedTarget, []string]
}

// linkAt is a link: a Placement without what was applied.
type linkAt struct {
	ns    nsplugin.Ref
	index int
}

// placedTarget is a target on a link.
type placedTarget struct {
	at     linkAt
	target netip.Prefix
}

var _ api.MetadataMapRW = (*placementIndex)(nil)

func newPlacementIndex(target func(key string) netip.Prefix) *placementIndex {
	return &placementIndex{
		MemMetadataMap: api.NewMetadataMap(),
		target:         target,
		byLink:         map[linkAt]map[string]struct{}{},
		byDest:         shrinkmap.New[placedTarget, []string](),
	}
}

// placementValue is the Placement of metadata (ok false: none, or not on
// a link).
func placementValue(md any) (Placement, bool) {
	var pl Placement
	switch m := md.(type) {
	case *Placement:
		if m != nil {
			pl = *m
		}
	case Placement:
		pl = m
	}
	return pl, pl.LinkIndex > 0
}

// placed is where the index has a key's Placement. Under x.mu.
func (x *placementIndex) placed(key string, pl Placement) placedTarget {
	pt := placedTarget{at: linkAt{pl.Namespace, pl.LinkIndex}, target: pl.target}
	if !pt.target.IsValid() {
		pt.target = x.target(key)
	}
	return pt
}

// Put implements api.MetadataMapRW.
func (x *placementIndex) Put(key string, md any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.unplace(key)
	x.MemMetadataMap.Put(key, md)
	pl, ok := placementValue(md)
	if !ok {
		return
	}
	pt := x.placed(key, pl)
	set := x.byLink[pt.at]
	if set == nil {
		set = map[string]struct{}{}
		x.byLink[pt.at] = set
	}
	set[key] = struct{}{}
	keys, _ := x.byDest.Get(pt)
	x.byDest.Put(pt, append(keys, key))
}

// Delete implements api.MetadataMapRW.
func (x *placementIndex) Delete(key string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.unplace(key)
	x.MemMetadataMap.Delete(key)
}

// unplace drops a key from the indexes, where its metadata put it. Under
// x.mu.
func (x *placementIndex) unplace(key string) {
	md, _ := x.MemMetadataMap.GetValue(key)
	pl, ok := placementValue(md)
	if !ok {
		return
	}
	pt := x.placed(key, pl)
	if set := x.byLink[pt.at]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(x.byLink, pt.at)
		}
	}
	keys, _ := x.byDest.Get(pt)
	if i := slices.Index(keys, key); i >= 0 {
		if keys = slices.Delete(keys, i, i+1); len(keys) == 0 {
			x.byDest.Delete(pt)
		} else {
			x.byDest.Put(pt, keys)
		}
	}
}

// onLink returns the keys placed on a link, sorted (nil index: none).
func (x *placementIndex) onLink(at Placement) []string {
	if x == nil {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	set := x.byLink[linkAt{at.Namespace, at.LinkIndex}]
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// at returns the keys of a target on a link, sorted.
func (x *placementIndex) at(at Placement, target netip.Prefix) []string {
	if x == nil {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	keys, _ := x.byDest.Get(placedTarget{at: linkAt{at.Namespace, at.LinkIndex}, target: target})
	return sortedKeys(keys)
}

// drifted returns the keys of a target on a link whose applied attributes
// differ reports out of sync with an event, sorted.
func (x *placementIndex) drifted(at Placement, target netip.Prefix, differ func(Applied) bool) []string {
	if x == nil {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	keys, _ := x.byDest.Get(placedTarget{at: linkAt{at.Namespace, at.LinkIndex}, target: target})
	var out []string
	for _, key := range keys {
		md, _ := x.MemMetadataMap.GetValue(key)
		if pl, ok := placementValue(md); ok && differ(pl.Applied) {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	out := slices.Clone(keys)
	sort.Strings(out)
	return out
}

package l3plugin

import (
	"net/netip"
	"sort"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
)

// Drift: the interface watcher (ifplugin.Watcher, SetLinkObjects) asks the
// plugin which routes and ARP entries a netlink event concerns. The
// metadata maps of both descriptors (placementIndex) index the values by
// where the agent put them: the link (Placement), and on it the masked
// destination of a route or the IP of an ARP entry (keys are canonical, so
// an event's destination or IP, spelled canonically, finds them).

var _ ifplugin.LinkObjects = (*Plugin)(nil)

// OnLink implements ifplugin.LinkObjects: the routes and ARP entries on the
// link.
func (p *Plugin) OnLink(ns nsplugin.Ref, index int) []string {
	at := Placement{Namespace: ns, LinkIndex: index}
	return append(p.routes.Load().onLink(at), p.arps.Load().onLink(at)...)
}

// RouteKeys implements ifplugin.LinkObjects: the routes of ours (protocol
// RouteProtocol, main table, one link) to the destination of the event on
// its link.
func (p *Plugin) RouteKeys(ns nsplugin.Ref, r *netlink.Route) []string {
	if r.Protocol != RouteProtocol || r.LinkIndex <= 0 || len(r.MultiPath) > 0 || (r.Table != 0 && r.Table != syscall.RT_TABLE_MAIN) {
		return nil
	}
	dst, ok := ipNetToPrefix(r.Dst, r.Family == netlink.FAMILY_V6)
	if !ok {
		return nil
	}
	return p.routes.Load().at(Placement{Namespace: ns, LinkIndex: r.LinkIndex}, dst.String())
}

// NeighKeys implements ifplugin.LinkObjects: the ARP entries of the IP of
// the event on its link.
func (p *Plugin) NeighKeys(ns nsplugin.Ref, n *netlink.Neigh) []string {
	if n.Flags&netlink.NTF_PROXY != 0 || n.LinkIndex <= 0 {
		return nil
	}
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return nil
	}
	return p.arps.Load().at(Placement{Namespace: ns, LinkIndex: n.LinkIndex}, ip.Unmap().String())
}

// routeTarget is the masked destination of a route key ("" when the key
// does not parse).
func routeTarget(key string) string {
	parts, err := models.LinuxRoute.ParseKey(key)
	if err != nil {
		return ""
	}
	dst, err := netip.ParsePrefix(parts["dst_network"])
	if err != nil {
		return ""
	}
	// As parseRoute: an IPv4-mapped destination is an IPv4 route.
	if dst = netip.PrefixFrom(dst.Addr().Unmap(), dst.Bits()).Masked(); !dst.IsValid() {
		return ""
	}
	return dst.String()
}

// arpTarget is the IP of an ARP key ("" when the key does not parse).
func arpTarget(key string) string {
	parts, err := models.LinuxARP.ParseKey(key)
	if err != nil {
		return ""
	}
	ip, err := netip.ParseAddr(parts["ip_address"])
	if err != nil {
		return ""
	}
	return ip.Unmap().String()
}

// placementIndex is the metadata map of the route or ARP descriptor (label:
// the key; metadata: *Placement), indexed by link and by target on the
// link (the masked destination of a route, the IP of an ARP entry). The
// scheduler is its only writer; the watcher reads it.
type placementIndex struct {
	*api.MemMetadataMap
	target func(key string) string
	mu     sync.RWMutex
	byLink map[Placement]map[string]struct{}
	byDest map[placedTarget]map[string]struct{}
	placed map[string]placedTarget
}

// placedTarget is a target on a link.
type placedTarget struct {
	at     Placement
	target string
}

var _ api.MetadataMapRW = (*placementIndex)(nil)

func newPlacementIndex(target func(key string) string) *placementIndex {
	return &placementIndex{
		MemMetadataMap: api.NewMetadataMap(),
		target:         target,
		byLink:         map[Placement]map[string]struct{}{},
		byDest:         map[placedTarget]map[string]struct{}{},
		placed:         map[string]placedTarget{},
	}
}

// Put implements api.MetadataMapRW.
func (x *placementIndex) Put(key string, md any) {
	x.MemMetadataMap.Put(key, md)
	var at Placement
	switch m := md.(type) {
	case *Placement:
		if m != nil {
			at = *m
		}
	case Placement:
		at = m
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.unplace(key)
	if at.LinkIndex <= 0 {
		return
	}
	pt := placedTarget{at: at, target: x.target(key)}
	x.placed[key] = pt
	addTo(x.byLink, at, key)
	addTo(x.byDest, pt, key)
}

// Delete implements api.MetadataMapRW.
func (x *placementIndex) Delete(key string) {
	x.MemMetadataMap.Delete(key)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.unplace(key)
}

// unplace drops a key from the indexes. Under x.mu.
func (x *placementIndex) unplace(key string) {
	pt, ok := x.placed[key]
	if !ok {
		return
	}
	delete(x.placed, key)
	removeFrom(x.byLink, pt.at, key)
	removeFrom(x.byDest, pt, key)
}

func addTo[K comparable](m map[K]map[string]struct{}, k K, key string) {
	set := m[k]
	if set == nil {
		set = map[string]struct{}{}
		m[k] = set
	}
	set[key] = struct{}{}
}

func removeFrom[K comparable](m map[K]map[string]struct{}, k K, key string) {
	if set := m[k]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(m, k)
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
	return sortedKeys(x.byLink[at])
}

// at returns the keys of a target on a link, sorted.
func (x *placementIndex) at(at Placement, target string) []string {
	if x == nil {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return sortedKeys(x.byDest[placedTarget{at: at, target: target}])
}

func sortedKeys(set map[string]struct{}) []string {
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

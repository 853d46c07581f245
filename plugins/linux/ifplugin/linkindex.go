package ifplugin

import (
	"cmp"
	"slices"
	"sync"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
)

// linkID is a link of a namespace: its ifindex there.
type linkID struct {
	ns    nsplugin.Ref
	index int
}

// linkIndex is the metadata map of the interface descriptor (by logical
// name, as every metadata map), indexed by link too, so that the watcher
// maps a netlink event of a namespace to the interface it concerns, and
// knows which namespaces the agent's interfaces are in. The scheduler is
// its only writer; Put and Delete signal changed without blocking.
type linkIndex struct {
	*api.MemMetadataMap
	mu     sync.RWMutex
	byLink map[linkID]string
	links  map[string]linkID
	perNS  map[nsplugin.Ref]int
	// changed has a token after a Put or Delete (capacity 1: coalesced).
	changed chan struct{}
}

var _ api.MetadataMapRW = (*linkIndex)(nil)

func newLinkIndex() *linkIndex {
	return &linkIndex{
		MemMetadataMap: api.NewMetadataMap(),
		byLink:         map[linkID]string{},
		links:          map[string]linkID{},
		perNS:          map[nsplugin.Ref]int{},
		changed:        make(chan struct{}, 1),
	}
}

// metadataOf returns the interface metadata a map holds (the typed
// descriptor stores *Metadata).
func metadataOf(md any) (Metadata, bool) {
	switch m := md.(type) {
	case *Metadata:
		if m != nil {
			return *m, true
		}
	case Metadata:
		return m, true
	}
	return Metadata{}, false
}

// Put implements api.MetadataMapRW.
func (x *linkIndex) Put(label string, md any) {
	x.MemMetadataMap.Put(label, md)
	x.mu.Lock()
	x.unlink(label)
	if m, ok := metadataOf(md); ok && m.Index > 0 {
		id := linkID{ns: m.Namespace, index: m.Index}
		x.byLink[id] = label
		x.links[label] = id
		x.perNS[id.ns]++
	}
	x.mu.Unlock()
	x.signal()
}

// Delete implements api.MetadataMapRW.
func (x *linkIndex) Delete(label string) {
	x.MemMetadataMap.Delete(label)
	x.mu.Lock()
	x.unlink(label)
	x.mu.Unlock()
	x.signal()
}

// unlink drops the link of a label from the indexes. Under x.mu.
func (x *linkIndex) unlink(label string) {
	id, ok := x.links[label]
	if !ok {
		return
	}
	delete(x.links, label)
	if x.byLink[id] == label {
		delete(x.byLink, id)
	}
	if x.perNS[id.ns]--; x.perNS[id.ns] <= 0 {
		delete(x.perNS, id.ns)
	}
}

func (x *linkIndex) signal() {
	select {
	case x.changed <- struct{}{}:
	default:
	}
}

// interfaceOn returns the logical name of the interface on a link.
func (x *linkIndex) interfaceOn(ns nsplugin.Ref, index int) (string, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	name, ok := x.byLink[linkID{ns: ns, index: index}]
	return name, ok
}

// inNamespace returns the interfaces of a namespace and their links,
// sorted by name.
func (x *linkIndex) inNamespace(ns nsplugin.Ref) []namedLink {
	x.mu.RLock()
	var out []namedLink
	for id, name := range x.byLink {
		if id.ns == ns {
			out = append(out, namedLink{name: name, index: id.index})
		}
	}
	x.mu.RUnlock()
	slices.SortFunc(out, func(a, b namedLink) int { return cmp.Compare(a.name, b.name) })
	return out
}

// namedLink is an interface and the ifindex of its link.
type namedLink struct {
	name  string
	index int
}

// othersIn returns how many interfaces but the named ones have a link in a
// namespace.
func (x *linkIndex) othersIn(ns nsplugin.Ref, names ...string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := x.perNS[ns]
	for _, name := range names {
		if id, ok := x.links[name]; ok && id.ns == ns {
			n--
		}
	}
	return n
}

// namespaces returns the namespaces the interfaces are in.
func (x *linkIndex) namespaces() []nsplugin.Ref {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]nsplugin.Ref, 0, len(x.perNS))
	for ns := range x.perNS {
		out = append(out, ns)
	}
	return out
}

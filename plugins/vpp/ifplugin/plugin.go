package ifplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	govppapi "go.fd.io/govpp/api"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// Plugin holds the descriptors of VPP interfaces and of their derived values
// (admin state, addresses, unnumbered, VRF). It keeps no state of its own
// besides a reference to the metadata map the scheduler built for the
// interface descriptor (through MetadataMapFactory), where the derived
// descriptors find the sw_if_index of an interface. Register its
// descriptors with one scheduler only.
type Plugin struct {
	h   vppcalls.Handler
	log *slog.Logger

	index atomic.Pointer[indexMap]
}

// New returns the plugin calling VPP over m's connection. Register the
// plugin's messages before m.Run: m.AddArea(p.Area()).
func New(m *vppconn.Manager, log *slog.Logger) *Plugin {
	return NewWithHandler(vppcalls.NewHandler(m), log)
}

// NewWithHandler returns the plugin calling VPP through h.
func NewWithHandler(h vppcalls.Handler, log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.Default()
	}
	return &Plugin{h: h, log: log}
}

// Area lists the messages the plugin uses, for vppconn's compatibility check
// at connect. When VPP lacks one of them the area is disabled and every call
// of the plugin fails with a non-retriable *vppconn.IncompatibleError.
func (p *Plugin) Area() vppconn.Area { return vppcalls.Area() }

// Descriptors returns the descriptors to register: interfaces first (the
// others find interfaces in its metadata map), then admin state, VRF,
// addresses and unnumbered.
func (p *Plugin) Descriptors() []*api.KVDescriptor {
	return []*api.KVDescriptor{
		p.interfaceDescriptor(),
		p.adminStateDescriptor(),
		p.vrfDescriptor(),
		p.addressDescriptor(),
		p.unnumberedDescriptor(),
	}
}

// opCtx is the context of the descriptor calls: the scheduler gives callbacks
// none; every VPP call is bounded by the Manager's CallContext.
func opCtx() context.Context { return context.Background() }

// isRetriable: every failure may go away (VPP reconnects, a race with
// another client), except VPP lacking the plugin's messages.
func isRetriable(err error) bool {
	var ie *vppconn.IncompatibleError
	return !errors.As(err, &ie)
}

// isMissingInterface tells whether VPP says the interface does not exist.
func isMissingInterface(err error) bool { return isVPPError(err, govppapi.INVALID_SW_IF_INDEX) }

// isVPPError tells whether err is VPP's error code.
func isVPPError(err error, code govppapi.VPPApiError) bool {
	var e govppapi.VPPApiError
	return errors.As(err, &e) && e == code
}

// metadataMap builds the interface descriptor's metadata map and keeps it
// for the derived descriptors.
func (p *Plugin) metadataMap() api.MetadataMapRW {
	m := newIndexMap()
	p.index.Store(m)
	return m
}

// lookup returns the metadata of an interface by logical name.
func (p *Plugin) lookup(name string) (*Metadata, bool) {
	m := p.index.Load()
	if m == nil {
		return nil, false
	}
	v, ok := m.GetValue(name)
	if !ok {
		return nil, false
	}
	return metadataOf(v)
}

// swIfIndex returns the sw_if_index of an interface the descriptor created
// (for the callbacks of its derived values).
func (p *Plugin) swIfIndex(name string) (uint32, error) {
	md, ok := p.lookup(name)
	if !ok {
		return 0, fmt.Errorf("VPP interface %s is not known (no metadata)", name)
	}
	return md.SwIfIndex, nil
}

// ownSwIfIndex is swIfIndex for the Create of a derived value, which
// changes the interface: a foreign interface is refused (never changed).
func (p *Plugin) ownSwIfIndex(name string) (uint32, error) {
	md, ok := p.lookup(name)
	if !ok {
		return 0, fmt.Errorf("VPP interface %s is not known (no metadata)", name)
	}
	if md.Foreign {
		return 0, api.NonRetriable(fmt.Errorf("VPP interface %s is not the agent's (it has no tag of ours): its settings are left as they are", name))
	}
	return md.SwIfIndex, nil
}

// ownIndex returns the sw_if_index of an interface for the Delete of one of
// its derived values: ok is false when the interface has no metadata or VPP
// no longer has it at that index under its tag.
func (p *Plugin) ownIndex(name string) (idx uint32, ok bool, err error) {
	md, found := p.lookup(name)
	if !found {
		return 0, false, nil
	}
	idx, ok, err = p.own(name, md)
	if err != nil {
		err = fmt.Errorf("interface %s: %w", name, err)
	}
	return idx, ok, err
}

func metadataOf(v any) (*Metadata, bool) {
	switch md := v.(type) {
	case *Metadata:
		return md, md != nil
	case Metadata:
		return &md, true
	}
	return nil, false
}

// ---- metadata map with the sw_if_index index

// indexMap is the metadata map of the interface descriptor: logical name ->
// *Metadata, with a secondary index sw_if_index -> logical name.
type indexMap struct {
	*api.MemMetadataMap
	mu     sync.RWMutex
	byIdx  map[uint32]string
	byName map[string]uint32
}

func newIndexMap() *indexMap {
	return &indexMap{MemMetadataMap: api.NewMetadataMap(), byIdx: map[uint32]string{}, byName: map[string]uint32{}}
}

// IndexMapFactory builds the metadata map of the interface descriptor: the
// metadata (*Metadata) by logical name, indexed by sw_if_index too (see
// LookupBySwIfIndex).
func IndexMapFactory() api.MetadataMapRW { return newIndexMap() }

// Put implements api.MetadataMapRW.
func (m *indexMap) Put(label string, metadata any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unindex(label)
	if md, ok := metadataOf(metadata); ok {
		m.byIdx[md.SwIfIndex] = label
		m.byName[label] = md.SwIfIndex
	}
	m.MemMetadataMap.Put(label, metadata)
}

// Delete implements api.MetadataMapRW.
func (m *indexMap) Delete(label string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unindex(label)
	m.MemMetadataMap.Delete(label)
}

func (m *indexMap) unindex(label string) {
	if idx, ok := m.byName[label]; ok {
		if m.byIdx[idx] == label {
			delete(m.byIdx, idx)
		}
		delete(m.byName, label)
	}
}

func (m *indexMap) lookupIndex(idx uint32) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	name, ok := m.byIdx[idx]
	return name, ok
}

// LookupBySwIfIndex finds the logical name of the interface with that
// sw_if_index in the interface descriptor's metadata map (the scheduler's
// GetMetadataMap(InterfaceDescriptorName)). It uses the secondary index of a
// map built by IndexMapFactory, and scans any other map.
func LookupBySwIfIndex(m api.MetadataMap, idx uint32) (name string, ok bool) {
	if m == nil {
		return "", false
	}
	if im, isIndex := m.(*indexMap); isIndex {
		return im.lookupIndex(idx)
	}
	for _, label := range m.ListLabels() {
		if v, found := m.GetValue(label); found {
			if md, isMD := metadataOf(v); isMD && md.SwIfIndex == idx {
				return label, true
			}
		}
	}
	return "", false
}

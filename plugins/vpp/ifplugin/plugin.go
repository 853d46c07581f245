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
	// vppPID is the VPP process connected now (vppconn.Manager.PID); nil
	// (NewWithHandler): every metadata is taken as current.
	vppPID func() uint32
	// linuxDisabled: the agent runs without its Linux side
	// (SetLinuxDisabled).
	linuxDisabled bool

	index atomic.Pointer[indexMap]
}

// New returns the plugin calling VPP over m's connection. Register the
// plugin's messages before m.Run: for _, a := range p.Areas() { m.AddArea(a) }.
func New(m *vppconn.Manager, log *slog.Logger) *Plugin {
	p := NewWithHandler(vppcalls.NewHandler(m), log)
	p.vppPID = m.PID
	return p
}

// SetLinuxDisabled tells the plugin that the agent runs without its Linux
// side (no Linux plugins, no Linux interface watcher), so that an AF_PACKET
// interface, which waits for a Linux interface, says in its PENDING reason
// that the Linux interface is never reported. Call it before registering
// the descriptors.
func (p *Plugin) SetLinuxDisabled(disabled bool) { p.linuxDisabled = disabled }

// NewWithHandler returns the plugin calling VPP through h.
func NewWithHandler(h vppcalls.Handler, log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.Default()
	}
	return &Plugin{h: h, log: log}
}

// Areas lists the messages the plugin uses, for vppconn's compatibility
// check at connect: the interfaces' own (vppcalls.AreaName), and one area per
// interface type a VPP plugin provides (AF_PACKET, memif, TAP, VXLAN). When VPP
// lacks a message of an area, the area is disabled and its calls fail with
// a non-retriable *vppconn.IncompatibleError naming the messages: without
// memif, the memif values fail and the other interfaces are managed as
// usual; without the interfaces' own messages, every interface value fails.
func (p *Plugin) Areas() []vppconn.Area { return vppcalls.Areas() }

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

// isRetriable: every failure may go away (VPP reconnects, a race with
// another client), except VPP lacking the plugin's messages.
func isRetriable(err error) bool { return !vppconn.IsIncompatible(err) }

// currentPID is the VPP process whose indexes are valid now, for the
// metadata of an interface created or retrieved now. Read it before the VPP
// calls and stamp the metadata with stampPID after them: should VPP restart
// meanwhile, the metadata is taken for the old process's and not used,
// which is the safe side. 0 without a Manager, or before the first connect.
func (p *Plugin) currentPID() uint32 {
	if p.vppPID == nil {
		return 0
	}
	return p.vppPID()
}

// stampPID is the PID to stamp metadata with after successful calls, given
// the PID read before them: that one, unless no VPP had connected then (0):
// the calls reached the first VPP process, the one connected now.
func (p *Plugin) stampPID(before uint32) uint32 {
	if before == 0 {
		return p.currentPID()
	}
	return before
}

// isCurrent tells whether the sw_if_index of md is one of the VPP process
// connected now: not when md was created or retrieved in a VPP that has
// restarted since (VPP reuses indexes: the index may be another
// interface's now).
func (p *Plugin) isCurrent(md *Metadata) bool {
	return p.vppPID == nil || md.VPPPID == p.vppPID()
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
	m := newIndexMap(p.isCurrent)
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
		return 0, notKnown(name)
	}
	return md.SwIfIndex, nil
}

// notKnown is the error of a derived value whose interface has no
// sw_if_index in the VPP connected now.
func notKnown(name string) error {
	return fmt.Errorf("VPP interface %s is not known in the VPP connected now (no metadata, or that of a VPP that has restarted since: the interface is created again first)", name)
}

// ownSwIfIndex is swIfIndex for the Create of a derived value, which
// changes the interface: a foreign interface is refused (never changed).
func (p *Plugin) ownSwIfIndex(name string) (uint32, error) {
	md, ok := p.lookup(name)
	if !ok {
		return 0, notKnown(name)
	}
	if md.Foreign {
		return 0, api.NonRetriable(fmt.Errorf("VPP interface %s is not the agent's (it has no tag of ours): its settings are left as they are", name))
	}
	return md.SwIfIndex, nil
}

// recordChange notes, for the link-state watcher, a change the agent is
// about to make to interface name at idx (see indexMap.record).
func (p *Plugin) recordChange(name string, c agentChange) (settle func()) {
	if m := p.index.Load(); m != nil {
		return m.record(name, c)
	}
	return func() {}
}

// ownIndex returns the sw_if_index of an interface for the Delete of one of
// its derived values: ok is false when the interface has no metadata or VPP
// no longer has it at that index under its tag.
func (p *Plugin) ownIndex(ctx context.Context, name string) (idx uint32, ok bool, err error) {
	md, found := p.lookup(name)
	if !found {
		return 0, false, nil
	}
	idx, ok, err = p.own(ctx, name, md)
	if err != nil {
		err = fmt.Errorf("interface %s: %w", name, err)
	}
	return idx, ok, err
}

// ownIndexIn is ownIndex against a batch's list of VPP's interfaces.
func (p *Plugin) ownIndexIn(list *vppList, name string) (idx uint32, ok bool, err error) {
	md, found := p.lookup(name)
	if !found {
		return 0, false, nil
	}
	idx, ok, err = list.own(name, md)
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
// *Metadata, with a secondary index sw_if_index -> logical name. Readers
// (GetValue, LookupBySwIfIndex) see only the metadata that current accepts:
// that of the VPP process connected now. The scheduler keeps the rest
// until its resync after the VPP restart replaces or removes it.
type indexMap struct {
	*api.MemMetadataMap
	current func(*Metadata) bool // nil: all
	mu      sync.RWMutex
	byIdx   map[uint32]string
	byName  map[string]uint32
	// done is what the agent's callbacks last did to an interface in VPP
	// (see agentChange), by logical name: the link-state watcher tells
	// the echo of the agent's own changes from drift with it while the
	// transaction that makes them has not yet updated the metadata.
	done map[string]agentChange
	// inFlight counts, by logical name, the agent's requests recorded in
	// done whose reply has not come yet: VPP may not have carried them out
	// when the watcher lists it, so what it lists is not the agent's last
	// change yet (the change's own event makes the watcher look again).
	inFlight map[string]int
}

// agentChange is a change the agent's callbacks made (or are about to make)
// to the interface at SwIfIndex: admin state set to AdminUp, or the
// interface deleted.
type agentChange struct {
	SwIfIndex uint32
	AdminUp   bool
	Deleted   bool
}

func newIndexMap(current func(*Metadata) bool) *indexMap {
	return &indexMap{MemMetadataMap: api.NewMetadataMap(), current: current, byIdx: map[uint32]string{}, byName: map[string]uint32{}, done: map[string]agentChange{}, inFlight: map[string]int{}}
}

// record notes a change the agent makes to interface name, before its
// request is sent (VPP's event may come before the reply); settle, called
// once the reply has come (or the request failed), ends its flight.
func (m *indexMap) record(name string, c agentChange) (settle func()) {
	m.mu.Lock()
	m.done[name] = c
	m.inFlight[name]++
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			if m.inFlight[name]--; m.inFlight[name] <= 0 {
				delete(m.inFlight, name)
			}
			m.mu.Unlock()
		})
	}
}

// lastChange is the change the agent last made to interface name at idx,
// and whether a request of the agent's to it is still waiting for its
// reply.
func (m *indexMap) lastChange(name string, idx uint32) (c agentChange, ok, inFlight bool) {
	m.mu.RLock()
	c, ok = m.done[name]
	ok = ok && c.SwIfIndex == idx
	inFlight = ok && m.inFlight[name] > 0
	m.mu.RUnlock()
	return c, ok, inFlight
}

// IndexMapFactory builds the metadata map of the interface descriptor: the
// metadata (*Metadata) by logical name, indexed by sw_if_index too (see
// LookupBySwIfIndex).
func IndexMapFactory() api.MetadataMapRW { return newIndexMap(nil) }

// GetValue implements api.MetadataMap: metadata of another VPP process is
// not there.
func (m *indexMap) GetValue(label string) (any, bool) {
	v, ok := m.MemMetadataMap.GetValue(label)
	if !ok || m.current == nil {
		return v, ok
	}
	if md, isMD := metadataOf(v); isMD && !m.current(md) {
		return nil, false
	}
	return v, true
}

// Put implements api.MetadataMapRW.
func (m *indexMap) Put(label string, metadata any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unindex(label)
	if md, ok := metadataOf(metadata); ok {
		if c, ok := m.done[label]; ok && c.SwIfIndex != md.SwIfIndex {
			delete(m.done, label)
		}
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
	delete(m.done, label)
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
	name, ok := m.byIdx[idx]
	m.mu.RUnlock()
	if !ok {
		return "", false
	}
	if _, current := m.GetValue(name); !current {
		return "", false
	}
	return name, true
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

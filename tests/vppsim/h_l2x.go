package vppsim

import (
	"bytes"
	"cmp"
	"net"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"
)

// l2xState is l2's cross-connects and MAC table (L2 FIB), as VPP 25.10
// keeps them. Its zero value is a VPP just started (bridge domain 0 has
// index 0).
type l2xState struct {
	// xconnects: receive sw_if_index -> transmit sw_if_index. An interface
	// is in one L2 mode: cross-connected, a bridge domain member, or L3.
	xconnects map[uint32]uint32
	// bdIndex is VPP's bd_index of each bridge domain (bd_id -> index):
	// the lowest free from 1, reused once a domain is deleted. The FIB is
	// keyed by index, so a deleted domain's entries stay (l2_fib_table_dump
	// shows them with bd_id ~0) and the next domain that gets its index
	// has them.
	bdIndex map[uint32]uint32
	fib     map[fibKey]*L2FIBEntry
}

type fibKey struct {
	bdIndex uint32
	mac     [6]byte
}

// L2FIBEntry is one entry of the L2 FIB (L2FIB lists them).
type L2FIBEntry struct {
	// BdID is the domain's bd_id, NoIndex for an entry of a deleted domain.
	BdID      uint32
	MAC       net.HardwareAddr
	SwIfIndex uint32 // NoIndex for a filter
	Static    bool
	Filter    bool
	BVI       bool
	bdIndex   uint32
}

func (x *l2xState) init() {
	if x.bdIndex == nil {
		x.xconnects, x.bdIndex, x.fib = map[uint32]uint32{}, map[uint32]uint32{0: 0}, map[fibKey]*L2FIBEntry{}
	}
}

// bdAdded gives a new bridge domain the lowest free bd_index.
func (st *state) bdAdded(id uint32) {
	x := &st.l2x
	x.init()
	used := map[uint32]bool{}
	for _, k := range x.bdIndex {
		used[k] = true
	}
	k := uint32(1)
	for used[k] {
		k++
	}
	x.bdIndex[id] = k
}

// bdDeleted frees the bd_index of a deleted bridge domain; its FIB entries
// stay (VPP 25.10 keeps static entries).
func (st *state) bdDeleted(id uint32) {
	st.l2x.init()
	delete(st.l2x.bdIndex, id)
}

// l2ModeEnds is what happens when interface i leaves its L2 mode (to
// another mode, L3, or deleted): its cross-connect ends; as the BVI of a
// domain, VPP removes the BVI's MAC entry it added to the domain's FIB.
// Its other FIB entries stay.
func (st *state) l2ModeEnds(i *iface) {
	x := &st.l2x
	x.init()
	delete(x.xconnects, i.SwIfIndex)
	if i.Bridge == nil || i.Bridge.PortType != l2.L2_API_PORT_TYPE_BVI {
		return
	}
	k := fibKey{bdIndex: x.bdIndex[i.Bridge.BdID]}
	copy(k.mac[:], st.hw(i).MAC)
	if e := x.fib[k]; e != nil && e.BVI && e.SwIfIndex == i.SwIfIndex {
		delete(x.fib, k)
	}
}

// l2InterfaceDeleted is what VPP 25.10 does to L2 when an interface in
// cross-connect mode is deleted: its transmit interface goes to L3 mode,
// out of its own cross-connect or bridge domain (and the deleted
// interface's cross-connect ends with it, l2ModeEnds). The cross-connects
// whose transmit interface is deleted stay otherwise.
func (st *state) l2InterfaceDeleted(i *iface) {
	st.l2x.init()
	tx, ok := st.l2x.xconnects[i.SwIfIndex]
	if !ok || tx == i.SwIfIndex {
		return
	}
	if t := st.get(tx); t != nil {
		st.removeFromBridge(t)
	}
}

// bviJoined adds the MAC entry of a BVI to its domain's FIB, as VPP does
// when an interface joins a domain as its BVI.
func (st *state) bviJoined(i *iface, bdID uint32) {
	x := &st.l2x
	x.init()
	k := fibKey{bdIndex: x.bdIndex[bdID]}
	copy(k.mac[:], st.hw(i).MAC)
	x.fib[k] = &L2FIBEntry{MAC: slices.Clone(st.hw(i).MAC), SwIfIndex: i.SwIfIndex, Static: true, BVI: true, bdIndex: k.bdIndex}
}

// swInterfaceSetL2Xconnect, as VPP 25.10: enable puts the receive interface
// in cross-connect mode to the transmit one (out of the bridge domain or
// cross-connect it was in; both must exist: INVALID_SW_IF_INDEX); disable
// (GoVPP's zero value) puts it back in L3 mode whatever mode it is in, a
// bridge domain membership included, and the transmit interface is not
// looked at.
func swInterfaceSetL2Xconnect(c *call, m *l2.SwInterfaceSetL2Xconnect) api.Message {
	r := &l2.SwInterfaceSetL2XconnectReply{}
	rx := c.st.get(uint32(m.RxSwIfIndex))
	if rx == nil || m.Enable && c.st.get(uint32(m.TxSwIfIndex)) == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	c.st.removeFromBridge(rx)
	if m.Enable {
		c.st.l2x.xconnects[rx.SwIfIndex] = uint32(m.TxSwIfIndex)
	}
	return r
}

// l2XconnectDump lists the cross-connects by receive sw_if_index. One whose
// transmit interface was deleted is still listed (VPP keeps it, unless the
// deleted interface was cross-connected itself: see l2InterfaceDeleted);
// one whose receive interface was deleted is gone.
func l2XconnectDump(c *call, _ *l2.L2XconnectDump) []api.Message {
	c.st.l2x.init()
	var rxs []uint32
	for rx := range c.st.l2x.xconnects {
		rxs = append(rxs, rx)
	}
	slices.Sort(rxs)
	var out []api.Message
	for _, rx := range rxs {
		out = append(out, &l2.L2XconnectDetails{RxSwIfIndex: rvIndex(rx), TxSwIfIndex: rvIndex(c.st.l2x.xconnects[rx])})
	}
	return out
}

// l2fibAddDel, as VPP 25.10: the bridge domain must exist (NO_SUCH_ENTRY).
// An add replaces the entry of that MAC in the domain: a filter (drop)
// entry is static, has no interface (sw_if_index ignored); a forwarding
// entry's interface must exist and be a member of a bridge domain, any
// (INVALID_SW_IF_INDEX). A delete must find the entry (NO_SUCH_ENTRY) and,
// but for a filter, be given its interface (NO_SUCH_ENTRY otherwise; an
// interface deleted since is fine).
func l2fibAddDel(c *call, m *l2.L2fibAddDel) api.Message {
	r := &l2.L2fibAddDelReply{}
	x := &c.st.l2x
	x.init()
	idx, ok := x.bdIndex[m.BdID]
	if !ok {
		r.Retval = errNoSuchEntry
		return r
	}
	k := fibKey{bdIndex: idx, mac: m.Mac}
	sw := uint32(m.SwIfIndex)
	if !m.IsAdd {
		e := x.fib[k]
		if e == nil || !e.Filter && e.SwIfIndex != sw {
			r.Retval = errNoSuchEntry
			return r
		}
		delete(x.fib, k)
		return r
	}
	e := &L2FIBEntry{MAC: toMAC(m.Mac), SwIfIndex: sw, Static: m.StaticMac, BVI: m.BviMac, bdIndex: idx}
	if m.FilterMac {
		e.SwIfIndex, e.Static, e.Filter = NoIndex, true, true
	} else if i := c.st.get(sw); i == nil || i.Bridge == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	x.fib[k] = e
	return r
}

// l2FibTableDump lists the FIB entries of a domain, of all for bd_id ~0
// (an unknown domain, and bd 0: none), each with its domain's bd_id (~0
// for the entries a deleted domain left).
func l2FibTableDump(c *call, m *l2.L2FibTableDump) []api.Message {
	var out []api.Message
	for _, e := range c.st.fibEntries() {
		if m.BdID != NoIndex && e.BdID != m.BdID {
			continue
		}
		out = append(out, &l2.L2FibTableDetails{
			BdID: e.BdID, Mac: ethernet_types.MacAddress(fromMAC(e.MAC)), SwIfIndex: interface_types.InterfaceIndex(e.SwIfIndex),
			StaticMac: e.Static, FilterMac: e.Filter, BviMac: e.BVI,
		})
	}
	return out
}

// fibEntries lists the L2 FIB by bd_index and MAC (VPP lists it in hash
// order).
func (st *state) fibEntries() []L2FIBEntry {
	x := &st.l2x
	x.init()
	idToIndex := x.bdIndex
	var out []L2FIBEntry
	for _, e := range x.fib {
		c := *e
		c.MAC = slices.Clone(e.MAC)
		c.BdID = NoIndex
		for id, k := range idToIndex {
			if k == e.bdIndex {
				c.BdID = id
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b L2FIBEntry) int {
		return cmp.Or(cmp.Compare(a.bdIndex, b.bdIndex), bytes.Compare(a.MAC, b.MAC))
	})
	return out
}

// XConnects returns the cross-connects: receive sw_if_index -> transmit
// sw_if_index.
func (s *Sim) XConnects() map[uint32]uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.l2x.init()
	out := make(map[uint32]uint32, len(s.st.l2x.xconnects))
	for rx, tx := range s.st.l2x.xconnects {
		out[rx] = tx
	}
	return out
}

// L2FIB returns the L2 FIB entries, by bd_index and MAC.
func (s *Sim) L2FIB() []L2FIBEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.fibEntries()
}

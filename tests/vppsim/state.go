package vppsim

import (
	"cmp"
	"crypto/rand"
	"net"
	"net/netip"
	"slices"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"
)

// iface is the stored form of an interface. Computed fields of the embedded
// Interface (LinkUp, and MAC for sub-interfaces) are filled in by view().
type iface struct {
	Interface
	carrier      bool   // "cable plugged"/"peer connected"; see linkUp
	loopInstance uint32 // n of loop<n> (KindLoopback)
}

type tableKey struct {
	id   uint32
	ipv6 bool
}

type tableState struct {
	name     string
	apiOwned bool // created by ip_table_add_del (table 0 always exists)
}

type routeKey struct {
	table  uint32
	prefix netip.Prefix // masked; the family tells IPv4/IPv6
	src    uint8        // FIB source: each source has its own paths
}

type neighKey struct {
	swIfIndex uint32
	ip        netip.Addr
}

// state is everything a VPP restart loses. It is guarded by Sim.mu.
type state struct {
	ifs       map[uint32]*iface
	loops     map[uint32]bool // instances of the loopbacks (loop<n>) in ifs
	freeIdx   []uint32        // freed sw_if_indexes, reused last-freed first (VPP pools)
	nextIdx   uint32
	bds       map[uint32]*BridgeDomain
	tables    map[tableKey]*tableState
	routes    map[routeKey]*Route
	neighbors map[neighKey]*Neighbor
	memifSock map[uint32]string  // memif socket id -> filename
	ifEvents  map[*client]uint32 // want_interface_events registrations -> pid
	nextStats uint32             // stats_index of the next route / neighbour
	acl       aclState           // the acl plugin's (h_acl.go)
	vxlan     vxlanState         // the vxlan plugin's (h_vxlan.go)
	l2x       l2xState           // cross-connects and the L2 FIB (h_l2x.go)
	nat       natState           // the nat plugin's NAT44 (h_nat.go)
}

const defaultMemifSocket = "/run/vpp/memif.sock"

// newState is a VPP just started: local0, then the given number of untagged
// loopbacks (loop0, ...), as a startup configuration creates them.
func newState(loopbacks int) *state {
	st := &state{
		ifs:       map[uint32]*iface{},
		loops:     map[uint32]bool{},
		bds:       map[uint32]*BridgeDomain{},
		tables:    map[tableKey]*tableState{},
		routes:    map[routeKey]*Route{},
		neighbors: map[neighKey]*Neighbor{},
		memifSock: map[uint32]string{0: defaultMemifSocket},
		ifEvents:  map[*client]uint32{},
	}
	st.tables[tableKey{0, false}] = &tableState{name: "ipv4-VRF:0"}
	st.tables[tableKey{0, true}] = &tableState{name: "ipv6-VRF:0"}
	st.ifs[0] = &iface{Interface: Interface{
		SwIfIndex: 0, SupSwIfIndex: 0, Name: "local0", Kind: KindLocal, DevType: "local",
		MAC: make(net.HardwareAddr, 6),
	}}
	st.nextIdx = 1
	for n := range loopbacks {
		st.newLoopback(nil, uint32(n))
	}
	return st
}

func (st *state) allocIndex() uint32 {
	if n := len(st.freeIdx); n > 0 {
		idx := st.freeIdx[n-1]
		st.freeIdx = st.freeIdx[:n-1]
		return idx
	}
	idx := st.nextIdx
	st.nextIdx++
	return idx
}

// addHW adds a hardware interface with VPP's defaults.
func (st *state) addHW(i *iface) uint32 {
	idx := st.allocIndex()
	i.SwIfIndex = idx
	i.SupSwIfIndex = idx
	if i.MTU == ([4]uint32{}) {
		i.MTU = [4]uint32{i.LinkMTU, 0, 0, 0}
	}
	st.ifs[idx] = i
	return idx
}

func (st *state) get(idx uint32) *iface {
	return st.ifs[idx]
}

// hw returns the hardware interface of idx (itself, or a sub-interface's parent).
func (st *state) hw(i *iface) *iface {
	if i.Kind == KindSub {
		if p := st.ifs[i.SupSwIfIndex]; p != nil {
			return p
		}
	}
	return i
}

// linkUp follows the device: loopbacks, AF_PACKET and VXLAN tunnels have
// link when admin up;
// a TAP has link as soon as it exists; memif only when connected to a peer
// (never, unless SetLinkUp); local0 never; a sub-interface has its parent's.
func (st *state) linkUp(i *iface) bool {
	h := st.hw(i)
	switch h.Kind {
	case KindLoopback, KindAfPacket, KindVxlan:
		return h.AdminUp && h.carrier
	case KindTap, KindMemif:
		return h.carrier
	default:
		return false
	}
}

func (st *state) flags(i *iface) interface_types.IfStatusFlags {
	var f interface_types.IfStatusFlags
	if i.AdminUp {
		f |= interface_types.IF_STATUS_API_FLAG_ADMIN_UP
	}
	if st.linkUp(i) {
		f |= interface_types.IF_STATUS_API_FLAG_LINK_UP
	}
	return f
}

// eventFlags returns, per interface, the states VPP sends events about:
// its admin state, and the link state of an interface that is not a
// sub-interface (VPP signals link changes for the hardware interface only:
// a sub-interface whose parent's link changes gets no event).
func (st *state) eventFlags() map[uint32]interface_types.IfStatusFlags {
	m := make(map[uint32]interface_types.IfStatusFlags, len(st.ifs))
	for idx, i := range st.ifs {
		f := st.flags(i)
		if i.Kind == KindSub {
			f &^= interface_types.IF_STATUS_API_FLAG_LINK_UP
		}
		m[idx] = f
	}
	return m
}

// view returns a copy of the interface with the computed fields filled in.
func (st *state) view(i *iface) Interface {
	c := i.clone()
	c.LinkUp = st.linkUp(i)
	if i.Kind == KindSub {
		c.MAC = slices.Clone(st.hw(i).MAC)
		c.LinkMTU = st.hw(i).LinkMTU
	}
	return c
}

// sortedIfs returns the interfaces ordered by sw_if_index (VPP's pool order).
func (st *state) sortedIfs() []*iface {
	out := make([]*iface, 0, len(st.ifs))
	for _, i := range st.ifs {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b *iface) int { return cmp.Compare(a.SwIfIndex, b.SwIfIndex) })
	return out
}

// deleteIf removes an interface and what refers to it: its sub-interfaces
// (when it is a hardware interface), its addresses, its bridge domain
// membership (BVI / UU-fwd included), its dynamic neighbours, its ACLs
// and the unnumbered configuration of interfaces that borrowed its
// addresses. The
// route paths through it and its static neighbours stay, under its
// sw_if_index, as in VPP 25.10 (ipInterfaceDeleted). It returns the deleted
// sw_if_indexes (sub-interfaces first).
func (st *state) deleteIf(idx uint32) []uint32 {
	i := st.ifs[idx]
	if i == nil {
		return nil
	}
	var deleted []uint32
	if i.Kind != KindSub {
		for _, s := range st.sortedIfs() {
			if s.Kind == KindSub && s.SupSwIfIndex == idx {
				deleted = append(deleted, st.deleteIf(s.SwIfIndex)...)
			}
		}
	}
	st.l2InterfaceDeleted(i)
	st.removeFromBridge(i)
	st.ipInterfaceDeleted(idx)
	st.acl.aclInterfaceDeleted(idx)
	st.nat.natInterfaceDeleted(idx)
	for _, o := range st.ifs {
		if o.Unnumbered && o.UnnumberedFrom == idx {
			o.Unnumbered, o.UnnumberedFrom = false, 0
		}
	}
	delete(st.ifs, idx)
	if i.Kind == KindLoopback {
		delete(st.loops, i.loopInstance)
	}
	st.freeIdx = append(st.freeIdx, idx)
	// A table that only stayed because this interface was bound to it goes.
	st.gcTables()
	return append(deleted, idx)
}

// removeFromBridge takes the interface out of its L2 mode: out of its
// bridge domain or cross-connect (see l2ModeEnds).
func (st *state) removeFromBridge(i *iface) {
	st.l2ModeEnds(i)
	if i.Bridge == nil {
		return
	}
	if bd := st.bds[i.Bridge.BdID]; bd != nil {
		bd.Members = slices.DeleteFunc(bd.Members, func(m BridgeMember) bool { return m.SwIfIndex == i.SwIfIndex })
		if bd.BVI == i.SwIfIndex {
			bd.BVI = NoIndex
		}
		if bd.UUFwd == i.SwIfIndex {
			bd.UUFwd = NoIndex
		}
	}
	i.Bridge = nil
}

func (st *state) addToBridge(i *iface, bdID uint32, pt l2.L2PortType, shg uint8) {
	st.removeFromBridge(i)
	i.Bridge = &BridgeMembership{BdID: bdID, PortType: pt, SHG: shg}
	bd := st.bds[bdID]
	if bd == nil { // bridge domain 0: exists implicitly, never dumped
		return
	}
	bd.Members = append(bd.Members, BridgeMember{SwIfIndex: i.SwIfIndex, PortType: pt, SHG: shg})
	switch pt {
	case l2.L2_API_PORT_TYPE_BVI:
		bd.BVI = i.SwIfIndex
		st.bviJoined(i, bdID)
	case l2.L2_API_PORT_TYPE_UU_FWD:
		bd.UUFwd = i.SwIfIndex
	}
}

// gcTables destroys the tables nothing holds any more, with every route in
// them, as VPP 25.10 does when a table's last lock goes: a table (other
// than 0) is held by the API (ip_table_add_del), by the interfaces bound to
// it, and by the route paths (of any table) that resolve in it: a next hop
// without interface, or a lookup (INTER_VRF). A table the API deleted lives
// on, routes and all, while something else holds it. Destroying a table
// may free others (its routes held them).
func (st *state) gcTables() {
	for {
		loose := false // a table that only routes or interfaces may hold
		for k, t := range st.tables {
			if k.id != 0 && !t.apiOwned {
				loose = true
				break
			}
		}
		if !loose {
			return
		}
		held := map[tableKey]bool{}
		for k, t := range st.tables {
			if k.id == 0 || t.apiOwned {
				held[k] = true
			}
		}
		for _, i := range st.ifs {
			held[tableKey{i.IP4Table, false}] = true
			held[tableKey{i.IP6Table, true}] = true
			if x := i.Vxlan; x != nil { // its encap table
				held[tableKey{x.EncapVrf, x.Src.Is6()}] = true
			}
		}
		for rk, r := range st.routes {
			for _, p := range r.Paths {
				if p.Type == fib_types.FIB_API_PATH_TYPE_NORMAL && p.SwIfIndex == NoIndex {
					held[tableKey{p.TableID, rk.prefix.Addr().Is6()}] = true
				}
			}
		}
		destroyed := false
		for k := range st.tables {
			if held[k] {
				continue
			}
			delete(st.tables, k)
			for rk := range st.routes {
				if rk.table == k.id && rk.prefix.Addr().Is6() == k.ipv6 {
					delete(st.routes, rk)
				}
			}
			destroyed = true
		}
		if !destroyed {
			return
		}
	}
}

// randomMAC returns a locally administered MAC as VPP makes them (02:fe:...).
func randomMAC() net.HardwareAddr {
	m := make(net.HardwareAddr, 6)
	_, _ = rand.Read(m[2:])
	m[0], m[1] = 0x02, 0xfe
	return m
}

package vppsim

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/memif"
)

const defaultMTU = 9000

func rvIndex(idx uint32) interface_types.InterfaceIndex { return interface_types.InterfaceIndex(idx) }

// swInterfaceDump: a sw_if_index other than ~0 selects that one interface
// (and the name filter is ignored) — GoVPP does not apply the API default
// ~0, so SwInterfaceDump{} returns local0 only. Otherwise every interface
// whose name contains name_filter (case-insensitive) when name_filter_valid.
func swInterfaceDump(c *call, m *interfaces.SwInterfaceDump) []api.Message {
	var out []api.Message
	if idx := uint32(m.SwIfIndex); idx != NoIndex {
		if i := c.st.get(idx); i != nil {
			out = append(out, c.st.swDetails(i))
		}
		return out
	}
	filter := ""
	if m.NameFilterValid {
		filter = strings.ToLower(m.NameFilter)
	}
	for _, i := range c.st.sortedIfs() {
		if filter != "" && !strings.Contains(strings.ToLower(i.Name), filter) {
			continue
		}
		out = append(out, c.st.swDetails(i))
	}
	return out
}

func (st *state) swDetails(i *iface) *interfaces.SwInterfaceDetails {
	v := st.view(i)
	d := &interfaces.SwInterfaceDetails{
		SwIfIndex:        rvIndex(v.SwIfIndex),
		SupSwIfIndex:     v.SupSwIfIndex,
		L2Address:        fromMAC(v.MAC),
		Flags:            st.flags(i),
		Type:             interface_types.IF_API_TYPE_HARDWARE,
		LinkMtu:          uint16(st.hw(i).LinkMTU),
		Mtu:              v.MTU[:],
		InterfaceName:    v.Name,
		InterfaceDevType: v.DevType,
		Tag:              v.Tag,
	}
	if v.LinkUp {
		d.LinkDuplex = interface_types.LINK_DUPLEX_API_FULL
	}
	if s := v.Sub; s != nil {
		d.L2Address = ethernet_types.MacAddress{} // VPP 25.10 reports no MAC for a sub-interface
		d.Type = interface_types.IF_API_TYPE_SUB
		d.SubID = s.SubID
		d.SubIfFlags = s.Flags
		d.SubOuterVlanID = s.OuterVlanID
		d.SubInnerVlanID = s.InnerVlanID
		switch {
		case s.Flags&interface_types.SUB_IF_API_FLAG_TWO_TAGS != 0:
			d.SubNumberOfTags = 2
		case s.Flags&interface_types.SUB_IF_API_FLAG_ONE_TAG != 0:
			d.SubNumberOfTags = 1
		}
	}
	return d
}

// swInterfaceSetFlags: only ADMIN_UP is looked at. A sub-interface can only
// be brought up when its parent is up ("super-interface must be up", -1).
// Going down flushes the interface's dynamic neighbours, as VPP does.
func swInterfaceSetFlags(c *call, m *interfaces.SwInterfaceSetFlags) api.Message {
	r := &interfaces.SwInterfaceSetFlagsReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	if i == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	up := m.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0
	if up && i.Kind == KindSub && !c.st.hw(i).AdminUp {
		r.Retval = errUnspecified
		return r
	}
	if i.AdminUp && !up {
		c.st.flushDynamicNeighbors(i.SwIfIndex)
	}
	i.AdminUp = up
	return r
}

// swInterfaceSetMtu copies all four MTUs (L3, IP4, IP6, MPLS; 0 = unset).
// local0 is not an ethernet interface: FEATURE_DISABLED.
func swInterfaceSetMtu(c *call, m *interfaces.SwInterfaceSetMtu) api.Message {
	r := &interfaces.SwInterfaceSetMtuReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	switch {
	case i == nil:
		r.Retval = errInvalidSwIfIndex
	case i.Kind == KindLocal:
		r.Retval = errFeatureDisabled
	default:
		var mtu [4]uint32
		copy(mtu[:], m.Mtu)
		i.MTU = mtu
	}
	return r
}

// errUnsupported is VPP's UNSUPPORTED (-126).
const errUnsupported = int32(api.UNSUPPORTED)

// hwInterfaceSetMtu sets the link MTU of a hardware interface and the L3 MTU
// of it and its sub-interfaces. A loopback's device cannot change it
// (UNSUPPORTED, as in VPP 25.10).
func hwInterfaceSetMtu(c *call, m *interfaces.HwInterfaceSetMtu) api.Message {
	r := &interfaces.HwInterfaceSetMtuReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	switch {
	case i == nil:
		r.Retval = errInvalidSwIfIndex
	case i.Kind == KindSub:
		r.Retval = errInvalidValue
	case i.Kind == KindLocal:
		r.Retval = errFeatureDisabled
	case i.Kind == KindLoopback:
		r.Retval = errUnsupported
	default:
		i.LinkMTU = uint32(m.Mtu)
		for _, o := range c.st.ifs {
			if o == i || (o.Kind == KindSub && o.SupSwIfIndex == i.SwIfIndex) {
				o.MTU[0] = uint32(m.Mtu)
			}
		}
	}
	return r
}

// swInterfaceSetMacAddress changes the MAC of a hardware interface. local0,
// a sub-interface and an IP-mode memif have none to change: UNIMPLEMENTED,
// as VPP 25.10 says.
func swInterfaceSetMacAddress(c *call, m *interfaces.SwInterfaceSetMacAddress) api.Message {
	r := &interfaces.SwInterfaceSetMacAddressReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	switch {
	case i == nil:
		r.Retval = errInvalidSwIfIndex
	case i.Kind == KindLocal, i.Kind == KindSub, i.Memif != nil && i.Memif.Mode == memif.MEMIF_MODE_API_IP:
		r.Retval = errUnimplemented
	default:
		c.st.hw(i).MAC = toMAC(m.MacAddress)
	}
	return r
}

func swInterfaceGetMacAddress(c *call, m *interfaces.SwInterfaceGetMacAddress) api.Message {
	r := &interfaces.SwInterfaceGetMacAddressReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	if i == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	r.MacAddress = fromMAC(c.st.hw(i).MAC)
	return r
}

// swInterfaceTagAddDel: adding an empty tag is INVALID_VALUE.
func swInterfaceTagAddDel(c *call, m *interfaces.SwInterfaceTagAddDel) api.Message {
	r := &interfaces.SwInterfaceTagAddDelReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	switch {
	case i == nil:
		r.Retval = errInvalidSwIfIndex
	case m.IsAdd && m.Tag == "":
		r.Retval = errInvalidValue
	case m.IsAdd:
		i.Tag = m.Tag
	default:
		i.Tag = ""
	}
	return r
}

// swInterfaceAddDelAddress: del_all removes every address; deleting one the
// interface does not have is ADDRESS_NOT_FOUND_FOR_INTERFACE. Adding an
// address the interface already has, with any prefix length, or one whose
// subnet overlaps an address of another interface in the same table, fails
// with VPP 25.10's codes, which do not tell the cases apart: IPv4
// ADDRESS_IN_USE, IPv6 DUPLICATE_IF_ADDRESS.
func swInterfaceAddDelAddress(c *call, m *interfaces.SwInterfaceAddDelAddress) api.Message {
	r := &interfaces.SwInterfaceAddDelAddressReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	if i == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	if m.DelAll {
		i.Addresses = nil
		return r
	}
	p, ok := toPrefix(ip_types.Prefix(m.Prefix))
	if !ok {
		r.Retval = errInvalidValue
		return r
	}
	if !m.IsAdd {
		n := len(i.Addresses)
		i.Addresses = slices.DeleteFunc(i.Addresses, func(a netip.Prefix) bool { return a == p })
		if len(i.Addresses) == n {
			r.Retval = errAddressNotFound
		}
		return r
	}
	ipv6 := p.Addr().Is6()
	conflict := errAddressInUse
	if ipv6 {
		conflict = errDuplicateIfAddress
	}
	for _, a := range i.Addresses {
		if a.Addr() == p.Addr() {
			r.Retval = conflict
			return r
		}
	}
	table := c.st.table(i, ipv6)
	for _, o := range c.st.ifs {
		if o == i || c.st.table(o, ipv6) != table {
			continue
		}
		for _, a := range o.Addresses {
			if a.Overlaps(p) { // false across families
				r.Retval = conflict
				return r
			}
		}
	}
	i.Addresses = append(i.Addresses, p)
	return r
}

// table is the VRF of an interface for one family.
func (st *state) table(i *iface, ipv6 bool) uint32 {
	if ipv6 {
		return i.IP6Table
	}
	return i.IP4Table
}

// swInterfaceSetUnnumbered: sw_if_index is the interface that has the
// addresses, unnumbered_sw_if_index the one that borrows them (the API names
// are backwards, as VPP's source says).
func swInterfaceSetUnnumbered(c *call, m *interfaces.SwInterfaceSetUnnumbered) api.Message {
	r := &interfaces.SwInterfaceSetUnnumberedReply{}
	un := c.st.get(uint32(m.UnnumberedSwIfIndex))
	if un == nil {
		r.Retval = errInvalidSwIfIndex2
		return r
	}
	if !m.IsAdd {
		un.Unnumbered, un.UnnumberedFrom = false, 0
		return r
	}
	if c.st.get(uint32(m.SwIfIndex)) == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	un.Unnumbered, un.UnnumberedFrom = true, uint32(m.SwIfIndex)
	return r
}

// swInterfaceSetTable binds an interface to a VRF, which must exist
// (NO_SUCH_FIB); an interface that has addresses of that family cannot move
// (ADDRESS_FOUND_FOR_INTERFACE).
func swInterfaceSetTable(c *call, m *interfaces.SwInterfaceSetTable) api.Message {
	r := &interfaces.SwInterfaceSetTableReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	if i == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	if c.st.tables[tableKey{m.VrfID, m.IsIPv6}] == nil {
		r.Retval = errNoSuchFib
		return r
	}
	if c.st.table(i, m.IsIPv6) == m.VrfID {
		return r
	}
	for _, a := range i.Addresses {
		if a.Addr().Is6() == m.IsIPv6 {
			r.Retval = errAddressFoundForInterface
			return r
		}
	}
	if m.IsIPv6 {
		i.IP6Table = m.VrfID
	} else {
		i.IP4Table = m.VrfID
	}
	c.st.gcTables()
	return r
}

func swInterfaceGetTable(c *call, m *interfaces.SwInterfaceGetTable) api.Message {
	r := &interfaces.SwInterfaceGetTableReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	if i == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	r.VrfID = c.st.table(i, m.IsIPv6)
	return r
}

// newLoopback creates loop<instance>; a zero MAC becomes de:ad:00:00:00:<instance>.
func (st *state) newLoopback(mac net.HardwareAddr, instance uint32) uint32 {
	if isZero(mac) {
		mac = net.HardwareAddr{0xde, 0xad, 0, 0, 0, byte(instance)}
	}
	st.loops[instance] = true
	return st.addHW(&iface{carrier: true, loopInstance: instance, Interface: Interface{
		Name: fmt.Sprintf("loop%d", instance), Kind: KindLoopback, DevType: "Loopback",
		MAC: mac, LinkMTU: defaultMTU,
	}})
}

// loopInstanceUsed tells whether loop<n> exists.
func (st *state) loopInstanceUsed(n uint32) bool { return st.loops[n] }

// freeLoopInstance is the lowest instance that no loopback (loop<n>) has.
func (st *state) freeLoopInstance() uint32 {
	n := uint32(0)
	for st.loops[n] {
		n++
	}
	return n
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

func createLoopback(c *call, m *interfaces.CreateLoopback) api.Message {
	n := c.st.freeLoopInstance()
	return &interfaces.CreateLoopbackReply{SwIfIndex: rvIndex(c.st.newLoopback(toMAC(m.MacAddress), n))}
}

// createLoopbackInstance: a specified instance already in use is INVALID_REGISTRATION.
func createLoopbackInstance(c *call, m *interfaces.CreateLoopbackInstance) api.Message {
	n := uint32(0)
	if m.IsSpecified {
		if c.st.loopInstanceUsed(m.UserInstance) {
			return &interfaces.CreateLoopbackInstanceReply{Retval: errInvalidRegistration, SwIfIndex: rvIndex(NoIndex)}
		}
		n = m.UserInstance
	} else {
		n = c.st.freeLoopInstance()
	}
	return &interfaces.CreateLoopbackInstanceReply{SwIfIndex: rvIndex(c.st.newLoopback(toMAC(m.MacAddress), n))}
}

func deleteLoopback(c *call, m *interfaces.DeleteLoopback) api.Message {
	r := &interfaces.DeleteLoopbackReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	if i == nil || i.Kind != KindLoopback {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	c.st.deleteIf(i.SwIfIndex)
	return r
}

// newSub creates <parent>.<subid> on the hardware interface of parent; the
// pair (parent, sub_id) must be new (SUBIF_ALREADY_EXISTS).
func (st *state) newSub(parent *iface, subID uint32, flags interface_types.SubIfFlags, outer, inner uint16) (uint32, int32) {
	hw := st.hw(parent)
	for _, o := range st.ifs {
		if o.Kind == KindSub && o.SupSwIfIndex == hw.SwIfIndex && o.Sub.SubID == subID {
			return NoIndex, errSubifAlreadyExists
		}
	}
	idx := st.allocIndex()
	st.ifs[idx] = &iface{Interface: Interface{
		SwIfIndex: idx, SupSwIfIndex: hw.SwIfIndex,
		Name: fmt.Sprintf("%s.%d", hw.Name, subID), Kind: KindSub, DevType: hw.DevType,
		// VPP 25.10 gives a new sub-interface no MTU of its own.
		Sub: &SubInterface{Parent: hw.SwIfIndex, SubID: subID, Flags: flags, OuterVlanID: outer, InnerVlanID: inner},
	}}
	return idx, 0
}

func createSubif(c *call, m *interfaces.CreateSubif) api.Message {
	p := c.st.get(uint32(m.SwIfIndex))
	if p == nil {
		return &interfaces.CreateSubifReply{Retval: errInvalidSwIfIndex, SwIfIndex: rvIndex(NoIndex)}
	}
	idx, rv := c.st.newSub(p, m.SubID, m.SubIfFlags, m.OuterVlanID, m.InnerVlanID)
	return &interfaces.CreateSubifReply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

// createVlanSubif: vlan 1..4095, sub_id = vlan, one tag, exact match.
func createVlanSubif(c *call, m *interfaces.CreateVlanSubif) api.Message {
	p := c.st.get(uint32(m.SwIfIndex))
	if p == nil {
		return &interfaces.CreateVlanSubifReply{Retval: errInvalidSwIfIndex, SwIfIndex: rvIndex(NoIndex)}
	}
	if m.VlanID == 0 || m.VlanID > 4095 {
		return &interfaces.CreateVlanSubifReply{Retval: errInvalidVlan, SwIfIndex: rvIndex(NoIndex)}
	}
	idx, rv := c.st.newSub(p, m.VlanID,
		interface_types.SUB_IF_API_FLAG_ONE_TAG|interface_types.SUB_IF_API_FLAG_EXACT_MATCH, uint16(m.VlanID), 0)
	return &interfaces.CreateVlanSubifReply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

func deleteSubif(c *call, m *interfaces.DeleteSubif) api.Message {
	r := &interfaces.DeleteSubifReply{}
	i := c.st.get(uint32(m.SwIfIndex))
	switch {
	case i == nil:
		r.Retval = errInvalidSwIfIndex
	case i.Kind != KindSub:
		r.Retval = errInvalidSubSwIfIndex
	default:
		c.st.deleteIf(i.SwIfIndex)
	}
	return r
}

// wantInterfaceEvents registers the connection for sw_interface_event
// (enable_disable != 0) or unregisters it; registering twice, or
// unregistering when not registered, is INVALID_REGISTRATION.
func wantInterfaceEvents(c *call, m *interfaces.WantInterfaceEvents) api.Message {
	r := &interfaces.WantInterfaceEventsReply{}
	_, registered := c.st.ifEvents[c.cl]
	switch {
	case m.EnableDisable != 0 && registered, m.EnableDisable == 0 && !registered:
		r.Retval = errInvalidRegistration
	case m.EnableDisable != 0:
		c.st.ifEvents[c.cl] = m.PID
	default:
		delete(c.st.ifEvents, c.cl)
	}
	return r
}

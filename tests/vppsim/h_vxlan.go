package vppsim

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/vxlan"
)

// VPP 25.10's errors of the vxlan plugin.
const (
	errTunnelExist      = int32(api.TUNNEL_EXIST)       // -75
	errInvalidDecapNext = int32(api.INVALID_DECAP_NEXT) // -76
	errSameSrcDst       = int32(api.SAME_SRC_DST)       // -82
	errInstanceInUse    = int32(api.INSTANCE_IN_USE)    // -147
)

// vxlanPort is the UDP port VPP gives a tunnel whose ports are 0 (IPv4 and
// IPv6 alike).
const vxlanPort = 4789

// vxlanDevType is the interface_dev_type of a VXLAN tunnel.
const vxlanDevType = "VXLAN"

// Decap next nodes of vxlan4-input / vxlan6-input: VPP 25.10 has drop and
// l2-input (the default, ~0), and more only once a CLI "decap-next node"
// adds one.
const (
	vxlanNextDrop    = 0
	vxlanNextL2Input = 1
)

// vxlanState is the vxlan plugin's: its pool of tunnels, whose slots
// (dev_instance) are reused last-freed first, and the user instances
// (vxlan_tunnel<n>) in use.
type vxlanState struct {
	freeSlots []uint32
	nextSlot  uint32
}

func (x *vxlanState) allocSlot() uint32 {
	if n := len(x.freeSlots); n > 0 {
		s := x.freeSlots[n-1]
		x.freeSlots = x.freeSlots[:n-1]
		return s
	}
	s := x.nextSlot
	x.nextSlot++
	return s
}

// ip46 decodes an address as VPP's ip_address_decode and
// ip46_address_is_ip4 take it: an IPv6 address whose first 12 bytes are
// zero (::1, ::10.0.0.1) is IPv4 to VPP.
func ip46(a ip_types.Address) netip.Addr {
	addr, _ := toAddr(a)
	if addr.Is6() {
		b := addr.As16()
		if [12]byte(b[:12]) == [12]byte{} {
			return netip.AddrFrom4([4]byte(b[12:]))
		}
	}
	return addr
}

// vxlanKey is how VPP 25.10 finds a tunnel (vxlan4/6_tunnel_by_key): the
// destination, source port, encap table and the VNI's low 24 bits (VPP
// shifts it left by 8 in 32 bits), and the source for an IPv4 unicast
// tunnel only.
func vxlanKey(p *VxlanParams) string {
	src := ""
	if p.Dst.Is4() && !p.Dst.IsMulticast() {
		src = p.Src.String()
	}
	return fmt.Sprintf("%s>%s:%d/%d/%d", src, p.Dst, p.SrcPort, p.EncapVrf, p.VNI&(1<<24-1))
}

// vxlanAddDel mirrors VPP 25.10's vxlan_add_del_tunnel_v3: the checks of
// vxlan_add_del_tunnel_clean_input, in order, for an add and a delete alike
// (the encap table of the source's IP version must exist, NO_SUCH_FIB;
// both ends of one IP version, INVALID_VALUE; distinct, SAME_SRC_DST; a
// multicast destination needs an existing interface, INVALID_SW_IF_INDEX),
// ports 0 made 4789, then the key: an add of a key that exists is
// TUNNEL_EXIST, a delete of one that does not NO_SUCH_ENTRY. A VNI of more
// than 24 bits is taken, keyed by its low 24 bits. An add makes
// vxlan_tunnel<instance> (instance ~0: the pool slot, lowest free or
// last freed; one in use: INSTANCE_IN_USE), an Ethernet interface with a
// random 02:fe MAC (is_l3: none), admin and link up, MTU 9000; a unicast
// tunnel given a multicast interface keeps it. A delete removes the tunnel
// of the key, whatever the request's instance and decap next.
func (c *call) vxlanAddDel(m *vxlan.VxlanAddDelTunnelV3) (uint32, int32) {
	p := VxlanParams{
		Src: ip46(m.SrcAddress), Dst: ip46(m.DstAddress), SrcPort: m.SrcPort, DstPort: m.DstPort,
		VNI: m.Vni, EncapVrf: m.EncapVrfID, McastSwIfIndex: uint32(m.McastSwIfIndex),
		DecapNextIndex: m.DecapNextIndex, IsL3: m.IsL3,
	}
	ipv6 := !p.Src.Is4()
	switch {
	case c.st.tables[tableKey{p.EncapVrf, ipv6}] == nil:
		return NoIndex, errNoSuchFib
	case p.Src.Is4() != p.Dst.Is4():
		return NoIndex, errInvalidValue
	case p.Src == p.Dst:
		return NoIndex, errSameSrcDst
	case p.Dst.IsMulticast() && c.st.get(p.McastSwIfIndex) == nil:
		return NoIndex, errInvalidSwIfIndex
	}
	if p.SrcPort == 0 {
		p.SrcPort = vxlanPort
	}
	if p.DstPort == 0 {
		p.DstPort = vxlanPort
	}
	key := vxlanKey(&p)
	var found *iface
	for _, i := range c.st.ifs {
		if i.Vxlan != nil && vxlanKey(i.Vxlan) == key {
			found = i
		}
	}
	if !m.IsAdd {
		if found == nil {
			return NoIndex, errNoSuchEntry
		}
		idx := found.SwIfIndex
		c.st.vxlan.freeSlots = append(c.st.vxlan.freeSlots, found.Vxlan.devInstance)
		c.st.deleteIf(idx)
		return idx, 0
	}
	if found != nil {
		return NoIndex, errTunnelExist
	}
	if p.DecapNextIndex == NoIndex {
		p.DecapNextIndex = vxlanNextL2Input
	}
	if p.DecapNextIndex != vxlanNextDrop && p.DecapNextIndex != vxlanNextL2Input {
		return NoIndex, errInvalidDecapNext
	}
	slot := c.st.vxlan.allocSlot()
	p.devInstance, p.Instance = slot, m.Instance
	if p.Instance == NoIndex {
		p.Instance = slot
	}
	for _, i := range c.st.ifs {
		if i.Vxlan != nil && i.Vxlan.Instance == p.Instance {
			c.st.vxlan.freeSlots = append(c.st.vxlan.freeSlots, slot)
			return NoIndex, errInstanceInUse
		}
	}
	mac := randomMAC()
	if p.IsL3 {
		mac = make([]byte, 6)
	}
	idx := c.st.addHW(&iface{carrier: true, Interface: Interface{
		Name: fmt.Sprintf("vxlan_tunnel%d", p.Instance), Kind: KindVxlan, DevType: vxlanDevType,
		MAC: mac, LinkMTU: defaultMTU, AdminUp: true, Vxlan: &p,
	}})
	return idx, 0
}

func vxlanAddDelTunnelV3(c *call, m *vxlan.VxlanAddDelTunnelV3) api.Message {
	idx, rv := c.vxlanAddDel(m)
	return &vxlan.VxlanAddDelTunnelV3Reply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

// vxlanTunnelV2Dump lists every tunnel (sw_if_index ~0), in pool order, or
// the one at sw_if_index (nothing when it is no tunnel).
func vxlanTunnelV2Dump(c *call, m *vxlan.VxlanTunnelV2Dump) []api.Message {
	var tunnels []*iface
	for _, i := range c.st.ifs {
		if i.Vxlan != nil && (uint32(m.SwIfIndex) == NoIndex || i.SwIfIndex == uint32(m.SwIfIndex)) {
			tunnels = append(tunnels, i)
		}
	}
	slices.SortFunc(tunnels, func(a, b *iface) int { return cmp.Compare(a.Vxlan.devInstance, b.Vxlan.devInstance) })
	var out []api.Message
	for _, i := range tunnels {
		p := i.Vxlan
		out = append(out, &vxlan.VxlanTunnelV2Details{
			SwIfIndex: rvIndex(i.SwIfIndex), Instance: p.Instance,
			SrcAddress: fromAddr(p.Src), DstAddress: fromAddr(p.Dst), SrcPort: p.SrcPort, DstPort: p.DstPort,
			McastSwIfIndex: rvIndex(p.McastSwIfIndex), EncapVrfID: p.EncapVrf, DecapNextIndex: p.DecapNextIndex, Vni: p.VNI,
		})
	}
	return out
}

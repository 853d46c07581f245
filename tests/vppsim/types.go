package vppsim

import (
	"net"
	"net/netip"
	"slices"

	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"
)

// NoIndex is VPP's "~0": no interface, no bridge domain, "all".
const NoIndex = ^uint32(0)

// Kind tells which API created an interface.
type Kind string

// Interface kinds.
const (
	KindLocal    Kind = "local"     // local0, always sw_if_index 0
	KindLoopback Kind = "loopback"  // create_loopback(_instance)
	KindAfPacket Kind = "af_packet" // af_packet_create(_v2,_v3)
	KindMemif    Kind = "memif"     // memif_create(_v2)
	KindTap      Kind = "tap"       // tap_create_v2/_v3
	KindSub      Kind = "sub"       // create_subif / create_vlan_subif
	KindVxlan    Kind = "vxlan"     // vxlan_add_del_tunnel_v3
)

// Interface is a snapshot of one VPP software interface.
type Interface struct {
	SwIfIndex    uint32
	SupSwIfIndex uint32 // itself for hardware interfaces, the parent for sub-interfaces
	Name         string // "local0", "loop0", "host-veth1", "memif1/0", "tap0", "loop0.10"
	Tag          string
	Kind         Kind
	DevType      string // interface_dev_type as VPP reports it: "local", "Loopback", "af-packet", "memif", "virtio"

	AdminUp bool
	LinkUp  bool // for a sub-interface: the link of its parent

	MAC     net.HardwareAddr // for a sub-interface: the parent's
	LinkMTU uint32           // link_mtu (of the hardware: a sub-interface shows its parent's)
	MTU     [4]uint32        // sw_interface MTUs: L3, IP4, IP6, MPLS (0 = not set), as in sw_interface_details.mtu

	IP4Table uint32 // VRF (sw_interface_set_table)
	IP6Table uint32

	Addresses      []netip.Prefix // own addresses, with host bits (10.0.0.1/24), in the order added
	Unnumbered     bool           // uses the addresses of UnnumberedFrom
	UnnumberedFrom uint32

	Bridge *BridgeMembership // nil when the interface is not in a bridge domain (L3 mode)

	Sub      *SubInterface // set for KindSub
	AfPacket *AfPacketParams
	Memif    *MemifParams
	Tap      *TapParams
	Vxlan    *VxlanParams
}

// BridgeMembership is how an interface is bound to a bridge domain.
type BridgeMembership struct {
	BdID     uint32
	PortType l2.L2PortType // normal, BVI, UU-fwd
	SHG      uint8         // split-horizon group
}

// SubInterface holds the parameters of a sub-interface.
type SubInterface struct {
	Parent      uint32
	SubID       uint32
	Flags       interface_types.SubIfFlags
	OuterVlanID uint16
	InnerVlanID uint16
}

// AfPacketParams holds the parameters an AF_PACKET interface was created with
// (the raw values of the request: 0 means the client left the field unset).
type AfPacketParams struct {
	HostIfName       string
	Mode             af_packet.AfPacketMode
	Flags            af_packet.AfPacketFlags
	NumRxQueues      uint16
	NumTxQueues      uint16
	RxFrameSize      uint32
	TxFrameSize      uint32
	RxFramesPerBlock uint32
	TxFramesPerBlock uint32
	UseRandomHwAddr  bool
	Version          int // 1, 2 or 3: which af_packet_create message made it
}

// MemifParams holds the parameters of a memif interface. RingSize and
// BufferSize are the effective values (defaults applied); RxQueues and TxQueues
// are the raw requested values.
type MemifParams struct {
	SocketID   uint32
	ID         uint32
	Role       memif.MemifRole
	Mode       memif.MemifMode
	RxQueues   uint8
	TxQueues   uint8
	RingSize   uint32
	BufferSize uint16
	Secret     string
	NoZeroCopy bool
	UseDma     bool
}

// TapParams holds the parameters of a TAP v2 interface (raw request values).
type TapParams struct {
	ID            uint32
	HostIfName    string
	HostNamespace string
	HostBridge    string
	HostMTU       uint32 // 0 when not set
	HostMAC       net.HardwareAddr
	HostIP4Prefix netip.Prefix // invalid when not set
	HostIP6Prefix netip.Prefix
	HostIP4GW     netip.Addr
	HostIP6GW     netip.Addr
	Flags         tapv2.TapFlags
	NumRxQueues   uint16
	NumTxQueues   uint16
	RxRingSize    uint16
	TxRingSize    uint16
	UseRandomMAC  bool
}

// VxlanParams holds a VXLAN tunnel as VPP keeps it: the ports and the decap
// next with VPP's defaults applied (4789, l2-input), the user instance
// (vxlan_tunnel<Instance>).
type VxlanParams struct {
	Instance         uint32
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	VNI              uint32
	EncapVrf         uint32 // table id, of Src's IP version
	McastSwIfIndex   uint32 // as given: NoIndex, or the multicast interface
	DecapNextIndex   uint32
	IsL3             bool

	devInstance uint32 // the pool slot
}

// BridgeDomain is a snapshot of one bridge domain.
type BridgeDomain struct {
	BdID    uint32
	Tag     string
	Flood   bool
	UuFlood bool
	Forward bool
	Learn   bool
	ArpTerm bool
	ArpUfwd bool
	MacAge  uint8

	BVI   uint32 // sw_if_index of the BVI, NoIndex if none
	UUFwd uint32 // sw_if_index of the UU-fwd port, NoIndex if none

	Members    []BridgeMember // in the order they joined
	ArpEntries []ArpTermEntry // bd_ip_mac entries, in the order added
}

// BridgeMember is one interface of a bridge domain.
type BridgeMember struct {
	SwIfIndex uint32
	PortType  l2.L2PortType
	SHG       uint8
}

// ArpTermEntry is one ARP-termination (bd_ip_mac) entry.
type ArpTermEntry struct {
	IP  netip.Addr
	MAC net.HardwareAddr
}

// Table is one IP table (VRF).
type Table struct {
	ID   uint32
	IPv6 bool
	Name string
}

// Route is one route added through the API (ip_route_add_del, or
// ip_route_add_del_v2 with its source). Routes VPP makes by itself
// (interface, neighbour and default entries) are not listed here, though
// ip_route_dump shows them.
type Route struct {
	TableID uint32
	Prefix  netip.Prefix // masked
	Source  uint8        // FIB source (SourceAPI for ip_route_add_del)
	Paths   []RoutePath

	stats uint32 // stats_index reported by ip_route_add_del_reply and ip_route_dump
}

// RoutePath is one path of a route, as stored (and reported by ip_route_dump).
type RoutePath struct {
	Type       fib_types.FibPathType
	NextHop    netip.Addr // invalid when the path has none (zero address)
	SwIfIndex  uint32     // NoIndex when none
	TableID    uint32     // next-hop table (recursive paths)
	Weight     uint8
	Preference uint8
	Proto      fib_types.FibPathNhProto
	Flags      fib_types.FibPathFlags
}

// Neighbor is one IP neighbour (ARP / ND) entry.
type Neighbor struct {
	SwIfIndex uint32
	IP        netip.Addr
	MAC       net.HardwareAddr
	Flags     ip_neighbor.IPNeighborFlags
}

func (i *Interface) clone() Interface {
	c := *i
	c.MAC = slices.Clone(i.MAC)
	c.Addresses = slices.Clone(i.Addresses)
	if i.Bridge != nil {
		b := *i.Bridge
		c.Bridge = &b
	}
	if i.Sub != nil {
		s := *i.Sub
		c.Sub = &s
	}
	if i.AfPacket != nil {
		a := *i.AfPacket
		c.AfPacket = &a
	}
	if i.Memif != nil {
		m := *i.Memif
		c.Memif = &m
	}
	if i.Tap != nil {
		t := *i.Tap
		t.HostMAC = slices.Clone(i.Tap.HostMAC)
		c.Tap = &t
	}
	if i.Vxlan != nil {
		x := *i.Vxlan
		c.Vxlan = &x
	}
	return c
}

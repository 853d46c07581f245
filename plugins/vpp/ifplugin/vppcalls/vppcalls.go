// Package vppcalls holds the VPP binary-API calls of the VPP interface
// plugin behind a small interface, Handler, so that the descriptors do not
// depend on GoVPP's message types.
//
// The implementation (NewHandler) uses GoVPP's RPC service clients
// (go.fd.io/govpp v0.13.0, VPP 25.10) over the connection of a
// vppconn.Manager, fetched for every call (it changes on reconnects). Every
// request, and every dump, runs under the Manager's CallContext deadline.
// Errors name the message ("sw_interface_set_mtu: VPPApiError: ..."); while
// VPP is away they wrap vppconn.ErrNotConnected ("... VPP is not connected
// ..."), and when VPP lacks the messages of the call's area (Areas: the
// interfaces' own, AF_PACKET, memif, TAP, VXLAN) a
// *vppconn.IncompatibleError.
//
// GoVPP does not apply the default= values of the API definitions, so every
// request sets its flags (is_add, use_random_mac, queue counts, ~0 indexes)
// explicitly.
//
// The dumps of every interface (ListInterfaces, DumpInterfaces,
// DumpUnnumbered, and ListInterfacesOnce for another plugin's connection)
// are made once per refresh of the KV Scheduler: the first Retrieve of a
// refresh that asks stores the result in the refresh's memo
// (api.RefreshMemo), the next ones load it, so a resync dumps every
// interface, with its addresses and tables, once. Results so shared are read
// only. Outside a refresh (a Create, a test calling a Retrieve directly)
// every call dumps.
package vppcalls

import (
	"context"
	"net"
	"net/netip"
)

// NoIndex is VPP's ~0: no interface, "all", "allocate".
const NoIndex = ^uint32(0)

// Kind tells which API created an interface.
type Kind int

// Interface kinds.
const (
	KindOther    Kind = iota // local0, DPDK, tunnels...: not managed here
	KindLoopback             // create_loopback
	KindAfPacket             // af_packet_create_v3
	KindMemif                // memif_create_v2
	KindTap                  // tap_create_v3
	KindSub                  // create_subif
	KindVxlan                // vxlan_add_del_tunnel_v3
)

func (k Kind) String() string {
	switch k {
	case KindLoopback:
		return "loopback"
	case KindAfPacket:
		return "af_packet"
	case KindMemif:
		return "memif"
	case KindTap:
		return "tap"
	case KindSub:
		return "sub-interface"
	case KindVxlan:
		return "vxlan"
	default:
		return "other"
	}
}

// Interface is one VPP software interface as dumped. The fields after
// LinkUp are filled by DumpInterfaces only (GetInterface leaves them zero).
type Interface struct {
	SwIfIndex    uint32
	SupSwIfIndex uint32 // itself, or the parent of a sub-interface
	Name         string // VPP's name: loop0, host-veth1, memif1/0, tap0, loop0.10
	Tag          string
	DevType      string
	Kind         Kind
	MAC          net.HardwareAddr // all zeros on a sub-interface and an IP-mode memif
	MTU          uint32           // L3 MTU (sw_interface_details.mtu[0])
	// ProtocolMTU are the IPv4, IPv6 and MPLS MTUs (mtu[1..3]); 0: the
	// protocol takes the L3 MTU. SetMTU sets them 0; a change by hand
	// ("set interface mtu ip4 1200") sets one and zeroes the others, L3
	// included.
	ProtocolMTU [3]uint32
	LinkMTU     uint32
	AdminUp     bool
	LinkUp      bool

	// Addresses (IPv4 then IPv6, in VPP's order, with host bits).
	Addresses []netip.Prefix
	// UnnumberedFrom is the interface whose addresses this one borrows
	// (valid when Unnumbered).
	Unnumbered     bool
	UnnumberedFrom uint32
	IP4Table       uint32
	IP6Table       uint32

	Sub      *SubDetails
	AfPacket *AfPacketDetails
	Memif    *MemifDetails
	Tap      *TapDetails
	Vxlan    *VxlanDetails
}

// SubDetails of a sub-interface.
type SubDetails struct {
	Parent      uint32
	SubID       uint32
	OuterVlanID uint16
	InnerVlanID uint16
	NumTags     uint8
	ExactMatch  bool
}

// AfPacketDetails of an AF_PACKET interface.
type AfPacketDetails struct {
	HostIfName string
}

// MemifDetails of a memif interface, as memif_dump reports it. VPP 25.10
// reports neither the secret nor the queue counts, and its ring_size and
// buffer_size are run-time values, not the configured ones: 1 and 0 until a
// peer connects, and on a master also while connected; only a connected
// slave reports the ring and buffer sizes it uses.
type MemifDetails struct {
	SocketID       uint32
	SocketFilename string // absolute, as VPP resolved it
	// RuntimeDir is VPP's run-time directory, where VPP puts a relative
	// socket filename (the directory of its default socket 0); "" when VPP
	// did not report socket 0.
	RuntimeDir string
	ID         uint32
	Master     bool
	Mode       uint32 // 0 ethernet, 1 IP, 2 punt/inject
	RingSize   uint32 // run-time value (see above)
	BufferSize uint32 // run-time value (see above)
}

// TapDetails of a TAP v2 interface.
type TapDetails struct {
	ID         uint32
	HostIfName string
	RxRingSize uint32
	TxRingSize uint32
	GSO        bool
	Tun        bool
}

// MemifParams create a memif interface.
type MemifParams struct {
	SocketID uint32 // from RegisterMemifSocket
	// SocketFilename is the filename of SocketID, named in the errors of a
	// master that cannot listen on it.
	SocketFilename string
	ID             uint32
	Master         bool
	Mode           uint32
	Secret         string
	RingSize       uint32 // 0: VPP's default (1024)
	BufferSize     uint32 // 0: VPP's default (2048)
	RxQueues       uint32 // 0: 1
	TxQueues       uint32 // 0: 1
	MAC            net.HardwareAddr
}

// TapParams create a TAP v2 interface.
type TapParams struct {
	HostIfName string // empty: VPP's default (tap<id>)
	RxRingSize uint32 // 0: 256
	TxRingSize uint32 // 0: 256
	GSO        bool
	MAC        net.HardwareAddr // nil: random
	Tag        string
}

// Handler is what the interface descriptors ask of VPP. Methods with an
// index work on the interface of that sw_if_index.
type Handler interface {
	// CreateLoopback creates a loopback (loop<n>) with the MAC (nil: VPP
	// picks one) and returns its index.
	CreateLoopback(ctx context.Context, mac net.HardwareAddr) (uint32, error)
	DeleteLoopback(ctx context.Context, idx uint32) error
	// CreateAfPacket binds an AF_PACKET interface (host-<name>) to a host
	// interface (af_packet_create_v3); nil mac: a random one.
	CreateAfPacket(ctx context.Context, hostIfName string, mac net.HardwareAddr) (uint32, error)
	// DeleteAfPacket deletes the AF_PACKET interface of a host interface.
	DeleteAfPacket(ctx context.Context, hostIfName string) error
	// RegisterMemifSocket returns the id of the memif socket filename,
	// registering it first when VPP does not have it. A relative filename
	// is VPP's to place: under its run-time directory (see MemifSocketPath),
	// whose subdirectories VPP creates; an absolute one is taken as it is
	// (VPP 25.10 does not check that its directory exists).
	// It returns the id and the path VPP has for the filename.
	RegisterMemifSocket(ctx context.Context, filename string) (id uint32, vppPath string, err error)
	// UnregisterMemifSocket removes the registration of a socket filename
	// when no memif uses it any more (VPP's default socket 0, sockets in
	// use and unknown filenames are left alone).
	UnregisterMemifSocket(ctx context.Context, filename string) error
	// CreateMemif creates a memif. A master listens on its socket at once:
	// when VPP cannot (the directory of an absolute filename does not
	// exist or is not VPP's to write, a file that is no socket is in the
	// way: VPP 25.10 says "System call error #4"), the error says so,
	// naming the file. When VPP refuses it because the id is taken on the
	// socket, or the socket has memifs of the other role (VPP 25.10 says
	// "Subinterface already exists" for both), the error names the memif
	// in the way.
	CreateMemif(ctx context.Context, p MemifParams) (uint32, error)
	DeleteMemif(ctx context.Context, idx uint32) error
	CreateTap(ctx context.Context, p TapParams) (uint32, error)
	DeleteTap(ctx context.Context, idx uint32) error
	// CreateSubif creates a dot1q sub-interface of parent: sub_id, one
	// tag, exact match, outer VLAN = vlan.
	CreateSubif(ctx context.Context, parent, subID uint32, vlan uint16) (uint32, error)
	DeleteSubif(ctx context.Context, idx uint32) error
	// CreateVxlan creates a VXLAN tunnel (admin up, as VPP makes it). When
	// VPP has a tunnel of that key already (TUNNEL_EXIST), the error names
	// it; when the encap VRF has no table, the error says so.
	CreateVxlan(ctx context.Context, p VxlanParams) (uint32, error)
	// DeleteVxlan deletes the VXLAN tunnel at idx (by the key VPP reports
	// for it); no tunnel there is a success.
	DeleteVxlan(ctx context.Context, idx uint32) error

	// SetAdminUp sets the admin flag (sw_interface_set_flags).
	SetAdminUp(ctx context.Context, idx uint32, up bool) error
	// SetMTU sets the L3 MTU (sw_interface_set_mtu [mtu, 0, 0, 0]).
	SetMTU(ctx context.Context, idx uint32, mtu uint32) error
	SetMAC(ctx context.Context, idx uint32, mac net.HardwareAddr) error
	// SetTag sets the tag ("" removes it).
	SetTag(ctx context.Context, idx uint32, tag string) error
	// AddAddress adds an address; one already there is success. VPP
	// refuses an address that conflicts with another (IPv4: it overlaps
	// another interface's subnet in the table, ADDRESS_IN_USE; IPv6: the
	// same address with another length, or another interface's subnet,
	// DUPLICATE_IF_ADDRESS).
	AddAddress(ctx context.Context, idx uint32, addr netip.Prefix) error
	// DelAddress removes an address; a missing address or interface is
	// success.
	DelAddress(ctx context.Context, idx uint32, addr netip.Prefix) error
	// SetUnnumbered makes idx borrow the addresses of donor.
	SetUnnumbered(ctx context.Context, idx, donor uint32) error
	// UnsetUnnumbered returns idx to L2; a missing interface is success.
	UnsetUnnumbered(ctx context.Context, idx uint32) error
	// SetTable binds the interface to VRF vrf for IPv4 and/or IPv6; the
	// tables of a non-zero VRF must exist (NO_SUCH_FIB otherwise).
	SetTable(ctx context.Context, idx uint32, vrf uint32, ipv4, ipv6 bool) error

	// GetInterface returns one interface (sw_interface_dump only), or nil
	// when there is none with that index.
	GetInterface(ctx context.Context, idx uint32) (*Interface, error)
	// DumpInterfaces returns every interface with its details, ordered by
	// index. Within a refresh it is dumped once (see the package doc): the
	// result is read only.
	DumpInterfaces(ctx context.Context) ([]*Interface, error)
	// ListInterfaces returns every interface as sw_interface_dump reports
	// it (GetInterface's fields), ordered by index. Within a refresh it is
	// dumped once, and is DumpInterfaces' result (with addresses, tables
	// and unnumbered) when the refresh has one: read only.
	ListInterfaces(ctx context.Context) ([]*Interface, error)
	// DumpAddresses returns the addresses of an interface, IPv4 then IPv6,
	// in VPP's order, with host bits.
	DumpAddresses(ctx context.Context, idx uint32) ([]netip.Prefix, error)
	// DumpUnnumbered returns the unnumbered interfaces: index -> donor.
	// Within a refresh it is dumped once: the map is read only.
	DumpUnnumbered(ctx context.Context) (map[uint32]uint32, error)

	// NewPipe returns a Pipe: requests of the interfaces' area sent
	// together, pipelined (for batches and the per-interface dumps).
	NewPipe() *Pipe
}

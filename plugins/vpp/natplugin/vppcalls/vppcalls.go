// Package vppcalls holds the VPP binary-API calls of the NAT44 plugin behind
// a small interface, Handler, so that the descriptors do not depend on
// GoVPP's message types: the messages of VPP's endpoint-dependent NAT44
// (the nat plugin's nat44_ed.api; GoVPP v0.13.0's binapi/nat44_ed, VPP
// 25.10).
//
// The implementation (NewHandler) uses the connection of a vppconn.Manager,
// fetched for every call (it changes on reconnects), every request and dump
// under the Manager's CallContext deadline. Errors name the message
// ("nat44_add_del_address_range: VPPApiError: ..."); while VPP is away they
// wrap vppconn.ErrNotConnected, and when VPP lacks the nat plugin (its
// messages are AreaName's) a *vppconn.IncompatibleError.
//
// What VPP 25.10 does with these messages, checked against it (the
// plugin's TestVPPNATBehaviour runs against vppsim and the real VPP):
//
//   - The plugin is loaded disabled. While it is, every configuration
//     message but nat44_forwarding_enable_disable is UNSUPPORTED and the
//     dumps are empty; nat44_show_running_config answers with sessions 0.
//     nat44_ed_plugin_enable_disable enables it (sessions 0: VPP's default,
//     64512; the static-mapping-only and connection-tracking flags are
//     UNSUPPORTED), FEATURE_ALREADY_ENABLED when it is; disabling it
//     removes every NAT setting (interfaces, addresses, mappings,
//     forwarding), FEATURE_ALREADY_DISABLED when it is.
//   - nat44_interface_add_del_feature: a feature on a missing interface is
//     INVALID_SW_IF_INDEX; adding one the interface has is success; an
//     interface with the output feature takes no inside/outside feature
//     (VALUE_EXIST) and the reverse. Deleting a feature of an interface
//     that has none is NO_SUCH_ENTRY, but deleting either feature of an
//     interface that has only one takes that one off, whichever it is:
//     delete only what the dump shows (SetFeature does not check).
//   - nat44_ed_add_del_output_interface: VALUE_EXIST when the interface has
//     it, NO_SUCH_ENTRY to delete one it has not; nat44_ed_output_interface_get
//     is answered by details and a reply with a cursor (EAGAIN to go on).
//   - nat44_add_del_address_range adds or deletes address by address and
//     stops at the first that fails (VALUE_EXIST, NO_SUCH_ENTRY), the ones
//     before it done; a last address below the first is success with
//     nothing done. Twice-NAT addresses are a list of their own (an address
//     can be in both). A VRF that does not exist is created.
//     nat44_address_dump lists the plain addresses, then the twice-NAT
//     ones, each list in VPP's vector order (a deleted address's place
//     taken by the last one).
//   - nat44_add_del_static_mapping_v2: "no interface" is external_sw_if_index
//     ~0 (any other index, 0 too, asks for that interface's address, and is
//     not checked); a mapping is known by its external address, port and
//     protocol (address only: the address), VALUE_EXIST for a second one;
//     a mapping on an interface is kept as a record to resolve (the dump
//     shows it with the interface and external address 0.0.0.0, its
//     twice-NAT flag only) and, while the interface has an IPv4 address,
//     as a mapping of that address too. The dump does not show the pool
//     address of twice-NAT. Deleting needs the external endpoint (and the
//     interface of a mapping on one), not the flags or VRF.
//   - nat44_add_del_lb_static_mapping needs two local endpoints or more
//     (INVALID_VALUE) and, unless out2in-only, the external address in the
//     pool (NO_SUCH_ENTRY); its external endpoint is unique among the static
//     mappings too. The dump does not show the affinity.
//   - nat44_add_del_identity_mapping: sw_if_index ~0 for an address (any
//     other index asks for that interface's address, as above); one
//     mapping per address, port and protocol holds a VRF per entry (the
//     dump lists one detail per VRF, all with the first entry's tag).
//     Mappings on the external address of a static mapping are VALUE_EXIST.
//   - Deleting an interface takes its NAT features off it; the mappings to
//     resolve on it stay.
package vppcalls

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
)

// NoIndex is VPP's ~0: no interface.
const NoIndex = ^uint32(0)

// MaxTagLen is the longest mapping tag VPP keeps (64 bytes with the NUL).
const MaxTagLen = 63

// IP protocol numbers of mappings.
const (
	ProtoICMP uint8 = 1
	ProtoTCP  uint8 = 6
	ProtoUDP  uint8 = 17
)

// Global is the global state of NAT44.
type Global struct {
	// Enabled tells whether the plugin is enabled.
	Enabled bool
	// Forwarding tells whether packets without session or mapping pass.
	Forwarding bool
}

// Feature is a NAT feature of an interface.
type Feature int

// Features.
const (
	Inside Feature = iota
	Outside
	// Output is VPP's output interface: NAT after routing.
	Output
)

func (f Feature) String() string {
	switch f {
	case Inside:
		return "inside"
	case Outside:
		return "outside"
	case Output:
		return "output"
	}
	return fmt.Sprintf("feature %d", int(f))
}

// InterfaceFeatures are the NAT features of one interface.
type InterfaceFeatures struct {
	SwIfIndex               uint32
	Inside, Outside, Output bool
}

// Has tells whether the interface has feature f.
func (i InterfaceFeatures) Has(f Feature) bool {
	switch f {
	case Inside:
		return i.Inside
	case Outside:
		return i.Outside
	case Output:
		return i.Output
	}
	return false
}

// Address is one address of the NAT pools.
type Address struct {
	IP netip.Addr
	// VrfID is the tenant's table, NoIndex for any.
	VrfID    uint32
	TwiceNAT bool
}

// Local is a local endpoint of a static mapping.
type Local struct {
	IP          netip.Addr
	Port        uint16
	VrfID       uint32
	Probability uint8 // load-balanced mappings only
}

// StaticMapping is a static mapping, plain or load-balanced (LB).
type StaticMapping struct {
	Tag string
	// ExternalSwIfIndex is the interface whose address is the external one,
	// NoIndex for ExternalIP. A dumped mapping with an interface is VPP's
	// record to resolve: ExternalIP is not set.
	ExternalSwIfIndex uint32
	ExternalIP        netip.Addr
	ExternalPort      uint16
	// Protocol is the IP protocol number (0 for an address mapping).
	Protocol uint8
	// AddrOnly maps addresses: no ports, every protocol.
	AddrOnly     bool
	TwiceNAT     bool
	SelfTwiceNAT bool
	Out2InOnly   bool
	// Locals: one endpoint, or two or more for a load-balanced mapping.
	Locals []Local
	// LB tells a load-balanced mapping (nat44_add_del_lb_static_mapping).
	LB bool
	// Affinity is the session affinity of an LB mapping, in seconds (set
	// when adding; the dump does not report it).
	Affinity uint32
	// PoolIP is the twice-NAT address to use (set when adding; the dump
	// does not report it).
	PoolIP netip.Addr
}

func (m StaticMapping) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "static mapping %s", m.external())
	if m.LB {
		b.WriteString(" (load-balanced)")
	}
	b.WriteString(" to")
	for _, l := range m.Locals {
		fmt.Fprintf(&b, " %s", endpoint(l.IP, l.Port, m.AddrOnly))
		if l.VrfID != 0 {
			fmt.Fprintf(&b, " vrf %d", l.VrfID)
		}
	}
	if m.Tag != "" {
		fmt.Fprintf(&b, " tag %q", m.Tag)
	}
	return b.String()
}

func (m StaticMapping) external() string {
	proto := ProtoName(m.Protocol)
	if m.AddrOnly {
		proto = "address"
	}
	if m.ExternalSwIfIndex != NoIndex {
		return fmt.Sprintf("%s of sw_if_index %d:%d", proto, m.ExternalSwIfIndex, m.ExternalPort)
	}
	return proto + " " + endpoint(m.ExternalIP, m.ExternalPort, m.AddrOnly)
}

// IdentityMapping exempts an address (and port) from translation.
type IdentityMapping struct {
	Tag string
	// SwIfIndex is the interface whose address is exempted, NoIndex for
	// IP. A dumped mapping with an interface is VPP's record to resolve.
	SwIfIndex uint32
	IP        netip.Addr
	Port      uint16
	Protocol  uint8
	AddrOnly  bool
	VrfID     uint32
}

func (m IdentityMapping) String() string {
	proto := ProtoName(m.Protocol)
	if m.AddrOnly {
		proto = "address"
	}
	s := fmt.Sprintf("identity mapping %s %s vrf %d", proto, endpoint(m.IP, m.Port, m.AddrOnly), m.VrfID)
	if m.SwIfIndex != NoIndex {
		s = fmt.Sprintf("identity mapping %s of sw_if_index %d:%d vrf %d", proto, m.SwIfIndex, m.Port, m.VrfID)
	}
	if m.Tag != "" {
		s += fmt.Sprintf(" tag %q", m.Tag)
	}
	return s
}

func endpoint(a netip.Addr, port uint16, addrOnly bool) string {
	if addrOnly {
		return a.String()
	}
	return fmt.Sprintf("%s:%d", a, port)
}

// ProtoName names an IP protocol number of a mapping.
func ProtoName(p uint8) string {
	switch p {
	case ProtoICMP:
		return "icmp"
	case ProtoTCP:
		return "tcp"
	case ProtoUDP:
		return "udp"
	}
	return fmt.Sprintf("protocol %d", p)
}

// Handler is what the descriptors need of VPP's NAT44. Every method is one
// request (two for SetFeature of the output feature: none) or one dump, and
// passes ctx to it.
type Handler interface {
	// Global reads whether the plugin is enabled, and forwarding
	// (nat44_show_running_config).
	Global(ctx context.Context) (Global, error)
	// Enable enables or disables the plugin (nat44_ed_plugin_enable_disable,
	// VPP's default session count).
	Enable(ctx context.Context, enable bool) error
	// SetForwarding sets forwarding (nat44_forwarding_enable_disable).
	SetForwarding(ctx context.Context, on bool) error

	// Interfaces lists the interfaces with NAT features, by sw_if_index
	// (nat44_interface_dump and nat44_ed_output_interface_get).
	Interfaces(ctx context.Context) (map[uint32]InterfaceFeatures, error)
	// SetFeature adds or deletes one feature of an interface
	// (nat44_interface_add_del_feature; nat44_ed_add_del_output_interface
	// for Output).
	SetFeature(ctx context.Context, swIfIndex uint32, f Feature, add bool) error

	// Addresses lists the addresses of the pools (nat44_address_dump).
	Addresses(ctx context.Context) ([]Address, error)
	// AddDelAddresses adds or deletes the addresses first..last of one
	// list (nat44_add_del_address_range).
	AddDelAddresses(ctx context.Context, first, last netip.Addr, vrfID uint32, twiceNAT, add bool) error

	// StaticMappings lists the static mappings, the load-balanced ones
	// and the records to resolve (nat44_static_mapping_dump,
	// nat44_lb_static_mapping_dump).
	StaticMappings(ctx context.Context) ([]StaticMapping, error)
	// AddDelStaticMapping adds or deletes a mapping
	// (nat44_add_del_static_mapping_v2, or nat44_add_del_lb_static_mapping
	// for an LB one).
	AddDelStaticMapping(ctx context.Context, m StaticMapping, add bool) error

	// IdentityMappings lists the identity mappings and the records to
	// resolve (nat44_identity_mapping_dump).
	IdentityMappings(ctx context.Context) ([]IdentityMapping, error)
	// AddDelIdentityMapping adds or deletes an identity mapping
	// (nat44_add_del_identity_mapping).
	AddDelIdentityMapping(ctx context.Context, m IdentityMapping, add bool) error
}

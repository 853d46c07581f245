// Package vppcalls holds the VPP binary-API calls of the ACL plugin behind a
// small interface, Handler, so that the descriptors do not depend on
// GoVPP's message types: the messages of VPP's acl plugin (acl.api; GoVPP
// v0.13.0's binapi/acl, VPP 25.10) for IP ACLs, MAC-IP ACLs and their
// assignment to interfaces.
//
// The implementation (NewHandler) uses the connection of a vppconn.Manager,
// fetched for every call (it changes on reconnects), every request and
// dump under the Manager's CallContext deadline. Errors name the message
// ("acl_add_replace: VPPApiError: ..."); while VPP is away they wrap
// vppconn.ErrNotConnected, and when VPP lacks the acl plugin (its messages
// are AreaName's) a *vppconn.IncompatibleError.
//
// What VPP 25.10 does with these messages, checked against it (the
// plugin's TestVPPACLBehaviour runs against vppsim and the real VPP):
//
//   - ACL indexes are pool indexes, of two pools (IP and MAC-IP ACLs
//     number apart): a new ACL gets the index freed last, else the next.
//   - acl_add_replace refuses a prefix with host bits or a length beyond
//     its family, or a rule whose source and destination families differ
//     (INVALID_SRC_ADDRESS, INVALID_DST_ADDRESS), and a reversed port or
//     ICMP range (INVALID_VALUE_2); it accepts zero rules and any action
//     number. A tag of 64 bytes or more is INVALID_VALUE (it holds at most
//     63 and its NUL). MAC-IP ACLs keep the host bits of their prefixes and
//     are not checked at all.
//   - acl_del of an ACL an interface uses is ACL_IN_USE_INBOUND or
//     ACL_IN_USE_OUTBOUND; macip_acl_del takes the ACL off its interfaces
//     first.
//   - acl_interface_set_acl_list replaces an interface's two lists
//     (input: the first n_input, output: the rest; n_input is capped to
//     the count). An ACL twice in one list fails with retval 1 (not a VPP
//     error code: the handler ORs two results); the output list is set
//     before the input one, so a duplicate in the input list leaves the
//     new output list in place. An unknown ACL is NO_SUCH_ENTRY and changes
//     nothing.
//   - acl_interface_list_dump of ~0 lists every interface, with empty
//     lists too; of one index, that interface (nothing for an index of no
//     interface).
//   - macip_acl_interface_add_del: VPP keeps one MAC-IP ACL per interface;
//     an add replaces it; a delete takes off whatever ACL the interface has,
//     whatever acl_index says, and is NO_SUCH_ENTRY when it has none.
//     macip_acl_interface_list_dump of ~0 lists the interfaces that have
//     one; of an index, a list of one ACL that may be ~0 (none), or nothing
//     (an index VPP's vector does not reach).
//   - Deleting an interface takes its ACLs off it (both lists and its
//     MAC-IP ACL).
package vppcalls

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// NoIndex is VPP's ~0: a new ACL, all ACLs, all interfaces, none.
const NoIndex = ^uint32(0)

// MaxTagLen is the longest ACL tag VPP keeps (64 bytes with the NUL).
const MaxTagLen = 63

// Action is what a rule does with a packet it matches (VPP's acl_action:
// 0 deny, 1 permit, 2 permit and reflect).
type Action uint8

// Actions.
const (
	Deny    Action = 0
	Permit  Action = 1
	Reflect Action = 2
)

func (a Action) String() string {
	switch a {
	case Deny:
		return "deny"
	case Permit:
		return "permit"
	case Reflect:
		return "permit+reflect"
	}
	return fmt.Sprintf("action %d", uint8(a))
}

// Range is an inclusive range of ports, or of ICMP types or codes.
type Range struct{ First, Last uint16 }

// IPRule is one rule of an IP ACL, as VPP keeps it.
type IPRule struct {
	Action Action
	// Src and Dst are masked prefixes of one family.
	Src, Dst netip.Prefix
	// Proto is the IP protocol; 0 matches any.
	Proto uint8
	// SrcPort is the source port range, or the ICMP type range;
	// DstPort the destination port range, or the ICMP code range.
	SrcPort, DstPort Range
	TCPFlagsMask     uint8
	TCPFlagsValue    uint8
}

func (r IPRule) String() string {
	s := fmt.Sprintf("%s src %s dst %s proto %d sport %d-%d dport %d-%d", r.Action, r.Src, r.Dst, r.Proto,
		r.SrcPort.First, r.SrcPort.Last, r.DstPort.First, r.DstPort.Last)
	if r.TCPFlagsMask != 0 || r.TCPFlagsValue != 0 {
		s += fmt.Sprintf(" tcpflags %d mask %d", r.TCPFlagsValue, r.TCPFlagsMask)
	}
	return s
}

// MACIPRule is one rule of a MAC-IP ACL, as VPP keeps it.
type MACIPRule struct {
	Action Action
	// Src is the source address and prefix length, host bits kept.
	Src        netip.Prefix
	SrcMAC     [6]byte
	SrcMACMask [6]byte
}

func (r MACIPRule) String() string {
	return fmt.Sprintf("%s ip %s mac %s mask %s", r.Action, r.Src, net.HardwareAddr(r.SrcMAC[:]), net.HardwareAddr(r.SrcMACMask[:]))
}

// ACL is an IP ACL as acl_dump reports it.
type ACL struct {
	Index uint32
	Tag   string
	Rules []IPRule
}

// MACIPACL is a MAC-IP ACL as macip_acl_dump reports it.
type MACIPACL struct {
	Index uint32
	Tag   string
	Rules []MACIPRule
}

// InterfaceACLs are the ACL lists of one interface, in VPP's order (the
// first ACL whose rule matches a packet decides).
type InterfaceACLs struct {
	Input, Output []uint32
}

// Equal tells whether both lists are the same, in the same order.
func (l InterfaceACLs) Equal(o InterfaceACLs) bool {
	return slices.Equal(l.Input, o.Input) && slices.Equal(l.Output, o.Output)
}

func (l InterfaceACLs) String() string {
	return fmt.Sprintf("input %v output %v", l.Input, l.Output)
}

// Handler makes the calls of the ACL plugin. Every method is safe for
// concurrent use; none retries.
type Handler interface {
	// AddACL creates an IP ACL (acl_add_replace with acl_index ~0) and
	// returns its index.
	AddACL(ctx context.Context, tag string, rules []IPRule) (uint32, error)
	// ReplaceACL replaces the tag and rules of the IP ACL at index, which
	// keeps its index and its interfaces.
	ReplaceACL(ctx context.Context, index uint32, tag string, rules []IPRule) error
	// DeleteACL deletes the IP ACL at index (no interface may use it).
	DeleteACL(ctx context.Context, index uint32) error
	// DumpACLs lists the IP ACLs, by index.
	DumpACLs(ctx context.Context) ([]ACL, error)

	// AddMACIPACL creates a MAC-IP ACL (macip_acl_add_replace with
	// acl_index ~0) and returns its index.
	AddMACIPACL(ctx context.Context, tag string, rules []MACIPRule) (uint32, error)
	// ReplaceMACIPACL replaces the tag and rules of the MAC-IP ACL at
	// index.
	ReplaceMACIPACL(ctx context.Context, index uint32, tag string, rules []MACIPRule) error
	// DeleteMACIPACL deletes the MAC-IP ACL at index (VPP takes it off its
	// interfaces first).
	DeleteMACIPACL(ctx context.Context, index uint32) error
	// DumpMACIPACLs lists the MAC-IP ACLs, by index.
	DumpMACIPACLs(ctx context.Context) ([]MACIPACL, error)

	// InterfaceACLs returns the IP ACL lists of an interface; false when
	// VPP has no interface sw.
	InterfaceACLs(ctx context.Context, sw uint32) (InterfaceACLs, bool, error)
	// AllInterfaceACLs returns the IP ACL lists of every interface that
	// has any, by sw_if_index.
	AllInterfaceACLs(ctx context.Context) (map[uint32]InterfaceACLs, error)
	// SetInterfaceACLs replaces both IP ACL lists of an interface
	// (acl_interface_set_acl_list).
	SetInterfaceACLs(ctx context.Context, sw uint32, l InterfaceACLs) error

	// InterfaceMACIPACL returns the MAC-IP ACL of an interface; false when
	// it has none.
	InterfaceMACIPACL(ctx context.Context, sw uint32) (uint32, bool, error)
	// AllInterfaceMACIPACLs returns the MAC-IP ACL of every interface that
	// has one, by sw_if_index.
	AllInterfaceMACIPACLs(ctx context.Context) (map[uint32]uint32, error)
	// SetInterfaceMACIPACL gives an interface the MAC-IP ACL at index, in
	// place of the one it has.
	SetInterfaceMACIPACL(ctx context.Context, sw, index uint32) error
	// UnsetInterfaceMACIPACL takes the MAC-IP ACL off an interface,
	// whichever it is.
	UnsetInterfaceMACIPACL(ctx context.Context, sw uint32) error
}

// TagProblem says why VPP cannot keep tag as an ACL tag, or "".
func TagProblem(tag string) string {
	switch {
	case len(tag) > MaxTagLen:
		return fmt.Sprintf("longer than %d bytes", MaxTagLen)
	case strings.IndexByte(tag, 0) >= 0:
		return "contains a NUL byte"
	}
	return ""
}

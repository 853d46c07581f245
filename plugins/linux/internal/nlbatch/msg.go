package nlbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The builders below serialize what the netlink library's Handle methods
// of the same name send for the fields the Linux plugins use, attribute
// for attribute and in the same order (checked by the tests against
// what the kernel keeps of either). Fields they do not encode are
// refused, not dropped.

// RouteAdd is netlink.Handle.RouteAdd: RTM_NEWROUTE, create, exclusive.
func RouteAdd(r *netlink.Route) (*nl.NetlinkRequest, error) {
	return route(RouteOpAdd, r)
}

// RouteReplace is netlink.Handle.RouteReplace: create or replace.
func RouteReplace(r *netlink.Route) (*nl.NetlinkRequest, error) {
	return route(RouteOpReplace, r)
}

// RouteDel is netlink.Handle.RouteDel.
func RouteDel(r *netlink.Route) (*nl.NetlinkRequest, error) {
	return route(RouteOpDel, r)
}

func route(op RouteOp, r *netlink.Route) (*nl.NetlinkRequest, error) {
	if len(r.MultiPath) > 0 || r.Src != nil || r.Via != nil || r.NewDst != nil || r.Encap != nil ||
		r.MPLSDst != nil || r.Realm != 0 || r.MTU != 0 || r.AdvMSS != 0 || r.Hoplimit != 0 || r.ILinkIndex != 0 {
		return nil, errors.New("route: only destination, gateway, table, metric, TOS, protocol, type, scope, flags and link are encoded")
	}
	if r.Dst == nil || r.Dst.IP == nil {
		return nil, errors.New("route: no destination")
	}
	dst, ok := netip.AddrFromSlice(ipBytes(r.Dst.IP, nl.GetIPFamily(r.Dst.IP)))
	if !ok {
		return nil, fmt.Errorf("route: destination %s", r.Dst)
	}
	bits, _ := r.Dst.Mask.Size()
	rt := Route{
		LinkIndex: r.LinkIndex, Dst: netip.PrefixFrom(dst, bits), Table: r.Table, Priority: r.Priority,
		Tos: uint8(r.Tos), Protocol: uint8(r.Protocol), Type: uint8(r.Type), Scope: uint8(r.Scope), Flags: r.Flags,
	}
	if r.Gw != nil {
		if rt.Gw, ok = netip.AddrFromSlice(ipBytes(r.Gw, nl.GetIPFamily(r.Gw))); !ok {
			return nil, fmt.Errorf("route: gateway %s", r.Gw)
		}
	}
	req := &nl.NetlinkRequest{}
	if _, err := AppendRoute(nil, op, &rt, req); err != nil {
		return nil, err
	}
	return req, nil
}

// RouteOp is what a route request does.
type RouteOp uint8

const (
	RouteOpAdd     RouteOp = iota // RouteAdd
	RouteOpReplace                // RouteReplace
	RouteOpDel                    // RouteDel
)

// Route is what the route builders encode, in the types the plugins keep
// (AppendRoute needs no netlink.Route, net.IPNet or attribute values).
// Zero Tos, Protocol and Type keep the message's defaults, as the
// library does.
type Route struct {
	LinkIndex int
	Dst       netip.Prefix
	Gw        netip.Addr // invalid: none; of Dst's family (IPv4-mapped is IPv4)
	Table     int
	Priority  int
	Tos       uint8
	Protocol  uint8
	Type      uint8
	Scope     uint8
	Flags     int
}

// MaxRouteSize bounds the bytes AppendRoute appends for one route.
const MaxRouteSize = unix.SizeofRtMsg + 2*(unix.SizeofRtAttr+16) + 3*(unix.SizeofRtAttr+4)

// AppendRoute appends the message of op on r (what the library's RtMsg
// and RtAttrs serialize to: header, RTA_DST, RTA_GATEWAY, RTA_TABLE,
// RTA_PRIORITY, RTA_OIF) to buf and makes req that request: its header's
// type and flags, RawData the bytes appended (Exec sets the length and
// sequence number). Many requests share one buffer this way, as big as
// MaxRouteSize times their number.
func AppendRoute(buf []byte, op RouteOp, r *Route, req *nl.NetlinkRequest) ([]byte, error) {
	msg := unix.RtMsg{Table: unix.RT_TABLE_MAIN}
	typ, flags := uint16(unix.RTM_NEWROUTE), uint16(unix.NLM_F_CREATE)
	switch op {
	case RouteOpAdd:
		flags |= unix.NLM_F_EXCL
	case RouteOpReplace:
		flags |= unix.NLM_F_REPLACE
	case RouteOpDel:
		typ, flags = unix.RTM_DELROUTE, 0
	default:
		return buf, fmt.Errorf("route: operation %d", op)
	}
	if op != RouteOpDel {
		msg.Protocol, msg.Type = unix.RTPROT_BOOT, unix.RTN_UNICAST
	}
	if !r.Dst.IsValid() {
		return buf, errors.New("route: no destination")
	}
	// An IPv4-mapped address is IPv4, as for the library (nl.GetIPFamily).
	dst, gw := r.Dst.Addr().Unmap(), r.Gw.Unmap()
	family, size := uint8(unix.AF_INET), 4
	if !dst.Is4() {
		family, size = unix.AF_INET6, 16
	}
	if r.Dst.Bits() > dst.BitLen() {
		return buf, fmt.Errorf("route: destination %s: prefix length", r.Dst)
	}
	if gw.IsValid() && gw.Is4() != (family == unix.AF_INET) {
		return buf, fmt.Errorf("route: gateway %s and destination %s are not of one IP family", r.Gw, r.Dst)
	}
	msg.Family, msg.Dst_len = family, uint8(r.Dst.Bits())
	tableAttr := false
	if r.Table > 0 {
		if r.Table >= 256 {
			msg.Table = unix.RT_TABLE_UNSPEC
			tableAttr = true
		} else {
			msg.Table = uint8(r.Table)
		}
	}
	if r.Tos > 0 {
		msg.Tos = r.Tos
	}
	if r.Protocol > 0 {
		msg.Protocol = r.Protocol
	}
	if r.Type > 0 {
		msg.Type = r.Type
	}
	msg.Flags = uint32(r.Flags)
	msg.Scope = r.Scope

	start := len(buf)
	buf = append(buf, msg.Family, msg.Dst_len, msg.Src_len, msg.Tos, msg.Table, msg.Protocol, msg.Scope, msg.Type)
	buf = binary.NativeEndian.AppendUint32(buf, msg.Flags)
	buf = appendAddrAttr(buf, unix.RTA_DST, dst, size)
	if gw.IsValid() {
		buf = appendAddrAttr(buf, unix.RTA_GATEWAY, gw, size)
	}
	if tableAttr {
		buf = appendUint32Attr(buf, unix.RTA_TABLE, uint32(r.Table))
	}
	if r.Priority > 0 {
		buf = appendUint32Attr(buf, unix.RTA_PRIORITY, uint32(r.Priority))
	}
	buf = appendUint32Attr(buf, unix.RTA_OIF, uint32(r.LinkIndex))
	*req = nl.NetlinkRequest{
		NlMsghdr: unix.NlMsghdr{Len: unix.SizeofNlMsghdr, Type: typ, Flags: unix.NLM_F_REQUEST | flags},
		RawData:  buf[start:len(buf):len(buf)],
	}
	return buf, nil
}

// appendAddrAttr appends an attribute of an address of size bytes (4 for
// IPv4, 16 for IPv6).
func appendAddrAttr(b []byte, typ uint16, a netip.Addr, size int) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(unix.SizeofRtAttr+size))
	b = binary.NativeEndian.AppendUint16(b, typ)
	if size == 4 {
		v4 := a.As4()
		return append(b, v4[:]...)
	}
	v6 := a.As16()
	return append(b, v6[:]...)
}

// attrSize is the size of an attribute of n bytes of data, padded.
func attrSize(n int) int {
	return (unix.SizeofRtAttr + n + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1)
}

// appendAttr appends an attribute as nl.RtAttr.Serialize writes it: its
// length (header and data, unpadded) and type in the host's byte order,
// the data, zeros to the alignment.
func appendAttr(b []byte, typ uint16, data []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(unix.SizeofRtAttr+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	for pad := attrSize(len(data)) - unix.SizeofRtAttr - len(data); pad > 0; pad-- {
		b = append(b, 0)
	}
	return b
}

// appendUint32Attr appends an attribute of a 32-bit value (nl.Uint32Attr).
func appendUint32Attr(b []byte, typ uint16, v uint32) []byte {
	b = binary.NativeEndian.AppendUint16(b, unix.SizeofRtAttr+4)
	b = binary.NativeEndian.AppendUint16(b, typ)
	return binary.NativeEndian.AppendUint32(b, v)
}

func ipBytes(ip net.IP, family int) []byte {
	if family == netlink.FAMILY_V4 {
		return ip.To4()
	}
	return ip.To16()
}

// NeighSet is netlink.Handle.NeighSet: RTM_NEWNEIGH, create or replace.
func NeighSet(n *netlink.Neigh) (*nl.NetlinkRequest, error) {
	return neigh(unix.RTM_NEWNEIGH, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, n)
}

// NeighDel is netlink.Handle.NeighDel.
func NeighDel(n *netlink.Neigh) (*nl.NetlinkRequest, error) {
	return neigh(unix.RTM_DELNEIGH, 0, n)
}

func neigh(typ, flags int, n *netlink.Neigh) (*nl.NetlinkRequest, error) {
	if n.LLIPAddr != nil || n.FlagsExt != 0 || n.Vlan != 0 || n.VNI != 0 || n.MasterIndex != 0 {
		return nil, errors.New("neighbour: only link, family, state, type, flags, IP and MAC are encoded")
	}
	if n.IP == nil {
		return nil, errors.New("neighbour: no IP address")
	}
	family := n.Family
	if family <= 0 {
		family = nl.GetIPFamily(n.IP)
	}
	req := nl.NewNetlinkRequest(typ, flags)
	req.AddData(&netlink.Ndmsg{
		Family: uint8(family),
		Index:  uint32(n.LinkIndex),
		State:  uint16(n.State),
		Type:   uint8(n.Type),
		Flags:  uint8(n.Flags),
	})
	ip := n.IP.To4()
	if ip == nil {
		ip = n.IP.To16()
	}
	req.AddData(nl.NewRtAttr(netlink.NDA_DST, ip))
	if n.HardwareAddr != nil {
		req.AddData(nl.NewRtAttr(netlink.NDA_LLADDR, []byte(n.HardwareAddr)))
	}
	return req, nil
}

// AddrAdd is netlink.Handle.AddrAdd of a on link index: RTM_NEWADDR,
// create, exclusive (the IPv4 broadcast address computed alike).
func AddrAdd(index int, a *netlink.Addr) (*nl.NetlinkRequest, error) {
	return addr(unix.RTM_NEWADDR, unix.NLM_F_CREATE|unix.NLM_F_EXCL, index, a)
}

// AddrDel is netlink.Handle.AddrDel of a on link index.
func AddrDel(index int, a *netlink.Addr) (*nl.NetlinkRequest, error) {
	return addr(unix.RTM_DELADDR, 0, index, a)
}

func addr(typ, flags, index int, a *netlink.Addr) (*nl.NetlinkRequest, error) {
	if a.Peer != nil || a.Flags != 0 || a.ValidLft != 0 || a.PreferedLft != 0 || a.Scope != 0 {
		return nil, errors.New("address: only the address, its prefix, label and broadcast are encoded")
	}
	if a.IPNet == nil || a.IP == nil {
		return nil, errors.New("address: none")
	}
	family := nl.GetIPFamily(a.IP)
	msg := nl.NewIfAddrmsg(family)
	msg.Index = uint32(index)
	bits, maskBits := a.Mask.Size()
	msg.Prefixlen = uint8(bits)
	req := nl.NewNetlinkRequest(typ, flags)
	req.AddData(msg)
	local := ipBytes(a.IP, family)
	req.AddData(nl.NewRtAttr(unix.IFA_LOCAL, local))
	req.AddData(nl.NewRtAttr(unix.IFA_ADDRESS, local))
	if family == netlink.FAMILY_V4 {
		broadcast := a.Broadcast
		if broadcast == nil && bits < 31 {
			broadcast = make(net.IP, maskBits/8)
			for i := range local {
				broadcast[i] = local[i] | ^a.Mask[i]
			}
		}
		if net.IPv4zero.Equal(broadcast) {
			broadcast = nil
		}
		if broadcast != nil {
			req.AddData(nl.NewRtAttr(unix.IFA_BROADCAST, broadcast))
		}
		if a.Label != "" {
			req.AddData(nl.NewRtAttr(unix.IFA_LABEL, nl.ZeroTerminated(a.Label)))
		}
	}
	return req, nil
}

// LinkDel is netlink.Handle.LinkDel of link index: RTM_DELLINK.
func LinkDel(index int) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_DELLINK, 0)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	return req
}

// LinkSetGroup is netlink.Handle.LinkSetGroup of link index: RTM_SETLINK
// with IFLA_GROUP.
func LinkSetGroup(index int, group uint32) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, 0)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_GROUP, nl.Uint32Attr(group)))
	return req
}

// LinkDelGroup deletes every link of a group in one request (`ip link
// delete group N`): RTM_DELLINK with IFLA_GROUP and no link. The kernel
// unregisters them all at once (one RCU grace period, not one per link)
// and refuses, deleting none, when a link of the group cannot be deleted
// (EOPNOTSUPP).
func LinkDelGroup(group uint32) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_DELLINK, 0)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_GROUP, nl.Uint32Attr(group)))
	return req
}

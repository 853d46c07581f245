package nlbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

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
	return route(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_EXCL, r, nl.NewRtMsg())
}

// RouteReplace is netlink.Handle.RouteReplace: create or replace.
func RouteReplace(r *netlink.Route) (*nl.NetlinkRequest, error) {
	return route(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, r, nl.NewRtMsg())
}

// RouteDel is netlink.Handle.RouteDel.
func RouteDel(r *netlink.Route) (*nl.NetlinkRequest, error) {
	return route(unix.RTM_DELROUTE, 0, r, nl.NewRtDelMsg())
}

func route(typ, flags int, r *netlink.Route, msg *nl.RtMsg) (*nl.NetlinkRequest, error) {
	if len(r.MultiPath) > 0 || r.Src != nil || r.Via != nil || r.NewDst != nil || r.Encap != nil ||
		r.MPLSDst != nil || r.Realm != 0 || r.MTU != 0 || r.AdvMSS != 0 || r.Hoplimit != 0 || r.ILinkIndex != 0 {
		return nil, errors.New("route: only destination, gateway, table, metric, TOS, protocol, type, scope, flags and link are encoded")
	}
	if r.Dst == nil || r.Dst.IP == nil {
		return nil, errors.New("route: no destination")
	}
	family := nl.GetIPFamily(r.Dst.IP)
	bits, _ := r.Dst.Mask.Size()
	msg.Dst_len = uint8(bits)
	dst := ipBytes(r.Dst.IP, family)
	var gw []byte
	if r.Gw != nil {
		if nl.GetIPFamily(r.Gw) != family {
			return nil, fmt.Errorf("route: gateway %s and destination %s are not of one IP family", r.Gw, r.Dst)
		}
		gw = ipBytes(r.Gw, family)
	}
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
		msg.Tos = uint8(r.Tos)
	}
	if r.Protocol > 0 {
		msg.Protocol = uint8(r.Protocol)
	}
	if r.Type > 0 {
		msg.Type = uint8(r.Type)
	}
	msg.Flags = uint32(r.Flags)
	msg.Scope = uint8(r.Scope)
	msg.Family = uint8(family)

	// The message as the library's AddData of the RtMsg and each RtAttr
	// serializes it, written into one buffer (RawData) instead of one
	// allocation per attribute: RTA_DST, RTA_GATEWAY, RTA_TABLE,
	// RTA_PRIORITY, RTA_OIF.
	size := unix.SizeofRtMsg + attrSize(len(dst)) + attrSize(4)
	if gw != nil {
		size += attrSize(len(gw))
	}
	if tableAttr {
		size += attrSize(4)
	}
	if r.Priority > 0 {
		size += attrSize(4)
	}
	b := make([]byte, 0, size)
	b = append(b, msg.Serialize()...)
	b = appendAttr(b, unix.RTA_DST, dst)
	if gw != nil {
		b = appendAttr(b, unix.RTA_GATEWAY, gw)
	}
	if tableAttr {
		b = appendUint32Attr(b, unix.RTA_TABLE, uint32(r.Table))
	}
	if r.Priority > 0 {
		b = appendUint32Attr(b, unix.RTA_PRIORITY, uint32(r.Priority))
	}
	b = appendUint32Attr(b, unix.RTA_OIF, uint32(r.LinkIndex))
	req := nl.NewNetlinkRequest(typ, flags)
	req.RawData = b
	return req, nil
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

package nlbatch

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// libraryRoute is the route request as the netlink library builds it (an
// RtMsg and one RtAttr per attribute, in the order of its routeHandle): the
// oracle of TestRouteBytesAsTheLibrary.
func libraryRoute(typ, flags int, r *netlink.Route, msg *nl.RtMsg) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(typ, flags)
	family := nl.GetIPFamily(r.Dst.IP)
	bits, _ := r.Dst.Mask.Size()
	msg.Dst_len = uint8(bits)
	attrs := []*nl.RtAttr{nl.NewRtAttr(unix.RTA_DST, ipBytes(r.Dst.IP, family))}
	if r.Gw != nil {
		attrs = append(attrs, nl.NewRtAttr(unix.RTA_GATEWAY, ipBytes(r.Gw, family)))
	}
	if r.Table > 0 {
		if r.Table >= 256 {
			msg.Table = unix.RT_TABLE_UNSPEC
			attrs = append(attrs, nl.NewRtAttr(unix.RTA_TABLE, nl.Uint32Attr(uint32(r.Table))))
		} else {
			msg.Table = uint8(r.Table)
		}
	}
	if r.Priority > 0 {
		attrs = append(attrs, nl.NewRtAttr(unix.RTA_PRIORITY, nl.Uint32Attr(uint32(r.Priority))))
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
	req.AddData(msg)
	for _, a := range attrs {
		req.AddData(a)
	}
	req.AddData(nl.NewRtAttr(unix.RTA_OIF, nl.Uint32Attr(uint32(r.LinkIndex))))
	return req
}

// TestRouteBytesAsTheLibrary: the route builders write, byte for byte,
// the message the library's RtMsg and RtAttrs serialize to, for every
// attribute they encode (IPv4 and IPv6, with and without a gateway, a
// table in the header or as an attribute, metric, TOS, protocol, type,
// scope, flags).
func TestRouteBytesAsTheLibrary(t *testing.T) {
	cidr := func(s string) *net.IPNet {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	routes := []netlink.Route{
		{LinkIndex: 7, Dst: cidr("10.1.0.0/16"), Gw: net.ParseIP("192.168.1.254"), Priority: 10, Protocol: 181, Table: unix.RT_TABLE_MAIN},
		{LinkIndex: 7, Dst: cidr("10.2.0.0/24"), Scope: netlink.SCOPE_LINK},
		{LinkIndex: 300, Dst: cidr("0.0.0.0/0"), Gw: net.ParseIP("10.0.0.1"), Table: 1000, Tos: 4, Type: unix.RTN_UNICAST, Flags: int(netlink.FLAG_ONLINK)},
		{LinkIndex: 7, Dst: cidr("2001:db8::/64"), Gw: net.ParseIP("fe80::1"), Priority: 1024, Protocol: 181, Table: 100},
		{LinkIndex: 1 << 20, Dst: cidr("2001:db8:1::1/128"), Scope: netlink.SCOPE_HOST, Type: unix.RTN_LOCAL},
	}
	builders := []struct {
		name  string
		build func(*netlink.Route) (*nl.NetlinkRequest, error)
		typ   int
		flags int
		msg   func() *nl.RtMsg
	}{
		{"RouteAdd", RouteAdd, unix.RTM_NEWROUTE, unix.NLM_F_CREATE | unix.NLM_F_EXCL, nl.NewRtMsg},
		{"RouteReplace", RouteReplace, unix.RTM_NEWROUTE, unix.NLM_F_CREATE | unix.NLM_F_REPLACE, nl.NewRtMsg},
		{"RouteDel", RouteDel, unix.RTM_DELROUTE, 0, nl.NewRtDelMsg},
	}
	for _, b := range builders {
		for i := range routes {
			r := routes[i]
			got, err := b.build(&r)
			if err != nil {
				t.Fatalf("%s %s: %v", b.name, r.Dst, err)
			}
			want := libraryRoute(b.typ, b.flags, &r, b.msg())
			got.Seq, want.Seq = 9, 9
			if g, w := appendRequest(nil, got), want.Serialize(); !bytes.Equal(g, w) {
				t.Errorf("%s %s:\ngot  %x\nwant %x", b.name, r.Dst, g, w)
			}
		}
	}
}

// TestAppendRequest: appendRequest writes what Serialize does, after
// what out holds, for requests of Data (the neighbour and address
// builders), of RawData (the route builders) and of both.
func TestAppendRequest(t *testing.T) {
	hw, err := net.ParseMAC("02:00:00:00:00:20")
	if err != nil {
		t.Fatal(err)
	}
	neigh, err := NeighSet(&netlink.Neigh{LinkIndex: 3, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT, IP: net.ParseIP("192.168.7.20"), HardwareAddr: hw})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := netlink.ParseAddr("2001:db8:9::1/64")
	if err != nil {
		t.Fatal(err)
	}
	addrReq, err := AddrAdd(3, addr)
	if err != nil {
		t.Fatal(err)
	}
	_, dst, _ := net.ParseCIDR("10.9.0.0/16")
	routeReq, err := RouteAdd(&netlink.Route{LinkIndex: 3, Dst: dst})
	if err != nil {
		t.Fatal(err)
	}
	both := nl.NewNetlinkRequest(unix.RTM_NEWROUTE, 0)
	both.AddData(nl.NewRtMsg())
	both.RawData = []byte{1, 2, 3, 4, 5, 6, 7, 8}
	prefix := []byte("already there")
	for _, r := range []*nl.NetlinkRequest{neigh, addrReq, routeReq, both} {
		r.Flags |= unix.NLM_F_ACK
		r.Seq, r.Pid = 77, 0
		got := appendRequest(bytes.Clone(prefix), r)
		if want := append(bytes.Clone(prefix), r.Serialize()...); !bytes.Equal(got, want) {
			t.Errorf("type %d:\ngot  %x\nwant %x", r.Type, got, want)
		}
	}
}

// TestAppendRouteSharesABuffer: routes appended one after the other into
// one buffer (growing on the way) each keep the bytes of the library's
// request; IPv4-mapped addresses are IPv4, as for the library; what cannot
// be encoded is refused and leaves the buffer as it was.
func TestAppendRouteSharesABuffer(t *testing.T) {
	type built struct {
		req  *nl.NetlinkRequest
		want []byte
	}
	var all []built
	buf := make([]byte, 0, 10) // outgrown at once
	ops := []struct {
		op    RouteOp
		typ   int
		flags int
		msg   func() *nl.RtMsg
	}{
		{RouteOpAdd, unix.RTM_NEWROUTE, unix.NLM_F_CREATE | unix.NLM_F_EXCL, nl.NewRtMsg},
		{RouteOpReplace, unix.RTM_NEWROUTE, unix.NLM_F_CREATE | unix.NLM_F_REPLACE, nl.NewRtMsg},
		{RouteOpDel, unix.RTM_DELROUTE, 0, nl.NewRtDelMsg},
	}
	routes := []Route{
		{LinkIndex: 7, Dst: netip.MustParsePrefix("10.1.0.0/16"), Gw: netip.MustParseAddr("192.168.1.254"), Priority: 10, Protocol: 181, Table: unix.RT_TABLE_MAIN},
		{LinkIndex: 7, Dst: netip.MustParsePrefix("10.2.0.0/24"), Scope: unix.RT_SCOPE_LINK},
		{LinkIndex: 300, Dst: netip.MustParsePrefix("0.0.0.0/0"), Gw: netip.MustParseAddr("10.0.0.1"), Table: 1000, Tos: 4, Type: unix.RTN_UNICAST, Flags: int(netlink.FLAG_ONLINK)},
		{LinkIndex: 7, Dst: netip.MustParsePrefix("2001:db8::/64"), Gw: netip.MustParseAddr("fe80::1"), Priority: 1024, Protocol: 181, Table: 100},
		{LinkIndex: 1 << 20, Dst: netip.MustParsePrefix("2001:db8:1::1/128"), Scope: unix.RT_SCOPE_HOST, Type: unix.RTN_LOCAL},
		{LinkIndex: 9, Dst: netip.MustParsePrefix("::ffff:10.3.0.0/16"), Gw: netip.MustParseAddr("::ffff:10.0.0.1"), Priority: 5},
	}
	for _, o := range ops {
		for i := range routes {
			r := routes[i]
			req := &nl.NetlinkRequest{}
			var err error
			if buf, err = AppendRoute(buf, o.op, &r, req); err != nil {
				t.Fatalf("op %d %s: %v", o.op, r.Dst, err)
			}
			lib := netlink.Route{LinkIndex: r.LinkIndex, Dst: &net.IPNet{IP: r.Dst.Addr().AsSlice(), Mask: net.CIDRMask(r.Dst.Bits(), r.Dst.Addr().BitLen())},
				Table: r.Table, Priority: r.Priority, Tos: int(r.Tos), Protocol: netlink.RouteProtocol(r.Protocol), Type: int(r.Type), Scope: netlink.Scope(r.Scope), Flags: r.Flags}
			if r.Gw.IsValid() {
				lib.Gw = r.Gw.AsSlice()
			}
			want := libraryRoute(o.typ, o.flags, &lib, o.msg())
			want.Seq, req.Seq = 9, 9
			all = append(all, built{req, want.Serialize()})
		}
	}
	for i, b := range all {
		if got := appendRequest(nil, b.req); !bytes.Equal(got, b.want) {
			t.Errorf("request %d:\ngot  %x\nwant %x", i, got, b.want)
		}
	}

	before := len(buf)
	for _, bad := range []struct {
		op   RouteOp
		r    Route
		want string
	}{
		{RouteOp(9), routes[0], "operation 9"},
		{RouteOpAdd, Route{LinkIndex: 7}, "no destination"},
		{RouteOpAdd, Route{LinkIndex: 7, Dst: netip.MustParsePrefix("10.1.0.0/16"), Gw: netip.MustParseAddr("fe80::1")}, "not of one IP family"},
		{RouteOpDel, Route{LinkIndex: 7, Dst: netip.MustParsePrefix("2001:db8::/64"), Gw: netip.MustParseAddr("10.0.0.1")}, "not of one IP family"},
		{RouteOpAdd, Route{LinkIndex: 7, Dst: netip.MustParsePrefix("::ffff:10.3.0.0/112")}, "prefix length"},
	} {
		var err error
		if buf, err = AppendRoute(buf, bad.op, &bad.r, &nl.NetlinkRequest{}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("op %d %+v: %v, want an error naming %q", bad.op, bad.r, err, bad.want)
		}
		if len(buf) != before {
			t.Errorf("op %d %+v: the buffer grew by %d bytes", bad.op, bad.r, len(buf)-before)
		}
	}
}

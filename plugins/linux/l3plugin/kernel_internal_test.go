package l3plugin

import (
	"bytes"
	"net"
	"net/netip"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"

	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// TestKernelAsNetlink: the requests a batch writes from routeSpec.kernel
// (nlbatch.AppendRoute, one buffer) are those of the library's route
// (routeSpec.netlink through nlbatch.RouteAdd, RouteReplace, RouteDel),
// byte for byte: IPv4 and IPv6, with and without a gateway, every scope,
// a metric and IPv6's default one.
func TestKernelAsNetlink(t *testing.T) {
	var buf []byte
	for _, r := range []*linuxl3.Route{
		{OutgoingInterface: "eth1", DstNetwork: "10.1.0.0/16", GwAddr: "10.0.0.1", Metric: 10},
		{OutgoingInterface: "eth1", DstNetwork: "10.1.2.0/24", Scope: linuxl3.Route_LINK},
		{OutgoingInterface: "eth1", DstNetwork: "10.1.2.3/32", Scope: linuxl3.Route_HOST},
		{OutgoingInterface: "eth1", DstNetwork: "10.9.0.0/16", Scope: linuxl3.Route_SITE},
		{OutgoingInterface: "eth1", DstNetwork: "0.0.0.0/0", GwAddr: "10.0.0.1", Scope: linuxl3.Route_GLOBAL},
		{OutgoingInterface: "eth1", DstNetwork: "10.8.0.0/16"},
		{OutgoingInterface: "eth1", DstNetwork: "fd00::/64", GwAddr: "fd01::1"},
		{OutgoingInterface: "eth1", DstNetwork: "::/0", Metric: 7},
	} {
		s, err := parseRoute(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []struct {
			kind  nlbatch.RouteOp
			build func(*netlink.Route) (*nl.NetlinkRequest, error)
		}{{nlbatch.RouteOpAdd, nlbatch.RouteAdd}, {nlbatch.RouteOpReplace, nlbatch.RouteReplace}, {nlbatch.RouteOpDel, nlbatch.RouteDel}} {
			want, err := op.build(s.netlink(42))
			if err != nil {
				t.Fatal(err)
			}
			k := s.kernel(42)
			got := &nl.NetlinkRequest{}
			if buf, err = nlbatch.AppendRoute(buf, op.kind, &k, got); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			if got.Type != want.Type || got.Flags != want.Flags || !bytes.Equal(got.RawData, want.RawData) {
				t.Errorf("%s, op %d:\ngot  %d %x %x\nwant %d %x %x", s, op.kind, got.Type, got.Flags, got.RawData, want.Type, want.Flags, want.RawData)
			}
		}
	}
}

// netlink returns the kernel route on link index as the netlink library
// has it: the oracle of TestKernelAsNetlink, and what Retrieve finds.
func (s routeSpec) netlink(index int) *netlink.Route {
	r := &netlink.Route{
		LinkIndex: index,
		Dst:       prefixToIPNet(s.dst),
		Scope:     s.kernelScope(),
		Priority:  int(s.kernelMetric()),
		Protocol:  RouteProtocol,
		Table:     syscall.RT_TABLE_MAIN,
	}
	if s.gw.IsValid() {
		r.Gw = net.IP(s.gw.AsSlice())
	}
	return r
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if !p.Addr().Is4() {
		bits = 128
	}
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), bits)}
}

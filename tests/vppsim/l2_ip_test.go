package vppsim_test

import (
	"net/netip"
	"slices"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/tests/vppsim"
)

func TestBridgeDomain(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)
	lc := l2.NewServiceClient(conn)
	bvi := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	port := must(af_packet.NewServiceClient(conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{HostIfName: "veth1", UseRandomHwAddr: true}))(t).SwIfIndex
	loop2 := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex

	r := must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{
		BdID: 10, IsAdd: true, Flood: true, UuFlood: true, Forward: true, Learn: true, ArpTerm: true, MacAge: 5, BdTag: "bd-ten",
	}))(t)
	if r.BdID != 10 {
		t.Errorf("bd_id = %d", r.BdID)
	}
	_, err := lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 10, IsAdd: true})
	wantVPPError(t, err, api.BD_ALREADY_EXISTS)
	auto := must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: ^uint32(0), IsAdd: true}))(t)
	if auto.BdID != 1 {
		t.Errorf("allocated bd_id = %d", auto.BdID)
	}

	must(lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: bvi, BdID: 10, PortType: l2.L2_API_PORT_TYPE_BVI, Enable: true}))(t)
	must(lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: port, BdID: 10, Shg: 1, Enable: true}))(t)
	_, err = lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: loop2, BdID: 10, PortType: l2.L2_API_PORT_TYPE_BVI, Enable: true})
	wantVPPError(t, err, api.BD_ALREADY_HAS_BVI)

	ipa, _ := ip_types.ParseAddress("10.10.0.5")
	mac, _ := ethernet_types.ParseMacAddress("02:00:00:00:10:05")
	must(lc.BdIPMacAddDel(ctx, &l2.BdIPMacAddDel{IsAdd: true, Entry: l2.BdIPMac{BdID: 10, IP: ipa, Mac: mac}}))(t)
	_, err = lc.BdIPMacAddDel(ctx, &l2.BdIPMacAddDel{IsAdd: true, Entry: l2.BdIPMac{BdID: 99, IP: ipa, Mac: mac}})
	wantVPPError(t, err, api.NO_SUCH_ENTRY)

	// GoVPP leaves bd_id and sw_if_index 0: VPP then returns nothing.
	if ds := collect(t, must(lc.BridgeDomainDump(ctx, &l2.BridgeDomainDump{}))(t).Recv); len(ds) != 0 {
		t.Errorf("dump with zero values = %+v", ds)
	}
	ds := collect(t, must(lc.BridgeDomainDump(ctx, &l2.BridgeDomainDump{BdID: 10, SwIfIndex: all}))(t).Recv)
	if len(ds) != 1 {
		t.Fatalf("bridge_domain_dump = %+v", ds)
	}
	d := ds[0]
	if d.BdID != 10 || !d.ArpTerm || !d.Learn || d.MacAge != 5 || d.BdTag != "bd-ten" || d.BviSwIfIndex != bvi ||
		d.UuFwdSwIfIndex != all || d.NSwIfs != 2 || d.SwIfDetails[0].SwIfIndex != bvi ||
		d.SwIfDetails[1].SwIfIndex != port || d.SwIfDetails[1].Shg != 1 {
		t.Errorf("details = %+v", d)
	}
	if ds := collect(t, must(lc.BridgeDomainDump(ctx, &l2.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: all}))(t).Recv); len(ds) != 2 {
		t.Errorf("all domains = %d", len(ds))
	}
	// VPP 25.10 does not implement the sw_if_index filter: nothing.
	if ds := collect(t, must(lc.BridgeDomainDump(ctx, &l2.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: port}))(t).Recv); len(ds) != 0 {
		t.Errorf("dump filtered by the sw_if_index of a member = %+v, want nothing", ds)
	}
	arp := collect(t, must(lc.BdIPMacDump(ctx, &l2.BdIPMacDump{BdID: ^uint32(0)}))(t).Recv)
	if len(arp) != 1 || arp[0].Entry.IP.String() != "10.10.0.5" || arp[0].Entry.Mac != mac || arp[0].Entry.BdID != 10 {
		t.Errorf("bd_ip_mac_dump = %+v", arp)
	}

	fr := must(lc.BridgeFlags(ctx, &l2.BridgeFlags{BdID: 10, Flags: l2.BRIDGE_API_FLAG_LEARN}))(t)
	if l2.BdFlags(fr.ResultingFeatureBitmap)&l2.BRIDGE_API_FLAG_LEARN != 0 {
		t.Errorf("learn still set: %v", l2.BdFlags(fr.ResultingFeatureBitmap))
	}
	must(lc.BridgeDomainSetMacAge(ctx, &l2.BridgeDomainSetMacAge{BdID: 10, MacAge: 9}))(t)

	_, err = lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 10})
	wantVPPError(t, err, api.BD_IN_USE)

	bds := s.BridgeDomains()
	if len(bds) != 2 || bds[1].BdID != 10 || bds[1].Learn || bds[1].MacAge != 9 || len(bds[1].ArpEntries) != 1 ||
		bds[1].ArpEntries[0].IP != netip.MustParseAddr("10.10.0.5") || bds[1].BVI != uint32(bvi) {
		t.Errorf("snapshot = %+v", bds)
	}
	if i, _ := s.Interface("host-veth1"); i.Bridge == nil || i.Bridge.BdID != 10 || i.Bridge.SHG != 1 {
		t.Errorf("port membership = %+v", i.Bridge)
	}

	// Deleting an interface removes its membership; disabling removes the other.
	must(ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: bvi}))(t)
	must(lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: port, BdID: 10}))(t)
	if bd := s.BridgeDomains()[1]; len(bd.Members) != 0 || bd.BVI != vppsim.NoIndex {
		t.Errorf("after removal = %+v", bd)
	}
	must(lc.BdIPMacAddDel(ctx, &l2.BdIPMacAddDel{Entry: l2.BdIPMac{BdID: 10, IP: ipa, Mac: mac}}))(t)
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 10}))(t)
	_, err = lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 10})
	wantVPPError(t, err, api.NO_SUCH_ENTRY)
	// Putting an interface into an unknown domain creates it.
	must(lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: port, BdID: 33, Enable: true}))(t)
	if bds := s.BridgeDomains(); len(bds) != 2 || bds[1].BdID != 33 || !bds[1].Learn || len(bds[1].Members) != 1 {
		t.Errorf("implicit domain = %+v", bds)
	}
}

func nhPath(nh string, sw interface_types.InterfaceIndex) fib_types.FibPath {
	a, _ := ip_types.ParseAddress(nh)
	return fib_types.FibPath{SwIfIndex: uint32(sw), Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4, Nh: fib_types.FibPathNh{Address: a.Un}}
}

func routeDump(t *testing.T, ipc ip.RPCService, table uint32, ipv6 bool) map[string][]fib_types.FibPath {
	t.Helper()
	ds := collect(t, must(ipc.IPRouteDump(ctx, &ip.IPRouteDump{Table: ip.IPTable{TableID: table, IsIP6: ipv6}}))(t).Recv)
	m := map[string][]fib_types.FibPath{}
	for _, d := range ds {
		if d.Route.TableID != table || int(d.Route.NPaths) != len(d.Route.Paths) {
			t.Errorf("bad details %+v", d.Route)
		}
		m[d.Route.Prefix.String()] = d.Route.Paths
	}
	return m
}

func TestRoutesAndTables(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)
	ipc := ip.NewServiceClient(conn)
	loop := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	p, _ := ip_types.ParseAddressWithPrefix("10.0.0.1/24")
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: loop, IsAdd: true, Prefix: p}))(t)
	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: loop, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}))(t)

	dst, _ := ip_types.ParsePrefix("192.168.1.0/24")
	r := must(ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{
		Prefix: dst, NPaths: 1, Paths: []fib_types.FibPath{nhPath("10.0.0.2", loop)},
	}}))(t)
	if r.StatsIndex == 0 {
		t.Error("no stats index")
	}
	// Another table: it must be created first.
	blackhole, _ := ip_types.ParsePrefix("172.16.0.0/12")
	drop := fib_types.FibPath{Type: fib_types.FIB_API_PATH_TYPE_DROP, SwIfIndex: ^uint32(0)}
	_, err := ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{TableID: 20, Prefix: blackhole, NPaths: 1, Paths: []fib_types.FibPath{drop}}})
	wantVPPError(t, err, api.NO_SUCH_FIB)
	must(ipc.IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 20, Name: "blue"}}))(t)
	must(ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{TableID: 20, Prefix: blackhole, NPaths: 1, Paths: []fib_types.FibPath{drop}}}))(t)
	_, err = ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{Prefix: blackhole}})
	wantVPPError(t, err, api.VPPApiError(-158))
	_, err = ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{Prefix: dst, NPaths: 1, Paths: []fib_types.FibPath{nhPath("10.0.0.2", 42)}}})
	wantVPPError(t, err, api.NO_MATCHING_INTERFACE)

	tables := collect(t, must(ipc.IPTableDump(ctx, &ip.IPTableDump{}))(t).Recv)
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Table.Name)
	}
	if !slices.Equal(names, []string{"ipv4-VRF:0", "blue", "ipv6-VRF:0"}) {
		t.Errorf("tables = %v", names)
	}

	// Table 0 shows the API route and the entries VPP makes itself.
	fib := routeDump(t, ipc, 0, false)
	if ps := fib["192.168.1.0/24"]; len(ps) != 1 || ps[0].SwIfIndex != uint32(loop) || ps[0].Nh.Address.GetIP4().String() != "10.0.0.2" {
		t.Errorf("192.168.1.0/24 = %+v", ps)
	}
	for _, want := range []string{"0.0.0.0/0", "224.0.0.0/4", "10.0.0.0/24", "10.0.0.1/32", "10.0.0.255/32"} {
		if _, ok := fib[want]; !ok {
			t.Errorf("table 0 lacks %s: %v", want, fib)
		}
	}
	if ps := fib["10.0.0.1/32"]; ps[0].Type != fib_types.FIB_API_PATH_TYPE_LOCAL {
		t.Errorf("local entry = %+v", ps)
	}
	fib20 := routeDump(t, ipc, 20, false)
	if ps := fib20["172.16.0.0/12"]; len(ps) != 1 || ps[0].Type != fib_types.FIB_API_PATH_TYPE_DROP {
		t.Errorf("blackhole = %+v", ps)
	}
	if _, ok := fib20["192.168.1.0/24"]; ok {
		t.Error("table 20 shows a table 0 route")
	}
	if fib := routeDump(t, ipc, 99, false); len(fib) != 0 {
		t.Errorf("unknown table dump = %v", fib)
	}

	// Multipath: add a second path, remove the first.
	must(ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, IsMultipath: true, Route: ip.IPRoute{Prefix: dst, NPaths: 1, Paths: []fib_types.FibPath{nhPath("10.0.0.3", loop)}}}))(t)
	if rs := s.Routes(); len(rs) != 2 || len(rs[0].Paths) != 2 {
		t.Fatalf("routes = %+v", rs)
	}
	must(ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsMultipath: true, Route: ip.IPRoute{Prefix: dst, NPaths: 1, Paths: []fib_types.FibPath{nhPath("10.0.0.2", loop)}}}))(t)
	rs := s.Routes()
	want := vppsim.Route{TableID: 0, Prefix: netip.MustParsePrefix("192.168.1.0/24")}
	if rs[0].TableID != want.TableID || rs[0].Prefix != want.Prefix || len(rs[0].Paths) != 1 ||
		rs[0].Paths[0].NextHop != netip.MustParseAddr("10.0.0.3") || rs[0].Paths[0].Weight != 1 {
		t.Errorf("after path removal = %+v", rs[0])
	}
	if rs[1].TableID != 20 || rs[1].Paths[0].Type != fib_types.FIB_API_PATH_TYPE_DROP {
		t.Errorf("table 20 route = %+v", rs[1])
	}
	// Deleting the interface leaves the paths through it (see
	// TestDeletedInterfaceKeepsRoutePaths); deleting the table takes its
	// routes.
	must(ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: loop}))(t)
	must(ipc.IPTableAddDel(ctx, &ip.IPTableAddDel{Table: ip.IPTable{TableID: 20}}))(t)
	if rs := s.Routes(); len(rs) != 1 || rs[0].Prefix != want.Prefix || rs[0].Paths[0].SwIfIndex != uint32(loop) {
		t.Errorf("routes left: %+v, want 192.168.1.0/24 through the deleted loopback", rs)
	}
	must(ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{Route: ip.IPRoute{Prefix: dst}}))(t)
	if tb := s.Tables(); len(tb) != 2 {
		t.Errorf("tables left: %+v", tb)
	}
	// Deleting what is not there is no error, as in VPP.
	must(ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{Route: ip.IPRoute{Prefix: dst}}))(t)
}

func TestNeighbors(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	nc := ip_neighbor.NewServiceClient(conn)
	loop := must(interfaces.NewServiceClient(conn).CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex

	a4, _ := ip_types.ParseAddress("10.0.0.9")
	a6, _ := ip_types.ParseAddress("2001:db8::9")
	mac, _ := ethernet_types.ParseMacAddress("02:aa:bb:cc:dd:ee")
	for _, a := range []ip_types.Address{a4, a6} {
		must(nc.IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{
			SwIfIndex: loop, Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac, IPAddress: a,
		}}))(t)
	}
	ds := collect(t, must(nc.IPNeighborDump(ctx, &ip_neighbor.IPNeighborDump{SwIfIndex: all, Af: ip_types.ADDRESS_IP4}))(t).Recv)
	if len(ds) != 1 || ds[0].Neighbor.IPAddress.String() != "10.0.0.9" || ds[0].Neighbor.MacAddress != mac ||
		ds[0].Neighbor.Flags != ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC {
		t.Errorf("ipv4 neighbours = %+v", ds)
	}
	if ds := collect(t, must(nc.IPNeighborDump(ctx, &ip_neighbor.IPNeighborDump{SwIfIndex: loop, Af: ip_types.ADDRESS_IP6}))(t).Recv); len(ds) != 1 {
		t.Errorf("ipv6 neighbours = %+v", ds)
	}
	if ns := s.Neighbors(); len(ns) != 2 || ns[0].IP != netip.MustParseAddr("10.0.0.9") || ns[0].MAC.String() != "02:aa:bb:cc:dd:ee" {
		t.Errorf("snapshot = %+v", ns)
	}
	// The neighbour has its /32 in the FIB.
	if fib := routeDump(t, ip.NewServiceClient(conn), 0, false); len(fib["10.0.0.9/32"]) != 1 {
		t.Errorf("no adjacency route: %v", fib)
	}
	must(nc.IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: loop, IPAddress: a4}}))(t)
	_, err := nc.IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: loop, IPAddress: a4}})
	wantVPPError(t, err, api.NO_SUCH_ENTRY)
	_, err = nc.IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: 40, IPAddress: a4}})
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)
	// Deleting the interface leaves its static neighbours (see
	// TestDeletedInterfaceKeepsStaticNeighbors).
	must(interfaces.NewServiceClient(conn).DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: loop}))(t)
	if ns := s.Neighbors(); len(ns) != 1 || ns[0].IP != netip.MustParseAddr("2001:db8::9") {
		t.Errorf("neighbours left: %+v, want the static 2001:db8::9", ns)
	}
}

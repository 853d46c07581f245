package vppsim_test

import (
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/binapi/vpe"

	"github.com/netagent-io/netagent/tests/vppsim"
)

const all = ^interface_types.InterfaceIndex(0)

func dumpIfs(t *testing.T, conn api.Connection, req *interfaces.SwInterfaceDump) []*interfaces.SwInterfaceDetails {
	t.Helper()
	s := must(interfaces.NewServiceClient(conn).SwInterfaceDump(ctx, req))(t)
	return collect(t, s.Recv)
}

func ifNames(ds []*interfaces.SwInterfaceDetails) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.InterfaceName)
	}
	return out
}

func addresses(t *testing.T, conn api.Connection, idx interface_types.InterfaceIndex, ipv6 bool) []string {
	t.Helper()
	s := must(ip.NewServiceClient(conn).IPAddressDump(ctx, &ip.IPAddressDump{SwIfIndex: idx, IsIPv6: ipv6}))(t)
	var out []string
	for _, d := range collect(t, s.Recv) {
		if d.SwIfIndex != idx {
			t.Errorf("ip_address_details for %d in a dump of %d", d.SwIfIndex, idx)
		}
		out = append(out, d.Prefix.String())
	}
	return out
}

func TestHandshakeVersionAndPing(t *testing.T) {
	s := startSim(t, vppsim.Options{PID: 4242})
	conn := connect(t, s)

	v := must(vpe.NewServiceClient(conn).ShowVersion(ctx, &vpe.ShowVersion{}))(t)
	if v.Version != "25.10-release" || v.Program != "vpe" {
		t.Errorf("show_version = %+v", v)
	}
	ping := must(memclnt.NewServiceClient(conn).ControlPing(ctx, &memclnt.ControlPing{}))(t)
	if ping.VpePID != 4242 {
		t.Errorf("vpe_pid = %d, want 4242", ping.VpePID)
	}
	st := must(vpe.NewServiceClient(conn).ShowVpeSystemTime(ctx, &vpe.ShowVpeSystemTime{}))(t)
	if st.VpeSystemTime == 0 {
		t.Error("show_vpe_system_time returned 0")
	}
	// The message table uses the real names with CRCs; sockclnt_create is 15.
	msgs := s.Messages()
	if msgs["sockclnt_create_"+(&memclnt.SockclntCreate{}).GetCrcString()] != 15 {
		t.Errorf("sockclnt_create not at id 15: %v", msgs)
	}
	for _, m := range []api.Message{&interfaces.SwInterfaceDump{}, &memif.MemifCreateV2{}, &tapv2.TapCreateV3{}, &af_packet.AfPacketCreateV3{}} {
		if _, ok := msgs[m.GetMessageName()+"_"+m.GetCrcString()]; !ok {
			t.Errorf("%s missing from the message table", m.GetMessageName())
		}
	}
	calls := s.Calls()
	if len(calls) < 4 || calls[0] != "sockclnt_create" || calls[1] != "show_version" || calls[2] != "control_ping" {
		t.Errorf("calls = %v", calls)
	}
	// A channel (the older GoVPP API) works as well: request and multi-request.
	ch := must(conn.NewAPIChannel())(t)
	defer ch.Close()
	reply := &vpe.ShowVersionReply{}
	if err := ch.SendRequest(&vpe.ShowVersion{}).ReceiveReply(reply); err != nil || reply.Version != vppsim.Version {
		t.Errorf("channel show_version: %v %+v", err, reply)
	}
	req := ch.SendMultiRequest(&interfaces.SwInterfaceDump{SwIfIndex: all})
	var names []string
	for {
		d := &interfaces.SwInterfaceDetails{}
		last, err := req.ReceiveReply(d)
		if err != nil {
			t.Fatal(err)
		}
		if last {
			break
		}
		names = append(names, d.InterfaceName)
	}
	if !slices.Equal(names, []string{"local0"}) {
		t.Errorf("interfaces = %v", names)
	}
}

func TestLoopbackTagAndDump(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)

	r := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t)
	if r.SwIfIndex != 1 {
		t.Fatalf("first loopback got sw_if_index %d, want 1 (local0 is 0)", r.SwIfIndex)
	}
	must(ic.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: r.SwIfIndex, Tag: "my-loop"}))(t)

	ds := dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: all})
	if got := ifNames(ds); !slices.Equal(got, []string{"local0", "loop0"}) {
		t.Fatalf("interfaces = %v", got)
	}
	d := ds[1]
	if d.Tag != "my-loop" || d.InterfaceDevType != "Loopback" || d.L2Address.String() != "de:ad:00:00:00:00" ||
		d.Type != interface_types.IF_API_TYPE_HARDWARE || d.SupSwIfIndex != 1 || d.Mtu[0] != 9000 || d.Flags != 0 {
		t.Errorf("loop0 details = %+v", d)
	}
	// Name filter (case-insensitive substring), and VPP's treatment of
	// sw_if_index: GoVPP leaves it 0, which selects local0 only.
	if got := ifNames(dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: all, NameFilterValid: true, NameFilter: "LOOP"})); !slices.Equal(got, []string{"loop0"}) {
		t.Errorf("filtered = %v", got)
	}
	if got := ifNames(dumpIfs(t, conn, &interfaces.SwInterfaceDump{NameFilterValid: true, NameFilter: "loop"})); !slices.Equal(got, []string{"local0"}) {
		t.Errorf("sw_if_index 0 dump = %v", got)
	}
	if got := ifNames(dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: 77})); len(got) != 0 {
		t.Errorf("unknown sw_if_index dump = %v", got)
	}
	// Errors: empty tag, unknown interface.
	_, err := ic.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: r.SwIfIndex})
	wantVPPError(t, err, api.INVALID_VALUE)
	_, err = ic.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: 9, Tag: "x"})
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)
	// Tag removal.
	must(ic.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{SwIfIndex: r.SwIfIndex}))(t)
	if i, _ := s.Interface("loop0"); i.Tag != "" {
		t.Errorf("tag not removed: %q", i.Tag)
	}

	// A second loopback is loop1 at 2; deleting loop0 frees index 1 and the
	// instance 0, which the next loopback reuses (VPP's pools).
	r2 := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{MacAddress: ethernet_types.MacAddress{2, 0, 0, 0, 0, 9}}))(t)
	if r2.SwIfIndex != 2 {
		t.Fatalf("second loopback sw_if_index = %d", r2.SwIfIndex)
	}
	if i, _ := s.Interface("loop1"); i.MAC.String() != "02:00:00:00:00:09" {
		t.Errorf("loop1 MAC = %v", i.MAC)
	}
	must(ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: r.SwIfIndex}))(t)
	_, err = ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: r.SwIfIndex})
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)
	_, err = ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: 0})
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)
	r3 := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t)
	if r3.SwIfIndex != 1 {
		t.Errorf("re-created loopback sw_if_index = %d, want the freed 1", r3.SwIfIndex)
	}
	if got := ifNames(dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: all})); !slices.Equal(got, []string{"local0", "loop0", "loop1"}) {
		t.Errorf("interfaces = %v", got)
	}
	// create_loopback_instance with a taken instance.
	_, err = ic.CreateLoopbackInstance(ctx, &interfaces.CreateLoopbackInstance{IsSpecified: true, UserInstance: 1})
	wantVPPError(t, err, api.INVALID_REGISTRATION)
	ri := must(ic.CreateLoopbackInstance(ctx, &interfaces.CreateLoopbackInstance{IsSpecified: true, UserInstance: 7}))(t)
	if i, _ := s.Interface("loop7"); i.SwIfIndex != uint32(ri.SwIfIndex) {
		t.Errorf("loop7 = %+v", i)
	}
}

func TestFlagsMtuMacAddresses(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)
	idx := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex

	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: idx, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}))(t)
	must(ic.SwInterfaceSetMtu(ctx, &interfaces.SwInterfaceSetMtu{SwIfIndex: idx, Mtu: []uint32{1500, 0, 0, 0}}))(t)
	mac, _ := ethernet_types.ParseMacAddress("02:11:22:33:44:55")
	must(ic.SwInterfaceSetMacAddress(ctx, &interfaces.SwInterfaceSetMacAddress{SwIfIndex: idx, MacAddress: mac}))(t)
	for _, a := range []string{"10.0.0.1/24", "10.0.1.1/24", "2001:db8::1/64"} {
		p, _ := ip_types.ParseAddressWithPrefix(a)
		must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: idx, IsAdd: true, Prefix: p}))(t)
	}

	d := dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: idx})[0]
	if d.Flags != interface_types.IF_STATUS_API_FLAG_ADMIN_UP|interface_types.IF_STATUS_API_FLAG_LINK_UP {
		t.Errorf("flags = %v (a loopback has link when admin up)", d.Flags)
	}
	if d.Mtu[0] != 1500 || d.L2Address != mac {
		t.Errorf("mtu/mac = %v %v", d.Mtu, d.L2Address)
	}
	gm := must(ic.SwInterfaceGetMacAddress(ctx, &interfaces.SwInterfaceGetMacAddress{SwIfIndex: idx}))(t)
	if gm.MacAddress != mac {
		t.Errorf("get mac = %v", gm.MacAddress)
	}
	if got := addresses(t, conn, idx, false); !slices.Equal(got, []string{"10.0.0.1/24", "10.0.1.1/24"}) {
		t.Errorf("ipv4 addresses = %v", got)
	}
	if got := addresses(t, conn, idx, true); !slices.Equal(got, []string{"2001:db8::1/64"}) {
		t.Errorf("ipv6 addresses = %v", got)
	}

	// VPP's errors. VPP 25.10 refuses an address the interface has (any
	// length) with the code of a conflict with another interface's subnet:
	// IPv4 ADDRESS_IN_USE, IPv6 DUPLICATE_IF_ADDRESS.
	other := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	for _, c := range []struct {
		on   interface_types.InterfaceIndex
		addr string
		want api.VPPApiError
	}{
		{idx, "10.0.0.1/24", api.ADDRESS_IN_USE},
		{idx, "10.0.0.1/16", api.ADDRESS_IN_USE},
		{other, "10.0.0.2/24", api.ADDRESS_IN_USE},
		{idx, "2001:db8::1/64", api.DUPLICATE_IF_ADDRESS},
		{idx, "2001:db8::1/48", api.DUPLICATE_IF_ADDRESS},
		{other, "2001:db8::2/64", api.DUPLICATE_IF_ADDRESS},
	} {
		p, _ := ip_types.ParseAddressWithPrefix(c.addr)
		_, err := ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: c.on, IsAdd: true, Prefix: p})
		wantVPPError(t, err, c.want)
	}
	p, _ := ip_types.ParseAddressWithPrefix("10.0.0.1/24")
	p2, _ := ip_types.ParseAddressWithPrefix("10.0.0.2/24")
	// Another address of a subnet the interface has is fine.
	p3, _ := ip_types.ParseAddressWithPrefix("10.0.0.3/24")
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: idx, IsAdd: true, Prefix: p3}))(t)
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: idx, Prefix: p3}))(t)
	_, err := ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: idx, Prefix: p2})
	wantVPPError(t, err, api.ADDRESS_NOT_FOUND_FOR_INTERFACE)
	_, err = ic.SwInterfaceSetMtu(ctx, &interfaces.SwInterfaceSetMtu{SwIfIndex: 0, Mtu: []uint32{1500, 0, 0, 0}})
	wantVPPError(t, err, api.FEATURE_DISABLED)
	_, err = ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: 99})
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)

	// Delete one address, then all.
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: idx, Prefix: p}))(t)
	if got := addresses(t, conn, idx, false); !slices.Equal(got, []string{"10.0.1.1/24"}) {
		t.Errorf("after delete = %v", got)
	}
	i, _ := s.Interface("loop0")
	if !i.AdminUp || !i.LinkUp || i.MTU != [4]uint32{1500, 0, 0, 0} || i.MAC.String() != "02:11:22:33:44:55" ||
		len(i.Addresses) != 2 || i.Addresses[1] != netip.MustParsePrefix("2001:db8::1/64") {
		t.Errorf("snapshot = %+v", i)
	}
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: idx, DelAll: true}))(t)
	if i, _ := s.Interface("loop0"); len(i.Addresses) != 0 {
		t.Errorf("del_all left %v", i.Addresses)
	}
	// Admin down takes the link down.
	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: idx}))(t)
	if i, _ := s.Interface("loop0"); i.AdminUp || i.LinkUp {
		t.Errorf("after admin down: %+v", i)
	}
	// A protocol MTU set alone zeroes the others, L3 included (VPP's CLI
	// "set interface mtu ip4 1200").
	must(ic.SwInterfaceSetMtu(ctx, &interfaces.SwInterfaceSetMtu{SwIfIndex: idx, Mtu: []uint32{0, 1200, 0, 0}}))(t)
	if d := dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: idx})[0]; !slices.Equal(d.Mtu, []uint32{0, 1200, 0, 0}) {
		t.Errorf("mtu after an IPv4 MTU = %v", d.Mtu)
	}
	// A loopback's link MTU cannot change.
	_, err = ic.HwInterfaceSetMtu(ctx, &interfaces.HwInterfaceSetMtu{SwIfIndex: idx, Mtu: 8000})
	wantVPPError(t, err, api.UNSUPPORTED)
}

func TestAfPacket(t *testing.T) {
	s := startSim(t, vppsim.Options{HostIfExists: func(name string) bool { return strings.HasPrefix(name, "veth") }})
	conn := connect(t, s)
	ac := af_packet.NewServiceClient(conn)

	r := must(ac.AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
		Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "veth1", UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
	}))(t)
	i, ok := s.Interface("host-veth1")
	if !ok || i.SwIfIndex != uint32(r.SwIfIndex) || i.Kind != vppsim.KindAfPacket || i.DevType != "af-packet" ||
		i.AfPacket.NumRxQueues != 1 || i.MAC[0] != 0x02 || i.MAC[1] != 0xfe {
		t.Fatalf("host-veth1 = %+v", i)
	}
	// VPP 25.10 gives it the link and L3 MTU 9000, whatever the host
	// interface's (a fresh veth has 1500).
	if d := dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: r.SwIfIndex})[0]; d.LinkMtu != 9000 || !slices.Equal(d.Mtu, []uint32{9000, 0, 0, 0}) {
		t.Errorf("host-veth1 MTU: link %d, %v", d.LinkMtu, d.Mtu)
	}
	// hw_interface_set_mtu sets the link MTU and the L3 MTU.
	must(interfaces.NewServiceClient(conn).HwInterfaceSetMtu(ctx, &interfaces.HwInterfaceSetMtu{SwIfIndex: r.SwIfIndex, Mtu: 1400}))(t)
	if i, _ := s.Interface("host-veth1"); i.LinkMTU != 1400 || i.MTU[0] != 1400 {
		t.Errorf("after hw mtu: %+v", i)
	}
	ds := collect(t, must(ac.AfPacketDump(ctx, &af_packet.AfPacketDump{}))(t).Recv)
	if len(ds) != 1 || ds[0].HostIfName != "veth1" || ds[0].SwIfIndex != r.SwIfIndex {
		t.Errorf("af_packet_dump = %+v", ds)
	}
	_, err := ac.AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{HostIfName: "veth1", UseRandomHwAddr: true})
	wantVPPError(t, err, api.IF_ALREADY_EXISTS)
	_, err = ac.AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{HostIfName: "eth9", UseRandomHwAddr: true})
	wantVPPError(t, err, api.INVALID_INTERFACE)
	// Without use_random_hw_addr VPP uses hw_addr, even a zero one.
	must(ac.AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{HostIfName: "veth2"}))(t)
	if i, _ := s.Interface("host-veth2"); i.MAC.String() != "00:00:00:00:00:00" {
		t.Errorf("host-veth2 MAC = %v", i.MAC)
	}

	must(ac.AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: "veth1"}))(t)
	if _, ok := s.Interface("host-veth1"); ok {
		t.Error("host-veth1 still there")
	}
	_, err = ac.AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: "veth1"})
	wantVPPError(t, err, api.SYSCALL_ERROR_1)
}

func TestMemif(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	mc := memif.NewServiceClient(conn)

	sr := must(mc.MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: ^uint32(0), SocketFilename: "/tmp/m1.sock"}))(t)
	if sr.SocketID != 1 {
		t.Fatalf("allocated socket id = %d", sr.SocketID)
	}
	socks := collect(t, must(mc.MemifSocketFilenameDump(ctx, &memif.MemifSocketFilenameDump{}))(t).Recv)
	if len(socks) != 2 || socks[0].SocketFilename != "/run/vpp/memif.sock" || socks[1].SocketFilename != "/tmp/m1.sock" {
		t.Errorf("sockets = %+v", socks)
	}
	r := must(mc.MemifCreateV2(ctx, &memif.MemifCreateV2{
		Role: memif.MEMIF_ROLE_API_SLAVE, SocketID: 1, ID: 3, RxQueues: 1, TxQueues: 1, Secret: "s3cr3t",
	}))(t)
	i, ok := s.Interface("memif1/3")
	if !ok || i.SwIfIndex != uint32(r.SwIfIndex) || i.Memif.RingSize != 1024 || i.Memif.BufferSize != 2048 || i.Memif.Secret != "s3cr3t" {
		t.Fatalf("memif1/3 = %+v %+v", i, i.Memif)
	}
	// memif_dump reports the run-time ring and buffer sizes: 1 and 0 while
	// no peer is connected.
	ds := collect(t, must(mc.MemifDump(ctx, &memif.MemifDump{}))(t).Recv)
	if len(ds) != 1 || ds[0].IfName != "memif1/3" || ds[0].SocketID != 1 || ds[0].ID != 3 || ds[0].Role != memif.MEMIF_ROLE_API_SLAVE ||
		ds[0].RingSize != 1 || ds[0].BufferSize != 0 || !ds[0].ZeroCopy || ds[0].HwAddr == (ethernet_types.MacAddress{}) {
		t.Errorf("memif_dump = %+v", ds)
	}
	// The link stays down without a peer, even admin up; SetLinkUp connects one.
	must(interfaces.NewServiceClient(conn).SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: r.SwIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}))(t)
	if i, _ := s.Interface("memif1/3"); !i.AdminUp || i.LinkUp {
		t.Errorf("memif without peer: %+v", i)
	}
	if err := s.SetLinkUp(uint32(r.SwIfIndex), true); err != nil {
		t.Fatal(err)
	}
	if i, _ := s.Interface("memif1/3"); !i.LinkUp {
		t.Error("memif link not up after SetLinkUp")
	}
	// Connected, a slave reports the sizes it uses.
	ds = collect(t, must(mc.MemifDump(ctx, &memif.MemifDump{}))(t).Recv)
	if len(ds) != 1 || ds[0].RingSize != 1024 || ds[0].BufferSize != 2048 {
		t.Errorf("memif_dump of a connected slave = %+v", ds)
	}

	_, err := mc.MemifCreateV2(ctx, &memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_SLAVE, SocketID: 1, ID: 3})
	wantVPPError(t, err, api.SUBIF_ALREADY_EXISTS)
	_, err = mc.MemifCreateV2(ctx, &memif.MemifCreateV2{SocketID: 5, ID: 0})
	wantVPPError(t, err, api.INVALID_ARGUMENT)
	_, err = mc.MemifCreateV2(ctx, &memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_SLAVE, SocketID: 1, ID: 4, RingSize: 1000})
	wantVPPError(t, err, api.INVALID_ARGUMENT)
	_, err = mc.MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{SocketID: 1})
	wantVPPError(t, err, api.UNEXPECTED_INTF_STATE)
	_, err = mc.MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: 0, SocketFilename: "x"})
	wantVPPError(t, err, api.INVALID_ARGUMENT)

	must(mc.MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: r.SwIfIndex}))(t)
	must(mc.MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{SocketID: 1}))(t)
	if got := s.MemifSockets(); len(got) != 1 {
		t.Errorf("sockets after delete = %v", got)
	}
	_, err = mc.MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: 0})
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)
}

func TestTap(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	tc := tapv2.NewServiceClient(conn)

	hostPfx, _ := ip_types.ParseIP4Prefix("192.168.7.1/24")
	r := must(tc.TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID: ^uint32(0), UseRandomMac: true, NumRxQueues: 1, NumTxQueues: 1, TxRingSz: 256, RxRingSz: 256,
		HostIfNameSet: true, HostIfName: "vpp-tap", HostIP4PrefixSet: true, HostIP4Prefix: ip_types.IP4AddressWithPrefix(hostPfx),
		HostMtuSet: true, HostMtuSize: 1400, Tag: "tap-a",
	}))(t)
	i, ok := s.Interface("tap0")
	if !ok || i.SwIfIndex != uint32(r.SwIfIndex) || i.Tag != "tap-a" || i.DevType != "virtio" || !i.LinkUp ||
		i.Tap.HostIfName != "vpp-tap" || i.Tap.HostMTU != 1400 || i.Tap.HostIP4Prefix.String() != "192.168.7.1/24" {
		t.Fatalf("tap0 = %+v %+v", i, i.Tap)
	}
	ds := collect(t, must(tc.SwInterfaceTapV2Dump(ctx, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: all}))(t).Recv)
	if len(ds) != 1 || ds[0].DevName != "tap0" || ds[0].HostIfName != "vpp-tap" || ds[0].RxRingSz != 256 || ds[0].HostMtuSize != 1400 {
		t.Errorf("tap dump = %+v", ds)
	}
	// GoVPP's zero sw_if_index asks about local0, which is no TAP.
	if ds := collect(t, must(tc.SwInterfaceTapV2Dump(ctx, &tapv2.SwInterfaceTapV2Dump{}))(t).Recv); len(ds) != 0 {
		t.Errorf("tap dump of local0 = %+v", ds)
	}
	_, err := tc.TapCreateV3(ctx, &tapv2.TapCreateV3{ID: 0})
	wantVPPError(t, err, api.INVALID_INTERFACE)
	r1 := must(tc.TapCreateV3(ctx, &tapv2.TapCreateV3{ID: 5}))(t)
	if i, _ := s.Interface("tap5"); i.SwIfIndex != uint32(r1.SwIfIndex) || i.Tap.HostIfName != "tap5" {
		t.Errorf("tap5 = %+v", i)
	}
	// A host name another TAP's host side has: the kernel refuses VPP's
	// rename (NETLINK_ERROR), nothing is made. In another namespace it is
	// free.
	before := len(s.Interfaces())
	for _, name := range []string{"vpp-tap", "tap5"} {
		_, err = tc.TapCreateV3(ctx, &tapv2.TapCreateV3{ID: ^uint32(0), HostIfNameSet: true, HostIfName: name})
		wantVPPError(t, err, api.NETLINK_ERROR)
	}
	if got := len(s.Interfaces()); got != before {
		t.Errorf("%d interfaces after the refused TAPs, %d before", got, before)
	}
	must(tc.TapCreateV3(ctx, &tapv2.TapCreateV3{ID: ^uint32(0), HostIfNameSet: true, HostIfName: "vpp-tap", HostNamespaceSet: true, HostNamespace: "other"}))(t)
	must(tc.TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: r.SwIfIndex}))(t)
	_, err = tc.TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: r.SwIfIndex})
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)
}

// TestTapWithoutVhostNet: on a host without /dev/vhost-net VPP cannot create
// a TAP v2 interface (System call error), and nothing is made.
func TestTapWithoutVhostNet(t *testing.T) {
	s := startSim(t, vppsim.Options{NoVhostNet: true})
	conn := connect(t, s)
	tc := tapv2.NewServiceClient(conn)
	_, err := tc.TapCreateV3(ctx, &tapv2.TapCreateV3{ID: ^uint32(0), NumRxQueues: 1, NumTxQueues: 1})
	wantVPPError(t, err, api.SYSCALL_ERROR_1)
	_, err = tc.TapCreateV2(ctx, &tapv2.TapCreateV2{ID: ^uint32(0), NumRxQueues: 1})
	wantVPPError(t, err, api.SYSCALL_ERROR_1)
	if got := s.Interfaces(); len(got) != 1 {
		t.Errorf("interfaces after the failed creations: %+v", got)
	}
}

func TestSubInterface(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)
	parent := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex

	sub := must(ic.CreateSubif(ctx, &interfaces.CreateSubif{
		SwIfIndex: parent, SubID: 10, OuterVlanID: 10,
		SubIfFlags: interface_types.SUB_IF_API_FLAG_ONE_TAG | interface_types.SUB_IF_API_FLAG_EXACT_MATCH,
	}))(t).SwIfIndex
	// VPP 25.10 reports no MAC and no MTU of a new sub-interface, and the
	// device type of its parent; it cannot change the MAC.
	d := dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: sub})[0]
	if d.InterfaceName != "loop0.10" || d.Type != interface_types.IF_API_TYPE_SUB || d.SupSwIfIndex != uint32(parent) ||
		d.SubID != 10 || d.SubOuterVlanID != 10 || d.SubNumberOfTags != 1 || d.InterfaceDevType != "Loopback" ||
		d.L2Address != (ethernet_types.MacAddress{}) || !slices.Equal(d.Mtu, []uint32{0, 0, 0, 0}) || d.LinkMtu != 9000 {
		t.Errorf("sub details = %+v", d)
	}
	_, err := ic.SwInterfaceSetMacAddress(ctx, &interfaces.SwInterfaceSetMacAddress{SwIfIndex: sub, MacAddress: ethernet_types.MacAddress{2, 0, 0, 0, 0, 1}})
	wantVPPError(t, err, api.UNIMPLEMENTED)
	_, err = ic.CreateSubif(ctx, &interfaces.CreateSubif{SwIfIndex: parent, SubID: 10})
	wantVPPError(t, err, api.SUBIF_ALREADY_EXISTS)
	vlan := must(ic.CreateVlanSubif(ctx, &interfaces.CreateVlanSubif{SwIfIndex: parent, VlanID: 20}))(t).SwIfIndex

	// A sub-interface comes up only after its parent.
	_, err = ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: sub, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP})
	wantVPPError(t, err, api.UNSPECIFIED)
	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: parent, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}))(t)
	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: sub, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}))(t)
	si, _ := s.Interface("loop0.10")
	if !si.AdminUp || !si.LinkUp || si.Sub.Parent != uint32(parent) || si.Sub.OuterVlanID != 10 {
		t.Errorf("sub snapshot = %+v %+v", si, si.Sub)
	}
	_, err = ic.DeleteSubif(ctx, &interfaces.DeleteSubif{SwIfIndex: parent})
	wantVPPError(t, err, api.INVALID_SUB_SW_IF_INDEX)
	must(ic.DeleteSubif(ctx, &interfaces.DeleteSubif{SwIfIndex: vlan}))(t)
	// Deleting the parent deletes its sub-interfaces.
	must(ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: parent}))(t)
	if got := ifNames(dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: all})); !slices.Equal(got, []string{"local0"}) {
		t.Errorf("interfaces = %v", got)
	}
}

func TestUnnumberedAndVrf(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)
	ipc := ip.NewServiceClient(conn)
	donor := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	un := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	p, _ := ip_types.ParseAddressWithPrefix("10.9.0.1/32")
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: donor, IsAdd: true, Prefix: p}))(t)
	must(ic.SwInterfaceSetUnnumbered(ctx, &interfaces.SwInterfaceSetUnnumbered{SwIfIndex: donor, UnnumberedSwIfIndex: un, IsAdd: true}))(t)

	// VPP reports the address on the donor only...
	if got := addresses(t, conn, un, false); len(got) != 0 {
		t.Errorf("unnumbered interface lists %v", got)
	}
	if got := addresses(t, conn, donor, false); !slices.Equal(got, []string{"10.9.0.1/32"}) {
		t.Errorf("donor lists %v", got)
	}
	// ...and the borrowing through ip_unnumbered_dump (sw_if_index ~0 = all).
	ud := collect(t, must(ipc.IPUnnumberedDump(ctx, &ip.IPUnnumberedDump{SwIfIndex: all}))(t).Recv)
	if len(ud) != 1 || ud[0].SwIfIndex != un || ud[0].IPSwIfIndex != donor {
		t.Errorf("ip_unnumbered_dump = %+v", ud)
	}
	if i, _ := s.Interface("loop1"); !i.Unnumbered || i.UnnumberedFrom != uint32(donor) {
		t.Errorf("snapshot = %+v", i)
	}
	_, err := ic.SwInterfaceSetUnnumbered(ctx, &interfaces.SwInterfaceSetUnnumbered{SwIfIndex: donor, UnnumberedSwIfIndex: 50, IsAdd: true})
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX_2)
	// Deleting the donor ends the borrowing.
	must(ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: donor}))(t)
	if ud := collect(t, must(ipc.IPUnnumberedDump(ctx, &ip.IPUnnumberedDump{SwIfIndex: all}))(t).Recv); len(ud) != 0 {
		t.Errorf("after donor delete: %+v", ud)
	}

	// VRF binding: the table must exist, the interface must have no address of that family.
	_, err = ic.SwInterfaceSetTable(ctx, &interfaces.SwInterfaceSetTable{SwIfIndex: un, VrfID: 7})
	wantVPPError(t, err, api.NO_SUCH_FIB)
	must(ipc.IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 7}}))(t)
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: un, IsAdd: true, Prefix: p}))(t)
	_, err = ic.SwInterfaceSetTable(ctx, &interfaces.SwInterfaceSetTable{SwIfIndex: un, VrfID: 7})
	wantVPPError(t, err, api.ADDRESS_FOUND_FOR_INTERFACE)
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: un, DelAll: true}))(t)
	must(ic.SwInterfaceSetTable(ctx, &interfaces.SwInterfaceSetTable{SwIfIndex: un, VrfID: 7}))(t)
	gt := must(ic.SwInterfaceGetTable(ctx, &interfaces.SwInterfaceGetTable{SwIfIndex: un}))(t)
	if gt.VrfID != 7 {
		t.Errorf("get table = %d", gt.VrfID)
	}
	if i, _ := s.Interface("loop1"); i.IP4Table != 7 || i.IP6Table != 0 {
		t.Errorf("tables = %d/%d", i.IP4Table, i.IP6Table)
	}
}

// TestMemifAsVPP2510: what VPP 25.10 reports of a memif (run-time ring and
// buffer sizes; an IP-mode memif without MAC or MTU) and where a master
// cannot listen.
func TestMemifAsVPP2510(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	mc := memif.NewServiceClient(conn)
	ic := interfaces.NewServiceClient(conn)
	register := func(name string) uint32 {
		t.Helper()
		return must(mc.MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: ^uint32(0), SocketFilename: name}))(t).SocketID
	}
	dir := t.TempDir()

	// A master, ethernet, with sizes and a MAC: 1 and 0, connected or not.
	mac := ethernet_types.MacAddress{2, 0, 0, 0, 0xaa, 1}
	master := must(mc.MemifCreateV2(ctx, &memif.MemifCreateV2{
		Role: memif.MEMIF_ROLE_API_MASTER, SocketID: register(dir + "/m.sock"), ID: 1, RingSize: 2048, BufferSize: 4096, HwAddr: mac,
	}))(t).SwIfIndex
	// A slave, IP mode: no MAC (the one given is ignored), no MTU.
	slave := must(mc.MemifCreateV2(ctx, &memif.MemifCreateV2{
		Role: memif.MEMIF_ROLE_API_SLAVE, Mode: memif.MEMIF_MODE_API_IP, SocketID: register("sub/s.sock"), ID: 2, RingSize: 512, BufferSize: 1024, HwAddr: mac,
	}))(t).SwIfIndex
	dump := func() map[interface_types.InterfaceIndex]*memif.MemifDetails {
		out := map[interface_types.InterfaceIndex]*memif.MemifDetails{}
		for _, d := range collect(t, must(mc.MemifDump(ctx, &memif.MemifDump{}))(t).Recv) {
			out[d.SwIfIndex] = d
		}
		return out
	}
	ds := dump()
	if d := ds[master]; d == nil || d.RingSize != 1 || d.BufferSize != 0 || d.HwAddr != mac || d.ZeroCopy {
		t.Errorf("master: %+v", d)
	}
	if d := ds[slave]; d == nil || d.RingSize != 1 || d.BufferSize != 0 || d.HwAddr != (ethernet_types.MacAddress{}) || d.Mode != memif.MEMIF_MODE_API_IP {
		t.Errorf("IP-mode slave: %+v", d)
	}
	if d := dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: slave})[0]; d.L2Address != (ethernet_types.MacAddress{}) || d.LinkMtu != 0 || !slices.Equal(d.Mtu, []uint32{0, 0, 0, 0}) {
		t.Errorf("IP-mode slave details: MAC %v, link MTU %d, MTU %v", d.L2Address, d.LinkMtu, d.Mtu)
	}
	if d := dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: master})[0]; d.L2Address != mac || d.LinkMtu != 9000 || !slices.Equal(d.Mtu, []uint32{9000, 0, 0, 0}) {
		t.Errorf("ethernet master details: MAC %v, link MTU %d, MTU %v", d.L2Address, d.LinkMtu, d.Mtu)
	}
	_, err := ic.SwInterfaceSetMacAddress(ctx, &interfaces.SwInterfaceSetMacAddress{SwIfIndex: slave, MacAddress: mac})
	wantVPPError(t, err, api.UNIMPLEMENTED)
	for _, idx := range []interface_types.InterfaceIndex{master, slave} {
		if err := s.SetLinkUp(uint32(idx), true); err != nil {
			t.Fatal(err)
		}
	}
	ds = dump()
	if d := ds[master]; d.RingSize != 1 || d.BufferSize != 0 {
		t.Errorf("connected master: %+v", d)
	}
	if d := ds[slave]; d.RingSize != 512 || d.BufferSize != 1024 {
		t.Errorf("connected slave: %+v", d)
	}
	// A relative filename is under VPP's run-time directory, which VPP makes.
	if got := s.MemifSockets(); !slices.Contains(slices.Collect(maps.Values(got)), "/run/vpp/sub/s.sock") {
		t.Errorf("sockets %v, want /run/vpp/sub/s.sock", got)
	}
	relMaster := must(mc.MemifCreateV2(ctx, &memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_MASTER, SocketID: register("other/m.sock"), ID: 1}))(t).SwIfIndex
	if _, ok := dump()[relMaster]; !ok {
		t.Error("master on a relative filename missing")
	}

	// A master cannot listen where the directory of an absolute filename is
	// missing, or a file that is no socket is in the way; a slave does not
	// listen. Nothing is made.
	before := len(s.Interfaces())
	missing := register(dir + "/missing/m.sock")
	_, err = mc.MemifCreateV2(ctx, &memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_MASTER, SocketID: missing, ID: 1})
	wantVPPError(t, err, api.SYSCALL_ERROR_4)
	if err := os.WriteFile(dir+"/file.sock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = mc.MemifCreateV2(ctx, &memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_MASTER, SocketID: register(dir + "/file.sock"), ID: 1})
	wantVPPError(t, err, api.SYSCALL_ERROR_4)
	if got := len(s.Interfaces()); got != before {
		t.Errorf("interfaces after failed masters: %d, want %d", got, before)
	}
	must(mc.MemifCreateV2(ctx, &memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_SLAVE, SocketID: missing, ID: 1}))(t)
}

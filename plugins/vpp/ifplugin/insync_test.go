package ifplugin_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memif"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// The tests below set every field of every interface type the agent
// creates (TAP aside: TestRestartOnInSyncVPP/with_TAP), and check, against
// vppsim and a real VPP 25.10, that what VPP reports back makes an in-sync
// resync execute nothing, and that a change made behind the agent's back is
// found and repaired. What VPP 25.10 reports, field by field (the agent
// sends / VPP's dumps report):
//
//   - MAC: create_loopback, af_packet_create_v3, memif_create_v2 hw_addr,
//     sw_interface_set_mac_address / sw_interface_details.l2_address, as set;
//     a sub-interface and an IP-mode memif report 00:00:00:00:00:00 (and
//     cannot have one set: UNIMPLEMENTED).
//   - MTU: sw_interface_set_mtu [mtu,0,0,0] / mtu [mtu,0,0,0]; a protocol
//     MTU set by hand ("set interface mtu ip4 1200") reports [0,1200,0,0].
//   - VRF, unnumbered, admin state, addresses: as set
//     (sw_interface_get_table, ip_unnumbered_dump, flags, ip_address_dump;
//     no IPv6 link-local address is listed).
//   - memif: role, id, mode and socket as set (socket filenames absolute,
//     relative ones under VPP's run-time directory); ring_size and
//     buffer_size are run-time values (1 and 0 until a peer connects, and
//     on a master for good); secret and queue counts are not reported.

// runtimeFile is a file in VPP's run-time directory, for a memif socket: a
// master listens there, VPP can write to it. On a real VPP (on this host)
// the file is removed at the end of the test (VPP leaves a master's socket
// file).
func (e *env) runtimeFile(name string) string {
	e.t.Helper()
	f := path.Join(e.runtimeDir(), name)
	if e.vpp.Real() {
		e.t.Cleanup(func() { _ = os.Remove(f) })
	}
	return f
}

// everyType is a configuration with every interface type but TAP and every
// field the agent sets. The AF_PACKET interface binds to hostIf1.
func (e *env) everyType() []*vppif.Interface {
	e.t.Helper()
	lo := loop("lo1", "10.21.0.1/24", "2001:db8:21::1/64")
	lo.PhysAddress, lo.Mtu = "02:00:00:00:21:01", 1500
	vrf := loop("lo-vrf", "10.22.0.1/24", "2001:db8:22::1/64")
	vrf.Vrf = 21
	down := loop("lo-down", "10.23.0.1/24")
	down.Enabled = false
	un := loop("un1")
	un.Unnumbered = &vppif.Interface_Unnumbered{InterfaceWithIp: "lo1"}
	return []*vppif.Interface{
		lo, vrf, down, un,
		{Name: "sub1", Type: vppif.Interface_SUB_INTERFACE, Enabled: true, Mtu: 1400, IpAddresses: []string{"10.24.0.1/24"},
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "lo1", SubId: 21}}},
		{Name: "afp1", Type: vppif.Interface_AF_PACKET, Enabled: true, PhysAddress: "02:00:00:00:21:02", Mtu: 1500,
			IpAddresses: []string{"10.25.0.1/24"},
			Link:        &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: hostIf1}}},
		{Name: "mm-eth", Type: vppif.Interface_MEMIF, Enabled: true, PhysAddress: "02:00:00:00:21:03", Mtu: 1500,
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 21, SocketFilename: e.runtimeFile("na-insync-eth.sock"),
				RingSize: 2048, BufferSize: 4096, RxQueues: 2, TxQueues: 2, Secret: "s3cr3t"}}},
		{Name: "ms-ip", Type: vppif.Interface_MEMIF, Enabled: true, IpAddresses: []string{"10.26.0.1/30"},
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Mode: vppif.MemifLink_IP, Id: 22, SocketFilename: "na-insync/ip.sock",
				RingSize: 512, BufferSize: 1024}}},
	}
}

// checkEveryType checks, with dumps, that VPP has what cfg (everyType, or a
// configuration derived from it) says, field by field.
func checkEveryType(t *testing.T, e *env, cfg []*vppif.Interface) {
	t.Helper()
	memifs, socks, afps := e.vpp.DumpMemifs(), e.vpp.DumpMemifSockets(), e.vpp.DumpAfPackets()
	for _, v := range cfg {
		i, ok := e.tagged(v.GetName())
		if !ok {
			t.Errorf("%s: not in VPP", v.GetName())
			continue
		}
		var diffs []string
		differs := func(field string, have, want any) {
			diffs = append(diffs, fmt.Sprintf("%s %v, want %v", field, have, want))
		}
		if i.AdminUp != v.GetEnabled() {
			differs("admin up", i.AdminUp, v.GetEnabled())
		}
		if mac := v.GetPhysAddress(); mac != "" && !strings.EqualFold(i.MAC, mac) {
			differs("MAC", i.MAC, mac)
		}
		if mtu := v.GetMtu(); mtu != 0 && i.MTU != [4]uint32{mtu, 0, 0, 0} {
			differs("MTU", i.MTU, mtu)
		}
		if i.IP4Table != v.GetVrf() || i.IP6Table != v.GetVrf() {
			differs("VRF", [2]uint32{i.IP4Table, i.IP6Table}, v.GetVrf())
		}
		want := slices.Clone(v.GetIpAddresses())
		slices.SortFunc(want, func(a, b string) int { return netip.MustParsePrefix(a).Addr().Compare(netip.MustParsePrefix(b).Addr()) })
		if !slices.Equal(i.Addresses, want) {
			differs("addresses", i.Addresses, want)
		}
		if donor := v.GetUnnumbered().GetInterfaceWithIp(); donor != "" {
			if d, ok := e.tagged(donor); !ok || i.UnnumberedFrom != d.SwIfIndex {
				differs("unnumbered from", i.UnnumberedFrom, donor)
			}
		} else if i.UnnumberedFrom != vpptest.NoIndex {
			differs("unnumbered from", i.UnnumberedFrom, "none")
		}
		switch v.GetType() {
		case vppif.Interface_SUB_INTERFACE:
			parent, _ := e.tagged(v.GetSub().GetParentName())
			if !i.IsSub() || i.SupSwIfIndex != parent.SwIfIndex || i.SubID != v.GetSub().GetSubId() || uint32(i.OuterVlanID) != v.GetSub().GetSubId() {
				differs("sub-interface", i, v.GetSub())
			}
		case vppif.Interface_AF_PACKET:
			if afps[i.SwIfIndex] != v.GetAfpacket().GetHostIfName() {
				differs("host interface", afps[i.SwIfIndex], v.GetAfpacket().GetHostIfName())
			}
		case vppif.Interface_MEMIF:
			m, w := memifs[i.SwIfIndex], v.GetMemif()
			wantRole := memif.MEMIF_ROLE_API_SLAVE
			if w.GetMaster() {
				wantRole = memif.MEMIF_ROLE_API_MASTER
			}
			switch {
			case m == nil:
				differs("memif", nil, w)
			case m.Role != wantRole || m.ID != w.GetId() || uint32(m.Mode) != uint32(w.GetMode()):
				differs("memif role/id/mode", m, w)
			case socks[m.SocketID] != vppcalls.MemifSocketPath(e.runtimeDir(), w.GetSocketFilename()):
				differs("memif socket", socks[m.SocketID], w.GetSocketFilename())
			case w.GetMode() == vppif.MemifLink_IP && i.MAC != "00:00:00:00:00:00":
				differs("IP-mode memif MAC", i.MAC, "none")
			}
		}
		if len(diffs) > 0 {
			t.Errorf("%s (%s) in VPP differs from its value: %s", v.GetName(), i.Name, strings.Join(diffs, "; "))
		}
	}
}

// TestResyncInSyncEveryType: VPP as configured, with every interface type
// and field; resyncs of the running agent and of a restarted one execute
// nothing (and send VPP nothing), the memifs connected to a peer or not.
// VPP's memif_dump reports run-time ring and buffer sizes (the configured
// ones are kept from the configuration).
func TestResyncInSyncEveryType(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	e.vpp.HostLinks(hostIf1)
	if e.vpp.Real() {
		t.Cleanup(func() { _ = os.RemoveAll(path.Join(e.runtimeDir(), "na-insync")) }) // VPP made it for ms-ip's socket
	}
	pushHost(t, e.s)
	cfg := e.everyType()
	e.commit(cfg...)
	for _, v := range cfg {
		e.wantState(ifplugin.InterfaceKey(v.GetName()), api.ValueStateConfigured)
	}
	checkEveryType(t, e, cfg)

	// What VPP reports of the memifs is not what they were created with.
	mm, ms := e.mustVPP("mm-eth"), e.mustVPP("ms-ip")
	memifs := e.vpp.DumpMemifs()
	for _, i := range []vpptest.Interface{mm, ms} {
		if d := memifs[i.SwIfIndex]; d == nil || d.RingSize != 1 || d.BufferSize != 0 {
			t.Errorf("memif_dump of %s, not connected: %+v, want ring_size 1, buffer_size 0", i.Name, d)
		}
	}
	if ms.MAC != "00:00:00:00:00:00" {
		t.Errorf("IP-mode memif %s has MAC %s", ms.Name, ms.MAC)
	}

	inSync := func(when string) {
		t.Helper()
		if ops, w := e.resyncOps(cfg); len(ops) != 0 || len(w) != 0 {
			t.Errorf("%s executed %v, wrote %v; want nothing", when, ops, w)
		}
		for _, v := range cfg {
			e.wantState(ifplugin.InterfaceKey(v.GetName()), api.ValueStateConfigured)
		}
	}
	inSync("resync")
	e.restart()
	pushHost(t, e.s)
	inSync("resync of a restarted agent")

	// A peer connects to the master (a slave made behind the agent's back,
	// on another registration of the same socket file): still in sync.
	master := cfg[6].GetMemif()
	peer := e.connectPeer(master.GetSocketFilename(), master.GetId(), master.GetSecret())
	memifs = e.vpp.DumpMemifs()
	if d := memifs[mm.SwIfIndex]; d.RingSize != 1 || d.BufferSize != 0 {
		t.Errorf("memif_dump of the connected master: %+v, want ring_size 1, buffer_size 0", d)
	}
	if d := memifs[peer]; d.RingSize != 1024 || d.BufferSize != 2048 {
		t.Errorf("memif_dump of the connected slave: %+v, want its own ring_size 1024, buffer_size 2048", d)
	}
	inSync("resync with the master connected")
	e.restart()
	pushHost(t, e.s)
	inSync("resync of a restarted agent with the master connected")
	checkEveryType(t, e, cfg)
}

// connectPeer makes a slave memif behind the agent's back (untagged, so
// foreign) on a registration of its own of socket file sock, connects it
// to the agent's master of that id and secret (vppsim: SetLinkUp; a real
// VPP: both up, waiting for the link, 10 s at most) and returns its
// sw_if_index.
func (e *env) connectPeer(sock string, id uint32, secret string) uint32 {
	e.t.Helper()
	mc := e.memifClient()
	ctx := context.Background()
	reg, err := mc.MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: vppcalls.NoIndex, SocketFilename: sock})
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := mc.MemifCreateV2(ctx, &memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_SLAVE, SocketID: reg.SocketID, ID: id, Secret: secret, RxQueues: 1, TxQueues: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.interfacesClient().SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: r.SwIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}); err != nil {
		e.t.Fatal(err)
	}
	peer := uint32(r.SwIfIndex)
	master := e.mustVPP("mm-eth").SwIfIndex
	if e.sim != nil {
		for _, idx := range []uint32{master, peer} {
			if err := e.sim.SetLinkUp(idx, true); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		up := 0
		for _, i := range e.vpp.DumpInterfaces() {
			if (i.SwIfIndex == master || i.SwIfIndex == peer) && i.LinkUp {
				up++
			}
		}
		if up == 2 {
			return peer
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the memif peer %d and master %d are not connected within 10 s", peer, master)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// memifClient calls VPP's memif API behind the agent's back.
func (e *env) memifClient() memif.RPCService {
	e.t.Helper()
	return memif.NewServiceClient(e.conn(vppcalls.MemifAreaName))
}

// TestDriftRepaired: changes made behind the agent's back (as with vppctl,
// through the binary API, which vppsim serves too), one per field and
// interface type, are found by a resync and repaired; the next resync
// executes nothing.
func TestDriftRepaired(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	e.vpp.HostLinks(hostIf1)
	if e.vpp.Real() {
		t.Cleanup(func() { _ = os.RemoveAll(path.Join(e.runtimeDir(), "na-insync")) })
	}
	pushHost(t, e.s)
	cfg := e.everyType()
	e.commit(cfg...)
	checkEveryType(t, e, cfg)

	ic, mc, ctx := e.interfacesClient(), e.memifClient(), context.Background()
	idx := func(name string) interface_types.InterfaceIndex {
		return interface_types.InterfaceIndex(e.mustVPP(name).SwIfIndex)
	}
	do := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var err error
	// lo1: another MAC, admin down.
	_, err = ic.SwInterfaceSetMacAddress(ctx, &interfaces.SwInterfaceSetMacAddress{SwIfIndex: idx("lo1"), MacAddress: ethernet_types.MacAddress{2, 0, 0, 0, 0x99, 1}})
	do("MAC of lo1", err)
	_, err = ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: idx("lo1")})
	do("lo1 down", err)
	// sub1: an IPv4 MTU of its own ("set interface mtu ip4 1200").
	_, err = ic.SwInterfaceSetMtu(ctx, &interfaces.SwInterfaceSetMtu{SwIfIndex: idx("sub1"), Mtu: []uint32{0, 1200, 0, 0}})
	do("IPv4 MTU of sub1", err)
	// afp1: another L3 MTU ("set interface mtu packet 1400").
	_, err = ic.SwInterfaceSetMtu(ctx, &interfaces.SwInterfaceSetMtu{SwIfIndex: idx("afp1"), Mtu: []uint32{1400, 0, 0, 0}})
	do("MTU of afp1", err)
	// lo-vrf: back in VRF 0 (its addresses go first, as VPP requires).
	for _, a := range []string{"10.22.0.1/24", "2001:db8:22::1/64"} {
		_, err = ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: idx("lo-vrf"), Prefix: mustAddr(a)})
		do("address of lo-vrf", err)
	}
	for _, ipv6 := range []bool{false, true} {
		_, err = ic.SwInterfaceSetTable(ctx, &interfaces.SwInterfaceSetTable{SwIfIndex: idx("lo-vrf"), IsIPv6: ipv6, VrfID: 0})
		do("VRF of lo-vrf", err)
	}
	// un1: no longer unnumbered.
	_, err = ic.SwInterfaceSetUnnumbered(ctx, &interfaces.SwInterfaceSetUnnumbered{SwIfIndex: idx("un1"), UnnumberedSwIfIndex: idx("un1")})
	do("unnumbered of un1", err)
	// lo-down: deleted.
	_, err = ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: idx("lo-down")})
	do("deleting lo-down", err)
	// mm-eth: deleted.
	_, err = mc.MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: idx("mm-eth")})
	do("deleting mm-eth", err)
	// ms-ip: made again as a master of another id, with its tag.
	msSock := e.vpp.DumpMemifs()[uint32(idx("ms-ip"))].SocketID
	_, err = mc.MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: idx("ms-ip")})
	do("deleting ms-ip", err)
	r, err := mc.MemifCreateV2(ctx, &memif.MemifCreateV2{Role: memif.MEMIF_ROLE_API_MASTER, Mode: memif.MEMIF_MODE_API_IP, SocketID: msSock, ID: 23, RxQueues: 1, TxQueues: 1})
	do("ms-ip as a master", err)
	_, err = ic.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: r.SwIfIndex, Tag: "ms-ip"})
	do("tagging ms-ip", err)

	ops, _ := e.resyncOps(cfg)
	for _, want := range []string{
		"UPDATE " + ifplugin.InterfaceKey("lo1"),
		"CREATE " + ifplugin.AdminStateKey("lo1", true),
		"UPDATE " + ifplugin.InterfaceKey("sub1"),
		"UPDATE " + ifplugin.InterfaceKey("afp1"),
		"CREATE " + ifplugin.VRFKey("lo-vrf", 21, "v4"),
		"CREATE " + ifplugin.VRFKey("lo-vrf", 21, "v6"),
		"CREATE " + ifplugin.AddressKey("lo-vrf", "10.22.0.1/24"),
		"CREATE " + ifplugin.UnnumberedKey("un1"),
		"CREATE " + ifplugin.InterfaceKey("lo-down"),
		"CREATE " + ifplugin.InterfaceKey("mm-eth"),
		"CREATE " + ifplugin.InterfaceKey("ms-ip"),
	} {
		if !slices.Contains(ops, want) {
			t.Errorf("the resync did not execute %s: %v", want, ops)
		}
	}
	checkEveryType(t, e, cfg)
	if ops, w := e.resyncOps(cfg); len(ops) != 0 || len(w) != 0 {
		t.Errorf("the resync after the repair executed %v, wrote %v", ops, w)
	}
	if got := e.untagged(); len(got) != 0 {
		t.Errorf("untagged interfaces left: %v", got)
	}
}

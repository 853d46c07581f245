package vppsim_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"go.fd.io/govpp"
	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/vxlan"

	"github.com/netagent-io/netagent/tests/vpprun"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// TestVxlanAsVPP: vxlan_add_del_tunnel_v3 and vxlan_tunnel_v2_dump behave
// as VPP 25.10's. The same body runs against a real VPP when the
// environment gives one (NETAGENT_VPP_DIR or VPP_API_SOCKET), and removes
// what it made there.
func TestVxlanAsVPP(t *testing.T) {
	t.Run("vppsim", func(t *testing.T) {
		s := startSim(t, vppsim.Options{})
		vxlanAsVPP(t, s.SocketPath())
		// The tunnel holds its encap table: deleting the table through
		// the API leaves it while the tunnel is there (VPP 25.10 crashes
		// there, which vppsim does not imitate; the agent deletes the
		// tunnel first).
		conn := connect(t, s)
		ipc, vx := ip.NewServiceClient(conn), vxlan.NewServiceClient(conn)
		must(ipc.IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 252}}))(t)
		must(vx.VxlanAddDelTunnelV3(ctx, vxlanReq(true, "10.252.9.1", "10.252.9.2", 9, 252, ^uint32(0))))(t)
		must(ipc.IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: false, Table: ip.IPTable{TableID: 252}}))(t)
		if !hasTable(s.Tables(), 252, false) {
			t.Errorf("the encap table of a tunnel went with ip_table_add_del: %+v", s.Tables())
		}
		must(vx.VxlanAddDelTunnelV3(ctx, vxlanReq(false, "10.252.9.1", "10.252.9.2", 9, 252, ^uint32(0))))(t)
		if hasTable(s.Tables(), 252, false) {
			t.Errorf("the encap table outlived its tunnel after its delete: %+v", s.Tables())
		}
	})
	t.Run("VPP", func(t *testing.T) {
		if os.Geteuid() != 0 && vpprun.Dir() != "" {
			t.Skipf("a VPP of the tests' own (%s) needs root", vpprun.DirEnv)
		}
		v, err := vpprun.ForTests()
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			t.Skipf("no real VPP: set %s or %s", vpprun.DirEnv, vpprun.SocketEnv)
		}
		unlock, err := vpprun.Lock(v.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		vxlanAsVPP(t, v.Socket)
	})
}

func hasTable(ts []vppsim.Table, id uint32, ipv6 bool) bool {
	for _, tb := range ts {
		if tb.ID == id && tb.IPv6 == ipv6 {
			return true
		}
	}
	return false
}

func vxlanReq(add bool, src, dst string, vni, vrf, mcast uint32) *vxlan.VxlanAddDelTunnelV3 {
	s, _ := ip_types.ParseAddress(src)
	d, _ := ip_types.ParseAddress(dst)
	return &vxlan.VxlanAddDelTunnelV3{
		IsAdd: add, Instance: ^uint32(0), SrcAddress: s, DstAddress: d,
		McastSwIfIndex: interface_types.InterfaceIndex(mcast), EncapVrfID: vrf, DecapNextIndex: ^uint32(0), Vni: vni,
	}
}

func vxlanAsVPP(t *testing.T, socket string) {
	conn, err := govpp.Connect(socket)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(conn.Disconnect)
	vx, ic, ipc := vxlan.NewServiceClient(conn), interfaces.NewServiceClient(conn), ip.NewServiceClient(conn)
	const none = ^uint32(0)

	// What the body makes is removed at the end, also when it fails
	// midway: tunnels (by key), then the loopback and the table.
	var made []*vxlan.VxlanAddDelTunnelV3
	add := func(r *vxlan.VxlanAddDelTunnelV3) (*vxlan.VxlanAddDelTunnelV3Reply, error) {
		reply, err := vx.VxlanAddDelTunnelV3(ctx, r)
		if err == nil {
			d := *r
			d.IsAdd = false
			made = append(made, &d)
		}
		return reply, err
	}
	del := func(r *vxlan.VxlanAddDelTunnelV3) error {
		_, err := vx.VxlanAddDelTunnelV3(ctx, r)
		return err
	}
	var loop interface_types.InterfaceIndex = interface_types.InterfaceIndex(none)
	tableMade := false
	t.Cleanup(func() {
		for k := len(made) - 1; k >= 0; k-- {
			_, _ = vx.VxlanAddDelTunnelV3(ctx, made[k]) // NO_SUCH_ENTRY for those the body deleted
		}
		if loop != interface_types.InterfaceIndex(none) {
			_, _ = ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: loop})
		}
		if tableMade {
			_, _ = ipc.IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: false, Table: ip.IPTable{TableID: 2520}})
		}
	})
	tunnels := func() map[interface_types.InterfaceIndex]*vxlan.VxlanTunnelV2Details {
		t.Helper()
		out := map[interface_types.InterfaceIndex]*vxlan.VxlanTunnelV2Details{}
		for _, d := range collect(t, must(vx.VxlanTunnelV2Dump(ctx, &vxlan.VxlanTunnelV2Dump{SwIfIndex: interface_types.InterfaceIndex(none)}))(t).Recv) {
			out[d.SwIfIndex] = d
		}
		return out
	}
	swIf := func(idx interface_types.InterfaceIndex) *interfaces.SwInterfaceDetails {
		t.Helper()
		ds := collect(t, must(ic.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: idx}))(t).Recv)
		if len(ds) != 1 {
			t.Fatalf("sw_interface_dump of %d: %d details", idx, len(ds))
		}
		return ds[0]
	}

	// A unicast IPv4 tunnel: vxlan_tunnel<instance>, an Ethernet interface
	// with a 02:fe MAC, admin and link up, MTU 9000; the dump reports
	// VPP's defaults (ports 4789, decap next l2-input = 1).
	a := must(add(vxlanReq(true, "10.252.0.1", "10.252.0.2", 100, 0, none)))(t).SwIfIndex
	da := tunnels()[a]
	if da == nil || da.SrcAddress.String() != "10.252.0.1" || da.DstAddress.String() != "10.252.0.2" || da.Vni != 100 ||
		da.SrcPort != 4789 || da.DstPort != 4789 || da.EncapVrfID != 0 || da.DecapNextIndex != 1 || da.McastSwIfIndex != interface_types.InterfaceIndex(none) {
		t.Fatalf("vxlan_tunnel_v2_dump of the new tunnel: %+v", da)
	}
	if only := collect(t, must(vx.VxlanTunnelV2Dump(ctx, &vxlan.VxlanTunnelV2Dump{SwIfIndex: a}))(t).Recv); len(only) != 1 || only[0].SwIfIndex != a {
		t.Errorf("vxlan_tunnel_v2_dump of sw_if_index %d: %+v", a, only)
	}
	if other := collect(t, must(vx.VxlanTunnelV2Dump(ctx, &vxlan.VxlanTunnelV2Dump{SwIfIndex: 0}))(t).Recv); len(other) != 0 {
		t.Errorf("vxlan_tunnel_v2_dump of local0: %+v, want nothing", other)
	}
	sa := swIf(a)
	const upLink = interface_types.IF_STATUS_API_FLAG_ADMIN_UP | interface_types.IF_STATUS_API_FLAG_LINK_UP
	if sa.InterfaceName != fmt.Sprintf("vxlan_tunnel%d", da.Instance) || sa.InterfaceDevType != "VXLAN" || sa.Flags != upLink ||
		!strings.HasPrefix(sa.L2Address.String(), "02:fe:") || sa.Mtu[0] != 9000 || sa.LinkMtu != 9000 || sa.Type != interface_types.IF_API_TYPE_HARDWARE {
		t.Errorf("sw_interface_dump of the tunnel: %+v", sa)
	}
	// Link follows the admin state.
	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: a, Flags: 0}))(t)
	if f := swIf(a).Flags; f != 0 {
		t.Errorf("admin down: flags %v, want none", f)
	}

	// The same key again, and keys VPP takes for it.
	_, err = add(vxlanReq(true, "10.252.0.1", "10.252.0.2", 100, 0, none))
	wantVPPError(t, err, api.TUNNEL_EXIST)
	// VPP keys a tunnel by the VNI's low 24 bits.
	_, err = add(vxlanReq(true, "10.252.0.1", "10.252.0.2", 100+1<<24, 0, none))
	wantVPPError(t, err, api.TUNNEL_EXIST)
	// IPv4 unicast: the source is part of the key.
	b := must(add(vxlanReq(true, "10.252.0.3", "10.252.0.2", 100, 0, none)))(t).SwIfIndex
	v6 := must(add(vxlanReq(true, "2001:db8:252::1", "2001:db8:252::2", 100, 0, none)))(t).SwIfIndex
	_, err = add(vxlanReq(true, "2001:db8:252::9", "2001:db8:252::2", 100, 0, none))
	wantVPPError(t, err, api.TUNNEL_EXIST) // IPv6: the source is not

	// The checks, in VPP's order.
	_, err = add(vxlanReq(true, "10.252.0.1", "10.252.0.2", 101, 2520, none))
	wantVPPError(t, err, api.NO_SUCH_FIB)
	_, err = add(vxlanReq(true, "10.252.0.1", "2001:db8:252::2", 101, 0, none))
	wantVPPError(t, err, api.INVALID_VALUE)
	_, err = add(vxlanReq(true, "10.252.0.1", "10.252.0.1", 101, 0, none))
	wantVPPError(t, err, api.SAME_SRC_DST)
	_, err = add(vxlanReq(true, "10.252.0.1", "239.252.0.1", 101, 0, none))
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)
	_, err = add(vxlanReq(true, "10.252.0.1", "10.252.0.2", 101, 0, 1<<30))
	if err != nil {
		t.Errorf("a unicast tunnel with an unknown multicast interface: %v, want it made (VPP checks it for multicast only)", err)
	}
	err = del(vxlanReq(false, "10.252.0.9", "10.252.0.2", 100, 0, none))
	wantVPPError(t, err, api.NO_SUCH_ENTRY)

	// An encap VRF, a multicast tunnel.
	must(ipc.IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 2520}}))(t)
	tableMade = true
	inVrf := must(add(vxlanReq(true, "10.252.0.1", "10.252.0.2", 100, 2520, none)))(t).SwIfIndex
	loop = must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	mc := must(add(vxlanReq(true, "10.252.0.1", "239.252.0.1", 102, 0, uint32(loop))))(t).SwIfIndex
	_, err = add(vxlanReq(true, "10.252.0.5", "239.252.0.1", 102, 0, uint32(loop)))
	wantVPPError(t, err, api.TUNNEL_EXIST) // IPv4 multicast: the source is not part of the key
	all := tunnels()
	if d := all[inVrf]; d == nil || d.EncapVrfID != 2520 {
		t.Errorf("tunnel in encap VRF 2520: %+v", d)
	}
	if d := all[mc]; d == nil || d.McastSwIfIndex != loop || d.DstAddress.String() != "239.252.0.1" {
		t.Errorf("multicast tunnel: %+v (loopback %d)", d, loop)
	}
	for _, idx := range []interface_types.InterfaceIndex{a, b, v6, inVrf, mc} {
		if all[idx] == nil {
			t.Errorf("tunnel %d missing from the dump: %+v", idx, all)
		}
	}
	// A multicast tunnel's delete checks its interface too.
	err = del(vxlanReq(false, "10.252.0.1", "239.252.0.1", 102, 0, none))
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)

	// Delete goes by key (here with another decap next and instance than
	// the tunnel's); the pool slot freed last is reused first.
	freed := all[a].Instance
	r := vxlanReq(false, "10.252.0.1", "10.252.0.2", 100, 0, none)
	r.DecapNextIndex, r.Instance = 0, 7
	if err := del(r); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, ok := tunnels()[a]; ok {
		t.Errorf("tunnel %d still dumped after its delete", a)
	}
	if ds := collect(t, must(ic.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: a}))(t).Recv); len(ds) != 0 {
		t.Errorf("interface %d still there after the delete of its tunnel: %+v", a, ds)
	}
	err = del(vxlanReq(false, "10.252.0.1", "10.252.0.2", 100, 0, none))
	wantVPPError(t, err, api.NO_SUCH_ENTRY)
	c := must(add(vxlanReq(true, "10.252.0.1", "10.252.0.2", 103, 0, none)))(t).SwIfIndex
	if d := tunnels()[c]; d == nil || d.Instance != freed {
		t.Errorf("new tunnel after a delete: %+v, want instance %d (the slot freed last)", d, freed)
	}
	// An instance asked for and in use.
	req := vxlanReq(true, "10.252.0.1", "10.252.0.2", 104, 0, none)
	req.Instance = freed
	_, err = add(req)
	wantVPPError(t, err, api.INSTANCE_IN_USE)
	// An IPv6 address whose first 12 bytes are zero is IPv4 to VPP.
	compat := must(add(vxlanReq(true, "::10.252.0.7", "10.252.0.2", 105, 0, none)))(t).SwIfIndex
	if d := tunnels()[compat]; d == nil || d.SrcAddress.String() != "10.252.0.7" {
		t.Errorf("tunnel from ::10.252.0.7: %+v, want it from 10.252.0.7", d)
	}
	// delete_loopback does not delete a tunnel.
	_, err = ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: c})
	wantVPPError(t, err, api.INVALID_SW_IF_INDEX)
}

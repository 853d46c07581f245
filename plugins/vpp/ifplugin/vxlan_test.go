package ifplugin_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/vxlan"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func vxlanIf(name, src, dst string, vni uint32) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_VXLAN_TUNNEL, Enabled: true,
		Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{SrcAddress: src, DstAddress: dst, Vni: vni}}}
}

// vxlanOf returns the tunnel VPP has tagged name, read back with
// vxlan_tunnel_v2_dump, and fails the test when there is none.
func (e *env) vxlanOf(name string) (vpptest.Interface, *vxlan.VxlanTunnelV2Details) {
	e.t.Helper()
	i := e.mustVPP(name)
	d := e.vpp.DumpVxlans()[i.SwIfIndex]
	if d == nil {
		e.t.Fatalf("%s (%s) is no VXLAN tunnel in VPP", name, i.Name)
	}
	return i, d
}

// wantTunnel checks the key of a tunnel VPP reports.
func wantTunnel(t *testing.T, d *vxlan.VxlanTunnelV2Details, src, dst string, vni, vrf uint32) {
	t.Helper()
	if d.SrcAddress.String() != src || d.DstAddress.String() != dst || d.Vni != vni || d.EncapVrfID != vrf ||
		d.SrcPort != 4789 || d.DstPort != 4789 || d.DecapNextIndex != 1 {
		t.Errorf("tunnel %+v, want from %s to %s, VNI %d, encap VRF %d, port 4789, decap l2-input", d, src, dst, vni, vrf)
	}
}

// vxlanTagged counts VPP's tunnels whose interface is tagged name.
func (e *env) vxlanTagged(name string) int {
	e.t.Helper()
	n, tunnels := 0, e.vpp.DumpVxlans()
	for _, i := range e.vpp.DumpInterfaces() {
		if i.Tag == name && tunnels[i.SwIfIndex] != nil {
			n++
		}
	}
	return n
}

// recreated tells whether a transaction re-created the interface name.
func recreated(s api.KVScheduler, seq uint64, name string) bool {
	for _, op := range s.GetRecordedTransaction(seq).Executed {
		if op.Key == ifplugin.InterfaceKey(name) && op.IsRecreate {
			return true
		}
	}
	return false
}

// TestVxlanCreateUpdateDelete: a VXLAN tunnel is created with its settings
// (tag, MAC, MTU, addresses, admin state); MTU, MAC, admin state and
// addresses change in place; a change of the ends, the VNI or the encap
// VRF (vrf), which VPP fixes at creation, re-creates the tunnel with its
// settings; Delete removes it.
func TestVxlanCreateUpdateDelete(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	tunnelsBefore := len(e.vpp.DumpVxlans())
	vx := vxlanIf("vx1", "10.71.0.1", "10.71.0.2", 71)
	vx.IpAddresses, vx.Mtu, vx.PhysAddress = []string{"10.72.0.1/24"}, 1450, "02:00:00:00:71:01"
	e.commit(vx)
	e.wantState(ifplugin.InterfaceKey("vx1"), api.ValueStateConfigured)
	i, d := e.vxlanOf("vx1")
	wantTunnel(t, d, "10.71.0.1", "10.71.0.2", 71, 0)
	if i.DevType != "VXLAN" || i.Name != fmt.Sprintf("vxlan_tunnel%d", d.Instance) || !i.AdminUp || !i.LinkUp ||
		i.MAC != "02:00:00:00:71:01" || i.MTU != [4]uint32{1450, 0, 0, 0} || addrs(i) != "10.72.0.1/24" {
		t.Errorf("vx1 in VPP: %+v", i)
	}
	mm := e.s.GetMetadataMap(ifplugin.InterfaceDescriptorName)
	if v, ok := mm.GetValue("vx1"); !ok || v.(*ifplugin.Metadata).SwIfIndex != i.SwIfIndex || v.(*ifplugin.Metadata).InternalName != i.Name {
		t.Errorf("metadata of vx1: %+v, VPP %d %s", v, i.SwIfIndex, i.Name)
	}

	// In place: MTU, MAC, admin state, addresses.
	u := clone(vx)
	u.Mtu, u.PhysAddress, u.Enabled = 1400, "02:00:00:00:71:02", false
	u.IpAddresses = []string{"10.72.0.1/24", "2001:db8:72::1/64"}
	seq := e.commit(u)
	if recreated(e.s, seq, "vx1") || !slices.Contains(executed(e.s, seq), "UPDATE "+ifplugin.InterfaceKey("vx1")) {
		t.Errorf("MTU and MAC changed by %v, want an update in place", executed(e.s, seq))
	}
	i2, d2 := e.vxlanOf("vx1")
	if i2.SwIfIndex != i.SwIfIndex || d2.Instance != d.Instance || i2.AdminUp || i2.MAC != "02:00:00:00:71:02" || i2.MTU[0] != 1400 ||
		addrs(i2) != "10.72.0.1/24,2001:db8:72::1/64" {
		t.Errorf("vx1 after the update in place: %+v (was sw_if_index %d)", i2, i.SwIfIndex)
	}

	// Fixed at creation: each change re-creates the tunnel, with its
	// settings.
	for _, c := range []struct {
		what     string
		change   func(*vppif.Interface)
		src, dst string
		vni, vrf uint32
	}{
		{"VNI", func(v *vppif.Interface) { v.GetVxlan().Vni = 72 }, "10.71.0.1", "10.71.0.2", 72, 0},
		{"source", func(v *vppif.Interface) { v.GetVxlan().SrcAddress = "10.71.0.3" }, "10.71.0.3", "10.71.0.2", 72, 0},
		{"destination", func(v *vppif.Interface) { v.GetVxlan().DstAddress = "10.71.0.4" }, "10.71.0.3", "10.71.0.4", 72, 0},
		{"encap VRF", func(v *vppif.Interface) { v.Vrf = 73 }, "10.71.0.3", "10.71.0.4", 72, 73},
	} {
		u = clone(u) // the scheduler keeps the value committed
		c.change(u)
		seq := e.commit(u)
		if !recreated(e.s, seq, "vx1") {
			t.Errorf("%s changed by %v, want the tunnel re-created", c.what, executed(e.s, seq))
		}
		e.wantState(ifplugin.InterfaceKey("vx1"), api.ValueStateConfigured)
		i3, d3 := e.vxlanOf("vx1")
		wantTunnel(t, d3, c.src, c.dst, c.vni, c.vrf)
		if n := e.vxlanTagged("vx1"); n != 1 {
			t.Errorf("%s changed: VPP has %d tunnels tagged vx1", c.what, n)
		}
		if i3.AdminUp || i3.MAC != "02:00:00:00:71:02" || i3.MTU[0] != 1400 || addrs(i3) != "10.72.0.1/24,2001:db8:72::1/64" ||
			i3.IP4Table != c.vrf || i3.IP6Table != c.vrf {
			t.Errorf("%s changed: the new tunnel %+v lacks vx1's settings", c.what, i3)
		}
	}
	if len(e.vpp.DumpVxlans()) != tunnelsBefore+1 {
		t.Errorf("VPP has the tunnels %+v, want vx1's only", e.vpp.DumpVxlans())
	}

	e.del("vx1")
	if got := e.newInterfaces(); len(got) != 0 {
		t.Errorf("after delete, VPP has %v", got)
	}
	if got := e.vpp.DumpVxlans(); len(got) != 0 {
		t.Errorf("after delete, VPP has the tunnels %+v", got)
	}
	if _, ok := mm.GetValue("vx1"); ok {
		t.Error("metadata left after delete")
	}
}

// TestVxlanResyncInSync: tunnels of every kind (IPv4, IPv6, in an encap
// VRF, multicast on a loopback) as configured: full resyncs of the running
// agent and of a restarted one execute nothing and send VPP nothing; the
// values VPP reports are the configured ones.
func TestVxlanResyncInSync(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	v4 := vxlanIf("vx4", "10.74.0.1", "10.74.0.2", 74)
	v4.IpAddresses, v4.Mtu, v4.PhysAddress = []string{"10.75.0.1/24"}, 1450, "02:00:00:00:74:01"
	v6 := vxlanIf("vx6", "2001:DB8:74::1", "2001:db8:74::2", 76) // VPP reports the address in lower case
	v6.Enabled = false
	inVrf := vxlanIf("vx-vrf", "10.74.0.1", "10.74.0.2", 74)
	inVrf.Vrf = 77
	mcastIf := loop("vx-mc-if", "10.74.1.1/24")
	mc := vxlanIf("vx-mc", "10.74.1.1", "239.74.0.1", 78)
	mc.GetVxlan().Multicast = "vx-mc-if"
	cfg := []*vppif.Interface{v4, v6, inVrf, mcastIf, mc}
	e.commit(cfg...)
	for _, v := range cfg {
		e.wantState(ifplugin.InterfaceKey(v.GetName()), api.ValueStateConfigured)
	}
	_, d := e.vxlanOf("vx-vrf")
	wantTunnel(t, d, "10.74.0.1", "10.74.0.2", 74, 77)
	_, d = e.vxlanOf("vx6")
	wantTunnel(t, d, "2001:db8:74::1", "2001:db8:74::2", 76, 0)
	mcIdx := e.mustVPP("vx-mc-if").SwIfIndex
	if _, d := e.vxlanOf("vx-mc"); uint32(d.McastSwIfIndex) != mcIdx {
		t.Errorf("vx-mc's multicast interface: %d, want vx-mc-if's %d", d.McastSwIfIndex, mcIdx)
	}

	for _, when := range []string{"resync", "resync of a restarted agent"} {
		if when != "resync" {
			e.restart()
		}
		if ops, w := e.resyncOps(cfg); len(ops) != 0 || len(w) != 0 {
			t.Errorf("%s executed %v, wrote %v; want nothing", when, ops, w)
		}
	}
	dump, err := e.s.DumpValuesByDescriptor(ifplugin.InterfaceDescriptorName, api.SBView)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range cfg {
		i := slices.IndexFunc(dump, func(kv api.KVWithMetadata) bool { return kv.Key == ifplugin.InterfaceKey(v.GetName()) })
		if i < 0 {
			t.Errorf("%s missing from the SB view", v.GetName())
			continue
		}
		if got := dump[i].Value; !proto.Equal(got, v) {
			t.Errorf("VPP's %s: %v, want %v", v.GetName(), got, v)
		}
	}
}

// TestVxlanDriftRepaired: a tunnel deleted behind the agent's back, and
// one made again by hand (with its tag) with another VNI, are found by a
// resync and created again as configured; the next resync executes
// nothing.
func TestVxlanDriftRepaired(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	a, b := vxlanIf("vx-a", "10.79.0.1", "10.79.0.2", 79), vxlanIf("vx-b", "10.79.0.1", "10.79.0.3", 80)
	a.IpAddresses = []string{"10.80.0.1/24"}
	cfg := []*vppif.Interface{a, b}
	e.commit(cfg...)
	h := vppcalls.NewHandler(e.m)
	ctx := context.Background()
	if err := h.DeleteVxlan(ctx, e.mustVPP("vx-a").SwIfIndex); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteVxlan(ctx, e.mustVPP("vx-b").SwIfIndex); err != nil {
		t.Fatal(err)
	}
	idx, err := h.CreateVxlan(ctx, vppcalls.VxlanParams{Src: mustIP("10.79.0.1"), Dst: mustIP("10.79.0.3"), VNI: 81, McastSwIfIndex: vppcalls.NoIndex})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetTag(ctx, idx, "vx-b"); err != nil {
		t.Fatal(err)
	}

	ops, _ := e.resyncOps(cfg)
	for _, want := range []string{"CREATE " + ifplugin.InterfaceKey("vx-a"), "CREATE " + ifplugin.InterfaceKey("vx-b"), "CREATE " + ifplugin.AddressKey("vx-a", "10.80.0.1/24")} {
		if !slices.Contains(ops, want) {
			t.Errorf("the resync executed %v, want %s among them", ops, want)
		}
	}
	ia, da := e.vxlanOf("vx-a")
	wantTunnel(t, da, "10.79.0.1", "10.79.0.2", 79, 0)
	if addrs(ia) != "10.80.0.1/24" || !ia.AdminUp {
		t.Errorf("vx-a made again: %+v", ia)
	}
	_, db := e.vxlanOf("vx-b")
	wantTunnel(t, db, "10.79.0.1", "10.79.0.3", 80, 0)
	if n := e.vxlanTagged("vx-b"); n != 1 {
		t.Errorf("VPP has %d tunnels tagged vx-b", n)
	}
	if ops, w := e.resyncOps(cfg); len(ops) != 0 || len(w) != 0 {
		t.Errorf("the resync after the repair executed %v, wrote %v", ops, w)
	}
}

func mustIP(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestVxlanDependencies: a tunnel in an encap VRF waits (PENDING) for the
// VRF table of its IP version, a multicast tunnel for its multicast
// interface; both are created when those come, and deleted before them.
func TestVxlanDependencies(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	inVrf := vxlanIf("vx-dep-vrf", "2001:db8:81::1", "2001:db8:81::2", 81)
	inVrf.Vrf = 82
	mc := vxlanIf("vx-dep-mc", "10.81.0.1", "239.81.0.1", 83)
	mc.GetVxlan().Multicast = "vx-dep-if"
	txn := e.s.StartNBTransaction()
	txn.SetValue(ifplugin.InterfaceKey(inVrf.GetName()), inVrf)
	txn.SetValue(ifplugin.InterfaceKey(mc.GetName()), mc)
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	e.wantState(ifplugin.InterfaceKey("vx-dep-vrf"), api.ValueStatePending)
	e.wantState(ifplugin.InterfaceKey("vx-dep-mc"), api.ValueStatePending)
	if n := len(e.vpp.DumpVxlans()); n != 0 {
		t.Fatalf("VPP has %d tunnels while they wait", n)
	}
	_, st := stateOf(e.s, ifplugin.InterfaceKey("vx-dep-vrf"))
	if !strings.Contains(fmt.Sprint(st), "encap VRF table 82 (IPv6)") {
		t.Errorf("vx-dep-vrf waits for %v, want the encap VRF table 82 (IPv6) named", st)
	}

	// The IPv6 table: the tunnel, and its binding to the VRF (of the
	// tunnel's IP version: it has no addresses).
	txn = e.s.StartNBTransaction()
	txn.SetValue(models.VrfTableKey(82, true), &vppl3.VrfTable{Id: 82, Protocol: vppl3.VrfTable_IPV6})
	txn.SetValue(ifplugin.InterfaceKey("vx-dep-if"), loop("vx-dep-if", "10.81.0.1/24"))
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	e.wantState(ifplugin.InterfaceKey("vx-dep-vrf"), api.ValueStateConfigured)
	e.wantState(ifplugin.VRFKey("vx-dep-vrf", 82, "v6"), api.ValueStateConfigured)
	e.wantState(ifplugin.InterfaceKey("vx-dep-mc"), api.ValueStateConfigured)
	i, d := e.vxlanOf("vx-dep-vrf")
	wantTunnel(t, d, "2001:db8:81::1", "2001:db8:81::2", 81, 82)
	if i.IP6Table != 82 || i.IP4Table != 0 {
		t.Errorf("vx-dep-vrf bound to tables %d (IPv4), %d (IPv6), want IPv6 table 82 only", i.IP4Table, i.IP6Table)
	}
	if _, d := e.vxlanOf("vx-dep-mc"); uint32(d.McastSwIfIndex) != e.mustVPP("vx-dep-if").SwIfIndex {
		t.Errorf("vx-dep-mc's multicast interface %d, want vx-dep-if's", d.McastSwIfIndex)
	}

	// Their dependencies go: the tunnels first (VPP 25.10 crashes when the
	// encap table of a tunnel is deleted under it), then they wait again.
	txn = e.s.StartNBTransaction()
	txn.SetValue(models.VrfTableKey(82, true), nil)
	txn.SetValue(ifplugin.InterfaceKey("vx-dep-if"), nil)
	seq, err := txn.Commit(context.Background(), api.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ops := executed(e.s, seq)
	before := func(first, then string) {
		t.Helper()
		i, j := slices.Index(ops, first), slices.Index(ops, then)
		if i < 0 || j < 0 || i > j {
			t.Errorf("executed %v, want %q before %q", ops, first, then)
		}
	}
	before("DELETE "+ifplugin.InterfaceKey("vx-dep-vrf"), "DELETE "+models.VrfTableKey(82, true))
	before("DELETE "+ifplugin.InterfaceKey("vx-dep-mc"), "DELETE "+ifplugin.InterfaceKey("vx-dep-if"))
	e.wantState(ifplugin.InterfaceKey("vx-dep-vrf"), api.ValueStatePending)
	e.wantState(ifplugin.InterfaceKey("vx-dep-mc"), api.ValueStatePending)
	if n := len(e.vpp.DumpVxlans()); n != 0 {
		t.Errorf("VPP has %d tunnels after their dependencies went", n)
	}
	e.del("vx-dep-vrf", "vx-dep-mc")
}

// TestVxlanOncePerKey: two tunnels VPP would take for one (its key: the
// destination, VNI and encap VRF, and the source of an IPv4 unicast
// tunnel) are refused, the second INVALID naming the first, nothing sent
// to VPP; a tunnel of that key made by someone else makes the Create fail
// naming VPP's tunnel.
func TestVxlanOncePerKey(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	seq, err := e.commitWith(api.TxnOptions{},
		vxlanIf("vk-a", "2001:db8:84::1", "2001:db8:84::2", 84),
		vxlanIf("vk-b", "2001:db8:84::9", "2001:db8:84::2", 84), // IPv6: another source is the same key
		vxlanIf("vk-c", "10.84.0.1", "10.84.0.2", 84),
		vxlanIf("vk-d", "10.84.0.9", "10.84.0.2", 84), // IPv4 unicast: another key
	)
	if err == nil {
		t.Fatal("commit succeeded, want vk-b refused")
	}
	e.wantRefused(ifplugin.InterfaceKey("vk-b"), "vxlan.vni", "vpp vxlan tunnel to 2001:db8:84::2 vni 84 encap vrf 0", "vk-a")
	if created(executed(e.s, seq), "vk-b") {
		t.Error("vk-b was created")
	}
	for _, n := range []string{"vk-a", "vk-c", "vk-d"} {
		e.wantState(ifplugin.InterfaceKey(n), api.ValueStateConfigured)
	}

	// Someone else's tunnel of vk-e's key.
	h := vppcalls.NewHandler(e.m)
	foreign, err := h.CreateVxlan(context.Background(), vppcalls.VxlanParams{Src: mustIP("10.84.1.1"), Dst: mustIP("10.84.1.2"), VNI: 85, McastSwIfIndex: vppcalls.NoIndex})
	if err != nil {
		t.Fatal(err)
	}
	fi := vppIfAt(t, e, foreign)
	_, err = e.commitWith(api.TxnOptions{}, vxlanIf("vk-e", "10.84.1.1", "10.84.1.2", 85))
	var te *api.TransactionError
	if !errors.As(err, &te) || te.ErrorOf(ifplugin.InterfaceKey("vk-e")) == nil {
		t.Fatalf("commit of vk-e: %v, want its failure", err)
	}
	msg := te.ErrorOf(ifplugin.InterfaceKey("vk-e")).Error()
	if want := "VPP's VXLAN tunnel " + fi.Name + " (from 10.84.1.1 to 10.84.1.2, VNI 85, encap VRF 0) is in the way"; !strings.Contains(msg, want) {
		t.Errorf("vk-e's error %q does not say %q", msg, want)
	}
	if !errors.Is(te.ErrorOf(ifplugin.InterfaceKey("vk-e")), govppapi.TUNNEL_EXIST) {
		t.Errorf("vk-e's error %q does not carry VPP's TUNNEL_EXIST", msg)
	}
	e.del("vk-a", "vk-b", "vk-c", "vk-d", "vk-e")
}

func vppIfAt(t *testing.T, e *env, idx uint32) vpptest.Interface {
	t.Helper()
	for _, i := range e.vpp.DumpInterfaces() {
		if i.SwIfIndex == idx {
			return i
		}
	}
	t.Fatalf("VPP has no interface %d", idx)
	return vpptest.Interface{}
}

// TestVxlanInvalid: what the agent cannot configure is INVALID naming the
// field, and nothing is sent to VPP.
func TestVxlanInvalid(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	gpe := vxlanIf("vx-gpe", "10.86.0.1", "10.86.0.2", 86)
	gpe.GetVxlan().Gpe = &vppif.VxlanLink_Gpe{Protocol: vppif.VxlanLink_Gpe_IP4}
	wide := vxlanIf("vx-wide", "10.86.0.1", "10.86.0.2", 1<<24)
	mixed := vxlanIf("vx-mixed", "10.86.0.1", "2001:db8::2", 86)
	noGroup := vxlanIf("vx-nogroup", "10.86.0.1", "10.86.0.2", 86)
	noGroup.GetVxlan().Multicast = "loop1"
	for _, c := range []struct {
		v     *vppif.Interface
		field string
		want  string
	}{
		{gpe, "vxlan.gpe", "VXLAN-GPE is not supported"},
		{wide, "vxlan.vni", "16777216 is above 16777215"},
		{mixed, "vxlan.dst_address", "not of the IP version of src_address"},
		{noGroup, "vxlan.multicast", "only for a multicast dst_address"},
		{&vppif.Interface{Name: "vx-none", Type: vppif.Interface_VXLAN_TUNNEL}, "vxlan", "required for a VXLAN_TUNNEL"},
	} {
		_, err := e.commitWith(api.TxnOptions{}, c.v)
		key := ifplugin.InterfaceKey(c.v.GetName())
		var te *api.TransactionError
		if !errors.As(err, &te) || te.ErrorOf(key) == nil {
			t.Errorf("%s: commit %v, want its error", c.v.GetName(), err)
			continue
		}
		var ie *api.InvalidValueError
		if !errors.As(te.ErrorOf(key), &ie) || !slices.Contains(ie.InvalidFields, c.field) || !strings.Contains(ie.Error(), c.want) {
			t.Errorf("%s: %v, want an invalid %s saying %q", c.v.GetName(), te.ErrorOf(key), c.field, c.want)
		}
		e.wantState(key, api.ValueStateInvalid)
	}
	if got := e.vpp.DumpVxlans(); len(got) != 0 {
		t.Errorf("VPP has tunnels: %+v", got)
	}
}

// TestVxlanForeignObtained: a tunnel someone else made (no tag) is
// OBTAINED under its VPP name, with its type and link as VPP has them, and
// left alone by a resync.
func TestVxlanForeignObtained(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	h := vppcalls.NewHandler(e.m)
	idx, err := h.CreateVxlan(context.Background(), vppcalls.VxlanParams{Src: mustIP("10.87.0.1"), Dst: mustIP("10.87.0.2"), VNI: 87, McastSwIfIndex: vppcalls.NoIndex})
	if err != nil {
		t.Fatal(err)
	}
	name := vppIfAt(t, e, idx).Name
	if ops, _ := e.resyncOps(nil); len(ops) != 0 {
		t.Errorf("a resync without configuration executed %v: the foreign tunnel is not the agent's", ops)
	}
	st := vpptest.Status(e.s, ifplugin.InterfaceKey(name))
	if st.GetState() != api.ValueStateObtained {
		t.Fatalf("%s is %v, want OBTAINED", name, st.GetState())
	}
	kvs, err := e.s.DumpValuesByDescriptor(ifplugin.InterfaceDescriptorName, api.SBView)
	if err != nil {
		t.Fatal(err)
	}
	got := &vppif.Interface{}
	for _, kv := range kvs {
		if kv.Key == ifplugin.InterfaceKey(name) {
			got = kv.Value.(*vppif.Interface)
		}
	}
	x := got.GetVxlan()
	if got.GetType() != vppif.Interface_VXLAN_TUNNEL || x.GetSrcAddress() != "10.87.0.1" || x.GetDstAddress() != "10.87.0.2" || x.GetVni() != 87 {
		t.Errorf("the foreign tunnel's value: %v", got)
	}
	if n := len(e.vpp.DumpVxlans()); n != 1 {
		t.Errorf("VPP has %d tunnels, want the foreign one", n)
	}
}

// TestDriftVxlanDeletedIsRepaired: a tunnel deleted through the binary API
// by someone else is seen by the link-state watcher (VPP's
// sw_interface_event) and created again, with its address and admin
// state, by a DriftRepair transaction; a tunnel the agent creates (admin
// up in VPP until its admin state is set) reports no drift.
func TestDriftVxlanDeletedIsRepaired(t *testing.T) {
	e := newLSEnvWith(t, lsOptions{drift: true})
	vx := vxlanIf("dr-vx", "10.88.0.1", "10.88.0.2", 88)
	vx.IpAddresses = []string{"10.89.0.1/24"}
	down := vxlanIf("dr-vx-down", "10.88.0.1", "10.88.0.3", 88)
	down.Enabled = false
	start := e.commitKVs(ifaceKV(vx), ifaceKV(down))
	keys := []string{ifplugin.InterfaceKey("dr-vx"), ifplugin.AddressKey("dr-vx", "10.89.0.1/24"), ifplugin.AdminStateKey("dr-vx", true),
		ifplugin.InterfaceKey("dr-vx-down"), ifplugin.AdminStateKey("dr-vx-down", false)}
	if ok, saw := e.configured(keys...); !ok {
		t.Fatal(saw)
	}
	old, _ := e.vpp.InterfaceTagged("dr-vx")
	d := e.vpp.DumpVxlans()[old.SwIfIndex]
	if d == nil {
		t.Fatalf("dr-vx (%d) is no tunnel in VPP", old.SwIfIndex)
	}
	r := *d
	if _, err := vxlan.NewServiceClient(e.outsider()).VxlanAddDelTunnelV3(context.Background(), &vxlan.VxlanAddDelTunnelV3{
		IsAdd: false, Instance: vppcalls.NoIndex, SrcAddress: r.SrcAddress, DstAddress: r.DstAddress, SrcPort: r.SrcPort, DstPort: r.DstPort,
		McastSwIfIndex: r.McastSwIfIndex, EncapVrfID: r.EncapVrfID, DecapNextIndex: r.DecapNextIndex, Vni: r.Vni,
	}); err != nil {
		t.Fatal(err)
	}
	e.eventually("dr-vx created again with its address, admin up", func() (bool, string) {
		_, ok, saw := e.vppHas("dr-vx", "10.89.0.1/24")
		return ok, saw
	})
	e.eventually("every value CONFIGURED", func() (bool, string) { return e.configured(keys...) })
	repairs := e.driftRepairs(start)
	if !slices.ContainsFunc(repairs, func(r *api.RecordedTxn) bool {
		return strings.Contains(r.Description, ifplugin.InterfaceKey("dr-vx")+" (deleted in VPP")
	}) {
		t.Errorf("no DriftRepair transaction says dr-vx was deleted in VPP: %v", repairs)
	}
	if ops := executedKeys(repairs); slices.ContainsFunc(ops, func(op string) bool { return strings.Contains(op, "dr-vx-down") }) {
		t.Errorf("DriftRepair executed %v: dr-vx-down, created up by VPP and set down by the agent, is no drift", ops)
	}
	if i, ok := e.vpp.InterfaceTagged("dr-vx-down"); !ok || i.AdminUp {
		t.Errorf("dr-vx-down in VPP: %+v (%v), want it admin down", i, ok)
	}
}

// A VPP without the vxlan plugin disables the VXLAN values only: they
// fail, naming the message VPP lacks, and the dumps that list interfaces
// go on without tunnel details.
func TestVPPWithoutVxlan(t *testing.T) {
	v := vpptest.Start(t, vpptest.Options{Sim: vppsim.Options{Omit: []string{"vxlan_add_del_tunnel_v3"}}, Areas: vppcalls.Areas()})
	if d := v.M.Status().Disabled; len(d) != 1 || d[vppcalls.VxlanAreaName] == nil {
		t.Fatalf("disabled areas %v, want %s only", d, vppcalls.VxlanAreaName)
	}
	p := ifplugin.New(v.M, quiet)
	e := &env{t: t, vpp: v, sim: v.Sim, m: v.M, p: p}
	e.s = e.newScheduler(p)
	lo, vx := loop("loopX", "10.90.0.1/24"), vxlanIf("vxX", "10.90.0.1", "10.90.0.2", 90)
	if _, err := e.commitWith(api.TxnOptions{}, lo, vx); err == nil || !strings.Contains(err.Error(), "vxlan_add_del_tunnel_v3") {
		t.Errorf("commit: %v, want vxX's error naming vxlan_add_del_tunnel_v3", err)
	}
	e.wantState(ifplugin.InterfaceKey("loopX"), api.ValueStateConfigured)
	if st, vs := stateOf(e.s, ifplugin.InterfaceKey("vxX")); st != api.ValueStateFailed || !strings.Contains(vs.GetError(), "vxlan_add_del_tunnel_v3") {
		t.Errorf("vxX: %v %v, want FAILED naming vxlan_add_del_tunnel_v3", st, vs)
	}
	seq, err := e.commitWith(api.TxnOptions{Resync: api.FullResync}, lo, vx)
	if err == nil {
		t.Error("resync: no error for vxX")
	}
	if ops := vpptest.Executed(t, e.s, seq); !slices.Equal(ops, []string{"CREATE " + ifplugin.InterfaceKey("vxX") + " []"}) {
		t.Errorf("resync executed %v, want vxX's create only", ops)
	}
}

// TestVxlanOriginalExampleApplies: a VXLAN tunnel as the original agent's
// users write it (its JSON: the link under "vxlan", in the main VRF of a
// node, no addresses) decodes, applies, and a resync finds it in sync.
func TestVxlanOriginalExampleApplies(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	const key = "config/vpp/v2/interfaces/vxlan2"
	_, v, err := models.Default.DecodeValue(key, []byte(`{"name":"vxlan2","type":"VXLAN_TUNNEL","enabled":true,"vrf":1,
		"vxlan":{"src_address":"192.168.16.1","dst_address":"192.168.16.2","vni":10}}`))
	if err != nil {
		t.Fatal(err)
	}
	vx := v.(*vppif.Interface)
	e.commit(vx)
	e.wantState(key, api.ValueStateConfigured)
	_, d := e.vxlanOf("vxlan2")
	wantTunnel(t, d, "192.168.16.1", "192.168.16.2", 10, 1)
	if ops, w := e.resyncOps([]*vppif.Interface{vx}); len(ops) != 0 || len(w) != 0 {
		t.Errorf("resync executed %v, wrote %v; want nothing", ops, w)
	}
	e.del("vxlan2")
}

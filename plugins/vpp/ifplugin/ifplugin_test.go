package ifplugin_test

import (
	"context"
	"errors"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	linuxifplugin "github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func TestLoopbackCreateUpdateDelete(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	l := loop("loop1", "10.0.0.1/24", "2001:db8::1/64")
	l.PhysAddress = "02:00:00:00:00:01"
	l.Mtu = 1500
	e.commit(l)

	i := e.mustVPP("loop1")
	if i.DevType != "Loopback" || !i.AdminUp || i.MAC != "02:00:00:00:00:01" || i.MTU[0] != 1500 {
		t.Errorf("loop1 in VPP: %+v", i)
	}
	if got := addrs(i); got != "10.0.0.1/24,2001:db8::1/64" {
		t.Errorf("addresses %s", got)
	}
	e.wantState(ifplugin.InterfaceKey("loop1"), api.ValueStateConfigured)
	for _, k := range []string{
		ifplugin.AdminStateKey("loop1", true), ifplugin.AddressKey("loop1", "10.0.0.1/24"),
		ifplugin.AddressKey("loop1", "2001:db8::1/64"), ifplugin.HasIPAddressKey("loop1"),
	} {
		e.wantState(k, api.ValueStateConfigured)
	}

	// The metadata map: by name, and by sw_if_index.
	mm := e.s.GetMetadataMap(ifplugin.InterfaceDescriptorName)
	v, ok := mm.GetValue("loop1")
	md, _ := v.(*ifplugin.Metadata)
	if !ok || md == nil || md.SwIfIndex != i.SwIfIndex || md.InternalName != i.Name {
		t.Fatalf("metadata of loop1: %v %+v, VPP %d %s", ok, v, i.SwIfIndex, i.Name)
	}
	if name, ok := ifplugin.LookupBySwIfIndex(mm, i.SwIfIndex); !ok || name != "loop1" {
		t.Errorf("LookupBySwIfIndex(%d) = %q, %v", i.SwIfIndex, name, ok)
	}

	// In place: MTU, MAC, addresses, admin state.
	u := clone(l)
	u.Mtu = 9000
	u.PhysAddress = "02:00:00:00:00:02"
	u.IpAddresses = []string{"10.0.0.1/24", "10.0.1.1/24"}
	u.Enabled = false
	seq := e.commit(u)
	i2 := e.mustVPP("loop1")
	if i2.SwIfIndex != i.SwIfIndex || i2.MTU[0] != 9000 || i2.MAC != "02:00:00:00:00:02" || i2.AdminUp {
		t.Errorf("after update: %+v (was index %d)", i2, i.SwIfIndex)
	}
	if got := addrs(i2); got != "10.0.0.1/24,10.0.1.1/24" {
		t.Errorf("addresses after update %s", got)
	}
	for _, op := range e.s.GetRecordedTransaction(seq).Executed {
		if op.Key == ifplugin.InterfaceKey("loop1") && op.Operation != api.OpUpdate {
			t.Errorf("interface not updated in place: %v", op)
		}
		if op.Key == ifplugin.AddressKey("loop1", "10.0.0.1/24") {
			t.Errorf("unchanged address touched: %v", op)
		}
	}
	e.wantState(ifplugin.AdminStateKey("loop1", false), api.ValueStateConfigured)

	e.del("loop1")
	if got := e.newInterfaces(); len(got) != 0 {
		t.Errorf("after delete, VPP has %v", got)
	}
	if _, ok := mm.GetValue("loop1"); ok {
		t.Error("metadata left after delete")
	}
	if _, ok := ifplugin.LookupBySwIfIndex(mm, i.SwIfIndex); ok {
		t.Error("index entry left after delete")
	}
}

// TestDeleteMissingInterfaceSucceeds: an interface gone behind the agent's
// back (here: VPP restarted, no resync yet) is deleted with success, and the
// foreign interface that reuses its sw_if_index is left alone, its settings
// included.
func TestDeleteMissingInterfaceSucceeds(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	if !e.vpp.CanRestart() {
		t.Skip("restarts VPP: not the user's VPP")
	}
	e.commit(loop("loop1", "10.0.0.1/24"))
	i := e.mustVPP("loop1")
	e.vpp.Restart()
	e.waitConnect(true)
	// Foreign loopbacks until one has loop1's index (the restarted VPP
	// allocates them from 1 on).
	h := vppcalls.NewHandler(e.m)
	var idx uint32
	for range i.SwIfIndex {
		var err error
		if idx, err = h.CreateLoopback(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if idx == i.SwIfIndex {
			break
		}
	}
	if idx != i.SwIfIndex {
		t.Fatalf("setup: no foreign loopback got loop1's index %d (last %d)", i.SwIfIndex, idx)
	}
	if err := h.SetAdminUp(context.Background(), idx, true); err != nil {
		t.Fatal(err)
	}
	before := e.vpp.DumpInterfaces()
	e.del("loop1")
	got := e.vpp.DumpInterfaces()
	k := slices.IndexFunc(got, func(x vpptest.Interface) bool { return x.SwIfIndex == idx })
	if len(got) != len(before) || k < 0 || !got[k].AdminUp {
		t.Errorf("the foreign interface reusing the index was touched: %+v, before %+v", got, before)
	}
}

func TestForeignInterfacesAreLeftAlone(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	h := vppcalls.NewHandler(e.m)
	idx, err := h.CreateLoopback(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign := e.untagged()
	if len(foreign) != 1 {
		t.Fatalf("setup: untagged interfaces %v, want the loopback %d", foreign, idx)
	}
	e.commit(loop("mine"))
	seq, err := e.s.StartNBTransaction().SetValue(ifplugin.InterfaceKey("mine"), loop("mine")).
		Commit(context.Background(), api.TxnOptions{Resync: api.FullResync})
	if err != nil {
		t.Fatal(err)
	}
	if ops := executed(e.s, seq); len(ops) != 0 {
		t.Errorf("resync executed %v", ops)
	}
	if got := e.untagged(); !slices.Equal(got, foreign) {
		t.Errorf("foreign interfaces: %v, want %v", got, foreign)
	}
	kvs, err := e.s.DumpValuesByDescriptor(ifplugin.InterfaceDescriptorName, api.SBView)
	if err != nil {
		t.Fatal(err)
	}
	// Foreign interfaces are reported under VPP's name, as the SB's (those
	// VPP had before the test aside, local0 but).
	var got []string
	for _, kv := range kvs {
		if name := strings.TrimPrefix(kv.Key, ifplugin.InterfaceKey("")); name == "local0" || !e.vpp.Before.HasInterfaceNamed(name) {
			got = append(got, kv.Key+" "+kv.Origin.String())
		}
	}
	want := []string{
		ifplugin.InterfaceKey("local0") + " from-SB", ifplugin.InterfaceKey(foreign[0]) + " from-SB",
		ifplugin.InterfaceKey("mine") + " from-NB",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("SB view: %v, want %v", got, want)
	}
}

func TestValidation(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	cases := []struct {
		v     *vppif.Interface
		field string
		text  string
	}{
		{&vppif.Interface{Name: "dpdk0", Type: vppif.Interface_DPDK}, "type", "not supported"},
		{&vppif.Interface{Name: "gre0", Type: vppif.Interface_GRE_TUNNEL}, "type", "not supported"},
		{&vppif.Interface{Name: "none"}, "type", "required"},
		{&vppif.Interface{Name: "m0", Type: vppif.Interface_MEMIF}, "memif.socket_filename", "required"},
		{&vppif.Interface{Name: "m1", Type: vppif.Interface_MEMIF, Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{SocketFilename: "/run/m.sock", RingSize: 1000}}}, "memif.ring_size", "power of two"},
		{&vppif.Interface{Name: "m2", Type: vppif.Interface_MEMIF, PhysAddress: "02:00:00:00:00:01", Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{SocketFilename: "m.sock", Mode: vppif.MemifLink_IP}}}, "phys_address", "IP-mode memif has no MAC"},
		{&vppif.Interface{Name: "t1", Type: vppif.Interface_TAP, Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 1}}}, "tap.version", "version 1"},
		{&vppif.Interface{Name: "s1", Type: vppif.Interface_SUB_INTERFACE, Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "x", SubId: 5000}}}, "sub.sub_id", "VLAN"},
		{&vppif.Interface{Name: "u1", Type: vppif.Interface_SOFTWARE_LOOPBACK, IpAddresses: []string{"10.0.0.1/24"},
			Unnumbered: &vppif.Interface_Unnumbered{InterfaceWithIp: "x"}}, "ip_addresses", "unnumbered"},
		{&vppif.Interface{Name: "l1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Mtu: 10000}, "mtu", "9216"},
		{&vppif.Interface{Name: "l2", Type: vppif.Interface_SOFTWARE_LOOPBACK, PhysAddress: "zz"}, "phys_address", "MAC"},
	}
	for _, c := range cases {
		_, err := e.commitWith(api.TxnOptions{}, c.v)
		var ive *api.InvalidValueError
		if !errors.As(err, &ive) || !slices.Contains(ive.InvalidFields, c.field) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: error %v, want invalid field %s saying %q", c.v.GetName(), err, c.field, c.text)
		}
		e.wantState(ifplugin.InterfaceKey(c.v.GetName()), api.ValueStateInvalid)
	}
	if got := e.newInterfaces(); len(got) != 0 {
		t.Errorf("invalid values reached VPP: %v", got)
	}
}

// Host interfaces for AF_PACKET: on a real VPP, veth pairs the tests make
// (vpptest.VPP.HostLinks).
const (
	hostIf1 = "na-veth1"
	hostIf2 = "na-veth2"
)

func TestAfPacketWaitsForHostInterface(t *testing.T) {
	hosts := map[string]bool{hostIf1: true, hostIf2: true}
	e := newEnv(t, vppsim.Options{HostIfExists: func(name string) bool { return hosts[name] }})
	e.vpp.HostLinks(hostIf1, hostIf2)
	afp := &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET, Enabled: true, IpAddresses: []string{"10.1.0.1/24"},
		Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: hostIf1}}}
	e.commit(afp)
	e.wantState(ifplugin.InterfaceKey("afp1"), api.ValueStatePending)
	if _, ok := e.tagged("afp1"); ok {
		t.Fatal("created before its host interface")
	}

	// The Linux watcher reports the host interface.
	if err := e.s.PushSBNotification(api.KVWithMetadata{Key: linuxifplugin.HostNameKey(hostIf1), Value: &linuxif.Interface{Name: hostIf1}}); err != nil {
		t.Fatal(err)
	}
	e.s.TransactionBarrier()
	e.wantState(ifplugin.InterfaceKey("afp1"), api.ValueStateConfigured)
	i := e.mustVPP("afp1")
	if host := e.vpp.DumpAfPackets()[i.SwIfIndex]; i.Name != "host-"+hostIf1 || host != hostIf1 || !i.AdminUp || addrs(i) != "10.1.0.1/24" {
		t.Errorf("afp1 in VPP: %+v, AF_PACKET on %q", i, host)
	}
	if e.sim != nil { // which request made it: vppsim's record only
		if si, _ := e.sim.Interface(i.Name); si.AfPacket == nil || si.AfPacket.Version != 3 {
			t.Errorf("afp1 not made by af_packet_create_v3: %+v", si.AfPacket)
		}
	}

	// The host interface goes: the AF_PACKET interface is deleted and waits.
	if err := e.s.PushSBNotification(api.KVWithMetadata{Key: linuxifplugin.HostNameKey(hostIf1)}); err != nil {
		t.Fatal(err)
	}
	e.s.TransactionBarrier()
	e.wantState(ifplugin.InterfaceKey("afp1"), api.ValueStatePending)
	if _, ok := e.tagged("afp1"); ok {
		t.Error("AF_PACKET interface left after its host interface went")
	}

	// By linux_interface: waits for the Linux interface's key, binds to its
	// logical name.
	afp2 := &vppif.Interface{Name: "afp2", Type: vppif.Interface_AF_PACKET,
		Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{LinuxInterface: hostIf2}}}
	e.commit(afp2)
	e.wantState(ifplugin.InterfaceKey("afp2"), api.ValueStatePending)
	if err := e.s.PushSBNotification(api.KVWithMetadata{Key: linuxifplugin.InterfaceKey(hostIf2), Value: &linuxif.Interface{Name: hostIf2}}); err != nil {
		t.Fatal(err)
	}
	e.s.TransactionBarrier()
	e.wantState(ifplugin.InterfaceKey("afp2"), api.ValueStateConfigured)
	if i := e.mustVPP("afp2"); i.Name != "host-"+hostIf2 {
		t.Errorf("afp2 in VPP: %+v", i)
	}
	e.del("afp2")
	if _, ok := e.tagged("afp2"); ok {
		t.Error("afp2 not deleted")
	}
}

// runtimeDir is VPP's run-time directory: that of its default memif socket
// (0), where VPP puts relative socket filenames.
func (e *env) runtimeDir() string {
	e.t.Helper()
	def, ok := e.vpp.DumpMemifSockets()[0]
	if !ok || !path.IsAbs(def) {
		e.t.Fatalf("VPP reports no default memif socket: %v", e.vpp.DumpMemifSockets())
	}
	return path.Dir(def)
}

func TestMemif(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	// A master listens on its socket: in a directory VPP can write to.
	m1sock := e.runtimeFile("na-m1.sock")
	m := &vppif.Interface{Name: "memif1", Type: vppif.Interface_MEMIF, Enabled: true,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 3, SocketFilename: m1sock,
			Secret: "s3cr3t", RingSize: 2048, RxQueues: 2, TxQueues: 2, Mode: vppif.MemifLink_IP}}}
	m2 := &vppif.Interface{Name: "memif2", Type: vppif.Interface_MEMIF, PhysAddress: "02:00:00:00:aa:02",
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Id: 1, SocketFilename: "m2.sock"}}}
	e.commit(m, m2)
	i := e.mustVPP("memif1")
	memifs := e.vpp.DumpMemifs()
	p := memifs[i.SwIfIndex]
	if p == nil {
		t.Fatalf("memif1 (%s) is no memif for VPP: %+v", i.Name, memifs)
	}
	// An IP-mode memif has no MAC.
	if p.ID != 3 || p.Role != memif.MEMIF_ROLE_API_MASTER || p.Mode != memif.MEMIF_MODE_API_IP ||
		i.MAC != "00:00:00:00:00:00" || !i.AdminUp {
		t.Errorf("memif1 in VPP: %+v %+v", i, p)
	}
	socks := e.vpp.DumpMemifSockets()
	if socks[p.SocketID] != m1sock {
		t.Errorf("sockets %v, memif1 on %d, want %s", socks, p.SocketID, m1sock)
	}
	i2 := e.mustVPP("memif2")
	p2 := memifs[i2.SwIfIndex]
	// A relative socket filename is in VPP's run-time directory.
	if p2 == nil || p2.Role != memif.MEMIF_ROLE_API_SLAVE || socks[p2.SocketID] != path.Join(e.runtimeDir(), "m2.sock") || i2.MAC != "02:00:00:00:aa:02" {
		t.Errorf("memif2 in VPP: %+v %+v, sockets %v", i2, p2, socks)
	}
	if e.sim != nil { // VPP's memif_dump reports neither the secret nor the queues
		s1, _ := e.sim.Interface(i.Name)
		s2, _ := e.sim.Interface(i2.Name)
		if s1.Memif.Secret != "s3cr3t" || s1.Memif.RxQueues != 2 || s1.Memif.TxQueues != 2 || s2.Memif.RxQueues != 1 {
			t.Errorf("memif secret and queues in vppsim: %+v, %+v", s1.Memif, s2.Memif)
		}
	}

	// A change of the link re-creates it.
	m2b := clone(m2)
	m2b.GetMemif().Id = 7
	seq := e.commit(m2b)
	if p := e.vpp.DumpMemifs()[e.mustVPP("memif2").SwIfIndex]; p == nil || p.ID != 7 {
		t.Errorf("memif2 after update: %+v", p)
	}
	recreated := false
	for _, op := range e.s.GetRecordedTransaction(seq).Executed {
		recreated = recreated || (op.Key == ifplugin.InterfaceKey("memif2") && op.IsRecreate)
	}
	if !recreated {
		t.Error("memif id change not applied by re-creation")
	}

	e.del("memif1", "memif2")
	for id, name := range e.vpp.DumpMemifSockets() {
		if _, had := e.vpp.Before.MemifSockets[id]; !had {
			t.Errorf("socket %d (%s) left after delete", id, name)
		}
	}
}

// TestMemifSocketFiles: a relative socket filename is VPP's to place (under
// its run-time directory, whose subdirectories VPP makes: a master listens
// there at once); a master whose absolute socket file VPP cannot make fails
// with an error saying so, and leaves nothing in VPP; a slave there is
// made (it only connects).
func TestMemifSocketFiles(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	dir := e.runtimeDir()
	if e.vpp.Real() {
		t.Cleanup(func() { _ = os.RemoveAll(path.Join(dir, "na-sockets")) })
	}
	rel := &vppif.Interface{Name: "m-rel", Type: vppif.Interface_MEMIF, Enabled: true,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 1, SocketFilename: "na-sockets/rel.sock"}}}
	e.commit(rel)
	i := e.mustVPP("m-rel")
	if sock := e.vpp.DumpMemifSockets()[e.vpp.DumpMemifs()[i.SwIfIndex].SocketID]; sock != path.Join(dir, "na-sockets/rel.sock") {
		t.Errorf("m-rel on socket %s, want it in VPP's run-time directory %s", sock, dir)
	}
	// Another spelling of the same file is the same socket: in sync.
	same := clone(rel)
	same.GetMemif().SocketFilename = "na-sockets//./rel.sock"
	if ops, w := e.resyncOps([]*vppif.Interface{same}); len(ops) != 0 || len(w) != 0 {
		t.Errorf("resync with another spelling of the socket executed %v, wrote %v", ops, w)
	}

	missing := "/nonexistent-netagent-dir/m.sock"
	socketsBefore := e.vpp.DumpMemifSockets()
	master := &vppif.Interface{Name: "m-missing", Type: vppif.Interface_MEMIF,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 1, SocketFilename: missing}}}
	_, err := e.commitWith(api.TxnOptions{}, master)
	var te *api.TransactionError
	key := ifplugin.InterfaceKey("m-missing")
	if !errors.As(err, &te) || te.ErrorOf(key) == nil {
		t.Fatalf("commit: %v, want m-missing's failure", err)
	}
	msg := te.ErrorOf(key).Error()
	for _, want := range []string{"cannot listen on the memif socket " + missing, "its directory /nonexistent-netagent-dir does not exist", "System call error #4"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if !errors.Is(te.ErrorOf(key), govppapi.SYSCALL_ERROR_4) {
		t.Errorf("error %v does not carry VPP's error", te.ErrorOf(key))
	}
	e.wantState(key, api.ValueStateFailed)
	if _, ok := e.tagged("m-missing"); ok {
		t.Error("m-missing is in VPP")
	}
	if got := e.vpp.DumpMemifSockets(); len(got) != len(socketsBefore) {
		t.Errorf("memif sockets after the failure: %v, before %v", got, socketsBefore)
	}
	slave := &vppif.Interface{Name: "s-missing", Type: vppif.Interface_MEMIF,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Id: 2, SocketFilename: "/nonexistent-netagent-dir/s.sock"}}}
	e.commit(slave)
	e.wantState(ifplugin.InterfaceKey("s-missing"), api.ValueStateConfigured)
	e.del("m-missing", "s-missing", "m-rel")
}

func TestTap(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	e.vpp.NeedTap()
	tap := &vppif.Interface{Name: "tap1", Type: vppif.Interface_TAP, Enabled: true, IpAddresses: []string{"10.2.0.1/30"},
		Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 2, HostIfName: "vpp-tap1", RxRingSize: 512, TxRingSize: 1024, EnableGso: true}}}
	plain := &vppif.Interface{Name: "tap2", Type: vppif.Interface_TAP}
	e.commit(tap, plain)
	i, i2 := e.mustVPP("tap1"), e.mustVPP("tap2")
	taps := e.vpp.DumpTaps()
	if d := taps[i.SwIfIndex]; d == nil || d.HostIfName != "vpp-tap1" || d.RxRingSz != 512 || d.TxRingSz != 1024 ||
		d.TapFlags&tapv2.TAP_API_FLAG_GSO == 0 || !i.AdminUp || addrs(i) != "10.2.0.1/30" {
		t.Errorf("tap1 in VPP: %+v %+v", i, d)
	}
	if d := taps[i2.SwIfIndex]; d == nil || d.RxRingSz != 256 || d.TxRingSz != 256 {
		t.Errorf("tap2 in VPP: %+v", d)
	}
	if e.sim != nil { // the request's queues and random MAC: vppsim's record only
		s1, _ := e.sim.Interface(i.Name)
		s2, _ := e.sim.Interface(i2.Name)
		if s1.Tap.NumRxQueues != 1 || !s2.Tap.UseRandomMAC {
			t.Errorf("TAP requests in vppsim: %+v, %+v", s1.Tap, s2.Tap)
		}
	}
	e.del("tap1", "tap2")
	if got := e.newInterfaces(); len(got) != 0 {
		t.Errorf("after delete, VPP has %v", got)
	}
}

func TestSubInterfaceWaitsForParent(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	sub := &vppif.Interface{Name: "sub10", Type: vppif.Interface_SUB_INTERFACE, Enabled: true, IpAddresses: []string{"10.10.0.1/24"},
		Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "trunk", SubId: 10}}}
	e.commit(sub)
	e.wantState(ifplugin.InterfaceKey("sub10"), api.ValueStatePending)

	// The parent comes, down: the sub-interface exists, its admin-up waits.
	parent := loop("trunk")
	parent.Enabled = false
	e.commit(parent)
	e.wantState(ifplugin.InterfaceKey("sub10"), api.ValueStateConfigured)
	e.wantState(ifplugin.AdminStateKey("sub10", true), api.ValueStatePending)
	i := e.mustVPP("sub10")
	p := e.mustVPP("trunk")
	if !i.IsSub() || i.SupSwIfIndex != p.SwIfIndex || i.SubID != 10 || i.OuterVlanID != 10 || i.AdminUp || addrs(i) != "10.10.0.1/24" {
		t.Errorf("sub10 in VPP: %+v", i)
	}

	// The parent goes up, then the sub-interface.
	e.commit(loop("trunk"))
	e.wantState(ifplugin.AdminStateKey("sub10", true), api.ValueStateConfigured)
	if !e.mustVPP("sub10").AdminUp {
		t.Error("sub10 not up")
	}

	// Deleting the parent deletes the sub-interface first; it waits again.
	e.del("trunk")
	e.wantState(ifplugin.InterfaceKey("sub10"), api.ValueStatePending)
	if got := e.newInterfaces(); len(got) != 0 {
		t.Errorf("after the parent's delete, VPP has %v", got)
	}
}

// TestUnnumbered follows the unnumbered control flow: the interface exists
// (L2) while there is nothing to borrow, borrows the address when the donor
// gets one, gives it back (and stays) when it goes, and borrows again.
func TestUnnumbered(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	un := loop("un1")
	un.Unnumbered = &vppif.Interface_Unnumbered{InterfaceWithIp: "donor"}
	e.commit(un)
	e.wantState(ifplugin.InterfaceKey("un1"), api.ValueStateConfigured)
	e.wantState(ifplugin.UnnumberedKey("un1"), api.ValueStatePending)
	if i := e.mustVPP("un1"); i.UnnumberedFrom != vpptest.NoIndex {
		t.Fatal("unnumbered without a donor")
	}

	e.commit(loop("donor")) // no address yet
	e.wantState(ifplugin.UnnumberedKey("un1"), api.ValueStatePending)

	e.commit(loop("donor", "192.168.1.1/24"))
	e.wantState(ifplugin.UnnumberedKey("un1"), api.ValueStateConfigured)
	d := e.mustVPP("donor")
	if i := e.mustVPP("un1"); i.UnnumberedFrom != d.SwIfIndex {
		t.Errorf("un1 not borrowing from donor (%d): %+v", d.SwIfIndex, i)
	}

	// The address goes: un1 returns to L2 and stays.
	idx := e.mustVPP("un1").SwIfIndex
	e.commit(loop("donor"))
	e.wantState(ifplugin.UnnumberedKey("un1"), api.ValueStatePending)
	e.wantState(ifplugin.InterfaceKey("un1"), api.ValueStateConfigured)
	if i := e.mustVPP("un1"); i.UnnumberedFrom != vpptest.NoIndex || i.SwIfIndex != idx {
		t.Errorf("un1 after the donor lost its address: %+v", i)
	}

	// And borrows again.
	e.commit(loop("donor", "192.168.2.1/24"))
	e.wantState(ifplugin.UnnumberedKey("un1"), api.ValueStateConfigured)
	if i := e.mustVPP("un1"); i.UnnumberedFrom != d.SwIfIndex || i.SwIfIndex != idx {
		t.Errorf("un1 not borrowing again: %+v", i)
	}

	// The donor goes: un1 back to L2 first.
	e.del("donor")
	e.wantState(ifplugin.UnnumberedKey("un1"), api.ValueStatePending)
	if i := e.mustVPP("un1"); i.UnnumberedFrom != vpptest.NoIndex {
		t.Errorf("un1 after the donor's delete: %+v", i)
	}
}

func TestVRF(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	l := loop("v1", "10.5.0.1/24", "2001:db8:5::1/64")
	l.Vrf = 10
	e.commit(l)
	i := e.mustVPP("v1")
	if i.IP4Table != 10 || i.IP6Table != 10 || addrs(i) != "10.5.0.1/24,2001:db8:5::1/64" {
		t.Errorf("v1 in VPP: %+v", i)
	}
	e.wantState(ifplugin.VRFKey("v1", 10, "v4"), api.ValueStateConfigured)
	e.wantState(ifplugin.VRFKey("v1", 10, "v6"), api.ValueStateConfigured)

	// Another VRF: the addresses go first, come back after the move.
	l = clone(l)
	l.Vrf = 20
	e.commit(l)
	i = e.mustVPP("v1")
	if i.IP4Table != 20 || i.IP6Table != 20 || addrs(i) != "10.5.0.1/24,2001:db8:5::1/64" {
		t.Errorf("v1 in VRF 20: %+v", i)
	}
	l = clone(l)
	l.Vrf = 0
	e.commit(l)
	if i = e.mustVPP("v1"); i.IP4Table != 0 || i.IP6Table != 0 || addrs(i) != "10.5.0.1/24,2001:db8:5::1/64" {
		t.Errorf("v1 in VRF 0: %+v", i)
	}
}

func TestFailedCreateIsRetried(t *testing.T) {
	vpptest.NeedSim(t, "fails requests (FailNext)")
	e := newEnv(t, vppsim.Options{})
	e.sim.FailNext("create_loopback", -1, 1)
	retry := api.TxnOptions{Retry: &api.RetryOpt{Period: 50 * time.Millisecond, MaxCount: 3}}
	_, err := e.commitWith(retry, loop("loop1", "10.0.0.1/24"))
	if err == nil || !strings.Contains(err.Error(), "create_loopback") {
		t.Fatalf("commit error %v, want the create_loopback failure", err)
	}
	e.waitState(ifplugin.InterfaceKey("loop1"), api.ValueStateConfigured)
	e.waitState(ifplugin.AddressKey("loop1", "10.0.0.1/24"), api.ValueStateConfigured)
	if i := e.mustVPP("loop1"); addrs(i) != "10.0.0.1/24" || !i.AdminUp {
		t.Errorf("loop1 after the retry: %+v", i)
	}

	// A failure after the interface was made (tagging) deletes it again, so
	// nothing untagged is left; the retry makes it afresh.
	e.sim.FailNext("sw_interface_tag_add_del", -1, 1)
	_, err = e.commitWith(retry, loop("loop2"))
	if err == nil || !strings.Contains(err.Error(), "sw_interface_tag_add_del") {
		t.Fatalf("commit error %v", err)
	}
	e.waitState(ifplugin.InterfaceKey("loop2"), api.ValueStateConfigured)
	if got := e.untagged(); len(got) != 0 {
		t.Errorf("untagged interfaces left: %v", got)
	}
	e.mustVPP("loop2")
}

func TestVPPNotConnected(t *testing.T) {
	m := vppconn.New(vppconn.Options{Socket: t.TempDir() + "/none.sock", Log: quiet}) // never run
	p := ifplugin.New(m, quiet)
	s := kvscheduler.New(kvscheduler.Options{Logger: quiet})
	defer s.Close()
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	_, err := s.StartNBTransaction().SetValue(ifplugin.InterfaceKey("loop1"), loop("loop1")).Commit(context.Background(), api.TxnOptions{})
	if err == nil || !strings.Contains(err.Error(), "VPP is not connected") || !errors.Is(err, vppconn.ErrNotConnected) {
		t.Fatalf("commit error %v, want VPP is not connected", err)
	}
	st, vs := stateOf(s, ifplugin.InterfaceKey("loop1"))
	if st != api.ValueStateFailed || !strings.Contains(vs.GetError(), "VPP is not connected") {
		t.Errorf("status %v", vs)
	}
}

// config is a bit of everything, for the resync tests; with TAP
// interfaces when tap (see needTap). The AF_PACKET interface binds to
// hostIf1 (e.vpp.HostLinks).
func (e *env) config(tap bool) []*vppif.Interface {
	e.t.Helper()
	donor := loop("donor", "192.168.1.1/24")
	donor.Mtu = 1500
	donor.PhysAddress = "02:00:00:00:00:0A"
	un := loop("un1")
	un.Unnumbered = &vppif.Interface_Unnumbered{InterfaceWithIp: "donor"}
	vrf := loop("vrf1", "10.9.0.1/24")
	vrf.Vrf = 3
	down := loop("down1", "10.8.0.1/24")
	down.Enabled = false
	out := []*vppif.Interface{
		donor, un, vrf, down,
		{Name: "sub1", Type: vppif.Interface_SUB_INTERFACE, Enabled: true, IpAddresses: []string{"10.7.0.1/24"},
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "donor", SubId: 7}}},
		{Name: "memif1", Type: vppif.Interface_MEMIF, Enabled: true,
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Id: 1, SocketFilename: "m1.sock", Secret: "x", RxQueues: 2}}},
		{Name: "afp1", Type: vppif.Interface_AF_PACKET, Enabled: true, IpAddresses: []string{"2001:db8:1::1/64"},
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: hostIf1}}},
		{Name: "pending-sub", Type: vppif.Interface_SUB_INTERFACE,
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "missing", SubId: 9}}},
	}
	if !tap {
		return out
	}
	return append(out,
		&vppif.Interface{Name: "tap1", Type: vppif.Interface_TAP, Enabled: true, IpAddresses: []string{"10.6.0.1/30"},
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{HostIfName: "vtap1"}}},
		&vppif.Interface{Name: "tap2", Type: vppif.Interface_TAP})
}

func pushHost(t *testing.T, s api.KVScheduler) {
	t.Helper()
	if err := s.PushSBNotification(api.KVWithMetadata{Key: linuxifplugin.HostNameKey(hostIf1), Value: &linuxif.Interface{Name: hostIf1}}); err != nil {
		t.Fatal(err)
	}
	s.TransactionBarrier()
}

func fullResync(t *testing.T, s api.KVScheduler, vs []*vppif.Interface) uint64 {
	t.Helper()
	txn := s.StartNBTransaction()
	setWithTables(txn, vs)
	seq, err := txn.Commit(context.Background(), api.TxnOptions{Resync: api.FullResync})
	var te *api.TransactionError
	if err != nil && !errors.As(err, &te) {
		t.Fatalf("resync: %v", err)
	}
	return seq
}

// checkConfig checks what VPP has of config (with TAP interfaces when tap),
// read back with dumps.
func checkConfig(t *testing.T, e *env, tap bool) {
	t.Helper()
	donor := e.mustVPP("donor")
	if addrs(donor) != "192.168.1.1/24" || donor.MTU[0] != 1500 || donor.MAC != "02:00:00:00:00:0a" || !donor.AdminUp {
		t.Errorf("donor: %+v", donor)
	}
	if i := e.mustVPP("un1"); i.UnnumberedFrom != donor.SwIfIndex || !i.AdminUp {
		t.Errorf("un1: %+v", i)
	}
	if i := e.mustVPP("vrf1"); i.IP4Table != 3 || addrs(i) != "10.9.0.1/24" {
		t.Errorf("vrf1: %+v", i)
	}
	if i := e.mustVPP("down1"); i.AdminUp || addrs(i) != "10.8.0.1/24" {
		t.Errorf("down1: %+v", i)
	}
	if i := e.mustVPP("sub1"); i.SupSwIfIndex != donor.SwIfIndex || !i.AdminUp || addrs(i) != "10.7.0.1/24" {
		t.Errorf("sub1: %+v", i)
	}
	m := e.mustVPP("memif1")
	if p := e.vpp.DumpMemifs()[m.SwIfIndex]; p == nil || p.ID != 1 || !m.AdminUp {
		t.Errorf("memif1: %+v %+v", m, p)
	}
	if e.sim != nil { // VPP's memif_dump does not report the secret
		if i, _ := e.sim.Interface(m.Name); i.Memif == nil || i.Memif.Secret != "x" {
			t.Errorf("memif1 in vppsim: %+v", i.Memif)
		}
	}
	if tap {
		i := e.mustVPP("tap1")
		if d := e.vpp.DumpTaps()[i.SwIfIndex]; d == nil || d.HostIfName != "vtap1" || addrs(i) != "10.6.0.1/30" {
			t.Errorf("tap1: %+v %+v", i, d)
		}
		e.mustVPP("tap2")
	}
	if i := e.mustVPP("afp1"); i.Name != "host-"+hostIf1 || addrs(i) != "2001:db8:1::1/64" {
		t.Errorf("afp1: %+v", i)
	}
	if _, ok := e.tagged("pending-sub"); ok {
		t.Error("pending-sub created")
	}
	if got := e.untagged(); len(got) != 0 {
		t.Errorf("untagged interfaces: %v", got)
	}
}

// TestRestartOnInSyncVPP: a new agent (scheduler and plugin) whose first
// full resync finds VPP as configured executes nothing. The TAP interfaces
// are a subtest of their own, skipped where VPP cannot create TAPs.
func TestRestartOnInSyncVPP(t *testing.T) {
	t.Run("without TAP", func(t *testing.T) { testRestartOnInSyncVPP(t, false) })
	t.Run("with TAP", func(t *testing.T) { testRestartOnInSyncVPP(t, true) })
}

func testRestartOnInSyncVPP(t *testing.T, tap bool) {
	e := newEnv(t, vppsim.Options{})
	if tap {
		e.vpp.NeedTap()
	}
	e.vpp.HostLinks(hostIf1)
	pushHost(t, e.s)
	fullResync(t, e.s, e.config(tap))
	checkConfig(t, e, tap)
	before := e.vpp.DumpInterfaces()
	e.s.Close()

	p2 := ifplugin.New(e.m, quiet)
	s2 := e.newScheduler(p2)
	pushHost(t, s2)
	seq := fullResync(t, s2, e.config(tap))
	if ops := executed(s2, seq); len(ops) != 0 {
		t.Errorf("resync of an in-sync VPP executed %d operations: %v", len(ops), ops)
	}
	if after := e.vpp.DumpInterfaces(); !slices.EqualFunc(after, before, func(a, b vpptest.Interface) bool { return a.SwIfIndex == b.SwIfIndex && a.Name == b.Name }) {
		t.Errorf("interfaces changed: %+v -> %+v", before, after)
	}
	for _, v := range e.config(tap) {
		want := api.ValueStateConfigured
		if v.GetName() == "pending-sub" {
			want = api.ValueStatePending
		}
		if got, st := stateOf(s2, ifplugin.InterfaceKey(v.GetName())); got != want {
			t.Errorf("%s: %v, want %v (%v)", v.GetName(), got, want, st)
		}
	}
	if got, st := stateOf(s2, ifplugin.UnnumberedKey("un1")); got != api.ValueStateConfigured {
		t.Errorf("un1 unnumbered: %v (%v)", got, st)
	}
	// And the new agent works on what it found: an update in place.
	e.s = s2
	u := loop("donor", "192.168.1.1/24", "192.168.3.1/24")
	u.Mtu, u.PhysAddress = 1500, "02:00:00:00:00:0A"
	idx := e.mustVPP("donor").SwIfIndex
	e.commit(u)
	if i := e.mustVPP("donor"); i.SwIfIndex != idx || addrs(i) != "192.168.1.1/24,192.168.3.1/24" {
		t.Errorf("donor after update: %+v", i)
	}
}

// TestVPPRestartedEmpty: VPP restarts and loses everything; a downstream
// resync re-creates it all, in dependency order.
func TestVPPRestartedEmpty(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	if !e.vpp.CanRestart() {
		t.Skip("restarts VPP: not the user's VPP")
	}
	tap, why := e.vpp.CanCreateTap()
	if !tap {
		t.Logf("without the TAP interfaces: %s", why)
	}
	e.vpp.HostLinks(hostIf1)
	pushHost(t, e.s)
	fullResync(t, e.s, e.config(tap))
	checkConfig(t, e, tap)

	e.vpp.Restart()
	e.waitConnect(true)
	if got := e.vpp.DumpInterfaces(); len(got) != 1 {
		t.Fatalf("VPP not empty after restart: %+v", got)
	}
	seq, err := e.s.StartNBTransaction().Commit(context.Background(), api.TxnOptions{Resync: api.DownstreamResync})
	if err != nil {
		t.Fatalf("downstream resync: %v", err)
	}
	checkConfig(t, e, tap)
	// Parents before sub-interfaces, donors' addresses before unnumbered.
	ops := executed(e.s, seq)
	pos := func(op string) int {
		k := slices.Index(ops, op)
		if k < 0 {
			t.Fatalf("%q not executed: %v", op, ops)
		}
		return k
	}
	if pos("CREATE "+ifplugin.InterfaceKey("donor")) > pos("CREATE "+ifplugin.InterfaceKey("sub1")) ||
		pos("CREATE "+ifplugin.AddressKey("donor", "192.168.1.1/24")) > pos("CREATE "+ifplugin.UnnumberedKey("un1")) ||
		pos("CREATE "+ifplugin.VRFKey("vrf1", 3, "v4")) > pos("CREATE "+ifplugin.AddressKey("vrf1", "10.9.0.1/24")) {
		t.Errorf("order: %v", ops)
	}
	// Everything is in sync again: another resync does nothing.
	seq = fullResync(t, e.s, e.config(tap))
	if ops := executed(e.s, seq); len(ops) != 0 {
		t.Errorf("second resync executed %v", ops)
	}
}

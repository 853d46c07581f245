package ifplugin_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	linuxifplugin "github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// wantRefused checks that key is INVALID, its details naming field and its
// error saying that name is already used by the value of holder.
func (e *env) wantRefused(key, field, name, holder string) {
	e.t.Helper()
	st := vpptest.Status(e.s, key)
	if st.GetState() != api.ValueStateInvalid {
		e.t.Fatalf("%s is %v, want INVALID (%v)", key, st.GetState(), st)
	}
	if want := field + ": " + name + " is already used by " + ifplugin.InterfaceKey(holder); !strings.Contains(st.GetError(), want) {
		e.t.Errorf("%s: error %q, want it to say %q", key, st.GetError(), want)
	}
	if !slices.Equal(st.GetDetails(), []string{field}) {
		e.t.Errorf("%s: details %q, want [%s]", key, st.GetDetails(), field)
	}
}

// created tells whether a transaction created the interface name.
func created(ops []string, name string) bool {
	return slices.Contains(ops, "CREATE "+ifplugin.InterfaceKey(name))
}

func memifOn(name, socket string, id uint32) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_MEMIF, Enabled: true,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: id, SocketFilename: socket}}}
}

// memifsWithID lists the tags of the memifs VPP has with the id on the
// socket file.
func (e *env) memifsWithID(socket string, id uint32) []string {
	e.t.Helper()
	socks := e.vpp.DumpMemifSockets()
	tags := map[uint32]string{}
	for _, i := range e.vpp.DumpInterfaces() {
		tags[i.SwIfIndex] = i.Tag
	}
	var out []string
	for idx, m := range e.vpp.DumpMemifs() {
		if m.ID == id && socks[m.SocketID] == socket {
			out = append(out, tags[idx])
		}
	}
	slices.Sort(out)
	return out
}

// TestMemifIDOncePerSocket: a memif whose id another memif of the
// configuration has on the same socket file (in any spelling of its path)
// is INVALID naming it, and nothing is sent to VPP for it; the same id on
// another socket, or another id on the socket, is fine; when the holder is
// deleted, or changes its id, the first refused memif in key order is made
// in the same transaction.
func TestMemifIDOncePerSocket(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	const rel = "na-uniq.sock"
	sock := e.runtimeFile(rel)
	other := e.runtimeFile("na-uniq2.sock")
	const name = "vpp memif id 3 on socket na-uniq.sock in VPP's run-time directory"

	if e.sim != nil {
		e.sim.ResetCalls()
	}
	seq, err := e.commitWith(api.TxnOptions{},
		memifOn("m1", rel, 3), memifOn("m2", "./"+rel, 3), memifOn("m3", "na-uniq2.sock", 3), memifOn("m4", rel, 4))
	if err == nil || !strings.Contains(err.Error(), ifplugin.InterfaceKey("m2")) {
		t.Fatalf("commit of two memifs with id 3 on one socket: %v, want m2's refusal", err)
	}
	e.wantRefused(ifplugin.InterfaceKey("m2"), "memif.id", name, "m1")
	for _, n := range []string{"m1", "m3", "m4"} {
		e.wantState(ifplugin.InterfaceKey(n), api.ValueStateConfigured)
	}
	if ops := executed(e.s, seq); created(ops, "m2") {
		t.Errorf("a Create was called for the refused m2: %v", ops)
	}
	if got := e.memifsWithID(sock, 3); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("memifs with id 3 on %s: %v, want m1's only", sock, got)
	}
	if got := e.memifsWithID(other, 3); !slices.Equal(got, []string{"m3"}) {
		t.Errorf("memifs with id 3 on %s: %v, want m3's", other, got)
	}
	if e.sim != nil {
		if n := countCalls(e.sim.Calls(), "memif_create_v2"); n != 3 {
			t.Errorf("%d memif_create_v2 sent, want 3 (m1, m3, m4; none for m2)", n)
		}
	}

	// The holder is deleted: m2 is made in the same transaction.
	seq = e.del("m1")
	if ops := executed(e.s, seq); !created(ops, "m2") {
		t.Errorf("m1's delete did not create m2: %v", ops)
	}
	e.wantState(ifplugin.InterfaceKey("m2"), api.ValueStateConfigured)
	if got := e.memifsWithID(sock, 3); !slices.Equal(got, []string{"m2"}) {
		t.Errorf("memifs with id 3 on %s after the hand-over: %v, want m2's", sock, got)
	}

	// A third, later, sorts first: refused all the same, the holder keeps it.
	if _, err := e.commitWith(api.TxnOptions{}, memifOn("m0", rel, 3)); err == nil {
		t.Fatal("a third memif with id 3: no error")
	}
	e.wantRefused(ifplugin.InterfaceKey("m0"), "memif.id", name, "m2")

	// The holder changes its id: m0 gets id 3 in the same transaction.
	seq = e.commit(memifOn("m2", rel, 5))
	if ops := executed(e.s, seq); !created(ops, "m0") {
		t.Errorf("m2's change of id did not create m0: %v", ops)
	}
	e.wantState(ifplugin.InterfaceKey("m0"), api.ValueStateConfigured)
	if got := e.memifsWithID(sock, 3); !slices.Equal(got, []string{"m0"}) {
		t.Errorf("memifs with id 3 on %s: %v, want m0's", sock, got)
	}
	if got := e.memifsWithID(sock, 5); !slices.Equal(got, []string{"m2"}) {
		t.Errorf("memifs with id 5 on %s: %v, want m2's", sock, got)
	}
	e.del("m0", "m2", "m3", "m4")
}

func countCalls(calls []string, msg string) int {
	n := 0
	for _, c := range calls {
		if c == msg {
			n++
		}
	}
	return n
}

// TestMemifTakenInVPP: what the configuration cannot tell, VPP refuses,
// and the error names the memif in the way: a relative and an absolute
// filename of one file with one id (only VPP knows its run-time
// directory), and a slave on a master's socket.
func TestMemifTakenInVPP(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	sock := e.runtimeFile("na-taken.sock")
	e.commit(memifOn("t1", "na-taken.sock", 7))
	e.wantState(ifplugin.InterfaceKey("t1"), api.ValueStateConfigured)
	vppName := e.mustVPP("t1").Name

	_, err := e.commitWith(api.TxnOptions{}, memifOn("t2", sock, 7))
	var te *api.TransactionError
	if !errors.As(err, &te) || te.ErrorOf(ifplugin.InterfaceKey("t2")) == nil {
		t.Fatalf("commit of t2: %v, want t2's failure", err)
	}
	msg := te.ErrorOf(ifplugin.InterfaceKey("t2")).Error()
	if want := "memif id 7 on socket " + sock + " is already used by VPP's memif " + vppName + " (tag t1)"; !strings.Contains(msg, want) {
		t.Errorf("t2's error %q does not say %q", msg, want)
	}
	if !errors.Is(te.ErrorOf(ifplugin.InterfaceKey("t2")), govppapi.SUBIF_ALREADY_EXISTS) {
		t.Errorf("t2's error %v does not carry VPP's", msg)
	}
	e.wantState(ifplugin.InterfaceKey("t2"), api.ValueStateFailed)

	slave := memifOn("t3", "na-taken.sock", 8)
	slave.GetMemif().Master = false
	_, err = e.commitWith(api.TxnOptions{}, slave)
	if !errors.As(err, &te) || te.ErrorOf(ifplugin.InterfaceKey("t3")) == nil {
		t.Fatalf("commit of t3: %v, want t3's failure", err)
	}
	msg = te.ErrorOf(ifplugin.InterfaceKey("t3")).Error()
	if want := "memif socket " + sock + " is used by the master memif " + vppName + " (tag t1): VPP does not let masters and slaves share a socket file"; !strings.Contains(msg, want) {
		t.Errorf("t3's error %q does not say %q", msg, want)
	}
	if _, ok := e.tagged("t2"); ok {
		t.Error("t2 is in VPP")
	}
	e.del("t1", "t2", "t3")
}

func subOf(name, parent string, id uint32) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_SUB_INTERFACE, Enabled: true,
		Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: parent, SubId: id}}}
}

// TestSubInterfaceIDOncePerParent: a sub-interface whose sub_id another
// sub-interface of the configuration has on the same parent is INVALID
// naming it, nothing sent to VPP; the same id on another parent is fine;
// deleting the holder makes the refused one in the same transaction.
func TestSubInterfaceIDOncePerParent(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	e.commit(loop("trunk1"), loop("trunk2"))
	seq, err := e.commitWith(api.TxnOptions{}, subOf("s-a", "trunk1", 10), subOf("s-b", "trunk1", 10), subOf("s-c", "trunk2", 10))
	if err == nil {
		t.Fatal("commit of two sub-interfaces with id 10 on trunk1: no error")
	}
	e.wantRefused(ifplugin.InterfaceKey("s-b"), "sub.sub_id", "vpp sub-interface id 10 of interface trunk1", "s-a")
	e.wantState(ifplugin.InterfaceKey("s-a"), api.ValueStateConfigured)
	e.wantState(ifplugin.InterfaceKey("s-c"), api.ValueStateConfigured)
	if ops := executed(e.s, seq); created(ops, "s-b") {
		t.Errorf("a Create was called for the refused s-b: %v", ops)
	}
	t1, t2 := e.mustVPP("trunk1"), e.mustVPP("trunk2")
	subs := func(parent uint32) []string {
		var out []string
		for _, i := range e.vpp.NewInterfaces() {
			if i.IsSub() && i.SupSwIfIndex == parent && i.SubID == 10 {
				out = append(out, i.Tag)
			}
		}
		return out
	}
	if got := subs(t1.SwIfIndex); !slices.Equal(got, []string{"s-a"}) {
		t.Errorf("sub-interfaces 10 of trunk1: %v, want s-a's", got)
	}
	if got := subs(t2.SwIfIndex); !slices.Equal(got, []string{"s-c"}) {
		t.Errorf("sub-interfaces 10 of trunk2: %v, want s-c's", got)
	}

	seq = e.del("s-a")
	if ops := executed(e.s, seq); !created(ops, "s-b") {
		t.Errorf("s-a's delete did not create s-b: %v", ops)
	}
	e.wantState(ifplugin.InterfaceKey("s-b"), api.ValueStateConfigured)
	if got := subs(t1.SwIfIndex); !slices.Equal(got, []string{"s-b"}) {
		t.Errorf("sub-interfaces 10 of trunk1 after the hand-over: %v, want s-b's", got)
	}
	e.del("s-b", "s-c", "trunk1", "trunk2")
}

// TestAfPacketOncePerHostInterface: two AF_PACKET values on one host
// interface (by host_if_name and by linux_interface alike) would share
// VPP's one interface there, and the Delete of either would remove it: the
// second is INVALID; deleting the first makes it.
func TestAfPacketOncePerHostInterface(t *testing.T) {
	hosts := map[string]bool{hostIf1: true}
	e := newEnv(t, vppsim.Options{HostIfExists: func(name string) bool { return hosts[name] }})
	e.vpp.HostLinks(hostIf1)
	for _, k := range []string{linuxifplugin.HostNameKey(hostIf1), linuxifplugin.InterfaceKey(hostIf1)} {
		if err := e.s.PushSBNotification(api.KVWithMetadata{Key: k, Value: &linuxif.Interface{Name: hostIf1}}); err != nil {
			t.Fatal(err)
		}
	}
	e.s.TransactionBarrier()
	a1 := &vppif.Interface{Name: "afp-a", Type: vppif.Interface_AF_PACKET,
		Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: hostIf1}}}
	a2 := &vppif.Interface{Name: "afp-b", Type: vppif.Interface_AF_PACKET,
		Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{LinuxInterface: hostIf1}}}
	if _, err := e.commitWith(api.TxnOptions{}, a1, a2); err == nil {
		t.Fatal("commit of two AF_PACKET interfaces on one host interface: no error")
	}
	e.wantRefused(ifplugin.InterfaceKey("afp-b"), "afpacket.linux_interface", "vpp af_packet interface on host interface "+hostIf1, "afp-a")
	e.wantState(ifplugin.InterfaceKey("afp-a"), api.ValueStateConfigured)

	seq := e.del("afp-a")
	if ops := executed(e.s, seq); !created(ops, "afp-b") {
		t.Errorf("afp-a's delete did not create afp-b: %v", ops)
	}
	if i := e.mustVPP("afp-b"); i.Name != "host-"+hostIf1 {
		t.Errorf("afp-b in VPP: %+v", i)
	}
	e.del("afp-b")
}

// TestTapHostNameOnce: two TAPs with one host_if_name (VPP would fail the
// second, the kernel refusing the name): the second is INVALID; a TAP
// without host_if_name names nothing.
func TestTapHostNameOnce(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	e.vpp.NeedTap()
	tap := func(name, host string) *vppif.Interface {
		return &vppif.Interface{Name: name, Type: vppif.Interface_TAP, Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{HostIfName: host}}}
	}
	if _, err := e.commitWith(api.TxnOptions{}, tap("tap-a", "vpp-tu"), tap("tap-b", "vpp-tu"), tap("tap-c", ""), tap("tap-d", "")); err == nil {
		t.Fatal("commit of two TAPs with one host name: no error")
	}
	e.wantRefused(ifplugin.InterfaceKey("tap-b"), "tap.host_if_name", "vpp tap host interface vpp-tu", "tap-a")
	for _, n := range []string{"tap-a", "tap-c", "tap-d"} {
		e.wantState(ifplugin.InterfaceKey(n), api.ValueStateConfigured)
	}
	seq := e.commit(tap("tap-a", "vpp-tu2"))
	if ops := executed(e.s, seq); !created(ops, "tap-b") {
		t.Errorf("tap-a's new host name did not create tap-b: %v", ops)
	}
	if d := e.vpp.DumpTaps()[e.mustVPP("tap-b").SwIfIndex]; d == nil || d.HostIfName != "vpp-tu" {
		t.Errorf("tap-b in VPP: %+v", d)
	}
	e.del("tap-a", "tap-b", "tap-c", "tap-d")
}

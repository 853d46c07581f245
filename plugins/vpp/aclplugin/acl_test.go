package aclplugin_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin/vppcalls"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
)

func ipRule(action vppacl.ACL_Rule_Action, src, dst string) *vppacl.ACL_Rule {
	return &vppacl.ACL_Rule{Action: action, IpRule: &vppacl.ACL_Rule_IpRule{
		Ip: &vppacl.ACL_Rule_IpRule_Ip{SourceNetwork: src, DestinationNetwork: dst},
	}}
}

func tcpRule(action vppacl.ACL_Rule_Action, dst string, lower, upper uint32) *vppacl.ACL_Rule {
	return &vppacl.ACL_Rule{Action: action, IpRule: &vppacl.ACL_Rule_IpRule{
		Ip:  &vppacl.ACL_Rule_IpRule_Ip{DestinationNetwork: dst},
		Tcp: &vppacl.ACL_Rule_IpRule_Tcp{DestinationPortRange: &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: lower, UpperPort: upper}},
	}}
}

func macipRule(action vppacl.ACL_Rule_Action, ip string, prefix uint32, mac, mask string) *vppacl.ACL_Rule {
	return &vppacl.ACL_Rule{Action: action, MacipRule: &vppacl.ACL_Rule_MacIpRule{
		SourceAddress: ip, SourceAddressPrefix: prefix, SourceMacAddress: mac, SourceMacAddressMask: mask,
	}}
}

func ifaces(ingress, egress []string) *vppacl.ACL_Interfaces {
	return &vppacl.ACL_Interfaces{Ingress: ingress, Egress: egress}
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func has(ops []string, prefix string) bool {
	return slices.ContainsFunc(ops, func(op string) bool { return strings.HasPrefix(op, prefix) })
}

// An IP ACL: created with its rules in VPP's form, assigned to its
// interfaces; an in-sync resync does nothing; a change of rules replaces
// them in place (same index, the interfaces keep it); a change of
// interfaces moves the assignments only; the deletion takes it off and
// deletes it.
func TestIPACLCreateUpdateDelete(t *testing.T) {
	e := newEnv(t)
	web := &vppacl.ACL{Name: "web", Rules: []*vppacl.ACL_Rule{
		tcpRule(vppacl.ACL_Rule_PERMIT, "10.1.0.7/16", 80, 0), // host bits, one port
		{Action: vppacl.ACL_Rule_PERMIT, IpRule: &vppacl.ACL_Rule_IpRule{Icmp: &vppacl.ACL_Rule_IpRule_Icmp{
			IcmpTypeRange: &vppacl.ACL_Rule_IpRule_Icmp_Range{First: 8, Last: 8},
		}}},
		ipRule(vppacl.ACL_Rule_DENY, "", ""),
	}, Interfaces: ifaces([]string{"if1"}, []string{"if2"})}
	cfg := []kv{iface("if1"), iface("if2"), aclKV(web)}
	e.mustCommit(cfg...)
	for _, k := range []string{aclKey("web"), aclplugin.ACLInterfaceKey("web", aclplugin.Ingress, "if1"), aclplugin.ACLInterfaceKey("web", aclplugin.Egress, "if2")} {
		if st := e.state(k); st != api.ValueStateConfigured {
			t.Errorf("%s is %v, want CONFIGURED", k, st)
		}
	}
	a := e.mustACL("web")
	want := []vppcalls.IPRule{
		{Action: vppcalls.Permit, Src: pfx("0.0.0.0/0"), Dst: pfx("10.1.0.0/16"), Proto: 6, SrcPort: vppcalls.Range{First: 0, Last: 65535}, DstPort: vppcalls.Range{First: 80, Last: 80}},
		{Action: vppcalls.Permit, Src: pfx("0.0.0.0/0"), Dst: pfx("0.0.0.0/0"), Proto: 1, SrcPort: vppcalls.Range{First: 8, Last: 8}, DstPort: vppcalls.Range{First: 0, Last: 255}},
		{Action: vppcalls.Deny, Src: pfx("0.0.0.0/0"), Dst: pfx("0.0.0.0/0"), SrcPort: vppcalls.Range{First: 0, Last: 65535}, DstPort: vppcalls.Range{First: 0, Last: 65535}},
	}
	if !slices.Equal(a.Rules, want) {
		t.Errorf("rules in VPP:\n%v\nwant\n%v", a.Rules, want)
	}
	if idx, macip, ok := e.p.ACLIndex("web"); !ok || macip || idx != a.Index {
		t.Errorf("metadata: index %d MAC-IP %v %v, want %d", idx, macip, ok, a.Index)
	}
	if in, out := e.lists("if1"); !slices.Equal(in, []string{"web"}) || len(out) != 0 {
		t.Errorf("if1 lists %v %v, want input [web]", in, out)
	}
	if in, out := e.lists("if2"); len(in) != 0 || !slices.Equal(out, []string{"web"}) {
		t.Errorf("if2 lists %v %v, want output [web]", in, out)
	}
	e.mustResyncNothing("after create", cfg...)

	// New rules: replaced in place.
	e.resetCalls()
	web2 := &vppacl.ACL{Name: "web", Rules: []*vppacl.ACL_Rule{tcpRule(vppacl.ACL_Rule_REFLECT, "10.1.0.0/16", 443, 444)},
		Interfaces: ifaces([]string{"if1"}, []string{"if2"})}
	seq := e.mustCommit(aclKV(web2))
	if ops := e.executed(seq); !slices.Equal(ops, []string{"UPDATE " + aclKey("web") + " []"}) {
		t.Errorf("rules changed: executed %v, want one UPDATE", ops)
	}
	if w, ok := e.writes(); ok && !slices.Equal(w, []string{"acl_add_replace"}) {
		t.Errorf("rules changed: VPP writes %v, want one acl_add_replace", w)
	}
	b := e.mustACL("web")
	if b.Index != a.Index || len(b.Rules) != 1 || b.Rules[0].Action != vppcalls.Reflect || b.Rules[0].DstPort != (vppcalls.Range{First: 443, Last: 444}) {
		t.Errorf("after the update: %+v, want index %d and the new rule", b, a.Index)
	}
	if in, _ := e.lists("if1"); !slices.Equal(in, []string{"web"}) {
		t.Errorf("if1 input after the update %v", in)
	}

	// An equivalent value (other spellings, interfaces reordered): nothing.
	e.resetCalls()
	same := &vppacl.ACL{Name: "web", Rules: []*vppacl.ACL_Rule{{Action: vppacl.ACL_Rule_REFLECT, IpRule: &vppacl.ACL_Rule_IpRule{
		Ip: &vppacl.ACL_Rule_IpRule_Ip{SourceNetwork: "0.0.0.0/0", DestinationNetwork: "10.1.2.3/16", Protocol: 6},
		Tcp: &vppacl.ACL_Rule_IpRule_Tcp{
			DestinationPortRange: &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: 443, UpperPort: 444},
			SourcePortRange:      &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: 0, UpperPort: 65535},
		},
	}}}, Interfaces: ifaces([]string{"if1"}, []string{"if2"})}
	if seq := e.mustCommit(aclKV(same)); len(e.executed(seq)) != 0 {
		t.Errorf("equivalent value executed %v", e.executed(seq))
	}

	// Interfaces changed: the assignments move, the ACL is not written.
	e.resetCalls()
	web3 := &vppacl.ACL{Name: "web", Rules: web2.Rules, Interfaces: ifaces([]string{"if1", "if2"}, nil)}
	seq = e.mustCommit(aclKV(web3))
	ops := e.executed(seq)
	for _, want := range []string{
		"UPDATE " + aclKey("web"),
		"CREATE " + aclplugin.ACLInterfaceKey("web", aclplugin.Ingress, "if2"),
		"DELETE " + aclplugin.ACLInterfaceKey("web", aclplugin.Egress, "if2"),
	} {
		if !has(ops, want) {
			t.Errorf("interfaces changed: executed %v, want %s", ops, want)
		}
	}
	if w, ok := e.writes(); ok && slices.Contains(w, "acl_add_replace") {
		t.Errorf("interfaces changed: VPP writes %v, want no acl_add_replace", w)
	}
	if in, out := e.lists("if2"); !slices.Equal(in, []string{"web"}) || len(out) != 0 {
		t.Errorf("if2 lists %v %v, want input [web]", in, out)
	}
	cfg = []kv{iface("if1"), iface("if2"), aclKV(web3)}
	e.mustResyncNothing("after the updates", cfg...)

	// Deleted: off its interfaces, then gone.
	seq = e.mustCommit(del(aclKey("web")))
	if ops := e.executed(seq); len(ops) != 3 || !strings.HasPrefix(ops[2], "DELETE "+aclKey("web")) {
		t.Errorf("delete executed %v, want the two assignments then the ACL", ops)
	}
	if _, ok := e.acl("web"); ok {
		t.Errorf("ACL web still in VPP")
	}
	for _, n := range []string{"if1", "if2"} {
		if in, out := e.lists(n); len(in)+len(out) != 0 {
			t.Errorf("%s lists %v %v after the delete", n, in, out)
		}
	}
	if _, _, ok := e.p.ACLIndex("web"); ok {
		t.Errorf("web still in the metadata map")
	}
}

// Several ACLs on one interface and direction: VPP keeps one list, which
// the agent keeps in the order of the ACLs' names, whatever the order they
// come in, the agent's before those of others (kept in their order). A
// list someone reordered is put back in order by a resync, the others' ACL
// kept.
func TestACLOrderOnInterface(t *testing.T) {
	e := newEnv(t)
	rule := []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/8", "")}
	mk := func(name string) kv {
		return aclKV(&vppacl.ACL{Name: name, Rules: rule, Interfaces: ifaces([]string{"if1"}, []string{"if1"})})
	}
	e.mustCommit(iface("if1"), mk("20-web"))
	// Someone else's ACL, appended to both lists.
	foreign, err := e.h.AddACL(context.Background(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	sw := e.swIfIndex("if1")
	l, _, _ := e.h.InterfaceACLs(context.Background(), sw)
	l.Input, l.Output = append(l.Input, foreign), append(l.Output, foreign)
	if err := e.h.SetInterfaceACLs(context.Background(), sw, l); err != nil {
		t.Fatal(err)
	}
	e.mustCommit(mk("30-deny"))
	e.mustCommit(mk("10-dns"))
	wantOrder := []string{"10-dns", "20-web", "30-deny", "#" + itoa(foreign)}
	check := func(when string) {
		t.Helper()
		in, out := e.lists("if1")
		if !slices.Equal(in, wantOrder) || !slices.Equal(out, wantOrder) {
			t.Errorf("%s: lists of if1 %v / %v, want %v", when, in, out, wantOrder)
		}
	}
	check("created one by one")
	cfg := []kv{iface("if1"), mk("10-dns"), mk("20-web"), mk("30-deny")}
	e.mustResyncNothing("in order", cfg...)

	// Reordered behind the agent's back: a resync puts it in order again.
	idx := func(name string) uint32 { return e.mustACL(name).Index }
	if err := e.h.SetInterfaceACLs(context.Background(), sw, vppcalls.InterfaceACLs{
		Input:  []uint32{foreign, idx("30-deny"), idx("10-dns"), idx("20-web")},
		Output: []uint32{idx("10-dns"), idx("20-web"), idx("30-deny"), foreign},
	}); err != nil {
		t.Fatal(err)
	}
	seq, err := e.resync(api.FullResync, cfg...)
	if err != nil {
		t.Fatal(err)
	}
	ops := e.executed(seq)
	for _, name := range []string{"10-dns", "20-web", "30-deny"} {
		if !has(ops, "CREATE "+aclplugin.ACLInterfaceKey(name, aclplugin.Ingress, "if1")) {
			t.Errorf("resync of a reordered list executed %v, want the ingress assignment of %s again", ops, name)
		}
		if has(ops, "CREATE "+aclplugin.ACLInterfaceKey(name, aclplugin.Egress, "if1")) {
			t.Errorf("resync of a reordered input list executed %v: the output list was in order", ops)
		}
	}
	check("after the resync")
	e.mustResyncNothing("in order again", cfg...)

	// Taking one out keeps the others in their order.
	e.mustCommit(del(aclKey("20-web")))
	wantOrder = []string{"10-dns", "30-deny", "#" + itoa(foreign)}
	check("20-web deleted")
}

func itoa(i uint32) string { return strconv.FormatUint(uint64(i), 10) }

// An ACL whose interface does not exist yet is created; its assignment
// waits, PENDING, and is made when the interface comes; the interface's
// deletion takes the assignment first.
func TestAssignmentWaitsForItsInterface(t *testing.T) {
	e := newEnv(t)
	a := &vppacl.ACL{Name: "a", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_DENY, "", "")}, Interfaces: ifaces([]string{"later"}, nil)}
	e.mustCommit(aclKV(a))
	key := aclplugin.ACLInterfaceKey("a", aclplugin.Ingress, "later")
	if st := e.state(aclKey("a")); st != api.ValueStateConfigured {
		t.Errorf("ACL is %v, want CONFIGURED", st)
	}
	if st := e.status(key); st.GetState() != api.ValueStatePending || !strings.Contains(strings.Join(st.GetDetails(), " "), "later") {
		t.Errorf("assignment %v, want PENDING naming the interface", st)
	}
	e.mustACL("a")
	e.mustCommit(iface("later"))
	if st := e.state(key); st != api.ValueStateConfigured {
		t.Errorf("assignment is %v once the interface exists", st)
	}
	if in, _ := e.lists("later"); !slices.Equal(in, []string{"a"}) {
		t.Errorf("input list %v, want [a]", in)
	}
	e.mustResyncNothing("in sync", iface("later"), aclKV(a))
	seq := e.mustCommit(del("config/vpp/v2/interfaces/later"))
	if ops := e.executed(seq); len(ops) < 2 || !strings.HasPrefix(ops[0], "DELETE "+key) {
		t.Errorf("interface deleted: executed %v, want the assignment first", ops)
	}
	if st := e.state(key); st != api.ValueStatePending {
		t.Errorf("assignment is %v after its interface went, want PENDING", st)
	}
}

// A MAC-IP ACL: its rules as given (host bits kept), the interface's one
// MAC-IP ACL. Two MAC-IP ACLs on one interface: the first holds it, the
// other waits, and takes it when the first lets it go. An interface with
// someone else's MAC-IP ACL is not taken from it.
func TestMACIPACL(t *testing.T) {
	e := newEnv(t)
	m1 := &vppacl.ACL{Name: "m1", Rules: []*vppacl.ACL_Rule{
		macipRule(vppacl.ACL_Rule_PERMIT, "192.168.0.1", 16, "B2:74:8C:12:67:D2", "ff:ff:ff:ff:00:00"),
		macipRule(vppacl.ACL_Rule_DENY, "::", 0, "", ""),
	}, Interfaces: ifaces([]string{"if1"}, nil)}
	cfg := []kv{iface("if1"), iface("if2"), aclKV(m1)}
	e.mustCommit(cfg...)
	got := e.mustMACIPACL("m1")
	want := []vppcalls.MACIPRule{
		{Action: vppcalls.Permit, Src: pfx("192.168.0.1/16"), SrcMAC: [6]byte{0xb2, 0x74, 0x8c, 0x12, 0x67, 0xd2}, SrcMACMask: [6]byte{0xff, 0xff, 0xff, 0xff}},
		{Action: vppcalls.Deny, Src: pfx("::/0")},
	}
	if !slices.Equal(got.Rules, want) {
		t.Errorf("MAC-IP rules in VPP %v, want %v", got.Rules, want)
	}
	if _, ok := e.acl("m1"); ok {
		t.Errorf("a MAC-IP ACL made an IP ACL too")
	}
	if tag := e.macipOf("if1"); tag != "m1" {
		t.Errorf("if1 has MAC-IP ACL %q, want m1", tag)
	}
	e.mustResyncNothing("created", cfg...)

	// A second MAC-IP ACL on if1 waits.
	m2 := &vppacl.ACL{Name: "m2", Rules: []*vppacl.ACL_Rule{macipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0", 8, "", "")}, Interfaces: ifaces([]string{"if1"}, nil)}
	e.mustCommit(aclKV(m2))
	k2 := aclplugin.ACLInterfaceKey("m2", aclplugin.Ingress, "if1")
	if st := e.status(k2); st.GetState() != api.ValueStatePending || !strings.Contains(strings.Join(st.GetDetails(), " "), "m1") {
		t.Errorf("second MAC-IP assignment %v, want PENDING naming m1's", st)
	}
	if tag := e.macipOf("if1"); tag != "m1" {
		t.Errorf("if1 has MAC-IP ACL %q, want m1 still", tag)
	}
	cfg = append(cfg, aclKV(m2))
	e.mustResyncNothing("one waiting", cfg...)
	// m1 leaves if1: m2 takes it, in the same transaction.
	m1b := &vppacl.ACL{Name: "m1", Rules: m1.Rules, Interfaces: ifaces([]string{"if2"}, nil)}
	e.mustCommit(aclKV(m1b))
	if st := e.state(k2); st != api.ValueStateConfigured {
		t.Errorf("second MAC-IP assignment %v after the first left, want CONFIGURED", st)
	}
	if a, b := e.macipOf("if1"), e.macipOf("if2"); a != "m2" || b != "m1" {
		t.Errorf("MAC-IP ACLs of if1, if2: %q, %q, want m2, m1", a, b)
	}

	// Rules replaced in place.
	m2b := &vppacl.ACL{Name: "m2", Rules: []*vppacl.ACL_Rule{macipRule(vppacl.ACL_Rule_DENY, "10.0.0.0", 24, "", "")}, Interfaces: ifaces([]string{"if1"}, nil)}
	before := e.mustMACIPACL("m2").Index
	e.mustCommit(aclKV(m2b))
	if after := e.mustMACIPACL("m2"); after.Index != before || after.Rules[0].Src != pfx("10.0.0.0/24") || after.Rules[0].Action != vppcalls.Deny {
		t.Errorf("m2 after the update %+v (index before %d)", after, before)
	}
	if tag := e.macipOf("if1"); tag != "m2" {
		t.Errorf("if1 has MAC-IP ACL %q after m2's update", tag)
	}

	// Someone else's MAC-IP ACL on if2: m1 is refused it.
	ctx := context.Background()
	e.mustCommit(aclKV(&vppacl.ACL{Name: "m1", Rules: m1.Rules}))
	theirs, err := e.h.AddMACIPACL(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.h.SetInterfaceMACIPACL(ctx, e.swIfIndex("if2"), theirs); err != nil {
		t.Fatal(err)
	}
	_, err = e.commit(aclKV(m1b))
	var conflict *aclplugin.MACIPConflictError
	if !errors.As(err, &conflict) || conflict.Interface != "if2" || conflict.HolderIndex != theirs {
		t.Errorf("m1 on an interface with someone else's MAC-IP ACL: %v, want a MACIPConflictError", err)
	}
	if idx, ok, _ := e.h.InterfaceMACIPACL(ctx, e.swIfIndex("if2")); !ok || idx != theirs {
		t.Errorf("if2's MAC-IP ACL %d %v, want theirs (%d) kept", idx, ok, theirs)
	}
	if err := e.h.DeleteMACIPACL(ctx, theirs); err != nil {
		t.Fatal(err)
	}

	// Deleted: VPP takes it off its interface.
	e.mustCommit(del(aclKey("m2")), del(aclKey("m1")))
	if _, ok := e.macipACL("m2"); ok {
		t.Errorf("m2 still in VPP")
	}
	if tag := e.macipOf("if1"); tag != "" {
		t.Errorf("if1 still has MAC-IP ACL %q", tag)
	}
}

// An ACL that becomes MAC-IP (or IP) is re-created, its assignments with
// it.
func TestACLKindChange(t *testing.T) {
	e := newEnv(t)
	ip := &vppacl.ACL{Name: "k", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/8", "")}, Interfaces: ifaces([]string{"if1"}, nil)}
	e.mustCommit(iface("if1"), aclKV(ip))
	mac := &vppacl.ACL{Name: "k", Rules: []*vppacl.ACL_Rule{macipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.1", 32, "02:00:00:00:00:01", "ff:ff:ff:ff:ff:ff")}, Interfaces: ifaces([]string{"if1"}, nil)}
	seq := e.mustCommit(aclKV(mac))
	ops := e.executed(seq)
	if !has(ops, "DELETE "+aclKey("k")) || !has(ops, "CREATE "+aclKey("k")) {
		t.Errorf("kind change executed %v, want a re-creation", ops)
	}
	if _, ok := e.acl("k"); ok {
		t.Errorf("the IP ACL is still in VPP")
	}
	e.mustMACIPACL("k")
	if tag := e.macipOf("if1"); tag != "k" {
		t.Errorf("if1 MAC-IP ACL %q, want k", tag)
	}
	if in, _ := e.lists("if1"); len(in) != 0 {
		t.Errorf("if1 input list %v, want empty", in)
	}
	e.mustResyncNothing("after the change", iface("if1"), aclKV(mac))
	e.mustCommit(aclKV(ip))
	e.mustACL("k")
	if _, ok := e.macipACL("k"); ok {
		t.Errorf("the MAC-IP ACL is still in VPP")
	}
	if in, _ := e.lists("if1"); !slices.Equal(in, []string{"k"}) {
		t.Errorf("if1 input list %v, want [k]", in)
	}
	e.mustCommit(del(aclKey("k")))
}

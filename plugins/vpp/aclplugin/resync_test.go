package aclplugin_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin/vppcalls"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// The agent restarts against a VPP that has its ACLs: the full resync finds
// them by their tags and executes nothing; the ACLs of others are never
// reported, changed or deleted.
func TestRestartInSyncAndForeignACLs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	theirs, err := e.h.AddACL(ctx, "not ours!", []vppcalls.IPRule{{Action: vppcalls.Permit, Src: pfx("0.0.0.0/0"), Dst: pfx("0.0.0.0/0")}})
	if err != nil {
		t.Fatal(err)
	}
	theirMACIP, err := e.h.AddMACIPACL(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := []kv{
		iface("if1"), iface("if2"),
		aclKV(&vppacl.ACL{Name: "a", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/8", "2.0.0.1/32")}, Interfaces: ifaces([]string{"if1", "if2"}, []string{"if1"})}),
		aclKV(&vppacl.ACL{Name: "b", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_DENY, "", "")}, Interfaces: ifaces([]string{"if1"}, nil)}),
		aclKV(&vppacl.ACL{Name: "m", Rules: []*vppacl.ACL_Rule{macipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.1", 24, "02:00:00:00:00:01", "ff:ff:ff:ff:ff:ff")}, Interfaces: ifaces([]string{"if2"}, nil)}),
	}
	e.mustCommit(cfg...)
	// Their ACL on if1's input list, after the agent's.
	sw1 := e.swIfIndex("if1")
	l, _, _ := e.h.InterfaceACLs(ctx, sw1)
	l.Input = append(l.Input, theirs)
	if err := e.h.SetInterfaceACLs(ctx, sw1, l); err != nil {
		t.Fatal(err)
	}
	e.mustResyncNothing("same agent", cfg...)
	e.startScheduler()
	e.mustResyncNothing("agent restarted", cfg...)
	if in, out := e.lists("if1"); !slices.Equal(in, []string{"a", "b", "not ours!"}) || !slices.Equal(out, []string{"a"}) {
		t.Errorf("if1 lists %v %v", in, out)
	}
	for _, k := range []string{aclKey("a"), aclKey("b"), aclKey("m"), aclplugin.ACLInterfaceKey("m", aclplugin.Ingress, "if2")} {
		if st := e.state(k); st != api.ValueStateConfigured {
			t.Errorf("%s is %v after the resync", k, st)
		}
	}

	// The NB lost b and a's egress while the agent was away: removed.
	e.startScheduler()
	cfg2 := []kv{
		iface("if1"), iface("if2"),
		aclKV(&vppacl.ACL{Name: "a", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/8", "2.0.0.1/32")}, Interfaces: ifaces([]string{"if1", "if2"}, nil)}),
		cfg[4],
	}
	seq, err := e.resync(api.FullResync, cfg2...)
	if err != nil {
		t.Fatal(err)
	}
	ops := e.executed(seq)
	for _, want := range []string{"DELETE " + aclKey("b"), "DELETE " + aclplugin.ACLInterfaceKey("a", aclplugin.Egress, "if1")} {
		if !has(ops, want) {
			t.Errorf("resync without b executed %v, want %s", ops, want)
		}
	}
	if _, ok := e.acl("b"); ok {
		t.Errorf("b still in VPP")
	}
	if in, out := e.lists("if1"); !slices.Equal(in, []string{"a", "not ours!"}) || len(out) != 0 {
		t.Errorf("if1 lists %v %v, want input [a, not ours!]", in, out)
	}
	if a, ok := e.acl("not ours!"); !ok || a.Index != theirs {
		t.Errorf("their ACL is gone")
	}
	if !slices.ContainsFunc(e.macipACLs(), func(m vppcalls.MACIPACL) bool { return m.Index == theirMACIP }) {
		t.Errorf("their MAC-IP ACL is gone")
	}
	e.mustResyncNothing("after the removal", cfg2...)

	// VPP restarts, empty: everything is created again.
	if !e.vpp.CanRestart() {
		t.Log("the VPP restart is left out: the tests do not restart the user's VPP")
		return
	}
	e.vpp.Restart()
	e.beforeIP, e.beforeMACIP = nil, nil
	if _, err := e.resync(api.DownstreamResync); err != nil {
		t.Fatal(err)
	}
	e.mustACL("a")
	e.mustMACIPACL("m")
	if in, _ := e.lists("if2"); !slices.Equal(in, []string{"a"}) {
		t.Errorf("if2 input %v after the VPP restart, want [a]", in)
	}
	if tag := e.macipOf("if2"); tag != "m" {
		t.Errorf("if2 MAC-IP ACL %q after the VPP restart, want m", tag)
	}
	e.mustResyncNothing("after the VPP restart", cfg2...)
}

// Changes behind the agent's back are repaired by a resync: rules
// replaced, an assignment taken off, a MAC-IP ACL moved, an ACL deleted.
func TestDriftRepaired(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := &vppacl.ACL{Name: "a", Rules: []*vppacl.ACL_Rule{tcpRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/8", 22, 0)}, Interfaces: ifaces([]string{"if1"}, []string{"if2"})}
	m := &vppacl.ACL{Name: "m", Rules: []*vppacl.ACL_Rule{macipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.1", 24, "", "")}, Interfaces: ifaces([]string{"if1"}, nil)}
	cfg := []kv{iface("if1"), iface("if2"), aclKV(a), aclKV(m)}
	e.mustCommit(cfg...)
	ia, im := e.mustACL("a"), e.mustMACIPACL("m")
	wantRules := ia.Rules

	resync := func(what string, want ...string) {
		t.Helper()
		seq, err := e.resync(api.FullResync, cfg...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		ops := e.executed(seq)
		for _, w := range want {
			if !has(ops, w) {
				t.Errorf("%s: resync executed %v, want %s", what, ops, w)
			}
		}
		if got := e.mustACL("a"); !slices.Equal(got.Rules, wantRules) {
			t.Errorf("%s: rules of a %v, want %v", what, got.Rules, wantRules)
		}
		if in, _ := e.lists("if1"); !slices.Equal(in, []string{"a"}) {
			t.Errorf("%s: if1 input %v", what, in)
		}
		if _, out := e.lists("if2"); !slices.Equal(out, []string{"a"}) {
			t.Errorf("%s: if2 output %v", what, out)
		}
		if tag := e.macipOf("if1"); tag != "m" {
			t.Errorf("%s: if1 MAC-IP ACL %q", what, tag)
		}
		e.mustResyncNothing(what+", repaired", cfg...)
	}

	if err := e.h.ReplaceACL(ctx, ia.Index, "a", []vppcalls.IPRule{{Action: vppcalls.Deny, Src: pfx("0.0.0.0/0"), Dst: pfx("0.0.0.0/0"), Proto: 6, SrcPort: vppcalls.Range{Last: 65535}, DstPort: vppcalls.Range{First: 22, Last: 23}}}); err != nil {
		t.Fatal(err)
	}
	resync("rules replaced", "UPDATE "+aclKey("a"))

	if err := e.h.SetInterfaceACLs(ctx, e.swIfIndex("if2"), vppcalls.InterfaceACLs{}); err != nil {
		t.Fatal(err)
	}
	resync("assignment taken off", "CREATE "+aclplugin.ACLInterfaceKey("a", aclplugin.Egress, "if2"))

	if err := e.h.SetInterfaceMACIPACL(ctx, e.swIfIndex("if2"), im.Index); err != nil {
		t.Fatal(err)
	}
	if err := e.h.UnsetInterfaceMACIPACL(ctx, e.swIfIndex("if1")); err != nil {
		t.Fatal(err)
	}
	resync("MAC-IP ACL moved", "CREATE "+aclplugin.ACLInterfaceKey("m", aclplugin.Ingress, "if1"), "DELETE "+aclplugin.ACLInterfaceKey("m", aclplugin.Ingress, "if2"))
	if tag := e.macipOf("if2"); tag != "" {
		t.Errorf("if2 still has MAC-IP ACL %q", tag)
	}

	for _, sw := range []uint32{e.swIfIndex("if1"), e.swIfIndex("if2")} {
		if err := e.h.SetInterfaceACLs(ctx, sw, vppcalls.InterfaceACLs{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.h.DeleteACL(ctx, ia.Index); err != nil {
		t.Fatal(err)
	}
	if err := e.h.DeleteMACIPACL(ctx, im.Index); err != nil {
		t.Fatal(err)
	}
	resync("ACLs deleted", "CREATE "+aclKey("a"), "CREATE "+aclKey("m"), "CREATE "+aclplugin.ACLInterfaceKey("a", aclplugin.Ingress, "if1"))
}

// An update of an ACL someone deleted fails (retriable), naming it; a
// resync creates it again.
func TestUpdateOfACLDeletedBehindAgentsBack(t *testing.T) {
	e := newEnv(t)
	a := &vppacl.ACL{Name: "a", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/8", "")}}
	e.mustCommit(aclKV(a))
	if err := e.h.DeleteACL(context.Background(), e.mustACL("a").Index); err != nil {
		t.Fatal(err)
	}
	a2 := &vppacl.ACL{Name: "a", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_DENY, "10.0.0.0/8", "")}}
	_, err := e.commit(aclKV(a2))
	if err == nil || !strings.Contains(err.Error(), `no IP ACL tagged "a"`) {
		t.Errorf("update of a deleted ACL: %v", err)
	}
	if _, err := e.resync(api.FullResync, aclKV(a2)); err != nil {
		t.Fatal(err)
	}
	if got := e.mustACL("a"); got.Rules[0].Action != vppcalls.Deny {
		t.Errorf("after the resync: %+v", got)
	}
}

// A VPP without the acl plugin: the area is disabled (the agent is ready
// all the same: the area is optional), the ACLs fail naming the messages
// and are not retried, and a resync reports none.
func TestVPPWithoutACLPlugin(t *testing.T) {
	e := newEnvWith(t, vppsim.Options{Omit: []string{"acl_add_replace"}})
	st := e.m.Status()
	if d := st.Disabled[aclplugin.AreaName]; len(d) == 0 {
		t.Fatalf("area %s not disabled: %+v", aclplugin.AreaName, st)
	}
	if nr := st.NotReady(); len(nr) != 0 {
		t.Errorf("not ready without the acl plugin: %v (the area is optional)", nr)
	}
	a := &vppacl.ACL{Name: "a", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/8", "")}}
	_, err := e.commitWith(api.TxnOptions{Retry: &api.RetryOpt{Period: time.Millisecond, MaxCount: 3}}, aclKV(a))
	if err == nil || !strings.Contains(err.Error(), "acl_add_replace") {
		t.Errorf("commit: %v, want an error naming acl_add_replace", err)
	}
	e.s.TransactionBarrier()
	if st := e.status(aclKey("a")); st.GetState() != api.ValueStateFailed {
		t.Errorf("status %v, want FAILED (not retried)", st)
	}
	if _, err := e.resync(api.FullResync, aclKV(a)); err == nil {
		t.Errorf("resync: the ACL did not fail")
	}
}

package l2plugin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

// zeroTime leaves an end of GetTransactionHistory open.
var zeroTime time.Time

func domain(name string, members ...*vppl2.BridgeDomain_Interface) kv {
	return bdKV(&vppl2.BridgeDomain{Name: name, Forward: true, Learn: true, Interfaces: members})
}

func member(name string) *vppl2.BridgeDomain_Interface {
	return &vppl2.BridgeDomain_Interface{Name: name}
}

// conflictOf returns the MembershipConflictError of key in a commit error.
func conflictOf(t *testing.T, err error, key string) *l2plugin.MembershipConflictError {
	t.Helper()
	var te *api.TransactionError
	if !errors.As(err, &te) {
		t.Fatalf("commit error %v, want a TransactionError", err)
	}
	var conflict *l2plugin.MembershipConflictError
	if !errors.As(te.ErrorOf(key), &conflict) {
		t.Fatalf("error of %s: %v, want a MembershipConflictError (all: %v)", key, te.ErrorOf(key), err)
	}
	return conflict
}

// TestInterfaceInTwoBridgeDomains: the configuration puts loop2 into bd2
// while it is a member of bd1. VPP would move it (an interface is in one
// bridge domain at most) and bd1's binding would move it back at every
// resync: the second binding is refused instead, naming both domains, and
// nothing moves on resync; when bd1 lets loop2 go, bd2 gets it.
func TestInterfaceInTwoBridgeDomains(t *testing.T) {
	e := newEnv(t)
	bd1 := domain("bd1", &vppl2.BridgeDomain_Interface{Name: "loop1", BridgedVirtualInterface: true}, member("loop2"))
	bd2 := domain("bd2", member("loop2"))
	in1, in2 := l2plugin.BDInterfaceKey("bd1", "loop2"), l2plugin.BDInterfaceKey("bd2", "loop2")
	e.mustCommit(iface("loop1"), iface("loop2"), bd1)
	loop1, loop2 := e.swIfIndex("loop1"), e.swIfIndex("loop2")

	_, err := e.commit(bd2)
	conflict := conflictOf(t, err, in2)
	if conflict.Interface != "loop2" || conflict.BridgeDomain != "bd2" || conflict.Holder != "bd1" || conflict.HolderForeign {
		t.Errorf("conflict %+v, want loop2 refused in bd2, held by bd1", conflict)
	}
	const reason = "interface loop2 not added to bridge domain bd2: it is already a member of bridge domain bd1 (an interface can be in one bridge domain)"
	states := map[string]api.ValueState{
		bdKey("bd1"): api.ValueStateConfigured, bdKey("bd2"): api.ValueStateConfigured,
		in1: api.ValueStateConfigured, in2: api.ValueStateFailed,
	}
	check := func(when string) {
		t.Helper()
		e.expectStates(when, states)
		if st := e.status(in2); st.GetError() != reason {
			t.Errorf("%s: %s error %q, want %q", when, in2, st.GetError(), reason)
		}
		if got := e.memberIndexes("bd1"); !slices.Equal(got, sortedIndexes(loop1, loop2)) {
			t.Errorf("%s: members of bd1 in VPP %v, want loop1 (%d) and loop2 (%d)", when, got, loop1, loop2)
		}
		if got := e.memberIndexes("bd2"); len(got) != 0 {
			t.Errorf("%s: members of bd2 in VPP %v, want none", when, got)
		}
	}
	check("refused")

	// A resync tries the refused binding again (the scheduler retries a
	// FAILED value on every resync): it is refused again, VPP is not
	// touched, nothing else is done.
	cfg := []kv{iface("loop1"), iface("loop2"), bd1, bd2}
	resync := func(when string) {
		t.Helper()
		e.resetCalls()
		seq, err := e.resync(api.FullResync, cfg...)
		conflictOf(t, err, in2)
		if ops := e.executed(seq); !slices.Equal(ops, []string{"CREATE " + in2 + " [DERIVED]"}) {
			t.Errorf("%s: executed %v, want only the refused binding tried again", when, ops)
		}
		if w, _ := e.writes(); len(w) != 0 {
			t.Errorf("%s: wrote %v to VPP", when, w)
		}
		check(when)
	}
	resync("first resync")
	resync("second resync")
	e.startScheduler()
	resync("resync of a restarted agent")
	resync("its second resync")

	// bd1 lets loop2 go: the binding it refused is applied.
	bd1 = domain("bd1", &vppl2.BridgeDomain_Interface{Name: "loop1", BridgedVirtualInterface: true})
	seq := e.mustCommit(bd1)
	if ops := e.executed(seq); !slices.Contains(ops, "DELETE "+in1+" [DERIVED]") {
		t.Errorf("executed %v, want bd1's binding of loop2 deleted", ops)
	}
	e.s.TransactionBarrier() // the resync the delete queued
	if st := e.status(in2); st.GetState() != api.ValueStateConfigured {
		t.Errorf("%s after bd1 let loop2 go: %v, want CONFIGURED", in2, st)
	}
	if st := e.state(in1); st != api.ValueStateNonexistent {
		t.Errorf("%s: %v, want gone", in1, st)
	}
	if got := e.memberIndexes("bd2"); !slices.Equal(got, []uint32{loop2}) {
		t.Errorf("members of bd2 in VPP %v, want loop2 (%d)", got, loop2)
	}
	if got := e.memberIndexes("bd1"); !slices.Equal(got, []uint32{loop1}) {
		t.Errorf("members of bd1 in VPP %v, want loop1 (%d)", got, loop1)
	}
	handOver := false
	for _, rec := range e.s.GetTransactionHistory(zeroTime, zeroTime) {
		if rec.SeqNum > seq && rec.ResyncType == api.DownstreamResync && strings.Contains(rec.Description, in2) {
			handOver = slices.Equal(e.executed(rec.SeqNum), []string{"CREATE " + in2 + " [DERIVED FIXED]"})
		}
	}
	if !handOver {
		t.Errorf("no downstream resync after transaction %d that created only %s", seq, in2)
	}
	cfg = []kv{iface("loop1"), iface("loop2"), bd1, bd2}
	for _, when := range []string{"first resync after the hand-over", "second"} {
		if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
			t.Errorf("%s executed %v", when, ops)
		}
	}
}

// TestInterfaceInTwoNewBridgeDomains: two domains created in one
// transaction name the same interface: the first (in key order) gets it,
// the second's binding is refused, and resyncs keep it so.
func TestInterfaceInTwoNewBridgeDomains(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(iface("x"))
	cfg := []kv{iface("x"), domain("bdA", member("x")), domain("bdB", member("x"))}
	_, err := e.commit(cfg[1:]...)
	conflict := conflictOf(t, err, l2plugin.BDInterfaceKey("bdB", "x"))
	if conflict.Holder != "bdA" {
		t.Errorf("conflict %+v, want x held by bdA", conflict)
	}
	x := e.swIfIndex("x")
	for range 2 {
		seq, err := e.resync(api.FullResync, cfg...)
		conflictOf(t, err, l2plugin.BDInterfaceKey("bdB", "x"))
		if ops := e.executed(seq); len(ops) != 1 {
			t.Errorf("resync executed %v, want only bdB's binding tried again", ops)
		}
		if a, b := e.memberIndexes("bdA"), e.memberIndexes("bdB"); !slices.Equal(a, []uint32{x}) || len(b) != 0 {
			t.Errorf("members in VPP: bdA %v, bdB %v; want x (%d) in bdA only", a, b, x)
		}
	}
}

// TestInterfaceInForeignBridgeDomain: an interface someone else put into a
// domain that is not the agent's is not taken out of it.
func TestInterfaceInForeignBridgeDomain(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(iface("x"))
	x := e.swIfIndex("x")
	foreignID := e.vpp.FreeBdIDs(1)[0]
	conn, err := e.m.Conn(l2plugin.AreaName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l2.NewServiceClient(conn).BridgeDomainAddDelV2(context.Background(), &l2.BridgeDomainAddDelV2{BdID: foreignID, IsAdd: true}); err != nil {
		t.Fatal(err)
	}
	e.setL2Bridge(x, foreignID, true)
	t.Cleanup(func() { e.setL2Bridge(x, foreignID, false) })
	_, err = e.commit(domain("mine", member("x")))
	conflict := conflictOf(t, err, l2plugin.BDInterfaceKey("mine", "x"))
	if !conflict.HolderForeign || conflict.HolderID != foreignID {
		t.Errorf("conflict %+v, want x held by the foreign bd_id %d", conflict, foreignID)
	}
	if want := fmt.Sprintf("bridge domain with bd_id %d (not the agent's)", foreignID); !strings.Contains(conflict.Error(), want) {
		t.Errorf("error %q does not say %q", conflict.Error(), want)
	}
	if got := e.memberIndexes("mine"); len(got) != 0 {
		t.Errorf("members of mine %v, want none", got)
	}
}

// TestInterfaceInTwoBridgeDomainsWithoutScheduler: a plugin without
// SetScheduler refuses the second binding too (bd1's value names loop2),
// and applies it at the resync after bd1 let loop2 go.
func TestInterfaceInTwoBridgeDomainsWithoutScheduler(t *testing.T) {
	e := newEnv(t)
	e.noScheduler = true
	e.startScheduler()
	e.mustCommit(iface("loop2"), domain("bd1", member("loop2")))
	in2 := l2plugin.BDInterfaceKey("bd2", "loop2")
	_, err := e.commit(domain("bd2", member("loop2")))
	if c := conflictOf(t, err, in2); c.Holder != "bd1" {
		t.Errorf("conflict %+v, want loop2 held by bd1", c)
	}
	e.mustCommit(domain("bd1"))
	if st := e.state(in2); st != api.ValueStateFailed {
		t.Errorf("%s: %v, want FAILED until a resync", in2, st)
	}
	ops := e.mustResync(api.FullResync, iface("loop2"), domain("bd1"), domain("bd2", member("loop2")))
	if !slices.Equal(ops, []string{"CREATE " + in2 + " [DERIVED FIXED]"}) {
		t.Errorf("resync executed %v, want bd2's binding created", ops)
	}
	if got := e.memberIndexes("bd2"); !slices.Equal(got, []uint32{e.swIfIndex("loop2")}) {
		t.Errorf("members of bd2 %v, want loop2", got)
	}
}

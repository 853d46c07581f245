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
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
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

// membershipLabel is the label of the dependency by which the bindings of
// iface wait for each other.
func membershipLabel(iface string) string {
	return "interface " + iface + " in no other bridge domain or cross-connect"
}

// expectWaiting fails the test unless binding key waits, PENDING without
// an error, for the membership of iface that holder (a binding key) holds.
func (e *env) expectWaiting(when, key, iface, holder string) {
	e.t.Helper()
	st := e.status(key)
	named := slices.ContainsFunc(st.GetDetails(), func(d string) bool {
		return strings.Contains(d, membershipLabel(iface)) && strings.Contains(d, holder)
	})
	if st.GetState() != api.ValueStatePending || st.GetError() != "" || !named {
		e.t.Errorf("%s: %s is %v, want PENDING with details naming %q and the holder %s", when, key, st, membershipLabel(iface), holder)
	}
}

// opsOn returns the operations of ops (vpptest.Executed's) on the given
// keys, in their order, without their flags: "CREATE <key>".
func opsOn(ops []string, keys ...string) []string {
	var out []string
	for _, op := range ops {
		f := strings.Fields(op)
		if len(f) >= 2 && slices.Contains(keys, f[1]) {
			out = append(out, f[0]+" "+f[1])
		}
	}
	return out
}

// expectNoTxnAfter fails the test when a transaction ran after seq (a
// follow-up or resync the plugin would have asked for).
func (e *env) expectNoTxnAfter(seq uint64) {
	e.t.Helper()
	e.s.TransactionBarrier()
	for _, rec := range e.s.GetTransactionHistory(zeroTime, zeroTime) {
		if rec.SeqNum > seq {
			e.t.Errorf("transaction %d (%v %q) ran after %d, want none", rec.SeqNum, rec.TxnType, rec.Description, seq)
		}
	}
}

// expectNoMembershipWrites fails the test when the simulator was asked to
// change a membership since resetCalls (a real VPP keeps no such log: the
// dumps of the callers check it).
func (e *env) expectNoMembershipWrites(when string) {
	e.t.Helper()
	if w, ok := e.writes(); ok && count(w, "sw_interface_set_l2_bridge") != 0 {
		e.t.Errorf("%s: VPP writes %v, want no sw_interface_set_l2_bridge", when, w)
	}
}

// waitFor polls cond for up to 10 s.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestInterfaceInTwoBridgeDomains: the configuration puts loop2 into bd2
// while it is a member of bd1. VPP would move it (an interface is in one
// bridge domain at most) and bd1's binding would move it back at every
// resync: bd2's binding waits instead, PENDING, naming bd1's, VPP
// untouched, no Create called, and resyncs keep it so. When bd1 lets loop2
// go, bd2 gets it in that same transaction.
func TestInterfaceInTwoBridgeDomains(t *testing.T) {
	e := newEnv(t)
	bd1 := domain("bd1", &vppl2.BridgeDomain_Interface{Name: "loop1", BridgedVirtualInterface: true}, member("loop2"))
	bd2 := domain("bd2", member("loop2"))
	in1, in2 := l2plugin.BDInterfaceKey("bd1", "loop2"), l2plugin.BDInterfaceKey("bd2", "loop2")
	e.mustCommit(iface("loop1"), iface("loop2"), bd1)
	loop1, loop2 := e.swIfIndex("loop1"), e.swIfIndex("loop2")

	e.resetCalls()
	seq := e.mustCommit(bd2) // a binding that waits is no failure
	if ops := opsOn(e.executed(seq), in1, in2); len(ops) != 0 {
		t.Errorf("adding bd2 executed %v on the bindings of loop2, want nothing", ops)
	}
	e.expectNoMembershipWrites("bd2 added")
	states := map[string]api.ValueState{
		bdKey("bd1"): api.ValueStateConfigured, bdKey("bd2"): api.ValueStateConfigured,
		in1: api.ValueStateConfigured, in2: api.ValueStatePending,
	}
	check := func(when string) {
		t.Helper()
		e.expectStates(when, states)
		e.expectWaiting(when, in2, "loop2", in1)
		if got := e.memberIndexes("bd1"); !slices.Equal(got, sortedIndexes(loop1, loop2)) {
			t.Errorf("%s: members of bd1 in VPP %v, want loop1 (%d) and loop2 (%d)", when, got, loop1, loop2)
		}
		if got := e.memberIndexes("bd2"); len(got) != 0 {
			t.Errorf("%s: members of bd2 in VPP %v, want none", when, got)
		}
	}
	check("bd2 added")

	// Resyncs, of the running agent and of a restarted one, find the
	// waiting binding waiting: nothing to do.
	cfg := []kv{iface("loop1"), iface("loop2"), bd1, bd2}
	noop := func(when string, typ api.ResyncType, kvs ...kv) {
		t.Helper()
		e.resetCalls()
		if ops := e.mustResync(typ, kvs...); len(ops) != 0 {
			t.Errorf("%s: executed %v, want nothing", when, ops)
		}
		if w, _ := e.writes(); len(w) != 0 {
			t.Errorf("%s: wrote %v to VPP", when, w)
		}
		check(when)
	}
	noop("first resync", api.FullResync, cfg...)
	noop("second resync", api.FullResync, cfg...)
	noop("downstream resync", api.DownstreamResync)
	e.startScheduler()
	noop("resync of a restarted agent", api.FullResync, cfg...)
	noop("its second resync", api.FullResync, cfg...)

	// bd1 lets loop2 go: the same transaction takes it out of bd1, then
	// puts it into bd2.
	bd1 = domain("bd1", &vppl2.BridgeDomain_Interface{Name: "loop1", BridgedVirtualInterface: true})
	seq = e.mustCommit(bd1)
	if ops := opsOn(e.executed(seq), in1, in2); !slices.Equal(ops, []string{"DELETE " + in1, "CREATE " + in2}) {
		t.Errorf("bd1 letting loop2 go executed %v on the bindings of loop2, want %s deleted, then %s created", ops, in1, in2)
	}
	if st := e.status(in2); st.GetState() != api.ValueStateConfigured {
		t.Errorf("%s right after bd1 let loop2 go: %v, want CONFIGURED", in2, st)
	}
	if st := e.state(in1); st != api.ValueStateNonexistent {
		t.Errorf("%s: %v, want gone", in1, st)
	}
	e.expectNoTxnAfter(seq)
	if got := e.memberIndexes("bd2"); !slices.Equal(got, []uint32{loop2}) {
		t.Errorf("members of bd2 in VPP %v, want loop2 (%d)", got, loop2)
	}
	if got := e.memberIndexes("bd1"); !slices.Equal(got, []uint32{loop1}) {
		t.Errorf("members of bd1 in VPP %v, want loop1 (%d)", got, loop1)
	}
	cfg = []kv{iface("loop1"), iface("loop2"), bd1, bd2}
	for _, when := range []string{"first resync after the hand-over", "second"} {
		if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
			t.Errorf("%s executed %v", when, ops)
		}
	}
}

// TestHolderGoesWithItsDomain: the domain that holds the interface is
// deleted: the waiting binding is created in that transaction, after the
// holder's binding was deleted and before the domain is.
func TestHolderGoesWithItsDomain(t *testing.T) {
	e := newEnv(t)
	in1, in2 := l2plugin.BDInterfaceKey("bd1", "x"), l2plugin.BDInterfaceKey("bd2", "x")
	e.mustCommit(iface("x"), domain("bd1", member("x")))
	e.mustCommit(domain("bd2", member("x")))
	e.expectWaiting("bd2 added", in2, "x", in1)

	seq := e.mustCommit(del(bdKey("bd1")))
	ops := opsOn(e.executed(seq), in1, in2, bdKey("bd1"))
	if !slices.Equal(ops, []string{"DELETE " + in1, "CREATE " + in2, "DELETE " + bdKey("bd1")}) && !slices.Equal(ops, []string{"DELETE " + in1, "DELETE " + bdKey("bd1"), "CREATE " + in2}) {
		t.Errorf("deleting bd1 executed %v, want %s deleted, then %s created, and bd1 deleted after its binding", ops, in1, in2)
	}
	e.expectStates("bd1 deleted", map[string]api.ValueState{
		bdKey("bd1"): api.ValueStateNonexistent, in1: api.ValueStateNonexistent, in2: api.ValueStateConfigured,
	})
	e.expectNoTxnAfter(seq)
	if _, ok := e.bd("bd1"); ok {
		t.Errorf("bd1 still in VPP")
	}
	if got := e.memberIndexes("bd2"); !slices.Equal(got, []uint32{e.swIfIndex("x")}) {
		t.Errorf("members of bd2 in VPP %v, want x", got)
	}
}

// TestInterfaceMovesInOneTransaction: one transaction takes x out of one
// domain and puts it into another. Whichever of the two keys sorts first,
// the old binding is deleted before the new one is created, nothing fails
// or waits, and no other transaction is needed.
func TestInterfaceMovesInOneTransaction(t *testing.T) {
	for _, move := range []struct{ from, to string }{
		{"b-old", "a-new"}, // the new binding's key sorts first
		{"a-old", "b-new"}, // the old one's does
	} {
		t.Run(move.from+"-to-"+move.to, func(t *testing.T) {
			e := newEnv(t)
			from, to := l2plugin.BDInterfaceKey(move.from, "x"), l2plugin.BDInterfaceKey(move.to, "x")
			e.mustCommit(iface("x"), domain(move.from, member("x")), domain(move.to))
			sw := e.swIfIndex("x")
			if got := e.memberIndexes(move.from); !slices.Equal(got, []uint32{sw}) {
				t.Fatalf("members of %s %v, want x (%d)", move.from, got, sw)
			}

			seq, err := e.commit(domain(move.from), domain(move.to, member("x")))
			if err != nil {
				t.Fatalf("move: %v", err)
			}
			if ops := opsOn(e.executed(seq), from, to); !slices.Equal(ops, []string{"DELETE " + from, "CREATE " + to}) {
				t.Errorf("move executed %v on the bindings of x, want %s deleted, then %s created", ops, from, to)
			}
			e.expectStates("moved", map[string]api.ValueState{from: api.ValueStateNonexistent, to: api.ValueStateConfigured})
			e.expectNoTxnAfter(seq)
			if got := e.memberIndexes(move.to); !slices.Equal(got, []uint32{sw}) {
				t.Errorf("members of %s %v, want x (%d)", move.to, got, sw)
			}
			if got := e.memberIndexes(move.from); len(got) != 0 {
				t.Errorf("members of %s %v, want none", move.from, got)
			}
			cfg := []kv{iface("x"), domain(move.from), domain(move.to, member("x"))}
			if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
				t.Errorf("resync after the move executed %v", ops)
			}
		})
	}
}

// TestInterfaceInTwoNewBridgeDomains: two domains created in one
// transaction name the same interface: the binding whose key sorts first
// gets it, the other waits, naming it; resyncs, of the running agent and of a restarted one,
// keep it so.
func TestInterfaceInTwoNewBridgeDomains(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(iface("x"))
	inA, inB := l2plugin.BDInterfaceKey("bdA", "x"), l2plugin.BDInterfaceKey("bdB", "x")
	cfg := []kv{iface("x"), domain("bdA", member("x")), domain("bdB", member("x"))}
	e.resetCalls()
	seq := e.mustCommit(cfg[1:]...)
	if w, ok := e.writes(); ok && count(w, "sw_interface_set_l2_bridge") != 1 {
		t.Errorf("VPP writes %v, want one sw_interface_set_l2_bridge", w)
	}
	// The scheduler tries values that become creatable together in key
	// order: bdA's binding is first.
	holder, waiting, holderBD, waitingBD := inA, inB, "bdA", "bdB"
	if ops := opsOn(e.executed(seq), inA, inB); !slices.Equal(ops, []string{"CREATE " + holder}) {
		t.Errorf("executed %v on the bindings of x, want one CREATE", ops)
	}
	x := e.swIfIndex("x")
	check := func(when string) {
		t.Helper()
		if st := e.state(holder); st != api.ValueStateConfigured {
			t.Errorf("%s: %s is %v, want CONFIGURED", when, holder, st)
		}
		e.expectWaiting(when, waiting, "x", holder)
		if h, w := e.memberIndexes(holderBD), e.memberIndexes(waitingBD); !slices.Equal(h, []uint32{x}) || len(w) != 0 {
			t.Errorf("%s: members in VPP: %s %v, %s %v; want x (%d) in %s only", when, holderBD, h, waitingBD, w, x, holderBD)
		}
	}
	check("created")
	for _, when := range []string{"first resync", "second resync", "resync of a restarted agent"} {
		if strings.Contains(when, "restarted") {
			e.startScheduler()
		}
		if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
			t.Errorf("%s executed %v", when, ops)
		}
		check(when)
	}
}

// TestWhatVPPHasHolds: the binding VPP has holds the interface over
// restarts, whatever the order of the keys: the agent restarts with both
// bindings wanted, the one whose key sorts last already in VPP; VPP
// restarts, empty, and gets the first in key order back; the agent
// restarts again.
func TestWhatVPPHasHolds(t *testing.T) {
	e := newEnv(t)
	inA, inZ := l2plugin.BDInterfaceKey("bd-a", "x"), l2plugin.BDInterfaceKey("bd-z", "x")
	e.mustCommit(iface("x"), domain("bd-z", member("x")))
	cfg := []kv{iface("x"), domain("bd-a", member("x")), domain("bd-z", member("x"))}

	// The agent restarts; the configuration has x in bd-a too.
	e.startScheduler()
	e.resetCalls()
	ops := e.mustResync(api.FullResync, cfg...)
	if got := opsOn(ops, inA, inZ); len(got) != 0 {
		t.Errorf("resync of the restarted agent executed %v on the bindings of x, want nothing", got)
	}
	e.expectNoMembershipWrites("resync of the restarted agent")
	holds := func(when, holder, holderBD, waiting, waitingBD string) {
		t.Helper()
		if st := e.state(holder); st != api.ValueStateConfigured {
			t.Errorf("%s: %s is %v, want CONFIGURED", when, holder, st)
		}
		e.expectWaiting(when, waiting, "x", holder)
		x := e.swIfIndex("x")
		if h, w := e.memberIndexes(holderBD), e.memberIndexes(waitingBD); !slices.Equal(h, []uint32{x}) || len(w) != 0 {
			t.Errorf("%s: members in VPP: %s %v, %s %v; want x (%d) in %s only", when, holderBD, h, waitingBD, w, x, holderBD)
		}
	}
	holds("restarted agent", inZ, "bd-z", inA, "bd-a")
	if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
		t.Errorf("second resync executed %v", ops)
	}
	holds("second resync", inZ, "bd-z", inA, "bd-a")

	if !e.vpp.CanRestart() {
		t.Log("the VPP restart is left out: the tests do not restart the user's VPP")
		return
	}
	// VPP restarts, empty: both bindings of x can be created again, and
	// the scheduler tries values that become creatable together in key
	// order: bd-a's gets x, bd-z's waits.
	e.vpp.Restart()
	if _, err := e.resync(api.DownstreamResync); err != nil {
		t.Fatal(err)
	}
	holds("VPP restarted", inA, "bd-a", inZ, "bd-z")

	// The agent restarts: what VPP has now holds.
	e.startScheduler()
	if ops := e.mustResync(api.FullResync, cfg...); len(opsOn(ops, inA, inZ)) != 0 {
		t.Errorf("resync of the agent restarted after VPP executed %v on the bindings of x, want nothing", ops)
	}
	holds("agent restarted after VPP", inA, "bd-a", inZ, "bd-z")
}

// TestInterfaceInForeignBridgeDomain: an interface someone else put into a
// domain that is not the agent's is not taken out of it: its binding fails
// (retriable, VPP untouched), and is applied by a resync once the
// interface has left that domain.
func TestInterfaceInForeignBridgeDomain(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(iface("x"))
	x := e.swIfIndex("x")
	foreignID := e.vpp.FreeBdIDs(1)[0]
	if _, err := e.l2().BridgeDomainAddDelV2(context.Background(), &l2.BridgeDomainAddDelV2{BdID: foreignID, IsAdd: true}); err != nil {
		t.Fatal(err)
	}
	e.setL2Bridge(x, foreignID, true)
	key := l2plugin.BDInterfaceKey("mine", "x")

	// With retries: a retriable failure is tried again.
	e.resetCalls()
	_, err := e.commitWith(api.TxnOptions{Retry: &api.RetryOpt{Period: time.Millisecond, MaxCount: 2}}, domain("mine", member("x")))
	conflict := conflictOf(t, err, key)
	if conflict.Interface != "x" || conflict.BridgeDomain != "mine" || conflict.HolderID != foreignID || conflict.HolderTag != "" {
		t.Errorf("conflict %+v, want x refused in mine, held by the foreign bd_id %d", conflict, foreignID)
	}
	want := fmt.Sprintf("interface x not added to bridge domain mine: it is already a member of bridge domain with bd_id %d (not the agent's) (an interface can be in one bridge domain)", foreignID)
	if conflict.Error() != want {
		t.Errorf("error %q, want %q", conflict.Error(), want)
	}
	// The retries run on timers, which a TransactionBarrier does not wait
	// for: the value is RETRYING until the last one failed.
	e.waitFor("the retries of "+key, func() bool { return e.state(key) != api.ValueStateRetrying })
	e.s.TransactionBarrier()
	retried := 0
	for _, rec := range e.s.GetTransactionHistory(zeroTime, zeroTime) {
		if rec.TxnType == api.RetryFailedOps && slices.ContainsFunc(rec.Executed, func(op *api.RecordedTxnOp) bool { return op.Key == key && !op.NOOP }) {
			retried++
		}
	}
	if retried != 2 {
		t.Errorf("%s retried %d times, want 2 (a retriable failure)", key, retried)
	}
	if st := e.status(key); st.GetState() != api.ValueStateFailed || st.GetError() != want {
		t.Errorf("%s: %v, want FAILED with %q", key, st, want)
	}
	e.expectNoMembershipWrites("refused")
	if got := e.memberIndexes("mine"); len(got) != 0 {
		t.Errorf("members of mine %v, want none", got)
	}
	if !slices.ContainsFunc(e.vpp.DumpBridgeDomains(), func(b vpptest.BridgeDomain) bool {
		return b.BdID == foreignID && slices.Equal(b.MemberIndexes(), []uint32{x})
	}) {
		t.Errorf("the foreign bridge domain %d lost x: %+v", foreignID, e.vpp.DumpBridgeDomains())
	}

	// Someone takes x out of the foreign domain: a resync applies the binding.
	e.setL2Bridge(x, foreignID, false)
	ops := e.mustResync(api.FullResync, iface("x"), domain("mine", member("x")))
	if got := opsOn(ops, key); !slices.Equal(got, []string{"CREATE " + key}) {
		t.Errorf("resync executed %v, want %s created", ops, key)
	}
	if st := e.state(key); st != api.ValueStateConfigured {
		t.Errorf("%s after the resync: %v, want CONFIGURED", key, st)
	}
	if got := e.memberIndexes("mine"); !slices.Equal(got, []uint32{x}) {
		t.Errorf("members of mine %v, want x (%d)", got, x)
	}
}

// TestLeftBehindMembershipMoved: VPP has x in a domain of the agent's
// whose binding of x the scheduler does not hold (someone put it there
// behind the agent's back): the binding of another domain moves it,
// nothing fails.
func TestLeftBehindMembershipMoved(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(iface("x"), domain("bd1"), domain("bd2"))
	x := e.swIfIndex("x")
	e.setL2Bridge(x, e.mustBD("bd1").BdID, true)

	key := l2plugin.BDInterfaceKey("bd2", "x")
	seq := e.mustCommit(domain("bd2", member("x")))
	if ops := opsOn(e.executed(seq), key); !slices.Equal(ops, []string{"CREATE " + key}) {
		t.Errorf("executed %v, want %s created", ops, key)
	}
	if st := e.state(key); st != api.ValueStateConfigured {
		t.Errorf("%s: %v, want CONFIGURED", key, st)
	}
	if got := e.memberIndexes("bd2"); !slices.Equal(got, []uint32{x}) {
		t.Errorf("members of bd2 %v, want x (%d)", got, x)
	}
	if got := e.memberIndexes("bd1"); len(got) != 0 {
		t.Errorf("members of bd1 %v, want none (x moved)", got)
	}
	if ops := e.mustResync(api.FullResync, iface("x"), domain("bd1"), domain("bd2", member("x"))); len(ops) != 0 {
		t.Errorf("resync after the move executed %v", ops)
	}
}

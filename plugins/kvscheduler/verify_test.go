package kvscheduler_test

// Verification after apply (Options.Verify, TxnOptions.Verify): the values a
// transaction changed are read back from the SB, which here forgets or
// alters what it reports as done (mocksb.Lose, mocksb.Substitute).

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// newVerifyEnv is newEnv with the scheduler's Verify option.
func newVerifyEnv(t *testing.T, mode kvscheduler.VerifyMode) *env {
	t.Helper()
	e := &env{
		t:  t,
		s:  kvscheduler.New(kvscheduler.Options{Logger: testLogger(t), FirstRevision: 1, Verify: mode}),
		sb: mocksb.New(),
	}
	t.Cleanup(e.s.Close)
	return e
}

// lastRecord returns the record of the last transaction.
func (e *env) lastRecord() *api.RecordedTxn {
	e.t.Helper()
	h := e.s.GetTransactionHistory(time.Time{}, time.Time{})
	if len(h) == 0 {
		e.t.Fatalf("no transaction recorded")
	}
	return h[len(h)-1]
}

// expectVerifyFailed checks the keys (and operations) of the record's
// VerifyFailed and that each error is a *api.VerifyError whose text has
// what.
func expectVerifyFailed(t *testing.T, rec *api.RecordedTxn, want map[string]api.TxnOperation, what map[string]string) {
	t.Helper()
	got := map[string]api.TxnOperation{}
	for _, kv := range rec.VerifyFailed {
		got[kv.Key] = kv.Operation
		var ve *api.VerifyError
		if !errors.As(kv.Error, &ve) || ve.Key != kv.Key {
			t.Errorf("VerifyFailed %s: error %T %v, want a *api.VerifyError of the key", kv.Key, kv.Error, kv.Error)
		}
		if !strings.Contains(kv.Error.Error(), what[kv.Key]) {
			t.Errorf("VerifyFailed %s: %q, want it to say %q", kv.Key, kv.Error, what[kv.Key])
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("txn %d: VerifyFailed %v, want %v", rec.SeqNum, got, want)
	}
}

func TestVerifyReportLostAndAlteredValues(t *testing.T) {
	e := newVerifyEnv(t, kvscheduler.VerifyReport)
	e.register(ifaces(), routes())
	ctx := context.Background()

	// A create the SB forgets and one it stores otherwise: both reported,
	// MISSING with what the SB holds as applied; the others verified.
	e.sb.Lose("create", "route/lost")
	e.sb.Substitute("create", "route/other", mocksb.Str("10.9.9.0/24 dep=iface/a"))
	_, err := e.commit(ctx, set("iface/a", "a"), set("route/lost", "10.1.0.0/24 dep=iface/a"),
		set("route/other", "10.2.0.0/24 dep=iface/a"), set("route/ok", "10.3.0.0/24 dep=iface/a"))
	te := txnErr(t, err)
	expectKVErrors(t, te, api.ErrVerifyFailed, map[string]api.TxnOperation{"route/lost": api.OpCreate, "route/other": api.OpCreate})
	e.expectOpsWithRetrieve("create",
		"create iface/a=a",
		"create route/lost=10.1.0.0/24 dep=iface/a",
		"create route/ok=10.3.0.0/24 dep=iface/a",
		"create route/other=10.2.0.0/24 dep=iface/a",
		"retrieve iface", // one Retrieve per descriptor touched
		"retrieve route")
	expectVerifyFailed(t, e.lastRecord(), map[string]api.TxnOperation{"route/lost": api.OpCreate, "route/other": api.OpCreate},
		map[string]string{"route/lost": "does not hold it", "route/other": `holds value:"10.9.9.0/24 dep=iface/a"`})
	e.expectState("iface/a", api.ValueStateConfigured)
	e.expectState("route/ok", api.ValueStateConfigured)
	if st := e.expectState("route/lost", api.ValueStateMissing); st != nil && !strings.Contains(st.GetError(), "verification after apply: the SB does not hold it") {
		t.Errorf("route/lost: error %q, want the verification failure", st.GetError())
	}
	e.expectState("route/other", api.ValueStateMissing)
	e.expectSB("after create", map[string]string{"iface/a": "a", "route/ok": "10.3.0.0/24 dep=iface/a", "route/other": "10.9.9.0/24 dep=iface/a"})

	// The graph holds what the SB holds: a resync creates the lost route and
	// updates the other, nothing else.
	if _, err := e.resync(set("iface/a", "a"), set("route/lost", "10.1.0.0/24 dep=iface/a"),
		set("route/other", "10.2.0.0/24 dep=iface/a"), set("route/ok", "10.3.0.0/24 dep=iface/a")); err != nil {
		t.Fatalf("resync: %v", err)
	}
	e.expectOps("resync", "create route/lost=10.1.0.0/24 dep=iface/a", "update route/other=10.2.0.0/24 dep=iface/a")
	e.expectState("route/lost", api.ValueStateConfigured)
	e.expectState("route/other", api.ValueStateConfigured)

	// An update the SB does not keep.
	e.sb.Lose("update", "iface/a")
	_, err = e.commit(ctx, set("iface/a", "a2"))
	expectKVErrors(t, txnErr(t, err), api.ErrVerifyFailed, map[string]api.TxnOperation{"iface/a": api.OpUpdate})
	e.expectState("iface/a", api.ValueStateMissing)
	e.expectSB("after lost update", map[string]string{"iface/a": "a", "route/lost": "10.1.0.0/24 dep=iface/a",
		"route/ok": "10.3.0.0/24 dep=iface/a", "route/other": "10.2.0.0/24 dep=iface/a"})
}

// A delete the SB does not do: the value is back in the graph, FAILED, and
// a resync deletes it.
func TestVerifyReportDeleteNotDone(t *testing.T) {
	e := newVerifyEnv(t, kvscheduler.VerifyReport)
	e.register(ifaces(), routes())
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"), set("route/r", "10.1.0.0/24 dep=iface/a"))
	e.sb.ClearOps()

	e.sb.Lose("delete", "route/r")
	_, err := e.commit(ctx, del("route/r"))
	expectKVErrors(t, txnErr(t, err), api.ErrVerifyFailed, map[string]api.TxnOperation{"route/r": api.OpDelete})
	e.expectOpsWithRetrieve("delete", "delete route/r", "retrieve route")
	expectVerifyFailed(t, e.lastRecord(), map[string]api.TxnOperation{"route/r": api.OpDelete},
		map[string]string{"route/r": "the SB still holds it"})
	e.expectState("route/r", api.ValueStateFailed)

	if _, err := e.resync(set("iface/a", "a")); err != nil {
		t.Fatalf("resync: %v", err)
	}
	e.expectOps("resync", "delete route/r")
	e.expectSB("after resync", map[string]string{"iface/a": "a"})
}

// VerifyOff (the default) reads nothing back: the lost value is taken as
// configured.
func TestVerifyOff(t *testing.T) {
	e := newVerifyEnv(t, kvscheduler.VerifyOff)
	e.register(ifaces(), routes())
	e.sb.Lose("create", "route/r")
	e.mustCommit(context.Background(), set("iface/a", "a"), set("route/r", "10.1.0.0/24 dep=iface/a"))
	e.expectOpsWithRetrieve("create", "create iface/a=a", "create route/r=10.1.0.0/24 dep=iface/a")
	e.expectState("route/r", api.ValueStateConfigured)
	if rec := e.lastRecord(); rec.VerifyFailed != nil {
		t.Errorf("VerifyFailed %v, want none", rec.VerifyFailed)
	}
}

// A transaction that executes nothing reads nothing back.
func TestVerifyNothingExecuted(t *testing.T) {
	e := newVerifyEnv(t, kvscheduler.VerifyReport)
	e.register(ifaces(), routes())
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"))
	e.sb.ClearOps()
	e.mustCommit(ctx, set("iface/a", "a"))                          // in sync
	e.mustCommit(ctx, set("route/r", "10.1.0.0/24 dep=iface/none")) // PENDING: nothing called
	e.mustCommit(withOpts(ctx, api.TxnOptions{DryRun: true, Verify: true}), set("iface/a", "b"))
	e.expectOpsWithRetrieve("no operations")
	e.expectState("route/r", api.ValueStatePending, "iface/none")
}

// TxnOptions.Verify: a value the SB does not hold reverts the whole
// transaction, and the SB is as before it.
func TestVerifyRevertsTransaction(t *testing.T) {
	for _, mode := range []kvscheduler.VerifyMode{kvscheduler.VerifyOff, kvscheduler.VerifyReport} {
		t.Run(map[kvscheduler.VerifyMode]string{kvscheduler.VerifyOff: "off", kvscheduler.VerifyReport: "report"}[mode], func(t *testing.T) {
			e := newVerifyEnv(t, mode)
			e.register(ifaces(), routes())
			ctx := context.Background()
			e.mustCommit(ctx, set("iface/a", "a"), set("route/old", "10.0.0.0/24 dep=iface/a"))
			before := e.sb.Snapshot()
			metaBefore := e.metaIndex("iface", "iface/a")
			e.sb.ClearOps()

			e.sb.Substitute("create", "route/new", mocksb.Str("10.9.9.0/24 dep=iface/a"))
			_, err := e.commit(withOpts(ctx, api.TxnOptions{Verify: true}),
				set("iface/a", "a2"), set("iface/b", "b"), set("route/new", "10.1.0.0/24 dep=iface/b"), del("route/old"))
			te := txnErr(t, err)
			expectKVErrors(t, te, api.ErrVerifyFailed, map[string]api.TxnOperation{"route/new": api.OpCreate})
			if !strings.Contains(te.ErrorOf("route/new").Error(), "the transaction was reverted") {
				t.Errorf("error %q, want it to say the transaction was reverted", te.ErrorOf("route/new"))
			}
			e.expectOpsWithRetrieve("verify and revert",
				"delete route/old",
				"update iface/a=a2",
				"create iface/b=b",
				"create route/new=10.1.0.0/24 dep=iface/b",
				"retrieve route",
				"retrieve iface",
				// Reverted, newest first; route/new from what the SB holds.
				"delete route/new",
				"delete iface/b",
				"update iface/a=a",
				"create route/old=10.0.0.0/24 dep=iface/a")
			e.expectSB("after revert", before)
			rec := e.lastRecord()
			if !rec.WithRevert {
				t.Errorf("record: WithRevert false")
			}
			expectVerifyFailed(t, rec, map[string]api.TxnOperation{"route/new": api.OpCreate},
				map[string]string{"route/new": "the transaction was reverted"})
			reverts := 0
			for _, op := range rec.Executed {
				if op.IsRevert {
					reverts++
				}
			}
			if reverts != 4 {
				t.Errorf("record: %d REVERT operations, want 4", reverts)
			}
			e.expectState("iface/a", api.ValueStateConfigured)
			e.expectState("route/old", api.ValueStateConfigured)
			e.expectGone("iface/b")
			e.expectGone("route/new")
			if got := e.metaIndex("iface", "iface/a"); got != metaBefore {
				t.Errorf("iface/a metadata index %d, want %d", got, metaBefore)
			}

			// The state is as before: the same values again change nothing.
			e.mustCommit(ctx, set("iface/a", "a"), set("route/old", "10.0.0.0/24 dep=iface/a"))
			e.expectOps("after revert: in sync")
		})
	}
}

// TxnOptions.Verify implies Revert: an operation that fails reverts the
// transaction as well.
func TestVerifyRevertsOnFailure(t *testing.T) {
	e := newVerifyEnv(t, kvscheduler.VerifyOff)
	e.register(ifaces(), routes())
	e.sb.Fail("create", "iface/b", nil, 1)
	_, err := e.commit(withOpts(context.Background(), api.TxnOptions{Verify: true}), set("iface/a", "a"), set("iface/b", "b"))
	expectKVErrors(t, txnErr(t, err), mocksb.ErrInjected, map[string]api.TxnOperation{"iface/b": api.OpCreate})
	e.expectSB("after revert", nil)
	e.expectGone("iface/a")
}

// Options accepted with Verify.
func TestVerifyOptions(t *testing.T) {
	for _, o := range []api.TxnOptions{
		{Verify: true, Resync: api.FullResync},
		{Verify: true, Retry: api.DefaultRetry()},
	} {
		var oe *api.OptionError
		if err := o.Validate(); !errors.As(err, &oe) || oe.Field != "Verify" {
			t.Errorf("Validate(%+v) = %v, want an *api.OptionError of Verify", o, err)
		}
	}
}

// Derived values: one its own descriptor retrieves is read back on its own;
// one it does not is read back through its base.
func TestVerifyDerivedValues(t *testing.T) {
	e := newVerifyEnv(t, kvscheduler.VerifyReport)
	e.register(
		mocksb.Options{Name: "bd", Prefix: "bd/", NB: true, Keys: depth(1), Derived: items},
		mocksb.Options{Name: "bd-item", Prefix: "bd/", Keys: depth(2)},
		mocksb.Options{Name: "vrf", Prefix: "vrf/", NB: true, Keys: depth(1), Derived: items},
		mocksb.Options{Name: "vrf-item", Prefix: "vrf/", Keys: depth(2), NoRetrieve: true},
	)
	ctx := context.Background()
	e.sb.Lose("create", "bd/x/i2")
	_, err := e.commit(ctx, set("bd/x", "items=i1,i2"), set("vrf/y", "items=j1"))
	expectKVErrors(t, txnErr(t, err), api.ErrVerifyFailed, map[string]api.TxnOperation{"bd/x/i2": api.OpCreate})
	e.expectOpsWithRetrieve("create",
		"create bd/x=items=i1,i2",
		"create bd/x/i1=i1",
		"create bd/x/i2=i2",
		"create vrf/y=items=j1",
		"create vrf/y/j1=j1",
		"retrieve bd",
		"retrieve bd-item",
		"retrieve vrf") // vrf/y/j1 through its base: vrf-item has no Retrieve
	e.expectState("bd/x", api.ValueStateConfigured)
	e.expectState("bd/x/i1", api.ValueStateConfigured)
	e.expectState("bd/x/i2", api.ValueStateMissing)
	e.expectState("vrf/y/j1", api.ValueStateConfigured)

	// A base the SB does not hold: its derived values, read back through
	// it, are gone with it.
	e.sb.Lose("create", "vrf/z")
	_, err = e.commit(ctx, set("vrf/z", "items=k1"))
	expectKVErrors(t, txnErr(t, err), api.ErrVerifyFailed, map[string]api.TxnOperation{"vrf/z": api.OpCreate})
	e.expectState("vrf/z", api.ValueStateMissing)
	e.expectState("vrf/z/k1", api.ValueStateMissing)
}

// A value the SB lost is not deleted by the revert: it is taken from what
// the SB holds (nothing) to what it had before (nothing).
func TestVerifyRevertSkipsLostValue(t *testing.T) {
	e := newVerifyEnv(t, kvscheduler.VerifyOff)
	e.register(ifaces(), routes())
	e.sb.Lose("create", "iface/b")
	_, err := e.commit(withOpts(context.Background(), api.TxnOptions{Verify: true}),
		set("iface/b", "b"), set("route/r", "10.1.0.0/24 dep=iface/b"))
	expectKVErrors(t, txnErr(t, err), api.ErrVerifyFailed, map[string]api.TxnOperation{"iface/b": api.OpCreate})
	e.expectOpsWithRetrieve("verify and revert",
		"create iface/b=b",
		"create route/r=10.1.0.0/24 dep=iface/b",
		"retrieve iface",
		"retrieve route",
		"delete route/r")
	e.expectSB("after revert", nil)
	e.expectGone("iface/b")
	e.expectGone("route/r")
}

package kvscheduler_test

// The revision of the state, and transactions bound to the revision their
// plan was made against (issue 19: plans bound to a revision).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// commitAt commits changes planned against revision rev.
func (e *env) commitAt(rev uint64, changes ...kv) (uint64, error) {
	txn := e.s.StartNBTransaction()
	for _, c := range changes {
		txn.SetValue(c.key, c.value)
	}
	return txn.Commit(context.Background(), api.TxnOptions{ExpectedRevision: rev, Description: "bound"})
}

// plan makes a dry run of changes and returns the revision its record says
// it was made against.
func (e *env) plan(changes ...kv) uint64 {
	e.t.Helper()
	seq := e.mustCommit(withOpts(context.Background(), api.TxnOptions{DryRun: true}), changes...)
	rec := e.s.GetRecordedTransaction(seq)
	if rec == nil || !rec.DryRun {
		e.t.Fatalf("dry run %d: record %+v", seq, rec)
	}
	return rec.Revision
}

// expectRevision checks the current revision and that of the record of
// transaction seq.
func (e *env) expectRevision(step string, seq, want uint64) {
	e.t.Helper()
	if got := e.s.CurrentRevision(); got != want {
		e.t.Errorf("%s: CurrentRevision() = %d, want %d", step, got, want)
	}
	if got := e.s.GetStats().Revision; got != want {
		e.t.Errorf("%s: GetStats().Revision = %d, want %d", step, got, want)
	}
	if seq == 0 {
		return
	}
	if rec := e.s.GetRecordedTransaction(seq); rec == nil || rec.Revision != want {
		e.t.Errorf("%s: record of transaction %d: %+v, want revision %d", step, seq, rec, want)
	}
}

// The revision goes up by one with each transaction that changes anything:
// an NB change, a value going PENDING or FAILED, an SB notification, a
// resync that finds the SB changed. A transaction that changes nothing and
// a dry run leave it.
func TestRevisionAdvancesOnChangesOnly(t *testing.T) {
	e := newEnv(t)
	e.register(
		mocksb.Options{Name: "iface", Prefix: "iface/", NB: true, Deps: mocksb.DependsOn},
		mocksb.Options{Name: "host", Prefix: "host/"},
	)
	ctx := context.Background()
	e.expectRevision("start", 0, 1)

	seq := e.mustCommit(ctx, set("iface/a", "a"))
	e.expectOps("create", "create iface/a=a")
	e.expectRevision("create", seq, 2)
	seq = e.mustCommit(ctx, set("iface/a", "a"))
	e.expectRevision("the same value again", seq, 2)
	seq = e.mustCommit(withOpts(ctx, api.TxnOptions{DryRun: true}), set("iface/b", "b"), del("iface/a"))
	e.expectRevision("dry run", seq, 2)
	e.expectOps("dry run")

	seq = e.mustCommit(ctx, set("iface/p", "p dep=host/eth1"))
	e.expectState("iface/p", api.ValueStatePending, "host/eth1")
	e.expectRevision("pending: no operation, a new status", seq, 3)

	e.notify(api.KVWithMetadata{Key: "host/eth1", Value: mocksb.Str("eth1"), Origin: api.FromSB})
	e.expectState("iface/p", api.ValueStateConfigured)
	e.expectRevision("SB notification", lastSeq(e), 4)

	e.sb.Fail("create", "iface/f", nil, 1)
	_, err := e.commit(ctx, set("iface/f", "f"))
	txnErr(t, err)
	e.expectRevision("failed create", lastSeq(e), 5)

	seq, err = e.resync(set("iface/a", "a"), set("iface/p", "p dep=host/eth1"), set("iface/f", "f"))
	if err != nil {
		t.Fatal(err)
	}
	e.expectRevision("resync creating the failed value", seq, 6)
	e.sb.ClearOps()
	seq, err = e.resync(set("iface/a", "a"), set("iface/p", "p dep=host/eth1"), set("iface/f", "f"))
	if err != nil {
		t.Fatal(err)
	}
	e.expectOps("resync of an SB in sync")
	e.expectRevision("resync of an SB in sync", seq, 6)

	e.sb.Remove("iface/a") // gone behind the agent's back
	seq, err = e.resync(set("iface/a", "a"), set("iface/p", "p dep=host/eth1"), set("iface/f", "f"))
	if err != nil {
		t.Fatal(err)
	}
	e.expectOps("resync of a changed SB", "create iface/a=a")
	e.expectRevision("resync of a changed SB", seq, 7)
}

// lastSeq is the sequence number of the last recorded transaction.
func lastSeq(e *env) uint64 {
	e.t.Helper()
	h := e.s.GetTransactionHistory(time.Time{}, time.Time{})
	if len(h) == 0 {
		e.t.Fatal("no transaction recorded")
	}
	return h[len(h)-1].SeqNum
}

// A retry that creates a failed value is a change like any other.
func TestRevisionAdvancesOnRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := openEnv(t)
		defer e.s.Close()
		e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
		e.sb.Fail("create", "iface/a", nil, 1)
		ctx := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second, MaxCount: 1}})
		_, err := e.commit(ctx, set("iface/a", "a"))
		txnErr(t, err)
		e.expectState("iface/a", api.ValueStateRetrying)
		e.expectRevision("failed create", 0, 2)
		time.Sleep(time.Second)
		synctest.Wait()
		e.expectState("iface/a", api.ValueStateConfigured)
		rec := e.s.GetRecordedTransaction(lastSeq(e))
		if rec.TxnType != api.RetryFailedOps {
			t.Fatalf("last transaction: %v, want the retry", rec.TxnType)
		}
		e.expectRevision("retry", rec.SeqNum, 3)
	})
}

// A transaction planned against a revision that another change made stale
// is refused, with nothing applied, naming the change in between; planned
// again, it is applied.
func TestExpectedRevisionStaleRefused(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"))
	e.expectOps("setup", "create iface/a=a")

	rev := e.plan(set("iface/b", "b"))
	if rev != 2 {
		t.Fatalf("plan made against revision %d, want 2", rev)
	}
	other := e.mustCommit(withOpts(ctx, api.TxnOptions{Description: "someone else"}), set("iface/a", "a2"))
	e.expectOps("change in between", "update iface/a=a2")

	seq, err := e.commitAt(rev, set("iface/b", "b"))
	if !errors.Is(err, api.ErrStaleRevision) || errors.Is(err, api.ErrFutureRevision) {
		t.Fatalf("commit of the stale plan: %v, want ErrStaleRevision", err)
	}
	var re *api.RevisionError
	if !errors.As(err, &re) || re.Expected != 2 || re.Current != 3 || re.ChangedBy == nil || re.ChangedBy.SeqNum != other {
		t.Fatalf("RevisionError %+v (changed by %+v), want expected 2, current 3, changed by transaction %d", re, re.ChangedBy, other)
	}
	for _, want := range []string{"planned against revision 2", "now at revision 3", `"someone else"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	e.expectOps("stale plan")
	e.expectGone("iface/b")
	e.expectRevision("stale plan", 0, 3)
	if e.s.GetRecordedTransaction(seq) != nil {
		t.Errorf("the refused transaction %d is recorded", seq)
	}

	rev = e.plan(set("iface/b", "b"))
	seq, err = e.commitAt(rev, set("iface/b", "b"))
	if err != nil {
		t.Fatalf("commit planned against the current revision %d: %v", rev, err)
	}
	e.expectOps("current plan", "create iface/b=b")
	e.expectRevision("current plan", seq, 4)
}

// Several changes in between: the first is named, and how many followed.
func TestExpectedRevisionNamesFirstChange(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
	ctx := context.Background()
	rev := e.plan(set("iface/a", "a"))
	first := e.mustCommit(withOpts(ctx, api.TxnOptions{Description: "first"}), set("iface/x", "x"))
	e.mustCommit(ctx, set("iface/y", "y"))
	e.mustCommit(ctx, set("iface/z", "z"))
	_, err := e.commitAt(rev, set("iface/a", "a"))
	var re *api.RevisionError
	if !errors.As(err, &re) || re.ChangedBy == nil || re.ChangedBy.SeqNum != first || re.ChangedBy.Revision != 2 {
		t.Fatalf("%v: want the change by transaction %d named", err, first)
	}
	if !strings.Contains(err.Error(), "then by 2 more") {
		t.Errorf("error %q does not count the later changes", err)
	}
}

// A revision the scheduler has not reached is refused too; so is a bound
// transaction that would not wait for its result.
func TestExpectedRevisionBadInput(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
	e.mustCommit(context.Background(), set("iface/a", "a"))
	e.expectOps("setup", "create iface/a=a")

	_, err := e.commitAt(7, set("iface/b", "b"))
	var re *api.RevisionError
	if !errors.Is(err, api.ErrFutureRevision) || errors.Is(err, api.ErrStaleRevision) || !errors.As(err, &re) || re.Expected != 7 || re.Current != 2 {
		t.Fatalf("commit planned against revision 7 at revision 2: %v, want ErrFutureRevision", err)
	}
	if !strings.Contains(err.Error(), "ahead of the current revision 2") {
		t.Errorf("error %q", err)
	}
	e.expectOps("future revision")
	e.expectGone("iface/b")

	txn := e.s.StartNBTransaction().SetValue("iface/b", mocksb.Str("b"))
	_, err = txn.Commit(context.Background(), api.TxnOptions{ExpectedRevision: 2, NonBlocking: true})
	var oe *api.OptionError
	if !errors.As(err, &oe) || oe.Field != "ExpectedRevision" {
		t.Fatalf("non-blocking bound commit: %v, want an OptionError on ExpectedRevision", err)
	}
	e.s.TransactionBarrier()
	e.expectOps("non-blocking")
	e.expectRevision("bad input", 0, 2)
}

// The revision is checked when the transaction runs, not when it is
// committed: a change queued before it (still running when the bound
// transaction is committed, at the revision of the plan) makes it stale.
func TestExpectedRevisionCheckedWhenRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := openEnv(t)
		defer e.s.Close()
		e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
		rev := e.plan(set("iface/b", "b"))

		inCreate, release := make(chan struct{}), make(chan struct{})
		e.sb.Hook = func(_ context.Context, kind, key string) {
			if key == "iface/a" {
				close(inCreate)
				<-release
			}
		}
		otherDone := make(chan error, 1)
		go func() {
			_, err := e.commit(context.Background(), set("iface/a", "a"))
			otherDone <- err
		}()
		<-inCreate // the other change runs: its Create waits
		boundDone := make(chan error, 1)
		go func() {
			_, err := e.commitAt(rev, set("iface/b", "b"))
			boundDone <- err
		}()
		synctest.Wait() // the bound transaction is queued, the other one still runs
		if got := e.s.GetStats(); got.QueueLength != 1 || got.Revision != rev {
			t.Fatalf("queue %d at revision %d, want the bound transaction queued at revision %d", got.QueueLength, got.Revision, rev)
		}
		close(release)
		if err := <-otherDone; err != nil {
			t.Fatal(err)
		}
		if err := <-boundDone; !errors.Is(err, api.ErrStaleRevision) {
			t.Fatalf("bound transaction queued behind a change: %v, want ErrStaleRevision", err)
		}
		e.expectOps("", "create iface/a=a")
		e.expectGone("iface/b")
	})
}

// Revisions go on growing over a restart: a scheduler's first revision
// comes from its start time (Options.FirstRevision 0), so a plan made
// before the agent restarted is refused as stale, "from before the agent
// started", even when the new run has made as many changes since: it
// never matches a revision of the new run by chance.
func TestRevisionAcrossARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := func() *kvscheduler.Scheduler {
			s := kvscheduler.New(kvscheduler.Options{Logger: testLogger(t)})
			if err := s.RegisterKVDescriptor(mocksb.New().Descriptor(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})); err != nil {
				t.Fatal(err)
			}
			return s
		}
		commit := func(s *kvscheduler.Scheduler, rev uint64, key string) error {
			txn := s.StartNBTransaction().SetValue(key, mocksb.Str("x"))
			_, err := txn.Commit(context.Background(), api.TxnOptions{ExpectedRevision: rev})
			return err
		}
		first := start()
		rev0 := first.CurrentRevision()
		if want := uint64(time.Now().UnixMilli()) << 20; rev0 != want {
			t.Errorf("first revision %d, want the start time's Unix milliseconds << 20 (%d)", rev0, want)
		}
		if err := commit(first, 0, "iface/a"); err != nil {
			t.Fatal(err)
		}
		planned := first.CurrentRevision() // a plan made now, before the restart
		first.Close()

		time.Sleep(time.Millisecond) // the agent restarts a millisecond later
		second := start()
		defer second.Close()
		if got := second.CurrentRevision(); got <= planned {
			t.Fatalf("revision after the restart %d, not above the last one before it (%d)", got, planned)
		}
		// The new run catches up with the number of changes: no match.
		if err := commit(second, 0, "iface/a"); err != nil {
			t.Fatal(err)
		}
		err := commit(second, planned, "iface/b")
		var re *api.RevisionError
		if !errors.Is(err, api.ErrStaleRevision) || !errors.As(err, &re) || re.Since != second.CurrentRevision()-1 {
			t.Fatalf("a plan from before the restart: %v, want ErrStaleRevision since the new run's first revision", err)
		}
		if !strings.Contains(err.Error(), "from before the agent started") {
			t.Errorf("error %q does not say the plan is from before the start", err)
		}
		if err := commit(second, 1, "iface/b"); !errors.Is(err, api.ErrStaleRevision) {
			t.Errorf("revision 1 after a start in 2000: %v, want ErrStaleRevision", err)
		}
		if err := commit(second, second.CurrentRevision(), "iface/b"); err != nil {
			t.Errorf("a plan of the new run: %v", err)
		}
	})
}

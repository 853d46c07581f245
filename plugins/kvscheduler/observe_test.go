package kvscheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api/apitest"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// newObsEnv is an env with a manual clock and the interface and route
// descriptors of the observability tests: route values depend on the key
// named by "dep=".
func newObsEnv(t *testing.T, opts kvscheduler.Options) (*env, *apitest.Clock) {
	t.Helper()
	clock := apitest.NewClock(t0)
	opts.Clock = clock
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	e := &env{t: t, s: kvscheduler.New(opts), sb: mocksb.New()}
	t.Cleanup(e.s.Close)
	e.register(
		mocksb.Options{Name: "iface", Prefix: "iface/", NB: true},
		mocksb.Options{Name: "route", Prefix: "route/", NB: true, Deps: mocksb.DependsOn},
	)
	return e, clock
}

func revStates(revs []api.KeyRevision) []string {
	var out []string
	for _, r := range revs {
		out = append(out, r.State.String())
	}
	return out
}

func TestKeyTimelinePendingThenConfigured(t *testing.T) {
	e, clock := newObsEnv(t, kvscheduler.Options{})
	ctx := context.Background()
	seq1 := e.mustCommit(ctx, set("route/r1", "via a dep=iface/a"))
	clock.Advance(time.Second)
	seq2 := e.mustCommit(ctx, set("iface/a", "a"))
	clock.Advance(time.Second)
	seq3 := e.mustCommit(ctx, del("iface/a"))

	revs := e.s.GetKeyTimeline("route/r1")
	if got, want := revStates(revs), []string{"PENDING", "CONFIGURED", "PENDING"}; !slices.Equal(got, want) {
		t.Fatalf("timeline states %v, want %v", got, want)
	}
	if revs[0].TxnSeq != seq1 || revs[1].TxnSeq != seq2 || revs[2].TxnSeq != seq3 {
		t.Errorf("timeline transactions %d %d %d, want %d %d %d", revs[0].TxnSeq, revs[1].TxnSeq, revs[2].TxnSeq, seq1, seq2, seq3)
	}
	if !revs[0].Until.Equal(revs[1].Since) || !revs[1].Since.Equal(t0.Add(time.Second)) || !revs[2].Until.IsZero() {
		t.Errorf("revision times: %v-%v, %v-%v, %v-%v", revs[0].Since, revs[0].Until, revs[1].Since, revs[1].Until, revs[2].Since, revs[2].Until)
	}
	if !slices.Contains(revs[1].Flags, "WAS-PENDING") || !slices.Contains(revs[2].Flags, "IS-PENDING") {
		t.Errorf("flags %v then %v, want WAS-PENDING then IS-PENDING", revs[1].Flags, revs[2].Flags)
	}
	if len(revs[1].Dependencies) != 1 || revs[1].Dependencies[0].Key != "iface/a" || !slices.Equal(revs[1].Dependencies[0].Targets, []string{"iface/a"}) {
		t.Errorf("dependencies of the configured revision: %+v", revs[1].Dependencies)
	}
	if mocksb.Text(revs[1].Value) != "via a dep=iface/a" || revs[1].Descriptor != "route" {
		t.Errorf("revision value %q descriptor %q", mocksb.Text(revs[1].Value), revs[1].Descriptor)
	}

	// The interface: created, then removed.
	if got, want := revStates(e.s.GetKeyTimeline("iface/a")), []string{"CONFIGURED", "REMOVED"}; !slices.Equal(got, want) {
		t.Errorf("timeline of iface/a %v, want %v", got, want)
	}
	if revs := e.s.GetKeyTimeline("iface/never"); revs != nil {
		t.Errorf("timeline of an unknown key: %v", revs)
	}
}

func TestGraphAsOfAnOldTransaction(t *testing.T) {
	e, clock := newObsEnv(t, kvscheduler.Options{})
	ctx := context.Background()
	seq1 := e.mustCommit(ctx, set("route/r1", "via a dep=iface/a"))
	clock.Advance(time.Second)
	seq2 := e.mustCommit(ctx, set("iface/a", "a"))

	old, err := e.s.GetGraphAsOf(seq1)
	if err != nil {
		t.Fatal(err)
	}
	if old.Current || old.TxnSeq != seq1 || !slices.Equal(old.Changed, []string{"route/r1"}) {
		t.Errorf("snapshot #%d: current %v, seq %d, changed %v", seq1, old.Current, old.TxnSeq, old.Changed)
	}
	if len(old.Nodes) != 1 || old.Nodes[0].Key != "route/r1" || old.Nodes[0].State != api.ValueStatePending {
		t.Fatalf("graph as of #%d: %+v, want only route/r1 PENDING", seq1, old.Nodes)
	}
	if d := old.Nodes[0].Dependencies; len(d) != 1 || d[0].Satisfied || len(d[0].Targets) != 0 {
		t.Errorf("dependency of route/r1 as of #%d: %+v, want unsatisfied without target", seq1, d)
	}

	now, err := e.s.GetGraphAsOf(seq2)
	if err != nil {
		t.Fatal(err)
	}
	if !now.Current || len(now.Nodes) != 2 {
		t.Fatalf("graph as of #%d: %+v", seq2, now)
	}
	for _, n := range now.Nodes {
		if n.State != api.ValueStateConfigured {
			t.Errorf("%s is %v as of #%d", n.Key, n.State, seq2)
		}
	}
	if d := now.Nodes[1].Dependencies; now.Nodes[1].Key != "route/r1" || len(d) != 1 || !d[0].Satisfied || !slices.Equal(d[0].Targets, []string{"iface/a"}) {
		t.Errorf("dependency of route/r1 now: %+v", now.Nodes[1])
	}

	if _, err := e.s.GetGraphAsOf(99); !errors.Is(err, api.ErrNotInHistory) || !strings.Contains(err.Error(), "history starts at #1") {
		t.Errorf("graph as of an unknown transaction: %v", err)
	}
}

func TestGraphSnapshotAtTime(t *testing.T) {
	e, clock := newObsEnv(t, kvscheduler.Options{})
	ctx := context.Background()
	clock.Advance(time.Minute)
	e.mustCommit(ctx, set("iface/a", "a"))
	clock.Advance(time.Minute)
	e.mustCommit(ctx, set("iface/a", "a2"), set("iface/b", "b"))

	snap, err := e.s.GetGraphSnapshot(t0.Add(90 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Nodes) != 1 || snap.Nodes[0].Key != "iface/a" || mocksb.Text(snap.Nodes[0].Value) != "a" || snap.TxnSeq != 1 {
		t.Errorf("graph at t0+90s: seq %d, %+v; want iface/a=a only", snap.TxnSeq, snap.Nodes)
	}
	cur, err := e.s.GetGraphSnapshot(time.Time{})
	if err != nil || !cur.Current || len(cur.Nodes) != 2 || mocksb.Text(cur.Nodes[0].Value) != "a2" {
		t.Errorf("current graph: %+v, %v", cur, err)
	}
	if _, err := e.s.GetGraphSnapshot(t0); !errors.Is(err, api.ErrNotInHistory) {
		t.Errorf("graph before the history: %v, want ErrNotInHistory", err)
	}
}

func TestHistoryRetentionIsReported(t *testing.T) {
	e, clock := newObsEnv(t, kvscheduler.Options{HistorySize: 3})
	ctx := context.Background()
	for i := range 5 {
		clock.Advance(time.Second)
		e.mustCommit(ctx, set("iface/a", strings.Repeat("x", i+1)))
	}
	info := e.s.GetHistoryInfo()
	if info.Kept != 3 || info.Trimmed != 2 || info.OldestSeq != 3 || info.NewestSeq != 5 || info.MaxCount != 3 {
		t.Errorf("history info %+v", info)
	}
	if got := info.Starts(); got != "history starts at #3 (2026-11-21T12:00:03Z)" {
		t.Errorf("Starts() = %q", got)
	}
	if _, err := e.s.GetGraphAsOf(2); err == nil || !strings.Contains(err.Error(), "history starts at #3") {
		t.Errorf("graph as of a trimmed transaction: %v", err)
	}
	// The timeline starts with the value before the oldest kept operation.
	revs := e.s.GetKeyTimeline("iface/a")
	if len(revs) != 4 || revs[0].TxnSeq != 0 || mocksb.Text(revs[0].Value) != "xx" || mocksb.Text(revs[3].Value) != "xxxxx" {
		t.Errorf("timeline after trimming: %d revisions, first %+v", len(revs), revs[0])
	}
}

func TestTransactionHistoryRange(t *testing.T) {
	e, clock := newObsEnv(t, kvscheduler.Options{})
	ctx := context.Background()
	for i := range 6 {
		clock.Advance(10 * time.Second)
		e.mustCommit(ctx, set("iface/a", strings.Repeat("y", i+1)))
	}
	seqs := func(recs []*api.RecordedTxn) []uint64 {
		var out []uint64
		for _, r := range recs {
			out = append(out, r.SeqNum)
		}
		return out
	}
	for _, c := range []struct {
		since, until time.Time
		want         []uint64
	}{
		{time.Time{}, time.Time{}, []uint64{1, 2, 3, 4, 5, 6}},
		{t0.Add(20 * time.Second), time.Time{}, []uint64{2, 3, 4, 5, 6}},
		{t0.Add(21 * time.Second), t0.Add(40 * time.Second), []uint64{3, 4}},
		{time.Time{}, t0.Add(10 * time.Second), []uint64{1}},
		{t0.Add(100 * time.Second), time.Time{}, nil},
		{t0.Add(40 * time.Second), t0.Add(30 * time.Second), nil},
	} {
		if got := seqs(e.s.GetTransactionHistory(c.since, c.until)); !slices.Equal(got, c.want) {
			t.Errorf("history [%v, %v]: %v, want %v", c.since, c.until, got, c.want)
		}
	}
}

func TestStats(t *testing.T) {
	e, _ := newObsEnv(t, kvscheduler.Options{})
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"), set("route/r1", "dep=iface/a"), set("route/r2", "dep=iface/b"))
	st := e.s.GetStats()
	if st.ValuesByState["CONFIGURED"] != 2 || st.ValuesByState["PENDING"] != 1 {
		t.Errorf("values by state %v", st.ValuesByState)
	}
	if st.ValuesByDescriptor["route"]["PENDING"] != 1 || st.ValuesByDescriptor["iface"]["CONFIGURED"] != 1 {
		t.Errorf("values by descriptor %v", st.ValuesByDescriptor)
	}
	if st.Transactions["NB transaction"] != 1 || st.History.Kept != 1 || st.QueueLength != 0 {
		t.Errorf("stats %+v", st)
	}
}

// recordingObserver keeps what the scheduler reported.
type recordingObserver struct {
	mu      sync.Mutex
	txns    []string
	ops     []string
	retries int
}

func (o *recordingObserver) TxnDone(rec *api.RecordedTxn, wait time.Duration, failed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := rec.TxnType.String()
	if failed {
		s += " failed"
	}
	o.txns = append(o.txns, s)
}

func (o *recordingObserver) OpDone(descriptor string, op api.TxnOperation, err error, latency time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := descriptor + " " + op.String()
	if err != nil {
		s += " error"
	}
	o.ops = append(o.ops, s)
}

func (o *recordingObserver) RetryScheduled(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retries += n
}

func TestObserverSeesTransactionsAndOperations(t *testing.T) {
	obs := &recordingObserver{}
	e, _ := newObsEnv(t, kvscheduler.Options{Observer: obs})
	e.mustCommit(context.Background(), set("iface/a", "a"), set("route/r1", "dep=iface/a"))
	e.sb.Fail("create", "iface/b", nil, 1)
	retry := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Hour, MaxCount: 1, ExpBackoff: false}})
	if _, err := e.commit(retry, set("iface/b", "b")); err == nil {
		t.Fatal("commit with a failing create: no error")
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if want := []string{"NB transaction", "NB transaction failed"}; !slices.Equal(obs.txns, want) {
		t.Errorf("transactions %v, want %v", obs.txns, want)
	}
	if want := []string{"iface CREATE", "route CREATE", "iface CREATE error"}; !slices.Equal(obs.ops, want) {
		t.Errorf("operations %v, want %v", obs.ops, want)
	}
	if obs.retries != 1 {
		t.Errorf("retries scheduled %d, want 1", obs.retries)
	}
}

func TestRevertedTransactionRecord(t *testing.T) {
	e, _ := newObsEnv(t, kvscheduler.Options{})
	e.mustCommit(context.Background(), set("iface/a", "a"))
	e.sb.Fail("create", "route/r1", nil, 1)
	seq, err := e.commit(withOpts(context.Background(), api.TxnOptions{Revert: true}), set("iface/a", "a2"), set("route/r1", "dep=iface/a"))
	if err == nil {
		t.Fatal("reverted commit: no error")
	}
	rec := e.s.GetRecordedTransaction(seq)
	var reverts []string
	for _, op := range rec.Executed {
		if op.IsRevert {
			reverts = append(reverts, op.Operation.String()+" "+op.Key)
		}
	}
	if want := []string{"UPDATE iface/a"}; !slices.Equal(reverts, want) {
		t.Errorf("REVERT operations %v, want %v", reverts, want)
	}
	// The graph as of the reverted transaction is the graph before it.
	snap, err := e.s.GetGraphAsOf(seq)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Nodes) != 1 || mocksb.Text(snap.Nodes[0].Value) != "a" {
		t.Errorf("graph after the reverted transaction: %+v", snap.Nodes)
	}
}

// TestTxnLogWriter: with Options.TxnLog, the boxed log of every transaction
// is written: the plan part before the descriptors are called, the result
// after.
func TestTxnLogWriter(t *testing.T) {
	var log strings.Builder
	var atCreate string
	e, _ := newObsEnv(t, kvscheduler.Options{TxnLog: &syncWriter{w: &log}})
	e.sb.Hook = func(_ context.Context, kind, key string) {
		if kind == "create" {
			atCreate = log.String()
		}
	}
	e.mustCommit(context.Background(), set("iface/a", "a"))
	if !strings.Contains(atCreate, "Transaction #1") || !strings.Contains(atCreate, "planned operations") || strings.Contains(atCreate, "took") {
		t.Errorf("log when Create ran:\n%s\nwant the plan and not yet the result", atCreate)
	}
	if out := log.String(); !strings.Contains(out, "iface/a") || !strings.Contains(out, "#1 took") {
		t.Errorf("transaction log:\n%s", out)
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// A derived value that leaves the graph ends its timeline REMOVED, whether it
// was applied (deleted with its base) or waiting (PENDING) when its base
// stopped deriving it or went away.
func TestKeyTimelineOfDerivedValuesEndsRemoved(t *testing.T) {
	e, clock := newObsEnv(t, kvscheduler.Options{})
	e.register(bridgeDomainDescriptors("bd/", "iface/")...)
	ctx := context.Background()
	const (
		bd       = "bd/bd1"
		bindingA = "bd/bd1/interface/a"
		bindingB = "bd/bd1/interface/b"
		bindingC = "bd/bd1/interface/c"
	)
	e.mustCommit(ctx, set("iface/a", "a"), set("iface/c", "c"), set(bd, "bd ifaces=a,b,c"))
	e.expectState(bindingA, api.ValueStateConfigured)
	e.expectState(bindingB, api.ValueStatePending, "iface/b")
	e.expectState(bindingC, api.ValueStateConfigured)

	// bd1 no longer lists b (PENDING) nor c (applied): both go.
	clock.Advance(time.Second)
	e.mustCommit(ctx, set(bd, "bd ifaces=a"))
	e.expectGone(bindingB)
	e.expectGone(bindingC)
	for _, key := range []string{bindingB, bindingC} {
		states := revStates(e.s.GetKeyTimeline(key))
		if len(states) == 0 || states[len(states)-1] != "REMOVED" {
			t.Errorf("timeline of %s (no longer derived): %v, want it to end REMOVED", key, states)
		}
	}

	// bd1 deleted: its applied binding is deleted with it, REMOVED at once
	// (not PENDING: nothing will create it again).
	clock.Advance(time.Second)
	seq := e.mustCommit(ctx, del(bd))
	e.expectGone(bindingA)
	states := revStates(e.s.GetKeyTimeline(bindingA))
	if want := []string{"CONFIGURED", "REMOVED"}; len(states) < 2 || !slices.Equal(states[len(states)-2:], want) {
		t.Errorf("timeline of %s: %v, want it to end %v", bindingA, states, want)
	}
	rec := e.s.GetRecordedTransaction(seq)
	for _, op := range rec.Executed {
		if op.Key == bindingA && (op.NewState != api.ValueStateRemoved || op.IsPending) {
			t.Errorf("deleting %s with its base recorded %v pending=%v, want REMOVED", bindingA, op.NewState, op.IsPending)
		}
	}
}

// Properties (derived values without a descriptor) and values no descriptor
// claims are counted under names of their own, not under "".
func TestStatsGroupsPropertiesAndUnclaimedValues(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{
		Name: "iface", Prefix: "iface/", NB: true,
		Derived: func(key string, v proto.Message) []api.KeyValuePair {
			return []api.KeyValuePair{kvp("state/"+strings.TrimPrefix(key, "iface/")+"/UP", "up")}
		},
	})
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"), set("iface/b", "b"))
	_, _ = e.commit(ctx, set("nobody/x", "x"))
	st := e.s.GetStats()
	if got := st.ValuesByDescriptor[api.StatsProperties]; got["CONFIGURED"] != 2 || len(got) != 1 {
		t.Errorf("properties: %v, want 2 CONFIGURED", got)
	}
	if got := st.ValuesByDescriptor[api.StatsNoDescriptor]; got["UNIMPLEMENTED"] != 1 || len(got) != 1 {
		t.Errorf("values without a descriptor: %v, want 1 UNIMPLEMENTED", got)
	}
	if _, ok := st.ValuesByDescriptor[""]; ok {
		t.Errorf("a group without a name: %v", st.ValuesByDescriptor)
	}
}

// TestGraphNeighboursAgreeWithTheSnapshot: what GetGraphNeighbours says of
// each value (its resolved dependencies, its dependents, its derived
// values) is what a current snapshot says, for Key dependencies on present
// and missing keys, AnyOf dependencies with and without a selector,
// Exclusive ones held and waited for, and derived values.
func TestGraphNeighboursAgreeWithTheSnapshot(t *testing.T) {
	e := newEnv(t)
	registerExclusive(e)
	e.register(mocksb.Options{Name: "route", Prefix: "rt/", NB: true,
		Validate: func(_ string, v proto.Message) error {
			if strings.Contains(mocksb.Text(v), "invalid") {
				return errors.New("invalid route")
			}
			return nil
		},
		Deps: func(key string, v proto.Message) []api.Dependency {
			var deps []api.Dependency
			for _, f := range strings.Fields(mocksb.Text(v)) {
				switch name, arg, _ := strings.Cut(f, "="); name {
				case "via":
					deps = append(deps, api.Dependency{Label: "via " + arg, Key: "if/" + arg})
				case "any":
					deps = append(deps, api.Dependency{Label: "any " + arg, AnyOf: api.AnyOfDependency{KeyPrefixes: []string{arg}}})
				case "anykey": // no prefix: the selector alone
					deps = append(deps, api.Dependency{Label: "any key " + arg, AnyOf: api.AnyOfDependency{
						KeySelector: func(k string) bool { return k == arg }}})
				case "anyb":
					deps = append(deps, api.Dependency{Label: "an interface b*", AnyOf: api.AnyOfDependency{KeyPrefixes: []string{"if/"},
						KeySelector: func(k string) bool { return strings.HasPrefix(k, "if/b") }}})
				}
			}
			return deps
		}})
	ctx := context.Background()
	e.mustCommit(ctx, set("if/a", "a"), set("if/b1", "b1"), set("if/b2", "b2"),
		set("bd/1", "bd ifaces=a,b1"), set("bd/2", "bd ifaces=a"),
		set("rt/1", "via=a"), set("rt/2", "via=missing"), set("rt/3", "any=if/ anyb"), set("rt/4", "any=nothing/ via=b2"), set("rt/5", "anykey=if/b2"))
	if _, err := e.commit(ctx, set("rt/6", "via=a invalid")); err == nil {
		t.Fatal("the invalid rt/6 was accepted")
	}

	snap, err := e.s.GetGraphSnapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"if/missing"} // no value: left out
	dependents := map[string][]string{}
	derived := map[string][]string{}
	for _, n := range snap.Nodes {
		keys = append(keys, n.Key)
		if n.Base != "" {
			derived[n.Base] = append(derived[n.Base], n.Key)
		}
		if n.State == api.ValueStateInvalid {
			continue // not a dependent of anything (see GraphNeighbours)
		}
		for _, d := range n.Dependencies {
			targets := d.Targets
			if d.Key != "" {
				targets = []string{d.Key}
			}
			for _, tk := range targets {
				if !slices.Contains(dependents[tk], n.Key) {
					dependents[tk] = append(dependents[tk], n.Key)
				}
			}
		}
	}
	got := e.s.GetGraphNeighbours(keys...)
	if len(got) != len(snap.Nodes) {
		t.Fatalf("neighbours of %d keys (one missing): %d, want %d", len(keys), len(got), len(snap.Nodes))
	}
	for i, nb := range got {
		want := snap.Nodes[i]
		if fmt.Sprintf("%+v", nb.Node) != fmt.Sprintf("%+v", want) {
			t.Errorf("node %s:\n got %+v\nwant %+v", want.Key, nb.Node, want)
		}
		// The snapshot counts as dependents of a key only the values its
		// dependencies resolve to; the reverse edges also know those that
		// wait for it (an AnyOf accepting it, a Key on it): compare with
		// what the snapshot can tell.
		wantDeps := dependents[want.Key]
		slices.Sort(wantDeps)
		if !slices.Equal(nb.Dependents, wantDeps) {
			t.Errorf("dependents of %s: %q, want %q", want.Key, nb.Dependents, wantDeps)
		}
		gotDerived := slices.Sorted(slices.Values(nb.Derived))
		if !slices.Equal(gotDerived, derived[want.Key]) {
			t.Errorf("derived of %s: %q, want %q", want.Key, gotDerived, derived[want.Key])
		}
	}
	// Spot checks that make the comparison meaningful.
	byKey := map[string]api.GraphNeighbours{}
	for _, nb := range got {
		byKey[nb.Node.Key] = nb
	}
	if d := byKey["if/a"].Dependents; !slices.Equal(d, []string{"bd/1/if/a", "bd/2/if/a", "rt/1", "rt/3"}) {
		t.Errorf("if/a dependents: %q", d)
	}
	if d := byKey["if/b2"].Dependents; !slices.Equal(d, []string{"rt/3", "rt/4", "rt/5"}) {
		t.Errorf("if/b2 dependents: %q", d)
	}
	if d := byKey["bd/1/if/a"].Dependents; !slices.Equal(d, []string{"bd/2/if/a"}) {
		t.Errorf("the holder of member/a: dependents %q, want the binding waiting for it", d)
	}
	if deps := byKey["rt/6"].Node.Dependencies; byKey["rt/6"].Node.State != api.ValueStateInvalid || len(deps) != 1 || deps[0].Key != "if/a" || !deps[0].Satisfied {
		t.Errorf("the invalid rt/6 via if/a: %s %+v", byKey["rt/6"].Node.State, deps)
	}
	if deps := byKey["rt/2"].Node.Dependencies; len(deps) != 1 || deps[0].Satisfied || len(deps[0].Targets) != 0 {
		t.Errorf("rt/2 via a missing interface: %+v", deps)
	}
}

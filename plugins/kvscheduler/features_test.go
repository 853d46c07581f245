package kvscheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// ifMeta is the metadata of the typed test descriptor.
type ifMeta struct{ Index int }

// The typed adapter gives callbacks the descriptor's own value and metadata
// types, and a value of another type is INVALID before any callback sees it.
func TestTypedDescriptor(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var calls []string
	next := 0
	d := &api.TypedDescriptor[*wrapperspb.StringValue, *ifMeta]{
		Name:         "typed",
		NBKeyPrefix:  "typed/",
		KeySelector:  func(key string) bool { return strings.HasPrefix(key, "typed/") },
		KeyLabel:     func(key string) string { return strings.TrimPrefix(key, "typed/") },
		WithMetadata: true,
		Validate: func(_ string, v *wrapperspb.StringValue) error {
			if v.GetValue() == "" {
				return api.NewInvalidValueError(errors.New("empty"), "value")
			}
			return nil
		},
		Create: func(_ context.Context, key string, v *wrapperspb.StringValue) (*ifMeta, error) {
			mu.Lock()
			defer mu.Unlock()
			next++
			calls = append(calls, "create "+key+"="+v.GetValue())
			return &ifMeta{Index: next}, nil
		},
		Update: func(_ context.Context, key string, old, v *wrapperspb.StringValue, md *ifMeta) (*ifMeta, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, "update "+key+" "+old.GetValue()+"->"+v.GetValue())
			return md, nil
		},
		Delete: func(_ context.Context, key string, v *wrapperspb.StringValue, md *ifMeta) error {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, "delete "+key+" index "+string(rune('0'+md.Index)))
			return nil
		},
	}
	kvd := d.KVDescriptor()
	if kvd.ValueTypeName != "google.protobuf.StringValue" {
		t.Errorf("ValueTypeName = %q, want the proto name of V", kvd.ValueTypeName)
	}
	if err := e.s.RegisterKVDescriptor(kvd); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e.mustCommit(ctx, kv{"typed/a", wrapperspb.String("one")})
	e.mustCommit(ctx, kv{"typed/a", wrapperspb.String("two")})
	md, ok := e.s.GetMetadataMap("typed").GetValue("a")
	if m, isMeta := md.(*ifMeta); !ok || !isMeta || m.Index != 1 {
		t.Errorf("metadata of a: %#v, want *ifMeta{Index: 1}", md)
	}
	// A value of another type, and an invalid one.
	_, err := e.commit(ctx, kv{"typed/b", wrapperspb.Int32(7)}, kv{"typed/c", wrapperspb.String("")})
	te := txnErr(t, err)
	if te.ErrorOf("typed/b") == nil || !strings.Contains(te.ErrorOf("typed/b").Error(), "google.protobuf.Int32Value") {
		t.Errorf("error of typed/b = %v, want one naming the wrong type", te.ErrorOf("typed/b"))
	}
	e.expectState("typed/b", api.ValueStateInvalid)
	e.expectState("typed/c", api.ValueStateInvalid, "value")
	e.mustCommit(ctx, kv{"typed/a", nil})
	want := []string{"create typed/a=one", "update typed/a one->two", "delete typed/a index 1"}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(calls, "; ") != strings.Join(want, "; ") {
		t.Errorf("typed calls\n got: %q\nwant: %q", calls, want)
	}
}

// byIndex is a metadata map with a secondary index: label by metadata index.
type byIndex struct {
	*api.MemMetadataMap
	mu    sync.Mutex
	index map[int]string
}

func newByIndex() api.MetadataMapRW {
	return &byIndex{MemMetadataMap: api.NewMetadataMap(), index: map[int]string{}}
}

func (m *byIndex) Put(label string, md any) {
	m.MemMetadataMap.Put(label, md)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.index[md.(*mocksb.Meta).Index] = label
}

func (m *byIndex) Delete(label string) {
	if md, ok := m.GetValue(label); ok {
		m.mu.Lock()
		delete(m.index, md.(*mocksb.Meta).Index)
		m.mu.Unlock()
	}
	m.MemMetadataMap.Delete(label)
}

func (m *byIndex) labelOf(index int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.index[index]
}

// A MetadataMapFactory map keeps its secondary index in step with creates,
// deletes and a reverted transaction.
func TestMetadataMapFactorySecondaryIndex(t *testing.T) {
	e := newEnv(t)
	d := e.sb.Descriptor(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true, WithMetadata: true})
	d.MetadataMapFactory = newByIndex
	if err := e.s.RegisterKVDescriptor(d); err != nil {
		t.Fatal(err)
	}
	e.register(mocksb.Options{Name: "route", Prefix: "route/", NB: true, Deps: mocksb.DependsOn})
	m := e.s.GetMetadataMap("iface").(*byIndex)
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"), set("iface/b", "b"))
	if m.labelOf(1) != "iface/a" || m.labelOf(2) != "iface/b" {
		t.Fatalf("secondary index after create: 1=%q 2=%q", m.labelOf(1), m.labelOf(2))
	}
	e.mustCommit(ctx, del("iface/a"))
	if m.labelOf(1) != "" {
		t.Errorf("index 1 still maps to %q after delete", m.labelOf(1))
	}
	// A reverted transaction leaves the map as it was.
	e.sb.Fail("create", "route/r", nil, 1)
	if _, err := e.commit(withOpts(ctx, api.TxnOptions{Revert: true}), set("iface/c", "c"), set("route/r", "r dep=iface/c")); err == nil {
		t.Fatal("commit succeeded, want the injected failure")
	}
	if labels := m.ListLabels(); strings.Join(labels, ",") != "iface/b" {
		t.Errorf("labels after revert = %v, want [iface/b]", labels)
	}
	if m.labelOf(3) != "" {
		t.Errorf("index 3 (the reverted iface/c) still maps to %q", m.labelOf(3))
	}
}

// Upstream resync trusts the scheduler's view of the SB: no Retrieve, and the
// SB is made equal to the given NB state from what the graph knows.
func TestUpstreamResync(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces(), routes())
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"), set("iface/b", "b"), set("route/r", "r dep=iface/b"))
	e.expectOps("setup", "create iface/a=a", "create iface/b=b", "create route/r=r dep=iface/b")
	e.sb.Remove("iface/a") // drift the upstream resync must not see
	_, err := e.commit(withOpts(ctx, api.TxnOptions{Resync: api.UpstreamResync}), set("iface/a", "a"), set("iface/c", "c"))
	if err != nil {
		t.Fatal(err)
	}
	e.expectOpsWithRetrieve("upstream resync", "delete route/r", "delete iface/b", "create iface/c=c")
	e.expectState("iface/a", api.ValueStateConfigured)
	e.expectGone("route/r")
}

// Dumps: NB shows what is intended (pending values too), cached what the
// scheduler knows is applied, SB what Retrieve says now.
func TestDumpViews(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces(), routes())
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"), set("route/r", "r dep=iface/x"))
	e.sb.Put("iface/drift", mocksb.Str("foreign"), nil, api.FromSB)
	keys := func(kvs []api.KVWithMetadata) string {
		var out []string
		for _, kv := range kvs {
			out = append(out, kv.Key+"="+mocksb.Text(kv.Value))
		}
		return strings.Join(out, " ")
	}
	nb, err := e.s.DumpValuesByKeyPrefix("", api.NBView)
	if err != nil || keys(nb) != "iface/a=a route/r=r dep=iface/x" {
		t.Errorf("NB view: %q, %v", keys(nb), err)
	}
	cached, err := e.s.DumpValuesByDescriptor("iface", api.CachedView)
	if err != nil || keys(cached) != "iface/a=a" {
		t.Errorf("cached view: %q, %v", keys(cached), err)
	}
	e.sb.ClearOps()
	sb, err := e.s.DumpValuesByDescriptor("iface", api.SBView)
	if err != nil || keys(sb) != "iface/a=a iface/drift=foreign" {
		t.Errorf("SB view: %q, %v", keys(sb), err)
	}
	e.expectOpsWithRetrieve("SB view asks the SB", "retrieve iface")
	if _, err := e.s.DumpValuesByDescriptor("nope", api.NBView); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("dump of an unknown descriptor: %v, want an error naming it", err)
	}
	statuses := e.s.ListValueStatuses("route/")
	if len(statuses) != 1 || statuses[0].GetValue().GetState() != api.ValueStatePending {
		t.Errorf("ListValueStatuses(route/) = %v", statuses)
	}
}

// A dry run records the plan and changes nothing.
func TestDryRun(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces(), routes())
	ctx := context.Background()
	seq, err := e.commit(withOpts(ctx, api.TxnOptions{DryRun: true}), set("iface/a", "a"), set("route/r", "r dep=iface/a"))
	if err != nil {
		t.Fatal(err)
	}
	e.expectOpsWithRetrieve("dry run")
	e.expectGone("iface/a")
	rec := e.s.GetRecordedTransaction(seq)
	if rec == nil || !rec.DryRun || len(rec.Executed) != 0 {
		t.Fatalf("record of the dry run: %+v", rec)
	}
	var planned []string
	for _, op := range rec.Planned {
		planned = append(planned, op.Operation.String()+" "+op.Key)
	}
	if strings.Join(planned, ", ") != "CREATE iface/a, CREATE route/r" {
		t.Errorf("planned %v", planned)
	}
	e.mustCommit(ctx, set("iface/a", "a"), set("route/r", "r dep=iface/a"))
	e.expectOps("real run after the dry run", "create iface/a=a", "create route/r=r dep=iface/a")
}

// Dry runs (plans) stay out of the transaction history: N plans leave it
// as it was (records, count, trimming), the newest plans' records are
// still found by their sequence number (a plan's caller reads it there),
// and only the last kvscheduler.DryRunsKept are kept. A dry-run resync whose refresh
// found the SB changed is in the history: it changed the state (the
// revision), and the history explains every revision.
func TestDryRunsStayOutOfTheHistory(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces(), routes())
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"))
	seqs := func() []uint64 {
		var out []uint64
		for _, r := range e.s.GetTransactionHistory(time.Time{}, time.Time{}) {
			out = append(out, r.SeqNum)
		}
		return out
	}
	before, infoBefore := seqs(), e.s.GetHistoryInfo()

	const plans = 3 * kvscheduler.DryRunsKept
	var planSeqs []uint64
	for i := range plans {
		seq := e.mustCommit(withOpts(ctx, api.TxnOptions{DryRun: true, Description: "plan"}),
			set("iface/b", "b"), set("route/r", fmt.Sprintf("r%d dep=iface/b", i)))
		planSeqs = append(planSeqs, seq)
	}
	if after := seqs(); !slices.Equal(after, before) {
		t.Errorf("history after %d plans: %v, want %v as before them", plans, after, before)
	}
	if info := e.s.GetHistoryInfo(); info != infoBefore {
		t.Errorf("history info after %d plans: %+v, want %+v", plans, info, infoBefore)
	}
	for i, seq := range planSeqs {
		rec := e.s.GetRecordedTransaction(seq)
		kept := i >= plans-kvscheduler.DryRunsKept
		switch {
		case kept && (rec == nil || !rec.DryRun || len(rec.Planned) != 2):
			t.Errorf("plan %d (#%d): record %+v, want the dry run with its 2 planned operations", i, seq, rec)
		case !kept && rec != nil:
			t.Errorf("plan %d (#%d) is still kept, want only the last %d plans", i, seq, kvscheduler.DryRunsKept)
		}
	}

	// A dry-run resync that finds the SB changed changes the state.
	e.sb.Remove("iface/a")
	rev := e.s.CurrentRevision()
	seq, err := e.s.StartNBTransaction().SetValue("iface/a", mocksb.Str("a")).Commit(ctx, api.TxnOptions{Resync: api.FullResync, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if e.s.CurrentRevision() == rev {
		t.Fatalf("the dry-run resync's refresh changed nothing (revision %d)", rev)
	}
	if after := seqs(); after[len(after)-1] != seq {
		t.Errorf("history %v lacks the dry-run resync #%d that changed the state", after, seq)
	}
}

// Retries back off exponentially and stop after the maximum count: FAILED.
func TestRetryExponentialBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := openEnv(t)
		defer e.s.Close()
		e.register(ifaces())
		e.sb.Fail("create", "iface/a", nil, 100)
		ctx := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second, MaxCount: 3, ExpBackoff: true}})
		if _, err := e.commit(ctx, set("iface/a", "a")); err == nil {
			t.Fatal("commit succeeded, want the injected failure")
		}
		creates := func() int {
			synctest.Wait()
			e.s.TransactionBarrier()
			n := 0
			for _, op := range e.sb.OpStrings(false) {
				if strings.HasPrefix(op, "create iface/a") {
					n++
				}
			}
			return n
		}
		// Attempts at 0, 1 s, 1+2 s, 1+2+4 s.
		for _, step := range []struct {
			wait  time.Duration
			count int
		}{{999 * time.Millisecond, 1}, {time.Millisecond, 2}, {1999 * time.Millisecond, 2}, {time.Millisecond, 3}, {3999 * time.Millisecond, 3}, {time.Millisecond, 4}, {time.Hour, 4}} {
			time.Sleep(step.wait)
			if got := creates(); got != step.count {
				t.Fatalf("after %v more: %d creates, want %d", step.wait, got, step.count)
			}
		}
		e.expectState("iface/a", api.ValueStateFailed)
	})
}

// Errors that repeating cannot fix are not retried.
func TestNonRetriableFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := openEnv(t)
		defer e.s.Close()
		fatal := errors.New("fatal")
		d := e.sb.Descriptor(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
		d.IsRetriableFailure = func(err error) bool { return !errors.Is(err, fatal) }
		if err := e.s.RegisterKVDescriptor(d); err != nil {
			t.Fatal(err)
		}
		e.sb.Fail("create", "iface/a", fatal, 1)
		e.sb.Fail("create", "iface/b", api.NonRetriable(errors.New("no such driver")), 1)
		ctx := withOpts(context.Background(), api.TxnOptions{Retry: api.DefaultRetry()})
		_, err := e.commit(ctx, set("iface/a", "a"), set("iface/b", "b"))
		te := txnErr(t, err)
		if !errors.Is(te.ErrorOf("iface/a"), fatal) {
			t.Errorf("error of iface/a = %v", te.ErrorOf("iface/a"))
		}
		e.expectState("iface/a", api.ValueStateFailed)
		e.expectState("iface/b", api.ValueStateFailed)
		time.Sleep(time.Hour)
		synctest.Wait()
		e.s.TransactionBarrier()
		e.expectOps("no retry", "create iface/a=a", "create iface/b=b")
	})
}

// Commit returns the errors of every value the transaction touched: a
// derived value and a value created because its dependency arrived.
func TestCommitErrorsCoverDerivedAndTriggeredValues(t *testing.T) {
	e := newEnv(t)
	derived := func(key string, _ proto.Message) []api.KeyValuePair {
		return []api.KeyValuePair{{Key: "addr/" + key, Value: mocksb.Str("10.0.0.1/24")}}
	}
	e.register(
		mocksb.Options{Name: "iface", Prefix: "iface/", NB: true, Derived: derived},
		mocksb.Options{Name: "addr", Prefix: "addr/"},
		routes(),
	)
	ctx := context.Background()
	e.mustCommit(ctx, set("route/r", "r dep=iface/a"))
	e.sb.Fail("create", "addr/iface/a", nil, 1)
	e.sb.Fail("create", "route/r", nil, 1)
	_, err := e.commit(ctx, set("iface/a", "a"))
	expectKVErrors(t, txnErr(t, err), mocksb.ErrInjected, map[string]api.TxnOperation{
		"addr/iface/a": api.OpCreate,
		"route/r":      api.OpCreate,
	})
	e.expectState("iface/a", api.ValueStateConfigured)
}

// pairSB is an SB whose two values are the ends of one object (as a veth
// pair): creating either end makes both, deleting either deletes both, and
// creating end a fails after making the pair, leaving a as it should not
// be. The ends depend on each other.
type pairSB struct {
	mu      sync.Mutex
	sb      map[string]string
	creates int
}

func (p *pairSB) descriptor() *api.KVDescriptor {
	const a, b = "pair/a", "pair/b"
	other := map[string]string{a: b, b: a}
	return &api.KVDescriptor{
		Name:        "pair",
		NBKeyPrefix: "pair/",
		KeySelector: func(key string) bool { return strings.HasPrefix(key, "pair/") },
		Create: func(_ context.Context, key string, v proto.Message) (any, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.creates++
			if p.creates > 1000 {
				return nil, api.NonRetriable(errors.New("runaway: 1000 creates"))
			}
			if _, ok := p.sb[a]; !ok {
				p.sb[a], p.sb[b] = "partial", "partial"
			}
			if key == a {
				return nil, errors.New("address not available") // retriable
			}
			p.sb[key] = mocksb.Text(v)
			return nil, nil
		},
		Delete: func(_ context.Context, key string, _ proto.Message, _ any) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			delete(p.sb, key)
			delete(p.sb, other[key])
			return nil
		},
		Retrieve: func(context.Context, []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			var out []api.KVWithMetadata
			for k, v := range p.sb {
				out = append(out, api.KVWithMetadata{Key: k, Value: mocksb.Str(v), Origin: api.FromNB})
			}
			return out, nil
		},
		Dependencies: func(key string, _ proto.Message) []api.Dependency {
			return []api.Dependency{{Label: "peer", Key: other[key]}}
		},
	}
}

// A failure whose refresh finds a half-made object that the next attempt
// breaks again does not loop inside the transaction: each failed value is
// refreshed once per transaction, and its retry comes later.
func TestRefreshAfterFailureEnds(t *testing.T) {
	e := newEnv(t)
	p := &pairSB{sb: map[string]string{}}
	if err := e.s.RegisterKVDescriptor(p.descriptor()); err != nil {
		t.Fatal(err)
	}
	var err error
	mustReturn(t, "commit", func() {}, func() {
		_, err = e.commit(withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Hour, MaxCount: 3, ExpBackoff: false}}), set("pair/a", "a"), set("pair/b", "b"))
	})
	if te := txnErr(t, err); te.ErrorOf("pair/a") == nil {
		t.Errorf("commit: %v, want pair/a's error", err)
	}
	p.mu.Lock()
	creates := p.creates
	p.mu.Unlock()
	t.Logf("%d creates", creates)
	if creates > 6 {
		t.Errorf("%d creates in one transaction, want a few", creates)
	}
	if st := e.s.GetValueStatus("pair/a").GetValue().GetState(); st != api.ValueStateRetrying && st != api.ValueStateFailed {
		t.Errorf("pair/a is %v, want it to wait for its retry", st)
	}
}

// After the SB lost everything (a VPP restart), a resync whose re-creation
// of a value fails leaves its derived values showing that they are not in
// the SB (MISSING), not CONFIGURED as before the loss.
func TestDerivedValuesOfAValueLostAndNotRecreated(t *testing.T) {
	e := newEnv(t)
	isAddr := func(key string) bool { return strings.Contains(key, "/addr/") }
	e.register(
		mocksb.Options{Name: "vif", Prefix: "vif/", NB: true, Keys: func(key string) bool { return !isAddr(key) },
			Derived: func(key string, v proto.Message) []api.KeyValuePair {
				return []api.KeyValuePair{kvp(key+"/addr/10.0.0.1", "10.0.0.1")}
			}},
		mocksb.Options{Name: "vaddr", Prefix: "vif/", Keys: isAddr},
	)
	ctx := context.Background()
	e.mustCommit(ctx, set("vif/tap1", "tap"))
	e.expectState("vif/tap1/addr/10.0.0.1", api.ValueStateConfigured)

	// The SB restarts empty; the base cannot be created again.
	for _, k := range e.sb.Keys() {
		e.sb.Remove(k)
	}
	e.sb.Fail("create", "vif/tap1", errors.New("tap_create_v3: busy"), 100)
	_, _ = e.s.StartNBTransaction().Commit(ctx, api.TxnOptions{Resync: api.DownstreamResync})
	if st := e.status("vif/tap1").GetState(); st != api.ValueStateFailed && st != api.ValueStateRetrying {
		t.Errorf("vif/tap1 is %v, want FAILED", st)
	}
	if st := e.status("vif/tap1/addr/10.0.0.1"); st != nil && st.GetState() == api.ValueStateConfigured {
		t.Errorf("the address of the lost, not re-created vif/tap1 is %v, want it not CONFIGURED", st)
	}
}

// A full resync that finds the NB's values in the SB keeps one copy of
// each: the applied value is the NB's (the Retrieve's equal copy is let
// go), so memory after a restart's resync is what it is after creating.
// A value the SB holds otherwise keeps the SB's copy.
func TestResyncKeepsOneCopyOfAValueInSync(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces())
	e.sb.Put("iface/a", mocksb.Str("a"), nil, api.FromNB)
	e.sb.Put("iface/b", mocksb.Str("b-old"), nil, api.FromNB)
	if _, err := e.resync(set("iface/a", "a"), set("iface/b", "b")); err != nil {
		t.Fatal(err)
	}
	e.expectOpsWithRetrieve("resync", "retrieve iface", "update iface/b=b")
	e.sb.Put("iface/c", mocksb.Str("c"), nil, api.FromNB)
	if _, err := e.commit(context.Background(), set("iface/c", "c")); err != nil {
		t.Fatal(err)
	}
	e.sb.ClearOps()
	if _, err := e.resync(set("iface/a", "a"), set("iface/b", "b"), set("iface/c", "c")); err != nil {
		t.Fatal(err)
	}
	e.expectOpsWithRetrieve("resync in sync", "retrieve iface")
	values := func(view api.View) map[string]proto.Message {
		kvs, err := e.s.DumpValuesByDescriptor("iface", view)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]proto.Message{}
		for _, kv := range kvs {
			out[kv.Key] = kv.Value
		}
		return out
	}
	nb, cached := values(api.NBView), values(api.CachedView)
	for _, k := range []string{"iface/a", "iface/b", "iface/c"} {
		if nb[k] == nil || cached[k] != nb[k] {
			t.Errorf("%s: applied %p (%v), intended %p (%v): want the NB's value itself", k, cached[k], cached[k], nb[k], nb[k])
		}
	}
}

// The Retrieves of one refresh share a memo (api.RefreshMemo): what the
// interfaces' Retrieve stores in a resync, the routes' Retrieve (after it)
// loads in the same resync; the next resync starts with an empty one, and
// a Create's memo keeps nothing.
func TestRefreshMemoIsSharedWithinARefresh(t *testing.T) {
	e := newEnv(t)
	var round int
	var loaded []string
	iface := e.sb.Descriptor(ifaces())
	ifaceRetrieve := iface.Retrieve
	iface.Retrieve = func(ctx context.Context, c []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
		m := api.RefreshMemo(ctx)
		if _, ok := m.Load("dump"); ok {
			t.Error("the interfaces' Retrieve found a dump of an earlier refresh")
		}
		round++
		m.Store("dump", round)
		return ifaceRetrieve(ctx, c)
	}
	iface.Create = func(ctx context.Context, key string, v proto.Message) (any, error) {
		m := api.RefreshMemo(ctx)
		m.Store("x", 1)
		if _, ok := m.Load("x"); ok {
			t.Error("a Create's memo keeps what is stored")
		}
		return &mocksb.Meta{Index: 1}, nil
	}
	o := routes()
	o.RetrieveDependencies = []string{"iface"}
	route := e.sb.Descriptor(o)
	routeRetrieve := route.Retrieve
	route.Retrieve = func(ctx context.Context, c []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
		v, ok := api.RefreshMemo(ctx).Load("dump")
		loaded = append(loaded, fmt.Sprint(v, ok))
		return routeRetrieve(ctx, c)
	}
	for _, d := range []*api.KVDescriptor{iface, route} {
		if err := e.s.RegisterKVDescriptor(d); err != nil {
			t.Fatal(err)
		}
	}
	e.mustCommit(context.Background(), set("iface/a", "a"))
	for range 2 {
		if _, err := e.resync(set("iface/a", "a")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.s.DumpValuesByKeyPrefix("", api.SBView); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1 true", "2 true", "3 true"}; !slices.Equal(loaded, want) {
		t.Errorf("what the routes' Retrieve loaded in each refresh: %q, want %q", loaded, want)
	}
}

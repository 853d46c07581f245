package orchestrator_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sb is a southbound of strings: what the test descriptor holds.
type sb struct {
	mu    sync.Mutex
	items map[string]string
	ops   []string
	// failOnce: the next Create of these keys fails (retriable).
	failOnce map[string]bool
	// hold, when set, is called by Create before it does anything (it may
	// block, like a descriptor call to a hung VPP).
	hold func(key string)
}

func (b *sb) descriptor() *api.KVDescriptor {
	return &api.KVDescriptor{
		Name:        "item",
		NBKeyPrefix: "item/",
		KeySelector: func(k string) bool { return strings.HasPrefix(k, "item/") },
		Create: func(_ context.Context, k string, v proto.Message) (any, error) {
			if b.hold != nil {
				b.hold(k)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.failOnce[k] {
				delete(b.failOnce, k)
				b.ops = append(b.ops, "create "+k+" failed")
				return nil, errors.New("not there yet")
			}
			b.items[k] = v.(*wrapperspb.StringValue).GetValue()
			b.ops = append(b.ops, "create "+k+"="+b.items[k])
			return nil, nil
		},
		Update: func(_ context.Context, k string, _, v proto.Message, _ any) (any, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.items[k] = v.(*wrapperspb.StringValue).GetValue()
			b.ops = append(b.ops, "update "+k+"="+b.items[k])
			return nil, nil
		},
		Delete: func(_ context.Context, k string, _ proto.Message, _ any) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			delete(b.items, k)
			b.ops = append(b.ops, "delete "+k)
			return nil
		},
		Retrieve: func(context.Context, []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			var out []api.KVWithMetadata
			for k, v := range b.items {
				out = append(out, api.KVWithMetadata{Key: k, Value: wrapperspb.String(v), Origin: api.FromNB})
			}
			return out, nil
		},
	}
}

func (b *sb) takeOps() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ops := b.ops
	b.ops = nil
	return ops
}

func newEnv(t *testing.T, items map[string]string) (*orchestrator.Orchestrator, *kvscheduler.Scheduler, *sb) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := kvscheduler.New(kvscheduler.Options{Logger: log})
	t.Cleanup(s.Close)
	b := &sb{items: map[string]string{}}
	for k, v := range items {
		b.items[k] = v
	}
	if err := s.RegisterKVDescriptor(b.descriptor()); err != nil {
		t.Fatal(err)
	}
	return orchestrator.New(s, log), s, b
}

func kv(key, value string) orchestrator.KV {
	if value == "" {
		return orchestrator.KV{Key: key}
	}
	return orchestrator.KV{Key: key, Value: wrapperspb.String(value)}
}

func TestNothingBeforeEverySourceIsSynced(t *testing.T) {
	o, s, b := newEnv(t, map[string]string{"item/a": "a", "item/old": "x"})
	ctx := context.Background()
	o.Register(orchestrator.SourceEtcd, orchestrator.SourceInitFile)
	if ready, why := o.Ready(); ready || !slices.Equal(why, []string{"first state of source etcd", "first state of source init-file"}) {
		t.Errorf("ready %v %v", ready, why)
	}
	if _, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/g", "g")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/a", "a")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if ops := b.takeOps(); len(ops) > 0 {
		t.Fatalf("operations before the init file was read: %v", ops)
	}
	seq, err := o.Resync(ctx, orchestrator.SourceInitFile, []orchestrator.KV{kv("item/i", "i")}, api.TxnOptions{})
	if err != nil || seq == 0 {
		t.Fatalf("first full resync: %d, %v", seq, err)
	}
	ops := b.takeOps()
	slices.Sort(ops)
	// item/a was in place already: not touched; item/old is not configured.
	if want := []string{"create item/g=g", "create item/i=i", "delete item/old"}; !slices.Equal(ops, want) {
		t.Errorf("first full resync: %v, want %v", ops, want)
	}
	if ready, _ := o.Ready(); !ready {
		t.Error("not ready after the first full resync")
	}
	// The first full resync applies every source; a later one, one source.
	if rec := s.GetRecordedTransaction(seq); rec == nil || rec.Description != "first full resync (sources etcd, init-file)" {
		t.Errorf("record of the first full resync: %+v", rec)
	}
	seq, err = o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/a", "a")}, api.TxnOptions{})
	if rec := s.GetRecordedTransaction(seq); err != nil || rec == nil || rec.Description != "full resync (source etcd)" {
		t.Errorf("record of a later resync of etcd: %+v, %v", rec, err)
	}
}

func TestRestartOnAnInSyncSystemDoesNothing(t *testing.T) {
	o, _, b := newEnv(t, map[string]string{"item/a": "a", "item/b": "b"})
	o.Register(orchestrator.SourceEtcd)
	if _, err := o.Resync(context.Background(), orchestrator.SourceEtcd, []orchestrator.KV{kv("item/a", "a"), kv("item/b", "b")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if ops := b.takeOps(); len(ops) > 0 {
		t.Errorf("first full resync of an in-sync system executed %v", ops)
	}
}

func TestPriorityAndFallback(t *testing.T) {
	o, s, b := newEnv(t, nil)
	ctx := context.Background()
	o.Register(orchestrator.SourceEtcd)
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/k", "from-etcd")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if ops := b.takeOps(); !slices.Equal(ops, []string{"create item/k=from-etcd"}) {
		t.Errorf("first resync: %v", ops)
	}
	steps := []struct {
		source orchestrator.SourceID
		kvs    []orchestrator.KV
		want   string
		ops    []string
	}{
		{orchestrator.SourceGRPC, []orchestrator.KV{kv("item/k", "from-grpc")}, "from-grpc", []string{"update item/k=from-grpc"}},
		{orchestrator.SourceEtcd, []orchestrator.KV{kv("item/k", "etcd-2")}, "from-grpc", nil},
		{orchestrator.SourceGRPC, []orchestrator.KV{kv("item/k", "")}, "etcd-2", []string{"update item/k=etcd-2"}},
		{orchestrator.SourceInitFile, []orchestrator.KV{kv("item/k", "from-file")}, "etcd-2", nil},
		{orchestrator.SourceEtcd, []orchestrator.KV{kv("item/k", "")}, "from-file", []string{"update item/k=from-file"}},
		{orchestrator.SourceInitFile, []orchestrator.KV{kv("item/k", "")}, "", []string{"delete item/k"}},
	}
	for i, st := range steps {
		if _, err := o.Change(ctx, st.source, st.kvs, api.TxnOptions{}); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if ops := b.takeOps(); !slices.Equal(ops, st.ops) {
			t.Errorf("step %d (%s): operations %v, want %v", i, st.source, ops, st.ops)
		}
		got := ""
		if v := s.GetValueStatus("item/k"); v.GetValue().GetState() == api.ValueStateConfigured {
			b.mu.Lock()
			got = b.items["item/k"]
			b.mu.Unlock()
		}
		if got != st.want {
			t.Errorf("step %d: item/k = %q, want %q", i, got, st.want)
		}
	}
}

func TestResyncOfOneSourceKeepsTheOthers(t *testing.T) {
	o, _, b := newEnv(t, nil)
	ctx := context.Background()
	o.Register(orchestrator.SourceEtcd)
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/e1", "1"), kv("item/e2", "2")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/g", "g")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	b.takeOps()
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/e2", "2b")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	ops := b.takeOps()
	slices.Sort(ops)
	if want := []string{"delete item/e1", "update item/e2=2b"}; !slices.Equal(ops, want) {
		t.Errorf("etcd resync: %v, want %v", ops, want)
	}
	var keys []string
	for _, kv := range o.Get() {
		keys = append(keys, kv.Key)
	}
	if !slices.Equal(keys, []string{"item/e2", "item/g"}) {
		t.Errorf("desired state %v", keys)
	}
}

func TestUndecodableValueBlocksNothing(t *testing.T) {
	o, s, b := newEnv(t, nil)
	ctx := context.Background()
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := o.Change(ctx, orchestrator.SourceEtcd, []orchestrator.KV{
		{Key: "item/bad", Err: errors.New(`value of key "item/bad": proto: syntax error`)}, kv("item/good", "g"),
	}, api.TxnOptions{})
	if err == nil {
		t.Fatal("no error for the undecodable value")
	}
	st := s.GetValueStatus("item/bad").GetValue()
	if st.GetState() != api.ValueStateInvalid || !strings.Contains(st.GetError(), "syntax error") {
		t.Errorf("status of item/bad: %v", st)
	}
	if ops := b.takeOps(); !slices.Equal(ops, []string{"create item/good=g"}) {
		t.Errorf("operations %v", ops)
	}
	if _, err := o.Change(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/bad", "fixed")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if ops := b.takeOps(); !slices.Equal(ops, []string{"create item/bad=fixed"}) {
		t.Errorf("after the fix: %v", ops)
	}
}

func TestPlanChangesNothing(t *testing.T) {
	o, s, b := newEnv(t, nil)
	ctx := context.Background()
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/a", "a")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	b.takeOps()
	seq, err := o.Plan(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/a", "a2"), kv("item/b", "b")}, false, api.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, op := range s.GetRecordedTransaction(seq).Planned {
		planned = append(planned, op.Operation.String()+" "+op.Key)
	}
	slices.Sort(planned)
	if want := []string{"CREATE item/b", "UPDATE item/a"}; !slices.Equal(planned, want) {
		t.Errorf("plan %v, want %v", planned, want)
	}
	if ops := b.takeOps(); len(ops) > 0 {
		t.Errorf("the plan executed %v", ops)
	}
	if v := o.SourceValue(orchestrator.SourceGRPC, "item/a"); v.(*wrapperspb.StringValue).GetValue() != "a" {
		t.Errorf("the plan changed the desired state: %v", v)
	}
}

// A change whose operation fails (retriably) is retried: the orchestrator
// commits with the scheduler's default retry.
func TestFailedChangeIsRetried(t *testing.T) {
	o, s, b := newEnv(t, nil)
	ctx := context.Background()
	o.Register(orchestrator.SourceEtcd)
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, nil, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.failOnce = map[string]bool{"item/late": true}
	b.mu.Unlock()
	statuses := make(chan *api.BaseValueStatus, 16)
	stop := s.WatchValueStatus(statuses, func(k string) bool { return k == "item/late" })
	defer stop()
	if _, err := o.Change(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/late", "x")}, api.TxnOptions{}); err == nil {
		t.Fatal("the first create of item/late did not fail")
	}
	timeout := time.After(20 * time.Second)
	for done := false; !done; {
		select {
		case st := <-statuses:
			done = st.GetValue().GetState() == api.ValueStateConfigured
		case <-timeout:
			t.Fatalf("item/late after its failure: %v, want it CONFIGURED by the retry", s.GetValueStatus("item/late"))
		}
	}
	if ops := b.takeOps(); !slices.Equal(ops, []string{"create item/late failed", "create item/late=x"}) {
		t.Errorf("operations %v", ops)
	}
}

// answersWithin runs f and fails the test if it does not return in time: a
// reader stuck behind a running transaction.
func answersWithin(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not answer while a transaction was blocked", what)
	}
}

// TestReadinessAnswersDuringABlockedCommit: the orchestrator holds no lock
// of its state across a Commit, so readiness and the merged state answer
// while a descriptor call of the transaction blocks, during the first full
// resync and during a later change.
func TestReadinessAnswersDuringABlockedCommit(t *testing.T) {
	o, _, b := newEnv(t, nil)
	ctx := context.Background()
	entered, release := make(chan string), make(chan struct{})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) }) // before the scheduler closes
	b.hold = func(key string) {
		if strings.HasPrefix(key, "item/slow") {
			select {
			case entered <- key:
			case <-stop:
				return
			}
			select {
			case <-release:
			case <-stop:
			}
		}
	}
	o.Register(orchestrator.SourceEtcd)

	first := make(chan error, 1)
	go func() {
		_, err := o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/slow1", "s")}, api.TxnOptions{})
		first <- err
	}()
	<-entered
	answersWithin(t, "Ready during the first full resync", func() {
		if ready, why := o.Ready(); ready || !slices.Equal(why, []string{"first full resync"}) {
			t.Errorf("Ready during the first full resync: %v %v, want not ready, waiting for it", ready, why)
		}
	})
	answersWithin(t, "Value during the first full resync", func() {
		if v := o.Value("item/slow1"); v == nil {
			t.Error("Value of item/slow1: nil during its resync")
		}
	})
	release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatalf("first full resync: %v", err)
	}

	change := make(chan error, 1)
	go func() {
		_, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/slow2", "t")}, api.TxnOptions{})
		change <- err
	}()
	<-entered
	answersWithin(t, "Ready during a change", func() {
		if ready, why := o.Ready(); !ready {
			t.Errorf("Ready during a change: not ready, %v", why)
		}
	})
	answersWithin(t, "Get during a change", func() {
		if got := o.Get(); len(got) != 2 {
			t.Errorf("Get during a change: %v, want item/slow1 and item/slow2", got)
		}
	})
	release <- struct{}{}
	if err := <-change; err != nil {
		t.Fatalf("change: %v", err)
	}
}

// TestTxnOptions: the caller's options reach the transaction: its
// description (after which a full resync's own is appended) and
// NonBlocking (Change returns once the transaction is queued).
func TestTxnOptions(t *testing.T) {
	o, s, b := newEnv(t, nil)
	ctx := context.Background()
	entered, release := make(chan string), make(chan struct{})
	b.hold = func(key string) {
		if key == "item/slow" {
			entered <- key
			<-release
		}
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	seq, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/a", "a")}, api.TxnOptions{Description: "add a"})
	if rec := s.GetRecordedTransaction(seq); err != nil || rec == nil || rec.Description != "add a" {
		t.Errorf("record of a change described %q: %+v, %v", "add a", rec, err)
	}
	seq, err = o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/e", "e")}, api.TxnOptions{Description: "reload"})
	if rec := s.GetRecordedTransaction(seq); err != nil || rec == nil || rec.Description != "reload: full resync (source etcd)" || rec.ResyncType != api.FullResync {
		t.Errorf("record of a resync described %q: %+v, %v", "reload", rec, err)
	}

	queued := make(chan uint64, 1)
	go func() {
		seq, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/slow", "s")}, api.TxnOptions{NonBlocking: true})
		if err != nil {
			t.Errorf("non-blocking change: %v", err)
		}
		queued <- seq
	}()
	// The Create of item/slow waits for release: Change returned before it
	// could finish.
	<-entered
	select {
	case seq = <-queued:
	case <-time.After(10 * time.Second):
		t.Fatal("a non-blocking Change did not return while its transaction ran")
	}
	close(release)
	// Transactions run in order: once a blocking one is done, so is the
	// non-blocking one.
	if _, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/b", "b")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec := s.GetRecordedTransaction(seq); rec == nil || len(rec.Executed) != 1 || rec.Executed[0].Key != "item/slow" {
		t.Errorf("record of the non-blocking change #%d: %+v", seq, rec)
	}
}

// TestRefusedTxnOptionsChangeNothing: options the orchestrator or the
// scheduler refuses fail the call with the *api.OptionError naming the
// field, before the source's values change or anything is committed.
func TestRefusedTxnOptionsChangeNothing(t *testing.T) {
	o, s, b := newEnv(t, nil)
	ctx := context.Background()
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func(api.TxnOptions) (uint64, error){
		"Change": func(opts api.TxnOptions) (uint64, error) {
			return o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/x", "x")}, opts)
		},
		"Resync": func(opts api.TxnOptions) (uint64, error) {
			return o.Resync(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/x", "x")}, opts)
		},
		"Plan": func(opts api.TxnOptions) (uint64, error) {
			return o.Plan(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/x", "x")}, false, opts)
		},
	}
	for _, tc := range []struct {
		opts  api.TxnOptions
		field string
	}{
		{api.TxnOptions{Revert: true}, "Revert"},
		{api.TxnOptions{DryRun: true}, "DryRun"},
		{api.TxnOptions{Resync: api.DownstreamResync}, "Resync"},
		{api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second}}, "Retry.MaxCount"},
		{api.TxnOptions{Retry: &api.RetryOpt{MaxCount: 1}}, "Retry.Period"},
	} {
		for name, call := range calls {
			history := len(s.GetTransactionHistory(time.Time{}, time.Time{}))
			seq, err := call(tc.opts)
			var te *api.TransactionError
			var oe *api.OptionError
			if !errors.As(err, &te) || te.TxnInitError == nil || !errors.As(err, &oe) || oe.Field != tc.field ||
				!strings.Contains(err.Error(), "transaction options: "+tc.field+" ") {
				t.Errorf("%s with %+v: %d, %v; want the *api.OptionError of %s", name, tc.opts, seq, err, tc.field)
			}
			if v := o.SourceValue(orchestrator.SourceGRPC, "item/x"); v != nil {
				t.Fatalf("%s with %+v refused, but the source holds item/x", name, tc.opts)
			}
			if n := len(s.GetTransactionHistory(time.Time{}, time.Time{})); n != history {
				t.Errorf("%s with %+v refused, but %d transactions were recorded", name, tc.opts, n-history)
			}
		}
	}
	// Verbose is a resync's option: a change refuses it, a resync takes it.
	if _, err := calls["Change"](api.TxnOptions{Verbose: true}); err == nil || !strings.Contains(err.Error(), "Verbose") {
		t.Errorf("Change with Verbose: %v", err)
	}
	if _, err := calls["Resync"](api.TxnOptions{Verbose: true}); err != nil {
		t.Errorf("Resync with Verbose: %v", err)
	}
	if ops := b.takeOps(); !slices.Equal(ops, []string{"create item/x=x"}) {
		t.Errorf("operations %v, want the create of the accepted resync only", ops)
	}
}

// recordingScheduler records the keys each transaction is given, in order.
type recordingScheduler struct {
	*kvscheduler.Scheduler
	mu   sync.Mutex
	keys [][]string
}

func (r *recordingScheduler) StartNBTransaction() api.Txn {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, nil)
	return &recordingTxn{Txn: r.Scheduler.StartNBTransaction(), r: r, i: len(r.keys) - 1}
}

type recordingTxn struct {
	api.Txn
	r *recordingScheduler
	i int
}

func (t *recordingTxn) SetValue(key string, value proto.Message) api.Txn {
	t.r.mu.Lock()
	t.r.keys[t.i] = append(t.r.keys[t.i], key)
	t.r.mu.Unlock()
	t.Txn.SetValue(key, value)
	return t
}

// A change's values go to the scheduler in the order the source gave them
// (each key once, where it first appears): a document's order, which the
// scheduler sorts by key faster than a random one (BenchmarkSortValues).
func TestChangeKeepsTheSourcesOrder(t *testing.T) {
	_, s, _ := newEnv(t, nil)
	rec := &recordingScheduler{Scheduler: s}
	o := orchestrator.New(rec, slog.New(slog.DiscardHandler))
	o.Register(orchestrator.SourceGRPC)
	if _, err := o.Resync(context.Background(), orchestrator.SourceGRPC, nil, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	var kvs []orchestrator.KV
	var want []string
	for i := range 200 {
		key := "item/" + strconv.Itoa((i*7919)%200) // not in key order
		kvs = append(kvs, kv(key, "v"))
		want = append(want, key)
	}
	kvs = append(kvs, kv(want[3], "again")) // a key twice: where it first appears
	rec.mu.Lock()
	rec.keys = nil
	rec.mu.Unlock()
	if _, err := o.Change(context.Background(), orchestrator.SourceGRPC, kvs, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.keys) != 1 || !slices.Equal(rec.keys[0], want) {
		t.Errorf("keys given to the scheduler: %v, want the change's order %v", rec.keys, want)
	}
}

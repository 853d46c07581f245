package kvscheduler_test

// Benchmarks for the performance targets of spec/scheduler.md section 5
// (workloads W1-W6). See docs/benchmarks.md for how to run them and the
// numbers they gave.
//
// The descriptors here are no-op on purpose: they record nothing but three
// atomic counters, so the benchmarks measure the scheduler and not a mock
// southbound. Values are real proto messages (wrapperspb.StringValue):
//
//	vpp/iface/iface-<i>                        "iface-<i> mtu=1500"           descriptor "iface" (with Update)
//	vpp/iface/iface-<i>/address/10.x.y.z/24    "10.x.y.z/24"                  derived, descriptor "address"
//	vpp/route/<a>.<b>.<c>.0/24                 "<dst> via iface-<i> metric m" descriptor "route", depends on its interface
//
// so one interface and its route make three values. Routes have no Update:
// a route change is a re-creation (Delete, Create).

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

const (
	benchIfacePrefix   = "vpp/iface/"
	benchIfaceNameBase = "iface-"
	benchAddressInfix  = "/address/"
	benchRoutePrefix   = "vpp/route/"
	benchVia           = " via "
	// benchUpdates is the number of single-route transactions of W2.
	benchUpdates = 200
	// benchChurnRounds is the number of all-routes updates of the churn
	// benchmark.
	benchChurnRounds = 20
)

// benchSetupOnly makes W1, W3, W4 and W5 run everything but the measured
// transaction. Run once with it and once without, under a tool that counts
// (cachegrind), the difference is what the transaction alone costs; see
// docs/benchmarks.md.
var benchSetupOnly = flag.Bool("kvbench.setuponly", false,
	"W1, W3, W4, W5: skip the measured transaction (to subtract the setup from cachegrind counts)")

// benchSizes are the N of the workloads: N interfaces, N addresses, N routes.
var benchSizes = []int{1_000, 10_000, 100_000}

// benchSizesFlag replaces the sizes of every benchmark, e.g. to measure at
// the original's 50k: -kvbench.sizes=50000.
var benchSizesFlag = flag.String("kvbench.sizes", "",
	"comma-separated N to run every benchmark at, instead of 1000,10000,100000")

// benchSizesOverride parses -kvbench.sizes (nil when it is not set).
func benchSizesOverride(b *testing.B) []int {
	if *benchSizesFlag == "" {
		return nil
	}
	var sizes []int
	for _, f := range strings.Split(*benchSizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("-kvbench.sizes=%q: %q is not a positive number of interfaces", *benchSizesFlag, f)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

var benchStringValueType = string(proto.MessageName(&wrapperspb.StringValue{}))

// benchRunSizes runs fn as one sub-benchmark per N (those of -kvbench.sizes
// when it is set); N=100k is skipped with -short.
func benchRunSizes(b *testing.B, sizes []int, fn func(b *testing.B, n int)) {
	if override := benchSizesOverride(b); override != nil {
		sizes = override
	}
	for _, n := range sizes {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			if testing.Short() && n >= 100_000 {
				b.Skip("N=100k skipped with -short")
			}
			fn(b, n)
		})
	}
}

func benchIfaceName(i int) string { return benchIfaceNameBase + strconv.Itoa(i) }

func benchIfaceKey(i int) string { return benchIfacePrefix + benchIfaceName(i) }

func benchIfaceValue(i int) proto.Message {
	return wrapperspb.String(benchIfaceName(i) + " mtu=1500")
}

// benchAddress is the address of interface i: 10.x.y.z/24.
func benchAddress(i int) string {
	return "10." + strconv.Itoa((i>>16)&255) + "." + strconv.Itoa((i>>8)&255) + "." + strconv.Itoa(i&255) + "/24"
}

func benchRouteDst(i int) string {
	return strconv.Itoa(100+(i>>16)) + "." + strconv.Itoa((i>>8)&255) + "." + strconv.Itoa(i&255) + ".0/24"
}

func benchRouteKey(i int) string { return benchRoutePrefix + benchRouteDst(i) }

func benchRouteValue(i, metric int) proto.Message {
	return wrapperspb.String(benchRouteDst(i) + benchVia + benchIfaceName(i) + " metric " + strconv.Itoa(metric))
}

func benchText(v proto.Message) string {
	if s, ok := v.(*wrapperspb.StringValue); ok {
		return s.GetValue()
	}
	return ""
}

// benchIsIfaceKey accepts vpp/iface/<name> (not the derived addresses).
func benchIsIfaceKey(key string) bool {
	return strings.HasPrefix(key, benchIfacePrefix) && !strings.Contains(key[len(benchIfacePrefix):], "/")
}

func benchIsAddressKey(key string) bool {
	return strings.HasPrefix(key, benchIfacePrefix) && strings.Contains(key, benchAddressInfix)
}

// benchSB is the southbound of one scheduler: no-op descriptors with
// operation counters, and what Retrieve returns (set by the benchmark before
// a resync; nil means the SB is empty).
type benchSB struct {
	creates, updates, deletes, retrieves atomic.Int64

	sbIfaces, sbRoutes []api.KVWithMetadata
}

func (sb *benchSB) ops() int64 {
	return sb.creates.Load() + sb.updates.Load() + sb.deletes.Load()
}

func (sb *benchSB) resetCounters() {
	sb.creates.Store(0)
	sb.updates.Store(0)
	sb.deletes.Store(0)
	sb.retrieves.Store(0)
}

func (sb *benchSB) create(context.Context, string, proto.Message) (any, error) {
	sb.creates.Add(1)
	return nil, nil
}

func (sb *benchSB) update(context.Context, string, proto.Message, proto.Message, any) (any, error) {
	sb.updates.Add(1)
	return nil, nil
}

func (sb *benchSB) delete(context.Context, string, proto.Message, any) error {
	sb.deletes.Add(1)
	return nil
}

func (sb *benchSB) descriptors() []*api.KVDescriptor {
	iface := &api.KVDescriptor{
		Name:          "iface",
		NBKeyPrefix:   benchIfacePrefix,
		KeySelector:   benchIsIfaceKey,
		ValueTypeName: benchStringValueType,
		Create:        sb.create,
		Update:        sb.update,
		Delete:        sb.delete,
		Retrieve: func(context.Context, []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			sb.retrieves.Add(1)
			return sb.sbIfaces, nil
		},
		DerivedValues: func(key string, _ proto.Message) []api.KeyValuePair {
			i, err := strconv.Atoi(key[len(benchIfacePrefix)+len(benchIfaceNameBase):])
			if err != nil {
				return nil
			}
			addr := benchAddress(i)
			return []api.KeyValuePair{{Key: key + benchAddressInfix + addr, Value: wrapperspb.String(addr)}}
		},
	}
	address := &api.KVDescriptor{
		Name:        "address",
		KeySelector: benchIsAddressKey,
		Create:      sb.create,
		Delete:      sb.delete,
	}
	route := &api.KVDescriptor{
		Name:          "route",
		NBKeyPrefix:   benchRoutePrefix,
		KeySelector:   func(key string) bool { return strings.HasPrefix(key, benchRoutePrefix) },
		ValueTypeName: benchStringValueType,
		Create:        sb.create,
		Delete:        sb.delete,
		Retrieve: func(context.Context, []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			sb.retrieves.Add(1)
			return sb.sbRoutes, nil
		},
		Dependencies: func(_ string, value proto.Message) []api.Dependency {
			text := benchText(value)
			at := strings.Index(text, benchVia)
			if at < 0 {
				return nil
			}
			name := text[at+len(benchVia):]
			if end := strings.IndexByte(name, ' '); end >= 0 {
				name = name[:end]
			}
			return []api.Dependency{{Label: "interface", Key: benchIfacePrefix + name}}
		},
		RetrieveDependencies: []string{"iface"},
	}
	return []*api.KVDescriptor{iface, address, route}
}

// benchData are the NB values of a workload of size n, built outside the
// timed sections and shared by the iterations (the scheduler does not modify
// values).
type benchData struct {
	n         int
	ifaceKeys []string
	ifaceVals []proto.Message
	routeKeys []string
	routeVals []proto.Message
	allValues int // 3n: interfaces, addresses, routes
}

func benchNewData(n int) *benchData {
	d := &benchData{
		n:         n,
		ifaceKeys: make([]string, n),
		ifaceVals: make([]proto.Message, n),
		routeKeys: make([]string, n),
		routeVals: make([]proto.Message, n),
		allValues: 3 * n,
	}
	for i := range n {
		d.ifaceKeys[i] = benchIfaceKey(i)
		d.ifaceVals[i] = benchIfaceValue(i)
		d.routeKeys[i] = benchRouteKey(i)
		d.routeVals[i] = benchRouteValue(i, 0)
	}
	return d
}

// sbState returns what Retrieve finds in an SB that matches d: fresh copies of
// the values, interfaces reported as the agent's, routes of unknown origin
// (the scheduler decides whose they are, as with real VPP routes).
func (d *benchData) sbState() (ifaces, routes []api.KVWithMetadata) {
	ifaces = make([]api.KVWithMetadata, d.n)
	routes = make([]api.KVWithMetadata, d.n)
	for i := range d.n {
		ifaces[i] = api.KVWithMetadata{Key: d.ifaceKeys[i], Value: benchIfaceValue(i), Origin: api.FromNB}
		routes[i] = api.KVWithMetadata{Key: d.routeKeys[i], Value: benchRouteValue(i, 0), Origin: api.UnknownOrigin}
	}
	return ifaces, routes
}

// benchEnv is one scheduler with the bench descriptors registered.
type benchEnv struct {
	s  *kvscheduler.Scheduler
	sb *benchSB
}

func benchNewEnv(b *testing.B, logger *slog.Logger) *benchEnv {
	b.Helper()
	return benchNewEnvOpts(b, kvscheduler.Options{Logger: logger})
}

// benchNewEnvOpts makes a scheduler with opts (a nil Logger discards the
// log).
func benchNewEnvOpts(b *testing.B, opts kvscheduler.Options) *benchEnv {
	b.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	env := &benchEnv{
		s:  kvscheduler.New(opts),
		sb: &benchSB{},
	}
	if err := env.s.RegisterKVDescriptor(env.sb.descriptors()...); err != nil {
		env.s.Close()
		b.Fatalf("RegisterKVDescriptor: %v", err)
	}
	return env
}

func (env *benchEnv) close() { env.s.Close() }

// commit commits a transaction setting the values of the given keys and
// fails the benchmark on error.
func (env *benchEnv) commit(ctx context.Context, b *testing.B, sets ...benchSet) uint64 {
	b.Helper()
	txn := env.s.StartNBTransaction()
	for _, set := range sets {
		for i, key := range set.keys {
			if set.vals == nil {
				txn.SetValue(key, nil)
			} else {
				txn.SetValue(key, set.vals[i])
			}
		}
	}
	seq, err := txn.Commit(ctx, optsOf(ctx))
	if err != nil {
		b.Fatalf("Commit: %v", err)
	}
	return seq
}

// benchSet is a batch of keys with their values (nil vals: delete them).
type benchSet struct {
	keys []string
	vals []proto.Message
}

func (d *benchData) ifaces() benchSet { return benchSet{d.ifaceKeys, d.ifaceVals} }
func (d *benchData) routes() benchSet { return benchSet{d.routeKeys, d.routeVals} }

// applyW1 applies the W1 state and checks that every value was created.
func (env *benchEnv) applyW1(b *testing.B, d *benchData) uint64 {
	seq := env.commit(context.Background(), b, d.ifaces(), d.routes())
	env.expectOps(b, "W1", int64(d.allValues), 0, 0)
	return seq
}

// expectOps checks the operation counters since the last reset, then resets
// them. It runs outside the timed sections.
func (env *benchEnv) expectOps(b *testing.B, what string, creates, updates, deletes int64) {
	b.Helper()
	c, u, del := env.sb.creates.Load(), env.sb.updates.Load(), env.sb.deletes.Load()
	if c != creates || u != updates || del != deletes {
		b.Fatalf("%s: %d creates, %d updates, %d deletes; want %d, %d, %d", what, c, u, del, creates, updates, deletes)
	}
	env.sb.resetCounters()
}

// benchGC collects garbage before a timed section, so that the garbage of the
// previous iteration is not collected on the measured transaction's time.
func benchGC() { runtime.GC() }

// benchHeap returns the live heap after a full collection.
func benchHeap() uint64 {
	runtime.GC()
	runtime.GC() // the second cycle frees what finalizers of the first released
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func benchReportPerValue(b *testing.B, values int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(values), "ns/value")
}

// benchCollections counts the garbage collections that ran while the
// measured transactions did (gc/op): whether the time includes the
// collector's, which grows with the live heap.
type benchCollections struct{ started, total uint64 }

func (c *benchCollections) startTimer(b *testing.B) {
	c.started = benchGCCycles()
	b.StartTimer()
}

func (c *benchCollections) stopTimer(b *testing.B) {
	b.StopTimer()
	c.total += benchGCCycles() - c.started
}

func (c *benchCollections) report(b *testing.B) {
	b.ReportMetric(float64(c.total)/float64(b.N), "gc/op")
}

func benchGCCycles() uint64 {
	sample := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// BenchmarkW1BulkCreate: one transaction creating N interfaces (each deriving
// one address) and N routes, 3N values, into an empty scheduler.
func BenchmarkW1BulkCreate(b *testing.B) {
	benchRunSizes(b, benchSizes, func(b *testing.B, n int) { benchW1(b, n, nil) })
}

// BenchmarkW1BulkCreateLogged is W1 with every log record, Debug included
// (where the transaction log is), formatted by a text handler and discarded:
// what printing the transaction log costs.
func BenchmarkW1BulkCreateLogged(b *testing.B) {
	benchRunSizes(b, benchSizes[:2], func(b *testing.B, n int) {
		handler := slog.NewTextHandler(benchDiscard{}, &slog.HandlerOptions{Level: slog.LevelDebug})
		benchW1(b, n, slog.New(handler))
	})
}

type benchDiscard struct{}

func (benchDiscard) Write(p []byte) (int, error) { return len(p), nil }

func benchW1(b *testing.B, n int, logger *slog.Logger) {
	d := benchNewData(n)
	var gc benchCollections
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		env := benchNewEnv(b, logger)
		benchGC()
		if *benchSetupOnly {
			env.close()
			continue
		}
		gc.startTimer(b)
		env.commit(context.Background(), b, d.ifaces(), d.routes())
		gc.stopTimer(b)
		env.expectOps(b, "W1", int64(d.allValues), 0, 0)
		env.close()
	}
	benchReportPerValue(b, d.allValues)
	gc.report(b)
}

// BenchmarkW2RouteUpdate: with W1 applied, 200 transactions each updating one
// route (a re-creation: Delete and Create), committed one after the other with
// a blocking Commit. ns/op is for the 200; ns/update is the mean latency of
// one Commit, median-ns/update and p99-ns/update its distribution over every
// update of the run.
func BenchmarkW2RouteUpdate(b *testing.B) {
	benchRunSizes(b, benchSizes, func(b *testing.B, n int) {
		b.StopTimer()
		d := benchNewData(n)
		env := benchNewEnv(b, nil)
		defer env.close()
		env.applyW1(b, d)

		// 200 routes spread over the table, with two alternative values each
		// so that every commit is a change.
		keys := make([]string, benchUpdates)
		vals := [2][]proto.Message{make([]proto.Message, benchUpdates), make([]proto.Message, benchUpdates)}
		for k := range benchUpdates {
			i := k * n / benchUpdates
			keys[k] = d.routeKeys[i]
			vals[0][k] = benchRouteValue(i, 1)
			vals[1][k] = benchRouteValue(i, 2)
		}
		latencies := make([]time.Duration, 0, benchUpdates*b.N)
		ctx := context.Background()
		benchGC()
		b.ResetTimer()
		b.StartTimer()
		for iter := range b.N {
			for k := range benchUpdates {
				start := time.Now()
				if _, err := env.s.StartNBTransaction().SetValue(keys[k], vals[iter%2][k]).Commit(ctx, optsOf(ctx)); err != nil {
					b.Fatalf("Commit: %v", err)
				}
				latencies = append(latencies, time.Since(start))
			}
		}
		b.StopTimer()
		env.expectOps(b, "W2", int64(benchUpdates*b.N), 0, int64(benchUpdates*b.N))
		benchReportLatencies(b, latencies)
	})
}

func benchReportLatencies(b *testing.B, latencies []time.Duration) {
	var total time.Duration
	for _, l := range latencies {
		total += l
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(total.Nanoseconds())/float64(len(latencies)), "ns/update")
	b.ReportMetric(float64(latencies[len(latencies)/2].Nanoseconds()), "median-ns/update")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Nanoseconds()), "p99-ns/update")
}

// BenchmarkW3PendingCascade: N routes committed first (PENDING: their
// interfaces are missing), then one transaction adding the N interfaces,
// which creates the interfaces, their addresses and the waiting routes. Only
// the second transaction is timed.
func BenchmarkW3PendingCascade(b *testing.B) {
	benchRunSizes(b, benchSizes, func(b *testing.B, n int) {
		d := benchNewData(n)
		var gc benchCollections
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			env := benchNewEnv(b, nil)
			env.commit(context.Background(), b, d.routes())
			env.expectOps(b, "W3 routes", 0, 0, 0)
			benchGC()
			if *benchSetupOnly {
				env.close()
				continue
			}
			gc.startTimer(b)
			env.commit(context.Background(), b, d.ifaces())
			gc.stopTimer(b)
			env.expectOps(b, "W3", int64(d.allValues), 0, 0)
			env.close()
		}
		benchReportPerValue(b, d.allValues)
		gc.report(b)
	})
}

// BenchmarkW4DeleteCascade: with W1 applied, one transaction deleting the N
// interfaces: the routes are deleted and go PENDING, the addresses and the
// interfaces are deleted.
func BenchmarkW4DeleteCascade(b *testing.B) {
	benchRunSizes(b, benchSizes, func(b *testing.B, n int) {
		d := benchNewData(n)
		var gc benchCollections
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			env := benchNewEnv(b, nil)
			env.applyW1(b, d)
			benchGC()
			if *benchSetupOnly {
				env.close()
				continue
			}
			gc.startTimer(b)
			env.commit(context.Background(), b, benchSet{keys: d.ifaceKeys})
			gc.stopTimer(b)
			env.expectOps(b, "W4", 0, 0, int64(d.allValues))
			env.close()
		}
		benchReportPerValue(b, d.allValues)
		gc.report(b)
	})
}

// BenchmarkW5ResyncInSync: with W1 applied, a full resync of the same NB
// values while the descriptors' Retrieve returns exactly what is applied. It
// must execute no operation; that is checked on the transaction record (a
// correctness check, outside the timer). At N=100k it is the no-op resync of
// 300k values.
func BenchmarkW5ResyncInSync(b *testing.B) {
	benchRunSizes(b, benchSizes, func(b *testing.B, n int) {
		d := benchNewData(n)
		sbIfaces, sbRoutes := d.sbState()
		ctx := withOpts(context.Background(), api.TxnOptions{Resync: api.FullResync})
		var gc benchCollections
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			env := benchNewEnv(b, nil)
			env.applyW1(b, d)
			env.sb.sbIfaces, env.sb.sbRoutes = sbIfaces, sbRoutes
			benchGC()
			if *benchSetupOnly {
				env.close()
				continue
			}
			gc.startTimer(b)
			seq := env.commit(ctx, b, d.ifaces(), d.routes())
			gc.stopTimer(b)
			benchCheckNoOps(b, env, seq)
			env.close()
		}
		benchReportPerValue(b, d.allValues)
		gc.report(b)
	})
}

// benchCheckNoOps fails the benchmark when the resync transaction seq
// executed (or called) any operation.
func benchCheckNoOps(b *testing.B, env *benchEnv, seq uint64) {
	b.Helper()
	if retrieves := env.sb.retrieves.Load(); retrieves != 2 {
		b.Errorf("resync: Retrieve called %d times, want 2 (iface, route)", retrieves)
	}
	if ops := env.sb.ops(); ops != 0 {
		b.Errorf("resync of an SB in sync called %d descriptor operations (%d creates, %d updates, %d deletes), want 0",
			ops, env.sb.creates.Load(), env.sb.updates.Load(), env.sb.deletes.Load())
	}
	env.sb.resetCounters()
	rec := env.s.GetRecordedTransaction(seq)
	if rec == nil {
		b.Fatalf("resync: no record of transaction %d", seq)
	}
	if len(rec.Executed) != 0 {
		shown := rec.Executed[:min(5, len(rec.Executed))]
		var ops []string
		for _, op := range shown {
			ops = append(ops, fmt.Sprintf("%s %s (NOOP=%v, %s->%s)", op.Operation, op.Key, op.NOOP, op.PrevState, op.NewState))
		}
		b.Errorf("resync of an SB in sync executed %d operations, want 0; first: %s", len(rec.Executed), strings.Join(ops, "; "))
	}
}

// BenchmarkW6Heap: live heap held by the scheduler after W1 (B/value,
// heap-MB) and after W1 followed by the 200 single-route updates of W2
// (B/value-after-W2, heap-MB-after-W2), with the default history retention.
// The heap is measured after a full GC, relative to a baseline taken before
// the scheduler and the values were made, so it includes the values
// themselves. ns/op times the W1 commit only and is not a target.
func BenchmarkW6Heap(b *testing.B) {
	benchRunSizes(b, benchSizes, func(b *testing.B, n int) {
		values := 3 * n
		var afterW1, afterW2, afterDelete uint64
		var hist int
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			base := benchHeap()
			env := benchNewEnv(b, nil)
			txn := env.s.StartNBTransaction()
			for i := range n {
				txn.SetValue(benchIfaceKey(i), benchIfaceValue(i))
				txn.SetValue(benchRouteKey(i), benchRouteValue(i, 0))
			}
			b.StartTimer()
			if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
				b.Fatalf("Commit: %v", err)
			}
			b.StopTimer()
			txn = nil
			env.expectOps(b, "W6 W1", int64(values), 0, 0)
			afterW1 = benchHeapDelta(base)

			for k := range benchUpdates {
				i := k * n / benchUpdates
				if _, err := env.s.StartNBTransaction().SetValue(benchRouteKey(i), benchRouteValue(i, 1)).Commit(context.Background(), api.TxnOptions{}); err != nil {
					b.Fatalf("Commit: %v", err)
				}
			}
			env.expectOps(b, "W6 W2", benchUpdates, 0, benchUpdates)
			afterW2 = benchHeapDelta(base)

			// Every value deleted: what is left is the history's records
			// (the deletes keep the deleted values) and what the graph
			// did not give back.
			txn = env.s.StartNBTransaction()
			for i := range n {
				txn.SetValue(benchIfaceKey(i), nil)
				txn.SetValue(benchRouteKey(i), nil)
			}
			if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
				b.Fatalf("Commit: %v", err)
			}
			txn = nil
			afterDelete = benchHeapDelta(base)
			hist = env.s.GetStats().History.Bytes
			env.close()
		}
		b.ReportMetric(float64(afterW1)/float64(values), "B/value")
		b.ReportMetric(float64(afterW1)/1e6, "heap-MB")
		b.ReportMetric(float64(afterW2)/float64(values), "B/value-after-W2")
		b.ReportMetric(float64(afterW2)/1e6, "heap-MB-after-W2")
		b.ReportMetric(float64(afterDelete)/1e6, "heap-MB-after-delete")
		b.ReportMetric(float64(hist)/1e6, "history-MB-after-delete")
	})
}

func benchHeapDelta(base uint64) uint64 {
	h := benchHeap()
	if h < base {
		return 0
	}
	return h - base
}

// BenchmarkChurn: with W1 at N=10k applied, 20 rounds each updating every
// route in one transaction (N re-creations per round). The live heap is
// measured after rounds 1, 5, 10, 15 and 20 (B/value-rNN, relative to a
// baseline taken before the scheduler, excluding the value messages, which
// the benchmark holds); heap-growth-% compares round 20 with round 5. ns/op
// times the 20 rounds. It runs with the default history retention and with
// one record kept (history=1), which separates the engine's own state from
// the transaction records it retains.
func BenchmarkChurn(b *testing.B) {
	benchRunSizes(b, []int{10_000}, func(b *testing.B, n int) {
		for _, hist := range []struct {
			name string
			size int
		}{{"default", 0}, {"1", 1}} {
			b.Run("history="+hist.name, func(b *testing.B) { benchChurn(b, n, hist.size) })
		}
	})
}

func benchChurn(b *testing.B, n, historySize int) {
	d := benchNewData(n)
	alt := [2][]proto.Message{make([]proto.Message, n), make([]proto.Message, n)}
	for i := range n {
		alt[0][i] = benchRouteValue(i, 1)
		alt[1][i] = benchRouteValue(i, 2)
	}
	measureAfter := []int{1, 5, 10, 15, 20}
	heap := make(map[int]uint64, len(measureAfter))
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		base := benchHeap()
		env := benchNewEnvOpts(b, kvscheduler.Options{HistorySize: historySize})
		env.applyW1(b, d)
		for round := 1; round <= benchChurnRounds; round++ {
			b.StartTimer()
			env.commit(context.Background(), b, benchSet{d.routeKeys, alt[round%2]})
			b.StopTimer()
			if slices.Contains(measureAfter, round) {
				heap[round] = benchHeapDelta(base)
			}
		}
		env.expectOps(b, "churn", int64(n*benchChurnRounds), 0, int64(n*benchChurnRounds))
		env.close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchChurnRounds), "ns/round")
	for _, round := range measureAfter {
		b.ReportMetric(float64(heap[round])/float64(d.allValues), fmt.Sprintf("B/value-r%02d", round))
	}
	b.ReportMetric(100*(float64(heap[20])-float64(heap[5]))/float64(heap[5]), "heap-growth-%")
}

package fleet

// What the agents ask of etcd, counted at their clients, and what etcd's
// members report of themselves: the load figures of BenchmarkFleet.

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// requestCounter counts the requests of the etcd clients it is installed
// in (dialOptions), by kind: a unary call by its method ("Range", "Txn",
// "LeaseGrant"), a message sent on a stream by its method and, for a
// watch, what it asks ("Watch/create", "Watch/progress", "Watch/cancel");
// a lease keep-alive is one message on a LeaseKeepAlive stream. Calls
// retried by the etcd client count once per attempt: each reaches a
// member.
//
// It is counted at the clients because etcd cannot tell: each member
// registers its gRPC metrics in the process's Prometheus registry, and
// with three members in one process only the first registration takes
// (the others fail, and etcd logs it), so grpc_server_* covers one member
// of the three.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int64
}

func newRequestCounter() *requestCounter { return &requestCounter{counts: map[string]int64{}} }

func (rc *requestCounter) add(kind string) {
	rc.mu.Lock()
	rc.counts[kind]++
	rc.mu.Unlock()
}

// snapshot returns the counts so far.
func (rc *requestCounter) snapshot() map[string]int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return maps.Clone(rc.counts)
}

// dialOptions install the counter in an etcd client. They are chained
// after the client's own interceptors, so a retried call counts each
// attempt.
func (rc *requestCounter) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			rc.add(methodName(method))
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			s, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				return nil, err
			}
			return &countedStream{ClientStream: s, rc: rc, method: methodName(method)}, nil
		}),
	}
}

// methodName is the method of a full gRPC method name
// ("/etcdserverpb.KV/Range" -> "Range").
func methodName(full string) string { return full[strings.LastIndex(full, "/")+1:] }

type countedStream struct {
	grpc.ClientStream
	rc     *requestCounter
	method string
}

func (s *countedStream) SendMsg(m any) error {
	kind := s.method
	if w, ok := m.(*pb.WatchRequest); ok {
		switch w.RequestUnion.(type) {
		case *pb.WatchRequest_CreateRequest:
			kind += "/create"
		case *pb.WatchRequest_ProgressRequest:
			kind += "/progress"
		case *pb.WatchRequest_CancelRequest:
			kind += "/cancel"
		}
	}
	s.rc.add(kind)
	return s.ClientStream.SendMsg(m)
}

// requestRates are the requests per second of each kind between two
// snapshots.
type requestRates map[string]float64

func ratesBetween(before, after map[string]int64, d time.Duration) requestRates {
	out := requestRates{}
	for kind, n := range after {
		if delta := n - before[kind]; delta > 0 {
			out[kind] = float64(delta) / d.Seconds()
		}
	}
	return out
}

func (r requestRates) total() float64 {
	var sum float64
	for _, v := range r {
		sum += v
	}
	return sum
}

// perAgent lists the rates by kind, per agent as well.
func (r requestRates) perAgent(agents int) string {
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(r)) {
		parts = append(parts, fmt.Sprintf("%s %.1f/s (%.3f/s per agent)", kind, r[kind], r[kind]/float64(agents)))
	}
	return strings.Join(parts, ", ")
}

// etcdStats are the figures etcd's members report of themselves in the
// process's Prometheus registry (etcd 3.6): the mvcc store's metrics are
// package variables, shared by the three members, so the gauges and the
// counters below are the sums over the members.
type etcdStats struct {
	watchers     float64 // etcd_debugging_mvcc_watcher_total
	watchStreams float64 // etcd_debugging_mvcc_watch_stream_total
	// Counters.
	ranges float64 // etcd_mvcc_range_total: each read served (once, by the member asked)
	puts   float64 // etcd_mvcc_put_total: each key written, by every member that applies it
	txns   float64 // etcd_mvcc_txn_total: multi-operation transactions, by every member
	events float64 // etcd_debugging_mvcc_events_total: watch events sent
	renews float64 // etcd_debugging_lease_renewed_total: lease keep-alives (leader only)
}

func readEtcdStats(tb testing.TB) etcdStats {
	tb.Helper()
	m := readEtcdMetrics(tb)
	return etcdStats{
		watchers:     m["etcd_debugging_mvcc_watcher_total"],
		watchStreams: m["etcd_debugging_mvcc_watch_stream_total"],
		ranges:       m["etcd_mvcc_range_total"],
		puts:         m["etcd_mvcc_put_total"],
		txns:         m["etcd_mvcc_txn_total"],
		events:       m["etcd_debugging_mvcc_events_total"],
		renews:       m["etcd_debugging_lease_renewed_total"],
	}
}

// etcdMetrics are the metrics readEtcdMetrics reads: single gauges and
// counters, each shared by the members (the sum over them).
var etcdMetrics = []string{
	"etcd_debugging_mvcc_watcher_total",
	"etcd_debugging_mvcc_watch_stream_total",
	"etcd_mvcc_range_total",
	"etcd_mvcc_put_total",
	"etcd_mvcc_txn_total",
	"etcd_debugging_mvcc_events_total",
	"etcd_debugging_lease_renewed_total",
	"etcd_server_leader_changes_seen_total",
}

// readEtcdMetrics reads etcdMetrics from the process's registry.
func readEtcdMetrics(tb testing.TB) map[string]float64 {
	tb.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatalf("etcd's metrics: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !slices.Contains(etcdMetrics, f.GetName()) || len(f.GetMetric()) != 1 {
			continue
		}
		m := f.GetMetric()[0]
		switch {
		case m.GetGauge() != nil:
			out[f.GetName()] = m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			out[f.GetName()] = m.GetCounter().GetValue()
		}
	}
	if len(out) != len(etcdMetrics) {
		tb.Fatalf("etcd's metrics: %d of the %d expected found (did etcd rename them?)", len(out), len(etcdMetrics))
	}
	return out
}

// ratesSince is the change of the counters from before to s over d, per
// second (the gauges are s's).
func (s etcdStats) ratesSince(before etcdStats, d time.Duration) etcdStats {
	per := func(a, b float64) float64 { return (a - b) / d.Seconds() }
	return etcdStats{watchers: s.watchers, watchStreams: s.watchStreams,
		ranges: per(s.ranges, before.ranges), puts: per(s.puts, before.puts), txns: per(s.txns, before.txns),
		events: per(s.events, before.events), renews: per(s.renews, before.renews)}
}

func (s etcdStats) String() string {
	return fmt.Sprintf("watchers %.0f, watch streams %.0f; per second: ranges %.1f, keys written %.1f (by each of 3 members), multi-op txns %.1f, watch events sent %.1f, lease renewals %.1f",
		s.watchers, s.watchStreams, s.ranges, s.puts/3, s.txns/3, s.events, s.renews)
}

// percentile is the p-th percentile (0 < p <= 1) of sorted by the
// nearest-rank method: the smallest value that at least p of the values
// do not exceed.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// latencies sorts ds and returns their p50, p99 and max in milliseconds.
func latencies(ds []time.Duration) (p50, p99, maxMs float64) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return ms(percentile(ds, 0.50)), ms(percentile(ds, 0.99)), ms(percentile(ds, 1))
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 100 * time.Millisecond}, {0.99, 198 * time.Millisecond}, {1, 200 * time.Millisecond}, {0.001, time.Millisecond}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("percentile(1..200 ms, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
}

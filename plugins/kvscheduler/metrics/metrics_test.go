package metrics_test

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/metrics"
)

// fakeSource is a StatsSource whose stats the test sets.
type fakeSource struct {
	mu    sync.Mutex
	stats api.SchedulerStats
	calls int
}

func (f *fakeSource) GetStats() api.SchedulerStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.stats
}

func (f *fakeSource) set(st api.SchedulerStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats = st
}

func newMetrics(t *testing.T, src metrics.StatsSource) (*prometheus.Registry, *metrics.Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, src)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return reg, m
}

func compare(t *testing.T, reg prometheus.Gatherer, expected string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), names...); err != nil {
		t.Error(err)
	}
}

func count(t *testing.T, reg prometheus.Gatherer, names ...string) int {
	t.Helper()
	n, err := testutil.GatherAndCount(reg, names...)
	if err != nil {
		t.Fatalf("GatherAndCount: %v", err)
	}
	return n
}

// histogram returns the histogram of the series name{labels}, failing the
// test when there is none.
func histogram(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			t.Fatalf("%s is a %v, not a histogram", name, mf.GetType())
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
					continue next
				}
			}
			return m.GetHistogram()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return nil
}

func checkHistogram(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string, wantCount uint64, wantSum float64) {
	t.Helper()
	h := histogram(t, reg, name, labels)
	if h.GetSampleCount() != wantCount {
		t.Errorf("%s%v: count %d, want %d", name, labels, h.GetSampleCount(), wantCount)
	}
	if math.Abs(h.GetSampleSum()-wantSum) > 1e-9 {
		t.Errorf("%s%v: sum %v, want %v", name, labels, h.GetSampleSum(), wantSum)
	}
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func rec(typ api.TxnType, resync api.ResyncType, d time.Duration) *api.RecordedTxn {
	return &api.RecordedTxn{TxnType: typ, ResyncType: resync, Start: t0, Stop: t0.Add(d)}
}

func TestTransactions(t *testing.T) {
	reg, m := newMetrics(t, nil)

	m.TxnDone(rec(api.NBTransaction, api.NotResync, 3*time.Millisecond), time.Millisecond, false)
	m.TxnDone(rec(api.NBTransaction, api.NotResync, 5*time.Millisecond), 0, false)
	m.TxnDone(rec(api.NBTransaction, api.NotResync, 2*time.Millisecond), 0, true)
	m.TxnDone(rec(api.NBTransaction, api.FullResync, time.Second), 0, false)
	m.TxnDone(rec(api.NBTransaction, api.UpstreamResync, time.Second), 0, true)
	m.TxnDone(rec(api.NBTransaction, api.DownstreamResync, 2*time.Second), 0, false)
	m.TxnDone(rec(api.SBNotification, api.NotResync, 100*time.Microsecond), 0, false)
	m.TxnDone(rec(api.RetryFailedOps, api.NotResync, time.Millisecond), 0, true)
	m.TxnDone(rec(api.RetryUnimplemented, api.NotResync, time.Millisecond), 0, false)
	m.TxnDone(rec(api.FollowUp, api.NotResync, 4*time.Millisecond), 0, true)
	m.TxnDone(rec(api.DriftRepair, api.NotResync, 2*time.Millisecond), 0, false)
	m.TxnDone(rec(api.TxnType(42), api.ResyncType(42), time.Millisecond), 0, false)

	compare(t, reg, `
# HELP netagent_scheduler_transactions_total Transactions finished by the KV Scheduler, by type, resync type and result.
# TYPE netagent_scheduler_transactions_total counter
netagent_scheduler_transactions_total{result="failed",resync="none",type="nb_transaction"} 1
netagent_scheduler_transactions_total{result="ok",resync="none",type="nb_transaction"} 2
netagent_scheduler_transactions_total{result="ok",resync="full",type="nb_transaction"} 1
netagent_scheduler_transactions_total{result="failed",resync="upstream",type="nb_transaction"} 1
netagent_scheduler_transactions_total{result="ok",resync="downstream",type="nb_transaction"} 1
netagent_scheduler_transactions_total{result="ok",resync="none",type="sb_notification"} 1
netagent_scheduler_transactions_total{result="failed",resync="none",type="retry_of_failed_operations"} 1
netagent_scheduler_transactions_total{result="ok",resync="none",type="retry_of_unimplemented_values"} 1
netagent_scheduler_transactions_total{result="failed",resync="none",type="follow_up_requested_by_a_descriptor"} 1
netagent_scheduler_transactions_total{result="ok",resync="none",type="drift_repair"} 1
netagent_scheduler_transactions_total{result="ok",resync="unknown",type="unknown"} 1
`, "netagent_scheduler_transactions_total")

	checkHistogram(t, reg, "netagent_scheduler_transaction_duration_seconds",
		map[string]string{"type": "nb_transaction"}, 6, 0.003+0.005+0.002+1+1+2)
	checkHistogram(t, reg, "netagent_scheduler_transaction_duration_seconds",
		map[string]string{"type": "sb_notification"}, 1, 0.0001)
	checkHistogram(t, reg, "netagent_scheduler_transaction_duration_seconds",
		map[string]string{"type": "retry_of_failed_operations"}, 1, 0.001)
	checkHistogram(t, reg, "netagent_scheduler_transaction_duration_seconds",
		map[string]string{"type": "retry_of_unimplemented_values"}, 1, 0.001)
	checkHistogram(t, reg, "netagent_scheduler_transaction_duration_seconds",
		map[string]string{"type": "follow_up_requested_by_a_descriptor"}, 1, 0.004)
	checkHistogram(t, reg, "netagent_scheduler_transaction_duration_seconds",
		map[string]string{"type": "drift_repair"}, 1, 0.002)
	checkHistogram(t, reg, "netagent_scheduler_transaction_duration_seconds",
		map[string]string{"type": "unknown"}, 1, 0.001)
	if n := count(t, reg, "netagent_scheduler_transaction_duration_seconds"); n != 7 {
		t.Errorf("%d transaction_duration_seconds series, want 7", n)
	}
	checkHistogram(t, reg, "netagent_scheduler_transaction_queue_wait_seconds", nil, 12, 0.001)
}

func TestTransactionDurationBuckets(t *testing.T) {
	reg, m := newMetrics(t, nil)
	m.TxnDone(rec(api.NBTransaction, api.NotResync, 50*time.Microsecond), 0, false)  // le 0.0001
	m.TxnDone(rec(api.NBTransaction, api.NotResync, 100*time.Microsecond), 0, false) // le 0.0001 (inclusive)
	m.TxnDone(rec(api.NBTransaction, api.NotResync, 3*time.Millisecond), 0, false)   // le 0.0032
	m.TxnDone(rec(api.NBTransaction, api.NotResync, 20*time.Second), 0, false)       // le 26.2144
	m.TxnDone(rec(api.NBTransaction, api.NotResync, 30*time.Second), 0, false)       // +Inf
	h := histogram(t, reg, "netagent_scheduler_transaction_duration_seconds", map[string]string{"type": "nb_transaction"})
	b := h.GetBucket()
	if len(b) != 19 {
		t.Fatalf("%d buckets, want 19", len(b))
	}
	if first, last := b[0].GetUpperBound(), b[len(b)-1].GetUpperBound(); first != 0.0001 || last != 26.2144 {
		t.Errorf("buckets from %v to %v, want 0.0001 to 26.2144", first, last)
	}
	want := map[float64]uint64{0.0001: 2, 0.0016: 2, 0.0032: 3, 13.1072: 3, 26.2144: 4}
	for _, bk := range b {
		if w, ok := want[bk.GetUpperBound()]; ok && bk.GetCumulativeCount() != w {
			t.Errorf("bucket le=%v: %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), w)
		}
	}
	if h.GetSampleCount() != 5 {
		t.Errorf("count %d, want 5", h.GetSampleCount())
	}
}

func TestTransactionWithoutTimesOrRecord(t *testing.T) {
	reg, m := newMetrics(t, nil)
	// No Stop, Stop before Start: counted, no duration observed.
	m.TxnDone(&api.RecordedTxn{TxnType: api.NBTransaction, Start: t0}, 0, false)
	m.TxnDone(&api.RecordedTxn{TxnType: api.NBTransaction, Start: t0, Stop: t0.Add(-time.Second)}, 0, false)
	// No record at all: only the queue wait.
	m.TxnDone(nil, time.Millisecond, true)

	compare(t, reg, `
# HELP netagent_scheduler_transactions_total Transactions finished by the KV Scheduler, by type, resync type and result.
# TYPE netagent_scheduler_transactions_total counter
netagent_scheduler_transactions_total{result="ok",resync="none",type="nb_transaction"} 2
`, "netagent_scheduler_transactions_total")
	if n := count(t, reg, "netagent_scheduler_transaction_duration_seconds"); n != 0 {
		t.Errorf("%d transaction_duration_seconds series, want 0", n)
	}
	checkHistogram(t, reg, "netagent_scheduler_transaction_queue_wait_seconds", nil, 3, 0.001)
}

func TestQueueWaitExposition(t *testing.T) {
	reg, m := newMetrics(t, nil)
	waits := []time.Duration{0, -5 * time.Millisecond, time.Millisecond, 500 * time.Millisecond, time.Minute}
	sum := 0.0
	for _, w := range waits {
		m.TxnDone(rec(api.SBNotification, api.NotResync, 0), w, false)
		sum += math.Max(w.Seconds(), 0)
	}
	compare(t, reg, `
# HELP netagent_scheduler_transaction_queue_wait_seconds Time transactions waited in the KV Scheduler's queue before they started.
# TYPE netagent_scheduler_transaction_queue_wait_seconds histogram
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0001"} 2
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0002"} 2
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0004"} 2
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0008"} 2
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0016"} 3
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0032"} 3
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0064"} 3
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0128"} 3
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0256"} 3
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.0512"} 3
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.1024"} 3
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.2048"} 3
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.4096"} 3
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="0.8192"} 4
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="1.6384"} 4
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="3.2768"} 4
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="6.5536"} 4
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="13.1072"} 4
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="26.2144"} 4
netagent_scheduler_transaction_queue_wait_seconds_bucket{le="+Inf"} 5
netagent_scheduler_transaction_queue_wait_seconds_sum `+strconv.FormatFloat(sum, 'g', -1, 64)+`
netagent_scheduler_transaction_queue_wait_seconds_count 5
`, "netagent_scheduler_transaction_queue_wait_seconds")
}

func TestOperations(t *testing.T) {
	reg, m := newMetrics(t, nil)
	boom := errors.New("boom")

	m.OpDone("iface", api.OpCreate, nil, 2*time.Millisecond)
	m.OpDone("iface", api.OpCreate, nil, 4*time.Millisecond)
	m.OpDone("iface", api.OpCreate, boom, time.Millisecond)
	m.OpDone("iface", api.OpUpdate, nil, time.Millisecond)
	m.OpDone("iface", api.OpDelete, boom, time.Millisecond)
	m.OpDone("route", api.OpDelete, nil, 10*time.Millisecond)
	m.OpDone("route", api.OpDelete, nil, -time.Millisecond) // counted as 0
	m.OpDone("route", api.TxnOperation(99), nil, time.Millisecond)

	compare(t, reg, `
# HELP netagent_scheduler_operations_total Descriptor CRUD callbacks that returned, by descriptor, operation and result.
# TYPE netagent_scheduler_operations_total counter
netagent_scheduler_operations_total{descriptor="iface",operation="create",result="error"} 1
netagent_scheduler_operations_total{descriptor="iface",operation="create",result="ok"} 2
netagent_scheduler_operations_total{descriptor="iface",operation="delete",result="error"} 1
netagent_scheduler_operations_total{descriptor="iface",operation="update",result="ok"} 1
netagent_scheduler_operations_total{descriptor="route",operation="delete",result="ok"} 2
netagent_scheduler_operations_total{descriptor="route",operation="unknown",result="ok"} 1
`, "netagent_scheduler_operations_total")

	d := "netagent_scheduler_operation_duration_seconds"
	checkHistogram(t, reg, d, map[string]string{"descriptor": "iface", "operation": "create"}, 3, 0.007)
	checkHistogram(t, reg, d, map[string]string{"descriptor": "iface", "operation": "update"}, 1, 0.001)
	checkHistogram(t, reg, d, map[string]string{"descriptor": "iface", "operation": "delete"}, 1, 0.001)
	checkHistogram(t, reg, d, map[string]string{"descriptor": "route", "operation": "delete"}, 2, 0.010)
	checkHistogram(t, reg, d, map[string]string{"descriptor": "route", "operation": "unknown"}, 1, 0.001)
	if n := count(t, reg, d); n != 5 {
		t.Errorf("%d operation_duration_seconds series, want 5", n)
	}
}

func TestRetriesScheduled(t *testing.T) {
	reg, m := newMetrics(t, nil)
	expect := func(v int) {
		t.Helper()
		compare(t, reg, fmt.Sprintf(`
# HELP netagent_scheduler_retries_scheduled_total Values the KV Scheduler scheduled for a retry.
# TYPE netagent_scheduler_retries_scheduled_total counter
netagent_scheduler_retries_scheduled_total %d
`, v), "netagent_scheduler_retries_scheduled_total")
	}
	expect(0)
	m.RetryScheduled(3)
	m.RetryScheduled(0)
	m.RetryScheduled(-4) // ignored
	m.RetryScheduled(2)
	expect(5)
}

const statsHelp = `
# HELP netagent_scheduler_queue_length Transactions waiting in the KV Scheduler's queue.
# TYPE netagent_scheduler_queue_length gauge
netagent_scheduler_queue_length %d
# HELP netagent_scheduler_history_records Transaction records kept in the KV Scheduler's history.
# TYPE netagent_scheduler_history_records gauge
netagent_scheduler_history_records %d
# HELP netagent_scheduler_history_bytes Estimated size in bytes of the records kept in the KV Scheduler's history.
# TYPE netagent_scheduler_history_bytes gauge
netagent_scheduler_history_bytes %d
# HELP netagent_scheduler_history_trimmed_total Transaction records dropped by the KV Scheduler's history retention limits.
# TYPE netagent_scheduler_history_trimmed_total counter
netagent_scheduler_history_trimmed_total %d
`

var stateNames = []string{
	"netagent_scheduler_queue_length",
	"netagent_scheduler_values",
	"netagent_scheduler_history_records",
	"netagent_scheduler_history_bytes",
	"netagent_scheduler_history_trimmed_total",
}

const valuesHeader = `
# HELP netagent_scheduler_values Values in the KV Scheduler's graph by descriptor and state (derived values included).
# TYPE netagent_scheduler_values gauge
`

func TestStatsFromSource(t *testing.T) {
	src := &fakeSource{}
	src.set(api.SchedulerStats{
		QueueLength: 7,
		ValuesByDescriptor: map[string]map[string]int{
			"iface": {"CONFIGURED": 3, "PENDING": 1, "FAILED": 2},
			"route": {"CONFIGURED": 5},
		},
		History: api.HistoryInfo{Kept: 12, Bytes: 3456, Trimmed: 89},
	})
	reg, _ := newMetrics(t, src)

	compare(t, reg, fmt.Sprintf(statsHelp, 7, 12, 3456, 89)+valuesHeader+`
netagent_scheduler_values{descriptor="iface",state="configured"} 3
netagent_scheduler_values{descriptor="iface",state="failed"} 2
netagent_scheduler_values{descriptor="iface",state="pending"} 1
netagent_scheduler_values{descriptor="route",state="configured"} 5
`, stateNames...)

	// The failed and pending iface values are gone (one dropped out of the
	// map, one left at zero), and so are all route values: their series
	// disappear instead of staying at their last value.
	src.set(api.SchedulerStats{
		QueueLength: 0,
		ValuesByDescriptor: map[string]map[string]int{
			"iface": {"CONFIGURED": 6, "PENDING": 0},
		},
		History: api.HistoryInfo{Kept: 10, Bytes: 3000, Trimmed: 91},
	})
	compare(t, reg, fmt.Sprintf(statsHelp, 0, 10, 3000, 91)+valuesHeader+`
netagent_scheduler_values{descriptor="iface",state="configured"} 6
`, stateNames...)

	// No values at all: no values series, the other state metrics remain.
	src.set(api.SchedulerStats{})
	if n := count(t, reg, "netagent_scheduler_values"); n != 0 {
		t.Errorf("%d values series with no values, want 0", n)
	}
	compare(t, reg, fmt.Sprintf(statsHelp, 0, 0, 0, 0), stateNames...)
}

func TestStatsReadAtScrapeOnly(t *testing.T) {
	src := &fakeSource{}
	reg, m := newMetrics(t, src)
	m.TxnDone(rec(api.NBTransaction, api.NotResync, time.Millisecond), 0, false)
	m.OpDone("iface", api.OpCreate, nil, time.Millisecond)
	if src.calls != 0 {
		t.Errorf("GetStats called %d times by events, want 0", src.calls)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if src.calls != 1 {
		t.Errorf("GetStats called %d times by one scrape, want 1", src.calls)
	}
}

func TestNilSource(t *testing.T) {
	reg, m := newMetrics(t, nil)
	m.TxnDone(rec(api.NBTransaction, api.NotResync, time.Millisecond), 0, false)
	if n := count(t, reg, stateNames...); n != 0 {
		t.Errorf("%d state series without a source, want 0", n)
	}
	// The event metrics are there.
	if n := count(t, reg, "netagent_scheduler_transactions_total"); n != 1 {
		t.Errorf("%d transactions_total series, want 1", n)
	}

	src := &fakeSource{}
	src.set(api.SchedulerStats{
		QueueLength:        2,
		ValuesByDescriptor: map[string]map[string]int{"iface": {"CONFIGURED": 1}},
		History:            api.HistoryInfo{Kept: 1, Bytes: 100},
	})
	m.SetSource(src)
	compare(t, reg, fmt.Sprintf(statsHelp, 2, 1, 100, 0)+valuesHeader+`
netagent_scheduler_values{descriptor="iface",state="configured"} 1
`, stateNames...)

	m.SetSource(nil)
	if n := count(t, reg, stateNames...); n != 0 {
		t.Errorf("%d state series after SetSource(nil), want 0", n)
	}
}

func TestNewTwiceOnSameRegistry(t *testing.T) {
	reg, m1 := newMetrics(t, nil)
	m2, err := metrics.New(reg, nil)
	if err == nil {
		t.Fatal("second New on the same registry: no error")
	}
	if m2 != nil {
		t.Errorf("second New returned %v with its error, want nil", m2)
	}
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Errorf("error %v is not a prometheus.AlreadyRegisteredError", err)
	}
	// The first one still works.
	m1.RetryScheduled(1)
	if n := count(t, reg, "netagent_scheduler_retries_scheduled_total"); n != 1 {
		t.Errorf("%d retries_scheduled_total series, want 1", n)
	}
}

func TestNewRegistersAllOrNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	foreign := prometheus.NewGauge(prometheus.GaugeOpts{Name: "netagent_scheduler_queue_length", Help: "someone else's"})
	reg.MustRegister(foreign)
	if _, err := metrics.New(reg, &fakeSource{}); err == nil {
		t.Fatal("New over a conflicting metric: no error")
	}
	// Nothing else was registered: the registry exposes only the foreign
	// gauge, and another of the scheduler's names is still free.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "netagent_scheduler_queue_length" || mfs[0].GetHelp() != "someone else's" {
		t.Errorf("registry holds %v, want only the foreign gauge", mfs)
	}
	retries := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "netagent_scheduler_retries_scheduled_total",
		Help: "Values the KV Scheduler scheduled for a retry.",
	})
	if err := reg.Register(retries); err != nil {
		t.Errorf("retries_scheduled_total was left registered by the failed New: %v", err)
	}
}

func TestNewNilRegisterer(t *testing.T) {
	m, err := metrics.New(nil, nil)
	if err == nil || m != nil {
		t.Errorf("New(nil, nil) = %v, %v; want nil, error", m, err)
	}
}

func TestInvalidUTF8Descriptor(t *testing.T) {
	src := &fakeSource{}
	src.set(api.SchedulerStats{ValuesByDescriptor: map[string]map[string]int{"bad\xff": {"CONFIGURED": 1}}})
	reg, m := newMetrics(t, src)
	m.OpDone("bad\xff", api.OpCreate, nil, time.Millisecond) // must not panic
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("Gather: %v", err)
	}
	compare(t, reg, valuesHeader+
		"netagent_scheduler_values{descriptor=\"bad\uFFFD\",state=\"configured\"} 1\n",
		"netagent_scheduler_values")
	compare(t, reg, `
# HELP netagent_scheduler_operations_total Descriptor CRUD callbacks that returned, by descriptor, operation and result.
# TYPE netagent_scheduler_operations_total counter
`+"netagent_scheduler_operations_total{descriptor=\"bad\uFFFD\",operation=\"create\",result=\"ok\"} 1\n",
		"netagent_scheduler_operations_total")
}

func TestHTTPExposition(t *testing.T) {
	src := &fakeSource{}
	src.set(api.SchedulerStats{
		QueueLength:        1,
		ValuesByDescriptor: map[string]map[string]int{"iface": {"CONFIGURED": 2}},
	})
	reg, m := newMetrics(t, src)
	m.TxnDone(rec(api.NBTransaction, api.FullResync, 5*time.Millisecond), time.Millisecond, false)
	m.OpDone("iface", api.OpCreate, nil, time.Millisecond)
	m.RetryScheduled(1)

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	text := string(body)
	for _, want := range []string{
		`netagent_scheduler_transactions_total{result="ok",resync="full",type="nb_transaction"} 1`,
		"# TYPE netagent_scheduler_transaction_duration_seconds histogram",
		"netagent_scheduler_transaction_queue_wait_seconds_count 1",
		`netagent_scheduler_operations_total{descriptor="iface",operation="create",result="ok"} 1`,
		"netagent_scheduler_retries_scheduled_total 1",
		"netagent_scheduler_queue_length 1",
		`netagent_scheduler_values{descriptor="iface",state="configured"} 2`,
		"# TYPE netagent_scheduler_history_trimmed_total counter",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q:\n%s", want, text)
		}
	}
}

func TestConcurrentObserveAndScrape(t *testing.T) {
	src := &fakeSource{}
	src.set(api.SchedulerStats{ValuesByDescriptor: map[string]map[string]int{"d0": {"CONFIGURED": 1}}})
	reg, m := newMetrics(t, src)

	const goroutines, perG = 8, 300
	var observers, scrapers sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 2; i++ {
		scrapers.Add(1)
		go func() {
			defer scrapers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for g := 0; g < goroutines; g++ {
		observers.Add(1)
		go func() {
			defer observers.Done()
			desc := fmt.Sprintf("d%d", g%2)
			var err error
			if g%4 == 3 {
				err = errors.New("boom")
			}
			for i := 0; i < perG; i++ {
				m.OpDone(desc, api.OpCreate, err, time.Millisecond)
				if i%10 == 0 {
					m.TxnDone(rec(api.NBTransaction, api.NotResync, time.Millisecond), 0, false)
					m.RetryScheduled(1)
				}
				if i%50 == 0 {
					if g%2 == 0 {
						m.SetSource(nil)
					} else {
						m.SetSource(src)
					}
				}
			}
		}()
	}
	observers.Wait()
	close(stop)
	scrapers.Wait()

	// g = 0..7: d0 gets g = 0, 2, 4, 6 (all ok), d1 gets g = 1, 5 ok and
	// g = 3, 7 errors.
	compare(t, reg, fmt.Sprintf(`
# HELP netagent_scheduler_operations_total Descriptor CRUD callbacks that returned, by descriptor, operation and result.
# TYPE netagent_scheduler_operations_total counter
netagent_scheduler_operations_total{descriptor="d0",operation="create",result="ok"} %d
netagent_scheduler_operations_total{descriptor="d1",operation="create",result="ok"} %d
netagent_scheduler_operations_total{descriptor="d1",operation="create",result="error"} %d
# HELP netagent_scheduler_retries_scheduled_total Values the KV Scheduler scheduled for a retry.
# TYPE netagent_scheduler_retries_scheduled_total counter
netagent_scheduler_retries_scheduled_total %d
# HELP netagent_scheduler_transactions_total Transactions finished by the KV Scheduler, by type, resync type and result.
# TYPE netagent_scheduler_transactions_total counter
netagent_scheduler_transactions_total{result="ok",resync="none",type="nb_transaction"} %d
`, 4*perG, 2*perG, 2*perG, goroutines*perG/10, goroutines*perG/10),
		"netagent_scheduler_operations_total",
		"netagent_scheduler_retries_scheduled_total",
		"netagent_scheduler_transactions_total")
	d := "netagent_scheduler_operation_duration_seconds"
	checkHistogram(t, reg, d, map[string]string{"descriptor": "d0", "operation": "create"}, 4*perG, 4*perG*0.001)
	checkHistogram(t, reg, d, map[string]string{"descriptor": "d1", "operation": "create"}, 4*perG, 4*perG*0.001)
}

// TestDriftFound: values found out of sync are counted by descriptor and
// kind.
func TestDriftFound(t *testing.T) {
	reg, m := newMetrics(t, nil)
	var _ api.DriftObserver = m
	m.DriftFound("linux-interface", "gone")
	m.DriftFound("linux-interface", "gone")
	m.DriftFound("linux-route", "changed")
	compare(t, reg, `
# HELP netagent_scheduler_drift_found_total Values that drift transactions found out of sync with the SB (changed or gone outside the agent), by descriptor and kind (gone, changed). Their repairs are the transactions of type drift_repair.
# TYPE netagent_scheduler_drift_found_total counter
netagent_scheduler_drift_found_total{descriptor="linux-interface",kind="gone"} 2
netagent_scheduler_drift_found_total{descriptor="linux-route",kind="changed"} 1
`, "netagent_scheduler_drift_found_total")
}

package metrics

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

const (
	namespace = "netagent"
	subsystem = "scheduler"
)

// Label values.
const (
	resultOK     = "ok"
	resultFailed = "failed"
	resultError  = "error"
	unknown      = "unknown"
)

// durationBuckets are 0.0001 * 2^n seconds, n = 0..18: 100µs to ~26s.
var durationBuckets = prometheus.ExponentialBuckets(0.0001, 2, 19)

// StatsSource is what the collector reads at scrape time (the scheduler
// implements it).
type StatsSource interface {
	GetStats() api.SchedulerStats
}

// Metrics implements api.Observer and registers the scheduler's metrics on a
// registry the daemon passes in. It is safe for concurrent use: the observer
// methods, SetSource and scrapes may run at the same time.
type Metrics struct {
	txns        *prometheus.CounterVec
	txnDuration *prometheus.HistogramVec
	queueWait   prometheus.Histogram
	ops         *prometheus.CounterVec
	opDuration  *prometheus.HistogramVec
	retries     prometheus.Counter
	drift       *prometheus.CounterVec
	stats       *statsCollector
	// opMetrics caches the series of OpDone by descriptor, operation and
	// result (opKey -> *opSeries): a batch of 10,000 operations would look
	// each up by its label values 20,000 times.
	opMetrics sync.Map
}

type opKey struct {
	descriptor string
	op         api.TxnOperation
	failed     bool
}

type opSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

var (
	_ api.Observer         = (*Metrics)(nil)
	_ prometheus.Collector = (*statsCollector)(nil)
	_ prometheus.Collector = (*collector)(nil)
)

// New registers the metrics on reg. src may be nil until SetSource is called
// (the scheduler is built with the observer first). All the metrics are
// registered as one collector, so New either registers everything or
// nothing; it fails (without panicking) when reg is nil or already holds
// metrics of the same names, e.g. when called twice on the same registry.
func New(reg prometheus.Registerer, src StatsSource) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil prometheus.Registerer")
	}
	m := &Metrics{
		txns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Subsystem: subsystem,
			Name:      "transactions_total",
			Help:      "Transactions finished by the KV Scheduler, by type, resync type and result.",
		}, []string{"type", "resync", "result"}),
		txnDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace,
			Subsystem: subsystem,
			Name:      "transaction_duration_seconds",
			Help:      "Duration of the KV Scheduler's transactions (record Stop - Start), by type.",
			Buckets:   durationBuckets,
		}, []string{"type"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Subsystem: subsystem,
			Name:      "transaction_queue_wait_seconds",
			Help:      "Time transactions waited in the KV Scheduler's queue before they started.",
			Buckets:   durationBuckets,
		}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Subsystem: subsystem,
			Name:      "operations_total",
			Help:      "Descriptor CRUD callbacks that returned, by descriptor, operation and result.",
		}, []string{"descriptor", "operation", "result"}),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace,
			Subsystem: subsystem,
			Name:      "operation_duration_seconds",
			Help:      "Latency of descriptor CRUD callbacks, by descriptor and operation.",
			Buckets:   durationBuckets,
		}, []string{"descriptor", "operation"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Subsystem: subsystem,
			Name:      "retries_scheduled_total",
			Help:      "Values the KV Scheduler scheduled for a retry.",
		}),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Subsystem: subsystem,
			Name:      "drift_found_total",
			Help:      "Values that drift transactions found out of sync with the SB (changed or gone outside the agent), by descriptor and kind (gone, changed). Their repairs are the transactions of type drift_repair.",
		}, []string{"descriptor", "kind"}),
		stats: newStatsCollector(),
	}
	m.SetSource(src)
	c := &collector{parts: []prometheus.Collector{
		m.txns, m.txnDuration, m.queueWait, m.ops, m.opDuration, m.retries, m.drift, m.stats,
	}}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("metrics: registering the scheduler metrics: %w", err)
	}
	return m, nil
}

// SetSource sets (or, with nil, clears) the source of the state metrics read
// at scrape time.
func (m *Metrics) SetSource(src StatsSource) {
	if src == nil {
		m.stats.src.Store(nil)
		return
	}
	m.stats.src.Store(&sourceHolder{src: src})
}

// TxnDone implements api.Observer.
func (m *Metrics) TxnDone(rec *api.RecordedTxn, wait time.Duration, failed bool) {
	m.queueWait.Observe(seconds(wait))
	if rec == nil {
		return
	}
	typ := txnTypeLabel(rec.TxnType)
	result := resultOK
	if failed {
		result = resultFailed
	}
	m.txns.WithLabelValues(typ, resyncLabel(rec.ResyncType), result).Inc()
	if !rec.Start.IsZero() && !rec.Stop.IsZero() && !rec.Stop.Before(rec.Start) {
		m.txnDuration.WithLabelValues(typ).Observe(rec.Stop.Sub(rec.Start).Seconds())
	}
}

// OpDone implements api.Observer.
func (m *Metrics) OpDone(descriptor string, op api.TxnOperation, err error, latency time.Duration) {
	key := opKey{descriptor, op, err != nil}
	v, ok := m.opMetrics.Load(key)
	if !ok {
		operation := operationLabel(op)
		result := resultOK
		if err != nil {
			result = resultError
		}
		label := validLabel(descriptor)
		v, _ = m.opMetrics.LoadOrStore(key, &opSeries{
			count:    m.ops.WithLabelValues(label, operation, result),
			duration: m.opDuration.WithLabelValues(label, operation),
		})
	}
	series := v.(*opSeries)
	series.count.Inc()
	series.duration.Observe(seconds(latency))
}

// RetryScheduled implements api.Observer.
func (m *Metrics) RetryScheduled(n int) {
	if n > 0 {
		m.retries.Add(float64(n))
	}
}

// DriftFound implements api.DriftObserver.
func (m *Metrics) DriftFound(descriptor, kind string) {
	m.drift.WithLabelValues(validLabel(descriptor), validLabel(kind)).Inc()
}

// seconds converts d to seconds, negative durations counting as zero.
func seconds(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return d.Seconds()
}

// validLabel makes s valid UTF-8, as label values must be (the client
// library panics on invalid ones).
func validLabel(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// txnTypeLabel is t.String() in snake_case ("NB transaction" ->
// "nb_transaction"); the known types only, "unknown" otherwise.
func txnTypeLabel(t api.TxnType) string {
	switch t {
	case api.NBTransaction, api.SBNotification, api.RetryFailedOps, api.RetryUnimplemented, api.FollowUp, api.DriftRepair:
		return snakeCase(t.String())
	default:
		return unknown
	}
}

// snakeCase lower-cases s and replaces every run of characters other than
// ASCII letters and digits with one underscore.
func snakeCase(s string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			sep = false
			b.WriteRune(r)
			continue
		}
		sep = true
	}
	return b.String()
}

func resyncLabel(t api.ResyncType) string {
	switch t {
	case api.NotResync:
		return "none"
	case api.FullResync:
		return "full"
	case api.UpstreamResync:
		return "upstream"
	case api.DownstreamResync:
		return "downstream"
	default:
		return unknown
	}
}

func operationLabel(op api.TxnOperation) string {
	switch op {
	case api.OpCreate:
		return "create"
	case api.OpUpdate:
		return "update"
	case api.OpDelete:
		return "delete"
	case api.OpValidate:
		return "validate"
	case api.OpUndefined:
		return "undefined"
	default:
		return unknown
	}
}

// collector registers all the metrics as one unit, so that registration is
// all or nothing.
type collector struct {
	parts []prometheus.Collector
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, p := range c.parts {
		p.Describe(ch)
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.parts {
		p.Collect(ch)
	}
}

// sourceHolder boxes the StatsSource interface for atomic.Pointer.
type sourceHolder struct {
	src StatsSource
}

// statsCollector emits the state metrics from the source's current stats at
// every scrape; nothing is kept between scrapes, so nothing goes stale.
type statsCollector struct {
	src            atomic.Pointer[sourceHolder]
	queueLength    *prometheus.Desc
	values         *prometheus.Desc
	historyRecords *prometheus.Desc
	historyBytes   *prometheus.Desc
	historyTrimmed *prometheus.Desc
}

func newStatsCollector() *statsCollector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, subsystem, n) }
	return &statsCollector{
		queueLength: prometheus.NewDesc(name("queue_length"),
			"Transactions waiting in the KV Scheduler's queue.", nil, nil),
		values: prometheus.NewDesc(name("values"),
			"Values in the KV Scheduler's graph by descriptor and state (derived values included).",
			[]string{"descriptor", "state"}, nil),
		historyRecords: prometheus.NewDesc(name("history_records"),
			"Transaction records kept in the KV Scheduler's history.", nil, nil),
		historyBytes: prometheus.NewDesc(name("history_bytes"),
			"Estimated size in bytes of the records kept in the KV Scheduler's history.", nil, nil),
		historyTrimmed: prometheus.NewDesc(name("history_trimmed_total"),
			"Transaction records dropped by the KV Scheduler's history retention limits.", nil, nil),
	}
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.queueLength
	ch <- c.values
	ch <- c.historyRecords
	ch <- c.historyBytes
	ch <- c.historyTrimmed
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.src.Load()
	if h == nil {
		return
	}
	st := h.src.GetStats()
	ch <- prometheus.MustNewConstMetric(c.queueLength, prometheus.GaugeValue, float64(st.QueueLength))
	for descriptor, byState := range st.ValuesByDescriptor {
		descriptor = validLabel(descriptor)
		// Several state names differing only in case would collide once
		// lower-cased: sum them.
		counts := make(map[string]int, len(byState))
		for state, n := range byState {
			counts[validLabel(strings.ToLower(state))] += n
		}
		for state, n := range counts {
			if n == 0 {
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.values, prometheus.GaugeValue, float64(n), descriptor, state)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.historyRecords, prometheus.GaugeValue, float64(st.History.Kept))
	ch <- prometheus.MustNewConstMetric(c.historyBytes, prometheus.GaugeValue, float64(st.History.Bytes))
	ch <- prometheus.MustNewConstMetric(c.historyTrimmed, prometheus.CounterValue, float64(st.History.Trimmed))
}

// Package metrics exposes the KV Scheduler's activity and state as Prometheus
// metrics.
//
// A *Metrics is an api.Observer: the scheduler calls TxnDone, OpDone and
// RetryScheduled from its worker and the counters and histograms are updated
// there. The state metrics (queue, values, history) are not kept up to date
// by events: they are read from a StatsSource (the scheduler's GetStats) at
// every scrape, by a custom collector that emits only the current values, so
// a descriptor or a state whose count dropped out of the stats disappears
// from the metrics instead of staying as a stale gauge.
//
// # Wiring
//
//	m, err := metrics.New(registry, nil) // before the scheduler exists
//	if err != nil { ... }
//	// build the scheduler with m as its api.Observer, then:
//	m.SetSource(scheduler) // scrapes now see its stats
//
// Until a source is set (or after SetSource(nil)) the state metrics are
// simply absent; the event metrics work from the start.
//
// # Metrics
//
// All names are prefixed with netagent_scheduler_.
//
// From the observer events:
//
//   - transactions_total{type, resync, result} (counter): finished
//     transactions, dry runs included. type is the transaction type in
//     snake_case: nb_transaction, sb_notification,
//     retry_of_failed_operations, retry_of_unimplemented_values,
//     follow_up_requested_by_a_descriptor, drift_repair (unknown for any
//     other). resync is none, full, upstream or downstream (unknown for
//     any other). result is ok or failed.
//   - transaction_duration_seconds{type} (histogram): Stop - Start of the
//     transaction record; not observed when either time is zero or Stop is
//     before Start.
//   - transaction_queue_wait_seconds (histogram): how long the transaction
//     waited in the queue before it started.
//   - operations_total{descriptor, operation, result} (counter): descriptor
//     CRUD callbacks that returned. operation is create, update or delete (or
//     undefined, validate, unknown for other values); result is ok or error.
//   - operation_duration_seconds{descriptor, operation} (histogram): latency
//     of those callbacks.
//   - retries_scheduled_total (counter): values scheduled for a retry.
//   - drift_found_total{descriptor, kind} (counter): values that drift
//     transactions (api.KVScheduler.ReportDrift) found out of sync with
//     the SB; kind is gone or changed.
//
// Read from the StatsSource at scrape time (absent when there is no source):
//
//   - queue_length (gauge): transactions waiting in the queue.
//   - values{descriptor, state} (gauge): values per descriptor and state,
//     derived values included; state is the lower-case state name
//     (configured, pending, failed, ...). Only non-zero counts present in the
//     stats are emitted.
//   - history_records (gauge): transaction records kept in the history.
//   - history_bytes (gauge): estimated size of the kept records.
//   - history_trimmed_total (counter): records dropped by the history's
//     retention limits.
//
// The histograms share exponential buckets from 100µs to about 26s
// (0.0001 * 2^n seconds, n = 0..18).
//
// Labels carry descriptor names and fixed enumerations only, never keys or
// values, so their cardinality is bounded by the number of registered
// descriptors.
package metrics

// Package orchestrator turns the northbound sources (etcd: etcdsource, gRPC
// clients: grpcsource, an init file: filesource, an in-process client:
// localclient) into scheduler transactions.
//
// # Sources and priority
//
// Each source holds at most one value per key. The value applied is the one
// of the source with the highest priority that has the key:
//
//	local (in-process client) > gRPC > etcd > init file
//
// Deleting a key from one source falls back to the value another source
// still holds (a gRPC override removed: the etcd value comes back). A full
// resync from one source replaces only that source's keys.
//
// # Startup
//
// Nothing is committed before every registered source has delivered its
// first full state (Resync). Then one full resync transaction brings the SB
// to the merged state: values already in place are correlated with what the
// descriptors retrieve, so restarting the agent on an in-sync system executes
// no operation; nothing is deleted before the first full sync. Changes that
// arrive before are kept and included.
//
// # Failures
//
// Every transaction the sources' changes make (and the full resyncs) is
// committed with the scheduler's default retry (api.DefaultRetry), unless
// the caller's options have a retry of their own: a value whose operation
// fails in a way worth retrying (a namespace that is not there yet, a link
// the kernel is still setting up) is tried again with backoff, as when VPP
// reconnects, instead of staying FAILED until the next resync.
//
// # Transaction options
//
// Change, Resync and Plan take the caller's api.TxnOptions: its
// Description, NonBlocking and Retry apply to the transaction committed.
// The orchestrator sets Resync (a full resync for Resync) and DryRun (Plan)
// itself, and does not revert (but see "Verified changes"): a source keeps
// the values it sent whatever the transaction does, so a reverted
// transaction would leave the SB behind the sources' state until the next
// resync. Options that set
// Resync, DryRun or Revert, or that api.TxnOptions.Validate refuses, are
// refused before anything is recorded: the error is a *api.TransactionError
// whose TxnInitError is the *api.OptionError naming the field.
//
// # Plans bound to a revision
//
// Change and Resync with api.TxnOptions.ExpectedRevision (the revision a
// Plan's record says it was made against) commit even when the effective
// values do not change, so that the scheduler checks the revision: a stale
// or unknown revision refuses the transaction (a *api.RevisionError in the
// *api.TransactionError), and the source's values and notes go back to what
// they were before the call, as if it had not been made. Readers (Get,
// Value) may see the refused values while the transaction waits for its
// check. Such a change is blocking (NonBlocking is refused, see
// api.TxnOptions), and before the first full sync it is refused with
// ErrNotStarted: there is no state it could have been planned against. The
// revision says that nothing changed since the plan; it does not say that
// the change is the one planned: the caller sends the same values.
//
// # Verified changes
//
// Change with api.TxnOptions.Verify (verification after apply, which
// reverts the transaction when the SB does not hold what it applied or an
// operation fails) is the one revert the orchestrator takes: when the
// transaction reports errors (it was reverted), the source's values and
// notes go back to what they were before the call, as for a refused
// revision. A verified change is not retried (the revert is its answer);
// Resync and Plan refuse Verify (a *api.OptionError naming it).
//
// # Southbound reconnects
//
// A southbound that can go away and come back (VPP) has a SouthboundResync.
// Its connection's callback calls Request each time it connects; after the
// first full sync, each request commits a downstream resync with the
// default retry, which creates what the southbound lacks (everything after
// a restart, in dependency order): values put while it was away (FAILED,
// "not connected") are applied then. Ready reports the agent not ready
// ("VPP connected, its configuration being applied") from the request to
// the end of that resync. Requests before the first full sync are dropped
// (that sync applies everything); requests made while a resync runs are
// coalesced into one more after it.
//
// # Source health
//
// Sources tells, for each registered source, highest priority first,
// whether it delivered its first state and the state of its connection: a
// source with a connection to keep (etcd) declares it with
// RegisterConnection and reports connecting, connected, lost (since when,
// with the last error) or stopped, with the last revision it saw and how
// many times it lost the connection; the others (gRPC clients, the init
// file) are always active. Degraded gives a reason for each source that
// lost its connection or stopped: the agent is then degraded, not unready.
// It keeps serving and keeps the dataplane as it is: the lost source's
// last state stays applied (nothing is deleted because a server is away),
// the other sources' changes still apply, and when the source is back its
// full resync applies whatever changed meanwhile. Ready does not depend on
// it.
//
// # Bad values
//
// A source passes a value it could not decode as a KV with Err set: the key
// is committed as an api.UndecodableValue, so it becomes INVALID with the
// reason in its status (and a log line), and nothing else is held up. The
// next good value of the key applies normally.
//
// # Notes
//
// A source may say something about a value in KV.Note (the etcd source
// notes a value it read under a key in the original agent's form). The
// note of the effective value goes to the scheduler with it
// (api.NotedTxn) and ends the value's status details while that value is
// the effective one; a change of the note alone is committed too (it
// executes nothing). A source's Resync, or a KV without a note, replaces
// the source's notes.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// SourceID names a northbound source.
type SourceID string

// The sources, highest priority first.
const (
	SourceLocal    SourceID = "local"
	SourceGRPC     SourceID = "grpc"
	SourceEtcd     SourceID = "etcd"
	SourceInitFile SourceID = "init-file"
)

var priority = map[SourceID]int{SourceLocal: 40, SourceGRPC: 30, SourceEtcd: 20, SourceInitFile: 10}

// Priority returns the priority of a source (higher wins; unknown: 0).
func Priority(id SourceID) int { return priority[id] }

// KV is one value of a source: a model key and its value (nil: the source
// no longer has the key). Err is set, and Value nil, when the source has the
// key but its value could not be decoded. Note, with a Value, is what the
// source has to say about it (how it read it: an etcd key in the original
// agent's form); the value's status details end with it while the value is
// the effective one (api.NotedTxn).
type KV struct {
	Key   string
	Value proto.Message
	Err   error
	Note  string
}

// sourceKey is a key of one source.
type sourceKey struct {
	key string
	id  SourceID
}

// ErrNotStarted: a change bound to a plan's revision came before the first
// full sync.
var ErrNotStarted = errors.New("the agent has not made its first full sync yet: a change cannot be bound to the revision of a plan before it")

// Scheduler is what the orchestrator needs of the KV Scheduler. Notes are
// passed when its transactions are api.NotedTxn (the scheduler's are).
type Scheduler interface {
	StartNBTransaction() api.Txn
}

// Orchestrator merges the sources and commits their changes.
type Orchestrator struct {
	s   Scheduler
	log *slog.Logger

	// commitMu orders the writers (Change, Resync, Start, Plan): each holds
	// it from reading the merged state to the end of its Commit, so that
	// transactions are queued in the order of the changes they carry. mu
	// guards the state and is never held across a Commit, so that readers
	// (Ready, Get, Value, SourceValue) answer while a transaction runs or a
	// descriptor call hangs. Lock order: commitMu, then mu.
	commitMu sync.Mutex
	mu       sync.Mutex
	// values: key -> its sources' values (an *api.UndecodableValue for
	// Err).
	values map[string]sourceValues
	// notes are the notes of the values that have one (KV.Note), nil
	// while none has.
	notes map[sourceKey]string
	// valuesPeak is the most keys values held since it was built: a Go map
	// never gives back the memory of deleted entries, so compactValues
	// rebuilds it once it holds far fewer.
	valuesPeak int
	// sources registered, and those that delivered their first state.
	sources map[SourceID]bool
	synced  map[SourceID]bool
	// connectors tell the connection state of the sources that have one.
	connectors map[SourceID]Connector
	// firstNotes are the descriptions the sources gave their first Resync
	// (a source restoring a state says so); the first full resync's
	// description carries them.
	firstNotes []string
	// started: the first full resync was committed.
	started  bool
	firstSeq uint64
	// startedCh is closed when started becomes true.
	startedCh chan struct{}
	// sbResyncs are the southbounds whose resync after a reconnect makes
	// the agent not ready while it runs.
	sbResyncs []*SouthboundResync
}

// New returns an orchestrator committing to s.
func New(s Scheduler, log *slog.Logger) *Orchestrator {
	if log == nil {
		log = slog.Default()
	}
	return &Orchestrator{s: s, log: log, values: map[string]sourceValues{},
		sources: map[SourceID]bool{}, synced: map[SourceID]bool{}, connectors: map[SourceID]Connector{},
		startedCh: make(chan struct{})}
}

// Register declares a source: the first full resync waits for its first
// Resync. Register all sources before any of them delivers.
func (o *Orchestrator) Register(ids ...SourceID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		o.sources[id] = true
	}
}

// Ready tells whether the first full sync was committed and no
// southbound's resync after a reconnect runs (SouthboundResync), and
// otherwise what it waits for.
func (o *Orchestrator) Ready() (bool, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		var waiting []string
		for _, r := range o.sbResyncs {
			if why := r.notReady(); why != "" {
				waiting = append(waiting, why)
			}
		}
		return len(waiting) == 0, waiting
	}
	var waiting []string
	for id := range o.sources {
		if !o.synced[id] {
			waiting = append(waiting, "first state of source "+string(id))
		}
	}
	sort.Strings(waiting)
	if len(waiting) == 0 {
		waiting = []string{"first full resync"}
	}
	return false, waiting
}

// stored is the value a KV puts in the store.
func stored(kv KV) proto.Message {
	if kv.Err != nil {
		return &api.UndecodableValue{Reason: kv.Err.Error()}
	}
	return kv.Value
}

// effective is the value of a key: that of its highest-priority source.
func (o *Orchestrator) effective(key string) proto.Message {
	v, _ := o.effectiveNoted(key)
	return v
}

// effectiveNoted is the value of a key and its note: those of its
// highest-priority source.
func (o *Orchestrator) effectiveNoted(key string) (proto.Message, string) {
	var best proto.Message
	var bestID SourceID
	bestPrio := -1
	for _, sv := range o.values[key] {
		if p := priority[sv.id]; p > bestPrio {
			best, bestID, bestPrio = sv.value, sv.id, p
		}
	}
	if best == nil || len(o.notes) == 0 {
		return best, ""
	}
	return best, o.notes[sourceKey{key, bestID}]
}

// setValue stages a value of the merged state with its note.
func setValue(txn api.Txn, key string, v proto.Message, note string) {
	if nt, ok := txn.(api.NotedTxn); ok && note != "" && v != nil {
		nt.SetValueWithNote(key, v, note)
		return
	}
	txn.SetValue(key, v)
}

// setKV records a KV of a source: its value and its note.
func (o *Orchestrator) setKV(id SourceID, kv KV) {
	v := stored(kv)
	o.set(id, kv.Key, v)
	note := kv.Note
	if v == nil || kv.Err != nil {
		note = ""
	}
	switch {
	case note != "":
		if o.notes == nil {
			o.notes = map[sourceKey]string{}
		}
		o.notes[sourceKey{kv.Key, id}] = note
	case len(o.notes) > 0:
		delete(o.notes, sourceKey{kv.Key, id})
		if len(o.notes) == 0 {
			o.notes = nil
		}
	}
}

func (o *Orchestrator) set(id SourceID, key string, v proto.Message) {
	if v == nil {
		if len(o.notes) > 0 {
			delete(o.notes, sourceKey{key, id})
		}
		if m, ok := o.values[key]; ok {
			if m = m.without(id); len(m) == 0 {
				delete(o.values, key)
			} else {
				o.values[key] = m
			}
		}
		return
	}
	m, ok := o.values[key]
	o.values[key] = m.with(id, v)
	if !ok {
		o.valuesPeak = max(o.valuesPeak, len(o.values))
	}
}

// sourceValues are the values the sources give one key, one entry per
// source: a handful at most, so a slice (one small allocation per key)
// rather than a map (a few hundred bytes per key at 100k keys).
type sourceValues []sourceValue

type sourceValue struct {
	id    SourceID
	value proto.Message
}

// get returns the value of source id.
func (m sourceValues) get(id SourceID) (proto.Message, bool) {
	for _, sv := range m {
		if sv.id == id {
			return sv.value, true
		}
	}
	return nil, false
}

// with sets the value of source id, in place when it has one.
func (m sourceValues) with(id SourceID, v proto.Message) sourceValues {
	for i := range m {
		if m[i].id == id {
			m[i].value = v
			return m
		}
	}
	return append(m, sourceValue{id, v})
}

// without removes the value of source id, in place.
func (m sourceValues) without(id SourceID) sourceValues {
	for i := range m {
		if m[i].id == id {
			return slices.Delete(m, i, i+1)
		}
	}
	return m
}

// minPeakToRebuild is the smallest peak of values after which
// compactValues rebuilds it: below, the buckets left are not worth a copy.
const minPeakToRebuild = 1024

// compactValues rebuilds the map of values when it holds less than a
// quarter of its peak, so that the memory of deleted keys comes back after
// a bulk delete. The copy is at most a third of the keys deleted since the
// peak (amortized O(1) per delete). Called under mu after each change.
func (o *Orchestrator) compactValues() {
	if o.valuesPeak < minPeakToRebuild || len(o.values) >= o.valuesPeak/4 {
		return
	}
	values := make(map[string]sourceValues, len(o.values))
	for key, m := range o.values {
		values[key] = m
	}
	o.values, o.valuesPeak = values, len(values)
}

func (o *Orchestrator) logBad(id SourceID, kvs []KV) {
	for _, kv := range kvs {
		if kv.Err != nil {
			o.log.Warn("northbound value cannot be decoded; the key is INVALID until it is fixed", "source", id, "key", kv.Key, "error", kv.Err)
		}
	}
}

// Change applies changes of one source (a nil Value removes the source's
// value of the key) and commits the resulting changes of the effective
// values with opts, blocking like api.Txn.Commit unless opts.NonBlocking.
// Before the first full sync the changes are kept and 0, nil is returned.
func (o *Orchestrator) Change(ctx context.Context, id SourceID, kvs []KV, opts api.TxnOptions) (uint64, error) {
	opts, err := txnOptions(opts, api.NotResync, false)
	if err != nil {
		return 0, err
	}
	o.logBad(id, kvs)
	o.commitMu.Lock()
	defer o.commitMu.Unlock()
	if opts.ExpectedRevision != 0 || opts.Verify {
		keys := make([]string, len(kvs))
		for i, kv := range kvs {
			keys[i] = kv.Key
		}
		return o.commitBound(ctx, o.saveSource(id, keys), opts, func(*api.TxnOptions) (api.Txn, bool) {
			txn, _ := o.change(id, kvs)
			return txn, txn != nil
		})
	}
	txn, changed := o.change(id, kvs)
	if !changed {
		return 0, nil
	}
	return txn.Commit(ctx, opts)
}

// commitBound makes a change bound to a plan's revision, or verified after
// apply (see the package documentation): stage records it and returns its
// transaction (false before the first full sync), adjusting the options;
// when the scheduler refuses the revision, or reverts the verified change
// (any error of a value: api.TxnOptions.Verify reverts on a failure too),
// restore puts the source back, so that it does not keep what the
// southbound no longer has. Under commitMu.
func (o *Orchestrator) commitBound(ctx context.Context, restore func(), opts api.TxnOptions, stage func(*api.TxnOptions) (api.Txn, bool)) (uint64, error) {
	txn, started := stage(&opts)
	if !started {
		restore()
		return 0, &api.TransactionError{TxnInitError: ErrNotStarted}
	}
	seq, err := txn.Commit(ctx, opts)
	var re *api.RevisionError
	var te *api.TransactionError
	if errors.As(err, &re) || (opts.Verify && errors.As(err, &te) && te.TxnInitError == nil && len(te.KVErrors) > 0) {
		restore()
	}
	return seq, err
}

// saveSource returns a function that puts back the values and notes of
// source id of keys (nil keys: all the keys of the source) as they are now.
func (o *Orchestrator) saveSource(id SourceID, keys []string) (restore func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	type saved struct {
		value proto.Message
		note  string
	}
	all := keys == nil
	if all {
		for key, m := range o.values {
			if _, ok := m.get(id); ok {
				keys = append(keys, key)
			}
		}
	}
	before := make(map[string]saved, len(keys))
	for _, key := range keys {
		v, _ := o.values[key].get(id)
		before[key] = saved{v, o.notes[sourceKey{key, id}]}
	}
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if all {
			for key, m := range o.values {
				if _, ok := m.get(id); ok {
					if _, had := before[key]; !had {
						o.set(id, key, nil)
					}
				}
			}
		}
		for key, was := range before {
			o.setKV(id, KV{Key: key, Value: was.value, Note: was.note})
		}
		o.compactValues()
	}
}

// change records changes of a source and returns the transaction of the
// effective values they change (none before the first full sync).
func (o *Orchestrator) change(id SourceID, kvs []KV) (api.Txn, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	type noted struct {
		value proto.Message
		note  string
	}
	before := make(map[string]noted, len(kvs))
	keys := make([]string, 0, len(kvs)) // in the order of kvs: the scheduler sorts them faster
	for _, kv := range kvs {
		if _, seen := before[kv.Key]; !seen {
			v, note := o.effectiveNoted(kv.Key)
			before[kv.Key] = noted{v, note}
			keys = append(keys, kv.Key)
		}
		o.setKV(id, kv)
	}
	o.compactValues()
	if !o.started {
		return nil, false
	}
	txn := o.s.StartNBTransaction()
	changed := 0
	for _, key := range keys {
		old := before[key]
		now, note := o.effectiveNoted(key)
		if (old.value == nil) != (now == nil) || (now != nil && !proto.Equal(old.value, now)) || note != old.note {
			setValue(txn, key, now, note)
			changed++
		}
	}
	return txn, changed > 0
}

// Resync replaces all the values of one source with kvs. Before the first
// full sync it records the source as synced and, once all are, commits the
// first full resync; after, it commits a full resync of the merged state
// (only this source's keys change; the SB is refreshed too). The resync is
// committed with opts (the description of the resync is appended to
// opts.Description). The first full resync's description ends with the
// descriptions the sources gave their first Resync, whichever came last.
func (o *Orchestrator) Resync(ctx context.Context, id SourceID, kvs []KV, opts api.TxnOptions) (uint64, error) {
	opts, err := txnOptions(opts, api.FullResync, false)
	if err != nil {
		return 0, err
	}
	o.logBad(id, kvs)
	o.commitMu.Lock()
	defer o.commitMu.Unlock()
	if opts.ExpectedRevision != 0 {
		return o.commitBound(ctx, o.saveSource(id, nil), opts, func(opts *api.TxnOptions) (api.Txn, bool) {
			if !o.isStarted() {
				return nil, false
			}
			r, _, _ := o.resync(id, kvs, "")
			if opts.Description == "" {
				opts.Description = r.description
			} else {
				opts.Description += ": " + r.description
			}
			return r.txn, true
		})
	}
	txn, first, due := o.resync(id, kvs, opts.Description)
	if !due {
		return 0, nil
	}
	if first {
		opts.Description = "" // in the description of the first full resync
	}
	seq, err := o.commitFullResync(ctx, txn, opts)
	if first && (err == nil || isValueErrors(err)) {
		o.markStarted(seq)
	}
	return seq, err
}

// resync records the new state of a source and returns the full resync to
// commit, if one is due, and whether it is the first. Before the first
// full sync, the description the source gave its Resync is kept for the
// first full resync's.
func (o *Orchestrator) resync(id SourceID, kvs []KV, description string) (txn *fullResyncTxn, first, due bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for key, m := range o.values {
		if _, ok := m.get(id); ok {
			o.set(id, key, nil)
		}
	}
	for _, kv := range kvs {
		o.setKV(id, kv)
	}
	o.compactValues()
	o.synced[id] = true
	if !o.started && description != "" {
		o.firstNotes = append(o.firstNotes, description)
	}
	if !o.started {
		for src := range o.sources {
			if !o.synced[src] {
				return nil, false, false
			}
		}
	}
	description = fmt.Sprintf("full resync (source %s)", id)
	if !o.started {
		// The first one applies every source's state, not only the last
		// to deliver.
		ids := make([]string, 0, len(o.sources))
		for src := range o.sources {
			ids = append(ids, string(src))
		}
		sort.Strings(ids)
		description = "first full resync (sources " + strings.Join(ids, ", ") + ")"
		if len(o.firstNotes) > 0 {
			description += ": " + strings.Join(o.firstNotes, "; ")
			o.firstNotes = nil
		}
	}
	return o.fullResyncTxn(description), !o.started, true
}

// Start commits the first full resync now if no source was registered (an
// agent with nothing configured); otherwise it is done by the last source's
// first Resync.
func (o *Orchestrator) Start(ctx context.Context) error {
	o.commitMu.Lock()
	defer o.commitMu.Unlock()
	o.mu.Lock()
	if o.started || len(o.sources) > 0 {
		o.mu.Unlock()
		return nil
	}
	txn := o.fullResyncTxn("full resync (no source)")
	o.mu.Unlock()
	opts, err := txnOptions(api.TxnOptions{}, api.FullResync, false)
	if err != nil {
		return err
	}
	seq, err := o.commitFullResync(ctx, txn, opts)
	if err == nil || isValueErrors(err) {
		o.markStarted(seq)
	}
	return err
}

func (o *Orchestrator) markStarted(seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started, o.firstSeq = true, seq
	close(o.startedCh)
	o.log.Info("first full resync done", "txn", seq)
}

func (o *Orchestrator) isStarted() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.started
}

// Started is closed once the first full resync is committed.
func (o *Orchestrator) Started() <-chan struct{} { return o.startedCh }

// isValueErrors tells whether a commit error is about values (the
// transaction ran), not about the transaction itself.
func isValueErrors(err error) bool {
	var te *api.TransactionError
	return errors.As(err, &te) && te.TxnInitError == nil
}

// txnOptions returns the options of a commit of the orchestrator: the
// caller's opts with resync and dryRun set and, for a commit that applies
// something, the default retry unless opts has a retry of its own. The
// error is a *api.TransactionError as Commit returns for invalid options
// (see the package documentation).
func txnOptions(opts api.TxnOptions, resync api.ResyncType, dryRun bool) (api.TxnOptions, error) {
	var err error
	switch {
	case opts.Resync != api.NotResync:
		err = &api.OptionError{Field: "Resync", Reason: "is set by the orchestrator (a source's Resync commits a full resync)"}
	case opts.DryRun:
		err = &api.OptionError{Field: "DryRun", Reason: "is set by the orchestrator (Plan is its dry run)"}
	case opts.Revert:
		err = &api.OptionError{Field: "Revert", Reason: "is not supported by the orchestrator (the source would keep the values the revert undid)"}
	case opts.Verify && (resync != api.NotResync || dryRun):
		err = &api.OptionError{Field: "Verify", Reason: "is for a change, not a full resync or a plan"}
	default:
		opts.Resync, opts.DryRun = resync, dryRun
		// A verified change is reverted, not retried, when it fails.
		if opts.Retry == nil && !dryRun && !opts.Verify {
			opts.Retry = api.DefaultRetry()
		}
		err = opts.Validate()
	}
	if err != nil {
		return opts, &api.TransactionError{TxnInitError: err}
	}
	return opts, nil
}

// fullResyncTxn is a full resync of the merged state, staged under mu.
type fullResyncTxn struct {
	txn         api.Txn
	description string
}

func (o *Orchestrator) fullResyncTxn(why string) *fullResyncTxn {
	txn := o.s.StartNBTransaction()
	for _, key := range o.keysLocked() {
		v, note := o.effectiveNoted(key)
		setValue(txn, key, v, note)
	}
	return &fullResyncTxn{txn: txn, description: why}
}

// commitFullResync commits a staged full resync (without mu) with opts
// (from txnOptions), its description after the caller's.
func (o *Orchestrator) commitFullResync(ctx context.Context, r *fullResyncTxn, opts api.TxnOptions) (uint64, error) {
	if opts.Description == "" {
		opts.Description = r.description
	} else {
		opts.Description += ": " + r.description
	}
	return r.txn.Commit(ctx, opts)
}

func (o *Orchestrator) keysLocked() []string {
	keys := make([]string, 0, len(o.values))
	for k := range o.values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Get returns the effective desired state, sorted by key (undecodable values
// included as api.UndecodableValue).
func (o *Orchestrator) Get() []KV {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []KV
	for _, key := range o.keysLocked() {
		out = append(out, KV{Key: key, Value: o.effective(key)})
	}
	return out
}

// Values returns Value of each of keys, under one lock.
func (o *Orchestrator) Values(keys []string) []proto.Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]proto.Message, len(keys))
	for i, key := range keys {
		out[i] = o.effective(key)
	}
	return out
}

// Value returns the effective value of a key: that of its highest-priority
// source (nil: no source has the key; an api.UndecodableValue when that
// source's value could not be decoded).
func (o *Orchestrator) Value(key string) proto.Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.effective(key)
}

// SourceValues returns all the values a source holds, sorted by key, with
// their notes (a value that could not be decoded: Err set, Value nil), so
// that a caller can put the source back later with Resync (the gRPC
// source's pending confirmations do).
func (o *Orchestrator) SourceValues(id SourceID) []KV {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []KV
	for key, m := range o.values {
		v, ok := m.get(id)
		if !ok {
			continue
		}
		kv := KV{Key: key, Value: v, Note: o.notes[sourceKey{key, id}]}
		if bad, ok := v.(*api.UndecodableValue); ok {
			kv.Value, kv.Err = nil, errors.New(bad.GetReason())
		}
		out = append(out, kv)
	}
	slices.SortFunc(out, func(a, b KV) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// SourceValue returns the value a source holds for a key (nil: none).
func (o *Orchestrator) SourceValue(id SourceID, key string) proto.Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, _ := o.values[key].get(id)
	return v
}

// Plan commits a dry run of the changes of a source (of its Resync when
// resync is set) with opts: the transaction's record lists the operations
// they would execute, and nothing is applied or recorded by the
// orchestrator. A dry-run resync is an upstream one: the SB is not
// refreshed.
func (o *Orchestrator) Plan(ctx context.Context, id SourceID, kvs []KV, resync bool, opts api.TxnOptions) (uint64, error) {
	resyncType := api.NotResync
	if resync {
		resyncType = api.UpstreamResync
	}
	opts, err := txnOptions(opts, resyncType, true)
	if err != nil {
		return 0, err
	}
	o.commitMu.Lock()
	defer o.commitMu.Unlock()
	txn := o.plan(id, kvs, resync)
	return txn.Commit(ctx, opts)
}

// plan stages the transaction of a dry run: the merged state after the
// change, computed on a copy that readers never see.
func (o *Orchestrator) plan(id SourceID, kvs []KV, resync bool) api.Txn {
	o.mu.Lock()
	defer o.mu.Unlock()
	// The changes below edit the values' slices in place: the copy
	// restored after owns its own.
	saved := make(map[string]sourceValues, len(o.values))
	for key, m := range o.values {
		saved[key] = slices.Clone(m)
	}
	savedNotes := maps.Clone(o.notes)
	defer func() { o.values, o.valuesPeak, o.notes = saved, len(saved), savedNotes }()
	if resync {
		for key, m := range o.values {
			if _, ok := m.get(id); ok {
				o.set(id, key, nil)
			}
		}
	}
	touched := map[string]bool{}
	for _, kv := range kvs {
		o.setKV(id, kv)
		touched[kv.Key] = true
	}
	txn := o.s.StartNBTransaction()
	if resync {
		for _, key := range o.keysLocked() {
			v, note := o.effectiveNoted(key)
			setValue(txn, key, v, note)
		}
	} else {
		for key := range touched {
			v, note := o.effectiveNoted(key)
			setValue(txn, key, v, note)
		}
	}
	return txn
}

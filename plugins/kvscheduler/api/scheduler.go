package api

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
)

// KVScheduler is the engine seen by the northbound and the southbound.
type KVScheduler interface {
	// RegisterKVDescriptor registers descriptors. It fails for a duplicate or
	// empty name or a missing KeySelector. Values already waiting as
	// UNIMPLEMENTED for a newly registered descriptor are applied by a
	// transaction queued right away.
	RegisterKVDescriptor(descriptors ...*KVDescriptor) error

	// GetRegisteredNBKeyPrefixes returns the NBKeyPrefix of every registered
	// descriptor that has one, in registration order.
	GetRegisteredNBKeyPrefixes() []string

	// StartNBTransaction starts a new NB transaction.
	StartNBTransaction() Txn

	// TransactionBarrier returns once every transaction queued before the call
	// has finished.
	TransactionBarrier()

	// PushSBNotification reports values that changed in the SB by themselves
	// (nil Value = gone). They become OBTAINED; no CRUD is called for them, a
	// resync never deletes them, and they satisfy dependencies. The
	// notification is queued as a transaction; the call does not wait.
	PushSBNotification(notifications ...KVWithMetadata) error

	// ReportDrift says that the SB objects of values changed or disappeared
	// outside the agent (a link deleted with ip, an interface deleted
	// through VPP's API), as watchers of SB events see it. The call does
	// not wait: reports are queued as a DriftRepair transaction (reports
	// arriving while one waits join it). That transaction refreshes the
	// reported values with their descriptors' Retrieve (a derived value
	// through its base), records what it found, and repairs what is out of
	// sync: a value gone or changed is created or updated again, with what
	// depends on it; unless the scheduler reports only (Options), which
	// leaves such values MISSING with the cause in their details until a
	// resync. A report of a value that is in sync, not applied, or unknown
	// costs a refresh at most and changes nothing: watchers may report
	// every event of their objects, the agent's own changes included.
	ReportDrift(reports ...DriftReport) error

	// GetMetadataMap returns the read-only metadata map of a descriptor
	// registered WithMetadata, or nil.
	GetMetadataMap(descriptor string) MetadataMap

	// GetValueStatus returns the status of the base value with the given key
	// (a derived key gives its base) with the status of its derived values.
	GetValueStatus(key string) *BaseValueStatus

	// GetValueErrors returns the statuses in error (StatusInError) among
	// those of the base values with the given keys (a derived key gives
	// its base) and of their derived values: in the order of keys, a base
	// value before its derived values, each status once. A key of no
	// value has none. It costs one look-up per key, and a status only for
	// the values in error: for the many values of a large change.
	GetValueErrors(keys []string) []*ValueStatus

	// WatchValueStatus sends the status of every base value accepted by the
	// selector (nil: all) each time it (or one of its derived values) changes.
	// A slow receiver never blocks the scheduler: updates are coalesced per
	// key, so it always gets the latest status. Call stop to end the watch.
	WatchValueStatus(ch chan<- *BaseValueStatus, selector KeySelector) (stop func())

	// GetTransactionHistory returns the recorded transactions that started in
	// [since, until] (zero times leave that end open), oldest first.
	GetTransactionHistory(since, until time.Time) []*RecordedTxn

	// GetRecordedTransaction returns the record of one transaction, or nil
	// when it is not (or no longer) kept.
	GetRecordedTransaction(seqNum uint64) *RecordedTxn

	// CurrentRevision returns the revision of the scheduler's state: a
	// counter that every transaction which changes anything advances by
	// one (see the package kvscheduler documentation), as of the last
	// finished transaction. It is 1 at start, before any change (never 0:
	// TxnOptions.ExpectedRevision 0 is none), and starts again from 1 when
	// the agent restarts.
	CurrentRevision() uint64

	// GetHistoryInfo says which transactions the history still holds.
	GetHistoryInfo() HistoryInfo

	// GetKeyTimeline returns the revisions of a key over the kept history,
	// oldest first (nil when the history has no operation on it and the
	// graph does not hold it). It scans the kept records: O(kept operations).
	GetKeyTimeline(key string) []KeyRevision

	// GetGraphSnapshot returns the graph as it was at time t: the current
	// graph with the operations of later transactions undone. A zero t is
	// now. ErrNotInHistory (wrapped, saying where the history starts) when t
	// is before the oldest kept transaction.
	GetGraphSnapshot(t time.Time) (*GraphSnapshot, error)

	// GetGraphAsOf returns the graph as it was right after transaction seq,
	// with the keys it operated on in Changed. ErrNotInHistory (wrapped)
	// when the record is not kept.
	GetGraphAsOf(seq uint64) (*GraphSnapshot, error)

	// GetGraphNeighbours returns, for each of keys that names a value of
	// the current graph (others are left out), its node with dependencies
	// resolved as in a current snapshot, the keys of the values that depend
	// on it and those of its derived values. Unlike a snapshot it costs
	// what the values' own edges cost, not the size of the graph: for a
	// view that walks the graph from one value.
	GetGraphNeighbours(keys ...string) []GraphNeighbours

	// GetStats returns counters of values, the queue and the history.
	GetStats() SchedulerStats

	// DumpValuesByDescriptor returns the values of one descriptor in the
	// given view, sorted by key.
	DumpValuesByDescriptor(descriptor string, view View) ([]KVWithMetadata, error)

	// DumpValuesByKeyPrefix returns the values whose keys start with the
	// prefix in the given view, sorted by key.
	DumpValuesByKeyPrefix(keyPrefix string, view View) ([]KVWithMetadata, error)
}

// DriftReport is one value whose SB object changed or disappeared outside
// the agent.
type DriftReport struct {
	Key string
	// Cause says what was seen, for the record and the value's details
	// (e.g. "link deleted in namespace app").
	Cause string
}

// Txn is a transaction being prepared.
type Txn interface {
	// SetValue stages a change: a non-nil value creates or updates the key,
	// nil deletes it. A later SetValue of the same key replaces the earlier.
	SetValue(key string, value proto.Message) Txn

	// Commit queues the transaction. Unless opts.NonBlocking, it waits
	// until the transaction has been executed and returns its sequence
	// number and an error: *TransactionError listing every value the
	// transaction touched that failed or is invalid (derived and
	// dependency-triggered values included), or *TransactionError with
	// the *OptionError of invalid options (nothing queued),
	// ErrTxnQueueFull, ErrClosed, ctx.Err(). A blocking Commit that gives
	// up (ctx done) before the transaction starts takes it out of the
	// queue. Commit refuses the context of a descriptor callback
	// (ErrCommitInCallback): a callback asks for follow-up work with
	// RequestReconcile instead.
	Commit(ctx context.Context, opts TxnOptions) (seqNum uint64, err error)
}

// NotedTxn is a Txn that takes a note with a value; the scheduler's
// transactions implement it (check with a type assertion). A note is what
// the northbound has to say about a value that its status should show: how
// it was read (an etcd key in the original agent's form), say.
type NotedTxn interface {
	Txn
	// SetValueWithNote is SetValue with a note: once an NB transaction
	// that carries it is applied (not a dry run, not reverted), the
	// key's ValueStatus.Details end with the note, for as long as the NB
	// value is there. The next NB change of the key replaces it: a
	// SetValue without a note or a delete clears it, and a full or
	// upstream resync keeps only the notes it carries. An empty note, or
	// a nil value, is SetValue. A change of the note alone (the same
	// value) executes nothing; watchers get the status with the new note.
	SetValueWithNote(key string, value proto.Message, note string) Txn
}

// View selects which state of values a dump shows.
type View int

const (
	// NBView shows the values the northbound requested (intended state).
	NBView View = iota
	// SBView asks the descriptors' Retrieve now (actual state). Callbacks
	// are never concurrent: the dump's Retrieves wait for a descriptor call
	// of the running transaction to return, and its next call waits for
	// them (so a callback must never ask for an SB-view dump).
	SBView
	// CachedView shows the SB as the scheduler knows it (the graph).
	CachedView
)

func (v View) String() string {
	switch v {
	case NBView:
		return "NB"
	case SBView:
		return "SB"
	case CachedView:
		return "cached"
	default:
		return "unknown"
	}
}

// ParseView parses "NB", "SB" or "cached" (any case; "internal" is accepted
// for cached, as in the original agent).
func ParseView(s string) (View, bool) {
	switch lower(s) {
	case "nb":
		return NBView, true
	case "sb":
		return SBView, true
	case "cached", "internal":
		return CachedView, true
	}
	return 0, false
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

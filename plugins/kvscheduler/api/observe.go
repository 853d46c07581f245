package api

import (
	"errors"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
)

// Observability: what the scheduler did and what the graph looked like,
// from the transaction history. Timelines and snapshots are computed from
// the kept transaction records, so they cost nothing while transactions run
// and are bounded by the history's retention (count, bytes, age).

// HistoryInfo says which transactions the history still holds.
type HistoryInfo struct {
	// OldestSeq and OldestStart are those of the oldest kept record; zero
	// when none is kept.
	OldestSeq   uint64
	OldestStart time.Time
	// NewestSeq is the sequence number of the newest kept record.
	NewestSeq uint64
	// Trimmed counts the records dropped by the retention limits.
	Trimmed uint64
	// Kept is the number of kept records, Bytes their estimated size.
	Kept, Bytes int
	// Limits of the retention.
	MaxCount int
	MaxBytes int
	MaxAge   time.Duration
}

// Starts returns "history starts at #N (time)" or "history is empty".
func (h HistoryInfo) Starts() string {
	if h.OldestSeq == 0 && h.Kept == 0 {
		return "history is empty"
	}
	return "history starts at #" + strconv.FormatUint(h.OldestSeq, 10) + " (" + h.OldestStart.UTC().Format(time.RFC3339Nano) + ")"
}

// ErrNotInHistory is returned for a transaction or a time the history does
// not (or no longer) cover; the error text says where the history starts.
var ErrNotInHistory = errors.New("not in the transaction history")

// KeyRevision is one revision of a value: what one operation of a
// transaction left (or, for the first revision, what the value was before
// the oldest kept operation on it).
type KeyRevision struct {
	// TxnSeq is the transaction of the operation; 0 for a revision older
	// than the kept history.
	TxnSeq uint64
	// Since is when the revision began (the end of its transaction; zero
	// when older than the history); Until when the next one began (zero for
	// the current revision).
	Since, Until time.Time
	Operation    TxnOperation
	Value        proto.Message
	State        ValueState
	Error        string
	Descriptor   string
	// Flags of the operation: DERIVED, PROPERTY, NOOP, REVERT, RETRY,
	// RECREATE, WAS-PENDING, IS-PENDING, FIXED.
	Flags []string
	// Dependencies of the value of this revision, as its descriptor states
	// them.
	Dependencies []DependencyInfo
}

// DependencyInfo is one dependency of a value.
type DependencyInfo struct {
	Label string
	// Key, or the key prefixes of an AnyOf dependency (none: any key
	// accepted by its selector).
	Key           string   `json:",omitempty"`
	AnyOfPrefixes []string `json:",omitempty"`
	// Exclusive is the resource of an Exclusive dependency; its Targets
	// are the value holding it (unsatisfied while one does).
	Exclusive string `json:",omitempty"`
	// Targets are the keys that satisfy the dependency (in snapshots; in
	// timelines, the Key).
	Targets []string `json:",omitempty"`
	// Satisfied: the dependency was met (snapshots).
	Satisfied bool
}

// GraphSnapshot is the graph of values at one point of the history.
type GraphSnapshot struct {
	// TxnSeq is the last transaction included (0: before any kept one),
	// Time the moment the snapshot shows.
	TxnSeq uint64
	Time   time.Time
	// Current: the live graph, not a reconstruction.
	Current bool
	// Nodes sorted by key.
	Nodes []GraphNode
	// Changed are the keys the transaction TxnSeq operated on (as-of
	// snapshots), to be highlighted.
	Changed []string `json:",omitempty"`
	// Note says what the snapshot cannot show, e.g. the state of values
	// that changed without an operation (RETRYING) between records.
	Note string `json:",omitempty"`
}

// GraphNode is one value of a snapshot.
type GraphNode struct {
	Key        string
	Descriptor string `json:",omitempty"`
	Value      proto.Message
	State      ValueState
	LastOp     TxnOperation
	Error      string `json:",omitempty"`
	// Base is the key of the value this one is derived from ("" for a base
	// value or when unknown).
	Base     string `json:",omitempty"`
	Derived  bool   `json:",omitempty"`
	Obtained bool   `json:",omitempty"`
	// Dependencies with their targets in the snapshot.
	Dependencies []DependencyInfo `json:",omitempty"`
}

// GraphNeighbours is one value of the current graph and the values next to
// it (GetGraphNeighbours).
type GraphNeighbours struct {
	// Node has its dependencies resolved as in a current snapshot.
	Node GraphNode
	// Dependents are the keys of the values with a dependency that this
	// value satisfies, or would satisfy if it were available (a Key
	// dependency on it, an AnyOf one that accepts it, an Exclusive one on
	// a resource it holds), sorted. INVALID values are not among them:
	// their dependencies are not in force until they are fixed (a
	// snapshot still resolves them, and so does Node of an INVALID value).
	Dependents []string
	// Derived are the keys of its derived values, in the order its
	// descriptor derives them.
	Derived []string
}

// The groups of SchedulerStats.ValuesByDescriptor that are not descriptors.
const (
	StatsProperties   = "(properties)"
	StatsNoDescriptor = "(no descriptor)"
)

// SchedulerStats are counters of the scheduler's state.
type SchedulerStats struct {
	// ValuesByState counts values by state name, ValuesByDescriptor by
	// descriptor then state name (derived values included; properties, the
	// derived values without a descriptor, under StatsProperties, and values
	// no descriptor claims under StatsNoDescriptor).
	ValuesByState      map[string]int
	ValuesByDescriptor map[string]map[string]int
	// QueueLength is the number of transactions waiting.
	QueueLength int
	// Transactions processed since start, by type name.
	Transactions map[string]uint64
	History      HistoryInfo
	// Revision is the revision of the state the counts are of
	// (KVScheduler.CurrentRevision).
	Revision uint64
}

// Observer receives events for metrics. Its methods are called by the
// scheduler's worker, with no lock held; they must be fast and must not
// call the scheduler.
type Observer interface {
	// TxnDone: a transaction finished after waiting `wait` in the queue;
	// failed tells whether it returned errors.
	TxnDone(rec *RecordedTxn, wait time.Duration, failed bool)
	// OpDone: a descriptor CRUD callback returned (not called in dry runs
	// or for NOOP operations).
	OpDone(descriptor string, op TxnOperation, err error, latency time.Duration)
	// RetryScheduled: n values of a transaction will be retried.
	RetryScheduled(n int)
}

// DriftObserver is an Observer that is also told of every value a
// DriftRepair transaction found out of sync with the SB: kind is "gone" or
// "changed". (An Observer that does not implement it is not told.)
type DriftObserver interface {
	DriftFound(descriptor, kind string)
}

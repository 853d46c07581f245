package api

import (
	"fmt"
	"time"
)

// ResyncType says which states a resync transaction reconciles.
type ResyncType int

const (
	// NotResync: an ordinary transaction that changes the listed keys only.
	NotResync ResyncType = iota
	// FullResync: the transaction holds the whole NB state. The SB is
	// refreshed with Retrieve, then created/updated/deleted so that it equals
	// the transaction's values; NB keys not in the transaction are removed.
	FullResync
	// UpstreamResync: like FullResync, but the SB is not refreshed; the
	// scheduler's view of it is trusted.
	UpstreamResync
	// DownstreamResync: the transaction carries no values. The SB is
	// refreshed and the last NB values are applied again (drift repair).
	DownstreamResync
)

func (t ResyncType) String() string {
	switch t {
	case FullResync:
		return "full resync"
	case UpstreamResync:
		return "upstream resync"
	case DownstreamResync:
		return "downstream resync"
	default:
		return "not resync"
	}
}

// RetryOpt says how failed operations are retried.
type RetryOpt struct {
	// Period before the first retry; must be positive.
	Period time.Duration
	// MaxCount retries at most (at least 1); after the last one fails the
	// value is FAILED.
	MaxCount int
	// ExpBackoff doubles the period after each retry.
	ExpBackoff bool
}

// Default retry settings (DefaultRetry).
const (
	DefaultRetryPeriod   = time.Second
	DefaultRetryMaxCount = 3
)

// DefaultRetry returns retry options of a 1 s period, 3 retries and
// exponential backoff.
func DefaultRetry() *RetryOpt {
	return &RetryOpt{Period: DefaultRetryPeriod, MaxCount: DefaultRetryMaxCount, ExpBackoff: true}
}

// TxnOptions say how Commit runs a transaction. The zero value is an
// ordinary blocking transaction: best effort (a failure does not stop the
// others), no retry.
type TxnOptions struct {
	// Resync makes the transaction a resync of the given type.
	Resync ResyncType
	// Verbose logs the graph after the refresh of a resync (Resync set).
	Verbose bool
	// Retry lets the scheduler retry the retriable failures of a
	// best-effort transaction: after Retry.Period, up to Retry.MaxCount
	// times, doubling the period each time with Retry.ExpBackoff. A retry
	// is dropped for a key changed in the meantime. The options belong to
	// the values the transaction sets or removes (and their derived
	// values): a failure of such a value is retried with them whichever
	// transaction runs the operation (an SB notification that lets a
	// PENDING value be created, a transaction creating its dependency),
	// and a value set without retry is not retried. Nil: no retry.
	Retry *RetryOpt
	// Revert makes the transaction all-or-nothing: on the first failure
	// the failed value is refreshed, everything already done is undone in
	// reverse order, and Commit returns the error. Not with Resync or
	// Retry.
	Revert bool
	// Verify reads the values the transaction changed back from the SB
	// after it and reverts the whole transaction when the SB does not hold
	// one of them as applied (see "Verification after apply" in the
	// package doc), whatever the scheduler's Options.Verify. It makes the
	// transaction all-or-nothing as Revert does (it implies Revert: an
	// operation that fails reverts it too). Not with Resync or Retry.
	Verify bool
	// Description is put in the transaction record and log.
	Description string
	// DryRun computes and records the plan without executing anything: no
	// descriptor is called and the graph is left as it was. The plan is in
	// the transaction record (GetRecordedTransaction), which is kept apart
	// from the transaction history (GetTransactionHistory does not list
	// it; the scheduler keeps the latest few), so that plans do not push
	// transactions out of the history. A dry-run resync whose refresh
	// found the SB changed is recorded in the history: it changed the state.
	DryRun bool
	// NonBlocking makes Commit return as soon as the transaction is
	// queued, with its sequence number (api.ErrTxnQueueFull when the queue
	// is full).
	NonBlocking bool
	// ExpectedRevision, when not 0, is the revision (see
	// KVScheduler.CurrentRevision) the transaction was planned against: a
	// plan of the same changes, with DryRun, records it as its
	// RecordedTxn.Revision. The scheduler checks it when the transaction
	// is taken from the queue, on its worker, so that no other transaction
	// runs between the check and the transaction: when the revision is no
	// longer ExpectedRevision, nothing is applied and Commit returns a
	// *TransactionError whose TxnInitError is a *RevisionError
	// (errors.Is ErrStaleRevision, or ErrFutureRevision for a revision the
	// scheduler has not reached). Needs a blocking Commit: the refusal is
	// its result.
	ExpectedRevision uint64
}

// OptionError is an invalid field of TxnOptions.
type OptionError struct {
	// Field is the field's path, e.g. "Retry.Period".
	Field  string
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("transaction options: %s %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrRevertNotSupportedWithResync) hold for the
// refusal of Revert with Resync.
func (e *OptionError) Is(target error) bool {
	return target == ErrRevertNotSupportedWithResync && e.Field == "Revert" && e.Reason == reasonRevertResync
}

const reasonRevertResync = "is not allowed with Resync (a resync cannot be undone)"

// Validate checks the options; the error (*OptionError) names the first
// invalid field.
func (o TxnOptions) Validate() error {
	bad := func(field, reason string) error { return &OptionError{Field: field, Reason: reason} }
	switch o.Resync {
	case NotResync, FullResync, UpstreamResync, DownstreamResync:
	default:
		return bad("Resync", fmt.Sprintf("is %d, not a ResyncType", int(o.Resync)))
	}
	if o.Verbose && o.Resync == NotResync {
		return bad("Verbose", "is set without Resync (it logs the graph after a resync's refresh)")
	}
	if o.Retry != nil {
		if o.Retry.Period <= 0 {
			return bad("Retry.Period", fmt.Sprintf("is %v; it must be positive", o.Retry.Period))
		}
		if o.Retry.MaxCount < 1 {
			return bad("Retry.MaxCount", fmt.Sprintf("is %d; it must be at least 1 (nil Retry: no retry)", o.Retry.MaxCount))
		}
	}
	if o.ExpectedRevision != 0 && o.NonBlocking {
		return bad("ExpectedRevision", "is not allowed with NonBlocking (a refusal of a stale revision is the result of a blocking Commit)")
	}
	if o.Verify {
		if o.Resync != NotResync {
			return bad("Verify", "is not allowed with Resync (a resync cannot be reverted)")
		}
		if o.Retry != nil {
			return bad("Verify", "is not allowed with Retry (a reverted transaction leaves nothing to retry)")
		}
	}
	if o.Revert {
		if o.Resync != NotResync {
			return bad("Revert", reasonRevertResync)
		}
		if o.Retry != nil {
			return bad("Revert", "is not allowed with Retry (a reverted transaction leaves nothing to retry)")
		}
	}
	return nil
}

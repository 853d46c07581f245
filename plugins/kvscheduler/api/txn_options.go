package api

import (
	"context"
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

type ctxKey int

const (
	resyncKey ctxKey = iota
	retryKey
	revertKey
	descriptionKey
	simulationKey
	dryRunKey
	nonBlockingKey
)

// ResyncOpt is the resync option of a transaction.
type ResyncOpt struct {
	Type ResyncType
	// Verbose logs the graph after the refresh.
	Verbose bool
}

// WithResync makes the transaction a resync of the given type.
func WithResync(ctx context.Context, resyncType ResyncType, verbose bool) context.Context {
	return context.WithValue(ctx, resyncKey, &ResyncOpt{Type: resyncType, Verbose: verbose})
}

// IsWithResync returns the resync option of the context, if any.
func IsWithResync(ctx context.Context) (*ResyncOpt, bool) {
	opt, ok := ctx.Value(resyncKey).(*ResyncOpt)
	return opt, ok && opt.Type != NotResync
}

// RetryOpt says how failed operations are retried.
type RetryOpt struct {
	// Period before the first retry.
	Period time.Duration
	// MaxCount retries at most; after the last one fails the value is FAILED.
	MaxCount int
	// ExpBackoff doubles the period after each retry.
	ExpBackoff bool
}

// Default retry settings used by WithRetryDefault.
const (
	DefaultRetryPeriod   = time.Second
	DefaultRetryMaxCount = 3
)

// WithRetry lets the scheduler retry the retriable failures of a best-effort
// transaction: after period, up to maxCount times, doubling the period each
// time with expBackoff. A retry is dropped for a key changed in the meantime.
// The options belong to the values the transaction sets or removes (and
// their derived values): a failure of such a value is retried with them
// whichever transaction runs the operation (an SB notification that lets a
// PENDING value be created, a transaction creating its dependency), and a
// value set without retry is not retried.
func WithRetry(ctx context.Context, period time.Duration, maxCount int, expBackoff bool) context.Context {
	return context.WithValue(ctx, retryKey, &RetryOpt{Period: period, MaxCount: maxCount, ExpBackoff: expBackoff})
}

// WithRetryDefault is WithRetry with a 1 s period, 3 retries and exponential
// backoff.
func WithRetryDefault(ctx context.Context) context.Context {
	return WithRetry(ctx, DefaultRetryPeriod, DefaultRetryMaxCount, true)
}

// IsWithRetry returns the retry option of the context, if any.
func IsWithRetry(ctx context.Context) (*RetryOpt, bool) {
	opt, ok := ctx.Value(retryKey).(*RetryOpt)
	return opt, ok
}

// WithRevert makes the transaction all-or-nothing: on the first failure the
// failed value is refreshed, everything already done is undone in reverse
// order, and Commit returns the error. Not allowed with resync.
func WithRevert(ctx context.Context) context.Context {
	return context.WithValue(ctx, revertKey, true)
}

// IsWithRevert tells whether the context asks for revert on failure.
func IsWithRevert(ctx context.Context) bool {
	v, _ := ctx.Value(revertKey).(bool)
	return v
}

// WithDescription attaches a human description to the transaction record.
func WithDescription(ctx context.Context, description string) context.Context {
	return context.WithValue(ctx, descriptionKey, description)
}

// IsWithDescription returns the description of the context, if any.
func IsWithDescription(ctx context.Context) (string, bool) {
	d, ok := ctx.Value(descriptionKey).(string)
	return d, ok
}

// WithSimulation asks for the transaction to be simulated before it is
// executed. The scheduler always simulates (the plan is logged and recorded
// before execution), so this option is accepted for compatibility with
// descriptors and clients written for the original agent and changes nothing.
// For a plan without execution use WithDryRun.
func WithSimulation(ctx context.Context) context.Context {
	return context.WithValue(ctx, simulationKey, true)
}

// IsWithSimulation tells whether the context carries WithSimulation.
func IsWithSimulation(ctx context.Context) bool {
	v, _ := ctx.Value(simulationKey).(bool)
	return v
}

// WithDryRun makes the transaction compute and record its plan without
// executing anything: no descriptor is called and the graph is left as it
// was. The plan is in the transaction record (GetRecordedTransaction).
func WithDryRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, dryRunKey, true)
}

// IsWithDryRun tells whether the context carries WithDryRun.
func IsWithDryRun(ctx context.Context) bool {
	v, _ := ctx.Value(dryRunKey).(bool)
	return v
}

// WithoutBlocking makes Commit return as soon as the transaction is queued.
func WithoutBlocking(ctx context.Context) context.Context {
	return context.WithValue(ctx, nonBlockingKey, true)
}

// IsNonBlockingTxn tells whether the context carries WithoutBlocking.
func IsNonBlockingTxn(ctx context.Context) bool {
	v, _ := ctx.Value(nonBlockingKey).(bool)
	return v
}

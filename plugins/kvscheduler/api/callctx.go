package api

import (
	"context"
	"errors"
)

// ReadView is what a descriptor callback may read of the scheduler running
// it: statuses and metadata maps. Statuses are those of the running
// transaction so far (its plan up to the call: a value it deleted before the
// call is gone already, one it creates later is not yet CONFIGURED).
type ReadView interface {
	// GetValueStatus is KVScheduler.GetValueStatus as the running
	// transaction has it so far.
	GetValueStatus(key string) *BaseValueStatus
	// GetMetadataMap is KVScheduler.GetMetadataMap.
	GetMetadataMap(descriptor string) MetadataMap
}

// CallScope is what the scheduler gives the contexts of the Create, Update,
// Delete and Retrieve callbacks it runs (WithCallScope). Descriptors use it
// through ViewOf and RequestReconcile.
type CallScope interface {
	ReadView
	// RequestReconcile records keys to reconcile again after the running
	// transaction (see the package function).
	RequestReconcile(keys ...string)
}

type callScopeKey struct{}

// WithCallScope returns ctx carrying the scope of a callback. The scheduler
// does it for every callback; a test calling a callback directly may too.
func WithCallScope(ctx context.Context, scope CallScope) context.Context {
	return context.WithValue(ctx, callScopeKey{}, scope)
}

func scopeOf(ctx context.Context) CallScope {
	if ctx == nil {
		return nil
	}
	s, _ := ctx.Value(callScopeKey{}).(CallScope)
	return s
}

// InCallback tells whether ctx is (derived from) the context of a descriptor
// callback run by a scheduler.
func InCallback(ctx context.Context) bool { return scopeOf(ctx) != nil }

// ViewOf returns the read-only view of the scheduler running the callback
// whose context is ctx. Outside a callback (a test calling the callback
// directly with context.Background()) it is an empty view: no value
// exists, no metadata map is registered.
func ViewOf(ctx context.Context) ReadView {
	if s := scopeOf(ctx); s != nil {
		return s
	}
	return emptyView{}
}

type emptyView struct{}

func (emptyView) GetValueStatus(key string) *BaseValueStatus {
	return &BaseValueStatus{Value: &ValueStatus{Key: key, State: ValueStateNonexistent}}
}
func (emptyView) GetMetadataMap(string) MetadataMap { return nil }

// ErrNotInCallback is returned by RequestReconcile outside a callback.
var ErrNotInCallback = errors.New("not called with the context of a descriptor callback")

// RequestReconcile is how a Create, Update, Delete or Retrieve asks for
// follow-up work: after the running transaction, the scheduler reconciles
// the given keys again in a transaction of its own (TxnType FollowUp): a
// base value is refreshed when its descriptor can Retrieve, then created,
// updated, deleted or left alone as its intent and dependencies say; a
// FAILED value is tried again. Keys the graph does not hold are ignored.
// It is the only way a callback changes what the scheduler does next: a
// callback never commits a transaction (Commit refuses a callback's context
// with ErrCommitInCallback) and never waits for the scheduler.
func RequestReconcile(ctx context.Context, keys ...string) error {
	s := scopeOf(ctx)
	if s == nil {
		return ErrNotInCallback
	}
	if len(keys) > 0 {
		s.RequestReconcile(keys...)
	}
	return nil
}

// Memo is what the Retrieves of one refresh share (RefreshMemo).
type Memo interface {
	// Load returns what a Retrieve of the same refresh stored under key.
	Load(key string) (value any, ok bool)
	// Store keeps value under key for the rest of the refresh.
	Store(key string, value any)
}

type memoKey struct{}

// WithRefreshMemo returns ctx carrying the memo of a refresh. The
// scheduler does it for the Retrieves of each refresh; a test calling
// Retrieve directly may too.
func WithRefreshMemo(ctx context.Context, m Memo) context.Context {
	return context.WithValue(ctx, memoKey{}, m)
}

// RefreshMemo returns the memo that the Retrieves of one refresh share: a
// resync's (every descriptor's Retrieve, in RetrieveDependencies order),
// a drift transaction's, that of the refresh after failed operations, or
// of one SB-view dump. What one Retrieve stores, the next ones of the same
// refresh load: an SB dump that several descriptors need (every VPP
// interface with its addresses) is made once per refresh, and all of
// them see the SB at the same moment. The agent changes nothing in the SB
// between the Retrieves of one refresh; a value stored is not to be
// modified by those that load it. Outside a refresh (a Create, a single
// Retrieve of a revert) it is a memo that keeps nothing, so a Retrieve
// always works without one.
func RefreshMemo(ctx context.Context) Memo {
	if m, ok := ctx.Value(memoKey{}).(Memo); ok && m != nil {
		return m
	}
	return noMemo{}
}

type noMemo struct{}

func (noMemo) Load(string) (any, bool) { return nil, false }
func (noMemo) Store(string, any)       {}

// MapMemo is a Memo in a map, for one refresh (not safe for concurrent
// use: a refresh's Retrieves run one at a time).
type MapMemo map[string]any

// Load implements Memo.
func (m MapMemo) Load(key string) (any, bool) {
	v, ok := m[key]
	return v, ok
}

// Store implements Memo.
func (m MapMemo) Store(key string, value any) { m[key] = value }

package kvscheduler

// Retries of failed operations and the retry policies of values.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// retryKey is a failed key waiting for a retry, at the revision that failed.
type retryKey struct {
	key      string
	revision uint64
	ticket   *retryTicket
}

// retryTicket identifies one scheduled retry of a value; a newer operation
// on the value replaces or clears it, which cancels the retry for that key.
type retryTicket struct {
	attempt int
}

func isRetriable(n *node, err error) bool {
	if err == nil {
		return false
	}
	var nr *api.NonRetriableError
	var inv *api.InvalidValueError
	if errors.As(err, &nr) || errors.As(err, &inv) {
		return false
	}
	if n.desc != nil && n.desc.d.IsRetriableFailure != nil {
		ok, perr := pure(func() bool { return n.desc.d.IsRetriableFailure(err) })
		return perr == nil && ok
	}
	return true
}

// Retry policies of values (node.retryPolicy): the retry options belong to
// the value, given by the NB transaction that last set (or removed) it, not
// to whichever transaction executes it (an SB notification that lets a
// PENDING value be created, a transaction that creates a dependency). Distinct
// options are interned; a node holds one byte.
const (
	// retryPolicyUnset: no NB transaction set the value (a value found by a
	// resync, an OBTAINED one): the options of the transaction that runs
	// the failed operation apply.
	retryPolicyUnset uint8 = iota
	// retryPolicyNone: set by an NB transaction without retry.
	retryPolicyNone
	// retryPolicyFirst is the policy of Scheduler.retryPolicies[0].
	retryPolicyFirst
)

// retryPolicy returns the policy of the retry options of an NB transaction,
// interning them. When all 254 slots are taken by other options, it returns
// retryPolicyUnset: the values of the transaction then follow the options of
// whichever transaction runs them.
func (s *Scheduler) retryPolicy(opt *api.RetryOpt) uint8 {
	if opt == nil {
		return retryPolicyNone
	}
	for i, p := range s.retryPolicies {
		if p == *opt {
			return retryPolicyFirst + uint8(i)
		}
	}
	if len(s.retryPolicies) >= 256-int(retryPolicyFirst) {
		return retryPolicyUnset
	}
	s.retryPolicies = append(s.retryPolicies, *opt)
	return retryPolicyFirst + uint8(len(s.retryPolicies)-1)
}

// retryOptOf returns the retry options of a failed value: those of its base
// value's policy, or the running transaction's (running) when unset.
func (s *Scheduler) retryOptOf(n *node, running *api.RetryOpt) *api.RetryOpt {
	for n.base != nil {
		n = n.base
	}
	switch p := n.retryPolicy; p {
	case retryPolicyUnset:
		return running
	case retryPolicyNone:
		return nil
	default:
		return &s.retryPolicies[p-retryPolicyFirst]
	}
}

// scheduleRetries turns the retriable failures of a transaction into
// RETRYING values and queues their retry after the period of each value's
// retry options (one retry transaction per distinct options).
func (s *Scheduler) scheduleRetries(r *txnRun, qt *queuedTxn) {
	var groups []retryGroup
	for _, n := range r.failed {
		if n.state != api.ValueStateFailed || !n.inGraph {
			continue
		}
		opt := s.retryOptOf(n, qt.retryOpt)
		if opt == nil || qt.attempt >= opt.MaxCount || !isRetriable(n, n.err) {
			continue
		}
		t := &retryTicket{attempt: qt.attempt + 1}
		s.g.setRetry(n, t)
		r.setStatus(n, api.ValueStateRetrying, n.lastOp, n.err, nil)
		i := slices.IndexFunc(groups, func(g retryGroup) bool { return *g.opt == *opt })
		if i < 0 {
			groups = append(groups, retryGroup{opt: opt})
			i = len(groups) - 1
		}
		groups[i].keys = append(groups[i].keys, retryKey{key: n.key, revision: n.revision, ticket: t})
	}
	for _, g := range groups {
		s.scheduleRetry(g.opt, g.keys, qt.attempt)
	}
}

// retryGroup are failed keys retried with the same options.
type retryGroup struct {
	opt  *api.RetryOpt
	keys []retryKey
}

// scheduleRetry queues the retry of keys after the period of opt.
func (s *Scheduler) scheduleRetry(opt *api.RetryOpt, keys []retryKey, attempt int) {
	if s.opts.Observer != nil {
		s.opts.Observer.RetryScheduled(len(keys))
	}
	period := opt.Period
	if opt.ExpBackoff {
		for i := 0; i < attempt; i++ {
			period *= 2
		}
	}
	next := &queuedTxn{typ: api.RetryFailedOps, retryKeys: keys, attempt: attempt + 1, retryOpt: opt,
		description: fmt.Sprintf("retry #%d of transaction failures", attempt+1)}
	ticket := keys[0].ticket
	s.retryMu.Lock()
	defer s.retryMu.Unlock()
	s.retryTimers[ticket] = s.clock.AfterFunc(period, func() {
		s.retryMu.Lock()
		_, live := s.retryTimers[ticket]
		delete(s.retryTimers, ticket)
		s.retryMu.Unlock()
		if live {
			_, _ = s.enqueue(next, false)
		}
	})
}

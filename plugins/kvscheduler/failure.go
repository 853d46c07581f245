package kvscheduler

// After a failed operation: the refresh of the values it affected.

import (
	"fmt"
	"slices"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// refreshFailed asks the SB what failed operations left behind, for the
// failed keys only, and completes values that turn out to be in place.
func (r *txnRun) refreshFailed() {
	// In rounds: completing a value may create others, which may fail too.
	// A value is refreshed once per transaction: one that fails again when
	// it is completed (a half-made object that the next attempt breaks
	// again, as a veth pair whose MAC the kernel refuses) waits for its
	// retry, so that the transaction ends.
	var refreshed map[*node]bool
	var again []*node
	for done := 0; done < len(r.failed); {
		var batch []*node
		for _, n := range r.failed[done:] {
			if refreshed == nil {
				refreshed = map[*node]bool{}
			}
			if !refreshed[n] {
				refreshed[n] = true
				batch = append(batch, n)
			} else {
				again = append(again, n)
			}
		}
		done = len(r.failed)
		if len(batch) > 0 {
			r.refreshFailedBatch(batch)
		}
	}
	// A Create that failed again after its value's refresh (completed,
	// deleted as a member of a cycle, created again) may have left
	// something in the SB that no refresh saw: it is taken as possibly
	// there, so that the value is deleted if it must not be in the SB
	// (its retry finds its dependency gone), as after a refresh that
	// failed.
	for _, n := range again {
		if n.state == api.ValueStateFailed || n.state == api.ValueStateRetrying {
			if n.applied == nil && n.lastOp == api.OpCreate && n.intended != nil && n.leftoverValue() == nil {
				r.g.setLeftover(n, n.intended)
			}
		}
	}
}

// refreshFailedBatch refreshes the values affected by the failures of a batch
// of failed values (seed 001: refresh "after a failed C(R)UD operation(s),
// but only for vertices affected by the failure"): a failed base value
// itself; for a failed derived value its base (an operation on a derived
// value may change its base in the SB, as an address refused by VPP may
// leave the interface changed) and the derived value itself when its own
// descriptor retrieves it (retrievedOnItsOwn).
func (r *txnRun) refreshFailedBatch(failed []*node) {
	defer r.s.refreshRound()()
	byDesc := map[*descriptorInfo][]*node{}
	var order []*descriptorInfo
	add := func(n *node) {
		if n.desc == nil || n.desc.d.Retrieve == nil || !n.inGraph || slices.Contains(byDesc[n.desc], n) {
			return
		}
		if _, ok := byDesc[n.desc]; !ok {
			order = append(order, n.desc)
		}
		byDesc[n.desc] = append(byDesc[n.desc], n)
	}
	for _, n := range failed {
		if n.base == nil {
			add(n)
			continue
		}
		root := n.base
		for root.base != nil {
			root = root.base
		}
		if !root.obtained {
			add(root)
		}
		if retrievedOnItsOwn(n, n.base) {
			add(n)
		}
	}
	for _, di := range order {
		nodes := byDesc[di]
		kvs, err := r.s.retrieve(di, correlateOf(nodes))
		if err != nil {
			r.errs = append(r.errs, api.KeyWithError{Error: fmt.Errorf("refresh after failure: %w", err)})
			for _, n := range nodes {
				if n.applied == nil && n.lastOp == api.OpCreate {
					r.g.setLeftover(n, n.intended)
					if !r.revert && (n.intended == nil || n.invalidErr() != nil || !r.g.depsMet(n)) {
						r.reconcile(n) // must not be in the SB: delete what may be there
					}
				}
			}
			continue
		}
		found := make(map[string]api.KVWithMetadata, len(nodes))
		for _, kv := range kvs {
			found[kv.Key] = kv
		}
		// First the whole batch takes what the SB holds, then the values
		// are completed: completing one may delete or create others of the
		// batch, whose retrieved state is then out of date.
		var gone, baseGone []*node
		for _, n := range nodes {
			kv, ok := found[n.key]
			switch {
			case ok && kv.Value != nil:
				if n.leftoverValue() != nil {
					r.g.setLeftover(n, nil)
				}
				if n.applied == nil || !sameValue(n.applied, kv.Value) {
					r.g.setApplied(n, kv.Value)
				}
				if di.d.WithMetadata && kv.Metadata != nil && n.base == nil {
					r.g.setMetadata(n, kv.Metadata, true)
				}
			case n.applied != nil && n.state != api.ValueStateFailed:
				// A base affected by the failure of a derived value, gone
				// from the SB: see baseGone.
				r.g.setApplied(n, nil)
				if n.metadata != nil {
					r.g.setMetadata(n, nil, true)
				}
				baseGone = append(baseGone, n)
			case n.applied != nil:
				r.g.setApplied(n, nil)
				if n.metadata != nil {
					r.g.setMetadata(n, nil, true)
				}
				gone = append(gone, n)
			}
			r.affectedByFailure(n)
		}
		for _, n := range gone {
			r.afterVanished(n)
		}
		for _, n := range baseGone {
			r.baseGone(n)
		}
		for _, n := range nodes {
			if n.state != api.ValueStateFailed {
				continue // a base affected by a failure: the retry repairs it
			}
			if !r.revert && (n.lastOp == api.OpCreate || n.lastOp == api.OpUpdate) && n.intended != nil && n.applied != nil &&
				(r.equivalent(n, n.applied, n.intended) || !r.g.depsMet(n)) {
				// The failed operation did its job after all (the value is
				// completed), or what it left must go because a dependency
				// went meanwhile. Anything else waits for the retry.
				r.reconcile(n)
			}
		}
	}
}

// affectedByFailure sets the status of a CONFIGURED base value that the
// refresh after the failure of one of its derived values found changed in
// the SB: MISSING (its intended value is not in the SB). It is not
// repaired at once, which would call the failed derived value again: the
// retry of the derived value goes through its base, updating or re-creating
// it first (a resync does the same).
func (r *txnRun) affectedByFailure(n *node) {
	if n.base != nil || n.state != api.ValueStateConfigured || n.intended == nil || n.applied == nil ||
		r.equivalent(n, n.applied, n.intended) {
		return
	}
	r.setStatus(n, api.ValueStateMissing, n.lastOp, nil, nil)
}

// baseGone records that a base value affected by the failure of one of its
// derived values is gone from the SB (the failed operation, or someone
// else, removed it): MISSING, and its derived values, gone with it, MISSING
// too. They stay in the graph for the retry of the failed derived value,
// which goes through the base: it creates the base again, then them. The
// values that depended on the base are deleted (PENDING), as when a value
// vanishes.
func (r *txnRun) baseGone(n *node) {
	if n.intended != nil {
		r.setStatus(n, api.ValueStateMissing, n.lastOp, nil, nil)
	}
	r.afterGone(n)
}

// afterGone handles what stood on a value found gone from the SB, whose
// status is already set: its derived values went with it (MISSING, applied
// no more, no call made: they are created again with it); the values that
// depended on it are deleted (PENDING); what it held (Exclusive) is free.
func (r *txnRun) afterGone(n *node) {
	r.derivedGone(n)
	for _, dep := range r.g.dependents(n) {
		if r.stopped {
			return
		}
		if dep.applied != nil && !dep.removing && !dep.obtained && dep != n && !isAncestor(n, dep) && !r.g.depsMet(dep) {
			r.removeFromSB(dep, removeKeep)
		}
	}
	r.notifyReleased(n)
}

// derivedGone marks the derived values of a base found gone from the SB
// as gone with it: applied no more, MISSING when they were CONFIGURED; no
// call is made.
func (r *txnRun) derivedGone(b *node) {
	for _, d := range b.derived {
		if d.applied == nil {
			continue
		}
		r.g.setApplied(d, nil)
		if d.intended != nil && d.state == api.ValueStateConfigured {
			r.setStatus(d, api.ValueStateMissing, d.lastOp, nil, nil)
		}
		r.derivedGone(d)
	}
}

// afterVanished removes what was built on a value that a refresh found missing
// from the SB: its derived values, and the values that depended on it and now
// have an unmet dependency. They go as if the value had been deleted; the
// value's retry creates it again and its dependents after it.
func (r *txnRun) afterVanished(n *node) {
	defer r.notifyReleased(n)
	ok := true
	for i := len(n.derived) - 1; i >= 0; i-- {
		if d := n.derived[i]; d.applied != nil && !d.removing && !r.removeFromSB(d, removeKeep) {
			ok = false
		}
	}
	if ok {
		r.dropDerived(n)
	}
	for _, dep := range r.g.dependents(n) {
		if r.stopped {
			return
		}
		if dep.applied != nil && !dep.removing && !dep.obtained && dep != n && !r.g.depsMet(dep) {
			r.removeFromSB(dep, removeKeep)
		}
	}
}

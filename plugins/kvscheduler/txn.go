package kvscheduler

import (
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// processTxn runs one queued transaction: refresh (for resync), simulation,
// execution, then the follow-ups of failures (refresh of the failed keys,
// retries or revert) and the verification after apply (which may revert). It returns what Commit returns.
func (s *Scheduler) processTxn(qt *queuedTxn) error {
	rec := &api.RecordedTxn{
		SeqNum:       qt.seq,
		TxnType:      qt.typ,
		ResyncType:   qt.resync,
		Description:  qt.description,
		WithRevert:   qt.revert,
		DryRun:       qt.dryRun,
		RetryAttempt: qt.attempt,
		Start:        s.clock.Now(),
	}
	orderValues(qt)
	origin := api.FromNB
	if qt.typ == api.SBNotification {
		origin = api.FromSB
	}
	rec.Values = make([]api.RecordedKVPair, len(qt.values))
	for i, kv := range qt.values {
		rec.Values[i] = api.RecordedKVPair{Key: kv.key, Value: kv.value, Origin: origin}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	rt := &s.runState
	rt.reset()
	s.running = rt
	defer func() {
		s.running = nil
		rt.reset() // the undo logs hold every node the transaction changed: drop them now
	}()
	descs := s.descs.Load()
	if qt.resync == api.NotResync {
		s.g.reserveFor(qt.values) // a resync's values are mostly known already
	}
	var initErrs []api.KeyWithError
	if qt.typ == api.DriftRepair {
		// As a resync's refresh, for the reported values; recorded for
		// readers only.
		rec.Description = driftDescription(qt.drift)
		var refreshUndo chunks[undoEntry]
		s.g.record(&refreshUndo)
		rt.addLog(&refreshUndo)
		qt.driftFound, initErrs = s.refreshDrift(qt)
		s.g.undo = nil
		rec.Values = append(rec.Values, qt.driftFound.found...)
	}
	if qt.resync == api.FullResync || qt.resync == api.DownstreamResync {
		// Recorded for readers only (see runningTxn): a failure rolls
		// back to the refreshed state, not before it.
		var refreshUndo chunks[undoEntry]
		s.g.record(&refreshUndo)
		rt.addLog(&refreshUndo)
		initErrs = s.refreshAll(descs, qt)
		s.g.undo = nil
	}

	// Simulation: the plan, and the descriptor calls it needs.
	var undo chunks[undoEntry]
	s.g.record(&undo)
	rt.addLog(&undo)
	sim := s.newRun(qt, descs, planExec{plan: !qt.dryRun})
	sim.trackChanges = !qt.dryRun
	sim.run(qt)
	rec.Planned = sim.ops
	s.logPlan(rec)

	var exe *txnRun
	reverted := false
	switch {
	case qt.dryRun:
		s.g.rollback()
		rt.dropLog(&undo)
	case undo.len() == 0 && len(sim.errs) == 0:
		s.g.undo = nil // nothing to do
	default:
		s.g.undo = nil
		x := s.executeSteps(&sim.steps, !qt.revert)
		if x.done == sim.steps.len() && !sim.stopped {
			// Executed as planned. What follows is recorded for readers
			// (the refresh of failed values calls Retrieve).
			sim.finishSteps(x.md)
			exe = sim
			exe.exec = sbExec{}
			s.g.undo = &undo
			exe.refreshFailed()
			s.scheduleRetries(exe, qt)
			reverted = s.verifyExecuted(qt, exe, rec, func() []doneOp { return doneOfSteps(&sim.steps, x.md) })
			s.g.undo = nil
			rec.Executed = exe.ops
			break
		}
		// Step `done` failed (or the simulation stopped on a foreseen
		// failure in revert mode): back to the state before the
		// transaction, and run it again, replaying what was executed. The
		// run is recorded: for revert, and for readers.
		s.g.undo = &undo // roll back the simulation's recording
		s.g.rollback()
		rt.dropLog(&undo)
		rp := x.replayLog(&sim.steps)
		exe = s.newRun(qt, descs, replayExec{rp})
		var execUndo chunks[undoEntry]
		s.g.record(&execUndo)
		rt.addLog(&execUndo)
		exe.run(qt)
		exe.settleUnreplayed(rp)
		if exe.stopped {
			s.revert(exe)
			reverted = true
		} else {
			exe.refreshFailed()
			s.scheduleRetries(exe, qt)
			reverted = s.verifyExecuted(qt, exe, rec, nil)
			s.g.undo = nil
		}
		rec.Executed = exe.ops
	}
	s.g.compact()
	rec.Stop = s.clock.Now()
	notesChanged := false
	if qt.typ == api.NBTransaction && !qt.dryRun && !reverted && (qt.notes != nil || len(s.notes) > 0) {
		r := exe
		if r == nil {
			r = sim
		}
		notesChanged = s.applyNotes(qt, r)
	}
	// The revision: what the transaction kept of its changes to the graph
	// (a dry run rolls its plan back; the refresh of a dry-run resync
	// stays), an operation executed (a reverted transaction undid its
	// operations, and the SB saw them), a note changed.
	rec.Revision = s.revision.Load()
	changedState := rt.changed() || len(rec.Executed) > 0 || notesChanged
	if changedState {
		s.advanceRevision(rec)
	}
	if qt.dryRun && !changedState {
		// A plan: kept apart, so that plans do not push the transactions
		// out of the history. A dry-run resync whose refresh changed the
		// graph goes into the history: it explains a revision.
		s.dryRuns.add(rec)
	} else {
		s.history.add(rec)
	}
	var kvErrs []api.KeyWithError
	kvErrs = append(kvErrs, initErrs...)
	if f := qt.driftFound; f != nil && len(f.roots) > 0 {
		// What the refresh found changed statuses even when the run had
		// nothing to do (report only): watchers are told.
		r := exe
		if r == nil {
			r = sim
		}
		r.trackChanges = true
		for _, n := range f.roots {
			r.markChanged(n)
		}
		if exe == nil {
			s.publishStatus(sim)
		}
	}
	if exe != nil {
		s.publishStatus(exe)
		kvErrs = append(kvErrs, exe.errs...)
		kvErrs = exe.appendOpErrors(kvErrs)
	} else {
		if notesChanged {
			s.publishStatus(sim)
		}
		kvErrs = append(kvErrs, sim.errs...)
		kvErrs = sim.appendOpErrors(kvErrs)
	}
	s.logResult(rec, len(kvErrs))
	s.statsMu.Lock()
	s.txnCounts[rec.TxnType]++
	s.statsMu.Unlock()
	if s.opts.Observer != nil {
		s.opts.Observer.TxnDone(rec, rec.Start.Sub(qt.enqueued), len(kvErrs) > 0)
	}
	if len(kvErrs) > 0 {
		return &api.TransactionError{KVErrors: kvErrs}
	}
	return nil
}

// appendOpErrors appends the errors of the run's failed operations.
func (r *txnRun) appendOpErrors(errs []api.KeyWithError) []api.KeyWithError {
	if r.failedOps == 0 {
		return errs
	}
	for _, op := range r.ops {
		if op.NewErr != nil {
			errs = append(errs, api.KeyWithError{Key: op.Key, Operation: op.Operation, Error: op.NewErr})
		}
	}
	return errs
}

func (s *Scheduler) newRun(qt *queuedTxn, descs *descriptorSet, exec executor) *txnRun {
	r := &txnRun{
		s:        s,
		g:        s.g,
		descs:    descs,
		exec:     exec,
		deep:     qt.resync != api.NotResync || qt.typ == api.RetryFailedOps || qt.typ == api.FollowUp || qt.typ == api.DriftRepair,
		revert:   qt.revert,
		retryTxn: qt.typ == api.RetryFailedOps,
	}
	if qt.typ == api.NBTransaction {
		r.retryPolicy = s.retryPolicy(qt.retryOpt)
	}
	s.runs += 2 // a batch marks its nodes with the run's id and id+1
	r.id = s.runs
	r.trackChanges = exec.real()
	return r
}

// run applies the transaction's changes to the graph.
func (r *txnRun) run(qt *queuedTxn) {
	r.runChanges(qt)
	r.revalidated()
}

func (r *txnRun) runChanges(qt *queuedTxn) {
	switch qt.typ {
	case api.SBNotification:
		for _, kv := range qt.values {
			r.applySB(kv)
		}
	case api.RetryFailedOps:
		for _, rk := range qt.retryKeys {
			n := r.g.get(rk.key)
			if n == nil || n.revision != rk.revision || n.retryTicket() != rk.ticket {
				continue // changed since: the retry is obsolete
			}
			// A derived value is retried through its base: the base decides
			// whether it is still wanted.
			root := n
			for root.base != nil {
				root = root.base
			}
			r.reconcile(root) // deep: an in-sync base syncs its derived values
			if r.stopped {
				return
			}
		}
	case api.DriftRepair:
		r.repairDrift(qt.driftFound)
	case api.FollowUp:
		// Keys a callback asked to reconcile again (api.RequestReconcile),
		// through their bases, deep: a FAILED value is tried again.
		for _, key := range qt.followUp {
			n := r.g.get(key)
			if n == nil {
				continue
			}
			for n.base != nil {
				n = n.base
			}
			r.reconcile(n)
			if r.stopped {
				return
			}
		}
	case api.RetryUnimplemented:
		for _, n := range r.collect(func(n *node) bool { return n.base == nil && n.desc == nil && n.intended != nil }) {
			if di := r.descs.forKey(n.key); di != nil {
				r.setDesc(n, di)
				r.setIntent(n, n.intended)
				r.reconcile(n)
			}
		}
	default:
		switch qt.resync {
		case api.NotResync:
			r.applyNB(qt.values)
		case api.FullResync, api.UpstreamResync:
			// The intents of the NB state first (marking their nodes), then
			// what the NB no longer lists goes, then the NB state is
			// reconciled, dependencies first.
			r.g.epoch++
			listed := r.g.epoch
			wanted := batch{others: make([]*node, 0, len(qt.values))}
			for i, kv := range qt.values {
				if n := r.setNBIntent(r.g.known(qt.nodeHint(i), kv.key), kv.key, kv.value); n != nil {
					n.mark = listed
					r.enqueue(&wanted, n)
				}
			}
			var removed, discovered batch // both only deletes
			for _, n := range r.collect(func(n *node) bool { return n.base == nil && !n.obtained && n.mark != listed }) {
				if n.intended != nil {
					if rn := r.setNBIntent(n, n.key, nil); rn != nil {
						r.enqueue(&removed, rn)
					}
				} else if n.applied != nil {
					r.enqueue(&discovered, n)
				}
			}
			deletes := append(append(removed.deletes, discovered.deletes...), wanted.deletes...)
			r.recheckRefused()
			r.reconcileBatch(&batch{deletes: deletes, others: wanted.others})
		case api.DownstreamResync:
			for _, n := range r.collect(func(n *node) bool { return n.base == nil && !n.obtained }) {
				r.reconcile(n)
			}
		}
	}
}

func (r *txnRun) setDesc(n *node, di *descriptorInfo) {
	old := n.desc
	n.desc = di
	r.g.logUndo(undoEntry{kind: undoDesc, n: n, old: old})
}

// collect returns the nodes accepted by f, in key order.
func (r *txnRun) collect(f func(*node) bool) []*node {
	var out []*node
	r.g.scanPrefix("", func(n *node) bool {
		if f(n) {
			out = append(out, n)
		}
		return true
	})
	return out
}

package kvscheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/txnlog"
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

// processTxn runs one queued transaction: refresh (for resync), simulation,
// execution, then the follow-ups of failures (refresh of the failed keys,
// retries or revert). It returns what Commit returns.
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
	rt := &runningTxn{}
	s.running = rt
	defer func() { s.running = nil }()
	descs := s.descs.Load()
	if qt.resync == api.NotResync {
		s.g.reserve(len(qt.values)) // a resync's values are mostly known already
	}
	var initErrs []api.KeyWithError
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
	sim := s.newRun(qt, descs, true)
	if !qt.dryRun {
		sim.planSteps = true
		sim.trackChanges = true
	}
	sim.run(qt)
	rec.Planned = sim.ops
	s.logPlan(rec)

	var exe *txnRun
	switch {
	case qt.dryRun:
		s.g.rollback()
		rt.dropLog(&undo)
	case undo.len() == 0 && len(sim.errs) == 0:
		s.g.undo = nil // nothing to do
	default:
		s.g.undo = nil
		done, md, err := s.executeSteps(&sim.steps)
		if done == sim.steps.len() && !sim.stopped {
			// Executed as planned. What follows is recorded for readers
			// (the refresh of failed values calls Retrieve).
			sim.finishSteps(md)
			exe = sim
			exe.simulate = false
			s.g.undo = &undo
			exe.refreshFailed()
			s.scheduleRetries(exe, qt)
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
		exe = s.newRun(qt, descs, false)
		exe.replay = &replayLog{steps: &sim.steps, md: md, failAt: done, err: err}
		var execUndo chunks[undoEntry]
		s.g.record(&execUndo)
		rt.addLog(&execUndo)
		exe.run(qt)
		if exe.stopped {
			s.revert(exe)
		} else {
			exe.refreshFailed()
			s.scheduleRetries(exe, qt)
			s.g.undo = nil
		}
		rec.Executed = exe.ops
	}
	rec.Stop = s.clock.Now()
	s.history.add(rec)
	var kvErrs []api.KeyWithError
	kvErrs = append(kvErrs, initErrs...)
	if exe != nil {
		s.publishStatus(exe)
		kvErrs = append(kvErrs, exe.errs...)
		kvErrs = exe.appendOpErrors(kvErrs)
	} else {
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

func (s *Scheduler) newRun(qt *queuedTxn, descs *descriptorSet, simulate bool) *txnRun {
	r := &txnRun{
		s:        s,
		g:        s.g,
		descs:    descs,
		simulate: simulate,
		deep:     qt.resync != api.NotResync || qt.typ == api.RetryFailedOps || qt.typ == api.FollowUp,
		revert:   qt.revert,
		retryTxn: qt.typ == api.RetryFailedOps,
	}
	if qt.typ == api.NBTransaction {
		r.retryPolicy = s.retryPolicy(qt.retryOpt)
	}
	s.runs += 2 // a batch marks its nodes with the run's id and id+1
	r.id = s.runs
	r.trackChanges = !simulate
	return r
}

// run applies the transaction's changes to the graph.
func (r *txnRun) run(qt *queuedTxn) {
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
			r.reconcileBatch(&batch{deletes: deletes, others: wanted.others})
		case api.DownstreamResync:
			for _, n := range r.collect(func(n *node) bool { return n.base == nil && !n.obtained }) {
				r.reconcile(n)
			}
		}
	}
}

// orderValues puts the deletes of a transaction first, then the other
// changes, each sorted by key, so that the plan does not depend on the order
// in which a client listed its keys, and deletes free what new values may
// need (names, addresses) before those are created. A key listed twice keeps
// the value set last.
func orderValues(qt *queuedTxn) {
	if qt.typ != api.NBTransaction || len(qt.values) < 2 {
		return
	}
	values := sortedByKey(qt.values)
	// A key set more than once keeps its last value (in place).
	kept := values[:0]
	deletes := 0
	for i, kv := range values {
		if i+1 < len(values) && values[i+1].key == kv.key {
			continue
		}
		if kv.value == nil {
			deletes++
		}
		kept = append(kept, kv)
	}
	qt.values = kept
	if deletes == 0 || deletes == len(kept) {
		return
	}
	// Deletes first, each group keeping its key order.
	others := make([]kvChange, 0, len(kept)-deletes)
	d := 0
	for _, kv := range kept {
		if kv.value == nil {
			kept[d] = kv
			d++
		} else {
			others = append(others, kv)
		}
	}
	copy(kept[d:], others)
}

// sortedByKey returns the values sorted by key, a key listed twice in the
// order it was set. It is a merge sort of the runs already in key order:
// linear when the values come sorted (as from a key-value store), a few
// passes for a few runs, O(n log n) at worst; the stable sort of the
// standard library moves values O(n log² n) times.
func sortedByKey(values []kvChange) []kvChange {
	if slices.IsSortedFunc(values, func(a, b kvChange) int { return strings.Compare(a.key, b.key) }) {
		return values
	}
	return mergeSortRuns(values, make([]kvChange, len(values)))
}

// minRun is the shortest run mergeSortRuns merges: shorter ones are extended
// by insertion sort first.
const minRun = 16

// mergeSortRuns sorts a stably by key, using buf (as long as a) as scratch
// space, and returns the one of the two that holds the result.
func mergeSortRuns(a, buf []kvChange) []kvChange {
	// Runs: ascending stretches of at least minRun values.
	var starts []int
	for i := 0; i < len(a); {
		starts = append(starts, i)
		j := i + 1
		for j < len(a) && a[j-1].key <= a[j].key {
			j++
		}
		if end := min(i+minRun, len(a)); j < end {
			for k := j; k < end; k++ {
				for m := k; m > i && a[m].key < a[m-1].key; m-- {
					a[m], a[m-1] = a[m-1], a[m]
				}
			}
			j = end
		}
		i = j
	}
	starts = append(starts, len(a))
	// Merge neighbouring runs pairwise until one is left.
	for len(starts) > 2 {
		next := make([]int, 0, len(starts)/2+1)
		for r := 0; r+1 < len(starts); r += 2 {
			lo, mid, hi := starts[r], starts[r+1], len(a)
			if r+2 < len(starts) {
				hi = starts[r+2]
			}
			next = append(next, lo)
			if mid == hi || a[mid-1].key <= a[mid].key {
				copy(buf[lo:hi], a[lo:hi]) // a run without a pair, or in order already
				continue
			}
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if a[j].key < a[i].key {
					buf[k] = a[j]
					j++
				} else {
					buf[k] = a[i]
					i++
				}
				k++
			}
			k += copy(buf[k:], a[i:mid])
			copy(buf[k:], a[j:hi])
		}
		next = append(next, len(a))
		a, buf = buf, a
		starts = next
	}
	return a
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

// applySB applies one SB notification: an OBTAINED value appears, changes
// or goes away.
func (r *txnRun) applySB(kv kvChange) {
	n := r.g.get(kv.key)
	if n != nil && !n.obtained && (n.intended != nil || n.base != nil) {
		r.errs = append(r.errs, api.KeyWithError{Key: kv.key,
			Error: fmt.Errorf("SB notification for %s ignored: the key is configured by the NB", kv.key)})
		return
	}
	if kv.value == nil {
		if n == nil {
			return
		}
		if n.applied != nil && !r.removeFromSB(n, removeKeep) {
			return
		}
		r.g.setIntended(n, nil)
		r.g.setObtained(n, false)
		r.dropNode(n)
		return
	}
	wasAvailable := false
	prev := status{}
	var prevValue proto.Message
	if n == nil {
		n = &node{key: kv.key, desc: r.descs.forKey(kv.key)}
		r.g.addNode(n)
	} else {
		wasAvailable = n.available()
		prev = statusOf(n)
		prevValue = n.applied
		if prevValue != nil && proto.Equal(prevValue, kv.value) && n.metadata == kv.metadata {
			return
		}
	}
	r.setObtainedValue(n, kv.value, kv.metadata)
	op := api.OpCreate
	if prevValue != nil {
		op = api.OpUpdate
	}
	r.recordOp(n, op, prevValue, kv.value, prev, nil, opFlags{noop: true})
	r.syncObtainedDerived(n)
	if !wasAvailable {
		r.notifyAvailable(n)
	}
}

func (r *txnRun) setObtainedValue(n *node, value proto.Message, md any) {
	if !n.obtained {
		r.g.setObtained(n, true)
	}
	r.g.setIntended(n, value)
	r.g.setApplied(n, value)
	if n.deps != nil {
		r.g.setDeps(n, nil)
	}
	if n.invalidErr() != nil {
		r.g.setInvalid(n, nil)
	}
	if n.metadata != md {
		r.g.setMetadata(n, md, !r.simulate)
	}
	r.setStatus(n, api.ValueStateObtained, api.OpUndefined, nil, nil)
}

// syncObtainedDerived makes the derived values of an OBTAINED value OBTAINED
// values too.
func (r *txnRun) syncObtainedDerived(n *node) {
	want, _ := r.derivedValues(n, n.applied)
	var list []*node
	for _, d := range n.derived {
		if !wants(want, d.key) {
			if !r.removeFromSB(d, removeForGood) {
				list = append(list, d)
				continue
			}
			r.g.removeNode(d)
			r.markChanged(n)
		}
	}
	for _, kv := range want {
		if kv.Key == "" || kv.Value == nil {
			continue
		}
		d := findDerived(n.derived, kv.Key)
		if d == nil {
			if r.g.get(kv.Key) != nil {
				continue
			}
			d = &node{key: kv.Key, base: n, desc: r.descs.forKey(kv.Key)}
			r.g.addNode(d)
		}
		list = append(list, d)
		was := d.available()
		if d.applied == nil || !proto.Equal(d.applied, kv.Value) {
			r.setObtainedValue(d, kv.Value, nil)
		}
		if !was {
			defer r.notifyAvailable(d)
		}
	}
	r.g.setDerived(n, list)
}

// --- refresh ----------------------------------------------------------------

// refreshAll asks every descriptor with Retrieve for the SB state (resync),
// in RetrieveDependencies order, and records it as the applied values.
func (s *Scheduler) refreshAll(descs *descriptorSet, qt *queuedTxn) []api.KeyWithError {
	var errs []api.KeyWithError
	order, err := retrieveOrder(descs)
	if err != nil {
		errs = append(errs, api.KeyWithError{Error: err})
	}
	// The graph's values per descriptor, and in a full resync the node of
	// each NB value: both lists are in key order (see orderValues), so they
	// are matched while the graph is scanned, without a lookup per value (and
	// while the node is in the cache).
	byDesc := map[*descriptorInfo][]*node{}
	var nb []kvChange // the NB values of a full resync (the deletes left out)
	var nbNodes []*node
	if qt.resync == api.FullResync {
		qt.nodes = make([]*node, len(qt.values))
		first := 0
		for first < len(qt.values) && qt.values[first].value == nil {
			first++ // the deletes come first
		}
		nb, nbNodes = qt.values[first:], qt.nodes[first:]
	}
	// The NB values per descriptor, for Retrieve to correlate with: their
	// descriptors (and metadata) are found with their nodes, then listed per
	// descriptor in their order.
	nbDescs := make([]*descriptorInfo, len(nb))
	nbMeta := make([]any, len(nb))
	perDesc := map[*descriptorInfo]int{}
	addNB := func(i int, n *node) {
		if nb[i].value == nil {
			return
		}
		if n == nil {
			n = s.g.get(nb[i].key) // none, unless the values were out of order
		}
		nbNodes[i] = n
		if n != nil && n.base == nil {
			nbDescs[i], nbMeta[i] = n.desc, n.metadata
		} else {
			nbDescs[i] = descs.forKey(nb[i].key)
		}
		perDesc[nbDescs[i]]++
	}
	next := 0
	s.g.scanPrefix("", func(n *node) bool {
		if n.base == nil && n.desc != nil {
			byDesc[n.desc] = appendDoubling(byDesc[n.desc], n)
		}
		for next < len(nb) && nb[next].key < n.key {
			addNB(next, nil)
			next++
		}
		if next < len(nb) && nb[next].key == n.key {
			addNB(next, n)
			next++
		}
		return true
	})
	for ; next < len(nb); next++ {
		addNB(next, nil)
	}
	nbByDesc := make(map[*descriptorInfo][]api.KVWithMetadata, len(perDesc))
	for di, count := range perDesc {
		if di != nil {
			nbByDesc[di] = make([]api.KVWithMetadata, 0, count)
		}
	}
	for i, kv := range nb {
		if di := nbDescs[i]; di != nil {
			nbByDesc[di] = append(nbByDesc[di], api.KVWithMetadata{Key: kv.key, Value: kv.value, Metadata: nbMeta[i], Origin: api.FromNB})
		}
	}
	// The keys the NB of a full resync wants, only if a retrieved value
	// needs them (one the graph does not know as the NB's).
	var nbWants map[string]struct{}
	wanted := func(key string) bool {
		if qt.resync != api.FullResync {
			return false // the graph tells (applyRetrieved)
		}
		if nbWants == nil {
			nbWants = make(map[string]struct{}, len(nb))
			for _, kv := range nb {
				if kv.value != nil {
					nbWants[kv.key] = struct{}{}
				}
			}
		}
		_, ok := nbWants[key]
		return ok
	}
	// Phase 1: ask every descriptor, in RetrieveDependencies order. Metadata
	// is published at once, as later Retrieves may need it (routes look up
	// interface indexes).
	results := map[*descriptorInfo][]api.KVWithMetadata{}
	for _, di := range order {
		if di.d.Retrieve == nil {
			continue
		}
		correlate := nbByDesc[di]
		if qt.resync != api.FullResync {
			for _, n := range byDesc[di] {
				if n.intended != nil && !n.obtained {
					correlate = append(correlate, api.KVWithMetadata{Key: n.key, Value: n.intended, Metadata: n.metadata, Origin: api.FromNB})
				}
			}
		}
		kvs, err := s.retrieve(di, correlate)
		if err != nil {
			errs = append(errs, api.KeyWithError{Error: err})
			continue // the SB of this descriptor stays as the graph knows it
		}
		results[di] = kvs
		if di.metadata != nil {
			for _, kv := range kvs {
				if kv.Key != "" && kv.Value != nil && kv.Metadata != nil && di.d.KeySelector(kv.Key) {
					di.metadata.Put(di.label(kv.Key), kv.Metadata)
				}
			}
		}
	}
	// Phase 2: record what was retrieved (see applyRetrieved), then refresh
	// the derived values of what changed.
	rs := &refreshState{s: s, wanted: wanted, results: results, retrievedDerived: map[string]api.KVWithMetadata{}, errs: errs}
	for _, di := range order {
		if kvs, ok := results[di]; ok {
			rs.applyRetrieved(di, kvs, byDesc[di])
		}
	}
	errs = rs.errs
	for _, n := range rs.refreshed {
		if n.inGraph {
			s.refreshDerived(n, rs.retrievedDerived)
		}
	}
	if qt.verbose {
		s.logger.Info("graph after refresh", "txn", qt.seq, "values", len(s.g.nodes))
	}
	return errs
}

// retrieve calls a descriptor's Retrieve (see callback).
func (s *Scheduler) retrieve(di *descriptorInfo, correlate []api.KVWithMetadata) (kvs []api.KVWithMetadata, err error) {
	s.callback(di.d.Name, func(ctx context.Context) {
		kvs, err = retrieveGuarded(ctx, di, correlate, 0)
	})
	return kvs, err
}

// refreshState is what the refresh of a resync collects over the
// descriptors.
type refreshState struct {
	s       *Scheduler
	results map[*descriptorInfo][]api.KVWithMetadata
	// wanted tells whether the NB of a full resync lists a key.
	wanted func(key string) bool
	// derivedKeys are the keys the retrieved values derive (built when a
	// retrieved key is new to the graph).
	derivedKeys map[string]struct{}
	// retrievedDerived are the retrieved derived values.
	retrievedDerived map[string]api.KVWithMetadata
	// refreshed are the base values whose derived values need refreshing.
	refreshed []*node
	errs      []api.KeyWithError
}

// isDerived tells whether a retrieved key, whose node is n (nil: none), is
// a derived value. A key the graph knows tells itself; only new keys (after
// a restart) need the DerivedValues of the retrieved values to be told apart.
func (rs *refreshState) isDerived(n *node, key string) bool {
	if n != nil {
		return n.base != nil
	}
	if rs.derivedKeys == nil {
		rs.derivedKeys = map[string]struct{}{}
		for di, kvs := range rs.results {
			if di.d.DerivedValues == nil {
				continue
			}
			for _, kv := range kvs {
				if kv.Value == nil {
					continue
				}
				derived, _ := pure(func() []api.KeyValuePair { return di.d.DerivedValues(kv.Key, kv.Value) })
				for _, d := range derived {
					rs.derivedKeys[d.Key] = struct{}{}
				}
			}
		}
	}
	_, ok := rs.derivedKeys[key]
	return ok
}

// applyRetrieved records what a descriptor's Retrieve returned. A derived
// value retrieved on its own (retrievedOnItsOwn) is in the SB when that
// Retrieve returned it (retrievedDerived; refreshDerived applies it); the
// other values
// are recorded as the applied state of the descriptor's values (known are
// those in the graph). Garbage (empty keys, nil values, keys of other
// descriptors, duplicates) is skipped and reported.
func (rs *refreshState) applyRetrieved(di *descriptorInfo, kvs []api.KVWithMetadata, known []*node) {
	s := rs.s
	bad := func(key, format string, args ...any) {
		rs.errs = append(rs.errs, api.KeyWithError{Key: key, Error: fmt.Errorf("descriptor %s: Retrieve: "+format, append([]any{di.d.Name}, args...)...)})
	}
	refresh := func(n *node) {
		if di.d.DerivedValues != nil || len(n.derived) > 0 {
			rs.refreshed = appendDoubling(rs.refreshed, n)
		}
	}
	g := s.g
	// The nodes of the retrieved keys are marked (seen); when every known
	// node was seen, none went missing.
	g.epoch++
	seen := g.epoch
	seenKnown := 0
	for _, kv := range kvs {
		n := g.get(kv.Key)
		if rs.isDerived(n, kv.Key) {
			rs.retrievedDerived[kv.Key] = kv
			continue
		}
		switch {
		case kv.Key == "":
			bad("", "returned a value with an empty key")
			continue
		case kv.Value == nil:
			bad(kv.Key, "returned %s without a value", kv.Key)
			continue
		case !di.d.KeySelector(kv.Key):
			bad(kv.Key, "returned %s, which its KeySelector does not accept", kv.Key)
			continue
		}
		if n != nil && n.mark == seen {
			bad(kv.Key, "returned %s twice; the first is kept", kv.Key)
			continue
		}
		if n == nil {
			n = &node{key: kv.Key, desc: di}
			g.addNode(n)
		} else if n.base == nil && n.desc == di {
			seenKnown++
		}
		n.mark = seen
		if n.base != nil || (n.desc != nil && n.desc != di) {
			bad(kv.Key, "returned %s, which belongs to another value", kv.Key)
			continue
		}
		// (What the graph knows as the NB's needs no look at the NB values.)
		if !(n.intended != nil && !n.obtained) && !retrievedIsOurs(n, kv.Origin, rs.wanted(kv.Key)) {
			if !n.obtained {
				g.setObtained(n, true)
			}
			if n.intended == nil || !proto.Equal(n.intended, kv.Value) {
				g.setIntended(n, kv.Value)
				g.setApplied(n, kv.Value)
			}
			if di.d.WithMetadata && n.metadata != kv.Metadata {
				g.setMetadata(n, kv.Metadata, true)
			}
			if n.state != api.ValueStateObtained {
				g.setStatus(n, status{state: api.ValueStateObtained})
			}
			refresh(n)
			continue
		}
		if n.obtained {
			g.setObtained(n, false) // the NB takes the value over
			g.setIntended(n, nil)
		}
		if n.applied == nil || !proto.Equal(n.applied, kv.Value) {
			g.setApplied(n, kv.Value)
		}
		if di.d.WithMetadata && n.metadata != kv.Metadata {
			g.setMetadata(n, kv.Metadata, true)
		}
		if n.intended == nil && n.state != api.ValueStateDiscovered {
			g.setStatus(n, status{state: api.ValueStateDiscovered, lastOp: n.lastOp})
			if f := di.d.Dependencies; f != nil {
				deps, _ := pure(func() []api.Dependency { return f(n.key, kv.Value) })
				g.setDeps(n, validDeps(deps))
			}
		}
		refresh(n)
	}
	if seenKnown == len(known) {
		return
	}
	for _, n := range known {
		if n.mark == seen || n.applied == nil || !n.inGraph {
			continue
		}
		// Not in the SB any more.
		if n.obtained {
			s.forgetObtained(n)
			continue
		}
		g.setApplied(n, nil)
		if n.metadata != nil {
			g.setMetadata(n, nil, true)
		}
		if n.intended != nil {
			g.setStatus(n, status{state: api.ValueStateMissing, lastOp: n.lastOp, err: n.err})
		}
		refresh(n)
	}
}

// retrievedIsOurs tells whether a retrieved value belongs to the agent (to be
// kept in line with the NB, or deleted when the NB does not want it) or is a
// foreign object (OBTAINED, never deleted).
func retrievedIsOurs(n *node, origin api.ValueOrigin, wanted bool) bool {
	switch {
	case wanted || (n.intended != nil && !n.obtained):
		return true
	case origin == api.FromNB:
		return true
	case origin == api.FromSB:
		return false
	default: // unknown: ours only if the agent created it
		return !n.obtained && n.lastOp != api.OpUndefined
	}
}

// forgetObtained drops an OBTAINED value the SB no longer has. What depended
// on it is left to the reconciliation that follows the refresh.
func (s *Scheduler) forgetObtained(n *node) {
	g := s.g
	for _, d := range n.derived {
		g.removeNode(d)
	}
	g.setDerived(n, nil)
	g.setApplied(n, nil)
	g.setIntended(n, nil)
	g.removeNode(n)
}

// refreshDerived sets, during a resync refresh, the applied state of n's
// derived values. A derived value retrieved on its own (see retrievedOnItsOwn)
// is in the SB when its descriptor's Retrieve returned it (retrieved). Any
// other derived value is in the SB when the retrieved base derives it, except
// one the graph knows as not applied (e.g. PENDING): the base alone cannot
// tell.
func (s *Scheduler) refreshDerived(n *node, retrieved map[string]api.KVWithMetadata) {
	g := s.g
	var have []api.KeyValuePair
	if n.applied != nil && n.desc != nil && n.desc.d.DerivedValues != nil {
		applied := n.applied
		have, _ = pure(func() []api.KeyValuePair { return n.desc.d.DerivedValues(n.key, applied) })
	}
	if len(have) == 0 && len(n.derived) == 0 {
		return
	}
	ownRetrieve := func(d *node) bool { return retrievedOnItsOwn(d, n) }
	setApplied := func(d *node, value proto.Message) {
		if value != nil && d.intended == nil && d.deps == nil && d.desc != nil && d.desc.d.Dependencies != nil {
			// Found in the SB before anything is intended for it (after a
			// restart): its dependencies are those of what it is, so that
			// what it holds (Exclusive) is known before the values that
			// compete with it are reconciled.
			deps, _ := pure(func() []api.Dependency { return d.desc.d.Dependencies(d.key, value) })
			g.setDeps(d, validDeps(deps))
		}
		switch {
		case value == nil:
			if d.applied != nil {
				g.setApplied(d, nil)
				if d.intended != nil && d.state == api.ValueStateConfigured {
					// Gone from the SB (as base values, see applyRetrieved):
					// until it is created again it is not CONFIGURED.
					g.setStatus(d, status{state: api.ValueStateMissing, lastOp: d.lastOp})
				}
			}
		case d.applied == nil || !proto.Equal(d.applied, value):
			g.setApplied(d, value)
		}
	}
	list := n.derived
	grown := false
	for _, d := range n.derived {
		if !wants(have, d.key) {
			if ownRetrieve(d) {
				setApplied(d, retrieved[d.key].Value)
			} else {
				setApplied(d, nil)
			}
		}
	}
	for _, kv := range have {
		if kv.Key == "" || kv.Value == nil {
			continue
		}
		d := findDerived(list, kv.Key)
		if d == nil {
			if g.get(kv.Key) != nil {
				continue
			}
			d = &node{key: kv.Key, base: n, desc: s.descs.Load().forKey(kv.Key), obtained: n.obtained}
			if n.obtained {
				d.intended, d.state = kv.Value, api.ValueStateObtained
			}
			g.addNode(d)
			if !grown {
				list = append([]*node(nil), list...)
				grown = true
			}
			list = append(list, d)
		}
		switch {
		case ownRetrieve(d):
			setApplied(d, retrieved[kv.Key].Value)
		case d.applied == nil && d.state != api.ValueStateNonexistent && !n.obtained:
			// Known as not applied; the base alone cannot tell otherwise.
		default:
			setApplied(d, kv.Value)
		}
	}
	if grown {
		g.setDerived(n, list)
	}
}

// retrievedOnItsOwn tells whether the SB state of the derived value d of base
// is what d's own descriptor retrieves (api.KVDescriptor.Retrieve): d has a
// descriptor with Retrieve other than the base's, and the base is not
// OBTAINED. Otherwise (a property, a descriptor without Retrieve, the base's
// own descriptor, whose Retrieve returns base values) the retrieved base value
// tells, through its DerivedValues.
func retrievedOnItsOwn(d, base *node) bool {
	return d.desc != nil && d.desc.d.Retrieve != nil && d.desc != base.desc && !base.obtained
}

// retrieveOrder sorts descriptors so that each comes after those named in its
// RetrieveDependencies; ties keep the registration order.
func retrieveOrder(descs *descriptorSet) ([]*descriptorInfo, error) {
	var out []*descriptorInfo
	state := map[*descriptorInfo]int{} // 1 visiting, 2 done
	var cycle error
	var visit func(di *descriptorInfo)
	visit = func(di *descriptorInfo) {
		switch state[di] {
		case 1:
			if cycle == nil {
				cycle = fmt.Errorf("RetrieveDependencies form a cycle through descriptor %s", di.d.Name)
			}
			return
		case 2:
			return
		}
		state[di] = 1
		for _, name := range di.d.RetrieveDependencies {
			if dep := descs.byName[name]; dep != nil {
				visit(dep)
			}
		}
		state[di] = 2
		out = append(out, di)
	}
	for _, di := range descs.list {
		visit(di)
	}
	return out, cycle
}

// refreshFailed asks the SB what failed operations left behind, for the
// failed keys only, and completes values that turn out to be in place.
func (r *txnRun) refreshFailed() {
	// In rounds: completing a value may create others, which may fail too.
	// A value is refreshed once per transaction: one that fails again when
	// it is completed (a half-made object that the next attempt breaks
	// again, as a veth pair whose MAC the kernel refuses) waits for its
	// retry, so that the transaction ends.
	var refreshed map[*node]bool
	for done := 0; done < len(r.failed); {
		var batch []*node
		for _, n := range r.failed[done:] {
			if refreshed == nil {
				refreshed = map[*node]bool{}
			}
			if !refreshed[n] {
				refreshed[n] = true
				batch = append(batch, n)
			}
		}
		done = len(r.failed)
		if len(batch) > 0 {
			r.refreshFailedBatch(batch)
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
		correlate := make([]api.KVWithMetadata, 0, len(nodes))
		for _, n := range nodes {
			if n.intended != nil {
				correlate = append(correlate, api.KVWithMetadata{Key: n.key, Value: n.intended, Metadata: n.metadata, Origin: api.FromNB})
			}
		}
		kvs, err := r.s.retrieve(di, correlate)
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
		var gone []*node
		for _, n := range nodes {
			kv, ok := found[n.key]
			switch {
			case ok && kv.Value != nil:
				if n.leftoverValue() != nil {
					r.g.setLeftover(n, nil)
				}
				if n.applied == nil || !proto.Equal(n.applied, kv.Value) {
					r.g.setApplied(n, kv.Value)
				}
				if di.d.WithMetadata && kv.Metadata != nil && n.base == nil {
					r.g.setMetadata(n, kv.Metadata, true)
				}
			case n.applied != nil && n.state != api.ValueStateFailed:
				// A base affected by the failure of a derived value, gone
				// from the SB: left as the graph knows it (its derived
				// values keep their status); a resync finds it gone.
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

// --- retries ----------------------------------------------------------------

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

// --- revert -----------------------------------------------------------------

// revert undoes a transaction stopped by a failure: the failed key is
// refreshed, every executed operation is undone in reverse order, and the
// graph returns to its state before the transaction.
func (s *Scheduler) revert(r *txnRun) {
	failed := r.failed[len(r.failed)-1]
	before := failed.applied // what the SB had before the failed operation
	now, nowMeta := r.readBack(failed)

	r.reverting = true
	type outcome struct {
		n   *node
		md  any
		err error
	}
	var outcomes []outcome
	undoOne := func(n *node, from, to proto.Message, meta any) {
		prev := statusOf(n)
		op, md, err := api.OpUpdate, meta, error(nil)
		switch {
		case to == nil:
			op = api.OpDelete
			if n.desc.d.Delete != nil {
				err = r.call(n, "Delete", func(ctx context.Context) error { return n.desc.d.Delete(ctx, n.key, from, meta) })
			}
		case from == nil:
			op = api.OpCreate
			if n.desc.d.Create != nil {
				err = r.call(n, "Create", func(ctx context.Context) (err error) { md, err = n.desc.d.Create(ctx, n.key, to); return err })
			}
		default:
			if n.desc.d.Update != nil {
				err = r.call(n, "Update", func(ctx context.Context) (err error) {
					md, err = n.desc.d.Update(ctx, n.key, from, to, meta)
					return err
				})
			}
		}
		r.recordOp(n, op, from, to, prev, err, opFlags{})
		outcomes = append(outcomes, outcome{n, md, err})
	}
	if failed.desc != nil && (now != nil || before != nil) && !(now != nil && before != nil && r.equivalent(failed, now, before)) {
		undoOne(failed, now, before, nowMeta)
	}
	for i := len(r.done) - 1; i >= 0; i-- {
		d := r.done[i]
		undoOne(d.n, d.newValue, d.prevValue, d.newMeta)
	}
	s.g.rollback()
	// The graph is as before the transaction; bring in what the undo
	// operations changed: new metadata of re-created values, and values whose
	// undo failed, which stay as the transaction left them.
	for _, o := range outcomes {
		n := o.n
		if !n.inGraph {
			continue
		}
		if o.err != nil {
			n.state, n.lastOp, n.err = api.ValueStateFailed, api.OpUndefined, fmt.Errorf("revert failed: %w", o.err)
			continue
		}
		if n.desc.d.WithMetadata && n.applied != nil {
			n.metadata = o.md
			publishMetadata(n, o.md)
		}
	}
	for _, op := range r.ops {
		if n := s.g.get(op.Key); n != nil {
			r.markChanged(n)
		} else {
			r.changed = append(r.changed, &node{key: op.Key}) // removed
		}
	}
}

// readBack asks the SB for the current value of one key (after a failed
// operation, before it is reverted).
func (r *txnRun) readBack(n *node) (proto.Message, any) {
	if n.desc == nil || n.base != nil || n.desc.d.Retrieve == nil {
		return n.applied, n.metadata // cannot ask: assume nothing changed
	}
	kvs, err := r.s.retrieve(n.desc, []api.KVWithMetadata{{Key: n.key, Value: n.intended, Metadata: n.metadata, Origin: api.FromNB}})
	if err != nil {
		r.errs = append(r.errs, api.KeyWithError{Key: n.key, Error: fmt.Errorf("refresh before revert: %w", err)})
		return n.applied, n.metadata
	}
	for _, kv := range kvs {
		if kv.Key == n.key {
			return kv.Value, kv.Metadata
		}
	}
	return nil, nil
}

// --- status and log ---------------------------------------------------------

func (s *Scheduler) publishStatus(r *txnRun) {
	if len(r.changed) == 0 || s.watch.empty() {
		return
	}
	sort.Slice(r.changed, func(i, j int) bool { return r.changed[i].key < r.changed[j].key })
	out := make([]*api.BaseValueStatus, 0, len(r.changed))
	for i, n := range r.changed {
		if i > 0 && r.changed[i-1].key == n.key {
			continue
		}
		if cur := s.g.get(n.key); cur != nil && cur.base == nil {
			out = append(out, baseStatus(cur))
		} else {
			out = append(out, &api.BaseValueStatus{Value: &api.ValueStatus{Key: n.key, State: api.ValueStateRemoved, LastOperation: api.OpDelete}})
		}
	}
	s.watch.publish(out)
}

func (s *Scheduler) logPlan(rec *api.RecordedTxn) {
	s.logger.Debug("transaction planned", "txn", rec.SeqNum, "type", rec.TxnType.String(),
		"resync", rec.ResyncType.String(), "values", len(rec.Values), "planned", len(rec.Planned))
	if s.opts.TxnLog != nil {
		s.txnLogMu.Lock()
		defer s.txnLogMu.Unlock()
		if err := txnlog.WritePlan(s.opts.TxnLog, rec, txnlog.Options{MaxItems: s.opts.TxnLogMaxItems}); err != nil {
			s.logger.Warn("writing the transaction log", "txn", rec.SeqNum, "error", err)
		}
	}
}

func (s *Scheduler) logResult(rec *api.RecordedTxn, errors int) {
	level := s.logger.Debug
	if errors > 0 {
		level = s.logger.Warn
	}
	level("transaction done", "txn", rec.SeqNum, "type", rec.TxnType.String(),
		"executed", len(rec.Executed), "errors", errors, "duration", rec.Stop.Sub(rec.Start).Round(time.Microsecond))
	if s.opts.TxnLog != nil {
		s.txnLogMu.Lock()
		defer s.txnLogMu.Unlock()
		if err := txnlog.WriteResult(s.opts.TxnLog, rec, txnlog.Options{MaxItems: s.opts.TxnLogMaxItems}); err != nil {
			s.logger.Warn("writing the transaction log", "txn", rec.SeqNum, "error", err)
		}
	}
}

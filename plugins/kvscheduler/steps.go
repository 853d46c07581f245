package kvscheduler

import (
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Execution of a transaction is optimistic. The simulation does not only make
// the plan: it leaves the graph as the plan ends and records the descriptor
// calls (steps) the plan needs. Executing the transaction is then calling
// those steps in order. When every step succeeds, the graph is already right.
// When step k fails, the graph is rolled back with the undo log and the
// algorithm runs again with a replay executor that returns the recorded
// results of steps 0..k-1 without calling anything, and the recorded error of
// step k; from there on it calls the descriptors. The algorithm is
// deterministic, so the replay takes the path the failure leads to, and
// revert, retries and best-effort continuation work as if the transaction
// had run for real from the start.
//
// While the steps run, readers of the graph see the statuses the plan leads
// to; watchers are told when the transaction ends.

// step is one descriptor call of a plan.
type step struct {
	n *node
	// key and d are the node's key and descriptor: executing the steps
	// need not load the nodes again (in a big transaction, each load would
	// miss the caches).
	key      string
	d        *api.KVDescriptor
	from, to proto.Message // create: to; update: from -> to; delete: from
	// meta is the metadata to pass to Update or Delete, unless metaFrom
	// names the earlier step of the transaction that produced it.
	meta     any
	metaFrom int32
	op       api.TxnOperation
	// For descriptors with Batch (see opBatch): alone, the value has AnyOf
	// or Exclusive dependencies; related, the nodes its value depends on
	// and derives from, as the plan had them at the step.
	alone   bool
	related []*node
}

// planStep records a descriptor call of the simulation.
func (r *txnRun) planStep(n *node, op api.TxnOperation, from, to proto.Message) {
	st := step{n: n, key: n.key, d: n.desc.d, op: op, from: from, to: to, meta: n.metadata, metaFrom: -1}
	if n.stepRun == r.id {
		st.metaFrom = n.step
	}
	n.stepRun, n.step = r.id, int32(r.steps.len())
	if st.d.Batch != nil {
		st.alone, st.related = batchRelations(n)
	}
	r.steps.add(st)
}

// batchRelations returns what decides whether a step of n may share a
// batch: whether n has AnyOf or Exclusive dependencies (alone), and the
// nodes its Key dependencies point to, with the bases they derive from, and
// n's own bases. Taken when the step is planned: a delete's node leaves the
// graph with its edges right after.
func batchRelations(n *node) (alone bool, related []*node) {
	for i := range n.deps {
		e := &n.deps[i]
		if e.dep.Key == "" {
			return true, nil
		}
		for t := e.target; t != nil; t = t.base {
			related = append(related, t)
		}
	}
	for b := n.base; b != nil; b = b.base {
		related = append(related, b)
	}
	return false, related
}

// replayLog is what a replay executor returns: the results of the steps
// executed before the failure, the failure (failAt == len(steps) when every
// step succeeded and the simulation itself stopped on a failure it could
// foresee, as in revert mode), and the results of the steps executed with
// the failed one in its batch (after it: rest).
type replayLog struct {
	steps  *chunks[step]
	md     []any // results of the attempted steps (nil: none has metadata)
	failAt int
	err    error
	pos    int
	off    bool
	// rest are the steps after failAt that were executed in its batch, by
	// key and operation, until the re-run makes their calls; restErr their
	// failures.
	rest    map[stepID]int
	restErr map[int]error
}

// stepID names a step of a plan: a key appears at most once per operation
// in a batch.
type stepID struct {
	key string
	op  api.TxnOperation
}

// replayed returns the recorded result of the next descriptor call of a
// re-run, when it is one that was already executed (or the one that failed).
func (r *txnRun) replayed(rp *replayLog, n *node, op api.TxnOperation) (md any, err error, ok bool) {
	if rp.off {
		return nil, nil, false
	}
	if rp.pos > rp.failAt || rp.pos >= rp.steps.len() {
		// After the failure: the rest of its batch, in whatever order the
		// re-run calls them (the failure may change what comes first).
		i, found := rp.rest[stepID{n.key, op}]
		if !found {
			rp.off = len(rp.rest) == 0
			return nil, nil, false
		}
		delete(rp.rest, stepID{n.key, op})
		if err := rp.restErr[i]; err != nil {
			return nil, err, true
		}
		if rp.md == nil {
			return nil, nil, true
		}
		return rp.md[i], nil, true
	}
	if st := rp.steps.at(rp.pos); st.key != n.key || st.op != op {
		// Cannot happen while the algorithm is deterministic; say so loudly
		// rather than hide it, and call the SB from here on.
		r.s.logger.Error("replay of a failed transaction diverged from its plan",
			"expected", fmt.Sprintf("%s %s", st.op, st.key), "got", fmt.Sprintf("%s %s", op, n.key))
		rp.off = true
		return nil, nil, false
	}
	i := rp.pos
	rp.pos++
	if i == rp.failAt {
		return nil, rp.err, true
	}
	if rp.md == nil {
		return nil, nil, true
	}
	return rp.md[i], nil, true
}

// settleUnreplayed takes into the graph what the steps executed in the
// failed step's batch, and not called again by the re-run (it took another
// way after the failure), did in the SB: a failed one is refreshed like any
// failed value; the effect of one that succeeded is known (applied value
// and metadata as the call left them), and the value is reconciled again
// by a follow-up transaction, which brings it back to what is intended.
func (r *txnRun) settleUnreplayed(rp *replayLog) {
	if len(rp.rest) == 0 {
		return
	}
	idx := slices.Sorted(maps.Values(rp.rest))
	r.s.logger.Warn("operations executed in a batch with a failed one were not made again by the re-run; taking what they did into the graph",
		"operations", len(idx), "first", rp.steps.at(idx[0]).key)
	for _, i := range idx {
		st := rp.steps.at(i)
		n := st.n
		if !n.inGraph {
			r.s.logger.Warn("an object created in a batch belongs to no value any more; the next resync removes it", "key", st.key)
			continue
		}
		if rp.restErr[i] != nil {
			r.failed = append(r.failed, n)
			continue
		}
		applied := st.to
		if st.op == api.OpDelete {
			applied = nil
		}
		r.g.setApplied(n, applied)
		if st.d.WithMetadata {
			var md any
			if applied != nil && rp.md != nil {
				md = rp.md[i]
			}
			r.g.setMetadata(n, md, true)
		}
		if applied == nil && n.intended != nil {
			r.g.setStatus(n, status{state: api.ValueStateMissing, lastOp: n.lastOp, err: n.err})
		}
		root := n
		for root.base != nil {
			root = root.base
		}
		r.s.scope.RequestReconcile(root.key)
	}
	clear(rp.rest)
}

// execResult is what executing a plan's steps did.
type execResult struct {
	done      int   // steps that succeeded before the first failure
	attempted int   // steps executed: done, the failure and the rest of its batch
	md        []any // results of the attempted steps (nil: none has metadata)
	err       error // the first failure
	restErr   map[int]error
}

// replayLog returns the log a re-run replays.
func (x *execResult) replayLog(steps *chunks[step]) *replayLog {
	rp := &replayLog{steps: steps, md: x.md, failAt: x.done, err: x.err, restErr: x.restErr}
	for i := x.done + 1; i < x.attempted; i++ {
		if rp.rest == nil {
			rp.rest = map[stepID]int{}
		}
		st := steps.at(i)
		rp.rest[stepID{st.key, st.op}] = i
	}
	return rp
}

// executeSteps calls the steps of a plan in order, independent steps of a
// descriptor with Batch together (unless batching is off: revert mode), and
// stops after the first failure (with the rest of its batch).
func (s *Scheduler) executeSteps(steps *chunks[step], batching bool) execResult {
	x := execResult{done: steps.len()}
	failed := false
	metaOf := func(st *step) any {
		if st.metaFrom >= 0 {
			if x.md != nil {
				return x.md[st.metaFrom]
			}
			return nil
		}
		return st.meta
	}
	result := func(i int, st *step, out any, err error) {
		if err != nil {
			if !failed {
				failed, x.done, x.err = true, i, err
			} else {
				if x.restErr == nil {
					x.restErr = map[int]error{}
				}
				x.restErr[i] = err
			}
			return
		}
		if st.d.WithMetadata {
			if x.md == nil {
				x.md = make([]any, steps.len())
			}
			x.md[i] = out
			publishMetadata(st.n, out) // later steps may look it up
		}
	}
	var b opBatch
	flush := func() {
		if len(b.idx) == 0 {
			return
		}
		if len(b.idx) == 1 {
			st := b.steps[0]
			out, err := s.invoke(st.d, st.op, st.key, st.from, st.to, metaOf(st))
			result(b.idx[0], st, out, err)
		} else {
			ops := make([]api.BatchOp, len(b.idx))
			for k, st := range b.steps {
				ops[k] = api.BatchOp{Op: st.op, Key: st.key, From: st.from, To: st.to, Metadata: metaOf(st)}
			}
			s.invokeBatch(b.d, ops)
			for k, i := range b.idx {
				out, err, _ := ops[k].Result()
				result(i, b.steps[k], out, err)
			}
		}
		x.attempted = b.idx[len(b.idx)-1] + 1
		b.reset()
	}
	maxBatch := s.opts.MaxBatch
	steps.each(func(i int, st *step) {
		if failed {
			return
		}
		if batching && maxBatch > 1 && st.d.Batch != nil && !st.alone {
			if !b.fits(st) || len(b.idx) >= maxBatch {
				flush()
				if failed {
					return
				}
			}
			b.add(i, st)
			return
		}
		flush()
		if failed {
			return
		}
		out, err := s.invoke(st.d, st.op, st.key, st.from, st.to, metaOf(st))
		result(i, st, out, err)
		x.attempted = i + 1
	})
	if !failed {
		flush()
	}
	if !failed {
		x.attempted = steps.len()
	}
	return x
}

// opBatch is the batch being collected: consecutive steps of one
// descriptor with Batch, none of which the dependency graph orders after
// another.
type opBatch struct {
	d     *api.KVDescriptor
	idx   []int
	steps []*step
	// members are the nodes of the batch's steps; related the nodes they
	// depend on or derive from.
	members, related map[*node]struct{}
}

func (b *opBatch) reset() {
	b.d, b.idx = nil, b.idx[:0]
	clear(b.steps)
	b.steps = b.steps[:0]
	clear(b.members)
	clear(b.related)
}

// fits tells whether st may join the batch: same descriptor, another node,
// and no relation either way with a member.
func (b *opBatch) fits(st *step) bool {
	if len(b.idx) == 0 {
		return true
	}
	if st.d != b.d {
		return false
	}
	if _, ok := b.members[st.n]; ok {
		return false
	}
	if _, ok := b.related[st.n]; ok {
		return false
	}
	for _, n := range st.related {
		if _, ok := b.members[n]; ok {
			return false
		}
	}
	return true
}

func (b *opBatch) add(i int, st *step) {
	if b.members == nil {
		b.members, b.related = map[*node]struct{}{}, map[*node]struct{}{}
	}
	b.d = st.d
	b.idx = append(b.idx, i)
	b.steps = append(b.steps, st)
	b.members[st.n] = struct{}{}
	for _, n := range st.related {
		b.related[n] = struct{}{}
	}
}

// finishSteps stores the metadata the executed steps returned in the nodes
// the simulation left without it.
func (r *txnRun) finishSteps(md []any) {
	if md == nil {
		return // no step has metadata
	}
	r.steps.each(func(i int, st *step) {
		if !st.d.WithMetadata {
			return
		}
		n := st.n
		if int(n.step) != i || n.stepRun != r.id {
			return // not the node's last step
		}
		if n.applied == nil {
			n.metadata = nil
		} else {
			n.metadata = md[i]
		}
		publishMetadata(n, n.metadata)
	})
}

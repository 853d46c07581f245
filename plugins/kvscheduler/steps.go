package kvscheduler

import (
	"fmt"
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
	// related, for descriptors with Batch only: the nodes its value depends
	// on and derives from, as the plan had them at the step (see
	// executeSteps); nil for a value with Exclusive dependencies or an
	// AnyOf one without key prefixes, which is never batched.
	related *[]*node
}

// planStep records a descriptor call of the simulation.
func (r *txnRun) planStep(n *node, op api.TxnOperation, from, to proto.Message) {
	st := step{n: n, key: n.key, d: n.desc.d, op: op, from: from, to: to, meta: n.metadata, metaFrom: -1}
	if n.stepRun == r.id {
		st.metaFrom = n.step
	}
	n.stepRun, n.step = r.id, int32(r.steps.len())
	if st.d.Batch != nil {
		if alone, related := batchRelations(r.g, n); !alone {
			st.related = &related
		}
	}
	r.steps.add(st)
}

// maxAnyOfScan bounds the keys batchRelations looks at under the prefixes
// of one AnyOf dependency (a value's own interface's addresses are a few):
// past it the value stays alone rather than cost a scan per step.
const maxAnyOfScan = 256

// batchRelations returns what decides whether a step of n may share a
// batch: whether n has Exclusive dependencies, or AnyOf ones without key
// prefixes (alone), and the nodes its dependencies point to, with the bases
// they derive from, and n's own bases. For an AnyOf dependency those are
// every node under its prefixes its selector accepts (the ones that
// satisfy it and the ones that could): a step of one of them earlier in
// the plan (the address that makes a gateway reachable, created in the same
// transaction) runs in an earlier wave, as for a Key dependency. An AnyOf
// without prefixes would mean a scan of the whole graph per step, and one
// whose prefixes hold more than maxAnyOfScan keys a long one: such a value
// stays alone. Taken when the step is planned: a delete's node leaves
// the graph with its edges right after.
func batchRelations(g *graph, n *node) (alone bool, related []*node) {
	add := func(t *node) {
		for ; t != nil; t = t.base {
			related = append(related, t)
		}
	}
	for i := range n.deps {
		e := &n.deps[i]
		switch {
		case e.dep.Key != "":
			add(e.target)
		case e.dep.Exclusive != "" || len(e.dep.AnyOf.KeyPrefixes) == 0:
			return true, nil
		default:
			sel := e.dep.AnyOf.KeySelector
			visited := 0
			for _, p := range e.dep.AnyOf.KeyPrefixes {
				under := g.prefixNodes(p, maxAnyOfScan+1-visited)
				if visited += len(under); visited > maxAnyOfScan {
					return true, nil
				}
				for _, t := range under {
					if t != n && (sel == nil || sel(t.key)) {
						add(t)
					}
				}
			}
		}
	}
	add(n.base)
	return false, related
}

// replayLog is what a replay executor returns: the results of the steps
// executed. The steps before the first one not executed with success (gap:
// the first failure, or a step not executed yet when the execution stopped)
// are replayed in order; the others executed (batches run steps of
// independent values out of plan order, see executeSteps), the failure
// among them, by key and operation, in whatever order the re-run makes
// those calls. gap == len(steps) when every step succeeded and the
// simulation itself stopped on a failure it could foresee (revert mode).
type replayLog struct {
	steps *chunks[step]
	md    []any // results of the steps (nil: none has metadata)
	gap   int
	pos   int
	off   bool
	// rest are the steps executed after gap, by key and operation (in plan
	// order for one key and operation), until the re-run makes their
	// calls; errs the failures among them.
	rest map[stepID][]int
	errs map[int]error
}

// stepID names a step of a plan.
type stepID struct {
	key string
	op  api.TxnOperation
}

// replayed returns the recorded result of the next descriptor call of a
// re-run, when it is one that was already executed.
func (r *txnRun) replayed(rp *replayLog, n *node, op api.TxnOperation) (md any, err error, ok bool) {
	if rp.off {
		return nil, nil, false
	}
	if rp.pos >= rp.gap {
		id := stepID{n.key, op}
		idx, found := rp.rest[id]
		if !found {
			rp.off = len(rp.rest) == 0
			return nil, nil, false
		}
		i := idx[0]
		if len(idx) == 1 {
			delete(rp.rest, id)
		} else {
			rp.rest[id] = idx[1:]
		}
		return rp.result(i)
	}
	if st := rp.steps.at(rp.pos); st.key != n.key || st.op != op {
		// The re-run does not make the calls in the plan's order: a
		// descriptor answers differently after its own calls (a comparator
		// that follows what an Update changed). The calls made are the
		// transaction's all the same: those from here to the gap are kept
		// by key and operation, as the ones after it are, so that the
		// re-run replays each one it makes (none is made twice), and
		// settleUnreplayed takes in those it does not make.
		r.s.logger.Warn("the re-run of a failed transaction makes its calls in another order than its plan; replaying them by key",
			"expected", fmt.Sprintf("%s %s", st.op, st.key), "got", fmt.Sprintf("%s %s", op, n.key))
		rp.keepByKey(rp.pos)
		return r.replayed(rp, n, op)
	}
	i := rp.pos
	rp.pos++
	return rp.result(i)
}

// keepByKey moves the steps from pos to the gap into rest (by key and
// operation, in plan order for each), and the gap to pos.
func (rp *replayLog) keepByKey(pos int) {
	if rp.rest == nil {
		rp.rest = map[stepID][]int{}
	}
	for i := rp.gap - 1; i >= pos; i-- { // before the later steps of the same key
		st := rp.steps.at(i)
		id := stepID{st.key, st.op}
		rp.rest[id] = append([]int{i}, rp.rest[id]...)
	}
	rp.gap = pos
}

func (rp *replayLog) result(i int) (md any, err error, ok bool) {
	if err := rp.errs[i]; err != nil {
		return nil, err, true
	}
	if rp.md == nil {
		return nil, nil, true
	}
	return rp.md[i], nil, true
}

// settleUnreplayed takes into the graph what the steps executed after the
// gap, and not called again by the re-run (it took another way after the
// failure), did in the SB: a failed one is refreshed like any failed
// value; the effect of one that succeeded is known (applied value and
// metadata as the call left them), and the value is reconciled again by a
// follow-up transaction, which brings it back to what is intended.
func (r *txnRun) settleUnreplayed(rp *replayLog) {
	if len(rp.rest) == 0 {
		return
	}
	var idx []int
	for _, is := range rp.rest {
		idx = append(idx, is...)
	}
	slices.Sort(idx)
	r.s.logger.Warn("operations executed were not made again by the re-run after a failure; taking what they did into the graph",
		"operations", len(idx), "first", rp.steps.at(idx[0]).key)
	for _, i := range idx {
		st := rp.steps.at(i)
		n := st.n
		if !n.inGraph {
			r.s.logger.Warn("an object created in a batch belongs to no value any more; the next resync removes it", "key", st.key)
			continue
		}
		// Recorded as executed: it was.
		prev := status{state: n.state, lastOp: n.lastOp, err: n.err, details: n.details}
		if err := rp.errs[i]; err != nil {
			r.recordOp(n, st.op, st.from, st.to, prev, err, opFlags{})
			r.failed = append(r.failed, n)
			continue
		}
		r.recordOp(n, st.op, st.from, st.to, prev, nil, opFlags{})
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

// Outcomes of the steps of an execution.
const (
	notRun uint8 = iota
	succeeded
	failedStep
)

// execResult is what executing a plan's steps did.
type execResult struct {
	done    int   // the gap: steps before it all succeeded (len: all did)
	md      []any // results of the steps (nil: none has metadata)
	outcome []uint8
	errs    map[int]error
}

// replayLog returns the log a re-run replays.
func (x *execResult) replayLog(steps *chunks[step]) *replayLog {
	rp := &replayLog{steps: steps, md: x.md, gap: x.done, errs: x.errs}
	if x.outcome == nil && x.done < steps.len() {
		// One at a time: the failure is the one step after the gap.
		st := steps.at(x.done)
		rp.rest = map[stepID][]int{{st.key, st.op}: {x.done}}
		return rp
	}
	for i := x.done; i < len(x.outcome); i++ {
		if x.outcome[i] == notRun {
			continue
		}
		if rp.rest == nil {
			rp.rest = map[stepID][]int{}
		}
		st := steps.at(i)
		id := stepID{st.key, st.op}
		rp.rest[id] = append(rp.rest[id], i)
	}
	return rp
}

// executeSteps calls the steps of a plan. Without batching (revert mode, or
// no descriptor of the plan has Batch) it calls them one at a time, in
// order, and stops at the first failure. With batching, the steps of
// descriptors with Batch run in waves: a step's wave comes after the waves
// of the earlier steps it is related to (the same node, a node it depends
// on or derives from, a node that depends on or derives from it), so a
// wave holds steps the dependency graph does not order among themselves,
// and within a wave the steps of one descriptor go to its Batch together
// (at most MaxBatch at a time), in plan order. A step of a descriptor
// without Batch, or of a value with Exclusive dependencies or an AnyOf one
// without key prefixes (batchRelations), is a barrier: it runs alone, after every step before it and before every step
// after it. Execution stops after the batch with the first failure.
func (s *Scheduler) executeSteps(steps *chunks[step], batching bool) execResult {
	n := steps.len()
	x := execResult{done: n}
	metaOf := func(st *step) any {
		if st.metaFrom >= 0 {
			if x.md != nil {
				return x.md[st.metaFrom]
			}
			return nil
		}
		return st.meta
	}
	failed := false
	result := func(i int, st *step, out any, err error) {
		if err != nil {
			failed = true
			if x.outcome != nil {
				x.outcome[i] = failedStep
			} else {
				x.done = i // one at a time: every step before it succeeded
			}
			if x.errs == nil {
				x.errs = map[int]error{}
			}
			x.errs[i] = err
			return
		}
		if x.outcome != nil {
			x.outcome[i] = succeeded
		}
		if st.d.WithMetadata {
			if x.md == nil {
				x.md = make([]any, n)
			}
			x.md[i] = out
			publishMetadata(st.n, out) // later steps may look it up
		}
	}
	single := func(i int, st *step) {
		out, err := s.invoke(st.d, st.op, st.key, st.from, st.to, metaOf(st))
		result(i, st, out, err)
	}
	batchable := func(st *step) bool { return st.d.Batch != nil && st.related != nil }
	if batching && s.opts.MaxBatch > 1 {
		batching = false
		steps.each(func(_ int, st *step) { batching = batching || batchable(st) })
	}
	if !batching {
		steps.each(func(i int, st *step) {
			if !failed {
				single(i, st)
			}
		})
	} else {
		// Out of plan order: the outcome of every step tells the gap.
		x.outcome = make([]uint8, n)
		all := make([]*step, 0, n)
		steps.each(func(_ int, st *step) { all = append(all, st) })
		for i := 0; i < n && !failed; {
			if !batchable(all[i]) {
				single(i, all[i])
				i++
				continue
			}
			j := i + 1
			for j < n && batchable(all[j]) {
				j++
			}
			s.runWaves(all, i, j, metaOf, result, &failed)
			i = j
		}
	}
	for i, o := range x.outcome {
		if o != succeeded {
			x.done = i
			break
		}
	}
	return x
}

// runWaves runs the batchable steps all[from:to] in waves (see
// executeSteps), stopping after a batch in which a step failed.
func (s *Scheduler) runWaves(all []*step, from, to int, metaOf func(*step) any, result func(int, *step, any, error), failed *bool) {
	// wave(j) = 1 + the highest wave of an earlier step of the same node,
	// of one related to the node, or of one of the nodes it is related to.
	// Sized for a step per node (a bulk create): grown step by step, they
	// cost the 14,000 steps of the VPP create ~0.5-1 ms more.
	asNode := make(map[*node]int, to-from)    // highest wave of a step of the node
	asRelated := make(map[*node]int, to-from) // highest wave of a step related to the node
	waves := [][]int{}
	for j := from; j < to; j++ {
		st := all[j]
		w := max(asNode[st.n], asRelated[st.n])
		for _, r := range *st.related {
			w = max(w, asNode[r])
		}
		w++ // waves count from 1
		asNode[st.n] = w
		for _, r := range *st.related {
			asRelated[r] = max(asRelated[r], w)
		}
		for len(waves) < w {
			waves = append(waves, nil)
		}
		waves[w-1] = append(waves[w-1], j)
	}
	maxBatch := s.opts.MaxBatch
	for _, wave := range waves {
		// The descriptors of the wave, in the order of their first step.
		var descs []*api.KVDescriptor
		byDesc := map[*api.KVDescriptor][]int{}
		for _, j := range wave {
			d := all[j].d
			if _, ok := byDesc[d]; !ok {
				descs = append(descs, d)
			}
			byDesc[d] = append(byDesc[d], j)
		}
		for _, d := range descs {
			idx := byDesc[d]
			for len(idx) > 0 {
				k := min(len(idx), maxBatch)
				s.runBatch(d, all, idx[:k], metaOf, result)
				idx = idx[k:]
				if *failed {
					return
				}
			}
		}
	}
}

// runBatch calls the steps idx of descriptor d: one alone through Create,
// Update or Delete, more through Batch.
func (s *Scheduler) runBatch(d *api.KVDescriptor, all []*step, idx []int, metaOf func(*step) any, result func(int, *step, any, error)) {
	if len(idx) == 1 {
		st := all[idx[0]]
		out, err := s.invoke(st.d, st.op, st.key, st.from, st.to, metaOf(st))
		result(idx[0], st, out, err)
		return
	}
	ops := make([]api.BatchOp, len(idx))
	for k, i := range idx {
		st := all[i]
		ops[k] = api.BatchOp{Op: st.op, Key: st.key, From: st.from, To: st.to, Metadata: metaOf(st)}
	}
	s.invokeBatch(d, ops)
	for k, i := range idx {
		out, err, _ := ops[k].Result()
		result(i, all[i], out, err)
	}
}

// finishSteps stores the metadata the executed steps returned in the nodes
// the simulation left without it. The metadata maps have it already:
// executeSteps published each step's as it succeeded, in execution order,
// a node's last step last (publishing it again cost the Linux route index
// as much as the first time: 50 ms of a 10,000-route transaction); only a
// node left without an applied value whose last step returned metadata
// (none of the descriptors' operations does that) is published again.
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
			if md[i] != nil {
				publishMetadata(n, nil)
			}
		} else {
			n.metadata = md[i]
		}
	})
}

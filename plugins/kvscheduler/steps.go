package kvscheduler

import (
	"fmt"

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
}

// planStep records a descriptor call of the simulation.
func (r *txnRun) planStep(n *node, op api.TxnOperation, from, to proto.Message) {
	st := step{n: n, key: n.key, d: n.desc.d, op: op, from: from, to: to, meta: n.metadata, metaFrom: -1}
	if n.stepRun == r.id {
		st.metaFrom = n.step
	}
	n.stepRun, n.step = r.id, int32(r.steps.len())
	r.steps.add(st)
}

// replayLog is what a replay executor returns: the results of the steps
// executed before the failure, and the failure (failAt == len(steps) when
// every step succeeded and the simulation itself stopped on a failure it
// could foresee, as in revert mode).
type replayLog struct {
	steps  *chunks[step]
	md     []any // results of steps[:failAt] (nil: none has metadata)
	failAt int
	err    error
	pos    int
	off    bool
}

// replayed returns the recorded result of the next descriptor call of a
// re-run, when it is one that was already executed (or the one that failed).
func (r *txnRun) replayed(rp *replayLog, n *node, op api.TxnOperation) (md any, err error, ok bool) {
	if rp.off {
		return nil, nil, false
	}
	if rp.pos > rp.failAt || rp.pos >= rp.steps.len() {
		rp.off = true
		return nil, nil, false
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

// executeSteps calls the steps of a plan in order. It returns how many
// succeeded, their results (metadata; nil when no step's descriptor has
// metadata), and the error of the first failure.
func (s *Scheduler) executeSteps(steps *chunks[step]) (int, []any, error) {
	var md []any
	done := 0
	var failure error
	steps.each(func(i int, st *step) {
		if failure != nil {
			return
		}
		meta := st.meta
		if st.metaFrom >= 0 {
			meta = nil
			if md != nil {
				meta = md[st.metaFrom]
			}
		}
		d := st.d
		out, err := s.invoke(d, st.op, st.key, st.from, st.to, meta)
		if err != nil {
			failure = err
			return
		}
		if d.WithMetadata {
			if md == nil {
				md = make([]any, steps.len())
			}
			md[i] = out
			publishMetadata(st.n, out) // later steps may look it up
		}
		done++
	})
	return done, md, failure
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

package kvscheduler

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// executor makes the descriptor calls a run of the algorithm decides on. A
// run has one, chosen when it starts: the simulation's (planExec) calls
// nothing and records the calls as the plan's steps; the real one (sbExec)
// calls the descriptors; a re-run after a failure (replayExec) returns the
// recorded results of the calls already made, then calls for real. The
// algorithm does not know which it runs with, which is what makes the plan
// what execution does.
type executor interface {
	// call performs op on n: Create of n.intended, Update of n.applied to
	// n.intended, or Delete of n.applied, with n.metadata. It returns the
	// metadata the call gave (Update: n.metadata when it failed).
	call(r *txnRun, n *node, op api.TxnOperation) (any, error)
	// real tells whether calls reach the SB: metadata is then published
	// and operations are remembered for revert.
	real() bool
}

// planExec is the simulation's executor: every call succeeds at once; with
// plan set, each is recorded as a step (see steps.go).
type planExec struct{ plan bool }

func (e planExec) call(r *txnRun, n *node, op api.TxnOperation) (any, error) {
	if e.plan {
		switch op {
		case api.OpCreate:
			r.planStep(n, op, nil, n.intended)
		case api.OpUpdate:
			r.planStep(n, op, n.applied, n.intended)
		case api.OpDelete:
			r.planStep(n, op, n.applied, nil)
		}
	}
	if op == api.OpUpdate {
		return n.metadata, nil
	}
	return nil, nil
}

func (planExec) real() bool { return false }

// sbExec calls the descriptors.
type sbExec struct{}

func (sbExec) call(r *txnRun, n *node, op api.TxnOperation) (any, error) {
	switch op {
	case api.OpCreate:
		return r.s.invoke(n.desc.d, op, n.key, nil, n.intended, nil)
	case api.OpUpdate:
		md, err := r.s.invoke(n.desc.d, op, n.key, n.applied, n.intended, n.metadata)
		if err != nil {
			return n.metadata, err
		}
		return md, nil
	default:
		return r.s.invoke(n.desc.d, op, n.key, n.applied, nil, n.metadata)
	}
}

func (sbExec) real() bool { return true }

// replayExec is the executor of a re-run after step failAt of the plan
// failed: it returns the recorded results of the steps before it and its
// error, then calls the descriptors.
type replayExec struct{ log *replayLog }

func (e replayExec) call(r *txnRun, n *node, op api.TxnOperation) (any, error) {
	if md, err, ok := r.replayed(e.log, n, op); ok {
		if op == api.OpUpdate && err != nil {
			return n.metadata, err
		}
		return md, err
	}
	return sbExec{}.call(r, n, op)
}

func (replayExec) real() bool { return true }

// invoke is the one guarded call of a descriptor's Create, Update or Delete
// (Retrieve: retrieveGuarded): made with the callback's context and lock
// (see callback), a panic turned into a non-retriable error that names the
// descriptor, operation and key, and the observer told how long it took.
// Create uses to, Update from, to and meta, Delete from and meta.
func (s *Scheduler) invoke(d *api.KVDescriptor, op api.TxnOperation, key string, from, to proto.Message, meta any) (out any, err error) {
	var start time.Time
	obs := s.opts.Observer
	if obs != nil {
		start = s.clock.Now()
	}
	s.callback(d.Name, func(ctx context.Context) {
		defer func() {
			if p := recover(); p != nil {
				err = api.NonRetriable(fmt.Errorf("descriptor %s: %s of %s panicked: %v", d.Name, op, key, p))
			}
		}()
		switch op {
		case api.OpCreate:
			out, err = d.Create(ctx, key, to)
		case api.OpUpdate:
			out, err = d.Update(ctx, key, from, to, meta)
		case api.OpDelete:
			err = d.Delete(ctx, key, from, meta)
		}
	})
	if obs != nil {
		obs.OpDone(d.Name, op, err, s.clock.Now().Sub(start))
	}
	return out, err
}

// invokeBatch is invoke for a batch of operations of descriptor d (see
// api.BatchOp): one guarded call of d.Batch; a panic, or an operation left
// without a result, fails the operations without one with a non-retriable
// error naming the descriptor, operation and key. The observer is told of
// each operation, with the batch's time shared among them.
func (s *Scheduler) invokeBatch(d *api.KVDescriptor, ops []api.BatchOp) {
	var start time.Time
	obs := s.opts.Observer
	if obs != nil {
		start = s.clock.Now()
	}
	var panicked any
	s.callback(d.Name, func(ctx context.Context) {
		defer func() { panicked = recover() }()
		d.Batch(ctx, ops)
	})
	for i := range ops {
		op := &ops[i]
		if _, _, finished := op.Result(); finished {
			continue
		}
		if panicked != nil {
			op.Fail(api.NonRetriable(fmt.Errorf("descriptor %s: Batch panicked before the %s of %s: %v", d.Name, op.Op, op.Key, panicked)))
		} else {
			op.Fail(api.NonRetriable(fmt.Errorf("descriptor %s: Batch returned without a result for the %s of %s", d.Name, op.Op, op.Key)))
		}
	}
	if obs != nil {
		each := s.clock.Now().Sub(start) / time.Duration(len(ops))
		for i := range ops {
			_, err, _ := ops[i].Result()
			obs.OpDone(d.Name, ops[i].Op, err, each)
		}
	}
}

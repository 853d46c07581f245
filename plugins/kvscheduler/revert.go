package kvscheduler

// Revert of a transaction stopped by a failure (TxnOptions.Revert).

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// revert undoes a transaction stopped by a failure: the failed key is
// refreshed, every executed operation is undone in reverse order, and the
// graph returns to its state before the transaction.
func (s *Scheduler) revert(r *txnRun) {
	failed := r.failed[len(r.failed)-1]
	before := failed.applied // what the SB had before the failed operation
	now, nowMeta := r.readBack(failed)

	undo := make([]undoStep, 0, len(r.done)+1)
	if failed.desc != nil && (now != nil || before != nil) && !(now != nil && before != nil && r.equivalent(failed, now, before)) {
		undo = append(undo, undoStep{failed, now, before, nowMeta})
	}
	for i := len(r.done) - 1; i >= 0; i-- {
		d := r.done[i]
		undo = append(undo, undoStep{d.n, d.newValue, d.prevValue, d.newMeta})
	}
	s.undoTxn(r, undo)
}

// revertUnverified undoes a transaction whose verification failed
// (TxnOptions.Verify): every executed operation is undone in reverse
// order, except that a value the SB does not hold as applied is taken in
// one call, at the place of its last operation, from what the SB holds to
// what it had before the transaction (its operations did not do what they
// said: undoing them one by one would act on what is not there). A value
// that failed without an operation of its own (a base read back for its
// derived value) keeps what the SB holds, MISSING.
func (s *Scheduler) revertUnverified(r *txnRun, failures []verifyFailure) {
	byKey := make(map[string]*verifyFailure, len(failures))
	for i := range failures {
		byKey[failures[i].key] = &failures[i]
	}
	before := make(map[string]proto.Message, len(failures))
	for _, d := range r.done {
		if _, ok := byKey[d.n.key]; ok {
			if _, seen := before[d.n.key]; !seen {
				before[d.n.key] = d.prevValue
			}
		}
	}
	undo := make([]undoStep, 0, len(r.done))
	taken := make(map[string]bool, len(failures))
	for i := len(r.done) - 1; i >= 0; i-- {
		d := r.done[i]
		f := byKey[d.n.key]
		switch {
		case f == nil:
			undo = append(undo, undoStep{d.n, d.newValue, d.prevValue, d.newMeta})
		case !taken[f.key]:
			taken[f.key] = true
			to := before[f.key]
			if (f.got != nil || to != nil) && !(f.got != nil && to != nil && r.equivalent(d.n, f.got, to)) {
				undo = append(undo, undoStep{d.n, f.got, to, f.gotMeta})
			}
		}
	}
	s.undoTxn(r, undo)
	for i := range failures {
		f := &failures[i]
		if _, ok := before[f.key]; ok {
			continue
		}
		if n := s.g.get(f.key); n != nil {
			f.n = n
			r.markUnverified(f)
		}
	}
}

// undoStep is one operation of a revert: n from what the SB holds to what
// it had before (nil: absent), meta the metadata of what it holds.
type undoStep struct {
	n        *node
	from, to proto.Message
	meta     any
}

// undoTxn calls the undo steps in order (recorded with IsRevert), rolls
// the graph back to its state before the transaction and brings in what
// the undo operations changed.
func (s *Scheduler) undoTxn(r *txnRun, undo []undoStep) {
	r.reverting = true
	type outcome struct {
		n   *node
		md  any
		err error
	}
	outcomes := make([]outcome, 0, len(undo))
	for _, u := range undo {
		n, from, to, meta := u.n, u.from, u.to, u.meta
		prev := statusOf(n)
		op, md, err := api.OpUpdate, meta, error(nil)
		switch {
		case to == nil:
			op = api.OpDelete
			if n.desc.d.Delete != nil {
				_, err = s.invoke(n.desc.d, op, n.key, from, nil, meta)
			}
		case from == nil:
			op = api.OpCreate
			if n.desc.d.Create != nil {
				md, err = s.invoke(n.desc.d, op, n.key, nil, to, nil)
			}
		default:
			if n.desc.d.Update != nil {
				md, err = s.invoke(n.desc.d, op, n.key, from, to, meta)
			}
		}
		r.recordOp(n, op, from, to, prev, err, opFlags{})
		outcomes = append(outcomes, outcome{n, md, err})
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

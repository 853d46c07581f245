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

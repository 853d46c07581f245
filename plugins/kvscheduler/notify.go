package kvscheduler

// SB notifications: OBTAINED values that appear, change or go.

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

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
		if prevValue != nil && sameValue(prevValue, kv.value) && n.metadata == kv.metadata {
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
		r.g.setMetadata(n, md, r.exec.real())
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
		if d.applied == nil || !sameValue(d.applied, kv.Value) {
			r.setObtainedValue(d, kv.Value, nil)
		}
		if !was {
			defer r.notifyAvailable(d)
		}
	}
	r.g.setDerived(n, list)
}

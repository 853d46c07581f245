package etcdstatus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// valueModelKeyRoot starts the model key of a value's status; the value's
// key follows.
const valueModelKeyRoot = KeyPrefix + "status/v1/value/"

// ValueKey is the etcd key of the status of the base value valueKey.
func ValueKey(label, valueKey string) string {
	return models.EtcdKey(label, valueModelKeyRoot+valueKey)
}

// ValueKeyPrefix is the etcd prefix of every value's status of the agent
// label (what a fleet view lists).
func ValueKeyPrefix(label string) string { return models.EtcdKey(label, valueModelKeyRoot) }

// ValueStatuses is the scheduler's side of the value statuses
// (*kvscheduler.Scheduler).
type ValueStatuses interface {
	// WatchValueStatus is api.KVScheduler.WatchValueStatus: it never
	// blocks the scheduler and coalesces updates per key.
	WatchValueStatus(ch chan<- *api.BaseValueStatus, selector api.KeySelector) (stop func())
	// ListValueStatuses returns the status of every base value whose key
	// starts with prefix.
	ListValueStatuses(prefix string) []*api.BaseValueStatus
}

// Defaults of the Options of the value statuses.
const (
	// DefaultValueTxnOps is etcd's default --max-txn-ops.
	DefaultValueTxnOps = 128
	// DefaultValueDelay is how long the first change of a burst waits for
	// the others before they are written.
	DefaultValueDelay = 10 * time.Millisecond
)

const (
	// maxValueTxnBytes bounds the values written in one transaction, well
	// under etcd's default request limit (1.5 MiB).
	maxValueTxnBytes = 1 << 20
	// valueChanSize is the buffer between the scheduler's watcher and Run.
	valueChanSize = 1024
	// maxValueDrain bounds the updates taken in at once, so that a constant
	// stream of changes cannot hold up the lease's renewal.
	maxValueDrain = 16 * valueChanSize
)

// values publishes the statuses of the scheduler's values (Options.Values);
// used by Run's goroutine only.
type values struct {
	src       ValueStatuses
	ch        chan *api.BaseValueStatus
	stopWatch func()

	// current is the JSON of every base value's status to have in etcd, by
	// the value's key; dirty are the keys to write: a put of current's
	// JSON, a delete when the key is not in current.
	current map[string]string
	dirty   map[string]struct{}
	// flushAt is when to write dirty (zero: nothing to write).
	flushAt time.Time
}

// startValues starts watching the scheduler's statuses (before any listing,
// so that no change falls between the two).
func (p *Publisher) startValues() {
	if p.opts.Values == nil {
		return
	}
	v := &values{src: p.opts.Values, ch: make(chan *api.BaseValueStatus, valueChanSize),
		current: map[string]string{}, dirty: map[string]struct{}{}}
	v.stopWatch = v.src.WatchValueStatus(v.ch, nil)
	p.values = v
}

func (p *Publisher) stopValues() {
	if p.values != nil {
		p.values.stopWatch()
	}
}

// valueUpdates is the channel of the scheduler's updates (nil without
// value statuses: never ready).
func (p *Publisher) valueUpdates() <-chan *api.BaseValueStatus {
	if p.values == nil {
		return nil
	}
	return p.values.ch
}

// receiveValues takes in st and whatever else is waiting.
func (p *Publisher) receiveValues(st *api.BaseValueStatus) {
	p.values.set(st)
	for range maxValueDrain {
		select {
		case st := <-p.values.ch:
			p.values.set(st)
		default:
			return
		}
	}
}

// set records the latest status of a base value: a change to write, unless
// it is what is to be in etcd already.
func (v *values) set(st *api.BaseValueStatus) {
	key := st.GetValue().GetKey()
	if key == "" {
		return
	}
	switch st.GetValue().GetState() {
	case api.ValueStateRemoved, api.ValueStateNonexistent:
		_, published := v.current[key]
		_, writing := v.dirty[key]
		if !published && !writing {
			return
		}
		delete(v.current, key)
	default:
		value, err := marshalValueStatus(st)
		if err != nil {
			return // cannot happen: marshalValueStatus makes the strings valid
		}
		if old, ok := v.current[key]; ok && old == value {
			return
		}
		v.current[key] = value
	}
	v.changed(key, time.Now().Add(DefaultValueDelay))
}

func (v *values) changed(key string, flushAt time.Time) {
	v.dirty[key] = struct{}{}
	if v.flushAt.IsZero() {
		v.flushAt = flushAt
	}
}

// relist replaces the statuses by the scheduler's: under a new lease
// nothing of them is in etcd, every one is to be put.
func (v *values) relist() {
	v.current = map[string]string{}
	v.dirty = map[string]struct{}{}
	v.flushAt = time.Time{}
	now := time.Now()
	for _, st := range v.src.ListValueStatuses("") {
		if s := st.GetValue().GetState(); s == api.ValueStateRemoved || s == api.ValueStateNonexistent {
			continue
		}
		value, err := marshalValueStatus(st)
		if err != nil {
			continue
		}
		key := st.GetValue().GetKey()
		v.current[key] = value
		v.changed(key, now)
	}
}

// valuesDue is when the values are to be written (zero: nothing to write).
func (p *Publisher) valuesDue() time.Time {
	if p.values == nil || len(p.values.dirty) == 0 || p.lease == 0 {
		return time.Time{}
	}
	if p.retryAt.After(p.values.flushAt) {
		return p.retryAt
	}
	return p.values.flushAt
}

// flushValues writes the changed statuses under the lease, in transactions
// of at most Options.ValueTxnOps operations and maxValueTxnBytes. It stops
// when the lease is to be renewed (Run comes back at once) and on a
// failure (retried with the backoff).
func (p *Publisher) flushValues(ctx context.Context) {
	v := p.values
	ops := make([]clientv3.Op, 0, p.opts.ValueTxnOps)
	keys := make([]string, 0, p.opts.ValueTxnOps)
	size := 0
	commit := func() bool {
		if len(ops) == 0 {
			return true
		}
		cctx, cancel := context.WithTimeout(ctx, p.opTimeout())
		defer cancel()
		if _, err := p.client.Txn(cctx).Then(ops...).Commit(); err != nil {
			switch {
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				p.leaseLost()
				return false // granted, listed and put at the next step
			case errors.Is(err, rpctypes.ErrTooManyOps) && p.opts.ValueTxnOps > 1:
				// The server's --max-txn-ops is below ValueTxnOps: halve it
				// until it fits, and go on at once.
				p.opts.ValueTxnOps /= 2
				p.log.Warn("etcd refuses transactions of so many operations; writing the values' statuses in smaller ones",
					"error", err, "txn_ops", p.opts.ValueTxnOps)
				return false
			}
			p.failed(ctx, fmt.Errorf("putting the values' statuses: %w", err))
			return false
		}
		for _, key := range keys {
			delete(v.dirty, key)
		}
		ops, keys, size = ops[:0], keys[:0], 0
		p.succeeded()
		return time.Now().Before(p.nextKeepAlive)
	}
	for key := range v.dirty {
		etcdKey := ValueKey(p.opts.Label, key)
		value, put := v.current[key]
		if len(ops) == p.opts.ValueTxnOps || (len(ops) > 0 && size+len(etcdKey)+len(value) > maxValueTxnBytes) {
			if !commit() {
				return
			}
		}
		if put {
			ops = append(ops, clientv3.OpPut(etcdKey, value, clientv3.WithLease(p.lease)))
		} else {
			ops = append(ops, clientv3.OpDelete(etcdKey))
		}
		keys = append(keys, key)
		size += len(etcdKey) + len(value)
	}
	commit()
	if len(v.dirty) == 0 {
		v.flushAt = time.Time{}
	}
}

// marshalValueStatus is the JSON of a base value's status, as that of the
// agent's (proto names, enums by name, zero values left out); strings that
// are not UTF-8 have their bytes replaced.
func marshalValueStatus(st *api.BaseValueStatus) (string, error) {
	value, err := marshal(st)
	if err == nil {
		return value, nil
	}
	st = proto.Clone(st).(*api.BaseValueStatus)
	for _, vs := range append([]*api.ValueStatus{st.GetValue()}, st.GetDerivedValues()...) {
		if vs == nil {
			continue
		}
		vs.Key, vs.Error, vs.DescriptorName = validUTF8(vs.Key), validUTF8(vs.Error), validUTF8(vs.DescriptorName)
		for i, d := range vs.Details {
			vs.Details[i] = validUTF8(d)
		}
	}
	return marshal(st)
}

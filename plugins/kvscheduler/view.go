package kvscheduler

import (
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Readers never wait for the SB. Only the worker changes the graph; it holds
// s.mu while it does, and releases it around every descriptor call. A
// transaction changes the graph before its SB calls (the simulation leaves
// the graph as the plan ends), so while one runs the graph shows states that
// are not yet true in the SB. Readers (status, stats, dumps, graph
// snapshots) take s.mu for reading, which they get whenever the worker is in
// a descriptor call or between transactions, and see the graph as of the
// last finished transaction: the graph with the running transaction's
// changes undone. Those changes are in the undo logs the transaction
// records anyway (to roll back after a failure); the first reader of a
// transaction reads them once, newest first, into a map of the nodes they
// touch (settledView). The worker pays nothing for readers.

// runningTxn is what readers need of the running transaction: the undo logs
// of its changes so far, oldest first (guarded by Scheduler.mu: the worker
// changes them only while it holds it for writing).
type runningTxn struct {
	logs []*chunks[undoEntry]
	// gen counts changes of logs (a log dropped after a rollback).
	gen int

	// The view built by the first reader, for (gen, entries).
	viewMu       sync.Mutex
	view         *settled
	viewGen      int
	viewEntries  int
	viewComputed bool
}

// reset prepares the state for the next transaction, keeping the
// allocations (under Scheduler.mu: no reader holds a view).
func (rt *runningTxn) reset() {
	clear(rt.logs)
	rt.logs = rt.logs[:0]
	rt.gen++
	rt.view, rt.viewComputed = nil, false
}

// addLog makes log one of the running transaction's logs.
func (rt *runningTxn) addLog(log *chunks[undoEntry]) {
	rt.logs = append(rt.logs, log)
	rt.gen++
}

// dropLog removes a log whose changes were rolled back.
func (rt *runningTxn) dropLog(log *chunks[undoEntry]) {
	for i, l := range rt.logs {
		if l == log {
			rt.logs = append(rt.logs[:i], rt.logs[i+1:]...)
			rt.gen++
			return
		}
	}
}

// settled is the state before the running transaction of the nodes it has
// changed so far.
type settled struct {
	then map[*node]*nodeThen
	// removed are the nodes that were in the graph before the transaction
	// and are not now, by key and sorted by key.
	removed       map[string]*node
	removedSorted []*node
}

// nodeThen is a node's state before the running transaction.
type nodeThen struct {
	added, removed    bool
	intended, applied proto.Message
	metadata          any
	state             api.ValueState
	lastOp            api.TxnOperation
	err               error
	details           []string
	derived           []*node
	obtained          bool
	desc              *descriptorInfo
}

func liveThen(n *node) nodeThen {
	return nodeThen{intended: n.intended, applied: n.applied, metadata: n.metadata, state: n.state, lastOp: n.lastOp,
		err: n.err, details: n.details, derived: n.derived, obtained: n.obtained, desc: n.desc}
}

// settledView returns what readers see of the running transaction's changes,
// nil when none runs (the graph is settled). Call it with s.mu held for
// reading.
func (s *Scheduler) settledView() *settled {
	rt := s.running
	if rt == nil {
		return nil
	}
	entries := 0
	for _, l := range rt.logs {
		entries += l.len()
	}
	rt.viewMu.Lock()
	defer rt.viewMu.Unlock()
	if rt.viewComputed && rt.viewGen == rt.gen && rt.viewEntries == entries {
		return rt.view
	}
	v := &settled{then: map[*node]*nodeThen{}}
	for i := len(rt.logs) - 1; i >= 0; i-- {
		rt.logs[i].reverse(func(e *undoEntry) {
			n := e.n
			if n == nil {
				return
			}
			t := v.then[n]
			if t == nil {
				lt := liveThen(n)
				t = &lt
				v.then[n] = t
			}
			switch e.kind {
			case undoAdd:
				t.added = true
			case undoRemove:
				t.removed = true
			case undoIntended:
				t.intended, _ = e.old.(proto.Message)
			case undoApplied:
				t.applied, _ = e.old.(proto.Message)
			case undoObtained:
				t.obtained = e.flag
			case undoDerived:
				t.derived, _ = e.old.([]*node)
			case undoMetadata:
				t.metadata = e.old
			case undoStatus:
				t.state, t.lastOp = api.ValueState(e.a), api.TxnOperation(e.b)
				if old, ok := e.old.(*statusUndo); ok {
					t.err, t.details = old.err, old.details
				} else {
					t.err, _ = e.old.(error)
					t.details = nil
				}
			case undoDesc:
				t.desc, _ = e.old.(*descriptorInfo)
			}
		})
	}
	for n, t := range v.then {
		if t.removed && !t.added && !n.inGraph {
			if v.removed == nil {
				v.removed = map[string]*node{}
			}
			v.removed[n.key] = n
			v.removedSorted = append(v.removedSorted, n)
		}
	}
	sort.Slice(v.removedSorted, func(i, j int) bool { return v.removedSorted[i].key < v.removedSorted[j].key })
	rt.view, rt.viewGen, rt.viewEntries, rt.viewComputed = v, rt.gen, entries, true
	return v
}

// of returns the state of n readers see.
func (v *settled) of(n *node) nodeThen {
	if v != nil {
		if t := v.then[n]; t != nil {
			return *t
		}
	}
	return liveThen(n)
}

// inError is api.StatusInError for what readers see of n, without making
// its status.
func (v *settled) inError(n *node) bool {
	state, err := n.state, n.err
	if v != nil {
		if t := v.then[n]; t != nil {
			state, err = t.state, t.err
		}
	}
	return api.StateInError(state) || (err != nil && err.Error() != "")
}

// derivedOf returns the derived values readers see of n.
func (v *settled) derivedOf(n *node) []*node {
	if v != nil {
		if t := v.then[n]; t != nil {
			return t.derived
		}
	}
	return n.derived
}

// visible tells whether n is a node readers see (in the graph before the
// running transaction).
func (v *settled) visible(n *node) bool {
	if v == nil {
		return n.inGraph
	}
	t := v.then[n]
	if t == nil {
		return n.inGraph
	}
	return !t.added && (n.inGraph || t.removed)
}

// lookup returns the node of key readers see, or nil.
func (v *settled) lookup(g *graph, key string) *node {
	if n := g.get(key); n != nil && v.visible(n) {
		return n
	}
	if v != nil {
		return v.removed[key]
	}
	return nil
}

// scan calls f for the nodes readers see whose key starts with prefix, in
// key order, until f returns false.
func (v *settled) scan(g *graph, prefix string, f func(n *node) bool) {
	var removed []*node
	if v != nil && len(v.removedSorted) > 0 {
		i := sort.Search(len(v.removedSorted), func(i int) bool { return v.removedSorted[i].key >= prefix })
		for ; i < len(v.removedSorted) && strings.HasPrefix(v.removedSorted[i].key, prefix); i++ {
			removed = append(removed, v.removedSorted[i])
		}
	}
	stopped := false
	g.scanPrefix(prefix, func(n *node) bool {
		for len(removed) > 0 && removed[0].key < n.key {
			if !f(removed[0]) {
				stopped = true
				return false
			}
			removed = removed[1:]
		}
		if v.visible(n) && !f(n) {
			stopped = true
			return false
		}
		return true
	})
	for _, n := range removed {
		if stopped || !f(n) {
			return
		}
	}
}

// each calls f for every node readers see, in no order.
func (v *settled) each(g *graph, f func(n *node)) {
	for _, n := range g.nodes {
		if v.visible(n) {
			f(n)
		}
	}
	if v != nil {
		for _, n := range v.removedSorted {
			f(n)
		}
	}
}

// baseStatusOf is the status readers see of base node n and its derived
// values.
func (v *settled) baseStatusOf(n *node) *api.BaseValueStatus {
	t := v.of(n)
	bs := &api.BaseValueStatus{Value: statusOfThen(n, &t)}
	for _, d := range t.derived {
		dt := v.of(d)
		bs.DerivedValues = append(bs.DerivedValues, statusOfThen(d, &dt))
	}
	return bs
}

func statusOfThen(n *node, t *nodeThen) *api.ValueStatus {
	st := &api.ValueStatus{
		Key:           n.key,
		State:         t.state,
		LastOperation: t.lastOp,
		Details:       descriptorNotes(t.desc, n.key, t.intended, t.state, t.details),
		Derived:       n.base != nil,
	}
	if t.desc != nil {
		st.DescriptorName = t.desc.d.Name
	}
	if t.err != nil {
		st.Error = t.err.Error()
	}
	return st
}

// value is what a node shows: what is applied, else what is intended.
func (t *nodeThen) value() proto.Message {
	if t.applied != nil {
		return t.applied
	}
	return t.intended
}

func (t *nodeThen) descName() string {
	if t.desc == nil {
		return ""
	}
	return t.desc.d.Name
}

// stateDesc returns the state and descriptor of n readers see (without
// copying the rest).
func (v *settled) stateDesc(n *node) (api.ValueState, *descriptorInfo) {
	if v != nil {
		if t := v.then[n]; t != nil {
			return t.state, t.desc
		}
	}
	return n.state, n.desc
}

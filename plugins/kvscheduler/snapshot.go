package kvscheduler

import (
	"reflect"
	"slices"
	"strings"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Readers never wait for the worker. At the end of every transaction (after
// its retries are scheduled, so RETRYING is in it) the worker publishes an
// immutable snapshot of the values, their statuses and counters; status,
// stats and NB/cached dumps read the latest one with an atomic load. A
// snapshot shows the state as of the last finished transaction: while a
// transaction runs its descriptor calls, readers keep seeing the state
// before it, so a status is never ahead of the SB (CONFIGURED only once the
// Create returned).
//
// Publishing costs what the transaction changed, not what the graph holds:
// the graph's setters list the nodes they change (graph.dirty), the worker
// rebuilds the entries of those nodes only, in a copy-on-write B-tree whose
// clone (O(1)) is the published snapshot, and keeps the counters by state
// and descriptor up to date by difference.

// valueEntry is the published view of one node. It is never changed once
// in a published tree: a change of the node replaces the entry. What few
// values have is in rare, keeping entries small.
type valueEntry struct {
	key      string
	base     string // key of the base value ("" for a base value)
	desc     *descriptorInfo
	intended proto.Message
	applied  proto.Message
	metadata any
	state    api.ValueState
	lastOp   api.TxnOperation
	obtained bool
	rare     *entryRare
}

// entryRare is the part of an entry that few values need.
type entryRare struct {
	derived []string // keys of the derived values, in order
	err     error
	details []string
}

func (e *valueEntry) derivedKeys() []string {
	if e.rare == nil {
		return nil
	}
	return e.rare.derived
}

func (e *valueEntry) errValue() error {
	if e.rare == nil {
		return nil
	}
	return e.rare.err
}

func (e *valueEntry) detailList() []string {
	if e.rare == nil {
		return nil
	}
	return e.rare.details
}

// entryItem is an item of the snapshot's tree; it carries the key so that
// comparisons do not load the entries.
type entryItem struct {
	key string
	e   *valueEntry
}

// statsGroup is one counter of SchedulerStats.ValuesByDescriptor.
type statsGroup struct {
	desc  string
	state api.ValueState
}

type statsCount struct {
	group statsGroup
	count int
}

// snapshot is what readers see: immutable once published. The values are
// a tree, shared by the snapshots until the worker folds the changes into a
// new one, and the changes of the transactions since then (newest first).
type snapshot struct {
	base  *btree.BTreeG[entryItem]
	delta *delta
	// counts of values by descriptor group and state (non-zero only).
	counts []statsCount
}

// delta is what one publication changed: entries sorted by key, a nil entry
// for a value that left the graph.
type delta struct {
	entries []entryItem
	prev    *delta
	// depth is the length of the chain, size the entries in it.
	depth, size int
}

// A publication adds a delta; when the chain would get longer than
// maxDeltaDepth or hold more than maxDeltaSize entries, the worker folds it
// into its tree and publishes a clone. Copying the paths to the changed
// entries (copy-on-write) then happens once for many small transactions,
// and readers look up at most maxDeltaDepth short sorted slices.
const (
	maxDeltaDepth = 16
	maxDeltaSize  = 256
)

// publisher is the worker's side of the snapshots: the tree it updates and
// clones, and the counters. Worker only (under Scheduler.mu).
type publisher struct {
	values *btree.BTreeG[entryItem]
	last   *snapshot
	counts map[statsGroup]int
	// keys is scratch space of publish.
	keys []string
}

// snapshotDegree is the degree of the snapshot's tree. A fold copies the
// tree nodes on the paths to the changed entries: smaller nodes than the
// graph's index make that copy cheaper, for a tree a level deeper.
const snapshotDegree = 16

func newPublisher() *publisher {
	p := &publisher{
		values: btree.NewG(snapshotDegree, func(a, b entryItem) bool { return a.key < b.key }),
		counts: map[statsGroup]int{},
	}
	p.last = &snapshot{base: p.values.Clone()}
	return p
}

// publish brings the entries of the nodes the graph changed since the last
// publication up to date and returns the new snapshot.
func (p *publisher) publish(g *graph) *snapshot {
	if len(g.dirty) > 4096 && len(g.dirty) >= len(g.nodes) {
		return p.rebuild(g)
	}
	keys := p.keys[:0]
	for _, n := range g.dirty {
		keys = append(keys, n.key)
	}
	g.clearDirty()
	slices.Sort(keys)
	keys = slices.Compact(keys)
	last := p.last
	var changes []entryItem
	countsChanged := false
	for _, key := range keys {
		cur := g.nodes[key]
		old := last.get(key)
		switch {
		case cur == nil && old == nil:
			continue
		case cur != nil && old != nil && old.shows(cur):
			continue // unchanged (a dry run, a change undone)
		}
		var e *valueEntry
		if cur != nil {
			e = newEntry(cur)
		}
		changes = append(changes, entryItem{key: key, e: e})
		if old == nil || e == nil || old.group() != e.group() {
			if old != nil {
				p.count(old, -1)
			}
			if e != nil {
				p.count(e, 1)
			}
			countsChanged = true
		}
	}
	clear(keys)
	if cap(keys) > 4096 {
		keys = nil
	}
	p.keys = keys
	if len(changes) == 0 {
		return last
	}
	next := &snapshot{base: last.base, counts: last.counts}
	if countsChanged {
		next.counts = make([]statsCount, 0, len(p.counts))
		for gr, c := range p.counts {
			next.counts = append(next.counts, statsCount{gr, c})
		}
	}
	depth, size := 1, len(changes)
	if last.delta != nil {
		depth, size = last.delta.depth+1, last.delta.size+len(changes)
	}
	if depth <= maxDeltaDepth && size <= maxDeltaSize {
		next.delta = &delta{entries: changes, prev: last.delta, depth: depth, size: size}
	} else {
		var chain []*delta
		for d := last.delta; d != nil; d = d.prev {
			chain = append(chain, d)
		}
		chain = append([]*delta{{entries: changes}}, chain...)
		for i := len(chain) - 1; i >= 0; i-- { // oldest first
			for _, it := range chain[i].entries {
				if it.e == nil {
					p.values.Delete(it)
				} else {
					p.values.ReplaceOrInsert(it)
				}
			}
		}
		next.base = p.values.Clone()
	}
	p.last = next
	return next
}

// rebuild publishes the whole graph anew, in key order: after a transaction
// that changed about as many values as the graph holds (a bulk load), this
// is cheaper than sorting and merging the changes.
func (p *publisher) rebuild(g *graph) *snapshot {
	g.clearDirty()
	p.values = btree.NewG(snapshotDegree, func(a, b entryItem) bool { return a.key < b.key })
	clear(p.counts)
	g.scanPrefix("", func(n *node) bool {
		e := newEntry(n)
		p.values.ReplaceOrInsert(entryItem{key: e.key, e: e})
		p.count(e, 1)
		return true
	})
	next := &snapshot{base: p.values.Clone(), counts: make([]statsCount, 0, len(p.counts))}
	for gr, c := range p.counts {
		next.counts = append(next.counts, statsCount{gr, c})
	}
	p.last = next
	return next
}

func (p *publisher) count(e *valueEntry, delta int) {
	gr := e.group()
	if c := p.counts[gr] + delta; c != 0 {
		p.counts[gr] = c
	} else {
		delete(p.counts, gr)
	}
}

func newEntry(n *node) *valueEntry {
	e := &valueEntry{key: n.key, desc: n.desc, intended: n.intended, applied: n.applied, metadata: n.metadata,
		obtained: n.obtained, state: n.state, lastOp: n.lastOp}
	if n.base != nil {
		e.base = n.base.key
	}
	if len(n.derived) > 0 || n.err != nil || n.details != nil {
		e.rare = &entryRare{err: n.err, details: n.details}
		if len(n.derived) > 0 {
			e.rare.derived = make([]string, len(n.derived))
			for i, d := range n.derived {
				e.rare.derived[i] = d.key
			}
		}
	}
	return e
}

// shows tells whether the entry is what newEntry(n) would return.
func (e *valueEntry) shows(n *node) bool {
	derived := e.derivedKeys()
	if e.desc != n.desc || e.intended != n.intended || e.applied != n.applied || e.obtained != n.obtained ||
		e.state != n.state || e.lastOp != n.lastOp || !sameSlice(e.detailList(), n.details) ||
		len(derived) != len(n.derived) || !same(e.errValue(), n.err) || !same(e.metadata, n.metadata) {
		return false
	}
	if (n.base == nil) != (e.base == "") || (n.base != nil && n.base.key != e.base) {
		return false
	}
	for i, d := range n.derived {
		if d.key != derived[i] {
			return false
		}
	}
	return true
}

// same compares two interface values without panicking on a dynamic type
// that is not comparable (such values count as different).
func same(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// group is the counter of the entry in SchedulerStats.ValuesByDescriptor.
func (e *valueEntry) group() statsGroup {
	d := ""
	if e.desc != nil {
		d = e.desc.d.Name
	} else {
		d = api.StatsNoDescriptor
		if e.base != "" {
			d = api.StatsProperties
		}
	}
	return statsGroup{desc: d, state: e.state}
}

func (e *valueEntry) origin() api.ValueOrigin {
	if e.obtained {
		return api.FromSB
	}
	return api.FromNB
}

func (e *valueEntry) status() *api.ValueStatus {
	st := &api.ValueStatus{
		Key:           e.key,
		State:         e.state,
		LastOperation: e.lastOp,
		Details:       slices.Clone(e.detailList()),
		Derived:       e.base != "",
	}
	if e.desc != nil {
		st.DescriptorName = e.desc.d.Name
	}
	if err := e.errValue(); err != nil {
		st.Error = err.Error()
	}
	return st
}

func (sn *snapshot) get(key string) *valueEntry {
	for d := sn.delta; d != nil; d = d.prev {
		if i, ok := slices.BinarySearchFunc(d.entries, key, compareKey); ok {
			return d.entries[i].e
		}
	}
	it, _ := sn.base.Get(entryItem{key: key})
	return it.e
}

func compareKey(it entryItem, key string) int { return strings.Compare(it.key, key) }

// baseStatus returns the status of a base entry with its derived values.
func (sn *snapshot) baseStatus(e *valueEntry) *api.BaseValueStatus {
	bs := &api.BaseValueStatus{Value: e.status()}
	for _, k := range e.derivedKeys() {
		if d := sn.get(k); d != nil {
			bs.DerivedValues = append(bs.DerivedValues, d.status())
		}
	}
	return bs
}

// scanPrefix calls f for every entry whose key starts with prefix, in key
// order, until f returns false.
func (sn *snapshot) scanPrefix(prefix string, f func(*valueEntry) bool) {
	// The changes of the deltas under the prefix, the newest of each key.
	var changed map[string]*valueEntry
	for d := sn.delta; d != nil; d = d.prev {
		i, _ := slices.BinarySearchFunc(d.entries, prefix, compareKey)
		for ; i < len(d.entries) && strings.HasPrefix(d.entries[i].key, prefix); i++ {
			if changed == nil {
				changed = map[string]*valueEntry{}
			}
			if _, newer := changed[d.entries[i].key]; !newer {
				changed[d.entries[i].key] = d.entries[i].e
			}
		}
	}
	keys := make([]string, 0, len(changed))
	for k := range changed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	next, stopped := 0, false
	// emitChangedBefore emits the changed keys sorting before key.
	emitChangedBefore := func(key string, all bool) bool {
		for ; next < len(keys) && (all || keys[next] < key); next++ {
			if e := changed[keys[next]]; e != nil && !f(e) {
				stopped = true
				return false
			}
		}
		return true
	}
	visit := func(it entryItem) bool {
		if !strings.HasPrefix(it.key, prefix) {
			return false
		}
		if !emitChangedBefore(it.key, false) {
			return false
		}
		if next < len(keys) && keys[next] == it.key {
			next++
			if it.e = changed[it.key]; it.e == nil {
				return true // removed
			}
		}
		if !f(it.e) {
			stopped = true
			return false
		}
		return true
	}
	sn.base.AscendGreaterOrEqual(entryItem{key: prefix}, visit)
	if !stopped {
		emitChangedBefore("", true)
	}
}

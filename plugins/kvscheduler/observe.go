package kvscheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Timelines and graph snapshots are computed from the kept transaction
// records: each executed operation records the value and state of a key
// before and after it. A timeline lists the operations on one key; a
// snapshot takes the current graph and undoes, newest first, the operations
// of the transactions after the moment asked for. Nothing is recorded for
// them while transactions run, and they are bounded by the history.

// GetHistoryInfo implements api.KVScheduler.
func (s *Scheduler) GetHistoryInfo() api.HistoryInfo { return s.history.info() }

// executedOps returns the operations a record applied to the graph: none for
// a dry run, whose plan was rolled back.
func executedOps(rec *api.RecordedTxn) []*api.RecordedTxnOp {
	if rec.DryRun {
		return nil
	}
	return rec.Executed
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// absent tells whether a state means the key is not in the graph.
func absent(st api.ValueState) bool {
	return st == api.ValueStateNonexistent || st == api.ValueStateRemoved
}

// GetKeyTimeline implements api.KVScheduler.
func (s *Scheduler) GetKeyTimeline(key string) []api.KeyRevision {
	recs, _ := s.history.snapshot()
	var revs []api.KeyRevision
	var lastSeq uint64
	var lastStop time.Time
	for _, rec := range recs {
		for _, op := range executedOps(rec) {
			if op.Key != key {
				continue
			}
			if len(revs) == 0 && !absent(op.PrevState) {
				// What the value was before the oldest kept operation.
				revs = append(revs, api.KeyRevision{Value: op.PrevValue, State: op.PrevState,
					Error: errText(op.PrevErr), Descriptor: op.Descriptor})
			}
			if n := len(revs); n > 0 {
				revs[n-1].Until = rec.Stop
			}
			revs = append(revs, api.KeyRevision{TxnSeq: rec.SeqNum, Since: rec.Stop, Operation: op.Operation,
				Value: op.NewValue, State: op.NewState, Error: errText(op.NewErr), Descriptor: op.Descriptor,
				Flags: op.Flags()})
			lastSeq, lastStop = rec.SeqNum, rec.Stop
		}
	}
	// The current status, when it changed without an operation (a value
	// waiting for its retry is RETRYING) or the history has none.
	s.mu.RLock()
	var cur *api.KeyRevision
	v := s.settledView()
	if n := v.lookup(s.g, key); n != nil {
		t := v.of(n)
		cur = &api.KeyRevision{TxnSeq: lastSeq, Since: lastStop, Operation: t.lastOp, Value: t.value(),
			State: t.state, Error: errText(t.err), Descriptor: t.descName()}
	}
	s.mu.RUnlock()
	if cur != nil {
		// (An operation that left a value PENDING records no value; the
		// value is still the intended one.)
		if k := len(revs); k == 0 || revs[k-1].State != cur.State ||
			(revs[k-1].Value != nil && !proto.Equal(revs[k-1].Value, cur.Value)) {
			if k > 0 {
				revs[k-1].Until = cur.Since
			}
			revs = append(revs, *cur)
		}
	}
	descs := s.descs.Load()
	for i := range revs {
		revs[i].Dependencies = dependenciesOf(descs, key, revs[i].Value)
		if revs[i].Dependencies != nil {
			for j := range revs[i].Dependencies {
				if d := &revs[i].Dependencies[j]; d.Key != "" {
					d.Targets = []string{d.Key}
				}
			}
		}
	}
	return revs
}

// nodeValue is the value a node shows: what is applied, else what is
// intended.
func nodeValue(n *node) proto.Message {
	if n.applied != nil {
		return n.applied
	}
	return n.intended
}

// dependenciesOf asks the descriptor of a key for the dependencies of a
// value (nil when there is none, or the callback panics).
func dependenciesOf(descs *descriptorSet, key string, value proto.Message) []api.DependencyInfo {
	if value == nil {
		return nil
	}
	di := descs.forKey(key)
	if di == nil || di.d.Dependencies == nil {
		return nil
	}
	deps, err := pure(func() []api.Dependency { return di.d.Dependencies(key, value) })
	if err != nil || len(deps) == 0 {
		return nil
	}
	out := make([]api.DependencyInfo, len(deps))
	for i, d := range deps {
		out[i] = api.DependencyInfo{Label: d.Label, Key: d.Key, AnyOfPrefixes: d.AnyOf.KeyPrefixes}
		if d.Key == "" {
			out[i].Exclusive = d.Exclusive
		}
	}
	return out
}

// GetGraphSnapshot implements api.KVScheduler.
func (s *Scheduler) GetGraphSnapshot(t time.Time) (*api.GraphSnapshot, error) {
	recs, info := s.history.snapshot()
	nodes, selectors := s.currentNodes()
	snap := &api.GraphSnapshot{Time: t, TxnSeq: info.NewestSeq}
	if t.IsZero() {
		snap.Time, snap.Current = s.clock.Now(), true
		return s.finishSnapshot(snap, nodes, selectors), nil
	}
	if len(recs) > 0 && t.Before(recs[0].Start) {
		return nil, fmt.Errorf("graph at %s: %w: %s", t.UTC().Format(time.RFC3339Nano), api.ErrNotInHistory, info.Starts())
	}
	// Undo the transactions that ended after t.
	cut := sort.Search(len(recs), func(i int) bool { return recs[i].Stop.After(t) })
	if cut == len(recs) {
		snap.Current = true
	} else {
		snap.TxnSeq = 0
		if cut > 0 {
			snap.TxnSeq = recs[cut-1].SeqNum
		}
		undoRecords(nodes, recs[cut:])
		snap.Note = "reconstructed from the transaction records; states set without an operation (RETRYING) are not shown"
	}
	return s.finishSnapshot(snap, nodes, selectors), nil
}

// GetGraphAsOf implements api.KVScheduler.
func (s *Scheduler) GetGraphAsOf(seq uint64) (*api.GraphSnapshot, error) {
	recs, info := s.history.snapshot()
	i := sort.Search(len(recs), func(i int) bool { return recs[i].SeqNum >= seq })
	if i == len(recs) || recs[i].SeqNum != seq {
		return nil, fmt.Errorf("transaction #%d: %w: %s", seq, api.ErrNotInHistory, info.Starts())
	}
	nodes, selectors := s.currentNodes()
	snap := &api.GraphSnapshot{TxnSeq: seq, Time: recs[i].Stop, Current: i == len(recs)-1}
	if !snap.Current {
		undoRecords(nodes, recs[i+1:])
		snap.Note = "reconstructed from the transaction records; states set without an operation (RETRYING) are not shown"
	}
	seen := map[string]bool{}
	for _, op := range executedOps(recs[i]) {
		if !seen[op.Key] {
			seen[op.Key] = true
			snap.Changed = append(snap.Changed, op.Key)
		}
	}
	sort.Strings(snap.Changed)
	return s.finishSnapshot(snap, nodes, selectors), nil
}

// GetGraphNeighbours implements api.KVScheduler. It resolves dependencies
// as finishSnapshot does, from the nodes readers see, but only those of
// keys: Key dependencies by lookup, AnyOf ones by a scan of their prefixes
// (at most maxTargets targets), Exclusive ones by the claims on their
// resource. Dependents come from the graph's reverse edges (the waiters of
// a key, the AnyOf index, the claims).
func (s *Scheduler) GetGraphNeighbours(keys ...string) []api.GraphNeighbours {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := s.settledView()
	descs := s.descs.Load()
	available := func(n *node) bool {
		if n == nil {
			return false
		}
		st := v.of(n).state
		return st == api.ValueStateConfigured || st == api.ValueStateObtained || st == api.ValueStateDiscovered
	}
	var out []api.GraphNeighbours
	for _, key := range keys {
		n := v.lookup(s.g, key)
		if n == nil {
			continue
		}
		t := v.of(n)
		gn := api.GraphNode{Key: key, Descriptor: t.descName(), Value: t.value(), State: t.state,
			LastOp: t.lastOp, Error: errText(t.err), Derived: n.base != nil, Obtained: t.obtained}
		if n.base != nil {
			gn.Base = n.base.key
		}
		gn.Dependencies = dependenciesOf(descs, key, gn.Value)
		for j := range gn.Dependencies {
			s.resolveDependency(v, n, &gn.Dependencies[j], available)
		}
		nb := api.GraphNeighbours{Node: gn, Dependents: s.dependentKeys(v, n, available)}
		for _, d := range t.derived {
			nb.Derived = append(nb.Derived, d.key)
		}
		out = append(out, nb)
	}
	return out
}

// resolveDependency fills the targets of d, a dependency of n, and whether
// it is met (see finishSnapshot).
func (s *Scheduler) resolveDependency(v *settled, n *node, d *api.DependencyInfo, available func(*node) bool) {
	switch {
	case d.Exclusive != "":
		for x := s.g.claims[d.Exclusive]; x != nil; x = x.next {
			if o := x.owner; o != n && v.visible(o) && available(o) && !slices.Contains(d.Targets, o.key) {
				d.Targets = append(d.Targets, o.key)
			}
		}
		sort.Strings(d.Targets)
		d.Satisfied = len(d.Targets) == 0
	case d.Key != "":
		t := v.lookup(s.g, d.Key)
		if t != nil {
			d.Targets = []string{d.Key}
		}
		d.Satisfied = available(t)
	default:
		var sel api.KeySelector
		for i := range n.deps {
			if n.deps[i].dep.Label == d.Label {
				sel = n.deps[i].dep.AnyOf.KeySelector
			}
		}
		prefixes := d.AnyOfPrefixes
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		for _, p := range prefixes {
			v.scan(s.g, p, func(m *node) bool {
				if m != n && (sel == nil || sel(m.key)) && available(m) {
					d.Satisfied = true
					d.Targets = append(d.Targets, m.key)
				}
				return len(d.Targets) < maxTargets
			})
		}
	}
}

// dependentKeys returns the keys of the values readers see with a
// dependency that n satisfies or would satisfy, sorted. It reads the
// reverse edges without graph.dependents' scratch marks, which only the
// worker may write.
func (s *Scheduler) dependentKeys(v *settled, n *node, available func(*node) bool) []string {
	seen := map[*node]bool{}
	var out []string
	add := func(o *node) {
		if o != n && !seen[o] && v.visible(o) {
			seen[o] = true
			out = append(out, o.key)
		}
	}
	head := n.waiters
	if !n.inGraph {
		head = s.g.waiters[n.key]
	}
	for e := head; e != nil; e = e.next {
		add(e.owner)
	}
	check := func(en *anyOfEntry) {
		for ; en != nil; en = en.next {
			if sel := en.edge.dep.AnyOf.KeySelector; sel == nil || sel(n.key) {
				add(en.edge.owner)
			}
		}
	}
	for _, l := range s.g.lens {
		if l > len(n.key) {
			break
		}
		check(s.g.anyOf[n.key[:l]])
	}
	check(s.g.anyOf[""])
	// The values competing with n for a resource n holds.
	if available(n) {
		for i := range n.deps {
			if e := &n.deps[i]; e.isClaim() {
				for x := s.g.claims[e.dep.Exclusive]; x != nil; x = x.next {
					if x.isClaim() {
						add(x.owner)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// currentNodes copies the graph's nodes, and the AnyOf selectors of their
// dependencies (which descriptors cannot give back for past values).
func (s *Scheduler) currentNodes() (map[string]*api.GraphNode, map[depSel]api.KeySelector) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	nodes := make(map[string]*api.GraphNode, len(s.g.nodes))
	selectors := map[depSel]api.KeySelector{}
	v := s.settledView()
	v.each(s.g, func(n *node) {
		key := n.key
		t := v.of(n)
		gn := &api.GraphNode{Key: key, Descriptor: t.descName(), Value: t.value(), State: t.state,
			LastOp: t.lastOp, Error: errText(t.err), Derived: n.base != nil, Obtained: t.obtained}
		if n.base != nil {
			gn.Base = n.base.key
		}
		for i := range n.deps {
			if sel := n.deps[i].dep.AnyOf.KeySelector; sel != nil {
				selectors[depSel{key, n.deps[i].dep.Label}] = sel
			}
		}
		nodes[key] = gn
	})
	return nodes, selectors
}

type depSel struct{ key, label string }

// undoRecords undoes the operations of records, newest first.
func undoRecords(nodes map[string]*api.GraphNode, recs []*api.RecordedTxn) {
	for i := len(recs) - 1; i >= 0; i-- {
		ops := executedOps(recs[i])
		for j := len(ops) - 1; j >= 0; j-- {
			op := ops[j]
			if absent(op.PrevState) {
				delete(nodes, op.Key)
				continue
			}
			gn := nodes[op.Key]
			if gn == nil {
				gn = &api.GraphNode{Key: op.Key, Descriptor: op.Descriptor, Derived: op.Derived}
				nodes[op.Key] = gn
			}
			// An operation records the value that was applied; a value that
			// was not (PENDING, FAILED create) keeps the one it has.
			if op.PrevValue != nil {
				gn.Value = op.PrevValue
			}
			gn.State, gn.Error, gn.LastOp = op.PrevState, errText(op.PrevErr), api.OpUndefined
			gn.Obtained = op.PrevState == api.ValueStateObtained
		}
	}
}

// maxTargets bounds the targets listed for one AnyOf dependency.
const maxTargets = 16

// finishSnapshot sorts the nodes and resolves their dependencies among them.
func (s *Scheduler) finishSnapshot(snap *api.GraphSnapshot, nodes map[string]*api.GraphNode, selectors map[depSel]api.KeySelector) *api.GraphSnapshot {
	keys := make([]string, 0, len(nodes))
	for k := range nodes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	available := func(key string) bool {
		gn := nodes[key]
		return gn != nil && (gn.State == api.ValueStateConfigured || gn.State == api.ValueStateObtained || gn.State == api.ValueStateDiscovered)
	}
	descs := s.descs.Load()
	// The dependencies of every node first: the holders of Exclusive
	// resources are found among them.
	allDeps := make([][]api.DependencyInfo, len(keys))
	holders := map[string][]string{}
	for i, key := range keys {
		allDeps[i] = dependenciesOf(descs, key, nodes[key].Value)
		for _, d := range allDeps[i] {
			if d.Exclusive != "" && available(key) {
				holders[d.Exclusive] = append(holders[d.Exclusive], key)
			}
		}
	}
	snap.Nodes = make([]api.GraphNode, 0, len(keys))
	for i, key := range keys {
		gn := nodes[key]
		deps := allDeps[i]
		for j := range deps {
			d := &deps[j]
			if d.Exclusive != "" {
				for _, h := range holders[d.Exclusive] {
					if h != key {
						d.Targets = append(d.Targets, h)
					}
				}
				d.Satisfied = len(d.Targets) == 0
				continue
			}
			if d.Key != "" {
				if nodes[d.Key] != nil {
					d.Targets = []string{d.Key}
				}
				d.Satisfied = available(d.Key)
				continue
			}
			sel := selectors[depSel{key, d.Label}]
			match := func(k string) bool {
				if (sel == nil || sel(k)) && available(k) {
					d.Satisfied = true
					if len(d.Targets) < maxTargets {
						d.Targets = append(d.Targets, k)
					}
				}
				return len(d.Targets) < maxTargets
			}
			prefixes := d.AnyOfPrefixes
			if len(prefixes) == 0 {
				prefixes = []string{""}
			}
			for _, p := range prefixes {
				for i := sort.SearchStrings(keys, p); i < len(keys) && strings.HasPrefix(keys[i], p); i++ {
					if keys[i] != key && !match(keys[i]) {
						break
					}
				}
			}
		}
		gn.Dependencies = deps
		snap.Nodes = append(snap.Nodes, *gn)
	}
	return snap
}

// GetStats implements api.KVScheduler.
func (s *Scheduler) GetStats() api.SchedulerStats {
	st := api.SchedulerStats{
		ValuesByState:      map[string]int{},
		ValuesByDescriptor: map[string]map[string]int{},
		Transactions:       map[string]uint64{},
	}
	s.mu.RLock()
	st.Revision = s.revision.Load()
	v := s.settledView()
	v.each(s.g, func(n *node) {
		st0, desc := v.stateDesc(n)
		state := st0.String()
		st.ValuesByState[state]++
		d := ""
		if desc != nil {
			d = desc.d.Name
		}
		if d == "" {
			d = api.StatsNoDescriptor
			if n.base != nil {
				d = api.StatsProperties
			}
		}
		if st.ValuesByDescriptor[d] == nil {
			st.ValuesByDescriptor[d] = map[string]int{}
		}
		st.ValuesByDescriptor[d][state]++
	})
	s.mu.RUnlock()
	s.qMu.Lock()
	st.QueueLength = len(s.queue)
	s.qMu.Unlock()
	s.statsMu.Lock()
	for t, c := range s.txnCounts {
		st.Transactions[t.String()] = c
	}
	s.statsMu.Unlock()
	st.History = s.history.info()
	return st
}

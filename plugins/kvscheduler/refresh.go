package kvscheduler

// The refresh of a resync: what the SB holds, asked of every descriptor
// with Retrieve, recorded as the applied state.

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// refreshAll asks every descriptor with Retrieve for the SB state (resync),
// in RetrieveDependencies order, and records it as the applied values.
func (s *Scheduler) refreshAll(descs *descriptorSet, qt *queuedTxn) []api.KeyWithError {
	defer s.refreshRound()()
	var errs []api.KeyWithError
	order, err := retrieveOrder(descs)
	if err != nil {
		errs = append(errs, api.KeyWithError{Error: err})
	}
	defer s.prefetch(order)()
	// The graph's values per descriptor, and in a full resync the node of
	// each NB value: both lists are in key order (see orderValues), so they
	// are matched while the graph is scanned, without a lookup per value (and
	// while the node is in the cache).
	byDesc := map[*descriptorInfo][]*node{}
	var nb []kvChange // the NB values of a full resync (the deletes left out)
	var nbNodes []*node
	if qt.resync == api.FullResync {
		qt.nodes = make([]*node, len(qt.values))
		first := 0
		for first < len(qt.values) && qt.values[first].value == nil {
			first++ // the deletes come first
		}
		nb, nbNodes = qt.values[first:], qt.nodes[first:]
	}
	// The NB values per descriptor, for Retrieve to correlate with: their
	// descriptors (and metadata) are found with their nodes, then listed per
	// descriptor in their order.
	nbDescs := make([]*descriptorInfo, len(nb))
	nbMeta := make([]any, len(nb))
	perDesc := map[*descriptorInfo]int{}
	addNB := func(i int, n *node) {
		if nb[i].value == nil {
			return
		}
		if n == nil {
			n = s.g.get(nb[i].key) // none, unless the values were out of order
		}
		nbNodes[i] = n
		if n != nil && n.base == nil {
			nbDescs[i], nbMeta[i] = n.desc, n.metadata
		} else {
			nbDescs[i] = descs.forKey(nb[i].key)
		}
		perDesc[nbDescs[i]]++
	}
	next := 0
	s.g.scanPrefix("", func(n *node) bool {
		if n.base == nil && n.desc != nil {
			byDesc[n.desc] = appendDoubling(byDesc[n.desc], n)
		}
		for next < len(nb) && nb[next].key < n.key {
			addNB(next, nil)
			next++
		}
		if next < len(nb) && nb[next].key == n.key {
			addNB(next, n)
			next++
		}
		return true
	})
	for ; next < len(nb); next++ {
		addNB(next, nil)
	}
	nbByDesc := make(map[*descriptorInfo][]api.KVWithMetadata, len(perDesc))
	for di, count := range perDesc {
		if di != nil {
			nbByDesc[di] = make([]api.KVWithMetadata, 0, count)
		}
	}
	for i, kv := range nb {
		if di := nbDescs[i]; di != nil {
			nbByDesc[di] = append(nbByDesc[di], api.KVWithMetadata{Key: kv.key, Value: kv.value, Metadata: nbMeta[i], Origin: api.FromNB})
		}
	}
	// The keys the NB of a full resync wants, only if a retrieved value
	// needs them (one the graph does not know as the NB's).
	var nbWants map[string]struct{}
	wanted := func(key string) bool {
		if qt.resync != api.FullResync {
			return false // the graph tells (applyRetrieved)
		}
		if nbWants == nil {
			nbWants = make(map[string]struct{}, len(nb))
			for _, kv := range nb {
				if kv.value != nil {
					nbWants[kv.key] = struct{}{}
				}
			}
		}
		_, ok := nbWants[key]
		return ok
	}
	// Phase 1: ask every descriptor, in RetrieveDependencies order. The
	// metadata of a descriptor that a RetrieveDependencies names is
	// published at once, as later Retrieves may need it (routes look up
	// interface indexes); the others' is published as applyRetrieved
	// records their values (where it changed: for 10,000 routes, a write
	// into the map each less).
	needed := map[string]bool{}
	for _, di := range order {
		for _, dep := range di.d.RetrieveDependencies {
			needed[dep] = true
		}
	}
	results := map[*descriptorInfo][]api.KVWithMetadata{}
	for _, di := range order {
		if di.d.Retrieve == nil {
			continue
		}
		correlate := nbByDesc[di]
		if qt.resync != api.FullResync {
			for _, n := range byDesc[di] {
				if n.intended != nil && !n.obtained {
					correlate = append(correlate, api.KVWithMetadata{Key: n.key, Value: n.intended, Metadata: n.metadata, Origin: api.FromNB})
				}
			}
		}
		kvs, err := s.retrieve(di, correlate)
		if err != nil {
			errs = append(errs, api.KeyWithError{Error: err})
			continue // the SB of this descriptor stays as the graph knows it
		}
		results[di] = kvs
		if di.metadata != nil && needed[di.d.Name] {
			for _, kv := range kvs {
				if kv.Key != "" && kv.Value != nil && kv.Metadata != nil && di.d.KeySelector(kv.Key) {
					di.metadata.Put(di.label(kv.Key), kv.Metadata)
				}
			}
		}
	}
	// Phase 2: record what was retrieved (see applyRetrieved), then refresh
	// the derived values of what changed.
	rs := &refreshState{s: s, wanted: wanted, results: results, retrievedDerived: map[string]api.KVWithMetadata{}, errs: errs}
	for _, di := range order {
		if kvs, ok := results[di]; ok {
			rs.applyRetrieved(di, kvs, byDesc[di])
		}
	}
	errs = rs.errs
	memo := derivedMemo{last: s.derivedMemo, next: make(map[*node]derivedOf, len(s.derivedMemo))}
	defer func() { s.derivedMemo = memo.next }()
	for _, n := range rs.refreshed {
		if n.inGraph {
			s.refreshDerived(n, rs.retrievedDerived, &memo)
		}
	}
	if qt.verbose {
		s.logger.Info("graph after refresh", "txn", qt.seq, "values", len(s.g.nodes))
	}
	return errs
}

// retrieve calls a descriptor's Retrieve (see callback).
func (s *Scheduler) retrieve(di *descriptorInfo, correlate []api.KVWithMetadata) (kvs []api.KVWithMetadata, err error) {
	s.callback(di.d.Name, func(ctx context.Context) {
		if s.memo != nil {
			ctx = api.WithRefreshMemo(ctx, s.memo)
		}
		kvs, err = retrieveGuarded(ctx, di, correlate, 0)
	})
	return kvs, err
}

// refreshRound gives the Retrieves made until end is called one memo
// (api.RefreshMemo): those of one refresh.
func (s *Scheduler) refreshRound() (end func()) {
	s.memo = api.MapMemo{}
	return func() { s.memo = nil }
}

// prefetch calls the Prefetch of the descriptors of order that have one
// (api.KVDescriptor.Prefetch), with a context carrying the refresh's memo
// that end cancels: call it within a refreshRound, end before the round's.
func (s *Scheduler) prefetch(order []*descriptorInfo) (end func()) {
	var ctx context.Context
	cancel := context.CancelFunc(func() {})
	for _, di := range order {
		if di.d.Prefetch == nil || di.d.Retrieve == nil {
			continue
		}
		if ctx == nil {
			ctx, cancel = context.WithCancel(api.WithRefreshMemo(s.baseCtx, s.memo))
		}
		s.callback(di.d.Name, func(context.Context) { s.prefetchGuarded(ctx, di) })
	}
	return cancel
}

// prefetchGuarded calls di's Prefetch; a panic is logged, as Prefetch
// cannot fail (its Retrieve then reads without it, or fails itself).
func (s *Scheduler) prefetchGuarded(ctx context.Context, di *descriptorInfo) {
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("descriptor Prefetch panicked", "descriptor", di.d.Name, "panic", p)
		}
	}()
	di.d.Prefetch(ctx)
}

// refreshState is what the refresh of a resync collects over the
// descriptors.
type refreshState struct {
	s       *Scheduler
	results map[*descriptorInfo][]api.KVWithMetadata
	// wanted tells whether the NB of a full resync lists a key.
	wanted func(key string) bool
	// derivedKeys are the keys the retrieved values derive (built when a
	// retrieved key is new to the graph).
	derivedKeys map[string]struct{}
	// retrievedDerived are the retrieved derived values.
	retrievedDerived map[string]api.KVWithMetadata
	// refreshed are the base values whose derived values need refreshing.
	refreshed []*node
	errs      []api.KeyWithError
}

// isDerived tells whether a retrieved key, whose node is n (nil: none), is
// a derived value. A key the graph knows tells itself; only new keys (after
// a restart) need the DerivedValues of the retrieved values to be told apart.
func (rs *refreshState) isDerived(n *node, key string) bool {
	if n != nil {
		return n.base != nil
	}
	if rs.derivedKeys == nil {
		rs.derivedKeys = map[string]struct{}{}
		for di, kvs := range rs.results {
			if di.d.DerivedValues == nil {
				continue
			}
			for _, kv := range kvs {
				if kv.Value == nil {
					continue
				}
				derived, _ := pure(func() []api.KeyValuePair { return di.d.DerivedValues(kv.Key, kv.Value) })
				for _, d := range derived {
					rs.derivedKeys[d.Key] = struct{}{}
				}
			}
		}
	}
	_, ok := rs.derivedKeys[key]
	return ok
}

// applyRetrieved records what a descriptor's Retrieve returned. A derived
// value retrieved on its own (retrievedOnItsOwn) is in the SB when that
// Retrieve returned it (retrievedDerived; refreshDerived applies it); the
// other values
// are recorded as the applied state of the descriptor's values (known are
// those in the graph). Garbage (empty keys, nil values, keys of other
// descriptors, duplicates) is skipped and reported.
func (rs *refreshState) applyRetrieved(di *descriptorInfo, kvs []api.KVWithMetadata, known []*node) {
	s := rs.s
	bad := func(key, format string, args ...any) {
		rs.errs = append(rs.errs, api.KeyWithError{Key: key, Error: fmt.Errorf("descriptor %s: Retrieve: "+format, append([]any{di.d.Name}, args...)...)})
	}
	refresh := func(n *node) {
		if di.d.DerivedValues != nil || len(n.derived) > 0 {
			rs.refreshed = appendDoubling(rs.refreshed, n)
		}
	}
	g := s.g
	// The nodes of the retrieved keys are marked (seen); when every known
	// node was seen, none went missing.
	g.epoch++
	seen := g.epoch
	seenKnown := 0
	// The node of a key: known is in key order, as Retrieves usually
	// return their values, so it is found by walking known along (no map
	// look-up per value: ~250 ns each, 10,000 routes); a key before the
	// walk's place, or of no known node, is looked up.
	next := 0
	nodeOf := func(key string) *node {
		for next < len(known) && known[next].key < key {
			next++
		}
		if next < len(known) && known[next].key == key && known[next].inGraph {
			return known[next]
		}
		return g.get(key)
	}
	for _, kv := range kvs {
		n := nodeOf(kv.Key)
		if rs.isDerived(n, kv.Key) {
			rs.retrievedDerived[kv.Key] = kv
			continue
		}
		switch {
		case kv.Key == "":
			bad("", "returned a value with an empty key")
			continue
		case kv.Value == nil:
			bad(kv.Key, "returned %s without a value", kv.Key)
			continue
		case !di.d.KeySelector(kv.Key):
			bad(kv.Key, "returned %s, which its KeySelector does not accept", kv.Key)
			continue
		}
		if n != nil && n.mark == seen {
			bad(kv.Key, "returned %s twice; the first is kept", kv.Key)
			continue
		}
		if n == nil {
			n = &node{key: kv.Key, desc: di}
			g.addNode(n)
		} else if n.base == nil && n.desc == di {
			seenKnown++
		}
		n.mark = seen
		if n.base != nil || (n.desc != nil && n.desc != di) {
			bad(kv.Key, "returned %s, which belongs to another value", kv.Key)
			continue
		}
		// (What the graph knows as the NB's needs no look at the NB values.)
		if !(n.intended != nil && !n.obtained) && !retrievedIsOurs(n, kv.Origin, rs.wanted(kv.Key)) {
			if !n.obtained {
				g.setObtained(n, true)
			}
			if n.intended == nil || !sameValue(n.intended, kv.Value) {
				g.setIntended(n, kv.Value)
				g.setApplied(n, kv.Value)
			}
			if di.d.WithMetadata && n.metadata != kv.Metadata {
				g.setMetadata(n, kv.Metadata, true)
			}
			if n.state != api.ValueStateObtained {
				g.setStatus(n, status{state: api.ValueStateObtained})
			}
			refresh(n)
			continue
		}
		if n.obtained {
			g.setObtained(n, false) // the NB takes the value over
			g.setIntended(n, nil)
		}
		if n.applied == nil || !sameValue(n.applied, kv.Value) {
			applied := kv.Value
			if n.intended != nil && sameValue(n.intended, applied) {
				// The SB holds exactly the NB's value: keep one copy of it,
				// not a second one per value (a Retrieve's copy, or the
				// clone of the correlated value many descriptors return).
				applied = n.intended
			}
			g.setApplied(n, applied)
		}
		if di.d.WithMetadata && n.metadata != kv.Metadata {
			g.setMetadata(n, kv.Metadata, true)
		}
		if n.intended == nil && n.state != api.ValueStateDiscovered {
			g.setStatus(n, status{state: api.ValueStateDiscovered, lastOp: n.lastOp})
			if f := di.d.Dependencies; f != nil {
				deps, _ := pure(func() []api.Dependency { return f(n.key, kv.Value) })
				g.setDeps(n, validDeps(deps))
			}
		}
		refresh(n)
	}
	if seenKnown == len(known) {
		return
	}
	for _, n := range known {
		if n.mark == seen || n.applied == nil || !n.inGraph {
			continue
		}
		// Not in the SB any more.
		if n.obtained {
			s.forgetObtained(n)
			continue
		}
		g.setApplied(n, nil)
		if n.metadata != nil {
			g.setMetadata(n, nil, true)
		}
		if n.intended != nil {
			g.setStatus(n, status{state: api.ValueStateMissing, lastOp: n.lastOp, err: n.err})
		}
		refresh(n)
	}
}

// retrievedIsOurs tells whether a retrieved value belongs to the agent (to be
// kept in line with the NB, or deleted when the NB does not want it) or is a
// foreign object (OBTAINED, never deleted).
func retrievedIsOurs(n *node, origin api.ValueOrigin, wanted bool) bool {
	switch {
	case wanted || (n.intended != nil && !n.obtained):
		return true
	case origin == api.FromNB:
		return true
	case origin == api.FromSB:
		return false
	default: // unknown: ours only if the agent created it
		return !n.obtained && n.lastOp != api.OpUndefined
	}
}

// forgetObtained drops an OBTAINED value the SB no longer has. What depended
// on it is left to the reconciliation that follows the refresh.
func (s *Scheduler) forgetObtained(n *node) {
	g := s.g
	for _, d := range n.derived {
		g.removeNode(d)
	}
	g.setDerived(n, nil)
	g.setApplied(n, nil)
	g.setIntended(n, nil)
	g.removeNode(n)
}

// refreshDerived sets, during a resync refresh, the applied state of n's
// derived values. A derived value retrieved on its own (see retrievedOnItsOwn)
// is in the SB when its descriptor's Retrieve returned it (retrieved). Any
// other derived value is in the SB when the retrieved base derives it, except
// one the graph knows as not applied (e.g. PENDING): the base alone cannot
// tell.
func (s *Scheduler) refreshDerived(n *node, retrieved map[string]api.KVWithMetadata, memo *derivedMemo) {
	g := s.g
	var have []api.KeyValuePair
	if n.applied != nil && n.desc != nil && n.desc.d.DerivedValues != nil {
		applied := n.applied
		if m, ok := memo.lookup(n, applied); ok {
			have = m
		} else {
			have, _ = pure(func() []api.KeyValuePair { return n.desc.d.DerivedValues(n.key, applied) })
			// Its own copy: the graph's messages replace the equal ones
			// below, and the descriptor may return a slice it keeps.
			have = slices.Clone(have)
		}
		defer memo.keep(n, have)
	}
	if len(have) == 0 && len(n.derived) == 0 {
		return
	}
	ownRetrieve := func(d *node) bool { return retrievedOnItsOwn(d, n) }
	setApplied := func(d *node, value proto.Message) {
		if value != nil && d.intended == nil && d.deps == nil && d.desc != nil && d.desc.d.Dependencies != nil {
			// Found in the SB before anything is intended for it (after a
			// restart): its dependencies are those of what it is, so that
			// what it holds (Exclusive) is known before the values that
			// compete with it are reconciled.
			deps, _ := pure(func() []api.Dependency { return d.desc.d.Dependencies(d.key, value) })
			g.setDeps(d, validDeps(deps))
		}
		switch {
		case value == nil:
			if d.applied != nil {
				g.setApplied(d, nil)
				if d.intended != nil && d.state == api.ValueStateConfigured {
					// Gone from the SB (as base values, see applyRetrieved):
					// until it is created again it is not CONFIGURED.
					g.setStatus(d, status{state: api.ValueStateMissing, lastOp: d.lastOp})
				}
			}
		case d.applied == nil || !sameValue(d.applied, value):
			g.setApplied(d, value)
		}
	}
	list := n.derived
	grown := false
	for _, d := range n.derived {
		if !wants(have, d.key) {
			if ownRetrieve(d) {
				setApplied(d, retrieved[d.key].Value)
			} else {
				setApplied(d, nil)
			}
		}
	}
	for i, kv := range have {
		if kv.Key == "" || kv.Value == nil {
			continue
		}
		d := findDerived(list, kv.Key)
		if d == nil {
			if g.get(kv.Key) != nil {
				continue
			}
			d = &node{key: kv.Key, base: n, desc: s.descs.Load().forKey(kv.Key), obtained: n.obtained}
			if n.obtained {
				d.intended, d.state = kv.Value, api.ValueStateObtained
			}
			g.addNode(d)
			if !grown {
				list = append([]*node(nil), list...)
				grown = true
			}
			list = append(list, d)
		}
		switch {
		case ownRetrieve(d):
			setApplied(d, retrieved[kv.Key].Value)
		case d.applied == nil && d.state != api.ValueStateNonexistent && !n.obtained:
			// Known as not applied; the base alone cannot tell otherwise.
		default:
			setApplied(d, kv.Value)
		}
		// The memo holds the graph's key and messages where equal: the
		// next full resync compares them by pointer, and no copy is kept.
		have[i].Key = d.key
		switch {
		case d.intended != nil && sameValue(d.intended, kv.Value):
			have[i].Value = d.intended
		case d.applied != nil && sameValue(d.applied, kv.Value):
			have[i].Value = d.applied
		}
	}
	if grown {
		g.setDerived(n, list)
	}
}

// derivedOf is the derived values (have) of a base node's applied value
// (from) by its descriptor (desc), as refreshDerived left them.
type derivedOf struct {
	from proto.Message
	desc *descriptorInfo
	have []api.KeyValuePair
}

// derivedMemo is the memo of derived values of one refreshAll (see
// Scheduler.derivedMemo): last, that of the one before (read), next, this
// one's (written). A nil *derivedMemo (the refreshes of a few values)
// neither finds nor keeps anything.
type derivedMemo struct {
	last, next map[*node]derivedOf
}

// lookup returns what the last refresh derived from value, n's applied
// value then, when n is still under the same descriptor.
func (m *derivedMemo) lookup(n *node, value proto.Message) ([]api.KeyValuePair, bool) {
	if m == nil {
		return nil, false
	}
	return derivedIn(m.last, n, value)
}

// derivedIn returns what memo holds of value as n's applied value, when n
// is still under the same descriptor: what DerivedValues returns for it,
// not to be modified.
func derivedIn(memo map[*node]derivedOf, n *node, value proto.Message) ([]api.KeyValuePair, bool) {
	d, ok := memo[n]
	if !ok || d.from != value || d.desc != n.desc {
		return nil, false
	}
	return d.have, true
}

// keep records have as derived from n's applied value (which
// refreshDerived, changing only the derived nodes, leaves as it was).
func (m *derivedMemo) keep(n *node, have []api.KeyValuePair) {
	if m != nil {
		m.next[n] = derivedOf{from: n.applied, desc: n.desc, have: have}
	}
}

// retrievedOnItsOwn tells whether the SB state of the derived value d of base
// is what d's own descriptor retrieves (api.KVDescriptor.Retrieve): d has a
// descriptor with Retrieve other than the base's, and the base is not
// OBTAINED. Otherwise (a property, a descriptor without Retrieve, the base's
// own descriptor, whose Retrieve returns base values) the retrieved base value
// tells, through its DerivedValues.
func retrievedOnItsOwn(d, base *node) bool {
	return d.desc != nil && d.desc.d.Retrieve != nil && d.desc != base.desc && !base.obtained
}

// retrieveOrder sorts descriptors so that each comes after those named in its
// RetrieveDependencies; ties keep the registration order.
func retrieveOrder(descs *descriptorSet) ([]*descriptorInfo, error) {
	var out []*descriptorInfo
	state := map[*descriptorInfo]int{} // 1 visiting, 2 done
	var cycle error
	var visit func(di *descriptorInfo)
	visit = func(di *descriptorInfo) {
		switch state[di] {
		case 1:
			if cycle == nil {
				cycle = fmt.Errorf("RetrieveDependencies form a cycle through descriptor %s", di.d.Name)
			}
			return
		case 2:
			return
		}
		state[di] = 1
		for _, name := range di.d.RetrieveDependencies {
			if dep := descs.byName[name]; dep != nil {
				visit(dep)
			}
		}
		state[di] = 2
		out = append(out, di)
	}
	for _, di := range descs.list {
		visit(di)
	}
	return out, cycle
}

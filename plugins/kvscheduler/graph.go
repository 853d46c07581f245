package kvscheduler

import (
	"slices"
	"sort"
	"strings"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// node is one key of the graph: what the NB intends, what the SB has as far
// as the scheduler knows, and the status. Fields are changed only through the
// graph's setters, which write the undo log while one is recorded.
//
// A node takes the 256-byte size class. What scans, dependency checks and
// marks read is in its first 128 bytes, which the CPU fetches together: in
// a big graph most visits of a node miss the caches, and then one fetch
// rather than two.
type node struct {
	// The first 128 bytes.
	key  string
	desc *descriptorInfo // nil: UNIMPLEMENTED (base) or property (derived)
	base *node           // set for derived values

	intended proto.Message // nil: the NB (or the base) does not ask for it
	applied  proto.Message // nil: not in the SB
	metadata any

	state  api.ValueState
	lastOp api.TxnOperation
	step   int32
	// obtained: the value is reported by the SB; never created or deleted by
	// us. removing marks a node being deleted: it satisfies nothing
	// meanwhile. inGraph is true while the node is in the graph: the node
	// map holds it under its key (so no lookup is needed to tell).
	obtained, removing, inGraph bool
	// retryPolicy is the retry policy of the NB transaction that last set
	// the value's intent (see Scheduler.retryPolicy); it fills the byte
	// after the flags.
	retryPolicy uint8

	// mark is scratch space for walks (compared with graph.epoch).
	mark uint64
	// queued is the run (txnRun.id, or id+1) whose batch will reconcile the
	// node in its turn: nothing reconciles it earlier (see batch).
	queued uint64
	// waiters is the first of the Key dependencies on the node's key, while
	// the node is in the graph (graph.waiters holds those of missing keys).
	waiters *depEdge
	// rare holds what few nodes have (nil for most), keeping nodes small.
	rare *nodeRare

	// The second 128 bytes.

	// derived values of this node, in the order DerivedValues returned them.
	derived []*node
	// deps are the dependencies of the intended value (of the applied one
	// while nothing is intended), indexed by the graph.
	deps []depEdge

	err     error
	details []string

	// revision counts NB changes of the intended value; a retry is dropped
	// when it moved on.
	revision uint64
	// born is the undo recording during which the node was added: changes
	// to it need no undo, as undoing its addition discards it.
	born uint64
	// stepRun and changedRun are scratch space of a transaction run
	// (txnRun.id): step is the node's last planned step, and whether its
	// status change is already listed.
	stepRun, changedRun uint64
	// walkMark is scratch space of supportedBy: graph.walk<<2, and the
	// ways (bits 0 and 1) the walk reached the node.
	walkMark uint64
}

// nodeRare is the part of a node that few nodes need.
type nodeRare struct {
	// leftover is what a failed Create may have left in the SB when the
	// refresh that should tell failed too; deleting the key deletes it.
	leftover proto.Message
	// invalid is the Validate error of the intended value.
	invalid error
	// retry is set while a retry of the last failed operation is scheduled.
	retry *retryTicket
}

func (n *node) invalidErr() error {
	if n.rare == nil {
		return nil
	}
	return n.rare.invalid
}

func (n *node) leftoverValue() proto.Message {
	if n.rare == nil {
		return nil
	}
	return n.rare.leftover
}

func (n *node) retryTicket() *retryTicket {
	if n.rare == nil {
		return nil
	}
	return n.rare.retry
}

// rareFields returns the rare part of the node, creating it.
func (n *node) rareFields() *nodeRare {
	if n.rare == nil {
		n.rare = &nodeRare{}
	}
	return n.rare
}

// available tells whether the node satisfies dependencies on its key.
func (n *node) available() bool {
	return n.applied != nil && !n.removing && (n.intended != nil || n.obtained)
}

// satisfies tells whether n satisfies the dependencies on it: it is
// available, or it is a derived value the SB has whose base waits for its
// turn in the running transaction's batch (batchRun): after a restart the
// resync finds the derived values in the SB before their bases derive them
// again, and a value of the batch reconciled before that base (in key
// order, with a dependency on the derived value that the batch's order
// cannot see) must not be deleted for it. When its turn comes the base
// derives it (then it is available) or not (then it is deleted, what
// depends on it first).
func (g *graph) satisfies(n *node) bool {
	if n.available() {
		return true
	}
	if g.batchRun == 0 || n.base == nil || n.applied == nil || n.removing || n.obtained || n.intended != nil {
		return false
	}
	root := n.base
	for root.base != nil {
		root = root.base
	}
	return root.intended != nil && (root.queued == g.batchRun || root.queued == g.batchRun+1)
}

func (n *node) descName() string {
	if n.desc == nil {
		return ""
	}
	return n.desc.d.Name
}

// depEdge is one dependency of a node. Key dependencies are linked into the
// list of waiters of their target key, so that the dependents of a key are
// found, added and removed in O(1); the list is in the target node while the
// key has one (no map lookup), in graph.waiters otherwise.
type depEdge struct {
	owner *node
	dep   api.Dependency
	// target is the node of dep.Key while the key has one in the graph (the
	// edge is then in target.waiters), nil otherwise.
	target *node
	// prev and next link the waiters of dep.Key.
	prev, next *depEdge
	// anyOf are the edge's entries in the AnyOf index.
	anyOf []*anyOfEntry
}

// anyOfEntry links an AnyOf edge under one of its prefixes ("" for none).
type anyOfEntry struct {
	edge       *depEdge
	prefix     string
	prev, next *anyOfEntry
}

// graph holds the nodes and the indexes over them. It is not safe for
// concurrent use: the scheduler guards it.
type graph struct {
	// batchRun is the id of the run whose batch is being reconciled (0
	// outside one): see satisfies.
	batchRun uint64
	nodes    map[string]*node
	// peak is the most nodes the node map held since it was last built:
	// a Go map never gives back the memory of deleted entries, so compact
	// rebuilds it once it holds far fewer.
	peak int
	// ordered is the nodes sorted by key, for prefix scans. Items carry the
	// key, so that comparisons do not load the nodes.
	ordered *btree.BTreeG[keyed]
	// waiters: key without a node -> first edge of the Key dependencies on
	// it (the lists of keys with a node are in their nodes).
	waiters map[string]*depEdge
	// anyOf: prefix -> first entry of AnyOf edges with that prefix ("" for
	// edges without prefixes).
	anyOf map[string]*anyOfEntry
	// claims: Exclusive name -> first edge of the Exclusive dependencies
	// on it (the values competing for it, linked by prev/next).
	claims map[string]*depEdge
	// prefixLens counts registered AnyOf prefixes by length; lens are the
	// lengths in use, so the AnyOf edges a key may satisfy are found with one
	// map lookup per length.
	prefixLens map[int]int
	lens       []int

	// scans caches prefixNodes' results until a node under the prefix is
	// linked or unlinked; nil: empty. scanLens are the lengths of the
	// cached prefixes with their counts, so that a key finds the entries
	// it invalidates with one look-up per length.
	scans    map[string]prefixScan
	scanLens []lenCount

	// undo, when non-nil, records how to restore every change; recording
	// numbers the recordings (see node.born).
	undo      *chunks[undoEntry]
	recording uint64
	// epoch is bumped by every walk that marks nodes; walk by supportedBy,
	// which runs inside such walks (and marks with walk<<2).
	epoch, walk uint64
}

func newGraph() *graph {
	return &graph{
		nodes:      make(map[string]*node),
		ordered:    btree.NewG(32, func(a, b keyed) bool { return a.key < b.key }),
		waiters:    make(map[string]*depEdge),
		anyOf:      make(map[string]*anyOfEntry),
		claims:     make(map[string]*depEdge),
		prefixLens: make(map[int]int),
	}
}

// undoKind says which change an undo entry restores.
type undoKind uint8

const (
	undoAdd undoKind = iota
	undoRemove
	undoDeps
	undoIntended
	undoApplied
	undoLeftover
	undoInvalid
	undoObtained
	undoDerived
	undoRevision
	undoRetry
	undoMetadata
	undoStatus
	undoDesc
	undoRetryPolicy
)

// undoEntry restores one change of one node: typed entries in one slice,
// rather than a closure each, because simulation writes one for every change.
// It is 40 bytes: a bulk delete writes several per value.
type undoEntry struct {
	kind undoKind
	flag bool   // obtained; metadata: publish
	a, b uint32 // status: state and operation; revision: its two halves
	n    *node
	old  any // the previous value (boxing a nil slice does not allocate)
}

// statusUndo is the previous error and details of a status, when it had
// details.
type statusUndo struct {
	err     error
	details []string
}

// depsUndo holds the edges a dependency change replaced.
type depsUndo struct{ old, new []depEdge }

// record starts recording undo entries into log.
func (g *graph) record(log *chunks[undoEntry]) {
	g.recording++
	g.undo = log
}

func (g *graph) logUndo(e undoEntry) {
	if g.undo == nil {
		return
	}
	if e.n != nil && e.n.born == g.recording && e.kind != undoAdd && e.kind != undoDeps &&
		!(e.kind == undoMetadata && e.flag) {
		return // a node of this recording: undoing its addition is enough
	}
	g.undo.add(e)
}

// rollback undoes the recorded changes, newest first, and stops recording.
func (g *graph) rollback() {
	if g.undo == nil {
		return
	}
	log := g.undo
	g.undo = nil
	log.reverse(func(e *undoEntry) {
		n := e.n
		switch e.kind {
		case undoAdd:
			g.unlinkNode(n)
		case undoRemove:
			g.linkNode(n)
		case undoDeps:
			d := e.old.(*depsUndo)
			for i := range d.new {
				g.unindexEdge(&d.new[i])
			}
			for i := range d.old {
				g.indexEdge(&d.old[i])
			}
			n.deps = d.old
		case undoIntended:
			n.intended, _ = e.old.(proto.Message)
		case undoApplied:
			n.applied, _ = e.old.(proto.Message)
		case undoLeftover:
			v, _ := e.old.(proto.Message)
			n.rareFields().leftover = v
		case undoInvalid:
			v, _ := e.old.(error)
			n.rareFields().invalid = v
		case undoObtained:
			n.obtained = e.flag
		case undoDerived:
			n.derived, _ = e.old.([]*node)
		case undoRevision:
			n.revision = uint64(e.a) | uint64(e.b)<<32
		case undoRetry:
			v, _ := e.old.(*retryTicket)
			n.rareFields().retry = v
		case undoMetadata:
			n.metadata = e.old
			if e.flag {
				publishMetadata(n, e.old)
			}
		case undoStatus:
			n.state, n.lastOp = api.ValueState(e.a), api.TxnOperation(e.b)
			if old, ok := e.old.(*statusUndo); ok {
				n.err, n.details = old.err, old.details
			} else {
				n.err, _ = e.old.(error)
				n.details = nil
			}
		case undoDesc:
			n.desc, _ = e.old.(*descriptorInfo)
		case undoRetryPolicy:
			n.retryPolicy = uint8(e.a)
		}
	})
}

func (g *graph) get(key string) *node { return g.nodes[key] }

// known returns the node of key: hint when it is still in the graph (then it
// is the key's node), else the node the map holds.
func (g *graph) known(hint *node, key string) *node {
	if hint != nil && hint.inGraph {
		return hint
	}
	return g.nodes[key]
}

// reserve prepares the node map for a transaction of about n values. Growing
// a Go map rehashes it step by step; when a transaction brings more than half
// as many values as the graph holds (a bulk load), the map is rebuilt at the
// final size instead. The copy costs at most twice what the transaction does.
func (g *graph) reserve(n int) {
	if n < 1024 || 2*n <= len(g.nodes) {
		return
	}
	// Derived values roughly double the keys.
	nodes := make(map[string]*node, 2*(len(g.nodes)+n))
	for k, v := range g.nodes {
		nodes[k] = v
	}
	g.nodes = nodes
	g.peak = 2 * (len(g.nodes) + n)
}

// reserveFor reserves for the values a transaction sets: a delete brings
// no node (reserving for a bulk delete rebuilt the map at twice its size,
// for compact to shrink it again after the transaction).
func (g *graph) reserveFor(values []kvChange) {
	sets := 0
	for _, kv := range values {
		if kv.value != nil {
			sets++
		}
	}
	g.reserve(sets)
}

// compact rebuilds the node map when it holds less than a quarter of its
// peak (and the peak was large): after a bulk delete the memory of the
// deleted entries comes back. The copy costs a fraction of what deleting
// the entries did. Call it between transactions (not while an undo log is
// recorded: the undo entries point to nodes, not to the map, so it would be
// safe, but there is no reason to).
func (g *graph) compact() {
	if n := len(g.nodes); n > g.peak {
		g.peak = n
		return
	}
	if g.peak < 4096 || len(g.nodes) >= g.peak/4 {
		return
	}
	nodes := make(map[string]*node, len(g.nodes))
	for k, v := range g.nodes {
		nodes[k] = v
	}
	g.nodes = nodes
	g.peak = len(nodes)
	if len(g.waiters) == 0 {
		g.waiters = make(map[string]*depEdge) // (grows with missing keys too)
	}
}

func (g *graph) addNode(n *node) {
	if g.undo != nil {
		n.born = g.recording
	}
	g.linkNode(n)
	g.logUndo(undoEntry{kind: undoAdd, n: n})
}

// linkNode puts a node into the graph's indexes and takes over the waiters
// of its key.
func (g *graph) linkNode(n *node) {
	g.nodes[n.key] = n
	g.ordered.ReplaceOrInsert(keyed{n.key, n})
	g.invalidateScans(n.key)
	n.inGraph = true
	if len(g.waiters) == 0 {
		return
	}
	if head, ok := g.waiters[n.key]; ok {
		delete(g.waiters, n.key)
		n.waiters = head
		for e := head; e != nil; e = e.next {
			e.target = n
		}
	}
}

// removeNode removes a node with its dependency edges.
func (g *graph) removeNode(n *node) {
	g.setDeps(n, nil)
	g.unlinkNode(n)
	g.logUndo(undoEntry{kind: undoRemove, n: n})
}

// unlinkNode takes a node out of the graph's indexes; the waiters of its key
// stay, in graph.waiters.
func (g *graph) unlinkNode(n *node) {
	if !n.inGraph {
		return
	}
	delete(g.nodes, n.key)
	g.ordered.Delete(keyed{key: n.key})
	g.invalidateScans(n.key)
	n.inGraph = false
	if head := n.waiters; head != nil {
		n.waiters = nil
		g.waiters[n.key] = head
		for e := head; e != nil; e = e.next {
			e.target = nil
		}
	}
}

// scanPrefix calls f for every node whose key starts with prefix, in key
// order, until f returns false.
func (g *graph) scanPrefix(prefix string, f func(*node) bool) {
	if prefix == "" {
		g.ordered.Ascend(func(it keyed) bool { return f(it.n) })
		return
	}
	g.ordered.AscendGreaterOrEqual(keyed{key: prefix}, func(it keyed) bool {
		if !strings.HasPrefix(it.key, prefix) {
			return false
		}
		return f(it.n)
	})
}

// prefixNodes returns the first max nodes whose keys start with prefix, in
// key order. The result is shared: callers must not change it. It is kept
// until a node under the prefix is linked or unlinked, so that the many
// values of a transaction with an AnyOf dependency under one prefix (the
// routes via the addresses of one interface) cost one scan, not one each,
// also while the transaction adds nodes elsewhere (the routes).
func (g *graph) prefixNodes(prefix string, max int) []*node {
	sc, cached := g.scans[prefix]
	if cached && (sc.complete || len(sc.nodes) >= max) {
		return sc.nodes[:min(len(sc.nodes), max)]
	}
	var nodes []*node
	complete := true
	g.scanPrefix(prefix, func(t *node) bool {
		if len(nodes) == max {
			complete = false
			return false
		}
		nodes = append(nodes, t)
		return true
	})
	if g.scans == nil {
		g.scans = make(map[string]prefixScan)
	}
	g.scans[prefix] = prefixScan{nodes: nodes, complete: complete}
	if !cached {
		g.countScanLen(len(prefix))
	}
	return nodes
}

// lenCount is a length of cached prefixes and how many there are.
type lenCount struct{ len, count int }

// countScanLen counts one more cached prefix of length l.
func (g *graph) countScanLen(l int) {
	for i := range g.scanLens {
		if g.scanLens[i].len == l {
			g.scanLens[i].count++
			return
		}
	}
	g.scanLens = append(g.scanLens, lenCount{l, 1})
}

// invalidateScans drops the cached scans of the prefixes of key.
func (g *graph) invalidateScans(key string) {
	if len(g.scans) == 0 {
		return
	}
	for i := 0; i < len(g.scanLens); i++ {
		l := g.scanLens[i].len
		if l > len(key) {
			continue
		}
		if _, ok := g.scans[key[:l]]; ok {
			delete(g.scans, key[:l])
			if g.scanLens[i].count--; g.scanLens[i].count == 0 {
				g.scanLens = slices.Delete(g.scanLens, i, i+1)
				i--
			}
		}
	}
}

// prefixScan is a result of prefixNodes: the nodes under a prefix, all of
// them when complete.
type prefixScan struct {
	nodes    []*node
	complete bool
}

// keyed is an item of the ordered index.
type keyed struct {
	key string
	n   *node
}

// setDeps replaces the dependency edges of a node and re-indexes them.
func (g *graph) setDeps(n *node, deps []api.Dependency) {
	old := n.deps
	if len(old) == 0 && len(deps) == 0 {
		return
	}
	for i := range old {
		g.unindexEdge(&old[i])
	}
	var edges []depEdge
	if len(deps) > 0 {
		// The edges are linked into lists by address: the slice is never
		// appended to or copied, only replaced.
		edges = make([]depEdge, len(deps))
		for i, d := range deps {
			edges[i] = depEdge{owner: n, dep: d}
			g.indexEdge(&edges[i])
		}
	}
	n.deps = edges
	if g.undo != nil {
		g.logUndo(undoEntry{kind: undoDeps, n: n, old: &depsUndo{old: old, new: edges}})
	}
}

func (g *graph) indexEdge(e *depEdge) {
	if x := e.dep.Exclusive; x != "" && e.dep.Key == "" { // Exclusive and unique names
		head := g.claims[x]
		e.prev, e.next = nil, head
		if head != nil {
			head.prev = e
		}
		g.claims[x] = e
		return
	}
	if e.dep.Key != "" {
		t := g.nodes[e.dep.Key]
		var head *depEdge
		if t != nil {
			head = t.waiters
			t.waiters = e
		} else {
			head = g.waiters[e.dep.Key]
			g.waiters[e.dep.Key] = e
		}
		e.target, e.prev, e.next = t, nil, head
		if head != nil {
			head.prev = e
		}
		return
	}
	prefixes := e.dep.AnyOf.KeyPrefixes
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	e.anyOf = make([]*anyOfEntry, len(prefixes))
	for i, p := range prefixes {
		en := &anyOfEntry{edge: e, prefix: p}
		head := g.anyOf[p]
		en.next = head
		if head != nil {
			head.prev = en
		}
		g.anyOf[p] = en
		e.anyOf[i] = en
		if p != "" {
			g.prefixLens[len(p)]++
			if g.prefixLens[len(p)] == 1 {
				g.lens = append(g.lens, len(p))
				sort.Ints(g.lens)
			}
		}
	}
}

func (g *graph) unindexEdge(e *depEdge) {
	if x := e.dep.Exclusive; x != "" && e.dep.Key == "" {
		if e.prev != nil {
			e.prev.next = e.next
		} else if g.claims[x] == e {
			if e.next != nil {
				g.claims[x] = e.next
			} else {
				delete(g.claims, x)
			}
		}
		if e.next != nil {
			e.next.prev = e.prev
		}
		e.prev, e.next = nil, nil
		return
	}
	if e.dep.Key != "" {
		switch {
		case e.prev != nil:
			e.prev.next = e.next
		case e.target != nil:
			if e.target.waiters == e {
				e.target.waiters = e.next
			}
		case g.waiters[e.dep.Key] == e:
			if e.next != nil {
				g.waiters[e.dep.Key] = e.next
			} else {
				delete(g.waiters, e.dep.Key)
			}
		}
		if e.next != nil {
			e.next.prev = e.prev
		}
		e.target, e.prev, e.next = nil, nil, nil
		return
	}
	for _, en := range e.anyOf {
		if en.prev != nil {
			en.prev.next = en.next
		} else if g.anyOf[en.prefix] == en {
			if en.next != nil {
				g.anyOf[en.prefix] = en.next
			} else {
				delete(g.anyOf, en.prefix)
			}
		}
		if en.next != nil {
			en.next.prev = en.prev
		}
		if en.prefix != "" {
			g.prefixLens[len(en.prefix)]--
			if g.prefixLens[len(en.prefix)] == 0 {
				delete(g.prefixLens, len(en.prefix))
				i := sort.SearchInts(g.lens, len(en.prefix))
				g.lens = append(g.lens[:i], g.lens[i+1:]...)
			}
		}
	}
	e.anyOf = nil
}

// targetOf returns the node of a Key dependency, or nil.
func (g *graph) targetOf(e *depEdge) *node { return e.target }

// dependents returns the nodes with a dependency that n's key may satisfy:
// Key dependencies on it and AnyOf dependencies that accept it. Each node is
// listed once.
func (g *graph) dependents(n *node) []*node {
	key := n.key
	head := n.waiters
	if !n.inGraph {
		if cur := g.nodes[key]; cur != nil {
			head = cur.waiters
		} else {
			head = g.waiters[key]
		}
	}
	var out []*node
	g.epoch++
	epoch := g.epoch
	seen := func(n *node) bool {
		if n.mark == epoch {
			return true
		}
		n.mark = epoch
		return false
	}
	for e := head; e != nil; e = e.next {
		if !seen(e.owner) {
			out = append(out, e.owner)
		}
	}
	check := func(en *anyOfEntry) {
		for ; en != nil; en = en.next {
			sel := en.edge.dep.AnyOf.KeySelector
			if (sel == nil || sel(key)) && en.edge.owner.mark != epoch && !seen(en.edge.owner) {
				out = append(out, en.edge.owner)
			}
		}
	}
	for _, l := range g.lens {
		if l > len(key) {
			break
		}
		check(g.anyOf[key[:l]])
	}
	check(g.anyOf[""])
	return out
}

// isClaim tells whether an edge is an Exclusive dependency.
func (e *depEdge) isClaim() bool {
	return e.dep.Key == "" && e.dep.Exclusive != "" && e.dep.Exclusive[0] != 0
}

// isUnique tells whether an edge indexes a unique name of its owner (see
// computeIntent): not a dependency.
func (e *depEdge) isUnique() bool {
	return e.dep.Key == "" && e.dep.Exclusive != "" && e.dep.Exclusive[0] == 0
}

// uniqueHolder returns the value other than n that holds a unique name: one
// that uses it and is valid (nil: free).
func (g *graph) uniqueHolder(name string, n *node) *node {
	for x := g.claims[uniquePrefix+name]; x != nil; x = x.next {
		if c := x.owner; c != n && c.intended != nil && c.invalidErr() == nil {
			return c
		}
	}
	return nil
}

// uniqueHeld returns the unique names n holds (uses and is valid).
func (g *graph) uniqueHeld(n *node) []string {
	if n.intended == nil || n.invalidErr() != nil {
		return nil
	}
	var out []string
	for i := range n.deps {
		if e := &n.deps[i]; e.isUnique() {
			out = append(out, e.dep.Exclusive[len(uniquePrefix):])
		}
	}
	return out
}

// eachUniqueUser calls f for every value that uses a unique name.
func (g *graph) eachUniqueUser(name string, f func(*node)) {
	for x := g.claims[uniquePrefix+name]; x != nil; x = x.next {
		f(x.owner)
	}
}

// hasClaim tells whether a node has an Exclusive dependency.
func (n *node) hasClaim() bool {
	for i := range n.deps {
		if n.deps[i].isClaim() {
			return true
		}
	}
	return false
}

// claimHolder returns the value that holds the resource of an Exclusive
// edge for another value than the edge's owner: one competing for it that is
// applied in the SB (nil: the resource is free). When several are (found so
// by a resync), the first in key order is named.
func (g *graph) claimHolder(e *depEdge) *node {
	var holder *node
	for x := g.claims[e.dep.Exclusive]; x != nil; x = x.next {
		if o := x.owner; o != e.owner && o.applied != nil && (holder == nil || o.key < holder.key) {
			holder = o
		}
	}
	return holder
}

// edgeSatisfied is satisfied for an edge, using its cached target.
func (g *graph) edgeSatisfied(e *depEdge) bool {
	if e.isUnique() {
		return true
	}
	if e.isClaim() {
		// An applied value keeps what it holds: an Exclusive dependency
		// only keeps values from being created.
		return e.owner.applied != nil || g.claimHolder(e) == nil
	}
	if e.dep.Key != "" {
		t := g.targetOf(e)
		return t != nil && t.available() && !g.supportedBy(t, e.owner)
	}
	return g.satisfied(e.owner, e.dep)
}

// satisfied tells whether one dependency of owner is met. A value's own
// derived values never satisfy its dependencies: they exist only after it.
func (g *graph) satisfied(owner *node, d api.Dependency) bool {
	if d.Key != "" {
		t := g.nodes[d.Key]
		return t != nil && g.satisfies(t) && !g.supportedBy(t, owner)
	}
	found := false
	match := func(n *node) bool {
		if g.satisfies(n) && !g.supportedBy(n, owner) && (d.AnyOf.KeySelector == nil || d.AnyOf.KeySelector(n.key)) {
			found = true
			return false
		}
		return true
	}
	if len(d.AnyOf.KeyPrefixes) == 0 {
		g.scanPrefix("", match)
		return found
	}
	for _, p := range d.AnyOf.KeyPrefixes {
		g.eachUnder(p, match)
		if found {
			return true
		}
	}
	return false
}

// eachUnder calls f for every node whose key starts with prefix, in key
// order, until f returns false: the first maxAnyOfScan from prefixNodes'
// cache (the AnyOf dependencies of a transaction's many values under one
// prefix, checked value by value, cost one scan), the rest by a scan. f
// must not link or unlink nodes.
func (g *graph) eachUnder(prefix string, f func(*node) bool) {
	nodes := g.prefixNodes(prefix, maxAnyOfScan+1)
	for _, n := range nodes {
		if !f(n) {
			return
		}
	}
	if len(nodes) <= maxAnyOfScan {
		return // all of them
	}
	last := nodes[len(nodes)-1].key
	g.scanPrefix(prefix, func(t *node) bool { return t.key <= last || f(t) })
}

// supportedBy tells whether t exists only thanks to owner through a
// derivation: following dependencies and derived-to-base links from t leads
// back to owner across at least one derived-to-base link (t, or a value t
// depends on, is derived from owner or from a value that depends on owner).
// Such a t cannot satisfy a dependency of owner: owner could never have been
// created that way, so keeping it would make the outcome depend on history.
// Plain cycles of Key dependencies (veth ends) are not concerned.
func (g *graph) supportedBy(t, owner *node) bool {
	type visit struct {
		n       *node
		derived bool // a derived-to-base link was crossed on the way
	}
	g.walk++
	walk := g.walk << 2
	var buf [16]visit
	stack := append(buf[:0], visit{t, false})
	push := func(n *node, derived bool) {
		way := uint64(1)
		if derived {
			way = 2
		}
		if n.walkMark&^3 != walk {
			n.walkMark = walk
		}
		if n.walkMark&way != 0 {
			return
		}
		n.walkMark |= way
		stack = append(stack, visit{n, derived})
	}
	for steps := 0; len(stack) > 0 && steps < 10000; steps++ {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v.n == owner {
			if v.derived {
				return true
			}
			continue // a plain cycle through owner: allowed
		}
		if v.n.base != nil {
			push(v.n.base, true)
		}
		for ei := range v.n.deps {
			e := &v.n.deps[ei]
			if e.dep.Key == "" {
				continue
			}
			if next := g.targetOf(e); next != nil && next.applied != nil {
				push(next, v.derived)
			}
		}
	}
	return false
}

// depsMet tells whether every dependency of the node is met (unmetDeps
// without building the list).
func (g *graph) depsMet(n *node) bool {
	for ei := range n.deps {
		if !g.edgeSatisfied(&n.deps[ei]) {
			return false
		}
	}
	return true
}

// unmetDeps returns the labels of the node's unmet dependencies.
func (g *graph) unmetDeps(n *node) []string {
	var unmet []string
	for ei := range n.deps {
		e := &n.deps[ei]
		if !g.edgeSatisfied(e) {
			label := e.dep.Label
			if label == "" {
				label = e.dep.Key
			}
			if e.isClaim() {
				if label == "" {
					label = e.dep.Exclusive
				}
				if h := g.claimHolder(e); h != nil {
					label += " (held by " + h.key + ")"
				}
			}
			unmet = append(unmet, label)
		}
	}
	return unmet
}

// Setters. Each records its undo.

func (g *graph) setIntended(n *node, v proto.Message) {
	old := n.intended
	n.intended = v
	g.logUndo(undoEntry{kind: undoIntended, n: n, old: old})
}

func (g *graph) setApplied(n *node, v proto.Message) {
	old := n.applied
	n.applied = v
	g.logUndo(undoEntry{kind: undoApplied, n: n, old: old})
}

func (g *graph) setLeftover(n *node, v proto.Message) {
	old := n.leftoverValue()
	if v != nil || n.rare != nil {
		n.rareFields().leftover = v
	}
	g.logUndo(undoEntry{kind: undoLeftover, n: n, old: old})
}

func (g *graph) setInvalid(n *node, err error) {
	old := n.invalidErr()
	if err != nil || n.rare != nil {
		n.rareFields().invalid = err
	}
	g.logUndo(undoEntry{kind: undoInvalid, n: n, old: old})
}

func (g *graph) setObtained(n *node, obtained bool) {
	old := n.obtained
	n.obtained = obtained
	g.logUndo(undoEntry{kind: undoObtained, n: n, flag: old})
}

// setRemoving sets the transient removing mark. It is set and cleared again
// within one removal, so it is false whenever the graph is rolled back (after
// a run, never inside one) and needs no undo entry.
func (g *graph) setRemoving(n *node, removing bool) {
	n.removing = removing
}

func (g *graph) setDerived(n *node, derived []*node) {
	old := n.derived
	n.derived = derived
	g.logUndo(undoEntry{kind: undoDerived, n: n, old: old})
}

func (g *graph) setRevision(n *node, rev uint64) {
	old := n.revision
	n.revision = rev
	g.logUndo(undoEntry{kind: undoRevision, n: n, a: uint32(old), b: uint32(old >> 32)})
}

func (g *graph) setRetryPolicy(n *node, p uint8) {
	if n.retryPolicy == p {
		return
	}
	old := n.retryPolicy
	n.retryPolicy = p
	g.logUndo(undoEntry{kind: undoRetryPolicy, n: n, a: uint32(old)})
}

func (g *graph) setRetry(n *node, t *retryTicket) {
	old := n.retryTicket()
	if t != nil || n.rare != nil {
		n.rareFields().retry = t
	}
	g.logUndo(undoEntry{kind: undoRetry, n: n, old: old})
}

// setMetadata stores the metadata of a node and publishes it in the
// descriptor's metadata map (unless publish is false, as in simulation).
func (g *graph) setMetadata(n *node, md any, publish bool) {
	old := n.metadata
	n.metadata = md
	if publish {
		publishMetadata(n, md)
	}
	g.logUndo(undoEntry{kind: undoMetadata, n: n, old: old, flag: publish})
}

func publishMetadata(n *node, md any) {
	if n.desc == nil || n.desc.metadata == nil || n.base != nil {
		return
	}
	label := n.desc.label(n.key)
	if md == nil {
		n.desc.metadata.Delete(label)
	} else {
		n.desc.metadata.Put(label, md)
	}
}

type status struct {
	state   api.ValueState
	lastOp  api.TxnOperation
	err     error
	details []string
}

func (g *graph) setStatus(n *node, st status) {
	if g.undo != nil {
		var old any = n.err
		if n.details != nil {
			old = &statusUndo{err: n.err, details: n.details}
		}
		g.logUndo(undoEntry{kind: undoStatus, n: n, a: uint32(n.state), b: uint32(n.lastOp), old: old})
	}
	n.state, n.lastOp, n.err, n.details = st.state, st.lastOp, st.err, st.details
}

package kvscheduler

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Drift: SB objects that changed or disappeared outside the agent, as
// watchers of SB events report them (ReportDrift). A DriftRepair
// transaction refreshes the reported values before its run (refreshDrift,
// like the refresh of a resync, for those values only), records what it
// found, and its run repairs it (repairDrift).

// ReportDrift implements api.KVScheduler.
func (s *Scheduler) ReportDrift(reports ...api.DriftReport) error {
	var valid []api.DriftReport
	for _, rep := range reports {
		if rep.Key == "" {
			return api.ErrNilKey
		}
		valid = append(valid, rep)
	}
	if len(valid) == 0 {
		return nil
	}
	s.qMu.Lock()
	if s.closed {
		s.qMu.Unlock()
		return api.ErrClosed
	}
	// Reports arriving while a drift transaction waits join it.
	for i := len(s.queue) - 1; i >= 0; i-- {
		if qt := s.queue[i]; qt.typ == api.DriftRepair {
			qt.drift = append(qt.drift, valid...)
			s.qMu.Unlock()
			return nil
		}
	}
	s.qMu.Unlock()
	_, err := s.enqueue(&queuedTxn{typ: api.DriftRepair, drift: valid}, false)
	return err
}

// driftDescription describes the reports of a drift transaction.
func driftDescription(reports []api.DriftReport) string {
	var b strings.Builder
	b.WriteString("drift reported: ")
	for i, rep := range reports {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(reports)-3)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(rep.Key)
		if rep.Cause != "" {
			b.WriteString(" (" + rep.Cause + ")")
		}
	}
	return b.String()
}

// driftFound is what the refresh of a drift transaction found out of sync:
// the nodes, the roots to repair, and what the SB has (for the record).
type driftFound struct {
	gone  []*node
	roots []*node
	found []api.RecordedKVPair
}

// refreshDrift refreshes the reported values that the graph holds as applied
// (a derived value through its base, and itself when its own descriptor
// retrieves it) and records what it finds: a value in sync is left alone; a
// value gone or changed is MISSING, its details saying so and why it was
// reported, with what the SB has as its applied value.
func (s *Scheduler) refreshDrift(qt *queuedTxn) (*driftFound, []api.KeyWithError) {
	defer s.refreshRound()()
	g := s.g
	out := &driftFound{}
	var errs []api.KeyWithError
	byDesc := map[*descriptorInfo][]*node{}
	var order []*descriptorInfo
	cause := map[*node]string{}
	rootOf := map[*node]*node{}
	add := func(n, root *node, why string) {
		// Applied values, and those a drift left MISSING (report only, or
		// not repaired in a loop): a new report repairs them.
		missing := n.state == api.ValueStateMissing && n.intended != nil
		if n.desc == nil || n.desc.d.Retrieve == nil || (n.applied == nil && !missing) || !n.inGraph {
			return
		}
		if _, seen := cause[n]; seen {
			return
		}
		cause[n], rootOf[n] = why, root
		if _, ok := byDesc[n.desc]; !ok {
			order = append(order, n.desc)
		}
		byDesc[n.desc] = append(byDesc[n.desc], n)
	}
	for _, rep := range qt.drift {
		n := g.get(rep.Key)
		if n == nil || n.obtained {
			continue // unknown, or foreign: notifications tell those
		}
		root := n
		for root.base != nil {
			root = root.base
		}
		if root.obtained {
			continue
		}
		add(root, root, rep.Cause)
		if n != root && retrievedOnItsOwn(n, n.base) {
			add(n, root, rep.Cause)
		}
	}
	var drifted []*node
	retrieved := map[string]api.KVWithMetadata{}
	for _, di := range order {
		nodes := byDesc[di]
		kvs, err := s.retrieve(di, correlateOf(nodes))
		if err != nil {
			errs = append(errs, api.KeyWithError{Error: fmt.Errorf("refresh of drifted values: %w", err)})
			continue // cannot tell: left as the graph knows them
		}
		found := make(map[string]api.KVWithMetadata, len(nodes))
		for _, kv := range kvs {
			found[kv.Key] = kv
			retrieved[kv.Key] = kv
		}
		for _, n := range nodes {
			kv, ok := found[n.key]
			kind := "gone"
			switch {
			case ok && kv.Value != nil && equivalentValues(n, n.applied, kv.Value) && n.state != api.ValueStateMissing:
				continue // in sync (a value already MISSING is repaired again)
			case ok && kv.Value != nil:
				kind = "changed"
				g.setApplied(n, kv.Value)
				if di.d.WithMetadata && kv.Metadata != nil && n.base == nil {
					g.setMetadata(n, kv.Metadata, true)
				}
			default:
				g.setApplied(n, nil)
				if n.metadata != nil {
					g.setMetadata(n, nil, true)
				}
				out.gone = append(out.gone, n)
			}
			if n.intended != nil {
				detail := "out of sync with the SB: " + kind
				if c := cause[n]; c != "" {
					detail += " (" + c + ")"
				}
				g.setStatus(n, status{state: api.ValueStateMissing, lastOp: n.lastOp, details: []string{detail}})
			}
			var value proto.Message
			if ok {
				value = kv.Value
			}
			out.found = append(out.found, api.RecordedKVPair{Key: n.key, Value: value, Origin: api.FromSB})
			drifted = append(drifted, n)
			if o, ok := s.opts.Observer.(api.DriftObserver); ok {
				o.DriftFound(di.d.Name, kind)
			}
		}
	}
	// The derived values of a base found changed: what the SB has of them
	// (an address removed from a link that is still there), as a resync's
	// refresh finds them.
	for _, n := range drifted {
		if n.base == nil && n.inGraph && n.applied != nil {
			s.refreshDerived(n, retrieved, nil)
		}
	}
	seen := map[*node]bool{}
	for _, n := range drifted {
		if root := rootOf[n]; !seen[root] {
			seen[root] = true
			if s.repairAllowed(root) {
				out.roots = append(out.roots, root)
			} else if root.intended != nil {
				g.setStatus(root, status{state: api.ValueStateMissing, lastOp: root.lastOp, details: []string{fmt.Sprintf(
					"out of sync with the SB %d times within %v: not repaired until it stays in sync that long (does something else manage it?); a resync repairs it",
					driftRepairLimit+1, driftRepairWindow)}})
			}
		}
	}
	return out, errs
}

// A value found out of sync again and again (another tool resetting what
// the agent manages) would be fought in a loop: after driftRepairLimit
// repairs within driftRepairWindow, the value is left MISSING until the
// window passes.
const (
	driftRepairLimit  = 5
	driftRepairWindow = time.Minute
)

// repairCount counts the drift repairs of one key within the window.
type repairCount struct {
	first time.Time
	count int
}

// repairAllowed tells whether a drift repair of root may run now, and
// counts it (worker only).
func (s *Scheduler) repairAllowed(root *node) bool {
	if s.opts.DriftReportOnly {
		return true // nothing is repaired anyway
	}
	now := s.clock.Now()
	for k, c := range s.driftRepairs {
		if now.Sub(c.first) > driftRepairWindow {
			delete(s.driftRepairs, k)
		}
	}
	if s.driftRepairs == nil {
		s.driftRepairs = map[string]*repairCount{}
	}
	c := s.driftRepairs[root.key]
	if c == nil {
		c = &repairCount{first: now}
		s.driftRepairs[root.key] = c
	}
	if c.count >= driftRepairLimit {
		return false
	}
	c.count++
	return true
}

// repairDrift is the run of a DriftRepair transaction, after refreshDrift:
// what stood on the values found gone goes (their derived values are gone
// with them, the values that depend on them are deleted), and, unless the
// scheduler only reports, every drifted value is created or updated again
// through its base, its derived values and its dependents after it.
func (r *txnRun) repairDrift(f *driftFound) {
	if f == nil {
		return
	}
	for _, n := range f.gone {
		if n.inGraph && !r.stopped {
			r.afterGone(n)
		}
	}
	if r.s.opts.DriftReportOnly {
		return
	}
	for _, root := range f.roots {
		if root.inGraph && !r.stopped {
			r.reconcile(root)
		}
	}
}

// equivalentValues tells whether two values of n are equivalent (its
// descriptor's ValueComparator, else proto.Equal).
func equivalentValues(n *node, a, b proto.Message) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if n.desc != nil && n.desc.d.ValueComparator != nil {
		eq, err := pure(func() bool { return n.desc.d.ValueComparator(n.key, a, b) })
		return err == nil && eq
	}
	return proto.Equal(a, b)
}

// sameValue tells whether a and b are equal values: the same pointer (a
// value kept once for the NB and the SB, a Retrieve returning the
// correlated value) or equal as protobuf messages.
func sameValue(a, b proto.Message) bool {
	return a == b || proto.Equal(a, b)
}

// correlateOf is what a Retrieve of nodes is given to correlate with: their
// intended values.
func correlateOf(nodes []*node) []api.KVWithMetadata {
	correlate := make([]api.KVWithMetadata, 0, len(nodes))
	for _, n := range nodes {
		if n.intended != nil {
			correlate = append(correlate, api.KVWithMetadata{Key: n.key, Value: n.intended, Metadata: n.metadata, Origin: api.FromNB})
		}
	}
	return correlate
}

package kvscheduler

import (
	"fmt"
	"slices"
)

// SnapshotMismatch compares the published snapshot with the graph, between
// transactions, and describes the first difference ("" when they agree):
// the snapshot is built incrementally from the nodes the graph's setters
// list, so a change that bypasses them shows here.
func (s *Scheduler) SnapshotMismatch() string {
	defer s.readSettled()()
	s.mu.RLock()
	defer s.mu.RUnlock()
	sn := s.snap.Load()
	var keys []string
	sn.scanPrefix("", func(e *valueEntry) bool {
		keys = append(keys, e.key)
		return true
	})
	if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
		return fmt.Sprintf("snapshot scan not sorted or repeats keys: %v", keys)
	}
	if got, want := len(keys), len(s.g.nodes); got != want {
		return fmt.Sprintf("snapshot holds %d values, the graph %d", got, want)
	}
	counts := map[statsGroup]int{}
	for key, n := range s.g.nodes {
		e := sn.get(key)
		if e == nil {
			return fmt.Sprintf("%s: in the graph, not in the snapshot", key)
		}
		if !e.shows(n) {
			return fmt.Sprintf("%s: snapshot %+v, graph state %v op %v applied %v intended %v", key, *e, n.state, n.lastOp, n.applied, n.intended)
		}
		counts[e.group()]++
	}
	for _, c := range sn.counts {
		if counts[c.group] != c.count {
			return fmt.Sprintf("count of %v: snapshot %d, graph %d", c.group, c.count, counts[c.group])
		}
		delete(counts, c.group)
	}
	if len(counts) > 0 {
		keys := make([]string, 0, len(counts))
		for g := range counts {
			keys = append(keys, fmt.Sprint(g))
		}
		slices.Sort(keys)
		return fmt.Sprintf("counts missing from the snapshot: %v", keys)
	}
	return ""
}

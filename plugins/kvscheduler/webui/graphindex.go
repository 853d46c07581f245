package webui

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// graphIndex is the current graph snapshot of one revision with its reverse
// edges: who depends on each key. The scheduler's API gives a value's
// dependencies (with their targets and whether they are met) only in
// snapshots, and its dependents nowhere, so the value page reads this
// index. A snapshot resolves every dependency of the graph, which is the
// slowest read the view makes (see docs/benchmarks.md), so it is built only
// for value pages, once per revision.
type graphIndex struct {
	rev   uint64
	nodes []api.GraphNode // sorted by key
	// dependents: key -> positions of the nodes with a dependency on it
	// (a Key dependency, or an AnyOf one that it satisfies), in key order.
	dependents map[string][]int32
	// derived: base key -> positions of its derived values.
	derived map[string][]int32
}

type graphCache struct {
	mu  sync.Mutex
	idx *graphIndex
}

// get returns the graph index of the current revision (see indexCache.get).
func (c *graphCache) get(s Scheduler) (*graphIndex, error) {
	rev := s.CurrentRevision()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idx != nil && c.idx.rev == rev {
		return c.idx, nil
	}
	snap, err := s.GetGraphSnapshot(time.Time{})
	if err != nil {
		return nil, err
	}
	gi := &graphIndex{rev: rev, nodes: snap.Nodes, dependents: map[string][]int32{}, derived: map[string][]int32{}}
	for i := range gi.nodes {
		n := &gi.nodes[i]
		if n.Base != "" {
			gi.derived[n.Base] = append(gi.derived[n.Base], int32(i))
		}
		for _, d := range n.Dependencies {
			for _, t := range dependencyTargets(d) {
				if l := gi.dependents[t]; len(l) == 0 || l[len(l)-1] != int32(i) {
					gi.dependents[t] = append(l, int32(i))
				}
			}
		}
	}
	c.idx = gi
	return gi, nil
}

// dependencyTargets are the keys a dependency points to: its Key (whether
// or not a value has it), else the values that satisfy it or, for an
// Exclusive one, hold its resource.
func dependencyTargets(d api.DependencyInfo) []string {
	if d.Key != "" {
		return []string{d.Key}
	}
	return d.Targets
}

// node returns the node of a key, or nil.
func (gi *graphIndex) node(key string) *api.GraphNode {
	i, ok := slices.BinarySearchFunc(gi.nodes, key, func(n api.GraphNode, k string) int { return cmp.Compare(n.Key, k) })
	if !ok {
		return nil
	}
	return &gi.nodes[i]
}

// dependentsOf returns the keys of the values that depend on key.
func (gi *graphIndex) dependentsOf(key string) []*api.GraphNode {
	pos := gi.dependents[key]
	out := make([]*api.GraphNode, len(pos))
	for i, p := range pos {
		out[i] = &gi.nodes[p]
	}
	return out
}

func (gi *graphIndex) derivedOf(key string) []*api.GraphNode {
	pos := gi.derived[key]
	out := make([]*api.GraphNode, len(pos))
	for i, p := range pos {
		out[i] = &gi.nodes[p]
	}
	return out
}

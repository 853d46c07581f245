package webui

import (
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// localGraph is the part of the graph one value page shows, read from the
// scheduler value by value (api.KVScheduler.GetGraphNeighbours) as the page
// walks it: a value's dependencies resolved as in a snapshot, its
// dependents and derived values. It costs what the shown values' edges
// cost, whatever the size of the graph (a snapshot resolves every
// dependency of the graph: ~250 ms at 100k values). One page reads it from
// one request; the reads are not one atomic view, and a transaction
// finishing in between can show in the later ones.
type localGraph struct {
	s Scheduler
	// read holds every key asked for: nil when no value has it.
	read map[string]*api.GraphNeighbours
}

func newLocalGraph(s Scheduler) *localGraph {
	return &localGraph{s: s, read: map[string]*api.GraphNeighbours{}}
}

// fetch reads the keys not read yet, in one call.
func (g *localGraph) fetch(keys []string) {
	var missing []string
	for _, k := range keys {
		if _, ok := g.read[k]; !ok {
			missing = append(missing, k)
			g.read[k] = nil
		}
	}
	if len(missing) == 0 {
		return
	}
	for _, nb := range g.s.GetGraphNeighbours(missing...) {
		g.read[nb.Node.Key] = &nb
	}
}

// neighbours returns what the graph has of key, or nil.
func (g *localGraph) neighbours(key string) *api.GraphNeighbours {
	g.fetch([]string{key})
	return g.read[key]
}

// node returns the node of key, or nil.
func (g *localGraph) node(key string) *api.GraphNode {
	if nb := g.neighbours(key); nb != nil {
		return &nb.Node
	}
	return nil
}

// nodes returns the nodes of the keys that have a value, in their order.
func (g *localGraph) nodes(keys []string) []*api.GraphNode {
	g.fetch(keys)
	out := make([]*api.GraphNode, 0, len(keys))
	for _, k := range keys {
		if nb := g.read[k]; nb != nil {
			out = append(out, &nb.Node)
		}
	}
	return out
}

// dependentKeys returns the keys of the values that depend on key.
func (g *localGraph) dependentKeys(key string) []string {
	if nb := g.neighbours(key); nb != nil {
		return nb.Dependents
	}
	return nil
}

// derivedKeys returns the keys of the values derived from key.
func (g *localGraph) derivedKeys(key string) []string {
	if nb := g.neighbours(key); nb != nil {
		return nb.Derived
	}
	return nil
}

// dependencyKeys returns the keys a node depends on, each once, in the
// order of its dependencies (missing keys included: nodes leaves them out).
func dependencyKeys(n *api.GraphNode) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range n.Dependencies {
		for _, t := range dependencyTargets(d) {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
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

package webui

import (
	"unicode/utf8"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// The neighbourhood of a value is drawn server-side as an inline SVG, in
// layered columns: the dependencies of its dependencies, its dependencies,
// the value with its derived values under it, its dependents, and their
// dependents. Each column shows at most maxColumn values and says how many
// more there are, with a link to the full lists below the graph, so the
// picture stays readable whatever the number of neighbours.

const (
	maxColumn   = 12
	nodeWidth   = 240
	nodeHeight  = 26
	rowPitch    = 34
	columnPitch = 300
	margin      = 10
	labelRunes  = 30 // what fits in nodeWidth at 12px monospace
)

type svgNode struct {
	Key, Label, State string
	X, Y              int
	Center, Derived   bool
}

type svgEdge struct {
	X1, Y1, X2, Y2 int
	// Derived: from a value to one derived from it; Back: from a
	// dependency left of its dependent (drawn left to right).
	Derived, Back bool
}

// svgMore is the "N more" line under a capped column.
type svgMore struct {
	X, Y   int
	N      int
	Anchor string // the list on the page that has them all
}

type neighbourhood struct {
	Width, Height int
	NodeW, NodeH  int
	Nodes         []svgNode
	Edges         []svgEdge
	More          []svgMore
}

// column is the nodes of one layer, capped, and how many it left out.
type column struct {
	nodes  []*api.GraphNode
	hidden int
	anchor string
}

// capColumn makes a column of the first maxColumn of keys that have a
// value (only those are read).
func capColumn(g *localGraph, keys []string, anchor string) column {
	c := column{anchor: anchor}
	if len(keys) > maxColumn {
		c.hidden = len(keys) - maxColumn
		keys = keys[:maxColumn]
	}
	c.nodes = g.nodes(keys)
	return c
}

// secondHop returns the keys next (by next) to the shown nodes that are
// not shown already, each once.
func secondHop(shown []*api.GraphNode, exclude map[string]bool, next func(*api.GraphNode) []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range shown {
		for _, k := range next(n) {
			if !exclude[k] && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// without returns keys without those in exclude.
func without(keys []string, exclude map[string]bool) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if !exclude[k] {
			out = append(out, k)
		}
	}
	return out
}

// layoutNeighbourhood lays out the neighbourhood of center. A value that is
// both a dependency and a dependent of the centre (the two ends of a veth
// pair) is drawn once, among the dependencies, with an edge each way.
func layoutNeighbourhood(g *localGraph, center *api.GraphNode) *neighbourhood {
	shown := map[string]bool{center.Key: true}
	mark := func(c column) column {
		for _, n := range c.nodes {
			shown[n.Key] = true
		}
		return c
	}
	deps := mark(capColumn(g, without(dependencyKeys(center), shown), "dependencies"))
	derived := mark(capColumn(g, without(g.derivedKeys(center.Key), shown), "derived"))
	dependents := mark(capColumn(g, without(g.dependentKeys(center.Key), shown), "dependents"))
	deps2 := mark(capColumn(g, secondHop(deps.nodes, shown, dependencyKeys), "dependencies"))
	dependents2 := mark(capColumn(g, secondHop(dependents.nodes, shown, func(n *api.GraphNode) []string { return g.dependentKeys(n.Key) }), "dependents"))

	// The centre column: the value, then its derived values.
	middle := column{nodes: append([]*api.GraphNode{center}, derived.nodes...), hidden: derived.hidden, anchor: "derived"}
	var cols []column
	for _, c := range []column{deps2, deps, middle, dependents, dependents2} {
		if len(c.nodes) > 0 {
			cols = append(cols, c)
		}
	}
	rows := 0
	for _, c := range cols {
		rows = max(rows, len(c.nodes)+min(c.hidden, 1))
	}
	nb := &neighbourhood{NodeW: nodeWidth, NodeH: nodeHeight,
		Width:  2*margin + (len(cols)-1)*columnPitch + nodeWidth,
		Height: 2*margin + (rows-1)*rowPitch + nodeHeight}
	pos := map[string][2]int{} // key -> x, y of the node's box
	for ci, c := range cols {
		x := margin + ci*columnPitch
		lines := len(c.nodes) + min(c.hidden, 1)
		y0 := margin + (rows-lines)*rowPitch/2
		if c.nodes[0] == center {
			y0 = margin // the value on top, its derived values under it
		}
		for i, n := range c.nodes {
			y := y0 + i*rowPitch
			pos[n.Key] = [2]int{x, y}
			nb.Nodes = append(nb.Nodes, svgNode{Key: n.Key, Label: shorten(n.Key), State: n.State.String(),
				X: x, Y: y, Center: n == center, Derived: n != center && n.Base == center.Key})
		}
		if c.hidden > 0 {
			nb.More = append(nb.More, svgMore{X: x + 8, Y: y0 + len(c.nodes)*rowPitch + nodeHeight/2 + 4, N: c.hidden, Anchor: c.anchor})
		}
	}
	// Edges go from a value to what it depends on: right to left, or left
	// to right (back) for a dependency drawn left of its dependent's
	// column, such as the centre's dependency that depends on it too.
	edge := func(from, to string) {
		f, okF := pos[from]
		t, okT := pos[to]
		switch {
		case !okF || !okT || f[0] == t[0]:
		case f[0] > t[0]:
			nb.Edges = append(nb.Edges, svgEdge{X1: f[0], Y1: f[1] + nodeHeight/2, X2: t[0] + nodeWidth, Y2: t[1] + nodeHeight/2})
		default:
			nb.Edges = append(nb.Edges, svgEdge{X1: f[0] + nodeWidth, Y1: f[1] + nodeHeight/2 + 6, X2: t[0], Y2: t[1] + nodeHeight/2 + 6, Back: true})
		}
	}
	for _, n := range nb.Nodes {
		gn := g.node(n.Key)
		for _, d := range gn.Dependencies {
			for _, t := range dependencyTargets(d) {
				edge(n.Key, t)
			}
		}
		if n.Derived {
			c, d := pos[center.Key], pos[n.Key]
			nb.Edges = append(nb.Edges, svgEdge{X1: c[0] + 12, Y1: c[1] + nodeHeight, X2: d[0] + 12, Y2: d[1], Derived: true})
		}
	}
	return nb
}

// shorten cuts a long key in the middle, so that both its kind and its
// name stay readable in a box.
func shorten(key string) string {
	if utf8.RuneCountInString(key) <= labelRunes {
		return key
	}
	r := []rune(key)
	head := labelRunes / 3
	tail := labelRunes - head - 1
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

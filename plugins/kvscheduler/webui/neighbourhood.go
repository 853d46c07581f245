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
	labelRunes  = 34
)

type svgNode struct {
	Key, Label, State string
	X, Y              int
	Center, Derived   bool
}

type svgEdge struct {
	X1, Y1, X2, Y2 int
	Derived        bool
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

// column is the keys of one layer, capped, and how many it left out.
type column struct {
	nodes  []*api.GraphNode
	hidden int
	anchor string
}

func capColumn(nodes []*api.GraphNode, anchor string) column {
	c := column{nodes: nodes, anchor: anchor}
	if len(nodes) > maxColumn {
		c.nodes, c.hidden = nodes[:maxColumn], len(nodes)-maxColumn
	}
	return c
}

// dependencyNodes returns the nodes a node depends on (those in the graph),
// each once, in the order of its dependencies.
func dependencyNodes(gi *graphIndex, n *api.GraphNode) []*api.GraphNode {
	var out []*api.GraphNode
	seen := map[string]bool{}
	for _, d := range n.Dependencies {
		for _, t := range dependencyTargets(d) {
			if tn := gi.node(t); tn != nil && !seen[t] {
				seen[t] = true
				out = append(out, tn)
			}
		}
	}
	return out
}

// secondHop returns the neighbours (by next) of the shown nodes that are
// not shown already, each once.
func secondHop(shown []*api.GraphNode, exclude map[string]bool, next func(*api.GraphNode) []*api.GraphNode) []*api.GraphNode {
	var out []*api.GraphNode
	seen := map[string]bool{}
	for _, n := range shown {
		for _, m := range next(n) {
			if !exclude[m.Key] && !seen[m.Key] {
				seen[m.Key] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// layoutNeighbourhood lays out the neighbourhood of center.
func layoutNeighbourhood(gi *graphIndex, center *api.GraphNode) *neighbourhood {
	deps := capColumn(dependencyNodes(gi, center), "dependencies")
	dependents := capColumn(gi.dependentsOf(center.Key), "dependents")
	derived := capColumn(gi.derivedOf(center.Key), "derived")
	shown := map[string]bool{center.Key: true}
	for _, c := range []column{deps, dependents, derived} {
		for _, n := range c.nodes {
			shown[n.Key] = true
		}
	}
	deps2 := capColumn(secondHop(deps.nodes, shown, func(n *api.GraphNode) []*api.GraphNode { return dependencyNodes(gi, n) }), "dependencies")
	for _, n := range deps2.nodes {
		shown[n.Key] = true
	}
	dependents2 := capColumn(secondHop(dependents.nodes, shown, func(n *api.GraphNode) []*api.GraphNode { return gi.dependentsOf(n.Key) }), "dependents")

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
	// Edges go from a value to what it depends on (right to left).
	edge := func(from, to string) {
		f, okF := pos[from]
		t, okT := pos[to]
		if !okF || !okT || f[0] <= t[0] {
			return
		}
		nb.Edges = append(nb.Edges, svgEdge{X1: f[0], Y1: f[1] + nodeHeight/2, X2: t[0] + nodeWidth, Y2: t[1] + nodeHeight/2})
	}
	for _, n := range nb.Nodes {
		gn := gi.node(n.Key)
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

// Package graphviz draws a graph of the KV Scheduler (an api.GraphSnapshot)
// for people: as Graphviz DOT (DOT), as an SVG picture rendered by the
// Graphviz `dot` program (SVG), or as a Mermaid flowchart (Mermaid).
//
// # What the picture shows
//
// Every value of the snapshot is one node, drawn inside a box (a cluster, in
// Mermaid a subgraph) titled with the name of its descriptor; values without
// a descriptor (properties, and values waiting as UNIMPLEMENTED) share the
// box "(no descriptor)". A node's label has, one per line:
//
//  1. the key;
//  2. the state, with the last operation when there was one, e.g.
//     "FAILED (last op: CREATE)";
//  3. the error, when there is one ("error: ...", on one line, cut to 60
//     characters);
//  4. the value as compact protobuf text (prototext), on one line, cut to 60
//     characters with an ellipsis; no line for a nil or empty value.
//
// Control characters of keys (a newline, a tab, ...) are shown as Go escapes
// (\n, \t, \x01), and bytes that are not UTF-8 as \xNN, so that a key is
// always one line of text.
//
// # Shapes
//
//   - A base value is a rounded box; a derived value (properties included)
//     is an ellipse (in Mermaid a stadium).
//   - A dashed grey edge labelled "derived" goes from a base value to each
//     value derived from it.
//   - A dependency is an edge from the value to each of its targets (the
//     values that satisfy it), labelled with the dependency's label: solid
//     and dark grey when satisfied, dashed and red when not. An unsatisfied
//     dependency with no target points to a small dashed red box
//     "missing: KEY" (for an AnyOf dependency "missing: PREFIX*, ...", or
//     "missing: (any key)" when it names no prefix). Such boxes are shared by
//     the values that miss the same thing.
//   - The values whose keys are in the snapshot's Changed list (those the
//     transaction operated on) have a thick (3) yellow border.
//
// # Colours
//
// Nodes are filled with a colour per state:
//
//	CONFIGURED     #b8e6b8  green
//	OBTAINED       #b3d4fc  blue
//	DISCOVERED     #d7c6f2  lavender
//	PENDING        #ffdd80  yellow-orange
//	RETRYING       #ffa366  orange-red
//	INVALID        #ffb3b3  light red
//	FAILED         #ff7f7f  red
//	UNIMPLEMENTED  #d3d3d3  grey
//	REMOVED        #e6e6e6  light grey, dashed border
//	MISSING        #f2f2f2  very light grey, dashed border
//	NONEXISTENT    #ffffff  white, dashed border
//
// Both DOT and Mermaid outputs carry a legend listing the colours of the
// states present in the graph (and the meaning of the yellow border and of
// red edges when the graph has some).
//
// Focus narrows a snapshot to the values under a key prefix and the values
// they touch, for graphs too large to lay out or read (Graphviz takes about
// 20 s for 5,000 values).
//
// Output is deterministic: clusters are sorted by descriptor name ("(no
// descriptor)" last), nodes by key within their cluster (and numbered n0,
// n1, ... in that order; missing targets m0, m1, ... by text), edges by
// source then target then label.
package graphviz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// ErrNoDot is returned by SVG when the Graphviz `dot` program is not
// installed (not found in PATH).
var ErrNoDot = errors.New("graphviz: the Graphviz dot program is not installed: install Graphviz, e.g. apt-get install graphviz, or ask for format=dot")

const (
	// maxText is the most characters shown of a value or an error.
	maxText = 60
	// noDescriptor titles the cluster of the values without a descriptor.
	noDescriptor = "(no descriptor)"
	// changedColor is the border of the changed values.
	changedColor = "#ffcc00"
	// unsatisfiedColor draws unsatisfied dependencies and missing targets.
	unsatisfiedColor = "#d62728"
	// satisfiedColor draws satisfied dependencies.
	satisfiedColor = "#404040"
	// derivedColor draws the derived edges.
	derivedColor = "#808080"
)

// stateStyle is how a state is drawn.
type stateStyle struct {
	fill   string
	dashed bool
}

var stateStyles = map[api.ValueState]stateStyle{
	api.ValueStateNonexistent:   {fill: "#ffffff", dashed: true},
	api.ValueStateMissing:       {fill: "#f2f2f2", dashed: true},
	api.ValueStateUnimplemented: {fill: "#d3d3d3"},
	api.ValueStateRemoved:       {fill: "#e6e6e6", dashed: true},
	api.ValueStateConfigured:    {fill: "#b8e6b8"},
	api.ValueStateObtained:      {fill: "#b3d4fc"},
	api.ValueStateDiscovered:    {fill: "#d7c6f2"},
	api.ValueStatePending:       {fill: "#ffdd80"},
	api.ValueStateInvalid:       {fill: "#ffb3b3"},
	api.ValueStateFailed:        {fill: "#ff7f7f"},
	api.ValueStateRetrying:      {fill: "#ffa366"},
}

// styleOf returns the style of a state (white for an unknown one).
func styleOf(st api.ValueState) stateStyle {
	if s, ok := stateStyles[st]; ok {
		return s
	}
	return stateStyle{fill: "#ffffff"}
}

// stateName is the name of a state usable as an identifier.
func stateName(st api.ValueState) string {
	if _, ok := stateStyles[st]; ok {
		return st.String()
	}
	return "STATE_" + strconv.Itoa(int(st))
}

// ---------------------------------------------------------------------------
// The model both formats are drawn from.

type edgeKind int

const (
	edgeDerived edgeKind = iota
	edgeDep
)

type vnode struct {
	id      string
	lines   []string
	derived bool
	state   api.ValueState
	changed bool
}

type placeholder struct {
	id   string
	text string
}

type cluster struct {
	label string
	nodes []int // indexes into model.nodes
}

type edge struct {
	from, to  int // node indexes; placeholders follow the nodes
	kind      edgeKind
	label     string
	satisfied bool
}

type model struct {
	title          []string
	nodes          []vnode
	placeholders   []placeholder
	clusters       []cluster
	edges          []edge
	states         []api.ValueState // present, in enum order
	anyChanged     bool
	anyUnsatisfied bool
}

// endpoint returns the id of a node or placeholder index.
func (m *model) endpoint(i int) string {
	if i < len(m.nodes) {
		return m.nodes[i].id
	}
	return m.placeholders[i-len(m.nodes)].id
}

func build(s *api.GraphSnapshot) (*model, error) {
	if s == nil {
		return nil, errors.New("graphviz: nil graph snapshot")
	}
	m := &model{title: title(s)}

	// Clusters by descriptor name, "(no descriptor)" last; nodes numbered in
	// the order they are written: by cluster, then by key.
	byDesc := map[string][]int{}
	for i := range s.Nodes {
		d := s.Nodes[i].Descriptor
		byDesc[d] = append(byDesc[d], i)
	}
	descs := make([]string, 0, len(byDesc))
	for d := range byDesc {
		descs = append(descs, d)
	}
	sort.Slice(descs, func(a, b int) bool {
		if (descs[a] == "") != (descs[b] == "") {
			return descs[b] == ""
		}
		return descs[a] < descs[b]
	})
	changed := make(map[string]bool, len(s.Changed))
	for _, k := range s.Changed {
		changed[k] = true
	}
	order := make([]int, 0, len(s.Nodes)) // node index -> index in s.Nodes
	index := make(map[string]int, len(s.Nodes))
	present := map[api.ValueState]bool{}
	for _, d := range descs {
		members := byDesc[d]
		sort.SliceStable(members, func(a, b int) bool { return s.Nodes[members[a]].Key < s.Nodes[members[b]].Key })
		c := cluster{label: noDescriptor}
		if d != "" {
			c.label = visible(d)
		}
		for _, oi := range members {
			i := len(order)
			order = append(order, oi)
			gn := &s.Nodes[oi]
			if _, dup := index[gn.Key]; !dup {
				index[gn.Key] = i
			}
			vn := vnode{
				id:      "n" + strconv.Itoa(i),
				lines:   nodeLines(gn),
				derived: gn.Derived || gn.Base != "",
				state:   gn.State,
				changed: changed[gn.Key],
			}
			m.anyChanged = m.anyChanged || vn.changed
			present[gn.State] = true
			m.nodes = append(m.nodes, vn)
			c.nodes = append(c.nodes, i)
		}
		m.clusters = append(m.clusters, c)
	}
	for st := range present {
		m.states = append(m.states, st)
	}
	sort.Slice(m.states, func(a, b int) bool { return m.states[a] < m.states[b] })

	// Edges; missing targets are collected by text first, then numbered.
	type pending struct {
		from    int
		to      int    // node index, or -1
		missing string // placeholder text when to < 0
		kind    edgeKind
		label   string
		sat     bool
	}
	var pend []pending
	missing := map[string]bool{}
	for i, oi := range order {
		gn := &s.Nodes[oi]
		if gn.Base != "" {
			if b, ok := index[gn.Base]; ok && b != i {
				pend = append(pend, pending{from: b, to: i, kind: edgeDerived, label: "derived", sat: true})
			}
		}
		for _, d := range gn.Dependencies {
			label := oneLine(d.Label, maxText)
			if len(d.Targets) == 0 {
				if d.Satisfied {
					continue
				}
				txt := "missing: " + missingText(d)
				missing[txt] = true
				pend = append(pend, pending{from: i, to: -1, missing: txt, kind: edgeDep, label: label})
				continue
			}
			for _, t := range d.Targets {
				if ti, ok := index[t]; ok {
					pend = append(pend, pending{from: i, to: ti, kind: edgeDep, label: label, sat: d.Satisfied})
				} else {
					txt := "missing: " + visible(t)
					missing[txt] = true
					pend = append(pend, pending{from: i, to: -1, missing: txt, kind: edgeDep, label: label, sat: d.Satisfied})
				}
			}
		}
	}
	texts := make([]string, 0, len(missing))
	for t := range missing {
		texts = append(texts, t)
	}
	sort.Strings(texts)
	phIndex := make(map[string]int, len(texts))
	for j, t := range texts {
		phIndex[t] = len(m.nodes) + j
		m.placeholders = append(m.placeholders, placeholder{id: "m" + strconv.Itoa(j), text: t})
	}
	for _, p := range pend {
		e := edge{from: p.from, to: p.to, kind: p.kind, label: p.label, satisfied: p.sat}
		if p.to < 0 {
			e.to = phIndex[p.missing]
		}
		m.anyUnsatisfied = m.anyUnsatisfied || !e.satisfied
		m.edges = append(m.edges, e)
	}
	sort.SliceStable(m.edges, func(a, b int) bool {
		x, y := m.edges[a], m.edges[b]
		switch {
		case x.from != y.from:
			return x.from < y.from
		case x.to != y.to:
			return x.to < y.to
		case x.kind != y.kind:
			return x.kind < y.kind
		case x.label != y.label:
			return x.label < y.label
		}
		return x.satisfied && !y.satisfied
	})
	return m, nil
}

// title is the caption of the graph, one string per line.
func title(s *api.GraphSnapshot) []string {
	t := "KV Scheduler graph"
	if s.TxnSeq > 0 {
		t += " after transaction #" + strconv.FormatUint(s.TxnSeq, 10)
	} else {
		t += " before any kept transaction"
	}
	if !s.Time.IsZero() {
		t += " at " + s.Time.UTC().Format(time.RFC3339)
	}
	if s.Current {
		t += " (current)"
	}
	lines := []string{t}
	if s.Note != "" {
		for _, note := range strings.Split(s.Note, "; ") {
			lines = append(lines, "note: "+oneLine(note, 2*maxText))
		}
	}
	return lines
}

// nodeLines are the lines of a node's label.
func nodeLines(gn *api.GraphNode) []string {
	state := stateName(gn.State)
	if gn.LastOp != api.OpUndefined {
		state += " (last op: " + gn.LastOp.String() + ")"
	}
	lines := []string{visible(gn.Key), state}
	if gn.Error != "" {
		lines = append(lines, "error: "+oneLine(gn.Error, maxText))
	}
	if v := valueText(gn.Value); v != "" {
		lines = append(lines, v)
	}
	return lines
}

// missingText names what an unsatisfied dependency without target waits for.
func missingText(d api.DependencyInfo) string {
	if d.Key != "" {
		return visible(d.Key)
	}
	if len(d.AnyOfPrefixes) == 0 {
		return "(any key)"
	}
	ps := make([]string, len(d.AnyOfPrefixes))
	for i, p := range d.AnyOfPrefixes {
		ps[i] = visible(p) + "*"
	}
	return strings.Join(ps, ", ")
}

// valueText is the value as compact prototext on one line, cut to maxText.
func valueText(v proto.Message) string {
	if v == nil || !v.ProtoReflect().IsValid() {
		return ""
	}
	b, err := prototext.MarshalOptions{}.Marshal(v)
	if err != nil {
		return oneLine("(unprintable value: "+err.Error()+")", maxText)
	}
	return oneLine(squeeze(string(b)), maxText)
}

// squeeze collapses the runs of spaces of prototext outside string literals
// (prototext adds random extra spaces to keep its output unstable).
func squeeze(s string) string {
	var b strings.Builder
	inStr, esc := byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr != 0:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == inStr:
				inStr = 0
			}
		case c == '"' || c == '\'':
			inStr = c
		case c == ' ' && i > 0 && s[i-1] == ' ':
			continue
		}
		b.WriteByte(c)
	}
	return strings.TrimSpace(b.String())
}

// oneLine collapses the white space of s (newlines included) to single
// spaces, cuts it to max characters with an ellipsis, and makes it visible.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = strings.TrimRight(string(r[:max-1]), " ") + "…"
	}
	return visible(s)
}

// visible replaces control characters by Go escapes and bytes that are not
// UTF-8 by \xNN, so that the text is one printable line.
func visible(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == ' ' || unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r) // e.g. '\n', '\x01', '\u200b'
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// DOT

// dotQuote returns s as a quoted DOT string for a label: a quote and a
// backslash are escaped with a backslash (Graphviz reads \N, \l, ... in
// labels), and an ampersand is written &amp; (Graphviz decodes HTML entities
// in labels too).
func dotQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '&':
			b.WriteString("&amp;")
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// dotLabel joins lines into one quoted DOT label, centred.
func dotLabel(lines []string) string { return dotLines(lines, `\n`, "") }

// dotLines joins lines into one quoted DOT label, separated by sep (\n:
// centred, \l: left-justified) and followed by end.
func dotLines(lines []string, sep, end string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = dotQuote(l)
		q[i] = q[i][1 : len(q[i])-1]
	}
	return `"` + strings.Join(q, sep) + end + `"`
}

// htmlEscape escapes text for a Graphviz HTML-like label.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// DOT writes the graph of s in Graphviz DOT: one cluster per descriptor,
// nodes filled with the colour of their state, derived and dependency edges,
// and a legend (see the package documentation). The output is
// deterministic.
func DOT(w io.Writer, s *api.GraphSnapshot) error {
	m, err := build(s)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("// KV Scheduler graph, drawn by netagent's graphviz package.\n")
	p("// Fill colour = state (see the legend); thick yellow border = changed by the\n")
	p("// transaction; dashed grey edge = derived value; red dashed edge = unsatisfied\n")
	p("// dependency.\n")
	p("digraph kvscheduler {\n")
	p("\tgraph [rankdir=LR, fontname=\"Helvetica\", fontsize=12, labelloc=t, labeljust=l, nodesep=0.3, ranksep=0.6,\n")
	p("\t\tlabel=%s];\n", dotLines(m.title, `\l`, `\l`)) // lines left-justified
	p("\tnode [fontname=\"Helvetica\", fontsize=10, shape=box, style=\"rounded,filled\", color=\"#555555\", penwidth=1];\n")
	p("\tedge [fontname=\"Helvetica\", fontsize=9, color=%q, fontcolor=%q];\n", satisfiedColor, satisfiedColor)

	for ci, c := range m.clusters {
		p("\n\tsubgraph cluster_%d {\n", ci)
		p("\t\tlabel=%s;\n", dotQuote(c.label))
		p("\t\tstyle=\"rounded,filled\"; fillcolor=\"#fafafa\"; color=\"#999999\"; fontsize=11;\n")
		for _, ni := range c.nodes {
			n := &m.nodes[ni]
			st := styleOf(n.state)
			attrs := []string{"label=" + dotLabel(n.lines)}
			style := "rounded,filled"
			if n.derived {
				attrs = append(attrs, "shape=ellipse")
				style = "filled"
			}
			if st.dashed {
				style += ",dashed"
			}
			if style != "rounded,filled" {
				attrs = append(attrs, "style="+dotQuote(style))
			}
			attrs = append(attrs, "fillcolor="+dotQuote(st.fill))
			if n.changed {
				attrs = append(attrs, "color="+dotQuote(changedColor), "penwidth=3")
			}
			p("\t\t%s [%s];\n", n.id, strings.Join(attrs, ", "))
		}
		p("\t}\n")
	}

	if len(m.placeholders) > 0 {
		p("\n\t// Targets of unsatisfied dependencies that are not in the graph.\n")
		for _, ph := range m.placeholders {
			p("\t%s [label=%s, shape=box, style=\"dashed\", color=%q, fontcolor=%q, fontsize=8, height=0.2];\n",
				ph.id, dotQuote(ph.text), unsatisfiedColor, unsatisfiedColor)
		}
	}

	if len(m.edges) > 0 {
		p("\n")
	}
	for _, e := range m.edges {
		attrs := []string{"label=" + dotQuote(e.label)}
		switch {
		case e.kind == edgeDerived:
			attrs = append(attrs, "style=dashed", "color="+dotQuote(derivedColor), "fontcolor="+dotQuote(derivedColor), "arrowhead=empty")
		case !e.satisfied:
			attrs = append(attrs, "style=dashed", "color="+dotQuote(unsatisfiedColor), "fontcolor="+dotQuote(unsatisfiedColor))
		}
		p("\t%s -> %s [%s];\n", m.endpoint(e.from), m.endpoint(e.to), strings.Join(attrs, ", "))
	}

	if len(m.states) > 0 {
		p("\n\tsubgraph cluster_legend {\n")
		p("\t\tlabel=\"legend\"; style=\"rounded,dashed\"; color=\"#999999\"; fontsize=10;\n")
		p("\t\tlegend [shape=plain, style=\"\", fontsize=9, label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"2\" cellpadding=\"3\">\n")
		for _, st := range m.states {
			p("\t\t\t<tr><td bgcolor=%q>%s</td></tr>\n", styleOf(st).fill, htmlEscape(stateName(st)))
		}
		if m.anyChanged {
			p("\t\t\t<tr><td border=\"3\" color=%q>changed by the transaction</td></tr>\n", changedColor)
		}
		if m.anyUnsatisfied {
			p("\t\t\t<tr><td color=%q><font color=%q>red dashed edge: unsatisfied</font></td></tr>\n", unsatisfiedColor, unsatisfiedColor)
		}
		p("\t\t</table>>];\n")
		p("\t}\n")
	}
	p("}\n")
	_, err = w.Write(b.Bytes())
	return err
}

// ---------------------------------------------------------------------------
// SVG

// SVG renders the graph of s as SVG with the Graphviz `dot` program (dot
// -Tsvg, found in PATH). It returns ErrNoDot when dot is not installed, and
// an error with dot's standard error output when dot fails.
func SVG(ctx context.Context, s *api.GraphSnapshot) ([]byte, error) {
	var in bytes.Buffer
	if err := DOT(&in, s); err != nil {
		return nil, err
	}
	path, err := exec.LookPath("dot")
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, ErrNoDot
		}
		return nil, fmt.Errorf("%w (%v)", ErrNoDot, err)
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, &out, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if ctx.Err() != nil {
			return nil, fmt.Errorf("graphviz: dot -Tsvg: %w", ctx.Err())
		}
		if msg == "" {
			return nil, fmt.Errorf("graphviz: dot -Tsvg: %v", err)
		}
		return nil, fmt.Errorf("graphviz: dot -Tsvg: %v: %s", err, msg)
	}
	return out.Bytes(), nil
}

// ---------------------------------------------------------------------------
// Mermaid

// mermaidEscape escapes text for a quoted Mermaid label, with Mermaid's
// entity codes (#quot; #35; ...), so that no character of a key can end the
// label or be read as HTML or Markdown.
func mermaidEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString("#quot;")
		case '#':
			b.WriteString("#35;")
		case '&':
			b.WriteString("#amp;")
		case '<':
			b.WriteString("#lt;")
		case '>':
			b.WriteString("#gt;")
		case '|':
			b.WriteString("#124;")
		case '`':
			b.WriteString("#96;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func mermaidLabel(lines []string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = mermaidEscape(l)
	}
	return `"` + strings.Join(q, "<br/>") + `"`
}

// Mermaid writes the graph of s as a Mermaid flowchart: one subgraph per
// descriptor, a class per state, dotted derived edges and labelled
// dependency edges. Node ids are n0, n1, ... (values, by key) and m0, m1,
// ... (missing targets). The output is deterministic.
func Mermaid(w io.Writer, s *api.GraphSnapshot) error {
	m, err := build(s)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("---\ntitle: %s\n---\n", mermaidTitle(m.title))
	p("%%%% Fill colour = state (see the legend); thick yellow border = changed by the\n")
	p("%%%% transaction; dotted grey edge = derived value; red dotted edge ending in x =\n")
	p("%%%% unsatisfied dependency.\n")
	p("flowchart LR\n")
	for ci, c := range m.clusters {
		p("    subgraph c%d[%s]\n", ci, mermaidLabel([]string{c.label}))
		for _, ni := range c.nodes {
			n := &m.nodes[ni]
			open, closing := "(", ")"
			if n.derived {
				open, closing = "([", "])"
			}
			p("        %s%s%s%s\n", n.id, open, mermaidLabel(n.lines), closing)
		}
		p("    end\n")
	}
	for _, ph := range m.placeholders {
		p("    %s[%s]\n", ph.id, mermaidLabel([]string{ph.text}))
	}

	var derived, unsat []string
	for i, e := range m.edges {
		arrow := "-->"
		switch {
		case e.kind == edgeDerived:
			arrow = "-.->"
			derived = append(derived, strconv.Itoa(i))
		case !e.satisfied:
			arrow = "-.-x"
			unsat = append(unsat, strconv.Itoa(i))
		}
		p("    %s %s|%s| %s\n", m.endpoint(e.from), arrow, mermaidLabel([]string{e.label}), m.endpoint(e.to))
	}

	// Legend: one node per state present, in a subgraph of its own.
	if len(m.states) > 0 {
		p("    subgraph legend[\"legend\"]\n")
		for _, st := range m.states {
			name := stateName(st)
			p("        legend_%s[\"%s\"]:::%s\n", name, name, name)
		}
		if m.anyChanged {
			p("        legend_changed[\"changed by the transaction\"]\n")
		}
		p("    end\n")
	}

	for _, st := range m.states {
		style := styleOf(st)
		p("    classDef %s fill:%s,stroke:#555555,color:#000000", stateName(st), style.fill)
		if style.dashed {
			p(",stroke-dasharray:5 3")
		}
		p("\n")
	}
	if len(m.placeholders) > 0 {
		p("    classDef missing fill:#ffffff,stroke:%s,color:%s,stroke-dasharray:4 2,font-size:10px\n", unsatisfiedColor, unsatisfiedColor)
	}
	for _, st := range m.states {
		var ids []string
		for i := range m.nodes {
			if m.nodes[i].state == st {
				ids = append(ids, m.nodes[i].id)
			}
		}
		p("    class %s %s\n", strings.Join(ids, ","), stateName(st))
	}
	if len(m.placeholders) > 0 {
		ids := make([]string, len(m.placeholders))
		for i, ph := range m.placeholders {
			ids[i] = ph.id
		}
		p("    class %s missing\n", strings.Join(ids, ","))
	}
	for i := range m.nodes {
		if m.nodes[i].changed {
			p("    style %s stroke:%s,stroke-width:3px\n", m.nodes[i].id, changedColor)
		}
	}
	if m.anyChanged {
		p("    style legend_changed fill:#ffffff,stroke:%s,stroke-width:3px\n", changedColor)
	}
	if len(derived) > 0 {
		p("    linkStyle %s stroke:%s,color:%s\n", strings.Join(derived, ","), derivedColor, derivedColor)
	}
	if len(unsat) > 0 {
		p("    linkStyle %s stroke:%s,color:%s\n", strings.Join(unsat, ","), unsatisfiedColor, unsatisfiedColor)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// mermaidTitle is the title for Mermaid's front matter (YAML): one line,
// quoted.
func mermaidTitle(lines []string) string {
	return strconv.Quote(strings.Join(lines, " — "))
}

// Focus returns the part of a snapshot about the values whose keys start
// with prefix: those values, and the values they touch (their bases and
// derived values, the targets of their dependencies, and the values that
// depend on them), so that each kept value is drawn with its neighbours. The
// Note says what was left out. An empty prefix, or one that matches every
// value, returns s itself.
func Focus(s *api.GraphSnapshot, prefix string) *api.GraphSnapshot {
	if prefix == "" {
		return s
	}
	inFocus := map[string]bool{}
	for i := range s.Nodes {
		if strings.HasPrefix(s.Nodes[i].Key, prefix) {
			inFocus[s.Nodes[i].Key] = true
		}
	}
	if len(inFocus) == len(s.Nodes) {
		return s
	}
	keep := map[string]bool{}
	for i := range s.Nodes {
		gn := &s.Nodes[i]
		focused := inFocus[gn.Key]
		if focused {
			keep[gn.Key] = true
			if gn.Base != "" {
				keep[gn.Base] = true
			}
		}
		if inFocus[gn.Base] {
			keep[gn.Key] = true // a derived value of a focused one
		}
		for _, d := range gn.Dependencies {
			for _, target := range d.Targets {
				if focused {
					keep[target] = true
				}
				if inFocus[target] {
					keep[gn.Key] = true // depends on a focused one
				}
			}
		}
	}
	out := *s
	out.Nodes = nil
	for i := range s.Nodes {
		if keep[s.Nodes[i].Key] {
			out.Nodes = append(out.Nodes, s.Nodes[i])
		}
	}
	out.Changed = nil
	for _, k := range s.Changed {
		if keep[k] {
			out.Changed = append(out.Changed, k)
		}
	}
	note := fmt.Sprintf("values under %q and those they touch: %d of %d", prefix, len(out.Nodes), len(s.Nodes))
	if out.Note != "" {
		note = out.Note + "; " + note
	}
	out.Note = note
	return &out
}

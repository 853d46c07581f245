package kvscheduler

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Every value is a node, so the node's size is most of the scheduler's memory
// per value (docs/benchmarks.md, W6). Keep it in the 256-byte size class:
// rarely used fields belong in nodeRare, small fields together.
func TestNodeFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(node{}); size > 256 {
		t.Fatalf("node is %d bytes, over the 256-byte size class: move rare fields to nodeRare or pack small fields", size)
	}
}

// The fields scans and dependency checks read are in the node's first 128
// bytes (see node).
func TestNodeHotFieldsFirst(t *testing.T) {
	var n node
	if end := unsafe.Offsetof(n.rare) + unsafe.Sizeof(n.rare); end > 128 {
		t.Fatalf("the node's first part ends at byte %d, over 128", end)
	}
}

// prefixNodes gives what a scan of the prefix gives at the time of the
// call: its cached result goes when a node is linked or unlinked, and a
// result cut at max is not taken for a complete one.
func TestPrefixNodesFollowsTheGraph(t *testing.T) {
	g := newGraph()
	add := func(key string) *node {
		n := &node{key: key}
		g.linkNode(n)
		return n
	}
	keys := func(nodes []*node) string {
		var out []byte
		for _, n := range nodes {
			out = append(out, n.key...)
			out = append(out, ' ')
		}
		return string(out)
	}
	check := func(what, prefix string, max int, want string) {
		t.Helper()
		if got := keys(g.prefixNodes(prefix, max)); got != want {
			t.Errorf("%s: prefixNodes(%q, %d) = %q, want %q", what, prefix, max, got, want)
		}
	}
	add("a/1")
	b := add("a/3")
	add("b/1")
	check("first scan", "a/", 10, "a/1 a/3 ")
	check("cached", "a/", 10, "a/1 a/3 ")
	add("a/2")
	check("after a node under it is linked", "a/", 10, "a/1 a/2 a/3 ")
	g.unlinkNode(b)
	check("after one is unlinked", "a/", 10, "a/1 a/2 ")
	check("cut", "a/", 1, "a/1 ")
	check("more than the cut result held", "a/", 5, "a/1 a/2 ")
	check("less than a complete result", "a/", 1, "a/1 ")
	check("nothing under it", "c/", 3, "")
	add("c/9")
	check("the first node under it", "c/", 3, "c/9 ")

	// A node elsewhere keeps a scan cached (the same slice back); one under
	// a cached prefix of another length drops that one only.
	check("a/ again", "a/", 10, "a/1 a/2 ")
	check("a/2 and longer", "a/2", 10, "a/2 ")
	check("the empty prefix", "", 10, "a/1 a/2 b/1 c/9 ")
	before := g.prefixNodes("a/", 10)
	add("b/2")
	if after := g.prefixNodes("a/", 10); &after[0] != &before[0] {
		t.Error("a node outside a/ made prefixNodes scan a/ again")
	}
	check("the empty prefix after b/2", "", 10, "a/1 a/2 b/1 b/2 c/9 ")
	a21 := add("a/21")
	check("a/ after a/21", "a/", 10, "a/1 a/2 a/21 ")
	check("a/2 after a/21", "a/2", 10, "a/2 a/21 ")
	g.unlinkNode(a21)
	check("a/2 after a/21 is unlinked", "a/2", 10, "a/2 ")
	check("a/ after a/21 is unlinked", "a/", 10, "a/1 a/2 ")
	check("the empty prefix at the end", "", 10, "a/1 a/2 b/1 b/2 c/9 ")
	// Every cached prefix's length is counted once per prefix.
	want := map[int]int{}
	for p := range g.scans {
		want[len(p)]++
	}
	got := map[int]int{}
	for _, lc := range g.scanLens {
		got[lc.len] += lc.count
	}
	if !maps.Equal(got, want) {
		t.Errorf("cached prefix lengths %v, want %v (from the cache %v)", got, want, slices.Collect(maps.Keys(g.scans)))
	}
}

// eachUnder visits every node under a prefix in key order, past the part
// prefixNodes caches too, and stops where its function says; the nodes
// that follow the prefix's are not visited.
func TestEachUnderPastTheCache(t *testing.T) {
	g := newGraph()
	const n = maxAnyOfScan + 40
	var want []string
	for i := range n {
		key := fmt.Sprintf("p/%04d", i)
		g.linkNode(&node{key: key})
		want = append(want, key)
	}
	g.linkNode(&node{key: "o/1"})
	g.linkNode(&node{key: "q/1"})
	for _, stop := range []int{0, 10, maxAnyOfScan, maxAnyOfScan + 1, n - 1, n} {
		var got []string
		g.eachUnder("p/", func(t *node) bool {
			got = append(got, t.key)
			return len(got) <= stop
		})
		wantHere := want[:min(stop+1, n)]
		if !slices.Equal(got, wantHere) {
			t.Errorf("stop after %d: visited %d nodes (%v ... ), want %d", stop, len(got), got[:min(3, len(got))], len(wantHere))
		}
	}
	g.linkNode(&node{key: "p/9999"}) // past the cached part
	var got []string
	g.eachUnder("p/", func(t *node) bool { got = append(got, t.key); return true })
	if len(got) != n+1 || got[n] != "p/9999" {
		t.Errorf("after p/9999 is linked: %d nodes, the last %q", len(got), got[len(got)-1])
	}
}

// A transaction reserves room in the node map for the values it sets, not
// for those it deletes: a bulk delete does not rebuild the map at twice its
// size (for compact to shrink it again).
func TestReserveForCountsTheSets(t *testing.T) {
	g := newGraph()
	const n = 3000
	values := make([]kvChange, n)
	for i := range n {
		key := "a/" + strconv.Itoa(i)
		g.linkNode(&node{key: key})
		values[i] = kvChange{key: key} // a delete
	}
	peak := g.peak
	g.reserveFor(values)
	if g.peak != peak {
		t.Errorf("reserve for %d deletes: peak %d -> %d, want unchanged", n, peak, g.peak)
	}
	for i := range values {
		values[i].value = wrapperspb.String("v") // sets
	}
	g.reserveFor(values)
	if want := 2 * (n + n); g.peak != want {
		t.Errorf("reserve for %d sets in a graph of %d: peak %d, want %d (the map rebuilt for them)", n, n, g.peak, want)
	}
}

package kvscheduler

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sortedByKey sorts like a stable sort by key: keys listed twice keep the
// order in which they were set (the last one wins in orderValues).
func TestSortedByKeyIsAStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := map[string][]kvChange{"empty": nil, "one": {{key: "a"}}}
	for _, n := range []int{2, 15, 16, 17, 100, 1000, 5000} {
		random := make([]kvChange, n)
		few := make([]kvChange, n) // many duplicates
		for i := range n {
			random[i] = kvChange{key: "k/" + strconv.Itoa(rng.IntN(1<<30))}
			few[i] = kvChange{key: "k/" + strconv.Itoa(rng.IntN(7))}
		}
		counting := make([]kvChange, n) // runs in key order: 0-9, 10-99, ...
		for i := range n {
			counting[i] = kvChange{key: "k/" + strconv.Itoa(i)}
		}
		sorted := slices.Clone(random)
		slices.SortFunc(sorted, func(a, b kvChange) int { return strings.Compare(a.key, b.key) })
		reversed := slices.Clone(sorted)
		slices.Reverse(reversed)
		for name, in := range map[string][]kvChange{"random": random, "duplicates": few, "counting": counting, "sorted": sorted, "reversed": reversed} {
			inputs[name+"/"+strconv.Itoa(n)] = in
		}
	}
	for name, in := range inputs {
		// The values tell the positions apart.
		for i := range in {
			in[i].metadata = i
		}
		want := slices.Clone(in)
		slices.SortStableFunc(want, func(a, b kvChange) int { return strings.Compare(a.key, b.key) })
		got := sortedByKey(slices.Clone(in))
		if !slices.EqualFunc(got, want, func(a, b kvChange) bool { return a.key == b.key && a.metadata == b.metadata }) {
			t.Errorf("%s: not sorted stably by key", name)
		}
	}
}

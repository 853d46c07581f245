package kvscheduler

import (
	"fmt"
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

// BenchmarkSortValues compares sortedByKey with the standard library's
// stable sort on the values of a transaction listed in random order (a
// client that does not sort its keys), in nearly sorted order (one run of
// keys out of place), and in the order of a document that counts its
// addresses up (10.0.0.0, 10.0.1.0 ... 10.0.10.0: ascending runs of key
// order; the orchestrator hands the values of a document over in its
// order).
func BenchmarkSortValues(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		keys := make([]kvChange, n)
		for i := range keys {
			keys[i] = kvChange{key: fmt.Sprintf("config/vpp/v2/route/vrf/0/dst/10.%d.%d.0/24/gw/10.0.0.1", i/256%256, i%256)}
		}
		random := slices.Clone(keys)
		rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { random[i], random[j] = random[j], random[i] })
		nearly := slices.Clone(keys)
		copy(nearly, append(slices.Clone(keys[n/2:n/2+n/10]), keys[:n/2]...))
		for _, in := range []struct {
			name   string
			values []kvChange
		}{{"random", random}, {"nearly-sorted", nearly}, {"document-order", keys}} {
			b.Run(fmt.Sprintf("%s/N=%d/sortedByKey", in.name, n), func(b *testing.B) {
				for b.Loop() {
					sortedByKey(slices.Clone(in.values))
				}
			})
			b.Run(fmt.Sprintf("%s/N=%d/SortStableFunc", in.name, n), func(b *testing.B) {
				for b.Loop() {
					slices.SortStableFunc(slices.Clone(in.values), func(a, b kvChange) int { return strings.Compare(a.key, b.key) })
				}
			})
		}
	}
}

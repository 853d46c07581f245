package kvscheduler

// The order in which a transaction applies its values.

import (
	"slices"
	"strings"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// orderValues puts the deletes of a transaction first, then the other
// changes, each sorted by key, so that the plan does not depend on the order
// in which a client listed its keys, and deletes free what new values may
// need (names, addresses) before those are created. A key listed twice keeps
// the value set last.
func orderValues(qt *queuedTxn) {
	if qt.typ != api.NBTransaction || len(qt.values) < 2 {
		return
	}
	values := sortedByKey(qt.values)
	// A key set more than once keeps its last value (in place).
	kept := values[:0]
	deletes := 0
	for i, kv := range values {
		if i+1 < len(values) && values[i+1].key == kv.key {
			continue
		}
		if kv.value == nil {
			deletes++
		}
		kept = append(kept, kv)
	}
	qt.values = kept
	if deletes == 0 || deletes == len(kept) {
		return
	}
	// Deletes first, each group keeping its key order.
	others := make([]kvChange, 0, len(kept)-deletes)
	d := 0
	for _, kv := range kept {
		if kv.value == nil {
			kept[d] = kv
			d++
		} else {
			others = append(others, kv)
		}
	}
	copy(kept[d:], others)
}

// sortedByKey returns the values sorted by key, a key listed twice in the
// order it was set. It is a merge sort of the runs already in key order:
// linear when the values come sorted (as from a key-value store), a few
// passes for a few runs, O(n log n) at worst; the stable sort of the
// standard library moves values O(n log² n) times. BenchmarkSortValues
// measures both (docs/benchmarks.md, "Issue 15: the engine's shape"): equal
// at 10k values, this one 2-2.5x faster at 100k in random order.
func sortedByKey(values []kvChange) []kvChange {
	if slices.IsSortedFunc(values, func(a, b kvChange) int { return strings.Compare(a.key, b.key) }) {
		return values
	}
	return mergeSortRuns(values, make([]kvChange, len(values)))
}

// minRun is the shortest run mergeSortRuns merges: shorter ones are extended
// by insertion sort first.
const minRun = 16

// mergeSortRuns sorts a stably by key, using buf (as long as a) as scratch
// space, and returns the one of the two that holds the result.
func mergeSortRuns(a, buf []kvChange) []kvChange {
	// Runs: ascending stretches of at least minRun values.
	var starts []int
	for i := 0; i < len(a); {
		starts = append(starts, i)
		j := i + 1
		for j < len(a) && a[j-1].key <= a[j].key {
			j++
		}
		if end := min(i+minRun, len(a)); j < end {
			for k := j; k < end; k++ {
				for m := k; m > i && a[m].key < a[m-1].key; m-- {
					a[m], a[m-1] = a[m-1], a[m]
				}
			}
			j = end
		}
		i = j
	}
	starts = append(starts, len(a))
	// Merge neighbouring runs pairwise until one is left.
	for len(starts) > 2 {
		next := make([]int, 0, len(starts)/2+1)
		for r := 0; r+1 < len(starts); r += 2 {
			lo, mid, hi := starts[r], starts[r+1], len(a)
			if r+2 < len(starts) {
				hi = starts[r+2]
			}
			next = append(next, lo)
			if mid == hi || a[mid-1].key <= a[mid].key {
				copy(buf[lo:hi], a[lo:hi]) // a run without a pair, or in order already
				continue
			}
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if a[j].key < a[i].key {
					buf[k] = a[j]
					j++
				} else {
					buf[k] = a[i]
					i++
				}
				k++
			}
			k += copy(buf[k:], a[i:mid])
			copy(buf[k:], a[j:hi])
		}
		next = append(next, len(a))
		a, buf = buf, a
		starts = next
	}
	return a
}

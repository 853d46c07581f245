package kvscheduler_test

import (
	"slices"
	"testing"
)

// BenchmarkFloor measures, on the workloads' own 3N keys and in the same
// process, the operations that any keyed store of N values does at least
// once per value: allocating a node, inserting its key into a hash map,
// finding a node by its key, and deleting it. Nothing of the scheduler runs
// here. Their time per value from 10k to 100k is the growth that the memory
// hierarchy alone gives at these sizes (the 10k working set fits the caches,
// the 100k one does not); docs/benchmarks.md compares it with W1-W5's.
//
// The node has the size of the scheduler's (256 bytes), the map is sized for
// its final count up front (as the scheduler does for bulk transactions), and
// the keys are visited in key order (the order a transaction reconciles
// them in). The heap is smaller than the scheduler's (no values, no edges, no
// index), so this is a lower bound of what a design with nodes and a key map
// pays.
func BenchmarkFloor(b *testing.B) {
	for _, op := range []struct {
		name string
		// run does the timed part on prepared state.
		run func(st *floorState)
		// prepared: the map holds every key and node before run.
		prepared bool
	}{
		{"alloc", (*floorState).alloc, false},
		{"mapInsert", (*floorState).insert, false},
		{"mapLookup", (*floorState).lookup, true},
		{"mapDelete", (*floorState).delete, true},
	} {
		b.Run("op="+op.name, func(b *testing.B) {
			benchRunSizes(b, benchSizes, func(b *testing.B, n int) {
				keys := floorKeys(benchNewData(n))
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					st := newFloorState(keys, op.prepared)
					benchGC()
					b.StartTimer()
					op.run(st)
					b.StopTimer()
					st.check(b, op.name)
				}
				benchReportPerValue(b, len(keys))
			})
		})
	}
}

// floorNode has the size class of the scheduler's node: 256 bytes.
type floorNode struct {
	key  string
	next *floorNode
	hits uint64
	_    [28]uint64
}

type floorState struct {
	keys  []string
	nodes []*floorNode
	m     map[string]*floorNode
	head  *floorNode
	hits  uint64
}

// floorKeys returns the 3N keys of W1 (interfaces, their addresses, routes)
// sorted.
func floorKeys(d *benchData) []string {
	keys := make([]string, 0, d.allValues)
	for i := range d.n {
		keys = append(keys, d.ifaceKeys[i], d.ifaceKeys[i]+benchAddressInfix+benchAddress(i), d.routeKeys[i])
	}
	slices.Sort(keys)
	return keys
}

func newFloorState(keys []string, prepared bool) *floorState {
	st := &floorState{keys: keys, m: make(map[string]*floorNode, len(keys))}
	if prepared {
		for _, k := range keys {
			st.m[k] = &floorNode{key: k}
		}
		return st
	}
	st.nodes = make([]*floorNode, len(keys))
	for i, k := range keys {
		st.nodes[i] = &floorNode{key: k}
	}
	return st
}

// alloc allocates a node per key, linked so that all stay live.
func (st *floorState) alloc() {
	for _, k := range st.keys {
		st.head = &floorNode{key: k, next: st.head}
	}
}

func (st *floorState) insert() {
	for i, k := range st.keys {
		st.m[k] = st.nodes[i]
	}
}

// lookup finds every node by its key and writes to it.
func (st *floorState) lookup() {
	for _, k := range st.keys {
		n := st.m[k]
		n.hits++
		st.hits += n.hits
	}
}

// delete finds every node by its key, writes to it and deletes the key.
func (st *floorState) delete() {
	for _, k := range st.keys {
		n := st.m[k]
		n.hits++
		st.hits += n.hits
		delete(st.m, k)
	}
}

// check fails the benchmark if the timed part did not do its work.
func (st *floorState) check(b *testing.B, op string) {
	want := len(st.keys)
	got := 0
	switch op {
	case "alloc":
		for n := st.head; n != nil; n = n.next {
			got++
		}
	case "mapInsert":
		got = len(st.m)
	case "mapLookup":
		got = int(st.hits)
	case "mapDelete":
		got = int(st.hits)
		if len(st.m) != 0 {
			b.Fatalf("floor %s: %d keys left in the map", op, len(st.m))
		}
	}
	if got != want {
		b.Fatalf("floor %s: %d of %d values done", op, got, want)
	}
}

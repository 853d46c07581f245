package api

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/netagent-io/netagent/tests/testsupport"
)

// After a bulk delete the map's memory comes back: 100k labels put, all but
// 10 deleted, and the heap holds (nearly) nothing more than before they
// were put. Without the rebuild the map keeps its buckets (some 4 MB).
func TestMemMetadataMapGivesBackMemoryAfterBulkDelete(t *testing.T) {
	const n, kept = 100_000, 10
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmt.Sprintf("linux/route/10.%d.%d.0/24", i/256, i%256)
	}
	m := NewMetadataMap()
	base := testsupport.LiveHeap()
	for i, l := range labels {
		m.Put(l, i)
	}
	full := testsupport.LiveHeap()
	for _, l := range labels[kept:] {
		m.Delete(l)
	}
	after := testsupport.LiveHeap()
	runtime.KeepAlive(m)
	held, mapBytes := int64(after)-int64(base), int64(full)-int64(base)
	t.Logf("map of %d labels: %d bytes; after deleting all but %d: %d bytes", n, mapBytes, kept, held)
	if mapBytes < 2<<20 {
		t.Fatalf("the map of %d labels took %d bytes: the measurement cannot tell", n, mapBytes)
	}
	if held > 256<<10 {
		t.Errorf("after deleting all but %d of %d labels the map holds %d bytes (%d full), want < 256 KiB", kept, n, held, mapBytes)
	}
	if got := m.ListLabels(); !slices.Equal(got, slices.Sorted(slices.Values(labels[:kept]))) {
		t.Errorf("labels left = %v, want %v", got, labels[:kept])
	}
}

// Rebuilds change nothing that readers see: random puts and deletes,
// crossing the rebuild threshold many times, against a plain map.
func TestMemMetadataMapRebuildKeepsContent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := NewMetadataMap()
	want := map[string]int{}
	rebuilds := 0
	check := func(round int) {
		t.Helper()
		labels := m.ListLabels()
		if len(labels) != len(want) {
			t.Fatalf("round %d: %d labels, want %d", round, len(labels), len(want))
		}
		for _, l := range labels {
			if v, ok := m.GetValue(l); !ok || v != want[l] {
				t.Fatalf("round %d: %s = %v, %v; want %d", round, l, v, ok, want[l])
			}
		}
		if _, ok := m.GetValue("never-put"); ok {
			t.Fatalf("round %d: a label never put is found", round)
		}
	}
	for round := range 20 {
		// Grow to a random size (some rounds under the threshold), then
		// delete most of it, with puts of new and existing labels mixed in.
		size := 200 + rng.IntN(6000)
		for len(want) < size {
			l := fmt.Sprintf("l%d", rng.IntN(20000))
			v := rng.Int()
			m.Put(l, v)
			want[l] = v
		}
		check(round)
		// Delete labels in random order down to a tenth, putting one
		// (a new one or one just deleted) every eighth step.
		order := make([]string, 0, len(want))
		for l := range want {
			order = append(order, l)
		}
		slices.Sort(order)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for i, l := range order[:len(order)-size/10] {
			if i%8 == 7 {
				put := fmt.Sprintf("l%d", rng.IntN(20000))
				m.Put(put, round)
				want[put] = round
			}
			before := m.items.Rebuilds()
			m.Delete(l)
			delete(want, l)
			rebuilds += m.items.Rebuilds() - before
		}
		check(round)
	}
	if rebuilds == 0 {
		t.Error("the map was never rebuilt")
	}
}

func TestMemMetadataMapSnapshot(t *testing.T) {
	var none *MemMetadataMap
	if got := none.Snapshot(); got != nil {
		t.Errorf("nil map: %v", got)
	}
	m := NewMetadataMap()
	m.Put("a", 1)
	m.Put("b", 2)
	m.Put("c", 3)
	m.Delete("b")
	got := m.Snapshot()
	if len(got) != 2 || got["a"] != 1 || got["c"] != 3 {
		t.Fatalf("snapshot %v, want a=1 c=3", got)
	}
	got["d"] = 4 // a copy: the map is not touched
	if _, ok := m.GetValue("d"); ok {
		t.Error("a write to the snapshot reached the map")
	}
}

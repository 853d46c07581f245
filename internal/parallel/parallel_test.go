package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// Every index is visited once, whatever n, perWorker and the cores.
func TestForVisitsEachOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, tc := range []struct{ n, per int }{{0, 10}, {1, 10}, {19, 10}, {20, 10}, {21, 10}, {1000, 10}, {1001, 7}, {5, 0}, {5, -3}} {
		seen := make([]atomic.Int32, tc.n)
		For(tc.n, tc.per, func(k int) { seen[k].Add(1) })
		for k := range seen {
			if c := seen[k].Load(); c != 1 {
				t.Fatalf("n=%d per=%d: index %d visited %d times", tc.n, tc.per, k, c)
			}
		}
	}
}

// Few items, or one core: in order, on the caller's goroutine.
func TestForInOrderWhenSmall(t *testing.T) {
	var order []int
	For(15, 10, func(k int) { order = append(order, k) }) // 15 < 2*10
	for k, got := range order {
		if got != k {
			t.Fatalf("order %v", order)
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	order = order[:0]
	For(100, 10, func(k int) { order = append(order, k) })
	if len(order) != 100 || order[99] != 99 {
		t.Fatalf("one core: order %v", order)
	}
}

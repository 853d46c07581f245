// Package parallel runs the same independent work on many items on more
// than one core when there are enough items to pay for it.
package parallel

import (
	"runtime"
	"sync"
)

// MaxWorkers bounds the goroutines of For.
const MaxWorkers = 4

// For calls f(k) for every k in [0, n), each exactly once. With at least
// 2*perWorker items and more than one core (GOMAXPROCS) it splits [0, n)
// into contiguous chunks of at least perWorker items on up to MaxWorkers
// goroutines and returns when all are done; otherwise it calls f in order
// on the caller's goroutine. f must be safe to call concurrently for
// different k (write only to the k-th place of a result). perWorker below
// 1 counts as 1.
func For(n, perWorker int, f func(k int)) {
	perWorker = max(perWorker, 1)
	workers := min(runtime.GOMAXPROCS(0), MaxWorkers, n/perWorker)
	if workers < 2 {
		for k := range n {
			f(k)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for from := 0; from < n; from += chunk {
		wg.Go(func() {
			for k := from; k < min(from+chunk, n); k++ {
				f(k)
			}
		})
	}
	wg.Wait()
}

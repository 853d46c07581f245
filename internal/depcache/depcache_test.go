package depcache_test

import (
	"sync"
	"testing"

	"github.com/netagent-io/netagent/internal/depcache"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Of builds a key's dependencies once, returns the same slice after (its
// capacity its length), keeps at most max keys, and is safe for
// concurrent use.
func TestOf(t *testing.T) {
	c := depcache.New[string](2)
	builds := 0
	of := func(k string) []api.Dependency {
		return c.Of(k, func() []api.Dependency {
			builds++
			deps := make([]api.Dependency, 1, 8) // spare capacity, clipped by Of
			deps[0] = api.Dependency{Label: "interface " + k, Key: "iface/" + k}
			return deps
		})
	}
	a := of("a")
	if len(a) != 1 || cap(a) != 1 || a[0].Key != "iface/a" {
		t.Fatalf("of a: %v (cap %d), want the one dependency, capacity 1", a, cap(a))
	}
	if again := of("a"); &again[0] != &a[0] || builds != 1 {
		t.Fatalf("of a again: built %d times, same slice %v", builds, &again[0] == &a[0])
	}
	if grown := append(a, api.Dependency{Key: "x"}); &grown[0] == &a[0] {
		t.Fatal("an append to the shared slice wrote in place")
	}
	of("b")
	if c.Len() != 2 || builds != 2 {
		t.Fatalf("after a and b: %d keys, %d builds", c.Len(), builds)
	}
	of("c") // full: starts anew
	if c.Len() != 1 || builds != 3 {
		t.Fatalf("after c: %d keys (want 1: started anew), %d builds", c.Len(), builds)
	}
	if depcache.New[int](0).Of(1, func() []api.Dependency { return nil }) != nil {
		t.Fatal("a nil build is not nil")
	}

	// Concurrent callers get equal dependencies (go test -race checks the
	// locking).
	c2 := depcache.New[int](4)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				k := (g + i) % 6
				deps := c2.Of(k, func() []api.Dependency { return []api.Dependency{{Key: "k" + string(rune('0'+k))}} })
				if deps[0].Key != "k"+string(rune('0'+k)) {
					t.Errorf("key %d: %v", k, deps)
					return
				}
			}
		})
	}
	wg.Wait()
}

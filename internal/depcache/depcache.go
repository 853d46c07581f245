// Package depcache keeps the dependencies that a descriptor gives many
// values alike (every route through one interface depends on that
// interface), so that a bulk change builds their labels, keys and
// selectors once, not once per value, and the graph's edges share their
// strings. The scheduler neither modifies nor keeps the slice a
// Dependencies callback returns (api.KVDescriptor.Dependencies), so the
// callback returns the cached slice itself.
package depcache

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Cache holds the dependencies of up to max keys; when full it starts
// anew. Safe for concurrent use (readers of the scheduler's graph view and
// value history call Dependencies while the worker plans): a key found
// takes no lock.
type Cache[K comparable] struct {
	m   sync.Map // K -> []api.Dependency
	n   atomic.Int64
	max int64
}

// New returns a cache of at most limit keys (at least 1).
func New[K comparable](limit int) *Cache[K] {
	return &Cache[K]{max: int64(max(limit, 1))}
}

// Of returns the dependencies of k, built by build the first time. The
// slice is shared by every caller: not to be modified; its capacity is
// its length, so that an append makes a copy.
func (c *Cache[K]) Of(k K, build func() []api.Dependency) []api.Dependency {
	if deps, ok := c.m.Load(k); ok {
		return deps.([]api.Dependency)
	}
	deps := slices.Clip(build())
	if c.n.Load() >= c.max {
		c.m.Clear()
		c.n.Store(0)
	}
	if got, loaded := c.m.LoadOrStore(k, deps); loaded {
		return got.([]api.Dependency) // built by another caller meanwhile
	}
	c.n.Add(1)
	return deps
}

// Len is about the number of keys held (exact while no caller adds one).
func (c *Cache[K]) Len() int { return int(c.n.Load()) }

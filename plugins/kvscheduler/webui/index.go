package webui

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// entry is one value (base or derived) of the values index.
type entry struct {
	key   string
	state api.ValueState
	// group is the descriptor's name, api.StatsProperties for a derived
	// value without one, api.StatsNoDescriptor for a value no descriptor
	// claims (as SchedulerStats groups them).
	group   string
	origin  api.ValueOrigin
	lastOp  api.TxnOperation
	err     string
	details []string
	derived bool
}

// index is the values of one revision of the scheduler's state, sorted by
// key, with the positions of each state's and each descriptor's values (in
// key order), so that a filter by state or descriptor, alone or with a key
// prefix, finds its page without scanning, and a substring search scans
// once. It is built once per revision and read, never changed, after.
type index struct {
	rev     uint64
	entries []entry
	byState map[api.ValueState][]int32
	byGroup map[string][]int32
	// groupStates counts the values of each group by state.
	groupStates map[string]map[api.ValueState]int
	// groups are the registered descriptors in registration order, then
	// the other groups that have values.
	groups []string
}

// indexCache keeps the index of the latest revision asked for. Building
// holds the mutex, so concurrent requests after a change build it once.
type indexCache struct {
	mu  sync.Mutex
	idx *index
}

// get returns the index of the scheduler's current revision. The revision
// is read before the values, so the index is at least as new as its rev
// says: a change meanwhile makes the next request build it again, never
// serves an older state under a newer revision.
func (c *indexCache) get(s Scheduler) *index {
	rev := s.CurrentRevision()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idx == nil || c.idx.rev != rev {
		c.idx = buildIndex(s, rev)
	}
	return c.idx
}

func groupOf(st *api.ValueStatus) string {
	switch {
	case st.GetDescriptorName() != "":
		return st.GetDescriptorName()
	case st.GetDerived():
		return api.StatsProperties
	default:
		return api.StatsNoDescriptor
	}
}

func entryOf(st *api.ValueStatus) entry {
	return entry{key: st.GetKey(), state: st.GetState(), group: groupOf(st), origin: api.FromNB,
		lastOp: st.GetLastOperation(), err: st.GetError(), details: st.GetDetails(), derived: st.GetDerived()}
}

// buildIndex reads the statuses (base values sorted by key, each with its
// derived values) and the origins of the applied values (the cached view,
// sorted by key). Derived keys need not sort next to their base: they are
// sorted on their own and merged, O(n + d log d) for d derived values.
func buildIndex(s Scheduler, rev uint64) *index {
	statuses := s.ListValueStatuses("")
	base := make([]entry, 0, len(statuses))
	var derived []entry
	for _, bs := range statuses {
		base = append(base, entryOf(bs.GetValue()))
		for _, d := range bs.GetDerivedValues() {
			derived = append(derived, entryOf(d))
		}
	}
	byKey := func(a, b entry) int { return strings.Compare(a.key, b.key) }
	if !slices.IsSortedFunc(base, byKey) {
		slices.SortFunc(base, byKey)
	}
	slices.SortFunc(derived, byKey)
	entries := base
	if len(derived) > 0 {
		entries = make([]entry, 0, len(base)+len(derived))
		i, j := 0, 0
		for i < len(base) || j < len(derived) {
			if j == len(derived) || (i < len(base) && base[i].key < derived[j].key) {
				entries = append(entries, base[i])
				i++
			} else {
				entries = append(entries, derived[j])
				j++
			}
		}
	}
	// The cached view says which applied values the SB reported (FromSB).
	// An error of the view leaves every origin FromNB; the cached view
	// reads the graph only and has none.
	if cached, err := s.DumpValuesByKeyPrefix("", api.CachedView); err == nil {
		i := 0
		for _, kv := range cached {
			for i < len(entries) && entries[i].key < kv.Key {
				i++
			}
			if i < len(entries) && entries[i].key == kv.Key && kv.Origin == api.FromSB {
				entries[i].origin = api.FromSB
			}
		}
	}
	idx := &index{rev: rev, entries: entries, byState: map[api.ValueState][]int32{}, byGroup: map[string][]int32{},
		groupStates: map[string]map[api.ValueState]int{}}
	for i := range entries {
		e := &entries[i]
		idx.byState[e.state] = append(idx.byState[e.state], int32(i))
		idx.byGroup[e.group] = append(idx.byGroup[e.group], int32(i))
		if idx.groupStates[e.group] == nil {
			idx.groupStates[e.group] = map[api.ValueState]int{}
		}
		idx.groupStates[e.group][e.state]++
	}
	idx.groups = s.GetRegisteredDescriptors()
	var extra []string
	for g := range idx.byGroup {
		if !slices.Contains(idx.groups, g) {
			extra = append(extra, g)
		}
	}
	slices.Sort(extra)
	idx.groups = append(idx.groups, extra...)
	return idx
}

// find returns the entry of a key, or nil.
func (ix *index) find(key string) *entry {
	i, ok := slices.BinarySearchFunc(ix.entries, key, func(e entry, k string) int { return cmp.Compare(e.key, k) })
	if !ok {
		return nil
	}
	return &ix.entries[i]
}

// filter selects values; zero fields select everything.
type filter struct {
	state    api.ValueState
	anyState bool
	group    string
	prefix   string
	contains string
}

// query returns the matching values from position offset (at most limit of
// them) and how many match. The candidates are the smallest of: the key
// range of the prefix, the state's positions within that range, the
// descriptor's positions within it (binary searches). Only a remaining
// filter (a substring, or both state and descriptor) scans the candidates.
func (ix *index) query(f filter, offset, limit int) (rows []*entry, total int) {
	lo, hi := 0, len(ix.entries)
	if f.prefix != "" {
		lo = sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].key >= f.prefix })
		hi = lo + sort.Search(len(ix.entries)-lo, func(i int) bool { return !strings.HasPrefix(ix.entries[lo+i].key, f.prefix) })
	}
	within := func(pos []int32) []int32 {
		a := sort.Search(len(pos), func(i int) bool { return int(pos[i]) >= lo })
		b := sort.Search(len(pos), func(i int) bool { return int(pos[i]) >= hi })
		return pos[a:b]
	}
	var list []int32 // nil: the range lo..hi
	size := hi - lo
	checkState, checkGroup := !f.anyState, f.group != ""
	if !f.anyState {
		if l := within(ix.byState[f.state]); len(l) <= size {
			list, size, checkState = l, len(l), false
		}
	}
	if f.group != "" {
		if l := within(ix.byGroup[f.group]); len(l) < size || list == nil && len(l) <= size {
			list, size, checkGroup, checkState = l, len(l), false, !f.anyState
		}
	}
	at := func(i int) *entry {
		if list != nil {
			return &ix.entries[list[i]]
		}
		return &ix.entries[lo+i]
	}
	if !checkState && !checkGroup && f.contains == "" {
		for i := offset; i < size && len(rows) < limit; i++ {
			rows = append(rows, at(i))
		}
		return rows, size
	}
	for i := range size {
		e := at(i)
		if checkState && e.state != f.state || checkGroup && e.group != f.group || f.contains != "" && !strings.Contains(e.key, f.contains) {
			continue
		}
		if total >= offset && len(rows) < limit {
			rows = append(rows, e)
		}
		total++
	}
	return rows, total
}

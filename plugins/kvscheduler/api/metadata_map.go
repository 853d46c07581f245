package api

import (
	"sort"
	"sync"
)

// MemMetadataMap is the default MetadataMapRW: label to metadata, safe for
// concurrent readers. Custom maps with secondary indexes can embed it and
// extend Put and Delete.
//
// A Go map never gives back the memory of deleted entries, so Delete
// rebuilds the map once it holds less than a quarter of its peak (a peak
// of at least 1024 labels): after a bulk delete the memory comes back. The
// copy costs O(1) per delete amortized (it copies at most a third of the
// entries deleted since the peak).
type MemMetadataMap struct {
	mu    sync.RWMutex
	items map[string]any
	// peak is the most labels items held since it was last built.
	peak int
}

// minPeakToRebuild is the smallest peak after which Delete rebuilds a map
// that shrank: below it, the buckets left behind are not worth a copy.
const minPeakToRebuild = 1024

var _ MetadataMapRW = (*MemMetadataMap)(nil)

// NewMetadataMap returns an empty MemMetadataMap.
func NewMetadataMap() *MemMetadataMap {
	return &MemMetadataMap{items: make(map[string]any)}
}

// GetValue implements MetadataMap.
func (m *MemMetadataMap) GetValue(label string) (any, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.items[label]
	return v, ok
}

// ListLabels implements MetadataMap.
func (m *MemMetadataMap) ListLabels() []string {
	m.mu.RLock()
	labels := make([]string, 0, len(m.items))
	for l := range m.items {
		labels = append(labels, l)
	}
	m.mu.RUnlock()
	sort.Strings(labels)
	return labels
}

// Put implements MetadataMapRW.
func (m *MemMetadataMap) Put(label string, metadata any) {
	m.mu.Lock()
	m.items[label] = metadata
	m.peak = max(m.peak, len(m.items))
	m.mu.Unlock()
}

// Delete implements MetadataMapRW.
func (m *MemMetadataMap) Delete(label string) {
	m.mu.Lock()
	delete(m.items, label)
	if m.peak >= minPeakToRebuild && len(m.items) < m.peak/4 {
		items := make(map[string]any, len(m.items))
		for l, v := range m.items {
			items[l] = v
		}
		m.items, m.peak = items, len(items)
	}
	m.mu.Unlock()
}

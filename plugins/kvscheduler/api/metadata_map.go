package api

import (
	"sort"
	"sync"

	"github.com/netagent-io/netagent/internal/shrinkmap"
)

// MemMetadataMap is the default MetadataMapRW: label to metadata, safe for
// concurrent readers. Custom maps with secondary indexes can embed it and
// extend Put and Delete.
//
// A Go map never gives back the memory of deleted entries, so the labels
// are kept in a map that Delete rebuilds once it holds less than a quarter
// of its peak (internal/shrinkmap): after a bulk delete the memory comes
// back, at O(1) per delete amortized.
type MemMetadataMap struct {
	mu    sync.RWMutex
	items shrinkmap.Map[string, any]
}

var _ MetadataMapRW = (*MemMetadataMap)(nil)

// NewMetadataMap returns an empty MemMetadataMap.
func NewMetadataMap() *MemMetadataMap {
	return &MemMetadataMap{items: shrinkmap.New[string, any]()}
}

// GetValue implements MetadataMap.
func (m *MemMetadataMap) GetValue(label string) (any, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.items.Get(label)
}

// ListLabels implements MetadataMap.
func (m *MemMetadataMap) ListLabels() []string {
	m.mu.RLock()
	labels := make([]string, 0, m.items.Len())
	m.items.All(func(l string, _ any) bool {
		labels = append(labels, l)
		return true
	})
	m.mu.RUnlock()
	sort.Strings(labels)
	return labels
}

// Snapshot returns a copy of the map's entries (nil for a nil map: a
// descriptor's map before the scheduler made it), for a plugin that reads
// them all while the scheduler may write.
func (m *MemMetadataMap) Snapshot() map[string]any {
	if m == nil {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]any, m.items.Len())
	m.items.All(func(l string, v any) bool {
		out[l] = v
		return true
	})
	return out
}

// Put implements MetadataMapRW.
func (m *MemMetadataMap) Put(label string, metadata any) {
	m.mu.Lock()
	m.items.Put(label, metadata)
	m.mu.Unlock()
}

// Delete implements MetadataMapRW.
func (m *MemMetadataMap) Delete(label string) {
	m.mu.Lock()
	m.items.Delete(label)
	m.mu.Unlock()
}

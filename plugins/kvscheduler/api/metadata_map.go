package api

import (
	"sort"
	"sync"
)

// MemMetadataMap is the default MetadataMapRW: label to metadata, safe for
// concurrent readers. Custom maps with secondary indexes can embed it and
// extend Put and Delete.
type MemMetadataMap struct {
	mu    sync.RWMutex
	items map[string]any
}

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
	m.mu.Unlock()
}

// Delete implements MetadataMapRW.
func (m *MemMetadataMap) Delete(label string) {
	m.mu.Lock()
	delete(m.items, label)
	m.mu.Unlock()
}

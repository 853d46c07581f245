// Package shrinkmap is a map that gives its memory back after a bulk
// delete. A Go map never shrinks: after 100k entries are deleted it keeps
// the buckets they needed. A Map is rebuilt, at its current size, once it
// holds less than a quarter of its peak (a peak of at least MinPeak
// entries): amortized O(1) per delete, since a rebuild copies fewer
// entries than were deleted since the peak.
package shrinkmap

// MinPeak is the smallest peak after which a Map is rebuilt: the buckets
// of smaller maps are not worth a copy.
const MinPeak = 1024

// Map is a map rebuilt below a quarter of its peak. The zero value is not
// usable: make one with New. It is not safe for concurrent use.
type Map[K comparable, V any] struct {
	m        map[K]V
	peak     int
	rebuilds int
}

// New returns an empty Map.
func New[K comparable, V any]() Map[K, V] { return Map[K, V]{m: map[K]V{}} }

// Get returns the value of k.
func (s *Map[K, V]) Get(k K) (V, bool) {
	v, ok := s.m[k]
	return v, ok
}

// Put sets the value of k.
func (s *Map[K, V]) Put(k K, v V) {
	s.m[k] = v
	s.peak = max(s.peak, len(s.m))
}

// Delete removes k, and rebuilds the map when it fell below a quarter of
// its peak.
func (s *Map[K, V]) Delete(k K) {
	delete(s.m, k)
	if s.peak >= MinPeak && len(s.m) < s.peak/4 {
		m := make(map[K]V, len(s.m))
		for k, v := range s.m {
			m[k] = v
		}
		s.m, s.peak = m, len(m)
		s.rebuilds++
	}
}

// Rebuilds counts the rebuilds so far.
func (s *Map[K, V]) Rebuilds() int { return s.rebuilds }

// Len returns the number of entries.
func (s *Map[K, V]) Len() int { return len(s.m) }

// All calls f for every entry, in no order, until f returns false.
func (s *Map[K, V]) All(f func(K, V) bool) {
	for k, v := range s.m {
		if !f(k, v) {
			return
		}
	}
}

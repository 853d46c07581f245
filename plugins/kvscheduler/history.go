package kvscheduler

import (
	"sort"
	"sync"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// history keeps the most recent transaction records, ordered by sequence
// number, so a record is found by binary search. It is bounded by count, by
// an estimate of the bytes the records hold, and by age; the newest record is
// always kept.
type history struct {
	mu       sync.RWMutex
	maxCount int
	maxBytes int
	maxAge   time.Duration
	records  []*api.RecordedTxn
	sizes    []int
	first    int // records[first:] are kept
	bytes    int
	trimmed  uint64 // records dropped by the limits
}

func newHistory(maxCount, maxBytes int, maxAge time.Duration) *history {
	return &history{maxCount: maxCount, maxBytes: maxBytes, maxAge: maxAge}
}

// Estimated memory of a record: what its structs take plus the values it
// alone keeps alive (previous values replaced since), roughly.
const (
	recordBytes      = 512
	recordValueBytes = 96
	recordOpBytes    = 256
)

func recordSize(r *api.RecordedTxn) int {
	size := recordBytes + len(r.Values)*recordValueBytes + len(r.Planned)*recordOpBytes
	if len(r.Executed) > 0 && (len(r.Planned) == 0 || &r.Executed[0] != &r.Planned[0]) {
		size += len(r.Executed) * recordOpBytes
	}
	return size
}

func (h *history) add(r *api.RecordedTxn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	size := recordSize(r)
	h.records = append(h.records, r)
	h.sizes = append(h.sizes, size)
	h.bytes += size
	for h.first < len(h.records)-1 {
		kept := len(h.records) - h.first
		old := h.records[h.first]
		if kept <= h.maxCount && h.bytes <= h.maxBytes && (h.maxAge <= 0 || r.Stop.Sub(old.Stop) <= h.maxAge) {
			break
		}
		h.bytes -= h.sizes[h.first]
		h.records[h.first] = nil
		h.first++
		h.trimmed++
	}
	// Compact when half the slice is trimmed records.
	if h.first > 64 && h.first > len(h.records)/2 {
		n := copy(h.records, h.records[h.first:])
		clear(h.records[n:])
		h.records = h.records[:n]
		copy(h.sizes, h.sizes[h.first:])
		h.sizes = h.sizes[:n]
		h.first = 0
	}
}

func (h *history) kept() []*api.RecordedTxn { return h.records[h.first:] }

func (h *history) get(seq uint64) *api.RecordedTxn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	recs := h.kept()
	i := sort.Search(len(recs), func(i int) bool { return recs[i].SeqNum >= seq })
	if i < len(recs) && recs[i].SeqNum == seq {
		return recs[i]
	}
	return nil
}

// between returns the records that started in [since, until] (zero times
// leave that end open). Records are in sequence order and start in that
// order, so both ends are found by binary search.
func (h *history) between(since, until time.Time) []*api.RecordedTxn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	recs := h.kept()
	lo, hi := 0, len(recs)
	if !since.IsZero() {
		lo = sort.Search(len(recs), func(i int) bool { return !recs[i].Start.Before(since) })
	}
	if !until.IsZero() {
		hi = sort.Search(len(recs), func(i int) bool { return recs[i].Start.After(until) })
	}
	if lo >= hi {
		return nil
	}
	return append([]*api.RecordedTxn(nil), recs[lo:hi]...)
}

// snapshot returns the kept records (a copy of the slice) and the history's
// description.
func (h *history) snapshot() ([]*api.RecordedTxn, api.HistoryInfo) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	recs := append([]*api.RecordedTxn(nil), h.kept()...)
	return recs, h.infoLocked()
}

func (h *history) info() api.HistoryInfo {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.infoLocked()
}

func (h *history) infoLocked() api.HistoryInfo {
	info := api.HistoryInfo{Trimmed: h.trimmed, Kept: len(h.records) - h.first, Bytes: h.bytes,
		MaxCount: h.maxCount, MaxBytes: h.maxBytes, MaxAge: h.maxAge}
	if recs := h.kept(); len(recs) > 0 {
		info.OldestSeq, info.OldestStart = recs[0].SeqNum, recs[0].Start
		info.NewestSeq = recs[len(recs)-1].SeqNum
	}
	return info
}

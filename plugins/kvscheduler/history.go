package kvscheduler

import (
	"sort"
	"sync"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// history keeps the most recent transaction records, ordered by sequence
// number, so a record is found by binary search.
type history struct {
	mu      sync.RWMutex
	max     int
	records []*api.RecordedTxn
}

func newHistory(max int) *history { return &history{max: max} }

func (h *history) add(r *api.RecordedTxn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	if over := len(h.records) - h.max; over > 0 {
		// Trim in chunks so the copy is amortised.
		if over >= h.max/4 || len(h.records) > 2*h.max {
			n := copy(h.records, h.records[over:])
			clear(h.records[n:])
			h.records = h.records[:n]
		}
	}
}

func (h *history) kept() []*api.RecordedTxn {
	if over := len(h.records) - h.max; over > 0 {
		return h.records[over:]
	}
	return h.records
}

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

func (h *history) between(since, until time.Time) []*api.RecordedTxn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []*api.RecordedTxn
	for _, r := range h.kept() {
		if !since.IsZero() && r.Start.Before(since) {
			continue
		}
		if !until.IsZero() && r.Start.After(until) {
			continue
		}
		out = append(out, r)
	}
	return out
}

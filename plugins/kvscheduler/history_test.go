package kvscheduler

import (
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

func histRecord(seq uint64, at time.Time, ops int) *api.RecordedTxn {
	r := &api.RecordedTxn{SeqNum: seq, Start: at, Stop: at}
	for i := 0; i < ops; i++ {
		r.Planned = append(r.Planned, &api.RecordedTxnOp{Key: "k"})
	}
	r.Executed = r.Planned // executed as planned: shared, counted once
	return r
}

func keptSeqs(h *history) []uint64 {
	var out []uint64
	for _, r := range h.kept() {
		out = append(out, r.SeqNum)
	}
	return out
}

func TestHistoryBoundedByCount(t *testing.T) {
	h := newHistory(3, 1<<30, 0)
	t0 := time.Unix(1000, 0)
	for seq := uint64(1); seq <= 200; seq++ {
		h.add(histRecord(seq, t0, 1))
	}
	if got := keptSeqs(h); len(got) != 3 || got[0] != 198 || got[2] != 200 {
		t.Fatalf("kept %v, want [198 199 200]", got)
	}
	if h.get(197) != nil || h.get(199) == nil || h.get(199).SeqNum != 199 {
		t.Fatalf("get after trimming: 197=%v 199=%v", h.get(197), h.get(199))
	}
	if len(h.records) > 2*64+3 {
		t.Fatalf("trimmed records are not compacted: %d slots for 3 records", len(h.records))
	}
}

func TestHistoryBoundedByBytes(t *testing.T) {
	one := recordSize(histRecord(0, time.Time{}, 1000))
	h := newHistory(1000, 3*one, 0)
	t0 := time.Unix(1000, 0)
	for seq := uint64(1); seq <= 10; seq++ {
		h.add(histRecord(seq, t0, 1000))
	}
	if got := keptSeqs(h); len(got) != 3 || got[0] != 8 {
		t.Fatalf("kept %v, want the 3 newest", got)
	}
	if h.bytes != 3*one {
		t.Fatalf("bytes = %d, want %d", h.bytes, 3*one)
	}
	// A record bigger than the whole budget is still kept, alone.
	h.add(histRecord(11, t0, 10000))
	if got := keptSeqs(h); len(got) != 1 || got[0] != 11 {
		t.Fatalf("kept %v, want only the newest", got)
	}
}

func TestHistoryBoundedByAge(t *testing.T) {
	h := newHistory(1000, 1<<30, time.Hour)
	t0 := time.Unix(1000, 0)
	h.add(histRecord(1, t0, 1))
	h.add(histRecord(2, t0.Add(30*time.Minute), 1))
	h.add(histRecord(3, t0.Add(90*time.Minute), 1))
	if got := keptSeqs(h); len(got) != 2 || got[0] != 2 {
		t.Fatalf("kept %v, want [2 3]", got)
	}
	if got := h.between(t0.Add(time.Hour), time.Time{}); len(got) != 1 || got[0].SeqNum != 3 {
		t.Fatalf("between: %v", got)
	}
}

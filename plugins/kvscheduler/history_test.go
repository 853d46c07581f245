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
	var z sizer
	one := z.recordSize(histRecord(0, time.Time{}, 1000))
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

// sampled looks at recordSample items of a big record and scales. On
// records whose items repeat a pattern (two addresses, an interface and a
// route, per interface), over many lengths: exact (within 2%) when the
// pattern's length divides the runs' length; otherwise unbiased (mean error
// within 3%), and each within 40% for patterns no longer than a run (the
// rare heavy item of a pattern of 6 is the worst of these). A heavy item
// rarer than that is seen by few runs: unbiased still, but single records
// may be 60-80% off (one item of 13). Single items at a fixed stride,
// aliasing with a pattern, would see one kind of item only.
func TestSampledSeesEveryKindOfAPattern(t *testing.T) {
	for _, pattern := range [][]int{{48, 48, 400, 160}, {400, 0}, {0, 0, 0, 160}, {100, 200, 300, 400, 500, 600, 700, 800},
		{0, 0, 0, 0, 0, 160}, {48, 400, 160}, {10, 20, 30, 40, 400}, {100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}} {
		runLen := recordSample / sampleRuns
		limit := 0.4
		switch {
		case runLen%len(pattern) == 0:
			limit = 0.02
		case len(pattern) > runLen:
			limit = 1
		}
		var sumErr, worst float64
		const lengths = 300
		for l := range lengths {
			n := recordSample + 1 + l*97
			calls, exact := 0, 0
			for i := range n {
				exact += pattern[i%len(pattern)]
			}
			got := sampled(n, func(i int) int { calls++; return pattern[i%len(pattern)] })
			if calls > recordSample {
				t.Fatalf("pattern %v, n=%d: %d items looked at, want at most %d", pattern, n, calls, recordSample)
			}
			e := float64(got-exact) / float64(exact)
			sumErr += e
			worst = max(worst, e, -e)
			if e < -limit || e > limit {
				t.Errorf("pattern %v, n=%d: sampled %d, exact %d (%+.0f%%)", pattern, n, got, exact, 100*e)
			}
		}
		t.Logf("pattern %v: mean error %+.1f%%, worst %.0f%%", pattern, 100*sumErr/lengths, 100*worst)
		if mean := sumErr / lengths; mean < -0.03 || mean > 0.03 {
			t.Errorf("pattern %v: mean error %+.1f%% over %d lengths: biased", pattern, 100*mean, lengths)
		}
	}
	if got := sampled(5, func(i int) int { return i }); got != 0+1+2+3+4 {
		t.Errorf("a small record is summed exactly: %d", got)
	}
}

package kvscheduler_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
)

// BenchmarkHistory1M: with W1 at N=1k applied, 1M single-route transactions
// (each re-creates one route) with the default retention. The live heap,
// relative to the heap after W1, is reported after 100k, 500k and 1M
// transactions (heap-MB-100k, ...): the history keeps at most 1000 records,
// so it must stay flat. ns/txn is the mean cost of one transaction. One
// iteration is the whole run; it is skipped with -short.
func BenchmarkHistory1M(b *testing.B) {
	if testing.Short() {
		b.Skip("1M transactions skipped with -short")
	}
	const n, total = 1000, 1_000_000
	d := benchNewData(n)
	alt := [2][]proto.Message{make([]proto.Message, n), make([]proto.Message, n)}
	for i := range n {
		alt[0][i] = benchRouteValue(i, 1)
		alt[1][i] = benchRouteValue(i, 2)
	}
	measureAt := map[int]string{100_000: "heap-MB-100k", 500_000: "heap-MB-500k", total: "heap-MB-1M"}
	heap := map[string]float64{}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		env := benchNewEnv(b, nil)
		env.applyW1(b, d)
		base := benchHeap()
		b.StartTimer()
		for t := 1; t <= total; t++ {
			i := t % n
			env.commit(ctx, b, benchSet{d.routeKeys[i : i+1], alt[(t/n)%2][i : i+1]})
			if name, ok := measureAt[t]; ok {
				b.StopTimer()
				heap[name] = float64(benchHeapDelta(base)) / (1 << 20)
				b.StartTimer()
			}
		}
		b.StopTimer()
		if info := env.s.GetHistoryInfo(); info.Kept != 1000 || info.Trimmed != uint64(total+1-1000) {
			b.Fatalf("history after %d transactions: %+v", total+1, info)
		}
		env.close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*total), "ns/txn")
	for name, mb := range heap {
		b.ReportMetric(mb, name)
	}
}

// BenchmarkGetRecordedTransaction: finding a record by sequence number in a
// history of 1k and 100k records (binary search: O(log n)).
func BenchmarkGetRecordedTransaction(b *testing.B) {
	for _, kept := range []int{1000, 100_000} {
		b.Run("kept="+strconv.Itoa(kept), func(b *testing.B) {
			env := benchNewEnvOpts(b, kvscheduler.Options{HistorySize: kept, HistoryMaxAge: -1 * time.Second})
			defer env.close()
			d := benchNewData(1)
			ctx := context.Background()
			for t := range kept {
				env.commit(ctx, b, benchSet{d.routeKeys, []proto.Message{benchRouteValue(0, t)}})
			}
			if info := env.s.GetHistoryInfo(); info.Kept != kept {
				b.Fatalf("kept %d records, want %d", info.Kept, kept)
			}
			b.ResetTimer()
			for i := range b.N {
				seq := uint64(i%kept) + 1
				if rec := env.s.GetRecordedTransaction(seq); rec == nil || rec.SeqNum != seq {
					b.Fatalf("record #%d: %v", seq, rec)
				}
			}
		})
	}
}

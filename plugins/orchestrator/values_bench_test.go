package orchestrator

import (
	"fmt"
	"runtime"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

// BenchmarkSourceValues100k: the orchestrator's record of 100,000 keys
// given by one source (etcd), then overridden by a second (gRPC) for
// half of them: the time to record them and the heap they hold, per key
// (the values themselves, shared by all keys here, not counted).
func BenchmarkSourceValues100k(b *testing.B) {
	const keys = 100_000
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("config/vpp/v2/route/if/lp%d/vrf/0/dst/10.%d.%d.0/24", i%1000, i>>8&255, i&255)
	}
	v := wrapperspb.String("x")
	var heap uint64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		o := New(nil, nil)
		for _, k := range names {
			o.setKV(SourceEtcd, KV{Key: k, Value: v})
		}
		for _, k := range names[:keys/2] {
			o.setKV(SourceGRPC, KV{Key: k, Value: v})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(o)
	}
	b.ReportMetric(float64(heap)/keys, "heap-B/key")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(keys*1.5), "ns/set")
}

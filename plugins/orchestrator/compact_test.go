package orchestrator_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// After a bulk delete the memory of the deleted keys comes back: 100k keys
// put by etcd, all but 10 deleted, and the orchestrator holds (nearly)
// nothing more than before. Without the rebuild its map of keys keeps its
// buckets (some 3 MB of the 37 MB the keys took). Nothing is committed (the gRPC source never
// delivers its first state), so the scheduler's memory does not move.
func TestBulkDeleteGivesBackTheMemoryOfTheKeys(t *testing.T) {
	const n, kept = 100_000, 10
	o, _, b := newEnv(t, nil)
	ctx := context.Background()
	o.Register(orchestrator.SourceEtcd, orchestrator.SourceGRPC)
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, nil, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	value := wrapperspb.String("v")
	puts := make([]orchestrator.KV, n)
	deletes := make([]orchestrator.KV, 0, n-kept)
	for i := range puts {
		puts[i] = orchestrator.KV{Key: fmt.Sprintf("item/%06d", i), Value: value}
		if i >= kept {
			deletes = append(deletes, orchestrator.KV{Key: puts[i].Key})
		}
	}
	base := testsupport.LiveHeap()
	if _, err := o.Change(ctx, orchestrator.SourceEtcd, puts, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	full := testsupport.LiveHeap()
	if _, err := o.Change(ctx, orchestrator.SourceEtcd, deletes, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	after := testsupport.LiveHeap()
	runtime.KeepAlive(puts)
	runtime.KeepAlive(deletes)
	held, keysBytes := int64(after)-int64(base), int64(full)-int64(base)
	t.Logf("%d keys: %d bytes; after deleting all but %d: %d bytes", n, keysBytes, kept, held)
	if keysBytes < 2<<20 {
		t.Fatalf("%d keys took %d bytes: the measurement cannot tell", n, keysBytes)
	}
	if held > 256<<10 {
		t.Errorf("after deleting all but %d of %d keys the orchestrator holds %d bytes (%d with them), want < 256 KiB", kept, n, held, keysBytes)
	}
	// What is left is applied as usual by the first full resync.
	if seq, err := o.Resync(ctx, orchestrator.SourceGRPC, nil, api.TxnOptions{}); err != nil || seq == 0 {
		t.Fatal(seq, err)
	}
	ops := b.takeOps()
	slices.Sort(ops)
	var want []string
	for _, kv := range puts[:kept] {
		want = append(want, "create "+kv.Key+"=v")
	}
	if !slices.Equal(ops, want) {
		t.Errorf("first full resync after the delete: %v, want %v", ops, want)
	}
}

// A rebuild of the map of keys changes nothing the sources see: the values
// left, the priority of sources and the fallback when an override goes.
func TestRebuiltMapKeepsValuesAndPriorities(t *testing.T) {
	const n, kept = 2000, 20
	o, _, b := newEnv(t, nil)
	ctx := context.Background()
	o.Register(orchestrator.SourceEtcd)
	var puts, deletes []orchestrator.KV
	for i := range n {
		key := fmt.Sprintf("item/%04d", i)
		puts = append(puts, kv(key, "e"+key[5:]))
		if i >= kept {
			deletes = append(deletes, kv(key, ""))
		}
	}
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, puts, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/0001", "g")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if peak := orchestrator.ValuesPeak(o); peak != n {
		t.Fatalf("peak %d keys, want %d", peak, n)
	}
	b.takeOps()
	if _, err := o.Change(ctx, orchestrator.SourceEtcd, deletes, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if peak := orchestrator.ValuesPeak(o); peak != kept {
		t.Fatalf("after deleting all but %d of %d keys the peak is %d: the map was not rebuilt", kept, n, peak)
	}
	if ops := b.takeOps(); len(ops) != n-kept {
		t.Errorf("%d operations for deleting %d keys", len(ops), n-kept)
	}
	got := o.Get()
	if len(got) != kept {
		t.Fatalf("%d keys left, want %d", len(got), kept)
	}
	for i, kv := range got {
		want := "e" + kv.Key[5:]
		if i == 1 {
			want = "g"
		}
		if kv.Key != puts[i].Key || kv.Value.(*wrapperspb.StringValue).GetValue() != want {
			t.Errorf("key %d: %s = %v, want %s = %s", i, kv.Key, kv.Value, puts[i].Key, want)
		}
	}
	if v := o.SourceValue(orchestrator.SourceEtcd, "item/0001"); v.(*wrapperspb.StringValue).GetValue() != "e0001" {
		t.Errorf("etcd's item/0001 = %v", v)
	}
	if v := o.Value(puts[kept].Key); v != nil {
		t.Errorf("deleted %s = %v", puts[kept].Key, v)
	}
	if _, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/0001", "")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if ops := b.takeOps(); !slices.Equal(ops, []string{"update item/0001=e0001"}) {
		t.Errorf("gRPC override removed: %v, want etcd's value back", ops)
	}
}

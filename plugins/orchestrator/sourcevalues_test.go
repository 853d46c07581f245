package orchestrator_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// TestSourceValues: a source's values, sorted, with their notes and bad
// values, and only that source's; a Resync with them puts the source back
// as it was.
func TestSourceValues(t *testing.T) {
	o, _, b := newEnv(t, nil)
	ctx := context.Background()
	o.Register(orchestrator.SourceEtcd, orchestrator.SourceGRPC)
	bad := orchestrator.KV{Key: "item/bad", Err: errIllegible}
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/e", "etcd"), kv("item/b", "etcd b")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Resync(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/c", "c"), noted("item/a", "a", "a note"), bad}, api.TxnOptions{}); err != nil && !isValueErrors(err) {
		t.Fatal(err)
	}
	got := o.SourceValues(orchestrator.SourceGRPC)
	want := []orchestrator.KV{noted("item/a", "a", "a note"), bad, kv("item/c", "c")}
	if !sameKVs(got, want) {
		t.Fatalf("SourceValues(grpc) = %v, want %v", got, want)
	}
	if _, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/a", ""), kv("item/b", "grpc b")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Resync(ctx, orchestrator.SourceGRPC, got, api.TxnOptions{}); err != nil && !isValueErrors(err) {
		t.Fatal(err)
	}
	if again := o.SourceValues(orchestrator.SourceGRPC); !sameKVs(again, want) {
		t.Errorf("after a Resync with its values, SourceValues(grpc) = %v, want %v", again, want)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.items["item/a"] != "a" || b.items["item/b"] != "etcd b" {
		t.Errorf("SB after the resync: %v", b.items)
	}
}

// TestFirstResyncDescription: the descriptions the sources give their
// first Resync end the first full resync's, whichever source is last.
func TestFirstResyncDescription(t *testing.T) {
	o, s, _ := newEnv(t, nil)
	ctx := context.Background()
	o.Register(orchestrator.SourceEtcd, orchestrator.SourceGRPC)
	if _, err := o.Resync(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/a", "a")}, api.TxnOptions{Description: "restored #7"}); err != nil {
		t.Fatal(err)
	}
	seq, err := o.Resync(ctx, orchestrator.SourceEtcd, nil, api.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const want = "first full resync (sources etcd, grpc): restored #7"
	if got := s.GetRecordedTransaction(seq).Description; got != want {
		t.Errorf("description %q, want %q", got, want)
	}
}

var errIllegible = errorString("illegible")

type errorString string

func (e errorString) Error() string { return string(e) }

func isValueErrors(err error) bool {
	te, ok := err.(*api.TransactionError)
	return ok && te.TxnInitError == nil
}

func sameKVs(a, b []orchestrator.KV) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Note != b[i].Note || !proto.Equal(a[i].Value, b[i].Value) ||
			(a[i].Err == nil) != (b[i].Err == nil) || (a[i].Err != nil && !strings.Contains(a[i].Err.Error(), b[i].Err.Error())) {
			return false
		}
	}
	return true
}

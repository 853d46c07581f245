package orchestrator_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

func noted(key, value, note string) orchestrator.KV {
	k := kv(key, value)
	k.Note = note
	return k
}

// TestNotesFollowTheEffectiveValue: the note of the effective value's
// source is in the value's status; a note change alone is committed and
// executes nothing; resyncs and plans carry the notes.
func TestNotesFollowTheEffectiveValue(t *testing.T) {
	o, s, b := newEnv(t, nil)
	ctx := context.Background()
	o.Register(orchestrator.SourceEtcd)
	details := func(step string, want ...string) {
		t.Helper()
		if got := s.GetValueStatus("item/k").GetValue().GetDetails(); !slices.Equal(got, want) {
			t.Errorf("%s: details %q, want %q", step, got, want)
		}
	}
	must := func(_ uint64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{noted("item/k", "v", "etcd note")}, api.TxnOptions{}))
	if ops := b.takeOps(); !slices.Equal(ops, []string{"create item/k=v"}) {
		t.Fatalf("ops %v", ops)
	}
	details("first resync", "etcd note")

	// The same value, another note: committed, nothing executed.
	must(o.Change(ctx, orchestrator.SourceEtcd, []orchestrator.KV{noted("item/k", "v", "etcd note 2")}, api.TxnOptions{}))
	details("note changed", "etcd note 2")
	if ops := b.takeOps(); len(ops) > 0 {
		t.Errorf("a note change executed %v", ops)
	}

	// A gRPC value without a note wins: no note; removed, the etcd note is
	// back.
	must(o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/k", "g")}, api.TxnOptions{}))
	details("grpc value")
	must(o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/k", "")}, api.TxnOptions{}))
	details("etcd value back", "etcd note 2")

	// A plan does not change the note.
	must(o.Plan(ctx, orchestrator.SourceEtcd, []orchestrator.KV{noted("item/k", "v", "planned")}, false, api.TxnOptions{}))
	details("after a plan", "etcd note 2")

	// The value again without a note: cleared; a resync brings it back.
	must(o.Change(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/k", "v")}, api.TxnOptions{}))
	details("no note")
	must(o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{noted("item/k", "v", "resync note")}, api.TxnOptions{}))
	details("resync", "resync note")

	// An undecodable value has no note; deleted, the key is gone.
	must2 := func(_ uint64, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("an undecodable value committed without an error")
		}
	}
	must2(o.Change(ctx, orchestrator.SourceEtcd, []orchestrator.KV{{Key: "item/k", Err: errors.New("bad JSON"), Note: "ignored"}}, api.TxnOptions{}))
	if st := s.GetValueStatus("item/k").GetValue(); st.GetState() != api.ValueStateInvalid || slices.Contains(st.GetDetails(), "ignored") {
		t.Errorf("undecodable value: %v", st)
	}
	must(o.Change(ctx, orchestrator.SourceEtcd, []orchestrator.KV{noted("item/k", "v", "n")}, api.TxnOptions{}))
	details("good again", "n")
	must(o.Change(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/k", "")}, api.TxnOptions{}))
	if st := s.GetValueStatus("item/k").GetValue(); st.GetState() != api.ValueStateNonexistent {
		t.Errorf("deleted: %v", st)
	}
}

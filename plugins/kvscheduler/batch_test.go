package kvscheduler_test

// Batches (api.KVDescriptor.Batch): independent operations of one
// descriptor that follow each other in a plan go to Batch together; the
// dependency graph's order is kept between batches; each operation has its
// own result.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// batchRoutes is routes() with Batch.
func batchRoutes() mocksb.Options {
	o := routes()
	o.Batch = true
	return o
}

func TestBatchOfIndependentOperations(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces(), batchRoutes())
	ctx := context.Background()
	e.mustCommit(ctx, set("iface/a", "a"), set("route/1", "1 dep=iface/a"), set("route/2", "2 dep=iface/a"), set("route/3", "3"))
	e.expectOps("create", "create iface/a=a", "batch 3", "create route/1=1 dep=iface/a", "create route/2=2 dep=iface/a", "create route/3=3")
	for _, k := range []string{"route/1", "route/2", "route/3"} {
		e.expectState(k, api.ValueStateConfigured)
	}
	e.mustCommit(ctx, set("route/1", "1b dep=iface/a"), set("route/2", "2b dep=iface/a"), del("route/3"))
	e.expectOps("update and delete", "batch 3", "delete route/3", "update route/1=1b dep=iface/a", "update route/2=2b dep=iface/a")
	// The interface goes: its routes are deleted first, in one batch.
	e.mustCommit(ctx, del("iface/a"))
	e.expectOps("delete", "batch 2", "delete route/2", "delete route/1", "delete iface/a")
	e.expectState("route/1", api.ValueStatePending, "iface/a")
}

// A value that depends on another of the same descriptor is never in its
// batch: created after it, deleted before it.
func TestBatchKeepsDependencyOrder(t *testing.T) {
	e := newEnv(t)
	e.register(batchRoutes())
	ctx := context.Background()
	e.mustCommit(ctx, set("route/1", "1"), set("route/2", "2 dep=route/1"), set("route/3", "3 dep=route/1"), set("route/4", "4"))
	e.expectOps("create", "create route/1=1", "batch 3", "create route/2=2 dep=route/1", "create route/3=3 dep=route/1", "create route/4=4")
	e.mustCommit(ctx, del("route/1"), del("route/2"), del("route/3"), del("route/4"))
	ops := e.sb.OpStrings(false)
	e.sb.ClearOps()
	// route/2 and route/3 (any order, maybe together) before route/1.
	pos := map[string]int{}
	for i, op := range ops {
		pos[op] = i
	}
	for _, dependent := range []string{"delete route/2", "delete route/3"} {
		i, ok := pos[dependent]
		j, ok1 := pos["delete route/1"]
		if !ok || !ok1 || i > j {
			t.Fatalf("delete: %q: want route/2 and route/3 deleted before route/1", ops)
		}
	}
	// A batch of n operations covers the n operations after it: route/1's
	// delete is never in a batch with a value that depends on it.
	for i, op := range ops {
		if !strings.HasPrefix(op, "batch ") {
			continue
		}
		var n int
		if _, err := fmt.Sscan(op[len("batch "):], &n); err != nil {
			t.Fatal(err)
		}
		members := strings.Join(ops[i+1:i+1+n], ",")
		if strings.Contains(members, "route/1") && (strings.Contains(members, "route/2") || strings.Contains(members, "route/3")) {
			t.Errorf("delete: %q: route/1 is deleted in a batch with a value that depends on it", ops)
		}
	}
}

// An operation that fails in a batch fails alone: the others succeed, none
// is executed twice, and the failed one is retried by itself.
func TestBatchFailureIsPerOperation(t *testing.T) {
	e := newEnv(t)
	e.register(batchRoutes())
	ctx := context.Background()
	e.sb.Fail("create", "route/2", nil, 1)
	_, err := e.commit(ctx, set("route/1", "1"), set("route/2", "2"), set("route/3", "3"))
	var te *api.TransactionError
	if !errors.As(err, &te) || len(te.KVErrors) != 1 || te.KVErrors[0].Key != "route/2" || !errors.Is(te.KVErrors[0].Error, mocksb.ErrInjected) {
		t.Fatalf("commit: %v, want the injected failure of route/2 alone", err)
	}
	e.expectOps("create", "batch 3", "create route/1=1", "create route/2=2", "create route/3=3")
	e.expectState("route/1", api.ValueStateConfigured)
	e.expectState("route/2", api.ValueStateFailed)
	e.expectState("route/3", api.ValueStateConfigured)
	e.expectSB("after the failure", map[string]string{"route/1": "1", "route/3": "3"})
	if _, err := e.resync(set("route/1", "1"), set("route/2", "2"), set("route/3", "3")); err != nil {
		t.Fatal(err)
	}
	e.expectOps("resync", "create route/2=2")
	e.expectState("route/2", api.ValueStateConfigured)
}

// A transaction with revert never batches: at its first failure it knows
// exactly what was done, and undoes it.
func TestBatchNotInRevertMode(t *testing.T) {
	e := newEnv(t)
	e.register(batchRoutes())
	e.sb.Fail("create", "route/3", nil, 1)
	ctx := withOpts(context.Background(), api.TxnOptions{Revert: true})
	if _, err := e.commit(ctx, set("route/1", "1"), set("route/2", "2"), set("route/3", "3")); err == nil {
		t.Fatal("commit: no error")
	}
	e.expectOps("reverted", "create route/1=1", "create route/2=2", "create route/3=3", "delete route/2", "delete route/1")
	e.expectSB("reverted", nil)
}

// MaxBatch bounds a batch.
func TestBatchMaxBatch(t *testing.T) {
	e := &env{t: t, s: kvscheduler.New(kvscheduler.Options{Logger: testLogger(t), MaxBatch: 2}), sb: mocksb.New()}
	t.Cleanup(e.s.Close)
	e.register(batchRoutes())
	e.mustCommit(context.Background(), set("route/1", "1"), set("route/2", "2"), set("route/3", "3"))
	e.expectOps("create", "batch 2", "create route/1=1", "create route/2=2", "create route/3=3")
}

// A Batch that gives an operation no result, or panics: those operations
// fail, saying so; the ones it finished keep their results.
func TestBatchWithoutResults(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		batch      func(ops []api.BatchOp)
	}{
		{"no result", "returned without a result for the CREATE of route/2", func(ops []api.BatchOp) {
			ops[0].Done(nil)
			ops[2].Done(nil)
		}},
		{"panic", "panicked before the CREATE of route/2: boom", func(ops []api.BatchOp) {
			ops[0].Done(nil)
			ops[2].Done(nil)
			panic("boom")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			d := e.sb.Descriptor(routes())
			d.Batch = func(_ context.Context, ops []api.BatchOp) { tc.batch(ops) }
			if err := e.s.RegisterKVDescriptor(d); err != nil {
				t.Fatal(err)
			}
			_, err := e.commit(context.Background(), set("route/1", "1"), set("route/2", "2"), set("route/3", "3"))
			var te *api.TransactionError
			if !errors.As(err, &te) || len(te.KVErrors) != 1 || te.KVErrors[0].Key != "route/2" ||
				!strings.Contains(te.KVErrors[0].Error.Error(), tc.want) || !strings.Contains(te.KVErrors[0].Error.Error(), "descriptor route") {
				t.Fatalf("commit: %v, want route/2 failed with %q", err, tc.want)
			}
			e.expectState("route/1", api.ValueStateConfigured)
			st := e.expectState("route/2", api.ValueStateFailed)
			if st.GetError() == "" {
				t.Error("route/2 has no error")
			}
			e.expectState("route/3", api.ValueStateConfigured)
		})
	}
}

// A value that depends on a derived value (here a property, which has no
// call of its own) of another value of the descriptor is not batched with
// that value (found by TestPropConvergesWithRetries).
func TestBatchDependencyOnADerivedValue(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "a", Prefix: "a/", NB: true, Deps: mocksb.DependsOn, Derived: propDerivedValues, Batch: true})
	e.sb.Fail("create", "a/1", nil, 1)
	if _, err := e.commit(context.Background(), set("a/1", "v0 der=p1"), set("a/2", "v0 dep=prop/a/1/p1")); err == nil {
		t.Fatal("commit: no error")
	}
	e.expectOps("create", "create a/1=v0 der=p1")
	e.expectState("a/2", api.ValueStatePending, "prop/a/1/p1")
}

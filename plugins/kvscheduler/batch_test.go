package kvscheduler_test

// Batches (api.KVDescriptor.Batch): independent operations of one
// descriptor that follow each other in a plan go to Batch together; the
// dependency graph's order is kept between batches; each operation has its
// own result.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

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
	// Waves: route/1 and route/4 first, then the two that depend on route/1.
	e.expectOps("create", "batch 2", "create route/1=1", "create route/4=4", "batch 2", "create route/2=2 dep=route/1", "create route/3=3 dep=route/1")
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

// batchedIfaces are interfaces "iface/<n>" with Batch, and their derived
// items "iface/<n>/<item>" (from "items=x,y") with Batch too.
func batchedIfaces() (iface, item mocksb.Options) {
	iface = ifaces()
	iface.Batch, iface.Keys = true, depth(1)
	iface.Derived = items
	return iface, mocksb.Options{Name: "iface-item", Prefix: "iface/", Keys: depth(2), Batch: true}
}

// ifacesABCCreated are the first two batches of a create of iface/a, b and
// c with items x and y (batchedIfaces).
func ifacesABCCreated() []string {
	return []string{
		"batch 3", "create iface/a=items=x,y", "create iface/b=items=x,y", "create iface/c=items=x,y",
		"batch 6", "create iface/a/x=x", "create iface/a/y=y", "create iface/b/x=x", "create iface/b/y=y", "create iface/c/x=x", "create iface/c/y=y",
	}
}

// Values of several descriptors with Batch, interleaved in the plan (an
// interface, its derived values, the next interface, ...): each descriptor
// gets all its independent operations in one batch, wave after wave.
func TestBatchWavesAcrossDescriptors(t *testing.T) {
	e := newEnv(t)
	iface, item := batchedIfaces()
	route := batchRoutes()
	e.register(iface, item, route)
	var kvs []kv
	for _, n := range []string{"a", "b", "c"} {
		kvs = append(kvs, set("iface/"+n, "items=x,y"), set("route/"+n, "r dep=iface/"+n+"/x"))
	}
	e.mustCommit(context.Background(), kvs...)
	e.expectOps("create", append(ifacesABCCreated(),
		"batch 3", "create route/a=r dep=iface/a/x", "create route/b=r dep=iface/b/x", "create route/c=r dep=iface/c/x")...)
	for _, k := range []string{"iface/a", "iface/c/y", "route/b"} {
		e.expectState(k, api.ValueStateConfigured)
	}
	// And back: routes, then the derived values, then the interfaces.
	deleteABC(e)
	e.expectSB("deleted", nil)
}

// deleteABC deletes iface/a, b and c (batchedIfaces) and route/a, b and c
// (each depending on its interface's x item) in one transaction, and checks
// the waves: the y items depend on nothing the transaction deletes first,
// so they go in the first wave, with the routes; the x items wait for the
// routes, the interfaces for their items.
func deleteABC(e *env) {
	e.t.Helper()
	var dels []kv
	for _, n := range []string{"a", "b", "c"} {
		dels = append(dels, del("iface/"+n), del("route/"+n))
	}
	e.mustCommit(context.Background(), dels...)
	e.expectOps("delete",
		"batch 3", "delete iface/a/y", "delete iface/b/y", "delete iface/c/y",
		"batch 3", "delete route/a", "delete route/b", "delete route/c",
		"batch 3", "delete iface/a/x", "delete iface/b/x", "delete iface/c/x",
		"batch 3", "delete iface/a", "delete iface/b", "delete iface/c")
}

// Values with an AnyOf dependency (a route whose gateway any of its
// interface's addresses makes reachable) are batched: each after the wave
// of the values under its prefixes that it accepts, as for a Key
// dependency. An AnyOf without key prefixes keeps its value alone.
func TestBatchWithAnyOfDependencies(t *testing.T) {
	e := newEnv(t)
	iface, item := batchedIfaces()
	route := batchRoutes()
	route.Deps = func(_ string, v proto.Message) []api.Dependency {
		if to := field(v, "via"); to != "" { // any x item of that interface
			return []api.Dependency{{Label: "via " + to, AnyOf: api.AnyOfDependency{KeyPrefixes: []string{"iface/" + to + "/"},
				KeySelector: func(key string) bool { return strings.HasSuffix(key, "/x") }}}}
		}
		if to := field(v, "anywhere"); to != "" { // no prefix: the selector alone
			return []api.Dependency{{Label: "anywhere " + to, AnyOf: api.AnyOfDependency{
				KeySelector: func(key string) bool { return key == "iface/"+to+"/x" }}}}
		}
		return nil
	}
	e.register(iface, item, route)
	var kvs []kv
	for _, n := range []string{"a", "b", "c"} {
		kvs = append(kvs, set("iface/"+n, "items=x,y"), set("route/"+n, "r via="+n))
	}
	e.mustCommit(context.Background(), kvs...)
	e.expectOps("create", append(ifacesABCCreated(),
		"batch 3", "create route/a=r via=a", "create route/b=r via=b", "create route/c=r via=c")...)
	e.expectState("route/b", api.ValueStateConfigured)
	// Back: the routes first, then what they could stand on.
	deleteABC(e)

	// Without prefixes: each such route alone, after everything before it.
	e.mustCommit(context.Background(), set("iface/d", "items=x"), set("route/d1", "r anywhere=d"), set("route/d2", "r anywhere=d"))
	e.expectOps("create without prefixes",
		"create iface/d=items=x", "create iface/d/x=x", "create route/d1=r anywhere=d", "create route/d2=r anywhere=d")

	// Prefixes that hold more keys than a step may scan: alone too.
	many := []string{"x"}
	for i := range 300 {
		many = append(many, fmt.Sprintf("i%d", i))
	}
	e.mustCommit(context.Background(), set("iface/e", "items="+strings.Join(many, ",")), set("route/e1", "r via=e"), set("route/e2", "r via=e"))
	ops := e.sb.OpStrings(false)
	e.sb.ClearOps()
	if n := len(ops); n < 2 || ops[n-2] != "create route/e1=r via=e" || ops[n-1] != "create route/e2=r via=e" || slices.Contains(ops, "batch 2") {
		t.Errorf("routes via an interface of 301 items: ... %q, want each alone, last", ops[max(0, len(ops)-4):])
	}
}

// Pairs of values that depend on each other (a cycle each, as the two ends
// of a veth pair): the first ends of all pairs go in one batch, then the
// second ends, both when created and when deleted.
func TestBatchWavesOfCycles(t *testing.T) {
	e := newEnv(t)
	e.register(batchRoutes())
	var kvs, dels []kv
	for _, n := range []string{"1", "2", "3"} {
		kvs = append(kvs, set("route/"+n+"a", "a dep=route/"+n+"b"), set("route/"+n+"b", "b dep=route/"+n+"a"))
		dels = append(dels, del("route/"+n+"a"), del("route/"+n+"b"))
	}
	e.mustCommit(context.Background(), kvs...)
	ops := e.sb.OpStrings(false)
	e.sb.ClearOps()
	if len(ops) != 8 || ops[0] != "batch 3" || ops[4] != "batch 3" {
		t.Errorf("create: %q, want two batches of 3", ops)
	}
	for _, n := range []string{"1a", "2b", "3a"} {
		e.expectState("route/"+n, api.ValueStateConfigured)
	}
	e.mustCommit(context.Background(), dels...)
	ops = e.sb.OpStrings(false)
	e.sb.ClearOps()
	if len(ops) != 8 || ops[0] != "batch 3" || ops[4] != "batch 3" {
		t.Errorf("delete: %q, want two batches of 3", ops)
	}
	e.expectSB("deleted", nil)
}

// A failure in an early wave stops the execution after its batch; the
// re-run replays what was executed, out of plan order, and goes on: the
// values of the failed one wait, the others are applied once each.
func TestBatchWaveFailure(t *testing.T) {
	e := newEnv(t)
	iface := ifaces()
	iface.Batch, iface.Keys = true, depth(1)
	iface.Derived = items
	item := mocksb.Options{Name: "iface-item", Prefix: "iface/", Keys: depth(2), Batch: true}
	e.register(iface, item, batchRoutes())
	e.sb.Fail("create", "iface/b", nil, 1)
	var kvs []kv
	for _, n := range []string{"a", "b", "c"} {
		kvs = append(kvs, set("iface/"+n, "items=x"), set("route/"+n, "r dep=iface/"+n+"/x"))
	}
	if _, err := e.commit(context.Background(), kvs...); err == nil {
		t.Fatal("commit: no error")
	}
	ops := e.sb.OpStrings(false)
	e.sb.ClearOps()
	counts := map[string]int{}
	for _, op := range ops {
		counts[op]++
	}
	for _, op := range []string{"create iface/a=items=x", "create iface/b=items=x", "create iface/c=items=x", "create iface/a/x=x", "create iface/c/x=x", "create route/a=r dep=iface/a/x", "create route/c=r dep=iface/c/x"} {
		if counts[op] != 1 {
			t.Errorf("%s made %d times: %q", op, counts[op], ops)
		}
	}
	if counts["create iface/b/x=x"] != 0 || counts["create route/b=r dep=iface/b/x"] != 0 {
		t.Errorf("values of the failed interface were made: %q", ops)
	}
	e.expectState("iface/b", api.ValueStateFailed)
	e.expectState("route/b", api.ValueStatePending, "iface/b/x")
	e.expectState("route/c", api.ValueStateConfigured)
	e.expectSB("after", map[string]string{"iface/a": "items=x", "iface/a/x": "x", "iface/c": "items=x", "iface/c/x": "x", "route/a": "r dep=iface/a/x", "route/c": "r dep=iface/c/x"})
}

// countingMap is a metadata map that counts its writes by key.
type countingMap struct {
	*api.MemMetadataMap
	mu     sync.Mutex
	writes map[string]int
}

func (m *countingMap) Put(key string, md any) {
	m.mu.Lock()
	m.writes[key]++
	m.mu.Unlock()
	m.MemMetadataMap.Put(key, md)
}

func (m *countingMap) Delete(key string) {
	m.mu.Lock()
	m.writes[key]++
	m.mu.Unlock()
	m.MemMetadataMap.Delete(key)
}

// Each executed operation writes its value's metadata once (a map with
// indexes pays for each write), batched or not, and the map ends with
// what was applied.
func TestMetadataWrittenOncePerOperation(t *testing.T) {
	for _, batched := range []bool{true, false} {
		e := newEnv(t)
		m := &countingMap{MemMetadataMap: api.NewMetadataMap(), writes: map[string]int{}}
		o := ifaces()
		o.Batch = batched
		d := e.sb.Descriptor(o)
		d.MetadataMapFactory = func() api.MetadataMapRW { return m }
		if err := e.s.RegisterKVDescriptor(d); err != nil {
			t.Fatal(err)
		}
		e.mustCommit(context.Background(), set("iface/a", "a"), set("iface/b", "b"), set("iface/c", "c"))
		e.mustCommit(context.Background(), set("iface/a", "a2"), del("iface/b"))
		want := map[string]int{"iface/a": 2, "iface/b": 2, "iface/c": 1}
		m.mu.Lock()
		if fmt.Sprint(m.writes) != fmt.Sprint(want) {
			t.Errorf("batched %v: metadata writes %v, want %v (create, update or delete: one each)", batched, m.writes, want)
		}
		m.mu.Unlock()
		if _, ok := m.GetValue("iface/b"); ok {
			t.Errorf("batched %v: iface/b's metadata left after its delete", batched)
		}
		if md, ok := m.GetValue("iface/a"); !ok || md == nil {
			t.Errorf("batched %v: iface/a's metadata %v, %v", batched, md, ok)
		}
	}
}

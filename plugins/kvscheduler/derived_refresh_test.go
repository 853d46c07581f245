package kvscheduler_test

// The SB state of derived values in a refresh (issue 15, A) and the refresh
// after a failed operation on a derived value (issue 15, B; seed 001: "Refresh
// is performed ... after a failed C(R)UD operation(s), but only for vertices
// affected by the failure"), for the shapes a descriptor of derived values
// can take:
//
//   - own Retrieve: a descriptor of its own, whose Retrieve returns the
//     derived values the SB holds (as the VPP and Linux plugins' derived
//     descriptors do): a derived value it does not return is missing;
//   - no Retrieve: a descriptor of its own without Retrieve: the derived
//     values are in the SB as the retrieved base value derives them;
//   - base's descriptor: the base's descriptor describes the derived keys
//     too; its Retrieve returns the base values only (seed 003: correlate and
//     Retrieve are about non-derived values), so the derived values are
//     in the SB as the retrieved base value derives them.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// derivedShape registers the descriptors of base values "a/<name>" (value
// "items=x,y" derives "a/<name>/x"="x" and "a/<name>/y"="y") and of their
// derived values, in one of the shapes above.
type derivedShape struct {
	name string
	// ownRetrieve: the derived values' own Retrieve tells whether they are
	// in the SB.
	ownRetrieve bool
	descriptors func(base, derived mocksb.Options) []mocksb.Options
}

var derivedShapes = []derivedShape{
	{
		name: "own Retrieve", ownRetrieve: true,
		descriptors: func(base, derived mocksb.Options) []mocksb.Options {
			return []mocksb.Options{base, derived}
		},
	},
	{
		name: "no Retrieve",
		descriptors: func(base, derived mocksb.Options) []mocksb.Options {
			derived.NoRetrieve = true
			return []mocksb.Options{base, derived}
		},
	},
	{
		name: "base's descriptor",
		descriptors: func(base, derived mocksb.Options) []mocksb.Options {
			base.Keys = nil
			base.RetrieveKeys = depth(1)
			prev := base.Deps
			base.Deps = func(key string, v proto.Message) []api.Dependency {
				if depth(2)(key) {
					return derived.Deps(key, v)
				}
				if prev != nil {
					return prev(key, v)
				}
				return nil
			}
			return []mocksb.Options{base}
		},
	},
}

func (sh derivedShape) register(e *env, base, derived mocksb.Options) {
	e.t.Helper()
	for _, d := range sh.build(e, base, derived) {
		if err := e.s.RegisterKVDescriptor(d); err != nil {
			e.t.Fatalf("register descriptor %q: %v", d.Name, err)
		}
	}
}

// build returns the descriptors of the shape, backed by the env's SB.
func (sh derivedShape) build(e *env, base, derived mocksb.Options) []*api.KVDescriptor {
	if derived.Deps == nil {
		derived.Deps = func(string, proto.Message) []api.Dependency { return nil }
	}
	var out []*api.KVDescriptor
	for _, o := range sh.descriptors(base, derived) {
		out = append(out, e.sb.Descriptor(o))
	}
	return out
}

func baseOpts() mocksb.Options {
	return mocksb.Options{Name: "A", Prefix: "a/", NB: true, WithMetadata: true, Keys: depth(1), Derived: items}
}

func derivedOpts() mocksb.Options {
	return mocksb.Options{Name: "A-item", Prefix: "a/", Keys: depth(2)}
}

// A full resync finds the derived values of a retrieved base in the SB: it
// does not create those already there, deletes those of a changed base that
// the NB value no longer derives, executes nothing when repeated, and an
// empty full resync deletes the derived values before their bases.
func TestResyncDerivedValuesOfRetrievedBase(t *testing.T) {
	for _, sh := range derivedShapes {
		t.Run(sh.name, func(t *testing.T) {
			e := newEnv(t)
			sh.register(e, baseOpts(), derivedOpts())
			// What an earlier run of the agent left in the SB: v1 as the NB
			// wants it, v2 with another item.
			e.sb.Put("a/v1", mocksb.Str("items=x,y"), &mocksb.Meta{Index: 101}, api.FromNB)
			e.sb.Put("a/v1/x", mocksb.Str("x"), nil, api.FromNB)
			e.sb.Put("a/v1/y", mocksb.Str("y"), nil, api.FromNB)
			e.sb.Put("a/v2", mocksb.Str("items=p"), &mocksb.Meta{Index: 102}, api.FromNB)
			e.sb.Put("a/v2/p", mocksb.Str("p"), nil, api.FromNB)
			nb := []kv{set("a/v1", "items=x,y"), set("a/v2", "items=q")}
			want := map[string]string{
				"a/v1": "items=x,y", "a/v1/x": "x", "a/v1/y": "y",
				"a/v2": "items=q", "a/v2/q": "q",
			}

			// 1. Full resync: v1 and its items are in sync; v2's obsolete
			//    item goes before v2 is updated, the new one follows it.
			if _, err := e.resync(nb...); err != nil {
				t.Fatalf("resync: %v", err)
			}
			e.expectOps("resync",
				"delete a/v2/p",
				"update a/v2=items=q",
				"create a/v2/q=q")
			for _, key := range []string{"a/v1", "a/v1/x", "a/v1/y", "a/v2", "a/v2/q"} {
				e.expectState(key, api.ValueStateConfigured)
			}
			e.expectGone("a/v2/p")
			e.expectSB("resync", want)

			// 2. The same resync, twice: in sync, nothing is executed.
			for _, step := range []string{"resync in sync", "resync in sync again"} {
				if _, err := e.resync(nb...); err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				e.expectOps(step)
				e.expectSB(step, want)
				for _, key := range []string{"a/v1", "a/v1/x", "a/v1/y", "a/v2", "a/v2/q"} {
					e.expectState(key, api.ValueStateConfigured)
				}
			}

			// 3. A downstream resync: in sync as well.
			if _, err := e.s.StartNBTransaction().Commit(context.Background(), api.TxnOptions{Resync: api.DownstreamResync}); err != nil {
				t.Fatalf("downstream resync: %v", err)
			}
			e.expectOps("downstream resync in sync")

			// 4. An empty full resync: every derived value goes before its
			//    base.
			if _, err := e.resync(); err != nil {
				t.Fatalf("empty resync: %v", err)
			}
			e.expectOps("empty resync",
				"delete a/v1/y",
				"delete a/v1/x",
				"delete a/v1",
				"delete a/v2/q",
				"delete a/v2")
			for key := range want {
				e.expectGone(key)
			}
			e.expectSB("empty resync", nil)
		})
	}
}

// A derived value lost from the SB behind the agent's back: its own Retrieve
// tells, and the resync creates it again; without a Retrieve of its own the
// retrieved base is all the scheduler can see, and the value counts as there.
func TestResyncDerivedValueLostFromSB(t *testing.T) {
	for _, sh := range derivedShapes {
		t.Run(sh.name, func(t *testing.T) {
			e := newEnv(t)
			sh.register(e, baseOpts(), derivedOpts())
			nb := []kv{set("a/v1", "items=x,y")}
			if _, err := e.resync(nb...); err != nil {
				t.Fatalf("resync: %v", err)
			}
			e.expectOps("resync", "create a/v1=items=x,y", "create a/v1/x=x", "create a/v1/y=y")

			e.sb.Remove("a/v1/x")
			if _, err := e.resync(nb...); err != nil {
				t.Fatalf("resync after the loss: %v", err)
			}
			if sh.ownRetrieve {
				e.expectOps("resync after the loss", "create a/v1/x=x")
				e.expectSB("resync after the loss", map[string]string{"a/v1": "items=x,y", "a/v1/x": "x", "a/v1/y": "y"})
			} else {
				e.expectOps("resync after the loss")
			}
			e.expectState("a/v1/x", api.ValueStateConfigured)
		})
	}
}

// A derived value PENDING on a missing dependency is not in the SB, whatever
// its retrieved base derives: a resync neither deletes it nor calls it
// created.
func TestResyncKeepsPendingDerivedValueNotApplied(t *testing.T) {
	for _, sh := range derivedShapes {
		t.Run(sh.name, func(t *testing.T) {
			e := newEnv(t)
			derived := derivedOpts()
			derived.Deps = depsFrom(map[string][]string{"a/v1/y": {"a/other"}})
			sh.register(e, baseOpts(), derived)
			nb := []kv{set("a/v1", "items=x,y")}
			if _, err := e.resync(nb...); err != nil {
				t.Fatalf("resync: %v", err)
			}
			e.expectOps("resync", "create a/v1=items=x,y", "create a/v1/x=x")
			e.expectState("a/v1/y", api.ValueStatePending, "a/other")
			if _, err := e.resync(nb...); err != nil {
				t.Fatalf("second resync: %v", err)
			}
			e.expectOps("second resync")
			e.expectState("a/v1/y", api.ValueStatePending, "a/other")
			e.expectState("a/v1/x", api.ValueStateConfigured)
		})
	}
}

// A failed Create of a derived value that changed its base in the SB: the
// base is refreshed with it (seed 001: refresh after a failed operation, for
// the vertices affected by the failure) and is no longer reported CONFIGURED;
// the retry updates the base back, then creates the derived value.
func TestFailedDerivedCreateRefreshesItsBase(t *testing.T) {
	for _, sh := range derivedShapes {
		t.Run(sh.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := openEnv(t)
				defer e.s.Close()
				errRefused := errors.New("address refused; interface reset")
				for _, d := range sh.build(e, baseOpts(), derivedOpts()) {
					create := d.Create
					d.Create = func(ctx context.Context, key string, v proto.Message) (any, error) {
						md, err := create(ctx, key, v)
						if err != nil && key == "a/v1/x" {
							// The failure changed the base in the SB.
							it, _ := e.sb.Get("a/v1")
							e.sb.Put("a/v1", mocksb.Str("items=x reset"), it.Metadata, api.FromNB)
						}
						return md, err
					}
					if err := e.s.RegisterKVDescriptor(d); err != nil {
						t.Fatalf("register %s: %v", d.Name, err)
					}
				}

				// 1. NB (retry after 1s): a/v1 with item x. Create(a/v1/x)
				//    fails and resets a/v1; both are refreshed. a/v1 is not
				//    as intended (MISSING), a/v1/x RETRYING.
				e.sb.Fail("create", "a/v1/x", errRefused, 1)
				ctx := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second, MaxCount: 3, ExpBackoff: false}})
				_, err := e.commit(ctx, set("a/v1", "items=x"))
				te := txnErr(t, err)
				expectKVErrors(t, te, errRefused, map[string]api.TxnOperation{"a/v1/x": api.OpCreate})
				wantOps := []string{"create a/v1=items=x", "create a/v1/x=x", "retrieve A"}
				if sh.ownRetrieve {
					wantOps = append(wantOps, "retrieve A-item")
				}
				e.expectOpsWithRetrieve("failed derived create", wantOps...)
				e.expectState("a/v1", api.ValueStateMissing)
				e.expectState("a/v1/x", api.ValueStateRetrying)
				e.expectSB("failed derived create", map[string]string{"a/v1": "items=x reset"})

				// 2. The retry: the base first, then its derived value.
				time.Sleep(time.Second)
				synctest.Wait()
				e.expectOps("retry", "update a/v1=items=x", "create a/v1/x=x")
				e.expectState("a/v1", api.ValueStateConfigured)
				e.expectState("a/v1/x", api.ValueStateConfigured)
				e.expectSB("retry", map[string]string{"a/v1": "items=x", "a/v1/x": "x"})
			})
		})
	}
}

// A failed Create of a derived value that left it in the SB: when its own
// descriptor retrieves it, the refresh finds it, and it is CONFIGURED
// without a retry; otherwise the retry creates it again.
func TestFailedDerivedCreateLeavingItInTheSB(t *testing.T) {
	for _, sh := range derivedShapes {
		t.Run(sh.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := openEnv(t)
				defer e.s.Close()
				sh.register(e, baseOpts(), derivedOpts())
				e.sb.FailLeaving("a/v1/x", nil, 1)
				ctx := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second, MaxCount: 3, ExpBackoff: false}})
				_, _ = e.commit(ctx, set("a/v1", "items=x"))
				e.expectState("a/v1", api.ValueStateConfigured)
				time.Sleep(time.Second)
				synctest.Wait()
				if sh.ownRetrieve {
					e.expectOps("left in the SB", "create a/v1=items=x", "create a/v1/x=x")
				} else {
					e.expectOps("left in the SB", "create a/v1=items=x", "create a/v1/x=x", "create a/v1/x=x")
				}
				e.expectState("a/v1/x", api.ValueStateConfigured)
				e.expectSB("left in the SB", map[string]string{"a/v1": "items=x", "a/v1/x": "x"})
			})
		})
	}
}

// A failed Create of a derived value whose failure removed its base from the
// SB (or someone did meanwhile): the refresh finds the base gone and it is
// MISSING, not CONFIGURED; its other derived values, gone with it, are
// MISSING; what depends on the base is deleted (PENDING). The retry of the
// failed derived value goes through its base: the base is created again,
// then its derived values, then what depends on it.
func TestFailedDerivedCreateRemovedItsBase(t *testing.T) {
	for _, sh := range derivedShapes {
		t.Run(sh.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := openEnv(t)
				defer e.s.Close()
				errGone := errors.New("refused; the interface went with it")
				for _, d := range sh.build(e, baseOpts(), derivedOpts()) {
					create := d.Create
					d.Create = func(ctx context.Context, key string, v proto.Message) (any, error) {
						md, err := create(ctx, key, v)
						if err != nil && key == "a/v1/y" {
							e.sb.Remove("a/v1/x")
							e.sb.Remove("a/v1")
						}
						return md, err
					}
					if err := e.s.RegisterKVDescriptor(d); err != nil {
						t.Fatalf("register %s: %v", d.Name, err)
					}
				}
				if err := e.s.RegisterKVDescriptor(e.sb.Descriptor(mocksb.Options{Name: "B", Prefix: "b/", NB: true, Deps: mocksb.DependsOn})); err != nil {
					t.Fatal(err)
				}

				e.sb.Fail("create", "a/v1/y", errGone, 1)
				ctx := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second, MaxCount: 3}})
				_, err := e.commit(ctx, set("a/v1", "items=x,y"), set("b/1", "dep=a/v1"))
				expectKVErrors(t, txnErr(t, err), errGone, map[string]api.TxnOperation{"a/v1/y": api.OpCreate})
				// (The refresh asks each descriptor in turn and handles what
				// it found before asking the next.)
				wantOps := []string{"create a/v1=items=x,y", "create a/v1/x=x", "create a/v1/y=y", "create b/1=dep=a/v1", "retrieve A", "delete b/1"}
				if sh.ownRetrieve {
					wantOps = append(wantOps, "retrieve A-item")
				}
				e.expectOpsWithRetrieve("failed derived create", wantOps...)
				e.expectState("a/v1", api.ValueStateMissing)
				e.expectState("a/v1/x", api.ValueStateMissing)
				e.expectState("a/v1/y", api.ValueStateRetrying)
				e.expectState("b/1", api.ValueStatePending, "a/v1")
				e.expectSB("failed derived create", nil)

				time.Sleep(time.Second)
				synctest.Wait()
				e.expectOps("retry", "create a/v1=items=x,y", "create a/v1/x=x", "create a/v1/y=y", "create b/1=dep=a/v1")
				for _, key := range []string{"a/v1", "a/v1/x", "a/v1/y", "b/1"} {
					e.expectState(key, api.ValueStateConfigured)
				}
				e.expectSB("retry", map[string]string{"a/v1": "items=x,y", "a/v1/x": "x", "a/v1/y": "y", "b/1": "dep=a/v1"})
			})
		})
	}
}

// After a restart, a value whose derived value depends (AnyOf) on a
// derived value of a base that comes later in key order (a VPP interface
// "unnumbered" from a donor whose addresses are derived values) is left
// alone by the in-sync resync: the donor's derived values are in the SB
// before the donor derives them again in its turn. It was deleted and
// created again (found with the VPP plugins, memo-un and memo1).
func TestRestartResyncKeepsADependencyOnALaterDerivedValue(t *testing.T) {
	// iface/<n> "items=x" derives iface/<n>/x; "un=<donor>" derives
	// iface/<n>/un, which depends on any iface/<donor>/ item.
	derive := func(key string, v proto.Message) []api.KeyValuePair {
		out := items(key, v)
		for _, f := range strings.Fields(mocksb.Text(v)) {
			if d, ok := strings.CutPrefix(f, "un="); ok {
				out = append(out, kvp(key+"/un", "un="+d))
			}
		}
		return out
	}
	isItem := func(k string) bool { return depth(2)(k) && !strings.HasSuffix(k, "/un") }
	iface := ifaces()
	iface.Keys, iface.Derived = depth(1), derive
	item := mocksb.Options{Name: "item", Prefix: "iface/", Keys: isItem}
	un := mocksb.Options{Name: "un", Prefix: "iface/", Keys: func(k string) bool { return strings.HasSuffix(k, "/un") },
		Deps: func(key string, v proto.Message) []api.Dependency {
			donor := strings.TrimPrefix(mocksb.Text(v), "un=")
			return []api.Dependency{{Label: "donor", AnyOf: api.AnyOfDependency{KeyPrefixes: []string{"iface/" + donor + "/"}, KeySelector: isItem}}}
		}}
	values := []kv{set("iface/b", "items=x"), set("iface/a", "un=b")}
	first := newEnv(t)
	first.register(iface, item, un)
	first.mustCommit(context.Background(), values...)
	first.expectOps("created", "create iface/a=un=b", "create iface/b=items=x", "create iface/b/x=x", "create iface/a/un=un=b")

	// A new scheduler (the agent restarted) over the same SB.
	restarted := &env{t: t, s: kvscheduler.New(kvscheduler.Options{Logger: testLogger(t)}), sb: first.sb}
	t.Cleanup(restarted.s.Close)
	restarted.register(iface, item, un)
	if _, err := restarted.resync(values...); err != nil {
		t.Fatal(err)
	}
	restarted.expectOps("in-sync resync after a restart")
	restarted.expectState("iface/a/un", api.ValueStateConfigured)
	// The donor's item goes: what depends on it goes first.
	if _, err := restarted.resync(set("iface/b", "items=y"), set("iface/a", "un=b")); err != nil {
		t.Fatal(err)
	}
	restarted.expectOps("the donor's item replaced", "delete iface/a/un", "delete iface/b/x", "update iface/b=items=y", "create iface/b/y=y", "create iface/a/un=un=b")
}

// A full resync derives a base found unchanged (the same applied message)
// as the one before did, without asking DerivedValues again, neither in
// its refresh nor in its plan (where the NB value, equal, leaves the
// node's message); a base the SB changed is derived anew, and what it no
// longer derives is repaired.
func TestResyncDerivesAnUnchangedBaseOnce(t *testing.T) {
	for _, sh := range derivedShapes {
		t.Run(sh.name, func(t *testing.T) {
			e := newEnv(t)
			var mu sync.Mutex
			calls := 0 // of DerivedValues for a/v1
			base := baseOpts()
			base.Derived = func(key string, v proto.Message) []api.KeyValuePair {
				if key == "a/v1" {
					mu.Lock()
					calls++
					mu.Unlock()
				}
				return items(key, v)
			}
			sh.register(e, base, derivedOpts())
			want := map[string]string{"a/v1": "items=x,y", "a/v1/x": "x", "a/v1/y": "y"}
			// resync runs a full resync of a/v1 (a new message each time)
			// and returns how many times it derived a/v1.
			resync := func(step string, ops ...string) int {
				t.Helper()
				mu.Lock()
				calls = 0
				mu.Unlock()
				if _, err := e.resync(set("a/v1", "items=x,y")); err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				e.expectOps(step, ops...)
				e.expectSB(step, want)
				for _, key := range []string{"a/v1", "a/v1/x", "a/v1/y"} {
					e.expectState(key, api.ValueStateConfigured)
				}
				mu.Lock()
				defer mu.Unlock()
				return calls
			}
			resync("create", "create a/v1=items=x,y", "create a/v1/x=x", "create a/v1/y=y")
			if n := resync("in sync"); n == 0 {
				t.Errorf("first resync in sync: a/v1 not derived (nothing to reuse yet)")
			}
			for _, step := range []string{"in sync again", "and again"} {
				if n := resync(step); n != 0 {
					t.Errorf("%s: the unchanged a/v1 derived %d times, want 0 (what the resync before derived)", step, n)
				}
			}

			// The SB's base changed behind the agent's back: it derives only
			// x now. The refresh derives it anew; the resync updates it.
			e.sb.Put("a/v1", mocksb.Str("items=x"), &mocksb.Meta{Index: 1}, api.FromNB)
			ops := []string{"update a/v1=items=x,y"}
			if !sh.ownRetrieve {
				e.sb.Remove("a/v1/y") // as the base tells
				ops = append(ops, "create a/v1/y=y")
			}
			if n := resync("base changed", ops...); n == 0 {
				t.Errorf("base changed: a/v1 not derived again")
			}
			resync("in sync after the change")
			if n := resync("in sync after the change, again"); n != 0 {
				t.Errorf("in sync after the change, again: the unchanged a/v1 derived %d times, want 0", n)
			}
		})
	}
}

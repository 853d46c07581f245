package kvscheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"pgregory.net/rapid"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// Exclusive dependencies, in the shape of VPP's one bridge domain per
// interface: interfaces "if/<name>", bridge domains "bd/<n>" whose value
// "bd ifaces=a,b" derives one binding "bd/<n>/if/<name>" per interface, and
// every binding of interface a depends on if/a and competes for resource
// "member/a".
func newExclusiveEnv(t *testing.T) *env {
	e := newEnv(t)
	registerExclusive(e)
	return e
}

func registerExclusive(e *env) {
	isBinding := func(key string) bool { return strings.Contains(key, "/if/") }
	e.register(
		mocksb.Options{Name: "iface", Prefix: "if/", NB: true},
		mocksb.Options{Name: "bd", Prefix: "bd/", NB: true, Keys: func(key string) bool { return !isBinding(key) },
			Derived: func(key string, v proto.Message) []api.KeyValuePair {
				var out []api.KeyValuePair
				_, list, _ := strings.Cut(mocksb.Text(v), "ifaces=")
				for _, name := range strings.Split(list, ",") {
					if name != "" {
						out = append(out, api.KeyValuePair{Key: key + "/if/" + name, Value: mocksb.Str("member " + name)})
					}
				}
				return out
			}},
		mocksb.Options{Name: "binding", Prefix: "bd/", Keys: isBinding,
			Deps: func(key string, _ proto.Message) []api.Dependency {
				name := key[strings.LastIndex(key, "/")+1:]
				return []api.Dependency{
					{Label: "interface " + name, Key: "if/" + name},
					{Label: "interface " + name + " in no other domain", Exclusive: "member/" + name},
				}
			}},
	)
}

// TestExclusiveSecondWaitsForTheHolder: of two values competing for a
// resource in one transaction, the first in key order is created and the
// other waits PENDING naming the holder, with no SB operation; when the
// holder goes, the waiting one is created in the same transaction, after
// the holder's Delete.
func TestExclusiveSecondWaitsForTheHolder(t *testing.T) {
	e := newExclusiveEnv(t)
	ctx := context.Background()
	seq := e.mustCommit(ctx, set("if/a", "a"), set("bd/1", "bd ifaces=a"), set("bd/2", "bd ifaces=a"))
	// (The bindings wait for if/a, which sorts after the domains; when it is
	// created, the first of them in key order gets it.)
	e.expectOps("both want a",
		"create bd/1=bd ifaces=a", "create bd/2=bd ifaces=a", "create if/a=a", "create bd/1/if/a=member a")
	e.expectState("bd/1/if/a", api.ValueStateConfigured)
	e.expectState("bd/2/if/a", api.ValueStatePending, "interface a in no other domain (held by bd/1/if/a)")
	for _, op := range e.s.GetRecordedTransaction(seq).Executed {
		if op.Key == "bd/2/if/a" && (!op.NOOP || op.NewErr != nil) {
			t.Errorf("the waiting binding has an operation of its own: %+v", op)
		}
	}
	// The graph snapshot names the holder as the dependency's target.
	snap, err := e.s.GetGraphSnapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range snap.Nodes {
		if n.Key != "bd/2/if/a" {
			continue
		}
		found := false
		for _, d := range n.Dependencies {
			if d.Exclusive == "member/a" {
				found = true
				if d.Satisfied || len(d.Targets) != 1 || d.Targets[0] != "bd/1/if/a" {
					t.Errorf("snapshot dependency: %+v, want unsatisfied, held by bd/1/if/a", d)
				}
			}
		}
		if !found {
			t.Errorf("snapshot of bd/2/if/a lists no Exclusive dependency: %+v", n.Dependencies)
		}
	}

	e.mustCommit(ctx, del("bd/1"))
	e.expectOps("holder's domain deleted",
		"delete bd/1/if/a", "create bd/2/if/a=member a", "delete bd/1")
	e.expectState("bd/2/if/a", api.ValueStateConfigured)
	e.expectGone("bd/1/if/a")
}

// TestExclusiveMoveInOneTransaction: moving the resource from one value to
// another in one transaction works in both key orders: the holder's Delete
// always comes before the new holder's Create.
func TestExclusiveMoveInOneTransaction(t *testing.T) {
	for _, c := range []struct {
		name, from, to string
		ops            []string
	}{
		{"holder first", "bd/1", "bd/2", []string{
			"delete bd/1/if/a", "update bd/1=bd ifaces=", "create bd/2=bd ifaces=a", "create bd/2/if/a=member a"}},
		{"holder last", "bd/2", "bd/1", []string{
			"create bd/1=bd ifaces=a", "delete bd/2/if/a", "create bd/1/if/a=member a", "update bd/2=bd ifaces="}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newExclusiveEnv(t)
			ctx := context.Background()
			e.mustCommit(ctx, set("if/a", "a"), set(c.from, "bd ifaces=a"))
			e.sb.ClearOps()
			e.mustCommit(ctx, set(c.from, "bd ifaces="), set(c.to, "bd ifaces=a"))
			e.expectOps("move", c.ops...)
			e.expectState(c.to+"/if/a", api.ValueStateConfigured)
			e.expectGone(c.from + "/if/a")
		})
	}
}

// TestExclusiveHolderFoundByResync: after a restart, the value the SB has
// keeps the resource, whatever the key order; the other waits.
func TestExclusiveHolderFoundByResync(t *testing.T) {
	e := newExclusiveEnv(t)
	for key, value := range map[string]string{"if/a": "a", "bd/1": "bd ifaces=a", "bd/2": "bd ifaces=a", "bd/2/if/a": "member a"} {
		e.sb.Put(key, mocksb.Str(value), nil, api.FromNB)
	}
	if _, err := e.resync(set("if/a", "a"), set("bd/1", "bd ifaces=a"), set("bd/2", "bd ifaces=a")); err != nil {
		t.Fatal(err)
	}
	e.expectOps("resync")
	e.expectState("bd/2/if/a", api.ValueStateConfigured)
	e.expectState("bd/1/if/a", api.ValueStatePending, "interface a in no other domain (held by bd/2/if/a)")
}

// TestExclusiveHolderFailed: a competitor whose Create failed holds
// nothing: the next one is created; the failed one, tried again, waits.
func TestExclusiveHolderFailed(t *testing.T) {
	e := newExclusiveEnv(t)
	ctx := context.Background()
	e.sb.Fail("create", "bd/1/if/a", errors.New("refused"), 1)
	if _, err := e.commit(ctx, set("if/a", "a"), set("bd/1", "bd ifaces=a"), set("bd/2", "bd ifaces=a")); err == nil {
		t.Fatal("no error for the failed Create")
	}
	e.expectState("bd/1/if/a", api.ValueStateFailed)
	e.expectState("bd/2/if/a", api.ValueStateConfigured)
	e.sb.ClearOps()
	if _, err := e.commit(withOpts(ctx, api.TxnOptions{Resync: api.DownstreamResync})); err != nil {
		t.Fatal(err)
	}
	e.expectOps("downstream resync")
	e.expectState("bd/1/if/a", api.ValueStatePending, "interface a in no other domain (held by bd/2/if/a)")
}

// TestExclusiveHolderLosesItsDependency: a holder deleted because its own
// dependency went lets a waiting competitor whose dependencies are met be
// created.
func TestExclusiveHolderLosesItsDependency(t *testing.T) {
	e := newEnv(t)
	e.register(
		mocksb.Options{Name: "dep", Prefix: "dep/", NB: true},
		mocksb.Options{Name: "c", Prefix: "c/", NB: true, Deps: func(key string, v proto.Message) []api.Dependency {
			deps := mocksb.DependsOn(key, v)
			return append(deps, api.Dependency{Label: "resource r", Exclusive: "r"})
		}},
	)
	ctx := context.Background()
	e.mustCommit(ctx, set("dep/x", "x"), set("c/a", "a dep=dep/x"), set("c/b", "b"))
	e.expectState("c/a", api.ValueStateConfigured)
	e.expectState("c/b", api.ValueStatePending, "resource r (held by c/a)")
	e.sb.ClearOps()
	e.mustCommit(ctx, del("dep/x"))
	e.expectOps("holder's dependency deleted", "delete c/a", "create c/b=b", "delete dep/x")
	e.expectState("c/a", api.ValueStatePending, "dep/x", "resource r (held by c/b)")
	e.expectState("c/b", api.ValueStateConfigured)
}

// TestPropExclusive: random transactions over two interfaces and three
// domains wanting random sets of them, with random refused Creates: after
// every transaction no interface is in two domains in the SB, a binding is
// CONFIGURED exactly when the SB has it, and a binding whose interface
// exists is CONFIGURED, FAILED (refused) or PENDING naming a holder the SB
// has. A downstream resync without failures leaves every wanted interface
// that exists in exactly one domain.
func TestPropExclusive(t *testing.T) {
	t.Parallel()
	ifaces := []string{"a", "b"}
	domains := []string{"bd/1", "bd/2", "bd/3"}
	rapid.Check(t, func(rt *rapid.T) {
		e := openEnv(t)
		defer e.s.Close()
		registerExclusive(e)
		want := map[string][]string{} // domain -> interfaces (NB)
		have := map[string]bool{}     // interface -> exists (NB)
		check := func(step string) {
			sb := e.sb.Snapshot()
			for _, x := range ifaces {
				var in []string
				for _, d := range domains {
					if _, ok := sb[d+"/if/"+x]; ok {
						in = append(in, d)
					}
				}
				if len(in) > 1 {
					rt.Fatalf("%s: interface %s in domains %v of the SB", step, x, in)
				}
			}
			for _, d := range domains {
				for _, x := range ifaces {
					key := d + "/if/" + x
					st := e.s.GetValueStatus(key).GetValue()
					if key != st.GetKey() { // the base's status: find the derived one
						st = nil
						for _, dv := range e.s.GetValueStatus(key).GetDerivedValues() {
							if dv.GetKey() == key {
								st = dv
							}
						}
					}
					_, inSB := sb[key]
					state := st.GetState()
					if inSB != (state == api.ValueStateConfigured) {
						rt.Fatalf("%s: %s is %v, in the SB: %v", step, key, state, inSB)
					}
					if !slices.Contains(want[d], x) || !have[x] {
						continue
					}
					switch state {
					case api.ValueStateConfigured, api.ValueStateFailed:
					case api.ValueStatePending:
						details := strings.Join(st.GetDetails(), " ")
						i := strings.Index(details, "(held by ")
						if i < 0 {
							rt.Fatalf("%s: %s PENDING without a holder: %q", step, key, details)
						}
						holder := strings.TrimSuffix(details[i+len("(held by "):], ")")
						if _, ok := sb[holder]; !ok {
							rt.Fatalf("%s: %s waits for %s, which the SB does not have", step, key, holder)
						}
					default:
						rt.Fatalf("%s: %s wanted with its interface: %v", step, key, state)
					}
				}
			}
		}
		for i := range rapid.IntRange(1, 8).Draw(rt, "transactions") {
			txn := e.s.StartNBTransaction()
			for _, x := range ifaces {
				switch rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("txn%d if/%s", i, x)) {
				case 1:
					txn.SetValue("if/"+x, mocksb.Str(x))
					have[x] = true
				case 2:
					txn.SetValue("if/"+x, nil)
					have[x] = false
				}
			}
			for _, d := range domains {
				switch rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("txn%d %s", i, d)) {
				case 1:
					set := rapid.SliceOfDistinct(rapid.SampledFrom(ifaces), func(s string) string { return s }).Draw(rt, fmt.Sprintf("txn%d %s ifaces", i, d))
					slices.Sort(set)
					txn.SetValue(d, mocksb.Str("bd ifaces="+strings.Join(set, ",")))
					want[d] = set
				case 2:
					txn.SetValue(d, nil)
					delete(want, d)
				}
				for _, x := range ifaces {
					if rapid.IntRange(0, 5).Draw(rt, fmt.Sprintf("txn%d %s/if/%s refused", i, d, x)) == 0 {
						e.sb.Fail("create", d+"/if/"+x, errors.New("refused"), 1)
					}
				}
			}
			_, _ = txn.Commit(context.Background(), api.TxnOptions{})
			check(fmt.Sprintf("after transaction %d", i))
			e.sb.ClearFailures()
		}
		if _, err := e.s.StartNBTransaction().Commit(context.Background(), api.TxnOptions{Resync: api.DownstreamResync}); err != nil {
			rt.Fatalf("downstream resync: %v", err)
		}
		check("after a downstream resync")
		sb := e.sb.Snapshot()
		for _, x := range ifaces {
			wanted := false
			for _, d := range domains {
				wanted = wanted || slices.Contains(want[d], x)
			}
			n := 0
			for _, d := range domains {
				if _, ok := sb[d+"/if/"+x]; ok {
					n++
				}
			}
			if wanted && have[x] && n != 1 {
				rt.Fatalf("after a downstream resync: interface %s wanted and present is in %d domains of the SB", x, n)
			}
		}
	})
}

// Unique names (KVDescriptor.Unique): descriptor "u" values "name=<n>"
// use the name <n>.
func newUniqueEnv(t *testing.T) *env {
	e := newEnv(t)
	d := e.sb.Descriptor(mocksb.Options{Name: "u", Prefix: "u/", NB: true})
	d.Unique = func(_ string, v proto.Message) []api.UniqueName {
		_, name, ok := strings.Cut(mocksb.Text(v), "name=")
		if !ok {
			return nil
		}
		return []api.UniqueName{{Field: "host_if_name", Name: "link " + name}}
	}
	if err := e.s.RegisterKVDescriptor(d); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestUniqueSecondIsInvalid: a value using a name another value uses is
// INVALID naming the field, the name and that value, and nothing is called
// for it; when the first drops the name (deleted, renamed, invalid), the
// second is validated again and created in the same transaction.
func TestUniqueSecondIsInvalid(t *testing.T) {
	e := newUniqueEnv(t)
	ctx := context.Background()
	if _, err := e.commit(ctx, set("u/b", "name=veth1"), set("u/a", "name=veth1")); err == nil {
		t.Error("commit of two values with one name: no error")
	}
	e.expectOps("both", "create u/a=name=veth1")
	st := e.expectState("u/b", api.ValueStateInvalid, "host_if_name")
	if want := "host_if_name: link veth1 is already used by u/a"; !strings.Contains(st.GetError(), want) {
		t.Errorf("error of u/b: %q, want it to say %q", st.GetError(), want)
	}
	// A third, later: refused too, even though it sorts first.
	if _, err := e.commit(ctx, set("u/0", "name=veth1")); err == nil {
		t.Error("a third value with the name: no error")
	}
	e.expectState("u/0", api.ValueStateInvalid, "host_if_name")
	e.expectOps("third")

	// The holder is renamed: the first waiting value in key order gets it;
	// the transaction reports the other, still refused (now naming u/0).
	if _, err := e.commit(ctx, set("u/a", "name=veth2")); err == nil || !strings.Contains(err.Error(), "u/b") {
		t.Errorf("holder renamed: error %v, want it to list u/b, still refused", err)
	}
	e.expectOps("holder renamed", "update u/a=name=veth2", "create u/0=name=veth1")
	e.expectState("u/0", api.ValueStateConfigured)
	e.expectState("u/b", api.ValueStateInvalid, "host_if_name")
	if st := e.status("u/b"); !strings.Contains(st.GetError(), "already used by u/0") {
		t.Errorf("u/b after the hand-over: %q, want it to name u/0", st.GetError())
	}
	// The holder is deleted: u/b gets it.
	e.mustCommit(ctx, del("u/0"))
	e.expectOps("holder deleted", "delete u/0", "create u/b=name=veth1")
	e.expectState("u/b", api.ValueStateConfigured)
	// A value without the name (renamed to a free one) is valid at once.
	e.mustCommit(ctx, set("u/c", "name=veth3"))
	e.expectState("u/c", api.ValueStateConfigured)
}

// TestUniqueMoveInOneTransaction: a name handed from one value to another
// in one transaction, whatever their key order.
func TestUniqueMoveInOneTransaction(t *testing.T) {
	for _, c := range []struct{ from, to string }{{"u/a", "u/b"}, {"u/b", "u/a"}} {
		e := newUniqueEnv(t)
		ctx := context.Background()
		e.mustCommit(ctx, set(c.from, "name=x"))
		e.sb.ClearOps()
		e.mustCommit(ctx, set(c.from, "name=y"), set(c.to, "name=x"))
		e.expectState(c.to, api.ValueStateConfigured)
		e.expectState(c.from, api.ValueStateConfigured)
	}
}

// TestUniqueHandOverInAResync: a full resync that drops the holder and
// lists the refused value applies it.
func TestUniqueHandOverInAResync(t *testing.T) {
	e := newUniqueEnv(t)
	ctx := context.Background()
	_, _ = e.commit(ctx, set("u/a", "name=x"), set("u/b", "name=x"))
	e.expectState("u/b", api.ValueStateInvalid, "host_if_name")
	e.sb.ClearOps()
	if _, err := e.resync(set("u/b", "name=x")); err != nil {
		t.Fatalf("resync: %v", err)
	}
	e.expectOps("resync", "delete u/a", "create u/b=name=x")
	e.expectState("u/b", api.ValueStateConfigured)
}

// TestUniqueWithSharedDependencies: a descriptor's Dependencies may return
// one slice for many values (api.KVDescriptor.Dependencies), with room to
// spare: the unique names of each value go to a copy, so the shared slice
// is never written, and each value holds its own name only (a second value
// with a name is INVALID only if another holds that very name).
func TestUniqueWithSharedDependencies(t *testing.T) {
	e := newEnv(t)
	shared := make([]api.Dependency, 1, 8)
	shared[0] = api.Dependency{Label: "base", Key: "base/x"}
	d := e.sb.Descriptor(mocksb.Options{Name: "u", Prefix: "u/", NB: true})
	d.Dependencies = func(string, proto.Message) []api.Dependency { return shared }
	d.Unique = func(_ string, v proto.Message) []api.UniqueName {
		_, name, _ := strings.Cut(mocksb.Text(v), "name=")
		return []api.UniqueName{{Field: "host_if_name", Name: "link " + name}}
	}
	if err := e.s.RegisterKVDescriptor(d); err != nil {
		t.Fatal(err)
	}
	if err := e.s.RegisterKVDescriptor(e.sb.Descriptor(mocksb.Options{Name: "base", Prefix: "base/", NB: true})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e.mustCommit(ctx, set("base/x", "x"), set("u/a", "name=a"), set("u/b", "name=b"), set("u/c", "name=c"))
	for _, k := range []string{"u/a", "u/b", "u/c"} {
		e.expectState(k, api.ValueStateConfigured)
	}
	if spare := shared[1:cap(shared)]; slices.ContainsFunc(spare, func(d api.Dependency) bool { return d.Label != "" || d.Key != "" || d.Exclusive != "" }) {
		t.Fatalf("the shared slice was written beyond its length: %v", spare)
	}
	if len(shared) != 1 || shared[0].Key != "base/x" {
		t.Fatalf("the shared slice changed: %v", shared)
	}
	// Names are each value's own: a new value with b's name is refused,
	// one with a free name is not.
	if _, err := e.commit(ctx, set("u/d", "name=b"), set("u/e", "name=e")); err == nil {
		t.Error("u/d with u/b's name: no error")
	}
	if st := e.expectState("u/d", api.ValueStateInvalid, "host_if_name"); !strings.Contains(st.GetError(), "already used by u/b") {
		t.Errorf("u/d: %q, want it to name u/b", st.GetError())
	}
	e.expectState("u/e", api.ValueStateConfigured)
	// Every value waits for base/x: deleting it takes them down.
	e.mustCommit(ctx, del("base/x"))
	for _, k := range []string{"u/a", "u/b", "u/c", "u/e"} {
		e.expectState(k, api.ValueStatePending, "base")
	}
}

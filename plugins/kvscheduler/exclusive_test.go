package kvscheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

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
	return e
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

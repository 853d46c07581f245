package kvscheduler_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// noted is a change of a transaction with a note (api.NotedTxn).
type noted struct {
	key   string
	value proto.Message
	note  string
}

// commitNoted runs one NB transaction of values with notes (an empty note:
// SetValue) with the options of ctx.
func (e *env) commitNoted(ctx context.Context, changes ...noted) uint64 {
	e.t.Helper()
	txn, ok := e.s.StartNBTransaction().(api.NotedTxn)
	if !ok {
		e.t.Fatal("the scheduler's transaction is not an api.NotedTxn")
	}
	for _, c := range changes {
		if c.note == "" {
			txn.SetValue(c.key, c.value)
		} else {
			txn.SetValueWithNote(c.key, c.value, c.note)
		}
	}
	seq, err := txn.Commit(ctx, optsOf(ctx))
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	return seq
}

// expectDetails checks the details of a value's status, from
// GetValueStatus and from ListValueStatuses.
func (e *env) expectDetails(key string, want ...string) {
	e.t.Helper()
	if got := e.status(key).GetDetails(); !slices.Equal(got, want) {
		e.t.Errorf("%s: details %q, want %q", key, got, want)
	}
	for _, bs := range e.s.ListValueStatuses(key) {
		if bs.GetValue().GetKey() == key {
			if got := bs.GetValue().GetDetails(); !slices.Equal(got, want) {
				e.t.Errorf("%s: listed details %q, want %q", key, got, want)
			}
		}
	}
}

func TestNoteShowsInStatusWhileTheValueIsThere(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces(), routes())
	ctx := context.Background()
	const note = `etcd key "/vnf-agent/vpp1/route/r1-old" names this value`

	e.commitNoted(ctx, noted{"route/r1", mocksb.Str("via a dep=iface/a"), note})
	e.expectState("route/r1", api.ValueStatePending, "iface/a", note)
	e.expectDetails("route/r1", "iface/a", note)

	e.commitNoted(ctx, noted{"iface/a", mocksb.Str("a"), ""})
	e.expectState("route/r1", api.ValueStateConfigured)
	e.expectDetails("route/r1", note)
	e.expectDetails("iface/a")
	e.expectOps("created", "create iface/a=a", "create route/r1=via a dep=iface/a")

	// The same value with another note: nothing is executed, the note
	// changes.
	e.commitNoted(ctx, noted{"route/r1", mocksb.Str("via a dep=iface/a"), "another note"})
	e.expectOps("note changed")
	e.expectDetails("route/r1", "another note")

	// A dry run does not change the note.
	e.commitNoted(withOpts(ctx, api.TxnOptions{DryRun: true}), noted{"route/r1", mocksb.Str("via a dep=iface/a"), "dry"})
	e.expectDetails("route/r1", "another note")

	// SetValue without a note clears it.
	e.commitNoted(ctx, noted{"route/r1", mocksb.Str("via a dep=iface/a"), ""})
	e.expectOps("note cleared")
	e.expectDetails("route/r1")

	// A delete takes the note with the value: created again without one,
	// the value has none.
	e.commitNoted(ctx, noted{"route/r1", mocksb.Str("via a dep=iface/a"), note})
	e.expectDetails("route/r1", note)
	e.commitNoted(ctx, noted{"route/r1", nil, ""})
	e.expectGone("route/r1")
	e.commitNoted(ctx, noted{"route/r1", mocksb.Str("via a dep=iface/a"), ""})
	e.expectDetails("route/r1")

	// A later SetValue of the key in the same transaction replaces the
	// note; a note with a nil value is a delete.
	txn := e.s.StartNBTransaction().(api.NotedTxn)
	txn.SetValueWithNote("route/r1", mocksb.Str("via a dep=iface/a"), note)
	txn.SetValue("route/r1", mocksb.Str("via a dep=iface/a"))
	txn.SetValueWithNote("route/r2", nil, note)
	if _, err := txn.Commit(ctx, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expectDetails("route/r1")
	e.expectGone("route/r2")
}

func TestNoteOnlyOnTheBaseValue(t *testing.T) {
	e := newEnv(t)
	o := ifaces()
	o.Derived = func(key string, _ proto.Message) []api.KeyValuePair {
		return []api.KeyValuePair{{Key: "up/" + key, Value: mocksb.Str("up")}}
	}
	e.register(o)
	e.commitNoted(context.Background(), noted{"iface/a", mocksb.Str("a"), "n"})
	bs := e.s.GetValueStatus("iface/a")
	if got := bs.GetValue().GetDetails(); !slices.Equal(got, []string{"n"}) {
		t.Fatalf("base details %q", got)
	}
	if len(bs.GetDerivedValues()) != 1 || len(bs.GetDerivedValues()[0].GetDetails()) != 0 {
		t.Fatalf("derived statuses %v", bs.GetDerivedValues())
	}
}

func TestFullResyncKeepsOnlyItsNotes(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces())
	ctx := context.Background()
	e.commitNoted(ctx, noted{"iface/a", mocksb.Str("a"), "note a"}, noted{"iface/b", mocksb.Str("b"), "note b"},
		noted{"iface/c", mocksb.Str("c"), "note c"})
	e.expectOps("created", "create iface/a=a", "create iface/b=b", "create iface/c=c")

	resync := withOpts(ctx, api.TxnOptions{Resync: api.FullResync})
	e.commitNoted(resync, noted{"iface/a", mocksb.Str("a"), "note a"}, noted{"iface/b", mocksb.Str("b"), ""},
		noted{"iface/d", mocksb.Str("d"), "note d"})
	e.expectDetails("iface/a", "note a")
	e.expectDetails("iface/b")
	e.expectGone("iface/c")
	e.expectDetails("iface/d", "note d")

	// iface/c comes back without its old note.
	e.commitNoted(ctx, noted{"iface/c", mocksb.Str("c"), ""})
	e.expectDetails("iface/c")
}

func TestNoteChangeIsWatched(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces())
	ctx := context.Background()
	e.commitNoted(ctx, noted{"iface/a", mocksb.Str("a"), ""})

	w := make(chan *api.BaseValueStatus, 10)
	stop := e.s.WatchValueStatus(w, func(key string) bool { return key == "iface/a" })
	defer stop()
	next := func(what string) []string {
		t.Helper()
		select {
		case bs := <-w:
			return bs.GetValue().GetDetails()
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no status update", what)
			return nil
		}
	}
	e.commitNoted(ctx, noted{"iface/a", mocksb.Str("a"), "read under iface/old-a"})
	if got := next("note set"); !slices.Equal(got, []string{"read under iface/old-a"}) {
		t.Fatalf("watched details %q", got)
	}
	e.commitNoted(ctx, noted{"iface/a", mocksb.Str("a"), ""})
	if got := next("note cleared"); len(got) != 0 {
		t.Fatalf("watched details %q, want none", got)
	}
	// The status returned is a copy: the note does not leak into the
	// node's own details.
	e.commitNoted(ctx, noted{"iface/a", mocksb.Str("a"), "x"})
	next("note x")
	st := e.status("iface/a")
	st.Details[0] = strings.ToUpper(st.Details[0])
	e.expectDetails("iface/a", "x")
}

// A descriptor's notes (api.KVDescriptor.Notes) end the details of a valid
// intended value, before the NB's note, and follow the value.
func TestDescriptorNotes(t *testing.T) {
	e := newEnv(t)
	d := e.sb.Descriptor(mocksb.Options{Name: "global", Prefix: "global", NB: true, Validate: func(_ string, v proto.Message) error {
		if strings.Contains(mocksb.Text(v), "bad") {
			return api.NewInvalidValueError(errors.New("bad"), "text")
		}
		return nil
	}})
	d.Notes = func(_ string, v proto.Message) []string {
		if strings.Contains(mocksb.Text(v), "ignored") {
			return []string{"field ignored: nothing in the SB"}
		}
		return nil
	}
	if err := e.s.RegisterKVDescriptor(d); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e.commitNoted(ctx, noted{"global", mocksb.Str("a"), ""})
	e.expectDetails("global")
	e.commitNoted(ctx, noted{"global", mocksb.Str("a ignored"), "nb note"})
	e.expectState("global", api.ValueStateConfigured)
	e.expectDetails("global", "field ignored: nothing in the SB", "nb note")
	// Not for an invalid value: its error says what matters (its details
	// name the invalid fields).
	if _, err := e.s.StartNBTransaction().SetValue("global", mocksb.Str("bad ignored")).Commit(ctx, api.TxnOptions{}); err == nil {
		t.Fatal("no error for an invalid value")
	}
	e.expectDetails("global", "text")
	e.commitNoted(ctx, noted{"global", mocksb.Str("b"), ""})
	e.expectDetails("global")
}

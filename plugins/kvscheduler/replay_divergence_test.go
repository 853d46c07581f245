package kvscheduler_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// A descriptor whose comparator answers differently once its own Update ran
// (a mark the Update clears, as an adopted link's alias once was) makes
// the re-run of a transaction with a failure diverge from the calls made:
// the re-run finds no change to make for that value. The calls made are
// still the transaction's: none is made twice (the failed Create is
// replayed, not called again), the record lists the Update, and the value
// ends as the Update left it.
func TestReplayOfACallTheReRunDoesNotMake(t *testing.T) {
	for _, batch := range []bool{false, true} {
		e := newEnv(t)
		marked := map[string]bool{"iface/a": true}
		io := ifaces()
		io.Batch = batch
		io.Comparator = func(key string, a, b proto.Message) bool {
			return !marked[key] && proto.Equal(a, b)
		}
		ro := routes()
		ro.Batch = batch
		iface := e.sb.Descriptor(io)
		update := iface.Update
		iface.Update = func(ctx context.Context, key string, from, to proto.Message, md any) (any, error) {
			delete(marked, key)
			return update(ctx, key, from, to, md)
		}
		if batch {
			b := iface.Batch
			iface.Batch = func(ctx context.Context, ops []api.BatchOp) {
				for _, op := range ops {
					delete(marked, op.Key)
				}
				b(ctx, ops)
			}
		}
		for _, d := range []*api.KVDescriptor{iface, e.sb.Descriptor(ro)} {
			if err := e.s.RegisterKVDescriptor(d); err != nil {
				t.Fatal(err)
			}
		}
		e.sb.Put("iface/a", mocksb.Str("a"), &mocksb.Meta{Index: 1}, api.FromNB)
		e.sb.Fail("create", "route/r", errors.New("refused"), 1)
		e.sb.ClearOps()
		seq, _ := e.resync(set("iface/a", "a"), set("route/r", "dep=iface/a"))
		rec := e.s.GetRecordedTransaction(seq)
		var executed []string
		for _, o := range rec.Executed {
			executed = append(executed, o.Operation.String()+" "+o.Key)
		}
		slices.Sort(executed)
		if want := []string{"CREATE route/r", "UPDATE iface/a"}; !slices.Equal(executed, want) {
			t.Errorf("batch %v: executed %q, want %q", batch, executed, want)
		}
		creates := 0
		for _, op := range e.sb.OpStrings(false) {
			if op == "create route/r=dep=iface/a" {
				creates++
			}
		}
		if creates != 1 {
			t.Errorf("batch %v: route/r created %d times, want once (SB calls %q)", batch, creates, e.sb.OpStrings(false))
		}
		e.expectState("iface/a", api.ValueStateConfigured)
	}
}

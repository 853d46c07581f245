package kvscheduler

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// The history's byte estimate of a record is what trimming it gives back,
// measured on the heap, within 30%: the records are dropped oldest first, as
// the limits trim them, and each big one is checked, and so is the total
// (HistoryInfo.Bytes). The scenarios: values created and then deleted (the
// record of the delete alone keeps the deleted values, the record of the
// create only its own structs), updated in place and re-created (each
// record keeps the values it replaced), and a resync of values already
// applied (the record alone keeps the NB's copies). The values are the
// agent's own Linux interfaces (with a namespace, a veth peer and two
// addresses, each address a derived value) and routes.
func TestHistoryBytesMatchTheHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap: skipped with -short")
	}
	const n = 4000
	scenarios := []struct {
		name string
		run  func(t *testing.T, s *Scheduler)
	}{
		{"created and deleted", func(t *testing.T, s *Scheduler) {
			sizeCommit(t, s, n, 0, false)
			sizeCommit(t, s, n, -1, false)
		}},
		{"updated and re-created three times", func(t *testing.T, s *Scheduler) {
			for round := range 4 {
				sizeCommit(t, s, n, round, false)
			}
		}},
		{"resync in sync", func(t *testing.T, s *Scheduler) {
			sizeCommit(t, s, n, 0, false)
			sizeCommit(t, s, n, 0, true)
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			s := New(Options{Logger: slog.New(slog.DiscardHandler), HistorySize: 100, HistoryMaxBytes: 1 << 40, HistoryMaxAge: -1})
			defer s.Close()
			sb := &sizeSB{applied: map[string]proto.Message{}}
			if err := s.RegisterKVDescriptor(sb.descriptors()...); err != nil {
				t.Fatal(err)
			}
			sc.run(t, s)
			// One more small transaction: the worker lets go of the last
			// big one's undo logs when the next one starts.
			if _, err := s.StartNBTransaction().SetValue("other/x", wrapperspb.String("x")).Commit(context.Background(), api.TxnOptions{}); err != nil {
				t.Fatal(err)
			}
			h := s.history
			total := h.info().Bytes
			var gaveBack float64
			for h.first < len(h.records) {
				seq, values, ops := h.records[h.first].SeqNum, len(h.records[h.first].Values), len(h.records[h.first].Planned)
				estimate := h.sizes[h.first]
				before := testsupport.LiveHeap()
				h.mu.Lock()
				h.records[h.first] = nil
				h.first++
				h.mu.Unlock()
				after := testsupport.LiveHeap()
				freed := float64(before) - float64(after)
				gaveBack += freed
				t.Logf("record #%d (%d values, %d operations): estimated %.2f MB, trimming it gave back %.2f MB",
					seq, values, ops, float64(estimate)/1e6, freed/1e6)
				if freed < 256<<10 && estimate < 256<<10 {
					continue // small: the heap's noise
				}
				if ratio := float64(estimate) / freed; ratio < 0.7 || ratio > 1.3 {
					t.Errorf("record #%d: estimated %d bytes, trimming it gave back %.0f: off by more than 30%%", seq, estimate, freed)
				}
			}
			t.Logf("all records: estimated %.2f MB, %.2f MB given back (estimate/heap %.2f)", float64(total)/1e6, gaveBack/1e6, float64(total)/gaveBack)
			if ratio := float64(total) / gaveBack; ratio < 0.7 || ratio > 1.3 {
				t.Errorf("history estimated at %d bytes, dropping it gave back %.0f: off by more than 30%%", total, gaveBack)
			}
		})
	}
}

// sizeCommit commits n interfaces and n routes in round (the MTU and the
// metric follow it: interfaces are updated, routes re-created); round -1
// deletes them; resync commits them as a full resync.
func sizeCommit(t *testing.T, s *Scheduler, n, round int, resync bool) {
	t.Helper()
	txn := s.StartNBTransaction()
	for i := range n {
		name := fmt.Sprintf("veth-%d", i)
		route := fmt.Sprintf("linux/route/10.%d.%d.0/24", i/256, i%256)
		if round < 0 {
			txn.SetValue("linux/iface/"+name, nil)
			txn.SetValue(route, nil)
			continue
		}
		txn.SetValue("linux/iface/"+name, &linuxif.Interface{
			Name: name, Type: linuxif.Interface_VETH, Enabled: true, Mtu: uint32(1500 + round),
			HostIfName:  name,
			IpAddresses: []string{fmt.Sprintf("172.%d.%d.1/24", 16+i/256, i%256), fmt.Sprintf("fd00::%x/64", i)},
			Namespace:   &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: "app"},
			Link:        &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "peer-" + name}},
		})
		txn.SetValue(route, &linuxl3.Route{OutgoingInterface: name, DstNetwork: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256),
			GwAddr: fmt.Sprintf("172.%d.%d.254", 16+i/256, i%256), Metric: uint32(round)})
	}
	opts := api.TxnOptions{}
	if resync {
		opts.Resync = api.FullResync
	}
	if _, err := txn.Commit(context.Background(), opts); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// sizeSB is a southbound that keeps what is applied, for Retrieve.
type sizeSB struct {
	mu      sync.Mutex
	applied map[string]proto.Message
}

func (sb *sizeSB) set(key string, v proto.Message) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if v == nil {
		delete(sb.applied, key)
	} else {
		sb.applied[key] = v
	}
}

// retrieve returns fresh copies of the applied values under prefix, as a
// real SB read would.
func (sb *sizeSB) retrieve(prefix string, origin api.ValueOrigin) []api.KVWithMetadata {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	var out []api.KVWithMetadata
	for k, v := range sb.applied {
		if strings.HasPrefix(k, prefix) && !strings.Contains(k[len(prefix):], "/address/") {
			out = append(out, api.KVWithMetadata{Key: k, Value: proto.Clone(v), Origin: origin})
		}
	}
	return out
}

func (sb *sizeSB) descriptors() []*api.KVDescriptor {
	iface := &api.TypedDescriptor[*linuxif.Interface, any]{
		Name:        "iface",
		NBKeyPrefix: "linux/iface/",
		KeySelector: func(key string) bool {
			return strings.HasPrefix(key, "linux/iface/") && !strings.Contains(key, "/address/")
		},
		Create: func(_ context.Context, key string, v *linuxif.Interface) (any, error) {
			sb.set(key, v)
			return nil, nil
		},
		Update: func(_ context.Context, key string, _, v *linuxif.Interface, _ any) (any, error) {
			sb.set(key, v)
			return nil, nil
		},
		Delete: func(_ context.Context, key string, _ *linuxif.Interface, _ any) error { sb.set(key, nil); return nil },
		Retrieve: func(context.Context, []api.TypedKV[*linuxif.Interface, any]) ([]api.TypedKV[*linuxif.Interface, any], error) {
			var out []api.TypedKV[*linuxif.Interface, any]
			for _, kv := range sb.retrieve("linux/iface/", api.FromNB) {
				out = append(out, api.TypedKV[*linuxif.Interface, any]{Key: kv.Key, Value: kv.Value.(*linuxif.Interface), Origin: kv.Origin})
			}
			return out, nil
		},
		DerivedValues: func(key string, v *linuxif.Interface) []api.KeyValuePair {
			var out []api.KeyValuePair
			for _, a := range v.GetIpAddresses() {
				out = append(out, api.KeyValuePair{Key: key + "/address/" + a, Value: wrapperspb.String(a)})
			}
			return out
		},
	}
	address := &api.KVDescriptor{
		Name:        "address",
		KeySelector: func(key string) bool { return strings.Contains(key, "/address/") },
		Create:      func(context.Context, string, proto.Message) (any, error) { return nil, nil },
		Delete:      func(context.Context, string, proto.Message, any) error { return nil },
	}
	route := &api.TypedDescriptor[*linuxl3.Route, any]{
		Name:        "route",
		NBKeyPrefix: "linux/route/",
		KeySelector: func(key string) bool { return strings.HasPrefix(key, "linux/route/") },
		Create:      func(_ context.Context, key string, v *linuxl3.Route) (any, error) { sb.set(key, v); return nil, nil },
		Delete:      func(_ context.Context, key string, _ *linuxl3.Route, _ any) error { sb.set(key, nil); return nil },
		Retrieve: func(context.Context, []api.TypedKV[*linuxl3.Route, any]) ([]api.TypedKV[*linuxl3.Route, any], error) {
			var out []api.TypedKV[*linuxl3.Route, any]
			for _, kv := range sb.retrieve("linux/route/", api.FromNB) {
				out = append(out, api.TypedKV[*linuxl3.Route, any]{Key: kv.Key, Value: kv.Value.(*linuxl3.Route), Origin: kv.Origin})
			}
			return out, nil
		},
		Dependencies: func(_ string, v *linuxl3.Route) []api.Dependency {
			return []api.Dependency{{Label: "interface", Key: "linux/iface/" + v.GetOutgoingInterface()}}
		},
		RetrieveDependencies: []string{"iface"},
	}
	return []*api.KVDescriptor{iface.KVDescriptor(), address, route.KVDescriptor()}
}

// BenchmarkRecordSize: the estimate of one record (per record) of a
// single-route update, as in W2 (a re-creation: the delete keeps the old
// route), and of a transaction deleting 10k interfaces with their routes
// and addresses (30k operations, of which recordSample are looked at).
func BenchmarkRecordSize(b *testing.B) {
	route := func(i int) *linuxl3.Route {
		return &linuxl3.Route{OutgoingInterface: "veth-1", DstNetwork: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), GwAddr: "172.16.0.254", Metric: uint32(i)}
	}
	update := &api.RecordedTxn{Values: []api.RecordedKVPair{{Key: "linux/route/10.0.1.0/24", Value: route(1)}}}
	update.Planned = []*api.RecordedTxnOp{
		{Operation: api.OpDelete, Key: update.Values[0].Key, PrevValue: route(0), IsRecreate: true},
		{Operation: api.OpCreate, Key: update.Values[0].Key, NewValue: update.Values[0].Value, IsRecreate: true},
	}
	update.Executed = update.Planned
	deleteAll := &api.RecordedTxn{}
	for i := range 10_000 {
		name := fmt.Sprintf("veth-%d", i)
		iface := &linuxif.Interface{Name: name, Type: linuxif.Interface_VETH, Enabled: true,
			IpAddresses: []string{fmt.Sprintf("172.%d.%d.1/24", 16+i/256, i%256)},
			Link:        &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "peer-" + name}}}
		r := route(i)
		deleteAll.Values = append(deleteAll.Values, api.RecordedKVPair{Key: "linux/iface/" + name}, api.RecordedKVPair{Key: "linux/route/" + r.DstNetwork})
		deleteAll.Planned = append(deleteAll.Planned,
			&api.RecordedTxnOp{Operation: api.OpDelete, Key: "linux/route/" + r.DstNetwork, PrevValue: r},
			&api.RecordedTxnOp{Operation: api.OpDelete, Key: "linux/iface/" + name + "/address/x", PrevValue: wrapperspb.String("x"), Derived: true},
			&api.RecordedTxnOp{Operation: api.OpDelete, Key: "linux/iface/" + name, PrevValue: iface})
	}
	deleteAll.Executed = deleteAll.Planned
	for _, bc := range []struct {
		name string
		rec  *api.RecordedTxn
	}{{"update one route", update}, {"delete 10k interfaces and routes", deleteAll}} {
		b.Run(bc.name, func(b *testing.B) {
			var z sizer
			z.recordSize(bc.rec) // the sizes of the types, as after the first records
			b.ResetTimer()
			for range b.N {
				z.recordSize(bc.rec)
			}
		})
	}
}

// A slab of operations fills its size class, and the estimate of a slab is
// what the allocator takes for it: the heap of 2000 slabs, per slab.
func TestOpSlabFillsItsSizeClass(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap: skipped with -short")
	}
	const count = 2000
	slabs := make([][]api.RecordedTxnOp, count)
	before := testsupport.LiveHeap()
	for i := range slabs {
		slabs[i] = make([]api.RecordedTxnOp, opSlabOps)
	}
	after := testsupport.LiveHeap()
	runtime.KeepAlive(slabs)
	perSlab := float64(after-before) / count
	estimate := allocPtrBytes(opSlabOps * recordOpBytes)
	t.Logf("a slab of %d operations of %d bytes: %.0f bytes on the heap, estimated %d", opSlabOps, recordOpBytes, perSlab, estimate)
	if d := perSlab - float64(estimate); d < -16 || d > 16 {
		t.Errorf("a slab takes %.0f bytes, estimated %d", perSlab, estimate)
	}
	if waste := float64(estimate)/float64(opSlabOps*recordOpBytes) - 1; waste > 0.02 {
		t.Errorf("a slab of %d operations wastes %.1f%% of its %d bytes", opSlabOps, 100*waste, estimate)
	}
}

package manager_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato/manager"
	ligatogeneric "github.com/netagent-io/netagent/proto/ligato/generic"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var discard = slog.New(slog.DiscardHandler)

// failName is the name of the VPP interface whose creation fails.
const failName = "failing"

// fakeSB is the southbound of the test descriptors, one per model: what
// they hold and the CRUD calls made.
type fakeSB struct {
	mu     sync.Mutex
	values map[string]proto.Message
	calls  []string
}

func (f *fakeSB) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeSB) Value(key string) proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.values[key]
}

func (f *fakeSB) descriptor(m *models.Model) *api.KVDescriptor {
	set := func(op, key string, v proto.Message) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, op+" "+key)
		f.values[key] = proto.Clone(v)
	}
	return &api.KVDescriptor{
		Name:          "test-" + m.Name,
		NBKeyPrefix:   m.KeyPrefix,
		KeySelector:   func(key string) bool { return strings.HasPrefix(key, m.KeyPrefix) },
		ValueTypeName: string(m.MessageName()),
		Create: func(_ context.Context, key string, v proto.Message) (any, error) {
			if i, ok := v.(*vppif.Interface); ok && i.GetName() == failName {
				return nil, errors.New("the test SB refuses this interface")
			}
			set("create", key, v)
			return nil, nil
		},
		Update: func(_ context.Context, key string, _, v proto.Message, _ any) (any, error) {
			set("update", key, v)
			return nil, nil
		},
		Delete: func(_ context.Context, key string, _ proto.Message, _ any) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.calls = append(f.calls, "delete "+key)
			delete(f.values, key)
			return nil
		},
		Retrieve: func(context.Context, []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			var out []api.KVWithMetadata
			for key, v := range f.values {
				if strings.HasPrefix(key, m.KeyPrefix) {
					out = append(out, api.KVWithMetadata{Key: key, Value: proto.Clone(v), Origin: api.FromNB})
				}
			}
			sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
			return out, nil
		},
	}
}

// env is a scheduler with a test descriptor per model, an orchestrator
// after its first full sync, and the ManagerService over loopback.
type env struct {
	sb     *fakeSB
	sched  *kvscheduler.Scheduler
	o      *orchestrator.Orchestrator
	client ligatogeneric.ManagerServiceClient
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{sb: &fakeSB{values: map[string]proto.Message{}}}
	e.sched = kvscheduler.New(kvscheduler.Options{Logger: discard})
	for _, m := range models.Default.Models() {
		if err := e.sched.RegisterKVDescriptor(e.sb.descriptor(m)); err != nil {
			t.Fatal(err)
		}
	}
	e.o = orchestrator.New(e.sched, discard)
	conf := grpcsource.New(e.o, e.sched, models.Default, discard)
	srv, err := manager.New(conf, e.o, e.sched, manager.Options{Log: discard})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	srv.Register(g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		g.Stop()
		<-served
		conf.Close()
		e.sched.Close()
	})
	e.client = ligatogeneric.NewManagerServiceClient(conn)
	if _, err := e.o.Resync(context.Background(), orchestrator.SourceGRPC, nil, api.TxnOptions{}); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	return e
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// anyOf packs v under a type URL naming the message full name given
// ("" : v's own), with the original's prefix.
func anyOf(t *testing.T, v proto.Message, name protoreflect.FullName) *anypb.Any {
	t.Helper()
	b, err := proto.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if name == "" {
		name = v.ProtoReflect().Descriptor().FullName()
	}
	return &anypb.Any{TypeUrl: manager.TypeURLPrefix + string(name), Value: b}
}

// set is an update item of v, with an id of model and name as a client
// computes it, the type URL naming the message name ("": v's own).
func set(t *testing.T, model string, v proto.Message, name protoreflect.FullName) *ligatogeneric.UpdateItem {
	t.Helper()
	return &ligatogeneric.UpdateItem{Item: &ligatogeneric.Item{
		Id:   &ligatogeneric.Item_ID{Model: model},
		Data: &ligatogeneric.Data{Union: &ligatogeneric.Data_Any{Any: anyOf(t, v, name)}},
	}}
}

// del is an update item deleting the item model/name.
func del(model, name string) *ligatogeneric.UpdateItem {
	return &ligatogeneric.UpdateItem{Item: &ligatogeneric.Item{Id: &ligatogeneric.Item_ID{Model: model, Name: name}}}
}

func loop(name string, ips ...string) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: ips}
}

func route(dst, gw, iface string) *vppl3.Route {
	return &vppl3.Route{DstNetwork: dst, NextHopAddr: gw, OutgoingInterface: iface}
}

func keyOf(t *testing.T, v proto.Message) string {
	t.Helper()
	key, err := models.Default.Key(v)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// resultsByKey returns the results of a response by key, checking the
// first is the sequence number's.
func resultsByKey(t *testing.T, resp *ligatogeneric.SetConfigResponse) map[string]*ligatogeneric.UpdateResult {
	t.Helper()
	rs := resp.GetResults()
	if len(rs) == 0 || rs[0].GetKey() != manager.SeqNumKey || rs[0].GetStatus().GetMessage() == "" {
		t.Fatalf("results do not start with the sequence number's: %v", rs)
	}
	out := map[string]*ligatogeneric.UpdateResult{}
	for _, r := range rs[1:] {
		out[r.GetKey()] = r
	}
	return out
}

// configItems returns the items of GetConfig by key (prefix + id.name of
// the model), decoded.
func configItems(t *testing.T, e *env) map[string]*ligatogeneric.ConfigItem {
	t.Helper()
	resp, err := e.client.GetConfig(ctxOf(t), &ligatogeneric.GetConfigRequest{})
	if err != nil {
		t.Fatalf("GetConfig: %v", err)
	}
	out := map[string]*ligatogeneric.ConfigItem{}
	for _, it := range resp.GetItems() {
		m := models.Default.ModelByName(it.GetItem().GetId().GetModel())
		if m == nil {
			t.Fatalf("GetConfig: item of unknown model: %v", it)
		}
		out[m.KeyPrefix+it.GetItem().GetId().GetName()] = it
	}
	return out
}

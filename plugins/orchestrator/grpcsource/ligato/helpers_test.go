package ligato_test

import (
	"context"
	"fmt"
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
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
	ligatolinux "github.com/netagent-io/netagent/proto/ligato/linux"
	ligatovpp "github.com/netagent-io/netagent/proto/ligato/vpp"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// TestMain checks that no goroutine is left behind: the notifier, a
// stream, a server or scheduler a test did not close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var discard = slog.New(slog.DiscardHandler)

// fakeSB is the southbound of the test descriptors: what they hold and the
// CRUD calls made.
type fakeSB struct {
	mu     sync.Mutex
	values map[string]proto.Message
	calls  []string
	// nextIndex is the sw_if_index of the next VPP interface created.
	nextIndex uint32
}

func (f *fakeSB) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

// Calls returns the CRUD calls made so far.
func (f *fakeSB) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Value returns what the SB holds for a key.
func (f *fakeSB) Value(key string) proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.values[key]
}

// descriptor is a test descriptor of one model: CRUD into the fake SB.
func (f *fakeSB) descriptor(name string, m *models.Model) *api.KVDescriptor {
	return &api.KVDescriptor{
		Name:          name,
		NBKeyPrefix:   m.KeyPrefix,
		KeySelector:   func(key string) bool { return strings.HasPrefix(key, m.KeyPrefix) },
		ValueTypeName: string(m.MessageName()),
		Create: func(_ context.Context, key string, v proto.Message) (any, error) {
			f.record("create " + key)
			f.mu.Lock()
			defer f.mu.Unlock()
			f.values[key] = proto.Clone(v)
			return nil, nil
		},
		Update: func(_ context.Context, key string, _, v proto.Message, _ any) (any, error) {
			f.record("update " + key)
			f.mu.Lock()
			defer f.mu.Unlock()
			f.values[key] = proto.Clone(v)
			return nil, nil
		},
		Delete: func(_ context.Context, key string, _ proto.Message, _ any) error {
			f.record("delete " + key)
			f.mu.Lock()
			defer f.mu.Unlock()
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

// descriptors returns the test descriptors: VPP interfaces (named as the
// VPP plugin's, with its metadata: index and internal name; deriving the
// admin-state values), VPP routes, Linux interfaces, Linux routes.
func (f *fakeSB) descriptors() []*api.KVDescriptor {
	vif := f.descriptor(ifplugin.InterfaceDescriptorName, models.VPPInterface)
	vif.WithMetadata = true
	vif.KeyLabel = func(key string) string { return strings.TrimPrefix(key, models.VPPInterface.KeyPrefix) }
	create := vif.Create
	vif.Create = func(ctx context.Context, key string, v proto.Message) (any, error) {
		if _, err := create(ctx, key, v); err != nil {
			return nil, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.nextIndex++
		i := v.(*vppif.Interface)
		return &ifplugin.Metadata{SwIfIndex: f.nextIndex, InternalName: fmt.Sprintf("loop%d", f.nextIndex-1), Value: i}, nil
	}
	vif.Update = nil // every change re-creates (new metadata)
	vif.DerivedValues = func(_ string, v proto.Message) []api.KeyValuePair {
		i := v.(*vppif.Interface)
		return []api.KeyValuePair{{Key: ifplugin.AdminStateKey(i.GetName(), i.GetEnabled()), Value: &emptypb.Empty{}}}
	}
	return []*api.KVDescriptor{vif, f.descriptor("test-vpp-route", models.VPPRoute),
		f.descriptor("test-linux-interface", models.LinuxInterface), f.descriptor("test-linux-route", models.LinuxRoute)}
}

// env is an agent with both configurators over loopback.
type env struct {
	sb     *fakeSB
	sched  *kvscheduler.Scheduler
	o      *orchestrator.Orchestrator
	conf   *grpcsource.Server
	srv    *ligato.Server // the first one served
	client ligatocfg.ConfiguratorServiceClient
}

// serve serves a new ligato.Server of e over loopback until the test ends,
// and returns a client of it.
func (e *env) serve(t *testing.T, opts ligato.Options) ligatocfg.ConfiguratorServiceClient {
	t.Helper()
	if opts.Log == nil {
		opts.Log = discard
	}
	srv := ligato.New(e.conf, e.o, e.sched, opts)
	if e.srv == nil {
		e.srv = srv
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
		srv.Close()
		g.Stop()
		<-served
	})
	return ligatocfg.NewConfiguratorServiceClient(conn)
}

// newEnv starts a scheduler with the test descriptors, an orchestrator
// after its first full sync, the services and a client of the original's
// service.
func newEnv(t *testing.T, opts ligato.Options) *env {
	t.Helper()
	e := &env{sb: &fakeSB{values: map[string]proto.Message{}}}
	e.sched = kvscheduler.New(kvscheduler.Options{Logger: discard})
	if err := e.sched.RegisterKVDescriptor(e.sb.descriptors()...); err != nil {
		t.Fatal(err)
	}
	e.o = orchestrator.New(e.sched, discard)
	e.conf = grpcsource.New(e.o, e.sched, models.Default, discard)
	t.Cleanup(func() {
		e.conf.Close()
		e.sched.Close()
	})
	e.client = e.serve(t, opts)
	if _, err := e.o.Resync(context.Background(), orchestrator.SourceGRPC, nil, api.TxnOptions{}); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	return e
}

// doc groups values into the original's container, in the order given.
func doc(vs ...proto.Message) *ligatocfg.Config {
	c := &ligatocfg.Config{VppConfig: &ligatovpp.ConfigData{}, LinuxConfig: &ligatolinux.ConfigData{}}
	for _, v := range vs {
		switch v := v.(type) {
		case *vppif.Interface:
			c.VppConfig.Interfaces = append(c.VppConfig.Interfaces, v)
		case *vppl3.Route:
			c.VppConfig.Routes = append(c.VppConfig.Routes, v)
		case *linuxif.Interface:
			c.LinuxConfig.Interfaces = append(c.LinuxConfig.Interfaces, v)
		default:
			panic("doc: unexpected value")
		}
	}
	return c
}

func loop(name string, ips ...string) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: ips}
}

func keyOf(t *testing.T, v proto.Message) string {
	t.Helper()
	key, err := models.Default.Key(v)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// withUnknown returns m with raw fields appended as unknown fields: what
// the original's client sends for the fields netagent's messages lack.
func withUnknown[M proto.Message](m M, raw []byte) M {
	r := m.ProtoReflect()
	r.SetUnknown(append(r.GetUnknown(), raw...))
	return m
}

// field is the wire form of a length-delimited field: a message of the
// original's (its contents need not be valid for the service to report it).
func field(num protowire.Number, contents []byte) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(b, contents)
}

// named is the wire form of a message whose field 1 is a name, as most of
// the original's models are.
func named(name string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendString(b, name)
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

package grpcsource_test

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

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource"
	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

var discard = slog.New(slog.DiscardHandler)

// fakeSB is the southbound of the test descriptors: what Create, Update and
// Delete did, and what Retrieve returns.
type fakeSB struct {
	mu      sync.Mutex
	values  map[string]proto.Message
	foreign map[string]bool // keys Retrieve reports as not the agent's
	calls   []string
	// failCreate makes Create of a key fail.
	failCreate map[string]error
	// lose makes Create of a key report success and keep nothing.
	lose map[string]bool
	// retrieveErr makes Retrieve fail.
	retrieveErr error
	// block, when set, holds every Create until it is closed.
	block chan struct{}
}

func newFakeSB() *fakeSB {
	return &fakeSB{values: map[string]proto.Message{}, foreign: map[string]bool{}, failCreate: map[string]error{}, lose: map[string]bool{}}
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

// Put adds a value to the SB behind the agent's back.
func (f *fakeSB) Put(key string, v proto.Message, foreign bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values[key] = v
	f.foreign[key] = foreign
}

func (f *fakeSB) SetFailCreate(key string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCreate[key] = err
}

// SetLose makes Create of key succeed without keeping the value (a
// southbound that drops it), for verification after apply.
func (f *fakeSB) SetLose(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose[key] = true
}

func (f *fakeSB) SetRetrieveErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retrieveErr = err
}

// descriptor is a test descriptor of one model: CRUD into the fake SB.
func (f *fakeSB) descriptor(name string, m *models.Model) *api.KVDescriptor {
	return &api.KVDescriptor{
		Name:          name,
		NBKeyPrefix:   m.KeyPrefix,
		KeySelector:   func(key string) bool { return strings.HasPrefix(key, m.KeyPrefix) },
		ValueTypeName: string(m.MessageName()),
		WithMetadata:  false,
		Create: func(_ context.Context, key string, v proto.Message) (any, error) {
			f.record("create " + key)
			f.mu.Lock()
			block := f.block
			f.mu.Unlock()
			if block != nil {
				<-block
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if err := f.failCreate[key]; err != nil {
				return nil, err
			}
			if f.lose[key] {
				return nil, nil
			}
			f.values[key] = proto.Clone(v)
			f.foreign[key] = false
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
			delete(f.foreign, key)
			return nil
		},
		Retrieve: func(context.Context, []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.retrieveErr != nil {
				return nil, f.retrieveErr
			}
			var out []api.KVWithMetadata
			for key, v := range f.values {
				if strings.HasPrefix(key, m.KeyPrefix) {
					origin := api.FromNB
					if f.foreign[key] {
						origin = api.FromSB
					}
					out = append(out, api.KVWithMetadata{Key: key, Value: proto.Clone(v), Origin: origin})
				}
			}
			sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
			return out, nil
		},
	}
}

// linuxStateKey is the admin-state property of a Linux interface
// (shared/spec/models.md).
func linuxStateKey(name string, up bool) string {
	if up {
		return "linux/interface/state/" + name + "/UP"
	}
	return "linux/interface/state/" + name + "/DOWN"
}

// descriptors returns the test descriptors: VPP interfaces (refusing
// GRE tunnels, as a plugin refuses a type it does not support), VPP
// routes (depending on their outgoing interface), Linux interfaces (with
// their admin-state property).
func (f *fakeSB) descriptors() []*api.KVDescriptor {
	vif := f.descriptor("test-vpp-interface", models.VPPInterface)
	vif.Validate = func(_ string, v proto.Message) error {
		if v.(*vppif.Interface).GetType() == vppif.Interface_GRE_TUNNEL {
			return api.NewInvalidValueError(errors.New("GRE tunnels are not supported"), "type")
		}
		return nil
	}
	route := f.descriptor("test-vpp-route", models.VPPRoute)
	route.Dependencies = func(_ string, v proto.Message) []api.Dependency {
		if oif := v.(*vppl3.Route).GetOutgoingInterface(); oif != "" {
			return []api.Dependency{{Label: "interface", Key: models.VPPInterface.KeyPrefix + oif}}
		}
		return nil
	}
	lif := f.descriptor("test-linux-interface", models.LinuxInterface)
	lif.DerivedValues = func(_ string, v proto.Message) []api.KeyValuePair {
		i := v.(*linuxif.Interface)
		return []api.KeyValuePair{{Key: linuxStateKey(i.GetName(), i.GetEnabled()), Value: &emptypb.Empty{}}}
	}
	return []*api.KVDescriptor{vif, route, lif}
}

// env is an agent with the Configurator service over loopback.
type env struct {
	sb     *fakeSB
	sched  *kvscheduler.Scheduler
	o      *orchestrator.Orchestrator
	srv    *grpcsource.Server
	client configuratorpb.ConfiguratorClient
}

// plainScheduler hides the methods of the scheduler that api.KVScheduler
// does not have (ListValueStatuses).
type plainScheduler struct{ api.KVScheduler }

// newEnv starts a scheduler with the test descriptors, an orchestrator and
// the service. The orchestrator is not started: see start.
func newEnv(t *testing.T) *env { return newEnvWith(t, false) }

// newEnvWith is newEnv; plain gives the service the scheduler as a plain
// api.KVScheduler.
func newEnvWith(t *testing.T, plain bool) *env { return newEnvOpts(t, envOptions{plain: plain}) }

// envOptions are the options of newEnvOpts.
type envOptions struct {
	// plain gives the service the scheduler as a plain api.KVScheduler.
	plain bool
	// confirm, when set, enables changes to confirm.
	confirm *grpcsource.ConfirmOptions
	// sb is the southbound (nil: a new one), to restart on the same one.
	sb *fakeSB
}

// newEnvOpts is newEnv with options.
func newEnvOpts(t *testing.T, eo envOptions) *env {
	t.Helper()
	plain := eo.plain
	e := &env{sb: eo.sb}
	if e.sb == nil {
		e.sb = newFakeSB()
	}
	e.sched = kvscheduler.New(kvscheduler.Options{Logger: discard})
	if err := e.sched.RegisterKVDescriptor(e.sb.descriptors()...); err != nil {
		t.Fatal(err)
	}
	e.o = orchestrator.New(e.sched, discard)
	var s api.KVScheduler = e.sched
	if plain {
		s = plainScheduler{e.sched}
	}
	e.srv = grpcsource.New(e.o, s, models.Default, discard)
	if eo.confirm != nil {
		e.srv.EnableConfirm(*eo.confirm)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	e.srv.Register(g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	e.client = configuratorpb.NewConfiguratorClient(conn)
	t.Cleanup(func() {
		_ = conn.Close()
		e.srv.Close()
		g.Stop()
		<-served
		e.sched.Close()
	})
	return e
}

// start makes the first full sync: with the etcd values given, or an empty
// gRPC source.
func (e *env) start(t *testing.T, etcd ...proto.Message) {
	t.Helper()
	ctx := context.Background()
	var err error
	if len(etcd) > 0 {
		_, err = e.o.Resync(ctx, orchestrator.SourceEtcd, kvsOf(t, etcd...), api.TxnOptions{})
	} else {
		_, err = e.o.Resync(ctx, orchestrator.SourceGRPC, nil, api.TxnOptions{})
	}
	if err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if ok, waiting := e.o.Ready(); !ok {
		t.Fatalf("orchestrator not started: %v", waiting)
	}
}

func kvsOf(t *testing.T, vs ...proto.Message) []orchestrator.KV {
	t.Helper()
	var out []orchestrator.KV
	for _, v := range vs {
		key, err := models.Default.Key(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, orchestrator.KV{Key: key, Value: v})
	}
	return out
}

// cfg groups values into a configuration document, in the order given.
func cfg(vs ...proto.Message) *configpb.Config {
	c := &configpb.Config{VppConfig: &configpb.VppConfig{}, LinuxConfig: &configpb.LinuxConfig{}}
	for _, v := range vs {
		switch v := v.(type) {
		case *vppif.Interface:
			c.VppConfig.Interfaces = append(c.VppConfig.Interfaces, v)
		case *vppl3.Route:
			c.VppConfig.Routes = append(c.VppConfig.Routes, v)
		case *vppl3.ARPEntry:
			c.VppConfig.Arps = append(c.VppConfig.Arps, v)
		case *linuxif.Interface:
			c.LinuxConfig.Interfaces = append(c.LinuxConfig.Interfaces, v)
		default:
			panic("cfg: unexpected value")
		}
	}
	return c
}

func loop(name string, ips ...string) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: ips}
}

func vppKey(name string) string   { return models.VPPInterface.KeyPrefix + name }
func linuxKey(name string) string { return models.LinuxInterface.KeyPrefix + name }

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recvCtx is a context for one stream of a test.
func recvCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var errBoom = errors.New("boom")

package l2plugin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func TestMain(m *testing.M) {
	core.HealthCheckProbeInterval = 50 * time.Millisecond
	os.Exit(m.Run())
}

// env is one test: a vppsim, a vppconn.Manager connected to it, and a
// scheduler with the interface stand-in and the plugin's descriptors.
type env struct {
	t   *testing.T
	sim *vppsim.Sim
	m   *vppconn.Manager
	s   *kvscheduler.Scheduler
	p   *l2plugin.Plugin
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, vppsim.Options{})
}

// newEnvWith starts the simulator with opts (SocketPath is set here).
func newEnvWith(t *testing.T, opts vppsim.Options) *env {
	t.Helper()
	dir := t.TempDir()
	if len(dir) > 80 { // unix socket paths are short (108 bytes)
		var err error
		if dir, err = os.MkdirTemp("", "l2p"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	sock := filepath.Join(dir, "api.sock")
	opts.SocketPath = sock
	sim, err := vppsim.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	m := vppconn.New(vppconn.Options{Socket: sock, Log: logger(t, slog.LevelWarn)})
	m.AddArea(l2plugin.New(m, nil, nil).Area())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	e := &env{t: t, sim: sim, m: m}
	e.waitConnected()
	e.startScheduler()
	return e
}

// waitConnected waits until the manager is connected to the simulator's
// current VPP process.
func (e *env) waitConnected() {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if st := e.m.Status(); st.Connected && st.PID == e.sim.PID() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("not connected to vppsim within 20 s: %+v", e.m.Status())
}

// startScheduler starts a new scheduler and plugin (the agent starting, or
// restarting against the same VPP).
func (e *env) startScheduler() {
	t := e.t
	if e.s != nil {
		e.s.Close()
	}
	s := kvscheduler.New(kvscheduler.Options{Logger: logger(t, slog.LevelWarn)})
	t.Cleanup(s.Close)
	p := l2plugin.New(e.m, l2plugin.SchedulerInterfaces(s), logger(t, slog.LevelInfo))
	p.SetInterfaceLister(l2plugin.SchedulerInterfaceNames(s))
	if err := s.RegisterKVDescriptor(interfaceStandIn(e.m)); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	e.s, e.p = s, p
}

func logger(t *testing.T, level slog.Level) *slog.Logger {
	var w io.Writer = io.Discard
	if testing.Verbose() {
		w = t.Output()
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// interfaceStandIn stands in for ifplugin's interface descriptor: a
// loopback per value, tagged with the logical name, with
// ifplugin.Metadata{SwIfIndex} in the metadata map.
func interfaceStandIn(m *vppconn.Manager) *api.KVDescriptor {
	prefix := models.VPPInterface.KeyPrefix
	call := func(f func(ctx context.Context, c interfaces.RPCService) error) error {
		conn, err := m.Conn("test-interfaces")
		if err != nil {
			return err
		}
		ctx, cancel := m.CallContext(context.Background())
		defer cancel()
		return f(ctx, interfaces.NewServiceClient(conn))
	}
	d := &api.TypedDescriptor[*vppif.Interface, ifplugin.Metadata]{
		Name:         ifplugin.InterfaceDescriptorName,
		NBKeyPrefix:  prefix,
		KeySelector:  func(key string) bool { return strings.HasPrefix(key, prefix) },
		KeyLabel:     func(key string) string { return strings.TrimPrefix(key, prefix) },
		WithMetadata: true,
		Create: func(_ string, v *vppif.Interface) (md ifplugin.Metadata, err error) {
			err = call(func(ctx context.Context, c interfaces.RPCService) error {
				r, err := c.CreateLoopback(ctx, &interfaces.CreateLoopback{})
				if err != nil {
					return err
				}
				md.SwIfIndex = uint32(r.SwIfIndex)
				_, err = c.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: r.SwIfIndex, Tag: v.GetName()})
				return err
			})
			return md, err
		},
		Delete: func(_ string, _ *vppif.Interface, md ifplugin.Metadata) error {
			return call(func(ctx context.Context, c interfaces.RPCService) error {
				_, err := c.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(md.SwIfIndex)})
				return err
			})
		},
		Retrieve: func(correlate []api.TypedKV[*vppif.Interface, ifplugin.Metadata]) (out []api.TypedKV[*vppif.Interface, ifplugin.Metadata], err error) {
			byName := map[string]api.TypedKV[*vppif.Interface, ifplugin.Metadata]{}
			for _, c := range correlate {
				byName[c.Value.GetName()] = c
			}
			err = call(func(ctx context.Context, c interfaces.RPCService) error {
				st, err := c.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(^uint32(0))})
				if err != nil {
					return err
				}
				for {
					d, err := st.Recv()
					if errors.Is(err, io.EOF) {
						return nil
					}
					if err != nil {
						return err
					}
					if kv, ok := byName[d.Tag]; ok {
						out = append(out, api.TypedKV[*vppif.Interface, ifplugin.Metadata]{
							Key: kv.Key, Value: kv.Value, Origin: api.FromNB,
							Metadata: ifplugin.Metadata{SwIfIndex: uint32(d.SwIfIndex), InternalName: d.InterfaceName},
						})
					}
				}
			})
			return out, err
		},
	}
	return d.KVDescriptor()
}

type kv struct {
	key   string
	value proto.Message
}

func (e *env) commit(kvs ...kv) (uint64, error) {
	return e.commitCtx(context.Background(), kvs...)
}

func (e *env) commitCtx(ctx context.Context, kvs ...kv) (uint64, error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	txn := e.s.StartNBTransaction()
	for _, x := range kvs {
		txn.SetValue(x.key, x.value)
	}
	return txn.Commit(ctx)
}

// mustCommit commits and fails the test on an error.
func (e *env) mustCommit(kvs ...kv) uint64 {
	e.t.Helper()
	seq, err := e.commit(kvs...)
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	return seq
}

// resync commits a resync of the given type with the given values.
func (e *env) resync(typ api.ResyncType, kvs ...kv) (uint64, error) {
	e.t.Helper()
	return e.commitCtx(api.WithResync(context.Background(), typ, false), kvs...)
}

// executed lists the executed operations of a transaction that called a
// descriptor (NOOPs aside).
func (e *env) executed(seq uint64) []string {
	e.t.Helper()
	rec := e.s.GetRecordedTransaction(seq)
	if rec == nil {
		e.t.Fatalf("transaction %d not recorded", seq)
	}
	var ops []string
	for _, op := range rec.Executed {
		switch op.Operation {
		case api.OpCreate, api.OpUpdate, api.OpDelete:
			if !op.NOOP {
				ops = append(ops, fmt.Sprintf("%s %s %v", op.Operation, op.Key, op.Flags()))
			}
		}
	}
	return ops
}

// state returns the state of a key (base or derived).
func (e *env) state(key string) api.ValueState {
	e.t.Helper()
	st := e.s.GetValueStatus(key)
	if st == nil {
		return api.ValueStateNonexistent
	}
	if st.GetValue().GetKey() == key {
		return st.GetValue().GetState()
	}
	for _, d := range st.GetDerivedValues() {
		if d.GetKey() == key {
			return d.GetState()
		}
	}
	return api.ValueStateNonexistent
}

// status returns the status of a key (base or derived).
func (e *env) status(key string) *api.ValueStatus {
	st := e.s.GetValueStatus(key)
	if st == nil {
		return nil
	}
	if st.GetValue().GetKey() == key {
		return st.GetValue()
	}
	for _, d := range st.GetDerivedValues() {
		if d.GetKey() == key {
			return d
		}
	}
	return nil
}

// writes lists the calls that change VPP (add/del/set/create/delete
// messages) since the last ResetCalls.
func (e *env) writes() []string {
	var out []string
	for _, c := range e.sim.Calls() {
		switch {
		case strings.HasSuffix(c, "_dump"), c == "control_ping", strings.HasPrefix(c, "sockclnt_"),
			c == "memclnt_keepalive", c == "show_version", c == "want_interface_events":
			continue
		}
		out = append(out, c)
	}
	return out
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func iface(name string) kv {
	return kv{ifplugin.InterfaceKey(name), &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK}}
}

func del(key string) kv { return kv{key, nil} }

// swIfIndex returns the sw_if_index of the loopback tagged name.
func (e *env) swIfIndex(name string) uint32 {
	e.t.Helper()
	for _, i := range e.sim.Interfaces() {
		if i.Tag == name {
			return i.SwIfIndex
		}
	}
	e.t.Fatalf("no interface tagged %s in vppsim", name)
	return 0
}

// bd returns the bridge domain tagged name in vppsim.
func (e *env) bd(name string) (vppsim.BridgeDomain, bool) {
	for _, b := range e.sim.BridgeDomains() {
		if b.Tag == name {
			return b, true
		}
	}
	return vppsim.BridgeDomain{}, false
}

func (e *env) mustBD(name string) vppsim.BridgeDomain {
	e.t.Helper()
	b, ok := e.bd(name)
	if !ok {
		e.t.Fatalf("no bridge domain tagged %s in vppsim: %+v", name, e.sim.BridgeDomains())
	}
	return b
}

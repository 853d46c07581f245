package l2plugin_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func TestMain(m *testing.M) {
	core.HealthCheckProbeInterval = 50 * time.Millisecond
	os.Exit(m.Run())
}

// env is one test: a vppsim, a vppconn.Manager connected to it, and a
// scheduler with the interface stand-in (ifplugin.Metadata values) and the
// plugin's descriptors. The package vpptest does the work.
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

// newEnvWith starts the simulator with opts (SocketPath is set by
// vpptest.Start).
func newEnvWith(t *testing.T, opts vppsim.Options) *env {
	t.Helper()
	sim, m := vpptest.Start(t, vpptest.Options{Sim: opts, Areas: []vppconn.Area{l2plugin.New(nil, nil, nil).Area()}})
	e := &env{t: t, sim: sim, m: m}
	e.startScheduler()
	return e
}

// startScheduler starts a new scheduler and plugin (the agent starting, or
// restarting against the same VPP).
func (e *env) startScheduler() {
	if e.s != nil {
		e.s.Close()
	}
	e.s, e.p = vpptest.StartAgent(e.t, e.m, l2plugin.New, vpptest.InterfaceStandInValues(e.m))
}

// kv is a value of a transaction (value nil: deleted).
type kv struct {
	key   string
	value proto.Message
}

func (x kv) KeyValue() (string, proto.Message) { return x.key, x.value }

func iface(name string) kv { return kv{ifplugin.InterfaceKey(name), vpptest.Loopback(name)} }
func del(key string) kv    { return kv{key, nil} }

// Short names for vpptest's helpers, on the env's parts.

func logger(t *testing.T, level slog.Level) *slog.Logger { return vpptest.Logger(t, level) }

func (e *env) waitConnected()                     { e.t.Helper(); vpptest.WaitConnected(e.t, e.m, e.sim) }
func (e *env) commit(kvs ...kv) (uint64, error)   { return e.commitCtx(context.Background(), kvs...) }
func (e *env) mustCommit(kvs ...kv) uint64        { e.t.Helper(); return vpptest.MustCommit(e.t, e.s, kvs...) }
func (e *env) executed(seq uint64) []string       { e.t.Helper(); return vpptest.Executed(e.t, e.s, seq) }
func (e *env) state(key string) api.ValueState    { return vpptest.State(e.s, key) }
func (e *env) status(key string) *api.ValueStatus { return vpptest.Status(e.s, key) }
func (e *env) writes() []string                   { return vpptest.Writes(e.sim) }
func (e *env) swIfIndex(name string) uint32       { e.t.Helper(); return vpptest.SwIfIndex(e.t, e.sim, name) }

func (e *env) commitCtx(ctx context.Context, kvs ...kv) (uint64, error) {
	return vpptest.Commit(ctx, e.s, kvs...)
}

func (e *env) resync(typ api.ResyncType, kvs ...kv) (uint64, error) {
	return vpptest.Resync(e.s, typ, kvs...)
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

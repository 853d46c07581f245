package l3plugin_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func TestMain(m *testing.M) {
	vpptest.QuickHealthChecks(50 * time.Millisecond)
	vpptest.Main(m)
}

// env is one test: a VPP (a vppsim of the test's own, or the real VPP that
// VPP_API_SOCKET names), a vppconn.Manager connected to it, and a scheduler
// with the interface stand-in (or ifplugin) and the plugin's descriptors.
// The package vpptest does the work.
type env struct {
	t    *testing.T
	opts envOptions
	vpp  *vpptest.VPP
	sim  *vppsim.Sim // nil on a real VPP
	m    *vppconn.Manager
	s    *kvscheduler.Scheduler
	p    *l3plugin.Plugin
}

// envOptions vary an env.
type envOptions struct {
	// callTimeout is the Manager's CallTimeout (0: its default).
	callTimeout time.Duration
	// ifplugin registers ifplugin's descriptors (every interface type)
	// instead of the loopback stand-in.
	ifplugin bool
}

func newEnv(t *testing.T) *env { return newEnvWith(t, envOptions{}) }

func newEnvWith(t *testing.T, opts envOptions) *env {
	t.Helper()
	areas := []vppconn.Area{l3plugin.New(nil, nil, nil).Area()}
	if opts.ifplugin {
		areas = append(areas, vppcalls.Areas()...)
	}
	v := vpptest.Start(t, vpptest.Options{CallTimeout: opts.callTimeout, Areas: areas})
	e := &env{t: t, opts: opts, vpp: v, sim: v.Sim, m: v.M}
	e.startScheduler()
	return e
}

// startScheduler starts a new scheduler and plugin (the agent starting, or
// restarting against the same VPP).
func (e *env) startScheduler() {
	if e.s != nil {
		e.s.Close()
	}
	interfaces := []*api.KVDescriptor{vpptest.InterfaceStandIn(e.m)}
	if e.opts.ifplugin {
		interfaces = ifplugin.New(e.m, vpptest.Logger(e.t, slog.LevelInfo)).Descriptors()
	}
	e.s, e.p = vpptest.StartAgent(e.t, e.m, l3plugin.New, interfaces...)
}

// kv is a value of a transaction (value nil: deleted).
type kv struct {
	key   string
	value proto.Message
}

func (x kv) KeyValue() (string, proto.Message) { return x.key, x.value }

func iface(name string) kv { return kv{ifplugin.InterfaceKey(name), vpptest.Loopback(name)} }

// table is the VRF table value of id (IPv6 when ipv6), without a label.
func table(id uint32, ipv6 bool) kv {
	v := &vppl3.VrfTable{Id: id}
	if ipv6 {
		v.Protocol = vppl3.VrfTable_IPV6
	}
	return kv{models.VrfTableKey(id, ipv6), v}
}
func del(key string) kv { return kv{key, nil} }

// Short names for vpptest's helpers, on the env's parts.

func (e *env) waitConnected()                     { e.t.Helper(); e.vpp.WaitConnected() }
func (e *env) commit(kvs ...kv) (uint64, error)   { return e.commitWith(api.TxnOptions{}, kvs...) }
func (e *env) mustCommit(kvs ...kv) uint64        { e.t.Helper(); return vpptest.MustCommit(e.t, e.s, kvs...) }
func (e *env) executed(seq uint64) []string       { e.t.Helper(); return vpptest.Executed(e.t, e.s, seq) }
func (e *env) state(key string) api.ValueState    { return vpptest.State(e.s, key) }
func (e *env) status(key string) *api.ValueStatus { return vpptest.Status(e.s, key) }
func (e *env) swIfIndex(name string) uint32       { e.t.Helper(); return e.vpp.SwIfIndex(name) }

func (e *env) commitWith(opts api.TxnOptions, kvs ...kv) (uint64, error) {
	return vpptest.Commit(context.Background(), e.s, opts, kvs...)
}

func (e *env) resync(typ api.ResyncType, kvs ...kv) (uint64, error) {
	return vpptest.Resync(e.s, typ, kvs...)
}

// resetCalls empties vppsim's log of requests (none on a real VPP).
func (e *env) resetCalls() {
	if e.sim != nil {
		e.sim.ResetCalls()
	}
}

// restartInSync starts a new scheduler and plugin (the agent restarting on
// the same VPP) and checks that its full resync of cfg, VPP having it all,
// executes no operation and writes nothing to VPP.
func (e *env) restartInSync(cfg ...kv) {
	e.t.Helper()
	e.startScheduler()
	e.resetCalls()
	seq, err := e.resync(api.FullResync, cfg...)
	if err != nil {
		e.t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		e.t.Errorf("full resync of an in-sync VPP executed %v", ops)
	}
	if w, _ := e.writes(); len(w) != 0 {
		e.t.Errorf("full resync of an in-sync VPP wrote %v", w)
	}
}

// writes lists the requests that changed VPP since resetCalls, from
// vppsim's log; ok is false on a real VPP, which keeps no such log.
func (e *env) writes() (w []string, ok bool) {
	if e.sim == nil {
		return nil, false
	}
	return vpptest.Writes(e.sim), true
}

package l2plugin_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

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
	vpptest.QuickHealthChecks(50 * time.Millisecond)
	vpptest.Main(m)
}

// env is one test: a VPP (a vppsim of the test's own, or the real VPP that
// VPP_API_SOCKET names), a vppconn.Manager connected to it, and a scheduler
// with the interface stand-in (ifplugin.Metadata values) and the plugin's
// descriptors. The package vpptest does the work.
type env struct {
	t   *testing.T
	vpp *vpptest.VPP
	sim *vppsim.Sim // nil on a real VPP
	m   *vppconn.Manager
	s   *kvscheduler.Scheduler
	p   *l2plugin.Plugin
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, vppsim.Options{})
}

// newEnvWith starts the simulator with opts (SocketPath is set by
// vpptest.Start; on a real VPP they are not used).
func newEnvWith(t *testing.T, opts vppsim.Options) *env {
	t.Helper()
	v := vpptest.Start(t, vpptest.Options{Sim: opts, Areas: []vppconn.Area{l2plugin.New(nil, nil, nil).Area()}})
	e := &env{t: t, vpp: v, sim: v.Sim, m: v.M}
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

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

// resetCalls empties vppsim's log of requests (none on a real VPP).
func (e *env) resetCalls() {
	if e.sim != nil {
		e.sim.ResetCalls()
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

// bd returns the bridge domain VPP has tagged name, read back with dumps.
func (e *env) bd(name string) (vpptest.BridgeDomain, bool) {
	e.t.Helper()
	return e.vpp.BridgeDomainTagged(name)
}

func (e *env) mustBD(name string) vpptest.BridgeDomain {
	e.t.Helper()
	b, ok := e.bd(name)
	if !ok {
		e.t.Fatalf("no bridge domain tagged %s in VPP: %+v", name, e.vpp.DumpBridgeDomains())
	}
	return b
}

// newBridgeDomains lists the bridge domains VPP did not have when the test
// started, "<bd_id> tag=<tag>".
func (e *env) newBridgeDomains() []string {
	e.t.Helper()
	var out []string
	for _, b := range e.vpp.DumpBridgeDomains() {
		if !slices.ContainsFunc(e.vpp.Before.BridgeDomains, func(x vpptest.BridgeDomain) bool { return x.BdID == b.BdID }) {
			out = append(out, fmt.Sprintf("%d tag=%s", b.BdID, b.Tag))
		}
	}
	return out
}

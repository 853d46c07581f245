package aclplugin_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func TestMain(m *testing.M) {
	vpptest.QuickHealthChecks(50 * time.Millisecond)
	vpptest.Main(m)
}

// env is one test: a VPP (a vppsim of the test's own, or the real VPP of
// vpptest), a vppconn.Manager connected to it, and a scheduler with the
// interface stand-in and the plugin's descriptors. h reads VPP's ACLs back
// through the binary API, on vppsim and the real VPP alike.
type env struct {
	t   *testing.T
	vpp *vpptest.VPP
	sim *vppsim.Sim // nil on a real VPP
	m   *vppconn.Manager
	h   vppcalls.Handler
	s   *kvscheduler.Scheduler
	p   *aclplugin.Plugin

	beforeIP, beforeMACIP []uint32 // the ACLs VPP had when the test started
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, vppsim.Options{})
}

func newEnvWith(t *testing.T, opts vppsim.Options) *env {
	t.Helper()
	v := vpptest.Start(t, vpptest.Options{Sim: opts, Areas: []vppconn.Area{aclplugin.New(nil, nil, nil).Area()}})
	e := &env{t: t, vpp: v, sim: v.Sim, m: v.M, h: vppcalls.NewHandler(v.M)}
	if _, err := e.m.Conn(aclplugin.AreaName); err == nil {
		for _, a := range e.acls() {
			e.beforeIP = append(e.beforeIP, a.Index)
		}
		for _, a := range e.macipACLs() {
			e.beforeMACIP = append(e.beforeMACIP, a.Index)
		}
		// Registered before the scheduler's: runs after the scheduler
		// closed, before vpptest removes the interfaces.
		t.Cleanup(e.removeNewACLs)
	}
	e.startScheduler()
	return e
}

// removeNewACLs removes, on a real VPP, the ACLs the test made (vpptest
// knows interfaces, bridge domains, routes and neighbours, not ACLs): off
// their interfaces first, then deleted. It fails the test when one stays.
func (e *env) removeNewACLs() {
	if e.sim != nil {
		return
	}
	ctx := context.Background()
	lists, err := e.h.AllInterfaceACLs(ctx)
	if err != nil {
		e.t.Errorf("cleanup: %v", err)
		return
	}
	for sw, l := range lists {
		old := func(idx uint32) bool { return !slices.Contains(e.beforeIP, idx) }
		kept := vppcalls.InterfaceACLs{Input: slices.DeleteFunc(slices.Clone(l.Input), old), Output: slices.DeleteFunc(slices.Clone(l.Output), old)}
		if !kept.Equal(l) {
			if err := e.h.SetInterfaceACLs(ctx, sw, kept); err != nil {
				e.t.Errorf("cleanup: %v", err)
			}
		}
	}
	for _, a := range e.acls() {
		if !slices.Contains(e.beforeIP, a.Index) {
			if err := e.h.DeleteACL(ctx, a.Index); err != nil {
				e.t.Errorf("cleanup: ACL %d (%s) left in VPP: %v", a.Index, a.Tag, err)
			}
		}
	}
	for _, a := range e.macipACLs() {
		if !slices.Contains(e.beforeMACIP, a.Index) {
			if err := e.h.DeleteMACIPACL(ctx, a.Index); err != nil {
				e.t.Errorf("cleanup: MAC-IP ACL %d (%s) left in VPP: %v", a.Index, a.Tag, err)
			}
		}
	}
}

// startScheduler starts a new scheduler and plugin (the agent starting, or
// restarting against the same VPP).
func (e *env) startScheduler() {
	if e.s != nil {
		e.s.Close()
	}
	e.s, e.p = vpptest.StartAgent(e.t, e.m, aclplugin.New, vpptest.InterfaceStandIn(e.m))
}

// kv is a value of a transaction (value nil: deleted).
type kv struct {
	key   string
	value proto.Message
}

func (x kv) KeyValue() (string, proto.Message) { return x.key, x.value }

func iface(name string) kv { return kv{ifplugin.InterfaceKey(name), vpptest.Loopback(name)} }
func del(key string) kv    { return kv{key, nil} }

func aclKey(name string) string { return models.VPPACL.KeyPrefix + name }
func aclKV(a *vppacl.ACL) kv    { return kv{aclKey(a.GetName()), a} }

func (e *env) commit(kvs ...kv) (uint64, error) { return e.commitWith(api.TxnOptions{}, kvs...) }
func (e *env) mustCommit(kvs ...kv) uint64      { e.t.Helper(); return vpptest.MustCommit(e.t, e.s, kvs...) }
func (e *env) executed(seq uint64) []string     { e.t.Helper(); return vpptest.Executed(e.t, e.s, seq) }
func (e *env) state(key string) api.ValueState  { return vpptest.State(e.s, key) }
func (e *env) status(key string) *api.ValueStatus {
	return vpptest.Status(e.s, key)
}
func (e *env) swIfIndex(name string) uint32 { e.t.Helper(); return e.vpp.SwIfIndex(name) }

func (e *env) commitWith(opts api.TxnOptions, kvs ...kv) (uint64, error) {
	return vpptest.Commit(context.Background(), e.s, opts, kvs...)
}

func (e *env) resync(typ api.ResyncType, kvs ...kv) (uint64, error) {
	return vpptest.Resync(e.s, typ, kvs...)
}

// mustResyncNothing runs a full resync of kvs and fails the test unless it
// executes nothing (and, on vppsim, writes nothing).
func (e *env) mustResyncNothing(when string, kvs ...kv) {
	e.t.Helper()
	e.resetCalls()
	seq, err := e.resync(api.FullResync, kvs...)
	if err != nil {
		e.t.Fatalf("%s: full resync: %v", when, err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		e.t.Errorf("%s: full resync of an in-sync VPP executed %v", when, ops)
	}
	if w, ok := e.writes(); ok && len(w) != 0 {
		e.t.Errorf("%s: full resync of an in-sync VPP wrote %v", when, w)
	}
}

func (e *env) resetCalls() {
	if e.sim != nil {
		e.sim.ResetCalls()
	}
}

// writes lists the requests that changed VPP since resetCalls (vppsim's
// log); ok is false on a real VPP.
func (e *env) writes() (w []string, ok bool) {
	if e.sim == nil {
		return nil, false
	}
	return vpptest.Writes(e.sim), true
}

func (e *env) acls() []vppcalls.ACL {
	e.t.Helper()
	out, err := e.h.DumpACLs(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) macipACLs() []vppcalls.MACIPACL {
	e.t.Helper()
	out, err := e.h.DumpMACIPACLs(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// acl returns the IP ACL VPP has tagged name.
func (e *env) acl(name string) (vppcalls.ACL, bool) {
	e.t.Helper()
	for _, a := range e.acls() {
		if a.Tag == name {
			return a, true
		}
	}
	return vppcalls.ACL{}, false
}

func (e *env) mustACL(name string) vppcalls.ACL {
	e.t.Helper()
	a, ok := e.acl(name)
	if !ok {
		e.t.Fatalf("VPP has no IP ACL tagged %s: %+v", name, e.acls())
	}
	return a
}

func (e *env) macipACL(name string) (vppcalls.MACIPACL, bool) {
	e.t.Helper()
	for _, a := range e.macipACLs() {
		if a.Tag == name {
			return a, true
		}
	}
	return vppcalls.MACIPACL{}, false
}

func (e *env) mustMACIPACL(name string) vppcalls.MACIPACL {
	e.t.Helper()
	a, ok := e.macipACL(name)
	if !ok {
		e.t.Fatalf("VPP has no MAC-IP ACL tagged %s: %+v", name, e.macipACLs())
	}
	return a
}

// lists returns the IP ACL lists of the interface named name (logical),
// as the tags of the ACLs ("#<index>" for an ACL without a tag).
func (e *env) lists(name string) (in, out []string) {
	e.t.Helper()
	l, ok, err := e.h.InterfaceACLs(context.Background(), e.swIfIndex(name))
	if err != nil || !ok {
		e.t.Fatalf("ACL lists of %s: %v (found %v)", name, err, ok)
	}
	tags := map[uint32]string{}
	for _, a := range e.acls() {
		tags[a.Index] = a.Tag
	}
	tag := func(idx uint32) string {
		if t := tags[idx]; t != "" {
			return t
		}
		return fmt.Sprintf("#%d", idx)
	}
	for _, idx := range l.Input {
		in = append(in, tag(idx))
	}
	for _, idx := range l.Output {
		out = append(out, tag(idx))
	}
	return in, out
}

// macipOf returns the tag of the MAC-IP ACL of the interface named name
// ("" for none).
func (e *env) macipOf(name string) string {
	e.t.Helper()
	idx, ok, err := e.h.InterfaceMACIPACL(context.Background(), e.swIfIndex(name))
	if err != nil {
		e.t.Fatal(err)
	}
	if !ok {
		return ""
	}
	for _, a := range e.macipACLs() {
		if a.Index == idx {
			return a.Tag
		}
	}
	return fmt.Sprintf("#%d", idx)
}

// isVPPError tells whether err is the VPP error code.
func isVPPError(err error, code govppapi.VPPApiError) bool { return vppconn.IsVPPError(err, code) }

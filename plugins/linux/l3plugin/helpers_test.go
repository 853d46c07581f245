package l3plugin_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// needRoot skips unless the test may create network namespaces.
func needRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root: creates network namespaces and configures routes in them (CI runs as root)")
	}
}

var nsSeq atomic.Int64

// newNetns creates a named namespace of its own for the test, removed at
// cleanup whatever happens.
func newNetns(tb testing.TB) string {
	tb.Helper()
	needRoot(tb)
	name := fmt.Sprintf("l3t-%d-%d", os.Getpid(), nsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			tb.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return name
}

// env is one test: a namespace, a scheduler with the l3plugin descriptors
// and the interface stand-in.
type env struct {
	tb     testing.TB
	ns     string
	mgr    *nsplugin.Manager
	s      *kvscheduler.Scheduler
	p      *l3plugin.Plugin
	lister bool
	// noAdoption turns the adoption of the original agent's routes off.
	noAdoption bool
}

type envOption func(*env)

// withLister makes the plugin list every configured interface
// (SetInterfaceLister).
func withLister() envOption { return func(e *env) { e.lister = true } }

// withoutAdoption turns the adoption of the original agent's routes off
// (SetAdoptOriginalRoutes).
func withoutAdoption() envOption { return func(e *env) { e.noAdoption = true } }

func newEnv(tb testing.TB, opts ...envOption) *env {
	tb.Helper()
	e := &env{tb: tb, ns: newNetns(tb)}
	for _, o := range opts {
		o(e)
	}
	mgr, err := nsplugin.NewManager()
	if err != nil {
		tb.Fatal(err)
	}
	e.mgr = mgr
	tb.Cleanup(mgr.Close)
	e.startScheduler()
	// A veth pair, both ends up, in the namespace.
	e.ip("link", "add", "v0", "type", "veth", "peer", "name", "v1")
	e.ip("link", "set", "v0", "up")
	e.ip("link", "set", "v1", "up")
	return e
}

// startScheduler starts a new scheduler (the agent starting, or
// restarting) with the interface stand-in and the plugin's descriptors.
func (e *env) startScheduler() {
	tb := e.tb
	if e.s != nil {
		e.s.Close()
	}
	s := kvscheduler.New(kvscheduler.Options{Logger: logger(tb, slog.LevelWarn)})
	tb.Cleanup(s.Close)
	p := l3plugin.New(e.mgr, l3plugin.SchedulerInterfaces(s), logger(tb, slog.LevelInfo))
	tb.Cleanup(p.Close)
	if e.lister {
		p.SetInterfaceLister(l3plugin.SchedulerInterfaceNames(s))
	}
	p.SetAdoptOriginalRoutes(!e.noAdoption)
	if err := s.RegisterKVDescriptor(interfaceStandIn(e.mgr)); err != nil {
		tb.Fatal(err)
	}
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		tb.Fatal(err)
	}
	e.s, e.p = s, p
}

func logger(tb testing.TB, level slog.Level) *slog.Logger {
	var w io.Writer = io.Discard
	if t, ok := tb.(*testing.T); ok {
		w = t.Output()
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// interfaceStandIn stands in for ifplugin's interface descriptor: it
// configures nothing, finds the link the test made with `ip` and publishes
// ifplugin.Metadata; its derived values are the properties the real one
// derives (admin state up, one per address).
func interfaceStandIn(mgr *nsplugin.Manager) *api.KVDescriptor {
	prefix := models.LinuxInterface.KeyPrefix
	lookup := func(v *linuxif.Interface) (ifplugin.Metadata, error) {
		ref := nsplugin.RefOf(v.GetNamespace())
		h, err := mgr.Handle(ref, false)
		if err != nil {
			return ifplugin.Metadata{}, err
		}
		l, err := h.LinkByName(ifplugin.HostName(v))
		if err != nil {
			return ifplugin.Metadata{}, fmt.Errorf("link %s in %s: %w", ifplugin.HostName(v), ref, err)
		}
		return ifplugin.Metadata{Index: l.Attrs().Index, HostName: l.Attrs().Name, Namespace: ref, Type: v.GetType()}, nil
	}
	d := &api.TypedDescriptor[*linuxif.Interface, ifplugin.Metadata]{
		Name:         ifplugin.InterfaceDescriptorName,
		NBKeyPrefix:  prefix,
		KeySelector:  func(key string) bool { return strings.HasPrefix(key, prefix) },
		KeyLabel:     func(key string) string { return strings.TrimPrefix(key, prefix) },
		WithMetadata: true,
		Create: func(_ context.Context, _ string, v *linuxif.Interface) (ifplugin.Metadata, error) {
			return lookup(v)
		},
		Update: func(_ context.Context, _ string, _, v *linuxif.Interface, _ ifplugin.Metadata) (ifplugin.Metadata, error) {
			return lookup(v)
		},
		Delete: func(context.Context, string, *linuxif.Interface, ifplugin.Metadata) error { return nil },
		Retrieve: func(_ context.Context, correlate []api.TypedKV[*linuxif.Interface, ifplugin.Metadata]) ([]api.TypedKV[*linuxif.Interface, ifplugin.Metadata], error) {
			var out []api.TypedKV[*linuxif.Interface, ifplugin.Metadata]
			for _, c := range correlate {
				if md, err := lookup(c.Value); err == nil {
					out = append(out, api.TypedKV[*linuxif.Interface, ifplugin.Metadata]{Key: c.Key, Value: c.Value, Metadata: md, Origin: api.FromNB})
				}
			}
			return out, nil
		},
		DerivedValues: func(_ string, v *linuxif.Interface) []api.KeyValuePair {
			var out []api.KeyValuePair
			if v.GetEnabled() {
				out = append(out, api.KeyValuePair{Key: ifplugin.StateKey(v.GetName(), true), Value: v})
			}
			for _, a := range v.GetIpAddresses() {
				out = append(out, api.KeyValuePair{Key: ifplugin.AddressKey(v.GetName(), a), Value: v})
			}
			return out
		},
	}
	return d.KVDescriptor()
}

// ip runs `ip -n <ns> args...` and returns its output; failure is fatal.
func (e *env) ip(args ...string) string {
	e.tb.Helper()
	out, err := exec.Command("ip", append([]string{"-n", e.ns}, args...)...).CombinedOutput()
	if err != nil {
		e.tb.Fatalf("ip -n %s %s: %v: %s", e.ns, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kernelRoutes returns the routes of protocol 181 (ours), IPv4 and IPv6,
// one per line as `ip route` prints them.
func (e *env) kernelRoutes() []string {
	e.tb.Helper()
	proto := fmt.Sprint(int(l3plugin.RouteProtocol))
	var lines []string
	for _, fam := range []string{"-4", "-6"} {
		for _, l := range strings.Split(e.ip(fam, "route", "show", "proto", proto), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// allRoutes returns every IPv4 route of the namespace (any protocol).
func (e *env) allRoutes() string {
	e.tb.Helper()
	return e.ip("-4", "route", "show")
}

// hasRoute tells whether one of our routes starts with prefix and has all
// the given words.
func (e *env) hasRoute(prefix string, words ...string) bool {
	e.tb.Helper()
	for _, l := range e.kernelRoutes() {
		if !strings.HasPrefix(l, prefix+" ") && l != prefix {
			continue
		}
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(" "+l+" ", " "+w+" ")
		}
		if ok {
			return true
		}
	}
	return false
}

func (e *env) mustHaveRoute(prefix string, words ...string) {
	e.tb.Helper()
	if !e.hasRoute(prefix, words...) {
		e.tb.Fatalf("no route of ours %q %v in the kernel; routes of ours:\n%s", prefix, words, strings.Join(e.kernelRoutes(), "\n"))
	}
}

func (e *env) mustNotHaveRoute(prefix string) {
	e.tb.Helper()
	if e.hasRoute(prefix) {
		e.tb.Fatalf("route of ours %q still in the kernel:\n%s", prefix, strings.Join(e.kernelRoutes(), "\n"))
	}
}

// kv is one key-value pair of a transaction (nil value: delete).
type kv struct {
	key   string
	value proto.Message
}

// commit runs one NB transaction and fails the test on any error.
func (e *env) commit(kvs ...kv) uint64 {
	e.tb.Helper()
	return e.commitOpts(api.TxnOptions{}, kvs...)
}

func (e *env) commitOpts(opts api.TxnOptions, kvs ...kv) uint64 {
	e.tb.Helper()
	txn := e.s.StartNBTransaction()
	for _, p := range kvs {
		txn.SetValue(p.key, p.value)
	}
	seq, err := txn.Commit(context.Background(), opts)
	if err != nil {
		e.tb.Fatalf("commit: %v", err)
	}
	return seq
}

// resync runs a full resync with the given NB state.
func (e *env) resync(kvs ...kv) uint64 {
	e.tb.Helper()
	return e.commitOpts(api.TxnOptions{Resync: api.FullResync}, kvs...)
}

func (e *env) state(key string) api.ValueState {
	return e.s.GetValueStatus(key).GetValue().GetState()
}

func (e *env) mustState(key string, want api.ValueState) {
	e.tb.Helper()
	st := e.s.GetValueStatus(key).GetValue()
	if st.GetState() != want {
		e.tb.Fatalf("%s: state %s (error %q, details %v), want %s", key, st.GetState(), st.GetError(), st.GetDetails(), want)
	}
}

// executed lists the operations of a transaction that did something in the
// SB (not NOOP), with their flags.
func (e *env) executed(seq uint64) []string {
	e.tb.Helper()
	rec := e.s.GetRecordedTransaction(seq)
	if rec == nil {
		e.tb.Fatalf("transaction %d not recorded", seq)
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

// iface is the NB value of an interface of the test namespace.
func (e *env) iface(name string, addrs ...string) kv {
	return kv{ifplugin.InterfaceKey(name), &linuxif.Interface{
		Name:        name,
		Type:        linuxif.Interface_VETH,
		Namespace:   &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: e.ns},
		Enabled:     true,
		IpAddresses: addrs,
	}}
}

// route is the NB key and value of a route.
func route(tb testing.TB, r *linuxl3.Route) kv {
	tb.Helper()
	key, err := models.LinuxRoute.Key(r)
	if err != nil {
		tb.Fatal(err)
	}
	return kv{key, r}
}

// arp is the NB key and value of an ARP entry.
func arp(tb testing.TB, a *linuxl3.ARPEntry) kv {
	tb.Helper()
	key, err := models.LinuxARP.Key(a)
	if err != nil {
		tb.Fatal(err)
	}
	return kv{key, a}
}

func del(p kv) kv { return kv{p.key, nil} }

package l3plugin_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/txnlog"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// TestWithTheInterfacePlugin: routes and ARP entries over interfaces made
// by the real interface plugin: the route waits for the address that makes
// its gateway reachable (a derived value of the interface), and both follow
// the interface's admin state.
func TestWithTheInterfacePlugin(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("l3int-%d", os.Getpid())
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ns := &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: name}
	mgr, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mgr.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := kvscheduler.New(kvscheduler.Options{Logger: log})
	t.Cleanup(s.Close)
	ifp := ifplugin.New(mgr, log)
	l3 := l3plugin.New(mgr, l3plugin.SchedulerInterfaces(s), log)
	t.Cleanup(l3.Close)
	l3.SetInterfaceLister(l3plugin.SchedulerInterfaceNames(s))
	if err := s.RegisterKVDescriptor(ifp.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterKVDescriptor(l3.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	commit := func(kvs map[string]proto.Message) {
		t.Helper()
		txn := s.StartNBTransaction()
		for k, v := range kvs {
			txn.SetValue(k, v)
		}
		if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	key := func(m *models.Model, v proto.Message) string {
		k, err := m.Key(v)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	state := func(k string) api.ValueState { return s.GetValueStatus(k).GetValue().GetState() }

	a := &linuxif.Interface{Name: "ia", Type: linuxif.Interface_VETH, Enabled: true, Namespace: ns,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ib"}}}
	b := &linuxif.Interface{Name: "ib", Type: linuxif.Interface_VETH, Enabled: true, Namespace: ns,
		IpAddresses: []string{"10.61.0.2/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ia"}}}
	route := &linuxl3.Route{OutgoingInterface: "ia", DstNetwork: "10.62.0.0/24", GwAddr: "10.61.0.2", Metric: 10}
	arp := &linuxl3.ARPEntry{Interface: "ia", IpAddress: "10.61.0.9", HwAddress: "02:00:00:00:61:09"}
	routeKey, arpKey := key(models.LinuxRoute, route), key(models.LinuxARP, arp)
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): a, ifplugin.InterfaceKey("ib"): b, routeKey: route, arpKey: arp})
	if st := state(routeKey); st != api.ValueStatePending {
		t.Fatalf("route before ia has an address in the gateway's subnet: %v", st)
	}
	if st := state(arpKey); st != api.ValueStateConfigured {
		t.Errorf("ARP entry: %v", st)
	}
	// The address that makes the gateway reachable.
	a2 := proto.Clone(a).(*linuxif.Interface)
	a2.IpAddresses = []string{"10.61.0.1/24"}
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): a2})
	if st := state(routeKey); st != api.ValueStateConfigured {
		t.Fatalf("route after the address: %v (%v)", st, s.GetValueStatus(routeKey))
	}
	out, err := exec.Command("ip", "-n", name, "route", "show", "proto", "181").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "10.62.0.0/24 via 10.61.0.2 dev ia") || !strings.Contains(string(out), "metric 10") {
		t.Errorf("routes of ours in %s: %s %v", name, out, err)
	}
	// Down: the route and the ARP entry go (PENDING); up: back.
	a3 := proto.Clone(a2).(*linuxif.Interface)
	a3.Enabled = false
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): a3})
	if state(routeKey) != api.ValueStatePending || state(arpKey) != api.ValueStatePending {
		t.Errorf("with ia down: route %v, ARP %v; want both PENDING", state(routeKey), state(arpKey))
	}
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): a2})
	if state(routeKey) != api.ValueStateConfigured || state(arpKey) != api.ValueStateConfigured {
		t.Errorf("with ia up again: route %v, ARP %v", state(routeKey), state(arpKey))
	}
	if out, _ := exec.Command("ip", "-n", name, "neigh", "show", "dev", "ia").CombinedOutput(); !strings.Contains(string(out), "10.61.0.9 lladdr 02:00:00:00:61:09 PERMANENT") {
		t.Errorf("neighbours of ia: %s", out)
	}
	// Everything goes.
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): nil, ifplugin.InterfaceKey("ib"): nil, routeKey: nil, arpKey: nil})
	if out, _ := exec.Command("ip", "-n", name, "-o", "link").CombinedOutput(); strings.Contains(string(out), "ia") || strings.Contains(string(out), "ib") {
		t.Errorf("links left in %s: %s", name, out)
	}
}

// realAgent is a scheduler with the real interface plugin and this plugin,
// configuring a namespace of the test's own (removed at cleanup).
type realAgent struct {
	t  *testing.T
	s  *kvscheduler.Scheduler
	ns *linuxns.NetNamespace
}

func newRealAgent(t *testing.T, prefix string) *realAgent {
	return newRealAgentWith(t, prefix, realOptions{})
}

// realOptions: what else the agent of a test runs.
type realOptions struct {
	// watch runs the interface watcher, with this plugin's routes and
	// ARP entries (drift detection), as the daemon does.
	watch bool
	// reportOnly: the scheduler's drift repairs only report
	// (DriftReportOnly).
	reportOnly bool
}

func newRealAgentWith(t *testing.T, prefix string, o realOptions) *realAgent {
	t.Helper()
	needRoot(t)
	name := fmt.Sprintf("%s-%d", prefix, os.Getpid())
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	mgr, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mgr.Close)
	log := logger(t, slog.LevelWarn)
	s := kvscheduler.New(kvscheduler.Options{Logger: log, DriftReportOnly: o.reportOnly})
	t.Cleanup(s.Close)
	l3 := l3plugin.New(mgr, l3plugin.SchedulerInterfaces(s), log)
	t.Cleanup(l3.Close)
	l3.SetInterfaceLister(l3plugin.SchedulerInterfaceNames(s))
	descriptors := ifplugin.New(mgr, log).Descriptors()
	if o.watch {
		descriptors = append(descriptors, ifplugin.WatcherDescriptor())
	}
	if err := s.RegisterKVDescriptor(descriptors...); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterKVDescriptor(l3.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	if o.watch {
		w := ifplugin.NewWatcher(mgr, s, log)
		w.SetLinkObjects(l3)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.Run(ctx)
		}()
		t.Cleanup(func() {
			cancel()
			<-done
		})
		<-w.Synced()
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, rec := range s.GetTransactionHistory(time.Time{}, time.Time{}) {
				t.Log(txnlog.Format(rec, txnlog.Options{}))
			}
		}
	})
	return &realAgent{t: t, s: s, ns: &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: name}}
}

// commit applies the values (interfaces, routes, ARP entries) and returns
// the operations executed.
func (a *realAgent) commit(opts api.TxnOptions, values ...proto.Message) []string {
	a.t.Helper()
	txn := a.s.StartNBTransaction()
	for _, v := range values {
		var key string
		var err error
		switch v := v.(type) {
		case *linuxif.Interface:
			key = ifplugin.InterfaceKey(v.GetName())
		case *linuxl3.Route:
			key, err = models.LinuxRoute.Key(v)
		case *linuxl3.ARPEntry:
			key, err = models.LinuxARP.Key(v)
		}
		if err != nil {
			a.t.Fatal(err)
		}
		txn.SetValue(key, v)
	}
	seq, err := txn.Commit(context.Background(), opts)
	if err != nil {
		a.t.Fatalf("commit: %v", err)
	}
	var ops []string
	for _, op := range a.s.GetRecordedTransaction(seq).Executed {
		if !op.NOOP {
			ops = append(ops, op.Operation.String()+" "+op.Key)
		}
	}
	return ops
}

// ip runs `ip -n <ns> args...`.
func (a *realAgent) ip(args ...string) string {
	a.t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", a.ns.GetReference()}, args...)...).CombinedOutput()
	if err != nil {
		a.t.Fatalf("ip -n %s %s: %v: %s", a.ns.GetReference(), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// mustHave fails unless `ip -n <ns> args...` prints every line wanted.
func (a *realAgent) mustHave(what string, args []string, lines ...string) {
	a.t.Helper()
	out := a.ip(args...)
	for _, l := range lines {
		if !strings.Contains(out, l) {
			a.t.Errorf("%s: %q missing from `ip %s`:\n%s", what, l, strings.Join(args, " "), out)
		}
	}
}

func (a *realAgent) mustBeConfigured(values ...proto.Message) {
	a.t.Helper()
	for _, v := range values {
		var key string
		switch v := v.(type) {
		case *linuxl3.Route:
			key, _ = models.LinuxRoute.Key(v)
		case *linuxl3.ARPEntry:
			key, _ = models.LinuxARP.Key(v)
		}
		if st := a.s.GetValueStatus(key).GetValue(); st.GetState() != api.ValueStateConfigured {
			a.t.Errorf("%s: %v %q, want CONFIGURED", key, st.GetState(), st.GetError())
		}
	}
}

// TestRenameKeepsRoutesAndARPEntries: renaming an interface that is up
// (host_if_name) keeps its routes (link scope, via a gateway outside its
// subnet, IPv6) and ARP entries in the kernel, and a resync afterwards has
// nothing to do.
func TestRenameKeepsRoutesAndARPEntries(t *testing.T) {
	a := newRealAgent(t, "l3ren")
	x := &linuxif.Interface{Name: "rx", Type: linuxif.Interface_VETH, Enabled: true, Namespace: a.ns,
		IpAddresses: []string{"10.63.0.1/24", "fd63::1/64"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ry"}}}
	y := &linuxif.Interface{Name: "ry", Type: linuxif.Interface_VETH, Enabled: true, Namespace: a.ns,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "rx"}}}
	values := []proto.Message{x, y,
		&linuxl3.Route{OutgoingInterface: "rx", DstNetwork: "172.20.0.0/16", Scope: linuxl3.Route_LINK},
		&linuxl3.Route{OutgoingInterface: "rx", DstNetwork: "10.64.0.0/24", GwAddr: "172.20.0.1", Metric: 5},
		&linuxl3.Route{OutgoingInterface: "rx", DstNetwork: "10.65.0.0/24", GwAddr: "10.63.0.2"},
		&linuxl3.Route{OutgoingInterface: "rx", DstNetwork: "fd64::/64", GwAddr: "fd63::2"},
		&linuxl3.ARPEntry{Interface: "rx", IpAddress: "10.63.0.9", HwAddress: "02:00:00:00:63:09"},
	}
	a.commit(api.TxnOptions{}, values...)
	a.mustBeConfigured(values[2:]...)

	renamed := proto.Clone(x).(*linuxif.Interface)
	renamed.HostIfName = "rx-new"
	values[0] = renamed
	a.commit(api.TxnOptions{}, renamed)
	a.mustBeConfigured(values[2:]...)
	a.mustHave("routes after the rename", []string{"-4", "route", "show", "proto", "181"},
		"172.20.0.0/16 dev rx-new scope link", "10.64.0.0/24 via 172.20.0.1 dev rx-new", "10.65.0.0/24 via 10.63.0.2 dev rx-new")
	a.mustHave("IPv6 routes after the rename", []string{"-6", "route", "show", "proto", "181"}, "fd64::/64 via fd63::2 dev rx-new")
	a.mustHave("neighbours after the rename", []string{"neigh", "show", "dev", "rx-new"}, "10.63.0.9 lladdr 02:00:00:00:63:09 PERMANENT")
	a.mustHave("addresses after the rename", []string{"addr", "show", "dev", "rx-new"}, "10.63.0.1/24", "fd63::1/64")
	if ops := a.commit(api.TxnOptions{Resync: api.FullResync}, values...); len(ops) > 0 {
		t.Errorf("resync after the rename executed %v", ops)
	}
}

// TestDisableEnableKeepsIPv6Routes: disabling an interface takes its routes
// away (PENDING) and enabling it brings them back; its IPv6 address stays
// (keep_addr_on_down), so a route via an IPv6 gateway in its subnet is
// added again.
func TestDisableEnableKeepsIPv6Routes(t *testing.T) {
	a := newRealAgent(t, "l3kad")
	x := &linuxif.Interface{Name: "kx", Type: linuxif.Interface_VETH, Enabled: true, Namespace: a.ns,
		IpAddresses: []string{"fd66::1/64"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ky"}}}
	y := &linuxif.Interface{Name: "ky", Type: linuxif.Interface_VETH, Enabled: true, Namespace: a.ns,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "kx"}}}
	r := &linuxl3.Route{OutgoingInterface: "kx", DstNetwork: "fd67::/64", GwAddr: "fd66::2"}
	a.commit(api.TxnOptions{}, x, y, r)
	a.mustBeConfigured(r)
	down := proto.Clone(x).(*linuxif.Interface)
	down.Enabled = false
	a.commit(api.TxnOptions{}, down)
	a.commit(api.TxnOptions{}, x)
	a.mustBeConfigured(r)
	a.mustHave("addresses after down and up", []string{"addr", "show", "dev", "kx"}, "fd66::1/64")
	a.mustHave("IPv6 routes after down and up", []string{"-6", "route", "show", "proto", "181"}, "fd67::/64 via fd66::2 dev kx")
	if ops := a.commit(api.TxnOptions{Resync: api.FullResync}, x, y, r); len(ops) > 0 {
		t.Errorf("resync after down and up executed %v", ops)
	}
}

package ifplugin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/txnlog"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
	"github.com/netagent-io/netagent/tests/netnstest"
)

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create links and namespaces (CI runs as root)")
	}
}

// run runs a command and fails the test on error.
func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// agent is a scheduler with the interface plugin and the watcher.
type agent struct {
	t      testing.TB
	s      *kvscheduler.Scheduler
	ns     *nsplugin.Manager
	cancel context.CancelFunc
	done   chan struct{}

	closeOnce sync.Once
}

func newAgent(t testing.TB) *agent { return newAgentWith(t, agentOptions{}) }

func newLabelledAgent(t testing.TB, label string) *agent {
	return newAgentWith(t, agentOptions{label: label})
}

// newReportingAgent is an agent whose drift repairs only report
// (DriftReportOnly): for the tests of what a resync does after a change
// by hand, which a drift repair would otherwise race with.
func newReportingAgent(t testing.TB) *agent { return newAgentWith(t, agentOptions{reportOnly: true}) }

type agentOptions struct {
	label      string
	reportOnly bool
	// log receives the logs of the plugin and the scheduler (default:
	// none).
	log *slog.Logger
}

func newAgentWith(t testing.TB, o agentOptions) *agent {
	t.Helper()
	ns, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	log := o.log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := kvscheduler.New(kvscheduler.Options{Logger: log, DriftReportOnly: o.reportOnly})
	p := ifplugin.New(ns, log)
	t.Cleanup(p.Close)
	p.SetLabel(o.label)
	if err := s.RegisterKVDescriptor(append(p.Descriptors(), ifplugin.WatcherDescriptor())...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := ifplugin.NewWatcher(ns, s, log)
	a := &agent{t: t, s: s, ns: ns, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(a.done); w.Run(ctx) }()
	select {
	case <-w.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not report the host links within 10 s")
	}
	s.TransactionBarrier()
	agentsMu.Lock()
	agentsOf[t] = append(agentsOf[t], a)
	agentsMu.Unlock()
	t.Cleanup(a.close)
	t.Cleanup(func() { logHistoryIfFailed(t, s) })
	return a
}

// agentsOf are the running agents of each test, which the cleanups that
// delete links or namespaces stop first (afterAgents).
var (
	agentsMu sync.Mutex
	agentsOf = map[testing.TB][]*agent{}
)

// afterAgents registers f to run when the test ends, once its agents have
// stopped: a link or namespace of theirs deleted while one runs is drift,
// which the agent repairs (and the next test would find it).
func afterAgents(t testing.TB, f func()) {
	t.Cleanup(func() {
		agentsMu.Lock()
		agents := slices.Clone(agentsOf[t])
		agentsMu.Unlock()
		for _, a := range agents {
			a.close()
		}
		f()
	})
}

// logHistoryIfFailed logs the transactions of a failed test: what the
// scheduler did, drift repairs included, is the first thing to look at.
func logHistoryIfFailed(t testing.TB, s *kvscheduler.Scheduler) {
	if !t.Failed() {
		return
	}
	for _, rec := range s.GetTransactionHistory(time.Time{}, time.Time{}) {
		t.Log(txnlog.Format(rec, txnlog.Options{}))
	}
}

// close stops the agent; it may be called again (cleanup after a test
// closed it).
func (a *agent) close() {
	a.closeOnce.Do(func() {
		agentsMu.Lock()
		agentsOf[a.t] = slices.DeleteFunc(agentsOf[a.t], func(b *agent) bool { return b == a })
		if len(agentsOf[a.t]) == 0 {
			delete(agentsOf, a.t)
		}
		agentsMu.Unlock()
		a.cancel()
		<-a.done
		a.s.Close()
		a.ns.Close()
	})
}

func (a *agent) commit(opts api.TxnOptions, kvs ...proto.Message) (uint64, error) {
	txn := a.s.StartNBTransaction()
	for _, v := range kvs {
		i := v.(*linuxif.Interface)
		txn.SetValue(ifplugin.InterfaceKey(i.GetName()), i)
	}
	return txn.Commit(context.Background(), opts)
}

func (a *agent) mustCommit(kvs ...proto.Message) uint64 {
	a.t.Helper()
	seq, err := a.commit(api.TxnOptions{}, kvs...)
	if err != nil {
		a.t.Fatalf("commit: %v", err)
	}
	return seq
}

func (a *agent) delete(names ...string) {
	a.t.Helper()
	txn := a.s.StartNBTransaction()
	for _, n := range names {
		txn.SetValue(ifplugin.InterfaceKey(n), nil)
	}
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		a.t.Fatalf("delete: %v", err)
	}
}

// executed lists the operations a transaction executed ("DELETE <key>").
func (a *agent) executed(seq uint64) []string {
	var ops []string
	for _, op := range a.s.GetRecordedTransaction(seq).Executed {
		if !op.NOOP {
			ops = append(ops, op.Operation.String()+" "+op.Key)
		}
	}
	return ops
}

func (a *agent) state(name string) api.ValueState {
	return a.s.GetValueStatus(ifplugin.InterfaceKey(name)).GetValue().GetState()
}

// waitState waits (10 s at most) until the interface is in the state, e.g.
// after the watcher saw a change made by hand.
func (a *agent) waitState(name string, want api.ValueState) {
	a.t.Helper()
	ch := make(chan *api.BaseValueStatus, 16)
	key := ifplugin.InterfaceKey(name)
	stop := a.s.WatchValueStatus(ch, func(k string) bool { return k == key })
	defer stop()
	if a.state(name) == want {
		return
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case st := <-ch:
			if st.GetValue().GetState() == want {
				return
			}
		case <-deadline:
			a.t.Fatalf("%s is %v, want %v within 10 s (%v)", name, a.state(name), want, a.s.GetValueStatus(key))
		}
	}
}

func namespace(t *testing.T, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, os.Getpid())
	afterAgents(t, func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return name
}

func nsRef(name string) *linuxns.NetNamespace {
	return &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: name}
}

// findLink is link for polls: nil when the link or its namespace does
// not exist (now).
func findLink(ns, name string) netlink.Link {
	m, err := nsplugin.NewManager()
	if err != nil {
		return nil
	}
	defer m.Close()
	ref := nsplugin.Ref{}
	if ns != "" {
		ref = nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: ns}
	}
	h, err := m.Handle(ref, false)
	if err != nil {
		return nil
	}
	l, err := h.LinkByName(name)
	if err != nil {
		return nil
	}
	return l
}

// link reads a link back with `ip -d -j`-free netlink, in a namespace.
func link(t *testing.T, ns, name string) netlink.Link {
	t.Helper()
	m, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ref := nsplugin.Ref{}
	if ns != "" {
		ref = nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: ns}
	}
	h, err := m.Handle(ref, false)
	if err != nil {
		t.Fatal(err)
	}
	l, err := h.LinkByName(name)
	if err != nil {
		return nil
	}
	return l
}

func addrs(t *testing.T, ns, name string) []string {
	t.Helper()
	out, err := addrsOf(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// addrsOf lists the addresses of a link (but IPv6 link-local), sorted.
func addrsOf(ns, name string) ([]string, error) {
	args := []string{"ip", "-o", "addr", "show", "dev", name}
	if ns != "" {
		args = []string{"ip", "-n", ns, "-o", "addr", "show", "dev", name}
	}
	text, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, text)
	}
	var out []string
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if (f[i] == "inet" || f[i] == "inet6") && !strings.HasPrefix(f[i+1], "fe80:") {
				out = append(out, f[i+1])
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func TestVethPairInANamespace(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-veth")
	a := newAgent(t)
	left := &linuxif.Interface{Name: "vleft", Type: linuxif.Interface_VETH, Enabled: true, Mtu: 1400,
		IpAddresses: []string{"10.10.0.1/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "vright"}}}
	right := &linuxif.Interface{Name: "vright", HostIfName: "eth-r", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns),
		IpAddresses: []string{"10.10.0.2/24", "2001:db8::2/64"}, PhysAddress: "02:aa:bb:cc:dd:02",
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "vleft"}}}
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "vleft").Run() })
	a.mustCommit(left, right)

	l, r := link(t, "", "vleft"), link(t, ns, "eth-r")
	if l == nil || r == nil {
		t.Fatalf("links after create: vleft %v, eth-r in %s %v", l, ns, r)
	}
	if l.Attrs().MTU != 1400 || l.Attrs().Alias != "netagent/vleft" || r.Attrs().Alias != "netagent/vright" {
		t.Errorf("vleft mtu %d alias %q, eth-r alias %q", l.Attrs().MTU, l.Attrs().Alias, r.Attrs().Alias)
	}
	if r.Attrs().HardwareAddr.String() != "02:aa:bb:cc:dd:02" {
		t.Errorf("eth-r MAC %s", r.Attrs().HardwareAddr)
	}
	if got := addrs(t, ns, "eth-r"); !slices.Equal(got, []string{"10.10.0.2/24", "2001:db8::2/64"}) {
		t.Errorf("addresses of eth-r: %v", got)
	}
	if run(t, "ip", "netns", "exec", ns, "ping", "-c1", "-W2", "10.10.0.1") == "" {
		t.Error("no ping output")
	}

	// Update in place: MTU and addresses.
	left2 := proto.Clone(left).(*linuxif.Interface)
	left2.Mtu, left2.IpAddresses = 1300, []string{"10.10.0.1/24", "10.20.0.1/24"}
	right2 := proto.Clone(right).(*linuxif.Interface)
	right2.IpAddresses = []string{"10.10.0.2/24"}
	a.mustCommit(left2, right2)
	if l := link(t, "", "vleft"); l == nil || l.Attrs().MTU != 1300 || l.Attrs().Index != link(t, "", "vleft").Attrs().Index {
		t.Errorf("vleft after the MTU update: %v", l)
	}
	if got := addrs(t, "", "vleft"); !slices.Equal(got, []string{"10.10.0.1/24", "10.20.0.1/24"}) {
		t.Errorf("addresses of vleft after update: %v", got)
	}
	if got := addrs(t, ns, "eth-r"); !slices.Equal(got, []string{"10.10.0.2/24"}) {
		t.Errorf("addresses of eth-r after update: %v", got)
	}

	a.delete("vleft", "vright")
	if link(t, "", "vleft") != nil {
		t.Error("veth end left behind after delete")
	}
	// The namespace was made by the agent for vright: it goes with it.
	if out := run(t, "ip", "netns", "list"); strings.Contains(out, ns) {
		t.Errorf("namespace %s left behind: %s", ns, out)
	}
	for _, n := range []string{"vleft", "vright"} {
		if st := a.state(n); st != api.ValueStateNonexistent && st != api.ValueStateRemoved {
			t.Errorf("%s is %v after delete", n, st)
		}
	}
}

func TestExistingInterfaceFollowsTheLink(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "exist0").Run() })
	ex := &linuxif.Interface{Name: "ex", HostIfName: "exist0", Type: linuxif.Interface_EXISTING, Enabled: true,
		IpAddresses: []string{"10.30.0.1/24"}}
	a.mustCommit(ex)
	if st := a.state("ex"); st != api.ValueStatePending {
		t.Fatalf("EXISTING interface without its link is %v, want PENDING", st)
	}
	run(t, "ip", "link", "add", "exist0", "type", "veth", "peer", "name", "exist1")
	a.waitState("ex", api.ValueStateConfigured)
	a.s.TransactionBarrier()
	if got := addrs(t, "", "exist0"); !slices.Equal(got, []string{"10.30.0.1/24"}) {
		t.Errorf("addresses of exist0: %v", got)
	}
	if l := link(t, "", "exist0"); l == nil || l.Attrs().Alias != "" {
		t.Errorf("exist0 after configuration: %v (an adopted link is not marked)", l)
	}
	run(t, "ip", "link", "del", "exist0")
	a.waitState("ex", api.ValueStatePending)

	// Deleting the value never deletes an adopted link.
	run(t, "ip", "link", "add", "exist0", "type", "veth", "peer", "name", "exist1")
	a.waitState("ex", api.ValueStateConfigured)
	a.delete("ex")
	if link(t, "", "exist0") == nil {
		t.Error("the adopted link was deleted with its value")
	}
	if got := addrs(t, "", "exist0"); len(got) != 0 {
		t.Errorf("addresses left on exist0 after delete: %v", got)
	}
}

// TestExistingHostNameChangeAdoptsTheOtherLink: host_if_name of an EXISTING
// interface says which link it adopts; a new one is another link, and the
// link adopted before is left under its name, not renamed. Deleting the
// value leaves the link as the value set it (MTU, up), without the
// addresses it added.
func TestExistingHostNameChangeAdoptsTheOtherLink(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	afterAgents(t, func() {
		_ = exec.Command("ip", "link", "del", "exa0").Run()
		_ = exec.Command("ip", "link", "del", "exb0").Run()
	})
	run(t, "ip", "link", "add", "exa0", "type", "veth", "peer", "name", "exa1")
	run(t, "ip", "link", "add", "exb0", "type", "veth", "peer", "name", "exb1")
	ex := &linuxif.Interface{Name: "ex", HostIfName: "exa0", Type: linuxif.Interface_EXISTING, Enabled: true, Mtu: 1400,
		IpAddresses: []string{"10.31.0.1/24"}}
	a.mustCommit(ex)
	a.waitState("ex", api.ValueStateConfigured)
	before := link(t, "", "exa0")

	moved := proto.Clone(ex).(*linuxif.Interface)
	moved.HostIfName = "exb0"
	a.mustCommit(moved)
	a.waitState("ex", api.ValueStateConfigured) // the watcher may not have reported exb0 yet
	a.s.TransactionBarrier()
	if l := link(t, "", "exa0"); l == nil || l.Attrs().Index != before.Attrs().Index {
		t.Errorf("exa0 after ex moved to exb0: %v, want the same link under its name", l)
	}
	if got := addrs(t, "", "exa0"); len(got) != 0 {
		t.Errorf("addresses left on exa0: %v", got)
	}
	b := link(t, "", "exb0")
	if b == nil || b.Attrs().MTU != 1400 || b.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("exb0: %v, want MTU 1400, up", b)
	}
	if got := addrs(t, "", "exb0"); !slices.Equal(got, []string{"10.31.0.1/24"}) {
		t.Errorf("addresses of exb0: %v", got)
	}

	a.delete("ex")
	b = link(t, "", "exb0")
	if b == nil || b.Attrs().MTU != 1400 || b.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("exb0 after its value was deleted: %v, want it left as the value set it (MTU 1400, up)", b)
	}
	if got := addrs(t, "", "exb0"); len(got) != 0 {
		t.Errorf("addresses left on exb0 after delete: %v", got)
	}
}

func TestWatcherReportsForeignLinks(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "foreign0").Run() })
	ch := make(chan *api.BaseValueStatus, 16)
	key := ifplugin.HostNameKey("foreign0")
	stop := a.s.WatchValueStatus(ch, func(k string) bool { return k == key })
	defer stop()
	run(t, "ip", "link", "add", "foreign0", "type", "veth", "peer", "name", "foreign1")
	deadline := time.After(10 * time.Second)
	for {
		select {
		case st := <-ch:
			if st.GetValue().GetState() == api.ValueStateObtained {
				return
			}
		case <-deadline:
			t.Fatalf("foreign0 not reported OBTAINED within 10 s: %v", a.s.GetValueStatus(key))
		}
	}
}

func TestResyncRestoresAndRestartIsQuiet(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-resync")
	values := []proto.Message{
		&linuxif.Interface{Name: "ra", Type: linuxif.Interface_VETH, Enabled: true, IpAddresses: []string{"10.40.0.1/24"},
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "rb"}}},
		&linuxif.Interface{Name: "rb", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns), Mtu: 9000,
			IpAddresses: []string{"10.40.0.2/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ra"}}},
		&linuxif.Interface{Name: "lo-" + ns, HostIfName: "lo", Type: linuxif.Interface_LOOPBACK, Enabled: true, Namespace: nsRef(ns),
			IpAddresses: []string{"127.0.0.1/8", "10.99.0.1/32"}},
	}
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "ra").Run() })
	resync := api.TxnOptions{Resync: api.FullResync}

	a := newReportingAgent(t)
	a.mustCommit(values...)
	if got := addrs(t, ns, "lo"); !slices.Equal(got, []string{"10.99.0.1/32", "127.0.0.1/8", "::1/128"}) {
		t.Errorf("addresses of lo in %s: %v", ns, got)
	}
	// Someone removes an address and sets a link down by hand.
	run(t, "ip", "-n", ns, "addr", "del", "10.40.0.2/24", "dev", "rb")
	run(t, "ip", "link", "set", "ra", "down")
	if _, err := a.commit(resync, values...); err != nil {
		t.Fatalf("resync: %v", err)
	}
	if got := addrs(t, ns, "rb"); !slices.Equal(got, []string{"10.40.0.2/24"}) {
		t.Errorf("addresses of rb after resync: %v", got)
	}
	if l := link(t, "", "ra"); l == nil || l.Attrs().Flags&(1<<0) == 0 {
		t.Errorf("ra after resync: %v, want up", l)
	}
	a.close()

	// A new agent on the same kernel: the resync does nothing.
	b := newAgent(t)
	seq, err := b.commit(resync, values...)
	if err != nil {
		t.Fatalf("resync after restart: %v", err)
	}
	if ops := b.executed(seq); len(ops) > 0 {
		t.Errorf("resync of an in-sync kernel after a restart executed %v", ops)
	}
}

func TestUnsupportedValuesAreInvalid(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	for _, c := range []struct {
		v    *linuxif.Interface
		want string
	}{
		{&linuxif.Interface{Name: "d0", Type: linuxif.Interface_VRF_DEVICE}, "VRF_DEVICE"},
		{&linuxif.Interface{Name: "m0", Type: linuxif.Interface_LOOPBACK, Namespace: &linuxns.NetNamespace{Type: linuxns.NetNamespace_MICROSERVICE, Reference: "vnf1"}}, "container runtime"},
		{&linuxif.Interface{Name: "v0", Type: linuxif.Interface_VETH}, "veth"},
		// The alias would read as another agent's ("netagent/<label>/<name>").
		{&linuxif.Interface{Name: "vpp1/x0", HostIfName: "x0", Type: linuxif.Interface_EXISTING}, `contains "/"`},
		{&linuxif.Interface{Name: "x1", Type: linuxif.Interface_VETH, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "vpp1/x2"}}}, `contains "/"`},
		{&linuxif.Interface{Name: "v1", Type: linuxif.Interface_VETH, Mtu: 1, IpAddresses: []string{"10.0.0.1/33"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "v2"}}}, "ip_addresses[0]"},
	} {
		_, err := a.commit(api.TxnOptions{}, c.v)
		st := a.s.GetValueStatus(ifplugin.InterfaceKey(c.v.GetName())).GetValue()
		if err == nil || st.GetState() != api.ValueStateInvalid || !strings.Contains(st.GetError(), c.want) {
			t.Errorf("%s: commit error %v, state %v %q; want INVALID mentioning %q", c.v.GetName(), err, st.GetState(), st.GetError(), c.want)
		}
	}
	// DUMMY: supported or INVALID with the reason, as this kernel allows.
	_, err := a.commit(api.TxnOptions{}, &linuxif.Interface{Name: "dum0", Type: linuxif.Interface_DUMMY})
	st := a.s.GetValueStatus(ifplugin.InterfaceKey("dum0")).GetValue()
	if err != nil {
		if !strings.Contains(st.GetError(), "no dummy links") {
			t.Errorf("DUMMY: %v, %q", err, st.GetError())
		}
		t.Logf("this kernel has no dummy links: %s", st.GetError())
	} else {
		afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "dum0").Run() })
		if link(t, "", "dum0") == nil {
			t.Error("DUMMY dum0 not created")
		}
	}
}

func TestRenameInPlaceAndMTURange(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	afterAgents(t, func() {
		_ = exec.Command("ip", "link", "del", "rn0").Run()
		_ = exec.Command("ip", "link", "del", "rn0new").Run()
	})
	x := &linuxif.Interface{Name: "rn0", Type: linuxif.Interface_VETH, Enabled: true, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "rn1"}}}
	y := &linuxif.Interface{Name: "rn1", Type: linuxif.Interface_VETH, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "rn0"}}}
	a.mustCommit(x, y)
	before := link(t, "", "rn0")
	if before == nil {
		t.Fatal("rn0 not created")
	}
	x2 := proto.Clone(x).(*linuxif.Interface)
	x2.HostIfName = "rn0new"
	a.mustCommit(x2)
	after := link(t, "", "rn0new")
	if after == nil || after.Attrs().Index != before.Attrs().Index || after.Attrs().Flags&1 == 0 {
		t.Errorf("after the rename: %v (index before %d), want the same link, up", after, before.Attrs().Index)
	}
	if link(t, "", "rn0") != nil {
		t.Error("the old name is still there")
	}
	x3 := proto.Clone(x2).(*linuxif.Interface)
	x3.Mtu = 70000
	if _, err := a.commit(api.TxnOptions{}, x3); err == nil || !strings.Contains(a.s.GetValueStatus(ifplugin.InterfaceKey("rn0")).GetValue().GetError(), "mtu 70000 is out of range") {
		t.Errorf("MTU 70000: %v, %v", err, a.s.GetValueStatus(ifplugin.InterfaceKey("rn0")).GetValue())
	}
}

// TestTapToVPP: the host side of a VPP TAP waits for the VPP interface,
// then takes the link VPP made (here made by hand), moves it into its
// namespace and configures it.
func TestTapToVPP(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-tap")
	a := newAgent(t)
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "tapvpp0").Run() })
	// A stand-in for the VPP interface descriptor (the VPP plugin is not
	// part of this test): its Create makes the host link as VPP would.
	vpp := &api.KVDescriptor{
		Name:        "vpp-interface-standin",
		KeySelector: func(key string) bool { return strings.HasPrefix(key, "config/vpp/v2/interfaces/") },
		Create: func(_ context.Context, key string, v proto.Message) (any, error) {
			out, err := exec.Command("ip", "tuntap", "add", "mode", "tap", "tapvpp0").CombinedOutput()
			if err != nil {
				return nil, fmt.Errorf("%v: %s", err, out)
			}
			return nil, nil
		},
		Delete: func(_ context.Context, key string, v proto.Message, md any) error { return nil },
	}
	if err := a.s.RegisterKVDescriptor(vpp); err != nil {
		t.Fatal(err)
	}
	tap := &linuxif.Interface{Name: "tap-host", HostIfName: "tapvpp0", Type: linuxif.Interface_TAP_TO_VPP, Enabled: true,
		Namespace: nsRef(ns), IpAddresses: []string{"10.50.0.1/24"}, Mtu: 1450,
		Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap0"}}}
	a.mustCommit(tap)
	if st := a.state("tap-host"); st != api.ValueStatePending {
		t.Fatalf("TAP_TO_VPP before its VPP TAP: %v, want PENDING", st)
	}
	txn := a.s.StartNBTransaction().SetValue("config/vpp/v2/interfaces/tap0", &linuxif.Interface{Name: "tap0"})
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := a.state("tap-host"); st != api.ValueStateConfigured {
		t.Fatalf("TAP_TO_VPP after its VPP TAP: %v (%v)", st, a.s.GetValueStatus(ifplugin.InterfaceKey("tap-host")))
	}
	l := link(t, ns, "tapvpp0")
	if l == nil || l.Attrs().MTU != 1450 || l.Attrs().Alias != "netagent/tap-host" {
		t.Fatalf("tap in %s: %v", ns, l)
	}
	if got := addrs(t, ns, "tapvpp0"); !slices.Equal(got, []string{"10.50.0.1/24"}) {
		t.Errorf("addresses of the tap: %v", got)
	}
	a.delete("tap-host")
	if l := link(t, "", "tapvpp0"); l == nil || l.Attrs().Alias != "" {
		t.Errorf("after delete, the tap is back in the agent's namespace unmarked: %v", l)
	}
}

// TestAgentsOfOtherLabelsAreLeftAlone: the links of an agent with another
// microservice label, or with none, are not this agent's: its full resync
// keeps them, whichever alias is a prefix of the other's
// ("netagent/<name>" of an agent without a label is a prefix of every
// "netagent/<label>/<name>"). The agent of the same label deletes them
// (its own links, no longer configured).
func TestAgentsOfOtherLabelsAreLeftAlone(t *testing.T) {
	needRoot(t)
	for _, c := range []struct {
		owner, other, alias string
	}{
		{owner: "vpp1", other: "", alias: "netagent/vpp1/lbl0"},
		{owner: "", other: "vpp1", alias: "netagent/lbl0"},
		{owner: "vpp1", other: "vpp", alias: "netagent/vpp1/lbl0"},
		{owner: "vpp", other: "vpp1", alias: "netagent/vpp/lbl0"},
	} {
		t.Run(fmt.Sprintf("owner %q, other %q", c.owner, c.other), func(t *testing.T) {
			afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "lbl0").Run() })
			owner := newLabelledAgent(t, c.owner)
			owner.mustCommit(
				&linuxif.Interface{Name: "lbl0", Type: linuxif.Interface_VETH, Enabled: true, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "lbl1"}}},
				&linuxif.Interface{Name: "lbl1", Type: linuxif.Interface_VETH, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "lbl0"}}},
			)
			if l := link(t, "", "lbl0"); l == nil || l.Attrs().Alias != c.alias {
				t.Fatalf("lbl0: %v, want the alias %q", l, c.alias)
			}
			owner.close()

			other := newLabelledAgent(t, c.other)
			seq, err := other.commit(api.TxnOptions{Resync: api.FullResync})
			if err != nil {
				t.Fatal(err)
			}
			if link(t, "", "lbl0") == nil || link(t, "", "lbl1") == nil {
				t.Errorf("an agent labelled %q deleted the links of the agent labelled %q in its resync: %v", c.other, c.owner, other.executed(seq))
			}
			other.close()

			same := newLabelledAgent(t, c.owner)
			if _, err := same.commit(api.TxnOptions{Resync: api.FullResync}); err != nil {
				t.Fatal(err)
			}
			if link(t, "", "lbl0") != nil || link(t, "", "lbl1") != nil {
				t.Error("the agent of the same label kept its unconfigured links")
			}
		})
	}
}

// TestAgentsOwnLoopbackStaysUp: a value that would take down the loopback
// of the agent's own namespace (where its API and etcd listen) is INVALID,
// naming the field, whichever way it names that namespace, and lo stays
// up; the loopback of another namespace may be set down. The test sets the
// agent's namespace's lo down if the rail fails, so it runs only in a
// namespace of its own.
func TestAgentsOwnLoopbackStaysUp(t *testing.T) {
	needRoot(t)
	if !netnstest.Isolated() {
		t.Skip("runs only in a network namespace of its own (netnstest): a failure would take down the caller's lo")
	}
	a := newAgent(t)
	loUp := func() bool {
		t.Helper()
		l := link(t, "", "lo")
		return l != nil && l.Attrs().Flags&net.FlagUp != 0
	}
	if !loUp() {
		t.Fatal("lo of the tests' namespace is down before the test")
	}
	const enabledWhy = "enabled: false (or unset) would take down the loopback of the agent's own network namespace (127.0.0.1: its API and etcd)"
	pid := &linuxns.NetNamespace{Type: linuxns.NetNamespace_PID, Reference: strconv.Itoa(os.Getpid())}
	self := &linuxns.NetNamespace{Type: linuxns.NetNamespace_FD, Reference: "/proc/self/ns/net"}
	for _, c := range []struct {
		v            *linuxif.Interface
		field, error string
	}{
		// The operator's repro: no namespace, enabled omitted.
		{&linuxif.Interface{Name: "lo", Type: linuxif.Interface_LOOPBACK}, "enabled", enabledWhy},
		{&linuxif.Interface{Name: "lo-pid", HostIfName: "lo", Type: linuxif.Interface_LOOPBACK, Namespace: pid}, "enabled", enabledWhy},
		{&linuxif.Interface{Name: "lo-fd", HostIfName: "lo", Type: linuxif.Interface_LOOPBACK, Namespace: self}, "enabled", enabledWhy},
		{&linuxif.Interface{Name: "lo-existing", HostIfName: "lo", Type: linuxif.Interface_EXISTING}, "enabled", enabledWhy},
		// Deleting the value would remove the kernel's own address.
		{&linuxif.Interface{Name: "lo", Type: linuxif.Interface_LOOPBACK, Enabled: true, IpAddresses: []string{"10.99.0.1/32", "127.0.0.1/8"}},
			"ip_addresses[1]", "ip_addresses[1]: 127.0.0.1/8 is the kernel's own address of the loopback of the agent's network namespace"},
		{&linuxif.Interface{Name: "lo", Type: linuxif.Interface_LOOPBACK, Enabled: true, IpAddresses: []string{"::1/128"}},
			"ip_addresses[0]", "ip_addresses[0]: ::1/128 is the kernel's own address"},
		// Only LOOPBACK (or EXISTING) is a namespace's lo.
		{&linuxif.Interface{Name: "v-lo", HostIfName: "lo", Type: linuxif.Interface_VETH, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "v-lo-peer"}}},
			"host_if_name", "host_if_name: lo is the loopback every namespace already has"},
		{&linuxif.Interface{Name: "t-lo", HostIfName: "lo", Type: linuxif.Interface_TAP_TO_VPP, Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap0"}}},
			"host_if_name", "host_if_name: lo is the loopback every namespace already has"},
	} {
		_, err := a.commit(api.TxnOptions{}, c.v)
		st := a.s.GetValueStatus(ifplugin.InterfaceKey(c.v.GetName())).GetValue()
		if err == nil || st.GetState() != api.ValueStateInvalid || !strings.Contains(st.GetError(), c.error) || !slices.Equal(st.GetDetails(), []string{c.field}) {
			t.Errorf("%v: commit error %v, status %v %q %q; want INVALID, details [%s], error containing %q", c.v, err, st.GetState(), st.GetError(), st.GetDetails(), c.field, c.error)
		}
		if !loUp() {
			t.Fatalf("%v took lo down", c.v)
		}
		a.delete(c.v.GetName())
	}

	// Up, with an address of its own: fine; set down later: INVALID, and
	// lo stays up.
	lo := &linuxif.Interface{Name: "lo", Type: linuxif.Interface_LOOPBACK, Enabled: true, IpAddresses: []string{"10.99.0.1/32"}}
	a.mustCommit(lo)
	if st := a.state("lo"); st != api.ValueStateConfigured {
		t.Fatalf("lo enabled: %v (%v)", st, a.s.GetValueStatus(ifplugin.InterfaceKey("lo")))
	}
	if got := addrs(t, "", "lo"); !slices.Contains(got, "10.99.0.1/32") || !slices.Contains(got, "127.0.0.1/8") {
		t.Errorf("addresses of lo: %v", got)
	}
	down := proto.Clone(lo).(*linuxif.Interface)
	down.Enabled = false
	if _, err := a.commit(api.TxnOptions{}, down); err == nil || a.state("lo") != api.ValueStateInvalid {
		t.Errorf("lo set down: commit error %v, state %v; want INVALID", err, a.state("lo"))
	}
	if !loUp() {
		t.Fatal("lo went down")
	}
	a.delete("lo")
	if got := addrs(t, "", "lo"); !slices.Equal(got, []string{"127.0.0.1/8", "::1/128"}) {
		t.Errorf("addresses of lo after the value was deleted: %v, want the kernel's", got)
	}

	// The loopback of another namespace may be set down.
	ns := namespace(t, "ifp-lo")
	run(t, "ip", "netns", "add", ns)
	run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	a.mustCommit(&linuxif.Interface{Name: "lo-other", HostIfName: "lo", Type: linuxif.Interface_LOOPBACK, Namespace: nsRef(ns)})
	if st := a.state("lo-other"); st != api.ValueStateConfigured {
		t.Fatalf("lo of another namespace, disabled: %v (%v)", st, a.s.GetValueStatus(ifplugin.InterfaceKey("lo-other")))
	}
	if l := link(t, ns, "lo"); l == nil || l.Attrs().Flags&net.FlagUp != 0 {
		t.Errorf("lo of %s: %v, want down", ns, l)
	}
	if !loUp() {
		t.Error("the agent's lo went down with another namespace's")
	}
}

// TestDummyNeverTakesAForeignLink: a DUMMY value whose name is taken by a
// link the agent did not create fails without marking, changing or (when
// the value is deleted) deleting that link.
func TestDummyNeverTakesAForeignLink(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "dmy0").Run() })
	run(t, "ip", "link", "add", "dmy0", "type", "veth", "peer", "name", "dmy1")
	_, err := a.commit(api.TxnOptions{}, &linuxif.Interface{Name: "dmy0", Type: linuxif.Interface_DUMMY, Mtu: 1300})
	st := a.s.GetValueStatus(ifplugin.InterfaceKey("dmy0")).GetValue()
	if st.GetState() == api.ValueStateInvalid && strings.Contains(st.GetError(), "no dummy links") {
		t.Skip("this kernel has no dummy links: " + st.GetError())
	}
	if err == nil || !strings.Contains(st.GetError(), "is not this dummy") {
		t.Errorf("DUMMY over a foreign veth: commit error %v, status %v %q; want a failure saying the link is not this dummy", err, st.GetState(), st.GetError())
	}
	a.delete("dmy0")
	if l := link(t, "", "dmy0"); l == nil || l.Type() != "veth" || l.Attrs().Alias != "" || l.Attrs().MTU != 1500 {
		t.Errorf("the foreign dmy0 after the DUMMY value: %v, want it untouched", l)
	}
}

// TestTapToVPPWithoutVPP: with the agent running without VPP, a TAP_TO_VPP
// value waits for a VPP TAP that never comes, and its PENDING reason says
// so.
func TestTapToVPPWithoutVPP(t *testing.T) {
	needRoot(t)
	ns, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := kvscheduler.New(kvscheduler.Options{Logger: log})
	t.Cleanup(s.Close)
	p := ifplugin.New(ns, log)
	t.Cleanup(p.Close)
	p.SetVPPDisabled(true)
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	tap := &linuxif.Interface{Name: "tap-novpp", Type: linuxif.Interface_TAP_TO_VPP, Enabled: true,
		Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap0"}}}
	if _, err := s.StartNBTransaction().SetValue(ifplugin.InterfaceKey("tap-novpp"), tap).Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	st := s.GetValueStatus(ifplugin.InterfaceKey("tap-novpp")).GetValue()
	if st.GetState() != api.ValueStatePending || !slices.ContainsFunc(st.GetDetails(), func(d string) bool {
		return strings.Contains(d, "VPP TAP tap0") && strings.Contains(d, "this agent runs without VPP")
	}) {
		t.Errorf("TAP_TO_VPP without VPP: %v, details %q; want PENDING saying the agent runs without VPP", st.GetState(), st.GetDetails())
	}
}

// TestRetrieveStopsWhenItsContextIsDone: a Retrieve whose context is done
// (the scheduler closing) returns its error instead of dumping the
// namespaces.
func TestRetrieveStopsWhenItsContextIsDone(t *testing.T) {
	needRoot(t)
	ns, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	p := ifplugin.New(ns, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, d := range p.Descriptors() {
		if d.Retrieve == nil {
			continue
		}
		if got, err := d.Retrieve(ctx, nil); !errors.Is(err, context.Canceled) || len(got) != 0 {
			t.Errorf("%s: Retrieve with a cancelled context: %v, %v; want context.Canceled and nothing", d.Name, got, err)
		}
	}
}

package ifplugin_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// linksIn returns the links of a namespace ("" the test's own) but lo:
// name -> alias.
func linksIn(t *testing.T, ns string) map[string]string {
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
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range links {
		if l.Attrs().Name != "lo" {
			out[l.Attrs().Name] = l.Attrs().Alias
		}
	}
	return out
}

// veth returns the values of a veth pair: end a (host name hostA, in the
// netns nsA, "" the agent's) and end b in the agent's namespace; its end
// there is deleted at cleanup.
func veth(t *testing.T, a, hostA, nsA, b string) (*linuxif.Interface, *linuxif.Interface) {
	t.Helper()
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", b).Run() })
	end := &linuxif.Interface{Name: a, HostIfName: hostA, Type: linuxif.Interface_VETH, Enabled: true,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: b}}}
	if nsA != "" {
		end.Namespace = nsRef(nsA)
	}
	return end, &linuxif.Interface{Name: b, Type: linuxif.Interface_VETH, Enabled: true,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: a}}}
}

// TestSameHostNameIsRefused (issue 16, item 6): of two values with one
// host name in one namespace the second (in key order) is INVALID, naming
// the field, the link and the first, and nothing is made for it (nor for
// its veth peer, which waits for it): the kernel has one link of that name,
// the first's. An EXISTING value cannot adopt a link another value makes
// either. The same host name in another namespace is fine. When the first
// is deleted, the second is created in the same transaction.
func TestSameHostNameIsRefused(t *testing.T) {
	needRoot(t)
	ns, ns2 := namespace(t, "ifp-uniq"), namespace(t, "ifp-uniq2")
	a := newAgent(t)
	first, firstPeer := veth(t, "uq-a", "uq0", ns, "uq-ah")
	second, secondPeer := veth(t, "uq-b", "uq0", ns, "uq-bh")
	other, otherPeer := veth(t, "uq-c", "uq0", ns2, "uq-ch")
	_, err := a.commit(api.TxnOptions{}, second, secondPeer, first, firstPeer, other, otherPeer)
	if err == nil {
		t.Error("commit of two values with one host name in one namespace: no error")
	}
	if err := a.configured("uq-a", "uq-ah", "uq-c", "uq-ch"); err != nil {
		t.Error(err)
	}
	st := a.s.GetValueStatus(ifplugin.InterfaceKey("uq-b")).GetValue()
	want := "host_if_name: linux link uq0 in netns " + ns + " is already used by " + ifplugin.InterfaceKey("uq-a")
	if st.GetState() != api.ValueStateInvalid || !strings.Contains(st.GetError(), want) || !slices.Contains(st.GetDetails(), "host_if_name") {
		t.Errorf("the second value of uq0: %v %q %v; want INVALID saying %q, details naming host_if_name", st.GetState(), st.GetError(), st.GetDetails(), want)
	}
	if st := a.state("uq-bh"); st != api.ValueStatePending {
		t.Errorf("the peer of the refused end: %v, want PENDING (it waits for its peer)", st)
	}
	if got := linksIn(t, ns); !maps.Equal(got, map[string]string{"uq0": "netagent/uq-a"}) {
		t.Errorf("links of %s: %v, want uq0 of uq-a alone", ns, got)
	}
	if got := linksIn(t, ns2); !maps.Equal(got, map[string]string{"uq0": "netagent/uq-c"}) {
		t.Errorf("links of %s: %v, want uq0 of uq-c", ns2, got)
	}
	for name, alias := range linksIn(t, "") {
		if strings.Contains(alias, "uq-b") {
			t.Errorf("a link %s was made for a refused value: alias %q", name, alias)
		}
	}

	// EXISTING values on links other values make: refused, the error
	// naming the field that gives the name (host_if_name, or the logical
	// name without one).
	_, _ = a.commit(api.TxnOptions{},
		&linuxif.Interface{Name: "uq-ae", HostIfName: "uq-ah", Type: linuxif.Interface_EXISTING, Enabled: true},
		&linuxif.Interface{Name: "uq0", Type: linuxif.Interface_EXISTING, Enabled: true, Namespace: nsRef(ns2)})
	for _, c := range []struct{ name, field, link, holder string }{
		{"uq-ae", "host_if_name", "uq-ah in default namespace", "uq-ah"},
		{"uq0", "name", "uq0 in netns " + ns2, "uq-c"},
	} {
		st := a.s.GetValueStatus(ifplugin.InterfaceKey(c.name)).GetValue()
		want := c.field + ": linux link " + c.link + " is already used by " + ifplugin.InterfaceKey(c.holder)
		if st.GetState() != api.ValueStateInvalid || !strings.Contains(st.GetError(), want) || !slices.Contains(st.GetDetails(), c.field) {
			t.Errorf("EXISTING %s on the link %s makes: %v %q %v; want INVALID saying %q", c.name, c.holder, st.GetState(), st.GetError(), st.GetDetails(), want)
		}
	}
	a.delete("uq-ae", "uq0") // (they would adopt the links once their makers go)

	// The first goes: the second gets the name in the same transaction.
	a.delete("uq-a", "uq-ah")
	if err := a.configured("uq-b", "uq-bh"); err != nil {
		t.Fatalf("once the holder of uq0 is deleted: %v", err)
	}
	if got := linksIn(t, ns); !maps.Equal(got, map[string]string{"uq0": "netagent/uq-b"}) {
		t.Errorf("links of %s: %v, want uq0 of uq-b alone", ns, got)
	}
}

// TestHostNamesSwappedInOneTransaction: two values that swap their host
// names in one transaction both get theirs, each link renamed in place
// (the kernel has one link per name at a time: one of them goes under a
// temporary name for the while).
func TestHostNamesSwappedInOneTransaction(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-swap")
	a := newAgent(t)
	x := &linuxif.Interface{Name: "sw-a", HostIfName: "swx", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns),
		IpAddresses: []string{"10.61.0.1/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "sw-b"}}}
	y := &linuxif.Interface{Name: "sw-b", HostIfName: "swy", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns),
		IpAddresses: []string{"10.61.0.2/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "sw-a"}}}
	a.mustCommit(x, y)
	ix, iy := link(t, ns, "swx").Attrs().Index, link(t, ns, "swy").Attrs().Index

	x2, y2 := proto.Clone(x).(*linuxif.Interface), proto.Clone(y).(*linuxif.Interface)
	x2.HostIfName, y2.HostIfName = "swy", "swx"
	seq := a.mustCommit(x2, y2)
	if err := a.configured("sw-a", "sw-b"); err != nil {
		t.Fatal(err)
	}
	if got := linksIn(t, ns); !maps.Equal(got, map[string]string{"swx": "netagent/sw-b", "swy": "netagent/sw-a"}) {
		t.Errorf("links of %s after the swap: %v", ns, got)
	}
	if lx, ly := link(t, ns, "swy"), link(t, ns, "swx"); lx.Attrs().Index != ix || ly.Attrs().Index != iy {
		t.Errorf("the links were re-created, not renamed (executed %v)", a.executed(seq))
	}
	if got := addrs(t, ns, "swy"); !slices.Equal(got, []string{"10.61.0.1/24"}) {
		t.Errorf("addresses of swy (sw-a): %v", got)
	}
	if ops := fullResync(a, x2, y2); len(ops) > 0 {
		t.Errorf("a resync after the swap executed %v", ops)
	}
}

// TestHostNameHandedOverInOneTransaction: a value renamed and a new value
// taking its old name, in one transaction, whichever is first in key
// order (and so, maybe, in the order of the kernel changes).
func TestHostNameHandedOverInOneTransaction(t *testing.T) {
	needRoot(t)
	for _, c := range []struct{ giver, taker string }{{"ho-a", "ho-b"}, {"ho-b", "ho-a"}} {
		t.Run("giver "+c.giver, func(t *testing.T) {
			ns := namespace(t, "ifp-ho")
			a := newAgent(t)
			giver, giverPeer := veth(t, c.giver, "ho0", ns, c.giver+"h")
			a.mustCommit(giver, giverPeer)
			index := link(t, ns, "ho0").Attrs().Index

			renamed := proto.Clone(giver).(*linuxif.Interface)
			renamed.HostIfName = "ho1"
			taker, takerPeer := veth(t, c.taker, "ho0", ns, c.taker+"h")
			a.mustCommit(renamed, taker, takerPeer)
			if err := a.configured(c.giver, c.taker, c.taker+"h"); err != nil {
				t.Fatal(err)
			}
			if got := linksIn(t, ns); !maps.Equal(got, map[string]string{"ho0": "netagent/" + c.taker, "ho1": "netagent/" + c.giver}) {
				t.Errorf("links of %s: %v", ns, got)
			}
			if l := link(t, ns, "ho1"); l.Attrs().Index != index {
				t.Errorf("the giver's link was re-created (index %d, was %d)", l.Attrs().Index, index)
			}
		})
	}
}

// logBuffer collects log lines, for tests of what the agent logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestNamespaceOfAnEarlierRunGoesWithItsLastInterface: after a restart,
// the interfaces found in a namespace the agent made in the earlier run
// are its users too: deleting one of two leaves the namespace (and logs
// nothing about it: the agent does not try to remove it), deleting the
// last removes it.
func TestNamespaceOfAnEarlierRunGoesWithItsLastInterface(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-nsrun")
	ra, rb := veth(t, "nr-a", "", ns, "nr-ah")
	sa, sb := veth(t, "nr-b", "", ns, "nr-bh")
	first := newAgent(t)
	first.mustCommit(ra, rb, sa, sb)
	first.close()

	var logs logBuffer
	a := newAgentWith(t, agentOptions{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if ops := fullResync(a, ra, rb, sa, sb); len(ops) > 0 {
		t.Fatalf("the resync after the restart executed %v", ops)
	}
	a.delete("nr-a", "nr-ah")
	if out := run(t, "ip", "netns", "list"); !strings.Contains(out, ns) {
		t.Fatalf("the netns %s was removed while nr-b is in it: %s", ns, out)
	}
	if strings.Contains(logs.String(), "netns="+ns) {
		t.Errorf("with nr-b still in it, the agent logged about the netns %s:\n%s", ns, logs.String())
	}
	if got := linksIn(t, ns); !maps.Equal(got, map[string]string{"nr-b": "netagent/nr-b"}) {
		t.Errorf("links of %s: %v", ns, got)
	}
	a.delete("nr-b", "nr-bh")
	if out := run(t, "ip", "netns", "list"); strings.Contains(out, ns) {
		t.Errorf("the netns %s made by the earlier run is left after its last interface: %s\n%s", ns, out, logs.String())
	}
}

// TestTapToVPPUsesItsNameInTheAgentsNamespace: the host link of a VPP TAP
// is made in the agent's namespace under the TAP_TO_VPP value's host name
// before it is moved into the value's namespace (and given back there):
// a link of that name made in the agent's namespace by another value is
// refused, even while the TAP_TO_VPP value waits for its VPP TAP.
func TestTapToVPPUsesItsNameInTheAgentsNamespace(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-tapname")
	a := newAgent(t)
	tap := &linuxif.Interface{Name: "tn-a", HostIfName: "tnx", Type: linuxif.Interface_TAP_TO_VPP, Enabled: true, Namespace: nsRef(ns),
		Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap9"}}}
	end, peer := veth(t, "tn-b", "tnx", "", "tn-c")
	_, _ = a.commit(api.TxnOptions{}, tap, end, peer)
	if st := a.state("tn-a"); st != api.ValueStatePending {
		t.Errorf("TAP_TO_VPP before its VPP TAP: %v, want PENDING", st)
	}
	st := a.s.GetValueStatus(ifplugin.InterfaceKey("tn-b")).GetValue()
	if want := "host_if_name: linux link tnx in default namespace is already used by " + ifplugin.InterfaceKey("tn-a"); st.GetState() != api.ValueStateInvalid || !strings.Contains(st.GetError(), want) {
		t.Errorf("a veth end named as the TAP's host link: %v %q; want INVALID saying %q", st.GetState(), st.GetError(), want)
	}
	if findLink("", "tnx") != nil {
		t.Error("the refused veth end was made")
	}
}

// TestOneLinkUnderTwoNamespaceReferences: a namespace named by two
// references (its name, its file) is two namespaces to the scheduler,
// which compares names as the values spell them; the second value of one
// link there fails saying the link is the other interface's, and the
// link stays the first's.
func TestOneLinkUnderTwoNamespaceReferences(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-tworefs")
	a := newAgent(t)
	first, firstPeer := veth(t, "tr-a", "tr0", ns, "tr-ah")
	a.mustCommit(first, firstPeer)
	second, secondPeer := veth(t, "tr-b", "tr0", "", "tr-bh")
	second.Namespace = &linuxns.NetNamespace{Type: linuxns.NetNamespace_FD, Reference: nsplugin.NetnsDir + "/" + ns}
	if _, err := a.commit(api.TxnOptions{}, second, secondPeer); err == nil {
		t.Error("a second value of the link tr0 under another reference of its namespace: no error")
	}
	st := a.s.GetValueStatus(ifplugin.InterfaceKey("tr-b")).GetValue()
	if want := "link tr0 in the namespace " + nsplugin.NetnsDir + "/" + ns + " is interface tr-a's"; st.GetState() != api.ValueStateFailed || !strings.Contains(st.GetError(), want) {
		t.Errorf("tr-b: %v %q; want FAILED saying %q", st.GetState(), st.GetError(), want)
	}
	if got := linksIn(t, ns); !maps.Equal(got, map[string]string{"tr0": "netagent/tr-a"}) {
		t.Errorf("links of %s: %v, want tr0 of tr-a alone", ns, got)
	}
	if err := a.configured("tr-a", "tr-ah"); err != nil {
		t.Error(err)
	}
}

// TestTapToVPPHandsItsNameOver: a TAP_TO_VPP value moved to another
// namespace while a veth end takes its host name in the first one, in one
// transaction, whichever is first in key order: the host link of the VPP
// TAP ends in the new namespace under its name, the veth end in the old.
func TestTapToVPPHandsItsNameOver(t *testing.T) {
	needRoot(t)
	for _, taker := range []string{"tq-0", "tq-b"} {
		t.Run("taker "+taker, func(t *testing.T) {
			ns1, ns2 := namespace(t, "ifp-tq1"), namespace(t, "ifp-tq2")
			a := newAgent(t)
			afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "tqvpp0").Run() })
			vpp := &api.KVDescriptor{
				Name:        "vpp-interface-standin",
				KeySelector: func(key string) bool { return strings.HasPrefix(key, "config/vpp/v2/interfaces/") },
				Create: func(_ context.Context, key string, v proto.Message) (any, error) {
					out, err := exec.Command("ip", "tuntap", "add", "mode", "tap", "tqvpp0").CombinedOutput()
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
			tap := &linuxif.Interface{Name: "tq-a", HostIfName: "tqvpp0", Type: linuxif.Interface_TAP_TO_VPP, Enabled: true, Namespace: nsRef(ns1),
				Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap0"}}}
			txn := a.s.StartNBTransaction().SetValue("config/vpp/v2/interfaces/tap0", &linuxif.Interface{Name: "tap0"}).
				SetValue(ifplugin.InterfaceKey("tq-a"), tap)
			if _, err := txn.Commit(t.Context(), api.TxnOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := linksIn(t, ns1); !maps.Equal(got, map[string]string{"tqvpp0": "netagent/tq-a"}) {
				t.Fatalf("links of %s: %v", ns1, got)
			}
			moved := proto.Clone(tap).(*linuxif.Interface)
			moved.Namespace = nsRef(ns2)
			end, peer := veth(t, taker, "tqvpp0", ns1, taker+"h")
			seq := a.mustCommit(moved, end, peer)
			t.Logf("executed: %v", a.executed(seq))
			if err := a.configured("tq-a", taker, taker+"h"); err != nil {
				t.Fatal(err)
			}
			if got := linksIn(t, ns1); !maps.Equal(got, map[string]string{"tqvpp0": "netagent/" + taker}) {
				t.Errorf("links of %s: %v, want the veth end %s", ns1, got, taker)
			}
			if l := link(t, ns2, "tqvpp0"); l == nil || l.Type() != "tuntap" || l.Attrs().Alias != "netagent/tq-a" {
				t.Errorf("tqvpp0 in %s: %v, want the TAP's host link", ns2, l)
			}
		})
	}
}

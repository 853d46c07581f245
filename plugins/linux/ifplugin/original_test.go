package ifplugin_test

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// originalsLabel is the microservice label of the original agent (Ligato
// vpp-agent) whose links the tests make, and of the agent that takes them
// over.
const originalsLabel = "otlbl"

// originalLinks makes links as the original agent makes them, with
// netlink, and removes them at cleanup.
type originalLinks struct {
	t  *testing.T
	ns *nsplugin.Manager
}

func newOriginalLinks(t *testing.T) *originalLinks {
	t.Helper()
	m, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return &originalLinks{t: t, ns: m}
}

func (o *originalLinks) handle(ns string) *netlink.Handle {
	o.t.Helper()
	ref := nsplugin.Ref{}
	if ns != "" {
		ref = nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: ns}
	}
	h, err := o.ns.Handle(ref, false)
	if err != nil {
		o.t.Fatal(err)
	}
	return h
}

// finish marks a link with alias, gives it its addresses and sets it up.
func (o *originalLinks) finish(ns, name, alias string, cidrs ...string) {
	o.t.Helper()
	h := o.handle(ns)
	l, err := h.LinkByName(name)
	if err != nil {
		o.t.Fatalf("%s in %q: %v", name, ns, err)
	}
	if err := h.LinkSetAlias(l, alias); err != nil {
		o.t.Fatal(err)
	}
	for _, cidr := range cidrs {
		a, err := netlink.ParseAddr(cidr)
		if err != nil {
			o.t.Fatal(err)
		}
		if err := h.AddrAdd(l, a); err != nil {
			o.t.Fatalf("%s on %s: %v", cidr, name, err)
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		o.t.Fatal(err)
	}
}

// veth makes a veth pair: host in the agent's namespace, peer (its host
// name) in namespace ns ("": the agent's too).
func (o *originalLinks) veth(host, peer, ns string) {
	o.t.Helper()
	afterAgents(o.t, func() { _ = exec.Command("ip", "link", "del", host).Run() })
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: host}, PeerName: peer}
	if ns != "" {
		fd, err := o.ns.Fd(nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: ns}, false)
		if err != nil {
			o.t.Fatal(err)
		}
		veth.PeerNamespace = netlink.NsFd(fd)
	}
	if err := o.handle("").LinkAdd(veth); err != nil {
		o.t.Fatalf("veth %s/%s: %v", host, peer, err)
	}
}

// dummy makes a dummy link; false when the kernel has none.
func (o *originalLinks) dummy(name string) bool {
	o.t.Helper()
	afterAgents(o.t, func() { _ = exec.Command("ip", "link", "del", name).Run() })
	err := o.handle("").LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name}})
	if errors.Is(err, syscall.EOPNOTSUPP) {
		o.t.Logf("this kernel has no dummy links: no dummy %s", name)
		return false
	}
	if err != nil {
		o.t.Fatalf("dummy %s: %v", name, err)
	}
	return true
}

// originalAlias is the alias the original agent labelled label gives a
// link: "/vnf-agent/<label>/" and the parts ("/"-joined).
func originalAlias(label string, parts ...string) string {
	return "/vnf-agent/" + label + "/" + strings.Join(parts, "/")
}

// TestTakeOverTheOriginalsLinks: links the original agent made (a veth
// pair with one end in a named namespace, a dummy when the kernel has
// them, the namespace's lo),
// with its exact aliases, on a host whose NB holds their values: the first
// full resync of this agent (same label) executes only an UPDATE of each
// VETH and DUMMY, which rewrites the alias to ours; the links keep their
// ifindex, the values are CONFIGURED, and a second resync executes
// nothing. The original's alias of lo (LOOPBACK values are found by name
// and not marked) is left as it is. Links of another label, and links of
// the same label that no value matches, are left alone.
func TestTakeOverTheOriginalsLinks(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-orig")
	run(t, "ip", "netns", "add", ns)
	o := newOriginalLinks(t)

	o.veth("ot-host", "eth0", ns)
	o.finish("", "ot-host", originalAlias(originalsLabel, "ot-host", "ot-ns"), "10.38.0.1/24")
	o.finish(ns, "eth0", originalAlias(originalsLabel, "ot-ns", "ot-host"), "10.38.0.2/24")
	withDummy := o.dummy("ot-dummy")
	if withDummy {
		o.finish("", "ot-dummy", originalAlias(originalsLabel, "ot-dummy"), "10.38.1.1/24")
	}
	o.finish(ns, "lo", originalAlias(originalsLabel, "ot-lo"))
	// Another label's, and the same label's that no value matches.
	o.veth("ox-a", "ox-b", "")
	o.finish("", "ox-a", originalAlias("otherlbl", "ox-a", "ox-b"))
	o.finish("", "ox-b", originalAlias("otherlbl", "ox-b", "ox-a"))
	o.veth("oy-a", "oy-b", "")
	o.finish("", "oy-a", originalAlias(originalsLabel, "oy-a", "oy-b"))
	o.finish("", "oy-b", originalAlias(originalsLabel, "oy-b", "oy-a"))

	values := []proto.Message{
		&linuxif.Interface{Name: "ot-host", Type: linuxif.Interface_VETH, Enabled: true, IpAddresses: []string{"10.38.0.1/24"},
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ot-ns"}}},
		&linuxif.Interface{Name: "ot-ns", HostIfName: "eth0", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns),
			IpAddresses: []string{"10.38.0.2/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ot-host"}}},
		&linuxif.Interface{Name: "ot-lo", Type: linuxif.Interface_LOOPBACK, Enabled: true, Namespace: nsRef(ns)},
	}
	type place struct{ ns, host string }
	links := map[string]place{"ot-host": {"", "ot-host"}, "ot-ns": {ns, "eth0"}, "ot-lo": {ns, "lo"}}
	want := []string{"UPDATE " + ifplugin.InterfaceKey("ot-host"), "UPDATE " + ifplugin.InterfaceKey("ot-ns")}
	if withDummy {
		values = append(values, &linuxif.Interface{Name: "ot-dummy", Type: linuxif.Interface_DUMMY, Enabled: true, IpAddresses: []string{"10.38.1.1/24"}})
		links["ot-dummy"] = place{"", "ot-dummy"}
		want = append(want, "UPDATE "+ifplugin.InterfaceKey("ot-dummy"))
		slices.Sort(want)
	}
	index := map[string]int{}
	for name, at := range links {
		index[name] = link(t, at.ns, at.host).Attrs().Index
	}
	foreign := map[string]int{}
	for _, name := range []string{"ox-a", "ox-b", "oy-a", "oy-b"} {
		foreign[name] = link(t, "", name).Attrs().Index
	}

	a := newLabelledAgent(t, originalsLabel)
	ops := fullResync(a, values...)
	slices.Sort(ops)
	if !slices.Equal(ops, want) {
		t.Errorf("the takeover executed %v, want %v", ops, want)
	}
	for name, at := range links {
		l := link(t, at.ns, at.host)
		if l == nil || l.Attrs().Index != index[name] {
			t.Errorf("%s (%s in %q): %v, want the link the original made (index %d)", name, at.host, at.ns, l, index[name])
			continue
		}
		wantAlias := "netagent/" + originalsLabel + "/" + name
		if name == "ot-lo" {
			wantAlias = originalAlias(originalsLabel, "ot-lo")
		}
		if l.Attrs().Alias != wantAlias {
			t.Errorf("%s: alias %q, want %q", name, l.Attrs().Alias, wantAlias)
		}
		if st := a.state(name); st != api.ValueStateConfigured {
			t.Errorf("%s is %v, want CONFIGURED (%v)", name, st, a.s.GetValueStatus(ifplugin.InterfaceKey(name)))
		}
	}
	if got := addrs(t, ns, "eth0"); !slices.Equal(got, []string{"10.38.0.2/24"}) {
		t.Errorf("addresses of eth0 in %s: %v", ns, got)
	}
	for name, idx := range foreign {
		l := link(t, "", name)
		if l == nil || l.Attrs().Index != idx || !strings.HasPrefix(l.Attrs().Alias, "/vnf-agent/") {
			t.Errorf("%s: %v, want it left alone (index %d, the original's alias)", name, l, idx)
		}
	}
	if ops := fullResync(a, values...); len(ops) > 0 {
		t.Errorf("the second resync executed %v", ops)
	}
}

// TestOriginalsVethOfAnotherPeerIsNotAdopted: a veth end whose original
// alias names another peer than the value's is not the value's link: it
// is left alone (same link, same alias), and the value fails,
// non-retriable, saying what the original made the link for.
func TestOriginalsVethOfAnotherPeerIsNotAdopted(t *testing.T) {
	needRoot(t)
	o := newOriginalLinks(t)
	o.veth("om-a", "om-zz", "")
	o.finish("", "om-a", originalAlias(originalsLabel, "om-a", "om-zz"))
	o.finish("", "om-zz", originalAlias(originalsLabel, "om-zz", "om-a"))
	before := link(t, "", "om-a").Attrs().Index
	x, y := vethPair(t, "om-a", "om-b")
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "om-b").Run() })

	a := newLabelledAgent(t, originalsLabel)
	if _, err := a.commit(api.TxnOptions{Resync: api.FullResync}, x, y); err == nil {
		t.Error("the resync succeeded, want om-a to fail")
	}
	l := link(t, "", "om-a")
	if l == nil || l.Attrs().Index != before || l.Attrs().Alias != originalAlias(originalsLabel, "om-a", "om-zz") {
		t.Errorf("om-a: %v, want the original's link left alone (index %d, its alias)", l, before)
	}
	st := a.s.GetValueStatus(ifplugin.InterfaceKey("om-a")).GetValue()
	if st.GetState() != api.ValueStateFailed || !strings.Contains(st.GetError(), "the original agent made it for om-a with om-zz") {
		t.Errorf("om-a: %v, want FAILED saying the original made the link for another peer", st)
	}
}

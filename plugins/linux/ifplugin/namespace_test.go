package ifplugin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// TestCreatedNamespaceInUseIsKept: a namespace the agent created for its
// interfaces is removed with the last of them only when nothing else uses
// it: the operator's links in it keep it (and them).
func TestCreatedNamespaceInUseIsKept(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-nskeep")
	a := newAgent(t)
	x := &linuxif.Interface{Name: "nk0", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns), Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "nk1"}}}
	y := &linuxif.Interface{Name: "nk1", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns), Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "nk0"}}}
	a.mustCommit(x, y)
	run(t, "ip", "netns", "exec", ns, "ip", "link", "add", "op0", "type", "veth", "peer", "name", "op1")
	a.delete("nk0", "nk1")
	if out := run(t, "ip", "netns", "list"); !strings.Contains(out, ns) {
		t.Fatalf("the namespace %s holding the operator's links was removed with the agent's last interface: %s", ns, out)
	}
	if link(t, ns, "op0") == nil || link(t, ns, "nk0") != nil {
		t.Errorf("links of %s: op0 %v, nk0 %v; want the operator's only", ns, link(t, ns, "op0"), link(t, ns, "nk0"))
	}

	// Used again, with nothing else in it at the end: removed.
	run(t, "ip", "-n", ns, "link", "del", "op0")
	a.mustCommit(x, y)
	a.delete("nk0", "nk1")
	if out := run(t, "ip", "netns", "list"); strings.Contains(out, ns) {
		t.Errorf("the namespace %s the agent created and nothing uses is left: %s", ns, out)
	}
}

// TestExistingNamespaceIsNotCreated: an EXISTING interface in a named
// namespace that does not exist fails with a reason saying so, and the
// agent does not create the namespace (which would stay after the value);
// once the operator makes the namespace and the link, a resync adopts it.
func TestExistingNamespaceIsNotCreated(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-exns")
	a := newAgent(t)
	ex := &linuxif.Interface{Name: "exns", HostIfName: "exns0", Type: linuxif.Interface_EXISTING, Enabled: true, Namespace: nsRef(ns),
		IpAddresses: []string{"10.38.0.1/24"}}
	if _, err := a.commit(api.TxnOptions{}, ex); err == nil {
		t.Error("commit of an EXISTING interface in a missing namespace: no error")
	}
	st := a.s.GetValueStatus(ifplugin.InterfaceKey("exns")).GetValue()
	if st.GetState() != api.ValueStateFailed || !strings.Contains(st.GetError(), "netns "+ns+" does not exist (the agent does not create the namespace of a link it did not create") {
		t.Errorf("EXISTING in the missing netns %s: %v %q; want FAILED saying the namespace does not exist", ns, st.GetState(), st.GetError())
	}
	if out := run(t, "ip", "netns", "list"); strings.Contains(out, ns) {
		t.Fatalf("the agent created the namespace %s of an EXISTING link: %s", ns, out)
	}

	run(t, "ip", "netns", "add", ns)
	run(t, "ip", "-n", ns, "link", "add", "exns0", "type", "veth", "peer", "name", "exns1")
	fullResync(a, ex)
	if st := a.state("exns"); st != api.ValueStateConfigured {
		t.Fatalf("EXISTING once its namespace and link exist: %v (%v)", st, a.s.GetValueStatus(ifplugin.InterfaceKey("exns")))
	}
	if got := addrs(t, ns, "exns0"); !slices.Equal(got, []string{"10.38.0.1/24"}) {
		t.Errorf("addresses of exns0 in %s: %v", ns, got)
	}
	a.delete("exns")
	if link(t, ns, "exns0") == nil {
		t.Error("the adopted link went with its value")
	}
}

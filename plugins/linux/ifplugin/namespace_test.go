package ifplugin_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
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

// TestVethPairsDeletedTogether: many veth pairs in a namespace the agent
// created and in the agent's, deleted in one transaction (two waves, each
// a batch the descriptor deletes as link groups), one pair deleted by hand
// before: every delete succeeds, no link is left, an operator's link in
// the agent's namespace stays, and the created namespace goes with its
// last interface.
func TestVethPairsDeletedTogether(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-nsmany")
	a := newAgent(t)
	var values []proto.Message
	var names []string
	pair := func(prefix string, i int, where *linuxns.NetNamespace) {
		for end := range 2 {
			name := fmt.Sprintf("%s%d-%d", prefix, i, end)
			names = append(names, name)
			values = append(values, &linuxif.Interface{Name: name, Type: linuxif.Interface_VETH, Enabled: true, Namespace: where,
				Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: fmt.Sprintf("%s%d-%d", prefix, i, 1-end)}}})
		}
	}
	for i := range 8 {
		pair("tm", i, nsRef(ns))
	}
	for i := range 3 {
		pair("th", i, nil)
	}
	a.mustCommit(values...)
	run(t, "ip", "link", "add", "top0", "type", "veth", "peer", "name", "top1")
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "top0").Run() })
	run(t, "ip", "-n", ns, "link", "del", "tm3-1") // gone before the delete
	run(t, "ip", "link", "del", "th1-0")
	a.delete(names...)
	for _, n := range names {
		if st := a.s.GetValueStatus(ifplugin.InterfaceKey(n)).GetValue(); st.GetError() != "" || (st.GetState() != api.ValueStateRemoved && st.GetState() != api.ValueStateNonexistent) {
			t.Errorf("%s after the delete: %v %q", n, st.GetState(), st.GetError())
		}
		if strings.HasPrefix(n, "th") && findLink("", n) != nil {
			t.Errorf("%s is left", n)
		}
	}
	if out := run(t, "ip", "netns", "list"); strings.Contains(out, ns) {
		t.Errorf("the namespace %s the agent created is left after its last interfaces: %s", ns, out)
	}
	if findLink("", "top0") == nil || findLink("", "top1") == nil {
		t.Error("the operator's pair went with the agent's")
	}
}

package ifplugin_test

import (
	"strings"
	"testing"

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

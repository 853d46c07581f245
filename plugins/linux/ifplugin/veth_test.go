package ifplugin_test

import (
	"crypto/sha1"
	"encoding/hex"
	"net"
	"os/exec"
	"slices"
	"testing"

	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// TestVethPeerNamespaceDeletedByHand: `ip netns del` of the namespace of
// one veth end while the agent runs (holding the namespace open, so the end
// lives on, unreachable): the next full resync makes the pair again, both
// ends under their names, up, with their addresses, and the one after has
// nothing to do. (The end in the agent's namespace was found in sync and
// kept, and the other end's Create made a new pair, its peer under a
// temporary name that nothing renamed.)
func TestVethPeerNamespaceDeletedByHand(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-nsdel")
	a := newReportingAgent(t) // the resync repairs, not a drift repair
	host := &linuxif.Interface{Name: "nd-host", Type: linuxif.Interface_VETH, Enabled: true, IpAddresses: []string{"10.37.0.1/24"},
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "nd-ns"}}}
	inNS := &linuxif.Interface{Name: "nd-ns", HostIfName: "eth0", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns),
		IpAddresses: []string{"10.37.0.2/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "nd-host"}}}
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", "nd-host").Run() })
	a.mustCommit(host, inNS)
	run(t, "ip", "netns", "del", ns)

	ops := fullResync(a, host, inNS)
	t.Logf("resync after ip netns del executed %v", ops)
	l := link(t, "", "nd-host")
	if l == nil || l.Attrs().Flags&net.FlagUp == 0 || l.Attrs().Alias != "netagent/nd-host" {
		t.Errorf("nd-host after the resync: %v, want it up and marked", l)
	}
	if l := link(t, "", tempName("nd-host")); l != nil {
		t.Errorf("nd-host is left under its temporary name: %v", l)
	}
	p := link(t, ns, "eth0")
	if p == nil || p.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("eth0 in %s after the resync: %v, want it up", ns, p)
	}
	if l != nil && p != nil && l.Attrs().ParentIndex != p.Attrs().Index {
		t.Errorf("nd-host's peer is link %d, eth0 in %s is %d: not a pair", l.Attrs().ParentIndex, ns, p.Attrs().Index)
	}
	if got := addrs(t, "", "nd-host"); !slices.Equal(got, []string{"10.37.0.1/24"}) {
		t.Errorf("addresses of nd-host: %v", got)
	}
	if got := addrs(t, ns, "eth0"); !slices.Equal(got, []string{"10.37.0.2/24"}) {
		t.Errorf("addresses of eth0 in %s: %v", ns, got)
	}
	if ops := fullResync(a, host, inNS); len(ops) > 0 {
		t.Errorf("second resync executed %v", ops)
	}
}

// tempName is the temporary name of a veth end (doc.go: "na" and 12 hex
// digits of the SHA-1 of its logical name).
func tempName(logical string) string {
	sum := sha1.Sum([]byte(logical))
	return "na" + hex.EncodeToString(sum[:])[:12]
}

// TestVethLeftUnderTemporaryNames: a pair left under its temporary names,
// not yet marked (a Create that failed right after making it), is taken
// by the next Create of its ends: named, marked, up, nothing else left.
func TestVethLeftUnderTemporaryNames(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	x, y := vethPair(t, "tmp0", "tmp1")
	run(t, "ip", "link", "add", tempName("tmp0"), "type", "veth", "peer", "name", tempName("tmp1"))
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", tempName("tmp0")).Run() })
	before := link(t, "", tempName("tmp0"))
	a.mustCommit(x, y)
	for _, name := range []string{"tmp0", "tmp1"} {
		l := link(t, "", name)
		if l == nil || l.Attrs().Flags&net.FlagUp == 0 || l.Attrs().Alias != "netagent/"+name {
			t.Errorf("%s: %v, want it up and marked", name, l)
		}
	}
	if l := link(t, "", "tmp0"); l == nil || l.Attrs().Index != before.Attrs().Index {
		t.Errorf("tmp0 is %v, want the pair left behind (index %d)", l, before.Attrs().Index)
	}
	for _, name := range []string{"tmp0", "tmp1"} {
		if l := link(t, "", tempName(name)); l != nil {
			t.Errorf("%s is left under its temporary name: %v", name, l)
		}
	}
}

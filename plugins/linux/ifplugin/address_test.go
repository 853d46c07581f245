package ifplugin_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// vethPair returns the values of a veth pair in the agent's namespace,
// removed at cleanup.
func vethPair(t *testing.T, a, b string) (*linuxif.Interface, *linuxif.Interface) {
	t.Helper()
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", a).Run() })
	return &linuxif.Interface{Name: a, Type: linuxif.Interface_VETH, Enabled: true, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: b}}},
		&linuxif.Interface{Name: b, Type: linuxif.Interface_VETH, Enabled: true, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: a}}}
}

// foreignVeth makes a veth pair by hand (a link the agent did not create),
// removed at cleanup.
func foreignVeth(t *testing.T, name string) {
	t.Helper()
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", name).Run() })
	run(t, "ip", "link", "add", name, "type", "veth", "peer", "name", name+"p")
}

func fullResync(a *agent, values ...proto.Message) []string {
	a.t.Helper()
	seq, err := a.commit(api.TxnOptions{Resync: api.FullResync}, values...)
	if err != nil {
		a.t.Fatalf("full resync: %v", err)
	}
	return a.executed(seq)
}

// TestRemovingAPrimaryAddressKeepsTheOthers: the kernel deletes the
// secondary addresses of a subnet with its primary unless the link
// promotes them (promote_secondaries); the agent has it promote them, so
// removing one address removes that address only: another of the agent's,
// or the operator's on an adopted link.
func TestRemovingAPrimaryAddressKeepsTheOthers(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	pa, pb := vethPair(t, "prim0", "prim1")
	pa.IpAddresses = []string{"10.34.0.1/24", "10.34.0.5/24"}
	a.mustCommit(pa, pb)
	if got := addrs(t, "", "prim0"); !slices.Equal(got, []string{"10.34.0.1/24", "10.34.0.5/24"}) {
		t.Fatalf("addresses of prim0: %v", got)
	}
	pa2 := proto.Clone(pa).(*linuxif.Interface)
	pa2.IpAddresses = []string{"10.34.0.5/24"}
	a.mustCommit(pa2)
	if got := addrs(t, "", "prim0"); !slices.Equal(got, []string{"10.34.0.5/24"}) {
		t.Errorf("addresses of prim0 after removing the primary 10.34.0.1/24: %v, want [10.34.0.5/24]", got)
	}
	if ops := fullResync(a, pa2, pb); len(ops) > 0 {
		t.Errorf("resync after removing the primary executed %v", ops)
	}

	// An adopted link: the operator's address is a secondary of the
	// agent's.
	foreignVeth(t, "prim2")
	ex := &linuxif.Interface{Name: "prim-ex", HostIfName: "prim2", Type: linuxif.Interface_EXISTING, Enabled: true, IpAddresses: []string{"10.35.0.1/24"}}
	a.mustCommit(pa2, pb, ex)
	a.waitState("prim-ex", api.ValueStateConfigured)
	a.s.TransactionBarrier()
	run(t, "ip", "addr", "add", "10.35.0.9/24", "dev", "prim2")
	a.delete("prim-ex")
	if got := addrs(t, "", "prim2"); !slices.Equal(got, []string{"10.35.0.9/24"}) {
		t.Errorf("addresses of prim2 after the value was deleted: %v, want the operator's [10.35.0.9/24]", got)
	}
}

// TestForeignAddressesOfAnAdoptedLinkStay: the addresses an EXISTING link
// had before the agent adopted it (or that the operator adds later) are not
// the agent's: neither a resync nor a restart removes them.
func TestForeignAddressesOfAnAdoptedLinkStay(t *testing.T) {
	needRoot(t)
	foreignVeth(t, "fex0")
	run(t, "ip", "addr", "add", "10.70.0.9/24", "dev", "fex0")
	run(t, "ip", "addr", "add", "fd70::9/64", "dev", "fex0")
	ex := &linuxif.Interface{Name: "fex", HostIfName: "fex0", Type: linuxif.Interface_EXISTING, Enabled: true,
		IpAddresses: []string{"10.70.0.1/24", "fd70::1/64"}}
	want := []string{"10.70.0.1/24", "10.70.0.9/24", "fd70::1/64", "fd70::9/64"}

	a := newAgent(t)
	a.mustCommit(ex)
	a.waitState("fex", api.ValueStateConfigured)
	a.s.TransactionBarrier()
	if got := addrs(t, "", "fex0"); !slices.Equal(got, want) {
		t.Fatalf("addresses of fex0 after adoption: %v, want %v", got, want)
	}
	if ops := fullResync(a, ex); len(ops) > 0 {
		t.Errorf("resync executed %v", ops)
	}
	a.close()

	b := newReportingAgent(t) // the resync, not a drift repair, puts the address back
	if ops := fullResync(b, ex); len(ops) > 0 {
		t.Errorf("resync after a restart executed %v", ops)
	}
	if got := addrs(t, "", "fex0"); !slices.Equal(got, want) {
		t.Errorf("addresses of fex0 after the resyncs: %v, want %v", got, want)
	}
	// An address the value lists is the agent's: put back when removed.
	run(t, "ip", "addr", "del", "10.70.0.1/24", "dev", "fex0")
	ops := fullResync(b, ex)
	if !slices.Contains(ops, "CREATE linux/interface/fex/address/static/10.70.0.1/24") || slices.ContainsFunc(ops, func(op string) bool { return strings.HasPrefix(op, "DELETE") }) {
		t.Errorf("resync after the agent's address was removed by hand executed %v, want the address created and nothing deleted", ops)
	}
	if got := addrs(t, "", "fex0"); !slices.Equal(got, want) {
		t.Errorf("addresses of fex0 after that resync: %v, want %v", got, want)
	}
	b.delete("fex")
	if got := addrs(t, "", "fex0"); !slices.Equal(got, []string{"10.70.0.9/24", "fd70::9/64"}) {
		t.Errorf("addresses of fex0 after the value was deleted: %v, want the operator's", got)
	}
}

// TestIPv6AddressesSurviveDisableEnable: the kernel removes the IPv6
// addresses of a link that goes down unless keep_addr_on_down is set; the
// agent sets it on the links it gives IPv6 addresses, so that disabling
// and enabling the interface keeps them, as their values say.
func TestIPv6AddressesSurviveDisableEnable(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	x, y := vethPair(t, "kad0", "kad1")
	x.IpAddresses = []string{"10.36.0.1/24", "fd36::1/64"}
	a.mustCommit(x, y)
	want := []string{"10.36.0.1/24", "fd36::1/64"}
	down := proto.Clone(x).(*linuxif.Interface)
	down.Enabled = false
	a.mustCommit(down)
	if got := addrs(t, "", "kad0"); !slices.Equal(got, want) {
		t.Errorf("addresses of kad0 disabled: %v, want %v", got, want)
	}
	a.mustCommit(x)
	if got := addrs(t, "", "kad0"); !slices.Equal(got, want) {
		t.Errorf("addresses of kad0 enabled again: %v, want %v", got, want)
	}
	if ops := fullResync(a, x, y); len(ops) > 0 {
		t.Errorf("resync executed %v", ops)
	}
}

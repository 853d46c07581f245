package ifplugin_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

func mtuOf(t *testing.T, name string) int {
	t.Helper()
	l := link(t, "", name)
	if l == nil {
		t.Fatalf("no link %s", name)
	}
	return l.Attrs().MTU
}

// TestUnsetMTU: on a link the agent creates (VETH, DUMMY) an unset mtu is
// the kernel's default, 1500, and kept so: a resync sets it back after a
// change by hand (the agent's drift repair only reports here, so that the
// resync does it), and then, like a restart, executes nothing. On a link
// someone else made (EXISTING) an unset mtu leaves the MTU alone.
func TestUnsetMTU(t *testing.T) {
	needRoot(t)
	a := newReportingAgent(t)
	x, y := vethPair(t, "mtu0", "mtu1")
	foreignVeth(t, "mtuex0")
	ex := &linuxif.Interface{Name: "mtu-ex", HostIfName: "mtuex0", Type: linuxif.Interface_EXISTING, Enabled: true}
	a.mustCommit(x, y, ex)
	a.waitState("mtu-ex", api.ValueStateConfigured)
	a.s.TransactionBarrier()
	if ops := fullResync(a, x, y, ex); len(ops) > 0 {
		t.Errorf("resync of an in-sync kernel executed %v", ops)
	}

	run(t, "ip", "link", "set", "mtu0", "mtu", "1234")
	run(t, "ip", "link", "set", "mtuex0", "mtu", "1234")
	if ops := fullResync(a, x, y, ex); len(ops) != 1 || ops[0] != "UPDATE config/linux/interfaces/v2/interface/mtu0" {
		t.Errorf("resync after the MTUs were changed by hand executed %v, want an UPDATE of mtu0 only", ops)
	}
	if got := mtuOf(t, "mtu0"); got != 1500 {
		t.Errorf("MTU of mtu0 after the resync: %d, want 1500 (the default, mtu unset)", got)
	}
	if got := mtuOf(t, "mtuex0"); got != 1234 {
		t.Errorf("MTU of the adopted mtuex0 after the resync: %d, want 1234 (mtu unset: not managed)", got)
	}
	if ops := fullResync(a, x, y, ex); len(ops) > 0 {
		t.Errorf("second resync executed %v", ops)
	}

	// Set, then unset again: back to the default.
	jumbo := proto.Clone(x).(*linuxif.Interface)
	jumbo.Mtu = 9000
	a.mustCommit(jumbo)
	if got := mtuOf(t, "mtu0"); got != 9000 {
		t.Errorf("MTU of mtu0: %d, want 9000", got)
	}
	a.mustCommit(x)
	if got := mtuOf(t, "mtu0"); got != 1500 {
		t.Errorf("MTU of mtu0 with mtu unset again: %d, want 1500", got)
	}
	a.close()

	b := newAgent(t)
	if ops := fullResync(b, x, y, ex); len(ops) > 0 {
		t.Errorf("resync after a restart executed %v", ops)
	}
}

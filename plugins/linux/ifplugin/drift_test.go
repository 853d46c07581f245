package ifplugin_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api/apitest"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// driftDeadline bounds how long a test waits for a change made by hand to
// be seen and repaired. The watcher reports within 200 ms of an event (a
// namespace deletion within a second); the margin is for loaded CI
// machines. The tests log how long it took.
const driftDeadline = 10 * time.Second

// foundOutOfSync returns, from the drift transactions after seq, what they
// found out of sync with the kernel for key: its recorded values (nil value:
// gone).
func (a *agent) foundOutOfSync(after uint64, key string) []api.RecordedKVPair {
	var out []api.RecordedKVPair
	for _, rec := range apitest.DriftTxns(a.s, after) {
		for _, kv := range rec.Values {
			if kv.Key == key {
				out = append(out, kv)
			}
		}
	}
	return out
}

// waitWatched waits until the watcher watches a namespace the values
// committed by transaction seq are in: it reports them then (their refresh
// finds what changed before).
func (a *agent) waitWatched(seq uint64, ns string) {
	a.t.Helper()
	testsupport.Eventually(a.t.(*testing.T), driftDeadline, func() error {
		for _, rec := range apitest.DriftTxns(a.s, seq) {
			if strings.Contains(rec.Description, "changes in the netns "+ns+" before it was watched") {
				return nil
			}
		}
		return fmt.Errorf("the netns %s is not watched yet", ns)
	})
}

// configured says why the interfaces are not all CONFIGURED, or nil.
func (a *agent) configured(names ...string) error {
	for _, n := range names {
		if st := a.state(n); st != api.ValueStateConfigured {
			return fmt.Errorf("%s is %v (%v)", n, st, a.s.GetValueStatus(ifplugin.InterfaceKey(n)).GetValue())
		}
	}
	return nil
}

// driftPair is a veth pair with an end in a namespace of the test's own,
// both with addresses: the first value is the end in the namespace.
func driftPair(t *testing.T, prefix string) (ns string, inNS, host *linuxif.Interface) {
	ns = namespace(t, prefix)
	inNS = &linuxif.Interface{Name: prefix + "-ns", HostIfName: "eth0", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns),
		IpAddresses: []string{"10.77.0.2/24", "fd77::2/64"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: prefix + "-h"}}}
	host = &linuxif.Interface{Name: prefix + "-h", Type: linuxif.Interface_VETH, Enabled: true, Mtu: 1400,
		IpAddresses: []string{"10.77.0.1/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: prefix + "-ns"}}}
	afterAgents(t, func() { _ = exec.Command("ip", "link", "del", host.GetName()).Run() })
	return ns, inNS, host
}

// TestDriftLinkDeletedIsRepaired: a veth end deleted by hand in its
// namespace (its peer goes with it) is seen, found gone by the refresh,
// and the pair is made again with its addresses; the record of the repair
// says what was found and why.
func TestDriftLinkDeletedIsRepaired(t *testing.T) {
	needRoot(t)
	ns, inNS, host := driftPair(t, "dlink")
	a := newAgent(t)
	seq := a.mustCommit(inNS, host)
	a.waitWatched(seq, ns)

	run(t, "ip", "-n", ns, "link", "del", "eth0")
	took := testsupport.Eventually(t, driftDeadline, func() error {
		if findLink(ns, "eth0") == nil || findLink("", host.GetName()) == nil {
			return fmt.Errorf("the pair is not made again")
		}
		return a.configured(inNS.GetName(), host.GetName())
	})
	t.Logf("the deleted veth end was repaired in %v", took)
	// The links are back (and their values were CONFIGURED all along) as
	// soon as the repair has made them: its addresses follow in the same
	// transaction.
	a.s.TransactionBarrier()
	if got := addrs(t, ns, "eth0"); !slices.Equal(got, []string{"10.77.0.2/24", "fd77::2/64"}) {
		t.Errorf("addresses of eth0 after the repair: %v", got)
	}
	if got := addrs(t, "", host.GetName()); !slices.Equal(got, []string{"10.77.0.1/24"}) {
		t.Errorf("addresses of the peer after the repair: %v", got)
	}
	found := a.foundOutOfSync(seq, ifplugin.InterfaceKey(inNS.GetName()))
	if len(found) == 0 || found[0].Value != nil {
		t.Fatalf("drift records of %s: %v, want it found gone", inNS.GetName(), found)
	}
	var described bool
	for _, rec := range apitest.DriftTxns(a.s, seq) {
		described = described || strings.Contains(rec.Description, "link eth0 deleted from the netns "+ns)
	}
	if !described {
		t.Errorf("no drift transaction says why it was reported (link eth0 deleted from the netns %s)", ns)
	}
}

// TestDriftAddressRemovedIsRepaired: an address removed by hand is seen,
// the interface found changed, and the address added again; nothing else
// is touched.
func TestDriftAddressRemovedIsRepaired(t *testing.T) {
	needRoot(t)
	ns, inNS, host := driftPair(t, "daddr")
	a := newAgent(t)
	seq := a.mustCommit(inNS, host)
	a.waitWatched(seq, ns)
	index := link(t, ns, "eth0").Attrs().Index

	run(t, "ip", "-n", ns, "addr", "del", "fd77::2/64", "dev", "eth0")
	run(t, "ip", "addr", "del", "10.77.0.1/24", "dev", host.GetName())
	testsupport.Eventually(t, driftDeadline, func() error {
		for _, name := range []string{inNS.GetName(), host.GetName()} {
			if len(a.foundOutOfSync(seq, ifplugin.InterfaceKey(name))) == 0 {
				return fmt.Errorf("%s not found out of sync yet", name)
			}
		}
		return nil
	})
	took := testsupport.Eventually(t, driftDeadline, func() error {
		if got, err := addrsOf(ns, "eth0"); err != nil || !slices.Equal(got, []string{"10.77.0.2/24", "fd77::2/64"}) {
			return fmt.Errorf("addresses of eth0: %v %v", got, err)
		}
		if got, err := addrsOf("", host.GetName()); err != nil || !slices.Equal(got, []string{"10.77.0.1/24"}) {
			return fmt.Errorf("addresses of %s: %v %v", host.GetName(), got, err)
		}
		return a.configured(inNS.GetName(), host.GetName())
	})
	t.Logf("the removed addresses were repaired in %v", took)
	if l := link(t, ns, "eth0"); l == nil || l.Attrs().Index != index {
		t.Errorf("eth0 was made again (%v) for an address: want the address alone added", l)
	}
	for _, name := range []string{inNS.GetName(), host.GetName()} {
		found := a.foundOutOfSync(seq, ifplugin.InterfaceKey(name))
		if len(found) == 0 || found[0].Value == nil {
			t.Errorf("drift records of %s: %v, want it found changed", name, found)
		}
	}
}

// TestDriftLinkChangedIsRepaired: an MTU changed, a link set down or
// renamed by hand is put back as the value says, in place.
func TestDriftLinkChangedIsRepaired(t *testing.T) {
	needRoot(t)
	ns, inNS, host := driftPair(t, "dchg")
	a := newAgent(t)
	a.mustCommit(inNS, host)
	index := link(t, "", host.GetName()).Attrs().Index

	cases := []struct {
		name string
		args []string
	}{
		{"MTU changed", []string{"ip", "link", "set", host.GetName(), "mtu", "1234"}},
		{"unset MTU changed (kept at 1500)", []string{"ip", "-n", ns, "link", "set", "eth0", "mtu", "1280"}},
		{"set down", []string{"ip", "link", "set", host.GetName(), "down"}},
		{"renamed", []string{"ip", "-n", ns, "link", "set", "eth0", "name", "eth9"}},
	}
	for _, c := range cases {
		run(t, c.args...)
		took := testsupport.Eventually(t, driftDeadline, func() error {
			h, n := findLink("", host.GetName()), findLink(ns, "eth0")
			switch {
			case h == nil || n == nil:
				return fmt.Errorf("links %v (host), %v (eth0 in %s)", h, n, ns)
			case h.Attrs().MTU != 1400 || n.Attrs().MTU != 1500:
				return fmt.Errorf("MTUs %d and %d, want 1400 and 1500", h.Attrs().MTU, n.Attrs().MTU)
			case h.Attrs().Flags&1 == 0 || n.Attrs().Flags&1 == 0:
				return fmt.Errorf("flags %v and %v, want both up", h.Attrs().Flags, n.Attrs().Flags)
			}
			return a.configured(inNS.GetName(), host.GetName())
		})
		t.Logf("%s: repaired in %v", c.name, took)
	}
	a.s.TransactionBarrier() // the last repair, done
	if l := link(t, "", host.GetName()); l.Attrs().Index != index {
		t.Errorf("%s was made again: want changes in place", host.GetName())
	}
	if got := addrs(t, ns, "eth0"); !slices.Equal(got, []string{"10.77.0.2/24", "fd77::2/64"}) {
		t.Errorf("addresses of eth0 after the repairs: %v", got)
	}
}

// TestDriftReportOnly: with repair off (DriftReportOnly) a link changed or
// deleted by hand stays so, its value MISSING with the cause in its
// details and listed among the values out of sync; a resync repairs.
func TestDriftReportOnly(t *testing.T) {
	needRoot(t)
	ns, inNS, host := driftPair(t, "dro")
	// An adopted link in the namespace: it depends on nothing, so that
	// when it is gone its value is MISSING, not waiting for a peer.
	run(t, "ip", "netns", "add", ns)
	run(t, "ip", "-n", ns, "link", "add", "ex0", "type", "veth", "peer", "name", "ex1")
	ex := &linuxif.Interface{Name: "dro-ex", HostIfName: "ex0", Type: linuxif.Interface_EXISTING, Enabled: true, Namespace: nsRef(ns),
		IpAddresses: []string{"10.76.0.1/24"}}
	a := newReportingAgent(t)
	a.waitWatched(a.mustCommit(inNS, host, ex), ns)

	run(t, "ip", "link", "set", host.GetName(), "mtu", "1234")
	run(t, "ip", "-n", ns, "link", "del", "ex0")
	want := map[string]string{
		host.GetName(): "out of sync with the SB: changed (link " + host.GetName() + " of the default namespace changed (mtu 1234",
		ex.GetName():   "out of sync with the SB: gone (link ex0 deleted from the netns " + ns,
	}
	testsupport.Eventually(t, driftDeadline, func() error {
		for name, detail := range want {
			st := a.s.GetValueStatus(ifplugin.InterfaceKey(name)).GetValue()
			if st.GetState() != api.ValueStateMissing || !slices.ContainsFunc(st.GetDetails(), func(d string) bool { return strings.HasPrefix(d, detail) }) {
				return fmt.Errorf("%s: %v, want MISSING with details starting with %q", name, st, detail)
			}
		}
		return nil
	})
	listed := map[string]bool{}
	for _, s := range a.s.ListValueStatuses(ifplugin.InterfaceKey("")) {
		if s.GetValue().GetState() == api.ValueStateMissing {
			listed[s.GetValue().GetKey()] = true
		}
	}
	for name := range want {
		if !listed[ifplugin.InterfaceKey(name)] {
			t.Errorf("ListValueStatuses does not list %s as MISSING: %v", name, listed)
		}
	}
	a.s.TransactionBarrier()
	if got := mtuOf(t, host.GetName()); got != 1234 {
		t.Errorf("MTU of %s: %d, want 1234 left as it is (report only)", host.GetName(), got)
	}
	if err := a.configured(inNS.GetName()); err != nil {
		t.Errorf("the value in sync: %v", err)
	}

	run(t, "ip", "-n", ns, "link", "add", "ex0", "type", "veth", "peer", "name", "ex1")
	if ops := fullResync(a, inNS, host, ex); len(ops) == 0 {
		t.Error("the resync after the reports executed nothing")
	}
	if err := a.configured(inNS.GetName(), host.GetName(), ex.GetName()); err != nil {
		t.Errorf("after the resync: %v", err)
	}
	if got := mtuOf(t, host.GetName()); got != 1400 {
		t.Errorf("MTU of %s after the resync: %d, want 1400", host.GetName(), got)
	}
}

// TestDriftNamespaceDeletedIsRepaired: a named namespace of the agent's
// interfaces deleted with `ip netns del` (no netlink event tells it: here
// both ends of a veth pair are in it) is noticed by the watcher's check of
// the namespaces it watches, and the interfaces in it are made again, in a
// namespace of that name.
func TestDriftNamespaceDeletedIsRepaired(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "dnsdel")
	x := &linuxif.Interface{Name: "nsdel-x", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns),
		IpAddresses: []string{"10.79.0.1/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "nsdel-y"}}}
	y := &linuxif.Interface{Name: "nsdel-y", Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns),
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "nsdel-x"}}}
	a := newAgent(t)
	a.waitWatched(a.mustCommit(x, y), ns)
	seq := apitest.LastSeq(a.s)

	run(t, "ip", "netns", "del", ns)
	took := testsupport.Eventually(t, driftDeadline, func() error {
		if findLink(ns, "nsdel-x") == nil || findLink(ns, "nsdel-y") == nil {
			return fmt.Errorf("no nsdel-x and nsdel-y in a namespace %s", ns)
		}
		return a.configured("nsdel-x", "nsdel-y")
	})
	t.Logf("the deleted namespace was repaired in %v", took)
	a.s.TransactionBarrier() // the repair's addresses follow its links
	if got := addrs(t, ns, "nsdel-x"); !slices.Equal(got, []string{"10.79.0.1/24"}) {
		t.Errorf("addresses of nsdel-x after the repair: %v", got)
	}
	for _, name := range []string{"nsdel-x", "nsdel-y"} {
		if found := a.foundOutOfSync(seq, ifplugin.InterfaceKey(name)); len(found) == 0 || found[0].Value != nil {
			t.Errorf("drift records of %s: %v, want it found gone", name, found)
		}
	}
	var described bool
	for _, rec := range apitest.DriftTxns(a.s, seq) {
		described = described || strings.Contains(rec.Description, "the netns "+ns+" was deleted")
	}
	if !described {
		t.Errorf("no drift transaction says why it was reported (the netns %s was deleted)", ns)
	}
}

// TestDriftOwnChangesAreNotReported: the agent's own changes (veth pairs
// made with addresses, their MTU changed, deleted) are not reported: the
// watcher sees their events as the echo of what the agent applied. A change
// by hand at the end, reported and repaired, shows that the watcher has
// handled every event of the link before it: its drift transaction is the
// only one, and names only that link.
func TestDriftOwnChangesAreNotReported(t *testing.T) {
	needRoot(t)
	a := newAgent(t)
	start := apitest.LastSeq(a.s)
	var ends []proto.Message
	for i := range 10 {
		x, y := vethPair(t, fmt.Sprintf("own%da", i), fmt.Sprintf("own%db", i))
		x.IpAddresses = []string{fmt.Sprintf("10.78.%d.1/24", i)}
		ends = append(ends, x, y)
	}
	a.mustCommit(ends...)
	for i, e := range ends {
		e = proto.Clone(e) // the scheduler keeps the committed values
		e.(*linuxif.Interface).Mtu = 1300
		ends[i] = e
	}
	a.mustCommit(ends...)
	var names []string
	for _, e := range ends[2:] {
		names = append(names, e.(*linuxif.Interface).GetName())
	}
	a.delete(names...)

	marker := ends[0].(*linuxif.Interface)
	run(t, "ip", "link", "set", marker.GetName(), "mtu", "1200")
	testsupport.Eventually(t, driftDeadline, func() error {
		if found := a.foundOutOfSync(start, ifplugin.InterfaceKey(marker.GetName())); len(found) == 0 {
			return fmt.Errorf("the MTU of %s changed by hand is not found yet", marker.GetName())
		}
		if got := mtuOf(t, marker.GetName()); got != 1300 {
			return fmt.Errorf("MTU of %s: %d", marker.GetName(), got)
		}
		return nil
	})
	a.s.TransactionBarrier()
	drifts := apitest.DriftTxns(a.s, start)
	for _, rec := range drifts {
		if !strings.HasPrefix(rec.Description, "drift reported: "+ifplugin.InterfaceKey(marker.GetName())+" (") || strings.Contains(rec.Description, "; ") {
			t.Errorf("drift transaction %d reports more than the link changed by hand: %s", rec.SeqNum, rec.Description)
		}
	}
	if len(drifts) != 1 {
		t.Errorf("%d drift transactions, want 1 (the MTU changed by hand)", len(drifts))
	}
	for _, rec := range drifts {
		var ops, found []string
		for _, op := range rec.Executed {
			if !op.NOOP && op.Key != ifplugin.InterfaceKey(marker.GetName()) {
				ops = append(ops, op.Operation.String()+" "+op.Key)
			}
		}
		for _, kv := range rec.Values {
			if kv.Key != ifplugin.InterfaceKey(marker.GetName()) {
				found = append(found, fmt.Sprintf("%s = %v", kv.Key, kv.Value))
			}
		}
		if len(ops) > 0 || len(found) > 0 {
			t.Errorf("drift transaction %d (%s) found %v and executed %v", rec.SeqNum, rec.Description, found, ops)
		}
	}
	t.Logf("%d drift transactions for 20 veth ends made, changed and deleted and one MTU changed by hand", len(drifts))
}

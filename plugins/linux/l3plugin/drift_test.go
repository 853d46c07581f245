package l3plugin_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api/apitest"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// driftDeadline bounds how long a test waits for a change made by hand to
// be seen and repaired (the watcher reports within 200 ms of an event; the
// margin is for loaded CI machines). The tests log how long it took.
const driftDeadline = 10 * time.Second

// driftScene is a veth pair in the test's namespace, with routes and an ARP
// entry on its first end, as values.
type driftScene struct {
	ix, iy *linuxif.Interface
	routes []*linuxl3.Route
	arp    *linuxl3.ARPEntry
}

func newDriftScene(a *realAgent, routes int) *driftScene {
	sc := &driftScene{
		ix: &linuxif.Interface{Name: "dx", Type: linuxif.Interface_VETH, Enabled: true, Namespace: a.ns,
			IpAddresses: []string{"10.71.0.1/24", "fd71::1/64"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "dy"}}},
		iy: &linuxif.Interface{Name: "dy", Type: linuxif.Interface_VETH, Enabled: true, Namespace: a.ns,
			IpAddresses: []string{"10.71.0.2/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "dx"}}},
		arp: &linuxl3.ARPEntry{Interface: "dx", IpAddress: "10.71.0.9", HwAddress: "02:00:00:00:71:09"},
	}
	sc.routes = append(sc.routes,
		&linuxl3.Route{OutgoingInterface: "dx", DstNetwork: "172.21.0.0/16", Scope: linuxl3.Route_LINK},
		&linuxl3.Route{OutgoingInterface: "dx", DstNetwork: "fd72::/64", GwAddr: "fd71::2"})
	for i := range routes {
		sc.routes = append(sc.routes, &linuxl3.Route{OutgoingInterface: "dx", DstNetwork: fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256), GwAddr: "10.71.0.2", Metric: 10})
	}
	return sc
}

func (sc *driftScene) values() []proto.Message {
	out := []proto.Message{sc.ix, sc.iy, sc.arp}
	for _, r := range sc.routes {
		out = append(out, r)
	}
	return out
}

// inSync says why the scene is not as its values say (every value
// CONFIGURED, every route and the ARP entry in the kernel), or nil.
func (a *realAgent) inSync(sc *driftScene) error {
	for _, v := range sc.values() {
		key := valueKey(a.t, v)
		if st := a.s.GetValueStatus(key).GetValue(); st.GetState() != api.ValueStateConfigured {
			return fmt.Errorf("%s is %v (%v)", key, st.GetState(), st)
		}
	}
	routes, err := a.tryIP("-4", "route", "show", "proto", "181")
	if err != nil {
		return err
	}
	routes6, err := a.tryIP("-6", "route", "show", "proto", "181")
	if err != nil {
		return err
	}
	if n := strings.Count(routes+routes6, "dev dx"); n != len(sc.routes) {
		return fmt.Errorf("%d routes of ours on dx, want %d:\n%s%s", n, len(sc.routes), routes, routes6)
	}
	neigh, err := a.tryIP("neigh", "show", "dev", "dx")
	if err != nil {
		return err
	}
	if !strings.Contains(neigh, "10.71.0.9 lladdr 02:00:00:00:71:09 PERMANENT") {
		return fmt.Errorf("neighbours of dx: %s", neigh)
	}
	return nil
}

// tryIP runs `ip -n <ns> args...` and returns its output or its error.
func (a *realAgent) tryIP(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"-n", a.ns.GetReference()}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ip -n %s %s: %v: %s", a.ns.GetReference(), strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func valueKey(t testing.TB, v proto.Message) string {
	t.Helper()
	var key string
	var err error
	switch v := v.(type) {
	case *linuxif.Interface:
		key = ifplugin.InterfaceKey(v.GetName())
	case *linuxl3.Route:
		key, err = models.LinuxRoute.Key(v)
	case *linuxl3.ARPEntry:
		key, err = models.LinuxARP.Key(v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// found returns what the drift transactions after seq found of key.
func (a *realAgent) found(after uint64, key string) []api.RecordedKVPair {
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

// setUp commits the scene and waits until the watcher watches its
// namespace (it then reports the values there; their refresh finds what
// changed before).
func (a *realAgent) setUp(sc *driftScene) uint64 {
	a.t.Helper()
	a.commit(api.TxnOptions{}, sc.values()...)
	seq := apitest.LastSeq(a.s)
	testsupport.Eventually(a.t, driftDeadline, func() error {
		for _, rec := range apitest.DriftTxns(a.s, seq) {
			if strings.Contains(rec.Description, "before it was watched") {
				return nil
			}
		}
		return fmt.Errorf("the netns %s is not watched yet", a.ns.GetReference())
	})
	if err := a.inSync(sc); err != nil {
		a.t.Fatal(err)
	}
	return apitest.LastSeq(a.s)
}

// TestDriftRouteDeletedIsRepaired: routes deleted by hand (IPv4 via a
// gateway, link scope, IPv6) are seen, found gone and added again, the
// others not touched; a route replaced by hand with another gateway is put
// back.
func TestDriftRouteDeletedIsRepaired(t *testing.T) {
	a := newRealAgentWith(t, "l3drt", realOptions{watch: true})
	sc := newDriftScene(a, 3)
	seq := a.setUp(sc)

	a.ip("route", "del", "10.100.1.0/24")
	a.ip("route", "del", "172.21.0.0/16")
	a.ip("-6", "route", "del", "fd72::/64")
	took := testsupport.Eventually(t, driftDeadline, func() error { return a.inSync(sc) })
	t.Logf("the deleted routes were repaired in %v", took)
	var repaired []string
	for _, rec := range apitest.DriftTxns(a.s, seq) {
		for _, op := range rec.Executed {
			if !op.NOOP {
				repaired = append(repaired, op.Operation.String()+" "+op.Key)
			}
		}
	}
	slices.Sort(repaired)
	want := []string{
		"CREATE " + valueKey(t, sc.routes[2+1]),
		"CREATE " + valueKey(t, sc.routes[1]),
		"CREATE " + valueKey(t, sc.routes[0]),
		"CREATE linux/link-local-route/dx/dest-address/172.21.0.0/16",
	}
	slices.Sort(want)
	if !slices.Equal(repaired, want) {
		t.Errorf("drift repairs executed %v, want %v", repaired, want)
	}
	if f := a.found(seq, valueKey(t, sc.routes[3])); len(f) == 0 || f[0].Value != nil {
		t.Errorf("drift records of the route to 10.100.1.0/24: %v, want it found gone", f)
	}

	// Replaced with another gateway: found changed, put back in place.
	seq = apitest.LastSeq(a.s)
	a.ip("route", "replace", "10.100.2.0/24", "via", "10.71.0.3", "dev", "dx", "metric", "10", "proto", "181")
	took = testsupport.Eventually(t, driftDeadline, func() error {
		out, err := a.tryIP("route", "show", "10.100.2.0/24")
		if err != nil || !strings.Contains(out, "via 10.71.0.2 ") {
			return fmt.Errorf("route to 10.100.2.0/24: %s %v", out, err)
		}
		return a.inSync(sc)
	})
	t.Logf("the replaced route was repaired in %v", took)
	if f := a.found(seq, valueKey(t, sc.routes[4])); len(f) == 0 || f[0].Value == nil {
		t.Errorf("drift records of the route to 10.100.2.0/24: %v, want it found changed", f)
	}
}

// TestDriftNeighbourIsRepaired: an ARP entry deleted by hand, given
// another MAC, or made a dynamic entry, is put back.
func TestDriftNeighbourIsRepaired(t *testing.T) {
	a := newRealAgentWith(t, "l3dnb", realOptions{watch: true})
	sc := newDriftScene(a, 0)
	seq := a.setUp(sc)

	a.ip("neigh", "del", "10.71.0.9", "dev", "dx")
	took := testsupport.Eventually(t, driftDeadline, func() error { return a.inSync(sc) })
	t.Logf("the deleted neighbour was repaired in %v", took)
	if f := a.found(seq, valueKey(t, sc.arp)); len(f) == 0 || f[0].Value != nil {
		t.Errorf("drift records of the ARP entry: %v, want it found gone", f)
	}

	a.ip("neigh", "replace", "10.71.0.9", "lladdr", "02:00:00:00:71:99", "dev", "dx", "nud", "permanent")
	took = testsupport.Eventually(t, driftDeadline, func() error { return a.inSync(sc) })
	t.Logf("the neighbour given another MAC was repaired in %v", took)

	a.ip("neigh", "replace", "10.71.0.9", "lladdr", "02:00:00:00:71:09", "dev", "dx", "nud", "reachable")
	took = testsupport.Eventually(t, driftDeadline, func() error { return a.inSync(sc) })
	t.Logf("the neighbour no longer permanent was repaired in %v", took)
}

// TestDriftLinkDeletedRepairsItsRoutes: a veth end deleted by hand takes
// its routes and ARP entry with it (the kernel says nothing of those): the
// link is reported, found gone, and made again with its peer, addresses,
// routes and ARP entry.
func TestDriftLinkDeletedRepairsItsRoutes(t *testing.T) {
	a := newRealAgentWith(t, "l3dld", realOptions{watch: true})
	sc := newDriftScene(a, 100)
	seq := a.setUp(sc)

	a.ip("link", "del", "dx")
	took := testsupport.Eventually(t, driftDeadline, func() error { return a.inSync(sc) })
	t.Logf("the deleted link and its %d routes were repaired in %v", len(sc.routes), took)
	if f := a.found(seq, ifplugin.InterfaceKey("dx")); len(f) == 0 || f[0].Value != nil {
		t.Errorf("drift records of dx: %v, want it found gone", f)
	}
	a.mustHave("addresses of dx after the repair", []string{"addr", "show", "dev", "dx"}, "10.71.0.1/24", "fd71::1/64")
}

// TestDriftLinkDownRepairsItsRoutes: a link set down by hand loses its
// routes and permanent neighbours in the kernel: it is set up again and
// they are added again.
func TestDriftLinkDownRepairsItsRoutes(t *testing.T) {
	a := newRealAgentWith(t, "l3ddn", realOptions{watch: true})
	sc := newDriftScene(a, 20)
	a.setUp(sc)

	a.ip("link", "set", "dx", "down")
	took := testsupport.Eventually(t, driftDeadline, func() error {
		out, err := a.tryIP("link", "show", "dx")
		if err != nil || !strings.Contains(out, ",UP") {
			return fmt.Errorf("dx is not up: %s %v", out, err)
		}
		return a.inSync(sc)
	})
	t.Logf("the link set down and its routes were repaired in %v", took)
}

// TestDriftReportOnlyRoute: with repair off a route deleted by hand stays
// deleted, MISSING with the cause in its details and listed among the
// values out of sync.
func TestDriftReportOnlyRoute(t *testing.T) {
	a := newRealAgentWith(t, "l3dro", realOptions{watch: true, reportOnly: true})
	sc := newDriftScene(a, 1)
	a.setUp(sc)

	a.ip("route", "del", "10.100.0.0/24")
	key := valueKey(t, sc.routes[2])
	want := "out of sync with the SB: gone (route 10.100.0.0/24 via 10.71.0.2"
	testsupport.Eventually(t, driftDeadline, func() error {
		st := a.s.GetValueStatus(key).GetValue()
		if st.GetState() != api.ValueStateMissing || !slices.ContainsFunc(st.GetDetails(), func(d string) bool { return strings.HasPrefix(d, want) }) {
			return fmt.Errorf("%v, want MISSING with details starting with %q", st, want)
		}
		return nil
	})
	var listed bool
	for _, s := range a.s.ListValueStatuses(models.LinuxRoute.KeyPrefix) {
		listed = listed || (s.GetValue().GetKey() == key && s.GetValue().GetState() == api.ValueStateMissing)
	}
	if !listed {
		t.Errorf("ListValueStatuses does not list %s as MISSING", key)
	}
	a.s.TransactionBarrier()
	if out := a.ip("route", "show", "10.100.0.0/24"); out != "" {
		t.Errorf("the route was added again although the agent only reports drift: %s", out)
	}
	if ops := a.commit(api.TxnOptions{Resync: api.FullResync}, sc.values()...); !slices.Equal(ops, []string{"CREATE " + key}) {
		t.Errorf("the resync after the report executed %v, want the route created", ops)
	}
}

// ownBulk is how many routes TestDriftOwnChangesAreNotReported makes and
// deletes.
const ownBulk = 500

// TestDriftOwnChangesAreNotReported: the agent's own changes (ownBulk
// routes, addresses, an ARP entry, an MTU, a link set down and up, a veth
// pair with routes deleted) cause no drift transaction: the watcher sees
// their events as the echo of what the agent applied. Then changes by hand
// (a route given another gateway, an address removed, a link set down, a
// neighbour deleted), one after the other, are each reported and repaired
// by a drift transaction of their own that names only them: the watcher
// handled every event of the agent's before them.
func TestDriftOwnChangesAreNotReported(t *testing.T) {
	a := newRealAgentWith(t, "l3dow", realOptions{watch: true})
	sc := newDriftScene(a, 2)
	start := a.setUp(sc)

	// Made by the agent.
	bulk := newDriftScene(a, ownBulk+2).routes[4:]
	var values []proto.Message
	for _, r := range bulk {
		values = append(values, r)
	}
	ix := proto.Clone(sc.ix).(*linuxif.Interface)
	ix.IpAddresses = append(ix.IpAddresses, "10.71.1.1/24", "fd73::1/64")
	iy := proto.Clone(sc.iy).(*linuxif.Interface)
	iy.Mtu = 1400
	arp := &linuxl3.ARPEntry{Interface: "dx", IpAddress: "10.71.0.10", HwAddress: "02:00:00:00:71:10"}
	ez := &linuxif.Interface{Name: "ez", Type: linuxif.Interface_VETH, Enabled: true, Namespace: a.ns,
		IpAddresses: []string{"10.74.0.1/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ew"}}}
	ew := &linuxif.Interface{Name: "ew", Type: linuxif.Interface_VETH, Enabled: true, Namespace: a.ns,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ez"}}}
	var onEz []proto.Message
	for i := range 50 {
		onEz = append(onEz, &linuxl3.Route{OutgoingInterface: "ez", DstNetwork: fmt.Sprintf("10.75.%d.0/24", i), GwAddr: "10.74.0.2"})
	}
	a.commit(api.TxnOptions{}, append(values, ix, iy, arp, ez, ew)...)
	a.commit(api.TxnOptions{}, onEz...)
	down := proto.Clone(iy).(*linuxif.Interface)
	down.Enabled = false
	a.commit(api.TxnOptions{}, down)
	a.commit(api.TxnOptions{}, iy)
	// Deleted by the agent: the routes, the pair with its routes (the
	// link takes them), the addresses, the ARP entry; the MTU back.
	txn := a.s.StartNBTransaction()
	for _, v := range append(append(values, arp, ez, ew), onEz...) {
		txn.SetValue(valueKey(t, v), nil)
	}
	txn.SetValue(valueKey(t, sc.ix), sc.ix).SetValue(valueKey(t, sc.iy), sc.iy)
	if _, err := txn.Commit(t.Context(), api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.inSync(sc); err != nil {
		t.Fatal(err)
	}

	// Changed by hand, one after the other: each reported and repaired.
	for _, c := range []struct {
		what   string
		key    string
		change []string
		check  func() error
	}{
		{"route given another gateway", valueKey(t, sc.routes[2]),
			[]string{"route", "replace", "10.100.0.0/24", "via", "10.71.0.3", "dev", "dx", "metric", "10", "proto", "181"},
			func() error {
				if out, err := a.tryIP("route", "show", "10.100.0.0/24"); err != nil || !strings.Contains(out, "via 10.71.0.2 ") {
					return fmt.Errorf("route to 10.100.0.0/24: %s %v", out, err)
				}
				return nil
			}},
		{"address removed", valueKey(t, sc.iy), []string{"addr", "del", "10.71.0.2/24", "dev", "dy"}, func() error {
			if out, err := a.tryIP("addr", "show", "dev", "dy"); err != nil || !strings.Contains(out, "10.71.0.2/24") {
				return fmt.Errorf("addresses of dy: %s %v", out, err)
			}
			return nil
		}},
		{"link set down", valueKey(t, sc.iy), []string{"link", "set", "dev", "dy", "down"}, func() error {
			if out, err := a.tryIP("link", "show", "dev", "dy"); err != nil || !strings.Contains(out, ",UP") {
				return fmt.Errorf("dy: %s %v", out, err)
			}
			return nil
		}},
		{"neighbour deleted", valueKey(t, sc.arp), []string{"neigh", "del", "10.71.0.9", "dev", "dx"}, func() error { return nil }},
	} {
		seq := apitest.LastSeq(a.s)
		a.ip(c.change...)
		took := testsupport.Eventually(t, driftDeadline, func() error {
			if len(a.found(seq, c.key)) == 0 {
				return fmt.Errorf("%s: %s not found out of sync yet", c.what, c.key)
			}
			if err := c.check(); err != nil {
				return err
			}
			return a.inSync(sc)
		})
		t.Logf("%s: reported and repaired in %v", c.what, took)
		a.s.TransactionBarrier()
		for _, rec := range apitest.DriftTxns(a.s, seq) {
			if !strings.HasPrefix(rec.Description, "drift reported: "+c.key+" (") || strings.Contains(rec.Description, "; ") {
				t.Errorf("%s: drift transaction %d reports more than %s: %s", c.what, rec.SeqNum, c.key, rec.Description)
			}
		}
	}

	drifts := apitest.DriftTxns(a.s, start)
	for _, rec := range drifts {
		t.Logf("drift transaction %d: %s", rec.SeqNum, rec.Description)
	}
	t.Logf("%d drift transactions for %d routes and more made and deleted by the agent, and 4 changes by hand", len(drifts), ownBulk)
	if len(drifts) != 4 {
		t.Errorf("%d drift transactions, want 4 (one per change by hand, none for the agent's own changes)", len(drifts))
	}
}

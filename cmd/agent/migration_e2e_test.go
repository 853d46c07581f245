package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// mustIP runs ip and fails the test when it fails.
func mustIP(t *testing.T, args ...string) string {
	t.Helper()
	out, err := ipCmd(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestE2ESwitchFromTheOriginalAgent: a host the original agent (Ligato
// vpp-agent, same label) configured from the etcd data that stays: a veth
// pair with its aliases, addresses, routes it added without a protocol
// (the kernel records boot) and a permanent ARP entry. netagent started
// on that data takes everything over: its first full resync executes only
// the alias rewrites (one UPDATE per veth end) and the route takeovers
// (one CREATE per route, replacing it in place with protocol 181),
// nothing deleted or re-created (same ifindex), every value CONFIGURED;
// a downstream resync afterwards executes nothing.
//
// With linux.adopt_original_routes off the route takeovers fail (the
// original's routes are in the way) while the alias rewrites of the same
// transaction succeed: the record still lists both (the scheduler runs a
// transaction with a failure again, replaying the calls made, and the
// rewrites must be replayed, not skipped: the interface comparator once
// changed its answer after the Update and the record lost them).
func TestE2ESwitchFromTheOriginalAgent(t *testing.T) {
	needRoot(t)
	t.Run("routes adopted", func(t *testing.T) { switchFromTheOriginal(t, true) })
	t.Run("routes not adopted", func(t *testing.T) { switchFromTheOriginal(t, false) })
}

func switchFromTheOriginal(t *testing.T, adoptRoutes bool) {
	n := uniqueNames(t, "mg")
	cfg := testConfig(t)
	cfg.Linux.AdoptOriginalRoutes = adoptRoutes
	label := cfg.Label

	// The etcd data, written while no agent configures Linux.
	noLinux := cfg
	noLinux.Linux.Disabled = true
	a0 := startAgent(t, noLinux, true)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)
	host := veth(n.host, n.peer, "", 0, "172.30.7.1/24")
	peer := veth(n.peer, n.host, n.ns, 0, "172.30.7.2/24")
	viaGW := &linuxl3.Route{OutgoingInterface: n.peer, DstNetwork: "10.207.0.0/16", GwAddr: "172.30.7.1", Scope: linuxl3.Route_GLOBAL}
	onLink := &linuxl3.Route{OutgoingInterface: n.peer, DstNetwork: "10.208.0.0/24", Scope: linuxl3.Route_LINK, Metric: 20}
	neigh := &linuxl3.ARPEntry{Interface: n.peer, IpAddress: "172.30.7.9", HwAddress: "02:00:00:00:07:09"}
	keys := map[string]string{
		"host": kv.put(host), "peer": kv.put(peer), "viaGW": kv.put(viaGW), "onLink": kv.put(onLink), "arp": kv.put(neigh),
	}
	if err := a0.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// The kernel as the original agent left it.
	original := func(parts ...string) string { return "/vnf-agent/" + label + "/" + strings.Join(parts, "/") }
	mustIP(t, "netns", "add", n.ns)
	mustIP(t, "link", "add", n.host, "type", "veth", "peer", "name", n.peer, "netns", n.ns)
	mustIP(t, "link", "set", n.host, "alias", original(n.host, n.peer))
	mustIP(t, "-n", n.ns, "link", "set", n.peer, "alias", original(n.peer, n.host))
	mustIP(t, "addr", "add", "172.30.7.1/24", "dev", n.host)
	mustIP(t, "-n", n.ns, "addr", "add", "172.30.7.2/24", "dev", n.peer)
	mustIP(t, "link", "set", n.host, "up")
	mustIP(t, "-n", n.ns, "link", "set", n.peer, "up")
	// The original's RouteAdd gave no protocol (boot), the value's scope
	// and its metric as the priority.
	mustIP(t, "-n", n.ns, "route", "add", "10.207.0.0/16", "via", "172.30.7.1", "dev", n.peer, "scope", "global", "proto", "boot")
	mustIP(t, "-n", n.ns, "route", "add", "10.208.0.0/24", "dev", n.peer, "scope", "link", "metric", "20", "proto", "boot")
	mustIP(t, "-n", n.ns, "neigh", "add", "172.30.7.9", "lladdr", "02:00:00:00:07:09", "dev", n.peer, "nud", "permanent")
	hostIdx, peerIdx := ifindex(t, "", n.host), ifindex(t, n.ns, n.peer)

	a := startAgent(t, cfg, true)
	var resync *txnRecord
	for _, rec := range a.history("") {
		if rec.Type == "NB transaction" && rec.Resync == "full resync" {
			resync = &rec
			break
		}
	}
	if resync == nil {
		t.Fatalf("no full resync in the history: %+v", a.history(""))
	}
	var executed []string
	for _, op := range resync.Executed {
		// A property (the link-local route's) is recorded, not executed.
		if !op.has("NOOP") && !op.has("PROPERTY") {
			executed = append(executed, fmt.Sprintf("%s %s %s %s", op.Operation, op.Key, op.NewState, op.Error))
		}
	}
	routeResult := "CONFIGURED "
	if !adoptRoutes {
		routeResult = "FAILED "
		// The error's end: why the route in the way was not taken over.
		for i, e := range executed {
			if strings.HasPrefix(e, "CREATE ") && strings.HasSuffix(e, "adopting the original agent's routes is off") {
				executed[i] = e[:strings.Index(e, " FAILED ")] + " FAILED "
			}
		}
	}
	want := []string{
		"CREATE " + keys["onLink"] + " " + routeResult,
		"CREATE " + keys["viaGW"] + " " + routeResult,
		"UPDATE " + keys["host"] + " CONFIGURED ",
		"UPDATE " + keys["peer"] + " CONFIGURED ",
	}
	slices.Sort(executed)
	slices.Sort(want)
	if !slices.Equal(executed, want) {
		t.Errorf("the first full resync executed\n  %s\nwant\n  %s", strings.Join(executed, "\n  "), strings.Join(want, "\n  "))
	}
	for name, key := range keys {
		want := []string{"CONFIGURED"}
		if !adoptRoutes && (name == "viaGW" || name == "onLink") {
			want = []string{"FAILED", "RETRYING"} // retried meanwhile, failing again
		}
		if st := a.status(key); !slices.Contains(want, st.Value.State) {
			t.Errorf("%s: %+v, want %s", key, st.Value, strings.Join(want, " or "))
		}
	}

	if h, p := ifindex(t, "", n.host), ifindex(t, n.ns, n.peer); h != hostIdx || p != peerIdx {
		t.Errorf("the veth pair was re-created: ifindex %s/%s before, %s/%s after", hostIdx, peerIdx, h, p)
	}
	for _, l := range []struct{ ns, link string }{{"", n.host}, {n.ns, n.peer}} {
		out, err := nsLink(l.ns, l.link)
		if want := "alias netagent/" + label + "/" + l.link; err != nil || !strings.Contains(out, want) {
			t.Errorf("%s: %q (%v), want %q", l.link, out, err, want)
		}
	}
	if !adoptRoutes {
		// The original's routes stay as they were, ours are not added.
		boot := mustIP(t, "-n", n.ns, "route", "show", "proto", "boot")
		if !strings.Contains(boot, "10.207.0.0/16 via 172.30.7.1") || !strings.Contains(boot, "10.208.0.0/24 dev "+n.peer+" scope link metric 20") {
			t.Errorf("the original's routes, not adopted, changed:\n%s", boot)
		}
		return
	}
	ours, err := ourRoutes(n.ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"10.207.0.0/16 via 172.30.7.1 dev " + n.peer, "10.208.0.0/24 dev " + n.peer + " scope link metric 20"} {
		if !strings.Contains(ours, line) {
			t.Errorf("routes of ours: %q, want %q", ours, line)
		}
	}
	if boot := mustIP(t, "-n", n.ns, "route", "show", "proto", "boot"); strings.Contains(boot, "10.207.") || strings.Contains(boot, "10.208.") {
		t.Errorf("the original's routes are still there beside ours:\n%s", boot)
	}
	if nb := mustIP(t, "-n", n.ns, "neigh", "show", "dev", n.peer); !strings.Contains(nb, "172.30.7.9 lladdr 02:00:00:00:07:09 PERMANENT") {
		t.Errorf("ARP entry: %q", nb)
	}
	if rec := a.downstreamResync(); len(rec.Executed) != 0 {
		t.Errorf("a downstream resync after the switch executed %+v", rec.Executed)
	}
}

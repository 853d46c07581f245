package agentctl_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestAgentctlDrift: a veth pair the agent made, deleted with ip link del
// behind its back. Repaired (the default): the pair comes back with its
// addresses, the route and the ARP entry on it, in a drift repair
// transaction of the history. Reported only (scheduler.drift: report):
// values --state MISSING lists both ends and the route on them with the
// cause, the kernel stays without them until config resync.
func TestAgentctlDrift(t *testing.T) {
	t.Run("repair", func(t *testing.T) {
		n := uniqueNames(t, "dr")
		a := startAgent(t, agentOptions{InitFile: writeFile(t, "init.yaml", vethRouteDoc(t, n, 74))})
		env := a.env()
		const route = "10.200.0.0/16 via 172.30.74.1 dev eth0"
		peerKey := "config/linux/interfaces/v2/interface/" + n.Peer
		routeKey := "config/linux/l3/v2/route/10.200.0.0/16/" + n.Peer
		waitIP(t, route, "-n", n.NS, "route", "show", "proto", "181")
		before := ifindexIn(t, n.NS, "eth0")

		if out, err := ip("-n", n.NS, "link", "del", "eth0"); err != nil { // the pair goes
			t.Fatal(out, err)
		}
		waitIP(t, route, "-n", n.NS, "route", "show", "proto", "181")
		waitIP(t, "172.30.74.9 lladdr 02:00:00:00:50:09 PERMANENT", "-n", n.NS, "neigh", "show", "dev", "eth0")
		waitIP(t, "172.30.74.1/24", "-o", "addr", "show", "dev", n.Host)
		if after := ifindexIn(t, n.NS, "eth0"); after == before {
			t.Errorf("eth0 has the ifindex %s it had before it was deleted", after)
		}
		// The repair is done once its values are CONFIGURED again.
		waitCtl(t, "no value MISSING or PENDING", env, func(out string, code int) bool { return code == 0 && out == "No values.\n" },
			"values", "--state", "MISSING,PENDING,FAILED")
		var h historyJSON
		parseJSON(t, "config history -o json", mustCtl(t, env, "config", "history", "-o", "json"), &h)
		i := slices.IndexFunc(h.Transactions, func(txn txnJSON) bool {
			return txn.Type == "drift repair" && slices.ContainsFunc(txn.Executed, func(op opJSON) bool {
				return op.Operation == "CREATE" && op.Key == peerKey && op.NewState == "CONFIGURED"
			})
		})
		if i < 0 {
			t.Fatalf("config history -o json: no drift repair that created %s again: %+v", peerKey, h.Transactions)
		}
		if !slices.ContainsFunc(h.Transactions[i].Executed, func(op opJSON) bool { return op.Key == routeKey && op.NewState == "CONFIGURED" }) {
			t.Errorf("drift repair #%d did not create the route again: %+v", h.Transactions[i].SeqNum, h.Transactions[i].Executed)
		}
		if !strings.Contains(h.Transactions[i].Description, "drift reported: ") {
			t.Errorf("drift repair #%d: description %q", h.Transactions[i].SeqNum, h.Transactions[i].Description)
		}
	})

	t.Run("report", func(t *testing.T) {
		n := uniqueNames(t, "dp")
		a := startAgent(t, agentOptions{InitFile: writeFile(t, "init.yaml", vethRouteDoc(t, n, 75)), Config: "scheduler: {drift: report}\n"})
		env := a.env()
		const route = "10.200.0.0/16 via 172.30.75.1 dev eth0"
		hostKey := "config/linux/interfaces/v2/interface/" + n.Host
		peerKey := "config/linux/interfaces/v2/interface/" + n.Peer
		routeKey := "config/linux/l3/v2/route/10.200.0.0/16/" + n.Peer
		waitIP(t, route, "-n", n.NS, "route", "show", "proto", "181")
		waitWatched(t, env, n.NS) // then the deletion is the cause told

		if out, err := ip("link", "del", "dev", n.Host); err != nil { // the pair goes
			t.Fatal(out, err)
		}
		missing := waitCtl(t, "both ends MISSING", env, func(out string, code int) bool {
			return code == 0 && strings.Contains(out, hostKey) && strings.Contains(out, peerKey)
		}, "values", "--state", "MISSING")
		for key, cause := range map[string]string{
			hostKey: `link ` + n.Host + ` deleted from the default namespace \(or moved out\)`,
			peerKey: `link eth0 deleted from the netns ` + regexp.QuoteMeta(n.NS) + ` \(or moved out\)`,
		} {
			want := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + ` +MISSING +CREATE +out of sync with the SB: gone \(` + cause + `\)$`)
			if !want.MatchString(missing) {
				t.Errorf("values --state MISSING: no row matching %s:\n%s", want, missing)
			}
		}
		// Not repaired: the kernel is without the pair; the route, which the
		// kernel flushed with its link, is found gone too.
		for _, args := range [][]string{{"link", "show", "dev", n.Host}, {"-n", n.NS, "link", "show", "dev", "eth0"}} {
			if out, err := ip(args...); err == nil {
				t.Errorf("ip %s with drift reported only: %q, want no such link", strings.Join(args, " "), out)
			}
		}
		if out := mustCtl(t, env, "values", "linux.l3.route"); !regexp.MustCompile(regexp.QuoteMeta(routeKey) + ` +MISSING +CREATE +out of sync with the SB: gone \(link `).MatchString(out) {
			t.Errorf("values linux.l3.route: %q, want the route MISSING, gone with its link", out)
		}

		// A resync repairs it.
		mustCtl(t, env, "config", "resync")
		waitIP(t, route, "-n", n.NS, "route", "show", "proto", "181")
		waitCtl(t, "no value MISSING or PENDING", env, func(out string, code int) bool { return code == 0 && out == "No values.\n" },
			"values", "--state", "MISSING,PENDING,FAILED")
	})
}

// waitWatched waits until the agent's drift watcher watches the named
// namespace ns: once subscribed there, it reports every value of ns ("changes
// in the netns ns before it was watched"), which a drift repair transaction
// of the history then names.
func waitWatched(t *testing.T, env []string, ns string) {
	t.Helper()
	subscribed := "(changes in the netns " + ns + " before it was watched)"
	waitCtl(t, "the drift watcher watching "+ns, env, func(out string, code int) bool {
		var h historyJSON
		if code != 0 || json.Unmarshal([]byte(out), &h) != nil {
			return false
		}
		return slices.ContainsFunc(h.Transactions, func(txn txnJSON) bool {
			return txn.Type == "drift repair" && strings.Contains(txn.Description, subscribed)
		})
	}, "config", "history", "-o", "json")
}

// ifindexIn returns the ifindex of a link in a namespace (`ip -o link`
// begins its line with it; ip may also write "Error: Peer netns reference
// is invalid" of a veth end, and exit 0).
func ifindexIn(t *testing.T, ns, link string) string {
	t.Helper()
	out, err := ip("-n", ns, "-o", "link", "show", "dev", link)
	m := regexp.MustCompile(`(?m)^(\d+): ` + regexp.QuoteMeta(link) + `[@:]`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("the ifindex of %s in %s: %q %v", link, ns, out, err)
	}
	return m[1]
}

package agentctl_test

// config: plan, update, get, history, resync, watch and delete against one
// agent, in this order, each step checked in the kernel where it changes
// something.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configDoc is the part of a configuration document (config get) the tests
// look at.
type configDoc struct {
	LinuxConfig struct {
		Interfaces []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"interfaces"`
		Routes []struct {
			DstNetwork        string `json:"dst_network"`
			GwAddr            string `json:"gw_addr"`
			OutgoingInterface string `json:"outgoing_interface"`
		} `json:"routes"`
		ARPEntries []struct {
			IPAddress string `json:"ip_address"`
			HwAddress string `json:"hw_address"`
		} `json:"arp_entries"`
	} `json:"linux_config"`
}

// planJSON is the JSON output of config plan.
type planJSON struct {
	Changes    int         `json:"changes"`
	Operations []plannedOp `json:"operations"`
}

// plannedOp is an operation of planJSON.
type plannedOp struct {
	Operation string          `json:"operation"`
	Key       string          `json:"key"`
	Flags     []string        `json:"flags"`
	Value     json.RawMessage `json:"value"`
	Error     string          `json:"error"`
}

// historyJSON is the JSON output of config history.
type historyJSON struct {
	History struct {
		OldestSeq uint64 `json:"oldest_seq"`
		NewestSeq uint64 `json:"newest_seq"`
	} `json:"history"`
	Transactions []txnJSON `json:"transactions"`
}

// txnJSON is a transaction of the history (and of resync's output).
type txnJSON struct {
	SeqNum      uint64   `json:"seq_num"`
	Type        string   `json:"type"`
	Resync      string   `json:"resync"`
	Description string   `json:"description"`
	Executed    []opJSON `json:"executed"`
}

// opJSON is an executed operation of a transaction.
type opJSON struct {
	Operation string `json:"operation"`
	Key       string `json:"key"`
	NewState  string `json:"new_state"`
}

// statusEvent is a line of config watch -o json.
type statusEvent struct {
	Time          string `json:"time"`
	Key           string `json:"key"`
	State         string `json:"state"`
	LastOperation string `json:"last_operation"`
}

// withoutRoutes returns a document of vethRouteDoc without its routes and
// ARP entries (the interfaces only).
func withoutRoutes(t *testing.T, doc string) string {
	t.Helper()
	i := strings.Index(doc, "\n  routes:")
	if i < 0 {
		t.Fatalf("no routes in the document:\n%s", doc)
	}
	return doc[:i+1]
}

// nbHistoryRows keeps the header and the NB transactions of a config
// history table, their sequence numbers replaced by <SEQ> (SB
// notifications, and so the numbers, depend on the kernel's timing).
func nbHistoryRows(table string) string {
	var out strings.Builder
	seq := regexp.MustCompile(`^\d+`)
	for i, line := range lines(table) {
		if i == 0 || strings.Contains(line, "NB transaction") {
			out.WriteString(seq.ReplaceAllString(line, "<SEQ>"))
		}
	}
	return out.String()
}

// TestAgentctlConfig: the life of a configuration through agentctl config
// (gRPC), checked in the kernel: plan (exit 2, nothing applied), update
// --wait (applied when it returns), plan again (exit 0), plans of invalid
// and pending values (1 and 2), get (a document that plans to no changes),
// history (the list, one transaction, its log), resync (nothing when in
// sync, repairs the kernel otherwise), update --replace (removes what the
// document no longer lists) seen by config watch, delete (removes the
// veth) seen by config watch, and update from stdin without --wait.
func TestAgentctlConfig(t *testing.T) {
	n := uniqueNames(t, "cf")
	a := startAgent(t, agentOptions{})
	env := a.env()
	ph := append(a.placeholders(), n.placeholders()...)
	content := vethRouteDoc(t, n, 71)
	doc := writeFile(t, "veth-route.yaml", content)
	routeKey := "config/linux/l3/v2/route/10.200.0.0/16/" + n.Peer
	arpKey := "config/linux/l3/v2/arp/" + n.Peer + "/172.30.71.9"
	hostKey := "config/linux/interfaces/v2/interface/" + n.Host
	const route = "10.200.0.0/16 via 172.30.71.1 dev eth0"
	var updateSeq string

	t.Run("plan before update: the operations, exit 2", func(t *testing.T) {
		stdout, stderr, code := agentctl(t, env, "config", "plan", doc)
		if code != 2 || stderr != "" {
			t.Fatalf("exit %d, stderr %q; want 2 and nothing", code, stderr)
		}
		golden(t, "config/plan", squeezeColumns(normalize(planRevisions.ReplaceAllString(stdout, "$1 <REV>"), ph...)))

		stdout, _, code = agentctl(t, env, "config", "plan", doc, "-o", "json")
		if code != 2 {
			t.Fatalf("plan -o json: exit %d, want 2", code)
		}
		var plan planJSON
		parseJSON(t, "plan -o json", stdout, &plan)
		if plan.Changes == 0 || plan.Changes != len(plan.Operations) {
			t.Errorf("plan -o json: changes %d, %d operations", plan.Changes, len(plan.Operations))
		}
		i := slices.IndexFunc(plan.Operations, func(op plannedOp) bool { return op.Key == routeKey })
		if i < 0 {
			t.Fatalf("plan -o json: no operation on %s:\n%s", routeKey, stdout)
		}
		var value struct {
			GwAddr string `json:"gw_addr"`
		}
		parseJSON(t, "the planned route", string(plan.Operations[i].Value), &value)
		if plan.Operations[i].Operation != "CREATE" || value.GwAddr != "172.30.71.1" {
			t.Errorf("plan -o json: %s: %s %s, want CREATE of the route via 172.30.71.1", routeKey, plan.Operations[i].Operation, plan.Operations[i].Value)
		}
		if out, err := ip("link", "show", "dev", n.Host); err == nil {
			t.Errorf("the plan created %s: %s", n.Host, out)
		}
	})

	t.Run("update --wait: applied when it returns", func(t *testing.T) {
		out := mustCtl(t, env, "config", "update", doc, "--wait")
		m := regexp.MustCompile(`^update of 5 values: transaction #(\d+) done\n$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("update --wait: %q, want \"update of 5 values: transaction #N done\"", out)
		}
		updateSeq = m[1]
		// No poll: --wait returns once the transaction is done.
		for _, c := range []struct {
			want string
			args []string
		}{
			{route, []string{"-n", n.NS, "route", "show", "proto", "181"}},
			{"172.30.71.9 lladdr 02:00:00:00:50:09 PERMANENT", []string{"-n", n.NS, "neigh", "show", "dev", "eth0"}},
			{"172.30.71.1/24", []string{"-o", "addr", "show", "dev", n.Host}},
		} {
			if out, err := ip(c.args...); err != nil || !strings.Contains(out, c.want) {
				t.Errorf("ip %s right after update --wait: %q %v, want %q", strings.Join(c.args, " "), out, err, c.want)
			}
		}
	})

	t.Run("plan after update: no changes, exit 0", func(t *testing.T) {
		if out := mustCtl(t, env, "config", "plan", doc); out != "No changes: the agent already has this configuration.\n" {
			t.Errorf("plan: %q", out)
		}
		var plan planJSON
		parseJSON(t, "plan -o json", mustCtl(t, env, "config", "plan", doc, "-o", "json"), &plan)
		if plan.Changes != 0 || plan.Operations == nil || len(plan.Operations) != 0 {
			t.Errorf("plan -o json: %+v, want 0 changes and an empty list", plan)
		}
	})

	t.Run("plan of invalid and pending values", func(t *testing.T) {
		routeDoc := func(dst, extra string) string {
			return writeFile(t, "route.yaml", fmt.Sprintf("linux_config:\n  routes:\n    - outgoing_interface: %s\n      dst_network: %s\n%s",
				n.Peer, dst, extra))
		}
		// Refused by the model: exit 1 before the agent is asked.
		wantError(t, env, "", []string{"config", "plan", routeDoc("10.201.0.0/16", "      gw_addr: 300.1.1.1\n")},
			"linux_config.routes[0]", "gw_addr", `"300.1.1.1" is not an IP address`)
		// Refused by the route descriptor: the plan shows the failing VALIDATE, exit 1.
		stdout, stderr, code := agentctl(t, env, "config", "plan", routeDoc("10.202.0.0/16", "      gw_addr: 172.30.71.1\n      scope: HOST\n"))
		if code != 1 {
			t.Errorf("plan of an invalid route: exit %d, want 1", code)
		}
		checkErrorLine(t, []string{"config", "plan"}, stdout, stderr)
		if !strings.Contains(stderr, "1 of 1 operation would fail") ||
			!regexp.MustCompile(`VALIDATE\s+config/linux/l3/v2/route/10.202.0.0/16/\S+\s+NOOP\s+invalid value \(fields gw_addr\): a route of scope HOST cannot have a gateway`).MatchString(stdout) {
			t.Errorf("plan of an invalid route: stdout %q, stderr %q; want the VALIDATE with its error", stdout, stderr)
		}
		// Pending (its interface does not exist): a change all the same, exit 2.
		pending := writeFile(t, "pending.yaml", "linux_config:\n  routes:\n    - outgoing_interface: nosuch0\n      dst_network: 10.203.0.0/16\n")
		stdout, _, code = agentctl(t, env, "config", "plan", pending)
		if code != 2 || !strings.Contains(stdout, "IS-PENDING") || !strings.Contains(stdout, "1 would wait for dependencies") {
			t.Errorf("plan of a pending route: exit %d, %q; want 2 and IS-PENDING", code, stdout)
		}
		if out := mustCtl(t, env, "config", "get"); strings.Contains(out, "10.202.0.0/16") || strings.Contains(out, "10.203.0.0/16") {
			t.Errorf("config get after plans: %q holds a planned route", out)
		}
	})

	t.Run("get: the desired configuration as a document", func(t *testing.T) {
		out := mustCtl(t, env, "config", "get")
		var got configDoc
		parseYAML(t, "config get", out, &got)
		var names []string
		for _, i := range got.LinuxConfig.Interfaces {
			names = append(names, i.Name)
		}
		slices.Sort(names)
		if want := []string{"app-lo", n.Host, n.Peer}; !slices.Equal(names, want) {
			t.Errorf("config get: interfaces %q, want %q", names, want)
		}
		if r := got.LinuxConfig.Routes; len(r) != 1 || r[0].DstNetwork != "10.200.0.0/16" || r[0].GwAddr != "172.30.71.1" || r[0].OutgoingInterface != n.Peer {
			t.Errorf("config get: routes %+v", r)
		}
		if e := got.LinuxConfig.ARPEntries; len(e) != 1 || e[0].IPAddress != "172.30.71.9" || e[0].HwAddress != "02:00:00:00:50:09" {
			t.Errorf("config get: ARP entries %+v", e)
		}
		if yamlOut := mustCtl(t, env, "config", "get", "-o", "yaml"); yamlOut != out {
			t.Errorf("config get -o yaml differs from the table output:\n%s", lineDiff(out, yamlOut))
		}
		var fromJSON configDoc
		parseJSON(t, "config get -o json", mustCtl(t, env, "config", "get", "-o", "json"), &fromJSON)
		if !reflect.DeepEqual(fromJSON, got) {
			t.Errorf("config get -o json: %+v\nYAML: %+v", fromJSON, got)
		}
		// The document reads back: planning it changes nothing.
		if out := mustCtl(t, env, "config", "plan", writeFile(t, "got.yaml", out)); !strings.HasPrefix(out, "No changes") {
			t.Errorf("plan of config get's document: %q", out)
		}
	})

	t.Run("history: the list, one transaction, its log", func(t *testing.T) {
		if updateSeq == "" {
			t.Skip("no update transaction")
		}
		list := mustCtl(t, env, "config", "history")
		if !regexp.MustCompile(`(?m)^` + updateSeq + `\s+NB transaction\s+.*\s5\s+\d+\s+0\s+gRPC update$`).MatchString(list) {
			t.Errorf("config history has no row of transaction #%s (gRPC update, 5 values, 0 failed):\n%s", updateSeq, list)
		}
		golden(t, "config/history", squeezeColumns(normalize(nbHistoryRows(list), ph...)))

		one := mustCtl(t, env, "config", "history", updateSeq)
		if !strings.HasPrefix(one, "Transaction #"+updateSeq+": NB transaction\nDescription:  gRPC update\n") {
			t.Errorf("config history %s: %q", updateSeq, one)
		}
		golden(t, "config/history-seq", squeezeColumns(normalize(strings.Replace(one, "#"+updateSeq, "#<SEQ>", 1), ph...)))

		details := mustCtl(t, env, "config", "history", updateSeq, "--details")
		for _, want := range []string{"| Transaction #" + updateSeq, "* transaction arguments:", "- description: gRPC update",
			"* planned operations:", "* executed operations", "- key: " + routeKey, "+--- #" + updateSeq + " took"} {
			if !strings.Contains(details, want) {
				t.Errorf("config history %s --details does not contain %q:\n%s", updateSeq, want, details)
			}
		}

		var h historyJSON
		parseJSON(t, "config history SEQ -o json", mustCtl(t, env, "config", "history", updateSeq, "-o", "json"), &h)
		if len(h.Transactions) != 1 || fmt.Sprint(h.Transactions[0].SeqNum) != updateSeq || h.Transactions[0].Description != "gRPC update" {
			t.Fatalf("config history %s -o json: %+v", updateSeq, h.Transactions)
		}
		executed := map[string]string{}
		for _, op := range h.Transactions[0].Executed {
			executed[op.Key] = op.Operation + " " + op.NewState
		}
		for _, key := range []string{routeKey, arpKey, hostKey} {
			if executed[key] != "CREATE CONFIGURED" {
				t.Errorf("config history %s -o json: %s: %q, want CREATE CONFIGURED", updateSeq, key, executed[key])
			}
		}
		var last historyJSON
		parseYAML(t, "config history --last 2 -o yaml", mustCtl(t, env, "config", "history", "--last", "2", "-o", "yaml"), &last)
		if len(last.Transactions) != 2 || last.Transactions[1].SeqNum != last.History.NewestSeq || last.History.OldestSeq != 1 {
			t.Errorf("config history --last 2 -o yaml: %+v", last)
		}
	})

	t.Run("resync: nothing when in sync; drift repaired without it", func(t *testing.T) {
		out := mustCtl(t, env, "config", "resync")
		if !regexp.MustCompile(`^Transaction #\d+: NB transaction \(downstream resync\)\n(.*\n)*Executed: +nothing\n$`).MatchString(out) {
			t.Errorf("resync of an agent in sync: %q, want a transaction that executed nothing", out)
		}
		var inSync struct {
			Transaction txnJSON `json:"transaction"`
			Error       string  `json:"error"`
		}
		parseJSON(t, "config resync -o json", mustCtl(t, env, "config", "resync", "-o", "json"), &inSync)
		if inSync.Transaction.Resync != "downstream resync" || len(inSync.Transaction.Executed) != 0 || inSync.Error != "" {
			t.Errorf("config resync -o json: %+v", inSync)
		}

		// Behind the agent's back, the route goes: the drift repair (on by
		// default) brings it back, recorded in the history, and a resync
		// then finds nothing to do. (With scheduler.drift: report, the
		// resync repairs it: TestAgentctlStatus, TestAgentctlDrift.)
		if out, err := ip("-n", n.NS, "route", "del", "10.200.0.0/16"); err != nil {
			t.Fatal(out, err)
		}
		waitIP(t, route, "-n", n.NS, "route", "show", "proto", "181")
		// The resync runs after the repair, which is under way.
		out = mustCtl(t, env, "config", "resync", "--retry", "--verbose")
		if !regexp.MustCompile(`(?m)^Executed: +nothing$`).MatchString(out) {
			t.Errorf("resync after the drift repair: %q, want a transaction that executed nothing", out)
		}
		var h historyJSON
		parseJSON(t, "config history -o json", mustCtl(t, env, "config", "history", "-o", "json"), &h)
		repaired := slices.ContainsFunc(h.Transactions, func(txn txnJSON) bool {
			return txn.Type == "drift repair" && slices.ContainsFunc(txn.Executed, func(op opJSON) bool {
				return op.Operation == "CREATE" && op.Key == routeKey && op.NewState == "CONFIGURED"
			})
		})
		if !repaired {
			t.Errorf("config history -o json: no drift repair that created %s again: %+v", routeKey, h.Transactions)
		}
	})

	t.Run("update --replace removes what the document no longer lists; watch sees it", func(t *testing.T) {
		watch := startCtl(t, env, "config", "watch", "--key-prefix", "config/linux/l3/v2/route/", "--count", "2", "-o", "json")
		var first statusEvent
		parseJSON(t, "the first status of config watch", watch.next("the route's current status", func(string) bool { return true }), &first)
		if first.Key != routeKey || first.State != "CONFIGURED" {
			t.Errorf("config watch: first status %+v, want %s CONFIGURED", first, routeKey)
		}

		interfaces := writeFile(t, "interfaces.yaml", withoutRoutes(t, content))
		stdout, _, code := agentctl(t, env, "config", "plan", interfaces, "--replace")
		if code != 2 || !regexp.MustCompile(`DELETE\s+`+regexp.QuoteMeta(routeKey)).MatchString(stdout) ||
			!regexp.MustCompile(`DELETE\s+`+regexp.QuoteMeta(arpKey)).MatchString(stdout) {
			t.Errorf("plan --replace: exit %d, %q; want 2 and the DELETEs of the route and the ARP entry", code, stdout)
		}
		replaced := regexp.MustCompile(`^update of 3 values: transaction #\d+ done\nremoved 2 values that the document no longer lists:\n  ` +
			regexp.QuoteMeta(arpKey) + `\n  ` + regexp.QuoteMeta(routeKey) + `\n$`)
		if out := mustCtl(t, env, "config", "update", interfaces, "--replace", "--wait"); !replaced.MatchString(out) {
			t.Errorf("update --replace: %q, want the update and the route and ARP entry removed", out)
		}
		if out, err := ip("-n", n.NS, "route", "show"); err != nil || strings.Contains(out, "10.200.0.0/16") {
			t.Errorf("ip route after update --replace: %q %v, want no 10.200.0.0/16", out, err)
		}
		if out, err := ip("-n", n.NS, "neigh", "show", "dev", "eth0"); err != nil || strings.Contains(out, "172.30.71.9") {
			t.Errorf("ip neigh after update --replace: %q %v, want no 172.30.71.9", out, err)
		}
		if out, err := ip("-o", "addr", "show", "dev", n.Host); err != nil || !strings.Contains(out, "172.30.71.1/24") {
			t.Errorf("ip addr after update --replace: %q %v, want %s kept", out, err, n.Host)
		}
		if out := mustCtl(t, env, "config", "get"); strings.Contains(out, "routes:") || strings.Contains(out, "arp_entries:") || !strings.Contains(out, n.Host) {
			t.Errorf("config get after update --replace: %q", out)
		}

		code, lines := watch.wait()
		if code != 0 || len(lines) != 2 {
			t.Fatalf("config watch --count 2: exit %d, %d lines, want 0 and 2", code, len(lines))
		}
		var removed statusEvent
		parseJSON(t, "the second status of config watch", lines[1], &removed)
		if removed.Key != routeKey || removed.State != "REMOVED" || removed.LastOperation != "DELETE" || removed.Time == "" {
			t.Errorf("config watch: second status %+v, want %s REMOVED by DELETE", removed, routeKey)
		}
	})

	t.Run("delete removes the veth; watch sees it", func(t *testing.T) {
		watch := startCtl(t, env, "config", "watch", "--key-prefix", "config/linux/interfaces/")
		hostLine := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  CONFIGURED +` + regexp.QuoteMeta(hostKey) + `  \(CREATE\)$`)
		watch.next("the host end's current status", hostLine.MatchString)

		var res struct {
			SeqNum uint64 `json:"seq_num"`
			Values int    `json:"values"`
			Waited bool   `json:"waited"`
		}
		parseJSON(t, "config delete -o json", mustCtl(t, env, "config", "delete", doc, "--wait", "-o", "json"), &res)
		if res.SeqNum == 0 || res.Values != 5 || !res.Waited {
			t.Errorf("config delete -o json: %+v, want a transaction of 5 values, waited", res)
		}
		if out, err := ip("link", "show", "dev", n.Host); err == nil {
			t.Errorf("%s still there right after delete --wait: %s", n.Host, out)
		}
		if out, err := ip("-n", n.NS, "link", "show", "dev", "eth0"); err == nil {
			t.Errorf("eth0 still in %s right after delete --wait: %s", n.NS, out)
		}
		removed := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}  REMOVED +` + regexp.QuoteMeta(hostKey) + `  \(DELETE\)$`)
		watch.next("the host end removed", removed.MatchString)
		watch.stop()
		if out := mustCtl(t, env, "config", "get"); out != "# no desired configuration\n{}\n" {
			t.Errorf("config get after delete: %q", out)
		}
	})

	t.Run("update from standard input, without --wait", func(t *testing.T) {
		stdout, _, code := agentctlStdin(t, env, content, "config", "update", "-")
		if code != 0 || !regexp.MustCompile(`^update of 5 values: transaction #\d+ queued \(--wait waits for it\)\n$`).MatchString(stdout) {
			t.Fatalf("config update -: exit %d, %q", code, stdout)
		}
		waitIP(t, route, "-n", n.NS, "route", "show", "proto", "181")
	})
}

// TestAgentctlPlanStoredInvalid: a value the agent refuses (INVALID) stays
// an error once it is stored: update --wait reports it (exit 1), and so do
// a plan of the same document, which has nothing to change (exit 1, not 0),
// and the same update sent again. Once fixed, the plan is a change again
// and the update works.
func TestAgentctlPlanStoredInvalid(t *testing.T) {
	t.Parallel()
	a := startAgent(t, agentOptions{})
	env := a.env()
	routeKey := "config/linux/l3/v2/route/10.204.0.0/16/pi0"
	invalid := writeFile(t, "invalid.yaml", "linux_config:\n  routes:\n    - outgoing_interface: pi0\n      dst_network: 10.204.0.0/16\n      gw_addr: 172.30.72.1\n      scope: HOST\n")
	invalidRow := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(routeKey) + `\s+\S+\s+INVALID\s+invalid value \(fields gw_addr\): a route of scope HOST cannot have a gateway$`)

	stdout, stderr, code := agentctl(t, env, "config", "update", invalid, "--wait")
	if code != 1 || !strings.HasPrefix(stdout, "update of 1 value: transaction #") || !invalidRow.MatchString(stdout) {
		t.Errorf("update --wait of an invalid route: exit %d, %q; want 1 and the route INVALID", code, stdout)
	}
	checkErrorLine(t, []string{"config", "update"}, stdout, stderr)

	stdout, stderr, code = agentctl(t, env, "config", "plan", invalid)
	if code != 1 || !strings.HasPrefix(stdout, "No changes: the agent already has this configuration, but it is in error:\n") || !invalidRow.MatchString(stdout) {
		t.Errorf("plan of the stored invalid route: exit %d, %q; want 1 and the route INVALID", code, stdout)
	}
	checkErrorLine(t, []string{"config", "plan"}, stdout, stderr)
	if !strings.Contains(stderr, "1 value of the document is in error in the agent and the update would not change that") {
		t.Errorf("plan of the stored invalid route: stderr %q", stderr)
	}
	var plan struct {
		Changes         int            `json:"changes"`
		UnchangedErrors []keyErrorJSON `json:"unchanged_errors"`
	}
	stdout, _, code = agentctl(t, env, "config", "plan", invalid, "-o", "json")
	parseJSON(t, "plan -o json", stdout, &plan)
	if code != 1 || plan.Changes != 0 || len(plan.UnchangedErrors) != 1 || plan.UnchangedErrors[0].Key != routeKey || plan.UnchangedErrors[0].State != "INVALID" {
		t.Errorf("plan -o json of the stored invalid route: exit %d, %+v", code, plan)
	}

	stdout, _, code = agentctl(t, env, "config", "update", invalid, "--wait")
	if code != 1 || !strings.HasPrefix(stdout, "update of 1 value: nothing to change\n") || !invalidRow.MatchString(stdout) {
		t.Errorf("update --wait of the stored invalid route again: exit %d, %q; want 1 and the route INVALID", code, stdout)
	}

	fixed := writeFile(t, "fixed.yaml", "linux_config:\n  routes:\n    - outgoing_interface: pi0\n      dst_network: 10.204.0.0/16\n      gw_addr: 172.30.72.1\n")
	stdout, _, code = agentctl(t, env, "config", "plan", fixed)
	if code != 2 || !strings.Contains(stdout, routeKey) || strings.Contains(stdout, "INVALID") {
		t.Errorf("plan of the fixed route: exit %d, %q; want 2 and its operation", code, stdout)
	}
	if !regexp.MustCompile(`(?m)^Plan: 1 operation \(`).MatchString(stdout) {
		t.Errorf("plan of the fixed route: %q, want \"Plan: 1 operation (...\"", stdout)
	}
	if out := mustCtl(t, env, "config", "update", fixed, "--wait"); !strings.HasPrefix(out, "update of 1 value: transaction #") {
		t.Errorf("update --wait of the fixed route: %q", out)
	}
}

// TestAgentctlKeysOfOtherSources: config delete of a key that etcd sets
// says so and how to delete it there, whether agentctl's gRPC source had
// the key (etcd's value applies again) or not (nothing changes); update
// --replace says which values it removed and where etcd's value applies
// again; a delete of a key no source has is nothing to do.
func TestAgentctlKeysOfOtherSources(t *testing.T) {
	t.Parallel()
	a := startAgent(t, agentOptions{})
	env := a.env()
	// VPP values: no effect on the kernel (VPP is off: UNIMPLEMENTED).
	const key = "config/vpp/v2/interfaces/lp"
	mustCtl(t, env, "kvdb", "put", key, `{"name":"lp","type":"SOFTWARE_LOOPBACK"}`)
	waitCtl(t, "etcd's lp in the desired configuration", env, contains("name: lp"), "config", "get")
	loop := writeFile(t, "lp.yaml", "vpp_config:\n  interfaces:\n    - name: lp\n      type: SOFTWARE_LOOPBACK\n      mtu: 1400\n")
	setByEtcd := key + " is set by etcd, not by agentctl's gRPC source; delete it there: agentctl kvdb del " + key + "\n"

	// Only etcd has it.
	if out := mustCtl(t, env, "config", "delete", loop, "--wait"); out != "delete of 1 value: nothing to change\n"+setByEtcd {
		t.Errorf("delete of a key only etcd sets: %q, want it to say so", out)
	}
	var res struct {
		SeqNum uint64 `json:"seq_num"`
		Kept   []struct {
			Key string `json:"key"`
			By  string `json:"by"`
		} `json:"kept"`
	}
	parseJSON(t, "config delete -o json", mustCtl(t, env, "config", "delete", loop, "-o", "json"), &res)
	if res.SeqNum != 0 || len(res.Kept) != 1 || res.Kept[0].Key != key || res.Kept[0].By != "etcd" {
		t.Errorf("config delete -o json of a key only etcd sets: %+v", res)
	}

	// gRPC overrides it; deleting that brings etcd's value back.
	mustCtl(t, env, "config", "update", loop, "--wait")
	out := mustCtl(t, env, "config", "delete", loop, "--wait")
	if want := regexp.MustCompile(`^delete of 1 value: transaction #\d+ done\n` + regexp.QuoteMeta(key+": etcd's value applies now (etcd sets it too; delete it there: agentctl kvdb del "+key+")") + `\n$`); !want.MatchString(out) {
		t.Errorf("delete of a gRPC override of an etcd key: %q", out)
	}

	// update --replace: lp (gRPC over etcd) and lq (gRPC only) are not in
	// the document: lq is removed, etcd's lp applies again.
	both := writeFile(t, "both.yaml", "vpp_config:\n  interfaces:\n    - {name: lp, type: SOFTWARE_LOOPBACK, mtu: 1400}\n    - {name: lq, type: SOFTWARE_LOOPBACK}\n")
	mustCtl(t, env, "config", "update", both, "--wait")
	other := writeFile(t, "other.yaml", "vpp_config:\n  interfaces:\n    - {name: lr, type: SOFTWARE_LOOPBACK}\n")
	out = mustCtl(t, env, "config", "update", other, "--replace", "--wait")
	if want := regexp.MustCompile(`^update of 1 value: transaction #\d+ done\nremoved 1 value that the document no longer lists:\n  config/vpp/v2/interfaces/lq\n` +
		regexp.QuoteMeta(key+": etcd's value applies now (etcd sets it too; delete it there: agentctl kvdb del "+key+")") + `\n$`); !want.MatchString(out) {
		t.Errorf("update --replace: %q, want lq removed and etcd's lp applying again", out)
	}

	// No source has it.
	nobody := writeFile(t, "nobody.yaml", "vpp_config:\n  interfaces:\n    - {name: lz, type: SOFTWARE_LOOPBACK}\n")
	if out := mustCtl(t, env, "config", "delete", nobody); out != "delete of 1 value: nothing to do (or kept until the agent's first full sync)\n" {
		t.Errorf("delete of a key no source has: %q", out)
	}
}

// keyErrorJSON is an error of a key in agentctl's JSON output.
type keyErrorJSON struct {
	Key       string `json:"key"`
	Operation string `json:"operation"`
	State     string `json:"state"`
	Error     string `json:"error"`
}

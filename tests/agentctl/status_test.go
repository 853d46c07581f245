package agentctl_test

// status, values, dump and graph: the read-only views, against one agent
// started with a configuration.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/tests/testsupport"

	"github.com/netagent-io/netagent/tests/netnstest"
)

// statusJSON is the part of status -o json/yaml the tests look at.
type statusJSON struct {
	Label   string            `json:"label"`
	Version map[string]string `json:"version"`
	Uptime  string            `json:"uptime"`
	Ready   bool              `json:"ready"`
	First   bool              `json:"first_sync"`
	Linux   bool              `json:"linux"`
	Etcd    struct {
		Endpoints []string `json:"endpoints"`
		Embedded  bool     `json:"embedded"`
	} `json:"etcd"`
	VPP struct {
		Enabled   bool `json:"enabled"`
		Connected bool `json:"connected"`
	} `json:"vpp"`
	ValuesByState      map[string]int            `json:"values_by_state"`
	ValuesByDescriptor map[string]map[string]int `json:"values_by_descriptor"`
}

// valueJSON is a value of values -o json/yaml.
type valueJSON struct {
	Key           string   `json:"key"`
	State         string   `json:"state"`
	Error         string   `json:"error"`
	LastOperation string   `json:"last_operation"`
	Details       []string `json:"details"`
	Derived       bool     `json:"derived"`
}

// baseValueJSON is a base value of values -o json/yaml with its derived
// values.
type baseValueJSON struct {
	Value         valueJSON   `json:"value"`
	DerivedValues []valueJSON `json:"derived_values"`
}

// dumpJSON is the output of dump -o json/yaml.
type dumpJSON struct {
	View   string `json:"view"`
	Values []struct {
		Key    string `json:"key"`
		Origin string `json:"origin"`
		Value  struct {
			Type  string         `json:"type"`
			Value map[string]any `json:"value"`
		} `json:"value"`
	} `json:"values"`
}

// statusVolatile are the lines of the status table that change from run to
// run beyond normalize: the version (the toolchain, VCS), the number of
// transactions (SB notifications follow the kernel's timing) and etcd's
// revision (the agent's own status in etcd moves it as it changes).
var statusVolatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`(?m)^Version:( +).*$`), "Version:${1}<VERSION>"},
	{regexp.MustCompile(`(?m)^Transactions:( +)\d+`), "Transactions:${1}<N>"},
	{regexp.MustCompile(`(?m)^(etcd:.*, revision )\d+$`), "${1}<N>"},
}

// goldenOwnNamespace is golden for outputs that list the links of the
// tests' namespace (OBTAINED values): in the caller's namespace
// (AGENTCTL_E2E_ISOLATED=0) they hold the host's links, and are not
// compared.
func goldenOwnNamespace(t *testing.T, name, got string) {
	t.Helper()
	if !netnstest.Isolated() {
		t.Logf("not compared with testdata/%s.golden: the tests run in the caller's namespace, whose links are listed", name)
		return
	}
	golden(t, name, got)
}

func normalizeStatus(s string, oldnew ...string) string {
	for _, v := range statusVolatile {
		s = v.re.ReplaceAllString(s, v.repl)
	}
	return squeezeColumns(normalize(s, oldnew...))
}

// waitLinkLocal waits until the agent has obtained the IPv6 link-local
// address of a link of its namespace (when IPv6 is on there): the kernel
// adds it some time after the link is up, and the values and their counts
// are only stable then.
func waitLinkLocal(t *testing.T, env []string, link string) {
	t.Helper()
	if v, err := os.ReadFile(filepath.Join("/proc/sys/net/ipv6/conf", link, "disable_ipv6")); err != nil || strings.TrimSpace(string(v)) != "0" {
		return
	}
	waitCtl(t, "the link-local address of "+link+" obtained", env,
		contains("linux/interface/host-name/"+link+"/address/fe80::"), "values", "--state", "OBTAINED")
}

// TestAgentctlStatus: status (table golden, JSON and YAML with the same
// fields), values (golden, by model, by state, as JSON and YAML), dump in
// its three views (the SB and cached views tell the kernel's truth after a
// change behind the agent's back, which values --state MISSING lists with
// its cause), and graph (DOT, SVG, as of a transaction). The agent reports
// drift without repairing it (scheduler.drift: report), so that the change
// stays until config resync.
func TestAgentctlStatus(t *testing.T) {
	n := uniqueNames(t, "st")
	a := startAgent(t, agentOptions{InitFile: writeFile(t, "init.yaml", vethRouteDoc(t, n, 72)), Config: "scheduler: {drift: report}\n"})
	env := a.env()
	ph := append(a.placeholders(), n.placeholders()...)
	routeKey := "config/linux/l3/v2/route/10.200.0.0/16/" + n.Peer
	waitIP(t, "10.200.0.0/16 via 172.30.72.1 dev eth0", "-n", n.NS, "route", "show", "proto", "181")
	waitIP(t, "172.30.72.9 lladdr 02:00:00:00:50:09 PERMANENT", "-n", n.NS, "neigh", "show", "dev", "eth0")
	waitLinkLocal(t, env, n.Host)

	t.Run("status", func(t *testing.T) {
		out := mustCtl(t, env, "status")
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^Agent: +ready$`),
			regexp.MustCompile(`(?m)^Label: +` + a.Label + `$`),
			regexp.MustCompile(`(?m)^VPP: +disabled$`),
			regexp.MustCompile(`(?m)^Linux: +enabled$`),
			regexp.MustCompile(`(?m)^Values: +\d+ \(10 CONFIGURED, \d+ OBTAINED\)$`),
			regexp.MustCompile(`(?m)^linux-interface +3 \(3 CONFIGURED\)$`),
		} {
			if !want.MatchString(out) {
				t.Errorf("status does not match %s:\n%s", want, out)
			}
		}
		goldenOwnNamespace(t, "status/table", normalizeStatus(out, ph...))
	})

	t.Run("status as JSON and YAML", func(t *testing.T) {
		var fromJSON, fromYAML statusJSON
		parseJSON(t, "status -o json", mustCtl(t, env, "status", "-o", "json"), &fromJSON)
		parseYAML(t, "status -o yaml", mustCtl(t, env, "status", "-o", "yaml"), &fromYAML)
		if !fromJSON.Ready || !fromJSON.First || fromJSON.Label != a.Label || !fromJSON.Linux || fromJSON.VPP.Enabled ||
			!fromJSON.Etcd.Embedded || !reflect.DeepEqual(fromJSON.Etcd.Endpoints, []string{a.EtcdEndpoint}) ||
			fromJSON.Version["go"] == "" || fromJSON.ValuesByState["CONFIGURED"] != 10 ||
			fromJSON.ValuesByDescriptor["linux-route"]["CONFIGURED"] != 1 {
			t.Errorf("status -o json: %+v", fromJSON)
		}
		fromJSON.Uptime, fromYAML.Uptime = "", "" // the two ran at different times
		if !reflect.DeepEqual(fromJSON, fromYAML) {
			t.Errorf("status -o yaml differs from -o json:\n%+v\n%+v", fromYAML, fromJSON)
		}
	})

	t.Run("values", func(t *testing.T) {
		all := mustCtl(t, env, "values")
		goldenOwnNamespace(t, "status/values", squeezeColumns(normalize(all, ph...)))

		routes := mustCtl(t, env, "values", "linux.l3.route")
		if want := regexp.MustCompile(`^KEY +STATE +OPERATION +ERROR / DETAILS\n` + regexp.QuoteMeta(routeKey) + ` +CONFIGURED +CREATE +-\n$`); !want.MatchString(routes) {
			t.Errorf("values linux.l3.route: %q, want the route only", routes)
		}
		configured := mustCtl(t, env, "values", "--state", "configured")
		obtained := mustCtl(t, env, "values", "--state", "OBTAINED")
		for name, c := range map[string]struct {
			out, in, notIn string
		}{
			"--state configured": {configured, "CONFIGURED", "OBTAINED"},
			"--state OBTAINED":   {obtained, "OBTAINED", "CONFIGURED"},
		} {
			if !strings.Contains(c.out, c.in) || strings.Contains(c.out, c.notIn) {
				t.Errorf("values %s: want %s and no %s:\n%s", name, c.in, c.notIn, c.out)
			}
		}
		if got, want := len(lines(configured))+len(lines(obtained))-2, len(lines(all))-1; got != want {
			t.Errorf("values: %d rows, but %d CONFIGURED and OBTAINED ones", want, got)
		}
		if out := mustCtl(t, env, "values", "--state", "FAILED,PENDING"); out != "No values.\n" {
			t.Errorf("values --state FAILED,PENDING: %q", out)
		}

		var fromJSON, fromYAML []baseValueJSON
		parseJSON(t, "values -o json", mustCtl(t, env, "values", "linux.interfaces.interface", "-o", "json"), &fromJSON)
		parseYAML(t, "values -o yaml", mustCtl(t, env, "values", "linux.interfaces.interface", "-o", "yaml"), &fromYAML)
		if len(fromJSON) != 3 || !reflect.DeepEqual(fromJSON, fromYAML) {
			t.Fatalf("values linux.interfaces.interface: JSON %+v\nYAML %+v; want the same 3 interfaces", fromJSON, fromYAML)
		}
		for _, b := range fromJSON {
			if b.Value.State != "CONFIGURED" || b.Value.LastOperation != "CREATE" || b.Value.Derived || len(b.DerivedValues) == 0 {
				t.Errorf("values -o json: %+v, want CONFIGURED by CREATE with derived values", b)
			}
			for _, d := range b.DerivedValues {
				if !d.Derived || d.State != "CONFIGURED" {
					t.Errorf("values -o json: derived value %+v", d)
				}
			}
		}
	})

	t.Run("dump", func(t *testing.T) {
		dump := mustCtl(t, env, "dump", "linux.interfaces.interface")
		golden(t, "status/dump", squeezeColumns(normalize(dump, ph...)))
		// YAML and JSON show the metadata as the values: proto names
		// (ip_addresses, host_name, not Go's HostName or the oneof
		// wrapper Link) and enums by name (type: VETH, not type: 1).
		dumpYAML := mustCtl(t, env, "dump", "linux.interfaces.interface", "-o", "yaml")
		for _, bad := range []*regexp.Regexp{regexp.MustCompile(`(?m)^[ -]*[A-Z]\w*:`), regexp.MustCompile(`(?m)^[ -]*type: \d+$`)} {
			if m := bad.FindString(dumpYAML); m != "" {
				t.Errorf("dump -o yaml shows %q (a Go field name or an enum number):\n%s", m, dumpYAML)
			}
		}
		var fromYAML, fromJSON struct {
			Values []struct {
				Key      string         `json:"key"`
				Metadata map[string]any `json:"metadata"`
			} `json:"values"`
		}
		parseYAML(t, "dump -o yaml", dumpYAML, &fromYAML)
		parseJSON(t, "dump -o json", mustCtl(t, env, "dump", "linux.interfaces.interface", "-o", "json"), &fromJSON)
		if !reflect.DeepEqual(fromYAML, fromJSON) {
			t.Errorf("dump: -o yaml %+v, -o json %+v: want the same", fromYAML, fromJSON)
		}
		peerMetadata := map[string]any{}
		for _, v := range fromYAML.Values {
			if strings.HasSuffix(v.Key, "/"+n.Peer) {
				peerMetadata = v.Metadata
			}
		}
		peerValue, _ := peerMetadata["value"].(map[string]any)
		if peerMetadata["host_name"] != "eth0" || peerMetadata["type"] != "VETH" ||
			!reflect.DeepEqual(peerMetadata["namespace"], map[string]any{"type": "NSID", "reference": n.NS}) ||
			peerValue["type"] != "VETH" || !reflect.DeepEqual(peerValue["ip_addresses"], []any{"172.30.72.2/24"}) ||
			!reflect.DeepEqual(peerValue["veth"], map[string]any{"peer_if_name": n.Host}) {
			t.Errorf("dump -o yaml: metadata of %s: %v", n.Peer, peerMetadata)
		}
		// An alias of the model dumps the same.
		if out := mustCtl(t, env, "dump", "linux.interfaces"); out != dump {
			t.Errorf("dump linux.interfaces:\n%s\nwant what dump linux.interfaces.interface shows:\n%s", out, dump)
		}
		// The agent runs without VPP: a dump of a VPP model says so (not
		// "no values"), under the model's name or an alias, in the SB and
		// cached views; the NB view lists what the NB asks for (nothing
		// here).
		for _, args := range [][]string{{"dump", "vpp.interfaces", "--view", "SB"}, {"dump", "vpp.interfaces.interface"}, {"dump", "vpp.l3.route", "--view", "cached", "-o", "json"}} {
			wantError(t, env, "", args, "VPP is disabled in this agent's configuration", "vpp.disabled: true", "nothing to dump")
		}
		var nbDump struct {
			View   string            `json:"view"`
			Values []json.RawMessage `json:"values"`
		}
		if out := mustCtl(t, env, "dump", "vpp.l3.route", "--view", "NB", "-o", "json"); json.Unmarshal([]byte(out), &nbDump) != nil || nbDump.View != "NB" || nbDump.Values == nil || len(nbDump.Values) != 0 {
			t.Errorf("dump vpp.l3.route --view NB -o json: %s, want the NB view with no values", out)
		}

		// Behind the agent's back, the route goes: the drift watcher reports
		// it, the value is MISSING with the cause; the SB and cached views
		// lack it, the NB view still has it.
		if out, err := ip("-n", n.NS, "route", "del", "10.200.0.0/16"); err != nil {
			t.Fatal(out, err)
		}
		missing := waitCtl(t, "the route MISSING", env, contains(routeKey), "values", "--state", "MISSING")
		want := regexp.MustCompile(`^KEY +STATE +OPERATION +ERROR / DETAILS\n` + regexp.QuoteMeta(routeKey) +
			` +MISSING +CREATE +out of sync with the SB: gone \(route 10\.200\.0\.0/16 via 172\.30\.72\.1 ifindex \d+ metric \d+ deleted in the netns ` +
			regexp.QuoteMeta(n.NS) + `\)\n$`)
		if !want.MatchString(missing) {
			t.Errorf("values --state MISSING: %q, want the route only, gone, with its cause (%s)", missing, want)
		}
		for _, c := range []struct {
			view string
			want int
		}{{"SB", 0}, {"sb", 0}, {"cached", 0}, {"NB", 1}} {
			var d dumpJSON
			parseJSON(t, "dump --view "+c.view, mustCtl(t, env, "dump", "linux.l3.route", "--view", c.view, "-o", "json"), &d)
			if !strings.EqualFold(d.View, c.view) || len(d.Values) != c.want {
				t.Errorf("dump linux.l3.route --view %s: view %q, %d values, want %d", c.view, d.View, len(d.Values), c.want)
				continue
			}
			if c.want == 1 && (d.Values[0].Key != routeKey || d.Values[0].Origin != "from-NB" ||
				d.Values[0].Value.Type != "linux.l3.Route" || d.Values[0].Value.Value["gw_addr"] != "172.30.72.1") {
				t.Errorf("dump linux.l3.route --view %s: %+v", c.view, d.Values[0])
			}
		}
		if out := mustCtl(t, env, "dump", "linux.l3.route", "--view", "SB"); out != "No linux.l3.route values in the SB view.\n" {
			t.Errorf("dump linux.l3.route --view SB after the route was deleted: %q", out)
		}
		var routeYAML dumpJSON
		parseYAML(t, "dump -o yaml", mustCtl(t, env, "dump", "linux.l3.route", "--view", "NB", "-o", "yaml"), &routeYAML)
		if routeYAML.View != "NB" || len(routeYAML.Values) != 1 || routeYAML.Values[0].Value.Value["dst_network"] != "10.200.0.0/16" {
			t.Errorf("dump --view NB -o yaml: %+v", routeYAML)
		}
		// It stays so (report only) until a resync.
		if out, err := ip("-n", n.NS, "route", "show", "proto", "181"); err != nil || strings.Contains(out, "10.200.0.0/16") {
			t.Errorf("ip route after the drift was reported: %q %v, want no 10.200.0.0/16 (report only)", out, err)
		}
		mustCtl(t, env, "config", "resync")
		waitIP(t, "10.200.0.0/16 via 172.30.72.1 dev eth0", "-n", n.NS, "route", "show", "proto", "181")
		if out := mustCtl(t, env, "values", "--state", "MISSING"); out != "No values.\n" {
			t.Errorf("values --state MISSING after the resync: %q", out)
		}
	})

	t.Run("graph", func(t *testing.T) {
		dot := mustCtl(t, env, "graph")
		for _, want := range []string{"digraph kvscheduler {", "(current)", routeKey, "CONFIGURED"} {
			if !strings.Contains(dot, want) {
				t.Errorf("graph: DOT without %q:\n%s", want, testsupport.Tail(dot, 2000))
			}
		}
		if !strings.HasSuffix(strings.TrimSpace(dot), "}") {
			t.Errorf("graph: DOT does not end with }: %q", testsupport.Tail(dot, 200))
		}

		svgFile := filepath.Join(t.TempDir(), "graph.svg")
		stdout, stderr, code := agentctl(t, env, "graph", "--file", svgFile)
		if code != 0 || stdout != "" || !strings.HasPrefix(stderr, "graph written to "+svgFile+" (svg, ") {
			t.Fatalf("graph --file %s: exit %d, stdout %q, stderr %q", svgFile, code, stdout, stderr)
		}
		svg, err := os.ReadFile(svgFile)
		if err != nil || !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "</svg>") {
			t.Errorf("graph --file %s: %v, want an SVG document: %q", svgFile, err, testsupport.Tail(string(svg), 300))
		}
		if out := mustCtl(t, env, "graph", "-o", "svg"); !strings.Contains(out, "<svg") {
			t.Errorf("graph -o svg: %q, want SVG", testsupport.Tail(out, 300))
		}
		// The format of --file FILE is its extension's.
		dir := t.TempDir()
		for _, c := range []struct{ file, format, want string }{
			{"graph.dot", "dot", "digraph kvscheduler {"},
			{"graph.gv", "dot", "digraph kvscheduler {"},
			{"graph.mmd", "mermaid", "flowchart LR"},
			{"graph.mermaid", "mermaid", "flowchart LR"},
			{"graph.json", "json", `"nodes"`},
			{"graph", "dot", "digraph kvscheduler {"},
		} {
			file := filepath.Join(dir, c.file)
			_, stderr, code := agentctl(t, env, "graph", "-f", file)
			b, err := os.ReadFile(file)
			if code != 0 || err != nil || !strings.Contains(string(b), c.want) || !strings.HasPrefix(stderr, "graph written to "+file+" ("+c.format+", ") {
				t.Errorf("graph -f %s: exit %d, %q, %v, want %s with %q", file, code, stderr, err, c.format, c.want)
			}
			if c.format == "json" && !json.Valid(b) {
				t.Errorf("graph -f %s: not JSON: %q", file, testsupport.Tail(string(b), 300))
			}
		}
		// An extension the agent does not render, or one -o contradicts,
		// or a file given to -o (the format), is refused and nothing is written.
		for _, c := range []struct {
			args  []string
			wants []string
		}{
			{[]string{"--file", filepath.Join(dir, "g.png")}, []string{"g.png: the agent renders the graph as dot, svg, mermaid, json, not png", ".svg, .dot or .gv, .json, .mmd or .mermaid", "agentctl graph | dot -Tpng"}},
			{[]string{"--file", filepath.Join(dir, "g.pdf")}, []string{"not pdf"}},
			{[]string{"--file", filepath.Join(dir, "g.txt")}, []string{"no graph format is known for .txt", "give -o"}},
			{[]string{"-o", "dot", "--file", filepath.Join(dir, "g.svg")}, []string{"-o dot contradicts --file", "g.svg (a svg file name)"}},
			{[]string{"-o", "json", "--file", filepath.Join(dir, "g.mmd")}, []string{"-o json contradicts --file"}},
			{[]string{"-o", filepath.Join(dir, "g.dot")}, []string{"-o is the format of the graph", "--file " + filepath.Join(dir, "g.dot")}},
		} {
			wantError(t, env, "", append([]string{"graph"}, c.args...), c.wants...)
			if file := c.args[len(c.args)-1]; fileExists(file) {
				t.Errorf("graph %s wrote %s", strings.Join(c.args, " "), file)
			}
		}
		if out := mustCtl(t, env, "graph", "-o", "mermaid", "--file", "-"); !strings.Contains(out, "flowchart LR") {
			t.Errorf("graph -o mermaid --file -: %q", testsupport.Tail(out, 300))
		}
		// --key-prefix: the route and what it touches, not the ARP entry.
		if focused := mustCtl(t, env, "graph", "--key-prefix", routeKey); !strings.Contains(focused, routeKey) ||
			!strings.Contains(focused, `values under \"`+routeKey) || strings.Contains(focused, "config/linux/l3/v2/arp/") || len(focused) >= len(dot) {
			t.Errorf("graph --key-prefix %s: %q", routeKey, testsupport.Tail(focused, 2000))
		}

		// As of the init file's transaction: the first NB transaction with operations.
		var h historyJSON
		parseJSON(t, "config history -o json", mustCtl(t, env, "config", "history", "-o", "json"), &h)
		var seq string
		for _, txn := range h.Transactions {
			if txn.Type == "NB transaction" && len(txn.Executed) > 0 {
				seq = strconv.FormatUint(txn.SeqNum, 10)
				break
			}
		}
		if seq == "" {
			t.Fatalf("no NB transaction with operations in the history: %+v", h.Transactions)
		}
		past := mustCtl(t, env, "graph", "--txn", seq)
		if !strings.Contains(past, "graph after transaction #"+seq+" at ") || strings.Contains(past, "(current)") || !strings.Contains(past, routeKey) {
			t.Errorf("graph --txn %s: not the graph as of #%s:\n%s", seq, seq, testsupport.Tail(past, 2000))
		}
		if out := mustCtl(t, env, "graph", "--txn", seq, "-o", "svg"); !strings.Contains(out, "<svg") {
			t.Errorf("graph --txn %s -o svg: %q", seq, testsupport.Tail(out, 300))
		}
		// A transaction not in the history: where it starts and ends (the
		// newest as it was between the two reads of the history around).
		newestSeq := func() uint64 {
			var h historyJSON
			parseJSON(t, "config history -o json", mustCtl(t, env, "config", "history", "--last", "1", "-o", "json"), &h)
			return h.History.NewestSeq
		}
		for _, args := range [][]string{{"graph", "--txn", "99999"}, {"config", "history", "99999"}} {
			before := newestSeq()
			line := wantError(t, env, "", args, "#99999", "history starts at #1", "the newest transaction is #")
			after := newestSeq()
			m := regexp.MustCompile(`the newest transaction is #(\d+)$`).FindStringSubmatch(line)
			if m == nil {
				t.Errorf("agentctl %s: %q does not end with the newest transaction", strings.Join(args, " "), line)
				continue
			}
			if n, _ := strconv.ParseUint(m[1], 10, 64); n < before || n > after {
				t.Errorf("agentctl %s: newest transaction #%d, want #%d to #%d", strings.Join(args, " "), n, before, after)
			}
		}
	})

	t.Run("values in states other than CONFIGURED", func(t *testing.T) {
		// A route through an interface nobody configured: PENDING, with what it waits for.
		pending := writeFile(t, "pending.yaml", "linux_config:\n  routes:\n    - outgoing_interface: nosuch0\n      dst_network: 10.204.0.0/16\n")
		mustCtl(t, env, "config", "update", pending, "--wait")
		out := mustCtl(t, env, "values", "--state", "PENDING")
		if want := regexp.MustCompile(`^KEY +STATE +OPERATION +ERROR / DETAILS\nconfig/linux/l3/v2/route/10.204.0.0/16/nosuch0 +PENDING +- +waiting for interface nosuch0 up\n$`); !want.MatchString(out) {
			t.Errorf("values --state PENDING: %q, want the route waiting for its interface", out)
		}
		var list []baseValueJSON
		parseJSON(t, "values --state PENDING -o json", mustCtl(t, env, "values", "--state", "PENDING", "-o", "json"), &list)
		if len(list) != 1 || list[0].Value.State != "PENDING" || len(list[0].Value.Details) == 0 {
			t.Errorf("values --state PENDING -o json: %+v", list)
		}
		var st statusJSON
		parseJSON(t, "status -o json", mustCtl(t, env, "status", "-o", "json"), &st)
		if st.ValuesByState["PENDING"] != 1 {
			t.Errorf("status -o json: values by state %v, want 1 PENDING", st.ValuesByState)
		}
	})
}

// fileExists tells whether a file exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

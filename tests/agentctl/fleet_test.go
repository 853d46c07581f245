package agentctl_test

// fleet status: agents sharing one etcd (embedded in the test), their
// published statuses read from etcd alone.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// sharedEtcd is an etcd embedded in the test process, on free loopback
// ports, for agents started with agentOptions.EtcdEndpoint and for keys
// the test writes itself.
type sharedEtcd struct {
	endpoint string
	client   *clientv3.Client
}

// startSharedEtcd starts the etcd; it stops when the test ends, after the
// agents that use it (start it before them).
func startSharedEtcd(t *testing.T) *sharedEtcd {
	t.Helper()
	ports := freePorts(t, 2)
	e, err := etcdsource.StartEmbedded(etcdsource.EmbeddedConfig{Dir: filepath.Join(t.TempDir(), "etcd"),
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		Log: slog.New(slog.DiscardHandler), StartTimeout: waitTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return &sharedEtcd{endpoint: e.ClientURL(), client: cli}
}

// put writes keys and values (key, value, key, value...).
func (s *sharedEtcd) put(t *testing.T, kvs ...string) {
	t.Helper()
	for i := 0; i < len(kvs); i += 2 {
		if _, err := s.client.Put(context.Background(), kvs[i], kvs[i+1]); err != nil {
			t.Fatalf("etcd put %s: %v", kvs[i], err)
		}
	}
}

// fleetJSON is fleet status -o json/yaml.
type fleetJSON struct {
	Revision int64            `json:"revision"`
	Agents   []fleetAgentJSON `json:"agents"`
}

type fleetAgentJSON struct {
	Label        string     `json:"label"`
	State        string     `json:"state"`
	OK           bool       `json:"ok"`
	StatusError  string     `json:"status_error"`
	BuildVersion string     `json:"build_version"`
	StartTime    *time.Time `json:"start_time"`
	LastChange   *time.Time `json:"last_change"`
	LastUpdate   *time.Time `json:"last_update"`
	Plugins      []struct {
		Name  string `json:"name"`
		State string `json:"state"`
		Error string `json:"error"`
	} `json:"plugins"`
	Values struct {
		Published           bool           `json:"published"`
		Total               int            `json:"total"`
		ByState             map[string]int `json:"by_state"`
		NotConfigured       int            `json:"not_configured"`
		NotConfiguredValues []struct {
			valueJSON
			DescriptorName string `json:"descriptor_name"`
			BaseKey        string `json:"base_key"`
		} `json:"not_configured_values"`
	} `json:"values"`
}

// byLabel returns the agent of the label, nil if not listed.
func (f fleetJSON) byLabel(label string) *fleetAgentJSON {
	for i := range f.Agents {
		if f.Agents[i].Label == label {
			return &f.Agents[i]
		}
	}
	return nil
}

func (f fleetJSON) labels() []string {
	var out []string
	for _, ag := range f.Agents {
		out = append(out, ag.Label)
	}
	return out
}

// stable is what of an agent does not move while nothing happens (the
// publisher rewrites last_update every 10 s), for comparing two runs.
func (ag fleetAgentJSON) stable() string {
	var plugins, values []string
	for _, p := range ag.Plugins {
		plugins = append(plugins, p.Name+" "+p.State)
	}
	for _, v := range ag.Values.NotConfiguredValues {
		values = append(values, v.Key+" "+v.State)
	}
	return fmt.Sprintf("%s %s ok=%v %s %v plugins=%q values=%v/%v %q", ag.Label, ag.State, ag.OK, ag.BuildVersion, ag.LastChange,
		plugins, ag.Values.Published, ag.Values.NotConfigured, values)
}

// fleetRow matches the table's row of an agent in state, with a last
// change (a time and its age) or none ("-").
func fleetRow(label, state string, changed bool) *regexp.Regexp {
	when := `-`
	if changed {
		when = `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \((\d+[smhd])+ ago\)`
	}
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + ` +` + state + ` +` + when + ` +`)
}

// TestAgentctlFleet: three real agents on one etcd (one publishing its
// values' statuses, with a value that stays PENDING); fleet status lists
// them (table, JSON, YAML, by content), filters them (patterns,
// --problems), shows statuses broken by hand as UNREADABLE where they are
// without touching the others, and ignores keys that are not statuses; a
// stopped agent with configuration in etcd is ABSENT, one without
// disappears.
func TestAgentctlFleet(t *testing.T) {
	t.Parallel()
	etcd := startSharedEtcd(t)
	withValues := startAgent(t, agentOptions{EtcdEndpoint: etcd.endpoint, Config: "etcd: {status: {ttl: 2s, values: true}}\n"})
	plain := startAgent(t, agentOptions{EtcdEndpoint: etcd.endpoint, Config: "etcd: {status: {ttl: 2s}}\n"})
	stopped := startAgent(t, agentOptions{EtcdEndpoint: etcd.endpoint, Config: "etcd: {status: {ttl: 2s}}\n"})
	env := []string{"ETCD_ENDPOINTS=" + etcd.endpoint}
	labels := []string{withValues.Label, plain.Label, stopped.Label}
	slices.Sort(labels)

	// A route through an interface no agent has: PENDING for good.
	routeKey := "config/linux/l3/v2/route/10.203.0.0/16/fleetnone"
	route := `{"outgoing_interface":"fleetnone","dst_network":"10.203.0.0/16","gw_addr":"172.30.9.1"}`
	mustCtl(t, withValues.env(), "kvdb", "put", routeKey, route)
	mustCtl(t, stopped.env(), "kvdb", "put", routeKey, route)

	var fleet fleetJSON
	waitCtl(t, "every agent OK, the route PENDING", env, func(out string, code int) bool {
		fleet = fleetJSON{}
		if code != 0 || json.Unmarshal([]byte(out), &fleet) != nil || !slices.Equal(fleet.labels(), labels) {
			return false
		}
		for _, ag := range fleet.Agents {
			if ag.State != "OK" {
				return false
			}
		}
		return fleet.byLabel(withValues.Label).Values.ByState["PENDING"] == 1
	}, "fleet", "status", "-o", "json")

	var st statusJSON
	parseJSON(t, "status -o json", mustCtl(t, withValues.env(), "status", "-o", "json"), &st)

	t.Run("json", func(t *testing.T) {
		if fleet.Revision <= 0 {
			t.Errorf("revision %d", fleet.Revision)
		}
		for _, ag := range fleet.Agents {
			if ag.BuildVersion != st.Version["version"] || ag.LastChange == nil || ag.StartTime == nil || ag.LastUpdate == nil ||
				time.Since(*ag.LastChange) > waitTimeout || ag.LastChange.Before(*ag.StartTime) {
				t.Errorf("%s: version %q (agent's %q), start %v, last change %v, last update %v", ag.Label, ag.BuildVersion, st.Version["version"],
					ag.StartTime, ag.LastChange, ag.LastUpdate)
			}
			var plugins []string
			for _, p := range ag.Plugins {
				plugins = append(plugins, p.Name+" "+p.State)
			}
			if want := []string{"etcd OK", "linux OK", "orchestrator OK"}; !slices.Equal(plugins, want) {
				t.Errorf("%s: plugins %q, want %q", ag.Label, plugins, want)
			}
			if ag.Label != withValues.Label && (!ag.OK || ag.Values.Published || ag.Values.Total != 0) {
				t.Errorf("%s: ok %v, values %+v; want OK, values not published", ag.Label, ag.OK, ag.Values)
			}
		}
		ag := fleet.byLabel(withValues.Label)
		v := ag.Values
		total := 0
		for _, n := range v.ByState {
			total += n
		}
		if ag.OK || !v.Published || v.Total != total || v.Total < 2 || v.ByState["PENDING"] != 1 || v.NotConfigured != 1 || len(v.NotConfiguredValues) != 1 {
			t.Fatalf("%s: ok %v, values %+v; want not OK: 1 PENDING of at least 2", ag.Label, ag.OK, v)
		}
		if got := v.NotConfiguredValues[0]; got.Key != routeKey || got.State != "PENDING" || len(got.Details) == 0 || got.DescriptorName != "linux-route" || got.BaseKey != "" {
			t.Errorf("the value listed: %+v, want %s PENDING with details", got, routeKey)
		}
	})

	t.Run("yaml", func(t *testing.T) {
		var fromYAML fleetJSON
		parseYAML(t, "fleet status -o yaml", mustCtl(t, env, "fleet", "status", "-o", "yaml"), &fromYAML)
		if len(fromYAML.Agents) != len(fleet.Agents) {
			t.Fatalf("YAML: %q, JSON: %q", fromYAML.labels(), fleet.labels())
		}
		for i := range fleet.Agents {
			if y, j := fromYAML.Agents[i].stable(), fleet.Agents[i].stable(); y != j {
				t.Errorf("YAML: %s\nJSON: %s", y, j)
			}
		}
	})

	t.Run("table", func(t *testing.T) {
		out := mustCtl(t, env, "fleet", "status")
		if !strings.HasPrefix(out, "LABEL ") || !regexp.MustCompile(`(?m)^LABEL +STATE +LAST CHANGE +VERSION +PLUGINS NOT OK +VALUES$`).MatchString(out) {
			t.Errorf("no header:\n%s", out)
		}
		counts := regexp.MustCompile(`\d+ \((\d+ [A-Z]+, )*1 PENDING(, \d+ [A-Z]+)*\)$`)
		for _, ag := range fleet.Agents {
			row := fleetRow(ag.Label, "OK", true).String() + regexp.QuoteMeta(ag.BuildVersion) + ` +- +`
			if ag.Label == withValues.Label {
				row += counts.String()
			} else {
				row += `not published$`
			}
			if !regexp.MustCompile(`(?m)` + row).MatchString(out) {
				t.Errorf("no row %s:\n%s", row, out)
			}
		}
		section := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(withValues.Label) + `:\n  1 value not CONFIGURED:\n  KEY +STATE +ERROR / DETAILS\n  ` +
			regexp.QuoteMeta(routeKey) + ` +PENDING +waiting for \S`)
		if !section.MatchString(out) {
			t.Errorf("no section of %s with the PENDING route:\n%s", withValues.Label, out)
		}
		if strings.Contains(out, plain.Label+":") || strings.Contains(out, "ABSENT") {
			t.Errorf("a section of an agent OK, or ABSENT:\n%s", out)
		}
	})

	t.Run("patterns and --problems", func(t *testing.T) {
		var one fleetJSON
		parseJSON(t, "fleet status LABEL", mustCtl(t, env, "fleet", "status", plain.Label, "-o", "json"), &one)
		if !slices.Equal(one.labels(), []string{plain.Label}) {
			t.Errorf("fleet status %s: %q", plain.Label, one.labels())
		}
		parseJSON(t, "fleet status PATTERNS", mustCtl(t, env, "fleet", "status", "nomatch", "ctl*", "-o", "json"), &one)
		if !slices.Equal(one.labels(), labels) {
			t.Errorf("fleet status nomatch 'ctl*': %q, want %q", one.labels(), labels)
		}
		out := mustCtl(t, env, "fleet", "status", "--problems")
		if !fleetRow(withValues.Label, "OK", true).MatchString(out) || strings.Contains(out, plain.Label) || strings.Contains(out, stopped.Label) {
			t.Errorf("fleet status --problems: want only %s (a value PENDING):\n%s", withValues.Label, out)
		}
		if out := mustCtl(t, env, "fleet", "status", "--problems", plain.Label, stopped.Label); out != "All 2 agents are OK.\n" {
			t.Errorf("fleet status --problems of the agents OK: %q", out)
		}
		if out := mustCtl(t, env, "fleet", "status", "--problems", plain.Label); out != "The agent is OK.\n" {
			t.Errorf("fleet status --problems of one agent OK: %q", out)
		}
		wantError(t, env, "", []string{"fleet", "status", "nomatch*", "x?"}, `fleet status: no label matches nomatch* x?`,
			"labels in etcd at "+etcd.endpoint+": "+strings.Join(labels, ", "))
	})

	t.Run("statuses broken by hand", func(t *testing.T) {
		root := "/vnf-agent/fleetbad/check/status/v1/"
		etcd.put(t,
			root+"agent", `{"state":"OK",`,
			root+"plugin/etcd", `{"state":"ERROR","last_change":"yesterday"}`,
			root+"plugin/linux", `{"state":"SOMETIMES"}`,
			root+"value/config/a", `nope`,
			root+"value/config/b", `{"value":{"key":"config/b","state":"FAILED","error":"boom"}}`,
			root+"value/config/c", `{}`,
			// Neither statuses nor configuration: ignored.
			"/vnf-agent/fleetjunk/check/leftover", `x`,
			"/vnf-agent/stray", `x`,
			"/vnf-agent/"+withValues.Label+"/check/leftover", `x`,
		)
		out := mustCtl(t, env, "fleet", "status", "--limit", "1")
		for _, want := range []*regexp.Regexp{
			fleetRow("fleetbad", "UNREADABLE", false),
			fleetRow(withValues.Label, "OK", true),
			fleetRow(plain.Label, "OK", true),
			regexp.MustCompile(`(?m)^fleetbad:\n  status UNREADABLE: /vnf-agent/fleetbad/check/status/v1/agent is not valid JSON: "\{\\"state\\":\\"OK\\","\n` +
				`  plugin etcd UNREADABLE: /vnf-agent/fleetbad/check/status/v1/plugin/etcd is not a status: .*yesterday.*\n` +
				`  plugin linux SOMETIMES\n` +
				`  3 values not CONFIGURED:\n  KEY +STATE +ERROR / DETAILS\n  config/a +UNREADABLE +the status is not JSON\n` +
				`  \.\.\. and 2 more \(--limit 0 lists them all\)\n`),
		} {
			if !want.MatchString(out) {
				t.Errorf("fleet status --limit 1: no match for %s:\n%s", want, out)
			}
		}
		if strings.Contains(out, "fleetjunk") || strings.Contains(out, "stray") {
			t.Errorf("keys that are not statuses are listed:\n%s", out)
		}
		var got fleetJSON
		parseJSON(t, "fleet status -o json", mustCtl(t, env, "fleet", "status", "-o", "json"), &got)
		bad := got.byLabel("fleetbad")
		if bad == nil || bad.State != "UNREADABLE" || bad.OK || !strings.Contains(bad.StatusError, "is not valid JSON") ||
			bad.Values.Total != 3 || bad.Values.ByState["UNREADABLE"] != 2 || bad.Values.ByState["FAILED"] != 1 || len(bad.Values.NotConfiguredValues) != 3 {
			t.Errorf("fleetbad: %+v", bad)
		}
		if ag := got.byLabel(withValues.Label); ag == nil || ag.stable() != fleet.byLabel(withValues.Label).stable() {
			t.Errorf("%s changed:\n%+v\nwas\n%+v", withValues.Label, ag, fleet.byLabel(withValues.Label))
		}
		if _, err := etcd.client.Delete(context.Background(), "/vnf-agent/fleetbad/", clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("stopped agents", func(t *testing.T) {
		// Its configuration stays in etcd: ABSENT.
		if err := stopped.stop(); err != nil {
			t.Fatal(err)
		}
		out := waitCtl(t, stopped.Label+" ABSENT", env, func(out string, code int) bool {
			return code == 0 && fleetRow(stopped.Label, "ABSENT", false).MatchString(out)
		}, "fleet", "status")
		if !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(stopped.Label)+` +ABSENT +- +- +- +-$`).MatchString(out) ||
			!strings.Contains(out, "(ABSENT: configuration in etcd but no status") {
			t.Errorf("the row of %s:\n%s", stopped.Label, out)
		}
		var got fleetJSON
		parseJSON(t, "fleet status -o json", mustCtl(t, env, "fleet", "status", "-o", "json"), &got)
		if ag := got.byLabel(stopped.Label); ag == nil || ag.OK || ag.LastChange != nil || len(ag.Plugins) != 0 || ag.Values.Published {
			t.Errorf("%s stopped: %+v", stopped.Label, ag)
		}
		// Nothing of it in etcd: gone.
		if err := plain.stop(); err != nil {
			t.Fatal(err)
		}
		waitCtl(t, plain.Label+" gone", env, func(out string, code int) bool {
			return code == 0 && !strings.Contains(out, plain.Label) && fleetRow(withValues.Label, "OK", true).MatchString(out)
		}, "fleet", "status")
	})
}

// TestAgentctlFleetErrors: no etcd (nothing listening, a listener that
// never answers, an etcd that never answers a read) within --timeout; an
// etcd without agents; bad arguments.
func TestAgentctlFleetErrors(t *testing.T) {
	t.Parallel()
	dead := strconv.Itoa(deadPorts(t, 1)[0])
	silent := strconv.Itoa(silentListener(t))
	slowKV := strconv.Itoa(slowGRPC(t, func(g *grpc.Server) { etcdserverpb.RegisterKVServer(g, &slowEtcd{}) }))
	empty := startSharedEtcd(t)
	junk := startSharedEtcd(t)
	junk.put(t, "/vnf-agent/x/check/leftover", "x", "/vnf-agent/stray", "x", "/other/a/config/x", "{}")

	for _, c := range []struct {
		name  string
		args  []string
		wants []string
	}{
		{"nothing listening", []string{"--etcd-endpoints", "127.0.0.1:" + dead, "--timeout", "1s"},
			[]string{"fleet status: no etcd at 127.0.0.1:" + dead + " (connection refused)", "--etcd-endpoints or ETCD_ENDPOINTS"}},
		{"a listener that never answers", []string{"--etcd-endpoints", "127.0.0.1:" + silent, "--timeout", "1s"},
			[]string{"no connection to etcd at 127.0.0.1:" + silent + " within 1s"}},
		{"an etcd that never answers a read", []string{"--etcd-endpoints", "127.0.0.1:" + slowKV, "--timeout", "2s"},
			[]string{"fleet status: etcd at 127.0.0.1:" + slowKV + " did not answer within 2s (raise --timeout)"}},
		{"no agents", []string{"--etcd-endpoints", empty.endpoint},
			[]string{"fleet status: no agent in etcd at " + empty.endpoint, "no status nor configuration under /vnf-agent/", "--etcd-endpoints"}},
		{"only keys that are not an agent's", []string{"--etcd-endpoints", junk.endpoint},
			[]string{"fleet status: no agent in etcd at " + junk.endpoint}},
		{"bad pattern", []string{"--etcd-endpoints", empty.endpoint, "vpp[1"}, []string{`label pattern "vpp[1": syntax error in pattern`}},
		{"negative limit", []string{"--etcd-endpoints", empty.endpoint, "--limit", "-1"}, []string{"--limit -1: want 0 (all) or more"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			wantError(t, nil, "", append([]string{"fleet", "status"}, c.args...), c.wants...)
			// --timeout bounds the wait (with room for a loaded machine).
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

// Sizes of TestAgentctlFleetLarge: the 100 agents of 1,000 values.
const (
	largeFleetAgents = 100
	largeFleetValues = 1000
)

// TestAgentctlFleetLarge: 100 agents with 1,000 value statuses each (100k
// keys, about 20 MB) are read whole, a few not CONFIGURED per agent
// counted and listed, with agentctl's memory well under what holding
// them all would take.
func TestAgentctlFleetLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("100k keys: not with -short")
	}
	t.Parallel()
	etcd := startSharedEtcd(t)
	// failing(i) of agent i's values are FAILED, the others CONFIGURED with
	// a derived value each.
	failing := func(i int) int { return i % 7 }
	label := func(i int) string { return fmt.Sprintf("node%03d", i) }
	start := time.Now()
	var ops []clientv3.Op
	flush := func() {
		if _, err := etcd.client.Txn(context.Background()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := range largeFleetAgents {
		root := "/vnf-agent/" + label(i) + "/check/status/v1/"
		ops = append(ops, clientv3.OpPut(root+"agent", `{"build_version":"v1.2.0","state":"OK","last_change":"1762077602"}`),
			clientv3.OpPut(root+"plugin/etcd", `{"state":"OK"}`))
		for j := range largeFleetValues {
			key := fmt.Sprintf("config/linux/l3/v2/route/10.%d.%d.0/24/eth%d", i, j%256, j/256)
			value := fmt.Sprintf(`{"value":{"key":%q,"state":"CONFIGURED","last_operation":"CREATE","descriptor_name":"linux-route"},`+
				`"derived_values":[{"key":"%s/gw","state":"CONFIGURED","descriptor_name":"linux-route-gw","derived":true}]}`, key, key)
			if j < failing(i) {
				value = fmt.Sprintf(`{"value":{"key":%q,"state":"FAILED","error":"network is unreachable","last_operation":"CREATE","descriptor_name":"linux-route"}}`, key)
			}
			ops = append(ops, clientv3.OpPut(root+"value/"+key, value))
			if len(ops) >= 126 { // etcd's default --max-txn-ops is 128
				flush()
			}
		}
	}
	flush()
	t.Logf("%d keys written in %v", largeFleetAgents*(largeFleetValues+2), time.Since(start).Round(time.Millisecond))

	env := []string{"ETCD_ENDPOINTS=" + etcd.endpoint}
	start = time.Now()
	stdout, peak := runMeasured(t, env, "fleet", "status", "-o", "json")
	t.Logf("fleet status -o json: %v, %d bytes of output, peak heap %d MB", time.Since(start).Round(time.Millisecond), len(stdout), peak)
	var fleet fleetJSON
	parseJSON(t, "fleet status -o json", stdout, &fleet)
	if len(fleet.Agents) != largeFleetAgents {
		t.Fatalf("%d agents, want %d", len(fleet.Agents), largeFleetAgents)
	}
	for i, ag := range fleet.Agents {
		v := ag.Values
		configured := largeFleetValues - failing(i)
		if ag.Label != label(i) || ag.State != "OK" || v.Total != 2*configured+failing(i) || v.ByState["CONFIGURED"] != 2*configured ||
			v.NotConfigured != failing(i) || len(v.NotConfiguredValues) != failing(i) || ag.OK != (failing(i) == 0) {
			t.Errorf("agent %d: %s %s ok=%v values %d %v, %d not configured, %d listed", i, ag.Label, ag.State, ag.OK,
				v.Total, v.ByState, v.NotConfigured, len(v.NotConfiguredValues))
		}
	}
	// Holding the 100k statuses (about 20 MB as JSON, in etcd's answer
	// and then decoded) would take several times more.
	if peak > 24 {
		t.Errorf("peak heap %d MB, want under 24 MB: the value statuses are not read a page at a time", peak)
	}

	start = time.Now()
	table, _ := runMeasured(t, env, "fleet", "status", "--limit", "2", "--problems")
	t.Logf("fleet status --limit 2 --problems: %v", time.Since(start).Round(time.Millisecond))
	rows := regexp.MustCompile(`(?m)^node\d{3} +OK `).FindAllString(table, -1)
	more := regexp.MustCompile(`(?m)^  \.\.\. and (\d) more \(--limit 0 lists them all\)$`).FindAllStringSubmatch(table, -1)
	wantRows, wantMore := 0, 0
	for i := range largeFleetAgents {
		if failing(i) > 0 {
			wantRows++
		}
		if failing(i) > 2 {
			wantMore++
		}
	}
	if len(rows) != wantRows || len(more) != wantMore {
		t.Errorf("fleet status --limit 2 --problems: %d rows, %d \"more\" lines; want %d, %d", len(rows), len(more), wantRows, wantMore)
	}
}

// gcLine is the heap sizes of a line of GODEBUG=gctrace=1: at the start
// of the collection, at its end, and live.
var gcLine = regexp.MustCompile(`(?m)^gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

// runMeasured runs agentctl, which must exit 0, with the Go runtime's
// trace of its garbage collections, and returns its stdout and the largest
// heap a collection saw, in MB (its process's peak RSS cannot tell: Linux
// counts in it that of the test process, which it was forked from).
func runMeasured(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	cmd := ctlCommand(ctx, t, env, args...)
	cmd.Env = append(cmd.Env, "GODEBUG=gctrace=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("agentctl %s: %v; stderr: %s", quoteArgs(args), err, testsupport.Tail(stderr.String(), 5000))
	}
	peak := 0
	for _, m := range gcLine.FindAllStringSubmatch(stderr.String(), -1) {
		for _, n := range m[1:3] {
			mb, _ := strconv.Atoi(n)
			peak = max(peak, mb)
		}
	}
	return stdout.String(), peak
}

// TestAgentctlFleetToken: the embedded etcd of an agent with a token lists
// nothing without it (the error says what etcd wants), and the agent with
// it, as kvdb does.
func TestAgentctlFleetToken(t *testing.T) {
	t.Parallel()
	a := startAgent(t, agentOptions{Token: "fleet-t0ken"})
	env := []string{"ETCD_ENDPOINTS=" + a.EtcdEndpoint}
	wantError(t, env, "", []string{"fleet", "status"}, "fleet status: etcd at "+a.EtcdEndpoint, "wants a user and password",
		"--token, --token-file or NETAGENT_TOKEN")
	wantError(t, env, "", []string{"fleet", "status", "--token", "wrong"}, "etcd at "+a.EtcdEndpoint+" rejected user root")
	waitCtl(t, a.Label+" OK", append(env, "NETAGENT_TOKEN="+a.Token), func(out string, code int) bool {
		return code == 0 && fleetRow(a.Label, "OK", true).MatchString(out)
	}, "fleet", "status")
}

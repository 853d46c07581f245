package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// startFleetEtcd starts an embedded etcd on free loopback ports for the
// test and returns a client of it.
func startFleetEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	ports := testsupport.FreePorts(t, 2)
	e, err := etcdsource.StartEmbedded(etcdsource.EmbeddedConfig{Dir: filepath.Join(t.TempDir(), "etcd"),
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func put(t *testing.T, cli *clientv3.Client, kvs ...string) {
	t.Helper()
	for i := 0; i < len(kvs); i += 2 {
		if _, err := cli.Put(context.Background(), kvs[i], kvs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
}

// hookedKV is a KV that calls after once, after the answer of the request
// for which when is true.
type hookedKV struct {
	clientv3.KV
	when  func(key string) bool
	after func()
	once  sync.Once
}

func (h *hookedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := h.KV.Get(ctx, key, opts...)
	if err == nil && h.when(key) {
		h.once.Do(h.after)
	}
	return resp, err
}

// summary is an agent of the fleet on one line, for comparisons.
func summary(ag fleetAgent) string {
	var plugins, listed []string
	for _, p := range ag.Plugins {
		plugins = append(plugins, strings.TrimSpace(p.Name+" "+p.State+" "+notAStatus(p.Error)))
	}
	for _, v := range ag.Values.NotConfiguredValues {
		listed = append(listed, v.Key+" "+v.State)
	}
	s := fmt.Sprintf("%s %s ok=%v plugins=[%s]", ag.Label, ag.State, ag.OK, strings.Join(plugins, "; "))
	if ag.StatusError != "" {
		s += " error=" + notAStatus(ag.StatusError)
	}
	if ag.Values.Published {
		s += fmt.Sprintf(" values=%d %v not_configured=%d [%s]", ag.Values.Total, ag.Values.ByState, ag.Values.NotConfigured, strings.Join(listed, "; "))
	}
	return s
}

// notAStatus shortens the error of a status that does not decode to what
// agentctl says (protojson's own words vary on purpose).
func notAStatus(err string) string {
	if i := strings.Index(err, " is not a status: "); i >= 0 {
		return err[:i] + " is not a status: ..."
	}
	return err
}

const (
	statusRoot = "/check/status/v1/"
	agentOK    = `{"build_version":"v1.2.0","state":"OK","start_time":"1762077600","last_change":"1762077602","last_update":"1762077612",` +
		`"plugins":[{"name":"orchestrator","state":"OK","last_change":"1762077602"},{"name":"etcd","state":"OK"}]}`
)

// fleetKeys are the keys of TestFleetReader: labels in each case, with
// keys that are neither statuses nor configuration.
var fleetKeys = []string{
	"/vnf-agent/a" + statusRoot + "agent", agentOK,
	// The plugin's own key wins over the agent's list.
	"/vnf-agent/a" + statusRoot + "plugin/etcd", `{"state":"ERROR","error":"lost","last_change":"1762077700"}`,
	"/vnf-agent/a" + statusRoot + "plugin/orchestrator", `{"state":"OK"}`,
	"/vnf-agent/a" + statusRoot + "value/k0", `{"value":{"key":"k0","state":"CONFIGURED"}}`,
	"/vnf-agent/a" + statusRoot + "value/k1", `{"value":{"key":"k1","state":"PENDING","details":["x up"]}}`,
	"/vnf-agent/a" + statusRoot + "value/k2", `{"value":{"key":"k2","state":"OBTAINED"}}`,
	"/vnf-agent/a" + statusRoot + "value/k3", `{"value":{"key":"k3","state":"CONFIGURED"},"derived_values":[{"key":"k3/d","state":"FAILED","error":"boom","derived":true}]}`,
	"/vnf-agent/a" + statusRoot + "value/k4", `{"value":{"key":"k4","state":"CONFIGURED"}}`,
	"/vnf-agent/a" + statusRoot + "value/k5", `not json`,
	"/vnf-agent/a" + statusRoot + "value/k6/x", `{"value":{"key":"k6/x","state":"INVALID","details":["name"]}}`,
	"/vnf-agent/a/check/other", "not a status",
	"/vnf-agent/a/config/linux/interfaces/v2/interface/x", `{"name":"x"}`,
	// INIT is left out of the JSON (its zero value); "a.b/" sorts before "a/".
	"/vnf-agent/a.b" + statusRoot + "agent", `{"build_version":"v1.2.0","last_change":"1762077602"}`,
	"/vnf-agent/b/config/linux/l3/v2/route/10.0.0.0/8/x", `{}`,
	"/vnf-agent/c/check/leftover", "x",
	"/vnf-agent/d" + statusRoot + "agent", `{"state":"OK"`,
	"/vnf-agent/d" + statusRoot + "plugin/p", `[1]`,
	"/vnf-agent/nolabel", "x",
	"/vnf-agent/bad label/config/x", "{}",
	"/vnf-agentx/a/config/x", "{}",
}

// TestFleetReader: every case of label (statuses published, INIT, only
// configuration: ABSENT, unreadable statuses, only other keys: not
// listed), the value statuses read in pages of 3 and counted (derived
// values, unreadable ones), the first --limit listed; writes made during
// the read are not seen (one revision).
func TestFleetReader(t *testing.T) {
	cli := startFleetEtcd(t)
	put(t, cli, fleetKeys...)

	valuePrefix := "/vnf-agent/a" + statusRoot + "value/"
	kv := &hookedKV{KV: cli, when: func(key string) bool { return key == valuePrefix },
		after: func() {
			// Between the first page of a's values and the next ones.
			put(t, cli, valuePrefix+"k4a", `{"value":{"key":"k4a","state":"FAILED"}}`,
				"/vnf-agent/z"+statusRoot+"agent", `{"state":"OK"}`,
				"/vnf-agent/a"+statusRoot+"plugin/orchestrator", `{"state":"ERROR"}`)
		}}
	r := &fleetReader{kv: kv, timeout: 10 * time.Second, limit: 2, pageSize: 3}
	fs, err := r.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ag := range fs.Agents {
		got = append(got, summary(ag))
	}
	want := []string{
		"a OK ok=false plugins=[etcd ERROR lost; orchestrator OK] values=8 map[CONFIGURED:3 FAILED:1 INVALID:1 OBTAINED:1 PENDING:1 UNREADABLE:1] not_configured=4 [k1 PENDING; k3/d FAILED]",
		"a.b INIT ok=false plugins=[]",
		"b ABSENT ok=false plugins=[]",
		"d UNREADABLE ok=false plugins=[p UNREADABLE /vnf-agent/d/check/status/v1/plugin/p is not a status: ...] error=/vnf-agent/d/check/status/v1/agent is not valid JSON: \"{\\\"state\\\":\\\"OK\\\"\"",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("agents:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(fs.Agents) > 0 {
		a := fs.Agents[0]
		if a.BuildVersion != "v1.2.0" || a.LastChange == nil || a.LastChange.Unix() != 1762077602 || a.StartTime.Unix() != 1762077600 || a.LastUpdate.Unix() != 1762077612 {
			t.Errorf("a: version %q, times %v %v %v", a.BuildVersion, a.StartTime, a.LastChange, a.LastUpdate)
		}
		if p := a.Plugins[0]; p.LastChange == nil || p.LastChange.Unix() != 1762077700 {
			t.Errorf("a's plugin etcd: %+v, want last_change from its key", p)
		}
		if v := a.Values.NotConfiguredValues; len(v) == 2 && (v[0].explanation() != "waiting for x up" || v[0].BaseKey != "" || v[1].Error != "boom" || !v[1].Derived || v[1].BaseKey != "k3") {
			t.Errorf("a's values listed: %+v", v)
		}
	}
	if len(r.skipped) != 0 {
		t.Errorf("skipped %q without patterns", r.skipped)
	}

	// Read again (the writes of the hook are seen now), all values listed.
	r = &fleetReader{kv: cli, timeout: 10 * time.Second, pageSize: 3}
	again, err := r.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again.Revision <= fs.Revision || len(again.Agents) != 5 || again.Agents[4].Label != "z" {
		t.Fatalf("second read: revision %d (first %d), %d agents", again.Revision, fs.Revision, len(again.Agents))
	}
	if a := again.Agents[0]; a.Values.NotConfigured != 5 || len(a.Values.NotConfiguredValues) != 5 || a.Values.NotConfiguredValues[2].Key != "k4a" {
		t.Errorf("second read, limit 0: %s", summary(a))
	}
}

// TestFleetReaderPatterns: the patterns keep the matching labels; the
// others found are named (for the error when none matches).
func TestFleetReaderPatterns(t *testing.T) {
	cli := startFleetEtcd(t)
	put(t, cli, fleetKeys...)
	match, err := labelMatcher([]string{"a*", "[d]"})
	if err != nil {
		t.Fatal(err)
	}
	r := &fleetReader{kv: cli, timeout: 10 * time.Second, pageSize: fleetValuePage, match: match}
	fs, err := r.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, ag := range fs.Agents {
		labels = append(labels, ag.Label)
	}
	if fmt.Sprint(labels) != "[a a.b d]" || fmt.Sprint(r.skipped) != "[b c]" {
		t.Errorf("labels %q, skipped %q; want [a a.b d], [b c]", labels, r.skipped)
	}
	for _, bad := range []string{"[", "a[b", `x\`} {
		if _, err := labelMatcher([]string{"a", bad}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("label pattern %q", bad)) {
			t.Errorf("labelMatcher(%q): %v, want an error naming it", bad, err)
		}
	}
}

// TestFleetReaderCompacted: when etcd compacts the revision being read,
// the read starts again at the newest one.
func TestFleetReaderCompacted(t *testing.T) {
	cli := startFleetEtcd(t)
	put(t, cli, fleetKeys...)
	valuePrefix := "/vnf-agent/a" + statusRoot + "value/"
	kv := &hookedKV{KV: cli, when: func(key string) bool { return key == valuePrefix },
		after: func() {
			resp, err := cli.Put(context.Background(), valuePrefix+"k4a", `{"value":{"key":"k4a","state":"FAILED"}}`)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Compact(context.Background(), resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
				t.Fatal(err)
			}
		}}
	r := &fleetReader{kv: kv, timeout: 10 * time.Second, pageSize: 3}
	fs, err := r.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a := fs.Agents[0]; a.Values.Total != 9 || a.Values.ByState["FAILED"] != 2 {
		t.Errorf("after the compaction: %s; want the value written before it", summary(a))
	}
}

// TestFleetValuesAdd: the statuses a value key may hold.
func TestFleetValuesAdd(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{`{"value":{"key":"k","state":"CONFIGURED"}}`, "1 map[CONFIGURED:1] 0 []"},
		{`{"value":{"key":"k"}}`, "1 map[NONEXISTENT:1] 1 [k NONEXISTENT ]"},
		{`{"value":{"key":"k","state":"RETRYING","error":"e"},"derived_values":[{"key":"k/d","state":"PENDING"}]}`,
			"2 map[PENDING:1 RETRYING:1] 2 [k RETRYING e; k/d PENDING ]"},
		{`{"value":{"key":"k","state":"SOMEDAY"}}`, "1 map[SOMEDAY:1] 1 [k SOMEDAY ]"},
		{`garbage`, "1 map[UNREADABLE:1] 1 [k UNREADABLE the status is not JSON]"},
		{``, "1 map[UNREADABLE:1] 1 [k UNREADABLE the status is not JSON]"},
		{`[1]`, "1 map[UNREADABLE:1] 1 [k UNREADABLE not a value status: json: cannot unmarshal array into Go value of type main.baseValueStatus]"},
		{`{}`, "1 map[UNREADABLE:1] 1 [k UNREADABLE not a value status: no value.key]"},
	} {
		v := fleetValues{ByState: map[string]int{}}
		v.add("k", []byte(c.data), 0)
		var listed []string
		for _, vs := range v.NotConfiguredValues {
			listed = append(listed, vs.Key+" "+vs.State+" "+vs.Error)
		}
		if got := fmt.Sprintf("%d %v %d [%s]", v.Total, v.ByState, v.NotConfigured, strings.Join(listed, "; ")); got != c.want || !v.Published {
			t.Errorf("add(%q): %s (published %v), want %s", c.data, got, v.Published, c.want)
		}
	}
}

// TestPrintFleet: the table and what follows it, for an agent in each
// state.
func TestPrintFleet(t *testing.T) {
	now := time.Date(2025, 11, 2, 10, 10, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	local := func(d time.Duration) string { return at(d).Local().Format("2006-01-02 15:04:05") }
	values := func(byState map[string]int, notConfigured int, listed ...fleetValue) fleetValues {
		return fleetValues{Published: true, ByState: byState, NotConfigured: notConfigured, NotConfiguredValues: listed}
	}
	fs := &fleetStatus{Agents: []fleetAgent{
		{Label: "edge1", State: "OK", LastChange: at(3*time.Minute + 12*time.Second), BuildVersion: "v1.2.0",
			Plugins: []fleetPlugin{{Name: "etcd", State: "OK"}},
			Values: values(map[string]int{"CONFIGURED": 10, "PENDING": 2, "FAILED": 1}, 3,
				fleetValue{valueStatus: valueStatus{Key: "config/linux/l3/v2/route/10.0.0.0/8/eth9", State: "PENDING", Details: []string{"interface eth9 up"}}},
				fleetValue{valueStatus: valueStatus{Key: "config/x/d", State: "FAILED", Error: "file exists", Derived: true}, BaseKey: "config/x"},
				fleetValue{valueStatus: valueStatus{Key: "config/y/d", State: "PENDING", Derived: true}, BaseKey: "config/y"})},
		{Label: "edge2", State: "ERROR", LastChange: at(5 * time.Second), BuildVersion: "v1.2.0",
			Plugins: []fleetPlugin{{Name: "govpp", State: "ERROR", Error: "not connected\nto /run/vpp/api.sock", LastChange: at(5 * time.Second)}, {Name: "linux", State: "INIT"}},
			Values:  fleetValues{ByState: map[string]int{}}},
		{Label: "edge3", State: "ABSENT", Values: fleetValues{ByState: map[string]int{}}},
		{Label: "edge4", State: "UNREADABLE", StatusError: "/vnf-agent/edge4/check/status/v1/agent is not valid JSON: \"x\"", Values: fleetValues{ByState: map[string]int{}}},
		{Label: "edge5", State: "INIT", LastChange: at(50 * time.Hour), Values: values(map[string]int{"CONFIGURED": 25, "PENDING": 25}, 25,
			fleetValue{valueStatus: valueStatus{Key: "config/a", State: "PENDING"}})},
	}}
	var b bytes.Buffer
	if err := printFleet(&b, fs, now); err != nil {
		t.Fatal(err)
	}
	want := `LABEL STATE LAST CHANGE VERSION PLUGINS NOT OK VALUES
edge1 OK ` + local(3*time.Minute+12*time.Second) + ` (3m12s ago) v1.2.0 - 13 (10 CONFIGURED, 2 PENDING, 1 FAILED)
edge2 ERROR ` + local(5*time.Second) + ` (5s ago) v1.2.0 govpp ERROR, linux INIT not published
edge3 ABSENT - - - -
edge4 UNREADABLE - - - not published
edge5 INIT ` + local(50*time.Hour) + ` (2d2h ago) - - 50 (25 CONFIGURED, 25 PENDING)
(ABSENT: configuration in etcd but no status: the agent is stopped, cut off from
etcd for longer than its status TTL, or publishes none: etcd.status.disabled.)

edge1:
 3 values not CONFIGURED:
 KEY STATE ERROR / DETAILS
 config/linux/l3/v2/route/10.0.0.0/8/eth9 PENDING waiting for interface eth9 up
 config/x/d FAILED derived from config/x: file exists
 config/y/d PENDING derived from config/y

edge2:
 plugin govpp ERROR since ` + local(5*time.Second) + ` (5s ago): not connected; to /run/vpp/api.sock
 plugin linux INIT

edge4:
 status UNREADABLE: /vnf-agent/edge4/check/status/v1/agent is not valid JSON: "x"

edge5:
 25 values not CONFIGURED:
 KEY STATE ERROR / DETAILS
 config/a PENDING -
 ... and 24 more (--limit 0 lists them all)
`
	// Columns squeezed to one space: the alignment is tabwriter's.
	got := strings.Join(strings.Fields(strings.ReplaceAll(b.String(), "\n", " \n ")), " ")
	wantSqueezed := strings.Join(strings.Fields(strings.ReplaceAll(want, "\n", " \n ")), " ")
	if got != wantSqueezed {
		t.Errorf("printFleet:\n%s\nwant (columns squeezed):\n%s", b.String(), want)
	}
	// The values are indented under their agent.
	if !strings.Contains(b.String(), "\n  config/x/d ") {
		t.Errorf("the values are not indented:\n%s", b.String())
	}
}

// TestFleetAgo: ages to the second, in at most two units.
func TestFleetAgo(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s ago"}, {1400 * time.Millisecond, "1s ago"}, {59 * time.Second, "59s ago"}, {time.Minute, "1m00s ago"},
		{3*time.Minute + 12*time.Second, "3m12s ago"}, {time.Hour + 59*time.Second, "1h00m ago"}, {47*time.Hour + 59*time.Minute, "47h59m ago"},
		{48 * time.Hour, "2d0h ago"}, {400*24*time.Hour + 5*time.Hour, "400d5h ago"}, {-2 * time.Second, "in 2s"},
	} {
		if got := ago(c.d); got != c.want {
			t.Errorf("ago(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// TestFleetAgentStatus: the agent's status as the publisher writes it, with
// what a newer agent or a hand may put there instead.
func TestFleetAgentStatus(t *testing.T) {
	const key = "/vnf-agent/x/check/status/v1/agent"
	for _, c := range []struct{ data, want string }{
		{agentOK, "OK v1.2.0 1762077602 [etcd OK; orchestrator OK]"},
		{`{"last_change":1762077602}`, "INIT  1762077602 []"}, // INIT left out; a number where a string is usual
		{`{"state":"ERROR","future_field":{"a":1},"plugins":[{"name":"govpp","state":"ERROR","error":"no socket"}]}`, "ERROR  0 [govpp ERROR no socket]"},
		{`{"state":"DRAINING"}`, "DRAINING  0 []"},
		{`{"state":2}`, "ERROR  0 []"},
		{`{"state":"OK","last_change":"yesterday"}`, "UNREADABLE " + key + " is not a status: ..."},
		{`["OK"]`, "UNREADABLE " + key + " is not a status: ..."},
		{`{"state":"OK"`, `UNREADABLE ` + key + ` is not valid JSON: "{\"state\":\"OK\""`},
	} {
		ag := fleetAgent{}
		ag.setAgent(key, []byte(c.data))
		ag.finish()
		var got string
		if ag.StatusError != "" {
			got = ag.State + " " + notAStatus(ag.StatusError)
		} else {
			var plugins []string
			for _, p := range ag.Plugins {
				plugins = append(plugins, strings.TrimSpace(p.Name+" "+p.State+" "+p.Error))
			}
			var changed int64
			if ag.LastChange != nil {
				changed = ag.LastChange.Unix()
			}
			got = fmt.Sprintf("%s %s %d [%s]", ag.State, ag.BuildVersion, changed, strings.Join(plugins, "; "))
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.data, got, c.want)
		}
	}
}

// TestFleetFirstKey: the first key under /vnf-agent/ from any point, found
// with growing ranges, is the one a single range to the end finds; the
// ranges grow and end at the end of /vnf-agent/.
func TestFleetFirstKey(t *testing.T) {
	cli := startFleetEtcd(t)
	const p = "/vnf-agent/"
	keys := []string{
		p + "\x00", p + " /x", p + "a/", p + "a/x", p + "a.b/x", p + "a0/x", p + "a\xff/x", p + "b\xff/x", p + "b\xff\xff",
		p + "node009/x", p + "node010/x", p + "node1/x", p + "z", p + "zz/y/z", p + "~/x", p + "é/x", p + "\xff\xff/x", p + "\xff\xff\xff",
		// Outside /vnf-agent/.
		"/vnf-agent", "/vnf-agent0/x", "/vnf-agen/x", "/x",
	}
	for _, k := range keys {
		put(t, cli, k, "x")
	}
	froms := []string{p, p + "\x00", p + "\xff", p + "\xff\xff\xff\xff"}
	for _, k := range keys {
		for i := len(p); i <= len(k); i++ {
			froms = append(froms, k[:i], k[:i]+"\x00", clientv3.GetPrefixRangeEnd(k[:i]))
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	const alphabet = "\x00\x01 ./0129:@AZ[az{~\x7f\x80\xc3\xa9\xfe\xff"
	for range 200 {
		b := []byte(p)
		for range 1 + rnd.IntN(5) {
			b = append(b, alphabet[rnd.IntN(len(alphabet))])
		}
		froms = append(froms, string(b))
	}
	end := clientv3.GetPrefixRangeEnd(p)
	r := &fleetReader{kv: cli, timeout: 10 * time.Second}
	for _, from := range froms {
		if !strings.HasPrefix(from, p) {
			continue
		}
		want, err := cli.Get(context.Background(), from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		if err != nil {
			t.Fatal(err)
		}
		got, found, err := r.firstKey(context.Background(), from)
		if err != nil {
			t.Fatal(err)
		}
		if found != (len(want.Kvs) > 0) || found && got != string(want.Kvs[0].Key) {
			t.Errorf("firstKey(%q) = %q %v, want %v", from, got, found, want.Kvs)
		}
		bounds := growingBounds(from)
		if !slices.IsSorted(bounds) || bounds[0] <= from || bounds[len(bounds)-1] != end {
			t.Errorf("growingBounds(%q) = %q: want growing, after it, to %q", from, bounds, end)
		}
	}
}

// rangeLog is a KV that records the ranges asked for.
type rangeLog struct {
	clientv3.KV
	ranges [][2]string
}

func (l *rangeLog) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	op := clientv3.OpGet(key, opts...)
	l.ranges = append(l.ranges, [2]string{key, string(op.RangeBytes())})
	return l.KV.Get(ctx, key, opts...)
}

// TestFleetFirstKeyWalk: finding every label, label after label, makes
// etcd walk (count) a few times as many keys as there are, where ranges
// to the end of /vnf-agent/ would walk every later label's keys for each.
func TestFleetFirstKeyWalk(t *testing.T) {
	cli := startFleetEtcd(t)
	var labels []string
	for i := range 100 {
		labels = append(labels, fmt.Sprintf("node%03d", i))
	}
	for c := 'a'; c <= 'z'; c++ {
		labels = append(labels, string(c), "edge-"+string(c))
	}
	const perLabel = 10
	var ops []clientv3.Op
	for _, label := range labels {
		for j := range perLabel {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/vnf-agent/%s/config/k%d", label, j), "x"))
		}
		if len(ops) >= 100 {
			if _, err := cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	if _, err := cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
	keys := len(labels) * perLabel

	log := &rangeLog{KV: cli}
	r := &fleetReader{kv: log, timeout: 10 * time.Second}
	var found []string
	for from := "/vnf-agent/"; ; {
		key, ok, err := r.firstKey(context.Background(), from)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		label, _, _ := strings.Cut(strings.TrimPrefix(key, "/vnf-agent/"), "/")
		found = append(found, label)
		from = clientv3.GetPrefixRangeEnd("/vnf-agent/" + label + "/")
	}
	slices.Sort(labels)
	if !slices.Equal(found, labels) {
		t.Fatalf("labels found: %q, want %q", found, labels)
	}
	walked := 0
	for _, rg := range log.ranges {
		resp, err := cli.Get(context.Background(), rg[0], clientv3.WithRange(rg[1]), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		walked += int(resp.Count)
	}
	quadratic := 0
	for i := range labels {
		quadratic += (len(labels) - i) * perLabel
	}
	t.Logf("%d labels, %d keys: %d requests walked %d keys (ranges to the end: %d)", len(labels), keys, len(log.ranges), walked, quadratic)
	// The first range walks every key (nothing is known yet); most others
	// the next label's; those after "e" and "n" every "edge-*" and "node*"
	// label, those after node009, node019... the next ten (6340 keys in all).
	if walked > 5*keys {
		t.Errorf("%d keys walked for %d keys", walked, keys)
	}
}

// TestFleetJSON: the field names of -o json and -o yaml, which scripts
// rely on (fleet status --help lists them).
func TestFleetJSON(t *testing.T) {
	changed := time.Unix(1762077602, 0).UTC()
	fs := fleetStatus{Revision: 42, Agents: []fleetAgent{{
		Label: "vpp1", State: "OK", BuildVersion: "v1.2.0", LastChange: &changed,
		Plugins: []fleetPlugin{{Name: "etcd", State: "ERROR", Error: "lost", LastChange: &changed}},
		Values: fleetValues{Published: true, Total: 2, ByState: map[string]int{"CONFIGURED": 1, "FAILED": 1}, NotConfigured: 1,
			NotConfiguredValues: []fleetValue{{valueStatus: valueStatus{Key: "k/d", State: "FAILED", Error: "boom", Derived: true}, BaseKey: "k"}}},
	}}}
	data, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"revision":42,"agents":[{"label":"vpp1","state":"OK","ok":false,"status_error":"","build_version":"v1.2.0","build_date":"",` +
		`"commit_hash":"","start_time":null,"last_change":"2025-11-02T10:00:02Z","last_update":null,` +
		`"plugins":[{"name":"etcd","state":"ERROR","error":"lost","last_change":"2025-11-02T10:00:02Z","last_update":null}],` +
		`"values":{"published":true,"total":2,"by_state":{"CONFIGURED":1,"FAILED":1},"not_configured":1,` +
		`"not_configured_values":[{"key":"k/d","state":"FAILED","error":"boom","last_operation":"","details":null,"descriptor_name":"","derived":true,"base_key":"k"}]}}]}`
	if string(data) != want {
		t.Errorf("JSON:\n%s\nwant:\n%s", data, want)
	}
}

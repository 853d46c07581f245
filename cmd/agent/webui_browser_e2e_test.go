package main

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	"github.com/netagent-io/netagent/tests/browser"
)

// The browser tests of the web view (/ui/, plugins/kvscheduler/webui):
// headless Chromium (tests/browser) against an agent running in the test,
// with an embedded etcd and Linux values in a network namespace, as a
// person would use the pages. They rely only on the ids, classes and data
// attributes the webui package documents as its contract.

// uiValues are the values of the browser tests, in three states:
//
//   - CONFIGURED, a chain: a route through the namespace end of a veth pair
//     depends on "interface <peer> up", derived from that end, which
//     depends on the host end (its veth peer);
//   - PENDING: a veth whose peer nobody configures (it waits for the
//     peer's interface), and a route through it (it waits for "interface
//     <lone> up", which the pending veth does not derive);
//   - INVALID: a host-scope route with a gateway.
type uiValues struct {
	names                          netNames
	lone, missing                  string // the pending veth and the peer it waits for
	hostKey, peerKey, routeKey     string
	peerUpKey, peerAddrKey         string // derived from the namespace end: "interface <peer> up", its address
	loneKey, loneRouteKey, loneDep string // loneDep: the interface lone waits for
	invalidKey                     string
}

// startUIAgent runs an agent with the values of uiValues and waits until
// each is in its state.
func startUIAgent(t *testing.T) (*agent, uiValues) {
	t.Helper()
	n := uniqueNames(t, "ui")
	cfg := testConfig(t)
	a := startAgent(t, cfg, true)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)

	v := uiValues{names: n, lone: fmt.Sprintf("uiw%d", pid), missing: fmt.Sprintf("uiz%d", pid)}
	v.hostKey = kv.put(veth(n.host, n.peer, "", 0, "172.30.42.1/24"))
	v.peerKey = kv.put(veth(n.peer, n.host, n.ns, 0, "172.30.42.2/24"))
	v.routeKey = kv.put(route(n.peer, "10.242.0.0/16", "172.30.42.1"))
	v.peerUpKey, v.peerAddrKey = ifplugin.StateKey(n.peer, true), ifplugin.AddressKey(n.peer, "172.30.42.2/24")
	v.loneKey = kv.put(veth(v.lone, v.missing, "", 0))
	v.loneDep = ifplugin.InterfaceKey(v.missing)
	v.loneRouteKey = kv.put(route(v.lone, "10.243.0.0/16", ""))
	v.invalidKey = kv.put(&linuxl3.Route{OutgoingInterface: n.peer, DstNetwork: "10.244.0.0/16", GwAddr: "172.30.42.1", Scope: linuxl3.Route_HOST})

	for key, state := range map[string]string{
		v.hostKey: "CONFIGURED", v.peerKey: "CONFIGURED", v.routeKey: "CONFIGURED",
		v.loneKey: "PENDING", v.loneRouteKey: "PENDING", v.invalidKey: "INVALID",
	} {
		a.waitState(key, state)
	}
	return a, v
}

// TestE2EWebUIInBrowser: the scenario of issue 22 in a real browser. From
// the summary to the values, filtered to PENDING with the form (only the
// two pending values are listed); a pending value's page shows its state
// and its unmet dependency; a configured route's dependency is followed
// along the chain route -> "interface up" -> namespace end -> host end,
// with the neighbourhood graph of each; the transaction that created the
// route is found in the history and opened, with its planned and executed
// operations as the REST API has them.
func TestE2EWebUIInBrowser(t *testing.T) {
	needRoot(t)
	browser.Require(t) // before the agent starts: a skip costs nothing
	a, v := startUIAgent(t)
	b := browser.Start(t)

	// The summary: counts by state, what is pending.
	b.Open(a.url("/ui/"))
	b.Find("nav#nav a#nav-summary")
	for state, want := range map[string]string{"PENDING": "2", "INVALID": "1"} {
		if got := b.Texts(`table#by-state tr[data-state="` + state + `"] td.count`); !slices.Equal(got, []string{want}) {
			t.Errorf("summary: %s count %q, want %s", state, got, want)
		}
	}
	if got := b.Attrs("table#by-descriptor tr[data-descriptor]", "data-descriptor"); !containsAll(got, ifplugin.InterfaceDescriptorName, l3plugin.RouteDescriptorName) {
		t.Errorf("summary: descriptors %q, want %s and %s among them", got, ifplugin.InterfaceDescriptorName, l3plugin.RouteDescriptorName)
	}
	if got := b.Texts("section#pending a.value-link"); !sameSet(got, v.loneKey, v.loneRouteKey) {
		t.Errorf("summary: pending %q, want %s and %s", got, v.loneKey, v.loneRouteKey)
	}
	b.Find("section#health")

	// The values: all states, then only PENDING with the filter form.
	b.Find("a#nav-values").Follow()
	if got := rowStates(b); got[v.routeKey] != "CONFIGURED" || got[v.loneKey] != "PENDING" || got[v.invalidKey] != "INVALID" {
		t.Errorf("values before the filter: %v", got)
	}
	// Pages of two values: next, then previous.
	b.Open(a.url("/ui/values?size=2"))
	first := b.Attrs("table#values tr.value", "data-key")
	if len(first) != 2 || b.Count("a#prev") != 0 {
		t.Errorf("first page of 2: %q, %d a#prev", first, b.Count("a#prev"))
	}
	b.Find("a#next").Follow()
	if second := b.Attrs("table#values tr.value", "data-key"); len(second) != 2 || slices.Contains(second, first[0]) || slices.Contains(second, first[1]) {
		t.Errorf("second page of 2: %q after %q", second, first)
	}
	b.Find("a#prev").Follow()
	if again := b.Attrs("table#values tr.value", "data-key"); !slices.Equal(again, first) {
		t.Errorf("back to the first page: %q, want %q", again, first)
	}
	// A bad parameter: 400, and the page names it.
	b.Open(a.url("/ui/values?state=NOSUCHSTATE"))
	if got := pageStatus(b); got != 400 {
		t.Errorf("state=NOSUCHSTATE: status %d, want 400", got)
	}
	if got := b.Find("p#error").Text(); !strings.Contains(got, "state") {
		t.Errorf("state=NOSUCHSTATE: error %q does not name the parameter", got)
	}

	b.Find("a#nav-values").Follow()
	b.Find("form#filter select[name=state]").Select("PENDING")
	b.Find("form#filter button#apply").Follow()
	if u := parseURL(t, b.URL()); u.Path != "/ui/values" || u.Query().Get("state") != "PENDING" {
		t.Errorf("after apply: %s, want /ui/values?state=PENDING", u)
	}
	got := rowStates(b)
	want := map[string]string{v.loneKey: "PENDING", v.loneRouteKey: "PENDING"}
	if !maps.Equal(got, want) {
		t.Errorf("values filtered to PENDING: %v, want %v", got, want)
	}
	if got := b.Find("span#total").Text(); got != "2" {
		t.Errorf("total %q, want 2", got)
	}
	if got := b.Find("form#filter select[name=state]").Property("value"); got != "PENDING" {
		t.Errorf("the form after apply shows state %v, want PENDING kept", got)
	}

	// A pending value: its state and its unmet dependency.
	b.Find(attrSel("table#values tr.value", "data-key", v.loneKey) + " a.value-link").Follow()
	if got := b.Find("h1#key").Text(); got != v.loneKey {
		t.Errorf("value page of %s", got)
	}
	if got := b.Find("span#state").Text(); got != "PENDING" {
		t.Errorf("%s: state %q, want PENDING", v.loneKey, got)
	}
	if got := b.Find(`dl#status dd[data-field="descriptor"]`).Text(); got != ifplugin.InterfaceDescriptorName {
		t.Errorf("%s: descriptor %q", v.loneKey, got)
	}
	if got := b.Attrs("ul#dependencies li.unmet a.dep-link", "data-key"); !slices.Equal(got, []string{v.loneDep}) {
		t.Errorf("%s: unmet dependencies %q, want [%s]", v.loneKey, got, v.loneDep)
	}
	if got := b.Count("ul#dependencies li.met"); got != 0 {
		t.Errorf("%s: %d met dependencies, want none", v.loneKey, got)
	}
	// The dependency is no value: its page says so (404, p#error).
	b.Find(attrSel("ul#dependencies a.dep-link", "data-key", v.loneDep)).Follow()
	if got := parseURL(t, b.URL()).Query().Get("key"); got != v.loneDep {
		t.Errorf("the dependency link led to the page of %q, want %s", got, v.loneDep)
	}
	if got := pageStatus(b); got != 404 {
		t.Errorf("the missing dependency's page: status %d, want 404", got)
	}
	if got := b.Find("p#error").Text(); !strings.Contains(got, v.loneDep) {
		t.Errorf("the missing dependency's page: error %q, want it to name %s", got, v.loneDep)
	}
	if got := b.Count("span#state"); got != 0 {
		t.Errorf("the missing dependency's page shows a state")
	}

	// The chain of a configured route, found with the filter's search.
	b.Find("a#nav-values").Follow()
	b.Find("form#filter select[name=state]").Select("CONFIGURED")
	b.Find("form#filter input[name=q]").Type("10.242.0.0")
	b.Find("form#filter button#apply").Follow()
	if got := rowStates(b); !maps.Equal(got, map[string]string{v.routeKey: "CONFIGURED"}) {
		t.Fatalf("CONFIGURED values with 10.242.0.0 in the key: %v, want only %s", got, v.routeKey)
	}
	b.Find("table#values tr.value a.value-link").Follow()
	expectValue(t, b, v.routeKey, "CONFIGURED")
	if got := b.Attrs("ul#dependencies li.met a.dep-link", "data-key"); !slices.Equal(got, []string{v.peerUpKey, v.peerAddrKey}) {
		t.Errorf("%s: met dependencies %q, want [%s %s]", v.routeKey, got, v.peerUpKey, v.peerAddrKey)
	}
	if got := b.Count("ul#dependencies li.unmet"); got != 0 {
		t.Errorf("%s: %d unmet dependencies", v.routeKey, got)
	}
	expectNodes(t, b, v.routeKey, v.routeKey, v.peerUpKey, v.peerAddrKey)
	routeEvents := b.Attrs("table#timeline tr.event", "data-seq")

	// Along a dependency link to "interface <peer> up", derived from the
	// namespace end, and back to the route through the graph.
	b.Find(attrSel("ul#dependencies a.dep-link", "data-key", v.peerUpKey)).Follow()
	expectValue(t, b, v.peerUpKey, "CONFIGURED")
	// Not the invalid route: it names the interface, but waits for a fix
	// of its own, not for the interface.
	if got := b.Attrs("ul#dependents a.dependent-link", "data-key"); !sameSet(got, v.routeKey) {
		t.Errorf("%s: dependents %q, want only %s (not the invalid %s)", v.peerUpKey, got, v.routeKey, v.invalidKey)
	}
	expectNodes(t, b, v.peerUpKey, v.peerUpKey, v.routeKey)
	// A derived value links to its base.
	if got := b.Attrs("a#base", "href"); len(got) != 1 || !strings.Contains(got[0], url.QueryEscape(v.peerKey)) {
		t.Errorf("%s: a#base %q, want a link to %s", v.peerUpKey, got, v.peerKey)
	}
	b.Find(attrSel("svg#neighbourhood a.node", "data-key", v.routeKey)).Follow()
	expectValue(t, b, v.routeKey, "CONFIGURED")

	// The namespace end, found by descriptor and key prefix, and its
	// dependency, the host end (its veth peer).
	b.Find("a#nav-values").Follow()
	b.Find("form#filter select[name=descriptor]").Select(ifplugin.InterfaceDescriptorName)
	b.Find("form#filter input[name=prefix]").Type(v.peerKey)
	b.Find("form#filter button#apply").Follow()
	if got := rowStates(b); !maps.Equal(got, map[string]string{v.peerKey: "CONFIGURED"}) {
		t.Fatalf("%s values under %s: %v, want only %s", ifplugin.InterfaceDescriptorName, v.peerKey, got, v.peerKey)
	}
	b.Find("table#values tr.value a.value-link").Follow()
	expectValue(t, b, v.peerKey, "CONFIGURED")
	if got := b.Attrs("ul#dependencies li.met a.dep-link", "data-key"); !slices.Equal(got, []string{v.hostKey}) {
		t.Errorf("%s: met dependencies %q, want [%s]", v.peerKey, got, v.hostKey)
	}
	// The host end once, though it is a dependency and a dependent: drawn
	// among the dependencies, with an edge each way.
	expectNodes(t, b, v.peerKey, v.peerKey, v.hostKey, v.peerUpKey, v.peerAddrKey)
	if got := b.Count("svg#neighbourhood line.edge.back"); got != 1 {
		t.Errorf("%s: %d edges drawn back (the host end depends on it), want 1", v.peerKey, got)
	}
	b.Find(attrSel("ul#dependencies a.dep-link", "data-key", v.hostKey)).Follow()
	expectValue(t, b, v.hostKey, "CONFIGURED")
	if got := b.Attrs("ul#dependents a.dependent-link", "data-key"); !slices.Equal(got, []string{v.peerKey}) {
		t.Errorf("%s: dependents %q, want [%s]", v.hostKey, got, v.peerKey)
	}

	// The transaction that created the route: the first event of its
	// timeline, found in the history and opened.
	if len(routeEvents) == 0 {
		t.Fatalf("%s: no event in its timeline", v.routeKey)
	}
	seq, err := strconv.ParseUint(routeEvents[0], 10, 64)
	if err != nil {
		t.Fatalf("%s: first event's data-seq %q: %v", v.routeKey, routeEvents[0], err)
	}
	recs := a.history("?seq-num=" + routeEvents[0])
	if len(recs) != 1 {
		t.Fatalf("REST history of #%d: %d records", seq, len(recs))
	}
	rec := recs[0]
	b.Find("a#nav-txns").Follow()
	b.Find(attrSel("table#txns tr.txn", "data-seq", routeEvents[0]) + " a.txn-link").Follow()
	if got := b.Find("h1#txn").Text(); got != fmt.Sprintf("Transaction #%d", seq) {
		t.Errorf("transaction page %q, want #%d", got, seq)
	}
	for table, ops := range map[string][]opRecord{"planned": rec.Planned, "executed": rec.Executed} {
		var want []string
		for _, op := range ops {
			want = append(want, op.Key+" "+op.Operation)
		}
		got := joinAttrs(b.Attrs("table#"+table+" tr.op", "data-key"), b.Attrs("table#"+table+" tr.op", "data-operation"))
		if !slices.Equal(got, want) {
			t.Errorf("#%d %s operations %q, want the REST API's %q", seq, table, got, want)
		}
		if !slices.Contains(got, v.routeKey+" CREATE") {
			t.Errorf("#%d %s operations %q: no CREATE of %s", seq, table, got, v.routeKey)
		}
	}
}

// pageStatus is the HTTP status of the page shown, fetched again by the
// page itself (WebDriver does not tell the status of a navigation).
func pageStatus(b *browser.Browser) int {
	var status int
	b.Execute(&status, `return fetch(location.href).then(r => r.status)`)
	return status
}

// rowStates are the rows of table#values: key -> state.
func rowStates(b *browser.Browser) map[string]string {
	keys := b.Attrs("table#values tr.value", "data-key")
	states := b.Attrs("table#values tr.value", "data-state")
	out := map[string]string{}
	for i, k := range keys {
		if i < len(states) {
			out[k] = states[i]
		}
	}
	return out
}

// expectValue checks that the page is the value page of key, in state.
func expectValue(t *testing.T, b *browser.Browser, key, state string) {
	t.Helper()
	if got := b.Find("h1#key").Text(); got != key {
		t.Errorf("value page of %q, want %s", got, key)
	}
	if got := b.Find("span#state").Text(); got != state {
		t.Errorf("%s: state %q, want %s", key, got, state)
	}
	b.Find("pre#value")
	b.Find("dl#status")
}

// expectNodes checks that the neighbourhood graph of the value page of key
// has exactly the nodes want, in any order.
func expectNodes(t *testing.T, b *browser.Browser, key string, want ...string) {
	t.Helper()
	b.Find("svg#neighbourhood")
	if got := b.Attrs("svg#neighbourhood a.node", "data-key"); !sameSet(got, want...) {
		t.Errorf("%s: neighbourhood nodes %q, want %q", key, got, want)
	}
}

// attrSel is the selector sel[name="value"] (value without quotes or
// backslashes, as keys are).
func attrSel(sel, name, value string) string {
	return fmt.Sprintf(`%s[%s="%s"]`, sel, name, value)
}

func sameSet(got []string, want ...string) bool {
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)))
}

func containsAll(got []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

func joinAttrs(a, b []string) []string {
	out := make([]string, len(a))
	for i := range a {
		out[i] = a[i]
		if i < len(b) {
			out[i] += " " + b[i]
		}
	}
	return out
}

func parseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("the page's address %q: %v", s, err)
	}
	return u
}

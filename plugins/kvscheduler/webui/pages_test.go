package webui_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/webui"
)

// allKeys are the keys of standard() in key order.
var allKeys = []string{scriptKey, "iface/a", "iface/a/address/10.0.0.1", "iface/bad", "iface/f", "iface/r", "iface/sb1",
	"route/p1", "route/r1", "route/r2"}

func TestSummary(t *testing.T) {
	e := newEnv(t, webui.Options{Health: func() []webui.Check {
		return []webui.Check{
			{Area: "NB", Name: "etcd", OK: true, Status: "connected"},
			{Area: "SB", Name: "VPP", OK: false, Status: "not connected", Detail: "dial unix /run/vpp/api.sock: <refused>"},
		}
	}})
	e.standard()
	p := e.ok("/ui/")
	for _, id := range []string{"nav-summary", "nav-values", "nav-txns"} {
		if a := p.mustID(t, id); a.Data != "a" {
			t.Errorf("#%s is a <%s>, want <a>", id, a.Data)
		}
	}
	if nav := p.mustID(t, "nav"); nav.Data != "nav" {
		t.Errorf("#nav is a <%s>", nav.Data)
	}

	rows := find(p.mustID(t, "by-state"), func(n *html.Node) bool { _, ok := attr(n, "data-state"); return ok && n.Data == "tr" })
	var got []string
	for _, r := range rows {
		state, _ := attr(r, "data-state")
		count := find(r, sel("td", "count"))
		got = append(got, state+"="+text(count[0]))
		links := find(r, sel("a", ""))
		if href, _ := attr(links[0], "href"); href != "/ui/values?state="+state {
			t.Errorf("state %s links to %q", state, href)
		}
	}
	wantList(t, "by state", got, []string{"CONFIGURED=4", "OBTAINED=1", "DISCOVERED=0", "PENDING=1", "RETRYING=1",
		"FAILED=1", "INVALID=1", "MISSING=0", "UNIMPLEMENTED=1"})

	rows = find(p.mustID(t, "by-descriptor"), func(n *html.Node) bool { _, ok := attr(n, "data-descriptor"); return ok && n.Data == "tr" })
	got = nil
	for _, r := range rows {
		d, _ := attr(r, "data-descriptor")
		got = append(got, d+"="+text(find(r, sel("td", "count"))[0]))
	}
	wantList(t, "by descriptor", got, []string{"iface=5", "route=3", api.StatsNoDescriptor + "=1", api.StatsProperties + "=1"})

	pending := p.mustID(t, "pending")
	links := find(pending, sel("a", "value-link"))
	wantList(t, "pending", attrs(links, "href"), []string{"/ui/value?key=route%2Fp1"})
	if items := find(pending, sel("li", "")); len(items) != 1 || !strings.Contains(text(items[0]), "waits for iface/missing") {
		t.Errorf("pending items: %d, want one saying it waits for iface/missing\n%s", len(items), p.body)
	}

	checks := find(p.mustID(t, "health"), sel("tr", "check"))
	got = nil
	for _, c := range checks {
		got = append(got, text(c))
	}
	wantList(t, "health", got, []string{"NB etcd connected", "SB VPP not connected dial unix /run/vpp/api.sock: <refused>"})
	if strings.Contains(p.body, "<refused>") {
		t.Error("the health detail is not escaped")
	}
}

func TestSummaryWithoutHealth(t *testing.T) {
	e := newEnv(t, webui.Options{})
	p := e.ok("/ui/")
	if got := text(p.mustID(t, "health")); !strings.Contains(got, "No health information") {
		t.Errorf("health section: %q", got)
	}
	if got := text(p.mustID(t, "pending")); !strings.Contains(got, "Nothing is pending") {
		t.Errorf("pending section: %q", got)
	}
}

func TestValuesFilters(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()
	for _, tc := range []struct {
		query string
		keys  []string
	}{
		{"", allKeys},
		{"state=&descriptor=&prefix=&q=", allKeys}, // the form's empty fields
		{"state=PENDING", []string{"route/p1"}},
		{"state=configured", []string{"iface/a", "iface/a/address/10.0.0.1", "route/r1", "route/r2"}},
		{"state=FAILED", []string{"iface/f"}},
		{"state=RETRYING", []string{"iface/r"}},
		{"state=INVALID", []string{"iface/bad"}},
		{"state=OBTAINED", []string{"iface/sb1"}},
		{"state=UNIMPLEMENTED", []string{scriptKey}},
		{"state=MISSING", nil},
		{"descriptor=route", []string{"route/p1", "route/r1", "route/r2"}},
		{"descriptor=" + url.QueryEscape(api.StatsProperties), []string{"iface/a/address/10.0.0.1"}},
		{"prefix=iface/", []string{"iface/a", "iface/a/address/10.0.0.1", "iface/bad", "iface/f", "iface/r", "iface/sb1"}},
		{"prefix=iface/a", []string{"iface/a", "iface/a/address/10.0.0.1"}},
		{"prefix=zzz", nil},
		{"q=/r", []string{"iface/r", "route/r1", "route/r2"}},
		{"q=" + url.QueryEscape("<script>"), []string{scriptKey}},
		{"state=CONFIGURED&prefix=route/", []string{"route/r1", "route/r2"}},
		{"state=CONFIGURED&descriptor=iface", []string{"iface/a"}},
		{"state=CONFIGURED&descriptor=route&q=2", []string{"route/r2"}},
		{"descriptor=iface&prefix=iface/a", []string{"iface/a"}},
		{"descriptor=iface&q=b", []string{"iface/bad", "iface/sb1"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			p := e.ok("/ui/values?" + tc.query)
			keys, _ := valueRows(t, p)
			wantList(t, "keys", keys, tc.keys)
			if got, want := total(t, p), len(tc.keys); got != itoa(want) {
				t.Errorf("total %s, want %d", got, want)
			}
		})
	}
}

func TestValuesRows(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()
	rows := func(p page) []string {
		var got []string
		for _, r := range find(p.mustID(t, "values"), sel("tr", "value")) {
			cells := find(r, sel("td", ""))
			var cols []string
			for _, c := range cells {
				cols = append(cols, text(c))
			}
			key, _ := attr(r, "data-key")
			keyLink(t, find(r, sel("a", "value-link"))[0], key)
			got = append(got, strings.Join(cols, " | "))
		}
		return got
	}
	// A pending value says what it waits for.
	wantList(t, "pending rows", rows(e.ok("/ui/values?state=PENDING")), []string{"route/p1 | PENDING | route | NB |  | waits for iface/missing"})
	p := e.ok("/ui/values?prefix=iface/")
	wantList(t, "rows", rows(p), []string{
		"iface/a | CONFIGURED | iface | NB | CREATE | ",
		"iface/a/address/10.0.0.1 derived | CONFIGURED | (properties) | NB | CREATE | ",
		"iface/bad | INVALID | iface | NB | VALIDATE | invalid value: the value says it is invalid",
		"iface/f | FAILED | iface | NB | CREATE | injected failure",
		"iface/r | RETRYING | iface | NB | CREATE | injected failure",
		"iface/sb1 | OBTAINED | iface | SB |  | ",
	})
	// The form shows the filter.
	form := p.mustID(t, "filter")
	if m, _ := attr(form, "method"); m != "get" {
		t.Errorf("form method %q", m)
	}
	if a, _ := attr(form, "action"); a != "/ui/values" {
		t.Errorf("form action %q", a)
	}
	inputs := find(form, func(n *html.Node) bool { name, _ := attr(n, "name"); return name == "prefix" })
	if v, _ := attr(inputs[0], "value"); v != "iface/" {
		t.Errorf("prefix input value %q", v)
	}
	states := find(form, func(n *html.Node) bool { name, _ := attr(n, "name"); return n.Data == "select" && name == "state" })
	opts := attrs(find(states[0], sel("option", "")), "value")
	if opts[0] != "" || !slices.Contains(opts, "PENDING") {
		t.Errorf("state options %q", opts)
	}
	if b := p.mustID(t, "apply"); b.Data != "button" {
		t.Errorf("#apply is a <%s>", b.Data)
	}
}

func TestValuesPagination(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()
	path := "/ui/values?size=3"
	var pages [][]string
	for range 10 {
		p := e.ok(path)
		keys, _ := valueRows(t, p)
		pages = append(pages, keys)
		if total(t, p) != "10" {
			t.Errorf("%s: total %s", path, total(t, p))
		}
		prev := p.byID("prev")
		if (prev == nil) != (len(pages) == 1) {
			t.Errorf("%s: a#prev present %v on page %d", path, prev != nil, len(pages))
		}
		next := p.byID("next")
		if next == nil {
			break
		}
		path, _ = attr(next, "href")
	}
	if len(pages) != 4 {
		t.Fatalf("%d pages, want 4", len(pages))
	}
	if all := slices.Concat(pages...); !slices.Equal(all, allKeys) {
		t.Errorf("pages %q, want the keys in order", pages)
	}
	if path != "/ui/values?page=4&size=3" {
		t.Errorf("last page %q", path)
	}
	// A filter is kept by the links; the default size is 100.
	p := e.ok("/ui/values?state=CONFIGURED&size=2")
	next, _ := attr(p.mustID(t, "next"), "href")
	if next != "/ui/values?page=2&size=2&state=CONFIGURED" {
		t.Errorf("next %q", next)
	}
	p = e.ok(next)
	keys, _ := valueRows(t, p)
	wantList(t, "page 2 of CONFIGURED", keys, []string{"route/r1", "route/r2"})
	if p.byID("next") != nil {
		t.Error("a#next on the last page")
	}
	if p := e.ok("/ui/values"); p.byID("next") != nil || p.byID("prev") != nil {
		t.Error("pagination links with one page")
	}
}

func TestValuesBadParameters(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()
	for _, tc := range []struct{ query, param, more string }{
		{"state=FOO", `"state"`, "FOO"},
		{"state=PENDING&state=FAILED", `"state"`, "2 times"},
		{"page=-1", `"page"`, "-1"},
		{"page=0", `"page"`, "positive"},
		{"page=abc", `"page"`, "abc"},
		{"page=5&size=3", `"page"`, "last page, 4"},
		{"size=abc", `"size"`, "abc"},
		{"size=0", `"size"`, "0"},
		{"size=1001", `"size"`, "1000"},
		{"descriptor=nope", `"descriptor"`, "nope"},
		{"color=red", `"color"`, "unknown parameter"},
		{"q=%zz", "malformed", ""},
	} {
		t.Run(tc.query, func(t *testing.T) {
			e.wantError("/ui/values?"+tc.query, http.StatusBadRequest, tc.param, tc.more)
		})
	}
	e.wantError("/ui/?x=1", http.StatusBadRequest, `"x"`)
	e.wantError("/ui/txns?page=x", http.StatusBadRequest, `"page"`)
	e.wantError("/ui/txns?page=2", http.StatusBadRequest, `"page"`, "last page, 1")
}

func TestValuePage(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()

	p := e.ok("/ui/value?key=" + url.QueryEscape("iface/a"))
	if got := text(p.mustID(t, "key")); got != "iface/a" {
		t.Errorf("h1#key %q", got)
	}
	if got := text(p.mustID(t, "state")); got != "CONFIGURED" {
		t.Errorf("#state %q", got)
	}
	status := map[string]string{}
	for _, dd := range find(p.mustID(t, "status"), sel("dd", "")) {
		f, _ := attr(dd, "data-field")
		status[f] = text(dd)
	}
	want := map[string]string{"origin": "NB", "descriptor": "iface", "last-operation": "CREATE", "error": "(none)", "details": "(none)"}
	for f, v := range want {
		if status[f] != v {
			t.Errorf("status %s = %q, want %q", f, status[f], v)
		}
	}
	if got := text(p.mustID(t, "value")); !strings.Contains(got, `"a addr=10.0.0.1"`) || !strings.Contains(got, "google.protobuf.StringValue") {
		t.Errorf("pre#value %q", got)
	}
	if deps := find(p.mustID(t, "dependencies"), sel("a", "dep-link")); len(deps) != 0 {
		t.Errorf("iface/a has dependency links %q", attrs(deps, "data-key"))
	}
	dependents := find(p.mustID(t, "dependents"), sel("a", "dependent-link"))
	wantList(t, "dependents", attrs(dependents, "data-key"), []string{"route/r1", "route/r2"})
	keyLink(t, dependents[0], "route/r1")
	wantList(t, "derived", attrs(find(p.mustID(t, "derived"), sel("a", "value-link")), "data-key"), []string{"iface/a/address/10.0.0.1"})
	svg := p.mustID(t, "neighbourhood")
	if svg.Data != "svg" {
		t.Errorf("#neighbourhood is a <%s>", svg.Data)
	}
	nodes := find(svg, sel("a", "node"))
	wantList(t, "graph nodes", attrs(nodes, "data-key"), []string{"iface/a", "iface/a/address/10.0.0.1", "route/r1", "route/r2"})
	keyLink(t, nodes[2], "route/r1")
	events := find(p.mustID(t, "timeline"), sel("tr", "event"))
	wantList(t, "timeline", attrs(events, "data-seq"), []string{"2"})
	if len(events) == 1 && !strings.Contains(text(events[0]), "#2 CREATE CONFIGURED") {
		t.Errorf("event %q", text(events[0]))
	}

	// A dependency, satisfied; the graph has it on the left.
	p = e.ok("/ui/value?key=route%2Fr1")
	deps := find(p.mustID(t, "dependencies"), sel("a", "dep-link"))
	wantList(t, "dependencies of route/r1", attrs(deps, "data-key"), []string{"iface/a"})
	keyLink(t, deps[0], "iface/a")
	if items := find(p.mustID(t, "dependencies"), sel("li", "met")); len(items) != 1 {
		t.Errorf("%d satisfied dependencies, want 1", len(items))
	}
	// iface/a's other dependent, route/r2, is two hops away: not drawn.
	wantList(t, "graph of route/r1", attrs(find(p.mustID(t, "neighbourhood"), sel("a", "node")), "data-key"), []string{"iface/a", "route/r1"})

	// A pending value: the missing dependency, not satisfied, and why.
	p = e.ok("/ui/value?key=route%2Fp1")
	if got := text(p.mustID(t, "state")); got != "PENDING" {
		t.Errorf("#state %q", got)
	}
	deps = find(p.mustID(t, "dependencies"), sel("a", "dep-link"))
	wantList(t, "dependencies of route/p1", attrs(deps, "data-key"), []string{"iface/missing"})
	if items := find(p.mustID(t, "dependencies"), sel("li", "unmet")); len(items) != 1 || !strings.Contains(text(items[0]), "not satisfied") {
		t.Errorf("unmet dependencies: %d", len(items))
	}
	if got := text(p.mustID(t, "status")); !strings.Contains(got, "iface/missing") {
		t.Errorf("status of a pending value does not say what it waits for: %q", got)
	}

	// A failed value shows its error.
	p = e.ok("/ui/value?key=iface%2Ff")
	if got := text(p.mustID(t, "status")); !strings.Contains(got, "injected failure") {
		t.Errorf("status of a failed value: %q", got)
	}
	// A derived value: the status of its own, its base linked.
	p = e.ok("/ui/value?key=" + url.QueryEscape("iface/a/address/10.0.0.1"))
	if got := text(p.mustID(t, "status")); !strings.Contains(got, "descriptor (none)") {
		t.Errorf("status of a property: %q", got)
	}
	keyLink(t, p.mustID(t, "base"), "iface/a")
}

// TestValuePageMutualDependencies: two values that depend on each other
// (the ends of a veth pair) are each drawn once in the other's graph, with
// an edge each way, one of them drawn back (left to right).
func TestValuePageMutualDependencies(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.commit(api.TxnOptions{}, "route/m1", "dep=route/m2", "route/m2", "dep=route/m1", "route/m3", "dep=route/m1")
	p := e.ok("/ui/value?key=route%2Fm1")
	svg := p.mustID(t, "neighbourhood")
	wantList(t, "graph of route/m1", attrs(find(svg, sel("a", "node")), "data-key"), []string{"route/m2", "route/m1", "route/m3"})
	var classes []string
	for _, l := range find(svg, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "line" }) {
		c, _ := attr(l, "class")
		classes = append(classes, c)
	}
	slices.Sort(classes)
	wantList(t, "edges of route/m1's graph", classes, []string{"edge", "edge", "edge back"})
	wantList(t, "dependents of route/m1", attrs(find(p.mustID(t, "dependents"), sel("a", "dependent-link")), "data-key"), []string{"route/m2", "route/m3"})
}

func TestValueUnknown(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()
	e.wantError("/ui/value?key=iface%2Fnope", http.StatusNotFound, `"iface/nope"`)
	e.wantError("/ui/value", http.StatusBadRequest, `"key"`)
	e.wantError("/ui/value?key=", http.StatusBadRequest, `"key"`)
	e.wantError("/ui/value?key=a&key=b", http.StatusBadRequest, `"key"`)
	// A value that was removed: 404, with its timeline.
	e.commit(api.TxnOptions{}, "route/r2", "")
	p := e.get("/ui/value?key=route%2Fr2")
	if p.code != http.StatusNotFound {
		t.Fatalf("removed value: %d", p.code)
	}
	wantList(t, "timeline of a removed value", attrs(find(p.mustID(t, "timeline"), sel("tr", "event")), "data-seq"), []string{"2", "8"})
	e.wantError("/ui/nope", http.StatusNotFound, "/ui/nope")
}

func TestEscaping(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()
	for _, path := range []string{"/ui/", "/ui/values", "/ui/value?key=" + url.QueryEscape(scriptKey), "/ui/txns", "/ui/txn?seq=6",
		"/ui/values?q=" + url.QueryEscape(`"><script>`)} {
		p := e.get(path)
		if p.code != http.StatusOK || p.doc == nil {
			t.Errorf("%s: %d", path, p.code)
			continue
		}
		if strings.Contains(p.body, "<script") {
			t.Errorf("%s: an unescaped <script", path)
		}
		if len(find(p.doc, sel("script", ""))) != 0 {
			t.Errorf("%s: a script element", path)
		}
	}
	p := e.ok("/ui/value?key=" + url.QueryEscape(scriptKey))
	if got := text(p.mustID(t, "key")); got != scriptKey {
		t.Errorf("h1#key %q, want %q", got, scriptKey)
	}
	if got := text(p.mustID(t, "value")); !strings.Contains(got, `a\u003cb\u003e\u0026\"c\"`) && !strings.Contains(got, `a<b>&\"c\"`) {
		t.Errorf("pre#value %q", got)
	}
	keys, _ := valueRows(t, e.ok("/ui/values?state=UNIMPLEMENTED"))
	wantList(t, "data-key", keys, []string{scriptKey})
	p = e.ok("/ui/txn?seq=6")
	wantList(t, "executed keys", attrs(find(p.mustID(t, "executed"), sel("tr", "op")), "data-key"), []string{scriptKey})
	wantList(t, "planned keys", attrs(find(p.mustID(t, "planned"), sel("tr", "op")), "data-key"), []string{scriptKey})
}

func TestTxns(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()
	p := e.ok("/ui/txns")
	rows := find(p.mustID(t, "txns"), sel("tr", "txn"))
	wantList(t, "seqs", attrs(rows, "data-seq"), []string{"7", "6", "5", "4", "3", "2", "1"})
	var got []string
	for _, r := range rows {
		cells := find(r, sel("td", ""))
		seq, _ := attr(r, "data-seq")
		if href, _ := attr(find(r, sel("a", "txn-link"))[0], "href"); href != "/ui/txn?seq="+seq {
			t.Errorf("txn %s links to %q", seq, href)
		}
		got = append(got, text(cells[2])+" | "+text(cells[3])+" | "+text(cells[4])+" | "+text(cells[5]))
	}
	wantList(t, "rows", got, []string{
		"SB notification |  | 1 | 0",
		"NB transaction |  | 1 | 0",
		"NB transaction |  | 1 | 1",
		"NB transaction |  | 1 | 1",
		"NB transaction |  | 1 | 1",
		"NB transaction | base | 4 | 0",
		"NB transaction | wait | 1 | 0",
	})
	p = e.ok("/ui/txns?size=3&page=2")
	wantList(t, "page 2", attrs(find(p.mustID(t, "txns"), sel("tr", "txn")), "data-seq"), []string{"4", "3", "2"})
	next, _ := attr(p.mustID(t, "next"), "href")
	prev, _ := attr(p.mustID(t, "prev"), "href")
	if next != "/ui/txns?page=3&size=3" || prev != "/ui/txns?page=1&size=3" {
		t.Errorf("links %q %q", prev, next)
	}
}

func TestTxn(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()
	p := e.ok("/ui/txn?seq=2")
	if got := text(p.mustID(t, "txn")); got != "Transaction #2" {
		t.Errorf("h1#txn %q", got)
	}
	for _, id := range []string{"planned", "executed"} {
		rows := find(p.mustID(t, id), sel("tr", "op"))
		wantList(t, id, attrs(rows, "data-key"), []string{"iface/a", "iface/a/address/10.0.0.1", "route/r1", "route/r2"})
		keyLink(t, find(rows[0], sel("a", "value-link"))[0], "iface/a")
		if got := text(rows[0]); got != "CREATE iface/a NONEXISTENT → CONFIGURED" {
			t.Errorf("%s row %q", id, got)
		}
	}
	p = e.ok("/ui/txn?seq=4")
	rows := find(p.mustID(t, "executed"), sel("tr", "op"))
	if len(rows) != 1 || !strings.Contains(text(rows[0]), "injected failure") {
		t.Errorf("the failed create does not show its error: %q", text(p.mustID(t, "executed")))
	}
	e.wantError("/ui/txn?seq=99", http.StatusNotFound, "#99")
	e.wantError("/ui/txn?seq=abc", http.StatusBadRequest, `"seq"`, "abc")
	e.wantError("/ui/txn?seq=0", http.StatusBadRequest, `"seq"`)
	e.wantError("/ui/txn", http.StatusBadRequest, `"seq"`)
	e.wantError("/ui/txn?seq=2&page=2", http.StatusBadRequest, `"page"`)
}

// The view reads the state of the revision it answers: after a change the
// next request sees it, on every page.
func TestFollowsChanges(t *testing.T) {
	e := newEnv(t, webui.Options{})
	e.standard()
	e.ok("/ui/values")
	e.ok("/ui/value?key=iface%2Fa")
	e.commit(api.TxnOptions{}, "iface/missing", "m", "route/r3", "via a dep=iface/a")
	keys, states := valueRows(t, e.ok("/ui/values?prefix=route/"))
	wantList(t, "routes", keys, []string{"route/p1", "route/r1", "route/r2", "route/r3"})
	wantList(t, "states", states, []string{"CONFIGURED", "CONFIGURED", "CONFIGURED", "CONFIGURED"})
	p := e.ok("/ui/value?key=iface%2Fa")
	wantList(t, "dependents", attrs(find(p.mustID(t, "dependents"), sel("a", "dependent-link")), "data-key"), []string{"route/r1", "route/r2", "route/r3"})
	p = e.ok("/ui/")
	if got := text(p.mustID(t, "pending")); !strings.Contains(got, "Nothing is pending") {
		t.Errorf("pending after iface/missing came: %q", got)
	}
}

func TestMethodsAndStatic(t *testing.T) {
	e := newEnv(t, webui.Options{})
	for _, path := range []string{"/ui/", "/ui/values", "/ui/value?key=a"} {
		p := e.do("POST", path)
		if p.code != http.StatusMethodNotAllowed || p.hdr.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s: %d, Allow %q", path, p.code, p.hdr.Get("Allow"))
		}
	}
	if p := e.do("HEAD", "/ui/values"); p.code != http.StatusOK {
		t.Errorf("HEAD: %d", p.code)
	}
	p := e.get("/ui/static/style.css")
	if p.code != http.StatusOK || !strings.HasPrefix(p.hdr.Get("Content-Type"), "text/css") || !strings.Contains(p.body, "#neighbourhood") {
		t.Errorf("style sheet: %d %q", p.code, p.hdr.Get("Content-Type"))
	}
	if p := e.ok("/ui/"); p.hdr.Get("X-Content-Type-Options") != "nosniff" || p.hdr.Get("Content-Security-Policy") == "" {
		t.Errorf("headers %v", p.hdr)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

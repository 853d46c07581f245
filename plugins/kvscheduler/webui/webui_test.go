package webui_test

// The web view read over real HTTP: a scheduler with the mock SB's iface/
// and route/ descriptors (a route depends on the keys after "dep=", an
// iface value "... addr=X" derives the property iface/NAME/address/X, an
// iface value "invalid" fails validation) holds a value in each state; the
// tests parse the pages (golang.org/x/net/html) and check the elements and
// attributes the browser tests rely on, row by row.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/html"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api/apitest"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
	"github.com/netagent-io/netagent/plugins/kvscheduler/webui"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ---------------------------------------------------------------------------
// Environment

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// scriptKey is a key (of no descriptor: UNIMPLEMENTED) and scriptValue a
// value that HTML must escape.
const (
	scriptKey   = `config/x/<script>`
	scriptValue = `a<b>&"c"`
)

type env struct {
	t     *testing.T
	s     *kvscheduler.Scheduler
	sb    *mocksb.SB
	clock *apitest.Clock
	srv   *httptest.Server
}

func ifaceKeys(key string) bool { return !strings.Contains(key, "/address/") }

func derivedAddress(key string, value proto.Message) []api.KeyValuePair {
	_, addr, ok := strings.Cut(mocksb.Text(value), "addr=")
	if !ok {
		return nil
	}
	return []api.KeyValuePair{{Key: key + "/address/" + addr, Value: mocksb.Str(addr)}}
}

func validate(_ string, value proto.Message) error {
	if mocksb.Text(value) == "invalid" {
		return errors.New("the value says it is invalid")
	}
	return nil
}

func newEnv(t *testing.T, opts webui.Options) *env {
	t.Helper()
	clock := apitest.NewClock(t0)
	clock.NoTimers = true // a value waiting for its retry stays RETRYING
	e := &env{t: t, sb: mocksb.New(), clock: clock}
	e.s = kvscheduler.New(kvscheduler.Options{Clock: e.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(e.s.Close)
	if err := e.s.RegisterKVDescriptor(
		e.sb.Descriptor(mocksb.Options{Name: "iface", Prefix: "iface/", Keys: ifaceKeys, NB: true, Derived: derivedAddress, Validate: validate}),
		e.sb.Descriptor(mocksb.Options{Name: "route", Prefix: "route/", NB: true, Deps: mocksb.DependsOn}),
	); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(webui.NewHandler(e.s, opts))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) commit(opts api.TxnOptions, kvs ...string) uint64 {
	e.t.Helper()
	e.clock.Advance(time.Second)
	txn := e.s.StartNBTransaction()
	for i := 0; i < len(kvs); i += 2 {
		var v proto.Message
		if kvs[i+1] != "" {
			v = mocksb.Str(kvs[i+1])
		}
		txn.SetValue(kvs[i], v)
	}
	seq, err := txn.Commit(context.Background(), opts)
	if seq == 0 {
		e.t.Fatalf("commit: %v", err)
	}
	return seq
}

// standard puts a value in each state the tests read:
//
//	#1 route/p1 waits for iface/missing: PENDING
//	#2 iface/a (deriving iface/a/address/10.0.0.1), route/r1 and route/r2
//	   on it: CONFIGURED
//	#3 iface/bad: INVALID
//	#4 iface/f: create fails, no retry: FAILED
//	#5 iface/r: create fails, retry in an hour: RETRYING
//	#6 config/x/<script>: no descriptor: UNIMPLEMENTED
//	#7 iface/sb1 reported by the SB: OBTAINED
func (e *env) standard() {
	e.t.Helper()
	e.commit(api.TxnOptions{Description: "wait"}, "route/p1", "via missing dep=iface/missing")
	e.commit(api.TxnOptions{Description: "base"}, "iface/a", "a addr=10.0.0.1", "route/r1", "via a dep=iface/a", "route/r2", "via a dep=iface/a")
	e.commit(api.TxnOptions{}, "iface/bad", "invalid")
	e.sb.Fail("create", "iface/f", nil, 1)
	e.commit(api.TxnOptions{}, "iface/f", "f")
	e.sb.Fail("create", "iface/r", nil, 1)
	e.commit(api.TxnOptions{Retry: &api.RetryOpt{Period: time.Hour, MaxCount: 3}}, "iface/r", "r")
	e.commit(api.TxnOptions{}, scriptKey, scriptValue)
	e.clock.Advance(time.Second)
	if err := e.s.PushSBNotification(api.KVWithMetadata{Key: "iface/sb1", Value: mocksb.Str("sb"), Origin: api.FromSB}); err != nil {
		e.t.Fatal(err)
	}
	e.s.TransactionBarrier()
}

type page struct {
	code int
	body string
	doc  *html.Node
	hdr  http.Header
}

func (e *env) get(pathAndQuery string) page {
	e.t.Helper()
	return e.do("GET", pathAndQuery)
}

func (e *env) do(method, pathAndQuery string) page {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+pathAndQuery, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, pathAndQuery, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	p := page{code: resp.StatusCode, body: string(body), hdr: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		if p.doc, err = html.Parse(strings.NewReader(p.body)); err != nil {
			e.t.Fatalf("%s %s: parsing the HTML: %v", method, pathAndQuery, err)
		}
	}
	return p
}

// ok GETs a page that must answer 200 with HTML.
func (e *env) ok(pathAndQuery string) page {
	e.t.Helper()
	p := e.get(pathAndQuery)
	if p.code != http.StatusOK || p.doc == nil {
		e.t.Fatalf("GET %s: %d %s\n%s", pathAndQuery, p.code, p.hdr.Get("Content-Type"), p.body)
	}
	return p
}

// wantError GETs a page that must answer code with <p id="error">
// containing every part.
func (e *env) wantError(pathAndQuery string, code int, parts ...string) {
	e.t.Helper()
	p := e.get(pathAndQuery)
	if p.code != code {
		e.t.Errorf("GET %s: %d, want %d\n%s", pathAndQuery, p.code, code, p.body)
		return
	}
	msg := p.byID("error")
	if msg == nil || msg.Data != "p" {
		e.t.Errorf("GET %s: no <p id=\"error\">\n%s", pathAndQuery, p.body)
		return
	}
	for _, part := range parts {
		if !strings.Contains(text(msg), part) {
			e.t.Errorf("GET %s: error %q does not mention %q", pathAndQuery, text(msg), part)
		}
	}
}

// ---------------------------------------------------------------------------
// HTML helpers

func attr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, class string) bool {
	v, _ := attr(n, "class")
	return slices.Contains(strings.Fields(v), class)
}

// find returns the elements under n (n included) that match, in document
// order.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// sel matches elements by tag and class ("" for any).
func sel(tag, class string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		return (tag == "" || n.Data == tag) && (class == "" || hasClass(n, class))
	}
}

func (p page) byID(id string) *html.Node {
	found := find(p.doc, func(n *html.Node) bool { v, ok := attr(n, "id"); return ok && v == id })
	if len(found) == 0 {
		return nil
	}
	return found[0]
}

func (p page) mustID(t *testing.T, id string) *html.Node {
	t.Helper()
	n := p.byID(id)
	if n == nil {
		t.Fatalf("no element with id %q\n%s", id, p.body)
	}
	return n
}

// text is the text content of n, with runs of white space as one space
// and elements a space apart.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode {
			b.WriteString(" ") // cells, items and the like are words apart
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// attrs returns the attribute of each node.
func attrs(nodes []*html.Node, name string) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		v, _ := attr(n, name)
		out = append(out, v)
	}
	return out
}

func wantList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// keyLink checks that a link goes to the value page of key.
func keyLink(t *testing.T, a *html.Node, key string) {
	t.Helper()
	href, _ := attr(a, "href")
	if want := "/ui/value?key=" + url.QueryEscape(key); href != want {
		t.Errorf("link to %q: href %q, want %q", key, href, want)
	}
}

// valueRows returns the key and state of the rows of table#values.
func valueRows(t *testing.T, p page) (keys, states []string) {
	t.Helper()
	rows := find(p.mustID(t, "values"), sel("tr", "value"))
	return attrs(rows, "data-key"), attrs(rows, "data-state")
}

func total(t *testing.T, p page) string {
	t.Helper()
	return text(p.mustID(t, "total"))
}

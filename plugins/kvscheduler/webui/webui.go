// Package webui serves a read-only web view of the KV Scheduler, for a
// person with a browser, under /ui/:
//
//	GET /ui/                 summary: values by state and by descriptor,
//	                         what is pending and why, NB and SB health
//	GET /ui/values           values with their states: ?state= &descriptor=
//	                         &prefix= &q= (substring of the key) &page= &size=
//	GET /ui/value?key=       one value: status, value, dependencies and
//	                         dependents, its neighbourhood drawn in SVG,
//	                         its timeline
//	GET /ui/txns?page=       the transaction history, newest first
//	GET /ui/txn?seq=         one transaction: planned and executed operations
//	GET /ui/static/...       the style sheet
//
// Pages are plain HTML (html/template) with an embedded style sheet; none
// needs JavaScript. The element ids, classes and data attributes named in
// the templates (id="values", class="value", data-key, ...) are a contract
// with the browser tests and with users' scripts: keep them.
//
// The view only reads, through the scheduler's public API (Scheduler), and
// answers GET and HEAD only: other methods get 405. It adds no
// authentication of its own: mount it behind the same rules as the REST API
// (in the agent, the token guards requests other than GET and HEAD).
//
// At 100k values every page must answer within 200 ms: values are filtered
// and paginated on the server, from an index built once per revision of
// the scheduler's state (KVScheduler.CurrentRevision) and shared by the
// requests until the next change (index.go); the value page reads only the
// values it shows, with their edges (KVScheduler.GetGraphNeighbours,
// graphindex.go), never the whole graph. A bad query parameter
// gets 400 with a page whose <p id="error"> names it; an unknown key or
// transaction gets 404; never a silent fallback.
package webui

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Scheduler is what the view reads: the scheduler's API plus listings (as
// the REST API reads it; *kvscheduler.Scheduler implements it).
type Scheduler interface {
	api.KVScheduler
	ListValueStatuses(prefix string) []*api.BaseValueStatus
	GetRegisteredDescriptors() []string
}

// Check is one line of the health section of the summary.
type Check struct {
	// Area is "NB" (the northbound: sources of the desired state) or "SB"
	// (the southbound: VPP, Linux), or anything else the caller groups by.
	Area string
	// Name says what is checked ("etcd", "VPP connection").
	Name string
	OK   bool
	// Status is a short word or two ("connected", "not ready"), Detail the
	// rest (an error, what it waits for).
	Status, Detail string
}

// Options of the handler.
type Options struct {
	// Health returns the checks the summary shows, in order. It is called
	// once per summary request and must be fast (no network call). Nil:
	// the summary says that no health is known.
	Health func() []Check
	// Now is the clock of "how long ago" (default time.Now).
	Now func() time.Time
}

// Handler serves /ui/.
type Handler struct {
	s      Scheduler
	opts   Options
	mux    *http.ServeMux
	values indexCache
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages are the templates, each with the layout.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range []string{"summary", "values", "value", "txns", "txn", "error"} {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}()

var funcs = template.FuncMap{
	"valueURL": valueURL,
	"txnURL":   func(seq uint64) string { return "/ui/txn?seq=" + strconv.FormatUint(seq, 10) },
	"time":     formatTime,
	"join":     strings.Join,
	"dict":     dict,
}

// dict makes a map of name, value pairs, to give a template more than one
// argument.
func dict(pairs ...any) (map[string]any, error) {
	if len(pairs)%2 != 0 {
		return nil, errors.New("dict: odd number of arguments")
	}
	m := make(map[string]any, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		name, ok := pairs[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: argument %d is not a name", i)
		}
		m[name] = pairs[i+1]
	}
	return m, nil
}

func valueURL(key string) string { return "/ui/value?key=" + url.QueryEscape(key) }

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05.000")
}

// NewHandler returns the handler of /ui/ for the scheduler.
func NewHandler(s Scheduler, opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Handler{s: s, opts: opts, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /ui/{$}", h.summary)
	h.mux.HandleFunc("GET /ui/values", h.valuesPage)
	h.mux.HandleFunc("GET /ui/value", h.valuePage)
	h.mux.HandleFunc("GET /ui/txns", h.txnsPage)
	h.mux.HandleFunc("GET /ui/txn", h.txnPage)
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/ui/static/", http.FileServerFS(static))
	h.mux.Handle("GET /ui/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		files.ServeHTTP(w, r)
	}))
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			h.fail(w, &pageError{http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: the web view only reads (GET, HEAD)", r.Method, r.URL.Path)})
			return
		}
		h.fail(w, &pageError{http.StatusNotFound, fmt.Sprintf("%s: no such page", r.URL.Path)})
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// --- answers -------------------------------------------------------------------

// pageError is an answer other than 200, shown in <p id="error">.
type pageError struct {
	code int
	msg  string
}

func (e *pageError) Error() string { return e.msg }

func badParam(name, format string, args ...any) error {
	return &pageError{http.StatusBadRequest, fmt.Sprintf("parameter %q: %s", name, fmt.Sprintf(format, args...))}
}

// layout is what every page gives the layout template.
type layout struct {
	Title string
	Nav   string // id of the current navigation link
	Error string
	// Body is the page's own data.
	Body any
}

// render writes a page; a failure of the template (a bug) is a 500 page
// when nothing was written yet.
func (h *Handler) render(w http.ResponseWriter, code int, page string, data layout) {
	var b strings.Builder
	if err := pages[page].Execute(&b, data); err != nil {
		if page == "error" {
			http.Error(w, "rendering the error page: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h.fail(w, &pageError{http.StatusInternalServerError, "rendering the page: " + err.Error()})
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

// fail answers an error page.
func (h *Handler) fail(w http.ResponseWriter, err error) {
	var pe *pageError
	if !errors.As(err, &pe) {
		pe = &pageError{http.StatusInternalServerError, err.Error()}
	}
	h.render(w, pe.code, "error", layout{Title: http.StatusText(pe.code), Error: pe.msg})
}

// --- parameters ----------------------------------------------------------------

// params parses the query: only the known parameters, each at most once
// (empty values are allowed: a form sends its empty fields).
func params(r *http.Request, known ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &pageError{http.StatusBadRequest, "malformed query: " + err.Error()}
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(known, name) {
			return nil, badParam(name, "unknown parameter (this page takes %s)", strings.Join(known, ", "))
		}
		if n := len(q[name]); n > 1 {
			return nil, badParam(name, "given %d times", n)
		}
	}
	return q, nil
}

// intParam reads a positive integer parameter, def when empty or absent.
func intParam(q url.Values, name string, def, maxValue int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, badParam(name, "%q is not a positive whole number", s)
	}
	if maxValue > 0 && v > maxValue {
		return 0, badParam(name, "%d is more than the maximum, %d", v, maxValue)
	}
	return v, nil
}

// states are the states a value in the graph can have, in the order the
// pages list them.
var states = []api.ValueState{
	api.ValueStateConfigured, api.ValueStateObtained, api.ValueStateDiscovered, api.ValueStatePending,
	api.ValueStateRetrying, api.ValueStateFailed, api.ValueStateInvalid, api.ValueStateMissing,
	api.ValueStateUnimplemented,
}

func stateNames() []string {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = st.String()
	}
	return out
}

func parseState(s string) (api.ValueState, error) {
	for _, st := range states {
		if strings.EqualFold(s, st.String()) {
			return st, nil
		}
	}
	return 0, badParam("state", "unknown state %q (known: %s)", s, strings.Join(stateNames(), ", "))
}

// pager is where a page of a list is.
type pager struct {
	Page, Pages, Size int
	// First and Last are the positions (from 1) of the first and the last
	// item shown; 0 when none.
	First, Last int
	Total       int
	Prev, Next  string // URLs, "" when there is no such page
}

// newPager checks the page against the total and makes the links from the
// query q (which it changes).
func newPager(path string, q url.Values, page, size, total int) (pager, error) {
	pages := max(1, (total+size-1)/size)
	if page > pages {
		return pager{}, badParam("page", "%d is past the last page, %d (%d items, %d a page)", page, pages, total, size)
	}
	p := pager{Page: page, Pages: pages, Size: size, Total: total}
	if total > 0 {
		p.First, p.Last = (page-1)*size+1, min(page*size, total)
	}
	link := func(n int) string {
		q.Set("page", strconv.Itoa(n))
		return path + "?" + q.Encode()
	}
	if page > 1 {
		p.Prev = link(page - 1)
	}
	if page < pages {
		p.Next = link(page + 1)
	}
	return p, nil
}

// --- values --------------------------------------------------------------------

var jsonValueOpts = protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true}

// valueJSON is a value as indented JSON, with its type.
func valueJSON(m proto.Message) string {
	if m == nil {
		return ""
	}
	data, err := jsonValueOpts.Marshal(m)
	if err != nil {
		return fmt.Sprintf("(cannot encode %s: %v)", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return string(m.ProtoReflect().Descriptor().FullName()) + " " + string(data)
}

// available tells whether a value satisfies dependencies on it.
func available(st api.ValueState) bool {
	return st == api.ValueStateConfigured || st == api.ValueStateObtained || st == api.ValueStateDiscovered
}

func opName(op api.TxnOperation) string {
	if op == api.OpUndefined {
		return ""
	}
	return op.String()
}

func originName(o api.ValueOrigin) string {
	switch o {
	case api.FromSB:
		return "SB"
	case api.FromNB:
		return "NB"
	}
	return o.String()
}

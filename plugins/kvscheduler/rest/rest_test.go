package rest_test

// The REST API read over real HTTP: each test builds a scheduler with a
// manual clock and the mock SB's iface/ and route/ descriptors (route values
// depend on the key named by "dep="), runs transactions, serves the handler
// with httptest and checks the decoded answers field by field.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api/apitest"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
	"github.com/netagent-io/netagent/plugins/kvscheduler/rest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ---------------------------------------------------------------------------
// Environment

// t0 is the clock's start; the k-th transaction run by env.txn starts (and,
// the clock standing still meanwhile, ends) at t0 + k seconds.
var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// at is t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// unix is the time as Unix seconds with a fraction when it has one.
func unix(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', -1, 64)
}

type env struct {
	t     *testing.T
	s     *kvscheduler.Scheduler
	sb    *mocksb.SB
	clock *apitest.Clock
	srv   *httptest.Server

	mu        sync.Mutex
	retrieves map[string]int // descriptor -> Retrieve calls
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newEnv builds a scheduler with the iface and route descriptors and serves
// its REST API; both are closed when the test ends.
func newEnv(t *testing.T, opts kvscheduler.Options) *env {
	t.Helper()
	e := &env{t: t, sb: mocksb.New(), clock: apitest.NewClock(t0), retrieves: map[string]int{}}
	opts.Clock = e.clock
	opts.Logger = discardLogger()
	e.s = kvscheduler.New(opts)
	t.Cleanup(e.s.Close)
	counter := func(name string) func([]api.KVWithMetadata) {
		return func([]api.KVWithMetadata) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.retrieves[name]++
		}
	}
	if err := e.s.RegisterKVDescriptor(
		e.sb.Descriptor(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true, OnRetrieve: counter("iface")}),
		e.sb.Descriptor(mocksb.Options{Name: "route", Prefix: "route/", NB: true, Deps: mocksb.DependsOn, OnRetrieve: counter("route")}),
	); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(rest.NewHandler(e.s, rest.Options{}))
	t.Cleanup(e.srv.Close) // runs before the scheduler's Close
	return e
}

func (e *env) retrieveCount(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.retrieves[name]
}

type kv struct {
	key   string
	value proto.Message
}

func set(key, text string) kv { return kv{key, mocksb.Str(text)} }
func del(key string) kv       { return kv{key: key} }

func (e *env) commit(opts api.TxnOptions, changes ...kv) (uint64, error) {
	txn := e.s.StartNBTransaction()
	for _, c := range changes {
		txn.SetValue(c.key, c.value)
	}
	return txn.Commit(context.Background(), opts)
}

// txn moves the clock by a second and runs a transaction that must succeed.
func (e *env) txn(changes ...kv) uint64 {
	e.t.Helper()
	e.clock.Advance(time.Second)
	seq, err := e.commit(api.TxnOptions{}, changes...)
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	return seq
}

// standard runs the transactions most tests read:
//
//	#1 at t0+1s: route/r1 (depends on iface/a): PENDING
//	#2 at t0+2s: iface/a: CONFIGURED, and route/r1 becomes CONFIGURED
//	#3 at t0+3s: iface/b: CONFIGURED
func (e *env) standard() {
	e.t.Helper()
	e.txn(set("route/r1", "via a dep=iface/a"))
	e.txn(set("iface/a", "a"))
	e.txn(set("iface/b", "b"))
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func (e *env) do(method, pathAndQuery string) response {
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
		e.t.Fatalf("%s %s: reading the body: %v", method, pathAndQuery, err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

// getJSON GETs a path that must answer 200 with JSON and decodes it into v;
// fields that v does not declare fail the test.
func (e *env) getJSON(pathAndQuery string, v any) {
	e.t.Helper()
	e.decode200("GET", pathAndQuery, v)
}

func (e *env) decode200(method, pathAndQuery string, v any) {
	e.t.Helper()
	r := e.do(method, pathAndQuery)
	if r.code != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, pathAndQuery, r.code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("%s %s: Content-Type %q, want application/json", method, pathAndQuery, ct)
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		e.t.Fatalf("%s %s: decoding %T: %v\n%s", method, pathAndQuery, v, err, r.body)
	}
}

// getText GETs a path that must answer 200 with the content type.
func (e *env) getText(pathAndQuery, contentType string) string {
	e.t.Helper()
	r := e.do("GET", pathAndQuery)
	if r.code != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", pathAndQuery, r.code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != contentType {
		e.t.Fatalf("GET %s: Content-Type %q, want %q", pathAndQuery, ct, contentType)
	}
	return string(r.body)
}

// wantError checks an error answer: the code, a JSON body {"error": msg}
// and that msg contains every part.
func (e *env) wantError(method, pathAndQuery string, code int, parts ...string) string {
	e.t.Helper()
	r := e.do(method, pathAndQuery)
	if r.code != code {
		e.t.Errorf("%s %s: %d %s, want %d", method, pathAndQuery, r.code, r.body, code)
		return ""
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		e.t.Errorf("%s %s: Content-Type %q, want application/json", method, pathAndQuery, ct)
	}
	var body map[string]string
	if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 1 || body["error"] == "" {
		e.t.Errorf("%s %s: body %s, want {\"error\": \"...\"} (%v)", method, pathAndQuery, r.body, err)
		return ""
	}
	for _, p := range parts {
		if !strings.Contains(body["error"], p) {
			e.t.Errorf("%s %s: error %q does not mention %q", method, pathAndQuery, body["error"], p)
		}
	}
	return body["error"]
}

// ---------------------------------------------------------------------------
// The JSON answers, as a client reads them.

type jValue struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// text of a test value (a StringValue is a JSON string).
func (v *jValue) text(t *testing.T) string {
	t.Helper()
	if v == nil {
		return "<nil>"
	}
	if v.Type != "google.protobuf.StringValue" {
		t.Errorf("value type %q, want google.protobuf.StringValue", v.Type)
	}
	var s string
	if err := json.Unmarshal(v.Value, &s); err != nil {
		t.Errorf("value %s: %v", v.Value, err)
	}
	return s
}

type jKV struct {
	Key    string  `json:"key"`
	Value  *jValue `json:"value"`
	Origin string  `json:"origin"`
}

type jOp struct {
	Operation  string   `json:"operation"`
	Key        string   `json:"key"`
	Descriptor string   `json:"descriptor"`
	PrevValue  *jValue  `json:"prev_value"`
	NewValue   *jValue  `json:"new_value"`
	PrevState  string   `json:"prev_state"`
	NewState   string   `json:"new_state"`
	PrevError  string   `json:"prev_error"`
	Error      string   `json:"error"`
	Flags      []string `json:"flags"`
}

type jTxn struct {
	SeqNum       uint64    `json:"seq_num"`
	Type         string    `json:"type"`
	Resync       string    `json:"resync"`
	Description  string    `json:"description"`
	WithRevert   bool      `json:"with_revert"`
	DryRun       bool      `json:"dry_run"`
	RetryAttempt int       `json:"retry_attempt"`
	Revision     uint64    `json:"revision"`
	Start        time.Time `json:"start"`
	Stop         time.Time `json:"stop"`
	Values       []jKV     `json:"values"`
	Planned      []jOp     `json:"planned"`
	Executed     []jOp     `json:"executed"`
	VerifyFailed []struct {
		Key, Operation, Error string
	} `json:"verify_failed"`
}

type jHistory struct {
	OldestSeq   uint64    `json:"oldest_seq"`
	OldestStart time.Time `json:"oldest_start"`
	NewestSeq   uint64    `json:"newest_seq"`
	Trimmed     uint64    `json:"trimmed"`
	Kept        int       `json:"kept"`
	Bytes       int       `json:"bytes"`
	MaxCount    int       `json:"max_count"`
	MaxBytes    int       `json:"max_bytes"`
	MaxAge      string    `json:"max_age"`
	Note        string    `json:"note"`
}

type jTxnHistory struct {
	History      jHistory `json:"history"`
	Transactions []jTxn   `json:"transactions"`
}

type jRevision struct {
	TxnSeq       uint64               `json:"txn_seq"`
	Since        time.Time            `json:"since"`
	Until        time.Time            `json:"until"`
	Operation    string               `json:"operation"`
	Value        *jValue              `json:"value"`
	State        string               `json:"state"`
	Error        string               `json:"error"`
	Descriptor   string               `json:"descriptor"`
	Flags        []string             `json:"flags"`
	Dependencies []api.DependencyInfo `json:"dependencies"`
}

type jTimeline struct {
	Key       string      `json:"key"`
	Revisions []jRevision `json:"revisions"`
}

type jNode struct {
	Key          string               `json:"key"`
	Descriptor   string               `json:"descriptor"`
	Value        *jValue              `json:"value"`
	State        string               `json:"state"`
	LastOp       string               `json:"last_op"`
	Error        string               `json:"error"`
	Base         string               `json:"base"`
	Derived      bool                 `json:"derived"`
	Obtained     bool                 `json:"obtained"`
	Dependencies []api.DependencyInfo `json:"dependencies"`
}

type jSnapshot struct {
	TxnSeq  uint64    `json:"txn_seq"`
	Time    time.Time `json:"time"`
	Current bool      `json:"current"`
	Changed []string  `json:"changed"`
	Note    string    `json:"note"`
	Nodes   []jNode   `json:"nodes"`
}

func (s *jSnapshot) keysAndStates() []string {
	var out []string
	for _, n := range s.Nodes {
		out = append(out, n.Key+" "+n.State)
	}
	return out
}

type jDumpValue struct {
	Key      string  `json:"key"`
	Value    *jValue `json:"value"`
	Origin   string  `json:"origin"`
	Metadata any     `json:"metadata"`
}

type jDump struct {
	View   string       `json:"view"`
	Values []jDumpValue `json:"values"`
	Error  string       `json:"error"`
}

func (d *jDump) keys() []string {
	out := []string{}
	for _, v := range d.Values {
		out = append(out, v.Key)
	}
	return out
}

type jStatus struct {
	Key            string   `json:"key"`
	State          string   `json:"state"`
	Error          string   `json:"error"`
	LastOperation  string   `json:"last_operation"`
	Details        []string `json:"details"`
	DescriptorName string   `json:"descriptor_name"`
	Derived        bool     `json:"derived"`
}

type jBaseStatus struct {
	Value         jStatus   `json:"value"`
	DerivedValues []jStatus `json:"derived_values"`
}

type jStatuses struct {
	Statuses []jBaseStatus `json:"statuses"`
}

func (s *jStatuses) keys() []string {
	out := []string{}
	for _, st := range s.Statuses {
		out = append(out, st.Value.Key)
	}
	return out
}

type jStats struct {
	ValuesByState      map[string]int            `json:"values_by_state"`
	ValuesByDescriptor map[string]map[string]int `json:"values_by_descriptor"`
	QueueLength        int                       `json:"queue_length"`
	Revision           uint64                    `json:"revision"`
	Transactions       map[string]uint64         `json:"transactions"`
	History            jHistory                  `json:"history"`
}

func seqs(txns []jTxn) []uint64 {
	out := []uint64{}
	for _, t := range txns {
		out = append(out, t.SeqNum)
	}
	return out
}

// opLine is an operation as "CREATE route/r1 NONEXISTENT->PENDING [NOOP IS-PENDING]".
func opLine(t *testing.T, op jOp) string {
	t.Helper()
	s := op.Operation + " " + op.Key + " " + op.PrevState + "->" + op.NewState
	if op.PrevValue != nil || op.NewValue != nil {
		prev, next := "", ""
		if op.PrevValue != nil {
			prev = op.PrevValue.text(t)
		}
		if op.NewValue != nil {
			next = op.NewValue.text(t)
		}
		s += " (" + prev + "->" + next + ")"
	}
	if len(op.Flags) > 0 {
		s += " [" + strings.Join(op.Flags, " ") + "]"
	}
	if op.Error != "" {
		s += " error=" + op.Error
	}
	return s
}

func opLines(t *testing.T, ops []jOp) []string {
	t.Helper()
	var out []string
	for _, op := range ops {
		out = append(out, opLine(t, op))
	}
	return out
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// ---------------------------------------------------------------------------
// index

func TestIndex(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	var idx struct {
		Endpoints []string `json:"endpoints"`
	}
	e.getJSON("/scheduler/", &idx)
	var paths []string
	for _, ep := range idx.Endpoints {
		path, _, _ := strings.Cut(ep, "?")
		paths = append(paths, path)
	}
	equalLines(t, "endpoints", paths, []string{
		"GET /scheduler/txn-history", "GET /scheduler/key-timeline", "GET /scheduler/graph-snapshot",
		"GET /scheduler/graph", "GET /scheduler/dump", "GET /scheduler/status", "GET /scheduler/stats",
		"POST /scheduler/downstream-resync",
	})
	e.wantError("GET", "/scheduler/?verbose=1", 400, `unknown argument "verbose"`, "takes none")
}

// ---------------------------------------------------------------------------
// txn-history

func TestTxnHistoryAll(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()

	var h jTxnHistory
	e.getJSON("/scheduler/txn-history", &h)
	wantInfo := jHistory{OldestSeq: 1, OldestStart: at(time.Second), NewestSeq: 3, Trimmed: 0, Kept: 3,
		Bytes: h.History.Bytes, MaxCount: 1000, MaxBytes: 16 << 20, MaxAge: "24h0m0s",
		Note: "history starts at #1 (2026-11-21T12:00:01Z)"}
	if !h.History.OldestStart.Equal(wantInfo.OldestStart) || h.History.Bytes <= 0 {
		t.Errorf("history %+v", h.History)
	}
	h.History.OldestStart = wantInfo.OldestStart // compared above (location aside)
	if h.History != wantInfo {
		t.Errorf("history\n got  %+v\n want %+v", h.History, wantInfo)
	}
	if got := seqs(h.Transactions); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("transactions %v, want 1 2 3", got)
	}
	for i, txn := range h.Transactions {
		want := at(time.Duration(i+1) * time.Second)
		if txn.Type != "NB transaction" || txn.Resync != "" || txn.WithRevert || txn.DryRun || txn.RetryAttempt != 0 ||
			txn.Description != "" || !txn.Start.Equal(want) || !txn.Stop.Equal(want) {
			t.Errorf("transaction #%d: %+v, want an NB transaction at %v", txn.SeqNum, txn, want)
		}
	}
	t1 := h.Transactions[0]
	if len(t1.Values) != 1 || t1.Values[0].Key != "route/r1" || t1.Values[0].Value.text(t) != "via a dep=iface/a" || t1.Values[0].Origin != "from-NB" {
		t.Errorf("values of #1: %+v", t1.Values)
	}
	equalLines(t, "planned of #1", opLines(t, t1.Planned), []string{
		"CREATE route/r1 NONEXISTENT->PENDING (->via a dep=iface/a) [NOOP IS-PENDING]"})
	equalLines(t, "executed of #1", opLines(t, t1.Executed), []string{
		"CREATE route/r1 NONEXISTENT->PENDING (->via a dep=iface/a) [NOOP IS-PENDING]"})
	if t1.Executed[0].Descriptor != "route" {
		t.Errorf("descriptor of the operation of #1: %q", t1.Executed[0].Descriptor)
	}
	equalLines(t, "executed of #2", opLines(t, h.Transactions[1].Executed), []string{
		"CREATE iface/a NONEXISTENT->CONFIGURED (->a)",
		"CREATE route/r1 PENDING->CONFIGURED (->via a dep=iface/a) [WAS-PENDING]",
	})
	equalLines(t, "executed of #3", opLines(t, h.Transactions[2].Executed), []string{
		"CREATE iface/b NONEXISTENT->CONFIGURED (->b)"})
}

func TestTxnHistoryBySeqNum(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	var h jTxnHistory
	e.getJSON("/scheduler/txn-history?seq-num=2", &h)
	if got := seqs(h.Transactions); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("seq-num=2: transactions %v", got)
	}
	if h.History.Kept != 3 || h.History.NewestSeq != 3 {
		t.Errorf("seq-num=2: history %+v", h.History)
	}
	txn := h.Transactions[0]
	if len(txn.Values) != 1 || txn.Values[0].Key != "iface/a" || !txn.Start.Equal(at(2*time.Second)) {
		t.Errorf("seq-num=2: %+v", txn)
	}
	e.wantError("GET", "/scheduler/txn-history?seq-num=4", 404, "transaction #4 is not in the history", "history starts at #1")
}

func TestTxnHistoryTimeRange(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard() // #1 at t0+1s, #2 at t0+2s, #3 at t0+3s
	for _, c := range []struct {
		query string
		want  []uint64
	}{
		{"", []uint64{1, 2, 3}},
		// Unix seconds.
		{"since=" + unix(at(2*time.Second)), []uint64{2, 3}},
		{"until=" + unix(at(2*time.Second)), []uint64{1, 2}},
		{"since=" + unix(at(2*time.Second)) + "&until=" + unix(at(2*time.Second)), []uint64{2}},
		{"since=1795262401.5&until=1795262402.5", []uint64{2}},
		{"since=" + unix(at(time.Second+time.Millisecond)), []uint64{2, 3}},
		{"since=0", []uint64{1, 2, 3}},
		{"since=253402300799", []uint64{}},
		{"until=" + unix(t0), []uint64{}},
		// RFC 3339, with fractions and offsets.
		{"since=2026-11-21T12:00:02Z&until=2026-11-21T12:00:03Z", []uint64{2, 3}},
		{"since=2026-11-21T12:00:01.000000001Z", []uint64{2, 3}},
		{"until=2026-11-21T12:00:01.5Z", []uint64{1}},
		{"since=2026-11-21T13:00:03%2B01:00", []uint64{3}},
		{"since=2026-11-21T11:00:02-01:00&until=" + unix(at(2*time.Second)), []uint64{2}},
		// Mixed.
		{"since=2026-11-21T12:00:01Z&until=" + unix(at(1500*time.Millisecond)), []uint64{1}},
	} {
		var h jTxnHistory
		e.getJSON("/scheduler/txn-history?"+c.query, &h)
		if h.Transactions == nil {
			t.Errorf("%s: transactions is null, want a list", c.query)
		}
		if got := seqs(h.Transactions); !slices.Equal(got, c.want) {
			t.Errorf("%s: transactions %v, want %v", c.query, got, c.want)
		}
	}
}

func TestTxnHistoryText(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	out := e.getText("/scheduler/txn-history?format=text", "text/plain; charset=utf-8")
	if !strings.HasPrefix(out, "# history starts at #1 (2026-11-21T12:00:01Z); 0 transactions trimmed by the retention limits\n") {
		t.Errorf("text history does not start with the history line:\n%s", out)
	}
	for _, want := range []string{
		"| Transaction #1 ", "| Transaction #2 ", "| Transaction #3 ",
		"+--------------------------------------------------------------------------------------------------+\n",
		"+--- #2 took 0s ---", "CREATE [WAS-PENDING]:", "- key: route/r1", "NB transaction |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text history lacks %q:\n%s", want, out)
		}
	}
	one := e.getText("/scheduler/txn-history?seq-num=2&format=text", "text/plain; charset=utf-8")
	if !strings.Contains(one, "Transaction #2") || strings.Contains(one, "Transaction #1") || strings.Contains(one, "Transaction #3") {
		t.Errorf("seq-num=2&format=text:\n%s", one)
	}
	ranged := e.getText("/scheduler/txn-history?format=text&since="+unix(at(3*time.Second)), "text/plain; charset=utf-8")
	if !strings.Contains(ranged, "Transaction #3") || strings.Contains(ranged, "Transaction #2") {
		t.Errorf("since=t0+3s&format=text:\n%s", ranged)
	}
	// JSON is the default and format=json asks for it.
	var h jTxnHistory
	e.getJSON("/scheduler/txn-history?format=json&seq-num=3", &h)
	if got := seqs(h.Transactions); !slices.Equal(got, []uint64{3}) {
		t.Errorf("format=json&seq-num=3: %v", got)
	}
}

func TestTxnHistoryRevertedTransaction(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.txn(set("iface/a", "a"))
	e.sb.Fail("create", "route/r2", nil, 1)
	e.clock.Advance(time.Second)
	seq, err := e.commit(api.TxnOptions{Revert: true}, set("iface/a", "a2"), set("route/r2", "x dep=iface/a"))
	if err == nil {
		t.Fatal("reverted commit: no error")
	}

	var h jTxnHistory
	e.getJSON("/scheduler/txn-history?seq-num="+strconv.FormatUint(seq, 10), &h)
	if len(h.Transactions) != 1 {
		t.Fatalf("seq-num=%d: %d transactions", seq, len(h.Transactions))
	}
	txn := h.Transactions[0]
	if !txn.WithRevert || txn.SeqNum != seq {
		t.Errorf("record #%d: with_revert %v seq %d", seq, txn.WithRevert, txn.SeqNum)
	}
	equalLines(t, "planned", opLines(t, txn.Planned), []string{
		"UPDATE iface/a CONFIGURED->CONFIGURED (a->a2)",
		"CREATE route/r2 NONEXISTENT->CONFIGURED (->x dep=iface/a)",
	})
	equalLines(t, "executed", opLines(t, txn.Executed), []string{
		"UPDATE iface/a CONFIGURED->CONFIGURED (a->a2)",
		"CREATE route/r2 NONEXISTENT->FAILED (->x dep=iface/a) error=injected failure",
		"UPDATE iface/a CONFIGURED->CONFIGURED (a2->a) [REVERT]",
	})
	out := e.getText("/scheduler/txn-history?format=text&seq-num="+strconv.FormatUint(seq, 10), "text/plain; charset=utf-8")
	for _, want := range []string{"revert-on-failure: true", "UPDATE [REVERT]:", "error: injected failure"} {
		if !strings.Contains(out, want) {
			t.Errorf("text record lacks %q:\n%s", want, out)
		}
	}
	// The SB holds the value from before the transaction.
	if got := e.sb.Snapshot(); got["iface/a"] != "a" || len(got) != 1 {
		t.Errorf("SB after the revert: %v", got)
	}
}

func TestTxnHistoryTrimmed(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{HistorySize: 2})
	for i := range 4 {
		e.txn(set("iface/a", strings.Repeat("x", i+1)))
	}
	var h jTxnHistory
	e.getJSON("/scheduler/txn-history", &h)
	if got := seqs(h.Transactions); !slices.Equal(got, []uint64{3, 4}) {
		t.Errorf("transactions %v, want 3 4", got)
	}
	hi := h.History
	if hi.OldestSeq != 3 || hi.NewestSeq != 4 || hi.Trimmed != 2 || hi.Kept != 2 || hi.MaxCount != 2 ||
		!hi.OldestStart.Equal(at(3*time.Second)) || hi.Note != "history starts at #3 (2026-11-21T12:00:03Z)" {
		t.Errorf("history %+v", hi)
	}
	for _, seq := range []string{"1", "2"} {
		e.wantError("GET", "/scheduler/txn-history?seq-num="+seq, 404,
			"transaction #"+seq+" is not in the history", "history starts at #3")
	}
	out := e.getText("/scheduler/txn-history?format=text", "text/plain; charset=utf-8")
	if !strings.HasPrefix(out, "# history starts at #3 (2026-11-21T12:00:03Z); 2 transactions trimmed by the retention limits\n") ||
		strings.Contains(out, "Transaction #2") || !strings.Contains(out, "Transaction #4") {
		t.Errorf("text history after trimming:\n%s", out)
	}
	// The graph as of a trimmed transaction is not found either.
	e.wantError("GET", "/scheduler/graph?txn=2", 404, "history starts at #3")
	// Stats report the same history.
	var st jStats
	e.getJSON("/scheduler/stats", &st)
	if st.History.Trimmed != 2 || st.History.Kept != 2 || st.History.OldestSeq != 3 || st.Transactions["NB transaction"] != 4 {
		t.Errorf("stats: %+v", st)
	}
	// The revision: the stats' is the last transaction's, one above the
	// one before (each of them changed the state).
	var kept jTxnHistory
	e.getJSON("/scheduler/txn-history", &kept)
	if txns := kept.Transactions; len(txns) != 2 || st.Revision == 0 || txns[1].Revision != st.Revision || txns[0].Revision != st.Revision-1 {
		t.Errorf("revision in the stats %d, in the history %+v", st.Revision, txns)
	}
}

// ---------------------------------------------------------------------------
// key-timeline

func TestKeyTimeline(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard() // route/r1 PENDING at t0+1s, CONFIGURED at t0+2s

	var tl jTimeline
	e.getJSON("/scheduler/key-timeline?key=route/r1", &tl)
	if tl.Key != "route/r1" || len(tl.Revisions) != 2 {
		t.Fatalf("timeline %+v", tl)
	}
	pending, configured := tl.Revisions[0], tl.Revisions[1]
	if pending.TxnSeq != 1 || pending.State != "PENDING" || pending.Operation != "CREATE" || pending.Descriptor != "route" ||
		!pending.Since.Equal(at(time.Second)) || !pending.Until.Equal(at(2*time.Second)) ||
		!slices.Equal(pending.Flags, []string{"NOOP", "IS-PENDING"}) || pending.Value.text(t) != "via a dep=iface/a" || pending.Error != "" {
		t.Errorf("first revision %+v", pending)
	}
	if configured.TxnSeq != 2 || configured.State != "CONFIGURED" || configured.Operation != "CREATE" ||
		!configured.Since.Equal(at(2*time.Second)) || !configured.Until.IsZero() ||
		!slices.Equal(configured.Flags, []string{"WAS-PENDING"}) || configured.Value.text(t) != "via a dep=iface/a" {
		t.Errorf("second revision %+v", configured)
	}
	for i, rev := range tl.Revisions {
		if d := rev.Dependencies; len(d) != 1 || d[0].Label != "iface/a" || d[0].Key != "iface/a" || !slices.Equal(d[0].Targets, []string{"iface/a"}) {
			t.Errorf("dependencies of revision %d: %+v", i, d)
		}
	}

	// time= picks the revision in force then.
	for _, c := range []struct {
		time  string
		state string
		seq   uint64
	}{
		{unix(at(time.Second)), "PENDING", 1},
		{unix(at(1500 * time.Millisecond)), "PENDING", 1},
		{"2026-11-21T12:00:01.999999999Z", "PENDING", 1},
		{unix(at(2 * time.Second)), "CONFIGURED", 2},
		{"2026-11-21T12:00:02Z", "CONFIGURED", 2},
		{"2026-11-21T13:00:02%2B01:00", "CONFIGURED", 2},
		{unix(at(time.Hour)), "CONFIGURED", 2},
	} {
		var tl jTimeline
		e.getJSON("/scheduler/key-timeline?key=route/r1&time="+c.time, &tl)
		if len(tl.Revisions) != 1 || tl.Revisions[0].State != c.state || tl.Revisions[0].TxnSeq != c.seq {
			t.Errorf("time=%s: %+v, want only #%d %s", c.time, tl.Revisions, c.seq, c.state)
		}
	}
	// Before its first revision the key had no value.
	e.wantError("GET", "/scheduler/key-timeline?key=route/r1&time="+unix(at(500*time.Millisecond)), 404,
		`key "route/r1" had no value at 2026-11-21T12:00:00.5Z`)

	// An interface: one revision.
	var ifc jTimeline
	e.getJSON("/scheduler/key-timeline?key=iface/a", &ifc)
	if len(ifc.Revisions) != 1 || ifc.Revisions[0].State != "CONFIGURED" || ifc.Revisions[0].TxnSeq != 2 ||
		ifc.Revisions[0].Descriptor != "iface" || ifc.Revisions[0].Dependencies != nil || ifc.Revisions[0].Flags != nil {
		t.Errorf("timeline of iface/a: %+v", ifc.Revisions)
	}

	// A removed value keeps its timeline.
	e.txn(del("iface/b"))
	var removed jTimeline
	e.getJSON("/scheduler/key-timeline?key=iface/b", &removed)
	var states []string
	for _, r := range removed.Revisions {
		states = append(states, r.Operation+" "+r.State)
	}
	equalLines(t, "timeline of the deleted iface/b", states, []string{"CREATE CONFIGURED", "DELETE REMOVED"})
}

func TestKeyTimelineText(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	out := e.getText("/scheduler/key-timeline?key=route/r1&format=text", "text/plain; charset=utf-8")
	want := "timeline of route/r1\n" +
		"- 2026-11-21T12:00:01Z  #1 CREATE -> PENDING [NOOP IS-PENDING] value=\"via a dep=iface/a\"\n" +
		"- 2026-11-21T12:00:02Z  #2 CREATE -> CONFIGURED [WAS-PENDING] value=\"via a dep=iface/a\"\n"
	if out != want {
		t.Errorf("text timeline:\n%s\nwant:\n%s", out, want)
	}
	out = e.getText("/scheduler/key-timeline?key=route/r1&format=text&time="+unix(at(1500*time.Millisecond)), "text/plain; charset=utf-8")
	if want := "timeline of route/r1\n- 2026-11-21T12:00:01Z  #1 CREATE -> PENDING [NOOP IS-PENDING] value=\"via a dep=iface/a\"\n"; out != want {
		t.Errorf("text timeline at t0+1.5s:\n%s\nwant:\n%s", out, want)
	}
}

func TestKeyTimelineBeforeTheHistory(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{HistorySize: 1})
	e.txn(set("iface/a", "a"))
	e.txn(set("iface/b", "b"))
	// iface/a's only operation was trimmed; the timeline shows its current
	// value.
	var tl jTimeline
	e.getJSON("/scheduler/key-timeline?key=iface/a", &tl)
	if len(tl.Revisions) != 1 || tl.Revisions[0].State != "CONFIGURED" || tl.Revisions[0].Value.text(t) != "a" {
		t.Errorf("timeline of a value older than the history: %+v", tl.Revisions)
	}
	out := e.getText("/scheduler/key-timeline?key=iface/a&format=text", "text/plain; charset=utf-8")
	if !strings.HasPrefix(out, "timeline of iface/a\n- (before the history)  #0 ") {
		t.Errorf("text timeline of a value older than the history:\n%s", out)
	}
}

// ---------------------------------------------------------------------------
// graph-snapshot

func TestGraphSnapshot(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()

	var before jSnapshot
	e.getJSON("/scheduler/graph-snapshot?time="+unix(at(1500*time.Millisecond)), &before)
	equalLines(t, "nodes at t0+1.5s", before.keysAndStates(), []string{"route/r1 PENDING"})
	if before.TxnSeq != 1 || before.Current || before.Note == "" || !before.Time.Equal(at(1500*time.Millisecond)) || before.Changed != nil {
		t.Errorf("snapshot at t0+1.5s: %+v", before)
	}
	if d := before.Nodes[0].Dependencies; len(d) != 1 || d[0].Satisfied || len(d[0].Targets) != 0 || d[0].Key != "iface/a" {
		t.Errorf("dependency of route/r1 at t0+1.5s: %+v", d)
	}
	if n := before.Nodes[0]; n.Descriptor != "route" || n.Value.text(t) != "via a dep=iface/a" || n.Derived || n.Obtained {
		t.Errorf("route/r1 at t0+1.5s: %+v", n)
	}

	var after jSnapshot
	e.getJSON("/scheduler/graph-snapshot?time=2026-11-21T12:00:02.5Z", &after)
	equalLines(t, "nodes at t0+2.5s", after.keysAndStates(), []string{"iface/a CONFIGURED", "route/r1 CONFIGURED"})
	if after.TxnSeq != 2 || after.Current {
		t.Errorf("snapshot at t0+2.5s: seq %d current %v", after.TxnSeq, after.Current)
	}
	if d := after.Nodes[1].Dependencies; len(d) != 1 || !d[0].Satisfied || !slices.Equal(d[0].Targets, []string{"iface/a"}) {
		t.Errorf("dependency of route/r1 at t0+2.5s: %+v", d)
	}

	var later jSnapshot
	e.getJSON("/scheduler/graph-snapshot?time="+unix(at(time.Hour)), &later)
	equalLines(t, "nodes an hour later", later.keysAndStates(), []string{"iface/a CONFIGURED", "iface/b CONFIGURED", "route/r1 CONFIGURED"})
	if !later.Current || later.TxnSeq != 3 || later.Note != "" {
		t.Errorf("snapshot an hour later: %+v", later)
	}

	var now jSnapshot
	e.getJSON("/scheduler/graph-snapshot", &now)
	equalLines(t, "current nodes", now.keysAndStates(), []string{"iface/a CONFIGURED", "iface/b CONFIGURED", "route/r1 CONFIGURED"})
	if !now.Current || now.TxnSeq != 3 || !now.Time.Equal(at(3*time.Second)) || now.Note != "" {
		t.Errorf("current snapshot: %+v", now)
	}
	for _, n := range now.Nodes {
		if n.LastOp != "CREATE" {
			t.Errorf("current %s: last op %q, want CREATE", n.Key, n.LastOp)
		}
	}

	// Before the oldest kept transaction: not in the history.
	e.wantError("GET", "/scheduler/graph-snapshot?time="+unix(t0), 404, "not in the transaction history", "history starts at #1")
}

// TestGraphSnapshotFarFutureTime: ParseTime accepts Unix seconds up to 1e12
// (year 33658), but the snapshot echoes the time back and encoding/json
// cannot write a year after 9999, so the answer is a 500 — which the package
// promises never to give for the client's input.
func TestGraphSnapshotFarFutureTime(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	for _, q := range []string{"time=300000000000", "time=1e12"} {
		r := e.do("GET", "/scheduler/graph-snapshot?"+q)
		if r.code != http.StatusOK && r.code != http.StatusBadRequest {
			t.Errorf("GET /scheduler/graph-snapshot?%s: %d %s, want 200 (the current graph) or 400", q, r.code, r.body)
		}
	}
}

// ---------------------------------------------------------------------------
// graph

// dotNodeLine returns the DOT line of the node whose label starts with key.
func dotNodeLine(dot, key string) string {
	for _, line := range strings.Split(dot, "\n") {
		if strings.Contains(line, `[label="`+key+`\n`) {
			return line
		}
	}
	return ""
}

func TestGraphDOT(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	const ct = "text/vnd.graphviz; charset=utf-8"

	cur := e.getText("/scheduler/graph?format=dot", ct)
	old := e.getText("/scheduler/graph?format=dot&txn=1", ct)
	if cur == old {
		t.Fatal("the DOT of the current graph and of #1 are the same")
	}
	for _, dot := range []string{cur, old} {
		if !strings.HasPrefix(dot, "// KV Scheduler graph") || !strings.Contains(dot, "digraph kvscheduler {") || !strings.HasSuffix(dot, "}\n") {
			t.Errorf("not a DOT graph:\n%s", dot)
		}
	}
	// Now: all three values configured, the dependency satisfied, nothing
	// highlighted.
	for _, key := range []string{"iface/a", "iface/b", "route/r1"} {
		if line := dotNodeLine(cur, key); !strings.Contains(line, `\nCONFIGURED (last op: CREATE)\n`) {
			t.Errorf("current graph: node %s: %q", key, line)
		}
	}
	if !strings.Contains(cur, "after transaction #3") || !strings.Contains(cur, "(current)") || strings.Contains(cur, "penwidth=3") || strings.Contains(cur, "missing:") {
		t.Errorf("current graph:\n%s", cur)
	}
	// As of #1: only route/r1, PENDING, missing iface/a; route/r1 changed.
	if dotNodeLine(old, "iface/a") != "" || dotNodeLine(old, "iface/b") != "" {
		t.Errorf("graph as of #1 has the interfaces:\n%s", old)
	}
	line := dotNodeLine(old, "route/r1")
	if !strings.Contains(line, `\nPENDING`) || !strings.Contains(line, `fillcolor="#ffdd80"`) || !strings.Contains(line, `color="#ffcc00", penwidth=3`) {
		t.Errorf("graph as of #1: route/r1 is %q, want PENDING and highlighted", line)
	}
	if !strings.Contains(old, `[label="missing: iface/a"`) || !strings.Contains(old, "after transaction #1") || strings.Contains(old, "(current)") {
		t.Errorf("graph as of #1:\n%s", old)
	}
	// As of #3: only iface/b is highlighted.
	third := e.getText("/scheduler/graph?txn=3&format=dot", ct)
	if line := dotNodeLine(third, "iface/b"); !strings.Contains(line, `color="#ffcc00", penwidth=3`) {
		t.Errorf("graph as of #3: iface/b not highlighted: %q", line)
	}
	for _, key := range []string{"iface/a", "route/r1"} {
		if line := dotNodeLine(third, key); line == "" || strings.Contains(line, "penwidth=3") {
			t.Errorf("graph as of #3: %s: %q, want present and not highlighted", key, line)
		}
	}
	if strings.Count(third, "penwidth=3") != 1 || !strings.Contains(third, "changed by the transaction") {
		t.Errorf("graph as of #3: want one highlighted node and its legend:\n%s", third)
	}
}

func TestGraphMermaid(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	const ct = "text/plain; charset=utf-8"
	cur := e.getText("/scheduler/graph?format=mermaid", ct)
	for _, want := range []string{
		"---\ntitle: \"KV Scheduler graph after transaction #3 at 2026-11-21T12:00:03Z (current)\"\n---\n",
		"flowchart LR\n",
		`n0("iface/a<br/>CONFIGURED (last op: CREATE)<br/>value:#quot;a#quot;")`,
		`n2("route/r1<br/>CONFIGURED (last op: CREATE)`,
		`n2 -->|"iface/a"| n0`,
	} {
		if !strings.Contains(cur, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, cur)
		}
	}
	if strings.Contains(cur, "stroke-width:3px") {
		t.Errorf("current mermaid graph highlights a node:\n%s", cur)
	}
	third := e.getText("/scheduler/graph?format=mermaid&txn=3", ct)
	if !strings.Contains(third, "style n1 stroke:#ffcc00,stroke-width:3px") || strings.Contains(third, "style n0 stroke") {
		t.Errorf("mermaid as of #3: want iface/b (n1) highlighted only:\n%s", third)
	}
	first := e.getText("/scheduler/graph?format=mermaid&txn=1", ct)
	if !strings.Contains(first, `n0("route/r1<br/>PENDING`) || !strings.Contains(first, "missing: iface/a") || strings.Contains(first, "iface/a<br/>") {
		t.Errorf("mermaid as of #1:\n%s", first)
	}
}

func TestGraphJSON(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	var cur jSnapshot
	e.getJSON("/scheduler/graph?format=json", &cur)
	equalLines(t, "current nodes", cur.keysAndStates(), []string{"iface/a CONFIGURED", "iface/b CONFIGURED", "route/r1 CONFIGURED"})
	if !cur.Current || cur.TxnSeq != 3 || cur.Changed != nil {
		t.Errorf("current graph: %+v", cur)
	}
	var third jSnapshot
	e.getJSON("/scheduler/graph?format=json&txn=3", &third)
	if !third.Current || third.TxnSeq != 3 || !slices.Equal(third.Changed, []string{"iface/b"}) || !third.Time.Equal(at(3*time.Second)) {
		t.Errorf("graph as of #3: %+v", third)
	}
	var first jSnapshot
	e.getJSON("/scheduler/graph?txn=1&format=json", &first)
	equalLines(t, "nodes as of #1", first.keysAndStates(), []string{"route/r1 PENDING"})
	if first.Current || first.TxnSeq != 1 || !slices.Equal(first.Changed, []string{"route/r1"}) || first.Note == "" {
		t.Errorf("graph as of #1: %+v", first)
	}
	var second jSnapshot
	e.getJSON("/scheduler/graph?txn=2&format=json", &second)
	if !slices.Equal(second.Changed, []string{"iface/a", "route/r1"}) {
		t.Errorf("graph as of #2: changed %v", second.Changed)
	}
}

func TestGraphSVG(t *testing.T) {
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skip("Graphviz dot is not installed")
	}
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	for _, q := range []string{"format=svg", "", "txn=1&format=svg", "txn=2"} {
		svg := e.getText("/scheduler/graph?"+q, "image/svg+xml")
		if !strings.Contains(svg, "<svg") || !strings.Contains(svg, "</svg>") || !strings.Contains(svg, "route/r1") {
			t.Errorf("graph?%s: not an SVG of the graph:\n%.300s", q, svg)
		}
	}
	cur := e.getText("/scheduler/graph?format=svg", "image/svg+xml")
	old := e.getText("/scheduler/graph?format=svg&txn=1", "image/svg+xml")
	if !strings.Contains(cur, "iface/b") || strings.Contains(old, "iface/b") {
		t.Errorf("SVG: iface/b is in the current graph %v, in the graph as of #1 %v", strings.Contains(cur, "iface/b"), strings.Contains(old, "iface/b"))
	}
}

func TestGraphWithoutDot(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // the server runs in this process
	if _, err := exec.LookPath("dot"); err == nil {
		t.Fatal("dot is still found")
	}
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	e.wantError("GET", "/scheduler/graph?format=svg", 501, "Graphviz", "install", "format=dot")
	e.wantError("GET", "/scheduler/graph?format=svg&txn=1", 501, "Graphviz")

	r := e.do("GET", "/scheduler/graph")
	if r.code != 200 || r.header.Get("Content-Type") != "text/vnd.graphviz; charset=utf-8" ||
		!strings.Contains(r.header.Get("X-Graph-Format"), "dot") || !strings.HasPrefix(string(r.body), "// KV Scheduler graph") {
		t.Errorf("graph without a format and without dot: %d %v\n%s", r.code, r.header, r.body)
	}
	if dot := e.getText("/scheduler/graph?format=dot", "text/vnd.graphviz; charset=utf-8"); dot != string(r.body) {
		t.Errorf("the fallback differs from format=dot")
	}
	if old := e.getText("/scheduler/graph?txn=1", "text/vnd.graphviz; charset=utf-8"); !strings.Contains(old, "after transaction #1") {
		t.Errorf("fallback for txn=1:\n%s", old)
	}
}

// ---------------------------------------------------------------------------
// dump

func TestDump(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	e.txn(set("route/r2", "dep=iface/zzz")) // PENDING: intended, not applied

	var idx struct {
		Descriptors   []string `json:"descriptors"`
		NBKeyPrefixes []string `json:"nb_key_prefixes"`
		Views         []string `json:"views"`
		Usage         string   `json:"usage"`
	}
	e.getJSON("/scheduler/dump", &idx)
	if !slices.Equal(idx.Descriptors, []string{"iface", "route"}) || !slices.Equal(idx.NBKeyPrefixes, []string{"iface/", "route/"}) ||
		!slices.Equal(idx.Views, []string{"SB", "NB", "cached"}) || !strings.Contains(idx.Usage, "descriptor=") {
		t.Errorf("dump index: %+v", idx)
	}

	// NB view of a descriptor.
	var nb jDump
	e.getJSON("/scheduler/dump?descriptor=iface&view=NB", &nb)
	if nb.View != "NB" || nb.Error != "" || !slices.Equal(nb.keys(), []string{"iface/a", "iface/b"}) ||
		nb.Values[0].Value.text(t) != "a" || nb.Values[0].Origin != "from-NB" || nb.Values[0].Metadata != nil {
		t.Errorf("dump descriptor=iface&view=NB: %+v", nb)
	}
	var nbRoutes jDump
	e.getJSON("/scheduler/dump?descriptor=route&view=nb", &nbRoutes)
	if !slices.Equal(nbRoutes.keys(), []string{"route/r1", "route/r2"}) || nbRoutes.Values[1].Value.text(t) != "dep=iface/zzz" {
		t.Errorf("dump descriptor=route&view=nb: %+v", nbRoutes)
	}

	// Cached view by key prefix: the pending route is not applied.
	var cached jDump
	e.getJSON("/scheduler/dump?key-prefix=route/&view=cached", &cached)
	if cached.View != "cached" || !slices.Equal(cached.keys(), []string{"route/r1"}) || cached.Values[0].Value.text(t) != "via a dep=iface/a" || cached.Values[0].Origin != "from-NB" {
		t.Errorf("dump key-prefix=route/&view=cached: %+v", cached)
	}
	// cached is the default view; "internal" is another name for it.
	for _, q := range []string{"descriptor=route", "descriptor=route&view=internal", "descriptor=route&view=CACHED"} {
		var d jDump
		e.getJSON("/scheduler/dump?"+q, &d)
		if d.View != "cached" || !slices.Equal(d.keys(), []string{"route/r1"}) {
			t.Errorf("dump %s: %+v", q, d)
		}
	}
	var all jDump
	e.getJSON("/scheduler/dump?key-prefix=", &all)
	if !slices.Equal(all.keys(), []string{"iface/a", "iface/b", "route/r1"}) {
		t.Errorf("dump key-prefix= (all): %v", all.keys())
	}
	if e.retrieveCount("iface")+e.retrieveCount("route") != 0 {
		t.Errorf("NB and cached dumps called Retrieve: iface %d, route %d", e.retrieveCount("iface"), e.retrieveCount("route"))
	}

	// SB view asks Retrieve and shows what the SB holds, foreign values too.
	e.sb.Put("iface/foreign", mocksb.Str("f"), nil, api.FromSB)
	var sb jDump
	e.getJSON("/scheduler/dump?descriptor=iface&view=SB", &sb)
	if sb.View != "SB" || sb.Error != "" || !slices.Equal(sb.keys(), []string{"iface/a", "iface/b", "iface/foreign"}) || sb.Values[2].Origin != "from-SB" {
		t.Errorf("dump descriptor=iface&view=SB: %+v", sb)
	}
	if got := e.retrieveCount("iface"); got != 1 || e.retrieveCount("route") != 0 {
		t.Errorf("Retrieve calls after the SB dump of iface: iface %d, route %d; want 1, 0", got, e.retrieveCount("route"))
	}
	var sbRoutes jDump
	e.getJSON("/scheduler/dump?key-prefix=route/&view=sb", &sbRoutes)
	if sbRoutes.View != "SB" || !slices.Equal(sbRoutes.keys(), []string{"route/r1"}) {
		t.Errorf("dump key-prefix=route/&view=sb: %+v", sbRoutes)
	}
	if e.retrieveCount("route") != 1 || e.retrieveCount("iface") != 1 {
		t.Errorf("Retrieve calls after the SB dump of route/: iface %d, route %d; want 1, 1", e.retrieveCount("iface"), e.retrieveCount("route"))
	}
	var cachedIfaces jDump
	e.getJSON("/scheduler/dump?descriptor=iface", &cachedIfaces)
	if slices.Contains(cachedIfaces.keys(), "iface/foreign") {
		t.Errorf("the cached view shows a value the scheduler does not know: %v", cachedIfaces.keys())
	}
	if got := e.sb.OpStrings(true); !slices.Contains(got, "retrieve iface") || !slices.Contains(got, "retrieve route") {
		t.Errorf("SB operations %v, want the retrieves", got)
	}
}

// TestDumpSBPartialFailure: a failing Retrieve of one descriptor is a 502
// (the SB did not answer), with the values of the others and the error.
func TestDumpSBPartialFailure(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	e.sb.Fail("retrieve", "route", nil, 1)
	var d jDump
	r := e.do("GET", "/scheduler/dump?key-prefix=&view=SB")
	if r.code != http.StatusBadGateway {
		t.Fatalf("SB dump with a failing Retrieve: %d %s, want 502", r.code, r.body)
	}
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.keys(), []string{"iface/a", "iface/b"}) || !strings.Contains(d.Error, "route") || !strings.Contains(d.Error, "injected failure") {
		t.Errorf("SB dump with a failing route Retrieve: %+v", d)
	}
}

// ---------------------------------------------------------------------------
// status

func TestStatus(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	e.txn(set("route/r2", "dep=iface/zzz"))

	var one jStatuses
	e.getJSON("/scheduler/status?key=iface/a", &one)
	want := jStatus{Key: "iface/a", State: "CONFIGURED", LastOperation: "CREATE", DescriptorName: "iface"}
	if len(one.Statuses) != 1 || !statusEqual(one.Statuses[0].Value, want) || one.Statuses[0].DerivedValues != nil {
		t.Errorf("status key=iface/a: %+v, want %+v", one.Statuses, want)
	}
	var pending jStatuses
	e.getJSON("/scheduler/status?key=route/r2", &pending)
	// A value that never left PENDING has had no operation; details name
	// the unmet dependency.
	wantPending := jStatus{Key: "route/r2", State: "PENDING", Details: []string{"iface/zzz"}, DescriptorName: "route"}
	if len(pending.Statuses) != 1 || !statusEqual(pending.Statuses[0].Value, wantPending) {
		t.Errorf("status key=route/r2: %+v, want %+v", pending.Statuses, wantPending)
	}

	var byDesc jStatuses
	e.getJSON("/scheduler/status?descriptor=route", &byDesc)
	equalLines(t, "status descriptor=route", byDesc.keys(), []string{"route/r1", "route/r2"})
	var byPrefix jStatuses
	e.getJSON("/scheduler/status?key-prefix=iface/", &byPrefix)
	equalLines(t, "status key-prefix=iface/", byPrefix.keys(), []string{"iface/a", "iface/b"})
	var none jStatuses
	e.getJSON("/scheduler/status?key-prefix=nothing/", &none)
	if none.Statuses == nil || len(none.Statuses) != 0 {
		t.Errorf("status key-prefix=nothing/: %+v, want an empty list", none)
	}
	var all jStatuses
	e.getJSON("/scheduler/status", &all)
	equalLines(t, "status", all.keys(), []string{"iface/a", "iface/b", "route/r1", "route/r2"})
	for _, st := range all.Statuses[:3] {
		if st.Value.LastOperation != "CREATE" || st.Value.State != "CONFIGURED" || st.Value.Error != "" || st.Value.Derived || st.Value.Details != nil {
			t.Errorf("status of %s: %+v", st.Value.Key, st.Value)
		}
	}

	// A failed value shows its error.
	e.sb.Fail("create", "iface/c", nil, 1)
	e.clock.Advance(time.Second)
	if _, err := e.commit(api.TxnOptions{}, set("iface/c", "c")); err == nil {
		t.Fatal("failing create: no error")
	}
	var failed jStatuses
	e.getJSON("/scheduler/status?key=iface/c", &failed)
	if len(failed.Statuses) != 1 || failed.Statuses[0].Value.State != "FAILED" || failed.Statuses[0].Value.Error != "injected failure" {
		t.Errorf("status of a failed value: %+v", failed.Statuses)
	}
}

func statusEqual(a, b jStatus) bool {
	return a.Key == b.Key && a.State == b.State && a.Error == b.Error && a.LastOperation == b.LastOperation &&
		slices.Equal(a.Details, b.Details) && a.DescriptorName == b.DescriptorName && a.Derived == b.Derived
}

// ---------------------------------------------------------------------------
// stats

func TestStats(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	e.txn(set("route/r2", "dep=iface/zzz"))
	var st jStats
	e.getJSON("/scheduler/stats", &st)
	if want := map[string]int{"CONFIGURED": 3, "PENDING": 1}; !mapsEqual(st.ValuesByState, want) {
		t.Errorf("values_by_state %v, want %v", st.ValuesByState, want)
	}
	if len(st.ValuesByDescriptor) != 2 || !mapsEqual(st.ValuesByDescriptor["iface"], map[string]int{"CONFIGURED": 2}) ||
		!mapsEqual(st.ValuesByDescriptor["route"], map[string]int{"CONFIGURED": 1, "PENDING": 1}) {
		t.Errorf("values_by_descriptor %v", st.ValuesByDescriptor)
	}
	if st.QueueLength != 0 || len(st.Transactions) != 1 || st.Transactions["NB transaction"] != 4 {
		t.Errorf("queue %d, transactions %v", st.QueueLength, st.Transactions)
	}
	if st.History.Kept != 4 || st.History.NewestSeq != 4 || st.History.OldestSeq != 1 || st.History.Note != "history starts at #1 (2026-11-21T12:00:01Z)" {
		t.Errorf("history %+v", st.History)
	}
	e.wantError("GET", "/scheduler/stats?x=1", 400, `unknown argument "x"`)
}

func mapsEqual[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// downstream-resync

type jResync struct {
	Transaction jTxn   `json:"transaction"`
	Error       string `json:"error"`
}

func TestDownstreamResync(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	e.sb.Remove("iface/b") // drift: removed behind the agent's back

	var r jResync
	e.decode200("POST", "/scheduler/downstream-resync", &r)
	txn := r.Transaction
	if want := api.DownstreamResync.String(); txn.Resync != want || want != "downstream resync" {
		t.Errorf("resync %q, want %q", txn.Resync, want)
	}
	if r.Error != "" || txn.SeqNum != 4 || txn.Type != "NB transaction" || txn.Description != "downstream resync requested over REST" || txn.WithRevert {
		t.Errorf("resync answer %+v", r)
	}
	equalLines(t, "resync operations", opLines(t, txn.Executed), []string{"CREATE iface/b MISSING->CONFIGURED (->b)"})
	if e.retrieveCount("iface") != 1 || e.retrieveCount("route") != 1 {
		t.Errorf("Retrieve calls: iface %d, route %d; want 1, 1", e.retrieveCount("iface"), e.retrieveCount("route"))
	}
	if got := e.sb.Snapshot(); got["iface/b"] != "b" {
		t.Errorf("SB after the resync: %v", got)
	}
	// It is in the history.
	var h jTxnHistory
	e.getJSON("/scheduler/txn-history?seq-num=4", &h)
	if len(h.Transactions) != 1 || h.Transactions[0].Resync != "downstream resync" {
		t.Errorf("history of the resync: %+v", h.Transactions)
	}

	// With the options; nothing to repair now.
	var r2 jResync
	e.decode200("POST", "/scheduler/downstream-resync?retry=true&verbose=1", &r2)
	if r2.Transaction.SeqNum != 5 || r2.Transaction.Resync != "downstream resync" || len(r2.Transaction.Executed) != 0 || r2.Error != "" {
		t.Errorf("second resync: %+v", r2)
	}

	// Only POST.
	resp := e.do("GET", "/scheduler/downstream-resync")
	if resp.code != http.StatusMethodNotAllowed || !strings.Contains(resp.header.Get("Allow"), "POST") {
		t.Errorf("GET downstream-resync: %d, Allow %q", resp.code, resp.header.Get("Allow"))
	}
	if resp := e.do("POST", "/scheduler/stats"); resp.code != http.StatusMethodNotAllowed {
		t.Errorf("POST stats: %d", resp.code)
	}
	e.wantError("POST", "/scheduler/downstream-resync?retry=maybe", 400, `retry="maybe"`)
	e.wantError("POST", "/scheduler/downstream-resync?verbose=2", 400, `verbose="2"`)
	e.wantError("POST", "/scheduler/downstream-resync?force=1", 400, `unknown argument "force"`)
	if got := e.s.GetHistoryInfo().NewestSeq; got != 5 {
		t.Errorf("rejected requests ran a resync: newest transaction #%d", got)
	}
}

// ---------------------------------------------------------------------------
// Bad requests

func TestBadRequests(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	for _, c := range []struct {
		path  string
		code  int
		parts []string
	}{
		// Arguments.
		{"txn-history?bogus=1", 400, []string{`unknown argument "bogus"`, "seq-num, since, until, format"}},
		{"key-timeline?key=iface/a&color=red", 400, []string{`unknown argument "color"`}},
		{"graph-snapshot?txn=1", 400, []string{`unknown argument "txn"`}},
		{"graph?time=1", 400, []string{`unknown argument "time"`}},
		{"dump?key=iface/a", 400, []string{`unknown argument "key"`}},
		{"status?view=SB", 400, []string{`unknown argument "view"`}},
		{"stats?format=text", 400, []string{`unknown argument "format"`, "takes none"}},
		{"txn-history?seq-num=1&seq-num=2", 400, []string{`argument "seq-num" given 2 times`}},
		{"key-timeline?key=iface/a&key=iface/b", 400, []string{`argument "key" given 2 times`}},
		{"status?key=iface/a&key=iface/a", 400, []string{`argument "key" given 2 times`}},
		{"dump?view=NB&view=SB&descriptor=iface", 400, []string{`argument "view" given 2 times`}},
		{"txn-history?since=%zz", 400, []string{"malformed query"}},
		{"txn-history?since=1;until=2", 400, []string{"malformed query"}},
		// Unknown things.
		{"key-timeline?key=iface/nope", 404, []string{`key "iface/nope"`, "history starts at #1"}},
		{"status?key=iface/nope", 404, []string{`key "iface/nope": no such value`}},
		{"dump?descriptor=nope", 404, []string{"unknown descriptor", `"nope"`}},
		{"dump?descriptor=nope&view=SB", 404, []string{"unknown descriptor", `"nope"`}},
		{"status?descriptor=nope", 404, []string{`unknown descriptor "nope"`, "iface, route"}},
		// Times.
		{"txn-history?since=yesterday", 400, []string{`since="yesterday"`, "RFC 3339"}},
		{"txn-history?until=2026-11-21", 400, []string{`until="2026-11-21"`}},
		{"txn-history?since=-5", 400, []string{"since=-5", "Unix seconds"}},
		{"txn-history?since=1e13", 400, []string{"since=1e13"}},
		{"txn-history?since=NaN", 400, []string{`since="NaN"`}},
		{"txn-history?until=Inf", 400, []string{`until="Inf"`}},
		{"txn-history?since=0x10", 400, []string{`since="0x10"`}},
		{"txn-history?since=1969-12-31T23:59:59Z", 400, []string{"before 1970"}},
		{"txn-history?since=1795262403&until=1795262401", 400, []string{"until (2026-11-21T12:00:01Z) is before since (2026-11-21T12:00:03Z)"}},
		{"txn-history?since=2026-11-21T12:00:03Z&until=2026-11-21T12:00:02.5Z", 400, []string{"is before since"}},
		{"key-timeline?key=route/r1&time=soon", 400, []string{`time="soon"`}},
		{"key-timeline?key=route/r1&time=-1", 400, []string{"time=-1"}},
		{"graph-snapshot?time=yesterday", 400, []string{`time="yesterday"`}},
		{"graph-snapshot?time=-0.5", 400, []string{"time=-0.5"}},
		{"graph-snapshot?time=0", 404, []string{"not in the transaction history", "history starts at #1"}},
		// Sequence numbers.
		{"txn-history?seq-num=0", 400, []string{`seq-num="0"`, "sequence number"}},
		{"txn-history?seq-num=abc", 400, []string{`seq-num="abc"`}},
		{"txn-history?seq-num=-1", 400, []string{`seq-num="-1"`}},
		{"txn-history?seq-num=99999999999999999999", 400, []string{"seq-num="}},
		{"txn-history?seq-num=999", 404, []string{"transaction #999 is not in the history", "history starts at #1"}},
		{"txn-history?seq-num=1&since=1", 400, []string{"seq-num excludes since and until"}},
		{"graph?txn=999", 404, []string{"transaction #999", "not in the transaction history"}},
		{"graph?txn=0", 400, []string{`txn="0"`}},
		{"graph?txn=abc&format=dot", 400, []string{`txn="abc"`}},
		// Formats and views.
		{"txn-history?format=xml", 400, []string{`format="xml"`, "json, text"}},
		{"txn-history?format=TEXT", 400, []string{`format="TEXT"`}},
		{"key-timeline?key=route/r1&format=dot", 400, []string{`format="dot"`}},
		{"graph?format=png", 400, []string{`format="png"`, "svg, dot, mermaid, json"}},
		{"graph?format=text&txn=999", 400, []string{`format="text"`}},
		{"dump?descriptor=iface&view=XY", 400, []string{`view="XY"`, "SB, NB or cached"}},
		{"dump?view=bogus", 400, []string{`view="bogus"`}},
		// Combinations and missing arguments.
		{"dump?descriptor=iface&key-prefix=route/", 400, []string{"descriptor or key-prefix, not both"}},
		{"dump?descriptor=", 400, []string{`argument "descriptor" is empty`}},
		{"dump?view=SB", 400, []string{"view needs descriptor, key-prefix or model"}},
		{"status?key=", 400, []string{`argument "key" is empty`}},
		{"graph?txn=", 400, []string{`argument "txn" is empty`}},
		{"nope", 404, []string{"no such endpoint"}},
		{"status?key=iface/a&descriptor=iface", 400, []string{"give one of key, descriptor, key-prefix"}},
		{"status?descriptor=iface&key-prefix=iface/", 400, []string{"give one of"}},
		{"key-timeline", 400, []string{"key is required"}},
		{"key-timeline?key=", 400, []string{`argument "key" is empty`}},
		{"key-timeline?time=1795262402", 400, []string{"key is required"}},
	} {
		e.wantError("GET", "/scheduler/"+c.path, c.code, c.parts...)
	}
	// None of them ran or changed anything.
	if got := e.s.GetHistoryInfo().NewestSeq; got != 3 {
		t.Errorf("newest transaction #%d after the bad requests, want #3", got)
	}
}

// TestPanicIsA500: a bug in the scheduler behind the handler answers 500
// with a JSON error instead of taking the process down.
func TestPanicIsA500(t *testing.T) {
	s := kvscheduler.New(kvscheduler.Options{Logger: discardLogger()})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(rest.NewHandler(panicky{s}, rest.Options{}))
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL + "/scheduler/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 500 || !strings.Contains(body["error"], "internal error: boom") {
		t.Errorf("stats of a panicking scheduler: %d %v (%v)", resp.StatusCode, body, err)
	}
}

type panicky struct{ *kvscheduler.Scheduler }

func (panicky) GetStats() api.SchedulerStats { panic("boom") }

// TestDownstreamResyncClosed: a resync asked of a closed scheduler is
// refused with 503; reading still works.
func TestDownstreamResyncClosed(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	e.s.Close()
	e.wantError("POST", "/scheduler/downstream-resync", http.StatusServiceUnavailable, "downstream resync", "scheduler is closed")
	var h jTxnHistory
	e.getJSON("/scheduler/txn-history", &h)
	if got := seqs(h.Transactions); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("history after Close: %v", got)
	}
}

// key-prefix narrows the graph to the values under it and those they touch.
func TestGraphKeyPrefix(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	const ct = "text/vnd.graphviz; charset=utf-8"
	dot := e.getText("/scheduler/graph?format=dot&key-prefix=route/", ct)
	for key, want := range map[string]bool{"route/r1": true, "iface/a": true, "iface/b": false} {
		if got := dotNodeLine(dot, key) != ""; got != want {
			t.Errorf("graph of route/: node %s shown %v, want %v\n%s", key, got, want, dot)
		}
	}
	if !strings.Contains(dot, `values under \"route/\" and those they touch: 2 of 3`) {
		t.Errorf("graph of route/ does not say what it shows:\n%s", dot)
	}
	// Also as of an older transaction; an unknown parameter is refused.
	if old := e.getText("/scheduler/graph?format=dot&txn=2&key-prefix=iface/", ct); dotNodeLine(old, "route/r1") == "" || dotNodeLine(old, "iface/b") != "" {
		t.Errorf("graph of iface/ as of #2: want route/r1 (it depends on iface/a), not iface/b (not yet there):\n%s", old)
	}
	e.wantError("GET", "/scheduler/graph?key_prefix=route/", 400, "key_prefix")
}

// A transaction verified after apply whose value the SB did not keep lists
// it under verify_failed, with the operation and the reason.
func TestTxnHistoryVerifyFailed(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{Verify: kvscheduler.VerifyReport})
	e.sb.Lose("create", "iface/a")
	seq, err := e.commit(api.TxnOptions{}, kv{"iface/a", mocksb.Str("a")})
	if err == nil {
		t.Fatal("the lost create: no error")
	}
	var h jTxnHistory
	e.getJSON("/scheduler/txn-history?seq-num="+strconv.FormatUint(seq, 10), &h)
	if len(h.Transactions) != 1 {
		t.Fatalf("transaction %d: %+v", seq, h)
	}
	txn := h.Transactions[0]
	if len(txn.VerifyFailed) != 1 || txn.VerifyFailed[0].Key != "iface/a" || txn.VerifyFailed[0].Operation != "CREATE" ||
		!strings.Contains(txn.VerifyFailed[0].Error, "verification after apply") {
		t.Errorf("verify_failed of transaction %d: %+v", seq, txn.VerifyFailed)
	}
}

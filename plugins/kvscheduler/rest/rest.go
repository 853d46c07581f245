// Package rest serves the KV Scheduler's observability API over HTTP, under
// /scheduler/:
//
//	GET  /scheduler/                     index of the endpoints
//	GET  /scheduler/txn-history          ?seq-num= | ?since=&until=, &format=json|text
//	GET  /scheduler/key-timeline         ?key= [&time=] [&format=json|text]
//	GET  /scheduler/graph-snapshot       [?time=]
//	GET  /scheduler/graph                [?txn=] [&key-prefix=] [&format=svg|dot|mermaid|json]
//	GET  /scheduler/dump                 ?descriptor= | ?key-prefix= | ?model= [&view=SB|NB|cached]; no arguments: an index
//	GET  /scheduler/status               [?key= | ?descriptor= | ?key-prefix=]
//	GET  /scheduler/stats
//	POST /scheduler/downstream-resync    [?retry=true|false] [&verbose=true|false]
//
// Answers are JSON unless format=text (a human-readable text) or a graph
// format is asked for. Times are Unix seconds (fractions allowed) or RFC
// 3339. Requests of the original agent's agentctl (User-Agent
// "Ligato-Client/...") to txn-history, dump, status and downstream-resync
// get the original's JSON instead (see OriginalClient and ligato.go). A
// malformed or unknown argument gets 400, something that does not exist
// (a key, a descriptor, a transaction the history does not hold) 404, a
// dump of values whose part of the agent is disabled 409 (Options.Disabled), each
// with a JSON body {"error": "..."} that names the problem; never a 500
// for bad input. An SVG graph needs Graphviz's `dot`; without it
// format=svg gets 501 saying how to install it, and the default format falls
// back to DOT text.
//
// For a person with a browser, package webui serves the same state as HTML
// pages under /ui/ (values filtered and paginated on the server, one value
// with its neighbourhood, the transactions), on the same listener.
package rest

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/graphviz"
	"github.com/netagent-io/netagent/plugins/kvscheduler/txnlog"
)

// Scheduler is what the REST API reads: the scheduler's API plus listings.
type Scheduler interface {
	api.KVScheduler
	ListValueStatuses(prefix string) []*api.BaseValueStatus
	GetRegisteredDescriptors() []string
}

// Options of the handler.
type Options struct {
	// TxnLogMaxItems is passed to txnlog for format=text (0: its default).
	TxnLogMaxItems int
	// GraphTimeout bounds a `dot` run (default 30 s).
	GraphTimeout time.Duration
	// OriginalMessageNames maps netagent's message of a model to the
	// original agent's message of that model (the same fields), for the
	// answers to the original's agentctl (ligato.go). A value of another
	// message is given to that client as google.protobuf.Empty.
	OriginalMessageNames map[protoreflect.FullName]protoreflect.FullName
	// Disabled, when set, tells why the values of a descriptor or under a
	// key prefix cannot be in the agent: the part that would handle them
	// is disabled in its configuration ("VPP is disabled in this agent's
	// configuration ..."); "" when nothing keeps them away. A dump of them
	// (SB or cached view, or by descriptor) is answered 409 with the
	// reason, not with an empty list that reads as "there are none"; the
	// NB view of a key prefix lists the values asked for.
	Disabled func(descriptor, keyPrefix string) string
	// ModelKeyPrefix, when set, resolves the model names of dump?model=
	// (and their aliases) to the models' key prefixes; its error (an
	// unknown or ambiguous name, listing the candidates) is a 400.
	ModelKeyPrefix func(name string) (string, error)
}

// Handler serves /scheduler/*.
type Handler struct {
	s    Scheduler
	opts Options
	mux  *http.ServeMux
}

// NewHandler returns the handler of /scheduler/* for the scheduler.
func NewHandler(s Scheduler, opts Options) *Handler {
	if opts.GraphTimeout <= 0 {
		opts.GraphTimeout = 30 * time.Second
	}
	h := &Handler{s: s, opts: opts, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /scheduler/{$}", h.index)
	// The original agentctl's requests get the original's JSON (ligato.go).
	h.mux.HandleFunc("GET /scheduler/txn-history", either(h.txnHistory, h.ligatoTxnHistory))
	h.mux.HandleFunc("GET /scheduler/key-timeline", h.keyTimeline)
	h.mux.HandleFunc("GET /scheduler/graph-snapshot", h.graphSnapshot)
	h.mux.HandleFunc("GET /scheduler/graph", h.graph)
	h.mux.HandleFunc("GET /scheduler/dump", either(h.dump, h.ligatoDump))
	h.mux.HandleFunc("GET /scheduler/status", either(h.status, h.ligatoStatus))
	h.mux.HandleFunc("GET /scheduler/stats", h.stats)
	h.mux.HandleFunc("POST /scheduler/downstream-resync", either(h.downstreamResync, h.ligatoDownstreamResync))
	// Other methods on known paths, and unknown paths, answer in JSON too.
	for path, method := range map[string]string{
		"/scheduler/txn-history": "GET", "/scheduler/key-timeline": "GET", "/scheduler/graph-snapshot": "GET",
		"/scheduler/graph": "GET", "/scheduler/dump": "GET", "/scheduler/status": "GET", "/scheduler/stats": "GET",
		"/scheduler/downstream-resync": "POST",
	} {
		h.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: method not allowed (use %s)", r.Method, path, method))
		})
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s: no such endpoint (GET /scheduler/ lists them)", r.URL.Path))
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		// A bug must not take the agent down; the client gets a 500.
		if p := recover(); p != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", p))
		}
	}()
	h.mux.ServeHTTP(w, r)
}

// --- arguments ----------------------------------------------------------------

// httpError is an answer other than 200.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

// query checks that the request has only known arguments, each at most
// once and not empty (but key-prefix), and returns them.
func query(r *http.Request, known ...string) (url.Values, error) {
	return checkQuery(r, false, known)
}

// checkQuery is query; allowEmpty lets any argument be empty.
func checkQuery(r *http.Request, allowEmpty bool, known []string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query: %v", err)
	}
	for name, vals := range q {
		if !slices.Contains(known, name) {
			if len(known) == 0 {
				return nil, badRequest("unknown argument %q (this endpoint takes none)", name)
			}
			return nil, badRequest("unknown argument %q (known: %s)", name, strings.Join(known, ", "))
		}
		if len(vals) > 1 {
			return nil, badRequest("argument %q given %d times", name, len(vals))
		}
		if !allowEmpty && vals[0] == "" && name != "key-prefix" {
			return nil, badRequest("argument %q is empty", name)
		}
	}
	return q, nil
}

// ParseTime reads a time argument: Unix seconds (with an optional
// fraction) or RFC 3339. Negative or non-finite values are rejected.
func ParseTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpPnN_") {
		if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > maxUnix {
			return time.Time{}, badRequest("%s=%s: want Unix seconds from 0 to %d (year 9999) or an RFC 3339 time", name, s, int64(maxUnix))
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, badRequest("%s=%q: want Unix seconds or an RFC 3339 time such as 2026-11-21T10:00:00Z", name, s)
	}
	if t.Before(time.Unix(0, 0)) {
		return time.Time{}, badRequest("%s=%s: before 1970", name, s)
	}
	return t, nil
}

// maxUnix is the last second of year 9999, the last time JSON can carry.
const maxUnix = 253402300799

func parseSeq(name, s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 {
		return 0, badRequest("%s=%q: want a transaction sequence number (1, 2, ...)", name, s)
	}
	return v, nil
}

func parseBool(name, s string) (bool, error) {
	switch strings.ToLower(s) {
	case "", "0", "false", "no":
		return false, nil
	case "1", "true", "yes":
		return true, nil
	}
	return false, badRequest("%s=%q: want true or false (1 or 0)", name, s)
}

func parseFormat(s string, allowed ...string) (string, error) {
	if s == "" {
		return allowed[0], nil
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", badRequest("format=%q: want one of %s", s, strings.Join(allowed, ", "))
}

func parseView(s string) (api.View, error) {
	if s == "" {
		return api.CachedView, nil
	}
	v, ok := api.ParseView(s)
	if !ok {
		return 0, badRequest("view=%q: want SB, NB or cached", s)
	}
	return v, nil
}

// --- answers -------------------------------------------------------------------

func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(data, '\n'))
}

func writeText(w http.ResponseWriter, contentType, text string) {
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write([]byte(text))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	data, _ := json.Marshal(map[string]string{"error": msg})
	_, _ = w.Write(append(data, '\n'))
}

// fail answers an error from a handler.
func fail(w http.ResponseWriter, err error) {
	var he *httpError
	switch {
	case errors.As(err, &he):
		writeError(w, he.code, he.msg)
	case errors.Is(err, api.ErrNotInHistory):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, api.ErrUnknownDescriptor):
		writeError(w, http.StatusNotFound, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// value is a proto message as JSON: protojson with proto field names, and
// its type.
type value struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

var protoJSON = protojson.MarshalOptions{UseProtoNames: true}

func jsonValue(m proto.Message) *value {
	if m == nil {
		return nil
	}
	data, err := protoJSON.Marshal(m)
	if err != nil {
		data, _ = json.Marshal(fmt.Sprintf("(cannot encode: %v)", err))
	}
	var compact json.RawMessage = data
	return &value{Type: string(m.ProtoReflect().Descriptor().FullName()), Value: compact}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

type kvJSON struct {
	Key    string `json:"key"`
	Value  *value `json:"value"`
	Origin string `json:"origin,omitempty"`
}

type opJSON struct {
	Operation  string   `json:"operation"`
	Key        string   `json:"key"`
	Descriptor string   `json:"descriptor,omitempty"`
	PrevValue  *value   `json:"prev_value,omitempty"`
	NewValue   *value   `json:"new_value,omitempty"`
	PrevState  string   `json:"prev_state"`
	NewState   string   `json:"new_state"`
	PrevError  string   `json:"prev_error,omitempty"`
	Error      string   `json:"error,omitempty"`
	Flags      []string `json:"flags,omitempty"`
}

type txnJSON struct {
	SeqNum       uint64 `json:"seq_num"`
	Type         string `json:"type"`
	Resync       string `json:"resync,omitempty"`
	Description  string `json:"description,omitempty"`
	WithRevert   bool   `json:"with_revert,omitempty"`
	DryRun       bool   `json:"dry_run,omitempty"`
	RetryAttempt int    `json:"retry_attempt,omitempty"`
	// Revision is the revision of the state after the transaction (a dry
	// run: the one its plan was made against).
	Revision uint64    `json:"revision,omitempty"`
	Start    time.Time `json:"start"`
	Stop     time.Time `json:"stop"`
	Values   []kvJSON  `json:"values,omitempty"`
	Planned  []opJSON  `json:"planned,omitempty"`
	Executed []opJSON  `json:"executed,omitempty"`
	// VerifyFailed are the values verification after apply found not held
	// by the SB as applied (api.RecordedTxn.VerifyFailed).
	VerifyFailed []verifyJSON `json:"verify_failed,omitempty"`
}

type verifyJSON struct {
	Key       string `json:"key"`
	Operation string `json:"operation"`
	Error     string `json:"error"`
}

func opsJSON(ops []*api.RecordedTxnOp) []opJSON {
	out := make([]opJSON, 0, len(ops))
	for _, op := range ops {
		out = append(out, opJSON{Operation: op.Operation.String(), Key: op.Key, Descriptor: op.Descriptor,
			PrevValue: jsonValue(op.PrevValue), NewValue: jsonValue(op.NewValue),
			PrevState: op.PrevState.String(), NewState: op.NewState.String(),
			PrevError: errString(op.PrevErr), Error: errString(op.NewErr), Flags: op.Flags()})
	}
	return out
}

func recordJSON(rec *api.RecordedTxn) txnJSON {
	t := txnJSON{SeqNum: rec.SeqNum, Type: rec.TxnType.String(), Description: rec.Description, Revision: rec.Revision,
		WithRevert: rec.WithRevert, DryRun: rec.DryRun, RetryAttempt: rec.RetryAttempt,
		Start: rec.Start, Stop: rec.Stop, Planned: opsJSON(rec.Planned), Executed: opsJSON(rec.Executed)}
	if rec.ResyncType != api.NotResync {
		t.Resync = rec.ResyncType.String()
	}
	for _, f := range rec.VerifyFailed {
		t.VerifyFailed = append(t.VerifyFailed, verifyJSON{Key: f.Key, Operation: f.Operation.String(), Error: errString(f.Error)})
	}
	for _, v := range rec.Values {
		t.Values = append(t.Values, kvJSON{Key: v.Key, Value: jsonValue(v.Value), Origin: v.Origin.String()})
	}
	return t
}

type historyJSON struct {
	OldestSeq   uint64    `json:"oldest_seq,omitempty"`
	OldestStart time.Time `json:"oldest_start,omitzero"`
	NewestSeq   uint64    `json:"newest_seq,omitempty"`
	Trimmed     uint64    `json:"trimmed"`
	Kept        int       `json:"kept"`
	Bytes       int       `json:"bytes"`
	MaxCount    int       `json:"max_count"`
	MaxBytes    int       `json:"max_bytes"`
	MaxAge      string    `json:"max_age"`
	Note        string    `json:"note"`
}

func historyInfoJSON(h api.HistoryInfo) historyJSON {
	return historyJSON{OldestSeq: h.OldestSeq, OldestStart: h.OldestStart, NewestSeq: h.NewestSeq,
		Trimmed: h.Trimmed, Kept: h.Kept, Bytes: h.Bytes, MaxCount: h.MaxCount, MaxBytes: h.MaxBytes,
		MaxAge: h.MaxAge.String(), Note: h.Starts()}
}

// --- endpoints -----------------------------------------------------------------

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"endpoints": []string{
		"GET /scheduler/txn-history?seq-num=|since=&until=&format=json|text",
		"GET /scheduler/key-timeline?key=&time=&format=json|text",
		"GET /scheduler/graph-snapshot?time=",
		"GET /scheduler/graph?txn=&key-prefix=&format=svg|dot|mermaid|json",
		"GET /scheduler/dump?descriptor=|key-prefix=|model=&view=SB|NB|cached",
		"GET /scheduler/status?key=|descriptor=|key-prefix=",
		"GET /scheduler/stats",
		"POST /scheduler/downstream-resync?retry=&verbose=",
	}})
}

func (h *Handler) txnHistory(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "seq-num", "since", "until", "format")
	if err != nil {
		fail(w, err)
		return
	}
	format, err := parseFormat(q.Get("format"), "json", "text")
	if err != nil {
		fail(w, err)
		return
	}
	var recs []*api.RecordedTxn
	info := h.s.GetHistoryInfo()
	if s := q.Get("seq-num"); s != "" {
		if q.Has("since") || q.Has("until") {
			fail(w, badRequest("seq-num excludes since and until"))
			return
		}
		seq, err := parseSeq("seq-num", s)
		if err != nil {
			fail(w, err)
			return
		}
		rec := h.s.GetRecordedTransaction(seq)
		if rec == nil {
			fail(w, notFound("transaction #%d is not in the history: %s", seq, info.Starts()))
			return
		}
		recs = []*api.RecordedTxn{rec}
	} else {
		since, err := ParseTime("since", q.Get("since"))
		if err != nil {
			fail(w, err)
			return
		}
		until, err := ParseTime("until", q.Get("until"))
		if err != nil {
			fail(w, err)
			return
		}
		if !since.IsZero() && !until.IsZero() && until.Before(since) {
			fail(w, badRequest("until (%s) is before since (%s)", until.Format(time.RFC3339Nano), since.Format(time.RFC3339Nano)))
			return
		}
		recs = h.s.GetTransactionHistory(since, until)
	}
	if format == "text" {
		var b strings.Builder
		fmt.Fprintf(&b, "# %s; %d transactions trimmed by the retention limits\n", info.Starts(), info.Trimmed)
		for _, rec := range recs {
			b.WriteString(txnlog.Format(rec, txnlog.Options{MaxItems: h.opts.TxnLogMaxItems}))
		}
		writeText(w, "text/plain; charset=utf-8", b.String())
		return
	}
	out := struct {
		History      historyJSON `json:"history"`
		Transactions []txnJSON   `json:"transactions"`
	}{History: historyInfoJSON(info), Transactions: make([]txnJSON, 0, len(recs))}
	for _, rec := range recs {
		out.Transactions = append(out.Transactions, recordJSON(rec))
	}
	writeJSON(w, out)
}

type revisionJSON struct {
	TxnSeq       uint64               `json:"txn_seq,omitempty"`
	Since        time.Time            `json:"since,omitzero"`
	Until        time.Time            `json:"until,omitzero"`
	Operation    string               `json:"operation"`
	Value        *value               `json:"value,omitempty"`
	State        string               `json:"state"`
	Error        string               `json:"error,omitempty"`
	Descriptor   string               `json:"descriptor,omitempty"`
	Flags        []string             `json:"flags,omitempty"`
	Dependencies []api.DependencyInfo `json:"dependencies,omitempty"`
}

func (h *Handler) keyTimeline(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "key", "time", "format")
	if err != nil {
		fail(w, err)
		return
	}
	key := q.Get("key")
	if key == "" {
		fail(w, badRequest("key is required"))
		return
	}
	at, err := ParseTime("time", q.Get("time"))
	if err != nil {
		fail(w, err)
		return
	}
	format, err := parseFormat(q.Get("format"), "json", "text")
	if err != nil {
		fail(w, err)
		return
	}
	revs := h.s.GetKeyTimeline(key)
	if len(revs) == 0 {
		fail(w, notFound("key %q: no value and no operation in the history (%s)", key, h.s.GetHistoryInfo().Starts()))
		return
	}
	if !at.IsZero() {
		var kept []api.KeyRevision
		for _, rev := range revs {
			if !rev.Since.After(at) && (rev.Until.IsZero() || rev.Until.After(at)) {
				kept = append(kept, rev)
			}
		}
		if len(kept) == 0 {
			fail(w, notFound("key %q had no value at %s", key, at.Format(time.RFC3339Nano)))
			return
		}
		revs = kept
	}
	out := make([]revisionJSON, 0, len(revs))
	for _, rev := range revs {
		out = append(out, revisionJSON{TxnSeq: rev.TxnSeq, Since: rev.Since, Until: rev.Until,
			Operation: rev.Operation.String(), Value: jsonValue(rev.Value), State: rev.State.String(),
			Error: rev.Error, Descriptor: rev.Descriptor, Flags: rev.Flags, Dependencies: rev.Dependencies})
	}
	if format == "text" {
		var b strings.Builder
		fmt.Fprintf(&b, "timeline of %s\n", key)
		for _, rev := range out {
			since := "(before the history)"
			if !rev.Since.IsZero() {
				since = rev.Since.UTC().Format(time.RFC3339Nano)
			}
			fmt.Fprintf(&b, "- %s  #%d %s -> %s", since, rev.TxnSeq, rev.Operation, rev.State)
			if len(rev.Flags) > 0 {
				fmt.Fprintf(&b, " [%s]", strings.Join(rev.Flags, " "))
			}
			if rev.Value != nil {
				fmt.Fprintf(&b, " value=%s", rev.Value.Value)
			}
			if rev.Error != "" {
				fmt.Fprintf(&b, " error=%q", rev.Error)
			}
			b.WriteString("\n")
		}
		writeText(w, "text/plain; charset=utf-8", b.String())
		return
	}
	writeJSON(w, map[string]any{"key": key, "revisions": out})
}

type nodeJSON struct {
	Key          string               `json:"key"`
	Descriptor   string               `json:"descriptor,omitempty"`
	Value        *value               `json:"value,omitempty"`
	State        string               `json:"state"`
	LastOp       string               `json:"last_op,omitempty"`
	Error        string               `json:"error,omitempty"`
	Base         string               `json:"base,omitempty"`
	Derived      bool                 `json:"derived,omitempty"`
	Obtained     bool                 `json:"obtained,omitempty"`
	Dependencies []api.DependencyInfo `json:"dependencies,omitempty"`
}

func opName(op api.TxnOperation) string {
	if op == api.OpUndefined {
		return ""
	}
	return op.String()
}

func snapshotJSON(s *api.GraphSnapshot) any {
	nodes := make([]nodeJSON, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		nodes = append(nodes, nodeJSON{Key: n.Key, Descriptor: n.Descriptor, Value: jsonValue(n.Value),
			State: n.State.String(), LastOp: opName(n.LastOp), Error: n.Error, Base: n.Base,
			Derived: n.Derived, Obtained: n.Obtained, Dependencies: n.Dependencies})
	}
	out := map[string]any{"txn_seq": s.TxnSeq, "time": s.Time, "current": s.Current, "nodes": nodes}
	if len(s.Changed) > 0 {
		out["changed"] = s.Changed
	}
	if s.Note != "" {
		out["note"] = s.Note
	}
	return out
}

func (h *Handler) graphSnapshot(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "time")
	if err != nil {
		fail(w, err)
		return
	}
	at, err := ParseTime("time", q.Get("time"))
	if err != nil {
		fail(w, err)
		return
	}
	snap, err := h.s.GetGraphSnapshot(at)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, snapshotJSON(snap))
}

func (h *Handler) graph(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "txn", "format", "key-prefix")
	if err != nil {
		fail(w, err)
		return
	}
	format := q.Get("format")
	if format != "" {
		if format, err = parseFormat(format, "svg", "dot", "mermaid", "json"); err != nil {
			fail(w, err)
			return
		}
	}
	var snap *api.GraphSnapshot
	if s := q.Get("txn"); s != "" {
		seq, err := parseSeq("txn", s)
		if err != nil {
			fail(w, err)
			return
		}
		snap, err = h.s.GetGraphAsOf(seq)
		if err != nil {
			fail(w, err)
			return
		}
	} else if snap, err = h.s.GetGraphSnapshot(time.Time{}); err != nil {
		fail(w, err)
		return
	}
	snap = graphviz.Focus(snap, q.Get("key-prefix"))
	switch format {
	case "json":
		writeJSON(w, snapshotJSON(snap))
		return
	case "mermaid":
		var b strings.Builder
		if err := graphviz.Mermaid(&b, snap); err != nil {
			fail(w, err)
			return
		}
		writeText(w, "text/plain; charset=utf-8", b.String())
		return
	case "", "svg":
		ctx, cancel := context.WithTimeout(r.Context(), h.opts.GraphTimeout)
		defer cancel()
		svg, err := graphviz.SVG(ctx, snap)
		switch {
		case err == nil:
			writeText(w, "image/svg+xml", string(svg))
			return
		case errors.Is(err, graphviz.ErrNoDot) && format == "svg":
			writeError(w, http.StatusNotImplemented, err.Error())
			return
		case !errors.Is(err, graphviz.ErrNoDot):
			writeError(w, http.StatusInternalServerError, "rendering the graph: "+err.Error())
			return
		}
		// No dot and no format asked for: DOT text.
		w.Header().Set("X-Graph-Format", "dot (install Graphviz for SVG)")
	}
	var b strings.Builder
	if err := graphviz.DOT(&b, snap); err != nil {
		fail(w, err)
		return
	}
	writeText(w, "text/vnd.graphviz; charset=utf-8", b.String())
}

type dumpJSON struct {
	Key      string `json:"key"`
	Value    *value `json:"value"`
	Origin   string `json:"origin,omitempty"`
	Metadata any    `json:"metadata,omitempty"`
}

// metadataJSON is metadata as the values are shown: the proto messages in
// it as protojson with proto field names, enums by name, the fields of Go
// structs in snake_case (or as their json tag names them; "-" leaves one
// out), lists and maps likewise. encoding/json would show Go field names,
// oneof wrappers and enum numbers. Metadata that does not encode is text.
func metadataJSON(md any) any {
	if md == nil {
		return nil
	}
	out, err := metadataValue(reflect.ValueOf(md), 0)
	if err != nil {
		return fmt.Sprintf("%+v", md)
	}
	if _, err := json.Marshal(out); err != nil {
		return fmt.Sprintf("%+v", md)
	}
	return out
}

var (
	protoMessageType  = reflect.TypeFor[proto.Message]()
	protoEnumType     = reflect.TypeFor[protoreflect.Enum]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// metadataDepth bounds the nesting metadataValue follows (a cycle of
// pointers).
const metadataDepth = 32

// metadataValue is v for metadataJSON.
func metadataValue(v reflect.Value, depth int) (any, error) {
	if depth > metadataDepth {
		return nil, errors.New("metadata nested too deep")
	}
	if !v.IsValid() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface || v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
		return nil, nil
	}
	t := v.Type()
	switch {
	case t.Implements(protoMessageType):
		data, err := protoJSON.Marshal(v.Interface().(proto.Message))
		return json.RawMessage(data), err
	case t.Implements(protoEnumType):
		e := v.Interface().(protoreflect.Enum)
		if ev := e.Descriptor().Values().ByNumber(e.Number()); ev != nil {
			return string(ev.Name()), nil
		}
		return int32(e.Number()), nil
	case t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType):
		return v.Interface(), nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return metadataValue(v.Elem(), depth+1)
	case reflect.Struct:
		out := map[string]any{}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := snakeCase(f.Name)
			if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == "-" {
				continue
			} else if tag != "" {
				name = tag
			}
			fv, err := metadataValue(v.Field(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[name] = fv
		}
		return out, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return v.Interface(), nil // bytes: base64, as encoding/json
		}
		out := make([]any, v.Len())
		for i := range v.Len() {
			ev, err := metadataValue(v.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case reflect.Map:
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			ev, err := metadataValue(it.Value(), depth+1)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(it.Key().Interface())] = ev
		}
		return out, nil
	}
	return v.Interface(), nil
}

// snakeCase is a Go field name in snake_case: SwIfIndex sw_if_index,
// HostName host_name, BdID bd_id (a run of capitals is one word).
func snakeCase(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (!unicode.IsUpper(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

func (h *Handler) dump(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "descriptor", "key-prefix", "model", "view")
	if err != nil {
		fail(w, err)
		return
	}
	view, err := parseView(q.Get("view"))
	if err != nil {
		fail(w, err)
		return
	}
	if q.Has("model") {
		if q.Has("descriptor") || q.Has("key-prefix") {
			fail(w, badRequest("give model, descriptor or key-prefix, one of them"))
			return
		}
		if h.opts.ModelKeyPrefix == nil {
			fail(w, badRequest("model: this agent has no model names (give key-prefix)"))
			return
		}
		prefix, err := h.opts.ModelKeyPrefix(q.Get("model"))
		if err != nil {
			fail(w, badRequest("model: %v", err))
			return
		}
		q.Del("model")
		q.Set("key-prefix", prefix)
	}
	descriptor, prefix := q.Get("descriptor"), q.Get("key-prefix")
	if err := h.dumpDisabled(descriptor, prefix, view); err != nil {
		fail(w, err)
		return
	}
	var kvs []api.KVWithMetadata
	switch {
	case q.Has("descriptor") && q.Has("key-prefix"):
		fail(w, badRequest("give descriptor or key-prefix, not both"))
		return
	case descriptor != "":
		kvs, err = h.dumpDescriptor(descriptor, view)
	case q.Has("key-prefix"):
		kvs, err = h.s.DumpValuesByKeyPrefix(prefix, view)
	case q.Has("descriptor"):
		fail(w, badRequest("descriptor is empty"))
		return
	case q.Has("view"):
		fail(w, badRequest("view needs descriptor, key-prefix or model"))
		return
	default:
		writeJSON(w, map[string]any{
			"descriptors":     h.s.GetRegisteredDescriptors(),
			"nb_key_prefixes": h.s.GetRegisteredNBKeyPrefixes(),
			"views":           []string{"SB", "NB", "cached"},
			"usage":           "GET /scheduler/dump?descriptor=<name>|key-prefix=<prefix>|model=<name>&view=SB|NB|cached",
		})
		return
	}
	if err != nil && !errors.Is(err, api.ErrUnknownDescriptor) && view == api.SBView {
		// The SB did not answer (all of it): 502, with what it did give.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
	} else if err != nil {
		fail(w, err)
		return
	}
	out := struct {
		View   string     `json:"view"`
		Values []dumpJSON `json:"values"`
		Error  string     `json:"error,omitempty"`
	}{View: view.String(), Values: make([]dumpJSON, 0, len(kvs)), Error: errString(err)}
	for _, kv := range kvs {
		out.Values = append(out.Values, dumpJSON{Key: kv.Key, Value: jsonValue(kv.Value), Origin: kv.Origin.String(), Metadata: metadataJSON(kv.Metadata)})
	}
	writeJSON(w, out)
}

// dumpDisabled is the 409 of a dump of a descriptor or key prefix whose
// part of the agent is disabled (Options.Disabled), nil otherwise. The NB
// view of a key prefix is answered all the same: the values asked for
// (UNIMPLEMENTED without their descriptors) are there.
func (h *Handler) dumpDisabled(descriptor, keyPrefix string, view api.View) error {
	if h.opts.Disabled == nil || (descriptor == "" && keyPrefix == "") || (descriptor == "" && view == api.NBView) {
		return nil
	}
	if reason := h.opts.Disabled(descriptor, keyPrefix); reason != "" {
		return &httpError{http.StatusConflict, reason}
	}
	return nil
}

// dumpDescriptor dumps a descriptor's values; the error of an unknown
// descriptor (a 404) names the registered ones.
func (h *Handler) dumpDescriptor(descriptor string, view api.View) ([]api.KVWithMetadata, error) {
	kvs, err := h.s.DumpValuesByDescriptor(descriptor, view)
	if errors.Is(err, api.ErrUnknownDescriptor) {
		return nil, fmt.Errorf("%w (registered: %s)", err, strings.Join(h.s.GetRegisteredDescriptors(), ", "))
	}
	return kvs, err
}

var statusJSON = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: false}

func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "key", "descriptor", "key-prefix")
	if err != nil {
		fail(w, err)
		return
	}
	if len(q) > 1 {
		fail(w, badRequest("give one of key, descriptor, key-prefix"))
		return
	}
	var list []*api.BaseValueStatus
	switch {
	case q.Has("key"):
		key := q.Get("key")
		st := h.s.GetValueStatus(key)
		if key == "" || st == nil || st.GetValue().GetState() == api.ValueStateNonexistent {
			fail(w, notFound("key %q: no such value", key))
			return
		}
		list = []*api.BaseValueStatus{st}
	case q.Has("descriptor"):
		name := q.Get("descriptor")
		known := false
		for _, d := range h.s.GetRegisteredDescriptors() {
			known = known || d == name
		}
		if !known {
			fail(w, notFound("%v %q (registered: %s)", api.ErrUnknownDescriptor, name, strings.Join(h.s.GetRegisteredDescriptors(), ", ")))
			return
		}
		for _, st := range h.s.ListValueStatuses("") {
			if st.GetValue().GetDescriptorName() == name {
				list = append(list, st)
			}
		}
	default:
		list = h.s.ListValueStatuses(q.Get("key-prefix"))
	}
	out := make([]json.RawMessage, 0, len(list))
	for _, st := range list {
		data, err := statusJSON.Marshal(st)
		if err != nil {
			fail(w, err)
			return
		}
		out = append(out, data)
	}
	writeJSON(w, map[string]any{"statuses": out})
}

func (h *Handler) stats(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		fail(w, err)
		return
	}
	st := h.s.GetStats()
	descs := make([]string, 0, len(st.ValuesByDescriptor))
	for d := range st.ValuesByDescriptor {
		descs = append(descs, d)
	}
	sort.Strings(descs)
	writeJSON(w, map[string]any{
		"values_by_state":      st.ValuesByState,
		"values_by_descriptor": st.ValuesByDescriptor,
		"queue_length":         st.QueueLength,
		"revision":             st.Revision,
		"transactions":         st.Transactions,
		"history":              historyInfoJSON(st.History),
	})
}

func (h *Handler) downstreamResync(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "retry", "verbose")
	if err != nil {
		fail(w, err)
		return
	}
	rec, txnErr, err := h.resync(r, q)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"transaction": recordJSON(rec), "error": errString(txnErr)})
}

// resync runs a downstream resync with the retry and verbose of q and
// returns its record and its error (failed values). err, when the
// resync could not be asked for or run, is an httpError: a bad flag or
// options the scheduler refuses are the request's fault (400, the text
// names the field); anything else that kept the transaction from being
// queued is the scheduler's state (closed, queue full: 503); a record no
// longer kept is 404.
func (h *Handler) resync(r *http.Request, q url.Values) (rec *api.RecordedTxn, txnErr, err error) {
	retry, err := parseBool("retry", q.Get("retry"))
	if err != nil {
		return nil, nil, err
	}
	verbose, err := parseBool("verbose", q.Get("verbose"))
	if err != nil {
		return nil, nil, err
	}
	opts := api.TxnOptions{Resync: api.DownstreamResync, Verbose: verbose, Description: "downstream resync requested over REST"}
	if retry {
		opts.Retry = api.DefaultRetry()
	}
	seq, txnErr := h.s.StartNBTransaction().Commit(r.Context(), opts)
	if seq == 0 && txnErr != nil {
		var optErr *api.OptionError
		if errors.As(txnErr, &optErr) {
			return nil, nil, &httpError{http.StatusBadRequest, "downstream resync: " + optErr.Error()}
		}
		return nil, nil, &httpError{http.StatusServiceUnavailable, "downstream resync: " + txnErr.Error()}
	}
	if rec = h.s.GetRecordedTransaction(seq); rec == nil {
		return nil, nil, notFound("transaction #%d is no longer in the history", seq)
	}
	return rec, txnErr, nil
}

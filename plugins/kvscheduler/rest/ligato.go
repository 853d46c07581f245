package rest

// The original agent's answers (Ligato vpp-agent v3), for its agentctl.
//
// The original agentctl calls four of these endpoints and decodes the
// answers into its own Go types with encoding/json:
//
//	values          GET  /scheduler/status?key=&key-prefix=<model prefix>   []BaseValueStatus (an object when key is set)
//	dump            GET  /scheduler/dump?key-prefix=<model prefix>&view=V    []RecordedKVWithMetadata
//	config history  GET  /scheduler/txn-history[?seq-num=N]                 []RecordedTxn (an object with seq-num)
//	config resync   POST /scheduler/downstream-resync[?retry=1][&verbose=1] RecordedTxn
//
// Its requests carry the User-Agent "Ligato-Client/<version> (<os>)"; such
// a request gets the original's JSON (OriginalClient), any other netagent's.
// The original's shapes, by its Go field names:
//
//   - a value: {"ProtoMsgName": "<full message name>", "ProtoMsgData": <protojson>}.
//     The original's client looks the name up among its compiled-in
//     messages and fails the whole answer when it does not know it, so a
//     netagent message is named after the original's message of the same
//     model (Options.OriginalMessageNames, same fields), google.protobuf.Empty
//     stays, and any other message (a netagent-only derived value, an
//     undecodable NB value) is given as google.protobuf.Empty with {}.
//   - a status: BaseValueStatus as protojson with proto field names
//     ("value", "derived_values", "last_operation"; enums by name).
//   - a transaction: Start, Stop (RFC 3339), SeqNum, TxnType
//     ("NBTransaction", "SBNotification", "RetryFailedOps"; netagent's
//     other kinds by their own names, which the original shows as unknown),
//     ResyncType ("FullResync", "UpstreamResync", "DownstreamResync";
//     omitted when not a resync), Description, RetryAttempt, WithSimulation,
//     Values [{Key, Value, Origin}], Planned and Executed [{Operation,
//     Key, NewState, NewValue, NewErrMsg, PrevState, PrevValue, PrevErrMsg,
//     NOOP, IsDerived, IsProperty, IsRevert, IsRetry, IsRecreate}]; Origin
//     is a number (0 unknown, 1 NB, 2 SB), states and operations are names.
//   - an error: {"message": "...", "error": "..."} (its client prints
//     "message").

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// OriginalUserAgent is how the original agentctl's requests begin their
// User-Agent header.
const OriginalUserAgent = "Ligato-Client/"

// OriginalClient tells whether the request comes from the original's
// agentctl, which gets the original's JSON.
func OriginalClient(r *http.Request) bool {
	return strings.HasPrefix(r.UserAgent(), OriginalUserAgent)
}

// either serves the original's client with ligato and everyone else with
// ours.
func either(ours, ligato http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if OriginalClient(r) {
			ligato(w, r)
			return
		}
		ours(w, r)
	}
}

// ligatoFail answers an error as fail does, with the body the original's
// client reads ("message") beside ours ("error").
func ligatoFail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	switch {
	case errors.As(err, &he):
		code = he.code
	case errors.Is(err, api.ErrNotInHistory), errors.Is(err, api.ErrUnknownDescriptor):
		code = http.StatusNotFound
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	data, _ := json.Marshal(map[string]string{"message": err.Error(), "error": err.Error()})
	_, _ = w.Write(append(data, '\n'))
}

// ligatoQuery checks that the request has only known arguments, each at
// most once; unlike query, empty ones are allowed (the original's client
// sends "key=" and "key-prefix=" when it has none).
func ligatoQuery(r *http.Request, known ...string) (url.Values, error) {
	return checkQuery(r, true, known)
}

type ligatoValue struct {
	ProtoMsgName string
	ProtoMsgData json.RawMessage
}

var emptyName = (&emptypb.Empty{}).ProtoReflect().Descriptor().FullName()

// ligatoValue is m as the original's RecordedProtoMessage (nil for nil).
func (h *Handler) ligatoValue(m proto.Message) *ligatoValue {
	if m == nil {
		return nil
	}
	name := m.ProtoReflect().Descriptor().FullName()
	if orig, ok := h.opts.OriginalMessageNames[name]; ok {
		if data, err := protojson.Marshal(m); err == nil {
			return &ligatoValue{ProtoMsgName: string(orig), ProtoMsgData: data}
		}
	}
	// A message the original does not have: its client could not decode it.
	return &ligatoValue{ProtoMsgName: string(emptyName), ProtoMsgData: json.RawMessage("{}")}
}

type ligatoKV struct {
	Key    string
	Value  *ligatoValue
	Origin api.ValueOrigin // 0 unknown, 1 NB, 2 SB: the original's numbers
}

type ligatoKVWithMetadata struct {
	ligatoKV
	Metadata any
}

type ligatoOp struct {
	Operation  string
	Key        string
	NewState   string       `json:",omitempty"`
	NewValue   *ligatoValue `json:",omitempty"`
	NewErrMsg  string       `json:",omitempty"`
	PrevState  string       `json:",omitempty"`
	PrevValue  *ligatoValue `json:",omitempty"`
	PrevErrMsg string       `json:",omitempty"`
	NOOP       bool         `json:",omitempty"`
	IsDerived  bool         `json:",omitempty"`
	IsProperty bool         `json:",omitempty"`
	IsRevert   bool         `json:",omitempty"`
	IsRetry    bool         `json:",omitempty"`
	IsRecreate bool         `json:",omitempty"`
}

type ligatoTxn struct {
	WithSimulation bool `json:",omitempty"`
	Start          time.Time
	Stop           time.Time
	SeqNum         uint64
	TxnType        string
	ResyncType     string     `json:",omitempty"`
	Description    string     `json:",omitempty"`
	RetryAttempt   int        `json:",omitempty"`
	Values         []ligatoKV `json:",omitempty"`
	Planned        []ligatoOp `json:",omitempty"`
	Executed       []ligatoOp `json:",omitempty"`
}

// ligatoTxnType is the original's name of a transaction type; netagent's
// own kinds keep a name of their own.
func ligatoTxnType(t api.TxnType) string {
	switch t {
	case api.NBTransaction:
		return "NBTransaction"
	case api.SBNotification:
		return "SBNotification"
	case api.RetryFailedOps:
		return "RetryFailedOps"
	case api.RetryUnimplemented:
		return "RetryUnimplemented"
	case api.FollowUp:
		return "FollowUp"
	case api.DriftRepair:
		return "DriftRepair"
	}
	return "UndefinedTxnType"
}

func ligatoResyncType(t api.ResyncType) string {
	switch t {
	case api.FullResync:
		return "FullResync"
	case api.UpstreamResync:
		return "UpstreamResync"
	case api.DownstreamResync:
		return "DownstreamResync"
	}
	return ""
}

// ligatoState is a state's name, "" for NONEXISTENT (the original leaves
// its zero value out).
func ligatoState(s api.ValueState) string {
	if s == api.ValueStateNonexistent {
		return ""
	}
	return s.String()
}

func (h *Handler) ligatoOps(ops []*api.RecordedTxnOp) []ligatoOp {
	out := make([]ligatoOp, 0, len(ops))
	for _, op := range ops {
		out = append(out, ligatoOp{Operation: op.Operation.String(), Key: op.Key,
			NewState: ligatoState(op.NewState), NewValue: h.ligatoValue(op.NewValue), NewErrMsg: errString(op.NewErr),
			PrevState: ligatoState(op.PrevState), PrevValue: h.ligatoValue(op.PrevValue), PrevErrMsg: errString(op.PrevErr),
			NOOP: op.NOOP, IsDerived: op.Derived, IsProperty: op.Property, IsRevert: op.IsRevert,
			IsRetry: op.IsRetry, IsRecreate: op.IsRecreate})
	}
	return out
}

func (h *Handler) ligatoTxn(rec *api.RecordedTxn) ligatoTxn {
	t := ligatoTxn{WithSimulation: len(rec.Planned) > 0, Start: rec.Start, Stop: rec.Stop, SeqNum: rec.SeqNum,
		TxnType: ligatoTxnType(rec.TxnType), ResyncType: ligatoResyncType(rec.ResyncType),
		Description: rec.Description, RetryAttempt: rec.RetryAttempt}
	for _, v := range rec.Values {
		t.Values = append(t.Values, ligatoKV{Key: v.Key, Value: h.ligatoValue(v.Value), Origin: v.Origin})
	}
	if len(rec.Planned) > 0 {
		t.Planned = h.ligatoOps(rec.Planned)
	}
	if len(rec.Executed) > 0 {
		t.Executed = h.ligatoOps(rec.Executed)
	}
	return t
}

// ligatoTxnHistory: ?seq-num=N answers one transaction (an object), else
// the transactions from since to until (an array); format=text as ours.
func (h *Handler) ligatoTxnHistory(w http.ResponseWriter, r *http.Request) {
	q, err := ligatoQuery(r, "seq-num", "since", "until", "format")
	if err != nil {
		ligatoFail(w, err)
		return
	}
	if q.Get("format") == "text" {
		h.txnHistory(w, r)
		return
	}
	if f := q.Get("format"); f != "" && f != "json" {
		ligatoFail(w, badRequest("format=%q: want json or text", f))
		return
	}
	if s := q.Get("seq-num"); s != "" {
		seq, err := parseSeq("seq-num", s)
		if err != nil {
			ligatoFail(w, err)
			return
		}
		rec := h.s.GetRecordedTransaction(seq)
		if rec == nil {
			ligatoFail(w, notFound("transaction #%d is not in the history: %s", seq, h.s.GetHistoryInfo().Starts()))
			return
		}
		writeJSON(w, h.ligatoTxn(rec))
		return
	}
	since, err := ParseTime("since", q.Get("since"))
	if err != nil {
		ligatoFail(w, err)
		return
	}
	until, err := ParseTime("until", q.Get("until"))
	if err != nil {
		ligatoFail(w, err)
		return
	}
	out := []ligatoTxn{}
	for _, rec := range h.s.GetTransactionHistory(since, until) {
		out = append(out, h.ligatoTxn(rec))
	}
	writeJSON(w, out)
}

// ligatoStatus: ?key=K answers K's BaseValueStatus (an object), else the
// statuses under key-prefix or of descriptor (an array).
func (h *Handler) ligatoStatus(w http.ResponseWriter, r *http.Request) {
	q, err := ligatoQuery(r, "key", "key-prefix", "descriptor")
	if err != nil {
		ligatoFail(w, err)
		return
	}
	key, prefix, descriptor := q.Get("key"), q.Get("key-prefix"), q.Get("descriptor")
	if (key != "" && (prefix != "" || descriptor != "")) || (prefix != "" && descriptor != "") {
		ligatoFail(w, badRequest("give one of key, key-prefix, descriptor"))
		return
	}
	if key != "" {
		st := h.s.GetValueStatus(key)
		if st == nil || st.GetValue().GetState() == api.ValueStateNonexistent {
			ligatoFail(w, notFound("key %q: no such value", key))
			return
		}
		writeProtoJSON(w, st)
		return
	}
	list := h.s.ListValueStatuses(prefix)
	if descriptor != "" {
		var kept []*api.BaseValueStatus
		for _, st := range list {
			if st.GetValue().GetDescriptorName() == descriptor {
				kept = append(kept, st)
			}
		}
		list = kept
	}
	out := make([]json.RawMessage, 0, len(list))
	for _, st := range list {
		data, err := statusJSON.Marshal(st)
		if err != nil {
			ligatoFail(w, err)
			return
		}
		out = append(out, data)
	}
	writeJSON(w, out)
}

func writeProtoJSON(w http.ResponseWriter, m proto.Message) {
	data, err := statusJSON.Marshal(m)
	if err != nil {
		ligatoFail(w, err)
		return
	}
	writeJSON(w, json.RawMessage(data))
}

// ligatoDump: the values under key-prefix (or of descriptor) in view
// (cached by default), an array; without either, the index under the
// original's names.
func (h *Handler) ligatoDump(w http.ResponseWriter, r *http.Request) {
	q, err := ligatoQuery(r, "key-prefix", "descriptor", "view")
	if err != nil {
		ligatoFail(w, err)
		return
	}
	view, err := parseView(q.Get("view"))
	if err != nil {
		ligatoFail(w, err)
		return
	}
	if err := h.dumpDisabled(q.Get("descriptor"), q.Get("key-prefix"), view); err != nil {
		ligatoFail(w, err)
		return
	}
	var kvs []api.KVWithMetadata
	switch {
	case q.Has("descriptor") && q.Has("key-prefix"):
		ligatoFail(w, badRequest("give descriptor or key-prefix, not both"))
		return
	case q.Get("descriptor") != "":
		kvs, err = h.dumpDescriptor(q.Get("descriptor"), view)
	case q.Has("key-prefix"):
		kvs, err = h.s.DumpValuesByKeyPrefix(q.Get("key-prefix"), view)
	default:
		writeJSON(w, map[string]any{
			"Descriptors": h.s.GetRegisteredDescriptors(),
			"KeyPrefixes": h.s.GetRegisteredNBKeyPrefixes(),
			"Views":       []string{"SB", "NB", "cached"},
		})
		return
	}
	if err != nil {
		if !errors.Is(err, api.ErrUnknownDescriptor) && view == api.SBView {
			err = &httpError{http.StatusBadGateway, fmt.Sprintf("the southbound did not answer: %v", err)}
		}
		ligatoFail(w, err)
		return
	}
	out := make([]ligatoKVWithMetadata, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, ligatoKVWithMetadata{ligatoKV: ligatoKV{Key: kv.Key, Value: h.ligatoValue(kv.Value), Origin: kv.Origin},
			Metadata: ligatoMetadata(kv.Metadata)})
	}
	writeJSON(w, out)
}

// ligatoMetadata is metadata as the original gives it: encoding/json of
// the Go value (Go field names, enum numbers), else text.
func ligatoMetadata(md any) any {
	if md == nil {
		return nil
	}
	if _, err := json.Marshal(md); err == nil {
		return md
	}
	return fmt.Sprintf("%+v", md)
}

// ligatoDownstreamResync runs a downstream resync as ours does and answers
// its record.
func (h *Handler) ligatoDownstreamResync(w http.ResponseWriter, r *http.Request) {
	q, err := ligatoQuery(r, "retry", "verbose")
	if err != nil {
		ligatoFail(w, err)
		return
	}
	rec, _, err := h.resync(r, q)
	if err != nil {
		ligatoFail(w, err)
		return
	}
	// Values that failed are in the record (NewErrMsg), as the original's
	// client shows them.
	writeJSON(w, h.ligatoTxn(rec))
}

package rest_test

// The original agent's agentctl (Ligato vpp-agent v3) against this API, over
// real HTTP: each request is made as its client makes it (path, query as
// url.Values.Encode gives it, method, User-Agent "Ligato-Client/...", an
// empty text/plain body for POST), and the answer is decoded as it decodes
// it: encoding/json into types shaped like its own (the o* types below,
// with its field names, its enums' and transaction types' UnmarshalJSON,
// and its value wrapper that resolves ProtoMsgName among the messages it
// knows and fails the whole answer on a name it does not).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/rest"
)

// originalText is the name the test gives the "original's" message of the
// mock values (google.protobuf.StringValue, the same fields).
const originalText = "test.original.Text"

// originalMessages are the messages the original's client knows, by name.
var originalMessages = map[string]func() proto.Message{
	originalText:            func() proto.Message { return &wrapperspb.StringValue{} },
	"google.protobuf.Empty": func() proto.Message { return &emptypb.Empty{} },
}

// oValue is the original's RecordedProtoMessage.
type oValue struct {
	Name string
	Msg  proto.Message
}

func (v *oValue) UnmarshalJSON(b []byte) error {
	var pwn struct {
		ProtoMsgName string
		ProtoMsgData json.RawMessage
	}
	if err := json.Unmarshal(b, &pwn); err != nil {
		return err
	}
	v.Name = pwn.ProtoMsgName
	if v.Name == "" {
		return nil
	}
	newMsg, ok := originalMessages[v.Name]
	if !ok {
		return fmt.Errorf("proto: not found: %s", v.Name)
	}
	v.Msg = newMsg()
	return protojson.Unmarshal(pwn.ProtoMsgData, v.Msg)
}

// oEnum decodes the original's enums: a name among names, or a number.
func oEnum(b []byte, names []string) (int, error) {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, err
		}
		for i, n := range names {
			if n == s {
				return i, nil
			}
		}
		return -1, nil
	}
	var n int
	err := json.Unmarshal(b, &n)
	return n, err
}

var (
	oStates    = []string{"NONEXISTENT", "MISSING", "UNIMPLEMENTED", "REMOVED", "CONFIGURED", "OBTAINED", "DISCOVERED", "PENDING", "INVALID", "FAILED", "RETRYING"}
	oOps       = []string{"UNDEFINED", "VALIDATE", "CREATE", "UPDATE", "DELETE"}
	oTxnTypes  = []string{"SBNotification", "NBTransaction", "RetryFailedOps"}
	oResyncs   = []string{"NotResync", "FullResync", "UpstreamResync", "DownstreamResync"}
	oNBTxn     = 1 // the original's NBTransaction
	oDownsync  = 3 // the original's DownstreamResync
	oFromNB    = 1
	oCreate    = 2
	oConfigure = 4
	oPending   = 7
)

type oState int

func (s *oState) UnmarshalJSON(b []byte) error {
	n, err := oEnum(b, oStates)
	*s = oState(n)
	return err
}

type oOp int

func (o *oOp) UnmarshalJSON(b []byte) error {
	n, err := oEnum(b, oOps)
	*o = oOp(n)
	return err
}

type oTxnType int

func (t *oTxnType) UnmarshalJSON(b []byte) error {
	n, err := oEnum(b, oTxnTypes)
	*t = oTxnType(n)
	return err
}

type oResync int

func (t *oResync) UnmarshalJSON(b []byte) error {
	n, err := oEnum(b, oResyncs)
	*t = oResync(n)
	return err
}

// oValueStatus and oBaseValueStatus: proto/ligato/kvscheduler's generated
// structs (their json tags).
type oValueStatus struct {
	Key           string   `json:"key,omitempty"`
	State         oState   `json:"state,omitempty"`
	Error         string   `json:"error,omitempty"`
	LastOperation oOp      `json:"last_operation,omitempty"`
	Details       []string `json:"details,omitempty"`
}

type oBaseValueStatus struct {
	Value         *oValueStatus   `json:"value,omitempty"`
	DerivedValues []*oValueStatus `json:"derived_values,omitempty"`
}

type oKVPair struct {
	Key    string
	Value  *oValue
	Origin int
}

type oKVWithMetadata struct {
	oKVPair
	Metadata any
}

type oTxnOp struct {
	Operation  oOp
	Key        string
	NewState   oState  `json:",omitempty"`
	NewValue   *oValue `json:",omitempty"`
	NewErrMsg  string  `json:",omitempty"`
	PrevState  oState  `json:",omitempty"`
	PrevValue  *oValue `json:",omitempty"`
	PrevErrMsg string  `json:",omitempty"`
	NOOP       bool    `json:",omitempty"`
	IsDerived  bool    `json:",omitempty"`
	IsProperty bool    `json:",omitempty"`
	IsRevert   bool    `json:",omitempty"`
	IsRetry    bool    `json:",omitempty"`
	IsRecreate bool    `json:",omitempty"`
}

type oTxn struct {
	PreRecord      bool `json:",omitempty"`
	WithSimulation bool `json:",omitempty"`
	Start          time.Time
	Stop           time.Time
	SeqNum         uint64
	TxnType        oTxnType
	ResyncType     oResync   `json:",omitempty"`
	Description    string    `json:",omitempty"`
	RetryForTxn    uint64    `json:",omitempty"`
	RetryAttempt   int       `json:",omitempty"`
	Values         []oKVPair `json:",omitempty"`
	Planned        []*oTxnOp `json:",omitempty"`
	Executed       []*oTxnOp `json:",omitempty"`
}

// original is the original's client against one handler.
type original struct {
	t   *testing.T
	srv *httptest.Server
}

func newOriginal(t *testing.T, e *env, opts rest.Options) *original {
	srv := httptest.NewServer(rest.NewHandler(e.s, opts))
	t.Cleanup(srv.Close)
	return &original{t: t, srv: srv}
}

var withOriginalNames = rest.Options{OriginalMessageNames: map[protoreflect.FullName]protoreflect.FullName{
	(&wrapperspb.StringValue{}).ProtoReflect().Descriptor().FullName(): originalText,
}}

// call sends the request as the original's client does and returns the
// status code and body.
func (o *original) call(method, path string, query url.Values) (int, []byte) {
	o.t.Helper()
	var body io.Reader
	if method == "POST" {
		body = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, o.srv.URL+(&url.URL{Path: path, RawQuery: query.Encode()}).String(), body)
	if err != nil {
		o.t.Fatal(err)
	}
	req.Header.Set("User-Agent", "Ligato-Client/1.0 (linux)")
	if method == "POST" {
		req.Header.Set("Content-Type", "text/plain")
	}
	resp, err := o.srv.Client().Do(req)
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		o.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// decode calls and decodes a 200 answer into v as the original's client
// does (encoding/json, unknown fields ignored).
func (o *original) decode(method, path string, query url.Values, v any) {
	o.t.Helper()
	code, data := o.call(method, path, query)
	if code != http.StatusOK {
		o.t.Fatalf("%s %s?%s: %d %s", method, path, query.Encode(), code, data)
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		o.t.Fatalf("%s %s?%s: decoding reply failed: %v\n%s", method, path, query.Encode(), err, data)
	}
}

func text(t *testing.T, v *oValue) string {
	t.Helper()
	if v == nil || v.Name != originalText {
		t.Fatalf("value %+v, want a %s", v, originalText)
	}
	return v.Msg.(*wrapperspb.StringValue).GetValue()
}

// TestOriginalValues: `agentctl values [MODEL]` (SchedulerValues):
// GET /scheduler/status?key=&key-prefix=<prefix>, an array; with a key, an
// object.
func TestOriginalValues(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	o := newOriginal(t, e, withOriginalNames)

	var list []*oBaseValueStatus
	o.decode("GET", "/scheduler/status", url.Values{"key-prefix": {"iface/"}, "key": {""}}, &list)
	if len(list) != 2 {
		t.Fatalf("%d statuses, want iface/a and iface/b: %+v", len(list), list)
	}
	for i, key := range []string{"iface/a", "iface/b"} {
		v := list[i].Value
		if v == nil || v.Key != key || v.State != oState(oConfigure) || v.LastOperation != oOp(oCreate) {
			t.Errorf("status %d: %+v, want %s CONFIGURED after CREATE", i, v, key)
		}
	}

	// Every value (the original's `values` without a model).
	list = nil
	o.decode("GET", "/scheduler/status", url.Values{"key-prefix": {""}, "key": {""}}, &list)
	if len(list) != 3 {
		t.Errorf("%d statuses, want 3", len(list))
	}

	var one oBaseValueStatus
	o.decode("GET", "/scheduler/status", url.Values{"key-prefix": {""}, "key": {"route/r1"}}, &one)
	if one.Value == nil || one.Value.Key != "route/r1" || one.Value.State != oState(oConfigure) {
		t.Errorf("route/r1: %+v, want CONFIGURED", one.Value)
	}

	// netagent's own clients (no such User-Agent) keep netagent's answer.
	var ours struct {
		Statuses []json.RawMessage `json:"statuses"`
	}
	e.getJSON("/scheduler/status?key-prefix=iface/", &ours)
	if len(ours.Statuses) != 2 {
		t.Errorf("netagent's answer: %d statuses, want 2", len(ours.Statuses))
	}
}

// TestOriginalDump: `agentctl dump MODEL [--view]` (SchedulerDump):
// GET /scheduler/dump?key-prefix=<prefix>&view=<cached|NB|SB>.
func TestOriginalDump(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	o := newOriginal(t, e, withOriginalNames)

	for _, view := range []string{"cached", "NB", "SB"} {
		var dump []oKVWithMetadata
		o.decode("GET", "/scheduler/dump", url.Values{"key-prefix": {"iface/"}, "view": {view}}, &dump)
		if len(dump) != 2 {
			t.Fatalf("view %s: %d values, want 2: %+v", view, len(dump), dump)
		}
		for i, want := range []string{"a", "b"} {
			if dump[i].Key != "iface/"+want || text(t, dump[i].Value) != want {
				t.Errorf("view %s: value %d: %s %+v, want iface/%s = %q", view, i, dump[i].Key, dump[i].Value, want, want)
			}
		}
		if view != "SB" && dump[0].Origin != oFromNB {
			t.Errorf("view %s: origin %d, want %d (from NB)", view, dump[0].Origin, oFromNB)
		}
	}

	// Without a mapping, a message the original's client would not know
	// is given as google.protobuf.Empty: the answer still decodes.
	plain := newOriginal(t, e, rest.Options{})
	var dump []oKVWithMetadata
	plain.decode("GET", "/scheduler/dump", url.Values{"key-prefix": {"iface/"}, "view": {"cached"}}, &dump)
	if len(dump) != 2 || dump[0].Value == nil || dump[0].Value.Name != "google.protobuf.Empty" {
		t.Errorf("unmapped values: %+v, want google.protobuf.Empty", dump)
	}
}

// TestOriginalConfigHistory: `agentctl config history [REF]`
// (SchedulerHistory): GET /scheduler/txn-history, an array; with
// ?seq-num=N, an object.
func TestOriginalConfigHistory(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	o := newOriginal(t, e, withOriginalNames)

	var txns []*oTxn
	o.decode("GET", "/scheduler/txn-history", url.Values{}, &txns)
	if len(txns) != 3 {
		t.Fatalf("%d transactions, want 3", len(txns))
	}
	for i, txn := range txns {
		if txn.SeqNum != uint64(i+1) || txn.TxnType != oTxnType(oNBTxn) || txn.ResyncType != 0 {
			t.Errorf("txn %d: seq %d type %d resync %d, want seq %d, NBTransaction, not a resync", i, txn.SeqNum, txn.TxnType, txn.ResyncType, i+1)
		}
		if want := at(time.Duration(i+1) * time.Second); !txn.Start.Equal(want) {
			t.Errorf("txn %d: start %s, want %s", i, txn.Start, want)
		}
	}
	first := txns[0]
	if len(first.Values) != 1 || first.Values[0].Key != "route/r1" || text(t, first.Values[0].Value) != "via a dep=iface/a" || first.Values[0].Origin != oFromNB {
		t.Errorf("txn #1 values: %+v", first.Values)
	}
	if len(first.Executed) != 1 || first.Executed[0].Operation != oOp(oCreate) || first.Executed[0].NewState != oState(oPending) || !first.Executed[0].NOOP {
		t.Errorf("txn #1 executed: %+v, want a NOOP CREATE to PENDING", first.Executed)
	}

	var second oTxn
	o.decode("GET", "/scheduler/txn-history", url.Values{"seq-num": {"2"}}, &second)
	if second.SeqNum != 2 || len(second.Executed) != 2 {
		t.Fatalf("txn #2: %+v, want 2 executed operations", second)
	}
	byKey := map[string]*oTxnOp{}
	for _, op := range second.Executed {
		byKey[op.Key] = op
	}
	if op := byKey["iface/a"]; op == nil || op.Operation != oOp(oCreate) || op.NewState != oState(oConfigure) || text(t, op.NewValue) != "a" {
		t.Errorf("txn #2 iface/a: %+v", op)
	}
	if op := byKey["route/r1"]; op == nil || op.PrevState != oState(oPending) || op.NewState != oState(oConfigure) {
		t.Errorf("txn #2 route/r1: %+v, want PENDING to CONFIGURED", op)
	}

	// A transaction the history does not hold: the message the original's
	// client prints.
	code, body := o.call("GET", "/scheduler/txn-history", url.Values{"seq-num": {"99"}})
	var msg struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &msg); code != http.StatusNotFound || err != nil || !strings.Contains(msg.Message, "#99") {
		t.Errorf("seq-num=99: %d %s, want 404 with a message naming #99", code, body)
	}
}

// TestOriginalConfigResync: `agentctl config resync [--retry] [--verbose]`
// (SchedulerResync): POST /scheduler/downstream-resync?retry=1&verbose=1,
// the resync's record.
func TestOriginalConfigResync(t *testing.T) {
	e := newEnv(t, kvscheduler.Options{})
	e.standard()
	o := newOriginal(t, e, withOriginalNames)

	for _, q := range []url.Values{{}, {"retry": {"1"}, "verbose": {"1"}}} {
		var txn oTxn
		o.decode("POST", "/scheduler/downstream-resync", q, &txn)
		if txn.SeqNum == 0 || txn.TxnType != oTxnType(oNBTxn) || txn.ResyncType != oResync(oDownsync) {
			t.Errorf("%s: %+v, want a DownstreamResync NBTransaction", q.Encode(), txn)
		}
		if rec := e.s.GetRecordedTransaction(txn.SeqNum); rec == nil || rec.Description != txn.Description {
			t.Errorf("%s: seq %d is not the resync the scheduler recorded", q.Encode(), txn.SeqNum)
		}
	}
	// A GET is not the resync.
	if code, body := o.call("GET", "/scheduler/downstream-resync", url.Values{}); code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d %s, want 405", code, body)
	}
}

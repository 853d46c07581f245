package txnlog_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/txnlog"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2024, 3, 14, 9, 26, 53, 589793238, time.UTC)

func str(s string) proto.Message { return wrapperspb.String(s) }

// successTxn: an NB transaction executed as planned (Executed is the plan).
func successTxn() *api.RecordedTxn {
	rec := &api.RecordedTxn{
		SeqNum:      5,
		TxnType:     api.NBTransaction,
		Description: "configure eth0 and its default route",
		Start:       t0,
		Stop:        t0.Add(3262468 * time.Nanosecond),
		Values: []api.RecordedKVPair{
			{Key: "config/iface/eth0", Value: str("eth0 up mtu 9000"), Origin: api.FromNB},
			{Key: "config/route/default", Value: str("0.0.0.0/0 via 10.0.0.254"), Origin: api.FromNB},
			{Key: "config/route/old", Origin: api.FromNB},
		},
		Planned: []*api.RecordedTxnOp{
			{
				Operation: api.OpDelete, Key: "config/route/old", Descriptor: "route",
				PrevValue: str("192.168.0.0/16 via 10.0.0.1"),
				PrevState: api.ValueStateConfigured, NewState: api.ValueStateRemoved,
			},
			{
				Operation: api.OpUpdate, Key: "config/iface/eth0", Descriptor: "iface",
				PrevValue: str("eth0 up mtu 1500"), NewValue: str("eth0 up mtu 9000"),
				PrevState: api.ValueStateConfigured, NewState: api.ValueStateConfigured,
			},
			{
				Operation: api.OpCreate, Key: "config/iface/eth0/addr/10.0.0.1/24", Descriptor: "iface-addr",
				NewValue:  str("10.0.0.1/24"),
				PrevState: api.ValueStateNonexistent, NewState: api.ValueStateConfigured,
				Derived: true,
			},
			{
				Operation: api.OpCreate, Key: "config/route/default", Descriptor: "route",
				NewValue:  str("0.0.0.0/0 via 10.0.0.254"),
				PrevState: api.ValueStateNonexistent, NewState: api.ValueStateConfigured,
			},
		},
	}
	rec.Executed = rec.Planned
	return rec
}

// revertTxn: a transaction with revert whose third operation failed; the
// executed list differs from the plan and ends with the REVERT operations.
func revertTxn() *api.RecordedTxn {
	rec := &api.RecordedTxn{
		SeqNum:      12,
		TxnType:     api.NBTransaction,
		Description: "add bridge br0",
		WithRevert:  true,
		Start:       t0,
		Stop:        t0.Add(1500 * time.Microsecond),
		Values: []api.RecordedKVPair{
			{Key: "config/bd/br0", Value: str("br0 members=eth1,eth2"), Origin: api.FromNB},
			{Key: "config/iface/eth1", Value: str("eth1 up"), Origin: api.FromNB},
			{Key: "config/iface/eth2", Value: str("eth2 up"), Origin: api.FromNB},
		},
		Planned: []*api.RecordedTxnOp{
			{Operation: api.OpCreate, Key: "config/iface/eth1", NewValue: str("eth1 up"),
				PrevState: api.ValueStateNonexistent, NewState: api.ValueStateConfigured},
			{Operation: api.OpCreate, Key: "config/iface/eth2", NewValue: str("eth2 up"),
				PrevState: api.ValueStateNonexistent, NewState: api.ValueStateConfigured},
			{Operation: api.OpCreate, Key: "config/bd/br0", NewValue: str("br0 members=eth1,eth2"),
				PrevState: api.ValueStatePending, NewState: api.ValueStateConfigured, WasPending: true},
			{Operation: api.OpCreate, Key: "config/bd/br0/iface/eth1", NewValue: str("eth1"), Derived: true,
				PrevState: api.ValueStateNonexistent, NewState: api.ValueStateConfigured},
		},
		Executed: []*api.RecordedTxnOp{
			{Operation: api.OpCreate, Key: "config/iface/eth1", NewValue: str("eth1 up"),
				PrevState: api.ValueStateNonexistent, NewState: api.ValueStateConfigured},
			{Operation: api.OpCreate, Key: "config/iface/eth2", NewValue: str("eth2 up"),
				PrevState: api.ValueStateNonexistent, NewState: api.ValueStateFailed,
				NewErr: errors.New("link eth2: no such device")},
			{Operation: api.OpDelete, Key: "config/iface/eth1", PrevValue: str("eth1 up"),
				PrevState: api.ValueStateConfigured, NewState: api.ValueStateRemoved, IsRevert: true},
			{Operation: api.OpDelete, Key: "config/iface/eth2", PrevValue: str("eth2 up"),
				PrevState: api.ValueStateFailed, NewState: api.ValueStateRemoved, IsRevert: true,
				PrevErr: errors.New("link eth2: no such device"),
				NewErr:  errors.New("link eth2: still no such device")},
		},
	}
	return rec
}

// resyncTxn: a full resync that found everything in sync.
func resyncTxn() *api.RecordedTxn {
	return &api.RecordedTxn{
		SeqNum:      1,
		TxnType:     api.NBTransaction,
		ResyncType:  api.FullResync,
		Description: "startup resync",
		Start:       t0,
		Stop:        t0.Add(250 * time.Microsecond),
		Values: []api.RecordedKVPair{
			{Key: "config/iface/eth0", Value: str("eth0 up"), Origin: api.FromNB},
			{Key: "config/iface/lo", Value: str("lo up"), Origin: api.FromNB},
		},
	}
}

// sbTxn: an SB notification that created an obtained value and unblocked a
// pending one.
func sbTxn() *api.RecordedTxn {
	rec := &api.RecordedTxn{
		SeqNum:  7,
		TxnType: api.SBNotification,
		Start:   t0,
		Stop:    t0.Add(812345 * time.Nanosecond),
		Values: []api.RecordedKVPair{
			{Key: "sb/iface/tap0", Value: str("tap0 up"), Origin: api.FromSB},
		},
		Planned: []*api.RecordedTxnOp{
			{Operation: api.OpCreate, Key: "sb/iface/tap0", NewValue: str("tap0 up"),
				PrevState: api.ValueStateNonexistent, NewState: api.ValueStateObtained},
			{Operation: api.OpCreate, Key: "config/route/via-tap0", NewValue: str("10.1.0.0/16 dev tap0"),
				PrevState: api.ValueStatePending, NewState: api.ValueStateConfigured, WasPending: true},
		},
	}
	rec.Executed = rec.Planned
	return rec
}

// retryTxn: the second retry of a failed create, which succeeded.
func retryTxn() *api.RecordedTxn {
	rec := &api.RecordedTxn{
		SeqNum:       9,
		TxnType:      api.RetryFailedOps,
		RetryAttempt: 2,
		Start:        t0,
		Stop:         t0.Add(4 * time.Millisecond),
		Values: []api.RecordedKVPair{
			{Key: "config/iface/eth2", Value: str("eth2 up"), Origin: api.FromNB},
		},
		Planned: []*api.RecordedTxnOp{
			{Operation: api.OpCreate, Key: "config/iface/eth2", NewValue: str("eth2 up"),
				PrevState: api.ValueStateRetrying, NewState: api.ValueStateConfigured,
				PrevErr: errors.New("link eth2: device busy"),
				IsRetry: true, IsFixed: true},
		},
	}
	rec.Executed = rec.Planned
	return rec
}

// dryRunTxn: a dry run with a foreseen validation failure.
func dryRunTxn() *api.RecordedTxn {
	return &api.RecordedTxn{
		SeqNum:  21,
		TxnType: api.NBTransaction,
		DryRun:  true,
		Start:   t0,
		Stop:    t0.Add(90 * time.Microsecond),
		Values: []api.RecordedKVPair{
			{Key: "config/iface/eth3", Value: str("eth3 mtu 100000"), Origin: api.FromNB},
			{Key: "config/iface/eth0", Origin: api.FromNB},
		},
		Planned: []*api.RecordedTxnOp{
			{Operation: api.OpDelete, Key: "config/iface/eth0", PrevValue: str("eth0 up"),
				PrevState: api.ValueStateConfigured, NewState: api.ValueStateRemoved},
			{Operation: api.OpValidate, Key: "config/iface/eth3", NewValue: str("eth3 mtu 100000"),
				PrevState: api.ValueStateNonexistent, NewState: api.ValueStateInvalid,
				NewErr: errors.New("mtu 100000 out of range [68, 65535]")},
		},
	}
}

// bigTxn: n values (every 10th a delete) and n operations (every 10th a
// DELETE, every 50th an UPDATE); Executed is a copy of the plan, not the
// same slice, so that both sections are listed.
func bigTxn(n int) *api.RecordedTxn {
	rec := &api.RecordedTxn{
		SeqNum:      1000,
		TxnType:     api.NBTransaction,
		Description: "bulk load",
		Start:       t0,
		Stop:        t0.Add(1234567890 * time.Nanosecond),
	}
	for i := range n {
		key := fmt.Sprintf("config/route/r%04d", i)
		v := str(fmt.Sprintf("10.%d.%d.0/24", i/256, i%256))
		kv := api.RecordedKVPair{Key: key, Value: v, Origin: api.FromNB}
		op := &api.RecordedTxnOp{Operation: api.OpCreate, Key: key, NewValue: v,
			PrevState: api.ValueStateNonexistent, NewState: api.ValueStateConfigured}
		switch {
		case i%10 == 9:
			kv.Value = nil
			op = &api.RecordedTxnOp{Operation: api.OpDelete, Key: key, PrevValue: v,
				PrevState: api.ValueStateConfigured, NewState: api.ValueStateRemoved}
		case i%50 == 0:
			op = &api.RecordedTxnOp{Operation: api.OpUpdate, Key: key, PrevValue: str("old"), NewValue: v,
				PrevState: api.ValueStateConfigured, NewState: api.ValueStateConfigured}
		}
		rec.Values = append(rec.Values, kv)
		rec.Planned = append(rec.Planned, op)
	}
	rec.Executed = append([]*api.RecordedTxnOp(nil), rec.Planned...)
	return rec
}

func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		rec  *api.RecordedTxn
		opts txnlog.Options
	}{
		{"success", successTxn(), txnlog.Options{}},
		{"revert", revertTxn(), txnlog.Options{}},
		{"resync_no_ops", resyncTxn(), txnlog.Options{}},
		{"sb_notification", sbTxn(), txnlog.Options{}},
		{"retry", retryTxn(), txnlog.Options{}},
		{"dry_run", dryRunTxn(), txnlog.Options{}},
		{"big_max5", bigTxn(1000), txnlog.Options{MaxItems: 5}},
		{"default_max", bigTxn(25), txnlog.Options{}},
		{"list_all", bigTxn(25), txnlog.Options{MaxItems: -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := txnlog.Format(c.rec, c.opts)
			path := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update to accept):\n--- got:\n%s\n--- want:\n%s", path, got, want)
			}
		})
	}
}

func TestWritePlanIsPrefixOfFormat(t *testing.T) {
	for _, rec := range []*api.RecordedTxn{successTxn(), revertTxn(), resyncTxn(), dryRunTxn(), bigTxn(100), nil} {
		var plan, result bytes.Buffer
		if err := txnlog.WritePlan(&plan, rec, txnlog.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := txnlog.WriteResult(&result, rec, txnlog.Options{}); err != nil {
			t.Fatal(err)
		}
		full := txnlog.Format(rec, txnlog.Options{})
		if !strings.HasPrefix(full, plan.String()) {
			t.Errorf("WritePlan output is not a prefix of Format:\n%s\n---\n%s", plan.String(), full)
		}
		if full != plan.String()+result.String() {
			t.Errorf("Format is not WritePlan followed by WriteResult:\n%s", full)
		}
	}
}

func TestSectionsAndLimits(t *testing.T) {
	out := txnlog.Format(bigTxn(1000), txnlog.Options{MaxItems: 5})
	for _, want := range []string{
		"... and 995 more: set 895, delete 100",
		"... and 995 more: CREATE 876, UPDATE 19, DELETE 100",
	} {
		if c := strings.Count(out, want); c == 0 {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if !strings.Contains(txnlog.Format(successTxn(), txnlog.Options{}), "executed as planned (4 operations)") {
		t.Error("a successful transaction should be reported as executed as planned")
	}
	all := txnlog.Format(bigTxn(30), txnlog.Options{MaxItems: -1})
	if strings.Contains(all, "more") || !strings.Contains(all, "30. ") {
		t.Errorf("MaxItems -1 should list everything:\n%s", all)
	}
	def := txnlog.Format(bigTxn(30), txnlog.Options{})
	if !strings.Contains(def, "20. ") || strings.Contains(def, "21. ") || !strings.Contains(def, "... and 10 more") {
		t.Errorf("MaxItems 0 should list %d items:\n%s", txnlog.DefaultMaxItems, def)
	}
	// The box and the footer have a fixed width.
	for _, line := range strings.Split(txnlog.Format(successTxn(), txnlog.Options{})+txnlog.Format(resyncTxn(), txnlog.Options{}), "\n") {
		if strings.HasPrefix(line, "+") || strings.HasPrefix(line, "|") {
			if utf8.RuneCountInString(line) != 100 {
				t.Errorf("line of %d columns, want 100: %q", len(line), line)
			}
		}
	}
}

type nilErr struct{ msg string }

func (e *nilErr) Error() string { return e.msg }

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestNoPanics(t *testing.T) {
	var typedNilErr *nilErr
	var typedNilMsg *wrapperspb.StringValue
	recs := []*api.RecordedTxn{
		nil,
		{},
		{Executed: []*api.RecordedTxnOp{nil}},
		{
			TxnType:    api.TxnType(42),
			ResyncType: api.ResyncType(42),
			Values:     []api.RecordedKVPair{{}, {Key: "a", Value: typedNilMsg, Origin: api.FromSB}},
			Planned: []*api.RecordedTxnOp{
				nil,
				{},
				{Operation: api.OpUpdate, Key: "k", PrevValue: typedNilMsg, NewValue: typedNilMsg,
					PrevErr: typedNilErr, NewErr: typedNilErr},
				{Operation: api.TxnOperation(99), Key: "multi\nline", NewErr: errors.Join(errors.New("one"), errors.New("two"))},
			},
			Executed: []*api.RecordedTxnOp{nil, {Operation: api.OpDelete}},
		},
	}
	for i, rec := range recs {
		for _, o := range []txnlog.Options{{}, {MaxItems: 1}, {MaxItems: -1}} {
			out := txnlog.Format(rec, o)
			if !strings.Contains(out, "Transaction #") || !strings.HasSuffix(out, "+\n") {
				t.Errorf("record %d: incomplete output:\n%s", i, out)
			}
		}
	}
	if out := txnlog.Format(&api.RecordedTxn{}, txnlog.Options{}); strings.Count(out, "(no operations)") != 2 {
		t.Errorf("an empty record should print (no operations) for the plan and the execution:\n%s", out)
	}
	if err := txnlog.WritePlan(failingWriter{}, successTxn(), txnlog.Options{}); err == nil {
		t.Error("WritePlan: write error not returned")
	}
	if err := txnlog.WriteResult(failingWriter{}, successTxn(), txnlog.Options{}); err == nil {
		t.Error("WriteResult: write error not returned")
	}
}

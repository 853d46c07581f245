package grpcsource_test

// Changes to confirm (issue 19, commit-confirmed): confirm_within applies a
// change and arms a deadline; Confirm keeps it, the deadline reverts it.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// fakeClock is a Clock whose time moves only with Advance, which runs the
// calls that fall due, in the caller's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clock *fakeClock
	at    time.Time
	f     func()
	done  bool // made or stopped
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) grpcsource.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Advance moves the time by d and makes the calls due, in order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.done && !t.at.After(c.now) {
			t.done = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(due, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// newConfirmEnv is an env whose server keeps pending confirmations in dir
// with clock, on sb (nil: a new southbound). It is not started.
func newConfirmEnv(t *testing.T, dir string, clock *fakeClock, sb *fakeSB) *env {
	t.Helper()
	return newEnvOpts(t, envOptions{confirm: &grpcsource.ConfirmOptions{StateDir: dir, Clock: clock}, sb: sb})
}

func within(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

// checkSource fails unless the gRPC source holds exactly want (values and
// notes).
func checkSource(t *testing.T, what string, e *env, want []orchestrator.KV) {
	t.Helper()
	got := e.o.SourceValues(orchestrator.SourceGRPC)
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].Key == want[i].Key && got[i].Note == want[i].Note && proto.Equal(got[i].Value, want[i].Value)
	}
	if !same {
		t.Fatalf("%s: the gRPC source holds\n %v\nwant\n %v", what, got, want)
	}
}

// checkSB fails unless the SB holds each key of want with its value (nil:
// not at all).
func checkSB(t *testing.T, what string, e *env, want map[string]proto.Message) {
	t.Helper()
	for key, v := range want {
		if got := e.sb.Value(key); !proto.Equal(got, v) {
			t.Errorf("%s: the SB holds %s = %v, want %v", what, key, got, v)
		}
	}
}

// history returns the descriptions of the transactions recorded.
func history(e *env) []string {
	var out []string
	for _, rec := range e.sched.GetTransactionHistory(time.Time{}, time.Time{}) {
		out = append(out, rec.Description)
	}
	return out
}

func hasDescription(e *env, part string) bool {
	return slices.ContainsFunc(history(e), func(d string) bool { return strings.Contains(d, part) })
}

func wantCode(t *testing.T, what string, err error, code codes.Code, parts ...string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Fatalf("%s: %v, want %v", what, err, code)
	}
	for _, p := range parts {
		if !strings.Contains(st.Message(), p) {
			t.Errorf("%s: message %q does not say %q", what, st.Message(), p)
		}
	}
}

// before and after of the change of the tests: a changed, b removed, c
// added.
var (
	aBefore, aAfter = loop("a", "10.0.0.1/24"), loop("a", "10.0.0.2/24")
	bBefore, cAfter = loop("b"), loop("c")
)

// pendingChange starts e, puts a and b in the gRPC source, then makes the
// change to confirm (a full resync to a', c) and returns its seq.
func pendingChange(t *testing.T, e *env, confirmWithin time.Duration) uint64 {
	t.Helper()
	e.start(t)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(aBefore, bBefore), WaitDone: true})
	resp := update(t, e, &configuratorpb.UpdateRequest{Update: cfg(aAfter, cAfter), FullResync: true, ConfirmWithin: within(confirmWithin)})
	if resp.GetSeqNum() == 0 || len(resp.GetErrors()) > 0 {
		t.Fatalf("change to confirm: %v", resp)
	}
	checkSB(t, "the change applied", e, map[string]proto.Message{vppKey("a"): aAfter, vppKey("b"): nil, vppKey("c"): cAfter})
	return resp.GetSeqNum()
}

func TestConfirmedInTime(t *testing.T) {
	dir, clock := t.TempDir(), newFakeClock(t0)
	e := newConfirmEnv(t, dir, clock, nil)
	seq := pendingChange(t, e, 5*time.Minute)
	if _, err := os.Stat(filepath.Join(dir, grpcsource.StateFileName)); err != nil {
		t.Fatalf("state file of the pending change: %v", err)
	}
	clock.Advance(4 * time.Minute)
	resp, err := e.client.Confirm(context.Background(), &configuratorpb.ConfirmRequest{SeqNum: seq})
	if err != nil || resp.GetSeqNum() != seq {
		t.Fatalf("Confirm(%d): %v, %v", seq, resp, err)
	}
	clock.Advance(time.Hour)
	checkSource(t, "confirmed", e, kvsOf(t, aAfter, cAfter))
	checkSB(t, "confirmed", e, map[string]proto.Message{vppKey("a"): aAfter, vppKey("b"): nil, vppKey("c"): cAfter})
	if st := e.srv.ConfirmStatus(); st.Pending != nil || st.Reverts != 0 {
		t.Errorf("status after the confirmation: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, grpcsource.StateFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after the confirmation: %v, want none", err)
	}
	_, err = e.client.Confirm(context.Background(), &configuratorpb.ConfirmRequest{})
	wantCode(t, "Confirm with nothing pending", err, codes.NotFound, "no change is pending")
	// Changes are accepted again.
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("d")), WaitDone: true})
}

// Not confirmed: at the deadline the gRPC source and the SB are back to
// exactly the state before (a changed back, b back, c gone; c's etcd
// value applies again), the history says why, the count moved.
func TestNotConfirmedReverts(t *testing.T) {
	dir, clock := t.TempDir(), newFakeClock(t0)
	e := newConfirmEnv(t, dir, clock, nil)
	cEtcd := loop("c", "192.168.0.1/24")
	if _, err := e.o.Resync(context.Background(), orchestrator.SourceEtcd, kvsOf(t, cEtcd), api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	seq := pendingChange(t, e, 5*time.Minute)
	beforeSource := kvsOf(t, aBefore, bBefore)

	pending, err := e.client.Pending(context.Background(), &configuratorpb.PendingRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{vppKey("a"), vppKey("b"), vppKey("c")}
	if pending.GetSeqNum() != seq || !pending.GetDeadline().AsTime().Equal(t0.Add(5*time.Minute)) ||
		!slices.Equal(pending.GetKeys(), wantKeys) || pending.GetConfirmWithin().AsDuration() != 5*time.Minute ||
		!strings.Contains(pending.GetDescription(), "to be confirmed within 5m0s") {
		t.Errorf("Pending: %v, want #%d until %v, keys %v", pending, seq, t0.Add(5*time.Minute), wantKeys)
	}

	clock.Advance(5*time.Minute - time.Nanosecond)
	if e.srv.ConfirmStatus().Pending == nil {
		t.Fatal("reverted before the deadline")
	}
	clock.Advance(time.Nanosecond)
	checkSource(t, "reverted", e, beforeSource)
	checkSB(t, "reverted", e, map[string]proto.Message{vppKey("a"): aBefore, vppKey("b"): bBefore, vppKey("c"): cEtcd})
	reason := "revert of unconfirmed change #" + itoa(seq) + ": not confirmed within 5m0s"
	if !hasDescription(e, reason) {
		t.Errorf("history %q has no %q", history(e), reason)
	}
	if st := e.srv.ConfirmStatus(); st.Pending != nil || st.Reverts != 1 {
		t.Errorf("status after the revert: %+v, want nothing pending, 1 revert", st)
	}
	if _, err := os.Stat(filepath.Join(dir, grpcsource.StateFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after the revert: %v, want none", err)
	}
	pending, err = e.client.Pending(context.Background(), &configuratorpb.PendingRequest{})
	if err != nil || pending.GetSeqNum() != 0 || len(pending.GetKeys()) != 0 {
		t.Errorf("Pending after the revert: %v, %v", pending, err)
	}
	_, err = e.client.Confirm(context.Background(), &configuratorpb.ConfirmRequest{SeqNum: seq})
	wantCode(t, "Confirm after the revert", err, codes.NotFound, "reverted")
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// While a change is pending, another change to confirm and every other
// change of the gRPC source are refused naming it, and nothing changes;
// Confirm of another seq is NotFound naming the pending one.
func TestChangesRefusedWhilePending(t *testing.T) {
	e := newConfirmEnv(t, t.TempDir(), newFakeClock(t0), nil)
	seq := pendingChange(t, e, time.Minute)
	named := "change #" + itoa(seq)
	ctx := context.Background()
	calls := len(e.sb.Calls())

	_, err := e.client.Update(ctx, &configuratorpb.UpdateRequest{Update: cfg(loop("x")), ConfirmWithin: within(time.Minute)})
	wantCode(t, "second change to confirm", err, codes.FailedPrecondition, named, "2026-12-01T10:01:00Z")
	_, err = e.client.Update(ctx, &configuratorpb.UpdateRequest{Update: cfg(loop("x")), WaitDone: true})
	wantCode(t, "update while pending", err, codes.FailedPrecondition, named, "confirm it or wait")
	_, err = e.client.Update(ctx, &configuratorpb.UpdateRequest{Update: cfg(loop("x")), FullResync: true})
	wantCode(t, "full resync while pending", err, codes.FailedPrecondition, named)
	_, err = e.client.Delete(ctx, &configuratorpb.DeleteRequest{Delete: cfg(loop("a"))})
	wantCode(t, "delete while pending", err, codes.FailedPrecondition, named)
	_, _, err = e.srv.Apply(ctx, "set config", kvsOf(t, loop("x")), false)
	wantCode(t, "Apply while pending", err, codes.FailedPrecondition, named)
	if got := e.sb.Calls()[calls:]; len(got) > 0 {
		t.Errorf("refused changes called the SB: %v", got)
	}
	checkSource(t, "after the refused changes", e, kvsOf(t, aAfter, cAfter))

	_, err = e.client.Confirm(ctx, &configuratorpb.ConfirmRequest{SeqNum: seq + 100})
	wantCode(t, "Confirm of another seq", err, codes.NotFound, "#"+itoa(seq+100)+" is not pending", named)
	if e.srv.ConfirmStatus().Pending == nil {
		t.Fatal("Confirm of another seq dropped the pending change")
	}
	if resp, err := e.client.Confirm(ctx, &configuratorpb.ConfirmRequest{}); err != nil || resp.GetSeqNum() != seq {
		t.Fatalf("Confirm(0): %v, %v", resp, err)
	}
}

// Bad confirm_within values are refused naming the field; nothing applied.
func TestBadConfirmWithin(t *testing.T) {
	e := newConfirmEnv(t, t.TempDir(), newFakeClock(t0), nil)
	e.start(t)
	for _, tc := range []struct {
		name string
		d    *durationpb.Duration
		says string
	}{
		{"negative", within(-time.Second), "negative"},
		{"over 24h", within(25 * time.Hour), "over the maximum"},
		{"malformed", &durationpb.Duration{Seconds: 1, Nanos: -5}, "confirm_within"},
	} {
		_, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("x")), ConfirmWithin: tc.d})
		wantCode(t, "update, confirm_within "+tc.name, err, codes.InvalidArgument, "confirm_within", tc.says)
		_, err = e.client.Delete(context.Background(), &configuratorpb.DeleteRequest{Delete: cfg(loop("x")), ConfirmWithin: tc.d})
		wantCode(t, "delete, confirm_within "+tc.name, err, codes.InvalidArgument, "confirm_within", tc.says)
	}
	checkSource(t, "after the refused requests", e, nil)
	if e.srv.ConfirmStatus().Pending != nil {
		t.Error("a refused request left a change pending")
	}
	// 0 is no confirmation.
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("x")), WaitDone: true, ConfirmWithin: within(0)})
	if e.srv.ConfirmStatus().Pending != nil {
		t.Error("confirm_within 0 left a change pending")
	}
}

// A state directory that cannot be written, or none, refuses a change to
// confirm with nothing applied; a directory that does not exist is made.
func TestConfirmStateDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		code      codes.Code
		says      string
	}{
		{"unwritable", filepath.Join(file, "state"), codes.Unavailable, "cannot be kept"},
		{"none", "", codes.FailedPrecondition, "state_dir"},
	} {
		e := newConfirmEnv(t, tc.dir, newFakeClock(t0), nil)
		e.start(t)
		_, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("x")), ConfirmWithin: within(time.Minute)})
		wantCode(t, tc.name+" state directory", err, tc.code, tc.says)
		if e.sb.Value(vppKey("x")) != nil || len(e.o.SourceValues(orchestrator.SourceGRPC)) > 0 {
			t.Errorf("%s state directory: the refused change was applied", tc.name)
		}
	}
	dir := filepath.Join(t.TempDir(), "new", "state")
	pendingChange(t, newConfirmEnv(t, dir, newFakeClock(t0), nil), time.Minute)
	fi, err := os.Stat(filepath.Join(dir, grpcsource.StateFileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file in a new directory: %v, %v", fi, err)
	}
}

// A restart while a change is pending keeps it (the source starts with
// the values after it) and reverts it when due; a start after the
// deadline starts with the values before it, saying so.
func TestPendingOverRestart(t *testing.T) {
	dir, sb := t.TempDir(), newFakeSB()
	first := newConfirmEnv(t, dir, newFakeClock(t0), sb)
	seq := pendingChange(t, first, 5*time.Minute)
	saved, err := os.ReadFile(filepath.Join(dir, grpcsource.StateFileName))
	if err != nil {
		t.Fatal(err)
	}

	// Restarted 2 minutes later, on the same SB.
	clock := newFakeClock(t0.Add(2 * time.Minute))
	e := newConfirmEnv(t, dir, clock, sb)
	e.o.Register(orchestrator.SourceGRPC) // as the agent does
	if _, err := e.srv.FirstResync(context.Background()); err != nil {
		t.Fatalf("FirstResync: %v", err)
	}
	checkSource(t, "restarted with the change pending", e, kvsOf(t, aAfter, cAfter))
	checkSB(t, "restarted with the change pending", e, map[string]proto.Message{vppKey("a"): aAfter, vppKey("b"): nil, vppKey("c"): cAfter})
	if !hasDescription(e, "first full resync (sources grpc): unconfirmed change #"+itoa(seq)+" kept over the restart") {
		t.Errorf("history after the restart: %q", history(e))
	}
	if p := e.srv.ConfirmStatus().Pending; p == nil || p.Seq != seq || !p.Deadline.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("pending after the restart: %+v", p)
	}
	clock.Advance(3*time.Minute - time.Nanosecond)
	if e.srv.ConfirmStatus().Pending == nil {
		t.Fatal("reverted before the deadline")
	}
	clock.Advance(time.Nanosecond)
	checkSource(t, "reverted after the restart", e, kvsOf(t, aBefore, bBefore))
	checkSB(t, "reverted after the restart", e, map[string]proto.Message{vppKey("a"): aBefore, vppKey("b"): bBefore, vppKey("c"): nil})
	if !hasDescription(e, "revert of unconfirmed change #"+itoa(seq)+": not confirmed within 5m0s") || e.srv.ConfirmStatus().Reverts != 1 {
		t.Errorf("after the deadline: history %q, status %+v", history(e), e.srv.ConfirmStatus())
	}

	// Started after the deadline (the state file as the first agent left it).
	if err := os.WriteFile(filepath.Join(dir, grpcsource.StateFileName), saved, 0o600); err != nil {
		t.Fatal(err)
	}
	late := newConfirmEnv(t, dir, newFakeClock(t0.Add(time.Hour)), newFakeSB())
	late.o.Register(orchestrator.SourceGRPC)
	if _, err := late.srv.FirstResync(context.Background()); err != nil {
		t.Fatalf("FirstResync after the deadline: %v", err)
	}
	checkSource(t, "started after the deadline", late, kvsOf(t, aBefore, bBefore))
	checkSB(t, "started after the deadline", late, map[string]proto.Message{vppKey("a"): aBefore, vppKey("b"): bBefore, vppKey("c"): nil})
	if !hasDescription(late, "first full resync (sources grpc): revert of unconfirmed change #"+itoa(seq)+": not confirmed within 5m0s (its deadline 2026-12-01T10:05:00Z passed while the agent was stopped)") {
		t.Errorf("history of the late start: %q", history(late))
	}
	if st := late.srv.ConfirmStatus(); st.Pending != nil || st.Reverts != 1 {
		t.Errorf("status of the late start: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, grpcsource.StateFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after the late start: %v, want none", err)
	}
}

// A state file that cannot be used is moved aside and the gRPC source
// starts empty; the agent starts.
func TestCorruptStateFile(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":      "{garbage",
		"wrong version": `{"version": 9}`,
		"bad value": `{"version":1,"seq":3,"confirm_within":"1m0s","deadline":"2026-12-01T10:01:00Z",` +
			`"before":[{"key":"config/vpp/v2/interfaces/a","value":{"name":"other"}}],"after":[]}`,
		"no deadline": `{"version":1,"seq":3,"confirm_within":"1m0s","before":[],"after":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, grpcsource.StateFileName)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			e := newConfirmEnv(t, dir, newFakeClock(t0), nil)
			if _, err := e.srv.FirstResync(context.Background()); err != nil {
				t.Fatalf("FirstResync: %v", err)
			}
			if ok, why := e.o.Ready(); !ok {
				t.Fatalf("not started: %v", why)
			}
			checkSource(t, "started with a corrupt state file", e, nil)
			if st := e.srv.ConfirmStatus(); st.Pending != nil || st.Reverts != 0 {
				t.Errorf("status: %+v", st)
			}
			if data, err := os.ReadFile(path + ".bad"); err != nil || string(data) != content {
				t.Errorf("moved aside: %q, %v", data, err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the corrupt state file is still there: %v", err)
			}
		})
	}
}

// RevertPending reverts now, with the reason in the history; a delete to
// confirm brings the values it removed back.
func TestRevertPending(t *testing.T) {
	e := newConfirmEnv(t, t.TempDir(), newFakeClock(t0), nil)
	e.start(t)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(aBefore, bBefore), WaitDone: true})
	resp, err := e.client.Delete(context.Background(), &configuratorpb.DeleteRequest{Delete: cfg(loop("b")), ConfirmWithin: within(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	checkSB(t, "deleted", e, map[string]proto.Message{vppKey("b"): nil})
	if err := e.srv.RevertPending("probe failed: 10.0.0.9 unreachable"); err != nil {
		t.Fatalf("RevertPending: %v", err)
	}
	checkSource(t, "reverted delete", e, kvsOf(t, aBefore, bBefore))
	checkSB(t, "reverted delete", e, map[string]proto.Message{vppKey("a"): aBefore, vppKey("b"): bBefore})
	if want := "revert of unconfirmed change #" + itoa(resp.GetSeqNum()) + ": probe failed: 10.0.0.9 unreachable"; !hasDescription(e, want) {
		t.Errorf("history %q has no %q", history(e), want)
	}
	if err := e.srv.RevertPending("again"); !errors.Is(err, grpcsource.ErrNoPendingChange) {
		t.Errorf("RevertPending with nothing pending: %v, want ErrNoPendingChange", err)
	}
}

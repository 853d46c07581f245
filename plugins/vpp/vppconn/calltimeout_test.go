package vppconn_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// recorder is a slog.Handler keeping every record (attributes included).
type recorder struct {
	mu      sync.Mutex
	records []string // "LEVEL msg k=v ..."
	levels  []slog.Level
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, b.String())
	r.levels = append(r.levels, rec.Level)
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// at returns the records at level or above.
func (r *recorder) at(level slog.Level) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for i, l := range r.levels {
		if l >= level {
			out = append(out, r.records[i])
		}
	}
	return out
}

func (r *recorder) containing(s string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if strings.Contains(rec, s) {
			out = append(out, rec)
		}
	}
	return out
}

// simManager is a vppsim and a Manager connected to it with the given call
// timeout, logging into the returned recorder.
func simManager(t *testing.T, timeout time.Duration) (*vppsim.Sim, *vppconn.Manager, *recorder) {
	t.Helper()
	sim, socket := start(t, vppsim.Options{})
	rec := &recorder{}
	return sim, timedManager(t, socket, timeout, rec), rec
}

// noErrorRecords fails the test if rec holds records at error level.
func noErrorRecords(t *testing.T, rec *recorder) {
	t.Helper()
	if errs := rec.at(slog.LevelError); len(errs) != 0 {
		t.Errorf("error records:\n%s", strings.Join(errs, "\n"))
	}
}

// timedManager is a connected Manager with the given call timeout, logging
// into rec (GoVPP's log too: the last Manager created gets it).
func timedManager(t *testing.T, socket string, timeout time.Duration, rec *recorder) *vppconn.Manager {
	t.Helper()
	events := make(chan event, 8)
	m := vppconn.New(vppconn.Options{Socket: socket, CallTimeout: timeout, Log: slog.New(rec),
		OnConnect: func(restarted, first bool) { events <- event{restarted, first} }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wait(t, events)
	return m
}

// A request VPP answers after the call timeout fails with a
// *CallTimeoutError naming the request and the timeout. VPP's late reply
// reaches no later call (each call has its own GoVPP channel): a call made
// while the late reply arrives gets its own reply, of the same type or not.
// The late reply is logged at debug level only (GoVPP logs it as an error,
// once per message: a late dump would flood the log).
func TestCallTimeoutAndLateReply(t *testing.T) {
	needSim(t, "a VPP slow to answer (Delay)")
	const timeout = 300 * time.Millisecond
	// Slower than the timeout, yet VPP answers a request queued behind the
	// slow one within that request's own timeout (VPP serves one request at
	// a time per connection).
	const slow = 400 * time.Millisecond
	sim, m, rec := simManager(t, timeout)
	conn, err := m.Conn("interfaces")
	if err != nil {
		t.Fatal(err)
	}
	c := interfaces.NewServiceClient(conn)
	call := func(f func(ctx context.Context) error) error {
		ctx, cancel := m.CallContext(context.Background())
		defer cancel()
		return f(ctx)
	}
	createLoopback := func() (uint32, error) {
		var idx uint32
		err := call(func(ctx context.Context) error {
			r, err := c.CreateLoopback(ctx, &interfaces.CreateLoopback{})
			if r != nil {
				idx = uint32(r.SwIfIndex)
			}
			return err
		})
		return idx, err
	}
	indexOf := func(name string) uint32 {
		t.Helper()
		for _, i := range sim.Interfaces() {
			if i.Name == name {
				return i.SwIfIndex
			}
		}
		t.Fatalf("vppsim has no %s: %+v", name, sim.Interfaces())
		return 0
	}
	checkTimeout := func(err error, msg string) {
		t.Helper()
		var te *vppconn.CallTimeoutError
		if !errors.As(err, &te) {
			t.Fatalf("%s slower than the call timeout: %v (%T), want a *vppconn.CallTimeoutError", msg, err, err)
		}
		// The time the call had is the call timeout, not what was left of
		// it when the request went out.
		if te.Message != msg || te.Timeout != timeout {
			t.Errorf("timeout error %+v, want message %s and timeout %v", te, msg, timeout)
		}
		if !strings.Contains(err.Error(), "within "+te.Timeout.String()) {
			t.Errorf("error %q does not say how long VPP had", err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a VPP call timeout does not match context.DeadlineExceeded: %v", err)
		}
	}

	// A reply within the timeout: fine.
	sim.Delay("create_loopback", timeout/4)
	if _, err := createLoopback(); err != nil {
		t.Fatalf("create_loopback answered within the timeout: %v", err)
	}
	loop0 := indexOf("loop0")

	// A late reply of the same type as the next call's.
	sim.Delay("create_loopback", slow)
	_, err = createLoopback()
	checkTimeout(err, "create_loopback")
	sim.Delay("create_loopback", 0)
	idx, err := createLoopback() // VPP answers it right after the late reply
	if err != nil {
		t.Fatalf("create_loopback after a timed-out one: %v", err)
	}
	// The timed-out request was carried out (loop1), then this one (loop2).
	if loop1, loop2 := indexOf("loop1"), indexOf("loop2"); idx != loop2 || idx == loop1 || idx == loop0 {
		t.Errorf("create_loopback returned sw_if_index %d; loop1 (the late reply's) is %d, loop2 (its own) %d", idx, loop1, loop2)
	}

	// A late dump (its details and the control ping reply) while a call of
	// another type waits.
	sim.Delay("sw_interface_dump", slow)
	err = call(func(ctx context.Context) error {
		_, err := vppconn.Dump[*interfaces.SwInterfaceDetails](ctx, conn, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
		return err
	})
	checkTimeout(err, "sw_interface_dump")
	if n := strings.Count(err.Error(), "sw_interface_dump"); n != 1 {
		t.Errorf("the dump's error names the dump %d times: %v", n, err)
	}
	sim.Delay("sw_interface_dump", 0)
	if idx, err = createLoopback(); err != nil {
		t.Fatalf("create_loopback after a timed-out dump: %v", err)
	}
	if want := indexOf("loop3"); idx != want {
		t.Errorf("create_loopback returned sw_if_index %d, want loop3's %d", idx, want)
	}

	// Every late message was reported (1 reply, the 4 details of local0
	// and loop0..2, the control ping reply): at debug level, by type.
	noErrorRecords(t, rec)
	dropped := rec.containing("late VPP reply dropped")
	want := []string{"*interfaces.CreateLoopbackReply", "*memclnt.ControlPingReply"}
	for range 4 {
		want = append(want, "*interfaces.SwInterfaceDetails")
	}
	var got []string
	for _, r := range dropped {
		if !strings.HasPrefix(r, "DEBUG ") {
			t.Errorf("not at debug level: %s", r)
		}
		_, typ, _ := strings.Cut(r, "reply=")
		got = append(got, typ)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("dropped late replies logged: %v, want %v", got, want)
	}
}

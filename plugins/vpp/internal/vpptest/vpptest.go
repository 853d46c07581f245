// Package vpptest sets up the tests of the VPP plugins against vppsim: the
// simulator with a vppconn.Manager connected to it (Start), an agent made
// of a scheduler, the interface descriptors and a plugin (StartAgent), a
// stand-in for ifplugin's interface descriptor (InterfaceStandIn), and
// readers of what the scheduler and the simulator hold.
//
// For tests only: it imports testing and vppsim, and no package of the
// daemon may import it (go list -deps ./cmd/agent must not list it).
package vpptest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// Options of Start.
type Options struct {
	// Sim configures the simulator; Start chooses SocketPath.
	Sim vppsim.Options
	// CallTimeout is the Manager's (0: its default).
	CallTimeout time.Duration
	// Areas are registered with the Manager before it connects.
	Areas []vppconn.Area
}

// Start starts a vppsim and a vppconn.Manager, and returns once the Manager
// is connected to it (20 s at most). Both stop at the end of the test.
func Start(t testing.TB, opts Options) (*vppsim.Sim, *vppconn.Manager) {
	t.Helper()
	opts.Sim.SocketPath = filepath.Join(socketDir(t), "api.sock")
	sim, err := vppsim.Start(opts.Sim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	m := vppconn.New(vppconn.Options{Socket: opts.Sim.SocketPath, CallTimeout: opts.CallTimeout, Log: Logger(t, slog.LevelWarn)})
	for _, a := range opts.Areas {
		m.AddArea(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	WaitConnected(t, m, sim)
	return sim, m
}

// socketDir is a directory for the API socket: the test's temporary
// directory, or a shorter one when that is too long for a unix socket path
// (108 bytes).
func socketDir(t testing.TB) string {
	dir := t.TempDir()
	if len(dir) <= 80 {
		return dir
	}
	dir, err := os.MkdirTemp("", "vpptest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// WaitConnected waits (20 s at most) until m is connected to the current VPP
// process of sim: after a sim.Restart, to the new one.
func WaitConnected(t testing.TB, m *vppconn.Manager, sim *vppsim.Sim) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if st := m.Status(); st.Connected && st.PID == sim.PID() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not connected to vppsim within 20 s: %+v", m.Status())
}

// Logger is a logger for the agent's parts: silent, or into the test's
// output with -v.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	var w io.Writer = io.Discard
	if testing.Verbose() {
		w = t.Output()
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// Plugin is a VPP plugin that StartAgent can run (l2plugin, l3plugin).
type Plugin interface {
	Descriptors() []*api.KVDescriptor
	SetInterfaceLister(names func() []string)
}

// StartAgent starts an agent, as at the daemon's start: a scheduler (closed
// at the end of the test) with the interface descriptors registered first,
// then those of the plugin that newPlugin (l2plugin.New, l3plugin.New)
// makes, reading the interfaces from the scheduler's metadata.
func StartAgent[P Plugin](t testing.TB, m *vppconn.Manager, newPlugin func(*vppconn.Manager, ifplugin.InterfaceLookup, *slog.Logger) P, interfaces ...*api.KVDescriptor) (*kvscheduler.Scheduler, P) {
	t.Helper()
	s := kvscheduler.New(kvscheduler.Options{Logger: Logger(t, slog.LevelWarn)})
	t.Cleanup(s.Close)
	p := newPlugin(m, ifplugin.SchedulerInterfaces(s), Logger(t, slog.LevelInfo))
	p.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(s))
	if err := s.RegisterKVDescriptor(interfaces...); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	return s, p
}

// Loopback is the NB value of a loopback interface.
func Loopback(name string) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK}
}

// KeyValue is a value of a transaction: its key, and the value (nil to
// delete it).
type KeyValue interface {
	KeyValue() (string, proto.Message)
}

// Commit commits the values in one NB transaction (30 s at most) and
// returns its sequence number. ctx may carry transaction options
// (api.WithResync, api.WithRetry).
func Commit[KV KeyValue](ctx context.Context, s api.KVScheduler, kvs ...KV) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	txn := s.StartNBTransaction()
	for _, x := range kvs {
		txn.SetValue(x.KeyValue())
	}
	return txn.Commit(ctx)
}

// MustCommit commits and fails the test on an error.
func MustCommit[KV KeyValue](t testing.TB, s api.KVScheduler, kvs ...KV) uint64 {
	t.Helper()
	seq, err := Commit(context.Background(), s, kvs...)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return seq
}

// Resync commits a resync of the given type with the given values.
func Resync[KV KeyValue](s api.KVScheduler, typ api.ResyncType, kvs ...KV) (uint64, error) {
	return Commit(api.WithResync(context.Background(), typ, false), s, kvs...)
}

// Executed lists the operations of a transaction that called a descriptor
// ("CREATE <key> [flags]"; NOOPs aside).
func Executed(t testing.TB, s api.KVScheduler, seq uint64) []string {
	t.Helper()
	rec := s.GetRecordedTransaction(seq)
	if rec == nil {
		t.Fatalf("transaction %d not recorded", seq)
	}
	var ops []string
	for _, op := range rec.Executed {
		switch op.Operation {
		case api.OpCreate, api.OpUpdate, api.OpDelete:
			if !op.NOOP {
				ops = append(ops, fmt.Sprintf("%s %s %v", op.Operation, op.Key, op.Flags()))
			}
		}
	}
	return ops
}

// Status returns the status of a key, base or derived; nil when the
// scheduler does not know it.
func Status(s api.KVScheduler, key string) *api.ValueStatus {
	st := s.GetValueStatus(key)
	if st == nil {
		return nil
	}
	if st.GetValue().GetKey() == key {
		return st.GetValue()
	}
	for _, d := range st.GetDerivedValues() {
		if d.GetKey() == key {
			return d
		}
	}
	return nil
}

// State returns the state of a key, base or derived (NONEXISTENT when the
// scheduler does not know it).
func State(s api.KVScheduler, key string) api.ValueState {
	if st := Status(s, key); st != nil {
		return st.GetState()
	}
	return api.ValueStateNonexistent
}

// Writes lists the calls that change VPP (add/del/set/create/delete
// messages) in sim's call log (since its last ResetCalls).
func Writes(sim *vppsim.Sim) []string {
	var out []string
	for _, c := range sim.Calls() {
		switch {
		case strings.HasSuffix(c, "_dump"), strings.Contains(c, "_get_"), c == "control_ping", strings.HasPrefix(c, "sockclnt_"),
			c == "memclnt_keepalive", c == "show_version", c == "want_interface_events":
			continue
		}
		out = append(out, c)
	}
	return out
}

// SwIfIndex returns the sw_if_index of the interface tagged name in sim.
func SwIfIndex(t testing.TB, sim *vppsim.Sim, name string) uint32 {
	t.Helper()
	for _, i := range sim.Interfaces() {
		if i.Tag == name {
			return i.SwIfIndex
		}
	}
	t.Fatalf("no interface tagged %s in vppsim", name)
	return 0
}

// Package vpptest sets up the tests of the VPP plugins: a VPP with a
// vppconn.Manager connected to it (Start), an agent made of a scheduler, the
// interface descriptors and a plugin (StartAgent), a stand-in for
// ifplugin's interface descriptor (InterfaceStandIn), and readers of what
// the scheduler and VPP hold.
//
// # Which VPP
//
// Without VPP_API_SOCKET, each test gets a vppsim of its own. With
// VPP_API_SOCKET naming the API socket of a running VPP, the tests run
// against it instead (e.g. VPP_API_SOCKET=/run/vpp/api.sock go test
// ./plugins/vpp/...). That VPP is shared and not restarted, so:
//
//   - tests read VPP's state back through binary-API dumps over GoVPP (the
//     Dump* methods of VPP), which work against both, and never assume
//     an empty VPP: indexes, names, bridge domain ids and tables are the
//     ones VPP reports, compared with what it had when the test started
//     (VPP.Before);
//   - tests that need what only vppsim can do (restart VPP, fail or delay
//     requests, leave messages out, set the carrier of a link, read the log
//     of the requests) call NeedSim, and skip on a real VPP;
//   - the tests of all packages take turns (a lock file per socket, held by
//     Start until the test ends): a full resync of one would otherwise
//     delete what another made;
//   - at the end of every test, Start's cleanup removes what the test left
//     in VPP (interfaces, bridge domains, API and CLI routes, IP tables,
//     memif sockets that were not there when it started) and fails the test
//     if anything is still left.
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

// SocketEnv is the environment variable naming the API socket of a real VPP
// to run the tests against.
const SocketEnv = "VPP_API_SOCKET"

// RealSocket is the API socket of the real VPP the tests run against, ""
// when they run against vppsim.
func RealSocket() string { return os.Getenv(SocketEnv) }

// NeedSim skips the test when it runs against a real VPP: it needs an
// ability only vppsim has, which why names ("restarts VPP").
func NeedSim(t testing.TB, why string) {
	t.Helper()
	if s := RealSocket(); s != "" {
		t.Skipf("needs vppsim (%s); skipped on the real VPP at %s", why, s)
	}
}

// Options of Start.
type Options struct {
	// Sim configures the simulator; Start chooses SocketPath. On a real VPP
	// it is not used, and a test setting Sim.Omit is skipped (a VPP without
	// some messages is vppsim's).
	Sim vppsim.Options
	// CallTimeout is the Manager's (0: its default).
	CallTimeout time.Duration
	// Areas are registered with the Manager before it connects.
	Areas []vppconn.Area
	// OnConnect is the Manager's (called on every connect).
	OnConnect func(restarted, first bool)
}

// VPP is the VPP a test runs against, and a Manager connected to it.
type VPP struct {
	// Sim is the test's own vppsim; nil on a real VPP.
	Sim *vppsim.Sim
	// M is connected to VPP (and stopped at the end of the test).
	M *vppconn.Manager
	// Socket is VPP's API socket.
	Socket string
	// Before is what VPP had when the test started, once connected.
	Before Snapshot

	t         testing.TB
	hostLinks []string // veth pairs made for AF_PACKET, removed at the end
}

// Real tells whether the test runs against a real VPP.
func (v *VPP) Real() bool { return v.Sim == nil }

// Start starts a vppsim (or, with VPP_API_SOCKET set, takes the real VPP's
// turn) and a vppconn.Manager, and returns once the Manager is connected
// (20 s at most). Everything stops at the end of the test; on a real VPP
// what the test left there is removed first.
func Start(t testing.TB, opts Options) *VPP {
	t.Helper()
	v := &VPP{t: t, Socket: RealSocket()}
	if v.Socket != "" {
		if len(opts.Sim.Omit) > 0 {
			NeedSim(t, "a VPP without "+strings.Join(opts.Sim.Omit, ", "))
		}
		lockVPP(t, v.Socket)
	} else {
		opts.Sim.SocketPath = filepath.Join(socketDir(t), "api.sock")
		sim, err := vppsim.Start(opts.Sim)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sim.Close() })
		v.Sim, v.Socket = sim, opts.Sim.SocketPath
	}
	v.M = vppconn.New(vppconn.Options{Socket: v.Socket, CallTimeout: opts.CallTimeout, OnConnect: opts.OnConnect, Log: Logger(t, slog.LevelWarn)})
	for _, a := range opts.Areas {
		v.M.AddArea(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); v.M.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	WaitConnected(t, v.M, v.Sim)
	v.Before = v.Snapshot()
	if v.Real() {
		// Runs before the Manager stops, after the schedulers the test
		// started later have closed.
		t.Cleanup(v.restore)
	}
	return v
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

// WaitConnected waits (20 s at most) until m is connected to VPP: to the
// current VPP process of sim (after a sim.Restart, to the new one), or, sim
// nil, to the real VPP.
func WaitConnected(t testing.TB, m *vppconn.Manager, sim *vppsim.Sim) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if st := m.Status(); st.Connected && (sim == nil || st.PID == sim.PID()) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not connected to the VPP at %s within 20 s: %+v", m.Status().Socket, m.Status())
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

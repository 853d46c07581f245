// Package vpptest sets up the tests of the VPP plugins: a VPP with a
// vppconn.Manager connected to it (Start), an agent made of a scheduler, the
// interface descriptors and a plugin (StartAgent), a stand-in for
// ifplugin's interface descriptor (InterfaceStandIn), and readers of what
// the scheduler and VPP hold.
//
// # Which VPP
//
// Without VPP_API_SOCKET and NETAGENT_VPP_DIR, each test gets a vppsim of
// its own. With NETAGENT_VPP_DIR naming a VPP build folder (make test sets
// it to ../shared/vpp), the test process starts a real VPP of its own from
// it (tests/vpprun), which the tests of the package share, and restarts it
// when a test restarts VPP (VPP.Restart). With VPP_API_SOCKET naming the
// API socket of a running VPP, the tests run against that VPP instead
// (e.g. VPP_API_SOCKET=/run/vpp/api.sock go test ./plugins/vpp/...), which
// is never restarted: tests that restart VPP skip there. On a real VPP:
//
//   - tests read VPP's state back through binary-API dumps over GoVPP (the
//     Dump* methods of VPP), which work against both, and never assume
//     an empty VPP: indexes, names, bridge domain ids and tables are the
//     ones VPP reports, compared with what it had when the test started
//     (VPP.Before);
//   - tests that need what only vppsim can do (fail or delay requests,
//     leave messages out, set the carrier of a link, read the log of the
//     requests) call NeedSim, and skip on a real VPP;
//   - the tests of all packages take turns (a lock file per socket, held by
//     Start until the test ends): a full resync of one would otherwise
//     delete what another made;
//   - at the end of every test, Start's cleanup removes what the test left
//     in VPP (IP neighbours, interfaces, bridge domains, API and CLI routes,
//     IP tables, memif sockets that were not there when it started; VPP
//     keeps the static neighbours and route paths of a deleted interface
//     under its index, so neighbours go before their interfaces) and fails
//     the test if anything is still left.
//
// A package whose tests use Start calls Main from its TestMain (or
// vpprun.StopShared after its tests), which stops the package's own VPP.
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
	"sync/atomic"
	"testing"
	"time"

	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vpprun"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// SocketEnv is the environment variable naming the API socket of a real VPP
// to run the tests against.
const SocketEnv = vpprun.SocketEnv

// UserSocket is the API socket of the user's VPP that the tests run
// against (VPP_API_SOCKET), "" when they do not.
func UserSocket() string { return os.Getenv(SocketEnv) }

// RealVPP tells whether the tests run against a real VPP: the user's
// (VPP_API_SOCKET) or one of their own (NETAGENT_VPP_DIR).
func RealVPP() bool { return UserSocket() != "" || vpprun.Dir() != "" }

// NeedSim skips the test when it runs against a real VPP: it needs an
// ability only vppsim has, which why names ("fails requests").
func NeedSim(t testing.TB, why string) {
	t.Helper()
	switch {
	case UserSocket() != "":
		t.Skipf("needs vppsim (%s); skipped on the real VPP at %s", why, UserSocket())
	case vpprun.Dir() != "":
		t.Skipf("needs vppsim (%s); skipped on the real VPP (%s=%s)", why, vpprun.DirEnv, vpprun.Dir())
	}
}

// QuickHealthChecks makes GoVPP probe VPP every interval, so that the tests
// notice a restarted VPP at once (GoVPP's default is a second), and wait a
// second for each answer (GoVPP's 250 ms is missed now and then by a real
// VPP under -race on a loaded machine, and three missed in a row drop the
// connection in the middle of a test). A TestMain calls it first: GoVPP's
// settings are process globals.
func QuickHealthChecks(interval time.Duration) {
	core.HealthCheckProbeInterval = interval
	core.HealthCheckReplyTimeout = time.Second
}

// Main runs the tests of a package that uses Start and stops the real VPP
// of its own that a test started: call it from TestMain. It exits.
func Main(m *testing.M) {
	code := m.Run()
	vpprun.StopShared()
	os.Exit(code)
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
	// Own is the test process's own real VPP (NETAGENT_VPP_DIR); nil on
	// vppsim and on the user's VPP.
	Own *vpprun.VPP
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
	v := &VPP{t: t, Socket: UserSocket()}
	if v.Socket == "" && vpprun.Dir() != "" {
		if os.Geteuid() != 0 {
			t.Skipf("a real VPP of the tests' own (%s=%s) needs root", vpprun.DirEnv, vpprun.Dir())
		}
		own, err := vpprun.Shared()
		if err != nil {
			t.Fatalf("starting the tests' own VPP: %v", err)
		}
		v.Own, v.Socket = own, own.Socket
	}
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
	v.WaitConnected()
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

// WaitConnected waits (20 s at most) until the Manager is connected to the
// current VPP process (after a Restart, to the new one).
func (v *VPP) WaitConnected() {
	v.t.Helper()
	if v.Own == nil {
		WaitConnected(v.t, v.M, v.Sim)
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if st := v.M.Status(); st.Connected && int(st.PID) == v.Own.PID() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	v.t.Fatalf("not connected to the VPP at %s (pid %d) within 20 s: %+v", v.Socket, v.Own.PID(), v.M.Status())
}

// CanRestart tells whether the test can restart VPP: vppsim, or a real VPP
// of the tests' own; not the user's VPP (VPP_API_SOCKET).
func (v *VPP) CanRestart() bool { return v.Sim != nil || v.Own != nil }

// Restart restarts VPP, empty (a new process, only local0, a new PID), and
// returns once the Manager is connected to it: vppsim's Restart, or the
// tests' own real VPP stopped and started again in its run directory. On
// the user's VPP the test is skipped.
func (v *VPP) Restart() {
	v.t.Helper()
	switch {
	case v.Sim != nil:
		if err := v.Sim.Restart(0); err != nil {
			v.t.Fatal(err)
		}
	case v.Own != nil:
		if err := v.Own.Restart(); err != nil {
			v.t.Fatalf("restarting VPP: %v", err)
		}
	default:
		v.t.Skipf("restarts VPP: not the user's VPP at %s (vppsim or %s do)", v.Socket, vpprun.DirEnv)
	}
	v.WaitConnected()
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
	SetInterfaceLister(names func(ctx context.Context) []string)
}

// StartAgent starts an agent, as at the daemon's start: a scheduler (closed
// at the end of the test) with the interface descriptors registered first,
// then those of the plugin that newPlugin (l2plugin.New, l3plugin.New)
// makes, reading the interfaces from the scheduler's metadata.
func StartAgent[P Plugin](t testing.TB, m *vppconn.Manager, newPlugin func(*vppconn.Manager, ifplugin.InterfaceLookup, *slog.Logger) P, interfaces ...*api.KVDescriptor) (*kvscheduler.Scheduler, P) {
	t.Helper()
	s, p, _ := StartAgentCountingReads(t, m, newPlugin, interfaces...)
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

// Commit commits the values in one NB transaction with the given options
// (resync, retry, revert) and returns its sequence number. It waits 30 s at
// most, less when ctx ends sooner.
func Commit[KV KeyValue](ctx context.Context, s api.KVScheduler, opts api.TxnOptions, kvs ...KV) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	txn := s.StartNBTransaction()
	for _, x := range kvs {
		txn.SetValue(x.KeyValue())
	}
	return txn.Commit(ctx, opts)
}

// MustCommit commits and fails the test on an error.
func MustCommit[KV KeyValue](t testing.TB, s api.KVScheduler, kvs ...KV) uint64 {
	t.Helper()
	seq, err := Commit(context.Background(), s, api.TxnOptions{}, kvs...)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return seq
}

// Resync commits a resync of the given type with the given values.
func Resync[KV KeyValue](s api.KVScheduler, typ api.ResyncType, kvs ...KV) (uint64, error) {
	return Commit(context.Background(), s, api.TxnOptions{Resync: typ}, kvs...)
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

// MetadataReads stands for the scheduler given to
// ifplugin.SchedulerInterfaces and SchedulerInterfaceNames, counting the
// calls: the descriptor callbacks that look interfaces up read through
// their view (api.ViewOf) and never call it.
type MetadataReads struct {
	S     api.KVScheduler
	calls atomic.Int64
}

// GetMetadataMap implements ifplugin.MetadataSource.
func (m *MetadataReads) GetMetadataMap(descriptor string) api.MetadataMap {
	m.calls.Add(1)
	return m.S.GetMetadataMap(descriptor)
}

// Calls is the number of GetMetadataMap calls so far.
func (m *MetadataReads) Calls() int64 { return m.calls.Load() }

// StartAgentCountingReads is StartAgent with the plugin's interface lookup
// and lister reading the scheduler through a MetadataReads, returned.
func StartAgentCountingReads[P Plugin](t testing.TB, m *vppconn.Manager, newPlugin func(*vppconn.Manager, ifplugin.InterfaceLookup, *slog.Logger) P, interfaces ...*api.KVDescriptor) (*kvscheduler.Scheduler, P, *MetadataReads) {
	t.Helper()
	s := kvscheduler.New(kvscheduler.Options{Logger: Logger(t, slog.LevelWarn)})
	t.Cleanup(s.Close)
	reads := &MetadataReads{S: s}
	p := newPlugin(m, ifplugin.SchedulerInterfaces(reads), Logger(t, slog.LevelInfo))
	p.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(reads))
	if err := s.RegisterKVDescriptor(interfaces...); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	return s, p, reads
}

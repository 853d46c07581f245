package vppconn_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memif"
	"go.uber.org/goleak"

	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	"github.com/netagent-io/netagent/tests/vpprun"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// TestMain: GoVPP notices a restarted VPP quickly, nothing outlives the
// tests, and the real VPP of the tests' own (NETAGENT_VPP_DIR) is stopped
// after them.
func TestMain(m *testing.M) {
	vpptest.QuickHealthChecks(50 * time.Millisecond)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		vpprun.StopShared()
		os.Exit(code)
	}))
}

// realMode tells whether the tests run against a real VPP (make test's
// second run: NETAGENT_VPP_DIR, or the user's VPP_API_SOCKET).
func realMode() bool { return vpprun.Dir() != "" || os.Getenv(vpprun.SocketEnv) != "" }

// needSim skips a test on a real VPP: it needs what only vppsim does.
func needSim(t *testing.T, why string) {
	t.Helper()
	if realMode() {
		t.Skipf("needs vppsim (%s); skipped on a real VPP", why)
	}
}

// restartableVPP is a VPP that the test can restart: vppsim, or the real
// VPP of the tests' own (restarted first, so that the test finds it empty;
// the user's VPP is never restarted: the test skips). restart restarts it
// and returns the new PID.
func restartableVPP(t *testing.T, pid uint32) (socket string, firstPID uint32, restart func() uint32) {
	t.Helper()
	if !realMode() {
		sim, socket := start(t, vppsim.Options{PID: pid})
		next := pid
		return socket, pid, func() uint32 {
			t.Helper()
			next += 100
			if err := sim.Restart(next); err != nil {
				t.Fatal(err)
			}
			return next
		}
	}
	if os.Getenv(vpprun.SocketEnv) != "" {
		t.Skipf("restarts VPP: not the user's VPP at %s", os.Getenv(vpprun.SocketEnv))
	}
	v, err := vpprun.Shared()
	if err != nil {
		t.Fatal(err)
	}
	restart = func() uint32 {
		t.Helper()
		if err := v.Restart(); err != nil {
			t.Fatal(err)
		}
		return uint32(v.PID())
	}
	first := restart()
	return v.Socket, first, restart
}

type event struct{ restarted, first bool }

func start(t *testing.T, opts vppsim.Options) (*vppsim.Sim, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "vppconn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	opts.SocketPath = filepath.Join(dir, "api.sock")
	sim, err := vppsim.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim, opts.SocketPath
}

// connected is a Manager connected to a VPP of the test's (vppsim, or the
// real VPP the package runs against).
func connected(t *testing.T) *vppconn.Manager {
	t.Helper()
	socket, _, _ := restartableVPP(t, 1000)
	m, events := manager(t, socket)
	wait(t, events)
	return m
}

func manager(t *testing.T, socket string) (*vppconn.Manager, chan event) {
	t.Helper()
	events := make(chan event, 8)
	m := vppconn.New(vppconn.Options{Socket: socket, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnConnect: func(restarted, first bool) { events <- event{restarted, first} }})
	m.AddArea(vppconn.Area{Name: "memif", Messages: []api.Message{&memif.MemifCreateV2{}, &memif.MemifCreateV2Reply{}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m, events
}

func wait(t *testing.T, events chan event) event {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(20 * time.Second):
		t.Fatal("no VPP connect within 20 s")
		return event{}
	}
}

// TestConnectAndRestart: the Manager connects, reports VPP's PID and
// version, and sees a restart as one (a new PID), on vppsim and on a real
// VPP.
func TestConnectAndRestart(t *testing.T) {
	socket, pid, restart := restartableVPP(t, 1000)
	m, events := manager(t, socket)
	if e := wait(t, events); !e.first || e.restarted {
		t.Errorf("first connect: %+v", e)
	}
	st := m.Status()
	if !st.Connected || st.PID != pid || !strings.Contains(st.Version, "25.10") || len(st.NotReady()) != 0 {
		t.Errorf("status after connect: %+v, want connected to VPP 25.10, pid %d", st, pid)
	}
	if _, err := m.Conn("memif"); err != nil {
		t.Errorf("Conn: %v", err)
	}
	pid = restart()
	if e := wait(t, events); e.first || !e.restarted {
		t.Errorf("connect after a VPP restart: %+v", e)
	}
	if st := m.Status(); st.PID != pid || st.Reconnects != 1 {
		t.Errorf("status after the restart: %+v, want pid %d", st, pid)
	}
}

func TestIncompatibleAreaIsDisabled(t *testing.T) {
	needSim(t, "a VPP without memif_create_v2 (Omit)")
	_, socket := start(t, vppsim.Options{Omit: []string{"memif_create_v2"}})
	m, events := manager(t, socket)
	wait(t, events)
	_, err := m.Conn("memif")
	var ie *vppconn.IncompatibleError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "memif_create_v2") {
		t.Errorf("Conn of the memif area: %v", err)
	}
	if _, err := m.Conn("interfaces"); err != nil {
		t.Errorf("another area: %v", err)
	}
	if nr := m.Status().NotReady(); len(nr) != 1 || !strings.Contains(nr[0], "memif") {
		t.Errorf("not ready: %v", nr)
	}
}

// An optional area VPP lacks is disabled (its calls fail naming the
// message) but does not keep VPP from being ready.
func TestOptionalAreaDoesNotKeepVPPFromReady(t *testing.T) {
	needSim(t, "a VPP without memif_create_v2 (Omit)")
	_, socket := start(t, vppsim.Options{Omit: []string{"memif_create_v2"}})
	events := make(chan event, 8)
	m := vppconn.New(vppconn.Options{Socket: socket, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnConnect: func(restarted, first bool) { events <- event{restarted, first} }})
	m.AddArea(vppconn.Area{Name: "memif", Optional: true, Messages: []api.Message{&memif.MemifCreateV2{}, &memif.MemifCreateV2Reply{}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wait(t, events)
	var ie *vppconn.IncompatibleError
	if _, err := m.Conn("memif"); !errors.As(err, &ie) {
		t.Errorf("Conn of the optional memif area VPP lacks: %v", err)
	}
	st := m.Status()
	if nr := st.NotReady(); len(nr) != 0 {
		t.Errorf("not ready for an optional area: %v", nr)
	}
	if len(st.Disabled["memif"]) == 0 || !st.Optional["memif"] {
		t.Errorf("status: disabled %v optional %v, want memif in both", st.Disabled, st.Optional)
	}
}

func TestNotConnected(t *testing.T) {
	m, _ := manager(t, filepath.Join(t.TempDir(), "none.sock"))
	_, err := m.Conn("interfaces")
	if !errors.Is(err, vppconn.ErrNotConnected) || !strings.Contains(err.Error(), "none.sock") {
		t.Errorf("Conn without VPP: %v", err)
	}
	if nr := m.Status().NotReady(); len(nr) != 1 || !strings.Contains(nr[0], "VPP not connected") {
		t.Errorf("not ready: %v", nr)
	}
}

func TestMetrics(t *testing.T) {
	socket, _, _ := restartableVPP(t, 7) // empty: local0 only
	m, events := manager(t, socket)
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	wait(t, events)
	conn, err := m.Conn("interfaces")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := m.CallContext(context.Background())
	defer cancel()
	c := interfaces.NewServiceClient(conn)
	if _, err := c.CreateLoopback(ctx, &interfaces.CreateLoopback{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: 999}); err == nil {
		t.Fatal("set flags of a missing interface: no error")
	}
	stream, err := c.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
		n++
	}
	if n != 2 {
		t.Errorf("dump: %d interfaces, want local0 and loop0", n)
	}
	for _, c := range []struct {
		labels string
		want   uint64
	}{
		{`message="create_loopback",result="ok"`, 1},
		{`message="sw_interface_set_flags",result="error"`, 1},
		{`message="sw_interface_dump",result="ok"`, 1},
	} {
		if got := histogramCount(t, reg, c.labels); got != c.want {
			t.Errorf("calls %s: %d, want %d", c.labels, got, c.want)
		}
	}
	if got := gauge(t, reg, "netagent_vpp_connected"); got != 1 {
		t.Errorf("connected gauge %v", got)
	}
}

func histogramCount(t *testing.T, reg *prometheus.Registry, labels string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "netagent_vpp_api_call_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var parts []string
			for _, l := range m.GetLabel() {
				parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if strings.Join(parts, ",") == labels {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func TestDoSendsNothingItCannot(t *testing.T) {
	m := vppconn.New(vppconn.Options{Socket: filepath.Join(t.TempDir(), "api.sock")})
	called := false
	f := func(context.Context, api.Connection) error { called = true; return nil }
	if err := m.Do(context.Background(), "interfaces", f); !errors.Is(err, vppconn.ErrNotConnected) {
		t.Errorf("Do before any connection: %v, want ErrNotConnected", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Do(ctx, "interfaces", f); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with an ended context: %v, want context.Canceled", err)
	}
	if called {
		t.Error("Do called f without a connection")
	}
}

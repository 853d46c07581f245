package vppsim_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp"
	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"
	"go.uber.org/goleak"

	"github.com/netagent-io/netagent/tests/vpprun"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func TestMain(m *testing.M) {
	// GoVPP logs every dropped connection at warning level; keep test output readable.
	core.SetLogLevel(logrus.ErrorLevel)
	quiet := logrus.New()
	quiet.SetLevel(logrus.ErrorLevel)
	socketclient.SetLogger(quiet)
	// Detect a restarted VPP quickly (GoVPP's defaults: probe every second).
	core.HealthCheckProbeInterval = 50 * time.Millisecond
	code := m.Run()
	// The real VPP TestInterfaceEventsAsVPP may have started.
	vpprun.StopShared()
	// GoVPP, once its connections are closed, leaves no goroutine behind.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var ctx = context.Background()

// startSim starts a simulator on a fresh socket, closed at the end of the test.
func startSim(t *testing.T, opts vppsim.Options) *vppsim.Sim {
	t.Helper()
	dir, err := os.MkdirTemp("", "vppsim")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	opts.SocketPath = filepath.Join(dir, "api.sock")
	s, err := vppsim.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// connect opens a GoVPP connection (socket client, real codec) to the simulator.
func connect(t *testing.T, s *vppsim.Sim) *core.Connection {
	t.Helper()
	conn, err := govpp.Connect(s.SocketPath())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(conn.Disconnect)
	return conn
}

// collect reads a dump stream until its end (GoVPP's control_ping_reply).
func collect[T any](t *testing.T, recv func() (T, error)) []T {
	t.Helper()
	var out []T
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("dump: %v", err)
		}
		out = append(out, m)
	}
}

// must unwraps a (value, error) result: must(call(...))(t).
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

// wantVPPError checks that err is the VPP error code want.
func wantVPPError(t *testing.T, err error, want api.VPPApiError) {
	t.Helper()
	var e api.VPPApiError
	if !errors.As(err, &e) || e != want {
		t.Fatalf("got error %v, want VPPApiError %d (%v)", err, int32(want), want)
	}
}

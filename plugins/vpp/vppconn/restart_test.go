package vppconn_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/vpe"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// VPP restarts (a new PID each time) while goroutines call it without pause
// (dumps and requests), and at each restart a dump is half read. Every call
// works or fails at once with ErrNotConnected, none waits for its timeout,
// and calls work again after each reconnect. Under -race this is where
// GoVPP v0.13.0's reconnect of a connection in place races with the calls:
// it rewrites the message table that the half-read dump decodes its details
// with (core.Connection.retrieveMessageIDs against LookupByID).
func TestCallsAcrossVPPRestarts(t *testing.T) {
	const (
		workers  = 4
		restarts = 3
		// callTimeout is far longer than a call takes: a call that waits
		// for a reply lost with the old VPP fails with a timeout, not
		// ErrNotConnected, and the test says so.
		callTimeout = 5 * time.Second
	)
	socket, firstPID, restart := restartableVPP(t, 100)
	m, connects := runManager(t, socket, callTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitConnected := func(pid uint32) {
		t.Helper()
		for {
			if st := m.Status(); st.Connected && st.PID == pid {
				return
			}
			select {
			case <-connects:
			case <-ctx.Done():
				t.Fatalf("VPP %d not connected: %+v", pid, m.Status())
			}
		}
	}
	waitConnected(firstPID)

	// The workers call until stopped, whatever happens (the races are
	// reported by the race detector, the wrong errors at the end); worked
	// gets a token (if it has room) after each call that worked.
	worked := make(chan struct{}, 1)
	wrong := make([]error, workers)
	stopWorkers, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for w := range workers {
		wg.Go(func() { wrong[w] = callUntil(stopWorkers, m, w, worked) })
	}
	waitCallsWork := func() {
		t.Helper()
		for range 2 * workers {
			select {
			case <-worked:
			case <-ctx.Done():
				t.Fatalf("calls do not work: %+v", m.Status())
			}
		}
	}

	for i := range restarts {
		waitCallsWork()
		dump := holdDump(ctx, m)
		if err := <-dump.half; err != nil {
			t.Fatal(err)
		}
		waitConnected(restart())
		close(dump.resume)
		if err := <-dump.done; err != nil && !errors.Is(err, vppconn.ErrNotConnected) {
			t.Errorf("restart %d: the dump read across it: %v, want its end or ErrNotConnected", i+1, err)
		}
	}
	waitCallsWork()
	stop()
	wg.Wait()
	for _, err := range wrong {
		if err != nil {
			t.Error(err)
		}
	}
}

// runManager runs a Manager of socket with the call timeout until the end
// of the test; connects gets a token (if it has room) at each connect.
func runManager(t *testing.T, socket string, callTimeout time.Duration) (m *vppconn.Manager, connects <-chan struct{}) {
	tokens := make(chan struct{}, 1)
	m = vppconn.New(vppconn.Options{Socket: socket, CallTimeout: callTimeout,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnConnect: func(bool, bool) {
			select {
			case tokens <- struct{}{}:
			default:
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m, tokens
}

// callUntil calls VPP through m in a loop until ctx ends: a dump of the
// interfaces, a dump of the routes of table 0, and a request. It returns the
// first failure other than ErrNotConnected.
func callUntil(ctx context.Context, m *vppconn.Manager, worker int, worked chan<- struct{}) (wrong error) {
	for n := 0; ctx.Err() == nil; n++ {
		err := callOnce(ctx, m, n%3)
		switch {
		case err == nil:
			select {
			case worked <- struct{}{}:
			default:
			}
		case errors.Is(err, vppconn.ErrNotConnected), ctx.Err() != nil:
		case wrong == nil:
			wrong = fmt.Errorf("worker %d, call %d: %w; want success or ErrNotConnected", worker, n, err)
		}
	}
	return wrong
}

func callOnce(ctx context.Context, m *vppconn.Manager, kind int) error {
	conn, err := m.Conn("interfaces")
	if err != nil {
		return err
	}
	cctx, cancel := m.CallContext(ctx)
	defer cancel()
	switch kind {
	case 0:
		_, err = vppconn.Dump[*interfaces.SwInterfaceDetails](cctx, conn, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	case 1:
		_, err = vppconn.Dump[*ip.IPRouteDetails](cctx, conn, &ip.IPRouteDump{})
	default:
		_, err = vpe.NewServiceClient(conn).ShowVersion(cctx, &vpe.ShowVersion{})
	}
	return err
}

// heldDump is a dump held open across a VPP restart.
type heldDump struct {
	half   chan error    // the dump is half read (or failed)
	resume chan struct{} // closed by the test: read the rest
	done   chan error    // the end of the dump: nil, or why it failed
}

// holdDump creates a loopback, then dumps the interfaces (local0 and at
// least that one) on a goroutine of its own: it reads the first detail,
// sends on half, reads the second detail, and reads the rest once resume is
// closed. The second detail is read after telling the test, so that nothing
// orders that read before the restart and the reconnect that follow (the
// race detector takes every channel operation, lock and socket read and
// write in the process for a synchronisation, vppsim's included).
func holdDump(ctx context.Context, m *vppconn.Manager) *heldDump {
	d := &heldDump{half: make(chan error, 1), resume: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		conn, err := m.Conn("interfaces")
		if err != nil {
			d.half <- err
			return
		}
		cctx, cancel := m.CallContext(ctx)
		defer cancel()
		if _, err := interfaces.NewServiceClient(conn).CreateLoopback(cctx, &interfaces.CreateLoopback{}); err != nil {
			d.half <- err
			return
		}
		stream, err := conn.NewStream(cctx)
		if err != nil {
			d.half <- err
			return
		}
		defer func() { _ = stream.Close() }()
		for _, req := range []api.Message{&interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}, &memclnt.ControlPing{}} {
			if err := stream.SendMsg(req); err != nil {
				d.half <- err
				return
			}
		}
		if msg, err := stream.RecvMsg(); err != nil {
			d.half <- fmt.Errorf("the first detail of the dump: %w", err)
			return
		} else if _, ok := msg.(*interfaces.SwInterfaceDetails); !ok {
			d.half <- fmt.Errorf("the first message of the dump is %s", msg.GetMessageName())
			return
		}
		d.half <- nil
		_, err = stream.RecvMsg()
		select {
		case <-d.resume:
		case <-ctx.Done():
			err = ctx.Err()
		}
		for err == nil {
			var msg api.Message
			if msg, err = stream.RecvMsg(); err == nil {
				if _, end := msg.(*memclnt.ControlPingReply); end {
					break
				}
			}
		}
		d.done <- err
	}()
	return d
}

// When VPP goes away, a call waiting for its reply returns ErrNotConnected
// at once, not at its timeout, and so does a call through a connection
// taken before.
func TestCallsFailAtOnceWhenVPPGoes(t *testing.T) {
	needSim(t, "a VPP that does not answer show_version (Delay)")
	sim, socket := start(t, vppsim.Options{})
	m, connected := runManager(t, socket, time.Hour)
	// A call that waits for the hour of its timeout fails the test here.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatal("VPP not connected")
	}
	conn, err := m.Conn("interfaces")
	if err != nil {
		t.Fatal(err)
	}

	sim.Delay("show_version", time.Hour) // VPP does not answer before it goes
	sim.ResetCalls()
	waiting := make(chan error, 1)
	go func() {
		cctx, cancel := m.CallContext(ctx)
		defer cancel()
		_, err := vpe.NewServiceClient(conn).ShowVersion(cctx, &vpe.ShowVersion{})
		waiting <- err
	}()
	for !slices.Contains(sim.Calls(), "show_version") { // the call is sent
		if ctx.Err() != nil {
			t.Fatal("show_version not sent")
		}
		runtime.Gosched()
	}
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, vppconn.ErrNotConnected) {
			t.Errorf("call waiting when VPP went: %v, want ErrNotConnected", err)
		}
	case <-ctx.Done():
		t.Fatal("the call waiting when VPP went still waits")
	}

	cctx, cancel := m.CallContext(ctx)
	defer cancel()
	_, err = vppconn.Dump[*interfaces.SwInterfaceDetails](cctx, conn, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if !errors.Is(err, vppconn.ErrNotConnected) {
		t.Errorf("dump through the connection taken before: %v, want ErrNotConnected", err)
	}
	if _, err := m.Conn("interfaces"); !errors.Is(err, vppconn.ErrNotConnected) {
		t.Errorf("Conn: %v, want ErrNotConnected", err)
	}
}

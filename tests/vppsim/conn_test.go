package vppsim_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp"
	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/core"

	"github.com/netagent-io/netagent/tests/testsupport"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func TestFailNext(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)

	s.FailNext("create_loopback", int32(api.INVALID_REGISTRATION), 2)
	for range 2 {
		_, err := ic.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		wantVPPError(t, err, api.INVALID_REGISTRATION)
	}
	if got := s.Interfaces(); len(got) != 1 {
		t.Fatalf("a failed request changed the state: %+v", got)
	}
	if r := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t); r.SwIfIndex != 1 {
		t.Errorf("third create = %+v", r)
	}
	// Through a channel the error is a VPPApiError as well.
	ch := must(conn.NewAPIChannel())(t)
	defer ch.Close()
	s.FailNext("sw_interface_set_flags", int32(api.UNSPECIFIED), 1)
	err := ch.SendRequest(&interfaces.SwInterfaceSetFlags{SwIfIndex: 1}).ReceiveReply(&interfaces.SwInterfaceSetFlagsReply{})
	wantVPPError(t, err, api.UNSPECIFIED)
	// A failing dump returns no details.
	s.FailNext("sw_interface_dump", -1, 1)
	if ds := dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: all}); len(ds) != 0 {
		t.Errorf("failed dump returned %d", len(ds))
	}
	if ds := dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: all}); len(ds) != 2 {
		t.Errorf("dump returned %d", len(ds))
	}
	// Clearing.
	s.FailNext("create_loopback", -1, 5)
	s.FailNext("create_loopback", 0, 0)
	must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t)
}

func TestDelay(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	slow := connect(t, s)
	fast := connect(t, s)
	s.Delay("show_version", 300*time.Millisecond)

	var wg sync.WaitGroup
	var slowTook time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		if _, err := vpe.NewServiceClient(slow).ShowVersion(ctx, &vpe.ShowVersion{}); err != nil {
			t.Error(err)
		}
		slowTook = time.Since(start)
	}()
	time.Sleep(50 * time.Millisecond)
	// Another connection is served meanwhile.
	start := time.Now()
	must(memclnt.NewServiceClient(fast).ControlPing(ctx, &memclnt.ControlPing{}))(t)
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Errorf("other client waited %v", took)
	}
	wg.Wait()
	if slowTook < 300*time.Millisecond {
		t.Errorf("delayed reply came after %v", slowTook)
	}
	// A client timing out on a delayed reply gets GoVPP's timeout error.
	ch := must(fast.NewAPIChannel())(t)
	defer ch.Close()
	ch.SetReplyTimeout(50 * time.Millisecond)
	err := ch.SendRequest(&vpe.ShowVersion{}).ReceiveReply(&vpe.ShowVersionReply{})
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("want a timeout, got %v", err)
	}
	s.Delay("show_version", 0)
	time.Sleep(300 * time.Millisecond) // let the late reply arrive and be dropped
	if err := ch.SendRequest(&vpe.ShowVersion{}).ReceiveReply(&vpe.ShowVersionReply{}); err != nil {
		t.Errorf("after delay removed: %v", err)
	}
}

// TestHold: a held request is neither carried out nor answered until the
// release, and the connection's later requests wait behind it, while other
// connections are served; the release answers it, carried out then, and
// later requests of the message are served at once. A Restart ends the
// requests still held, unanswered; the Hold lasts until released.
func TestHold(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	hung, other := connect(t, s), connect(t, s)
	release := s.Hold("create_loopback")
	defer release()

	type created struct {
		reply *interfaces.CreateLoopbackReply
		err   error
	}
	answered := make(chan created, 1)
	callCtx, cancelCall := context.WithTimeout(ctx, time.Minute)
	defer cancelCall()
	go func() {
		r, err := interfaces.NewServiceClient(hung).CreateLoopback(callCtx, &interfaces.CreateLoopback{})
		answered <- created{r, err}
	}()
	waitHeld(t, s, "create_loopback", 1)
	select {
	case r := <-answered:
		t.Fatalf("held create_loopback answered before the release: %+v %v", r.reply, r.err)
	default:
	}
	if got := simIfNames(s); !slices.Equal(got, []string{"local0"}) {
		t.Errorf("interfaces while create_loopback is held: %v, want local0 only (not carried out)", got)
	}
	// Other connections are served meanwhile; the held one's later
	// requests wait behind the held request.
	if r, err := vpe.NewServiceClient(other).ShowVersion(withTimeout(t, 10*time.Second), &vpe.ShowVersion{}); err != nil || r.Version == "" {
		t.Errorf("show_version on another connection while one is held: %+v %v", r, err)
	}
	behind := must(hung.NewAPIChannel())(t)
	defer behind.Close() // after the release: its late reply is dropped
	behind.SetReplyTimeout(100 * time.Millisecond)
	if err := behind.SendRequest(&vpe.ShowVersion{}).ReceiveReply(&vpe.ShowVersionReply{}); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("show_version behind the held request: %v, want no answer (a timeout)", err)
	}

	release()
	release() // idempotent
	select {
	case r := <-answered:
		if r.err != nil || r.reply.SwIfIndex != 1 {
			t.Errorf("held create_loopback after the release: %+v %v, want loop0 at 1", r.reply, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held create_loopback not answered 10 s after the release")
	}
	if n := s.Held("create_loopback"); n != 0 {
		t.Errorf("Held after the release = %d", n)
	}
	// The held connection serves its requests in order: once a new one is
	// answered, the show_version left behind the held request has been
	// served too (and cannot be caught by the Hold of show_version below).
	if r, err := vpe.NewServiceClient(hung).ShowVersion(withTimeout(t, 10*time.Second), &vpe.ShowVersion{}); err != nil || r.Version == "" {
		t.Errorf("show_version on the released connection: %+v %v", r, err)
	}
	if r, err := interfaces.NewServiceClient(other).CreateLoopback(withTimeout(t, 10*time.Second), &interfaces.CreateLoopback{}); err != nil || r.SwIfIndex != 2 {
		t.Errorf("create_loopback after the release: %+v %v, want loop1 at 2", r, err)
	}

	// A Restart ends a held request (no goroutine is left: TestMain's
	// goleak); the Hold is still in force on the restarted VPP.
	releaseVersion := s.Hold("show_version")
	defer releaseVersion()
	lost := make(chan error, 1)
	go func() {
		_, err := vpe.NewServiceClient(other).ShowVersion(callCtx, &vpe.ShowVersion{})
		lost <- err
	}()
	waitHeld(t, s, "show_version", 1)
	if err := s.Restart(0); err != nil {
		t.Fatal(err)
	}
	if n := s.Held("show_version"); n != 0 {
		t.Errorf("Held after the restart = %d, want the held request ended with its connection", n)
	}
	if got := simIfNames(s); !slices.Equal(got, []string{"local0"}) {
		t.Errorf("interfaces after the restart: %v", got)
	}
	cancelCall() // GoVPP's call on the closed connection waits for its context
	<-lost
	again := connect(t, s)
	versionCtx, cancelVersion := context.WithTimeout(ctx, time.Minute)
	defer cancelVersion()
	version := make(chan error, 1)
	go func() {
		_, err := vpe.NewServiceClient(again).ShowVersion(versionCtx, &vpe.ShowVersion{})
		version <- err
	}()
	waitHeld(t, s, "show_version", 1)
	releaseVersion()
	select {
	case err := <-version:
		if err != nil {
			t.Errorf("show_version held across the restart, released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("show_version not answered 10 s after the release")
	}
}

// waitHeld waits until n requests of msg are held.
func waitHeld(t *testing.T, s *vppsim.Sim, msg string, n int) {
	t.Helper()
	testsupport.Eventually(t, 10*time.Second, func() error {
		if got := s.Held(msg); got != n {
			return fmt.Errorf("%d %s requests held, want %d", got, msg, n)
		}
		return nil
	})
}

// simIfNames are the names of the simulator's interfaces.
func simIfNames(s *vppsim.Sim) []string {
	var out []string
	for _, i := range s.Interfaces() {
		out = append(out, i.Name)
	}
	return out
}

// withTimeout is a context that ends after d or with the test.
func withTimeout(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return c
}

func waitState(t *testing.T, events chan core.ConnectionEvent, want core.ConnectionState) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-events:
			if e.State == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %v connection event", want)
		}
	}
}

func TestRestart(t *testing.T) {
	s := startSim(t, vppsim.Options{PID: 100})
	conn, events, err := govpp.AsyncConnect(s.SocketPath(), 100, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	waitState(t, events, core.Connected)

	mc := memclnt.NewServiceClient(conn)
	if p := must(mc.ControlPing(ctx, &memclnt.ControlPing{}))(t); p.VpePID != 100 {
		t.Fatalf("vpe_pid = %d", p.VpePID)
	}
	ic := interfaces.NewServiceClient(conn)
	must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t)
	s.FailNext("create_loopback", -1, 1) // test settings survive a restart

	if err := s.Restart(200); err != nil {
		t.Fatal(err)
	}
	waitState(t, events, core.Disconnected)
	waitState(t, events, core.Connected)

	if p := must(mc.ControlPing(ctx, &memclnt.ControlPing{}))(t); p.VpePID != 200 {
		t.Errorf("vpe_pid after restart = %d", p.VpePID)
	}
	if got := ifNames(dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: all})); !slices.Equal(got, []string{"local0"}) {
		t.Errorf("state after restart = %v", got)
	}
	_, err = ic.CreateLoopback(ctx, &interfaces.CreateLoopback{})
	wantVPPError(t, err, api.UNSPECIFIED)
	if s.PID() != 200 {
		t.Errorf("PID() = %d", s.PID())
	}
	// A random PID when none is given.
	if err := s.Restart(0); err != nil || s.PID() == 200 || s.PID() == 0 {
		t.Errorf("Restart(0): %v, pid %d", err, s.PID())
	}
}

// TestRestartWith: VPP started again with other plugins (messages left out)
// and a startup configuration that creates loopbacks, which take the first
// indexes before any client connects.
func TestRestartWith(t *testing.T) {
	s := startSim(t, vppsim.Options{PID: 100, StartupLoopbacks: 1})
	if got := s.Interfaces(); len(got) != 2 || got[1].Name != "loop0" || got[1].SwIfIndex != 1 || got[1].Tag != "" {
		t.Fatalf("interfaces at the start: %+v, want local0 and loop0 (1, untagged)", got)
	}
	if _, ok := s.Messages()["memif_create_v2_"+(&memif.MemifCreateV2{}).GetCrcString()]; !ok {
		t.Fatal("memif_create_v2 missing before the restart")
	}
	if err := s.RestartWith(vppsim.Restart{PID: 200, Omit: []string{"memif_create_v2"}, StartupLoopbacks: 3}); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, s)
	if p := must(memclnt.NewServiceClient(conn).ControlPing(ctx, &memclnt.ControlPing{}))(t); p.VpePID != 200 {
		t.Errorf("vpe_pid after the restart = %d", p.VpePID)
	}
	if got := ifNames(dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: all})); !slices.Equal(got, []string{"local0", "loop0", "loop1", "loop2"}) {
		t.Errorf("interfaces after the restart = %v", got)
	}
	if _, ok := s.Messages()["memif_create_v2_"+(&memif.MemifCreateV2{}).GetCrcString()]; ok {
		t.Error("memif_create_v2 still in the message table")
	}
	// A new loopback takes the next instance and index.
	if r := must(interfaces.NewServiceClient(conn).CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t); r.SwIfIndex != 4 {
		t.Errorf("new loopback at %d, want 4", r.SwIfIndex)
	}
	// Restart keeps the settings of the last start.
	if err := s.Restart(300); err != nil {
		t.Fatal(err)
	}
	if got := s.Interfaces(); len(got) != 4 {
		t.Errorf("interfaces after Restart: %+v, want local0 and 3 loopbacks", got)
	}
	if _, ok := s.Messages()["memif_create_v2_"+(&memif.MemifCreateV2{}).GetCrcString()]; ok {
		t.Error("memif_create_v2 back after Restart")
	}
	if err := s.RestartWith(vppsim.Restart{Omit: []string{"no_such_message"}}); err == nil {
		t.Error("RestartWith accepted an unknown message in Omit")
	}
}

func TestOmit(t *testing.T) {
	s := startSim(t, vppsim.Options{Omit: []string{"memif_create_v2"}})
	conn := connect(t, s)
	ch := must(conn.NewAPIChannel())(t)
	defer ch.Close()

	err := ch.CheckCompatiblity(&memif.MemifCreateV2{}, &memif.MemifCreateV2Reply{}, &memif.MemifDump{}, &memif.MemifDetails{})
	var ce *api.CompatibilityError
	if !errors.As(err, &ce) {
		t.Fatalf("CheckCompatiblity = %v", err)
	}
	wantBad := []string{
		"memif_create_v2_" + (&memif.MemifCreateV2{}).GetCrcString(),
		"memif_create_v2_reply_" + (&memif.MemifCreateV2Reply{}).GetCrcString(),
	}
	if !slices.Equal(ce.IncompatibleMessages, wantBad) || len(ce.CompatibleMessages) != 2 {
		t.Errorf("incompatible %v, compatible %v", ce.IncompatibleMessages, ce.CompatibleMessages)
	}
	if err := ch.CheckCompatiblity(&memif.MemifCreate{}, &interfaces.CreateLoopback{}); err != nil {
		t.Errorf("other messages: %v", err)
	}
	if _, err := memif.NewServiceClient(conn).MemifCreateV2(ctx, &memif.MemifCreateV2{}); err == nil {
		t.Error("an omitted message could be sent")
	}
	if _, err := vppsim.Start(vppsim.Options{SocketPath: s.SocketPath() + "2", Omit: []string{"sockclnt_create"}}); err == nil {
		t.Error("the handshake could be omitted")
	}
	if _, err := vppsim.Start(vppsim.Options{SocketPath: s.SocketPath() + "2", Omit: []string{"memif_create_v9"}}); err == nil {
		t.Error("an unknown name was accepted in Omit")
	}
}

func TestSeveralClients(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	const clients, each = 4, 10
	conns := make([]*core.Connection, clients)
	for i := range conns {
		conns[i] = connect(t, s)
	}
	if n := s.Clients(); n != clients {
		t.Errorf("Clients() = %d", n)
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ic := interfaces.NewServiceClient(c)
			for range each {
				if _, err := ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	ds := dumpIfs(t, conns[0], &interfaces.SwInterfaceDump{SwIfIndex: all})
	if len(ds) != clients*each+1 {
		t.Fatalf("%d interfaces", len(ds))
	}
	seen := map[string]bool{}
	for i, d := range ds {
		if uint32(d.SwIfIndex) != uint32(i) || seen[d.InterfaceName] {
			t.Errorf("index %d name %s", d.SwIfIndex, d.InterfaceName)
		}
		seen[d.InterfaceName] = true
	}
	if !seen[fmt.Sprintf("loop%d", clients*each-1)] {
		t.Error("loopback names not dense")
	}
	conns[1].Disconnect()
	deadline := time.Now().Add(5 * time.Second)
	for s.Clients() != clients-1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.Clients(); n != clients-1 {
		t.Errorf("after one disconnect Clients() = %d", n)
	}
	if !slices.Contains(s.Calls(), "sockclnt_delete") {
		t.Error("GoVPP's sockclnt_delete not seen")
	}
}

func nextEvent(t *testing.T, w api.Watcher) *interfaces.SwInterfaceEvent {
	t.Helper()
	select {
	case e := <-w.Events():
		return e.(*interfaces.SwInterfaceEvent)
	case <-time.After(5 * time.Second):
		t.Fatal("no sw_interface_event")
		return nil
	}
}

// The registration (one per client), a carrier change (which only the
// simulator can make on a loopback) and the end of the events at
// unsubscription. What VPP sends for what is TestInterfaceEventsAsVPP's.
func TestInterfaceEvents(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	sub := connect(t, s)
	actor := connect(t, s)

	w, err := sub.WatchEvent(ctx, &interfaces.SwInterfaceEvent{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	subc := interfaces.NewServiceClient(sub)
	must(subc.WantInterfaceEvents(ctx, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 77}))(t)
	_, err = subc.WantInterfaceEvents(ctx, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 77})
	wantVPPError(t, err, api.INVALID_REGISTRATION)

	ic := interfaces.NewServiceClient(actor)
	idx := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	if e := nextEvent(t, w); e.SwIfIndex != idx || e.PID != 77 || e.Deleted || e.Flags != 0 {
		t.Errorf("creation event = %+v", e)
	}
	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: idx, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}))(t)
	if e := nextEvent(t, w); e.Flags != interface_types.IF_STATUS_API_FLAG_ADMIN_UP|interface_types.IF_STATUS_API_FLAG_LINK_UP {
		t.Errorf("admin up event = %+v", e)
	}
	// The flags are the states that went up: a carrier loss under an
	// admin-up interface is 0, its return LINK_UP alone.
	if err := s.SetLinkUp(uint32(idx), false); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, w); e.SwIfIndex != idx || e.Flags != 0 {
		t.Errorf("carrier loss event = %+v", e)
	}
	if err := s.SetLinkUp(uint32(idx), true); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, w); e.SwIfIndex != idx || e.Flags != interface_types.IF_STATUS_API_FLAG_LINK_UP {
		t.Errorf("carrier back event = %+v", e)
	}
	// Unsubscribed: no more events.
	must(subc.WantInterfaceEvents(ctx, &interfaces.WantInterfaceEvents{EnableDisable: 0, PID: 77}))(t)
	must(ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: idx}))(t)
	idx = must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: idx, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}))(t)
	select {
	case e := <-w.Events():
		t.Errorf("event after unsubscribe: %+v", e)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestCallsOrder(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	s.ResetCalls()
	ic := interfaces.NewServiceClient(conn)
	idx := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: idx, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}))(t)
	dumpIfs(t, conn, &interfaces.SwInterfaceDump{SwIfIndex: all})
	want := []string{"create_loopback", "sw_interface_set_flags", "sw_interface_dump", "control_ping"}
	if got := s.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}

func TestCloseAndStaleSocket(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	path := s.SocketPath()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket still there: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := memclnt.NewServiceClient(conn).ControlPing(tctx, &memclnt.ControlPing{}); err == nil {
		t.Error("ping after Close succeeded")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Restart(1); err == nil {
		t.Error("Restart after Close succeeded")
	}
	// A new simulator on the same path: a stale socket file (left by a VPP
	// that died) is removed; a regular file is not.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no stale socket: %v", err)
	}
	if err := os.WriteFile(path+".x", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := vppsim.Start(vppsim.Options{SocketPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := vppsim.Start(vppsim.Options{SocketPath: path + ".x"}); err == nil {
		t.Error("Start over a regular file succeeded")
	}
	c2 := connect(t, s2)
	must(memclnt.NewServiceClient(c2).ControlPing(ctx, &memclnt.ControlPing{}))(t)
}

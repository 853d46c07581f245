package ligato_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
)

// notified is a notification as the tests compare it.
func notified(r *ligatocfg.NotifyResponse) string {
	n := r.GetNotification().GetVppNotification().GetInterface()
	s := n.GetState()
	return fmt.Sprintf("next %d: %s %s %s(%d) %s admin %s oper %s at %d", r.GetNextIdx(), n.GetType(), s.GetName(),
		s.GetInternalName(), s.GetIfIndex(), s.GetType(), s.GetAdminStatus(), s.GetOperStatus(), s.GetLastChange())
}

// pushLink reports the link state of an interface as VPP's watcher does:
// the key of the state, the other one removed.
func pushLink(t *testing.T, e *env, name string, up bool) {
	t.Helper()
	state := ifplugin.LinkStateDown
	if up {
		state = ifplugin.LinkStateUp
	}
	if err := e.sched.PushSBNotification(
		api.KVWithMetadata{Key: ifplugin.LinkStateKey(name, !up), Origin: api.FromSB},
		api.KVWithMetadata{Key: ifplugin.LinkStateKey(name, up), Value: wrapperspb.String(state), Origin: api.FromSB},
	); err != nil {
		t.Fatal(err)
	}
}

type notifyStream interface {
	Recv() (*ligatocfg.NotifyResponse, error)
}

// recvN receives n notifications.
func recvN(t *testing.T, s notifyStream, n int) []string {
	t.Helper()
	var out []string
	for range n {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		out = append(out, notified(r))
	}
	return out
}

func checkNotified(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n%q\nwant\n%q", what, got, want)
	}
}

// Notify sends the interface's states as VPP and the agent change them,
// numbered; a client resumes at an index, from the oldest kept when it
// asks for one no longer (or never) kept.
func TestNotify(t *testing.T) {
	clock := time.Unix(1700000000, 0)
	e := newEnv(t, ligato.Options{Notifications: 3, Now: func() time.Time { return clock }})
	ctx := ctxOf(t)
	live, err := e.client.Notify(ctx, &ligatocfg.NotifyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	all := []string{
		"next 1: UPDOWN loop1 loop0(1) SOFTWARE_LOOPBACK admin UP oper DOWN at 1700000000",
		"next 2: UPDOWN loop1 loop0(1) SOFTWARE_LOOPBACK admin UP oper UP at 1700000000",
		"next 3: UPDOWN loop1 loop1(2) SOFTWARE_LOOPBACK admin DOWN oper UP at 1700000000",
		"next 4: UPDOWN loop1 loop1(2) SOFTWARE_LOOPBACK admin DELETED oper DELETED at 1700000000",
	}
	loop1 := loop("loop1")
	if _, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(loop1), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	// In VPP once VPP lists it (its link state), then its link comes up.
	pushLink(t, e, "loop1", false)
	checkNotified(t, "listed by VPP", recvN(t, live, 1), all[:1])
	pushLink(t, e, "loop1", true)
	checkNotified(t, "link up", recvN(t, live, 1), all[1:2])
	// Set admin down (re-created by the test descriptor: a new index).
	down := loop("loop1")
	down.Enabled = false
	if _, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(down), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	checkNotified(t, "admin down", recvN(t, live, 1), all[2:3])
	// Gone from VPP: its value, then its link state.
	if _, err := e.client.Delete(ctx, &ligatocfg.DeleteRequest{Delete: doc(down), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.sched.PushSBNotification(api.KVWithMetadata{Key: ifplugin.LinkStateKey("loop1", true), Origin: api.FromSB}); err != nil {
		t.Fatal(err)
	}
	checkNotified(t, "deleted", recvN(t, live, 1), all[3:])

	for _, c := range []struct {
		idx  uint32
		want []string
	}{
		{0, all[1:]},  // 0 is no longer kept: from the oldest
		{2, all[2:]},  // resume after the second
		{4, nil},      // up to date
		{99, all[1:]}, // an index of an agent before a restart
	} {
		ctx, cancel := context.WithCancel(ctx)
		s, err := e.client.Notify(ctx, &ligatocfg.NotifyRequest{Idx: c.idx})
		if err != nil {
			t.Fatal(err)
		}
		checkNotified(t, fmt.Sprintf("from %d", c.idx), recvN(t, s, len(c.want)), c.want)
		cancel()
		if _, err := s.Recv(); status.Code(err) != codes.Canceled {
			t.Errorf("from %d: after the expected ones %v, want nothing more", c.idx, err)
		}
	}

	// A new notification reaches a waiting stream.
	if _, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(loop1), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	pushLink(t, e, "loop1", true)
	checkNotified(t, "live stream", recvN(t, live, 1), []string{"next 5: UPDOWN loop1 loop2(3) SOFTWARE_LOOPBACK admin UP oper UP at 1700000000"})

	e.srv.Close()
	if _, err := live.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("Recv after Close: %v, want Unavailable", err)
	}
}

// An interface in VPP when the service starts is known: only its changes
// are notified.
func TestNotifyStartsFromTheCurrentStates(t *testing.T) {
	e := newEnv(t, ligato.Options{})
	ctx := ctxOf(t)
	if _, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(loop("loop1")), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	pushLink(t, e, "loop1", true)
	s, err := e.client.Notify(ctx, &ligatocfg.NotifyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recvN(t, s, 1) // loop1 up, from the first service

	// A second service on the same scheduler.
	s2, err := e.serve(t, ligato.Options{}).Notify(ctx, &ligatocfg.NotifyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	pushLink(t, e, "loop1", false)
	got := recvN(t, s2, 1)
	if want := "admin UP oper DOWN"; len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("second service: %v, want the change only (%s)", got, want)
	}
}

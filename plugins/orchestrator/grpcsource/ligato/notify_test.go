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
	ligatolinux "github.com/netagent-io/netagent/proto/ligato/linux"
	ligatovpp "github.com/netagent-io/netagent/proto/ligato/vpp"
	ligatovppif "github.com/netagent-io/netagent/proto/ligato/vpp/interfaces"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
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

// filterOf is a filter of the VPP interface notifications: the type and
// the state the client wants.
func filterOf(typ ligatovppif.InterfaceNotification_NotifType, st *ligatovppif.InterfaceState) *ligatocfg.Notification {
	return &ligatocfg.Notification{Notification: &ligatocfg.Notification_VppNotification{
		VppNotification: &ligatovpp.Notification{Interface: &ligatovppif.InterfaceNotification{Type: typ, State: st}},
	}}
}

// filteredEnv is an agent that has notified, in this order: loop1 in VPP
// with its link down, mem1 (a memif) with its link up, loop1's link up,
// mem1 gone from VPP.
func filteredEnv(t *testing.T) (*env, []string) {
	t.Helper()
	clock := time.Unix(1700000000, 0)
	e := newEnv(t, ligato.Options{Now: func() time.Time { return clock }})
	ctx := ctxOf(t)
	// Each change waited for, so that none is coalesced with the next.
	live, err := e.client.Notify(ctx, &ligatocfg.NotifyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	mem1 := &vppif.Interface{Name: "mem1", Type: vppif.Interface_MEMIF, Enabled: true,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Id: 1, SocketFilename: "/run/vpp/memif.sock"}}}
	if _, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(loop("loop1"), mem1), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	var all []string
	pushLink(t, e, "loop1", false)
	all = append(all, recvN(t, live, 1)...)
	pushLink(t, e, "mem1", true)
	all = append(all, recvN(t, live, 1)...)
	pushLink(t, e, "loop1", true)
	all = append(all, recvN(t, live, 1)...)
	if _, err := e.client.Delete(ctx, &ligatocfg.DeleteRequest{Delete: doc(mem1), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.sched.PushSBNotification(api.KVWithMetadata{Key: ifplugin.LinkStateKey("mem1", true), Origin: api.FromSB}); err != nil {
		t.Fatal(err)
	}
	all = append(all, recvN(t, live, 1)...)
	want := []string{
		"next 1: UPDOWN loop1 loop0(1) SOFTWARE_LOOPBACK admin UP oper DOWN at 1700000000",
		"next 2: UPDOWN mem1 loop1(2) MEMIF admin UP oper UP at 1700000000",
		"next 3: UPDOWN loop1 loop0(1) SOFTWARE_LOOPBACK admin UP oper UP at 1700000000",
		"next 4: UPDOWN mem1 loop1(2) MEMIF admin DELETED oper DELETED at 1700000000",
	}
	checkNotified(t, "unfiltered", all, want)
	return e, want
}

// endFilter matches the notification of the interface "end" only, which
// recvUntilEnd waits for.
var endFilter = filterOf(0, &ligatovppif.InterfaceState{Name: "end"})

// recvUntilEnd receives the notifications before the one of the interface
// "end" (its filter among the stream's): a notification sent that should
// not have been comes before it, since they are sent in order.
func recvUntilEnd(t *testing.T, s notifyStream) []string {
	t.Helper()
	var out []string
	for {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		if r.GetNotification().GetVppNotification().GetInterface().GetState().GetName() == "end" {
			return out
		}
		out = append(out, notified(r))
	}
}

// addEnd makes the interface "end" appear in VPP: the last notification.
func addEnd(t *testing.T, e *env) {
	t.Helper()
	if _, err := e.client.Update(ctxOf(t), &ligatocfg.UpdateRequest{Update: doc(loop("end")), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	pushLink(t, e, "end", true)
}

// Notify sends the notifications that match at least one of the filters:
// those whose fields have each value a filter sets.
func TestNotifyFilters(t *testing.T) {
	e, all := filteredEnv(t)
	ctx := ctxOf(t)
	state := func(st *ligatovppif.InterfaceState) *ligatocfg.Notification { return filterOf(0, st) }
	for _, c := range []struct {
		what    string
		filters []*ligatocfg.Notification
		want    []string
	}{
		{"by name", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{Name: "loop1"})}, []string{all[0], all[2]}},
		{"by oper state UP", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{OperStatus: ligatovppif.InterfaceState_UP})}, []string{all[1], all[2]}},
		{"by oper state DOWN", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{OperStatus: ligatovppif.InterfaceState_DOWN})}, all[:1]},
		{"by admin state DELETED", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{AdminStatus: ligatovppif.InterfaceState_DELETED})}, all[3:]},
		{"by interface type", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{Type: vppif.Interface_MEMIF})}, []string{all[1], all[3]}},
		{"by notification type UPDOWN", []*ligatocfg.Notification{filterOf(ligatovppif.InterfaceNotification_UPDOWN, nil)}, all},
		{"name and state in one filter", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{Name: "loop1", OperStatus: ligatovppif.InterfaceState_UP})}, all[2:3]},
		{"either of two filters", []*ligatocfg.Notification{
			state(&ligatovppif.InterfaceState{Name: "mem1"}), state(&ligatovppif.InterfaceState{OperStatus: ligatovppif.InterfaceState_DOWN}),
		}, []string{all[0], all[1], all[3]}},
		{"no match: another name", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{Name: "loop9"})}, nil},
		{"no match: COUNTERS", []*ligatocfg.Notification{filterOf(ligatovppif.InterfaceNotification_COUNTERS, nil)}, nil},
		{"no match: Linux", []*ligatocfg.Notification{{Notification: &ligatocfg.Notification_LinuxNotification{LinuxNotification: &ligatolinux.Notification{}}}}, nil},
		// As in the original: a filter without fields set filters nothing.
		{"empty filter", []*ligatocfg.Notification{{}}, all},
	} {
		s, err := e.client.Notify(ctx, &ligatocfg.NotifyRequest{Filters: append(c.filters, endFilter)})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { checkNotified(t, c.what, recvUntilEnd(t, s), c.want) }()
	}
	addEnd(t, e) // then each stream is read to the end
}

// The indexes of filtered notifications are those of all: a client
// resumes with the next_idx of the last one it received, or any index,
// and gets the matching ones from there.
func TestNotifyFiltersResume(t *testing.T) {
	e, all := filteredEnv(t)
	ctx := ctxOf(t)
	loop1 := []*ligatocfg.Notification{filterOf(0, &ligatovppif.InterfaceState{Name: "loop1"}), endFilter}
	var streams []notifyStream
	for _, idx := range []uint32{0, 1, 2, 3, 4} {
		s, err := e.client.Notify(ctx, &ligatocfg.NotifyRequest{Idx: idx, Filters: loop1})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	addEnd(t, e)
	for idx, want := range [][]string{
		{all[0], all[2]}, // next_idx 1, then 3: the one between filtered out
		{all[2]},         // resumed after the first received
		{all[2]},         // at a filtered-out one
		nil,              // resumed after the last received
		nil,              // up to date
	} {
		checkNotified(t, fmt.Sprintf("from %d", idx), recvUntilEnd(t, streams[idx]), want)
	}
}

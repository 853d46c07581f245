package nlbatch_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
)

// routeFields is what RouteSubscribe fills of a route update, printed.
func routeFields(u netlink.RouteUpdate) string {
	r := u.Route
	s := fmt.Sprintf("type %d flags %#x family %d dst %v gw %v src %v table %d proto %d scope %d rtype %d tos %d rflags %d metric %d oif %d iif %d realm %d",
		u.Type, u.NlFlags, r.Family, r.Dst, r.Gw, r.Src, r.Table, r.Protocol, r.Scope, r.Type, r.Tos, r.Flags, r.Priority, r.LinkIndex, r.ILinkIndex, r.Realm)
	for _, nh := range r.MultiPath {
		s += fmt.Sprintf(" nexthop{oif %d hops %d flags %d gw %v}", nh.LinkIndex, nh.Hops, nh.Flags, nh.Gw)
	}
	return s
}

// watched is a test's namespace with two subscriptions to compare: its
// handle, their done channel and their errors.
type watched struct {
	*env
	h     netns.NsHandle
	done  chan struct{}
	errs  chan error
	onErr func(error)
}

func newWatched(t *testing.T) *watched {
	e := newEnv(t)
	h, err := netns.GetFromName(e.ref.Reference)
	if err != nil {
		t.Fatal(err)
	}
	w := &watched{env: e, h: h, done: make(chan struct{}), errs: make(chan error, 16)}
	w.onErr = func(err error) {
		select {
		case w.errs <- err:
		default:
		}
	}
	t.Cleanup(func() {
		close(w.done)
		h.Close()
	})
	return w
}

// enter runs f in the namespace, as the drift watcher does (the handle
// it holds, not the name).
func (w *watched) enter(f func() error) error { return w.mgr.DoAt(w.h, f) }

// skipTo drops what both subscriptions got before the notification of a
// marker made once both exist (mark), so that the comparison starts at
// the same place: the namespace's own late notifications (a link-local
// or local route of the set-up) may reach the first subscription before
// the second is open.
func skipTo[T any](w *watched, ours, lib <-chan T, mark func(), isMark func(T) bool) {
	t := w.t
	t.Helper()
	mark()
	deadline := time.After(10 * time.Second)
	for _, ch := range []<-chan T{ours, lib} {
		for found := false; !found; {
			select {
			case u := <-ch:
				found = isMark(u)
			case err := <-w.errs:
				t.Fatalf("subscription error: %v", err)
			case <-deadline:
				t.Fatal("after 10 s: the marker's notification did not come")
			}
		}
	}
}

// compare reads both subscriptions until each gave at least least
// notifications and as many as the other, and compares them in order.
func compare[T any](w *watched, ours, lib <-chan T, least int, format func(T) string) []string {
	t := w.t
	t.Helper()
	deadline := time.After(10 * time.Second)
	var got, want []string
	for len(got) < least || len(got) != len(want) {
		select {
		case u := <-ours:
			got = append(got, format(u))
		case u := <-lib:
			want = append(want, format(u))
		case err := <-w.errs:
			t.Fatalf("subscription error: %v", err)
		case <-deadline:
			t.Fatalf("after 10 s: %d notifications from ours, %d from the library, want %d or more from both", len(got), len(want), least)
		}
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("notification %d:\nours        %s\nthe library %s", i, got[i], want[i])
		}
	}
	return got
}

// TestRouteSubscribeAsTheLibrary: RouteSubscribe and the library's
// subscription, on one namespace, see the same notifications with the
// same fields (those RouteSubscribe fills) for routes of every kind the
// agent and an operator make: IPv4 and IPv6, default, via a gateway or on
// the link, another table, a preferred source, a TOS, multipath, deleted.
func TestRouteSubscribeAsTheLibrary(t *testing.T) {
	w := newWatched(t)
	e, h, done, onErr := w.env, w.h, w.done, w.onErr
	lib := make(chan netlink.RouteUpdate, 1024)
	if err := netlink.RouteSubscribeWithOptions(lib, done, netlink.RouteSubscribeOptions{Namespace: &h, ErrorCallback: onErr}); err != nil {
		t.Fatal(err)
	}
	ours := make(chan netlink.RouteUpdate, 1024)
	if err := nlbatch.RouteSubscribe(ours, done, nlbatch.Subscription{Enter: w.enter, ReceiveBufferSize: 1 << 20, OnError: onErr}); err != nil {
		t.Fatal(err)
	}
	marker := &netlink.Route{LinkIndex: e.link, Dst: cidr("10.250.0.0/16"), Scope: netlink.SCOPE_LINK, Protocol: 181}
	skipTo(w, ours, lib, func() {
		if err := e.h.RouteAdd(marker); err != nil {
			t.Fatalf("adding the marker %s: %v", marker.Dst, err)
		}
	}, func(u netlink.RouteUpdate) bool { return u.Dst != nil && u.Dst.String() == "10.250.0.0/16" })
	d1, err := e.h.LinkByName("d1")
	if err != nil {
		t.Fatal(err)
	}
	routes := testRoutes(e.link)
	routes = append(routes,
		&netlink.Route{LinkIndex: e.link, Dst: cidr("::/0"), Gw: net.ParseIP("2001:db8:7::fe"), Protocol: 181},
		&netlink.Route{LinkIndex: e.link, Dst: cidr("10.5.0.0/16"), Gw: net.ParseIP("192.168.7.254"), Table: 100, Protocol: 181},
		&netlink.Route{LinkIndex: e.link, Dst: cidr("10.6.0.0/16"), Src: net.ParseIP("192.168.7.1"), Scope: netlink.SCOPE_LINK, Protocol: 181},
		&netlink.Route{LinkIndex: e.link, Dst: cidr("10.7.0.0/16"), Gw: net.ParseIP("192.168.7.254"), Tos: 4, Protocol: 181},
		&netlink.Route{Dst: cidr("10.8.0.0/16"), Protocol: 181, MultiPath: []*netlink.NexthopInfo{
			{LinkIndex: e.link, Gw: net.ParseIP("192.168.7.253"), Hops: 1},
			{LinkIndex: d1.Attrs().Index, Gw: net.ParseIP("192.168.8.1"), Flags: int(netlink.FLAG_ONLINK)},
		}},
	)
	for _, r := range routes {
		if err := e.h.RouteAdd(r); err != nil {
			t.Fatalf("adding %s: %v", r, err)
		}
	}
	for _, r := range routes {
		if err := e.h.RouteDel(r); err != nil {
			t.Fatalf("deleting %s: %v", r, err)
		}
	}
	// Both see the same notifications; at least one per add and delete.
	got := compare(w, ours, lib, 2*len(routes), routeFields)
	multipath := 0
	for _, g := range got {
		if strings.Contains(g, "nexthop{") {
			multipath++
		}
	}
	if multipath < 2 {
		t.Errorf("%d multipath notifications, want the add and the delete", multipath)
	}
}

// TestRouteSubscribeEnds: closing done ends the subscription and closes
// its channel, with no error reported.
func TestRouteSubscribeEnds(t *testing.T) {
	w := newWatched(t)
	e := w.env
	done := make(chan struct{})          // not w's: closed here
	ch := make(chan netlink.RouteUpdate) // unbuffered: the sender may be blocked
	var reported error
	if err := nlbatch.RouteSubscribe(ch, done, nlbatch.Subscription{Enter: w.enter, OnError: func(err error) { reported = err }}); err != nil {
		t.Fatal(err)
	}
	if err := e.h.RouteAdd(testRoutes(e.link)[0]); err != nil {
		t.Fatal(err)
	}
	close(done)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				if reported != nil {
					t.Errorf("ending reported %v", reported)
				}
				return
			}
		case <-timeout:
			t.Fatal("the channel is still open 10 s after done closed")
		}
	}
}

// TestNeighSubscribeAsTheLibrary: NeighSubscribe and the library's
// subscription see the same neighbour notifications (permanent and
// dynamic entries, IPv4 and IPv6, changed and deleted).
func TestNeighSubscribeAsTheLibrary(t *testing.T) {
	w := newWatched(t)
	e, h, done, onErr := w.env, w.h, w.done, w.onErr
	lib := make(chan netlink.NeighUpdate, 1024)
	if err := netlink.NeighSubscribeWithOptions(lib, done, netlink.NeighSubscribeOptions{Namespace: &h, ErrorCallback: onErr}); err != nil {
		t.Fatal(err)
	}
	ours := make(chan netlink.NeighUpdate, 1024)
	if err := nlbatch.NeighSubscribe(ours, done, nlbatch.Subscription{Enter: w.enter, OnError: onErr}); err != nil {
		t.Fatal(err)
	}
	mac := func(s string) net.HardwareAddr { return must[net.HardwareAddr](t)(net.ParseMAC(s)) }
	marker := &netlink.Neigh{LinkIndex: e.link, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT, IP: net.ParseIP("192.168.7.250"), HardwareAddr: mac("02:00:00:00:02:50")}
	skipTo(w, ours, lib, func() {
		if err := e.h.NeighSet(marker); err != nil {
			t.Fatalf("adding the marker %s: %v", marker.IP, err)
		}
	}, func(u netlink.NeighUpdate) bool { return u.IP.Equal(marker.IP) })
	neighs := []*netlink.Neigh{
		{LinkIndex: e.link, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT, IP: net.ParseIP("192.168.7.20"), HardwareAddr: mac("02:00:00:00:00:20")},
		{LinkIndex: e.link, Family: netlink.FAMILY_V6, State: netlink.NUD_PERMANENT, IP: net.ParseIP("2001:db8:7::20"), HardwareAddr: mac("02:00:00:00:00:21")},
		{LinkIndex: e.link, Family: netlink.FAMILY_V4, State: netlink.NUD_STALE, IP: net.ParseIP("192.168.7.21"), HardwareAddr: mac("02:00:00:00:00:22")},
	}
	for _, n := range neighs {
		if err := e.h.NeighSet(n); err != nil {
			t.Fatal(err)
		}
	}
	changed := *neighs[0]
	changed.HardwareAddr = mac("02:00:00:00:00:30")
	if err := e.h.NeighSet(&changed); err != nil {
		t.Fatal(err)
	}
	for _, n := range neighs {
		if err := e.h.NeighDel(n); err != nil {
			t.Fatal(err)
		}
	}
	compare(w, ours, lib, 2*len(neighs)+1, func(u netlink.NeighUpdate) string { return fmt.Sprintf("%d %+v", u.Type, u.Neigh) })
}

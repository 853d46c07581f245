package nlbatch_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// env is a namespace of the test's own with a veth link d0 (peer d1) (up, with
// 192.168.7.1/24 and 2001:db8:7::1/64), a Manager and a Pool.
type env struct {
	t    *testing.T
	ref  nsplugin.Ref
	h    *netlink.Handle
	pool *nlbatch.Pool
	mgr  *nsplugin.Manager
	link int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
	name := fmt.Sprintf("nlb-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	if len(name) > 40 {
		name = name[:40]
	}
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	for _, args := range [][]string{
		{"link", "add", "d0", "type", "veth", "peer", "name", "d1"},
		{"link", "set", "d1", "up"},
		{"link", "set", "d0", "up"},
		{"addr", "add", "192.168.7.1/24", "dev", "d0"},
		{"-6", "addr", "add", "2001:db8:7::1/64", "dev", "d0", "nodad"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	mgr, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mgr.Close)
	e := &env{t: t, ref: nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: name}, pool: nlbatch.NewPool(mgr), mgr: mgr}
	t.Cleanup(e.pool.Close)
	if e.h, err = mgr.Handle(e.ref, false); err != nil {
		t.Fatal(err)
	}
	l, err := e.h.LinkByName("d0")
	if err != nil {
		t.Fatal(err)
	}
	e.link = l.Attrs().Index
	return e
}

// run executes messages on the pool and returns their errors.
func (e *env) run(msgs ...*nl.NetlinkRequest) []error {
	reqs := make([]*nlbatch.Request, len(msgs))
	for i, m := range msgs {
		reqs[i] = &nlbatch.Request{NS: e.ref, Msg: m}
	}
	e.pool.Run(reqs)
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		errs[i] = r.Err
	}
	return errs
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func cidr(s string) *net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip.Mask(n.Mask)
	return n
}

// testRoutes are routes as the l3plugin makes them: with and without a
// gateway, scopes, metrics, IPv4 and IPv6.
func testRoutes(link int) []*netlink.Route {
	return []*netlink.Route{
		{LinkIndex: link, Dst: cidr("10.1.0.0/16"), Gw: net.ParseIP("192.168.7.254"), Scope: netlink.SCOPE_UNIVERSE, Priority: 10, Protocol: 181, Table: syscall.RT_TABLE_MAIN},
		{LinkIndex: link, Dst: cidr("10.2.0.0/24"), Scope: netlink.SCOPE_LINK, Protocol: 181, Table: syscall.RT_TABLE_MAIN},
		{LinkIndex: link, Dst: cidr("10.3.3.3/32"), Scope: netlink.SCOPE_HOST, Priority: 5, Protocol: 181, Table: syscall.RT_TABLE_MAIN},
		{LinkIndex: link, Dst: cidr("0.0.0.0/0"), Gw: net.ParseIP("192.168.7.254"), Scope: netlink.SCOPE_UNIVERSE, Priority: 100, Protocol: 181, Table: syscall.RT_TABLE_MAIN},
		{LinkIndex: link, Dst: cidr("2001:db8:100::/48"), Gw: net.ParseIP("2001:db8:7::fe"), Priority: 1024, Protocol: 181, Table: syscall.RT_TABLE_MAIN},
		{LinkIndex: link, Dst: cidr("2001:db8:200::/64"), Scope: netlink.SCOPE_LINK, Priority: 7, Protocol: 181, Table: syscall.RT_TABLE_MAIN},
	}
}

// ourRoutes dumps the routes of protocol 181, without what the kernel
// makes up per object (the cache info).
func (e *env) ourRoutes() []netlink.Route {
	routes := must[[]netlink.Route](e.t)(e.h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: 181}, netlink.RT_FILTER_PROTOCOL))
	slices.SortFunc(routes, func(a, b netlink.Route) int { return strings.Compare(a.Dst.String(), b.Dst.String()) })
	return routes
}

// TestEquivalentToLibrary adds routes, neighbours and addresses with the
// netlink library's Handle and then with the batch builders, and compares
// what the kernel keeps of each, field by field.
func TestEquivalentToLibrary(t *testing.T) {
	e := newEnv(t)
	routes := testRoutes(e.link)
	neighs := []*netlink.Neigh{
		{LinkIndex: e.link, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT, IP: net.ParseIP("192.168.7.20"), HardwareAddr: must[net.HardwareAddr](t)(net.ParseMAC("02:00:00:00:00:20"))},
		{LinkIndex: e.link, Family: netlink.FAMILY_V6, State: netlink.NUD_PERMANENT, IP: net.ParseIP("2001:db8:7::20"), HardwareAddr: must[net.HardwareAddr](t)(net.ParseMAC("02:00:00:00:00:21"))},
	}
	addrs := []string{"10.9.9.1/24", "10.9.8.1/32", "10.9.7.1/31", "2001:db8:9::1/64"}

	readBack := func() (rs []netlink.Route, ns []netlink.Neigh, as []netlink.Addr) {
		rs = e.ourRoutes()
		for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			for _, n := range must[[]netlink.Neigh](t)(e.h.NeighList(e.link, fam)) {
				if n.State == netlink.NUD_PERMANENT {
					ns = append(ns, n)
				}
			}
		}
		link := must[netlink.Link](t)(e.h.LinkByIndex(e.link))
		for _, a := range must[[]netlink.Addr](t)(e.h.AddrList(link, netlink.FAMILY_ALL)) {
			if a.IP.IsLinkLocalUnicast() || a.IP.Equal(net.ParseIP("192.168.7.1")) || a.IP.Equal(net.ParseIP("2001:db8:7::1")) {
				continue
			}
			a.PreferedLft, a.ValidLft = 0, 0 // the kernel's clock
			as = append(as, a)
		}
		return rs, ns, as
	}
	parsed := func(s string) *netlink.Addr { return must[*netlink.Addr](t)(netlink.ParseAddr(s)) }

	// The library, one request at a time.
	link := must[netlink.Link](t)(e.h.LinkByIndex(e.link))
	for _, r := range routes {
		if err := e.h.RouteAdd(r); err != nil {
			t.Fatalf("RouteAdd %s: %v", r, err)
		}
	}
	for _, n := range neighs {
		if err := e.h.NeighSet(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range addrs {
		if err := e.h.AddrAdd(link, parsed(a)); err != nil {
			t.Fatal(err)
		}
	}
	libRoutes, libNeighs, libAddrs := readBack()
	if len(libRoutes) != len(routes) || len(libNeighs) != len(neighs) || len(libAddrs) != len(addrs) {
		t.Fatalf("library: %d routes, %d neighbours, %d addresses in the kernel", len(libRoutes), len(libNeighs), len(libAddrs))
	}
	for _, r := range routes {
		del := *r
		del.Scope = netlink.SCOPE_NOWHERE
		if err := e.h.RouteDel(&del); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range neighs {
		if err := e.h.NeighDel(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range addrs {
		if err := e.h.AddrDel(link, parsed(a)); err != nil {
			t.Fatal(err)
		}
	}
	if rs, ns, as := readBack(); len(rs)+len(ns)+len(as) != 0 {
		t.Fatalf("left after the library's deletes: %v %v %v", rs, ns, as)
	}

	// The same through the batch builders, in one batch.
	var msgs []*nl.NetlinkRequest
	for _, r := range routes {
		msgs = append(msgs, must[*nl.NetlinkRequest](t)(nlbatch.RouteAdd(r)))
	}
	for _, n := range neighs {
		msgs = append(msgs, must[*nl.NetlinkRequest](t)(nlbatch.NeighSet(n)))
	}
	for _, a := range addrs {
		msgs = append(msgs, must[*nl.NetlinkRequest](t)(nlbatch.AddrAdd(e.link, parsed(a))))
	}
	for i, err := range e.run(msgs...) {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	batchRoutes, batchNeighs, batchAddrs := readBack()
	if !reflect.DeepEqual(batchRoutes, libRoutes) {
		t.Errorf("routes differ:\nbatch   %+v\nlibrary %+v", batchRoutes, libRoutes)
	}
	if !reflect.DeepEqual(batchNeighs, libNeighs) {
		t.Errorf("neighbours differ:\nbatch   %+v\nlibrary %+v", batchNeighs, libNeighs)
	}
	if !reflect.DeepEqual(batchAddrs, libAddrs) {
		t.Errorf("addresses differ:\nbatch   %+v\nlibrary %+v", batchAddrs, libAddrs)
	}

	// RouteReplace: a new gateway in place.
	moved := *routes[0]
	moved.Gw = net.ParseIP("192.168.7.253")
	if err := e.run(must[*nl.NetlinkRequest](t)(nlbatch.RouteReplace(&moved)))[0]; err != nil {
		t.Fatal(err)
	}
	for _, got := range e.ourRoutes() {
		if got.Dst.String() == moved.Dst.String() && (!got.Gw.Equal(moved.Gw) || got.Priority != 10) {
			t.Errorf("after RouteReplace: %s", got)
		}
	}
	routes[0] = &moved // the kernel matches the gateway of a delete

	// And the deletes.
	msgs = msgs[:0]
	for _, r := range routes {
		del := *r
		del.Scope = netlink.SCOPE_NOWHERE
		msgs = append(msgs, must[*nl.NetlinkRequest](t)(nlbatch.RouteDel(&del)))
	}
	for _, n := range neighs {
		msgs = append(msgs, must[*nl.NetlinkRequest](t)(nlbatch.NeighDel(&netlink.Neigh{LinkIndex: n.LinkIndex, Family: n.Family, IP: n.IP})))
	}
	for _, a := range addrs {
		msgs = append(msgs, must[*nl.NetlinkRequest](t)(nlbatch.AddrDel(e.link, parsed(a))))
	}
	for i, err := range e.run(msgs...) {
		if err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
	}
	if rs, ns, as := readBack(); len(rs)+len(ns)+len(as) != 0 {
		t.Fatalf("left after the batch's deletes: %v %v %v", rs, ns, as)
	}
}

// TestEachRequestItsOwnResult: failures in the middle of a batch do not
// stop the requests after them, each gets its own errno, and the order is
// the kernel's order (a delete then an add of the same route).
func TestEachRequestItsOwnResult(t *testing.T) {
	e := newEnv(t)
	ok := &netlink.Route{LinkIndex: e.link, Dst: cidr("10.1.0.0/16"), Gw: net.ParseIP("192.168.7.254"), Priority: 10, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
	unreachable := &netlink.Route{LinkIndex: e.link, Dst: cidr("10.2.0.0/16"), Gw: net.ParseIP("172.16.0.1"), Priority: 10, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
	noLink := &netlink.Route{LinkIndex: 9999, Dst: cidr("10.3.0.0/16"), Scope: netlink.SCOPE_LINK, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
	other := &netlink.Route{LinkIndex: e.link, Dst: cidr("10.4.0.0/16"), Scope: netlink.SCOPE_LINK, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
	missing := &netlink.Route{LinkIndex: e.link, Dst: cidr("10.5.0.0/16"), Scope: netlink.SCOPE_NOWHERE, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
	del := *ok
	del.Scope = netlink.SCOPE_NOWHERE
	readd := *ok
	readd.Gw = net.ParseIP("192.168.7.253")
	b := must[*nl.NetlinkRequest](t)
	errs := e.run(
		b(nlbatch.RouteAdd(ok)),
		b(nlbatch.RouteAdd(unreachable)),
		b(nlbatch.RouteAdd(noLink)),
		b(nlbatch.RouteAdd(ok)), // again: EEXIST
		b(nlbatch.RouteAdd(other)),
		b(nlbatch.RouteDel(missing)),
		b(nlbatch.RouteDel(&del)),
		b(nlbatch.RouteAdd(&readd)), // same identity as ok, after its delete
	)
	want := []error{nil, syscall.ENETUNREACH, syscall.ENODEV, syscall.EEXIST, nil, syscall.ESRCH, nil, nil}
	for i := range want {
		if (want[i] == nil) != (errs[i] == nil) || (want[i] != nil && !errors.Is(errs[i], want[i])) {
			t.Errorf("request %d: got %v, want %v", i, errs[i], want[i])
		}
	}
	routes := e.ourRoutes()
	if len(routes) != 2 || routes[0].Dst.String() != "10.1.0.0/16" || !routes[0].Gw.Equal(readd.Gw) || routes[1].Dst.String() != "10.4.0.0/16" {
		t.Errorf("kernel has %v, want 10.1.0.0/16 via 192.168.7.253 and 10.4.0.0/16", routes)
	}
}

// TestManyInFlight: far more requests than the window, all acked, none
// lost (the receive buffer holds a window of acks, errors included).
func TestManyInFlight(t *testing.T) {
	e := newEnv(t)
	const n = 5000
	var msgs []*nl.NetlinkRequest
	for i := range n {
		r := &netlink.Route{LinkIndex: e.link, Dst: cidr(fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)), Gw: net.ParseIP("192.168.7.254"), Priority: 10, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
		if i%3 == 0 {
			r.Gw = net.ParseIP("172.16.0.1") // ENETUNREACH: errors with the kernel's message
		}
		msgs = append(msgs, must[*nl.NetlinkRequest](t)(nlbatch.RouteAdd(r)))
	}
	failed := 0
	for i, err := range e.run(msgs...) {
		switch {
		case i%3 == 0 && errors.Is(err, syscall.ENETUNREACH):
			failed++
		case i%3 != 0 && err == nil:
		default:
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := len(e.ourRoutes()); got != n-failed {
		t.Errorf("%d routes in the kernel, want %d", got, n-failed)
	}
}

// TestNamespaceGoneAndBack: a namespace that is gone fails its requests
// with os.ErrNotExist; made again under the same name it gets a new
// socket (not one of the deleted namespace).
func TestNamespaceGoneAndBack(t *testing.T) {
	e := newEnv(t)
	r := &netlink.Route{LinkIndex: 1, Dst: cidr("10.1.0.0/16"), Scope: netlink.SCOPE_HOST, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
	if err := e.run(must[*nl.NetlinkRequest](t)(nlbatch.RouteAdd(r)))[0]; err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "netns", "del", e.ref.Reference).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := e.run(must[*nl.NetlinkRequest](t)(nlbatch.RouteAdd(r)))[0]; !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("namespace gone: got %v", err)
	}
	if out, err := exec.Command("ip", "netns", "add", e.ref.Reference).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	_ = exec.Command("ip", "-n", e.ref.Reference, "link", "set", "lo", "up").Run()
	if err := e.run(must[*nl.NetlinkRequest](t)(nlbatch.RouteAdd(r)))[0]; err != nil {
		t.Fatalf("in the new namespace: %v", err)
	}
	out, _ := exec.Command("ip", "-n", e.ref.Reference, "route", "show", "table", "main", "proto", "181").CombinedOutput()
	if !strings.Contains(string(out), "10.1.0.0/16") {
		t.Errorf("route not in the new namespace: %s", out)
	}
}

// TestOneAckASend: only the last request of each send asks for an ack,
// yet every request gets its own result: the kernel answers each failure
// (at the start and the end of a send, across the window's boundary, the
// very last request), and the ack of a send's last request stands for
// the requests before it without an answer. Far fewer answers than
// requests are read.
func TestOneAckASend(t *testing.T) {
	e := newEnv(t)
	const n = 3*nlbatch.Window + 7
	fails := map[int]bool{0: true, 1: true, nlbatch.Window - 1: true, nlbatch.Window: true, 2*nlbatch.Window - 1: true, 2 * nlbatch.Window: true, n - 1: true}
	var msgs []*nl.NetlinkRequest
	for i := range n {
		r := &netlink.Route{LinkIndex: e.link, Dst: cidr(fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)), Gw: net.ParseIP("192.168.7.254"), Priority: 10, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
		if fails[i] {
			r.Gw = net.ParseIP("172.16.0.1") // ENETUNREACH
		}
		msgs = append(msgs, must[*nl.NetlinkRequest](t)(nlbatch.RouteAdd(r)))
	}
	conn := must[*nlbatch.Conn](t)(e.pool.Conn(e.ref))
	before := conn.Answers()
	for i, err := range e.run(msgs...) {
		if fails[i] != errors.Is(err, syscall.ENETUNREACH) || (!fails[i] && err != nil) {
			t.Errorf("request %d (failing %v): %v", i, fails[i], err)
		}
	}
	if got := len(e.ourRoutes()); got != n-len(fails) {
		t.Errorf("%d routes in the kernel, want %d", got, n-len(fails))
	}
	answers := conn.Answers() - before
	if answers < uint64(len(fails)) || answers > n/20 {
		t.Errorf("%d answers read for %d requests (%d failing): want the failures and one ack a send", answers, n, len(fails))
	}

	// Every request fails (routes added above): each its own errno, and
	// one answer each.
	const again = 500 // requests 2 to 501: none of them failed above
	var dup []*nl.NetlinkRequest
	for i := 2; i < 2+again; i++ {
		r := &netlink.Route{LinkIndex: e.link, Dst: cidr(fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)), Gw: net.ParseIP("192.168.7.254"), Priority: 10, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
		dup = append(dup, must[*nl.NetlinkRequest](t)(nlbatch.RouteAdd(r)))
	}
	before = conn.Answers()
	for i, err := range e.run(dup...) {
		if !errors.Is(err, syscall.EEXIST) {
			t.Errorf("request %d again: %v, want EEXIST", i, err)
		}
	}
	if got := conn.Answers() - before; got != again {
		t.Errorf("%d answers for %d requests that all failed, want one each", got, again)
	}
}

// TestRepliesWithAcks: a request whose Reply is set gets the kernel's
// messages before its ack (an RTM_GETLINK's link), in a batch with other
// requests; every request of that batch asks for its ack.
func TestRepliesWithAcks(t *testing.T) {
	e := newEnv(t)
	get := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
	info := nl.NewIfInfomsg(unix.AF_UNSPEC)
	info.Index = int32(e.link)
	get.AddData(info)
	var replies []syscall.NetlinkMessage
	add := func(dst string) *nlbatch.Request {
		r := &netlink.Route{LinkIndex: e.link, Dst: cidr(dst), Scope: netlink.SCOPE_LINK, Protocol: 181, Table: syscall.RT_TABLE_MAIN}
		return &nlbatch.Request{NS: e.ref, Msg: must[*nl.NetlinkRequest](t)(nlbatch.RouteAdd(r))}
	}
	reqs := []*nlbatch.Request{
		add("10.7.0.0/16"),
		{NS: e.ref, Msg: get, Reply: func(m syscall.NetlinkMessage) { replies = append(replies, m) }},
		add("10.8.0.0/16"),
		add("10.7.0.0/16"), // EEXIST
	}
	conn := must[*nlbatch.Conn](t)(e.pool.Conn(e.ref))
	before := conn.Answers()
	e.pool.Run(reqs)
	for i, want := range []error{nil, nil, nil, syscall.EEXIST} {
		if err := reqs[i].Err; (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("request %d: %v, want %v", i, err, want)
		}
	}
	if len(replies) != 1 || replies[0].Header.Type != unix.RTM_NEWLINK {
		t.Fatalf("replies to the RTM_GETLINK: %v, want the link", replies)
	}
	if got := conn.Answers() - before; got != 4 {
		t.Errorf("%d answers, want 4 (every request acked when one wants its replies)", got)
	}
}

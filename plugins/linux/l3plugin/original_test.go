package l3plugin_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// handle returns the netlink handle of the test namespace.
func (e *env) handle() *netlink.Handle {
	e.tb.Helper()
	h, err := e.mgr.Handle(nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: e.ns}, false)
	if err != nil {
		e.tb.Fatal(err)
	}
	return h
}

// addAsTheOriginal adds the route of value r as the original agent
// (Ligato vpp-agent) did: netlink's RouteAdd without a protocol (the
// kernel records boot), the value's scope and metric as they are.
func (e *env) addAsTheOriginal(r *linuxl3.Route) {
	e.tb.Helper()
	h := e.handle()
	l, err := h.LinkByName(r.GetOutgoingInterface())
	if err != nil {
		e.tb.Fatal(err)
	}
	_, dst, err := net.ParseCIDR(r.GetDstNetwork())
	if err != nil {
		e.tb.Fatal(err)
	}
	scope := map[linuxl3.Route_Scope]netlink.Scope{
		linuxl3.Route_GLOBAL: netlink.SCOPE_UNIVERSE, linuxl3.Route_SITE: netlink.SCOPE_SITE,
		linuxl3.Route_LINK: netlink.SCOPE_LINK, linuxl3.Route_HOST: netlink.SCOPE_HOST,
	}[r.GetScope()]
	kr := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: dst, Gw: net.ParseIP(r.GetGwAddr()), Scope: scope, Priority: int(r.GetMetric())}
	if err := h.RouteAdd(kr); err != nil {
		e.tb.Fatalf("adding %v as the original agent: %v", r, err)
	}
}

// routeEvents records the route events of the test namespace from now on.
type routeEvents struct {
	tb testing.TB
	ch chan netlink.RouteUpdate
	ip func(args ...string) string
}

func (e *env) watchRoutes() *routeEvents {
	e.tb.Helper()
	nsh, err := netns.GetFromName(e.ns)
	if err != nil {
		e.tb.Fatal(err)
	}
	e.tb.Cleanup(func() { _ = nsh.Close() })
	w := &routeEvents{tb: e.tb, ch: make(chan netlink.RouteUpdate, 4096), ip: e.ip}
	done := make(chan struct{})
	e.tb.Cleanup(func() { close(done) })
	err = netlink.RouteSubscribeWithOptions(w.ch, done, netlink.RouteSubscribeOptions{
		Namespace: &nsh,
		ErrorCallback: func(err error) {
			select {
			case <-done: // the subscription's socket closed at cleanup
			default:
				e.tb.Errorf("route events: %v", err)
			}
		},
	})
	if err != nil {
		e.tb.Fatal(err)
	}
	return w
}

// until returns the events up to the addition of a marker route (added
// now, on link dev, and deleted again): the kernel sends the events of one
// namespace in order, so every event of what happened before is in.
func (w *routeEvents) until(dev string) []netlink.RouteUpdate {
	w.tb.Helper()
	const marker = "10.254.254.0/24"
	w.ip("route", "add", marker, "dev", dev, "proto", "static")
	defer w.ip("route", "del", marker, "dev", dev, "proto", "static")
	var got []netlink.RouteUpdate
	deadline := time.After(10 * time.Second)
	for {
		select {
		case u := <-w.ch:
			if u.Type == unix.RTM_NEWROUTE && u.Dst != nil && u.Dst.String() == marker {
				return got
			}
			got = append(got, u)
		case <-deadline:
			w.tb.Fatalf("the marker route's event did not come within 10s (%d events before)", len(got))
		}
	}
}

// commitErrors runs a transaction and returns the keys that failed, with
// their errors (any other error of the commit fails the test).
func (e *env) commitErrors(opts api.TxnOptions, kvs ...kv) (uint64, map[string]error) {
	e.tb.Helper()
	txn := e.s.StartNBTransaction()
	for _, p := range kvs {
		txn.SetValue(p.key, p.value)
	}
	seq, err := txn.Commit(context.Background(), opts)
	failed := map[string]error{}
	if err == nil {
		return seq, failed
	}
	var te *api.TransactionError
	if !errors.As(err, &te) || te.TxnInitError != nil {
		e.tb.Fatalf("commit: %v", err)
	}
	for _, ke := range te.KVErrors {
		failed[ke.Key] = ke.Error
	}
	return seq, failed
}

// lines returns the lines of `ip route show` (family, then args) that
// start with dst.
func (e *env) routeLines(family, dst string, args ...string) []string {
	e.tb.Helper()
	var out []string
	for _, l := range strings.Split(e.ip(append([]string{family, "route", "show"}, args...)...), "\n") {
		if strings.HasPrefix(l, dst+" ") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// TestAdoptTheOriginalsRoutes: on a host where the original agent added
// the routes of the NB's values (protocol boot, the same destination,
// gateway, metric, scope and link), the first full resync takes each over
// with one CREATE that replaces it in place: the kernel never loses the
// route (no RTM_DELROUTE), it has protocol 181 afterwards, the value is
// CONFIGURED, and the next resync executes nothing. An ARP entry the
// original set is adopted as it is. Foreign routes that differ in
// anything (gateway, scope, link, an attribute the model lacks, protocol)
// are refused with the reason and left as they are; one of another metric
// is not in the way and stays beside ours.
func TestAdoptTheOriginalsRoutes(t *testing.T) {
	e := newEnv(t)
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	e.ip("addr", "add", "2001:db8:1::1/64", "dev", "v0", "nodad")

	adopted := []kv{
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/24", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.2.0.0/16", Scope: linuxl3.Route_LINK, Metric: 7}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "0.0.0.0/0", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL, Metric: 900}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.4.0.0/24", Scope: linuxl3.Route_HOST}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "2001:db8:2::/64", GwAddr: "2001:db8:1::fe", Scope: linuxl3.Route_GLOBAL}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "2001:db8:3::/64", Scope: linuxl3.Route_LINK, Metric: 100}),
	}
	for _, r := range adopted {
		e.addAsTheOriginal(r.value.(*linuxl3.Route))
	}
	mac := "02:00:00:00:00:07"
	arpEntry := arp(t, &linuxl3.ARPEntry{Interface: "v0", IpAddress: "192.168.1.7", HwAddress: mac})
	hw, _ := net.ParseMAC(mac)
	v0, err := e.handle().LinkByName("v0")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.handle().NeighSet(&netlink.Neigh{LinkIndex: v0.Attrs().Index, IP: net.ParseIP("192.168.1.7"),
		HardwareAddr: hw, State: netlink.NUD_PERMANENT}); err != nil {
		t.Fatal(err)
	}

	// Foreign routes in the way of a value, each differing in one thing.
	type refusal struct {
		value kv
		add   []string // ip route add ...
		why   string
	}
	refused := []refusal{
		{route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.20.0.0/24", GwAddr: "192.168.1.254"}),
			[]string{"10.20.0.0/24", "via", "192.168.1.253", "dev", "v0", "proto", "boot"},
			"not the route this value asks for (10.20.0.0/24 via 192.168.1.253"},
		{route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.21.0.0/24", Scope: linuxl3.Route_LINK}),
			[]string{"10.21.0.0/24", "dev", "v0", "scope", "global", "proto", "boot"},
			"scope universe"},
		{route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.22.0.0/24", Scope: linuxl3.Route_LINK}),
			[]string{"10.22.0.0/24", "dev", "v1", "scope", "link", "proto", "boot"},
			"not the route this value asks for"},
		{route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.23.0.0/24", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL}),
			[]string{"10.23.0.0/24", "via", "192.168.1.254", "dev", "v0", "mtu", "1400", "proto", "boot"},
			"with attributes the model has no field for"},
		{route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.24.0.0/24", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL}),
			[]string{"10.24.0.0/24", "via", "192.168.1.254", "dev", "v0", "proto", "static"},
			"foreign route (protocol static)"},
		{route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.25.0.0/24", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL}),
			[]string{"10.25.0.0/24", "via", "192.168.1.254", "dev", "v0", "proto", "dhcp"},
			"foreign route (protocol dhcp)"},
	}
	before := map[string][]string{}
	for _, r := range refused {
		e.ip(append([]string{"route", "add"}, r.add...)...)
		before[r.value.key] = e.routeLines("-4", r.add[0])
	}
	otherMetric := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.26.0.0/24", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL, Metric: 5})
	e.ip("route", "add", "10.26.0.0/24", "via", "192.168.1.254", "dev", "v0", "metric", "6", "proto", "boot")

	nb := []kv{e.iface("v0", "192.168.1.1/24", "2001:db8:1::1/64"), e.iface("v1"), arpEntry, otherMetric}
	nb = append(nb, adopted...)
	for _, r := range refused {
		nb = append(nb, r.value)
	}
	events := e.watchRoutes()
	seq, failed := e.commitErrors(api.TxnOptions{Resync: api.FullResync}, nb...)

	// Exactly the refused values failed, each with its reason.
	if len(failed) != len(refused) {
		t.Errorf("%d values failed, want the %d refused: %v", len(failed), len(refused), failed)
	}
	for _, r := range refused {
		err := failed[r.value.key]
		if !errors.Is(err, syscall.EEXIST) || !strings.Contains(err.Error(), "foreign route (protocol") || !strings.Contains(err.Error(), r.why) {
			t.Errorf("%s: error %v, want the foreign route in the way (%q)", r.value.key, err, r.why)
		}
		e.mustState(r.value.key, api.ValueStateFailed)
		if got := e.routeLines("-4", r.add[0]); !slices.Equal(got, before[r.value.key]) {
			t.Errorf("refused foreign route changed: %q, was %q", got, before[r.value.key])
		}
	}

	// The resync executed one CREATE per adopted route (and for the
	// route of another metric), nothing for the ARP entry, no DELETE.
	perKey := map[string][]string{}
	for _, op := range e.executed(seq) {
		f := strings.Fields(op)
		perKey[f[1]] = append(perKey[f[1]], f[0])
	}
	for _, r := range append(slices.Clone(adopted), otherMetric) {
		if ops := perKey[r.key]; !slices.Equal(ops, []string{"CREATE"}) {
			t.Errorf("%s: executed %v, want one CREATE", r.key, ops)
		}
		e.mustState(r.key, api.ValueStateConfigured)
	}
	if ops := perKey[arpEntry.key]; len(ops) != 0 {
		t.Errorf("the original's ARP entry: executed %v, want nothing", ops)
	}
	e.mustState(arpEntry.key, api.ValueStateConfigured)
	if n := e.ip("neigh", "show", "dev", "v0"); !strings.Contains(n, "192.168.1.7 lladdr "+mac+" PERMANENT") {
		t.Errorf("ip neigh:\n%s", n)
	}

	// Each adopted route is there once, as ours, with its attributes.
	want := map[string]string{
		"10.1.0.0/24":     "10.1.0.0/24 via 192.168.1.254 dev v0 proto 181",
		"10.2.0.0/16":     "10.2.0.0/16 dev v0 proto 181 scope link metric 7",
		"default":         "default via 192.168.1.254 dev v0 proto 181 metric 900",
		"10.4.0.0/24":     "10.4.0.0/24 dev v0 proto 181 scope host",
		"2001:db8:2::/64": "2001:db8:2::/64 via 2001:db8:1::fe dev v0 proto 181 metric 1024",
		"2001:db8:3::/64": "2001:db8:3::/64 dev v0 proto 181 metric 100",
	}
	for dst, line := range want {
		family := "-4"
		if strings.Contains(dst, ":") {
			family = "-6"
		}
		got := e.routeLines(family, dst)
		if len(got) != 1 || !strings.HasPrefix(got[0], line) {
			t.Errorf("%s: %q, want the one route %q", dst, got, line)
		}
	}
	if got := e.routeLines("-4", "10.26.0.0/24", "proto", "boot"); len(got) != 1 || !strings.Contains(got[0], "metric 6") || !e.hasRoute("10.26.0.0/24", "metric", "5") {
		t.Errorf("10.26.0.0/24: %q, want ours (metric 5) beside the foreign one (metric 6)", got)
	}

	// No adopted route was ever gone: its events are its replacement by
	// ours, and no delete.
	replaced := map[string]bool{}
	for _, u := range events.until("v1") {
		dst := "default"
		if u.Dst != nil && u.Dst.IP != nil && !u.Dst.IP.IsUnspecified() {
			dst = u.Dst.String()
		}
		if _, ok := want[dst]; !ok {
			continue
		}
		if u.Type == unix.RTM_DELROUTE {
			t.Errorf("the route to %s was deleted during the takeover: %v", dst, u.Route)
		}
		if u.Type == unix.RTM_NEWROUTE && u.Protocol == l3plugin.RouteProtocol {
			replaced[dst] = true
		}
	}
	if len(replaced) != len(want) {
		t.Errorf("replaced with ours: %v, want all of %d", replaced, len(want))
	}

	// The next resync has nothing to take over.
	seq, _ = e.commitErrors(api.TxnOptions{Resync: api.FullResync}, nb...)
	for _, op := range e.executed(seq) {
		key := strings.Fields(op)[1]
		if !slices.ContainsFunc(refused, func(r refusal) bool { return r.value.key == key }) { // those are tried again
			t.Errorf("second resync executed %s", op)
		}
	}
}

// TestOriginalRoutesNotAdoptedWhenOff: with the adoption off, the route
// the original agent made for a value is a foreign route in the way like
// any other: the value fails with the reason, the route stays as it was.
func TestOriginalRoutesNotAdoptedWhenOff(t *testing.T) {
	e := newEnv(t, withoutAdoption())
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	r := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/24", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL})
	e.addAsTheOriginal(r.value.(*linuxl3.Route))
	_, failed := e.commitErrors(api.TxnOptions{Resync: api.FullResync}, e.iface("v0", "192.168.1.1/24"), r)
	if err := failed[r.key]; len(failed) != 1 || !errors.Is(err, syscall.EEXIST) || !strings.Contains(err.Error(), "adopting the original agent's routes is off") {
		t.Fatalf("failed %v, want %s refused because adopting is off", failed, r.key)
	}
	e.mustState(r.key, api.ValueStateFailed)
	if got := e.routeLines("-4", "10.1.0.0/24", "proto", "boot"); len(got) != 1 || !strings.HasPrefix(got[0], "10.1.0.0/24 via 192.168.1.254 dev v0") {
		t.Errorf("the original's route: %q, want it as it was", got)
	}
}

// TestRouteBatchAdoptsTheOriginalsRoutes: in one Batch, the creates of
// routes the original agent made take them over, a create in the way of a
// differing foreign route fails with its own error, and a new route is
// added; the metadata of a takeover is the one a Create gives.
func TestRouteBatchAdoptsTheOriginalsRoutes(t *testing.T) {
	e := newEnv(t)
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	e.ip("addr", "add", "2001:db8:1::1/64", "dev", "v0", "nodad")
	e.commit(e.iface("v0", "192.168.1.1/24", "2001:db8:1::1/64"))
	adopt4 := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/24", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL, Metric: 3})
	adopt6 := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "2001:db8:2::/64", GwAddr: "2001:db8:1::fe", Scope: linuxl3.Route_GLOBAL})
	differs := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.2.0.0/24", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL})
	fresh := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.3.0.0/24", GwAddr: "192.168.1.254", Scope: linuxl3.Route_GLOBAL})
	e.addAsTheOriginal(adopt4.value.(*linuxl3.Route))
	e.addAsTheOriginal(adopt6.value.(*linuxl3.Route))
	e.addAsTheOriginal(&linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.2.0.0/24", GwAddr: "192.168.1.253", Scope: linuxl3.Route_GLOBAL})

	d := e.descriptor(l3plugin.RouteDescriptorName)
	ops := []api.BatchOp{opCreate(adopt4), opCreate(differs), opCreate(adopt6), opCreate(fresh)}
	d.Batch(context.Background(), ops)
	for i, op := range ops {
		md, err := result(t, op)
		if i == 1 {
			if !errors.Is(err, syscall.EEXIST) || !strings.Contains(err.Error(), "foreign route (protocol boot)") ||
				!strings.Contains(err.Error(), "not the route this value asks for (10.2.0.0/24 via 192.168.1.253") {
				t.Errorf("%s: error %v, want the differing foreign route in the way", op.Key, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", op.Key, err)
			continue
		}
		pl, ok := md.(*l3plugin.Placement)
		if !ok || pl.LinkIndex <= 0 || !pl.Applied.Known {
			t.Errorf("%s: metadata %+v, want the Placement a Create gives", op.Key, md)
		}
	}
	e.mustHaveRoute("10.1.0.0/24", "via", "192.168.1.254", "metric", "3")
	e.mustHaveRoute("2001:db8:2::/64", "via", "2001:db8:1::fe")
	e.mustHaveRoute("10.3.0.0/24", "via", "192.168.1.254")
	if got := e.routeLines("-4", "10.1.0.0/24"); len(got) != 1 {
		t.Errorf("10.1.0.0/24: %q, want ours alone", got)
	}
	if got := e.routeLines("-4", "10.2.0.0/24", "proto", "boot"); len(got) != 1 || !strings.Contains(got[0], "via 192.168.1.253 dev v0") {
		t.Errorf("10.2.0.0/24: %q, want the foreign route as it was", got)
	}
	if got := e.routeLines("-6", "2001:db8:2::/64", "proto", "boot"); len(got) != 0 {
		t.Errorf("the original's IPv6 route is still there: %q", got)
	}
}

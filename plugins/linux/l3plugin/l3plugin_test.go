package l3plugin_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api/apitest"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// A route committed before its interface waits (PENDING) and is added to the
// kernel, with our protocol, by the transaction that brings the interface.
func TestRouteWaitsForInterface(t *testing.T) {
	e := newEnv(t)
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	r := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/24", GwAddr: "192.168.1.254", Metric: 7})

	e.commit(r)
	e.mustState(r.key, api.ValueStatePending)
	if d := e.s.GetValueStatus(r.key).GetValue().GetDetails(); !slices.ContainsFunc(d, func(s string) bool { return strings.HasPrefix(s, "interface ") && strings.HasSuffix(s, " up") }) {
		t.Errorf("details %v: want the unmet interface-up dependency named", d)
	}
	e.mustNotHaveRoute("10.1.0.0/24")

	e.commit(e.iface("v0", "192.168.1.1/24"))
	e.mustState(r.key, api.ValueStateConfigured)
	e.mustHaveRoute("10.1.0.0/24", "via", "192.168.1.254", "dev", "v0", "metric", "7")

	e.commit(del(r))
	e.mustNotHaveRoute("10.1.0.0/24")
	if e.s.GetValueStatus(r.key).GetValue().GetState() != api.ValueStateNonexistent {
		t.Errorf("deleted route: state %s", e.state(r.key))
	}
}

// A route whose gateway no address of the interface reaches waits for one;
// taking the address away takes the route away.
func TestRouteWaitsForGatewayAddress(t *testing.T) {
	e := newEnv(t)
	r := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.7.0.0/16", GwAddr: "192.168.7.254"})
	e.commit(e.iface("v0"), r)
	e.mustState(r.key, api.ValueStatePending)
	if d := e.s.GetValueStatus(r.key).GetValue().GetDetails(); !slices.ContainsFunc(d, func(s string) bool { return strings.HasPrefix(s, "gateway ") && strings.HasSuffix(s, " reachable") }) {
		t.Errorf("details %v: want the unmet gateway-reachable dependency named", d)
	}
	e.mustNotHaveRoute("10.7.0.0/16")

	// An address in another subnet does not help.
	e.ip("addr", "add", "192.168.8.1/24", "dev", "v0")
	e.commit(e.iface("v0", "192.168.8.1/24"))
	e.mustState(r.key, api.ValueStatePending)

	// The interface plugin would add the address; the stand-in only
	// reports it.
	e.ip("addr", "add", "192.168.7.1/24", "dev", "v0")
	e.commit(e.iface("v0", "192.168.8.1/24", "192.168.7.1/24"))
	e.mustState(r.key, api.ValueStateConfigured)
	e.mustHaveRoute("10.7.0.0/16", "via", "192.168.7.254", "dev", "v0")

	e.commit(e.iface("v0", "192.168.8.1/24"))
	e.mustState(r.key, api.ValueStatePending)
	e.mustNotHaveRoute("10.7.0.0/16")
}

// A gateway inside the destination of a link-local route of the interface is
// reachable: the route waits for the link-local route, which derives the
// property.
func TestRouteGatewayThroughLinkLocalRoute(t *testing.T) {
	e := newEnv(t)
	via := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.30.0.0/16", GwAddr: "172.16.0.1", Scope: linuxl3.Route_GLOBAL})
	e.commit(e.iface("v0"), via)
	e.mustState(via.key, api.ValueStatePending)

	link := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "172.16.0.0/16", Scope: linuxl3.Route_LINK})
	e.commit(link)
	e.mustState(link.key, api.ValueStateConfigured)
	e.mustState(via.key, api.ValueStateConfigured)
	e.mustHaveRoute("172.16.0.0/16", "dev", "v0", "scope", "link")
	e.mustHaveRoute("10.30.0.0/16", "via", "172.16.0.1", "dev", "v0")
	st := e.s.GetValueStatus(link.key)
	found := false
	for _, d := range st.GetDerivedValues() {
		found = found || d.GetKey() == l3plugin.LinkLocalRouteKey("v0", "172.16.0.0/16")
	}
	if !found {
		t.Errorf("derived values of the link-local route: %v", st.GetDerivedValues())
	}

	// Without the link-local route the gateway is unreachable again.
	e.commit(del(link))
	e.mustState(via.key, api.ValueStatePending)
	e.mustNotHaveRoute("10.30.0.0/16")
	e.mustNotHaveRoute("172.16.0.0/16")
}

// A new metric is a new kernel route: re-created, the old one gone. A new
// gateway is changed in place.
func TestRouteMetricChangeRecreatesGatewayChangeUpdates(t *testing.T) {
	e := newEnv(t)
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	r := &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/24", GwAddr: "192.168.1.254", Metric: 10}
	e.commit(e.iface("v0", "192.168.1.1/24"), route(t, r))
	e.mustHaveRoute("10.1.0.0/24", "metric", "10")

	r2 := &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/24", GwAddr: "192.168.1.254", Metric: 20}
	seq := e.commit(route(t, r2))
	ops := e.executed(seq)
	if len(ops) != 2 || !strings.HasPrefix(ops[0], "DELETE") || !strings.HasPrefix(ops[1], "CREATE") ||
		!strings.Contains(ops[0], "RECREATE") || !strings.Contains(ops[1], "RECREATE") {
		t.Errorf("metric change executed %q, want DELETE and CREATE, both RECREATE", ops)
	}
	e.mustHaveRoute("10.1.0.0/24", "via", "192.168.1.254", "metric", "20")
	if e.hasRoute("10.1.0.0/24", "metric", "10") {
		t.Fatalf("the route with the old metric is still there:\n%s", strings.Join(e.kernelRoutes(), "\n"))
	}

	r3 := &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/24", GwAddr: "192.168.1.253", Metric: 20}
	seq = e.commit(route(t, r3))
	ops = e.executed(seq)
	if len(ops) != 1 || !strings.HasPrefix(ops[0], "UPDATE") || strings.Contains(ops[0], "RECREATE") {
		t.Errorf("gateway change executed %q, want one UPDATE in place", ops)
	}
	e.mustHaveRoute("10.1.0.0/24", "via", "192.168.1.253", "metric", "20")
	if n := len(e.kernelRoutes()); n != 1 {
		t.Errorf("%d routes of ours, want 1:\n%s", n, strings.Join(e.kernelRoutes(), "\n"))
	}
}

// A full resync puts back the route of ours someone deleted, and repairs the
// one someone changed, without touching foreign routes, even one to the same
// destination.
func TestResyncRestoresRoutesLeavesForeignOnes(t *testing.T) {
	e := newEnv(t)
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	nb := []kv{
		e.iface("v0", "192.168.1.1/24"),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/24", GwAddr: "192.168.1.254"}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.2.0.0/24", GwAddr: "192.168.1.254", Metric: 3}),
	}
	e.commit(nb...)
	e.mustHaveRoute("10.1.0.0/24")
	e.mustHaveRoute("10.2.0.0/24")

	ours := "181"
	e.ip("route", "del", "10.1.0.0/24", "via", "192.168.1.254", "dev", "v0", "proto", ours)
	e.ip("route", "replace", "10.2.0.0/24", "via", "192.168.1.250", "dev", "v0", "metric", "3", "proto", ours)
	e.ip("route", "add", "10.9.0.0/24", "via", "192.168.1.253", "dev", "v0", "proto", "static")
	e.ip("route", "add", "10.1.0.0/24", "via", "192.168.1.252", "dev", "v0", "metric", "50", "proto", "static")
	e.mustNotHaveRoute("10.1.0.0/24")

	seq := e.resync(nb...)
	ops := e.executed(seq)
	want := []string{"CREATE " + nb[1].key, "UPDATE " + nb[2].key}
	slices.Sort(ops)
	if len(ops) != 2 || !strings.HasPrefix(ops[0], want[0]+" ") || !strings.HasPrefix(ops[1], want[1]+" ") {
		t.Errorf("resync executed %q, want %q", ops, want)
	}
	e.mustHaveRoute("10.1.0.0/24", "via", "192.168.1.254", "dev", "v0")
	e.mustHaveRoute("10.2.0.0/24", "via", "192.168.1.254", "metric", "3")
	all := e.allRoutes()
	for _, foreign := range []string{"10.9.0.0/24 via 192.168.1.253 dev v0 proto static", "10.1.0.0/24 via 192.168.1.252 dev v0 proto static metric 50"} {
		if !strings.Contains(all, foreign) {
			t.Errorf("foreign route %q gone:\n%s", foreign, all)
		}
	}
	// Foreign routes are not even seen.
	vals, err := e.s.DumpValuesByDescriptor(l3plugin.RouteDescriptorName, api.SBView)
	if err != nil || len(vals) != 2 {
		t.Errorf("SB dump of routes: %d values (%v), want our 2", len(vals), err)
	}

	// Deleting our route leaves the foreign one to the same destination.
	e.commit(del(nb[1]))
	e.mustNotHaveRoute("10.1.0.0/24")
	if all := e.allRoutes(); !strings.Contains(all, "10.1.0.0/24 via 192.168.1.252") {
		t.Errorf("deleting our route took the foreign one:\n%s", all)
	}
}

// inSyncState is an NB state using every kind of route and ARP entry, in
// spellings the kernel does not keep (unmasked destination, upper-case MAC,
// scope left to the kernel, IPv6 metric 0).
func inSyncState(t *testing.T, e *env) []kv {
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	e.ip("addr", "add", "2001:db8:1::1/64", "dev", "v0", "nodad")
	return []kv{
		e.iface("v0", "192.168.1.1/24", "2001:db8:1::1/64"),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/24", GwAddr: "192.168.1.254"}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.2.3.4/16"}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.3.0.0/16", GwAddr: "10.2.0.1", Scope: linuxl3.Route_GLOBAL, Metric: 5}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.4.0.0/24", Scope: linuxl3.Route_HOST}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "0.0.0.0/0", GwAddr: "192.168.1.254", Metric: 900}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "2001:db8:2::/64", GwAddr: "2001:db8:1::fe"}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "2001:db8:3::/64", GwAddr: "fe80::1", Metric: 100, Scope: linuxl3.Route_GLOBAL}),
		route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "2001:db8:4::/64", Scope: linuxl3.Route_LINK}),
		arp(t, &linuxl3.ARPEntry{Interface: "v0", IpAddress: "192.168.1.7", HwAddress: "02:AA:BB:CC:DD:07"}),
		arp(t, &linuxl3.ARPEntry{Interface: "v0", IpAddress: "2001:db8:1::7", HwAddress: "02:aa:bb:cc:dd:08"}),
	}
}

// A resync of a kernel that matches the NB executes nothing: full,
// downstream, and twice in a row.
func TestResyncInSyncExecutesNothing(t *testing.T) {
	e := newEnv(t)
	nb := inSyncState(t, e)
	e.commit(nb...)
	for _, p := range nb {
		e.mustState(p.key, api.ValueStateConfigured)
	}
	if n := len(e.kernelRoutes()); n != 8 {
		t.Fatalf("%d routes of ours, want 8:\n%s", n, strings.Join(e.kernelRoutes(), "\n"))
	}
	// Retrieve finds them all, in the NB's spelling.
	for d, want := range map[string]int{l3plugin.RouteDescriptorName: 8, l3plugin.ARPDescriptorName: 2} {
		vals, err := e.s.DumpValuesByDescriptor(d, api.SBView)
		if err != nil || len(vals) != want {
			t.Fatalf("SB dump of %s: %d values (%v), want %d", d, len(vals), err, want)
		}
		for _, v := range vals {
			if i := slices.IndexFunc(nb, func(p kv) bool { return p.key == v.Key }); i < 0 || !proto.Equal(nb[i].value, v.Value) {
				t.Errorf("retrieved %s = %v, not the NB value", v.Key, v.Value)
			}
		}
	}
	for i := 0; i < 2; i++ {
		if ops := e.executed(e.resync(nb...)); len(ops) != 0 {
			t.Errorf("full resync %d of an in-sync kernel executed %q", i+1, ops)
		}
	}
	if ops := e.executed(e.commitOpts(api.TxnOptions{Resync: api.DownstreamResync})); len(ops) != 0 {
		t.Errorf("downstream resync of an in-sync kernel executed %q", ops)
	}
	for _, p := range nb {
		e.mustState(p.key, api.ValueStateConfigured)
	}
}

// The agent restarting on an in-sync kernel executes nothing; with the
// interface lister, a route of ours that the NB dropped meanwhile is found
// and deleted (even on an interface no expected route names), foreign
// routes and neighbours stay.
func TestRestartResync(t *testing.T) {
	e := newEnv(t, withLister())
	// The dropped route is on an interface no other route uses: without the
	// lister, Retrieve would not look at it.
	nb := append(inSyncState(t, e), e.iface("v1"))
	stale := route(t, &linuxl3.Route{OutgoingInterface: "v1", DstNetwork: "10.99.0.0/24", Scope: linuxl3.Route_GLOBAL})
	e.commit(append(slices.Clone(nb), stale)...)
	e.mustHaveRoute("10.99.0.0/24")
	e.ip("route", "add", "10.9.0.0/24", "via", "192.168.1.253", "dev", "v0", "proto", "static")
	e.ip("neigh", "add", "192.168.1.9", "lladdr", "02:00:00:00:00:09", "dev", "v0", "nud", "permanent")

	// Same NB: nothing to do.
	e.startScheduler()
	if ops := e.executed(e.resync(append(slices.Clone(nb), stale)...)); len(ops) != 0 {
		t.Errorf("resync after a restart on an in-sync kernel executed %q", ops)
	}
	for _, p := range nb {
		e.mustState(p.key, api.ValueStateConfigured)
	}

	// The NB dropped a route while the agent was away.
	e.startScheduler()
	seq := e.resync(nb...)
	if ops := e.executed(seq); len(ops) != 1 || !strings.HasPrefix(ops[0], "DELETE "+stale.key+" ") {
		t.Errorf("resync after a restart without one route executed %q, want its DELETE", ops)
	}
	e.mustNotHaveRoute("10.99.0.0/24")
	if all := e.allRoutes(); !strings.Contains(all, "10.9.0.0/24 via 192.168.1.253") {
		t.Errorf("foreign route gone:\n%s", all)
	}
	if n := e.ip("neigh", "show", "dev", "v0"); !strings.Contains(n, "192.168.1.9 lladdr 02:00:00:00:00:09 PERMANENT") {
		t.Errorf("foreign neighbour gone:\n%s", n)
	}
	foreign := "config/linux/l3/v2/arp/v0/192.168.1.9"
	if st := e.state(foreign); st != api.ValueStateObtained {
		t.Errorf("foreign neighbour: state %s, want OBTAINED", st)
	}
}

// ARP entries: created permanent, a new MAC changed in place, deleted; read
// back with `ip neigh`.
func TestARPEntry(t *testing.T) {
	e := newEnv(t)
	a := arp(t, &linuxl3.ARPEntry{Interface: "v0", IpAddress: "192.168.1.7", HwAddress: "02:00:00:00:00:07"})
	e.commit(a)
	e.mustState(a.key, api.ValueStatePending)

	e.commit(e.iface("v0"))
	e.mustState(a.key, api.ValueStateConfigured)
	neigh := func() string { return e.ip("neigh", "show", "dev", "v0") }
	if n := neigh(); !strings.Contains(n, "192.168.1.7 lladdr 02:00:00:00:00:07 PERMANENT") {
		t.Fatalf("ip neigh after create:\n%s", n)
	}

	seq := e.commit(arp(t, &linuxl3.ARPEntry{Interface: "v0", IpAddress: "192.168.1.7", HwAddress: "02:00:00:00:00:77"}))
	if ops := e.executed(seq); len(ops) != 1 || !strings.HasPrefix(ops[0], "UPDATE "+a.key+" ") || strings.Contains(ops[0], "RECREATE") {
		t.Errorf("MAC change executed %q, want one UPDATE in place", ops)
	}
	if n := neigh(); !strings.Contains(n, "192.168.1.7 lladdr 02:00:00:00:00:77 PERMANENT") || strings.Contains(n, "02:00:00:00:00:07") {
		t.Fatalf("ip neigh after update:\n%s", n)
	}

	// A change in spelling only is no change.
	seq = e.commit(arp(t, &linuxl3.ARPEntry{Interface: "v0", IpAddress: "192.168.1.7", HwAddress: "02:00:00:00:00:77"}))
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("same entry again executed %q", ops)
	}

	e.commit(del(a))
	if n := neigh(); strings.Contains(n, "192.168.1.7") {
		t.Fatalf("ip neigh after delete:\n%s", n)
	}

	// Deleting an entry someone else removed already is success.
	e.commit(a)
	e.ip("neigh", "del", "192.168.1.7", "dev", "v0")
	e.commit(del(a))
	e.mustState(a.key, api.ValueStateNonexistent)
}

// Deleting a route someone deleted already is success.
func TestDeleteOfMissingRouteSucceeds(t *testing.T) {
	e := newEnv(t)
	r := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.5.0.0/24"})
	e.commit(e.iface("v0"), r)
	e.mustHaveRoute("10.5.0.0/24", "scope", "link")
	e.ip("route", "del", "10.5.0.0/24", "dev", "v0", "proto", "181")
	e.commit(del(r))
	e.mustState(r.key, api.ValueStateNonexistent)
}

// Creating a route of ours that is already there (a previous run) is
// success; a foreign route with the same destination and metric is a
// conflict reported on the value, and the foreign route stays.
func TestCreateOverExistingRoute(t *testing.T) {
	e := newEnv(t)
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	e.ip("route", "add", "10.6.0.0/24", "via", "192.168.1.254", "dev", "v0", "metric", "4", "proto", "181")
	e.ip("route", "add", "10.8.0.0/24", "via", "192.168.1.254", "dev", "v0", "proto", "static")
	ours := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.6.0.0/24", GwAddr: "192.168.1.254", Metric: 4})
	clash := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.8.0.0/24", GwAddr: "192.168.1.254"})

	txn := e.s.StartNBTransaction()
	for _, p := range []kv{e.iface("v0", "192.168.1.1/24"), ours, clash} {
		txn.SetValue(p.key, p.value)
	}
	_, err := txn.Commit(t.Context(), api.TxnOptions{})
	var te *api.TransactionError
	if !errors.As(err, &te) || len(te.KVErrors) != 1 || te.KVErrors[0].Key != clash.key ||
		!strings.Contains(te.KVErrors[0].Error.Error(), "foreign route") {
		t.Fatalf("commit: %v, want the foreign-route conflict of %s only", err, clash.key)
	}
	e.mustState(ours.key, api.ValueStateConfigured)
	if all := e.allRoutes(); !strings.Contains(all, "10.8.0.0/24 via 192.168.1.254 dev v0 proto static") {
		t.Errorf("foreign route gone:\n%s", all)
	}
}

// Invalid values are INVALID, naming the fields, and never reach the kernel
// (no root needed: nothing is configured).
func TestValidation(t *testing.T) {
	s := kvscheduler.New(kvscheduler.Options{Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	p := l3plugin.New(nil, l3plugin.SchedulerInterfaces(s), slog.New(slog.DiscardHandler))
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, key string
		value     *linuxl3.Route
		field     string
	}{
		{"gateway of the other IP version", "config/linux/l3/v2/route/10.0.0.0/8/eth0",
			&linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/8", GwAddr: "2001:db8::1"}, "gw_addr"},
		{"host scope with a gateway", "config/linux/l3/v2/route/10.0.0.0/8/eth0",
			&linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/8", GwAddr: "10.0.0.1", Scope: linuxl3.Route_HOST}, "gw_addr"},
		{"bad destination", "config/linux/l3/v2/route/10.0.0.0/8/eth0",
			&linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/33"}, "dst_network"},
		{"value of another key", "config/linux/l3/v2/route/10.0.0.0/8/eth0",
			&linuxl3.Route{OutgoingInterface: "eth1", DstNetwork: "10.0.0.0/8"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.StartNBTransaction().SetValue(c.key, c.value).Commit(t.Context(), api.TxnOptions{})
			var iv *api.InvalidValueError
			if !errors.As(err, &iv) {
				t.Fatalf("commit: %v, want an InvalidValueError", err)
			}
			if c.field != "" && !slices.Contains(iv.InvalidFields, c.field) {
				t.Errorf("invalid fields %v, want %s", iv.InvalidFields, c.field)
			}
			if st := s.GetValueStatus(c.key).GetValue().GetState(); st != api.ValueStateInvalid {
				t.Errorf("state %s, want INVALID", st)
			}
		})
	}
	_, err := s.StartNBTransaction().SetValue("config/linux/l3/v2/arp/eth0/10.0.0.1",
		&linuxl3.ARPEntry{Interface: "eth0", IpAddress: "10.0.0.1", HwAddress: "not-a-mac"}).Commit(t.Context(), api.TxnOptions{})
	var iv *api.InvalidValueError
	if !errors.As(err, &iv) || !slices.Contains(iv.InvalidFields, "hw_address") {
		t.Errorf("ARP entry with a bad MAC: %v", err)
	}
}

// The dependencies of a route: interface up, and a gateway reachable through
// an address or a link-local route of the same interface.
func TestRouteDependencies(t *testing.T) {
	p := l3plugin.New(nil, func(context.Context, string) (ifplugin.Metadata, bool) { return ifplugin.Metadata{}, false }, slog.New(slog.DiscardHandler))
	var d *api.KVDescriptor
	for _, x := range p.Descriptors() {
		if x.Name == l3plugin.RouteDescriptorName {
			d = x
		}
	}
	r := &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/8", GwAddr: "192.168.1.1"}
	deps := d.Dependencies("config/linux/l3/v2/route/10.0.0.0/8/eth0", r)
	if len(deps) != 2 || deps[0].Key != ifplugin.StateKey("eth0", true) || deps[0].Label != "interface eth0 up" || !strings.HasSuffix(deps[1].Label, " reachable") {
		t.Fatalf("dependencies %+v", deps)
	}
	sel := deps[1].AnyOf.KeySelector
	for key, want := range map[string]bool{
		ifplugin.AddressKey("eth0", "192.168.1.2/24"):                  true,
		ifplugin.AddressKey("eth0", "192.168.1.1/32"):                  true,
		ifplugin.AddressKey("eth0", "192.168.2.1/24"):                  false,
		ifplugin.AddressKey("eth1", "192.168.1.2/24"):                  false,
		ifplugin.AddressKey("eth0/x", "192.168.1.2/24"):                false,
		l3plugin.LinkLocalRouteKey("eth0", "192.168.0.0/16"):           true,
		l3plugin.LinkLocalRouteKey("eth0", "192.168.2.0/24"):           false,
		l3plugin.LinkLocalRouteKey("eth1", "192.168.0.0/16"):           false,
		"linux/link-local-route/eth0/dest-address/garbage":             false,
		"linux/interface/state/eth0/UP":                                false,
		ifplugin.AddressKey("eth0", "2001:db8::1/64"):                  false,
		l3plugin.LinkLocalRouteKey("eth0/dest-address/x", "0.0.0.0/0"): false,
	} {
		if got := sel(key); got != want {
			t.Errorf("gateway 192.168.1.1 reachable through %s: %v, want %v", key, got, want)
		}
	}
	for _, prefix := range deps[1].AnyOf.KeyPrefixes {
		if !strings.HasPrefix(ifplugin.AddressKey("eth0", "192.168.1.2/24"), prefix) && !strings.HasPrefix(l3plugin.LinkLocalRouteKey("eth0", "192.168.0.0/16"), prefix) {
			t.Errorf("prefix %q accepts none of the keys", prefix)
		}
	}
	// An IPv6 link-local gateway is always reachable.
	deps = d.Dependencies("", &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "2001:db8::/32", GwAddr: "fe80::1"})
	if len(deps) != 1 {
		t.Errorf("dependencies with a link-local gateway: %+v", deps)
	}
	// Link-local route: derives its property; a route with a gateway does not.
	dv := d.DerivedValues("", &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.1.2.3/16"})
	if len(dv) != 1 || dv[0].Key != "linux/link-local-route/eth0/dest-address/10.1.0.0/16" {
		t.Errorf("derived values of a link route: %+v", dv)
	}
	if dv := d.DerivedValues("", r); len(dv) != 0 {
		t.Errorf("derived values of a route with a gateway: %+v", dv)
	}
	if dv := d.DerivedValues("", &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.1.0.0/16", Scope: linuxl3.Route_GLOBAL}); len(dv) != 0 {
		t.Errorf("derived values of a global route without gateway: %+v", dv)
	}
}

// Create without the interface's metadata (the dependency should prevent it)
// is a retriable error saying so; deleting then is success (nothing can be
// there).
func TestCreateWithoutInterfaceMetadata(t *testing.T) {
	p := l3plugin.New(nil, func(context.Context, string) (ifplugin.Metadata, bool) { return ifplugin.Metadata{}, false }, slog.New(slog.DiscardHandler))
	for _, d := range p.Descriptors() {
		var key string
		var value proto.Message
		switch d.Name {
		case l3plugin.RouteDescriptorName:
			r := route(t, &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/8"})
			key, value = r.key, r.value
		case l3plugin.ARPDescriptorName:
			a := arp(t, &linuxl3.ARPEntry{Interface: "eth0", IpAddress: "10.0.0.1", HwAddress: "02:00:00:00:00:01"})
			key, value = a.key, a.value
		}
		_, err := d.Create(t.Context(), key, value)
		if err == nil || !strings.Contains(err.Error(), "eth0") || !strings.Contains(err.Error(), "metadata") {
			t.Errorf("%s: Create without interface metadata: %v", d.Name, err)
		}
		var nr *api.NonRetriableError
		if errors.As(err, &nr) || !d.IsRetriableFailure(err) {
			t.Errorf("%s: %v is not retriable", d.Name, err)
		}
		if err := d.Delete(t.Context(), key, value, nil); err != nil {
			t.Errorf("%s: Delete without interface metadata: %v", d.Name, err)
		}
	}
}

// Inside a descriptor callback the interface lookups read the metadata
// through the callback's read view and never call the scheduler; a caller
// that is no callback (a test calling Create directly) reads the
// scheduler's map.
func TestInterfaceLookupsReadTheCallbackView(t *testing.T) {
	inView := api.NewMetadataMap()
	inView.Put("eth0", &ifplugin.Metadata{Index: 7, HostName: "eth0"})
	inScheduler := api.NewMetadataMap()
	inScheduler.Put("eth1", ifplugin.Metadata{Index: 3, HostName: "eth1"})
	src := &apitest.MetadataSource{Maps: map[string]api.MetadataMap{ifplugin.InterfaceDescriptorName: inScheduler}}
	lookup, names := l3plugin.SchedulerInterfaces(src), l3plugin.SchedulerInterfaceNames(src)

	callback := api.WithCallScope(t.Context(), &apitest.Scope{Maps: map[string]api.MetadataMap{ifplugin.InterfaceDescriptorName: inView}})
	if md, ok := lookup(callback, "eth0"); !ok || md.Index != 7 {
		t.Errorf("eth0 in a callback: %+v, %v; want index 7 from the view", md, ok)
	}
	if _, ok := lookup(callback, "eth1"); ok {
		t.Error("eth1 in a callback: found; the view does not hold it")
	}
	if got := names(callback); !slices.Equal(got, []string{"eth0"}) {
		t.Errorf("names in a callback: %v, want [eth0]", got)
	}
	if src.Calls != 0 {
		t.Errorf("the lookups called the scheduler %d times from a callback", src.Calls)
	}

	if md, ok := lookup(t.Context(), "eth1"); !ok || md.Index != 3 {
		t.Errorf("eth1 outside a callback: %+v, %v; want index 3 from the scheduler", md, ok)
	}
	if got := names(t.Context()); !slices.Equal(got, []string{"eth1"}) {
		t.Errorf("names outside a callback: %v, want [eth1]", got)
	}
}

// A Retrieve whose context is done (the scheduler closing) returns its
// error instead of dumping the namespaces.
func TestRetrieveStopsWhenItsContextIsDone(t *testing.T) {
	onLink1 := func(context.Context, string) (ifplugin.Metadata, bool) { return ifplugin.Metadata{Index: 1}, true }
	p := l3plugin.New(nil, onLink1, slog.New(slog.DiscardHandler))
	r := route(t, &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "10.0.0.0/8"})
	a := arp(t, &linuxl3.ARPEntry{Interface: "eth0", IpAddress: "10.0.0.1", HwAddress: "02:00:00:00:00:01"})
	correlate := map[string][]api.KVWithMetadata{
		l3plugin.RouteDescriptorName: {{Key: r.key, Value: r.value}},
		l3plugin.ARPDescriptorName:   {{Key: a.key, Value: a.value}},
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, d := range p.Descriptors() {
		if got, err := d.Retrieve(ctx, correlate[d.Name]); !errors.Is(err, context.Canceled) || len(got) != 0 {
			t.Errorf("%s: Retrieve with a cancelled context: %v, %v; want context.Canceled and nothing", d.Name, got, err)
		}
	}
}

package l3plugin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// descriptor returns the plugin's registered descriptor of that name.
func (e *env) descriptor(name string) *api.KVDescriptor {
	e.tb.Helper()
	for _, d := range e.p.Descriptors() {
		if d.Name == name {
			if d.Batch == nil {
				e.tb.Fatalf("%s has no Batch", name)
			}
			return d
		}
	}
	e.tb.Fatalf("no descriptor %s", name)
	return nil
}

func opCreate(p kv) api.BatchOp { return api.BatchOp{Op: api.OpCreate, Key: p.key, To: p.value} }

func opDelete(p kv, md any) api.BatchOp {
	return api.BatchOp{Op: api.OpDelete, Key: p.key, From: p.value, Metadata: md}
}

// result returns the result of a batch operation; one left without is a
// failure of the test.
func result(tb testing.TB, op api.BatchOp) (any, error) {
	tb.Helper()
	md, err, finished := op.Result()
	if !finished {
		tb.Fatalf("%s %s: no result", op.Op, op.Key)
	}
	return md, err
}

// TestRouteBatchOwnResults: in one batch, a route via a gateway the link
// cannot reach (ENETUNREACH) and a route on a link deleted meanwhile
// (ENODEV) fail, each with its own error; the others are in the kernel,
// with the metadata their Create gives; a delete of a route that is not
// there succeeds; and a delete then a create of the same kernel route
// (destination and metric) under two keys work in that order.
func TestRouteBatchOwnResults(t *testing.T) {
	e := newEnv(t)
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	e.ip("link", "add", "gone0", "type", "veth", "peer", "name", "gone1")
	e.ip("link", "set", "gone0", "up")
	e.commit(e.iface("v0", "192.168.1.1/24"), e.iface("v1"), e.iface("gone0"))
	onV0 := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.9.0.0/16", Scope: linuxl3.Route_LINK, Metric: 10})
	e.commit(onV0) // moved to v1 below
	e.ip("link", "del", "gone0")

	ok1 := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.1.0.0/16", GwAddr: "192.168.1.254", Metric: 10})
	unreachable := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.2.0.0/16", GwAddr: "172.16.0.1"})
	onGone := route(t, &linuxl3.Route{OutgoingInterface: "gone0", DstNetwork: "10.3.0.0/16"})
	ok2 := route(t, &linuxl3.Route{OutgoingInterface: "v1", DstNetwork: "10.4.0.0/16", Scope: linuxl3.Route_LINK})
	missing := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.5.0.0/16"})
	onV1 := route(t, &linuxl3.Route{OutgoingInterface: "v1", DstNetwork: "10.9.0.0/16", Scope: linuxl3.Route_LINK, Metric: 10})
	v0md, _ := e.s.GetMetadataMap(l3plugin.RouteDescriptorName).GetValue(onV0.key)
	ops := []api.BatchOp{
		opCreate(ok1), opCreate(unreachable), opCreate(onGone), opCreate(ok2),
		opDelete(missing, nil),
		opDelete(onV0, v0md), opCreate(onV1),
	}
	e.descriptor(l3plugin.RouteDescriptorName).Batch(context.Background(), ops)

	wantErr := []error{nil, syscall.ENETUNREACH, syscall.ENODEV, nil, nil, nil, nil}
	for i, op := range ops {
		md, err := result(t, op)
		if (wantErr[i] == nil) != (err == nil) || (err != nil && !errors.Is(err, wantErr[i])) {
			t.Errorf("%s %s: error %v, want %v", op.Op, op.Key, err, wantErr[i])
		}
		if op.Op != api.OpCreate || err != nil {
			continue
		}
		// The metadata the single Create gives: deleted, created alone,
		// compared.
		single := e.descriptor(l3plugin.RouteDescriptorName)
		if err := single.Delete(context.Background(), op.Key, op.To, md); err != nil {
			t.Fatal(err)
		}
		want, err := single.Create(context.Background(), op.Key, op.To)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprintf("%+v", md), fmt.Sprintf("%+v", want); got != want || !strings.Contains(got, "Known:true") {
			t.Errorf("%s: metadata %s, Create gives %s", op.Key, got, want)
		}
	}
	e.mustHaveRoute("10.1.0.0/16", "via", "192.168.1.254", "dev", "v0", "metric", "10")
	e.mustHaveRoute("10.4.0.0/16", "dev", "v1", "scope", "link")
	e.mustHaveRoute("10.9.0.0/16", "dev", "v1", "metric", "10")
	e.mustNotHaveRoute("10.2.0.0/16")
	if n := len(e.kernelRoutes()); n != 3 {
		t.Errorf("kernel routes of ours: %v", e.kernelRoutes())
	}
}

// TestARPBatchOwnResults: an entry on a link deleted meanwhile fails
// (ENODEV), the others are set; deleting one that is not there succeeds.
func TestARPBatchOwnResults(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "gone0", "type", "veth", "peer", "name", "gone1")
	e.ip("link", "set", "gone0", "up")
	e.commit(e.iface("v0"), e.iface("gone0"))
	e.ip("link", "del", "gone0")
	a1 := arp(t, &linuxl3.ARPEntry{Interface: "v0", IpAddress: "192.168.1.10", HwAddress: "02:00:00:00:00:10"})
	onGone := arp(t, &linuxl3.ARPEntry{Interface: "gone0", IpAddress: "192.168.1.11", HwAddress: "02:00:00:00:00:11"})
	a2 := arp(t, &linuxl3.ARPEntry{Interface: "v0", IpAddress: "2001:db8::12", HwAddress: "02:00:00:00:00:12"})
	missing := arp(t, &linuxl3.ARPEntry{Interface: "v0", IpAddress: "192.168.1.13", HwAddress: "02:00:00:00:00:13"})
	ops := []api.BatchOp{opCreate(a1), opCreate(onGone), opCreate(a2), opDelete(missing, nil)}
	e.descriptor(l3plugin.ARPDescriptorName).Batch(context.Background(), ops)
	for i, op := range ops {
		md, err := result(t, op)
		if wantFail := i == 1; wantFail != (err != nil) || (wantFail && !errors.Is(err, syscall.ENODEV)) {
			t.Errorf("%s %s: error %v", op.Op, op.Key, err)
		}
		if op.Op == api.OpCreate && err == nil {
			pl, ok := md.(*l3plugin.Placement)
			want := strings.ToLower(op.To.(*linuxl3.ARPEntry).GetHwAddress())
			if !ok || !pl.Applied.Known || pl.Applied.MAC != want || pl.LinkIndex <= 0 {
				t.Errorf("%s: metadata %+v", op.Key, md)
			}
		}
	}
	out := e.ip("neigh", "show", "nud", "permanent")
	for _, want := range []string{"192.168.1.10 dev v0 lladdr 02:00:00:00:00:10", "2001:db8::12 dev v0 lladdr 02:00:00:00:00:12"} {
		if !strings.Contains(out, want) {
			t.Errorf("kernel neighbours %q lack %q", out, want)
		}
	}
	if strings.Contains(out, "192.168.1.11") {
		t.Errorf("kernel neighbours %q", out)
	}
}

// TestTransactionBatchPartialFailure: one transaction of many routes (the
// scheduler gives them to Batch) where one cannot be added: that one is
// not CONFIGURED, the others are, and the next transaction without it
// converges.
func TestTransactionBatchPartialFailure(t *testing.T) {
	e := newEnv(t)
	e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
	// The value says 192.168.9.1/24 is an address of v0 (the gateway
	// dependency holds), the kernel does not have it: ENETUNREACH.
	iface := e.iface("v0", "192.168.1.1/24", "192.168.9.1/24")
	var routes []kv
	for i := range 200 {
		routes = append(routes, route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256), GwAddr: "192.168.1.254"}))
	}
	bad := route(t, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: "10.200.0.0/16", GwAddr: "192.168.9.254"})
	txn := e.s.StartNBTransaction()
	for _, p := range append(append([]kv{iface}, routes[:100]...), append([]kv{bad}, routes[100:]...)...) {
		txn.SetValue(p.key, p.value)
	}
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err == nil {
		t.Fatal("commit: no error, want the failure of " + bad.key)
	}
	if st := e.s.GetValueStatus(bad.key).GetValue(); st.GetState() == api.ValueStateConfigured || !strings.Contains(st.GetError(), "unreachable") {
		t.Errorf("%s: %s %q", bad.key, st.GetState(), st.GetError())
	}
	for _, r := range routes {
		e.mustState(r.key, api.ValueStateConfigured)
	}
	if n := len(e.kernelRoutes()); n != len(routes) {
		t.Errorf("%d routes of ours in the kernel, want %d", n, len(routes))
	}
	e.commit(del(bad))
	seq := e.resync(append([]kv{iface}, routes...)...)
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("resync executed %v", ops)
	}
}

package main

// End-to-end tests of the daemon: the agent runs in-process (New, Run)
// (or, for SIGTERM, as the real binary) with an embedded etcd on free
// loopback ports, REST and gRPC on 127.0.0.1:0, and configures real veth
// pairs, addresses and routes in network namespaces the tests name uniquely
// (with the process ID) and remove when they end. They need root; as root
// the test binary runs in a network namespace of its own (TestMain in
// e2e_helpers_test.go), so the agent's own namespace is not the host's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.fd.io/govpp/core"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
	ligatolinux "github.com/netagent-io/netagent/proto/ligato/linux"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// TestE2EEtcdVethAddressRoute: a veth pair with one end in a named
// namespace, addresses and a route through the peer's address, put into
// etcd, are created in the kernel; an update of the MTU and an address is
// applied in place; deletes remove them (and the namespace the agent
// created).
func TestE2EEtcdVethAddressRoute(t *testing.T) {
	needRoot(t)
	n := uniqueNames(t, "t1")
	cfg := testConfig(t)
	a := startAgent(t, cfg, true)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)

	host := veth(n.host, n.peer, "", 0, "172.30.1.1/24")
	peer := veth(n.peer, n.host, n.ns, 0, "172.30.1.2/24")
	rt := route(n.peer, "10.201.0.0/16", "172.30.1.1")
	hostKey, peerKey, routeKey := kv.put(host), kv.put(peer), kv.put(rt)
	for _, key := range []string{hostKey, peerKey, routeKey} {
		a.waitState(key, "CONFIGURED")
	}
	// In the kernel (polled: a status can read CONFIGURED a moment before
	// the kernel has the value, see TestE2EStatusIsNotAheadOfTheKernel).
	wantRoute := "10.201.0.0/16 via 172.30.1.1 dev " + n.peer
	eventually(t, "the veth pair, its addresses and the route in the kernel", func() (bool, string) {
		hostLink, err1 := nsLink("", n.host)
		peerLink, err2 := nsLink(n.ns, n.peer)
		hostAddrs, err3 := nsAddrs("", n.host)
		peerAddrs, err4 := nsAddrs(n.ns, n.peer)
		routes, err5 := ourRoutes(n.ns)
		ok := errors.Join(err1, err2, err3, err4, err5) == nil && strings.Contains(hostLink, ",UP") && strings.Contains(peerLink, ",UP") &&
			strings.Contains(hostAddrs, "inet 172.30.1.1/24") && strings.Contains(peerAddrs, "inet 172.30.1.2/24") && strings.Contains(routes, wantRoute)
		return ok, fmt.Sprintf("links %q %q, addresses %q %q, routes %q (%v)", hostLink, peerLink, hostAddrs, peerAddrs, routes,
			errors.Join(err1, err2, err3, err4, err5))
	})

	// Update: the MTU and the address of the namespace end, in place.
	idx := ifindex(t, n.ns, n.peer)
	peer2 := veth(n.peer, n.host, n.ns, 1400, "172.30.1.3/24")
	kv.put(peer2)
	eventually(t, "MTU 1400 and address 172.30.1.3 in the kernel", func() (bool, string) {
		link, err1 := nsLink(n.ns, n.peer)
		addrs, err2 := nsAddrs(n.ns, n.peer)
		routes, err3 := ourRoutes(n.ns)
		ok := err1 == nil && err2 == nil && err3 == nil && strings.Contains(link, "mtu 1400 ") &&
			strings.Contains(addrs, "inet 172.30.1.3/24") && !strings.Contains(addrs, "172.30.1.2/") && strings.Contains(routes, wantRoute)
		return ok, fmt.Sprintf("link %q, addresses %q, routes %q (%v %v %v)", link, addrs, routes, err1, err2, err3)
	})
	for _, key := range []string{peerKey, routeKey} {
		a.waitState(key, "CONFIGURED")
	}
	if now := ifindex(t, n.ns, n.peer); now != idx {
		t.Errorf("the update re-created %s (ifindex %s, then %s)", n.peer, idx, now)
	}

	// Delete: the route, then the interfaces.
	kv.del(routeKey)
	eventually(t, "route removed from the kernel", func() (bool, string) {
		out, err := ourRoutes(n.ns)
		return err == nil && !strings.Contains(out, "10.201.0.0/16"), fmt.Sprintf("%q %v", out, err)
	})
	a.waitState(routeKey, "")
	kv.del(hostKey)
	kv.del(peerKey)
	eventually(t, "veth pair removed from the kernel", func() (bool, string) {
		_, err := nsLink("", n.host)
		return err != nil, fmt.Sprintf("%s still there", n.host)
	})
	eventually(t, "namespace created by the agent removed once unused", func() (bool, string) {
		return !netnsExists(n.ns), n.ns + " still exists"
	})
	for _, key := range []string{hostKey, peerKey} {
		a.waitState(key, "")
	}
}

// TestE2EEtcdTenThousandRoutes: 10,000 routes written to etcd in a few
// transactions are applied in few scheduler transactions and reach the
// kernel. It logs the time from the last put to all CONFIGURED.
func TestE2EEtcdTenThousandRoutes(t *testing.T) {
	needRoot(t)
	const total = 10000
	n := uniqueNames(t, "t2")
	cfg := testConfig(t)
	a := startAgent(t, cfg, true)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)
	kv.put(veth(n.host, n.peer, "", 0, "172.31.2.1/24"))
	a.waitState(kv.put(veth(n.peer, n.host, n.ns, 0, "172.31.2.2/24")), "CONFIGURED")
	a.waitState(keyOf(t, veth(n.host, n.peer, "", 0)), "CONFIGURED")

	since := time.Now()
	ops := make([]clientv3.Op, 0, total)
	routeKeys := make(map[string]bool, total)
	for i := range total {
		r := route(n.peer, fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), "172.31.2.1")
		key := keyOf(t, r)
		routeKeys[key] = true
		ops = append(ops, clientv3.OpPut(models.EtcdKey(models.DefaultLabel, key), jsonOfValue(t, r)))
	}
	// The agent's embedded etcd keeps etcd's default limit of operations per
	// transaction (cmd/agent does not set MaxTxnOps): 1,000 are refused,
	// so the keys go in 100 transactions of 100.
	txnSize := 1000
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	first := time.Now()
	_, err := kv.c.Txn(ctx).Then(ops[:txnSize]...).Commit()
	switch {
	case err == nil:
		ops = ops[txnSize:]
	case errors.Is(err, rpctypes.ErrTooManyOps) || strings.Contains(err.Error(), "too many operations"):
		t.Logf("the embedded etcd refuses %d operations in one transaction (%v): writing %d transactions of 100", txnSize, err, total/100)
		txnSize = 100
	default:
		t.Fatalf("etcd transaction: %v", err)
	}
	for len(ops) > 0 {
		if _, err := kv.c.Txn(ctx).Then(ops[:txnSize]...).Commit(); err != nil {
			t.Fatalf("etcd transaction: %v", err)
		}
		ops = ops[txnSize:]
	}
	lastPut := time.Now()
	// All CONFIGURED as the REST API says (it can say so a moment early,
	// see TestE2EStatusIsNotAheadOfTheKernel), all in the kernel, and the
	// end of the last transaction of the routes by its record.
	eventually(t, fmt.Sprintf("%d routes CONFIGURED", total), func() (bool, string) {
		st := a.stats()
		return st.ValuesByDescriptor["linux-route"]["CONFIGURED"] == total, fmt.Sprintf("%v", st.ValuesByDescriptor["linux-route"])
	})
	tStatus := time.Since(lastPut)
	eventually(t, fmt.Sprintf("%d routes in the kernel (ip -n %s route show proto 181)", total, n.ns), func() (bool, string) {
		out, err := ourRoutes(n.ns)
		got := strings.Count(out, "\n")
		return err == nil && got == total && strings.Contains(out, "10.39.15.0/24 via 172.31.2.1 dev "+n.peer),
			fmt.Sprintf("%d routes (%v)", got, err)
	})
	tKernel := time.Since(lastPut)

	// Few scheduler transactions, which together carry every route. (A
	// transaction's record is in the history a moment after its values'
	// statuses change: the records are read until all are there.)
	var nb []txnRecord
	eventually(t, "the NB transactions of the routes in the history", func() (bool, string) {
		nb = nil
		left := maps.Clone(routeKeys)
		for _, rec := range a.history("?since=" + fmt.Sprintf("%.6f", float64(since.UnixNano())/1e9)) {
			carries := false
			for _, v := range rec.Values {
				if left[v.Key] {
					carries = true
					delete(left, v.Key)
				}
			}
			if carries && rec.Type == "NB transaction" {
				nb = append(nb, rec)
			}
		}
		return len(left) == 0, fmt.Sprintf("%d of the %d routes are in no NB transaction since the puts", len(left), total)
	})
	var lastStop time.Time
	for _, rec := range nb {
		if rec.Stop.After(lastStop) {
			lastStop = rec.Stop
		}
	}
	t.Logf("%d routes written in etcd transactions of %d (%v from the first to the last put): from the last put to the end of the last scheduler transaction %v "+
		"(from the first put %v), by its record; polled: all CONFIGURED in /scheduler/stats after %v, all in the kernel after %v",
		total, txnSize, lastPut.Sub(first).Round(time.Millisecond), lastStop.Sub(lastPut).Round(time.Millisecond),
		lastStop.Sub(first).Round(time.Millisecond), tStatus.Round(time.Millisecond), tKernel.Round(time.Millisecond))
	t.Logf("%d NB transactions applied the %d routes", len(nb), total)
	if len(nb) > 50 {
		t.Errorf("%d NB transactions applied the routes, want at most 50", len(nb))
	}
}

// TestE2EEtcdUndecodableValue: a value in etcd that cannot be decoded
// makes its key INVALID with the reason, the other keys are applied, and a
// good value written over it is applied.
func TestE2EEtcdUndecodableValue(t *testing.T) {
	needRoot(t)
	n := uniqueNames(t, "t3")
	cfg := testConfig(t)
	a := startAgent(t, cfg, true)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)

	lo := &linuxif.Interface{Name: fmt.Sprintf("t3lo%d", pid), Type: linuxif.Interface_LOOPBACK, HostIfName: "lo",
		Enabled: true, Namespace: nsRef(n.ns), IpAddresses: []string{"10.99.0.1/32"}}
	loKey := keyOf(t, lo)
	kv.putRaw(loKey, `{"name":"`+lo.Name+`","type":"LOOPBACK","enabled":true,`) // cut short
	unknown := fmt.Sprintf("t3x%d", pid)
	unknownKey := models.LinuxInterface.KeyPrefix + unknown
	kv.putRaw(unknownKey, `{"name":"`+unknown+`","type":"VETH","colour":"red"}`)
	hostKey := kv.put(veth(n.host, n.peer, "", 0, "172.30.3.1/24"))
	peerKey := kv.put(veth(n.peer, n.host, n.ns, 0, "172.30.3.2/24"))
	routeKey := kv.put(route(n.peer, "10.203.0.0/16", "172.30.3.1"))
	for _, key := range []string{hostKey, peerKey, routeKey} {
		a.waitState(key, "CONFIGURED")
	}
	st := a.waitState(loKey, "INVALID")
	if !strings.Contains(st.Value.Error, loKey) || !strings.Contains(st.Value.Error, "unexpected") {
		t.Errorf("error of the cut-short value: %q, want one naming the key and the JSON problem", st.Value.Error)
	}
	st = a.waitState(unknownKey, "INVALID")
	if !strings.Contains(st.Value.Error, "colour") {
		t.Errorf("error of the value with an unknown field: %q, want one naming the field", st.Value.Error)
	}
	eventually(t, "the route in the kernel", func() (bool, string) {
		out, err := ourRoutes(n.ns)
		return err == nil && strings.Contains(out, "10.203.0.0/16 via 172.30.3.1"), fmt.Sprintf("%q %v", out, err)
	})

	// Fixed: applied.
	kv.put(lo)
	a.waitState(loKey, "CONFIGURED")
	eventually(t, "lo up with its address", func() (bool, string) {
		addrs, err1 := nsAddrs(n.ns, "lo")
		link, err2 := nsLink(n.ns, "lo")
		return err1 == nil && err2 == nil && strings.Contains(addrs, "inet 10.99.0.1/32") && strings.Contains(link, ",UP"),
			fmt.Sprintf("%q %q %v %v", addrs, link, err1, err2)
	})
	kv.del(unknownKey)
	a.waitState(unknownKey, "")
	for _, key := range []string{hostKey, peerKey, routeKey} {
		if st := a.status(key); st.Value.State != "CONFIGURED" {
			t.Errorf("%s: %+v", key, st.Value)
		}
	}
}

// ifindex returns the interface index of a link (from `ip -o link`).
func ifindex(t *testing.T, ns, link string) string {
	t.Helper()
	out, err := nsLink(ns, link)
	if err != nil {
		t.Fatal(err)
	}
	idx, _, _ := strings.Cut(out, ":")
	return idx
}

// TestE2ERestartInSync: the agent stopped and started again on the same
// etcd (directory and ports) with the kernel as it left it: the first full
// resync executes no operation, and the links are the same ones.
func TestE2ERestartInSync(t *testing.T) {
	needRoot(t)
	n := uniqueNames(t, "t4")
	cfg := testConfig(t)
	a := startAgent(t, cfg, true)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)
	keys := []string{
		kv.put(veth(n.host, n.peer, "", 1450, "172.30.4.1/24")),
		kv.put(veth(n.peer, n.host, n.ns, 1450, "172.30.4.2/24", "fd00:4::2/64")),
		kv.put(route(n.peer, "10.204.0.0/16", "172.30.4.1")),
		kv.put(&linuxl3.Route{OutgoingInterface: n.peer, DstNetwork: "10.205.0.0/16", GwAddr: "172.30.4.1", Metric: 50}),
		kv.put(&linuxl3.ARPEntry{Interface: n.peer, IpAddress: "172.30.4.9", HwAddress: "02:00:00:00:04:09"}),
		kv.put(&linuxif.Interface{Name: fmt.Sprintf("t4lo%d", pid), Type: linuxif.Interface_LOOPBACK, HostIfName: "lo",
			Enabled: true, Namespace: nsRef(n.ns), IpAddresses: []string{"10.99.4.1/32"}}),
	}
	for _, key := range keys {
		a.waitState(key, "CONFIGURED")
	}
	// Stop only once that transaction is over (a status can read CONFIGURED
	// while it still runs, see TestE2EStatusIsNotAheadOfTheKernel): a
	// downstream resync is queued behind it, and executes nothing here.
	if rec := a.downstreamResync(); len(rec.Executed) != 0 {
		t.Errorf("a downstream resync right after the values were applied executed %+v", rec.Executed)
	}
	hostIdx, peerIdx := ifindex(t, "", n.host), ifindex(t, n.ns, n.peer)
	routesBefore, err := ourRoutes(n.ns)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	a2 := startAgent(t, cfg, true)
	var resync *txnRecord
	for _, rec := range a2.history("") {
		if rec.Type == "NB transaction" && rec.Resync == "full resync" {
			resync = &rec
			break
		}
	}
	if resync == nil {
		t.Fatalf("no full resync in the history of the restarted agent: %+v", a2.history(""))
	}
	// Read it again by its number, as a client would.
	if recs := a2.history(fmt.Sprintf("?seq-num=%d", resync.SeqNum)); len(recs) != 1 || recs[0].SeqNum != resync.SeqNum {
		t.Fatalf("txn-history?seq-num=%d: %+v", resync.SeqNum, recs)
	} else {
		resync = &recs[0]
	}
	if len(resync.Values) < len(keys) {
		t.Errorf("the first full resync (#%d, %q) has %d values, want at least %d", resync.SeqNum, resync.Description, len(resync.Values), len(keys))
	}
	for _, op := range resync.Executed {
		if !op.has("NOOP") {
			t.Errorf("the first full resync after a restart on an in-sync system executed %s %s (flags %v, state %s, error %q)",
				op.Operation, op.Key, op.Flags, op.NewState, op.Error)
		}
	}
	for _, key := range keys {
		if st := a2.status(key); st.Value.State != "CONFIGURED" {
			t.Errorf("after the restart %s: %+v", key, st.Value)
		}
	}
	if h, p := ifindex(t, "", n.host), ifindex(t, n.ns, n.peer); h != hostIdx || p != peerIdx {
		t.Errorf("the veth pair was re-created: ifindex %s/%s before, %s/%s after", hostIdx, peerIdx, h, p)
	}
	if out, err := ourRoutes(n.ns); err != nil || out != routesBefore {
		t.Errorf("routes before the restart %q, after %q (%v)", routesBefore, out, err)
	}
}

// TestE2EGRPCConfigurator: the Configurator service over loopback: Update
// with wait_done, Plan, Get, Dump, Delete, WatchStatus, and the priority of
// gRPC over etcd with the fallback to the etcd value.
func TestE2EGRPCConfigurator(t *testing.T) {
	needRoot(t)
	n := uniqueNames(t, "t5")
	cfg := testConfig(t)
	a := startAgent(t, cfg, true)
	c := a.configurator()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	linuxDoc := func(ifs ...*linuxif.Interface) *configpb.Config {
		return &configpb.Config{LinuxConfig: &configpb.LinuxConfig{Interfaces: ifs}}
	}
	mtuOf := func(ns, link string) string {
		out, err := nsLink(ns, link)
		if err != nil {
			return "(" + err.Error() + ")"
		}
		m := regexp.MustCompile(`mtu (\d+)`).FindStringSubmatch(out)
		if m == nil {
			return "(no mtu in " + out + ")"
		}
		return m[1]
	}
	host := veth(n.host, n.peer, "", 1450, "172.30.5.1/24")
	peer := veth(n.peer, n.host, n.ns, 1450, "172.30.5.2/24")
	hostKey, peerKey := keyOf(t, host), keyOf(t, peer)

	// WatchStatus, opened before the change.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	watch, err := c.WatchStatus(wctx, &configuratorpb.WatchStatusRequest{KeyPrefixes: []string{models.LinuxInterface.KeyPrefix}})
	if err != nil {
		t.Fatal(err)
	}
	statuses := make(chan *api.BaseValueStatus, 100)
	go func() {
		defer close(statuses)
		for {
			st, err := watch.Recv()
			if err != nil {
				return
			}
			statuses <- st
		}
	}()

	// Update with wait_done: in the kernel when it returns.
	up, err := c.Update(ctx, &configuratorpb.UpdateRequest{Update: linuxDoc(host, peer), WaitDone: true})
	if err != nil || up.GetSeqNum() == 0 || len(up.GetErrors()) != 0 {
		t.Fatalf("Update: %v %v", up, err)
	}
	if m := mtuOf(n.ns, n.peer); m != "1450" {
		t.Errorf("after Update with wait_done: MTU of %s in %s: %s", n.peer, n.ns, m)
	}
	if out, err := nsAddrs(n.ns, n.peer); err != nil || !strings.Contains(out, "inet 172.30.5.2/24") {
		t.Errorf("after Update with wait_done: addresses of %s: %q %v", n.peer, out, err)
	}
	timeout := time.After(waitTimeout)
	for got := false; !got; {
		select {
		case st, ok := <-statuses:
			if !ok {
				t.Fatal("WatchStatus stream ended")
			}
			got = st.GetValue().GetKey() == peerKey && st.GetValue().GetState() == api.ValueStateConfigured
		case <-timeout:
			t.Fatalf("WatchStatus: no CONFIGURED status of %s", peerKey)
		}
	}

	// Plan: the operations, nothing applied.
	planned := veth(n.peer, n.host, n.ns, 1300, "172.30.5.2/24")
	plan, err := c.Plan(ctx, &configuratorpb.UpdateRequest{Update: linuxDoc(planned)})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	found := false
	for _, op := range plan.GetOperations() {
		if op.GetKey() == peerKey && op.GetOperation() == "UPDATE" && strings.Contains(op.GetValueJson(), `"mtu":1300`) &&
			strings.Contains(op.GetPrevValueJson(), `"mtu":1450`) {
			found = true
		}
	}
	if !found {
		t.Errorf("Plan: no UPDATE of %s to MTU 1300 in %v", peerKey, plan.GetOperations())
	}
	if m := mtuOf(n.ns, n.peer); m != "1450" {
		t.Errorf("after Plan: MTU %s, want 1450 (nothing applied)", m)
	}

	// Get: the desired state, as sent.
	got, err := c.Get(ctx, &configuratorpb.GetRequest{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if ifs := got.GetConfig().GetLinuxConfig().GetInterfaces(); len(ifs) != 2 || !proto.Equal(ifs[0], host) && !proto.Equal(ifs[1], host) ||
		!proto.Equal(ifs[0], peer) && !proto.Equal(ifs[1], peer) {
		t.Errorf("Get: %v, want %v and %v", ifs, host, peer)
	}

	// Dump: the actual state.
	dump, err := c.Dump(ctx, &configuratorpb.DumpRequest{})
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	var dumped *linuxif.Interface
	for _, i := range dump.GetState().GetLinuxConfig().GetInterfaces() {
		if i.GetName() == n.peer {
			dumped = i
		}
	}
	if dumped == nil || dumped.GetMtu() != 1450 || dumped.GetNamespace().GetReference() != n.ns || len(dumped.GetIpAddresses()) != 1 {
		t.Errorf("Dump: %s is %v", n.peer, dumped)
	}

	// Delete: gone from the kernel.
	del, err := c.Delete(ctx, &configuratorpb.DeleteRequest{Delete: linuxDoc(&linuxif.Interface{Name: n.host}, &linuxif.Interface{Name: n.peer}), WaitDone: true})
	if err != nil || len(del.GetErrors()) != 0 {
		t.Fatalf("Delete: %v %v", del, err)
	}
	if out, err := nsLink("", n.host); err == nil {
		t.Errorf("after Delete with wait_done: %s", out)
	}
	wcancel()

	// Priority: etcd has the pair with MTU 1400, gRPC overrides it with
	// 1450; deleting it from gRPC brings the etcd value back.
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)
	kv.put(veth(n.host, n.peer, "", 1400, "172.30.5.1/24"))
	kv.put(veth(n.peer, n.host, n.ns, 1400, "172.30.5.2/24"))
	eventually(t, "the etcd pair with MTU 1400", func() (bool, string) {
		m := mtuOf(n.ns, n.peer)
		return m == "1400", m
	})
	idx := ifindex(t, n.ns, n.peer)
	if up, err := c.Update(ctx, &configuratorpb.UpdateRequest{Update: linuxDoc(host, peer), WaitDone: true}); err != nil || len(up.GetErrors()) != 0 {
		t.Fatalf("Update over the etcd values: %v %v", up, err)
	}
	if m, h := mtuOf(n.ns, n.peer), mtuOf("", n.host); m != "1450" || h != "1450" {
		t.Errorf("a key in etcd and gRPC: MTU %s/%s, want gRPC's 1450", h, m)
	}
	if st := a.status(peerKey); st.Value.State != "CONFIGURED" {
		t.Errorf("%s: %+v", peerKey, st.Value)
	}
	if del, err := c.Delete(ctx, &configuratorpb.DeleteRequest{Delete: linuxDoc(host, peer), WaitDone: true}); err != nil || len(del.GetErrors()) != 0 {
		t.Fatalf("Delete over the etcd values: %v %v", del, err)
	}
	if m, h := mtuOf(n.ns, n.peer), mtuOf("", n.host); m != "1400" || h != "1400" {
		t.Errorf("the gRPC values deleted: MTU %s/%s, want etcd's 1400 back", h, m)
	}
	if now := ifindex(t, n.ns, n.peer); now != idx {
		t.Errorf("falling back to the etcd value re-created the link (ifindex %s, then %s)", idx, now)
	}
	for _, key := range []string{hostKey, peerKey} {
		if st := a.status(key); st.Value.State != "CONFIGURED" {
			t.Errorf("%s after the fallback: %+v", key, st.Value)
		}
	}
}

// TestE2EReadyzBeforeFirstSync: without etcd (the endpoint is a closed
// port) the agent serves, /readyz answers 503 naming etcd and gRPC health
// NOT_SERVING; once an etcd serves there, it becomes ready.
func TestE2EReadyzBeforeFirstSync(t *testing.T) {
	cfg := testConfig(t)
	etcdURL := cfg.Etcd.EmbeddedClientURL
	cfg.Etcd.Endpoints, cfg.Etcd.EmbeddedDir = []string{etcdURL}, ""
	cfg.Linux.Disabled = os.Geteuid() != 0
	a := startAgent(t, cfg, false)

	code, body := a.do("GET", "/readyz", nil)
	var why struct {
		Status     string   `json:"status"`
		WaitingFor []string `json:"waiting_for"`
	}
	if err := json.Unmarshal(body, &why); code != http.StatusServiceUnavailable || err != nil ||
		!strings.Contains(strings.Join(why.WaitingFor, " "), "etcd") {
		t.Errorf("/readyz without etcd: %d %s, want 503 naming etcd", code, body)
	}
	if code, _ := a.do("GET", "/livez", nil); code != http.StatusOK {
		t.Errorf("/livez without etcd: %d", code)
	}
	health := healthpb.NewHealthClient(a.grpcConn())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for _, svc := range healthServices {
		if hr, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc}); err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("gRPC health of %q without etcd: %v %v", svc, hr, err)
		}
	}

	// etcd comes up where the agent looks for it.
	e, err := etcdsource.StartEmbedded(etcdsource.EmbeddedConfig{Dir: filepath.Join(t.TempDir(), "etcd"), ClientURL: etcdURL,
		PeerURL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	start := time.Now()
	a.waitReady()
	t.Logf("ready %v after etcd started", time.Since(start).Round(time.Millisecond))
	for _, svc := range healthServices {
		eventually(t, fmt.Sprintf("gRPC health of %q SERVING", svc), func() (bool, string) {
			hr, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
			return err == nil && hr.GetStatus() == healthpb.HealthCheckResponse_SERVING, fmt.Sprintf("%v %v", hr, err)
		})
	}
	if err := a.stop(); err != nil { // before its etcd goes
		t.Fatal(err)
	}
}

// TestE2EVPPHealthFollowsReadiness: with VPP (vppsim or real) connected the agent is
// ready and gRPC health says SERVING, for the server ("") and the
// configurator service; when VPP goes away /readyz answers 503 naming VPP
// and health turns NOT_SERVING, seen by Check and by Watch streams, and a
// VPP value put meanwhile is FAILED; when a VPP serves on the socket again
// both are back to ready and SERVING, and the value is applied.
func TestE2EVPPHealthFollowsReadiness(t *testing.T) {
	v := startE2EVPP(t)
	if v.real != nil && v.real.User {
		t.Skipf("stops and starts VPP: not the user's VPP at %s", v.socket)
	}
	cfg := testConfig(t)
	cfg.VPP.Disabled, cfg.VPP.Socket = false, v.socket
	cfg.Linux.Disabled = os.Geteuid() != 0
	a := startAgent(t, cfg, true)

	health := healthpb.NewHealthClient(a.grpcConn())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	watches := map[string]healthpb.Health_WatchClient{}
	for _, svc := range healthServices {
		w, err := health.Watch(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("Watch %q: %v", svc, err)
		}
		watches[svc] = w
	}
	// waitHealth waits until every Watch stream reports st, then checks
	// Check and /readyz agree.
	waitHealth := func(st healthpb.HealthCheckResponse_ServingStatus, readyz int) {
		t.Helper()
		for svc, w := range watches {
			for {
				hr, err := w.Recv()
				if err != nil {
					t.Fatalf("Watch %q waiting for %v: %v", svc, st, err)
				}
				if hr.GetStatus() == st {
					break
				}
			}
			if hr, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc}); err != nil || hr.GetStatus() != st {
				t.Errorf("Check %q: %v %v, want %v", svc, hr, err, st)
			}
		}
		code, body := a.do("GET", "/readyz", nil)
		if code != readyz {
			t.Errorf("/readyz while health is %v: %d %s, want %d", st, code, body, readyz)
		}
		if readyz != http.StatusOK && !strings.Contains(string(body), "VPP not connected") {
			t.Errorf("/readyz without VPP: %s, want it named", body)
		}
	}
	waitHealth(healthpb.HealthCheckResponse_SERVING, http.StatusOK)

	v.down()
	waitHealth(healthpb.HealthCheckResponse_NOT_SERVING, http.StatusServiceUnavailable)

	// A VPP value put while VPP is away is not held back: its operation
	// fails (README: the agent), and the resync at the reconnect applies it.
	loop := &vppif.Interface{Name: "away1", Type: vppif.Interface_SOFTWARE_LOOPBACK}
	loopKey := keyOf(t, loop)
	if _, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{Update: &configpb.Config{VppConfig: &configpb.VppConfig{Interfaces: []*vppif.Interface{loop}}}}); err != nil {
		t.Fatal(err)
	}
	if st := a.waitState(loopKey, "FAILED"); !strings.Contains(st.Value.Error, "VPP is not connected") {
		t.Errorf("%s put while VPP is away: %+v, want FAILED as VPP is not connected", loopKey, st.Value)
	}

	v.up()
	waitHealth(healthpb.HealthCheckResponse_SERVING, http.StatusOK)
	a.waitState(loopKey, "CONFIGURED")
	if _, ok := v.tagged("away1"); !ok {
		t.Errorf("VPP has no interface tagged away1 after the reconnect: %v", v.interfaces())
	}
}

// TestE2ESIGTERM: the real binary, started with a configuration file and
// an init file (examples/veth-route.yaml in a namespace of the test's),
// exits 0 on SIGTERM within its grace and leaves the configuration in the
// kernel.
func TestE2ESIGTERM(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("builds and runs the agent binary; skipped with -short")
	}
	n := uniqueNames(t, "t7")
	example, err := os.ReadFile("../../examples/veth-route.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.NewReplacer("veth-host", n.host, "veth-app", n.peer, "app-lo", fmt.Sprintf("t7lo%d", pid),
		"reference: app", "reference: "+n.ns, "192.168.50.", "172.30.7.").Replace(string(example))
	dir := t.TempDir()
	initFile := filepath.Join(dir, "init.yaml")
	if err := os.WriteFile(initFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	restPort, grpcPort := freePort(t), freePort(t)
	grace := 10 * time.Second
	config := fmt.Sprintf(`label: vpp1
log_level: info
rest: {address: 127.0.0.1:%d}
grpc: {address: 127.0.0.1:%d}
etcd:
  embedded_dir: %s
  embedded_client_url: http://127.0.0.1:%d
  embedded_peer_url: http://127.0.0.1:%d
init_file: %s
shutdown_grace: %v
vpp: {disabled: true}
`, restPort, grpcPort, filepath.Join(dir, "etcd"), freePort(t), freePort(t), initFile, grace)
	configFile := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg Config // what runAgentFile needs to know of the file
	cfg.REST.Address, cfg.GRPC.Address = fmt.Sprintf("127.0.0.1:%d", restPort), fmt.Sprintf("127.0.0.1:%d", grpcPort)
	cfg.ShutdownGrace = Duration{grace}
	a := runAgentFile(t, configFile, cfg)
	// veth-app is eth0 in its namespace (host_if_name).
	wantRoute := "10.200.0.0/16 via 172.30.7.1 dev eth0"
	if out, err := ourRoutes(n.ns); err != nil || !strings.Contains(out, wantRoute) {
		t.Fatalf("before SIGTERM: routes %q %v, want %q", out, err, wantRoute)
	}

	a.stopped = true // stopped here, with the grace as the limit
	a.cancel()       // SIGTERM
	start := time.Now()
	select {
	case err := <-a.done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0", err)
		}
		t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(grace):
		t.Fatalf("still running %v after SIGTERM", grace)
	}
	if !strings.Contains(a.log.String(), "the network configuration stays in place") {
		t.Errorf("no graceful-stop line in the log")
	}
	// The configuration stays.
	if !netnsExists(n.ns) {
		t.Fatalf("namespace %s gone after SIGTERM", n.ns)
	}
	if out, err := nsLink(n.ns, "eth0"); err != nil || !strings.Contains(out, "UP") || !strings.Contains(out, "alias netagent/vpp1/"+n.peer) {
		t.Errorf("after SIGTERM: eth0 (%s) in %s: %q %v", n.peer, n.ns, out, err)
	}
	if out, err := nsLink("", n.host); err != nil {
		t.Errorf("after SIGTERM: %s: %q %v", n.host, out, err)
	}
	if out, err := ourRoutes(n.ns); err != nil || !strings.Contains(out, wantRoute) {
		t.Errorf("after SIGTERM: routes %q %v, want %q", out, err, wantRoute)
	}
	if out, err := ipCmd("-n", n.ns, "neigh", "show", "dev", "eth0"); err != nil || !strings.Contains(out, "172.30.7.9 lladdr 02:00:00:00:50:09 PERMANENT") {
		t.Errorf("after SIGTERM: neighbours %q %v", out, err)
	}
	if !portFree(restPort) {
		t.Errorf("REST port %d still bound after the exit", restPort)
	}
}

// TestE2EBadInputs: configuration, listeners, REST arguments, gRPC values
// and the token.
func TestE2EBadInputs(t *testing.T) {
	t.Run("config file with an unknown field", func(t *testing.T) {
		file := writeFile(t, "agent.yaml", "label: vpp1\ngrpc: {address: 127.0.0.1:9111}\nshutdown_graces: 5s\n")
		_, err := loadConfig([]string{"--config", file}, env(nil))
		if err == nil || !strings.Contains(err.Error(), file+" (YAML): line 3: shutdown_graces: unknown field") {
			t.Errorf("loadConfig: %v, want an error naming the field and the file", err)
		}
	})

	t.Run("port taken", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		takenPort := taken.Addr().(*net.TCPAddr).Port
		for _, c := range []struct {
			name string
			set  func(*Config)
			want string
		}{
			{"grpc", func(c *Config) { c.GRPC.Address = taken.Addr().String() }, "grpc listener on " + taken.Addr().String()},
			{"rest", func(c *Config) { c.REST.Address = taken.Addr().String() }, "rest listener on " + taken.Addr().String()},
			{"embedded etcd", func(c *Config) { c.Etcd.EmbeddedClientURL = fmt.Sprintf("http://127.0.0.1:%d", takenPort) },
				fmt.Sprintf("client URL http://127.0.0.1:%d", takenPort)},
		} {
			t.Run(c.name, func(t *testing.T) {
				cfg := testConfig(t)
				// Without the Linux plugins: see TestE2ERunFailingAfterTheLinuxPlugins.
				cfg.Linux.Disabled = true
				restPort, grpcPort := freePort(t), freePort(t)
				cfg.REST.Address, cfg.GRPC.Address = fmt.Sprintf("127.0.0.1:%d", restPort), fmt.Sprintf("127.0.0.1:%d", grpcPort)
				c.set(&cfg)
				etcdPort := 0
				if _, p, ok := strings.Cut(strings.TrimPrefix(cfg.Etcd.EmbeddedClientURL, "http://"), ":"); ok {
					fmt.Sscan(p, &etcdPort)
				}
				leaks := goleak.IgnoreCurrent()
				done := make(chan error, 1)
				go func() { done <- runAgent(context.Background(), cfg, io.Discard) }()
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "address already in use") {
						t.Errorf("run: %v, want an error naming %q and the cause", err, c.want)
					}
				case <-time.After(waitTimeout):
					t.Fatal("run did not return with a port taken")
				}
				for _, p := range []int{restPort, grpcPort, etcdPort} {
					if p != takenPort && !portFree(p) {
						t.Errorf("port %d still bound after run failed", p)
					}
				}
				goleak.VerifyNone(t, leaks)
			})
		}
	})

	// The agent of the rest has no etcd at all (nothing configured must
	// work: it is ready at once, and gRPC configures Linux).
	needRoot(t)
	n := uniqueNames(t, "t8")
	cfg := testConfig(t)
	cfg.Etcd.EmbeddedDir = ""
	const token = "e2e-secret-token"
	cfg.Token = NewSecret(token)
	a := startAgent(t, cfg, true)
	bearer := map[string]string{"Authorization": "Bearer " + token}

	t.Run("REST arguments", func(t *testing.T) {
		for _, c := range []struct{ method, path, want string }{
			{"GET", "/scheduler/txn-history?seq-num=abc", "seq-num"},
			{"GET", "/scheduler/txn-history?since=yesterday", "since"},
			{"GET", "/scheduler/txn-history?seq-num=1&since=0", "excludes"},
			{"GET", "/scheduler/status?colour=red", `unknown argument "colour"`},
			{"GET", "/scheduler/status?key=a&descriptor=b", "one of"},
			{"GET", "/scheduler/dump?descriptor=linux-interface&view=sideways", "view"},
			{"GET", "/scheduler/graph?format=png", "format"},
			{"POST", "/scheduler/downstream-resync?retry=maybe", "retry"},
		} {
			code, body := a.do(c.method, c.path, bearer)
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(body, &e); code != http.StatusBadRequest || err != nil || !strings.Contains(e.Error, c.want) {
				t.Errorf("%s %s: %d %s, want 400 with an error naming %q", c.method, c.path, code, body, c.want)
			}
		}
		if code, body := a.do("GET", "/scheduler/status?key=config/linux/interfaces/v2/interface/nowhere", nil); code != http.StatusNotFound {
			t.Errorf("status of an unknown key: %d %s, want 404", code, body)
		}
	})

	t.Run("REST token", func(t *testing.T) {
		code, body := a.do("POST", "/scheduler/downstream-resync", nil)
		if code != http.StatusUnauthorized || !strings.Contains(string(body), "Bearer") {
			t.Errorf("downstream resync without the token: %d %s, want 401", code, body)
		}
		if code, body := a.do("POST", "/scheduler/downstream-resync", map[string]string{"Authorization": "Bearer wrong"}); code != http.StatusUnauthorized {
			t.Errorf("downstream resync with a wrong token: %d %s, want 401", code, body)
		}
		code, body = a.do("POST", "/scheduler/downstream-resync", bearer)
		var out struct {
			Transaction txnRecord `json:"transaction"`
			Error       string    `json:"error"`
		}
		if err := json.Unmarshal(body, &out); code != http.StatusOK || err != nil || out.Transaction.Resync != "downstream resync" || out.Error != "" {
			t.Errorf("downstream resync with the token: %d %s", code, body)
		}
		for _, path := range []string{"/scheduler/stats", "/readyz", "/info/version", "/metrics"} {
			if code, body := a.do("GET", path, nil); code != http.StatusOK {
				t.Errorf("GET %s without the token: %d %s, want 200 (reading needs no token)", path, code, body)
			}
		}
	})

	c := a.configurator()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	authed := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	lo := &linuxif.Interface{Name: fmt.Sprintf("t8lo%d", pid), Type: linuxif.Interface_LOOPBACK, HostIfName: "lo",
		Enabled: true, Namespace: nsRef(n.ns), IpAddresses: []string{"10.99.8.1/32"}}
	doc := &configpb.Config{LinuxConfig: &configpb.LinuxConfig{Interfaces: []*linuxif.Interface{lo}}}

	t.Run("gRPC token", func(t *testing.T) {
		_, err := c.Update(ctx, &configuratorpb.UpdateRequest{Update: doc, WaitDone: true})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("Update without the token: %v, want Unauthenticated", err)
		}
		if _, err := c.Delete(ctx, &configuratorpb.DeleteRequest{Delete: doc}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("Delete without the token: %v, want Unauthenticated", err)
		}
		if _, err := c.Get(ctx, &configuratorpb.GetRequest{}); err != nil {
			t.Errorf("Get without the token: %v (reading needs no token)", err)
		}
		// The original's service is guarded the same way.
		lc := ligatocfg.NewConfiguratorServiceClient(a.grpcConn())
		ldoc := &ligatocfg.Config{LinuxConfig: &ligatolinux.ConfigData{Interfaces: []*linuxif.Interface{lo}}}
		if _, err := lc.Update(ctx, &ligatocfg.UpdateRequest{Update: ldoc, WaitDone: true}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("ligato Update without the token: %v, want Unauthenticated", err)
		}
		if _, err := lc.Delete(ctx, &ligatocfg.DeleteRequest{Delete: ldoc}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("ligato Delete without the token: %v, want Unauthenticated", err)
		}
		if _, err := lc.Get(ctx, &ligatocfg.GetRequest{}); err != nil {
			t.Errorf("ligato Get without the token: %v (reading needs no token)", err)
		}
		if a.status(keyOf(t, lo)).Value.State != "" {
			t.Errorf("the refused Update was applied: %+v", a.status(keyOf(t, lo)))
		}
		up, err := c.Update(authed, &configuratorpb.UpdateRequest{Update: doc, WaitDone: true})
		if err != nil || len(up.GetErrors()) != 0 {
			t.Fatalf("Update with the token: %v %v", up, err)
		}
		if out, err := nsAddrs(n.ns, "lo"); err != nil || !strings.Contains(out, "inet 10.99.8.1/32") {
			t.Errorf("after the Update: addresses of lo in %s: %q %v", n.ns, out, err)
		}
	})

	t.Run("gRPC invalid value", func(t *testing.T) {
		bad := proto.Clone(lo).(*linuxif.Interface)
		bad.IpAddresses = []string{"10.99.8.300/32"}
		badDoc := &configpb.Config{LinuxConfig: &configpb.LinuxConfig{Interfaces: []*linuxif.Interface{bad}}}
		for name, call := range map[string]func() error{
			"Update": func() error {
				_, err := c.Update(authed, &configuratorpb.UpdateRequest{Update: badDoc, WaitDone: true})
				return err
			},
			"Plan": func() error { _, err := c.Plan(authed, &configuratorpb.UpdateRequest{Update: badDoc}); return err },
		} {
			err := call()
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "linux_config.interfaces[0]") ||
				!strings.Contains(err.Error(), "ip_addresses") {
				t.Errorf("%s with an invalid IP: %v, want InvalidArgument naming the item and the field", name, err)
			}
		}
		if _, err := c.Update(authed, &configuratorpb.UpdateRequest{}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("Update without a configuration: %v, want InvalidArgument", err)
		}
		// The good value stays.
		if out, err := nsAddrs(n.ns, "lo"); err != nil || !strings.Contains(out, "inet 10.99.8.1/32") {
			t.Errorf("addresses of lo in %s: %q %v", n.ns, out, err)
		}
		if st := a.status(keyOf(t, lo)); st.Value.State != "CONFIGURED" {
			t.Errorf("%+v", st.Value)
		}
	})
}

// TestE2EStatusIsNotAheadOfTheKernel: the REST status of a value says
// CONFIGURED only once it is configured. A route whose Create fails (a
// foreign route to the same destination and metric is in the way) comes
// last in a transaction of 5,000 routes; while the transaction runs, its
// status is polled: it must never read CONFIGURED, since it never is.
func TestE2EStatusIsNotAheadOfTheKernel(t *testing.T) {
	needRoot(t)
	const routes = 5000
	n := uniqueNames(t, "t9")
	cfg := testConfig(t)
	a := startAgent(t, cfg, true)
	c := a.configurator()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	pair := &configpb.Config{LinuxConfig: &configpb.LinuxConfig{Interfaces: []*linuxif.Interface{
		veth(n.host, n.peer, "", 0, "172.30.9.1/24"), veth(n.peer, n.host, n.ns, 0, "172.30.9.2/24")}}}
	if up, err := c.Update(ctx, &configuratorpb.UpdateRequest{Update: pair, WaitDone: true}); err != nil || len(up.GetErrors()) != 0 {
		t.Fatalf("Update: %v %v", up, err)
	}
	// The foreign route in the way (protocol static, not the agent's).
	if _, err := ipCmd("-n", n.ns, "route", "add", "10.99.0.0/24", "via", "172.30.9.1", "dev", n.peer, "proto", "static"); err != nil {
		t.Fatal(err)
	}
	doc := &configpb.Config{LinuxConfig: &configpb.LinuxConfig{}}
	for i := range routes {
		doc.LinuxConfig.Routes = append(doc.LinuxConfig.Routes, route(n.peer, fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), "172.30.9.1"))
	}
	blocked := route(n.peer, "10.99.0.0/24", "172.30.9.1")
	blockedKey := keyOf(t, blocked)
	doc.LinuxConfig.Routes = append(doc.LinuxConfig.Routes, blocked) // its key sorts last

	stop := make(chan struct{})
	polled := make(chan map[string]int, 1)
	go func() {
		seen := map[string]int{}
		client := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-stop:
				polled <- seen
				return
			default:
			}
			resp, err := client.Get(a.url("/scheduler/status?key=" + blockedKey))
			if err != nil {
				seen["error: "+err.Error()]++
				continue
			}
			var out struct {
				Statuses []baseStatus `json:"statuses"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if len(out.Statuses) == 1 {
				seen[out.Statuses[0].Value.State]++
			} else {
				seen["(none)"]++
			}
		}
	}()
	up, err := c.Update(ctx, &configuratorpb.UpdateRequest{Update: doc, WaitDone: true})
	close(stop)
	seen := <-polled
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	t.Logf("states of %s read while the transaction ran: %v", blockedKey, seen)
	if len(up.GetErrors()) != 1 || up.GetErrors()[0].GetKey() != blockedKey {
		t.Errorf("errors of the Update: %v, want one, of %s", up.GetErrors(), blockedKey)
	}
	// (RETRYING: gRPC changes are committed with the default retry; the
	// foreign route may go away.)
	if st := a.status(blockedKey); (st.Value.State != "RETRYING" && st.Value.State != "FAILED") || !strings.Contains(st.Value.Error, "foreign route") {
		t.Errorf("status of the blocked route after the transaction: %+v, want RETRYING (or FAILED) naming the foreign route", st.Value)
	}
	if seen["CONFIGURED"] > 0 {
		t.Errorf("BUG: /scheduler/status said CONFIGURED %d times for %s while its transaction ran, but its Create failed "+
			"(the scheduler shows the simulated outcome while it executes: callbacks run without the graph lock)", seen["CONFIGURED"], blockedKey)
	}
}

// TestE2EStopWithAWatchOpen: a client following WatchStatus (agentctl
// config watch) does not hold up the graceful stop: Run returns soon
// after its context ends, not at the end of the shutdown grace.
func TestE2EStopWithAWatchOpen(t *testing.T) {
	cfg := testConfig(t)
	cfg.Linux.Disabled = os.Geteuid() != 0
	cfg.ShutdownGrace = Duration{6 * time.Second}
	a := startAgent(t, cfg, true)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	watch, err := a.configurator().WatchStatus(ctx, &configuratorpb.WatchStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := watch.Recv(); err != nil {
				ended <- err
				return
			}
		}
	}()
	// The stream is open once the server has sent the header.
	if _, err := watch.Header(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("run returned %v after its context ended (grace %v)", took.Round(time.Millisecond), cfg.ShutdownGrace.Duration)
	if took > 3*time.Second {
		t.Errorf("BUG: with a WatchStatus stream open, the graceful stop took %v (the shutdown grace is %v): "+
			"Run does not end the Configurator's streams (grpcsource.Server.Close) before grpc.Server.GracefulStop",
			took.Round(time.Millisecond), cfg.ShutdownGrace.Duration)
	}
	select {
	case err := <-ended:
		t.Logf("the stream ended with %v", err)
	case <-time.After(waitTimeout):
		t.Error("the WatchStatus stream did not end")
	}
}

// TestE2ERunFailingAfterTheLinuxPlugins: Run failing after New built the
// Linux plugins (here the embedded etcd's port is taken) releases them
// without a race: no interface watcher uses the netlink handles it closes.
// The race detector (go test -race) reports a failure; New and Run are
// repeated to hit a window.
func TestE2ERunFailingAfterTheLinuxPlugins(t *testing.T) {
	needRoot(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := testConfig(t)
	cfg.Etcd.EmbeddedClientURL = "http://" + taken.Addr().String()
	for range 50 {
		if err := runAgent(context.Background(), cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "embedded etcd") {
			t.Fatalf("run: %v, want the embedded etcd's error", err)
		}
	}
}

// An interface is in one bridge domain at a time (the bindings' Exclusive
// dependency, kept by the scheduler): one moved from a bridge domain to
// another in one transaction is moved at once, also when the new domain
// sorts first (the old binding is removed before the new one is made), and
// one put in two bridge domains waits PENDING in the second, its details
// naming the binding that holds it, until the first lets it go.
func TestE2EVPPBridgeDomainMoveAndConflict(t *testing.T) {
	a, _ := startVPPAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	update := func(full bool, bds ...*vppl2.BridgeDomain) *configuratorpb.UpdateResponse {
		t.Helper()
		loops := []*vppif.Interface{
			{Name: "mv1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true},
			{Name: "mv2", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true},
		}
		resp, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{WaitDone: true, FullResync: full,
			Update: &configpb.Config{VppConfig: &configpb.VppConfig{Interfaces: loops, BridgeDomains: bds}}})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		return resp
	}
	bd := func(name string, ifaces ...string) *vppl2.BridgeDomain {
		b := &vppl2.BridgeDomain{Name: name, Forward: true}
		for _, i := range ifaces {
			b.Interfaces = append(b.Interfaces, &vppl2.BridgeDomain_Interface{Name: i})
		}
		return b
	}
	noFailure := func(step string, seq uint64) {
		t.Helper()
		recs := a.history(fmt.Sprintf("?seq-num=%d", seq))
		if len(recs) != 1 {
			t.Fatalf("%s: history of transaction %d: %d records", step, seq, len(recs))
		}
		for _, op := range recs[0].Executed {
			if op.Error != "" {
				t.Errorf("%s: %s %s failed: %s", step, op.Operation, op.Key, op.Error)
			}
		}
	}
	binding := func(bdName, iface string) string { return l2plugin.BDInterfaceKey(bdName, iface) }
	// bindingStatus is the status of a binding (a derived value: the REST
	// status of its key is its bridge domain's, with the bindings in it).
	bindingStatus := func(key string) valueStatus {
		t.Helper()
		st := a.status(key)
		for _, d := range st.DerivedValues {
			if d.Key == key {
				return d
			}
		}
		return valueStatus{}
	}
	waitBinding := func(key, state string) valueStatus {
		t.Helper()
		var st valueStatus
		eventually(t, fmt.Sprintf("state of %s is %s", key, state), func() (bool, string) {
			st = bindingStatus(key)
			return st.State == state, fmt.Sprintf("%+v", st)
		})
		return st
	}

	resp := update(true, bd("bd-z", "mv1"))
	noFailure("mv1 in bd-z", resp.GetSeqNum())
	waitBinding(binding("bd-z", "mv1"), "CONFIGURED")

	// Move mv1 to bd-a (sorts before bd-z) in one transaction.
	resp = update(true, bd("bd-a", "mv1"), bd("bd-z"))
	if len(resp.GetErrors()) != 0 {
		t.Errorf("move: errors %v", resp.GetErrors())
	}
	noFailure("move to bd-a", resp.GetSeqNum())
	if st := bindingStatus(binding("bd-a", "mv1")); st.State != "CONFIGURED" {
		t.Errorf("binding bd-a/mv1 right after the move: %+v, want CONFIGURED", st)
	}

	// mv1 in bd-a and bd-b: the second binding waits for the first.
	update(true, bd("bd-a", "mv1"), bd("bd-b", "mv1"), bd("bd-z"))
	st := waitBinding(binding("bd-b", "mv1"), "PENDING")
	if !slices.ContainsFunc(st.Details, func(d string) bool { return strings.Contains(d, binding("bd-a", "mv1")) }) {
		t.Errorf("waiting binding: details %q, want them to name %s", st.Details, binding("bd-a", "mv1"))
	}
	if st := bindingStatus(binding("bd-a", "mv1")); st.State != "CONFIGURED" {
		t.Errorf("binding bd-a/mv1 after the conflict: %+v, want CONFIGURED", st)
	}
	// bd-a lets mv1 go: the waiting binding is applied.
	update(true, bd("bd-a"), bd("bd-b", "mv1"), bd("bd-z"))
	waitBinding(binding("bd-b", "mv1"), "CONFIGURED")
}

// startSim serves a simulated VPP on socket until the test ends.
func startSim(t *testing.T, socket string) *vppsim.Sim {
	t.Helper()
	sim, err := vppsim.Start(vppsim.Options{SocketPath: socket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

// After VPP restarts (empty), the agent is not ready until the configuration
// is back in VPP: /readyz never answers 200 while VPP lacks a value.
func TestE2ENotReadyWhileVPPIsBeingRestored(t *testing.T) {
	v := startE2EVPP(t)
	v.needSim("delays create_loopback (Delay) to see the agent while it restores VPP")
	a, sim := startVPPAgentOn(t, v), v.sim
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	loop := &vppif.Interface{Name: "back1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true}
	if _, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{WaitDone: true,
		Update: &configpb.Config{VppConfig: &configpb.VppConfig{Interfaces: []*vppif.Interface{loop}}}}); err != nil {
		t.Fatal(err)
	}
	hasLoop := func() bool {
		return slices.ContainsFunc(sim.Interfaces(), func(i vppsim.Interface) bool { return i.Tag == "back1" })
	}
	if !hasLoop() {
		t.Fatal("VPP has no back1 before the restart")
	}
	// The restarted VPP takes 1 s to create the loopback.
	sim.Delay("create_loopback", time.Second)
	if err := sim.Restart(0); err != nil {
		t.Fatal(err)
	}
	// (Until the agent sees the connection drop it cannot know VPP
	// restarted; from then on, 200 means VPP has the configuration.)
	sawNotReady, sawApplying := false, false
	eventually(t, "the agent not ready after the VPP restart, then ready with back1 back in VPP", func() (bool, string) {
		code, body := a.do("GET", "/readyz", nil)
		if code != http.StatusOK {
			sawNotReady = true
		}
		if code == http.StatusOK && sawNotReady && !hasLoop() {
			t.Fatalf("/readyz 200 while the restarted VPP lacks back1")
		}
		if strings.Contains(string(body), "being applied") {
			sawApplying = true
		}
		return code == http.StatusOK && sawNotReady, fmt.Sprintf("%d %s", code, body)
	})
	if !sawApplying {
		t.Error("/readyz never said the configuration was being applied to the restarted VPP")
	}
}

// TestE2EAnswersWhileVPPHangs: VPP hangs on a request of the agent's
// (vppsim holds create_loopback, so the scheduler's worker is in a
// descriptor call that gets no answer), and the agent's readers answer
// from what the last finished transaction left, each within 2 s: /readyz
// 200, /metrics with the scheduler's values, the status of a configured
// loopback, /scheduler/stats, the NB dump, /info/status, gRPC health
// SERVING; the loopback being created is not there yet. Once VPP answers,
// it is CONFIGURED. (plugins/kvscheduler's doc: readers never wait for
// the SB; a reader taking the transaction's lock would time out here.)
func TestE2EAnswersWhileVPPHangs(t *testing.T) {
	v := startE2EVPP(t)
	v.needSim("makes VPP hang on create_loopback (Hold)")
	patientHealthChecks(t)
	cfg := testConfig(t)
	cfg.VPP.Disabled, cfg.VPP.Socket = false, v.socket
	cfg.Linux.Disabled = true
	// The call hangs until the release, not until the call timeout (5 s).
	cfg.VPP.CallTimeout = Duration{waitTimeout}
	a, sim := startAgent(t, cfg, true), v.sim
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	first := &vppif.Interface{Name: "hang1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true}
	second := &vppif.Interface{Name: "hang2", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true}
	firstKey, secondKey := keyOf(t, first), keyOf(t, second)
	loops := func(l *vppif.Interface) *configpb.Config {
		return &configpb.Config{VppConfig: &configpb.VppConfig{Interfaces: []*vppif.Interface{l}}}
	}
	if _, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{WaitDone: true, Update: loops(first)}); err != nil {
		t.Fatal(err)
	}
	a.waitState(firstKey, "CONFIGURED")
	const configuredIfs = `netagent_scheduler_values{descriptor="vpp-interface",state="configured"}`
	_, body := a.do("GET", "/metrics", nil)
	configuredBefore, ok := metric(body, configuredIfs)
	if !ok {
		t.Fatalf("/metrics has no %s", configuredIfs)
	}
	ifsBefore := a.stats().ValuesByDescriptor[ifplugin.InterfaceDescriptorName]
	health := healthpb.NewHealthClient(a.grpcConn())
	// (gRPC health follows the readiness every readinessPoll.)
	eventually(t, "gRPC health SERVING", func() (bool, string) {
		hr, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && hr.GetStatus() == healthpb.HealthCheckResponse_SERVING, fmt.Sprintf("%v %v", hr, err)
	})

	release := sim.Hold("create_loopback")
	t.Cleanup(release) // before the agent stops, also when the test fails
	// Not WaitDone: Update returns once the transaction is queued.
	if _, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{Update: loops(second)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the agent's create_loopback hanging in VPP", func() (bool, string) {
		n := sim.Held("create_loopback")
		return n == 1, fmt.Sprintf("%d create_loopback held", n)
	})

	quick := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := quick.Get(a.url(path))
		if err != nil {
			t.Errorf("GET %s while VPP hangs: %v", path, err)
			return 0, nil
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Errorf("GET %s while VPP hangs: reading the body: %v", path, err)
		}
		return resp.StatusCode, body
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz while VPP hangs: %d %s, want 200", code, body)
	}
	if code, body := get("/metrics"); code != http.StatusOK {
		t.Errorf("/metrics while VPP hangs: %d", code)
	} else if n, ok := metric(body, configuredIfs); !ok || n != configuredBefore {
		t.Errorf("/metrics while VPP hangs: %s = %v (found: %v), want %v as before the hung transaction", configuredIfs, n, ok, configuredBefore)
	}
	if code, body := get("/scheduler/status?key=" + url.QueryEscape(firstKey)); code != http.StatusOK || !strings.Contains(string(body), `"CONFIGURED"`) {
		t.Errorf("status of %s while VPP hangs: %d %s, want CONFIGURED", firstKey, code, body)
	}
	if code, body := get("/scheduler/status?key=" + url.QueryEscape(secondKey)); code != http.StatusNotFound {
		t.Errorf("status of %s while its creation hangs: %d %s, want 404 (not there until its transaction ends)", secondKey, code, body)
	}
	if code, body := get("/scheduler/stats"); code != http.StatusOK {
		t.Errorf("/scheduler/stats while VPP hangs: %d %s", code, body)
	} else {
		var st stats
		if err := json.Unmarshal(body, &st); err != nil || !maps.Equal(st.ValuesByDescriptor[ifplugin.InterfaceDescriptorName], ifsBefore) {
			t.Errorf("/scheduler/stats while VPP hangs: %s interfaces %v (%v), want %v as before the hung transaction",
				ifplugin.InterfaceDescriptorName, st.ValuesByDescriptor[ifplugin.InterfaceDescriptorName], err, ifsBefore)
		}
	}
	dump := "/scheduler/dump?descriptor=" + ifplugin.InterfaceDescriptorName + "&view=NB"
	if code, body := get(dump); code != http.StatusOK || !strings.Contains(string(body), firstKey) || strings.Contains(string(body), secondKey) {
		t.Errorf("%s while VPP hangs: %d %s, want %s and not %s", dump, code, body, firstKey, secondKey)
	}
	if code, body := get("/info/status"); code != http.StatusOK || !strings.Contains(string(body), `"ready": true`) {
		t.Errorf("/info/status while VPP hangs: %d %s, want ready", code, body)
	}
	healthCtx, cancelHealth := context.WithTimeout(ctx, 2*time.Second)
	defer cancelHealth()
	if hr, err := health.Check(healthCtx, &healthpb.HealthCheckRequest{}); err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health while VPP hangs: %v %v, want SERVING", hr, err)
	}
	// All of it was answered while the call hung: its transaction still
	// runs (it would have ended, the call failing, had the agent given up
	// on VPP).
	if code, body := get("/scheduler/status?key=" + url.QueryEscape(secondKey)); code != http.StatusNotFound || sim.Held("create_loopback") != 1 {
		t.Fatalf("after the checks: status of %s %d %s, %d create_loopback held; want the creation still hanging",
			secondKey, code, body, sim.Held("create_loopback"))
	}

	release()
	a.waitState(secondKey, "CONFIGURED")
	if _, ok := v.tagged("hang2"); !ok {
		t.Errorf("VPP has no interface tagged hang2 after the release: %v", v.interfaces())
	}
}

// patientHealthChecks keeps GoVPP's health check from giving up on a VPP
// that stops answering, until the test ends. VPP serves a connection's
// requests in order, so the probes wait behind a hung request (as in
// vppsim's Hold), and GoVPP would report VPP not responding after three
// missed probes (core.HealthCheckThreshold; about 3 s): the agent would
// then end the connection, and with it the hung call, in the middle of
// the test. A closed socket is still noticed (a probe fails). GoVPP's
// settings are process globals: call it before the test's agent starts;
// they are restored after it stopped (the tests of this package run one
// at a time, and a stopped agent's GoVPP loops have ended).
func patientHealthChecks(t *testing.T) {
	old := core.HealthCheckThreshold
	core.HealthCheckThreshold = math.MaxInt
	t.Cleanup(func() { core.HealthCheckThreshold = old })
}

// Without VPP, a Linux TAP_TO_VPP value waits for a VPP TAP that never
// comes, and its PENDING reason says so.
func TestE2ETapToVPPWithoutVPP(t *testing.T) {
	needRoot(t)
	a := startAgent(t, testConfig(t), true) // testConfig: VPP disabled
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	tap := &linuxif.Interface{Name: "tapnovpp", Type: linuxif.Interface_TAP_TO_VPP, Enabled: true,
		Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap9"}}}
	if _, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{WaitDone: true,
		Update: &configpb.Config{LinuxConfig: &configpb.LinuxConfig{Interfaces: []*linuxif.Interface{tap}}}}); err != nil {
		t.Fatal(err)
	}
	st := a.waitState(keyOf(t, tap), "PENDING")
	if !strings.Contains(strings.Join(st.Value.Details, " "), "vpp.disabled") {
		t.Errorf("TAP_TO_VPP without VPP: details %q, want them to say VPP is disabled", st.Value.Details)
	}
}

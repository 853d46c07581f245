package grpcsource_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	kvschedulerpb "github.com/netagent-io/netagent/proto/kvscheduler"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

func update(t *testing.T, e *env, req *configuratorpb.UpdateRequest) *configuratorpb.UpdateResponse {
	t.Helper()
	resp, err := e.client.Update(context.Background(), req)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return resp
}

func get(t *testing.T, e *env) *configpb.Config {
	t.Helper()
	resp, err := e.client.Get(context.Background(), &configuratorpb.GetRequest{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return resp.GetConfig()
}

// want builds the document BuildConfig gives for the values.
func want(t *testing.T, vs ...proto.Message) *configpb.Config {
	t.Helper()
	var kvs []models.KV
	for _, kv := range kvsOf(t, vs...) {
		kvs = append(kvs, models.KV{Key: kv.Key, Value: kv.Value})
	}
	c, err := models.Default.BuildConfig(kvs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func checkConfig(t *testing.T, what string, got, exp *configpb.Config) {
	t.Helper()
	if !proto.Equal(got, exp) {
		g, _ := models.MarshalJSON(got)
		w, _ := models.MarshalJSON(exp)
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func TestUpdateWaitDoneAndGet(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	l1, l2 := loop("loop1", "10.0.0.1/24"), loop("loop2")
	li := &linuxif.Interface{Name: "veth-a", Type: linuxif.Interface_DUMMY, Enabled: true}
	rt := &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.254", OutgoingInterface: "loop1"}
	resp := update(t, e, &configuratorpb.UpdateRequest{Update: cfg(l1, l2, rt, li), WaitDone: true})
	if resp.GetSeqNum() == 0 || len(resp.GetErrors()) > 0 {
		t.Fatalf("Update: seq %d, errors %v", resp.GetSeqNum(), resp.GetErrors())
	}
	rtKey, _ := models.Default.Key(rt)
	for _, key := range []string{vppKey("loop1"), vppKey("loop2"), linuxKey("veth-a"), rtKey} {
		if e.sb.Value(key) == nil {
			t.Errorf("%s not created in the SB", key)
		}
		if st := e.sched.GetValueStatus(key).GetValue().GetState(); st != api.ValueStateConfigured {
			t.Errorf("%s: state %v, want CONFIGURED", key, st)
		}
	}
	if !proto.Equal(e.sb.Value(vppKey("loop1")), l1) {
		t.Errorf("SB value of loop1: %v", e.sb.Value(vppKey("loop1")))
	}
	checkConfig(t, "Get", get(t, e), want(t, l1, l2, rt, li))

	// An update changes one value, the others stay.
	l1b := loop("loop1", "10.0.0.2/24")
	resp = update(t, e, &configuratorpb.UpdateRequest{Update: cfg(l1b), WaitDone: true})
	if len(resp.GetErrors()) > 0 {
		t.Fatalf("errors: %v", resp.GetErrors())
	}
	if !proto.Equal(e.sb.Value(vppKey("loop1")), l1b) {
		t.Errorf("SB value of loop1 after the update: %v", e.sb.Value(vppKey("loop1")))
	}
	checkConfig(t, "Get after the update", get(t, e), want(t, l1b, l2, rt, li))
}

// Without wait_done the reply comes once the change is queued, and the
// change is applied even though the call (and its context) is over.
func TestUpdateWithoutWaitIsApplied(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	block := make(chan struct{})
	e.sb.mu.Lock()
	e.sb.block = block
	e.sb.mu.Unlock()

	r1 := update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1"))})
	// loop1's Create holds the scheduler: loop2's transaction stays queued
	// after its call returned.
	waitFor(t, "the create of loop1", func() bool { return slices.Contains(e.sb.Calls(), "create "+vppKey("loop1")) })
	r2 := update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop2"))})
	if r1.GetSeqNum() == 0 || r2.GetSeqNum() <= r1.GetSeqNum() || len(r1.GetErrors())+len(r2.GetErrors()) > 0 {
		t.Fatalf("replies: %v, %v", r1, r2)
	}
	if e.sb.Value(vppKey("loop2")) != nil {
		t.Fatal("loop2 created before the reply's transaction could run")
	}
	close(block)
	e.sched.TransactionBarrier()
	for _, name := range []string{"loop1", "loop2"} {
		if e.sb.Value(vppKey(name)) == nil {
			t.Errorf("%s not created", name)
		}
	}
	if rec := e.sched.GetRecordedTransaction(r2.GetSeqNum()); rec == nil || len(rec.Executed) == 0 {
		t.Errorf("transaction %d of the second update did not run: %+v", r2.GetSeqNum(), rec)
	}
}

// Before the first full sync a change is kept and applied by it.
func TestUpdateBeforeFirstSync(t *testing.T) {
	e := newEnv(t)
	resp := update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1")), WaitDone: true})
	if resp.GetSeqNum() != 0 || len(resp.GetErrors()) != 0 {
		t.Fatalf("reply before the first sync: %v", resp)
	}
	if len(e.sb.Calls()) != 0 {
		t.Fatalf("applied before the first sync: %v", e.sb.Calls())
	}
	// The first sync (here: etcd's first state) applies it.
	e.start(t, loop("etcd1"))
	if e.sb.Value(vppKey("loop1")) == nil || e.sb.Value(vppKey("etcd1")) == nil {
		t.Fatalf("kept change not applied by the first sync: calls %v", e.sb.Calls())
	}
}

func TestUpdatePerKeyErrors(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	e.sb.SetFailCreate(vppKey("bad1"), errBoom)
	resp := update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("good1"), loop("bad1"), loop("good2")), WaitDone: true})
	if len(resp.GetErrors()) != 1 {
		t.Fatalf("errors: %v", resp.GetErrors())
	}
	ke := resp.GetErrors()[0]
	// (RETRYING: changes are committed with the default retry.)
	if ke.GetKey() != vppKey("bad1") || ke.GetOperation() != "CREATE" || !strings.Contains(ke.GetError(), "boom") ||
		ke.GetState() != kvschedulerpb.ValueState_RETRYING {
		t.Errorf("key error: %v", ke)
	}
	for _, name := range []string{"good1", "good2"} {
		if e.sb.Value(vppKey(name)) == nil {
			t.Errorf("%s not applied", name)
		}
	}
	// The desired state still has the failed value.
	checkConfig(t, "Get", get(t, e), want(t, loop("good1"), loop("bad1"), loop("good2")))
}

func TestFullResyncReplacesGRPCValuesOnly(t *testing.T) {
	e := newEnv(t)
	etcdLoop := loop("etcd1")
	e.start(t, etcdLoop)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("a"), loop("b")), WaitDone: true})
	resp := update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("b"), loop("c")), FullResync: true, WaitDone: true})
	if resp.GetSeqNum() == 0 || len(resp.GetErrors()) > 0 {
		t.Fatalf("full resync: %v", resp)
	}
	checkConfig(t, "Get", get(t, e), want(t, etcdLoop, loop("b"), loop("c")))
	if e.sb.Value(vppKey("a")) != nil || e.sb.Value(vppKey("c")) == nil || e.sb.Value(vppKey("etcd1")) == nil {
		t.Fatalf("SB after the full resync: calls %v", e.sb.Calls())
	}
	// An empty full resync removes every gRPC value.
	update(t, e, &configuratorpb.UpdateRequest{Update: &configpb.Config{}, FullResync: true, WaitDone: true})
	checkConfig(t, "Get after an empty full resync", get(t, e), want(t, etcdLoop))
}

func TestPlanChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1", "10.0.0.1/24")), WaitDone: true})
	calls := e.sb.Calls()
	before := get(t, e)

	// The route is listed first, but needs loop3: the plan creates loop3
	// first.
	rt := &vppl3.Route{DstNetwork: "10.3.0.0/16", OutgoingInterface: "loop3"}
	rtKey, _ := models.Default.Key(rt)
	resp, err := e.client.Plan(context.Background(), &configuratorpb.UpdateRequest{
		Update: &configpb.Config{VppConfig: &configpb.VppConfig{
			Routes:     []*vppl3.Route{rt},
			Interfaces: []*vppif.Interface{loop("loop1", "10.0.0.2/24"), loop("loop3")},
		}},
	})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	var got []string
	for _, op := range resp.GetOperations() {
		got = append(got, op.GetOperation()+" "+op.GetKey())
	}
	exp := []string{"UPDATE " + vppKey("loop1"), "CREATE " + vppKey("loop3"), "CREATE " + rtKey}
	var order []string
	for _, s := range got {
		if slices.Contains(exp, s) {
			order = append(order, s)
		}
	}
	if slices.Index(order, exp[1]) < 0 || slices.Index(order, exp[2]) < slices.Index(order, exp[1]) || !slices.Contains(order, exp[0]) {
		t.Fatalf("planned operations %v, want %v with loop3 before the route", got, exp)
	}
	for _, op := range resp.GetOperations() {
		if op.GetKey() == vppKey("loop1") {
			if op.GetValueJson() != `{"name":"loop1","type":"SOFTWARE_LOOPBACK","enabled":true,"ip_addresses":["10.0.0.2/24"]}` ||
				!strings.Contains(op.GetPrevValueJson(), `"10.0.0.1/24"`) {
				t.Errorf("loop1 operation: %v", op)
			}
		}
	}
	if after := e.sb.Calls(); !slices.Equal(after, calls) {
		t.Errorf("plan called the descriptors: %v", after[len(calls):])
	}
	checkConfig(t, "Get after the plan", get(t, e), before)
	if st := e.sched.GetValueStatus(vppKey("loop3")).GetValue().GetState(); st != api.ValueStateNonexistent {
		t.Errorf("loop3 after the plan: %v", st)
	}

	// A full resync plan deletes the gRPC values it does not list.
	resp, err = e.client.Plan(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("loop2")), FullResync: true})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	got = nil
	for _, op := range resp.GetOperations() {
		got = append(got, op.GetOperation()+" "+op.GetKey())
	}
	if !slices.Contains(got, "DELETE "+vppKey("loop1")) || !slices.Contains(got, "CREATE "+vppKey("loop2")) {
		t.Errorf("full resync plan: %v", got)
	}
	if after := e.sb.Calls(); !slices.Equal(after, calls) {
		t.Errorf("plan called the descriptors: %v", after[len(calls):])
	}
}

// An INVALID value sent again changes nothing (the scheduler plans no
// operation for it, unlike a FAILED value, which it retries), and both Plan
// and Update with wait_done still report it with its error. A value of the
// request that a source of higher priority overrides is not reported, and
// a fixed value is planned, not reported.
func TestUnchangedValuesInError(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	tunnel := &vppif.Interface{Name: "tun1", Type: vppif.Interface_GRE_TUNNEL}
	doc := cfg(tunnel, loop("good1"))
	first := update(t, e, &configuratorpb.UpdateRequest{Update: doc, WaitDone: true})
	if first.GetSeqNum() == 0 || len(first.GetErrors()) != 1 {
		t.Fatalf("first update: %v, want a transaction and the error of tun1", first)
	}
	wantTunnelError := func(what string, errs []*configuratorpb.KeyError) {
		t.Helper()
		if len(errs) != 1 || errs[0].GetKey() != vppKey("tun1") || errs[0].GetState() != kvschedulerpb.ValueState_INVALID ||
			errs[0].GetOperation() == "" || !strings.Contains(errs[0].GetError(), "GRE tunnels are not supported") {
			t.Errorf("%s: errors %v, want tun1 INVALID with its error", what, errs)
		}
	}

	plan, err := e.client.Plan(context.Background(), &configuratorpb.UpdateRequest{Update: doc})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if len(plan.GetOperations()) != 0 {
		t.Errorf("plan of the same document: operations %v, want none", plan.GetOperations())
	}
	wantTunnelError("plan of the same document", plan.GetUnchangedErrors())

	again := update(t, e, &configuratorpb.UpdateRequest{Update: doc, WaitDone: true})
	if again.GetSeqNum() != 0 {
		t.Errorf("update of the same document: transaction #%d, want none", again.GetSeqNum())
	}
	wantTunnelError("update of the same document", again.GetErrors())
	if quiet := update(t, e, &configuratorpb.UpdateRequest{Update: doc}); len(quiet.GetErrors()) != 0 {
		t.Errorf("update without wait_done: errors %v, want none (it does not wait)", quiet.GetErrors())
	}

	// Fixed: planned, nothing reported.
	plan, err = e.client.Plan(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("tun1"))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if ops := plan.GetOperations(); len(ops) != 1 || ops[0].GetKey() != vppKey("tun1") || ops[0].GetError() != "" || len(plan.GetUnchangedErrors()) != 0 {
		t.Errorf("plan of the fixed tunnel: %v, want its operation and no error", plan)
	}

	// The in-process client sets tun1 to a loopback: the gRPC value of tun1
	// is not the one applied, its INVALID status is gone and not reported.
	if _, err := e.o.Change(context.Background(), orchestrator.SourceLocal, kvsOf(t, loop("tun1")), api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	plan, err = e.client.Plan(context.Background(), &configuratorpb.UpdateRequest{Update: doc})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if len(plan.GetOperations()) != 0 || len(plan.GetUnchangedErrors()) != 0 {
		t.Errorf("plan of a value a source of higher priority overrides: %v, want nothing", plan)
	}
}

func TestDelete(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	arp := &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.9", PhysAddress: "02:00:00:00:00:09"}
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1"), loop("loop2"), arp), WaitDone: true})

	// Only the key fields: the name, the ARP entry's interface and address
	// (no MAC address).
	resp, err := e.client.Delete(context.Background(), &configuratorpb.DeleteRequest{
		Delete: &configpb.Config{VppConfig: &configpb.VppConfig{
			Interfaces: []*vppif.Interface{{Name: "loop2"}},
			Arps:       []*vppl3.ARPEntry{{Interface: "loop1", IpAddress: "10.0.0.9"}},
		}},
		WaitDone: true,
	})
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if resp.GetSeqNum() == 0 || len(resp.GetErrors()) > 0 {
		t.Fatalf("Delete: %v", resp)
	}
	if e.sb.Value(vppKey("loop2")) != nil || e.sb.Value(vppKey("loop1")) == nil {
		t.Fatalf("SB after the delete: calls %v", e.sb.Calls())
	}
	checkConfig(t, "Get after the delete", get(t, e), want(t, loop("loop1")))

	// Deleting what the gRPC source does not hold does nothing.
	resp, err = e.client.Delete(context.Background(), &configuratorpb.DeleteRequest{Delete: cfg(loop("nothing")), WaitDone: true})
	if err != nil || resp.GetSeqNum() != 0 {
		t.Fatalf("Delete of an unknown key: %v, %v", resp, err)
	}
}

// A key that etcd and gRPC both set takes the gRPC value; deleting it from
// gRPC brings the etcd value back.
func TestPriorityOverEtcd(t *testing.T) {
	e := newEnv(t)
	fromEtcd := loop("loop1", "10.0.0.1/24")
	e.start(t, fromEtcd)
	if !proto.Equal(e.sb.Value(vppKey("loop1")), fromEtcd) {
		t.Fatalf("etcd value not applied: %v", e.sb.Value(vppKey("loop1")))
	}
	fromGRPC := loop("loop1", "10.0.0.2/24")
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(fromGRPC), WaitDone: true})
	if !proto.Equal(e.sb.Value(vppKey("loop1")), fromGRPC) {
		t.Fatalf("gRPC value does not win: %v", e.sb.Value(vppKey("loop1")))
	}
	checkConfig(t, "Get", get(t, e), want(t, fromGRPC))

	if _, err := e.client.Delete(context.Background(), &configuratorpb.DeleteRequest{
		Delete: &configpb.Config{VppConfig: &configpb.VppConfig{Interfaces: []*vppif.Interface{{Name: "loop1"}}}}, WaitDone: true,
	}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if !proto.Equal(e.sb.Value(vppKey("loop1")), fromEtcd) {
		t.Fatalf("etcd value not back after the gRPC delete: %v", e.sb.Value(vppKey("loop1")))
	}
	checkConfig(t, "Get after the delete", get(t, e), want(t, fromEtcd))
}

func TestDump(t *testing.T) {
	e := newEnv(t)
	foreign := loop("foreign0")
	e.sb.Put(vppKey("foreign0"), foreign, true)
	e.start(t)
	li := &linuxif.Interface{Name: "veth-a", Type: linuxif.Interface_DUMMY, Enabled: true}
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1"), li), WaitDone: true})
	// Changed in the SB behind the agent's back: Dump shows the SB.
	drifted := loop("loop1", "192.168.1.1/24")
	e.sb.Put(vppKey("loop1"), drifted, false)

	resp, err := e.client.Dump(context.Background(), &configuratorpb.DumpRequest{})
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	checkConfig(t, "Dump", resp.GetState(), want(t, foreign, drifted, li))
	// The desired state is unchanged.
	checkConfig(t, "Get", get(t, e), want(t, loop("loop1"), li))

	e.sb.SetRetrieveErr(errBoom)
	_, err = e.client.Dump(context.Background(), &configuratorpb.DumpRequest{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Dump with a failing Retrieve: %v", err)
	}
}

func TestWatchStatus(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1"), &linuxif.Interface{Name: "veth-a"}), WaitDone: true})

	stream, err := e.client.WatchStatus(recvCtx(t), &configuratorpb.WatchStatusRequest{KeyPrefixes: []string{models.VPPInterface.KeyPrefix}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if first.GetValue().GetKey() != vppKey("loop1") || first.GetValue().GetState() != api.ValueStateConfigured {
		t.Fatalf("current status: %v", first)
	}
	// A change outside the prefixes is not sent; one inside is.
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(&linuxif.Interface{Name: "veth-b"}), WaitDone: true})
	e.sb.SetFailCreate(vppKey("loop2"), errBoom)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop2")), WaitDone: true})
	for {
		st, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if key := st.GetValue().GetKey(); key != vppKey("loop2") {
			t.Fatalf("status of %s sent", key)
		}
		if st.GetValue().GetState() == api.ValueStateFailed {
			if !strings.Contains(st.GetValue().GetError(), "boom") {
				t.Errorf("status: %v", st)
			}
			break
		}
	}

	// Deleting sends REMOVED.
	if _, err := e.client.Delete(context.Background(), &configuratorpb.DeleteRequest{Delete: cfg(loop("loop1")), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if st.GetValue().GetKey() == vppKey("loop1") && st.GetValue().GetState() == api.ValueStateRemoved {
			break
		}
	}
}

// Without the scheduler's listing the current statuses come from the keys
// the scheduler and the orchestrator know.
func TestWatchStatusPlainScheduler(t *testing.T) {
	e := newEnvWith(t, true)
	e.sb.Put(vppKey("foreign0"), loop("foreign0"), true)
	e.start(t)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1")), WaitDone: true})
	stream, err := e.client.WatchStatus(recvCtx(t), &configuratorpb.WatchStatusRequest{KeyPrefixes: []string{models.VPPInterface.KeyPrefix}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 2 {
		st, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		got = append(got, st.GetValue().GetKey()+" "+st.GetValue().GetState().String())
	}
	exp := []string{vppKey("foreign0") + " OBTAINED", vppKey("loop1") + " CONFIGURED"}
	if !slices.Equal(got, exp) {
		t.Fatalf("current statuses %v, want %v", got, exp)
	}
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop2")), WaitDone: true})
	for {
		st, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if st.GetValue().GetKey() == vppKey("loop2") && st.GetValue().GetState() == api.ValueStateConfigured {
			break
		}
	}
}

// The watch of a stream ends with the stream: nothing leaks when the client
// goes away (goleak in TestMain), and the server's Close ends open streams.
func TestWatchStatusEnds(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1")), WaitDone: true})
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := e.client.WatchStatus(ctx, &configuratorpb.WatchStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("Recv after cancel: %v", err)
	}

	stream, err = e.client.WatchStatus(recvCtx(t), &configuratorpb.WatchStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	e.srv.Close()
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("Recv after Close: %v", err)
	}
}

func TestNotify(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	li := &linuxif.Interface{Name: "veth-a", Type: linuxif.Interface_DUMMY, Enabled: true}
	rt := &vppl3.Route{DstNetwork: "10.1.0.0/16", OutgoingInterface: "loop1"}
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1"), li, rt), WaitDone: true})

	stream, err := e.client.Notify(recvCtx(t), &configuratorpb.NotifyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]kvschedulerpb.ValueState{}
	recvUntil := func(what string, done func() bool) {
		t.Helper()
		for !done() {
			n, err := stream.Recv()
			if err != nil {
				t.Fatalf("Recv waiting for %s: %v (got %v)", what, err, states)
			}
			if n.GetKey() != n.GetStatus().GetKey() {
				t.Fatalf("notification key %s, status of %s", n.GetKey(), n.GetStatus().GetKey())
			}
			if strings.Contains(n.GetKey(), "/route/") {
				t.Fatalf("notification of a route: %v", n)
			}
			states[n.GetKey()] = n.GetStatus().GetState()
		}
	}
	configured := func(keys ...string) func() bool {
		return func() bool {
			for _, k := range keys {
				if states[k] != api.ValueStateConfigured {
					return false
				}
			}
			return true
		}
	}
	recvUntil("the current states", configured(vppKey("loop1"), linuxKey("veth-a"), linuxStateKey("veth-a", true)))

	// VPP reports the link state.
	linkKey := "vpp/interface/loop1/link-state/UP"
	if err := e.sched.PushSBNotification(api.KVWithMetadata{Key: linkKey, Value: wrapperspb.String("UP"), Origin: api.FromSB}); err != nil {
		t.Fatal(err)
	}
	recvUntil("the link state", func() bool { return states[linkKey] == api.ValueStateObtained })

	// The Linux interface goes down: its state key changes.
	li.Enabled = false
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(li), WaitDone: true})
	recvUntil("the admin state change", func() bool {
		return states[linuxStateKey("veth-a", false)] == api.ValueStateConfigured &&
			states[linuxStateKey("veth-a", true)] == api.ValueStateRemoved
	})
}

func TestMalformedRequests(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	ctx := context.Background()
	check := func(what string, err error, parts ...string) {
		t.Helper()
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", what, err)
			return
		}
		for _, p := range parts {
			if !strings.Contains(status.Convert(err).Message(), p) {
				t.Errorf("%s: %q does not name %q", what, status.Convert(err).Message(), p)
			}
		}
	}
	badIP := loop("loop2", "10.0.0.300/24")
	_, err := e.client.Update(ctx, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1"), badIP), WaitDone: true})
	check("interface with an invalid IP", err, "vpp_config.interfaces[1]", "ip_addresses[0]", "10.0.0.300/24")

	badRoute := &vppl3.Route{DstNetwork: "10.0.0.0/33"}
	_, err = e.client.Update(ctx, &configuratorpb.UpdateRequest{Update: cfg(badRoute)})
	check("route with a bad CIDR", err, "vpp_config.routes[0]", "dst_network")

	_, err = e.client.Update(ctx, &configuratorpb.UpdateRequest{WaitDone: true})
	check("nil update", err, "update")
	_, err = e.client.Plan(ctx, &configuratorpb.UpdateRequest{})
	check("nil plan", err, "update")
	_, err = e.client.Plan(ctx, &configuratorpb.UpdateRequest{Update: cfg(badIP)})
	check("plan of an invalid interface", err, "vpp_config.interfaces[0]")
	_, err = e.client.Delete(ctx, &configuratorpb.DeleteRequest{})
	check("nil delete", err, "delete")
	_, err = e.client.Delete(ctx, &configuratorpb.DeleteRequest{Delete: cfg(&vppif.Interface{Name: "bad name"})})
	check("delete of an invalid name", err, "vpp_config.interfaces[0]", "name")
	// A long document's keys are worked out on more than one core: the
	// bad item is still named at its place.
	var many []proto.Message
	for k := range 3000 {
		many = append(many, &vppl3.Route{DstNetwork: fmt.Sprintf("10.%d.%d.0/24", k/256, k%256), OutgoingInterface: "loop1"})
	}
	many[2500] = &vppl3.Route{DstNetwork: "10.0.0.0/33"}
	_, err = e.client.Delete(ctx, &configuratorpb.DeleteRequest{Delete: cfg(many...)})
	check("delete of 3000 routes, one bad", err, "vpp_config.routes[2500]", "no value of the gRPC source has these fields")

	for _, prefixes := range [][]string{{""}, {"config/vpp/v9/"}} {
		stream, err := e.client.WatchStatus(recvCtx(t), &configuratorpb.WatchStatusRequest{KeyPrefixes: prefixes})
		if err == nil {
			_, err = stream.Recv()
		}
		check("watch of "+strings.Join(prefixes, ","), err)
	}

	// Nothing was applied or kept.
	if calls := e.sb.Calls(); len(calls) > 0 {
		t.Errorf("descriptors called: %v", calls)
	}
	checkConfig(t, "Get", get(t, e), &configpb.Config{})
}

// The service is registered under its proto name.
func TestRegister(t *testing.T) {
	e := newEnv(t)
	g := grpc.NewServer()
	e.srv.Register(g)
	if _, ok := g.GetServiceInfo()["netagent.configurator.Configurator"]; !ok {
		t.Fatalf("services: %v", g.GetServiceInfo())
	}
	g.Stop()
}

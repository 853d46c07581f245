package grpcsource_test

// Plans bound to a revision (issue 19): Plan tells the revision it was made
// against; an Update or Delete with that plan_revision is refused when the
// state changed since.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// planRevision plans doc and returns the revision of the plan.
func planRevision(t *testing.T, e *env, doc *configpb.Config) uint64 {
	t.Helper()
	resp, err := e.client.Plan(context.Background(), &configuratorpb.UpdateRequest{Update: doc})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if resp.GetRevision() == 0 {
		t.Fatalf("Plan: no revision in %v", resp)
	}
	return resp.GetRevision()
}

// A plan made stale by a change in between (here from etcd) is refused with
// FailedPrecondition naming both revisions and the change, and leaves the
// SB and the gRPC source as they were; planned again, it is applied.
func TestUpdateBoundToPlanRevision(t *testing.T) {
	e := newEnv(t)
	e.start(t, loop("etcd1"))
	doc := cfg(loop("loop1", "10.0.0.1/24"))

	rev := planRevision(t, e, doc)
	if cur := e.sched.CurrentRevision(); rev != cur {
		t.Fatalf("plan made against revision %d, the scheduler is at %d", rev, cur)
	}
	// The plan changed nothing: planning again gives the same revision.
	if again := planRevision(t, e, doc); again != rev {
		t.Fatalf("second plan: revision %d, want %d", again, rev)
	}
	// Another change comes in between.
	seqEtcd, err := e.o.Change(context.Background(), orchestrator.SourceEtcd, kvsOf(t, loop("etcd2")), api.TxnOptions{Description: "etcd change"})
	if err != nil {
		t.Fatal(err)
	}
	calls := len(e.sb.Calls())
	before := get(t, e)

	_, err = e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: doc, WaitDone: true, PlanRevision: proto.Uint64(rev)})
	st, _ := status.FromError(err)
	if st.Code() != codes.FailedPrecondition {
		t.Fatalf("Update of a stale plan: %v, want FailedPrecondition", err)
	}
	for _, want := range []string{
		fmt.Sprintf("planned against revision %d, now at revision %d", rev, rev+1),
		fmt.Sprintf("transaction %d", seqEtcd), `"etcd change"`, "plan again",
	} {
		if !strings.Contains(st.Message(), want) {
			t.Errorf("message %q does not say %q", st.Message(), want)
		}
	}
	if got := e.sb.Calls()[calls:]; len(got) > 0 {
		t.Errorf("the refused update called the SB: %v", got)
	}
	checkConfig(t, "Get after the refused update", get(t, e), before)
	if v := e.o.SourceValue(orchestrator.SourceGRPC, vppKey("loop1")); v != nil {
		t.Errorf("the gRPC source kept the refused value: %v", v)
	}

	rev = planRevision(t, e, doc)
	resp, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: doc, WaitDone: true, PlanRevision: proto.Uint64(rev)})
	if err != nil || resp.GetSeqNum() == 0 {
		t.Fatalf("Update of the current plan: %v, %v", resp, err)
	}
	if e.sb.Value(vppKey("loop1")) == nil {
		t.Fatal("loop1 not created by the current plan")
	}
	if cur := e.sched.CurrentRevision(); cur != rev+1 {
		t.Errorf("revision after the update: %d, want %d", cur, rev+1)
	}
}

// A bound update that changes nothing is checked all the same; without
// wait_done it still waits for the check.
func TestBoundUpdateWithoutChangeOrWait(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	doc := cfg(loop("loop1"))
	update(t, e, &configuratorpb.UpdateRequest{Update: doc, WaitDone: true})
	rev := planRevision(t, e, doc)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop2")), WaitDone: true})

	_, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: doc, PlanRevision: proto.Uint64(rev)})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("bound update of values unchanged, without wait_done, after a change: %v, want FailedPrecondition", err)
	}
	rev = e.sched.CurrentRevision()
	resp, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("loop3")), PlanRevision: proto.Uint64(rev)})
	if err != nil {
		t.Fatalf("bound update without wait_done: %v", err)
	}
	// It waited: the transaction is done when the reply comes.
	if rec := e.sched.GetRecordedTransaction(resp.GetSeqNum()); rec == nil || e.sb.Value(vppKey("loop3")) == nil {
		t.Fatalf("bound update without wait_done: transaction %d not done when the reply came", resp.GetSeqNum())
	}
}

// Delete is bound like Update.
func TestDeleteBoundToPlanRevision(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1"), loop("loop2")), WaitDone: true})
	rev := e.sched.CurrentRevision()
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop3")), WaitDone: true})

	del := &configpb.Config{VppConfig: &configpb.VppConfig{Interfaces: []*vppif.Interface{{Name: "loop1"}}}}
	_, err := e.client.Delete(context.Background(), &configuratorpb.DeleteRequest{Delete: del, WaitDone: true, PlanRevision: proto.Uint64(rev)})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("stale Delete: %v, want FailedPrecondition", err)
	}
	if e.sb.Value(vppKey("loop1")) == nil || e.o.SourceValue(orchestrator.SourceGRPC, vppKey("loop1")) == nil {
		t.Fatal("the refused delete removed loop1")
	}
	_, err = e.client.Delete(context.Background(), &configuratorpb.DeleteRequest{Delete: del, WaitDone: true, PlanRevision: proto.Uint64(e.sched.CurrentRevision())})
	if err != nil || e.sb.Value(vppKey("loop1")) != nil {
		t.Fatalf("current Delete: %v; loop1 in the SB: %v", err, e.sb.Value(vppKey("loop1")))
	}
}

// A full_resync update bound to a stale revision leaves every value of the
// gRPC source in place.
func TestFullResyncBoundToPlanRevision(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop1"), loop("loop2")), WaitDone: true})
	rev := e.sched.CurrentRevision()
	update(t, e, &configuratorpb.UpdateRequest{Update: cfg(loop("loop3")), WaitDone: true})
	before := get(t, e)

	_, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("loop9")), FullResync: true, WaitDone: true, PlanRevision: proto.Uint64(rev)})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("stale full resync: %v, want FailedPrecondition", err)
	}
	checkConfig(t, "Get after the refused full resync", get(t, e), before)
	if e.sb.Value(vppKey("loop9")) != nil || e.sb.Value(vppKey("loop1")) == nil {
		t.Fatalf("the refused full resync changed the SB: calls %v", e.sb.Calls())
	}
}

// Bad revisions: 0, one ahead of the agent, one before the first sync.
func TestBadPlanRevision(t *testing.T) {
	e := newEnv(t)
	doc := cfg(loop("loop1"))

	_, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: doc, WaitDone: true, PlanRevision: proto.Uint64(1)})
	if st, _ := status.FromError(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "first full sync") {
		t.Fatalf("bound update before the first sync: %v", err)
	}
	if v := e.o.SourceValue(orchestrator.SourceGRPC, vppKey("loop1")); v != nil {
		t.Errorf("the gRPC source kept the refused value: %v", v)
	}
	e.start(t)

	_, err = e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: doc, WaitDone: true, PlanRevision: proto.Uint64(0)})
	if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "plan_revision 0") {
		t.Fatalf("plan_revision 0: %v, want InvalidArgument", err)
	}
	_, err = e.client.Delete(context.Background(), &configuratorpb.DeleteRequest{Delete: doc, PlanRevision: proto.Uint64(0)})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Delete with plan_revision 0: %v, want InvalidArgument", err)
	}
	ahead := e.sched.CurrentRevision() + 10
	_, err = e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: doc, WaitDone: true, PlanRevision: proto.Uint64(ahead)})
	if st, _ := status.FromError(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), fmt.Sprintf("revision %d, which is ahead", ahead)) {
		t.Fatalf("plan_revision ahead: %v, want FailedPrecondition", err)
	}
	if len(e.sb.Calls()) > 0 || e.o.SourceValue(orchestrator.SourceGRPC, vppKey("loop1")) != nil {
		t.Fatalf("a refused update changed something: calls %v", e.sb.Calls())
	}
}

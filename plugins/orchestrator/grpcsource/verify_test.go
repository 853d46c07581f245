package grpcsource_test

// Updates verified after apply (issue 19): UpdateRequest.verify reads the
// values back and reverts the whole update when the southbound does not
// hold one; the gRPC source is put back with it.

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/netagent-io/netagent/plugins/orchestrator"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// A verified update of two interfaces whose southbound drops one: both are
// undone (the one kept is deleted again), the errors name the dropped one
// and the revert, and the gRPC source holds neither; the same update
// verified on a southbound that keeps it stays. A verified full resync is
// refused naming the field, with nothing applied.
func TestVerifiedUpdate(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	e.sb.SetLose(vppKey("lost"))
	calls := len(e.sb.Calls())
	resp, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("kept"), loop("lost")), Verify: true})
	if err != nil {
		t.Fatalf("verified update: %v", err)
	}
	var lost *configuratorpb.KeyError
	for _, ke := range resp.GetErrors() {
		if ke.GetKey() == vppKey("lost") {
			lost = ke
		}
	}
	if lost == nil || !strings.Contains(lost.GetError(), "verification after apply") || !strings.Contains(lost.GetError(), "reverted") {
		t.Fatalf("errors of the verified update: %v, want lost's verification failure and the revert", resp.GetErrors())
	}
	if e.sb.Value(vppKey("kept")) != nil || e.sb.Value(vppKey("lost")) != nil {
		t.Errorf("after the revert the SB holds kept %v, lost %v", e.sb.Value(vppKey("kept")), e.sb.Value(vppKey("lost")))
	}
	if got := e.sb.Calls()[calls:]; !slices.Contains(got, "create "+vppKey("kept")) || !slices.Contains(got, "delete "+vppKey("kept")) {
		t.Errorf("SB calls of the verified update: %v, want kept created and deleted again", got)
	}
	for _, name := range []string{"kept", "lost"} {
		if v := e.o.SourceValue(orchestrator.SourceGRPC, vppKey(name)); v != nil {
			t.Errorf("the gRPC source kept %s after the revert: %v", name, v)
		}
	}

	resp, err = e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("kept")), Verify: true})
	if err != nil || len(resp.GetErrors()) != 0 || resp.GetSeqNum() == 0 {
		t.Fatalf("verified update kept by the SB: %v, %v", resp, err)
	}
	if e.sb.Value(vppKey("kept")) == nil || e.o.SourceValue(orchestrator.SourceGRPC, vppKey("kept")) == nil {
		t.Errorf("the verified update was not kept")
	}

	calls = len(e.sb.Calls())
	_, err = e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("other")), FullResync: true, Verify: true})
	if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "Verify") {
		t.Errorf("verified full resync: %v, want InvalidArgument naming Verify", err)
	}
	if got := e.sb.Calls()[calls:]; len(got) > 0 {
		t.Errorf("the refused full resync called the SB: %v", got)
	}
	if e.o.SourceValue(orchestrator.SourceGRPC, vppKey("other")) != nil || e.o.SourceValue(orchestrator.SourceGRPC, vppKey("kept")) == nil {
		t.Errorf("the refused full resync changed the gRPC source")
	}
}

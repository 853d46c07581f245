package grpcsource_test

// Probes of a change (issue 19): checks that must pass once it is applied.

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/netagent-io/netagent/plugins/orchestrator"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// An update whose probe passes is kept (nothing left pending, the probe's
// result in the reply); one whose probe fails is reverted (ABORTED naming
// the probe; the gRPC source and the SB as before it); a probe of a wrong
// form is refused naming it, nothing applied. The probes are real TCP
// connections on loopback.
func TestUpdateWithProbes(t *testing.T) {
	e := newConfirmEnv(t, t.TempDir(), newFakeClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)), newFakeSB())
	e.start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tcp := func(target string) *configuratorpb.Probe {
		return &configuratorpb.Probe{Kind: configuratorpb.Probe_TCP, Target: target, Timeout: durationpb.New(2 * time.Second)}
	}

	resp, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("kept")), Probes: []*configuratorpb.Probe{tcp(ln.Addr().String())}})
	if err != nil {
		t.Fatalf("update with a probe that passes: %v", err)
	}
	if r := resp.GetProbeResults(); len(r) != 1 || !r[0].GetOk() || r[0].GetProbe().GetTarget() != ln.Addr().String() {
		t.Errorf("probe results %v", r)
	}
	if e.sb.Value(vppKey("kept")) == nil || e.o.SourceValue(orchestrator.SourceGRPC, vppKey("kept")) == nil {
		t.Errorf("the update whose probe passed was not kept")
	}
	if p := e.srv.ConfirmStatus().Pending; p != nil {
		t.Errorf("the update whose probe passed is left pending: %+v", p)
	}

	// A port nothing listens on: the probe fails, the update is reverted.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	before := e.o.SourceValues(orchestrator.SourceGRPC)
	_, err = e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("kept", "10.0.0.1/24"), loop("added")), Probes: []*configuratorpb.Probe{tcp(closedAddr)}})
	st, _ := status.FromError(err)
	if st.Code() != codes.Aborted || !strings.Contains(st.Message(), "reverted: probes failed: probe tcp "+closedAddr) {
		t.Fatalf("update with a failing probe: %v, want ABORTED naming the probe", err)
	}
	checkSource(t, "after the revert", e, before)
	if e.sb.Value(vppKey("added")) != nil || !proto.Equal(e.sb.Value(vppKey("kept")), loop("kept")) {
		t.Errorf("after the revert the SB holds added %v, kept %v", e.sb.Value(vppKey("added")), e.sb.Value(vppKey("kept")))
	}
	if p := e.srv.ConfirmStatus().Pending; p != nil {
		t.Errorf("the reverted update is left pending: %+v", p)
	}

	// Probes of a wrong form: refused before anything is applied.
	calls := len(e.sb.Calls())
	for _, p := range []*configuratorpb.Probe{
		{Kind: configuratorpb.Probe_PING, Target: "not-an-address", Timeout: durationpb.New(time.Second)},
		{Kind: configuratorpb.Probe_TCP, Target: "127.0.0.1:1"},
		{Target: "127.0.0.1:1", Timeout: durationpb.New(time.Second)},
	} {
		_, err := e.client.Update(context.Background(), &configuratorpb.UpdateRequest{Update: cfg(loop("other")), Probes: []*configuratorpb.Probe{p}})
		if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "probes[0]") {
			t.Errorf("probe %v: %v, want INVALID_ARGUMENT naming probes[0]", p, err)
		}
	}
	if got := e.sb.Calls()[calls:]; len(got) > 0 || e.o.SourceValue(orchestrator.SourceGRPC, vppKey("other")) != nil {
		t.Errorf("a refused probe applied something: %v", got)
	}
}

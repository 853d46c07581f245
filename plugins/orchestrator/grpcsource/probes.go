package grpcsource

// Probes of a change (issue 19, "probes that roll back"): checks that must
// pass once an Update or Delete is applied. See the package documentation,
// "Probes".

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator/probe"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// probeMargin is added to the longest probe's timeout to make the deadline
// of a change with probes and no confirm_within: if the agent stops while
// the probes run, the change is reverted when that deadline passes.
const probeMargin = 30 * time.Second

// probesOf checks the probes of a request and converts them.
func probesOf(what string, in []*configuratorpb.Probe) ([]probe.Probe, error) {
	out := make([]probe.Probe, len(in))
	for i, p := range in {
		kind := map[configuratorpb.Probe_Kind]probe.Kind{
			configuratorpb.Probe_PING: probe.Ping, configuratorpb.Probe_TCP: probe.TCP, configuratorpb.Probe_HTTP: probe.HTTP,
		}[p.GetKind()]
		out[i] = probe.Probe{Kind: kind, Target: p.GetTarget(), Namespace: p.GetNamespace(), Timeout: p.GetTimeout().AsDuration()}
		if err := p.GetTimeout().CheckValid(); p.GetTimeout() != nil && err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: probes[%d]: timeout: %v", what, i, err)
		}
		if err := out[i].Check(); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: probes[%d]: %v", what, i, err)
		}
	}
	return out, nil
}

// withProbes makes a change with probes one to confirm (its own
// confirm_within, else the longest probe timeout and probeMargin), commits
// it, runs the probes and then keeps it (confirms it, unless the request
// asked for a confirmation of its own) or reverts it when one fails (ABORTED,
// naming the failed probes). With no probes it is commitChange.
func (s *Server) withProbes(ctx context.Context, what string, opts changeOptions, probes []probe.Probe,
	change func(context.Context, api.TxnOptions) (uint64, error)) (uint64, []*configuratorpb.KeyError, []*configuratorpb.ProbeResult, error) {
	if len(probes) == 0 {
		seq, errs, err := s.commitChange(ctx, what, opts, change)
		return seq, errs, nil, err
	}
	asked := opts.confirmWithin > 0
	if !asked {
		longest := time.Duration(0)
		for _, p := range probes {
			longest = max(longest, p.Timeout)
		}
		opts.confirmWithin = longest + probeMargin
	}
	seq, errs, err := s.commitChange(ctx, what, opts, change)
	if err != nil {
		return seq, errs, nil, err
	}
	results := probe.Run(context.WithoutCancel(ctx), probes)
	out := make([]*configuratorpb.ProbeResult, len(results))
	var failed []string
	for i, r := range results {
		out[i] = &configuratorpb.ProbeResult{Probe: probeMessage(r.Probe), Ok: r.OK(), Took: durationpb.New(r.Took)}
		if !r.OK() {
			out[i].Error = r.Err.Error()
			failed = append(failed, r.Err.Error())
		}
	}
	pending := s.ConfirmStatus().Pending
	ours := pending != nil && pending.Seq == seq
	switch {
	case len(failed) > 0 && ours:
		reason := "probes failed: " + strings.Join(failed, "; ")
		if rerr := s.RevertPending(reason); rerr != nil {
			return seq, errs, out, status.Errorf(codes.Internal, "%s #%d: %s; the revert failed: %v", what, seq, reason, rerr)
		}
		return seq, errs, out, status.Errorf(codes.Aborted, "%s #%d reverted: %s", what, seq, reason)
	case ours && !asked:
		if _, cerr := s.Confirm(ctx, &configuratorpb.ConfirmRequest{SeqNum: seq}); cerr != nil {
			return seq, errs, out, fmt.Errorf("%s #%d: the probes passed, but keeping it failed: %w", what, seq, cerr)
		}
	}
	// Nothing pending of this change (it changed nothing): the results say
	// what the probes found.
	return seq, errs, out, nil
}

func probeMessage(p probe.Probe) *configuratorpb.Probe {
	kind := map[probe.Kind]configuratorpb.Probe_Kind{
		probe.Ping: configuratorpb.Probe_PING, probe.TCP: configuratorpb.Probe_TCP, probe.HTTP: configuratorpb.Probe_HTTP,
	}[p.Kind]
	return &configuratorpb.Probe{Kind: kind, Target: p.Target, Namespace: p.Namespace, Timeout: durationpb.New(p.Timeout)}
}

// Package ligato serves ligato.configurator.ConfiguratorService, the gRPC
// configurator of the original agent (Ligato vpp-agent v3), so that the
// original's clients (its Go client library, programs built on its
// published protos) configure netagent unchanged. The messages
// (proto/ligato) are netagent's own definitions with the original's names
// and field numbers; the model values in them are netagent's model
// messages, whose field numbers are the original's.
//
// # Get, Update, Delete, Dump
//
// The service is a thin adapter onto grpcsource.Server (the
// netagent.configurator.Configurator service): each call converts the
// original's containers to netagent's configuration document and back and
// calls the same method there, so validation, the gRPC source of the
// orchestrator, wait_done and the errors are the same (see the grpcsource
// package documentation). Get returns the desired configuration, Dump what
// the southbound has now.
//
// What netagent does not support is not applied and comes back as per-key
// errors in the response, never as a failed call, the rest of the request
// being applied: a value of a model of the original's that netagent lacks
// (ACLs, NAT, IPsec, netalloc...: the numbers its containers reserve), and
// a value of a supported model with fields of the original's that
// netagent's model lacks (an interface's rx_modes, a GRE link...),
// which would otherwise be applied without them. Such errors have the
// operation VALIDATE (DELETE in a Delete) and as key the value's key, or
// its place (vpp_config.acls[0]) for a model netagent has no keys for. A
// full_resync keeps the gRPC source's current value of a key whose new
// value is refused. In a Delete only key fields matter, so unknown fields
// of supported values are ignored there; items of unsupported models are
// reported (nothing of theirs exists to delete).
//
// The original's UpdateResponse and DeleteResponse are empty; netagent adds
// seq_num (100) and errors (101), GetResponse left_out (100): the original's
// clients skip these fields, netagent-aware ones read them. Those clients
// see only the call's status: the refusals are also logged (warning).
//
// # Notify
//
// Notify streams numbered notifications of the agent's VPP interfaces (the
// ones it tags: its own), the original's InterfaceNotification of type
// UPDOWN: when an interface appears in VPP, when its admin state (the
// admin-state value the agent applied) or its link state (as VPP reports
// it: the link-state values of the VPP interface plugin) changes, and with
// both states DELETED when it is gone from VPP. The state carries the
// logical name, VPP's internal name and sw_if_index, the type, the
// configured MAC address and MTU, and last_change (when the agent saw the
// change, Unix seconds). Not sent: counters (COUNTERS), speed and duplex,
// Linux notifications (the original's are empty too), foreign VPP
// interfaces.
//
// The service keeps the most recent notifications (Options.Notifications,
// 1000 by default), numbered from 0 at the agent's start. A client asks for
// idx, the first index it wants (0: all kept), and gets the kept ones from
// there, each with next_idx (its index + 1, the idx to resume with), then
// every new one. An idx older than the oldest kept, or beyond the next one
// (a client of an agent that has restarted since), starts at the oldest
// kept. A client too slow to keep up skips to the oldest kept; the
// notifier never waits for a client. The scheduler's status watch
// coalesces per key, so a state that lasts less than the time the
// notifier takes to read it may be skipped; the final state of each
// interface is always notified. A request with fields netagent's
// NotifyRequest lacks is refused with InvalidArgument rather than answered
// unfiltered.
//
// A request may carry filters, notifications by example (the original's
// later versions, its agentctl's config watch --filter): the client then
// gets the notifications that match at least one, with the original's
// matching (see matches): each field a filter sets to a value other than
// its default has that value in the notification. An empty filter matches
// every notification; one that names what netagent never sends (a Linux
// notification, COUNTERS, counters) matches none. The indexes stay those
// of all notifications: the next_idx of the last one a client received is
// where it resumes, the filtered-out ones after it are filtered again.
package ligato

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource"
	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
)

// Options are the optional settings of New.
type Options struct {
	// Registry converts values (nil: models.Default).
	Registry *models.Registry
	// Log (nil: slog.Default()).
	Log *slog.Logger
	// Notifications is how many notifications Notify keeps for clients
	// that resume (0: DefaultNotifications).
	Notifications int
	// Now is the clock of last_change (nil: time.Now).
	Now func() time.Time
}

// DefaultNotifications is how many notifications are kept by default.
const DefaultNotifications = 1000

// Server implements ligato.configurator.ConfiguratorService.
type Server struct {
	ligatocfg.UnimplementedConfiguratorServiceServer

	conf  *grpcsource.Server
	o     *orchestrator.Orchestrator
	sched api.KVScheduler
	reg   *models.Registry
	log   *slog.Logger
	notes *notifier

	closeOnce sync.Once
	closed    chan struct{}
}

var _ ligatocfg.ConfiguratorServiceServer = (*Server)(nil)

// New returns the service, calling conf for Get, Update, Delete and Dump,
// reading the gRPC source's values from o and the interface states from s.
// It starts following the interface states for Notify at once: call Close
// to stop.
func New(conf *grpcsource.Server, o *orchestrator.Orchestrator, s api.KVScheduler, opts Options) *Server {
	if opts.Registry == nil {
		opts.Registry = models.Default
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Notifications <= 0 {
		opts.Notifications = DefaultNotifications
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{
		conf: conf, o: o, sched: s, reg: opts.Registry, log: opts.Log,
		notes:  startNotifier(s, opts.Notifications, opts.Now),
		closed: make(chan struct{}),
	}
}

// Register registers the service on g.
func (s *Server) Register(g *grpc.Server) {
	ligatocfg.RegisterConfiguratorServiceServer(g, s)
}

// Close ends the open Notify streams (they return Unavailable) and stops
// following the interface states. Unary calls keep working.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.notes.stop()
	})
}

// Get implements ConfiguratorService: the desired configuration.
func (s *Server) Get(ctx context.Context, _ *ligatocfg.GetRequest) (*ligatocfg.GetResponse, error) {
	resp, err := s.conf.Get(ctx, &configuratorpb.GetRequest{})
	if err != nil {
		return nil, err
	}
	return &ligatocfg.GetResponse{Config: fromConfig(resp.GetConfig()), LeftOut: resp.GetLeftOut()}, nil
}

// Dump implements ConfiguratorService: what the southbound has now.
func (s *Server) Dump(ctx context.Context, _ *ligatocfg.DumpRequest) (*ligatocfg.DumpResponse, error) {
	resp, err := s.conf.Dump(ctx, &configuratorpb.DumpRequest{})
	if err != nil {
		return nil, err
	}
	return &ligatocfg.DumpResponse{Dump: fromConfig(resp.GetState())}, nil
}

// Update implements ConfiguratorService.
func (s *Server) Update(ctx context.Context, req *ligatocfg.UpdateRequest) (*ligatocfg.UpdateResponse, error) {
	if req.GetUpdate() == nil {
		return nil, status.Error(codes.InvalidArgument, "update: no configuration given")
	}
	refused := s.unsupported(req.GetUpdate(), true)
	c := toConfig(req.GetUpdate(), refused.places())
	if len(refused) > 0 {
		// The Configurator checks what is left, whose places (indexes)
		// are not the request's: check the request as sent first.
		if _, err := s.reg.ConfigKVs(toConfig(req.GetUpdate(), nil)); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "update: %v", err)
		}
		if req.GetFullResync() {
			s.keepHeld(c, refused)
		}
	}
	resp, err := s.conf.Update(ctx, &configuratorpb.UpdateRequest{Update: c, FullResync: req.GetFullResync(), WaitDone: req.GetWaitDone()})
	if err != nil {
		return nil, err
	}
	s.logRefused("update", refused)
	return &ligatocfg.UpdateResponse{SeqNum: resp.GetSeqNum(), Errors: append(s.keyErrors(refused, "VALIDATE"), resp.GetErrors()...)}, nil
}

// keepHeld adds to c, for each refused value of a supported model, the
// value the gRPC source holds for its key: a full resync without it would
// remove that value.
func (s *Server) keepHeld(c *configpb.Config, refused refusals) {
	for _, r := range refused {
		if r.model == nil {
			continue
		}
		if v := s.o.SourceValue(orchestrator.SourceGRPC, r.key); v != nil {
			appendValue(c, r.model, v)
		}
	}
}

// Delete implements ConfiguratorService.
func (s *Server) Delete(ctx context.Context, req *ligatocfg.DeleteRequest) (*ligatocfg.DeleteResponse, error) {
	if req.GetDelete() == nil {
		return nil, status.Error(codes.InvalidArgument, "delete: no configuration given")
	}
	refused := s.unsupported(req.GetDelete(), false)
	resp, err := s.conf.Delete(ctx, &configuratorpb.DeleteRequest{Delete: toConfig(req.GetDelete(), nil), WaitDone: req.GetWaitDone()})
	if err != nil {
		return nil, err
	}
	s.logRefused("delete", refused)
	return &ligatocfg.DeleteResponse{SeqNum: resp.GetSeqNum(), Errors: append(s.keyErrors(refused, "DELETE"), resp.GetErrors()...)}, nil
}

// keyErrors are the errors of the refused values: the state of a key is
// the current one (a refused value leaves its key as it was).
func (s *Server) keyErrors(refused refusals, operation string) []*configuratorpb.KeyError {
	out := make([]*configuratorpb.KeyError, 0, len(refused))
	for _, r := range refused {
		ke := &configuratorpb.KeyError{Key: r.place, Operation: operation, Error: r.place + ": " + r.reason, State: api.ValueStateNonexistent}
		if r.key != "" {
			ke.Key = r.key
			ke.State = s.sched.GetValueStatus(r.key).GetValue().GetState()
		}
		out = append(out, ke)
	}
	return out
}

func (s *Server) logRefused(request string, refused refusals) {
	if len(refused) == 0 {
		return
	}
	s.log.Warn("ligato configurator: values not supported, not applied",
		"request", request, "values", len(refused), "first", refused[0].place+": "+refused[0].reason)
}

// Notify implements ConfiguratorService.
func (s *Server) Notify(req *ligatocfg.NotifyRequest, stream grpc.ServerStreamingServer[ligatocfg.NotifyResponse]) error {
	if raw := req.ProtoReflect().GetUnknown(); len(raw) > 0 {
		// A field of a version netagent does not know may narrow what the
		// client wants, as the filters did: sending everything would
		// mislead it.
		var fields []string
		eachField(raw, func(num protowire.Number, _ protowire.Type, _ []byte) {
			fields = append(fields, fmt.Sprintf("field %d", num))
		})
		return status.Errorf(codes.InvalidArgument, "notify: %s of the request not known to netagent: ask without them",
			strings.Join(slices.Compact(fields), ", "))
	}
	filters := req.GetFilters()
	ctx := stream.Context()
	idx := req.GetIdx()
	for {
		batch, wake, next := s.notes.since(idx)
		for _, n := range batch {
			if !wanted(n.msg, filters) {
				continue
			}
			resp := &ligatocfg.NotifyResponse{NextIdx: n.idx + 1, Notification: n.msg}
			if err := stream.Send(resp); err != nil {
				return err
			}
		}
		idx = next
		select {
		case <-wake:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.closed:
			return status.Error(codes.Unavailable, "the configurator service is closing")
		}
	}
}

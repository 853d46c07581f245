// Package grpcsource is the Configurator gRPC service
// (proto/configurator): the gRPC source of the orchestrator, and the
// agent's gRPC view of its configuration and state.
//
// # Values
//
// Update and Delete change the values of the orchestrator's gRPC source
// (orchestrator.SourceGRPC). Its priority is above etcd and the init file:
// a key that etcd and a gRPC client both set takes the client's value, and
// deleting it through Delete brings the etcd value back. A full_resync
// Update replaces every value of the gRPC source and nothing of the other
// sources.
//
// A request is checked as a whole before anything is applied: a value that
// does not decode or validate fails the request with InvalidArgument,
// naming the item (vpp_config.interfaces[0]) and the field.
//
// Without wait_done the change is queued and the reply carries its
// transaction's sequence number only.
//
// Plan's reply carries the revision of the scheduler's state the plan was
// made against (api.RecordedTxn.Revision of its dry run). An Update or
// Delete with that plan_revision is bound to it (api.TxnOptions.
// ExpectedRevision): when the state changed since (any transaction that
// changed anything: another client, etcd, an SB event, a retry), nothing is
// applied, the gRPC source keeps the values it had, and the call fails with
// FailedPrecondition, naming the plan's revision, the current one and the
// transaction that changed it. The check is made when the transaction runs,
// so a bound call always waits for it (with wait_done or not). With wait_done the reply comes once
// the transaction is done (derived values included) and lists the keys that
// failed, each with its operation, error and current state; the other keys
// of the request are applied all the same. It also lists the keys of an
// Update that the transaction left as they were but whose status carries an
// error: sending an INVALID value again changes nothing, and the reply says
// it is still INVALID rather than nothing. A committed change always runs:
// a client that goes away (or whose deadline passes) while waiting does not
// cancel it, since the orchestrator already holds the new values.
//
// Changes made before the agent's first full sync are kept by the
// orchestrator and applied by that sync; the reply then has sequence number
// 0 and no errors, even with wait_done (the agent does not refuse them with
// Unavailable). The server does not register the gRPC source with the
// orchestrator: the first full sync does not wait for a gRPC client.
//
// # Changes to confirm
//
// An Update or Delete with confirm_within (at most MaxConfirmWithin;
// negative or more: InvalidArgument naming the field) is a change to
// confirm. The server takes the gRPC source's values (all of them, with
// their notes: orchestrator.SourceValues), applies the change and waits
// for it (its errors as with wait_done), then records the change as
// pending, persists it and arms its deadline. Confirm (with the change's
// sequence number, or 0 for whatever is pending) keeps it: the deadline is
// dropped and the state file removed. At the deadline, or on
// RevertPending, the gRPC source is put back to exactly the values it had
// before, by a full resync of that source (only its keys change: values
// the change set, changed or removed are all restored) described as
// "revert of unconfirmed change #N: not confirmed within D"; ConfirmStatus
// counts the reverts (the agent's netagent_confirm_reverts_total).
//
// One change is pending at a time: another change to confirm is refused
// (FailedPrecondition naming the pending change and its deadline), and so
// is every other change of the gRPC source (Update, Delete, full resync,
// Apply): it would be reverted with it; confirm, or wait for the revert.
// A change that leaves the source as it was (nothing to change, or
// reverted by verify) leaves nothing pending. Before the agent's first
// full sync a change to confirm is refused (FailedPrecondition).
//
// The pending change is kept in the state directory (EnableConfirm;
// StateFileName, JSON, the values as their model JSON, written to a
// temporary file renamed over it, mode 0600, the directory made when
// needed). Without a state directory, or when a file cannot be written in
// it, a change to confirm is refused (FailedPrecondition,
// resp. Unavailable) and nothing is applied; if the record cannot be
// saved after the change was applied, the change is reverted at once and
// the call fails with Unavailable. The gRPC source is otherwise not
// persisted: a restart starts it empty. FirstResync, the source's first
// state at start, reads the file: a change still pending starts the
// source with the values after it (the restart does not undo it) and its
// deadline is armed for what is left; a deadline that passed while the
// agent was stopped starts it with the values before (a revert, counted,
// in the first full resync's description). A file that cannot be read or
// decoded is logged, renamed to .bad, and the source starts empty: the
// agent never refuses to start for it. A revert that finds the scheduler
// closed (the agent stopping) keeps the file, so that the next start
// reverts; Close stops the deadline for the same reason. A deadline that
// passes before the first full sync records the before values, which that
// sync applies.
//
// The deadline uses the Clock of ConfirmOptions (the real one by default).
//
// # Probes
//
// An Update or Delete may name probes (UpdateRequest.probes: ping, TCP
// connect, HTTP GET, each with its timeout, from the agent's or a named
// network namespace; package probe): checks that must pass once the change
// is applied. Such a change is a change to confirm (above): with its own
// confirm_within, or else for the longest probe timeout and 30 s more (so
// that it is reverted if the agent stops while the probes run). Once it is
// applied the probes run concurrently; when one fails the change is
// reverted at once as an unconfirmed one is (RevertPending, the reason
// naming the probes that failed) and the call fails with ABORTED saying so;
// when all pass, a change without confirm_within is kept (confirmed), one
// with it stays pending. The reply carries each probe's result. A probe of
// a wrong form is INVALID_ARGUMENT naming it (probes[i]), nothing applied.
// A change that changes nothing leaves nothing to revert: its probes run
// and their results are returned.
//
// # State
//
// Get returns the desired configuration (all sources merged; values that
// could not be decoded are left out: their keys are INVALID, see
// WatchStatus). Dump returns what the southbound has now (the descriptors'
// Retrieve). Plan returns the operations an Update would execute, in order,
// without applying anything (a dry-run transaction), and the values of the
// request for which nothing is planned but whose status carries an error
// (an INVALID value planned again: no operation, still INVALID).
//
// WatchStatus and Notify stream value statuses: the current ones first, then
// every change. The scheduler never waits for a stream: its watch coalesces
// updates per key, so a slow client receives the latest status of each key.
//
// # Errors
//
// InvalidArgument: a malformed request (no configuration where one is
// required, an invalid value, an empty or unknown key prefix, a
// plan_revision of 0), or
// transaction options the orchestrator or the scheduler refuses (the
// message names the field, as api.OptionError does).
// ResourceExhausted: the transaction queue is full, or (from gRPC itself) a
// message over a size limit of the server or the client: package msglimit
// has the limits' default and says which side refused.
// FailedPrecondition: an update bound to a plan_revision that is not the
// current one (stale, or ahead: from before a restart), or made before
// the agent's first full sync; a change while another is pending
// confirmation, or a change to confirm without a state directory.
// NotFound: Confirm when nothing is pending or another change is.
// Unavailable: the scheduler is closed, a descriptor's Retrieve failed
// (Dump), or the pending confirmation cannot be kept or removed. Canceled
// and DeadlineExceeded: the client's context ended. Internal: anything else.
package grpcsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/internal/parallel"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// Server implements the Configurator service.
type Server struct {
	configuratorpb.UnimplementedConfiguratorServer

	o   *orchestrator.Orchestrator
	s   api.KVScheduler
	reg *models.Registry
	log *slog.Logger

	// confirm holds the change pending confirmation (confirm_within).
	confirm *confirmer

	// closed ends the open streams (Close).
	closeOnce sync.Once
	closed    chan struct{}
}

var _ configuratorpb.ConfiguratorServer = (*Server)(nil)

// New returns the Configurator service changing the gRPC source of o,
// reading states from s and converting values with reg (nil:
// models.Default; nil log: slog.Default()).
func New(o *orchestrator.Orchestrator, s api.KVScheduler, reg *models.Registry, log *slog.Logger) *Server {
	if reg == nil {
		reg = models.Default
	}
	if log == nil {
		log = slog.Default()
	}
	return &Server{o: o, s: s, reg: reg, log: log, confirm: newConfirmer(), closed: make(chan struct{})}
}

// Register registers the Configurator service on g.
func (s *Server) Register(g *grpc.Server) {
	configuratorpb.RegisterConfiguratorServer(g, s)
}

// Close ends the open WatchStatus and Notify streams (they return
// Unavailable), so that grpc.Server.GracefulStop does not wait for them,
// and stops the deadline of a change pending confirmation (it stays in the
// state file: the next start reverts it when due). Unary calls keep
// working.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.confirm.mu.Lock()
		defer s.confirm.mu.Unlock()
		if s.confirm.timer != nil {
			s.confirm.timer.Stop()
		}
	})
}

// --- Get, Dump ---------------------------------------------------------------

// Get implements the Configurator service.
func (s *Server) Get(ctx context.Context, _ *configuratorpb.GetRequest) (*configuratorpb.GetResponse, error) {
	c, leftOut, err := s.buildConfig(orchestratorValues(s.o.Get()))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "get: %v", err)
	}
	return &configuratorpb.GetResponse{Config: c, LeftOut: leftOut}, nil
}

func orchestratorValues(kvs []orchestrator.KV) []models.KV {
	out := make([]models.KV, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, models.KV{Key: kv.Key, Value: kv.Value})
	}
	return out
}

// buildConfig groups values into a document, leaving out those that have no
// place in one (undecodable or invalid values, values of models without a
// configuration section), which it lists with the reason.
func (s *Server) buildConfig(kvs []models.KV) (*configpb.Config, []*configuratorpb.LeftOut, error) {
	keep := make([]models.KV, 0, len(kvs))
	var leftOut []*configuratorpb.LeftOut
	for _, kv := range kvs {
		if kv.Value == nil {
			continue
		}
		if bad, ok := kv.Value.(*api.UndecodableValue); ok {
			leftOut = append(leftOut, &configuratorpb.LeftOut{Key: kv.Key, Reason: bad.GetReason()})
			continue
		}
		m := s.reg.ModelOfMessage(kv.Value)
		if m == nil || m.ConfigField == "" || s.reg.ModelOfKey(kv.Key) != m {
			s.log.Debug("configurator: value left out of the configuration document", "key", kv.Key)
			leftOut = append(leftOut, &configuratorpb.LeftOut{Key: kv.Key, Reason: "its model has no place in a configuration document"})
			continue
		}
		keep = append(keep, kv)
	}
	c, err := s.reg.BuildConfig(keep)
	return c, leftOut, err
}

// Dump implements the Configurator service: the values the descriptors
// retrieve from the southbound now. One dump covers every model (the common
// prefix of their keys), so each descriptor's Retrieve runs once.
func (s *Server) Dump(ctx context.Context, _ *configuratorpb.DumpRequest) (*configuratorpb.DumpResponse, error) {
	kvs, err := s.s.DumpValuesByKeyPrefix(s.modelsPrefix(), api.SBView)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "dump: %v", err)
	}
	values := make([]models.KV, 0, len(kvs))
	for _, kv := range kvs {
		values = append(values, models.KV{Key: kv.Key, Value: kv.Value})
	}
	c, _, err := s.buildConfig(values)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "dump: %v", err)
	}
	return &configuratorpb.DumpResponse{State: c}, nil
}

// modelsPrefix is the longest common prefix of the models' key prefixes
// ("config/" for the built-in ones), cut at a "/".
func (s *Server) modelsPrefix() string {
	ms := s.reg.Models()
	if len(ms) == 0 {
		return ""
	}
	p := ms[0].KeyPrefix
	for _, m := range ms[1:] {
		for !strings.HasPrefix(m.KeyPrefix, p) {
			p = p[:len(p)-1]
		}
	}
	return p[:strings.LastIndexByte(p, '/')+1]
}

// --- Update, Delete, Plan ----------------------------------------------------

// Update implements the Configurator service.
func (s *Server) Update(ctx context.Context, req *configuratorpb.UpdateRequest) (*configuratorpb.UpdateResponse, error) {
	kvs, err := s.updateKVs("update", req.GetUpdate())
	if err != nil {
		return nil, err
	}
	within, err := confirmWithin("update", req.GetConfirmWithin())
	if err != nil {
		return nil, err
	}
	probes, err := probesOf("update", req.GetProbes())
	if err != nil {
		return nil, err
	}
	opts := changeOptions{wait: req.GetWaitDone(), planRevision: req.PlanRevision, verify: req.GetVerify(), confirmWithin: within}
	seq, errs, results, err := s.withProbes(ctx, "update", opts, probes, func(ctx context.Context, opts api.TxnOptions) (uint64, error) {
		if req.GetFullResync() {
			return s.o.Resync(ctx, orchestrator.SourceGRPC, kvs, opts)
		}
		return s.o.Change(ctx, orchestrator.SourceGRPC, kvs, opts)
	})
	if err != nil {
		return nil, err
	}
	if req.GetWaitDone() || req.GetVerify() || within > 0 || len(probes) > 0 {
		listed := make(map[string]bool, len(errs))
		for _, ke := range errs {
			listed[ke.GetKey()] = true
		}
		errs = append(errs, s.statusErrors(kvs, listed)...)
	}
	return &configuratorpb.UpdateResponse{SeqNum: seq, Errors: errs, ProbeResults: results}, nil
}

// statusErrors returns the errors that the current statuses of the values
// of kvs (and of their derived values) carry, skipping the keys in skip and
// the keys whose effective value is not the one of kvs (a source of higher
// priority sets it: its error is not about this request's value).
func (s *Server) statusErrors(kvs []orchestrator.KV, skip map[string]bool) []*configuratorpb.KeyError {
	keys := make([]string, 0, len(kvs))
	vals := make([]proto.Message, 0, len(kvs))
	for _, kv := range kvs {
		if kv.Value != nil && !skip[kv.Key] {
			keys, vals = append(keys, kv.Key), append(vals, kv.Value)
		}
	}
	// (The orchestrator keeps the value it was given: the same pointer,
	// unless a source of higher priority sets the key.)
	effective := s.o.Values(keys)
	ours := keys[:0]
	for i, key := range keys {
		if v := effective[i]; v == vals[i] || proto.Equal(v, vals[i]) {
			ours = append(ours, key)
		}
	}
	var out []*configuratorpb.KeyError
	for _, st := range s.s.GetValueErrors(ours) {
		if skip[st.GetKey()] {
			continue
		}
		ke := &configuratorpb.KeyError{Key: st.GetKey(), Error: st.GetError(), State: st.GetState()}
		if op := st.GetLastOperation(); op != api.OpUndefined {
			ke.Operation = op.String()
		}
		out = append(out, ke)
	}
	return out
}

// updateKVs checks a document of values and converts it.
func (s *Server) updateKVs(field string, c *configpb.Config) ([]orchestrator.KV, error) {
	if c == nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: no configuration given", field)
	}
	kvs, err := s.reg.ConfigKVs(c)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", field, err)
	}
	out := make([]orchestrator.KV, len(kvs))
	for i, kv := range kvs {
		out[i] = orchestrator.KV{Key: kv.Key, Value: kv.Value}
	}
	return out, nil
}

// Delete implements the Configurator service.
func (s *Server) Delete(ctx context.Context, req *configuratorpb.DeleteRequest) (*configuratorpb.DeleteResponse, error) {
	if req.GetDelete() == nil {
		return nil, status.Error(codes.InvalidArgument, "delete: no configuration given")
	}
	within, err := confirmWithin("delete", req.GetConfirmWithin())
	if err != nil {
		return nil, err
	}
	keys, err := s.deleteKeys(req.GetDelete())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "delete: %v", err)
	}
	kvs := make([]orchestrator.KV, len(keys))
	for i, key := range keys {
		kvs[i] = orchestrator.KV{Key: key}
	}
	probes, err := probesOf("delete", req.GetProbes())
	if err != nil {
		return nil, err
	}
	opts := changeOptions{wait: req.GetWaitDone(), planRevision: req.PlanRevision, verify: req.GetVerify(), confirmWithin: within}
	seq, errs, results, err := s.withProbes(ctx, "delete", opts, probes, func(ctx context.Context, opts api.TxnOptions) (uint64, error) {
		return s.o.Change(ctx, orchestrator.SourceGRPC, kvs, opts)
	})
	if err != nil {
		return nil, err
	}
	return &configuratorpb.DeleteResponse{SeqNum: seq, Errors: errs, ProbeResults: results}, nil
}

// docItem is one item of a configuration document.
type docItem struct {
	section, field string
	index          int // in the list; -1: a model of one value
	model          *models.Model
	value          proto.Message
}

// place names the item in the document: vpp_config.interfaces[0].
func (it docItem) place() string {
	if it.index < 0 {
		return it.section + "." + it.field
	}
	return fmt.Sprintf("%s.%s[%d]", it.section, it.field, it.index)
}

// items lists the items of a document, in the order of its fields.
func (s *Server) items(c *configpb.Config) ([]docItem, error) {
	var out []docItem
	var errs []error
	cm := c.ProtoReflect()
	sections := cm.Descriptor().Fields()
	for i := range sections.Len() {
		sfd := sections.Get(i)
		if !cm.Has(sfd) {
			continue
		}
		sm := cm.Get(sfd).Message()
		fields := sfd.Message().Fields()
		for j := range fields.Len() {
			fd := fields.Get(j)
			if !sm.Has(fd) {
				continue
			}
			m := s.modelOfField(string(sfd.Name()), string(fd.Name()))
			if m == nil {
				errs = append(errs, fmt.Errorf("%s.%s: no model registered for it", sfd.Name(), fd.Name()))
				continue
			}
			if !fd.IsList() { // a model of one value
				out = append(out, docItem{section: string(sfd.Name()), field: string(fd.Name()), index: -1, model: m, value: sm.Get(fd).Message().Interface()})
				continue
			}
			list := sm.Get(fd).List()
			for k := range list.Len() {
				out = append(out, docItem{
					section: string(sfd.Name()), field: string(fd.Name()), index: k,
					model: m,
					value: list.Get(k).Message().Interface(),
				})
			}
		}
	}
	return out, errors.Join(errs...)
}

func (s *Server) modelOfField(section, field string) *models.Model {
	for _, m := range s.reg.Models() {
		if m.ConfigSection == section && m.ConfigField == field {
			return m
		}
	}
	return nil
}

// deleteKeys returns the keys of the items of a document, each once. An
// item needs its key fields only: when its key cannot be built because
// other fields are missing or invalid (an ARP entry without its MAC
// address), it names the value of the gRPC source whose fields include all
// the item's set fields, if exactly one does.
func (s *Server) deleteKeys(c *configpb.Config) ([]string, error) {
	items, err := s.items(c)
	if err != nil {
		return nil, err
	}
	var keys []string
	var errs []error
	seen := map[string]bool{}
	var held []orchestrator.KV // the gRPC source's values, read when needed
	heldRead := false
	// The keys first, a long document's on more than one core (as
	// ConfigKVs does).
	keyOf := make([]string, len(items))
	keyErr := make([]error, len(items))
	parallel.For(len(items), 1024, func(k int) { keyOf[k], keyErr[k] = items[k].model.Key(items[k].value) })
	for k, it := range items {
		key, kerr := keyOf[k], keyErr[k]
		if kerr != nil {
			if !heldRead {
				held, heldRead = s.grpcValues(), true
			}
			var matches []string
			for _, kv := range held {
				if strings.HasPrefix(kv.Key, it.model.KeyPrefix) && s.reg.ModelOfKey(kv.Key) == it.model && hasFieldsOf(kv.Value, it.value) {
					matches = append(matches, kv.Key)
				}
			}
			switch len(matches) {
			case 1:
				key = matches[0]
			case 0:
				errs = append(errs, fmt.Errorf("%s: no value of the gRPC source has these fields, and the key cannot be built: %w", it.place(), kerr))
				continue
			default:
				errs = append(errs, fmt.Errorf("%s: the key cannot be built (%v), and the item matches %d values of the gRPC source (%s): give all its key fields", it.place(), kerr, len(matches), strings.Join(matches, ", ")))
				continue
			}
		}
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return keys, nil
}

// grpcValues returns the values the gRPC source holds.
func (s *Server) grpcValues() []orchestrator.KV {
	var out []orchestrator.KV
	for _, kv := range s.o.Get() {
		if v := s.o.SourceValue(orchestrator.SourceGRPC, kv.Key); v != nil {
			out = append(out, orchestrator.KV{Key: kv.Key, Value: v})
		}
	}
	return out
}

// hasFieldsOf tells whether every field set in part has the same value in v.
func hasFieldsOf(v, part proto.Message) bool {
	if v == nil || v.ProtoReflect().Descriptor() != part.ProtoReflect().Descriptor() {
		return false
	}
	vm := v.ProtoReflect()
	same := true
	part.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, pv protoreflect.Value) bool {
		same = vm.Has(fd) && vm.Get(fd).Equal(pv)
		return same
	})
	return same
}

// commit runs a change of the gRPC source, giving it the context and the
// transaction options to commit with. The change always runs once
// committed (the client's cancellation does not drop it: the orchestrator
// already holds the values). Without wait, it is only queued; with a plan
// revision (planRevision non-nil) it is bound to it, and waited for: the
// check is made when it runs.
func (s *Server) commit(ctx context.Context, what string, wait bool, planRevision *uint64, change func(context.Context, api.TxnOptions) (uint64, error)) (uint64, []*configuratorpb.KeyError, error) {
	return s.commitChange(ctx, what, changeOptions{wait: wait, planRevision: planRevision}, change)
}

// changeOptions are what a request asks of its change.
type changeOptions struct {
	// wait for the transaction and return its errors.
	wait bool
	// planRevision binds the change to a plan's revision (nil: none).
	planRevision *uint64
	// verify after apply (api.TxnOptions.Verify: the change reverted when
	// the SB does not hold what it applied); implies wait.
	verify bool
	// confirmWithin makes a change to confirm (0: none); implies wait.
	confirmWithin time.Duration
	// description of the transaction ("": gRPC <what>).
	description string
}

// commitChange is commit with all the options of a request: a change to
// confirm goes to commitToConfirm; any other is refused while a change is
// pending confirmation.
func (s *Server) commitChange(ctx context.Context, what string, opts changeOptions, change func(context.Context, api.TxnOptions) (uint64, error)) (uint64, []*configuratorpb.KeyError, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, status.FromContextError(err).Err()
	}
	if opts.planRevision != nil && *opts.planRevision == 0 {
		return 0, nil, status.Errorf(codes.InvalidArgument, "%s: plan_revision 0 is not a revision (leave it unset to apply whatever the state)", what)
	}
	if opts.confirmWithin > 0 {
		return s.commitToConfirm(ctx, what, opts, change)
	}
	release, err := s.confirm.admit(what)
	if err != nil {
		return 0, nil, err
	}
	defer release()
	return s.commitNow(ctx, what, opts, change)
}

// commitNow commits a change with the request's options.
func (s *Server) commitNow(ctx context.Context, what string, o changeOptions, change func(context.Context, api.TxnOptions) (uint64, error)) (uint64, []*configuratorpb.KeyError, error) {
	wait, planRevision := o.wait || o.verify, o.planRevision
	description := o.description
	if description == "" {
		description = "gRPC " + what
	}
	opts := api.TxnOptions{Description: description, NonBlocking: !wait, Verify: o.verify}
	if planRevision != nil {
		opts.ExpectedRevision, opts.NonBlocking = *planRevision, false
	}
	seq, err := change(context.WithoutCancel(ctx), opts)
	if err == nil {
		return seq, nil, nil
	}
	var te *api.TransactionError
	if !wait && planRevision != nil && errors.As(err, &te) && te.TxnInitError == nil {
		return seq, nil, nil // applied; its errors were not asked for
	}
	if wait && errors.As(err, &te) && te.TxnInitError == nil {
		errs := make([]*configuratorpb.KeyError, 0, len(te.KVErrors))
		for _, kv := range te.KVErrors {
			ke := &configuratorpb.KeyError{Key: kv.Key, Operation: kv.Operation.String(), State: s.stateOf(kv.Key)}
			if kv.Error != nil {
				ke.Error = kv.Error.Error()
			}
			errs = append(errs, ke)
		}
		return seq, errs, nil
	}
	return seq, nil, s.schedulerError(what, err)
}

// stateOf returns the current state of a key, base or derived.
func (s *Server) stateOf(key string) api.ValueState {
	bs := s.s.GetValueStatus(key)
	if bs.GetValue().GetKey() == key {
		return bs.GetValue().GetState()
	}
	for _, d := range bs.GetDerivedValues() {
		if d.GetKey() == key {
			return d.GetState()
		}
	}
	return api.ValueStateNonexistent
}

// schedulerError maps an error of a commit to a gRPC status.
func (s *Server) schedulerError(what string, err error) error {
	var optErr *api.OptionError
	var revErr *api.RevisionError
	switch {
	case errors.As(err, &revErr):
		// Nothing was applied: the client plans again.
		return status.Errorf(codes.FailedPrecondition, "%s refused: %v; plan again", what, revErr)
	case errors.Is(err, orchestrator.ErrNotStarted):
		return status.Errorf(codes.FailedPrecondition, "%s refused: %v", what, orchestrator.ErrNotStarted)
	case errors.As(err, &optErr):
		// Options the request asked for that the orchestrator or the
		// scheduler refuses: the client's to fix, and the text names the
		// field.
		return status.Errorf(codes.InvalidArgument, "%s: %v", what, optErr)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	case errors.Is(err, api.ErrTxnQueueFull):
		return status.Errorf(codes.ResourceExhausted, "%s: %v", what, err)
	case errors.Is(err, api.ErrClosed):
		return status.Errorf(codes.Unavailable, "%s: %v", what, err)
	}
	s.log.Warn("configurator: transaction failed", "request", what, "error", err)
	return status.Errorf(codes.Internal, "%s: %v", what, err)
}

// Plan implements the Configurator service: a dry run of the Update.
func (s *Server) Plan(ctx context.Context, req *configuratorpb.UpdateRequest) (*configuratorpb.PlanResponse, error) {
	kvs, err := s.updateKVs("update", req.GetUpdate())
	if err != nil {
		return nil, err
	}
	seq, err := s.o.Plan(ctx, orchestrator.SourceGRPC, kvs, req.GetFullResync(), api.TxnOptions{Description: "gRPC plan"})
	var te *api.TransactionError
	if err != nil && !(errors.As(err, &te) && te.TxnInitError == nil) {
		return nil, s.schedulerError("plan", err)
	}
	rec := s.s.GetRecordedTransaction(seq)
	if rec == nil {
		return nil, status.Errorf(codes.Internal, "plan: the record of dry-run transaction %d is not kept", seq)
	}
	resp := &configuratorpb.PlanResponse{Revision: rec.Revision, Operations: make([]*configuratorpb.PlannedOperation, 0, len(rec.Planned))}
	for _, op := range rec.Planned {
		po := &configuratorpb.PlannedOperation{
			Key:           op.Key,
			Operation:     op.Operation.String(),
			ValueJson:     jsonOf(op.NewValue),
			PrevValueJson: jsonOf(op.PrevValue),
			Flags:         op.Flags(),
		}
		if op.NewErr != nil {
			po.Error = op.NewErr.Error()
		}
		resp.Operations = append(resp.Operations, po)
	}
	planned := make(map[string]bool, len(rec.Planned))
	for _, op := range rec.Planned {
		planned[op.Key] = true
	}
	resp.UnchangedErrors = s.statusErrors(kvs, planned)
	return resp, nil
}

// jsonOf is a value as compact protojson with the proto field names ("" for
// none).
func jsonOf(v proto.Message) string {
	if v == nil || !v.ProtoReflect().IsValid() {
		return ""
	}
	b, err := models.MarshalJSON(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// --- WatchStatus, Notify -----------------------------------------------------

// statusLister is the scheduler's listing of current statuses
// (kvscheduler.Scheduler has it; it is not part of api.KVScheduler).
type statusLister interface {
	ListValueStatuses(prefix string) []*api.BaseValueStatus
}

// watchBuffer is the channel buffer of a stream's watch; the scheduler's
// watcher coalesces behind it.
const watchBuffer = 64

// WatchStatus implements the Configurator service.
func (s *Server) WatchStatus(req *configuratorpb.WatchStatusRequest, stream grpc.ServerStreamingServer[api.BaseValueStatus]) error {
	prefixes, err := s.checkPrefixes(req.GetKeyPrefixes())
	if err != nil {
		return err
	}
	selector := func(key string) bool {
		if len(prefixes) == 0 {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(key, p) {
				return true
			}
		}
		return false
	}
	list := prefixes
	if len(list) == 0 {
		list = []string{""}
	}
	return s.watch(stream.Context(), list, selector, stream.Send)
}

// checkPrefixes rejects empty prefixes and those in the models' key space
// (config/...) that no model's keys can have.
func (s *Server) checkPrefixes(prefixes []string) ([]string, error) {
	space := s.modelsPrefix()
	for _, p := range prefixes {
		if p == "" {
			return nil, status.Error(codes.InvalidArgument, "watch status: empty key prefix (give no prefix to watch every key)")
		}
		if space == "" || !strings.HasPrefix(p, space) {
			continue // derived and SB keys (vpp/..., linux/...)
		}
		known := false
		for _, m := range s.reg.Models() {
			if strings.HasPrefix(m.KeyPrefix, p) || strings.HasPrefix(p, m.KeyPrefix) {
				known = true
				break
			}
		}
		if !known {
			return nil, status.Errorf(codes.InvalidArgument, "watch status: key prefix %q matches no model (known: %s)", p, s.knownPrefixes())
		}
	}
	return prefixes, nil
}

func (s *Server) knownPrefixes() string {
	var out []string
	for _, m := range s.reg.Models() {
		out = append(out, m.KeyPrefix)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// watch sends the current statuses of the base values under prefixes that
// selector accepts, then every change, until ctx ends or the server closes.
// The watch is started before the listing, so no change falls between; a
// change already in the listing is not sent again.
func (s *Server) watch(ctx context.Context, prefixes []string, selector api.KeySelector, send func(*api.BaseValueStatus) error) error {
	ch := make(chan *api.BaseValueStatus, watchBuffer)
	stop := s.s.WatchValueStatus(ch, selector)
	defer stop()

	current := s.currentStatuses(prefixes, selector)
	sent := make(map[string]*api.BaseValueStatus, len(current))
	for _, st := range current {
		if err := send(st); err != nil {
			return err
		}
		sent[st.GetValue().GetKey()] = st
	}
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.closed:
			return status.Error(codes.Unavailable, "the configurator service is closing")
		case st := <-ch:
			key := st.GetValue().GetKey()
			if first, ok := sent[key]; ok {
				delete(sent, key)
				if proto.Equal(first, st) {
					continue
				}
			}
			if err := send(st); err != nil {
				return err
			}
		}
	}
}

// currentStatuses lists the statuses of the base values under the prefixes
// that selector accepts, each once, sorted by key.
func (s *Server) currentStatuses(prefixes []string, selector api.KeySelector) []*api.BaseValueStatus {
	byKey := map[string]*api.BaseValueStatus{}
	if l, ok := s.s.(statusLister); ok {
		for _, p := range prefixes {
			for _, st := range l.ListValueStatuses(p) {
				byKey[st.GetValue().GetKey()] = st
			}
		}
	} else {
		// Without a listing: the keys the scheduler holds values of.
		var keys []string
		for _, p := range prefixes {
			kvs, _ := s.s.DumpValuesByKeyPrefix(p, api.CachedView)
			for _, kv := range kvs {
				keys = append(keys, kv.Key)
			}
			for _, kv := range s.o.Get() {
				if strings.HasPrefix(kv.Key, p) {
					keys = append(keys, kv.Key)
				}
			}
		}
		for _, key := range keys {
			st := s.s.GetValueStatus(key)
			if st.GetValue().GetState() != api.ValueStateNonexistent {
				byKey[st.GetValue().GetKey()] = st
			}
		}
	}
	out := make([]*api.BaseValueStatus, 0, len(byKey))
	for key, st := range byKey {
		if selector(key) {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetValue().GetKey() < out[j].GetValue().GetKey() })
	return out
}

// Key spaces of interface states (shared/spec/models.md): the VPP link
// state pushed by VPP, and the Linux admin state derived from a Linux
// interface.
const (
	vppInterfacePrefix = "vpp/interface/"
	vppLinkStateInfix  = "/link-state/"
	linuxStatePrefix   = "linux/interface/state/"
)

// isInterfaceKey tells whether a base key is an interface (VPP or Linux) or
// an interface state value.
func isInterfaceKey(key string) bool {
	return strings.HasPrefix(key, models.VPPInterface.KeyPrefix) ||
		strings.HasPrefix(key, models.LinuxInterface.KeyPrefix) ||
		isInterfaceStateKey(key)
}

// isInterfaceStateKey tells whether a key is a link-state or admin-state
// value.
func isInterfaceStateKey(key string) bool {
	return (strings.HasPrefix(key, vppInterfacePrefix) && strings.Contains(key[len(vppInterfacePrefix):], vppLinkStateInfix)) ||
		strings.HasPrefix(key, linuxStatePrefix)
}

// Notify implements the Configurator service: the status of every VPP and
// Linux interface, VPP link-state value and Linux admin-state value, one
// notification per key, current ones first. A state value that goes away
// (an interface going from UP to DOWN changes its state key) is notified as
// REMOVED.
func (s *Server) Notify(_ *configuratorpb.NotifyRequest, stream grpc.ServerStreamingServer[configuratorpb.Notification]) error {
	// Last status sent per key, and the state keys sent per base key.
	last := map[string]*api.ValueStatus{}
	stateKeys := map[string][]string{}
	notify := func(st *api.ValueStatus) error {
		key := st.GetKey()
		if prev, ok := last[key]; ok && proto.Equal(prev, st) {
			return nil
		}
		if st.GetState() == api.ValueStateRemoved {
			delete(last, key)
		} else {
			last[key] = st
		}
		return stream.Send(&configuratorpb.Notification{Key: key, Status: st})
	}
	send := func(bs *api.BaseValueStatus) error {
		base := bs.GetValue()
		if err := notify(base); err != nil {
			return err
		}
		var now []string
		present := map[string]bool{}
		for _, d := range bs.GetDerivedValues() {
			if !isInterfaceStateKey(d.GetKey()) {
				continue
			}
			if base.GetState() == api.ValueStateRemoved {
				d = &api.ValueStatus{Key: d.GetKey(), State: api.ValueStateRemoved, Derived: true, DescriptorName: d.GetDescriptorName()}
			}
			if err := notify(d); err != nil {
				return err
			}
			present[d.GetKey()] = true
			if base.GetState() != api.ValueStateRemoved {
				now = append(now, d.GetKey())
			}
		}
		for _, k := range stateKeys[base.GetKey()] {
			if !present[k] {
				if err := notify(&api.ValueStatus{Key: k, State: api.ValueStateRemoved, Derived: true}); err != nil {
					return err
				}
			}
		}
		if len(now) == 0 {
			delete(stateKeys, base.GetKey())
		} else {
			stateKeys[base.GetKey()] = now
		}
		return nil
	}
	prefixes := []string{models.VPPInterface.KeyPrefix, models.LinuxInterface.KeyPrefix, vppInterfacePrefix, linuxStatePrefix}
	return s.watch(stream.Context(), prefixes, isInterfaceKey, send)
}

package grpcsource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// MaxConfirmWithin is the longest confirm_within a change may ask for.
const MaxConfirmWithin = 24 * time.Hour

// ErrNoPendingChange: no change is pending confirmation (RevertPending).
var ErrNoPendingChange = errors.New("no change is pending confirmation")

// Clock is the time of the changes to confirm: the real one by default, a
// fake one in tests.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f (in a goroutine of its own) once d has passed,
	// unless the Timer is stopped before.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a call of a Clock's AfterFunc.
type Timer interface {
	// Stop prevents the call if it was not made yet (false: made, or
	// under way).
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ConfirmOptions configures the changes to confirm (Server.EnableConfirm).
type ConfirmOptions struct {
	// StateDir is the agent's state directory: the pending confirmation is
	// kept in StateDir/confirm-pending.json (created with the directory
	// when needed). Empty: confirm_within is refused.
	StateDir string
	// Clock: nil is the real one.
	Clock Clock
}

// PendingChange is the change of the gRPC source waiting for its
// confirmation.
type PendingChange struct {
	// Seq is the sequence number of its transaction.
	Seq uint64
	// Description is its transaction's description.
	Description string
	// ConfirmWithin is the time it was given; Deadline is when it is
	// reverted unless confirmed.
	ConfirmWithin time.Duration
	Deadline      time.Time
	// Keys are the keys whose gRPC source value it set, changed or
	// removed, sorted.
	Keys []string
}

// ConfirmStatus is the state of the changes to confirm: what metrics and
// the agent's status show.
type ConfirmStatus struct {
	// Pending is the change pending confirmation (nil: none).
	Pending *PendingChange
	// Reverts counts the unconfirmed changes reverted since the server was
	// made (at the deadline, by RevertPending, or at start when the
	// deadline passed while the agent was stopped).
	Reverts uint64
}

// pending is a change pending confirmation: its description and the gRPC
// source's values before and after it.
type pending struct {
	PendingChange
	before, after []orchestrator.KV
}

// confirmer holds the change pending confirmation.
type confirmer struct {
	dir   string
	clock Clock

	// gate orders the changes of the gRPC source with the pending
	// confirmation: a plain change holds it shared from its check that
	// nothing is pending to its commit; a change to confirm, a
	// confirmation, a revert and the first resync hold it exclusively.
	gate sync.RWMutex
	// mu guards what follows, for the readers that do not take the gate
	// (ConfirmStatus).
	mu      sync.Mutex
	current *pending
	timer   Timer
	reverts uint64
}

func newConfirmer() *confirmer { return &confirmer{clock: realClock{}} }

func (c *confirmer) pendingChange() *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

// EnableConfirm configures the changes to confirm (confirm_within). Call
// it once, before FirstResync and before the server serves.
func (s *Server) EnableConfirm(opts ConfirmOptions) {
	s.confirm.dir = opts.StateDir
	if opts.Clock != nil {
		s.confirm.clock = opts.Clock
	}
}

// ConfirmStatus returns the change pending confirmation and the count of
// reverts.
func (s *Server) ConfirmStatus() ConfirmStatus {
	c := s.confirm
	c.mu.Lock()
	defer c.mu.Unlock()
	st := ConfirmStatus{Reverts: c.reverts}
	if c.current != nil {
		p := c.current.PendingChange
		p.Keys = slices.Clone(p.Keys)
		st.Pending = &p
	}
	return st
}

// describe names a pending change for the messages: "change #12 (gRPC
// update, to be confirmed within 5m0s) pending confirmation until ...".
func (p *pending) describe() string {
	return fmt.Sprintf("change #%d (%s) is pending confirmation until %s", p.Seq, p.Description, p.Deadline.UTC().Format(time.RFC3339))
}

// confirmWithin checks the confirm_within of a request.
func confirmWithin(what string, d *durationpb.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if err := d.CheckValid(); err != nil {
		return 0, status.Errorf(codes.InvalidArgument, "%s: confirm_within: %v", what, err)
	}
	within := d.AsDuration()
	switch {
	case within < 0:
		return 0, status.Errorf(codes.InvalidArgument, "%s: confirm_within %v is negative (leave it unset or 0 for a change without confirmation)", what, within)
	case within > MaxConfirmWithin:
		return 0, status.Errorf(codes.InvalidArgument, "%s: confirm_within %v is over the maximum, %v", what, within, MaxConfirmWithin)
	}
	return within, nil
}

// admit lets a change without confirmation through, unless a change is
// pending confirmation: it would be reverted with it. release ends the
// change (after its commit).
func (c *confirmer) admit(what string) (release func(), err error) {
	c.gate.RLock()
	if p := c.pendingChange(); p != nil {
		c.gate.RUnlock()
		return nil, status.Errorf(codes.FailedPrecondition, "%s refused: %s; confirm it or wait for its revert (a change made now would be reverted with it)", what, p.describe())
	}
	return c.gate.RUnlock, nil
}

// commitToConfirm makes a change with confirm_within (see the package
// documentation): it refuses it while another is pending, snapshots the
// gRPC source, applies the change (waiting for it), then records,
// persists and arms its confirmation.
func (s *Server) commitToConfirm(ctx context.Context, what string, opts changeOptions, change func(context.Context, api.TxnOptions) (uint64, error)) (uint64, []*configuratorpb.KeyError, error) {
	c := s.confirm
	c.gate.Lock()
	defer c.gate.Unlock()
	if p := c.pendingChange(); p != nil {
		return 0, nil, status.Errorf(codes.FailedPrecondition, "%s refused: %s; confirm it or wait for its revert first", what, p.describe())
	}
	if c.dir == "" {
		return 0, nil, status.Errorf(codes.FailedPrecondition, "%s refused, nothing applied: confirm_within needs the agent's state directory (state_dir), and none is configured", what)
	}
	select {
	case <-s.o.Started():
	default:
		return 0, nil, status.Errorf(codes.FailedPrecondition, "%s refused: %v", what, orchestrator.ErrNotStarted)
	}
	if err := c.checkWritable(); err != nil {
		return 0, nil, status.Errorf(codes.Unavailable, "%s refused, nothing applied: its pending confirmation cannot be kept: %v", what, err)
	}
	before := s.o.SourceValues(orchestrator.SourceGRPC)
	opts.wait = true
	opts.description = fmt.Sprintf("gRPC %s, to be confirmed within %v", what, opts.confirmWithin)
	seq, errs, err := s.commitNow(ctx, what, opts, change)
	after := s.o.SourceValues(orchestrator.SourceGRPC)
	keys := changedKeys(before, after)
	if err != nil {
		if len(keys) > 0 {
			// Recorded but not committed (a full queue): the source goes
			// back, so that nothing stays without its deadline.
			s.restore(before, fmt.Sprintf("revert of the gRPC %s to be confirmed: it failed: %v", what, err))
		}
		return seq, nil, err
	}
	if len(keys) == 0 {
		return seq, errs, nil // nothing to confirm: no change, or verification reverted it
	}
	p := &pending{
		PendingChange: PendingChange{Seq: seq, Description: opts.description, ConfirmWithin: opts.confirmWithin,
			Deadline: c.clock.Now().Add(opts.confirmWithin), Keys: keys},
		before: before, after: after,
	}
	if err := c.save(p); err != nil {
		reason := fmt.Sprintf("its pending confirmation could not be saved: %v", err)
		s.revert(p, reason)
		return seq, errs, status.Errorf(codes.Unavailable, "%s: change #%d reverted: %s", what, seq, reason)
	}
	c.arm(p, opts.confirmWithin, s.revertAtDeadline)
	s.log.Info("change pending confirmation", "txn", seq, "deadline", p.Deadline, "keys", len(keys))
	return seq, errs, nil
}

// arm records p as pending and its timer. Under the gate.
func (c *confirmer) arm(p *pending, left time.Duration, revert func(*pending)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.current = p
	c.timer = c.clock.AfterFunc(left, func() { revert(p) })
}

// disarm clears the pending change. Under the gate.
func (c *confirmer) disarm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.current, c.timer = nil, nil
}

// revertAtDeadline is the timer of p.
func (s *Server) revertAtDeadline(p *pending) {
	c := s.confirm
	c.gate.Lock()
	defer c.gate.Unlock()
	if c.pendingChange() != p {
		return // confirmed or reverted meanwhile
	}
	s.revert(p, fmt.Sprintf("not confirmed within %v", p.ConfirmWithin))
}

// RevertPending reverts the change pending confirmation now, as its
// deadline does, with reason in the revert's description ("revert of
// unconfirmed change #N: <reason>"). ErrNoPendingChange when none is
// pending. The revert is a full resync of the gRPC source; its values'
// errors are in its transaction record, not in the error returned.
func (s *Server) RevertPending(reason string) error {
	c := s.confirm
	c.gate.Lock()
	defer c.gate.Unlock()
	p := c.pendingChange()
	if p == nil {
		return ErrNoPendingChange
	}
	return s.revert(p, reason)
}

// revert puts the gRPC source back to the values it had before p, clears
// p and removes its state file. Under the gate. When the scheduler is
// closed (the agent stops) the file is kept: the next start reverts.
func (s *Server) revert(p *pending, reason string) error {
	c := s.confirm
	c.disarm()
	seq, err := s.restore(p.before, fmt.Sprintf("revert of unconfirmed change #%d: %s", p.Seq, reason))
	if errors.Is(err, api.ErrClosed) {
		s.log.Warn("unconfirmed change not reverted: the agent is stopping; its next start reverts it", "txn", p.Seq, "reason", reason)
		return err
	}
	c.mu.Lock()
	c.reverts++
	c.mu.Unlock()
	if rmErr := c.remove(); rmErr != nil {
		s.log.Error("the state file of the reverted change cannot be removed: the next start reverts it again", "error", rmErr)
	}
	s.log.Warn("unconfirmed change reverted", "txn", p.Seq, "revert txn", seq, "reason", reason)
	if err != nil && !isValueErrors(err) {
		return err
	}
	return nil
}

// restore puts the gRPC source back to values with a full resync of it
// (the source holds them whatever the transaction does), logging an error
// of the transaction itself.
func (s *Server) restore(values []orchestrator.KV, description string) (uint64, error) {
	seq, err := s.o.Resync(context.Background(), orchestrator.SourceGRPC, values, api.TxnOptions{Description: description})
	if err != nil && !isValueErrors(err) && !errors.Is(err, api.ErrClosed) {
		s.log.Error("the transaction putting the gRPC source back failed; the next resync applies it", "description", description, "error", err)
	}
	return seq, err
}

func isValueErrors(err error) bool {
	var te *api.TransactionError
	return errors.As(err, &te) && te.TxnInitError == nil
}

// changedKeys lists the keys whose value (or note) differs between two
// states of a source, sorted.
func changedKeys(before, after []orchestrator.KV) []string {
	was := make(map[string]orchestrator.KV, len(before))
	for _, kv := range before {
		was[kv.Key] = kv
	}
	var keys []string
	for _, kv := range after {
		old, ok := was[kv.Key]
		delete(was, kv.Key)
		if !ok || !sameKV(old, kv) {
			keys = append(keys, kv.Key)
		}
	}
	for key := range was {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

func sameKV(a, b orchestrator.KV) bool {
	return a.Note == b.Note && (a.Err == nil) == (b.Err == nil) &&
		(a.Err == nil || a.Err.Error() == b.Err.Error()) && proto.Equal(a.Value, b.Value)
}

// Confirm implements the Configurator service.
func (s *Server) Confirm(_ context.Context, req *configuratorpb.ConfirmRequest) (*configuratorpb.ConfirmResponse, error) {
	c := s.confirm
	c.gate.Lock()
	defer c.gate.Unlock()
	p := c.pendingChange()
	switch {
	case p == nil:
		return nil, status.Error(codes.NotFound, "confirm: no change is pending confirmation (one not confirmed in time was reverted: see the history)")
	case req.GetSeqNum() != 0 && req.GetSeqNum() != p.Seq:
		return nil, status.Errorf(codes.NotFound, "confirm: change #%d is not pending confirmation; %s", req.GetSeqNum(), p.describe())
	}
	if err := c.remove(); err != nil {
		return nil, status.Errorf(codes.Unavailable, "confirm: change #%d stays pending: its state file cannot be removed: %v", p.Seq, err)
	}
	c.disarm()
	s.log.Info("change confirmed", "txn", p.Seq)
	return &configuratorpb.ConfirmResponse{SeqNum: p.Seq}, nil
}

// Pending implements the Configurator service.
func (s *Server) Pending(context.Context, *configuratorpb.PendingRequest) (*configuratorpb.PendingResponse, error) {
	p := s.ConfirmStatus().Pending
	if p == nil {
		return &configuratorpb.PendingResponse{}, nil
	}
	return &configuratorpb.PendingResponse{SeqNum: p.Seq, Deadline: timestamppb.New(p.Deadline), Description: p.Description,
		Keys: p.Keys, ConfirmWithin: durationpb.New(p.ConfirmWithin)}, nil
}

// FirstResync delivers the gRPC source's first state to the orchestrator
// (its first Resync): empty, unless the state directory holds a change
// pending confirmation from before a restart. Then the source starts with
// the values after that change and its deadline is armed again for what is
// left, or, when the deadline passed, with the values before it (a revert,
// counted, and said in the first full resync's description). A state file
// that cannot be read or decoded is logged (naming it), renamed to
// <name>.bad, and the source starts empty. Call it once, before serving.
func (s *Server) FirstResync(ctx context.Context) (uint64, error) {
	c := s.confirm
	c.gate.Lock()
	defer c.gate.Unlock()
	if c.dir == "" {
		return s.o.Resync(ctx, orchestrator.SourceGRPC, nil, api.TxnOptions{})
	}
	p, err := c.load(s.reg)
	switch {
	case err != nil:
		attrs := []any{"file", c.path(), "error", err}
		if bad, mvErr := c.moveAside(); mvErr != nil {
			attrs = append(attrs, "move aside failed", mvErr)
		} else {
			attrs = append(attrs, "moved to", bad)
		}
		s.log.Error("the pending confirmation cannot be read: the gRPC source starts empty", attrs...)
		return s.o.Resync(ctx, orchestrator.SourceGRPC, nil, api.TxnOptions{})
	case p == nil:
		return s.o.Resync(ctx, orchestrator.SourceGRPC, nil, api.TxnOptions{})
	}
	now := c.clock.Now()
	if !now.Before(p.Deadline) {
		reason := fmt.Sprintf("not confirmed within %v (its deadline %s passed while the agent was stopped)", p.ConfirmWithin, p.Deadline.UTC().Format(time.RFC3339))
		seq, err := s.o.Resync(ctx, orchestrator.SourceGRPC, p.before, api.TxnOptions{Description: fmt.Sprintf("revert of unconfirmed change #%d: %s", p.Seq, reason)})
		c.mu.Lock()
		c.reverts++
		c.mu.Unlock()
		if rmErr := c.remove(); rmErr != nil {
			s.log.Error("the state file of the reverted change cannot be removed: the next start reverts it again", "error", rmErr)
		}
		s.log.Warn("unconfirmed change reverted", "txn", p.Seq, "reason", reason)
		return seq, err
	}
	c.arm(p, p.Deadline.Sub(now), s.revertAtDeadline)
	s.log.Warn("change pending confirmation restored", "txn", p.Seq, "deadline", p.Deadline)
	return s.o.Resync(ctx, orchestrator.SourceGRPC, p.after, api.TxnOptions{
		Description: fmt.Sprintf("unconfirmed change #%d kept over the restart: pending confirmation until %s", p.Seq, p.Deadline.UTC().Format(time.RFC3339))})
}

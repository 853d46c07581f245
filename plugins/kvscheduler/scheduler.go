package kvscheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Options configure a Scheduler. Zero values select the defaults.
type Options struct {
	// QueueSize bounds the NB transactions waiting to run (default 1000). A
	// blocking Commit waits for room; a non-blocking one fails with
	// api.ErrTxnQueueFull. Retries, SB notifications and commits made from
	// descriptor callbacks are never refused.
	QueueSize int
	// Clock gives the time and runs retry timers (default: real time).
	Clock Clock
	// Logger receives the transaction log (default: slog.Default()).
	Logger *slog.Logger
	// HistorySize is how many transaction records are kept at most (default
	// 1000).
	HistorySize int
	// HistoryMaxBytes bounds the estimated memory of the kept records
	// (default 16 MiB: the records of creating and deleting some 20k
	// routes), so big transactions under churn cannot grow it.
	HistoryMaxBytes int
	// HistoryMaxAge drops records older than this (default 24 h; negative:
	// no age limit).
	HistoryMaxAge time.Duration
	// TxnLog, when set, receives the transaction log as boxed text: the
	// arguments and the plan before execution (so a crash leaves a trace),
	// the executed operations after (see package txnlog). The Logger gets
	// one summary record per transaction either way.
	TxnLog io.Writer
	// TxnLogMaxItems is how many values and operations each section of
	// the transaction log lists before it summarises the rest (0: 20;
	// negative: all).
	TxnLogMaxItems int
	// Observer receives events for metrics (see package metrics).
	Observer api.Observer
	// DriftReportOnly makes DriftRepair transactions report what they find
	// out of sync (MISSING, with the cause) without creating or updating it
	// again; a resync repairs it. Default: repair.
	DriftReportOnly bool
	// Verify says whether the values a transaction changed are read back
	// from the SB after it (see "Verification after apply" in the package
	// doc): VerifyOff (default) verifies only the transactions committed
	// with TxnOptions.Verify; VerifyReport verifies every transaction that
	// executed an operation and reports what the SB does not hold.
	Verify VerifyMode
	// CallTimeout, when positive, is the deadline of the context of each
	// Create, Update, Delete and Retrieve call (default: none; the
	// context is cancelled when the scheduler closes either way).
	CallTimeout time.Duration
	// MaxBatch is how many operations a descriptor with Batch is given in
	// one call at most (default 1024; 1 or negative: one at a time, Batch
	// is never called).
	MaxBatch int
	// FirstRevision is the revision of the state at start (see "Revision"
	// in the package doc). Default (0): the start time in Unix milliseconds
	// shifted left by 20 bits, so that the revisions of an agent that
	// restarts go on growing (unless its last run made a million changes
	// per millisecond) and a plan made before the restart is stale, never
	// equal to a revision of the new run by chance (1 if the clock is before
	// 1970).
	FirstRevision uint64
}

// VerifyMode is Options.Verify.
type VerifyMode int

const (
	// VerifyOff verifies only transactions committed with
	// TxnOptions.Verify; the others cost nothing more.
	VerifyOff VerifyMode = iota
	// VerifyReport verifies every transaction that executed an operation
	// (not dry runs): one Retrieve per descriptor of the values it changed.
	// What the SB does not hold as applied is reported (MISSING or FAILED,
	// the record's VerifyFailed, Commit's error); nothing is reverted
	// unless the transaction has TxnOptions.Verify.
	VerifyReport
)

// firstRevision is Options.FirstRevision's default for a start at t.
func firstRevision(t time.Time) uint64 {
	if ms := t.UnixMilli(); ms > 0 {
		return uint64(ms) << 20
	}
	return 1
}

// Clock is the scheduler's source of time, injected so tests control it.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels it.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Scheduler is the KV Scheduler. Create it with New.
type Scheduler struct {
	opts   Options
	clock  Clock
	logger *slog.Logger

	// regMu guards descriptor registration; descs is replaced, never changed,
	// so the worker reads it without the lock.
	regMu sync.Mutex
	descs atomic.Pointer[descriptorSet]

	// mu guards the graph, which only the worker changes. The worker holds
	// it while it processes a transaction, except during descriptor
	// callbacks; readers take it for reading and see the graph as of the
	// last finished transaction (see settledView).
	mu sync.RWMutex
	g  *graph
	// running holds, while a transaction runs, the undo logs of its
	// changes so far (readers see through them; nil between transactions).
	// Guarded by mu.
	running *runningTxn
	// cbMu is held around every Create, Update, Delete and Retrieve call:
	// by the worker, and by readers for the Retrieves of SB-view dumps, so
	// that callbacks are never concurrent (api doc).
	cbMu sync.Mutex
	// baseCtx is the parent of the callbacks' contexts; Close cancels it.
	baseCtx    context.Context
	cancelBase context.CancelFunc
	// scope is the call scope of the worker's callbacks (reset for each
	// transaction), and scopeCtx their context: made once, as transactions
	// of one value are frequent (worker only).
	scope    *callScope
	scopeCtx context.Context
	// memo is the memo of the refresh whose Retrieves the worker is
	// making (refreshRound), nil between refreshes.
	memo api.MapMemo
	// derivedMemo is what DerivedValues gave for the applied value of each
	// base node at the last full refresh (refreshAll), with the graph's
	// messages of them where equal: a base found unchanged at the next one
	// (the same applied message), or planned with that message as its
	// intended value, is not derived again, and its derived values are
	// compared by pointer. Rebuilt by every refreshAll, so it holds at most
	// the nodes of one (worker only).
	derivedMemo map[*node]derivedOf
	// runState is what readers see of the running transaction (reused).
	runState runningTxn
	// notes are the notes of NB values (api.NotedTxn), shown at the end
	// of their details; nil while there are none. Guarded by mu.
	notes map[string]string

	// queue of transactions.
	qMu       sync.Mutex
	queue     []*queuedTxn
	nbQueued  int // NB transactions in queue (bounded by QueueSize)
	qSignal   chan struct{}
	qRoom     chan struct{}
	nextSeq   uint64
	closed    bool
	closing   chan struct{}
	workerEnd chan struct{}

	// retryPolicies are the distinct retry options of NB transactions
	// (see retryPolicy); worker only.
	retryPolicies []api.RetryOpt
	retryMu       sync.Mutex
	retryTimers   map[*retryTicket]func() bool

	history *history
	// dryRuns keeps the records of the latest dry runs (plans) apart from
	// history, so that plans do not fill it: GetRecordedTransaction finds
	// them, GetTransactionHistory does not list them (DryRunsKept).
	dryRuns *history
	watch   *watchers

	// revision is the revision of the state (api.KVScheduler.CurrentRevision):
	// advanced by the worker, under mu, when a transaction changed anything;
	// read by anyone. lastChange is the last transaction that advanced it
	// (worker only).
	revision   atomic.Uint64
	lastChange api.RevisionChange
	// firstRevision is the revision at start (Options.FirstRevision).
	firstRevision uint64

	// runs counts transaction runs (worker only).
	runs uint64
	// driftRepairs counts recent drift repairs per key (worker only).
	driftRepairs map[string]*repairCount

	statsMu   sync.Mutex
	txnCounts map[api.TxnType]uint64
	txnLogMu  sync.Mutex
}

var _ api.KVScheduler = (*Scheduler)(nil)

// New starts a scheduler.
func New(opts Options) *Scheduler {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1000
	}
	if opts.HistorySize <= 0 {
		opts.HistorySize = 1000
	}
	if opts.HistoryMaxBytes <= 0 {
		opts.HistoryMaxBytes = 16 << 20
	}
	if opts.HistoryMaxAge == 0 {
		opts.HistoryMaxAge = 24 * time.Hour
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = 1024
	}
	s := &Scheduler{
		opts:        opts,
		clock:       opts.Clock,
		logger:      opts.Logger,
		g:           newGraph(),
		qSignal:     make(chan struct{}, 1),
		qRoom:       make(chan struct{}, 1),
		closing:     make(chan struct{}),
		workerEnd:   make(chan struct{}),
		retryTimers: make(map[*retryTicket]func() bool),
		history:     newHistory(opts.HistorySize, opts.HistoryMaxBytes, opts.HistoryMaxAge),
		dryRuns:     newHistory(DryRunsKept, opts.HistoryMaxBytes, opts.HistoryMaxAge),
		watch:       newWatchers(),
		txnCounts:   map[api.TxnType]uint64{},
	}
	if s.clock == nil {
		s.clock = realClock{}
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	// The state at start; 0 is "no revision" (TxnOptions.ExpectedRevision).
	s.firstRevision = opts.FirstRevision
	if s.firstRevision == 0 {
		s.firstRevision = firstRevision(s.clock.Now())
	}
	s.revision.Store(s.firstRevision)
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.scope = &callScope{s: s}
	s.scopeCtx = api.WithCallScope(s.baseCtx, s.scope)
	s.descs.Store(&descriptorSet{byName: map[string]*descriptorInfo{}})
	go s.worker()
	return s
}

// Close stops the scheduler: the running transaction finishes, queued ones
// fail with api.ErrClosed, retries are cancelled and watchers stopped.
func (s *Scheduler) Close() {
	s.qMu.Lock()
	if s.closed {
		s.qMu.Unlock()
		<-s.workerEnd
		return
	}
	s.closed = true
	close(s.closing)
	s.qMu.Unlock()
	s.cancelBase() // a callback blocked in the SB gives up
	<-s.workerEnd

	s.retryMu.Lock()
	for t, stop := range s.retryTimers {
		stop()
		delete(s.retryTimers, t)
	}
	s.retryMu.Unlock()
	s.watch.closeAll()
}

// descriptorInfo is a registered descriptor.
type descriptorInfo struct {
	d        *api.KVDescriptor
	metadata api.MetadataMapRW
	// valueType is the Go type of the generated message of the
	// descriptor's ValueTypeName, once a value of it was seen (ofValueType).
	valueType atomic.Value // reflect.Type
}

// ofValueType tells whether value is a message of the descriptor's
// ValueTypeName, and the name of its type when it is not. A value of the
// Go type of the generated message of that name is, without its name read
// (ProtoReflect, ~150 ns a value); other values (a dynamicpb message, of
// whatever name) have their name compared.
func (di *descriptorInfo) ofValueType(value proto.Message) (string, bool) {
	t := reflect.TypeOf(value)
	if known, _ := di.valueType.Load().(reflect.Type); known != nil && known == t {
		return di.d.ValueTypeName, true
	}
	got := value.ProtoReflect().Descriptor().FullName()
	if string(got) != di.d.ValueTypeName {
		return string(got), false
	}
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(got); err == nil && reflect.TypeOf(mt.Zero().Interface()) == t {
		di.valueType.Store(t)
	}
	return string(got), true
}

func (di *descriptorInfo) label(key string) string {
	if di.d.KeyLabel != nil {
		return di.d.KeyLabel(key)
	}
	return key
}

// descriptorSet is an immutable snapshot of the registered descriptors.
type descriptorSet struct {
	list   []*descriptorInfo
	byName map[string]*descriptorInfo
}

// forKey returns the descriptor of a key. Descriptors whose NBKeyPrefix the
// key has are asked first, so NB keys usually take one selector call.
func (ds *descriptorSet) forKey(key string) *descriptorInfo {
	for _, di := range ds.list {
		if di.d.NBKeyPrefix != "" && strings.HasPrefix(key, di.d.NBKeyPrefix) && di.d.KeySelector(key) {
			return di
		}
	}
	for _, di := range ds.list {
		if di.d.KeySelector(key) {
			return di
		}
	}
	return nil
}

// RegisterKVDescriptor implements api.KVScheduler.
func (s *Scheduler) RegisterKVDescriptor(descriptors ...*api.KVDescriptor) error {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	cur := s.descs.Load()
	next := &descriptorSet{
		list:   append([]*descriptorInfo(nil), cur.list...),
		byName: make(map[string]*descriptorInfo, len(cur.byName)+len(descriptors)),
	}
	for k, v := range cur.byName {
		next.byName[k] = v
	}
	var added []*descriptorInfo
	for _, d := range descriptors {
		if d == nil {
			return errors.New("register descriptor: nil descriptor")
		}
		if d.Name == "" {
			return errors.New("register descriptor: empty name")
		}
		if d.KeySelector == nil {
			return fmt.Errorf("register descriptor %q: KeySelector is required", d.Name)
		}
		if _, dup := next.byName[d.Name]; dup {
			return fmt.Errorf("register descriptor %q: a descriptor with this name is already registered", d.Name)
		}
		di := &descriptorInfo{d: d}
		if d.WithMetadata {
			if d.MetadataMapFactory != nil {
				di.metadata = d.MetadataMapFactory()
			}
			if di.metadata == nil {
				di.metadata = api.NewMetadataMap()
			}
		}
		next.list = append(next.list, di)
		next.byName[d.Name] = di
		added = append(added, di)
	}
	s.descs.Store(next)
	s.logger.Debug("registered descriptors", "count", len(added))

	// Values that waited for these descriptors are applied by a transaction.
	s.mu.RLock()
	waiting := false
	for _, n := range s.g.nodes {
		if n.desc == nil && n.base == nil && n.state == api.ValueStateUnimplemented {
			waiting = true
			break
		}
	}
	s.mu.RUnlock()
	if waiting {
		s.enqueue(&queuedTxn{typ: api.RetryUnimplemented}, false)
	}
	return nil
}

// GetRegisteredNBKeyPrefixes implements api.KVScheduler.
func (s *Scheduler) GetRegisteredNBKeyPrefixes() []string {
	var out []string
	for _, di := range s.descs.Load().list {
		if di.d.NBKeyPrefix != "" {
			out = append(out, di.d.NBKeyPrefix)
		}
	}
	return out
}

// GetMetadataMap implements api.KVScheduler.
func (s *Scheduler) GetMetadataMap(descriptor string) api.MetadataMap {
	di := s.descs.Load().byName[descriptor]
	if di == nil || di.metadata == nil {
		return nil
	}
	return di.metadata
}

// kvChange is one input value of a transaction.
type kvChange struct {
	key      string
	value    proto.Message
	metadata any // SB notifications only
}

// queuedTxn is a transaction waiting in the queue.
type queuedTxn struct {
	seq    uint64
	typ    api.TxnType
	ctx    context.Context
	values []kvChange
	// notes of NB values (api.NotedTxn), nil without any.
	notes map[string]string
	// nodes are, in a full resync, the nodes of values as the refresh found
	// them (nil: none), for the run to skip the lookups; see graph.known.
	nodes   []*node
	resync  api.ResyncType
	verbose bool
	revert  bool
	// verify: TxnOptions.Verify (revert is set too).
	verify      bool
	dryRun      bool
	retryOpt    *api.RetryOpt
	description string
	// expectedRevision: TxnOptions.ExpectedRevision (0: none).
	expectedRevision uint64
	// retry transactions: the failed keys and which attempt this is.
	retryKeys []retryKey
	attempt   int
	// followUp transactions: the keys callbacks asked to reconcile.
	followUp []string
	// drift transactions: the reports, and what the refresh found.
	drift      []api.DriftReport
	driftFound *driftFound
	// barrier: no transaction, just a signal that what came before is done.
	barrier bool
	// done receives the result of a blocking commit.
	done chan txnResult
	// enqueued is when the transaction entered the queue.
	enqueued time.Time
}

// nodeHint returns the node of values[i] the refresh found, if any.
func (qt *queuedTxn) nodeHint(i int) *node {
	if i < len(qt.nodes) {
		return qt.nodes[i]
	}
	return nil
}

type txnResult struct {
	seq uint64
	err error
}

// enqueue appends a transaction. A bounded NB transaction waits for room when
// wait is set, else fails with ErrTxnQueueFull.
func (s *Scheduler) enqueue(qt *queuedTxn, bounded bool) (uint64, error) {
	for {
		s.qMu.Lock()
		if s.closed {
			s.qMu.Unlock()
			return 0, api.ErrClosed
		}
		if !bounded || s.nbQueued < s.opts.QueueSize {
			break
		}
		s.qMu.Unlock()
		if qt.done == nil {
			return 0, api.ErrTxnQueueFull
		}
		var ctxDone <-chan struct{}
		if qt.ctx != nil {
			ctxDone = qt.ctx.Done()
		}
		select {
		case <-s.qRoom:
		case <-ctxDone:
			return 0, qt.ctx.Err()
		case <-s.closing:
			return 0, api.ErrClosed
		}
	}
	if !qt.barrier {
		s.nextSeq++
		qt.seq = s.nextSeq
		qt.enqueued = s.clock.Now()
	}
	if bounded {
		s.nbQueued++
	}
	s.queue = append(s.queue, qt)
	s.qMu.Unlock()
	select {
	case s.qSignal <- struct{}{}:
	default:
	}
	return qt.seq, nil
}

func (s *Scheduler) dequeue() (*queuedTxn, bool) {
	for {
		s.qMu.Lock()
		if s.closed {
			rest := s.queue
			s.queue = nil
			s.qMu.Unlock()
			for _, qt := range rest {
				if qt.done != nil {
					qt.done <- txnResult{seq: qt.seq, err: api.ErrClosed}
				}
			}
			return nil, false
		}
		if len(s.queue) > 0 {
			qt := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			if qt.typ == api.NBTransaction && !qt.barrier {
				s.nbQueued--
				select {
				case s.qRoom <- struct{}{}:
				default:
				}
			}
			s.qMu.Unlock()
			return qt, true
		}
		s.qMu.Unlock()
		select {
		case <-s.qSignal:
		case <-s.closing:
		}
	}
}

func (s *Scheduler) worker() {
	defer close(s.workerEnd)
	for {
		qt, ok := s.dequeue()
		if !ok {
			return
		}
		if qt.barrier {
			close(qt.done)
			continue
		}
		if qt.done != nil && qt.ctx != nil && qt.ctx.Err() != nil {
			// A blocking committer gave up before the transaction started:
			// drop it (it was told so). A non-blocking commit always runs.
			qt.done <- txnResult{seq: qt.seq, err: qt.ctx.Err()}
			continue
		}
		if err := s.checkRevision(qt); err != nil {
			s.logger.Info("transaction refused: planned against another revision", "txn", qt.seq, "error", err)
			if qt.done != nil { // always: ExpectedRevision needs a blocking Commit
				qt.done <- txnResult{seq: qt.seq, err: &api.TransactionError{TxnInitError: err}}
			}
			continue
		}
		err := s.processTxn(qt)
		if keys := s.scope.requests; len(keys) > 0 {
			s.queueFollowUp(slices.Clone(keys), slices.Clone(s.scope.requesters))
			s.scope.requests, s.scope.requesters = s.scope.requests[:0], s.scope.requesters[:0]
		}
		if qt.done != nil {
			qt.done <- txnResult{seq: qt.seq, err: err}
		}
	}
}

// callScope is the api.CallScope of the callbacks of one transaction (or of
// one SB-view dump, with dump set).
type callScope struct {
	s *Scheduler
	// dump: the scope of a reader's SB-view dump, not of the worker.
	dump bool
	// requests are the keys callbacks asked to reconcile, in order, once
	// each; requesters the descriptors that asked.
	requests   []string
	requesters []string
}

// GetValueStatus implements api.ReadView: the worker's graph as the
// transaction has it (the worker waits for the callback meanwhile); for a
// dump, what readers see.
func (c *callScope) GetValueStatus(key string) *api.BaseValueStatus {
	if c.dump {
		return c.s.GetValueStatus(key)
	}
	c.s.mu.RLock()
	defer c.s.mu.RUnlock()
	n := c.s.g.get(key)
	if n == nil {
		return &api.BaseValueStatus{Value: &api.ValueStatus{Key: key, State: api.ValueStateNonexistent}}
	}
	for n.base != nil {
		n = n.base
	}
	return c.s.withNote(baseStatus(n))
}

// GetMetadataMap implements api.ReadView.
func (c *callScope) GetMetadataMap(descriptor string) api.MetadataMap {
	return c.s.GetMetadataMap(descriptor)
}

// RequestReconcile implements api.CallScope.
func (c *callScope) RequestReconcile(keys ...string) {
	if c.dump {
		c.s.queueFollowUp(keys, nil)
		return
	}
	for _, k := range keys {
		if k != "" && !slices.Contains(c.requests, k) {
			c.requests = append(c.requests, k)
		}
	}
}

// queueFollowUp queues the reconciliation of keys callbacks asked for.
func (s *Scheduler) queueFollowUp(keys, requesters []string) {
	desc := "follow-up of " + strings.Join(keys, ", ")
	if len(keys) > 3 {
		desc = fmt.Sprintf("follow-up of %s and %d other keys", strings.Join(keys[:3], ", "), len(keys)-3)
	}
	if len(requesters) > 0 {
		desc += " (requested by " + strings.Join(requesters, ", ") + ")"
	}
	if _, err := s.enqueue(&queuedTxn{typ: api.FollowUp, followUp: keys, description: desc}, false); err != nil && !errors.Is(err, api.ErrClosed) {
		s.logger.Warn("follow-up not queued", "keys", keys, "error", err)
	}
}

// callCtx returns the context of one callback of the worker and its
// release.
func (s *Scheduler) callCtx(scope *callScope) (context.Context, context.CancelFunc) {
	ctx := s.scopeCtx
	if scope != s.scope {
		ctx = api.WithCallScope(s.baseCtx, scope)
	}
	if s.opts.CallTimeout > 0 {
		return context.WithTimeout(ctx, s.opts.CallTimeout)
	}
	return ctx, func() {}
}

// callback runs a descriptor callback of the worker: without the graph lock
// (readers read meanwhile), one callback at a time (cbMu), with the
// callback's context. desc names the descriptor, for follow-up records.
func (s *Scheduler) callback(desc string, f func(ctx context.Context)) {
	scope := s.scope
	ctx, cancel := s.callCtx(scope)
	asked := len(scope.requests)
	s.mu.Unlock()
	s.cbMu.Lock()
	defer func() {
		s.cbMu.Unlock()
		s.mu.Lock()
		cancel()
		if len(scope.requests) > asked && !slices.Contains(scope.requesters, desc) {
			scope.requesters = append(scope.requesters, desc)
		}
	}()
	f(ctx)
}

// StartNBTransaction implements api.KVScheduler.
func (s *Scheduler) StartNBTransaction() api.Txn {
	return &txn{s: s}
}

// txn collects the changes of a transaction; a key set twice keeps the last
// value (resolved when the transaction runs, see orderValues).
type txn struct {
	s      *Scheduler
	values []kvChange
	// notes are the notes of values (api.NotedTxn), nil without any.
	notes map[string]string
	err   error
}

var _ api.NotedTxn = (*txn)(nil)

// SetValue implements api.Txn.
func (t *txn) SetValue(key string, value proto.Message) api.Txn {
	if key == "" {
		if t.err == nil {
			t.err = api.ErrNilKey
		}
		return t
	}
	t.values = appendDoubling(t.values, kvChange{key: key, value: value})
	if t.notes != nil {
		delete(t.notes, key)
	}
	return t
}

// SetValueWithNote implements api.NotedTxn.
func (t *txn) SetValueWithNote(key string, value proto.Message, note string) api.Txn {
	t.SetValue(key, value)
	if key != "" && value != nil && note != "" {
		if t.notes == nil {
			t.notes = map[string]string{}
		}
		t.notes[key] = note
	}
	return t
}

// Commit implements api.Txn.
func (t *txn) Commit(ctx context.Context, opts api.TxnOptions) (uint64, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if api.InCallback(ctx) {
		return 0, &api.TransactionError{TxnInitError: api.ErrCommitInCallback}
	}
	if t.err != nil {
		return 0, &api.TransactionError{TxnInitError: t.err}
	}
	if err := opts.Validate(); err != nil {
		return 0, &api.TransactionError{TxnInitError: err}
	}
	qt := &queuedTxn{typ: api.NBTransaction, ctx: ctx, values: t.values, notes: t.notes, resync: opts.Resync, verbose: opts.Verbose,
		revert: opts.Revert || opts.Verify, verify: opts.Verify, dryRun: opts.DryRun, description: opts.Description, expectedRevision: opts.ExpectedRevision}
	if opts.Retry != nil {
		opt := *opts.Retry
		qt.retryOpt = &opt
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	blocking := !opts.NonBlocking
	if blocking {
		qt.done = make(chan txnResult, 1)
	}
	seq, err := t.s.enqueue(qt, true)
	if err != nil || !blocking {
		return seq, err
	}
	select {
	case res := <-qt.done:
		return res.seq, res.err
	case <-ctx.Done():
		return seq, ctx.Err()
	}
}

// TransactionBarrier implements api.KVScheduler.
func (s *Scheduler) TransactionBarrier() {
	qt := &queuedTxn{barrier: true, done: make(chan txnResult)}
	if _, err := s.enqueue(qt, false); err != nil {
		return
	}
	select {
	case <-qt.done:
	case <-s.workerEnd:
	}
}

// PushSBNotification implements api.KVScheduler.
func (s *Scheduler) PushSBNotification(notifications ...api.KVWithMetadata) error {
	if len(notifications) == 0 {
		return nil
	}
	values := make([]kvChange, 0, len(notifications))
	for _, n := range notifications {
		if n.Key == "" {
			return api.ErrNilKey
		}
		values = append(values, kvChange{key: n.Key, value: n.Value, metadata: n.Metadata})
	}
	_, err := s.enqueue(&queuedTxn{typ: api.SBNotification, values: values}, false)
	return err
}

// GetValueStatus implements api.KVScheduler.
func (s *Scheduler) GetValueStatus(key string) *api.BaseValueStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := s.settledView()
	n := v.lookup(s.g, key)
	if n == nil {
		return &api.BaseValueStatus{Value: &api.ValueStatus{Key: key, State: api.ValueStateNonexistent}}
	}
	for n.base != nil {
		n = n.base
	}
	return s.withNote(v.baseStatusOf(n))
}

// GetValueErrors implements api.KVScheduler.
func (s *Scheduler) GetValueErrors(keys []string) []*api.ValueStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := s.settledView()
	var out []*api.ValueStatus
	var seen map[*node]bool // bases already reported, when keys repeat one
	for _, key := range keys {
		n := v.lookup(s.g, key)
		if n == nil {
			continue
		}
		for n.base != nil {
			n = n.base
		}
		inErr := v.inError(n)
		for _, d := range v.derivedOf(n) {
			if inErr {
				break
			}
			inErr = v.inError(d)
		}
		if !inErr {
			continue // the common case: nothing allocated
		}
		if seen == nil {
			seen = map[*node]bool{}
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		bs := s.withNote(v.baseStatusOf(n))
		for _, st := range append([]*api.ValueStatus{bs.Value}, bs.DerivedValues...) {
			if api.StatusInError(st) {
				out = append(out, st)
			}
		}
	}
	return out
}

func baseStatus(n *node) *api.BaseValueStatus {
	bs := &api.BaseValueStatus{Value: valueStatus(n)}
	for _, d := range n.derived {
		bs.DerivedValues = append(bs.DerivedValues, valueStatus(d))
	}
	return bs
}

func valueStatus(n *node) *api.ValueStatus {
	st := &api.ValueStatus{
		Key:            n.key,
		State:          n.state,
		LastOperation:  n.lastOp,
		Details:        descriptorNotes(n.desc, n.key, n.intended, n.state, n.details),
		DescriptorName: n.descName(),
		Derived:        n.base != nil,
	}
	if n.err != nil {
		st.Error = n.err.Error()
	}
	return st
}

// ListValueStatuses returns the status of every base value whose key starts
// with prefix, sorted by key.
func (s *Scheduler) ListValueStatuses(prefix string) []*api.BaseValueStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := s.settledView()
	var out []*api.BaseValueStatus
	v.scan(s.g, prefix, func(n *node) bool {
		if n.base == nil {
			out = append(out, s.withNote(v.baseStatusOf(n)))
		}
		return true
	})
	return out
}

// WatchValueStatus implements api.KVScheduler.
func (s *Scheduler) WatchValueStatus(ch chan<- *api.BaseValueStatus, selector api.KeySelector) (stop func()) {
	return s.watch.add(ch, selector)
}

// GetTransactionHistory implements api.KVScheduler.
func (s *Scheduler) GetTransactionHistory(since, until time.Time) []*api.RecordedTxn {
	return s.history.between(since, until)
}

// GetRecordedTransaction implements api.KVScheduler: a record of the
// history, or of one of the last DryRunsKept dry runs.
func (s *Scheduler) GetRecordedTransaction(seqNum uint64) *api.RecordedTxn {
	if rec := s.history.get(seqNum); rec != nil {
		return rec
	}
	return s.dryRuns.get(seqNum)
}

// DumpValuesByDescriptor implements api.KVScheduler.
func (s *Scheduler) DumpValuesByDescriptor(descriptor string, view api.View) ([]api.KVWithMetadata, error) {
	di := s.descs.Load().byName[descriptor]
	if di == nil {
		return nil, fmt.Errorf("dump: %w %q", api.ErrUnknownDescriptor, descriptor)
	}
	return s.dump(view, "", di)
}

// GetRegisteredDescriptors returns the names of the registered descriptors,
// in registration order.
func (s *Scheduler) GetRegisteredDescriptors() []string {
	var names []string
	for _, di := range s.descs.Load().list {
		names = append(names, di.d.Name)
	}
	return names
}

// DumpValuesByKeyPrefix implements api.KVScheduler.
func (s *Scheduler) DumpValuesByKeyPrefix(keyPrefix string, view api.View) ([]api.KVWithMetadata, error) {
	return s.dump(view, keyPrefix, nil)
}

func (s *Scheduler) dump(view api.View, prefix string, only *descriptorInfo) ([]api.KVWithMetadata, error) {
	var out []api.KVWithMetadata
	correlate := map[*descriptorInfo][]api.KVWithMetadata{}
	s.mu.RLock()
	v := s.settledView()
	v.scan(s.g, prefix, func(n *node) bool {
		t := v.of(n)
		if only != nil && t.desc != only {
			return true
		}
		origin := api.FromNB
		if t.obtained {
			origin = api.FromSB
		}
		switch view {
		case api.NBView:
			if t.intended != nil && !t.obtained {
				out = append(out, api.KVWithMetadata{Key: n.key, Value: t.intended, Metadata: t.metadata, Origin: api.FromNB})
			}
		case api.CachedView:
			if t.applied != nil {
				out = append(out, api.KVWithMetadata{Key: n.key, Value: t.applied, Metadata: t.metadata, Origin: origin})
			}
		case api.SBView:
			if t.desc != nil && n.base == nil && t.applied != nil {
				correlate[t.desc] = append(correlate[t.desc], api.KVWithMetadata{Key: n.key, Value: t.applied, Metadata: t.metadata, Origin: origin})
			}
		}
		return true
	})
	s.mu.RUnlock()
	if view != api.SBView {
		return out, nil
	}
	// Ask the SB now: between two descriptor calls of the worker (cbMu),
	// never beside one.
	s.cbMu.Lock()
	defer s.cbMu.Unlock()
	ctx := api.WithRefreshMemo(api.WithCallScope(s.baseCtx, &callScope{s: s, dump: true}), api.MapMemo{})
	var errs []error
	for _, di := range s.descs.Load().list {
		if di.d.Retrieve == nil || (only != nil && di != only) {
			continue
		}
		if only == nil && prefix != "" && di.d.NBKeyPrefix != "" &&
			!strings.HasPrefix(di.d.NBKeyPrefix, prefix) && !strings.HasPrefix(prefix, di.d.NBKeyPrefix) {
			continue
		}
		kvs, err := retrieveGuarded(ctx, di, correlate[di], s.opts.CallTimeout)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, kv := range kvs {
			if kv.Value != nil && strings.HasPrefix(kv.Key, prefix) {
				out = append(out, kv)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, errors.Join(errs...)
}

// retrieveGuarded calls a descriptor's Retrieve with ctx (and the call
// timeout), turning a panic into an error.
func retrieveGuarded(ctx context.Context, di *descriptorInfo, correlate []api.KVWithMetadata, timeout time.Duration) (kvs []api.KVWithMetadata, err error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("descriptor %s: Retrieve: panic: %v", di.d.Name, p)
		}
	}()
	kvs, err = di.d.Retrieve(ctx, correlate)
	if err != nil {
		return nil, fmt.Errorf("descriptor %s: Retrieve: %w", di.d.Name, err)
	}
	return kvs, nil
}

func (n *node) origin() api.ValueOrigin {
	if n.obtained {
		return api.FromSB
	}
	return api.FromNB
}

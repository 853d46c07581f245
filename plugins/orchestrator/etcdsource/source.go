package etcdsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// Sink receives the states and changes (the *orchestrator.Orchestrator
// implements it). The source passes the zero api.TxnOptions: the
// orchestrator's defaults.
type Sink interface {
	Resync(ctx context.Context, id orchestrator.SourceID, kvs []orchestrator.KV, opts api.TxnOptions) (uint64, error)
	Change(ctx context.Context, id orchestrator.SourceID, kvs []orchestrator.KV, opts api.TxnOptions) (uint64, error)
}

var _ Sink = (*orchestrator.Orchestrator)(nil)

// Options configure a Source. The zero value is usable.
type Options struct {
	// Label is the microservice label (default models.DefaultLabel).
	Label string
	// Registry decodes the values (default models.Default).
	Registry *models.Registry
	// BatchMaxKeys is the most keys in one Change (default 1000), unless a
	// single etcd revision has more.
	BatchMaxKeys int
	// BatchMaxDelay is the longest wait to coalesce a burst (default 20ms).
	// The first change after a quiet BatchMaxDelay goes at once: only
	// what follows it closely waits to be coalesced.
	BatchMaxDelay time.Duration
	// ReadTimeout is the longest wait for one page of a full read (default
	// 30s). While etcd is away a read waits this long for it to come back
	// before it fails and is retried.
	ReadTimeout time.Duration
	// ProgressInterval is how long a watch may stay silent before the
	// source asks etcd for a progress notification; the watch is taken as
	// broken when etcd sends nothing within another interval (default 2s;
	// negative: never ask). See "Liveness" in the package documentation.
	ProgressInterval time.Duration
	// Log receives the source's logs (default slog.Default()).
	Log *slog.Logger
}

// Defaults of Options.
const (
	DefaultBatchMaxKeys  = 1000
	DefaultBatchMaxDelay = 20 * time.Millisecond
	DefaultReadTimeout   = 30 * time.Second
	// DefaultProgressInterval: a member that hangs, or a connection that
	// passes nothing, is noticed within 2 to 4 seconds, at the cost of one
	// progress request per idle interval and agent.
	DefaultProgressInterval = 2 * time.Second
)

// Retry timing: the backoff between attempts after a failure.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// readPage is the number of keys read per request of a full read.
	readPage = 5000
)

// Source feeds the sink from etcd. Create it with New (or NewDialing) and
// start it with Run.
type Source struct {
	// client is the etcd client; a source made by NewDialing makes it in
	// Connect (dial) and closes it in Close (dialed).
	client *clientv3.Client
	dial   Dial
	dialed bool
	sink   Sink
	opts   Options
	prefix string
	log    *slog.Logger

	syncOnce sync.Once
	synced   chan struct{}

	conn *connection

	// vars follows the etcd keys that name values under variants of their
	// keys (Run's goroutine only; rebuilt by each full read).
	vars *variants
}

var _ orchestrator.Connector = (*Source)(nil)

// New returns a source reading the agent's keys from client into sink.
func New(client *clientv3.Client, sink Sink, opts Options) *Source {
	if opts.Label == "" {
		opts.Label = models.DefaultLabel
	}
	if opts.Registry == nil {
		opts.Registry = models.Default
	}
	if opts.BatchMaxKeys <= 0 {
		opts.BatchMaxKeys = DefaultBatchMaxKeys
	}
	if opts.BatchMaxDelay <= 0 {
		opts.BatchMaxDelay = DefaultBatchMaxDelay
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.ProgressInterval == 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	prefix := models.EtcdKeyPrefix(opts.Label)
	log := opts.Log.With("source", string(orchestrator.SourceEtcd), "prefix", prefix)
	return &Source{
		client: client,
		sink:   sink,
		opts:   opts,
		prefix: prefix,
		log:    log,
		synced: make(chan struct{}),
		conn:   newConnection(log, time.Now),
		vars:   newVariants(),
	}
}

// Dial makes the etcd client of a source made by NewDialing.
type Dial func(ctx context.Context) (*clientv3.Client, error)

// NewDialing returns a source that makes its etcd client with dial in
// Connect, so that it can be built before the etcd it reads runs (the
// agent's embedded one). Close closes that client.
func NewDialing(dial Dial, sink Sink, opts Options) *Source {
	s := New(nil, sink, opts)
	s.dial = dial
	return s
}

// Connect makes the client of a source made by NewDialing (once; nothing
// for a source made by New). Run calls it if it was not called; calling it
// first makes a bad client configuration or refused credentials an error
// of the caller's start.
func (s *Source) Connect(ctx context.Context) error {
	if s.client != nil {
		return nil
	}
	c, err := s.dial(ctx)
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	s.client, s.dialed = c, true
	return nil
}

// Close closes the client Connect made (nothing for a source made by New,
// whose client is the caller's). Call it after Run returned.
func (s *Source) Close() {
	if s.dialed {
		_ = s.client.Close()
	}
}

// Client returns the source's etcd client: the caller's (New), or the one
// Connect made (NewDialing; nil before), so that others writing to the same
// etcd (the agent's status) share its connection. It is closed by Close
// (NewDialing) or by its owner (New).
func (s *Source) Client() *clientv3.Client { return s.client }

// Synced is closed after the first Resync returned.
func (s *Source) Synced() <-chan struct{} { return s.synced }

// Connection returns the state of the connection to etcd (see "Connection
// state" in the package documentation). It is safe to call at any time,
// from any goroutine.
func (s *Source) Connection() orchestrator.Connection { return s.conn.get() }

// watchEnd says why a watch ended.
type watchEnd int

const (
	endCtx       watchEnd = iota // ctx ended
	endCompacted                 // the next revision was compacted: resync now
	endBroken                    // the watch failed or closed: back off, resync
)

// Run reads everything under /vnf-agent/<label>/ at one revision and gives
// it to the sink's Resync, then watches from the next revision and passes the
// changes to the sink's Change (see the package documentation). It returns
// nil when ctx ends, or an error that retrying cannot fix (an invalid label,
// the client of NewDialing not made, the etcd client closed, permission
// denied). Connection follows the connection meanwhile, and is stopped,
// with the error, after such a return.
func (s *Source) Run(ctx context.Context) error {
	s.conn.starting()
	err := s.run(ctx)
	if err != nil {
		s.conn.stopped(err)
	}
	return err
}

// run is Run but for the connection's start and stop.
func (s *Source) run(ctx context.Context) error {
	if err := models.ValidLabel(s.opts.Label); err != nil {
		return fmt.Errorf("etcd source: %w", err)
	}
	if err := s.Connect(ctx); err != nil {
		return fmt.Errorf("etcd source: %w", err)
	}
	backoff := minBackoff
	wait := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff = min(2*backoff, maxBackoff)
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for {
		// The connection is watched from before the read: a connection lost
		// between the read and the watch (etcd restarted, maybe empty) must
		// end the watch too, or the watch would resume on an etcd that is
		// not the one read.
		lost, stopMonitor := s.monitor(ctx)
		rev, err := s.resync(ctx)
		if ctx.Err() != nil {
			stopMonitor()
			return nil
		}
		if err != nil {
			stopMonitor()
			if fatal := s.fatal(err); fatal != nil {
				return fatal
			}
			if errors.Is(err, rpctypes.ErrCompacted) {
				// A page of the read was compacted under us: read again now.
				s.log.Info("etcd compacted during the full read; reading again", "error", err)
				continue
			}
			s.conn.failed(s.readError(err), backoff)
			if !wait() {
				return nil
			}
			continue
		}
		if st := s.client.ActiveConnection().GetState(); st != connectivity.Ready {
			// The read succeeded over a connection that is gone already;
			// the monitor may have started after it was READY.
			stopMonitor()
			s.conn.failed(fmt.Errorf("the connection to %s was lost right after reading the state (now %s)", s.endpoints(), strings.ToLower(st.String())), backoff)
			if !wait() {
				return nil
			}
			continue
		}
		end, established, err := s.watch(ctx, rev, lost)
		stopMonitor()
		if established {
			backoff = minBackoff
		}
		switch end {
		case endCtx:
			return nil
		case endCompacted:
			s.log.Info("etcd watch fell behind a compaction; reading the full state again", "revision", rev)
		case endBroken:
			if fatal := s.fatal(err); fatal != nil {
				return fatal
			}
			s.conn.failed(fmt.Errorf("watching: %w", err), backoff)
			if !wait() {
				return nil
			}
		}
	}
}

// readError is the error of a full read that failed, with what the client
// knows of its connection when etcd did not answer in time (the client
// waits for a connection until the deadline, and then says no more than
// "context deadline exceeded").
func (s *Source) readError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("reading the state: no answer within %v (the connection to %s is %s): %w", s.opts.ReadTimeout, s.endpoints(), s.connState(), err)
	}
	return fmt.Errorf("reading the state: %w", err)
}

// endpoints are the client's endpoints, for messages.
func (s *Source) endpoints() string { return strings.Join(s.client.Endpoints(), ", ") }

// connState is the state of the client's connection, for messages.
func (s *Source) connState() string {
	return strings.ToLower(s.client.ActiveConnection().GetState().String())
}

// fatal returns the error to end Run with when err cannot be fixed by
// retrying, or nil.
func (s *Source) fatal(err error) error {
	if s.client.Ctx().Err() != nil {
		return fmt.Errorf("etcd source: the etcd client is closed")
	}
	if err == nil {
		return nil
	}
	for _, e := range []error{rpctypes.ErrPermissionDenied, rpctypes.ErrAuthFailed, rpctypes.ErrUserEmpty} {
		if errors.Is(err, e) {
			return fmt.Errorf("etcd source: reading %s: %w", s.prefix, err)
		}
	}
	return nil
}

// resync reads the whole state and gives it to the sink. It returns the
// revision read at.
func (s *Source) resync(ctx context.Context) (int64, error) {
	rev, kvs, err := s.read(ctx)
	if err != nil {
		return 0, err
	}
	s.conn.established(rev)
	start := time.Now()
	if _, err := s.sink.Resync(ctx, orchestrator.SourceEtcd, kvs, api.TxnOptions{}); err != nil && ctx.Err() == nil {
		s.log.Log(ctx, sinkErrLevel(err), "resync of the etcd state reported an error", "revision", rev, "keys", len(kvs), "error", err)
	} else {
		s.log.Debug("resynced the etcd state", "revision", rev, "keys", len(kvs), "took", time.Since(start))
	}
	s.syncOnce.Do(func() { close(s.synced) })
	return rev, nil
}

// sinkErrLevel is the level to log an error of the sink at: info when
// values failed in a transaction that ran (their status and the scheduler
// say why), warn otherwise.
func sinkErrLevel(err error) slog.Level {
	var te *api.TransactionError
	if errors.As(err, &te) && te.TxnInitError == nil {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// read returns every KV under the prefix, read at one revision.
func (s *Source) read(ctx context.Context) (int64, []orchestrator.KV, error) {
	ctx = clientv3.WithRequireLeader(ctx)
	end := clientv3.GetPrefixRangeEnd(s.prefix)
	from := s.prefix
	var rev int64
	var kvs []orchestrator.KV
	var found []*variantKey
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(readPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		pctx, cancel := context.WithTimeout(ctx, s.opts.ReadTimeout)
		resp, err := s.client.Get(pctx, from, opts...)
		cancel()
		if err != nil {
			return 0, nil, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			d, ok := s.decode(string(kv.Key), kv.Value, false)
			switch {
			case !ok:
			case d.variant != "":
				found = append(found, &variantKey{etcdKey: string(kv.Key), key: d.kv.Key, read: d.read,
					value: d.kv.Value, variant: d.variant, created: kv.CreateRevision})
			default:
				kvs = append(kvs, d.kv)
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, s.rebuild(kvs, found), nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// decode turns an etcd key and value (or a delete) into a KV; false: the key
// is not ours. A value under a variant of its key (models.DecodeVariant)
// gets its own key, and the variant is told.
func (s *Source) decode(etcdKey string, value []byte, deleted bool) (decoded, bool) {
	label, modelKey, err := models.ParseEtcdKey(etcdKey)
	if err != nil {
		// Under our prefix, but not /vnf-agent/<label>/<model key>: keep
		// whatever follows the prefix as the key, so the problem shows.
		rest, ours := strings.CutPrefix(etcdKey, s.prefix)
		if !ours || rest == "" {
			if !deleted {
				s.log.Warn("ignoring an etcd key that names no model key", "key", etcdKey)
			}
			return decoded{}, false
		}
		if deleted {
			return decoded{kv: orchestrator.KV{Key: rest}, read: rest}, true
		}
		return decoded{kv: orchestrator.KV{Key: rest, Err: err}, read: rest}, true
	}
	if label != s.opts.Label || strings.HasPrefix(modelKey, etcdstatus.KeyPrefix) {
		// Another agent's key, or the agent's status (which it publishes
		// itself): not configuration.
		return decoded{}, false
	}
	key := s.canonical(modelKey)
	if deleted {
		return decoded{kv: orchestrator.KV{Key: key}, read: key}, true
	}
	r, err := s.opts.Registry.DecodeVariant(modelKey, value)
	if err != nil {
		return decoded{kv: orchestrator.KV{Key: key, Err: err}, read: key}, true
	}
	return decoded{kv: orchestrator.KV{Key: r.Key, Value: r.Value}, read: key, variant: r.Variant}, true
}

// canonical returns the canonical spelling of a model key (the key itself
// when it does not parse).
func (s *Source) canonical(modelKey string) string {
	if m := s.opts.Registry.ModelOfKey(modelKey); m != nil {
		if k, err := m.CanonicalKey(modelKey); err == nil {
			return k
		}
	}
	return modelKey
}

// monitor watches the client's connection until stop is called: lost is
// closed when the connection is lost (see connectionLost).
func (s *Source) monitor(ctx context.Context) (lost <-chan struct{}, stop func()) {
	mctx, cancel := context.WithCancel(ctx)
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		connectionLost(mctx, s.client.ActiveConnection(), ch)
	}()
	return ch, func() {
		cancel()
		<-done
	}
}

// watch watches from rev+1 and delivers the changes until the watch ends
// or lost is closed. established tells whether etcd accepted the watch.
func (s *Source) watch(ctx context.Context, rev int64, lost <-chan struct{}) (end watchEnd, established bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	// The progress requests go on the watch's stream, which the client
	// finds by the context's metadata: the same context for both.
	wctx = clientv3.WithRequireLeader(wctx)
	wch := s.client.Watch(wctx, s.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithCreatedNotify(), clientv3.WithProgressNotify())
	defer func() {
		cancel()
		for range wch {
			// Drain until the client closes the channel.
		}
	}()

	b := newBatch()
	var timer *time.Timer
	var timeout <-chan time.Time
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer, timeout = nil, nil
		}
	}
	defer stopTimer()
	live := newLiveness(s.opts.ProgressInterval, time.Now)
	defer live.stop()
	// lastFlush is when the last Change ended: a batch that starts a
	// quiet BatchMaxDelay after it goes at once (see the package doc).
	var lastFlush time.Time
	flush := func() {
		stopTimer()
		if b.empty() {
			return
		}
		defer func() { lastFlush = time.Now() }()
		kvs, revs := b.take()
		if len(kvs) == 0 {
			return // only keys created and deleted within the batch
		}
		start := time.Now()
		if _, err := s.sink.Change(ctx, orchestrator.SourceEtcd, kvs, api.TxnOptions{}); err != nil && ctx.Err() == nil {
			s.log.Log(ctx, sinkErrLevel(err), "change from etcd reported an error", "keys", len(kvs), "revisions", revs, "error", err)
		} else {
			s.log.Debug("change from etcd", "keys", len(kvs), "revisions", revs, "took", time.Since(start))
		}
	}

	for {
		var wr clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return endCtx, established, ctx.Err()
		case <-timeout:
			flush()
			continue
		case <-live.tick():
			switch live.check() {
			case askProgress:
				if err := s.client.RequestProgress(wctx); err != nil && ctx.Err() == nil {
					return endBroken, established, fmt.Errorf("asking %s for the watch's progress: %w", s.endpoints(), err)
				}
			case silent:
				return endBroken, established, fmt.Errorf("%s sent nothing for %v, not even the progress asked for at least %v ago: the member hangs or the connection passes nothing", s.endpoints(), live.silentFor().Round(time.Millisecond), s.opts.ProgressInterval)
			}
			continue
		case <-lost:
			// The client would resume the watch by itself, but etcd may
			// have come back empty or restored: read it all again.
			return endBroken, established, fmt.Errorf("the client lost its connection to %s (now %s)", s.endpoints(), s.connState())
		case wr, ok = <-wch:
		}
		if ctx.Err() != nil {
			return endCtx, established, ctx.Err()
		}
		live.heard()
		if !ok {
			// Undelivered events are covered by the resync that follows.
			return endBroken, established, errors.New("etcd watch channel closed")
		}
		if err := wr.Err(); err != nil {
			if wr.CompactRevision != 0 || errors.Is(err, rpctypes.ErrCompacted) {
				return endCompacted, true, err
			}
			return endBroken, established, err
		}
		if h := wr.Header.Revision; h != 0 && h < rev {
			// This etcd is behind the revision read: it is not the etcd
			// read (it came back empty or from an older backup). Its
			// revisions would be taken for ones already seen.
			return endBroken, established, fmt.Errorf("etcd's revision went back from %d to %d (restarted empty or restored from a backup)", rev, h)
		}
		if wr.Created || len(wr.Events) > 0 {
			established = true
		}
		s.conn.seen(wr.Header.Revision)
		if err := s.add(ctx, b, wr.Events, flush); err != nil {
			// The batch is dropped: the full read that follows covers it.
			if errors.Is(err, rpctypes.ErrCompacted) {
				return endCompacted, true, err
			}
			return endBroken, established, err
		}
		if b.keys() >= s.opts.BatchMaxKeys {
			flush()
		}
		if !b.empty() && timer == nil {
			if time.Since(lastFlush) >= s.opts.BatchMaxDelay {
				// Quiet until now: a lone change does not wait for others
				// that may never come; a burst's next revisions, read
				// while this Change runs, are coalesced.
				flush()
				continue
			}
			timer = time.NewTimer(s.opts.BatchMaxDelay)
			timeout = timer.C
		}
	}
}

// connState is what connectionLost reads of a *grpc.ClientConn.
type connState interface {
	GetState() connectivity.State
	WaitForStateChange(ctx context.Context, sourceState connectivity.State) bool
}

var _ connState = (*grpc.ClientConn)(nil)

// connectionLost closes lost when the client's connection to etcd is lost:
// it leaves the READY state it was in, or shuts down. A connection that is
// not READY yet when it starts (still reconnecting) is not lost: the read
// that follows waits for it. It returns when ctx ends.
func connectionLost(ctx context.Context, conn connState, lost chan<- struct{}) {
	state := conn.GetState()
	wasReady := false
	for {
		switch {
		case state == connectivity.Shutdown:
			close(lost)
			return
		case state == connectivity.Ready:
			wasReady = true
		case wasReady:
			close(lost)
			return
		}
		if !conn.WaitForStateChange(ctx, state) {
			return
		}
		if state == connectivity.Ready {
			// It left READY, whatever it is by now: a quick reconnect
			// (etcd restarted) may be READY again before this reads the
			// state, and must not go unnoticed.
			close(lost)
			return
		}
		state = conn.GetState()
	}
}

// add adds events to the batch a revision at a time, flushing first when a
// revision would not fit. The error is that of a read of etcd that an
// event of a variant key needed (see change): the watch must end.
func (s *Source) add(ctx context.Context, b *batch, events []*clientv3.Event, flush func()) error {
	for len(events) > 0 {
		n := 1
		for n < len(events) && events[n].Kv.ModRevision == events[0].Kv.ModRevision {
			n++
		}
		rev := make([]event, 0, n)
		for _, ev := range events[:n] {
			etcdKey := string(ev.Kv.Key)
			d, ok := s.decode(etcdKey, ev.Kv.Value, ev.Type == mvccpb.DELETE)
			if !ok {
				continue
			}
			var err error
			rev, err = s.change(ctx, rev, etcdKey, d, ev.IsCreate(), ev.Kv.CreateRevision, ev.Kv.ModRevision)
			if err != nil {
				return err
			}
		}
		events = events[n:]
		if len(rev) == 0 {
			continue
		}
		if !b.empty() && b.keys()+b.newKeys(rev) > s.opts.BatchMaxKeys {
			flush()
		}
		b.addRevision(rev)
	}
	return nil
}

// event is a decoded etcd event; created: the put created the key.
type event struct {
	kv      orchestrator.KV
	created bool
}

// batch is the coalesced changes of whole revisions: one KV per key, the
// last, in the order of the last events. A key created and deleted within
// the batch is left out: the sink never had it.
type batch struct {
	entries []entry
	pos     map[string]int // key -> index of its live entry
	revs    int
}

type entry struct {
	kv      orchestrator.KV
	created bool // the key did not exist before the batch
	dead    bool // replaced by a later event of its key, or left out
}

func newBatch() *batch { return &batch{pos: map[string]int{}} }

func (b *batch) empty() bool { return b.revs == 0 }
func (b *batch) keys() int   { return len(b.pos) }

// newKeys counts the keys of rev not in the batch yet.
func (b *batch) newKeys(rev []event) int {
	n := 0
	var seen map[string]bool
	for _, ev := range rev {
		if _, ok := b.pos[ev.kv.Key]; ok || seen[ev.kv.Key] {
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[ev.kv.Key] = true
		n++
	}
	return n
}

func (b *batch) addRevision(rev []event) {
	for _, ev := range rev {
		created := ev.created
		if i, ok := b.pos[ev.kv.Key]; ok {
			b.entries[i].dead = true
			created = b.entries[i].created
			delete(b.pos, ev.kv.Key)
		}
		if created && ev.kv.Value == nil && ev.kv.Err == nil {
			continue // created and deleted within the batch
		}
		b.pos[ev.kv.Key] = len(b.entries)
		b.entries = append(b.entries, entry{kv: ev.kv, created: created})
	}
	b.revs++
}

// take returns the live KVs and the number of revisions, and empties the
// batch.
func (b *batch) take() ([]orchestrator.KV, int) {
	out := make([]orchestrator.KV, 0, len(b.pos))
	for _, e := range b.entries {
		if !e.dead {
			out = append(out, e.kv)
		}
	}
	revs := b.revs
	clear(b.entries) // drop the references to the values
	b.entries, b.revs = b.entries[:0], 0
	clear(b.pos)
	return out, revs
}

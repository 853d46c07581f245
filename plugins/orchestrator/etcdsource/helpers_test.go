package etcdsource_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// waitTimeout bounds every wait of the tests (etcd under -race is slow to
// start, never that slow).
const waitTimeout = 60 * time.Second

const (
	label      = models.DefaultLabel
	prefix     = "/vnf-agent/" + label + "/"
	vppIfKey   = "config/vpp/v2/interfaces/"
	linuxIfKey = "config/linux/interfaces/v2/interface/"
)

func vppIf(name string, mtu int) string {
	return fmt.Sprintf(`{"name":%q,"type":"SOFTWARE_LOOPBACK","mtu":%d}`, name, mtu)
}

func testLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// freePorts returns n distinct loopback ports free a moment ago
// (testsupport.FreePorts: below the kernel's ephemeral range, never the
// same twice).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	return testsupport.FreePorts(t, n)
}

// etcdServer is an embedded etcd that a test can stop and start again on
// the same directory and ports.
type etcdServer struct {
	t   *testing.T
	cfg etcdsource.EmbeddedConfig
	e   *etcdsource.Embedded
}

func startEtcd(t *testing.T) *etcdServer {
	t.Helper()
	ports := freePorts(t, 2)
	s := &etcdServer{t: t, cfg: etcdsource.EmbeddedConfig{
		Dir:       filepath.Join(t.TempDir(), "etcd"), // etcd creates it 0700
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		Log:       testLog(),
		MaxTxnOps: 1000,
	}}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *etcdServer) start() {
	s.t.Helper()
	e, err := etcdsource.StartEmbedded(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.e = e
}

func (s *etcdServer) stop() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

func newClient(t *testing.T, url string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call is one call of the sink.
type call struct {
	resync bool
	kvs    []orchestrator.KV
}

func (c call) String() string {
	var keys []string
	for _, kv := range c.kvs {
		keys = append(keys, kv.Key)
	}
	kind := "Change"
	if c.resync {
		kind = "Resync"
	}
	return fmt.Sprintf("%s(%d keys: %s)", kind, len(keys), strings.Join(keys[:min(len(keys), 8)], " "))
}

// fakeSink records the calls and keeps the state they build. It checks that
// no event is applied twice: a key deleted must be there, and a VPP
// interface's MTU (the tests' version counter, when not 0) must grow with
// every Change.
type fakeSink struct {
	mu       sync.Mutex
	calls    []call
	state    map[string]orchestrator.KV
	version  map[string]uint32
	problems []string
	notify   chan struct{}

	// hold: the next call of that kind (resync or not) waits for gate.
	hold    *bool
	gate    chan struct{}
	entered chan call
}

func newSink() *fakeSink {
	return &fakeSink{state: map[string]orchestrator.KV{}, version: map[string]uint32{},
		notify: make(chan struct{}, 1), entered: make(chan call, 16)}
}

func (f *fakeSink) Resync(ctx context.Context, id orchestrator.SourceID, kvs []orchestrator.KV, _ api.TxnOptions) (uint64, error) {
	return f.record(ctx, id, true, kvs)
}

func (f *fakeSink) Change(ctx context.Context, id orchestrator.SourceID, kvs []orchestrator.KV, _ api.TxnOptions) (uint64, error) {
	return f.record(ctx, id, false, kvs)
}

// holdNext makes the next Resync (resync true) or Change wait until the
// returned release is called.
func (f *fakeSink) holdNext(resync bool) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold, f.gate = &resync, make(chan struct{})
	gate := f.gate
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// waitEntered waits for a held call to arrive.
func (f *fakeSink) waitEntered(t *testing.T) call {
	t.Helper()
	select {
	case c := <-f.entered:
		return c
	case <-time.After(waitTimeout):
		t.Fatal("the held sink call did not come")
		return call{}
	}
}

func version(kv orchestrator.KV) uint32 {
	if i, ok := kv.Value.(*vppif.Interface); ok {
		return i.GetMtu()
	}
	return 0
}

func (f *fakeSink) record(ctx context.Context, id orchestrator.SourceID, resync bool, kvs []orchestrator.KV) (uint64, error) {
	c := call{resync: resync, kvs: slices.Clone(kvs)}
	f.mu.Lock()
	var gate chan struct{}
	if f.hold != nil && *f.hold == resync {
		gate = f.gate
		f.hold, f.gate = nil, nil
	}
	f.mu.Unlock()
	if gate != nil {
		f.entered <- c
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	defer func() {
		select {
		case f.notify <- struct{}{}:
		default:
		}
	}()
	problem := func(format string, args ...any) {
		f.problems = append(f.problems, fmt.Sprintf("call %d (%v): ", len(f.calls), c)+fmt.Sprintf(format, args...))
	}
	if id != orchestrator.SourceEtcd {
		problem("source %q", id)
	}
	seen := map[string]bool{}
	for _, kv := range kvs {
		if seen[kv.Key] {
			problem("key %s twice", kv.Key)
		}
		seen[kv.Key] = true
	}
	f.calls = append(f.calls, c)
	if resync {
		f.state = map[string]orchestrator.KV{}
	}
	for _, kv := range kvs {
		v := version(kv)
		switch {
		case kv.Value == nil && kv.Err == nil:
			if resync {
				problem("delete of %s in a resync", kv.Key)
			} else if _, ok := f.state[kv.Key]; !ok {
				problem("delete of %s, which the sink does not have (applied twice?)", kv.Key)
			}
			delete(f.state, kv.Key)
			continue
		case v == 0:
		case resync && v < f.version[kv.Key]:
			problem("resync has version %d of %s, older than %d", v, kv.Key, f.version[kv.Key])
		case !resync && v <= f.version[kv.Key]:
			problem("change has version %d of %s, not newer than %d (applied twice?)", v, kv.Key, f.version[kv.Key])
		}
		f.version[kv.Key] = max(f.version[kv.Key], v)
		f.state[kv.Key] = kv
	}
	return uint64(len(f.calls)), nil
}

// snapshot returns copies of the calls and the state.
func (f *fakeSink) snapshot() ([]call, map[string]orchestrator.KV) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := make(map[string]orchestrator.KV, len(f.state))
	for k, v := range f.state {
		st[k] = v
	}
	return slices.Clone(f.calls), st
}

// waitFor waits until cond (called with the sink locked) holds.
func (f *fakeSink) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok := cond()
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-f.notify:
		case <-deadline.C:
			calls, _ := f.snapshot()
			t.Fatalf("timed out waiting for %s; calls: %v", what, calls)
		}
	}
}

// waitState waits until the sink's state equals want.
func (f *fakeSink) waitState(t *testing.T, want map[string]orchestrator.KV) {
	t.Helper()
	var diff string
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		diff = stateDiff(f.state, want)
		f.mu.Unlock()
		if diff == "" {
			return
		}
		select {
		case <-f.notify:
		case <-deadline.C:
			t.Fatalf("the sink's state does not become etcd's: %s", diff)
		}
	}
}

func (f *fakeSink) checkProblems(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Error(p)
	}
}

// stateDiff describes the differences between two states ("": none).
// Values compare with proto.Equal; errors compare by presence.
func stateDiff(got, want map[string]orchestrator.KV) string {
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+k)
		case (g.Err == nil) != (w.Err == nil):
			diffs = append(diffs, fmt.Sprintf("%s: error %v, want %v", k, g.Err, w.Err))
		case !proto.Equal(g.Value, w.Value):
			diffs = append(diffs, fmt.Sprintf("%s: %v, want %v", k, g.Value, w.Value))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "extra "+k)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 10 {
		diffs = append(diffs[:10], fmt.Sprintf("... (%d differences)", len(diffs)))
	}
	return strings.Join(diffs, "; ")
}

// etcdState reads what the sink should hold, decoding etcd's content
// directly.
func etcdState(t *testing.T, c *clientv3.Client) map[string]orchestrator.KV {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]orchestrator.KV{}
	for _, kv := range resp.Kvs {
		modelKey := strings.TrimPrefix(string(kv.Key), prefix)
		if modelKey == "" {
			continue // the source ignores the key of the prefix itself
		}
		key := modelKey
		if m := models.Default.ModelOfKey(modelKey); m != nil {
			if k, err := m.CanonicalKey(modelKey); err == nil {
				key = k
			}
		}
		_, v, err := models.Default.DecodeValue(modelKey, kv.Value)
		out[key] = orchestrator.KV{Key: key, Value: v, Err: err}
	}
	return out
}

// harness is an etcd, a client, a fake sink and a source.
type harness struct {
	t    *testing.T
	etcd *etcdServer
	cli  *clientv3.Client
	sink *fakeSink
	src  *etcdsource.Source
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	s := startEtcd(t)
	return &harness{t: t, etcd: s, cli: newClient(t, s.e.ClientURL()), sink: newSink()}
}

// run starts the source; the test's cleanup stops it and checks that Run
// returned nil and that the sink saw no event twice.
func (h *harness) run(opts etcdsource.Options) {
	h.t.Helper()
	if opts.Log == nil {
		opts.Log = testLog()
	}
	h.src = etcdsource.New(h.cli, h.sink, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.src.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("Run: %v", err)
			}
		case <-time.After(waitTimeout):
			h.t.Error("Run did not return after its context ended")
		}
		h.sink.checkProblems(h.t)
	})
}

func (h *harness) waitSynced() {
	h.t.Helper()
	select {
	case <-h.src.Synced():
	case <-time.After(waitTimeout):
		h.t.Fatal("the source did not sync")
	}
}

// waitWatching puts a canary value and waits until the source delivers it
// in a Change, then deletes it and waits for the delete: the source's
// watch is established. Under load the client's fresh connection may be
// lost right after the first read, and the source reads again (a Resync
// then delivers the canary): it tries again. It returns how many calls
// the sink had received then.
func (h *harness) waitWatching() int {
	h.t.Helper()
	key := vppIfKey + "canary"
	delivered := func(from int, deleted bool) (byChange bool) {
		h.sink.waitFor(h.t, "the canary", func() bool {
			for _, c := range h.sink.calls[min(from, len(h.sink.calls)):] {
				for _, kv := range c.kvs {
					if kv.Key == key && (kv.Value == nil) == deleted {
						byChange = !c.resync
						return true
					}
				}
				if c.resync && deleted {
					if _, ok := h.sink.state[key]; !ok {
						return true // read again without it
					}
				}
			}
			return false
		})
		return byChange
	}
	for try := 1; try <= 10; try++ {
		calls, _ := h.sink.snapshot()
		h.put(prefix+key, vppIf("canary", try))
		put := delivered(len(calls), false)
		calls, _ = h.sink.snapshot()
		h.del(prefix + key)
		if delivered(len(calls), true) && put {
			calls, _ = h.sink.snapshot()
			return len(calls)
		}
	}
	h.t.Fatal("the source's watch never delivered a put as a Change")
	return 0
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) put(key, value string) int64 {
	h.t.Helper()
	resp, err := h.cli.Put(h.ctx(), key, value)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Header.Revision
}

func (h *harness) del(key string) int64 {
	h.t.Helper()
	resp, err := h.cli.Delete(h.ctx(), key)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Header.Revision
}

func (h *harness) txn(ops ...clientv3.Op) int64 {
	h.t.Helper()
	resp, err := h.cli.Txn(h.ctx()).Then(ops...).Commit()
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Header.Revision
}

// waitEtcdState waits until the sink holds etcd's current content.
func (h *harness) waitEtcdState() {
	h.t.Helper()
	h.sink.waitState(h.t, etcdState(h.t, h.cli))
}

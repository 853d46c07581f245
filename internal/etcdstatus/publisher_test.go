package etcdstatus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	statuspb "github.com/netagent-io/netagent/proto/status"
	"github.com/netagent-io/netagent/tests/testsupport"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every wait (an embedded etcd under -race on two vCPUs
// is slow to start, never this slow).
const waitTimeout = 60 * time.Second

const (
	label = "vpp7"
	// ttl is short, so that a test of the lease's end is quick.
	ttl = 2 * time.Second
)

// etcdServer is an embedded etcd on free loopback ports.
type etcdServer struct {
	t   testing.TB
	cfg etcdsource.EmbeddedConfig
	e   *etcdsource.Embedded
}

func startEtcd(t testing.TB) *etcdServer {
	t.Helper()
	// Both listeners stay open until both ports are picked: closed one by
	// one, the kernel may hand out one port twice.
	var ports []int
	var lns []net.Listener
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range lns {
		_ = l.Close()
	}
	s := &etcdServer{t: t, cfg: etcdsource.EmbeddedConfig{Dir: filepath.Join(t.TempDir(), "etcd"),
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		Log: slog.New(slog.DiscardHandler)}}
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

func newClient(t testing.TB, url string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// reporter is the report function of a test: it returns what the test
// set, and counts the calls.
type reporter struct {
	mu     sync.Mutex
	report etcdstatus.Report
	calls  int
}

func (r *reporter) set(rep etcdstatus.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report = rep
}

func (r *reporter) get() etcdstatus.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	return etcdstatus.Report{State: r.report.State, Plugins: append([]etcdstatus.Plugin(nil), r.report.Plugins...)}
}

func (r *reporter) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// publisher is a Publisher run by a test until stop (or the test's end).
type publisher struct {
	t      testing.TB
	rep    *reporter
	log    *testsupport.SyncBuffer
	cancel context.CancelFunc
	done   chan struct{}
}

func startPublisher(t testing.TB, client *clientv3.Client, rep etcdstatus.Report, opts etcdstatus.Options) *publisher {
	t.Helper()
	p := &publisher{t: t, rep: &reporter{report: rep}, log: &testsupport.SyncBuffer{}, done: make(chan struct{})}
	opts.Label, opts.TTL = label, ttl
	if opts.CheckInterval == 0 {
		opts.CheckInterval = 20 * time.Millisecond
	}
	opts.Log = slog.New(slog.NewTextHandler(p.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pub := etcdstatus.New(client, p.rep.get, opts)
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { defer close(p.done); pub.Run(ctx) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("publisher log:\n%s", testsupport.Tail(p.log.String(), 20000))
		}
	})
	return p
}

// stop ends Run and waits for it to return.
func (p *publisher) stop() {
	p.t.Helper()
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		p.t.Fatal("Run did not return after its context ended")
	}
}

// published is what etcd holds under a status key: its value decoded, the
// raw JSON, its lease and revision.
type published struct {
	raw         string
	lease       clientv3.LeaseID
	modRevision int64
}

// get reads a key ("" raw when absent).
func get(t *testing.T, c *clientv3.Client, key string) published {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return published{}
	}
	kv := resp.Kvs[0]
	return published{raw: string(kv.Value), lease: clientv3.LeaseID(kv.Lease), modRevision: kv.ModRevision}
}

func agentStatus(t *testing.T, p published) *statuspb.AgentStatus {
	t.Helper()
	var st statuspb.AgentStatus
	if err := protojson.Unmarshal([]byte(p.raw), &st); err != nil {
		t.Fatalf("the agent's status %q: %v", p.raw, err)
	}
	return &st
}

func pluginStatus(t *testing.T, p published) *statuspb.PluginStatus {
	t.Helper()
	var st statuspb.PluginStatus
	if err := protojson.Unmarshal([]byte(p.raw), &st); err != nil {
		t.Fatalf("a plugin's status %q: %v", p.raw, err)
	}
	return &st
}

// waitAgent waits until the agent's status satisfies cond, and returns it.
func waitAgent(t *testing.T, c *clientv3.Client, what string, cond func(published, *statuspb.AgentStatus) bool) (published, *statuspb.AgentStatus) {
	t.Helper()
	var p published
	var st *statuspb.AgentStatus
	testsupport.Eventually(t, waitTimeout, func() error {
		p = get(t, c, etcdstatus.AgentKey(label))
		if p.raw == "" {
			return errors.New(what + ": no key")
		}
		st = agentStatus(t, p)
		if !cond(p, st) {
			return fmt.Errorf("%s: %s", what, p.raw)
		}
		return nil
	})
	return p, st
}

var starting = etcdstatus.Report{State: statuspb.OperationalState_INIT, Plugins: []etcdstatus.Plugin{
	{Name: "orchestrator", State: statuspb.OperationalState_INIT},
	{Name: "etcd", State: statuspb.OperationalState_OK},
	{Name: "govpp", State: statuspb.OperationalState_ERROR, Error: "VPP not connected (/run/vpp/api.sock): dial unix: no such file"},
}}

// TestPublishesTheOriginalsKeysAndJSON: the status appears at once under
// the original's keys, in its JSON (proto names, enums by name, 64-bit
// numbers as strings, INIT left out as a zero value), under a lease of the
// TTL; each plugin's under its own key, without its name. A change of the
// state or of an error is written with its last_change.
func TestPublishesTheOriginalsKeysAndJSON(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	started := time.Now().Add(-time.Minute).Truncate(time.Second)
	build := etcdstatus.Build{Version: "v1.2.3", Date: "2025-11-02T10:00:00Z", Commit: "9482097abc"}
	p := startPublisher(t, c, starting, etcdstatus.Options{Started: started, Build: build, RefreshInterval: time.Hour})

	if k := etcdstatus.AgentKey(label); k != "/vnf-agent/vpp7/check/status/v1/agent" {
		t.Errorf("agent key %s", k)
	}
	if k := etcdstatus.PluginKey(label, "govpp"); k != "/vnf-agent/vpp7/check/status/v1/plugin/govpp" {
		t.Errorf("plugin key %s", k)
	}
	first, st := waitAgent(t, c, "the first status", func(published, *statuspb.AgentStatus) bool { return true })
	firstStatus := st
	for _, field := range []string{`"build_version":\s*"v1.2.3"`, `"build_date":\s*"2025-11-02T10:00:00Z"`, `"commit_hash":\s*"9482097abc"`,
		fmt.Sprintf(`"start_time":\s*"%d"`, started.Unix()), `"last_change":\s*"\d+"`, `"last_update":\s*"\d+"`,
		`"plugins":\s*\[\{\s*"name":\s*"orchestrator"`, `"state":\s*"ERROR"`} {
		if !regexp.MustCompile(field).MatchString(first.raw) {
			t.Errorf("the agent's JSON %s lacks %s", first.raw, field)
		}
	}
	if regexp.MustCompile(`"state":\s*"INIT"|"buildVersion"|"interface_stats"`).MatchString(first.raw) {
		t.Errorf("the agent's JSON %s: INIT is the zero value (left out, as the original does); proto names only; no interface stats", first.raw)
	}
	if st.GetState() != statuspb.OperationalState_INIT || st.GetStartTime() != started.Unix() || st.GetBuildVersion() != build.Version ||
		st.GetLastUpdate() < st.GetLastChange() || st.GetLastChange() < started.Unix() || len(st.GetPlugins()) != 3 {
		t.Errorf("the agent's status: %v", st)
	}
	for i, want := range starting.Plugins {
		got := st.GetPlugins()[i]
		if got.GetName() != want.Name || got.GetState() != want.State || got.GetError() != want.Error {
			t.Errorf("plugin %d in the agent's status: %v, want %+v", i, got, want)
		}
		own := get(t, c, etcdstatus.PluginKey(label, want.Name))
		ps := pluginStatus(t, own)
		if ps.GetName() != "" || ps.GetState() != want.State || ps.GetError() != want.Error || ps.GetLastUpdate() == 0 || ps.GetLastChange() == 0 {
			t.Errorf("%s: %s", etcdstatus.PluginKey(label, want.Name), own.raw)
		}
		if own.lease != first.lease {
			t.Errorf("%s is under lease %x, the agent's under %x", want.Name, own.lease, first.lease)
		}
	}
	ttlResp, err := c.TimeToLive(context.Background(), first.lease)
	if err != nil || first.lease == 0 || ttlResp.GrantedTTL != int64(ttl/time.Second) {
		t.Errorf("lease %x of the status: %+v %v, want one of TTL %v", first.lease, ttlResp, err, ttl)
	}

	// The agent becomes ready: written with the new state and errors.
	ready := etcdstatus.Report{State: statuspb.OperationalState_OK, Plugins: []etcdstatus.Plugin{
		{Name: "orchestrator", State: statuspb.OperationalState_OK},
		{Name: "etcd", State: statuspb.OperationalState_OK},
		{Name: "govpp", State: statuspb.OperationalState_OK},
	}}
	p.rep.set(ready)
	_, st = waitAgent(t, c, "OK", func(_ published, st *statuspb.AgentStatus) bool { return st.GetState() == statuspb.OperationalState_OK })
	if st.GetPlugins()[2].GetError() != "" || st.GetLastChange() < firstStatus.GetLastChange() || st.GetStartTime() != started.Unix() {
		t.Errorf("the ready agent's status: %v", st)
	}
	if ps := pluginStatus(t, get(t, c, etcdstatus.PluginKey(label, "govpp"))); ps.GetState() != statuspb.OperationalState_OK || ps.GetError() != "" {
		t.Errorf("govpp once connected: %v", ps)
	}

	// Nothing changes: nothing is written (the refresh is an hour away).
	now := get(t, c, etcdstatus.AgentKey(label))
	calls := p.rep.callCount()
	testsupport.Eventually(t, waitTimeout, func() error {
		if n := p.rep.callCount(); n < calls+20 {
			return fmt.Errorf("%d reports since", n-calls)
		}
		return nil
	})
	if again := get(t, c, etcdstatus.AgentKey(label)); again.modRevision != now.modRevision {
		t.Errorf("the status was written again without a change (revision %d, then %d): %s", now.modRevision, again.modRevision, again.raw)
	}
}

// TestRefreshRestoresDeletedKeys: every refresh interval the keys are put
// again with their last_update, which brings back a key deleted behind the
// publisher's back.
func TestRefreshRestoresDeletedKeys(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	startPublisher(t, c, starting, etcdstatus.Options{RefreshInterval: 200 * time.Millisecond})
	first, _ := waitAgent(t, c, "the first status", func(published, *statuspb.AgentStatus) bool { return true })
	if _, err := c.Delete(context.Background(), etcdstatus.PluginKey(label, "etcd")); err != nil {
		t.Fatal(err)
	}
	testsupport.Eventually(t, waitTimeout, func() error {
		if get(t, c, etcdstatus.PluginKey(label, "etcd")).raw == "" {
			return errors.New("the deleted plugin key is not back")
		}
		if p := get(t, c, etcdstatus.AgentKey(label)); p.modRevision == first.modRevision {
			return errors.New("the agent's key was not put again")
		}
		return nil
	})
}

// TestLeaseRevokedBehindItsBack: the lease revoked by another client takes
// the keys with it; the publisher sees it at its next keep-alive, grants a
// new lease and puts the keys again.
func TestLeaseRevokedBehindItsBack(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	p := startPublisher(t, c, starting, etcdstatus.Options{RefreshInterval: time.Hour})
	first, _ := waitAgent(t, c, "the first status", func(published, *statuspb.AgentStatus) bool { return true })
	if _, err := c.Revoke(context.Background(), first.lease); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, etcdstatus.AgentKey(label)); got.raw != "" {
		t.Fatalf("the key outlived its revoked lease: %+v", got)
	}
	again, _ := waitAgent(t, c, "the status back", func(published, *statuspb.AgentStatus) bool { return true })
	if again.lease == first.lease || again.lease == 0 {
		t.Errorf("back under lease %x, the revoked one was %x", again.lease, first.lease)
	}
	for _, pl := range starting.Plugins {
		if got := get(t, c, etcdstatus.PluginKey(label, pl.Name)); got.lease != again.lease {
			t.Errorf("%s back under lease %x, want %x", pl.Name, got.lease, again.lease)
		}
	}
	if !strings.Contains(p.log.String(), "lease is gone") {
		t.Errorf("the lost lease is not logged:\n%s", p.log.String())
	}
}

// TestStopRevokes: a graceful stop removes the keys at once (the lease is
// revoked); a publisher that stops renewing (a dead agent) leaves them to
// expire within the TTL.
func TestStopRevokes(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	get(t, c, etcdstatus.AgentKey(label)) // the client's connection, and etcd's side of it, are up
	leaks := goleak.IgnoreCurrent()
	p := startPublisher(t, c, starting, etcdstatus.Options{})
	waitAgent(t, c, "the first status", func(published, *statuspb.AgentStatus) bool { return true })
	p.stop()
	for _, key := range []string{etcdstatus.AgentKey(label), etcdstatus.PluginKey(label, "govpp")} {
		if got := get(t, c, key); got.raw != "" {
			t.Errorf("%s after the stop: %s", key, got.raw)
		}
	}
	// The publisher's goroutines end with it. The etcd client and server
	// may open another connection meanwhile (on a loaded machine): its
	// goroutines are theirs and outlive the check.
	goleak.VerifyNone(t, leaks,
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Server).keepalive"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*loopyWriter).run"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Server).HandleStreams"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Client).reader"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Client).keepalive"))

	// A publisher whose client goes (as with its process): its revoke
	// fails, the lease expires.
	own := newClient(t, etcd.e.ClientURL())
	startPublisher(t, own, starting, etcdstatus.Options{})
	waitAgent(t, c, "the second publisher's status", func(published, *statuspb.AgentStatus) bool { return true })
	gone := time.Now()
	_ = own.Close()
	testsupport.Eventually(t, waitTimeout, func() error {
		if got := get(t, c, etcdstatus.AgentKey(label)); got.raw != "" {
			return fmt.Errorf("still there %v after its client closed", time.Since(gone).Round(time.Millisecond))
		}
		return nil
	})
	if took := time.Since(gone); took > ttl+2*time.Second {
		t.Errorf("the status of a publisher without its client went after %v, want within the TTL %v (and etcd's lease check)", took, ttl)
	}
}

// TestEtcdReplacedByAnEmptyOne: etcd goes away, then an empty etcd serves
// at the same URL (restored from nothing): the publisher, which kept
// retrying without blocking, grants a new lease there and puts the keys;
// the failure is logged once at warn level and the recovery once.
func TestEtcdReplacedByAnEmptyOne(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	p := startPublisher(t, c, starting, etcdstatus.Options{RefreshInterval: time.Hour})
	waitAgent(t, c, "the first status", func(published, *statuspb.AgentStatus) bool { return true })

	etcd.stop()
	testsupport.Eventually(t, waitTimeout, func() error {
		if !strings.Contains(p.log.String(), "cannot publish") {
			return errors.New("the failure is not logged")
		}
		return nil
	})
	p.rep.set(etcdstatus.Report{State: statuspb.OperationalState_OK, Plugins: starting.Plugins})
	etcd.cfg.Dir = filepath.Join(t.TempDir(), "empty")
	etcd.start()
	_, st := waitAgent(t, c, "the status in the new etcd", func(_ published, st *statuspb.AgentStatus) bool {
		return st.GetState() == statuspb.OperationalState_OK
	})
	if len(st.GetPlugins()) != 3 || get(t, c, etcdstatus.PluginKey(label, "orchestrator")).raw == "" {
		t.Errorf("after the new etcd: %v", st)
	}
	log := p.log.String()
	if n := strings.Count(log, "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want the first failure only:\n%s", n, log)
	}
	if !strings.Contains(log, "publishing the agent's status in etcd again") {
		t.Errorf("the recovery is not logged:\n%s", log)
	}
}

// TestNotUTF8: an error that is not UTF-8 (a name made of bytes) is
// published with the bytes replaced; protojson would refuse it.
func TestNotUTF8(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	startPublisher(t, c, etcdstatus.Report{State: statuspb.OperationalState_ERROR, Plugins: []etcdstatus.Plugin{
		{Name: "linux", State: statuspb.OperationalState_ERROR, Error: "link \xff\xfe gone"},
	}}, etcdstatus.Options{})
	_, st := waitAgent(t, c, "the status", func(published, *statuspb.AgentStatus) bool { return true })
	if got := st.GetPlugins()[0].GetError(); got != "link \uFFFD gone" {
		t.Errorf("error %q", got)
	}
}

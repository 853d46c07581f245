package main

// Helpers of the end-to-end tests (e2e_test.go): an agent run in-process
// (New, Run) with an embedded etcd on free loopback ports, its REST and gRPC
// clients, etcd puts, and checks of the kernel through `ip`.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netagent-io/netagent/tests/testsupport"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
	"github.com/netagent-io/netagent/tests/netnstest"
	"github.com/netagent-io/netagent/tests/vpprun"
)

// waitTimeout bounds every wait (an embedded etcd under -race on two vCPUs
// is slow to start, never this slow).
const waitTimeout = 60 * time.Second

// pollInterval is the period of the polls of REST endpoints and the kernel.
const pollInterval = 20 * time.Millisecond

var pid = os.Getpid()

// isolatedEnv is the variable of netnstest.Run: set to 0 it keeps the
// tests in the caller's namespace.
const isolatedEnv = "NETAGENT_E2E_ISOLATED"

// TestMain runs the tests, as root, in a network namespace of their own
// (netnstest): the agent runs in the test process, and its first full
// resync deletes every link of its own namespace that carries the agent's
// alias and that it is not configured with; in the host namespace that
// would be the links of an agent running there (make run) and of the Linux
// plugins' tests that go test ./... runs at the same time. The named
// namespaces (/var/run/netns) are shared and removed by the tests. It
// removes the agent binary built by agentBinary, and stops the real VPP
// that the tests started (NETAGENT_VPP_DIR, see vpp_target_test.go).
func TestMain(m *testing.M) {
	code := netnstest.Run(m, isolatedEnv)
	vpprun.StopShared()
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// needRoot skips a test that needs to create namespaces and links.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces and veth pairs)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
}

// --- names, cleanup ----------------------------------------------------------

// netNames are a test's unique namespace and veth names: the namespace
// e2e-<tag>-<pid>, the host end <tag>h<pid> and the namespace end
// <tag>p<pid> (link names are at most 15 bytes: keep tags short).
type netNames struct{ ns, host, peer string }

// uniqueNames returns the names of a test and removes, when the test ends
// (failed or not), the namespace and the host end of the veth pair, after
// it stopped the agents the test runs (a running agent would repair what
// the cleanup deletes), whether they started before or after this call.
func uniqueNames(t *testing.T, tag string) netNames {
	t.Helper()
	n := netNames{ns: fmt.Sprintf("e2e-%s-%d", tag, pid), host: fmt.Sprintf("%sh%d", tag, pid), peer: fmt.Sprintf("%sp%d", tag, pid)}
	if len(n.host) > 15 {
		t.Fatalf("tag %q makes link names longer than 15 bytes", tag)
	}
	removeNet(n.ns, n.host)
	t.Cleanup(func() {
		stopAgents(t)
		removeNet(n.ns, n.host)
	})
	return n
}

// running are the agents of each test (startAgent, runAgentFile) that
// stopAgents stops.
var running = struct {
	sync.Mutex
	agents map[*testing.T][]*agent
}{agents: map[*testing.T][]*agent{}}

// track adds a to the agents of t, until t ends.
func track(t *testing.T, a *agent) {
	running.Lock()
	defer running.Unlock()
	if len(running.agents[t]) == 0 {
		t.Cleanup(func() {
			running.Lock()
			defer running.Unlock()
			delete(running.agents, t)
		})
	}
	running.agents[t] = append(running.agents[t], a)
}

// stopAgents stops the agents of t still running (the cleanups of a test
// run in one goroutine: stop is not called concurrently).
func stopAgents(t *testing.T) {
	running.Lock()
	agents := slices.Clone(running.agents[t])
	running.Unlock()
	for _, a := range agents {
		_ = a.stop()
	}
}

// removeNet deletes a namespace and a link of the test's namespace, if
// there.
func removeNet(ns string, links ...string) {
	for _, l := range links {
		if exec.Command("ip", "link", "show", "dev", l).Run() == nil {
			_ = exec.Command("ip", "link", "del", "dev", l).Run()
		}
	}
	if _, err := os.Stat(filepath.Join("/var/run/netns", ns)); err == nil {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
}

// ipCmd runs ip with the arguments and returns its output.
func ipCmd(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// eventually polls cond until it holds, failing the test with its last
// explanation after waitTimeout.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s", what, waitTimeout, why)
		}
		time.Sleep(pollInterval)
	}
}

// nsLink returns `ip -o link show dev <link>` in a namespace ("" ns: the
// test's own).
func nsLink(ns, link string) (string, error) {
	if ns == "" {
		return ipCmd("-o", "link", "show", "dev", link)
	}
	return ipCmd("-n", ns, "-o", "link", "show", "dev", link)
}

// nsAddrs returns the IPv4 addresses of a link in a namespace.
func nsAddrs(ns, link string) (string, error) {
	if ns == "" {
		return ipCmd("-o", "-4", "addr", "show", "dev", link)
	}
	return ipCmd("-n", ns, "-o", "-4", "addr", "show", "dev", link)
}

// ourRoutes returns the routes of the agent's protocol in a namespace.
func ourRoutes(ns string) (string, error) {
	return ipCmd("-n", ns, "route", "show", "proto", "181")
}

func netnsExists(ns string) bool {
	_, err := os.Stat(filepath.Join("/var/run/netns", ns))
	return err == nil
}

// --- values ------------------------------------------------------------------

func nsRef(ns string) *linuxns.NetNamespace {
	if ns == "" {
		return nil
	}
	return &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: ns}
}

// veth is one end of a veth pair, up.
func veth(name, peer, ns string, mtu uint32, addrs ...string) *linuxif.Interface {
	return &linuxif.Interface{Name: name, Type: linuxif.Interface_VETH, Enabled: true, Namespace: nsRef(ns),
		Mtu: mtu, IpAddresses: addrs, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: peer}}}
}

func route(iface, dst, gw string) *linuxl3.Route {
	return &linuxl3.Route{OutgoingInterface: iface, DstNetwork: dst, GwAddr: gw}
}

// keyOf returns the model key of a value.
func keyOf(t testing.TB, v proto.Message) string {
	t.Helper()
	k, err := models.Default.Key(v)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func jsonOfValue(t testing.TB, v proto.Message) string {
	t.Helper()
	b, err := models.MarshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --- etcd --------------------------------------------------------------------

type etcdKV struct {
	t *testing.T
	c *clientv3.Client
}

func newEtcdClient(t *testing.T, url string) *etcdKV {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &etcdKV{t: t, c: c}
}

func (e *etcdKV) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), waitTimeout)
}

// putRaw writes a value under /vnf-agent/vpp1/<model key>.
func (e *etcdKV) putRaw(modelKey, value string) {
	e.t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	if _, err := e.c.Put(ctx, models.EtcdKey(models.DefaultLabel, modelKey), value); err != nil {
		e.t.Fatalf("etcd put %s: %v", modelKey, err)
	}
}

// put writes a value as JSON with the proto field names, under its key.
func (e *etcdKV) put(v proto.Message) string {
	e.t.Helper()
	key := keyOf(e.t, v)
	e.putRaw(key, jsonOfValue(e.t, v))
	return key
}

func (e *etcdKV) del(modelKey string) {
	e.t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	if _, err := e.c.Delete(ctx, models.EtcdKey(models.DefaultLabel, modelKey)); err != nil {
		e.t.Fatalf("etcd delete %s: %v", modelKey, err)
	}
}

// --- the agent ---------------------------------------------------------------

// freePort returns a loopback port that was free a moment ago and that no
// earlier call returned (testsupport.FreePorts: below the kernel's
// ephemeral range, which the tests' own connections take ports from).
func freePort(t testing.TB) int {
	t.Helper()
	return testsupport.FreePorts(t, 1)[0]
}

// portFree tells whether a loopback port can be bound now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// testConfig is the defaults with REST and gRPC on 127.0.0.1:0, an embedded
// etcd in a temporary directory on free ports, and a 10 s grace.
func testConfig(t *testing.T) Config {
	t.Helper()
	cfg := defaultConfig()
	cfg.REST.Address = "127.0.0.1:0"
	cfg.GRPC.Address = "127.0.0.1:0"
	cfg.Etcd.EmbeddedDir = filepath.Join(t.TempDir(), "etcd")
	cfg.Etcd.EmbeddedClientURL = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cfg.Etcd.EmbeddedPeerURL = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cfg.ShutdownGrace = Duration{10 * time.Second}
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	// Without VPP: the tests that want one set VPP.Socket (startE2EVPP).
	cfg.VPP.Disabled = true
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// agent is the daemon run in-process (New, then Run).
type agent struct {
	t      *testing.T
	cfg    Config
	log    *testsupport.SyncBuffer
	cancel context.CancelFunc
	done   chan error
	addrs  Addresses
	http   *http.Client
	// process is the agent binary's (runAgentFile); nil in-process.
	process *os.Process

	stopped bool
	err     error
}

// runAgent runs the agent as main does (New, then Run) until ctx ends.
func runAgent(ctx context.Context, cfg Config, logOut io.Writer) error {
	a, err := New(cfg, logOut)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// startAgent runs the agent and waits until Run started everything; with
// ready, also for /readyz 200. It is stopped when the test ends.
func startAgent(t *testing.T, cfg Config, ready bool) *agent {
	t.Helper()
	a := &agent{t: t, cfg: cfg, log: &testsupport.SyncBuffer{}, done: make(chan error, 1),
		http: &http.Client{Timeout: waitTimeout, Transport: &http.Transport{DisableKeepAlives: true}}}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	daemon, err := New(cfg, a.log)
	if err != nil {
		a.stopped, a.err = true, err
		t.Fatalf("New: %v", err)
	}
	a.addrs = daemon.Addresses()
	go func() { a.done <- daemon.Run(ctx) }()
	track(t, a)
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("agent log:\n%s", testsupport.Tail(a.log.String(), 30000))
		}
	})
	select {
	case <-daemon.Running():
	case err := <-a.done:
		a.stopped, a.err = true, err
		t.Fatalf("Run returned before it was running: %v", err)
	case <-time.After(waitTimeout):
		t.Fatalf("not running after %v", waitTimeout)
	}
	if ready {
		a.waitReady()
	}
	return a
}

// stop ends Run (as SIGTERM does) and returns its error.
func (a *agent) stop() error {
	if a.stopped {
		return a.err
	}
	a.stopped = true
	a.cancel()
	select {
	case a.err = <-a.done:
		if a.err != nil {
			a.t.Errorf("run returned %v", a.err)
		}
	case <-time.After(a.cfg.ShutdownGrace.Duration + waitTimeout):
		a.t.Errorf("run did not return %v after its context ended", a.cfg.ShutdownGrace.Duration+waitTimeout)
	}
	return a.err
}

func (a *agent) url(path string) string { return "http://" + a.addrs.REST + path }

// do sends a REST request and returns the status code and body.
func (a *agent) do(method, path string, header map[string]string) (int, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url(path), nil)
	if err != nil {
		a.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, body
}

// getJSON GETs a REST path expecting 200 and decodes the JSON answer.
func (a *agent) getJSON(path string, out any) {
	a.t.Helper()
	code, body := a.do("GET", path, nil)
	if code != http.StatusOK {
		a.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		a.t.Fatalf("GET %s: %v: %s", path, err, testsupport.Tail(string(body), 2000))
	}
}

// waitReady polls /readyz until it answers 200.
func (a *agent) waitReady() {
	a.t.Helper()
	var last string
	eventually(a.t, "/readyz 200", func() (bool, string) {
		code, body := a.do("GET", "/readyz", nil)
		last = fmt.Sprintf("%d %s", code, body)
		return code == http.StatusOK, last
	})
}

// valueStatus and baseStatus are the JSON of api.ValueStatus and
// api.BaseValueStatus (proto field names).
type valueStatus struct {
	Key            string   `json:"key"`
	State          string   `json:"state"`
	Error          string   `json:"error"`
	LastOperation  string   `json:"last_operation"`
	Details        []string `json:"details"`
	DescriptorName string   `json:"descriptor_name"`
}

type baseStatus struct {
	Value         valueStatus   `json:"value"`
	DerivedValues []valueStatus `json:"derived_values"`
}

// status returns the REST status of a key (state "" when the agent has no
// value of it: 404).
func (a *agent) status(key string) baseStatus {
	a.t.Helper()
	code, body := a.do("GET", "/scheduler/status?key="+url.QueryEscape(key), nil)
	if code == http.StatusNotFound {
		return baseStatus{}
	}
	if code != http.StatusOK {
		a.t.Fatalf("status of %s: %d %s", key, code, body)
	}
	var out struct {
		Statuses []baseStatus `json:"statuses"`
	}
	if err := json.Unmarshal(body, &out); err != nil || len(out.Statuses) != 1 {
		a.t.Fatalf("status of %s: %v: %s", key, err, body)
	}
	return out.Statuses[0]
}

// waitState polls the REST status of a key until it is in state.
func (a *agent) waitState(key, state string) baseStatus {
	a.t.Helper()
	var st baseStatus
	eventually(a.t, fmt.Sprintf("state of %s is %s", key, state), func() (bool, string) {
		st = a.status(key)
		return st.Value.State == state, fmt.Sprintf("%+v", st)
	})
	return st
}

// stats is the part of /scheduler/stats the tests read.
type stats struct {
	ValuesByDescriptor map[string]map[string]int `json:"values_by_descriptor"`
	Transactions       map[string]uint64         `json:"transactions"`
	History            struct {
		NewestSeq uint64 `json:"newest_seq"`
	} `json:"history"`
}

func (a *agent) stats() stats {
	a.t.Helper()
	var st stats
	a.getJSON("/scheduler/stats", &st)
	return st
}

// txnRecord and opRecord are the JSON of a transaction of
// /scheduler/txn-history.
type txnRecord struct {
	SeqNum      uint64 `json:"seq_num"`
	Type        string `json:"type"`
	Resync      string `json:"resync"`
	Description string `json:"description"`
	DryRun      bool   `json:"dry_run"`
	Start, Stop time.Time
	Values      []struct {
		Key string `json:"key"`
	} `json:"values"`
	Planned  []opRecord `json:"planned"`
	Executed []opRecord `json:"executed"`
}

type opRecord struct {
	Operation string   `json:"operation"`
	Key       string   `json:"key"`
	NewState  string   `json:"new_state"`
	Error     string   `json:"error"`
	Flags     []string `json:"flags"`
}

func (o opRecord) has(flag string) bool {
	for _, f := range o.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// history returns the transactions of /scheduler/txn-history (query: e.g.
// "?since=...", "?seq-num=3" or "").
func (a *agent) history(query string) []txnRecord {
	a.t.Helper()
	var out struct {
		Transactions []txnRecord `json:"transactions"`
	}
	a.getJSON("/scheduler/txn-history"+query, &out)
	return out.Transactions
}

// downstreamResync runs a downstream resync (POST, blocking: it runs after
// the transactions queued before it) and returns its record.
func (a *agent) downstreamResync() txnRecord {
	a.t.Helper()
	var header map[string]string
	if a.cfg.Token.IsSet() {
		header = map[string]string{"Authorization": "Bearer " + a.cfg.Token.Reveal()}
	}
	code, body := a.do("POST", "/scheduler/downstream-resync", header)
	var out struct {
		Transaction txnRecord `json:"transaction"`
		Error       string    `json:"error"`
	}
	if err := json.Unmarshal(body, &out); code != http.StatusOK || err != nil || out.Error != "" {
		a.t.Fatalf("downstream resync: %d %s", code, body)
	}
	return out.Transaction
}

// grpcConn returns a client connection to the agent's gRPC listener over
// loopback, without TLS.
func (a *agent) grpcConn() *grpc.ClientConn {
	a.t.Helper()
	conn, err := grpc.NewClient(a.addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func (a *agent) configurator() configuratorpb.ConfiguratorClient {
	return configuratorpb.NewConfiguratorClient(a.grpcConn())
}

// --- the binary --------------------------------------------------------------

// binary is the agent built once for the tests that run it as a process.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// agentBinary builds the agent (go build) once and returns its path.
func agentBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			binary.err = fmt.Errorf("no go command: %w", err)
			return
		}
		if binary.dir, err = os.MkdirTemp("", "netagent-e2e-"); err != nil {
			binary.err = err
			return
		}
		path := filepath.Join(binary.dir, "agent")
		out, err := exec.Command(goTool, "build", "-o", path, ".").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binary.path = path
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

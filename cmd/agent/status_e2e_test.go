package main

// End-to-end tests of what the original agent's users read: the agent's
// status in etcd (internal/etcdstatus), the probes under the original's
// names and its fields of /info/version.

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	statuspb "github.com/netagent-io/netagent/proto/status"
)

// etcdStatus is the agent's status as etcd holds it ("" raw: no key).
type etcdStatus struct {
	raw            string
	st             *statuspb.AgentStatus
	lease          int64
	createRevision int64
}

// readStatus reads the agent's status of the default label, at revision rev
// (0: the current one), decoded with our copy of the original's message.
func (e *etcdKV) readStatus(rev int64) etcdStatus {
	e.t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	var opts []clientv3.OpOption
	if rev != 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := e.c.Get(ctx, etcdstatus.AgentKey(models.DefaultLabel), opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return etcdStatus{}
	}
	kv := resp.Kvs[0]
	var st statuspb.AgentStatus
	if err := protojson.Unmarshal(kv.Value, &st); err != nil {
		e.t.Fatalf("the agent's status %q: %v", kv.Value, err)
	}
	return etcdStatus{raw: string(kv.Value), st: &st, lease: kv.Lease, createRevision: kv.CreateRevision}
}

// pluginStatus reads a plugin's status ("" raw: no key).
func (e *etcdKV) pluginStatus(name string) (string, *statuspb.PluginStatus) {
	e.t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.c.Get(ctx, etcdstatus.PluginKey(models.DefaultLabel, name))
	if err != nil {
		e.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	var st statuspb.PluginStatus
	if err := protojson.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
		e.t.Fatalf("plugin %s's status %q: %v", name, resp.Kvs[0].Value, err)
	}
	return string(resp.Kvs[0].Value), &st
}

// waitStatus waits until the agent's status in etcd satisfies cond.
func (e *etcdKV) waitStatus(what string, cond func(*statuspb.AgentStatus) bool) etcdStatus {
	e.t.Helper()
	var s etcdStatus
	eventually(e.t, "status in etcd: "+what, func() (bool, string) {
		s = e.readStatus(0)
		return s.st != nil && cond(s.st), s.raw
	})
	return s
}

// plugin returns the status of the named plugin in the agent's status.
func plugin(st *statuspb.AgentStatus, name string) *statuspb.PluginStatus {
	i := slices.IndexFunc(st.GetPlugins(), func(p *statuspb.PluginStatus) bool { return p.GetName() == name })
	if i < 0 {
		return nil
	}
	return st.GetPlugins()[i]
}

func pluginNames(st *statuspb.AgentStatus) []string {
	var names []string
	for _, p := range st.GetPlugins() {
		names = append(names, p.GetName())
	}
	return names
}

// TestE2EStatusInEtcdGoneAfterKill: the agent binary, on an etcd the test
// runs, publishes its status under the original's key, in its JSON, with
// the build information of /info/version, OK once ready, each part under
// its own key; killed with SIGKILL (no chance to clean up), its status is
// gone from etcd within the lease's TTL.
func TestE2EStatusInEtcdGoneAfterKill(t *testing.T) {
	const ttl = 2 * time.Second
	etcd := newExternalEtcd(t)
	etcd.start(etcd.url)
	cfg := testConfig(t)
	cfg.Etcd.Endpoints, cfg.Etcd.EmbeddedDir = []string{etcd.url}, ""
	cfg.Etcd.Status.TTL = Duration{ttl}
	cfg.Linux.Disabled = os.Geteuid() != 0
	startedBefore := time.Now().Add(-time.Second).Unix()
	a := startAgentProcess(t, cfg)
	kv := newEtcdClient(t, etcd.url)

	s := kv.waitStatus("OK", func(st *statuspb.AgentStatus) bool { return st.GetState() == statuspb.OperationalState_OK })
	t.Logf("%s: %s", etcdstatus.AgentKey(models.DefaultLabel), s.raw)
	var version map[string]any
	a.getJSON("/info/version", &version)
	str := func(k string) string { v, _ := version[k].(string); return v }
	st := s.st
	if st.GetBuildVersion() == "" || st.GetBuildVersion() != str("version") || st.GetCommitHash() != str("vcs.revision") || st.GetBuildDate() != str("vcs.time") {
		t.Errorf("build information %q %q %q, want /info/version's: %v", st.GetBuildVersion(), st.GetCommitHash(), st.GetBuildDate(), version)
	}
	if st.GetStartTime() < startedBefore || st.GetStartTime() > time.Now().Unix() || st.GetLastChange() < st.GetStartTime() || st.GetLastUpdate() < st.GetLastChange() {
		t.Errorf("times: start %d, last change %d, last update %d (the test started the agent after %d)", st.GetStartTime(), st.GetLastChange(), st.GetLastUpdate(), startedBefore)
	}
	want := []string{statusOrchestrator, statusEtcd}
	if !cfg.Linux.Disabled {
		want = append(want, statusLinux)
	}
	if got := pluginNames(st); !slices.Equal(got, want) {
		t.Errorf("plugins %v, want %v (no VPP: no govpp)", got, want)
	}
	for _, name := range want {
		raw, ps := kv.pluginStatus(name)
		if ps == nil || ps.GetState() != statuspb.OperationalState_OK || ps.GetError() != "" || ps.GetName() != "" || plugin(st, name).GetState() != statuspb.OperationalState_OK {
			t.Errorf("plugin %s: %s", name, raw)
		}
	}
	// The original's JSON: proto names, enums by name, 64-bit numbers as
	// strings.
	for _, field := range []string{`"state":"OK"`, fmt.Sprintf(`"start_time":"%d"`, st.GetStartTime()), `"build_version":`} {
		if !strings.Contains(strings.ReplaceAll(s.raw, " ", ""), field) {
			t.Errorf("the status's JSON lacks %s: %s", field, s.raw)
		}
	}

	if err := a.process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := <-a.done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the agent's exit: %v, want killed", err)
	}
	a.stopped = true
	eventually(t, "the killed agent's status gone from etcd", func() (bool, string) {
		now := kv.readStatus(0)
		raw, _ := kv.pluginStatus(statusOrchestrator)
		return now.st == nil && raw == "", now.raw + raw
	})
	took := time.Since(killed)
	t.Logf("the status went %v after SIGKILL (TTL %v)", took.Round(time.Millisecond), ttl)
	// The lease had at most the TTL left; etcd looks for expired leases
	// every 500 ms.
	if took > ttl+time.Second {
		t.Errorf("the status went %v after SIGKILL, want within the TTL %v", took, ttl)
	}
}

// TestE2EVPPStatusInEtcdFollowsReadiness: the status follows the
// readiness. An agent started while VPP is away is never OK: its first
// status is not, and it says ERROR with govpp naming VPP while /readyz and
// /readiness answer 503; once VPP is there it is OK, and it goes back to
// ERROR when VPP goes and to OK when it returns.
func TestE2EVPPStatusInEtcdFollowsReadiness(t *testing.T) {
	v := startE2EVPP(t)
	if v.real != nil && v.real.User {
		t.Skipf("stops and starts VPP: not the user's VPP at %s", v.socket)
	}
	v.down()
	cfg := testConfig(t)
	cfg.VPP.Disabled, cfg.VPP.Socket = false, v.socket
	cfg.Linux.Disabled = true
	a := startAgent(t, cfg, false)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)

	vppAway := func(what string) {
		t.Helper()
		s := kv.waitStatus(what, func(st *statuspb.AgentStatus) bool {
			return st.GetState() == statuspb.OperationalState_ERROR && plugin(st, statusVPP).GetState() == statuspb.OperationalState_ERROR
		})
		if p := plugin(s.st, statusVPP); !strings.Contains(p.GetError(), "VPP not connected ("+v.socket+")") {
			t.Errorf("%s: govpp's error %q, want it to name VPP and its socket", what, p.GetError())
		}
		if raw, ps := kv.pluginStatus(statusVPP); ps.GetState() != statuspb.OperationalState_ERROR || ps.GetError() == "" {
			t.Errorf("%s: %s", etcdstatus.PluginKey(models.DefaultLabel, statusVPP), raw)
		}
		for _, path := range []string{"/readyz", "/readiness"} {
			if code, body := a.do("GET", path, nil); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "VPP not connected") {
				t.Errorf("%s: GET %s: %d %s, want 503 naming VPP", what, path, code, body)
			}
		}
	}
	vppThere := func(what string) {
		t.Helper()
		s := kv.waitStatus(what, func(st *statuspb.AgentStatus) bool { return st.GetState() == statuspb.OperationalState_OK })
		if p := plugin(s.st, statusVPP); p.GetState() != statuspb.OperationalState_OK || p.GetError() != "" {
			t.Errorf("%s: govpp %v", what, p)
		}
		if code, body := a.do("GET", "/readiness", nil); code != http.StatusOK {
			t.Errorf("%s: /readiness %d %s", what, code, body)
		}
	}

	vppAway("VPP away at the start")
	s := kv.readStatus(0)
	if first := kv.readStatus(s.createRevision); first.st.GetState() == statuspb.OperationalState_OK {
		t.Errorf("the first status published (revision %d) is OK before VPP ever connected: %s", s.createRevision, first.raw)
	}
	v.up()
	vppThere("VPP connected")
	v.down()
	vppAway("VPP gone")
	v.up()
	vppThere("VPP back")
}

// TestE2EOriginalProbesAndVersion: /readiness and /liveness answer as
// /readyz and /livez (503 with what the agent waits for while not ready,
// 200 once ready); the probes and /info/version answer GET only (405
// otherwise); /info/version has the original's fields beside ours.
func TestE2EOriginalProbesAndVersion(t *testing.T) {
	cfg := testConfig(t)
	etcdURL := cfg.Etcd.EmbeddedClientURL
	cfg.Etcd.Endpoints, cfg.Etcd.EmbeddedDir = []string{etcdURL}, ""
	cfg.Linux.Disabled = os.Geteuid() != 0
	a := startAgent(t, cfg, false)

	probe := func(path string) (int, readyzJSON) {
		t.Helper()
		code, body := a.do("GET", path, nil)
		var out readyzJSON
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("GET %s: %d %s: %v", path, code, body, err)
		}
		return code, out
	}
	for _, path := range []string{"/readyz", "/readiness"} {
		if code, out := probe(path); code != http.StatusServiceUnavailable || out.Status != "not ready" || !strings.Contains(strings.Join(out.WaitingFor, " "), "etcd") {
			t.Errorf("GET %s without etcd: %d %+v, want 503 waiting for etcd", path, code, out)
		}
	}
	for _, path := range []string{"/livez", "/liveness"} {
		if code, out := probe(path); code != http.StatusOK || out.Status != "alive" {
			t.Errorf("GET %s: %d %+v, want 200 alive", path, code, out)
		}
	}
	for _, path := range []string{"/readiness", "/liveness", "/readyz", "/livez", "/info/version"} {
		for _, method := range []string{"POST", "PUT", "DELETE"} {
			if code, body := a.do(method, path, nil); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d %s, want 405", method, path, code, body)
			}
		}
	}

	// The original's fields, as its clients decode them (Go field names;
	// BuildTime a number), and ours.
	code, body := a.do("GET", "/info/version", nil)
	var original struct {
		App, Version, GitCommit, GitBranch, BuildUser, BuildHost string
		BuildTime                                                int64
		GoVersion, OS, Arch                                      string
	}
	if err := json.Unmarshal(body, &original); code != http.StatusOK || err != nil {
		t.Fatalf("/info/version: %d %s: %v", code, body, err)
	}
	var fields map[string]any
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"App", "Version", "GitCommit", "GitBranch", "BuildUser", "BuildHost", "BuildTime", "GoVersion", "OS", "Arch", "version", "go"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("/info/version lacks %s: %s", k, body)
		}
	}
	if original.App != "netagent" || original.Version != fields["version"] || original.GitCommit != buildVersion()["vcs.revision"] ||
		original.GoVersion != runtime.Version() || original.OS != runtime.GOOS || original.Arch != runtime.GOARCH || fields["go"] != runtime.Version() {
		t.Errorf("/info/version: %s", body)
	}

	// etcd comes: ready, under both names.
	e, err := etcdsource.StartEmbedded(etcdsource.EmbeddedConfig{Dir: filepath.Join(t.TempDir(), "etcd"), ClientURL: etcdURL,
		PeerURL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	eventually(t, "/readiness 200", func() (bool, string) {
		code, out := probe("/readiness")
		return code == http.StatusOK && out.Status == "ready", fmt.Sprintf("%d %+v", code, out)
	})
	if code, out := probe("/readyz"); code != http.StatusOK || out.Status != "ready" {
		t.Errorf("/readyz once /readiness is ready: %d %+v", code, out)
	}
	if err := a.stop(); err != nil { // before its etcd goes
		t.Fatal(err)
	}
}

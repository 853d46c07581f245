package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// externalEtcd is an etcd the test starts and stops under the agent, on
// one data directory and peer URL, serving clients at the URL start is
// given.
type externalEtcd struct {
	t        *testing.T
	dir, url string
	peerURL  string
	e        *etcdsource.Embedded
}

func newExternalEtcd(t *testing.T) *externalEtcd {
	t.Helper()
	x := &externalEtcd{t: t, dir: filepath.Join(t.TempDir(), "etcd"),
		url: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), peerURL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}
	t.Cleanup(x.stop)
	return x
}

// start serves the data directory at clientURL.
func (x *externalEtcd) start(clientURL string) {
	x.t.Helper()
	e, err := etcdsource.StartEmbedded(etcdsource.EmbeddedConfig{Dir: x.dir, ClientURL: clientURL, PeerURL: x.peerURL,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		x.t.Fatal(err)
	}
	x.e = e
}

func (x *externalEtcd) stop() {
	if x.e != nil {
		x.e.Close()
		x.e = nil
	}
}

// northboundStatus is the part of /info/status about the sources.
type northboundStatus struct {
	Ready      bool     `json:"ready"`
	Degraded   []string `json:"degraded"`
	Northbound []struct {
		Source   string     `json:"source"`
		State    string     `json:"state"`
		Since    *time.Time `json:"since"`
		Error    string     `json:"error"`
		Revision int64      `json:"revision"`
		Losses   uint64     `json:"losses"`
		Synced   bool       `json:"synced"`
	} `json:"northbound"`
}

// sourceStates returns the sources as "id=state" in their order.
func (s northboundStatus) sourceStates() string {
	var out []string
	for _, src := range s.Northbound {
		out = append(out, src.Source+"="+src.State)
	}
	return strings.Join(out, " ")
}

// metric returns the value of a sample of /metrics (name with its labels,
// as exposed), and whether there is one.
func metric(body []byte, sample string) (float64, bool) {
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// TestE2EEtcdLostAndBack: etcd stopped and started again under a running
// agent. While it is away the agent is degraded, not unready: /readyz
// answers 200 "degraded" naming etcd, gRPC health stays SERVING,
// /info/status and the metrics say etcd is lost (since when, why), and a
// value set through gRPC meanwhile is applied; nothing etcd set is
// removed. When etcd is back, with changes made to it meanwhile, the
// agent applies them (a full resync: a delete included), is ready again,
// and has logged the loss and the recovery once each.
func TestE2EEtcdLostAndBack(t *testing.T) {
	needRoot(t)
	n := uniqueNames(t, "nb")
	etcd := newExternalEtcd(t)
	etcd.start(etcd.url)
	cfg := testConfig(t)
	cfg.Etcd.Endpoints, cfg.Etcd.EmbeddedDir = []string{etcd.url}, ""
	// The agent's status in etcd would move the revision the test compares
	// (status_e2e_test.go tests it).
	cfg.Etcd.Status.Disabled = true
	a := startAgent(t, cfg, true)
	kv := newEtcdClient(t, etcd.url)

	waitStatus := func(what string, cond func(st northboundStatus) bool) northboundStatus {
		t.Helper()
		var st northboundStatus
		eventually(t, what, func() (bool, string) {
			st = northboundStatus{}
			a.getJSON("/info/status", &st)
			return cond(st), fmt.Sprintf("%+v", st)
		})
		return st
	}
	readyz := func() (int, readyzJSON) {
		t.Helper()
		code, body := a.do("GET", "/readyz", nil)
		var r readyzJSON
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("/readyz: %v: %s", err, body)
		}
		return code, r
	}
	metrics := func() (connected, lost, revision float64) {
		t.Helper()
		code, body := a.do("GET", "/metrics", nil)
		var ok [3]bool
		connected, ok[0] = metric(body, `netagent_northbound_source_connected{source="etcd"}`)
		lost, ok[1] = metric(body, `netagent_northbound_source_lost_total{source="etcd"}`)
		revision, ok[2] = metric(body, `netagent_northbound_source_revision{source="etcd"}`)
		if code != http.StatusOK || ok != [3]bool{true, true, true} {
			t.Fatalf("/metrics: %d, northbound series found: %v", code, ok)
		}
		if strings.Contains(string(body), `netagent_northbound_source_connected{source="grpc"}`) {
			t.Errorf("/metrics has a connection series of the gRPC source, which has no connection")
		}
		return connected, lost, revision
	}
	health := healthpb.NewHealthClient(a.grpcConn())
	// serving checks that gRPC health says SERVING; with wait, it waits
	// for it (the health follows the readiness within readinessPoll).
	serving := func(when string, wait bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		for _, svc := range healthServices {
			check := func() (bool, string) {
				hr, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
				return err == nil && hr.GetStatus() == healthpb.HealthCheckResponse_SERVING, fmt.Sprintf("%v %v", hr, err)
			}
			if wait {
				eventually(t, fmt.Sprintf("gRPC health of %q SERVING %s", svc, when), check)
			} else if ok, got := check(); !ok {
				t.Errorf("gRPC health of %q %s: %s, want SERVING", svc, when, got)
			}
		}
	}

	// Connected: a veth pair and a route from etcd.
	etcdRoute := route(n.peer, "10.216.0.0/16", "172.30.16.1")
	var keys []string
	for _, v := range []proto.Message{veth(n.host, n.peer, "", 0, "172.30.16.1/24"), veth(n.peer, n.host, n.ns, 0, "172.30.16.2/24"), etcdRoute} {
		keys = append(keys, kv.put(v))
	}
	for _, key := range keys {
		a.waitState(key, "CONFIGURED")
	}
	up := waitStatus("etcd connected", func(st northboundStatus) bool {
		return st.Ready && st.sourceStates() == "grpc=active etcd=connected" && st.Northbound[1].Revision >= 4
	})
	if st := up.Northbound[1]; len(up.Degraded) != 0 || st.Since == nil || st.Error != "" || st.Losses != 0 || !st.Synced {
		t.Errorf("/info/status with etcd connected: %+v", up)
	}
	if code, r := readyz(); code != http.StatusOK || r.Status != "ready" {
		t.Errorf("/readyz with etcd connected: %d %+v", code, r)
	}
	serving("with etcd connected", true)
	if c, l, rev := metrics(); c != 1 || l != 0 || rev != float64(up.Northbound[1].Revision) {
		t.Errorf("metrics with etcd connected: connected %v, lost %v, revision %v; want 1, 0, %d", c, l, rev, up.Northbound[1].Revision)
	}

	// etcd stops: degraded, serving.
	stoppedAt := time.Now()
	etcd.stop()
	lost := waitStatus("etcd lost", func(st northboundStatus) bool { return len(st.Northbound) == 2 && st.Northbound[1].State == "lost" })
	if st := lost.Northbound[1]; !lost.Ready || len(lost.Degraded) != 1 || !strings.Contains(lost.Degraded[0], "source etcd lost its connection") ||
		st.Since == nil || st.Since.Before(stoppedAt) || st.Error == "" || st.Losses != 1 || st.Revision != up.Northbound[1].Revision {
		t.Errorf("/info/status with etcd stopped at %v: %+v", stoppedAt, lost)
	}
	if code, r := readyz(); code != http.StatusOK || r.Status != "degraded" || len(r.Degraded) != 1 || !strings.Contains(r.Degraded[0], "source etcd lost its connection") {
		t.Errorf("/readyz with etcd lost: %d %+v, want 200 degraded naming etcd", code, r)
	}
	serving("with etcd lost", false)
	if c, l, rev := metrics(); c != 0 || l != 1 || rev != float64(up.Northbound[1].Revision) {
		t.Errorf("metrics with etcd lost: connected %v, lost %v, revision %v; want 0, 1, %d", c, l, rev, up.Northbound[1].Revision)
	}

	// A route through gRPC is applied meanwhile.
	grpcRoute := route(n.peer, "10.217.0.0/16", "172.30.16.1")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{WaitDone: true,
		Update: &configpb.Config{LinuxConfig: &configpb.LinuxConfig{Routes: []*linuxl3.Route{grpcRoute}}}}); err != nil {
		t.Fatalf("gRPC update with etcd lost: %v", err)
	}
	a.waitState(keyOf(t, grpcRoute), "CONFIGURED")
	eventually(t, "the gRPC route in the kernel, etcd's kept", func() (bool, string) {
		routes, err := ourRoutes(n.ns)
		return err == nil && strings.Contains(routes, "10.216.0.0/16 via 172.30.16.1") && strings.Contains(routes, "10.217.0.0/16 via 172.30.16.1"),
			fmt.Sprintf("%q %v", routes, err)
	})
	if st := a.status(keyOf(t, etcdRoute)); st.Value.State != "CONFIGURED" {
		t.Errorf("the etcd route with etcd lost: %+v", st.Value)
	}

	// etcd changes where the agent does not see it (served at another
	// URL): the etcd route goes, an ARP entry comes.
	otherURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	etcd.start(otherURL)
	other := newEtcdClient(t, otherURL)
	other.del(keyOf(t, etcdRoute))
	arp := &linuxl3.ARPEntry{Interface: n.peer, IpAddress: "172.30.16.9", HwAddress: "02:00:00:00:16:09"}
	other.put(arp)
	_ = other.c.Close()
	etcd.stop()

	// etcd back: ready, its changes applied, the gRPC route kept.
	etcd.start(etcd.url)
	back := waitStatus("etcd connected again", func(st northboundStatus) bool {
		return len(st.Northbound) == 2 && st.Northbound[1].State == "connected"
	})
	if st := back.Northbound[1]; !back.Ready || len(back.Degraded) != 0 || st.Losses != 1 || st.Error != "" || !st.Since.After(*lost.Northbound[1].Since) ||
		st.Revision <= up.Northbound[1].Revision {
		t.Errorf("/info/status with etcd back: %+v", back)
	}
	eventually(t, "etcd's changes applied, the gRPC route kept", func() (bool, string) {
		routes, err1 := ourRoutes(n.ns)
		neigh, err2 := ipCmd("-n", n.ns, "neigh", "show", "dev", n.peer)
		ok := errors.Join(err1, err2) == nil && !strings.Contains(routes, "10.216.0.0/16") && strings.Contains(routes, "10.217.0.0/16 via 172.30.16.1") &&
			strings.Contains(neigh, "172.30.16.9 lladdr 02:00:00:00:16:09 PERMANENT")
		return ok, fmt.Sprintf("routes %q %v, neighbours %q %v", routes, err1, neigh, err2)
	})
	a.waitState(keyOf(t, arp), "CONFIGURED")
	if code, r := readyz(); code != http.StatusOK || r.Status != "ready" {
		t.Errorf("/readyz with etcd back: %d %+v", code, r)
	}
	serving("with etcd back", false)
	if c, l, rev := metrics(); c != 1 || l != 1 || rev < float64(back.Northbound[1].Revision) {
		t.Errorf("metrics with etcd back: connected %v, lost %v, revision %v; want 1, 1, %d", c, l, rev, back.Northbound[1].Revision)
	}
	log := a.log.String()
	for _, line := range []string{`level=WARN msg="lost the connection to etcd`, `level=INFO msg="the connection to etcd is back`} {
		if n := strings.Count(log, line); n != 1 {
			t.Errorf("%d log lines %s, want 1", n, line)
		}
	}
}

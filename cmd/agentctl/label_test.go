package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/pkg/models"
)

// statusAgent serves GET /info/status for an agent with the label whose
// etcd is at etcdEndpoints, and returns its REST port.
func statusAgent(t *testing.T, label string, etcdEndpoints ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/info/status" {
			http.NotFound(w, r)
			return
		}
		var st struct {
			Label string `json:"label"`
			Ready bool   `json:"ready"`
			Etcd  struct {
				Endpoints []string `json:"endpoints"`
			} `json:"etcd"`
		}
		st.Label, st.Ready, st.Etcd.Endpoints = label, true, etcdEndpoints
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// silentPort accepts connections and never answers, until the test ends.
func silentPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for c := range accepted {
			c.Close()
		}
	})
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// TestKvdbLabelCheck: kvdb reads and writes /vnf-agent/<label>/; when the
// agent on the same etcd answers GET /info/status with another label, it
// says so (on stderr beside a success, in the one error line of a failure)
// with both labels and the fix. No agent, an agent on another etcd, or an
// agent that does not answer: no word, and no wait beyond a short bound.
func TestKvdbLabelCheck(t *testing.T) {
	cli := startFleetEtcd(t)
	endpoint := cli.Endpoints()[0]
	nc1 := statusAgent(t, "nc1", endpoint)
	const key = "config/vpp/v2/interfaces/loop1"
	const value = `{"name":"loop1","type":"SOFTWARE_LOOPBACK"}`
	ctl := func(restPort string, args ...string) (string, string, int, time.Duration) {
		t.Helper()
		t.Setenv("MICROSERVICE_LABEL", "")
		start := time.Now()
		stdout, stderr, code := runCtl(append([]string{"--etcd-endpoints", endpoint, "--rest-port", restPort}, args...)...)
		return stdout, stderr, code, time.Since(start)
	}
	wantWarning := []string{"agent at http://127.0.0.1:" + nc1 + " is labelled nc1, not vpp1 (the default)",
		"it reads /vnf-agent/nc1/, not /vnf-agent/vpp1/", "--label nc1", "MICROSERVICE_LABEL=nc1"}

	t.Run("mismatch", func(t *testing.T) {
		for _, args := range [][]string{{"kvdb", "put", key, value}, {"kvdb", "list"}, {"kvdb", "get", key}, {"kvdb", "del", key}} {
			stdout, stderr, code, _ := ctl(nc1, args...)
			if code != exitOK || stdout == "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "agentctl: warning: ") {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want the output and one warning line", strings.Join(args, " "), code, stdout, stderr)
			}
			for _, want := range wantWarning {
				if !strings.Contains(stderr, want) {
					t.Errorf("%s: warning %q does not say %q", strings.Join(args, " "), stderr, want)
				}
			}
		}
		// A failure: one line, the error and the labels.
		_, stderr, code, _ := ctl(nc1, "kvdb", "get", key)
		if code != exitError || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not in etcd") || !strings.Contains(stderr, "--label nc1") {
			t.Errorf("kvdb get of a missing key: exit %d, %q; want one error line with the labels", code, stderr)
		}
		t.Setenv("MICROSERVICE_LABEL", "vpp2")
		_, stderr, _ = runCtl("--etcd-endpoints", endpoint, "--rest-port", nc1, "kvdb", "list")
		if !strings.Contains(stderr, "not vpp2 (MICROSERVICE_LABEL)") {
			t.Errorf("kvdb list with MICROSERVICE_LABEL=vpp2: %q does not say where vpp2 comes from", stderr)
		}
	})

	t.Run("no word", func(t *testing.T) {
		for _, c := range []struct {
			name, port string
			args       []string
		}{
			{"the agent's label", nc1, []string{"--label", "nc1", "kvdb", "list"}},
			{"an agent on another etcd", statusAgent(t, "nc2", "http://10.1.2.3:2379"), []string{"kvdb", "list"}},
			{"an agent without etcd", statusAgent(t, "nc3"), []string{"kvdb", "list"}},
			{"no agent", closedPorts(t, 1)[0], []string{"kvdb", "list"}},
			{"an agent that does not answer", silentPort(t), []string{"kvdb", "list"}},
		} {
			_, stderr, code, took := ctl(c.port, c.args...)
			if code != exitOK || stderr != "" {
				t.Errorf("%s: exit %d, stderr %q; want no warning", c.name, code, stderr)
			}
			// The check is bounded by a second; five for a loaded machine.
			if took > 5*time.Second {
				t.Errorf("%s: kvdb list took %v", c.name, took)
			}
		}
	})
}

// TestKeptByLooksUnderTheAgentsLabel: which source keeps a key that a
// config update --replace or delete took from the gRPC source is looked up
// in etcd under the label of the agent that uses agentctl's etcd, not
// agentctl's own (another label would find nothing: "another source"), and
// the hint to delete it names that label.
func TestKeptByLooksUnderTheAgentsLabel(t *testing.T) {
	cli := startFleetEtcd(t)
	endpoint := cli.Endpoints()[0]
	const key = "config/vpp/v2/interfaces/loop1"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, models.EtcdKey("nc1", key), `{"name":"loop1","type":"SOFTWARE_LOOPBACK"}`); err != nil {
		t.Fatal(err)
	}
	app := func(restPort string) *app {
		port, err := strconv.Atoi(restPort)
		if err != nil {
			t.Fatal(err)
		}
		return &app{label: "vpp1", labelFrom: "the default", host: "127.0.0.1", restPort: port, etcdEndpoints: []string{endpoint},
			timeout: 5 * time.Second, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	}
	for _, c := range []struct {
		name, restPort string
		want           keptKey
	}{
		{"the agent labelled nc1", statusAgent(t, "nc1", endpoint), keptKey{Key: key, By: "etcd", Label: "nc1"}},
		{"no agent: agentctl's label", closedPorts(t, 1)[0], keptKey{Key: key, By: "another source"}},
	} {
		got := app(c.restPort).keptBy(ctx, []string{key})
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: kept %+v, want %+v", c.name, got, c.want)
		}
	}
	if line := keptLine(keptKey{Key: key, By: "etcd", Label: "nc1"}, false); !strings.Contains(line, "delete it there: agentctl --label nc1 kvdb del "+key) {
		t.Errorf("kept line %q does not name the agent's label", line)
	}
}

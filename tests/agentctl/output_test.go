package agentctl_test

// Global flags and their environment fallbacks, and the JSON and YAML
// outputs of the commands that change things.

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// silentListener accepts connections on a loopback port and never answers:
// the other end of a request that times out. It is closed when the test
// ends.
func silentListener(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().(*net.TCPAddr).Port
}

// TestAgentctlOutput: every global setting works from its environment
// variable and from its flag, and the flag wins over the variable; JSON and
// YAML outputs of the changing commands parse back with their fields.
func TestAgentctlOutput(t *testing.T) {
	t.Parallel()
	a := startAgent(t, agentOptions{})
	free := strconv.Itoa(deadPorts(t, 1)[0])
	silent := strconv.Itoa(silentListener(t))
	// A value without effect on the kernel (no VPP: UNIMPLEMENTED).
	const loopKey = "config/vpp/v2/interfaces/loop9"
	mustCtl(t, a.env(), "kvdb", "put", loopKey, `{"name":"loop9","type":"SOFTWARE_LOOPBACK"}`)
	// The agent applies the put when its etcd watch delivers it: wait for
	// that before the commands that show it.
	waitFor(t, "the agent has "+loopKey, func() (bool, string) {
		code, body, err := a.get("/scheduler/status?key=" + loopKey)
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %v %.200s", code, err, body)
	})

	// Each setting: a command that needs it, the variable and the flag, a
	// right and a wrong value, and what the command prints when it is right
	// and what its error says when it is wrong.
	for _, s := range []struct {
		env, flag    string
		right, wrong string
		args         []string
		ok           string   // in stdout with the right value
		failure      []string // in the error with the wrong value
	}{
		{"AGENT_HOST", "--host", a.Host, "127.0.0.2", []string{"status"}, "ready", []string{"127.0.0.2", "connection refused"}},
		{"AGENT_REST_PORT", "--rest-port", strconv.Itoa(a.RESTPort), free, []string{"values", "vpp.interfaces"}, loopKey, []string{"REST API at http://127.0.0.1:" + free}},
		{"AGENT_GRPC_PORT", "--grpc-port", strconv.Itoa(a.GRPCPort), free, []string{"config", "get"}, "name: loop9", []string{"gRPC API at 127.0.0.1:" + free}},
		{"ETCD_ENDPOINTS", "--etcd-endpoints", a.EtcdEndpoint, "127.0.0.1:" + free, []string{"kvdb", "list", "--keys-only", "--timeout", "1s"}, loopKey, []string{"etcd at 127.0.0.1:" + free}},
		{"MICROSERVICE_LABEL", "--label", a.Label, "other", []string{"kvdb", "get", loopKey}, "loop9", []string{"/vnf-agent/other/" + loopKey, "not in etcd"}},
		{"AGENTCTL_TIMEOUT", "--timeout", "10s", "300ms", []string{"status", "--rest-port", silent}, "", []string{"the agent did not answer GET /info/status within 300ms (raise --timeout)"}},
	} {
		t.Run(s.env, func(t *testing.T) {
			others := withoutVars(a.env(), s.env)
			run := func(env []string, args ...string) {
				t.Helper()
				if s.ok == "" { // only the error can be seen
					return
				}
				if out := mustCtl(t, env, append(args, s.args...)...); !strings.Contains(out, s.ok) {
					t.Errorf("agentctl %s: %q, want %q", quoteArgs(append(args, s.args...)), out, s.ok)
				}
			}
			run(append(others, s.env+"="+s.right))
			run(others, s.flag, s.right)
			run(append(others, s.env+"="+s.wrong), s.flag, s.right) // the flag wins
			wantError(t, append(others, s.env+"="+s.wrong), "", s.args, s.failure...)
			wantError(t, append(others, s.env+"="+s.right), "", append([]string{s.flag, s.wrong}, s.args...), s.failure...)
		})
	}

	t.Run("ETCD_ENDPOINTS with a list", func(t *testing.T) {
		env := append(a.env(), "ETCD_ENDPOINTS=127.0.0.1:"+free+", "+a.EtcdEndpoint)
		// config/: the agent's status (check/status/...) is under the label too.
		if out := mustCtl(t, env, "kvdb", "list", "config/", "--keys-only"); out != loopKey+"\n" {
			t.Errorf("kvdb list with two endpoints, one down: %q", out)
		}
	})

	t.Run("flags only, no environment", func(t *testing.T) {
		if out := mustCtl(t, nil, append(a.flags(), "status")...); !strings.Contains(out, a.Label) {
			t.Errorf("status with flags only: %q", out)
		}
		mustCtl(t, nil, append(a.flags(), "config", "get")...)
		if out := mustCtl(t, nil, append(a.flags(), "kvdb", "list", "config/", "--keys-only")...); out != loopKey+"\n" {
			t.Errorf("kvdb list with flags only: %q", out)
		}
	})

	t.Run("AGENTCTL_OUTPUT", func(t *testing.T) {
		var st statusJSON
		parseJSON(t, "status with AGENTCTL_OUTPUT=json", mustCtl(t, append(a.env(), "AGENTCTL_OUTPUT=json"), "status"), &st)
		if st.Label != a.Label || !st.Ready {
			t.Errorf("status with AGENTCTL_OUTPUT=json: %+v", st)
		}
		var fromYAML statusJSON
		parseYAML(t, "status with AGENTCTL_OUTPUT=yaml", mustCtl(t, append(a.env(), "AGENTCTL_OUTPUT=yaml"), "status"), &fromYAML)
		if fromYAML.Label != a.Label || !fromYAML.Ready {
			t.Errorf("status with AGENTCTL_OUTPUT=yaml: %+v", fromYAML)
		}
		parseJSON(t, "status -o json with AGENTCTL_OUTPUT=yaml", mustCtl(t, append(a.env(), "AGENTCTL_OUTPUT=yaml"), "status", "-o", "json"), &st)
		if out := mustCtl(t, append(a.env(), "AGENTCTL_OUTPUT=yaml"), "status", "-o", "table"); !strings.HasPrefix(out, "Agent: ") {
			t.Errorf("status -o table with AGENTCTL_OUTPUT=yaml: %q, want the table", out)
		}
	})

	env := a.env()
	t.Run("JSON and YAML of changes", func(t *testing.T) {
		doc := writeFile(t, "loop.yaml", "vpp_config:\n  interfaces:\n    - name: loop8\n      type: SOFTWARE_LOOPBACK\n")
		var change struct {
			SeqNum uint64 `json:"seq_num"`
			Values int    `json:"values"`
			Waited bool   `json:"waited"`
			Errors []any  `json:"errors"`
		}
		parseYAML(t, "config update -o yaml", mustCtl(t, env, "config", "update", doc, "--wait", "-o", "yaml"), &change)
		if change.SeqNum == 0 || change.Values != 1 || !change.Waited || change.Errors != nil {
			t.Errorf("config update -o yaml: %+v", change)
		}
		change.SeqNum = 0
		parseJSON(t, "config update -o json", mustCtl(t, env, "config", "update", doc, "-o", "json"), &change)
		if change.Values != 1 || change.Waited {
			t.Errorf("config update -o json without --wait: %+v", change)
		}

		var resync struct {
			Transaction txnJSON `json:"transaction"`
		}
		parseYAML(t, "config resync -o yaml", mustCtl(t, env, "config", "resync", "-o", "yaml"), &resync)
		if resync.Transaction.SeqNum == 0 || resync.Transaction.Resync != "downstream resync" {
			t.Errorf("config resync -o yaml: %+v", resync)
		}

		var put struct {
			Key      string         `json:"key"`
			Value    map[string]any `json:"value"`
			Revision int64          `json:"revision"`
		}
		parseJSON(t, "kvdb put -o json", mustCtl(t, env, "kvdb", "put", "config/vpp/v2/interfaces/loop7", "name: loop7\nmtu: 1400\n", "-o", "json"), &put)
		if put.Key != "config/vpp/v2/interfaces/loop7" || put.Value["name"] != "loop7" || put.Value["mtu"] != float64(1400) || put.Revision == 0 {
			t.Errorf("kvdb put -o json: %+v", put)
		}
		var del struct {
			Deleted int `json:"deleted"`
		}
		parseYAML(t, "kvdb del -o yaml", mustCtl(t, env, "kvdb", "del", "config/vpp/v2/interfaces/loop7", "-o", "yaml"), &del)
		if del.Deleted != 1 {
			t.Errorf("kvdb del -o yaml: %+v", del)
		}

		out := mustCtl(t, env, "config", "watch", "--key-prefix", "config/vpp/v2/interfaces/", "--count", "1", "-o", "yaml")
		var ev statusEvent
		parseYAML(t, "config watch -o yaml", strings.TrimPrefix(out, "---\n"), &ev)
		if !strings.HasPrefix(out, "---\n") || !strings.HasPrefix(ev.Key, "config/vpp/v2/interfaces/loop") || ev.State != "UNIMPLEMENTED" {
			t.Errorf("config watch -o yaml: %q, want one document of a loop's status", out)
		}

		var graph struct {
			Current bool `json:"current"`
			Nodes   []struct {
				Key   string `json:"key"`
				State string `json:"state"`
			} `json:"nodes"`
		}
		parseJSON(t, "graph -o json", mustCtl(t, env, "graph", "-o", "json"), &graph)
		found := false
		for _, node := range graph.Nodes {
			found = found || node.Key == "config/vpp/v2/interfaces/loop8" && node.State == "UNIMPLEMENTED"
		}
		if !graph.Current || !found {
			t.Errorf("graph -o json: %+v, want the current graph with loop8 UNIMPLEMENTED", graph)
		}
	})
}

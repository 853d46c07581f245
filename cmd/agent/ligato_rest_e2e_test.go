package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"testing"

	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// TestE2EOriginalAgentctlREST: the agent answers the scheduler REST calls
// of the original agentctl (its User-Agent, its queries) in the original's
// JSON, naming values after the original's messages
// (ligato.vpp.interfaces.Interface), and netagent's clients as before. The
// shapes field by field: plugins/kvscheduler/rest's TestOriginal*.
func TestE2EOriginalAgentctlREST(t *testing.T) {
	cfg := testConfig(t)
	cfg.Linux.Disabled = os.Geteuid() != 0
	a := startAgent(t, cfg, true)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)
	key := kv.put(&vppif.Interface{Name: "ligato-e2e1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true})

	original := map[string]string{"User-Agent": "Ligato-Client/1.0 (linux)"}
	prefix := "config/vpp/v2/interfaces/"
	values := "/scheduler/status?" + url.Values{"key": {""}, "key-prefix": {prefix}}.Encode()
	var statuses []struct {
		Value struct {
			Key   string `json:"key"`
			State string `json:"state"`
		} `json:"value"`
	}
	eventually(t, "the interface in the original's values", func() (bool, string) {
		code, body := a.do("GET", values, original)
		statuses = nil
		err := json.Unmarshal(body, &statuses)
		return code == 200 && err == nil && len(statuses) == 1 && statuses[0].Value.Key == key && statuses[0].Value.State != "",
			fmt.Sprintf("%d %s", code, body)
	})

	code, body := a.do("GET", "/scheduler/dump?"+url.Values{"key-prefix": {prefix}, "view": {"NB"}}.Encode(), original)
	var dump []struct {
		Key   string
		Value struct {
			ProtoMsgName string
			ProtoMsgData struct {
				Name    string `json:"name"`
				Type    string `json:"type"`
				Enabled bool   `json:"enabled"`
			}
		}
		Origin int
	}
	if err := json.Unmarshal(body, &dump); code != 200 || err != nil || len(dump) != 1 {
		t.Fatalf("original's dump: %d %s: %v", code, body, err)
	}
	if d := dump[0]; d.Key != key || d.Value.ProtoMsgName != "ligato.vpp.interfaces.Interface" ||
		d.Value.ProtoMsgData.Name != "ligato-e2e1" || d.Value.ProtoMsgData.Type != "SOFTWARE_LOOPBACK" || !d.Value.ProtoMsgData.Enabled {
		t.Errorf("original's dump: %s", body)
	}

	// netagent's agentctl (no such User-Agent) gets netagent's answer.
	code, body = a.do("GET", "/scheduler/status?key-prefix="+prefix, nil)
	var ours struct {
		Statuses []json.RawMessage `json:"statuses"`
	}
	if err := json.Unmarshal(body, &ours); code != 200 || err != nil || len(ours.Statuses) != 1 {
		t.Errorf("netagent's values: %d %s: %v", code, body, err)
	}
}

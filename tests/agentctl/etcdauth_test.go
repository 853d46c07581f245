package agentctl_test

// The embedded etcd of an agent with a token: no door without it.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestAgentctlKVDBToken: with a token on the agent, its embedded etcd takes
// no write from a client without credentials (agentctl kvdb without the
// token, etcd's JSON gateway), and agentctl says what it wants; a wrong
// token is rejected, naming where it came from; with the token (or
// --etcd-user root:TOKEN) kvdb writes and the agent applies it.
func TestAgentctlKVDBToken(t *testing.T) {
	t.Parallel()
	const token = `kvdb-t0ken&<x>`
	a := startAgent(t, agentOptions{Token: token})
	noToken := append(a.env(), "NETAGENT_TOKEN=")
	const key = "config/vpp/v2/interfaces/loop66"
	const value = `{"name":"loop66","type":"SOFTWARE_LOOPBACK"}`

	wantError(t, noToken, "", []string{"kvdb", "put", key, value}, "kvdb put: etcd at "+a.EtcdEndpoint,
		"wants a user and password", "--token, --token-file or NETAGENT_TOKEN", "--etcd-user USER:PASSWORD")
	wantError(t, noToken, "", []string{"kvdb", "list"}, "kvdb list: etcd at", "wants a user and password")
	wantError(t, noToken, "", []string{"kvdb", "put", key, value, "--token", "wrong"},
		"etcd at "+a.EtcdEndpoint+" rejected user root", "the token (from --token)")
	wantError(t, noToken, "", []string{"kvdb", "list", "--etcd-user", "root:wrong"}, "rejected user root", "(--etcd-user)")
	wantError(t, noToken, "", []string{"kvdb", "list", "--etcd-user", "root"}, "--etcd-user: want USER:PASSWORD")

	// etcd's JSON gateway, without credentials.
	body, _ := json.Marshal(map[string]string{
		"key":   base64.StdEncoding.EncodeToString([]byte("/vnf-agent/" + a.Label + "/" + key)),
		"value": base64.StdEncoding.EncodeToString([]byte(value)),
	})
	resp, err := a.http.Post(a.EtcdEndpoint+"/v3/kv/put", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == 200 || !strings.Contains(string(answer), "user name is empty") {
		t.Errorf("a put through etcd's gateway without credentials: %s %s, want it refused", resp.Status, answer)
	}
	if out := mustCtl(t, a.env(), "kvdb", "list", "--keys-only"); strings.Contains(out, "loop66") {
		t.Fatalf("a refused put was written: %q", out)
	}

	mustCtl(t, a.env(), "kvdb", "put", key, value) // NETAGENT_TOKEN
	waitCtl(t, "loop66 in the agent's values", a.env(), func(out string, code int) bool { return code == 0 && strings.Contains(out, "loop66") },
		"values", "vpp.interfaces")
	mustCtl(t, noToken, "kvdb", "del", key, "--etcd-user", "root:"+token)
	if out := mustCtl(t, noToken, "kvdb", "list", "--keys-only", "--token", token); slices.Contains(lines(out), key+"\n") {
		t.Errorf("kvdb list after del: %q", out)
	}
}

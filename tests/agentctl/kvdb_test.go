package agentctl_test

// kvdb: the agent's keys in etcd, written directly; the agent applies them.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/tests/vppsim"
)

// etcdValue reads a model key of the agent's label from its etcd, without
// agentctl (etcd's JSON gateway, POST /v3/kv/range): the value and whether
// the key is there.
func etcdValue(t *testing.T, a *agent, modelKey string) (string, bool) {
	t.Helper()
	key := "/vnf-agent/" + a.Label + "/" + modelKey
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	resp, err := a.http.Post(a.EtcdEndpoint+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("etcd range %s: %v", key, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("etcd range %s: %s %v %s", key, resp.Status, err, data)
	}
	var answer struct {
		Kvs []struct {
			Value []byte `json:"value"` // base64 in JSON
		} `json:"kvs"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		t.Fatalf("etcd range %s: %v: %s", key, err, data)
	}
	if len(answer.Kvs) == 0 {
		return "", false
	}
	return string(answer.Kvs[0].Value), true
}

// kvJSON is an entry of kvdb list -o json/yaml.
type kvJSON struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

// TestAgentctlKVDB: put (JSON argument, YAML on stdin, full etcd key) is
// applied by the agent (kernel, values); list (golden, prefix, keys only,
// JSON and YAML), get, key completion from etcd; broken values are
// refused with the reason and write nothing, an existing value stays; del
// of a key and of a prefix removes the configuration from the kernel.
func TestAgentctlKVDB(t *testing.T) {
	n := uniqueNames(t, "kv")
	// Without the agent's status in etcd (check/status/v1/..., rewritten as
	// it changes): the lists compared are the configuration's.
	a := startAgent(t, agentOptions{Config: "etcd: {status: {disabled: true}}\n"})
	env := a.env()
	ph := append(a.placeholders(), n.placeholders()...)
	hostKey := "config/linux/interfaces/v2/interface/" + n.Host
	peerKey := "config/linux/interfaces/v2/interface/" + n.Peer
	routeKey := "config/linux/l3/v2/route/10.200.0.0/16/" + n.Peer
	hostValue := fmt.Sprintf(`{"name":%q,"type":"VETH","enabled":true,"ip_addresses":["172.30.73.1/24"],"veth":{"peer_if_name":%q}}`, n.Host, n.Peer)
	peerYAML := fmt.Sprintf("name: %s\ntype: VETH\nhost_if_name: eth0\nenabled: true\nnamespace: {type: NSID, reference: %s}\nip_addresses: [172.30.73.2/24]\nveth: {peer_if_name: %s}\n",
		n.Peer, n.NS, n.Host)
	routeValue := fmt.Sprintf(`{"outgoing_interface":%q,"dst_network":"10.200.0.0/16","gw_addr":"172.30.73.1","metric":50}`, n.Peer)
	const route = "10.200.0.0/16 via 172.30.73.1 dev eth0"

	t.Run("put: the agent applies the values", func(t *testing.T) {
		if out := mustCtl(t, env, "kvdb", "list"); out != "No keys under /vnf-agent/"+a.Label+"/.\n" {
			t.Errorf("kvdb list of a new agent: %q", out)
		}
		putLine := regexp.MustCompile(`^put /vnf-agent/` + a.Label + `/config/\S+ \(etcd revision \d+\)\n$`)
		for _, put := range []struct {
			stdin string
			args  []string
		}{
			{"", []string{"kvdb", "put", hostKey, hostValue}},
			{peerYAML, []string{"kvdb", "put", peerKey, "-"}},
			{"", []string{"kvdb", "put", "/vnf-agent/" + a.Label + "/" + routeKey, routeValue}},
		} {
			stdout, stderr, code := agentctlStdin(t, env, put.stdin, put.args...)
			if code != 0 || !putLine.MatchString(stdout) {
				t.Errorf("agentctl %s: exit %d, %q %q", quoteArgs(put.args), code, stdout, stderr)
			}
		}
		// In etcd as canonical JSON, YAML included.
		for key, want := range map[string]string{hostKey: hostValue, routeKey: routeValue,
			peerKey: fmt.Sprintf(`{"name":%q,"type":"VETH","namespace":{"type":"NSID","reference":%q},"host_if_name":"eth0","enabled":true,"ip_addresses":["172.30.73.2/24"],"veth":{"peer_if_name":%q}}`, n.Peer, n.NS, n.Host)} {
			if got, ok := etcdValue(t, a, key); got != want {
				t.Errorf("etcd %s: %q %v, want %q", key, got, ok, want)
			}
		}
		waitIP(t, route+" proto 181 metric 50", "-n", n.NS, "route", "show")
		waitIP(t, "172.30.73.1/24", "-o", "addr", "show", "dev", n.Host)
		waitCtl(t, "the route CONFIGURED", env, func(out string, code int) bool {
			return code == 0 && regexp.MustCompile(regexp.QuoteMeta(routeKey)+` +CONFIGURED +CREATE`).MatchString(out)
		}, "values", "linux.l3.route")
	})

	t.Run("list and get", func(t *testing.T) {
		list := mustCtl(t, env, "kvdb", "list")
		golden(t, "kvdb/list", squeezeColumns(normalize(list, ph...)))

		if out := mustCtl(t, env, "kvdb", "list", "config/linux/l3/", "--keys-only"); out != routeKey+"\n" {
			t.Errorf("kvdb list config/linux/l3/ --keys-only: %q, want the route's key", out)
		}
		if out := mustCtl(t, env, "kvdb", "list", "config/vpp/"); out != "No keys under /vnf-agent/"+a.Label+"/config/vpp/.\n" {
			t.Errorf("kvdb list config/vpp/: %q", out)
		}
		var fromJSON, fromYAML []kvJSON
		parseJSON(t, "kvdb list -o json", mustCtl(t, env, "kvdb", "list", "-o", "json"), &fromJSON)
		parseYAML(t, "kvdb list -o yaml", mustCtl(t, env, "kvdb", "list", "-o", "yaml"), &fromYAML)
		if len(fromJSON) != 3 || fmt.Sprint(fromJSON) != fmt.Sprint(fromYAML) {
			t.Fatalf("kvdb list: JSON %v\nYAML %v; want the same 3 keys", fromJSON, fromYAML)
		}
		for i, want := range []struct{ key, field, value string }{
			{hostKey, "name", n.Host}, {peerKey, "host_if_name", "eth0"}, {routeKey, "gw_addr", "172.30.73.1"},
		} {
			if fromJSON[i].Key != want.key || fromJSON[i].Value[want.field] != want.value {
				t.Errorf("kvdb list -o json [%d]: %v, want %s with %s %s", i, fromJSON[i], want.key, want.field, want.value)
			}
		}
		var keys []string
		parseJSON(t, "kvdb list --keys-only -o json", mustCtl(t, env, "kvdb", "list", "--keys-only", "-o", "json"), &keys)
		if fmt.Sprint(keys) != fmt.Sprint([]string{hostKey, peerKey, routeKey}) {
			t.Errorf("kvdb list --keys-only -o json: %q", keys)
		}

		var value map[string]any
		parseJSON(t, "kvdb get", mustCtl(t, env, "kvdb", "get", routeKey), &value)
		if value["outgoing_interface"] != n.Peer || value["metric"] != float64(50) {
			t.Errorf("kvdb get %s: %v", routeKey, value)
		}
		// The YAML value was stored as canonical JSON.
		var peer map[string]any
		parseYAML(t, "kvdb get -o yaml", mustCtl(t, env, "kvdb", "get", "/vnf-agent/"+a.Label+"/"+peerKey, "-o", "yaml"), &peer)
		if ns, _ := peer["namespace"].(map[string]any); peer["name"] != n.Peer || ns["reference"] != n.NS {
			t.Errorf("kvdb get %s -o yaml: %v", peerKey, peer)
		}
		wantError(t, env, "", []string{"kvdb", "get", "config/linux/l3/v2/route/10.9.0.0/16/" + n.Peer}, "not in etcd")

		// Completion of keys: the models' prefixes and the keys in etcd.
		got, _ := completions(t, env, "kvdb", "get", "config/linux/l3/")
		if !strings.Contains(strings.Join(got, "\n"), routeKey) || !strings.Contains(strings.Join(got, "\n"), "config/linux/l3/v2/arp/") {
			t.Errorf("__complete kvdb get config/linux/l3/: %q, want %s and the models' prefixes", got, routeKey)
		}
	})

	t.Run("broken values are refused and write nothing", func(t *testing.T) {
		before := mustCtl(t, env, "kvdb", "list")
		newKey := "config/linux/l3/v2/route/10.201.0.0/16/" + n.Peer
		for _, c := range []struct {
			name, key, value string
			wants            []string
		}{
			{"bad JSON", newKey, `{"outgoing_interface":"x",`, []string{"not valid JSON", "unexpected end of JSON input"}},
			{"neither JSON nor YAML", newKey, "a: [", []string{"neither JSON nor YAML"}},
			{"empty", newKey, " ", []string{"empty value"}},
			{"unknown field", newKey, fmt.Sprintf(`{"outgoing_interface":%q,"dst_network":"10.201.0.0/16","bogus":1}`, n.Peer), []string{`unknown field "bogus"`}},
			// The position is in the text given (column of "high").
			{"wrong type", newKey, fmt.Sprintf(`{"outgoing_interface":%q,"dst_network":"10.201.0.0/16","metric":"high"}`, n.Peer),
				[]string{"metric", fmt.Sprintf("(line 1:%d)", strings.Index(fmt.Sprintf(`{"outgoing_interface":%q,"dst_network":"10.201.0.0/16","metric":"high"}`, n.Peer), `"high"`)+1)}},
			{"invalid field", newKey, fmt.Sprintf(`{"outgoing_interface":%q,"dst_network":"10.201.0.0/16","gw_addr":"300.1.1.1"}`, n.Peer), []string{"gw_addr", `"300.1.1.1" is not an IP address`}},
			{"key and value do not match", newKey, fmt.Sprintf(`{"outgoing_interface":%q,"dst_network":"10.202.0.0/16"}`, n.Peer), []string{"the value belongs under config/linux/l3/v2/route/10.202.0.0/16/", "dst_network"}},
			{"unknown key prefix", "config/bogus/v1/thing/x", `{"name":"x"}`, []string{`"config/bogus/v1/thing/x": matches no model`, "config/linux/l3/v2/route/"}},
			{"another label's key", "/vnf-agent/other/" + newKey, `{}`, []string{`of label "other"`, "--label"}},
			// Broken values for keys that exist: the old value stays.
			{"existing key: bad JSON", routeKey, `{`, []string{"not valid JSON"}},
			{"existing key: other name", hostKey, strings.Replace(hostValue, n.Host, "other0", 1), []string{"the value belongs under config/linux/interfaces/v2/interface/other0"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				line := wantError(t, env, "", []string{"kvdb", "put", c.key, c.value}, c.wants...)
				if !strings.HasPrefix(line, "agentctl: refused: ") && c.name != "another label's key" {
					t.Errorf("kvdb put: %q, want \"agentctl: refused: <reason>\"", line)
				}
			})
		}
		// Also through stdin.
		wantError(t, env, `{"bogus":1}`, []string{"kvdb", "put", newKey, "-"}, "refused", `unknown field "bogus"`)

		wantError(t, env, "", []string{"kvdb", "get", newKey}, "not in etcd")
		if v, ok := etcdValue(t, a, newKey); ok {
			t.Errorf("etcd has %s after refused puts: %q", newKey, v)
		}
		for key, want := range map[string]string{routeKey: routeValue, hostKey: hostValue} {
			if got, _ := etcdValue(t, a, key); got != want {
				t.Errorf("etcd %s after refused puts: %q, want %q still", key, got, want)
			}
		}
		if after := mustCtl(t, env, "kvdb", "list"); after != before {
			t.Errorf("kvdb list changed by refused puts:\n%s", lineDiff(before, after))
		}
		if out, err := ip("-n", n.NS, "route", "show"); err != nil || !strings.Contains(out, route) {
			t.Errorf("ip route after refused puts: %q %v, want %q still", out, err, route)
		}
	})

	t.Run("del: the agent removes the values", func(t *testing.T) {
		if out := mustCtl(t, env, "kvdb", "del", routeKey); !regexp.MustCompile(`^deleted 1 key \(etcd revision \d+\)\n$`).MatchString(out) {
			t.Errorf("kvdb del %s: %q", routeKey, out)
		}
		waitFor(t, "the route removed from "+n.NS, func() (bool, string) {
			out, err := ip("-n", n.NS, "route", "show")
			return err == nil && !strings.Contains(out, "10.200.0.0/16"), out
		})
		wantError(t, env, "", []string{"kvdb", "del", routeKey}, "/vnf-agent/"+a.Label+"/"+routeKey, "not in etcd")

		var res struct {
			Deleted  int   `json:"deleted"`
			Revision int64 `json:"revision"`
		}
		parseJSON(t, "kvdb del --prefix -o json", mustCtl(t, env, "kvdb", "del", "config/linux/interfaces/", "--prefix", "-o", "json"), &res)
		if res.Deleted != 2 || res.Revision == 0 {
			t.Errorf("kvdb del config/linux/interfaces/ --prefix -o json: %+v, want 2 deleted", res)
		}
		waitFor(t, n.Host+" removed", func() (bool, string) {
			out, err := ip("link", "show", "dev", n.Host)
			return err != nil, out
		})
		if out := mustCtl(t, env, "kvdb", "list"); out != "No keys under /vnf-agent/"+a.Label+"/.\n" {
			t.Errorf("kvdb list after del: %q", out)
		}
		// The link goes during the agent's transaction; the statuses show
		// it once the transaction has ended.
		waitFor(t, "values linux.interfaces.interface after del: none", func() (bool, string) {
			out := mustCtl(t, env, "values", "linux.interfaces.interface")
			return out == "No values.\n", out
		})
	})
}

// TestAgentctlPluginChecks: against an agent with VPP (vppsim), a value
// that passes the model's checks but not its plugin's (a GRE_TUNNEL
// interface: the VPP plugin creates none) is written by kvdb put and is
// INVALID in the agent (README: kvdb put); a configuration document with
// such a value plans with exit 1, before and after it is stored.
func TestAgentctlPluginChecks(t *testing.T) {
	t.Parallel()
	sim, err := vppsim.Start(vppsim.Options{SocketPath: filepath.Join(t.TempDir(), "api.sock")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	a := startAgent(t, agentOptions{VPPSocket: sim.SocketPath()})
	env := a.env()
	const unsupported = "type GRE_TUNNEL is not supported by this agent"

	const key = "config/vpp/v2/interfaces/tun1"
	if out := mustCtl(t, env, "kvdb", "put", key, `{"name":"tun1","type":"GRE_TUNNEL"}`); !strings.HasPrefix(out, "put /vnf-agent/"+a.Label+"/"+key) {
		t.Errorf("kvdb put of a GRE tunnel: %q, want it written", out)
	}
	waitCtl(t, "tun1 INVALID", env, contains(unsupported), "values", "--state", "INVALID")

	doc := writeFile(t, "b.yaml", "vpp_config:\n  interfaces:\n    - name: lp\n      type: GRE_TUNNEL\n")
	for _, when := range []string{"before update", "after update"} {
		stdout, stderr, code := agentctl(t, env, "config", "plan", doc)
		if code != 1 || !strings.Contains(stdout, unsupported) {
			t.Errorf("plan of a GRE tunnel %s: exit %d, %q; want 1 and the plugin's error", when, code, stdout)
		}
		checkErrorLine(t, []string{"config", "plan"}, stdout, stderr)
		if when == "before update" {
			if _, _, code := agentctl(t, env, "config", "update", doc); code != 0 {
				t.Fatalf("update without --wait: exit %d", code)
			}
			waitCtl(t, "lp INVALID", env, contains("config/vpp/v2/interfaces/lp"), "values", "--state", "INVALID")
		}
	}
}

// etcdPutRaw writes a model key of the agent's label into its etcd as is,
// without agentctl's checks (etcd's JSON gateway, POST /v3/kv/put): how a
// broken value gets there.
func etcdPutRaw(t *testing.T, a *agent, modelKey, value string) {
	t.Helper()
	key := "/vnf-agent/" + a.Label + "/" + modelKey
	body, _ := json.Marshal(map[string]string{
		"key": base64.StdEncoding.EncodeToString([]byte(key)), "value": base64.StdEncoding.EncodeToString([]byte(value))})
	resp, err := a.http.Post(a.EtcdEndpoint+"/v3/kv/put", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("etcd put %s: %v", key, err)
	}
	defer resp.Body.Close()
	if data, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
		t.Fatalf("etcd put %s: %s %s", key, resp.Status, data)
	}
}

// config get names on standard error the values it leaves out of the
// document (not decodable or not valid), with the reason.
func TestAgentctlConfigGetNamesLeftOutValues(t *testing.T) {
	t.Parallel()
	a := startAgent(t, agentOptions{})
	env := a.env()
	const badKey = "config/linux/l3/v2/arp/eth9/10.1.1.8"
	etcdPutRaw(t, a, badKey, `{"interface":"eth9","ip_address":"10.1.1.8","hw_address":"02:00:00:00:00:08","static":"yes"}`)
	waitCtl(t, badKey+" INVALID", env, contains(badKey), "values", "--state", "INVALID")
	for _, format := range []string{"yaml", "json"} {
		stdout, stderr, code := agentctl(t, env, "config", "get", "-o", format)
		if code != 0 || strings.Contains(stdout, "10.1.1.8") ||
			!strings.Contains(stderr, "left out of the document: "+badKey+": ") || !strings.Contains(stderr, "static") {
			t.Errorf("config get -o %s: exit %d, stdout %q, stderr %q; want the ARP entry named on stderr with its reason", format, code, stdout, stderr)
		}
	}
}

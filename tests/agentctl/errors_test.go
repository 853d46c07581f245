package agentctl_test

// Errors: every way an operator gets a command wrong ends with one line on
// stderr that starts with "agentctl: ", says what to change, and exit code
// 1; never a stack trace, never a help text.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// errorCase is a run of agentctl that must fail.
type errorCase struct {
	name  string
	env   []string // after the agent's environment
	stdin string
	args  []string
	wants []string // in the error line
}

// TestAgentctlErrors: agent not running, wrong ports, TLS against a plain
// agent, bad files, unknown models, commands and flags, missing and extra
// arguments, bad flag and environment values.
func TestAgentctlErrors(t *testing.T) {
	t.Parallel()
	a := startAgent(t, agentOptions{})
	free := deadPorts(t, 2) // nothing answers there
	etcdPort := a.EtcdEndpoint[len("http://127.0.0.1:"):]
	badYAML := writeFile(t, "bad.yaml", "linux_config: [\n")
	unknownField := writeFile(t, "unknown-field.yaml", "linux_config:\n  interfaces:\n    - name: x1\n      type: VETH\n      bogus: 1\n")
	unknownSection := writeFile(t, "unknown-section.yaml", "bogus_config:\n  x: 1\n")
	invalidValue := writeFile(t, "invalid.yaml", "linux_config:\n  routes:\n    - outgoing_interface: x1\n      dst_network: 10.1.0.0/16\n      gw_addr: 300.1.1.1\n")
	missing := writeFile(t, "x", "") + ".missing"

	cases := []errorCase{
		// Agent not running: a free port, nothing listening.
		{name: "REST: agent not running", args: []string{"status", "--rest-port", strconv.Itoa(free[0])},
			wants: []string{"REST API", "connection refused", "is the agent running?", "--rest-port", "AGENT_REST_PORT"}},
		{name: "gRPC: agent not running", args: []string{"config", "get", "--grpc-port", strconv.Itoa(free[1])},
			wants: []string{"gRPC API", "connection refused", "is the agent running?", "--grpc-port", "AGENT_GRPC_PORT"}},
		{name: "etcd not running", args: []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + strconv.Itoa(free[0]), "--timeout", "1s"},
			wants: []string{"kvdb list: no etcd at 127.0.0.1:" + strconv.Itoa(free[0]) + " (connection refused)", "--etcd-endpoints or ETCD_ENDPOINTS"}},
		{name: "etcd endpoint is the agent's gRPC port", args: []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + strconv.Itoa(a.GRPCPort)},
			wants: []string{"kvdb list: 127.0.0.1:" + strconv.Itoa(a.GRPCPort) + " is the agent's gRPC port (--grpc-port), not etcd", "the agent uses etcd at " + a.EtcdEndpoint, "--etcd-endpoints"}},
		{name: "etcd endpoint is the agent's REST port", args: []string{"kvdb", "get", "config/x", "--etcd-endpoints", "127.0.0.1:" + strconv.Itoa(a.RESTPort)},
			wants: []string{"kvdb get: 127.0.0.1:" + strconv.Itoa(a.RESTPort) + " is the agent's REST port (--rest-port), not etcd", "the agent uses etcd at " + a.EtcdEndpoint}},
		// Wrong ports: another listener of the agent.
		{name: "REST port is the gRPC port", args: []string{"values", "--rest-port", strconv.Itoa(a.GRPCPort)},
			wants: []string{"REST API", "not HTTP", "gRPC port", "--rest-port"}},
		{name: "gRPC port is the REST port", args: []string{"config", "plan", writeFile(t, "empty.yaml", "{}\n"), "--grpc-port", strconv.Itoa(a.RESTPort)},
			wants: []string{"gRPC API", "not gRPC", "REST port", "--grpc-port"}},
		{name: "REST port is etcd's", args: []string{"status", "--rest-port", etcdPort},
			wants: []string{"404", "not the agent's REST API", "--rest-port"}},
		{name: "TLS against a plain agent", args: []string{"status", "--tls-insecure"},
			wants: []string{"does not answer TLS", "drop --tls"}},
		{name: "gRPC TLS against a plain agent", args: []string{"config", "get", "--tls-insecure"},
			wants: []string{"does not answer TLS", "drop --tls"}},
		// Bad files.
		{name: "missing file", args: []string{"config", "update", missing}, wants: []string{"reading the configuration", "no such file"}},
		{name: "missing file (plan)", args: []string{"config", "plan", missing}, wants: []string{"no such file"}},
		{name: "missing file (delete)", args: []string{"config", "delete", missing}, wants: []string{"no such file"}},
		{name: "invalid YAML", args: []string{"config", "update", badYAML}, wants: []string{badYAML + " (YAML): line 1: "}},
		{name: "empty document (update)", args: []string{"config", "update", writeFile(t, "empty-update.yaml", "# nothing\n")}, wants: []string{"has no values", "nothing to update", "--replace"}},
		{name: "empty document (delete)", args: []string{"config", "delete", writeFile(t, "empty-delete.yaml", "{}\n")}, wants: []string{"has no values", "nothing to delete"}},
		{name: "invalid YAML on stdin", stdin: "linux_config: [\n", args: []string{"config", "plan", "-"}, wants: []string{"standard input (YAML): line 1: "}},
		{name: "unknown field", args: []string{"config", "plan", unknownField}, wants: []string{unknownField + " (YAML): line 5: linux_config.interfaces[0]: " + `unknown field "bogus"`}},
		{name: "unknown section", args: []string{"config", "update", unknownSection}, wants: []string{"bogus_config", "unknown section"}},
		{name: "invalid value", args: []string{"config", "update", invalidValue, "--wait"}, wants: []string{invalidValue + " (YAML): line 5: linux_config.routes[0]: ", "gw_addr", "300.1.1.1"}},
		// The document's own error comes first, whatever the agent says
		// (agentctl checks the items while the request goes).
		{name: "invalid value, agent not running", args: []string{"config", "update", invalidValue, "--grpc-port", strconv.Itoa(free[1])},
			wants: []string{invalidValue + " (YAML): line 5: linux_config.routes[0]: ", "gw_addr", "300.1.1.1"}},
		{name: "invalid value (delete)", args: []string{"config", "delete", invalidValue, "--wait"}, wants: []string{invalidValue + " (YAML): line 5: linux_config.routes[0]: ", "gw_addr"}},
		{name: "verify with replace", args: []string{"config", "update", invalidValue, "--verify", "--replace"}, wants: []string{"--verify is for a change, not for --replace"}},
		// Unknown models, commands, flags.
		{name: "values: unknown model", args: []string{"values", "bogus.model"}, wants: []string{`unknown model "bogus.model"`, "linux.l3.route", "vpp.interfaces"}},
		{name: "dump: unknown model", args: []string{"dump", "bogus.model"}, wants: []string{`unknown model "bogus.model"`, "linux.interfaces.interface"}},
		{name: "dump: ambiguous model", args: []string{"dump", "linux.l3"}, wants: []string{`model name "linux.l3" is ambiguous`, "linux.l3.arp, linux.l3.route"}},
		{name: "unknown command", args: []string{"stauts"}, wants: []string{`unknown command "stauts" for "agentctl"`, "did you mean status?", "agentctl --help"}},
		{name: "unknown config command", args: []string{"config", "udpate", "x.yaml"}, wants: []string{`unknown command "udpate" for "agentctl config"`, "did you mean update?"}},
		{name: "unknown kvdb command", args: []string{"kvdb", "bogus"}, wants: []string{`unknown command "bogus" for "agentctl kvdb"`, "agentctl kvdb --help"}},
		{name: "unknown flag", args: []string{"status", "--bogus"}, wants: []string{"unknown flag: --bogus", "agentctl status --help"}},
		{name: "unknown shorthand flag", args: []string{"values", "-z"}, wants: []string{"unknown shorthand flag", "agentctl values --help"}},
		{name: "flag without its value", args: []string{"values", "--state"}, wants: []string{"flag needs an argument: --state"}},
		// Arguments.
		{name: "missing argument", args: []string{"dump"}, wants: []string{"dump: missing MODEL", "agentctl dump --help"}},
		{name: "missing file argument", args: []string{"config", "update"}, wants: []string{"config update: missing FILE"}},
		{name: "extra argument", args: []string{"status", "now"}, wants: []string{"status takes no arguments", `"now"`}},
		{name: "too many arguments", args: []string{"config", "plan", "a.yaml", "b.yaml"}, wants: []string{"too many arguments", `"b.yaml"`}},
		// Bad flag values.
		{name: "output format", args: []string{"status", "-o", "xml"}, wants: []string{`output format "xml"`, "table, yaml or json"}},
		{name: "output format from the environment", env: []string{"AGENTCTL_OUTPUT=xml"}, args: []string{"status"}, wants: []string{`"xml"`, "AGENTCTL_OUTPUT"}},
		{name: "dump view", args: []string{"dump", "linux.l3.route", "--view", "XX"}, wants: []string{`--view "XX"`, "NB, SB or cached"}},
		{name: "values state", args: []string{"values", "--state", "BOGUS"}, wants: []string{"--state BOGUS", "unknown state", "PENDING"}},
		{name: "graph format", args: []string{"graph", "-o", "png"}, wants: []string{`-o "png"`, "dot, svg, mermaid or json", "--file"}},
		{name: "graph format (old flag)", args: []string{"graph", "--format", "png"}, wants: []string{`--format "png"`, "dot, svg"}},
		{name: "graph txn 0", args: []string{"graph", "--txn", "0"}, wants: []string{"--txn 0"}},
		{name: "graph txn not in the history", args: []string{"graph", "--txn", "999999"}, wants: []string{"404", "#999999", "history starts at #1", "the newest transaction is #"}},
		{name: "history SEQ", args: []string{"config", "history", "abc"}, wants: []string{`SEQ "abc"`, "sequence number"}},
		{name: "history SEQ not in the history", args: []string{"config", "history", "999999"}, wants: []string{"404", "#999999", "the newest transaction is #"}},
		{name: "timeout", args: []string{"status", "--timeout", "0"}, wants: []string{"--timeout", "positive duration"}},
		{name: "port out of range", args: []string{"config", "get", "--grpc-port", "70000"}, wants: []string{"--grpc-port 70000", "1 to 65535"}},
		{name: "label", args: []string{"kvdb", "list", "--label", "a/b"}, wants: []string{"--label", `"a/b"`}},
		{name: "watch count", args: []string{"config", "watch", "--count", "-1"}, wants: []string{"--count -1"}},
		{name: "history last", args: []string{"config", "history", "--last", "-1"}, wants: []string{"--last -1"}},
		// Bad environment values: one line naming the variable.
		{name: "AGENT_GRPC_PORT=abc", env: []string{"AGENT_GRPC_PORT=abc"}, args: []string{"config", "get"},
			wants: []string{`AGENT_GRPC_PORT="abc"`, "not a valid int", "--grpc-port"}},
		{name: "AGENT_REST_PORT=abc", env: []string{"AGENT_REST_PORT=abc"}, args: []string{"status"}, wants: []string{`AGENT_REST_PORT="abc"`}},
		{name: "AGENTCTL_TIMEOUT=abc", env: []string{"AGENTCTL_TIMEOUT=abc"}, args: []string{"values"}, wants: []string{`AGENTCTL_TIMEOUT="abc"`, "duration"}},
		{name: "AGENTCTL_TLS=maybe", env: []string{"AGENTCTL_TLS=maybe"}, args: []string{"status"}, wants: []string{`AGENTCTL_TLS="maybe"`, "bool"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, append(a.env(), c.env...), c.stdin, c.args, c.wants...)
		})
	}

	// Nothing of the failed updates reached the agent.
	if out := mustCtl(t, a.env(), "config", "get"); out != "# no desired configuration\n{}\n" {
		t.Errorf("config get after the failed updates: %q, want no desired configuration", out)
	}
	// A bad environment value does not matter when the flag is given.
	mustCtl(t, append(a.env(), "AGENT_GRPC_PORT=abc"), "config", "get", "--grpc-port", fmt.Sprint(a.GRPCPort))
}

// TestAgentctlDocumentErrors: an error in a configuration document names
// the file, its format (YAML or JSON) and the line of the item or field,
// without the decoders' prefixes ("configuration document:", "yaml:",
// "proto: (line 1:21)", whose position is in agentctl's JSON of one item).
func TestAgentctlDocumentErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, file, content string
		want                string // after "agentctl: <file> "
	}{
		{"enum value", "enum.yaml", "vpp_config:\n  interfaces:\n    - name: lp\n      type: NOPE\n",
			`(YAML): line 4: vpp_config.interfaces[0]: invalid value for enum field type: "NOPE"`},
		{"number", "mtu.yaml", "vpp_config:\n  interfaces:\n    - name: lp\n      type: SOFTWARE_LOOPBACK\n      mtu: abc\n",
			`(YAML): line 5: vpp_config.interfaces[0]: invalid value for uint32 field mtu: "abc"`},
		{"second item, list element", "addr.yaml", "vpp_config:\n  interfaces:\n    - {name: a, type: SOFTWARE_LOOPBACK}\n    - name: b\n      type: SOFTWARE_LOOPBACK\n      ip_addresses:\n        - 10.0.0.1/24\n        - 10.0.0.300/24\n",
			`(YAML): line 8: vpp_config.interfaces[1]: invalid vpp.interfaces value: ip_addresses[1]: "10.0.0.300/24" is not an IP address`},
		{"unknown section", "section.yaml", "vpp_config: {}\nbogus_config:\n  x: 1\n", "(YAML): line 2: bogus_config: unknown section"},
		{"key twice", "twice.yaml", "vpp_config:\n  interfaces:\n    - name: lp\n      name: lq\n", `(YAML): line 4: key "name" already set in map`},
		{"YAML syntax", "syntax.yaml", "vpp_config:\n  interfaces:\n    - name: lp\n   type: X\n", "(YAML): line 3: did not find expected key"},
		{"JSON enum value", "enum.json", "{\"vpp_config\": {\"interfaces\": [\n  {\"name\": \"lp\",\n   \"type\": \"NOPE\"}]}}\n",
			`(JSON): line 3: vpp_config.interfaces[0]: invalid value for enum field type: "NOPE"`},
		{"JSON camelCase names", "camel.json", "{\"vppConfig\": {\"interfaces\": [\n  {\"name\": \"lp\", \"type\": \"SOFTWARE_LOOPBACK\",\n   \"ipAddresses\": [\"x\"]}]}}\n",
			`(JSON): line 3: vpp_config.interfaces[0]: invalid vpp.interfaces value: ip_addresses[0]: "x" is not an IP address`},
		{"JSON bad character", "character.json", "{\"vpp_config\": {\"interfaces\": [\n  {\"name\": \"lp\" x}]}}\n", "(JSON): line 2, column 17: invalid character 'x'"},
		{"JSON syntax", "syntax.json", "{\"vpp_config\": {\"interfaces\": [\n  {\"name\": \"lp\"}\n", "(JSON): line 2: unexpected end of JSON input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := writeFile(t, c.file, c.content)
			line := wantError(t, nil, "", []string{"config", "plan", file}, "agentctl: "+file+" "+c.want)
			for _, noise := range []string{"configuration document", "yaml:", "proto:", "json:", "(line 1:"} {
				if strings.Contains(line, noise) {
					t.Errorf("error %q contains %q", line, noise)
				}
			}
		})
	}
}

package agentctl_test

// Help and shell completion: no agent needed (except for the keys of kvdb,
// completed from etcd: see kvdb_test.go).

import (
	"slices"
	"strings"
	"testing"
)

// commandPaths are all of agentctl's commands (TestAgentctlHelp checks that
// the list is complete by walking the tree through completion).
var commandPaths = []string{
	"",
	"config", "config get", "config update", "config delete", "config plan", "config history", "config resync", "config watch",
	"config confirm", "config status",
	"status", "values", "dump", "graph",
	"kvdb", "kvdb list", "kvdb get", "kvdb put", "kvdb del",
	"fleet", "fleet status",
	"completion", "completion bash", "completion zsh", "completion fish", "completion powershell", "help",
}

// commandGroups are the commands that hold commands (the others complete
// arguments: models, files, keys, command paths).
var commandGroups = []string{"config", "kvdb", "fleet", "completion"}

// modelNames are the names of the built-in models (pkg/models).
var modelNames = []string{
	"linux.interfaces.interface", "linux.l3.arp", "linux.l3.route",
	"vpp.acls.acl", "vpp.arp", "vpp.interfaces", "vpp.l2.bridge-domain", "vpp.l2.fib", "vpp.l2.xconnect",
	"vpp.nat.dnat44", "vpp.nat.nat44-global", "vpp.nat.nat44-interface", "vpp.nat.nat44-pool",
	"vpp.route", "vpp.vrf-table",
}

// completions runs agentctl __complete args... and returns the candidates
// (without their descriptions) and the directive line.
func completions(t *testing.T, env []string, args ...string) (candidates []string, directive string) {
	t.Helper()
	out := mustCtl(t, env, append([]string{"__complete"}, args...)...)
	for _, line := range lines(out) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, ":") {
			directive = line
			continue
		}
		name, _, _ := strings.Cut(line, "\t")
		candidates = append(candidates, name)
	}
	return candidates, directive
}

// TestAgentctlHelp: every command's --help (and "agentctl help CMD") exits
// 0 with its usage and examples; the root help names every flag's
// environment variable and the exit codes.
func TestAgentctlHelp(t *testing.T) {
	t.Parallel()

	t.Run("the list of commands is complete", func(t *testing.T) {
		var walk func(path []string) []string
		walk = func(path []string) []string {
			found := []string{strings.Join(path, " ")}
			if len(path) > 1 || len(path) == 1 && !slices.Contains(commandGroups, path[0]) {
				return found
			}
			subs, _ := completions(t, nil, append(slices.Clone(path), "")...)
			for _, sub := range subs {
				found = append(found, walk(append(slices.Clone(path), sub))...)
			}
			return found
		}
		found := walk(nil)
		slices.Sort(found)
		want := slices.Clone(commandPaths)
		slices.Sort(want)
		if !slices.Equal(found, want) {
			t.Errorf("commands found through completion:\n%q\nwant (commandPaths):\n%q", found, want)
		}
	})

	for _, path := range commandPaths {
		name := "agentctl " + path
		t.Run(strings.TrimSpace(name), func(t *testing.T) {
			args := append(strings.Fields(path), "--help")
			stdout, stderr, code := agentctl(t, nil, args...)
			if code != 0 || stderr != "" {
				t.Fatalf("%s --help: exit %d, stderr %q; want 0 and nothing", name, code, stderr)
			}
			for _, want := range []string{"Usage:\n  " + strings.TrimSpace(name), "Flags:", "--output"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("%s --help does not contain %q:\n%s", name, want, stdout)
				}
			}
			// An Examples section, whose examples run this command.
			_, examples, ok := strings.Cut(stdout, "\nExamples:\n")
			examples, _, _ = strings.Cut(examples, "\n\n")
			if !ok || !strings.Contains(examples, "agentctl "+path) {
				t.Errorf("%s --help: examples %q, want some of %s", name, examples, name)
			}
			// "agentctl help PATH" prints the same help.
			if helpOut := mustCtl(t, nil, append([]string{"help"}, strings.Fields(path)...)...); helpOut != stdout {
				t.Errorf("agentctl help %s differs from %s --help:\n%s", path, name, lineDiff(stdout, helpOut))
			}
			// Without their subcommand, groups print their help too.
			if slices.Contains(commandGroups, path) {
				if out := mustCtl(t, nil, path); out != stdout {
					t.Errorf("agentctl %s without a command: not its help:\n%s", path, lineDiff(stdout, out))
				}
			}
		})
	}

	t.Run("root help names the environment variables", func(t *testing.T) {
		out := mustCtl(t, nil, "--help")
		for _, env := range []string{"AGENT_HOST", "AGENT_GRPC_PORT", "AGENT_REST_PORT", "MICROSERVICE_LABEL", "ETCD_ENDPOINTS",
			"NETAGENT_TOKEN", "NETAGENT_TOKEN_FILE", "AGENTCTL_TLS", "AGENTCTL_TLS_CA", "AGENTCTL_TLS_CERT/KEY", "AGENTCTL_TLS_INSECURE",
			"AGENTCTL_TIMEOUT", "AGENTCTL_OUTPUT", "Exit codes: 0 success, 1 error, 2"} {
			if !strings.Contains(out, env) {
				t.Errorf("agentctl --help does not name %s", env)
			}
		}
	})

	t.Run("help of values and dump lists the models", func(t *testing.T) {
		for _, cmd := range []string{"values", "dump"} {
			out := mustCtl(t, nil, cmd, "--help")
			for _, m := range modelNames {
				if !strings.Contains(out, m) {
					t.Errorf("agentctl %s --help does not list the model %s", cmd, m)
				}
			}
		}
	})
}

// TestAgentctlCompletion: the completion scripts of every shell, and the
// completion of commands, models, flag values and files.
func TestAgentctlCompletion(t *testing.T) {
	t.Parallel()

	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out := mustCtl(t, nil, "completion", shell)
		if !strings.Contains(out, "agentctl") || len(out) < 1000 {
			t.Errorf("agentctl completion %s: %d bytes, want a script for agentctl", shell, len(out))
		}
	}
	wantError(t, nil, "", []string{"completion", "tcsh"}, `unknown command "tcsh" for "agentctl completion"`)
	wantError(t, nil, "", []string{"help", "stauts"}, `unknown command "stauts" for "agentctl"`, "did you mean status?")
	// Neither depends on the global settings.
	mustCtl(t, []string{"AGENT_GRPC_PORT=abc", "AGENTCTL_OUTPUT=xml"}, "completion", "bash")
	mustCtl(t, []string{"AGENT_GRPC_PORT=abc", "AGENTCTL_OUTPUT=xml"}, "help", "status")

	for _, c := range []struct {
		args      []string
		want      []string
		directive string
	}{
		{[]string{"values", ""}, modelNames, ":4"},
		{[]string{"dump", ""}, modelNames, ":4"},
		{[]string{"dump", "linux.l3.route", ""}, nil, ":4"},
		{[]string{"dump", "linux.l3.route", "--view", ""}, []string{"NB", "SB", "cached"}, ":4"},
		{[]string{"values", "--state", ""}, []string{"CONFIGURED", "OBTAINED", "DISCOVERED", "PENDING", "UNIMPLEMENTED", "RETRYING", "FAILED", "INVALID", "MISSING", "REMOVED"}, ":4"},
		{[]string{"status", "-o", ""}, []string{"table", "yaml", "json"}, ":4"},
		{[]string{"graph", "--format", ""}, []string{"dot", "svg", "mermaid", "json"}, ":4"},
		{[]string{"graph", "-o", ""}, []string{"dot", "svg", "mermaid", "json"}, ":4"},
		{[]string{"config", ""}, []string{"confirm", "delete", "get", "history", "plan", "resync", "status", "update", "watch"}, ":4"},
		{[]string{"kvdb", ""}, []string{"del", "get", "list", "put"}, ":4"},
		// FILE: files with these extensions (ShellCompDirectiveFilterFileExt).
		{[]string{"config", "update", ""}, []string{"yaml", "yml", "json"}, ":8"},
	} {
		got, directive := completions(t, nil, c.args...)
		if !slices.Equal(got, c.want) || directive != c.directive {
			t.Errorf("agentctl __complete %s: %q %s, want %q %s", quoteArgs(c.args), got, directive, c.want, c.directive)
		}
	}
}

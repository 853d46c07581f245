package agentctl_test

// The token: an agent that wants one for changes, and agentctl with and
// without it (--token, NETAGENT_TOKEN, --token-file, NETAGENT_TOKEN_FILE).

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAgentctlToken: changes (REST resync, gRPC update and delete) without
// the token fail with one line naming the token flags, with a wrong one
// with one line saying it was rejected and where it came from, and change
// nothing; each way of giving the token works; reads need
// none. The agent's log never shows the token, which holds the characters
// JSON escapes.
func TestAgentctlToken(t *testing.T) {
	t.Parallel()
	const token = `s3cret-t0ken&<x>"y`
	a := startAgent(t, agentOptions{Token: token})
	noToken := append(a.env(), "NETAGENT_TOKEN=") // a.env() carries it: take it away
	// A value without effect on the kernel: VPP is off, so it is UNIMPLEMENTED.
	doc := writeFile(t, "loop.yaml", "vpp_config:\n  interfaces:\n    - name: loop77\n      type: SOFTWARE_LOOPBACK\n")
	tokenFile := writeFile(t, "token", token+"\n")

	t.Run("reads need no token", func(t *testing.T) {
		for _, args := range [][]string{{"status"}, {"values"}, {"config", "get"}, {"config", "history"}, {"dump", "linux.interfaces"}} {
			mustCtl(t, noToken, args...)
		}
	})

	t.Run("resync", func(t *testing.T) {
		wantError(t, noToken, "", []string{"config", "resync"}, "401", "the agent wants a token", "--token, --token-file or NETAGENT_TOKEN")
		if line := wantError(t, noToken, "", []string{"config", "resync", "--token", "wrong"}, "401", "the agent rejected the token (from --token)"); strings.Contains(line, "wants a token") {
			t.Errorf("resync with a wrong token: %q says the agent wants one", line)
		}
		for name, run := range map[string]struct {
			env  []string
			args []string
		}{
			"--token":             {noToken, []string{"config", "resync", "--token", token}},
			"NETAGENT_TOKEN":      {slices.Concat(noToken, []string{"NETAGENT_TOKEN=" + token}), []string{"config", "resync"}},
			"--token-file":        {noToken, []string{"config", "resync", "--token-file", tokenFile}},
			"NETAGENT_TOKEN_FILE": {slices.Concat(noToken, []string{"NETAGENT_TOKEN_FILE=" + tokenFile}), []string{"config", "resync"}},
		} {
			if out := mustCtl(t, run.env, run.args...); !strings.Contains(out, "(downstream resync)") {
				t.Errorf("resync with %s: %q, want the resync transaction", name, out)
			}
		}
		wantError(t, noToken, "", []string{"config", "resync", "--token-file", filepath.Join(t.TempDir(), "missing")}, "--token-file", "no such file")
	})

	t.Run("update and delete", func(t *testing.T) {
		wantError(t, noToken, "", []string{"config", "update", doc, "--wait"}, "config update", "wants a token", "--token, --token-file or NETAGENT_TOKEN")
		wrongFile := writeFile(t, "wrong-token", "wrong\n")
		for _, c := range []struct {
			env  []string
			args []string
			from string
		}{
			{noToken, []string{"--token", "wrong"}, "(from --token)"},
			{slices.Concat(noToken, []string{"NETAGENT_TOKEN=wrong"}), nil, "(from NETAGENT_TOKEN)"},
			{noToken, []string{"--token-file", wrongFile}, "(from --token-file " + wrongFile + ")"},
			{slices.Concat(noToken, []string{"NETAGENT_TOKEN_FILE=" + wrongFile}), nil, "(from NETAGENT_TOKEN_FILE=" + wrongFile + ")"},
		} {
			line := wantError(t, c.env, "", append([]string{"config", "update", doc}, c.args...), "config update", "the agent rejected the token "+c.from)
			if strings.Contains(line, "wants a token") {
				t.Errorf("update with a wrong token %s: %q says the agent wants one", c.from, line)
			}
		}
		if out := mustCtl(t, noToken, "config", "get"); strings.Contains(out, "loop77") {
			t.Fatalf("config get after refused updates: %q holds loop77", out)
		}
		mustCtl(t, noToken, "config", "update", doc, "--wait", "--token", token)
		if out := mustCtl(t, noToken, "config", "get"); !strings.Contains(out, "loop77") {
			t.Fatalf("config get after the update with the token: %q, want loop77", out)
		}
		wantError(t, noToken, "", []string{"config", "delete", doc, "--wait"}, "config delete", "wants a token")
		if out := mustCtl(t, noToken, "config", "get"); !strings.Contains(out, "loop77") {
			t.Fatalf("config get after a refused delete: %q, want loop77 still", out)
		}
		mustCtl(t, append(noToken, "NETAGENT_TOKEN="+token), "config", "delete", doc, "--wait")
		if out := mustCtl(t, noToken, "config", "get"); strings.Contains(out, "loop77") {
			t.Fatalf("config get after the delete with the token: %q still holds loop77", out)
		}
	})

	if out := a.output(); strings.Contains(out, "s3cret-t0ken") || !strings.Contains(out, `\"token\":\"(set)\"`) {
		t.Errorf("the agent's log shows the token, or not the configuration with the token (set):\n%s", out)
	}
}

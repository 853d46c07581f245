package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestE2EVersionFlag: the agent binary prints its version with --version
// and -version, exits 0 and starts nothing (an invalid configuration
// beside the flag does not matter); what it prints is what the same binary
// answers on GET /info/version: version, commit, build date, Go version
// and the VPP release it targets.
func TestE2EVersionFlag(t *testing.T) {
	bin := agentBinary(t)
	cfg := testConfig(t)
	cfg.Linux.Disabled = os.Geteuid() != 0
	a := startAgentProcess(t, cfg)
	var info map[string]any
	a.getJSON("/info/version", &info)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"--version"}, {"-version"}, {"--version", "--label", "not/valid", "--config", "/nonexistent.yaml"}} {
		cmd := exec.Command(bin, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("agent %s: %v (want exit 0); stderr: %s", strings.Join(args, " "), err, stderr.String())
			continue
		}
		out := stdout.String()
		t.Logf("agent %s:\n%s", strings.Join(args, " "), out)
		if stderr.Len() > 0 {
			t.Errorf("agent %s wrote to stderr: %s", strings.Join(args, " "), stderr.String())
		}
		// The commit and its time are there when the build recorded them
		// (not with -buildvcs=false).
		for _, field := range []string{"version", "go", "vpp", "govpp", "vcs.revision", "vcs.time"} {
			v, _ := info[field].(string)
			switch {
			case v == "" && strings.HasPrefix(field, "vcs."):
				v = "unknown"
			case v == "":
				t.Errorf("/info/version has no %s: %v", field, info)
				continue
			}
			if !strings.Contains(out, v) {
				t.Errorf("agent %s does not print %s %q of /info/version:\n%s", strings.Join(args, " "), field, v, out)
			}
		}
	}
}

// TestVersionText: the text of --version has one line per item of
// versionInfo, and the VPP release the bindings target.
func TestVersionText(t *testing.T) {
	var b strings.Builder
	writeVersion(&b, map[string]any{"version": "v1.2.3", "vcs.revision": "0123abcd", "vcs.time": "2026-01-02T03:04:05Z",
		"vcs.modified": "true", "go": "go1.26.0", "vpp": "25.10", "govpp": "v0.13.0"})
	want := strings.Join([]string{
		"netagent v1.2.3",
		"  commit:   0123abcd (with uncommitted changes)",
		"  built:    2026-01-02T03:04:05Z (commit time)",
		"  go:       go1.26.0",
		"  vpp:      VPP 25.10 binary API (GoVPP v0.13.0); checked at connect",
		"",
	}, "\n")
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writeVersion(&b, map[string]any{"version": "(devel)", "go": "go1.26.0", "vpp": "25.10", "govpp": "v0.13.0"})
	if got := b.String(); !strings.Contains(got, "commit:   unknown") || !strings.Contains(got, "built:    unknown") {
		t.Errorf("without VCS information:\n%s", got)
	}
}

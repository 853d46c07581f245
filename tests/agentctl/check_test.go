package agentctl_test

// Assertions on runs of agentctl: exit codes, the one-line error contract,
// outputs parsed back, polls of agentctl, and agentctl running in the
// background (config watch).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netagent-io/netagent/tests/testsupport"

	"sigs.k8s.io/yaml"
)

// mustCtl runs agentctl and fails the test unless it exits 0; it returns
// stdout.
func mustCtl(t *testing.T, env []string, args ...string) string {
	t.Helper()
	stdout, stderr, code := agentctl(t, env, args...)
	if code != 0 {
		t.Fatalf("agentctl %s: exit %d, want 0; stderr: %s", quoteArgs(args), code, stderr)
	}
	return stdout
}

// wantError runs agentctl (stdin as its input) and checks the error
// contract: exit code 1, exactly one line on stderr that starts with
// "agentctl: " and contains each of wants, and no stack trace or panic in
// either stream. It returns the line.
func wantError(t *testing.T, env []string, stdin string, args []string, wants ...string) string {
	t.Helper()
	stdout, stderr, code := agentctlStdin(t, env, stdin, args...)
	if code != 1 {
		t.Errorf("agentctl %s: exit %d, want 1", quoteArgs(args), code)
	}
	checkErrorLine(t, args, stdout, stderr)
	line := strings.TrimSuffix(stderr, "\n")
	for _, want := range wants {
		if !strings.Contains(line, want) {
			t.Errorf("agentctl %s: error %q does not contain %q", quoteArgs(args), line, want)
		}
	}
	return line
}

// checkErrorLine checks that stderr is one line starting with "agentctl: "
// and that neither stream holds a Go stack trace or panic.
func checkErrorLine(t *testing.T, args []string, stdout, stderr string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "agentctl: ") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("agentctl %s: stderr %q, want exactly one line starting with \"agentctl: \"", quoteArgs(args), stderr)
	}
	for _, bad := range []string{"goroutine ", "panic", "runtime error", ".go:"} {
		if strings.Contains(stdout+stderr, bad) {
			t.Errorf("agentctl %s: output holds %q (a stack trace?):\n%s%s", quoteArgs(args), bad, stdout, stderr)
		}
	}
}

// parseJSON decodes agentctl's JSON output into v, failing the test when it
// does not parse.
func parseJSON(t *testing.T, what, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s: output is not JSON: %v\n%s", what, err, out)
	}
}

// parseYAML decodes agentctl's YAML output into v (through JSON, as
// sigs.k8s.io/yaml does: v's json tags apply), failing the test when it
// does not parse.
func parseYAML(t *testing.T, what, out string, v any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s: output is not YAML: %v\n%s", what, err, out)
	}
}

// waitCtl polls agentctl args (quietly) until cond holds for its output,
// and returns that output; after waitTimeout it fails the test with the
// last output.
func waitCtl(t *testing.T, what string, env []string, cond func(stdout string, code int) bool, args ...string) string {
	t.Helper()
	var stdout string
	waitFor(t, what, func() (bool, string) {
		var stderr string
		var code int
		stdout, stderr, code = runAgentctl(t, env, "", args...)
		return cond(stdout, code), fmt.Sprintf("agentctl %s: exit %d\n%s%s", quoteArgs(args), code, stdout, stderr)
	})
	t.Logf("agentctl %s (polled until %s):\n%s", quoteArgs(args), what, stdout)
	return stdout
}

// contains is a condition of waitCtl: exit 0 and stdout containing want.
func contains(want string) func(string, int) bool {
	return func(stdout string, code int) bool { return code == 0 && strings.Contains(stdout, want) }
}

// bgCtl is agentctl running in the background (config watch), its stdout
// read line by line as it comes.
type bgCtl struct {
	t      *testing.T
	args   []string
	cmd    *exec.Cmd
	stderr *testsupport.SyncBuffer
	done   chan struct{} // closed when the process exited
	err    error         // of Wait, valid once done is closed

	mu      sync.Mutex
	lines   []string      // stdout so far
	eof     bool          // stdout ended
	changed chan struct{} // a token when lines or eof changed
	read    int           // lines[:read] were looked at by next
}

// startCtl starts agentctl args in the background. When the test ends the
// process, if still running, is killed (this process, by its pid).
func startCtl(t *testing.T, env []string, args ...string) *bgCtl {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &bgCtl{t: t, args: args, stderr: &testsupport.SyncBuffer{}, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	b.cmd = ctlCommand(ctx, t, env, args...)
	b.cmd.Stderr = b.stderr
	stdout, err := b.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("starting agentctl %s: %v", quoteArgs(args), err)
	}
	t.Logf("agentctl %s: started in the background (pid %d)", quoteArgs(args), b.cmd.Process.Pid)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.mu.Lock()
			b.lines = append(b.lines, sc.Text())
			b.mu.Unlock()
			b.signal()
		}
		_, _ = io.Copy(io.Discard, stdout)
		b.mu.Lock()
		b.eof = true
		b.mu.Unlock()
		b.signal()
		b.err = b.cmd.Wait() // after the reads, as Wait closes the pipe
		close(b.done)
	}()
	t.Cleanup(func() {
		cancel() // kills the process if it still runs
		<-b.done
	})
	return b
}

func (b *bgCtl) signal() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

// next returns the first line not looked at yet that satisfies match,
// waiting up to waitTimeout; it fails the test when stdout ends or time is
// up.
func (b *bgCtl) next(what string, match func(line string) bool) string {
	b.t.Helper()
	timeout := time.After(waitTimeout)
	for {
		b.mu.Lock()
		for b.read < len(b.lines) {
			line := b.lines[b.read]
			b.read++
			if match(line) {
				b.mu.Unlock()
				b.t.Logf("agentctl %s: %s: %s", quoteArgs(b.args), what, line)
				return line
			}
		}
		eof, seen := b.eof, strings.Join(b.lines, "\n")
		b.mu.Unlock()
		if eof {
			<-b.done
			b.t.Fatalf("agentctl %s: ended (%v) before %s; stdout:\n%s\nstderr:\n%s",
				quoteArgs(b.args), b.err, what, seen, b.stderr.String())
		}
		select {
		case <-b.changed:
		case <-timeout:
			b.t.Fatalf("agentctl %s: no line %s after %v; stdout:\n%s\nstderr:\n%s",
				quoteArgs(b.args), what, waitTimeout, seen, b.stderr.String())
		}
	}
}

// wait waits for the process to exit by itself and returns its exit code
// and all of its stdout lines.
func (b *bgCtl) wait() (int, []string) {
	b.t.Helper()
	select {
	case <-b.done:
	case <-time.After(waitTimeout):
		b.t.Fatalf("agentctl %s: still running after %v", quoteArgs(b.args), waitTimeout)
	}
	code := 0
	if b.err != nil {
		code = -1
		if exit, ok := b.err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		}
	}
	b.mu.Lock()
	lines := append([]string(nil), b.lines...)
	b.mu.Unlock()
	b.t.Logf("agentctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", quoteArgs(b.args), code, strings.Join(lines, "\n"), b.stderr.String())
	return code, lines
}

// stop kills the process (it runs until interrupted) and waits for it; it
// must not have written to stderr.
func (b *bgCtl) stop() {
	b.t.Helper()
	_ = b.cmd.Process.Kill()
	<-b.done
	if s := b.stderr.String(); s != "" {
		b.t.Errorf("agentctl %s: stderr: %s", quoteArgs(b.args), s)
	}
}

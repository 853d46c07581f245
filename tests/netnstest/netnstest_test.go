package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) { Main(m, "NETNSTEST_SELFTEST_ISOLATED") }

// TestIsolated: as root, the tests run in a child of the first process, in
// a network namespace that is not the first process's, whose only link is
// lo, up.
func TestIsolated(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a new network namespace)")
	}
	if !Isolated() {
		t.Skip("NETNSTEST_SELFTEST_ISOLATED=" + os.Getenv("NETNSTEST_SELFTEST_ISOLATED") + ": tests run in the caller's namespace")
	}
	ours, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.Readlink("/proc/" + strconv.Itoa(os.Getppid()) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if ours == first {
		t.Errorf("network namespace %s, the same as the first process's", ours)
	}
	out, err := exec.Command("ip", "-o", "link", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip link: %v: %s", err, out)
	}
	links := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(links) != 1 || !strings.Contains(links[0], ": lo: <LOOPBACK,UP,LOWER_UP>") {
		t.Errorf("links of the tests' namespace:\n%s\nwant only lo, up", out)
	}
}

// TestExitCode: the first process exits with the child's exit code, or
// 128+n when signal n killed it.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
	} {
		if got, _ := exitCode(exec.Command("sh", "-c", tc.script).Run()); got != tc.want {
			t.Errorf("sh -c %q: exit code %d, want %d", tc.script, got, tc.want)
		}
	}
}

// recordingTB records what Check asks of its test.
type recordingTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordingTB) Helper()                           {}
func (r *recordingTB) Skip(args ...any)                  { r.skipped = strings.TrimSpace(fmt.Sprintln(args...)) }
func (r *recordingTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestCheck: Check passes in an isolated process, fails as root in one that
// was not isolated, and skips when the caller opted out.
func TestCheck(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (not root, Check always skips)")
	}
	const env = "NETNSTEST_CHECK_TEST"
	saved := isolated
	t.Cleanup(func() { isolated = saved })

	isolated = true
	var r recordingTB
	Check(&r, env)
	if r.failed != "" || r.skipped != "" {
		t.Errorf("isolated: failed %q, skipped %q; want a pass", r.failed, r.skipped)
	}

	isolated = false
	r = recordingTB{}
	Check(&r, env)
	if !strings.Contains(r.failed, "netnstest.Run") || !strings.Contains(r.failed, env) {
		t.Errorf("not isolated, %s unset: failed %q, want a failure naming netnstest.Run and %s", env, r.failed, env)
	}

	t.Setenv(env, "0")
	r = recordingTB{}
	Check(&r, env)
	if r.failed != "" || !strings.Contains(r.skipped, env+"=0") {
		t.Errorf("not isolated, %s=0: failed %q, skipped %q; want a skip naming %s=0", env, r.failed, r.skipped, env)
	}
}

// TestOwnRunRefusedInTheFirstMountNamespace: these tests run without
// Options.OwnRun, so in the mount namespace of the process that started
// them; makeOwnRun must refuse to touch its mounts (the host's).
func TestOwnRunRefusedInTheFirstMountNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if OwnRun() {
		t.Fatal("OwnRun is true in tests run without Options.OwnRun")
	}
	err := makeOwnRun()
	if err == nil || !strings.Contains(err.Error(), "not in one of their own") {
		t.Fatalf("makeOwnRun in the first process's mount namespace: %v, want a refusal", err)
	}
}

package netnstest

import (
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

// Package netnstest runs a package's tests in a network namespace of their
// own, for tests only: the daemon must not import it (test files and test
// support packages may).
//
// Tests that run the agent, in process or as a child process, need it: the
// agent's first full resync deletes every link of its namespace that
// carries its alias and that it is not configured with, which in the host
// namespace would be the links of an agent running there and of other
// packages' tests running at the same time. In a namespace of their own
// the tests also get loopback ports that nobody else uses.
//
// # Using it
//
// Call Main, or Run when something must happen after the tests, from the
// package's TestMain:
//
//	func TestMain(m *testing.M) { netnstest.Main(m, "NETAGENT_E2E_ISOLATED") }
//
// and a test that calls Check, which fails when the tests do not run in a
// namespace of their own although they should (a TestMain that lost its
// call to Run):
//
//	func TestIsolated(t *testing.T) { netnstest.Check(t, "NETAGENT_E2E_ISOLATED") }
//
// Run runs the test binary a second time, with the same arguments, in a new
// network namespace (CLONE_NEWNET) whose only link, lo, it brings up; the
// first process only waits for the second and returns its exit code. So
// TestMain code before Run runs in both processes and code after it runs in
// both too, the first's after the second's: set things up lazily in the
// tests (sync.Once) and make cleanups after Run harmless when there is
// nothing to clean up.
//
// The variable named by envName tells the processes apart and lets the
// caller opt out:
//
//	unset            as root: isolate (run the tests in a child process, in a
//	                 new namespace); not root: run the tests here, in the
//	                 caller's namespace (tests that need root skip)
//	"1"              set by Run for the child: bring lo up, run the tests
//	anything else    run the tests here, in the caller's namespace
//	                 (e.g. envName=0 to watch them with tools of the host)
//
// Only the network namespace is new: the mount namespace, and so the named
// network namespaces of /var/run/netns, are the host's. Tests that create
// named namespaces must give them unique names and remove them. MainWith
// and RunWith with Options.OwnRun give the tests a mount namespace of their
// own too, with an empty /run (see Options): for tests of how named
// namespaces are made, which must see /run/netns as a freshly booted
// machine has it.
//
// Signals: SIGINT, SIGTERM and SIGQUIT sent to the first process are passed
// on to the second, so that go test's SIGQUIT on a timeout dumps the
// goroutines of the process that runs the tests. The second process gets
// SIGKILL when the first dies.
package netnstest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// isolated is set by Run in the process that runs the tests in a namespace
// of its own; ownRun when it also has a mount namespace with its own /run.
var isolated, ownRun bool

// Isolated reports whether Run moved the tests of this process into a
// network namespace of their own.
func Isolated() bool { return isolated }

// OwnRun reports whether RunWith also gave the tests of this process a
// mount namespace of their own with an empty /run (Options.OwnRun).
func OwnRun() bool { return ownRun }

// FreshRun mounts another empty tmpfs on /run for the rest of the test t,
// over the one the earlier tests used, and unmounts it when t ends: for a
// test that must see /run (e.g. /run/netns) as a freshly booted machine has
// it, whatever the tests before it did. It needs Options.OwnRun (the mounts
// are the tests' own) and skips t without it. Tests that call it must not
// run in parallel with others that use /run.
func FreshRun(t testing.TB) {
	t.Helper()
	if !ownRun {
		t.Skip("needs a mount namespace of the tests' own (netnstest.Options.OwnRun, as root)")
	}
	if err := syscall.Mount("netnstest", "/run", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		t.Fatalf("mounting an empty /run for the test: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount("/run", syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test's /run: %v", err)
		}
	})
}

// Options are what the tests get of their own besides a network namespace.
type Options struct {
	// OwnRun: a mount namespace too (CLONE_NEWNS), whose mounts are all
	// made private first (nothing mounted in it reaches the host, nor
	// anything the host mounts meanwhile), with an empty tmpfs on /run. So
	// /run/netns starts as on a freshly booted machine: no named namespaces
	// and no mount point; the named namespaces the tests make, and
	// whatever else they put under /run, are not the host's and go with
	// the process. The host's /run (e.g. /run/vpp) is out of sight.
	OwnRun bool
}

// Check fails the test unless the tests of this process run in a network
// namespace of their own: a package whose TestMain calls Run (or Main) with
// envName has a test that calls Check, so that a TestMain that stops
// isolating its tests is noticed. It skips when the tests may run in the
// caller's namespace: the process is not root, or envName opts out (set to
// anything but "1").
func Check(t testing.TB, envName string) {
	t.Helper()
	switch mode := os.Getenv(envName); {
	case isolated:
	case os.Geteuid() != 0:
		t.Skip("not root: the tests run in the caller's network namespace")
	case mode != "" && mode != "1":
		t.Skipf("%s=%s: the tests run in the caller's network namespace", envName, mode)
	default:
		t.Fatalf("the tests run in the network namespace of the caller, not in one of their own: the package's TestMain must call netnstest.Run or netnstest.Main with %q", envName)
	}
}

// Main runs the tests as Run does and exits with their exit code.
func Main(m *testing.M, envName string) {
	os.Exit(Run(m, envName))
}

// MainWith runs the tests as RunWith does and exits with their exit code.
func MainWith(m *testing.M, envName string, opts Options) {
	os.Exit(RunWith(m, envName, opts))
}

// Run runs the tests of m in a network namespace of their own when the
// process is root (see the package documentation for envName) and returns
// the exit code for os.Exit.
func Run(m *testing.M, envName string) int {
	return RunWith(m, envName, Options{})
}

// RunWith is Run with Options: what else the tests get of their own. When
// the caller opts out (envName set to anything but "1") the options are
// ignored with the isolation, and the tests run in the caller's
// namespaces.
func RunWith(m *testing.M, envName string, opts Options) int {
	switch mode := os.Getenv(envName); {
	case mode == "" && os.Geteuid() == 0:
		return runIsolated(envName, opts)
	case mode == "1":
		if opts.OwnRun {
			if err := makeOwnRun(); err != nil {
				fmt.Fprintln(os.Stderr, "netnstest:", err)
				return 1
			}
			ownRun = true
		}
		// A new namespace has only lo, down: listeners need it.
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "netnstest: ip link set lo up in the tests' network namespace: %v: %s\n", err, out)
			return 1
		}
		isolated = true
	}
	return m.Run()
}

// makeOwnRun makes every mount of the child's mount namespace private and
// mounts an empty tmpfs on /run (Options.OwnRun). It refuses to run in the
// first process's mount namespace (envName=1 set by hand): making the
// host's mounts private would cut them off from the rest of the machine.
func makeOwnRun() error {
	ours, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("the tests' mount namespace: %w", err)
	}
	parents, err := os.Readlink("/proc/" + strconv.Itoa(os.Getppid()) + "/ns/mnt")
	if err != nil {
		return fmt.Errorf("the first process's mount namespace: %w", err)
	}
	if ours == parents {
		return fmt.Errorf("the tests are in the mount namespace of the process that started them (%s), not in one of their own: not changing its mounts", ours)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts of the tests' mount namespace private: %w", err)
	}
	if err := syscall.Mount("netnstest", "/run", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mounting an empty /run for the tests: %w", err)
	}
	return nil
}

// runIsolated runs the test binary again, with the same arguments and
// envName=1, in a new network namespace (and a new mount namespace with
// opts.OwnRun), and returns its exit code.
func runIsolated(envName string, opts Options) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "netnstest: cannot find the test binary:", err)
		return 1
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), envName+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if opts.OwnRun {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNS
	}
	// Pdeathsig fires when the thread that started the child ends, not the
	// process: keep this goroutine on its thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(signals)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "netnstest: running the tests in a network namespace of their own:", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case sig := <-signals:
			_ = cmd.Process.Signal(sig)
		case err := <-exited:
			code, why := exitCode(err)
			if why != "" {
				fmt.Fprintln(os.Stderr, "netnstest:", why)
			}
			return code
		}
	}
}

// exitCode turns the result of the child's Wait into the exit code of the
// first process: the child's, or 128+n when signal n killed it; why says
// what happened when the child did not exit by itself.
func exitCode(err error) (code int, why string) {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, ""
	case !errors.As(err, &exit):
		return 1, fmt.Sprintf("waiting for the tests: %v", err)
	case exit.ExitCode() >= 0:
		return exit.ExitCode(), ""
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), fmt.Sprintf("the tests were killed by %v", ws.Signal())
	}
	return 1, fmt.Sprintf("the tests ended: %v", err)
}

package nsplugin_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	"github.com/netagent-io/netagent/tests/netnstest"
)

// isolatedEnv is the variable of netnstest.Run: set to 0 it keeps the
// tests in the caller's namespace (to watch them with the host's tools).
const isolatedEnv = "NETAGENT_LINUX_TESTS_ISOLATED"

// The main goroutine keeps the process's first thread (the one
// /proc/self/ns/net names), so that TestMain can move that thread into
// another namespace (ownNamespaceWhileFirstThreadElsewhere).
func init() { runtime.LockOSThread() }

// ownNamespaceCheck is the result of ownNamespaceWhileFirstThreadElsewhere,
// reported by TestOwnNamespaceWhileFirstThreadElsewhere.
var ownNamespaceCheck error

// TestMain runs the tests, as root, in a network namespace of their own
// (netnstest): they create links, and what they take for the agent's own
// namespace must not be the host's, where an agent may run. They also get a
// mount namespace with a /run of their own (OwnRun): the named namespaces
// (/var/run/netns) and the agent's marks (/run/netagent) they make are not
// the host's, and a test can see /run as a freshly booted machine has it.
// The tests still give their namespaces unique names and remove them (run
// with NETAGENT_LINUX_TESTS_ISOLATED=0 they are the host's). First, on the
// process's first thread, it runs ownNamespaceWhileFirstThreadElsewhere.
func TestMain(m *testing.M) {
	if os.Geteuid() == 0 {
		ownNamespaceCheck = ownNamespaceWhileFirstThreadElsewhere()
	}
	netnstest.MainWith(m, isolatedEnv, netnstest.Options{OwnRun: true})
}

// ownNamespaceWhileFirstThreadElsewhere moves the process's first thread
// into a new namespace (as a goroutine of Manager.Do or of a namespace
// creation may, running on it) and asks the Manager for the agent's own
// namespace from another goroutine meanwhile: it must get the namespace the
// Manager was made in, not the first thread's (/proc/self/ns/net).
func ownNamespaceWhileFirstThreadElsewhere() error {
	m, err := nsplugin.NewManager()
	if err != nil {
		return err
	}
	defer m.Close()
	var own syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &own); err != nil {
		return err
	}
	origin, err := netns.Get()
	if err != nil {
		return err
	}
	defer origin.Close()
	other, err := netns.New() // this thread (the first) is in it now
	if err != nil {
		return err
	}
	defer other.Close()
	got := make(chan error, 1)
	go func() {
		fd, err := m.Fd(nsplugin.Ref{}, false)
		if err != nil {
			got <- err
			return
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			got <- err
			return
		}
		if st.Ino != own.Ino || st.Dev != own.Dev {
			got <- fmt.Errorf("the agent's own namespace is namespace inode %d, the first thread's; want %d, where the Manager was made", st.Ino, own.Ino)
			return
		}
		got <- nil
	}()
	result := <-got
	if err := netns.Set(origin); err != nil {
		return errors.Join(result, fmt.Errorf("back to the namespace of the tests: %w", err))
	}
	return result
}

// TestRunsInANetworkNamespaceOfItsOwn: and, isolated, with a /run of their
// own (netnstest.Options.OwnRun), without which the tests of how named
// namespaces are made (netnstest.FreshRun) would skip.
func TestRunsInANetworkNamespaceOfItsOwn(t *testing.T) {
	netnstest.Check(t, isolatedEnv)
	if netnstest.Isolated() && !netnstest.OwnRun() {
		t.Error("the tests run without a /run of their own: TestMain must pass netnstest.Options{OwnRun: true}")
	}
}

// TestOwnNamespaceWhileFirstThreadElsewhere: see
// ownNamespaceWhileFirstThreadElsewhere.
func TestOwnNamespaceWhileFirstThreadElsewhere(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a new network namespace)")
	}
	if ownNamespaceCheck != nil {
		t.Fatal(ownNamespaceCheck)
	}
}

package nsplugin_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// needRoot skips unless the test may create namespaces.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces (CI runs as root)")
	}
}

func uniqueName(t *testing.T, prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), len(t.Name()))
}

func newManager(t *testing.T) *nsplugin.Manager {
	t.Helper()
	m, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func named(name string) nsplugin.Ref {
	return nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: name}
}

func TestNamedNamespaceIsCreatedAndRemoved(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	name := uniqueName(t, "nstest-create")
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })

	if _, err := m.Handle(named(name), false); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("handle of a missing namespace without create: %v, want os.ErrNotExist", err)
	}
	h, err := m.Handle(named(name), true)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Created(name) || !m.Exists(named(name)) {
		t.Errorf("created %v, exists %v", m.Created(name), m.Exists(named(name)))
	}
	links, err := h.LinkList()
	if err != nil || len(links) != 1 || links[0].Attrs().Name != "lo" {
		t.Fatalf("links in the new namespace: %v, %v; want lo only", links, err)
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil || !strings.Contains(string(out), name) {
		t.Errorf("ip netns list: %q, %v", out, err)
	}
	// A link made through the handle lives there, not here.
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "nst0"}, PeerName: "nst1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := netlink.LinkByName("nst0"); err == nil {
		t.Error("the veth made in the namespace is in the agent's namespace")
	}
	if out, err := exec.Command("ip", "-n", name, "link", "show", "nst0").CombinedOutput(); err != nil {
		t.Errorf("ip -n %s link show nst0: %s %v", name, out, err)
	}
	if err := h.LinkDel(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "nst0"}}); err != nil {
		t.Fatal(err)
	}

	if err := m.RemoveIfCreated(name); err != nil {
		t.Fatal(err)
	}
	if m.Exists(named(name)) {
		t.Error("namespace still exists after RemoveIfCreated")
	}
}

func TestForeignNamespaceIsNeverRemoved(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	name := uniqueName(t, "nstest-foreign")
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %s %v", out, err)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	if _, err := m.Handle(named(name), true); err != nil {
		t.Fatal(err)
	}
	if m.Created(name) {
		t.Error("a namespace made by someone else counts as the agent's")
	}
	if err := m.RemoveIfCreated(name); err != nil || !m.Exists(named(name)) {
		t.Errorf("RemoveIfCreated of a foreign namespace: %v, exists %v", err, m.Exists(named(name)))
	}
}

func TestNamespaceRecreatedIsReopened(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	name := uniqueName(t, "nstest-reopen")
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	h1, err := m.Handle(named(name), true)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", "ip netns del "+name+" && ip netns add "+name+" && ip -n "+name+" link add nsr0 type veth peer name nsr1").CombinedOutput(); err != nil {
		t.Fatalf("%s %v", out, err)
	}
	h2, err := m.Handle(named(name), true)
	if err != nil {
		t.Fatal(err)
	}
	if h1 == h2 {
		t.Error("the handle of a re-created namespace was not reopened")
	}
	if _, err := h2.LinkByName("nsr0"); err != nil {
		t.Errorf("link in the re-created namespace: %v", err)
	}
}

func TestDoRunsInsideAndComesBack(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	name := uniqueName(t, "nstest-do")
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	if _, err := m.Handle(named(name), true); err != nil {
		t.Fatal(err)
	}
	self, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var inside string
	if err := m.Do(named(name), func() error {
		var err error
		inside, err = os.Readlink("/proc/thread-self/ns/net")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if inside == self || inside == "" {
		t.Errorf("Do ran in %q, the agent's namespace is %q", inside, self)
	}
	after, _ := os.Readlink("/proc/thread-self/ns/net")
	if after != self {
		t.Errorf("the caller's thread is in %q after Do, want %q", after, self)
	}
	wantErr := errors.New("boom")
	if err := m.Do(named(name), func() error { return wantErr }); !errors.Is(err, wantErr) {
		t.Errorf("Do returned %v, want the function's error", err)
	}
}

func TestOtherReferences(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	pid := nsplugin.Ref{Type: linuxns.NetNamespace_PID, Reference: strconv.Itoa(os.Getpid())}
	fd := nsplugin.Ref{Type: linuxns.NetNamespace_FD, Reference: "/proc/self/ns/net"}
	for _, r := range []nsplugin.Ref{{}, pid, fd} {
		h, err := m.Handle(r, false)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if _, err := h.LinkByName("lo"); err != nil {
			t.Errorf("%s: lo: %v", r, err)
		}
	}
	for _, c := range []struct {
		ref  nsplugin.Ref
		want string
	}{
		{nsplugin.Ref{Type: linuxns.NetNamespace_MICROSERVICE, Reference: "vnf1"}, "container runtime"},
		{nsplugin.Ref{Type: linuxns.NetNamespace_PID, Reference: "abc"}, "not a process ID"},
		{nsplugin.Ref{Type: linuxns.NetNamespace_FD, Reference: "relative/path"}, "absolute path"},
		{nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: "../etc"}, "not a file name"},
		{nsplugin.Ref{Type: linuxns.NetNamespace_PID, Reference: "999999999"}, "no such file"},
	} {
		if _, err := m.Handle(c.ref, true); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.ref, err, c.want)
		}
	}
	if !errors.Is(nsplugin.Check(nsplugin.Ref{Type: linuxns.NetNamespace_MICROSERVICE}), nsplugin.ErrUnsupported) {
		t.Error("MICROSERVICE is not ErrUnsupported")
	}
}

// TestIsOwn: the default Ref and references that resolve to the agent's
// namespace (its PID, its namespace file, a named namespace bound to it) are
// its own; other namespaces and references that resolve to nothing are not.
func TestIsOwn(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	other := uniqueName(t, "nstest-other")
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", other).Run() })
	if _, err := m.Handle(named(other), true); err != nil {
		t.Fatal(err)
	}
	// `ip netns attach NAME PID` names the namespace of a process: here the
	// test's own.
	self := uniqueName(t, "nstest-self")
	if out, err := exec.Command("ip", "netns", "attach", self, strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
		t.Fatalf("ip netns attach %s: %v: %s", self, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", self).Run() })

	for _, c := range []struct {
		ref  nsplugin.Ref
		want bool
	}{
		{nsplugin.Ref{}, true},
		{nsplugin.Ref{Type: linuxns.NetNamespace_PID, Reference: strconv.Itoa(os.Getpid())}, true},
		{nsplugin.Ref{Type: linuxns.NetNamespace_FD, Reference: "/proc/self/ns/net"}, true},
		{named(self), true},
		{named(other), false},
		{named(uniqueName(t, "nstest-missing")), false},
		{nsplugin.Ref{Type: linuxns.NetNamespace_PID, Reference: "999999999"}, false},
		{nsplugin.Ref{Type: linuxns.NetNamespace_MICROSERVICE, Reference: "vnf1"}, false},
	} {
		if got := m.IsOwn(c.ref); got != c.want {
			t.Errorf("IsOwn(%s) = %v, want %v", c.ref, got, c.want)
		}
		// Same: the agent's namespace under this reference, as IsOwn says.
		if got := m.Same(c.ref, nsplugin.Ref{}); got != c.want {
			t.Errorf("Same(%s, the default) = %v, want %v", c.ref, got, c.want)
		}
	}
	otherFile := nsplugin.Ref{Type: linuxns.NetNamespace_FD, Reference: nsplugin.NetnsDir + "/" + other}
	missing := named(uniqueName(t, "nstest-missing"))
	for _, c := range []struct {
		a, b nsplugin.Ref
		want bool
	}{
		{named(other), otherFile, true},
		{named(other), named(self), false},
		{missing, missing, true},
		{missing, named(other), false},
	} {
		if got := m.Same(c.a, c.b); got != c.want {
			t.Errorf("Same(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestNamespaceInUseIsKept: a namespace the Manager created is not removed
// while it holds a link other than lo, or a process: RemoveIfCreated keeps
// it and says why (InUseError naming them), and removes it once nothing
// uses it.
func TestNamespaceInUseIsKept(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	name := uniqueName(t, "nstest-inuse")
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	if _, err := m.Handle(named(name), true); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "-n", name, "link", "add", "op0", "type", "veth", "peer", "name", "op1").CombinedOutput(); err != nil {
		t.Fatalf("%s %v", out, err)
	}
	var inUse *nsplugin.InUseError
	err := m.RemoveIfCreated(name)
	if !errors.As(err, &inUse) || !slices.Equal(inUse.Links, []string{"op0", "op1"}) && !slices.Equal(inUse.Links, []string{"op1", "op0"}) || len(inUse.PIDs) != 0 {
		t.Fatalf("RemoveIfCreated with the operator's links: %v, want an InUseError naming op0 and op1", err)
	}
	if !m.Exists(named(name)) || !m.Created(name) {
		t.Fatalf("after RemoveIfCreated kept it: exists %v, created %v; want both", m.Exists(named(name)), m.Created(name))
	}
	if out, err := exec.Command("ip", "-n", name, "link", "del", "op0").CombinedOutput(); err != nil {
		t.Fatalf("%s %v", out, err)
	}

	cmd, stop := startInside(t, name)
	err = m.RemoveIfCreated(name)
	if !errors.As(err, &inUse) || !slices.Equal(inUse.PIDs, []int{cmd.Process.Pid}) || len(inUse.Links) != 0 ||
		!strings.Contains(err.Error(), fmt.Sprintf("netns %s is kept: it still holds processes %d", name, cmd.Process.Pid)) {
		t.Fatalf("RemoveIfCreated with a process inside: %v, want an InUseError naming PID %d", err, cmd.Process.Pid)
	}
	stop()
	if err := m.RemoveIfCreated(name); err != nil || m.Exists(named(name)) {
		t.Errorf("RemoveIfCreated once nothing uses it: %v, exists %v", err, m.Exists(named(name)))
	}
}

// startInside starts a process in the named namespace and waits until it
// says it is inside; stop ends it and waits for it (the test's cleanup
// kills it if the test ends first).
func startInside(t *testing.T, name string) (cmd *exec.Cmd, stop func()) {
	t.Helper()
	cmd = exec.Command("ip", "netns", "exec", name, "sh", "-c", "echo inside; exec cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "inside\n" {
		t.Fatalf("the process in %s said %q, %v", name, line, err)
	}
	return cmd, func() {
		t.Helper()
		stdin.Close() // cat ends
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}

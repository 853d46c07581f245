package nsplugin_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	"github.com/netagent-io/netagent/tests/netnstest"
)

// ipNetns runs `ip netns ARGS...` and fails the test if it fails.
func ipNetns(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// listed tells whether `ip netns list` lists name.
func listed(t *testing.T, name string) bool {
	t.Helper()
	for _, line := range strings.Split(ipNetns(t, "list"), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return true
		}
	}
	return false
}

// mount is a line of /proc/self/mountinfo.
type mount struct {
	id, parent string
	point      string
	optional   []string // e.g. "shared:12"
}

func (m mount) shared() bool {
	return slices.ContainsFunc(m.optional, func(f string) bool { return strings.HasPrefix(f, "shared:") })
}

// mounts reads /proc/self/mountinfo, in mount order.
func mounts(t *testing.T) []mount {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all []mount
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		// ID parent major:minor root mount-point options [optional...] - type source super-options
		fields := strings.Fields(lines.Text())
		sep := slices.Index(fields, "-")
		if sep < 6 {
			t.Fatalf("mountinfo line %q", lines.Text())
		}
		all = append(all, mount{id: fields[0], parent: fields[1], point: fields[4], optional: fields[6:sep]})
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

// mountsOn returns the mounts on point whose parent is one of parents (so
// not those that other mounts hide: mountinfo lists those too).
func mountsOn(all []mount, point string, parents []mount) []mount {
	var on []mount
	for _, m := range all {
		if m.point == point && slices.ContainsFunc(parents, func(p mount) bool { return p.id == m.parent }) {
			on = append(on, m)
		}
	}
	return on
}

// TestNamedNamespaceIsMadeAsIproute2MakesIt: the Manager prepares the
// namespace directory as `ip netns add` does (a bind mount of it onto
// itself, shared) before it binds the namespace file, so that iproute2
// working there later (here `ip netns add`, which would otherwise mount the
// directory over the agent's namespace file and leave that one busy) and
// `ip netns del` work on the agent's namespaces once the agent is stopped.
// The test runs with an empty /run of its own (netnstest.FreshRun), where
// the directory starts as on a freshly booted machine: no mount point.
func TestNamedNamespaceIsMadeAsIproute2MakesIt(t *testing.T) {
	needRoot(t)
	netnstest.FreshRun(t)
	// /run, the one FreshRun mounted: the last mount on it.
	var run []mount
	for _, m := range mounts(t) {
		if m.point == "/run" {
			run = []mount{m}
		}
	}
	dir := "/run/netns"
	if resolved, err := filepath.EvalSymlinks(filepath.Dir(nsplugin.NetnsDir)); err != nil || resolved != "/run" {
		t.Fatalf("%s is not in /run: %q, %v", nsplugin.NetnsDir, resolved, err)
	}
	if on := mountsOn(mounts(t), dir, run); len(on) != 0 {
		t.Fatalf("%s is a mount point before the test: %v", dir, on)
	}
	name := uniqueName(t, "nstest-iproute2")
	other := uniqueName(t, "nstest-iproute2-other")
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", name).Run()
		_ = exec.Command("ip", "netns", "del", other).Run()
	})

	m, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Handle(named(name), true); err != nil {
		m.Close()
		t.Fatal(err)
	}
	on := mountsOn(mounts(t), dir, run)
	if len(on) != 1 || !on[0].shared() {
		t.Errorf("mounts on %s after the Manager made a namespace: %v, want one, shared", dir, on)
	}
	if !listed(t, name) {
		t.Errorf("ip netns list does not list %s", name)
	}

	ipNetns(t, "add", other)
	all := mounts(t)
	if after := mountsOn(all, dir, run); len(after) != 1 || len(on) == 1 && after[0].id != on[0].id {
		t.Errorf("mounts on %s after ip netns add: %v, want the one the Manager made (%v)", dir, after, on)
	}
	// The namespace file is bound once, on the directory's mount: not on
	// /run's too, hidden under the directory's mount once iproute2 made it
	// (where `ip netns del` cannot unmount it: "Device or resource busy").
	if files := mountsOn(all, filepath.Join(dir, name), append(mountsOn(all, dir, run), run...)); len(files) != 1 {
		t.Errorf("mounts on the namespace file of %s after ip netns add: %v, want 1", name, files)
	}
	m.Close() // the agent stops
	ipNetns(t, "del", name)
	if _, err := os.Lstat(filepath.Join(nsplugin.NetnsDir, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace file of %s after ip netns del: %v, want it gone", name, err)
	}
	if listed(t, name) {
		t.Errorf("ip netns list still lists %s after ip netns del", name)
	}

	// A later run does not take a namespace made again under the same
	// name for the one it made before.
	m2 := newManager(t)
	if m2.Created(name) {
		t.Errorf("a namespace deleted with ip netns del counts as the agent's")
	}
	if _, err := m2.Handle(named(name), true); err != nil {
		t.Fatal(err)
	}
	if !m2.Created(name) {
		t.Errorf("the namespace made again by the agent does not count as the agent's")
	}
	if err := m2.RemoveIfCreated(name); err != nil || m2.Exists(named(name)) {
		t.Errorf("RemoveIfCreated: %v, exists %v; want it removed", err, m2.Exists(named(name)))
	}
}

// TestNamespaceMadeInAnEarlierRunIsRemoved: a new Manager (a new run of the
// agent) knows the namespaces the earlier one made as the agent's, and
// removes one when asked and nothing uses it; a namespace made by someone
// else is not the agent's and stays.
func TestNamespaceMadeInAnEarlierRunIsRemoved(t *testing.T) {
	needRoot(t)
	ours := uniqueName(t, "nstest-earlier")
	foreign := uniqueName(t, "nstest-earlier-foreign")
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", ours).Run()
		_ = exec.Command("ip", "netns", "del", foreign).Run()
	})
	first, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Handle(named(ours), true); err != nil {
		first.Close()
		t.Fatal(err)
	}
	first.Close()
	ipNetns(t, "add", foreign)

	m := newManager(t)
	if !m.Created(ours) {
		t.Errorf("the namespace an earlier Manager made does not count as the agent's")
	}
	if m.Created(foreign) {
		t.Errorf("a namespace made with ip netns add counts as the agent's")
	}
	if err := m.RemoveIfCreated(foreign); err != nil || !m.Exists(named(foreign)) {
		t.Errorf("RemoveIfCreated of a foreign namespace: %v, exists %v; want it kept", err, m.Exists(named(foreign)))
	}
	if err := m.RemoveIfCreated(ours); err != nil || m.Exists(named(ours)) {
		t.Fatalf("RemoveIfCreated of the namespace an earlier Manager made: %v, exists %v; want it removed", err, m.Exists(named(ours)))
	}
	if listed(t, ours) {
		t.Errorf("ip netns list still lists %s", ours)
	}
	if later := newManager(t); later.Created(ours) {
		t.Errorf("a namespace the agent removed still counts as the agent's")
	}
}

// TestNamespaceMadeInAnEarlierRunInUseIsKept: as in the run that made it,
// a namespace an earlier run made is kept while it holds a link other than
// lo or a process, and removed once nothing uses it.
func TestNamespaceMadeInAnEarlierRunInUseIsKept(t *testing.T) {
	needRoot(t)
	name := uniqueName(t, "nstest-earlier-inuse")
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	first, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Handle(named(name), true); err != nil {
		first.Close()
		t.Fatal(err)
	}
	first.Close()
	if out, err := exec.Command("ip", "-n", name, "link", "add", "opx0", "type", "veth", "peer", "name", "opx1").CombinedOutput(); err != nil {
		t.Fatalf("%s %v", out, err)
	}

	m := newManager(t)
	var inUse *nsplugin.InUseError
	if err := m.RemoveIfCreated(name); !errors.As(err, &inUse) || !slices.Equal(inUse.Links, []string{"opx0", "opx1"}) && !slices.Equal(inUse.Links, []string{"opx1", "opx0"}) {
		t.Fatalf("RemoveIfCreated with an operator's links: %v, want an InUseError naming opx0 and opx1", err)
	}
	if !m.Exists(named(name)) || !m.Created(name) {
		t.Fatalf("kept: exists %v, the agent's %v; want both", m.Exists(named(name)), m.Created(name))
	}
	if out, err := exec.Command("ip", "-n", name, "link", "del", "opx0").CombinedOutput(); err != nil {
		t.Fatalf("%s %v", out, err)
	}

	cmd, stop := startInside(t, name)
	if err := m.RemoveIfCreated(name); !errors.As(err, &inUse) || !slices.Equal(inUse.PIDs, []int{cmd.Process.Pid}) {
		t.Fatalf("RemoveIfCreated with a process inside: %v, want an InUseError naming PID %d", err, cmd.Process.Pid)
	}
	stop()
	if err := m.RemoveIfCreated(name); err != nil || m.Exists(named(name)) {
		t.Errorf("RemoveIfCreated once nothing uses it: %v, exists %v; want it removed", err, m.Exists(named(name)))
	}
}

// inode returns the inode of the file of the named namespace.
func inode(t *testing.T, name string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(nsplugin.NetnsDir, name), &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestNamespaceMadeAgainByAnOperatorIsNotTheAgents: a namespace the agent
// made, deleted and made again under the same name by an operator, is not
// the agent's, neither for the Manager that made the first (which still
// holds it: the new one has another inode) nor for a later one, even when
// the new namespace file has the inode number of the agent's (the kernel
// reuses them once a namespace is freed: the cookie tells them apart), and
// is never removed.
func TestNamespaceMadeAgainByAnOperatorIsNotTheAgents(t *testing.T) {
	needRoot(t)
	held := uniqueName(t, "nstest-remade-held")
	freed := uniqueName(t, "nstest-remade-freed")
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", held).Run()
		_ = exec.Command("ip", "netns", "del", freed).Run()
	})
	m, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{held, freed} {
		if _, err := m.Handle(named(name), true); err != nil {
			m.Close()
			t.Fatal(err)
		}
	}
	ipNetns(t, "del", held)
	ipNetns(t, "add", held)
	if m.Created(held) {
		t.Errorf("the operator's namespace counts as the agent's for the Manager that made the one before")
	}
	if err := m.RemoveIfCreated(held); err != nil || !m.Exists(named(held)) {
		t.Errorf("RemoveIfCreated of the operator's namespace: %v, exists %v; want it kept", err, m.Exists(named(held)))
	}
	m.Close() // the agent stops: nothing holds its namespaces any more

	// Made again until the kernel gives the new namespace the inode number
	// of the agent's (it frees a namespace's asynchronously).
	agents := inode(t, freed)
	ipNetns(t, "del", freed)
	reused := false
	for deadline := time.Now().Add(10 * time.Second); !reused && time.Now().Before(deadline); {
		ipNetns(t, "add", freed)
		if reused = inode(t, freed) == agents; !reused {
			ipNetns(t, "del", freed)
		}
	}
	if !reused {
		t.Logf("the kernel did not reuse inode %d within 10 s: the operator's namespace is told apart by its inode", agents)
		ipNetns(t, "add", freed)
	}

	later := newManager(t)
	for _, name := range []string{held, freed} {
		if later.Created(name) {
			t.Errorf("the operator's namespace %s counts as the agent's for a later Manager", name)
		}
		if err := later.RemoveIfCreated(name); err != nil || !later.Exists(named(name)) {
			t.Errorf("RemoveIfCreated of the operator's namespace %s by a later Manager: %v, exists %v; want it kept", name, err, later.Exists(named(name)))
		}
	}
}

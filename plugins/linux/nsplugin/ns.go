// Package nsplugin gives the Linux plugins access to network namespaces: a
// netlink handle per namespace (sockets opened inside it, so no goroutine
// has to switch namespaces to configure it), and, where a namespace switch
// cannot be avoided (sysctl files), a switch on a locked OS thread that is
// never returned to the Go scheduler in a foreign namespace.
//
// A namespace is referenced as in the configuration (linux.namespace
// NetNamespace): by name (NSID: a namespace of `ip netns`, under
// /var/run/netns), by process ID (PID) or by the path of a namespace file
// (FD, e.g. /proc/1234/ns/net). Unset means the agent's own namespace.
// MICROSERVICE references (a container by its microservice label) need a
// container runtime and are not supported: they are reported as invalid.
//
// Named namespaces that do not exist are created when first used, and the
// Manager remembers which ones it created, so that RemoveIfCreated deletes
// only those, and only when nothing uses them: a namespace that holds a
// link other than lo (an operator's, made with `ip netns exec` or moved
// there) or a process is kept, and RemoveIfCreated says why
// (*InUseError). It remembers them in memory only: a namespace an earlier
// run of the agent created stays when its last interface goes (a namespace
// cannot tell who made it, and deleting one that a process or an operator
// uses would cut it off); `ip netns del NAME` removes it.
package nsplugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// Ref identifies a network namespace. The zero Ref is the agent's own.
type Ref struct {
	Type      linuxns.NetNamespace_ReferenceType
	Reference string
}

// RefOf returns the Ref of a configured namespace (nil: the agent's own).
func RefOf(ns *linuxns.NetNamespace) Ref {
	if ns == nil || ns.GetType() == linuxns.NetNamespace_UNDEFINED {
		return Ref{}
	}
	return Ref{Type: ns.GetType(), Reference: ns.GetReference()}
}

// Proto returns the configuration form of the Ref (nil for the default).
func (r Ref) Proto() *linuxns.NetNamespace {
	if r.IsDefault() {
		return nil
	}
	return &linuxns.NetNamespace{Type: r.Type, Reference: r.Reference}
}

// IsDefault tells whether r is the agent's own namespace.
func (r Ref) IsDefault() bool { return r.Type == linuxns.NetNamespace_UNDEFINED }

func (r Ref) String() string {
	switch r.Type {
	case linuxns.NetNamespace_UNDEFINED:
		return "default namespace"
	case linuxns.NetNamespace_NSID:
		return "netns " + r.Reference
	case linuxns.NetNamespace_PID:
		return "namespace of PID " + r.Reference
	case linuxns.NetNamespace_FD:
		return "namespace " + r.Reference
	default:
		return fmt.Sprintf("namespace %s %s", r.Type, r.Reference)
	}
}

// ErrUnsupported is returned for references that cannot be resolved here
// (MICROSERVICE).
var ErrUnsupported = errors.New("unsupported namespace reference")

// Check tells whether a reference can be used (without opening it).
func Check(r Ref) error {
	switch r.Type {
	case linuxns.NetNamespace_UNDEFINED:
		return nil
	case linuxns.NetNamespace_NSID:
		if r.Reference == "" || filepath.Base(r.Reference) != r.Reference || r.Reference == "." || r.Reference == ".." {
			return fmt.Errorf("netns name %q is not a file name", r.Reference)
		}
		return nil
	case linuxns.NetNamespace_PID:
		if pid, err := strconv.Atoi(r.Reference); err != nil || pid <= 0 {
			return fmt.Errorf("%q is not a process ID", r.Reference)
		}
		return nil
	case linuxns.NetNamespace_FD:
		if !filepath.IsAbs(r.Reference) {
			return fmt.Errorf("namespace file %q is not an absolute path", r.Reference)
		}
		return nil
	default:
		return fmt.Errorf("%w: %s (a container runtime is needed to find it)", ErrUnsupported, r.Type)
	}
}

// NetnsDir is where `ip netns` keeps named namespaces.
const NetnsDir = "/var/run/netns"

// path returns the file of a namespace reference.
func (r Ref) path() string {
	switch r.Type {
	case linuxns.NetNamespace_NSID:
		return filepath.Join(NetnsDir, r.Reference)
	case linuxns.NetNamespace_PID:
		return "/proc/" + r.Reference + "/ns/net"
	case linuxns.NetNamespace_FD:
		return r.Reference
	}
	return "/proc/self/ns/net"
}

// nsID is the identity of a namespace file: its device and inode, so a
// namespace deleted and created again under the same name is noticed.
type nsID struct{ dev, ino uint64 }

func statNS(path string) (nsID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nsID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nsID{}, fmt.Errorf("%s: no inode", path)
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

type entry struct {
	id     nsID
	ns     netns.NsHandle
	handle *netlink.Handle
}

// Manager opens namespaces and keeps one netlink handle per namespace. It
// is safe for concurrent use.
type Manager struct {
	mu       sync.Mutex
	origin   netns.NsHandle // the agent's own namespace
	originID nsID
	entries  map[Ref]*entry
	created  map[string]bool
}

// NewManager opens the agent's own namespace.
func NewManager() (*Manager, error) {
	origin, err := netns.GetFromPath("/proc/self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("opening the agent's network namespace: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(origin), &st); err != nil {
		origin.Close()
		return nil, fmt.Errorf("the agent's network namespace: %w", err)
	}
	return &Manager{origin: origin, originID: nsID{uint64(st.Dev), st.Ino}, entries: map[Ref]*entry{}, created: map[string]bool{}}, nil
}

// IsOwn tells whether r is the agent's own namespace: the default Ref, or
// a reference (a PID, a namespace file, a named namespace) that resolves to
// the same namespace now. A reference that does not resolve is not.
func (m *Manager) IsOwn(r Ref) bool {
	if r.IsDefault() {
		return true
	}
	if Check(r) != nil {
		return false
	}
	id, err := statNS(r.path())
	return err == nil && id == m.originID
}

// Close closes every handle.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for r, e := range m.entries {
		e.handle.Close()
		e.ns.Close()
		delete(m.entries, r)
	}
	m.origin.Close()
}

// Handle returns the netlink handle of a namespace. A named namespace that
// does not exist is created (and remembered as the agent's) when create is
// true; otherwise a missing namespace is an error wrapping os.ErrNotExist.
func (m *Manager) Handle(r Ref, create bool) (*netlink.Handle, error) {
	e, err := m.entry(r, create)
	if err != nil {
		return nil, err
	}
	return e.handle, nil
}

// Fd returns a file descriptor of the namespace, valid until the Manager
// reopens it or closes, e.g. for netlink.LinkSetNsFd.
func (m *Manager) Fd(r Ref, create bool) (int, error) {
	e, err := m.entry(r, create)
	if err != nil {
		return -1, err
	}
	return int(e.ns), nil
}

// Exists tells whether the namespace exists now.
func (m *Manager) Exists(r Ref) bool {
	if r.IsDefault() {
		return true
	}
	_, err := statNS(r.path())
	return err == nil
}

func (m *Manager) entry(r Ref, create bool) (*entry, error) {
	if err := Check(r); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.IsDefault() {
		return m.ownEntry()
	}
	path := r.path()
	id, err := statNS(path)
	if err != nil && create && r.Type == linuxns.NetNamespace_NSID && errors.Is(err, os.ErrNotExist) {
		if err = m.createNamed(r.Reference); err == nil {
			id, err = statNS(path)
		}
	}
	if err != nil {
		if e := m.entries[r]; e != nil {
			e.handle.Close()
			e.ns.Close()
			delete(m.entries, r)
		}
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	if e := m.entries[r]; e != nil {
		if e.id == id {
			return e, nil
		}
		// Deleted and created again since: reopen.
		e.handle.Close()
		e.ns.Close()
		delete(m.entries, r)
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", r, err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("netlink handle in %s: %w", r, err)
	}
	e := &entry{id: id, ns: ns, handle: h}
	m.entries[r] = e
	return e, nil
}

// ownEntry is the entry of the agent's own namespace, opened once from the
// handle NewManager took and never reopened. It is not looked up through
// /proc/self/ns/net like the others: that names the namespace of the
// process's first thread, which a goroutine of Do or createNamed may have
// moved into another namespace for a moment (any goroutine may run on that
// thread); the entry was then taken for one deleted and created again, its
// handle closed under the watcher that was using it (a data race seen in
// CI), and reopened in the wrong namespace. Under m.mu.
func (m *Manager) ownEntry() (*entry, error) {
	if e := m.entries[Ref{}]; e != nil {
		return e, nil
	}
	fd, err := syscall.Dup(int(m.origin))
	if err != nil {
		return nil, fmt.Errorf("the agent's network namespace: %w", err)
	}
	ns := netns.NsHandle(fd)
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("netlink handle in the agent's network namespace: %w", err)
	}
	e := &entry{id: m.originID, ns: ns, handle: h}
	m.entries[Ref{}] = e
	return e, nil
}

// createNamed creates /var/run/netns/<name> as `ip netns add` does. The new
// namespace is entered by the OS thread that creates it; that happens on a
// goroutine of its own whose thread is locked and, should the way back to
// the agent's namespace fail, is never unlocked: the runtime then ends the
// thread with the goroutine, so no goroutine ever runs in the wrong
// namespace.
func (m *Manager) createNamed(name string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := netns.NewNamed(name)
		if err != nil {
			if setErr := netns.Set(m.origin); setErr != nil {
				errc <- fmt.Errorf("creating netns %s: %v; returning to the agent's namespace: %v", name, err, setErr)
				return // the thread stays locked and dies with this goroutine
			}
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("creating netns %s: %w", name, err)
			return
		}
		ns.Close()
		if err := netns.Set(m.origin); err != nil {
			errc <- fmt.Errorf("returning to the agent's namespace after creating netns %s: %v", name, err)
			return // as above
		}
		runtime.UnlockOSThread()
		errc <- nil
	}()
	if err := <-errc; err != nil {
		return err
	}
	m.created[name] = true
	return nil
}

// Created tells whether the Manager created the named namespace.
func (m *Manager) Created(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.created[name]
}

// InUseError is what RemoveIfCreated returns for a namespace the Manager
// created that it keeps because something else uses it: links other than
// lo (an operator's, moved or made there), or processes.
type InUseError struct {
	Name  string
	Links []string
	PIDs  []int
}

func (e *InUseError) Error() string {
	var what []string
	if len(e.Links) > 0 {
		what = append(what, "links "+strings.Join(e.Links, ", "))
	}
	if len(e.PIDs) > 0 {
		pids := make([]string, len(e.PIDs))
		for i, pid := range e.PIDs {
			pids[i] = strconv.Itoa(pid)
		}
		what = append(what, "processes "+strings.Join(pids, ", "))
	}
	return fmt.Sprintf("netns %s is kept: it still holds %s", e.Name, strings.Join(what, " and "))
}

// RemoveIfCreated deletes a named namespace the Manager created, when the
// caller no longer uses it and nothing else does: no link but lo, no
// process (each /proc/<pid>/ns/net is compared, once per removal). A
// namespace in use is kept and an *InUseError says why; it stays the
// agent's, so a later call (when the agent uses it and stops again) may
// remove it. A namespace the Manager did not create is left alone (nil),
// as is one already gone.
func (m *Manager) RemoveIfCreated(name string) error {
	if !m.Created(name) {
		return nil
	}
	r := Ref{Type: linuxns.NetNamespace_NSID, Reference: name}
	id, err := statNS(r.path())
	if errors.Is(err, os.ErrNotExist) {
		m.forget(r)
		return nil
	}
	if err != nil {
		return fmt.Errorf("netns %s: %w", name, err)
	}
	h, err := m.Handle(r, false)
	if err != nil {
		return err
	}
	links, err := h.LinkList()
	if err != nil {
		return fmt.Errorf("links of netns %s: %w", name, err)
	}
	inUse := &InUseError{Name: name}
	for _, l := range links {
		if l.Attrs().Name != "lo" {
			inUse.Links = append(inUse.Links, l.Attrs().Name)
		}
	}
	inUse.PIDs = processesIn(id)
	if len(inUse.Links) > 0 || len(inUse.PIDs) > 0 {
		return inUse
	}
	m.forget(r)
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("deleting netns %s: %w", name, err)
	}
	return nil
}

// forget closes the handle of a named namespace and drops it from those
// the Manager created.
func (m *Manager) forget(r Ref) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entries[r]; e != nil {
		e.handle.Close()
		e.ns.Close()
		delete(m.entries, r)
	}
	delete(m.created, r.Reference)
}

// processesIn lists the processes whose network namespace is id (their
// main thread's), from /proc; processes that end meanwhile or cannot be
// read are skipped.
func processesIn(id nsID) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if got, err := statNS("/proc/" + e.Name() + "/ns/net"); err == nil && got == id {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Do runs f with its OS thread inside namespace r (for what netlink cannot
// do from outside, such as sysctl files under /proc/sys/net). f runs on a
// goroutine of its own with a locked thread; if the way back to the agent's
// namespace fails, the thread is never unlocked and ends with the goroutine.
func (m *Manager) Do(r Ref, f func() error) error {
	if r.IsDefault() {
		return f()
	}
	e, err := m.entry(r, false)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(e.ns); err != nil {
			// Still in the agent's namespace (setns failed): the thread is fine.
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering %s: %w", r, err)
			return
		}
		ferr := f()
		if err := netns.Set(m.origin); err != nil {
			errc <- fmt.Errorf("returning from %s: %v (after: %v)", r, err, ferr)
			return // the thread stays locked and dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

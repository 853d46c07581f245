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
	boot     string // the kernel's boot ID, part of each mark
	entries  map[Ref]*entry
	created  map[string]mark // named namespaces made by this Manager, as marked
}

// NewManager opens the agent's own namespace and drops the marks (MarkDir)
// of named namespaces the agent made in an earlier run that are gone, or
// from an earlier boot. It does not remove any namespace.
func NewManager() (*Manager, error) {
	boot, err := os.ReadFile(bootIDFile)
	if err != nil {
		return nil, fmt.Errorf("reading the kernel's boot ID (to mark the namespaces the agent makes): %w", err)
	}
	origin, err := netns.GetFromPath("/proc/self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("opening the agent's network namespace: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(origin), &st); err != nil {
		origin.Close()
		return nil, fmt.Errorf("the agent's network namespace: %w", err)
	}
	m := &Manager{origin: origin, originID: nsID{uint64(st.Dev), st.Ino}, boot: strings.TrimSpace(string(boot)),
		entries: map[Ref]*entry{}, created: map[string]mark{}}
	m.dropStaleMarks()
	return m, nil
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

// Same tells whether two references name the same namespace: they are
// equal, or they resolve to the same namespace now (a named namespace and
// the file or PID of the same one, say). A reference that does not resolve
// is the same as no other.
func (m *Manager) Same(a, b Ref) bool {
	if a == b {
		return true
	}
	idOf := func(r Ref) (nsID, bool) {
		if r.IsDefault() {
			return m.originID, true
		}
		if Check(r) != nil {
			return nsID{}, false
		}
		id, err := statNS(r.path())
		return id, err == nil
	}
	x, okA := idOf(a)
	y, okB := idOf(b)
	return okA && okB && x == y
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
// does not exist is created (as `ip netns add` does, and marked as the
// agent's) when create is true; otherwise a missing namespace is an error
// wrapping os.ErrNotExist.
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
	if !isNamespace(path) {
		return nil, fmt.Errorf("%s: %s is not a network namespace (an empty file left when the namespace bound onto it went: made by a process in a mount namespace of its own, as under `ip netns exec`; remove the file to let the agent make the namespace again)", r, path)
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
// process's first thread, which a goroutine of Do or bindNewNamespace may have
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
	return m.doAt(e.ns, r.String(), f)
}

// DoAt is Do in the namespace of a handle the caller holds (one it keeps
// while the name may be given to another namespace).
func (m *Manager) DoAt(h netns.NsHandle, f func() error) error {
	return m.doAt(h, "the namespace of handle "+strconv.Itoa(int(h)), f)
}

func (m *Manager) doAt(h netns.NsHandle, what string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(h); err != nil {
			// Still in the agent's namespace (setns failed): the thread is fine.
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering %s: %w", what, err)
			return
		}
		ferr := f()
		if err := netns.Set(m.origin); err != nil {
			errc <- fmt.Errorf("returning from %s: %v (after: %v)", what, err, ferr)
			return // the thread stays locked and dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

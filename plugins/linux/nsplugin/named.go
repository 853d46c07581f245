package nsplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// NetnsDir is where `ip netns` keeps named namespaces.
const NetnsDir = "/var/run/netns"

// MarkDir is where the Manager marks the named namespaces it makes as the
// agent's (see the package documentation).
const MarkDir = "/run/netagent/netns"

// bootIDFile names the boot the marks were made in.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// mark identifies a named namespace the agent made: the content of its
// file in MarkDir.
type mark struct {
	Boot string `json:"boot"` // the kernel's boot ID when it was made
	Dev  uint64 `json:"dev"`  // device and inode of the namespace file
	Ino  uint64 `json:"ino"`
	// Cookie is the namespace's SO_NETNS_COOKIE, 0 where the kernel has
	// none (before 5.14).
	Cookie uint64 `json:"cookie,omitempty"`
}

// createNamed makes the named namespace as `ip netns add` does (see the
// package documentation) and marks it as the agent's. A name made
// meanwhile by someone else is left to them (nil, not marked). Under m.mu.
func (m *Manager) createNamed(name string) error {
	if err := prepareNetnsDir(); err != nil {
		return err
	}
	path := filepath.Join(NetnsDir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the file of netns %s: %w", name, err)
	}
	f.Close()
	cookie, err := m.bindNewNamespace(path)
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("creating netns %s: %w", name, err)
	}
	id, err := statNS(path)
	if err == nil {
		mk := mark{Boot: m.boot, Dev: id.dev, Ino: id.ino, Cookie: cookie}
		if err = writeMark(name, mk); err == nil {
			m.created[name] = mk
			return nil
		}
	}
	if rmErr := deleteNamed(name); rmErr != nil {
		return fmt.Errorf("netns %s: marking it as the agent's: %w; removing it again: %v", name, err, rmErr)
	}
	return fmt.Errorf("netns %s: marking it as the agent's: %w (it was removed again)", name, err)
}

// prepareNetnsDir makes NetnsDir and makes it a shared mount point, as
// iproute2 does before it binds a namespace file there (the propagation
// lets a namespace file unmounted in one mount namespace go in the others
// too): under an exclusive flock of the directory (iproute2's too, so that
// concurrent preparations do not stack mounts; without the lock it goes on,
// as iproute2 does), it is made shared (MS_SHARED|MS_REC); if it is not a
// mount point (EINVAL), it is bind-mounted onto itself (MS_BIND|MS_REC)
// first.
func prepareNetnsDir() error {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", NetnsDir, err)
	}
	unlock, _ := flock(NetnsDir)
	defer unlock()
	for bound := false; ; bound = true {
		err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("making %s a shared mount: %w", NetnsDir, err)
		}
		if err := unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s onto itself: %w", NetnsDir, err)
		}
	}
}

// flock takes an exclusive flock of the directory dir; unlock releases it
// (and is a no-op when the lock could not be taken).
func flock(dir string) (unlock func(), err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() {}, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		unix.Close(fd)
		return func() {}, err
	}
	return func() {
		_ = unix.Flock(fd, unix.LOCK_UN)
		unix.Close(fd)
	}, nil
}

// bindNewNamespace makes a new network namespace and binds it onto the
// empty file path, and returns its cookie. The namespace is made by a
// thread of a goroutine of its own, locked to it, which goes back to the
// agent's namespace after; should that fail, the thread is never unlocked
// and the runtime ends it with the goroutine, so no goroutine ever runs in
// the wrong namespace.
func (m *Manager) bindNewNamespace(path string) (uint64, error) {
	type result struct {
		cookie uint64
		err    error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // still in the agent's namespace
			done <- result{err: fmt.Errorf("unshare: %w", err)}
			return
		}
		cookie, err := currentCookie()
		if err == nil {
			self := "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/ns/net"
			if err = unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
				err = fmt.Errorf("bind-mounting %s onto %s: %w", self, path, err)
			}
		}
		if setErr := netns.Set(m.origin); setErr != nil {
			if err == nil {
				_ = unix.Unmount(path, unix.MNT_DETACH)
			}
			done <- result{err: errors.Join(err, fmt.Errorf("returning to the agent's namespace: %w", setErr))}
			return // the thread stays locked and dies with this goroutine
		}
		runtime.UnlockOSThread()
		done <- result{cookie, err}
	}()
	r := <-done
	return r.cookie, r.err
}

// currentCookie returns the cookie of the calling thread's network
// namespace (SO_NETNS_COOKIE of a socket made there), 0 where the kernel
// has none.
func currentCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("a socket to read the namespace cookie: %w", err)
	}
	defer unix.Close(fd)
	cookie, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if errors.Is(err, unix.ENOPROTOOPT) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the namespace cookie: %w", err)
	}
	return cookie, nil
}

// deleteNamed removes the named namespace as `ip netns del` does: the
// namespace file is unmounted (lazily; not being a mount point is fine)
// and unlinked. One already gone is fine.
func deleteNamed(name string) error {
	path := filepath.Join(NetnsDir, name)
	_ = unix.Unmount(path, unix.MNT_DETACH)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the file of netns %s: %w", name, err)
	}
	return nil
}

// writeMark records mk as the mark of the named namespace, under the lock
// of MarkDir.
func writeMark(name string, mk mark) error {
	if err := os.MkdirAll(MarkDir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", MarkDir, err)
	}
	data, err := json.Marshal(mk)
	if err != nil {
		return err
	}
	unlock, err := flock(MarkDir)
	if err != nil {
		return fmt.Errorf("locking %s: %w", MarkDir, err)
	}
	defer unlock()
	return os.WriteFile(filepath.Join(MarkDir, name), append(data, '\n'), 0o600)
}

// readMark reads the mark of the named namespace; ok is false when there
// is none, or none that can be read as a mark (it proves nothing). Under
// the lock of MarkDir.
func readMark(name string) (mk mark, ok bool) {
	data, err := os.ReadFile(filepath.Join(MarkDir, name))
	if err != nil || json.Unmarshal(data, &mk) != nil || mk.Boot == "" {
		return mark{}, false
	}
	return mk, true
}

// removeMark drops the mark of the named namespace (none is fine). Under
// the lock of MarkDir.
func removeMark(name string) error {
	if err := os.Remove(filepath.Join(MarkDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the mark of netns %s: %w", name, err)
	}
	return nil
}

// dropStaleMarks drops the marks in MarkDir whose namespace is gone, is
// another file now, or that are from another boot, or are not marks.
// Those that need entering a namespace to be told stale (the cookie) are
// left to owns. Best effort: a mark it cannot drop stays stale.
func (m *Manager) dropStaleMarks() {
	unlock, err := flock(MarkDir)
	if err != nil {
		return // no marks (no directory), or none to be touched
	}
	defer unlock()
	entries, err := os.ReadDir(MarkDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		mk, ok := readMark(name)
		path := filepath.Join(NetnsDir, name)
		if ok && mk.Boot == m.boot {
			if id, err := statNS(path); err == nil && id == (nsID{mk.Dev, mk.Ino}) {
				continue
			}
			if emptyNonNamespace(path) {
				// The agent made it in a mount namespace of its own (run
				// with `ip netns exec`, or a private /run): the bind mount
				// went with it, leaving the empty file, which would be
				// taken for the namespace. The name is free again.
				_ = os.Remove(path)
			}
		}
		_ = removeMark(name)
	}
}

// owns tells whether the named namespace is the agent's: the Manager made
// it, or an earlier one did, and its mark (this Manager's, else MarkDir's)
// matches it now. A mark that does not match (the namespace is gone or is
// another one) is dropped. An error means it cannot tell (the cookie could
// not be read). It holds neither m.mu nor the lock of MarkDir while it
// waits for the other (createNamed takes the lock under m.mu).
func (m *Manager) owns(name string) (bool, error) {
	r := Ref{Type: linuxns.NetNamespace_NSID, Reference: name}
	if Check(r) != nil {
		return false, nil
	}
	m.mu.Lock()
	mk, ok := m.created[name]
	m.mu.Unlock()
	if !ok {
		if mk, ok = lockedReadMark(name); !ok {
			return false, nil
		}
	}
	id, err := statNS(r.path())
	matches := err == nil && mk.Boot == m.boot && id == (nsID{mk.Dev, mk.Ino})
	if matches && mk.Cookie != 0 {
		var cookie uint64
		if err := m.Do(r, func() (err error) { cookie, err = currentCookie(); return err }); err != nil {
			return false, fmt.Errorf("netns %s: telling whether it is the one the agent made: %w", name, err)
		}
		matches = cookie == mk.Cookie
	}
	m.mu.Lock()
	if matches {
		m.created[name] = mk
	} else if m.created[name] == mk {
		delete(m.created, name)
	}
	m.mu.Unlock()
	if !matches {
		dropMarkIf(name, mk)
	}
	return matches, nil
}

// lockedReadMark is readMark under the lock of MarkDir.
func lockedReadMark(name string) (mark, bool) {
	unlock, err := flock(MarkDir)
	if err != nil {
		return mark{}, false // no MarkDir: no marks
	}
	defer unlock()
	return readMark(name)
}

// dropMarkIf drops the mark of the named namespace if it is still stale,
// the one found not to match: not one written meanwhile for a namespace
// made again under the name. Best effort: a stale mark that stays is never
// taken for the agent's.
func dropMarkIf(name string, stale mark) {
	unlock, err := flock(MarkDir)
	if err != nil {
		return
	}
	defer unlock()
	if mk, ok := readMark(name); ok && mk == stale {
		_ = removeMark(name)
	}
}

// Created tells whether the named namespace is the agent's: made by this
// Manager or an earlier one (an earlier run of the agent), and not deleted
// and made again by someone else since.
func (m *Manager) Created(name string) bool {
	own, _ := m.owns(name)
	return own
}

// InUseError is what RemoveIfCreated returns for a namespace the agent
// made that it keeps because something else uses it: links other than lo
// (an operator's, moved or made there), or processes.
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

// RemoveIfCreated deletes a named namespace that is the agent's (Created:
// made by this Manager or, marked, by an earlier run), when the caller no
// longer uses it and nothing else does: no link but lo, no process (each
// /proc/<pid>/ns/net is compared, once per removal). A namespace in use is
// kept and an *InUseError says why; it stays the agent's, so a later call
// (when the agent uses it and stops again) may remove it. A namespace that
// is not the agent's is left alone (nil), as is one already gone. The
// namespace is removed as `ip netns del` does, then its mark.
func (m *Manager) RemoveIfCreated(name string) error {
	own, err := m.owns(name)
	if err != nil || !own {
		return err
	}
	r := Ref{Type: linuxns.NetNamespace_NSID, Reference: name}
	id, err := statNS(r.path())
	if errors.Is(err, fs.ErrNotExist) {
		m.forget(r) // gone meanwhile
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
	if err := deleteNamed(name); err != nil {
		return err
	}
	unlock, err := flock(MarkDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no marks at all (removed by hand)
	}
	if err != nil {
		return fmt.Errorf("netns %s was removed; its mark stays (stale): locking %s: %w", name, MarkDir, err)
	}
	defer unlock()
	return removeMark(name)
}

// forget closes the handle of a named namespace and drops it from those
// the Manager made.
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

// isNamespace tells whether path is a namespace (a file of the nsfs
// filesystem: /proc/PID/ns/net, or a bind mount of one).
func isNamespace(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
}

// emptyNonNamespace tells whether path is an empty regular file and no
// namespace: the file `ip netns add` (or the agent) binds a namespace onto,
// with nothing bound.
func emptyNonNamespace(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0 && !isNamespace(path)
}

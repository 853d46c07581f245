package nsplugin

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// setBoot rewrites the boot ID in the mark of the named namespace.
func setBoot(t *testing.T, name, boot string) {
	t.Helper()
	path := filepath.Join(MarkDir, name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var mk mark
	if err := json.Unmarshal(data, &mk); err != nil {
		t.Fatalf("the mark of %s: %v: %s", name, err, data)
	}
	mk.Boot = boot
	if data, err = json.Marshal(mk); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMarksOfAnotherBootAreNotTheAgents: a mark made in another boot of
// the machine (where /run is not a tmpfs, marks outlive a reboot) does not
// make a namespace the agent's, whether a Manager reads it after it was
// made (Created drops it) or when it starts (NewManager drops it); nor does
// a file in MarkDir that is not a mark. The namespace is never removed.
func TestMarksOfAnotherBootAreNotTheAgents(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	seen, started := "nstest-boot-seen-"+strconv.Itoa(os.Getpid()), "nstest-boot-started-"+strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", seen).Run()
		_ = exec.Command("ip", "netns", "del", started).Run()
	})
	first, err := NewManager()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{seen, started} {
		if _, err := first.Handle(Ref{Type: linuxns.NetNamespace_NSID, Reference: name}, true); err != nil {
			first.Close()
			t.Fatal(err)
		}
	}
	first.Close()
	if fi, err := os.Stat(MarkDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v; want a directory only root reads", MarkDir, fi, err)
	}

	running, err := NewManager() // reads the marks as they are
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	setBoot(t, seen, "another-boot")
	setBoot(t, started, "another-boot")
	notAMark := filepath.Join(MarkDir, "nstest-not-a-mark-"+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(notAMark, []byte("agent's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if running.Created(seen) {
		t.Errorf("a namespace marked in another boot counts as the agent's")
	}
	if _, err := os.Stat(filepath.Join(MarkDir, seen)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the mark of another boot stays after Created: %v", err)
	}

	later, err := NewManager()
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	for _, path := range []string{filepath.Join(MarkDir, started), notAMark} {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s stays after NewManager: %v; want it dropped", path, err)
		}
	}
	for _, name := range []string{seen, started} {
		if later.Created(name) {
			t.Errorf("%s counts as the agent's", name)
		}
		if err := later.RemoveIfCreated(name); err != nil || !later.Exists(Ref{Type: linuxns.NetNamespace_NSID, Reference: name}) {
			t.Errorf("RemoveIfCreated(%s): %v; want it kept", name, err)
		}
	}
}

// A namespace the agent made in a mount namespace of its own (run with
// `ip netns exec`) leaves an empty file in NetnsDir when that agent ends:
// the next Manager takes it for the agent's leftover (its mark, this boot)
// and removes it, so the namespace is made again. An empty file that is
// not the agent's is refused with an error that says what it is.
func TestEmptyNamespaceFileLeftByTheAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	ours, foreign := "nstest-empty-ours-"+strconv.Itoa(os.Getpid()), "nstest-empty-foreign-"+strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", ours).Run()
		_ = os.Remove(filepath.Join(NetnsDir, ours))
		_ = os.Remove(filepath.Join(NetnsDir, foreign))
		_ = removeMark(ours)
	})
	first, err := NewManager()
	if err != nil {
		t.Fatal(err)
	}
	boot := first.boot
	first.Close()
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ours, foreign} {
		if err := os.WriteFile(filepath.Join(NetnsDir, name), nil, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	// The mark an agent wrote for the namespace it bound there (device and
	// inode of the nsfs file, which the empty file does not have).
	if err := writeMark(ours, mark{Boot: boot, Dev: 4, Ino: 4026532999}); err != nil {
		t.Fatal(err)
	}

	m, err := NewManager()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := os.Stat(filepath.Join(NetnsDir, ours)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the agent's empty file stays after NewManager: %v", err)
	}
	if _, err := m.Handle(Ref{Type: linuxns.NetNamespace_NSID, Reference: ours}, true); err != nil {
		t.Fatalf("making %s again: %v", ours, err)
	}
	if !isNamespace(filepath.Join(NetnsDir, ours)) || !m.Created(ours) {
		t.Errorf("%s: namespace %v, the agent's %v; want both", ours, isNamespace(filepath.Join(NetnsDir, ours)), m.Created(ours))
	}

	_, err = m.Handle(Ref{Type: linuxns.NetNamespace_NSID, Reference: foreign}, true)
	if err == nil || !strings.Contains(err.Error(), "is not a network namespace") || !strings.Contains(err.Error(), "ip netns exec") {
		t.Errorf("an empty file not the agent's: %v, want an error saying it is no namespace", err)
	}
	if _, err := os.Stat(filepath.Join(NetnsDir, foreign)); err != nil {
		t.Errorf("the foreign empty file was touched: %v", err)
	}
}

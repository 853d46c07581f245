package vpprun

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needDir skips a test without a VPP build folder.
func needDir(t *testing.T) string {
	t.Helper()
	dir := Dir()
	if dir == "" {
		t.Skipf("no real VPP: %s is not set (make test sets it to ../shared/vpp when that folder exists)", DirEnv)
	}
	if os.Geteuid() != 0 {
		t.Skip("starting VPP needs root")
	}
	return dir
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil {
		return false
	}
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err == nil && !strings.Contains(string(st), ") Z ")
}

// TestStartRestartStop: a VPP answers on its CLI, a restart gives a new
// process with an empty dataplane, Stop ends it and removes the run
// directory.
func TestStartRestartStop(t *testing.T) {
	dir := needDir(t)
	v, err := Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = v.Stop() }()
	out, err := v.CLI("show", "version")
	if err != nil || !strings.Contains(out, "vpp v25.10") {
		t.Fatalf("show version: %q %v, want vpp v25.10", out, err)
	}
	if _, err := v.CLI("create", "loopback", "interface"); err != nil {
		t.Fatal(err)
	}
	first := v.PID()
	if err := v.Restart(); err != nil {
		t.Fatal(err)
	}
	if v.PID() == first || alive(first) {
		t.Fatalf("restart kept pid %d (now %d)", first, v.PID())
	}
	out, err = v.CLI("show", "interface")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "loop0") || !strings.Contains(out, "local0") {
		t.Fatalf("after a restart VPP has:\n%s\nwant only local0", out)
	}
	pid := v.PID()
	if err := v.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("VPP pid %d still runs after Stop", pid)
	}
	if _, err := os.Stat(v.RunDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("run directory %s left: %v", v.RunDir, err)
	}
	if err := v.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestWatchdogStopsVPPOfDeadProcess: a test process that dies without
// stopping its VPP (SIGKILL) does not leave it running.
func TestWatchdogStopsVPPOfDeadProcess(t *testing.T) {
	dir := needDir(t)
	if os.Getenv("VPPRUN_CHILD") == "1" {
		v, err := Start(dir, os.Getenv("VPPRUN_RUNDIR"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v.RunDir, "child-ready"), []byte(strconv.Itoa(v.PID())), 0o644); err != nil {
			t.Fatal(err)
		}
		select {} // until killed
	}
	runDir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchdogStopsVPPOfDeadProcess$")
	cmd.Env = append(os.Environ(), "VPPRUN_CHILD=1", "VPPRUN_RUNDIR="+runDir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(runDir, "child-ready")
	var pidText []byte
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		if pidText, err = os.ReadFile(ready); err == nil && len(pidText) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the child did not start its VPP within 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid, err := strconv.Atoi(string(pidText))
	if err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Fatalf("VPP pid %d of the child is not running", pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline = time.Now().Add(20 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = exec.Command(filepath.Join(dir, "stop.sh"), runDir).Run()
			t.Fatalf("VPP pid %d still runs 20 s after its test process died", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStartErrors: a folder without start.sh is named.
func TestStartErrors(t *testing.T) {
	_, err := Start(t.TempDir(), "")
	if err == nil || !strings.Contains(err.Error(), "no VPP build at") {
		t.Fatalf("Start in an empty folder: %v, want 'no VPP build at'", err)
	}
}

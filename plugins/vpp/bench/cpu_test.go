package vppbench_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// VPP's own CPU time during a timed transaction (vpp-cpu-s/op) tells how
// much of the transaction's time VPP itself was busy: the part no agent can
// take away. It is read from the kernel's per-thread accounting
// (/proc/PID/task/*/schedstat: nanoseconds on a CPU), so it needs VPP's
// process in this PID namespace: the tests' own VPP, or the user's when
// the PID its control ping reports is a VPP here. vppsim runs inside the
// test process and has none.

// vppPID is the PID of the real VPP whose CPU time can be read here, or 0
// (with the reason) when there is none.
func (e *benchEnv) vppPID() (int, string) {
	switch {
	case e.vpp.Sim != nil:
		return 0, "vppsim runs in the test process"
	case e.vpp.Own != nil:
		return e.vpp.Own.PID(), ""
	}
	pid := int(e.vpp.M.PID())
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || filepath.Base(exe) != "vpp" {
		return 0, fmt.Sprintf("VPP's PID %d is not a vpp process in this PID namespace", pid)
	}
	return pid, ""
}

// processCPU is the CPU time every thread of process pid has used so far
// (a thread that ended is not counted: VPP's threads last as long as it).
func processCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil {
		return 0, err
	}
	if len(tasks) == 0 {
		return 0, fmt.Errorf("process %d: no threads in /proc (not running, or not in this PID namespace)", pid)
	}
	var total time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				continue // a thread that ended meanwhile
			}
			return 0, err
		}
		ns, err := parseSchedstat(string(b))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", task, err)
		}
		total += ns
	}
	return total, nil
}

// parseSchedstat reads the first field of a schedstat line: the
// nanoseconds the thread ran ("<run ns> <wait ns> <timeslices>").
func parseSchedstat(line string) (time.Duration, error) {
	fields := strings.Fields(line)
	if len(fields) != 3 {
		return 0, fmt.Errorf("schedstat %q: want 3 fields, have %d", line, len(fields))
	}
	ns, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("schedstat %q: run time %q is not a count of nanoseconds", line, fields[0])
	}
	return time.Duration(ns), nil
}

// rusageCPU is the CPU time of the whole test process as getrusage counts
// it: the reference processCPU is checked against.
func rusageCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestProcessCPU: the CPU time processCPU reads for this process agrees
// with getrusage's over a stretch of work on several threads (reading the
// main thread alone would see about half of it).
func TestProcessCPU(t *testing.T) {
	pid := os.Getpid()
	s0, err := processCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	r0 := rusageCPU(t)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			x := 1
			for {
				select {
				case <-done:
					return
				default:
				}
				for i := range 100000 {
					x = x*31 + i
				}
			}
		})
	}
	// Until the process has used 200 ms more CPU (bounded: 10 s).
	for deadline := time.Now().Add(10 * time.Second); rusageCPU(t)-r0 < 200*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatal("the busy goroutines did not use 200 ms of CPU in 10 s")
		}
		x := 0
		for i := range 1000000 {
			x += i
		}
		_ = x
	}
	close(done)
	wg.Wait()
	r1 := rusageCPU(t)
	s1, err := processCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	ds, dr := s1-s0, r1-r0
	if diff := ds - dr; diff < -dr/10-5*time.Millisecond || diff > dr/10+5*time.Millisecond {
		t.Fatalf("processCPU rose by %v, getrusage by %v: more than 10%% + 5 ms apart", ds, dr)
	}
}

func TestProcessCPUBad(t *testing.T) {
	// Above the kernel's largest PID (pid_max is at most 2^22).
	if _, err := processCPU(1<<22 + 1); err == nil || !strings.Contains(err.Error(), "process 4194305") {
		t.Fatalf("processCPU of a PID that cannot exist: %v, want an error naming it", err)
	}
	for _, line := range []string{"", "12 34", "12 34 56 78", "x 1 2", "-5 1 2", "1.5 1 2"} {
		if _, err := parseSchedstat(line); err == nil {
			t.Errorf("parseSchedstat(%q): no error", line)
		}
	}
	if d, err := parseSchedstat("4038476311 135350046 26776\n"); err != nil || d != 4038476311 {
		t.Fatalf("parseSchedstat of a real line: %v, %v", d, err)
	}
}

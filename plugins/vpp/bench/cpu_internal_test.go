package vppbench_test

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

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

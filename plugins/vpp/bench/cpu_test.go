package vppbench_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// (threads that ended are not counted: VPP's live for its lifetime).
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
			if os.IsNotExist(err) {
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

package kvscheduler_test

import (
	"runtime"
	"time"
)

// stuckAfter is how long a call into the scheduler may take before a test
// calls it a deadlock.
const stuckAfter = 30 * time.Second

// mustReturn runs f and, if it does not return within stuckAfter, calls
// onStuck and fails the test with every goroutine's stack: a deadlock must
// fail loudly, not hang CI.
func mustReturn(t fatalHelper, what string, onStuck func(), f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(stuckAfter):
		onStuck()
		t.Fatalf("%s: no return after %v, deadlock?\n%s", what, stuckAfter, allStacks())
	}
}

// fatalHelper is what mustReturn needs of *testing.T or *rapid.T.
type fatalHelper interface {
	Helper()
	Fatalf(format string, args ...any)
}

// allStacks returns the stacks of every goroutine.
func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

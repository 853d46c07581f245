package kvscheduler_test

import (
	"context"
	"runtime"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// The test helpers (env.commit and the like) take a context, which may carry
// the transaction options they commit with: withOpts adds options, optsOf
// reads them back.

type optsKey struct{}

// withOpts returns ctx carrying o merged into the options ctx already
// carries (set fields of o win).
func withOpts(ctx context.Context, o api.TxnOptions) context.Context {
	m := optsOf(ctx)
	if o.Resync != api.NotResync {
		m.Resync = o.Resync
	}
	m.Verbose = m.Verbose || o.Verbose
	if o.Retry != nil {
		m.Retry = o.Retry
	}
	m.Revert = m.Revert || o.Revert
	m.Verify = m.Verify || o.Verify
	if o.Description != "" {
		m.Description = o.Description
	}
	m.DryRun = m.DryRun || o.DryRun
	m.NonBlocking = m.NonBlocking || o.NonBlocking
	return context.WithValue(ctx, optsKey{}, m)
}

// optsOf returns the options withOpts put into ctx (zero: none).
func optsOf(ctx context.Context) api.TxnOptions {
	o, _ := ctx.Value(optsKey{}).(api.TxnOptions)
	return o
}

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

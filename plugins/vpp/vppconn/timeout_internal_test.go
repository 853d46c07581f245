package vppconn

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A call that runs out of time says it had the call timeout, however long
// after CallContext its request went out; under a sooner deadline of the
// caller's, what was left of it.
func TestCallTimeoutNamesTheTimeItHad(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ctx, cancel := withCallBudget(context.Background(), timeout)
	defer cancel()
	sentLate := time.Now().Add(40 * time.Millisecond) // the request went out 40 ms after CallContext
	var te *CallTimeoutError
	if err := callTimeout(ctx, "create_loopback", sentLate, context.DeadlineExceeded); !errors.As(err, &te) || te.Timeout != timeout {
		t.Errorf("error %v, want a CallTimeoutError of %v", err, timeout)
	}

	parent, cancelParent := context.WithTimeout(context.Background(), time.Hour)
	defer cancelParent()
	sooner, cancelSooner := context.WithDeadline(parent, time.Now().Add(100*time.Millisecond))
	defer cancelSooner()
	ctx, cancel = withCallBudget(sooner, timeout)
	defer cancel()
	err := callTimeout(ctx, "create_loopback", time.Now(), context.DeadlineExceeded)
	if !errors.As(err, &te) || te.Timeout > 100*time.Millisecond || te.Timeout < 50*time.Millisecond {
		t.Errorf("under a deadline 100 ms away: %v, want a CallTimeoutError of about 100ms", err)
	}

	// A context of the caller's own: the time from the send to its deadline.
	own, cancelOwn := context.WithTimeout(context.Background(), timeout)
	defer cancelOwn()
	if err := callTimeout(own, "create_loopback", time.Now(), context.DeadlineExceeded); !errors.As(err, &te) || te.Timeout > timeout {
		t.Errorf("a context of the caller's: %v", err)
	}
	if err := callTimeout(ctx, "create_loopback", time.Now(), errors.New("other")); errors.As(err, &te) {
		t.Errorf("another error became %v", err)
	}
}

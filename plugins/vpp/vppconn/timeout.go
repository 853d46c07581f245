package vppconn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// CallTimeoutError: VPP did not reply to a request before the call's
// deadline (Options.CallTimeout, through CallContext). It is retriable, but
// VPP may still carry the request out after the call gave up: whoever
// retries must expect the request to have been done (the scheduler refreshes
// a failed value before retrying it). The reply that comes late is dropped
// (see droppedReply). It wraps context.DeadlineExceeded, which is what the
// call got from GoVPP.
type CallTimeoutError struct {
	// Message is the request VPP did not answer (e.g. "ip_route_add_del";
	// for a dump, the dump request).
	Message string
	// Timeout is the time the call had.
	Timeout time.Duration
}

func (e *CallTimeoutError) Error() string {
	// Callers prefix their errors with the message and the item; this names
	// the cause only.
	return fmt.Sprintf("no reply from VPP within %v (the call timeout)", e.Timeout)
}

func (e *CallTimeoutError) Unwrap() error { return context.DeadlineExceeded }

type callBudgetKey struct{}

// withCallBudget is CallContext: ctx with a timeout, remembering the time
// the call was given (timeout, or what is left of ctx's deadline when that
// comes sooner) for its *CallTimeoutError. Measured from the send, the
// budget would fall short of the timeout by the time spent between
// CallContext and the send (a loaded machine: several milliseconds).
func withCallBudget(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	budget := timeout
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return context.WithValue(ctx, callBudgetKey{}, budget), cancel
}

// callTimeout turns the context error of a call that ran out of time into a
// *CallTimeoutError; other errors are returned as they are. start is when the
// request was sent. The time the call had is CallContext's budget, else
// (a context of the caller's own) the time from the send to the deadline.
func callTimeout(ctx context.Context, msg string, start time.Time, err error) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	budget, ok := ctx.Value(callBudgetKey{}).(time.Duration)
	if !ok {
		budget = time.Since(start)
		if deadline, ok := ctx.Deadline(); ok {
			budget = deadline.Sub(start)
		}
	}
	return &CallTimeoutError{Message: msg, Timeout: budget.Round(time.Millisecond)}
}

// govppDroppedReply is how GoVPP's core reports a message whose request
// channel is gone: "Channel ID not known, ignoring the message: %T %+v".
const govppDroppedReply = "Channel ID not known, ignoring the message"

// droppedReply recognises GoVPP's log of a reply (or dump detail) that came
// after its call had ended, and returns the reply's Go type. Every call has
// its own channel (a GoVPP stream) whose ID is not reused soon (IDs are
// handed out round-robin), so such a reply reaches no other call: it is
// dropped. That is the expected end of a call that timed out (or was
// cancelled), already reported by its error, so the Manager logs it at debug
// level: GoVPP logs each one as an error with the whole message, one per
// detail of a late dump.
func droppedReply(logMessage string) (replyType string, ok bool) {
	rest, found := strings.CutPrefix(logMessage, govppDroppedReply)
	if !found {
		return "", false
	}
	rest = strings.TrimPrefix(rest, ": ")
	replyType, _, _ = strings.Cut(rest, " ")
	return replyType, true
}

package api

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

var (
	// ErrTxnQueueFull: a non-blocking commit found the transaction queue full.
	ErrTxnQueueFull = errors.New("transaction queue is full")
	// ErrClosed: the scheduler was closed.
	ErrClosed = errors.New("scheduler is closed")
	// ErrRevertNotSupportedWithResync: TxnOptions.Revert with Resync (the
	// *OptionError of Commit matches it with errors.Is).
	ErrRevertNotSupportedWithResync = errors.New("revert is not supported with resync")
	// ErrNilKey: an empty key was given.
	ErrNilKey = errors.New("empty key")
	// ErrUnknownDescriptor: no descriptor of that name is registered.
	ErrUnknownDescriptor = errors.New("unknown descriptor")
	// ErrCommitInCallback: Commit was given the context of a descriptor
	// callback; the callback would wait for itself. Use RequestReconcile.
	ErrCommitInCallback = errors.New("commit from inside a descriptor callback (a callback asks for follow-up work with api.RequestReconcile)")
	// ErrStaleRevision: a transaction with TxnOptions.ExpectedRevision was
	// refused because the state changed since that revision (the
	// *RevisionError matches it with errors.Is).
	ErrStaleRevision = errors.New("the state changed since the revision the transaction was planned against")
	// ErrFutureRevision: a transaction with TxnOptions.ExpectedRevision was
	// refused because the scheduler has not reached that revision (a
	// revision of another agent, or of this one before it restarted).
	ErrFutureRevision = errors.New("the revision the transaction was planned against is ahead of the current one")
)

// RevisionError is why a transaction with TxnOptions.ExpectedRevision was
// refused; nothing of it was applied. It matches ErrStaleRevision when the
// state moved on since Expected, ErrFutureRevision when Expected is ahead of
// Current. Commit returns it as the TxnInitError of a *TransactionError.
type RevisionError struct {
	// Expected is the revision the transaction was planned against,
	// Current the scheduler's when the transaction was to run.
	Expected, Current uint64
	// ChangedBy is, for a stale revision, the transaction that moved the
	// revision past Expected (to Expected+1), or, when its record is no
	// longer kept, the last transaction that changed the revision
	// (ChangedBy.Revision says which). Nil for a revision in the future.
	ChangedBy *RevisionChange
	// Since, when set, is the scheduler's first revision: Expected is
	// older, a revision from before the agent (re)started.
	Since uint64
}

// RevisionChange names a transaction that advanced the revision.
type RevisionChange struct {
	SeqNum      uint64
	TxnType     TxnType
	Description string
	// Revision is the revision after the transaction.
	Revision uint64
}

func (c *RevisionChange) String() string {
	what := c.TxnType.String()
	if c.Description != "" {
		what += fmt.Sprintf(" %q", c.Description)
	}
	return fmt.Sprintf("transaction %d (%s)", c.SeqNum, what)
}

func (e *RevisionError) Error() string {
	if e.Expected > e.Current {
		return fmt.Sprintf("planned against revision %d, which is ahead of the current revision %d: not a revision of this agent (a plan from before it restarted?)",
			e.Expected, e.Current)
	}
	if e.Since != 0 {
		return fmt.Sprintf("the state changed since the plan: planned against revision %d, from before the agent started (its revisions start at %d, now at %d)",
			e.Expected, e.Since, e.Current)
	}
	msg := fmt.Sprintf("the state changed since the plan: planned against revision %d, now at revision %d", e.Expected, e.Current)
	switch c := e.ChangedBy; {
	case c == nil:
	case c.Revision == e.Expected+1 && c.Revision == e.Current:
		msg += fmt.Sprintf("; changed by %s", c)
	case c.Revision == e.Expected+1:
		msg += fmt.Sprintf("; changed first by %s, then by %d more", c, e.Current-c.Revision)
	default:
		msg += fmt.Sprintf("; last changed by %s", c)
	}
	return msg
}

// Is makes errors.Is(err, ErrStaleRevision) or ErrFutureRevision hold.
func (e *RevisionError) Is(target error) bool {
	switch target {
	case ErrStaleRevision:
		return e.Expected < e.Current
	case ErrFutureRevision:
		return e.Expected > e.Current
	}
	return false
}

// ErrVerifyFailed: verification after apply found a value the transaction
// applied not held by the SB as applied (the *VerifyError matches it with
// errors.Is).
var ErrVerifyFailed = errors.New("verification after apply failed")

// VerifyError is a value that verification after apply (see
// TxnOptions.Verify) found not held by the SB as the transaction applied
// it: Want is what was applied (nil: deleted), Got what the SB's Retrieve
// returned (nil: absent). Reverted says the transaction was reverted
// because of it.
type VerifyError struct {
	Key       string
	Want, Got proto.Message
	Reverted  bool
}

func (e *VerifyError) Error() string {
	var what string
	switch {
	case e.Want == nil:
		what = fmt.Sprintf("the SB still holds it (%s)", compactText(e.Got))
	case e.Got == nil:
		what = "the SB does not hold it"
	default:
		what = fmt.Sprintf("the SB holds %s", compactText(e.Got))
	}
	if e.Reverted {
		what += "; the transaction was reverted"
	}
	return "verification after apply: " + what
}

// Is makes errors.Is(err, ErrVerifyFailed) hold.
func (e *VerifyError) Is(target error) bool { return target == ErrVerifyFailed }

// compactText is a value as one line of prototext.
func compactText(m proto.Message) string {
	return prototext.MarshalOptions{}.Format(m)
}

// InvalidValueError is returned by Validate: the value cannot be applied and
// will not be retried until it changes. InvalidFields name the offending
// fields; they appear in the value status details.
type InvalidValueError struct {
	Err           error
	InvalidFields []string
}

// NewInvalidValueError wraps the reason why a value is invalid.
func NewInvalidValueError(err error, invalidFields ...string) *InvalidValueError {
	return &InvalidValueError{Err: err, InvalidFields: invalidFields}
}

func (e *InvalidValueError) Error() string {
	if len(e.InvalidFields) == 0 {
		return fmt.Sprintf("invalid value: %v", e.Err)
	}
	return fmt.Sprintf("invalid value (fields %s): %v", strings.Join(e.InvalidFields, ", "), e.Err)
}

func (e *InvalidValueError) Unwrap() error { return e.Err }

// NonRetriableError marks an error of Create, Update or Delete that repeating
// the operation cannot fix, whatever the descriptor's IsRetriableFailure says.
type NonRetriableError struct{ Err error }

// NonRetriable marks err as not retriable.
func NonRetriable(err error) error { return &NonRetriableError{Err: err} }

func (e *NonRetriableError) Error() string { return e.Err.Error() }
func (e *NonRetriableError) Unwrap() error { return e.Err }

// KeyWithError is the failure of one value in a transaction.
type KeyWithError struct {
	Key       string
	Operation TxnOperation
	Error     error
}

// TransactionError is what Commit returns when values of the transaction
// failed or are invalid. TxnInitError is set when the transaction could not
// even start (e.g. ErrRevertNotSupportedWithResync).
type TransactionError struct {
	TxnInitError error
	KVErrors     []KeyWithError
}

func (e *TransactionError) Error() string {
	if e.TxnInitError != nil {
		return "transaction not started: " + e.TxnInitError.Error()
	}
	values := 0
	for _, kv := range e.KVErrors {
		if kv.Key != "" {
			values++
		}
	}
	// Errors without a key are the transaction's own (e.g. a Retrieve that
	// failed), not a value's.
	other := len(e.KVErrors) - values
	var b strings.Builder
	switch {
	case other == 0:
		b.WriteString(plural(values, "value") + " failed:")
	case values == 0:
		b.WriteString("the transaction failed:")
	default:
		b.WriteString(plural(values, "value") + " failed, and " + plural(other, "other error") + ":")
	}
	for i, kv := range e.KVErrors {
		if i == 10 {
			fmt.Fprintf(&b, " ... and %d more", len(e.KVErrors)-i)
			break
		}
		switch {
		case kv.Key == "":
			fmt.Fprintf(&b, " [%v]", kv.Error)
		case kv.Operation == OpUndefined:
			fmt.Fprintf(&b, " [%s: %v]", kv.Key, kv.Error)
		default:
			fmt.Fprintf(&b, " [%s %s: %v]", kv.Operation, kv.Key, kv.Error)
		}
	}
	return b.String()
}

// Unwrap gives errors.Is/As access to the init error and every value error.
func (e *TransactionError) Unwrap() []error {
	errs := make([]error, 0, len(e.KVErrors)+1)
	if e.TxnInitError != nil {
		errs = append(errs, e.TxnInitError)
	}
	for _, kv := range e.KVErrors {
		errs = append(errs, kv.Error)
	}
	return errs
}

// ErrorOf returns the error of one key, or nil.
func (e *TransactionError) ErrorOf(key string) error {
	for _, kv := range e.KVErrors {
		if kv.Key == key {
			return kv.Error
		}
	}
	return nil
}

// plural is "1 value", "2 values".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

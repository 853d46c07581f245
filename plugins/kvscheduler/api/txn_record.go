package api

import (
	"time"

	"google.golang.org/protobuf/proto"
)

// TxnType says what started a transaction.
type TxnType int

const (
	// NBTransaction: a change or resync requested by the northbound.
	NBTransaction TxnType = iota
	// SBNotification: values reported by the southbound.
	SBNotification
	// RetryFailedOps: a retry of operations that failed earlier.
	RetryFailedOps
	// RetryUnimplemented: values applied after their descriptor registered.
	RetryUnimplemented
	// FollowUp: keys reconciled again at the request of a descriptor
	// callback (RequestReconcile).
	FollowUp
	// DriftRepair: values reported out of sync with the SB (ReportDrift),
	// refreshed and repaired.
	DriftRepair
)

func (t TxnType) String() string {
	switch t {
	case NBTransaction:
		return "NB transaction"
	case SBNotification:
		return "SB notification"
	case RetryFailedOps:
		return "retry of failed operations"
	case RetryUnimplemented:
		return "retry of unimplemented values"
	case FollowUp:
		return "follow-up requested by a descriptor"
	case DriftRepair:
		return "drift repair"
	default:
		return "unknown"
	}
}

// RecordedTxn is the record of one transaction: its arguments, the plan made
// by simulation and the operations actually executed.
type RecordedTxn struct {
	SeqNum      uint64
	TxnType     TxnType
	ResyncType  ResyncType
	Description string
	WithRevert  bool
	DryRun      bool
	// RetryAttempt counts the retries of a RetryFailedOps transaction (1 for
	// the first retry).
	RetryAttempt int
	// Revision is the scheduler's revision after the transaction (see
	// KVScheduler.CurrentRevision): one more than before when the
	// transaction changed anything, the same otherwise. The revision of a
	// dry run is the one its plan was made against, to be given as
	// TxnOptions.ExpectedRevision when the planned changes are committed.
	Revision    uint64
	Start, Stop time.Time
	// Values are the transaction's input values (for resync, the NB state).
	Values []RecordedKVPair
	// Planned are the operations the simulation planned, in order.
	Planned []*RecordedTxnOp
	// Executed are the operations executed, in order (REVERT ones included).
	Executed []*RecordedTxnOp
	// VerifyFailed are the values that verification after apply found not
	// held by the SB as applied (each Error a *VerifyError), in key order.
	// With WithRevert, the REVERT operations of Executed undid the
	// transaction because of them.
	VerifyFailed []KeyWithError
}

// RecordedKVPair is an input value of a transaction (nil Value = delete).
type RecordedKVPair struct {
	Key    string
	Value  proto.Message
	Origin ValueOrigin
}

// RecordedTxnOp is one planned or executed operation.
type RecordedTxnOp struct {
	Operation TxnOperation
	Key       string
	// Descriptor that handled the operation (empty for properties).
	Descriptor string
	PrevValue  proto.Message
	NewValue   proto.Message
	PrevState  ValueState
	NewState   ValueState
	// PrevErr is the error the value had before; NewErr the operation's own.
	PrevErr error
	NewErr  error

	// Derived: the value is derived from another value.
	Derived bool
	// Property: a derived value without a descriptor; no CRUD was called.
	Property bool
	// NOOP: nothing was called in the SB (e.g. a value going PENDING).
	NOOP bool
	// IsRevert: the operation undoes an earlier one of a reverted
	// transaction.
	IsRevert bool
	// IsRetry: the operation retries one that failed earlier.
	IsRetry bool
	// IsRecreate: the delete or create is half of a re-creation.
	IsRecreate bool
	// WasPending: the value was PENDING before the operation.
	WasPending bool
	// IsPending: the value is PENDING after the operation.
	IsPending bool
	// IsFixed: the value had failed (FAILED, RETRYING or INVALID) and the
	// operation succeeded.
	IsFixed bool
}

// Flags returns the names of the operation's flags, as the transaction log
// and the REST API print them.
func (op *RecordedTxnOp) Flags() []string {
	var f []string
	add := func(on bool, name string) {
		if on {
			f = append(f, name)
		}
	}
	add(op.Derived, "DERIVED")
	add(op.Property, "PROPERTY")
	add(op.NOOP, "NOOP")
	add(op.IsRevert, "REVERT")
	add(op.IsRetry, "RETRY")
	add(op.IsRecreate, "RECREATE")
	add(op.WasPending, "WAS-PENDING")
	add(op.IsPending, "IS-PENDING")
	add(op.IsFixed, "FIXED")
	return f
}

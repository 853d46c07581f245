package api

import (
	kvs "github.com/netagent-io/netagent/proto/kvscheduler"
)

// Value states, operations and statuses are defined in
// proto/kvscheduler/value_status.proto so that gRPC and REST return them as
// they are; these aliases let descriptor authors use them from this package.
type (
	ValueState      = kvs.ValueState
	TxnOperation    = kvs.TxnOperation
	ValueStatus     = kvs.ValueStatus
	BaseValueStatus = kvs.BaseValueStatus
)

// Value states.
const (
	ValueStateNonexistent   = kvs.ValueState_NONEXISTENT
	ValueStateMissing       = kvs.ValueState_MISSING
	ValueStateUnimplemented = kvs.ValueState_UNIMPLEMENTED
	ValueStateRemoved       = kvs.ValueState_REMOVED
	ValueStateConfigured    = kvs.ValueState_CONFIGURED
	ValueStateObtained      = kvs.ValueState_OBTAINED
	ValueStateDiscovered    = kvs.ValueState_DISCOVERED
	ValueStatePending       = kvs.ValueState_PENDING
	ValueStateInvalid       = kvs.ValueState_INVALID
	ValueStateFailed        = kvs.ValueState_FAILED
	ValueStateRetrying      = kvs.ValueState_RETRYING
)

// Operations.
const (
	OpUndefined = kvs.TxnOperation_UNDEFINED
	OpValidate  = kvs.TxnOperation_VALIDATE
	OpCreate    = kvs.TxnOperation_CREATE
	OpUpdate    = kvs.TxnOperation_UPDATE
	OpDelete    = kvs.TxnOperation_DELETE
)

// UndecodableValue stands in for a value the northbound could not decode:
// committed in its place, it makes the key INVALID with its Reason, with or
// without a descriptor for the key, and nothing is applied for it.
type UndecodableValue = kvs.InvalidValue

// StatusInError tells whether a status carries an error: INVALID, FAILED
// or RETRYING, or an error kept with another state (a value whose delete
// failed, a derived value that failed while its base is CONFIGURED...).
func StatusInError(st *ValueStatus) bool {
	return StateInError(st.GetState()) || st.GetError() != ""
}

// StateInError tells whether a value in state st is in error whatever
// its error says: INVALID, FAILED or RETRYING.
func StateInError(st ValueState) bool {
	return st == ValueStateInvalid || st == ValueStateFailed || st == ValueStateRetrying
}

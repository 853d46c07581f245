// Package api is the public contract of the KV Scheduler: the descriptor that
// teaches the scheduler how to handle one kind of value, the scheduler
// interface used by the northbound (transactions, status) and the southbound
// (notifications), transaction options, records and errors.
//
// # Values, keys and descriptors
//
// Every configuration item is a key-value pair: the key is a string that
// identifies the item, the value a proto.Message. Each key belongs to at most
// one registered descriptor (KVDescriptor), chosen by the descriptor's
// KeySelector. The descriptor implements the CRUD operations for its values and
// tells the scheduler what each value depends on (Dependencies) and which other
// values it derives (DerivedValues). TypedDescriptor lets an author write the
// callbacks over the concrete message and metadata types.
//
// # What the scheduler guarantees to descriptors
//
//   - Callbacks of one scheduler are never called concurrently: transactions
//     run one at a time, on one goroutine.
//   - Create is called only when every dependency of the value is satisfied;
//     Delete of a value is called only after every value that depends on it was
//     deleted, and after its derived values were deleted.
//   - Update is called only when the new value is not equivalent to the old one
//     (ValueComparator, else proto.Equal).
//   - KeySelector, KeyLabel, ValueComparator, Validate, Dependencies,
//     DerivedValues, UpdateWithRecreate and IsRetriableFailure must be pure
//     functions of their arguments: they are called while the scheduler
//     simulates a transaction.
//   - Create, Update, Delete and Retrieve get a context.Context: cancelled
//     when the scheduler closes, with the call's deadline when the scheduler
//     has one. Through it, ViewOf reads statuses and metadata maps (as the
//     running transaction has them so far) and RequestReconcile asks for
//     follow-up work, which the scheduler does after the running
//     transaction. A callback never calls the scheduler: Commit refuses its
//     context (ErrCommitInCallback), and a blocking Commit,
//     TransactionBarrier or an SB-view dump made from a callback with
//     another context would wait for the callback itself.
//
// # Transactions
//
// StartNBTransaction returns a Txn; SetValue stages changes (a nil value is a
// delete) and Commit queues the transaction with its TxnOptions (resync,
// retry, revert, description, dry run, non-blocking) and, unless
// NonBlocking, waits for it and returns the errors of every value it
// touched. Invalid options are refused with an *OptionError naming the field.
package api

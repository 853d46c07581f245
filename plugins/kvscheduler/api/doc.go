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
//   - KeySelector, KeyLabel, ValueComparator, Validate, Dependencies and
//     DerivedValues must be pure functions of their arguments: they are called
//     while the scheduler simulates a transaction and holds its graph, so they
//     must not call back into the scheduler.
//   - Create, Update, Delete and Retrieve may call the scheduler: read status
//     and metadata, push SB notifications or commit transactions. A commit made
//     from inside a callback never blocks; it is queued and runs after the
//     current transaction.
//
// # Transactions
//
// StartNBTransaction returns a Txn; SetValue stages changes (a nil value is a
// delete) and Commit queues the transaction and, unless WithoutBlocking is in
// the context, waits for it and returns the errors of every value it touched.
// Context options (WithResync, WithRetry, WithRevert, WithDescription,
// WithSimulation, WithDryRun, WithoutBlocking) shape how it runs.
package api

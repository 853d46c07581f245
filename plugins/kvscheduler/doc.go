// Package kvscheduler is the KV Scheduler: it keeps the southbound (SB: VPP,
// Linux) in the state the northbound (NB: etcd, gRPC) asks for. Every
// configuration item is a key-value pair handled by a descriptor
// (api.KVDescriptor); the scheduler orders the descriptors' Create, Update and
// Delete calls over the graph of dependencies between values.
//
// # Using it
//
//	s := kvscheduler.New(kvscheduler.Options{})
//	defer s.Close()
//	s.RegisterKVDescriptor(ifaceDescriptor, routeDescriptor)
//	seq, err := s.StartNBTransaction().
//		SetValue("iface/a", ifaceValue).
//		SetValue("route/x", routeValue).
//		Commit(ctx)
//
// Register descriptors before committing values for them (a value committed
// earlier waits as UNIMPLEMENTED and is applied when its descriptor
// registers). All methods are safe for concurrent use. Close stops the
// scheduler after the running transaction; queued ones fail with
// api.ErrClosed.
//
// # The model: intended and applied value
//
// The scheduler keeps a graph with one node per key. A node holds the value
// the NB intends (nil when the NB does not ask for the key), the value applied
// in the SB as far as the scheduler knows (nil when absent), the metadata the
// descriptor returned, and the status (state, last operation, error, details).
// The details of a valid intended value end with what its descriptor notes
// about it (api.KVDescriptor.Notes, asked when the status is read), then
// with the note the NB gave with it, if any (api.NotedTxn): kept beside the
// graph, only while some value has one.
// Reconciling a node means making the applied value equal to the intended one:
//
//   - intended, not applied, dependencies met: Create (then its derived values,
//     then whatever was waiting for it);
//   - intended, applied, not equivalent: Update, or Delete+Create when the
//     descriptor has no Update or UpdateWithRecreate says so; the values that
//     depend on it are deleted first (PENDING) and created again after it;
//   - intended, dependencies not met: not applied, PENDING (an applied one is
//     deleted first, with everything that depends on it);
//   - intended, Validate fails: not applied, INVALID (an applied previous
//     version is deleted);
//   - not intended, applied, not OBTAINED: Delete, after every value that
//     depends on it and after its derived values.
//
// A key "exists" for dependencies when its value is applied: CONFIGURED,
// OBTAINED, or a failed Update whose previous value is still in the SB (so a
// rejected change does not tear down what depends on it). PENDING, INVALID,
// UNIMPLEMENTED and failed-Create values satisfy nothing.
//
// Unique names (KVDescriptor.Unique) are names only one value at a time may
// use, among intended values: a value using a name that another valid value
// uses is INVALID, naming the field, the name and that value; nothing is
// called for it. When the holder drops the name (deleted, changed, invalid),
// the refused values are validated again in key order and the first is
// applied, in the same transaction. Of values asking for a name in one
// transaction the first in key order gets it; a value that already has it
// keeps it.
//
// Exclusive dependencies name a resource only one value at a time may hold
// in the SB (VPP keeps an interface in one bridge domain). Values listing
// the same resource compete: one is created only while no other of them is
// applied. The first applied holds it (created first, or found in the SB by
// a resync: after a restart, the one the SB has); the others wait PENDING
// with the holder named in their details ("... (held by KEY)"). When the
// holder leaves the SB (deleted, or found gone), the first waiting value in
// key order is created, in the same transaction: a move from one holder to
// another works in one transaction whatever the order of their keys. A
// value being re-created keeps its resource. Holders never displace each
// other: two found applied by a resync both stay.
//
// Derived values (DerivedValues of the base) are nodes of their own, with
// their own descriptor (or none: a property, created and deleted with no
// CRUD), dependencies and status. They exist only while their base is applied:
// created right after it, deleted right before it. On a base update the
// obsolete derived values are deleted before the base is updated, new and
// changed ones created or updated after it.
//
// Dependency cycles: values that depend on each other in a cycle (two veth
// ends) are created together, in one go, once every dependency that leaves
// the cycle is met. Cycles are formed by Key dependencies; AnyOf dependencies
// never close a cycle. A derived value never satisfies a dependency of a
// value it exists only thanks to (its base, or a value its base depends on):
// such a value could never have been created, so keeping it would make the
// outcome depend on history.
//
// # Transactions
//
// Transactions are queued and run one at a time on one goroutine. The
// values of a transaction are applied deletes first, then the others in
// dependency order (a value after the values of the same transaction it
// depends on), ties by key: the plan does not depend on the order in which a
// client listed its keys, and no value is created against the old state of a
// value the same transaction changes (a value of the transaction is not
// created early because a dependency appeared: it waits for its turn).
//
// Each transaction is first simulated: the algorithm runs on the graph with
// an executor that calls no descriptor and assumes success, writing an undo
// log. The result is the plan (RecordedTxn.Planned), logged and recorded
// before execution, and the list of descriptor calls it needs. Simulation
// costs what the change costs, not what the graph holds. Execution calls the
// planned descriptor calls in order; when all succeed, the graph is already
// as the plan left it (RecordedTxn.Executed is the plan). When one fails, the
// graph is rolled back and the algorithm runs again with an executor that
// replays the results of the calls already made and the failure, then calls
// the descriptors for real: the failure is handled exactly as if the
// transaction had run step by step. Watchers are told when the transaction
// ends.
//
// Descriptors with Batch get the planned calls in batches (api.BatchOp),
// calls that the dependency graph does not order among themselves. The
// calls of descriptors with Batch run in waves: a call's wave comes after
// the waves of the earlier calls of the plan it is related to (of the same
// value, of a value it depends on or derives from, of one that depends on
// or derives from it), so that the interfaces of a transaction are created
// in one wave, their derived values in the next and the routes over them
// in the one after, and the first ends of many veth pairs (two values that
// depend on each other) before all the second ends. Within a wave each
// descriptor gets its calls in one batch (at most Options.MaxBatch, 1024,
// at a time), in plan order, and keeps many SB requests in flight. An AnyOf
// dependency relates a value to every value under its key prefixes that
// its selector accepts (a route to the addresses that make its gateway
// reachable): those created earlier in the plan are in earlier waves. A
// call of a descriptor without Batch, or of a value with Exclusive
// dependencies or an AnyOf one without key prefixes, is a barrier: it runs
// alone, after every call before it in the plan and before every call
// after it. Execution stops after the batch
// with the first failure; the re-run replays the calls before the first
// one not made with success in plan order, and the other calls made, the
// failure among them, as the re-run makes them again (in whatever order:
// they were independent). A call the re-run does not make again (the
// failure led it another way) did its work in the SB all the same: when
// it succeeded, the graph takes its result (the applied value and metadata
// it left) and a follow-up transaction reconciles the value; when it
// failed, the value is refreshed like any failed one; either way it is in
// the record. A re-run that does not make the calls in the plan's order (a
// descriptor answers otherwise after its own calls: a comparator following
// what an Update changed) replays them by key and operation from there on:
// no call is made twice, whatever the descriptors answer. A transaction with
// Revert is executed one call at a time, in plan order, so that at its
// first failure it knows exactly what to undo.
//
// Execution is best-effort by default: a failed operation leaves its value
// FAILED (or RETRYING) and the rest of the transaction goes on; values that
// depend on a failed one stay PENDING. After the transaction the values
// affected by a failure, and only those, are refreshed with their
// descriptor's Retrieve to learn what the failure left in the SB: a failed
// base value; for a failed derived value its base (an operation on a derived
// value may change its base) and the derived value itself when its own
// descriptor retrieves it. A value found in place is completed (CONFIGURED);
// a CONFIGURED base found changed is MISSING until the retry of its derived
// value, which goes through the base, updates it first (or a resync does); a
// base found gone is MISSING, its derived values (gone with it) MISSING too,
// and what depends on it is deleted (PENDING): the retry creates the base
// again, then its derived values, then what depends on it.
//
// With TxnOptions.Retry, retriable failures are retried by a later
// RetryFailedOps transaction after the period (doubled each time with
// exponential backoff) up to the maximum count, then FAILED; a retry is
// dropped for a key that changed in the meantime. The retry options belong
// to the value: those of the NB transaction that last set or removed it
// (for a derived value, its base), whichever transaction runs the failed
// operation: an AF-Packet committed with retry and created by the SB
// notification of its host interface is retried with them, a value
// committed without retry is not retried even when a transaction with
// retry creates it. Values no NB transaction set (found by a resync) follow
// the running transaction's options. A FAILED value is tried
// again by its retries, by an NB change of the value or by a resync, not
// merely because one of its dependencies appeared. When a member of a
// dependency cycle fails to be created, the members created with it are
// deleted again (PENDING). Errors are retriable
// unless the descriptor's IsRetriableFailure says otherwise or they are
// api.InvalidValueError or api.NonRetriable.
//
// With TxnOptions.Revert the transaction is all-or-nothing: on the first failure
// the failed key is refreshed, every operation already executed is undone in
// reverse order (recorded with IsRevert), the graph returns to its previous
// state and Commit returns the error.
//
// TxnOptions.DryRun computes and records the plan and executes nothing
// (see Revision below for binding a later commit to the plan). The records
// of the last DryRunsKept dry runs are kept apart from the history (see
// History below).
// Options are validated before anything is queued (api.OptionError names
// the field).
//
// Commit returns *api.TransactionError with the errors of every value the
// transaction touched: its own keys, their derived values and values created
// or deleted because of them.
//
// # Verification after apply
//
// A descriptor call that returns success is taken at its word unless the
// transaction is verified: with Options.Verify VerifyReport every
// transaction, and with TxnOptions.Verify the one committed with it, reads
// back from the SB, after execution (and after the refresh of failed
// values), the values it executed an operation on with success: a base
// value with its descriptor's Retrieve; a derived value with its own
// descriptor's Retrieve when that descriptor retrieves it, otherwise
// through its base (the base is read back, so a derived value created by
// a descriptor without Retrieve is verified only as far as its base is).
// One Retrieve per descriptor, with the touched values as correlate, under
// the same lock and context as every Retrieve. Each value is compared with
// what the graph holds as applied (ValueComparator, else proto.Equal); a
// deleted value must be absent. OBTAINED values, values without Retrieve
// and values a failure left FAILED or RETRYING (refreshed already) are not
// verified; a dry run, and a transaction that executed nothing, read
// nothing back.
//
// A value the SB does not hold as applied takes, in the graph, what the SB
// holds (as the refresh after a failure does): an intended value is MISSING
// with an *api.VerifyError as its error ("verification after apply: the SB
// does not hold it" / "the SB holds <value>"), its derived values gone with
// it MISSING too; a deleted value still held is back in the graph, FAILED
// ("the SB still holds it"), so that a resync deletes it. Nothing is
// called: values that depend on it stay as verified on their own, and a
// resync or a drift report repairs it. The record lists the failures
// (RecordedTxn.VerifyFailed) and Commit returns them (errors.Is
// api.ErrVerifyFailed). A Retrieve that fails leaves its values unverified
// and its error in Commit's.
//
// TxnOptions.Verify makes the transaction all-or-nothing (it implies
// Revert, so it is executed one call at a time): an operation that fails
// reverts it as Revert does, and so does a verification that fails or
// cannot be made (a Retrieve error). The revert undoes every executed
// operation in reverse order, recorded with IsRevert, except that a value
// that failed verification is taken in one call, at the place of its last
// operation, from what the SB holds to what it had before the transaction
// (nothing is called for a created value the SB does not hold); the graph
// returns to its state before the transaction, the record has WithRevert,
// the REVERT operations and VerifyFailed, and the errors say the
// transaction was reverted.
//
// Cost: nothing with VerifyOff (the default) for transactions without
// TxnOptions.Verify. Otherwise one Retrieve per descriptor touched, which
// for many SBs is a full dump: VPP's route Retrieve dumps every route, so a
// transaction changing one route of a 10k-route table reads all 10k back.
// The engine's own share is small (a 10k-interface, 10k-route create: about
// 15% more time, one map entry per touched value); the dumps dominate,
// which is why VerifyReport is not the default.
//
// # Revision, and transactions bound to a plan
//
// The scheduler counts the changes of its state: CurrentRevision starts at
// Options.FirstRevision (by default the start time in Unix milliseconds
// shifted left by 20 bits: an opaque number that goes on growing when the
// agent restarts), and every transaction that changes anything advances it by one,
// whatever started it (NB, SB notification, retry, drift repair, follow-up,
// resync). A transaction changes something when it keeps a change of the
// graph (an applied or intended value, metadata, a status: a value going
// PENDING, FAILED or RETRYING counts; what a resync's refresh finds changed
// in the SB counts), executes an operation (a reverted transaction too:
// the SB saw it), or changes a value's note. A transaction that changes
// nothing (a value set again, a resync of an SB in sync) and a dry run
// leave the revision as it is; the refresh of a dry-run resync is kept, so
// when it finds the SB changed, the revision advances and the plan is made
// against the new one. The test is whether the transaction's undo logs
// hold an entry: one check per transaction, nothing per value.
// RecordedTxn.Revision is the revision after the transaction: for a dry run,
// the revision its plan was made against. GetStats reports it with the
// counts it goes with.
//
// A transaction committed with TxnOptions.ExpectedRevision (the revision of
// a plan, a dry run of the same changes) is checked when the worker takes it
// from the queue, so no other transaction can run between the check and
// the transaction: at another revision nothing of it is applied or
// recorded, and Commit returns a *api.TransactionError whose TxnInitError
// is a *api.RevisionError naming both revisions and the transaction that
// changed the state first since the plan (the last one when its record is
// trimmed; for a revision from before the start, RevisionError.Since):
// errors.Is api.ErrStaleRevision, or api.ErrFutureRevision for a revision
// not reached (not one of this agent). The revision is not stored: a plan
// made before the agent restarted is stale (its revision is below the new
// run's first), never taken for a revision of the new run. Transactions
// queued before the bound one and running after the plan make it stale,
// even those queued while it was committed.
//
// # Resync
//
//   - Full: every descriptor with Retrieve is asked for the SB state, in
//     RetrieveDependencies order, with the expected values as correlate; then
//     the SB is made equal to the transaction's values, NB keys not in the
//     transaction are deleted. Values found in the SB that the agent did not
//     create (origin FromSB, or UnknownOrigin for a key the NB does not ask
//     for and the agent did not create) are OBTAINED and never deleted.
//     Derived values: the Retrieve of a derived value's own descriptor (one
//     other than its base's) says whether it is in the SB; any other derived
//     value is in the SB as the retrieved base value derives it (see
//     api.KVDescriptor.Retrieve), unless the scheduler knows it did not
//     apply it (PENDING, failed). So a derived value without a Retrieve of
//     its own is created and deleted with its base, a resync does not create
//     it again while its base is in the SB, and removes it before a base
//     the NB no longer wants. A base found as the last full resync found
//     it (the same applied message: an equal retrieved value leaves the
//     graph's) is not derived again: the derived values it gave then are
//     reused, compared by pointer (DerivedValues is pure), and so are they
//     in the plan for its intended message. Before the first Retrieve, the
//     descriptors with Prefetch are told the refresh starts
//     (api.KVDescriptor.Prefetch), so that a Retrieve waiting for others'
//     metadata has its SB reads done meanwhile (the VPP routes are dumped
//     while the interfaces are read).
//   - Upstream: the same without asking the SB.
//   - Downstream: no values; the SB is refreshed and the NB values the
//     scheduler holds are applied again.
//
// A resync of an SB that already matches executes no operation. Values are
// matched by key (a map lookup), never by scanning.
//
// # History
//
// Transaction records are kept for GetTransactionHistory and
// GetRecordedTransaction (binary searches: O(log n)), bounded by count
// (Options.HistorySize, 1000 by default), estimated memory (HistoryMaxBytes,
// 16 MiB) and age (HistoryMaxAge, 24 h), so memory stays flat under
// sustained churn. The estimate is what trimming a record gives back (the
// record's structs as the allocator sizes them and the values and keys it
// alone keeps); a record of a delete keeps the deleted values, so the
// history is what is left after a bulk delete until it is trimmed.
// GetHistoryInfo says where the kept history starts and how many records
// were trimmed. A record holds the input values, the planned and the
// executed operations, each with the value and state before and after and
// its flags (DERIVED, PROPERTY, NOOP, REVERT, RETRY, RECREATE, WAS-PENDING,
// IS-PENDING, FIXED), and the values verification after apply found not
// held (VerifyFailed).
//
// Dry runs (plans) are not in the history: a plan changes nothing, and
// plans made in a loop (a CI job running agentctl config plan) would push
// the transactions out of it. The records of the last DryRunsKept dry runs
// are kept apart, within the same byte and age limits, for
// GetRecordedTransaction (the caller of a plan reads its operations there).
// Their sequence numbers are gaps in the history. A dry-run resync whose
// refresh found the SB changed is in the history, as it advanced the
// revision.
//
// Key timelines (GetKeyTimeline) and graph snapshots (GetGraphSnapshot at a
// time, GetGraphAsOf a transaction) are computed from the kept records when
// asked for: a timeline lists the operations on one key; a snapshot copies
// the current graph and undoes, newest first, the operations of later
// transactions, then resolves the dependencies (asking descriptors for those
// of past values). Nothing is recorded for them while transactions run; they
// reach back as far as the history does, and a time or transaction before it
// is reported as api.ErrNotInHistory with where the history starts. States
// set without an operation (RETRYING between a failure and its retry) show
// in the current graph only. A snapshot resolves every dependency of the
// graph (hundreds of milliseconds at 100k values); a reader that walks the
// graph from one value (the web view's value page) asks GetGraphNeighbours
// instead: the values it names, their dependencies resolved the same way,
// their dependents from the graph's reverse edges and their derived values,
// at the cost of those edges.
//
// # Transaction log and metrics
//
// The Logger gets one summary record per transaction (attribute "txn"). With
// Options.TxnLog set, the boxed text log of package txnlog is written there
// too: the arguments and the plan before any descriptor is called (a crash
// leaves a trace), the executed operations and the duration after; sections
// longer than Options.TxnLogMaxItems are summarised. Options.Observer (see
// package metrics) is told of every transaction, descriptor call and
// scheduled retry; GetStats counts values by state and descriptor. Package
// rest serves all of this over HTTP under /scheduler/.
//
// # Southbound notifications
//
// PushSBNotification inserts, changes or removes OBTAINED values. No CRUD is
// called for them; they satisfy dependencies (an AF-Packet interface waits for
// its host interface), and when one goes away what depends on it is deleted
// and becomes PENDING.
//
// # Drift
//
// Watchers of SB events (netlink, VPP interface events) call ReportDrift
// for the values whose objects they see deleted or changed, the agent's own
// changes included: a report costs a refresh at most. Reports are queued as
// one DriftRepair transaction (those arriving while it waits join it),
// which refreshes the reported values applied in the graph with their
// descriptors' Retrieve (a derived value through its base, and itself when
// its own descriptor retrieves it). A value in sync is left alone. A value
// gone or changed is MISSING, with "out of sync with the SB: gone (cause)"
// in its details, its record in the transaction's values (what the SB has,
// nil when gone), and the observer told (metrics: drift_found_total). What
// stood on a value gone goes: its derived values went with it, the values
// that depend on it are deleted (PENDING). Then, unless
// Options.DriftReportOnly, every drifted value is created or updated again
// through its base, and its derived values and dependents after it, in the
// same transaction; with DriftReportOnly the values stay MISSING until a
// resync (or a later report). A value found out of sync more than five
// times within a minute (something else resetting what the agent manages)
// is not repaired again until a minute has passed: it stays MISSING, its
// details saying so, instead of being fought in a loop.
//
// # Who owns what, and what runs concurrently
//
// The worker goroutine is the one owner of the graph: only it changes
// values, statuses, dependencies and metadata. It holds the graph's lock
// while it plans and records, and releases it around every descriptor call
// (Create, Update, Delete, Retrieve).
//
// Readers (GetValueStatus, GetValueErrors, ListValueStatuses, GetStats, NB and cached dumps,
// graph snapshots, key timelines, and what is built on them: REST, gRPC,
// /metrics, readiness) never wait for the SB. They take the lock for
// reading, which they get between transactions and whenever the worker is
// in a descriptor call, and see the state as of the last finished
// transaction: while one runs, the graph already shows what its plan leads
// to, which is not yet true in the SB, so readers look through the running
// transaction's undo logs (which it records anyway) to the state before it.
// They wait at most for in-memory work (planning, recording), never for a
// descriptor call; a hung VPP does not stall status or metrics.
//
// Descriptor calls are never concurrent: the worker's calls, and the
// Retrieves of SB-view dumps that readers ask for, take one mutex. An SB
// dump therefore waits for a blocked call, and the worker's next call waits
// for the dump's Retrieves.
//
// A callback gets a context: cancelled by Close, with Options.CallTimeout
// as deadline when set. Through it a callback may read (api.ViewOf:
// statuses as the running transaction has them so far, metadata maps) and
// ask for follow-up work (api.RequestReconcile: keys reconciled again in a
// FollowUp transaction after the running one). It must not call the
// scheduler otherwise: Commit refuses a callback's context
// (api.ErrCommitInCallback), and a blocking Commit, TransactionBarrier or
// SB-view dump made with another context would wait for the callback
// itself. Rules between values that VPP or the kernel enforce (one bridge
// domain per interface) are dependencies (api.Dependency.Exclusive), not
// checks a callback makes against the scheduler. The pure callbacks
// (Validate, Dependencies, DerivedValues, comparators, KeyLabel,
// UpdateWithRecreate, IsRetriableFailure) run while the graph is being
// planned and must not call anything.
//
// # Status
//
// GetValueStatus returns the status of a base value and its derived values.
// GetValueErrors returns only the statuses in error among those of many base
// values and their derived values, at the cost of a look-up per value: the
// gRPC source reports with it the errors of the values of a large change
// that the transaction did not touch.
// WatchValueStatus delivers status changes after each transaction; each
// watcher has its own goroutine and a buffer coalesced by key, so a slow
// watcher never blocks the scheduler and always ends up with the latest
// status.
package kvscheduler

// Package txnlog renders a transaction record (*api.RecordedTxn) of the KV
// Scheduler as the human-readable, boxed transaction log.
//
// The log has two parts. WritePlan writes the header and what is known
// before execution (the transaction arguments, its input values and the
// planned operations); the scheduler prints it before executing, so that a
// crash in a descriptor still leaves the plan in the log. WriteResult writes
// the executed operations, the errors and the footer. Format returns both, for
// the REST API (format=text) and agentctl.
//
// Values are rendered as compact protojson (proto field names, one line);
// times in RFC 3339 with nanoseconds, in UTC; durations rounded to
// microseconds. A section lists at most Options.MaxItems values or operations
// and summarises the rest by kind. When the executed operations are the plan
// itself (a transaction without failures), they are not repeated.
//
// Example:
//
//	+--------------------------------------------------------------------------------------------------+
//	| Transaction #5                                                                    NB transaction |
//	+--------------------------------------------------------------------------------------------------+
//	  * transaction arguments:
//	      - seq-num: 5
//	      - type: NB transaction
//	      - description: configure eth0
//	      - values (from-NB):
//	          - key: config/iface/eth0
//	            value: "eth0 up mtu 9000"
//	  * planned operations:
//	      1. UPDATE:
//	          - key: config/iface/eth0
//	          - prev-value: "eth0 up mtu 1500"
//	          - new-value: "eth0 up mtu 9000"
//	      2. CREATE [DERIVED]:
//	          - key: config/iface/eth0/addr/10.0.0.1/24
//	          - value: "10.0.0.1/24"
//	  * executed operations (2024-03-14T09:26:53.589793238Z - 2024-03-14T09:26:53.593055706Z, duration = 3.262ms):
//	      executed as planned (2 operations)
//	+--- #5 took 3.262ms ------------------------------------------------------------------------------+
//
// A failed operation adds "- state: NONEXISTENT -> FAILED" and
// "- error: ..." to its entry, an "* errors:" section and the number of
// errors in the footer; flags such as REVERT, RETRY or FIXED follow the
// operation's name (see api.RecordedTxnOp.Flags).
package txnlog

// Package etcdstatus publishes the agent's status in etcd where the original
// agent (Ligato vpp-agent, through cn-infra's statuscheck) published it, so
// that the fleet controllers and scripts written for it keep working:
//
//	/vnf-agent/<label>/check/status/v1/agent          status.AgentStatus
//	/vnf-agent/<label>/check/status/v1/plugin/<name>  status.PluginStatus
//
// and, when asked for, each value's status (see "Value statuses").
//
// The messages are proto/status (package status, the original's names and
// field numbers). The values are their JSON as the original writes it:
// protojson with the proto field names, so enums by name ("OK"), 64-bit
// integers as strings ("1700000000", Unix seconds) and fields at their
// zero value left out (the state INIT among them, as the original does):
//
//	{"build_version":"v1.2.0","build_date":"2025-11-02T10:00:00Z","state":"OK",
//	 "start_time":"1762077600","last_change":"1762077602","last_update":"1762077612",
//	 "commit_hash":"9482097…","plugins":[{"name":"orchestrator","state":"OK",
//	 "last_change":"1762077602","last_update":"1762077612"},…]}
//
// # Lease
//
// Unlike the original, whose keys stayed after its death, every key is put
// under one lease of Options.TTL, which the publisher keeps alive (a
// KeepAliveOnce every third of the TTL, so the etcd client runs no
// keep-alive loop of its own that would log each failed attempt while
// etcd is away): when the agent dies (kill -9, a crash, the host gone)
// its keys disappear within the TTL. They disappear as well when the agent
// is cut off from etcd for longer than the TTL; absent keys mean "not
// known to be alive". A graceful stop (Run's context ends) revokes the
// lease, so the keys go at once.
//
// When the lease is gone (it expired while etcd was away, someone revoked
// it, etcd came back empty or from a backup) the next keep-alive or put
// says so: the publisher grants a new lease and puts every key again.
// Besides, every Options.RefreshInterval (10 s, the original's period) it
// puts them again with their last_update, which also restores keys
// deleted behind its back.
//
// # When it writes
//
// Run asks its report function for the status every Options.CheckInterval
// (500 ms: the readiness has no notifications, and the report reads a few
// mutexes) and puts the keys, in one etcd transaction, when the state or
// the error of the agent or of a part changed, and at each refresh; not
// otherwise. last_change is when the state (and, for a part, the error)
// last changed as the publisher saw it, last_update when the keys were
// last written, start_time Options.Started.
//
// # Failures
//
// Run never blocks its caller and never ends because of etcd: it runs on
// its own goroutine, bounds every call to etcd (a third of the TTL), and
// retries a failed grant or put with backoff (500 ms doubling to 5 s). A
// failure is logged at warn level with the error when the publication
// worked until then (or has not started), the retries at debug level, the
// recovery at info level; nothing else of the agent waits for it.
//
// # What the states mean
//
// The report function decides; the agent (cmd/agent) reports:
//
//   - agent: ERROR when one of its parts is in ERROR (VPP not connected or
//     lacking messages, etcd lost), otherwise INIT while the agent is not
//     ready (/readyz 503: before the first full sync, while VPP's resync
//     after a reconnect runs) and OK when it is. The original's meaning:
//     INIT starting, OK working, ERROR a part failed.
//   - orchestrator: INIT until the first full sync of every northbound
//     source was applied, then OK.
//   - etcd: INIT while the etcd source connects for the first time (with
//     the error of the last attempt), OK while connected, ERROR when it
//     lost its connection or stopped (with the error).
//   - govpp (the original's name for its VPP connection; only with VPP):
//     OK while VPP is connected and has every message the agent needs;
//     INIT while the agent waits for VPP's first connection at its start
//     (at most 3 s); ERROR otherwise: not connected (the error names the
//     socket, and the connection's last error once there is one) or
//     lacking messages (which).
//   - linux (only with the Linux plugins): INIT until the interface
//     watcher reported the host's links the first time, then OK.
//
// # Value statuses
//
// With Options.Values (the agent's etcd.status.values, off by default),
// the status of every base value of the scheduler is published as well,
// beside the original's keys (it had none of them), under the same lease:
//
//	/vnf-agent/<label>/check/status/v1/value/<value key>  kvscheduler.BaseValueStatus
//
// One key per base value, whose status carries that of each value derived
// from it (derived_values): the scheduler reports and lists statuses that
// way, so one change of a value or of a derived value is one write. The
// JSON is that of the agent's status (proto field names, enums by name,
// zero values left out), e.g. under
// /vnf-agent/vpp1/check/status/v1/value/config/linux/l3/v2/route/10.203.0.0/16/eth9:
//
//	{"value":{"key":"config/linux/l3/v2/route/10.203.0.0/16/eth9",
//	 "state":"PENDING","details":["interface eth9 up","gateway 172.30.9.1 reachable"],
//	 "descriptor_name":"linux-route"}}
//
// and of a value with a derived one (derived_values is left out when
// there is none):
//
//	{"value":{"key":"test/b","state":"CONFIGURED","last_operation":"CREATE",
//	 "descriptor_name":"test-value"},"derived_values":[{"key":"test/b/address/10.0.0.1",
//	 "state":"CONFIGURED","last_operation":"CREATE","descriptor_name":"test-value",
//	 "derived":true}]}
//
// Every value the scheduler knows has its key, whatever its state
// (CONFIGURED, PENDING, FAILED, OBTAINED, …); a value that goes (REMOVED)
// has its key deleted. A controller that wants what is wrong reads the
// prefix (ValueKeyPrefix) and keeps what is not CONFIGURED (or OBTAINED).
// agentctl fleet status (cmd/agentctl/fleet.go) is such a reader, of every
// agent's keys: it lists the agents under /vnf-agent/ with their state, their
// parts not OK and those values, reading the value statuses a page at a time.
//
// Run watches the scheduler (KVScheduler.WatchValueStatus, which never
// blocks the scheduler and coalesces a key's changes) and lists its
// statuses (ListValueStatuses) whenever it granted a lease: at the start
// and after the lease was lost (expired, revoked, etcd restored or empty),
// when none of the keys are left in etcd; every one is then put again. The
// watch starts before the first listing, so no change falls between. A
// change is written DefaultValueDelay after the first of a burst, with the
// others that came meanwhile, in etcd transactions of at most
// Options.ValueTxnOps operations (128, etcd's default --max-txn-ops) and
// 1 MiB (a server whose --max-txn-ops is lower refuses them: the number is
// halved until it takes them, with a warning); a status that did not
// change is not written again. It keeps the JSON of every status in memory
// to tell. Between two
// transactions the lease is renewed when due, so that a large burst (10k
// values: about 80 transactions) cannot let it expire. A failed write is
// retried with the backoff of the agent's status, keeping the latest status
// of every key to write (while etcd is away the updates are coalesced in
// memory, one entry per value); when etcd answers again with the lease
// alive, what the failed transactions did not write is written then. The
// values' keys are not part of the periodic refresh (writing 100k keys
// every 10 s would cost more than it restores): a value's key deleted by
// hand comes back when the value changes or the lease is granted again.
//
// AgentStatus.interface_stats, which the original filled with its VPP
// interfaces, is left out: the interfaces' states are the values' states
// (agentctl values, /scheduler/status).
//
// The etcd source (plugins/orchestrator/etcdsource) ignores the keys under
// KeyPrefix: they are not configuration.
package etcdstatus

// Package etcdstatus publishes the agent's status in etcd where the original
// agent (Ligato vpp-agent, through cn-infra's statuscheck) published it, so
// that the fleet controllers and scripts written for it keep working:
//
//	/vnf-agent/<label>/check/status/v1/agent          status.AgentStatus
//	/vnf-agent/<label>/check/status/v1/plugin/<name>  status.PluginStatus
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
// AgentStatus.interface_stats, which the original filled with its VPP
// interfaces, is left out: the interfaces' states are the values' states
// (agentctl values, /scheduler/status).
//
// The etcd source (plugins/orchestrator/etcdsource) ignores the keys under
// KeyPrefix: they are not configuration.
package etcdstatus

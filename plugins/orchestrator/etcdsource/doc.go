// Package etcdsource is the etcd source of the orchestrator: it reads the
// agent's configuration under /vnf-agent/<label>/ and keeps the orchestrator
// (or any Sink) in step with it. It also runs an embedded etcd server, for
// tests and for the daemon's --etcd-embedded.
//
// # Guarantees
//
// Source.Run reads every key under the prefix at one etcd revision (in pages,
// all at that revision) and hands the whole state to Sink.Resync. It then
// watches from the next revision, so no change is lost between the read and
// the watch, and delivers the changes with Sink.Change:
//
//   - The events of one etcd revision (one Put, one Delete, one Txn) always go
//     into one Change, never split (etcd does not split a revision across
//     watch responses unless asked to fragment them, which the source does
//     not).
//   - The first revision after a quiet Options.BatchMaxDelay (no Change
//     ended within it) goes at once, in a Change of its own: a lone put
//     reaches the scheduler without waiting. A burst of revisions is
//     coalesced: revisions that arrive while the previous Change runs, or
//     within Options.BatchMaxDelay of the first event of the batch, join one
//     Change of at most Options.BatchMaxKeys keys (more only when a single
//     revision is bigger). Within a Change a key
//     appears once, with its last event, in the order of the last events; a
//     key created and deleted within one batch is left out (the sink never
//     had it), so a delete is only ever passed for a key the sink has.
//   - When the watch reports compaction (the source fell behind a compacted
//     revision), the source reads everything again at a new revision and calls
//     Resync, which applies the difference (deletes included), then watches
//     on from there.
//   - When the watch fails or its channel closes (no leader, etcd gone), or
//     the client's connection to etcd is lost (etcd restarted), the source
//     waits with backoff (100 ms doubling to 5 s), reads everything again
//     when etcd answers, Resyncs and watches again. It does not let the etcd
//     client resume the watch on its own after a reconnect: etcd may have
//     come back empty or restored from a backup, and its revisions would not
//     follow on. The connection is followed from before the full read, so
//     a loss between the read and the watch counts too, and a watch whose
//     etcd answers with a revision below the one read (an etcd that is not
//     the one read) ends the same way. Either way no event is lost or
//     applied twice: every Change
//     follows the state of the last Resync, revision after revision. While etcd
//     is away the sink is passed nothing: it keeps the last state read,
//     and nothing is deleted because etcd cannot be reached.
//
// # Liveness
//
// A watch that receives nothing cannot tell a quiet configuration from a
// member that stopped answering. Two things end such a watch, and the
// source then reads everything again as above:
//
//   - require-leader: the watch and the full reads carry etcd's
//     require-leader flag, so a member that lost its leader (cut off from
//     the others, the cluster's quorum gone) refuses the reads and ends
//     the watch itself, about three election timeouts after the leader
//     was lost ("etcdserver: no leader");
//   - progress requests: when the watch has been silent for
//     Options.ProgressInterval (2 s), the source asks etcd for a progress
//     notification on the watch's stream (the watch also takes etcd's
//     periodic ones); when nothing arrives within another interval the
//     watch ends ("... sent nothing for 4s, not even the progress asked
//     for ..."): the member hangs, or the connection passes nothing while
//     TCP keeps it open, which the client's keepalive would notice only
//     after 15 s. An idle agent costs its etcd one progress request per
//     interval.
//
// tests/fleet checks both with a real 3-member cluster, with the other
// faults (a member stopped, the leader killed, the whole cluster
// restarted, a compaction while a watch lags): every write made during
// the fault is applied exactly once.
//
// # Connection state
//
// Source.Connection tells the state of the connection to etcd (the
// orchestrator's Connector: register it with RegisterConnection, and
// Orchestrator.Sources and Degraded report it):
//
//   - connecting, from Run until the first full read succeeds, with the
//     error of the last attempt once one failed;
//   - connected, from a full read that succeeded, with the last revision
//     seen (that of the read, then the header revision of each watch
//     response);
//   - lost, from the first failure after that (the watch ended, the
//     client's connection left READY, a read failed), with the error of
//     the last attempt; Losses counts these. Revision stays the last one
//     seen while connected. The source is connected again when a full read
//     succeeds, before the sink's Resync of it is applied;
//   - stopped, when Run returned an error retrying cannot fix.
//
// A read waits for etcd up to Options.ReadTimeout (30 s by default) before
// it fails and is retried, so while etcd is away the error is updated that
// often; it names the endpoints and the client's connection state, as the
// etcd client tells no more than "context deadline exceeded".
//
// The changes are logged once each, never per retry: etcd unreachable at
// the start (warn, with the error), the first connection (info, with the
// revision and how long it took), the loss (warn, with the error and the
// last revision) and the recovery (info, with how long the connection was
// lost); the failed retries in between are logged at debug level.
//
// An error returned by the sink is logged (at info level when only values
// failed) and does not stop the source: the orchestrator records the values
// before it commits, and reports the failures of values itself.
//
// # Decoding
//
// Each etcd key is split with models.ParseEtcdKey (keys of other labels are
// ignored, and so are the agent's own status keys, under
// check/ (etcdstatus.KeyPrefix), which the agent writes and which are not
// configuration) and its value decoded with Registry.DecodeValue. A value that
// cannot be decoded (bad JSON, invalid fields, a key that matches no model)
// is passed as a KV with Err set, which the orchestrator marks INVALID with
// the reason; nothing else is affected. A delete is a KV with a nil Value.
// Keys are passed in their canonical spelling (Model.CanonicalKey): the
// original agent's key of a route without a next hop, with a trailing "/",
// becomes the key without it. If etcd holds both spellings of one key, they
// are one item: the last written wins and deleting either deletes the item
// (until the next write or resync).
//
// # Keys written for the original agent
//
// Values are decoded with Registry.DecodeVariant: a value under a key that
// the original agent accepted and whose meaning is unambiguous (see
// Model.ResolveKey; today the VPP route key without
// "if/<outgoing_interface>/" whose value names the interface) is passed
// under its own key, with a KV.Note that ends up in the value's status
// details:
//
//	etcd key "/vnf-agent/vpp1/config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1" (the original agent's form, without if/<outgoing_interface>/) names this value
//
// Ambiguous keys (a name that differs from the value's) are refused: the
// key read is INVALID with the reason, naming both names.
//
// The source remembers which value each such etcd key names, so that its
// delete (an etcd delete carries the key only) deletes that value. When
// several etcd keys name one value, the value's own key holds it, and
// otherwise the variant key created first (etcd's create revision); each
// other is passed as an error under the key read, naming the holder. When
// the holder goes, the next one takes over and its value is passed. The
// memory is rebuilt by every full read (start, compaction, reconnect), and
// holds nothing while etcd has no such key. Learning whether a value's own
// key exists when a variant of it appears takes a read of etcd at the
// event's revision; if that read fails, the watch ends and the source reads
// everything again.
//
// # Embedded etcd
//
// StartEmbedded runs a real one-member etcd server in the process (package
// go.etcd.io/etcd/server/v3/embed) on a data directory, serving clients on
// 127.0.0.1:2379 unless told otherwise. Its zap logs go to a slog.Logger,
// from warn level up by default. NewEmbedded and Start do the same in two
// steps, and NewDialing makes a source whose client is made in Connect:
// the agent builds both before anything runs, then starts the server and
// connects.
//
// With EmbeddedConfig.RootPassword the server takes no request without
// credentials: Start turns etcd's authentication on with user RootUser
// (the root role) and that password, through raft with the server's own
// root credential, so a password changed since the data directory was
// made applies; without it, Start turns authentication off. On a new data
// directory authentication is on once the server is ready: a client that
// writes in the moment before is not refused.
//
// The embedded server compacts (etcd's periodic auto-compaction,
// EmbeddedConfig.CompactionRetention, one minute by default; the agent's
// etcd.embedded_compaction_retention): every retention it drops the
// revisions older than the one it had a retention ago from its index and
// its database, that is the earlier values of keys changed since and the
// values of keys deleted since, so the memory of configuration that is
// gone comes back one to two retentions after it went. The current value
// of every key stays. Pages freed in the database file are reused, not
// given back (the file shrinks only with a defragmentation). After each
// of its snapshots it keeps only a few applied raft entries in memory (a
// one-member cluster has no follower to catch up). A negative retention
// never compacts: every revision stays until the process ends. Compaction
// touches only reads and watches of old revisions: the Source's watch
// follows the head and does not lag; a Source whose watch would start from
// a compacted revision (its full read, or the sink's Resync of it, took
// longer than the retention) gets ErrCompacted, reads everything again at
// the current revision and resyncs (see Guarantees), and a full read whose
// revision is compacted between its pages starts over. Other clients that
// read or watch an old revision (agentctl kvdb, a watcher of the agent's
// keys) get "required revision has been compacted" and must read again at
// the current revision.
package etcdsource

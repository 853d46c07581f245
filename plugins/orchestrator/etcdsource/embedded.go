package etcdsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/auth"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.uber.org/zap"
)

// EmbeddedConfig configures an embedded etcd server.
type EmbeddedConfig struct {
	// Dir is the data directory (created if missing; reused on restart).
	Dir string
	// ClientURL is where clients connect (default http://127.0.0.1:2379).
	ClientURL string
	// PeerURL is the peer listener (default http://127.0.0.1:2380); a
	// one-member cluster has no peer, but etcd always listens.
	PeerURL string
	// Log receives etcd's logs (default slog.Default()).
	Log *slog.Logger
	// Level is the lowest level of etcd's logs passed on (default
	// slog.LevelWarn: etcd is chatty at info).
	Level slog.Leveler
	// StartTimeout is the longest wait for the server to be ready (default
	// 60s).
	StartTimeout time.Duration
	// MaxTxnOps is the most operations in one transaction (default etcd's,
	// 128).
	MaxTxnOps uint
	// CompactionRetention is how long the server keeps the revisions that
	// keys had before their current one (etcd's periodic auto-compaction:
	// every retention, up to an hour, it compacts to the revision it had a
	// retention ago, so what a change replaced or deleted is gone from the
	// server's memory one to two retentions after the change). Until
	// compacted, every put and every delete of a key stays in the server's
	// index and database, the values of deleted keys included: without
	// compaction the memory of configuration that is gone never comes back.
	// Default DefaultCompactionRetention; negative: never compact (etcd's
	// own default); at least MinCompactionRetention otherwise. A watch that falls more
	// than this behind gets ErrCompacted, and the Source then reads
	// everything again (its watch is at the head: it never falls behind
	// while it runs).
	CompactionRetention time.Duration
	// RootPassword, when set, turns etcd's authentication on: every client
	// authenticates as RootUser with this password (clientv3.Config
	// Username and Password); a client without them cannot read or write.
	// Start sets it on every start, so a changed password applies. When
	// empty, authentication is off (turned off if an earlier start turned
	// it on).
	RootPassword string
}

// RootUser is the user of the embedded etcd's clients when
// EmbeddedConfig.RootPassword is set.
const RootUser = "root"

// Defaults of EmbeddedConfig.
const (
	DefaultEmbeddedClientURL = "http://127.0.0.1:2379"
	DefaultEmbeddedPeerURL   = "http://127.0.0.1:2380"
	DefaultStartTimeout      = 60 * time.Second
	// DefaultCompactionRetention: the memory of a change comes back one to
	// two minutes after it. The Source's watch is never this far behind (it
	// reads the watch while its sink applies a change); nothing of the
	// agent reads older revisions.
	DefaultCompactionRetention = time.Minute
	// MinCompactionRetention is the shortest positive CompactionRetention.
	MinCompactionRetention = time.Second
)

// embeddedCatchUpEntries is how many applied raft entries the server keeps
// in memory after each of its snapshots (etcd's default is 5000, for slow
// followers; a one-member cluster has none). An entry holds a whole
// request, so with etcd's default 5000 transactions of 100 routes (some
// 100 MB) could stay in memory; its WAL on disk has them all anyway.
const embeddedCatchUpEntries = 100

// Embedded is an etcd server running in this process: a real one-member
// etcd cluster, for tests and development. Make it with NewEmbedded, start
// it with Start (or both with StartEmbedded).
type Embedded struct {
	cfg       EmbeddedConfig // defaults applied
	ec        *embed.Config
	where     string
	closing   *atomic.Bool
	etcd      *embed.Etcd // nil until Start succeeded
	clientURL string
	closeOnce sync.Once
}

// StartEmbedded starts an embedded etcd server and waits until it serves
// clients (NewEmbedded, then Start).
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	e, err := NewEmbedded(cfg)
	if err != nil {
		return nil, err
	}
	if err := e.Start(); err != nil {
		return nil, err
	}
	return e, nil
}

// NewEmbedded checks the configuration of an embedded etcd server and
// prepares it; nothing runs until Start.
func NewEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedded etcd: no data directory")
	}
	if cfg.ClientURL == "" {
		cfg.ClientURL = DefaultEmbeddedClientURL
	}
	if cfg.PeerURL == "" {
		cfg.PeerURL = DefaultEmbeddedPeerURL
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Level == nil {
		cfg.Level = slog.LevelWarn
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	switch {
	case cfg.CompactionRetention == 0:
		cfg.CompactionRetention = DefaultCompactionRetention
	case cfg.CompactionRetention > 0 && cfg.CompactionRetention < MinCompactionRetention:
		return nil, fmt.Errorf("embedded etcd: compaction retention %v: want at least %v (or negative: never compact)", cfg.CompactionRetention, MinCompactionRetention)
	}
	clientURL, err := url.Parse(cfg.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: bad client URL %q: %w", cfg.ClientURL, err)
	}
	peerURL, err := url.Parse(cfg.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: bad peer URL %q: %w", cfg.PeerURL, err)
	}

	ec := embed.NewConfig()
	ec.Name = "netagent"
	ec.Dir = cfg.Dir
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*clientURL}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	if cfg.MaxTxnOps > 0 {
		ec.MaxTxnOps = cfg.MaxTxnOps
	}
	if cfg.CompactionRetention > 0 {
		ec.AutoCompactionMode = embed.CompactorModePeriodic
		ec.AutoCompactionRetention = cfg.CompactionRetention.String()
	}
	ec.SnapshotCatchUpEntries = embeddedCatchUpEntries
	level := zapLevel(cfg.Level.Level())
	ec.LogLevel = "info" // never "debug": etcd would turn on gRPC tracing
	if level >= zap.WarnLevel {
		ec.LogLevel = level.String()
	}
	// NewConfig leaves this 0, which logs every request as slow.
	ec.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	closing := new(atomic.Bool)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(newSlogCore(cfg.Log.With("component", "etcd"), level, closing)))
	where := fmt.Sprintf("client URL %s, peer URL %s, data dir %s", cfg.ClientURL, cfg.PeerURL, cfg.Dir)
	return &Embedded{cfg: cfg, ec: ec, where: where, closing: closing}, nil
}

// Start starts the server and waits until it serves clients. The error
// names the URLs and the directory (a port already taken fails here). Call
// it once.
func (e *Embedded) Start() error {
	etcd, err := embed.StartEtcd(e.ec)
	if err != nil {
		return fmt.Errorf("embedded etcd (%s): cannot start: %w", e.where, err)
	}
	timer := time.NewTimer(e.cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-etcd.Server.ReadyNotify():
	case err, ok := <-etcd.Err():
		e.closing.Store(true)
		etcd.Close()
		if !ok || err == nil {
			err = errors.New("stopped")
		}
		return fmt.Errorf("embedded etcd (%s): failed while starting: %w", e.where, err)
	case <-timer.C:
		e.closing.Store(true)
		etcd.Close()
		return fmt.Errorf("embedded etcd (%s): not ready after %v", e.where, e.cfg.StartTimeout)
	}
	if err := setAuth(etcd.Server, e.cfg.RootPassword, e.cfg.StartTimeout, e.cfg.Log); err != nil {
		e.closing.Store(true)
		etcd.Close()
		return fmt.Errorf("embedded etcd (%s): %w", e.where, err)
	}
	u := e.ec.ListenClientUrls[0]
	if len(etcd.Clients) > 0 {
		u.Host = etcd.Clients[0].Addr().String() // the actual port when asked for :0
	}
	e.etcd, e.clientURL = etcd, u.String()
	return nil
}

// setAuth makes the server's authentication what password says: on, with
// RootUser (holding the root role) whose password it is, or off when it is
// empty. The changes go through raft as an administrator's requests would
// (AuthStore.WithRoot makes the server's own root credential, as etcd does
// for its internal requests): the server may hold the data and the
// authentication of an earlier start with another password, which no
// client could change.
func setAuth(srv *etcdserver.EtcdServer, password string, timeout time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	as := srv.AuthStore()
	if password == "" {
		if !as.IsAuthEnabled() {
			return nil
		}
		if _, err := srv.AuthDisable(as.WithRoot(ctx), &etcdserverpb.AuthDisableRequest{}); err != nil {
			return fmt.Errorf("turning authentication off: %w", err)
		}
		log.Warn("embedded etcd: authentication turned off (no password now; an earlier start had one): any client can write")
		return nil
	}
	if as.IsAuthEnabled() {
		if _, err := as.CheckPassword(RootUser, password); err == nil && as.HasRole(RootUser, "root") {
			return nil
		}
	}
	// Each request gets a fresh root credential: a password change makes
	// the earlier ones stale.
	_, err := as.UserGet(&etcdserverpb.AuthUserGetRequest{Name: RootUser})
	switch {
	case errors.Is(err, auth.ErrUserNotFound):
		_, err = srv.UserAdd(as.WithRoot(ctx), &etcdserverpb.AuthUserAddRequest{Name: RootUser, Password: password,
			Options: &authpb.UserAddOptions{}})
	case err == nil:
		_, err = srv.UserChangePassword(as.WithRoot(ctx), &etcdserverpb.AuthUserChangePasswordRequest{Name: RootUser, Password: password})
	}
	if err != nil {
		return fmt.Errorf("setting the password of user %s: %w", RootUser, err)
	}
	if !as.HasRole(RootUser, "root") {
		if _, err := srv.UserGrantRole(as.WithRoot(ctx), &etcdserverpb.AuthUserGrantRoleRequest{User: RootUser, Role: "root"}); err != nil {
			return fmt.Errorf("granting user %s the root role: %w", RootUser, err)
		}
	}
	if !as.IsAuthEnabled() {
		if _, err := srv.AuthEnable(ctx, &etcdserverpb.AuthEnableRequest{}); err != nil {
			return fmt.Errorf("turning authentication on: %w", err)
		}
	}
	return nil
}

// ClientURL returns the URL clients connect to (once started: with the
// actual port when the configured one is 0).
func (e *Embedded) ClientURL() string { return e.clientURL }

// CompactionRetention is the compaction retention in effect
// (EmbeddedConfig.CompactionRetention with the default applied; negative:
// never compacted).
func (e *Embedded) CompactionRetention() time.Duration { return e.cfg.CompactionRetention }

// Close stops the server (client connections are cut; a watch open on it
// may keep it waiting for etcd's request timeout, a few seconds). It can be
// called more than once, and on a server that was not started.
func (e *Embedded) Close() {
	if e.etcd == nil {
		return
	}
	e.closeOnce.Do(func() {
		e.closing.Store(true)
		e.etcd.Close()
		<-e.etcd.Server.StopNotify()
	})
}

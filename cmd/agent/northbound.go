package main

import (
	"context"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
)

// etcdPart is the etcd source: the agent's keys in an external cluster or
// in the embedded server, which it runs.
type etcdPart struct {
	embedded *etcdsource.Embedded // nil: an external cluster
	source   *etcdsource.Source
	log      *slog.Logger
	// endpoints are the external cluster's, or the embedded server's URL
	// once start started it (before the servers that report them start).
	endpoints   []string
	dialTimeout time.Duration
	dir         string // the embedded server's data
	// password is the embedded server's root password (the token): the
	// client authenticates as etcdsource.RootUser with it.
	password Secret
}

// newEtcdPart builds the etcd source of o (registered with it) and the
// embedded server, if configured; nil without etcd. Nothing runs until
// start.
func newEtcdPart(cfg Config, o *orchestrator.Orchestrator, log *slog.Logger) (*etcdPart, error) {
	if cfg.Etcd.EmbeddedDir == "" && len(cfg.Etcd.Endpoints) == 0 {
		return nil, nil
	}
	p := &etcdPart{log: log, endpoints: cfg.Etcd.Endpoints, dialTimeout: cfg.Etcd.DialTimeout.Duration, dir: cfg.Etcd.EmbeddedDir}
	if cfg.Etcd.EmbeddedDir != "" {
		// With a token, the embedded etcd is not an open door: its clients
		// authenticate as root with the token.
		p.password = cfg.Token
		e, err := etcdsource.NewEmbedded(etcdsource.EmbeddedConfig{Dir: cfg.Etcd.EmbeddedDir,
			ClientURL: cfg.Etcd.EmbeddedClientURL, PeerURL: cfg.Etcd.EmbeddedPeerURL, Log: log,
			CompactionRetention: cfg.Etcd.EmbeddedCompactionRetention.Duration,
			RootPassword:        p.password.Reveal()})
		if err != nil {
			return nil, err
		}
		p.embedded = e
	}
	p.source = etcdsource.NewDialing(p.dial, o, etcdsource.Options{Label: cfg.Label, Log: log})
	o.Register(orchestrator.SourceEtcd)
	o.RegisterConnection(orchestrator.SourceEtcd, p.source)
	return p, nil
}

// Keepalive of the etcd client: an etcd that stops answering without
// closing the connection (a network partition, a frozen host) is seen as
// lost within etcdKeepAliveTime + etcdKeepAliveTimeout, not only when a
// request times out. etcd refuses pings more often than every 5 s
// (--grpc-keepalive-min-time).
const (
	etcdKeepAliveTime    = 10 * time.Second
	etcdKeepAliveTimeout = 5 * time.Second
)

// etcdReconnectBackoff is the client's backoff between connection attempts
// while etcd is away: gRPC's default, but at most 5 s apart (gRPC's 2 min
// would leave the agent up to 2 min behind an etcd that came back after a
// long outage).
var etcdReconnectBackoff = func() backoff.Config {
	b := backoff.DefaultConfig
	b.MaxDelay = 5 * time.Second
	return b
}()

// dial makes the source's etcd client.
func (p *etcdPart) dial(context.Context) (*clientv3.Client, error) {
	cc := clientv3.Config{Endpoints: p.endpoints, DialTimeout: p.dialTimeout, Logger: etcdsource.ZapLogger(p.log),
		DialKeepAliveTime: etcdKeepAliveTime, DialKeepAliveTimeout: etcdKeepAliveTimeout,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{Backoff: etcdReconnectBackoff, MinConnectTimeout: 20 * time.Second})}}
	if p.password.IsSet() {
		cc.Username, cc.Password = etcdsource.RootUser, p.password.Reveal()
	}
	return clientv3.New(cc)
}

// start starts the embedded server (if any) and makes the source's client.
func (p *etcdPart) start(ctx context.Context) error {
	if p.embedded != nil {
		if err := p.embedded.Start(); err != nil {
			return err
		}
		p.endpoints = []string{p.embedded.ClientURL()}
		p.log.Info("embedded etcd serving", "client_url", p.embedded.ClientURL(), "dir", p.dir,
			"authentication", p.password.IsSet())
	}
	return p.source.Connect(ctx)
}

// run runs the source until ctx ends.
func (p *etcdPart) run(ctx context.Context) {
	if err := p.source.Run(ctx); err != nil {
		p.log.Error("etcd source stopped", "error", err)
	}
}

// close closes the client and stops the embedded server; run must have
// returned.
func (p *etcdPart) close() {
	p.source.Close()
	if p.embedded != nil {
		p.embedded.Close()
	}
}

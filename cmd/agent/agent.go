package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/metrics"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/filesource"
)

// Agent is the daemon. New builds every part from the configuration and
// wires them; Run starts them, serves until its context ends and stops
// them. Nothing of the agent runs between New and Run (kvscheduler.New
// starts the scheduler's own worker, which waits for transactions), so no
// part can see another half made.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	started time.Time

	registry *prometheus.Registry
	sched    *kvscheduler.Scheduler
	orch     *orchestrator.Orchestrator
	linux    *linuxPart // nil: linux.disabled
	vpp      *vppPart   // nil: vpp.disabled
	etcd     *etcdPart  // nil: no etcd
	initFile *filesource.Source
	servers  servers

	// running is closed once Run started everything.
	running chan struct{}
}

// Addresses are the bound addresses of the listeners ("" when off).
type Addresses struct {
	REST, GRPC, Debug string
}

// New builds the agent: the logger (on logOut), the listeners (a port
// already taken is an error now), the scheduler and its metrics, the Linux
// and VPP plugins with their descriptors registered, the orchestrator and
// its sources (the init file is read and checked now), and the servers. On
// error, what it built is released. cfg is checked first (loadConfig
// checked it already; a Config made in code may not be).
func New(cfg Config, logOut io.Writer) (_ *Agent, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	level, _ := parseLevel(cfg.LogLevel)
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	a := &Agent{cfg: cfg, log: log, started: time.Now(), running: make(chan struct{})}
	defer func() {
		if err != nil {
			a.release()
		}
	}()
	effective, _ := json.Marshal(cfg) // the token shows as "(set)": it is a Secret
	log.Info("starting netagent", "config", string(effective), "version", buildVersion()["version"])
	warnBeyondLoopback(cfg, log)
	if a.servers.listeners, err = listen(cfg); err != nil {
		return nil, err
	}

	// The engine, with metrics on a private registry.
	a.registry = prometheus.NewRegistry()
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.New(a.registry, nil)
	if err != nil {
		return nil, err
	}
	sopts := kvscheduler.Options{Logger: log, Observer: m, HistorySize: cfg.Scheduler.HistorySize,
		HistoryMaxBytes: cfg.Scheduler.HistoryMaxBytes, HistoryMaxAge: cfg.Scheduler.HistoryMaxAge.Duration,
		TxnLogMaxItems: cfg.Scheduler.TxnLogMaxItems, DriftReportOnly: cfg.Scheduler.Drift == DriftReport}
	if cfg.Scheduler.TxnLog == "stderr" {
		sopts.TxnLog = logOut
	}
	if cfg.Scheduler.Verify == VerifyReport {
		sopts.Verify = kvscheduler.VerifyReport
	}
	a.sched = kvscheduler.New(sopts)
	m.SetSource(a.sched)
	a.orch = orchestrator.New(a.sched, log)

	// Southbound.
	if !cfg.Linux.Disabled {
		if a.linux, err = newLinuxPart(cfg, a.sched, log); err != nil {
			return nil, err
		}
	}
	if !cfg.VPP.Disabled {
		if a.vpp, err = newVPPPart(cfg, a.sched, a.orch, a.registry, log); err != nil {
			return nil, err
		}
	}

	// Northbound: etcd, the init file, gRPC (registered and synced empty:
	// the first full sync does not wait for a gRPC client).
	if a.etcd, err = newEtcdPart(cfg, a.orch, log); err != nil {
		return nil, err
	}
	if cfg.InitFile != "" {
		if a.initFile, err = filesource.New(cfg.InitFile, cfg.Label, models.Default, a.orch); err != nil {
			return nil, err
		}
		a.orch.Register(orchestrator.SourceInitFile)
	}
	a.orch.Register(orchestrator.SourceGRPC)
	if err := a.buildServers(); err != nil {
		return nil, err
	}
	return a, nil
}

// warnBeyondLoopback warns of each listener beyond loopback without
// authentication (Config.validate refused those that would weaken a
// guarded agent).
func warnBeyondLoopback(cfg Config, log *slog.Logger) {
	const open = "LISTENING BEYOND LOOPBACK WITHOUT AUTHENTICATION: anyone who reaches this address can change the network configuration; set a token and TLS"
	for name, l := range map[string]Listener{"rest": cfg.REST, "grpc": cfg.GRPC.Listener, "debug": cfg.Debug} {
		if l.Address != "" && !loopbackOnly(l.Address) && !cfg.Token.IsSet() && l.TLSCert == "" {
			log.Warn(open, "listener", name, "address", l.Address)
		}
	}
	if cfg.Etcd.EmbeddedDir == "" {
		return
	}
	for name, raw := range map[string]string{"embedded etcd": cfg.Etcd.EmbeddedClientURL, "embedded etcd peer": cfg.Etcd.EmbeddedPeerURL} {
		u, err := url.Parse(raw)
		if err != nil || loopbackOnly(u.Host) {
			continue
		}
		switch {
		case !cfg.Token.IsSet() || name == "embedded etcd peer":
			log.Warn(open, "listener", name, "address", raw)
		default:
			log.Warn("EMBEDDED ETCD BEYOND LOOPBACK OVER PLAIN HTTP: the token (its root password) and the configuration cross the network in clear",
				"listener", name, "address", raw)
		}
	}
}

// Addresses returns the bound addresses of the listeners.
func (a *Agent) Addresses() Addresses {
	return Addresses{REST: a.servers.addr("rest"), GRPC: a.servers.addr("grpc"), Debug: a.servers.addr("debug")}
}

// Running is closed once Run started everything (the servers serve, the
// first full sync is under way or done).
func (a *Agent) Running() <-chan struct{} { return a.running }

// Run starts the agent and runs it until ctx ends, then stops it
// gracefully: no more northbound input, the running transaction finishes,
// the servers stop within the shutdown grace. The dataplane configuration
// stays as it is. Everything New built is released when Run returns; call
// it once.
//
// The order: the embedded etcd and the etcd client (an error ends Run),
// the publisher of the agent's status in etcd (from then on it follows
// the readiness; its lease is revoked when Run returns), the southbound
// loops (Linux watcher, VPP connection), the sources (gRPC
// synced empty or with the change pending confirmation kept in the state
// directory, the init file, etcd), the servers, then the periodic
// resync (scheduler.periodic_resync) once the first full sync is under
// way.
func (a *Agent) Run(ctx context.Context) error {
	defer a.release()
	// The background loops end when Run returns, after the servers stop,
	// before release closes what they use.
	bg, cancelBg := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancelBg()
		wg.Wait()
	}()

	if a.etcd != nil {
		if err := a.etcd.start(ctx); err != nil {
			return err
		}
		if status := a.newStatusPublisher(); status != nil {
			wg.Add(1)
			go func() { defer wg.Done(); status.Run(bg) }()
		}
	}
	if a.linux != nil {
		wg.Add(1)
		go func() { defer wg.Done(); a.linux.run(bg) }()
	}
	if a.vpp != nil {
		a.vpp.run(bg, &wg)
		a.vpp.waitFirstConnect(ctx) // (bounded: see firstConnectWait)
	}
	// The gRPC source: empty, or a change pending confirmation restored
	// from the state directory.
	if _, err := a.servers.configurer.FirstResync(ctx); err != nil && !isValueErr(err) {
		return err
	}
	if a.initFile != nil {
		if err := a.initFile.Run(ctx); err != nil && !isValueErr(err) {
			return err
		} else if err != nil {
			a.log.Warn("init file: some values failed", "error", err)
		}
	}
	if a.etcd != nil {
		wg.Add(1)
		go func() { defer wg.Done(); a.etcd.run(bg) }()
	}
	a.servers.serve(bg, &wg, a.ready)
	if err := a.orch.Start(ctx); err != nil && !isValueErr(err) {
		a.servers.stop(a.cfg.ShutdownGrace.Duration)
		return err
	}
	addrs := a.Addresses()
	a.log.Info("netagent running", "rest", addrs.REST, "grpc", addrs.GRPC, "debug", addrs.Debug)
	if every := a.cfg.Scheduler.PeriodicResync.Duration; every > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); a.periodicResync(bg, every) }()
	}
	close(a.running)

	<-ctx.Done()
	a.log.Info("stopping netagent; the network configuration stays in place")
	a.servers.stop(a.cfg.ShutdownGrace.Duration)
	return nil
}

// release closes what New built, the users first: the scheduler (its
// running transaction finishes), the plugins' handles, the etcd client and
// server, the listeners. The loops using them have ended.
func (a *Agent) release() {
	if a.sched != nil {
		a.sched.Close()
	}
	if a.linux != nil {
		a.linux.close()
	}
	if a.etcd != nil {
		a.etcd.close()
	}
	a.servers.close()
}

// ready tells whether the agent is ready (/readyz, gRPC health), and
// otherwise what it waits for: the first full sync, a VPP connection or
// VPP's resync after it connected.
func (a *Agent) ready() (bool, []string) {
	ok, why := a.orch.Ready()
	if a.vpp != nil {
		if nr := a.vpp.notReady(); len(nr) > 0 {
			ok, why = false, append(why, nr...)
		}
	}
	return ok, why
}

// periodicResync commits a downstream resync every interval until ctx ends
// (scheduler.periodic_resync): the SB is retrieved and what differs from
// the desired state is repaired, such as what no event reports. A tick is
// skipped while the agent is not ready (the first full sync or VPP's
// resync after a reconnect runs: each is a resync itself) and while the
// previous periodic resync runs (Commit blocks, and the ticker drops the
// ticks meanwhile), so that they never pile up in the scheduler's queue.
// A resync that repaired something is logged, with what it executed.
func (a *Agent) periodicResync(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if ok, why := a.ready(); !ok {
			a.log.Debug("periodic resync skipped: the agent is not ready", "waiting for", why)
			continue
		}
		seq, err := a.sched.StartNBTransaction().Commit(ctx, api.TxnOptions{Resync: api.DownstreamResync, Description: "periodic resync"})
		if ctx.Err() != nil {
			return
		}
		if err != nil && !isValueErr(err) {
			a.log.Warn("periodic resync", "txn", seq, "error", err)
			continue
		}
		if rec := a.sched.GetRecordedTransaction(seq); rec != nil && len(rec.Executed) > 0 {
			attrs := []any{"txn", seq, "operations", len(rec.Executed)}
			if err != nil {
				attrs = append(attrs, "error", err) // some values failed
			}
			a.log.Info("periodic resync repaired values out of sync with the SB", attrs...)
		}
	}
}

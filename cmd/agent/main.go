// Command agent is the netagent daemon: it reads the desired network state
// from etcd, gRPC clients and an init file, and keeps Linux (and, later,
// VPP) in that state through the KV Scheduler.
//
//	agent --etcd-embedded /var/lib/netagent/etcd --init-file examples/veth-route.yaml
//
// See README.md for the listeners and the configuration.
package main

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/metrics"
	"github.com/netagent-io/netagent/plugins/kvscheduler/rest"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource"
	vppif "github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	vppl2 "github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	vppl3 "github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

func main() {
	cfg, err := loadConfig(os.Args[1:], os.Getenv)
	if errors.Is(err, errHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

var errHelp = errors.New("help")

// version is set with -ldflags "-X main.version=...", else read from the
// build information.
var version = ""

func buildVersion() map[string]string {
	info := map[string]string{"version": version}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info["version"] == "" {
			info["version"] = bi.Main.Version
		}
		info["go"] = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.time" || s.Key == "vcs.modified" {
				info[s.Key] = s.Value
			}
		}
	}
	return info
}

// Listening tells the caller (tests) where the listeners are.
type Listening struct {
	REST, GRPC, Debug string
}

// run runs the agent until ctx ends. listening, when not nil, receives the
// bound addresses once they are open.
func run(ctx context.Context, cfg Config, logOut io.Writer, listening chan<- Listening) error {
	level, _ := parseLevel(cfg.LogLevel)
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	effective, _ := json.Marshal(cfg)
	effective = []byte(strings.ReplaceAll(string(effective), `"token":"`+cfg.Token+`"`, `"token":"(set)"`))
	if cfg.Token == "" {
		effective = []byte(strings.ReplaceAll(string(effective), `"token":"(set)"`, `"token":""`))
	}
	log.Info("starting netagent", "config", string(effective), "version", buildVersion()["version"])
	for name, l := range map[string]Listener{"rest": cfg.REST, "grpc": cfg.GRPC, "debug": cfg.Debug} {
		if l.Address != "" && !loopbackOnly(l.Address) && cfg.Token == "" && l.TLSCert == "" {
			log.Warn("LISTENING BEYOND LOOPBACK WITHOUT AUTHENTICATION: anyone who reaches this address can change the network configuration; set a token and TLS",
				"listener", name, "address", l.Address)
		}
	}

	// Listeners first: a port already taken is a clear error before anything
	// else starts.
	lns := map[string]net.Listener{}
	closeAll := func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	for name, l := range map[string]Listener{"rest": cfg.REST, "grpc": cfg.GRPC, "debug": cfg.Debug} {
		if l.Address == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.Address)
		if err != nil {
			closeAll()
			return fmt.Errorf("%s listener on %s: %w", name, l.Address, err)
		}
		if l.TLSCert != "" {
			cert, err := tls.LoadX509KeyPair(l.TLSCert, l.TLSKey)
			if err != nil {
				closeAll()
				return fmt.Errorf("%s TLS: %w", name, err)
			}
			if name != "grpc" {
				ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
			}
		}
		lns[name] = ln
	}
	defer closeAll()

	// The engine, with metrics on a private registry.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.New(reg, nil)
	if err != nil {
		return err
	}
	sopts := kvscheduler.Options{Logger: log, Observer: m, HistorySize: cfg.Scheduler.HistorySize,
		HistoryMaxBytes: cfg.Scheduler.HistoryMaxBytes, HistoryMaxAge: cfg.Scheduler.HistoryMaxAge.Duration,
		TxnLogMaxItems: cfg.Scheduler.TxnLogMaxItems}
	if cfg.Scheduler.TxnLog == "stderr" {
		sopts.TxnLog = logOut
	}
	s := kvscheduler.New(sopts)
	defer s.Close()
	m.SetSource(s)

	var wg sync.WaitGroup
	bgCtx, cancelBg := context.WithCancel(context.Background())

	// Southbound plugins. Background goroutines end before what they use is
	// closed (deferred calls run last-in first-out).
	var closers []func()
	defer func() {
		cancelBg()
		wg.Wait()
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	if !cfg.Linux.Disabled {
		nsm, err := nsplugin.NewManager()
		if err != nil {
			return err
		}
		closers = append(closers, nsm.Close)
		ifp := ifplugin.New(nsm, log)
		ifp.SetLabel(cfg.Label)
		ifp.SetVPPDisabled(cfg.VPP.Disabled)
		l3 := l3plugin.New(nsm, l3plugin.SchedulerInterfaces(s), log)
		l3.SetInterfaceLister(l3plugin.SchedulerInterfaceNames(s))
		if err := s.RegisterKVDescriptor(append(ifp.Descriptors(), ifplugin.WatcherDescriptor())...); err != nil {
			return err
		}
		if err := s.RegisterKVDescriptor(l3.Descriptors()...); err != nil {
			return err
		}
		w := ifplugin.NewWatcher(nsm, s, log)
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(bgCtx) }()
	}

	// VPP: connected in the background. While it is away the operations of
	// VPP values fail (FAILED, "VPP is not connected"); each (re)connect
	// after the first sync runs a downstream resync with retries, which
	// applies them, and after a VPP restart (empty) re-creates everything
	// in dependency order.
	var vppm *vppconn.Manager
	// vppResyncs counts the resyncs after a VPP (re)connect under way: the
	// agent is not ready while VPP is being brought back to the state.
	var vppResyncs atomic.Int32
	// The orchestrator exists before VPP can connect: OnConnect reads it
	// (it was assigned after vppm.Run started, a data race when VPP
	// connected at once).
	o := orchestrator.New(s, log)
	var linkWatcher *vppif.LinkStateWatcher
	if !cfg.VPP.Disabled {
		vppm = vppconn.New(vppconn.Options{Socket: cfg.VPP.Socket, CallTimeout: cfg.VPP.CallTimeout.Duration, Log: log,
			OnConnect: func(restarted, first bool) {
				linkWatcher.Resync()
				select {
				case <-o.Started():
				default:
					return // the first full resync comes after
				}
				vppResyncs.Add(1)
				go func() {
					defer vppResyncs.Add(-1)
					opts := api.TxnOptions{Resync: api.DownstreamResync, Retry: api.DefaultRetry(),
						Description: fmt.Sprintf("VPP connected (restarted: %v)", restarted)}
					if _, err := s.StartNBTransaction().Commit(context.Background(), opts); err != nil && !isValueErr(err) {
						log.Warn("resync after the VPP connect", "error", err)
					}
				}()
			}})
		vif := vppif.New(vppm, log)
		vif.SetLinuxDisabled(cfg.Linux.Disabled)
		l2 := vppl2.New(vppm, vppif.SchedulerInterfaces(s), log)
		l2.SetInterfaceLister(vppif.SchedulerInterfaceNames(s))
		l3 := vppl3.New(vppm, vppif.SchedulerInterfaces(s), log)
		l3.SetInterfaceLister(vppif.SchedulerInterfaceNames(s))
		for _, a := range append(vif.Areas(), l2.Area(), l3.Area()) {
			vppm.AddArea(a)
		}
		for _, ds := range [][]*api.KVDescriptor{vif.Descriptors(), l2.Descriptors(), l3.Descriptors()} {
			if err := s.RegisterKVDescriptor(ds...); err != nil {
				return err
			}
		}
		linkWatcher = vppif.NewLinkStateWatcher(vppm, s, log)
		vppm.AddArea(linkWatcher.Area())
		wg.Add(1)
		go func() { defer wg.Done(); linkWatcher.Run(bgCtx) }()
		if err := vppm.Register(reg); err != nil {
			return err
		}
		wg.Add(1)
		go func() { defer wg.Done(); vppm.Run(bgCtx) }()
	}

	// Northbound.
	var etcdClient *clientv3.Client
	endpoints := cfg.Etcd.Endpoints
	if cfg.Etcd.EmbeddedDir != "" {
		e, err := etcdsource.StartEmbedded(etcdsource.EmbeddedConfig{Dir: cfg.Etcd.EmbeddedDir,
			ClientURL: cfg.Etcd.EmbeddedClientURL, PeerURL: cfg.Etcd.EmbeddedPeerURL, Log: log})
		if err != nil {
			return fmt.Errorf("embedded etcd: %w", err)
		}
		closers = append(closers, e.Close)
		endpoints = []string{e.ClientURL()}
		log.Info("embedded etcd serving", "client_url", e.ClientURL(), "dir", cfg.Etcd.EmbeddedDir)
	}
	if len(endpoints) > 0 {
		o.Register(orchestrator.SourceEtcd)
		etcdClient, err = clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: cfg.Etcd.DialTimeout.Duration, Logger: etcdsource.ZapLogger(log)})
		if err != nil {
			return fmt.Errorf("etcd client: %w", err)
		}
		closers = append(closers, func() { _ = etcdClient.Close() })
	}
	if cfg.InitFile != "" {
		o.Register(orchestrator.SourceInitFile)
	}
	o.Register(orchestrator.SourceGRPC)
	if _, err := o.Resync(ctx, orchestrator.SourceGRPC, nil, api.TxnOptions{}); err != nil && !isValueErr(err) {
		return err
	}
	if cfg.InitFile != "" {
		kvs, err := readInitFile(cfg.InitFile, cfg.Label)
		if err != nil {
			return err
		}
		if _, err := o.Resync(ctx, orchestrator.SourceInitFile, kvs, api.TxnOptions{}); err != nil && !isValueErr(err) {
			return err
		} else if err != nil {
			log.Warn("init file: some values failed", "error", err)
		}
	}
	if etcdClient != nil {
		src := etcdsource.New(etcdClient, o, etcdsource.Options{Label: cfg.Label, Log: log})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := src.Run(bgCtx); err != nil {
				log.Error("etcd source stopped", "error", err)
			}
		}()
	}

	ready := func() (bool, []string) {
		ok, why := o.Ready()
		if vppm != nil {
			if nr := vppm.Status().NotReady(); len(nr) > 0 {
				ok, why = false, append(why, nr...)
			} else if vppResyncs.Load() > 0 {
				ok, why = false, append(why, "VPP connected, its configuration being applied")
			}
		}
		return ok, why
	}

	// gRPC.
	var gs *grpc.Server
	var gsrc *grpcsource.Server
	hs := health.NewServer()
	if ln := lns["grpc"]; ln != nil {
		opts := []grpc.ServerOption{
			grpc.ChainUnaryInterceptor(tokenUnary(cfg.Token)),
			grpc.ChainStreamInterceptor(tokenStream(cfg.Token)),
		}
		if cfg.GRPC.TLSCert != "" {
			creds, err := credentials.NewServerTLSFromFile(cfg.GRPC.TLSCert, cfg.GRPC.TLSKey)
			if err != nil {
				return fmt.Errorf("grpc TLS: %w", err)
			}
			opts = append(opts, grpc.Creds(creds))
		}
		gs = grpc.NewServer(opts...)
		gsrc = grpcsource.New(o, s, models.Default, log)
		gsrc.Register(gs)
		healthpb.RegisterHealthServer(gs, hs)
		reflection.Register(gs)
		setHealth(hs, healthpb.HealthCheckResponse_NOT_SERVING)
		wg.Add(1)
		go func() { defer wg.Done(); followReadiness(bgCtx, hs, ready, readinessPoll) }()
		go func() { _ = gs.Serve(ln) }()
	}

	// REST.
	mux := http.NewServeMux()
	mux.Handle("/scheduler/", requireToken(cfg.Token, rest.NewHandler(s, rest.Options{TxnLogMaxItems: cfg.Scheduler.TxnLogMaxItems})))
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]string{"status": "alive"}) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := ready(); !ok {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "waiting_for": why})
			return
		}
		writeJSON(w, 200, map[string]string{"status": "ready"})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /info/version", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, buildVersion()) })
	started := time.Now()
	mux.HandleFunc("GET /info/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, agentStatus(cfg, started, endpoints, ready, o, s, vppm))
	})
	var servers []*http.Server
	if ln := lns["rest"]; ln != nil {
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: httpErrorLog(log, "rest")}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	if ln := lns["debug"]; ln != nil {
		dm := http.NewServeMux()
		dm.HandleFunc("/debug/pprof/", pprof.Index)
		dm.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		dm.HandleFunc("/debug/pprof/profile", pprof.Profile)
		dm.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		dm.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Handler: dm, ReadHeaderTimeout: 10 * time.Second, ErrorLog: httpErrorLog(log, "debug")}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	if len(lns) == 0 || (lns["grpc"] == nil && lns["rest"] == nil) {
		log.Warn("no REST or gRPC listener: the agent is configured by etcd and the init file only")
	}
	if err := o.Start(ctx); err != nil && !isValueErr(err) {
		return err
	}
	addr := func(name string) string {
		if ln := lns[name]; ln != nil {
			return ln.Addr().String()
		}
		return ""
	}
	log.Info("netagent running", "rest", addr("rest"), "grpc", addr("grpc"), "debug", addr("debug"))
	if listening != nil {
		listening <- Listening{REST: addr("rest"), GRPC: addr("grpc"), Debug: addr("debug")}
	}

	<-ctx.Done()
	// Graceful stop: no more NB input, the running transaction finishes,
	// listeners close. The dataplane configuration stays as it is.
	log.Info("stopping netagent; the network configuration stays in place")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace.Duration)
	defer cancel()
	cancelBg()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	if gs != nil {
		hs.Shutdown() // NOT_SERVING for every service from now on
		gsrc.Close()  // ends the open WatchStatus and Notify streams
		stopped := make(chan struct{})
		go func() { gs.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-shutdownCtx.Done():
			gs.Stop()
		}
	}
	return nil
}

// healthServices are the services whose gRPC health status follows the
// agent's readiness: "" (the server as a whole) and the configurator.
var healthServices = []string{"", configuratorpb.Configurator_ServiceDesc.ServiceName}

// readinessPoll is how often followReadiness evaluates the readiness. The
// VPP connection manager tells nothing when the connection is lost, so the
// health status is kept equal to what /readyz answers by evaluating the
// same function (a few mutexes) this often.
const readinessPoll = 200 * time.Millisecond

// setHealth sets the health status of healthServices.
func setHealth(hs *health.Server, st healthpb.HealthCheckResponse_ServingStatus) {
	for _, svc := range healthServices {
		hs.SetServingStatus(svc, st)
	}
}

// followReadiness keeps the gRPC health status of healthServices equal to
// the readiness (/readyz): SERVING when ready, NOT_SERVING when not, both
// ways, until ctx ends. The caller sets NOT_SERVING before the gRPC server
// serves; the health server notifies Watch streams of each change.
func followReadiness(ctx context.Context, hs *health.Server, ready func() (bool, []string), every time.Duration) {
	current := healthpb.HealthCheckResponse_NOT_SERVING
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		st := healthpb.HealthCheckResponse_NOT_SERVING
		if ok, _ := ready(); ok {
			st = healthpb.HealthCheckResponse_SERVING
		}
		if st != current {
			current = st
			setHealth(hs, st)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// httpErrorLog routes net/http's own messages (TLS handshake errors, bad
// requests it answers itself) into the agent's log, at warn level.
func httpErrorLog(log *slog.Logger, listener string) *stdlog.Logger {
	return slog.NewLogLogger(log.With("listener", listener).Handler(), slog.LevelWarn)
}

func isValueErr(err error) bool {
	var te *api.TransactionError
	return errors.As(err, &te) && te.TxnInitError == nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	data, _ := json.MarshalIndent(v, "", "  ")
	_, _ = w.Write(append(data, '\n'))
}

// validToken compares a presented bearer token in constant time.
func validToken(token, header string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// requireToken guards the REST requests that change state (not GET/HEAD).
func requireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !validToken(token, r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="netagent"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "this request changes state: send Authorization: Bearer <token>"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// changing lists the gRPC methods that change state.
func changing(fullMethod string) bool {
	return strings.HasSuffix(fullMethod, "/Update") || strings.HasSuffix(fullMethod, "/Delete")
}

func checkToken(ctx context.Context, token, method string) error {
	if token == "" || !changing(method) {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if validToken(token, v) {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "this call changes state: send the metadata authorization: Bearer <token>")
}

func tokenUnary(token string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := checkToken(ctx, token, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

func tokenStream(token string) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := checkToken(ss.Context(), token, info.FullMethod); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/rest"
	"github.com/netagent-io/netagent/plugins/kvscheduler/webui"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato"
	ligatomanager "github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato/manager"
	ligatometa "github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato/meta"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/msglimit"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
)

// servers are the agent's listeners and what serves on them: gRPC (the
// Configurator, the original's ConfiguratorService, health, reflection),
// REST (the scheduler's API, health, metrics, info) and debug (pprof). A
// listener not configured has no server. The Configurator is built
// whatever the listeners: it delivers the gRPC source's first state
// (FirstResync), which may restore a change pending confirmation.
type servers struct {
	listeners map[string]net.Listener

	grpc       *grpc.Server
	configurer *grpcsource.Server
	ligato     *ligato.Server
	health     *health.Server
	rest       *http.Server
	debug      *http.Server
}

// listen opens the configured listeners and loads their certificates (TLS
// for REST and debug here; the gRPC server does its own): a port already taken is a clear error before
// anything starts.
func listen(cfg Config) (map[string]net.Listener, error) {
	lns := map[string]net.Listener{}
	closeAll := func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	for name, l := range map[string]Listener{"rest": cfg.REST, "grpc": cfg.GRPC.Listener, "debug": cfg.Debug} {
		if l.Address == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.Address)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%s listener on %s: %w", name, l.Address, err)
		}
		lns[name] = ln
		if l.TLSCert != "" {
			cert, err := tls.LoadX509KeyPair(l.TLSCert, l.TLSKey)
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("%s TLS: %w", name, err)
			}
			if name != "grpc" {
				lns[name] = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
			}
		}
	}
	return lns, nil
}

// buildServers builds the servers of the open listeners.
func (a *Agent) buildServers() error {
	srv := &a.servers
	// The northbound sources' state is exported with the scheduler's
	// metrics (on /metrics of the REST listener).
	if err := a.registry.Register(newNorthboundCollector(a.orch)); err != nil {
		return fmt.Errorf("northbound metrics: %w", err)
	}
	srv.configurer = grpcsource.New(a.orch, a.sched, models.Default, a.log)
	srv.configurer.EnableConfirm(grpcsource.ConfirmOptions{StateDir: a.cfg.StateDir})
	if err := a.registry.Register(newConfirmCollector(srv.configurer)); err != nil {
		return fmt.Errorf("confirm metrics: %w", err)
	}
	srv.health = health.NewServer()
	if ln := srv.listeners["grpc"]; ln != nil {
		opts := []grpc.ServerOption{
			grpc.ChainUnaryInterceptor(tokenUnary(a.cfg.Token)),
			grpc.ChainStreamInterceptor(tokenStream(a.cfg.Token)),
			grpc.MaxRecvMsgSize(int(a.cfg.GRPC.MaxRecvMsgSize)),
			grpc.MaxSendMsgSize(int(a.cfg.GRPC.MaxSendMsgSize)),
			grpc.StatsHandler(msglimit.ServerLog(a.log)),
		}
		if a.cfg.GRPC.TLSCert != "" {
			creds, err := credentials.NewServerTLSFromFile(a.cfg.GRPC.TLSCert, a.cfg.GRPC.TLSKey)
			if err != nil {
				return fmt.Errorf("grpc TLS: %w", err)
			}
			opts = append(opts, grpc.Creds(creds))
		}
		srv.grpc = grpc.NewServer(opts...)
		srv.configurer.Register(srv.grpc)
		srv.ligato = ligato.New(srv.configurer, a.orch, a.sched, ligato.Options{Log: a.log})
		srv.ligato.Register(srv.grpc)
		meta, err := ligatometa.New(models.Default)
		if err != nil {
			return fmt.Errorf("ligato.generic.MetaService: %w", err)
		}
		meta.Register(srv.grpc)
		manager, err := ligatomanager.New(srv.configurer, a.orch, a.sched, ligatomanager.Options{Log: a.log})
		if err != nil {
			return fmt.Errorf("ligato.generic.ManagerService: %w", err)
		}
		manager.Register(srv.grpc)
		healthpb.RegisterHealthServer(srv.grpc, srv.health)
		reflection.Register(srv.grpc)
		setHealth(srv.health, healthpb.HealthCheckResponse_NOT_SERVING)
	}
	if ln := srv.listeners["rest"]; ln != nil {
		srv.rest = &http.Server{Handler: a.restHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: httpErrorLog(a.log, "rest")}
	}
	if ln := srv.listeners["debug"]; ln != nil {
		dm := http.NewServeMux()
		dm.HandleFunc("/debug/pprof/", pprof.Index)
		dm.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		dm.HandleFunc("/debug/pprof/profile", pprof.Profile)
		dm.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		dm.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv.debug = &http.Server{Handler: dm, ReadHeaderTimeout: 10 * time.Second, ErrorLog: httpErrorLog(a.log, "debug")}
	}
	if srv.grpc == nil && srv.rest == nil {
		a.log.Warn("no REST or gRPC listener: the agent is configured by etcd and the init file only")
	}
	return nil
}

// restHandler is the REST API, and the web view under /ui/. The probes, the
// metrics, the info and the web view answer GET (and HEAD) only; other
// methods get 405. The web view only reads, and is under the token rule of
// the REST API all the same: without the token (when one is set) a
// request other than GET or HEAD gets 401.
func (a *Agent) restHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/scheduler/", requireToken(a.cfg.Token, rest.NewHandler(a.sched, rest.Options{
		TxnLogMaxItems: a.cfg.Scheduler.TxnLogMaxItems, OriginalMessageNames: originalMessageNames(models.Default),
		Disabled: a.disabledReason, ModelKeyPrefix: modelKeyPrefix})))
	mux.Handle("/ui/", requireToken(a.cfg.Token, webui.NewHandler(a.sched, webui.Options{Health: a.healthChecks})))
	livez := func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]string{"status": "alive"}) }
	readyz := func(w http.ResponseWriter, r *http.Request) {
		code, body := a.readyz()
		writeJSON(w, code, body)
	}
	mux.HandleFunc("GET /livez", livez)
	mux.HandleFunc("GET /readyz", readyz)
	// The original agent's names of the probes, answered as ours.
	mux.HandleFunc("GET /liveness", livez)
	mux.HandleFunc("GET /readiness", readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /info/version", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, versionInfo()) })
	mux.HandleFunc("GET /info/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, a.status()) })
	return mux
}

// modelKeyPrefix is rest.Options.ModelKeyPrefix: the key prefix of the
// model a name or an alias names (models.Registry.Lookup).
func modelKeyPrefix(name string) (string, error) {
	m, err := models.Default.Lookup(name)
	if err != nil {
		return "", err
	}
	return m.KeyPrefix, nil
}

// serve starts the servers (and the gRPC health's follower of the
// readiness, until ctx ends) on goroutines counted by wg; stop ends them.
func (srv *servers) serve(ctx context.Context, wg *sync.WaitGroup, ready func() (bool, []string)) {
	if srv.grpc != nil {
		wg.Add(2)
		go func() { defer wg.Done(); followReadiness(ctx, srv.health, ready, readinessPoll) }()
		go func() { defer wg.Done(); _ = srv.grpc.Serve(srv.listeners["grpc"]) }()
	}
	for name, hs := range map[string]*http.Server{"rest": srv.rest, "debug": srv.debug} {
		if hs != nil {
			wg.Add(1)
			go func() { defer wg.Done(); _ = hs.Serve(srv.listeners[name]) }()
		}
	}
}

// stop stops the servers gracefully within grace: no new requests, the
// running ones finish (the streams of the Configurator are ended), then
// the connections close.
func (srv *servers) stop(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for _, hs := range []*http.Server{srv.rest, srv.debug} {
		if hs != nil {
			_ = hs.Shutdown(ctx)
		}
	}
	if srv.configurer != nil {
		srv.configurer.Close() // ends the open WatchStatus and Notify streams, and a pending deadline
	}
	if srv.grpc != nil {
		srv.health.Shutdown() // NOT_SERVING for every service from now on
		srv.ligato.Close()    // and the original's Notify streams
		stopped := make(chan struct{})
		go func() { srv.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			srv.grpc.Stop()
			<-stopped
		}
	}
}

// close closes the listeners (those the servers did not take over), and
// stops the original's configurator following the interface states when
// Run did not stop it (New failed after building it, or Run ended early).
func (srv *servers) close() {
	if srv.ligato != nil {
		srv.ligato.Close()
	}
	for _, ln := range srv.listeners {
		_ = ln.Close()
	}
}

// addr returns the bound address of a listener ("" when off).
func (srv *servers) addr(name string) string {
	if ln := srv.listeners[name]; ln != nil {
		return ln.Addr().String()
	}
	return ""
}

// healthServices are the services whose gRPC health status follows the
// agent's readiness: "" (the server as a whole) and the configurators.
var healthServices = []string{"", configuratorpb.Configurator_ServiceDesc.ServiceName, ligatocfg.ConfiguratorService_ServiceDesc.ServiceName}

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
// the readiness (/readyz): SERVING when ready (degraded included: gRPC
// health has no such state, and a degraded agent serves), NOT_SERVING
// when not, both ways, until ctx ends. The caller sets NOT_SERVING
// before the gRPC server serves; the health server notifies Watch streams
// of each change.
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

// readyzJSON is the answer of GET /readyz.
type readyzJSON struct {
	// Status is "ready", "degraded" (ready, but a northbound source lost
	// its connection) or "not ready".
	Status     string   `json:"status"`
	WaitingFor []string `json:"waiting_for,omitempty"`
	Degraded   []string `json:"degraded,omitempty"`
}

// readyz is the answer of GET /readyz: 503 "not ready" with what the agent
// waits for; otherwise 200, "ready", or "degraded" with the reasons when a
// northbound source lost its connection. A degraded agent is ready: it
// keeps serving and keeps the dataplane as it is, and its gRPC
// Configurator is then the way to change the configuration, so neither
// /readyz nor gRPC health (which follows ready) take it out of service.
func (a *Agent) readyz() (int, readyzJSON) {
	ok, why := a.ready()
	degraded := a.orch.Degraded()
	switch {
	case !ok:
		return http.StatusServiceUnavailable, readyzJSON{Status: "not ready", WaitingFor: why, Degraded: degraded}
	case len(degraded) > 0:
		return http.StatusOK, readyzJSON{Status: "degraded", Degraded: degraded}
	}
	return http.StatusOK, readyzJSON{Status: "ready"}
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

// originalMessageNames maps the message of each model of reg to the
// original agent's message of the same model, for the scheduler's REST
// answers to the original's agentctl.
func originalMessageNames(reg *models.Registry) map[protoreflect.FullName]protoreflect.FullName {
	names := map[protoreflect.FullName]protoreflect.FullName{}
	for _, m := range reg.Models() {
		if original, ok := ligatomanager.OriginalMessages[m.Name]; ok {
			names[m.MessageName()] = original
		}
	}
	return names
}

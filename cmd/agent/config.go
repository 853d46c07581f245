package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	yamlv3 "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/msglimit"
)

// Config is the agent's configuration: defaults, then the YAML file
// (--config), then the environment, then flags. Unknown YAML fields are an
// error.
type Config struct {
	// Label is the microservice label: etcd keys are under
	// /vnf-agent/<label>/ (env MICROSERVICE_LABEL).
	Label    string `json:"label"`
	LogLevel string `json:"log_level"`

	REST  Listener `json:"rest"`
	GRPC  GRPC     `json:"grpc"`
	Debug Listener `json:"debug"`
	// Token, when set, is required as "Authorization: Bearer <token>" by
	// every REST request and gRPC call that changes state (env
	// NETAGENT_TOKEN; a file with --token-file). It is a Secret: logs,
	// errors and the configuration dump show "(set)".
	Token Secret `json:"token"`

	Etcd     Etcd   `json:"etcd"`
	InitFile string `json:"init_file"`

	Linux     Linux     `json:"linux"`
	VPP       VPP       `json:"vpp"`
	Scheduler Scheduler `json:"scheduler"`

	// ShutdownGrace bounds a graceful stop (SIGTERM/SIGINT).
	ShutdownGrace Duration `json:"shutdown_grace"`
	// StateDir is the agent's state directory (--state-dir): it keeps a
	// gRPC change pending confirmation (confirm_within) over a restart
	// (grpcsource.StateFileName, mode 0600). Made when first needed; one
	// that cannot be written refuses changes to confirm. Default
	// /var/lib/netagent.
	StateDir string `json:"state_dir"`
}

// Listener is a TCP listener; an empty address disables it.
type Listener struct {
	Address string `json:"address"`
	// TLSCert and TLSKey enable TLS.
	TLSCert string `json:"tls_cert"`
	TLSKey  string `json:"tls_key"`
}

// GRPC is the gRPC listener and the size limits of its messages: a
// message over a limit is refused, the agent logs it, and agentctl says
// which side refused it and which setting to raise.
type GRPC struct {
	Listener
	// MaxRecvMsgSize is the largest request the agent takes, such as a
	// configuration document (100k routes: 4.3 MB); default 64 MiB.
	MaxRecvMsgSize ByteSize `json:"max_recv_msg_size"`
	// MaxSendMsgSize is the largest answer it sends (config get, dump and
	// plan of a big configuration); default 64 MiB.
	MaxSendMsgSize ByteSize `json:"max_send_msg_size"`
}

// ByteSize is a size in bytes, written 64MiB, 8MB or as a number of bytes
// (msglimit.Parse).
type ByteSize int

// UnmarshalJSON implements json.Unmarshaler.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	var text string
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		text = v
	case float64:
		text = strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return &json.UnmarshalTypeError{Value: "bool", Type: reflect.TypeOf(0)}
	case []any:
		return &json.UnmarshalTypeError{Value: "array", Type: reflect.TypeOf(0)}
	default:
		return &json.UnmarshalTypeError{Value: "object", Type: reflect.TypeOf(0)}
	}
	n, err := msglimit.Parse(text)
	if err != nil {
		return err
	}
	*b = ByteSize(n)
	return nil
}

// MarshalJSON writes the size as UnmarshalJSON reads it ("64 MiB").
func (b ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(msglimit.FormatLimit(int(b))) }

// Etcd says where the NB configuration is.
type Etcd struct {
	// Endpoints of an external cluster (env ETCD_ENDPOINTS, comma
	// separated).
	Endpoints []string `json:"endpoints"`
	// EmbeddedDir runs an in-process etcd server with its data there. With
	// a token, its clients authenticate as user root with the token as
	// password (the agent does, agentctl kvdb does when given the token);
	// without one, anyone who reaches EmbeddedClientURL can write the
	// configuration. Beyond loopback, the embedded etcd is refused when
	// TLS is configured without a token (it would be the one door without
	// authentication) and its peer URL is refused when a token or TLS is
	// configured (the peer listener has no authentication; a one-member
	// cluster has no peers); otherwise it is a loud warning.
	EmbeddedDir       string `json:"embedded_dir"`
	EmbeddedClientURL string `json:"embedded_client_url"`
	EmbeddedPeerURL   string `json:"embedded_peer_url"`
	// EmbeddedCompactionRetention is how long the embedded etcd keeps the
	// earlier revisions of keys (the values of deleted keys included):
	// every retention it compacts to the revision it had a retention ago,
	// so the memory of configuration that is gone comes back one to two
	// retentions after it went (docs/memory.md). Default 1m; 0 takes the
	// default; negative (-1s): never compact; at least 1s otherwise.
	// etcdsource.EmbeddedConfig.CompactionRetention.
	EmbeddedCompactionRetention Duration `json:"embedded_compaction_retention"`
	DialTimeout                 Duration `json:"dial_timeout"`
	// Status is the agent's status, published in this etcd where the
	// original agent published it (internal/etcdstatus).
	Status EtcdStatus `json:"status"`
}

// EtcdStatus configures the agent's status in etcd: the keys
// /vnf-agent/<label>/check/status/v1/agent and .../plugin/<name>, in the
// original's JSON, under a lease kept alive while the agent lives.
type EtcdStatus struct {
	// Disabled publishes nothing.
	Disabled bool `json:"disabled"`
	// TTL is the lease's time to live: a dead agent's status disappears
	// within it (so does that of an agent cut off from etcd longer). At
	// least MinStatusTTL; whole seconds (rounded up). Default 10s.
	TTL Duration `json:"ttl"`
	// Values publishes the status of every value of the scheduler as well,
	// under .../check/status/v1/value/<value key> and the same lease
	// (etcdstatus.Options.Values), for controllers that want them. Off by
	// default: it costs an etcd write per change of a value's status.
	Values bool `json:"values"`
}

// MinStatusTTL is the shortest etcd.status.ttl: the lease is renewed every
// third of it, and etcd itself gives no lease less than about 1.5 s.
const MinStatusTTL = 2 * time.Second

// Linux configures the Linux plugins.
type Linux struct {
	// Disabled runs the agent without its Linux side (no Linux plugins, no
	// Linux interface watcher): Linux values are not handled, and VPP
	// values that wait for a Linux interface (AF_PACKET) say that it never
	// comes (linux.disabled).
	Disabled bool `json:"disabled"`
	// AdoptOriginalRoutes lets a route value take over the kernel route
	// the original agent (vpp-agent) made for it: protocol boot and
	// exactly the value's attributes, replaced in place with the agent's
	// protocol (l3plugin.Plugin.SetAdoptOriginalRoutes, docs/migration.md).
	// On by default; false leaves such a route alone and the value FAILED
	// with the conflict, as for any foreign route in the way.
	AdoptOriginalRoutes bool `json:"adopt_original_routes"`
}

// VPP configures the VPP plugins.
type VPP struct {
	// Socket is VPP's binary API socket; "off" (or disabled) runs without
	// the VPP plugins.
	Socket string `json:"socket"`
	// Disabled runs the agent without the VPP plugins: VPP values are not
	// handled, and Linux values that wait for a VPP interface (TAP_TO_VPP)
	// say that it never comes (vpp.disabled).
	Disabled bool `json:"disabled"`
	// CallTimeout bounds every VPP call.
	CallTimeout Duration `json:"call_timeout"`
}

// Scheduler configures the KV Scheduler.
type Scheduler struct {
	// HistorySize, HistoryMaxBytes and HistoryMaxAge bound the transaction
	// history (0: the scheduler's defaults, 1000 records, 16 MiB, 24 h;
	// docs/memory.md).
	HistorySize     int      `json:"history_size"`
	HistoryMaxBytes int      `json:"history_max_bytes"`
	HistoryMaxAge   Duration `json:"history_max_age"`
	// TxnLog: "stderr" prints the boxed transaction log, "" or "off" not.
	TxnLog         string `json:"txn_log"`
	TxnLogMaxItems int    `json:"txn_log_max_items"`
	// Drift says what becomes of a value whose SB object the watchers see
	// deleted or changed outside the agent (a link deleted with ip link
	// del, a route or an ARP entry removed, a VPP interface deleted or set
	// down): "repair" (the default) re-applies it with its dependents in a
	// drift repair transaction; "report" only marks it MISSING, "out of sync
	// with the SB" and the cause in its details, until a resync
	// (kvscheduler.Options.DriftReportOnly).
	Drift string `json:"drift"`
	// Verify: "report" reads back, after every transaction, the values it
	// applied (their descriptors' Retrieve) and reports those the SB does
	// not hold as applied (MISSING, or FAILED for a delete not done, the
	// record's verify_failed); "off" (the default) verifies only the changes
	// that ask for it (agentctl config update --verify, which also reverts
	// them). Report costs a read of every descriptor a transaction touched
	// (a VPP route change reads all routes back)
	// (kvscheduler.Options.Verify).
	Verify string `json:"verify"`
	// PeriodicResync, when set, commits a downstream resync at this
	// interval while the agent runs and is ready: it finds and repairs what
	// no event reports (a VPP route or address changed through another API
	// client, a sysctl), and in report mode repairs what was reported. 0
	// (the default) is off; at least MinPeriodicResync otherwise.
	PeriodicResync Duration `json:"periodic_resync"`
}

// The values of Scheduler.Drift.
const (
	DriftRepair = "repair"
	DriftReport = "report"
)

// The values of Scheduler.Verify.
const (
	VerifyOff    = "off"
	VerifyReport = "report"
)

// MinPeriodicResync is the shortest scheduler.periodic_resync: a downstream
// resync retrieves everything the agent manages (seconds with 100k
// values), and the watchers report the usual drift within a second.
const MinPeriodicResync = 10 * time.Second

// Duration reads "30s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %s: want e.g. 30s or 5m", b)
	}
	d.Duration = v
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

func defaultConfig() Config {
	return Config{
		Label:         models.DefaultLabel,
		LogLevel:      "info",
		REST:          Listener{Address: "127.0.0.1:9191"},
		GRPC:          GRPC{Listener: Listener{Address: "127.0.0.1:9111"}, MaxRecvMsgSize: msglimit.Default, MaxSendMsgSize: msglimit.Default},
		Linux:         Linux{AdoptOriginalRoutes: true},
		VPP:           VPP{Socket: "/run/vpp/api.sock", CallTimeout: Duration{5 * time.Second}},
		Scheduler:     Scheduler{Drift: DriftRepair, Verify: VerifyOff},
		Etcd:          Etcd{EmbeddedClientURL: "http://127.0.0.1:2379", EmbeddedPeerURL: "http://127.0.0.1:2380", EmbeddedCompactionRetention: Duration{etcdsource.DefaultCompactionRetention}, DialTimeout: Duration{5 * time.Second}, Status: EtcdStatus{TTL: Duration{etcdstatus.DefaultTTL}}},
		ShutdownGrace: Duration{30 * time.Second},
		StateDir:      "/var/lib/netagent",
	}
}

// loadConfig builds the configuration from args and the environment.
func loadConfig(args []string, getenv func(string) string) (Config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	configFile := fs.String("config", "", "YAML configuration file")
	label := fs.String("label", "", "microservice label (etcd keys under /vnf-agent/<label>/)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error")
	restAddr := fs.String("rest-address", "", "REST listener (host:port; \"\" keeps the configured one, \"off\" disables)")
	grpcAddr := fs.String("grpc-address", "", "gRPC listener (host:port or off)")
	debugAddr := fs.String("debug-address", "", "pprof listener (host:port; off by default)")
	endpoints := fs.String("etcd-endpoints", "", "external etcd endpoints, comma separated")
	embedded := fs.String("etcd-embedded", "", "run an embedded etcd server with its data in this directory")
	embeddedURL := fs.String("etcd-embedded-client-url", "", "client URL of the embedded etcd (default http://127.0.0.1:2379)")
	embeddedPeer := fs.String("etcd-embedded-peer-url", "", "peer URL of the embedded etcd (default http://127.0.0.1:2380)")
	initFile := fs.String("init-file", "", "configuration document (YAML) applied at start")
	tokenFile := fs.String("token-file", "", "file holding the bearer token required for changes")
	txnLog := fs.String("txn-log", "", "stderr to print the boxed transaction log, off otherwise")
	vppSocket := fs.String("vpp-socket", "", "VPP binary API socket (default /run/vpp/api.sock; off: no VPP plugins)")
	stateDir := fs.String("state-dir", "", "state directory: keeps a change pending confirmation over a restart (default /var/lib/netagent)")
	showVersion := fs.Bool("version", false, "print the version (commit, build date, Go, the VPP release it targets) and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, errHelp
		}
		return cfg, err
	}
	if *showVersion {
		return cfg, errVersion
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *configFile != "" {
		data, err := os.ReadFile(*configFile)
		if err != nil {
			return cfg, fmt.Errorf("config file: %w", err)
		}
		if err := decodeConfigFile(*configFile, data, &cfg); err != nil {
			return cfg, err
		}
	}
	if v := getenv("MICROSERVICE_LABEL"); v != "" {
		cfg.Label = v
	}
	if v := getenv("ETCD_ENDPOINTS"); v != "" {
		cfg.Etcd.Endpoints = splitList(v)
	}
	if v := getenv("NETAGENT_TOKEN"); v != "" {
		cfg.Token = NewSecret(v)
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&cfg.Label, *label)
	set(&cfg.LogLevel, *logLevel)
	set(&cfg.REST.Address, *restAddr)
	set(&cfg.GRPC.Address, *grpcAddr)
	set(&cfg.Debug.Address, *debugAddr)
	set(&cfg.Etcd.EmbeddedDir, *embedded)
	set(&cfg.Etcd.EmbeddedClientURL, *embeddedURL)
	set(&cfg.Etcd.EmbeddedPeerURL, *embeddedPeer)
	set(&cfg.InitFile, *initFile)
	set(&cfg.Scheduler.TxnLog, *txnLog)
	set(&cfg.VPP.Socket, *vppSocket)
	set(&cfg.StateDir, *stateDir)
	if cfg.VPP.Socket == "off" {
		cfg.VPP.Socket, cfg.VPP.Disabled = "", true
	}
	if *endpoints != "" {
		cfg.Etcd.Endpoints = splitList(*endpoints)
	}
	if *tokenFile != "" {
		data, err := os.ReadFile(*tokenFile)
		if err != nil {
			return cfg, fmt.Errorf("token file: %w", err)
		}
		cfg.Token = NewSecret(strings.TrimSpace(string(data)))
	}
	for _, l := range []*Listener{&cfg.REST, &cfg.GRPC.Listener, &cfg.Debug} {
		if l.Address == "off" {
			l.Address = ""
		}
	}
	return cfg, cfg.validate()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// validate is the one place that checks the configuration; each error names
// the setting.
func (c Config) validate() error {
	var errs []error
	if err := models.ValidLabel(c.Label); err != nil {
		errs = append(errs, fmt.Errorf("label: %w", err))
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("log_level: %w", err))
	}
	for name, l := range map[string]Listener{"rest": c.REST, "grpc": c.GRPC.Listener, "debug": c.Debug} {
		if l.Address != "" {
			if _, _, err := net.SplitHostPort(l.Address); err != nil {
				errs = append(errs, fmt.Errorf("%s.address %q: %v", name, l.Address, err))
			}
		}
		if (l.TLSCert == "") != (l.TLSKey == "") {
			errs = append(errs, fmt.Errorf("%s: set both tls_cert and tls_key", name))
		}
	}
	for field, size := range map[string]ByteSize{"grpc.max_recv_msg_size": c.GRPC.MaxRecvMsgSize, "grpc.max_send_msg_size": c.GRPC.MaxSendMsgSize} {
		if size <= 0 || size > msglimit.Max {
			errs = append(errs, fmt.Errorf("%s %d: want from 1 byte to just under 2 GiB", field, size))
		}
	}
	if len(c.Etcd.Endpoints) > 0 && c.Etcd.EmbeddedDir != "" {
		errs = append(errs, errors.New("etcd: endpoints and embedded_dir exclude each other"))
	}
	if c.Etcd.EmbeddedDir != "" {
		errs = append(errs, c.embeddedEtcdProblems()...)
	}
	if r := c.Etcd.EmbeddedCompactionRetention.Duration; r > 0 && r < etcdsource.MinCompactionRetention {
		errs = append(errs, fmt.Errorf("etcd.embedded_compaction_retention %v: want at least %v (0: the default, %v; negative: never compact)",
			r, etcdsource.MinCompactionRetention, etcdsource.DefaultCompactionRetention))
	}
	if ttl := c.Etcd.Status.TTL.Duration; !c.Etcd.Status.Disabled && ttl < MinStatusTTL {
		errs = append(errs, fmt.Errorf("etcd.status.ttl %v: want at least %v (or etcd.status.disabled: true)", ttl, MinStatusTTL))
	}
	if c.Etcd.Status.Values && c.Etcd.Status.Disabled {
		errs = append(errs, errors.New("etcd.status.values: true publishes under the agent's status, which etcd.status.disabled: true turns off"))
	}
	switch c.Scheduler.TxnLog {
	case "", "off", "stderr":
	default:
		errs = append(errs, fmt.Errorf("scheduler.txn_log %q: want stderr or off", c.Scheduler.TxnLog))
	}
	switch c.Scheduler.Drift {
	case DriftRepair, DriftReport:
	default:
		errs = append(errs, fmt.Errorf("scheduler.drift %q: want %s or %s", c.Scheduler.Drift, DriftRepair, DriftReport))
	}
	switch c.Scheduler.Verify {
	case VerifyOff, VerifyReport:
	default:
		errs = append(errs, fmt.Errorf("scheduler.verify %q: want %s or %s", c.Scheduler.Verify, VerifyOff, VerifyReport))
	}
	if p := c.Scheduler.PeriodicResync.Duration; p != 0 && p < MinPeriodicResync {
		errs = append(errs, fmt.Errorf("scheduler.periodic_resync %v: want 0 (off) or at least %v", p, MinPeriodicResync))
	}
	if !c.VPP.Disabled && c.VPP.Socket == "" {
		errs = append(errs, errors.New("vpp.socket: empty (set disabled: true to run without VPP)"))
	}
	if c.StateDir == "" {
		errs = append(errs, errors.New("state_dir: empty (the agent keeps a change pending confirmation there)"))
	}
	if c.ShutdownGrace.Duration <= 0 {
		errs = append(errs, errors.New("shutdown_grace: must be positive"))
	}
	return errors.Join(errs...)
}

// embeddedEtcdProblems checks the URLs of the embedded etcd: each must
// parse, and beyond loopback it must not be a door without authentication
// in an agent whose other doors are guarded (see Etcd.EmbeddedDir).
func (c Config) embeddedEtcdProblems() []error {
	var errs []error
	guarded := c.Token.IsSet() || c.tlsConfigured()
	for _, u := range []struct{ field, url string }{
		{"etcd.embedded_client_url", c.Etcd.EmbeddedClientURL},
		{"etcd.embedded_peer_url", c.Etcd.EmbeddedPeerURL},
	} {
		parsed, err := url.Parse(u.url)
		if err != nil || parsed.Host == "" {
			errs = append(errs, fmt.Errorf("%s %q: want a URL such as http://127.0.0.1:2379", u.field, u.url))
			continue
		}
		if loopbackOnly(parsed.Host) {
			continue
		}
		switch {
		case u.field == "etcd.embedded_peer_url" && guarded:
			errs = append(errs, fmt.Errorf("%s %q is beyond loopback: the embedded etcd's peer listener has no authentication (a one-member cluster has no peers): keep it on 127.0.0.1", u.field, u.url))
		case u.field == "etcd.embedded_client_url" && !c.Token.IsSet() && c.tlsConfigured():
			errs = append(errs, fmt.Errorf("%s %q is beyond loopback: with TLS and no token the embedded etcd would take writes from anyone; set a token (its clients then authenticate as root with it) or keep it on 127.0.0.1", u.field, u.url))
		}
	}
	return errs
}

// tlsConfigured tells whether a listener has TLS.
func (c Config) tlsConfigured() bool {
	return c.REST.TLSCert != "" || c.GRPC.TLSCert != "" || c.Debug.TLSCert != ""
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	return l, nil
}

// loopbackOnly tells whether an address binds to loopback only.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// decodeConfigFile decodes the configuration file (YAML, or JSON) into cfg.
// Unknown fields are an error. Its errors name the file, its format, the
// line and the field when the file has them ("config file agent.yaml
// (YAML): line 2: rest.adress: unknown field"), without the decoders'
// prefixes.
func decodeConfigFile(name string, data []byte, cfg *Config) error {
	format := "YAML"
	if strings.EqualFold(filepath.Ext(name), ".json") {
		format = "JSON"
	}
	fail := func(msg string) error { return fmt.Errorf("config file %s (%s): %s", name, format, msg) }
	js, err := models.YAMLToJSON(data)
	if err != nil {
		return fail(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	err = dec.Decode(cfg)
	if err == nil || errors.Is(err, io.EOF) { // EOF: an empty file
		return nil
	}
	var root *yamlv3.Node
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	at := func(path []string, line int, msg string) error {
		where := strings.Join(path, ".")
		if line > 0 {
			return fail(fmt.Sprintf("line %d: %s: %s", line, where, msg))
		}
		return fail(where + ": " + msg)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		path := strings.Split(typeErr.Field, ".")
		return at(path, models.DocumentLine(root, path), fmt.Sprintf("want %s, got %s", typeName(typeErr.Type), jsonValueName(typeErr.Value)))
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if field, ok := strings.CutPrefix(msg, "unknown field "); ok {
		field = strings.Trim(field, `"`)
		if path, line := findEntry(root, nil, func(k, _ *yamlv3.Node) bool { return k.Value == field }); line > 0 {
			return at(path, line, "unknown field")
		}
		return fail(field + ": unknown field")
	}
	// A value's own error (a duration): the line of the value it quotes.
	if i, j := strings.IndexByte(msg, '"'), strings.LastIndexByte(msg, '"'); i >= 0 && j > i {
		quoted := msg[i+1 : j]
		isQuoted := func(_, v *yamlv3.Node) bool { return v.Kind == yamlv3.ScalarNode && v.Value == quoted }
		if path, line := findEntry(root, nil, isQuoted); line > 0 {
			return at(path, line, msg)
		}
	}
	return fail(msg)
}

// findEntry returns the path and the line of the key of the first entry of
// the mappings under n (depth first) that match accepts; 0 when none does.
func findEntry(n *yamlv3.Node, path []string, match func(key, value *yamlv3.Node) bool) ([]string, int) {
	if n == nil || n.Kind != yamlv3.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		here := append(append([]string(nil), path...), k.Value)
		if match(k, v) {
			return here, k.Line
		}
		if p, line := findEntry(v, here, match); line > 0 {
			return p, line
		}
	}
	return nil, 0
}

// jsonValueName names what encoding/json found ("array", "number -1") in
// the words of a YAML file.
func jsonValueName(v string) string {
	kind, rest, _ := strings.Cut(v, " ")
	name := map[string]string{"array": "a list", "object": "a mapping", "number": "a number", "string": "a string", "bool": "true or false"}[kind]
	if name == "" {
		return v
	}
	if rest != "" {
		name += " (" + rest + ")"
	}
	return name
}

// typeName names a Go type of the configuration for an error.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	}
	return t.String()
}

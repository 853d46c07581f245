package main

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/orchestrator"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigLayers(t *testing.T) {
	cfg, err := loadConfig(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Label != "vpp1" || cfg.REST.Address != "127.0.0.1:9191" || cfg.GRPC.Address != "127.0.0.1:9111" || cfg.Debug.Address != "" || cfg.ShutdownGrace.Duration != 30*time.Second {
		t.Errorf("defaults: %+v", cfg)
	}
	file := writeFile(t, "agent.yaml", "label: from-file\nrest: {address: 127.0.0.1:7000}\netcd: {endpoints: [http://a:2379]}\nshutdown_grace: 5s\n")
	cfg, err = loadConfig([]string{"--config", file}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Label != "from-file" || cfg.REST.Address != "127.0.0.1:7000" || cfg.Etcd.Endpoints[0] != "http://a:2379" || cfg.ShutdownGrace.Duration != 5*time.Second {
		t.Errorf("file: %+v", cfg)
	}
	// The environment overrides the file, flags the environment.
	cfg, err = loadConfig([]string{"--config", file}, env(map[string]string{"MICROSERVICE_LABEL": "from-env", "ETCD_ENDPOINTS": "http://b:2379, http://c:2379", "NETAGENT_TOKEN": "secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Label != "from-env" || strings.Join(cfg.Etcd.Endpoints, ",") != "http://b:2379,http://c:2379" || cfg.Token.Reveal() != "secret" {
		t.Errorf("env: %+v", cfg)
	}
	tokenFile := writeFile(t, "token", "from-file-token\n")
	cfg, err = loadConfig([]string{"--config", file, "--label", "from-flag", "--grpc-address", "off", "--token-file", tokenFile}, env(map[string]string{"MICROSERVICE_LABEL": "from-env"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Label != "from-flag" || cfg.GRPC.Address != "" || cfg.Token.Reveal() != "from-file-token" {
		t.Errorf("flags: %+v", cfg)
	}
}

func TestBadConfigIsAClearError(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		args       []string
		want       string
	}{
		{"unknown field", "label: x\nrestt: {address: 1.2.3.4:5}\n", nil, "agent.yaml (YAML): line 2: restt: unknown field"},
		{"unknown nested field", "rest:\n  address: 127.0.0.1:1\n  adress: x\n", nil, "agent.yaml (YAML): line 3: rest.adress: unknown field"},
		{"wrong type", "scheduler: {history_size: many}\n", nil, "agent.yaml (YAML): line 1: scheduler.history_size: want a number, got a string"},
		{"wrong type of a list", "etcd:\n  endpoints: 5\n", nil, "agent.yaml (YAML): line 2: etcd.endpoints: want a list, got a number"},
		{"bad duration", "label: x\nshutdown_grace: soon\n", nil, `agent.yaml (YAML): line 2: shutdown_grace: duration "soon": want e.g. 30s`},
		{"YAML syntax", "rest:\n  address: 1\n bad\n", nil, "agent.yaml (YAML): line 2: did not find expected key"},
		{"bad label", "label: a/b\n", nil, "label"},
		{"bad address", "rest: {address: nowhere}\n", nil, `rest.address "nowhere"`},
		{"half TLS", "grpc: {address: 127.0.0.1:1, tls_cert: c.pem}\n", nil, "set both tls_cert and tls_key"},
		{"etcd twice", "etcd: {endpoints: [http://a:1], embedded_dir: /tmp/x}\n", nil, "exclude each other"},
		{"bad level", "log_level: loud\n", nil, "log_level"},
		{"bad txn log", "scheduler: {txn_log: syslog}\n", nil, "scheduler.txn_log"},
		{"bad embedded etcd URL", "etcd: {embedded_dir: /tmp/x, embedded_client_url: '127.0.0.1:2379'}\n", nil, `etcd.embedded_client_url "127.0.0.1:2379": want a URL such as http://127.0.0.1:2379`},
		{"embedded etcd peer beyond loopback with a token", "token: t\netcd: {embedded_dir: /tmp/x, embedded_peer_url: 'http://0.0.0.0:2380'}\n", nil,
			`etcd.embedded_peer_url "http://0.0.0.0:2380" is beyond loopback: the embedded etcd's peer listener has no authentication`},
		{"embedded etcd beyond loopback with TLS, no token", "grpc: {address: 127.0.0.1:1, tls_cert: c.pem, tls_key: k.pem}\netcd: {embedded_dir: /tmp/x, embedded_client_url: 'http://10.1.2.3:2379'}\n", nil,
			`etcd.embedded_client_url "http://10.1.2.3:2379" is beyond loopback: with TLS and no token the embedded etcd would take writes from anyone; set a token`},
		{"bad message size", "grpc:\n  address: 127.0.0.1:1\n  max_recv_msg_size: lots\n", nil, `agent.yaml (YAML): line 3: grpc.max_recv_msg_size: size "lots": want a number of bytes, or one with a unit such as 64MiB or 8MB`},
		{"zero message size", "grpc: {max_send_msg_size: 0}\n", nil, `size "0": want from 1 byte to just under 2 GiB`},
		{"message size of a wrong type", "grpc:\n  max_send_msg_size: [1]\n", nil, "agent.yaml (YAML): line 2: grpc.max_send_msg_size: want a number, got a list"},
		{"unknown field of grpc", "grpc:\n  adress: x\n", nil, "agent.yaml (YAML): line 2: grpc.adress: unknown field"},
		{"unknown drift mode", "scheduler:\n  drift: fix\n", nil, `scheduler.drift "fix": want repair or report`},
		{"empty drift mode", "scheduler: {drift: ''}\n", nil, `scheduler.drift "": want repair or report`},
		{"unknown verify mode", "scheduler:\n  verify: always\n", nil, `scheduler.verify "always": want off or report`},
		{"periodic resync too often", "scheduler: {periodic_resync: 5s}\n", nil, "scheduler.periodic_resync 5s: want 0 (off) or at least 10s"},
		{"negative periodic resync", "scheduler: {periodic_resync: -1m}\n", nil, "scheduler.periodic_resync -1m0s: want 0 (off) or at least 10s"},
		{"periodic resync not a duration", "scheduler:\n  periodic_resync: hourly\n", nil, `agent.yaml (YAML): line 2: scheduler.periodic_resync: duration "hourly": want e.g. 30s`},
		{"compaction retention too short", "etcd: {embedded_dir: /tmp/x, embedded_compaction_retention: 500ms}\n", nil,
			"etcd.embedded_compaction_retention 500ms: want at least 1s (0: the default, 1m0s; negative: never compact)"},
		{"compaction retention not a duration", "etcd:\n  embedded_dir: /tmp/x\n  embedded_compaction_retention: daily\n", nil,
			`agent.yaml (YAML): line 3: etcd.embedded_compaction_retention: duration "daily": want e.g. 30s`},
		{"status TTL too short", "etcd: {status: {ttl: 1s}}\n", nil, "etcd.status.ttl 1s: want at least 2s (or etcd.status.disabled: true)"},
		{"zero status TTL", "etcd:\n  status:\n    ttl: 0s\n", nil, "etcd.status.ttl 0s: want at least 2s"},
		{"status TTL not a duration", "etcd:\n  status:\n    ttl: long\n", nil, `agent.yaml (YAML): line 3: etcd.status.ttl: duration "long": want e.g. 30s`},
		{"unknown field of the status", "etcd:\n  status:\n    lease: 5s\n", nil, "agent.yaml (YAML): line 3: etcd.status.lease: unknown field"},
		{"value statuses without the status", "etcd: {status: {disabled: true, values: true}}\n", nil,
			"etcd.status.values: true publishes under the agent's status, which etcd.status.disabled: true turns off"},
		{"value statuses not a boolean", "etcd:\n  status:\n    values: often\n", nil, "line 3: etcd.status.values"},
		{"unknown flag", "", []string{"--colour"}, "colour"},
		{"extra argument", "", []string{"run"}, "unexpected arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.yaml != "" {
				args = append([]string{"--config", writeFile(t, "agent.yaml", c.yaml)}, args...)
			}
			_, err := loadConfig(args, env(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			// The decoders' own prefixes stay out of it.
			for _, noise := range []string{"unmarshaling", "while decoding", "json:", "yaml:", "converting"} {
				if err != nil && strings.Contains(err.Error(), noise) {
					t.Errorf("error %q contains %q", err, noise)
				}
			}
		})
	}
	// A JSON file is named as one.
	if _, err := loadConfig([]string{"--config", writeFile(t, "agent.json", "{\"label\": \"x\",\n \"rest\": {\"adress\": 1}}")}, env(nil)); err == nil ||
		!strings.Contains(err.Error(), "agent.json (JSON): line 2: rest.adress: unknown field") {
		t.Errorf("unknown field in a JSON file: %v", err)
	}
	if _, err := loadConfig([]string{"--config", "/nonexistent/agent.yaml"}, env(nil)); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := loadConfig([]string{"-h"}, env(nil)); !errors.Is(err, errHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "localhost:1": true, "[::1]:1": true, "0.0.0.0:1": false, ":1": false, "10.0.0.1:1": false} {
		if got := loopbackOnly(addr); got != want {
			t.Errorf("loopbackOnly(%q) = %v", addr, got)
		}
	}
}

// TestEmbeddedEtcdBeyondLoopback: what the configuration takes beyond
// loopback, and what the agent warns of at start.
func TestEmbeddedEtcdBeyondLoopback(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		warn       string // "" none
	}{
		{"loopback", "etcd: {embedded_dir: /tmp/x}\n", ""},
		{"without token or TLS", "etcd: {embedded_dir: /tmp/x, embedded_client_url: 'http://0.0.0.0:2379'}\n",
			`LISTENING BEYOND LOOPBACK WITHOUT AUTHENTICATION: anyone who reaches this address can change the network configuration; set a token and TLS" listener="embedded etcd"`},
		{"peer without token or TLS", "etcd: {embedded_dir: /tmp/x, embedded_peer_url: 'http://0.0.0.0:2380'}\n",
			`listener="embedded etcd peer"`},
		{"with a token", "token: t\netcd: {embedded_dir: /tmp/x, embedded_client_url: 'http://0.0.0.0:2379'}\n",
			`EMBEDDED ETCD BEYOND LOOPBACK OVER PLAIN HTTP: the token (its root password) and the configuration cross the network in clear" listener="embedded etcd"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig([]string{"--config", writeFile(t, "agent.yaml", c.yaml)}, env(nil))
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			var buf strings.Builder
			warnBeyondLoopback(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
			switch {
			case c.warn == "" && buf.Len() > 0:
				t.Errorf("warnings %q, want none", buf.String())
			case c.warn != "" && !strings.Contains(buf.String(), c.warn):
				t.Errorf("warnings %q, want %q", buf.String(), c.warn)
			}
		})
	}
}

// TestMessageLimits: the gRPC message limits default to 64 MiB (a document
// of 100k routes is 4.3 MB) and read sizes with units or in bytes.
func TestMessageLimits(t *testing.T) {
	cfg, err := loadConfig(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GRPC.MaxRecvMsgSize != 64<<20 || cfg.GRPC.MaxSendMsgSize != 64<<20 {
		t.Errorf("defaults: %d %d, want 64 MiB", cfg.GRPC.MaxRecvMsgSize, cfg.GRPC.MaxSendMsgSize)
	}
	file := writeFile(t, "agent.yaml", "grpc: {address: 127.0.0.1:1, max_recv_msg_size: 8MiB, max_send_msg_size: 1048577}\n")
	if cfg, err = loadConfig([]string{"--config", file}, env(nil)); err != nil {
		t.Fatal(err)
	}
	if cfg.GRPC.MaxRecvMsgSize != 8<<20 || cfg.GRPC.MaxSendMsgSize != 1048577 || cfg.GRPC.Address != "127.0.0.1:1" {
		t.Errorf("from the file: %+v", cfg.GRPC)
	}
	data, err := json.Marshal(cfg.GRPC)
	if err != nil || !strings.Contains(string(data), `"max_recv_msg_size":"8 MiB"`) || !strings.Contains(string(data), `"max_send_msg_size":"1048577 B"`) {
		t.Errorf("the limits as logged at start: %s %v", data, err)
	}
	cfg.GRPC.MaxRecvMsgSize = 0
	if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "grpc.max_recv_msg_size 0: want from 1 byte") {
		t.Errorf("validate with a zero limit: %v", err)
	}
}

// TestDriftConfig: drift repair is on by default and the periodic resync
// off; the file sets report-only mode and an interval.
func TestDriftConfig(t *testing.T) {
	cfg, err := loadConfig(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Scheduler.Drift != DriftRepair || cfg.Scheduler.PeriodicResync.Duration != 0 {
		t.Errorf("defaults: drift %q, periodic resync %v; want repair, 0 (off)", cfg.Scheduler.Drift, cfg.Scheduler.PeriodicResync)
	}
	for _, c := range []struct {
		yaml  string
		drift string
		every time.Duration
	}{
		{"scheduler: {drift: report, periodic_resync: 10m}\n", DriftReport, 10 * time.Minute},
		{"scheduler: {drift: repair, periodic_resync: 10s}\n", DriftRepair, 10 * time.Second},
		{"scheduler: {periodic_resync: 0s}\n", DriftRepair, 0},
	} {
		cfg, err := loadConfig([]string{"--config", writeFile(t, "agent.yaml", c.yaml)}, env(nil))
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if cfg.Scheduler.Drift != c.drift || cfg.Scheduler.PeriodicResync.Duration != c.every {
			t.Errorf("%q: drift %q, periodic resync %v; want %q, %v", c.yaml, cfg.Scheduler.Drift, cfg.Scheduler.PeriodicResync, c.drift, c.every)
		}
	}
	// A Config made in code is checked by New too.
	cfg = defaultConfig()
	cfg.Scheduler.Drift = "ignore"
	if _, err := New(cfg, io.Discard); err == nil || !strings.Contains(err.Error(), `scheduler.drift "ignore": want repair or report`) {
		t.Errorf("New with drift %q: %v", cfg.Scheduler.Drift, err)
	}
}

// etcd.embedded_compaction_retention: its default, what the file sets,
// and what the embedded etcd is built with.
func TestEmbeddedCompactionRetention(t *testing.T) {
	cfg, err := loadConfig(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Etcd.EmbeddedCompactionRetention.Duration; got != time.Minute {
		t.Errorf("default retention %v, want 1m", got)
	}
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		yaml string
		want time.Duration
	}{
		{"", time.Minute},
		{"embedded_compaction_retention: 10m", 10 * time.Minute},
		{"embedded_compaction_retention: 1s", time.Second},
		{"embedded_compaction_retention: 0s", time.Minute},
		{"embedded_compaction_retention: -1s", -time.Second},
	} {
		file := writeFile(t, "agent.yaml", "etcd:\n  embedded_dir: "+t.TempDir()+"\n  "+c.yaml+"\n")
		cfg, err := loadConfig([]string{"--config", file}, env(nil))
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		p, err := newEtcdPart(cfg, orchestrator.New(nil, log), log)
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if got := p.embedded.CompactionRetention(); got != c.want {
			t.Errorf("%q: the embedded etcd compacts with retention %v, want %v", c.yaml, got, c.want)
		}
	}
}

// TestStatusConfig: the agent's status in etcd is on by default with a 10 s
// lease, the values' statuses off; etcd.status sets the TTL, turns the
// status off (any TTL then) or the values' statuses on.
func TestStatusConfig(t *testing.T) {
	for _, c := range []struct {
		yaml     string
		disabled bool
		ttl      time.Duration
		values   bool
	}{
		{"", false, 10 * time.Second, false},
		{"etcd: {status: {ttl: 3s}}", false, 3 * time.Second, false},
		{"etcd: {status: {disabled: true}}", true, 10 * time.Second, false},
		{"etcd: {status: {disabled: true, ttl: 0s}}", true, 0, false},
		{"etcd: {status: {values: true}}", false, 10 * time.Second, true},
	} {
		var args []string
		if c.yaml != "" {
			args = []string{"--config", writeFile(t, "agent.yaml", c.yaml+"\n")}
		}
		cfg, err := loadConfig(args, env(nil))
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if cfg.Etcd.Status.Disabled != c.disabled || cfg.Etcd.Status.TTL.Duration != c.ttl || cfg.Etcd.Status.Values != c.values {
			t.Errorf("%q: %+v, want disabled %v, ttl %v, values %v", c.yaml, cfg.Etcd.Status, c.disabled, c.ttl, c.values)
		}
	}
}

// linux.adopt_original_routes: on by default, off from the file.
func TestAdoptOriginalRoutesConfig(t *testing.T) {
	cfg, err := loadConfig(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Linux.AdoptOriginalRoutes {
		t.Error("defaults: linux.adopt_original_routes false, want true")
	}
	for yaml, want := range map[string]bool{
		"linux: {adopt_original_routes: false}\n": false,
		"linux: {adopt_original_routes: true}\n":  true,
		"linux: {disabled: false}\n":              true,
	} {
		cfg, err := loadConfig([]string{"--config", writeFile(t, "agent.yaml", yaml)}, env(nil))
		if err != nil {
			t.Errorf("%q: %v", yaml, err)
			continue
		}
		if cfg.Linux.AdoptOriginalRoutes != want {
			t.Errorf("%q: linux.adopt_original_routes %v, want %v", yaml, cfg.Linux.AdoptOriginalRoutes, want)
		}
	}
	_, err = loadConfig([]string{"--config", writeFile(t, "agent.yaml", "linux: {adopt_original_routes: maybe}\n")}, env(nil))
	if err == nil || !strings.Contains(err.Error(), "linux.adopt_original_routes") {
		t.Errorf("a value that is no bool: %v, want an error naming linux.adopt_original_routes", err)
	}
}

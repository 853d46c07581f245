// Command agent is the netagent daemon: it reads the desired network state
// from etcd, gRPC clients and an init file, and keeps Linux and VPP in that
// state through the KV Scheduler.
//
//	agent --etcd-embedded /var/lib/netagent/etcd --init-file examples/veth-route.yaml
//
// The daemon only wires: New builds every part from the configuration
// (agent.go: listeners, scheduler, the Linux and VPP plugins in linux.go
// and vpp.go, the orchestrator and its sources in northbound.go, the
// servers in servers.go, the status in etcd in etcdstatus.go), Run starts
// them and stops them gracefully. The plugins' and sources' behaviour is
// in their packages.
//
// See README.md for the listeners and the configuration.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

func main() {
	cfg, err := loadConfig(os.Args[1:], os.Getenv)
	if errors.Is(err, errHelp) {
		os.Exit(0)
	}
	if errors.Is(err, errVersion) {
		writeVersion(os.Stdout, versionInfo())
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(2)
	}
	a, err := New(cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := a.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

var (
	errHelp    = errors.New("help")
	errVersion = errors.New("version")
)

// version is set with -ldflags "-X main.version=...", else read from the
// build information.
var version = ""

// buildVersion is what the binary knows of its build: its version, Go
// version, commit (vcs.revision, vcs.time, vcs.modified, when built from a
// checkout), and the VPP release it targets (vpp) with the GoVPP version
// of its bindings (govpp).
func buildVersion() map[string]string {
	info := map[string]string{"version": version, "vpp": vppconn.TargetVPP, "govpp": vppconn.GoVPPVersion()}
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

// writeVersion prints the answer of agent --version: the fields of info
// (versionInfo, as GET /info/version answers) a person reads.
func writeVersion(w io.Writer, info map[string]any) {
	str := func(k string) string {
		if s, _ := info[k].(string); s != "" {
			return s
		}
		return "unknown"
	}
	commit := str("vcs.revision")
	if info["vcs.modified"] == "true" {
		commit += " (with uncommitted changes)"
	}
	built := str("vcs.time")
	if built != "unknown" {
		built += " (commit time)"
	}
	fmt.Fprintf(w, "netagent %s\n", str("version"))
	fmt.Fprintf(w, "  commit:   %s\n", commit)
	fmt.Fprintf(w, "  built:    %s\n", built)
	fmt.Fprintf(w, "  go:       %s\n", str("go"))
	fmt.Fprintf(w, "  vpp:      VPP %s binary API (GoVPP %s); checked at connect\n", str("vpp"), str("govpp"))
}

// versionInfo is the answer of GET /info/version: buildVersion, and the
// fields of the original agent's answer (its Go field names, BuildTime in
// Unix seconds), for its clients. GitBranch, BuildUser and BuildHost are
// not recorded in the build ("" here); BuildTime is the time of the
// build's commit (vcs.time; 0 without VCS information).
func versionInfo() map[string]any {
	info := map[string]any{}
	v := buildVersion()
	for k, s := range v {
		info[k] = s
	}
	var built int64
	if t, err := time.Parse(time.RFC3339, v["vcs.time"]); err == nil {
		built = t.Unix()
	}
	for k, x := range map[string]any{"App": "netagent", "Version": v["version"], "GitCommit": v["vcs.revision"],
		"GitBranch": "", "BuildUser": "", "BuildHost": "", "BuildTime": built,
		"GoVersion": runtime.Version(), "OS": runtime.GOOS, "Arch": runtime.GOARCH} {
		info[k] = x
	}
	return info
}

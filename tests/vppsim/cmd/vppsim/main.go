// Command vppsim serves vppsim, the VPP 25.10 stand-in of the tests, on a
// unix socket until it is interrupted (SIGINT, SIGTERM): a VPP to run the
// agent against where there is none, and the VPP of the plugins' real-VPP
// test mode, to check that mode without a VPP.
//
//	go run ./tests/vppsim/cmd/vppsim -socket /tmp/vpp.sock &
//	bin/agent --vpp-socket /tmp/vpp.sock ...
//	VPP_API_SOCKET=/tmp/vpp.sock go test -count=1 ./plugins/vpp/...
//
// It is a test tool: under tests/, never built into the daemon.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/netagent-io/netagent/tests/vppsim"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "vppsim:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("vppsim", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: vppsim [flags]\n\nServes a simulated VPP 25.10 binary API (see go doc ./tests/vppsim) until interrupted.\n\nFlags:")
		fs.PrintDefaults()
	}
	socket := fs.String("socket", "/run/vpp/api.sock", "the unix socket to serve VPP's binary API on (a stale socket there is replaced)")
	pid := fs.Uint("pid", 0, "the VPP PID to report (0: a random one)")
	hostIfs := fs.String("host-ifs", "", "comma-separated host interfaces AF_PACKET can bind to (empty: any name)")
	noVhostNet := fs.Bool("no-vhost-net", false, "fail TAP v2 creation with a system call error, as VPP does on a host without /dev/vhost-net")
	omit := fs.String("omit", "", "comma-separated messages to leave out of the message table (an older or newer VPP, or one without some VPP plugins)")
	loopbacks := fs.Int("startup-loopbacks", 0, "untagged loopbacks (loop0, ...) VPP has from its start, as a startup configuration makes them")
	verbose := fs.Bool("v", false, "log the simulator's connections to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *loopbacks < 0 {
		return fmt.Errorf("-startup-loopbacks %d: want 0 or more", *loopbacks)
	}
	opts := vppsim.Options{SocketPath: *socket, PID: uint32(*pid), NoVhostNet: *noVhostNet, Omit: list(*omit), StartupLoopbacks: *loopbacks}
	if names := list(*hostIfs); len(names) > 0 {
		opts.HostIfExists = func(name string) bool { return slices.Contains(names, name) }
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *verbose {
		opts.Log = log
	}
	sim, err := vppsim.Start(opts)
	if err != nil {
		return err
	}
	log.Info("vppsim: serving the VPP 25.10 binary API; interrupt to stop", "socket", sim.SocketPath(), "pid", sim.PID())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("vppsim: stopping", "socket", sim.SocketPath())
	return sim.Close()
}

// list splits a comma-separated flag value.
func list(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

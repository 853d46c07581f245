package probe_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/orchestrator/probe"
)

// netnsWithLoopback makes a named namespace whose loopback is up (removed
// at the end of the test).
func netnsWithLoopback(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, raw sockets)")
	}
	name := fmt.Sprintf("probe-%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ip("-n", name, "link", "set", "lo", "up")
	return name
}

// listenIn listens on TCP 127.0.0.1 inside namespace ns (the socket is
// made there) and serves HTTP on it: / answers 200, /broken 500.
func listenIn(t *testing.T, ns string) string {
	t.Helper()
	var ln net.Listener
	// A TCP probe from the namespace is the way in: make the listener from
	// there with the package's own dance, through a probe-free helper.
	err := probe.InNamespaceForTest(ns, func() error {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "broken", http.StatusInternalServerError) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// Probes from a namespace pass where the namespace has what they check
// (its loopback answers ping, a listener there accepts, its HTTP server
// answers 200) and fail, saying why, where it does not: an address with no
// route, a closed port, an HTTP 500, a namespace that does not exist. The
// same address from the agent's namespace reaches another listener (or
// none): the namespace is where the probe runs.
func TestProbes(t *testing.T) {
	ns := netnsWithLoopback(t)
	addr := listenIn(t, ns)
	_, port, _ := net.SplitHostPort(addr)
	closed := "127.0.0.1:1" // tcpmux: nothing listens there
	sec := time.Second
	cases := []struct {
		p    probe.Probe
		ok   bool
		want string // in the error
	}{
		{probe.Probe{Kind: probe.Ping, Target: "127.0.0.1", Namespace: ns, Timeout: 2 * sec}, true, ""},
		{probe.Probe{Kind: probe.Ping, Target: "::1", Namespace: ns, Timeout: 2 * sec}, true, ""},
		{probe.Probe{Kind: probe.Ping, Target: "127.0.0.1", Timeout: 2 * sec}, true, ""},
		{probe.Probe{Kind: probe.Ping, Target: "192.0.2.1", Namespace: ns, Timeout: 500 * time.Millisecond}, false, "unreachable"},
		{probe.Probe{Kind: probe.TCP, Target: addr, Namespace: ns, Timeout: sec}, true, ""},
		{probe.Probe{Kind: probe.TCP, Target: closed, Namespace: ns, Timeout: sec}, false, "refused"},
		{probe.Probe{Kind: probe.HTTP, Target: "http://" + addr + "/", Namespace: ns, Timeout: sec}, true, ""},
		{probe.Probe{Kind: probe.HTTP, Target: "http://" + addr + "/broken", Namespace: ns, Timeout: sec}, false, "HTTP status 500"},
		{probe.Probe{Kind: probe.TCP, Target: addr, Namespace: "probe-none-" + port, Timeout: sec}, false, `namespace "probe-none-` + port + `"`},
	}
	probes := make([]probe.Probe, len(cases))
	for i, c := range cases {
		probes[i] = c.p
	}
	results := probe.Run(context.Background(), probes)
	for i, c := range cases {
		r := results[i]
		if r.Probe != c.p {
			t.Errorf("result %d is of %s, want %s", i, r.Probe, c.p)
		}
		if r.OK() != c.ok {
			t.Errorf("%s: ok %v (%v), want %v", c.p, r.OK(), r.Err, c.ok)
			continue
		}
		if !c.ok && (!strings.Contains(r.Err.Error(), c.want) || !strings.Contains(r.Err.Error(), c.p.String())) {
			t.Errorf("%s: error %q, want it to name the probe and say %q", c.p, r.Err, c.want)
		}
	}
	// From the agent's namespace the namespace's listener is not there.
	if r := probe.Run(context.Background(), []probe.Probe{{Kind: probe.TCP, Target: addr, Timeout: sec}})[0]; r.OK() {
		t.Errorf("a TCP probe from the agent's namespace reached the listener of namespace %s", ns)
	}
}

// A probe that gets no answer fails when its timeout ends, saying so, and
// Run returns then, not later.
func TestProbeTimeout(t *testing.T) {
	ns := netnsWithLoopback(t)
	// An address on a link of the namespace that nothing answers for: a
	// veth pair, the peer without addresses (ARP gets no answer).
	for _, args := range [][]string{
		{"-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1"},
		{"-n", ns, "link", "set", "v0", "up"},
		{"-n", ns, "link", "set", "v1", "up"},
		{"-n", ns, "addr", "add", "198.51.100.1/24", "dev", "v0"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	timeout := 300 * time.Millisecond
	start := time.Now()
	r := probe.Run(context.Background(), []probe.Probe{{Kind: probe.Ping, Target: "198.51.100.2", Namespace: ns, Timeout: timeout}})[0]
	if r.OK() || !strings.Contains(r.Err.Error(), "no answer within 300ms") {
		t.Fatalf("ping of a silent address: %v", r.Err)
	}
	if took := time.Since(start); took > timeout+2*time.Second {
		t.Errorf("Run returned after %v, the timeout is %v", took, timeout)
	}
}

// Bad probes are refused by Check, naming the field, and fail in Run
// without running.
func TestProbeCheck(t *testing.T) {
	sec := time.Second
	for _, c := range []struct {
		p    probe.Probe
		want string
	}{
		{probe.Probe{Kind: probe.Ping, Target: "10.0.0.1"}, "timeout 0s: want a positive duration"},
		{probe.Probe{Kind: probe.Ping, Target: "10.0.0.1", Timeout: 2 * time.Minute}, "at most 1m0s"},
		{probe.Probe{Kind: probe.Ping, Target: "host.example", Timeout: sec}, `target "host.example": want an IP address`},
		{probe.Probe{Kind: probe.Ping, Target: "fe80::1%eth0", Timeout: sec}, "want an IP address"},
		{probe.Probe{Kind: probe.TCP, Target: "10.0.0.1", Timeout: sec}, "want host:port"},
		{probe.Probe{Kind: probe.HTTP, Target: "ftp://x/", Timeout: sec}, "want an http:// or https:// URL"},
		{probe.Probe{Kind: probe.HTTP, Target: "http:///path", Timeout: sec}, "want an http:// or https:// URL"},
		{probe.Probe{Kind: 9, Target: "x", Timeout: sec}, "unknown kind"},
		{probe.Probe{Kind: probe.TCP, Target: "a:1", Namespace: "../etc", Timeout: sec}, "not a name of ip netns"},
	} {
		err := c.p.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check of %+v: %v, want %q", c.p, err, c.want)
		}
		if r := probe.Run(context.Background(), []probe.Probe{c.p})[0]; r.OK() || r.Err.Error() != err.Error() {
			t.Errorf("Run of %+v: %v, want Check's error", c.p, r.Err)
		}
	}
}

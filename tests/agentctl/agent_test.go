package agentctl_test

// The agent under test: the built binary run as a child process, with an
// embedded etcd, on free loopback ports.

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netagent-io/netagent/tests/testsupport"
)

// waitTimeout bounds every wait (an embedded etcd on two busy vCPUs is slow
// to start, never this slow).
const waitTimeout = 60 * time.Second

// pollInterval is the period of the polls of REST endpoints and the kernel.
const pollInterval = 20 * time.Millisecond

// stopTimeout bounds the agent's exit after SIGTERM: its default shutdown
// grace (30 s) and some.
const stopTimeout = 45 * time.Second

// agentOptions are the choices of startAgent. The zero value is an agent
// with a label of its own, without token, init file or VPP, waited for
// until /readyz answers 200.
type agentOptions struct {
	// Label is the microservice label (--label); "" gives ctl001, ctl002,
	// ... (unique in the test binary, so that agents running at the same
	// time never delete each other's links).
	Label string
	// Token, when set, is written to a file passed with --token-file:
	// changes need it.
	Token string
	// InitFile is a configuration document applied at start (--init-file;
	// see writeFile, vethRouteDoc).
	InitFile string
	// VPPSocket is the VPP binary API socket (--vpp-socket); "" is off (no
	// VPP plugins).
	VPPSocket string
	// Args are more flags, after the harness's (the last one of a flag
	// wins).
	Args []string
	// NoReadyWait makes startAgent wait only until the REST listener
	// answers, whatever /readyz says (e.g. an agent waiting for VPP).
	NoReadyWait bool
	// TLS, when set, makes the REST and gRPC listeners use this certificate
	// (see testsupport.SelfSigned). The agent takes TLS from its configuration file
	// only: startAgent writes one and passes it with --config.
	TLS *testsupport.Cert
	// Config is more of the agent's configuration file (YAML), e.g. its
	// gRPC message limits; with TLS, not the rest or grpc sections.
	Config string
	// EtcdEndpoint, when set, is an etcd the agent uses (--etcd-endpoints)
	// instead of an embedded one of its own, e.g. one shared by several
	// agents (startSharedEtcd); the agent's EtcdEndpoint is then this one, and
	// it has no EtcdDir nor EtcdPeerPort.
	EtcdEndpoint string
}

// agent is an agent binary running as a child process of the test, in the
// test's network namespace.
type agent struct {
	Label        string
	Host         string // the listeners' address: 127.0.0.1
	RESTPort     int
	GRPCPort     int
	EtcdEndpoint string // the embedded etcd's client URL, http://127.0.0.1:<port>
	EtcdPeerPort int
	EtcdDir      string            // the embedded etcd's data
	Token        string            // "" when the agent takes changes without a token
	TLS          *testsupport.Cert // nil: plain REST and gRPC
	Process      *os.Process

	out        *testsupport.SyncBuffer // stdout and stderr
	exited     chan struct{}
	waitErr    error // valid once exited is closed
	stopOnce   sync.Once
	stopErr    error
	stopCalled bool // by the test
	http       *http.Client
}

// agentSeq numbers the default labels.
var agentSeq atomic.Int32

// startAgent starts the agent binary (built once) with an embedded etcd in
// a temporary directory, REST, gRPC and etcd on free loopback ports,
// --log-level debug and the options, and waits until GET /readyz answers
// 200 (or, with NoReadyWait, answers at all). When the test ends the agent
// gets SIGTERM and must exit with status 0 within stopTimeout; if the test
// failed, the agent's output is logged.
//
// Call uniqueNames before startAgent: cleanups run in reverse order, and
// the namespaces must be removed after the agent stopped (a running agent
// may create them again).
func startAgent(t testing.TB, opts agentOptions) *agent {
	t.Helper()
	path := agentBinary(t)
	ports := freePorts(t, 4)
	dir := t.TempDir()
	a := &agent{
		Label:        opts.Label,
		Host:         "127.0.0.1",
		RESTPort:     ports[0],
		GRPCPort:     ports[1],
		EtcdEndpoint: fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
		EtcdPeerPort: ports[3],
		EtcdDir:      filepath.Join(dir, "etcd"),
		Token:        opts.Token,
		TLS:          opts.TLS,
		out:          &testsupport.SyncBuffer{},
		exited:       make(chan struct{}),
		http:         &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	if opts.TLS != nil {
		a.http.Transport = &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: opts.TLS.Pool}}
	}
	if a.Label == "" {
		a.Label = fmt.Sprintf("ctl%03d", agentSeq.Add(1))
	}
	vppSocket := opts.VPPSocket
	if vppSocket == "" {
		vppSocket = "off"
	}
	args := []string{
		"--rest-address", net.JoinHostPort(a.Host, strconv.Itoa(a.RESTPort)),
		"--grpc-address", net.JoinHostPort(a.Host, strconv.Itoa(a.GRPCPort)),
		"--vpp-socket", vppSocket,
		"--label", a.Label,
		"--log-level", "debug",
	}
	if opts.EtcdEndpoint != "" {
		a.EtcdEndpoint, a.EtcdDir, a.EtcdPeerPort = opts.EtcdEndpoint, "", 0
		args = append(args, "--etcd-endpoints", a.EtcdEndpoint)
	} else {
		args = append(args,
			"--etcd-embedded", a.EtcdDir,
			"--etcd-embedded-client-url", a.EtcdEndpoint,
			"--etcd-embedded-peer-url", fmt.Sprintf("http://127.0.0.1:%d", a.EtcdPeerPort))
	}
	if opts.Token != "" {
		tokenFile := filepath.Join(dir, "token")
		if err := os.WriteFile(tokenFile, []byte(opts.Token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--token-file", tokenFile)
	}
	if opts.InitFile != "" {
		args = append(args, "--init-file", opts.InitFile)
	}
	if opts.TLS != nil || opts.Config != "" {
		config := filepath.Join(dir, "agent.yaml")
		content := opts.Config
		if opts.TLS != nil {
			listener := fmt.Sprintf("{tls_cert: %q, tls_key: %q}", opts.TLS.CertFile, opts.TLS.KeyFile)
			content = "rest: " + listener + "\ngrpc: " + listener + "\n" + content
		}
		if err := os.WriteFile(config, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", config)
	}
	args = append(args, opts.Args...)

	cmd := exec.Command(path, args...)
	// The agent's own variables would override its defaults: only flags
	// configure it.
	cmd.Env = withoutVars(os.Environ(), "MICROSERVICE_LABEL", "ETCD_ENDPOINTS", "NETAGENT_*")
	cmd.Stdout, cmd.Stderr = a.out, a.out
	// The agent dies with the test binary, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the agent: %v", err)
	}
	a.Process = cmd.Process
	go func() {
		a.waitErr = cmd.Wait()
		close(a.exited)
	}()
	t.Logf("agent %s (pid %d): %s %v", a.Label, a.Process.Pid, path, args)
	t.Cleanup(func() {
		if !a.stopCalled {
			if err := a.stop(); err != nil {
				t.Errorf("agent %s: %v", a.Label, err)
			}
		}
		if t.Failed() {
			t.Logf("agent %s output:\n%s", a.Label, testsupport.Tail(a.output(), 30000))
		}
	})

	waitFor(t, fmt.Sprintf("agent %s ready (GET /readyz)", a.Label), func() (bool, string) {
		select {
		case <-a.exited:
			t.Fatalf("agent %s exited before it was ready: %v", a.Label, a.waitErr)
		default:
		}
		code, body, err := a.get("/readyz")
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK || opts.NoReadyWait, fmt.Sprintf("%d %s", code, body)
	})
	return a
}

// stop sends SIGTERM to the agent and waits for it to exit: nil if it
// exited with status 0 within stopTimeout, else why not (it is then
// killed). Later calls return the same. The cleanup of startAgent calls it
// unless the test did.
func (a *agent) stop() error {
	a.stopCalled = true
	a.stopOnce.Do(func() {
		select {
		case <-a.exited:
			a.stopErr = fmt.Errorf("exited before SIGTERM: %v", a.waitErr)
			return
		default:
		}
		if err := a.Process.Signal(syscall.SIGTERM); err != nil {
			a.stopErr = fmt.Errorf("SIGTERM: %w", err)
		}
		select {
		case <-a.exited:
			if a.waitErr != nil {
				a.stopErr = fmt.Errorf("exit after SIGTERM: %w", a.waitErr)
			}
		case <-time.After(stopTimeout):
			_ = a.Process.Kill()
			<-a.exited
			a.stopErr = fmt.Errorf("still running %v after SIGTERM: killed", stopTimeout)
		}
	})
	return a.stopErr
}

// output returns what the agent wrote to stdout and stderr so far.
func (a *agent) output() string { return a.out.String() }

// restURL returns the URL of a REST path of the agent (https with TLS).
func (a *agent) restURL(path string) string {
	scheme := "http"
	if a.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(a.Host, strconv.Itoa(a.RESTPort)) + path
}

// get sends GET path to the agent's REST listener and returns the status
// code and body.
func (a *agent) get(path string) (int, string, error) {
	return a.do(http.MethodGet, path, nil)
}

// do sends a REST request without body and returns the status code and
// body.
func (a *agent) do(method, path string, header http.Header) (int, string, error) {
	req, err := http.NewRequest(method, a.restURL(path), nil)
	if err != nil {
		return 0, "", err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// waitFor polls cond every pollInterval until it holds, failing the test
// with cond's last explanation after waitTimeout.
func waitFor(t testing.TB, what string, cond func() (ok bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s", what, waitTimeout, why)
		}
		time.Sleep(pollInterval)
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago
// (testsupport.FreePorts).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	return testsupport.FreePorts(t, n)
}

// deadPorts returns n loopback ports where nothing answers (a connection
// is refused) for the rest of the test: each is bound by a socket that
// never listens, so no other test (an agent's etcd, started meanwhile) can
// take it, as it could a port of freePorts.
func deadPorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Close(fd) })
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		sa, err := syscall.Getsockname(fd)
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, sa.(*syscall.SockaddrInet4).Port)
	}
	return ports
}

// portFree tells whether a loopback port can be bound now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// withoutVars returns env (NAME=value entries) without the named
// variables; a name ending in * stands for the names it begins.
func withoutVars(env []string, names ...string) []string {
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		for _, drop := range names {
			if prefix, ok := strings.CutSuffix(drop, "*"); ok && strings.HasPrefix(name, prefix) || name == drop {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

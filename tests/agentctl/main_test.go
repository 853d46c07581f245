// Package agentctl_test holds the end-to-end tests of the agentctl CLI: the
// built agentctl binary run against a running agent binary.
//
// # Running them
//
//	go test ./tests/agentctl                 # as root: a network namespace of their own
//	go test ./tests/agentctl -update         # rewrite testdata/*.golden
//	AGENTCTL_E2E_ISOLATED=0 go test ...      # stay in the caller's namespace
//
// The test binary builds agent and agentctl once (go build, from the
// module's root, on first use), in its network namespace, which has no
// network: a module missing from the module cache makes the build fail;
// `go mod download` fixes that.
//
// # Writing a test
//
//	func TestAgentctlStatus(t *testing.T) {
//		n := uniqueNames(t, "st")                          // before startAgent
//		doc := writeFile(t, "init.yaml", vethRouteDoc(t, n, 41))
//		a := startAgent(t, agentOptions{InitFile: doc})   // ready; SIGTERM at the end
//		waitIP(t, "10.200.0.0/16 via 172.30.41.1", "-n", n.NS, "route")
//		stdout, stderr, code := agentctl(t, a.env(), "status", "-o", "yaml")
//		if code != 0 {
//			t.Fatalf("exit %d: %s", code, stderr)
//		}
//		golden(t, "status-yaml", normalize(stdout, append(a.placeholders(), n.placeholders()...)...))
//	}
//
// Helpers, by file: main_test.go builds the binaries (agentBinary,
// agentctlBinary); agent_test.go starts agents (startAgent, agentOptions,
// agent) and waits (waitFor); ctl_test.go runs agentctl (agentctl,
// agentctlStdin, runAgentctl, agent.env, agent.flags); check_test.go
// asserts on its runs (mustCtl, wantError: the one-line error contract,
// parseJSON, parseYAML, waitCtl) and runs it in the background (startCtl:
// config watch); golden_test.go compares outputs (golden, normalize,
// squeezeColumns, agent.placeholders); net_test.go names namespaces and
// links, writes files and checks the kernel (uniqueNames, writeFile,
// vethRouteDoc, ip, waitIP); certificates for agentOptions.TLS come from
// testsupport.SelfSigned.
//
// The tests of the commands, by file: config_test.go (config *),
// status_test.go (status, values, dump, graph), kvdb_test.go (kvdb *),
// fleet_test.go (fleet status: agents sharing an etcd embedded in the
// test, startSharedEtcd), output_test.go (global flags and their
// variables, JSON and YAML of changes), token_test.go, tls_test.go,
// errors_test.go, help_test.go (--help, completion). Tests that create links or compare goldens with
// counts of values run one after the other, each with its agent; the
// others (t.Parallel) run after them, together.
//
// Timing: every wait polls with a deadline (waitTimeout); nothing sleeps to
// let something happen.
package agentctl_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/netagent-io/netagent/tests/netnstest"
	"github.com/netagent-io/netagent/tests/vpprun"
)

// isolatedEnv is the variable of netnstest.Run: set to 0 it keeps the
// tests in the caller's namespace.
const isolatedEnv = "AGENTCTL_E2E_ISOLATED"

// TestMain runs the tests, as root, in a network namespace of their own
// (netnstest): every agent's first resync deletes the links of its
// namespace that carry its alias and that it is not configured with, and
// the agents listen on loopback ports. It removes the binaries built by
// the tests, and stops the real VPP they started (NETAGENT_VPP_DIR).
func TestMain(m *testing.M) {
	code := netnstest.Run(m, isolatedEnv)
	vpprun.StopShared()
	if bin.dir != "" {
		_ = os.RemoveAll(bin.dir)
	}
	os.Exit(code)
}

// bin holds the binaries built for this run of the test binary, in one
// temporary directory.
var bin struct {
	dirOnce sync.Once
	dir     string
	dirErr  error

	agent, agentctl build
}

// build is one binary, built on first use.
type build struct {
	once sync.Once
	path string
	err  error
}

// agentBinary returns the path of the agent built from ./cmd/agent,
// building it on first use; a build error fails the test with the
// compiler's output.
func agentBinary(t testing.TB) string {
	t.Helper()
	return bin.agent.get(t, "agent")
}

// agentctlBinary returns the path of agentctl built from ./cmd/agentctl,
// building it on first use; a build error fails the test with the
// compiler's output.
func agentctlBinary(t testing.TB) string {
	t.Helper()
	return bin.agentctl.get(t, "agentctl")
}

// get builds ./cmd/<name> into the binaries' directory once and returns
// its path.
func (b *build) get(t testing.TB, name string) string {
	t.Helper()
	b.once.Do(func() { b.path, b.err = goBuild(name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// goBuild runs go build -o <dir>/<name> ./cmd/<name> in the module's root.
func goBuild(name string) (string, error) {
	bin.dirOnce.Do(func() { bin.dir, bin.dirErr = os.MkdirTemp("", "netagent-agentctl-e2e-") })
	if bin.dirErr != nil {
		return "", bin.dirErr
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(bin.dir, name)
	cmd := exec.Command("go", "build", "-o", path, "./cmd/"+name)
	cmd.Dir = root
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the tests
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("building %s (go build -o %s ./cmd/%s in %s): %v\n%s", name, path, name, root, err, bytes.TrimSpace(out))
		if strings.Contains(string(out), "dial tcp") || strings.Contains(string(out), "lookup ") {
			msg += "\n(the build runs in the tests' network namespace, which has no network: run go mod download first)"
		}
		return "", errors.New(msg)
	}
	return path, nil
}

// moduleRoot returns the directory of the main module's go.mod.
var moduleRoot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: %q: not in a module", gomod)
	}
	return filepath.Dir(gomod), nil
})

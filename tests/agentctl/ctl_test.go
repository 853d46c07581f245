package agentctl_test

// Running agentctl: the built binary, in a clean environment, pointed at an
// agent by variables (agent.env) or flags (agent.flags).

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/tests/testsupport"
)

// ctlVars are agentctl's variables (AGENT_HOST, ..., NETAGENT_TOKEN,
// NETAGENT_TOKEN_FILE, AGENTCTL_TIMEOUT, AGENTCTL_OUTPUT, AGENTCTL_TLS...):
// they are removed from the environment the tests inherit, so that only
// the test's choices reach the CLI.
var ctlVars = []string{"AGENT_*", "AGENTCTL_*", "NETAGENT_*", "MICROSERVICE_LABEL", "ETCD_ENDPOINTS"}

// ctlTimeout bounds one run of agentctl.
const ctlTimeout = 60 * time.Second

// agentctl runs the built agentctl with args and returns its stdout,
// stderr and exit code; the caller asserts (a non-zero exit does not fail
// the test; not starting, or still running after ctlTimeout, does).
//
// The environment is the test's without agentctl's variables (ctlVars),
// with HOME and XDG_CONFIG_HOME in a temporary directory and NO_COLOR=1,
// then env (NAME=value entries, e.g. agent.env(); a later entry of a name
// wins, so append "NETAGENT_TOKEN=" to take a token away).
func agentctl(t testing.TB, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return agentctlStdin(t, env, "", args...)
}

// agentctlStdin is agentctl with stdin as the CLI's standard input (e.g.
// for "-f -").
func agentctlStdin(t testing.TB, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code = runAgentctl(t, env, stdin, args...)
	t.Logf("agentctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", quoteArgs(args), code, testsupport.Tail(stdout, 5000), testsupport.Tail(stderr, 5000))
	return stdout, stderr, code
}

// runAgentctl is agentctlStdin without logging the output: for polls.
func runAgentctl(t testing.TB, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	cmd := ctlCommand(ctx, t, env, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	stdout, stderr = out.String(), errOut.String()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("agentctl %s: still running after %v (killed)\nstdout:\n%s\nstderr:\n%s",
			quoteArgs(args), ctlTimeout, testsupport.Tail(stdout, 5000), testsupport.Tail(stderr, 5000))
	case err == nil:
		code = 0
	case errors.As(err, &exit):
		code = exit.ExitCode() // -1 if a signal killed it
	default:
		t.Fatalf("agentctl %s: %v", quoteArgs(args), err)
	}
	return stdout, stderr, code
}

// ctlCommand prepares a run of the built agentctl in the environment
// agentctl describes.
func ctlCommand(ctx context.Context, t testing.TB, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, agentctlBinary(t), args...)
	home := t.TempDir()
	cmd.Env = append(withoutVars(os.Environ(), ctlVars...),
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "NO_COLOR=1")
	cmd.Env = append(cmd.Env, env...)
	// Children of the CLI that keep its pipes open do not hold up Wait.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// env returns the environment that points agentctl at the agent:
// AGENT_HOST, AGENT_GRPC_PORT, AGENT_REST_PORT, MICROSERVICE_LABEL,
// ETCD_ENDPOINTS and, when the agent has one, NETAGENT_TOKEN.
func (a *agent) env() []string {
	env := []string{
		"AGENT_HOST=" + a.Host,
		"AGENT_GRPC_PORT=" + strconv.Itoa(a.GRPCPort),
		"AGENT_REST_PORT=" + strconv.Itoa(a.RESTPort),
		"MICROSERVICE_LABEL=" + a.Label,
		"ETCD_ENDPOINTS=" + a.EtcdEndpoint,
	}
	if a.Token != "" {
		env = append(env, "NETAGENT_TOKEN="+a.Token)
	}
	return env
}

// flags returns agentctl's global flags that point it at the agent, the
// same as env: --host, --grpc-port, --rest-port, --label, --etcd-endpoints
// and, when the agent has one, --token.
func (a *agent) flags() []string {
	flags := []string{
		"--host", a.Host,
		"--grpc-port", strconv.Itoa(a.GRPCPort),
		"--rest-port", strconv.Itoa(a.RESTPort),
		"--label", a.Label,
		"--etcd-endpoints", a.EtcdEndpoint,
	}
	if a.Token != "" {
		flags = append(flags, "--token", a.Token)
	}
	return flags
}

// quoteArgs returns args as a shell would show them, for messages.
func quoteArgs(args []string) string {
	quoted := make([]string, len(args))
	for i, arg := range args {
		if arg == "" || strings.ContainsAny(arg, " \t\n'\"\\$*?;&|<>(){}") {
			arg = strconv.Quote(arg)
		}
		quoted[i] = arg
	}
	return strings.Join(quoted, " ")
}

package agentctl_test

// TLS: an agent with TLS on REST and gRPC, and agentctl with and without
// the CA of its certificate.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/tests/testsupport"
)

// TestAgentctlTLS: against an agent with TLS on REST and gRPC, --tls-ca
// (or AGENTCTL_TLS_CA, or --tls-insecure) works for REST, gRPC and a gRPC
// stream; without TLS, or with TLS but without the CA, every API fails
// with one line that says what to change.
func TestAgentctlTLS(t *testing.T) {
	t.Parallel()
	cert := testsupport.SelfSigned(t)
	a := startAgent(t, agentOptions{TLS: cert})
	env := a.env()

	t.Run("with the CA", func(t *testing.T) {
		out := mustCtl(t, env, "--tls-ca", cert.CertFile, "status")
		if !strings.Contains(out, "ready") || !strings.Contains(out, a.Label) {
			t.Errorf("status over HTTPS: %q, want ready and the label %s", out, a.Label)
		}
		if out := mustCtl(t, env, "--tls-ca", cert.CertFile, "config", "get"); !strings.Contains(out, "no desired configuration") {
			t.Errorf("config get over gRPC with TLS: %q", out)
		}
		// A server stream over TLS: the agent's initial statuses, then --count stops it.
		if out := mustCtl(t, env, "--tls-ca", cert.CertFile, "config", "watch", "--count", "1"); strings.Count(out, "\n") != 1 {
			t.Errorf("config watch --count 1 over TLS: %q, want one status line", out)
		}
		if out := mustCtl(t, append(env, "AGENTCTL_TLS_CA="+cert.CertFile), "values", "-o", "json"); !strings.HasPrefix(out, "[") {
			t.Errorf("values with AGENTCTL_TLS_CA: %q, want a JSON list", out)
		}
		mustCtl(t, env, "--tls-insecure", "config", "history", "--last", "1")
		mustCtl(t, append(env, "AGENTCTL_TLS_INSECURE=true"), "config", "get")
	})

	t.Run("without TLS", func(t *testing.T) {
		wantError(t, env, "", []string{"status"}, "REST API", "uses TLS", "--tls-ca")
		wantError(t, env, "", []string{"config", "get"}, "gRPC API", "may use TLS", "--tls-ca")
	})

	t.Run("TLS without the CA", func(t *testing.T) {
		for _, args := range [][]string{{"--tls", "status"}, {"--tls", "config", "get"}} {
			wantError(t, env, "", args, "certificate is not trusted", "--tls-ca", "--tls-insecure")
		}
	})

	t.Run("bad TLS files", func(t *testing.T) {
		notPEM := writeFile(t, "ca.pem", "not a certificate\n")
		wantError(t, env, "", []string{"--tls-ca", notPEM, "status"}, "--tls-ca", "no PEM certificate")
		wantError(t, env, "", []string{"--tls-ca", filepath.Join(t.TempDir(), "missing.pem"), "config", "get"}, "--tls-ca", "no such file")
		wantError(t, env, "", []string{"--tls-cert", cert.CertFile, "status"}, "--tls-cert and --tls-key go together")
	})
}

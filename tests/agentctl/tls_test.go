package agentctl_test

// TLS: an agent with TLS on REST and gRPC, and agentctl with and without
// the CA of its certificate.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCert is a self-signed certificate for 127.0.0.1: the agent's
// (CertFile, KeyFile) and its own CA (CertFile, Pool).
type testCert struct {
	CertFile, KeyFile string
	Pool              *x509.CertPool
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key in
// a temporary directory of the test.
func selfSigned(t *testing.T) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netagent agentctl test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &testCert{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), Pool: x509.NewCertPool()}
	c.Pool.AddCert(cert)
	if err := os.WriteFile(c.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAgentctlTLS: against an agent with TLS on REST and gRPC, --tls-ca
// (or AGENTCTL_TLS_CA, or --tls-insecure) works for REST, gRPC and a gRPC
// stream; without TLS, or with TLS but without the CA, every API fails
// with one line that says what to change.
func TestAgentctlTLS(t *testing.T) {
	t.Parallel()
	cert := selfSigned(t)
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

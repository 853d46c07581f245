package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/netagent-io/netagent/tests/testsupport"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestTLSListeners: with TLS configured, REST answers HTTPS (and not plain
// HTTP) and gRPC answers over TLS.
func TestTLSListeners(t *testing.T) {
	cert := testsupport.SelfSigned(t)
	certFile, keyFile, pool := cert.CertFile, cert.KeyFile, cert.Pool
	cfg := testConfig(t)
	cfg.Etcd.EmbeddedDir = ""
	cfg.Linux.Disabled = true
	cfg.REST.TLSCert, cfg.REST.TLSKey = certFile, keyFile
	cfg.GRPC.TLSCert, cfg.GRPC.TLSKey = certFile, keyFile
	a := startAgent(t, cfg, false)

	tlsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := tlsClient.Get("https://" + a.addrs.REST + "/livez")
	if err != nil {
		t.Fatalf("HTTPS /livez: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("HTTPS /livez: %d", resp.StatusCode)
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + a.addrs.REST + "/livez"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP answered 200 on the TLS listener")
		}
	}

	conn, err := grpc.NewClient(a.addrs.GRPC, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("gRPC health over TLS: %v", err)
	}
}

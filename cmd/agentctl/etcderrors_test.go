package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// agentGRPC serves the agent's gRPC services (the Configurator, as
// unimplemented stubs, and reflection; no etcd) until the test ends, and
// returns its port.
func agentGRPC(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	configuratorpb.RegisterConfiguratorServer(g, configuratorpb.UnimplementedConfiguratorServer{})
	reflection.Register(g)
	served := make(chan struct{})
	go func() { defer close(served); _ = g.Serve(l) }()
	t.Cleanup(func() { g.Stop(); <-served })
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// httpPort serves HTTP (404 to everything) until the test ends, and
// returns its port.
func httpPort(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// TestKvdbEtcdUnreachable: kvdb pointed at something that is not etcd
// says what is there and what to change, in one line and within seconds
// (not the 10 s of --timeout): the agent's gRPC port or another gRPC
// server, the agent's REST port or another HTTP server, nothing
// (connection refused), a listener that never answers. With credentials
// (the token), the same.
func TestKvdbEtcdUnreachable(t *testing.T) {
	grpcPort, otherGRPC := agentGRPC(t), agentGRPC(t)
	restPort, otherHTTP := httpPort(t), httpPort(t)
	closed := closedPorts(t, 1)[0]
	silent := silentPort(t)
	// The REST port answers as the agent: its etcd is at 127.0.0.1:23790.
	agentREST := statusAgent(t, "vpp1", "http://127.0.0.1:23790")
	const fix = "--etcd-endpoints or ETCD_ENDPOINTS"
	for _, c := range []struct {
		name  string
		args  []string
		wants []string
		limit time.Duration // generous: the bound is 3 s, and the machine may be loaded
	}{
		{"the agent's gRPC port", []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + grpcPort, "--grpc-port", grpcPort},
			[]string{"kvdb list: 127.0.0.1:" + grpcPort + " is the agent's gRPC port (--grpc-port), not etcd", fix}, 5 * time.Second},
		{"the agent's gRPC port, the agent says where its etcd is", []string{"kvdb", "get", "config/x", "--etcd-endpoints", "127.0.0.1:" + grpcPort, "--grpc-port", grpcPort, "--rest-port", agentREST},
			[]string{"kvdb get: 127.0.0.1:" + grpcPort + " is the agent's gRPC port", "the agent uses etcd at http://127.0.0.1:23790", fix}, 5 * time.Second},
		{"another gRPC server", []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + otherGRPC},
			[]string{"127.0.0.1:" + otherGRPC + " is not etcd: a gRPC server without etcd's services answers there", fix}, 5 * time.Second},
		{"the agent's REST port", []string{"kvdb", "put", "config/vpp/v2/interfaces/loop1", `{"name":"loop1"}`, "--etcd-endpoints", "127.0.0.1:" + restPort, "--rest-port", restPort},
			[]string{"kvdb put: 127.0.0.1:" + restPort + " is the agent's REST port (--rest-port), not etcd", fix}, 5 * time.Second},
		{"another HTTP server", []string{"kvdb", "del", "config/x", "--etcd-endpoints", "http://127.0.0.1:" + otherHTTP},
			[]string{"kvdb del: http://127.0.0.1:" + otherHTTP + " is not etcd: an HTTP server answers there, not gRPC", fix}, 5 * time.Second},
		{"nothing there", []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + closed},
			[]string{"kvdb list: no etcd at 127.0.0.1:" + closed + " (connection refused)", "is it running?", fix}, 5 * time.Second},
		{"nothing there, with a token", []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + closed, "--token", "s3cret"},
			[]string{"kvdb list: no etcd at 127.0.0.1:" + closed + " (connection refused)", fix}, 7 * time.Second},
		{"the agent's gRPC port, with a token", []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + grpcPort, "--grpc-port", grpcPort, "--token", "s3cret"},
			[]string{"is the agent's gRPC port (--grpc-port), not etcd", fix}, 7 * time.Second},
		{"a listener that never answers", []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + silent},
			[]string{"kvdb list: no connection to etcd at 127.0.0.1:" + silent + " within 3s", "accepts connections but does not answer", fix}, 8 * time.Second},
		{"fleet, nothing there", []string{"fleet", "status", "--etcd-endpoints", "127.0.0.1:" + closed},
			[]string{"fleet status: no etcd at 127.0.0.1:" + closed + " (connection refused)"}, 5 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if !strings.Contains(strings.Join(args, " "), "--rest-port") {
				args = append(args, "--rest-port", closed)
			}
			start := time.Now()
			stdout, stderr, code := runCtl(args...)
			took := time.Since(start)
			if code != exitError || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "agentctl: ") {
				t.Errorf("exit %d, stdout %q, stderr %q; want one error line", code, stdout, stderr)
			}
			for _, want := range c.wants {
				if !strings.Contains(stderr, want) {
					t.Errorf("%q does not say %q", stderr, want)
				}
			}
			if strings.Contains(stderr, "rpc error") {
				t.Errorf("%q: a raw gRPC error", stderr)
			}
			if took > c.limit {
				t.Errorf("took %v, want less than %v (a connection to etcd is given 3 s)", took, c.limit)
			}
		})
	}
}

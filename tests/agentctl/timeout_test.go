package agentctl_test

// Timeouts: a request that reached the agent (or etcd) but got no answer
// within --timeout says so and to raise --timeout; one that never got a
// connection says the agent (or etcd) cannot be reached.

import (
	"context"
	"net"
	"strconv"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// slowConfigurator is a Configurator whose calls answer only when their
// client gives up: an agent too slow for --timeout.
type slowConfigurator struct {
	configuratorpb.UnimplementedConfiguratorServer
}

func (slowConfigurator) Get(ctx context.Context, _ *configuratorpb.GetRequest) (*configuratorpb.GetResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (slowConfigurator) Update(ctx context.Context, _ *configuratorpb.UpdateRequest) (*configuratorpb.UpdateResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// slowEtcd is an etcd KV service whose reads answer only when their client
// gives up.
type slowEtcd struct {
	etcdserverpb.UnimplementedKVServer
}

func (*slowEtcd) Range(ctx context.Context, _ *etcdserverpb.RangeRequest) (*etcdserverpb.RangeResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// slowGRPC serves the services registered by register on a loopback port
// until the test ends, and returns the port.
func slowGRPC(t *testing.T, register func(*grpc.Server)) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	register(g)
	served := make(chan struct{})
	go func() { defer close(served); _ = g.Serve(l) }()
	t.Cleanup(func() { g.Stop(); <-served })
	return l.Addr().(*net.TCPAddr).Port
}

// TestAgentctlTimeouts: REST, gRPC and etcd requests that connected but got
// no answer within --timeout name the request and --timeout; those that
// never connected (a listener that accepts and never speaks: no HTTP/2,
// so no gRPC connection) say the API cannot be reached. The gRPC servers
// get 2 s: time to connect on a loaded machine.
func TestAgentctlTimeouts(t *testing.T) {
	t.Parallel()
	silent := strconv.Itoa(silentListener(t))
	slowAgent := strconv.Itoa(slowGRPC(t, func(g *grpc.Server) { configuratorpb.RegisterConfiguratorServer(g, slowConfigurator{}) }))
	slowKV := strconv.Itoa(slowGRPC(t, func(g *grpc.Server) { etcdserverpb.RegisterKVServer(g, &slowEtcd{}) }))
	doc := writeFile(t, "loop.yaml", "vpp_config:\n  interfaces:\n    - name: loop5\n      type: SOFTWARE_LOOPBACK\n")
	for _, c := range []errorCase{
		{name: "REST: connected, no answer", args: []string{"graph", "--rest-port", silent, "--timeout", "500ms"},
			wants: []string{"the agent did not answer GET /scheduler/graph within 500ms (raise --timeout)"}},
		{name: "REST: connected, no answer (status)", args: []string{"status", "--rest-port", silent, "--timeout", "500ms"},
			wants: []string{"the agent did not answer GET /info/status within 500ms (raise --timeout)"}},
		{name: "gRPC: connected, no answer", args: []string{"config", "get", "--grpc-port", slowAgent, "--timeout", "2s"},
			wants: []string{"config get: the agent at 127.0.0.1:" + slowAgent + " did not answer within 2s (raise --timeout)"}},
		{name: "gRPC: a change connected, no answer", args: []string{"config", "update", doc, "--grpc-port", slowAgent, "--timeout", "2s"},
			wants: []string{"config update: the agent at 127.0.0.1:" + slowAgent + " did not answer within 2s (raise --timeout)",
				"the change may be applied all the same: agentctl config history shows it"}},
		{name: "gRPC: no connection", args: []string{"config", "get", "--grpc-port", silent, "--timeout", "500ms"},
			wants: []string{"cannot reach the agent's gRPC API at 127.0.0.1:" + silent, "no connection within 500ms (--timeout)", "is the agent running?"}},
		{name: "etcd: connected, no answer", args: []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + slowKV, "--timeout", "2s"},
			wants: []string{"kvdb list: etcd at 127.0.0.1:" + slowKV + " did not answer within 2s (raise --timeout)"}},
		{name: "etcd: no connection", args: []string{"kvdb", "list", "--etcd-endpoints", "127.0.0.1:" + silent, "--timeout", "500ms"},
			wants: []string{"kvdb list: no connection to etcd at 127.0.0.1:" + silent + " within 500ms", "does not answer gRPC"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			line := wantError(t, nil, "", c.args, c.wants...)
			if c.name != "gRPC: no connection" && contains("cannot reach")(line, 0) {
				t.Errorf("a request that connected: %q says the agent cannot be reached", line)
			}
		})
	}
}

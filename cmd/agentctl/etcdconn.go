package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// etcdConnectTimeout bounds the connection to etcd unless --timeout (or
// AGENTCTL_TIMEOUT) is given: an etcd that is not there is told in seconds,
// not after the whole --timeout of a request.
const etcdConnectTimeout = 3 * time.Second

// etcdEndpointsHint is how the endpoints are changed, in the errors.
const etcdEndpointsHint = "--etcd-endpoints or ETCD_ENDPOINTS"

// errNoEtcdConnection: every endpoint refused the connection or failed its
// handshake.
var errNoEtcdConnection = errors.New("no connection to any endpoint")

// etcdConnectBound is the time a connection to etcd is given: --timeout
// when given, else etcdConnectTimeout (or the default --timeout when
// shorter).
func (a *app) etcdConnectBound() time.Duration {
	if a.timeoutGiven {
		return a.timeout
	}
	return min(a.timeout, etcdConnectTimeout)
}

// etcdConnected waits until the client has a connection to etcd, at most
// bound: nil once connected, errNoEtcdConnection as soon as no endpoint is
// left to try, context.DeadlineExceeded when bound passes while connecting.
func etcdConnected(cli *clientv3.Client, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	conn := cli.ActiveConnection()
	for {
		state := conn.GetState()
		switch state {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			return errNoEtcdConnection
		case connectivity.Idle:
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, state) {
			return context.DeadlineExceeded
		}
	}
}

// etcdUnreachable explains why op got no answer from etcd (err: what the
// client saw): what each endpoint is, when it is not etcd, and what to
// change. Each endpoint is asked once more, within a second or two, for
// the reason the etcd client keeps to itself.
func (a *app) etcdUnreachable(op string, err error) error {
	bound := min(a.etcdConnectBound(), 2*time.Second)
	if errors.Is(err, context.DeadlineExceeded) {
		bound = min(bound, time.Second) // it had its time already
	}
	reasons := make([]string, len(a.etcdEndpoints))
	var wg sync.WaitGroup
	for i, endpoint := range a.etcdEndpoints {
		wg.Go(func() { reasons[i] = a.notEtcd(endpoint, probeEtcd(endpoint, bound), err) })
	}
	wg.Wait()
	var parts []string
	for _, r := range reasons {
		if r != "" {
			parts = append(parts, r)
		}
	}
	if len(parts) == 0 { // every endpoint answers as etcd now
		return fmt.Errorf("%s: etcd at %s: %v (%s)", op, strings.Join(a.etcdEndpoints, ","), err, etcdEndpointsHint)
	}
	hint := etcdEndpointsHint
	if st := a.agent.wait(); st != nil && len(st.Etcd.Endpoints) > 0 {
		hint = fmt.Sprintf("the agent uses etcd at %s: %s", strings.Join(st.Etcd.Endpoints, ","), etcdEndpointsHint)
	}
	return fmt.Errorf("%s: %s (%s)", op, strings.Join(parts, "; "), hint)
}

// probeEtcd asks endpoint for etcd's status, without credentials (an etcd
// with authentication answers that it wants them), within bound.
func probeEtcd(endpoint string, bound time.Duration) error {
	host, port := endpointHostPort(endpoint)
	conn, err := grpc.NewClient(host+":"+port, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	return conn.Invoke(ctx, "/etcdserverpb.Maintenance/Status", &etcdserverpb.StatusRequest{}, &etcdserverpb.StatusResponse{})
}

// notEtcd says what is at endpoint from the answer of probeEtcd; "" when
// it is etcd. clientErr is what the etcd client saw.
func (a *app) notEtcd(endpoint string, probeErr, clientErr error) string {
	st, _ := status.FromError(probeErr)
	msg := st.Message()
	host, port := endpointHostPort(endpoint)
	agentHost, _ := endpointHostPort(a.host + ":0")
	agentPort := func(p int) bool { return host == agentHost && port == fmt.Sprint(p) }
	switch {
	case probeErr != nil && st.Code() == codes.Unimplemented:
		if agentPort(a.grpcPort) {
			return endpoint + " is the agent's gRPC port (--grpc-port), not etcd"
		}
		return endpoint + " is not etcd: a gRPC server without etcd's services answers there (an agent's gRPC port?)"
	case strings.Contains(msg, "looked like an HTTP/1.1 header"):
		if agentPort(a.restPort) {
			return endpoint + " is the agent's REST port (--rest-port), not etcd"
		}
		return endpoint + " is not etcd: an HTTP server answers there, not gRPC"
	case strings.Contains(msg, "connection refused"):
		return "no etcd at " + endpoint + " (connection refused): is it running?"
	case st.Code() == codes.DeadlineExceeded && errors.Is(clientErr, context.DeadlineExceeded):
		return fmt.Sprintf("no connection to etcd at %s within %v: it accepts connections but does not answer gRPC (is it etcd? --timeout gives it longer)",
			endpoint, a.etcdConnectBound())
	case st.Code() == codes.DeadlineExceeded:
		return fmt.Sprintf("no answer from etcd at %s within %v", endpoint, a.etcdConnectBound())
	case probeErr != nil && st.Code() == codes.Unavailable:
		return "no etcd at " + endpoint + " (" + from(msg, "dial ", "connection error: ") + ")"
	}
	return ""
}

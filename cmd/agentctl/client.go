package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/msglimit"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// tlsConfig is the client TLS configuration of the global flags.
func (a *app) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: a.tlsInsecure} //nolint:gosec // asked for by --tls-insecure
	if a.tlsCA != "" {
		pem, err := os.ReadFile(a.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", a.tlsCA)
		}
		cfg.RootCAs = pool
	}
	if a.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(a.tlsCert, a.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// --- REST ------------------------------------------------------------------------

func (a *app) restBase() string {
	scheme := "http"
	if a.tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(a.host, strconv.Itoa(a.restPort))
}

func (a *app) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // the agent is reached directly
	if a.tls {
		cfg, err := a.tlsConfig()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tr, Timeout: a.timeout}, nil
}

// restError is an answer of the REST API other than 2xx.
type restError struct {
	status int
	msg    string
}

func (e *restError) Error() string { return e.msg }

// rest sends a request to the agent's REST API and returns the body of a
// 2xx answer. Other answers become an error with the agent's message.
func (a *app) rest(ctx context.Context, method, path string, query url.Values) ([]byte, http.Header, error) {
	c, err := a.httpClient()
	if err != nil {
		return nil, nil, err
	}
	u := a.restBase() + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	// connected tells a request that timed out after the connection was
	// made (the agent is slow: raise --timeout) from one that never got a
	// connection (the agent is not there).
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, nil, err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := c.Do(req)
	if err != nil {
		if connected.Load() && isTimeout(err) {
			return nil, nil, fmt.Errorf("the agent did not answer %s %s within %v (raise --timeout)", method, path, a.timeout)
		}
		return nil, nil, a.unreachable("REST", a.restBase(), "--rest-port", "AGENT_REST_PORT", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		if isTimeout(err) {
			return nil, nil, fmt.Errorf("the agent did not finish answering %s %s within %v (raise --timeout)", method, path, a.timeout)
		}
		return nil, nil, fmt.Errorf("reading the answer of %s %s: %v", method, path, err)
	}
	if resp.StatusCode == http.StatusBadRequest && !a.tls && strings.Contains(string(body), "HTTP request to an HTTPS server") {
		return nil, nil, fmt.Errorf("the agent's REST API at %s uses TLS: give --tls-ca with the CA that signed its certificate (or --tls, --tls-insecure)", a.restBase())
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return body, resp.Header, &restError{resp.StatusCode, a.tokenError(method+" "+path+" (401)", restMessage(body, resp.StatusCode))}
	}
	if resp.Header.Get("Grpc-Status") != "" || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/grpc") {
		return nil, nil, fmt.Errorf("cannot reach the agent's REST API at %s: a gRPC server answers there, not REST (is --rest-port the agent's gRPC port? the address is --host and --rest-port, or AGENT_HOST and AGENT_REST_PORT)", a.restBase())
	}
	if resp.StatusCode/100 != 2 {
		msg := restMessage(body, resp.StatusCode)
		return body, resp.Header, &restError{resp.StatusCode, fmt.Sprintf("agent answered %s %s with %d: %s", method, path, resp.StatusCode, msg)}
	}
	return body, resp.Header, nil
}

// restMessage is the agent's message in an answer other than 2xx: its
// "error" field, else the body (clipped), else the status text.
func restMessage(body []byte, status int) string {
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return msg
}

// tokenError explains a request refused for its token: none was sent (the
// agent's message says what it wants), or the one sent is wrong (where it
// came from).
func (a *app) tokenError(request, agentMsg string) string {
	if a.token == "" {
		return fmt.Sprintf("%s: the agent wants a token: %s (--token, --token-file or NETAGENT_TOKEN)", request, agentMsg)
	}
	return fmt.Sprintf("%s: the agent rejected the token (from %s): it is not the agent's token", request, a.tokenFrom)
}

// restJSON gets a JSON answer into out.
func (a *app) restJSON(ctx context.Context, method, path string, query url.Values, out any) error {
	body, _, err := a.rest(ctx, method, path, query)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("answer of %s %s is not what agentctl expects (a different agent version?): %v", method, path, err)
	}
	return nil
}

// isTimeout tells whether a request ended because --timeout passed.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err)
}

// unreachable explains a failed connection: which API, where, what went
// wrong and what to change (the address flags, or the TLS flags when the
// agent's TLS and agentctl's do not match).
func (a *app) unreachable(api, addr, portFlag, portEnv string, err error) error {
	msg := err.Error()
	var dnsErr *net.DNSError
	var uerr *url.Error
	switch {
	case errors.As(err, &dnsErr):
		msg = dnsErr.Error()
	case errors.As(err, &uerr):
		msg = uerr.Err.Error()
	}
	address := fmt.Sprintf("the address is --host and %s, or AGENT_HOST and %s", portFlag, portEnv)
	var why, hint string
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused"):
		why, hint = "connection refused", "is the agent running? "+address
	case isTimeout(err):
		why, hint = fmt.Sprintf("no connection within %v (--timeout)", a.timeout), "is the agent running? "+address
	case strings.Contains(msg, "x509:") || strings.Contains(msg, "failed to verify certificate"):
		why = "the agent's certificate is not trusted: " + from(msg, "x509:", "tls:")
		hint = "--tls-ca names the CA that signed it; --tls-insecure skips the check"
	case strings.Contains(msg, "first record does not look like a TLS handshake") ||
		strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		why = "it does not answer TLS"
		hint = "the agent's " + api + " API is plain: drop --tls, --tls-ca and --tls-insecure, or check " + portFlag
	case strings.Contains(msg, "malformed HTTP response") || strings.Contains(msg, "readLoopPeekFailLocked") ||
		strings.Contains(msg, "use of closed network connection"):
		// The second and third: the server spoke first (an HTTP/2
		// server's settings frame) before agentctl's request was written
		// (or while it was: the transport closed the connection on the
		// unasked answer, and the write met it closed).
		why = "what answers there is not HTTP"
		hint = "is " + portFlag + " the agent's gRPC port? a TLS listener needs --tls or --tls-ca; " + address
	case strings.Contains(msg, "looked like an HTTP/1.1 header") || strings.Contains(msg, "ALPN"):
		why = "an HTTP server answers there, not gRPC"
		hint = "is " + portFlag + " the agent's REST port? " + address
	case strings.Contains(msg, "error reading server preface"):
		why = "the connection closed before gRPC started"
		hint = "the agent's gRPC API may use TLS (--tls, --tls-ca), or " + portFlag + " is not its gRPC port"
	case msg == "EOF" || strings.HasSuffix(msg, ": EOF"):
		why = "the connection closed without an answer"
		hint = "is " + portFlag + " the agent's " + api + " port? a TLS listener needs --tls or --tls-ca; " + address
	default:
		why, hint = msg, "is the agent running? "+address
	}
	return fmt.Errorf("cannot reach the agent's %s API at %s: %s (%s)", api, addr, why, hint)
}

// from returns s from the first of the markers on (s when none is in it),
// without a trailing quote: the cause at the end of a wrapped message.
func from(s string, markers ...string) string {
	for _, m := range markers {
		if i := strings.Index(s, m); i >= 0 {
			return strings.TrimRight(s[i:], `"`)
		}
	}
	return s
}

// --- gRPC ------------------------------------------------------------------------

func (a *app) grpcAddr() string { return net.JoinHostPort(a.host, strconv.Itoa(a.grpcPort)) }

// configuratorClient is a Configurator client with its connection: the
// state of the connection tells a call that timed out after it connected
// (the agent is slow) from one that never connected (the agent is not
// there).
type configuratorClient struct {
	configuratorpb.ConfiguratorClient
	a    *app
	conn *grpc.ClientConn
}

// configurator returns a Configurator client and the function that closes
// its connection.
func (a *app) configurator() (*configuratorClient, func(), error) {
	creds := insecure.NewCredentials()
	if a.tls {
		cfg, err := a.tlsConfig()
		if err != nil {
			return nil, nil, err
		}
		creds = credentials.NewTLS(cfg)
	}
	conn, err := grpc.NewClient(a.grpcAddr(), grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(a.grpcMaxMsg), grpc.MaxCallSendMsgSize(a.grpcMaxMsg)),
		grpc.WithChainUnaryInterceptor(explainSizeLimits))
	if err != nil {
		return nil, nil, fmt.Errorf("gRPC address %s: %v", a.grpcAddr(), err)
	}
	c := &configuratorClient{ConfiguratorClient: configuratorpb.NewConfiguratorClient(conn), a: a, conn: conn}
	return c, func() { _ = conn.Close() }, nil
}

// grpcMaxMsgSetting names agentctl's message limit in its errors.
const grpcMaxMsgSetting = "--grpc-max-msg-size or AGENTCTL_GRPC_MAX_MSG_SIZE"

// explainSizeLimits turns the refusal of a message for its size into an
// error that says which side refused it and which setting to raise.
func explainSizeLimits(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if m, ok := req.(proto.Message); ok && err != nil {
		return msglimit.Explain(err, proto.Size(m), grpcMaxMsgSetting)
	}
	return err
}

// configuratorCall returns a Configurator client, the context of one call
// (bounded by --timeout, with the token) and the function that releases
// both.
func (a *app) configuratorCall(ctx context.Context) (*configuratorClient, context.Context, func(), error) {
	client, closeConn, err := a.configurator()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := a.callContext(ctx)
	return client, ctx, func() { cancel(); closeConn() }, nil
}

// earlyConn is a Configurator connection started before the request is
// ready (dialEarly).
type earlyConn struct {
	a         *app
	client    *configuratorClient
	closeConn func()
	err       error
}

// dialEarly starts connecting to the agent's gRPC API at once, so that the
// connection (TCP, HTTP/2, TLS) is ready by the time a big document is
// read and decoded instead of after it. A set-up error (TLS files) is
// returned by call, after the document's own errors; the --timeout of the
// call counts from call on. close releases the connection either way.
func (a *app) dialEarly() *earlyConn {
	e := &earlyConn{a: a}
	e.client, e.closeConn, e.err = a.configurator()
	if e.err == nil {
		e.client.conn.Connect()
	}
	return e
}

// call returns the client and the context of one call (bounded by
// --timeout, with the token) and the function that releases the context.
func (e *earlyConn) call(ctx context.Context) (*configuratorClient, context.Context, context.CancelFunc, error) {
	if e.err != nil {
		return nil, nil, nil, e.err
	}
	ctx, cancel := e.a.callContext(ctx)
	return e.client, ctx, cancel, nil
}

func (e *earlyConn) close() {
	if e.err == nil {
		e.closeConn()
	}
}

// callContext bounds one call by --timeout and carries the token.
func (a *app) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	return a.withToken(ctx), cancel
}

func (a *app) withToken(ctx context.Context) context.Context {
	if a.token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+a.token)
	}
	return ctx
}

// error turns the error of a call into one an operator can act on.
func (c *configuratorClient) error(call string, err error) error {
	return c.a.grpcError(call, err, c.conn.GetState() == connectivity.Ready)
}

// changeError is the error of an Update or Delete call: one that timed out after
// it reached the agent may still be applied (the agent runs a change it
// got whether or not its client still waits).
func (c *configuratorClient) changeError(call string, err error) error {
	connected := c.conn.GetState() == connectivity.Ready
	out := c.a.grpcError(call, err, connected)
	if connected && status.Code(err) == codes.DeadlineExceeded {
		out = fmt.Errorf("%w; the change may be applied all the same: agentctl config history shows it", out)
	}
	return out
}

// grpcError turns a gRPC error into one an operator can act on; connected
// tells whether the connection to the agent was up when the call failed.
func (a *app) grpcError(call string, err error, connected bool) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %v", call, err)
	}
	switch st.Code() {
	case codes.Unavailable:
		return a.unreachable("gRPC", a.grpcAddr(), "--grpc-port", "AGENT_GRPC_PORT", errors.New(st.Message()))
	case codes.DeadlineExceeded:
		if !connected {
			return a.unreachable("gRPC", a.grpcAddr(), "--grpc-port", "AGENT_GRPC_PORT", context.DeadlineExceeded)
		}
		return fmt.Errorf("%s: the agent at %s did not answer within %v (raise --timeout)", call, a.grpcAddr(), a.timeout)
	case codes.Unauthenticated:
		return errors.New(a.tokenError(call, st.Message()))
	}
	return fmt.Errorf("%s: %s", call, st.Message())
}

package msglimit_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/msglimit"
	"github.com/netagent-io/netagent/tests/testsupport"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int{
		"64MiB": 64 << 20, "64 MiB": 64 << 20, "8MB": 8_000_000, "8 mb": 8_000_000, "100k": 100_000, "1.5MiB": 3 << 19,
		"4194304": 4194304, "1KiB": 1024, "2GiB": 0, " 12 B ": 12, "1GB": 1_000_000_000,
	} {
		got, err := msglimit.Parse(in)
		if want == 0 {
			if err == nil || !strings.Contains(err.Error(), "want from 1 byte to just under 2 GiB") {
				t.Errorf("Parse(%q) = %d, %v; want an error: over the limit", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "64XB", "MiB", "-1MiB", "0", "1..2MB", "0.1"} {
		if got, err := msglimit.Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, got)
		} else if !strings.Contains(err.Error(), `size "`+in+`"`) {
			t.Errorf("Parse(%q): %v does not quote the input", in, err)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int]string{64 << 20: "64 MiB", 1536 << 10: "1536 KiB", 1_000_000: "1000000 B", 100: "100 B"} {
		if got := msglimit.FormatLimit(n); got != want {
			t.Errorf("FormatLimit(%d) = %q, want %q", n, got, want)
		}
		if back, err := msglimit.Parse(msglimit.FormatLimit(n)); err != nil || back != n {
			t.Errorf("Parse(FormatLimit(%d)) = %d, %v", n, back, err)
		}
	}
	for n, want := range map[int]string{4300416: "4.3 MB", 9_100_000: "9.1 MB", 757_000: "757.0 kB", 999: "999 B"} {
		if got := msglimit.FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// payloadServer answers UnaryCall with a payload of the size asked for.
type payloadServer struct {
	testpb.UnimplementedTestServiceServer
}

func (payloadServer) UnaryCall(_ context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: make([]byte, req.GetResponseSize())}}, nil
}

// TestExplainOverTheWire: each of the four limits, hit over a real
// connection, is explained as the refusal of the right side with its
// setting; the server logs its own refusals; other errors pass as they are.
// It fails if gRPC changes the messages Explain reads.
func TestExplainOverTheWire(t *testing.T) {
	const (
		serverRecv = 1000
		serverSend = 2000
		clientSend = 3000
		clientRecv = 1500
		setting    = "--client-limit"
	)
	var logs testsupport.SyncBuffer
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(serverRecv), grpc.MaxSendMsgSize(serverSend),
		grpc.StatsHandler(msglimit.ServerLog(slog.New(slog.NewTextHandler(&logs, nil)))))
	testpb.RegisterTestServiceServer(srv, payloadServer{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(clientSend), grpc.MaxCallRecvMsgSize(clientRecv)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := testpb.NewTestServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, c := range []struct {
		name                  string
		requestBody, response int
		want                  string
	}{
		{"client send", 4000, 10, "agentctl refused to send a 4.0 kB request: its limit is 3000 B (--client-limit)"},
		{"server receive", 1500, 10, "the agent refused a 1.5 kB request: its limit is 1000 B (grpc.max_recv_msg_size in the agent's configuration)"},
		{"client receive", 10, 1800, "agentctl refused the agent's 1.8 kB answer: its limit is 1500 B (--client-limit)"},
		{"server send", 10, 2500, "the agent refused to send its 2.5 kB answer: its limit is 2000 B (grpc.max_send_msg_size in the agent's configuration)"},
	} {
		// The payload's body makes the request's size: a few bytes more than
		// the body.
		req := &testpb.SimpleRequest{ResponseSize: int32(c.response), Payload: &testpb.Payload{Body: make([]byte, c.requestBody-10)}}
		_, err := client.UnaryCall(ctx, req)
		err = msglimit.Explain(err, proto.Size(req), setting)
		if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.HasPrefix(st.Message(), c.want[:strings.Index(c.want, " a ")+3]) ||
			!strings.Contains(st.Message(), c.want[strings.Index(c.want, ": its limit"):]) {
			t.Errorf("%s: %v, want ResourceExhausted %q", c.name, err, c.want)
		}
	}
	// The server's stats handler sees the end of a call after the client
	// has its error: wait for the lines (with a deadline).
	for _, want := range []string{
		`msg="the agent refused a 1.5 kB request: its limit is 1000 B (grpc.max_recv_msg_size in the agent's configuration)" call=/grpc.testing.TestService/UnaryCall`,
		`the agent refused to send a 2.5 kB answer: its limit is 2000 B (grpc.max_send_msg_size`,
	} {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(logs.String(), want) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // polling the log, bounded by the deadline
		}
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the server's log %q does not hold %q", logs.String(), want)
		}
	}
	other := status.Error(codes.ResourceExhausted, "the transaction queue is full")
	if got := msglimit.Explain(other, 10, setting); !errors.Is(got, other) {
		t.Errorf("another ResourceExhausted error became %v", got)
	}
	if got := msglimit.Explain(nil, 10, setting); got != nil {
		t.Errorf("Explain(nil) = %v", got)
	}
}

package grpcsource

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// TestSchedulerErrorCodes: the gRPC code of each kind of commit error.
// Options refused by the orchestrator or the scheduler cannot be sent in a
// request of today's service (full_resync and wait_done always combine into
// valid options), so their mapping is checked here, on the error as Commit
// and the orchestrator return it.
func TestSchedulerErrorCodes(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	optErr := &api.TransactionError{TxnInitError: &api.OptionError{Field: "Retry.MaxCount", Reason: "is 0; it must be at least 1 (nil Retry: no retry)"}}
	for _, tc := range []struct {
		err  error
		code codes.Code
		text string
	}{
		{optErr, codes.InvalidArgument, "update: transaction options: Retry.MaxCount is 0"},
		{fmt.Errorf("commit: %w", context.DeadlineExceeded), codes.DeadlineExceeded, ""},
		{api.ErrTxnQueueFull, codes.ResourceExhausted, "update: transaction queue is full"},
		{api.ErrClosed, codes.Unavailable, "update: scheduler is closed"},
		{fmt.Errorf("something else"), codes.Internal, "update: something else"},
	} {
		st, _ := status.FromError(s.schedulerError("update", tc.err))
		if st.Code() != tc.code || !strings.HasPrefix(st.Message(), tc.text) {
			t.Errorf("%v: %v %q, want %v %q...", tc.err, st.Code(), st.Message(), tc.code, tc.text)
		}
	}
}

package vppconn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
)

// Dump sends a dump request and collects its details (of type T) until the
// control ping reply. On a connection of the Manager's (Conn) it goes as a
// one-call batch of the socket client (see Pipeline), when no other batch
// is running; otherwise, and on any other connection, on a GoVPP stream,
// closed whatever happens.
func Dump[T api.Message](ctx context.Context, conn api.Connection, req api.Message) ([]T, error) {
	if sc, ok := conn.(sessionConn); ok {
		if out, err, ran := dumpBatch[T](ctx, sc, req); ran {
			return out, err
		}
	}
	stream, err := conn.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stream.Close() }()
	if err := stream.SendMsg(req); err != nil {
		return nil, err
	}
	if err := stream.SendMsg(&memclnt.ControlPing{}); err != nil {
		return nil, err
	}
	var out []T
	for {
		msg, err := stream.RecvMsg()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", req.GetMessageName(), err)
		}
		if d, ok := msg.(T); ok {
			out = append(out, d)
			continue
		}
		if _, ok := msg.(*memclnt.ControlPingReply); ok {
			return out, nil
		}
		return nil, fmt.Errorf("%s: unexpected message %s", req.GetMessageName(), msg.GetMessageName())
	}
}

// IsVPPError tells whether err is one of the given VPP error codes.
func IsVPPError(err error, codes ...api.VPPApiError) bool {
	var e api.VPPApiError
	return errors.As(err, &e) && slices.Contains(codes, e)
}

// dumpBatch is Dump as a batch of one call; ran is false when another
// batch holds the socket client (nothing was sent).
func dumpBatch[T api.Message](ctx context.Context, sc sessionConn, req api.Message) (out []T, err error, ran bool) {
	call, release, err := sc.s.bind(ctx)
	if err != nil {
		return nil, err, true
	}
	defer release()
	calls := []Call{{Request: req}}
	start := time.Now()
	// No reply timeout of its own: the call's context bounds it, as it
	// does a stream's (CallContext).
	if !sc.s.client.batch(call, sc.s.conn, &lazyCalls{calls: calls}, PipelineWindow, 24*time.Hour, nil, false) {
		return nil, nil, false
	}
	err = calls[0].Err
	if pe := (*PipelineError)(nil); errors.As(err, &pe) {
		err = pe.Cause // a dump changes nothing: sent or not does not matter
	}
	err = callTimeout(ctx, req.GetMessageName(), start, err)
	if mt := sc.metrics(); mt != nil {
		mt.observe(req.GetMessageName(), start, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req.GetMessageName(), err), true
	}
	out = make([]T, 0, len(calls[0].Details))
	for _, d := range calls[0].Details {
		t, ok := d.(T)
		if !ok {
			return nil, fmt.Errorf("%s: unexpected message %s", req.GetMessageName(), d.GetMessageName()), true
		}
		out = append(out, t)
	}
	return out, nil, true
}

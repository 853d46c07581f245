package vppconn

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
)

// Dump sends a dump request and collects its details (of type T) until the
// control ping reply; the stream is closed whatever happens.
func Dump[T api.Message](ctx context.Context, conn api.Connection, req api.Message) ([]T, error) {
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

package vppconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"
)

// Why a connection is never reconnected (GoVPP v0.13.0): when its health
// check fails, core.Connection reconnects the same connection in place:
// connectLoop -> connectVPP -> retrieveMessageIDs rewrites the message
// table (msgMapByPath, and pingReqID, pingReplyID, msgControlPing) without
// taking msgMapByPathLock, while Stream.RecvMsg (LookupByID) and the
// reader's msgCallback (getMessageByID) read it under that lock's read
// side. A call still reading the replies of the old VPP (a dump whose
// details came before VPP went) races with the reconnect. So the Manager
// does not let a connection reconnect: its sockClient refuses the second
// connect, GoVPP reports the loss (and its failed attempt) and the Manager
// drops the connection, after ending its session, and makes a new one. Each
// connection's message table is then written once, by its connect loop,
// before the Manager hands the connection out.

// session is one connection to one VPP process, from its connect until the
// Manager drops it. Ending it (end) makes its calls in flight return at
// once, and its later calls fail at once, with the cause: an error that is
// ErrNotConnected.
type session struct {
	conn   *core.Connection
	client *sockClient     // conn's socket, for Pipeline's batches
	ctx    context.Context // done when the session ends
	end    context.CancelCauseFunc
}

func newSession(conn *core.Connection, client *sockClient) *session {
	ctx, end := context.WithCancelCause(context.Background())
	return &session{conn: conn, client: client, ctx: ctx, end: end}
}

// ended is the cause the session ended with, nil while it lasts.
func (s *session) ended() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// bind returns a context for one call: ctx, also cancelled when the session
// ends. release frees it; call it when the call is over.
func (s *session) bind(ctx context.Context) (call context.Context, release func(), err error) {
	if err := s.ended(); err != nil {
		return nil, nil, err
	}
	call, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	return call, func() { stop(); cancel(nil) }, nil
}

// lost reports the failure of a call cut short by the end of the session or
// by the loss of the connection as ErrNotConnected; any other error (VPP's,
// the caller's deadline) is returned as it is. call is the call's context
// (bind).
func lost(call context.Context, err error) error {
	if err == nil || errors.Is(err, ErrNotConnected) {
		return err
	}
	if cause := context.Cause(call); errors.Is(cause, ErrNotConnected) {
		return cause
	}
	// GoVPP or the socket noticed the connection gone before the Manager did.
	if errors.Is(err, core.ErrNotConnected) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("%w (connection lost: %v)", ErrNotConnected, err)
	}
	return err
}

// sessionConn is the api.Connection the Manager hands out (Conn): its
// calls go through one session.
type sessionConn struct {
	conn api.Connection
	s    *session
}

var _ api.Connection = sessionConn{}

func (c sessionConn) Invoke(ctx context.Context, req, reply api.Message) error {
	call, release, err := c.s.bind(ctx)
	if err != nil {
		return err
	}
	defer release()
	return lost(call, c.conn.Invoke(call, req, reply))
}

func (c sessionConn) NewStream(ctx context.Context, options ...api.StreamOption) (api.Stream, error) {
	call, release, err := c.s.bind(ctx)
	if err != nil {
		return nil, err
	}
	stream, err := c.conn.NewStream(call, options...)
	if err != nil {
		release()
		return nil, lost(call, err)
	}
	return &sessionStream{Stream: stream, ctx: call, release: release}, nil
}

// metrics are the call metrics of the connection, nil when it is not
// instrumented.
func (c sessionConn) metrics() *metrics {
	if in, ok := c.conn.(instrumented); ok {
		return in.mt
	}
	return nil
}

// WatchEvent watches on the session's connection; the watcher receives
// nothing after the session ends (subscribe again after the next connect).
func (c sessionConn) WatchEvent(ctx context.Context, event api.Message) (api.Watcher, error) {
	if err := c.s.ended(); err != nil {
		return nil, err
	}
	return c.conn.WatchEvent(ctx, event)
}

// sessionStream is a stream of a session: its context ends with the session,
// and its errors say when the session or the connection is gone.
type sessionStream struct {
	api.Stream
	ctx     context.Context
	release func()
}

var _ api.Stream = (*sessionStream)(nil)

func (s *sessionStream) SendMsg(msg api.Message) error {
	return lost(s.ctx, s.Stream.SendMsg(msg))
}

func (s *sessionStream) RecvMsg() (api.Message, error) {
	msg, err := s.Stream.RecvMsg()
	return msg, lost(s.ctx, err)
}

func (s *sessionStream) Close() error {
	s.release()
	return s.Stream.Close()
}

package vppconn

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/core"
)

// PipelineWindow is how many requests Pipeline keeps in flight at most.
// VPP reads the requests of one socket in order and answers each before it
// reads the next, so a window only has to cover the round trip: 64 already
// reaches VPP's own rate (plugins/vpp/bench CallPipelined); 128 leaves room
// for a slow reader.
const PipelineWindow = 128

// pipelineReplyBuffer is the reply buffer of a pipeline's GoVPP stream.
// GoVPP drops a reply when the buffer stays full for 100 ms
// (core.ReplyChannelTimeout); the pipeline reads replies as they come, so
// the buffer only covers the details of the dumps in flight.
const pipelineReplyBuffer = 4 * PipelineWindow

// Call is one request of a Pipeline and its result.
type Call struct {
	// Request is the message sent.
	Request api.Message
	// Reply receives the request's reply: a message of the reply's type,
	// filled in place, as GoVPP's Invoke does. Nil for a dump: the request
	// is followed by a control ping, and Details collects what VPP sends
	// before the ping's reply.
	Reply api.Message
	// More are further dump requests of a dump, sent right after Request,
	// with one control ping after the last of them instead of one each:
	// their details arrive together and are collected in Details, in VPP's
	// order (Request's first, then each of More in turn), so the caller
	// tells them apart by their fields (the sw_if_index and address of an
	// ip_address_details). For many small dumps (one per interface) this
	// saves a ping and its reply per dump. Only for a dump (Reply nil); each
	// request counts as one in the window and in the metrics.
	More []api.Message
	// Details are the messages of a dump, in VPP's order.
	Details []api.Message
	// Err is the call's result: nil; the VPP error of a reply whose
	// retval is not 0 (api.VPPApiError, as GoVPP's service clients return
	// it); or why the call has no reply (see Pipeline).
	Err error
}

// Dump tells whether the call is a dump (no Reply).
func (c *Call) Dump() bool { return c.Reply == nil }

// PipelineError is the error of a call of a Pipeline that got no reply
// because the pipeline broke before (the connection lost, ctx ended, the
// call timeout, a reply that does not match its request). Sent tells
// whether the call's request had been sent: VPP may have carried it out.
// It wraps the cause: ErrNotConnected, a *CallTimeoutError,
// context.Canceled...
type PipelineError struct {
	Message string // the request
	Sent    bool
	Cause   error
}

func (e *PipelineError) Error() string {
	if e.Sent {
		return fmt.Sprintf("sent, no reply (VPP may have carried it out): %v", e.Cause)
	}
	return fmt.Sprintf("not sent: %v", e.Cause)
}

func (e *PipelineError) Unwrap() error { return e.Cause }

// Pipeline sends the requests of calls, in their order, on one GoVPP
// stream of the connection of area, with up to PipelineWindow requests in
// flight, and sets each call's Reply (or Details) and Err. VPP answers the
// requests of a connection in order, each reply carrying its request's
// context; GoVPP hands the replies of a stream over in order, and each
// reply is checked to be of its request's reply type (a dump's details end
// at its control ping reply).
//
// A call's Err is its own: a VPP error (retval) fails that call only. When
// the pipeline breaks (the connection lost, ctx cancelled or past its
// deadline, no reply within the Manager's call timeout of the last one, a
// reply of the wrong type), the calls without a reply fail with a
// *PipelineError saying whether their request was sent, wrapping the cause
// (ErrNotConnected, a *CallTimeoutError, ctx's error). When the connection
// or the area is not there (Conn's errors) every call fails with that error
// and nothing is sent. A call whose request has been sent cannot be taken
// back: as with a single call that times out, VPP may carry it out.
//
// Metrics: every request counts as one call of its message (a dump as one,
// its control ping included), its result that of its Err; the pipeline's
// time is spread evenly over its calls, so that the time the metrics sum
// up is the time spent waiting for VPP.
func (m *Manager) Pipeline(ctx context.Context, area string, calls []Call) {
	if len(calls) == 0 {
		return
	}
	fail := func(from int, err error) {
		for i := from; i < len(calls); i++ {
			calls[i].Err = err
		}
	}
	for i := range calls {
		if c := &calls[i]; !c.Dump() && len(c.More) > 0 {
			fail(0, fmt.Errorf("vppconn: call %d (%s) has More requests but is not a dump (it has a Reply)", i, c.Request.GetMessageName()))
			return
		}
	}
	m.mu.RLock()
	s := m.sess
	var err error
	if s == nil {
		err = m.notConnectedLocked()
	} else if msgs, off := m.disabled[area]; off {
		err = &IncompatibleError{Area: area, Messages: msgs}
	}
	m.mu.RUnlock()
	if err != nil {
		fail(0, err)
		return
	}
	start := time.Now()
	defer func() {
		requests := 0
		for i := range calls {
			requests += 1 + len(calls[i].More)
		}
		each := time.Since(start) / time.Duration(requests)
		for i := range calls {
			m.metrics.observeDuration(calls[i].Request.GetMessageName(), each, calls[i].Err)
			for _, r := range calls[i].More {
				m.metrics.observeDuration(r.GetMessageName(), each, calls[i].Err)
			}
		}
	}()
	if err := ctx.Err(); err != nil {
		fail(0, &PipelineError{Message: calls[0].Request.GetMessageName(), Cause: err})
		return
	}
	call, release, err := s.bind(ctx)
	if err != nil {
		fail(0, err)
		return
	}
	defer release()
	stream, err := s.conn.NewStream(call, core.WithReplySize(pipelineReplyBuffer), core.WithReplyTimeout(m.opts.CallTimeout))
	if err != nil {
		fail(0, lost(call, err))
		return
	}
	defer func() { _ = stream.Close() }()
	runPipeline(call, stream, calls, PipelineWindow, m.opts.CallTimeout)
}

// runPipeline is Pipeline on a stream: send in order with up to window
// requests in flight (a call's More count; a call larger than the window
// goes alone), receive in order, match each reply to its call.
func runPipeline(ctx context.Context, stream api.Stream, calls []Call, window int, timeout time.Duration) {
	sent := 0
	inFlight := 0 // requests of the calls sent and not received
	cost := func(c *Call) int { return 1 + len(c.More) }
	// broken fails every call from received on with the cause: those
	// before sent were sent.
	broken := func(received int, cause error) {
		cause = lost(ctx, cause)
		if errors.Is(cause, core.ErrReplyTimeout) {
			cause = &CallTimeoutError{Message: calls[received].Request.GetMessageName(), Timeout: timeout}
		}
		for i := received; i < len(calls); i++ {
			calls[i].Err = &PipelineError{Message: calls[i].Request.GetMessageName(), Sent: i < sent, Cause: cause}
		}
	}
	for received := range calls {
		for ; sent < len(calls) && (sent == received || inFlight+cost(&calls[sent]) <= window); sent++ {
			if err := ctx.Err(); err != nil {
				broken(received, context.Cause(ctx))
				return
			}
			c := &calls[sent]
			if err := stream.SendMsg(c.Request); err != nil {
				broken(received, err)
				return
			}
			inFlight += cost(c)
			if !c.Dump() {
				continue
			}
			for _, req := range c.More {
				if err := stream.SendMsg(req); err != nil {
					sent++ // part of the dump went
					broken(received, err)
					return
				}
			}
			if err := stream.SendMsg(&memclnt.ControlPing{}); err != nil {
				sent++ // the dump requests went
				broken(received, err)
				return
			}
		}
		c := &calls[received]
		if err := receive(stream, c); err != nil {
			broken(received, err)
			return
		}
		inFlight -= cost(c)
	}
}

// receive reads the reply of c (or a dump's details up to the control ping
// reply) and sets c's result; an error means the stream is of no further
// use.
func receive(stream api.Stream, c *Call) error {
	for {
		msg, err := stream.RecvMsg()
		if err != nil {
			return err
		}
		if !c.Dump() {
			if reflect.TypeOf(msg) != reflect.TypeOf(c.Reply) {
				return fmt.Errorf("reply %s does not answer %s: replies out of order", msg.GetMessageName(), c.Request.GetMessageName())
			}
			reflect.ValueOf(c.Reply).Elem().Set(reflect.ValueOf(msg).Elem())
			c.Err = retvalError(c.Reply)
			return nil
		}
		if _, end := msg.(*memclnt.ControlPingReply); end {
			return nil
		}
		if msg.GetMessageType() != api.ReplyMessage || !strings.HasSuffix(msg.GetMessageName(), "_details") {
			return fmt.Errorf("message %s in the dump of %s: replies out of order", msg.GetMessageName(), c.Request.GetMessageName())
		}
		c.Details = append(c.Details, msg)
	}
}

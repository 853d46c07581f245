package vppconn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
	"go.fd.io/govpp/core"
)

// PipelineWindow is how many requests Pipeline keeps in flight at most; it
// sends more, in one write, each time half of it is free (at the start of a
// batch, in writes of 16, 16, 32... requests, see firstWrite). VPP reads the
// requests of one socket in order and answers each before it reads the
// next, so the window only has to cover the round trip and the caller's
// pauses (its work on each result with PipelineThen, the garbage
// collector): 512 requests are 3-4 ms of VPP's work (a route add), so a
// pause of the caller that short leaves VPP with work queued.
const PipelineWindow = 512

// firstWrite is how many requests a batch writes at least at once while
// VPP has none of its requests to work on (at its start).
const firstWrite = 16

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

// Pipeline sends the requests of calls, in their order, on the API socket
// of the connection of area (the socket client's batch, beside GoVPP's
// core), with up to PipelineWindow requests in flight, and sets each call's
// Reply (or Details) and Err. VPP answers the requests of a connection in
// order, each reply carrying its request's context; each reply is checked
// to carry the context of the call due and to be of its request's reply
// type (a dump's details end at its control ping reply).
//
// A call's Err is its own: a VPP error (retval) fails that call only. When
// the pipeline breaks (the connection lost, ctx cancelled or past its
// deadline, no reply within the Manager's call timeout of the last one, a
// reply of the wrong type), the calls without a reply fail with a
// *PipelineError saying whether their request was sent, wrapping the cause
// (ErrNotConnected, a *CallTimeoutError, ctx's error). When the connection
// or the area is not there (Conn's errors) every call fails with that error
// and nothing is sent; likewise when a call has no Request, or has More
// requests and a Reply (the error names the call). A call whose request
// has been sent cannot be taken back: as with a single call that times
// out, VPP may carry it out.
//
// Metrics: every request counts as one call of its message (a dump as one,
// its control ping included), its result that of its Err; the pipeline's
// time is spread evenly over its calls, so that the time the metrics sum
// up is the time spent waiting for VPP.
func (m *Manager) Pipeline(ctx context.Context, area string, calls []Call) {
	m.PipelineThen(ctx, area, calls, nil)
}

// PipelineThen is Pipeline calling then(i) as soon as call i has its
// result (Reply or Details, and Err), in the order of the calls, while the
// later calls are in flight: what a caller does with a result overlaps with
// VPP's work on the next requests. Every call gets its then exactly once,
// the failed ones included, before PipelineThen returns; then runs on the
// caller's goroutine and must not start a pipeline itself (one runs at a
// time per connection). A nil then is Pipeline.
func (m *Manager) PipelineThen(ctx context.Context, area string, calls []Call, then func(i int)) {
	for i := range calls {
		c := &calls[i]
		if c.Request == nil {
			m.pipeline(ctx, area, &lazyCalls{calls: calls}, then, fmt.Errorf("vppconn: call %d has no Request", i))
			return
		}
		if !c.Dump() && len(c.More) > 0 {
			m.pipeline(ctx, area, &lazyCalls{calls: calls}, then, fmt.Errorf("vppconn: call %d (%s) has More requests but is not a dump (it has a Reply)", i, c.Request.GetMessageName()))
			return
		}
	}
	m.pipeline(ctx, area, &lazyCalls{calls: calls}, then, nil)
}

// PipelinePrepared is PipelineThen with each call made when the pipeline
// comes to it: prepare(i) fills calls[i] (its Request and Reply, or a
// dump's Request and More) just before the request is encoded, on the
// caller's goroutine, so that VPP works on the first requests while the
// later ones are being made (a batch made up front leaves VPP idle until
// the whole batch is made: ~1 ms for 1,000 routes). A call that prepare
// leaves without a Request, or with an Err, is not sent: its result is
// what prepare left (no Request and no Err: nothing to do), and its then
// comes in order as the others'. A call with More and a Reply is not sent
// either: it fails. Every call is prepared exactly once, in order and
// before its then, also the calls after a break of the pipeline (their
// errors name their requests) and when nothing can be sent; prepare, like
// then, must not start a pipeline.
func (m *Manager) PipelinePrepared(ctx context.Context, area string, calls []Call, prepare, then func(i int)) {
	m.pipeline(ctx, area, &lazyCalls{calls: calls, prepare: prepare}, then, nil)
}

// lazyCalls are the calls of a pipeline, made as it needs them when
// prepare is set.
type lazyCalls struct {
	calls   []Call
	prepare func(i int)
	made    int    // the calls prepared: calls[:made]
	unsent  []bool // by call, those prepare left not to send (nil: none)
}

// at returns call i, prepared (with the calls before it).
func (l *lazyCalls) at(i int) *Call {
	for ; l.prepare != nil && l.made <= i; l.made++ {
		l.prepare(l.made)
		c := &l.calls[l.made]
		if c.Err == nil && c.Request != nil && !c.Dump() && len(c.More) > 0 {
			c.Err = fmt.Errorf("vppconn: call %d (%s) has More requests but is not a dump (it has a Reply)", l.made, c.Request.GetMessageName())
		}
		if c.Request == nil || c.Err != nil {
			if l.unsent == nil {
				l.unsent = make([]bool, len(l.calls))
			}
			l.unsent[l.made] = true
		}
	}
	return &l.calls[i]
}

// sends tells whether call i is prepared and to be sent. (Every call is
// prepared once the pipeline returned, unless a prepare or a then
// panicked: the metrics then leave the calls not made out.)
func (l *lazyCalls) sends(i int) bool {
	return (l.prepare == nil || i < l.made) && (l.unsent == nil || !l.unsent[i])
}

// fail fails the calls from from on, but those not to be sent, with the
// error errOf gives, calling then for each.
func (l *lazyCalls) fail(from int, errOf func(i int, c *Call) error, then func(i int)) {
	for i := from; i < len(l.calls); i++ {
		if c := l.at(i); l.sends(i) {
			c.Err = errOf(i, c)
		}
		if then != nil {
			then(i)
		}
	}
}

// pipeline runs PipelineThen and PipelinePrepared; a refusal fails every
// call with it, nothing sent.
func (m *Manager) pipeline(ctx context.Context, area string, lc *lazyCalls, then func(i int), refusal error) {
	calls := lc.calls
	if len(calls) == 0 {
		return
	}
	failAll := func(err error) { lc.fail(0, func(int, *Call) error { return err }, then) }
	if refusal != nil {
		failAll(refusal)
		return
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
		failAll(err)
		return
	}
	start := time.Now()
	defer func() {
		requests := 0
		for i := range calls {
			if lc.sends(i) {
				requests += 1 + len(calls[i].More)
			}
		}
		if requests == 0 {
			return
		}
		each := time.Since(start) / time.Duration(requests)
		// One metric lookup per run of calls of the same message and
		// result (a batch is mostly one message).
		var run runOfCalls
		for i := range calls {
			if !lc.sends(i) {
				continue
			}
			run.add(m.metrics, calls[i].Request.GetMessageName(), calls[i].Err != nil, each)
			for _, r := range calls[i].More {
				run.add(m.metrics, r.GetMessageName(), calls[i].Err != nil, each)
			}
		}
		run.flush(m.metrics, each)
	}()
	if err := ctx.Err(); err != nil {
		lc.fail(0, func(_ int, c *Call) error { return &PipelineError{Message: c.Request.GetMessageName(), Cause: err} }, then)
		return
	}
	call, release, err := s.bind(ctx)
	if err != nil {
		failAll(err)
		return
	}
	defer release()
	s.client.batch(call, s.conn, lc, PipelineWindow, m.opts.CallTimeout, then, true)
}

// runOfCalls counts consecutive calls of one message and result for the
// metrics.
type runOfCalls struct {
	msg    string
	failed bool
	n      int
}

func (r *runOfCalls) add(mt *metrics, msg string, failed bool, each time.Duration) {
	if r.n > 0 && (msg != r.msg || failed != r.failed) {
		r.flush(mt, each)
	}
	r.msg, r.failed = msg, failed
	r.n++
}

func (r *runOfCalls) flush(mt *metrics, each time.Duration) {
	if r.n > 0 {
		mt.observeDurations(r.msg, each, r.failed, r.n)
	}
	r.n = 0
}

// batch is Pipeline on the client's socket. It sends the calls in order,
// up to window requests in flight (a call's More count; a call larger than
// the window goes alone), encoded straight into one buffer and written in
// one go each time half the window is free (at the start, a write as soon
// as there are firstWrite requests and as many as VPP has waiting, so that
// VPP starts while the rest are made); each call has a context of its own
// (batchContexts), its dump requests and their control ping included.
// The reader hands the replies over in bulk; each is checked to carry the
// context of the call due (VPP answers in order) and, for a call with a
// Reply, to be of the Reply's type; a dump's details end at the control
// ping reply; then (when not nil) is called for each call as it completes,
// and for each call the batch fails. One batch runs at a time per
// connection: with wait, batch waits for its turn; without, it returns
// false at once, having done nothing, when another batch is running (a
// dump made from a PipelineThen callback goes through GoVPP instead).
// Replies of a batch that ended before they came (a timeout, a cancel)
// come before any of the next batch's, and are dropped.
func (c *sockClient) batch(ctx context.Context, conn *core.Connection, lc *lazyCalls, window int, timeout time.Duration, then func(int), wait bool) (ran bool) {
	calls := lc.calls
	sent := 0
	// broken fails every call from received on with the cause: those
	// before sent were sent (written, or being written when it failed).
	broken := func(received int, cause error) {
		cause = lost(ctx, cause)
		lc.fail(received, func(i int, c *Call) error {
			return &PipelineError{Message: c.Request.GetMessageName(), Sent: i < sent, Cause: cause}
		}, then)
	}
	if !wait {
		select {
		case c.runSlot <- struct{}{}:
		default:
			return false // a batch is running: the caller goes another way
		}
	} else {
		select {
		case c.runSlot <- struct{}{}:
		case <-ctx.Done():
			broken(0, context.Cause(ctx))
			return true
		}
	}
	defer func() { <-c.runSlot }()
	run := newBatchRun()
	c.run.Store(run)
	defer c.run.Store(nil)

	pingID, err := conn.GetMessageID(&memclnt.ControlPing{})
	if err != nil {
		broken(0, err)
		return true
	}
	pingReplyID, err := conn.GetMessageID(&memclnt.ControlPingReply{})
	if err != nil {
		broken(0, err)
		return true
	}
	contexts := make([]uint32, len(calls))
	details := map[detailOf]reflect.Type{} // the detail messages met
	cost := func(c *Call) int { return 1 + len(c.More) }
	out := c.out[:0]
	defer func() {
		if cap(out) <= maxKeptOut {
			c.out = out[:0]
		} else {
			c.out = nil
		}
	}()
	inFlight := 0 // requests of the calls sent and not received
	deadline := time.Now().Add(timeout)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var frames [][]byte
	next := 0        // the next of frames to look at
	matched := false // a reply of this batch came
	// frame returns the next reply handed over, waiting for it.
	frame := func() ([]byte, error) {
		for next == len(frames) {
			if frames, next = run.take(frames), 0; len(frames) > 0 {
				deadline = time.Now().Add(timeout)
				break
			}
			if err := c.lostErr(); err != nil {
				if frames = run.take(frames); len(frames) > 0 {
					break // what it read before it stopped
				}
				return nil, err
			}
			wait := time.Until(deadline)
			if wait <= 0 {
				return nil, errBatchTimeout
			}
			timer.Reset(wait)
			select {
			case <-run.wake:
			case <-timer.C:
			case <-c.readDone:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		next++
		return frames[next-1], nil
	}
	for received := range calls {
		if sent == received || inFlight <= window/2 {
			if err := ctx.Err(); err != nil {
				broken(received, context.Cause(ctx))
				return true
			}
			var err error
			unwritten := 0 // requests encoded into out, not written yet
			for ; sent < len(calls); sent++ {
				cl := lc.at(sent)
				if !lc.sends(sent) {
					continue // prepared not to be sent (PipelinePrepared)
				}
				if sent != received && inFlight+cost(cl) > window {
					break
				}
				c.nextCtx++
				if c.nextCtx >= batchContexts {
					c.nextCtx = 1
				}
				cx := c.nextCtx
				contexts[sent] = cx
				if out, err = c.encode(out, conn, cl.Request, cx); err != nil {
					break
				}
				if cl.Dump() {
					for _, req := range cl.More {
						if out, err = c.encode(out, conn, req, cx); err != nil {
							break
						}
					}
					if err == nil {
						out, err = c.encodeID(out, &memclnt.ControlPing{}, pingID, cx)
					}
				}
				if err != nil {
					break
				}
				inFlight += cost(cl)
				unwritten += cost(cl)
				// While VPP has fewer requests than this waiting to be
				// written, they go at once (16, 16, 32, 64... at the
				// start of a batch): VPP works on the first while the
				// next are made and encoded, instead of waiting for a
				// window of them.
				if unwritten >= firstWrite && unwritten >= inFlight-unwritten {
					if werr := c.write(out); werr != nil {
						sent++
						broken(received, werr)
						return true
					}
					out, unwritten = out[:0], 0
					deadline = time.Now().Add(timeout)
				}
			}
			if len(out) > 0 {
				if werr := c.write(out); werr != nil {
					broken(received, werr)
					return true
				}
				out = out[:0]
				deadline = time.Now().Add(timeout)
			}
			if err != nil {
				// The call at sent could not be encoded: it and the calls
				// after it are not sent; those before are, and are waited
				// for no longer (the batch is broken).
				broken(received, fmt.Errorf("%s: %w", calls[sent].Request.GetMessageName(), err))
				return true
			}
		}
		cl := &calls[received]
		if !lc.sends(received) {
			// Not sent (PipelinePrepared): its result is prepare's.
			if then != nil {
				then(received)
			}
			continue
		}
		for done := false; !done; {
			data, err := frame()
			if err == errBatchTimeout {
				broken(received, &CallTimeoutError{Message: cl.Request.GetMessageName(), Timeout: timeout})
				return true
			}
			if err != nil {
				broken(received, err)
				return true
			}
			id, cx := binary.BigEndian.Uint16(data[0:2]), binary.BigEndian.Uint32(data[2:6])
			if cx != contexts[received] {
				if !matched {
					c.lateReply(id) // of an earlier batch, which ended before it came
					continue
				}
				broken(received, fmt.Errorf("a reply with context %d where the reply to %s (context %d) was due: replies out of order", cx, cl.Request.GetMessageName(), contexts[received]))
				return true
			}
			matched = true
			if done, err = c.decodeReply(conn, cl, id, pingReplyID, data, details); err != nil {
				broken(received, err)
				return true
			}
		}
		inFlight -= cost(cl)
		if then != nil {
			then(received)
		}
	}
	return true
}

// detailOf is a message ID in the dump of a request type.
type detailOf struct {
	req reflect.Type
	id  uint16
}

// errBatchTimeout: no reply within the call timeout of the last one.
var errBatchTimeout = errors.New("batch reply timeout")

// decodeReply takes one reply of call cl (its context checked): the
// Reply, or one message of a dump; done when the call has all it gets.
func (c *sockClient) decodeReply(conn *core.Connection, cl *Call, id, pingReplyID uint16, data []byte, details map[detailOf]reflect.Type) (done bool, err error) {
	if !cl.Dump() {
		want, err := conn.GetMessageID(cl.Reply)
		if err != nil {
			return false, err
		}
		if id != want {
			return false, fmt.Errorf("reply %s does not answer %s: replies out of order", c.messageName(conn, cl.Request, id), cl.Request.GetMessageName())
		}
		if err := codec.DefaultCodec.DecodeMsg(data, cl.Reply); err != nil {
			return false, fmt.Errorf("reply %s: %w", cl.Reply.GetMessageName(), err)
		}
		cl.Err = retvalError(cl.Reply)
		return true, nil
	}
	if id == pingReplyID {
		return true, nil
	}
	// One lookup per message type of a batch, not per detail (by the
	// request's type too: GoVPP looks an ID up in the request's binapi).
	key := detailOf{reflect.TypeOf(cl.Request), id}
	typ, ok := details[key]
	if !ok {
		proto, err := conn.LookupByID(conn.GetMessagePath(cl.Request), id)
		if err != nil || proto.GetMessageType() != api.ReplyMessage || !strings.HasSuffix(proto.GetMessageName(), "_details") {
			return false, fmt.Errorf("message %s in the dump of %s: replies out of order", c.messageName(conn, cl.Request, id), cl.Request.GetMessageName())
		}
		typ = reflect.TypeOf(proto).Elem()
		details[key] = typ
	}
	msg := reflect.New(typ).Interface().(api.Message)
	if err := codec.DefaultCodec.DecodeMsg(data, msg); err != nil {
		return false, fmt.Errorf("%s in the dump of %s: %w", msg.GetMessageName(), cl.Request.GetMessageName(), err)
	}
	cl.Details = append(cl.Details, msg)
	return false, nil
}

// messageName names a message ID for an error: its name, or the ID.
func (c *sockClient) messageName(conn *core.Connection, req api.Message, id uint16) string {
	if m, err := conn.LookupByID(conn.GetMessagePath(req), id); err == nil {
		return m.GetMessageName()
	}
	return fmt.Sprintf("message ID %d", id)
}

// encode appends the request msg, framed, with the client's index and
// context cx, to out.
func (c *sockClient) encode(out []byte, conn *core.Connection, msg api.Message, cx uint32) ([]byte, error) {
	id, err := conn.GetMessageID(msg)
	if err != nil {
		return out, err
	}
	if msg.GetMessageType() != api.RequestMessage {
		return out, fmt.Errorf("a %s message is not a request", msg.GetMessageName())
	}
	if _, ok := msg.(codec.Marshaler); !ok {
		data, err := codec.DefaultCodec.EncodeMsg(msg, id)
		if err != nil {
			return out, err
		}
		binary.BigEndian.PutUint32(data[2:6], c.index)
		binary.BigEndian.PutUint32(data[6:10], cx)
		return frame(out, data), nil
	}
	return c.encodeID(out, msg.(codec.Marshaler), id, cx)
}

// encodeID appends a request of a generated message (its ID known) in
// place: frame header, ID, client index, context, fields.
func (c *sockClient) encodeID(out []byte, m codec.Marshaler, id uint16, cx uint32) ([]byte, error) {
	const reqHeader = 10
	size := m.Size()
	start := len(out)
	out = slices.Grow(out, frameHeaderSize+reqHeader+size)[:start+frameHeaderSize+reqHeader+size]
	h := out[start:]
	// Zeroed: a generated Marshal leaves alone what it does not write (the
	// rest of a fixed-size string after its value), expecting a new buffer.
	clear(h)
	binary.BigEndian.PutUint32(h[8:12], uint32(reqHeader+size))
	body := h[frameHeaderSize:]
	binary.BigEndian.PutUint16(body[0:2], id)
	binary.BigEndian.PutUint32(body[2:6], c.index)
	binary.BigEndian.PutUint32(body[6:10], cx)
	if _, err := m.Marshal(body[reqHeader:]); err != nil {
		return out[:start], err
	}
	return out, nil
}

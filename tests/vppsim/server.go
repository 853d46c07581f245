package vppsim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"slices"
	"sync"
	"time"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/codec"
)

// Framing of the VPP API socket (vl_socket / msgbuf_t): every message is
// preceded by a 16-byte header: 8 bytes unused (a queue pointer in VPP),
// the big-endian length of the message data, and 4 bytes unused.
const (
	headerLen  = 16
	maxMsgLen  = 1 << 22
	outQueue   = 8192 // frames queued for one client before events are dropped
	bufferSize = 64 << 10
)

// client is one connection on the API socket.
type client struct {
	s     *Sim
	conn  *net.UnixConn
	index uint32
	out   chan []byte
	done  chan struct{}
	once  sync.Once
}

func (cl *client) shutdown() {
	cl.once.Do(func() {
		close(cl.done)
		_ = cl.conn.Close()
	})
}

// acceptLoop serves one listener until it is closed.
func (s *Sim) acceptLoop(ln *net.UnixListener) {
	defer s.wg.Done()
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("vppsim: accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		if s.ln != ln { // stopped meanwhile
			s.mu.Unlock()
			_ = conn.Close()
			return
		}
		s.nextClient++
		cl := &client{
			s:     s,
			conn:  conn,
			index: s.nextClient,
			out:   make(chan []byte, outQueue),
			done:  make(chan struct{}),
		}
		s.clients[cl] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		s.log.Debug("vppsim: client connected", "client", cl.index)
		go cl.readLoop()
		go cl.writeLoop()
	}
}

func (cl *client) writeLoop() {
	defer cl.s.wg.Done()
	w := bufio.NewWriterSize(cl.conn, bufferSize)
	for {
		select {
		case <-cl.done:
			return
		case f := <-cl.out:
			_, err := w.Write(f)
			for err == nil && len(cl.out) > 0 {
				_, err = w.Write(<-cl.out)
			}
			if err == nil {
				err = w.Flush()
			}
			if err != nil {
				cl.s.log.Debug("vppsim: write failed", "client", cl.index, "err", err)
				cl.shutdown()
				return
			}
		}
	}
}

func (cl *client) readLoop() {
	s := cl.s
	defer s.wg.Done()
	defer func() {
		cl.shutdown()
		s.mu.Lock()
		delete(s.clients, cl)
		delete(s.st.ifEvents, cl)
		s.mu.Unlock()
		s.log.Debug("vppsim: client gone", "client", cl.index)
	}()
	r := bufio.NewReaderSize(cl.conn, bufferSize)
	hdr := make([]byte, headerLen)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[8:12])
		if n < 2 || n > maxMsgLen {
			s.log.Warn("vppsim: bad message length, dropping client", "client", cl.index, "len", n)
			return
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil {
			return
		}
		if !cl.handle(data) {
			return
		}
	}
}

// outMsg is a message to deliver to a client after the state lock is released.
type outMsg struct {
	to    *client
	frame []byte
}

// handle processes one request; false ends the connection.
func (cl *client) handle(data []byte) bool {
	s := cl.s
	id := binary.BigEndian.Uint16(data[0:2])
	def := s.table.byID[id]
	if def == nil {
		s.log.Warn("vppsim: message id not served, ignored", "client", cl.index, "id", id)
		return true
	}
	req := reflect.New(reflect.TypeOf(def.req).Elem()).Interface().(api.Message)
	minLen := 6 // message id + context
	if req.GetMessageType() == api.RequestMessage {
		minLen = 10 // message id + client index + context
	}
	if len(data) < minLen {
		s.log.Warn("vppsim: message too short, ignored", "msg", def.name, "len", len(data))
		return true
	}
	if err := codec.DefaultCodec.DecodeMsg(data, req); err != nil {
		s.log.Warn("vppsim: cannot decode request, ignored", "msg", def.name, "err", err)
		return true
	}
	ctx, _ := codec.DefaultCodec.DecodeMsgContext(data, req.GetMessageType())

	s.mu.Lock()
	s.calls = append(s.calls, def.name)
	delay := s.delays[def.name]
	holds := s.holdsOf(def.name)
	if len(holds) > 0 {
		s.held[def.name]++
	}
	s.mu.Unlock()
	s.log.Debug("vppsim: request", "client", cl.index, "msg", def.name, "context", ctx)

	if len(holds) > 0 && !cl.waitReleased(def.name, holds) {
		return false
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-cl.done:
			t.Stop()
			return false
		}
	}

	frames, events := s.process(cl, def, req, ctx)
	for _, f := range frames {
		select {
		case cl.out <- f:
		case <-cl.done:
			return false
		}
	}
	for _, e := range events {
		select {
		case e.to.out <- e.frame:
		default:
			s.log.Warn("vppsim: client queue full, event dropped", "client", e.to.index)
		}
	}
	return true
}

// waitReleased waits until the holds are released (true) or the
// connection ends (false), and then no longer counts the request as held.
func (cl *client) waitReleased(msgName string, holds []*hold) bool {
	defer func() {
		cl.s.mu.Lock()
		if cl.s.held[msgName]--; cl.s.held[msgName] == 0 {
			delete(cl.s.held, msgName)
		}
		cl.s.mu.Unlock()
	}()
	for _, h := range holds {
		select {
		case <-h.released:
		case <-cl.done:
			return false
		}
	}
	return true
}

// process runs the handler (or the failure FailNext asked for) under the
// state lock and encodes the replies and the events it causes. A handler
// panic (a simulator bug) is logged and answered with UNSPECIFIED.
func (s *Sim) process(cl *client, def *msgDef, req api.Message, ctx uint32) (frames [][]byte, events []outMsg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var replies []api.Message
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("vppsim: handler panic", "msg", def.name, "panic", r)
			frames, events = nil, nil
			if def.reply != nil {
				if f := s.frame(failureReply(def.reply, errUnspecified), ctx, cl.index); f != nil {
					frames = [][]byte{f}
				}
			}
		}
	}()
	if rv, failed := s.takeFailure(def.name); failed {
		if def.reply != nil {
			replies = []api.Message{failureReply(def.reply, rv)}
		}
	} else {
		var before map[uint32]interface_types.IfStatusFlags
		if len(s.st.ifEvents) > 0 {
			before = s.st.eventFlags()
		}
		replies = def.handle(&call{s: s, st: s.st, cl: cl, ctx: ctx}, req)
		if before != nil {
			events = s.interfaceEvents(before)
		}
	}
	for _, m := range replies {
		if f := s.frame(m, ctx, cl.index); f != nil {
			frames = append(frames, f)
		}
	}
	return frames, events
}

// interfaceEvents builds the sw_interface_event messages VPP 25.10 sends
// the subscribers for what a request changed (before: eventFlags before
// it), one per interface: created, deleted (Deleted, flags 0), or whose
// admin state or (not for a sub-interface) link state changed. As on VPP,
// whose flags are the up events of the batch rather than the interface's
// state, Flags holds the states that went up: ADMIN_UP when the admin
// state went up, LINK_UP when the link did (a created interface: those
// it has); a change to down sets none (a carrier loss of an admin-up
// interface is flags 0). Called with s.mu held.
func (s *Sim) interfaceEvents(before map[uint32]interface_types.IfStatusFlags) []outMsg {
	st := s.st
	after := st.eventFlags()
	var evs []*interfaces.SwInterfaceEvent
	for _, i := range st.sortedIfs() {
		now := after[i.SwIfIndex]
		old, existed := before[i.SwIfIndex]
		if !existed || old != now {
			evs = append(evs, &interfaces.SwInterfaceEvent{
				SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex), Flags: now &^ old,
			})
		}
	}
	var gone []uint32
	for idx := range before {
		if _, ok := after[idx]; !ok {
			gone = append(gone, idx)
		}
	}
	slices.Sort(gone)
	for _, idx := range gone {
		evs = append(evs, &interfaces.SwInterfaceEvent{SwIfIndex: interface_types.InterfaceIndex(idx), Deleted: true})
	}
	var out []outMsg
	for cl, pid := range st.ifEvents {
		for _, e := range evs {
			ev := *e
			ev.PID = pid
			if f := s.frame(&ev, 0, cl.index); f != nil {
				out = append(out, outMsg{to: cl, frame: f})
			}
		}
	}
	return out
}

// frame encodes a message with its id from the message table and the socket
// header. Replies carry the request's context; requests-shaped replies (like
// sockclnt_create_reply) carry client index and context; events carry the
// client index.
func (s *Sim) frame(m api.Message, ctx, clientIndex uint32) []byte {
	id, ok := s.table.ids[m.GetMessageName()]
	if !ok {
		s.log.Warn("vppsim: reply not in the message table, not sent", "msg", m.GetMessageName())
		return nil
	}
	data, err := codec.DefaultCodec.EncodeMsg(m, id)
	if err != nil {
		s.log.Error("vppsim: encode failed", "msg", m.GetMessageName(), "err", err)
		return nil
	}
	switch m.GetMessageType() {
	case api.RequestMessage:
		binary.BigEndian.PutUint32(data[2:6], clientIndex)
		binary.BigEndian.PutUint32(data[6:10], ctx)
	case api.ReplyMessage:
		binary.BigEndian.PutUint32(data[2:6], ctx)
	case api.EventMessage:
		binary.BigEndian.PutUint32(data[2:6], clientIndex)
	}
	f := make([]byte, headerLen+len(data))
	binary.BigEndian.PutUint32(f[8:12], uint32(len(data)))
	copy(f[headerLen:], data)
	return f
}

// failureReply makes an empty reply with Retval (or Response, for the
// memclnt messages) set to rv.
func failureReply(proto api.Message, rv int32) api.Message {
	m := reflect.New(reflect.TypeOf(proto).Elem())
	for _, name := range []string{"Retval", "Response"} {
		if f := m.Elem().FieldByName(name); f.IsValid() && f.Kind() == reflect.Int32 {
			f.SetInt(int64(rv))
			break
		}
	}
	return m.Interface().(api.Message)
}

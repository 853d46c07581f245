package vppconn

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
)

// The VPP binary API socket, as VPP 25.10's socket server (vlibmemory
// socket_api.c) speaks it: each message is a 16-byte frame header (8 bytes
// unused, the message's length as a big-endian uint32, 4 bytes unused)
// followed by the message. A request starts with its message ID (uint16),
// the client's index (uint32) and the context (uint32), all big-endian; a
// reply with the message ID and the context of its request. The first
// message, sockclnt_create, has a fixed ID; its reply carries the client's
// index and the table of message IDs (name_crc -> ID).
const (
	frameHeaderSize = 16
	// sockclntCreateID is the ID of sockclnt_create in every VPP since
	// 19.08: the one message sent before the table is known.
	sockclntCreateID = 15
	// maxFrame bounds a message read: the largest VPP sends is the message
	// table of the sockclnt_create reply (~100 KB in 25.10).
	maxFrame = 64 << 20
	// handshakeTimeout bounds the sockclnt_create exchange.
	handshakeTimeout = 5 * time.Second
	// readBuffer is the reader's buffer: replies of a batch arrive together.
	readBuffer = 64 << 10
)

// batchContexts are the contexts of the batches (sockClient.batch): GoVPP's
// core packs a channel ID of 1 to 0x7fff into the top 15 bits of every
// context it sends (core.packRequestContext; its ID pool starts at 1), so
// contexts below 1<<17 (channel 0) are never its own. 0 itself is not used:
// GoVPP takes a reply of context 0 for a notification. (An event has no
// context: its bytes there are a client index, and the reader tells it by
// its message ID, see sockClient.replies.)
const batchContexts = 1 << 17

// sockClient is one connection to VPP's binary API socket. GoVPP's core
// speaks through it (it is an adapter.VppAPI, in place of GoVPP's socket
// client), and Pipeline sends its requests through it directly (batch): many
// encoded requests in one write, and their replies handed over from the
// reader in bulk, without GoVPP's per-message channels, timers and write
// calls. Both share the socket: VPP answers a client's requests in order,
// whoever sent them.
//
// It connects at most once (see session.go for why a connection is not
// reconnected in place): a second Connect fails with errNoReconnect.
type sockClient struct {
	path string
	name string
	cb   adapter.MsgCallback

	mu        sync.Mutex
	connected bool // Connect succeeded once
	conn      *net.UnixConn
	index     uint32            // the client's index, in every request
	table     map[string]uint16 // name_crc -> message ID
	replies   *idSet            // the IDs of the replies and details GoVPP knows
	types     map[uint16]string // their Go types, for the log of a late one
	readDone  chan struct{}     // closed when the reader stops
	readErr   error             // why, set before readDone closes

	wmu sync.Mutex // one write at a time

	// run is the batch whose replies the reader hands over; runSlot lets
	// one batch run at a time.
	run     atomic.Pointer[batchRun]
	runSlot chan struct{}
	nextCtx uint32 // the last context a batch used; under runSlot
	// out is the buffer a batch encodes its requests in, kept for the
	// next batch (at most maxKeptOut bytes); under runSlot.
	out []byte
}

// maxKeptOut is the largest request buffer a batch leaves to the next one:
// a window of the largest usual requests (a route with one path is ~240
// bytes on the wire), so that a bulk change does not grow a new one for
// each batch, nor keep one that a batch of huge requests grew.
const maxKeptOut = 1 << 20

var _ adapter.VppAPI = (*sockClient)(nil)

// errNoReconnect is sockClient's answer to GoVPP's reconnect.
var errNoReconnect = errors.New("vppconn: a connection is not reconnected; the Manager makes a new one")

func newSockClient(path string) *sockClient {
	return &sockClient{path: path, name: "netagent", runSlot: make(chan struct{}, 1)}
}

// SetMsgCallback sets the function the reader hands GoVPP's messages to.
// GoVPP's core sets it before Connect.
func (c *sockClient) SetMsgCallback(cb adapter.MsgCallback) { c.cb = cb }

// WaitReady reports whether the socket is there; the Manager does the
// waiting (it connects again until it succeeds).
func (c *sockClient) WaitReady() error {
	_, err := os.Stat(c.path)
	return err
}

// Connect dials the socket and registers the client (sockclnt_create).
func (c *sockClient) Connect() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.connected {
		return errNoReconnect
	}
	d := net.Dialer{Timeout: handshakeTimeout}
	nc, err := d.Dial("unix", c.path)
	if err != nil {
		return fmt.Errorf("VPP API socket %s: %w", c.path, err)
	}
	conn := nc.(*net.UnixConn)
	r := bufio.NewReaderSize(conn, readBuffer)
	index, table, err := handshake(conn, r, c.name)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("VPP API socket %s: %w", c.path, err)
	}
	c.replies, c.types = replyIDs(table)
	c.conn, c.index, c.table, c.connected = conn, index, table, true
	c.readDone = make(chan struct{})
	go c.reader(r)
	return nil
}

// handshake sends sockclnt_create and reads its reply: the client's index
// and the message table.
func handshake(conn *net.UnixConn, r *bufio.Reader, name string) (uint32, map[string]uint16, error) {
	if err := conn.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		return 0, nil, err
	}
	msg, err := codec.DefaultCodec.EncodeMsg(&memclnt.SockclntCreate{Name: name}, sockclntCreateID)
	if err != nil {
		return 0, nil, err
	}
	binary.BigEndian.PutUint32(msg[6:10], 1) // a context of its own
	if _, err := conn.Write(frame(nil, msg)); err != nil {
		return 0, nil, fmt.Errorf("sockclnt_create: %w", err)
	}
	data, err := readFrame(r)
	if err != nil {
		return 0, nil, fmt.Errorf("sockclnt_create reply: %w", err)
	}
	reply := new(memclnt.SockclntCreateReply)
	if err := codec.DefaultCodec.DecodeMsg(data, reply); err != nil {
		return 0, nil, fmt.Errorf("sockclnt_create reply: %w", err)
	}
	if reply.Response != 0 {
		return 0, nil, fmt.Errorf("sockclnt_create: VPP refused the client (response %d)", reply.Response)
	}
	table := make(map[string]uint16, len(reply.MessageTable))
	for _, e := range reply.MessageTable {
		n, _, _ := strings.Cut(e.Name, "\x00")
		table[strings.TrimSuffix(n, "\x13")] = e.Index
	}
	return reply.Index, table, conn.SetDeadline(time.Time{})
}

// idSet is a set of message IDs.
type idSet [1 << 16 / 64]uint64

func (s *idSet) add(id uint16)      { s[id/64] |= 1 << (id % 64) }
func (s *idSet) has(id uint16) bool { return s[id/64]&(1<<(id%64)) != 0 }

// replyIDs are the IDs, in a VPP's table, of the reply messages (replies
// and details: they carry their request's context) GoVPP has registered,
// and their Go types.
func replyIDs(table map[string]uint16) (*idSet, map[uint16]string) {
	s, types := new(idSet), map[uint16]string{}
	for _, msgs := range api.GetRegisteredMessages() {
		for _, m := range msgs {
			if m.GetMessageType() != api.ReplyMessage {
				continue
			}
			if id, ok := table[m.GetMessageName()+"_"+m.GetCrcString()]; ok {
				s.add(id)
				types[id] = fmt.Sprintf("%T", m)
			}
		}
	}
	return s, types
}

// lateReply logs a reply of a batch that had ended (timed out or
// cancelled) at debug level, as the Manager logs GoVPP's (droppedReply).
func (c *sockClient) lateReply(id uint16) {
	if l := govppLog.Load(); l != nil {
		l.Debug("late VPP reply dropped: its call had ended (timed out or cancelled)", "component", "govpp", "reply", c.types[id])
	}
}

// frame appends msg with its frame header to buf.
func frame(buf, msg []byte) []byte {
	var h [frameHeaderSize]byte
	binary.BigEndian.PutUint32(h[8:12], uint32(len(msg)))
	return append(append(buf, h[:]...), msg...)
}

// readFrame reads one message.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var h [frameHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[8:12])
	if n > maxFrame {
		return nil, fmt.Errorf("a message of %d bytes: the stream is not VPP's binary API", n)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Disconnect unregisters the client and closes the socket; the reader
// stops.
func (c *sockClient) Disconnect() error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return nil
	}
	if id, ok := c.table[(&memclnt.SockclntDelete{}).GetMessageName()+"_"+(&memclnt.SockclntDelete{}).GetCrcString()]; ok {
		if msg, err := codec.DefaultCodec.EncodeMsg(&memclnt.SockclntDelete{Index: c.index}, id); err == nil {
			// Best effort: VPP also drops the client when the socket closes.
			_ = c.SendMsg(2, msg)
		}
	}
	err := conn.Close()
	<-c.readDone
	return err
}

// GetMsgID returns the ID of a message in the connected VPP.
func (c *sockClient) GetMsgID(name, crc string) (uint16, error) {
	if id, ok := c.table[name+"_"+crc]; ok {
		return id, nil
	}
	return 0, &adapter.UnknownMsgError{MsgName: name, MsgCrc: crc}
}

// SendMsg sends one encoded request (GoVPP's core) with its context.
func (c *sockClient) SendMsg(context uint32, data []byte) error {
	if len(data) < 10 {
		return fmt.Errorf("vppconn: a request of %d bytes (at least 10: ID, client index, context)", len(data))
	}
	binary.BigEndian.PutUint32(data[2:6], c.index)
	binary.BigEndian.PutUint32(data[6:10], context)
	var h [frameHeaderSize]byte
	binary.BigEndian.PutUint32(h[8:12], uint32(len(data)))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	bufs := net.Buffers{h[:], data}
	_, err := bufs.WriteTo(c.conn)
	return err
}

// write sends framed requests (batch) in one write.
func (c *sockClient) write(frames []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write(frames)
	return err
}

// reader reads VPP's messages until the socket fails or closes: a batch's
// (by context) to the batch, the rest to GoVPP's core.
func (c *sockClient) reader(r *bufio.Reader) {
	var err error
	defer func() {
		c.readErr = err
		close(c.readDone)
		if run := c.run.Load(); run != nil {
			run.signal()
		}
	}()
	for {
		var data []byte
		data, err = readFrame(r)
		if err != nil {
			return
		}
		if len(data) < 6 {
			continue // no ID and context: not a message anyone waits for
		}
		// An event has no context: its bytes 2-6 are a client index.
		id := binary.BigEndian.Uint16(data[0:2])
		if ctx := binary.BigEndian.Uint32(data[2:6]); ctx != 0 && ctx < batchContexts && c.replies.has(id) {
			if run := c.run.Load(); run != nil {
				run.put(data)
			} else {
				c.lateReply(id) // of a batch that ended: nobody waits for it
			}
			continue
		}
		if c.cb != nil {
			c.cb(id, data)
		}
	}
}

// lostErr is the reader's error once it stopped, nil while it reads.
func (c *sockClient) lostErr() error {
	select {
	case <-c.readDone:
		err := c.readErr
		if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || err == nil {
			return fmt.Errorf("%w (VPP closed the API socket)", ErrNotConnected)
		}
		return fmt.Errorf("%w (connection lost: %v)", ErrNotConnected, err)
	default:
		return nil
	}
}

// batchRun collects the replies of one batch as the reader hands them
// over.
type batchRun struct {
	mu     sync.Mutex
	frames [][]byte
	wake   chan struct{} // a token when frames were added
}

func newBatchRun() *batchRun { return &batchRun{wake: make(chan struct{}, 1)} }

func (r *batchRun) put(data []byte) {
	r.mu.Lock()
	r.frames = append(r.frames, data)
	r.mu.Unlock()
	r.signal()
}

func (r *batchRun) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// take moves the frames handed over so far into buf (emptied first).
func (r *batchRun) take(buf [][]byte) [][]byte {
	r.mu.Lock()
	buf, r.frames = r.frames, buf[:0]
	r.mu.Unlock()
	return buf
}

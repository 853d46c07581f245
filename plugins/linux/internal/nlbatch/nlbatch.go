package nlbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
)

// Window is the number of requests a Conn keeps in flight: the answers of
// a full window (a few hundred bytes of socket memory each, errors with
// the kernel's message a little more) fit in the receive buffer the Conn
// asks for (rcvBuf), so none is dropped.
const Window = 512

// rcvBuf is the receive buffer a Conn asks for (SO_RCVBUFFORCE, else
// SO_RCVBUF within net.core.rmem_max).
const rcvBuf = 4 << 20

// maxSend bounds the bytes of one sendmsg (many requests each).
const maxSend = 32 << 10

// recvTimeout bounds the wait for an answer: the kernel acks every
// request with NLM_F_ACK, and the last of each send has it, so a longer
// wait means a broken socket.
const recvTimeout = 30 * time.Second

// ErrNoReply is the error of a request whose result never came (the
// socket failed before): its effect in the kernel is unknown.
var ErrNoReply = errors.New("no reply from the kernel (the netlink socket failed): the request's effect is unknown")

// Conn is a NETLINK_ROUTE socket opened in one network namespace. Exec
// sends requests on it; a Conn is used by one Exec at a time.
type Conn struct {
	mu  sync.Mutex
	fd  int
	seq uint32
	buf []byte
	// answers counts the kernel's answers (acks and errors) read.
	answers uint64
}

// Open opens a NETLINK_ROUTE socket; enter runs a function inside the
// namespace the socket belongs to (nsplugin.Manager.Do, or a plain call
// for the current one). The socket asks for capped acks (the request is
// not echoed back) and extended acks (the kernel's error message).
func Open(enter func(func() error) error) (*Conn, error) {
	fd := -1
	err := enter(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("opening a netlink socket: %w", err)
	}
	c := &Conn{fd: fd, buf: make([]byte, 1<<16)}
	if err := c.setup(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return c, nil
}

func (c *Conn) setup() error {
	if err := unix.Bind(c.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("binding the netlink socket: %w", err)
	}
	if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf); err != nil {
		if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf); err != nil {
			return fmt.Errorf("netlink socket receive buffer: %w", err)
		}
	}
	// Both are hints: without them acks are longer and errors terser.
	_ = unix.SetsockoptInt(c.fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	_ = unix.SetsockoptInt(c.fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	tv := unix.NsecToTimeval(recvTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("netlink socket timeout: %w", err)
	}
	return nil
}

// Close closes the socket.
func (c *Conn) Close() error { return unix.Close(c.fd) }

// Reply is called with each message the kernel sends for request i
// before its ack (e.g. the link of an RTM_GETLINK).
type Reply func(i int, msg syscall.NetlinkMessage)

// Exec sends the requests in order (sequence numbers its own), at most
// Window without their result, and returns each one's result: nil when
// the kernel carried it out, else its error (a syscall.Errno, wrapped with
// the kernel's message when it gives one: errors.Is works). A failed
// request does not stop the others: the kernel goes on with the next one.
// The error returned with the results is that of the socket (nil when
// every request got its result); the requests it left without one have
// ErrNoReply (wrapping it), and the Conn must not be used again.
//
// The kernel carries out the requests of one socket in their order, within
// the send that carries them, and answers a failed request whether it asks
// for an ack or not; so only the last request of each send asks for one
// (NLM_F_ACK), and its ack says that every request before it without an
// error succeeded: one ack, one read, per send instead of per request
// (~1 µs of the kernel's and ~1 µs of the agent's time a request). With a
// reply function every request asks for its ack. Not for dumps
// (NLM_F_DUMP): the kernel never answers the request that starts one with
// an ack (netlink_dump_start's -EINTR), so its result would be taken from
// the next ack.
func (c *Conn) Exec(reqs []*nl.NetlinkRequest, reply Reply) ([]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	results := make([]error, len(reqs))
	base := c.seq + 1
	c.seq += uint32(len(reqs))
	// The requests before done have their result; those from done to sent
	// are in the kernel's hands.
	sent, done := 0, 0
	var out []byte
	fail := func(err error) ([]error, error) {
		for i := done; i < len(reqs); i++ {
			results[i] = fmt.Errorf("%w: %v", ErrNoReply, err)
		}
		return results, err
	}
	for done < len(reqs) {
		if sent < len(reqs) && sent-done < Window {
			out = out[:0]
			for sent < len(reqs) && sent-done < Window && len(out) < maxSend {
				r := reqs[sent]
				r.Flags = r.Flags&^unix.NLM_F_ACK | unix.NLM_F_REQUEST
				r.Seq = base + uint32(sent)
				r.Pid = 0
				start := len(out)
				out = appendRequest(out, r)
				sent++
				if reply != nil || sent == len(reqs) || sent-done == Window || len(out) >= maxSend {
					// The last of the send (or any, with a reply
					// function) asks for its ack.
					r.Flags |= unix.NLM_F_ACK
					binary.NativeEndian.PutUint16(out[start+6:], r.Flags)
				}
			}
			if err := unix.Sendto(c.fd, out, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
				return fail(fmt.Errorf("sending to the kernel: %w", err))
			}
			if sent-done < Window && sent < len(reqs) {
				continue
			}
		}
		n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fail(fmt.Errorf("reading the kernel's replies: %w", err))
		}
		msgs, err := syscall.ParseNetlinkMessage(c.buf[:n])
		if err != nil {
			return fail(fmt.Errorf("parsing the kernel's replies: %w", err))
		}
		for _, m := range msgs {
			i := int(m.Header.Seq - base)
			if m.Header.Seq-base >= uint32(sent) || i < done {
				continue // not ours (a reply of an earlier Exec cannot come: each waits for all its results)
			}
			if m.Header.Type != unix.NLMSG_ERROR {
				if reply != nil {
					reply(i, m)
				}
				continue
			}
			// The requests between done and i succeeded: the kernel
			// would have answered a failure before this.
			c.answers++
			results[i] = ackError(m)
			done = i + 1
		}
	}
	return results, nil
}

// ackError returns the error an NLMSG_ERROR message carries (nil: an ack).
func ackError(m syscall.NetlinkMessage) error {
	if len(m.Data) < 4 {
		return fmt.Errorf("short ack from the kernel (%d bytes)", len(m.Data))
	}
	errno := int32(binary.NativeEndian.Uint32(m.Data[:4]))
	if errno == 0 {
		return nil
	}
	err := error(syscall.Errno(-errno))
	rest := m.Data[4:]
	if m.Header.Flags&unix.NLM_F_ACK_TLVS == 0 || len(rest) < unix.SizeofNlMsghdr {
		return err
	}
	// The echoed request: its header alone when capped, else all of it.
	skip := unix.SizeofNlMsghdr
	if m.Header.Flags&unix.NLM_F_CAPPED == 0 {
		skip = nlmAlign(int(binary.NativeEndian.Uint32(rest[:4])))
	}
	if skip > len(rest) {
		return err
	}
	rest = rest[skip:]
	for len(rest) >= unix.SizeofRtAttr {
		l := int(binary.NativeEndian.Uint16(rest[:2]))
		typ := binary.NativeEndian.Uint16(rest[2:4])
		if l < unix.SizeofRtAttr || l > len(rest) {
			break
		}
		if typ == nl.NLMSGERR_ATTR_MSG {
			if msg := unix.ByteSliceToString(rest[unix.SizeofRtAttr:l]); msg != "" {
				err = fmt.Errorf("%w (%s)", err, msg)
			}
		}
		rest = rest[min(nlmAlign(l), len(rest)):]
	}
	return err
}

func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// Namespaces is what a Pool needs of nsplugin.Manager.
type Namespaces interface {
	// Handle returns the namespace's netlink handle; a namespace deleted
	// and made again gets a new one, so a Pool reopens its socket.
	Handle(r nsplugin.Ref, create bool) (*netlink.Handle, error)
	// Do runs f inside the namespace.
	Do(r nsplugin.Ref, f func() error) error
}

// Pool keeps one Conn per namespace. Safe for concurrent use (requests of
// one namespace are sent one Exec at a time).
type Pool struct {
	ns    Namespaces
	mu    sync.Mutex
	conns map[nsplugin.Ref]pooled
}

type pooled struct {
	conn *Conn
	// of is the namespace's handle when the socket was opened: another
	// handle means another namespace under the same reference.
	of *netlink.Handle
}

// NewPool returns a pool opening sockets in the namespaces of ns.
func NewPool(ns Namespaces) *Pool {
	return &Pool{ns: ns, conns: map[nsplugin.Ref]pooled{}}
}

// Conn returns the socket of a namespace that must exist (an error
// wrapping os.ErrNotExist when it does not, as nsplugin.Manager.Handle).
func (p *Pool) Conn(ref nsplugin.Ref) (*Conn, error) {
	h, err := p.ns.Handle(ref, false)
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, ok := p.conns[ref]
	if ok && (err != nil || cur.of != h) {
		cur.conn.Close()
		delete(p.conns, ref)
		ok = false
	}
	if err != nil {
		return nil, err
	}
	if ok {
		return cur.conn, nil
	}
	c, err := Open(func(f func() error) error { return p.ns.Do(ref, f) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	p.conns[ref] = pooled{conn: c, of: h}
	return c, nil
}

// drop closes the socket of ref if it is c (after a socket error).
func (p *Pool) drop(ref nsplugin.Ref, c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.conns[ref]; ok && cur.conn == c {
		c.Close()
		delete(p.conns, ref)
	}
}

// Close closes every socket.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ref, c := range p.conns {
		c.conn.Close()
		delete(p.conns, ref)
	}
}

// Request is one request of Run: the namespace it goes to and the
// message, and, after Run, its result.
type Request struct {
	NS  nsplugin.Ref
	Msg *nl.NetlinkRequest
	// Reply, when set, gets the messages the kernel sends for the request
	// before its ack.
	Reply func(msg syscall.NetlinkMessage)
	// Err is the result: nil when the kernel acked the request.
	Err error
}

// Run executes the requests: those of each namespace in their order, on
// its socket, pipelined (Conn.Exec); namespaces one after the other. A
// namespace that cannot be opened gives its requests that error (wrapping
// os.ErrNotExist when it does not exist).
func (p *Pool) Run(reqs []*Request) {
	var order []nsplugin.Ref
	byNS := map[nsplugin.Ref][]*Request{}
	for _, r := range reqs {
		if _, ok := byNS[r.NS]; !ok {
			order = append(order, r.NS)
		}
		byNS[r.NS] = append(byNS[r.NS], r)
	}
	for _, ref := range order {
		group := byNS[ref]
		c, err := p.Conn(ref)
		if err != nil {
			for _, r := range group {
				r.Err = err
			}
			continue
		}
		msgs := make([]*nl.NetlinkRequest, len(group))
		var reply Reply // only when a request wants its replies (each is then acked)
		for i, r := range group {
			msgs[i] = r.Msg
			if r.Reply != nil && reply == nil {
				reply = func(i int, m syscall.NetlinkMessage) {
					if f := group[i].Reply; f != nil {
						f(m)
					}
				}
			}
		}
		results, err := c.Exec(msgs, reply)
		if err != nil {
			p.drop(ref, c)
		}
		for i, r := range group {
			r.Err = results[i]
		}
	}
}

// appendRequest appends a request as nl.NetlinkRequest.Serialize makes it
// (the header with its length set, the Data serialized, the RawData), into
// out instead of a copy of its own.
func appendRequest(out []byte, r *nl.NetlinkRequest) []byte {
	start := len(out)
	out = append(out, make([]byte, unix.SizeofNlMsghdr)...)
	for _, d := range r.Data {
		out = append(out, d.Serialize()...)
	}
	out = append(out, r.RawData...)
	r.Len = uint32(len(out) - start)
	h := out[start:]
	binary.NativeEndian.PutUint32(h[0:], r.Len)
	binary.NativeEndian.PutUint16(h[4:], r.Type)
	binary.NativeEndian.PutUint16(h[6:], r.Flags)
	binary.NativeEndian.PutUint32(h[8:], r.Seq)
	binary.NativeEndian.PutUint32(h[12:], r.Pid)
	return out
}

package vppsim

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"
)

// Options configure a Sim.
type Options struct {
	// SocketPath is the unix socket to listen on (VPP's /run/vpp/api.sock).
	// A stale socket file there is removed first.
	SocketPath string
	// PID is the vpe_pid reported in control_ping_reply (default: a random one).
	PID uint32
	// Omit lists message names (without CRC, e.g. "memif_create_v2") left out
	// of the message table, as with an older or newer VPP. Omitting a request
	// also omits the replies and details only it produces.
	Omit []string
	// Log receives the simulator's own log (default: discarded).
	Log *slog.Logger
	// HostIfExists, when set, tells whether a host (Linux) interface exists:
	// af_packet_create* for a name it rejects fails with INVALID_INTERFACE,
	// as VPP does when the host link is missing. Nil: every name exists.
	HostIfExists func(name string) bool
	// NoVhostNet makes TAP v2 creation fail with SYSCALL_ERROR_1, as on a
	// host without /dev/vhost-net.
	NoVhostNet bool
	// StartupLoopbacks is the number of loopbacks (loop0, loop1, ...,
	// untagged, down) VPP has from its start, after local0, as when its
	// startup configuration creates them: they take sw_if_index 1..n
	// before any client connects, at Start and after each Restart.
	StartupLoopbacks int
}

// Sim is a running VPP simulator. All methods are safe for concurrent use.
type Sim struct {
	opts  Options
	log   *slog.Logger
	table *msgTable

	life sync.Mutex // serialises Close and Restart
	wg   sync.WaitGroup

	mu         sync.Mutex // guards everything below
	st         *state
	pid        uint32
	ln         *net.UnixListener
	clients    map[*client]struct{}
	nextClient uint32
	closed     bool
	calls      []string
	fails      map[string]*failRule
	delays     map[string]time.Duration
	holds      []*hold        // in force, in the order Hold made them
	held       map[string]int // requests waiting on a hold now, by message
}

type failRule struct {
	retval int32
	times  int
}

// hold is one Hold: the requests of msg that arrive while it is in force
// wait until released is closed.
type hold struct {
	msg      string
	released chan struct{}
}

// Start listens on opts.SocketPath and serves clients until Close.
func Start(opts Options) (*Sim, error) {
	if opts.SocketPath == "" {
		return nil, errors.New("vppsim: SocketPath is required")
	}
	s := &Sim{
		opts:    opts,
		log:     opts.Log,
		st:      newState(opts.StartupLoopbacks),
		pid:     opts.PID,
		clients: map[*client]struct{}{},
		fails:   map[string]*failRule{},
		delays:  map[string]time.Duration{},
		held:    map[string]int{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.pid == 0 {
		s.pid = randomPID()
	}
	t, err := buildTable(opts.Omit)
	if err != nil {
		return nil, err
	}
	s.table = t
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.listenLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

func randomPID() uint32 { return 1000 + rand.Uint32N(4_000_000) }

func (s *Sim) listenLocked() error {
	path := s.opts.SocketPath
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("vppsim: %s exists and is not a socket", path)
		}
		_ = os.Remove(path)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("vppsim: listen: %w", err)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.acceptLoop(ln)
	s.log.Info("vppsim: serving", "socket", path, "pid", s.pid)
	return nil
}

// stopLocked closes the listener (which removes the socket file) and every
// client connection. The caller then waits on s.wg without holding s.mu.
func (s *Sim) stopLocked() {
	if s.ln != nil {
		_ = s.ln.Close()
		s.ln = nil
		_ = os.Remove(s.opts.SocketPath)
	}
	for cl := range s.clients {
		cl.shutdown()
	}
}

// Close stops serving, closes all client connections and removes the socket.
func (s *Sim) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.stopLocked()
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Restart simulates a VPP restart: every client is dropped, all state is lost
// (only local0 and the StartupLoopbacks remain), and the simulator serves
// again on the same socket, reporting newPID (a random one if 0) as vpe_pid.
// Test settings (FailNext, Delay, Hold) and the Calls log survive; requests
// held by a Hold end with their connections, unanswered and not carried out.
func (s *Sim) Restart(newPID uint32) error {
	return s.RestartWith(Restart{PID: newPID, Omit: s.omit(), StartupLoopbacks: s.startupLoopbacks()})
}

// Restart is how RestartWith starts VPP again.
type Restart struct {
	// PID is the new vpe_pid (0: a random one, other than the last).
	PID uint32
	// Omit and StartupLoopbacks replace those of the Options: VPP
	// started with other plugins (the messages of the others are left
	// out of the message table) or another startup configuration.
	Omit             []string
	StartupLoopbacks int
}

// RestartWith is Restart into a VPP started with r's settings, as after
// VPP was stopped and started again with other plugins (Omit) or another
// startup configuration (StartupLoopbacks).
func (s *Sim) RestartWith(r Restart) error {
	table, err := buildTable(r.Omit)
	if err != nil {
		return err
	}
	newPID := r.PID
	s.life.Lock()
	defer s.life.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("vppsim: closed")
	}
	s.stopLocked()
	s.mu.Unlock()
	s.wg.Wait()

	s.mu.Lock()
	defer s.mu.Unlock()
	if newPID == 0 {
		for newPID = randomPID(); newPID == s.pid; newPID = randomPID() {
		}
	}
	s.pid = newPID
	s.opts.Omit, s.opts.StartupLoopbacks = slices.Clone(r.Omit), r.StartupLoopbacks
	s.table = table
	s.st = newState(r.StartupLoopbacks)
	s.clients = map[*client]struct{}{}
	return s.listenLocked()
}

func (s *Sim) omit() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.opts.Omit)
}

func (s *Sim) startupLoopbacks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.StartupLoopbacks
}

// FailNext makes the next `times` requests of the message msgName (e.g.
// "create_loopback") fail: VPP's reply comes back with Retval = retval (use
// the negative VNET_API_ERROR_* codes; they are listed in GoVPP's api package
// as api.VPPApiError constants, e.g. -1 UNSPECIFIED, -2 INVALID_SW_IF_INDEX,
// -3 NO_SUCH_FIB, -6 NO_SUCH_ENTRY, -7 INVALID_VALUE, -11 SYSCALL_ERROR_1,
// -73 INVALID_ARGUMENT, -79 IF_ALREADY_EXISTS), and the state does not change.
// A dump has no Retval: a failing dump returns no details. times <= 0 clears.
func (s *Sim) FailNext(msgName string, retval int32, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if times <= 0 {
		delete(s.fails, msgName)
		return
	}
	s.fails[msgName] = &failRule{retval: retval, times: times}
}

// takeFailure consumes one failure of msgName, if any. s.mu held.
func (s *Sim) takeFailure(name string) (int32, bool) {
	r := s.fails[name]
	if r == nil {
		return 0, false
	}
	r.times--
	if r.times <= 0 {
		delete(s.fails, name)
	}
	return r.retval, true
}

// Delay makes the replies to msgName come after d (0 removes the delay). The
// connection that sent the request is busy meanwhile, as VPP is: its later
// requests wait too; other connections are served.
func (s *Sim) Delay(msgName string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.delays, msgName)
		return
	}
	s.delays[msgName] = d
}

// Hold makes VPP hang on msgName: each request of msgName that arrives from
// now on is neither carried out nor answered until release is called (until
// every Hold of msgName in force when it arrived is released). As with
// Delay, the connection that sent it is busy meanwhile, as VPP is: its
// later requests wait behind it, GoVPP's health-check pings included (so
// GoVPP's health check reports VPP not responding after a few missed
// probes, as for a hung VPP), while other connections are served.
// Released, the request is carried out on the state as it is then, and
// answered. Held reports how many requests wait.
//
// release is idempotent and safe to call from any goroutine; requests that
// arrive after it are served at once. Close and Restart end the waiting
// requests with their connections (unanswered and not carried out, as by
// a VPP that died); the Hold itself, like FailNext and Delay, lasts until
// released. A held request whose client went away meanwhile is still
// carried out at release.
func (s *Sim) Hold(msgName string) (release func()) {
	h := &hold{msg: msgName, released: make(chan struct{})}
	s.mu.Lock()
	s.holds = append(s.holds, h)
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.holds = slices.DeleteFunc(s.holds, func(x *hold) bool { return x == h })
			s.mu.Unlock()
			close(h.released)
		})
	}
}

// Held is the number of requests of msgName waiting on a Hold now: a test
// waits for it to know that a client's call has reached VPP and hangs.
func (s *Sim) Held(msgName string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[msgName]
}

// holdsOf returns the Holds of msgName in force. s.mu held.
func (s *Sim) holdsOf(msgName string) []*hold {
	var out []*hold
	for _, h := range s.holds {
		if h.msg == msgName {
			out = append(out, h)
		}
	}
	return out
}

// PID is the vpe_pid currently reported.
func (s *Sim) PID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// SocketPath is the socket the simulator serves.
func (s *Sim) SocketPath() string { return s.opts.SocketPath }

// Calls returns the names of all messages received (from every client, the
// handshake, control pings and health checks included), in order of arrival.
func (s *Sim) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// ResetCalls empties the Calls log.
func (s *Sim) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// Clients is the number of connected clients.
func (s *Sim) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// Messages returns the message table sent in the handshake: name_crc -> id.
func (s *Sim) Messages() map[string]uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]uint16, len(s.table.entries))
	for _, e := range s.table.entries {
		m[e.Name] = e.Index
	}
	return m
}

// Interfaces returns a copy of all interfaces, ordered by sw_if_index.
func (s *Sim) Interfaces() []Interface {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Interface
	for _, i := range s.st.sortedIfs() {
		out = append(out, s.st.view(i))
	}
	return out
}

// Interface returns a copy of the interface named name (e.g. "loop0").
func (s *Sim) Interface(name string) (Interface, bool) {
	for _, i := range s.Interfaces() {
		if i.Name == name {
			return i, true
		}
	}
	return Interface{}, false
}

// BridgeDomains returns a copy of all bridge domains, ordered by id.
func (s *Sim) BridgeDomains() []BridgeDomain {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []BridgeDomain
	for _, bd := range s.st.bds {
		c := *bd
		c.Members = slices.Clone(bd.Members)
		c.ArpEntries = nil
		for _, e := range bd.ArpEntries {
			c.ArpEntries = append(c.ArpEntries, ArpTermEntry{IP: e.IP, MAC: slices.Clone(e.MAC)})
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b BridgeDomain) int { return cmp.Compare(a.BdID, b.BdID) })
	return out
}

// Routes returns a copy of the routes added through the API, ordered by
// table, family, prefix and source.
func (s *Sim) Routes() []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Route
	for _, r := range s.st.routes {
		c := *r
		c.Paths = slices.Clone(r.Paths)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Route) int {
		if c := cmp.Compare(a.TableID, b.TableID); c != 0 {
			return c
		}
		if c := comparePrefix(a.Prefix, b.Prefix); c != 0 {
			return c
		}
		return cmp.Compare(a.Source, b.Source)
	})
	return out
}

// Tables returns the IP tables (VRFs), table 0 of both families included.
func (s *Sim) Tables() []Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Table
	for k, t := range s.st.tables {
		out = append(out, Table{ID: k.id, IPv6: k.ipv6, Name: t.name})
	}
	slices.SortFunc(out, func(a, b Table) int {
		if a.IPv6 != b.IPv6 {
			if a.IPv6 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// Neighbors returns a copy of the IP neighbour entries, ordered by interface
// and address.
func (s *Sim) Neighbors() []Neighbor {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Neighbor
	for _, n := range s.st.neighbors {
		c := *n
		c.MAC = slices.Clone(n.MAC)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Neighbor) int {
		if c := cmp.Compare(a.SwIfIndex, b.SwIfIndex); c != 0 {
			return c
		}
		return a.IP.Compare(b.IP)
	})
	return out
}

// MemifSockets returns the memif socket filenames by socket id (0 is VPP's
// default socket, /run/vpp/memif.sock).
func (s *Sim) MemifSockets() map[uint32]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[uint32]string, len(s.st.memifSock))
	for k, v := range s.st.memifSock {
		m[k] = v
	}
	return m
}

// SetLinkUp simulates the carrier of an interface's device: a host link
// going down under an AF_PACKET, a memif peer connecting (memif links are
// down until then), a TAP's host side. Subscribers get sw_interface_event
// for the interface when its link state changes (flags LINK_UP when it goes
// up, 0 when it goes down; none for its sub-interfaces, as on VPP).
func (s *Sim) SetLinkUp(swIfIndex uint32, up bool) error {
	s.mu.Lock()
	st := s.st
	i := st.get(swIfIndex)
	if i == nil {
		s.mu.Unlock()
		return fmt.Errorf("vppsim: no interface %d", swIfIndex)
	}
	before := st.eventFlags()
	st.hw(i).carrier = up
	events := s.interfaceEvents(before)
	s.mu.Unlock()
	for _, e := range events {
		select {
		case e.to.out <- e.frame:
		default:
		}
	}
	return nil
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return cmp.Compare(a.Bits(), b.Bits())
}

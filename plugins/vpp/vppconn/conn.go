// Package vppconn keeps the agent connected to VPP's binary API through
// GoVPP (go.fd.io/govpp v0.13.0, VPP 25.10) over a socket client of its own
// (socket.go), which Pipeline also uses directly.
//
// The Manager connects in the background and never gives up: the agent
// starts and serves without VPP. Each time the connection comes up it asks
// VPP its PID (control_ping): a PID different from the previous connection's
// means VPP restarted and is empty, and OnRestart is called so the agent
// re-applies everything (a downstream resync: the scheduler retrieves the
// empty state and re-creates every value in dependency order). A reconnect
// to the same VPP calls OnReconnect (a resync to catch up). While VPP is away,
// calls fail with ErrNotConnected, which the scheduler retries; the status of
// the values says so.
//
// A connection serves one stretch of VPP's life: when GoVPP's health check
// finds it lost, the Manager marks VPP not connected, ends the calls still
// running on it (they return ErrNotConnected at once instead of waiting for
// their timeout; so do later calls through a connection Conn handed out
// before), and then connects anew with a new GoVPP connection. GoVPP's own
// reconnect of a connection in place is refused: in v0.13.0 it rewrites the
// message table that running calls decode their replies with, unlocked (see
// session.go).
//
// At every connect the message tables of the registered areas are checked
// against VPP's: an area whose messages VPP does not know (a different VPP
// version, a VPP plugin not loaded) is disabled, reported by Disabled and,
// unless the area is Optional (a VPP plugin an installation may leave out),
// in the readiness, and its calls fail with a non-retriable error naming the
// messages (*IncompatibleError, IsIncompatible); the others work. A plugin
// keeps its areas small enough that a missing VPP plugin disables only what
// needs it (the interface plugin has one area per interface type a VPP
// plugin provides).
//
// What plugins must do with both:
//
//   - A Retrieve whose area is disabled reports nothing, without an error:
//     the objects of the area cannot be seen in that VPP, and after a
//     restart they are gone anyway. (With an error the scheduler would keep
//     the values as it knew them from the previous VPP: CONFIGURED, with
//     that VPP's indexes.) The values are then created again and fail,
//     naming the missing messages, until a compatible VPP connects.
//   - Indexes VPP hands out (sw_if_index) are valid in one VPP process only:
//     what a plugin keeps of them is stamped with PID, the process that
//     gave them, and is not used once another process is connected.
//
// Pipeline sends many requests (and dumps) with many in flight, for the
// descriptors' batches and the per-interface dumps of the Retrieves: VPP
// carries out the requests of a connection in order and answers each with
// its request's context, so a pipelined request costs VPP's work rather
// than a round trip (plugins/vpp/bench: CallPipelined against CallSync).
// Each call gets its own reply or error. Pipeline does not go through
// GoVPP's per-message machinery (a channel send, a timer and a write call
// per request, a goroutine hand-over per reply): it encodes its requests
// into one buffer and writes half a window at a time, and the socket's
// reader hands it the replies in bulk, told apart from GoVPP's by their
// contexts (see batchContexts). Against the real VPP this halves the
// agent's CPU time per pipelined request (docs/benchmarks.md, "Issue 17:
// the agent's own socket client").
//
// GoVPP logs through logrus; the Manager routes it into the agent's slog
// logger.
package vppconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/core"
)

// DefaultSocket is VPP's binary API socket.
const DefaultSocket = "/run/vpp/api.sock"

// reconnectAttempts: GoVPP's reconnect attempts before it gives up; the
// Manager then starts a new connection, so it never gives up itself.
const reconnectAttempts = 30

// ErrNotConnected: VPP is not connected (yet, or any more).
var ErrNotConnected = errors.New("VPP is not connected")

// Options of the Manager.
type Options struct {
	Socket string
	// CallTimeout bounds every VPP call (default 5 s).
	CallTimeout time.Duration
	// OnConnect is called (on the Manager's goroutine) after every connect,
	// with restarted true when VPP's PID changed since the last connection
	// (VPP is empty) and first true for the first connection.
	OnConnect func(restarted, first bool)
	Log       *slog.Logger
}

// Area is a group of messages a plugin area needs (e.g. "interfaces").
type Area struct {
	Name     string
	Messages []api.Message
	// Optional: a VPP without these messages (a plugin not loaded, as
	// memif) is still ready; the area's values fail with the missing
	// message named, and Status lists the area as disabled.
	Optional bool
}

// Manager owns the connection.
type Manager struct {
	opts  Options
	log   *slog.Logger
	areas []Area

	mu         sync.RWMutex
	sess       *session // the connection in use; nil while VPP is not connected
	pid        uint32
	version    string
	disabled   map[string][]string // area -> messages VPP lacks
	metrics    *metrics
	reconnects int
	lastErr    error
}

// New returns a Manager; Run connects.
func New(opts Options) *Manager {
	if opts.Socket == "" {
		opts.Socket = DefaultSocket
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 5 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	routeLogrus(opts.Log)
	return &Manager{opts: opts, log: opts.Log, disabled: map[string][]string{}, metrics: newMetrics()}
}

// AddArea registers the messages of an area, checked at every connect. Call
// before Run.
func (m *Manager) AddArea(a Area) { m.areas = append(m.areas, a) }

// Run connects and keeps a connection until ctx ends: a new one each time
// the last is lost.
func (m *Manager) Run(ctx context.Context) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		client := newSockClient(m.opts.Socket)
		conn, events, err := core.AsyncConnect(client, reconnectAttempts, time.Second)
		if err != nil {
			m.markNotConnected(err)
			if !sleep(ctx, delay) {
				return
			}
			delay = min(2*delay, 5*time.Second)
			continue
		}
		up, cause := m.serve(ctx, conn, client, events)
		// Not connected from here on, and the calls on conn end, before
		// conn goes.
		m.markNotConnected(cause)
		conn.Disconnect()
		if up {
			delay = 100 * time.Millisecond
			continue
		}
		// Connected but not answering, or gave up connecting: not at once
		// again.
		if !sleep(ctx, delay) {
			return
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// serve follows the connection's events until it is lost, GoVPP gives up
// connecting, or ctx ends; it returns why, and whether the connection was
// up (connected and answering) meanwhile.
func (m *Manager) serve(ctx context.Context, conn *core.Connection, client *sockClient, events chan core.ConnectionEvent) (up bool, cause error) {
	for {
		select {
		case <-ctx.Done():
			return up, ctx.Err()
		case ev, ok := <-events:
			if !ok {
				return up, errors.New("GoVPP closed the connection's events")
			}
			switch ev.State {
			case core.Connected:
				if err := m.onConnected(ctx, conn, client); err != nil {
					m.log.Warn("VPP connected but does not answer; connecting again", "socket", m.opts.Socket, "error", err)
					return up, err
				}
				up = true
			case core.Disconnected, core.NotResponding:
				cause := ev.Error
				if cause == nil {
					cause = errors.New("VPP does not answer the health checks")
				}
				m.log.Warn("VPP connection lost; reconnecting", "socket", m.opts.Socket, "state", ev.State.String(), "error", ev.Error)
				return up, cause
			case core.Failed:
				return up, fmt.Errorf("connecting failed: %v", ev.Error)
			}
		}
	}
}

// markNotConnected marks VPP not connected because of err, and ends the
// session in use: its calls return ErrNotConnected from now on.
func (m *Manager) markNotConnected(err error) {
	m.mu.Lock()
	ended := m.sess
	m.sess, m.lastErr = nil, err
	notConnected := m.notConnectedLocked()
	m.mu.Unlock()
	if ended != nil {
		ended.end(notConnected)
	}
}

// notConnectedLocked is the error of a call while VPP is not connected.
func (m *Manager) notConnectedLocked() error {
	if m.lastErr != nil {
		return fmt.Errorf("%w (%s: %v)", ErrNotConnected, m.opts.Socket, m.lastErr)
	}
	return fmt.Errorf("%w (%s)", ErrNotConnected, m.opts.Socket)
}

// onConnected checks a new connection (control_ping, version, the areas'
// messages) and makes it the session in use.
func (m *Manager) onConnected(ctx context.Context, conn *core.Connection, client *sockClient) error {
	cctx, cancel := context.WithTimeout(ctx, m.opts.CallTimeout)
	defer cancel()
	ping := &memclnt.ControlPingReply{}
	if err := conn.Invoke(cctx, &memclnt.ControlPing{}, ping); err != nil {
		return fmt.Errorf("control_ping after connect: %w", err)
	}
	ver := &vpe.ShowVersionReply{}
	if err := conn.Invoke(cctx, &vpe.ShowVersion{}, ver); err != nil {
		ver.Version = "unknown"
	}
	disabled := map[string][]string{}
	if ch, err := conn.NewAPIChannel(); err == nil {
		for _, a := range m.areas {
			if err := ch.CheckCompatiblity(a.Messages...); err != nil {
				var ce *api.CompatibilityError
				if errors.As(err, &ce) {
					disabled[a.Name] = append([]string{}, ce.IncompatibleMessages...)
				} else {
					disabled[a.Name] = []string{err.Error()}
				}
			}
		}
		ch.Close()
	}
	m.mu.Lock()
	first := m.pid == 0
	restarted := !first && m.pid != ping.VpePID
	if !first {
		m.reconnects++
	}
	m.sess, m.pid, m.version, m.disabled, m.lastErr = newSession(conn, client), ping.VpePID, strings.TrimSpace(ver.Version), disabled, nil
	m.mu.Unlock()
	m.log.Info("VPP connected", "socket", m.opts.Socket, "pid", ping.VpePID, "version", ver.Version, "restarted", restarted)
	for a, msgs := range disabled {
		m.log.Error("VPP lacks messages of an area: its values fail until a compatible VPP connects", "area", a, "messages", msgs)
	}
	if m.opts.OnConnect != nil {
		m.opts.OnConnect(restarted, first)
	}
	return nil
}

// Conn returns the connection for a call of an area, or an error: not
// connected (retriable), or the area is disabled (VPP lacks its messages).
// The connection is the current one only: once it is lost its calls fail
// with ErrNotConnected, also those running then, so take it anew for each
// call or batch of calls.
func (m *Manager) Conn(area string) (api.Connection, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.sess == nil {
		return nil, m.notConnectedLocked()
	}
	if msgs, off := m.disabled[area]; off {
		return nil, &IncompatibleError{Area: area, Messages: msgs}
	}
	return sessionConn{conn: instrumented{conn: m.sess.conn, mt: m.metrics}, s: m.sess}, nil
}

// PID is the vpe_pid of the VPP connected last, 0 before the first connect.
// It stays while VPP is away, and changes when a restarted VPP connects
// (before OnConnect is called and before any call reaches the new process),
// so an index VPP gave while PID was p is valid only while PID is p.
func (m *Manager) PID() uint32 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.pid
}

// CallContext bounds one call: Options.CallTimeout from now, or ctx's
// deadline when it comes sooner. A call that runs out of that time fails
// with a *CallTimeoutError naming it.
func (m *Manager) CallContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return withCallBudget(ctx, m.opts.CallTimeout)
}

// Do runs f with the connection of area (Conn) and ctx bounded by the
// call timeout (CallContext): the way a plugin makes one call or one
// batch. Nothing is sent once ctx has ended (f is not called): GoVPP
// would send the request and give up its reply, and VPP would carry it
// out unseen.
func (m *Manager) Do(ctx context.Context, area string, f func(ctx context.Context, conn api.Connection) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := m.Conn(area)
	if err != nil {
		return err
	}
	ctx, cancel := m.CallContext(ctx)
	defer cancel()
	return f(ctx, conn)
}

// IncompatibleError: VPP lacks (or has other versions of) messages of an
// area.
type IncompatibleError struct {
	Area     string
	Messages []string
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("VPP does not support area %s: messages %s are unknown or of another version", e.Area, strings.Join(e.Messages, ", "))
}

// IsIncompatible tells whether err is (or wraps) an *IncompatibleError: VPP
// lacks messages of the area of the call.
func IsIncompatible(err error) bool {
	var ie *IncompatibleError
	return errors.As(err, &ie)
}

// Retrieved is what a descriptor's Retrieve returns for what its calls
// gave: nothing, without an error, when VPP lacks the messages of their
// area (see the package doc); kvs and err otherwise.
func Retrieved[T any](kvs []T, err error) ([]T, error) {
	if IsIncompatible(err) {
		return nil, nil
	}
	return kvs, err
}

// Status is the connection state for readiness and the status command.
type Status struct {
	Connected  bool
	Socket     string
	PID        uint32
	Version    string
	Reconnects int
	Error      string
	// Disabled areas and the messages they lack.
	Disabled map[string][]string
	// Optional names the disabled areas that are optional (Area.Optional):
	// they do not keep VPP from being ready.
	Optional map[string]bool
}

// Status returns the connection state.
func (m *Manager) Status() Status {
	m.mu.RLock()
	defer m.mu.RUnlock()
	st := Status{Connected: m.sess != nil, Socket: m.opts.Socket, PID: m.pid, Version: m.version, Reconnects: m.reconnects, Disabled: map[string][]string{}}
	if m.lastErr != nil {
		st.Error = m.lastErr.Error()
	}
	for a, msgs := range m.disabled {
		st.Disabled[a] = append([]string(nil), msgs...)
	}
	for _, a := range m.areas {
		if _, off := m.disabled[a.Name]; off && a.Optional {
			if st.Optional == nil {
				st.Optional = map[string]bool{}
			}
			st.Optional[a.Name] = true
		}
	}
	return st
}

// NotReady lists what keeps VPP from being ready ("" entries never): no
// connection, or a disabled area that is not optional.
func (s Status) NotReady() []string {
	var out []string
	if !s.Connected {
		out = append(out, "VPP not connected ("+s.Socket+")")
	}
	var areas []string
	for a := range s.Disabled {
		if !s.Optional[a] {
			areas = append(areas, a)
		}
	}
	sort.Strings(areas)
	for _, a := range areas {
		out = append(out, "VPP lacks the messages of "+a+": "+strings.Join(s.Disabled[a], ", "))
	}
	return out
}

// routeLogrus sends GoVPP's logrus output into slog. GoVPP's logger is a
// process-wide global read by its goroutines, so it is set once; the slog
// logger it writes to can change (the last Manager's).
func routeLogrus(log *slog.Logger) {
	govppLog.Store(log)
	govppLogOnce.Do(func() {
		l := logrus.New()
		l.SetOutput(discard{})
		l.SetLevel(logrus.InfoLevel)
		l.AddHook(slogHook{})
		core.SetLogger(l)
	})
}

var (
	govppLogOnce sync.Once
	govppLog     atomic.Pointer[slog.Logger]
)

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

type slogHook struct{}

func (slogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h slogHook) Fire(e *logrus.Entry) error {
	if reply, ok := droppedReply(e.Message); ok {
		govppLog.Load().Debug("late VPP reply dropped: its call had ended (timed out or cancelled)", "component", "govpp", "reply", reply)
		return nil
	}
	level := slog.LevelInfo
	switch {
	case e.Level <= logrus.ErrorLevel:
		level = slog.LevelError
	case e.Level == logrus.WarnLevel:
		level = slog.LevelWarn
	case e.Level >= logrus.DebugLevel:
		level = slog.LevelDebug
	}
	attrs := []any{"component", "govpp"}
	for k, v := range e.Data {
		attrs = append(attrs, k, v)
	}
	govppLog.Load().Log(context.Background(), level, e.Message, attrs...)
	return nil
}

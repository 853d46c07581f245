package vppcalls

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// EventsAreaName is the vppconn area of the link-state watcher's messages
// (want_interface_events, sw_interface_event, sw_interface_dump). It is
// separate from AreaName so that a VPP without interface events disables
// the watcher only.
const EventsAreaName = "interface-events"

// EventMessages lists the messages of EventsAreaName, for the compatibility
// check at connect.
func EventMessages() []govppapi.Message {
	return []govppapi.Message{
		&interfaces.WantInterfaceEvents{}, &interfaces.WantInterfaceEventsReply{},
		&interfaces.SwInterfaceEvent{},
		&interfaces.SwInterfaceDump{}, &interfaces.SwInterfaceDetails{},
	}
}

// EventsArea is the vppconn area of EventMessages.
func EventsArea() vppconn.Area { return vppconn.Area{Name: EventsAreaName, Messages: EventMessages()} }

// LinkState is an interface as sw_interface_dump reports it, reduced to
// what the link-state watcher needs.
type LinkState struct {
	SwIfIndex uint32
	Name      string // VPP's name
	Tag       string
	AdminUp   bool
	LinkUp    bool
}

// EventHandler makes the calls of the link-state watcher over the
// connection of a vppconn.Manager (area EventsAreaName), each under the
// Manager's CallContext deadline.
type EventHandler struct {
	h   *handler
	pid uint32
}

// NewEventHandler returns the EventHandler calling VPP over m's connection.
func NewEventHandler(m *vppconn.Manager) *EventHandler {
	return &EventHandler{h: &handler{m: m, area: EventsAreaName}, pid: uint32(os.Getpid())}
}

// DumpLinkStates lists every interface (sw_interface_dump with sw_if_index
// ~0, nothing else), ordered by index.
func (e *EventHandler) DumpLinkStates(ctx context.Context) ([]LinkState, error) {
	ds, err := e.h.swInterfaceDump(ctx, NoIndex)
	if err != nil {
		return nil, err
	}
	out := make([]LinkState, 0, len(ds))
	seen := make(map[uint32]bool, len(ds))
	for _, d := range ds {
		idx := uint32(d.SwIfIndex)
		if seen[idx] {
			continue
		}
		seen[idx] = true
		out = append(out, LinkState{
			SwIfIndex: idx,
			Name:      d.InterfaceName,
			Tag:       d.Tag,
			AdminUp:   d.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0,
			LinkUp:    d.Flags&interface_types.IF_STATUS_API_FLAG_LINK_UP != 0,
		})
	}
	slices.SortFunc(out, func(a, b LinkState) int { return int(int64(a.SwIfIndex) - int64(b.SwIfIndex)) })
	return out, nil
}

// Subscription is a subscription to sw_interface_event on one connection:
// GoVPP's watcher of the message and VPP's registration of the client
// (want_interface_events). VPP forgets the registration when the client
// reconnects, and GoVPP's watcher belongs to one connection: subscribe
// again (Close, then Subscribe) after every connect.
type Subscription struct {
	e    *EventHandler
	w    govppapi.Watcher
	once sync.Once
}

// Subscribe watches sw_interface_event on the current connection, then
// registers with VPP for the events (want_interface_events, enable_disable
// 1, the agent's PID). A registration VPP already holds for this client
// (INVALID_REGISTRATION) counts as done. Subscribed first, listed after:
// a DumpLinkStates after Subscribe misses no change.
func (e *EventHandler) Subscribe(ctx context.Context) (*Subscription, error) {
	conn, err := e.h.m.Conn(e.h.area)
	if err != nil {
		return nil, fmt.Errorf("want_interface_events: %w", err)
	}
	// The watcher lives until Close, not until ctx ends.
	w, err := conn.WatchEvent(context.WithoutCancel(ctx), &interfaces.SwInterfaceEvent{})
	if err != nil {
		return nil, fmt.Errorf("watching sw_interface_event: %w", err)
	}
	if err := e.want(ctx, conn, true); err != nil && !isVPPError(err, govppapi.INVALID_REGISTRATION) {
		(&Subscription{e: e, w: w}).stop()
		return nil, fmt.Errorf("want_interface_events: %w", err)
	}
	return &Subscription{e: e, w: w}, nil
}

func (e *EventHandler) want(ctx context.Context, conn govppapi.Connection, enable bool) error {
	cctx, cancel := e.h.m.CallContext(ctx)
	defer cancel()
	req := &interfaces.WantInterfaceEvents{PID: e.pid}
	if enable {
		req.EnableDisable = 1
	}
	_, err := interfaces.NewServiceClient(conn).WantInterfaceEvents(cctx, req)
	return err
}

// Events delivers the events (each a *interfaces.SwInterfaceEvent); it is
// closed by Close.
func (s *Subscription) Events() <-chan govppapi.Message { return s.w.Events() }

// Close stops the watcher and waits until GoVPP has removed its
// subscription, then, while VPP is connected, unregisters the client from
// VPP (want_interface_events, enable_disable 0; failures are ignored: after
// a reconnect the client is not registered any more, which VPP answers with
// INVALID_REGISTRATION). Close may be called more than once.
//
// Use one subscription per Manager at a time, closed before the next is
// made: the registration is per VPP client, and GoVPP v0.13.0 corrupts its
// list of subscriptions of a message when one of several is removed (a
// later event is then sent on a closed channel, a panic).
func (s *Subscription) Close(ctx context.Context) {
	s.once.Do(func() {
		s.stop()
		conn, err := s.e.h.m.Conn(s.e.h.area)
		if err != nil {
			return
		}
		// Best effort: the next Subscribe registers again anyway.
		_ = s.e.want(ctx, conn, false)
	})
}

// stop closes GoVPP's watcher and waits for its end: GoVPP unsubscribes in
// the watcher's goroutine, then closes the channel.
func (s *Subscription) stop() {
	s.w.Close()
	for range s.w.Events() {
	}
}

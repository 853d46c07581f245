package ifplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// Pusher is what the link-state watcher reports to (the scheduler).
type Pusher interface {
	PushSBNotification(notifications ...api.KVWithMetadata) error
}

// DriftReporter is what the watcher reports drift to (the scheduler): the
// interfaces of the agent's that VPP deleted, or whose admin state it
// changed, outside the agent. The watcher finds an event's interface in
// the interface descriptor's metadata map (it runs outside any descriptor
// callback, so it reads the scheduler's).
type DriftReporter interface {
	ReportDrift(reports ...api.DriftReport) error
	MetadataSource
}

// Link-state values: the value of LinkStateKey(iface, up).
const (
	LinkStateUp   = "UP"
	LinkStateDown = "DOWN"
)

const (
	// linkRetryMin and linkRetryMax bound the delay between two attempts
	// to subscribe and list while VPP is away or failing.
	linkRetryMin = 100 * time.Millisecond
	linkRetryMax = 5 * time.Second
	// linkRelistInterval: a re-list without an event, for the changes VPP
	// sends no event for (an interface created or tagged with its final
	// link state), and to notice a reconnect nobody told the watcher of.
	linkRelistInterval = 30 * time.Second
	// linkUnsubscribeTimeout bounds the unsubscription when Run ends.
	linkUnsubscribeTimeout = time.Second
	// linkEventWindow: the events that come within this time of the first
	// event of a burst are reported together, by one list and one SB
	// notification (one scheduler transaction). A transaction that creates
	// or deletes many interfaces makes a few notifications, not one or more
	// per interface (which pushed the real changes out of the transaction
	// history); a link change is reported at most this late.
	linkEventWindow = 100 * time.Millisecond
)

// LinkStateWatcher reports the link state of the agent's VPP interfaces as
// OBTAINED values: LinkStateKey(name, up) with the value
// wrapperspb.String("UP") or ("DOWN"), for every interface whose VPP tag
// (the logical name) is set. Exactly one of the two keys exists per tagged
// interface; both are removed when the interface goes.
//
// It subscribes to VPP's interface events (GoVPP's watcher of
// sw_interface_event, then want_interface_events with enable_disable 1 and
// the agent's PID), then lists the interfaces (sw_interface_dump, ~0). At
// start, after each Resync, every 30 s, and linkEventWindow (100 ms) after
// the first event of a burst (the events of the window together), it lists
// them again and pushes the difference with what it reported before (new
// and changed keys, the opposite key and the keys of interfaces that are
// gone removed) in one SB notification, so that a missed, dropped or
// reordered event cannot leave a wrong state; an unchanged state pushes
// nothing.
//
// VPP forgets the registration when the client reconnects: call Resync on
// every VPP (re)connect (the daemon does it from vppconn.Options.OnConnect);
// it subscribes again and re-lists. After a VPP restart the list is empty
// until the agent re-creates the interfaces, so every link-state key is
// removed and then reported again. While VPP is not connected, or a call
// fails, the watcher keeps what it reported and tries again after a growing
// delay (100 ms up to 5 s) or at the next Resync, whichever comes first;
// when VPP lacks the messages of Area it waits for the next Resync only.
//
// # Drift
//
// With a drift reporter (SetDriftReporter: the scheduler), the watcher
// also tells the scheduler about the agent's interfaces changed outside
// the agent, through VPP's binary API or CLI. VPP 25.10 sends
// sw_interface_event when an interface is created (flags 0), deleted
// (deleted set) and when its admin or link state changes (flags: the up
// states among the changes), not when its tag, addresses, VRF, MTU or MAC
// change. Every list (the one linkEventWindow after a burst's first event
// above all) looks at the interfaces the events since the previous list
// named: one of the agent's (in the interface descriptor's metadata map at
// that sw_if_index, not foreign) that VPP no longer lists there under its
// tag is reported gone (InterfaceKey, cause "deleted in VPP ..."), one
// whose admin state differs from what its value asks for is reported
// under the admin-state value it derives (AdminStateKey, cause "set admin
// down in VPP ..."). All reports of a list go in one ReportDrift call: one
// DriftRepair transaction, which refreshes the interfaces with their
// Retrieves and re-creates what is gone (the interface, its addresses and
// other derived values, then what depends on it: routes, ARP entries,
// bridge-domain bindings, sub-interfaces) or sets the admin state again;
// with kvscheduler.Options.DriftReportOnly it leaves them MISSING with the
// cause in their details. The agent's own changes are filtered out: an
// interface the agent deleted has no metadata any more, and its admin state
// is the one its value asks for. Midway through a transaction, before the
// scheduler has the results of a batch (the admin states of many
// interfaces set down in one wave, their values updated in the next), the
// metadata still holds the values before: the interface descriptors note
// what they do to an interface (its admin state set, the interface
// deleted) before sending the request, and an interface found as the
// agent last left it is not reported either; nor is one with a request of
// the agent's still waiting for its reply (VPP may not have carried it out
// when listed; the change's own event makes the watcher look again), and
// an interface the agent just created counts as left down until its admin
// state is set.
//
// What VPP sends no event for is not seen here: addresses, unnumbered and
// VRF of an interface, MAC and MTU, routes, ARP entries and bridge domains
// changed or removed outside the agent. The optional periodic full resync
// of the daemon finds those (the scheduler's Retrieves report them field by
// field). Events are taken only from the connection they came on: after a
// reconnect the resync that follows the connect compares everything.
//
// Limits: VPP sends no event when an interface is tagged, and its creation
// event comes before the tag is set, so an interface that keeps the link
// state it was created with may be reported only at the next event, Resync
// or periodic re-list. The registration is per VPP client: run one watcher
// per vppconn.Manager. When two interfaces carry the same tag, the one with
// the lower sw_if_index is reported.
type LinkStateWatcher struct {
	m      *vppconn.Manager
	e      *vppcalls.EventHandler
	push   Pusher
	drift  DriftReporter // nil: no drift reports
	log    *slog.Logger
	resync chan struct{}

	// Owned by Run.
	reported   map[string]string // key -> LinkStateUp / LinkStateDown
	reconnects int               // Manager's Status().Reconnects at the last subscription
	// evented are the interfaces (sw_if_index) that events named since the
	// last list, with whether one said the interface was deleted.
	evented map[uint32]bool
}

// NewLinkStateWatcher returns a watcher of the interfaces of m's VPP,
// reporting to push (the scheduler). Register its messages before m.Run
// (m.AddArea(w.Area())) to have them checked at connect.
func NewLinkStateWatcher(m *vppconn.Manager, push Pusher, log *slog.Logger) *LinkStateWatcher {
	if log == nil {
		log = slog.Default()
	}
	return &LinkStateWatcher{
		m: m, e: vppcalls.NewEventHandler(m), push: push, log: log,
		resync:   make(chan struct{}, 1),
		reported: map[string]string{},
		evented:  map[uint32]bool{},
	}
}

// SetDriftReporter makes the watcher report drift to r (the scheduler):
// see "Drift" in LinkStateWatcher's doc. Call it before Run. Without it the
// watcher reports link states only.
func (w *LinkStateWatcher) SetDriftReporter(r DriftReporter) { w.drift = r }

// Area lists the messages the watcher uses (vppcalls.EventsArea), for
// vppconn's compatibility check at connect. Without it the watcher works
// unchecked.
func (w *LinkStateWatcher) Area() vppconn.Area { return vppcalls.EventsArea() }

// Resync makes the watcher subscribe again and re-list. Call it on every VPP
// (re)connect. It does not wait, and may be called before Run.
func (w *LinkStateWatcher) Resync() {
	select {
	case w.resync <- struct{}{}:
	default: // one is pending already
	}
}

// Run watches until ctx ends; it unsubscribes on the way out. Call it once.
func (w *LinkStateWatcher) Run(ctx context.Context) {
	var sub *vppcalls.Subscription
	closeSub := func() {
		if sub != nil {
			sub.Close(ctx)
			sub = nil
		}
	}
	defer func() {
		// Unsubscribe on the way out, briefly: the connection may be
		// going away too.
		if sub != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linkUnsubscribeTimeout)
			sub.Close(cctx)
			cancel()
		}
	}()

	relist := time.NewTicker(linkRelistInterval)
	defer relist.Stop()
	var retry *time.Timer
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	var retryC <-chan time.Time
	// batch ends the window of a burst of events (batchC nil: no burst).
	batch := time.NewTimer(linkEventWindow)
	batch.Stop()
	defer batch.Stop()
	var batchC <-chan time.Time
	delay := linkRetryMin
	failing := false
	needSync := true
	disabled := false // VPP lacks the messages: wait for a Resync

	for {
		if needSync {
			// The sync lists: it reports the events of a burst too.
			batch.Stop()
			needSync, retryC, batchC, disabled = false, nil, nil, false
			err := w.sync(ctx, &sub, closeSub)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				var ie *vppconn.IncompatibleError
				switch {
				case errors.As(err, &ie):
					w.log.Error("VPP link-state watcher disabled until the next connect", "error", err)
					closeSub()
					disabled = true
				case errors.Is(err, vppconn.ErrNotConnected):
					w.log.Debug("VPP link-state watcher: VPP not connected; waiting", "error", err)
				case !failing:
					w.log.Warn("VPP link-state watcher: subscribing and listing failed; trying again", "error", err)
				default:
					w.log.Debug("VPP link-state watcher: still failing", "error", err, "after", delay)
				}
				failing = true
				if !disabled {
					if retry == nil {
						retry = time.NewTimer(delay)
					} else {
						retry.Reset(delay)
					}
					retryC = retry.C
					delay = min(2*delay, linkRetryMax)
				}
			} else {
				failing, delay = false, linkRetryMin
			}
		}

		var events <-chan govppapi.Message
		if sub != nil {
			events = sub.Events()
		}
		select {
		case <-ctx.Done():
			return
		case <-w.resync:
			needSync, delay = true, linkRetryMin
		case <-retryC:
			needSync = true
		case <-relist.C:
			// A reconnect the watcher was not told of: subscribe again.
			if disabled || retryC != nil {
				break // waiting already
			}
			if sub == nil || w.m.Status().Reconnects != w.reconnects {
				needSync = true
			} else if batchC == nil { // (else the burst's list comes)
				if err := w.list(ctx); err != nil {
					needSync = true
				}
			}
		case ev, ok := <-events:
			if !ok { // closed under the watcher: subscribe again
				closeSub()
				needSync = true
				continue
			}
			// Take what came (the interfaces the events name), and list
			// once when the burst's window ends.
			w.note(ev)
			w.drainEvents(events)
			if batchC == nil {
				batch.Reset(linkEventWindow)
				batchC = batch.C
			}
		case <-batchC:
			batchC = nil
			w.drainEvents(events) // the list reports them too
			if err := w.list(ctx); err != nil {
				needSync = true
			}
		}
	}
}

// drainEvents takes the events that have come (note).
func (w *LinkStateWatcher) drainEvents(events <-chan govppapi.Message) {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			w.note(ev)
		default:
			return
		}
	}
}

// note records the interface an event names, for the drift check of the
// next list (with a drift reporter only).
func (w *LinkStateWatcher) note(ev govppapi.Message) {
	e, ok := ev.(*interfaces.SwInterfaceEvent)
	if !ok || w.drift == nil {
		return
	}
	idx := uint32(e.SwIfIndex)
	w.evented[idx] = w.evented[idx] || e.Deleted
}

// sync subscribes again (the previous subscription closed first) and
// lists.
func (w *LinkStateWatcher) sync(ctx context.Context, sub **vppcalls.Subscription, closeSub func()) error {
	// This sync is what a pending Resync asks for.
	select {
	case <-w.resync:
	default:
	}
	closeSub()
	reconnects := w.m.Status().Reconnects
	if reconnects != w.reconnects {
		// The events of the connection before name interfaces of a VPP
		// that may have restarted since; the resync after the connect
		// compares everything.
		clear(w.evented)
	}
	s, err := w.e.Subscribe(ctx)
	if err != nil {
		return err
	}
	*sub, w.reconnects = s, reconnects
	return w.list(ctx)
}

// list dumps the interfaces, reports the drift of those the events named,
// and pushes the difference with what was reported.
func (w *LinkStateWatcher) list(ctx context.Context) error {
	states, err := w.e.DumpLinkStates(ctx)
	if err != nil {
		return err
	}
	if err := w.reportDrift(states); err != nil {
		return err
	}
	now := make(map[string]string, len(states))
	seen := make(map[string]bool, len(states))
	for _, s := range states {
		if s.Tag == "" || seen[s.Tag] {
			continue
		}
		seen[s.Tag] = true
		v := LinkStateDown
		if s.LinkUp {
			v = LinkStateUp
		}
		now[LinkStateKey(s.Tag, s.LinkUp)] = v
	}
	var gone, changed []string
	for key := range w.reported {
		if _, ok := now[key]; !ok {
			gone = append(gone, key)
		}
	}
	for key, v := range now {
		if old, ok := w.reported[key]; !ok || old != v {
			changed = append(changed, key)
		}
	}
	if len(gone) == 0 && len(changed) == 0 {
		return nil
	}
	sort.Strings(gone)
	sort.Strings(changed)
	kvs := make([]api.KVWithMetadata, 0, len(gone)+len(changed))
	for _, key := range gone {
		kvs = append(kvs, api.KVWithMetadata{Key: key, Origin: api.FromSB})
	}
	for _, key := range changed {
		kvs = append(kvs, api.KVWithMetadata{Key: key, Value: wrapperspb.String(now[key]), Origin: api.FromSB})
	}
	if err := w.push.PushSBNotification(kvs...); err != nil {
		return err
	}
	w.log.Debug("VPP link state reported", "changed", changed, "removed", gone)
	w.reported = now
	return nil
}

// reportDrift reports to the drift reporter the interfaces of the agent's
// that the events since the last list named and that VPP, as states lists
// it, no longer has (at the sw_if_index of their metadata, under their tag)
// or has in another admin state than their value asks for. The interfaces
// are found in the interface descriptor's metadata map: an index it does
// not know (an interface that is not the agent's, one the agent has
// deleted, one of a VPP before a restart) is not reported, and neither
// is a foreign interface. The check is cheap and only says "look": the
// scheduler's refresh (Retrieve) decides what is out of sync, so an
// interface the agent changes meanwhile costs a refresh and nothing else.
func (w *LinkStateWatcher) reportDrift(states []vppcalls.LinkState) error {
	if w.drift == nil || len(w.evented) == 0 {
		return nil
	}
	m := w.drift.GetMetadataMap(InterfaceDescriptorName)
	if m == nil {
		clear(w.evented)
		return nil
	}
	inVPP := make(map[uint32]vppcalls.LinkState, len(states))
	for _, s := range states {
		inVPP[s.SwIfIndex] = s
	}
	indexes := make([]uint32, 0, len(w.evented))
	for idx := range w.evented {
		indexes = append(indexes, idx)
	}
	sort.Slice(indexes, func(i, j int) bool { return indexes[i] < indexes[j] })
	var reports []api.DriftReport
	for _, idx := range indexes {
		name, ok := LookupBySwIfIndex(m, idx)
		if !ok {
			continue
		}
		v, _ := m.GetValue(name)
		md, ok := metadataOf(v)
		if !ok || md.Foreign {
			continue
		}
		s, present := inVPP[idx]
		// What the agent itself last did there (a transaction midway:
		// the metadata is updated when its operations are done). A
		// request of the agent's still waiting for its reply may not be
		// carried out yet: VPP's state is not to be judged now (the
		// change's own event makes the watcher look again).
		last, agents, inFlight := lastChange(m, name, idx)
		switch {
		case inFlight:
		case agents && last.Deleted && (!present || s.Tag != name):
		case agents && !last.Deleted && present && s.Tag == name && s.AdminUp == last.AdminUp:
		case !present || s.Tag != name:
			cause := fmt.Sprintf("deleted in VPP (sw_interface_event for sw_if_index %d)", idx)
			if !w.evented[idx] {
				cause = fmt.Sprintf("VPP has no interface tagged %s at sw_if_index %d any more", name, idx)
			}
			reports = append(reports, api.DriftReport{Key: InterfaceKey(name), Cause: cause})
		case md.Value != nil && s.AdminUp != md.Value.GetEnabled():
			reports = append(reports, api.DriftReport{
				Key:   AdminStateKey(name, md.Value.GetEnabled()),
				Cause: fmt.Sprintf("set admin %s in VPP (sw_interface_event for sw_if_index %d)", adminWord(s.AdminUp), idx),
			})
		}
	}
	if len(reports) > 0 {
		if err := w.drift.ReportDrift(reports...); err != nil {
			return fmt.Errorf("reporting drift: %w", err)
		}
		w.log.Info("VPP interfaces changed outside the agent: reported to the scheduler", "drift", reports)
	}
	clear(w.evented)
	return nil
}

// lastChange is the change the agent last made to interface name at idx,
// when m is the interface descriptor's map (IndexMapFactory's).
func lastChange(m api.MetadataMap, name string, idx uint32) (c agentChange, ok, inFlight bool) {
	if im, isIndex := m.(*indexMap); isIndex {
		return im.lastChange(name, idx)
	}
	return agentChange{}, false, false
}

func adminWord(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

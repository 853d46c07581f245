package ifplugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// LinkObjects are values of another plugin that live on the links of the
// agent's interfaces (l3plugin: routes and ARP entries). The watcher asks
// it which of its values a netlink event concerns and reports them. The
// methods are called from the watcher's goroutine while the scheduler runs:
// they must be safe for concurrent use, must not block and must not call
// the scheduler (they read an index kept by a metadata map). Returning a
// key whose value is in sync costs a refresh and changes nothing, so an
// implementation that cannot tell returns every candidate.
type LinkObjects interface {
	// OnLink returns the keys of the values on link index of namespace
	// ns. They are reported with a link that is deleted or set down
	// outside the agent: the kernel flushes its routes and neighbours
	// without always saying so.
	OnLink(ns nsplugin.Ref, index int) []string
	// RouteDrift returns the keys of the values that a route event of
	// namespace ns (deleted: RTM_DELROUTE) shows out of sync with what the
	// agent applied: none for a route as the agent made it (the echo of
	// its own change) or one it does not hold.
	RouteDrift(ns nsplugin.Ref, route *netlink.Route, deleted bool) []string
	// NeighDrift is RouteDrift for neighbour events.
	NeighDrift(ns nsplugin.Ref, neigh *netlink.Neigh, deleted bool) []string
}

// Barrier is what the watcher waits on before it reports an event that
// looks like drift: the scheduler's TransactionBarrier. Every transaction
// queued before the call has finished when it returns, so the metadata
// maps then say what the agent applied up to the event (its own change
// that caused the event included).
type Barrier interface {
	TransactionBarrier()
}

// Timing of drift detection.
const (
	// A batch of events ends driftQuiet after its last event, or
	// driftMaxWait after its first: a burst (a veth pair made, 200 routes
	// deleted) is one report.
	driftQuiet   = 20 * time.Millisecond
	driftMaxWait = 200 * time.Millisecond
	// nsCheckPeriod: how often the watched namespaces are checked for a
	// deletion (`ip netns del`) or a replacement, which netlink does not
	// tell.
	nsCheckPeriod = time.Second
	// eventBuffer is the receive buffer of each subscription socket, so
	// that a burst of events (a table of routes flushed) is not lost while
	// the watcher reads.
	eventBuffer = 4 << 20
)

// Ranks of causes: a key reported for several events of a batch keeps the
// cause of the highest.
const (
	rankObject = iota // an address, a route, a neighbour
	rankLinkChanged
	rankLinkGone
)

// nsEvent is one netlink event of a namespace, or (lost: why) the news
// that changes of the namespace may not have been seen: every value there
// is reported.
type nsEvent struct {
	ns    nsplugin.Ref
	link  *netlink.LinkUpdate
	addr  *netlink.AddrUpdate
	route *netlink.RouteUpdate
	neigh *netlink.NeighUpdate
	lost  string
}

// driftWatch reports the drift of the agent's values: it subscribes to the
// link, address, route and neighbour events of the agent's namespace and
// of every namespace the agent's interfaces are in (as the interface
// descriptor's metadata map, linkIndex, says), maps each event to the keys
// of the values it concerns, and reports each batch with one ReportDrift.
type driftWatch struct {
	w       *Watcher
	index   *linkIndex
	objects LinkObjects
	events  chan nsEvent
	subs    map[nsplugin.Ref]*nsSub
	// gone are the namespaces of the agent's interfaces found missing
	// (reported once, until they are back).
	gone map[nsplugin.Ref]bool
	// noForce: SO_RCVBUFFORCE refused (no CAP_NET_ADMIN, which the agent
	// needs anyway): the default buffer is used from then on. (The netlink
	// library leaves the socket of that failed subscription open: once.)
	noForce atomic.Bool
	// Events that look like drift wait for a transaction barrier
	// (confirm): suspects, until one starts; confirming, the events of the
	// barrier in flight (barrierDone, nil when none is). gen counts the
	// events of the objects of those events since: a suspect that a later
	// event of its object superseded is not confirmed (the later one is
	// judged on its own), as a link seen under the temporary name the agent
	// makes it with, renamed since.
	suspects, confirming []suspect
	gen                  map[objectID]uint64
	barrierDone          chan struct{}
	barriers             sync.WaitGroup
	// roomKept and roomLast are the room of the last batch of events,
	// emptied, for the next (see batchOfEvents).
	roomKept []keptEvent
	roomLast map[objectID]int32
}

// nsSub is the subscription to the events of one namespace: a goroutine
// holding a handle of the namespace (so a namespace replaced under the same
// name is noticed by its identity).
type nsSub struct {
	id     nsIdentity
	cancel context.CancelFunc
	done   chan struct{}
}

// nsIdentity is the device and inode of a namespace.
type nsIdentity struct{ dev, ino uint64 }

func identityOf(fd int) (nsIdentity, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nsIdentity{}, err
	}
	return nsIdentity{uint64(st.Dev), st.Ino}, nil
}

// nsPath is the file of a namespace that is not the agent's own, as
// nsplugin resolves it.
func nsPath(ns nsplugin.Ref) string {
	switch ns.Type {
	case linuxns.NetNamespace_NSID:
		return filepath.Join(nsplugin.NetnsDir, ns.Reference)
	case linuxns.NetNamespace_PID:
		return "/proc/" + ns.Reference + "/ns/net"
	}
	return ns.Reference
}

// open returns a handle of the namespace (the caller closes it) and its
// identity.
func (d *driftWatch) open(ns nsplugin.Ref) (netns.NsHandle, nsIdentity, error) {
	var h netns.NsHandle
	if ns.IsDefault() {
		// The Manager's handle of the agent's namespace never changes.
		fd, err := d.w.ns.Fd(ns, false)
		if err != nil {
			return 0, nsIdentity{}, err
		}
		dup, err := syscall.Dup(fd)
		if err != nil {
			return 0, nsIdentity{}, fmt.Errorf("the agent's namespace: %w", err)
		}
		syscall.CloseOnExec(dup)
		h = netns.NsHandle(dup)
	} else {
		if err := nsplugin.Check(ns); err != nil {
			return 0, nsIdentity{}, err
		}
		var err error
		if h, err = netns.GetFromPath(nsPath(ns)); err != nil {
			return 0, nsIdentity{}, fmt.Errorf("%s: %w", ns, err)
		}
	}
	id, err := identityOf(int(h))
	if err != nil {
		h.Close()
		return 0, nsIdentity{}, fmt.Errorf("%s: %w", ns, err)
	}
	return h, id, nil
}

// identity returns the identity of the namespace a reference names now.
func identity(ns nsplugin.Ref) (nsIdentity, error) {
	fi, err := os.Stat(nsPath(ns))
	if err != nil {
		return nsIdentity{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nsIdentity{}, fmt.Errorf("%s: no inode", ns)
	}
	return nsIdentity{uint64(st.Dev), st.Ino}, nil
}

// run watches until ctx ends; every goroutine it started has ended when it
// returns.
func (d *driftWatch) run(ctx context.Context) {
	defer d.barriers.Wait()
	defer d.stopAll()
	d.reconcile(ctx)
	tick := time.NewTicker(nsCheckPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.index.changed:
			d.reconcile(ctx)
		case <-tick.C:
			d.reconcile(ctx)
		case ev := <-d.events:
			b := d.batchOfEvents()
			d.add(b, ev)
			d.collect(ctx, b)
			d.settle(b)
			d.doneWith(b)
		case <-d.barrierDone:
			d.confirm()
		}
	}
}

// batchOfEvents returns an empty batch for the next events, with the room
// of the last one's kept events (their slice and map, see doneWith): the
// 10,000 events of a bulk change do not grow new ones at each batch.
func (d *driftWatch) batchOfEvents() *driftBatch {
	b := newDriftBatch()
	if d.roomLast != nil {
		b.kept, b.last = d.roomKept, d.roomLast
		d.roomKept, d.roomLast = nil, nil
	}
	return b
}

// doneWith ends a batch of events: the events it kept are let go at once
// (its room holds none), and its room is kept for the next batch, unless
// the batch used less than a quarter of a room of more than 1,024 objects
// (so that a bulk change's room does not stay for good).
func (d *driftWatch) doneWith(b *driftBatch) {
	used := len(b.kept)
	clear(b.kept)
	clear(b.last)
	if cap(b.kept) > 1024 && used < cap(b.kept)/4 {
		return
	}
	d.roomKept, d.roomLast = b.kept[:0], b.last
}

// settle ends a batch: it reports what needs no check (a namespace lost or
// replaced, events lost) and keeps the last event of each object that
// shows drift now, to be checked again after a barrier.
func (d *driftWatch) settle(b *driftBatch) {
	d.report(b)
	probe := newDriftBatch()
	for _, k := range b.kept {
		if id, ev := k.id, k.ev; d.drift(probe, ev) {
			if d.gen == nil {
				d.gen = map[objectID]uint64{}
			}
			g, ok := d.gen[id]
			if !ok {
				d.gen[id] = 0
			}
			d.suspects = append(d.suspects, suspect{ev: ev, id: id, gen: g})
		}
	}
	if d.barrierDone == nil && len(d.suspects) > 0 {
		d.startBarrier()
	}
}

// startBarrier moves the suspects to confirming and waits for the
// scheduler's transactions queued so far in a goroutine: meanwhile the
// watcher keeps reading events (a bulk change of the agent can take
// seconds, more events than the sockets hold).
func (d *driftWatch) startBarrier() {
	d.confirming, d.suspects = d.suspects, nil
	done := make(chan struct{})
	d.barrierDone = done
	d.barriers.Add(1)
	go func() {
		defer d.barriers.Done()
		d.w.sched.TransactionBarrier()
		close(done)
	}()
}

// confirm reports the events of the barrier that has returned that still
// show drift: an echo of the agent's own change is by now what the
// metadata maps say it applied (or of a value the agent deleted).
func (d *driftWatch) confirm() {
	d.barrierDone = nil
	b := newDriftBatch()
	for _, sus := range d.confirming {
		if d.gen[sus.id] == sus.gen {
			d.drift(b, d.current(sus.ev))
		}
	}
	for _, sus := range d.confirming {
		delete(d.gen, sus.id)
	}
	for _, sus := range d.suspects {
		if _, ok := d.gen[sus.id]; !ok {
			d.gen[sus.id] = sus.gen
		}
	}
	d.confirming = nil
	d.report(b)
	if len(d.suspects) > 0 {
		d.startBarrier()
	}
}

// collect adds the events that follow to the batch, until driftQuiet
// passes without one or driftMaxWait after the first.
func (d *driftWatch) collect(ctx context.Context, b *driftBatch) {
	quiet := time.NewTimer(driftQuiet)
	defer quiet.Stop()
	deadline := time.NewTimer(driftMaxWait)
	defer deadline.Stop()
	for {
		select {
		case ev := <-d.events:
			d.add(b, ev)
			quiet.Reset(driftQuiet)
		case <-quiet.C:
			return
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (d *driftWatch) report(b *driftBatch) {
	reports := b.reports()
	if len(reports) == 0 {
		return
	}
	d.w.log.Debug("drift watcher: reporting", "values", len(reports), "first", reports[0].Key, "cause", reports[0].Cause)
	if err := d.w.sched.ReportDrift(reports...); err != nil && !errors.Is(err, api.ErrClosed) {
		d.w.log.Warn("drift watcher: reporting values out of sync", "values", len(reports), "error", err)
	}
}

// reconcile subscribes in the namespaces of the agent's interfaces (and
// its own) and ends the subscriptions of the others. A namespace watched
// that was deleted (`ip netns del`) or replaced is reported: every value in
// it.
func (d *driftWatch) reconcile(ctx context.Context) {
	want := map[nsplugin.Ref]bool{{}: true}
	for _, ns := range d.index.namespaces() {
		want[ns] = true
	}
	b := newDriftBatch()
	for ns := range d.gone {
		if !want[ns] {
			delete(d.gone, ns)
		}
	}
	for ns, sub := range d.subs {
		if !want[ns] {
			sub.stop()
			delete(d.subs, ns)
			continue
		}
		if ns.IsDefault() {
			continue
		}
		id, err := identity(ns)
		if err == nil && id == sub.id {
			continue
		}
		sub.stop()
		delete(d.subs, ns)
		if err == nil {
			d.addAll(b, ns, fmt.Sprintf("the %s was replaced by another namespace of that name", ns))
		}
	}
	for ns := range want {
		if d.subs[ns] != nil {
			continue
		}
		h, id, err := d.open(ns)
		if err != nil {
			// Deleted (or never watched): its values are reported once;
			// the agent makes it again or drops them. Checked again at
			// the next change or tick.
			if !d.gone[ns] {
				d.gone[ns] = true
				d.addAll(b, ns, fmt.Sprintf("the %s was deleted (%v)", ns, err))
			}
			continue
		}
		delete(d.gone, ns)
		subCtx, cancel := context.WithCancel(ctx)
		sub := &nsSub{id: id, cancel: cancel, done: make(chan struct{})}
		d.subs[ns] = sub
		go func() {
			defer close(sub.done)
			defer h.Close()
			d.subscribe(subCtx, ns, h)
		}()
	}
	d.report(b)
}

func (s *nsSub) stop() {
	s.cancel()
	<-s.done
}

func (d *driftWatch) stopAll() {
	for ns, sub := range d.subs {
		sub.stop()
		delete(d.subs, ns)
	}
}

// subscribe listens to the events of namespace h until ctx ends,
// subscribing again (with a growing delay) after an error. Once subscribed
// it reports every value of the namespace: what changed before (the
// agent's interfaces are made before the namespace is watched, the events
// of an outage are lost) is found by their refresh.
func (d *driftWatch) subscribe(ctx context.Context, ns nsplugin.Ref, h netns.NsHandle) {
	delay := 100 * time.Millisecond
	lost := fmt.Sprintf("changes in the %s before it was watched", ns)
	for {
		err := d.listen(ctx, ns, h, lost)
		if ctx.Err() != nil {
			return
		}
		d.w.log.Warn("drift watcher: netlink subscription ended; subscribing again", "netns", ns.String(), "error", err, "after", delay)
		lost = fmt.Sprintf("netlink events of the %s lost (%v)", ns, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// listen subscribes to the events of the namespace and passes them on
// until ctx ends or a subscription fails. lost is sent once subscribed:
// the events before were not seen.
func (d *driftWatch) listen(ctx context.Context, ns nsplugin.Ref, h netns.NsHandle, lost string) error {
	done := make(chan struct{})
	var started []func() // drain each started subscription's channel
	defer func() {
		// The subscriptions end when done closes their sockets; their
		// goroutines may be blocked sending: read until they close.
		close(done)
		for _, drain := range started {
			drain()
		}
	}()
	errc := make(chan error, 1)
	onErr := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	buf, force := eventBuffer, !d.noForce.Load()
	enter := func(f func() error) error { return d.w.ns.DoAt(h, f) }
	links := make(chan netlink.LinkUpdate, 64)
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{Namespace: &h, ErrorCallback: onErr, ReceiveBufferSize: buf, ReceiveBufferForceSize: force}); err != nil {
		if force && errors.Is(err, syscall.EPERM) {
			d.noForce.Store(true)
		}
		return fmt.Errorf("link events: %w", err)
	}
	started = append(started, func() {
		for range links {
		}
	})
	addrs := make(chan netlink.AddrUpdate, 64)
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{Namespace: &h, ErrorCallback: onErr, ReceiveBufferSize: buf, ReceiveBufferForceSize: force}); err != nil {
		return fmt.Errorf("address events: %w", err)
	}
	started = append(started, func() {
		for range addrs {
		}
	})
	var routes chan netlink.RouteUpdate
	var neighs chan netlink.NeighUpdate
	if d.objects != nil {
		routes = make(chan netlink.RouteUpdate, 256)
		// Not the library's subscriptions: a bulk change brings one
		// notification per route or neighbour, and they allocate 64 KiB
		// for each.
		if err := nlbatch.RouteSubscribe(routes, done, nlbatch.Subscription{Enter: enter, ReceiveBufferSize: buf, ForceReceiveBuffer: force, OnError: onErr}); err != nil {
			return fmt.Errorf("route events: %w", err)
		}
		started = append(started, func() {
			for range routes {
			}
		})
		neighs = make(chan netlink.NeighUpdate, 64)
		if err := nlbatch.NeighSubscribe(neighs, done, nlbatch.Subscription{Enter: enter, ReceiveBufferSize: buf, ForceReceiveBuffer: force, OnError: onErr}); err != nil {
			return fmt.Errorf("neighbour events: %w", err)
		}
		started = append(started, func() {
			for range neighs {
			}
		})
	}
	send := func(ev nsEvent) bool {
		select {
		case d.events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !send(nsEvent{ns: ns, lost: lost}) {
		return nil
	}
	for {
		ev := nsEvent{ns: ns}
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case u, ok := <-links:
			if !ok {
				return errors.New("link subscription closed")
			}
			ev.link = &u
		case u, ok := <-addrs:
			if !ok {
				return errors.New("address subscription closed")
			}
			ev.addr = &u
		case u, ok := <-routes:
			if !ok {
				return errors.New("route subscription closed")
			}
			ev.route = &u
		case u, ok := <-neighs:
			if !ok {
				return errors.New("neighbour subscription closed")
			}
			ev.neigh = &u
		}
		if !send(ev) {
			return nil
		}
	}
}

// driftBatch gathers the reports of a batch, one per key: interface keys
// first (refreshed first, before the routes that use their links), each
// with the cause of its highest-ranked event. It also keeps the last event
// of each kernel object the batch's events named (the state the object
// was left in), in the order of their first events.
type driftBatch struct {
	ifaces, others []api.DriftReport
	ranks          map[string]int
	at             map[string]int // key: index in ifaces or others
	// adds counts the calls of add (a key added again included).
	adds int
	// kept are the last events of the objects, in the order of their
	// first events; last is where each object's is in kept.
	kept []keptEvent
	last map[objectID]int32
}

// keptEvent is the last event of an object in a batch.
type keptEvent struct {
	id objectID
	ev nsEvent
}

func newDriftBatch() *driftBatch {
	return &driftBatch{ranks: map[string]int{}, at: map[string]int{}, last: map[objectID]int32{}}
}

func (b *driftBatch) add(key, cause string, rank int, iface bool) {
	b.adds++
	list := &b.others
	if iface {
		list = &b.ifaces
	}
	if i, seen := b.at[key]; seen {
		if rank > b.ranks[key] {
			(*list)[i].Cause = cause
			b.ranks[key] = rank
		}
		return
	}
	b.at[key] = len(*list)
	b.ranks[key] = rank
	*list = append(*list, api.DriftReport{Key: key, Cause: cause})
}

func (b *driftBatch) reports() []api.DriftReport {
	return append(b.ifaces, b.others...)
}

// keep records ev as the last event of its object.
func (b *driftBatch) keep(id objectID, ev nsEvent) {
	if i, seen := b.last[id]; seen {
		b.kept[i].ev = ev
		return
	}
	b.last[id] = int32(len(b.kept))
	b.kept = append(b.kept, keptEvent{id: id, ev: ev})
}

// objectID names the kernel object of an event (see objectOf):
// comparable, and built without allocating (the kernel sends one event per
// route the agent adds or deletes: 10,000 for a bulk change).
type objectID struct {
	kind objectKind
	ns   nsplugin.Ref
	// link is the link's index: the link's, the address's, the route's
	// outgoing link, the neighbour's.
	link int32
	// ip and bits: the address and its prefix length, the route's
	// destination (bits -1: none, the default route), the neighbour's IP.
	ip   netip.Addr
	bits int16
	// A route's identity in the kernel (with its link and destination).
	family, tos uint8
	table       uint32
	pr          int32 // the metric
}

type objectKind uint8

const (
	objectLink objectKind = iota + 1
	objectAddr
	objectRoute
	objectNeigh
)

// objectOf names the kernel object of an event: a link, an address of a
// link, a route (its identity in the kernel: table, destination, TOS,
// metric; and its link), a neighbour. The zero objectID: none.
func objectOf(ev nsEvent) objectID {
	switch {
	case ev.link != nil:
		return objectID{kind: objectLink, ns: ev.ns, link: int32(ev.link.Attrs().Index)}
	case ev.addr != nil:
		bits, _ := ev.addr.LinkAddress.Mask.Size()
		return objectID{kind: objectAddr, ns: ev.ns, link: int32(ev.addr.LinkIndex), ip: netipOf(ev.addr.LinkAddress.IP), bits: int16(bits)}
	case ev.route != nil:
		// The kernel's types: u8 family and TOS, u32 table and metric
		// (netlink's ints hold them).
		r := &ev.route.Route
		id := objectID{kind: objectRoute, ns: ev.ns, link: int32(r.LinkIndex), bits: -1,
			family: uint8(r.Family), tos: uint8(r.Tos), table: uint32(r.Table), pr: int32(r.Priority)}
		if r.Dst != nil {
			bits, _ := r.Dst.Mask.Size()
			id.ip, id.bits = netipOf(r.Dst.IP), int16(bits)
		}
		return id
	case ev.neigh != nil:
		return objectID{kind: objectNeigh, ns: ev.ns, link: int32(ev.neigh.LinkIndex), ip: netipOf(ev.neigh.IP)}
	}
	return objectID{}
}

// netipOf is ip as a netip.Addr, an IPv4 address in its 4-byte form however
// it came (invalid for none).
func netipOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// add takes one event into the batch: the news that events were lost is
// reported as it is; the others are kept for drift (last per object).
func (d *driftWatch) add(b *driftBatch, ev nsEvent) {
	switch {
	case ev.lost != "":
		d.addAll(b, ev.ns, ev.lost)
	case ev.link != nil, ev.addr != nil, ev.route != nil && d.objects != nil, ev.neigh != nil && d.objects != nil:
		id := objectOf(ev)
		if g, ok := d.gen[id]; ok {
			d.gen[id] = g + 1 // supersedes a suspect of the object
		}
		b.keep(id, ev)
	}
}

// current returns a link event as the link is now (its later events may
// still be on their way: a link the agent made under a temporary name and
// renamed), or as deleted when it is gone; other events as they are.
func (d *driftWatch) current(ev nsEvent) nsEvent {
	if ev.link == nil || ev.link.Header.Type == syscall.RTM_DELLINK {
		return ev
	}
	h, err := d.w.ns.Handle(ev.ns, false)
	if err != nil {
		return ev
	}
	link, err := h.LinkByIndex(ev.link.Attrs().Index)
	now := *ev.link
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if !errors.As(err, &notFound) {
			return ev
		}
		now.Header.Type = syscall.RTM_DELLINK
	} else {
		now.Link = link
	}
	ev.link = &now
	return ev
}

// suspect is an event that looked like drift when its batch ended: the
// object's, and the count of the object's events when it was the last.
type suspect struct {
	ev  nsEvent
	id  objectID
	gen uint64
}

// drift adds to b the keys of the values an event shows out of sync with
// what the agent applied (the metadata maps as they are now), and tells
// whether there were any.
func (d *driftWatch) drift(b *driftBatch, ev nsEvent) bool {
	before := b.adds
	ns := ev.ns
	switch {
	case ev.link != nil:
		d.linkDrift(b, ns, ev.link)
	case ev.addr != nil:
		d.addrDrift(b, ns, ev.addr)
	case ev.route != nil && d.objects != nil:
		u := ev.route
		deleted := u.Type == syscall.RTM_DELROUTE
		keys := d.objects.RouteDrift(ns, &u.Route, deleted)
		if len(keys) == 0 {
			break
		}
		what := "added or replaced"
		if deleted {
			what = "deleted"
		}
		if !deleted {
			what += fmt.Sprintf(" (protocol %s)", u.Protocol)
		}
		cause := fmt.Sprintf("route %s %s in the %s", routeString(&u.Route), what, ns)
		for _, k := range keys {
			b.add(k, cause, rankObject, false)
		}
	case ev.neigh != nil && d.objects != nil:
		u := ev.neigh
		deleted := u.Type == syscall.RTM_DELNEIGH
		keys := d.objects.NeighDrift(ns, &u.Neigh, deleted)
		cause := fmt.Sprintf("neighbour %s changed (lladdr %s, state %s) in the %s", u.IP, u.HardwareAddr, neighState(u.State), ns)
		if deleted {
			cause = fmt.Sprintf("neighbour %s deleted in the %s", u.IP, ns)
		}
		for _, k := range keys {
			b.add(k, cause, rankObject, false)
		}
	}
	return b.adds > before
}

// applied returns the metadata of an interface (ok false: none).
func (d *driftWatch) applied(name string) (Metadata, bool) {
	if md, ok := d.index.GetValue(name); ok {
		return metadataOf(md)
	}
	return Metadata{}, false
}

// addrDrift maps an address event: the interface on the link, unless the
// address is as its value says (listed and there, or not listed and gone;
// on a link the agent did not make, an address it does not list is not
// its business).
func (d *driftWatch) addrDrift(b *driftBatch, ns nsplugin.Ref, u *netlink.AddrUpdate) {
	if u.NewAddr && u.LinkAddress.IP.To4() == nil && u.LinkAddress.IP.IsLinkLocalUnicast() {
		return // the kernel's own fe80:: address, never a value's drift
	}
	name, ok := d.index.interfaceOn(ns, u.LinkIndex)
	if !ok {
		return
	}
	if md, ok := d.applied(name); ok && md.Value != nil {
		v := md.Value
		if v.GetLinkOnly() {
			return
		}
		listed := hasAddress(v, &u.LinkAddress)
		adopted := v.GetType() == linuxif.Interface_EXISTING || v.GetType() == linuxif.Interface_LOOPBACK || v.GetType() == linuxif.Interface_TAP_TO_VPP
		if u.NewAddr == listed || (u.NewAddr && adopted) {
			return
		}
	}
	verb := "added to"
	if !u.NewAddr {
		verb = "removed from"
	}
	b.add(InterfaceKey(name), fmt.Sprintf("address %s %s link %s in the %s", u.LinkAddress.String(), verb, d.hostName(name), ns), rankObject, true)
}

// hasAddress tells whether the value lists the address (same IP and mask).
func hasAddress(v *linuxif.Interface, a *net.IPNet) bool {
	bits, _ := a.Mask.Size()
	for _, cidr := range v.GetIpAddresses() {
		if p, err := netip.ParsePrefix(cidr); err == nil && p.Bits() == bits && net.IP(p.Addr().AsSlice()).Equal(a.IP) {
			return true
		}
	}
	return false
}

// linkAsApplied tells whether a link is as the interface's value says:
// name, admin state, MTU (when the agent keeps it) and MAC (when set).
func linkAsApplied(md Metadata, attrs *netlink.LinkAttrs) bool {
	v := md.Value
	if v == nil || attrs.Name != md.HostName || (attrs.Flags&net.FlagUp != 0) != v.GetEnabled() {
		return false
	}
	if mtu := managedMTU(v); mtu != 0 && uint32(attrs.MTU) != mtu {
		return false
	}
	if mac := v.GetPhysAddress(); mac != "" {
		hw, err := net.ParseMAC(mac)
		if err != nil || !bytes.Equal(hw, attrs.HardwareAddr) {
			return false
		}
	}
	return true
}

// linkDrift maps a link event: the interface on the link unless it is as
// its value says; when the link is gone or down, what the kernel flushed
// with it too.
func (d *driftWatch) linkDrift(b *driftBatch, ns nsplugin.Ref, u *netlink.LinkUpdate) {
	attrs := u.Attrs()
	name, ok := d.index.interfaceOn(ns, attrs.Index)
	if !ok {
		return
	}
	if u.Header.Type == syscall.RTM_DELLINK {
		cause := fmt.Sprintf("link %s deleted from the %s (or moved out)", attrs.Name, ns)
		b.add(InterfaceKey(name), cause, rankLinkGone, true)
		d.addOnLink(b, ns, attrs.Index, cause, rankLinkGone)
		return
	}
	if md, ok := d.applied(name); ok && linkAsApplied(md, attrs) {
		return
	}
	var state []string
	if old := d.hostName(name); old != attrs.Name {
		state = append(state, "renamed from "+old)
	}
	state = append(state, fmt.Sprintf("mtu %d", attrs.MTU))
	up := attrs.Flags&net.FlagUp != 0
	if up {
		state = append(state, "up")
	} else {
		state = append(state, "down")
	}
	cause := fmt.Sprintf("link %s of the %s changed (%s)", attrs.Name, ns, strings.Join(state, ", "))
	b.add(InterfaceKey(name), cause, rankLinkChanged, true)
	if !up {
		d.addOnLink(b, ns, attrs.Index, cause, rankLinkChanged)
	}
}

func (d *driftWatch) addOnLink(b *driftBatch, ns nsplugin.Ref, index int, cause string, rank int) {
	if d.objects == nil {
		return
	}
	for _, k := range d.objects.OnLink(ns, index) {
		b.add(k, cause, rank, false)
	}
}

// addAll reports every value of a namespace: its interfaces and what is on
// their links.
func (d *driftWatch) addAll(b *driftBatch, ns nsplugin.Ref, cause string) {
	for _, l := range d.index.inNamespace(ns) {
		b.add(InterfaceKey(l.name), cause, rankLinkGone, true)
		d.addOnLink(b, ns, l.index, cause, rankLinkGone)
	}
}

// hostName is the kernel name of an interface as its metadata says.
func (d *driftWatch) hostName(name string) string {
	if md, ok := d.index.GetValue(name); ok {
		if m, ok := metadataOf(md); ok {
			return m.HostName
		}
	}
	return name
}

func routeString(r *netlink.Route) string {
	var s strings.Builder
	if r.Dst != nil {
		s.WriteString(r.Dst.String())
	} else {
		s.WriteString("default")
	}
	if r.Gw != nil {
		s.WriteString(" via " + r.Gw.String())
	}
	fmt.Fprintf(&s, " ifindex %d metric %d", r.LinkIndex, r.Priority)
	return s.String()
}

func neighState(state int) string {
	switch {
	case state&netlink.NUD_PERMANENT != 0:
		return "permanent"
	case state&netlink.NUD_FAILED != 0:
		return "failed"
	case state&netlink.NUD_NOARP != 0:
		return "noarp"
	case state == netlink.NUD_NONE:
		return "none"
	}
	return "dynamic"
}

// driftWatch returns the drift watch of a watcher, or nil when the
// interface descriptor (with its linkIndex metadata map) is not
// registered with the scheduler.
func (w *Watcher) driftWatch() *driftWatch {
	index, _ := w.sched.GetMetadataMap(InterfaceDescriptorName).(*linkIndex)
	if index == nil {
		return nil
	}
	return &driftWatch{w: w, index: index, objects: w.objects, events: make(chan nsEvent, 1024), subs: map[nsplugin.Ref]*nsSub{}, gone: map[nsplugin.Ref]bool{}}
}

// errNoIndex is logged when drift detection cannot run.
var errNoIndex = errors.New("the interface descriptor is not registered with the scheduler (register Plugin.Descriptors before Run)")

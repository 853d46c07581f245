package ifplugin

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// Scheduler is what the watcher reports to (the scheduler): the host
// links as notifications, the drift of the agent's values, and the
// interface descriptor's metadata map, through which it knows the links
// and namespaces of the agent's interfaces; its transaction barrier tells
// the echo of the agent's own changes from drift (see the package doc,
// "Drift").
type Scheduler interface {
	PushSBNotification(notifications ...api.KVWithMetadata) error
	ReportDrift(reports ...api.DriftReport) error
	GetMetadataMap(descriptor string) api.MetadataMap
	Barrier
}

// Watcher watches the kernel for the scheduler, in two ways.
//
// Host links: it turns the links of the agent's namespace, and their
// addresses, into OBTAINED values HostNameKey(name) and
// HostAddressKey(name, cidr), so that values waiting for a host link
// (EXISTING interfaces, AF-Packet) are applied when it appears and taken
// down when it goes. It subscribes to link and address events; on each
// burst of events it lists the links and addresses again and reports the
// difference with what it reported before, so a missed or reordered event
// cannot leave a wrong state. After a subscription error it subscribes
// again (with a growing delay) and re-lists.
//
// Drift: it subscribes to the link and address events (and, with
// SetLinkObjects, the route and neighbour events) of the agent's namespace
// and of every namespace the agent's interfaces are in, and reports the
// values each batch of events concerns with one ReportDrift (see the
// package doc, "Drift").
type Watcher struct {
	ns       *nsplugin.Manager
	sched    Scheduler
	log      *slog.Logger
	objects  LinkObjects
	reported map[string]proto.Message
	// synced is closed after the first report.
	synced chan struct{}
}

// NewWatcher returns a watcher reporting to the scheduler, which must have
// the descriptors of a Plugin registered before Run (drift detection reads
// the interface descriptor's metadata map).
func NewWatcher(ns *nsplugin.Manager, sched Scheduler, log *slog.Logger) *Watcher {
	if log == nil {
		log = slog.Default()
	}
	return &Watcher{ns: ns, sched: sched, log: log, reported: map[string]proto.Message{}, synced: make(chan struct{})}
}

// SetLinkObjects makes the watcher report the drift of values on the
// agent's links too: it subscribes to route and neighbour events and asks
// o which values an event concerns (the daemon passes the l3plugin.Plugin,
// for routes and ARP entries). Call before Run.
func (w *Watcher) SetLinkObjects(o LinkObjects) { w.objects = o }

// Synced is closed once the first state of the host links is reported.
func (w *Watcher) Synced() <-chan struct{} { return w.synced }

// WatcherDescriptor describes the keys the watcher reports: it has no CRUD
// (the values are OBTAINED), it names them in dumps and graphs.
func WatcherDescriptor() *api.KVDescriptor {
	return &api.KVDescriptor{
		Name:        WatcherDescriptorName,
		KeySelector: func(key string) bool { return strings.HasPrefix(key, hostNamePrefix) },
	}
}

// Run watches until ctx ends; every goroutine it starts has ended when it
// returns.
func (w *Watcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if d := w.driftWatch(); d != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.run(ctx)
		}()
	} else {
		w.log.Warn("drift watcher: not running", "error", errNoIndex)
	}
	w.watchHostLinks(ctx)
}

// watchHostLinks reports the host links until ctx ends.
func (w *Watcher) watchHostLinks(ctx context.Context) {
	delay := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := w.watch(ctx, &first)
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("interface watcher: subscription ended; subscribing again", "error", err, "after", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

func (w *Watcher) watch(ctx context.Context, first *bool) error {
	done := make(chan struct{})
	var started []func()
	defer func() {
		// The subscriptions end when done closes their sockets; their
		// goroutines may be blocked sending: read until they close.
		close(done)
		for _, drain := range started {
			drain()
		}
	}()
	errc := make(chan error, 2)
	links := make(chan netlink.LinkUpdate, 64)
	addrs := make(chan netlink.AddrUpdate, 64)
	onErr := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{ErrorCallback: onErr}); err != nil {
		return fmt.Errorf("link subscription: %w", err)
	}
	started = append(started, func() {
		for range links {
		}
	})
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{ErrorCallback: onErr}); err != nil {
		return fmt.Errorf("address subscription: %w", err)
	}
	started = append(started, func() {
		for range addrs {
		}
	})
	// Subscribed first, listed after: nothing falls in between.
	if err := w.resync(); err != nil {
		return err
	}
	if *first {
		*first = false
		close(w.synced)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case _, ok := <-links:
			if !ok {
				return fmt.Errorf("link subscription closed")
			}
		case _, ok := <-addrs:
			if !ok {
				return fmt.Errorf("address subscription closed")
			}
		}
		// Take the whole burst, then list once.
		drain(links, addrs)
		if err := w.resync(); err != nil {
			return err
		}
	}
}

func drain(links chan netlink.LinkUpdate, addrs chan netlink.AddrUpdate) {
	for {
		select {
		case <-links:
		case <-addrs:
		default:
			return
		}
	}
}

// resync lists the links and addresses and reports the difference.
func (w *Watcher) resync() error {
	h, err := w.ns.Handle(nsplugin.Ref{}, false)
	if err != nil {
		return err
	}
	links, err := dump(h.LinkList)
	if err != nil {
		return fmt.Errorf("listing links: %w", err)
	}
	addrs, err := dump(func() ([]netlink.Addr, error) { return h.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return fmt.Errorf("listing addresses: %w", err)
	}
	now := map[string]proto.Message{}
	names := map[int]string{}
	for _, l := range links {
		a := l.Attrs()
		names[a.Index] = a.Name
		now[HostNameKey(a.Name)] = &linuxif.Interface{Name: a.Name, HostIfName: a.Name, Enabled: a.Flags&net.FlagUp != 0,
			Mtu: uint32(a.MTU), PhysAddress: a.HardwareAddr.String()}
	}
	for _, a := range addrs {
		name, ok := names[a.LinkIndex]
		if !ok || a.IPNet == nil {
			continue
		}
		cidr := a.IPNet.String()
		now[HostAddressKey(name, cidr)] = &linuxif.Interface{Name: name, HostIfName: name, IpAddresses: []string{cidr}}
	}
	var changes []api.KVWithMetadata
	for key, v := range now {
		if old, ok := w.reported[key]; !ok || !proto.Equal(old, v) {
			changes = append(changes, api.KVWithMetadata{Key: key, Value: v, Origin: api.FromSB})
		}
	}
	for key := range w.reported {
		if _, ok := now[key]; !ok {
			changes = append(changes, api.KVWithMetadata{Key: key, Origin: api.FromSB})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	if err := w.sched.PushSBNotification(changes...); err != nil {
		return fmt.Errorf("reporting host links: %w", err)
	}
	w.reported = now
	return nil
}

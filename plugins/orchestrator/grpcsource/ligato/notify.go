package ligato

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
	ligatovpp "github.com/netagent-io/netagent/proto/ligato/vpp"
	ligatovppif "github.com/netagent-io/netagent/proto/ligato/vpp/interfaces"
)

// watchBuffer is the channel buffer of the notifier's status watch; the
// scheduler's watcher coalesces behind it.
const watchBuffer = 64

// notification is one kept notification and its index.
type notification struct {
	idx uint32
	msg *ligatocfg.Notification
}

// notifier turns the statuses of the agent's VPP interfaces into the
// original's interface notifications, and keeps the most recent ones,
// numbered, for Notify (see the package documentation).
//
// One goroutine (run) follows the scheduler's status watch of the VPP
// interface values (their admin-state values are derived from them) and
// of the link-state values. For each interface a burst of statuses
// names, it reads the settled state from the scheduler (the link-state
// keys come and go in pairs: the statuses alone would show a moment with
// neither) and notifies it when it differs from the one notified last.
type notifier struct {
	sched  api.KVScheduler
	lookup ifplugin.InterfaceLookup
	now    func() time.Time

	// last is the state notified last per interface (run only).
	last map[string]*ligatovppif.InterfaceState

	mu    sync.Mutex
	ring  []notification // the kept ones, oldest at head
	head  int
	count int
	next  uint32        // index of the next notification
	wake  chan struct{} // closed (and replaced) at each notification

	quit chan struct{}
	done chan struct{}
}

// startNotifier starts following the interfaces of s, keeping size
// notifications. The states at start are taken as known: only changes
// from them are notified.
func startNotifier(s api.KVScheduler, size int, now func() time.Time) *notifier {
	n := &notifier{
		sched: s, lookup: ifplugin.SchedulerInterfaces(s), now: now,
		last: map[string]*ligatovppif.InterfaceState{},
		ring: make([]notification, size), wake: make(chan struct{}),
		quit: make(chan struct{}), done: make(chan struct{}),
	}
	ch := make(chan *api.BaseValueStatus, watchBuffer)
	stopWatch := s.WatchValueStatus(ch, func(key string) bool { return interfaceOf(key) != "" })
	// After the watch started: a change between the two is seen by both,
	// and notified once at most.
	if kvs, err := s.DumpValuesByKeyPrefix("vpp/interface/", api.CachedView); err == nil {
		for _, kv := range kvs {
			if name, _, ok := ifplugin.ParseLinkStateKey(kv.Key); ok {
				if st := n.current(name); st != nil {
					n.last[name] = st
				}
			}
		}
	}
	go n.run(ch, stopWatch)
	return n
}

// interfaceOf returns the logical name of the VPP interface of a VPP
// interface key or a link-state key, "" for other keys.
func interfaceOf(key string) string {
	if name, ok := strings.CutPrefix(key, models.VPPInterface.KeyPrefix); ok {
		return name
	}
	if name, _, ok := ifplugin.ParseLinkStateKey(key); ok {
		return name
	}
	return ""
}

// stop ends run and the watch.
func (n *notifier) stop() {
	close(n.quit)
	<-n.done
}

func (n *notifier) run(ch <-chan *api.BaseValueStatus, stopWatch func()) {
	defer close(n.done)
	defer stopWatch()
	for {
		var st *api.BaseValueStatus
		select {
		case <-n.quit:
			return
		case st = <-ch:
		}
		names := map[string]bool{interfaceOf(st.GetValue().GetKey()): true}
	burst:
		for {
			select {
			case st = <-ch:
				names[interfaceOf(st.GetValue().GetKey())] = true
			default:
				break burst
			}
		}
		sorted := make([]string, 0, len(names))
		for name := range names {
			sorted = append(sorted, name)
		}
		sort.Strings(sorted)
		for _, name := range sorted {
			n.evaluate(name)
		}
	}
}

// evaluate notifies the state of an interface if it changed.
func (n *notifier) evaluate(name string) {
	prev := n.last[name]
	cur := n.current(name)
	if cur == nil {
		if prev != nil {
			delete(n.last, name)
			n.add(&ligatovppif.InterfaceState{
				Name: name, InternalName: prev.GetInternalName(), Type: prev.GetType(), IfIndex: prev.GetIfIndex(),
				AdminStatus: ligatovppif.InterfaceState_DELETED, OperStatus: ligatovppif.InterfaceState_DELETED,
				PhysAddress: prev.GetPhysAddress(), Mtu: prev.GetMtu(),
			})
		}
		return
	}
	if prev != nil {
		// What the scheduler no longer has, or not yet (the value and the
		// metadata of an interface being deleted or re-created), is as
		// notified last.
		if cur.GetAdminStatus() == ligatovppif.InterfaceState_UNKNOWN_STATUS {
			cur.AdminStatus = prev.GetAdminStatus()
		}
		if cur.GetInternalName() == "" {
			cur.InternalName, cur.IfIndex = prev.GetInternalName(), prev.GetIfIndex()
			cur.Type, cur.PhysAddress, cur.Mtu = prev.GetType(), prev.GetPhysAddress(), prev.GetMtu()
		}
		if prev.GetAdminStatus() == cur.GetAdminStatus() && prev.GetOperStatus() == cur.GetOperStatus() &&
			prev.GetIfIndex() == cur.GetIfIndex() {
			return
		}
	}
	n.last[name] = cur
	n.add(cur)
}

// current returns the state of an interface as the scheduler has it now:
// nil when VPP does not list it (no link-state value); admin status
// UNKNOWN_STATUS without an applied admin-state value, no internal name
// nor index without the interface's metadata.
func (n *notifier) current(name string) *ligatovppif.InterfaceState {
	up := n.obtained(ifplugin.LinkStateKey(name, true))
	if !up && !n.obtained(ifplugin.LinkStateKey(name, false)) {
		return nil
	}
	st := &ligatovppif.InterfaceState{Name: name, OperStatus: ligatovppif.InterfaceState_DOWN}
	if up {
		st.OperStatus = ligatovppif.InterfaceState_UP
	}
	for _, d := range n.sched.GetValueStatus(ifplugin.InterfaceKey(name)).GetDerivedValues() {
		iface, adminUp, ok := ifplugin.ParseAdminStateKey(d.GetKey())
		if !ok || iface != name || d.GetState() != api.ValueStateConfigured {
			continue
		}
		st.AdminStatus = ligatovppif.InterfaceState_DOWN
		if adminUp {
			st.AdminStatus = ligatovppif.InterfaceState_UP
		}
	}
	if md, ok := n.lookup(context.Background(), name); ok {
		st.InternalName, st.IfIndex = md.InternalName, md.SwIfIndex
		st.Type, st.PhysAddress, st.Mtu = md.Value.GetType(), md.Value.GetPhysAddress(), md.Value.GetMtu()
	}
	return st
}

func (n *notifier) obtained(key string) bool {
	return n.sched.GetValueStatus(key).GetValue().GetState() == api.ValueStateObtained
}

// add numbers and keeps a notification of st, and wakes the streams.
func (n *notifier) add(st *ligatovppif.InterfaceState) {
	st.LastChange = n.now().Unix()
	msg := &ligatocfg.Notification{Notification: &ligatocfg.Notification_VppNotification{
		VppNotification: &ligatovpp.Notification{Interface: &ligatovppif.InterfaceNotification{
			Type: ligatovppif.InterfaceNotification_UPDOWN, State: st,
		}},
	}}
	n.mu.Lock()
	defer n.mu.Unlock()
	entry := notification{idx: n.next, msg: msg}
	if n.count < len(n.ring) {
		n.ring[(n.head+n.count)%len(n.ring)] = entry
		n.count++
	} else {
		n.ring[n.head] = entry
		n.head = (n.head + 1) % len(n.ring)
	}
	n.next++
	close(n.wake)
	n.wake = make(chan struct{})
}

// since returns the kept notifications from idx on (from the oldest kept
// when idx is older than it or beyond the next index), the channel closed
// at the next notification, and the next index.
func (n *notifier) since(idx uint32) ([]notification, <-chan struct{}, uint32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	oldest := n.next - uint32(n.count)
	if idx < oldest || idx > n.next {
		idx = oldest
	}
	out := make([]notification, 0, n.next-idx)
	for i := idx; i != n.next; i++ {
		out = append(out, n.ring[(n.head+int(i-oldest))%len(n.ring)])
	}
	return out, n.wake, n.next
}

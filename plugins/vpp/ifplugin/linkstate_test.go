package ifplugin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/memclnt"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vpprun"
	"github.com/netagent-io/netagent/tests/vppsim"
)

var lsQuiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// lsDeadline bounds every wait of these tests.
const lsDeadline = 10 * time.Second

// lsEnv is the test's VPP (vpptest.Start: a vppsim, or a real VPP), a
// vppconn.Manager of its own connected to it that calls the watcher's
// Resync on every connect (as the daemon does), a scheduler with the
// interface plugin's descriptors, and a LinkStateWatcher reporting to the
// scheduler through a recorder (link states, and drift with
// lsOptions.drift).
type lsEnv struct {
	t        *testing.T
	vpp      *vpptest.VPP
	sim      *vppsim.Sim // nil on a real VPP
	m        *vppconn.Manager
	s        *kvscheduler.Scheduler
	w        *ifplugin.LinkStateWatcher
	rec      *lsRecorder
	connects chan bool // one per connect: VPP restarted
}

// lsOptions vary an lsEnv.
type lsOptions struct {
	sim vppsim.Options
	// log is the watcher's (nil: none).
	log *slog.Logger
	// drift makes the watcher report drift to the scheduler (through the
	// recorder), and registers the descriptors of l3plugin and l2plugin
	// (routes, bridge domains) after the interfaces'.
	drift bool
	// reportOnly is the scheduler's DriftReportOnly.
	reportOnly bool
}

func newLSEnv(t *testing.T, opts vppsim.Options, watcherLog *slog.Logger) *lsEnv {
	t.Helper()
	return newLSEnvWith(t, lsOptions{sim: opts, log: watcherLog})
}

func newLSEnvWith(t *testing.T, opts lsOptions) *lsEnv {
	t.Helper()
	if opts.log == nil {
		opts.log = lsQuiet
	}
	e := &lsEnv{t: t, connects: make(chan bool, 16)}
	e.vpp = vpptest.Start(t, vpptest.Options{Sim: opts.sim})
	e.sim = e.vpp.Sim
	e.m = vppconn.New(vppconn.Options{
		Socket:      e.vpp.Socket,
		CallTimeout: 5 * time.Second,
		Log:         lsQuiet,
		OnConnect: func(restarted, _ bool) {
			e.w.Resync()
			select {
			case e.connects <- restarted:
			default:
			}
		},
	})
	p := ifplugin.New(e.m, lsQuiet)
	for _, a := range p.Areas() {
		e.m.AddArea(a)
	}
	e.s = kvscheduler.New(kvscheduler.Options{Logger: lsQuiet, DriftReportOnly: opts.reportOnly})
	if err := e.s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.s.Close)
	if opts.drift {
		l3 := l3plugin.New(e.m, ifplugin.SchedulerInterfaces(e.s), lsQuiet)
		l3.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(e.s))
		l2 := l2plugin.New(e.m, ifplugin.SchedulerInterfaces(e.s), lsQuiet)
		l2.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(e.s))
		e.m.AddArea(l3.Area())
		e.m.AddArea(l2.Area())
		if err := e.s.RegisterKVDescriptor(append(l3.Descriptors(), l2.Descriptors()...)...); err != nil {
			t.Fatal(err)
		}
	}
	e.rec = &lsRecorder{t: t, s: e.s}
	e.w = ifplugin.NewLinkStateWatcher(e.m, e.rec, opts.log)
	if opts.drift {
		e.w.SetDriftReporter(e.rec)
	}
	e.m.AddArea(e.w.Area())

	// The watcher starts before VPP is connected: it waits for the
	// connect (Resync).
	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	go func() { defer close(wdone); e.w.Run(wctx) }()
	mctx, mcancel := context.WithCancel(context.Background())
	mdone := make(chan struct{})
	go func() { defer close(mdone); e.m.Run(mctx) }()
	t.Cleanup(func() { mcancel(); <-mdone })
	t.Cleanup(func() { wcancel(); <-wdone })

	e.waitConnect(false)
	if st := e.m.Status(); st.Disabled[vppcalls.AreaName] != nil {
		t.Fatalf("interfaces disabled at connect: %v", st.Disabled)
	}
	return e
}

func (e *lsEnv) waitConnect(wantRestarted bool) {
	e.t.Helper()
	deadline := time.After(lsDeadline)
	for {
		select {
		case restarted := <-e.connects:
			if restarted == wantRestarted {
				return
			}
		case <-deadline:
			e.t.Fatalf("VPP not connected (restarted=%v) within %v: %+v", wantRestarted, lsDeadline, e.m.Status())
		}
	}
}

func (e *lsEnv) commit(vs ...*vppif.Interface) {
	e.t.Helper()
	txn := e.s.StartNBTransaction()
	for _, v := range vs {
		txn.SetValue(ifplugin.InterfaceKey(v.GetName()), v)
	}
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		e.t.Fatalf("commit: %v", err)
	}
}

func (e *lsEnv) del(names ...string) {
	e.t.Helper()
	txn := e.s.StartNBTransaction()
	for _, n := range names {
		txn.SetValue(ifplugin.InterfaceKey(n), nil)
	}
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		e.t.Fatalf("delete: %v", err)
	}
}

// vppLinks describes VPP's interfaces for a failure message, as the
// watcher lists them: "<VPP name> tag=<tag> link=<up>".
func (e *lsEnv) vppLinks() string {
	states, err := vppcalls.NewEventHandler(e.m).DumpLinkStates(context.Background())
	if err != nil {
		return "VPP's interfaces not listed: " + err.Error()
	}
	var out []string
	for _, s := range states {
		out = append(out, fmt.Sprintf("%s tag=%s link=%v", s.Name, s.Tag, s.LinkUp))
	}
	return "VPP has " + strings.Join(out, ", ")
}

// waitKey waits on the scheduler's status channel (lsDeadline at most)
// until key is OBTAINED (present) or gone.
func (e *lsEnv) waitKey(key string, present bool) {
	e.t.Helper()
	ok := func(st *api.ValueStatus) bool {
		if present {
			return st.GetState() == api.ValueStateObtained
		}
		return st.GetState() == api.ValueStateRemoved || st.GetState() == api.ValueStateNonexistent
	}
	ch := make(chan *api.BaseValueStatus, 16)
	stop := e.s.WatchValueStatus(ch, func(k string) bool { return k == key })
	defer stop()
	if ok(e.s.GetValueStatus(key).GetValue()) {
		return
	}
	deadline := time.After(lsDeadline)
	for {
		select {
		case st := <-ch:
			if ok(st.GetValue()) {
				return
			}
		case <-deadline:
			e.t.Fatalf("%s: want present=%v within %v, status %v; %s", key, present, lsDeadline,
				e.s.GetValueStatus(key), e.vppLinks())
		}
	}
}

// linkKeys returns the link-state values of an interface in the
// scheduler: key -> value.
func (e *lsEnv) linkKeys(name string) map[string]string {
	e.t.Helper()
	prefix := strings.TrimSuffix(ifplugin.LinkStateKey(name, true), "UP")
	kvs, err := e.s.DumpValuesByKeyPrefix(prefix, api.CachedView)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range kvs {
		sv, isString := kv.Value.(*wrapperspb.StringValue)
		if !isString {
			e.t.Fatalf("%s: value %T %v", kv.Key, kv.Value, kv.Value)
		}
		out[kv.Key] = sv.GetValue()
	}
	return out
}

// waitLink waits until the link state of the interface is reported as up
// or down, and checks that it is the only link-state key of the interface.
func (e *lsEnv) waitLink(name string, up bool) {
	e.t.Helper()
	key := ifplugin.LinkStateKey(name, up)
	e.waitKey(key, true)
	want := map[string]string{key: map[bool]string{true: "UP", false: "DOWN"}[up]}
	if got := e.linkKeys(name); !equalMaps(got, want) {
		e.t.Fatalf("link state of %s: %v, want %v", name, got, want)
	}
	if st := e.s.GetValueStatus(key).GetValue(); st.GetState() != api.ValueStateObtained {
		e.t.Fatalf("%s: %v", key, st)
	}
}

// waitNoLink waits until the interface has no link-state key.
func (e *lsEnv) waitNoLink(name string) {
	e.t.Helper()
	e.waitKey(ifplugin.LinkStateKey(name, true), false)
	e.waitKey(ifplugin.LinkStateKey(name, false), false)
	if got := e.linkKeys(name); len(got) != 0 {
		e.t.Fatalf("link state of %s left: %v", name, got)
	}
}

// allLinkKeys lists every link-state key in the scheduler, sorted.
func (e *lsEnv) allLinkKeys() []string {
	e.t.Helper()
	kvs, err := e.s.DumpValuesByKeyPrefix("vpp/interface/", api.CachedView)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, kv := range kvs {
		if _, _, ok := ifplugin.ParseLinkStateKey(kv.Key); ok {
			out = append(out, kv.Key)
		}
	}
	slices.Sort(out)
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// lsRecorder passes the watcher's notifications on to the scheduler and
// records them ("+key=value", "-key"), checking that every one is a
// southbound value; so it does with the drift reports.
type lsRecorder struct {
	t      *testing.T
	s      api.KVScheduler
	mu     sync.Mutex
	pushes [][]string
	drift  []api.DriftReport
	gate   *lsGate
}

func (r *lsRecorder) ReportDrift(reports ...api.DriftReport) error {
	r.mu.Lock()
	r.drift = append(r.drift, reports...)
	r.mu.Unlock()
	return r.s.ReportDrift(reports...)
}

func (r *lsRecorder) GetMetadataMap(descriptor string) api.MetadataMap {
	return r.s.GetMetadataMap(descriptor)
}

// driftReports returns the drift reports so far.
func (r *lsRecorder) driftReports() []api.DriftReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.drift)
}

// lsGate holds the watcher in a push: entered is closed when the push
// comes, the push goes on at open (at the end of the test at the latest).
type lsGate struct {
	entered, release chan struct{}
	once             sync.Once
}

func (g *lsGate) open() { g.once.Do(func() { close(g.release) }) }

// hold makes the next push wait for the gate's opening.
func (r *lsRecorder) hold() *lsGate {
	g := &lsGate{entered: make(chan struct{}), release: make(chan struct{})}
	r.t.Cleanup(g.open)
	r.mu.Lock()
	r.gate = g
	r.mu.Unlock()
	return g
}

func (r *lsRecorder) PushSBNotification(kvs ...api.KVWithMetadata) error {
	var p []string
	for _, kv := range kvs {
		if kv.Origin != api.FromSB {
			r.t.Errorf("%s pushed with origin %v", kv.Key, kv.Origin)
		}
		if kv.Value == nil {
			p = append(p, "-"+kv.Key)
			continue
		}
		sv, _ := kv.Value.(*wrapperspb.StringValue)
		p = append(p, "+"+kv.Key+"="+sv.GetValue())
	}
	r.mu.Lock()
	r.pushes = append(r.pushes, p)
	g := r.gate
	r.gate = nil
	r.mu.Unlock()
	if g != nil {
		close(g.entered)
		<-g.release
	}
	return r.s.PushSBNotification(kvs...)
}

func (r *lsRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pushes)
}

func (r *lsRecorder) since(n int) [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pushes[n:])
}

func lsLoop(name string) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true}
}

// TestLinkStateWatcherWithoutEvents: a VPP without want_interface_events
// disables the watcher (its area), not the interfaces.
func TestLinkStateWatcherWithoutEvents(t *testing.T) {
	vpptest.NeedSim(t, "a VPP without want_interface_events (Options.Omit)")
	errs := make(chan string, 16)
	e := newLSEnv(t, vppsim.Options{Omit: []string{"want_interface_events"}}, slog.New(lsErrors{errs}))
	select {
	case msg := <-errs:
		if !strings.Contains(msg, "disabled") {
			t.Errorf("logged %q", msg)
		}
	case <-time.After(lsDeadline):
		t.Fatalf("the watcher logged no error within %v", lsDeadline)
	}
	if st := e.m.Status(); st.Disabled[vppcalls.EventsAreaName] == nil {
		t.Errorf("area %s not disabled: %+v", vppcalls.EventsAreaName, st)
	}
	e.commit(lsLoop("noev"))
	if st := e.s.GetValueStatus(ifplugin.InterfaceKey("noev")).GetValue(); st.GetState() != api.ValueStateConfigured {
		t.Errorf("interface: %v", st)
	}
	if got := e.allLinkKeys(); len(got) != 0 {
		t.Errorf("link-state keys %v", got)
	}
}

// lsErrors is a slog handler sending the messages of errors to a channel.
type lsErrors struct{ ch chan<- string }

func (h lsErrors) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h lsErrors) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.ch <- r.Message:
	default:
	}
	return nil
}
func (h lsErrors) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h lsErrors) WithGroup(string) slog.Handler      { return h }

// TestLinkStateWatcher: link up and down, only differences pushed, untagged
// and deleted interfaces. (TestLinkStateMemifPeer changes a link on a real
// VPP too, and restarts VPP.)
func TestLinkStateWatcher(t *testing.T) {
	vpptest.NeedSim(t, "sets the carrier of loopbacks (SetLinkUp)")
	e := newLSEnv(t, vppsim.Options{}, lsQuiet)

	// Loopbacks set admin up have link; nothing else is reported (local0
	// has no tag).
	e.commit(lsLoop("ls1"), lsLoop("ls2"))
	e.waitLink("ls1", true)
	e.waitLink("ls2", true)
	if got, want := e.allLinkKeys(), []string{ifplugin.LinkStateKey("ls1", true), ifplugin.LinkStateKey("ls2", true)}; !slices.Equal(got, want) {
		t.Errorf("link-state keys %v, want %v", got, want)
	}
	idx1 := e.vpp.SwIfIndex("ls1")

	// The carrier goes: DOWN replaces UP, and only ls1 is reported.
	mark := e.rec.count()
	if err := e.sim.SetLinkUp(idx1, false); err != nil {
		t.Fatal(err)
	}
	e.waitLink("ls1", false)
	e.waitLink("ls2", true)
	want := [][]string{{"-" + ifplugin.LinkStateKey("ls1", true), "+" + ifplugin.LinkStateKey("ls1", false) + "=DOWN"}}
	if got := e.rec.since(mark); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("pushed %q, want %q", got, want)
	}

	// And comes back.
	if err := e.sim.SetLinkUp(idx1, true); err != nil {
		t.Fatal(err)
	}
	e.waitLink("ls1", true)

	// A Resync without change pushes nothing: only the next real change
	// is pushed.
	mark = e.rec.count()
	e.w.Resync()
	idx2 := e.vpp.SwIfIndex("ls2")
	if err := e.sim.SetLinkUp(idx2, false); err != nil {
		t.Fatal(err)
	}
	e.waitLink("ls2", false)
	want = [][]string{{"-" + ifplugin.LinkStateKey("ls2", true), "+" + ifplugin.LinkStateKey("ls2", false) + "=DOWN"}}
	if got := e.rec.since(mark); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("pushed %q, want %q", got, want)
	}
	if err := e.sim.SetLinkUp(idx2, true); err != nil {
		t.Fatal(err)
	}
	e.waitLink("ls2", true)

	// Someone removes the tag of an interface: it is not the agent's any
	// more, and goes at the next re-list (the next event).
	e.commit(lsLoop("ls3"))
	e.waitLink("ls3", true)
	idx3 := e.vpp.SwIfIndex("ls3")
	if err := vppcalls.NewHandler(e.m).SetTag(context.Background(), idx3, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetLinkUp(idx3, false); err != nil {
		t.Fatal(err)
	}
	e.waitNoLink("ls3")
	e.del("ls3") // the interface is gone for the agent: a success

	// A deleted interface loses its link-state keys; the other keeps its.
	e.del("ls1")
	e.waitNoLink("ls1")
	e.waitLink("ls2", true)
	if got, want := e.allLinkKeys(), []string{ifplugin.LinkStateKey("ls2", true)}; !slices.Equal(got, want) {
		t.Errorf("link-state keys %v, want %v", got, want)
	}
}

// TestLinkStateMemifPeer: the link of a memif master is up while a peer
// is connected, on vppsim and on a real VPP (a slave in a second VPP): DOWN
// without a peer, UP while one is connected, each change one push of the
// difference. After a VPP restart the watcher subscribes again (on the
// connect), reports the interface gone, and once a downstream resync has
// created it again, its link state and its changes, which come on the new
// subscription.
func TestLinkStateMemifPeer(t *testing.T) {
	dir := t.TempDir() // first: removed after both VPPs let go of the socket
	e := newLSEnv(t, vppsim.Options{}, lsQuiet)
	if !e.vpp.CanRestart() {
		t.Skipf("restarts VPP and starts a second one for the peer: not the user's VPP at %s", e.vpp.Socket)
	}
	const id = 5
	socket := filepath.Join(dir, "ls.sock") // absolute: both VPPs take it as it is
	peer := e.newMemifPeer("lsm", socket, id)
	upKey, downKey := ifplugin.LinkStateKey("lsm", true), ifplugin.LinkStateKey("lsm", false)
	wentUp := []string{"-" + downKey, "+" + upKey + "=UP"}
	wentDown := []string{"-" + upKey, "+" + downKey + "=DOWN"}
	pushed := func(mark int, want ...[]string) {
		t.Helper()
		if got := e.rec.since(mark); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("pushed %q, want %q", got, want)
		}
	}

	// Without a peer the link is down (reported at the event of the admin
	// up: VPP sends none for a creation).
	mark := e.rec.count()
	e.commit(&vppif.Interface{Name: "lsm", Type: vppif.Interface_MEMIF, Enabled: true,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: id, SocketFilename: socket}}})
	e.waitLink("lsm", false)
	pushed(mark, []string{"+" + downKey + "=DOWN"})

	// The peer connects: UP replaces DOWN. A Resync with nothing changed
	// pushes nothing.
	mark = e.rec.count()
	e.w.Resync()
	peer.connect()
	e.waitLink("lsm", true)
	pushed(mark, wentUp)

	// The peer goes, and comes back.
	mark = e.rec.count()
	peer.disconnect()
	e.waitLink("lsm", false)
	peer.connect()
	e.waitLink("lsm", true)
	pushed(mark, wentDown, wentUp)

	// VPP restarts empty: the watcher subscribes again on the connect (the
	// OnConnect calls Resync) and reports the interface gone...
	//
	// GoVPP v0.13.0 rewrites its message table on a reconnect without its
	// lock, after reading it for the details of every dump: a dump that has
	// not been followed by a write on the socket (which orders it before
	// the reconnect) is a data race for the detector. So VPP restarts while
	// the watcher is held in the push of a change (the peer going), not
	// listing, after a control_ping from the test.
	mark = e.rec.count()
	gate := e.rec.hold()
	peer.disconnect()
	select {
	case <-gate.entered:
	case <-time.After(lsDeadline):
		t.Fatalf("no push within %v", lsDeadline)
	}
	conn, err := e.m.Conn(vppcalls.AreaName)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Invoke(context.Background(), &memclnt.ControlPing{}, &memclnt.ControlPingReply{}); err != nil {
		t.Fatal(err)
	}
	e.vpp.Restart()
	gate.open()
	e.waitConnect(true)
	e.waitNoLink("lsm")
	pushed(mark, wentDown, []string{"-" + downKey})

	// ...until the downstream resync creates it again: DOWN without a
	// peer, then UP when the peer connects again, and DOWN when it goes.
	mark = e.rec.count()
	if _, err := e.s.StartNBTransaction().Commit(context.Background(), api.TxnOptions{Resync: api.DownstreamResync}); err != nil {
		t.Fatalf("downstream resync: %v", err)
	}
	e.waitLink("lsm", false)
	peer.connect()
	e.waitLink("lsm", true)
	peer.disconnect()
	e.waitLink("lsm", false)
	pushed(mark, []string{"+" + downKey + "=DOWN"}, wentUp, wentDown)
}

// lsPeer is the other end of a memif master of the agent: connect brings
// the master's link up, disconnect takes it down again.
type lsPeer struct {
	connect, disconnect func()
}

// newMemifPeer returns the peer of the agent's memif master name (socket,
// id): on vppsim the master's carrier (SetLinkUp: a peer connects); on a
// real VPP a slave memif in a second VPP, started from the test VPP's build
// folder and stopped at the end of the test. Its connect creates the
// slave, its disconnect deletes it: no memif is left connected, each of
// which keeps a core of both VPPs busy polling.
func (e *lsEnv) newMemifPeer(name, socket string, id uint32) lsPeer {
	e.t.Helper()
	if e.sim != nil {
		var idx uint32
		return lsPeer{
			connect: func() {
				e.t.Helper()
				idx = e.vpp.SwIfIndex(name) // the master's in the VPP of now
				if err := e.sim.SetLinkUp(idx, true); err != nil {
					e.t.Fatal(err)
				}
			},
			disconnect: func() {
				e.t.Helper()
				if err := e.sim.SetLinkUp(idx, false); err != nil {
					e.t.Fatal(err)
				}
			},
		}
	}
	other, err := vpprun.Start(e.vpp.Own.Dir, "")
	if err != nil {
		e.t.Fatalf("starting the peer's VPP: %v", err)
	}
	e.t.Cleanup(func() {
		if err := other.Stop(); err != nil {
			e.t.Errorf("stopping the peer's VPP: %v", err)
		}
	})
	// vppctl exits with 0 after a failed command too; these commands print
	// nothing when they succeed.
	cli := func(args ...string) {
		e.t.Helper()
		out, err := other.CLI(args...)
		if err == nil && strings.TrimSpace(out) != "" {
			err = errors.New(strings.TrimSpace(out))
		}
		if err != nil {
			e.t.Fatalf("the peer's VPP: vppctl %s: %v", strings.Join(args, " "), err)
		}
	}
	cli("create", "memif", "socket", "id", "1", "filename", socket)
	slave := fmt.Sprintf("memif1/%d", id)
	return lsPeer{
		connect: func() {
			e.t.Helper()
			cli("create", "interface", "memif", "socket-id", "1", "id", fmt.Sprint(id), "slave")
			cli("set", "interface", "state", slave, "up")
		},
		disconnect: func() {
			e.t.Helper()
			cli("delete", "interface", "memif", slave)
		},
	}
}

// TestLinkStateEventsBatched: the events of a burst (a transaction that
// creates many interfaces, one that deletes them) are reported in a few SB
// notifications, at most one per LinkEventWindow, instead of one or more
// per interface; and the states reported are the final ones.
func TestLinkStateEventsBatched(t *testing.T) {
	if vpptest.UserSocket() != "" {
		t.Skipf("counts the notifications of the events of a VPP only the test changes: not the user's VPP at %s", vpptest.UserSocket())
	}
	e := newLSEnv(t, vppsim.Options{}, lsQuiet)
	const n = 200
	var loops []*vppif.Interface
	var names, upKeys []string
	for i := range n {
		name := fmt.Sprintf("bl%03d", i)
		loops, names = append(loops, lsLoop(name)), append(names, name)
		upKeys = append(upKeys, ifplugin.LinkStateKey(name, true))
	}
	slices.Sort(upKeys)
	// Each notification of a burst comes a window after the burst's first
	// event, and the next burst begins after it: over elapsed there are at
	// most elapsed/window + 1 of them (+1 for a periodic re-list).
	checkCount := func(what string, mark int, start time.Time) {
		t.Helper()
		elapsed := time.Since(start)
		got := e.rec.count() - mark
		if most := int(elapsed/ifplugin.LinkEventWindow) + 2; got > most {
			t.Errorf("%s %d interfaces: %d notifications in %v, want at most %d (one per %v)", what, n, got, elapsed, most, ifplugin.LinkEventWindow)
		}
		t.Logf("%s %d interfaces: %d notifications in %v", what, n, got, elapsed)
	}

	mark, start := e.rec.count(), time.Now()
	e.commit(loops...)
	for _, name := range names {
		e.waitKey(ifplugin.LinkStateKey(name, true), true)
	}
	checkCount("creating", mark, start)
	if got := e.allLinkKeys(); !slices.Equal(got, upKeys) {
		t.Errorf("link-state keys after the creation: %d keys, want the %d UP keys", len(got), n)
	}

	mark, start = e.rec.count(), time.Now()
	e.del(names...)
	// Both states of each: the interfaces are set down (all of them, in
	// one batch of the transaction) before they are deleted, and the DOWN
	// keys go with the deletion events.
	for _, name := range names {
		e.waitKey(ifplugin.LinkStateKey(name, true), false)
		e.waitKey(ifplugin.LinkStateKey(name, false), false)
	}
	checkCount("deleting", mark, start)
	if got := e.allLinkKeys(); len(got) != 0 {
		t.Errorf("link-state keys after the deletion: %v", got)
	}
}

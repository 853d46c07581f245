package kvscheduler_test

// Acceptance scenarios 1..14 of the KV Scheduler (shared/spec/scheduler.md,
// section 4), written like the control flows of the seeds: each test is a
// sequence of steps (a transaction, an SB notification, the passing of time)
// and after each step it checks
//
//   - the exact order of the operations the mock SB saw,
//   - the state (and details) of the values, from GetValueStatus,
//   - the errors returned by Commit,
//   - what the SB holds.
//
// Test values are strings (mocksb.Str). A value "route dep=iface/a" depends on
// iface/a (mocksb.DependsOn); other fields ("rx=256", "ips=10.0.0.1/24",
// "items=item1,item2") are read by the descriptors defined in each test.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// ---------------------------------------------------------------------------
// Test environment and helpers
// ---------------------------------------------------------------------------

// env is a scheduler wired to a mock SB.
type env struct {
	t  *testing.T
	s  *kvscheduler.Scheduler
	sb *mocksb.SB
}

// newEnv builds a scheduler and an empty mock SB; the scheduler is closed
// when the test ends.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := openEnv(t)
	t.Cleanup(e.s.Close)
	return e
}

// openEnv is newEnv without the cleanup: the caller closes the scheduler
// (inside a synctest bubble, before the bubble ends).
func openEnv(t *testing.T) *env {
	t.Helper()
	return &env{
		t:  t,
		s:  kvscheduler.New(kvscheduler.Options{Logger: testLogger(t), FirstRevision: 1}),
		sb: mocksb.New(),
	}
}

// testLogger sends the scheduler's log to the test output (shown for failed
// tests and with -v), and drops it once the test is over.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{w: t.Output()}
	t.Cleanup(w.close) // registered first: runs after the scheduler is closed
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	return w.w.Write(p)
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}

// register registers mock descriptors backed by the env's SB.
func (e *env) register(opts ...mocksb.Options) {
	e.t.Helper()
	for _, o := range opts {
		if err := e.s.RegisterKVDescriptor(e.sb.Descriptor(o)); err != nil {
			e.t.Fatalf("register descriptor %q: %v", o.Name, err)
		}
	}
}

// kv is one change of a transaction.
type kv struct {
	key   string
	value proto.Message
}

// set creates or updates key with a test value.
func set(key, text string) kv { return kv{key: key, value: mocksb.Str(text)} }

// del deletes key.
func del(key string) kv { return kv{key: key} }

// commit runs one NB transaction.
func (e *env) commit(ctx context.Context, changes ...kv) (uint64, error) {
	txn := e.s.StartNBTransaction()
	for _, c := range changes {
		txn.SetValue(c.key, c.value)
	}
	return txn.Commit(ctx, optsOf(ctx))
}

// mustCommit runs one NB transaction that must succeed.
func (e *env) mustCommit(ctx context.Context, changes ...kv) uint64 {
	e.t.Helper()
	seq, err := e.commit(ctx, changes...)
	if err != nil {
		e.t.Fatalf("commit: unexpected error: %v", err)
	}
	return seq
}

// resync runs a full resync with the given NB state.
func (e *env) resync(changes ...kv) (uint64, error) {
	return e.commit(withOpts(context.Background(), api.TxnOptions{Resync: api.FullResync}), changes...)
}

// notify pushes SB notifications and waits until they are processed.
func (e *env) notify(kvs ...api.KVWithMetadata) {
	e.t.Helper()
	if err := e.s.PushSBNotification(kvs...); err != nil {
		e.t.Fatalf("PushSBNotification: %v", err)
	}
	e.s.TransactionBarrier()
}

// expectOps checks the create/update/delete operations the SB saw since the
// last check, in order, then forgets them.
func (e *env) expectOps(step string, want ...string) {
	e.t.Helper()
	e.compareOps(step, e.sb.OpStrings(false), want)
}

// expectOpsWithRetrieve is expectOps including the "retrieve <descriptor>"
// calls.
func (e *env) expectOpsWithRetrieve(step string, want ...string) {
	e.t.Helper()
	e.compareOps(step, e.sb.OpStrings(true), want)
}

func (e *env) compareOps(step string, got, want []string) {
	e.t.Helper()
	e.sb.ClearOps()
	if !slices.Equal(got, want) {
		e.t.Errorf("%s: SB operations\n got:\n%s\nwant:\n%s", step, opList(got), opList(want))
	}
}

func opList(ops []string) string {
	if len(ops) == 0 {
		return "    (none)"
	}
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "    %2d. %s\n", i+1, op)
	}
	return strings.TrimRight(b.String(), "\n")
}

// expectSB checks the whole content of the SB (key -> value text).
func (e *env) expectSB(step string, want map[string]string) {
	e.t.Helper()
	if want == nil {
		want = map[string]string{}
	}
	got := e.sb.Snapshot()
	if !maps.Equal(got, want) {
		e.t.Errorf("%s: SB content\n got: %v\nwant: %v", step, got, want)
	}
}

// status returns the status of one value, base or derived (nil when the
// scheduler does not report it).
func (e *env) status(key string) *api.ValueStatus {
	bs := e.s.GetValueStatus(key)
	if bs == nil {
		return nil
	}
	if bs.GetValue().GetKey() == key {
		return bs.GetValue()
	}
	for _, d := range bs.GetDerivedValues() {
		if d.GetKey() == key {
			return d
		}
	}
	return nil
}

// expectState checks the state of a value. For PENDING, or when details are
// given, the details (unmet dependency labels, invalid fields) must match
// exactly, in any order.
func (e *env) expectState(key string, want api.ValueState, details ...string) *api.ValueStatus {
	e.t.Helper()
	st := e.status(key)
	if st == nil {
		e.t.Errorf("%s: no status, want %v", key, want)
		return nil
	}
	if st.GetState() != want {
		e.t.Errorf("%s: state %v, want %v (status: %v)", key, st.GetState(), want, st)
	}
	if want == api.ValueStatePending || len(details) > 0 {
		got := slices.Sorted(slices.Values(st.GetDetails()))
		exp := slices.Sorted(slices.Values(details))
		if !slices.Equal(got, exp) {
			e.t.Errorf("%s: details %q, want %q", key, got, exp)
		}
	}
	return st
}

// expectGone checks that the scheduler no longer holds the value.
func (e *env) expectGone(key string) {
	e.t.Helper()
	st := e.status(key)
	if st == nil {
		return
	}
	if s := st.GetState(); s != api.ValueStateNonexistent && s != api.ValueStateRemoved {
		e.t.Errorf("%s: state %v, want it gone (NONEXISTENT or REMOVED)", key, s)
	}
}

// expectMeta checks the metadata the scheduler published for a label.
func (e *env) expectMeta(descriptor, label string, wantIndex int) {
	e.t.Helper()
	m := e.s.GetMetadataMap(descriptor)
	if m == nil {
		e.t.Errorf("no metadata map for descriptor %q", descriptor)
		return
	}
	md, ok := m.GetValue(label)
	if !ok {
		e.t.Errorf("metadata of %s (descriptor %s): missing, want index %d", label, descriptor, wantIndex)
		return
	}
	if got, ok := md.(*mocksb.Meta); !ok || got.Index != wantIndex {
		e.t.Errorf("metadata of %s (descriptor %s): %#v, want index %d", label, descriptor, md, wantIndex)
	}
}

// metaIndex returns the metadata index of a label (0 when missing).
func (e *env) metaIndex(descriptor, label string) int {
	m := e.s.GetMetadataMap(descriptor)
	if m == nil {
		return 0
	}
	md, _ := m.GetValue(label)
	if got, ok := md.(*mocksb.Meta); ok {
		return got.Index
	}
	return 0
}

// txnErr unwraps the *api.TransactionError returned by Commit.
func txnErr(t *testing.T, err error) *api.TransactionError {
	t.Helper()
	if err == nil {
		t.Fatalf("commit succeeded, want a *api.TransactionError")
	}
	var te *api.TransactionError
	if !errors.As(err, &te) {
		t.Fatalf("commit error %T %v, want a *api.TransactionError", err, err)
	}
	if te.TxnInitError != nil {
		t.Errorf("TxnInitError: %v, want none", te.TxnInitError)
	}
	return te
}

// expectKVErrors checks that the transaction error lists exactly these keys,
// each with its failed operation and an error wrapping target.
func expectKVErrors(t *testing.T, te *api.TransactionError, target error, want map[string]api.TxnOperation) {
	t.Helper()
	got := map[string]api.TxnOperation{}
	for _, kv := range te.KVErrors {
		got[kv.Key] = kv.Operation
		if !errors.Is(kv.Error, target) {
			t.Errorf("error of %s: %v, want it to wrap %v", kv.Key, kv.Error, target)
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("failed keys %v, want %v (error: %v)", got, want, te)
	}
	for key := range want {
		if !errors.Is(te.ErrorOf(key), target) {
			t.Errorf("ErrorOf(%s) = %v, want it to wrap %v", key, te.ErrorOf(key), target)
		}
	}
}

// recordedOp returns the executed operation of a transaction on key (the
// last one when there are several).
func recordedOp(t *testing.T, rec *api.RecordedTxn, op api.TxnOperation, key string) *api.RecordedTxnOp {
	t.Helper()
	if rec == nil {
		t.Fatalf("no transaction record")
	}
	var found *api.RecordedTxnOp
	for _, o := range rec.Executed {
		if o.Key == key && o.Operation == op {
			found = o
		}
	}
	if found == nil {
		t.Errorf("txn %d: no executed %v of %s", rec.SeqNum, op, key)
	}
	return found
}

// field returns the text after "name=" in a test value, up to the next space.
func field(v proto.Message, name string) string {
	for _, f := range strings.Fields(mocksb.Text(v)) {
		if after, ok := strings.CutPrefix(f, name+"="); ok {
			return after
		}
	}
	return ""
}

// list returns the comma separated items of a field.
func list(v proto.Message, name string) []string {
	f := field(v, name)
	if f == "" {
		return nil
	}
	return strings.Split(f, ",")
}

func kvp(key, text string) api.KeyValuePair {
	return api.KeyValuePair{Key: key, Value: mocksb.Str(text)}
}

// depsFrom is a Dependencies callback from a fixed table key -> keys.
func depsFrom(table map[string][]string) func(string, proto.Message) []api.Dependency {
	return func(key string, _ proto.Message) []api.Dependency {
		var deps []api.Dependency
		for _, k := range table[key] {
			deps = append(deps, api.Dependency{Label: k, Key: k})
		}
		return deps
	}
}

// items derives one value "<key>/<item>" per item of the "items=" field.
func items(key string, v proto.Message) []api.KeyValuePair {
	var out []api.KeyValuePair
	for _, it := range list(v, "items") {
		out = append(out, kvp(key+"/"+it, it))
	}
	return out
}

// depth selects keys with exactly n "/" separators ("a/v1" has 1).
func depth(n int) func(string) bool {
	return func(key string) bool { return strings.Count(key, "/") == n }
}

// correlateLog records the keys passed to Retrieve as correlate.
type correlateLog struct {
	mu    sync.Mutex
	calls [][]string
}

func (c *correlateLog) record(correlate []api.KVWithMetadata) {
	keys := make([]string, 0, len(correlate))
	for _, kv := range correlate {
		keys = append(keys, kv.Key)
	}
	slices.Sort(keys)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, keys)
}

func (c *correlateLog) last() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) == 0 {
		return nil
	}
	return c.calls[len(c.calls)-1]
}

// Descriptors shared by several scenarios.

// ifaces describes interfaces "iface/<name>" from the NB, with an index as
// metadata (like a VPP sw_if_index).
func ifaces() mocksb.Options {
	return mocksb.Options{Name: "iface", Prefix: "iface/", NB: true, WithMetadata: true}
}

// routes describes routes "route/<name>" from the NB, depending on the keys
// after "dep=" in their value.
func routes() mocksb.Options {
	return mocksb.Options{Name: "route", Prefix: "route/", NB: true, Deps: mocksb.DependsOn}
}

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

// Scenario 1 (seed 002, "Route waiting for the associated interface"): a
// route received before its interface stays PENDING and is created, in the
// same transaction, right after the interface.
func TestScenario01_RouteWaitsForInterface(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces(), routes())
	ctx := context.Background()
	const route = "10.1.0.0/24 via 192.168.1.1 dep=iface/my-tap"

	// 1. NB: my-route, which needs iface/my-tap. The interface does not
	//    exist: no SB call, the route waits as PENDING on "iface/my-tap".
	e.mustCommit(ctx, set("route/my-route", route))
	e.expectOps("route without interface")
	st := e.expectState("route/my-route", api.ValueStatePending, "iface/my-tap")
	if st.GetDescriptorName() != "route" {
		t.Errorf("route descriptor %q, want route", st.GetDescriptorName())
	}
	e.expectSB("route without interface", nil)

	// 2. NB: the interface. Create(my-tap), then the route that was waiting
	//    for it: Create(my-route).
	e.mustCommit(ctx, set("iface/my-tap", "tap"))
	e.expectOps("interface arrives",
		"create iface/my-tap=tap",
		"create route/my-route="+route)
	e.expectState("iface/my-tap", api.ValueStateConfigured)
	st = e.expectState("route/my-route", api.ValueStateConfigured)
	if st.GetLastOperation() != api.OpCreate || st.GetError() != "" {
		t.Errorf("route: last operation %v error %q, want CREATE and no error", st.GetLastOperation(), st.GetError())
	}
	e.expectMeta("iface", "iface/my-tap", 1)
	e.expectSB("interface arrives", map[string]string{
		"iface/my-tap":   "tap",
		"route/my-route": route,
	})

	// 3. NB: remove the interface. The route goes first (Delete, PENDING
	//    again, still intended), then the interface.
	e.mustCommit(ctx, del("iface/my-tap"))
	e.expectOps("interface removed",
		"delete route/my-route",
		"delete iface/my-tap")
	e.expectGone("iface/my-tap")
	e.expectState("route/my-route", api.ValueStatePending, "iface/my-tap")
	e.expectSB("interface removed", nil)
}

// Scenario 2 (seed 002, "AF-Packet interface"): the AF-Packet interface waits
// (PENDING) for the host interface, which is not configured by the agent but
// reported by an SB notification (OBTAINED, never created/deleted by the
// agent). When the host interface disappears, the AF-Packet is deleted and
// PENDING again.
func TestScenario02_AFPacketWaitsForHostInterface(t *testing.T) {
	e := newEnv(t)
	e.register(
		// The Linux interface watcher: host interfaces in the default
		// namespace, reported by notifications; not an NB descriptor.
		mocksb.Options{Name: "linux-iface-watcher", Prefix: "linux/interface/host-name/"},
		// VPP interfaces; an AF-Packet depends on its host interface.
		mocksb.Options{Name: "vpp-iface", Prefix: "vpp/interface/", NB: true, WithMetadata: true, Deps: mocksb.DependsOn},
	)
	ctx := context.Background()
	const (
		host   = "linux/interface/host-name/eth1"
		afp    = "vpp/interface/my-afpacket"
		afpVal = "afpacket host=eth1 dep=" + host
	)
	hostAppears := api.KVWithMetadata{Key: host, Value: mocksb.Str("eth1"), Origin: api.FromSB}
	hostGone := api.KVWithMetadata{Key: host, Origin: api.FromSB}

	// 1. NB: the AF-Packet. eth1 does not exist: PENDING, no SB call.
	e.mustCommit(ctx, set(afp, afpVal))
	e.expectOps("afpacket without host")
	e.expectState(afp, api.ValueStatePending, host)
	e.expectSB("afpacket without host", nil)

	// 2. Someone creates eth1; the watcher notifies. eth1 becomes OBTAINED
	//    (no CRUD for it) and the AF-Packet is created.
	e.sb.Put(host, mocksb.Str("eth1"), nil, api.FromSB)
	e.notify(hostAppears)
	e.expectOps("host appears", "create "+afp+"="+afpVal)
	e.expectState(host, api.ValueStateObtained)
	e.expectState(afp, api.ValueStateConfigured)
	e.expectSB("host appears", map[string]string{host: "eth1", afp: afpVal})

	// 3. eth1 is removed outside the agent; the watcher notifies. The
	//    AF-Packet is deleted and PENDING again; nothing is called for eth1.
	e.sb.Remove(host)
	e.notify(hostGone)
	e.expectOps("host removed", "delete "+afp)
	e.expectGone(host)
	e.expectState(afp, api.ValueStatePending, host)
	e.expectSB("host removed", nil)

	// 4. eth1 comes back: the AF-Packet is created again.
	e.sb.Put(host, mocksb.Str("eth1"), nil, api.FromSB)
	e.notify(hostAppears)
	e.expectOps("host back", "create "+afp+"="+afpVal)
	e.expectState(afp, api.ValueStateConfigured)
	e.expectSB("host back", map[string]string{host: "eth1", afp: afpVal})
}

// bridgeDomainDescriptors are the mock descriptors of bridge domains
// "<bdPrefix><bd>", whose value "bd ifaces=a,b" derives one binding
// "<bdPrefix><bd>/interface/<if>" per interface, and of the bindings (put the
// interface into the BD), which depend on "<ifacePrefix><if>".
func bridgeDomainDescriptors(bdPrefix, ifacePrefix string) []mocksb.Options {
	isBinding := func(key string) bool { return strings.Contains(key, "/interface/") }
	return []mocksb.Options{
		{
			Name: "bd", Prefix: bdPrefix, NB: true, WithMetadata: true,
			Keys: func(key string) bool { return !isBinding(key) },
			Derived: func(key string, v proto.Message) []api.KeyValuePair {
				var out []api.KeyValuePair
				for _, name := range list(v, "ifaces") {
					out = append(out, kvp(key+"/interface/"+name, name+" dep="+ifacePrefix+name))
				}
				return out
			},
		},
		{Name: "bd-interface", Prefix: bdPrefix, Keys: isBinding, NoRetrieve: true, Deps: mocksb.DependsOn},
	}
}

// Scenario 3 (seed 002, "Bridge Domain"): the bridge domain is created at
// once; each BD-interface binding is a derived value with its own descriptor,
// PENDING until its interface exists; deleting an interface unbinds only it.
func TestScenario03_BridgeDomainBindings(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "vpp-iface", Prefix: "vpp/interface/", NB: true, WithMetadata: true})
	e.register(bridgeDomainDescriptors("vpp/bd/", "vpp/interface/")...)
	ctx := context.Background()
	const (
		bd       = "vpp/bd/bd1"
		bindingA = "vpp/bd/bd1/interface/a"
		bindingB = "vpp/bd/bd1/interface/b"
	)

	// 1. NB: bd1 with interfaces a and b, neither exists. The BD is created;
	//    both bindings wait as PENDING on their interface.
	e.mustCommit(ctx, set(bd, "bd ifaces=a,b"))
	e.expectOps("bd alone", "create vpp/bd/bd1=bd ifaces=a,b")
	e.expectState(bd, api.ValueStateConfigured)
	e.expectState(bindingA, api.ValueStatePending, "vpp/interface/a")
	st := e.expectState(bindingB, api.ValueStatePending, "vpp/interface/b")
	if !st.GetDerived() || st.GetDescriptorName() != "bd-interface" {
		t.Errorf("binding status: derived=%v descriptor=%q, want derived bd-interface", st.GetDerived(), st.GetDescriptorName())
	}
	if n := len(e.s.GetValueStatus(bd).GetDerivedValues()); n != 2 {
		t.Errorf("bd1 has %d derived values in its status, want 2", n)
	}
	e.expectSB("bd alone", map[string]string{bd: "bd ifaces=a,b"})

	// 2. NB: interface a. Create(a), then its binding.
	e.mustCommit(ctx, set("vpp/interface/a", "tap"))
	e.expectOps("interface a",
		"create vpp/interface/a=tap",
		"create "+bindingA+"=a dep=vpp/interface/a")
	e.expectState(bindingA, api.ValueStateConfigured)
	e.expectState(bindingB, api.ValueStatePending, "vpp/interface/b")

	// 3. NB: interface b. Create(b), then its binding.
	e.mustCommit(ctx, set("vpp/interface/b", "tap"))
	e.expectOps("interface b",
		"create vpp/interface/b=tap",
		"create "+bindingB+"=b dep=vpp/interface/b")
	e.expectState(bindingB, api.ValueStateConfigured)
	e.expectSB("both bound", map[string]string{
		bd:                "bd ifaces=a,b",
		bindingA:          "a dep=vpp/interface/a",
		bindingB:          "b dep=vpp/interface/b",
		"vpp/interface/a": "tap",
		"vpp/interface/b": "tap",
	})

	// 4. NB: remove interface a. Only its binding is removed (PENDING), then
	//    the interface; the BD and the other binding are untouched.
	e.mustCommit(ctx, del("vpp/interface/a"))
	e.expectOps("interface a removed",
		"delete "+bindingA,
		"delete vpp/interface/a")
	e.expectState(bd, api.ValueStateConfigured)
	e.expectState(bindingA, api.ValueStatePending, "vpp/interface/a")
	e.expectState(bindingB, api.ValueStateConfigured)
	e.expectGone("vpp/interface/a")
	e.expectSB("interface a removed", map[string]string{
		bd:                "bd ifaces=a,b",
		bindingB:          "b dep=vpp/interface/b",
		"vpp/interface/b": "tap",
	})
}

// Scenario 4 (seed 002, "Interface Re-creation"): changing the RX ring size
// of a TAP cannot be done in place. The route attached to the interface is
// deleted first (PENDING), the interface is deleted and created again, and
// the route is created back.
func TestScenario04_InterfaceRecreation(t *testing.T) {
	e := newEnv(t)
	iface := ifaces()
	iface.RecreateIf = func(_ string, oldV, newV proto.Message) bool {
		return field(oldV, "rx") != field(newV, "rx")
	}
	e.register(iface, routes())
	ctx := context.Background()
	const route = "10.1.0.0/24 dep=iface/my-tap"

	// 1. NB: my-tap with RX ring 256 and a route through it.
	e.mustCommit(ctx, set("iface/my-tap", "tap rx=256"), set("route/my-route", route))
	e.expectOps("initial",
		"create iface/my-tap=tap rx=256",
		"create route/my-route="+route)
	e.expectMeta("iface", "iface/my-tap", 1)

	// 2. NB: RX ring 512. UpdateWithRecreate says yes: Delete(my-route)
	//    (PENDING), Delete(my-tap), Create(my-tap), Create(my-route).
	seq := e.mustCommit(ctx, set("iface/my-tap", "tap rx=512"))
	e.expectOps("rx ring change",
		"delete route/my-route",
		"delete iface/my-tap",
		"create iface/my-tap=tap rx=512",
		"create route/my-route="+route)
	e.expectState("iface/my-tap", api.ValueStateConfigured)
	e.expectState("route/my-route", api.ValueStateConfigured)
	e.expectMeta("iface", "iface/my-tap", 2) // a new interface, a new index
	e.expectSB("rx ring change", map[string]string{
		"iface/my-tap":   "tap rx=512",
		"route/my-route": route,
	})
	rec := e.s.GetRecordedTransaction(seq)
	if op := recordedOp(t, rec, api.OpDelete, "route/my-route"); op != nil && !op.IsPending {
		t.Errorf("txn %d: delete of route/my-route not marked IsPending", seq)
	}
	for _, kind := range []api.TxnOperation{api.OpDelete, api.OpCreate} {
		if op := recordedOp(t, rec, kind, "iface/my-tap"); op != nil && !op.IsRecreate {
			t.Errorf("txn %d: %v of iface/my-tap not marked IsRecreate", seq, kind)
		}
	}

	// 3. NB: a change that needs no re-creation: a plain Update of the
	//    interface; the route is not touched.
	e.mustCommit(ctx, set("iface/my-tap", "tap rx=512 mtu=9000"))
	e.expectOps("mtu change", "update iface/my-tap=tap rx=512 mtu=9000")
	e.expectState("route/my-route", api.ValueStateConfigured)
	e.expectMeta("iface", "iface/my-tap", 2)
}

// Scenario 5 (seed 002, "Retry of failed operation"): Create(my-tap) fails in
// a best-effort transaction with retry. The scheduler refreshes my-tap
// (Retrieve), marks it RETRYING and, after the retry period, a retry
// transaction creates it.
func TestScenario05_RetryOfFailedCreate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { retryScenario(t, false) })
}

// Scenario 5 with a route on the interface in the same transaction: the
// route stays PENDING while my-tap is RETRYING (Create(my-tap) is not called
// again before the retry period), and the retry transaction creates both.
func TestScenario05_RetryOfFailedCreateWithDependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { retryScenario(t, true) })
}

// retryScenario runs inside a synctest bubble.
func retryScenario(t *testing.T, withRoute bool) {
	e := openEnv(t) // inside the bubble: the scheduler's timers use fake time
	defer e.s.Close()
	e.register(ifaces(), routes())
	const route = "10.1.0.0/24 dep=iface/my-tap"
	changes := []kv{set("iface/my-tap", "tap")}
	wantSB := map[string]string{"iface/my-tap": "tap"}
	retryOps := []string{"create iface/my-tap=tap"}
	if withRoute {
		changes = append(changes, set("route/my-route", route))
		wantSB["route/my-route"] = route
		retryOps = append(retryOps, "create route/my-route="+route)
	}

	// 1. NB (retry every 1s, at most 3 times): my-tap [and a route on it].
	//    Create(my-tap) fails; the failed key is refreshed (retrieve
	//    iface); my-tap is RETRYING [, the route PENDING].
	e.sb.Fail("create", "iface/my-tap", nil, 1)
	ctx := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second, MaxCount: 3, ExpBackoff: false}})
	_, err := e.commit(ctx, changes...)
	te := txnErr(t, err)
	expectKVErrors(t, te, mocksb.ErrInjected, map[string]api.TxnOperation{"iface/my-tap": api.OpCreate})
	e.expectOpsWithRetrieve("failed create",
		"create iface/my-tap=tap",
		"retrieve iface")
	st := e.expectState("iface/my-tap", api.ValueStateRetrying)
	if st.GetLastOperation() != api.OpCreate || !strings.Contains(st.GetError(), mocksb.ErrInjected.Error()) {
		t.Errorf("my-tap: last operation %v error %q, want CREATE and %q", st.GetLastOperation(), st.GetError(), mocksb.ErrInjected)
	}
	if withRoute {
		e.expectState("route/my-route", api.ValueStatePending, "iface/my-tap")
	}
	e.expectSB("failed create", nil)

	// 2. Half of the retry period: nothing happens yet.
	time.Sleep(500 * time.Millisecond)
	synctest.Wait()
	e.expectOps("before the retry period")
	e.expectState("iface/my-tap", api.ValueStateRetrying)

	// 3. The period is over: the retry transaction re-applies my-tap,
	//    which succeeds [, and the route follows].
	time.Sleep(500 * time.Millisecond)
	synctest.Wait()
	e.expectOps("retry", retryOps...)
	st = e.expectState("iface/my-tap", api.ValueStateConfigured)
	if st.GetError() != "" {
		t.Errorf("my-tap: error %q after a successful retry", st.GetError())
	}
	if withRoute {
		e.expectState("route/my-route", api.ValueStateConfigured)
	}
	e.expectSB("retry", wantSB)
	if h := e.s.GetTransactionHistory(time.Time{}, time.Time{}); len(h) == 0 ||
		h[len(h)-1].TxnType != api.RetryFailedOps || h[len(h)-1].RetryAttempt != 1 {
		t.Errorf("the last transaction is not the first RetryFailedOps attempt")
	}

	// 4. No more retries are scheduled.
	time.Sleep(10 * time.Second)
	synctest.Wait()
	e.expectOps("after the retry")
}

// Scenario 6 (seed 002, "Transaction revert"): with WithRevert, my-tap is
// created, Create(my-route) fails; the scheduler refreshes my-route
// (Retrieve), undoes Create(my-tap) with Delete(my-tap) and returns the
// error. The SB is as before the transaction.
func TestScenario06_Revert(t *testing.T) {
	e := newEnv(t)
	e.register(ifaces(), routes())
	ctx := withOpts(context.Background(), api.TxnOptions{Revert: true})
	const route = "10.1.0.0/24 dep=iface/my-tap"

	// 1. The seed's flow: an empty SB, my-tap and my-route in one
	//    transaction, Create(my-route) fails.
	e.sb.Fail("create", "route/my-route", nil, 1)
	seq, err := e.commit(ctx, set("iface/my-tap", "tap"), set("route/my-route", route))
	te := txnErr(t, err)
	expectKVErrors(t, te, mocksb.ErrInjected, map[string]api.TxnOperation{"route/my-route": api.OpCreate})
	e.expectOpsWithRetrieve("revert",
		"create iface/my-tap=tap",
		"create route/my-route="+route,
		"retrieve route", // refresh of the failed value
		"delete iface/my-tap")
	e.expectSB("revert", nil)
	e.expectGone("iface/my-tap")
	if st := e.status("route/my-route"); st != nil && st.GetState() == api.ValueStateConfigured {
		t.Errorf("route/my-route: CONFIGURED after revert")
	}
	rec := e.s.GetRecordedTransaction(seq)
	if rec == nil || !rec.WithRevert {
		t.Errorf("txn %d: not recorded as WithRevert: %+v", seq, rec)
	}
	if op := recordedOp(t, rec, api.OpDelete, "iface/my-tap"); op != nil && !op.IsRevert {
		t.Errorf("txn %d: Delete(my-tap) not marked IsRevert", seq)
	}

	// 2. Revert of an update: my-tap exists with MTU 1500. The transaction
	//    changes it to 9000 and adds the route, whose Create fails: the
	//    interface is updated back to 1500.
	e.mustCommit(context.Background(), set("iface/my-tap", "tap mtu=1500"))
	e.sb.ClearOps()
	e.sb.Fail("create", "route/my-route", nil, 1)
	_, err = e.commit(ctx, set("iface/my-tap", "tap mtu=9000"), set("route/my-route", route))
	te = txnErr(t, err)
	expectKVErrors(t, te, mocksb.ErrInjected, map[string]api.TxnOperation{"route/my-route": api.OpCreate})
	e.expectOpsWithRetrieve("revert of an update",
		"update iface/my-tap=tap mtu=9000",
		"create route/my-route="+route,
		"retrieve route",
		"update iface/my-tap=tap mtu=1500")
	e.expectSB("revert of an update", map[string]string{"iface/my-tap": "tap mtu=1500"})
	e.expectState("iface/my-tap", api.ValueStateConfigured)
	e.expectMeta("iface", "iface/my-tap", 2)
}

// Scenario 7 (seeds 000/002, "Unnumbered interface"): an interface derives
// one value per IP address ("iface/<name>/address/<ip>") and, when
// unnumbered, a value "unnumbered/<name>" handled by its own descriptor, which
// depends (AnyOf) on any address of the interface it borrows from. Without
// an address the unnumbered interface stays in L2 (the derived value is
// PENDING) but exists; when the borrowed address goes away, only the derived
// value is deleted.
func TestScenario07_UnnumberedInterface(t *testing.T) {
	e := newEnv(t)
	isAddress := func(key string) bool { return strings.Contains(key, "/address/") }
	e.register(
		mocksb.Options{
			Name: "iface", Prefix: "iface/", NB: true, WithMetadata: true,
			Keys: depth(1),
			Derived: func(key string, v proto.Message) []api.KeyValuePair {
				var out []api.KeyValuePair
				for _, ip := range list(v, "ips") {
					out = append(out, kvp(key+"/address/"+ip, ip))
				}
				if from := field(v, "unnumbered"); from != "" {
					out = append(out, kvp("unnumbered/"+strings.TrimPrefix(key, "iface/"), from))
				}
				return out
			},
		},
		mocksb.Options{Name: "iface-address", Prefix: "iface/", Keys: isAddress, NoRetrieve: true},
		mocksb.Options{
			Name: "unnumbered", Prefix: "unnumbered/", NoRetrieve: true,
			// The value is the name of the interface to borrow from.
			Deps: func(_ string, v proto.Message) []api.Dependency {
				prefix := "iface/" + mocksb.Text(v) + "/address/"
				return []api.Dependency{{
					Label: "address of " + mocksb.Text(v),
					AnyOf: api.AnyOfDependency{
						KeyPrefixes: []string{prefix},
						KeySelector: func(key string) bool { return strings.HasPrefix(key, prefix) },
					},
				}}
			},
		},
	)
	ctx := context.Background()
	const (
		unnumIf  = "iface/unnum"
		unnumVal = "l2 unnumbered=numbered"
		unnum    = "unnumbered/unnum"
	)

	// 1. NB: "unnum", to borrow the address of "numbered", which does not
	//    exist. The interface is created (L2); its unnumbered value waits.
	e.mustCommit(ctx, set(unnumIf, unnumVal))
	e.expectOps("unnumbered alone", "create iface/unnum="+unnumVal)
	e.expectState(unnumIf, api.ValueStateConfigured)
	e.expectState(unnum, api.ValueStatePending, "address of numbered")

	// 2. NB: "numbered" with 10.0.0.1/24. Create(numbered), its address,
	//    then the unnumbered value, now that an address exists.
	e.mustCommit(ctx, set("iface/numbered", "l3 ips=10.0.0.1/24"))
	e.expectOps("numbered arrives",
		"create iface/numbered=l3 ips=10.0.0.1/24",
		"create iface/numbered/address/10.0.0.1/24=10.0.0.1/24",
		"create unnumbered/unnum=numbered")
	e.expectState(unnum, api.ValueStateConfigured)
	e.expectState("iface/numbered/address/10.0.0.1/24", api.ValueStateConfigured)
	e.expectSB("numbered arrives", map[string]string{
		unnumIf:                              unnumVal,
		unnum:                                "numbered",
		"iface/numbered":                     "l3 ips=10.0.0.1/24",
		"iface/numbered/address/10.0.0.1/24": "10.0.0.1/24",
	})

	// 3. NB: "numbered" loses its address. The unnumbered value gives the
	//    address back first (Delete, PENDING: L2 again), then the address
	//    is unassigned, then the interface updated. "unnum" stays.
	e.mustCommit(ctx, set("iface/numbered", "l3"))
	e.expectOps("address removed",
		"delete unnumbered/unnum",
		"delete iface/numbered/address/10.0.0.1/24",
		"update iface/numbered=l3")
	e.expectState(unnumIf, api.ValueStateConfigured)
	e.expectState(unnum, api.ValueStatePending, "address of numbered")
	e.expectGone("iface/numbered/address/10.0.0.1/24")
	e.expectSB("address removed", map[string]string{
		unnumIf:          unnumVal,
		"iface/numbered": "l3",
	})

	// 4. NB: a new address: borrowed again.
	e.mustCommit(ctx, set("iface/numbered", "l3 ips=10.0.0.2/24"))
	e.expectOps("new address",
		"update iface/numbered=l3 ips=10.0.0.2/24",
		"create iface/numbered/address/10.0.0.2/24=10.0.0.2/24",
		"create unnumbered/unnum=numbered")
	e.expectState(unnum, api.ValueStateConfigured)

	// 5. NB: "numbered" removed altogether: the unnumbered value, the
	//    address, the interface; "unnum" is still not touched.
	e.mustCommit(ctx, del("iface/numbered"))
	e.expectOps("numbered removed",
		"delete unnumbered/unnum",
		"delete iface/numbered/address/10.0.0.2/24",
		"delete iface/numbered")
	e.expectState(unnumIf, api.ValueStateConfigured)
	e.expectState(unnum, api.ValueStatePending, "address of numbered")
	e.expectSB("numbered removed", map[string]string{unnumIf: unnumVal})
}

// Scenario 8 (the original's TestDataChangeTransactions): three descriptors
// whose values derive "items"; values of B depend on a value of A and on a
// derived value of A. Then one transaction re-creates C's value and updates
// A's, which brings a derived value of A that a PENDING derived value of B
// was waiting for: it is created at the end.
func TestScenario08_DataChangeWithDerivedValues(t *testing.T) {
	e := newEnv(t)
	deps := depsFrom(map[string][]string{
		"b/v2/item1": {"a/v1"},       // derived value -> base value
		"b/v2/item2": {"a/v1/item1"}, // derived value -> derived value
	})
	e.register(
		mocksb.Options{Name: "A", Prefix: "a/", NB: true, WithMetadata: true, Derived: items},
		mocksb.Options{Name: "B", Prefix: "b/", NB: true, WithMetadata: true, Derived: items, Deps: deps},
		mocksb.Options{
			Name: "C", Prefix: "c/", NB: true, WithMetadata: true, Derived: items,
			RecreateIf: func(key string, _, _ proto.Message) bool { return key == "c/v3" },
		},
	)
	ctx := context.Background()

	// 1. NB: v2 (B: item1, item2), v1 (A: item2), v3 (C: item1, item2).
	//    The engine applies a transaction's values in key order, whatever
	//    the order given (the spec leaves the order of independent values
	//    open). Every base value is created, followed by its derived
	//    values; b/v2/item1 needs a/v1 (created before it); b/v2/item2
	//    needs a/v1/item1, which v1 does not derive: PENDING.
	e.mustCommit(ctx,
		set("b/v2", "items=item1,item2"),
		set("a/v1", "items=item2"),
		set("c/v3", "items=item1,item2"))
	e.expectOps("txn 1",
		"create a/v1=items=item2",
		"create a/v1/item2=item2",
		"create b/v2=items=item1,item2",
		"create b/v2/item1=item1",
		"create c/v3=items=item1,item2",
		"create c/v3/item1=item1",
		"create c/v3/item2=item2")
	for _, key := range []string{"a/v1", "a/v1/item2", "b/v2", "b/v2/item1", "c/v3", "c/v3/item1", "c/v3/item2"} {
		e.expectState(key, api.ValueStateConfigured)
	}
	e.expectState("b/v2/item2", api.ValueStatePending, "a/v1/item1")
	e.expectSB("txn 1", map[string]string{
		"a/v1": "items=item2", "a/v1/item2": "item2",
		"b/v2": "items=item1,item2", "b/v2/item1": "item1",
		"c/v3": "items=item1,item2", "c/v3/item1": "item1", "c/v3/item2": "item2",
	})
	v1Index, v3Index := e.metaIndex("A", "a/v1"), e.metaIndex("C", "c/v3")

	// 2. NB: v3 (C: item1 only) and v1 (A: item1 instead of item2).
	//    - v1 is updated in place: the obsolete a/v1/item2 is deleted
	//      before the update, the new a/v1/item1 created after it, and
	//      b/v2/item2, which was waiting for a/v1/item1, right after that;
	//    - v3 must be re-created: its derived values are deleted (in
	//      reverse order), then v3, then v3 is created with its (one)
	//      derived value.
	e.mustCommit(ctx,
		set("c/v3", "items=item1"),
		set("a/v1", "items=item1"))
	e.expectOps("txn 2",
		"delete a/v1/item2",
		"update a/v1=items=item1",
		"create a/v1/item1=item1",
		"create b/v2/item2=item2",
		"delete c/v3/item2",
		"delete c/v3/item1",
		"delete c/v3",
		"create c/v3=items=item1",
		"create c/v3/item1=item1")
	for _, key := range []string{"a/v1", "a/v1/item1", "b/v2", "b/v2/item1", "b/v2/item2", "c/v3", "c/v3/item1"} {
		e.expectState(key, api.ValueStateConfigured)
	}
	e.expectGone("a/v1/item2")
	e.expectGone("c/v3/item2")
	e.expectSB("txn 2", map[string]string{
		"a/v1": "items=item1", "a/v1/item1": "item1",
		"b/v2": "items=item1,item2", "b/v2/item1": "item1", "b/v2/item2": "item2",
		"c/v3": "items=item1", "c/v3/item1": "item1",
	})
	// An update keeps the metadata; a re-creation gets new metadata.
	if got := e.metaIndex("A", "a/v1"); got != v1Index {
		t.Errorf("metadata of a/v1 changed by an update: %d, was %d", got, v1Index)
	}
	if got := e.metaIndex("C", "c/v3"); got == v3Index || got == 0 {
		t.Errorf("metadata of c/v3 after re-creation: %d, was %d (want a new index)", got, v3Index)
	}
}

// Scenario 9 (the original's TestDependencyCycles): v1 -> v2 -> v3 -> v1 is a
// cycle, and v3 also needs v4 outside of it. Nothing is created until v4
// arrives; then all four are. Deleting v2 (whose Delete fails) deletes what
// depends on it first and leaves the others PENDING.
func TestScenario09_DependencyCycle(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "V", Prefix: "v/", NB: true, Deps: mocksb.DependsOn})
	ctx := context.Background()
	const (
		v1 = "v1 dep=v/2"
		v2 = "v2 dep=v/3"
		v3 = "v3 dep=v/1,v/4"
		v4 = "v4"
	)

	// 1. NB: the cycle without v4: all PENDING, no SB call.
	e.mustCommit(ctx, set("v/1", v1), set("v/2", v2), set("v/3", v3))
	e.expectOps("cycle without v4")
	e.expectState("v/1", api.ValueStatePending, "v/2")
	e.expectState("v/2", api.ValueStatePending, "v/3")
	e.expectState("v/3", api.ValueStatePending, "v/1", "v/4")
	e.expectSB("cycle without v4", nil)

	// 2. NB: v4. Created, then the whole cycle, together: v3 (which was
	//    waiting for v4) first, then each member once what it needs in the
	//    cycle is there (v2 needs v3, v1 needs v2).
	e.mustCommit(ctx, set("v/4", v4))
	e.expectOps("v4 arrives",
		"create v/4=v4",
		"create v/3="+v3,
		"create v/2="+v2,
		"create v/1="+v1)
	for _, key := range []string{"v/1", "v/2", "v/3", "v/4"} {
		e.expectState(key, api.ValueStateConfigured)
	}
	e.expectSB("v4 arrives", map[string]string{"v/1": v1, "v/2": v2, "v/3": v3, "v/4": v4})

	// 3. NB: delete v2; its Delete fails. What depends on v2 goes first, in
	//    reverse dependency order: v3 (needs v1), v1 (needs v2); then
	//    Delete(v2) fails and v2 is refreshed. v1 and v3 stay PENDING, v2
	//    FAILED (still in the SB), v4 untouched.
	e.sb.Fail("delete", "v/2", nil, 1)
	_, err := e.commit(ctx, del("v/2"))
	te := txnErr(t, err)
	expectKVErrors(t, te, mocksb.ErrInjected, map[string]api.TxnOperation{"v/2": api.OpDelete})
	e.expectOpsWithRetrieve("delete v2",
		"delete v/3",
		"delete v/1",
		"delete v/2",
		"retrieve V")
	e.expectState("v/1", api.ValueStatePending, "v/2")
	st := e.expectState("v/2", api.ValueStateFailed)
	if st.GetLastOperation() != api.OpDelete || !strings.Contains(st.GetError(), mocksb.ErrInjected.Error()) {
		t.Errorf("v/2: last operation %v error %q, want DELETE and %q", st.GetLastOperation(), st.GetError(), mocksb.ErrInjected)
	}
	e.expectState("v/3", api.ValueStatePending, "v/1")
	e.expectState("v/4", api.ValueStateConfigured)
	e.expectSB("delete v2", map[string]string{"v/2": v2, "v/4": v4})

	// 4. NB: v2 again, with a new value: the cycle is complete again and
	//    everything is applied. The old v2 left in the SB by the failed
	//    Delete lacks its dependency v3, so it is deleted and v2 is created
	//    with the cycle.
	const v2new = "v2-new dep=v/3"
	e.mustCommit(ctx, set("v/2", v2new))
	e.expectOps("v2 back",
		"delete v/2",
		"create v/2="+v2new,
		"create v/1="+v1,
		"create v/3="+v3)
	for _, key := range []string{"v/1", "v/2", "v/3", "v/4"} {
		e.expectState(key, api.ValueStateConfigured)
	}
	e.expectSB("v2 back", map[string]string{"v/1": v1, "v/2": v2new, "v/3": v3, "v/4": v4})
}

// Scenario 10 (the original's TestSpecialCase): the Delete of a derived value
// fails while its base value is deleted: the error is returned for the
// derived key and the base value is kept (never deleted while a derived
// value of it is still in the SB); with revert, it is CONFIGURED.
func TestScenario10_FailedDeleteOfDerivedValue(t *testing.T) {
	e := newEnv(t)
	e.register(
		mocksb.Options{Name: "A", Prefix: "a/", NB: true, WithMetadata: true, Keys: depth(1), Derived: items},
		mocksb.Options{Name: "A-item", Prefix: "a/", Keys: depth(2), NoRetrieve: true},
	)
	ctx := context.Background()
	full := map[string]string{"a/v1": "items=item1", "a/v1/item1": "item1"}

	e.mustCommit(ctx, set("a/v1", "items=item1"))
	e.expectOps("create", "create a/v1=items=item1", "create a/v1/item1=item1")

	// 1. With revert (as in the original): Delete(a/v1/item1) fails, there
	//    is nothing to undo, the base is not deleted.
	e.sb.Fail("delete", "a/v1/item1", nil, 1)
	_, err := e.commit(withOpts(ctx, api.TxnOptions{Revert: true}), del("a/v1"))
	te := txnErr(t, err)
	expectKVErrors(t, te, mocksb.ErrInjected, map[string]api.TxnOperation{"a/v1/item1": api.OpDelete})
	e.expectOps("revert", "delete a/v1/item1")
	e.expectState("a/v1", api.ValueStateConfigured)
	e.expectSB("revert", full)

	// 2. Best effort: the same failure. Delete(a/v1) is not called while its
	//    derived value is still there, and both stay in the SB. The spec
	//    fixes the base's state only for the reverted case above; here the
	//    base is no longer requested, so CONFIGURED or FAILED (its Delete
	//    could not be done) are both acceptable.
	e.sb.Fail("delete", "a/v1/item1", nil, 1)
	_, err = e.commit(ctx, del("a/v1"))
	te = txnErr(t, err)
	for _, kv := range te.KVErrors {
		if kv.Key == "a/v1/item1" && (kv.Operation != api.OpDelete || !errors.Is(kv.Error, mocksb.ErrInjected)) {
			t.Errorf("best effort: error of a/v1/item1: %v %v, want DELETE %v", kv.Operation, kv.Error, mocksb.ErrInjected)
		}
	}
	if !errors.Is(te.ErrorOf("a/v1/item1"), mocksb.ErrInjected) {
		t.Errorf("best effort: ErrorOf(a/v1/item1) = %v, want %v", te.ErrorOf("a/v1/item1"), mocksb.ErrInjected)
	}
	e.expectOps("best effort", "delete a/v1/item1")
	switch st := e.status("a/v1"); {
	case st == nil:
		t.Errorf("best effort: no status for a/v1, which is still in the SB")
	case st.GetState() == api.ValueStateConfigured:
	case st.GetState() == api.ValueStateFailed && st.GetLastOperation() == api.OpDelete:
	default:
		t.Errorf("best effort: a/v1 %v (last operation %v), want CONFIGURED or FAILED on DELETE", st.GetState(), st.GetLastOperation())
	}
	e.expectSB("best effort", full)
}

// Scenario 11 (the original's TestResyncWithEmptySB): a full resync against
// an empty SB creates everything in dependency order (a base value depends on
// a derived value, a derived value on another one); a full resync with no
// values then deletes everything in reverse dependency order.
func TestScenario11_ResyncEmptySBThenEmptyResync(t *testing.T) {
	e := newEnv(t)
	deps := depsFrom(map[string][]string{
		"a/v2":       {"a/v1/item1"}, // base value -> derived value
		"a/v1/item2": {"a/v2/item1"}, // derived value -> derived value
	})
	var correlate correlateLog
	e.register(
		mocksb.Options{Name: "A", Prefix: "a/", NB: true, WithMetadata: true, Keys: depth(1),
			Derived: items, Deps: deps, OnRetrieve: correlate.record},
		mocksb.Options{Name: "A-item", Prefix: "a/", Keys: depth(2), NoRetrieve: true, Deps: deps},
	)

	// 1. Full resync, SB empty: Retrieve (with the NB values as
	//    correlate), then:
	//    v1, v1/item1; v2 (needed v1/item1), v2/item1; v1/item2 (needed
	//    v2/item1).
	if _, err := e.resync(set("a/v2", "items=item1"), set("a/v1", "items=item1,item2")); err != nil {
		t.Fatalf("resync: %v", err)
	}
	e.expectOpsWithRetrieve("resync",
		"retrieve A",
		"create a/v1=items=item1,item2",
		"create a/v1/item1=item1",
		"create a/v2=items=item1",
		"create a/v2/item1=item1",
		"create a/v1/item2=item2")
	if got := correlate.last(); !slices.Equal(got, []string{"a/v1", "a/v2"}) {
		t.Errorf("correlate of Retrieve: %q, want the NB values a/v1, a/v2", got)
	}
	for _, key := range []string{"a/v1", "a/v1/item1", "a/v1/item2", "a/v2", "a/v2/item1"} {
		e.expectState(key, api.ValueStateConfigured)
	}
	e.expectSB("resync", map[string]string{
		"a/v1": "items=item1,item2", "a/v1/item1": "item1", "a/v1/item2": "item2",
		"a/v2": "items=item1", "a/v2/item1": "item1",
	})

	// 2. Full resync with no values: Retrieve, then delete in reverse
	//    dependency order: v1/item2 (needs v2/item1), v2/item1, v2 (needs
	//    v1/item1), v1/item1, v1.
	if _, err := e.resync(); err != nil {
		t.Fatalf("empty resync: %v", err)
	}
	e.expectOpsWithRetrieve("empty resync",
		"retrieve A",
		"delete a/v1/item2",
		"delete a/v2/item1",
		"delete a/v2",
		"delete a/v1/item1",
		"delete a/v1")
	for _, key := range []string{"a/v1", "a/v1/item1", "a/v1/item2", "a/v2", "a/v2/item1"} {
		e.expectGone(key)
	}
	e.expectSB("empty resync", nil)
	if labels := e.s.GetMetadataMap("A").ListLabels(); len(labels) != 0 {
		t.Errorf("metadata left after everything was deleted: %q", labels)
	}
}

// Scenario 12 (the original's TestResyncWithMultipleDescriptors): the SB
// already holds values of three descriptors (interfaces, bridge domains,
// routes) left by an earlier run. A full resync retrieves them in
// RetrieveDependencies order (iface, then bd, then route), whatever the
// registration order, does only the operations needed, and keeps the
// metadata of the retrieved values. A second identical resync does nothing.
func TestScenario12_ResyncNonEmptySB(t *testing.T) {
	e := newEnv(t)
	var ifCorrelate, bdCorrelate, routeCorrelate correlateLog
	// Registered in reverse order: only RetrieveDependencies orders Retrieve.
	e.register(
		mocksb.Options{Name: "route", Prefix: "route/", NB: true, Deps: mocksb.DependsOn,
			RetrieveDependencies: []string{"bd"}, OnRetrieve: routeCorrelate.record},
		mocksb.Options{Name: "bd", Prefix: "bd/", NB: true, WithMetadata: true, Deps: mocksb.DependsOn,
			RetrieveDependencies: []string{"iface"}, OnRetrieve: bdCorrelate.record},
		mocksb.Options{Name: "iface", Prefix: "iface/", NB: true, WithMetadata: true,
			OnRetrieve: ifCorrelate.record},
	)
	// What an earlier run of the agent left in the SB.
	e.sb.Put("iface/a", mocksb.Str("tap"), &mocksb.Meta{Index: 101}, api.FromNB)
	e.sb.Put("iface/b", mocksb.Str("tap mtu=1500"), &mocksb.Meta{Index: 102}, api.FromNB)
	e.sb.Put("iface/stale", mocksb.Str("tap"), &mocksb.Meta{Index: 103}, api.FromNB)
	e.sb.Put("bd/bd1", mocksb.Str("bd dep=iface/a"), &mocksb.Meta{Index: 201}, api.FromNB)
	e.sb.Put("route/r1", mocksb.Str("r1 dep=iface/a"), nil, api.FromNB)
	e.sb.Put("route/r2", mocksb.Str("r2 via=1.1.1.1 dep=iface/b"), nil, api.FromNB)
	e.sb.Put("route/stale", mocksb.Str("stale dep=iface/stale"), nil, api.FromNB)

	nb := []kv{
		set("iface/a", "tap"),                         // in sync
		set("iface/b", "tap mtu=9000"),                // update
		set("iface/c", "tap"),                         // create
		set("bd/bd1", "bd dep=iface/a"),               // in sync
		set("route/r1", "r1 dep=iface/a"),             // in sync
		set("route/r2", "r2 via=2.2.2.2 dep=iface/b"), // update
		set("route/r3", "r3 dep=iface/c"),             // create, after iface/c
		// iface/stale and route/stale are not requested: deleted, the
		// route first.
	}

	// 1. Full resync: Retrieve in dependency order, then the minimal
	//    changes: the removal of the values no longer requested first, then
	//    the NB values in key order (the order of independent operations is
	//    the engine's choice; route/stale before iface/stale and iface/c
	//    before route/r3 are not). bd/bd1, route/r1 and iface/a are in
	//    sync: untouched.
	if _, err := e.resync(nb...); err != nil {
		t.Fatalf("resync: %v", err)
	}
	e.expectOpsWithRetrieve("resync",
		"retrieve iface",
		"retrieve bd",
		"retrieve route",
		"delete route/stale",
		"delete iface/stale",
		"update iface/b=tap mtu=9000",
		"create iface/c=tap",
		"update route/r2=r2 via=2.2.2.2 dep=iface/b", // dependencies first, then key order
		"create route/r3=r3 dep=iface/c")
	if got := ifCorrelate.last(); !slices.Equal(got, []string{"iface/a", "iface/b", "iface/c"}) {
		t.Errorf("correlate of iface Retrieve: %q, want the NB interfaces", got)
	}
	if got := bdCorrelate.last(); !slices.Equal(got, []string{"bd/bd1"}) {
		t.Errorf("correlate of bd Retrieve: %q, want [bd/bd1]", got)
	}
	if got := routeCorrelate.last(); !slices.Equal(got, []string{"route/r1", "route/r2", "route/r3"}) {
		t.Errorf("correlate of route Retrieve: %q, want the NB routes", got)
	}
	for _, key := range []string{"iface/a", "iface/b", "iface/c", "bd/bd1", "route/r1", "route/r2", "route/r3"} {
		e.expectState(key, api.ValueStateConfigured)
	}
	e.expectGone("iface/stale")
	e.expectGone("route/stale")
	// Metadata found by Retrieve is kept (also across the Update of b);
	// the created interface has the SB's new index.
	e.expectMeta("iface", "iface/a", 101)
	e.expectMeta("iface", "iface/b", 102)
	e.expectMeta("iface", "iface/c", 1)
	e.expectMeta("bd", "bd/bd1", 201)
	if _, ok := e.s.GetMetadataMap("iface").GetValue("iface/stale"); ok {
		t.Errorf("metadata of the deleted iface/stale is still published")
	}
	want := map[string]string{
		"iface/a": "tap", "iface/b": "tap mtu=9000", "iface/c": "tap",
		"bd/bd1":   "bd dep=iface/a",
		"route/r1": "r1 dep=iface/a", "route/r2": "r2 via=2.2.2.2 dep=iface/b", "route/r3": "r3 dep=iface/c",
	}
	e.expectSB("resync", want)

	// 2. The same resync again: the SB is in sync, only Retrieve is called.
	if _, err := e.resync(nb...); err != nil {
		t.Fatalf("second resync: %v", err)
	}
	e.expectOpsWithRetrieve("resync in sync", "retrieve iface", "retrieve bd", "retrieve route")
	e.expectSB("resync in sync", want)
	e.expectMeta("iface", "iface/a", 101)
}

// Scenario 13 (the original's TestResyncNotRemovingSBValues): values the agent
// did not create (retrieved with origin FromSB, of unknown origin and not
// requested, or reported by an SB notification) are OBTAINED; a resync never
// deletes them, and NB values may depend on them.
func TestScenario13_ResyncKeepsObtainedValues(t *testing.T) {
	e := newEnv(t)
	rt := routes()
	rt.RetrieveDependencies = []string{"iface"}
	e.register(ifaces(), rt)
	// Pre-existing in the SB, not created by the agent.
	e.sb.Put("iface/local0", mocksb.Str("loopback"), &mocksb.Meta{Index: 0}, api.FromSB)
	e.sb.Put("iface/eth0", mocksb.Str("physical"), &mocksb.Meta{Index: 50}, api.FromSB)
	e.sb.Put("iface/mystery", mocksb.Str("tap"), &mocksb.Meta{Index: 51}, api.UnknownOrigin)
	obtained := map[string]string{"iface/local0": "loopback", "iface/eth0": "physical", "iface/mystery": "tap"}

	// 1. Full resync: an interface and a route through the physical eth0.
	//    Only the NB values are created.
	if _, err := e.resync(set("iface/a", "tap"), set("route/r1", "r1 dep=iface/eth0")); err != nil {
		t.Fatalf("resync: %v", err)
	}
	e.expectOpsWithRetrieve("resync",
		"retrieve iface",
		"retrieve route",
		"create iface/a=tap",
		"create route/r1=r1 dep=iface/eth0")
	for key := range obtained {
		e.expectState(key, api.ValueStateObtained)
	}
	e.expectMeta("iface", "iface/eth0", 50)
	e.expectState("iface/a", api.ValueStateConfigured)
	e.expectState("route/r1", api.ValueStateConfigured)
	e.expectSB("resync", map[string]string{
		"iface/local0": "loopback", "iface/eth0": "physical", "iface/mystery": "tap",
		"iface/a": "tap", "route/r1": "r1 dep=iface/eth0",
	})

	// 2. A host interface appears and is reported by an SB notification:
	//    OBTAINED, no operation.
	e.sb.Put("iface/host1", mocksb.Str("veth"), nil, api.FromSB)
	e.notify(api.KVWithMetadata{Key: "iface/host1", Value: mocksb.Str("veth"), Origin: api.FromSB})
	e.expectOps("notification")
	e.expectState("iface/host1", api.ValueStateObtained)
	obtained["iface/host1"] = "veth"

	// 3. Full resync with no values: the agent's values go (independent
	//    of each other: the route depends on the obtained eth0); the
	//    obtained ones stay.
	if _, err := e.resync(); err != nil {
		t.Fatalf("empty resync: %v", err)
	}
	e.expectOpsWithRetrieve("empty resync",
		"retrieve iface",
		"retrieve route",
		"delete iface/a",
		"delete route/r1")
	for key := range obtained {
		e.expectState(key, api.ValueStateObtained)
	}
	e.expectGone("iface/a")
	e.expectGone("route/r1")
	e.expectSB("empty resync", obtained)
}

// Scenario 14 (the original's TestEmptyResync): a full resync with no values
// on an empty system only calls Retrieve (of the descriptors that have one,
// in dependency order) and executes no operation.
func TestScenario14_EmptyResyncOnEmptySystem(t *testing.T) {
	e := newEnv(t)
	var ifCorrelate, routeCorrelate correlateLog
	iface := ifaces()
	iface.OnRetrieve = ifCorrelate.record
	rt := routes()
	rt.RetrieveDependencies = []string{"iface"}
	rt.OnRetrieve = routeCorrelate.record
	e.register(rt, iface, mocksb.Options{Name: "acl", Prefix: "acl/", NB: true, NoRetrieve: true})

	seq, err := e.commit(withOpts(withOpts(context.Background(), api.TxnOptions{Resync: api.FullResync, Verbose: true}), api.TxnOptions{Description: "empty resync"}))
	if err != nil {
		t.Fatalf("resync: %v", err)
	}
	e.expectOpsWithRetrieve("empty resync", "retrieve iface", "retrieve route")
	if len(ifCorrelate.last()) != 0 || len(routeCorrelate.last()) != 0 {
		t.Errorf("correlate of an empty resync: iface %q, route %q, want none", ifCorrelate.last(), routeCorrelate.last())
	}
	e.expectSB("empty resync", nil)
	if labels := e.s.GetMetadataMap("iface").ListLabels(); len(labels) != 0 {
		t.Errorf("metadata after an empty resync: %q", labels)
	}
	rec := e.s.GetRecordedTransaction(seq)
	switch {
	case rec == nil:
		t.Errorf("txn %d not recorded", seq)
	case rec.TxnType != api.NBTransaction || rec.ResyncType != api.FullResync || rec.Description != "empty resync":
		t.Errorf("txn %d: type %v resync %v description %q", seq, rec.TxnType, rec.ResyncType, rec.Description)
	case len(rec.Values) != 0 || len(rec.Planned) != 0 || len(rec.Executed) != 0:
		t.Errorf("txn %d: %d values, %d planned, %d executed operations, want none",
			seq, len(rec.Values), len(rec.Planned), len(rec.Executed))
	}
}

// TestResyncPublishesRetrievedMetadata: after a full resync, the metadata
// map of every descriptor holds what its Retrieve returned: for a
// descriptor whose values a later Retrieve looks up (named in its
// RetrieveDependencies: published before that Retrieve, which sees it) as
// for one no Retrieve depends on (published as the values are recorded):
// an in-sync value's, one the SB renumbered behind the agent's back, a
// value found in the SB only.
func TestResyncPublishesRetrievedMetadata(t *testing.T) {
	e := newEnv(t)
	var seen []int // the interface indexes the leaf Retrieve found published
	e.register(
		mocksb.Options{Name: "leaf", Prefix: "leaf/", NB: true, WithMetadata: true, Deps: mocksb.DependsOn,
			RetrieveDependencies: []string{"iface"}, OnRetrieve: func([]api.KVWithMetadata) {
				seen = seen[:0]
				for _, key := range []string{"iface/a", "iface/b"} {
					if md, ok := e.s.GetMetadataMap("iface").GetValue(key); ok {
						seen = append(seen, md.(*mocksb.Meta).Index)
					}
				}
			}},
		mocksb.Options{Name: "iface", Prefix: "iface/", NB: true, WithMetadata: true},
	)
	nb := []kv{set("iface/a", "tap"), set("iface/b", "tap"), set("leaf/x", "x dep=iface/a"), set("leaf/y", "y dep=iface/b")}
	if _, err := e.resync(nb...); err != nil {
		t.Fatal(err)
	}
	x := e.metaIndex("leaf", "leaf/x")
	if x == 0 || e.metaIndex("leaf", "leaf/y") == 0 {
		t.Fatalf("created leaves without their metadata published: x %d, y %d", x, e.metaIndex("leaf", "leaf/y"))
	}

	// Behind the agent's back: b and y renumbered, z created.
	e.sb.Put("iface/b", mocksb.Str("tap"), &mocksb.Meta{Index: 102}, api.FromNB)
	e.sb.Put("leaf/y", mocksb.Str("y dep=iface/b"), &mocksb.Meta{Index: 202}, api.FromNB)
	e.sb.Put("leaf/z", mocksb.Str("z"), &mocksb.Meta{Index: 203}, api.FromSB)
	if _, err := e.resync(nb...); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int{e.metaIndex("iface", "iface/a"), 102}) {
		t.Errorf("the leaf Retrieve found the interface indexes %v published, want those retrieved just before (%d, 102)", seen, e.metaIndex("iface", "iface/a"))
	}
	e.expectMeta("iface", "iface/b", 102)
	e.expectMeta("leaf", "leaf/x", x)
	e.expectMeta("leaf", "leaf/y", 202)
	e.expectMeta("leaf", "leaf/z", 203)
	e.expectState("leaf/z", api.ValueStateObtained)
}

// TestResyncRetrievedInAnyOrder: a resync makes the same changes whatever
// the order in which a Retrieve returns its values (the refresh finds
// their nodes walking the graph's in key order): reversed and shuffled,
// an in-sync value is left alone, one changed behind the agent's back is
// updated, a missing one created, a stale one deleted; twice returned,
// the first is kept.
func TestResyncRetrievedInAnyOrder(t *testing.T) {
	for name, reorder := range map[string]func([]api.KVWithMetadata) []api.KVWithMetadata{
		"sorted":   func(kvs []api.KVWithMetadata) []api.KVWithMetadata { return kvs },
		"reversed": func(kvs []api.KVWithMetadata) []api.KVWithMetadata { slices.Reverse(kvs); return kvs },
		"shuffled": func(kvs []api.KVWithMetadata) []api.KVWithMetadata {
			rand.New(rand.NewPCG(7, 9)).Shuffle(len(kvs), func(i, j int) { kvs[i], kvs[j] = kvs[j], kvs[i] })
			return kvs
		},
		"twice": func(kvs []api.KVWithMetadata) []api.KVWithMetadata { return append(kvs, kvs[0]) },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			d := e.sb.Descriptor(mocksb.Options{Name: "v", Prefix: "v/", NB: true, WithMetadata: true})
			retrieve := d.Retrieve
			d.Retrieve = func(ctx context.Context, c []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
				kvs, err := retrieve(ctx, c)
				slices.SortFunc(kvs, func(a, b api.KVWithMetadata) int { return strings.Compare(a.Key, b.Key) })
				return reorder(kvs), err
			}
			if err := e.s.RegisterKVDescriptor(d); err != nil {
				t.Fatal(err)
			}
			var nb []kv
			for i := range 40 {
				nb = append(nb, set(fmt.Sprintf("v/%02d", i), fmt.Sprintf("value %d", i)))
			}
			e.mustCommit(context.Background(), nb...)
			e.sb.Put("v/05", mocksb.Str("changed"), &mocksb.Meta{Index: 500}, api.FromNB)
			e.sb.Remove("v/17")
			e.sb.Put("v/99", mocksb.Str("stale"), &mocksb.Meta{Index: 900}, api.FromNB)
			e.sb.ClearOps()
			_, err := e.resync(nb...)
			if name == "twice" {
				if err == nil || !strings.Contains(err.Error(), "returned v/00 twice; the first is kept") {
					t.Fatalf("resync with v/00 retrieved twice: %v, want that said", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			e.expectOpsWithRetrieve("resync", "retrieve v", "delete v/99", "update v/05=value 5", "create v/17=value 17")
			for _, x := range nb {
				e.expectState(x.key, api.ValueStateConfigured)
			}
			e.expectGone("v/99")
		})
	}
}

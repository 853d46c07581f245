package l2plugin_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

// mustResync commits a resync and returns the operations it executed.
func (e *env) mustResync(typ api.ResyncType, kvs ...kv) []string {
	e.t.Helper()
	seq, err := e.resync(typ, kvs...)
	if err != nil {
		e.t.Fatalf("%v resync: %v", typ, err)
	}
	return e.executed(seq)
}

// expectStates fails the test for every key not in its expected state.
func (e *env) expectStates(when string, want map[string]api.ValueState) {
	e.t.Helper()
	for key, st := range want {
		if got := e.state(key); got != st {
			e.t.Errorf("%s: %s is %v, want %v (%v)", when, key, got, st, e.status(key))
		}
	}
}

// sbKeys returns the keys of a descriptor's SB view (its Retrieve).
func (e *env) sbKeys(descriptor string) []string {
	e.t.Helper()
	kvs, err := e.s.DumpValuesByDescriptor(descriptor, api.SBView)
	if err != nil {
		e.t.Fatalf("SB dump of %s: %v", descriptor, err)
	}
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}
	return keys
}

// memberIndexes returns the sw_if_indexes of the members of the domain
// tagged name, as VPP has them, sorted.
func (e *env) memberIndexes(name string) []uint32 {
	e.t.Helper()
	return e.mustBD(name).MemberIndexes()
}

func ifKey(name string) string { return ifplugin.InterfaceKey(name) }

func sortedIndexes(idx ...uint32) []uint32 {
	slices.Sort(idx)
	return idx
}

// setL2Bridge puts an interface into, or takes it out of, a bridge domain
// behind the agent's back.
func (e *env) setL2Bridge(sw, bdID uint32, enable bool) {
	e.t.Helper()
	conn, err := e.m.Conn(l2plugin.AreaName)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := l2.NewServiceClient(conn).SwInterfaceSetL2Bridge(context.Background(), &l2.SwInterfaceSetL2Bridge{
		RxSwIfIndex: interface_types.InterfaceIndex(sw), BdID: bdID, Enable: enable,
	}); err != nil {
		e.t.Fatalf("sw_interface_set_l2_bridge (sw_if_index %d, bd_id %d, enable %v): %v", sw, bdID, enable, err)
	}
}

// TestMemberWithMissingInterfaceResync: a member whose interface does not
// exist waits (PENDING) while the domain and its other members are in
// VPP; resyncs of that state, by a running agent or a restarted one,
// execute nothing; the interface's creation adds the member.
func TestMemberWithMissingInterfaceResync(t *testing.T) {
	e := newEnv(t)
	bd1 := bdKV(&vppl2.BridgeDomain{Name: "bd1", Flood: true, Forward: true, Learn: true, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "loop1", BridgedVirtualInterface: true}, {Name: "ghost9"}, {Name: "loop2"},
	}})
	cfg := []kv{iface("loop1"), iface("loop2"), bd1}
	bind := func(i string) string { return l2plugin.BDInterfaceKey("bd1", i) }
	states := map[string]api.ValueState{
		bdKey("bd1"):   api.ValueStateConfigured,
		bind("loop1"):  api.ValueStateConfigured,
		bind("loop2"):  api.ValueStateConfigured,
		bind("ghost9"): api.ValueStatePending,
	}
	e.mustCommit(cfg...)
	e.expectStates("applied", states)
	if st := e.status(bind("ghost9")); !slices.Contains(st.GetDetails(), "interface ghost9") {
		t.Errorf("ghost9's binding: %v, want PENDING on interface ghost9", st)
	}
	loop1, loop2 := e.swIfIndex("loop1"), e.swIfIndex("loop2")
	inVPP := func(when string, want ...uint32) {
		t.Helper()
		if got := e.memberIndexes("bd1"); !slices.Equal(got, sortedIndexes(want...)) {
			t.Errorf("%s: members of bd1 in VPP %v, want %v", when, got, sortedIndexes(want...))
		}
		if b := e.mustBD("bd1"); b.BVI != loop1 {
			t.Errorf("%s: BVI of bd1 %d, want loop1 (%d)", when, b.BVI, loop1)
		}
	}
	inVPP("applied", loop1, loop2)

	noop := func(when string, typ api.ResyncType, kvs ...kv) {
		t.Helper()
		e.resetCalls()
		if ops := e.mustResync(typ, kvs...); len(ops) != 0 {
			t.Errorf("%s: %v executed %v, want nothing", when, typ, ops)
		}
		if w, _ := e.writes(); len(w) != 0 {
			t.Errorf("%s: %v wrote %v to VPP", when, typ, w)
		}
		e.expectStates(when, states)
	}
	noop("first resync", api.FullResync, cfg...)
	noop("second resync", api.FullResync, cfg...)
	noop("downstream resync", api.DownstreamResync)

	// The agent restarts: VPP has the state it applied.
	e.startScheduler()
	noop("resync of a restarted agent", api.FullResync, cfg...)
	noop("its second resync", api.FullResync, cfg...)
	inVPP("after the resyncs", loop1, loop2)
	// The SB views: the domain with the configured members, the bindings
	// that VPP has.
	if got := e.sbKeys(l2plugin.BDInterfaceDescriptorName); !slices.Equal(got, []string{bind("loop1"), bind("loop2")}) {
		t.Errorf("SB view of the bindings %v, want loop1's and loop2's", got)
	}

	// ghost9 comes: its member is added, nothing else.
	seq := e.mustCommit(iface("ghost9"))
	if ops := e.executed(seq); !slices.Equal(ops, []string{"CREATE " + ifKey("ghost9") + " []", "CREATE " + bind("ghost9") + " [DERIVED WAS-PENDING]"}) {
		t.Errorf("creating ghost9 executed %v, want ghost9 and its binding created", ops)
	}
	states[bind("ghost9")] = api.ValueStateConfigured
	e.expectStates("ghost9 created", states)
	inVPP("ghost9 created", loop1, loop2, e.swIfIndex("ghost9"))
	cfg = append(cfg, iface("ghost9"))
	noop("resync with ghost9", api.FullResync, cfg...)
}

// TestMemberDriftRepairedByResync: VPP loses a member or gains one of the
// agent's interfaces behind the agent's back; a full resync puts back or
// takes out exactly that member, the domain itself untouched.
func TestMemberDriftRepairedByResync(t *testing.T) {
	e := newEnv(t)
	bd1 := bdKV(&vppl2.BridgeDomain{Name: "bd1", Forward: true, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "a"}, {Name: "b", SplitHorizonGroup: 3},
	}})
	cfg := []kv{iface("a"), iface("b"), iface("c"), bd1}
	e.mustCommit(cfg...)
	a, b, c := e.swIfIndex("a"), e.swIfIndex("b"), e.swIfIndex("c")
	id := e.mustBD("bd1").BdID

	e.setL2Bridge(b, id, false) // b taken out
	e.setL2Bridge(c, id, true)  // c put in
	ops := e.mustResync(api.FullResync, cfg...)
	want := []string{
		"CREATE " + l2plugin.BDInterfaceKey("bd1", "b") + " [DERIVED]",
		"DELETE " + l2plugin.BDInterfaceKey("bd1", "c") + " [DERIVED]",
	}
	for _, w := range want {
		if !slices.Contains(ops, w) {
			t.Errorf("resync executed %v, want %s", ops, w)
		}
	}
	if slices.ContainsFunc(ops, func(op string) bool {
		return strings.HasPrefix(op, "CREATE "+bdKey("bd1")) || strings.HasPrefix(op, "DELETE "+bdKey("bd1"))
	}) {
		t.Errorf("resync executed %v: the domain itself was re-created", ops)
	}
	got := e.mustBD("bd1").Members // by sw_if_index: VPP may give b the lower one
	wantMembers := []vpptest.BridgeMember{{SwIfIndex: a}, {SwIfIndex: b, SHG: 3}}
	slices.SortFunc(wantMembers, func(x, y vpptest.BridgeMember) int { return cmp.Compare(x.SwIfIndex, y.SwIfIndex) })
	if !slices.Equal(got, wantMembers) {
		t.Errorf("members after the resync %+v, want a (%d) and b (%d, SHG 3)", got, a, b)
	}
	if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
		t.Errorf("second resync executed %v", ops)
	}
}

// The callbacks look their interfaces up through the view of the scheduler
// running them (api.ViewOf), never through the scheduler itself: binding
// Create and Delete, and the Retrieves (with the lister).
func TestCallbacksLookUpInterfacesThroughTheirView(t *testing.T) {
	e := newEnv(t)
	s, p, reads := vpptest.StartAgentCountingReads(t, e.m, l2plugin.New, vpptest.InterfaceStandInValues(e.m))
	e.s, e.p = s, p
	bd := &vppl2.BridgeDomain{Name: "bdv", Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "lv1"}}}
	e.mustCommit(iface("lv1"), bdKV(bd))
	if got := e.mustBD("bdv").MemberIndexes(); !slices.Equal(got, []uint32{e.swIfIndex("lv1")}) {
		t.Fatalf("members of bdv: %v, want lv1's index", got)
	}
	if _, err := e.resync(api.FullResync, iface("lv1"), bdKV(bd)); err != nil {
		t.Fatal(err)
	}
	e.mustCommit(bdKV(&vppl2.BridgeDomain{Name: "bdv"}))
	if got := e.mustBD("bdv").MemberIndexes(); len(got) != 0 {
		t.Errorf("members of bdv after the binding's delete: %v", got)
	}
	if n := reads.Calls(); n != 0 {
		t.Errorf("the callbacks called the scheduler's GetMetadataMap %d times, want 0 (api.ViewOf)", n)
	}
}

package l2plugin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

func xcKV(rx, tx string) kv {
	return kv{models.VPPXConnect.KeyPrefix + rx, &vppl2.XConnectPair{ReceiveInterface: rx, TransmitInterface: tx}}
}

func fibKV(t *testing.T, f *vppl2.FIBEntry) kv {
	t.Helper()
	k, err := models.VPPL2FIB.Key(f)
	if err != nil {
		t.Fatal(err)
	}
	return kv{k, f}
}

// fromJSON decodes a value written for the original agent under its key,
// and returns it under the key the agent keeps it under.
func fromJSON(t *testing.T, key, json string) kv {
	t.Helper()
	r, err := models.Default.DecodeVariant(key, []byte(json))
	if err != nil {
		t.Fatal(err)
	}
	return kv{r.Key, r.Value}
}

// xconnects renders VPP's cross-connects between interfaces VPP did not
// have when the test started, "<rx> -> <tx>" by tag (sw_if_index when
// untagged), sorted.
func (e *env) xconnects() []string {
	e.t.Helper()
	names := map[uint32]string{}
	for _, i := range e.vpp.NewInterfaces() {
		names[i.SwIfIndex] = i.Tag
		if i.Tag == "" {
			names[i.SwIfIndex] = fmt.Sprint(i.SwIfIndex)
		}
	}
	ds, err := vppconn.Dump[*l2.L2XconnectDetails](context.Background(), e.conn(), &l2.L2XconnectDump{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		if rx, ok := names[uint32(d.RxSwIfIndex)]; ok {
			tx, ok := names[uint32(d.TxSwIfIndex)]
			if !ok {
				tx = fmt.Sprint(d.TxSwIfIndex)
			}
			out = append(out, rx+" -> "+tx)
		}
	}
	slices.Sort(out)
	return out
}

func (e *env) conn() govppapi.Connection {
	e.t.Helper()
	conn, err := e.m.Conn(l2plugin.AreaName)
	if err != nil {
		e.t.Fatal(err)
	}
	return conn
}

// xconnectBehind sets or ends a cross-connect behind the agent's back.
func (e *env) xconnectBehind(rx, tx uint32, enable bool) {
	e.t.Helper()
	if _, err := e.l2().SwInterfaceSetL2Xconnect(context.Background(), &l2.SwInterfaceSetL2Xconnect{
		RxSwIfIndex: interface_types.InterfaceIndex(rx), TxSwIfIndex: interface_types.InterfaceIndex(tx), Enable: enable,
	}); err != nil {
		e.t.Fatalf("sw_interface_set_l2_xconnect (%d to %d, enable %v): %v", rx, tx, enable, err)
	}
}

// restartInSync starts a new scheduler and plugin (the agent restarting on
// the same VPP) and checks that its full resync of cfg executes no
// operation and writes nothing to VPP.
func (e *env) restartInSync(cfg ...kv) {
	e.t.Helper()
	e.startScheduler()
	e.resetCalls()
	if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
		e.t.Errorf("full resync of an in-sync VPP executed %v", ops)
	}
	if w, _ := e.writes(); len(w) != 0 {
		e.t.Errorf("full resync of an in-sync VPP wrote %v", w)
	}
}

// TestXConnects, against vppsim and the real VPP: a two-way cross-connect
// is made, waits for its interfaces, is changed (re-created) and deleted;
// an agent restarting on that VPP executes nothing; one ended behind the
// agent's back comes back at the next resync, one made behind its back on
// its interfaces goes; one on interfaces without a logical name stays.
func TestXConnects(t *testing.T) {
	e := newEnv(t)
	// The original's example (its docs' etcdctl line), and the other way.
	ab := fromJSON(t, "config/vpp/l2/v2/xconnect/if1", `{"receive_interface":"if1","transmit_interface":"if2"}`)
	ba := xcKV("if2", "if1")
	e.mustCommit(iface("if1"), ab, ba)
	if st := e.status(ab.key); st.GetState() != api.ValueStatePending || !slices.Contains(st.GetDetails(), "transmit interface if2") {
		t.Errorf("cross-connect to the missing if2: %v, want PENDING on it", st)
	}
	if st := e.status(ba.key); st.GetState() != api.ValueStatePending || !slices.Contains(st.GetDetails(), "receive interface if2") {
		t.Errorf("cross-connect from the missing if2: %v, want PENDING on it", st)
	}
	e.mustCommit(iface("if2"))
	e.expectStates("if2 came", map[string]api.ValueState{ab.key: api.ValueStateConfigured, ba.key: api.ValueStateConfigured})
	if got, want := e.xconnects(), []string{"if1 -> if2", "if2 -> if1"}; !slices.Equal(got, want) {
		t.Errorf("cross-connects %v, want %v", got, want)
	}
	cfg := []kv{iface("if1"), iface("if2"), iface("if3"), ab, ba}
	e.mustCommit(iface("if3"))
	e.restartInSync(cfg...)

	// Another transmit interface: made again.
	ac := xcKV("if1", "if3")
	seq := e.mustCommit(ac)
	if ops := opsOn(e.executed(seq), ac.key); !slices.Equal(ops, []string{"DELETE " + ac.key, "CREATE " + ac.key}) {
		t.Errorf("new transmit interface executed %v", ops)
	}
	if got, want := e.xconnects(), []string{"if1 -> if3", "if2 -> if1"}; !slices.Equal(got, want) {
		t.Errorf("cross-connects %v, want %v", got, want)
	}
	cfg[3] = ac

	// Drift: one ended behind the agent's back, one made on if3.
	e.xconnectBehind(e.swIfIndex("if2"), 0, false)
	e.xconnectBehind(e.swIfIndex("if3"), e.swIfIndex("if2"), true)
	ops := e.mustResync(api.FullResync, cfg...)
	if got := opsOn(ops, ba.key, xcKV("if3", "if2").key); !slices.Equal(got, []string{"CREATE " + ba.key, "DELETE " + xcKV("if3", "if2").key}) &&
		!slices.Equal(got, []string{"DELETE " + xcKV("if3", "if2").key, "CREATE " + ba.key}) {
		t.Errorf("resync after the drift executed %v", ops)
	}
	if got, want := e.xconnects(), []string{"if1 -> if3", "if2 -> if1"}; !slices.Equal(got, want) {
		t.Errorf("cross-connects after the repair %v, want %v", got, want)
	}

	// Someone else's: an interface without a logical name is left alone.
	lc, err := interfaces.NewServiceClient(e.conn()).CreateLoopback(context.Background(), &interfaces.CreateLoopback{})
	if err != nil {
		t.Fatal(err)
	}
	e.xconnectBehind(uint32(lc.SwIfIndex), e.swIfIndex("if1"), true)
	e.restartInSync(cfg...)
	if got := e.xconnects(); !slices.Contains(got, fmt.Sprintf("%d -> if1", lc.SwIfIndex)) {
		t.Errorf("someone else's cross-connect is gone: %v", got)
	}
	e.xconnectBehind(uint32(lc.SwIfIndex), 0, false)

	e.mustCommit(del(ac.key), del(ba.key))
	if got := e.xconnects(); len(got) != 0 {
		t.Errorf("cross-connects left: %v", got)
	}
}

// TestXConnectAndBridgeDomainTakeTurns: an interface is in one L2 mode, so
// a bridge domain binding and a cross-connect of one interface wait for
// each other (PENDING, naming the holder), and the interface moves from
// one to the other in one transaction; one in someone else's domain is
// refused, VPP untouched.
func TestXConnectAndBridgeDomainTakeTurns(t *testing.T) {
	e := newEnv(t)
	bd := bdKV(&vppl2.BridgeDomain{Name: "bd1", Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "if1"}}})
	binding := l2plugin.BDInterfaceKey("bd1", "if1")
	xc := xcKV("if1", "if2")
	e.mustCommit(iface("if1"), iface("if2"), bd)
	e.mustCommit(xc)
	e.expectWaiting("cross-connect of a member", xc.key, "if1", binding)
	if got := e.xconnects(); len(got) != 0 {
		t.Errorf("cross-connects %v, want none while if1 is a member", got)
	}

	// bd1 lets if1 go: the cross-connect takes it, in the same transaction.
	seq := e.mustCommit(bdKV(&vppl2.BridgeDomain{Name: "bd1"}))
	if ops := opsOn(e.executed(seq), binding, xc.key); !slices.Equal(ops, []string{"DELETE " + binding, "CREATE " + xc.key}) {
		t.Errorf("executed %v, want the binding's DELETE, then the cross-connect's CREATE", ops)
	}
	if got := e.xconnects(); !slices.Equal(got, []string{"if1 -> if2"}) {
		t.Errorf("cross-connects %v", got)
	}
	e.restartInSync(iface("if1"), iface("if2"), bdKV(&vppl2.BridgeDomain{Name: "bd1"}), xc)

	// And back: the binding waits for the cross-connect.
	e.mustCommit(bd)
	e.expectWaiting("member of a cross-connected interface", binding, "if1", xc.key)
	seq = e.mustCommit(del(xc.key))
	if ops := opsOn(e.executed(seq), binding, xc.key); !slices.Equal(ops, []string{"DELETE " + xc.key, "CREATE " + binding}) {
		t.Errorf("executed %v, want the cross-connect's DELETE, then the binding's CREATE", ops)
	}
	if got := e.memberIndexes("bd1"); !slices.Equal(got, []uint32{e.swIfIndex("if1")}) {
		t.Errorf("bd1 members %v", got)
	}
	e.mustCommit(bdKV(&vppl2.BridgeDomain{Name: "bd1"}))

	// Someone else's domain keeps if1: the cross-connect is refused.
	ids := e.vpp.FreeBdIDs(2)
	if _, err := e.l2().BridgeDomainAddDelV2(context.Background(), &l2.BridgeDomainAddDelV2{BdID: ids[1], IsAdd: true}); err != nil {
		t.Fatal(err)
	}
	e.setL2Bridge(e.swIfIndex("if1"), ids[1], true)
	_, err := e.commit(xc)
	var conflict *l2plugin.L2ModeConflictError
	if !errors.As(err, &conflict) || conflict.HolderID != ids[1] || !strings.Contains(err.Error(), "one L2 mode") {
		t.Errorf("cross-connect of a member of someone else's domain: %v, want an L2ModeConflictError naming bd_id %d", err, ids[1])
	}
	if got := e.xconnects(); len(got) != 0 {
		t.Errorf("cross-connects %v, want none", got)
	}
	e.setL2Bridge(e.swIfIndex("if1"), 0, false)
	e.mustCommit(del(xc.key))
	if _, err := e.l2().BridgeDomainAddDelV2(context.Background(), &l2.BridgeDomainAddDelV2{BdID: ids[1], IsAdd: false}); err != nil {
		t.Fatal(err)
	}
}

// fibEntries renders the L2 FIB of the bridge domain tagged bd, "<mac>
// <iface|-> static=<> filter=<> bvi=<>", interfaces by tag, sorted.
func (e *env) fibEntries(bd string) []string {
	e.t.Helper()
	b := e.mustBD(bd)
	names := map[uint32]string{vpptest.NoIndex: "-"}
	for _, i := range e.vpp.DumpInterfaces() {
		names[i.SwIfIndex] = i.Tag
	}
	ds, err := vppconn.Dump[*l2.L2FibTableDetails](context.Background(), e.conn(), &l2.L2FibTableDump{BdID: b.BdID})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s %s static=%v filter=%v bvi=%v", d.Mac, names[uint32(d.SwIfIndex)], d.StaticMac, d.FilterMac, d.BviMac))
	}
	slices.Sort(out)
	return out
}

// fibBehind adds or deletes an L2 FIB entry behind the agent's back.
func (e *env) fibBehind(isAdd bool, bd, mac string, sw uint32, static bool) {
	e.t.Helper()
	m, err := ethernet_types.ParseMacAddress(mac)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.l2().L2fibAddDel(context.Background(), &l2.L2fibAddDel{
		Mac: m, BdID: e.mustBD(bd).BdID, SwIfIndex: interface_types.InterfaceIndex(sw), IsAdd: isAdd, StaticMac: static,
	}); err != nil {
		e.t.Fatalf("l2fib_add_del (add %v, %s in %s): %v", isAdd, mac, bd, err)
	}
}

// TestFIBEntries, against vppsim and the real VPP: forwarding, drop and BVI
// entries of the original's model are added once their interface is in
// their bridge domain; flags change in place, an interface change
// re-creates; an agent restarting on that VPP executes nothing; an entry
// deleted behind the agent's back comes back at the next resync, a static
// one added behind its back in its domain goes, and VPP's own (the BVI's
// MAC, learned entries) stay.
func TestFIBEntries(t *testing.T) {
	e := newEnv(t)
	bd := bdKV(&vppl2.BridgeDomain{Name: "bd1", Learn: true, Forward: true, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "tap1"}, {Name: "bvi", BridgedVirtualInterface: true},
	}})
	// The original's example (its docs' etcdctl line), under its key.
	fwd := fromJSON(t, "config/vpp/l2/v2/fib/bd1/mac/62:89:C6:A3:6D:5C",
		`{"phys_address":"62:89:C6:A3:6D:5C","bridge_domain":"bd1","outgoing_interface":"tap1","action":"FORWARD","static_config":true,"bridged_virtual_interface":false}`)
	drop := fibKV(t, &vppl2.FIBEntry{PhysAddress: "02:00:00:00:0d:01", BridgeDomain: "bd1", Action: vppl2.FIBEntry_DROP})
	waiting := fibKV(t, &vppl2.FIBEntry{PhysAddress: "02:00:00:00:0d:02", BridgeDomain: "bd1", OutgoingInterface: "if2", StaticConfig: true})
	e.mustCommit(iface("tap1"), iface("if2"), iface("bvi"), bd, fwd, drop, waiting)
	e.expectStates("created", map[string]api.ValueState{fwd.key: api.ValueStateConfigured, drop.key: api.ValueStateConfigured})
	if st := e.status(waiting.key); st.GetState() != api.ValueStatePending || !slices.Contains(st.GetDetails(), "interface if2 in bridge domain bd1") {
		t.Errorf("entry of if2, not in bd1: %v, want PENDING on the binding", st)
	}
	bviMAC := ""
	if i, ok := e.vpp.InterfaceTagged("bvi"); ok {
		bviMAC = i.MAC
	}
	want := []string{
		"02:00:00:00:0d:01 - static=true filter=true bvi=false",
		"62:89:c6:a3:6d:5c tap1 static=true filter=false bvi=false",
		bviMAC + " bvi static=true filter=false bvi=true",
	}
	slices.Sort(want)
	if got := e.fibEntries("bd1"); !slices.Equal(got, want) {
		t.Errorf("FIB %q, want %q", got, want)
	}
	// The original's BVI entry: the BVI's MAC, which VPP added already.
	bviEntry := fibKV(t, &vppl2.FIBEntry{PhysAddress: bviMAC, BridgeDomain: "bd1", OutgoingInterface: "bvi", StaticConfig: true, BridgedVirtualInterface: true})
	e.mustCommit(bviEntry)
	cfg := []kv{iface("tap1"), iface("if2"), iface("bvi"), bd, fwd, drop, waiting, bviEntry}
	e.restartInSync(cfg...)

	// Flags in place; another interface re-creates.
	notStatic := kv{fwd.key, &vppl2.FIBEntry{PhysAddress: "62:89:c6:a3:6d:5c", BridgeDomain: "bd1", OutgoingInterface: "tap1"}}
	seq := e.mustCommit(notStatic)
	if ops := opsOn(e.executed(seq), fwd.key); !slices.Equal(ops, []string{"UPDATE " + fwd.key}) {
		t.Errorf("flag change executed %v, want an UPDATE", ops)
	}
	if got := e.fibEntries("bd1"); !slices.Contains(got, "62:89:c6:a3:6d:5c tap1 static=false filter=false bvi=false") {
		t.Errorf("FIB after the flag change %q", got)
	}
	e.mustCommit(fwd)
	toBVI := kv{fwd.key, &vppl2.FIBEntry{PhysAddress: "62:89:C6:A3:6D:5C", BridgeDomain: "bd1", OutgoingInterface: "bvi", StaticConfig: true}}
	seq = e.mustCommit(toBVI)
	if ops := opsOn(e.executed(seq), fwd.key); !slices.Equal(ops, []string{"DELETE " + fwd.key, "CREATE " + fwd.key}) {
		t.Errorf("interface change executed %v, want DELETE and CREATE", ops)
	}
	e.mustCommit(fwd)

	// Drift: an entry deleted, a static entry added and a dynamic one.
	e.fibBehind(false, "bd1", "62:89:c6:a3:6d:5c", e.swIfIndex("tap1"), false)
	e.fibBehind(true, "bd1", "02:00:00:00:0d:0a", e.swIfIndex("tap1"), true)
	e.fibBehind(true, "bd1", "02:00:00:00:0d:0b", e.swIfIndex("tap1"), false)
	stray := fibKV(t, &vppl2.FIBEntry{PhysAddress: "02:00:00:00:0d:0a", BridgeDomain: "bd1", OutgoingInterface: "tap1", StaticConfig: true})
	ops := e.mustResync(api.FullResync, cfg...)
	if got := opsOn(ops, fwd.key, stray.key); len(got) != 2 || !slices.Contains(got, "CREATE "+fwd.key) || !slices.Contains(got, "DELETE "+stray.key) {
		t.Errorf("resync after the drift executed %v", ops)
	}
	want = append(slices.Clone(want), "02:00:00:00:0d:0b tap1 static=false filter=false bvi=false")
	slices.Sort(want)
	if got := e.fibEntries("bd1"); !slices.Equal(got, want) {
		t.Errorf("FIB after the repair %q, want %q", got, want)
	}
	e.fibBehind(false, "bd1", "02:00:00:00:0d:0b", e.swIfIndex("tap1"), false)

	// if2 joins: its entry comes; the values go, before their domain.
	e.mustCommit(bdKV(&vppl2.BridgeDomain{Name: "bd1", Learn: true, Forward: true, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "tap1"}, {Name: "bvi", BridgedVirtualInterface: true}, {Name: "if2"},
	}}))
	if st := e.state(waiting.key); st != api.ValueStateConfigured {
		t.Errorf("entry of if2 once in bd1: %v", st)
	}
	seq = e.mustCommit(del(bd.key), del(fwd.key), del(drop.key), del(waiting.key), del(bviEntry.key))
	ops = e.executed(seq)
	if k := slices.IndexFunc(ops, func(o string) bool { return strings.HasPrefix(o, "DELETE "+bd.key+" ") }); k < 0 || slices.ContainsFunc(ops[k:], func(o string) bool {
		return strings.HasPrefix(o, "DELETE "+models.VPPL2FIB.KeyPrefix)
	}) {
		t.Errorf("delete executed %v, want the entries deleted before their domain", ops)
	}
}

// TestInvalidFIBEntriesAndXConnects: bad values are INVALID, their errors
// naming the fields, and VPP is not touched.
func TestInvalidFIBEntriesAndXConnects(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		x      kv
		fields []string
		want   string
	}{
		{kv{models.VPPL2FIB.KeyPrefix + "bd1/mac/02:00:00:00:00:01", &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:01", BridgeDomain: "bd1"}}, []string{"outgoing_interface"}, "required for a FORWARD entry"},
		{kv{models.VPPL2FIB.KeyPrefix + "bd1/mac/02:00:00:00:00:01", &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:01", BridgeDomain: "bd1", Action: vppl2.FIBEntry_DROP, OutgoingInterface: "if1"}}, []string{"outgoing_interface"}, "a DROP entry has no outgoing interface"},
		{kv{models.VPPL2FIB.KeyPrefix + "bd1/mac/02:00:00:00:00:01", &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:02", BridgeDomain: "bd1", OutgoingInterface: "if1"}}, nil, `"02:00:00:00:00:01" in the key but "02:00:00:00:00:02" in the value`},
		{kv{models.VPPXConnect.KeyPrefix + "if1", &vppl2.XConnectPair{ReceiveInterface: "if1"}}, []string{"transmit_interface"}, "required"},
		{kv{models.VPPXConnect.KeyPrefix + "if1", &vppl2.XConnectPair{ReceiveInterface: "if2", TransmitInterface: "if1"}}, nil, "belongs under"},
	} {
		e.resetCalls()
		_, err := e.commit(c.x)
		var inv *api.InvalidValueError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), c.want) || c.fields != nil && !slices.Equal(inv.InvalidFields, c.fields) {
			t.Errorf("%v: commit error %v, want InvalidValueError on %v saying %q", c.x.value, err, c.fields, c.want)
		}
		if st := e.state(c.x.key); st != api.ValueStateInvalid {
			t.Errorf("%v: %v, want INVALID", c.x.value, st)
		}
		if w, ok := e.writes(); ok && len(w) != 0 {
			t.Errorf("%v: VPP writes %v", c.x.value, w)
		}
		e.mustCommit(del(c.x.key))
	}
}

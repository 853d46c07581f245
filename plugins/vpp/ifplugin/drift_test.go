package ifplugin_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp"
	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/tapv2"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// Drift: the watcher reports the agent's interfaces that someone else
// deletes, or sets to another admin state, through VPP's binary API; the
// scheduler's DriftRepair transaction puts them back with what depends on
// them (or, reporting only, leaves them MISSING with the cause).

// driftDeadline bounds the wait for a repair: the event comes at once, the
// report a LinkEventWindow later, the repair right after.
const driftDeadline = 10 * time.Second

// outsider is another client of VPP: the changes it makes are not the
// agent's.
func (e *lsEnv) outsider() govppapi.Connection {
	e.t.Helper()
	conn, err := govpp.Connect(e.vpp.Socket)
	if err != nil {
		e.t.Fatalf("connecting the outsider: %v", err)
	}
	e.t.Cleanup(conn.Disconnect)
	return conn
}

// commitKVs commits values of any kind (nil: deleted).
func (e *lsEnv) commitKVs(kvs ...driftKV) uint64 {
	e.t.Helper()
	txn := e.s.StartNBTransaction()
	for _, kv := range kvs {
		txn.SetValue(kv.key, kv.value)
	}
	seq, err := txn.Commit(context.Background(), api.TxnOptions{})
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	// The watcher reports an interface's link state only with its
	// subscription to VPP's events in place: once it has, what an
	// outsider changes next comes to it as an event.
	for _, kv := range kvs {
		if v, ok := kv.value.(*vppif.Interface); ok && v != nil {
			e.eventually("the link state of "+v.GetName()+" reported", func() (bool, string) {
				got := e.linkKeys(v.GetName())
				return len(got) > 0, fmt.Sprint(got)
			})
		}
	}
	return seq
}

type driftKV struct {
	key   string
	value proto.Message
}

func ifaceKV(v *vppif.Interface) driftKV { return driftKV{ifplugin.InterfaceKey(v.GetName()), v} }

func routeKV(t *testing.T, r *vppl3.Route) driftKV {
	t.Helper()
	key, err := models.VPPRoute.Key(r)
	if err != nil {
		t.Fatal(err)
	}
	return driftKV{key, r}
}

func bdKV(bd *vppl2.BridgeDomain) driftKV {
	return driftKV{models.VPPBridgeDomain.KeyPrefix + bd.GetName(), bd}
}

// eventually polls cond until it holds (driftDeadline at most); cond says
// what it saw, for the failure.
func (e *lsEnv) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(driftDeadline)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not within %v; %s", what, driftDeadline, saw)
		}
		<-tick.C
	}
}

// status returns the status of a key, base or derived (GetValueStatus
// gives the base's, with its derived values').
func (e *lsEnv) status(key string) *api.ValueStatus {
	bs := e.s.GetValueStatus(key)
	if st := bs.GetValue(); st.GetKey() == key {
		return st
	}
	for _, st := range bs.GetDerivedValues() {
		if st.GetKey() == key {
			return st
		}
	}
	return &api.ValueStatus{Key: key, State: api.ValueStateNonexistent}
}

// configured tells whether every key is CONFIGURED, and says how they are.
func (e *lsEnv) configured(keys ...string) (bool, string) {
	var not []string
	for _, k := range keys {
		if st := e.status(k); st.GetState() != api.ValueStateConfigured {
			not = append(not, fmt.Sprintf("%s %v %v", k, st.GetState(), st.GetDetails()))
		}
	}
	return len(not) == 0, "not CONFIGURED: " + strings.Join(not, "; ")
}

// vppHas tells whether VPP has the interface tagged name, admin up, with
// the addresses, and says what VPP has.
func (e *lsEnv) vppHas(name string, addrs ...string) (vpptest.Interface, bool, string) {
	i, ok := e.vpp.InterfaceTagged(name)
	if !ok {
		return i, false, "VPP has no interface tagged " + name
	}
	ok = i.AdminUp && slices.Equal(i.Addresses, addrs)
	return i, ok, fmt.Sprintf("VPP has %s at %d admin up %v addresses %v", name, i.SwIfIndex, i.AdminUp, i.Addresses)
}

// driftRepairs returns the DriftRepair transactions recorded after seq.
func (e *lsEnv) driftRepairs(after uint64) []*api.RecordedTxn {
	var out []*api.RecordedTxn
	for _, r := range e.s.GetTransactionHistory(time.Time{}, time.Time{}) {
		if r.SeqNum > after && r.TxnType == api.DriftRepair {
			out = append(out, r)
		}
	}
	return out
}

// executedKeys lists "OP key" of the executed operations of txns.
func executedKeys(txns []*api.RecordedTxn) []string {
	var out []string
	for _, r := range txns {
		for _, op := range r.Executed {
			out = append(out, op.Operation.String()+" "+op.Key)
		}
	}
	return out
}

func loopWith(name string, addrs ...string) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: addrs}
}

// An interface deleted through the binary API (delete_loopback of the
// parent: VPP deletes its sub-interface too) is created again with its
// address and admin state, its sub-interface, the route through it and
// its bridge-domain binding, by one DriftRepair transaction that records
// what it found.
func TestDriftInterfaceDeletedIsRepaired(t *testing.T) {
	e := newLSEnvWith(t, lsOptions{drift: true})
	sub := &vppif.Interface{Name: "dr1s", Type: vppif.Interface_SUB_INTERFACE, Enabled: true,
		Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "dr1", SubId: 10}}}
	route := routeKV(t, &vppl3.Route{DstNetwork: "10.62.0.0/16", NextHopAddr: "10.61.0.2", OutgoingInterface: "dr1"})
	bd := bdKV(&vppl2.BridgeDomain{Name: "bd-dr", Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "dr2"}}})
	binding := l2plugin.BDInterfaceKey("bd-dr", "dr2")
	start := e.commitKVs(ifaceKV(loopWith("dr1", "10.61.0.1/24")), ifaceKV(sub), ifaceKV(loopWith("dr2")), route, bd)
	keys := []string{ifplugin.InterfaceKey("dr1"), ifplugin.AddressKey("dr1", "10.61.0.1/24"), ifplugin.AdminStateKey("dr1", true),
		ifplugin.InterfaceKey("dr1s"), ifplugin.AdminStateKey("dr1s", true), route.key, ifplugin.InterfaceKey("dr2"), binding}
	if ok, saw := e.configured(keys...); !ok {
		t.Fatal(saw)
	}
	old, _ := e.vpp.InterfaceTagged("dr1")
	ic := interfaces.NewServiceClient(e.outsider())
	if _, err := ic.DeleteLoopback(context.Background(), &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(old.SwIfIndex)}); err != nil {
		t.Fatal(err)
	}

	var dr1 vpptest.Interface
	e.eventually("dr1 created again with its address, admin up", func() (bool, string) {
		i, ok, saw := e.vppHas("dr1", "10.61.0.1/24")
		dr1 = i
		return ok, saw
	})
	e.eventually("dr1s created again on dr1, admin up", func() (bool, string) {
		i, ok, saw := e.vppHas("dr1s")
		return ok && i.SupSwIfIndex == dr1.SwIfIndex, saw
	})
	e.eventually("the route through dr1 added again", func() (bool, string) {
		for _, r := range e.vpp.DumpRoutes(vpptest.SourceAPI) {
			if r.Prefix == netip.MustParsePrefix("10.62.0.0/16") && len(r.Paths) == 1 && r.Paths[0].SwIfIndex == dr1.SwIfIndex {
				return true, ""
			}
		}
		return false, fmt.Sprintf("API routes %v, want 10.62.0.0/16 through %d", e.vpp.DumpRoutes(vpptest.SourceAPI), dr1.SwIfIndex)
	})
	e.eventually("every value CONFIGURED", func() (bool, string) { return e.configured(keys...) })

	repairs := e.driftRepairs(start)
	if len(repairs) == 0 {
		t.Fatal("no DriftRepair transaction recorded")
	}
	if !slices.ContainsFunc(repairs, func(r *api.RecordedTxn) bool {
		return strings.Contains(r.Description, ifplugin.InterfaceKey("dr1")+" (deleted in VPP")
	}) {
		t.Errorf("no DriftRepair transaction says dr1 was deleted in VPP: %q", repairs[0].Description)
	}
	var found []string
	for _, r := range repairs {
		for _, v := range r.Values {
			if v.Value == nil {
				found = append(found, v.Key)
			}
		}
	}
	for _, k := range []string{ifplugin.InterfaceKey("dr1"), ifplugin.InterfaceKey("dr1s")} {
		if !slices.Contains(found, k) {
			t.Errorf("the DriftRepair records %v found gone, want %s among them", found, k)
		}
	}
	ops := executedKeys(repairs)
	for _, want := range []string{"CREATE " + ifplugin.InterfaceKey("dr1"), "CREATE " + route.key, "CREATE " + ifplugin.InterfaceKey("dr1s")} {
		if !slices.Contains(ops, want) {
			t.Errorf("DriftRepair executed %v, want %q among them", ops, want)
		}
	}
	if slices.ContainsFunc(ops, func(op string) bool { return strings.Contains(op, "dr2") || strings.Contains(op, "bd-dr") }) {
		t.Errorf("DriftRepair executed %v: dr2 and its domain were not touched", ops)
	}

	// dr2, a bridge domain member: its binding comes back with it.
	old2, _ := e.vpp.InterfaceTagged("dr2")
	if _, err := ic.DeleteLoopback(context.Background(), &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(old2.SwIfIndex)}); err != nil {
		t.Fatal(err)
	}
	e.eventually("dr2 back in bd-dr", func() (bool, string) {
		i, ok := e.vpp.InterfaceTagged("dr2")
		b, bdOK := e.vpp.BridgeDomainTagged("bd-dr")
		return ok && bdOK && slices.Equal(b.MemberIndexes(), []uint32{i.SwIfIndex}),
			fmt.Sprintf("dr2 %+v (%v), bd-dr %+v (%v)", i, ok, b, bdOK)
	})
	e.eventually("every value CONFIGURED", func() (bool, string) { return e.configured(keys...) })
}

// A TAP deleted through the binary API (tap_delete_v2) is created again.
func TestDriftTapDeletedIsRepaired(t *testing.T) {
	e := newLSEnvWith(t, lsOptions{drift: true})
	e.vpp.NeedTap()
	tap := &vppif.Interface{Name: "drt", Type: vppif.Interface_TAP, Enabled: true, IpAddresses: []string{"10.63.0.1/24"},
		Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 2, HostIfName: "drt-host"}}}
	e.commitKVs(ifaceKV(tap))
	old, ok := e.vpp.InterfaceTagged("drt")
	if !ok {
		t.Fatal("no TAP drt in VPP")
	}
	if _, err := tapv2.NewServiceClient(e.outsider()).TapDeleteV2(context.Background(), &tapv2.TapDeleteV2{SwIfIndex: interface_types.InterfaceIndex(old.SwIfIndex)}); err != nil {
		t.Fatal(err)
	}
	e.eventually("drt created again with its address, admin up", func() (bool, string) {
		_, ok, saw := e.vppHas("drt", "10.63.0.1/24")
		return ok, saw
	})
	e.eventually("drt CONFIGURED", func() (bool, string) { return e.configured(ifplugin.InterfaceKey("drt")) })
}

// An interface set admin down through the binary API comes back up; its
// sub-interface, which can be up only while its parent is, too.
func TestDriftAdminDownIsRepaired(t *testing.T) {
	e := newLSEnvWith(t, lsOptions{drift: true})
	sub := &vppif.Interface{Name: "das", Type: vppif.Interface_SUB_INTERFACE, Enabled: true,
		Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "da1", SubId: 11}}}
	start := e.commitKVs(ifaceKV(loopWith("da1", "10.64.0.1/24")), ifaceKV(sub))
	i, _ := e.vpp.InterfaceTagged("da1")
	ic := interfaces.NewServiceClient(e.outsider())
	if _, err := ic.SwInterfaceSetFlags(context.Background(), &interfaces.SwInterfaceSetFlags{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)}); err != nil {
		t.Fatal(err)
	}
	e.eventually("da1 admin up again", func() (bool, string) {
		now, ok, saw := e.vppHas("da1", "10.64.0.1/24")
		return ok && now.SwIfIndex == i.SwIfIndex, saw
	})
	e.eventually("da1's admin state CONFIGURED", func() (bool, string) {
		return e.configured(ifplugin.AdminStateKey("da1", true), ifplugin.AdminStateKey("das", true))
	})
	ops := executedKeys(e.driftRepairs(start))
	if !slices.Contains(ops, "CREATE "+ifplugin.AdminStateKey("da1", true)) {
		t.Errorf("DriftRepair executed %v, want the admin state of da1 created again", ops)
	}
	if slices.ContainsFunc(ops, func(op string) bool { return op == "CREATE "+ifplugin.InterfaceKey("da1") }) {
		t.Errorf("DriftRepair executed %v: the interface itself was in place", ops)
	}
	if s, ok := e.vpp.InterfaceTagged("das"); !ok || !s.AdminUp {
		t.Errorf("das %+v (%v), want admin up", s, ok)
	}
}

// With DriftReportOnly the values found out of sync stay MISSING with the
// cause in their details (and what stood on them is deleted), until a
// resync repairs them.
func TestDriftReportOnly(t *testing.T) {
	e := newLSEnvWith(t, lsOptions{drift: true, reportOnly: true})
	route := routeKV(t, &vppl3.Route{DstNetwork: "10.66.0.0/16", NextHopAddr: "10.65.0.2", OutgoingInterface: "dro"})
	cfg := []driftKV{ifaceKV(loopWith("dro", "10.65.0.1/24")), ifaceKV(loopWith("dra")), route}
	e.commitKVs(cfg...)
	gone, _ := e.vpp.InterfaceTagged("dro")
	down, _ := e.vpp.InterfaceTagged("dra")
	ic := interfaces.NewServiceClient(e.outsider())
	if _, err := ic.DeleteLoopback(context.Background(), &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(gone.SwIfIndex)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ic.SwInterfaceSetFlags(context.Background(), &interfaces.SwInterfaceSetFlags{SwIfIndex: interface_types.InterfaceIndex(down.SwIfIndex)}); err != nil {
		t.Fatal(err)
	}
	missing := func(key, cause string) func() (bool, string) {
		return func() (bool, string) {
			st := e.status(key)
			ok := st.GetState() == api.ValueStateMissing && slices.ContainsFunc(st.GetDetails(), func(d string) bool {
				return strings.Contains(d, "out of sync with the SB: gone") && strings.Contains(d, cause)
			})
			return ok, fmt.Sprintf("%s: %v %q", key, st.GetState(), st.GetDetails())
		}
	}
	e.eventually("dro MISSING, deleted in VPP", missing(ifplugin.InterfaceKey("dro"), "deleted in VPP"))
	e.eventually("dra's admin state MISSING, set down in VPP", missing(ifplugin.AdminStateKey("dra", true), "set admin down in VPP"))
	e.s.TransactionBarrier()
	if st := e.status(route.key); st.GetState() != api.ValueStatePending {
		t.Errorf("the route through dro: %v, want PENDING (deleted with its interface)", st)
	}
	for _, check := range []func() (bool, string){missing(ifplugin.InterfaceKey("dro"), "deleted"), missing(ifplugin.AdminStateKey("dra", true), "down")} {
		if ok, saw := check(); !ok {
			t.Errorf("after the drift transactions: %s", saw)
		}
	}
	if _, ok := e.vpp.InterfaceTagged("dro"); ok {
		t.Error("dro created again in report-only mode")
	}
	if i, _ := e.vpp.InterfaceTagged("dra"); i.AdminUp {
		t.Error("dra set up again in report-only mode")
	}

	// A downstream resync repairs them.
	txn := e.s.StartNBTransaction()
	if _, err := txn.Commit(context.Background(), api.TxnOptions{Resync: api.DownstreamResync}); err != nil {
		t.Fatalf("downstream resync: %v", err)
	}
	if ok, saw := e.configured(ifplugin.InterfaceKey("dro"), ifplugin.AdminStateKey("dra", true), route.key); !ok {
		t.Error("after the resync: " + saw)
	}
	if _, ok, saw := e.vppHas("dro", "10.65.0.1/24"); !ok {
		t.Error("after the resync: " + saw)
	}
}

// The agent's own changes are not reported: creating 100 interfaces,
// setting them down and deleting them, each seen by the watcher's events,
// makes no drift report and no DriftRepair transaction.
func TestDriftNotCausedByTheAgent(t *testing.T) {
	if vpptest.UserSocket() != "" {
		t.Skipf("the events of a VPP only the test changes: not the user's VPP at %s", vpptest.UserSocket())
	}
	e := newLSEnvWith(t, lsOptions{drift: true})
	const n = 100
	var up, down []driftKV
	var names []string
	for i := range n {
		name := fmt.Sprintf("own%03d", i)
		names = append(names, name)
		v := loopWith(name, fmt.Sprintf("10.67.%d.1/24", i))
		up = append(up, ifaceKV(v))
		d := proto.Clone(v).(*vppif.Interface)
		d.Enabled = false
		down = append(down, ifaceKV(d))
	}
	start := e.commitKVs(up...)
	for _, name := range names {
		e.waitKey(ifplugin.LinkStateKey(name, true), true)
	}
	e.commitKVs(down...)
	for _, name := range names {
		e.waitKey(ifplugin.LinkStateKey(name, false), true)
	}
	var gone []driftKV
	for _, name := range names {
		gone = append(gone, driftKV{ifplugin.InterfaceKey(name), nil})
	}
	e.commitKVs(gone...)
	// The watcher has listed after the deletions' events once the link
	// states are gone; its reports, if any, are queued by then.
	for _, name := range names {
		e.waitKey(ifplugin.LinkStateKey(name, false), false)
	}
	e.s.TransactionBarrier()
	repairs := e.driftRepairs(start)
	if ops := executedKeys(repairs); len(ops) != 0 {
		t.Errorf("the agent's own changes caused repair operations: %v", ops)
	}
	// The watcher compares VPP's admin state with the value the agent
	// applied: the echo of its own changes is no drift.
	if reports := e.rec.driftReports(); len(reports) != 0 || len(repairs) != 0 {
		t.Errorf("the agent's own changes were reported as drift: %d reports (%v), %d DriftRepair transactions", len(reports), reports, len(repairs))
	}
}

// A drift report of values in sync (what the watcher may send for the
// agent's own changes) costs a refresh and changes nothing: the Retrieves
// report every interface type and field, and every derived value, as the
// configuration has them.
func TestDriftReportOfInSyncValuesChangesNothing(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	e.vpp.HostLinks(hostIf1)
	if e.vpp.Real() {
		t.Cleanup(func() { _ = os.RemoveAll(path.Join(e.runtimeDir(), "na-insync")) })
	}
	pushHost(t, e.s)
	cfg := e.everyType()
	start := e.commit(cfg...)
	var reports []api.DriftReport
	for _, v := range cfg {
		reports = append(reports, api.DriftReport{Key: ifplugin.InterfaceKey(v.GetName()), Cause: "test"})
		st := e.s.GetValueStatus(ifplugin.InterfaceKey(v.GetName()))
		if st.GetValue().GetState() != api.ValueStateConfigured {
			t.Fatalf("%s: %v", v.GetName(), st.GetValue())
		}
		for _, d := range st.GetDerivedValues() {
			reports = append(reports, api.DriftReport{Key: d.GetKey(), Cause: "test"})
		}
	}
	if err := e.s.ReportDrift(reports...); err != nil {
		t.Fatal(err)
	}
	e.s.TransactionBarrier()
	var repairs []*api.RecordedTxn
	for _, r := range e.s.GetTransactionHistory(time.Time{}, time.Time{}) {
		if r.SeqNum > start && r.TxnType == api.DriftRepair {
			repairs = append(repairs, r)
		}
	}
	if len(repairs) != 1 {
		t.Fatalf("%d DriftRepair transactions, want 1", len(repairs))
	}
	if r := repairs[0]; len(r.Values) != 0 || len(r.Executed) != 0 {
		t.Errorf("the refresh of %d values in sync found %v out of sync, executed %v", len(reports), r.Values, executedKeys(repairs))
	}
	for _, v := range cfg {
		e.wantState(ifplugin.InterfaceKey(v.GetName()), api.ValueStateConfigured)
	}
	checkEveryType(t, e, cfg)
}

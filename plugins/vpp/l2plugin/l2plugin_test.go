package l2plugin_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func bdKey(name string) string { return models.VPPBridgeDomain.KeyPrefix + name }

func bdKV(bd *vppl2.BridgeDomain) kv { return kv{bdKey(bd.GetName()), bd} }

func arpEntry(ip, mac string) *vppl2.BridgeDomain_ArpTerminationEntry {
	return &vppl2.BridgeDomain_ArpTerminationEntry{IpAddress: ip, PhysAddress: mac}
}

func TestBridgeDomainAttributesAndArpTerminationTable(t *testing.T) {
	e := newEnv(t)
	free := e.vpp.FreeBdIDs(2) // the ids the domains get
	bd := &vppl2.BridgeDomain{
		Name: "bd1", Flood: true, Forward: true, Learn: true, ArpTermination: true, MacAge: 10,
		ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{
			arpEntry("192.168.1.1", "02:00:00:00:00:01"),
			arpEntry("192.168.1.2", "02:00:00:00:00:02"),
			arpEntry("2001:db8::1", "02:00:00:00:00:03"),
		},
	}
	e.mustCommit(bdKV(bd))
	if st := e.state(bdKey("bd1")); st != api.ValueStateConfigured {
		t.Fatalf("state %v, want CONFIGURED", st)
	}
	b := e.mustBD("bd1")
	if b.BdID != free[0] || !b.Flood || b.UuFlood || !b.Forward || !b.Learn || !b.ArpTerm || b.ArpUfwd || b.MacAge != 10 {
		t.Errorf("bridge domain in VPP: %+v", b)
	}
	want := []string{"192.168.1.1=02:00:00:00:00:01", "192.168.1.2=02:00:00:00:00:02", "2001:db8::1=02:00:00:00:00:03"}
	if got := b.ArpEntries; !slices.Equal(got, want) {
		t.Errorf("ARP termination table %v, want %v", got, want)
	}
	if id, ok := e.p.BridgeDomainIndex("bd1"); !ok || id != free[0] {
		t.Errorf("metadata: bd_id %d %v, want %d", id, ok, free[0])
	}

	// Update: flags, MAC age and exactly the changed entries.
	e.resetCalls()
	bd2 := &vppl2.BridgeDomain{
		Name: "bd1", Flood: true, UnknownUnicastFlood: true, Forward: true, ArpTermination: true,
		ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{
			arpEntry("2001:db8::1", "02:00:00:00:00:03"), // kept
			arpEntry("192.168.1.2", "02:00:00:00:00:22"), // re-pointed
			arpEntry("192.168.1.3", "02:00:00:00:00:33"), // added
		}, // 192.168.1.1 removed
	}
	seq := e.mustCommit(bdKV(bd2))
	if ops := e.executed(seq); !slices.Equal(ops, []string{"UPDATE " + bdKey("bd1") + " []"}) {
		t.Errorf("executed %v, want one UPDATE", ops)
	}
	if w, ok := e.writes(); ok && (count(w, "bd_ip_mac_add_del") != 3 || count(w, "bridge_flags") != 2 || count(w, "bridge_domain_set_mac_age") != 1 || len(w) != 6) {
		t.Errorf("VPP writes %v, want 3 bd_ip_mac_add_del, 2 bridge_flags, 1 bridge_domain_set_mac_age", w)
	}
	b = e.mustBD("bd1")
	if b.BdID != free[0] || !b.Flood || !b.UuFlood || !b.Forward || b.Learn || !b.ArpTerm || b.MacAge != 0 {
		t.Errorf("bridge domain in VPP after update: %+v", b)
	}
	want = []string{"192.168.1.2=02:00:00:00:00:22", "192.168.1.3=02:00:00:00:00:33", "2001:db8::1=02:00:00:00:00:03"}
	if got := b.ArpEntries; !slices.Equal(got, want) {
		t.Errorf("ARP termination table %v, want %v", got, want)
	}

	// The same value, reordered and spelled differently: nothing to do.
	e.resetCalls()
	same := &vppl2.BridgeDomain{
		Name: "bd1", Flood: true, UnknownUnicastFlood: true, Forward: true, ArpTermination: true,
		ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{
			arpEntry("192.168.1.3", "02:00:00:00:00:33"),
			arpEntry("2001:DB8:0::1", "02:00:00:00:00:03"),
			arpEntry("192.168.1.2", "02:00:00:00:00:22"),
		},
	}
	seq = e.mustCommit(bdKV(same))
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("equivalent value executed %v", ops)
	}
	if w, _ := e.writes(); len(w) != 0 {
		t.Errorf("equivalent value wrote %v", w)
	}

	// bd_id allocation: the lowest free id from 1.
	e.mustCommit(bdKV(&vppl2.BridgeDomain{Name: "bd2"}))
	if b := e.mustBD("bd2"); b.BdID != free[1] {
		t.Errorf("bd2 got bd_id %d, want %d", b.BdID, free[1])
	}
	e.mustCommit(del(bdKey("bd1")))
	if _, ok := e.bd("bd1"); ok {
		t.Errorf("bd1 still in VPP after delete")
	}
	if _, ok := e.p.BridgeDomainIndex("bd1"); ok {
		t.Errorf("bd1 still in the metadata map after delete")
	}
	e.mustCommit(bdKV(&vppl2.BridgeDomain{Name: "bd3", Learn: true}))
	if b := e.mustBD("bd3"); b.BdID != free[0] || !b.Learn {
		t.Errorf("bd3: %+v, want bd_id %d (the lowest free) with learn", b, free[0])
	}
	e.mustCommit(del(bdKey("bd2")), del(bdKey("bd3")))
}

func TestBridgeDomainSkipsForeignIDs(t *testing.T) {
	e := newEnv(t)
	// A domain someone else made (untagged) holds the lowest free bd_id.
	free := e.vpp.FreeBdIDs(2)
	conn, err := e.m.Conn(l2plugin.AreaName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l2.NewServiceClient(conn).BridgeDomainAddDelV2(context.Background(), &l2.BridgeDomainAddDelV2{BdID: free[0], IsAdd: true, Learn: true}); err != nil {
		t.Fatal(err)
	}
	e.mustCommit(bdKV(&vppl2.BridgeDomain{Name: "mine", Flood: true}))
	if b := e.mustBD("mine"); b.BdID != free[1] {
		t.Errorf("bd_id %d, want %d (%d is taken)", b.BdID, free[1], free[0])
	}
	// A full resync neither reports nor deletes the foreign domain.
	seq, err := e.resync(api.FullResync, bdKV(&vppl2.BridgeDomain{Name: "mine", Flood: true}))
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("resync executed %v", ops)
	}
	if got, want := e.newBridgeDomains(), []string{fmt.Sprintf("%d tag=", free[0]), fmt.Sprintf("%d tag=mine", free[1])}; !slices.Equal(got, want) {
		t.Errorf("new bridge domains in VPP: %v, want %v", got, want)
	}
}

func TestBindingWaitsForItsInterface(t *testing.T) {
	e := newEnv(t)
	bd := &vppl2.BridgeDomain{Name: "bd1", Flood: true, Forward: true, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "loopA", BridgedVirtualInterface: true},
		{Name: "loopB", SplitHorizonGroup: 2},
	}}
	bindA, bindB := l2plugin.BDInterfaceKey("bd1", "loopA"), l2plugin.BDInterfaceKey("bd1", "loopB")
	e.mustCommit(iface("loopA"), bdKV(bd))
	if st := e.state(bdKey("bd1")); st != api.ValueStateConfigured {
		t.Errorf("bridge domain %v, want CONFIGURED (it waits for no interface)", st)
	}
	if st := e.state(bindA); st != api.ValueStateConfigured {
		t.Errorf("binding of loopA %v, want CONFIGURED", st)
	}
	st := e.status(bindB)
	if st.GetState() != api.ValueStatePending || !slices.Contains(st.GetDetails(), "interface loopB") {
		t.Errorf("binding of loopB %v, want PENDING on its interface", st)
	}
	a := e.swIfIndex("loopA")
	b := e.mustBD("bd1")
	if b.BVI != a || !slices.Equal(b.Members, []vpptest.BridgeMember{{SwIfIndex: a}}) {
		t.Errorf("bridge domain in VPP: %+v, want loopA (%d) as BVI only", b, a)
	}

	// The interface comes: the binding is created.
	seq := e.mustCommit(iface("loopB"))
	if st := e.state(bindB); st != api.ValueStateConfigured {
		t.Errorf("binding of loopB %v after its interface came, want CONFIGURED", st)
	}
	if ops := e.executed(seq); !slices.Contains(ops, "CREATE "+bindB+" [DERIVED WAS-PENDING]") {
		t.Errorf("executed %v, want the binding created", ops)
	}
	bsw := e.swIfIndex("loopB")
	b = e.mustBD("bd1")
	if !slices.Contains(b.Members, vpptest.BridgeMember{SwIfIndex: bsw, SHG: 2}) || len(b.Members) != 2 || b.BVI != a {
		t.Errorf("members %+v, want loopB (%d) with split-horizon group 2 too", b.Members, bsw)
	}

	// The interface goes: the binding is removed first and waits again.
	e.mustCommit(del(iface("loopB").key))
	if st := e.state(bindB); st != api.ValueStatePending {
		t.Errorf("binding of loopB %v after its interface went, want PENDING", st)
	}
	if b = e.mustBD("bd1"); len(b.Members) != 1 {
		t.Errorf("members %+v, want loopA only", b.Members)
	}

	// loopA leaves the domain: it is taken out, the BVI role with it.
	// (a new message: the scheduler keeps the committed one)
	bd = &vppl2.BridgeDomain{Name: "bd1", Flood: true, Forward: true, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "loopB", SplitHorizonGroup: 2},
	}}
	seq = e.mustCommit(bdKV(bd))
	if ops := e.executed(seq); !slices.ContainsFunc(ops, func(op string) bool { return strings.HasPrefix(op, "DELETE "+bindA+" ") }) {
		t.Errorf("executed %v, want the binding of loopA deleted", ops)
	}
	if b = e.mustBD("bd1"); len(b.Members) != 0 || b.BVI != vpptest.NoIndex {
		t.Errorf("bridge domain %+v, want no members and no BVI", b)
	}
	if _, ok := e.vpp.InterfaceTagged("loopA"); !ok {
		t.Errorf("loopA itself was deleted")
	}
}

func TestInvalidBridgeDomain(t *testing.T) {
	e := newEnv(t)
	bd := &vppl2.BridgeDomain{Name: "bad", MacAge: 300, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "a", BridgedVirtualInterface: true, SplitHorizonGroup: 256},
		{Name: "b", BridgedVirtualInterface: true},
	}, ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{arpEntry("10.0.0.1", "not-a-mac")}}
	_, err := e.commit(bdKV(bd))
	var inv *api.InvalidValueError
	if !errors.As(err, &inv) {
		t.Fatalf("commit error %v, want an InvalidValueError", err)
	}
	for _, f := range []string{"mac_age", "interfaces[0].split_horizon_group", "interfaces[1].bridged_virtual_interface", "arp_termination_table[0].phys_address"} {
		if !slices.Contains(inv.InvalidFields, f) {
			t.Errorf("invalid fields %v lack %s", inv.InvalidFields, f)
		}
	}
	if st := e.state(bdKey("bad")); st != api.ValueStateInvalid {
		t.Errorf("state %v, want INVALID", st)
	}
	if got := e.newBridgeDomains(); len(got) != 0 {
		t.Errorf("an invalid domain reached VPP: %v", got)
	}
	// The key must be the value's.
	_, err = e.commit(kv{bdKey("other"), &vppl2.BridgeDomain{Name: "bd"}})
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "belongs under") {
		t.Errorf("value under another key: %v", err)
	}
}

func TestResyncAndVPPRestart(t *testing.T) {
	e := newEnv(t)
	cfg := []kv{
		iface("A"), iface("B"),
		bdKV(&vppl2.BridgeDomain{Name: "bd1", Flood: true, Learn: true, ArpTermination: true, MacAge: 5,
			Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "A", BridgedVirtualInterface: true}, {Name: "B", SplitHorizonGroup: 1}},
			ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{
				arpEntry("10.0.0.1", "02:00:00:00:00:01"), arpEntry("10.0.0.2", "02:00:00:00:00:02"),
			}}),
		bdKV(&vppl2.BridgeDomain{Name: "bd2", Forward: true}),
	}
	e.mustCommit(cfg...)
	check := func(when string) {
		t.Helper()
		b := e.mustBD("bd1")
		a, bb := e.swIfIndex("A"), e.swIfIndex("B")
		wantMembers := []vpptest.BridgeMember{{SwIfIndex: a}, {SwIfIndex: bb, SHG: 1}}
		slices.SortFunc(wantMembers, func(x, y vpptest.BridgeMember) int { return cmp.Compare(x.SwIfIndex, y.SwIfIndex) })
		if !b.Flood || !b.Learn || !b.ArpTerm || b.Forward || b.MacAge != 5 || b.BVI != a || !slices.Equal(b.Members, wantMembers) {
			t.Errorf("%s: bd1 in VPP %+v", when, b)
		}
		if got := b.ArpEntries; !slices.Equal(got, []string{"10.0.0.1=02:00:00:00:00:01", "10.0.0.2=02:00:00:00:00:02"}) {
			t.Errorf("%s: bd1 ARP termination table %v", when, got)
		}
		if b2 := e.mustBD("bd2"); !b2.Forward || b2.Flood || len(b2.Members) != 0 {
			t.Errorf("%s: bd2 in VPP %+v", when, b2)
		}
		for _, k := range []string{bdKey("bd1"), bdKey("bd2"), l2plugin.BDInterfaceKey("bd1", "A"), l2plugin.BDInterfaceKey("bd1", "B")} {
			if st := e.state(k); st != api.ValueStateConfigured {
				t.Errorf("%s: %s is %v", when, k, st)
			}
		}
	}
	check("created")
	ids := map[string]uint32{}
	for _, name := range []string{"bd1", "bd2"} {
		ids[name] = e.mustBD(name).BdID
	}

	// The agent restarts; VPP kept everything: a full resync does nothing.
	e.startScheduler()
	e.resetCalls()
	seq, err := e.resync(api.FullResync, cfg...)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("full resync of an in-sync VPP executed %v", ops)
	}
	if w, _ := e.writes(); len(w) != 0 {
		t.Errorf("full resync of an in-sync VPP wrote %v", w)
	}
	for name, id := range ids {
		if got, ok := e.p.BridgeDomainIndex(name); !ok || got != id {
			t.Errorf("retrieved bd_id of %s: %d %v, want %d", name, got, ok, id)
		}
	}
	check("after the full resync")

	// VPP restarts, empty: a downstream resync creates everything again
	// (not on the user's VPP, which the tests do not restart).
	if !e.vpp.CanRestart() {
		t.Log("the VPP restart is left out: the tests do not restart the user's VPP")
	} else {
		e.vpp.Restart()
		if got := e.vpp.DumpBridgeDomains(); len(got) != 0 {
			t.Fatalf("VPP kept bridge domains over a restart: %+v", got)
		}
		if _, err := e.resync(api.DownstreamResync); err != nil {
			t.Fatal(err)
		}
		check("after the VPP restart")
	}

	// The agent restarts and the NB dropped bd2 and B's binding meanwhile:
	// the full resync removes them (the tag marks the domains as ours).
	e.startScheduler()
	cfg2 := []kv{iface("A"), iface("B"), bdKV(&vppl2.BridgeDomain{Name: "bd1", Flood: true, Learn: true, ArpTermination: true, MacAge: 5,
		Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "A", BridgedVirtualInterface: true}},
		ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{
			arpEntry("10.0.0.1", "02:00:00:00:00:01"), arpEntry("10.0.0.2", "02:00:00:00:00:02"),
		}})}
	seq, err = e.resync(api.FullResync, cfg2...)
	if err != nil {
		t.Fatal(err)
	}
	ops := e.executed(seq)
	for _, want := range []string{"DELETE " + bdKey("bd2") + " ", "DELETE " + l2plugin.BDInterfaceKey("bd1", "B") + " "} {
		if !slices.ContainsFunc(ops, func(op string) bool { return strings.HasPrefix(op, want) }) {
			t.Errorf("executed %v, want %s", ops, want)
		}
	}
	if _, ok := e.bd("bd2"); ok {
		t.Errorf("bd2 still in VPP")
	}
	if b := e.mustBD("bd1"); len(b.Members) != 1 || b.Members[0].SwIfIndex != e.swIfIndex("A") {
		t.Errorf("bd1 members %+v, want A only", b.Members)
	}
}

// A VPP without one of the area's messages disables the area: the values
// fail, naming the message, and are not retried.
func TestIncompatibleVPP(t *testing.T) {
	e := newEnvWith(t, vppsim.Options{Omit: []string{"bd_ip_mac_add_del"}})
	if d := e.m.Status().Disabled[l2plugin.AreaName]; len(d) == 0 {
		t.Fatalf("area %s not disabled: %+v", l2plugin.AreaName, e.m.Status())
	}
	_, err := e.commitWith(api.TxnOptions{Retry: &api.RetryOpt{Period: time.Millisecond, MaxCount: 3}}, bdKV(&vppl2.BridgeDomain{Name: "bd1"}))
	if err == nil || !strings.Contains(err.Error(), "bd_ip_mac_add_del") {
		t.Errorf("commit: %v, want an error naming bd_ip_mac_add_del", err)
	}
	// A value whose retry is scheduled is RETRYING until it is tried
	// again; FAILED once the transaction is over means none is.
	e.s.TransactionBarrier()
	if st := e.status(bdKey("bd1")); st.GetState() != api.ValueStateFailed {
		t.Errorf("status %v, want FAILED (not retried)", st)
	}
	if got := e.vpp.DumpBridgeDomains(); len(got) != 0 {
		t.Errorf("bridge domains in VPP: %+v", got)
	}
}

// TestCallbacksUseTheirContext: the callbacks pass their context to VPP: a
// cancelled one (the scheduler closing) fails them, VPP untouched.
func TestCallbacksUseTheirContext(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	descriptors := e.p.Descriptors()
	bd := descriptors[0]
	if bd.Name != l2plugin.BridgeDomainDescriptorName {
		t.Fatalf("first descriptor %s, want %s", bd.Name, l2plugin.BridgeDomainDescriptorName)
	}
	if _, err := bd.Create(ctx, bdKey("bd1"), &vppl2.BridgeDomain{Name: "bd1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context: %v, want context.Canceled", err)
	}
	for _, d := range descriptors {
		if _, err := d.Retrieve(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("Retrieve of %s with a cancelled context: %v, want context.Canceled", d.Name, err)
		}
	}
	if got := e.newBridgeDomains(); len(got) != 0 {
		t.Errorf("bridge domains VPP has now: %v, want none", got)
	}
}

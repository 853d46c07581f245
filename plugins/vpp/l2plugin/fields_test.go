package l2plugin_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	"google.golang.org/protobuf/proto"
)

// l2 returns a client of VPP's l2 messages, for changes behind the agent's
// back.
func (e *env) l2() l2.RPCService {
	e.t.Helper()
	conn, err := e.m.Conn(l2plugin.AreaName)
	if err != nil {
		e.t.Fatal(err)
	}
	return l2.NewServiceClient(conn)
}

// arpTermBehind adds (or re-points) or deletes an ARP termination entry of
// domain bdID behind the agent's back.
func (e *env) arpTermBehind(isAdd bool, bdID uint32, ip, mac string) {
	e.t.Helper()
	a, err := ip_types.ParseAddress(ip)
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := ethernet_types.ParseMacAddress(mac)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.l2().BdIPMacAddDel(context.Background(), &l2.BdIPMacAddDel{IsAdd: isAdd, Entry: l2.BdIPMac{BdID: bdID, IP: a, Mac: m}}); err != nil {
		e.t.Fatalf("bd_ip_mac_add_del (add %v, bd_id %d, %s %s): %v", isAdd, bdID, ip, mac, err)
	}
}

// wantInVPP compares, field by field, the domain VPP has tagged with the
// value's name with the value (its members by the sw_if_index of their
// interfaces).
func (e *env) wantInVPP(when string, v *vppl2.BridgeDomain) {
	e.t.Helper()
	b := e.mustBD(v.GetName())
	var problems []string
	for _, f := range []struct {
		field     string
		got, want any
	}{
		{"flood", b.Flood, v.GetFlood()},
		{"unknown_unicast_flood", b.UuFlood, v.GetUnknownUnicastFlood()},
		{"forward", b.Forward, v.GetForward()},
		{"learn", b.Learn, v.GetLearn()},
		{"arp_termination", b.ArpTerm, v.GetArpTermination()},
		{"mac_age", uint32(b.MacAge), v.GetMacAge()},
	} {
		if f.got != f.want {
			problems = append(problems, fmt.Sprintf("%s %v, want %v", f.field, f.got, f.want))
		}
	}
	bvi := vpptest.NoIndex
	var members []vpptest.BridgeMember
	for _, i := range v.GetInterfaces() {
		sw := e.swIfIndex(i.GetName())
		members = append(members, vpptest.BridgeMember{SwIfIndex: sw, SHG: uint8(i.GetSplitHorizonGroup())})
		if i.GetBridgedVirtualInterface() {
			bvi = sw
		}
	}
	slices.SortFunc(members, func(x, y vpptest.BridgeMember) int { return cmp.Compare(x.SwIfIndex, y.SwIfIndex) })
	if b.BVI != bvi {
		problems = append(problems, fmt.Sprintf("BVI sw_if_index %d, want %d", b.BVI, bvi))
	}
	if !slices.Equal(b.Members, members) {
		problems = append(problems, fmt.Sprintf("members %+v, want %+v", b.Members, members))
	}
	var arp []string
	for _, a := range v.GetArpTerminationTable() {
		arp = append(arp, a.GetIpAddress()+"="+strings.ToLower(a.GetPhysAddress()))
	}
	slices.Sort(arp)
	if !slices.Equal(b.ArpEntries, arp) {
		problems = append(problems, fmt.Sprintf("ARP termination table %v, want %v", b.ArpEntries, arp))
	}
	if len(problems) > 0 {
		e.t.Errorf("%s: bridge domain %s in VPP: %s", when, v.GetName(), strings.Join(problems, "; "))
	}
}

// TestBridgeDomainFieldsFromVPP: every field the Retrieve reports is what
// VPP has, not an echo of the configuration: each one changed behind the
// agent's back is found by a full resync, which changes exactly that back
// (the domain updated in place, or the one binding re-created), and the
// next resync does nothing. A flag the model does not have (arp-ufwd) is
// left as VPP has it.
func TestBridgeDomainFieldsFromVPP(t *testing.T) {
	e := newEnv(t)
	fields := &vppl2.BridgeDomain{
		Name: "fields", Flood: true, Learn: true, ArpTermination: true, MacAge: 200,
		Interfaces: []*vppl2.BridgeDomain_Interface{
			{Name: "a", BridgedVirtualInterface: true, SplitHorizonGroup: 5},
			{Name: "b", SplitHorizonGroup: 255},
			{Name: "c"},
		},
		ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{
			arpEntry("10.0.0.1", "02:00:00:00:00:01"),
			arpEntry("2001:db8::1", "02:00:00:00:00:02"),
			arpEntry("fe80::1", "02:00:00:00:00:03"),
		},
	}
	// Every flag the other way.
	inverse := &vppl2.BridgeDomain{Name: "inverse", UnknownUnicastFlood: true, Forward: true, MacAge: 1}
	cfg := []kv{iface("a"), iface("b"), iface("c"), bdKV(fields), bdKV(inverse)}
	e.mustCommit(cfg...)
	e.wantInVPP("created", fields)
	e.wantInVPP("created", inverse)
	id := e.mustBD("fields").BdID
	b := e.swIfIndex("b")

	e.startScheduler()
	if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
		t.Errorf("full resync of a restarted agent, VPP in sync: executed %v", ops)
	}

	updateBD := []string{"UPDATE " + bdKey("fields") + " []"}
	rebind := func(iface string) []string {
		k := l2plugin.BDInterfaceKey("fields", iface)
		return []string{"DELETE " + k + " [DERIVED RECREATE]", "CREATE " + k + " [DERIVED RECREATE]"}
	}
	flags := func(set bool, f l2.BdFlags) func() {
		return func() {
			if _, err := e.l2().BridgeFlags(context.Background(), &l2.BridgeFlags{BdID: id, IsSet: set, Flags: f}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, drift := range []struct {
		what   string
		change func()
		want   []string
	}{
		{"flood cleared", flags(false, l2.BRIDGE_API_FLAG_FLOOD), updateBD},
		{"uu-flood set", flags(true, l2.BRIDGE_API_FLAG_UU_FLOOD), updateBD},
		{"forward set", flags(true, l2.BRIDGE_API_FLAG_FWD), updateBD},
		{"learn cleared", flags(false, l2.BRIDGE_API_FLAG_LEARN), updateBD},
		{"arp-term cleared", flags(false, l2.BRIDGE_API_FLAG_ARP_TERM), updateBD},
		{"mac-age changed", func() {
			if _, err := e.l2().BridgeDomainSetMacAge(context.Background(), &l2.BridgeDomainSetMacAge{BdID: id, MacAge: 7}); err != nil {
				t.Fatal(err)
			}
		}, updateBD},
		{"ARP entry added", func() { e.arpTermBehind(true, id, "10.0.0.9", "02:00:00:00:00:09") }, updateBD},
		{"ARP entry re-pointed", func() { e.arpTermBehind(true, id, "10.0.0.1", "02:00:00:00:00:0a") }, updateBD},
		{"IPv6 ARP entry deleted", func() { e.arpTermBehind(false, id, "2001:db8::1", "02:00:00:00:00:02") }, updateBD},
		{"split-horizon group changed", func() { e.setL2BridgeAs(b, id, l2.L2_API_PORT_TYPE_NORMAL, 9) }, rebind("b")},
		{"BVI made a plain member", func() { e.setL2BridgeAs(e.swIfIndex("a"), id, l2.L2_API_PORT_TYPE_NORMAL, 5) }, rebind("a")},
		{"arp-ufwd set (not modelled)", flags(true, l2.BRIDGE_API_FLAG_ARP_UFWD), nil},
	} {
		drift.change()
		ops := e.mustResync(api.FullResync, cfg...)
		slices.Sort(ops)
		want := slices.Clone(drift.want)
		slices.Sort(want)
		if !slices.Equal(ops, want) {
			t.Errorf("%s: the resync executed %v, want %v", drift.what, ops, want)
		}
		e.wantInVPP(drift.what+", after the resync", fields)
		e.wantInVPP(drift.what+", after the resync", inverse)
		if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
			t.Errorf("%s: the second resync executed %v", drift.what, ops)
		}
	}
	if !e.mustBD("fields").ArpUfwd {
		t.Errorf("arp-ufwd, set behind the agent's back, was cleared")
	}
	// An update of the value leaves it too (a new message: the scheduler
	// keeps the committed one).
	fields = proto.Clone(fields).(*vppl2.BridgeDomain)
	fields.MacAge = 100
	e.mustCommit(bdKV(fields))
	e.wantInVPP("updated", fields)
	if !e.mustBD("fields").ArpUfwd {
		t.Errorf("arp-ufwd, set behind the agent's back, was cleared by an update")
	}
}

// setL2BridgeAs puts an interface into a bridge domain, with a port type
// and a split-horizon group, behind the agent's back.
func (e *env) setL2BridgeAs(sw, bdID uint32, pt l2.L2PortType, shg uint8) {
	e.t.Helper()
	if _, err := e.l2().SwInterfaceSetL2Bridge(context.Background(), &l2.SwInterfaceSetL2Bridge{
		RxSwIfIndex: interface_types.InterfaceIndex(sw), BdID: bdID, PortType: pt, Shg: shg, Enable: true,
	}); err != nil {
		e.t.Fatalf("sw_interface_set_l2_bridge (sw_if_index %d into bd_id %d, %v, shg %d): %v", sw, bdID, pt, shg, err)
	}
}

// TestArpTerminationUpdateAfterDrift: an entry re-pointed behind the
// agent's back, then dropped from the configuration before any resync, is
// deleted: VPP deletes an entry only when given the MAC it has, which the
// old value no longer says.
func TestArpTerminationUpdateAfterDrift(t *testing.T) {
	e := newEnv(t)
	bd := &vppl2.BridgeDomain{Name: "bd1", ArpTermination: true, ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{
		arpEntry("10.0.0.1", "02:00:00:00:00:01"), arpEntry("10.0.0.2", "02:00:00:00:00:02"),
	}}
	e.mustCommit(bdKV(bd))
	e.arpTermBehind(true, e.mustBD("bd1").BdID, "10.0.0.1", "02:00:00:00:00:99")
	bd = &vppl2.BridgeDomain{Name: "bd1", ArpTermination: true, ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{
		arpEntry("10.0.0.2", "02:00:00:00:00:02"),
	}}
	if _, err := e.commit(bdKV(bd)); err != nil {
		t.Fatalf("update: %v", err)
	}
	e.wantInVPP("updated", bd)
}

// TestBindingIntoDomainRemovedBehindAgentsBack: someone deletes a domain
// of the agent's from VPP. A member whose interface comes is refused, VPP
// untouched: sw_interface_set_l2_bridge would create an untagged domain
// with VPP's defaults. The refresh after that failure finds the domain
// gone: it is MISSING, no longer CONFIGURED, and the next change of it (a
// retry or a resync too) creates it again, with its member.
func TestBindingIntoDomainRemovedBehindAgentsBack(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(domain("bd1", member("x")))
	bind := l2plugin.BDInterfaceKey("bd1", "x")
	if st := e.state(bind); st != api.ValueStatePending {
		t.Fatalf("binding of x before x exists: %v, want PENDING", st)
	}
	if _, err := e.l2().BridgeDomainAddDelV2(context.Background(), &l2.BridgeDomainAddDelV2{BdID: e.mustBD("bd1").BdID}); err != nil {
		t.Fatal(err)
	}

	if _, err := e.commit(iface("x")); err == nil {
		t.Errorf("x's member of a domain VPP no longer has: no error")
	}
	if st := e.status(bind); st.GetState() != api.ValueStateFailed || !strings.Contains(st.GetError(), "VPP has no bridge domain bd1") {
		t.Errorf("binding: %v, want FAILED saying VPP has no bd1", st)
	}
	// The refresh after the failure found bd1 gone: not CONFIGURED.
	if st := e.state(bdKey("bd1")); st != api.ValueStateMissing {
		t.Errorf("bd1 after the failed binding: %v, want MISSING (VPP no longer has it)", st)
	}
	if got := e.newBridgeDomains(); len(got) != 0 {
		t.Errorf("bridge domains VPP has now: %v, want none", got)
	}
	// A change of bd1 creates it again (the agent knows it is gone), with x.
	if _, err := e.commit(bdKV(&vppl2.BridgeDomain{Name: "bd1", Flood: true, Interfaces: []*vppl2.BridgeDomain_Interface{member("x")}})); err != nil {
		t.Errorf("update of bd1: %v", err)
	}
	if st := e.state(bdKey("bd1")); st != api.ValueStateConfigured {
		t.Errorf("bd1 after its update: %v, want CONFIGURED", st)
	}
	if b := e.mustBD("bd1"); !b.Flood || !slices.Equal(b.MemberIndexes(), []uint32{e.swIfIndex("x")}) {
		t.Errorf("bd1 after its update %+v, want flood and x", b)
	}

	cfg := []kv{iface("x"), bdKV(&vppl2.BridgeDomain{Name: "bd1", Flood: true, Interfaces: []*vppl2.BridgeDomain_Interface{member("x")}})}
	e.mustResync(api.FullResync, cfg...)
	if b := e.mustBD("bd1"); !b.Flood || !slices.Equal(b.MemberIndexes(), []uint32{e.swIfIndex("x")}) {
		t.Errorf("bd1 after the resync %+v, want flood and x", b)
	}
	if ops := e.mustResync(api.FullResync, cfg...); len(ops) != 0 {
		t.Errorf("second resync executed %v", ops)
	}
}

// TestSecondBVIRefused: the BVI binding of a domain that someone gave
// another BVI is refused, naming it, before VPP is asked (VPP would take
// the interface out of its domain, then refuse).
func TestSecondBVIRefused(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(iface("a"), iface("other"), domain("bd1", member("a")))
	id, other := e.mustBD("bd1").BdID, e.swIfIndex("other")
	e.setL2BridgeAs(other, id, l2.L2_API_PORT_TYPE_BVI, 0)
	_, err := e.commit(domain("bd1", &vppl2.BridgeDomain_Interface{Name: "a", BridgedVirtualInterface: true}))
	want := fmt.Sprintf("bridge domain bd1 (bd_id %d) already has a BVI, sw_if_index %d", id, other)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("commit: %v, want an error saying %q", err, want)
	}
	if b := e.mustBD("bd1"); b.BVI != other {
		t.Errorf("BVI of bd1 %d, want %d", b.BVI, other)
	}
}

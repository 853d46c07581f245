package vppsim_test

import (
	"fmt"
	"slices"
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/tests/vppsim"
)

// The behaviours of VPP 25.10's l2 handlers that vppsim imitates, each
// seen on a real VPP v25.10-release (the l2plugin tests check the ones the
// agent relies on against both, see TestVPPBridgeDomainBehaviour there).

// bdDump lists the bridge domains a bridge_domain_dump returns.
func bdDump(t *testing.T, lc l2.RPCService, bdID, sw uint32) []*l2.BridgeDomainDetails {
	t.Helper()
	return collect(t, must(lc.BridgeDomainDump(ctx, &l2.BridgeDomainDump{BdID: bdID, SwIfIndex: interface_types.InterfaceIndex(sw)}))(t).Recv)
}

// memberIndexes lists the sw_if_index of a dumped domain's members.
func memberIndexes(d *l2.BridgeDomainDetails) []interface_types.InterfaceIndex {
	var out []interface_types.InterfaceIndex
	for _, m := range d.SwIfDetails {
		out = append(out, m.SwIfIndex)
	}
	return out
}

// TestBridgeDomainDumpFilters: VPP 25.10's handler does not implement the
// sw_if_index filter and returns nothing for any sw_if_index but ~0,
// whatever the bd_id; bd_id 0 and unknown ids return nothing too.
func TestBridgeDomainDumpFilters(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)
	lc := l2.NewServiceClient(conn)
	loop := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 7, IsAdd: true, BdTag: "seven"}))(t)
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 8, IsAdd: true}))(t)
	must(lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: loop, BdID: 7, Enable: true, Shg: 4}))(t)

	for _, q := range []struct {
		bdID, sw uint32
		want     int
	}{
		{vppsim.NoIndex, vppsim.NoIndex, 2},
		{7, vppsim.NoIndex, 1},
		{vppsim.NoIndex, uint32(loop), 0}, // the domain of a member: not implemented
		{7, uint32(loop), 0},
		{vppsim.NoIndex, 0, 0}, // GoVPP's zero value: local0
		{0, vppsim.NoIndex, 0},
		{99, vppsim.NoIndex, 0},
	} {
		if got := bdDump(t, lc, q.bdID, q.sw); len(got) != q.want {
			t.Errorf("bridge_domain_dump bd_id %d sw_if_index %d: %d domains, want %d", int32(q.bdID), int32(q.sw), len(got), q.want)
		}
	}
	d := bdDump(t, lc, 7, vppsim.NoIndex)[0]
	if d.NSwIfs != 1 || len(d.SwIfDetails) != 1 || d.SwIfDetails[0].SwIfIndex != loop || d.SwIfDetails[0].Shg != 4 || d.BdTag != "seven" {
		t.Errorf("details of bd 7: %+v", d)
	}
}

// TestSetL2BridgeAsVPP: disabling ignores the bd_id (the interface leaves
// whatever domain it is in); the port type is checked first; a UU-fwd port
// is not a member; a second BVI is refused after the interface left its
// old domain.
func TestSetL2BridgeAsVPP(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)
	lc := l2.NewServiceClient(conn)
	a := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	b := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 7, IsAdd: true}))(t)
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 8, IsAdd: true}))(t)
	set := func(sw interface_types.InterfaceIndex, bdID uint32, pt l2.L2PortType, enable bool) error {
		_, err := lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: sw, BdID: bdID, PortType: pt, Enable: enable})
		return err
	}
	members := func(bdID uint32) []interface_types.InterfaceIndex {
		t.Helper()
		return memberIndexes(bdDump(t, lc, bdID, vppsim.NoIndex)[0])
	}

	if err := set(b, 7, l2.L2_API_PORT_TYPE_NORMAL, true); err != nil {
		t.Fatal(err)
	}
	// Disabling with the id of another domain still takes b out of 7.
	if err := set(b, 8, l2.L2_API_PORT_TYPE_NORMAL, false); err != nil {
		t.Fatal(err)
	}
	if m := members(7); len(m) != 0 {
		t.Errorf("bd 7 members %v after disabling with bd_id 8, want none", m)
	}
	if err := set(b, 8, l2.L2_API_PORT_TYPE_NORMAL, false); err != nil {
		t.Errorf("disabling an interface in no domain: %v, want success", err)
	}

	// An unknown port type: INVALID_VALUE, enabling or not, nothing changes.
	if err := set(b, 7, l2.L2_API_PORT_TYPE_NORMAL, true); err != nil {
		t.Fatal(err)
	}
	wantVPPError(t, set(b, 8, 7, true), api.INVALID_VALUE)
	wantVPPError(t, set(b, 7, 7, false), api.INVALID_VALUE)
	if m := members(7); len(m) != 1 || m[0] != b {
		t.Errorf("bd 7 members %v after refused requests, want b (%d)", m, b)
	}

	// UU-fwd: the domain's uu_fwd_sw_if_index, not a member.
	if err := set(b, 7, l2.L2_API_PORT_TYPE_UU_FWD, true); err != nil {
		t.Fatal(err)
	}
	d := bdDump(t, lc, 7, vppsim.NoIndex)[0]
	if d.UuFwdSwIfIndex != b || d.NSwIfs != 0 || len(d.SwIfDetails) != 0 {
		t.Errorf("bd 7 with b as UU-fwd port: %+v, want uu_fwd_sw_if_index %d and no members", d, b)
	}
	if err := set(b, 7, l2.L2_API_PORT_TYPE_UU_FWD, false); err != nil {
		t.Fatal(err)
	}
	if d := bdDump(t, lc, 7, vppsim.NoIndex)[0]; d.UuFwdSwIfIndex != interface_types.InterfaceIndex(vppsim.NoIndex) {
		t.Errorf("uu_fwd_sw_if_index %d after disabling, want ~0", d.UuFwdSwIfIndex)
	}

	// A as the BVI of 7; the same again is fine; b as a second BVI is
	// refused, and b has left 8 (where it was) all the same.
	if err := set(a, 7, l2.L2_API_PORT_TYPE_BVI, true); err != nil {
		t.Fatal(err)
	}
	if err := set(a, 7, l2.L2_API_PORT_TYPE_BVI, true); err != nil {
		t.Errorf("the BVI set again: %v", err)
	}
	if err := set(b, 8, l2.L2_API_PORT_TYPE_NORMAL, true); err != nil {
		t.Fatal(err)
	}
	wantVPPError(t, set(b, 7, l2.L2_API_PORT_TYPE_BVI, true), api.BD_ALREADY_HAS_BVI)
	if m := members(8); len(m) != 0 {
		t.Errorf("bd 8 members %v after b's refused BVI request, want none (VPP takes it out first)", m)
	}
	if d := bdDump(t, lc, 7, vppsim.NoIndex)[0]; d.BviSwIfIndex != a || len(d.SwIfDetails) != 1 || d.SwIfDetails[0].SwIfIndex != a {
		t.Errorf("bd 7: %+v, want a (%d) as its BVI and only member", d, a)
	}
	if i, _ := s.Interface("loop1"); i.Bridge != nil {
		t.Errorf("b's membership after the refused BVI request: %+v, want none", i.Bridge)
	}

	// The BVI is listed first, the other members in the order they joined.
	c := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	for _, sw := range []interface_types.InterfaceIndex{c, b} {
		if err := set(sw, 8, l2.L2_API_PORT_TYPE_NORMAL, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := set(a, 8, l2.L2_API_PORT_TYPE_BVI, true); err != nil {
		t.Fatal(err)
	}
	if got, want := members(8), []interface_types.InterfaceIndex{a, c, b}; !slices.Equal(got, want) {
		t.Errorf("bd 8 members %v, want %v (the BVI first)", got, want)
	}
}

// TestBridgeDomainZeroAndErrors: VPP's answers for the default domain 0
// and for unknown domains.
func TestBridgeDomainZeroAndErrors(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	lc := l2.NewServiceClient(connect(t, s))
	_, err := lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 0, IsAdd: true})
	wantVPPError(t, err, api.BD_ALREADY_EXISTS)
	_, err = lc.BridgeDomainAddDel(ctx, &l2.BridgeDomainAddDel{BdID: 0, IsAdd: true})
	wantVPPError(t, err, api.BD_ALREADY_EXISTS)
	_, err = lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 0})
	wantVPPError(t, err, api.BD_NOT_MODIFIABLE)
	_, err = lc.BridgeFlags(ctx, &l2.BridgeFlags{BdID: 0, IsSet: true, Flags: l2.BRIDGE_API_FLAG_LEARN})
	wantVPPError(t, err, api.BD_NOT_MODIFIABLE)
	_, err = lc.BridgeFlags(ctx, &l2.BridgeFlags{BdID: 99, IsSet: true, Flags: l2.BRIDGE_API_FLAG_LEARN})
	wantVPPError(t, err, api.NO_SUCH_ENTRY)
	_, err = lc.BridgeDomainSetMacAge(ctx, &l2.BridgeDomainSetMacAge{BdID: 0, MacAge: 1})
	wantVPPError(t, err, api.BD_NOT_MODIFIABLE)
	_, err = lc.BridgeDomainSetMacAge(ctx, &l2.BridgeDomainSetMacAge{BdID: 99, MacAge: 1})
	wantVPPError(t, err, api.NO_SUCH_ENTRY)
	ip, _ := ip_types.ParseAddress("10.0.0.1")
	_, err = lc.BdIPMacAddDel(ctx, &l2.BdIPMacAddDel{IsAdd: true, Entry: l2.BdIPMac{BdID: 0, IP: ip}})
	wantVPPError(t, err, api.BD_NOT_MODIFIABLE)
	_, err = lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 77})
	wantVPPError(t, err, api.NO_SUCH_ENTRY)
	if bds := s.BridgeDomains(); len(bds) != 0 {
		t.Errorf("bridge domains %+v, want none", bds)
	}
}

// TestArpTerminationEntryDelete: a delete must name the entry's MAC; the
// dump lists a domain's IPv4 entries before its IPv6 ones.
func TestArpTerminationEntryDelete(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	lc := l2.NewServiceClient(connect(t, s))
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 5, IsAdd: true, ArpTerm: true}))(t)
	entry := func(ip, mac string) l2.BdIPMac {
		a, err := ip_types.ParseAddress(ip)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ethernet_types.ParseMacAddress(mac)
		if err != nil {
			t.Fatal(err)
		}
		return l2.BdIPMac{BdID: 5, IP: a, Mac: m}
	}
	addDel := func(isAdd bool, e l2.BdIPMac) error {
		_, err := lc.BdIPMacAddDel(ctx, &l2.BdIPMacAddDel{IsAdd: isAdd, Entry: e})
		return err
	}
	dump := func() []string {
		t.Helper()
		var out []string
		for _, d := range collect(t, must(lc.BdIPMacDump(ctx, &l2.BdIPMacDump{BdID: 5}))(t).Recv) {
			out = append(out, d.Entry.IP.String()+"="+d.Entry.Mac.String())
		}
		return out
	}
	for _, e := range []l2.BdIPMac{entry("fd00::5", "02:00:00:00:00:02"), entry("10.1.0.5", "02:00:00:00:00:01"), entry("10.1.0.6", "02:00:00:00:00:01")} {
		if err := addDel(true, e); err != nil {
			t.Fatal(err)
		}
	}
	want := "[10.1.0.5=02:00:00:00:00:01 10.1.0.6=02:00:00:00:00:01 fd00::5=02:00:00:00:00:02]"
	if got := dump(); fmt.Sprint(got) != want {
		t.Errorf("bd_ip_mac_dump %v, want %s", got, want)
	}
	// Re-pointing is an add; adding the same again succeeds.
	if err := addDel(true, entry("10.1.0.5", "02:00:00:00:00:02")); err != nil {
		t.Fatal(err)
	}
	if err := addDel(true, entry("10.1.0.5", "02:00:00:00:00:02")); err != nil {
		t.Errorf("the same entry added again: %v", err)
	}
	wantVPPError(t, addDel(false, entry("10.1.0.6", "02:00:00:00:00:09")), api.UNSPECIFIED)
	wantVPPError(t, addDel(false, entry("fd00::5", "00:00:00:00:00:00")), api.UNSPECIFIED)
	wantVPPError(t, addDel(false, entry("10.1.0.7", "02:00:00:00:00:01")), api.UNSPECIFIED)
	want = "[10.1.0.5=02:00:00:00:00:02 10.1.0.6=02:00:00:00:00:01 fd00::5=02:00:00:00:00:02]"
	if got := dump(); fmt.Sprint(got) != want {
		t.Errorf("after refused deletes: %v, want %s", got, want)
	}
	if err := addDel(false, entry("10.1.0.6", "02:00:00:00:00:01")); err != nil {
		t.Errorf("delete with the entry's MAC: %v", err)
	}
	if got, want := fmt.Sprint(dump()), "[10.1.0.5=02:00:00:00:00:02 fd00::5=02:00:00:00:00:02]"; got != want {
		t.Errorf("after the delete: %s, want %s", got, want)
	}
}

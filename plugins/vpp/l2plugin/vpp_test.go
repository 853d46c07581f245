package l2plugin_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// TestVPPBridgeDomainBehaviour checks, against vppsim or the real VPP
// alike, the behaviours of VPP 25.10's l2 handlers that the plugin is built
// on, so that vppsim cannot drift from them unnoticed:
//
//   - bridge_domain_dump returns nothing for any sw_if_index but ~0
//     (the filter is not implemented), whatever the bd_id;
//   - sw_interface_set_l2_bridge with enable false ignores the bd_id: the
//     interface leaves whatever domain it is in;
//   - a second BVI is refused after the interface left its old domain;
//   - a UU-fwd port is not a member; the dump lists the BVI first, the
//     other members in the order they joined;
//   - bd_ip_mac_add_del deletes an entry only when given its MAC
//     (UNSPECIFIED otherwise), and takes an add of a known IP as a
//     re-point;
//   - the default domain 0: add BD_ALREADY_EXISTS, the rest
//     BD_NOT_MODIFIABLE.
func TestVPPBridgeDomainBehaviour(t *testing.T) {
	v := vpptest.Start(t, vpptest.Options{Areas: []vppconn.Area{l2plugin.New(nil, nil, nil).Area()}})
	conn, err := v.M.Conn(l2plugin.AreaName)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ic, lc := interfaces.NewServiceClient(conn), l2.NewServiceClient(conn)
	var loops []interface_types.InterfaceIndex
	for range 3 {
		r, err := ic.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		if err != nil {
			t.Fatal(err)
		}
		loops = append(loops, r.SwIfIndex)
	}
	a, b, c := loops[0], loops[1], loops[2]
	ids := v.FreeBdIDs(2)
	bd1, bd2 := ids[0], ids[1]
	for _, id := range ids {
		if _, err := lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: id, IsAdd: true, Forward: true, BdTag: "behaviour"}); err != nil {
			t.Fatal(err)
		}
	}
	set := func(sw interface_types.InterfaceIndex, bdID uint32, pt l2.L2PortType, shg uint8, enable bool) error {
		_, err := lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: sw, BdID: bdID, PortType: pt, Shg: shg, Enable: enable})
		return err
	}
	mustSet := func(sw interface_types.InterfaceIndex, bdID uint32, pt l2.L2PortType, shg uint8, enable bool) {
		t.Helper()
		if err := set(sw, bdID, pt, shg, enable); err != nil {
			t.Fatalf("sw_interface_set_l2_bridge (sw_if_index %d, bd_id %d, port type %v, enable %v): %v", sw, bdID, pt, enable, err)
		}
	}
	dump := func(bdID, sw uint32) []*l2.BridgeDomainDetails {
		t.Helper()
		out, err := vppconn.Dump[*l2.BridgeDomainDetails](ctx, conn, &l2.BridgeDomainDump{BdID: bdID, SwIfIndex: interface_types.InterfaceIndex(sw)})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	members := func(bdID uint32) []uint32 {
		t.Helper()
		for _, d := range v.DumpBridgeDomains() {
			if d.BdID == bdID {
				return d.MemberIndexes()
			}
		}
		t.Fatalf("VPP has no bridge domain %d", bdID)
		return nil
	}

	mustSet(a, bd1, l2.L2_API_PORT_TYPE_NORMAL, 4, true)
	if got := members(bd1); len(got) != 1 || got[0] != uint32(a) {
		t.Fatalf("members of %d: %v, want %d", bd1, got, a)
	}
	for _, q := range []struct {
		bdID, sw uint32
		want     int
	}{
		{bd1, vpptest.NoIndex, 1},
		{vpptest.NoIndex, uint32(a), 0},
		{bd1, uint32(a), 0},
		{vpptest.NoIndex, 0, 0},
		{0, vpptest.NoIndex, 0},
	} {
		if got := dump(q.bdID, q.sw); len(got) != q.want {
			t.Errorf("bridge_domain_dump bd_id %d sw_if_index %d: %d domains, want %d", int32(q.bdID), int32(q.sw), len(got), q.want)
		}
	}

	// Disabling with another domain's id takes a out of bd1.
	mustSet(a, bd2, l2.L2_API_PORT_TYPE_NORMAL, 0, false)
	if got := members(bd1); len(got) != 0 {
		t.Errorf("members of %d after disabling with bd_id %d: %v, want none", bd1, bd2, got)
	}

	// A second BVI: refused, and b has left bd2 all the same.
	mustSet(a, bd1, l2.L2_API_PORT_TYPE_BVI, 0, true)
	mustSet(b, bd2, l2.L2_API_PORT_TYPE_NORMAL, 0, true)
	if err := set(b, bd1, l2.L2_API_PORT_TYPE_BVI, 0, true); !vppconn.IsVPPError(err, govppapi.BD_ALREADY_HAS_BVI) {
		t.Errorf("a second BVI: %v, want BD_ALREADY_HAS_BVI", err)
	}
	if got := members(bd2); len(got) != 0 {
		t.Errorf("members of %d after b's refused BVI request: %v, want none", bd2, got)
	}

	// A UU-fwd port is not a member.
	mustSet(c, bd2, l2.L2_API_PORT_TYPE_UU_FWD, 0, true)
	if d := dump(bd2, vpptest.NoIndex); len(d) != 1 || d[0].UuFwdSwIfIndex != c || d[0].NSwIfs != 0 {
		t.Errorf("bridge domain %d with a UU-fwd port: %+v, want uu_fwd_sw_if_index %d and no members", bd2, d, c)
	}
	mustSet(c, bd2, l2.L2_API_PORT_TYPE_UU_FWD, 0, false)

	// ARP termination entries.
	ip, _ := ip_types.ParseAddress("10.9.0.1")
	mac1, _ := ethernet_types.ParseMacAddress("02:00:00:00:09:01")
	mac2, _ := ethernet_types.ParseMacAddress("02:00:00:00:09:02")
	arp := func(isAdd bool, bdID uint32, mac ethernet_types.MacAddress) error {
		_, err := lc.BdIPMacAddDel(ctx, &l2.BdIPMacAddDel{IsAdd: isAdd, Entry: l2.BdIPMac{BdID: bdID, IP: ip, Mac: mac}})
		return err
	}
	entries := func() []string {
		t.Helper()
		for _, d := range v.DumpBridgeDomains() {
			if d.BdID == bd1 {
				return d.ArpEntries
			}
		}
		return nil
	}
	for _, step := range []struct {
		what  string
		do    func() error
		want  govppapi.VPPApiError // 0: success
		after string
	}{
		{"add", func() error { return arp(true, bd1, mac1) }, 0, "10.9.0.1=02:00:00:00:09:01"},
		{"add again", func() error { return arp(true, bd1, mac1) }, 0, "10.9.0.1=02:00:00:00:09:01"},
		{"re-point", func() error { return arp(true, bd1, mac2) }, 0, "10.9.0.1=02:00:00:00:09:02"},
		{"delete with the old MAC", func() error { return arp(false, bd1, mac1) }, govppapi.UNSPECIFIED, "10.9.0.1=02:00:00:00:09:02"},
		{"delete with its MAC", func() error { return arp(false, bd1, mac2) }, 0, ""},
		{"delete a missing entry", func() error { return arp(false, bd1, mac2) }, govppapi.UNSPECIFIED, ""},
		{"add to domain 0", func() error { return arp(true, 0, mac1) }, govppapi.BD_NOT_MODIFIABLE, ""},
	} {
		err := step.do()
		var got govppapi.VPPApiError
		if err != nil && !errors.As(err, &got) {
			t.Errorf("%s: %v, want a VPP error", step.what, err)
		}
		if got != step.want {
			t.Errorf("%s: %v, want %v", step.what, err, step.want)
		}
		if e := entries(); (step.after == "" && len(e) != 0) || (step.after != "" && (len(e) != 1 || e[0] != step.after)) {
			t.Errorf("%s: entries %v, want [%s]", step.what, e, step.after)
		}
	}

	// The default domain 0.
	if _, err := lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 0, IsAdd: true}); !vppconn.IsVPPError(err, govppapi.BD_ALREADY_EXISTS) {
		t.Errorf("adding domain 0: %v, want BD_ALREADY_EXISTS", err)
	}
	if _, err := lc.BridgeFlags(ctx, &l2.BridgeFlags{BdID: 0, IsSet: true, Flags: l2.BRIDGE_API_FLAG_LEARN}); !vppconn.IsVPPError(err, govppapi.BD_NOT_MODIFIABLE) {
		t.Errorf("bridge_flags of domain 0: %v, want BD_NOT_MODIFIABLE", err)
	}
	if _, err := lc.BridgeDomainSetMacAge(ctx, &l2.BridgeDomainSetMacAge{BdID: 0, MacAge: 1}); !vppconn.IsVPPError(err, govppapi.BD_NOT_MODIFIABLE) {
		t.Errorf("bridge_domain_set_mac_age of domain 0: %v, want BD_NOT_MODIFIABLE", err)
	}

	// Members in order: the BVI first, the others as they joined; a member
	// leaving keeps the order of the others.
	mustSet(b, bd2, l2.L2_API_PORT_TYPE_NORMAL, 0, true)
	mustSet(c, bd2, l2.L2_API_PORT_TYPE_NORMAL, 0, true)
	mustSet(a, bd2, l2.L2_API_PORT_TYPE_BVI, 0, true)
	order := func() []interface_types.InterfaceIndex {
		t.Helper()
		var out []interface_types.InterfaceIndex
		for _, d := range dump(bd2, vpptest.NoIndex) {
			for _, m := range d.SwIfDetails {
				out = append(out, m.SwIfIndex)
			}
		}
		return out
	}
	if got, want := order(), []interface_types.InterfaceIndex{a, b, c}; !slices.Equal(got, want) {
		t.Errorf("members of %d in the dump's order %v, want %v (the BVI first)", bd2, got, want)
	}
	mustSet(b, bd2, l2.L2_API_PORT_TYPE_NORMAL, 0, false)
	if got, want := order(), []interface_types.InterfaceIndex{a, c}; !slices.Equal(got, want) {
		t.Errorf("members of %d after b left %v, want %v", bd2, got, want)
	}
}

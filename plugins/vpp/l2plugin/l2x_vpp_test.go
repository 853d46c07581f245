package l2plugin_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// TestVPPXConnectAndFIBBehaviour checks, against vppsim or the real VPP
// alike, the behaviours of VPP 25.10's cross-connects and L2 FIB that the
// plugin is built on, so that vppsim cannot drift from them unnoticed:
//
//   - an interface is in one L2 mode: a cross-connect takes it out of its
//     bridge domain, joining a domain ends its cross-connect, and disabling
//     either (whatever the bridge domain or transmit interface given) puts
//     it back in L3 mode;
//   - a cross-connect to a missing interface is INVALID_SW_IF_INDEX; one
//     whose transmit interface is deleted stays, one whose receive
//     interface is deleted goes, and that interface's transmit interface
//     goes back to L3 mode;
//   - l2fib_add_del: a forwarding entry needs an interface that is a
//     member of a bridge domain (any); an add replaces the entry; a filter
//     entry is static, without interface; a delete needs the entry's
//     interface (not for a filter) and fails NO_SUCH_ENTRY otherwise, or
//     for a missing entry or domain;
//   - a BVI's MAC is put in its domain's FIB (static, BVI) while it is the
//     BVI; a member leaving keeps its static entries; a deleted domain's
//     static entries stay, shown with bd_id ~0.
func TestVPPXConnectAndFIBBehaviour(t *testing.T) {
	v := vpptest.Start(t, vpptest.Options{Areas: []vppconn.Area{l2plugin.New(nil, nil, nil).Area()}})
	conn, err := v.M.Conn(l2plugin.AreaName)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ic, lc := interfaces.NewServiceClient(conn), l2.NewServiceClient(conn)
	var loops []interface_types.InterfaceIndex
	for range 4 {
		r, err := ic.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		if err != nil {
			t.Fatal(err)
		}
		loops = append(loops, r.SwIfIndex)
	}
	a, b, c, d := loops[0], loops[1], loops[2], loops[3]
	ids := v.FreeBdIDs(2)
	bd1, bd2 := ids[0], ids[1]
	for _, id := range ids {
		if _, err := lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: id, IsAdd: true, Forward: true, Learn: true, BdTag: "behaviour"}); err != nil {
			t.Fatal(err)
		}
	}
	isErr := func(what string, err error, want govppapi.VPPApiError) {
		t.Helper()
		if want == 0 && err != nil || want != 0 && !vppconn.IsVPPError(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	bridge := func(sw interface_types.InterfaceIndex, bdID uint32, pt l2.L2PortType, enable bool) {
		t.Helper()
		_, err := lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: sw, BdID: bdID, PortType: pt, Enable: enable})
		isErr(fmt.Sprintf("sw_interface_set_l2_bridge (%d into %d, enable %v)", sw, bdID, enable), err, 0)
	}
	xconnect := func(rx, tx interface_types.InterfaceIndex, enable bool) error {
		_, err := lc.SwInterfaceSetL2Xconnect(ctx, &l2.SwInterfaceSetL2Xconnect{RxSwIfIndex: rx, TxSwIfIndex: tx, Enable: enable})
		return err
	}
	xcs := func() map[uint32]uint32 {
		t.Helper()
		out := map[uint32]uint32{}
		ds, err := vppconn.Dump[*l2.L2XconnectDetails](ctx, conn, &l2.L2XconnectDump{})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ds {
			if slices.Contains(loops, x.RxSwIfIndex) {
				out[uint32(x.RxSwIfIndex)] = uint32(x.TxSwIfIndex)
			}
		}
		return out
	}
	members := func(bdID uint32) []uint32 {
		t.Helper()
		var out []uint32
		for _, m := range v.DumpBridgeDomains() {
			if m.BdID == bdID {
				out = m.MemberIndexes()
			}
		}
		return out
	}
	want := func(what string, got, want map[uint32]uint32) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: cross-connects %v, want %v", what, got, want)
		}
	}

	// One L2 mode per interface.
	bridge(a, bd1, l2.L2_API_PORT_TYPE_NORMAL, true)
	isErr("xconnect a->b", xconnect(a, b, true), 0)
	want("a cross-connected", xcs(), map[uint32]uint32{uint32(a): uint32(b)})
	if m := members(bd1); len(m) != 0 {
		t.Errorf("bd1 members %v after a's cross-connect, want none", m)
	}
	isErr("xconnect a->c (replace)", xconnect(a, c, true), 0)
	want("a re-pointed", xcs(), map[uint32]uint32{uint32(a): uint32(c)})
	bridge(a, bd1, l2.L2_API_PORT_TYPE_NORMAL, true)
	want("a back in bd1", xcs(), map[uint32]uint32{})
	isErr("xconnect disable of a member", xconnect(a, c, false), 0)
	if m := members(bd1); len(m) != 0 {
		t.Errorf("bd1 members %v after a's cross-connect disable, want none", m)
	}
	isErr("xconnect a->b", xconnect(a, b, true), 0)
	bridge(a, bd2, l2.L2_API_PORT_TYPE_NORMAL, false)
	want("bridge disable of a cross-connected interface", xcs(), map[uint32]uint32{})
	isErr("xconnect to no interface", xconnect(a, 999999, true), govppapi.INVALID_SW_IF_INDEX)
	isErr("xconnect disable of an L3 interface", xconnect(a, 0, false), 0)

	// A deleted transmit interface leaves the cross-connects to it, a
	// deleted receive interface takes its own away, and puts its transmit
	// interface in L3 mode.
	isErr("xconnect a->d", xconnect(a, d, true), 0)
	isErr("xconnect c->d", xconnect(c, d, true), 0)
	isErr("xconnect d->c", xconnect(d, c, true), 0)
	isErr("xconnect b->b", xconnect(b, b, true), 0)
	if _, err := ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: d}); err != nil {
		t.Fatal(err)
	}
	want("d deleted", xcs(), map[uint32]uint32{uint32(a): uint32(d), uint32(b): uint32(b)})
	for _, rx := range []interface_types.InterfaceIndex{a, b} {
		isErr("xconnect disable", xconnect(rx, 0, false), 0)
	}
	loops = loops[:3]

	// The L2 FIB.
	mac := func(last byte) ethernet_types.MacAddress { return ethernet_types.MacAddress{0x02, 0, 0, 0, 0xfb, last} }
	fib := func(what string, add bool, m ethernet_types.MacAddress, bdID uint32, sw interface_types.InterfaceIndex, static, filter, bvi bool, want govppapi.VPPApiError) {
		t.Helper()
		_, err := lc.L2fibAddDel(ctx, &l2.L2fibAddDel{Mac: m, BdID: bdID, SwIfIndex: sw, IsAdd: add, StaticMac: static, FilterMac: filter, BviMac: bvi})
		isErr(what, err, want)
	}
	entries := func(bdID uint32) []string {
		t.Helper()
		ds, err := vppconn.Dump[*l2.L2FibTableDetails](ctx, conn, &l2.L2FibTableDump{BdID: bdID})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ds {
			if e.Mac[4] != 0xfb && !e.BviMac {
				continue // not this test's
			}
			sw := fmt.Sprint(e.SwIfIndex)
			if uint32(e.SwIfIndex) == vpptest.NoIndex {
				sw = "-"
			}
			bd := fmt.Sprint(e.BdID)
			if e.BdID == vpptest.NoIndex {
				bd = "~0"
			}
			out = append(out, fmt.Sprintf("%s %s %s static=%v filter=%v bvi=%v", bd, e.Mac, sw, e.StaticMac, e.FilterMac, e.BviMac))
		}
		slices.Sort(out)
		return out
	}
	same := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: FIB %q, want %q", what, got, want)
		}
	}
	fib("forward to an L3 interface", true, mac(1), bd1, a, true, false, false, govppapi.INVALID_SW_IF_INDEX)
	bridge(a, bd1, l2.L2_API_PORT_TYPE_NORMAL, true)
	bridge(b, bd2, l2.L2_API_PORT_TYPE_NORMAL, true)
	fib("forward to a member of another domain", true, mac(2), bd1, b, true, false, false, 0)
	fib("forward to a member", true, mac(1), bd1, a, false, false, false, 0)
	fib("forward replaced: static", true, mac(1), bd1, a, true, false, false, 0)
	fib("filter", true, mac(3), bd1, 0, false, true, false, 0)
	fib("to a missing domain", true, mac(4), 0xfffff0, a, true, false, false, govppapi.NO_SUCH_ENTRY)
	sa, sb := fmt.Sprint(a), fmt.Sprint(b)
	same("added", entries(bd1),
		fmt.Sprintf("%d 02:00:00:00:fb:01 %s static=true filter=false bvi=false", bd1, sa),
		fmt.Sprintf("%d 02:00:00:00:fb:02 %s static=true filter=false bvi=false", bd1, sb),
		fmt.Sprintf("%d 02:00:00:00:fb:03 - static=true filter=true bvi=false", bd1))
	fib("delete with another interface", false, mac(1), bd1, b, false, false, false, govppapi.NO_SUCH_ENTRY)
	fib("delete a filter, interface 0", false, mac(3), bd1, 0, false, false, false, 0)
	fib("delete a missing entry", false, mac(3), bd1, 0, false, false, false, govppapi.NO_SUCH_ENTRY)
	fib("delete in a missing domain", false, mac(1), 0xfffff0, a, false, false, false, govppapi.NO_SUCH_ENTRY)

	// A member leaving keeps its static entries; a BVI's MAC comes and
	// goes with its role.
	bridge(a, bd1, l2.L2_API_PORT_TYPE_NORMAL, false)
	same("a left bd1", entries(bd1),
		fmt.Sprintf("%d 02:00:00:00:fb:01 %s static=true filter=false bvi=false", bd1, sa),
		fmt.Sprintf("%d 02:00:00:00:fb:02 %s static=true filter=false bvi=false", bd1, sb))
	bvi := interfaceAt(t, v, c)
	bridge(c, bd1, l2.L2_API_PORT_TYPE_BVI, true)
	same("c BVI of bd1", entries(bd1),
		fmt.Sprintf("%d 02:00:00:00:fb:01 %s static=true filter=false bvi=false", bd1, sa),
		fmt.Sprintf("%d 02:00:00:00:fb:02 %s static=true filter=false bvi=false", bd1, sb),
		fmt.Sprintf("%d %s %d static=true filter=false bvi=true", bd1, bvi.MAC, c))
	bridge(c, bd1, l2.L2_API_PORT_TYPE_BVI, false)
	fib("delete a's entry", false, mac(1), bd1, a, false, false, false, 0)

	// A deleted domain's static entries stay, under bd_id ~0.
	if _, err := lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: bd1, IsAdd: false}); err != nil {
		t.Fatal(err)
	}
	same("bd1 deleted", entries(vpptest.NoIndex), fmt.Sprintf("~0 02:00:00:00:fb:02 %s static=true filter=false bvi=false", sb))
	// The entry goes with a domain that takes bd1's bd_index: made again
	// at once, bd1 has the lowest free one.
	if _, err := lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: bd1, IsAdd: true, BdTag: "behaviour"}); err != nil {
		t.Fatal(err)
	}
	same("bd1 made again", entries(bd1), fmt.Sprintf("%d 02:00:00:00:fb:02 %s static=true filter=false bvi=false", bd1, sb))
	fib("delete b's entry", false, mac(2), bd1, b, false, false, false, 0)
	bridge(b, bd2, l2.L2_API_PORT_TYPE_NORMAL, false)
}

// interfaceAt is VPP's interface sw.
func interfaceAt(t *testing.T, v *vpptest.VPP, sw interface_types.InterfaceIndex) vpptest.Interface {
	t.Helper()
	for _, i := range v.DumpInterfaces() {
		if i.SwIfIndex == uint32(sw) {
			return i
		}
	}
	t.Fatalf("no interface %d", sw)
	return vpptest.Interface{}
}

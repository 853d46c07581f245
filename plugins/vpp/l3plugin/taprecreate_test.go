package l3plugin_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/tapv2"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// vppTap is what VPP reports, through its dumps, about the TAP tagged with a
// logical name and the routes to a prefix.
type vppTap struct {
	swIfIndex  uint32
	tags       int // interfaces carrying the tag
	taps       int // TAP interfaces in VPP that it did not have when the test started
	rxRing     uint16
	txRing     uint16
	hostIfName string
	adminUp    bool
	addresses  []string
	routePaths []string // "<sw_if_index> via <next hop>" of the prefix in table 0
}

// dumpTap reads the TAP tagged name and the paths of the route to prefix
// back from VPP: sw_interface_dump, sw_interface_tap_v2_dump,
// ip_address_dump and ip_route_dump.
func (e *env) dumpTap(name string, prefix netip.Prefix) vppTap {
	e.t.Helper()
	conn, err := e.m.Conn(vppcalls.AreaName)
	if err != nil {
		e.t.Fatal(err)
	}
	dump := func(f func(ctx context.Context) error) {
		e.t.Helper()
		ctx, cancel := e.m.CallContext(context.Background())
		defer cancel()
		if err := f(ctx); err != nil {
			e.t.Fatal(err)
		}
	}
	all := ^interface_types.InterfaceIndex(0)
	var out vppTap
	dump(func(ctx context.Context) error {
		ifs, err := vppconn.Dump[*interfaces.SwInterfaceDetails](ctx, conn, &interfaces.SwInterfaceDump{SwIfIndex: all})
		for _, i := range ifs {
			if i.Tag == name {
				out.tags++
				out.swIfIndex = uint32(i.SwIfIndex)
				out.adminUp = i.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0
			}
		}
		return err
	})
	if out.tags == 0 {
		e.t.Fatalf("VPP has no interface tagged %s", name)
	}
	var fresh []uint32
	for _, i := range e.vpp.NewInterfaces() {
		fresh = append(fresh, i.SwIfIndex)
	}
	dump(func(ctx context.Context) error {
		taps, err := vppconn.Dump[*tapv2.SwInterfaceTapV2Details](ctx, conn, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: all})
		for _, tap := range taps {
			if slices.Contains(fresh, tap.SwIfIndex) {
				out.taps++
			}
			if tap.SwIfIndex == out.swIfIndex {
				out.rxRing, out.txRing, out.hostIfName = tap.RxRingSz, tap.TxRingSz, tap.HostIfName
			}
		}
		return err
	})
	dump(func(ctx context.Context) error {
		addrs, err := vppconn.Dump[*ip.IPAddressDetails](ctx, conn, &ip.IPAddressDump{SwIfIndex: interface_types.InterfaceIndex(out.swIfIndex)})
		for _, a := range addrs {
			out.addresses = append(out.addresses, a.Prefix.String())
		}
		return err
	})
	dump(func(ctx context.Context) error {
		routes, err := vppconn.Dump[*ip.IPRouteDetails](ctx, conn, &ip.IPRouteDump{Table: ip.IPTable{TableID: 0}})
		for _, r := range routes {
			if r.Route.Prefix.String() != prefix.String() {
				continue
			}
			for _, p := range r.Route.Paths {
				if p.Type != fib_types.FIB_API_PATH_TYPE_NORMAL {
					continue
				}
				nh := netip.AddrFrom4(p.Nh.Address.GetIP4())
				out.routePaths = append(out.routePaths, fmt.Sprintf("%d via %s", p.SwIfIndex, nh))
			}
		}
		return err
	})
	return out
}

// The seed's control flow "interface re-creation": a VPP TAP interface with
// a route whose outgoing interface is the TAP. VPP cannot change the RX ring
// size of a TAP, so the change re-creates it; the route cannot exist without
// its interface, so it is deleted first (PENDING) and created again once the
// TAP is back: route deleted, TAP deleted, TAP created, route created, in the
// transaction's history and in the requests VPP received. VPP then has one
// TAP with the new ring size, and the route's path goes through the new
// TAP's sw_if_index.
func TestTapRecreationWithItsRoute(t *testing.T) {
	e := newEnvWith(t, envOptions{ifplugin: true})
	e.vpp.NeedTap()
	const name = "my-tap"
	dst := netip.MustParsePrefix("10.20.0.0/16")
	tapKey := ifplugin.InterfaceKey(name)
	tap := &vppif.Interface{Name: name, Type: vppif.Interface_TAP, Enabled: true, IpAddresses: []string{"10.10.0.1/24"},
		Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 2, HostIfName: "tap-host", RxRingSize: 256}}}
	route := routeKV(t, &vppl3.Route{DstNetwork: dst.String(), NextHopAddr: "10.10.0.2", OutgoingInterface: name})
	e.mustCommit(kv{tapKey, tap}, route)
	before := e.dumpTap(name, dst)
	if before.rxRing != 256 || len(before.routePaths) != 1 || before.routePaths[0] != fmt.Sprintf("%d via 10.10.0.2", before.swIfIndex) {
		t.Fatalf("before the change, VPP has %+v", before)
	}

	changed := proto.Clone(tap).(*vppif.Interface)
	changed.GetTap().RxRingSize = 1024
	e.resetCalls()
	seq := e.mustCommit(kv{tapKey, changed})

	// The history: the route goes first and waits (PENDING) while the TAP
	// is re-created, then comes back; the TAP's derived values (admin state,
	// address) are removed before the TAP and come back after it.
	rec := e.s.GetRecordedTransaction(seq)
	if rec == nil {
		t.Fatalf("transaction %d not in the history", seq)
	}
	derivedKeys := []string{ifplugin.AdminStateKey(name, true), ifplugin.AddressKey(name, "10.10.0.1/24")}
	var order []string
	derivedAt := map[string][]int{} // "DELETE"/"CREATE" -> positions of the TAP's derived values
	pos := map[string]int{}
	for i, op := range rec.Executed {
		if op.NOOP || op.Property {
			continue
		}
		if op.NewErr != nil {
			t.Errorf("%v %s failed: %v", op.Operation, op.Key, op.NewErr)
		}
		if op.Derived {
			if slices.Contains(derivedKeys, op.Key) {
				derivedAt[op.Operation.String()] = append(derivedAt[op.Operation.String()], i)
			}
			continue
		}
		step := fmt.Sprintf("%v %s %v", op.Operation, op.Key, op.Flags())
		order = append(order, step)
		pos[step] = i
	}
	routeDelete := "DELETE " + route.key + " [IS-PENDING]"
	tapDelete := "DELETE " + tapKey + " [RECREATE]"
	tapCreate := "CREATE " + tapKey + " [RECREATE]"
	routeCreate := "CREATE " + route.key + " [WAS-PENDING]"
	if want := []string{routeDelete, tapDelete, tapCreate, routeCreate}; !slices.Equal(order, want) {
		t.Errorf("executed\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	// The derived values, each deleted while the TAP is still there and
	// created once it is back, before the route.
	if dels := derivedAt["DELETE"]; len(dels) != 2 || slices.Max(dels) > pos[tapDelete] {
		t.Errorf("derived values of the TAP deleted at %v, want 2 before the TAP's delete (%d)", dels, pos[tapDelete])
	}
	if creates := derivedAt["CREATE"]; len(creates) != 2 || slices.Min(creates) < pos[tapCreate] || slices.Max(creates) > pos[routeCreate] {
		t.Errorf("derived values of the TAP created at %v, want 2 between the TAP's create (%d) and the route's (%d)", creates, pos[tapCreate], pos[routeCreate])
	}

	// What VPP received, in order (vppsim's log only).
	if writes, ok := e.writes(); ok {
		var steps []string
		for _, c := range writes {
			switch c {
			case "ip_route_add_del", "tap_delete_v2", "tap_create_v3":
				steps = append(steps, c)
			}
		}
		if want := []string{"ip_route_add_del", "tap_delete_v2", "tap_create_v3", "ip_route_add_del"}; !slices.Equal(steps, want) {
			t.Errorf("VPP requests %v, want %v (all writes: %v)", steps, want, writes)
		}
	}

	// VPP's state, read back through its dumps: one TAP, with the new ring
	// size and the rest as before, and the one path of the route through it.
	after := e.dumpTap(name, dst)
	t.Logf("sw_if_index of the TAP: %d before, %d after the re-creation (VPP reuses freed indexes)", before.swIfIndex, after.swIfIndex)
	if after.tags != 1 || after.taps != 1 {
		t.Errorf("VPP has %d interfaces tagged %s and %d TAPs, want one", after.tags, name, after.taps)
	}
	if after.rxRing != 1024 || after.txRing != 256 || after.hostIfName != "tap-host" || !after.adminUp ||
		!slices.Equal(after.addresses, []string{"10.10.0.1/24"}) {
		t.Errorf("the re-created TAP in VPP: %+v, want rx ring 1024, tx ring 256, host tap-host, up, 10.10.0.1/24", after)
	}
	if want := []string{fmt.Sprintf("%d via 10.10.0.2", after.swIfIndex)}; !slices.Equal(after.routePaths, want) {
		t.Errorf("paths of %s in VPP: %v, want %v", dst, after.routePaths, want)
	}

	// The scheduler agrees: both CONFIGURED, the TAP's metadata is the new
	// interface's, and a full resync has nothing to do.
	for _, k := range []string{tapKey, route.key} {
		if st := e.status(k); st.GetState() != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", k, st)
		}
	}
	if md, ok := e.ifMetadata(name); !ok || md.SwIfIndex != after.swIfIndex {
		t.Errorf("metadata of %s: %+v, want sw_if_index %d", name, md, after.swIfIndex)
	}
	e.resetCalls()
	seq, err := e.resync(api.FullResync, kv{tapKey, changed}, route)
	if err != nil {
		t.Fatalf("full resync: %v", err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("full resync after the re-creation executed %v", ops)
	}
	if w, _ := e.writes(); len(w) != 0 {
		t.Errorf("full resync after the re-creation wrote %v", w)
	}
}

// ifMetadata returns the interface metadata the route descriptor reads (the
// interface descriptor's metadata map).
func (e *env) ifMetadata(name string) (*ifplugin.Metadata, bool) {
	v, ok := e.s.GetMetadataMap(ifplugin.InterfaceDescriptorName).GetValue(name)
	if !ok {
		return nil, false
	}
	md, ok := v.(*ifplugin.Metadata)
	return md, ok
}

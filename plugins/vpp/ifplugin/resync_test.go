package ifplugin_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// resyncOps runs a full resync of cfg and returns the operations it
// executed and the VPP writes (vppsim's log; nil on a real VPP).
func (e *env) resyncOps(cfg []*vppif.Interface) (ops, writes []string) {
	e.t.Helper()
	if e.sim != nil {
		e.sim.ResetCalls()
	}
	seq := fullResync(e.t, e.s, cfg)
	if e.sim != nil {
		writes = vpptest.Writes(e.sim)
	}
	return executed(e.s, seq), writes
}

// restart starts a new agent (plugin and scheduler) against the same VPP.
func (e *env) restart() {
	e.s.Close()
	e.p = ifplugin.New(e.m, quiet)
	e.s = e.newScheduler(e.p)
}

// interfacesClient calls VPP behind the agent's back.
func (e *env) interfacesClient() interfaces.RPCService {
	e.t.Helper()
	return interfaces.NewServiceClient(e.conn(vppcalls.AreaName))
}

// conn is the Manager's connection for the calls of an area.
func (e *env) conn(area string) govppapi.Connection {
	e.t.Helper()
	conn, err := e.m.Conn(area)
	if err != nil {
		e.t.Fatal(err)
	}
	return conn
}

// TestSubInterfaceUpWaitsResync: a sub-interface configured up under a
// parent configured down waits (its admin-up PENDING) and is down in VPP;
// resyncs of that state, by a running agent or a restarted one, execute
// nothing; when the parent goes up, so does the sub-interface.
func TestSubInterfaceUpWaitsResync(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	parent := loop("trunk")
	parent.Enabled = false
	sub := &vppif.Interface{Name: "sub10", Type: vppif.Interface_SUB_INTERFACE, Enabled: true, IpAddresses: []string{"10.10.0.1/24"},
		Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "trunk", SubId: 10}}}
	cfg := []*vppif.Interface{parent, sub}
	e.commit(cfg...)
	up := ifplugin.AdminStateKey("sub10", true)
	check := func(when string) {
		t.Helper()
		if got, st := stateOf(e.s, up); got != api.ValueStatePending || !slices.Contains(st.GetDetails(), "parent trunk up") {
			t.Errorf("%s: %s is %v, want PENDING on its parent", when, up, st)
		}
		for _, k := range []string{ifplugin.InterfaceKey("sub10"), ifplugin.InterfaceKey("trunk"), ifplugin.AdminStateKey("trunk", false), ifplugin.AddressKey("sub10", "10.10.0.1/24")} {
			if got, st := stateOf(e.s, k); got != api.ValueStateConfigured {
				t.Errorf("%s: %s is %v, want CONFIGURED", when, k, st)
			}
		}
		if i := e.mustVPP("sub10"); i.AdminUp {
			t.Errorf("%s: sub10 is up in VPP under a parent that is down", when)
		}
	}
	check("applied")
	for _, when := range []string{"first resync", "second resync"} {
		if ops, w := e.resyncOps(cfg); len(ops) != 0 || len(w) != 0 {
			t.Errorf("%s executed %v, wrote %v; want nothing", when, ops, w)
		}
		check(when)
	}
	e.restart()
	for _, when := range []string{"resync of a restarted agent", "its second resync"} {
		if ops, w := e.resyncOps(cfg); len(ops) != 0 || len(w) != 0 {
			t.Errorf("%s executed %v, wrote %v; want nothing", when, ops, w)
		}
		check(when)
	}

	// The parent goes up: the sub-interface follows.
	seq := e.commit(loop("trunk"))
	if ops := executed(e.s, seq); !slices.Contains(ops, "CREATE "+up) {
		t.Errorf("executed %v, want sub10's admin-up created", ops)
	}
	e.wantState(up, api.ValueStateConfigured)
	if !e.mustVPP("sub10").AdminUp {
		t.Error("sub10 not up in VPP")
	}
}

// TestAddressRefusedByVPP: VPP keeps a subnet on one interface per VRF. An
// address that overlaps another interface's is refused, the error naming
// that interface; resyncs try it again (the scheduler retries a FAILED
// value on every resync) and do nothing else, a restarted agent does not
// take it for applied, and once the other interface lets the subnet go, a
// resync applies it.
func TestAddressRefusedByVPP(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	cfg := []*vppif.Interface{loop("a", "10.0.0.1/24"), loop("b", "10.0.0.2/24", "10.1.0.2/24")}
	_, err := e.commitWith(api.TxnOptions{}, cfg...)
	refused := ifplugin.AddressKey("b", "10.0.0.2/24")
	var te *api.TransactionError
	if !errors.As(err, &te) || te.ErrorOf(refused) == nil {
		t.Fatalf("commit error %v, want %s refused", err, refused)
	}
	const reason = "interface b: address 10.0.0.2/24 overlaps 10.0.0.1/24 of interface a (VPP keeps a subnet on one interface per VRF)"
	if msg := te.ErrorOf(refused).Error(); !strings.HasPrefix(msg, reason) {
		t.Errorf("error %q, want it to start with %q", msg, reason)
	}
	check := func(when string) {
		t.Helper()
		if got, st := stateOf(e.s, refused); got != api.ValueStateFailed {
			t.Errorf("%s: %s is %v, want FAILED", when, refused, st)
		}
		for _, k := range []string{ifplugin.InterfaceKey("b"), ifplugin.AddressKey("b", "10.1.0.2/24"), ifplugin.AddressKey("a", "10.0.0.1/24")} {
			if got, st := stateOf(e.s, k); got != api.ValueStateConfigured {
				t.Errorf("%s: %s is %v, want CONFIGURED", when, k, st)
			}
		}
		if got := addrs(e.mustVPP("b")); got != "10.1.0.2/24" {
			t.Errorf("%s: b has %s in VPP, want 10.1.0.2/24 only", when, got)
		}
	}
	check("refused")
	resync := func(when string) {
		t.Helper()
		ops, w := e.resyncOps(cfg)
		if !slices.Equal(ops, []string{"CREATE " + refused}) {
			t.Errorf("%s executed %v, want only the refused address tried again", when, ops)
		}
		if e.sim != nil && !slices.Equal(w, []string{"sw_interface_add_del_address"}) {
			t.Errorf("%s sent %v to VPP, want only the add that VPP refuses", when, w)
		}
		check(when)
	}
	resync("first resync")
	resync("second resync")
	e.restart()
	resync("resync of a restarted agent")

	// a moves to another subnet: b's address goes in at the next resync.
	cfg[0] = loop("a", "10.2.0.1/24")
	e.commit(cfg[0])
	ops, _ := e.resyncOps(cfg)
	if !slices.Equal(ops, []string{"CREATE " + refused}) {
		t.Errorf("resync executed %v, want b's address created", ops)
	}
	e.wantState(refused, api.ValueStateConfigured)
	if got := addrs(e.mustVPP("b")); got != "10.0.0.2/24,10.1.0.2/24" {
		t.Errorf("b has %s in VPP", got)
	}
	if ops, w := e.resyncOps(cfg); len(ops) != 0 || len(w) != 0 {
		t.Errorf("resync after that executed %v, wrote %v", ops, w)
	}
}

// TestAdminStateAndAddressDriftRepaired: changes made behind the agent's
// back to the admin state and addresses of its interfaces are undone by a
// resync, value by value.
func TestAdminStateAndAddressDriftRepaired(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	down := loop("d", "10.5.0.1/24")
	down.Enabled = false
	cfg := []*vppif.Interface{loop("u", "10.4.0.1/24", "2001:db8::1/64"), down}
	e.commit(cfg...)
	ic := e.interfacesClient()
	ctx := context.Background()
	u, d := e.mustVPP("u").SwIfIndex, e.mustVPP("d").SwIfIndex
	setFlags := func(idx uint32, up bool) {
		t.Helper()
		var flags interface_types.IfStatusFlags
		if up {
			flags = interface_types.IF_STATUS_API_FLAG_ADMIN_UP
		}
		if _, err := ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: interface_types.InterfaceIndex(idx), Flags: flags}); err != nil {
			t.Fatal(err)
		}
	}
	address := func(idx uint32, cidr string, add bool) {
		t.Helper()
		_, err := ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: interface_types.InterfaceIndex(idx), IsAdd: add, Prefix: mustAddr(cidr)})
		if err != nil && !(add && errors.Is(err, govppapi.DUPLICATE_IF_ADDRESS)) {
			t.Fatal(err)
		}
	}
	setFlags(u, false)
	setFlags(d, true)
	address(u, "2001:db8::1/64", false)
	address(d, "10.6.0.1/24", true)
	ops, _ := e.resyncOps(cfg)
	want := []string{
		"CREATE " + ifplugin.AdminStateKey("u", true),
		"CREATE " + ifplugin.AdminStateKey("d", false),
		"CREATE " + ifplugin.AddressKey("u", "2001:db8::1/64"),
		"DELETE " + ifplugin.AddressKey("d", "10.6.0.1/24"),
	}
	for _, w := range want {
		if !slices.Contains(ops, w) {
			t.Errorf("resync executed %v, want %s", ops, w)
		}
	}
	if i := e.mustVPP("u"); !i.AdminUp || addrs(i) != "10.4.0.1/24,2001:db8::1/64" {
		t.Errorf("u after the resync: up %v, addresses %s", i.AdminUp, addrs(i))
	}
	if i := e.mustVPP("d"); i.AdminUp || addrs(i) != "10.5.0.1/24" {
		t.Errorf("d after the resync: up %v, addresses %s", i.AdminUp, addrs(i))
	}
	if ops, w := e.resyncOps(cfg); len(ops) != 0 || len(w) != 0 {
		t.Errorf("second resync executed %v, wrote %v", ops, w)
	}
}

// TestAddressConflicts: VPP 25.10 refuses an address the interface already
// has with the code of a conflict (IPv4 ADDRESS_IN_USE, IPv6
// DUPLICATE_IF_ADDRESS): adding one already there succeeds, as the
// handler's contract says; an IPv6 address that overlaps another
// interface's is refused, naming that interface, and not taken for applied.
func TestAddressConflicts(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	e.commit(loop("a", "10.31.0.1/24", "2001:db8:31::1/64"))
	h := vppcalls.NewHandler(e.m)
	a := e.mustVPP("a").SwIfIndex
	for _, cidr := range []string{"10.31.0.1/24", "2001:db8:31::1/64"} {
		if err := h.AddAddress(context.Background(), a, netip.MustParsePrefix(cidr)); err != nil {
			t.Errorf("AddAddress of %s, already there: %v", cidr, err)
		}
	}
	// The same address with another length is no address of a.
	if err := h.AddAddress(context.Background(), a, netip.MustParsePrefix("10.31.0.1/16")); !errors.Is(err, govppapi.ADDRESS_IN_USE) {
		t.Errorf("AddAddress of 10.31.0.1/16 over 10.31.0.1/24: %v, want ADDRESS_IN_USE", err)
	}
	if got := addrs(e.mustVPP("a")); got != "10.31.0.1/24,2001:db8:31::1/64" {
		t.Errorf("a has %s", got)
	}

	cfg := []*vppif.Interface{loop("a", "10.31.0.1/24", "2001:db8:31::1/64"), loop("b", "2001:db8:31::2/64")}
	_, err := e.commitWith(api.TxnOptions{}, cfg...)
	refused := ifplugin.AddressKey("b", "2001:db8:31::2/64")
	var te *api.TransactionError
	if !errors.As(err, &te) || te.ErrorOf(refused) == nil {
		t.Fatalf("commit: %v, want %s refused", err, refused)
	}
	const reason = "interface b: address 2001:db8:31::2/64 overlaps 2001:db8:31::1/64 of interface a"
	if msg := te.ErrorOf(refused).Error(); !strings.HasPrefix(msg, reason) {
		t.Errorf("error %q, want it to start with %q", msg, reason)
	}
	e.wantState(refused, api.ValueStateFailed)
	if got := addrs(e.mustVPP("b")); got != "" {
		t.Errorf("b has %s in VPP", got)
	}
	ops, _ := e.resyncOps(cfg)
	if !slices.Equal(ops, []string{"CREATE " + refused}) {
		t.Errorf("resync executed %v, want only the refused address tried again", ops)
	}
	e.wantState(refused, api.ValueStateFailed)
}

// TestMTUDrift: the model's one MTU is VPP's L3 MTU with no protocol MTU of
// its own; a protocol MTU set by hand is found (the interface's MTU is
// reported as that one), and a resync sets the MTU back.
func TestMTUDrift(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	l := loop("m1")
	l.Mtu = 1500
	e.commit(l)
	ic, ctx := e.interfacesClient(), context.Background()
	idx := interface_types.InterfaceIndex(e.mustVPP("m1").SwIfIndex)
	for _, mtu := range [][]uint32{{1500, 1400, 0, 0}, {0, 0, 1300, 0}, {1500, 0, 0, 1200}} {
		if _, err := ic.SwInterfaceSetMtu(ctx, &interfaces.SwInterfaceSetMtu{SwIfIndex: idx, Mtu: mtu}); err != nil {
			t.Fatal(err)
		}
		ops, _ := e.resyncOps([]*vppif.Interface{l})
		if !slices.Equal(ops, []string{"UPDATE " + ifplugin.InterfaceKey("m1")}) {
			t.Errorf("MTU %v: resync executed %v, want m1 updated", mtu, ops)
		}
		if got := e.mustVPP("m1").MTU; got != [4]uint32{1500, 0, 0, 0} {
			t.Errorf("MTU %v: after the resync VPP has %v", mtu, got)
		}
	}
	if ops, w := e.resyncOps([]*vppif.Interface{l}); len(ops) != 0 || len(w) != 0 {
		t.Errorf("in-sync resync executed %v, wrote %v", ops, w)
	}
}

package l3plugin_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// labelled is the VRF table value of id with a label.
func labelled(id uint32, ipv6 bool, label string) kv {
	x := table(id, ipv6)
	x.value.(*vppl3.VrfTable).Label = label
	return x
}

// tableName is the name VPP has for a table, "" when it has none.
func (e *env) tableName(id uint32, ipv6 bool) (string, bool) {
	e.t.Helper()
	name, ok := e.vpp.DumpTableNames()[vpptest.Table{ID: id, IPv6: ipv6}]
	return name, ok
}

// tableAPI adds or deletes a table as another program would, through VPP's
// binary API.
func (e *env) tableAPI(add bool, id uint32, ipv6 bool, name string) {
	e.t.Helper()
	e.vppAPI(func(ctx context.Context, ipc ip.RPCService, _ interfaces.RPCService) error {
		_, err := ipc.IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: add, Table: ip.IPTable{TableID: id, IsIP6: ipv6, Name: name}})
		return err
	})
}

// TestVrfTables: VRF tables of both protocols, with and without a label,
// against vppsim and the real VPP: created with their names, a label
// change re-creates the table, an agent restarting on that VPP executes
// nothing, a table deleted by someone else comes back at the next resync,
// deleted values take their tables away; table 0 is never created or
// deleted.
func TestVrfTables(t *testing.T) {
	e := newEnv(t)
	blue, v6, zero := labelled(10, false, "blue"), table(10, true), labelled(0, false, "main")
	if e.hasTable(10, false) || e.hasTable(10, true) {
		t.Skip("VPP has table 10 already")
	}
	e.resetCalls()
	e.mustCommit(blue, v6, zero)
	for _, x := range []kv{blue, v6, zero} {
		if st := e.state(x.key); st != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", x.key, st)
		}
	}
	if w, ok := e.writes(); ok && !slices.Equal(w, []string{"ip_table_add_del", "ip_table_add_del"}) {
		t.Errorf("VPP writes %v, want two ip_table_add_del (none for table 0)", w)
	}
	names := func(when string, want map[vpptest.Table]string) {
		t.Helper()
		for tk, name := range want {
			got, ok := e.tableName(tk.ID, tk.IPv6)
			switch {
			case name == "" && ok:
				t.Errorf("%s: table %d (ipv6 %v) in VPP, named %q; want none", when, tk.ID, tk.IPv6, got)
			case name != "" && got != name:
				t.Errorf("%s: table %d (ipv6 %v) named %q (in VPP %v), want %q", when, tk.ID, tk.IPv6, got, ok, name)
			}
		}
	}
	names("created", map[vpptest.Table]string{{ID: 10}: "blue", {ID: 10, IPv6: true}: "ipv6-VRF:10", {ID: 0}: "ipv4-VRF:0"})
	e.restartInSync(blue, v6, zero)

	// The label changes: VPP cannot rename a table, it is made again.
	green := labelled(10, false, "green")
	seq := e.mustCommit(green)
	if ops := e.executed(seq); !slices.Equal(ops, []string{"DELETE " + green.key + " [RECREATE]", "CREATE " + green.key + " [RECREATE]"}) {
		t.Errorf("label change executed %v", ops)
	}
	names("relabelled", map[vpptest.Table]string{{ID: 10}: "green"})
	// An empty label is VPP's default name: equivalent, nothing to do.
	if seq := e.mustCommit(kv{v6.key, &vppl3.VrfTable{Id: 10, Protocol: vppl3.VrfTable_IPV6, Label: "ipv6-VRF:10"}}); len(e.executed(seq)) != 0 {
		t.Errorf("the default name spelled out executed %v", e.executed(seq))
	}

	// Someone deletes the IPv4 table through the API: the next resync
	// creates it again, with its label.
	e.tableAPI(false, 10, false, "")
	names("deleted behind the agent's back", map[vpptest.Table]string{{ID: 10}: ""})
	seq, err := e.resync(api.FullResync, green, v6, zero)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 1 || !strings.HasPrefix(ops[0], "CREATE "+green.key+" ") {
		t.Errorf("resync after the table's deletion executed %v, want its CREATE", ops)
	}
	names("repaired", map[vpptest.Table]string{{ID: 10}: "green"})

	// Deleted values: their tables go, table 0 stays.
	e.mustCommit(del(green.key), del(v6.key), del(zero.key))
	names("deleted", map[vpptest.Table]string{{ID: 10}: "", {ID: 10, IPv6: true}: "", {ID: 0}: "ipv4-VRF:0"})
}

// TestVrfTablesOfOthers: a table someone else made is never deleted: a
// restarted agent reports it OBTAINED and its full resync leaves it; a
// value asking for another label is refused (VPP cannot rename a table)
// with an error naming the table's name, VPP untouched, and a value with
// its name takes it over.
func TestVrfTablesOfOthers(t *testing.T) {
	e := newEnv(t)
	if e.hasTable(11, false) {
		t.Skip("VPP has table 11 already")
	}
	e.tableAPI(true, 11, false, "theirs")
	e.startScheduler()
	seq, err := e.resync(api.FullResync)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("full resync executed %v", ops)
	}
	key := models.VrfTableKey(11, false)
	if st := e.state(key); st != api.ValueStateObtained {
		t.Errorf("table of others: %v, want OBTAINED", st)
	}
	if name, _ := e.tableName(11, false); name != "theirs" {
		t.Errorf("table 11 named %q after the resync, want theirs", name)
	}

	mine := labelled(11, false, "mine")
	e.resetCalls()
	if _, err := e.commit(mine); err == nil {
		t.Error("a label VPP's table does not have was accepted")
	}
	st := e.status(key)
	if st.GetState() != api.ValueStateFailed || !strings.Contains(st.GetError(), `named "theirs"`) || !strings.Contains(st.GetError(), "cannot rename") {
		t.Errorf("status %v, want an error naming the table's name", st)
	}
	if w, ok := e.writes(); ok && slices.Contains(w, "ip_table_add_del") {
		t.Errorf("VPP writes %v, want no table change", w)
	}
	theirs := labelled(11, false, "theirs")
	e.mustCommit(theirs)
	if st := e.state(key); st != api.ValueStateConfigured {
		t.Errorf("taken over: %v, want CONFIGURED", st)
	}
	e.mustCommit(del(key))
	if e.hasTable(11, false) {
		t.Error("table 11 left after its value's delete")
	}
}

// TestRouteWaitsForVrfTable: a route in a VRF other than 0, or looked up in
// one, stays PENDING until the table's value exists, and goes (before its
// table) when the table's value is deleted.
func TestRouteWaitsForVrfTable(t *testing.T) {
	e := newEnv(t)
	inVRF := routeKV(t, &vppl3.Route{Type: vppl3.Route_DROP, VrfId: 10, DstNetwork: "10.10.0.0/16"})
	via := routeKV(t, &vppl3.Route{Type: vppl3.Route_INTER_VRF, DstNetwork: "10.11.0.0/16", ViaVrfId: 10})
	e.mustCommit(inVRF, via)
	for _, x := range []kv{inVRF, via} {
		if st := e.status(x.key); st.GetState() != api.ValueStatePending || !slices.Contains(st.GetDetails(), "VRF table 10 (IPv4)") {
			t.Errorf("%s: %v, want PENDING on VRF table 10 (IPv4)", x.key, st)
		}
	}
	if got := e.routes(); len(got) != 0 {
		t.Errorf("routes in VPP %v, want none", got)
	}
	v4 := table(10, false)
	e.mustCommit(v4)
	want := []string{"0 10.11.0.0/16 NORMAL nh=- if=- table=10 w=1 p=0", "10 10.10.0.0/16 DROP nh=- if=- table=0 w=1 p=0"}
	if got := e.routes(); !slices.Equal(got, want) {
		t.Errorf("routes in VPP %v, want %v", got, want)
	}
	e.restartInSync(inVRF, via, v4)

	seq := e.mustCommit(del(v4.key))
	ops := e.executed(seq)
	pos := func(op string) int {
		return slices.IndexFunc(ops, func(o string) bool { return strings.HasPrefix(o, op+" ") })
	}
	if k := pos("DELETE " + v4.key); k < 0 || k < pos("DELETE "+inVRF.key) || k < pos("DELETE "+via.key) || pos("DELETE "+via.key) < 0 {
		t.Errorf("table delete executed %v, want the routes deleted first", ops)
	}
	for _, x := range []kv{inVRF, via} {
		if st := e.state(x.key); st != api.ValueStatePending {
			t.Errorf("%s after its table's delete: %v, want PENDING", x.key, st)
		}
	}
	if got := e.routes(); len(got) != 0 || e.hasTable(10, false) {
		t.Errorf("after the table's delete: routes %v, table %v", got, e.hasTable(10, false))
	}
}

// TestInterfaceWaitsForVrfTable: an interface's VRF waits for the table of
// each protocol of its addresses (IPv4 only: the IPv6 table is not needed
// and the interface stays in IPv6 table 0), its addresses with it; an IPv6
// address added later waits for the IPv6 table alone.
func TestInterfaceWaitsForVrfTable(t *testing.T) {
	e := newEnvWith(t, envOptions{ifplugin: true})
	lo := &vppif.Interface{Name: "lo-vrf", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, Vrf: 10, IpAddresses: []string{"10.20.0.1/24"}}
	x := kv{ifplugin.InterfaceKey("lo-vrf"), lo}
	e.mustCommit(x)
	v4Key, v6Key := ifplugin.VRFKey("lo-vrf", 10, "v4"), ifplugin.VRFKey("lo-vrf", 10, "v6")
	if st := e.status(v4Key); st.GetState() != api.ValueStatePending || !slices.Contains(st.GetDetails(), "VRF table 10 (IPv4)") {
		t.Errorf("VRF of lo-vrf: %v, want PENDING on VRF table 10 (IPv4)", st)
	}
	if st := e.state(ifplugin.AddressKey("lo-vrf", "10.20.0.1/24")); st != api.ValueStatePending {
		t.Errorf("address of lo-vrf: %v, want PENDING", st)
	}
	check := func(when string, ip4, ip6 uint32, addrs ...string) {
		t.Helper()
		i, ok := e.vpp.InterfaceTagged("lo-vrf")
		if !ok || i.IP4Table != ip4 || i.IP6Table != ip6 || !slices.Equal(i.Addresses, addrs) {
			t.Errorf("%s: lo-vrf in VPP %+v, want tables %d/%d and addresses %v", when, i, ip4, ip6, addrs)
		}
	}
	check("without tables", 0, 0)

	v4 := table(10, false)
	e.mustCommit(v4)
	if st := e.state(v4Key); st != api.ValueStateConfigured {
		t.Errorf("VRF of lo-vrf with its table: %v", st)
	}
	check("with the IPv4 table", 10, 0, "10.20.0.1/24")
	e.restartInSync(x, v4)

	// An IPv6 address: it waits for the IPv6 table, IPv4 is not touched.
	lo6 := &vppif.Interface{Name: "lo-vrf", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, Vrf: 10, IpAddresses: []string{"10.20.0.1/24", "2001:db8:20::1/64"}}
	x6 := kv{x.key, lo6}
	seq := e.mustCommit(x6)
	for _, op := range e.executed(seq) {
		if strings.Contains(op, v4Key) || strings.Contains(op, "10.20.0.1/24") {
			t.Errorf("adding an IPv6 address executed %s", op)
		}
	}
	if st := e.status(v6Key); st.GetState() != api.ValueStatePending || !slices.Contains(st.GetDetails(), "VRF table 10 (IPv6)") {
		t.Errorf("IPv6 VRF of lo-vrf: %v, want PENDING on VRF table 10 (IPv6)", st)
	}
	check("IPv6 waiting", 10, 0, "10.20.0.1/24")
	v6 := table(10, true)
	e.mustCommit(v6)
	check("with both tables", 10, 10, "10.20.0.1/24", "2001:db8:20::1/64")
	e.restartInSync(x6, v4, v6)

	// Moved back to VRF 0 behind the agent's back: the resync repairs it.
	sw := e.swIfIndex("lo-vrf")
	e.vppAPI(func(ctx context.Context, _ ip.RPCService, ic interfaces.RPCService) error {
		a, _ := ip_types.ParseAddressWithPrefix("10.20.0.1/24")
		if _, err := ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: interface_types.InterfaceIndex(sw), Prefix: a}); err != nil {
			return err
		}
		_, err := ic.SwInterfaceSetTable(ctx, &interfaces.SwInterfaceSetTable{SwIfIndex: interface_types.InterfaceIndex(sw), VrfID: 0})
		return err
	})
	check("moved behind the agent's back", 0, 10, "2001:db8:20::1/64")
	if _, err := e.resync(api.FullResync, x6, v4, v6); err != nil {
		t.Fatal(err)
	}
	check("repaired", 10, 10, "10.20.0.1/24", "2001:db8:20::1/64")

	e.mustCommit(del(x.key), del(v4.key), del(v6.key))
	if e.hasTable(10, false) || e.hasTable(10, true) {
		t.Error("tables left after their values' delete")
	}
}

// TestInvalidVrfTables: bad values are INVALID, their errors naming the
// fields, and VPP is not touched.
func TestInvalidVrfTables(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		x     kv
		field string
		want  string
	}{
		{labelled(12, false, strings.Repeat("x", 64)), "label", "63 bytes"},
		{kv{models.VrfTableKey(12, true), &vppl3.VrfTable{Id: 12}}, "protocol", `"IPV6" in the key but "IPV4" in the value`},
		{kv{models.VrfTableKey(12, false), &vppl3.VrfTable{Id: 13}}, "id", `"12" in the key but "13" in the value`},
	} {
		e.resetCalls()
		_, err := e.commit(c.x)
		var inv *api.InvalidValueError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: commit error %v, want InvalidValueError saying %q", c.x.value, err, c.want)
			continue
		}
		if c.field == "label" && !slices.Equal(inv.InvalidFields, []string{"label"}) {
			t.Errorf("%v: invalid fields %v, want [label]", c.x.value, inv.InvalidFields)
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

// TestOriginalVrfExample: the VRF tables of the original's VRF example,
// decoded from its JSON under its keys, apply: the IPv4 table unlabelled
// (VPP's name), the IPv6 one with its label.
func TestOriginalVrfExample(t *testing.T) {
	e := newEnv(t)
	var cfg []kv
	for _, x := range []struct{ key, json string }{
		{"config/vpp/v2/vrf-table/id/3/protocol/IPV4", `{"id":3}`},
		{"config/vpp/v2/vrf-table/id/3/protocol/IPV6", `{"id":3,"protocol":"IPV6","label":"vrf3-IPv6"}`},
	} {
		_, v, err := models.Default.DecodeValue(x.key, []byte(x.json))
		if err != nil {
			t.Fatal(err)
		}
		cfg = append(cfg, kv{x.key, v})
	}
	if e.hasTable(3, false) || e.hasTable(3, true) {
		t.Skip("VPP has table 3 already")
	}
	e.mustCommit(cfg...)
	for ipv6, want := range map[bool]string{false: "ipv4-VRF:3", true: "vrf3-IPv6"} {
		if name, _ := e.tableName(3, ipv6); name != want {
			t.Errorf("table 3 (ipv6 %v) named %q, want %q", ipv6, name, want)
		}
	}
	e.restartInSync(cfg...)
	e.mustCommit(del(cfg[0].key), del(cfg[1].key))
}

package natplugin_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/interface_types"
	nat "go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/natplugin"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

func globalWith(g *vppnat.Nat44Global) kv { return kv{natplugin.GlobalKey, g} }

func listIf(name string, inside, output bool) *vppnat.Nat44Global_Interface {
	return &vppnat.Nat44Global_Interface{Name: name, IsInside: inside, OutputFeature: output}
}

// derivedStates are the states of the global value's derived values, by
// key.
func (e *env) derivedStates() map[string]string {
	out := map[string]string{}
	for _, d := range e.s.GetValueStatus(natplugin.GlobalKey).GetDerivedValues() {
		out[d.GetKey()] = d.GetState().String()
		if d.GetError() != "" {
			out[d.GetKey()] += ": " + d.GetError()
		}
	}
	return out
}

func (e *env) wantDerived(want map[string]string) {
	e.t.Helper()
	got := e.derivedStates()
	for k, v := range want {
		if !strings.HasPrefix(got[k], v) {
			e.t.Errorf("derived %s: %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			e.t.Errorf("derived %s: %q, not expected", k, got[k])
		}
	}
}

// The original's deprecated lists of the global settings: each interface
// of nat_interfaces gets the features a Nat44Interface would give it, each
// address of address_pool is added as a one-address pool would be, as
// derived values of the global value; virtual_reassembly is accepted and
// ignored, the status saying so. An in-sync resync executes nothing (with
// a Nat44Interface and a pool beside the lists, and after a restart of the
// agent), drift is repaired, and a change of the lists changes only the
// entries that change.
func TestGlobalDeprecatedLists(t *testing.T) {
	e := newEnv(t)
	g := &vppnat.Nat44Global{
		Forwarding: true,
		NatInterfaces: []*vppnat.Nat44Global_Interface{
			listIf("out1", false, true), listIf("in1", false, false), listIf("in1", true, false), listIf("in2", true, false),
		},
		AddressPool: []*vppnat.Nat44Global_Address{
			{Address: "10.40.0.1"}, {Address: "10.40.0.2", TwiceNat: true, VrfId: 0},
		},
		VirtualReassembly: &vppnat.VirtualReassembly{Timeout: 4, MaxReassemblies: 2048, MaxFragments: 10, DropFragments: true},
	}
	// Beside them: a Nat44Interface and a pool of the current models.
	ext := natIf(&vppnat.Nat44Interface{Name: "ext1", NatOutside: true})
	p := pool(&vppnat.Nat44AddressPool{FirstIp: "10.41.0.1", LastIp: "10.41.0.2"})
	nb := []kv{iface("out1"), iface("in1"), iface("in2"), iface("ext1"), globalWith(g), ext, p}
	e.mustCommit(nb...)
	e.wantState(natplugin.GlobalKey, api.ValueStateConfigured)
	e.wantDerived(map[string]string{
		natplugin.GlobalInterfaceKey("out1"):           "CONFIGURED",
		natplugin.GlobalInterfaceKey("in1"):            "CONFIGURED",
		natplugin.GlobalInterfaceKey("in2"):            "CONFIGURED",
		natplugin.GlobalAddressKey("10.40.0.1", false): "CONFIGURED",
		natplugin.GlobalAddressKey("10.40.0.2", true):  "CONFIGURED",
	})
	details := e.status(natplugin.GlobalKey).GetDetails()
	if !slices.ContainsFunc(details, func(d string) bool { return strings.HasPrefix(d, "virtual_reassembly ignored: VPP 25.10") }) {
		t.Errorf("global details %q: nothing says virtual_reassembly is ignored", details)
	}
	sw := func(name string) string { return itoa(e.swIfIndex(name)) }
	features := func(fs ...string) []string { slices.Sort(fs); return fs }
	wantList(t, "features", e.natInterfaces(), features(sw("out1")+":output", sw("in1")+":in+out", sw("in2")+":in", sw("ext1")+":out"))
	wantList(t, "addresses", e.natAddresses(), []string{"10.40.0.1 vrf 0", "10.40.0.2 vrf 0 twice", "10.41.0.1 vrf 0", "10.41.0.2 vrf 0"})
	if !e.forwarding() {
		t.Error("forwarding not set")
	}
	e.wantNoOps("an in-sync resync", e.mustResync(nb...))

	// The agent restarts: the Retrieves tell the lists' features and
	// addresses from the Nat44Interface's and the pool's.
	e.startScheduler()
	e.wantNoOps("the first resync of a restarted agent", e.mustResync(nb...))
	e.wantDerived(map[string]string{
		natplugin.GlobalInterfaceKey("out1"): "CONFIGURED", natplugin.GlobalInterfaceKey("in1"): "CONFIGURED",
		natplugin.GlobalInterfaceKey("in2"): "CONFIGURED", natplugin.GlobalAddressKey("10.40.0.1", false): "CONFIGURED",
		natplugin.GlobalAddressKey("10.40.0.2", true): "CONFIGURED",
	})

	// Drift: a feature and an address taken off behind the agent's back,
	// a feature added to an interface of the list.
	e.call("drift", func(ctx context.Context, c nat.RPCService) error {
		if _, err := c.Nat44InterfaceAddDelFeature(ctx, &nat.Nat44InterfaceAddDelFeature{
			IsAdd: false, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: interface_types.InterfaceIndex(e.swIfIndex("in2"))}); err != nil {
			return err
		}
		if _, err := c.Nat44InterfaceAddDelFeature(ctx, &nat.Nat44InterfaceAddDelFeature{
			IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: interface_types.InterfaceIndex(e.swIfIndex("in2"))}); err != nil {
			return err
		}
		return addrs(ctx, c, false, "10.40.0.2", 0, true)
	})
	seq := e.mustResync(nb...)
	wantList(t, "resync after drift", e.executed(seq), []string{
		"CREATE " + natplugin.GlobalAddressKey("10.40.0.2", true) + " [DERIVED]",
		"UPDATE " + natplugin.GlobalInterfaceKey("in2") + " [DERIVED]",
	})
	wantList(t, "features after the repair", e.natInterfaces(), features(sw("out1")+":output", sw("in1")+":in+out", sw("in2")+":in", sw("ext1")+":out"))
	wantList(t, "addresses after the repair", e.natAddresses(), []string{"10.40.0.1 vrf 0", "10.40.0.2 vrf 0 twice", "10.41.0.1 vrf 0", "10.41.0.2 vrf 0"})

	// A change of the lists changes only the entries that change: in1
	// inside only, in2 gone, an address added, the other's VRF changed.
	changed := &vppnat.Nat44Global{
		Forwarding:    true,
		NatInterfaces: []*vppnat.Nat44Global_Interface{listIf("in1", true, false), listIf("out1", false, true)},
		AddressPool: []*vppnat.Nat44Global_Address{
			{Address: "10.40.0.1", VrfId: 5}, {Address: "10.40.0.2", TwiceNat: true}, {Address: "10.40.0.3"},
		},
	}
	nb[4] = globalWith(changed)
	seq = e.mustCommit(nb[4])
	// (The global value's own UPDATE reads VPP's settings and finds
	// nothing to change.)
	wantList(t, "the lists changed", e.executed(seq), []string{
		"CREATE " + natplugin.GlobalAddressKey("10.40.0.3", false) + " [DERIVED]",
		"DELETE " + natplugin.GlobalInterfaceKey("in2") + " [DERIVED]",
		"UPDATE " + natplugin.GlobalAddressKey("10.40.0.1", false) + " [DERIVED]",
		"UPDATE " + natplugin.GlobalInterfaceKey("in1") + " [DERIVED]",
		"UPDATE " + natplugin.GlobalKey + " []",
	})
	wantList(t, "features after the change", e.natInterfaces(), features(sw("out1")+":output", sw("in1")+":in", sw("ext1")+":out"))
	wantList(t, "addresses after the change", e.natAddresses(), []string{"10.40.0.1 vrf 5", "10.40.0.2 vrf 0 twice", "10.40.0.3 vrf 0", "10.41.0.1 vrf 0", "10.41.0.2 vrf 0"})
	if details := e.status(natplugin.GlobalKey).GetDetails(); len(details) != 0 {
		t.Errorf("details %q without virtual_reassembly", details)
	}
	e.wantNoOps("an in-sync resync after the change", e.mustResync(nb...))

	// A pool overlapping an address of the list fails, naming it.
	over := pool(&vppnat.Nat44AddressPool{Name: "over", FirstIp: "10.40.0.3", LastIp: "10.40.0.4"})
	if _, err := e.commit(over); err == nil || !strings.Contains(err.Error(), natplugin.GlobalAddressKey("10.40.0.3", false)) {
		t.Errorf("a pool overlapping an address of the list: %v, want an error naming the address", err)
	}
	e.mustCommit(del(over.key))

	// Lists emptied: the features and addresses go, NAT44 stays.
	seq = e.mustCommit(global(true))
	if n := len(e.executed(seq)); n != 6 {
		t.Errorf("the lists emptied: executed %q, want 5 deletes and the global's update", e.executed(seq))
	}
	wantList(t, "features without the lists", e.natInterfaces(), []string{sw("ext1") + ":out"})
	wantList(t, "addresses without the lists", e.natAddresses(), []string{"10.41.0.1 vrf 0", "10.41.0.2 vrf 0"})
}

// One interface in the global settings' nat_interfaces and in a
// Nat44Interface value: the one that has it keeps it, the other is
// INVALID, its error naming both keys; it is applied once the holder
// goes. When both come together (an agent restart) the Nat44Interface
// gets it.
func TestGlobalListConflict(t *testing.T) {
	e := newEnv(t)
	g := globalWith(&vppnat.Nat44Global{NatInterfaces: []*vppnat.Nat44Global_Interface{listIf("if1", true, false), listIf("if2", true, false)}})
	natIfKey := models.VPPNat44Interface.KeyPrefix + "if1"
	e.mustCommit(iface("if1"), iface("if2"), g)
	sw1, sw2 := itoa(e.swIfIndex("if1")), itoa(e.swIfIndex("if2"))
	both := []string{sw1 + ":in", sw2 + ":in"}
	slices.Sort(both)
	wantList(t, "features", e.natInterfaces(), both)

	out := natIf(&vppnat.Nat44Interface{Name: "if1", NatOutside: true})
	if _, err := e.commit(out); err == nil {
		t.Error("no error for the Nat44Interface of an interface of nat_interfaces")
	}
	st := e.status(natIfKey)
	if st.GetState() != api.ValueStateInvalid || !strings.Contains(st.GetError(), natplugin.GlobalInterfaceKey("if1")) {
		t.Errorf("%s: %v %q, want INVALID naming %s", natIfKey, st.GetState(), st.GetError(), natplugin.GlobalInterfaceKey("if1"))
	}
	wantList(t, "features with the refused value", e.natInterfaces(), both)
	nb := []kv{iface("if1"), iface("if2"), g, out}
	e.wantNoOps("an in-sync resync with the conflict", e.mustResync(nb...))
	wantList(t, "features after the resync", e.natInterfaces(), both)

	// A restart: both come together, the Nat44Interface gets the
	// interface (the first key).
	e.startScheduler()
	seq, err := e.resync(api.FullResync, nb...)
	if err == nil || !strings.Contains(err.Error(), natplugin.GlobalInterfaceKey("if1")) {
		t.Errorf("the first resync after a restart: %v, want the refusal of %s", err, natplugin.GlobalInterfaceKey("if1"))
	}
	wantList(t, "the first resync after a restart", e.executed(seq), []string{"UPDATE " + natIfKey + " []"})
	e.wantState(natIfKey, api.ValueStateConfigured)
	e.wantDerived(map[string]string{natplugin.GlobalInterfaceKey("if1"): "INVALID", natplugin.GlobalInterfaceKey("if2"): "CONFIGURED"})
	for _, d := range e.s.GetValueStatus(natplugin.GlobalKey).GetDerivedValues() {
		if d.GetKey() == natplugin.GlobalInterfaceKey("if1") && !strings.Contains(d.GetError(), natIfKey) {
			t.Errorf("%s: error %q does not name %s", d.GetKey(), d.GetError(), natIfKey)
		}
	}
	both = []string{sw1 + ":out", sw2 + ":in"}
	slices.Sort(both)
	wantList(t, "features after the restart", e.natInterfaces(), both)
	seq, _ = e.resync(api.FullResync, nb...)
	e.wantNoOps("an in-sync resync", seq)

	// The holder goes: the list's entry is applied.
	seq = e.mustCommit(del(natIfKey))
	wantList(t, "the Nat44Interface deleted", e.executed(seq), []string{
		"DELETE " + natIfKey + " []", "CREATE " + natplugin.GlobalInterfaceKey("if1") + " [DERIVED FIXED]",
	})
	both = []string{sw1 + ":in", sw2 + ":in"}
	slices.Sort(both)
	wantList(t, "features of the list", e.natInterfaces(), both)
}

// The original agent's NAT example (examples/kvscheduler/nat of
// ligato/vpp-agent: the global settings with the deprecated lists and
// virtual reassembly, three DNat44 values), its values written as our
// config document (testdata/original-nat-example.yaml; loopbacks stand in
// for its TAP interfaces), decode and apply: VPP has what the example
// asks for, and an in-sync resync executes nothing.
func TestOriginalNATExample(t *testing.T) {
	e := newEnv(t)
	doc, err := os.ReadFile(filepath.Join("testdata", "original-nat-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	items, err := models.Default.ParseConfig(doc)
	if err != nil {
		t.Fatalf("decoding the example: %v", err)
	}
	var kvs []kv
	for _, it := range items {
		kvs = append(kvs, kv{it.Key, it.Value})
	}
	e.mustCommit(kvs...)
	// The interface stand-in makes bare loopbacks: the example's
	// addresses are given here.
	for _, it := range items {
		if v, ok := it.Value.(*vppif.Interface); ok {
			for _, a := range v.GetIpAddresses() {
				e.addAddress(e.swIfIndex(v.GetName()), a)
			}
		}
	}
	for _, x := range kvs {
		e.wantState(x.key, api.ValueStateConfigured)
	}
	for _, d := range e.s.GetValueStatus(natplugin.GlobalKey).GetDerivedValues() {
		if d.GetState() != api.ValueStateConfigured {
			t.Errorf("%s: %v %s", d.GetKey(), d.GetState(), d.GetError())
		}
	}
	sw := func(name string) string { return itoa(e.swIfIndex(name)) }
	features := []string{sw("vpp-tap-host") + ":output", sw("vpp-tap-client") + ":in+out", sw("vpp-tap-server1") + ":in", sw("vpp-tap-server2") + ":in"}
	slices.Sort(features)
	wantList(t, "features", e.natInterfaces(), features)
	wantList(t, "addresses", e.natAddresses(), []string{"192.168.13.100 vrf 0", "192.168.13.200 vrf 0 twice"})
	if !e.forwarding() {
		t.Error("forwarding not set")
	}
	s1, s2 := sw("vpp-tap-server1"), sw("vpp-tap-server2")
	wantList(t, "static mappings", e.staticMappings(), []string{
		"external-interfaces: 6 10.11.2.1:3333 -> 10.11.2.2:4444 NAT_IS_OUT2IN_ONLY",
		"external-interfaces: 6 10.11.3.1:3333 -> 10.11.3.2:4444 NAT_IS_OUT2IN_ONLY",
		"external-interfaces: 6 if" + s1 + ":3333 -> 10.11.2.2:4444",
		"external-interfaces: 6 if" + s2 + ":3333 -> 10.11.3.2:4444",
		"tcp-service: 6 10.36.10.1:80 -> lb 10.11.2.2:8080/1 10.11.3.2:8081/2 NAT_IS_OUT2IN_ONLY",
		"tcp-service: 6 10.36.10.2:80 -> 10.11.2.2:8080 NAT_IS_OUT2IN_ONLY",
		"tcp-service: 6 10.36.10.3:80 -> 10.11.3.2:8081 NAT_IS_OUT2IN_ONLY",
		"udp-service: 17 10.36.10.10:90 -> lb 10.11.2.2:9090/1 10.11.3.2:9091/2 NAT_IS_OUT2IN_ONLY",
		"udp-service: 17 10.36.10.11:90 -> 10.11.2.2:9090 NAT_IS_OUT2IN_ONLY",
		"udp-service: 17 10.36.10.12:90 -> 10.11.3.2:9091 NAT_IS_OUT2IN_ONLY",
	})
	client := sw("vpp-tap-client")
	wantList(t, "identity mappings", e.identityMappings(), []string{
		"id-dnat: 6 10.11.1.1:7777 vrf 0",
		"id-dnat: 6 192.168.13.200:7777 vrf 0",
		"id-dnat: 6 if" + client + ":7777 vrf 0",
	})
	e.wantNoOps("an in-sync resync", e.mustResync(kvs...))
	e.startScheduler()
	e.wantNoOps("the first resync of a restarted agent", e.mustResync(kvs...))
}

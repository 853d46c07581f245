package natplugin_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	nat "go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/natplugin"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

func global(forwarding bool) kv {
	return kv{natplugin.GlobalKey, &vppnat.Nat44Global{Forwarding: forwarding}}
}

func natIf(v *vppnat.Nat44Interface) kv {
	return kv{models.VPPNat44Interface.KeyPrefix + v.GetName(), v}
}

func pool(v *vppnat.Nat44AddressPool) kv {
	key, err := models.VPPNat44AddressPool.Key(v)
	if err != nil {
		panic(err)
	}
	return kv{key, v}
}

func dnat(v *vppnat.DNat44) kv { return kv{dnatKey(v.GetLabel()), v} }

func dnatKey(label string) string { return models.VPPDNat44.KeyPrefix + label }

// wantInvalid fails the test unless key is INVALID with an error naming
// field.
func (e *env) wantInvalid(key, field string) {
	e.t.Helper()
	st := e.status(key)
	if st.GetState() != api.ValueStateInvalid {
		e.t.Errorf("%s: %v, want INVALID", key, st.GetState())
		return
	}
	if !strings.Contains(st.GetError(), field) {
		e.t.Errorf("%s: error %q does not name %s", key, st.GetError(), field)
	}
}

func TestGlobal(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(global(true))
	e.wantState(natplugin.GlobalKey, api.ValueStateConfigured)
	if !e.natEnabled() || !e.forwarding() {
		t.Fatalf("after create: enabled %v forwarding %v, want both", e.natEnabled(), e.forwarding())
	}

	seq := e.mustCommit(global(false))
	wantList(t, "update", e.executed(seq), []string{"UPDATE " + natplugin.GlobalKey + " []"})
	if !e.natEnabled() || e.forwarding() {
		t.Errorf("after update: enabled %v forwarding %v, want enabled without forwarding", e.natEnabled(), e.forwarding())
	}
	e.wantNoOps("an in-sync resync", e.mustResync(global(false)))

	// Drift: forwarding set behind the agent's back, then NAT44 disabled.
	e.call("forwarding", func(ctx context.Context, c nat.RPCService) error {
		_, err := c.Nat44ForwardingEnableDisable(ctx, &nat.Nat44ForwardingEnableDisable{Enable: true})
		return err
	})
	seq = e.mustResync(global(false))
	wantList(t, "resync after forwarding changed", e.executed(seq), []string{"UPDATE " + natplugin.GlobalKey + " []"})
	if e.forwarding() {
		t.Error("forwarding not repaired")
	}
	e.call("disable", func(ctx context.Context, c nat.RPCService) error {
		_, err := c.Nat44EdPluginEnableDisable(ctx, &nat.Nat44EdPluginEnableDisable{Enable: false})
		return err
	})
	seq = e.mustResync(global(true))
	wantList(t, "resync after NAT44 was disabled", e.executed(seq), []string{"CREATE " + natplugin.GlobalKey + " []"})
	if !e.natEnabled() || !e.forwarding() {
		t.Error("NAT44 not repaired")
	}

	// An invalid value is not applied: the valid one before it goes.
	if _, err := e.commit(kv{natplugin.GlobalKey, &vppnat.Nat44Global{EndpointIndependent: true}}); err == nil {
		t.Error("no error for an endpoint-independent global")
	}
	e.wantInvalid(natplugin.GlobalKey, "endpoint_independent")
	if e.natEnabled() {
		t.Error("NAT44 still enabled after its value became invalid")
	}
	e.mustCommit(global(false))
	seq = e.mustCommit(del(natplugin.GlobalKey))
	wantList(t, "delete", e.executed(seq), []string{"DELETE " + natplugin.GlobalKey + " []"})
	if e.natEnabled() {
		t.Error("NAT44 enabled after the delete")
	}
}

// NAT44 enabled by someone else is used by the agent's values, and not
// disabled by a resync without the global settings; nor are its settings
// someone else made.
func TestGlobalOfSomeoneElse(t *testing.T) {
	e := newEnv(t)
	e.call("enable", func(ctx context.Context, c nat.RPCService) error {
		_, err := c.Nat44EdPluginEnableDisable(ctx, &nat.Nat44EdPluginEnableDisable{Enable: true})
		return err
	})
	e.mustCommit(iface("lan"))
	in := natIf(&vppnat.Nat44Interface{Name: "lan", NatInside: true})
	e.mustResync(iface("lan"), in)
	e.wantState(natplugin.GlobalKey, api.ValueStateObtained)
	e.wantState(in.key, api.ValueStateConfigured)
	wantList(t, "features", e.natInterfaces(), []string{itoa(e.swIfIndex("lan")) + ":in"})
	e.mustResync(iface("lan"))
	if !e.natEnabled() {
		t.Error("a resync disabled NAT44, which the agent did not enable")
	}
	wantList(t, "features after the resync without them", e.natInterfaces(), nil)
}

func TestInterfaces(t *testing.T) {
	e := newEnv(t)
	in := natIf(&vppnat.Nat44Interface{Name: "in1", NatInside: true})
	out := natIf(&vppnat.Nat44Interface{Name: "out1", NatOutside: true, OutputFeature: true})

	// Without the global settings they wait.
	e.mustCommit(iface("in1"), iface("out1"), in, out)
	e.wantState(in.key, api.ValueStatePending)
	e.wantState(out.key, api.ValueStatePending)
	e.mustCommit(global(false))
	e.wantState(in.key, api.ValueStateConfigured)
	e.wantState(out.key, api.ValueStateConfigured)
	in1, out1 := itoa(e.swIfIndex("in1")), itoa(e.swIfIndex("out1"))
	wantList(t, "features", e.natInterfaces(), []string{in1 + ":in", out1 + ":output"})

	all := []kv{global(false), iface("in1"), iface("out1")}
	steps := []struct {
		what     string
		in, out  *vppnat.Nat44Interface
		features []string
	}{
		{"output to outside", in.value.(*vppnat.Nat44Interface), &vppnat.Nat44Interface{Name: "out1", NatOutside: true},
			[]string{in1 + ":in", out1 + ":out"}},
		{"inside to both", &vppnat.Nat44Interface{Name: "in1", NatInside: true, NatOutside: true}, &vppnat.Nat44Interface{Name: "out1", NatOutside: true},
			[]string{in1 + ":in+out", out1 + ":out"}},
		{"both to outside, outside to inside", &vppnat.Nat44Interface{Name: "in1", NatOutside: true}, &vppnat.Nat44Interface{Name: "out1", NatInside: true},
			[]string{in1 + ":out", out1 + ":in"}},
		{"to output (with nat_inside, as the original allowed)", &vppnat.Nat44Interface{Name: "in1", NatInside: true, OutputFeature: true}, &vppnat.Nat44Interface{Name: "out1"},
			[]string{in1 + ":output"}},
	}
	for _, s := range steps {
		seq := e.mustCommit(natIf(s.in), natIf(s.out))
		if ops := e.executed(seq); len(ops) == 0 {
			t.Errorf("%s: nothing executed", s.what)
		}
		wantList(t, s.what, e.natInterfaces(), s.features)
		e.wantNoOps(s.what+": an in-sync resync", e.mustResync(append(all, natIf(s.in), natIf(s.out))...))
	}
	last := steps[len(steps)-1]

	// Drift: the output feature taken off, and a feature added to an
	// interface of the agent's that has no NAT value.
	e.mustCommit(iface("other"))
	e.call("drift", func(ctx context.Context, c nat.RPCService) error {
		if _, err := c.Nat44EdAddDelOutputInterface(ctx, &nat.Nat44EdAddDelOutputInterface{SwIfIndex: interface_types.InterfaceIndex(e.swIfIndex("in1"))}); err != nil {
			return err
		}
		_, err := c.Nat44InterfaceAddDelFeature(ctx, &nat.Nat44InterfaceAddDelFeature{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(e.swIfIndex("other"))})
		return err
	})
	seq := e.mustResync(append(all, iface("other"), natIf(last.in), natIf(last.out))...)
	wantList(t, "resync after drift", e.executed(seq), []string{
		"DELETE " + models.VPPNat44Interface.KeyPrefix + "other []",
		"CREATE " + models.VPPNat44Interface.KeyPrefix + "in1 []",
	})
	wantList(t, "features after the resync", e.natInterfaces(), last.features)

	// A feature on an interface that is not the agent's is left alone.
	var foreign uint32
	e.call("a foreign interface", func(ctx context.Context, c nat.RPCService) error {
		foreign = e.foreignLoopback(ctx)
		_, err := c.Nat44InterfaceAddDelFeature(ctx, &nat.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: interface_types.InterfaceIndex(foreign)})
		return err
	})
	e.wantNoOps("a resync with a foreign NAT interface", e.mustResync(append(all, iface("other"), natIf(last.in), natIf(last.out))...))
	wantList(t, "features", e.natInterfaces(), append(slices.Clone(last.features), itoa(foreign)+":in"))
	e.deleteForeignLoopback(foreign)

	// Invalid values name the field.
	if _, err := e.commit(natIf(&vppnat.Nat44Interface{Name: "in1", OutputFeature: true})); err == nil {
		t.Error("no error for an output feature alone")
	}
	e.wantInvalid(models.VPPNat44Interface.KeyPrefix+"in1", "output_feature")
	wantList(t, "features after the invalid value", e.natInterfaces(), nil)

	// Deleting the interface deletes its NAT value first.
	e.mustCommit(natIf(&vppnat.Nat44Interface{Name: "in1", NatInside: true}))
	seq = e.mustCommit(del(iface("in1").key))
	wantList(t, "deleting the interface", e.executed(seq), []string{
		"DELETE " + models.VPPNat44Interface.KeyPrefix + "in1 [IS-PENDING]", "DELETE " + iface("in1").key + " []",
	})
	e.wantState(models.VPPNat44Interface.KeyPrefix+"in1", api.ValueStatePending)
	wantList(t, "features after deleting the interface", e.natInterfaces(), nil)
}

func TestAddressPools(t *testing.T) {
	e := newEnv(t)
	p1 := &vppnat.Nat44AddressPool{Name: "p1", FirstIp: "10.20.0.1", LastIp: "10.20.0.4"}
	p2 := &vppnat.Nat44AddressPool{FirstIp: "10.20.1.1", VrfId: ^uint32(0), TwiceNat: true}
	e.mustCommit(global(false), pool(p1), pool(p2))
	e.wantState(pool(p1).key, api.ValueStateConfigured)
	e.wantState(pool(p2).key, api.ValueStateConfigured)
	if k := pool(p2).key; k != "config/vpp/nat/v2/nat44-pool/vrf/4294967295/address/10.20.1.1" {
		t.Errorf("key of an unnamed pool: %s", k)
	}
	wantList(t, "addresses", e.natAddresses(), []string{"10.20.0.1 vrf 0", "10.20.0.2 vrf 0", "10.20.0.3 vrf 0", "10.20.0.4 vrf 0", "10.20.1.1 vrf -1 twice"})

	// Update in place: exactly the addresses that change.
	p1b := &vppnat.Nat44AddressPool{Name: "p1", FirstIp: "10.20.0.3", LastIp: "10.20.0.6"}
	e.resetCalls()
	seq := e.mustCommit(pool(p1b))
	wantList(t, "update", e.executed(seq), []string{"UPDATE " + pool(p1).key + " []"})
	if w, ok := e.writes(); ok {
		wantList(t, "VPP writes of the update", w, []string{"nat44_add_del_address_range", "nat44_add_del_address_range"})
	}
	wantList(t, "addresses after the update", e.natAddresses(), []string{"10.20.0.3 vrf 0", "10.20.0.4 vrf 0", "10.20.0.5 vrf 0", "10.20.0.6 vrf 0", "10.20.1.1 vrf -1 twice"})
	nb := []kv{global(false), pool(p1b), pool(p2)}
	e.wantNoOps("an in-sync resync", e.mustResync(nb...))

	// The agent restarting on an in-sync VPP does nothing.
	e.startScheduler()
	e.wantNoOps("a resync after a restart", e.mustResync(nb...))

	// Drift: an address deleted, another moved to a VRF; an address of
	// someone else's is left alone.
	e.call("drift", func(ctx context.Context, c nat.RPCService) error {
		if err := addrs(ctx, c, false, "10.20.0.4", 0, false); err != nil {
			return err
		}
		if err := addrs(ctx, c, false, "10.20.0.6", 0, false); err != nil {
			return err
		}
		if err := addrs(ctx, c, true, "10.20.0.6", 5, false); err != nil {
			return err
		}
		return addrs(ctx, c, true, "10.20.9.9", 0, false)
	})
	seq = e.mustResync(nb...)
	wantList(t, "resync after drift", e.executed(seq), []string{"CREATE " + pool(p1).key + " []"})
	wantList(t, "addresses after the resync", e.natAddresses(), []string{"10.20.0.3 vrf 0", "10.20.0.4 vrf 0", "10.20.0.5 vrf 0", "10.20.0.6 vrf 0", "10.20.1.1 vrf -1 twice", "10.20.9.9 vrf 0"})

	// A pool overlapping an applied one fails, naming it; it is applied
	// once that one is gone.
	p3 := &vppnat.Nat44AddressPool{Name: "p3", FirstIp: "10.20.0.6", LastIp: "10.20.0.7"}
	if _, err := e.commit(pool(p3)); err == nil {
		t.Error("no error for an overlapping pool")
	}
	if st := e.status(pool(p3).key); st.GetState() == api.ValueStateConfigured || !strings.Contains(st.GetError(), "pool p1") {
		t.Errorf("overlapping pool: %v %q, want a failure naming pool p1", st.GetState(), st.GetError())
	}
	e.mustCommit(del(pool(p1).key))
	e.mustResync(global(false), pool(p2), pool(p3))
	e.wantState(pool(p3).key, api.ValueStateConfigured)
	wantList(t, "addresses", e.natAddresses(), []string{"10.20.0.6 vrf 0", "10.20.0.7 vrf 0", "10.20.1.1 vrf -1 twice", "10.20.9.9 vrf 0"})

	// A full resync without a pool deletes it.
	e.mustResync(global(false), pool(p3))
	wantList(t, "addresses after a resync without p2", e.natAddresses(), []string{"10.20.0.6 vrf 0", "10.20.0.7 vrf 0", "10.20.9.9 vrf 0"})

	if _, err := e.commit(kv{pool(p3).key, &vppnat.Nat44AddressPool{Name: "p3", FirstIp: "10.20.0.7", LastIp: "10.20.0.6"}}); err == nil {
		t.Error("no error for a reversed range")
	}
	e.wantInvalid(pool(p3).key, "last_ip")
	wantList(t, "addresses after the invalid value", e.natAddresses(), []string{"10.20.9.9 vrf 0"})
}

// addrs adds or deletes one NAT address.
func addrs(ctx context.Context, c nat.RPCService, add bool, a string, vrf uint32, twice bool) error {
	ip, _ := ip_types.ParseIP4Address(a)
	var f nat_types.NatConfigFlags
	if twice {
		f = nat_types.NAT_IS_TWICE_NAT
	}
	_, err := c.Nat44AddDelAddressRange(ctx, &nat.Nat44AddDelAddressRange{IsAdd: add, FirstIPAddress: ip, LastIPAddress: ip, VrfID: vrf, Flags: f})
	return err
}

func local(ip string, port uint32) *vppnat.DNat44_StaticMapping_LocalIP {
	return &vppnat.DNat44_StaticMapping_LocalIP{LocalIp: ip, LocalPort: port}
}

// webDNat is a DNat44 with every kind of mapping: plain, load-balanced,
// address only, on an interface with self twice-NAT, twice-NAT with a
// pool address; identity mappings of an address and of an interface.
func webDNat() *vppnat.DNat44 {
	return &vppnat.DNat44{Label: "web",
		StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "192.0.2.1", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.10", 8080)}},
			{ExternalIp: "192.0.2.2", ExternalPort: 53, Protocol: vppnat.DNat44_UDP, SessionAffinity: 30,
				LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{
					{LocalIp: "10.0.0.11", LocalPort: 53, Probability: 1}, {LocalIp: "10.0.0.12", LocalPort: 53, Probability: 2, VrfId: 0},
				}},
			{ExternalIp: "192.0.2.3", LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.13", 0)}},
			{ExternalInterface: "ext1", ExternalPort: 2222, TwiceNat: vppnat.DNat44_StaticMapping_SELF,
				LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.14", 22)}},
			{ExternalIp: "192.0.2.5", ExternalPort: 443, TwiceNat: vppnat.DNat44_StaticMapping_ENABLED, TwiceNatPoolIp: "192.0.2.100",
				LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.15", 443)}},
			// As the mapping on ext1 but on an address: not taken for the
			// mapping VPP makes of ext1's address.
			{ExternalIp: "192.0.2.6", ExternalPort: 2222, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.14", 22)}},
		},
		IdMappings: []*vppnat.DNat44_IdentityMapping{
			{IpAddress: "192.0.2.9", Port: 53, Protocol: vppnat.DNat44_UDP},
			{Interface: "ext1", Port: 7777},
			{IpAddress: "192.0.2.50", Port: 7777}, // likewise
		},
	}
}

func TestDNat44(t *testing.T) {
	e := newEnv(t)
	web := webDNat()
	ssh := &vppnat.DNat44{Label: "ssh", StMappings: []*vppnat.DNat44_StaticMapping{
		{ExternalIp: "192.0.2.1", ExternalPort: 22, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.20", 22)}},
	}}
	nb := []kv{global(false), iface("ext1"), dnat(web), dnat(ssh)}
	e.mustCommit(nb...)
	ext1 := itoa(e.swIfIndex("ext1"))
	for _, d := range []*vppnat.DNat44{web, ssh} {
		e.wantState(dnatKey(d.Label), api.ValueStateConfigured)
		for _, m := range d.StMappings {
			e.wantState(natplugin.StaticMappingKey(d.Label, m), api.ValueStateConfigured)
		}
		for _, m := range d.IdMappings {
			e.wantState(natplugin.IdentityMappingKey(d.Label, m), api.ValueStateConfigured)
		}
	}
	wantStatics := []string{
		"ssh: 6 192.0.2.1:22 -> 10.0.0.20:22 NAT_IS_OUT2IN_ONLY",
		"web: 0 192.0.2.3:0 -> 10.0.0.13:0 NAT_IS_OUT2IN_ONLY|NAT_IS_ADDR_ONLY",
		"web: 17 192.0.2.2:53 -> lb 10.0.0.11:53/1 10.0.0.12:53/2 NAT_IS_OUT2IN_ONLY",
		"web: 6 192.0.2.1:80 -> 10.0.0.10:8080 NAT_IS_OUT2IN_ONLY",
		"web: 6 192.0.2.5:443 -> 10.0.0.15:443 NAT_IS_TWICE_NAT|NAT_IS_OUT2IN_ONLY",
		"web: 6 192.0.2.6:2222 -> 10.0.0.14:22 NAT_IS_OUT2IN_ONLY",
		"web: 6 if" + ext1 + ":2222 -> 10.0.0.14:22",
	}
	wantList(t, "static mappings", e.staticMappings(), wantStatics)
	wantIdentities := []string{"web: 17 192.0.2.9:53 vrf 0", "web: 6 192.0.2.50:7777 vrf 0", "web: 6 if" + ext1 + ":7777 vrf 0"}
	wantList(t, "identity mappings", e.identityMappings(), wantIdentities)
	e.wantNoOps("an in-sync resync", e.mustResync(nb...))

	// The interface gets an address: VPP maps it too; still in sync, also
	// for an agent that restarts.
	e.addAddress(e.swIfIndex("ext1"), "10.60.0.1/24")
	e.wantNoOps("a resync once the interface has an address", e.mustResync(nb...))
	e.startScheduler()
	e.wantNoOps("a resync after a restart", e.mustResync(nb...))

	// An update changes only the mappings that change.
	web2 := webDNat()
	web2.StMappings[0].LocalIps[0].LocalPort = 8081 // changed
	web2.StMappings = slices.Delete(web2.StMappings, 2, 3)
	web2.IdMappings = append(web2.IdMappings, &vppnat.DNat44_IdentityMapping{IpAddress: "192.0.2.9", Port: 53, Protocol: vppnat.DNat44_UDP, VrfId: 3}) // added
	seq := e.mustCommit(dnat(web2))
	st1, st3 := natplugin.StaticMappingKey("web", web.StMappings[0]), natplugin.StaticMappingKey("web", web.StMappings[2])
	id3 := natplugin.IdentityMappingKey("web", web2.IdMappings[3])
	got := e.executed(seq)
	slices.Sort(got)
	want := []string{
		"CREATE " + id3 + " [DERIVED]", "CREATE " + st1 + " [DERIVED RECREATE]", "DELETE " + st1 + " [DERIVED RECREATE]", "DELETE " + st3 + " [DERIVED]",
		"UPDATE " + dnatKey("web") + " []",
	}
	slices.Sort(want)
	wantList(t, "the update", got, want)
	nb = []kv{global(false), iface("ext1"), dnat(web2), dnat(ssh)}
	e.wantNoOps("an in-sync resync after the update", e.mustResync(nb...))

	// Drift: the load-balanced mapping deleted; a mapping tagged web added;
	// a mapping of someone else's (untagged) added.
	e.call("drift", func(ctx context.Context, c nat.RPCService) error {
		a, _ := ip_types.ParseIP4Address("192.0.2.2")
		if _, err := c.Nat44AddDelLbStaticMapping(ctx, &nat.Nat44AddDelLbStaticMapping{ExternalAddr: a, ExternalPort: 53, Protocol: 17}); err != nil {
			return err
		}
		for _, tag := range []string{"web", ""} {
			ext, _ := ip_types.ParseIP4Address("192.0.2.77")
			if tag == "" {
				ext, _ = ip_types.ParseIP4Address("192.0.2.78")
			}
			l, _ := ip_types.ParseIP4Address("10.0.0.77")
			if _, err := c.Nat44AddDelStaticMappingV2(ctx, &nat.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY,
				ExternalSwIfIndex: interface_types.InterfaceIndex(^uint32(0)), ExternalIPAddress: ext, LocalIPAddress: l,
				Protocol: 6, ExternalPort: 77, LocalPort: 77, Tag: tag}); err != nil {
				return err
			}
		}
		return nil
	})
	seq = e.mustResync(nb...)
	got = e.executed(seq)
	slices.Sort(got)
	lbKey := natplugin.StaticMappingKey("web", web.StMappings[1])
	extra := natplugin.StaticMappingKey("web", &vppnat.DNat44_StaticMapping{ExternalIp: "192.0.2.77", ExternalPort: 77})
	wantList(t, "resync after drift", got, []string{"CREATE " + lbKey + " [DERIVED]", "DELETE " + extra + " [DERIVED]", "UPDATE " + dnatKey("web") + " []"})
	statics := e.staticMappings()
	if !slices.Contains(statics, ": 6 192.0.2.78:77 -> 10.0.0.77:77 NAT_IS_OUT2IN_ONLY") ||
		!slices.ContainsFunc(statics, func(s string) bool { return strings.HasPrefix(s, "web: 17 192.0.2.2:53 -> lb") }) ||
		slices.ContainsFunc(statics, func(s string) bool { return strings.Contains(s, "192.0.2.77") }) {
		t.Errorf("static mappings after the resync: %q", statics)
	}

	// A second DNat44 on an external endpoint another holds waits for it.
	dup := &vppnat.DNat44{Label: "dup", StMappings: []*vppnat.DNat44_StaticMapping{
		{ExternalIp: "192.0.2.1", ExternalPort: 22, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.30", 22)}},
	}}
	e.mustCommit(dnat(dup))
	dupKey := natplugin.StaticMappingKey("dup", dup.StMappings[0])
	if st := e.status(dupKey); st.GetState() != api.ValueStatePending || !strings.Contains(strings.Join(st.GetDetails(), " "), natplugin.StaticMappingKey("ssh", ssh.StMappings[0])) {
		t.Errorf("mapping on a held endpoint: %v %q, want PENDING naming the holder", st.GetState(), st.GetDetails())
	}
	e.mustCommit(del(dnatKey("ssh")))
	e.wantState(dupKey, api.ValueStateConfigured)

	// Invalid values name the field; deleting a DNat44 deletes its
	// mappings.
	bad := &vppnat.DNat44{Label: "dup", StMappings: []*vppnat.DNat44_StaticMapping{
		{ExternalIp: "192.0.2.1", ExternalPort: 22, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.30", 0)}},
	}}
	if _, err := e.commit(dnat(bad)); err == nil {
		t.Error("no error for a mapping without its local port")
	}
	e.wantInvalid(dnatKey("dup"), "st_mappings[0].local_ips[0].local_port")
	e.mustCommit(del(dnatKey("web")))
	wantList(t, "static mappings after the deletes", e.staticMappings(), []string{": 6 192.0.2.78:77 -> 10.0.0.77:77 NAT_IS_OUT2IN_ONLY"})
	wantList(t, "identity mappings after the deletes", e.identityMappings(), nil)
}

// The original agent's documented values (DNAT44 example of its
// documentation: a load-balanced mapping written with external_interface
// and external_ip, and an identity mapping) decode and apply.
func TestOriginalExamples(t *testing.T) {
	e := newEnv(t)
	values := []struct{ key, json string }{
		{"config/vpp/nat/v2/nat44-global", `{"forwarding":true}`},
		{"config/vpp/nat/v2/nat44-interface/if1", `{"name":"if1","nat_outside":true}`},
		{"config/vpp/nat/v2/nat44-interface/if2", `{"name":"if2","nat_inside":true}`},
		{"config/vpp/nat/v2/nat44-pool/vrf/0/address/192.168.0.1-192.168.0.3", `{"first_ip":"192.168.0.1","last_ip":"192.168.0.3"}`},
		{"config/vpp/nat/v2/dnat44/dnat1", `{"label":"dnat1","st_mappings":[{"external_interface":"if1","external_ip":"192.168.0.1",` +
			`"external_port":8989,"local_ips":[{"local_ip":"172.124.0.2","local_port":6500,"probability":40},` +
			`{"local_ip":"172.125.10.5","local_port":2300,"probability":40}],"protocol":"UDP","twice_nat":"ENABLED"}],` +
			`"id_mappings":[{"ip_address":"10.10.0.1","port":2525}]}`},
	}
	kvs := []kv{iface("if1"), iface("if2")}
	for _, v := range values {
		m := models.Default.ModelOfKey(v.key)
		val := m.New()
		if err := models.UnmarshalJSON([]byte(v.json), val); err != nil {
			t.Fatalf("%s: %v", v.key, err)
		}
		kvs = append(kvs, kv{v.key, val})
	}
	e.mustCommit(kvs...)
	for _, x := range kvs {
		e.wantState(x.key, api.ValueStateConfigured)
	}
	wantList(t, "static mappings", e.staticMappings(), []string{
		"dnat1: 17 192.168.0.1:8989 -> lb 172.124.0.2:6500/40 172.125.10.5:2300/40 NAT_IS_TWICE_NAT|NAT_IS_OUT2IN_ONLY",
	})
	wantList(t, "identity mappings", e.identityMappings(), []string{"dnat1: 6 10.10.0.1:2525 vrf 0"})
	wantList(t, "addresses", e.natAddresses(), []string{"192.168.0.1 vrf 0", "192.168.0.2 vrf 0", "192.168.0.3 vrf 0"})
	features := []string{itoa(e.swIfIndex("if1")) + ":out", itoa(e.swIfIndex("if2")) + ":in"}
	slices.Sort(features)
	wantList(t, "features", e.natInterfaces(), features)
	e.wantNoOps("an in-sync resync", e.mustResync(kvs...))
}

// A VPP restart (empty) is repaired by the resync after it, in dependency
// order: NAT44 enabled first.
func TestVPPRestart(t *testing.T) {
	e := newEnv(t)
	if !e.vpp.CanRestart() {
		t.Skip("the user's VPP is not restarted")
	}
	nb := []kv{global(true), iface("ext1"), natIf(&vppnat.Nat44Interface{Name: "ext1", NatOutside: true}),
		pool(&vppnat.Nat44AddressPool{FirstIp: "10.30.0.1", LastIp: "10.30.0.2"}), dnat(webDNat())}
	// What VPP has, with the index of ext1 (it may change with the
	// restart).
	state := func() []string {
		ext1 := itoa(e.swIfIndex("ext1"))
		out := slices.Concat(e.natInterfaces(), e.natAddresses(), e.staticMappings(), e.identityMappings())
		for i, s := range out {
			out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "if"+ext1+":", "ext1:"), ext1+":out", "ext1:out")
		}
		return out
	}
	e.mustCommit(nb...)
	before := state()
	if len(before) != 12 {
		t.Fatalf("before the restart VPP has %q", before)
	}
	e.vpp.Restart()
	if _, err := e.resync(api.FullResync, nb...); err != nil {
		t.Fatalf("resync after the restart: %v", err)
	}
	for _, x := range nb {
		e.wantState(x.key, api.ValueStateConfigured)
	}
	wantList(t, "after the restart", state(), before)
}

// Identity mappings of two DNat44 values on one address, port and protocol
// (in two VRFs) are one VPP mapping with one tag, the first's: the
// Retrieve gives each entry to the DNat44 that expects it, so an in-sync
// resync executes nothing (before, it deleted the second's entry as the
// first's and created it again, every time).
func TestIdentityMappingsOfTwoLabelsOnOneAddress(t *testing.T) {
	e := newEnv(t)
	id := func(label string, vrf uint32) kv {
		return dnat(&vppnat.DNat44{Label: label, IdMappings: []*vppnat.DNat44_IdentityMapping{
			{IpAddress: "10.60.0.1", Port: 22, Protocol: vppnat.DNat44_TCP, VrfId: vrf}}})
	}
	a, b := id("a", 0), id("b", 3)
	nb := []kv{global(false), a, b}
	e.mustCommit(nb...)
	wantList(t, "identity mappings", e.identityMappings(), []string{"a: 6 10.60.0.1:22 vrf 0", "a: 6 10.60.0.1:22 vrf 3"})
	e.wantNoOps("an in-sync resync", e.mustResync(nb...))
	e.startScheduler()
	e.wantNoOps("the first resync of a restarted agent", e.mustResync(nb...))

	seq := e.mustCommit(del(a.key))
	wantList(t, "a deleted", e.executed(seq), []string{
		"DELETE " + dnatKey("a") + " []", "DELETE vpp/nat44/identity-mapping/a/vrf/0/tcp/22/ip/10.60.0.1 [DERIVED]",
	})
	wantList(t, "identity mappings without a", e.identityMappings(), []string{"a: 6 10.60.0.1:22 vrf 3"})
	e.wantNoOps("an in-sync resync without a", e.mustResync(global(false), b))
	e.mustCommit(del(b.key))
	wantList(t, "identity mappings without a and b", e.identityMappings(), nil)
}

// TestMappingOfSomeoneElse: when VPP holds someone else's static mapping
// (another tag) on the external endpoint a DNat44 asks for, VPP refuses
// the add as existing and the read-back finds no mapping of the DNat44's:
// the value fails naming the endpoint, not taken as created, and VPP's
// mapping stays as it was.
func TestMappingOfSomeoneElse(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(global(false))
	someones := "someone: 6 192.0.2.1:80 -> 10.0.0.99:8080 NAT_IS_OUT2IN_ONLY"
	e.call("someone else's mapping", func(ctx context.Context, c nat.RPCService) error {
		ext, _ := ip_types.ParseIP4Address("192.0.2.1")
		loc, _ := ip_types.ParseIP4Address("10.0.0.99")
		_, err := c.Nat44AddDelStaticMappingV2(ctx, &nat.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY,
			ExternalSwIfIndex: interface_types.InterfaceIndex(^uint32(0)), ExternalIPAddress: ext, LocalIPAddress: loc,
			Protocol: 6, ExternalPort: 80, LocalPort: 8080, Tag: "someone"})
		return err
	})
	wantList(t, "static mappings before", e.staticMappings(), []string{someones})
	d := &vppnat.DNat44{Label: "web", StMappings: []*vppnat.DNat44_StaticMapping{
		{ExternalIp: "192.0.2.1", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.10", 8080)}},
	}}
	if _, err := e.commit(global(false), dnat(d)); err == nil {
		t.Fatal("the DNat44 on someone else's endpoint was applied")
	}
	key := natplugin.StaticMappingKey("web", d.StMappings[0])
	if st := e.status(key); st.GetState() == api.ValueStateConfigured ||
		!strings.Contains(st.GetError(), "VPP has a mapping on that external endpoint already") {
		t.Errorf("%s: %s %q, want a failure naming the endpoint VPP has", key, st.GetState(), st.GetError())
	}
	wantList(t, "static mappings after", e.staticMappings(), []string{someones})
}

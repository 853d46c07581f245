package natplugin_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	nat "go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

// TestVPPNATBehaviour checks, against vppsim or the real VPP alike, the
// behaviours of VPP 25.10's nat44-ed handlers that the plugin is built on
// (the vppcalls package doc lists them), so that vppsim cannot drift from
// them unnoticed.
func TestVPPNATBehaviour(t *testing.T) {
	e := newEnv(t)
	conn, err := e.m.Conn(readArea)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, ic := nat.NewServiceClient(conn), interfaces.NewServiceClient(conn)
	var loops []interface_types.InterfaceIndex
	for range 2 {
		r, err := ic.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		if err != nil {
			t.Fatal(err)
		}
		loops = append(loops, r.SwIfIndex)
	}
	lo1, lo2 := loops[0], loops[1]
	const none = interface_types.InterfaceIndex(^uint32(0))
	ip := func(s string) ip_types.IP4Address { a, _ := ip_types.ParseIP4Address(s); return a }
	expect := func(what string, err error, want govppapi.VPPApiError) {
		t.Helper()
		var got govppapi.VPPApiError
		if err != nil && !errors.As(err, &got) {
			t.Errorf("%s: %v, want a VPP error", what, err)
			return
		}
		if got != want {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	feature := func(add bool, sw interface_types.InterfaceIndex, inside bool) error {
		var f nat_types.NatConfigFlags
		if inside {
			f = nat_types.NAT_IS_INSIDE
		}
		_, err := c.Nat44InterfaceAddDelFeature(ctx, &nat.Nat44InterfaceAddDelFeature{IsAdd: add, Flags: f, SwIfIndex: sw})
		return err
	}
	output := func(add bool, sw interface_types.InterfaceIndex) error {
		_, err := c.Nat44EdAddDelOutputInterface(ctx, &nat.Nat44EdAddDelOutputInterface{IsAdd: add, SwIfIndex: sw})
		return err
	}
	addresses := func(add bool, first, last string, vrf uint32, twice bool) error {
		var f nat_types.NatConfigFlags
		if twice {
			f = nat_types.NAT_IS_TWICE_NAT
		}
		_, err := c.Nat44AddDelAddressRange(ctx, &nat.Nat44AddDelAddressRange{IsAdd: add, FirstIPAddress: ip(first), LastIPAddress: ip(last), VrfID: vrf, Flags: f})
		return err
	}
	static := func(add bool, m nat.Nat44AddDelStaticMappingV2) error {
		m.IsAdd = add
		_, err := c.Nat44AddDelStaticMappingV2(ctx, &m)
		return err
	}
	identity := func(add bool, m nat.Nat44AddDelIdentityMapping) error {
		m.IsAdd = add
		_, err := c.Nat44AddDelIdentityMapping(ctx, &m)
		return err
	}
	lb := func(add bool, m nat.Nat44AddDelLbStaticMapping) error {
		m.IsAdd, m.LocalNum = add, uint32(len(m.Locals))
		_, err := c.Nat44AddDelLbStaticMapping(ctx, &m)
		return err
	}
	out2in := nat_types.NAT_IS_OUT2IN_ONLY

	// Disabled: configuration is UNSUPPORTED, dumps are empty.
	expect("a feature while disabled", feature(true, lo1, true), govppapi.UNSUPPORTED)
	expect("an address while disabled", addresses(true, "10.9.0.1", "10.9.0.1", 0, false), govppapi.UNSUPPORTED)
	expect("a mapping while disabled", static(true, nat.Nat44AddDelStaticMappingV2{ExternalSwIfIndex: none, LocalIPAddress: ip("10.1.0.1"), ExternalIPAddress: ip("10.9.0.1")}), govppapi.UNSUPPORTED)
	_, err = c.Nat44EdPluginEnableDisable(ctx, &nat.Nat44EdPluginEnableDisable{Enable: false})
	expect("disabling while disabled", err, govppapi.FEATURE_ALREADY_DISABLED)
	_, err = c.Nat44EdPluginEnableDisable(ctx, &nat.Nat44EdPluginEnableDisable{Enable: true, Flags: nat.NAT44_IS_STATIC_MAPPING_ONLY})
	expect("enabling static-mapping-only", err, govppapi.UNSUPPORTED)
	_, err = c.Nat44EdPluginEnableDisable(ctx, &nat.Nat44EdPluginEnableDisable{Enable: true})
	expect("enabling", err, 0)
	if !e.natEnabled() || e.forwarding() {
		t.Fatalf("after the enable: enabled %v forwarding %v, want enabled, no forwarding", e.natEnabled(), e.forwarding())
	}
	_, err = c.Nat44EdPluginEnableDisable(ctx, &nat.Nat44EdPluginEnableDisable{Enable: true})
	expect("enabling again", err, govppapi.FEATURE_ALREADY_ENABLED)
	_, err = c.Nat44ForwardingEnableDisable(ctx, &nat.Nat44ForwardingEnableDisable{Enable: true})
	expect("forwarding", err, 0)
	if !e.forwarding() {
		t.Error("forwarding not on")
	}

	// Interface features.
	expect("a feature on no interface", feature(true, 999, true), govppapi.INVALID_SW_IF_INDEX)
	expect("inside", feature(true, lo1, true), 0)
	expect("inside again", feature(true, lo1, true), 0)
	expect("deleting outside, inside being the one feature", feature(false, lo1, false), 0)
	wantList(t, "features after deleting outside of an inside interface", e.natInterfaces(), nil)
	expect("deleting a feature of an interface without", feature(false, lo1, true), govppapi.NO_SUCH_ENTRY)
	expect("inside", feature(true, lo1, true), 0)
	expect("outside", feature(true, lo1, false), 0)
	wantList(t, "features", e.natInterfaces(), []string{itoa(lo1) + ":in+out"})
	expect("deleting inside of both", feature(false, lo1, true), 0)
	wantList(t, "features", e.natInterfaces(), []string{itoa(lo1) + ":out"})
	expect("output beside outside", output(true, lo1), govppapi.VALUE_EXIST)
	expect("output", output(true, lo2), 0)
	expect("output again", output(true, lo2), govppapi.VALUE_EXIST)
	expect("inside beside output", feature(true, lo2, true), govppapi.VALUE_EXIST)
	expect("output on no interface", output(true, 999), govppapi.INVALID_SW_IF_INDEX)
	wantList(t, "features", e.natInterfaces(), []string{itoa(lo1) + ":out", itoa(lo2) + ":output"})
	expect("deleting output", output(false, lo2), 0)
	expect("deleting output again", output(false, lo2), govppapi.NO_SUCH_ENTRY)

	// Addresses.
	expect("a range", addresses(true, "10.9.0.1", "10.9.0.3", 0, false), 0)
	expect("a range whose last address is below its first (nothing)", addresses(true, "10.9.0.4", "10.9.0.1", 0, false), 0)
	expect("a range starting at an address VPP has", addresses(true, "10.9.0.3", "10.9.0.4", 0, false), govppapi.VALUE_EXIST)
	expect("the same address twice-NAT, any VRF", addresses(true, "10.9.0.1", "10.9.0.1", ^uint32(0), true), 0)
	expect("an address in a VRF VPP has not", addresses(true, "10.9.0.9", "10.9.0.9", 7, false), 0)
	wantList(t, "addresses", e.natAddresses(), []string{"10.9.0.1 vrf -1 twice", "10.9.0.1 vrf 0", "10.9.0.2 vrf 0", "10.9.0.3 vrf 0", "10.9.0.9 vrf 7"})
	expect("deleting a range with an address VPP has not", addresses(false, "10.9.0.3", "10.9.0.5", 0, false), govppapi.NO_SUCH_ENTRY)
	wantList(t, "addresses", e.natAddresses(), []string{"10.9.0.1 vrf -1 twice", "10.9.0.1 vrf 0", "10.9.0.2 vrf 0", "10.9.0.9 vrf 7"})
	expect("deleting whatever the VRF", addresses(false, "10.9.0.9", "10.9.0.9", 0, false), 0)

	// Static mappings.
	sm := nat.Nat44AddDelStaticMappingV2{Flags: out2in, ExternalSwIfIndex: none, LocalIPAddress: ip("10.1.0.1"), ExternalIPAddress: ip("10.9.0.5"),
		Protocol: 6, LocalPort: 80, ExternalPort: 8080, Tag: "t1"}
	expect("a mapping", static(true, sm), 0)
	expect("the mapping again", static(true, sm), govppapi.VALUE_EXIST)
	other := sm
	other.LocalIPAddress = ip("10.1.0.2")
	expect("another local on that external endpoint", static(true, other), govppapi.VALUE_EXIST)
	udp := sm
	udp.Protocol = 17
	expect("that endpoint in UDP", static(true, udp), 0)
	onIf := nat.Nat44AddDelStaticMappingV2{Flags: out2in, ExternalSwIfIndex: lo2, LocalIPAddress: ip("10.1.0.3"), Protocol: 6, LocalPort: 22, ExternalPort: 2222, Tag: "t2"}
	expect("a mapping on an interface without address", static(true, onIf), 0)
	expect("that mapping again", static(true, onIf), govppapi.VALUE_EXIST)
	wantList(t, "static mappings", e.staticMappings(), []string{
		"t1: 17 10.9.0.5:8080 -> 10.1.0.1:80 NAT_IS_OUT2IN_ONLY",
		"t1: 6 10.9.0.5:8080 -> 10.1.0.1:80 NAT_IS_OUT2IN_ONLY",
		"t2: 6 if" + itoa(lo2) + ":2222 -> 10.1.0.3:22",
	})
	e.addAddress(uint32(lo2), "10.50.0.1/24")
	wantList(t, "static mappings once the interface has an address", e.staticMappings(), []string{
		"t1: 17 10.9.0.5:8080 -> 10.1.0.1:80 NAT_IS_OUT2IN_ONLY",
		"t1: 6 10.9.0.5:8080 -> 10.1.0.1:80 NAT_IS_OUT2IN_ONLY",
		"t2: 6 10.50.0.1:2222 -> 10.1.0.3:22 NAT_IS_OUT2IN_ONLY",
		"t2: 6 if" + itoa(lo2) + ":2222 -> 10.1.0.3:22",
	})
	expect("deleting without the flags", static(false, nat.Nat44AddDelStaticMappingV2{ExternalSwIfIndex: none, LocalIPAddress: ip("10.1.0.1"),
		ExternalIPAddress: ip("10.9.0.5"), Protocol: 17, LocalPort: 80, ExternalPort: 8080}), 0)
	expect("deleting again", static(false, udp), govppapi.NO_SUCH_ENTRY)
	expect("deleting the mapping on the interface", static(false, onIf), 0)
	addrOnly := nat.Nat44AddDelStaticMappingV2{Flags: out2in | nat_types.NAT_IS_ADDR_ONLY, ExternalSwIfIndex: none,
		LocalIPAddress: ip("10.1.0.4"), ExternalIPAddress: ip("10.9.0.8"), Tag: "t3"}
	expect("an address mapping", static(true, addrOnly), 0)
	addrOnly.LocalIPAddress = ip("10.1.0.5")
	expect("another address mapping of that address", static(true, addrOnly), govppapi.VALUE_EXIST)

	// Load-balanced mappings.
	two := []nat.Nat44LbAddrPort{{Addr: ip("10.2.0.1"), Port: 8080, Probability: 1}, {Addr: ip("10.2.0.2"), Port: 8081, Probability: 2}}
	expect("load-balanced, one local", lb(true, nat.Nat44AddDelLbStaticMapping{Flags: out2in, ExternalAddr: ip("10.9.0.30"), ExternalPort: 80, Protocol: 6, Locals: two[:1]}), govppapi.INVALID_VALUE)
	expect("load-balanced, not out2in-only, address not in the pool", lb(true, nat.Nat44AddDelLbStaticMapping{ExternalAddr: ip("10.9.0.30"), ExternalPort: 80, Protocol: 6, Locals: two}), govppapi.NO_SUCH_ENTRY)
	expect("load-balanced", lb(true, nat.Nat44AddDelLbStaticMapping{Flags: out2in, ExternalAddr: ip("10.9.0.30"), ExternalPort: 80, Protocol: 6, Affinity: 30, Tag: "lb", Locals: two}), 0)
	expect("a static mapping on its external endpoint", static(true, nat.Nat44AddDelStaticMappingV2{Flags: out2in, ExternalSwIfIndex: none,
		LocalIPAddress: ip("10.1.0.9"), ExternalIPAddress: ip("10.9.0.30"), Protocol: 6, LocalPort: 80, ExternalPort: 80}), govppapi.VALUE_EXIST)
	wantList(t, "static and load-balanced mappings", e.staticMappings(), []string{
		"lb: 6 10.9.0.30:80 -> lb 10.2.0.1:8080/1 10.2.0.2:8081/2 NAT_IS_OUT2IN_ONLY", // no affinity reported
		"t1: 6 10.9.0.5:8080 -> 10.1.0.1:80 NAT_IS_OUT2IN_ONLY",
		"t3: 0 10.9.0.8:0 -> 10.1.0.4:0 NAT_IS_OUT2IN_ONLY|NAT_IS_ADDR_ONLY",
	})
	// The dump's affinity field stays 0: VPP 25.10's
	// send_nat44_lb_static_mapping_details never sets it (the agent keeps
	// the expected value's; docs/vpp-25.10.md).
	for _, d := range natDump[*nat.Nat44LbStaticMappingDetails](e, &nat.Nat44LbStaticMappingDump{}) {
		if d.Tag == "lb" && d.Affinity != 0 {
			t.Errorf("nat44_lb_static_mapping_details reports affinity %d: read it back (dnat.go fillStatic)", d.Affinity)
		}
	}
	expect("deleting a static mapping as load-balanced", lb(false, nat.Nat44AddDelLbStaticMapping{ExternalAddr: ip("10.9.0.5"), ExternalPort: 8080, Protocol: 6}), govppapi.INVALID_VALUE)
	expect("deleting load-balanced", lb(false, nat.Nat44AddDelLbStaticMapping{ExternalAddr: ip("10.9.0.30"), ExternalPort: 80, Protocol: 6}), 0)

	// The twice-NAT pool address of a static mapping (match_pool,
	// pool_ip_address) is not in nat44_static_mapping_details (nor in any
	// other dump of VPP 25.10): the details of a mapping with one are
	// those of the mapping without.
	twiceDetails := func(m nat.Nat44AddDelStaticMappingV2) *nat.Nat44StaticMappingDetails {
		t.Helper()
		expect("a twice-NAT mapping", static(true, m), 0)
		defer func() { expect("deleting the twice-NAT mapping", static(false, m), 0) }()
		for _, d := range natDump[*nat.Nat44StaticMappingDetails](e, &nat.Nat44StaticMappingDump{}) {
			if d.Tag == "pool" {
				return d
			}
		}
		t.Fatal("the twice-NAT mapping is not dumped")
		return nil
	}
	twice := nat.Nat44AddDelStaticMappingV2{Flags: out2in | nat_types.NAT_IS_TWICE_NAT, ExternalSwIfIndex: none, LocalIPAddress: ip("10.1.0.7"),
		ExternalIPAddress: ip("10.9.0.70"), Protocol: 6, LocalPort: 80, ExternalPort: 80, Tag: "pool"}
	withPool := twice
	withPool.MatchPool, withPool.PoolIPAddress = true, ip("10.9.0.1")
	if a, b := twiceDetails(withPool), twiceDetails(twice); *a != *b {
		t.Errorf("nat44_static_mapping_details tells a twice-NAT pool address: %+v with it, %+v without: read it back (dnat.go fillStatic)", a, b)
	}

	// Identity mappings.
	id := nat.Nat44AddDelIdentityMapping{IPAddress: ip("10.9.0.40"), Protocol: 6, Port: 7777, SwIfIndex: none, Tag: "id1"}
	expect("an identity mapping", identity(true, id), 0)
	expect("again", identity(true, id), govppapi.VALUE_EXIST)
	id3 := id
	id3.VrfID, id3.Tag = 3, "id3"
	expect("in another VRF", identity(true, id3), 0)
	expect("on a static mapping's external endpoint", identity(true, nat.Nat44AddDelIdentityMapping{IPAddress: ip("10.9.0.5"), Protocol: 6, Port: 8080, SwIfIndex: none}), govppapi.VALUE_EXIST)
	expect("on an interface with an address", identity(true, nat.Nat44AddDelIdentityMapping{Protocol: 6, Port: 22, SwIfIndex: lo2, Tag: "id2"}), 0)
	wantList(t, "identity mappings", e.identityMappings(), []string{
		"id1: 6 10.9.0.40:7777 vrf 0",
		"id1: 6 10.9.0.40:7777 vrf 3", // the first entry's tag: VPP keeps one tag per mapping, its VRFs are entries of it
		"id2: 6 10.50.0.1:22 vrf 0",
		"id2: 6 if" + itoa(lo2) + ":22 vrf 0",
	})
	expect("deleting one VRF", identity(false, id3), 0)
	expect("deleting it again", identity(false, id3), govppapi.NO_SUCH_ENTRY)

	// Deleting an interface takes its features off; its mappings to
	// resolve stay.
	if _, err := ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: lo1}); err != nil {
		t.Fatal(err)
	}
	wantList(t, "features after deleting the interface", e.natInterfaces(), nil)
	expect("a mapping on an interface of no index", static(true, nat.Nat44AddDelStaticMappingV2{Flags: out2in, ExternalSwIfIndex: 999,
		LocalIPAddress: ip("10.1.0.6"), Protocol: 6, LocalPort: 1, ExternalPort: 1}), 0)

	// Disabling removes every setting.
	_, err = c.Nat44EdPluginEnableDisable(ctx, &nat.Nat44EdPluginEnableDisable{Enable: false})
	expect("disabling", err, 0)
	if e.natEnabled() {
		t.Error("enabled after the disable")
	}
	wantList(t, "addresses after the disable", e.natAddresses(), nil)
	wantList(t, "static mappings after the disable", e.staticMappings(), nil)
	wantList(t, "identity mappings after the disable", e.identityMappings(), nil)
	if _, err := ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: lo2}); err != nil {
		t.Fatal(err)
	}
}

func itoa[T ~uint32](v T) string { return strconv.FormatUint(uint64(v), 10) }

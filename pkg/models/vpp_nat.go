package models

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

// The NAT44 models of VPP (its endpoint-dependent NAT, nat44-ed), with the
// original agent's keys.
var (
	// VPPNat44Global enables NAT44 and holds its global settings: one value,
	// under one key.
	VPPNat44Global = &Model{
		Name:          "vpp.nat.nat44-global",
		KeyPrefix:     "config/vpp/nat/v2/nat44-global",
		KeyTemplate:   "config/vpp/nat/v2/nat44-global",
		ConfigSection: "vpp_config", ConfigField: "nat44_global",
		singleton: true,
		prototype: &vppnat.Nat44Global{},
		keySuffix: func(proto.Message) (string, error) { return "", nil },
		// The original's older documentation wrote the key with
		// "/settings" at the end, and the original took any key with the
		// prefix for it: that spelling is accepted.
		parseSuffix: func(s string) (KeyParts, error) {
			if s != "" && s != "/settings" {
				return nil, fmt.Errorf("the NAT44 global settings have one key, without a name (%q is not a part of it)", s)
			}
			return KeyParts{}, nil
		},
		canonicalSuffix: func(string) string { return "" },
		validate:        validateNat44Global,
	}
	// VPPNat44Interface puts NAT on a VPP interface.
	VPPNat44Interface = &Model{
		Name:          "vpp.nat.nat44-interface",
		KeyPrefix:     "config/vpp/nat/v2/nat44-interface/",
		KeyTemplate:   "config/vpp/nat/v2/nat44-interface/<name>",
		ConfigSection: "vpp_config", ConfigField: "nat44_interfaces",
		prototype:   &vppnat.Nat44Interface{},
		keySuffix:   func(v proto.Message) (string, error) { return v.(*vppnat.Nat44Interface).GetName(), nil },
		parseSuffix: vppNameSuffix,
		validate:    validateNat44Interface,
	}
	// VPPNat44AddressPool is a range of NAT addresses, keyed by its name or,
	// without one, by its VRF and addresses.
	VPPNat44AddressPool = &Model{
		Name:          "vpp.nat.nat44-pool",
		KeyPrefix:     "config/vpp/nat/v2/nat44-pool/",
		KeyTemplate:   "config/vpp/nat/v2/nat44-pool/{<name>|vrf/<vrf_id>/address/<first_ip>[-<last_ip>]}",
		ConfigSection: "vpp_config", ConfigField: "nat44_pools",
		prototype:   &vppnat.Nat44AddressPool{},
		keySuffix:   natPoolSuffix,
		parseSuffix: parseNatPoolSuffix,
		validate:    validateNat44AddressPool,
	}
	// VPPDNat44 is a group of static and identity mappings under a label.
	VPPDNat44 = &Model{
		Name:          "vpp.nat.dnat44",
		KeyPrefix:     "config/vpp/nat/v2/dnat44/",
		KeyTemplate:   "config/vpp/nat/v2/dnat44/<label>",
		ConfigSection: "vpp_config", ConfigField: "dnat44s",
		prototype: &vppnat.DNat44{},
		keySuffix: func(v proto.Message) (string, error) { return v.(*vppnat.DNat44).GetLabel(), nil },
		parseSuffix: func(s string) (KeyParts, error) {
			if err := keyName("label", s); err != nil {
				return nil, err
			}
			if len(s) > vppTagLen {
				return nil, fmt.Errorf("label %q is longer than %d bytes (it is the VPP tag of the mappings)", s, vppTagLen)
			}
			return KeyParts{"label": s}, nil
		},
		validate: validateDNat44,
	}
)

// NatPoolMaxAddresses is the most addresses a NAT44 address pool may hold:
// VPP adds and deletes a range one address at a time.
const NatPoolMaxAddresses = 1 << 16

func validateNat44Global(v proto.Message, errs *fieldErrors) {
	g := v.(*vppnat.Nat44Global)
	// The original's deprecated lists are taken as it took them: each entry
	// does what a Nat44Interface or a one-address Nat44AddressPool would.
	// Entries of one interface add up (the original's example gives one
	// interface inside and outside in two entries).
	output := map[string]int{} // name -> the first entry, with its output_feature
	for k, i := range g.GetNatInterfaces() {
		at := fmt.Sprintf("nat_interfaces[%d]", k)
		errs.name(at+".name", i.GetName())
		if len(i.GetName()) > vppTagLen {
			errs.add(at+".name", "%q is longer than %d bytes (it is a VPP interface's logical name)", i.GetName(), vppTagLen)
		}
		if first, ok := output[i.GetName()]; !ok {
			output[i.GetName()] = k
		} else if g.GetNatInterfaces()[first].GetOutputFeature() != i.GetOutputFeature() {
			errs.add(at+".output_feature", "%v, but %v in nat_interfaces[%d] of the same interface %q: VPP's output feature excludes the inside and outside features",
				i.GetOutputFeature(), !i.GetOutputFeature(), first, i.GetName())
		}
	}
	type listAddr struct {
		addr  netip.Addr
		twice bool
	}
	addrs := map[listAddr]int{}
	for k, a := range g.GetAddressPool() {
		at := fmt.Sprintf("address_pool[%d]", k)
		ip, ok := ipv4Field(errs, at+".address", a.GetAddress(), true)
		if !ok {
			continue
		}
		la := listAddr{ip, a.GetTwiceNat()}
		if first, dup := addrs[la]; dup {
			errs.add(at+".address", "%s is address_pool[%d] again (VPP keeps an address once in a list)", ip, first)
			continue
		}
		addrs[la] = k
	}
	if g.GetEndpointIndependent() {
		errs.add("endpoint_independent", "not supported: netagent drives VPP's endpoint-dependent NAT44 (the nat44-ed plugin); endpoint-independent NAT is VPP's other plugin (nat44-ei)")
	}
}

func validateNat44Interface(v proto.Message, errs *fieldErrors) {
	i := v.(*vppnat.Nat44Interface)
	errs.name("name", i.GetName())
	if len(i.GetName()) > vppTagLen {
		errs.add("name", "%q is longer than %d bytes (it is a VPP interface's logical name)", i.GetName(), vppTagLen)
	}
	if i.GetOutputFeature() {
		switch {
		case i.GetNatInside() && i.GetNatOutside():
			errs.add("output_feature", "VPP's output feature takes neither side and excludes the inside and outside features: set it with one of nat_inside, nat_outside")
		case !i.GetNatInside() && !i.GetNatOutside():
			errs.add("output_feature", "set it with nat_outside (or nat_inside), as the original agent did")
		}
	}
}

// natPoolSuffix is the name of a pool, or without one
// "vrf/<vrf>/address/<first>[-<last>]".
func natPoolSuffix(v proto.Message) (string, error) {
	p := v.(*vppnat.Nat44AddressPool)
	if p.GetName() != "" {
		return p.GetName(), nil
	}
	first, err := netip.ParseAddr(p.GetFirstIp())
	if err != nil {
		return "", fmt.Errorf("first_ip: %q is not an IP address", p.GetFirstIp())
	}
	s := "vrf/" + strconv.FormatUint(uint64(p.GetVrfId()), 10) + "/address/" + first.String()
	if p.GetLastIp() != "" {
		last, err := netip.ParseAddr(p.GetLastIp())
		if err != nil {
			return "", fmt.Errorf("last_ip: %q is not an IP address", p.GetLastIp())
		}
		if last != first {
			s += "-" + last.String()
		}
	}
	return s, nil
}

// parseNatPoolSuffix parses the key suffix of a pool: the form of a pool
// without a name, else a name.
func parseNatPoolSuffix(s string) (KeyParts, error) {
	if parts, ok, err := parseUnnamedPool(s); ok {
		return parts, err
	}
	if err := keyName("name", s); err != nil {
		return nil, err
	}
	return KeyParts{"name": s}, nil
}

// parseUnnamedPool parses "vrf/<vrf>/address/<first>[-<last>]"; ok is false
// when s does not have that form (it is then a name).
func parseUnnamedPool(s string) (KeyParts, bool, error) {
	segs := strings.Split(s, "/")
	if len(segs) != 4 || segs[0] != "vrf" || segs[2] != "address" {
		return nil, false, nil
	}
	vrf, err := keyUint("vrf_id", segs[1])
	if err != nil {
		return nil, true, err
	}
	firstS, lastS, ranged := strings.Cut(segs[3], "-")
	first, err := keyIP("first_ip", firstS)
	if err != nil {
		return nil, true, err
	}
	parts := KeyParts{"vrf_id": strconv.FormatUint(uint64(vrf), 10), "first_ip": first.String()}
	if ranged {
		last, err := keyIP("last_ip", lastS)
		if err != nil {
			return nil, true, err
		}
		if last == first {
			return nil, true, fmt.Errorf("last_ip %s is first_ip: the key of a pool of one address has no -<last_ip>", last)
		}
		parts["last_ip"] = last.String()
	}
	return parts, true, nil
}

func validateNat44AddressPool(v proto.Message, errs *fieldErrors) {
	p := v.(*vppnat.Nat44AddressPool)
	if name := p.GetName(); name != "" {
		errs.name("name", name)
		if _, unnamed, _ := parseUnnamedPool(name); unnamed {
			errs.add("name", "%q has the form of the key of a pool without a name (vrf/<vrf_id>/address/<first_ip>[-<last_ip>])", name)
		}
	}
	first, ok := ipv4Field(errs, "first_ip", p.GetFirstIp(), true)
	if !ok {
		return
	}
	if p.GetLastIp() == "" {
		return
	}
	last, ok := ipv4Field(errs, "last_ip", p.GetLastIp(), true)
	if !ok {
		return
	}
	if last.Less(first) {
		errs.add("last_ip", "%s is below first_ip %s", last, first)
		return
	}
	if n := ipv4Distance(first, last) + 1; n > NatPoolMaxAddresses {
		errs.add("last_ip", "the range %s-%s holds %d addresses, more than %d (VPP adds them one at a time)", first, last, n, NatPoolMaxAddresses)
	}
}

// ipv4Field checks an IPv4 address field (required: "" is an error).
func ipv4Field(errs *fieldErrors, field, s string, required bool) (netip.Addr, bool) {
	if s == "" {
		if required {
			errs.add(field, "required")
		}
		return netip.Addr{}, false
	}
	a, ok := errs.ip(field, s)
	if !ok {
		return netip.Addr{}, false
	}
	if !a.Is4() {
		errs.add(field, "%s is not an IPv4 address (NAT44)", a)
		return netip.Addr{}, false
	}
	return a, true
}

func ipv4Distance(a, b netip.Addr) uint64 {
	x, y := a.As4(), b.As4()
	return uint64(uint32(y[0])<<24|uint32(y[1])<<16|uint32(y[2])<<8|uint32(y[3])) -
		uint64(uint32(x[0])<<24|uint32(x[1])<<16|uint32(x[2])<<8|uint32(x[3]))
}

func validateDNat44(v proto.Message, errs *fieldErrors) {
	d := v.(*vppnat.DNat44)
	errs.name("label", d.GetLabel())
	if len(d.GetLabel()) > vppTagLen {
		errs.add("label", "%q is longer than %d bytes (it is the VPP tag of the mappings)", d.GetLabel(), vppTagLen)
	}
	checkEnums(d.ProtoReflect(), "", errs)
	seen := map[string]int{}
	for k, m := range d.GetStMappings() {
		validateStaticMapping(fmt.Sprintf("st_mappings[%d]", k), m, errs)
		if id, ok := StaticMappingID(m); ok {
			if j, dup := seen[id]; dup {
				errs.add(fmt.Sprintf("st_mappings[%d]", k), "its external endpoint (%s) is already st_mappings[%d]'s", id, j)
			}
			seen[id] = k
		}
	}
	seen = map[string]int{}
	for k, m := range d.GetIdMappings() {
		validateIdentityMapping(fmt.Sprintf("id_mappings[%d]", k), m, errs)
		if id, ok := IdentityMappingID(m); ok {
			if j, dup := seen[id]; dup {
				errs.add(fmt.Sprintf("id_mappings[%d]", k), "it is id_mappings[%d] again (%s)", j, id)
			}
			seen[id] = k
		}
	}
}

func validateStaticMapping(at string, m *vppnat.DNat44_StaticMapping, errs *fieldErrors) {
	f := func(field string) string { return at + "." + field }
	lb := len(m.GetLocalIps()) > 1
	// The original's rule: external_interface is preferred over
	// external_ip, except for a load-balanced mapping, which VPP keeps on
	// an address only (its external_interface is then a dependency only).
	errs.optName(f("external_interface"), m.GetExternalInterface())
	ipv4Field(errs, f("external_ip"), m.GetExternalIp(), m.GetExternalInterface() == "" || lb)
	if m.GetExternalPort() > 65535 {
		errs.add(f("external_port"), "%d is above 65535", m.GetExternalPort())
	}
	addrOnly := m.GetExternalPort() == 0
	if len(m.GetLocalIps()) == 0 {
		errs.add(f("local_ips"), "required: one local endpoint, or two or more to balance over")
	}
	for k, l := range m.GetLocalIps() {
		lf := func(field string) string { return fmt.Sprintf("%s.local_ips[%d].%s", at, k, field) }
		ipv4Field(errs, lf("local_ip"), l.GetLocalIp(), true)
		switch {
		case l.GetLocalPort() > 65535:
			errs.add(lf("local_port"), "%d is above 65535", l.GetLocalPort())
		case addrOnly && l.GetLocalPort() != 0:
			errs.add(lf("local_port"), "a mapping without external_port maps addresses only: no local_port either (or set external_port)")
		case !addrOnly && l.GetLocalPort() == 0:
			errs.add(lf("local_port"), "required with external_port (a mapping of ports)")
		}
		switch {
		case l.GetProbability() > 255:
			errs.add(lf("probability"), "%d is above 255 (VPP keeps 8 bits)", l.GetProbability())
		case !lb && l.GetProbability() != 0:
			errs.add(lf("probability"), "weighs the local endpoints of a load-balanced mapping (two local_ips or more); a mapping with one has none")
		}
	}
	if addrOnly && m.GetProtocol() != vppnat.DNat44_TCP {
		errs.add(f("protocol"), "a mapping of addresses (no external_port) translates every protocol: leave protocol unset")
	}
	if lb {
		if addrOnly {
			errs.add(f("external_port"), "required for a load-balanced mapping (two local_ips or more)")
		}
		if m.GetProtocol() == vppnat.DNat44_ICMP {
			errs.add(f("protocol"), "ICMP is not permitted for load-balanced mappings (two local_ips or more)")
		}
	} else if m.GetSessionAffinity() != 0 {
		errs.add(f("session_affinity"), "applies to load-balanced mappings (two local_ips or more)")
	}
	if pool := m.GetTwiceNatPoolIp(); pool != "" {
		ipv4Field(errs, f("twice_nat_pool_ip"), pool, false)
		if m.GetTwiceNat() != vppnat.DNat44_StaticMapping_ENABLED {
			errs.add(f("twice_nat_pool_ip"), "needs twice_nat ENABLED")
		}
		if lb {
			errs.add(f("twice_nat_pool_ip"), "not for load-balanced mappings (two local_ips or more)")
		}
	}
}

func validateIdentityMapping(at string, m *vppnat.DNat44_IdentityMapping, errs *fieldErrors) {
	f := func(field string) string { return at + "." + field }
	// The original's rule: interface is preferred over ip_address.
	errs.optName(f("interface"), m.GetInterface())
	ipv4Field(errs, f("ip_address"), m.GetIpAddress(), m.GetInterface() == "")
	if m.GetPort() > 65535 {
		errs.add(f("port"), "%d is above 65535", m.GetPort())
	}
	if m.GetPort() == 0 && m.GetProtocol() != vppnat.DNat44_TCP {
		errs.add(f("protocol"), "an identity mapping without port exempts the address for every protocol: leave protocol unset")
	}
}

// StaticMappingID names the external endpoint of a static mapping, what VPP
// knows it by (and what is unique among the mappings of a DNat44):
// "<tcp|udp|icmp>/<port>/ip/<ip>" or ".../if/<interface>" (the interface
// when it is set, but for a load-balanced mapping), "addr/ip/<ip>" or
// "addr/if/<interface>" for a mapping of addresses. ok is false when the
// mapping's external fields are invalid.
func StaticMappingID(m *vppnat.DNat44_StaticMapping) (string, bool) {
	var ext string
	switch {
	case m.GetExternalInterface() != "" && len(m.GetLocalIps()) < 2:
		ext = "if/" + m.GetExternalInterface()
	default:
		a, err := netip.ParseAddr(m.GetExternalIp())
		if err != nil || !a.Is4() {
			return "", false
		}
		ext = "ip/" + a.String()
	}
	if m.GetExternalPort() == 0 {
		return "addr/" + ext, true
	}
	return natProtoName(m.GetProtocol()) + "/" + strconv.FormatUint(uint64(m.GetExternalPort()), 10) + "/" + ext, true
}

// IdentityMappingID names an identity mapping, what VPP knows it by:
// "vrf/<vrf>/<tcp|udp|icmp>/<port>/ip/<ip>" or ".../if/<interface>",
// "vrf/<vrf>/addr/..." without a port. ok is false when its address fields
// are invalid.
func IdentityMappingID(m *vppnat.DNat44_IdentityMapping) (string, bool) {
	var at string
	switch {
	case m.GetInterface() != "":
		at = "if/" + m.GetInterface()
	default:
		a, err := netip.ParseAddr(m.GetIpAddress())
		if err != nil || !a.Is4() {
			return "", false
		}
		at = "ip/" + a.String()
	}
	vrf := "vrf/" + strconv.FormatUint(uint64(m.GetVrfId()), 10) + "/"
	if m.GetPort() == 0 {
		return vrf + "addr/" + at, true
	}
	return vrf + natProtoName(m.GetProtocol()) + "/" + strconv.FormatUint(uint64(m.GetPort()), 10) + "/" + at, true
}

func natProtoName(p vppnat.DNat44_Protocol) string {
	switch p {
	case vppnat.DNat44_TCP:
		return "tcp"
	case vppnat.DNat44_UDP:
		return "udp"
	case vppnat.DNat44_ICMP:
		return "icmp"
	}
	return "protocol-" + strconv.Itoa(int(p))
}

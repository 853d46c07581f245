package models

import (
	"fmt"
	"net/netip"

	"google.golang.org/protobuf/proto"

	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
)

// VPPACL is a VPP access control list (the acl plugin), with the
// interfaces it filters.
var VPPACL = &Model{
	Name:          "vpp.acls.acl",
	KeyPrefix:     "config/vpp/acls/v2/acl/",
	KeyTemplate:   "config/vpp/acls/v2/acl/<name>",
	ConfigSection: "vpp_config", ConfigField: "acls",
	prototype:   &vppacl.ACL{},
	keySuffix:   func(v proto.Message) (string, error) { return v.(*vppacl.ACL).GetName(), nil },
	parseSuffix: vppNameSuffix,
	validate:    validateVPPACL,
}

// The IP protocol numbers an IP rule's icmp, tcp and udp stand for.
const (
	ProtoICMP   = 1
	ProtoTCP    = 6
	ProtoUDP    = 17
	ProtoICMPv6 = 58
)

// validateVPPACL checks an ACL: a name that can be its VPP tag, at least
// one rule, all of one kind (VPP keeps IP ACLs and MAC-IP ACLs apart: the
// original agent refused to mix them too), each rule's fields as VPP takes
// them (networks of one IP version, ranges in order and in range, one of
// icmp, tcp and udp, agreeing with ip.protocol), and the interfaces (a
// MAC-IP ACL filters ingress only).
func validateVPPACL(v proto.Message, errs *fieldErrors) {
	a := v.(*vppacl.ACL)
	errs.name("name", a.GetName())
	if len(a.GetName()) > vppTagLen {
		errs.add("name", "%q is longer than %d bytes (it is the VPP ACL tag)", a.GetName(), vppTagLen)
	}
	checkEnums(a.ProtoReflect(), "", errs)
	if len(a.GetRules()) == 0 {
		errs.add("rules", "required: an ACL has at least one rule")
	}
	kind, kindRule := "", -1 // of the first rule that has one: "ip_rule" or "macip_rule"
	for k, r := range a.GetRules() {
		field := fmt.Sprintf("rules[%d]", k)
		ip, macip := r.GetIpRule(), r.GetMacipRule()
		switch {
		case ip == nil && macip == nil:
			errs.add(field, "needs ip_rule or macip_rule")
			continue
		case ip != nil && macip != nil:
			errs.add(field+".macip_rule", "a rule is ip_rule or macip_rule, not both")
			continue
		}
		this := "ip_rule"
		if macip != nil {
			this = "macip_rule"
		}
		if kind == "" {
			kind, kindRule = this, k
		} else if this != kind {
			errs.add(field+"."+this, "rules[%d] has %s: an ACL holds IP rules or MAC-IP rules, not both (VPP keeps them in separate ACLs)", kindRule, kind)
			continue
		}
		if ip != nil {
			validateIPRule(errs, field+".ip_rule", ip)
		} else {
			validateMacIPRule(errs, field+".macip_rule", macip)
		}
	}
	ifs := a.GetInterfaces()
	aclInterfaceNames(errs, "interfaces.ingress", ifs.GetIngress())
	aclInterfaceNames(errs, "interfaces.egress", ifs.GetEgress())
	if kind == "macip_rule" && len(ifs.GetEgress()) > 0 {
		errs.add("interfaces.egress", "a MAC-IP ACL filters the packets an interface receives only (VPP applies MAC-IP ACLs on ingress)")
	}
}

func aclInterfaceNames(errs *fieldErrors, field string, names []string) {
	seen := map[string]int{}
	for k, n := range names {
		f := fmt.Sprintf("%s[%d]", field, k)
		errs.name(f, n)
		if j, dup := seen[n]; dup && n != "" {
			errs.add(f, "%q is already %s[%d]", n, field, j)
		}
		seen[n] = k
	}
}

// validateIPRule checks an IP rule at field (rules[k].ip_rule).
func validateIPRule(errs *fieldErrors, field string, r *vppacl.ACL_Rule_IpRule) {
	var family netip.Addr // an address of the rule's networks' IP version, if any
	if ip := r.GetIp(); ip != nil {
		var dst, src netip.Prefix
		var dstOK, srcOK bool
		if s := ip.GetDestinationNetwork(); s != "" {
			dst, dstOK = errs.cidr(field+".ip.destination_network", s)
		}
		if s := ip.GetSourceNetwork(); s != "" {
			src, srcOK = errs.cidr(field+".ip.source_network", s)
		}
		switch {
		case dstOK && srcOK && dst.Addr().Is4() != src.Addr().Is4():
			errs.add(field+".ip.source_network", "%s is not of the IP version of destination_network %s", ip.GetSourceNetwork(), ip.GetDestinationNetwork())
		case dstOK:
			family = dst.Addr()
		case srcOK:
			family = src.Addr()
		}
		if ip.GetProtocol() > 255 {
			errs.add(field+".ip.protocol", "%d is not an IP protocol number (0..255)", ip.GetProtocol())
		}
	}
	proto := r.GetIp().GetProtocol()
	l4 := ""
	set := func(name string) bool {
		if l4 != "" {
			errs.add(field+"."+name, "set, but %s is too: a rule matches one of icmp, tcp and udp", l4)
			return false
		}
		l4 = name
		return true
	}
	if icmp := r.GetIcmp(); icmp != nil && set("icmp") {
		f := field + ".icmp"
		switch {
		case proto != 0 && proto != ProtoICMP && proto != ProtoICMPv6:
			errs.add(f, "set, but ip.protocol is %d, not ICMP (%d) or ICMPv6 (%d)", proto, ProtoICMP, ProtoICMPv6)
		case proto == ProtoICMP && icmp.GetIcmpv6():
			errs.add(f+".icmpv6", "true, but ip.protocol is %d (ICMP, not ICMPv6: %d)", proto, ProtoICMPv6)
		case proto == ProtoICMPv6 && !icmp.GetIcmpv6():
			errs.add(f+".icmpv6", "false (ICMP), but ip.protocol is %d (ICMPv6)", proto)
		case family.IsValid() && family.Is4() && (icmp.GetIcmpv6() || proto == ProtoICMPv6):
			errs.add(f+".icmpv6", "ICMPv6 with IPv4 networks (%s)", networks(r.GetIp()))
		case family.IsValid() && family.Is6() && !icmp.GetIcmpv6() && proto != ProtoICMPv6:
			errs.add(f+".icmpv6", "ICMP (IPv4) with IPv6 networks (%s): set icmpv6", networks(r.GetIp()))
		}
		icmpRange(errs, f+".icmp_type_range", icmp.GetIcmpTypeRange())
		icmpRange(errs, f+".icmp_code_range", icmp.GetIcmpCodeRange())
	}
	if tcp := r.GetTcp(); tcp != nil && set("tcp") {
		f := field + ".tcp"
		if proto != 0 && proto != ProtoTCP {
			errs.add(f, "set, but ip.protocol is %d, not TCP (%d)", proto, ProtoTCP)
		}
		portRange(errs, f+".destination_port_range", tcp.GetDestinationPortRange())
		portRange(errs, f+".source_port_range", tcp.GetSourcePortRange())
		if tcp.GetTcpFlagsMask() > 255 {
			errs.add(f+".tcp_flags_mask", "%d is above 255 (8 flag bits)", tcp.GetTcpFlagsMask())
		}
		if tcp.GetTcpFlagsValue() > 255 {
			errs.add(f+".tcp_flags_value", "%d is above 255 (8 flag bits)", tcp.GetTcpFlagsValue())
		}
	}
	if udp := r.GetUdp(); udp != nil && set("udp") {
		f := field + ".udp"
		if proto != 0 && proto != ProtoUDP {
			errs.add(f, "set, but ip.protocol is %d, not UDP (%d)", proto, ProtoUDP)
		}
		portRange(errs, f+".destination_port_range", udp.GetDestinationPortRange())
		portRange(errs, f+".source_port_range", udp.GetSourcePortRange())
	}
}

func networks(ip *vppacl.ACL_Rule_IpRule_Ip) string {
	return fmt.Sprintf("source_network %q, destination_network %q", ip.GetSourceNetwork(), ip.GetDestinationNetwork())
}

// icmpRange checks an ICMP type or code range: first <= last, both 0..255.
func icmpRange(errs *fieldErrors, field string, r *vppacl.ACL_Rule_IpRule_Icmp_Range) {
	if r == nil {
		return
	}
	ok := true
	if r.GetFirst() > 255 {
		errs.add(field+".first", "%d is above 255", r.GetFirst())
		ok = false
	}
	if r.GetLast() > 255 {
		errs.add(field+".last", "%d is above 255", r.GetLast())
		ok = false
	}
	if ok && r.GetFirst() > r.GetLast() {
		errs.add(field, "first %d is above last %d (the range is reversed)", r.GetFirst(), r.GetLast())
	}
}

// portRange checks a port range: ports 0..65535, lower_port <= upper_port
// when upper_port is set (lower_port alone is one port).
func portRange(errs *fieldErrors, field string, r *vppacl.ACL_Rule_IpRule_PortRange) {
	if r == nil {
		return
	}
	ok := true
	if r.GetLowerPort() > 65535 {
		errs.add(field+".lower_port", "%d is above 65535", r.GetLowerPort())
		ok = false
	}
	if r.GetUpperPort() > 65535 {
		errs.add(field+".upper_port", "%d is above 65535", r.GetUpperPort())
		ok = false
	}
	if ok && r.GetUpperPort() != 0 && r.GetLowerPort() > r.GetUpperPort() {
		errs.add(field, "lower_port %d is above upper_port %d (the range is reversed)", r.GetLowerPort(), r.GetUpperPort())
	}
}

// validateMacIPRule checks a MAC-IP rule at field (rules[k].macip_rule).
func validateMacIPRule(errs *fieldErrors, field string, r *vppacl.ACL_Rule_MacIpRule) {
	if errs.required(field+".source_address", r.GetSourceAddress()) {
		if a, ok := errs.ip(field+".source_address", r.GetSourceAddress()); ok && int(r.GetSourceAddressPrefix()) > a.BitLen() {
			errs.add(field+".source_address_prefix", "%d is longer than an %s address (%d bits)", r.GetSourceAddressPrefix(), ipVersion(a), a.BitLen())
		}
	}
	if s := r.GetSourceMacAddress(); s != "" {
		errs.mac(field+".source_mac_address", s)
	}
	if s := r.GetSourceMacAddressMask(); s != "" {
		errs.mac(field+".source_mac_address_mask", s)
	}
}

func ipVersion(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

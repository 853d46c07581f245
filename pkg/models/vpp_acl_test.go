package models_test

import (
	"strings"
	"testing"

	"github.com/netagent-io/netagent/pkg/models"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
)

func vtACL(rules ...*vppacl.ACL_Rule) *vppacl.ACL {
	return &vppacl.ACL{Name: "acl1", Rules: rules}
}

func vtIPRule(f func(r *vppacl.ACL_Rule_IpRule)) *vppacl.ACL_Rule {
	r := &vppacl.ACL_Rule_IpRule{}
	f(r)
	return &vppacl.ACL_Rule{Action: vppacl.ACL_Rule_PERMIT, IpRule: r}
}

func vtMacIPRule(ip string, prefix uint32) *vppacl.ACL_Rule {
	return &vppacl.ACL_Rule{MacipRule: &vppacl.ACL_Rule_MacIpRule{SourceAddress: ip, SourceAddressPrefix: prefix}}
}

func TestValidateVPPACL(t *testing.T) {
	ports := func(l, u uint32) *vppacl.ACL_Rule_IpRule_PortRange {
		return &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: l, UpperPort: u}
	}
	icmpRange := func(f, l uint32) *vppacl.ACL_Rule_IpRule_Icmp_Range {
		return &vppacl.ACL_Rule_IpRule_Icmp_Range{First: f, Last: l}
	}
	vtRun(t, models.VPPACL, []vtCase{
		{name: "IP rules, any network", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {}))},
		{name: "TCP with ranges and flags", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{SourceNetwork: "10.0.0.1/8", DestinationNetwork: "192.168.0.0/16", Protocol: 6}
			r.Tcp = &vppacl.ACL_Rule_IpRule_Tcp{DestinationPortRange: ports(80, 0), SourcePortRange: ports(1024, 65535), TcpFlagsMask: 255, TcpFlagsValue: 2}
		}))},
		{name: "ICMPv6", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{DestinationNetwork: "2001:db8::/32"}
			r.Icmp = &vppacl.ACL_Rule_IpRule_Icmp{Icmpv6: true, IcmpTypeRange: icmpRange(128, 129)}
		}))},
		{name: "another protocol", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{Protocol: 47}
		}))},
		{name: "MAC-IP rules on ingress", value: &vppacl.ACL{Name: "m", Rules: []*vppacl.ACL_Rule{vtMacIPRule("10.0.0.1", 32), vtMacIPRule("2001:db8::", 128)},
			Interfaces: &vppacl.ACL_Interfaces{Ingress: []string{"if1", "GigabitEthernet0/8/0"}}}},
		{name: "no rules", value: vtACL(), fields: []string{"rules"}, want: "at least one rule"},
		{name: "no name", value: &vppacl.ACL{Rules: []*vppacl.ACL_Rule{vtMacIPRule("10.0.0.1", 32)}}, fields: []string{"name"}, want: "required"},
		{name: "name longer than the tag", value: &vppacl.ACL{Name: strings.Repeat("a", 64), Rules: []*vppacl.ACL_Rule{vtMacIPRule("10.0.0.1", 32)}},
			fields: []string{"name"}, want: "VPP ACL tag"},
		{name: "bad CIDR", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{SourceNetwork: "10.0.0.1", DestinationNetwork: "300.0.0.0/8"}
		})), fields: []string{"rules[0].ip_rule.ip.destination_network", "rules[0].ip_rule.ip.source_network"}, want: "300.0.0.0/8"},
		{name: "versions differ", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{SourceNetwork: "::/0", DestinationNetwork: "10.0.0.0/8"}
		})), fields: []string{"rules[0].ip_rule.ip.source_network"}, want: "IP version"},
		{name: "protocol above 255", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{Protocol: 256}
		})), fields: []string{"rules[0].ip_rule.ip.protocol"}, want: "256"},
		{name: "port range reversed", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Tcp = &vppacl.ACL_Rule_IpRule_Tcp{DestinationPortRange: ports(90, 80)}
		})), fields: []string{"rules[0].ip_rule.tcp.destination_port_range"}, want: "lower_port 90 is above upper_port 80"},
		{name: "ports above 65535", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Udp = &vppacl.ACL_Rule_IpRule_Udp{SourcePortRange: ports(65536, 70000)}
		})), fields: []string{"rules[0].ip_rule.udp.source_port_range.lower_port", "rules[0].ip_rule.udp.source_port_range.upper_port"}, want: "65536"},
		{name: "TCP flags above 255", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Tcp = &vppacl.ACL_Rule_IpRule_Tcp{TcpFlagsValue: 300}
		})), fields: []string{"rules[0].ip_rule.tcp.tcp_flags_value"}, want: "300"},
		{name: "ICMP on TCP", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{Protocol: 6}
			r.Icmp = &vppacl.ACL_Rule_IpRule_Icmp{}
		})), fields: []string{"rules[0].ip_rule.icmp"}, want: "not ICMP"},
		{name: "ICMPv6 flag on protocol 1", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{Protocol: 1}
			r.Icmp = &vppacl.ACL_Rule_IpRule_Icmp{Icmpv6: true}
		})), fields: []string{"rules[0].ip_rule.icmp.icmpv6"}, want: "ICMP, not ICMPv6"},
		{name: "ICMP with IPv6 networks", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{SourceNetwork: "2001:db8::/32"}
			r.Icmp = &vppacl.ACL_Rule_IpRule_Icmp{}
		})), fields: []string{"rules[0].ip_rule.icmp.icmpv6"}, want: "set icmpv6"},
		{name: "ICMP ranges", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Icmp = &vppacl.ACL_Rule_IpRule_Icmp{IcmpTypeRange: icmpRange(10, 5), IcmpCodeRange: icmpRange(0, 256)}
		})), fields: []string{"rules[0].ip_rule.icmp.icmp_type_range", "rules[0].ip_rule.icmp.icmp_code_range.last"}, want: "reversed"},
		{name: "UDP on protocol 6", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Ip = &vppacl.ACL_Rule_IpRule_Ip{Protocol: 6}
			r.Udp = &vppacl.ACL_Rule_IpRule_Udp{}
		})), fields: []string{"rules[0].ip_rule.udp"}, want: "not UDP"},
		{name: "ICMP and TCP", value: vtACL(vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {
			r.Icmp = &vppacl.ACL_Rule_IpRule_Icmp{}
			r.Tcp = &vppacl.ACL_Rule_IpRule_Tcp{}
		})), fields: []string{"rules[0].ip_rule.tcp"}, want: "icmp is too"},
		{name: "IP and MAC-IP mixed", value: vtACL(vtMacIPRule("10.0.0.1", 32), vtIPRule(func(r *vppacl.ACL_Rule_IpRule) {})),
			fields: []string{"rules[1].ip_rule"}, want: "rules[0] has macip_rule"},
		{name: "both in one rule", value: vtACL(&vppacl.ACL_Rule{IpRule: &vppacl.ACL_Rule_IpRule{}, MacipRule: &vppacl.ACL_Rule_MacIpRule{SourceAddress: "10.0.0.1"}}),
			fields: []string{"rules[0].macip_rule"}, want: "not both"},
		{name: "a rule of no kind", value: vtACL(&vppacl.ACL_Rule{}), fields: []string{"rules[0]"}, want: "ip_rule or macip_rule"},
		{name: "unknown action", value: vtACL(&vppacl.ACL_Rule{Action: 5, IpRule: &vppacl.ACL_Rule_IpRule{}}), fields: []string{"rules[0].action"}, want: "5"},
		{name: "MAC-IP address, prefix and MACs", value: vtACL(&vppacl.ACL_Rule{MacipRule: &vppacl.ACL_Rule_MacIpRule{
			SourceAddress: "10.0.0.1", SourceAddressPrefix: 33, SourceMacAddress: "zz", SourceMacAddressMask: "ff:ff",
		}}), fields: []string{"rules[0].macip_rule.source_address_prefix", "rules[0].macip_rule.source_mac_address", "rules[0].macip_rule.source_mac_address_mask"}, want: "33"},
		{name: "MAC-IP without address", value: vtACL(vtMacIPRule("", 0)), fields: []string{"rules[0].macip_rule.source_address"}, want: "required"},
		{name: "MAC-IP on egress", value: &vppacl.ACL{Name: "m", Rules: []*vppacl.ACL_Rule{vtMacIPRule("10.0.0.1", 32)},
			Interfaces: &vppacl.ACL_Interfaces{Egress: []string{"if1"}}}, fields: []string{"interfaces.egress"}, want: "ingress"},
		{name: "interfaces", value: &vppacl.ACL{Name: "a", Rules: []*vppacl.ACL_Rule{vtMacIPRule("10.0.0.1", 32)},
			Interfaces: &vppacl.ACL_Interfaces{Ingress: []string{"if1", "", "if1"}}},
			fields: []string{"interfaces.ingress[1]", "interfaces.ingress[2]"}, want: `"if1" is already interfaces.ingress[0]`},
	})
}

func TestVPPACLKey(t *testing.T) {
	a := &vppacl.ACL{Name: "web/in", Rules: []*vppacl.ACL_Rule{vtMacIPRule("10.0.0.1", 32)}}
	key, err := models.VPPACL.Key(a)
	if err != nil || key != "config/vpp/acls/v2/acl/web/in" {
		t.Fatalf("Key = %q, %v", key, err)
	}
	if err := models.VPPACL.CheckKey("config/vpp/acls/v2/acl/other", a); err == nil || !strings.Contains(err.Error(), "belongs under config/vpp/acls/v2/acl/web/in") {
		t.Errorf("CheckKey under another name: %v", err)
	}
	if _, err := models.VPPACL.ParseKey("config/vpp/acls/v2/acl/" + strings.Repeat("a", 64)); err == nil {
		t.Errorf("ParseKey of a name longer than a VPP tag: no error")
	}
}

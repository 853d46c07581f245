package aclplugin_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
)

// Invalid ACLs are refused before VPP sees them, INVALID, the error naming
// each bad field; nothing else of the transaction is lost.
func TestInvalidACLs(t *testing.T) {
	e := newEnv(t)
	rng := func(l, u uint32) *vppacl.ACL_Rule_IpRule_PortRange {
		return &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: l, UpperPort: u}
	}
	for _, c := range []struct {
		name   string
		acl    *vppacl.ACL
		fields []string
		want   string
	}{
		{"bad CIDR", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/33", "")}},
			[]string{"rules[0].ip_rule.ip.source_network"}, "10.0.0.0/33"},
		{"networks of two IP versions", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/8", "2001:db8::/32")}},
			[]string{"rules[0].ip_rule.ip.source_network"}, "IP version"},
		{"port range reversed", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{{IpRule: &vppacl.ACL_Rule_IpRule{
			Udp: &vppacl.ACL_Rule_IpRule_Udp{SourcePortRange: rng(1000, 10)}}}}},
			[]string{"rules[0].ip_rule.udp.source_port_range"}, "reversed"},
		{"port above 65535", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{{IpRule: &vppacl.ACL_Rule_IpRule{
			Tcp: &vppacl.ACL_Rule_IpRule_Tcp{DestinationPortRange: rng(1, 70000), TcpFlagsMask: 256}}}}},
			[]string{"rules[0].ip_rule.tcp.destination_port_range.upper_port", "rules[0].ip_rule.tcp.tcp_flags_mask"}, "70000"},
		{"IP and MAC-IP rules mixed", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{
			ipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.0/8", ""),
			macipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.1", 32, "", ""),
		}}, []string{"rules[1].macip_rule"}, "not both"},
		{"ICMP on a non-ICMP protocol", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{{IpRule: &vppacl.ACL_Rule_IpRule{
			Ip: &vppacl.ACL_Rule_IpRule_Ip{Protocol: 6}, Icmp: &vppacl.ACL_Rule_IpRule_Icmp{}}}}},
			[]string{"rules[0].ip_rule.icmp"}, "ip.protocol is 6"},
		{"ICMPv6 with IPv4 networks", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{{IpRule: &vppacl.ACL_Rule_IpRule{
			Ip: &vppacl.ACL_Rule_IpRule_Ip{DestinationNetwork: "10.0.0.0/8"}, Icmp: &vppacl.ACL_Rule_IpRule_Icmp{Icmpv6: true}}}}},
			[]string{"rules[0].ip_rule.icmp.icmpv6"}, "IPv4"},
		{"ICMP type range reversed and above 255", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{{IpRule: &vppacl.ACL_Rule_IpRule{
			Icmp: &vppacl.ACL_Rule_IpRule_Icmp{
				IcmpTypeRange: &vppacl.ACL_Rule_IpRule_Icmp_Range{First: 9, Last: 3},
				IcmpCodeRange: &vppacl.ACL_Rule_IpRule_Icmp_Range{First: 1150, Last: 1250},
			}}}}},
			[]string{"rules[0].ip_rule.icmp.icmp_type_range", "rules[0].ip_rule.icmp.icmp_code_range.first", "rules[0].ip_rule.icmp.icmp_code_range.last"}, "reversed"},
		{"TCP and UDP in one rule", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{{IpRule: &vppacl.ACL_Rule_IpRule{
			Tcp: &vppacl.ACL_Rule_IpRule_Tcp{}, Udp: &vppacl.ACL_Rule_IpRule_Udp{}}}}},
			[]string{"rules[0].ip_rule.udp"}, "one of icmp, tcp and udp"},
		{"MAC-IP rule without an address, bad MAC", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{
			macipRule(vppacl.ACL_Rule_PERMIT, "", 0, "02:00:00:00:00", ""),
		}}, []string{"rules[0].macip_rule.source_address", "rules[0].macip_rule.source_mac_address"}, "required"},
		{"MAC-IP prefix too long", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{
			macipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.1", 33, "", ""),
		}}, []string{"rules[0].macip_rule.source_address_prefix"}, "33"},
		{"MAC-IP ACL on egress", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{
			macipRule(vppacl.ACL_Rule_PERMIT, "10.0.0.1", 32, "", ""),
		}, Interfaces: ifaces(nil, []string{"if1"})}, []string{"interfaces.egress"}, "ingress"},
		{"no rules, an interface twice", &vppacl.ACL{Name: "x", Interfaces: ifaces([]string{"if1", "if1"}, nil)},
			[]string{"rules", "interfaces.ingress[1]"}, "at least one rule"},
		{"a rule of no kind, an unknown action", &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{{Action: 7}}},
			[]string{"rules[0].action", "rules[0]"}, "ip_rule or macip_rule"},
		{"a name longer than a VPP tag", &vppacl.ACL{Name: strings.Repeat("n", 64), Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_DENY, "", "")}},
			[]string{"name"}, "VPP ACL tag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			good := &vppacl.ACL{Name: "good", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_DENY, "", "")}}
			_, err := e.commit(aclKV(c.acl), aclKV(good))
			var inv *api.InvalidValueError
			if !errors.As(err, &inv) {
				t.Fatalf("commit error %v, want an InvalidValueError", err)
			}
			for _, f := range c.fields {
				if !slices.Contains(inv.InvalidFields, f) {
					t.Errorf("invalid fields %v lack %s (error %v)", inv.InvalidFields, f, err)
				}
			}
			if len(inv.InvalidFields) != len(c.fields) {
				t.Errorf("invalid fields %v, want %v", inv.InvalidFields, c.fields)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if st := e.state(aclKey(c.acl.GetName())); st != api.ValueStateInvalid {
				t.Errorf("state %v, want INVALID", st)
			}
			if _, ok := e.acl(c.acl.GetName()); ok {
				t.Errorf("an invalid ACL reached VPP")
			}
			if st := e.state(aclKey("good")); st != api.ValueStateConfigured {
				t.Errorf("the valid ACL of the transaction is %v", st)
			}
			e.mustCommit(del(aclKey(c.acl.GetName())), del(aclKey("good")))
		})
	}
	// The key must be the value's.
	_, err := e.commit(kv{aclKey("other"), &vppacl.ACL{Name: "x", Rules: []*vppacl.ACL_Rule{ipRule(vppacl.ACL_Rule_DENY, "", "")}}})
	var inv *api.InvalidValueError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "belongs under") {
		t.Errorf("value under another key: %v", err)
	}
}

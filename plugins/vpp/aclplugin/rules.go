package aclplugin

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin/vppcalls"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
)

// The ranges that match any value.
var (
	anyPort = vppcalls.Range{First: 0, Last: 65535}
	anyICMP = vppcalls.Range{First: 0, Last: 255}
)

// isMACIP tells whether an ACL holds MAC-IP rules (Validate has checked
// that its rules are all of one kind).
func isMACIP(a *vppacl.ACL) bool {
	for _, r := range a.GetRules() {
		if r.GetMacipRule() != nil {
			return true
		}
		if r.GetIpRule() != nil {
			return false
		}
	}
	return false
}

// ipRules converts the rules of a valid IP ACL into VPP's.
func ipRules(a *vppacl.ACL) ([]vppcalls.IPRule, error) {
	out := make([]vppcalls.IPRule, 0, len(a.GetRules()))
	for k, r := range a.GetRules() {
		v, err := ipRule(r)
		if err != nil {
			return nil, fmt.Errorf("rules[%d].ip_rule: %w", k, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// ipRule is the VPP rule of a valid IP rule: unset networks match any
// address of the rule's IP version (that of the other network, else IPv6
// for ICMPv6, else IPv4), networks are masked (VPP refuses host bits),
// protocol 0 is taken from icmp, tcp or udp, an unset range matches any
// value, and a port range with lower_port alone is that port.
func ipRule(r *vppacl.ACL_Rule) (vppcalls.IPRule, error) {
	ip := r.GetIpRule()
	out := vppcalls.IPRule{Action: vppcalls.Action(r.GetAction()), SrcPort: anyPort, DstPort: anyPort}
	proto := ip.GetIp().GetProtocol()
	switch {
	case ip.GetIcmp() != nil:
		if proto == 0 {
			proto = models.ProtoICMP
			if ip.GetIcmp().GetIcmpv6() {
				proto = models.ProtoICMPv6
			}
		}
		out.SrcPort = icmpRange(ip.GetIcmp().GetIcmpTypeRange())
		out.DstPort = icmpRange(ip.GetIcmp().GetIcmpCodeRange())
	case ip.GetTcp() != nil:
		proto = models.ProtoTCP
		out.SrcPort = portRange(ip.GetTcp().GetSourcePortRange())
		out.DstPort = portRange(ip.GetTcp().GetDestinationPortRange())
		out.TCPFlagsMask = uint8(ip.GetTcp().GetTcpFlagsMask())
		out.TCPFlagsValue = uint8(ip.GetTcp().GetTcpFlagsValue())
	case ip.GetUdp() != nil:
		proto = models.ProtoUDP
		out.SrcPort = portRange(ip.GetUdp().GetSourcePortRange())
		out.DstPort = portRange(ip.GetUdp().GetDestinationPortRange())
	}
	if proto > 255 {
		return out, fmt.Errorf("ip.protocol %d is not an IP protocol number", proto)
	}
	out.Proto = uint8(proto)
	var err error
	if out.Src, err = network(ip.GetIp().GetSourceNetwork()); err != nil {
		return out, fmt.Errorf("ip.source_network: %w", err)
	}
	if out.Dst, err = network(ip.GetIp().GetDestinationNetwork()); err != nil {
		return out, fmt.Errorf("ip.destination_network: %w", err)
	}
	switch {
	case out.Src.IsValid() && out.Dst.IsValid():
		if out.Src.Addr().Is4() != out.Dst.Addr().Is4() {
			return out, fmt.Errorf("ip: source_network %s and destination_network %s are of different IP versions", out.Src, out.Dst)
		}
	case out.Src.IsValid():
		out.Dst = anyOf(out.Src.Addr().Is6())
	case out.Dst.IsValid():
		out.Src = anyOf(out.Dst.Addr().Is6())
	default:
		v6 := proto == models.ProtoICMPv6
		out.Src, out.Dst = anyOf(v6), anyOf(v6)
	}
	return out, nil
}

// network parses a CIDR network ("": invalid prefix, any).
func network(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return p, err
	}
	return p.Masked(), nil
}

func anyOf(v6 bool) netip.Prefix {
	if v6 {
		return netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	}
	return netip.PrefixFrom(netip.IPv4Unspecified(), 0)
}

func icmpRange(r *vppacl.ACL_Rule_IpRule_Icmp_Range) vppcalls.Range {
	if r == nil {
		return anyICMP
	}
	return vppcalls.Range{First: uint16(r.GetFirst()), Last: uint16(r.GetLast())}
}

func portRange(r *vppacl.ACL_Rule_IpRule_PortRange) vppcalls.Range {
	switch {
	case r == nil || (r.GetLowerPort() == 0 && r.GetUpperPort() == 0):
		return anyPort
	case r.GetUpperPort() == 0:
		return vppcalls.Range{First: uint16(r.GetLowerPort()), Last: uint16(r.GetLowerPort())}
	}
	return vppcalls.Range{First: uint16(r.GetLowerPort()), Last: uint16(r.GetUpperPort())}
}

// macipRules converts the rules of a valid MAC-IP ACL into VPP's: the
// address keeps its host bits (VPP keeps them too), unset MACs are zeros.
func macipRules(a *vppacl.ACL) ([]vppcalls.MACIPRule, error) {
	out := make([]vppcalls.MACIPRule, 0, len(a.GetRules()))
	for k, r := range a.GetRules() {
		m := r.GetMacipRule()
		addr, err := netip.ParseAddr(m.GetSourceAddress())
		if err != nil || int(m.GetSourceAddressPrefix()) > addr.BitLen() {
			return nil, fmt.Errorf("rules[%d].macip_rule: source_address %q/%d is not an address and prefix length", k, m.GetSourceAddress(), m.GetSourceAddressPrefix())
		}
		v := vppcalls.MACIPRule{Action: vppcalls.Action(r.GetAction()), Src: netip.PrefixFrom(addr, int(m.GetSourceAddressPrefix()))}
		if v.SrcMAC, err = mac(m.GetSourceMacAddress()); err != nil {
			return nil, fmt.Errorf("rules[%d].macip_rule.source_mac_address: %w", k, err)
		}
		if v.SrcMACMask, err = mac(m.GetSourceMacAddressMask()); err != nil {
			return nil, fmt.Errorf("rules[%d].macip_rule.source_mac_address_mask: %w", k, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func mac(s string) ([6]byte, error) {
	var out [6]byte
	if s == "" {
		return out, nil
	}
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return out, fmt.Errorf("%q is not a MAC address", s)
	}
	copy(out[:], hw)
	return out, nil
}

// aclFromVPP is the value of an IP ACL VPP has, in the form closest to
// VPP's rules: both networks set, ICMP, TCP and UDP as their messages
// (icmp, tcp, udp: the protocol left 0) with the ranges that do not match
// any value, other protocols as ip.protocol. A rule whose ports, ICMP
// ranges or TCP flags the model cannot hold (ports on a protocol other
// than TCP and UDP, TCP and UDP port 0 alone, ICMP ranges beyond 255) is
// shown without them: see the package doc, Limits.
func ipRulesFromVPP(rules []vppcalls.IPRule) []*vppacl.ACL_Rule {
	out := make([]*vppacl.ACL_Rule, 0, len(rules))
	for _, r := range rules {
		ip := &vppacl.ACL_Rule_IpRule{Ip: &vppacl.ACL_Rule_IpRule_Ip{
			SourceNetwork: prefixString(r.Src), DestinationNetwork: prefixString(r.Dst),
		}}
		icmpFits := r.SrcPort.Last <= 255 && r.DstPort.Last <= 255 && r.TCPFlagsMask == 0 && r.TCPFlagsValue == 0
		switch {
		case (r.Proto == models.ProtoICMP || r.Proto == models.ProtoICMPv6) && icmpFits:
			ip.Icmp = &vppacl.ACL_Rule_IpRule_Icmp{
				Icmpv6:        r.Proto == models.ProtoICMPv6,
				IcmpTypeRange: icmpRangeFromVPP(r.SrcPort),
				IcmpCodeRange: icmpRangeFromVPP(r.DstPort),
			}
		case r.Proto == models.ProtoTCP:
			ip.Tcp = &vppacl.ACL_Rule_IpRule_Tcp{
				SourcePortRange:      portRangeFromVPP(r.SrcPort),
				DestinationPortRange: portRangeFromVPP(r.DstPort),
				TcpFlagsMask:         uint32(r.TCPFlagsMask),
				TcpFlagsValue:        uint32(r.TCPFlagsValue),
			}
		case r.Proto == models.ProtoUDP:
			ip.Udp = &vppacl.ACL_Rule_IpRule_Udp{
				SourcePortRange:      portRangeFromVPP(r.SrcPort),
				DestinationPortRange: portRangeFromVPP(r.DstPort),
			}
		default:
			ip.Ip.Protocol = uint32(r.Proto)
		}
		out = append(out, &vppacl.ACL_Rule{Action: vppacl.ACL_Rule_Action(r.Action), IpRule: ip})
	}
	return out
}

func prefixString(p netip.Prefix) string {
	if !p.IsValid() {
		return ""
	}
	return p.String()
}

func icmpRangeFromVPP(r vppcalls.Range) *vppacl.ACL_Rule_IpRule_Icmp_Range {
	if r == anyICMP {
		return nil
	}
	return &vppacl.ACL_Rule_IpRule_Icmp_Range{First: uint32(r.First), Last: uint32(r.Last)}
}

func portRangeFromVPP(r vppcalls.Range) *vppacl.ACL_Rule_IpRule_PortRange {
	if r == anyPort {
		return nil
	}
	return &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: uint32(r.First), UpperPort: uint32(r.Last)}
}

// macipRulesFromVPP is the value of a MAC-IP ACL VPP has.
func macipRulesFromVPP(rules []vppcalls.MACIPRule) []*vppacl.ACL_Rule {
	out := make([]*vppacl.ACL_Rule, 0, len(rules))
	for _, r := range rules {
		m := &vppacl.ACL_Rule_MacIpRule{
			SourceMacAddress:     net.HardwareAddr(r.SrcMAC[:]).String(),
			SourceMacAddressMask: net.HardwareAddr(r.SrcMACMask[:]).String(),
		}
		if r.Src.IsValid() {
			m.SourceAddress, m.SourceAddressPrefix = r.Src.Addr().String(), uint32(r.Src.Bits())
		}
		out = append(out, &vppacl.ACL_Rule{Action: vppacl.ACL_Rule_Action(r.Action), MacipRule: m})
	}
	return out
}

// vppForm is an ACL's rules as VPP keeps them, for comparisons: two values
// whose forms are equal make the same VPP ACL.
type vppForm struct {
	macip bool
	ip    []vppcalls.IPRule
	mac   []vppcalls.MACIPRule
}

func formOf(a *vppacl.ACL) (f vppForm, err error) {
	f.macip = isMACIP(a)
	if f.macip {
		f.mac, err = macipRules(a)
	} else {
		f.ip, err = ipRules(a)
	}
	return f, err
}

func (f vppForm) equal(o vppForm) bool {
	return f.macip == o.macip && slices.Equal(f.ip, o.ip) && slices.Equal(f.mac, o.mac)
}

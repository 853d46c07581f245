package ligato_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/netagent-io/netagent/proto/ligato/configurator"
)

// originalMessages are the wire signatures of the original's messages that
// netagent declares, read from the original's published .proto files
// (ligato/configurator/configurator.proto, ligato/vpp/vpp.proto,
// ligato/linux/linux.proto, ligato/vpp/interfaces/state.proto and the
// models': interfaces, l2, l3, acl, linux interfaces, l3 and namespace): by the
// full name of netagent's message, "number name [repeated] kind" of each
// field netagent declares of the original's. netagent's messages may
// declare more (fields of later versions, its own above 100).
var originalMessages = map[string][]string{
	"ligato.configurator.Config":         {"1 vpp_config message", "2 linux_config message"},
	"ligato.configurator.Notification":   {"1 vpp_notification message", "2 linux_notification message"},
	"ligato.configurator.UpdateRequest":  {"1 update message", "2 full_resync bool", "3 wait_done bool"},
	"ligato.configurator.DeleteRequest":  {"1 delete message", "3 wait_done bool"},
	"ligato.configurator.GetResponse":    {"1 config message"},
	"ligato.configurator.DumpResponse":   {"1 dump message"},
	"ligato.configurator.NotifyRequest":  {"1 idx uint32", "2 filters repeated message"},
	"ligato.configurator.NotifyResponse": {"1 next_idx uint32", "2 notification message"},
	"ligato.vpp.ConfigData": {"10 interfaces repeated message", "30 bridge_domains repeated message",
		"40 routes repeated message", "41 arps repeated message", "20 acls repeated message"},
	"ligato.vpp.Notification":            {"1 interface message"},
	"vpp.acl.ACL":                        {"1 name string", "2 rules repeated message", "3 interfaces message"},
	"vpp.acl.ACL.Rule":                   {"1 action enum", "2 ip_rule message", "3 macip_rule message"},
	"vpp.acl.ACL.Rule.IpRule":            {"1 ip message", "2 icmp message", "3 tcp message", "4 udp message"},
	"vpp.acl.ACL.Rule.IpRule.Ip":         {"1 destination_network string", "2 source_network string", "3 protocol uint32"},
	"vpp.acl.ACL.Rule.IpRule.Icmp":       {"1 icmpv6 bool", "2 icmp_code_range message", "3 icmp_type_range message"},
	"vpp.acl.ACL.Rule.IpRule.Icmp.Range": {"1 first uint32", "2 last uint32"},
	"vpp.acl.ACL.Rule.IpRule.PortRange":  {"1 lower_port uint32", "2 upper_port uint32"},
	"vpp.acl.ACL.Rule.IpRule.Tcp": {"1 destination_port_range message", "2 source_port_range message",
		"3 tcp_flags_mask uint32", "4 tcp_flags_value uint32"},
	"vpp.acl.ACL.Rule.IpRule.Udp": {"1 destination_port_range message", "2 source_port_range message"},
	"vpp.acl.ACL.Rule.MacIpRule": {"1 source_address string", "2 source_address_prefix uint32",
		"3 source_mac_address string", "4 source_mac_address_mask string"},
	"vpp.acl.ACL.Interfaces":  {"1 egress repeated string", "2 ingress repeated string"},
	"ligato.linux.ConfigData": {"10 interfaces repeated message", "20 arp_entries repeated message", "21 routes repeated message"},
	"ligato.vpp.interfaces.InterfaceState": {"1 name string", "2 internal_name string", "3 type enum", "4 if_index uint32",
		"5 admin_status enum", "6 oper_status enum", "7 last_change int64", "8 phys_address string", "9 speed uint64",
		"10 mtu uint32", "11 duplex enum"},
	"ligato.vpp.interfaces.InterfaceNotification": {"1 type enum", "2 state message"},
	"vpp.interfaces.Interface": {"1 name string", "2 type enum", "3 enabled bool", "4 phys_address string",
		"5 ip_addresses repeated string", "6 vrf uint32", "7 set_dhcp_client bool", "8 mtu uint32", "9 unnumbered message",
		"100 sub message", "101 memif message", "102 afpacket message", "103 tap message", "104 vxlan message"},
	"vpp.interfaces.Interface.Unnumbered": {"1 interface_with_ip string"},
	"vpp.interfaces.SubInterface":         {"1 parent_name string", "2 sub_id uint32"},
	"vpp.interfaces.MemifLink": {"1 mode enum", "2 master bool", "3 id uint32", "4 socket_filename string", "5 secret string",
		"6 ring_size uint32", "7 buffer_size uint32", "8 rx_queues uint32", "9 tx_queues uint32"},
	"vpp.interfaces.AfpacketLink": {"1 host_if_name string", "2 linux_interface string"},
	"vpp.interfaces.TapLink": {"1 version uint32", "2 host_if_name string", "3 to_microservice string",
		"4 rx_ring_size uint32", "5 tx_ring_size uint32", "6 enable_gso bool", "7 enable_tunnel bool"},
	"vpp.interfaces.VxlanLink": {"1 src_address string", "2 dst_address string", "3 vni uint32", "4 multicast string",
		"5 gpe message"},
	"vpp.interfaces.VxlanLink.Gpe": {"1 decap_vrf_id uint32", "2 protocol enum"},
	"vpp.l2.BridgeDomain": {"1 name string", "2 flood bool", "3 unknown_unicast_flood bool", "4 forward bool", "5 learn bool",
		"6 arp_termination bool", "7 mac_age uint32", "100 interfaces repeated message", "102 arp_termination_table repeated message"},
	"vpp.l2.BridgeDomain.Interface":           {"1 name string", "2 bridged_virtual_interface bool", "3 split_horizon_group uint32"},
	"vpp.l2.BridgeDomain.ArpTerminationEntry": {"1 ip_address string", "2 phys_address string"},
	"vpp.l3.Route": {"10 type enum", "1 vrf_id uint32", "3 dst_network string", "4 next_hop_addr string",
		"5 outgoing_interface string", "6 weight uint32", "7 preference uint32", "8 via_vrf_id uint32"},
	"vpp.l3.ARPEntry": {"1 interface string", "2 ip_address string", "3 phys_address string", "4 static bool"},
	"linux.interfaces.Interface": {"1 name string", "2 type enum", "3 namespace message", "4 host_if_name string",
		"5 enabled bool", "6 ip_addresses repeated string", "7 phys_address string", "8 mtu uint32", "9 link_only bool",
		"20 veth message", "21 tap message"},
	"linux.interfaces.VethLink":    {"1 peer_if_name string", "2 rx_checksum_offloading enum", "3 tx_checksum_offloading enum"},
	"linux.interfaces.TapLink":     {"1 vpp_tap_if_name string"},
	"linux.l3.Route":               {"1 outgoing_interface string", "2 scope enum", "3 dst_network string", "4 gw_addr string", "5 metric uint32"},
	"linux.l3.ARPEntry":            {"1 interface string", "2 ip_address string", "3 hw_address string"},
	"linux.namespace.NetNamespace": {"1 type enum", "2 reference string"},
}

// originalEnums are the original's enums' values, likewise.
var originalEnums = map[string][]string{
	"vpp.interfaces.Interface.Type": {"0 UNDEFINED_TYPE", "1 SUB_INTERFACE", "2 SOFTWARE_LOOPBACK", "3 DPDK", "4 MEMIF",
		"5 TAP", "6 AF_PACKET", "7 VXLAN_TUNNEL", "8 IPSEC_TUNNEL", "9 VMXNET3_INTERFACE", "10 BOND_INTERFACE",
		"11 GRE_TUNNEL", "12 GTPU_TUNNEL", "13 IPIP_TUNNEL", "14 WIREGUARD_TUNNEL"},
	"vpp.interfaces.MemifLink.MemifMode":                    {"0 ETHERNET", "1 IP", "2 PUNT_INJECT"},
	"vpp.interfaces.VxlanLink.Gpe.Protocol":                 {"0 UNKNOWN", "1 IP4", "2 IP6", "3 ETHERNET", "4 NSH"},
	"vpp.l3.Route.RouteType":                                {"0 INTRA_VRF", "1 INTER_VRF", "2 DROP"},
	"linux.interfaces.Interface.Type":                       {"0 UNDEFINED", "1 VETH", "2 TAP_TO_VPP", "3 LOOPBACK", "4 EXISTING"},
	"linux.interfaces.VethLink.ChecksumOffloading":          {"0 CHKSM_OFFLOAD_DEFAULT", "1 CHKSM_OFFLOAD_ENABLED", "2 CHKSM_OFFLOAD_DISABLED"},
	"vpp.acl.ACL.Rule.Action":                               {"0 DENY", "1 PERMIT", "2 REFLECT"},
	"linux.l3.Route.Scope":                                  {"0 UNDEFINED", "1 GLOBAL", "2 SITE", "3 LINK", "4 HOST"},
	"linux.namespace.NetNamespace.ReferenceType":            {"0 UNDEFINED", "1 NSID", "2 PID", "3 FD", "4 MICROSERVICE"},
	"ligato.vpp.interfaces.InterfaceState.Status":           {"0 UNKNOWN_STATUS", "1 UP", "2 DOWN", "3 DELETED"},
	"ligato.vpp.interfaces.InterfaceState.Duplex":           {"0 UNKNOWN_DUPLEX", "1 HALF", "2 FULL"},
	"ligato.vpp.interfaces.InterfaceNotification.NotifType": {"0 UNKNOWN", "1 UPDOWN", "2 COUNTERS"},
}

// netagent's messages and enums have the original's numbers, names and
// wire types: the bytes of either side mean the same to the other.
func TestWireCompatibleWithTheOriginal(t *testing.T) {
	for name, want := range originalMessages {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		fields := d.(protoreflect.MessageDescriptor).Fields()
		for _, w := range want {
			var num int
			var fieldName string
			if _, err := fmt.Sscanf(w, "%d %s", &num, &fieldName); err != nil {
				t.Fatal(err)
			}
			fd := fields.ByNumber(protoreflect.FieldNumber(num))
			if fd == nil {
				t.Errorf("%s has no field %d (%s)", name, num, w)
				continue
			}
			if got := signature(fd); got != w {
				t.Errorf("%s field %d: %q, the original's is %q", name, num, got, w)
			}
		}
	}
	for name, want := range originalEnums {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		values := d.(protoreflect.EnumDescriptor).Values()
		for _, w := range want {
			var num int
			var valueName string
			if _, err := fmt.Sscanf(w, "%d %s", &num, &valueName); err != nil {
				t.Fatal(err)
			}
			if v := values.ByNumber(protoreflect.EnumNumber(num)); v == nil || string(v.Name()) != valueName {
				t.Errorf("%s: value %d is %v, the original's is %s", name, num, v, valueName)
			}
		}
	}
}

func signature(fd protoreflect.FieldDescriptor) string {
	parts := []string{fmt.Sprint(fd.Number()), string(fd.Name())}
	if fd.IsList() {
		parts = append(parts, "repeated")
	}
	return strings.Join(append(parts, fd.Kind().String()), " ")
}

// The service has the original's name and methods, with its messages.
func TestServiceIsTheOriginals(t *testing.T) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName("ligato.configurator.ConfiguratorService")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	methods := d.(protoreflect.ServiceDescriptor).Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		got = append(got, fmt.Sprintf("%s(%s) %s stream=%v", m.Name(), m.Input().FullName(), m.Output().FullName(), m.IsStreamingServer()))
	}
	slices.Sort(got)
	want := []string{
		"Delete(ligato.configurator.DeleteRequest) ligato.configurator.DeleteResponse stream=false",
		"Dump(ligato.configurator.DumpRequest) ligato.configurator.DumpResponse stream=false",
		"Get(ligato.configurator.GetRequest) ligato.configurator.GetResponse stream=false",
		"Notify(ligato.configurator.NotifyRequest) ligato.configurator.NotifyResponse stream=true",
		"Update(ligato.configurator.UpdateRequest) ligato.configurator.UpdateResponse stream=false",
	}
	if !slices.Equal(got, want) {
		t.Errorf("methods:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

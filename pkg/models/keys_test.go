package models_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// keyCase is a value, the key written by hand from the templates of
// shared/spec/models.md, and the parts ParseKey must find in it.
type keyCase struct {
	name  string
	model *models.Model
	value proto.Message
	key   string
	parts models.KeyParts
}

var keyCases = []keyCase{
	// --- VPP interfaces: config/vpp/v2/interfaces/<name>
	{
		name:  "vpp interface models.md example",
		model: models.VPPInterface,
		value: &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.0.0.1/24"}},
		key:   "config/vpp/v2/interfaces/loop1",
		parts: models.KeyParts{"name": "loop1"},
	},
	{
		name:  "vpp interface DPDK name with slashes",
		model: models.VPPInterface,
		value: &vppif.Interface{Name: "GigabitEthernet0/8/0", Type: vppif.Interface_DPDK, Enabled: true},
		key:   "config/vpp/v2/interfaces/GigabitEthernet0/8/0",
		parts: models.KeyParts{"name": "GigabitEthernet0/8/0"},
	},
	{
		name:  "vpp sub-interface name with slashes and dot",
		model: models.VPPInterface,
		value: &vppif.Interface{
			Name: "GigabitEthernet0/8/0.100", Type: vppif.Interface_SUB_INTERFACE,
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "GigabitEthernet0/8/0", SubId: 100}},
		},
		key:   "config/vpp/v2/interfaces/GigabitEthernet0/8/0.100",
		parts: models.KeyParts{"name": "GigabitEthernet0/8/0.100"},
	},
	{
		name:  "vpp memif interface",
		model: models.VPPInterface,
		value: &vppif.Interface{
			Name: "memif1/1", Type: vppif.Interface_MEMIF,
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Id: 1, Master: true}},
		},
		key:   "config/vpp/v2/interfaces/memif1/1",
		parts: models.KeyParts{"name": "memif1/1"},
	},
	{
		name:  "vpp interface name eth0.100",
		model: models.VPPInterface,
		value: &vppif.Interface{Name: "eth0.100", Type: vppif.Interface_AF_PACKET, Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: "eth0.100"}}},
		key:   "config/vpp/v2/interfaces/eth0.100",
		parts: models.KeyParts{"name": "eth0.100"},
	},

	// --- VPP bridge domains: config/vpp/l2/v2/bridge-domain/<name>
	{
		name:  "bridge domain",
		model: models.VPPBridgeDomain,
		value: &vppl2.BridgeDomain{Name: "bd1", Flood: true, Learn: true},
		key:   "config/vpp/l2/v2/bridge-domain/bd1",
		parts: models.KeyParts{"name": "bd1"},
	},
	{
		name:  "bridge domain with members, name with slash and dot",
		model: models.VPPBridgeDomain,
		value: &vppl2.BridgeDomain{
			Name: "tenant-a/bd.10",
			Interfaces: []*vppl2.BridgeDomain_Interface{
				{Name: "loop1", BridgedVirtualInterface: true},
				{Name: "GigabitEthernet0/8/0.100"},
			},
		},
		key:   "config/vpp/l2/v2/bridge-domain/tenant-a/bd.10",
		parts: models.KeyParts{"name": "tenant-a/bd.10"},
	},
	{
		name:  "bridge domain with arp termination",
		model: models.VPPBridgeDomain,
		value: &vppl2.BridgeDomain{
			Name: "BD_2", ArpTermination: true,
			ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{{IpAddress: "2001:db8::10", PhysAddress: "02:00:00:00:00:0a"}},
		},
		key:   "config/vpp/l2/v2/bridge-domain/BD_2",
		parts: models.KeyParts{"name": "BD_2"},
	},

	// --- VPP routes:
	// config/vpp/v2/route/[if/<outgoing_interface>/]vrf/<vrf_id>/dst/<ip>/<prefix-len>[/gw/<next_hop_addr>]
	{
		name:  "vpp drop route (without interface and next hop)",
		model: models.VPPRoute,
		value: &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/8"},
		key:   "config/vpp/v2/route/vrf/0/dst/10.0.0.0/8",
		parts: models.KeyParts{"vrf_id": "0", "dst_network": "10.0.0.0/8"},
	},
	{
		name:  "vpp default route with next hop only",
		model: models.VPPRoute,
		value: &vppl3.Route{DstNetwork: "0.0.0.0/0", NextHopAddr: "192.168.1.1"},
		key:   "config/vpp/v2/route/vrf/0/dst/0.0.0.0/0/gw/192.168.1.1",
		parts: models.KeyParts{"vrf_id": "0", "dst_network": "0.0.0.0/0", "next_hop_addr": "192.168.1.1"},
	},
	{
		name:  "vpp route with interface only, non-zero vrf",
		model: models.VPPRoute,
		value: &vppl3.Route{VrfId: 5, DstNetwork: "172.16.0.0/12", OutgoingInterface: "memif1"},
		key:   "config/vpp/v2/route/if/memif1/vrf/5/dst/172.16.0.0/12",
		parts: models.KeyParts{"outgoing_interface": "memif1", "vrf_id": "5", "dst_network": "172.16.0.0/12"},
	},
	{
		name:  "vpp route with interface with slashes and next hop",
		model: models.VPPRoute,
		value: &vppl3.Route{
			VrfId: 1, DstNetwork: "10.1.0.0/16", NextHopAddr: "192.168.1.1",
			OutgoingInterface: "GigabitEthernet0/8/0", Weight: 5, Preference: 10,
		},
		key: "config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/1/dst/10.1.0.0/16/gw/192.168.1.1",
		parts: models.KeyParts{
			"outgoing_interface": "GigabitEthernet0/8/0", "vrf_id": "1",
			"dst_network": "10.1.0.0/16", "next_hop_addr": "192.168.1.1",
		},
	},
	{
		name:  "vpp route destination with host bits, largest vrf",
		model: models.VPPRoute,
		value: &vppl3.Route{VrfId: 4294967295, DstNetwork: "192.168.1.77/24", NextHopAddr: "10.0.0.1", OutgoingInterface: "eth0.100"},
		key:   "config/vpp/v2/route/if/eth0.100/vrf/4294967295/dst/192.168.1.0/24/gw/10.0.0.1",
		parts: models.KeyParts{"outgoing_interface": "eth0.100", "vrf_id": "4294967295", "dst_network": "192.168.1.0/24", "next_hop_addr": "10.0.0.1"},
	},
	{
		name:  "vpp host route /32",
		model: models.VPPRoute,
		value: &vppl3.Route{DstNetwork: "10.0.0.1/32", OutgoingInterface: "loop1"},
		key:   "config/vpp/v2/route/if/loop1/vrf/0/dst/10.0.0.1/32",
		parts: models.KeyParts{"outgoing_interface": "loop1", "vrf_id": "0", "dst_network": "10.0.0.1/32"},
	},
	{
		name:  "vpp IPv6 route with interface and next hop",
		model: models.VPPRoute,
		value: &vppl3.Route{VrfId: 10, DstNetwork: "2001:db8:0:1::/64", NextHopAddr: "fe80::1", OutgoingInterface: "eth0.100"},
		key:   "config/vpp/v2/route/if/eth0.100/vrf/10/dst/2001:db8:0:1::/64/gw/fe80::1",
		parts: models.KeyParts{"outgoing_interface": "eth0.100", "vrf_id": "10", "dst_network": "2001:db8:0:1::/64", "next_hop_addr": "fe80::1"},
	},
	{
		name:  "vpp IPv6 route non-canonical value with host bits",
		model: models.VPPRoute,
		value: &vppl3.Route{VrfId: 3, DstNetwork: "2001:DB8:0:1:0:0:0:5/64", NextHopAddr: "2001:DB8:0:0::0:1"},
		key:   "config/vpp/v2/route/vrf/3/dst/2001:db8:0:1::/64/gw/2001:db8::1",
		parts: models.KeyParts{"vrf_id": "3", "dst_network": "2001:db8:0:1::/64", "next_hop_addr": "2001:db8::1"},
	},
	{
		name:  "vpp IPv6 default drop route",
		model: models.VPPRoute,
		value: &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "::/0"},
		key:   "config/vpp/v2/route/vrf/0/dst/::/0",
		parts: models.KeyParts{"vrf_id": "0", "dst_network": "::/0"},
	},

	// --- VPP ARP: config/vpp/v2/arp/<interface>/<ip_address>
	{
		name:  "vpp arp",
		model: models.VPPARP,
		value: &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02", Static: true},
		key:   "config/vpp/v2/arp/loop1/10.0.0.2",
		parts: models.KeyParts{"interface": "loop1", "ip_address": "10.0.0.2"},
	},
	{
		name:  "vpp arp IPv6 on interface with slashes",
		model: models.VPPARP,
		value: &vppl3.ARPEntry{Interface: "GigabitEthernet0/8/0", IpAddress: "2001:db8::2", PhysAddress: "02:00:00:00:00:03"},
		key:   "config/vpp/v2/arp/GigabitEthernet0/8/0/2001:db8::2",
		parts: models.KeyParts{"interface": "GigabitEthernet0/8/0", "ip_address": "2001:db8::2"},
	},
	{
		name:  "vpp arp non-canonical IPv6 value on eth0.100",
		model: models.VPPARP,
		value: &vppl3.ARPEntry{Interface: "eth0.100", IpAddress: "FE80:0:0::A", PhysAddress: "02:00:00:00:00:04"},
		key:   "config/vpp/v2/arp/eth0.100/fe80::a",
		parts: models.KeyParts{"interface": "eth0.100", "ip_address": "fe80::a"},
	},

	// --- Linux interfaces: config/linux/interfaces/v2/interface/<name>
	{
		name:  "linux veth",
		model: models.LinuxInterface,
		value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2"}}},
		key:   "config/linux/interfaces/v2/interface/veth1",
		parts: models.KeyParts{"name": "veth1"},
	},
	{
		name:  "linux interface eth0.100",
		model: models.LinuxInterface,
		value: &linuxif.Interface{Name: "eth0.100", Type: linuxif.Interface_EXISTING, Enabled: true},
		key:   "config/linux/interfaces/v2/interface/eth0.100",
		parts: models.KeyParts{"name": "eth0.100"},
	},
	{
		name:  "linux interface in a namespace",
		model: models.LinuxInterface,
		value: &linuxif.Interface{
			Name: "ns1-eth0", Type: linuxif.Interface_EXISTING, HostIfName: "eth0",
			Namespace: &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: "ns1"},
		},
		key:   "config/linux/interfaces/v2/interface/ns1-eth0",
		parts: models.KeyParts{"name": "ns1-eth0"},
	},
	{
		name:  "linux tap to vpp",
		model: models.LinuxInterface,
		value: &linuxif.Interface{Name: "tap-linux1", Type: linuxif.Interface_TAP_TO_VPP, HostIfName: "tap1", Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap1"}}},
		key:   "config/linux/interfaces/v2/interface/tap-linux1",
		parts: models.KeyParts{"name": "tap-linux1"},
	},

	// --- Linux routes: config/linux/l3/v2/route/<dst ip>/<prefix-len>/<outgoing_interface>
	{
		name:  "linux route",
		model: models.LinuxRoute,
		value: &linuxl3.Route{OutgoingInterface: "veth1", Scope: linuxl3.Route_GLOBAL, DstNetwork: "10.20.0.0/16", GwAddr: "10.10.0.254", Metric: 100},
		key:   "config/linux/l3/v2/route/10.20.0.0/16/veth1",
		parts: models.KeyParts{"dst_network": "10.20.0.0/16", "outgoing_interface": "veth1"},
	},
	{
		name:  "linux route host bits, interface with slash",
		model: models.LinuxRoute,
		value: &linuxl3.Route{OutgoingInterface: "uplink/eth0", DstNetwork: "10.20.3.4/16"},
		key:   "config/linux/l3/v2/route/10.20.0.0/16/uplink/eth0",
		parts: models.KeyParts{"dst_network": "10.20.0.0/16", "outgoing_interface": "uplink/eth0"},
	},
	{
		name:  "linux IPv6 route, non-canonical value, interface eth0.100",
		model: models.LinuxRoute,
		value: &linuxl3.Route{OutgoingInterface: "eth0.100", Scope: linuxl3.Route_LINK, DstNetwork: "2001:DB8:0::/32", GwAddr: "2001:db8::1"},
		key:   "config/linux/l3/v2/route/2001:db8::/32/eth0.100",
		parts: models.KeyParts{"dst_network": "2001:db8::/32", "outgoing_interface": "eth0.100"},
	},
	{
		name:  "linux default route",
		model: models.LinuxRoute,
		value: &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "0.0.0.0/0", GwAddr: "192.0.2.1"},
		key:   "config/linux/l3/v2/route/0.0.0.0/0/eth0",
		parts: models.KeyParts{"dst_network": "0.0.0.0/0", "outgoing_interface": "eth0"},
	},

	// --- Linux ARP: config/linux/l3/v2/arp/<interface>/<ip_address>
	{
		name:  "linux arp",
		model: models.LinuxARP,
		value: &linuxl3.ARPEntry{Interface: "veth1", IpAddress: "10.10.0.2", HwAddress: "02:00:00:00:01:02"},
		key:   "config/linux/l3/v2/arp/veth1/10.10.0.2",
		parts: models.KeyParts{"interface": "veth1", "ip_address": "10.10.0.2"},
	},
	{
		name:  "linux arp IPv6 on interface with slash",
		model: models.LinuxARP,
		value: &linuxl3.ARPEntry{Interface: "uplink/eth0", IpAddress: "2001:db8::abcd", HwAddress: "02:00:00:00:01:03"},
		key:   "config/linux/l3/v2/arp/uplink/eth0/2001:db8::abcd",
		parts: models.KeyParts{"interface": "uplink/eth0", "ip_address": "2001:db8::abcd"},
	},
	{
		name:  "linux arp non-canonical IPv6 on eth0.100",
		model: models.LinuxARP,
		value: &linuxl3.ARPEntry{Interface: "eth0.100", IpAddress: "FE80::0001", HwAddress: "02:00:00:00:01:04"},
		key:   "config/linux/l3/v2/arp/eth0.100/fe80::1",
		parts: models.KeyParts{"interface": "eth0.100", "ip_address": "fe80::1"},
	},
	// --- VPP VRF tables: config/vpp/v2/vrf-table/id/<id>/protocol/<IPV4|IPV6>
	{
		name:  "vrf table IPv4 (protocol left out)",
		model: models.VPPVrfTable,
		value: &vppl3.VrfTable{Id: 3},
		key:   "config/vpp/v2/vrf-table/id/3/protocol/IPV4",
		parts: models.KeyParts{"id": "3", "protocol": "IPV4"},
	},
	{
		name:  "vrf table IPv6 with a label",
		model: models.VPPVrfTable,
		value: &vppl3.VrfTable{Id: 3, Protocol: vppl3.VrfTable_IPV6, Label: "vrf3-IPv6"},
		key:   "config/vpp/v2/vrf-table/id/3/protocol/IPV6",
		parts: models.KeyParts{"id": "3", "protocol": "IPV6"},
	},
	{
		name:  "vrf table 0",
		model: models.VPPVrfTable,
		value: &vppl3.VrfTable{Label: "mainVRF"},
		key:   "config/vpp/v2/vrf-table/id/0/protocol/IPV4",
		parts: models.KeyParts{"id": "0", "protocol": "IPV4"},
	},
	// --- VPP L2 cross-connects: config/vpp/l2/v2/xconnect/<receive_interface>
	{
		name:  "xconnect of the original's docs",
		model: models.VPPXConnect,
		value: &vppl2.XConnectPair{ReceiveInterface: "if1", TransmitInterface: "if2"},
		key:   "config/vpp/l2/v2/xconnect/if1",
		parts: models.KeyParts{"receive_interface": "if1"},
	},
	{
		name:  "xconnect from a DPDK name with slashes",
		model: models.VPPXConnect,
		value: &vppl2.XConnectPair{ReceiveInterface: "GigabitEthernet0/8/0", TransmitInterface: "memif1/1"},
		key:   "config/vpp/l2/v2/xconnect/GigabitEthernet0/8/0",
		parts: models.KeyParts{"receive_interface": "GigabitEthernet0/8/0"},
	},
	{
		name:  "xconnect to itself",
		model: models.VPPXConnect,
		value: &vppl2.XConnectPair{ReceiveInterface: "memif1/1", TransmitInterface: "memif1/1"},
		key:   "config/vpp/l2/v2/xconnect/memif1/1",
		parts: models.KeyParts{"receive_interface": "memif1/1"},
	},
	// --- VPP L2 FIB entries: config/vpp/l2/v2/fib/<bridge_domain>/mac/<phys_address>
	{
		name:  "fib entry of the original's docs (upper-case MAC in the value)",
		model: models.VPPL2FIB,
		value: &vppl2.FIBEntry{PhysAddress: "62:89:C6:A3:6D:5C", BridgeDomain: "bd1", OutgoingInterface: "tap1", StaticConfig: true},
		key:   "config/vpp/l2/v2/fib/bd1/mac/62:89:c6:a3:6d:5c",
		parts: models.KeyParts{"bridge_domain": "bd1", "phys_address": "62:89:c6:a3:6d:5c"},
	},
	{
		name:  "fib drop entry in a bridge domain with slashes",
		model: models.VPPL2FIB,
		value: &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:01", BridgeDomain: "tenant/a/bd", Action: vppl2.FIBEntry_DROP},
		key:   "config/vpp/l2/v2/fib/tenant/a/bd/mac/02:00:00:00:00:01",
		parts: models.KeyParts{"bridge_domain": "tenant/a/bd", "phys_address": "02:00:00:00:00:01"},
	},
	{
		name:  "fib BVI entry in a bridge domain named mac",
		model: models.VPPL2FIB,
		value: &vppl2.FIBEntry{PhysAddress: "de:ad:00:00:00:01", BridgeDomain: "x/mac/y", OutgoingInterface: "loop0", BridgedVirtualInterface: true},
		key:   "config/vpp/l2/v2/fib/x/mac/y/mac/de:ad:00:00:00:01",
		parts: models.KeyParts{"bridge_domain": "x/mac/y", "phys_address": "de:ad:00:00:00:01"},
	},

	// --- VPP ACL: config/vpp/acls/v2/acl/<name>
	{
		name:  "vpp acl",
		model: models.VPPACL,
		value: &vppacl.ACL{Name: "acl1", Rules: []*vppacl.ACL_Rule{{IpRule: &vppacl.ACL_Rule_IpRule{}}}},
		key:   "config/vpp/acls/v2/acl/acl1",
		parts: models.KeyParts{"name": "acl1"},
	},
	{
		name:  "vpp MAC-IP acl with a slash",
		model: models.VPPACL,
		value: &vppacl.ACL{Name: "in/macip", Rules: []*vppacl.ACL_Rule{{MacipRule: &vppacl.ACL_Rule_MacIpRule{SourceAddress: "10.0.0.1"}}}},
		key:   "config/vpp/acls/v2/acl/in/macip",
		parts: models.KeyParts{"name": "in/macip"},
	},
	{
		name:  "vpp acl named like a number",
		model: models.VPPACL,
		value: &vppacl.ACL{Name: "10-allow-dns", Rules: []*vppacl.ACL_Rule{{IpRule: &vppacl.ACL_Rule_IpRule{Udp: &vppacl.ACL_Rule_IpRule_Udp{}}}}},
		key:   "config/vpp/acls/v2/acl/10-allow-dns",
		parts: models.KeyParts{"name": "10-allow-dns"},
	},
}

func TestKeys(t *testing.T) {
	perModel := map[*models.Model]int{}
	for _, c := range keyCases {
		perModel[c.model]++
		t.Run(c.name, func(t *testing.T) {
			key, err := c.model.Key(c.value)
			if err != nil {
				t.Fatalf("Key: %v", err)
			}
			if key != c.key {
				t.Errorf("Key = %q, want %q", key, c.key)
			}
			if rkey, err := models.Default.Key(c.value); err != nil || rkey != c.key {
				t.Errorf("Default.Key = %q, %v; want %q", rkey, err, c.key)
			}
			if m := models.Default.ModelOfMessage(c.value); m != c.model {
				t.Errorf("ModelOfMessage = %v, want %s", m, c.model.Name)
			}

			m, parts, err := models.Default.ParseKey(c.key)
			if err != nil {
				t.Fatalf("Default.ParseKey(%q): %v", c.key, err)
			}
			if m != c.model {
				t.Errorf("Default.ParseKey(%q): model %s, want %s", c.key, m.Name, c.model.Name)
			}
			if !reflect.DeepEqual(parts, c.parts) {
				t.Errorf("Default.ParseKey(%q) parts = %v, want %v", c.key, parts, c.parts)
			}
			parts, err = c.model.ParseKey(c.key)
			if err != nil || !reflect.DeepEqual(parts, c.parts) {
				t.Errorf("Model.ParseKey(%q) = %v, %v; want %v", c.key, parts, err, c.parts)
			}
			if m := models.Default.ModelOfKey(c.key); m != c.model {
				t.Errorf("ModelOfKey(%q) = %v, want %s", c.key, m, c.model.Name)
			}
			if err := c.model.CheckKey(c.key, c.value); err != nil {
				t.Errorf("CheckKey(%q): %v", c.key, err)
			}
		})
	}
	for _, m := range models.Builtin() {
		if perModel[m] < 3 {
			t.Errorf("model %s has %d key cases, want at least 3", m.Name, perModel[m])
		}
	}
}

// TestKeyOtherModels: a key of one model is not a key of another.
func TestKeyOtherModels(t *testing.T) {
	for _, c := range keyCases {
		for _, m := range models.Builtin() {
			if m == c.model {
				continue
			}
			if _, err := m.ParseKey(c.key); err == nil {
				t.Errorf("%s.ParseKey(%q) succeeded, the key is of %s", m.Name, c.key, c.model.Name)
			}
			if err := m.CheckKey(c.key, c.value); err == nil {
				t.Errorf("%s.CheckKey(%q) succeeded for a %s value", m.Name, c.key, c.model.Name)
			}
		}
	}
}

// TestModelsMDExample is the example of shared/spec/models.md, byte for byte.
func TestModelsMDExample(t *testing.T) {
	const (
		etcdKey  = "/vnf-agent/vpp1/config/vpp/v2/interfaces/loop1"
		modelKey = "config/vpp/v2/interfaces/loop1"
		value    = `{"name":"loop1","type":"SOFTWARE_LOOPBACK","enabled":true,"ip_addresses":["10.0.0.1/24"]}`
	)
	v := &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.0.0.1/24"}}
	key, err := models.VPPInterface.Key(v)
	if err != nil || key != modelKey {
		t.Fatalf("Key = %q, %v; want %q", key, err, modelKey)
	}
	if got := models.EtcdKey(models.DefaultLabel, key); got != etcdKey {
		t.Errorf("EtcdKey = %q, want %q", got, etcdKey)
	}
	data, err := models.MarshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != value {
		t.Errorf("MarshalJSON =\n%s\nwant\n%s", data, value)
	}
	ekey, edata, err := models.Default.EncodeValue(v)
	if err != nil || ekey != modelKey || string(edata) != value {
		t.Errorf("EncodeValue = %q, %s, %v; want %q, %s", ekey, edata, err, modelKey, value)
	}

	label, mk, err := models.ParseEtcdKey(etcdKey)
	if err != nil || label != "vpp1" || mk != modelKey {
		t.Fatalf("ParseEtcdKey = %q, %q, %v", label, mk, err)
	}
	m, decoded, err := models.Default.DecodeValue(mk, []byte(value))
	if err != nil {
		t.Fatalf("DecodeValue: %v", err)
	}
	if m != models.VPPInterface || !proto.Equal(decoded, v) {
		t.Errorf("DecodeValue = %s, %v; want %s, %v", m.Name, decoded, models.VPPInterface.Name, v)
	}
}

func TestEtcdKey(t *testing.T) {
	if models.DefaultLabel != "vpp1" {
		t.Errorf("DefaultLabel = %q, want vpp1", models.DefaultLabel)
	}
	if got := models.EtcdKeyPrefix("vpp1"); got != "/vnf-agent/vpp1/" {
		t.Errorf("EtcdKeyPrefix(vpp1) = %q", got)
	}
	cases := []struct {
		label, modelKey, etcdKey string
	}{
		{"vpp1", "config/vpp/v2/interfaces/loop1", "/vnf-agent/vpp1/config/vpp/v2/interfaces/loop1"},
		{"vpp1", "config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/1/dst/10.1.0.0/16/gw/192.168.1.1",
			"/vnf-agent/vpp1/config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/1/dst/10.1.0.0/16/gw/192.168.1.1"},
		{"agent-2.rack_7", "config/linux/l3/v2/route/2001:db8::/32/uplink/eth0",
			"/vnf-agent/agent-2.rack_7/config/linux/l3/v2/route/2001:db8::/32/uplink/eth0"},
		{"vpp2", "config/vpp/l2/v2/bridge-domain/bd1", "/vnf-agent/vpp2/config/vpp/l2/v2/bridge-domain/bd1"},
	}
	for _, c := range cases {
		if got := models.EtcdKey(c.label, c.modelKey); got != c.etcdKey {
			t.Errorf("EtcdKey(%q, %q) = %q, want %q", c.label, c.modelKey, got, c.etcdKey)
		}
		if !strings.HasPrefix(c.etcdKey, models.EtcdKeyPrefix(c.label)) {
			t.Errorf("%q does not start with EtcdKeyPrefix(%q) = %q", c.etcdKey, c.label, models.EtcdKeyPrefix(c.label))
		}
		label, mk, err := models.ParseEtcdKey(c.etcdKey)
		if err != nil || label != c.label || mk != c.modelKey {
			t.Errorf("ParseEtcdKey(%q) = %q, %q, %v; want %q, %q", c.etcdKey, label, mk, err, c.label, c.modelKey)
		}
	}
}

func TestParseEtcdKeyErrors(t *testing.T) {
	for _, k := range []string{
		"",
		"config/vpp/v2/interfaces/loop1",
		"vnf-agent/vpp1/config/vpp/v2/interfaces/loop1",
		"/vnf-agents/vpp1/config/vpp/v2/interfaces/loop1",
		"/other/vpp1/config/vpp/v2/interfaces/loop1",
		"/vnf-agent/",
		"/vnf-agent/vpp1",
		"/vnf-agent/vpp1/",
		"/vnf-agent//config/vpp/v2/interfaces/loop1",
	} {
		label, mk, err := models.ParseEtcdKey(k)
		var ke *models.KeyError
		if !errors.As(err, &ke) {
			t.Errorf("ParseEtcdKey(%q) = %q, %q, %v; want a *KeyError", k, label, mk, err)
			continue
		}
		if ke.Key != k {
			t.Errorf("ParseEtcdKey(%q): KeyError.Key = %q", k, ke.Key)
		}
		if label != "" || mk != "" {
			t.Errorf("ParseEtcdKey(%q) returned %q, %q with an error", k, label, mk)
		}
	}
}

func TestModelOfKey(t *testing.T) {
	for _, c := range []struct {
		key   string
		model *models.Model
	}{
		{"config/vpp/v2/interfaces/loop1", models.VPPInterface},
		{"config/vpp/v2/interfaces/GigabitEthernet0/8/0", models.VPPInterface},
		{"config/vpp/l2/v2/bridge-domain/bd1", models.VPPBridgeDomain},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8", models.VPPRoute},
		{"config/vpp/v2/route/if/loop1/vrf/0/dst/10.0.0.0/8/gw/10.0.0.1", models.VPPRoute},
		{"config/vpp/v2/arp/loop1/10.0.0.2", models.VPPARP},
		{"config/linux/interfaces/v2/interface/veth1", models.LinuxInterface},
		{"config/linux/l3/v2/route/10.20.0.0/16/veth1", models.LinuxRoute},
		{"config/linux/l3/v2/arp/veth1/10.10.0.2", models.LinuxARP},
	} {
		if m := models.Default.ModelOfKey(c.key); m != c.model {
			t.Errorf("ModelOfKey(%q) = %v, want %s", c.key, m, c.model.Name)
		}
	}
	for _, k := range []string{
		"",
		"/",
		"config",
		"config/",
		"config/vpp/v2/",
		"config/vpp/v2/interfaces",
		"config/vpp/v2/interfacesX/a",
		"config/vpp/v2/interface/loop1",
		"config/vpp/l2/v2/bridge-domains/bd1",
		"config/vpp/v2/routes/vrf/0/dst/10.0.0.0/8",
		"config/linux/interfaces/v2/interfaces/veth1",
		"config/linux/l3/v2/arps/veth1/10.10.0.2",
		"status/vpp/v2/interfaces/loop1",
		"/vnf-agent/vpp1/config/vpp/v2/interfaces/loop1",
		"vpp1/config/vpp/v2/interfaces/loop1",
		"/config/vpp/v2/interfaces/loop1",
		"vpp/interface/loop1/address/static/10.0.0.1/24",
		"linux/interface/state/veth1/UP",
	} {
		if m := models.Default.ModelOfKey(k); m != nil {
			t.Errorf("ModelOfKey(%q) = %s, want nil", k, m.Name)
		}
		m, parts, err := models.Default.ParseKey(k)
		var ke *models.KeyError
		if !errors.As(err, &ke) || m != nil || parts != nil {
			t.Errorf("Default.ParseKey(%q) = %v, %v, %v; want a *KeyError", k, m, parts, err)
		}
	}
}

// TestParseKeyRejects: keys in a form Key never produces are rejected, and
// the error says what is wrong (for an address, its canonical form).
func TestParseKeyRejects(t *testing.T) {
	for _, c := range []struct {
		key  string
		want []string // substrings of the error
	}{
		// Non-canonical addresses.
		{"config/vpp/v2/arp/loop1/2001:DB8::1", []string{`"2001:DB8::1"`, "canonical", `"2001:db8::1"`}},
		{"config/vpp/v2/arp/loop1/2001:db8:0::1", []string{"canonical", `"2001:db8::1"`}},
		{"config/vpp/v2/arp/GigabitEthernet0/8/0/2001:0db8::1", []string{"canonical", `"2001:db8::1"`}},
		{"config/linux/l3/v2/arp/veth1/FE80::1", []string{"canonical", `"fe80::1"`}},
		{"config/vpp/v2/route/vrf/0/dst/2001:DB8::/32", []string{"canonical", `"2001:db8::"`}},
		{"config/vpp/v2/route/vrf/0/dst/2001:db8::/32/gw/2001:DB8::1", []string{"canonical", `"2001:db8::1"`}},
		{"config/vpp/v2/route/if/eth0.100/vrf/0/dst/10.0.0.0/8/gw/10.0.0.01", []string{`10.0.0.01`}},
		{"config/linux/l3/v2/route/2001:db8:0:0::/64/eth0", []string{"canonical", `"2001:db8::"`}},
		// IPv4 with a leading zero is not an address at all for netip.
		{"config/vpp/v2/arp/loop1/010.0.0.1", []string{`"010.0.0.1"`}},
		// Host bits: the key holds the network address.
		{"config/vpp/v2/route/vrf/0/dst/10.1.2.3/16", []string{"host bits", "10.1.0.0/16"}},
		{"config/vpp/v2/route/vrf/0/dst/2001:db8::1/32", []string{"host bits", "2001:db8::/32"}},
		{"config/linux/l3/v2/route/10.1.2.3/16/eth0", []string{"host bits", "10.1.0.0/16"}},
		// Numbers: decimal without leading zeros, in range.
		{"config/vpp/v2/route/vrf/01/dst/10.0.0.0/8", []string{"vrf_id", `"01"`}},
		{"config/vpp/v2/route/vrf/+1/dst/10.0.0.0/8", []string{"vrf_id", `"+1"`}},
		{"config/vpp/v2/route/vrf/4294967296/dst/10.0.0.0/8", []string{"vrf_id", `"4294967296"`}},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/08", []string{`"08"`}},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/33", []string{`"33"`}},
		{"config/vpp/v2/route/vrf/0/dst/2001:db8::/129", []string{`"129"`}},
		{"config/linux/l3/v2/route/10.0.0.0/08/eth0", []string{`"08"`}},
		// Structure.
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/2001:db8::1", []string{"different IP versions"}},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0", nil},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw", nil},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/", nil},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/extra", nil},
		{"config/vpp/v2/route/dst/10.0.0.0/8", nil},
		{"config/vpp/v2/route/x/vrf/0/dst/10.0.0.0/8", nil},
		{"config/vpp/v2/route/if/vrf/0/dst/10.0.0.0/8", nil},
		{"config/vpp/v2/route/if//vrf/0/dst/10.0.0.0/8", nil},
		{"config/vpp/v2/route/if/a//b/vrf/0/dst/10.0.0.0/8", nil},
		{"config/vpp/v2/arp/10.0.0.1", nil},
		{"config/vpp/v2/arp/loop1/", nil},
		{"config/vpp/v2/arp/loop1/fe80::1%eth0", nil},
		{"config/vpp/v2/arp//10.0.0.1", nil},
		{"config/linux/l3/v2/route/10.0.0.0/8", nil},
		{"config/linux/l3/v2/route/10.0.0.0/8/", nil},
		{"config/linux/l3/v2/arp/veth1/not-an-ip", nil},
		// Names.
		{"config/vpp/v2/interfaces/", []string{"empty"}},
		{"config/vpp/v2/interfaces/loop1/", nil},
		{"config/vpp/v2/interfaces//loop1", nil},
		{"config/vpp/v2/interfaces/a//b", nil},
		{"config/vpp/v2/interfaces/a/../b", nil},
		{"config/vpp/v2/interfaces/a/./b", nil},
		{"config/vpp/v2/interfaces/loop 1", nil},
		{"config/vpp/l2/v2/bridge-domain/", nil},
		{"config/linux/interfaces/v2/interface/", nil},
		{"config/linux/interfaces/v2/interface/tab\tname", nil},
		{"config/linux/interfaces/v2/interface/uplink/eth0", []string{`"uplink/eth0"`, `contains "/"`, "alias"}},
	} {
		m, parts, err := models.Default.ParseKey(c.key)
		var ke *models.KeyError
		if !errors.As(err, &ke) {
			t.Errorf("ParseKey(%q) = %v, %v, %v; want a *KeyError", c.key, m, parts, err)
			continue
		}
		if ke.Key != c.key {
			t.Errorf("ParseKey(%q): KeyError.Key = %q", c.key, ke.Key)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseKey(%q): error %q does not mention %q", c.key, err, w)
			}
		}
	}
}

// TestCheckKeyDisagrees: a valid value under another key's item is a
// *KeyError naming the part that differs and the value's own key.
func TestCheckKeyDisagrees(t *testing.T) {
	for _, c := range []struct {
		name  string
		model *models.Model
		key   string
		value proto.Message
		want  []string // substrings of the error
	}{
		{
			name:  "vpp interface name",
			model: models.VPPInterface,
			key:   "config/vpp/v2/interfaces/loop2",
			value: &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK},
			want:  []string{"config/vpp/v2/interfaces/loop1", `name is "loop2" in the key but "loop1" in the value`},
		},
		{
			name:  "bridge domain name",
			model: models.VPPBridgeDomain,
			key:   "config/vpp/l2/v2/bridge-domain/bd2",
			value: &vppl2.BridgeDomain{Name: "bd1"},
			want:  []string{"config/vpp/l2/v2/bridge-domain/bd1", "name", `"bd2"`, `"bd1"`},
		},
		{
			name:  "vpp route vrf",
			model: models.VPPRoute,
			key:   "config/vpp/v2/route/vrf/1/dst/10.0.0.0/8",
			value: &vppl3.Route{Type: vppl3.Route_DROP, VrfId: 2, DstNetwork: "10.0.0.0/8"},
			want:  []string{"config/vpp/v2/route/vrf/2/dst/10.0.0.0/8", "vrf_id", `"1"`, `"2"`},
		},
		{
			name:  "vpp route destination",
			model: models.VPPRoute,
			key:   "config/vpp/v2/route/vrf/0/dst/10.0.0.0/8",
			value: &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/16"},
			want:  []string{"dst_network", `"10.0.0.0/8"`, `"10.0.0.0/16"`},
		},
		{
			name:  "vpp route next hop only in the value",
			model: models.VPPRoute,
			key:   "config/vpp/v2/route/vrf/0/dst/10.0.0.0/8",
			value: &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1"},
			want:  []string{"next_hop_addr", `"10.0.0.1"`},
		},
		{
			name:  "vpp route next hop only in the key",
			model: models.VPPRoute,
			key:   "config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/10.0.0.1",
			value: &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/8"},
			want:  []string{"next_hop_addr", `"10.0.0.1"`},
		},
		{
			name:  "vpp route next hop differs",
			model: models.VPPRoute,
			key:   "config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/10.0.0.1",
			value: &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.2"},
			want:  []string{"next_hop_addr", `"10.0.0.1"`, `"10.0.0.2"`},
		},
		{
			name:  "vpp route interface only in the value",
			model: models.VPPRoute,
			key:   "config/vpp/v2/route/vrf/0/dst/10.0.0.0/8",
			value: &vppl3.Route{DstNetwork: "10.0.0.0/8", OutgoingInterface: "GigabitEthernet0/8/0"},
			want:  []string{"outgoing_interface", `"GigabitEthernet0/8/0"`},
		},
		{
			name:  "vpp arp ip",
			model: models.VPPARP,
			key:   "config/vpp/v2/arp/loop1/10.0.0.2",
			value: &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.3", PhysAddress: "02:00:00:00:00:03"},
			want:  []string{"config/vpp/v2/arp/loop1/10.0.0.3", "ip_address", `"10.0.0.2"`, `"10.0.0.3"`},
		},
		{
			name:  "vpp arp interface",
			model: models.VPPARP,
			key:   "config/vpp/v2/arp/GigabitEthernet0/8/0/2001:db8::1",
			value: &vppl3.ARPEntry{Interface: "GigabitEthernet0/8/1", IpAddress: "2001:db8::1", PhysAddress: "02:00:00:00:00:03"},
			want:  []string{"interface", `"GigabitEthernet0/8/0"`, `"GigabitEthernet0/8/1"`},
		},
		{
			name:  "linux interface name",
			model: models.LinuxInterface,
			key:   "config/linux/interfaces/v2/interface/veth2",
			value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2"}}},
			want:  []string{"config/linux/interfaces/v2/interface/veth1", "name", `"veth2"`, `"veth1"`},
		},
		{
			name:  "linux route destination",
			model: models.LinuxRoute,
			key:   "config/linux/l3/v2/route/10.20.0.0/16/veth1",
			value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.21.0.0/16"},
			want:  []string{"config/linux/l3/v2/route/10.21.0.0/16/veth1", "dst_network", `"10.20.0.0/16"`, `"10.21.0.0/16"`},
		},
		{
			name:  "linux route interface",
			model: models.LinuxRoute,
			key:   "config/linux/l3/v2/route/10.20.0.0/16/uplink/eth0",
			value: &linuxl3.Route{OutgoingInterface: "uplink/eth1", DstNetwork: "10.20.0.0/16"},
			want:  []string{"outgoing_interface", `"uplink/eth0"`, `"uplink/eth1"`},
		},
		{
			name:  "linux arp ip",
			model: models.LinuxARP,
			key:   "config/linux/l3/v2/arp/veth1/fe80::1",
			value: &linuxl3.ARPEntry{Interface: "veth1", IpAddress: "fe80::2", HwAddress: "02:00:00:00:01:02"},
			want:  []string{"config/linux/l3/v2/arp/veth1/fe80::2", "ip_address", `"fe80::1"`, `"fe80::2"`},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.model.CheckKey(c.key, c.value)
			var ke *models.KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("CheckKey(%q) = %v, want a *KeyError", c.key, err)
			}
			if ke.Key != c.key {
				t.Errorf("KeyError.Key = %q, want %q", ke.Key, c.key)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("CheckKey(%q): error %q does not mention %q", c.key, err, w)
				}
			}
			// DecodeValue reports the same mismatch for the JSON value.
			data, merr := models.MarshalJSON(c.value)
			if merr != nil {
				t.Fatal(merr)
			}
			_, v, derr := models.Default.DecodeValue(c.key, data)
			if !errors.As(derr, &ke) || v != nil {
				t.Errorf("DecodeValue(%q, %s) = %v, %v; want a *KeyError", c.key, data, v, derr)
			}
		})
	}
}

// TestCheckKeyOtherProblems: a value of the wrong message, an invalid value,
// a non-canonical key.
func TestCheckKeyOtherProblems(t *testing.T) {
	var ke *models.KeyError
	err := models.VPPInterface.CheckKey("config/vpp/v2/interfaces/loop1", &vppl3.Route{DstNetwork: "10.0.0.0/8"})
	if !errors.As(err, &ke) {
		t.Errorf("CheckKey with a route value = %v, want a *KeyError", err)
	}
	err = models.VPPInterface.CheckKey("config/vpp/v2/interfaces/loop1", nil)
	if !errors.As(err, &ke) {
		t.Errorf("CheckKey with a nil value = %v, want a *KeyError", err)
	}

	// An invalid value is a *ValidationError naming the key and the field.
	err = models.VPPARP.CheckKey("config/vpp/v2/arp/loop1/10.0.0.2", &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.2", PhysAddress: "not-a-mac"})
	var ve *models.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("CheckKey with an invalid MAC = %v, want a *ValidationError", err)
	}
	if ve.Key != "config/vpp/v2/arp/loop1/10.0.0.2" || !reflect.DeepEqual(ve.FieldNames(), []string{"phys_address"}) {
		t.Errorf("ValidationError key %q fields %v, want the key and [phys_address]", ve.Key, ve.FieldNames())
	}

	// A valid value under a non-canonical spelling of its own key.
	for _, c := range []struct {
		model *models.Model
		key   string
		value proto.Message
	}{
		{models.VPPARP, "config/vpp/v2/arp/loop1/2001:DB8::1", &vppl3.ARPEntry{Interface: "loop1", IpAddress: "2001:DB8::1", PhysAddress: "02:00:00:00:00:01"}},
		{models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.2.3/16", &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.1.2.3/16"}},
		{models.VPPRoute, "config/vpp/v2/route/vrf/00/dst/10.0.0.0/8", &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/8"}},
		{models.LinuxRoute, "config/linux/l3/v2/route/2001:DB8::/32/eth0", &linuxl3.Route{OutgoingInterface: "eth0", DstNetwork: "2001:DB8::/32"}},
	} {
		if err := c.model.CheckKey(c.key, c.value); !errors.As(err, &ke) {
			t.Errorf("CheckKey(%q) = %v, want a *KeyError", c.key, err)
		}
	}
}

// TestVPPRouteKeyOfTheOriginalAgent: the original agent ends the key of a
// route without a next hop with "/". Its etcd data must load: the key
// parses, its canonical form has no trailing "/", and it is the key of the
// value.
func TestVPPRouteKeyOfTheOriginalAgent(t *testing.T) {
	for _, c := range []struct {
		key, canonical string
		value          *vppl3.Route
	}{
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/", "config/vpp/v2/route/vrf/0/dst/10.0.0.0/8",
			&vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/8"}},
		{"config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/3/dst/2001:db8::/32/", "config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/3/dst/2001:db8::/32",
			&vppl3.Route{OutgoingInterface: "GigabitEthernet0/8/0", VrfId: 3, DstNetwork: "2001:db8::/32"}},
	} {
		parts, err := models.VPPRoute.ParseKey(c.key)
		if err != nil {
			t.Fatalf("ParseKey(%q): %v", c.key, err)
		}
		if _, gw := parts["next_hop_addr"]; gw || parts["dst_network"] != c.value.DstNetwork {
			t.Errorf("ParseKey(%q) = %v", c.key, parts)
		}
		if got, err := models.VPPRoute.CanonicalKey(c.key); err != nil || got != c.canonical {
			t.Errorf("CanonicalKey(%q) = %q, %v; want %q", c.key, got, err, c.canonical)
		}
		if err := models.VPPRoute.CheckKey(c.key, c.value); err != nil {
			t.Errorf("CheckKey(%q): %v", c.key, err)
		}
		data, err := models.MarshalJSON(c.value)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := models.Default.DecodeValue(c.key, data); err != nil {
			t.Errorf("DecodeValue(%q): %v", c.key, err)
		}
		// A route with a next hop has a different key.
		withGW := &vppl3.Route{OutgoingInterface: c.value.OutgoingInterface, VrfId: c.value.VrfId, DstNetwork: c.value.DstNetwork, NextHopAddr: "10.9.9.9"}
		if c.value.DstNetwork == "2001:db8::/32" {
			withGW.NextHopAddr = "2001:db8::1"
		}
		if err := models.VPPRoute.CheckKey(c.key, withGW); err == nil || !strings.Contains(err.Error(), "next_hop_addr") {
			t.Errorf("CheckKey(%q, route with a next hop) = %v, want the next hop named", c.key, err)
		}
	}
	// Only a route without a next hop has that spelling.
	for _, key := range []string{
		"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/10.0.0.1/",
		"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8//",
		"config/vpp/v2/route/vrf/0/dst/10.0.0.0/",
	} {
		if _, err := models.VPPRoute.ParseKey(key); err == nil {
			t.Errorf("ParseKey(%q) accepted", key)
		}
	}
}

// TestCheckKeyReportsFieldsFirst: CheckKey validates the value as Validate
// does (callers need not call both), and a value's field problems come
// before a key that does not parse or disagrees.
func TestCheckKeyReportsFieldsFirst(t *testing.T) {
	bad := &vppl3.Route{DstNetwork: "10.1.0.0/33", NextHopAddr: "10.0.0.1"}
	for _, key := range []string{"config/vpp/v2/route/vrf/0/dst/10.1.0.0/33/gw/10.0.0.1", "config/vpp/v2/route/garbage", "config/vpp/v2/route/vrf/0/dst/10.2.0.0/16/gw/10.0.0.1"} {
		err := models.VPPRoute.CheckKey(key, bad)
		var ve *models.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "dst_network") {
			t.Errorf("CheckKey(%q) of an invalid value: %v, want the field error of dst_network", key, err)
		}
		if verr := models.VPPRoute.Validate(bad); verr == nil {
			t.Error("Validate accepts the invalid route")
		}
	}
	good := &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1"}
	if err := models.VPPRoute.CheckKey("config/vpp/v2/route/garbage", good); err == nil || errors.As(err, new(*models.ValidationError)) {
		t.Errorf("CheckKey of a valid value under a bad key: %v, want a key error", err)
	}
}

// TestCheckKeyRouteTypeFirst: a route whose type forbids a field it sets
// is refused for that field, not for a key that lacks the field: moving
// the value under a key with the field would only lead to the same error.
func TestCheckKeyRouteTypeFirst(t *testing.T) {
	for _, c := range []struct {
		key   string
		value *vppl3.Route
		field string
	}{
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8", &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1"}, "next_hop_addr"},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8", &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/8", OutgoingInterface: "loop1"}, "outgoing_interface"},
		{"config/vpp/v2/route/vrf/1/dst/10.0.0.0/8", &vppl3.Route{Type: vppl3.Route_INTER_VRF, VrfId: 1, ViaVrfId: 2, DstNetwork: "10.0.0.0/8", OutgoingInterface: "loop1"}, "outgoing_interface"},
	} {
		err := models.VPPRoute.CheckKey(c.key, c.value)
		var ve *models.ValidationError
		if !errors.As(err, &ve) || !reflect.DeepEqual(ve.FieldNames(), []string{c.field}) {
			t.Errorf("CheckKey(%q, %v) = %v, want a *ValidationError of %s", c.key, c.value, err, c.field)
			continue
		}
		if strings.Contains(err.Error(), "/gw/") || strings.Contains(err.Error(), "/if/") {
			t.Errorf("CheckKey(%q, %v) = %v: points to another key", c.key, c.value, err)
		}
	}
}

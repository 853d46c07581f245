package models_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/pkg/models"
	configpb "github.com/netagent-io/netagent/proto/config"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

// cfgFullKVs are the items of testdata/config/full.yaml in the order
// ParseConfig returns them: sections, then fields, by name; each list in
// its order.
func cfgFullKVs() []models.KV {
	return []models.KV{
		// linux_config.arp_entries
		{Key: "config/linux/l3/v2/arp/veth1-log/192.168.1.2", Value: &linuxl3.ARPEntry{Interface: "veth1-log", IpAddress: "192.168.1.2", HwAddress: "02:00:00:00:01:02"}},
		// linux_config.interfaces
		{Key: "config/linux/interfaces/v2/interface/veth1-log", Value: &linuxif.Interface{
			Name: "veth1-log", Type: linuxif.Interface_VETH,
			Namespace:  &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: "ns1"},
			HostIfName: "veth1", Enabled: true, IpAddresses: []string{"192.168.1.1/24"}, PhysAddress: "02:00:00:00:01:01",
			Mtu: 9000, VrfMasterInterface: "vrf1",
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2-log",
				RxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED, TxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_ENABLED}},
		}},
		{Key: "config/linux/interfaces/v2/interface/veth2-log", Value: &linuxif.Interface{
			Name: "veth2-log", Type: linuxif.Interface_VETH,
			Namespace:  &linuxns.NetNamespace{Type: linuxns.NetNamespace_PID, Reference: "1234"},
			HostIfName: "veth2",
			Link:       &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth1-log"}},
		}},
		{Key: "config/linux/interfaces/v2/interface/tap-linux", Value: &linuxif.Interface{
			Name: "tap-linux", Type: linuxif.Interface_TAP_TO_VPP, LinkOnly: true,
			Namespace: &linuxns.NetNamespace{Type: linuxns.NetNamespace_MICROSERVICE, Reference: "ms1"},
			Link:      &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap1"}},
		}},
		{Key: "config/linux/interfaces/v2/interface/vrf1", Value: &linuxif.Interface{Name: "vrf1", Type: linuxif.Interface_VRF_DEVICE, Enabled: true}},
		{Key: "config/linux/interfaces/v2/interface/lo", Value: &linuxif.Interface{Name: "lo", Type: linuxif.Interface_LOOPBACK,
			Namespace: &linuxns.NetNamespace{Type: linuxns.NetNamespace_FD, Reference: "/proc/1/ns/net"}}},
		{Key: "config/linux/interfaces/v2/interface/eth0", Value: &linuxif.Interface{Name: "eth0", Type: linuxif.Interface_EXISTING}},
		{Key: "config/linux/interfaces/v2/interface/dummy1", Value: &linuxif.Interface{Name: "dummy1", Type: linuxif.Interface_DUMMY}},
		// linux_config.routes
		{Key: "config/linux/l3/v2/route/192.168.2.0/24/veth1-log", Value: &linuxl3.Route{OutgoingInterface: "veth1-log", Scope: linuxl3.Route_GLOBAL,
			DstNetwork: "192.168.2.1/24", GwAddr: "192.168.1.254", Metric: 100}},
		{Key: "config/linux/l3/v2/route/192.168.3.0/24/veth1-log", Value: &linuxl3.Route{OutgoingInterface: "veth1-log", Scope: linuxl3.Route_LINK,
			DstNetwork: "192.168.3.0/24"}},
		// vpp_config.acls
		{Key: "config/vpp/acls/v2/acl/acl-ip", Value: &vppacl.ACL{Name: "acl-ip", Rules: []*vppacl.ACL_Rule{
			{Action: vppacl.ACL_Rule_PERMIT, IpRule: &vppacl.ACL_Rule_IpRule{
				Ip: &vppacl.ACL_Rule_IpRule_Ip{DestinationNetwork: "10.20.1.0/24", SourceNetwork: "192.168.1.2/32", Protocol: 6},
				Tcp: &vppacl.ACL_Rule_IpRule_Tcp{
					DestinationPortRange: &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: 1150, UpperPort: 1250},
					SourcePortRange:      &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: 150, UpperPort: 250},
					TcpFlagsMask:         20, TcpFlagsValue: 10,
				}}},
			{Action: vppacl.ACL_Rule_REFLECT, IpRule: &vppacl.ACL_Rule_IpRule{Udp: &vppacl.ACL_Rule_IpRule_Udp{
				DestinationPortRange: &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: 53},
				SourcePortRange:      &vppacl.ACL_Rule_IpRule_PortRange{LowerPort: 1024, UpperPort: 65535},
			}}},
			{Action: vppacl.ACL_Rule_DENY, IpRule: &vppacl.ACL_Rule_IpRule{
				Ip: &vppacl.ACL_Rule_IpRule_Ip{DestinationNetwork: "2001:db8::/32"},
				Icmp: &vppacl.ACL_Rule_IpRule_Icmp{Icmpv6: true,
					IcmpCodeRange: &vppacl.ACL_Rule_IpRule_Icmp_Range{First: 0, Last: 255},
					IcmpTypeRange: &vppacl.ACL_Rule_IpRule_Icmp_Range{First: 128, Last: 129}},
			}},
		}, Interfaces: &vppacl.ACL_Interfaces{Egress: []string{"loop1"}, Ingress: []string{"loop1", "memif1/1"}}}},
		{Key: "config/vpp/acls/v2/acl/acl-macip", Value: &vppacl.ACL{Name: "acl-macip", Rules: []*vppacl.ACL_Rule{
			{Action: vppacl.ACL_Rule_PERMIT, MacipRule: &vppacl.ACL_Rule_MacIpRule{SourceAddress: "192.168.0.1", SourceAddressPrefix: 16,
				SourceMacAddress: "b2:74:8c:12:67:d2", SourceMacAddressMask: "ff:ff:ff:ff:00:00"}},
		}, Interfaces: &vppacl.ACL_Interfaces{Ingress: []string{"afp1"}}}},
		// vpp_config.arps
		{Key: "config/vpp/v2/arp/memif1/1/10.0.0.3", Value: &vppl3.ARPEntry{Interface: "memif1/1", IpAddress: "10.0.0.3", PhysAddress: "02:00:00:00:00:03", Static: true}},
		{Key: "config/vpp/v2/arp/loop1/2001:db8::3", Value: &vppl3.ARPEntry{Interface: "loop1", IpAddress: "2001:db8::3", PhysAddress: "02:00:00:00:00:04"}},
		// vpp_config.bridge_domains
		{Key: "config/vpp/l2/v2/bridge-domain/bd1", Value: &vppl2.BridgeDomain{
			Name: "bd1", Flood: true, UnknownUnicastFlood: true, Forward: true, Learn: true, ArpTermination: true, MacAge: 10,
			Interfaces: []*vppl2.BridgeDomain_Interface{
				{Name: "loop1", BridgedVirtualInterface: true, SplitHorizonGroup: 1},
				{Name: "memif1/1"},
			},
			ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{{IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02"}},
		}},
		// vpp_config.dnat44s
		{Key: "config/vpp/nat/v2/dnat44/web", Value: &vppnat.DNat44{Label: "web",
			StMappings: []*vppnat.DNat44_StaticMapping{
				{ExternalIp: "192.0.2.1", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.0.0.10", LocalPort: 8080}},
					TwiceNat: vppnat.DNat44_StaticMapping_ENABLED, TwiceNatPoolIp: "192.0.2.100"},
				{ExternalIp: "192.0.2.2", ExternalPort: 53, Protocol: vppnat.DNat44_UDP, SessionAffinity: 30, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{
					{LocalIp: "10.0.0.11", LocalPort: 53, Probability: 1, VrfId: 2}, {LocalIp: "10.0.0.12", LocalPort: 53, Probability: 2}}},
				{ExternalInterface: "memif1/1", ExternalPort: 22, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.0.0.13", LocalPort: 22}},
					TwiceNat: vppnat.DNat44_StaticMapping_SELF},
			},
			IdMappings: []*vppnat.DNat44_IdentityMapping{
				{IpAddress: "192.0.2.3", Port: 53, Protocol: vppnat.DNat44_UDP, VrfId: 2},
				{Interface: "loop1"},
			},
		}},
		// vpp_config.fibs
		{Key: "config/vpp/l2/v2/fib/bd1/mac/62:89:c6:a3:6d:5c", Value: &vppl2.FIBEntry{PhysAddress: "62:89:C6:A3:6D:5C", BridgeDomain: "bd1",
			OutgoingInterface: "memif1/1", StaticConfig: true}},
		{Key: "config/vpp/l2/v2/fib/bd1/mac/02:00:00:00:00:10", Value: &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:10", BridgeDomain: "bd1",
			OutgoingInterface: "loop1", BridgedVirtualInterface: true}},
		{Key: "config/vpp/l2/v2/fib/bd1/mac/02:00:00:00:00:11", Value: &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:11", BridgeDomain: "bd1",
			Action: vppl2.FIBEntry_DROP}},
		// vpp_config.interfaces
		{Key: "config/vpp/v2/interfaces/loop1", Value: &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true,
			PhysAddress: "12:34:56:00:00:01", IpAddresses: []string{"10.0.0.1/24", "2001:db8::1/64"}, Vrf: 2, Mtu: 1500}},
		{Key: "config/vpp/v2/interfaces/GigabitEthernet0/8/0", Value: &vppif.Interface{Name: "GigabitEthernet0/8/0", Type: vppif.Interface_DPDK,
			Enabled: true, SetDhcpClient: true}},
		{Key: "config/vpp/v2/interfaces/GigabitEthernet0/8/0.100", Value: &vppif.Interface{Name: "GigabitEthernet0/8/0.100", Type: vppif.Interface_SUB_INTERFACE,
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "GigabitEthernet0/8/0", SubId: 100}}}},
		{Key: "config/vpp/v2/interfaces/memif1/1", Value: &vppif.Interface{Name: "memif1/1", Type: vppif.Interface_MEMIF,
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Mode: vppif.MemifLink_IP, Master: true, Id: 1,
				SocketFilename: "/run/vpp/memif.sock", Secret: "s3cret", RingSize: 1024, BufferSize: 2048, RxQueues: 2, TxQueues: 3}}}},
		{Key: "config/vpp/v2/interfaces/afp1", Value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: "veth1"}}}},
		{Key: "config/vpp/v2/interfaces/afp2", Value: &vppif.Interface{Name: "afp2", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{LinuxInterface: "veth2-log"}}}},
		{Key: "config/vpp/v2/interfaces/tap1", Value: &vppif.Interface{Name: "tap1", Type: vppif.Interface_TAP,
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 2, HostIfName: "tap1", ToMicroservice: "ms1",
				RxRingSize: 256, TxRingSize: 512, EnableGso: true, EnableTunnel: true}}}},
		{Key: "config/vpp/v2/interfaces/unnum1", Value: &vppif.Interface{Name: "unnum1", Type: vppif.Interface_SOFTWARE_LOOPBACK,
			Unnumbered: &vppif.Interface_Unnumbered{InterfaceWithIp: "loop1"}}},
		{Key: "config/vpp/v2/interfaces/vxlan1", Value: &vppif.Interface{Name: "vxlan1", Type: vppif.Interface_VXLAN_TUNNEL,
			Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{SrcAddress: "192.168.42.1", DstAddress: "239.1.1.1", Vni: 13, Multicast: "loop1",
				Gpe: &vppif.VxlanLink_Gpe{DecapVrfId: 2, Protocol: vppif.VxlanLink_Gpe_IP4}}}}},
		// vpp_config.nat44_global
		{Key: "config/vpp/nat/v2/nat44-global", Value: &vppnat.Nat44Global{Forwarding: true,
			NatInterfaces:     []*vppnat.Nat44Global_Interface{{Name: "tap1", IsInside: true}, {Name: "tap2", OutputFeature: true}},
			AddressPool:       []*vppnat.Nat44Global_Address{{Address: "192.0.2.200", VrfId: 3, TwiceNat: true}},
			VirtualReassembly: &vppnat.VirtualReassembly{Timeout: 4, MaxReassemblies: 2048, MaxFragments: 10, DropFragments: true},
		}},
		// vpp_config.nat44_interfaces
		{Key: "config/vpp/nat/v2/nat44-interface/loop1", Value: &vppnat.Nat44Interface{Name: "loop1", NatInside: true}},
		{Key: "config/vpp/nat/v2/nat44-interface/memif1/1", Value: &vppnat.Nat44Interface{Name: "memif1/1", NatOutside: true, OutputFeature: true}},
		// vpp_config.nat44_pools
		{Key: "config/vpp/nat/v2/nat44-pool/pool1", Value: &vppnat.Nat44AddressPool{Name: "pool1", VrfId: ^uint32(0), FirstIp: "192.0.2.1", LastIp: "192.0.2.10"}},
		{Key: "config/vpp/nat/v2/nat44-pool/vrf/0/address/192.0.2.100", Value: &vppnat.Nat44AddressPool{FirstIp: "192.0.2.100", TwiceNat: true}},
		// vpp_config.routes
		{Key: "config/vpp/v2/route/if/loop1/vrf/0/dst/10.1.0.0/16/gw/10.0.0.254", Value: &vppl3.Route{Type: vppl3.Route_INTRA_VRF,
			DstNetwork: "10.1.2.3/16", NextHopAddr: "10.0.0.254", OutgoingInterface: "loop1", Weight: 1, Preference: 2}},
		{Key: "config/vpp/v2/route/vrf/1/dst/0.0.0.0/0", Value: &vppl3.Route{Type: vppl3.Route_INTER_VRF, VrfId: 1, DstNetwork: "0.0.0.0/0", ViaVrfId: 2}},
		{Key: "config/vpp/v2/route/vrf/0/dst/2001:db8:1::/48", Value: &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "2001:DB8:1::/48"}},
		{Key: "config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/0/dst/2001:db8:2::/64/gw/2001:db8::ffff", Value: &vppl3.Route{
			DstNetwork: "2001:db8:2::/64", NextHopAddr: "2001:db8::FFFF", OutgoingInterface: "GigabitEthernet0/8/0"}},
		// vpp_config.vrfs
		{Key: "config/vpp/v2/vrf-table/id/2/protocol/IPV4", Value: &vppl3.VrfTable{Id: 2, Label: "blue"}},
		{Key: "config/vpp/v2/vrf-table/id/2/protocol/IPV6", Value: &vppl3.VrfTable{Id: 2, Protocol: vppl3.VrfTable_IPV6}},
		// vpp_config.xconnect_pairs
		{Key: "config/vpp/l2/v2/xconnect/afp1", Value: &vppl2.XConnectPair{ReceiveInterface: "afp1", TransmitInterface: "afp2"}},
		{Key: "config/vpp/l2/v2/xconnect/afp2", Value: &vppl2.XConnectPair{ReceiveInterface: "afp2", TransmitInterface: "afp1"}},
	}
}

func cfgReadFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/config/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// cfgSameKVs checks that got holds exactly want, in want's order.
func cfgSameKVs(t *testing.T, got, want []models.KV) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d items, want %d:\n got %q\nwant %q", len(got), len(want), cfgKeys(got), cfgKeys(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i].Key != want[i].Key {
			t.Errorf("item %d: key %q, want %q", i, got[i].Key, want[i].Key)
			continue
		}
		if !proto.Equal(got[i].Value, want[i].Value) {
			t.Errorf("item %d (%s):\n got %v\nwant %v", i, got[i].Key, got[i].Value, want[i].Value)
		}
	}
}

// cfgSameSet checks that got and want hold the same items, in any order.
func cfgSameSet(t *testing.T, got, want []models.KV) {
	t.Helper()
	g, w := cfgByKey(t, got), cfgByKey(t, want)
	for k, v := range w {
		if gv, ok := g[k]; !ok {
			t.Errorf("missing %s", k)
		} else if !proto.Equal(gv, v) {
			t.Errorf("%s:\n got %v\nwant %v", k, gv, v)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("unexpected %s", k)
		}
	}
}

func cfgByKey(t *testing.T, kvs []models.KV) map[string]proto.Message {
	t.Helper()
	out := map[string]proto.Message{}
	for _, kv := range kvs {
		if _, dup := out[kv.Key]; dup {
			t.Errorf("key %s twice", kv.Key)
		}
		out[kv.Key] = kv.Value
	}
	return out
}

func cfgKeys(kvs []models.KV) []string {
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}
	return keys
}

func TestParseConfigFull(t *testing.T) {
	kvs, err := models.Default.ParseConfig(cfgReadFile(t, "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfgSameKVs(t, kvs, cfgFullKVs())
	// Every model is in the document.
	seen := map[*models.Model]bool{}
	for _, kv := range kvs {
		m := models.Default.ModelOfKey(kv.Key)
		if m == nil || m != models.Default.ModelOfMessage(kv.Value) {
			t.Errorf("%s: model of key %v, of value %v", kv.Key, m, models.Default.ModelOfMessage(kv.Value))
		}
		seen[m] = true
		// Each item is valid and under its own key.
		if err := m.CheckKey(kv.Key, kv.Value); err != nil {
			t.Errorf("CheckKey: %v", err)
		}
	}
	for _, m := range models.Builtin() {
		if !seen[m] {
			t.Errorf("no item of model %s", m.Name)
		}
	}
}

// TestParseConfigEveryField: the document sets every field of every
// message at least once (so that the full test covers them all).
func TestParseConfigEveryField(t *testing.T) {
	kvs, err := models.Default.ParseConfig(cfgReadFile(t, "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	var walk func(prefix string, v proto.Message)
	walk = func(prefix string, v proto.Message) {
		m := v.ProtoReflect()
		m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
			name := prefix + string(fd.Name())
			set[name] = true
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := range val.List().Len() {
					walk(name+".", val.List().Get(i).Message().Interface())
				}
			case !fd.IsList() && fd.Message() != nil:
				walk(name+".", val.Message().Interface())
			}
			return true
		})
	}
	for _, kv := range kvs {
		walk(string(kv.Value.ProtoReflect().Descriptor().FullName())+".", kv.Value)
	}
	var all func(prefix string, md protoreflect.MessageDescriptor, depth int)
	var missing []string
	all = func(prefix string, md protoreflect.MessageDescriptor, depth int) {
		for i := range md.Fields().Len() {
			fd := md.Fields().Get(i)
			name := prefix + string(fd.Name())
			if !set[name] {
				missing = append(missing, name)
			}
			if fd.Message() != nil && depth < 3 {
				all(name+".", fd.Message(), depth+1)
			}
		}
	}
	for _, m := range models.Builtin() {
		all(string(m.MessageName())+".", m.New().ProtoReflect().Descriptor(), 0)
	}
	// Fields of the original's messages that Validate refuses (a valid
	// document cannot set them; vpp_nat_test.go checks the refusals).
	refused := []string{"vpp.nat.Nat44Global.endpoint_independent"}
	missing = slices.DeleteFunc(missing, func(name string) bool {
		return slices.ContainsFunc(refused, func(r string) bool { return name == r || strings.HasPrefix(name, r+".") })
	})
	if len(missing) > 0 {
		t.Errorf("fields never set by full.yaml: %q", missing)
	}
}

// cfgFullJSON is full.yaml in JSON with lowerCamelCase names, reduced to
// one item per list.
const cfgFullJSON = `{
  "vppConfig": {
    "interfaces": [{"name": "loop1", "type": "SOFTWARE_LOOPBACK", "ipAddresses": ["10.0.0.1/24"], "physAddress": "02:00:00:00:00:01", "setDhcpClient": true}],
    "bridgeDomains": [{"name": "bd1", "arpTermination": true, "macAge": 5, "unknownUnicastFlood": true,
      "interfaces": [{"name": "loop1", "bridgedVirtualInterface": true, "splitHorizonGroup": 2}],
      "arpTerminationTable": [{"ipAddress": "10.0.0.2", "physAddress": "02:00:00:00:00:02"}]}],
    "routes": [{"vrfId": 3, "dstNetwork": "10.1.0.0/16", "nextHopAddr": "10.0.0.254", "outgoingInterface": "loop1", "weight": 4}],
    "arps": [{"interface": "loop1", "ipAddress": "10.0.0.3", "physAddress": "02:00:00:00:00:03"}]
  },
  "linuxConfig": {
    "interfaces": [{"name": "veth1", "type": "VETH", "hostIfName": "v1", "linkOnly": true, "vrfMasterInterface": "vrf1",
      "veth": {"peerIfName": "veth2", "rxChecksumOffloading": "CHKSM_OFFLOAD_ENABLED"}}],
    "arpEntries": [{"interface": "veth1", "ipAddress": "10.2.0.2", "hwAddress": "02:00:00:00:00:04"}],
    "routes": [{"outgoingInterface": "veth1", "dstNetwork": "10.3.0.0/16", "gwAddr": "10.2.0.1"}]
  }
}`

func cfgJSONKVs() []models.KV {
	return []models.KV{
		{Key: "config/linux/l3/v2/arp/veth1/10.2.0.2", Value: &linuxl3.ARPEntry{Interface: "veth1", IpAddress: "10.2.0.2", HwAddress: "02:00:00:00:00:04"}},
		{Key: "config/linux/interfaces/v2/interface/veth1", Value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH, HostIfName: "v1",
			LinkOnly: true, VrfMasterInterface: "vrf1",
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2", RxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_ENABLED}}}},
		{Key: "config/linux/l3/v2/route/10.3.0.0/16/veth1", Value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.3.0.0/16", GwAddr: "10.2.0.1"}},
		{Key: "config/vpp/v2/arp/loop1/10.0.0.3", Value: &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.3", PhysAddress: "02:00:00:00:00:03"}},
		{Key: "config/vpp/l2/v2/bridge-domain/bd1", Value: &vppl2.BridgeDomain{Name: "bd1", ArpTermination: true, MacAge: 5, UnknownUnicastFlood: true,
			Interfaces:          []*vppl2.BridgeDomain_Interface{{Name: "loop1", BridgedVirtualInterface: true, SplitHorizonGroup: 2}},
			ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{{IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02"}}}},
		{Key: "config/vpp/v2/interfaces/loop1", Value: &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK,
			IpAddresses: []string{"10.0.0.1/24"}, PhysAddress: "02:00:00:00:00:01", SetDhcpClient: true}},
		{Key: "config/vpp/v2/route/if/loop1/vrf/3/dst/10.1.0.0/16/gw/10.0.0.254", Value: &vppl3.Route{VrfId: 3, DstNetwork: "10.1.0.0/16",
			NextHopAddr: "10.0.0.254", OutgoingInterface: "loop1", Weight: 4}},
	}
}

func TestParseConfigJSONCamelCase(t *testing.T) {
	kvs, err := models.Default.ParseConfig([]byte(cfgFullJSON))
	if err != nil {
		t.Fatal(err)
	}
	cfgSameKVs(t, kvs, cfgJSONKVs())
}

// TestParseConfigSnakeAndCamel: the proto names and the lowerCamelCase
// names give the same items, in YAML as in JSON, also mixed.
func TestParseConfigSnakeAndCamel(t *testing.T) {
	docs := map[string]string{
		"snake": "vpp_config:\n  bridge_domains:\n  - name: bd1\n    arp_termination: true\n  interfaces:\n  - name: loop1\n    ip_addresses: [10.0.0.1/24]\n",
		"camel": "vppConfig:\n  bridgeDomains:\n  - name: bd1\n    arpTermination: true\n  interfaces:\n  - name: loop1\n    ipAddresses: [10.0.0.1/24]\n",
		"mixed": "vppConfig:\n  bridge_domains:\n  - name: bd1\n    arpTermination: true\n  interfaces:\n  - name: loop1\n    ip_addresses: [10.0.0.1/24]\n",
		"json":  `{"vppConfig":{"bridgeDomains":[{"name":"bd1","arp_termination":true}],"interfaces":[{"name":"loop1","ipAddresses":["10.0.0.1/24"]}]}}`,
	}
	want := []models.KV{
		{Key: "config/vpp/l2/v2/bridge-domain/bd1", Value: &vppl2.BridgeDomain{Name: "bd1", ArpTermination: true}},
		{Key: "config/vpp/v2/interfaces/loop1", Value: &vppif.Interface{Name: "loop1", IpAddresses: []string{"10.0.0.1/24"}}},
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			kvs, err := models.Default.ParseConfig([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			cfgSameKVs(t, kvs, want)
		})
	}
}

func TestParseConfigEmpty(t *testing.T) {
	for _, doc := range []string{
		"",
		"\n",
		"# nothing\n",
		"null",
		"~",
		"{}",
		"---\n",
		"vpp_config:\n",
		"vpp_config: null\nlinux_config: null\n",
		"vpp_config: {}\nlinux_config: {}\n",
		"vpp_config:\n  interfaces: null\n  routes: []\n  bridge_domains: ~\nlinux_config:\n  arp_entries: []\n",
		`{"vppConfig":null,"linux_config":{"routes":null}}`,
	} {
		kvs, err := models.Default.ParseConfig([]byte(doc))
		if err != nil || len(kvs) != 0 {
			t.Errorf("ParseConfig(%q) = %v, %v; want no items and no error", doc, kvs, err)
		}
	}
}

// cfgProblem is one expected line of a ParseConfig error: it starts with
// place and contains problem.
type cfgProblem struct{ place, problem string }

// cfgCheckProblems checks that err reports exactly the problems, one per
// line, in any order.
func cfgCheckProblems(t *testing.T, err error, problems []cfgProblem) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", problems)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(problems) {
		t.Errorf("%d problems reported, want %d:\n%s", len(lines), len(problems), err)
	}
	used := make([]bool, len(lines))
	for _, p := range problems {
		found := false
		for i, l := range lines {
			if !used[i] && strings.HasPrefix(l, p.place+": ") && strings.Contains(l, p.problem) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("no line %q...%q in the error:\n%s", p.place+": ", p.problem, err)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name     string
		doc      string
		problems []cfgProblem
	}{
		{"unknown section", "vpp_config: {}\nvpp_confg:\n  interfaces: []\n",
			[]cfgProblem{{"vpp_confg", "unknown section (known: vpp_config, linux_config)"}}},
		{"section of the original agent we do not have", "netallock_config: {}\n",
			[]cfgProblem{{"netallock_config", "unknown section"}}},
		{"unknown field in a section", "vpp_config:\n  interface:\n  - name: loop1\n",
			[]cfgProblem{{"vpp_config.interface", "unknown field (known: interfaces, bridge_domains, routes, arps, acls, fibs, xconnect_pairs, vrfs, nat44_global, dnat44s, nat44_interfaces, nat44_pools)"}}},
		{"linux field in the vpp section", "vpp_config:\n  arp_entries: []\n",
			[]cfgProblem{{"vpp_config.arp_entries", "unknown field"}}},
		{"unknown field in an item", "vpp_config:\n  interfaces:\n  - name: loop1\n  - name: loop2\n    mtux: 1500\n",
			[]cfgProblem{{"vpp_config.interfaces[1]", `unknown field "mtux"`}}},
		{"unknown enum name in an item", "linux_config:\n  routes:\n  - outgoing_interface: veth1\n    dst_network: 10.0.0.0/8\n    scope: WORLD\n",
			[]cfgProblem{{"linux_config.routes[0]", `"WORLD"`}}},
		{"item that is a number", "vpp_config:\n  arps:\n  - 5\n",
			[]cfgProblem{{"vpp_config.arps[0]", "unexpected token 5"}}},
		{"item that is a string", "vpp_config:\n  interfaces:\n  - name: loop1\n  - loop2\n",
			[]cfgProblem{{"vpp_config.interfaces[1]", `unexpected token "loop2"`}}},
		{"item that is a list", "linux_config:\n  interfaces:\n  - [name, veth1]\n",
			[]cfgProblem{{"linux_config.interfaces[0]", "unexpected token ["}}},
		{"item that is null", "vpp_config:\n  bridge_domains:\n  - null\n",
			[]cfgProblem{{"vpp_config.bridge_domains[0]", "unexpected token null"}}},
		{"list that is a mapping", "vpp_config:\n  routes:\n    dst_network: 10.0.0.0/8\n",
			[]cfgProblem{{"vpp_config.routes", "want a list of vpp.route values"}}},
		{"list that is a string", "linux_config:\n  arp_entries: veth1\n",
			[]cfgProblem{{"linux_config.arp_entries", "want a list of linux.l3.arp values"}}},
		{"section that is a list", "linux_config:\n- interfaces: []\n",
			[]cfgProblem{{"linux_config", "want a mapping"}}},
		{"section that is a string", "vpp_config: interfaces\n",
			[]cfgProblem{{"vpp_config", "want a mapping"}}},
		{"duplicate names", "vpp_config:\n  interfaces:\n  - name: a\n  - name: b\n  - name: a\n    mtu: 1500\n",
			[]cfgProblem{{"vpp_config.interfaces[2]", `key "config/vpp/v2/interfaces/a" is already vpp_config.interfaces[0]`}}},
		{"duplicate routes in other spellings", "vpp_config:\n  routes:\n  - {type: DROP, dst_network: 10.1.2.3/16}\n  - {type: DROP, dst_network: 10.1.0.0/16, weight: 5}\n  - {type: DROP, dst_network: 2001:db8::/32}\n  - {type: DROP, dst_network: 2001:DB8:0::/32}\n",
			[]cfgProblem{
				{"vpp_config.routes[1]", `key "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16" is already vpp_config.routes[0]`},
				{"vpp_config.routes[3]", `key "config/vpp/v2/route/vrf/0/dst/2001:db8::/32" is already vpp_config.routes[2]`},
			}},
		{"duplicate three times", "linux_config:\n  arp_entries:\n  - {interface: v, ip_address: 10.0.0.1, hw_address: 02:00:00:00:00:01}\n  - {interface: v, ip_address: 10.0.0.1, hw_address: 02:00:00:00:00:02}\n  - {interface: v, ip_address: 10.0.0.1, hw_address: 02:00:00:00:00:03}\n",
			[]cfgProblem{
				{"linux_config.arp_entries[1]", "is already linux_config.arp_entries[0]"},
				{"linux_config.arp_entries[2]", "is already linux_config.arp_entries[0]"},
			}},
		{"invalid item values", "vpp_config:\n  interfaces:\n  - name: loop1\n    mtu: 10000\n    ip_addresses: [10.0.0.1/24, 10.0.0.1]\n  - name: 'a b'\n",
			[]cfgProblem{
				{"vpp_config.interfaces[0]", "mtu: 10000 is above 9216"},
				{"vpp_config.interfaces[1]", `name: name "a b"`},
			}},
		{"invalid route", "linux_config:\n  routes:\n  - dst_network: 10.0.0.0/8\n    gw_addr: fe80::1\n",
			[]cfgProblem{{"linux_config.routes[0]", "gw_addr: fe80::1 is not of the IP version"}}},
		{"unquoted number as a name", "vpp_config:\n  bridge_domains:\n  - name: 100\n",
			[]cfgProblem{{"vpp_config.bridge_domains[0]", "name"}}},
		{"bad YAML syntax", "vpp_config:\n  interfaces: [\n",
			[]cfgProblem{{"configuration document", "yaml: line 2"}}},
		{"bad YAML indentation", "vpp_config:\n  interfaces:\n    - name: a\n   - name: b\n",
			[]cfgProblem{{"configuration document", "yaml"}}},
		{"bad JSON", `{"vpp_config": {"interfaces": [}}`,
			[]cfgProblem{{"configuration document", "yaml"}}},
		{"document that is a list", "- vpp_config: {}\n",
			[]cfgProblem{{"configuration document", "want a mapping"}}},
		{"document that is a string", "vpp_config\n",
			[]cfgProblem{{"configuration document", "want a mapping"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kvs, err := models.Default.ParseConfig([]byte(c.doc))
			if kvs != nil {
				t.Errorf("items returned with an error: %v", kvs)
			}
			cfgCheckProblems(t, err, c.problems)
		})
	}
}

// TestParseConfigEveryProblemAtOnce: one document with many problems, in
// different places, reports all of them and returns no items (not even the
// valid ones).
func TestParseConfigEveryProblemAtOnce(t *testing.T) {
	doc := `
vpp_config:
  interfaces:
    - name: loop1
      type: SOFTWARE_LOOPBACK
    - name: loop2
      bogus: 1
    - name: loop1
    - 42
  bridge_domains:
    - name: bd1
      interfaces:
        - name: loop1
          bridged_virtual_interface: true
        - name: loop2
          bridged_virtual_interface: true
  routes: {}
  arp: []
linux_config:
  interfaces:
    - name: veth1
      type: VETH
  arp_entries:
    - interface: veth1
      ip_address: 10.0.0.1
      hw_address: 02:00:00:00:00:01
  routes: 5
extra_config: {}
`
	kvs, err := models.Default.ParseConfig([]byte(doc))
	if kvs != nil {
		t.Errorf("items returned with an error: %v", kvs)
	}
	cfgCheckProblems(t, err, []cfgProblem{
		{"vpp_config.interfaces[1]", `unknown field "bogus"`},
		{"vpp_config.interfaces[2]", `key "config/vpp/v2/interfaces/loop1" is already vpp_config.interfaces[0]`},
		{"vpp_config.interfaces[3]", "unexpected token 42"},
		{"vpp_config.bridge_domains[0]", "interfaces[1].bridged_virtual_interface"},
		{"vpp_config.routes", "want a list"},
		{"vpp_config.arp", "unknown field"},
		{"linux_config.interfaces[0]", "veth: required for a VETH interface"},
		{"linux_config.routes", "want a list"},
		{"extra_config", "unknown section"},
	})
	// The invalid values are ValidationErrors inside the joined error.
	var ve *models.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("no *models.ValidationError in %v", err)
	}
	if ve.Model != models.VPPBridgeDomain.Name && ve.Model != models.LinuxInterface.Name {
		t.Errorf("first ValidationError is of model %s", ve.Model)
	}
}

// TestParseConfigRegistryWithoutModel: a document field whose model is
// not in the registry is an error, not silently dropped.
func TestParseConfigRegistryWithoutModel(t *testing.T) {
	r, err := models.NewRegistry(models.VPPInterface)
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := r.ParseConfig([]byte("vpp_config:\n  interfaces:\n  - name: loop1\n  routes:\n  - dst_network: 10.0.0.0/8\n"))
	if kvs != nil {
		t.Errorf("items returned with an error: %v", kvs)
	}
	cfgCheckProblems(t, err, []cfgProblem{{"vpp_config.routes", "no model registered"}})

	kvs, err = r.ParseConfig([]byte("vpp_config:\n  interfaces:\n  - name: loop1\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfgSameKVs(t, kvs, []models.KV{{Key: "config/vpp/v2/interfaces/loop1", Value: &vppif.Interface{Name: "loop1"}}})
}

func TestConfigRoundTrip(t *testing.T) {
	for _, doc := range []struct{ name, data string }{
		{"full.yaml", string(cfgReadFile(t, "full.yaml"))},
		{"camel JSON", cfgFullJSON},
	} {
		t.Run(doc.name, func(t *testing.T) {
			r := models.Default
			kvs, err := r.ParseConfig([]byte(doc.data))
			if err != nil {
				t.Fatal(err)
			}
			c, err := r.BuildConfig(kvs)
			if err != nil {
				t.Fatal(err)
			}
			cfgCheckSorted(t, r, c)
			y, err := models.MarshalYAML(c)
			if err != nil {
				t.Fatal(err)
			}
			back, err := r.ParseConfig(y)
			if err != nil {
				t.Fatalf("ParseConfig of MarshalYAML output: %v\n%s", err, y)
			}
			cfgSameSet(t, back, kvs)

			// The YAML uses the proto field names.
			for _, want := range []string{"vpp_config:", "linux_config:", "ip_addresses:"} {
				if !strings.Contains(string(y), want) {
					t.Errorf("MarshalYAML output has no %q:\n%s", want, y)
				}
			}
			// Once sorted, the document is stable: build, marshal, parse and
			// build again give the same document, byte for byte.
			c2, err := r.BuildConfig(back)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(c, c2) {
				t.Errorf("BuildConfig differs after a round trip:\n%v\n%v", c, c2)
			}
			y2, err := models.MarshalYAML(c2)
			if err != nil {
				t.Fatal(err)
			}
			if string(y) != string(y2) {
				t.Errorf("MarshalYAML not stable:\n%s\n---\n%s", y, y2)
			}
			// And through JSON too.
			js, err := models.MarshalJSON(c)
			if err != nil {
				t.Fatal(err)
			}
			backJS, err := r.ParseConfig(js)
			if err != nil {
				t.Fatal(err)
			}
			cfgSameSet(t, backJS, kvs)
		})
	}
}

// cfgCheckSorted checks that each list of c is sorted by key.
func cfgCheckSorted(t *testing.T, r *models.Registry, c *configpb.Config) {
	t.Helper()
	check := func(field string, list []proto.Message) {
		var keys []string
		for _, v := range list {
			k, err := r.Key(v)
			if err != nil {
				t.Errorf("%s: %v", field, err)
			}
			keys = append(keys, k)
		}
		if !sort.StringsAreSorted(keys) {
			t.Errorf("%s is not sorted by key: %q", field, keys)
		}
	}
	check("vpp_config.interfaces", cfgMessages(c.GetVppConfig().GetInterfaces()))
	check("vpp_config.bridge_domains", cfgMessages(c.GetVppConfig().GetBridgeDomains()))
	check("vpp_config.routes", cfgMessages(c.GetVppConfig().GetRoutes()))
	check("vpp_config.arps", cfgMessages(c.GetVppConfig().GetArps()))
	check("vpp_config.acls", cfgMessages(c.GetVppConfig().GetAcls()))
	check("linux_config.interfaces", cfgMessages(c.GetLinuxConfig().GetInterfaces()))
	check("linux_config.arp_entries", cfgMessages(c.GetLinuxConfig().GetArpEntries()))
	check("linux_config.routes", cfgMessages(c.GetLinuxConfig().GetRoutes()))
}

func cfgMessages[M proto.Message](list []M) []proto.Message {
	out := make([]proto.Message, len(list))
	for i, v := range list {
		out[i] = v
	}
	return out
}

func TestBuildConfigSorted(t *testing.T) {
	r := models.Default
	kvs := cfgFullKVs()
	// Reverse the input: the output does not depend on the order.
	for i, j := 0, len(kvs)-1; i < j; i, j = i+1, j-1 {
		kvs[i], kvs[j] = kvs[j], kvs[i]
	}
	c, err := r.BuildConfig(kvs)
	if err != nil {
		t.Fatal(err)
	}
	cfgCheckSorted(t, r, c)
	var names []string
	for _, i := range c.GetVppConfig().GetInterfaces() {
		names = append(names, i.GetName())
	}
	want := []string{"GigabitEthernet0/8/0", "GigabitEthernet0/8/0.100", "afp1", "afp2", "loop1", "memif1/1", "tap1", "unnum1", "vxlan1"}
	if !biEqualStrings(names, want) {
		t.Errorf("vpp_config.interfaces in order %q, want %q", names, want)
	}
	var dsts []string
	for _, rt := range c.GetVppConfig().GetRoutes() {
		dsts = append(dsts, rt.GetDstNetwork())
	}
	// Keys: if/GigabitEthernet0/8/0/..., if/loop1/..., vrf/0/..., vrf/1/...
	wantDsts := []string{"2001:db8:2::/64", "10.1.2.3/16", "2001:DB8:1::/48", "0.0.0.0/0"}
	if !biEqualStrings(dsts, wantDsts) {
		t.Errorf("vpp_config.routes in order %q, want %q", dsts, wantDsts)
	}
	if n := len(c.GetLinuxConfig().GetInterfaces()); n != 7 {
		t.Errorf("%d linux interfaces, want 7", n)
	}
	// BuildConfig copies the values: changing an input afterwards does not
	// change the document.
	kvs[len(kvs)-1].Value.(*linuxl3.ARPEntry).HwAddress = "02:ff:ff:ff:ff:ff"
	if got := c.GetLinuxConfig().GetArpEntries()[0].GetHwAddress(); got != "02:00:00:00:01:02" {
		t.Errorf("the document follows a change of its input: hw_address %s", got)
	}

	// An empty list gives an empty document.
	c, err = r.BuildConfig(nil)
	if err != nil || !proto.Equal(c, &configpb.Config{}) {
		t.Errorf("BuildConfig(nil) = %v, %v; want an empty document", c, err)
	}
}

func TestBuildConfigErrors(t *testing.T) {
	// A message of no model.
	_, err := models.Default.BuildConfig([]models.KV{{Key: "x", Value: &configpb.Config{}}})
	if err == nil || !strings.Contains(err.Error(), `key "x"`) || !strings.Contains(err.Error(), "netagent.config.Config") {
		t.Errorf("BuildConfig of a Config value: %v", err)
	}
	// A message of a model the registry does not have.
	r, err := models.NewRegistry(models.VPPInterface)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.BuildConfig([]models.KV{{Key: "config/vpp/v2/arp/loop1/10.0.0.1", Value: &vppl3.ARPEntry{Interface: "loop1"}}})
	if err == nil || !strings.Contains(err.Error(), "vpp.l3.ARPEntry") {
		t.Errorf("BuildConfig of an ARP entry without its model: %v", err)
	}
}

func TestConfigKVs(t *testing.T) {
	r := models.Default
	c := &configpb.Config{
		VppConfig: &configpb.VppConfig{
			Interfaces: []*vppif.Interface{
				{Name: "loop2", Type: vppif.Interface_SOFTWARE_LOOPBACK},
				{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, IpAddresses: []string{"10.0.0.1/24"}},
			},
			BridgeDomains: []*vppl2.BridgeDomain{{Name: "bd1"}},
			Routes:        []*vppl3.Route{{DstNetwork: "10.9.8.7/8", OutgoingInterface: "loop1"}},
			Arps:          []*vppl3.ARPEntry{{Interface: "loop1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02"}},
		},
		LinuxConfig: &configpb.LinuxConfig{
			Interfaces: []*linuxif.Interface{{Name: "dummy1", Type: linuxif.Interface_DUMMY}},
			ArpEntries: []*linuxl3.ARPEntry{{Interface: "dummy1", IpAddress: "fe80::2", HwAddress: "02:00:00:00:00:03"}},
			Routes:     []*linuxl3.Route{{OutgoingInterface: "dummy1", DstNetwork: "fe80::/64"}},
		},
	}
	kvs, err := r.ConfigKVs(c)
	if err != nil {
		t.Fatal(err)
	}
	want := []models.KV{
		{Key: "config/linux/l3/v2/arp/dummy1/fe80::2", Value: c.LinuxConfig.ArpEntries[0]},
		{Key: "config/linux/interfaces/v2/interface/dummy1", Value: c.LinuxConfig.Interfaces[0]},
		{Key: "config/linux/l3/v2/route/fe80::/64/dummy1", Value: c.LinuxConfig.Routes[0]},
		{Key: "config/vpp/v2/arp/loop1/10.0.0.2", Value: c.VppConfig.Arps[0]},
		{Key: "config/vpp/l2/v2/bridge-domain/bd1", Value: c.VppConfig.BridgeDomains[0]},
		{Key: "config/vpp/v2/interfaces/loop2", Value: c.VppConfig.Interfaces[0]},
		{Key: "config/vpp/v2/interfaces/loop1", Value: c.VppConfig.Interfaces[1]},
		{Key: "config/vpp/v2/route/if/loop1/vrf/0/dst/10.0.0.0/8", Value: c.VppConfig.Routes[0]},
	}
	// Each list keeps its order (loop2 before loop1).
	cfgSameKVs(t, kvs, want)

	// BuildConfig of the items gives the document back, sorted.
	back, err := r.BuildConfig(kvs)
	if err != nil {
		t.Fatal(err)
	}
	sorted := proto.Clone(c).(*configpb.Config)
	ifs := sorted.VppConfig.Interfaces
	ifs[0], ifs[1] = ifs[1], ifs[0]
	if !proto.Equal(back, sorted) {
		t.Errorf("BuildConfig(ConfigKVs(c)):\n got %v\nwant %v", back, sorted)
	}

	// An empty document has no items.
	for _, empty := range []*configpb.Config{{}, {VppConfig: &configpb.VppConfig{}, LinuxConfig: &configpb.LinuxConfig{}}} {
		kvs, err := r.ConfigKVs(empty)
		if err != nil || len(kvs) != 0 {
			t.Errorf("ConfigKVs(%v) = %v, %v; want nothing", empty, kvs, err)
		}
	}

	// Invalid items and duplicates are reported with their places.
	bad := &configpb.Config{VppConfig: &configpb.VppConfig{
		Interfaces: []*vppif.Interface{{Name: "loop1"}, {Name: "loop1", Mtu: 1}, {Name: "loop3", Mtu: 9999}},
	}}
	kvs, err = r.ConfigKVs(bad)
	if kvs != nil {
		t.Errorf("items returned with an error: %v", kvs)
	}
	cfgCheckProblems(t, err, []cfgProblem{
		{"vpp_config.interfaces[1]", `key "config/vpp/v2/interfaces/loop1" is already vpp_config.interfaces[0]`},
		{"vpp_config.interfaces[2]", "mtu: 9999 is above 9216"},
	})
}

// TestParseConfigJSONNumbers: uint32 fields accept JSON numbers and
// strings, as protojson does, and reject what does not fit.
func TestParseConfigJSONNumbers(t *testing.T) {
	kvs, err := models.Default.ParseConfig([]byte(`{"vpp_config":{"routes":[{"vrf_id":"7","dst_network":"10.0.0.0/8","outgoing_interface":"loop1","weight":1e2}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfgSameKVs(t, kvs, []models.KV{{Key: "config/vpp/v2/route/if/loop1/vrf/7/dst/10.0.0.0/8", Value: &vppl3.Route{VrfId: 7, DstNetwork: "10.0.0.0/8", OutgoingInterface: "loop1", Weight: 100}}})

	_, err = models.Default.ParseConfig([]byte(`{"vpp_config":{"routes":[{"vrf_id":-1,"dst_network":"10.0.0.0/8"}]}}`))
	cfgCheckProblems(t, err, []cfgProblem{{"vpp_config.routes[0]", "-1"}})
}

// TestParseConfigDuplicateMappingKeys: a name given twice in one mapping
// (a section, a field of a section, a field of an item) is an error, as it
// is for DecodeValue (protojson rejects duplicate fields); keeping only the
// last would drop configuration silently.
func TestParseConfigDuplicateMappingKeys(t *testing.T) {
	for _, c := range []struct{ name, doc string }{
		{"section twice", "vpp_config:\n  interfaces:\n  - name: a\nvpp_config:\n  interfaces:\n  - name: b\n"},
		{"section in both spellings", "vpp_config:\n  interfaces:\n  - name: a\nvppConfig:\n  interfaces:\n  - name: b\n"},
		{"field twice", "vpp_config:\n  interfaces:\n  - name: a\n  interfaces:\n  - name: b\n"},
		{"field in both spellings", "vpp_config:\n  bridge_domains:\n  - name: a\n  bridgeDomains:\n  - name: b\n"},
		{"item field twice", "vpp_config:\n  interfaces:\n  - name: a\n    name: b\n"},
		{"JSON section twice", `{"vpp_config":{"interfaces":[{"name":"a"}]},"vpp_config":{"interfaces":[{"name":"b"}]}}`},
		{"JSON item field twice", `{"vpp_config":{"interfaces":[{"name":"a","name":"b"}]}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			kvs, err := models.Default.ParseConfig([]byte(c.doc))
			if err == nil {
				t.Fatalf("ParseConfig(%q) = %q, no error: a name given twice in a mapping must be reported", c.doc, cfgKeys(kvs))
			}
			if kvs != nil {
				t.Errorf("items returned with an error: %v", kvs)
			}
		})
	}
}

// TestConfigRoundTripAwkwardNames: names that YAML would read as another
// type, or as syntax, survive BuildConfig, MarshalYAML and ParseConfig.
func TestConfigRoundTripAwkwardNames(t *testing.T) {
	names := []string{
		"1", "-1", "007", "1.5", "1e3", "0x1F", "0o17", "0b101", "1_000", "12:34:56", ".inf", ".NaN",
		"true", "false", "on", "off", "yes", "no", "y", "n", "Y", "N", "null", "Null", "~",
		"2001-01-01", "2001-01-01T00:00:00Z",
		"-", "--", "---", "...", "?", ":", "a:", ":a", "a:b", "#", "a#b", "*ref", "&anchor", "!tag", "!!str", "%dir", "@at", "`bt",
		"|", ">", "[a]", "{a}", "a,b", "'q'", `"dq"`, `back\slash`, "<<", "=", "é", "日本",
		"GigabitEthernet0/8/0", "memif1/1",
	}
	r := models.Default
	var kvs []models.KV
	for _, n := range names {
		values := []proto.Message{
			&vppl2.BridgeDomain{Name: n, Interfaces: []*vppl2.BridgeDomain_Interface{{Name: n}}},
			&vppl3.ARPEntry{Interface: n, IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01"},
		}
		if !strings.Contains(n, "/") { // Linux interface names have no "/"
			values = append(values, &linuxif.Interface{Name: n, HostIfName: "eth0", VrfMasterInterface: n + "x"})
		}
		for _, v := range values {
			k, err := r.Key(v)
			if err != nil {
				t.Fatalf("name %q: %v", n, err)
			}
			kvs = append(kvs, models.KV{Key: k, Value: v})
		}
	}
	c, err := r.BuildConfig(kvs)
	if err != nil {
		t.Fatal(err)
	}
	y, err := models.MarshalYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := r.ParseConfig(y)
	if err != nil {
		t.Fatalf("ParseConfig of MarshalYAML output: %v\n%s", err, y)
	}
	cfgSameSet(t, back, kvs)
}

// bigConfig is a document of n Linux routes and n VPP routes over a few
// interfaces.
func bigConfig(n int) *configpb.Config {
	c := &configpb.Config{
		VppConfig:   &configpb.VppConfig{Interfaces: []*vppif.Interface{{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK}}},
		LinuxConfig: &configpb.LinuxConfig{Interfaces: []*linuxif.Interface{{Name: "dummy1", Type: linuxif.Interface_DUMMY}}},
	}
	for i := range n {
		dst := fmt.Sprintf("10.%d.%d.0/24", i/256%256, i%256)
		c.LinuxConfig.Routes = append(c.LinuxConfig.Routes, &linuxl3.Route{OutgoingInterface: "dummy1", DstNetwork: dst, GwAddr: "192.168.1.1"})
		c.VppConfig.Routes = append(c.VppConfig.Routes, &vppl3.Route{OutgoingInterface: "loop1", DstNetwork: dst, NextHopAddr: "192.168.2.1"})
	}
	return c
}

// configKVsAsParsed checks that ConfigKVs of c gives what ParseConfig of
// c's JSON form gives, and returns it.
func configKVsAsParsed(t *testing.T, c *configpb.Config) []models.KV {
	t.Helper()
	got, err := models.Default.ConfigKVs(c)
	if err != nil {
		t.Fatal(err)
	}
	js, err := models.MarshalJSON(c)
	if err != nil {
		t.Fatal(err)
	}
	want, err := models.Default.ParseConfig(js)
	if err != nil {
		t.Fatal(err)
	}
	cfgSameKVs(t, got, want)
	return got
}

// ConfigKVs walks the document's messages: it gives what reading the
// document's JSON form gives (ParseConfig, which it did before), item by
// item and in the same order.
func TestConfigKVsIsParseConfigOfItsJSON(t *testing.T) {
	if got := configKVsAsParsed(t, bigConfig(300)); len(got) != 602 {
		t.Errorf("%d items, want 602", len(got))
	}
}

// BenchmarkConfigKVs: a gRPC Update of 10k routes is converted by the
// agent with ConfigKVs (and agentctl's Get with it too).
func BenchmarkConfigKVs(b *testing.B) {
	c := bigConfig(5000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := models.Default.ConfigKVs(c); err != nil {
			b.Fatal(err)
		}
	}
}

// A JSON document is read as JSON, a YAML one through the YAML parser:
// both give the same items, and a name twice in a JSON object is refused
// at every level.
func TestParseConfigJSONAndYAMLAgree(t *testing.T) {
	c := bigConfig(200)
	js, err := models.MarshalJSON(c)
	if err != nil {
		t.Fatal(err)
	}
	ym, err := models.MarshalYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := models.Default.ParseConfig(js)
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, err := models.Default.ParseConfig(ym)
	if err != nil {
		t.Fatal(err)
	}
	cfgSameKVs(t, fromJSON, fromYAML)
	for _, doc := range []string{
		`{"linux_config":{"routes":[]},"linux_config":{}}`,
		`{"linux_config":{"routes":[],"routes":[]}}`,
		` {"vpp_config":{"interfaces":[{"name":"a","name":"b"}]}} `,
	} {
		if kvs, err := models.Default.ParseConfig([]byte(doc)); err == nil {
			t.Errorf("ParseConfig(%s) = %v, want an error: a name twice", doc, cfgKeys(kvs))
		}
	}
}

// BenchmarkParseConfig: the 10k-item document agentctl reads, as YAML and
// as JSON.
func BenchmarkParseConfig(b *testing.B) {
	c := bigConfig(5000)
	js, err := models.MarshalJSON(c)
	if err != nil {
		b.Fatal(err)
	}
	ym, err := models.MarshalYAML(c)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"YAML", ym}, {"JSON", js}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(f.data)))
			for range b.N {
				if _, err := models.Default.ParseConfig(f.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A long list's keys are worked out on more than one core: the values and
// their order, the errors and the places they name are those of the one
// pass (ParseConfig of the JSON form), a nil item and a duplicate across
// the chunks included.
func TestConfigKVsOfALongList(t *testing.T) {
	c := bigConfig(5000)
	configKVsAsParsed(t, c)

	routes := c.VppConfig.Routes
	routes[4100] = &vppl3.Route{OutgoingInterface: "loop1", DstNetwork: "10.0.0.0/99"}
	routes[4999] = proto.Clone(routes[7]).(*vppl3.Route)
	routes[3000] = nil
	_, err := models.Default.ConfigKVs(c)
	for _, want := range []string{"vpp_config.routes[4100]", "vpp_config.routes[4999]: key", "vpp_config.routes[7]", "vpp_config.routes[3000]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ConfigKVs with a bad, a repeated and a nil route: %v, want it to name %s", err, want)
		}
	}
}

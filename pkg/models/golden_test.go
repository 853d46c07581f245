package models_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/netagent-io/netagent/pkg/models"
)

// goldenDir holds one hand-written JSON value per file, as etcd holds it:
// protojson with the proto field names, enums by name, defaults left out,
// fields in declaration order, compact, followed by one newline.
const goldenDir = "testdata/golden"

// goldenFiles maps each golden file to the model key it is stored under and
// the model of that key. The keys are written by hand from the templates of
// shared/spec/models.md.
var goldenFiles = []struct {
	file  string
	key   string
	model *models.Model
}{
	{"vpp_interface_loop.json", "config/vpp/v2/interfaces/loop1", models.VPPInterface},
	{"vpp_interface.json", "config/vpp/v2/interfaces/GigabitEthernet0/8/0", models.VPPInterface},
	{"vpp_interface_unnumbered.json", "config/vpp/v2/interfaces/loop2", models.VPPInterface},
	{"vpp_interface_sub.json", "config/vpp/v2/interfaces/GigabitEthernet0/8/0.100", models.VPPInterface},
	{"vpp_interface_memif.json", "config/vpp/v2/interfaces/memif1/1", models.VPPInterface},
	{"vpp_interface_afpacket.json", "config/vpp/v2/interfaces/afp1", models.VPPInterface},
	{"vpp_interface_afpacket_linux.json", "config/vpp/v2/interfaces/afp2", models.VPPInterface},
	{"vpp_interface_tap.json", "config/vpp/v2/interfaces/tap1", models.VPPInterface},
	{"vpp_interface_tap_empty.json", "config/vpp/v2/interfaces/tap0", models.VPPInterface},
	{"vpp_bridge_domain.json", "config/vpp/l2/v2/bridge-domain/bd1", models.VPPBridgeDomain},
	{"vpp_route.json", "config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/1/dst/10.1.0.0/16/gw/192.168.1.1", models.VPPRoute},
	{"vpp_route_drop.json", "config/vpp/v2/route/vrf/4/dst/2001:db8:1::/48", models.VPPRoute},
	{"vpp_route_inter_vrf.json", "config/vpp/v2/route/vrf/1/dst/0.0.0.0/0/gw/10.2.0.1", models.VPPRoute},
	{"vpp_route_hostbits.json", "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1", models.VPPRoute},
	{"vpp_arp.json", "config/vpp/v2/arp/GigabitEthernet0/8/0/192.168.1.20", models.VPPARP},
	{"vpp_arp_ipv6.json", "config/vpp/v2/arp/eth0.100/2001:db8::14", models.VPPARP},
	{"linux_interface_veth.json", "config/linux/interfaces/v2/interface/veth1", models.LinuxInterface},
	{"linux_interface_tap.json", "config/linux/interfaces/v2/interface/tap-linux1", models.LinuxInterface},
	{"linux_interface_existing.json", "config/linux/interfaces/v2/interface/uplink-eth0", models.LinuxInterface},
	{"linux_interface_loopback.json", "config/linux/interfaces/v2/interface/lo-ms1", models.LinuxInterface},
	{"linux_interface_vrf.json", "config/linux/interfaces/v2/interface/vrf-red", models.LinuxInterface},
	{"linux_interface_dummy.json", "config/linux/interfaces/v2/interface/eth0.100", models.LinuxInterface},
	{"linux_route.json", "config/linux/l3/v2/route/10.20.0.0/16/veth1", models.LinuxRoute},
	{"linux_route_link.json", "config/linux/l3/v2/route/2001:db8:2::/64/uplink/eth0", models.LinuxRoute},
	{"linux_route_host.json", "config/linux/l3/v2/route/10.30.0.1/32/eth0.100", models.LinuxRoute},
	{"linux_arp.json", "config/linux/l3/v2/arp/veth1/10.10.0.2", models.LinuxARP},
	{"linux_arp_ipv6.json", "config/linux/l3/v2/arp/uplink/eth0/fe80::1", models.LinuxARP},
}

// readGolden returns the content of a golden file without its trailing
// newline, failing the test unless the file is one line ending in exactly
// one newline.
func readGolden(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, file))
	if err != nil {
		t.Fatal(err)
	}
	body, ok := bytes.CutSuffix(data, []byte("\n"))
	if !ok || bytes.ContainsAny(body, "\r\n") || len(body) == 0 {
		t.Fatalf("%s: want one line of JSON followed by a single newline, got %q", file, data)
	}
	return body
}

// TestGoldenFilesListed makes sure every golden file is in the table and
// every table entry has its file, so that no file goes untested.
func TestGoldenFilesListed(t *testing.T) {
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk, listed []string
	for _, e := range entries {
		onDisk = append(onDisk, e.Name())
	}
	seen := map[string]bool{}
	for _, g := range goldenFiles {
		if seen[g.file] {
			t.Errorf("%s listed twice", g.file)
		}
		seen[g.file] = true
		listed = append(listed, g.file)
	}
	sort.Strings(onDisk)
	sort.Strings(listed)
	if len(onDisk) != len(listed) {
		t.Fatalf("files in %s: %q\nlisted in goldenFiles: %q", goldenDir, onDisk, listed)
	}
	for i := range onDisk {
		if onDisk[i] != listed[i] {
			t.Fatalf("files in %s: %q\nlisted in goldenFiles: %q", goldenDir, onDisk, listed)
		}
	}
}

// TestGoldenRoundTrip decodes each golden file under its key and encodes it
// again: the bytes must be those of the file.
func TestGoldenRoundTrip(t *testing.T) {
	for _, g := range goldenFiles {
		t.Run(g.file, func(t *testing.T) {
			want := readGolden(t, g.file)
			m, v, err := models.Default.DecodeValue(g.key, want)
			if err != nil {
				t.Fatalf("DecodeValue(%q): %v", g.key, err)
			}
			if m != g.model {
				t.Fatalf("DecodeValue(%q): model %s, want %s", g.key, m.Name, g.model.Name)
			}
			got, err := models.MarshalJSON(v)
			if err != nil {
				t.Fatalf("MarshalJSON: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("MarshalJSON(DecodeValue(%s)):\n got %s\nwant %s", g.file, got, want)
			}
			// The key of the decoded value is the key of the table.
			key, err := g.model.Key(v)
			if err != nil {
				t.Fatalf("Key: %v", err)
			}
			if key != g.key {
				t.Errorf("Key = %q, want %q", key, g.key)
			}
			// EncodeValue gives the same key and bytes.
			ekey, edata, err := models.Default.EncodeValue(v)
			if err != nil {
				t.Fatalf("EncodeValue: %v", err)
			}
			if ekey != g.key || !bytes.Equal(edata, want) {
				t.Errorf("EncodeValue = %q, %s\nwant %q, %s", ekey, edata, g.key, want)
			}
			// Plain UnmarshalJSON into a fresh value gives the same bytes.
			fresh := g.model.New()
			if err := models.UnmarshalJSON(want, fresh); err != nil {
				t.Fatalf("UnmarshalJSON: %v", err)
			}
			again, err := models.MarshalJSON(fresh)
			if err != nil {
				t.Fatalf("MarshalJSON: %v", err)
			}
			if !bytes.Equal(again, want) {
				t.Errorf("MarshalJSON(UnmarshalJSON(%s)):\n got %s\nwant %s", g.file, again, want)
			}
		})
	}
}

// camelCaseValues are the golden values written with the lowerCamelCase
// JSON names (and, for some, other field orders and spacing). Each must
// encode to the bytes of its golden file.
var camelCaseValues = []struct {
	file string
	json string
}{
	{"vpp_interface_loop.json", `{"name":"loop1","type":"SOFTWARE_LOOPBACK","enabled":true,"ipAddresses":["10.0.0.1/24"]}`},
	{"vpp_interface.json", `{"mtu":9000,"setDhcpClient":true,"vrf":3,"ipAddresses":["10.0.0.1/24","2001:db8::1/64"],"physAddress":"02:00:00:00:00:01","enabled":true,"type":"DPDK","name":"GigabitEthernet0/8/0"}`},
	{"vpp_interface_unnumbered.json", `{"name":"loop2","type":"SOFTWARE_LOOPBACK","enabled":true,"unnumbered":{"interfaceWithIp":"loop1"}}`},
	{"vpp_interface_sub.json", `{"sub":{"subId":100,"parentName":"GigabitEthernet0/8/0"},"name":"GigabitEthernet0/8/0.100","type":"SUB_INTERFACE","enabled":true,"ipAddresses":["192.168.100.1/24"],"mtu":1500}`},
	{"vpp_interface_memif.json", `{
  "name": "memif1/1",
  "type": "MEMIF",
  "enabled": true,
  "physAddress": "02:00:00:00:00:02",
  "ipAddresses": ["192.168.1.1/24"],
  "vrf": 7,
  "memif": {
    "mode": "IP",
    "master": true,
    "id": 7,
    "socketFilename": "/run/vpp/memif.sock",
    "secret": "s3cret",
    "ringSize": 1024,
    "bufferSize": 2048,
    "rxQueues": 2,
    "txQueues": 2
  }
}`},
	{"vpp_interface_afpacket.json", `{"name":"afp1","type":"AF_PACKET","enabled":true,"afpacket":{"hostIfName":"veth-host1"}}`},
	{"vpp_interface_afpacket_linux.json", `{"name":"afp2","type":"AF_PACKET","afpacket":{"linuxInterface":"veth1"}}`},
	{"vpp_interface_tap.json", `{"name":"tap1","type":"TAP","enabled":true,"ipAddresses":["172.16.0.1/30"],"mtu":1500,"tap":{"version":2,"hostIfName":"tap-host1","toMicroservice":"ms1","rxRingSize":256,"txRingSize":512,"enableGso":true,"enableTunnel":true}}`},
	{"vpp_interface_tap_empty.json", `{"name":"tap0","type":"TAP","tap":{}}`},
	{"vpp_bridge_domain.json", `{"name":"bd1","flood":true,"unknownUnicastFlood":true,"forward":true,"learn":true,"arpTermination":true,"macAge":30,"interfaces":[{"name":"loop1","bridgedVirtualInterface":true},{"name":"memif1/1","splitHorizonGroup":1},{"name":"GigabitEthernet0/8/0.100"}],"arpTerminationTable":[{"ipAddress":"192.168.1.10","physAddress":"02:00:00:00:00:0a"},{"ipAddress":"2001:db8::10","physAddress":"02:00:00:00:00:0b"}]}`},
	{"vpp_route.json", `{"vrfId":1,"dstNetwork":"10.1.0.0/16","nextHopAddr":"192.168.1.1","outgoingInterface":"GigabitEthernet0/8/0","weight":5,"preference":10,"type":"INTRA_VRF"}`},
	{"vpp_route_inter_vrf.json", `{"viaVrfId":2,"nextHopAddr":"10.2.0.1","dstNetwork":"0.0.0.0/0","vrfId":1,"type":"INTER_VRF"}`},
	{"vpp_route_drop.json", `{"type":"DROP","vrfId":4,"dstNetwork":"2001:db8:1::/48"}`},
	{"vpp_route_hostbits.json", `{"dstNetwork":"10.1.2.3/16","nextHopAddr":"10.0.0.1"}`},
	{"vpp_arp.json", `{"interface":"GigabitEthernet0/8/0","ipAddress":"192.168.1.20","physAddress":"02:00:00:00:00:14","static":true}`},
	{"vpp_arp_ipv6.json", `{"interface":"eth0.100","ipAddress":"2001:db8::14","physAddress":"02:00:00:00:00:15"}`},
	{"linux_interface_veth.json", `{"name":"veth1","type":"VETH","namespace":{"type":"NSID","reference":"ns1"},"hostIfName":"veth-ns1","enabled":true,"ipAddresses":["10.10.0.1/24","fd00::1/64"],"physAddress":"02:00:00:00:01:01","mtu":1450,"vrfMasterInterface":"vrf-red","veth":{"peerIfName":"veth2","rxChecksumOffloading":"CHKSM_OFFLOAD_DISABLED","txChecksumOffloading":"CHKSM_OFFLOAD_ENABLED"}}`},
	{"linux_interface_tap.json", `{"tap":{"vppTapIfName":"tap1"},"linkOnly":true,"enabled":true,"hostIfName":"tap1","namespace":{"reference":"ms1","type":"MICROSERVICE"},"type":"TAP_TO_VPP","name":"tap-linux1"}`},
	{"linux_interface_existing.json", `{"name":"uplink-eth0","type":"EXISTING","namespace":{"type":"FD","reference":"/proc/1/ns/net"},"hostIfName":"eth0","enabled":true,"ipAddresses":["192.0.2.10/24"]}`},
	{"linux_interface_loopback.json", `{"name":"lo-ms1","type":"LOOPBACK","namespace":{"type":"PID","reference":"1234"},"hostIfName":"lo","enabled":true}`},
	{"linux_interface_dummy.json", `{"name":"eth0.100","type":"DUMMY","enabled":true,"ipAddresses":["198.51.100.1/32"],"physAddress":"02:00:00:00:02:01","mtu":1500}`},
	{"linux_route.json", `{"outgoingInterface":"veth1","scope":"GLOBAL","dstNetwork":"10.20.0.0/16","gwAddr":"10.10.0.254","metric":100}`},
	{"linux_route_link.json", `{"dstNetwork":"2001:db8:2::/64","scope":"LINK","outgoingInterface":"uplink/eth0"}`},
	{"linux_route_host.json", `{"outgoingInterface":"eth0.100","scope":"HOST","dstNetwork":"10.30.0.1/32","metric":5}`},
	{"linux_arp.json", `{"interface":"veth1","ipAddress":"10.10.0.2","hwAddress":"02:00:00:00:01:02"}`},
	{"linux_arp_ipv6.json", `{"interface":"uplink/eth0","ipAddress":"fe80::1","hwAddress":"02:00:00:00:01:03"}`},
}

// TestGoldenCamelCase decodes lowerCamelCase spellings of the golden values:
// they are read as the same values and written in snake_case.
func TestGoldenCamelCase(t *testing.T) {
	keys := map[string]string{}
	for _, g := range goldenFiles {
		keys[g.file] = g.key
	}
	for _, c := range camelCaseValues {
		t.Run(c.file, func(t *testing.T) {
			key, ok := keys[c.file]
			if !ok {
				t.Fatalf("%s is not in goldenFiles", c.file)
			}
			want := readGolden(t, c.file)
			_, v, err := models.Default.DecodeValue(key, []byte(c.json))
			if err != nil {
				t.Fatalf("DecodeValue(%q, %s): %v", key, c.json, err)
			}
			got, err := models.MarshalJSON(v)
			if err != nil {
				t.Fatalf("MarshalJSON: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("MarshalJSON(DecodeValue(camelCase %s)):\n got %s\nwant %s", c.file, got, want)
			}
		})
	}
}

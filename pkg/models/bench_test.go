package models_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// benchKeys are keys of every built-in model, each with its model (nil: a
// miss).
func benchKeys() ([]string, []*models.Model) {
	var keys []string
	var want []*models.Model
	add := func(m *models.Model, ks ...string) {
		for _, k := range ks {
			keys = append(keys, k)
			want = append(want, m)
		}
	}
	add(models.VPPInterface, "config/vpp/v2/interfaces/loop1", "config/vpp/v2/interfaces/GigabitEthernet0/8/0")
	add(models.VPPBridgeDomain, "config/vpp/l2/v2/bridge-domain/bd1")
	add(models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.0.0.0/8", "config/vpp/v2/route/if/loop1/vrf/1/dst/10.1.0.0/16/gw/10.0.0.254")
	add(models.VPPARP, "config/vpp/v2/arp/loop1/10.0.0.2")
	add(models.LinuxInterface, "config/linux/interfaces/v2/interface/veth1")
	add(models.LinuxRoute, "config/linux/l3/v2/route/10.0.0.0/8/veth1")
	add(models.LinuxARP, "config/linux/l3/v2/arp/veth1/10.0.0.2")
	add(nil,
		"config/vpp/v3/interfaces/loop1",
		"config/linux/l3/v2/neighbor/veth1/10.0.0.2",
		"config/vpp/v2/interfaces",
		"/vnf-agent/vpp1/config/vpp/v2/interfaces/loop1",
		"status/vpp/v2/interfaces/loop1",
		"x",
	)
	return keys, want
}

func BenchmarkModelOfKey(b *testing.B) {
	r, err := models.NewRegistry(models.Builtin()...)
	if err != nil {
		b.Fatal(err)
	}
	keys, want := benchKeys()
	for i, k := range keys {
		if got := r.ModelOfKey(k); got != want[i] {
			b.Fatalf("ModelOfKey(%q) = %v, want %v", k, got, want[i])
		}
	}
	b.ReportAllocs()
	found := 0
	for i := 0; b.Loop(); i++ {
		if r.ModelOfKey(keys[i%len(keys)]) != nil {
			found++
		}
	}
	if found == 0 {
		b.Fatal("no key found")
	}
}

// benchValues returns n keys and JSON values of every model, mixed.
func benchValues(b *testing.B, n int) (keys []string, values [][]byte) {
	keys = make([]string, 0, n)
	values = make([][]byte, 0, n)
	for i := range n {
		var v proto.Message
		a, c := byte(i>>8), byte(i)
		ip := fmt.Sprintf("10.%d.%d.%d", byte(i>>16), a, c)
		mac := fmt.Sprintf("02:00:00:%02x:%02x:%02x", byte(i>>16), a, c)
		switch i % 7 {
		case 0:
			v = &vppif.Interface{Name: fmt.Sprintf("loop%d", i), Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true,
				IpAddresses: []string{ip + "/24", fmt.Sprintf("2001:db8::%x:%x/64", i>>16, i&0xffff)}, Mtu: 1500}
		case 1:
			v = &vppl2.BridgeDomain{Name: fmt.Sprintf("bd%d", i), Flood: true, Learn: true, Forward: true,
				Interfaces: []*vppl2.BridgeDomain_Interface{{Name: fmt.Sprintf("loop%d", i-1), BridgedVirtualInterface: true}, {Name: fmt.Sprintf("memif%d/1", i)}}}
		case 2:
			v = &vppl3.Route{VrfId: uint32(i % 5), DstNetwork: ip + "/32", NextHopAddr: "192.168.0.1", OutgoingInterface: fmt.Sprintf("loop%d", i)}
		case 3:
			v = &vppl3.ARPEntry{Interface: fmt.Sprintf("loop%d", i%100), IpAddress: ip, PhysAddress: mac, Static: true}
		case 4:
			v = &linuxif.Interface{Name: fmt.Sprintf("veth%d", i), Type: linuxif.Interface_VETH, Enabled: true,
				IpAddresses: []string{ip + "/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: fmt.Sprintf("peer%d", i)}}}
		case 5:
			v = &linuxl3.Route{OutgoingInterface: fmt.Sprintf("veth%d", i%100), DstNetwork: ip + "/32", GwAddr: "192.168.0.1", Metric: 10}
		case 6:
			v = &linuxl3.ARPEntry{Interface: fmt.Sprintf("veth%d", i%100), IpAddress: ip, HwAddress: mac}
		}
		k, data, err := models.Default.EncodeValue(v)
		if err != nil {
			b.Fatalf("value %d: %v", i, err)
		}
		keys = append(keys, k)
		values = append(values, data)
	}
	return keys, values
}

func BenchmarkDecodeValues100k(b *testing.B) {
	const n = 100_000
	keys, values := benchValues(b, n)
	r := models.Default
	// Every value decodes.
	for i := range keys {
		if _, _, err := r.DecodeValue(keys[i], values[i]); err != nil {
			b.Fatalf("DecodeValue(%q, %s): %v", keys[i], values[i], err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range keys {
			if _, _, err := r.DecodeValue(keys[i], values[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/value")
}

// BenchmarkCheckKeyRoutes: CheckKey of 10,000 VPP routes under their own
// keys (what a descriptor's Validate does for each value of a transaction
// of 10,000 routes).
func BenchmarkCheckKeyRoutes(b *testing.B) {
	const n = 10_000
	m := models.VPPRoute
	keys := make([]string, n)
	routes := make([]*vppl3.Route, n)
	for j := range routes {
		routes[j] = &vppl3.Route{DstNetwork: fmt.Sprintf("20.%d.%d.0/24", j>>8, j&255), NextHopAddr: "10.90.0.2", OutgoingInterface: "bench-lp"}
		k, err := m.Key(routes[j])
		if err != nil {
			b.Fatal(err)
		}
		keys[j] = k
	}
	b.ReportAllocs()
	for b.Loop() {
		for j := range routes {
			if err := m.CheckKey(keys[j], routes[j]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/route")
}

// BenchmarkValidVPPName: a VPP interface name checked as ifplugin checks
// the tag of every interface VPP reports, directly and through its key.
func BenchmarkValidVPPName(b *testing.B) {
	const name = "bench-lp"
	b.Run("ValidVPPName", func(b *testing.B) {
		for b.Loop() {
			if !models.ValidVPPName(name) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("ParseKey", func(b *testing.B) {
		for b.Loop() {
			if _, err := models.VPPInterface.ParseKey(models.VPPInterface.KeyPrefix + name); err != nil {
				b.Fatal(err)
			}
		}
	})
}

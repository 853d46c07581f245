package models_test

import (
	"testing"

	"github.com/netagent-io/netagent/pkg/models"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

func vtVxlan(src, dst string, vni uint32, multicast string) *vppif.Interface {
	return &vppif.Interface{Name: "vxlan1", Type: vppif.Interface_VXLAN_TUNNEL,
		Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{SrcAddress: src, DstAddress: dst, Vni: vni, Multicast: multicast}}}
}

func TestValidateVxlanTunnel(t *testing.T) {
	vtRun(t, models.VPPInterface, []vtCase{
		{name: "IPv4", value: vtVxlan("192.168.1.1", "192.168.1.2", 13, "")},
		{name: "IPv6", value: vtVxlan("2001:db8::1", "2001:db8::2", 13, "")},
		{name: "largest VNI", value: vtVxlan("10.0.0.1", "10.0.0.2", models.MaxVxlanVNI, "")},
		{name: "VNI 0", value: vtVxlan("10.0.0.1", "10.0.0.2", 0, "")},
		{name: "multicast group", value: vtVxlan("10.0.0.1", "239.1.1.1", 13, "loop1")},
		{name: "IPv6 multicast group", value: vtVxlan("2001:db8::1", "ff05::100", 13, "GigabitEthernet0/8/0")},
		{name: "in a VRF with addresses", value: func() *vppif.Interface {
			v := vtVxlan("10.0.0.1", "10.0.0.2", 13, "")
			v.Vrf, v.IpAddresses, v.Mtu, v.PhysAddress = 3, []string{"10.1.0.1/24"}, 1450, "02:00:00:00:00:07"
			return v
		}()},

		{name: "no link", value: &vppif.Interface{Name: "vxlan1", Type: vppif.Interface_VXLAN_TUNNEL},
			fields: []string{"vxlan"}, want: "required for a VXLAN_TUNNEL"},
		{name: "no addresses", value: vtVxlan("", "", 13, ""),
			fields: []string{"vxlan.src_address", "vxlan.dst_address"}, want: "required"},
		{name: "not an address", value: vtVxlan("10.0.0.1", "10.0.0.256", 13, ""),
			fields: []string{"vxlan.dst_address"}, want: `"10.0.0.256" is not an IP address`},
		{name: "a prefix", value: vtVxlan("10.0.0.1/24", "10.0.0.2", 13, ""),
			fields: []string{"vxlan.src_address"}, want: `"10.0.0.1/24" is not an IP address`},
		{name: "versions differ", value: vtVxlan("10.0.0.1", "2001:db8::2", 13, ""),
			fields: []string{"vxlan.dst_address"}, want: "not of the IP version of src_address 10.0.0.1"},
		{name: "same ends", value: vtVxlan("2001:db8::1", "2001:DB8::1", 13, ""),
			fields: []string{"vxlan.dst_address"}, want: "is src_address too"},
		{name: "unspecified source", value: vtVxlan("0.0.0.0", "10.0.0.2", 13, ""),
			fields: []string{"vxlan.src_address"}, want: "not the address of a tunnel end"},
		{name: "multicast source", value: vtVxlan("239.1.1.1", "10.0.0.2", 13, ""),
			fields: []string{"vxlan.src_address"}, want: "multicast address"},
		{name: "IPv4-mapped", value: vtVxlan("::ffff:10.0.0.1", "10.0.0.2", 13, ""),
			fields: []string{"vxlan.src_address"}, want: "write it as IPv4 (10.0.0.1)"},
		{name: "IPv4-compatible", value: vtVxlan("2001:db8::1", "::1", 13, ""),
			fields: []string{"vxlan.dst_address"}, want: "VPP takes for the IPv4 address 0.0.0.1"},
		{name: "VNI of 25 bits", value: vtVxlan("10.0.0.1", "10.0.0.2", 1<<24, ""),
			fields: []string{"vxlan.vni"}, want: "16777216 is above 16777215"},
		{name: "multicast group without interface", value: vtVxlan("10.0.0.1", "239.1.1.1", 13, ""),
			fields: []string{"vxlan.multicast"}, want: "required: dst_address 239.1.1.1 is a multicast group"},
		{name: "multicast interface of a unicast tunnel", value: vtVxlan("10.0.0.1", "10.0.0.2", 13, "loop1"),
			fields: []string{"vxlan.multicast"}, want: "only for a multicast dst_address"},
		{name: "multicast interface is the tunnel", value: vtVxlan("10.0.0.1", "239.1.1.1", 13, "vxlan1"),
			fields: []string{"vxlan.multicast"}, want: "cannot carry itself"},
		{name: "multicast interface not a name", value: vtVxlan("10.0.0.1", "239.1.1.1", 13, "a b"),
			fields: []string{"vxlan.multicast"}, want: `name "a b"`},
		{name: "vxlan link on a loopback", value: &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK,
			Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{SrcAddress: "10.0.0.1", DstAddress: "10.0.0.2"}}},
			fields: []string{"vxlan"}, want: "set, but the interface is of type SOFTWARE_LOOPBACK"},
		{name: "memif link on a tunnel", value: &vppif.Interface{Name: "vxlan1", Type: vppif.Interface_VXLAN_TUNNEL,
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{}}},
			fields: []string{"memif", "vxlan"}, want: "set, but the interface is of type VXLAN_TUNNEL"},
		{name: "undefined GPE protocol", value: func() *vppif.Interface {
			v := vtVxlan("10.0.0.1", "10.0.0.2", 13, "")
			v.GetVxlan().Gpe = &vppif.VxlanLink_Gpe{Protocol: 9}
			return v
		}(), fields: []string{"vxlan.gpe.protocol"}, want: "9 is not a value"},
	})
}

// TestVxlanOriginalJSON: the original agent's JSON of a VXLAN tunnel (its
// field names: the link under "vxlan", src_address, dst_address, vni,
// multicast, gpe) decodes into the model.
func TestVxlanOriginalJSON(t *testing.T) {
	const doc = `{"name":"vxlan1","type":"VXLAN_TUNNEL","enabled":true,"ip_addresses":["192.168.10.1/24"],"vrf":0,
		"vxlan":{"src_address":"192.168.42.1","dst_address":"192.168.42.2","vni":13}}`
	_, v, err := models.Default.DecodeValue("config/vpp/v2/interfaces/vxlan1", []byte(doc))
	if err != nil {
		t.Fatalf("decode (and validate): %v", err)
	}
	i := v.(*vppif.Interface)
	x := i.GetVxlan()
	if i.GetType() != vppif.Interface_VXLAN_TUNNEL || x.GetSrcAddress() != "192.168.42.1" || x.GetDstAddress() != "192.168.42.2" || x.GetVni() != 13 {
		t.Errorf("decoded %v", i)
	}
	const gpe = `{"name":"gpe1","type":"VXLAN_TUNNEL","vxlan":{"src_address":"10.0.0.1","dst_address":"10.0.0.2","vni":5,
		"gpe":{"decap_vrf_id":2,"protocol":"IP4"}}}`
	g := &vppif.Interface{}
	if err := models.UnmarshalJSON([]byte(gpe), g); err != nil {
		t.Fatalf("decode with gpe: %v", err)
	}
	if p := g.GetVxlan().GetGpe(); p.GetDecapVrfId() != 2 || p.GetProtocol() != vppif.VxlanLink_Gpe_IP4 {
		t.Errorf("gpe decoded as %v", p)
	}
}

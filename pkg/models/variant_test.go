package models_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

const routeVariant = "the original agent's form, without if/<outgoing_interface>/"

// TestResolveKeyAccepts covers the keys a value is kept under: its own (in
// any accepted spelling) and the variants of the original agent.
func TestResolveKeyAccepts(t *testing.T) {
	route := &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "eth0"}
	routeNoGW := &vppl3.Route{DstNetwork: "10.1.0.0/16", OutgoingInterface: "GigabitEthernet0/8/0"}
	cases := []struct {
		name         string
		model        *models.Model
		key          string
		value        proto.Message
		own, variant string
	}{
		{"own key", models.VPPRoute, "config/vpp/v2/route/if/eth0/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1", route,
			"config/vpp/v2/route/if/eth0/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1", ""},
		{"own key, trailing slash", models.VPPRoute, "config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/0/dst/10.1.0.0/16/", routeNoGW,
			"config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/0/dst/10.1.0.0/16", ""},
		{"route without if/", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1", route,
			"config/vpp/v2/route/if/eth0/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1", routeVariant},
		{"route without if/ nor gw", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16", routeNoGW,
			"config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/0/dst/10.1.0.0/16", routeVariant},
		{"route without if/, trailing slash", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/", routeNoGW,
			"config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/0/dst/10.1.0.0/16", routeVariant},
		{"route without if/, VRF 7, IPv6", models.VPPRoute, "config/vpp/v2/route/vrf/7/dst/2001:db8::/32/gw/fe80::1",
			&vppl3.Route{VrfId: 7, DstNetwork: "2001:DB8::/32", NextHopAddr: "fe80::1", OutgoingInterface: "tap0"},
			"config/vpp/v2/route/if/tap0/vrf/7/dst/2001:db8::/32/gw/fe80::1", routeVariant},
		{"interface, own key", models.VPPInterface, "config/vpp/v2/interfaces/loop1",
			&vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK}, "config/vpp/v2/interfaces/loop1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			own, variant, err := c.model.ResolveKey(c.key, c.value)
			if err != nil {
				t.Fatalf("ResolveKey(%s): %v", c.key, err)
			}
			if own != c.own || variant != c.variant {
				t.Fatalf("ResolveKey(%s) = %q, %q; want %q, %q", c.key, own, variant, c.own, c.variant)
			}
			if key, err := c.model.Key(c.value); err != nil || key != own {
				t.Fatalf("Key = %q, %v; ResolveKey gave %q", key, err, own)
			}
		})
	}
}

// TestResolveKeyRefuses covers every other key: refused with the reason.
func TestResolveKeyRefuses(t *testing.T) {
	route := &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "eth0"}
	cases := []struct {
		name  string
		model *models.Model
		key   string
		value proto.Message
		// keyErr: a *KeyError is wanted (else a *ValidationError), whose
		// message has every one of want.
		keyErr bool
		want   []string
	}{
		{"route without if/, other VRF", models.VPPRoute, "config/vpp/v2/route/vrf/1/dst/10.1.0.0/16/gw/10.0.0.1", route, true,
			[]string{"belongs under config/vpp/v2/route/if/eth0/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1", `vrf_id is "1" in the key but "0"`}},
		{"route without if/, other next hop", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/gw/10.0.0.2", route, true,
			[]string{`next_hop_addr is "10.0.0.2" in the key but "10.0.0.1"`}},
		{"route without if/, next hop missing from the key", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16", route, true,
			[]string{`the value has next_hop_addr "10.0.0.1", the key none`}},
		{"route without if/, other destination", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.2.0.0/16/gw/10.0.0.1", route, true,
			[]string{`dst_network is "10.2.0.0/16" in the key`}},
		{"route key with an interface the value lacks", models.VPPRoute, "config/vpp/v2/route/if/eth0/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1",
			&vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1"}, true,
			[]string{`the key has outgoing_interface "eth0", the value none`}},
		{"route key with another interface", models.VPPRoute, "config/vpp/v2/route/if/eth1/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1", route, true,
			[]string{`outgoing_interface is "eth1" in the key but "eth0"`}},
		{"interface named otherwise", models.VPPInterface, "config/vpp/v2/interfaces/loop1",
			&vppif.Interface{Name: "loop2", Type: vppif.Interface_SOFTWARE_LOOPBACK}, true,
			[]string{`the key names "loop1" but the value is "loop2"`, "ambiguous", "config/vpp/v2/interfaces/loop2"}},
		{"bridge domain named otherwise", models.VPPBridgeDomain, "config/vpp/l2/v2/bridge-domain/bd1",
			&vppl2.BridgeDomain{Name: "bd2"}, true, []string{`the key names "bd1" but the value is "bd2"`, "ambiguous"}},
		{"linux interface named otherwise", models.LinuxInterface, "config/linux/interfaces/v2/interface/veth1",
			&linuxif.Interface{Name: "veth2", Type: linuxif.Interface_DUMMY}, true, []string{`the key names "veth1" but the value is "veth2"`, "ambiguous"}},
		{"interface without a name", models.VPPInterface, "config/vpp/v2/interfaces/loop1",
			&vppif.Interface{Type: vppif.Interface_SOFTWARE_LOOPBACK}, false, []string{"name: required"}},
		{"bridge domain without a name", models.VPPBridgeDomain, "config/vpp/l2/v2/bridge-domain/bd1",
			&vppl2.BridgeDomain{}, false, []string{"name: required"}},
		{"ARP entry of another interface", models.VPPARP, "config/vpp/v2/arp/eth0/10.0.0.1",
			&vppl3.ARPEntry{Interface: "eth1", IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01"}, true,
			[]string{`interface is "eth0" in the key but "eth1"`}},
		{"linux route of another interface", models.LinuxRoute, "config/linux/l3/v2/route/10.1.0.0/16/eth0",
			&linuxl3.Route{DstNetwork: "10.1.0.0/16", OutgoingInterface: "eth1"}, true,
			[]string{`outgoing_interface is "eth0" in the key but "eth1"`}},
		{"value of another model", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16",
			&vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK}, true, []string{"value is a vpp.interfaces.Interface"}},
		{"nil value", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16", nil, true, []string{"nil value"}},
		{"empty key", models.VPPRoute, "", route, true, []string{"not a key of model vpp.route"}},
		{"key of another model", models.VPPRoute, "config/vpp/v2/interfaces/eth0", route, true, []string{"not a key of model vpp.route"}},
		{"malformed route key", models.VPPRoute, "config/vpp/v2/route/eth0/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1", route, true, []string{"want [if/<outgoing_interface>/]"}},
		{"route key not masked", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.2.3/16/gw/10.0.0.1", route, true, []string{"10.1.2.3"}},
		{"invalid value", models.VPPRoute, "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16",
			&vppl3.Route{DstNetwork: "10.1.0.0/16", OutgoingInterface: "eth0", Type: vppl3.Route_DROP}, false, []string{"a DROP route has no outgoing interface"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			own, variant, err := c.model.ResolveKey(c.key, c.value)
			if err == nil {
				t.Fatalf("ResolveKey(%q) = %q, %q; want an error", c.key, own, variant)
			}
			var ke *models.KeyError
			var ve *models.ValidationError
			if c.keyErr && !errors.As(err, &ke) || !c.keyErr && !errors.As(err, &ve) {
				t.Fatalf("error %T %v; want a KeyError: %v", err, err, c.keyErr)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if own != "" || variant != "" {
				t.Errorf("with the error: %q, %q", own, variant)
			}
		})
	}
}

func TestDecodeVariant(t *testing.T) {
	r := models.Default
	got, err := r.DecodeVariant("config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1",
		[]byte(`{"dst_network":"10.1.0.0/16","next_hop_addr":"10.0.0.1","outgoing_interface":"eth0"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != models.VPPRoute || got.Key != "config/vpp/v2/route/if/eth0/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1" || got.Variant != routeVariant {
		t.Fatalf("DecodeVariant = %+v", got)
	}
	if r := got.Value.(*vppl3.Route); r.GetOutgoingInterface() != "eth0" {
		t.Fatalf("value %v", r)
	}
	// The strict decoder still refuses the variant.
	if _, _, err := r.DecodeValue("config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1",
		[]byte(`{"dst_network":"10.1.0.0/16","next_hop_addr":"10.0.0.1","outgoing_interface":"eth0"}`)); err == nil {
		t.Fatal("DecodeValue accepted a variant key")
	}
	bad := []struct {
		name, key, data string
		want            any
	}{
		{"empty key", "", `{}`, new(*models.KeyError)},
		{"no model", "config/vpp/v9/nothing/x", `{}`, new(*models.KeyError)},
		{"bad JSON", "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16", `{"dst_network":`, new(*models.DecodeError)},
		{"unknown field", "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16", `{"dst_network":"10.1.0.0/16","bogus":1}`, new(*models.DecodeError)},
		{"name differs", "config/vpp/v2/interfaces/loop1", `{"name":"loop2","type":"SOFTWARE_LOOPBACK"}`, new(*models.KeyError)},
		{"no name", "config/vpp/v2/interfaces/loop1", `{"type":"SOFTWARE_LOOPBACK"}`, new(*models.ValidationError)},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			got, err := r.DecodeVariant(c.key, []byte(c.data))
			if err == nil || got.Value != nil || got.Key != "" {
				t.Fatalf("DecodeVariant = %+v, %v; want an error", got, err)
			}
			if !errors.As(err, c.want) {
				t.Fatalf("error %T %v", err, err)
			}
		})
	}
}

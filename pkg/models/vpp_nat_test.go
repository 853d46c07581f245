package models_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

func init() {
	keyCases = append(keyCases, natKeyCases...)
}

// natKeyCases are the NAT44 keys, written from the original agent's
// templates (proto/ligato/vpp/nat/models.go of vpp-agent v3).
var natKeyCases = []keyCase{
	// --- config/vpp/nat/v2/nat44-global (one value)
	{name: "nat44 global empty", model: models.VPPNat44Global, value: &vppnat.Nat44Global{},
		key: "config/vpp/nat/v2/nat44-global", parts: models.KeyParts{}},
	{name: "nat44 global with forwarding", model: models.VPPNat44Global, value: &vppnat.Nat44Global{Forwarding: true},
		key: "config/vpp/nat/v2/nat44-global", parts: models.KeyParts{}},
	{name: "nat44 global endpoint-dependent said so", model: models.VPPNat44Global, value: &vppnat.Nat44Global{EndpointIndependent: false, Forwarding: true},
		key: "config/vpp/nat/v2/nat44-global", parts: models.KeyParts{}},
	// --- config/vpp/nat/v2/nat44-interface/<name>
	{name: "nat44 interface inside", model: models.VPPNat44Interface, value: &vppnat.Nat44Interface{Name: "if1", NatInside: true},
		key: "config/vpp/nat/v2/nat44-interface/if1", parts: models.KeyParts{"name": "if1"}},
	{name: "nat44 interface with slashes", model: models.VPPNat44Interface, value: &vppnat.Nat44Interface{Name: "memif1/1", NatOutside: true, OutputFeature: true},
		key: "config/vpp/nat/v2/nat44-interface/memif1/1", parts: models.KeyParts{"name": "memif1/1"}},
	{name: "nat44 interface both sides", model: models.VPPNat44Interface, value: &vppnat.Nat44Interface{Name: "GigabitEthernet0/8/0", NatInside: true, NatOutside: true},
		key: "config/vpp/nat/v2/nat44-interface/GigabitEthernet0/8/0", parts: models.KeyParts{"name": "GigabitEthernet0/8/0"}},
	// --- config/vpp/nat/v2/nat44-pool/{<name>|vrf/<vrf_id>/address/<first_ip>[-<last_ip>]}
	{name: "nat44 pool with a name", model: models.VPPNat44AddressPool, value: &vppnat.Nat44AddressPool{Name: "pool1", FirstIp: "10.0.0.1", LastIp: "10.0.0.9"},
		key: "config/vpp/nat/v2/nat44-pool/pool1", parts: models.KeyParts{"name": "pool1"}},
	{name: "nat44 pool of one address", model: models.VPPNat44AddressPool, value: &vppnat.Nat44AddressPool{VrfId: 3, FirstIp: "10.0.0.1"},
		key: "config/vpp/nat/v2/nat44-pool/vrf/3/address/10.0.0.1", parts: models.KeyParts{"vrf_id": "3", "first_ip": "10.0.0.1"}},
	{name: "nat44 pool range, any VRF", model: models.VPPNat44AddressPool, value: &vppnat.Nat44AddressPool{VrfId: ^uint32(0), FirstIp: "10.0.0.1", LastIp: "10.0.0.20", TwiceNat: true},
		key:   "config/vpp/nat/v2/nat44-pool/vrf/4294967295/address/10.0.0.1-10.0.0.20",
		parts: models.KeyParts{"vrf_id": "4294967295", "first_ip": "10.0.0.1", "last_ip": "10.0.0.20"}},
	{name: "nat44 pool range of one (the original leaves the last address out)", model: models.VPPNat44AddressPool, value: &vppnat.Nat44AddressPool{FirstIp: "10.0.0.1", LastIp: "10.0.0.1"},
		key: "config/vpp/nat/v2/nat44-pool/vrf/0/address/10.0.0.1", parts: models.KeyParts{"vrf_id": "0", "first_ip": "10.0.0.1"}},
	// --- config/vpp/nat/v2/dnat44/<label>
	{name: "dnat44 empty", model: models.VPPDNat44, value: &vppnat.DNat44{Label: "empty-dnat"},
		key: "config/vpp/nat/v2/dnat44/empty-dnat", parts: models.KeyParts{"label": "empty-dnat"}},
	{name: "dnat44 with slashes", model: models.VPPDNat44, value: &vppnat.DNat44{Label: "tenant/a/web"},
		key: "config/vpp/nat/v2/dnat44/tenant/a/web", parts: models.KeyParts{"label": "tenant/a/web"}},
	{name: "dnat44 identity", model: models.VPPDNat44, value: &vppnat.DNat44{Label: "id-dnat",
		IdMappings: []*vppnat.DNat44_IdentityMapping{{IpAddress: "10.0.0.1", Port: 7777}}},
		key: "config/vpp/nat/v2/dnat44/id-dnat", parts: models.KeyParts{"label": "id-dnat"}},
}

// The key of the NAT44 global settings is the whole key: the original's
// "/settings" spelling is accepted and mapped to it; nothing else follows it.
func TestNat44GlobalKey(t *testing.T) {
	const key = "config/vpp/nat/v2/nat44-global"
	if !models.VPPNat44Global.Singleton() || models.VPPNat44Interface.Singleton() {
		t.Fatal("Singleton: want true for the global settings only")
	}
	for _, k := range []string{key, key + "/settings"} {
		if m := models.Default.ModelOfKey(k); m != models.VPPNat44Global {
			t.Errorf("ModelOfKey(%q) = %v", k, m)
		}
		if got, err := models.VPPNat44Global.CanonicalKey(k); err != nil || got != key {
			t.Errorf("CanonicalKey(%q) = %q, %v; want %q", k, got, err, key)
		}
		own, _, err := models.VPPNat44Global.ResolveKey(k, &vppnat.Nat44Global{Forwarding: true})
		if err != nil || own != key {
			t.Errorf("ResolveKey(%q) = %q, %v", k, own, err)
		}
	}
	for _, k := range []string{key + "/foo", key + "x", key + "/", "config/vpp/nat/v2/nat44-globa"} {
		if _, _, err := models.Default.ParseKey(k); err == nil {
			t.Errorf("ParseKey(%q) succeeded", k)
		}
	}
	if _, _, err := models.Default.ParseKey(key + "/foo"); err == nil || !strings.Contains(err.Error(), "one key") {
		t.Errorf("ParseKey of a named global: %v, want it to say there is one key", err)
	}
}

// Every field the models refuse, and every rule, is an error naming the
// field.
func TestNatValidation(t *testing.T) {
	local := func(ip string, port uint32) *vppnat.DNat44_StaticMapping_LocalIP {
		return &vppnat.DNat44_StaticMapping_LocalIP{LocalIp: ip, LocalPort: port}
	}
	for _, c := range []struct {
		name   string
		model  *models.Model
		value  proto.Message
		fields []string
	}{
		{"global: an interface without a name", models.VPPNat44Global, &vppnat.Nat44Global{NatInterfaces: []*vppnat.Nat44Global_Interface{{Name: "if1"}, {IsInside: true}}}, []string{"nat_interfaces[1].name"}},
		{"global: an interface with and without the output feature", models.VPPNat44Global, &vppnat.Nat44Global{NatInterfaces: []*vppnat.Nat44Global_Interface{
			{Name: "if1", OutputFeature: true}, {Name: "if2"}, {Name: "if1", IsInside: true}}}, []string{"nat_interfaces[2].output_feature"}},
		{"global: an address twice in a list", models.VPPNat44Global, &vppnat.Nat44Global{AddressPool: []*vppnat.Nat44Global_Address{
			{Address: "10.0.0.1"}, {Address: "10.0.0.1", TwiceNat: true}, {Address: "10.0.0.1", VrfId: 2}}}, []string{"address_pool[2].address"}},
		{"global: an IPv6 address", models.VPPNat44Global, &vppnat.Nat44Global{AddressPool: []*vppnat.Nat44Global_Address{{Address: "2001:db8::1"}}}, []string{"address_pool[0].address"}},
		{"global: no address", models.VPPNat44Global, &vppnat.Nat44Global{AddressPool: []*vppnat.Nat44Global_Address{{VrfId: 1}}}, []string{"address_pool[0].address"}},
		{"global: endpoint-independent", models.VPPNat44Global, &vppnat.Nat44Global{EndpointIndependent: true}, []string{"endpoint_independent"}},
		{"interface: no name", models.VPPNat44Interface, &vppnat.Nat44Interface{NatInside: true}, []string{"name"}},
		{"interface: output feature on both sides", models.VPPNat44Interface, &vppnat.Nat44Interface{Name: "if1", NatInside: true, NatOutside: true, OutputFeature: true}, []string{"output_feature"}},
		{"interface: output feature alone", models.VPPNat44Interface, &vppnat.Nat44Interface{Name: "if1", OutputFeature: true}, []string{"output_feature"}},
		{"pool: no first address", models.VPPNat44AddressPool, &vppnat.Nat44AddressPool{Name: "p"}, []string{"first_ip"}},
		{"pool: IPv6", models.VPPNat44AddressPool, &vppnat.Nat44AddressPool{FirstIp: "2001:db8::1"}, []string{"first_ip"}},
		{"pool: not an address", models.VPPNat44AddressPool, &vppnat.Nat44AddressPool{FirstIp: "10.0.0.1", LastIp: "ten"}, []string{"last_ip"}},
		{"pool: reversed", models.VPPNat44AddressPool, &vppnat.Nat44AddressPool{FirstIp: "10.0.0.9", LastIp: "10.0.0.1"}, []string{"last_ip"}},
		{"pool: too big", models.VPPNat44AddressPool, &vppnat.Nat44AddressPool{FirstIp: "10.0.0.0", LastIp: "10.1.0.0"}, []string{"last_ip"}},
		{"pool: a name of the other form", models.VPPNat44AddressPool, &vppnat.Nat44AddressPool{Name: "vrf/0/address/10.0.0.1", FirstIp: "10.0.0.1"}, []string{"name"}},
		{"dnat: no label", models.VPPDNat44, &vppnat.DNat44{}, []string{"label"}},
		{"dnat: label too long", models.VPPDNat44, &vppnat.DNat44{Label: strings.Repeat("l", 64)}, []string{"label"}},
		{"dnat: no external address", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 80)}}}}, []string{"st_mappings[0].external_ip"}},
		{"dnat: no local endpoint", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", ExternalPort: 80}}}, []string{"st_mappings[0].local_ips"}},
		{"dnat: ports on one side only", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 0)}},
			{ExternalIp: "1.1.1.2", LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 80)}}}},
			[]string{"st_mappings[0].local_ips[0].local_port", "st_mappings[1].local_ips[0].local_port"}},
		{"dnat: port out of range", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", ExternalPort: 70000, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 80)}}}}, []string{"st_mappings[0].external_port"}},
		{"dnat: protocol of an address mapping", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", Protocol: vppnat.DNat44_UDP, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 0)}}}}, []string{"st_mappings[0].protocol"}},
		{"dnat: probability of one endpoint", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.0.0.1", LocalPort: 80, Probability: 3}}}}},
			[]string{"st_mappings[0].local_ips[0].probability"}},
		{"dnat: load-balanced ICMP, without port", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", ExternalPort: 80, Protocol: vppnat.DNat44_ICMP, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 80), local("10.0.0.2", 80)}},
			{ExternalIp: "1.1.1.2", LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 0), local("10.0.0.2", 0)}}}},
			[]string{"st_mappings[0].protocol", "st_mappings[1].external_port"}},
		{"dnat: load-balanced on an interface only", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalInterface: "if1", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 80), local("10.0.0.2", 80)}}}},
			[]string{"st_mappings[0].external_ip"}},
		{"dnat: affinity of one endpoint", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", ExternalPort: 80, SessionAffinity: 10, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 80)}}}},
			[]string{"st_mappings[0].session_affinity"}},
		{"dnat: twice-NAT pool address without twice-NAT", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", ExternalPort: 80, TwiceNatPoolIp: "2.2.2.2", LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 80)}}}},
			[]string{"st_mappings[0].twice_nat_pool_ip"}},
		{"dnat: unknown twice-NAT mode", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", ExternalPort: 80, TwiceNat: 7, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 80)}}}},
			[]string{"st_mappings[0].twice_nat"}},
		{"dnat: one external endpoint twice", models.VPPDNat44, &vppnat.DNat44{Label: "d", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "1.1.1.1", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.1", 80)}},
			{ExternalIp: "1.1.1.1", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{local("10.0.0.2", 80)}}}},
			[]string{"st_mappings[1]"}},
		{"dnat: identity without address", models.VPPDNat44, &vppnat.DNat44{Label: "d", IdMappings: []*vppnat.DNat44_IdentityMapping{{Port: 22}}},
			[]string{"id_mappings[0].ip_address"}},
		{"dnat: identity twice, protocol without port", models.VPPDNat44, &vppnat.DNat44{Label: "d", IdMappings: []*vppnat.DNat44_IdentityMapping{
			{IpAddress: "1.1.1.1", Port: 22}, {IpAddress: "1.1.1.1", Port: 22}, {Interface: "if1", Protocol: vppnat.DNat44_UDP}}},
			[]string{"id_mappings[1]", "id_mappings[2].protocol"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.model.Validate(c.value)
			var ve *models.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate: %v, want a *ValidationError", err)
			}
			if got := ve.FieldNames(); !slices.Equal(got, c.fields) {
				t.Errorf("invalid fields %q, want %q (%v)", got, c.fields, err)
			}
		})
	}
}

// The original agent's documented example values decode (its JSON, as
// etcd holds it) and are valid under their keys.
func TestNatOriginalExamples(t *testing.T) {
	for _, c := range []struct {
		key, json string
	}{
		// The DNAT44 example of the original's documentation: a
		// load-balanced mapping written with both external_interface and
		// external_ip, and an identity mapping.
		{"config/vpp/nat/v2/dnat44/dnat1", `{"label":"dnat1","st_mappings":[{"external_interface":"if1","external_ip":"192.168.0.1",` +
			`"external_port":8989,"local_ips":[{"local_ip":"172.124.0.2","local_port":6500,"probability":40},` +
			`{"local_ip":"172.125.10.5","local_port":2300,"probability":40}],"protocol":"UDP","twice_nat":"ENABLED"}],` +
			`"id_mappings":[{"ip_address":"10.10.0.1","port":2525}]}`},
		{"config/vpp/nat/v2/nat44-global", `{"forwarding":true}`},
		{"config/vpp/nat/v2/nat44-global/settings", `{"forwarding":true}`},
		{"config/vpp/nat/v2/nat44-interface/if1", `{"name":"if1","nat_inside":true}`},
		{"config/vpp/nat/v2/nat44-interface/if2", `{"name":"if2","nat_outside":true,"output_feature":true}`},
		{"config/vpp/nat/v2/nat44-pool/vrf/0/address/192.168.0.1-192.168.0.10", `{"first_ip":"192.168.0.1","last_ip":"192.168.0.10"}`},
		{"config/vpp/nat/v2/nat44-pool/pool1", `{"name":"pool1","first_ip":"10.0.0.1","twice_nat":true}`},
		// The static mappings of the original's NAT example program, as
		// JSON (TCP service, server 1 only; DNAT on an external interface).
		{"config/vpp/nat/v2/dnat44/tcp-service", `{"label":"tcp-service","st_mappings":[` +
			`{"external_ip":"10.36.10.1","external_port":80,"local_ips":[{"local_ip":"10.11.2.2","local_port":8080,"probability":1},{"local_ip":"10.11.3.2","local_port":8081,"probability":2}]},` +
			`{"external_ip":"10.36.10.2","external_port":80,"local_ips":[{"local_ip":"10.11.2.2","local_port":8080}]}]}`},
		{"config/vpp/nat/v2/dnat44/external-interfaces", `{"label":"external-interfaces","st_mappings":[` +
			`{"external_interface":"vpp-tap-server1","external_port":3333,"local_ips":[{"local_ip":"10.11.2.2","local_port":4444}]}]}`},
		{"config/vpp/nat/v2/dnat44/id-dnat", `{"label":"id-dnat","id_mappings":[{"interface":"vpp-tap-client","port":7777}]}`},
	} {
		m := models.Default.ModelOfKey(c.key)
		if m == nil {
			t.Errorf("%s: no model", c.key)
			continue
		}
		v := m.New()
		if err := models.UnmarshalJSON([]byte(c.json), v); err != nil {
			t.Errorf("%s: %v", c.key, err)
			continue
		}
		if _, _, err := m.ResolveKey(c.key, v); err != nil {
			t.Errorf("%s: %v", c.key, err)
		}
	}
}

// The NAT44 global settings are one value in a configuration document, not
// a list; a list there, or two values, are errors.
func TestNatConfigDocument(t *testing.T) {
	doc := "vpp_config:\n  nat44_global: {forwarding: true}\n  nat44_pools:\n    - first_ip: 10.0.0.1\n"
	kvs, err := models.Default.ParseConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config/vpp/nat/v2/nat44-global", "config/vpp/nat/v2/nat44-pool/vrf/0/address/10.0.0.1"}
	if got := cfgKeys(kvs); !slices.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
	c, err := models.Default.BuildConfig(kvs)
	if err != nil {
		t.Fatal(err)
	}
	if !c.GetVppConfig().GetNat44Global().GetForwarding() || len(c.GetVppConfig().GetNat44Pools()) != 1 {
		t.Errorf("BuildConfig: %v", c)
	}
	back, err := models.Default.ConfigKVs(c)
	if err != nil || !slices.Equal(cfgKeys(back), want) {
		t.Errorf("ConfigKVs: %q, %v", cfgKeys(back), err)
	}
	if n := models.CountConfigItems(c); n != 2 {
		t.Errorf("CountConfigItems = %d, want 2", n)
	}
	if _, err := models.Default.BuildConfig(append(kvs, models.KV{Key: "config/vpp/nat/v2/nat44-global/settings", Value: &vppnat.Nat44Global{}})); err == nil {
		t.Error("BuildConfig with two global values: no error")
	}
	for _, bad := range []struct{ doc, want string }{
		{"vpp_config:\n  nat44_global: [{forwarding: true}]\n", "vpp_config.nat44_global: want one vpp.nat.nat44-global value"},
		{"vpp_config:\n  nat44_global: {endpoint_independent: true}\n", "vpp_config.nat44_global: invalid vpp.nat.nat44-global value: endpoint_independent"},
	} {
		if _, err := models.Default.ParseConfig([]byte(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseConfig(%q): %v, want %q", bad.doc, err, bad.want)
		}
	}
}

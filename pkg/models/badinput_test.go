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

// Model keys used by the bad-input cases.
const (
	biIfKey      = "config/vpp/v2/interfaces/loop1"
	biBDKey      = "config/vpp/l2/v2/bridge-domain/bd1"
	biRouteKey   = "config/vpp/v2/route/if/loop1/vrf/1/dst/10.1.0.0/16/gw/10.0.0.254"
	biRouteNoIf  = "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16"
	biARPKey     = "config/vpp/v2/arp/loop1/10.0.0.2"
	biLinuxIfKey = "config/linux/interfaces/v2/interface/veth1"
	biLRouteKey  = "config/linux/l3/v2/route/10.2.0.0/16/veth1"
	biLARPKey    = "config/linux/l3/v2/arp/veth1/10.2.0.2"
)

// biErrKind is the error type DecodeValue must return.
type biErrKind int

const (
	biKeyErr biErrKind = iota
	biDecodeErr
	biValidationErr
)

func (k biErrKind) String() string {
	return [...]string{"*models.KeyError", "*models.DecodeError", "*models.ValidationError"}[k]
}

type biCase struct {
	name string
	key  string
	json string
	kind biErrKind
	// want are substrings of the error message besides the key: the field
	// and/or the offending value.
	want []string
	// fields are the exact ValidationError.FieldNames() (kind
	// biValidationErr only).
	fields []string
	// noModel: the key matches no model, DecodeValue returns no model.
	noModel bool
}

var biCases = []biCase{
	// Malformed JSON.
	{name: "truncated object", key: biIfKey, json: `{"name":"loop1"`, kind: biDecodeErr, want: []string{"vpp.interfaces.Interface", "unexpected EOF"}},
	{name: "trailing comma", key: biIfKey, json: `{"name":"loop1",}`, kind: biDecodeErr, want: []string{"vpp.interfaces.Interface", "unexpected token }"}},
	{name: "not JSON", key: biBDKey, json: `name: bd1`, kind: biDecodeErr, want: []string{"vpp.l2.BridgeDomain", "invalid value name"}},
	{name: "empty data", key: biARPKey, json: ``, kind: biDecodeErr, want: []string{"vpp.l3.ARPEntry", "unexpected token"}},
	{name: "null value", key: biIfKey, json: `null`, kind: biDecodeErr, want: []string{"unexpected token null"}},
	{name: "array value", key: biIfKey, json: `[{"name":"loop1"}]`, kind: biDecodeErr, want: []string{"unexpected token ["}},
	{name: "two objects", key: biIfKey, json: `{"name":"loop1"}{"name":"loop1"}`, kind: biDecodeErr, want: []string{"unexpected token {"}},
	{name: "duplicate field", key: biIfKey, json: `{"name":"loop1","name":"loop1"}`, kind: biDecodeErr, want: []string{`duplicate field "name"`}},
	{name: "duplicate field, both spellings", key: biIfKey, json: `{"name":"loop1","ip_addresses":[],"ipAddresses":[]}`, kind: biDecodeErr, want: []string{"duplicate field", "ipAddresses"}},

	// A wrong type for a field.
	{name: "string for mtu", key: biIfKey, json: `{"name":"loop1","mtu":"abc"}`, kind: biDecodeErr, want: []string{"mtu", `"abc"`}},
	{name: "negative mtu", key: biIfKey, json: `{"name":"loop1","mtu":-1}`, kind: biDecodeErr, want: []string{"mtu", "-1"}},
	{name: "fractional mtu", key: biIfKey, json: `{"name":"loop1","mtu":1500.5}`, kind: biDecodeErr, want: []string{"mtu", "1500.5"}},
	{name: "mtu over uint32", key: biIfKey, json: `{"name":"loop1","mtu":4294967296}`, kind: biDecodeErr, want: []string{"mtu", "4294967296"}},
	{name: "number for name", key: biIfKey, json: `{"name":5}`, kind: biDecodeErr, want: []string{"field name", "5"}},
	{name: "bool for name", key: biBDKey, json: `{"name":true}`, kind: biDecodeErr, want: []string{"field name", "true"}},
	{name: "object for ip_addresses", key: biIfKey, json: `{"name":"loop1","ip_addresses":{"a":"10.0.0.1/24"}}`, kind: biDecodeErr, want: []string{"unexpected token {"}},
	{name: "string for ip_addresses", key: biIfKey, json: `{"name":"loop1","ip_addresses":"10.0.0.1/24"}`, kind: biDecodeErr, want: []string{`unexpected token "10.0.0.1/24"`}},
	{name: "number in ip_addresses", key: biIfKey, json: `{"name":"loop1","ip_addresses":[10]}`, kind: biDecodeErr, want: []string{"ipAddresses", ": 10"}}, // protojson names the field by its JSON name
	{name: "string for bool", key: biIfKey, json: `{"name":"loop1","enabled":"yes"}`, kind: biDecodeErr, want: []string{"enabled", `"yes"`}},
	{name: "string for nested message", key: biIfKey, json: `{"name":"loop1","type":"MEMIF","memif":"m"}`, kind: biDecodeErr, want: []string{`unexpected token "m"`}},
	{name: "string for vrf_id", key: biRouteNoIf, json: `{"dst_network":"10.1.0.0/16","vrf_id":"zero"}`, kind: biDecodeErr, want: []string{"vrfId", `"zero"`}},

	// Unknown fields.
	{name: "unknown field", key: biIfKey, json: `{"name":"loop1","bogus":1}`, kind: biDecodeErr, want: []string{`unknown field "bogus"`}},
	{name: "unknown nested field", key: biIfKey, json: `{"name":"loop1","type":"MEMIF","memif":{"ringsize":1}}`, kind: biDecodeErr, want: []string{`unknown field "ringsize"`}},
	{name: "unknown field in list item", key: biBDKey, json: `{"name":"bd1","interfaces":[{"name":"loop1","bvi":true}]}`, kind: biDecodeErr, want: []string{`unknown field "bvi"`}},
	{name: "field of another model", key: biLARPKey, json: `{"interface":"veth1","ip_address":"10.2.0.2","phys_address":"02:00:00:00:00:01"}`, kind: biDecodeErr, want: []string{`unknown field "phys_address"`}},
	{name: "wrong case", key: biIfKey, json: `{"Name":"loop1"}`, kind: biDecodeErr, want: []string{`unknown field "Name"`}},

	// Unknown enum names.
	{name: "unknown interface type", key: biIfKey, json: `{"name":"loop1","type":"LOOPBACK"}`, kind: biDecodeErr, want: []string{"type", `"LOOPBACK"`}},
	{name: "enum name in lower case", key: biIfKey, json: `{"name":"loop1","type":"software_loopback"}`, kind: biDecodeErr, want: []string{"type", `"software_loopback"`}},
	{name: "unknown memif mode", key: biIfKey, json: `{"name":"loop1","type":"MEMIF","memif":{"mode":"ETH"}}`, kind: biDecodeErr, want: []string{"mode", `"ETH"`}},
	{name: "unknown route type", key: biRouteNoIf, json: `{"dst_network":"10.1.0.0/16","type":"FORWARD"}`, kind: biDecodeErr, want: []string{"type", `"FORWARD"`}},
	{name: "unknown namespace type", key: biLinuxIfKey, json: `{"name":"veth1","namespace":{"type":"NETNS","reference":"ns1"}}`, kind: biDecodeErr, want: []string{"type", `"NETNS"`}},
	{name: "unknown linux route scope", key: biLRouteKey, json: `{"outgoing_interface":"veth1","dst_network":"10.2.0.0/16","scope":"UNIVERSE"}`, kind: biDecodeErr, want: []string{"scope", `"UNIVERSE"`}},
	{name: "undefined enum number", key: biIfKey, json: `{"name":"loop1","type":99}`, kind: biValidationErr, want: []string{"type", "99", "vpp.interfaces.Interface.Type"}, fields: []string{"type"}},
	{name: "undefined nested enum number", key: biLinuxIfKey, json: `{"name":"veth1","type":"VETH","veth":{"peer_if_name":"veth2","rx_checksum_offloading":7}}`, kind: biValidationErr, want: []string{"veth.rx_checksum_offloading", "7"}, fields: []string{"veth.rx_checksum_offloading"}},

	// Keys that match no model.
	{name: "unknown version", key: "config/vpp/v3/interfaces/loop1", json: `{"name":"loop1"}`, kind: biKeyErr, want: []string{"matches no model", "config/vpp/v2/interfaces/"}, noModel: true},
	{name: "etcd key instead of model key", key: "/vnf-agent/vpp1/config/vpp/v2/interfaces/loop1", json: `{"name":"loop1"}`, kind: biKeyErr, want: []string{"matches no model"}, noModel: true},
	{name: "prefix without slash", key: "config/vpp/v2/interfaces", json: `{"name":"loop1"}`, kind: biKeyErr, want: []string{"matches no model"}, noModel: true},
	{name: "empty key", key: "", json: `{"name":"loop1"}`, kind: biKeyErr, want: []string{"matches no model"}, noModel: true},
	{name: "singular interface", key: "config/vpp/v2/interface/loop1", json: `{"name":"loop1"}`, kind: biKeyErr, want: []string{"matches no model"}, noModel: true},
	{name: "upper case prefix", key: "Config/vpp/v2/interfaces/loop1", json: `{"name":"loop1"}`, kind: biKeyErr, want: []string{"matches no model"}, noModel: true},

	// Keys of a model but malformed.
	{name: "key without a name", key: "config/vpp/v2/interfaces/", json: `{"name":"loop1"}`, kind: biKeyErr, want: []string{"name", "empty"}},
	{name: "key name with doubled slash", key: "config/vpp/v2/interfaces/a//b", json: `{"name":"a//b"}`, kind: biKeyErr, want: []string{"empty segment"}},
	{name: "route key with host bits", key: "config/vpp/v2/route/vrf/0/dst/10.1.2.3/16", json: `{"dst_network":"10.1.2.3/16"}`, kind: biKeyErr, want: []string{"host bits", "10.1.0.0/16"}},
	{name: "route key with non-canonical IPv6", key: "config/vpp/v2/route/vrf/0/dst/2001:DB8::/32", json: `{"dst_network":"2001:db8::/32"}`, kind: biKeyErr, want: []string{"canonical", `"2001:db8::"`}},
	{name: "route key with leading zero vrf", key: "config/vpp/v2/route/vrf/01/dst/10.1.0.0/16", json: `{"vrf_id":1,"dst_network":"10.1.0.0/16"}`, kind: biKeyErr, want: []string{"vrf_id", `"01"`}},
	{name: "route key with mixed families", key: "config/vpp/v2/route/vrf/0/dst/10.1.0.0/16/gw/::1", json: `{"dst_network":"10.1.0.0/16","next_hop_addr":"::1"}`, kind: biKeyErr, want: []string{"different IP versions"}},
	{name: "arp key without address", key: "config/vpp/v2/arp/loop1", json: `{"interface":"loop1"}`, kind: biKeyErr, want: []string{"want <interface>/<ip_address>"}},
	{name: "linux route key without interface", key: "config/linux/l3/v2/route/10.2.0.0/16", json: `{"dst_network":"10.2.0.0/16"}`, kind: biKeyErr, want: []string{"<outgoing_interface>"}},

	// The key's parts disagree with the value.
	{name: "interface name", key: biIfKey, json: `{"name":"loop2"}`, kind: biKeyErr, want: []string{"config/vpp/v2/interfaces/loop2", `name is "loop1" in the key but "loop2" in the value`}},
	{name: "bridge domain name", key: biBDKey, json: `{"name":"bd2"}`, kind: biKeyErr, want: []string{"config/vpp/l2/v2/bridge-domain/bd2", `name is "bd1" in the key but "bd2" in the value`}},
	{name: "linux interface name", key: biLinuxIfKey, json: `{"name":"veth2"}`, kind: biKeyErr, want: []string{"config/linux/interfaces/v2/interface/veth2", `name is "veth1" in the key but "veth2" in the value`}},
	{name: "route vrf", key: biRouteKey, json: `{"vrf_id":2,"dst_network":"10.1.0.0/16","next_hop_addr":"10.0.0.254","outgoing_interface":"loop1"}`, kind: biKeyErr, want: []string{`vrf_id is "1" in the key but "2" in the value`}},
	{name: "route dst", key: biRouteKey, json: `{"vrf_id":1,"dst_network":"10.3.0.0/16","next_hop_addr":"10.0.0.254","outgoing_interface":"loop1"}`, kind: biKeyErr, want: []string{`dst_network is "10.1.0.0/16" in the key but "10.3.0.0/16" in the value`}},
	{name: "route dst prefix length", key: biRouteKey, json: `{"vrf_id":1,"dst_network":"10.1.0.0/24","next_hop_addr":"10.0.0.254","outgoing_interface":"loop1"}`, kind: biKeyErr, want: []string{`dst_network is "10.1.0.0/16" in the key but "10.1.0.0/24" in the value`}},
	{name: "route gw", key: biRouteKey, json: `{"vrf_id":1,"dst_network":"10.1.0.0/16","next_hop_addr":"10.0.0.253","outgoing_interface":"loop1"}`, kind: biKeyErr, want: []string{`next_hop_addr is "10.0.0.254" in the key but "10.0.0.253" in the value`}},
	{name: "route gw missing in value", key: biRouteKey, json: `{"vrf_id":1,"dst_network":"10.1.0.0/16","outgoing_interface":"loop1"}`, kind: biKeyErr, want: []string{`the key has next_hop_addr "10.0.0.254", the value none`}},
	{name: "route iface", key: biRouteKey, json: `{"vrf_id":1,"dst_network":"10.1.0.0/16","next_hop_addr":"10.0.0.254","outgoing_interface":"loop2"}`, kind: biKeyErr, want: []string{`outgoing_interface is "loop1" in the key but "loop2" in the value`}},
	{name: "route iface missing in key", key: biRouteNoIf, json: `{"dst_network":"10.1.0.0/16","outgoing_interface":"loop1"}`, kind: biKeyErr, want: []string{`the value has outgoing_interface "loop1", the key none`}},
	{name: "route vrf and iface", key: biRouteKey, json: `{"vrf_id":3,"dst_network":"10.1.0.0/16","next_hop_addr":"10.0.0.254","outgoing_interface":"loop2"}`, kind: biKeyErr, want: []string{`outgoing_interface is "loop1" in the key but "loop2" in the value; vrf_id is "1" in the key but "3" in the value`}},
	{name: "linux route dst", key: biLRouteKey, json: `{"outgoing_interface":"veth1","dst_network":"10.4.0.0/16"}`, kind: biKeyErr, want: []string{`dst_network is "10.2.0.0/16" in the key but "10.4.0.0/16" in the value`}},
	{name: "linux route iface", key: biLRouteKey, json: `{"outgoing_interface":"veth2","dst_network":"10.2.0.0/16"}`, kind: biKeyErr, want: []string{`outgoing_interface is "veth1" in the key but "veth2" in the value`}},
	{name: "arp ip", key: biARPKey, json: `{"interface":"loop1","ip_address":"10.0.0.3","phys_address":"02:00:00:00:00:01"}`, kind: biKeyErr, want: []string{"config/vpp/v2/arp/loop1/10.0.0.3", `ip_address is "10.0.0.2" in the key but "10.0.0.3" in the value`}},
	{name: "arp interface", key: biARPKey, json: `{"interface":"loop2","ip_address":"10.0.0.2","phys_address":"02:00:00:00:00:01"}`, kind: biKeyErr, want: []string{`interface is "loop1" in the key but "loop2" in the value`}},
	{name: "linux arp ip", key: biLARPKey, json: `{"interface":"veth1","ip_address":"10.2.0.3","hw_address":"02:00:00:00:00:01"}`, kind: biKeyErr, want: []string{`ip_address is "10.2.0.2" in the key but "10.2.0.3" in the value`}},
	{name: "value of another model", key: biARPKey, json: `{"name":"loop1"}`, kind: biDecodeErr, want: []string{`unknown field "name"`}},

	// Invalid field values.
	{name: "invalid CIDR in ip_addresses", key: biIfKey, json: `{"name":"loop1","ip_addresses":["10.0.0.1/24","10.0.0.300/24"]}`, kind: biValidationErr, want: []string{"ip_addresses[1]", `"10.0.0.300/24"`}, fields: []string{"ip_addresses[1]"}},
	{name: "address without prefix length", key: biIfKey, json: `{"name":"loop1","ip_addresses":["10.0.0.1"]}`, kind: biValidationErr, want: []string{"ip_addresses[0]", `"10.0.0.1"`}, fields: []string{"ip_addresses[0]"}},
	{name: "linux address with zone", key: biLinuxIfKey, json: `{"name":"veth1","ip_addresses":["fe80::1%eth0/64"]}`, kind: biValidationErr, want: []string{"ip_addresses[0]", `"fe80::1%eth0/64"`}, fields: []string{"ip_addresses[0]"}},
	{name: "invalid dst_network", key: biRouteNoIf, json: `{"type":"DROP","dst_network":"10.1.0.0/33"}`, kind: biValidationErr, want: []string{"dst_network", `"10.1.0.0/33"`}, fields: []string{"dst_network"}},
	{name: "linux invalid dst_network", key: biLRouteKey, json: `{"outgoing_interface":"veth1","dst_network":"10.2.0.0"}`, kind: biValidationErr, want: []string{"dst_network", `"10.2.0.0"`}, fields: []string{"dst_network"}},
	{name: "invalid next hop", key: biRouteKey, json: `{"vrf_id":1,"dst_network":"10.1.0.0/16","next_hop_addr":"10.0.0.x","outgoing_interface":"loop1"}`, kind: biValidationErr, want: []string{"next_hop_addr", `"10.0.0.x"`}, fields: []string{"next_hop_addr"}},
	{name: "invalid MAC", key: biIfKey, json: `{"name":"loop1","phys_address":"02:00:00:00:00:zz"}`, kind: biValidationErr, want: []string{"phys_address", `"02:00:00:00:00:zz"`}, fields: []string{"phys_address"}},
	{name: "EUI-64 is not a MAC", key: biARPKey, json: `{"interface":"loop1","ip_address":"10.0.0.2","phys_address":"02:00:00:00:00:00:00:01"}`, kind: biValidationErr, want: []string{"phys_address", `"02:00:00:00:00:00:00:01"`}, fields: []string{"phys_address"}},
	{name: "linux arp invalid MAC", key: biLARPKey, json: `{"interface":"veth1","ip_address":"10.2.0.2","hw_address":"0200.0000.0001.02"}`, kind: biValidationErr, want: []string{"hw_address", `"0200.0000.0001.02"`}, fields: []string{"hw_address"}},
	{name: "bridge domain arp termination MAC", key: biBDKey, json: `{"name":"bd1","arp_termination_table":[{"ip_address":"10.0.0.9","phys_address":"nope"}]}`, kind: biValidationErr, want: []string{"arp_termination_table[0].phys_address", `"nope"`}, fields: []string{"arp_termination_table[0].phys_address"}},
	{name: "mtu above 9216", key: biIfKey, json: `{"name":"loop1","mtu":9217}`, kind: biValidationErr, want: []string{"mtu", "9217"}, fields: []string{"mtu"}},
	{name: "several invalid fields", key: biIfKey, json: `{"name":"loop1","phys_address":"x","ip_addresses":["y"],"mtu":10000}`, kind: biValidationErr, want: []string{`"x"`, `"y"`, "10000"}, fields: []string{"phys_address", "ip_addresses[0]", "mtu"}},

	// Empty values.
	{name: "empty vpp interface", key: biIfKey, json: `{}`, kind: biValidationErr, want: []string{`name: required`}, fields: []string{"name"}},
	{name: "empty bridge domain", key: biBDKey, json: `{}`, kind: biValidationErr, want: []string{"name: required"}, fields: []string{"name"}},
	{name: "empty vpp route", key: biRouteNoIf, json: `{}`, kind: biValidationErr, want: []string{"dst_network", `""`, "an INTRA_VRF route needs a next hop or an outgoing interface"}, fields: []string{"dst_network", "next_hop_addr"}},
	{name: "empty vpp arp", key: biARPKey, json: `{}`, kind: biValidationErr, want: []string{"interface", "ip_address", "phys_address"}, fields: []string{"interface", "ip_address", "phys_address"}},
	{name: "empty linux interface", key: biLinuxIfKey, json: `{}`, kind: biValidationErr, want: []string{"name: required"}, fields: []string{"name"}},
	{name: "empty linux route", key: biLRouteKey, json: `{}`, kind: biValidationErr, want: []string{"outgoing_interface", "dst_network"}, fields: []string{"outgoing_interface", "dst_network"}},
	{name: "empty linux arp", key: biLARPKey, json: `{}`, kind: biValidationErr, want: []string{"interface", "ip_address", "hw_address"}, fields: []string{"interface", "ip_address", "hw_address"}},
}

// biCheckError checks an error of DecodeValue against a case.
func biCheckError(t *testing.T, c biCase, m *models.Model, v proto.Message, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("DecodeValue(%q, %s) = %v, no error; want a %v", c.key, c.json, v, c.kind)
	}
	if v != nil {
		t.Errorf("DecodeValue(%q, %s) returned a value %v with error %v", c.key, c.json, v, err)
	}
	if want := models.Default.ModelOfKey(c.key); m != nil && m != want {
		t.Errorf("DecodeValue(%q) returned model %s, the key is of %v", c.key, m.Name, want)
	}
	if c.noModel && m != nil {
		t.Errorf("DecodeValue(%q) returned model %s for a key of no model", c.key, m.Name)
	}
	msg := err.Error()
	if !strings.Contains(msg, c.key) {
		t.Errorf("error %q does not name the key %q", msg, c.key)
	}
	for _, s := range c.want {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not contain %q", msg, s)
		}
	}
	var (
		ke *models.KeyError
		de *models.DecodeError
		ve *models.ValidationError
	)
	isKey, isDecode, isValidation := errors.As(err, &ke), errors.As(err, &de), errors.As(err, &ve)
	switch c.kind {
	case biKeyErr:
		if !isKey || isDecode || isValidation {
			t.Fatalf("error %q is a %T, want a *models.KeyError only", msg, err)
		}
		if ke.Key != c.key {
			t.Errorf("KeyError.Key = %q, want %q", ke.Key, c.key)
		}
	case biDecodeErr:
		if !isDecode || isKey || isValidation {
			t.Fatalf("error %q is a %T, want a *models.DecodeError only", msg, err)
		}
		if de.Key != c.key {
			t.Errorf("DecodeError.Key = %q, want %q", de.Key, c.key)
		}
		if errors.Unwrap(err) == nil {
			t.Errorf("DecodeError %q wraps no error", msg)
		}
	case biValidationErr:
		if !isValidation || isKey || isDecode {
			t.Fatalf("error %q is a %T, want a *models.ValidationError only", msg, err)
		}
		if ve.Key != c.key {
			t.Errorf("ValidationError.Key = %q, want %q", ve.Key, c.key)
		}
		if want := models.Default.ModelOfKey(c.key).Name; ve.Model != want {
			t.Errorf("ValidationError.Model = %q, want %q", ve.Model, want)
		}
		if got := ve.FieldNames(); !biEqualStrings(got, c.fields) {
			t.Errorf("ValidationError.FieldNames() = %q, want %q (error %q)", got, c.fields, msg)
		}
		for _, fe := range ve.Fields {
			if fe.Problem == "" {
				t.Errorf("field %s has no problem text", fe.Field)
			}
		}
	}
}

func biEqualStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDecodeValueBadInput(t *testing.T) {
	for _, c := range biCases {
		t.Run(c.name, func(t *testing.T) {
			m, v, err := models.Default.DecodeValue(c.key, []byte(c.json))
			biCheckError(t, c, m, v, err)
		})
	}
}

// biGood are valid values of every model, with their keys and JSON.
var biGood = []struct {
	key  string
	json string
	want proto.Message
}{
	{biIfKey, `{"name":"loop1","type":"SOFTWARE_LOOPBACK","enabled":true,"ip_addresses":["10.0.0.1/24"]}`,
		&vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.0.0.1/24"}}},
	{biIfKey, `{"name":"loop1","ipAddresses":["10.0.0.1/24"],"physAddress":"02:00:00:00:00:01"}`,
		&vppif.Interface{Name: "loop1", IpAddresses: []string{"10.0.0.1/24"}, PhysAddress: "02:00:00:00:00:01"}},
	{biBDKey, `{"name":"bd1","interfaces":[{"name":"loop1","bridged_virtual_interface":true}]}`,
		&vppl2.BridgeDomain{Name: "bd1", Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "loop1", BridgedVirtualInterface: true}}}},
	{biRouteKey, `{"vrf_id":1,"dst_network":"10.1.2.3/16","next_hop_addr":"10.0.0.254","outgoing_interface":"loop1"}`,
		&vppl3.Route{VrfId: 1, DstNetwork: "10.1.2.3/16", NextHopAddr: "10.0.0.254", OutgoingInterface: "loop1"}},
	{biRouteNoIf, `{"dst_network":"10.1.0.0/16","type":"DROP"}`,
		&vppl3.Route{DstNetwork: "10.1.0.0/16", Type: vppl3.Route_DROP}},
	{biARPKey, `{"interface":"loop1","ip_address":"10.0.0.2","phys_address":"02:00:00:00:00:02","static":true}`,
		&vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02", Static: true}},
	{biLinuxIfKey, `{"name":"veth1","type":"VETH","veth":{"peer_if_name":"veth2"}}`,
		&linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2"}}}},
	{biLRouteKey, `{"outgoing_interface":"veth1","dst_network":"10.2.0.0/16","gw_addr":"10.2.0.1","scope":"GLOBAL"}`,
		&linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.2.0.0/16", GwAddr: "10.2.0.1", Scope: linuxl3.Route_GLOBAL}},
	{biLARPKey, `{"interface":"veth1","ip_address":"10.2.0.2","hw_address":"02:00:00:00:00:03"}`,
		&linuxl3.ARPEntry{Interface: "veth1", IpAddress: "10.2.0.2", HwAddress: "02:00:00:00:00:03"}},
}

// TestDecodeValueAfterBadInput: bad values leave the registry as it was,
// so that valid values of every model decode after them, repeatedly.
func TestDecodeValueAfterBadInput(t *testing.T) {
	r, err := models.NewRegistry(models.Builtin()...)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for _, c := range biCases {
			if _, v, err := r.DecodeValue(c.key, []byte(c.json)); err == nil || v != nil {
				t.Fatalf("round %d, %s: DecodeValue(%q, %s) = %v, %v; want no value and an error", round, c.name, c.key, c.json, v, err)
			}
		}
		for _, g := range biGood {
			m, v, err := r.DecodeValue(g.key, []byte(g.json))
			if err != nil {
				t.Fatalf("round %d: DecodeValue(%q, %s): %v", round, g.key, g.json, err)
			}
			if m != r.ModelOfKey(g.key) || m != r.ModelOfMessage(g.want) {
				t.Errorf("round %d: DecodeValue(%q) model %v, want %s", round, g.key, m, r.ModelOfKey(g.key).Name)
			}
			if !proto.Equal(v, g.want) {
				t.Errorf("round %d: DecodeValue(%q, %s) = %v, want %v", round, g.key, g.json, v, g.want)
			}
		}
	}
}

// TestDecodeValueSameKeyBadThenGood: an error for a key does not stick to
// that key.
func TestDecodeValueSameKeyBadThenGood(t *testing.T) {
	r := models.Default
	if _, _, err := r.DecodeValue(biIfKey, []byte(`{"name":"loop1","mtu":"abc"}`)); err == nil {
		t.Fatal("no error for a string mtu")
	}
	if _, _, err := r.DecodeValue(biIfKey, []byte(`{"name":"loop2"}`)); err == nil {
		t.Fatal("no error for a name disagreement")
	}
	_, v, err := r.DecodeValue(biIfKey, []byte(`{"name":"loop1","mtu":1500}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (&vppif.Interface{Name: "loop1", Mtu: 1500}); !proto.Equal(v, want) {
		t.Errorf("got %v, want %v", v, want)
	}
}

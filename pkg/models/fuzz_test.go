package models_test

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/pkg/models"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// fzKeySeeds are keys of every model and near misses.
var fzKeySeeds = []string{
	// Keys of every model.
	"config/vpp/v2/interfaces/loop1",
	"config/vpp/v2/interfaces/GigabitEthernet0/8/0",
	"config/vpp/v2/interfaces/unicode-é",
	"config/vpp/l2/v2/bridge-domain/bd1",
	"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8",
	"config/vpp/v2/route/if/loop1/vrf/1/dst/10.1.0.0/16/gw/10.0.0.254",
	"config/vpp/v2/route/if/GigabitEthernet0/8/0/vrf/4294967295/dst/2001:db8::/32/gw/fe80::1",
	"config/vpp/v2/route/if/vrf/vrf/0/dst/0.0.0.0/0",
	"config/vpp/v2/route/if/a/gw/1.1.1.1/vrf/0/dst/10.0.0.0/8/gw/10.0.0.1",
	"config/vpp/v2/route/vrf/0/dst/::ffff:10.0.0.0/104",
	"config/vpp/v2/arp/loop1/10.0.0.2",
	"config/vpp/v2/arp/memif1/1/2001:db8::2",
	"config/vpp/v2/arp/a/1.1.1.1/1.1.1.1",
	"config/linux/interfaces/v2/interface/veth1",
	"config/linux/interfaces/v2/interface/a-rather-long/logical:name",
	"config/linux/l3/v2/route/10.0.0.0/8/veth1",
	"config/linux/l3/v2/route/::/0/a/b/c",
	"config/linux/l3/v2/arp/veth1/10.0.0.2",
	"config/linux/l3/v2/arp/veth1/fe80::2",
	// Near misses.
	"",
	"/",
	"config/",
	"config/vpp/v2/interfaces",
	"config/vpp/v2/interfaces/",
	"config/vpp/v2/interfaces//",
	"config/vpp/v2/interfaces/a/",
	"config/vpp/v2/interfaces/a//b",
	"config/vpp/v2/interfaces/./a",
	"config/vpp/v2/interfaces/a b",
	"config/vpp/v2/interfaces/\xff",
	"config/vpp/v3/interfaces/loop1",
	"/vnf-agent/vpp1/config/vpp/v2/interfaces/loop1",
	"config/vpp/v2/route/vrf/0/dst/10.0.0.1/8",
	"config/vpp/v2/route/vrf/00/dst/10.0.0.0/8",
	"config/vpp/v2/route/vrf/-1/dst/10.0.0.0/8",
	"config/vpp/v2/route/vrf/4294967296/dst/10.0.0.0/8",
	"config/vpp/v2/route/vrf/0/dst/10.0.0.0/08",
	"config/vpp/v2/route/vrf/0/dst/10.0.0.0/33",
	"config/vpp/v2/route/vrf/0/dst/10.0.0.0",
	"config/vpp/v2/route/vrf/0/dst/2001:DB8::/32",
	"config/vpp/v2/route/vrf/0/dst/fe80::%eth0/64",
	"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/::1",
	"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/",
	"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw",
	"config/vpp/v2/route/if/vrf/0/dst/10.0.0.0/8",
	"config/vpp/v2/route/iff/x/vrf/0/dst/10.0.0.0/8",
	"config/vpp/v2/route/gw/10.0.0.1",
	"config/vpp/v2/arp/loop1",
	"config/vpp/v2/arp/loop1/10.0.0.02",
	"config/vpp/v2/arp//10.0.0.2",
	"config/linux/l3/v2/route/10.0.0.0/8",
	"config/linux/l3/v2/route/10.0.0.0/8/",
	"config/linux/l3/v2/route/10.0.0.1/8/veth1",
	"config/linux/l3/v2/arp/veth1/10.0.0.2/",
	// The original agent's key of a route without a next hop.
	"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/",
	"config/vpp/v2/route/if/loop1/vrf/2/dst/2001:db8::/32/",
	// Names over the 63 bytes of a VPP tag (TestParseKeyOverlongVPPName).
	"config/vpp/v2/interfaces/" + strings.Repeat("a", 64),
	"config/vpp/l2/v2/bridge-domain/" + strings.Repeat("b", 100),
}

// fzValueFromParts builds a value of m whose key fields are the key parts:
// each part names the proto field it comes from. Fields the key does not
// hold but the value needs to be valid get a fixed valid content.
func fzValueFromParts(t *testing.T, m *models.Model, parts models.KeyParts) proto.Message {
	t.Helper()
	v := m.New()
	msg := v.ProtoReflect()
	fields := msg.Descriptor().Fields()
	for name, s := range parts {
		fd := fields.ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("model %s: key part %q is not a field of %s", m.Name, name, m.MessageName())
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			msg.Set(fd, protoreflect.ValueOfString(s))
		case protoreflect.Uint32Kind:
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				t.Fatalf("model %s: key part %s=%q is not a uint32: %v", m.Name, name, s, err)
			}
			msg.Set(fd, protoreflect.ValueOfUint32(uint32(n)))
		default:
			t.Fatalf("model %s: key part %s is a %v field", m.Name, name, fd.Kind())
		}
	}
	switch v := v.(type) {
	case *vppl3.ARPEntry:
		v.PhysAddress = "02:00:00:00:00:01"
	case *vppl3.Route:
		// An INTRA_VRF route needs a next hop or an interface; a key
		// with neither is a DROP route's.
		if v.NextHopAddr == "" && v.OutgoingInterface == "" {
			v.Type = vppl3.Route_DROP
		}
	case *linuxl3.ARPEntry:
		v.HwAddress = "02:00:00:00:00:01"
	case *linuxif.Interface:
		// The logical name may not be a kernel name.
		v.HostIfName = "eth0"
	}
	return v
}

func FuzzParseKey(f *testing.F) {
	for _, k := range fzKeySeeds {
		f.Add(k)
	}
	r := models.Default
	f.Fuzz(func(t *testing.T, key string) {
		m, parts, err := r.ParseKey(key)
		if err != nil {
			var ke *models.KeyError
			if !errors.As(err, &ke) || ke.Key != key {
				t.Fatalf("ParseKey(%q) error %v (%T), want a *models.KeyError for the key", key, err, err)
			}
			if m != nil || parts != nil {
				t.Fatalf("ParseKey(%q) = %v, %v with error %v", key, m, parts, err)
			}
			return
		}
		if m == nil || len(parts) == 0 {
			t.Fatalf("ParseKey(%q) = %v, %v, no error", key, m, parts)
		}
		if got := r.ModelOfKey(key); got != m {
			t.Fatalf("ModelOfKey(%q) = %v, ParseKey gave %s", key, got, m.Name)
		}
		if !strings.HasPrefix(key, m.KeyPrefix) {
			t.Fatalf("key %q of model %s does not start with %s", key, m.Name, m.KeyPrefix)
		}
		if p2, err := m.ParseKey(key); err != nil || !reflect.DeepEqual(p2, parts) {
			t.Fatalf("Model.ParseKey(%q) = %v, %v; Registry.ParseKey gave %v", key, p2, err, parts)
		}
		// The etcd key of the model key leads back to it.
		if label, mk, err := models.ParseEtcdKey(models.EtcdKey(models.DefaultLabel, key)); err != nil || label != models.DefaultLabel || mk != key {
			t.Fatalf("ParseEtcdKey(EtcdKey(%q)) = %q, %q, %v", key, label, mk, err)
		}

		// A value with those parts has that key.
		v := fzValueFromParts(t, m, parts)
		got, err := m.Key(v)
		if err != nil {
			t.Fatalf("key %q parses to %v, but the value %v has no key: %v", key, parts, v, err)
		}
		canonical, err := m.CanonicalKey(key)
		if err != nil || got != canonical {
			t.Fatalf("key %q (canonical %q, %v) parses to %v, but the value %v has key %q", key, canonical, err, parts, v, got)
		}
		if err := m.CheckKey(key, v); err != nil {
			t.Fatalf("CheckKey(%q, %v): %v", key, v, err)
		}
		// And decodes under it.
		data, err := models.MarshalJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		m2, v2, err := r.DecodeValue(key, data)
		if err != nil || m2 != m || !proto.Equal(v2, v) {
			t.Fatalf("DecodeValue(%q, %s) = %v, %v, %v", key, data, m2, v2, err)
		}
	})
}

// TestParseKeyOverlongVPPName: a VPP interface or bridge domain name is at
// most 63 bytes (the VPP tag), so a key with a longer name belongs to no
// value and ParseKey should reject it, as it rejects every other key that
// Key cannot produce.
func TestParseKeyOverlongVPPName(t *testing.T) {
	var bugs []string
	for _, key := range []string{
		"config/vpp/v2/interfaces/" + strings.Repeat("a", 64),
		"config/vpp/l2/v2/bridge-domain/" + strings.Repeat("b", 100),
	} {
		m, parts, err := models.Default.ParseKey(key)
		if err == nil {
			v := fzValueFromParts(t, m, parts)
			_, kerr := m.Key(v)
			bugs = append(bugs, fmt.Sprintf("ParseKey(%q) = %v, no error; but a value with that name is invalid: Key: %v", key, parts, kerr))
			continue
		}
		if !strings.Contains(err.Error(), "63") {
			t.Errorf("ParseKey(%q): %v, want the 63-byte limit named", key, err)
		}
	}
	// 63 bytes is fine.
	if _, _, err := models.Default.ParseKey("config/vpp/v2/interfaces/" + strings.Repeat("a", 63)); err != nil {
		t.Errorf("ParseKey of a 63-byte name: %v", err)
	}
	for _, bug := range bugs {
		t.Error(bug)
	}
}

// fzDecodeSeeds are keys and JSON values: valid ones of every model and a
// few invalid ones.
func fzDecodeSeeds(f *testing.F) [][2]string {
	seeds := [][2]string{
		{"config/vpp/v2/interfaces/loop1", `{"name":"loop1","type":"SOFTWARE_LOOPBACK","enabled":true,"ip_addresses":["10.0.0.1/24"]}`},
		{"config/vpp/v2/interfaces/memif1/1", `{"name":"memif1/1","type":"MEMIF","memif":{"mode":"IP","master":true,"id":1,"ringSize":1024}}`},
		{"config/vpp/v2/interfaces/tap1", `{"name":"tap1","type":"TAP","tap":{"version":2,"host_if_name":"tap1"}}`},
		{"config/vpp/v2/interfaces/unnum1", `{"name":"unnum1","unnumbered":{"interface_with_ip":"loop1"}}`},
		{"config/vpp/l2/v2/bridge-domain/bd1", `{"name":"bd1","flood":true,"interfaces":[{"name":"loop1","bridged_virtual_interface":true}],"arp_termination_table":[{"ip_address":"10.0.0.2","phys_address":"02:00:00:00:00:02"}]}`},
		{"config/vpp/v2/route/if/loop1/vrf/1/dst/10.1.0.0/16/gw/10.0.0.254", `{"vrf_id":1,"dst_network":"10.1.2.3/16","next_hop_addr":"10.0.0.254","outgoing_interface":"loop1"}`},
		{"config/vpp/v2/route/vrf/0/dst/2001:db8::/32", `{"dstNetwork":"2001:DB8::/32","type":"DROP"}`},
		{"config/vpp/v2/arp/loop1/10.0.0.2", `{"interface":"loop1","ip_address":"10.0.0.2","phys_address":"02:00:00:00:00:02","static":true}`},
		{"config/linux/interfaces/v2/interface/veth1", `{"name":"veth1","type":"VETH","namespace":{"type":"NSID","reference":"ns1"},"veth":{"peer_if_name":"veth2"}}`},
		{"config/linux/interfaces/v2/interface/tap-linux", `{"name":"tap-linux","type":"TAP_TO_VPP","tap":{"vpp_tap_if_name":"tap1"}}`},
		{"config/linux/l3/v2/route/10.2.0.0/16/veth1", `{"outgoing_interface":"veth1","dst_network":"10.2.0.0/16","gw_addr":"10.2.0.1","scope":"GLOBAL","metric":10}`},
		{"config/linux/l3/v2/arp/veth1/fe80::2", `{"interface":"veth1","ip_address":"fe80::2","hw_address":"02:00:00:00:00:03"}`},
		// Invalid ones.
		{"config/vpp/v2/interfaces/loop1", `{"name":"loop2"}`},
		{"config/vpp/v2/interfaces/loop1", `{"name":"loop1","mtu":"x"}`},
		{"config/vpp/v2/interfaces/loop1", `{"name":"loop1","type":99}`},
		{"config/vpp/v2/interfaces/loop1", `{}`},
		{"config/vpp/v2/interfaces/loop1", `null`},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8", `{"dst_network":"10.0.0.0/8","next_hop_addr":"::1"}`},
		{"config/vpp/v3/interfaces/loop1", `{"name":"loop1"}`},
	}
	// The full configuration document's items too.
	for _, kv := range cfgFullKVs() {
		data, err := models.MarshalJSON(kv.Value)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, [2]string{kv.Key, string(data)})
	}
	return seeds
}

func FuzzDecodeValue(f *testing.F) {
	for _, s := range fzDecodeSeeds(f) {
		f.Add(s[0], []byte(s[1]))
	}
	r := models.Default
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		m, v, err := r.DecodeValue(key, data)
		if err != nil {
			if v != nil {
				t.Fatalf("DecodeValue(%q, %q) returned a value %v with error %v", key, data, v, err)
			}
			var (
				ke *models.KeyError
				de *models.DecodeError
				ve *models.ValidationError
			)
			switch {
			case errors.As(err, &ke):
				if ke.Key != key {
					t.Fatalf("KeyError for key %q, DecodeValue of %q", ke.Key, key)
				}
			case errors.As(err, &de):
				if de.Key != key {
					t.Fatalf("DecodeError for key %q, DecodeValue of %q", de.Key, key)
				}
			case errors.As(err, &ve):
				if ve.Key != key || len(ve.Fields) == 0 {
					t.Fatalf("ValidationError for key %q with fields %q, DecodeValue of %q", ve.Key, ve.FieldNames(), key)
				}
			default:
				t.Fatalf("DecodeValue(%q, %q): error %v is a %T", key, data, err, err)
			}
			return
		}
		if m == nil || v == nil || m != r.ModelOfKey(key) || m != r.ModelOfMessage(v) {
			t.Fatalf("DecodeValue(%q, %q) = %v, %v", key, data, m, v)
		}
		if err := m.Validate(v); err != nil {
			t.Fatalf("DecodeValue(%q, %q) = %v, which is invalid: %v", key, data, v, err)
		}
		if k, err := m.Key(v); err != nil || k != key {
			t.Fatalf("DecodeValue(%q, %q) = %v, whose key is %q (%v)", key, data, v, k, err)
		}
		// The value's own JSON decodes to the same value under the same key.
		js, err := models.MarshalJSON(v)
		if err != nil {
			t.Fatalf("MarshalJSON(%v): %v", v, err)
		}
		m2, v2, err := r.DecodeValue(key, js)
		if err != nil {
			t.Fatalf("DecodeValue(%q, %s) of MarshalJSON(DecodeValue(%q)): %v", key, js, data, err)
		}
		if m2 != m || !proto.Equal(v, v2) {
			t.Fatalf("DecodeValue(%q, %s) = %v, want %v", key, js, v2, v)
		}
		if err := m.CheckKey(key, v2); err != nil {
			t.Fatalf("CheckKey(%q, %v): %v", key, v2, err)
		}
		// MarshalJSON is stable.
		js2, err := models.MarshalJSON(v2)
		if err != nil || string(js2) != string(js) {
			t.Fatalf("MarshalJSON not stable: %s then %s (%v)", js, js2, err)
		}
	})
}

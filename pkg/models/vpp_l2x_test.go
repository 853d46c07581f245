package models_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

// The original agent's example values of cross-connects and FIB entries
// (its docs' etcdctl lines), under the keys it wrote them, decode; a FIB
// entry is kept under the key with the MAC in lower case.
func TestL2ExamplesOfTheOriginal(t *testing.T) {
	for _, c := range []struct {
		key, json string
		own       string
		want      proto.Message
	}{
		{
			key:  "config/vpp/l2/v2/fib/bd1/mac/62:89:C6:A3:6D:5C",
			json: `{"phys_address":"62:89:C6:A3:6D:5C","bridge_domain":"bd1","outgoing_interface":"tap1","action":"FORWARD","static_config":true,"bridged_virtual_interface":false}`,
			own:  "config/vpp/l2/v2/fib/bd1/mac/62:89:c6:a3:6d:5c",
			want: &vppl2.FIBEntry{PhysAddress: "62:89:C6:A3:6D:5C", BridgeDomain: "bd1", OutgoingInterface: "tap1", StaticConfig: true},
		},
		{
			key:  "config/vpp/l2/v2/xconnect/if1",
			json: `{"receive_interface":"if1","transmit_interface":"if2"}`,
			own:  "config/vpp/l2/v2/xconnect/if1",
			want: &vppl2.XConnectPair{ReceiveInterface: "if1", TransmitInterface: "if2"},
		},
	} {
		r, err := models.Default.DecodeVariant(c.key, []byte(c.json))
		if err != nil {
			t.Errorf("%s: %v", c.key, err)
			continue
		}
		if r.Key != c.own || r.Variant != "" || !proto.Equal(r.Value, c.want) {
			t.Errorf("%s: key %q variant %q value %v; want key %q value %v", c.key, r.Key, r.Variant, r.Value, c.own, c.want)
		}
		if own, err := r.Model.CanonicalKey(c.key); err != nil || own != c.own {
			t.Errorf("CanonicalKey(%s) = %q, %v; want %q", c.key, own, err, c.own)
		}
	}
}

// Bad cross-connects and FIB entries are refused with errors naming the
// fields.
func TestL2InvalidValues(t *testing.T) {
	for _, c := range []struct {
		name   string
		model  *models.Model
		value  proto.Message
		fields []string
		want   string
	}{
		{"xconnect without interfaces", models.VPPXConnect, &vppl2.XConnectPair{}, []string{"receive_interface", "transmit_interface"}, "required"},
		{"xconnect with a bad name", models.VPPXConnect, &vppl2.XConnectPair{ReceiveInterface: "a b", TransmitInterface: "c"}, []string{"receive_interface"}, "no spaces"},
		{"fib without MAC", models.VPPL2FIB, &vppl2.FIBEntry{BridgeDomain: "bd1", OutgoingInterface: "if1"}, []string{"phys_address"}, "not a MAC"},
		{"fib with a bad MAC", models.VPPL2FIB, &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00", BridgeDomain: "bd1", OutgoingInterface: "if1"}, []string{"phys_address"}, "not a MAC"},
		{"fib without bridge domain", models.VPPL2FIB, &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:01", OutgoingInterface: "if1"}, []string{"bridge_domain"}, "required"},
		{"fib bridge domain too long", models.VPPL2FIB, &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:01", BridgeDomain: strings.Repeat("b", 64), OutgoingInterface: "if1"}, []string{"bridge_domain"}, "VPP tag"},
		{"fib forward without interface", models.VPPL2FIB, &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:01", BridgeDomain: "bd1"}, []string{"outgoing_interface"}, "required for a FORWARD"},
		{"fib drop with interface and BVI", models.VPPL2FIB, &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:01", BridgeDomain: "bd1", Action: vppl2.FIBEntry_DROP, OutgoingInterface: "if1", BridgedVirtualInterface: true}, []string{"outgoing_interface", "bridged_virtual_interface"}, "DROP"},
		{"fib unknown action", models.VPPL2FIB, &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:01", BridgeDomain: "bd1", Action: 9}, []string{"action"}, "not a value"},
	} {
		err := c.model.Validate(c.value)
		var ve *models.ValidationError
		if !errors.As(err, &ve) || !slices.Equal(ve.FieldNames(), c.fields) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want a *ValidationError on %q saying %q", c.name, err, c.fields, c.want)
		}
	}
}

// Cross-connect and FIB keys in a form the models never produce are
// refused, saying why.
func TestL2KeysRejected(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"config/vpp/l2/v2/xconnect/", "empty"},
		{"config/vpp/l2/v2/xconnect/a b", "no spaces"},
		{"config/vpp/l2/v2/fib/bd1/02:00:00:00:00:01", "want <bridge_domain>/mac/<phys_address>"},
		{"config/vpp/l2/v2/fib/bd1/mac/02-00-00-00-00-01", "not a MAC address"},
		{"config/vpp/l2/v2/fib/bd1/mac/0200.0000.0001", "not a MAC address"},
		{"config/vpp/l2/v2/fib/bd1/mac/zz:00:00:00:00:01", "not a MAC address"},
		{"config/vpp/l2/v2/fib/mac/02:00:00:00:00:01", "want <bridge_domain>/mac/<phys_address>"},
		{"config/vpp/l2/v2/fib//mac/02:00:00:00:00:01", "empty"},
	} {
		_, _, err := models.Default.ParseKey(c.key)
		var ke *models.KeyError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseKey(%q) = %v; want a *KeyError saying %q", c.key, err, c.want)
		}
	}
	err := models.VPPL2FIB.CheckKey("config/vpp/l2/v2/fib/bd2/mac/02:00:00:00:00:01",
		&vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:01", BridgeDomain: "bd1", OutgoingInterface: "if1"})
	if err == nil || !strings.Contains(err.Error(), `bridge_domain is "bd2" in the key but "bd1" in the value`) {
		t.Errorf("FIB entry under another domain's key: %v", err)
	}
}

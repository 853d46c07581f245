package models_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// The VRF tables of the original agent's VRF example, under its keys,
// decode.
func TestVrfTableExamplesOfTheOriginal(t *testing.T) {
	for _, c := range []struct {
		key, json string
		want      proto.Message
	}{
		{"config/vpp/v2/vrf-table/id/3/protocol/IPV4", `{"id":3}`, &vppl3.VrfTable{Id: 3}},
		{"config/vpp/v2/vrf-table/id/3/protocol/IPV6", `{"id":3,"protocol":"IPV6","label":"vrf3-IPv6"}`, &vppl3.VrfTable{Id: 3, Protocol: vppl3.VrfTable_IPV6, Label: "vrf3-IPv6"}},
	} {
		r, err := models.Default.DecodeVariant(c.key, []byte(c.json))
		if err != nil {
			t.Errorf("%s: %v", c.key, err)
			continue
		}
		if r.Key != c.key || r.Variant != "" || !proto.Equal(r.Value, c.want) {
			t.Errorf("%s: key %q variant %q value %v; want %v", c.key, r.Key, r.Variant, r.Value, c.want)
		}
	}
	if got := models.VrfTableKey(10, true); got != "config/vpp/v2/vrf-table/id/10/protocol/IPV6" {
		t.Errorf("VrfTableKey(10, true) = %q", got)
	}
}

// Bad VRF tables are refused with errors naming the fields; so is the
// original's flow_hash_settings, which the model leaves out.
func TestVrfTableInvalidValues(t *testing.T) {
	for _, c := range []struct {
		name   string
		value  *vppl3.VrfTable
		fields []string
		want   string
	}{
		{"label too long", &vppl3.VrfTable{Id: 1, Label: strings.Repeat("x", 64)}, []string{"label"}, "63 bytes"},
		{"label with a newline", &vppl3.VrfTable{Id: 1, Label: "a\nb"}, []string{"label"}, "control characters"},
		{"id ~0", &vppl3.VrfTable{Id: ^uint32(0)}, []string{"id"}, "no table"},
		{"unknown protocol", &vppl3.VrfTable{Id: 1, Protocol: 7}, []string{"protocol"}, "not a value"},
	} {
		err := models.VPPVrfTable.Validate(c.value)
		var ve *models.ValidationError
		if !errors.As(err, &ve) || !slices.Equal(ve.FieldNames(), c.fields) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want a *ValidationError on %q saying %q", c.name, err, c.fields, c.want)
		}
	}
	_, _, err := models.Default.DecodeValue("config/vpp/v2/vrf-table/id/1/protocol/IPV4", []byte(`{"id":1,"flow_hash_settings":{"use_src_ip":true}}`))
	if err == nil || !strings.Contains(err.Error(), "flow_hash_settings") {
		t.Errorf("flow_hash_settings: %v, want an error naming the field", err)
	}
}

// VRF table keys in a form the model never produces are refused, saying
// why.
func TestVrfTableKeysRejected(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"config/vpp/v2/vrf-table/id/3/protocol/ipv4", "IPV4 or IPV6"},
		{"config/vpp/v2/vrf-table/id/3/protocol/IPV5", "IPV4 or IPV6"},
		{"config/vpp/v2/vrf-table/id/03/protocol/IPV4", "canonical"},
		{"config/vpp/v2/vrf-table/id/x/protocol/IPV4", "decimal"},
		{"config/vpp/v2/vrf-table/id/3", "want id/<id>/protocol/<IPV4|IPV6>"},
		{"config/vpp/v2/vrf-table/3/IPV4", "want id/<id>/protocol/<IPV4|IPV6>"},
	} {
		_, _, err := models.Default.ParseKey(c.key)
		var ke *models.KeyError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseKey(%q) = %v; want a *KeyError saying %q", c.key, err, c.want)
		}
	}
	err := models.VPPVrfTable.CheckKey("config/vpp/v2/vrf-table/id/3/protocol/IPV6", &vppl3.VrfTable{Id: 3})
	if err == nil || !strings.Contains(err.Error(), `protocol is "IPV6" in the key but "IPV4" in the value`) {
		t.Errorf("IPv4 table under the IPv6 key: %v", err)
	}
}

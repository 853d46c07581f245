package manager

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/netagent-io/netagent/pkg/models"
	ligatogeneric "github.com/netagent-io/netagent/proto/ligato/generic"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// FuzzSetConfigItems: whatever bytes a client sends as a SetConfigRequest,
// the item checks of SetConfig (updates) do not panic, and what they accept
// is consistent: a value to set is valid under the key they give it (the
// key its model builds), a delete names a key of its model, an item
// reported as refused says why and with which status, and a request they
// refuse says which item.
func FuzzSetConfigItems(f *testing.F) {
	s, err := New(nil, nil, nil, Options{})
	if err != nil {
		f.Fatal(err)
	}
	route, _ := proto.Marshal(&vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "lo1"})
	seed := func(items ...*ligatogeneric.UpdateItem) {
		data, err := proto.Marshal(&ligatogeneric.SetConfigRequest{Updates: items})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	item := func(typeURL string, value []byte) *ligatogeneric.UpdateItem {
		return &ligatogeneric.UpdateItem{Item: &ligatogeneric.Item{Data: &ligatogeneric.Data{Union: &ligatogeneric.Data_Any{Any: &anypb.Any{TypeUrl: typeURL, Value: value}}}}}
	}
	seed(item("models.ligato.io/vpp.l3.Route", route))
	seed(item("models.ligato.io/ligato.vpp.l3.Route", route), item("models.ligato.io/ligato.vpp.l3.Route", route))
	seed(item("models.ligato.io/ligato.vpp.abf.ABF", []byte{8, 1}))
	seed(&ligatogeneric.UpdateItem{Item: &ligatogeneric.Item{Id: &ligatogeneric.Item_ID{Model: models.VPPRoute.Name, Name: "vrf/0/dst/10.1.0.0/16"}}})
	seed(item("x/", nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req ligatogeneric.SetConfigRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		ups, err := s.updates(&req)
		if err != nil {
			if !strings.Contains(err.Error(), "updates[") {
				t.Fatalf("refused request: %q names no item", err)
			}
			return
		}
		for _, u := range ups {
			switch {
			case u.refused != "":
				if u.refusedStatus == "" {
					t.Fatalf("item refused without a status: %q", u.refused)
				}
			case u.value != nil:
				if err := u.model.CheckKey(u.key, u.value); err != nil {
					t.Fatalf("accepted value %v under key %q: %v", u.value, u.key, err)
				}
			default:
				if _, err := u.model.ParseKey(u.key); err != nil || !strings.HasPrefix(u.key, u.model.KeyPrefix) {
					t.Fatalf("delete of key %q of model %s: %v", u.key, u.model.Name, err)
				}
			}
		}
	})
}

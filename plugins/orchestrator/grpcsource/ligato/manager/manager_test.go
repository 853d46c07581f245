package manager_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato/manager"
	ligatogeneric "github.com/netagent-io/netagent/proto/ligato/generic"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

// samples are a valid value of every model, by model name.
var samples = map[string]proto.Message{
	models.VPPInterface.Name:    loop("loop1", "10.0.0.1/24"),
	models.VPPBridgeDomain.Name: &vppl2.BridgeDomain{Name: "bd1", Flood: true},
	models.VPPRoute.Name:        route("10.1.0.0/16", "10.0.0.2", "loop1"),
	models.VPPARP.Name:          &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.9", PhysAddress: "02:00:00:00:00:09"},
	models.LinuxInterface.Name:  &linuxif.Interface{Name: "dummy1", Type: linuxif.Interface_DUMMY, Enabled: true},
	models.LinuxRoute.Name:      &linuxl3.Route{DstNetwork: "10.2.0.0/16", OutgoingInterface: "dummy1", GwAddr: "10.3.0.1"},
	models.LinuxARP.Name:        &linuxl3.ARPEntry{Interface: "dummy1", IpAddress: "10.3.0.9", HwAddress: "02:00:00:00:00:0a"},
	models.VPPACL.Name: &vppacl.ACL{Name: "acl1", Interfaces: &vppacl.ACL_Interfaces{Ingress: []string{"loop1"}},
		Rules: []*vppacl.ACL_Rule{{Action: vppacl.ACL_Rule_PERMIT, IpRule: &vppacl.ACL_Rule_IpRule{Ip: &vppacl.ACL_Rule_IpRule_Ip{DestinationNetwork: "10.4.0.0/16"}}}}},
	models.VPPVrfTable.Name:         &vppl3.VrfTable{Id: 3, Label: "blue"},
	models.VPPXConnect.Name:         &vppl2.XConnectPair{ReceiveInterface: "loop1", TransmitInterface: "loop2"},
	models.VPPL2FIB.Name:            &vppl2.FIBEntry{PhysAddress: "02:00:00:00:00:0b", BridgeDomain: "bd1", OutgoingInterface: "loop1", StaticConfig: true},
	models.VPPNat44Global.Name:      &vppnat.Nat44Global{Forwarding: true},
	models.VPPNat44Interface.Name:   &vppnat.Nat44Interface{Name: "loop1", NatInside: true},
	models.VPPNat44AddressPool.Name: &vppnat.Nat44AddressPool{FirstIp: "192.0.2.1", LastIp: "192.0.2.9"},
	models.VPPDNat44.Name: &vppnat.DNat44{Label: "web", StMappings: []*vppnat.DNat44_StaticMapping{{ExternalIp: "192.0.2.1", ExternalPort: 80,
		LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.0.0.1", LocalPort: 8080}}}}},
}

// Every model is known by netagent's message name and by the original's,
// which is the same message in the original's package: a value sent under
// either type URL is set under its key, and GetConfig answers with
// netagent's name.
func TestEveryModelUnderBothNames(t *testing.T) {
	if len(manager.OriginalMessages) != len(models.Default.Models()) {
		t.Errorf("OriginalMessages has %d models, the registry %d", len(manager.OriginalMessages), len(models.Default.Models()))
	}
	for _, m := range models.Default.Models() {
		original, ok := manager.OriginalMessages[m.Name]
		if !ok {
			t.Errorf("model %s: no original message name", m.Name)
			continue
		}
		if want := "ligato." + m.MessageName(); original != want {
			t.Errorf("model %s: original message %s, want %s (the original's package is netagent's under ligato.)", m.Name, original, want)
		}
		if samples[m.Name] == nil {
			t.Errorf("model %s: no sample value in this test", m.Name)
		}
	}
	for _, m := range models.Default.Models() {
		for _, name := range []protoreflect.FullName{m.MessageName(), manager.OriginalMessages[m.Name]} {
			t.Run(m.Name+"/"+string(name), func(t *testing.T) {
				e := newEnv(t)
				v := samples[m.Name]
				resp, err := e.client.SetConfig(ctxOf(t), &ligatogeneric.SetConfigRequest{Updates: []*ligatogeneric.UpdateItem{set(t, m.Name, v, name)}})
				if err != nil {
					t.Fatalf("SetConfig: %v", err)
				}
				key := keyOf(t, v)
				r := resultsByKey(t, resp)[key]
				if r == nil {
					t.Fatalf("no result for %s: %v", key, resp.GetResults())
				}
				if r.GetOp() != ligatogeneric.UpdateResult_UPDATE || r.GetId().GetModel() != m.Name || m.KeyPrefix+r.GetId().GetName() != key {
					t.Errorf("result %v: want op UPDATE, id %s %q", r, m.Name, strings.TrimPrefix(key, m.KeyPrefix))
				}
				if got := e.o.SourceValue(orchestrator.SourceGRPC, key); !proto.Equal(got, v) {
					t.Errorf("gRPC source holds %v under %s, want %v", got, key, v)
				}
				it := configItems(t, e)[key]
				if it == nil {
					t.Fatalf("GetConfig has no item %s", key)
				}
				if got, want := it.GetItem().GetData().GetAny().GetTypeUrl(), manager.TypeURLPrefix+string(m.MessageName()); got != want {
					t.Errorf("GetConfig type URL %q, want %q", got, want)
				}
			})
		}
	}
}

// SetConfig applies a loopback, a route (sent under the original's message
// name) and a Linux interface; the results, GetConfig and DumpState show
// them configured.
func TestSetGetDump(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	lo, rt := loop("loop1", "10.0.0.1/24"), route("10.1.0.0/16", "10.0.0.2", "loop1")
	lx := &linuxif.Interface{Name: "dummy1", Type: linuxif.Interface_DUMMY, Enabled: true}
	resp, err := e.client.SetConfig(ctx, &ligatogeneric.SetConfigRequest{Updates: []*ligatogeneric.UpdateItem{
		set(t, "vpp.interfaces", lo, ""),
		set(t, "vpp.route", rt, "ligato.vpp.l3.Route"),
		set(t, "", lx, ""), // no id: the data says the model
	}})
	if err != nil {
		t.Fatalf("SetConfig: %v", err)
	}
	seq, err := strconv.ParseUint(resp.GetResults()[0].GetStatus().GetMessage(), 10, 64)
	if err != nil || seq == 0 {
		t.Errorf("first result %v: want the transaction's sequence number", resp.GetResults()[0])
	}
	keys := []string{keyOf(t, lo), keyOf(t, rt), keyOf(t, lx)}
	results := resultsByKey(t, resp)
	for i, key := range keys {
		r := results[key]
		if r.GetStatus().GetStatus() != "CONFIGURED" {
			t.Errorf("result of %s: %v, want CONFIGURED", key, r)
		}
		if resp.GetResults()[i+1].GetKey() != key {
			t.Errorf("result %d is %s, want %s (the request's order)", i+1, resp.GetResults()[i+1].GetKey(), key)
		}
		if e.sb.Value(key) == nil {
			t.Errorf("the SB has no %s", key)
		}
	}

	items := configItems(t, e)
	for i, v := range []proto.Message{lo, rt, lx} {
		it := items[keys[i]]
		if it.GetStatus().GetStatus() != "CONFIGURED" {
			t.Errorf("GetConfig %s: status %v, want CONFIGURED", keys[i], it.GetStatus())
		}
		got, err := anypb.UnmarshalNew(it.GetItem().GetData().GetAny(), proto.UnmarshalOptions{})
		if err != nil || !proto.Equal(got, v) {
			t.Errorf("GetConfig %s: %v (%v), want %v", keys[i], got, err, v)
		}
	}

	dump, err := e.client.DumpState(ctx, &ligatogeneric.DumpStateRequest{})
	if err != nil {
		t.Fatalf("DumpState: %v", err)
	}
	dumped := map[string]bool{}
	for _, it := range dump.GetItems() {
		m := models.Default.ModelByName(it.GetItem().GetId().GetModel())
		dumped[m.KeyPrefix+it.GetItem().GetId().GetName()] = true
	}
	for _, key := range keys {
		if !dumped[key] {
			t.Errorf("DumpState lacks %s: %v", key, dump.GetItems())
		}
	}

	// ids select items.
	sel, err := e.client.DumpState(ctx, &ligatogeneric.DumpStateRequest{Ids: []*ligatogeneric.Item_ID{{Model: "vpp.interfaces", Name: "loop1"}}})
	if err != nil || len(sel.GetItems()) != 1 || sel.GetItems()[0].GetItem().GetId().GetName() != "loop1" {
		t.Errorf("DumpState of loop1: %v, %v", sel.GetItems(), err)
	}
	got, err := e.client.GetConfig(ctx, &ligatogeneric.GetConfigRequest{Ids: []*ligatogeneric.Item_ID{{Model: "vpp.route"}}})
	if err != nil || len(got.GetItems()) != 1 || got.GetItems()[0].GetItem().GetId().GetModel() != "vpp.route" {
		t.Errorf("GetConfig of the routes: %v, %v", got.GetItems(), err)
	}
}

// A value the SB refuses fails the call with FailedPrecondition naming its
// key, as the original's; the other values are applied, and the response
// is in the status's details.
func TestSetConfigFailedValue(t *testing.T) {
	e := newEnv(t)
	good, bad := loop("loop1"), loop(failName)
	_, err := e.client.SetConfig(ctxOf(t), &ligatogeneric.SetConfigRequest{Updates: []*ligatogeneric.UpdateItem{
		set(t, "vpp.interfaces", good, ""), set(t, "vpp.interfaces", bad, ""),
	}})
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), keyOf(t, bad)) {
		t.Fatalf("SetConfig: %v, want FailedPrecondition naming %s", err, keyOf(t, bad))
	}
	if e.sb.Value(keyOf(t, good)) == nil {
		t.Errorf("the value that did not fail is not applied")
	}
	var resp *ligatogeneric.SetConfigResponse
	for _, d := range st.Details() {
		if r, ok := d.(*ligatogeneric.SetConfigResponse); ok {
			resp = r
		}
	}
	if r := resultsByKey(t, resp)[keyOf(t, bad)]; r.GetStatus().GetStatus() == "CONFIGURED" || r.GetStatus().GetMessage() == "" {
		t.Errorf("result of the failed value: %v", r)
	}
}

// overwrite_all replaces the values set through gRPC: what it leaves out
// is removed, the values of other sources stay; an item without data is
// ignored, as the original ignored it.
func TestSetConfigOverwriteAll(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	a, b := loop("loopa"), loop("loopb")
	fromEtcd := loop("loope")
	if _, err := e.o.Change(ctx, orchestrator.SourceEtcd, []orchestrator.KV{{Key: keyOf(t, fromEtcd), Value: fromEtcd}}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.SetConfig(ctx, &ligatogeneric.SetConfigRequest{Updates: []*ligatogeneric.UpdateItem{
		set(t, "vpp.interfaces", a, ""), set(t, "vpp.interfaces", b, ""),
	}}); err != nil {
		t.Fatalf("SetConfig: %v", err)
	}
	if _, err := e.client.SetConfig(ctx, &ligatogeneric.SetConfigRequest{OverwriteAll: true, Updates: []*ligatogeneric.UpdateItem{
		set(t, "vpp.interfaces", a, ""), del("vpp.interfaces", "loope"),
	}}); err != nil {
		t.Fatalf("SetConfig overwrite_all: %v", err)
	}
	if e.sb.Value(keyOf(t, b)) != nil || configItems(t, e)[keyOf(t, b)] != nil {
		t.Errorf("%s left out of overwrite_all is still there", keyOf(t, b))
	}
	for _, v := range []proto.Message{a, fromEtcd} {
		if e.sb.Value(keyOf(t, v)) == nil || configItems(t, e)[keyOf(t, v)] == nil {
			t.Errorf("%s is gone after overwrite_all", keyOf(t, v))
		}
	}

	// With no updates, overwrite_all removes every value set through gRPC.
	if _, err := e.client.SetConfig(ctx, &ligatogeneric.SetConfigRequest{OverwriteAll: true}); err != nil {
		t.Fatalf("SetConfig overwrite_all without updates: %v", err)
	}
	if e.sb.Value(keyOf(t, a)) != nil || e.sb.Value(keyOf(t, fromEtcd)) == nil {
		t.Errorf("after an empty overwrite_all: loopa %v (want gone), loope %v (want kept)", e.sb.Value(keyOf(t, a)), e.sb.Value(keyOf(t, fromEtcd)))
	}
}

// An item without data deletes the value its id names; a route's name may
// end with "/" as the original's keys of routes without a next hop did.
func TestSetConfigDelete(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	lo, rt := loop("loop1"), route("10.1.0.0/16", "", "loop1")
	if _, err := e.client.SetConfig(ctx, &ligatogeneric.SetConfigRequest{Updates: []*ligatogeneric.UpdateItem{
		set(t, "vpp.interfaces", lo, ""), set(t, "vpp.route", rt, ""),
	}}); err != nil {
		t.Fatalf("SetConfig: %v", err)
	}
	routeName := strings.TrimPrefix(keyOf(t, rt), models.VPPRoute.KeyPrefix) + "/"
	resp, err := e.client.SetConfig(ctx, &ligatogeneric.SetConfigRequest{Updates: []*ligatogeneric.UpdateItem{
		del("vpp.interfaces", "loop1"), del("vpp.route", routeName),
	}})
	if err != nil {
		t.Fatalf("SetConfig delete: %v", err)
	}
	for _, v := range []proto.Message{lo, rt} {
		key := keyOf(t, v)
		if e.sb.Value(key) != nil {
			t.Errorf("%s not deleted", key)
		}
		if r := resultsByKey(t, resp)[key]; r.GetOp() != ligatogeneric.UpdateResult_DELETE {
			t.Errorf("result of %s: %v, want op DELETE", key, r)
		}
	}
}

// Values netagent does not support are reported per item and not applied,
// the rest is: a model of the original's netagent lacks (UNIMPLEMENTED),
// a value with fields netagent's model lacks (INVALID); with
// overwrite_all, the gRPC source keeps its value of the refused item's key.
func TestSetConfigUnsupported(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	held := loop("loop2")
	if _, err := e.client.SetConfig(ctx, &ligatogeneric.SetConfigRequest{Updates: []*ligatogeneric.UpdateItem{set(t, "vpp.interfaces", held, "")}}); err != nil {
		t.Fatal(err)
	}
	abf := &ligatogeneric.UpdateItem{Item: &ligatogeneric.Item{
		Id: &ligatogeneric.Item_ID{Model: "vpp.abfs.abf", Name: "1"},
		Data: &ligatogeneric.Data{Union: &ligatogeneric.Data_Any{Any: &anypb.Any{
			TypeUrl: manager.TypeURLPrefix + "ligato.vpp.abf.ABF",
			Value:   protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1),
		}}},
	}}
	withRxModes := loop("loop2", "10.9.0.1/24")
	withRxModes.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 12, protowire.BytesType), []byte{}))
	ok := loop("loop1")
	resp, err := e.client.SetConfig(ctx, &ligatogeneric.SetConfigRequest{OverwriteAll: true, Updates: []*ligatogeneric.UpdateItem{
		abf, set(t, "vpp.interfaces", withRxModes, "ligato.vpp.interfaces.Interface"), set(t, "vpp.interfaces", ok, ""),
	}})
	if err != nil {
		t.Fatalf("SetConfig: %v", err)
	}
	rs := resp.GetResults()
	if len(rs) != 4 {
		t.Fatalf("results %v: want the sequence number and 3 items", rs)
	}
	if r := rs[1]; r.GetStatus().GetStatus() != "UNIMPLEMENTED" || r.GetId().GetName() != "1" ||
		!strings.Contains(r.GetStatus().GetMessage(), "ligato.vpp.abf.ABF") || !strings.Contains(r.GetStatus().GetMessage(), "vpp_config.abfs") {
		t.Errorf("result of the ABF: %v", r)
	}
	if r := rs[2]; r.GetStatus().GetStatus() != "INVALID" || r.GetKey() != keyOf(t, held) || !strings.Contains(r.GetStatus().GetMessage(), "rx_modes (12)") {
		t.Errorf("result of the interface with rx_modes: %v", r)
	}
	if r := rs[3]; r.GetStatus().GetStatus() != "CONFIGURED" {
		t.Errorf("result of loop1: %v", r)
	}
	if got := e.sb.Value(keyOf(t, held)); !proto.Equal(got, held) {
		t.Errorf("the SB has %v for %s, want the held value %v (not the refused one, not removed)", got, keyOf(t, held), held)
	}
}

// Bad requests fail with InvalidArgument naming the item, and nothing of
// them is applied.
func TestSetConfigBadInput(t *testing.T) {
	e := newEnv(t)
	good := set(t, "vpp.interfaces", loop("loop1"), "")
	broken := set(t, "vpp.interfaces", loop("x"), "")
	broken.Item.GetData().GetAny().Value = []byte{0x0a, 0x05, 'a'} // truncated
	badIP := set(t, "vpp.interfaces", loop("loop3", "10.0.0.300/24"), "")
	for name, tc := range map[string]struct {
		updates []*ligatogeneric.UpdateItem
		want    string
	}{
		"no updates":       {nil, "no updates"},
		"nil item":         {[]*ligatogeneric.UpdateItem{good, {}}, "updates[1]: no item"},
		"no data no id":    {[]*ligatogeneric.UpdateItem{{Item: &ligatogeneric.Item{}}}, "updates[0]: the item has neither data"},
		"data without any": {[]*ligatogeneric.UpdateItem{{Item: &ligatogeneric.Item{Data: &ligatogeneric.Data{}}}}, "updates[0]: item.data holds no"},
		"empty type URL": {[]*ligatogeneric.UpdateItem{{Item: &ligatogeneric.Item{Data: &ligatogeneric.Data{Union: &ligatogeneric.Data_Any{Any: &anypb.Any{}}}}}},
			`updates[0]: item.data: type URL "" names no message`},
		"unknown message": {[]*ligatogeneric.UpdateItem{good, set(t, "", &vppif.SubInterface{ParentName: "x"}, "")},
			`updates[1]: item.data: type URL "models.ligato.io/vpp.interfaces.SubInterface"`},
		"broken data":      {[]*ligatogeneric.UpdateItem{good, broken}, "updates[1]: item.data: not a vpp.interfaces.Interface"},
		"id of another":    {[]*ligatogeneric.UpdateItem{set(t, "vpp.route", loop("loop1"), "")}, `updates[0]: item.id.model is "vpp.route"`},
		"invalid value":    {[]*ligatogeneric.UpdateItem{good, badIP}, "updates[1]:"},
		"key twice":        {[]*ligatogeneric.UpdateItem{good, good}, "updates[1]: key config/vpp/v2/interfaces/loop1 is set by updates[0]"},
		"labels":           {[]*ligatogeneric.UpdateItem{{Item: good.Item, Labels: map[string]string{"io.example.a": "b"}}}, "updates[0]: labels"},
		"delete unknown":   {[]*ligatogeneric.UpdateItem{del("vpp.abfs.abf", "1")}, `updates[0]: item.id.model "vpp.abfs.abf"`},
		"delete bad name":  {[]*ligatogeneric.UpdateItem{del("vpp.route", "nonsense")}, `updates[0]: item.id.name "nonsense"`},
		"every bad listed": {[]*ligatogeneric.UpdateItem{{}, good, {}}, "updates[2]: no item"},
	} {
		t.Run(name, func(t *testing.T) {
			calls := e.sb.Calls()
			_, err := e.client.SetConfig(ctxOf(t), &ligatogeneric.SetConfigRequest{Updates: tc.updates})
			if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.want) {
				t.Errorf("SetConfig: %v, want InvalidArgument with %q", err, tc.want)
			}
			if got := e.sb.Calls(); !slices.Equal(got, calls) {
				t.Errorf("SB calls %v after a refused request, want none", got[len(calls):])
			}
			if v := e.o.SourceValue(orchestrator.SourceGRPC, keyOf(t, loop("loop1"))); v != nil {
				t.Errorf("the gRPC source holds loop1 after a refused request")
			}
		})
	}
}

// GetConfig and DumpState refuse what they cannot answer: labels (netagent
// keeps none), ids of unknown models. Subscribe is not implemented, as in
// the original, and says what to use.
func TestGetDumpSubscribeRefusals(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	_, err := e.client.GetConfig(ctx, &ligatogeneric.GetConfigRequest{Labels: map[string]string{"a": "b"}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "labels") {
		t.Errorf("GetConfig with labels: %v", err)
	}
	_, err = e.client.GetConfig(ctx, &ligatogeneric.GetConfigRequest{Ids: []*ligatogeneric.Item_ID{{Model: "vpp.interfaces"}, {Model: "nat"}}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), `ids[1]: model "nat"`) {
		t.Errorf("GetConfig with an unknown model: %v", err)
	}
	_, err = e.client.DumpState(ctx, &ligatogeneric.DumpStateRequest{Ids: []*ligatogeneric.Item_ID{{Model: "nat"}}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), `ids[0]: model "nat"`) {
		t.Errorf("DumpState with an unknown model: %v", err)
	}
	stream, err := e.client.Subscribe(ctx, &ligatogeneric.SubscribeRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if st := status.Convert(err); st.Code() != codes.Unimplemented || !strings.Contains(st.Message(), "WatchStatus") {
		t.Errorf("Subscribe: %v, want Unimplemented naming WatchStatus", err)
	}
}

// New refuses a registry with a model whose original message is unknown.
func TestNewNeedsOriginalNames(t *testing.T) {
	m := *models.VPPInterface
	m.Name = "vpp.other"
	reg, err := models.NewRegistry(&m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := manager.New(nil, nil, nil, manager.Options{Registry: reg}); err == nil || !strings.Contains(err.Error(), "vpp.other") {
		t.Errorf("New: %v, want an error naming vpp.other", err)
	}
}

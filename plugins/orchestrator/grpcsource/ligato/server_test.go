package ligato_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// Update, Get, Dump and Delete through the original's service reach the
// gRPC source as netagent's Configurator does.
func TestUpdateGetDumpDelete(t *testing.T) {
	e := newEnv(t, ligato.Options{})
	ctx := ctxOf(t)
	lo := loop("loop1", "10.0.0.1/24")
	rt := &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.2", OutgoingInterface: "loop1"}
	li := &linuxif.Interface{Name: "lo1", Type: linuxif.Interface_LOOPBACK, Enabled: true}
	lr := &linuxl3.Route{OutgoingInterface: "lo1", DstNetwork: "10.2.0.0/16", Scope: linuxl3.Route_LINK}
	want := doc(lo, rt, li)
	want.LinuxConfig.Routes = []*linuxl3.Route{lr}

	resp, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: want, WaitDone: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSeqNum() == 0 || len(resp.GetErrors()) > 0 {
		t.Fatalf("update: %v, want a transaction without errors", resp)
	}
	for _, v := range []proto.Message{lo, rt, li, lr} {
		if got := e.sb.Value(keyOf(t, v)); !proto.Equal(got, v) {
			t.Errorf("SB value of %s: %v, want %v", keyOf(t, v), got, v)
		}
	}

	get, err := e.client.Get(ctx, &ligatocfg.GetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(get.GetConfig(), want) {
		t.Errorf("Get:\n%v\nwant\n%v", get.GetConfig(), want)
	}
	dump, err := e.client.Dump(ctx, &ligatocfg.DumpRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(dump.GetDump(), want) {
		t.Errorf("Dump:\n%v\nwant\n%v", dump.GetDump(), want)
	}

	// Only key fields matter to Delete.
	del, err := e.client.Delete(ctx, &ligatocfg.DeleteRequest{Delete: doc(&vppif.Interface{Name: "loop1"}, rt), WaitDone: true})
	if err != nil {
		t.Fatal(err)
	}
	if del.GetSeqNum() == 0 || len(del.GetErrors()) > 0 {
		t.Fatalf("delete: %v", del)
	}
	for _, v := range []proto.Message{lo, rt} {
		if got := e.sb.Value(keyOf(t, v)); got != nil {
			t.Errorf("%s still in the SB: %v", keyOf(t, v), got)
		}
	}
	get, err = e.client.Get(ctx, &ligatocfg.GetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(get.GetConfig().GetVppConfig().GetInterfaces())+len(get.GetConfig().GetVppConfig().GetRoutes()) > 0 ||
		len(get.GetConfig().GetLinuxConfig().GetInterfaces()) != 1 {
		t.Errorf("Get after the delete: %v, want the Linux values only", get.GetConfig())
	}
}

// An original's client sends models netagent lacks: they come back as
// per-key errors, and the rest of the request is applied.
func TestUnsupportedModels(t *testing.T) {
	e := newEnv(t, ligato.Options{})
	ctx := ctxOf(t)
	req := doc(loop("loop1"))
	withUnknown(req.VppConfig, slices.Concat(
		field(21, abfIndex(1)), field(21, abfIndex(2)), // abfs
		field(42, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)), // proxy_arp
		field(999, nil), // a field not even the original has
	))
	netalloc := slices.Concat(field(10, named("net1")), field(10, named("net2")))
	withUnknown(req, field(3, netalloc)) // netalloc_config with two ip_addresses

	resp, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: req, WaitDone: true})
	if err != nil {
		t.Fatalf("update with unsupported models: %v, want per-key errors", err)
	}
	want := map[string]string{
		"vpp_config.abfs[0]":              "ligato.vpp.abf.ABF",
		"vpp_config.abfs[1]":              "ligato.vpp.abf.ABF",
		"vpp_config.proxy_arp":            "ligato.vpp.l3.ProxyARP",
		"vpp_config.field 999":            "field 999 of ligato.vpp.ConfigData",
		"netalloc_config.ip_addresses[0]": "ligato.netalloc.IPAllocation",
		"netalloc_config.ip_addresses[1]": "ligato.netalloc.IPAllocation",
	}
	var got []string
	for _, ke := range resp.GetErrors() {
		got = append(got, ke.GetKey())
		w, ok := want[ke.GetKey()]
		if !ok {
			t.Errorf("unexpected error %v", ke)
			continue
		}
		if !strings.Contains(ke.GetError(), w) || !strings.Contains(ke.GetError(), "not applied") || ke.GetOperation() != "VALIDATE" {
			t.Errorf("error of %s: %v, want a VALIDATE error naming %q", ke.GetKey(), ke, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("errors of %v, want %d", got, len(want))
	}
	if e.sb.Value(keyOf(t, loop("loop1"))) == nil {
		t.Error("loop1 not applied beside the unsupported models")
	}

	// Delete reports them too, and deletes the rest.
	del, err := e.client.Delete(ctx, &ligatocfg.DeleteRequest{Delete: withUnknown(doc(loop("loop1")), field(3, netalloc)), WaitDone: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(del.GetErrors()) != 2 || del.GetErrors()[0].GetOperation() != "DELETE" || del.GetErrors()[0].GetKey() != "netalloc_config.ip_addresses[0]" {
		t.Errorf("delete errors: %v, want the two netalloc items", del.GetErrors())
	}
	if e.sb.Value(keyOf(t, loop("loop1"))) != nil {
		t.Error("loop1 not deleted beside the unsupported models")
	}
}

// A value of a supported model with fields of the original's that
// netagent lacks is not applied (it would be applied without them), and a
// full resync keeps the key's previous value.
func TestUnsupportedFields(t *testing.T) {
	e := newEnv(t, ligato.Options{})
	ctx := ctxOf(t)
	loop1, loop2 := loop("loop1"), loop("loop2")
	if _, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(loop1), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	key1 := keyOf(t, loop1)

	// loop1 again, with rx_modes (12) and a sub-interface's tag1 (5).
	changed := withUnknown(loop("loop1", "10.0.0.1/24"), field(12, nil))
	sub := &vppif.Interface{Name: "loop1.10", Type: vppif.Interface_SUB_INTERFACE, Enabled: true,
		Link: &vppif.Interface_Sub{Sub: withUnknown(&vppif.SubInterface{ParentName: "loop1", SubId: 10},
			protowire.AppendVarint(protowire.AppendTag(nil, 5, protowire.VarintType), 10))}}
	resp, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(changed, loop2, sub), FullResync: true, WaitDone: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetErrors()) != 2 {
		t.Fatalf("errors %v, want loop1's and loop1.10's", resp.GetErrors())
	}
	first, second := resp.GetErrors()[0], resp.GetErrors()[1]
	if first.GetKey() != key1 || !strings.Contains(first.GetError(), "vpp_config.interfaces[0]") ||
		!strings.Contains(first.GetError(), "rx_modes (12)") || first.GetState() != api.ValueStateConfigured {
		t.Errorf("loop1's error: %v, want its key, place, the field and its state (still CONFIGURED)", first)
	}
	if second.GetKey() != keyOf(t, sub) || !strings.Contains(second.GetError(), "sub.tag1 (5)") {
		t.Errorf("loop1.10's error: %v, want the field by its path", second)
	}
	if got := e.sb.Value(key1); !proto.Equal(got, loop1) {
		t.Errorf("loop1 in the SB: %v, want it as before (the full resync keeps it)", got)
	}
	if e.sb.Value(keyOf(t, loop2)) == nil || e.sb.Value(keyOf(t, sub)) != nil {
		t.Errorf("loop2 %v (want applied), loop1.10 %v (want not)", e.sb.Value(keyOf(t, loop2)), e.sb.Value(keyOf(t, sub)))
	}

	// Without a full resync, the refused value leaves its key alone too;
	// in a Delete the unknown fields do not matter.
	if _, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(changed), WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	if got := e.sb.Value(key1); !proto.Equal(got, loop1) {
		t.Errorf("loop1 in the SB: %v, want it as before", got)
	}
	del, err := e.client.Delete(ctx, &ligatocfg.DeleteRequest{Delete: doc(changed), WaitDone: true})
	if err != nil || len(del.GetErrors()) > 0 {
		t.Fatalf("delete: %v %v", del, err)
	}
	if e.sb.Value(key1) != nil {
		t.Error("loop1 not deleted")
	}
}

// Bad requests get a clear error and change nothing.
func TestBadRequests(t *testing.T) {
	e := newEnv(t, ligato.Options{})
	ctx := ctxOf(t)
	check := func(what string, err error, code codes.Code, parts ...string) {
		t.Helper()
		if status.Code(err) != code {
			t.Errorf("%s: %v, want %s", what, err, code)
			return
		}
		for _, p := range parts {
			if !strings.Contains(status.Convert(err).Message(), p) {
				t.Errorf("%s: %q does not name %q", what, status.Convert(err).Message(), p)
			}
		}
	}
	_, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{WaitDone: true})
	check("update without a configuration", err, codes.InvalidArgument, "update", "no configuration")
	_, err = e.client.Delete(ctx, &ligatocfg.DeleteRequest{WaitDone: true})
	check("delete without a configuration", err, codes.InvalidArgument, "delete", "no configuration")

	// An invalid value after a refused one: the error names its place in
	// the request as sent, and nothing is applied.
	refused := withUnknown(loop("loop1"), field(14, nil))
	_, err = e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(refused, loop("loop2", "10.0.0.300/24")), WaitDone: true})
	check("invalid value beside a refused one", err, codes.InvalidArgument, "vpp_config.interfaces[1]", "10.0.0.300/24")
	_, err = e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(loop("loop2", "10.0.0.300/24")), WaitDone: true})
	check("invalid value", err, codes.InvalidArgument, "vpp_config.interfaces[0]", "10.0.0.300/24")
	_, err = e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: doc(loop("loop2"), loop("loop2")), WaitDone: true})
	check("a key twice", err, codes.InvalidArgument, "vpp_config.interfaces[1]", "already")

	// A NotifyRequest field netagent does not know (it might narrow what
	// the client wants, as the filters do): refused rather than ignored.
	unknown := withUnknown(&ligatocfg.NotifyRequest{}, field(3, nil))
	stream, err := e.client.Notify(ctx, unknown)
	if err == nil {
		_, err = stream.Recv()
	}
	check("notify with an unknown field", err, codes.InvalidArgument, "field 3", "not known")

	// An empty document with wait_done: nothing to do, nothing to wait for.
	resp, err := e.client.Update(ctx, &ligatocfg.UpdateRequest{Update: &ligatocfg.Config{}, WaitDone: true})
	if err != nil || len(resp.GetErrors()) > 0 {
		t.Errorf("empty update: %v %v, want no error", resp, err)
	}
	if calls := e.sb.Calls(); len(calls) > 0 {
		t.Errorf("descriptors called: %v", calls)
	}
	get, err := e.client.Get(ctx, &ligatocfg.GetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(get.GetConfig().GetVppConfig().GetInterfaces()); n > 0 {
		t.Errorf("Get: %v, want nothing", get.GetConfig())
	}
}

// What netagent adds to the original's responses are fields the
// original's messages lack: a client built on them reads an empty message.
func TestAddedFieldsAreUnknownToTheOriginal(t *testing.T) {
	resp := &ligatocfg.UpdateResponse{SeqNum: 7, Errors: []*configuratorpb.KeyError{{Key: "k", Error: "e"}}}
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatal(protowire.ParseError(n))
		}
		if num < 100 {
			t.Errorf("field %d of UpdateResponse: the original's clients would read it", num)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		b = b[n+m:]
	}
}

// The service is registered under the original's name, with the
// original's methods.
func TestRegister(t *testing.T) {
	e := newEnv(t, ligato.Options{})
	g := grpc.NewServer()
	e.srv.Register(g)
	info, ok := g.GetServiceInfo()["ligato.configurator.ConfiguratorService"]
	if !ok {
		t.Fatalf("services: %v", g.GetServiceInfo())
	}
	var methods []string
	for _, m := range info.Methods {
		methods = append(methods, m.Name)
	}
	slices.Sort(methods)
	if want := []string{"Delete", "Dump", "Get", "Notify", "Update"}; !slices.Equal(methods, want) {
		t.Errorf("methods %v, want %v", methods, want)
	}
	g.Stop()
}

// abfIndex is the original's ABF value with that index (field 1).
func abfIndex(i uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), i)
}

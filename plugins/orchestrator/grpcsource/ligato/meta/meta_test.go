package meta_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"text/template"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato/meta"
	ligatogeneric "github.com/netagent-io/netagent/proto/ligato/generic"
	ligatovpp "github.com/netagent-io/netagent/proto/ligato/vpp"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// serve serves the MetaService of reg over loopback until the test ends and
// returns a client of it.
func serve(t *testing.T, reg *models.Registry) ligatogeneric.MetaServiceClient {
	t.Helper()
	srv, err := meta.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	srv.Register(g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		g.Stop()
		<-served
	})
	return ligatogeneric.NewMetaServiceClient(conn)
}

// want is what the original reports for the models netagent has (its
// specs and name templates), with netagent's messages and files.
var want = []struct {
	module, typ, protoName, protoFile, goType, pkgPath string
}{
	{"vpp", "interfaces", "vpp.interfaces.Interface", "vpp/interfaces/interface.proto", "*vppif.Interface", "github.com/netagent-io/netagent/proto/vpp/interfaces"},
	{"vpp.l2", "bridge-domain", "vpp.l2.BridgeDomain", "vpp/l2/bridge_domain.proto", "*vppl2.BridgeDomain", "github.com/netagent-io/netagent/proto/vpp/l2"},
	{"vpp", "route", "vpp.l3.Route", "vpp/l3/route.proto", "*vppl3.Route", "github.com/netagent-io/netagent/proto/vpp/l3"},
	{"vpp", "arp", "vpp.l3.ARPEntry", "vpp/l3/arp.proto", "*vppl3.ARPEntry", "github.com/netagent-io/netagent/proto/vpp/l3"},
	{"linux.interfaces", "interface", "linux.interfaces.Interface", "linux/interfaces/interface.proto", "*linuxif.Interface", "github.com/netagent-io/netagent/proto/linux/interfaces"},
	{"linux.l3", "route", "linux.l3.Route", "linux/l3/route.proto", "*linuxl3.Route", "github.com/netagent-io/netagent/proto/linux/l3"},
	{"linux.l3", "arp", "linux.l3.ARPEntry", "linux/l3/arp.proto", "*linuxl3.ARPEntry", "github.com/netagent-io/netagent/proto/linux/l3"},
	{"vpp.acls", "acl", "vpp.acl.ACL", "vpp/acl/acl.proto", "*vppacl.ACL", "github.com/netagent-io/netagent/proto/vpp/acl"},
	{"vpp", "vrf-table", "vpp.l3.VrfTable", "vpp/l3/vrf.proto", "*vppl3.VrfTable", "github.com/netagent-io/netagent/proto/vpp/l3"},
	{"vpp.l2", "xconnect", "vpp.l2.XConnectPair", "vpp/l2/xconnect.proto", "*vppl2.XConnectPair", "github.com/netagent-io/netagent/proto/vpp/l2"},
	{"vpp.l2", "fib", "vpp.l2.FIBEntry", "vpp/l2/fib.proto", "*vppl2.FIBEntry", "github.com/netagent-io/netagent/proto/vpp/l2"},
	{"vpp.nat", "nat44-global", "vpp.nat.Nat44Global", "vpp/nat/nat.proto", "*vppnat.Nat44Global", "github.com/netagent-io/netagent/proto/vpp/nat"},
	{"vpp.nat", "nat44-interface", "vpp.nat.Nat44Interface", "vpp/nat/nat.proto", "*vppnat.Nat44Interface", "github.com/netagent-io/netagent/proto/vpp/nat"},
	{"vpp.nat", "nat44-pool", "vpp.nat.Nat44AddressPool", "vpp/nat/nat.proto", "*vppnat.Nat44AddressPool", "github.com/netagent-io/netagent/proto/vpp/nat"},
	{"vpp.nat", "dnat44", "vpp.nat.DNat44", "vpp/nat/nat.proto", "*vppnat.DNat44", "github.com/netagent-io/netagent/proto/vpp/nat"},
}

func option(d *ligatogeneric.ModelDetail, key string) (string, bool) {
	for _, o := range d.GetOptions() {
		if o.GetKey() == key && len(o.GetValues()) == 1 {
			return o.GetValues()[0], true
		}
	}
	return "", false
}

// KnownModels lists every model of netagent, once, with the original's spec of the
// same model, netagent's message and file, and the options the original's
// clients read; the key prefix the original's clients compute from the
// spec is netagent's.
func TestKnownModels(t *testing.T) {
	c := serve(t, models.Default)
	resp, err := c.KnownModels(context.Background(), &ligatogeneric.KnownModelsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.GetKnownModels()
	if len(got) != len(want) || len(models.Default.Models()) != len(want) {
		t.Fatalf("%d known models, want %d (registry: %d)", len(got), len(want), len(models.Default.Models()))
	}
	byName := map[string]*ligatogeneric.ModelDetail{}
	for _, d := range got {
		byName[d.GetSpec().GetModule()+"."+d.GetSpec().GetType()] = d
	}
	for i, w := range want {
		d := byName[w.module+"."+w.typ]
		if d == nil {
			t.Errorf("no model %s.%s", w.module, w.typ)
			continue
		}
		spec := d.GetSpec()
		if spec.GetModule() != w.module || spec.GetType() != w.typ || spec.GetVersion() != "v2" || spec.GetClass() != "config" {
			t.Errorf("model %d spec %v, want module %q type %q version v2 class config", i, spec, w.module, w.typ)
		}
		m := models.Default.ModelByName(spec.GetModule() + "." + spec.GetType())
		if m == nil {
			t.Errorf("model %d: no model named %s.%s", i, spec.GetModule(), spec.GetType())
			continue
		}
		// The original's clients: "config/" + module with "/" + version +
		// type, and a "/" when the model has a name template.
		prefix := "config/" + strings.ReplaceAll(spec.GetModule(), ".", "/") + "/" + spec.GetVersion() + "/" + spec.GetType()
		if tmpl, _ := option(d, "nameTemplate"); tmpl != "" {
			prefix += "/"
		}
		if prefix != m.KeyPrefix {
			t.Errorf("model %s: key prefix from the spec %q, netagent's %q", m.Name, prefix, m.KeyPrefix)
		}
		if d.GetProtoName() != w.protoName {
			t.Errorf("model %s proto_name %q, want %q", m.Name, d.GetProtoName(), w.protoName)
		}
		for key, value := range map[string]string{"protoFile": w.protoFile, "goType": w.goType, "pkgPath": w.pkgPath} {
			if v, ok := option(d, key); v != value {
				t.Errorf("model %s option %s = %q (%v), want %q", m.Name, key, v, ok, value)
			}
		}
		if _, ok := option(d, "nameTemplate"); !ok {
			t.Errorf("model %s: no nameTemplate", m.Name)
		}
	}
}

func TestKnownModelsClass(t *testing.T) {
	c := serve(t, models.Default)
	for class, n := range map[string]int{"config": len(want), "metrics": 0, "no-such-class": 0} {
		resp, err := c.KnownModels(context.Background(), &ligatogeneric.KnownModelsRequest{Class: class})
		if err != nil {
			t.Fatalf("class %q: %v", class, err)
		}
		if got := len(resp.GetKnownModels()); got != n {
			t.Errorf("class %q: %d models, want %d", class, got, n)
		}
	}
}

// The name template of each model, executed as the original does on
// netagent's message, yields the value's key in netagent.
func TestNameTemplatesMakeNetagentsKeys(t *testing.T) {
	c := serve(t, models.Default)
	resp, err := c.KnownModels(context.Background(), &ligatogeneric.KnownModelsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	values := map[string][]proto.Message{
		"vpp.interfaces":       {&vppif.Interface{Name: "loop1"}},
		"vpp.l2.bridge-domain": {&vppl2.BridgeDomain{Name: "bd1"}},
		"vpp.route": {
			&vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "loop1", VrfId: 2},
			&vppl3.Route{DstNetwork: "10.1.0.0/16", OutgoingInterface: "loop1"},
			&vppl3.Route{DstNetwork: "2001:db8::/32", NextHopAddr: "2001:db8:1::1"},
		},
		"vpp.arp":                    {&vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:01"}},
		"linux.interfaces.interface": {&linuxif.Interface{Name: "veth1"}},
		"linux.l3.route":             {&linuxl3.Route{DstNetwork: "10.2.0.0/24", OutgoingInterface: "veth1"}},
		"linux.l3.arp":               {&linuxl3.ARPEntry{Interface: "veth1", IpAddress: "10.2.0.5", HwAddress: "02:00:00:00:00:02"}},
		"vpp.acls.acl":               {&vppacl.ACL{Name: "acl1", Rules: []*vppacl.ACL_Rule{{MacipRule: &vppacl.ACL_Rule_MacIpRule{SourceAddress: "10.0.0.1"}}}}},
		"vpp.vrf-table":              {&vppl3.VrfTable{Id: 3}, &vppl3.VrfTable{Id: 3, Protocol: vppl3.VrfTable_IPV6, Label: "blue"}},
		"vpp.l2.xconnect":            {&vppl2.XConnectPair{ReceiveInterface: "memif1/1", TransmitInterface: "loop1"}},
		"vpp.l2.fib":                 {&vppl2.FIBEntry{BridgeDomain: "bd1", PhysAddress: "02:00:00:00:00:0a", OutgoingInterface: "loop1"}},
		"vpp.nat.nat44-global":       {&vppnat.Nat44Global{Forwarding: true}},
		"vpp.nat.nat44-interface":    {&vppnat.Nat44Interface{Name: "memif1/1", NatInside: true}},
		"vpp.nat.nat44-pool": {
			&vppnat.Nat44AddressPool{Name: "pool1", FirstIp: "10.0.0.1"},
			&vppnat.Nat44AddressPool{FirstIp: "10.0.0.1", VrfId: 3},
			&vppnat.Nat44AddressPool{FirstIp: "10.0.0.1", LastIp: "10.0.0.1"},
			&vppnat.Nat44AddressPool{FirstIp: "10.0.0.1", LastIp: "10.0.0.9", VrfId: ^uint32(0), TwiceNat: true},
		},
		"vpp.nat.dnat44": {&vppnat.DNat44{Label: "tenant/web"}},
	}
	// ipnet is the original's template function, written here from its
	// documented result: the network's address and prefix length.
	funcs := template.FuncMap{"ipnet": func(s string) map[string]any {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return map[string]any{"IP": "<invalid>", "MaskSize": 0}
		}
		return map[string]any{"IP": p.Masked().Addr().String(), "MaskSize": p.Bits()}
	}}
	for _, d := range resp.GetKnownModels() {
		name := d.GetSpec().GetModule() + "." + d.GetSpec().GetType()
		m := models.Default.ModelByName(name)
		text, _ := option(d, "nameTemplate")
		tmpl, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
		if err != nil {
			t.Errorf("model %s: template %q: %v", name, text, err)
			continue
		}
		if len(values[name]) == 0 {
			t.Errorf("model %s: no test value", name)
		}
		for _, v := range values[name] {
			var b strings.Builder
			if err := tmpl.Execute(&b, v); err != nil {
				t.Errorf("model %s: %v", name, err)
				continue
			}
			key, err := m.Key(v)
			if err != nil {
				t.Fatal(err)
			}
			got := m.KeyPrefix + strings.TrimSuffix(b.String(), "/")
			if got != key {
				t.Errorf("model %s: the name template makes %q, netagent's key is %q", name, got, key)
			}
		}
	}
}

// ProtoFileDescriptor gives, for each model's file, descriptors that build
// on their own and declare the message KnownModels names, the very message
// of the original's container (ligato.vpp.ConfigData for VPP models).
func TestProtoFileDescriptor(t *testing.T) {
	c := serve(t, models.Default)
	ctx := context.Background()
	known, err := c.KnownModels(ctx, &ligatogeneric.KnownModelsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range known.GetKnownModels() {
		file, _ := option(d, "protoFile")
		resp, err := c.ProtoFileDescriptor(ctx, &ligatogeneric.ProtoFileDescriptorRequest{FullProtoFileName: file})
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		// The original's client refuses a response without the set, even
		// for a file without imports.
		if resp.GetFileDescriptor() == nil || resp.GetFileImportDescriptors() == nil {
			t.Errorf("%s: file descriptor %v, imports %v: want both", file, resp.GetFileDescriptor() != nil, resp.GetFileImportDescriptors() != nil)
			continue
		}
		if resp.GetFileDescriptor().GetName() != file {
			t.Errorf("descriptor of %s named %q", file, resp.GetFileDescriptor().GetName())
		}
		set := &descriptorpb.FileDescriptorSet{File: append(resp.GetFileImportDescriptors().GetFile(), resp.GetFileDescriptor())}
		files, err := protodesc.NewFiles(set)
		if err != nil {
			t.Errorf("%s: the descriptors do not build: %v", file, err)
			continue
		}
		desc, err := files.FindDescriptorByName(protoreflect.FullName(d.GetProtoName()))
		if err != nil {
			t.Errorf("%s: no %s: %v", file, d.GetProtoName(), err)
			continue
		}
		got, ok := desc.(protoreflect.MessageDescriptor)
		if !ok || got.ParentFile().Path() != file {
			t.Errorf("%s: %s is not a message of the file", file, d.GetProtoName())
			continue
		}
		// The same fields as the message the agent decodes.
		local := models.Default.ModelByName(d.GetSpec().GetModule() + "." + d.GetSpec().GetType()).New().ProtoReflect().Descriptor()
		if a, b := protodesc.ToDescriptorProto(got), protodesc.ToDescriptorProto(local); !proto.Equal(a, b) {
			t.Errorf("%s: served message differs from the agent's:\n%v\n%v", d.GetProtoName(), a, b)
		}
	}
	// The container's field of VPP interfaces has the message KnownModels names.
	field := (&ligatovpp.ConfigData{}).ProtoReflect().Descriptor().Fields().ByName("interfaces")
	if got := string(field.Message().FullName()); got != want[0].protoName {
		t.Errorf("ligato.vpp.ConfigData.interfaces is of %s, KnownModels names %s", got, want[0].protoName)
	}
}

// A Linux interface's file imports the namespace file: it is in the set,
// once, before its dependents.
func TestProtoFileDescriptorImports(t *testing.T) {
	c := serve(t, models.Default)
	resp, err := c.ProtoFileDescriptor(context.Background(), &ligatogeneric.ProtoFileDescriptorRequest{FullProtoFileName: "linux/interfaces/interface.proto"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range resp.GetFileImportDescriptors().GetFile() {
		names = append(names, f.GetName())
	}
	if len(names) != 1 || names[0] != "linux/namespace/namespace.proto" {
		t.Errorf("imports %v, want [linux/namespace/namespace.proto]", names)
	}
}

func TestProtoFileDescriptorUnknownFile(t *testing.T) {
	c := serve(t, models.Default)
	for _, file := range []string{"", "ligato/vpp/interfaces/interface.proto", "ligato/configurator/configurator.proto", "google/protobuf/descriptor.proto"} {
		_, err := c.ProtoFileDescriptor(context.Background(), &ligatogeneric.ProtoFileDescriptorRequest{FullProtoFileName: file})
		if status.Code(err) != codes.NotFound || !strings.Contains(status.Convert(err).Message(), `"`+file+`"`) {
			t.Errorf("%q: %v, want NotFound naming the file", file, err)
		}
	}
}

package main

import (
	"context"
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
	ligatogeneric "github.com/netagent-io/netagent/proto/ligato/generic"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// A client without compiled-in models, as the original's agentctl: it asks
// the agent's ligato.generic.MetaService which models it knows and for
// their .proto files, builds the original's configuration container from
// them (dynamicpb, with the original's field numbers, names from the
// models' options), loads a configuration in the original's JSON into it
// and sends it with ConfiguratorService.Update: VPP has the loopback and
// the route when Update returns.
func TestE2EVPPMetaServiceDynamicClient(t *testing.T) {
	v := startE2EVPP(t)
	cfg := testConfig(t)
	cfg.VPP.Disabled, cfg.VPP.Socket = false, v.socket
	a := startAgent(t, cfg, true)
	conn := a.grpcConn()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	// The models and their files, as the original's generic client gets them.
	metaClient := ligatogeneric.NewMetaServiceClient(conn)
	known, err := metaClient.KnownModels(ctx, &ligatogeneric.KnownModelsRequest{Class: "config"})
	if err != nil {
		t.Fatalf("KnownModels: %v", err)
	}
	files := map[string]*descriptorpb.FileDescriptorProto{}
	protoNames := map[string]string{} // by model name
	for _, d := range known.GetKnownModels() {
		protoNames[d.GetSpec().GetModule()+"."+d.GetSpec().GetType()] = d.GetProtoName()
		var file string
		for _, o := range d.GetOptions() {
			if o.GetKey() == "protoFile" && len(o.GetValues()) == 1 {
				file = o.GetValues()[0]
			}
		}
		resp, err := metaClient.ProtoFileDescriptor(ctx, &ligatogeneric.ProtoFileDescriptorRequest{FullProtoFileName: file})
		if err != nil {
			t.Fatalf("ProtoFileDescriptor(%q) of %s: %v", file, d.GetProtoName(), err)
		}
		files[resp.GetFileDescriptor().GetName()] = resp.GetFileDescriptor()
		for _, f := range resp.GetFileImportDescriptors().GetFile() {
			files[f.GetName()] = f
		}
	}
	set := &descriptorpb.FileDescriptorSet{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		set.File = append(set.File, files[name])
	}
	reg, err := protodesc.NewFiles(set)
	if err != nil {
		t.Fatalf("the served descriptors do not build: %v", err)
	}

	// The original's ligato.configurator.UpdateRequest and its containers,
	// from the original's published numbers; the model messages from the
	// agent's descriptors.
	repeated := func(name string, number int32, model string) *descriptorpb.FieldDescriptorProto {
		typeName, ok := protoNames[model]
		if !ok {
			t.Fatalf("KnownModels has no model %s", model)
		}
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(number),
			Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
			TypeName: proto.String("." + typeName)}
	}
	single := func(name string, number int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(number),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: typ.Enum()}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	client := &descriptorpb.FileDescriptorProto{
		Name: proto.String("dynamicclient/config.proto"), Package: proto.String("dynamicclient"), Syntax: proto.String("proto3"),
		Dependency: slices.Collect(func(yield func(string) bool) {
			for _, f := range set.File {
				if !yield(f.GetName()) {
					return
				}
			}
		}),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("VppConfigData"), Field: []*descriptorpb.FieldDescriptorProto{
				repeated("interfaces", 10, "vpp.interfaces"),
				repeated("bridge_domains", 30, "vpp.l2.bridge-domain"),
				repeated("routes", 40, "vpp.route"),
				repeated("arps", 41, "vpp.arp"),
			}},
			{Name: proto.String("LinuxConfigData"), Field: []*descriptorpb.FieldDescriptorProto{
				repeated("interfaces", 10, "linux.interfaces.interface"),
				repeated("arp_entries", 20, "linux.l3.arp"),
				repeated("routes", 21, "linux.l3.route"),
			}},
			{Name: proto.String("Config"), Field: []*descriptorpb.FieldDescriptorProto{
				single("vpp_config", 1, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".dynamicclient.VppConfigData"),
				single("linux_config", 2, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".dynamicclient.LinuxConfigData"),
			}},
			{Name: proto.String("UpdateRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				single("update", 1, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".dynamicclient.Config"),
				single("full_resync", 2, descriptorpb.FieldDescriptorProto_TYPE_BOOL, ""),
				single("wait_done", 3, descriptorpb.FieldDescriptorProto_TYPE_BOOL, ""),
			}},
			{Name: proto.String("UpdateResponse")},
		},
	}
	clientFile, err := protodesc.NewFile(client, reg)
	if err != nil {
		t.Fatalf("the client's file does not build on the served descriptors: %v", err)
	}
	msg := func(name protoreflect.Name) *dynamicpb.Message {
		return dynamicpb.NewMessage(clientFile.Messages().ByName(name))
	}

	// A configuration in the original's JSON (what its agentctl reads from
	// YAML): field and enum names of the served descriptors.
	req := msg("UpdateRequest")
	resolver := &protoregistry.Types{}
	doc := `{"update": {"vppConfig": {
	  "interfaces": [{"name": "metaloop1", "type": "SOFTWARE_LOOPBACK", "enabled": true, "ipAddresses": ["10.128.0.1/24"]}],
	  "routes": [{"dstNetwork": "10.129.0.0/16", "nextHopAddr": "10.128.0.2", "outgoingInterface": "metaloop1"}]}},
	  "waitDone": true}`
	if err := (protojson.UnmarshalOptions{Resolver: resolver}).Unmarshal([]byte(doc), req); err != nil {
		t.Fatalf("the original's JSON does not load into the dynamic request: %v", err)
	}
	if err := conn.Invoke(ctx, ligatocfg.ConfiguratorService_Update_FullMethodName, req, msg("UpdateResponse")); err != nil {
		t.Fatalf("Update: %v", err)
	}

	// VPP has them now (Dump: what the southbound has).
	dump, err := ligatocfg.NewConfiguratorServiceClient(conn).Dump(ctx, &ligatocfg.DumpRequest{})
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	loop := slices.IndexFunc(dump.GetDump().GetVppConfig().GetInterfaces(), func(i *vppif.Interface) bool { return i.GetName() == "metaloop1" })
	if loop < 0 {
		t.Fatalf("VPP has no metaloop1: %v", dump.GetDump().GetVppConfig().GetInterfaces())
	}
	if i := dump.GetDump().GetVppConfig().GetInterfaces()[loop]; i.GetType() != vppif.Interface_SOFTWARE_LOOPBACK || !i.GetEnabled() || !slices.Contains(i.GetIpAddresses(), "10.128.0.1/24") {
		t.Errorf("metaloop1 in VPP: %v", i)
	}
	if !slices.ContainsFunc(dump.GetDump().GetVppConfig().GetRoutes(), func(r *vppl3.Route) bool {
		return r.GetDstNetwork() == "10.129.0.0/16" && r.GetNextHopAddr() == "10.128.0.2" && r.GetOutgoingInterface() == "metaloop1"
	}) {
		t.Errorf("VPP has no route to 10.129.0.0/16 via 10.128.0.2 on metaloop1: %v", dump.GetDump().GetVppConfig().GetRoutes())
	}
}

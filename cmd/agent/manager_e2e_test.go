package main

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"

	ligatogeneric "github.com/netagent-io/netagent/proto/ligato/generic"
)

// dynamicModel is a model as a client without compiled-in models knows it
// from MetaService: its detail and its message type built from the served
// descriptors.
type dynamicModel struct {
	detail *ligatogeneric.ModelDetail
	typ    protoreflect.MessageType
}

func (m dynamicModel) name() string {
	return m.detail.GetSpec().GetModule() + "." + m.detail.GetSpec().GetType()
}

func (m dynamicModel) option(key string) string {
	for _, o := range m.detail.GetOptions() {
		if o.GetKey() == key && len(o.GetValues()) == 1 {
			return o.GetValues()[0]
		}
	}
	return ""
}

// instanceName computes an item's name as the original's client does for
// a model it knows remotely: the model's nameTemplate executed on the
// value's JSON (every field present), the template's Go field names
// replaced by the JSON ones, with the function ipnet.
func (m dynamicModel) instanceName(t *testing.T, v proto.Message) string {
	t.Helper()
	tmpl := m.option("nameTemplate")
	fields := v.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		goName := goCamel(string(fd.Name()))
		tmpl = regexp.MustCompile(`\.`+goName+`\b`).ReplaceAllString(tmpl, "."+fd.JSONName())
	}
	b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatal(err)
	}
	type ipNet struct {
		IP       string
		MaskSize int
	}
	funcs := template.FuncMap{"ipnet": func(s string) *ipNet {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil
		}
		size, _ := n.Mask.Size()
		return &ipNet{IP: n.IP.String(), MaskSize: size}
	}}
	parsed, err := template.New(m.name()).Funcs(funcs).Parse(tmpl)
	if err != nil {
		t.Fatalf("model %s: nameTemplate %q: %v", m.name(), tmpl, err)
	}
	var out strings.Builder
	if err := parsed.Execute(&out, data); err != nil {
		t.Fatalf("model %s: nameTemplate on %s: %v", m.name(), b, err)
	}
	return out.String()
}

// goCamel is the Go name of a field: "vrf_id" is VrfId.
func goCamel(field string) string {
	var out strings.Builder
	for part := range strings.SplitSeq(field, "_") {
		if part != "" {
			out.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return out.String()
}

// knownModels asks MetaService for the models and their files, as the
// original's generic client does, and builds their message types.
func knownModels(ctx context.Context, t *testing.T, meta ligatogeneric.MetaServiceClient) (map[protoreflect.FullName]dynamicModel, *protoregistryFiles) {
	t.Helper()
	known, err := meta.KnownModels(ctx, &ligatogeneric.KnownModelsRequest{Class: "config"})
	if err != nil {
		t.Fatalf("KnownModels: %v", err)
	}
	files := map[string]*descriptorpb.FileDescriptorProto{}
	for _, d := range known.GetKnownModels() {
		file := dynamicModel{detail: d}.option("protoFile")
		resp, err := meta.ProtoFileDescriptor(ctx, &ligatogeneric.ProtoFileDescriptorRequest{FullProtoFileName: file})
		if err != nil {
			t.Fatalf("ProtoFileDescriptor(%q): %v", file, err)
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
	out := map[protoreflect.FullName]dynamicModel{}
	for _, d := range known.GetKnownModels() {
		desc, err := reg.FindDescriptorByName(protoreflect.FullName(d.GetProtoName()))
		if err != nil {
			t.Fatalf("model %s: message %s not in the served files: %v", d.GetSpec(), d.GetProtoName(), err)
		}
		out[protoreflect.FullName(d.GetProtoName())] = dynamicModel{detail: d, typ: dynamicpb.NewMessageType(desc.(protoreflect.MessageDescriptor))}
	}
	return out, &protoregistryFiles{models: out}
}

// protoregistryFiles resolves the type URLs of the agent's items to the
// dynamic types (anypb.UnmarshalNew's resolver).
type protoregistryFiles struct {
	models map[protoreflect.FullName]dynamicModel
}

func (r *protoregistryFiles) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if m, ok := r.models[name]; ok {
		return m.typ, nil
	}
	return nil, status.Errorf(codes.NotFound, "%s is no model's message", name)
}

func (r *protoregistryFiles) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	return r.FindMessageByName(protoreflect.FullName(url[strings.LastIndexByte(url, '/')+1:]))
}

func (r *protoregistryFiles) FindExtensionByName(protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return nil, status.Error(codes.NotFound, "no extensions")
}

func (r *protoregistryFiles) FindExtensionByNumber(protoreflect.FullName, protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return nil, status.Error(codes.NotFound, "no extensions")
}

// The original agentctl's "config update" and "config get" against the
// agent, call by call: KnownModels and ProtoFileDescriptor, the values
// built dynamically from the served descriptors and loaded from the
// original's JSON, each sent as an item (model, name from the model's
// nameTemplate, the value in an Any of type URL models.ligato.io/<message>)
// with ManagerService.SetConfig; VPP has the loopback and the route when
// it returns; GetConfig gives them back, resolvable with the dynamic types,
// CONFIGURED; DumpState has them; a resync (--replace) without the route
// removes it from VPP.
func TestE2EVPPManagerServiceDynamicClient(t *testing.T) {
	v := startE2EVPP(t)
	cfg := testConfig(t)
	cfg.VPP.Disabled, cfg.VPP.Socket = false, v.socket
	a := startAgent(t, cfg, true)
	conn := a.grpcConn()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	byMessage, resolver := knownModels(ctx, t, ligatogeneric.NewMetaServiceClient(conn))
	byName := map[string]dynamicModel{}
	for _, m := range byMessage {
		byName[m.name()] = m
	}
	mgr := ligatogeneric.NewManagerServiceClient(conn)

	// The configuration file, one value per model, in the original's JSON.
	values := []struct{ model, json string }{
		{"vpp.interfaces", `{"name": "mgrloop1", "type": "SOFTWARE_LOOPBACK", "enabled": true, "ipAddresses": ["10.130.0.1/24"]}`},
		{"vpp.route", `{"dstNetwork": "10.131.0.0/16", "nextHopAddr": "10.130.0.2", "outgoingInterface": "mgrloop1"}`},
	}
	var items []*ligatogeneric.UpdateItem
	names := map[string]string{} // by model
	for _, val := range values {
		m, ok := byName[val.model]
		if !ok {
			t.Fatalf("KnownModels has no model %s", val.model)
		}
		msg := m.typ.New().Interface()
		if err := protojson.Unmarshal([]byte(val.json), msg); err != nil {
			t.Fatalf("%s: the original's JSON does not load into the dynamic message: %v", val.model, err)
		}
		data, err := proto.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		names[val.model] = m.instanceName(t, msg)
		items = append(items, &ligatogeneric.UpdateItem{Item: &ligatogeneric.Item{
			Id:   &ligatogeneric.Item_ID{Model: m.name(), Name: names[val.model]},
			Data: &ligatogeneric.Data{Union: &ligatogeneric.Data_Any{Any: &anypb.Any{TypeUrl: "models.ligato.io/" + string(msg.ProtoReflect().Descriptor().FullName()), Value: data}}},
		}})
	}
	resp, err := mgr.SetConfig(ctx, &ligatogeneric.SetConfigRequest{Updates: items})
	if err != nil {
		t.Fatalf("SetConfig: %v", err)
	}
	for _, r := range resp.GetResults()[1:] {
		if r.GetStatus().GetStatus() != "CONFIGURED" {
			t.Errorf("SetConfig result %v: want CONFIGURED", r)
		}
	}

	// VPP has them when SetConfig returns.
	loop, ok := v.tagged("mgrloop1")
	if !ok {
		t.Fatalf("VPP has no interface tagged mgrloop1: %v", v.interfaces())
	}
	if got := v.addresses(loop.SwIfIndex); !slices.Contains(got, "10.130.0.1/24") {
		t.Errorf("mgrloop1's addresses in VPP: %v", got)
	}
	if got := v.routesVia(loop.SwIfIndex); !slices.Contains(got, "10.131.0.0/16 via 10.130.0.2") {
		t.Errorf("VPP's routes via mgrloop1: %v", got)
	}

	// config get: the items resolve with the dynamic types and are CONFIGURED.
	got, err := mgr.GetConfig(ctx, &ligatogeneric.GetConfigRequest{})
	if err != nil {
		t.Fatalf("GetConfig: %v", err)
	}
	seen := map[string]bool{}
	for _, it := range got.GetItems() {
		msg, err := anypb.UnmarshalNew(it.GetItem().GetData().GetAny(), proto.UnmarshalOptions{Resolver: resolver})
		if err != nil {
			t.Errorf("GetConfig item %v does not resolve with the served types: %v", it.GetItem().GetId(), err)
			continue
		}
		m := byMessage[msg.ProtoReflect().Descriptor().FullName()]
		if m.name() != it.GetItem().GetId().GetModel() {
			t.Errorf("GetConfig item %v holds a %s", it.GetItem().GetId(), msg.ProtoReflect().Descriptor().FullName())
		}
		if want, ok := names[m.name()]; ok && strings.TrimSuffix(want, "/") == it.GetItem().GetId().GetName() {
			seen[m.name()] = true
			if it.GetStatus().GetStatus() != "CONFIGURED" {
				t.Errorf("GetConfig %v: status %v, want CONFIGURED", it.GetItem().GetId(), it.GetStatus())
			}
		}
	}
	for _, val := range values {
		if !seen[val.model] {
			t.Errorf("GetConfig has no %s %q: %v", val.model, names[val.model], got.GetItems())
		}
	}
	dump, err := mgr.DumpState(ctx, &ligatogeneric.DumpStateRequest{Ids: []*ligatogeneric.Item_ID{{Model: "vpp.interfaces", Name: "mgrloop1"}}})
	if err != nil || len(dump.GetItems()) != 1 {
		t.Errorf("DumpState of mgrloop1: %v, %v", dump.GetItems(), err)
	}

	// config update --replace with the loopback only: the route is gone.
	if _, err := mgr.SetConfig(ctx, &ligatogeneric.SetConfigRequest{OverwriteAll: true, Updates: items[:1]}); err != nil {
		t.Fatalf("SetConfig overwrite_all: %v", err)
	}
	if got := v.routesVia(loop.SwIfIndex); slices.Contains(got, "10.131.0.0/16 via 10.130.0.2") {
		t.Errorf("the route left out of overwrite_all is still in VPP: %v", got)
	}
	if _, ok := v.tagged("mgrloop1"); !ok {
		t.Errorf("mgrloop1 is gone after an overwrite_all that lists it")
	}
}

// With a token configured, SetConfig needs it (it changes state);
// GetConfig does not.
func TestE2EManagerServiceToken(t *testing.T) {
	cfg := testConfig(t)
	cfg.Token = NewSecret("mgr-token")
	a := startAgent(t, cfg, true)
	mgr := ligatogeneric.NewManagerServiceClient(a.grpcConn())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req := &ligatogeneric.SetConfigRequest{OverwriteAll: true}
	if _, err := mgr.SetConfig(ctx, req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("SetConfig without the token: %v, want Unauthenticated", err)
	}
	if _, err := mgr.GetConfig(ctx, &ligatogeneric.GetConfigRequest{}); err != nil {
		t.Errorf("GetConfig without the token: %v", err)
	}
	authed := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer mgr-token")
	if _, err := mgr.SetConfig(authed, req); err != nil {
		t.Errorf("SetConfig with the token: %v", err)
	}
}

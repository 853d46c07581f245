// Package meta serves ligato.generic.MetaService, the model catalogue of
// the original agent (Ligato vpp-agent v3), from netagent's model registry.
// The original's clients ask it before they build configuration messages
// without compiled-in models: its agentctl's "model ls" and "model
// inspect", and the first step of its "config get" and "config update"
// (which then call ligato.generic.ManagerService, not served by netagent).
//
// KnownModels lists one ModelDetail per model of the registry, in the
// registry's order: the spec the original registers the same model with
// (module, version and type are the parts of the model's key prefix,
// "config/<module, '.' as '/'>/<version>/<type>/", class "config"; the
// model name is "<module>.<type>", as netagent's), the full name of the
// model's message, and the options the original's clients read:
// "nameTemplate" (the original's template of the name part of a key; it
// yields netagent's key for netagent's messages), "goType", "pkgPath" and
// "protoFile" (netagent's, the file for ProtoFileDescriptor). A request
// with a class filters by it; an unknown class gets an empty list, not an
// error, as from the original.
//
// The messages are netagent's (vpp.interfaces.Interface in
// vpp/interfaces/interface.proto, not ligato.vpp.interfaces.Interface in
// ligato/vpp/interfaces/interface.proto): the ones its
// ConfiguratorService containers and gRPC reflection name, with the
// original's field numbers, names and enum values, so that a message built
// from the descriptors served here is the original's on the wire and in
// JSON.
//
// ProtoFileDescriptor answers for the .proto file of a known model only
// (as the original): its FileDescriptorProto and, always set (the
// original's client refuses a response without it), the set of the files
// it imports, directly or not, dependencies before their dependents.
// Another file is NotFound. The answers come from the descriptors compiled
// into the agent; the service holds no state and may be called
// concurrently.
package meta

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/netagent-io/netagent/pkg/models"
	ligatogeneric "github.com/netagent-io/netagent/proto/ligato/generic"
)

// ClassConfig is the class of every model netagent has: configuration
// values (the first segment of their keys).
const ClassConfig = "config"

// nameTemplates are the original's name templates of the models netagent
// has, by model name. Executed with text/template on netagent's message
// (with the original's template function ipnet, which yields the IP and
// MaskSize of a network), each yields the part of the value's key after
// the model's key prefix (for VPP routes, with a trailing "/" when there
// is no next hop, which the original's keys had). Every model of the
// registry served needs one.
var nameTemplates = map[string]string{
	models.VPPInterface.Name:    "{{.Name}}",
	models.VPPBridgeDomain.Name: "{{.Name}}",
	models.VPPRoute.Name: `{{if .OutgoingInterface}}{{printf "if/%s/" .OutgoingInterface}}{{end}}` +
		`vrf/{{.VrfId}}/` +
		`{{with ipnet .DstNetwork}}{{printf "dst/%s/%d/" .IP .MaskSize}}` +
		`{{else}}{{printf "dst/%s/" .DstNetwork}}{{end}}` +
		`{{if .NextHopAddr}}gw/{{.NextHopAddr}}{{end}}`,
	models.VPPARP.Name:         "{{.Interface}}/{{.IpAddress}}",
	models.LinuxInterface.Name: "{{.Name}}",
	models.LinuxRoute.Name: `{{with ipnet .DstNetwork}}{{printf "%s/%d" .IP .MaskSize}}` +
		`{{else}}{{.DstNetwork}}{{end}}/{{.OutgoingInterface}}`,
	models.LinuxARP.Name:    "{{.Interface}}/{{.IpAddress}}",
	models.VPPACL.Name:      "{{.Name}}",
	models.VPPVrfTable.Name: "id/{{.Id}}/protocol/{{.Protocol}}",
	models.VPPXConnect.Name: "{{.ReceiveInterface}}",
	models.VPPL2FIB.Name:    "{{.BridgeDomain}}/mac/{{.PhysAddress}}",
	// A model of one value has no name (its key is its prefix).
	models.VPPNat44Global.Name:    "",
	models.VPPNat44Interface.Name: "{{.Name}}",
	models.VPPNat44AddressPool.Name: "{{if .Name}}{{.Name}}{{else}}vrf/{{.VrfId}}/address/{{.FirstIp}}" +
		"{{if and .LastIp (ne .FirstIp .LastIp)}}-{{.LastIp}}{{end}}{{end}}",
	models.VPPDNat44.Name: "{{.Label}}",
}

// Server is the MetaService of a model registry.
type Server struct {
	ligatogeneric.UnimplementedMetaServiceServer

	details []*ligatogeneric.ModelDetail
	// files are the .proto files of the models, by path.
	files map[string]protoreflect.FileDescriptor
}

var _ ligatogeneric.MetaServiceServer = (*Server)(nil)

// New returns the MetaService of the models of reg. It fails when a model
// has no spec of the original's form (its key prefix is not
// "config/<module path>/<version>/<type>/" or does not match its name) or
// no name template: a model added to netagent without its place in the
// original's catalogue.
func New(reg *models.Registry) (*Server, error) {
	s := &Server{files: map[string]protoreflect.FileDescriptor{}}
	for _, m := range reg.Models() {
		d, err := detail(m)
		if err != nil {
			return nil, err
		}
		s.details = append(s.details, d)
		file := m.New().ProtoReflect().Descriptor().ParentFile()
		s.files[file.Path()] = file
	}
	return s, nil
}

// Register registers the service on g.
func (s *Server) Register(g grpc.ServiceRegistrar) {
	ligatogeneric.RegisterMetaServiceServer(g, s)
}

// KnownModels lists the models of the class asked for, all for "".
func (s *Server) KnownModels(_ context.Context, req *ligatogeneric.KnownModelsRequest) (*ligatogeneric.KnownModelsResponse, error) {
	resp := &ligatogeneric.KnownModelsResponse{}
	for _, d := range s.details {
		if req.GetClass() == "" || req.GetClass() == d.GetSpec().GetClass() {
			resp.KnownModels = append(resp.KnownModels, d)
		}
	}
	return resp, nil
}

// ProtoFileDescriptor returns the descriptor of a model's .proto file and
// those of the files it imports.
func (s *Server) ProtoFileDescriptor(_ context.Context, req *ligatogeneric.ProtoFileDescriptorRequest) (*ligatogeneric.ProtoFileDescriptorResponse, error) {
	file, ok := s.files[req.GetFullProtoFileName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "proto file %q is not the file of a model this agent knows (KnownModels names them in the option protoFile)", req.GetFullProtoFileName())
	}
	return &ligatogeneric.ProtoFileDescriptorResponse{
		FileDescriptor:        protodesc.ToFileDescriptorProto(file),
		FileImportDescriptors: &descriptorpb.FileDescriptorSet{File: imports(file)},
	}, nil
}

// imports returns the files file imports, directly or not, each once,
// every file after the files it imports.
func imports(file protoreflect.FileDescriptor) []*descriptorpb.FileDescriptorProto {
	var out []*descriptorpb.FileDescriptorProto
	seen := map[string]bool{file.Path(): true}
	var visit func(f protoreflect.FileDescriptor)
	visit = func(f protoreflect.FileDescriptor) {
		for i := range f.Imports().Len() {
			imp := f.Imports().Get(i).FileDescriptor
			if seen[imp.Path()] {
				continue
			}
			seen[imp.Path()] = true
			visit(imp)
			out = append(out, protodesc.ToFileDescriptorProto(imp))
		}
	}
	visit(file)
	return out
}

// detail is the ModelDetail of m.
func detail(m *models.Model) (*ligatogeneric.ModelDetail, error) {
	spec, err := specOf(m)
	if err != nil {
		return nil, err
	}
	tmpl, ok := nameTemplates[m.Name]
	if !ok {
		return nil, fmt.Errorf("model %s: no name template of the original's form", m.Name)
	}
	msg := m.New()
	goType := reflect.TypeOf(msg)
	option := func(key, value string) *ligatogeneric.ModelDetail_Option {
		return &ligatogeneric.ModelDetail_Option{Key: key, Values: []string{value}}
	}
	return &ligatogeneric.ModelDetail{
		Spec:      spec,
		ProtoName: string(m.MessageName()),
		Options: []*ligatogeneric.ModelDetail_Option{
			option("nameTemplate", tmpl),
			option("goType", goType.String()),
			option("pkgPath", goType.Elem().PkgPath()),
			option("protoFile", msg.ProtoReflect().Descriptor().ParentFile().Path()),
		},
	}, nil
}

// specOf is the original's spec of m, from its key prefix
// "<class>/<module path>/<version>/<type>/" (without the last "/" for a
// model of one value, as the original's keys of models without a name).
func specOf(m *models.Model) (*ligatogeneric.ModelSpec, error) {
	parts := strings.Split(strings.TrimSuffix(m.KeyPrefix, "/"), "/")
	if len(parts) < 4 || parts[0] != ClassConfig || strings.HasSuffix(m.KeyPrefix, "/") == m.Singleton() {
		return nil, fmt.Errorf("model %s: key prefix %q is not %s/<module path>/<version>/<type>/", m.Name, m.KeyPrefix, ClassConfig)
	}
	n := len(parts)
	spec := &ligatogeneric.ModelSpec{
		Module:  strings.Join(parts[1:n-2], "."),
		Version: parts[n-2],
		Type:    parts[n-1],
		Class:   parts[0],
	}
	if name := spec.Module + "." + spec.Type; name != m.Name {
		return nil, fmt.Errorf("model %s: its key prefix %q makes the model name %q", m.Name, m.KeyPrefix, name)
	}
	return spec, nil
}

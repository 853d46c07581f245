// Package manager serves ligato.generic.ManagerService, the item-by-item
// configurator of the original agent (Ligato vpp-agent v3): its agentctl's
// "config get" and "config update" and its generic Go client call it after
// asking MetaService (package meta) for the models. The messages
// (proto/ligato/generic/manager.proto) are netagent's own definitions with
// the original's names and field numbers.
//
// # Items
//
// An item is a model value in a google.protobuf.Any, with an id: the
// model's name ("vpp.interfaces") and the item's name (the part of its key
// after the model's key prefix). The Any's type URL ends with the full name
// of the value's message, whatever comes before the last "/" (the
// original's clients write "models.ligato.io/"): netagent's message, the
// one MetaService names ("vpp.interfaces.Interface"), or the original's
// message of the same model ("ligato.vpp.interfaces.Interface", see
// OriginalMessages), which has the same wire format. The items this
// service answers with name netagent's messages, with the type URL prefix
// "models.ligato.io/", so that a client that built its types from
// MetaService resolves them.
//
// # SetConfig
//
// SetConfig sets the values of the items with data and deletes those named
// by an item without data (by id: model and name), in one transaction of
// the orchestrator's gRPC source, as the Configurator's Update and Delete
// and the original's ConfiguratorService do (grpcsource.Server.Apply): the
// gRPC source is above etcd and the init file. overwrite_all replaces
// every value of the gRPC source (a full resync of it, as the original's
// "full resync"), nothing of etcd's; items without data are then ignored,
// as the original ignored them. The call returns when the transaction is
// done.
//
// The request is checked as a whole first: an item without data or id, a
// type URL that names no message of a model (netagent's or the
// original's), data that does not decode into its model's message, an id
// naming another model than its data, an invalid value, a key twice,
// labels (netagent keeps none), or no item at all without overwrite_all
// fail the call with InvalidArgument, naming the item (updates[2]), and
// nothing is applied.
//
// The response lists, as the original's, first a result with the key
// "seqnum" whose status message is the transaction's sequence number, then
// one result per item, in the request's order: its id, key, operation
// (UPDATE or DELETE) and status (the value state's name: CONFIGURED,
// PENDING, ..., and its details or error). What netagent does not support
// is not applied and is reported per item, the rest of the request being
// applied: an item of a model of the original's that netagent lacks (an
// ABF, an IPsec SA: UNIMPLEMENTED, the original's state of a value without
// a descriptor, without a key), and a value of a supported model with
// fields netagent's model lacks (an interface's rx_modes: INVALID; with
// overwrite_all the gRPC source keeps its current value of that key).
// When values fail in the transaction the call fails with
// FailedPrecondition naming them, as the original's did; the values that
// did not fail are applied, and the status carries the SetConfigResponse
// as a detail.
//
// # GetConfig, DumpState, Subscribe
//
// GetConfig returns the desired configuration (every source merged, as
// the ConfiguratorService's Get), each item with the status of its value;
// values that do not decode are left out (their keys are INVALID). ids
// select items by model and name (an id without a name: every item of the
// model). Labels are refused: netagent keeps none. DumpState returns the
// values the southbound has now (the descriptors' Retrieve, as the
// ConfiguratorService's Dump), selected by ids the same way, without
// metadata (the original's map is empty too). Subscribe is Unimplemented, as
// in the original.
//
// The service holds no state of its own and may be called concurrently.
package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/ligato"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	ligatogeneric "github.com/netagent-io/netagent/proto/ligato/generic"
)

// TypeURLPrefix is the prefix of the type URLs of the items this service
// answers with, the original's.
const TypeURLPrefix = "models.ligato.io/"

// SeqNumKey is the key of the first result of SetConfig, whose status
// message is the transaction's sequence number (as the original's).
const SeqNumKey = "seqnum"

// OriginalMessages are the full names of the original's messages of
// netagent's models, by model name: the same fields and numbers under the
// original's package.
var OriginalMessages = map[string]protoreflect.FullName{
	models.VPPInterface.Name:        "ligato.vpp.interfaces.Interface",
	models.VPPBridgeDomain.Name:     "ligato.vpp.l2.BridgeDomain",
	models.VPPRoute.Name:            "ligato.vpp.l3.Route",
	models.VPPARP.Name:              "ligato.vpp.l3.ARPEntry",
	models.LinuxInterface.Name:      "ligato.linux.interfaces.Interface",
	models.LinuxRoute.Name:          "ligato.linux.l3.Route",
	models.LinuxARP.Name:            "ligato.linux.l3.ARPEntry",
	models.VPPACL.Name:              "ligato.vpp.acl.ACL",
	models.VPPVrfTable.Name:         "ligato.vpp.l3.VrfTable",
	models.VPPXConnect.Name:         "ligato.vpp.l2.XConnectPair",
	models.VPPL2FIB.Name:            "ligato.vpp.l2.FIBEntry",
	models.VPPNat44Global.Name:      "ligato.vpp.nat.Nat44Global",
	models.VPPNat44Interface.Name:   "ligato.vpp.nat.Nat44Interface",
	models.VPPNat44AddressPool.Name: "ligato.vpp.nat.Nat44AddressPool",
	models.VPPDNat44.Name:           "ligato.vpp.nat.DNat44",
}

// Options are the optional settings of New.
type Options struct {
	// Registry holds the models (nil: models.Default).
	Registry *models.Registry
	// Log (nil: slog.Default()).
	Log *slog.Logger
}

// Server implements ligato.generic.ManagerService.
type Server struct {
	ligatogeneric.UnimplementedManagerServiceServer

	conf  *grpcsource.Server
	o     *orchestrator.Orchestrator
	sched api.KVScheduler
	reg   *models.Registry
	log   *slog.Logger
	// byMessage finds a model by netagent's or the original's message name.
	byMessage map[protoreflect.FullName]*models.Model
}

var _ ligatogeneric.ManagerServiceServer = (*Server)(nil)

// New returns the service, changing the gRPC source through conf, reading
// the desired values from o and the statuses and the southbound from s. It
// fails when a model of the registry has no original message name in
// OriginalMessages.
func New(conf *grpcsource.Server, o *orchestrator.Orchestrator, s api.KVScheduler, opts Options) (*Server, error) {
	if opts.Registry == nil {
		opts.Registry = models.Default
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	srv := &Server{conf: conf, o: o, sched: s, reg: opts.Registry, log: opts.Log, byMessage: map[protoreflect.FullName]*models.Model{}}
	for _, m := range opts.Registry.Models() {
		original, ok := OriginalMessages[m.Name]
		if !ok {
			return nil, fmt.Errorf("model %s: no message of the original's known", m.Name)
		}
		srv.byMessage[m.MessageName()] = m
		srv.byMessage[original] = m
	}
	return srv, nil
}

// Register registers the service on g.
func (s *Server) Register(g grpc.ServiceRegistrar) {
	ligatogeneric.RegisterManagerServiceServer(g, s)
}

// update is one item of a SetConfig request, checked.
type update struct {
	id    *ligatogeneric.Item_ID
	model *models.Model // nil for a model netagent lacks
	key   string        // "" for a model netagent lacks
	value proto.Message // nil: delete
	// refused says why the item is not applied, with the status reported.
	refused, refusedStatus string
}

// SetConfig implements ManagerService.
func (s *Server) SetConfig(ctx context.Context, req *ligatogeneric.SetConfigRequest) (*ligatogeneric.SetConfigResponse, error) {
	if len(req.GetUpdates()) == 0 && !req.GetOverwriteAll() {
		return nil, status.Error(codes.InvalidArgument, "set config: no updates (overwrite_all with no updates removes every value set through gRPC)")
	}
	updates, err := s.updates(req)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "set config: %v", err)
	}
	var kvs []orchestrator.KV
	for _, u := range updates {
		switch {
		case u.refused != "":
			if req.GetOverwriteAll() && u.key != "" {
				// A full resync without the held value would remove it.
				if held := s.o.SourceValue(orchestrator.SourceGRPC, u.key); held != nil {
					kvs = append(kvs, orchestrator.KV{Key: u.key, Value: held})
				}
			}
		case u.value == nil && req.GetOverwriteAll():
			// A full resync sets what it lists: nothing to delete.
		default:
			kvs = append(kvs, orchestrator.KV{Key: u.key, Value: u.value})
		}
	}
	seq, failed, err := s.conf.Apply(ctx, "set config", kvs, req.GetOverwriteAll())
	if err != nil {
		return nil, err
	}
	resp := &ligatogeneric.SetConfigResponse{Results: []*ligatogeneric.UpdateResult{{
		Key:    SeqNumKey,
		Status: &ligatogeneric.ItemStatus{Status: api.ValueStateNonexistent.String(), Message: strconv.FormatUint(seq, 10)},
	}}}
	var refused []string
	for _, u := range updates {
		r := &ligatogeneric.UpdateResult{Id: u.id, Key: u.key}
		switch {
		case u.refused != "":
			r.Status = &ligatogeneric.ItemStatus{Status: u.refusedStatus, Message: u.refused}
			refused = append(refused, u.refused)
		case u.value == nil:
			r.Op = ligatogeneric.UpdateResult_DELETE
			r.Status = s.statusOf(u.key)
		default:
			r.Op = ligatogeneric.UpdateResult_UPDATE
			r.Status = s.statusOf(u.key)
		}
		resp.Results = append(resp.Results, r)
	}
	if len(refused) > 0 {
		s.log.Warn("ligato manager: items not supported, not applied", "items", len(refused), "first", refused[0])
	}
	if len(failed) > 0 {
		return nil, failedStatus(seq, failed, resp)
	}
	return resp, nil
}

// failedStatus is the FailedPrecondition of a transaction in which values
// failed, naming them, with the response as a detail.
func failedStatus(seq uint64, failed []*configuratorpb.KeyError, resp *ligatogeneric.SetConfigResponse) error {
	msgs := make([]string, 0, len(failed))
	for _, ke := range failed {
		msgs = append(msgs, fmt.Sprintf("%s (%s): %s", ke.GetKey(), ke.GetOperation(), ke.GetError()))
	}
	st := status.Newf(codes.FailedPrecondition, "set config: transaction %d: %d value(s) failed (the others are applied): %s",
		seq, len(failed), strings.Join(msgs, "; "))
	if withResp, err := st.WithDetails(resp); err == nil {
		st = withResp
	}
	return st.Err()
}

// updates checks the items of a request: every problem, each naming its
// item.
func (s *Server) updates(req *ligatogeneric.SetConfigRequest) ([]update, error) {
	var out []update
	var errs []error
	placeOf := map[string]string{}
	for i, ui := range req.GetUpdates() {
		place := fmt.Sprintf("updates[%d]", i)
		u, err := s.update(ui)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", place, err))
			continue
		}
		if u.key != "" {
			if first, ok := placeOf[u.key]; ok {
				errs = append(errs, fmt.Errorf("%s: key %s is set by %s already", place, u.key, first))
				continue
			}
			placeOf[u.key] = place
		}
		out = append(out, u)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// update checks one item.
func (s *Server) update(ui *ligatogeneric.UpdateItem) (update, error) {
	item := ui.GetItem()
	if item == nil {
		return update{}, errors.New("no item")
	}
	if len(ui.GetLabels()) > 0 {
		return update{}, errors.New("labels are not kept by netagent: send the item without them")
	}
	id := item.GetId()
	if item.GetData() == nil {
		return s.deletion(id)
	}
	a := item.GetData().GetAny()
	if a == nil {
		return update{}, errors.New("item.data holds no google.protobuf.Any")
	}
	name := messageName(a.GetTypeUrl())
	if !name.IsValid() {
		return update{}, fmt.Errorf("item.data: type URL %q names no message", a.GetTypeUrl())
	}
	m := s.byMessage[name]
	if m == nil {
		if field, ok := ligato.LackedModel(name); ok {
			return update{id: id, refusedStatus: api.ValueStateUnimplemented.String(), refused: fmt.Sprintf(
				"%s: values of the original's model %s (its configuration's %s) are not supported by netagent; not applied",
				describe(id, name), name, field)}, nil
		}
		return update{}, fmt.Errorf("item.data: type URL %q: %s is the message of no model this agent knows (MetaService.KnownModels lists them; the original's message names are accepted too)",
			a.GetTypeUrl(), name)
	}
	if id.GetModel() != "" && id.GetModel() != m.Name {
		return update{}, fmt.Errorf("item.id.model is %q but item.data is a %s (model %s)", id.GetModel(), name, m.Name)
	}
	v := m.New()
	if err := proto.Unmarshal(a.GetValue(), v); err != nil {
		return update{}, fmt.Errorf("item.data: not a %s: %v", name, err)
	}
	if unknown := ligato.UnsupportedFields(v.ProtoReflect()); len(unknown) > 0 {
		u := update{model: m, refusedStatus: api.ValueStateInvalid.String()}
		if key, err := m.Key(v); err == nil {
			u.key = key
		}
		u.id = s.idOf(m, u.key, id)
		u.refused = fmt.Sprintf("%s: fields of the original's model that netagent does not support: %s; not applied",
			describe(u.id, name), strings.Join(unknown, ", "))
		return u, nil
	}
	key, err := m.Key(v)
	if err != nil {
		return update{}, err
	}
	return update{id: s.idOf(m, key, id), model: m, key: key, value: v}, nil
}

// deletion checks an item without data: its id names the value to delete.
func (s *Server) deletion(id *ligatogeneric.Item_ID) (update, error) {
	if id == nil {
		return update{}, errors.New("the item has neither data (to set a value) nor an id (to delete one)")
	}
	m := s.reg.ModelByName(id.GetModel())
	if m == nil {
		return update{}, fmt.Errorf("item.id.model %q is no model this agent knows (MetaService.KnownModels lists them)", id.GetModel())
	}
	key, err := m.CanonicalKey(m.KeyPrefix + id.GetName())
	if err != nil {
		return update{}, fmt.Errorf("item.id.name %q: %v", id.GetName(), err)
	}
	return update{id: s.idOf(m, key, nil), model: m, key: key}, nil
}

// messageName is the message a type URL names: what follows its last "/".
func messageName(typeURL string) protoreflect.FullName {
	return protoreflect.FullName(typeURL[strings.LastIndexByte(typeURL, '/')+1:])
}

// describe names an item in a message: its id, or its message.
func describe(id *ligatogeneric.Item_ID, message protoreflect.FullName) string {
	if id.GetModel() != "" || id.GetName() != "" {
		return fmt.Sprintf("item %s %q", id.GetModel(), id.GetName())
	}
	return "item " + string(message)
}

// idOf is the id of a value of m under key (the id sent when the key is not
// known).
func (s *Server) idOf(m *models.Model, key string, sent *ligatogeneric.Item_ID) *ligatogeneric.Item_ID {
	if key == "" {
		return sent
	}
	return &ligatogeneric.Item_ID{Model: m.Name, Name: strings.TrimPrefix(key, m.KeyPrefix)}
}

// statusOf is the status of the value of a key, as the original reports
// it: the state's name, and the details or else the error.
func (s *Server) statusOf(key string) *ligatogeneric.ItemStatus {
	st := s.sched.GetValueStatus(key).GetValue()
	msg := st.GetError()
	if len(st.GetDetails()) > 0 {
		msg = strings.Join(st.GetDetails(), ", ")
	}
	return &ligatogeneric.ItemStatus{Status: st.GetState().String(), Message: msg}
}

// item is the item of a value of m under key.
func (s *Server) item(m *models.Model, key string, v proto.Message) (*ligatogeneric.Item, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("value of %s: %v", key, err)
	}
	return &ligatogeneric.Item{
		Id: s.idOf(m, key, nil),
		Data: &ligatogeneric.Data{Union: &ligatogeneric.Data_Any{Any: &anypb.Any{
			TypeUrl: TypeURLPrefix + string(m.MessageName()),
			Value:   data,
		}}},
	}, nil
}

// selector selects items by ids (none: all).
type selector []*ligatogeneric.Item_ID

// selectorOf checks the ids of a request.
func (s *Server) selectorOf(ids []*ligatogeneric.Item_ID) (selector, error) {
	var errs []error
	for i, id := range ids {
		if s.reg.ModelByName(id.GetModel()) == nil {
			errs = append(errs, fmt.Errorf("ids[%d]: model %q is no model this agent knows (MetaService.KnownModels lists them)", i, id.GetModel()))
		}
	}
	return selector(ids), errors.Join(errs...)
}

func (sel selector) selects(id *ligatogeneric.Item_ID) bool {
	if len(sel) == 0 {
		return true
	}
	for _, want := range sel {
		if want.GetModel() == id.GetModel() && (want.GetName() == "" || want.GetName() == id.GetName()) {
			return true
		}
	}
	return false
}

// modelOf is the model of a value under key, nil when the value is not
// one of the key's model (an undecodable value, a value of no model).
func (s *Server) modelOf(key string, v proto.Message) *models.Model {
	m := s.reg.ModelOfKey(key)
	if m == nil || v == nil || s.reg.ModelOfMessage(v) != m {
		return nil
	}
	return m
}

// GetConfig implements ManagerService: the desired values and their
// statuses.
func (s *Server) GetConfig(_ context.Context, req *ligatogeneric.GetConfigRequest) (*ligatogeneric.GetConfigResponse, error) {
	if len(req.GetLabels()) > 0 {
		return nil, status.Error(codes.InvalidArgument, "get config: labels: netagent keeps no labels (ask without them)")
	}
	sel, err := s.selectorOf(req.GetIds())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "get config: %v", err)
	}
	resp := &ligatogeneric.GetConfigResponse{}
	for _, kv := range s.o.Get() {
		m := s.modelOf(kv.Key, kv.Value)
		if m == nil {
			continue
		}
		item, err := s.item(m, kv.Key, kv.Value)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "get config: %v", err)
		}
		if !sel.selects(item.GetId()) {
			continue
		}
		resp.Items = append(resp.Items, &ligatogeneric.ConfigItem{Item: item, Status: s.statusOf(kv.Key)})
	}
	return resp, nil
}

// DumpState implements ManagerService: what the southbound has now.
func (s *Server) DumpState(_ context.Context, req *ligatogeneric.DumpStateRequest) (*ligatogeneric.DumpStateResponse, error) {
	sel, err := s.selectorOf(req.GetIds())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "dump state: %v", err)
	}
	kvs, err := s.sched.DumpValuesByKeyPrefix(s.modelsPrefix(), api.SBView)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "dump state: %v", err)
	}
	resp := &ligatogeneric.DumpStateResponse{}
	for _, kv := range kvs {
		m := s.modelOf(kv.Key, kv.Value)
		if m == nil {
			continue
		}
		item, err := s.item(m, kv.Key, kv.Value)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "dump state: %v", err)
		}
		if sel.selects(item.GetId()) {
			resp.Items = append(resp.Items, &ligatogeneric.StateItem{Item: item})
		}
	}
	return resp, nil
}

// modelsPrefix is the longest common prefix of the models' key prefixes,
// cut at a "/": one dump covers every model, each descriptor's Retrieve
// runs once.
func (s *Server) modelsPrefix() string {
	ms := s.reg.Models()
	if len(ms) == 0 {
		return ""
	}
	p := ms[0].KeyPrefix
	for _, m := range ms[1:] {
		for !strings.HasPrefix(m.KeyPrefix, p) {
			p = p[:len(p)-1]
		}
	}
	return p[:strings.LastIndexByte(p, '/')+1]
}

// Subscribe implements ManagerService: not implemented, as in the original.
func (s *Server) Subscribe(*ligatogeneric.SubscribeRequest, grpc.ServerStreamingServer[ligatogeneric.SubscribeResponse]) error {
	return status.Error(codes.Unimplemented, "ligato.generic.ManagerService.Subscribe is not implemented (nor was it by the original agent): "+
		"watch the values' statuses with netagent.configurator.Configurator.WatchStatus (netagent's agentctl: config watch), "+
		"VPP interface notifications with ligato.configurator.ConfiguratorService.Notify")
}

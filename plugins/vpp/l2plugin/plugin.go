package l2plugin

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// Descriptor names.
const (
	BridgeDomainDescriptorName = "vpp-bridge-domain"
	BDInterfaceDescriptorName  = "vpp-bd-interface"
)

// AreaName is the vppconn area of the plugin's messages (Area).
const AreaName = "l2"

// noIndex is VPP's ~0: no interface, all domains.
const noIndex = ^uint32(0)

// bdInterfaceKeyPrefix starts the keys of the bridge domain bindings.
const bdInterfaceKeyPrefix = "vpp/bd/"

// BDInterfaceKey is the key of the binding of an interface to a bridge
// domain, derived from the bridge domain: vpp/bd/<bd>/interface/<iface>.
func BDInterfaceKey(bd, iface string) string {
	return bdInterfaceKeyPrefix + bd + "/interface/" + iface
}

// parseBDInterfaceKey returns the bridge domain of a binding key, given the
// interface (names may contain "/", so the key is cut at both ends).
func parseBDInterfaceKey(key, iface string) (string, bool) {
	rest, ok := strings.CutPrefix(key, bdInterfaceKeyPrefix)
	if !ok {
		return "", false
	}
	bd, ok := strings.CutSuffix(rest, "/interface/"+iface)
	return bd, ok && bd != ""
}

// InterfaceLookup finds the VPP interface of a logical interface name
// (ifplugin.SchedulerInterfaces reads the interface descriptor's metadata).
type InterfaceLookup = ifplugin.InterfaceLookup

// MetadataSource is the part of the scheduler the lookups need.
type MetadataSource = ifplugin.MetadataSource

// Plugin holds the bridge domain and binding descriptors. Its state is the
// metadata map the scheduler writes (the index of each bridge domain).
type Plugin struct {
	m      *vppconn.Manager
	ifaces InterfaceLookup
	names  func(ctx context.Context) []string
	log    *slog.Logger

	mu     sync.Mutex
	bdMeta *api.MemMetadataMap // the bridge domain descriptor's, once registered
}

// New returns the plugin: m carries the calls to VPP, ifaces maps logical
// interface names to sw_if_index.
func New(m *vppconn.Manager, ifaces InterfaceLookup, log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.Default()
	}
	return &Plugin{m: m, ifaces: ifaces, log: log.With("plugin", "vpp-l2")}
}

// SetInterfaceLister lets Retrieve map every configured interface
// (SchedulerInterfaceNames) back from its sw_if_index, not only those the
// expected bridge domains name, so that a binding of ours the NB dropped
// while the agent was away is found (and removed by a full resync). names
// gets the context of the Retrieve that asks. Call it before registering
// the descriptors.
func (p *Plugin) SetInterfaceLister(names func(ctx context.Context) []string) { p.names = names }

// Area returns the messages the plugin sends, to register with
// vppconn.Manager.AddArea before Run: a VPP that lacks one disables the
// area, and the plugin's calls fail (not retriable) naming the messages.
func (p *Plugin) Area() vppconn.Area {
	return vppconn.Area{Name: AreaName, Messages: []govppapi.Message{
		&l2.BridgeDomainAddDelV2{}, &l2.BridgeDomainAddDelV2Reply{},
		&l2.BridgeDomainDump{}, &l2.BridgeDomainDetails{},
		&l2.BridgeFlags{}, &l2.BridgeFlagsReply{},
		&l2.BridgeDomainSetMacAge{}, &l2.BridgeDomainSetMacAgeReply{},
		&l2.BdIPMacAddDel{}, &l2.BdIPMacAddDelReply{},
		&l2.BdIPMacDump{}, &l2.BdIPMacDetails{},
		&l2.SwInterfaceSetL2Bridge{}, &l2.SwInterfaceSetL2BridgeReply{},
		&l2.SwInterfaceSetL2Xconnect{}, &l2.SwInterfaceSetL2XconnectReply{},
		&l2.L2XconnectDump{}, &l2.L2XconnectDetails{},
		&l2.L2fibAddDel{}, &l2.L2fibAddDelReply{},
		&l2.L2FibTableDump{}, &l2.L2FibTableDetails{},
		&interfaces.SwInterfaceDump{}, &interfaces.SwInterfaceDetails{},
	}}
}

// Descriptors returns the bridge domain, binding, cross-connect and L2 FIB
// descriptors, to register after the VPP interface descriptor.
func (p *Plugin) Descriptors() []*api.KVDescriptor {
	return []*api.KVDescriptor{
		p.bridgeDomainDescriptor().KVDescriptor(), p.bdInterfaceDescriptor().KVDescriptor(),
		p.xconnectDescriptor().KVDescriptor(), p.fibDescriptor().KVDescriptor(),
	}
}

// BridgeDomainIndex returns the VPP bd_id of a bridge domain the scheduler
// holds as created (from the descriptor's metadata map).
func (p *Plugin) BridgeDomainIndex(name string) (uint32, bool) {
	md, ok := p.domainMetadata(name)
	if !ok {
		return 0, false
	}
	return md.Index, true
}

// domainMetadata returns the metadata of a bridge domain the scheduler
// holds as created.
func (p *Plugin) domainMetadata(name string) (*BridgeDomainMetadata, bool) {
	p.mu.Lock()
	mm := p.bdMeta
	p.mu.Unlock()
	if mm == nil {
		return nil, false
	}
	v, ok := mm.GetValue(name)
	if !ok {
		return nil, false
	}
	md, ok := v.(*BridgeDomainMetadata)
	return md, ok && md != nil
}

// usedIndexes returns the bd_ids in the metadata map.
func (p *Plugin) usedIndexes() map[uint32]bool {
	p.mu.Lock()
	mm := p.bdMeta
	p.mu.Unlock()
	out := map[uint32]bool{}
	if mm == nil {
		return out
	}
	for _, v := range mm.Snapshot() {
		if md, ok := v.(*BridgeDomainMetadata); ok && md != nil {
			out[md.Index] = true
		}
	}
	return out
}

func (p *Plugin) newMetadataMap() api.MetadataMapRW {
	mm := api.NewMetadataMap()
	p.mu.Lock()
	p.bdMeta = mm
	p.mu.Unlock()
	return mm
}

// --- VPP calls ------------------------------------------------------------------

// call runs f with the connection of the area and ctx (the callback's: it
// ends when the scheduler closes) bounded by the Manager's call timeout.
// Nothing is sent once ctx has ended: GoVPP would send the request and give
// up its reply, and VPP would carry it out unseen.
func (p *Plugin) call(ctx context.Context, f func(ctx context.Context, c l2.RPCService, conn govppapi.Connection) error) error {
	return p.m.Do(ctx, AreaName, func(ctx context.Context, conn govppapi.Connection) error {
		return f(ctx, l2.NewServiceClient(conn), conn)
	})
}

// isRetriable is the IsRetriableFailure of both descriptors: a VPP that
// lacks the area's messages stays so until another VPP connects (the resync
// after the connect applies the values again); everything else may pass.
func isRetriable(err error) bool {
	var ie *vppconn.IncompatibleError
	return !errors.As(err, &ie)
}

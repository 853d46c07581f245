package l3plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"sort"

	"github.com/netagent-io/netagent/plugins/vpp/internal/ipconv"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// Descriptor names.
const (
	RouteDescriptorName = "vpp-route"
	ARPDescriptorName   = "vpp-arp"
)

// AreaName is the vppconn area of the plugin's messages (Area).
const AreaName = "l3"

// noIndex is VPP's ~0: no interface, all interfaces.
const noIndex = ^uint32(0)

// InterfaceLookup finds the VPP interface of a logical interface name
// (ifplugin.SchedulerInterfaces reads the interface descriptor's metadata).
type InterfaceLookup = ifplugin.InterfaceLookup

// MetadataSource is the part of the scheduler the lookups need.
type MetadataSource = ifplugin.MetadataSource

// Plugin holds the VPP VRF table, route and ARP descriptors. It keeps no
// state of its own.
type Plugin struct {
	m      *vppconn.Manager
	ifaces InterfaceLookup
	names  func(ctx context.Context) []string
	log    *slog.Logger
}

// tableKey is an IP table of VPP: its id and protocol.
type tableKey struct {
	id   uint32
	ipv6 bool
}

func (k tableKey) String() string {
	if k.ipv6 {
		return fmt.Sprintf("VRF table %d (IPv6)", k.id)
	}
	return fmt.Sprintf("VRF table %d (IPv4)", k.id)
}

// New returns the plugin: m carries the calls to VPP, ifaces maps logical
// interface names to sw_if_index.
func New(m *vppconn.Manager, ifaces InterfaceLookup, log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.Default()
	}
	return &Plugin{m: m, ifaces: ifaces, log: log.With("plugin", "vpp-l3")}
}

// SetInterfaceLister lets the ARP Retrieve look at every configured
// interface (SchedulerInterfaceNames), not only those the expected entries
// name. names gets the context of the Retrieve that asks. Call it before
// registering the descriptors.
func (p *Plugin) SetInterfaceLister(names func(ctx context.Context) []string) { p.names = names }

// Area returns the messages the plugin sends, to register with
// vppconn.Manager.AddArea before Run: a VPP that lacks one disables the
// area, and the plugin's calls fail (not retriable) naming the messages.
func (p *Plugin) Area() vppconn.Area {
	return vppconn.Area{Name: AreaName, Messages: []govppapi.Message{
		&ip.IPTableAddDel{}, &ip.IPTableAddDelReply{},
		&ip.IPRouteAddDel{}, &ip.IPRouteAddDelReply{},
		&ip.IPTableDump{}, &ip.IPTableDetails{},
		&ip.IPRouteV2Dump{}, &ip.IPRouteV2Details{},
		&ip_neighbor.IPNeighborAddDel{}, &ip_neighbor.IPNeighborAddDelReply{},
		&ip_neighbor.IPNeighborDump{}, &ip_neighbor.IPNeighborDetails{},
		&interfaces.SwInterfaceDump{}, &interfaces.SwInterfaceDetails{},
	}}
}

// Descriptors returns the VRF table, route and ARP descriptors, to
// register after the VPP interface descriptor.
func (p *Plugin) Descriptors() []*api.KVDescriptor {
	routes := p.routeDescriptor().KVDescriptor()
	routes.Batch = p.routeBatch
	arps := p.arpDescriptor().KVDescriptor()
	arps.Batch = p.arpBatch
	return []*api.KVDescriptor{p.vrfTableDescriptor().KVDescriptor(), routes, arps}
}

// --- VPP calls ----------------------------------------------------------------

// call runs f with the connection of the area and ctx bounded by the
// Manager's call deadline. Nothing is sent once ctx has ended: GoVPP would
// send the request and give up its reply, and VPP would carry it out
// unseen.
func (p *Plugin) call(ctx context.Context, f func(ctx context.Context, conn govppapi.Connection) error) error {
	return p.m.Do(ctx, AreaName, f)
}

// isRetriable is the IsRetriableFailure of both descriptors: a VPP that
// lacks the area's messages stays so until another VPP connects (the resync
// after the connect applies the values again); everything else (VPP not
// connected, an interface or table not there yet, a timeout) may pass.
func isRetriable(err error) bool {
	var ie *vppconn.IncompatibleError
	return !errors.As(err, &ie)
}

// --- addresses ------------------------------------------------------------------

func toVPPPrefix(p netip.Prefix) ip_types.Prefix {
	return ip_types.Prefix{Address: ipconv.ToVPP(p.Addr()), Len: uint8(p.Bits())}
}

func fromVPPPrefix(p ip_types.Prefix) (netip.Prefix, bool) {
	a, ok := ipconv.FromVPP(p.Address)
	if !ok || int(p.Len) > a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, int(p.Len)).Masked(), true
}

// interfaceIndex maps the given logical names (and the lister's) to their
// sw_if_index, for a Retrieve; the map is read only (the next Retrieve of
// the refresh that asks for the same names gets it again: the routes' and
// the ARP entries' usually, every configured interface's with the
// lister). Names without metadata are left out, and so
// are those whose metadata names an index at which VPP has no interface of
// that name (tagged with it, as the agent's are, or named so, as foreign
// ones are): the metadata of an interface deleted behind the agent's back
// stays in the scheduler while the Retrieves of a resync run, and VPP
// keeps the static neighbours and the route paths of a deleted interface
// under its index, so they would be taken for the entries and routes of
// the interface, which the resync then does not re-create.
func (p *Plugin) interfaceIndex(ctx context.Context, names map[string]struct{}, withLister bool) (map[string]uint32, error) {
	if withLister && p.names != nil {
		for _, n := range p.names(ctx) {
			names[n] = struct{}{}
		}
	}
	memo := api.RefreshMemo(ctx)
	if v, ok := memo.Load(memoInterfaceIndex); ok {
		if last := v.(*indexOfNames); maps.Equal(last.names, names) {
			return last.index, nil
		}
	}
	out, err := p.lookUpInterfaces(ctx, names)
	if err == nil {
		memo.Store(memoInterfaceIndex, &indexOfNames{names: names, index: out})
	}
	return out, err
}

// memoInterfaceIndex is the refresh memo's key of the last index
// interfaceIndex made (an *indexOfNames).
const memoInterfaceIndex = "vpp/l3/interface-index"

// indexOfNames is an index of interfaces and the names it was made for.
type indexOfNames struct {
	names map[string]struct{}
	index map[string]uint32
}

// lookUpInterfaces is interfaceIndex of the names, made anew.
func (p *Plugin) lookUpInterfaces(ctx context.Context, names map[string]struct{}) (map[string]uint32, error) {
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	out := make(map[string]uint32, len(sorted))
	seen := map[uint32]string{}
	for _, n := range sorted {
		md, ok := p.ifaces(ctx, n)
		if !ok {
			p.log.Debug("retrieve: interface has no sw_if_index (yet); its items are not looked for", "interface", n)
			continue
		}
		if other, dup := seen[md.SwIfIndex]; dup {
			p.log.Warn("retrieve: two interfaces claim one sw_if_index", "interfaces", []string{other, n}, "sw_if_index", md.SwIfIndex)
			continue
		}
		seen[md.SwIfIndex] = n
		out[n] = md.SwIfIndex
	}
	if len(out) == 0 {
		return out, nil
	}
	// One sw_interface_dump per refresh, shared with the other Retrieves
	// (the interface descriptor's, which runs first, made it).
	list, err := vppcalls.ListInterfacesOnce(ctx, func(ctx context.Context) (details []*interfaces.SwInterfaceDetails, err error) {
		err = p.call(ctx, func(ctx context.Context, conn govppapi.Connection) (err error) {
			details, err = vppconn.Dump[*interfaces.SwInterfaceDetails](ctx, conn, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)})
			return err
		})
		return details, err
	})
	if err != nil {
		return nil, fmt.Errorf("sw_interface_dump (the interfaces of the metadata): %w", err)
	}
	inVPP := make(map[uint32]*vppcalls.Interface, len(list))
	for _, i := range list {
		inVPP[i.SwIfIndex] = i
	}
	for name, sw := range out {
		if i := inVPP[sw]; i == nil || (i.Tag != name && i.Name != name) {
			p.log.Info("retrieve: VPP has no interface of that name at the sw_if_index of its metadata (deleted by someone else?); its items are not looked for", "interface", name, "sw_if_index", sw)
			delete(out, name)
		}
	}
	return out, nil
}

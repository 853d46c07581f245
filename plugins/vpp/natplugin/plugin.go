package natplugin

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/natplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// Descriptor names.
const (
	GlobalDescriptorName          = "vpp-nat44-global"
	GlobalInterfaceDescriptorName = "vpp-nat44-global-interface"
	GlobalAddressDescriptorName   = "vpp-nat44-global-address"
	InterfaceDescriptorName       = "vpp-nat44-interface"
	AddressPoolDescriptorName     = "vpp-nat44-address-pool"
	DNat44DescriptorName          = "vpp-dnat44"
	StaticMappingDescriptorName   = "vpp-nat44-static-mapping"
	IdentityMappingDescriptorName = "vpp-nat44-identity-mapping"
)

// AreaName is the vppconn area of the plugin's messages (Area): VPP's nat
// plugin.
const AreaName = vppcalls.AreaName

// GlobalKey is the key of the NAT44 global settings, which every other
// NAT44 value depends on (VPP's NAT44 must be enabled first).
var GlobalKey = models.VPPNat44Global.KeyPrefix

// globalDependency is the dependency of every NAT44 value but the global
// settings.
var globalDependency = api.Dependency{Label: "NAT44 enabled (nat44-global)", Key: GlobalKey}

// InterfaceLookup finds the VPP interface of a logical interface name
// (ifplugin.SchedulerInterfaces reads the interface descriptor's metadata).
type InterfaceLookup = ifplugin.InterfaceLookup

// Plugin holds the NAT44 descriptors. Its state is the metadata maps the
// scheduler writes: the applied address pools and DNat44 values.
type Plugin struct {
	h      vppcalls.Handler
	ifaces InterfaceLookup
	names  func(ctx context.Context) []string
	log    *slog.Logger

	mu         sync.Mutex
	globalMeta *api.MemMetadataMap // the global descriptor's, once registered
	poolMeta   *api.MemMetadataMap // the address pool descriptor's, once registered
	dnatMeta   *api.MemMetadataMap // the DNat44 descriptor's, once registered
	// claimed are the interfaces of the global's nat_interfaces whose
	// features the last Nat44Interface Retrieve reported as a
	// Nat44Interface's (see retrieveInterfaces).
	claimed map[string]bool
}

// New returns the plugin calling VPP over m: ifaces maps logical interface
// names to sw_if_index.
func New(m *vppconn.Manager, ifaces InterfaceLookup, log *slog.Logger) *Plugin {
	return NewWithHandler(vppcalls.NewHandler(m), ifaces, log)
}

// NewWithHandler returns the plugin calling VPP through h.
func NewWithHandler(h vppcalls.Handler, ifaces InterfaceLookup, log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.Default()
	}
	return &Plugin{h: h, ifaces: ifaces, log: log.With("plugin", "vpp-nat44")}
}

// SetInterfaceLister lets the Retrieves map every configured interface
// (ifplugin.SchedulerInterfaceNames) back from its sw_if_index, not only
// those the expected values name, so that the NAT features the NB dropped
// while the agent was away from an interface of the agent's are found (and
// removed by a full resync). Call it before registering the descriptors.
func (p *Plugin) SetInterfaceLister(names func(ctx context.Context) []string) { p.names = names }

// Area returns the messages the plugin sends, to register with
// vppconn.Manager.AddArea before Run. It is optional: a VPP without the nat
// plugin is ready, and the NAT44 values fail naming the messages it lacks.
func (p *Plugin) Area() vppconn.Area { return vppcalls.Area() }

// Descriptors returns the plugin's descriptors, to register after the VPP
// interface descriptor: the global settings, interfaces, address pools,
// the global settings' deprecated lists (derived values), DNat44 values and
// their static and identity mappings.
func (p *Plugin) Descriptors() []*api.KVDescriptor {
	return []*api.KVDescriptor{
		p.globalDescriptor().KVDescriptor(),
		p.interfaceDescriptor().KVDescriptor(),
		p.poolDescriptor().KVDescriptor(),
		p.globalInterfaceDescriptor().KVDescriptor(),
		p.globalAddressDescriptor().KVDescriptor(),
		p.dnatDescriptor().KVDescriptor(),
		p.staticMappingDescriptor().KVDescriptor(),
		p.identityMappingDescriptor().KVDescriptor(),
	}
}

// isRetriable is the IsRetriableFailure of the descriptors: a VPP that
// lacks the area's messages stays so until another VPP connects (the resync
// after the connect applies the values again); everything else may pass.
func isRetriable(err error) bool {
	var ie *vppconn.IncompatibleError
	return !errors.As(err, &ie)
}

// namer maps sw_if_index back to the logical names of interfaces: the
// agent's interfaces (the lister's that are not foreign) always; a foreign
// (OBTAINED) interface only when a value names it (configured), so that the
// NAT settings someone else made on an interface the agent does not own are
// left alone.
type namer struct {
	agent, foreign map[uint32]string
	configured     map[string]bool
}

// newNamer resolves the interfaces of the lister and the names configured
// values use; names without metadata are left out.
func (p *Plugin) newNamer(ctx context.Context, configured map[string]bool) namer {
	names := map[string]bool{}
	for n := range configured {
		names[n] = true
	}
	if p.names != nil {
		for _, n := range p.names(ctx) {
			names[n] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	nm := namer{agent: map[uint32]string{}, foreign: map[uint32]string{}, configured: configured}
	for _, n := range sorted {
		md, ok := p.ifaces(ctx, n)
		if !ok {
			continue
		}
		into := nm.agent
		if md.Foreign {
			into = nm.foreign
		}
		if other, dup := into[md.SwIfIndex]; dup {
			p.log.Warn("retrieve: two interfaces claim one sw_if_index", "interfaces", []string{other, n}, "sw_if_index", md.SwIfIndex)
			continue
		}
		into[md.SwIfIndex] = n
	}
	return nm
}

// name returns the logical name of sw, if the namer maps it.
func (nm namer) name(sw uint32) (string, bool) {
	if n, ok := nm.agent[sw]; ok {
		return n, true
	}
	n, ok := nm.foreign[sw]
	return n, ok && nm.configured[n]
}

// swIfIndex resolves an interface of a value, with an error for values
// whose dependency should have prevented a missing one.
func (p *Plugin) swIfIndex(ctx context.Context, name string) (uint32, error) {
	md, ok := p.ifaces(ctx, name)
	if !ok {
		return 0, &missingInterfaceError{name: name}
	}
	return md.SwIfIndex, nil
}

type missingInterfaceError struct{ name string }

func (e *missingInterfaceError) Error() string {
	return "interface " + e.name + " has no sw_if_index in the VPP connected now (no metadata of " +
		ifplugin.InterfaceDescriptorName + ", or that of a VPP that has restarted since)"
}

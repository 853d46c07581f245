package aclplugin

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// Descriptor names.
const (
	ACLDescriptorName          = "vpp-acl"
	ACLInterfaceDescriptorName = "vpp-acl-interface"
)

// AreaName is the vppconn area of the plugin's messages (Area): VPP's acl
// plugin.
const AreaName = vppcalls.AreaName

// The directions of an interface assignment, as its key names them.
const (
	Ingress = "ingress"
	Egress  = "egress"
)

// aclInterfaceKeyPrefix starts the keys of the interface assignments.
const aclInterfaceKeyPrefix = "vpp/acl/"

// ACLInterfaceKey is the key of the assignment of an ACL to an interface in
// a direction (Ingress or Egress), derived from the ACL:
// vpp/acl/<acl>/interface/<ingress|egress>/<iface> (the original agent's).
func ACLInterfaceKey(acl, direction, iface string) string {
	return aclInterfaceKeyPrefix + acl + "/interface/" + direction + "/" + iface
}

func direction(egress bool) string {
	if egress {
		return Egress
	}
	return Ingress
}

// parseACLInterfaceKey returns the ACL of an assignment key, given the
// direction and interface (names may contain "/", so the key is cut at both
// ends).
func parseACLInterfaceKey(key, dir, iface string) (string, bool) {
	rest, ok := strings.CutPrefix(key, aclInterfaceKeyPrefix)
	if !ok {
		return "", false
	}
	acl, ok := strings.CutSuffix(rest, "/interface/"+dir+"/"+iface)
	return acl, ok && acl != ""
}

// InterfaceLookup finds the VPP interface of a logical interface name
// (ifplugin.SchedulerInterfaces reads the interface descriptor's metadata).
type InterfaceLookup = ifplugin.InterfaceLookup

// Plugin holds the ACL and interface assignment descriptors. Its state is
// the metadata map the scheduler writes (the index of each ACL).
type Plugin struct {
	h      vppcalls.Handler
	ifaces InterfaceLookup
	names  func(ctx context.Context) []string
	log    *slog.Logger

	mu      sync.Mutex
	aclMeta *api.MemMetadataMap // the ACL descriptor's, once registered
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
	return &Plugin{h: h, ifaces: ifaces, log: log.With("plugin", "vpp-acl")}
}

// SetInterfaceLister lets the Retrieves map every configured interface
// (ifplugin.SchedulerInterfaceNames) back from its sw_if_index, not only
// those the expected ACLs name, so that an assignment of the agent's that
// the NB dropped while the agent was away is found (and removed by a full
// resync). Call it before registering the descriptors.
func (p *Plugin) SetInterfaceLister(names func(ctx context.Context) []string) { p.names = names }

// Area returns the messages the plugin sends, to register with
// vppconn.Manager.AddArea before Run. It is optional: a VPP without the acl
// plugin is ready, and the ACL values fail naming the messages it lacks.
func (p *Plugin) Area() vppconn.Area { return vppcalls.Area() }

// Descriptors returns the ACL descriptor and the interface assignment
// descriptor, to register after the VPP interface descriptor.
func (p *Plugin) Descriptors() []*api.KVDescriptor {
	return []*api.KVDescriptor{p.aclDescriptor().KVDescriptor(), p.aclInterfaceDescriptor().KVDescriptor()}
}

// ACLIndex returns the VPP index of an ACL the scheduler holds as created,
// and whether it is a MAC-IP ACL (from the descriptor's metadata map).
func (p *Plugin) ACLIndex(name string) (index uint32, macip, ok bool) {
	md, ok := p.aclMetadata(name)
	if !ok {
		return 0, false, false
	}
	return md.Index, md.MACIP, true
}

func (p *Plugin) aclMetadata(name string) (*ACLMetadata, bool) {
	mm := p.metadata()
	if mm == nil {
		return nil, false
	}
	v, ok := mm.GetValue(name)
	if !ok {
		return nil, false
	}
	md, ok := v.(*ACLMetadata)
	return md, ok && md != nil
}

func (p *Plugin) metadata() *api.MemMetadataMap {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.aclMeta
}

// ours is the ACLs of the metadata map, by kind and index.
type ours struct {
	ip, macip map[uint32]string
	md        map[string]*ACLMetadata
}

func (p *Plugin) ours() ours {
	o := ours{ip: map[uint32]string{}, macip: map[uint32]string{}, md: map[string]*ACLMetadata{}}
	mm := p.metadata()
	if mm == nil {
		return o
	}
	for _, name := range mm.ListLabels() {
		v, _ := mm.GetValue(name)
		md, ok := v.(*ACLMetadata)
		if !ok || md == nil {
			continue
		}
		o.md[name] = md
		if md.MACIP {
			o.macip[md.Index] = name
		} else {
			o.ip[md.Index] = name
		}
	}
	return o
}

func (p *Plugin) newMetadataMap() api.MetadataMapRW {
	mm := api.NewMetadataMap()
	p.mu.Lock()
	p.aclMeta = mm
	p.mu.Unlock()
	return mm
}

// isRetriable is the IsRetriableFailure of both descriptors: a VPP that
// lacks the acl plugin stays so until another VPP connects (the resync
// after the connect applies the values again); everything else may pass.
func isRetriable(err error) bool {
	var ie *vppconn.IncompatibleError
	return !errors.As(err, &ie)
}

// namer maps sw_if_indexes back to logical names. The agent's interfaces
// (every interface of the lister that is not foreign, and the non-foreign
// interfaces the ACLs name) are named everywhere. A foreign (OBTAINED)
// interface is named only for an ACL whose value names it: an assignment
// someone else made on it is left alone.
type namer struct {
	agent   map[uint32]string
	foreign map[uint32]string
}

// newNamer resolves the interfaces of names and of the lister; names
// without metadata are left out.
func (p *Plugin) newNamer(ctx context.Context, names map[string]bool) namer {
	all := map[string]bool{}
	for n := range names {
		all[n] = true
	}
	if p.names != nil {
		for _, n := range p.names(ctx) {
			all[n] = true
		}
	}
	sorted := make([]string, 0, len(all))
	for n := range all {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	nm := namer{agent: map[uint32]string{}, foreign: map[uint32]string{}}
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

// name returns the logical name of sw for an ACL whose value names the
// interfaces named (nil: none).
func (nm namer) name(sw uint32, named func(iface string) bool) (string, bool) {
	if n, ok := nm.agent[sw]; ok {
		return n, true
	}
	n, ok := nm.foreign[sw]
	return n, ok && named != nil && named(n)
}

package l3plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sort"
	"sync/atomic"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
)

// Descriptor names.
const (
	RouteDescriptorName = "linux-route"
	ARPDescriptorName   = "linux-arp"
)

// RouteProtocol marks the routes the agent installs (rtm_protocol, shown by
// `ip route` as "proto 181"). 181 (0xb5) is neither in the kernel's
// include/uapi/linux/rtnetlink.h nor in iproute2's rt_protos (bgp, isis,
// ospf, rip are 186-189, eigrp 192). Routes with another protocol are
// foreign: Retrieve does not report them, and neither Update nor Delete can
// touch them (the kernel matches the protocol on delete).
const RouteProtocol = netlink.RouteProtocol(0xb5)

// linkLocalRoutePrefix starts the keys of the link-local-route properties.
const linkLocalRoutePrefix = "linux/link-local-route/"

// LinkLocalRouteKey is the key of the property derived from a link-local
// route (no gateway, scope LINK or left to the kernel):
// linux/link-local-route/<iface>/dest-address/<dst>, dst being the masked
// destination network (ip/len). A gateway inside dst is reachable through
// iface.
func LinkLocalRouteKey(iface, dst string) string {
	return linkLocalRouteKeyPrefix(iface) + dst
}

func linkLocalRouteKeyPrefix(iface string) string {
	return linkLocalRoutePrefix + iface + "/dest-address/"
}

// InterfaceLookup finds the kernel link of a logical Linux interface (the
// daemon passes a function reading the scheduler's metadata map of
// ifplugin.InterfaceDescriptorName; see SchedulerInterfaces). ctx is the
// context of the descriptor callback that asks.
type InterfaceLookup func(ctx context.Context, name string) (ifplugin.Metadata, bool)

// MetadataSource is the part of the scheduler that SchedulerInterfaces needs.
type MetadataSource interface {
	GetMetadataMap(descriptor string) api.MetadataMap
}

// interfaceMetadata returns the metadata map of
// ifplugin.InterfaceDescriptorName: through the read view of the descriptor
// callback whose context ctx is (a callback never calls the scheduler, and
// the view shows the map as the running transaction has it so far), and
// from s for a caller that is not a callback (a test or a tool calling a
// callback directly with a context of its own).
func interfaceMetadata(ctx context.Context, s MetadataSource) api.MetadataMap {
	if api.InCallback(ctx) {
		return api.ViewOf(ctx).GetMetadataMap(ifplugin.InterfaceDescriptorName)
	}
	return s.GetMetadataMap(ifplugin.InterfaceDescriptorName)
}

// SchedulerInterfaces returns an InterfaceLookup reading the metadata map of
// ifplugin.InterfaceDescriptorName (ifplugin.Metadata or
// *ifplugin.Metadata): the one of the scheduler running the callback
// (api.ViewOf), else the one of s. The map is looked up at each call, so
// the lookup may be built before the interface descriptor is registered.
func SchedulerInterfaces(s MetadataSource) InterfaceLookup {
	return func(ctx context.Context, name string) (ifplugin.Metadata, bool) {
		m := interfaceMetadata(ctx, s)
		if m == nil {
			return ifplugin.Metadata{}, false
		}
		v, ok := m.GetValue(name)
		if !ok {
			return ifplugin.Metadata{}, false
		}
		switch md := v.(type) {
		case ifplugin.Metadata:
			return md, true
		case *ifplugin.Metadata:
			if md != nil {
				return *md, true
			}
		}
		return ifplugin.Metadata{}, false
	}
}

// SchedulerInterfaceNames returns a lister of the logical names of the
// interfaces in the metadata map of ifplugin.InterfaceDescriptorName (read
// as SchedulerInterfaces reads it), for SetInterfaceLister.
func SchedulerInterfaceNames(s MetadataSource) func(ctx context.Context) []string {
	return func(ctx context.Context) []string {
		if m := interfaceMetadata(ctx, s); m != nil {
			return m.ListLabels()
		}
		return nil
	}
}

// Placement is the metadata of a route or ARP entry: where the agent put it
// (the namespace and the ifindex of its link), so that it is deleted where it
// is even if the interface has changed meanwhile.
type Placement struct {
	Namespace nsplugin.Ref
	LinkIndex int
	// Applied is the object as the agent made it (or Retrieve found it):
	// the drift watcher tells the echo of the agent's own change from
	// drift with it (see drift.go). Zero: unknown.
	Applied Applied
	// target is what the drift index finds the value by on its link: the
	// masked destination of a route, the IP of an ARP entry (addrTarget).
	// Set by the descriptors; invalid: worked out from the key.
	target netip.Prefix
}

// Plugin holds the Linux route and ARP descriptors. It keeps no state of its
// own: the scheduler keeps the values (and their metadata maps, which the
// plugin builds), the kernel the configuration.
type Plugin struct {
	ns     *nsplugin.Manager
	ifaces InterfaceLookup
	names  func(ctx context.Context) []string
	log    *slog.Logger
	// routes and arps are the metadata maps of the descriptors (made by
	// the scheduler at registration), read by the drift methods.
	routes, arps atomic.Pointer[placementIndex]
	// pool holds one netlink socket per namespace for the requests of
	// Create, Update, Delete and Batch (pipelined).
	pool *nlbatch.Pool
	// adoptOriginal: Create takes over the route the original agent made
	// for its value (SetAdoptOriginalRoutes; on by default).
	adoptOriginal bool
}

// New returns the plugin. ns gives the netlink handle of each namespace,
// ifaces the link of each logical interface.
func New(ns *nsplugin.Manager, ifaces InterfaceLookup, log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.Default()
	}
	return &Plugin{ns: ns, ifaces: ifaces, log: log.With("plugin", "linux-l3"), pool: nlbatch.NewPool(ns), adoptOriginal: true}
}

// SetInterfaceLister lets Retrieve also look at the interfaces that no
// expected (correlate) value mentions: names lists the logical names of every
// configured interface (SchedulerInterfaceNames), given the context of the
// Retrieve that asks. Without it, a route or ARP
// entry of ours on an interface that none of the expected values uses is not
// found, so a full resync after a restart cannot remove one the NB dropped
// while the agent was away. Call it before registering the descriptors.
func (p *Plugin) SetInterfaceLister(names func(ctx context.Context) []string) { p.names = names }

// Descriptors returns the route and ARP descriptors, to register after the
// interface descriptor.
func (p *Plugin) Descriptors() []*api.KVDescriptor {
	routes, arps := p.routeDescriptor().KVDescriptor(), p.arpDescriptor().KVDescriptor()
	routes.Batch, arps.Batch = p.routeBatch, p.arpBatch
	return []*api.KVDescriptor{routes, arps}
}

// --- shared helpers ---------------------------------------------------------

// maxDumpAttempts bounds the dumps of one Retrieve that the kernel
// interrupts (NLM_F_DUMP_INTR: the table changed during the dump).
const maxDumpAttempts = 5

// dump runs a netlink dump again while the kernel reports it interrupted; a
// partial dump is never returned.
func dump[T any](what string, f func() ([]T, error)) ([]T, error) {
	for attempt := 1; ; attempt++ {
		out, err := f()
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return nil, fmt.Errorf("dumping %s: %w", what, err)
		}
		if attempt == maxDumpAttempts {
			return nil, fmt.Errorf("dumping %s: interrupted %d times in a row, not taking a partial dump as the truth: %w", what, attempt, err)
		}
	}
}

// invalid turns a models validation or key error into an InvalidValueError
// naming the fields.
func invalid(err error) error {
	var ve *models.ValidationError
	if errors.As(err, &ve) {
		return api.NewInvalidValueError(err, ve.FieldNames()...)
	}
	return api.NewInvalidValueError(err)
}

// isGone tells whether an error of a delete means the object is not there
// (any more): no such route or neighbour, no such link, no such namespace.
func isGone(err error) bool {
	return errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.ENOENT) ||
		errors.Is(err, syscall.ENODEV) || errors.Is(err, os.ErrNotExist)
}

// isRetriable is the IsRetriableFailure of both descriptors: the kernel's
// EINVAL means it rejects the request as such (e.g. a host-scope route with a
// gateway), which no repetition fixes; anything else (missing link or
// namespace, unreachable gateway, a conflicting route that may go away) may.
func isRetriable(err error) bool {
	return !errors.Is(err, syscall.EINVAL)
}

// nsIndex maps the links of one namespace to logical interface names.
type nsIndex map[int]string

// interfacesByNamespace resolves the named interfaces (and the lister's, when
// set) to their links, grouped by namespace (the agent's own included when an
// interface is there: a namespace where no known interface lives has no route
// that could be mapped back to a logical name, so it is not dumped).
// Interfaces without metadata are left out.
func (p *Plugin) interfacesByNamespace(ctx context.Context, names map[string]struct{}) map[nsplugin.Ref]nsIndex {
	if p.names != nil {
		for _, n := range p.names(ctx) {
			names[n] = struct{}{}
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	out := map[nsplugin.Ref]nsIndex{}
	for _, name := range sorted {
		md, ok := p.ifaces(ctx, name)
		if !ok || md.Index <= 0 {
			p.log.Debug("retrieve: interface has no link (yet), its routes and ARP entries are not looked for", "interface", name)
			continue
		}
		idx := out[md.Namespace]
		if idx == nil {
			idx = nsIndex{}
			out[md.Namespace] = idx
		}
		if other, dup := idx[md.Index]; dup {
			p.log.Warn("retrieve: two interfaces claim the same link", "interfaces", []string{other, name}, "namespace", md.Namespace.String(), "index", md.Index)
			continue
		}
		idx[md.Index] = name
	}
	return out
}

// sortedRefs returns the namespaces in a stable order (the agent's first).
func sortedRefs(m map[nsplugin.Ref]nsIndex) []nsplugin.Ref {
	refs := make([]nsplugin.Ref, 0, len(m))
	for r := range m {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Type != refs[j].Type {
			return refs[i].Type < refs[j].Type
		}
		return refs[i].Reference < refs[j].Reference
	})
	return refs
}

// handle returns the netlink handle of a namespace that must exist.
func (p *Plugin) handle(ref nsplugin.Ref) (*netlink.Handle, error) {
	return p.ns.Handle(ref, false)
}

// placement returns where a value was put: its metadata, else where its
// interface is now (ok false when neither is known).
func (p *Plugin) placement(ctx context.Context, md *Placement, iface string) (Placement, bool) {
	if md != nil && md.LinkIndex > 0 {
		return *md, true
	}
	if imd, ok := p.ifaces(ctx, iface); ok && imd.Index > 0 {
		return Placement{Namespace: imd.Namespace, LinkIndex: imd.Index}, true
	}
	return Placement{}, false
}

// parseAddr parses an IP address; "" gives the zero Addr.
func parseAddr(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return a, err
	}
	return a.Unmap(), nil
}

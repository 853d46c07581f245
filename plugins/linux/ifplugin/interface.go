package ifplugin

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// Plugin holds the descriptors of Linux interfaces and their addresses.
type Plugin struct {
	ns  *nsplugin.Manager
	log *slog.Logger
	// kinds says which link kinds this kernel supports (probed once).
	kinds map[string]bool
	// hints: the namespace and host name of each interface as last
	// validated, so that a veth pair is created with both ends in place
	// and a link is never taken from an interface that still wants its
	// name (makeRoom).
	hintsMu sync.Mutex
	hints   map[string]hint
	// aliasPrefix marks the links of this agent (AliasPrefix, plus the
	// microservice label when set).
	aliasPrefix string
	// originalPrefix starts the aliases of the links the original agent
	// of the same label made (OriginalAliasPrefix and the label; "" without
	// a label), which are adopted (original.go).
	originalPrefix string
	// inherited: the interfaces adopted from the original agent whose
	// alias is not rewritten yet (inheritedLinks).
	inheritedMu sync.Mutex
	inherited   inheritedLinks
	// withoutVPP: the agent runs without VPP (SetVPPDisabled).
	withoutVPP bool
	// links is the metadata map of the interface descriptor, made by the
	// scheduler at registration.
	links atomic.Pointer[linkIndex]
	// pool holds one netlink socket per namespace for pipelined requests
	// (addresses, bulk link deletes).
	pool *nlbatch.Pool
}

// New returns the plugin. It probes which link kinds the kernel supports
// (dummy, vrf), so that values of an unsupported type are INVALID with a
// clear reason instead of failing at Create.
func New(ns *nsplugin.Manager, log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.Default()
	}
	return &Plugin{ns: ns, log: log, kinds: probeKinds(ns), hints: map[string]hint{}, aliasPrefix: AliasPrefix, inherited: inheritedLinks{}, pool: nlbatch.NewPool(ns)}
}

// SetLabel puts the agent's microservice label into the ownership mark
// ("netagent/<label>/<name>"), so that agents of different labels sharing
// a namespace never take each other's links. The label is also the one of
// the original agent (Ligato vpp-agent) whose links this agent adopts
// ("/vnf-agent/<label>/...", original.go). Call before registering.
func (p *Plugin) SetLabel(label string) {
	if label != "" {
		p.aliasPrefix = AliasPrefix + label + "/"
		p.originalPrefix = OriginalAliasPrefix + label + "/"
	}
}

// SetVPPDisabled tells the plugin that the agent runs without VPP, so that
// a TAP_TO_VPP value, which waits for its VPP TAP, says in its PENDING
// reason that the TAP never comes. Call before registering.
func (p *Plugin) SetVPPDisabled(disabled bool) { p.withoutVPP = disabled }

// Close closes the netlink sockets the plugin keeps (one per namespace)
// for its pipelined requests. Call it after the scheduler stopped.
func (p *Plugin) Close() { p.pool.Close() }

func (p *Plugin) alias(name string) string { return p.aliasPrefix + name }

// ownName returns the logical name in the alias of a link when the alias
// marks the link as this agent's: exactly its prefix and a name without
// "/" (logical names have none, models.LinuxInterface). So an agent
// without a label ("netagent/<name>") never takes the links of a labelled
// one ("netagent/vpp1/<name>"), nor an agent labelled "vpp" those of
// "vpp/x".
func (p *Plugin) ownName(alias string) (string, bool) {
	name, ok := strings.CutPrefix(alias, p.aliasPrefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// Descriptors returns the interface and address descriptors.
func (p *Plugin) Descriptors() []*api.KVDescriptor {
	return []*api.KVDescriptor{p.interfaceDescriptor(), p.addressDescriptor()}
}

func (p *Plugin) interfaceDescriptor() *api.KVDescriptor {
	d := &api.TypedDescriptor[*linuxif.Interface, *Metadata]{
		Name:        InterfaceDescriptorName,
		NBKeyPrefix: models.LinuxInterface.KeyPrefix,
		KeySelector: func(key string) bool {
			return strings.HasPrefix(key, models.LinuxInterface.KeyPrefix)
		},
		KeyLabel: func(key string) string {
			return strings.TrimPrefix(key, models.LinuxInterface.KeyPrefix)
		},
		WithMetadata: true,
		MetadataMapFactory: func() api.MetadataMapRW {
			m := newLinkIndex()
			p.links.Store(m)
			return m
		},
		Validate:           p.validate,
		Create:             p.create,
		Delete:             p.delete,
		Update:             p.update,
		UpdateWithRecreate: p.needsRecreate,
		Retrieve:           p.retrieve,
		DerivedValues:      p.derivedValues,
		Dependencies:       p.dependencies,
		Unique:             p.uniqueNames,
		ValueComparator: func(key string, a, b *linuxif.Interface) bool {
			if p.isInherited(a.GetName()) {
				// Its link still carries the original agent's alias: an
				// Update rewrites it (inheritedLinks).
				return false
			}
			return proto.Equal(normalized(a), normalized(b))
		},
	}
	kv := d.KVDescriptor()
	kv.Batch = p.interfaceBatch
	return kv
}

// defaultMTU is the MTU the kernel gives a new veth or dummy link.
const defaultMTU = 1500

// managedMTU is the MTU the agent keeps a link at (0: it leaves the MTU
// alone). An unset mtu means the kernel's default on a link the agent
// creates (VETH, DUMMY): the value describes the whole link, so a resync
// sets it back after a change by hand, and unsetting a configured mtu
// returns the link to 1500. On a link someone else made (EXISTING,
// LOOPBACK, TAP_TO_VPP) an unset mtu leaves the MTU as it is.
func managedMTU(v *linuxif.Interface) uint32 {
	if v.GetMtu() != 0 {
		return v.GetMtu()
	}
	if v.GetType() == linuxif.Interface_VETH || v.GetType() == linuxif.Interface_DUMMY {
		return defaultMTU
	}
	return 0
}

// normalized drops what does not change the kernel state (the order of
// addresses, a host name equal to the logical name or, for LOOPBACK, lo,
// an mtu equal to the default of a link the agent creates).
func normalized(i *linuxif.Interface) *linuxif.Interface {
	c := proto.Clone(i).(*linuxif.Interface)
	if c.GetHostIfName() == c.GetName() || (c.GetType() == linuxif.Interface_LOOPBACK && c.GetHostIfName() == "lo") {
		c.HostIfName = ""
	}
	if c.GetMtu() == defaultMTU && managedMTU(&linuxif.Interface{Type: c.GetType()}) == defaultMTU {
		c.Mtu = 0
	}
	c.IpAddresses = slices.Clone(c.IpAddresses)
	slices.Sort(c.IpAddresses)
	if c.Namespace != nil && c.Namespace.GetType() == 0 && c.Namespace.GetReference() == "" {
		c.Namespace = nil
	}
	return c
}

func (p *Plugin) validate(key string, v *linuxif.Interface) error {
	if err := models.LinuxInterface.CheckKey(key, v); err != nil {
		var ve *models.ValidationError
		if errors.As(err, &ve) {
			return &api.InvalidValueError{Err: err, InvalidFields: ve.FieldNames()}
		}
		return &api.InvalidValueError{Err: err, InvalidFields: []string{"name"}}
	}
	if err := nsplugin.Check(nsplugin.RefOf(v.GetNamespace())); err != nil {
		return &api.InvalidValueError{Err: fmt.Errorf("namespace: %w", err), InvalidFields: []string{"namespace"}}
	}
	switch v.GetType() {
	case linuxif.Interface_VETH, linuxif.Interface_TAP_TO_VPP, linuxif.Interface_LOOPBACK, linuxif.Interface_EXISTING:
	case linuxif.Interface_DUMMY:
		if !p.kinds["dummy"] {
			return &api.InvalidValueError{Err: errors.New("type DUMMY: this kernel has no dummy links"), InvalidFields: []string{"type"}}
		}
	case linuxif.Interface_VRF_DEVICE:
		return &api.InvalidValueError{Err: errors.New("type VRF_DEVICE is not supported yet (the model has no routing table field)"), InvalidFields: []string{"type"}}
	default:
		return &api.InvalidValueError{Err: fmt.Errorf("type %s is not supported: set VETH, TAP_TO_VPP, LOOPBACK, EXISTING or DUMMY", v.GetType()), InvalidFields: []string{"type"}}
	}
	if mtu := v.GetMtu(); mtu != 0 && (mtu < 68 || mtu > 65535) {
		return &api.InvalidValueError{Err: fmt.Errorf("mtu %d is out of range (68 to 65535, or 0 for the default)", mtu), InvalidFields: []string{"mtu"}}
	}
	if v.GetVrfMasterInterface() != "" {
		return &api.InvalidValueError{Err: errors.New("vrf_master_interface is not supported yet"), InvalidFields: []string{"vrf_master_interface"}}
	}
	if veth := v.GetVeth(); veth != nil && (veth.GetRxChecksumOffloading() != 0 || veth.GetTxChecksumOffloading() != 0) {
		return &api.InvalidValueError{Err: errors.New("checksum offloading settings are not supported yet"), InvalidFields: []string{"veth.rx_checksum_offloading", "veth.tx_checksum_offloading"}}
	}
	if v.GetType() == linuxif.Interface_LOOPBACK && HostName(v) != "lo" {
		return &api.InvalidValueError{Err: fmt.Errorf("a LOOPBACK interface is the namespace's lo: host_if_name must be empty or lo, not %q", v.GetHostIfName()), InvalidFields: []string{"host_if_name"}}
	}
	if v.GetType() == linuxif.Interface_LOOPBACK && len(v.GetPhysAddress()) > 0 {
		return &api.InvalidValueError{Err: errors.New("lo has no MAC address"), InvalidFields: []string{"phys_address"}}
	}
	if err := p.validateLoopback(v); err != nil {
		return err
	}
	p.hintsMu.Lock()
	p.hints[v.GetName()] = hint{ref: nsplugin.RefOf(v.GetNamespace()), host: HostName(v)}
	p.hintsMu.Unlock()
	return nil
}

// hint is where an interface is wanted, as last validated.
type hint struct {
	ref  nsplugin.Ref
	host string
}

// HostLinkName is the unique name (api.UniqueName) of the link host in a
// namespace: "linux link <host> in <namespace>", the namespace as the
// errors of the interface values name it ("default namespace" for the
// agent's own, however a value leaves it unset; "netns app"; "namespace of
// PID 1234"). Other descriptors whose values claim a Linux link by name use
// it too.
func HostLinkName(host string, ns *linuxns.NetNamespace) string {
	return "linux link " + host + " in " + nsplugin.RefOf(ns).String()
}

// uniqueNames: a link is one value's. A value uses the name of its link in
// its namespace (host_if_name, else its default: the logical name, lo for
// a LOOPBACK), whatever its type: two values making a link of one name, or
// one making it and another adopting it (EXISTING), or two adopting it,
// would fight over it, and the link of the one deleted first would vanish
// under the other (or never exist: the kernel refuses the second link).
// A TAP_TO_VPP value in another namespace uses its name in the agent's
// namespace too: VPP makes the link there under that name, and Delete
// gives it back there.
func (p *Plugin) uniqueNames(_ string, v *linuxif.Interface) []api.UniqueName {
	field := "host_if_name"
	switch {
	case v.GetHostIfName() != "":
	case v.GetType() == linuxif.Interface_LOOPBACK:
		field = "type" // the namespace's lo
	default:
		field = "name" // the host name defaults to it
	}
	names := []api.UniqueName{{Field: field, Name: HostLinkName(HostName(v), v.GetNamespace())}}
	if v.GetType() == linuxif.Interface_TAP_TO_VPP && !nsplugin.RefOf(v.GetNamespace()).IsDefault() {
		names = append(names, api.UniqueName{Field: field, Name: HostLinkName(HostName(v), nil)})
	}
	return names
}

// kernelLoopbackAddrs are the addresses the kernel gives every loopback.
var kernelLoopbackAddrs = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8"), netip.MustParsePrefix("::1/128")}

// validateLoopback keeps the agent's own control plane reachable: it
// listens on the loopback of its network namespace (REST, gRPC, embedded
// etcd on 127.0.0.1). A value for that lo (LOOPBACK, or EXISTING on lo)
// with a namespace that is the agent's own (unset, or a reference that
// resolves to it) must keep it up and must not list the kernel's own
// loopback addresses (deleting the value would remove them). A link of
// another type cannot be a namespace's lo. The loopback of another
// namespace may be set down.
func (p *Plugin) validateLoopback(v *linuxif.Interface) error {
	isLo := v.GetType() == linuxif.Interface_LOOPBACK || (v.GetType() == linuxif.Interface_EXISTING && HostName(v) == "lo")
	if !isLo {
		if HostName(v) == "lo" {
			return &api.InvalidValueError{Err: fmt.Errorf("host_if_name: lo is the loopback every namespace already has; a %s interface cannot be it (use type LOOPBACK)", v.GetType()), InvalidFields: []string{"host_if_name"}}
		}
		return nil
	}
	if !p.ns.IsOwn(nsplugin.RefOf(v.GetNamespace())) {
		return nil
	}
	if !v.GetEnabled() {
		return &api.InvalidValueError{Err: errors.New("enabled: false (or unset) would take down the loopback of the agent's own network namespace (127.0.0.1: its API and etcd); set enabled: true, or a namespace that is not the agent's"), InvalidFields: []string{"enabled"}}
	}
	if v.GetLinkOnly() {
		return nil
	}
	for i, cidr := range v.GetIpAddresses() {
		if a, err := netip.ParsePrefix(cidr); err == nil && slices.Contains(kernelLoopbackAddrs, a) {
			field := fmt.Sprintf("ip_addresses[%d]", i)
			return &api.InvalidValueError{Err: fmt.Errorf("%s: %s is the kernel's own address of the loopback of the agent's network namespace, which the agent's API and etcd listen on: deleting the value would remove it; leave it out (lo always has it)", field, cidr), InvalidFields: []string{field}}
		}
	}
	return nil
}

func (p *Plugin) dependencies(key string, v *linuxif.Interface) []api.Dependency {
	var deps []api.Dependency
	switch v.GetType() {
	case linuxif.Interface_VETH:
		// The two ends depend on each other: created together.
		deps = append(deps, api.Dependency{Label: "veth peer " + v.GetVeth().GetPeerIfName(), Key: InterfaceKey(v.GetVeth().GetPeerIfName())})
	case linuxif.Interface_TAP_TO_VPP:
		label := "VPP TAP " + v.GetTap().GetVppTapIfName()
		if p.withoutVPP {
			label += " (never: this agent runs without VPP, vpp.disabled)"
		}
		deps = append(deps, api.Dependency{Label: label, Key: models.VPPInterface.KeyPrefix + v.GetTap().GetVppTapIfName()})
	case linuxif.Interface_EXISTING:
		if nsplugin.RefOf(v.GetNamespace()).IsDefault() {
			deps = append(deps, api.Dependency{Label: "existing link " + HostName(v), Key: HostNameKey(HostName(v))})
		}
	}
	return deps
}

func (p *Plugin) derivedValues(key string, v *linuxif.Interface) []api.KeyValuePair {
	var kvs []api.KeyValuePair
	if !v.GetLinkOnly() {
		for _, cidr := range v.GetIpAddresses() {
			kvs = append(kvs, api.KeyValuePair{Key: AddressKey(v.GetName(), cidr), Value: &linuxif.Interface{
				Name: v.GetName(), HostIfName: HostName(v), Namespace: v.GetNamespace(), IpAddresses: []string{cidr},
			}})
		}
	}
	state := "DOWN"
	if v.GetEnabled() {
		state = "UP"
	}
	kvs = append(kvs, api.KeyValuePair{Key: StateKey(v.GetName(), v.GetEnabled()), Value: wrapperspb.String(state)})
	return kvs
}

// needsRecreate: what cannot change on a link in place.
// An adopted link (EXISTING) is found by its kernel name: a new name is
// another link to adopt, never a rename of the old one.
func (p *Plugin) needsRecreate(key string, old, new *linuxif.Interface, _ *Metadata) bool {
	return old.GetType() != new.GetType() ||
		(old.GetType() == linuxif.Interface_EXISTING && HostName(old) != HostName(new)) ||
		!proto.Equal(nsplugin.RefOf(old.GetNamespace()).Proto(), nsplugin.RefOf(new.GetNamespace()).Proto()) ||
		!proto.Equal(old.GetVeth(), new.GetVeth()) || !proto.Equal(old.GetTap(), new.GetTap())
}

// tempName is the name a veth end has from its creation (by either end) to
// its own configuration: derived from the logical name, at most 15 bytes.
func tempName(logical string) string {
	sum := sha1.Sum([]byte(logical))
	return "na" + hex.EncodeToString(sum[:])[:12]
}

// retriable marks errors worth a retry (the link may appear).
type linkMissingError struct{ what string }

func (e *linkMissingError) Error() string { return e.what }

// createsNamespace tells whether the value's named namespace is created
// when missing: not for an EXISTING link, which cannot be in a namespace
// that does not exist.
func createsNamespace(v *linuxif.Interface) bool {
	return v.GetType() != linuxif.Interface_EXISTING
}

func (p *Plugin) create(_ context.Context, key string, v *linuxif.Interface) (*Metadata, error) {
	ref := nsplugin.RefOf(v.GetNamespace())
	h, err := p.ns.Handle(ref, createsNamespace(v))
	if errors.Is(err, errNotExist) && !createsNamespace(v) {
		return nil, &linkMissingError{fmt.Sprintf("EXISTING interface %s: the %s does not exist (the agent does not create the namespace of a link it did not create; make both, a retry or resync then adopts the link)", v.GetName(), ref)}
	}
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	host := HostName(v)
	var link netlink.Link
	switch v.GetType() {
	case linuxif.Interface_VETH:
		link, err = p.vethEnd(v, ref)
	case linuxif.Interface_DUMMY:
		link, err = p.dummy(h, v, ref)
	case linuxif.Interface_TAP_TO_VPP:
		link, err = p.adoptTap(v, ref)
	case linuxif.Interface_LOOPBACK:
		link, err = h.LinkByName("lo")
	case linuxif.Interface_EXISTING:
		link, err = h.LinkByName(host)
		if isNotFound(err) {
			return nil, &linkMissingError{fmt.Sprintf("EXISTING interface %s: no link %q in the %s", v.GetName(), host, ref)}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	if err := p.configure(ref, h, link, nil, v); err != nil {
		return nil, fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	p.setInherited(v.GetName(), false)
	return p.metadata(h, v, ref)
}

// release removes a named namespace the agent created when the interface
// name, being deleted, is the last of the agent's interfaces there, unless
// something else uses it (a link but lo, a process): then it is kept, and
// the log says why. The agent's interfaces are those the scheduler holds as
// applied, with their metadata (the interface descriptor's metadata map):
// created by this run or found by Retrieve (after a restart too).
// Descriptor calls are never concurrent, so no other interface is made
// there meanwhile.
func (p *Plugin) release(ref nsplugin.Ref, names ...string) {
	if ref.Type != linuxns.NetNamespace_NSID {
		return
	}
	if links := p.links.Load(); links != nil && links.othersIn(ref, names...) > 0 {
		return
	}
	var inUse *nsplugin.InUseError
	switch err := p.ns.RemoveIfCreated(ref.Reference); {
	case errors.As(err, &inUse):
		p.log.Info("the agent's last interface left a namespace it created, which is kept: something else uses it",
			"netns", ref.Reference, "links", inUse.Links, "pids", inUse.PIDs)
	case err != nil:
		p.log.Warn("removing a namespace the agent created", "netns", ref.Reference, "error", err)
	}
}

func (p *Plugin) metadata(h *netlink.Handle, v *linuxif.Interface, ref nsplugin.Ref) (*Metadata, error) {
	link, err := h.LinkByName(HostName(v))
	if err != nil {
		return nil, fmt.Errorf("interface %s: reading %s back: %w", v.GetName(), HostName(v), err)
	}
	return &Metadata{Index: link.Attrs().Index, HostName: HostName(v), Namespace: ref, Type: v.GetType(), Value: proto.Clone(v).(*linuxif.Interface)}, nil
}

// vethEnd returns this end of a veth pair in its namespace, named and
// marked. Moving a link between namespaces costs the kernel about 20 ms, so
// the pair is created with each end directly in its namespace: this end
// under its final name, the peer under a temporary name that its own Create
// replaces (a cheap rename). The peer's namespace comes from the values
// validated so far (a hint); if the peer is not where the hint says, its
// Create finds it under its temporary name in the agent's namespace or its
// peer's and moves it.
func (p *Plugin) vethEnd(v *linuxif.Interface, ref nsplugin.Ref) (netlink.Link, error) {
	h, err := p.ns.Handle(ref, true)
	if err != nil {
		return nil, err
	}
	host, alias := HostName(v), p.alias(v.GetName())
	if err := p.makeRoom(h, ref, host, v); err != nil {
		return nil, err
	}
	if link, err := h.LinkByName(host); err == nil {
		if link.Type() != "veth" || (link.Attrs().Alias != alias && !p.originals(link, v)) {
			return nil, p.notThisLink(link, v, ref, "veth end")
		}
		return link, nil // configure marks one the original agent made
	}
	tmp := tempName(v.GetName())
	peerName := v.GetVeth().GetPeerIfName()
	peerHint, hinted := p.hint(peerName)
	peerRef := peerHint.ref
	// Made by the peer: under the temporary name, here or elsewhere.
	for _, where := range distinct(ref, nsplugin.Ref{}, peerRef) {
		wh, err := p.ns.Handle(where, false)
		if err != nil {
			continue
		}
		link, err := wh.LinkByName(tmp)
		if err != nil {
			continue
		}
		if err := wh.LinkSetAlias(link, alias); err != nil {
			return nil, fmt.Errorf("marking %s: %w", tmp, err)
		}
		return p.moveAndRename(where, wh, link, ref, host)
	}
	// Neither end exists: make the pair, both ends under their temporary
	// names, mark them, and give this end its name. Whatever step fails,
	// what is left is found by the search above (this end's retry) and by
	// the peer's Create, and never takes this end's final name unmarked.
	if !hinted {
		peerRef = ref
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: tmp}, PeerName: tempName(peerName)}
	if peerRef != ref {
		fd, err := p.ns.Fd(peerRef, true)
		if err != nil {
			return nil, fmt.Errorf("namespace of the peer %s: %w", peerName, err)
		}
		veth.PeerNamespace = netlink.NsFd(fd)
	}
	if err := h.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("creating veth %s with peer %s in the %s: %w", tmp, veth.PeerName, peerRef, err)
	}
	link, err := h.LinkByName(tmp)
	if err != nil {
		return nil, err
	}
	if err := h.LinkSetAlias(link, alias); err != nil {
		return nil, fmt.Errorf("marking %s: %w", tmp, err)
	}
	// Mark the peer too: a failure before its own Create must not leave an
	// unmarked link behind.
	if ph, err := p.ns.Handle(peerRef, false); err == nil {
		if peer, err := ph.LinkByName(veth.PeerName); err == nil {
			_ = ph.LinkSetAlias(peer, p.alias(peerName))
		}
	}
	return renameLink(h, link, host)
}

// dummy returns the dummy link of the value, created marked (so that no
// failure leaves an unmarked link behind); a link of that name that is not
// this dummy (another kind, or not marked as this value's) is an error: the
// agent would otherwise take, and later delete, a link it does not own.
func (p *Plugin) dummy(h *netlink.Handle, v *linuxif.Interface, ref nsplugin.Ref) (netlink.Link, error) {
	host, alias := HostName(v), p.alias(v.GetName())
	if err := p.makeRoom(h, ref, host, v); err != nil {
		return nil, err
	}
	link, err := h.LinkByName(host)
	if err == nil {
		if link.Type() != "dummy" || (link.Attrs().Alias != alias && !p.originals(link, v)) {
			return nil, p.notThisLink(link, v, ref, "dummy")
		}
		return link, nil // configure marks one the original agent made
	}
	if !isNotFound(err) {
		return nil, err
	}
	if err := h.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: host, Alias: alias}}); err != nil {
		return nil, fmt.Errorf("creating dummy %s in the %s: %w", host, ref, err)
	}
	return h.LinkByName(host)
}

// distinct returns xs without repetitions, in their order.
func distinct[T comparable](xs ...T) []T {
	var out []T
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// renameLink gives a link of handle h a new name. Linux renames a link that
// is up as it is since 6.2; an older kernel refuses (EBUSY), and the link
// goes down for the rename (renameDown). A link that is down is renamed as
// it is.
func renameLink(h *netlink.Handle, link netlink.Link, host string) (netlink.Link, error) {
	name := link.Attrs().Name
	if name == host {
		return link, nil
	}
	err := h.LinkSetName(link, host)
	if errors.Is(err, syscall.EBUSY) && link.Attrs().Flags&net.FlagUp != 0 {
		err = renameDown(h, link, host)
	}
	if err != nil {
		return nil, fmt.Errorf("renaming %s to %s: %w", name, host, err)
	}
	return h.LinkByName(host)
}

// renameDown renames a link that is up by taking it down for the rename
// and up again. A link that goes down loses its routes and neighbours, and
// the routes and ARP entries configured on it would be gone while their
// values still said CONFIGURED: they are listed first and put back after
// (keptRoutes), as are the routes and permanent neighbours the kernel does
// not add by itself. The link is set up again even when the rename fails.
func renameDown(h *netlink.Handle, link netlink.Link, host string) error {
	kept, err := keepRoutes(h, link.Attrs().Index)
	if err != nil {
		return fmt.Errorf("listing the routes and neighbours of %s before taking it down for the rename: %w", link.Attrs().Name, err)
	}
	if err := h.LinkSetDown(link); err != nil {
		return err
	}
	renameErr := h.LinkSetName(link, host)
	if err := h.LinkSetUp(link); err != nil {
		return errors.Join(renameErr, fmt.Errorf("setting the link up again: %w", err))
	}
	return errors.Join(renameErr, kept.restore(h))
}

// keptRoutes are the routes and neighbours of a link that the kernel
// flushes when it goes down and does not add again when it comes up.
type keptRoutes struct {
	routes []netlink.Route
	neighs []netlink.Neigh
}

// keepRoutes lists what a link would lose by going down: its routes of
// every table but those the kernel makes itself (for its addresses, from
// router advertisements or redirects), which come back by themselves, and
// its permanent neighbours. Routes over several links (multipath) are not
// kept: the kernel keeps them while one of their links is up.
func keepRoutes(h *netlink.Handle, index int) (keptRoutes, error) {
	var kept keptRoutes
	routes, err := dump(func() ([]netlink.Route, error) {
		return h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{LinkIndex: index, Table: syscall.RT_TABLE_UNSPEC}, netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return kept, err
	}
	for _, r := range routes {
		switch r.Protocol {
		case syscall.RTPROT_KERNEL, syscall.RTPROT_RA, syscall.RTPROT_REDIRECT:
			continue
		}
		if r.LinkIndex == index && len(r.MultiPath) == 0 {
			kept.routes = append(kept.routes, r)
		}
	}
	// Routes without a gateway first: they may be what makes the gateway
	// of another reachable.
	slices.SortStableFunc(kept.routes, func(a, b netlink.Route) int {
		return cmpBool(a.Gw != nil, b.Gw != nil)
	})
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		neighs, err := dump(func() ([]netlink.Neigh, error) { return h.NeighList(index, family) })
		if err != nil {
			return kept, err
		}
		for _, n := range neighs {
			if n.State&netlink.NUD_PERMANENT != 0 && n.Flags&netlink.NTF_PROXY == 0 && len(n.HardwareAddr) > 0 {
				kept.neighs = append(kept.neighs, n)
			}
		}
	}
	return kept, nil
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// restore puts back what keepRoutes listed (one already there is fine) and
// reports what it could not.
func (k keptRoutes) restore(h *netlink.Handle) error {
	var errs []error
	for i := range k.routes {
		r := k.routes[i]
		if err := h.RouteAdd(&r); err != nil && !errors.Is(err, syscall.EEXIST) {
			errs = append(errs, fmt.Errorf("restoring route %s: %w", r.String(), err))
		}
	}
	for i := range k.neighs {
		n := k.neighs[i]
		if err := h.NeighSet(&n); err != nil {
			errs = append(errs, fmt.Errorf("restoring neighbour %s: %w", n.String(), err))
		}
	}
	return errors.Join(errs...)
}

// namespacesOf returns where an interface is (its metadata) and where the
// NB wants it (its value as last validated), when known.
func (p *Plugin) namespacesOf(name string) []nsplugin.Ref {
	var refs []nsplugin.Ref
	if links := p.links.Load(); links != nil {
		if md, ok := links.GetValue(name); ok {
			if m, ok := metadataOf(md); ok {
				refs = append(refs, m.Namespace)
			}
		}
	}
	if want, ok := p.hint(name); ok && !slices.Contains(refs, want.ref) {
		refs = append(refs, want.ref)
	}
	return refs
}

// hint returns where an interface is wanted, as last validated.
func (p *Plugin) hint(name string) (hint, bool) {
	p.hintsMu.Lock()
	defer p.hintsMu.Unlock()
	h, ok := p.hints[name]
	return h, ok
}

// anothers returns the logical name of the interface whose mark a link
// carries when it is another of the agent's interfaces than v.
func (p *Plugin) anothers(link netlink.Link, v *linuxif.Interface) (string, bool) {
	name, ok := p.owner(link)
	return name, ok && name != v.GetName()
}

// makeRoom frees the name host in namespace ref (handle h) for v when a
// link of another of the agent's interfaces has it. The scheduler gives a
// name to one value at a time (Unique), so that interface is handing the
// name over in this transaction (renamed, moved, re-created, deleted, or
// swapping names with v) and has not had its turn yet: its link is renamed
// to that interface's temporary name, where its own Update or Delete finds
// it. A link of an interface that still wants the name (the same
// namespace under another reference, which Unique cannot tell) is left
// alone: v cannot have it.
func (p *Plugin) makeRoom(h *netlink.Handle, ref nsplugin.Ref, host string, v *linuxif.Interface) error {
	link, err := h.LinkByName(host)
	if err != nil {
		return nil // free, or the next step fails with the reason
	}
	other, ok := p.anothers(link, v)
	if !ok {
		return nil
	}
	if want, ok := p.hint(other); ok && want.host == host && p.ns.Same(want.ref, ref) {
		return api.NonRetriable(fmt.Errorf("link %s in the %s is interface %s's, which is configured in this namespace too (%s): one link cannot be two values", host, ref, other, want.ref))
	}
	if _, err := renameLink(h, link, tempName(other)); err != nil {
		return fmt.Errorf("moving link %s of interface %s, which hands the name over, out of the way: %w", host, other, err)
	}
	p.log.Debug("link renamed out of the way of the interface that takes its name over",
		"link", host, "netns", ref.String(), "from", other, "to", v.GetName(), "renamed", tempName(other))
	return nil
}

// ownLink returns the link of v in a namespace (handle h): the first of
// names that is not another interface's link (found there under v's name
// or, for a link the agent owns, under v's temporary name, see makeRoom).
func (p *Plugin) ownLink(h *netlink.Handle, v *linuxif.Interface, names ...string) (netlink.Link, error) {
	return p.ownLinkBy(h.LinkByName, v, names...)
}

// ownLinkBy is ownLink with the links looked up by byName.
func (p *Plugin) ownLinkBy(byName func(string) (netlink.Link, error), v *linuxif.Interface, names ...string) (netlink.Link, error) {
	if owned(v) {
		names = append(names, tempName(v.GetName()))
	}
	var first error
	for _, name := range names {
		link, err := byName(name)
		if err == nil {
			if other, ok := p.anothers(link, v); ok {
				err = fmt.Errorf("%s is interface %s's: %w", name, other, syscall.ENODEV)
			} else {
				return link, nil
			}
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// owned tells whether the agent marks the link of v as its own (alias).
func owned(v *linuxif.Interface) bool {
	switch v.GetType() {
	case linuxif.Interface_VETH, linuxif.Interface_DUMMY, linuxif.Interface_TAP_TO_VPP:
		return true
	}
	return false
}

// moveAndRename moves a link from namespace `from` (handle fh) into ref
// and gives it its name there; it returns the link as seen in ref.
func (p *Plugin) moveAndRename(from nsplugin.Ref, fh *netlink.Handle, link netlink.Link, ref nsplugin.Ref, host string) (netlink.Link, error) {
	h, err := p.ns.Handle(ref, true)
	if err != nil {
		return nil, err
	}
	name := link.Attrs().Name
	if from != ref {
		fd, err := p.ns.Fd(ref, true)
		if err != nil {
			return nil, err
		}
		if err := fh.LinkSetNsFd(link, fd); err != nil {
			return nil, fmt.Errorf("moving %s from the %s into the %s: %w", name, from, ref, err)
		}
		if link, err = h.LinkByName(name); err != nil {
			return nil, fmt.Errorf("%s after the move into the %s: %w", name, ref, err)
		}
	}
	return renameLink(h, link, host)
}

// adoptTap takes the host side of a VPP TAP: VPP creates it in the agent's
// namespace under the host name; it is moved into its namespace and marked.
func (p *Plugin) adoptTap(v *linuxif.Interface, ref nsplugin.Ref) (netlink.Link, error) {
	h, err := p.ns.Handle(ref, true)
	if err != nil {
		return nil, err
	}
	host := HostName(v)
	if err := p.makeRoom(h, ref, host, v); err != nil {
		return nil, err
	}
	if link, err := h.LinkByName(host); err == nil {
		return link, nil
	}
	root, err := p.ns.Handle(nsplugin.Ref{}, false)
	if err != nil {
		return nil, err
	}
	link, err := root.LinkByName(host)
	if isNotFound(err) {
		return nil, &linkMissingError{fmt.Sprintf("TAP_TO_VPP interface %s: the VPP TAP %s has no host link %q yet", v.GetName(), v.GetTap().GetVppTapIfName(), host)}
	}
	if err != nil {
		return nil, err
	}
	if other, ok := p.anothers(link, v); ok {
		return nil, &linkMissingError{fmt.Sprintf("TAP_TO_VPP interface %s: the link %s of the default namespace is interface %s's, not the host link of the VPP TAP %s (yet)", v.GetName(), host, other, v.GetTap().GetVppTapIfName())}
	}
	return p.moveAndRename(nsplugin.Ref{}, root, link, ref, host)
}

// configure brings a link of namespace ref (handle h) to the value: alias
// (links the agent owns), MTU, MAC, admin state. old is the previous value
// (nil at creation).
func (p *Plugin) configure(ref nsplugin.Ref, h *netlink.Handle, link netlink.Link, old, v *linuxif.Interface) error {
	attrs := link.Attrs()
	if owned(v) && attrs.Alias != p.alias(v.GetName()) {
		if err := h.LinkSetAlias(link, p.alias(v.GetName())); err != nil {
			return fmt.Errorf("setting the alias of %s: %w", attrs.Name, err)
		}
	}
	if mtu := int(managedMTU(v)); mtu > 0 && attrs.MTU != mtu {
		if err := h.LinkSetMTU(link, mtu); err != nil {
			return fmt.Errorf("MTU %d on %s: %w", mtu, attrs.Name, err)
		}
	}
	if mac := v.GetPhysAddress(); mac != "" {
		hw, err := net.ParseMAC(mac)
		if err != nil {
			return api.NonRetriable(fmt.Errorf("MAC %q: %w", mac, err))
		}
		if !strings.EqualFold(attrs.HardwareAddr.String(), hw.String()) {
			if err := h.LinkSetHardwareAddr(link, hw); err != nil {
				return fmt.Errorf("MAC %s on %s: %w", mac, attrs.Name, err)
			}
		}
	}
	up := attrs.Flags&net.FlagUp != 0
	switch {
	case v.GetEnabled() && !up:
		if err := h.LinkSetUp(link); err != nil {
			return fmt.Errorf("setting %s up: %w", attrs.Name, err)
		}
	case !v.GetEnabled() && up && (old == nil || old.GetEnabled() || v.GetType() != linuxif.Interface_EXISTING):
		// Validate refuses such values; a namespace reference (a PID, say)
		// may have come to resolve to the agent's own namespace since.
		if attrs.Flags&net.FlagLoopback != 0 && p.ns.IsOwn(ref) {
			return api.NonRetriable(fmt.Errorf("refusing to set %s down: it is the loopback of the agent's own network namespace (its API and etcd)", attrs.Name))
		}
		if err := h.LinkSetDown(link); err != nil {
			return fmt.Errorf("setting %s down: %w", attrs.Name, err)
		}
	}
	return nil
}

func (p *Plugin) update(_ context.Context, key string, old, v *linuxif.Interface, md *Metadata) (*Metadata, error) {
	ref := nsplugin.RefOf(v.GetNamespace())
	h, err := p.ns.Handle(ref, createsNamespace(v))
	if err != nil {
		return md, err
	}
	// Under its new name when a failed earlier attempt renamed it, under
	// its temporary name when another interface took its name over first.
	link, err := p.ownLink(h, v, distinct(HostName(old), HostName(v))...)
	if err != nil {
		return md, fmt.Errorf("interface %s: link %s: %w", v.GetName(), HostName(old), err)
	}
	if link.Attrs().Name != HostName(v) {
		if err := p.makeRoom(h, ref, HostName(v), v); err != nil {
			return md, fmt.Errorf("interface %s: %w", v.GetName(), err)
		}
	}
	if link, err = renameLink(h, link, HostName(v)); err != nil {
		return md, fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	if err := p.configure(ref, h, link, old, v); err != nil {
		return md, fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	// Its alias is ours now, but the name stays inherited until the next
	// Retrieve finds it so (inheritedLinks): the comparator must answer as
	// it did when this Update was planned if the scheduler runs the
	// transaction again after another value's failure.
	return p.metadata(h, v, ref)
}

func (p *Plugin) delete(_ context.Context, key string, v *linuxif.Interface, md *Metadata) error {
	ref := nsplugin.RefOf(v.GetNamespace())
	if err := p.deleteLink(ref, v); err != nil {
		return err
	}
	p.setInherited(v.GetName(), false)
	p.release(ref, v.GetName())
	return nil
}

func (p *Plugin) deleteLink(ref nsplugin.Ref, v *linuxif.Interface) error {
	h, err := p.ns.Handle(ref, false)
	if errors.Is(err, errNotExist) {
		return nil // the namespace is gone, and the link with it
	}
	if err != nil {
		return err
	}
	switch v.GetType() {
	case linuxif.Interface_VETH, linuxif.Interface_DUMMY:
		link, where, err := p.linkToDelete(h, ref, v, nil)
		if link == nil {
			return err
		}
		if h, err = p.ns.Handle(where, false); err != nil {
			return err
		}
		if err := h.LinkDel(link); err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting %s: %w", link.Attrs().Name, err)
		}
	case linuxif.Interface_TAP_TO_VPP:
		// The link belongs to VPP's TAP: give it back to the agent's
		// namespace, down and unmarked, under the host name VPP gave it.
		link, err := p.ownLink(h, v, HostName(v))
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		_ = h.LinkSetDown(link)
		_ = h.LinkSetAlias(link, "")
		if !ref.IsDefault() {
			fd, err := p.ns.Fd(nsplugin.Ref{}, false)
			if err != nil {
				return err
			}
			if err := h.LinkSetNsFd(link, fd); err != nil && !isNotFound(err) {
				return fmt.Errorf("moving %s back: %w", link.Attrs().Name, err)
			}
		}
		if name := link.Attrs().Name; name != HostName(v) {
			// Renamed out of the way (makeRoom): given back under the name
			// VPP gave it. The value is gone either way: a failure is
			// logged, not retried (the link is no longer found as the
			// value's).
			if err := p.renameBack(name, HostName(v)); err != nil {
				p.log.Warn("the host link of a VPP TAP is given back under another name", "interface", v.GetName(), "link", name, "error", err)
			}
		}
	case linuxif.Interface_EXISTING, linuxif.Interface_LOOPBACK:
		// Not ours: its addresses go with their own values; the link stays.
	}
	return nil
}

// linkToDelete finds the link of a VETH or DUMMY value to delete (h is
// the handle of its namespace ref): the namespace it is in and the link,
// or a nil link when it is gone (with its peer, or never made; err nil)
// or cannot be deleted (err: not ours, or a lookup failure). lookup finds
// a link by name in a namespace (nil: netlink.Handle.LinkByName).
func (p *Plugin) linkToDelete(h *netlink.Handle, ref nsplugin.Ref, v *linuxif.Interface, lookup func(nsplugin.Ref, *netlink.Handle, string) (netlink.Link, error)) (netlink.Link, nsplugin.Ref, error) {
	if lookup == nil {
		lookup = func(_ nsplugin.Ref, h *netlink.Handle, name string) (netlink.Link, error) { return h.LinkByName(name) }
	}
	where := ref
	link, err := p.ownLinkBy(func(name string) (netlink.Link, error) { return lookup(ref, h, name) }, v, HostName(v))
	if isNotFound(err) {
		// Not configured yet: maybe still under its temporary name,
		// here or in the agent's namespace.
		for _, ns := range distinct(ref, nsplugin.Ref{}) {
			wh, werr := p.ns.Handle(ns, false)
			if werr != nil {
				continue
			}
			if link, err = lookup(ns, wh, tempName(v.GetName())); !isNotFound(err) {
				where = ns
				break
			}
		}
		if isNotFound(err) {
			return nil, where, nil // gone with its peer, or never made
		}
	}
	if err != nil {
		return nil, where, err
	}
	if link.Attrs().Alias != p.alias(v.GetName()) && !p.originals(link, v) {
		return nil, where, api.NonRetriable(fmt.Errorf("interface %s: link %s is not ours (alias %q): left alone", v.GetName(), link.Attrs().Name, link.Attrs().Alias))
	}
	return link, where, nil
}

// renameBack renames the link name of the agent's namespace to host.
func (p *Plugin) renameBack(name, host string) error {
	root, err := p.ns.Handle(nsplugin.Ref{}, false)
	if err != nil {
		return err
	}
	link, err := root.LinkByName(name)
	if err != nil {
		return err
	}
	_, err = renameLink(root, link, host)
	return err
}

// retrieve reads the links of the agent (marked with the alias) and the
// links the configuration adopts (EXISTING, LOOPBACK, TAP_TO_VPP) in the
// agent's namespace and in every namespace the configuration references.
// A link the original agent made for a configured value (originals) is
// reported as that value and noted in the inherited set, so that the
// scheduler updates it (the alias) instead of re-creating it; one that
// matches no value is not reported (left alone).
//
// A veth end is reported with the peer the kernel pairs it with (the
// logical name in the peer's alias, found in one of these namespaces), so
// an end whose peer is not the value's peer, or cannot be found (its
// namespace deleted by hand while the agent held it open), differs from
// its value and is re-created with its peer, as a pair.
func (p *Plugin) retrieve(ctx context.Context, correlate []api.TypedKV[*linuxif.Interface, *Metadata]) ([]api.TypedKV[*linuxif.Interface, *Metadata], error) {
	byName := map[string]*linuxif.Interface{}
	refs := []nsplugin.Ref{{}}
	addRef := func(ref nsplugin.Ref) {
		if !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	for _, kv := range correlate {
		byName[kv.Value.GetName()] = kv.Value
		addRef(nsplugin.RefOf(kv.Value.GetNamespace()))
		if kv.Value.GetType() == linuxif.Interface_VETH {
			// The peer's namespace, so that the peer is found when the
			// scheduler refreshes this end alone (a drift report).
			for _, ref := range p.namespacesOf(kv.Value.GetVeth().GetPeerIfName()) {
				addRef(ref)
			}
		}
	}
	var spaces []*nsLinks
	for _, ref := range refs {
		// Netlink takes no context: a scheduler that closes (or the call's
		// deadline) ends the dump between two namespaces.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !p.ns.Exists(ref) {
			continue
		}
		h, err := p.ns.Handle(ref, false)
		if err != nil {
			if errors.Is(err, errNotExist) {
				continue
			}
			return nil, err
		}
		links, err := dump(h.LinkList)
		if err != nil {
			return nil, fmt.Errorf("links of the %s: %w", ref, err)
		}
		addrs, err := dump(func() ([]netlink.Addr, error) { return h.AddrList(nil, netlink.FAMILY_ALL) })
		if err != nil {
			return nil, fmt.Errorf("addresses of the %s: %w", ref, err)
		}
		spaces = append(spaces, &nsLinks{ref: ref, h: h, links: links, addrs: addrs})
	}
	var out []api.TypedKV[*linuxif.Interface, *Metadata]
	seen := map[string]bool{}
	// inherited: the values found on a link the original agent made.
	inherited := map[string]bool{}
	for _, space := range spaces {
		ref := space.ref
		for _, link := range space.links {
			attrs := link.Attrs()
			var want *linuxif.Interface
			fromOriginal := false
			if name, ok := p.ownName(attrs.Alias); ok {
				want = byName[name]
				if want == nil {
					// Ours, but no longer configured: returned so that a
					// resync deletes it.
					want = &linuxif.Interface{Name: name, Type: linuxType(link)}
				}
			} else {
				// The original agent's: adopted as the value it was made
				// for (same name, kind, peer or VPP TAP), else left alone.
				if name, _, ok := p.originalAlias(link); ok {
					if c := byName[name]; c != nil && p.originals(link, c) {
						want, fromOriginal = c, true
					}
				}
				for _, c := range byName {
					if want == nil && (c.GetType() == linuxif.Interface_EXISTING || c.GetType() == linuxif.Interface_LOOPBACK) &&
						HostName(c) == attrs.Name && nsplugin.RefOf(c.GetNamespace()) == ref {
						want = c
					}
				}
			}
			if want == nil || seen[want.GetName()] || (nsplugin.RefOf(want.GetNamespace()) != ref && byName[want.GetName()] != nil) {
				continue
			}
			seen[want.GetName()] = true
			inherited[want.GetName()] = fromOriginal
			v := observed(want, link, space.addrs, ref)
			if v.GetType() == linuxif.Interface_VETH {
				if peer := p.vethPeer(space, link, spaces); peer != want.GetVeth().GetPeerIfName() {
					v.Link = &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: peer}}
				}
			}
			out = append(out, api.TypedKV[*linuxif.Interface, *Metadata]{
				Key: InterfaceKey(v.GetName()), Value: v, Origin: api.FromNB,
				Metadata: &Metadata{Index: attrs.Index, HostName: attrs.Name, Namespace: ref, Type: v.GetType(), Value: v},
			})
		}
	}
	for name := range byName {
		p.setInherited(name, inherited[name])
	}
	return out, nil
}

// nsLinks is what retrieve read of one namespace.
type nsLinks struct {
	ref   nsplugin.Ref
	h     *netlink.Handle
	links []netlink.Link
	addrs []netlink.Addr
	// nsids caches the IDs that namespaces of the retrieve have here
	// (IFLA_LINK_NETNSID of a link whose peer is there).
	nsids map[nsplugin.Ref]int
}

// vethPeer returns the logical name of the peer of a veth end of namespace
// space, from the peer's alias, when the peer is one of the agent's links
// in one of the namespaces read; "" otherwise. The kernel tells the peer's
// ifindex (IFLA_LINK) and, for a peer in another namespace, that
// namespace's ID as seen from the end's (IFLA_LINK_NETNSID).
func (p *Plugin) vethPeer(space *nsLinks, link netlink.Link, spaces []*nsLinks) string {
	attrs := link.Attrs()
	where := space
	if attrs.NetNsID >= 0 {
		where = nil
		for _, other := range spaces {
			if other != space && space.nsid(p.ns, other.ref) == attrs.NetNsID {
				where = other
				break
			}
		}
	}
	if where == nil {
		return ""
	}
	for _, l := range where.links {
		if l.Attrs().Index == attrs.ParentIndex {
			if name, ok := p.ownName(l.Attrs().Alias); ok {
				return name
			}
			// A peer the original agent made (adopted with this end).
			name, _, _ := p.originalAlias(l)
			return name
		}
	}
	return ""
}

// nsid returns the ID namespace ref has in this one (-1: none).
func (s *nsLinks) nsid(m *nsplugin.Manager, ref nsplugin.Ref) int {
	if id, ok := s.nsids[ref]; ok {
		return id
	}
	id := -1
	if fd, err := m.Fd(ref, false); err == nil {
		if got, err := s.h.GetNetNsIdByFd(fd); err == nil {
			id = got
		}
	}
	if s.nsids == nil {
		s.nsids = map[nsplugin.Ref]int{}
	}
	s.nsids[ref] = id
	return id
}

// observed builds the value of a link as the kernel has it; what the kernel
// does not show (the peer's logical name, link_only) comes from the wanted
// value.
func observed(want *linuxif.Interface, link netlink.Link, addrs []netlink.Addr, ref nsplugin.Ref) *linuxif.Interface {
	attrs := link.Attrs()
	v := &linuxif.Interface{
		Name:      want.GetName(),
		Type:      want.GetType(),
		Namespace: ref.Proto(),
		Enabled:   attrs.Flags&net.FlagUp != 0,
		LinkOnly:  want.GetLinkOnly(),
		Link:      want.GetLink(),
	}
	if attrs.Name != want.GetName() {
		v.HostIfName = attrs.Name
	}
	if mtu := managedMTU(want); mtu != 0 && (want.GetMtu() != 0 || uint32(attrs.MTU) != mtu) {
		v.Mtu = uint32(attrs.MTU)
	}
	if want.GetPhysAddress() != "" {
		v.PhysAddress = attrs.HardwareAddr.String()
		if strings.EqualFold(v.PhysAddress, want.GetPhysAddress()) {
			v.PhysAddress = want.GetPhysAddress()
		}
	}
	if !want.GetLinkOnly() {
		v.IpAddresses = observedAddresses(want, attrs.Index, addrs)
	}
	return v
}

// observedAddresses returns the addresses of the link (ifindex index) that
// belong to the value, spelled as the value spells them. On a link the
// agent created (VETH, DUMMY) every address is the value's but the IPv6
// link-local ones the kernel adds: one the value does not list is removed
// by a resync. On a link someone else made (EXISTING, LOOPBACK, the VPP
// TAP's TAP_TO_VPP) only the addresses the value lists are: the others are
// foreign (the operator's, the kernel's 127.0.0.1/8, VPP's) and never
// reported, so neither a resync nor a restarted agent removes them (nor
// one the NB stopped listing while the agent was not running: addresses
// carry no mark of the agent's).
func observedAddresses(want *linuxif.Interface, index int, addrs []netlink.Addr) []string {
	adopted := want.GetType() == linuxif.Interface_EXISTING || want.GetType() == linuxif.Interface_LOOPBACK || want.GetType() == linuxif.Interface_TAP_TO_VPP
	var out []string
	for _, a := range addrs {
		if a.LinkIndex != index || a.IPNet == nil {
			continue
		}
		cidr, listed := a.IPNet.String(), false
		for _, w := range want.GetIpAddresses() {
			if ip, wn, err := net.ParseCIDR(w); err == nil && ip.Equal(a.IP) && wn.Mask.String() == a.Mask.String() {
				cidr, listed = w, true
				break
			}
		}
		if listed || (!adopted && !(a.IP.To4() == nil && a.IP.IsLinkLocalUnicast())) {
			out = append(out, cidr)
		}
	}
	return out
}

func linuxType(link netlink.Link) linuxif.Interface_Type {
	switch link.Type() {
	case "veth":
		return linuxif.Interface_VETH
	case "dummy":
		return linuxif.Interface_DUMMY
	case "tuntap":
		return linuxif.Interface_TAP_TO_VPP
	}
	return linuxif.Interface_UNDEFINED
}

// dump retries a netlink dump that the kernel interrupted (the data changed
// meanwhile); a partial dump is never taken as the truth.
func dump[T any](f func() (T, error)) (T, error) {
	var out T
	var err error
	for range 5 {
		out, err = f()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
	}
	var zero T
	return zero, fmt.Errorf("dump interrupted 5 times in a row: %w", err)
}

var errNotExist = os.ErrNotExist

func isNotFound(err error) bool {
	var lnf netlink.LinkNotFoundError
	return err != nil && (errors.As(err, &lnf) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENOENT))
}

// probeKinds tries the optional link kinds in a scratch namespace.
func probeKinds(ns *nsplugin.Manager) map[string]bool {
	kinds := map[string]bool{}
	h, err := ns.Handle(nsplugin.Ref{}, false)
	if err != nil {
		return kinds
	}
	name := fmt.Sprintf("naprobe%d", syscall.Getpid()%100000)
	if err := h.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name}}); err == nil {
		kinds["dummy"] = true
		if l, err := h.LinkByName(name); err == nil {
			_ = h.LinkDel(l)
		}
	}
	return kinds
}

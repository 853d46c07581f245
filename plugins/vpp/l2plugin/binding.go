package l2plugin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

func isBDInterfaceKey(key string) bool {
	return strings.HasPrefix(key, bdInterfaceKeyPrefix) && strings.Contains(key, "/interface/")
}

// bindingDependencies: the interface must exist, and no other binding or
// cross-connect of it may be applied. VPP keeps an interface in one L2
// mode (sw_interface_set_l2_bridge moves it out of the domain or
// cross-connect it is in), so the bindings and cross-connects of an
// interface hold its L2 mode exclusively (l2ModeDependency): while one is
// applied, the scheduler keeps the others PENDING, naming the holder, and
// creates the first of them once the holder is deleted (in the same
// transaction too, whatever the order of the keys). Without it, two
// domains that name one interface would take it from each other at every
// resync.
func bindingDependencies(_ string, i *vppl2.BridgeDomain_Interface) []api.Dependency {
	return []api.Dependency{
		{Label: "interface " + i.GetName(), Key: ifplugin.InterfaceKey(i.GetName())},
		l2ModeDependency(i.GetName()),
	}
}

func (p *Plugin) bdInterfaceDescriptor() *api.TypedDescriptor[*vppl2.BridgeDomain_Interface, any] {
	return &api.TypedDescriptor[*vppl2.BridgeDomain_Interface, any]{
		Name:        BDInterfaceDescriptorName,
		KeySelector: isBDInterfaceKey,
		Create:      p.createBinding,
		Delete:      p.deleteBinding,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppl2.BridgeDomain_Interface, any]) ([]api.TypedKV[*vppl2.BridgeDomain_Interface, any], error) {
			return vppconn.Retrieved(p.retrieveBindings(ctx, c))
		},
		IsRetriableFailure:   isRetriable,
		Dependencies:         bindingDependencies,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, BridgeDomainDescriptorName},
	}
}

// retrieveBindings reports the members of the agent's domains that VPP
// has, as bindings: named like the bridge domain descriptor's Retrieve names
// them, with the interfaces the domains' values name taken from the
// metadata map (which the scheduler fills with what that Retrieve returned
// before it calls this one).
func (p *Plugin) retrieveBindings(ctx context.Context, _ []api.TypedKV[*vppl2.BridgeDomain_Interface, any]) ([]api.TypedKV[*vppl2.BridgeDomain_Interface, any], error) {
	configured := map[string][]string{}
	p.mu.Lock()
	mm := p.bdMeta
	p.mu.Unlock()
	if mm != nil {
		for _, label := range mm.ListLabels() {
			if v, ok := mm.GetValue(label); ok {
				if md, ok := v.(*BridgeDomainMetadata); ok && md != nil {
					configured[label] = md.Interfaces
				}
			}
		}
	}
	all, err := p.dumpBDs(ctx, noIndex)
	if err != nil {
		return nil, err
	}
	nm := p.newNamer(ctx, configured)
	var out []api.TypedKV[*vppl2.BridgeDomain_Interface, any]
	for _, d := range p.ourDomains(all) {
		for _, m := range membersFromVPP(d, nm.nameIn(d.BdTag)) {
			out = append(out, api.TypedKV[*vppl2.BridgeDomain_Interface, any]{
				Key: BDInterfaceKey(d.BdTag, m.GetName()), Value: m, Origin: api.FromNB,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// binding resolves a binding to the bd_id of its domain and the sw_if_index
// of its interface.
func (p *Plugin) binding(ctx context.Context, key string, i *vppl2.BridgeDomain_Interface) (bd string, bdID, sw uint32, err error) {
	bd, ok := parseBDInterfaceKey(key, i.GetName())
	if !ok {
		return "", 0, 0, api.NonRetriable(fmt.Errorf("binding key %s does not end with interface %q", key, i.GetName()))
	}
	bdID, ok = p.BridgeDomainIndex(bd)
	if !ok {
		return bd, 0, 0, fmt.Errorf("binding %s: bridge domain %s has no bd_id (not created)", key, bd)
	}
	md, ok := p.ifaces(ctx, i.GetName())
	if !ok {
		return bd, bdID, 0, errNoInterface
	}
	return bd, bdID, md.SwIfIndex, nil
}

var errNoInterface = errors.New("interface has no sw_if_index")

// createBinding puts the interface into the bridge domain: as its BVI when
// bridged_virtual_interface, with its split-horizon group. The scheduler
// calls it only while no other binding of the interface is applied (the
// Exclusive dependency), so the interface is in no other domain the
// scheduler holds a binding for; VPP may still have it in another one, which
// one dump of all domains shows (VPP 25.10 does not filter
// bridge_domain_dump by interface; see checkNotElsewhere): a domain that is
// not the agent's keeps it (*MembershipConflictError), one of the agent's
// lets VPP move it.
func (p *Plugin) createBinding(ctx context.Context, key string, i *vppl2.BridgeDomain_Interface) (any, error) {
	bd, bdID, sw, err := p.binding(ctx, key, i)
	if errors.Is(err, errNoInterface) {
		// The dependency should have prevented this.
		return nil, fmt.Errorf("binding %s: interface %s has no sw_if_index in the VPP connected now (no metadata of %s, or that of a VPP that has restarted since)", key, i.GetName(), ifplugin.InterfaceDescriptorName)
	}
	if err != nil {
		return nil, err
	}
	all, err := p.dumpBDs(ctx, noIndex)
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", key, err)
	}
	target := findByID(all, bdID)
	if target == nil || target.BdTag != bd {
		// sw_interface_set_l2_bridge would create an untagged domain.
		return nil, fmt.Errorf("binding %s: VPP has no bridge domain %s with bd_id %d (removed behind the agent's back? a resync creates it again)", key, bd, bdID)
	}
	if err := p.checkNotElsewhere(bd, bdID, i.GetName(), sw, all); err != nil {
		return nil, err
	}
	portType := l2.L2_API_PORT_TYPE_NORMAL
	if i.GetBridgedVirtualInterface() {
		if bvi := uint32(target.BviSwIfIndex); bvi != noIndex && bvi != sw {
			// VPP would take the interface out of its domain, then refuse.
			return nil, fmt.Errorf("binding %s: bridge domain %s (bd_id %d) already has a BVI, sw_if_index %d (one BVI per domain)", key, bd, bdID, bvi)
		}
		portType = l2.L2_API_PORT_TYPE_BVI
	}
	err = p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
		_, err := c.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{
			RxSwIfIndex: interface_types.InterfaceIndex(sw), BdID: bdID, PortType: portType,
			Shg: uint8(i.GetSplitHorizonGroup()), Enable: true,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sw_interface_set_l2_bridge (%s into %s, bd_id %d, sw_if_index %d): %w", i.GetName(), bd, bdID, sw, err)
	}
	return nil, nil
}

// MembershipConflictError is the refusal of a binding whose interface VPP
// has in a bridge domain that is not the agent's (its tag is no name the
// agent gives): VPP keeps an interface in one bridge domain and would take
// it from that one, which the agent must not change. It is retriable: it
// goes away when the interface leaves that domain (the binding is tried
// again on its retries and at every resync). The bindings of the agent's
// own domains never conflict this way: they wait for each other, PENDING
// (see bindingDependencies).
type MembershipConflictError struct {
	Interface    string
	BridgeDomain string // the refused binding's domain
	// HolderID is the bd_id of the domain the interface is in, HolderTag
	// its tag (empty for most domains that are not the agent's).
	HolderID  uint32
	HolderTag string
}

func (e *MembershipConflictError) Error() string {
	holder := fmt.Sprintf("bridge domain with bd_id %d (not the agent's)", e.HolderID)
	if e.HolderTag != "" {
		holder = fmt.Sprintf("bridge domain with bd_id %d, tag %q (not the agent's)", e.HolderID, e.HolderTag)
	}
	return fmt.Sprintf("interface %s not added to bridge domain %s: it is already a member of %s (an interface can be in one bridge domain)",
		e.Interface, e.BridgeDomain, holder)
}

// checkNotElsewhere refuses a binding whose interface (sw) VPP has in a
// domain other than bdID (of the dumped domains, all) that is not the
// agent's. An interface in another of the agent's domains was left there
// (put there behind the agent's back, or not named by the Retrieve): the
// Exclusive dependency guarantees that the scheduler holds no other binding
// of it when it calls Create, so no binding of the agent's wants it there,
// and VPP moves it.
func (p *Plugin) checkNotElsewhere(bd string, bdID uint32, iface string, sw uint32, all []*l2.BridgeDomainDetails) error {
	for _, d := range all {
		if _, in := memberOf(d, sw); !in || d.BdID == bdID {
			continue
		}
		if !isOurTag(d.BdTag) {
			return &MembershipConflictError{Interface: iface, BridgeDomain: bd, HolderID: d.BdID, HolderTag: d.BdTag}
		}
		p.log.Info("interface left behind in another bridge domain of the agent's; VPP moves it", "interface", iface, "from", d.BdTag, "from_bd_id", d.BdID, "to", bd, "to_bd_id", bdID)
	}
	return nil
}

// isOurTag tells whether a bridge domain tag is one the agent gives (a
// valid name).
func isOurTag(tag string) bool {
	if tag == "" {
		return false
	}
	_, err := models.VPPBridgeDomain.ParseKey(models.VPPBridgeDomain.KeyPrefix + tag)
	return err == nil
}

// findByID returns the dumped bridge domain with bd_id id, if any.
func findByID(all []*l2.BridgeDomainDetails, id uint32) *l2.BridgeDomainDetails {
	for _, d := range all {
		if d.BdID == id {
			return d
		}
	}
	return nil
}

// memberOf returns the member sw of a dumped domain (its BVI included), if
// it is one.
func memberOf(d *l2.BridgeDomainDetails, sw uint32) (l2.BridgeDomainSwIf, bool) {
	for _, m := range d.SwIfDetails {
		if uint32(m.SwIfIndex) == sw {
			return m, true
		}
	}
	return l2.BridgeDomainSwIf{}, false
}

// deleteBinding takes the interface out of the bridge domain, if the dump of
// that domain lists it: an interface that is gone, or that is in another
// domain by now (VPP moved it there behind the agent's back, or for a
// binding created while this one was left behind), is left alone. The check
// matters: VPP's disable looks at no bd_id and takes the interface out of
// whatever domain it is in.
func (p *Plugin) deleteBinding(ctx context.Context, key string, i *vppl2.BridgeDomain_Interface, _ any) error {
	bd, bdID, sw, err := p.binding(ctx, key, i)
	if errors.Is(err, errNoInterface) {
		p.log.Debug("binding to delete: its interface is gone, and its membership with it", "binding", key)
		return nil
	}
	if err != nil {
		if _, ok := p.BridgeDomainIndex(bd); !ok {
			p.log.Debug("binding to delete: its bridge domain is not known; nothing to do", "binding", key)
			return nil
		}
		return err
	}
	list, err := p.dumpBDs(ctx, bdID)
	if err != nil {
		return fmt.Errorf("binding %s: %w", key, err)
	}
	d := findByID(list, bdID)
	member := false
	if d != nil {
		_, member = memberOf(d, sw)
	}
	if !member {
		p.log.Debug("binding to delete: the interface is not in the bridge domain (any more)", "binding", key, "bd_id", bdID)
		return nil
	}
	err = p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
		_, err := c.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{
			RxSwIfIndex: interface_types.InterfaceIndex(sw), BdID: bdID, Enable: false,
		})
		return err
	})
	if err != nil && !vppconn.IsVPPError(err, govppapi.INVALID_SW_IF_INDEX) {
		return fmt.Errorf("sw_interface_set_l2_bridge (%s out of %s, bd_id %d): %w", i.GetName(), bd, bdID, err)
	}
	return nil
}

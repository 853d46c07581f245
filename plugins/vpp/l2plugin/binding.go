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

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

func isBDInterfaceKey(key string) bool {
	return strings.HasPrefix(key, bdInterfaceKeyPrefix) && strings.Contains(key, "/interface/")
}

func (p *Plugin) bdInterfaceDescriptor() *api.TypedDescriptor[*vppl2.BridgeDomain_Interface, any] {
	return &api.TypedDescriptor[*vppl2.BridgeDomain_Interface, any]{
		Name:               BDInterfaceDescriptorName,
		KeySelector:        isBDInterfaceKey,
		Create:             p.createBinding,
		Delete:             p.deleteBinding,
		Retrieve:           p.retrieveBindings,
		IsRetriableFailure: isRetriable,
		Dependencies: func(_ string, i *vppl2.BridgeDomain_Interface) []api.Dependency {
			return []api.Dependency{{Label: "interface " + i.GetName(), Key: ifplugin.InterfaceKey(i.GetName())}}
		},
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, BridgeDomainDescriptorName},
	}
}

// retrieveBindings reports the members of the agent's domains that VPP
// has, as bindings: named like the bridge domain descriptor's Retrieve names
// them, with the interfaces the domains' values name taken from the
// metadata map (which the scheduler fills with what that Retrieve returned
// before it calls this one).
func (p *Plugin) retrieveBindings([]api.TypedKV[*vppl2.BridgeDomain_Interface, any]) ([]api.TypedKV[*vppl2.BridgeDomain_Interface, any], error) {
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
	all, err := p.dumpBDs(noIndex)
	if err != nil {
		return nil, err
	}
	nm := p.newNamer(configured)
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
func (p *Plugin) binding(key string, i *vppl2.BridgeDomain_Interface) (bd string, bdID, sw uint32, err error) {
	bd, ok := parseBDInterfaceKey(key, i.GetName())
	if !ok {
		return "", 0, 0, api.NonRetriable(fmt.Errorf("binding key %s does not end with interface %q", key, i.GetName()))
	}
	bdID, ok = p.BridgeDomainIndex(bd)
	if !ok {
		return bd, 0, 0, fmt.Errorf("binding %s: bridge domain %s has no bd_id (not created)", key, bd)
	}
	md, ok := p.ifaces(i.GetName())
	if !ok {
		return bd, bdID, 0, errNoInterface
	}
	return bd, bdID, md.SwIfIndex, nil
}

var errNoInterface = errors.New("interface has no sw_if_index")

// createBinding puts the interface into the bridge domain: as its BVI when
// bridged_virtual_interface, with its split-horizon group.
func (p *Plugin) createBinding(key string, i *vppl2.BridgeDomain_Interface) (any, error) {
	bd, bdID, sw, err := p.binding(key, i)
	if errors.Is(err, errNoInterface) {
		// The dependency should have prevented this.
		return nil, fmt.Errorf("binding %s: interface %s has no sw_if_index (no metadata of %s)", key, i.GetName(), ifplugin.InterfaceDescriptorName)
	}
	if err != nil {
		return nil, err
	}
	portType := l2.L2_API_PORT_TYPE_NORMAL
	if i.GetBridgedVirtualInterface() {
		portType = l2.L2_API_PORT_TYPE_BVI
	}
	err = p.call(func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
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

// deleteBinding takes the interface out of the bridge domain, if it is still
// in it: an interface that is gone, or that is in another domain by now (it
// moved there in the same transaction), is left alone.
func (p *Plugin) deleteBinding(key string, i *vppl2.BridgeDomain_Interface, _ any) error {
	bd, bdID, sw, err := p.binding(key, i)
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
	var in []*l2.BridgeDomainDetails
	err = p.call(func(ctx context.Context, _ l2.RPCService, conn govppapi.Connection) (err error) {
		in, err = vppconn.Dump[*l2.BridgeDomainDetails](ctx, conn, &l2.BridgeDomainDump{BdID: noIndex, SwIfIndex: interface_types.InterfaceIndex(sw)})
		return err
	})
	if err != nil {
		return fmt.Errorf("binding %s: bridge_domain_dump of sw_if_index %d: %w", key, sw, err)
	}
	member := false
	for _, d := range in {
		member = member || d.BdID == bdID
	}
	if !member {
		p.log.Debug("binding to delete: the interface is not in the bridge domain (any more)", "binding", key, "bd_id", bdID)
		return nil
	}
	err = p.call(func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
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

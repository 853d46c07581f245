package l2plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

func (p *Plugin) bdInterfaceDescriptor() *api.TypedDescriptor[*vppl2.BridgeDomain_Interface, any] {
	return &api.TypedDescriptor[*vppl2.BridgeDomain_Interface, any]{
		Name:        BDInterfaceDescriptorName,
		KeySelector: isBDInterfaceKey,
		Create:      p.createBinding,
		Delete:      p.deleteBinding,
		Retrieve: func(c []api.TypedKV[*vppl2.BridgeDomain_Interface, any]) ([]api.TypedKV[*vppl2.BridgeDomain_Interface, any], error) {
			return vppconn.Retrieved(p.retrieveBindings(c))
		},
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
// bridged_virtual_interface, with its split-horizon group. It reads the
// membership from one dump of all domains (VPP 25.10 does not filter
// bridge_domain_dump by interface): an interface that is in another domain
// is refused (*MembershipConflictError, see checkNotElsewhere) unless it is
// moving.
func (p *Plugin) createBinding(key string, i *vppl2.BridgeDomain_Interface) (any, error) {
	bd, bdID, sw, err := p.binding(key, i)
	if errors.Is(err, errNoInterface) {
		// The dependency should have prevented this.
		return nil, fmt.Errorf("binding %s: interface %s has no sw_if_index in the VPP connected now (no metadata of %s, or that of a VPP that has restarted since)", key, i.GetName(), ifplugin.InterfaceDescriptorName)
	}
	if err != nil {
		return nil, err
	}
	all, err := p.dumpBDs(noIndex)
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", key, err)
	}
	target := findByID(all, bdID)
	if target == nil || target.BdTag != bd {
		// sw_interface_set_l2_bridge would create an untagged domain.
		return nil, fmt.Errorf("binding %s: VPP has no bridge domain %s with bd_id %d (removed behind the agent's back? a resync creates it again)", key, bd, bdID)
	}
	if err := p.checkNotElsewhere(key, bd, bdID, i.GetName(), sw, all); err != nil {
		var conflict *MembershipConflictError
		if errors.As(err, &conflict) {
			p.noteRefused(i.GetName(), key, true)
		}
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
	p.noteRefused(i.GetName(), key, false)
	return nil, nil
}

// MembershipConflictError is the refusal of a binding whose interface is a
// member of another bridge domain that still wants it: VPP keeps an
// interface in one bridge domain and would move it, and the other domain's
// binding would move it back at the next resync. It is retriable: it goes
// away when the other domain lets the interface go (see SetScheduler).
type MembershipConflictError struct {
	Interface    string
	BridgeDomain string // the refused binding's domain
	// Holder is the domain the interface is in: one of the agent's by name,
	// or (HolderForeign) someone else's, by bd_id.
	Holder        string
	HolderID      uint32
	HolderForeign bool
}

func (e *MembershipConflictError) Error() string {
	holder := "bridge domain " + e.Holder
	if e.HolderForeign {
		holder = fmt.Sprintf("bridge domain with bd_id %d (not the agent's)", e.HolderID)
	}
	return fmt.Sprintf("interface %s not added to bridge domain %s: it is already a member of %s (an interface can be in one bridge domain)",
		e.Interface, e.BridgeDomain, holder)
}

// checkNotElsewhere refuses a binding whose interface (sw) is in another
// of the dumped domains (all) than bdID: a domain that is not the agent's,
// or one of the agent's whose binding of the interface is still wanted. An
// interface in a domain of the agent's that no longer wants it is moving
// (the other binding is deleted later in the same transaction, or was left
// behind): VPP moves it.
func (p *Plugin) checkNotElsewhere(key, bd string, bdID uint32, iface string, sw uint32, all []*l2.BridgeDomainDetails) error {
	for _, d := range all {
		if _, in := memberOf(d, sw); !in || d.BdID == bdID {
			continue
		}
		conflict := &MembershipConflictError{Interface: iface, BridgeDomain: bd, Holder: d.BdTag, HolderID: d.BdID}
		if !isOurTag(d.BdTag) {
			conflict.HolderForeign = true
			return conflict
		}
		if p.wanted(d.BdTag, iface) {
			return conflict
		}
		p.log.Info("interface moves to another bridge domain", "interface", iface, "from", d.BdTag, "to", bd)
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

// wanted tells whether the binding of iface to bridge domain bd is still
// wanted: the scheduler holds it (while a transaction runs, the scheduler
// shows the state its plan leads to, so a binding the transaction deletes is
// gone already), or, without SetScheduler, bd's value named iface when it
// was last applied.
func (p *Plugin) wanted(bd, iface string) bool {
	key := BDInterfaceKey(bd, iface)
	if s := p.scheduler(); s != nil {
		for _, d := range s.GetValueStatus(key).GetDerivedValues() {
			if d.GetKey() == key {
				st := d.GetState()
				return st != api.ValueStateNonexistent && st != api.ValueStateRemoved
			}
		}
		return false
	}
	md, ok := p.domainMetadata(bd)
	return ok && slices.Contains(md.Interfaces, iface)
}

// noteRefused records (refused) or forgets a refused binding of iface.
func (p *Plugin) noteRefused(iface, key string, refused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := p.refused[iface]
	if !refused {
		delete(keys, key)
		if len(keys) == 0 {
			delete(p.refused, iface)
		}
		return
	}
	if p.refused == nil {
		p.refused = map[string]map[string]bool{}
	}
	if keys == nil {
		keys = map[string]bool{}
		p.refused[iface] = keys
	}
	keys[key] = true
}

// releaseInterface is called when binding key of iface is deleted: when
// other bindings of iface were refused, a downstream resync is queued to
// apply them (the scheduler tries a FAILED value again on a resync, not when
// the value it conflicted with goes).
func (p *Plugin) releaseInterface(iface, key string) {
	p.noteRefused(iface, key, false)
	p.mu.Lock()
	var refused []string
	for k := range p.refused[iface] {
		refused = append(refused, k)
	}
	s := p.sched
	p.mu.Unlock()
	if len(refused) == 0 || s == nil {
		return
	}
	slices.Sort(refused)
	var waiting []string
	for _, k := range refused {
		if stillRefused(s, k) {
			waiting = append(waiting, k)
		} else {
			p.noteRefused(iface, k, false) // its domain dropped it meanwhile
		}
	}
	if len(waiting) == 0 {
		return
	}
	ctx := api.WithResync(context.Background(), api.DownstreamResync, false)
	ctx = api.WithDescription(ctx, fmt.Sprintf("vpp-l2: %s deleted; applying the refused %s", key, strings.Join(waiting, ", ")))
	if _, err := s.StartNBTransaction().Commit(api.WithoutBlocking(ctx)); err != nil {
		p.log.Warn("resync to apply refused bindings not queued", "bindings", waiting, "error", err)
	}
}

// stillRefused tells whether the scheduler holds binding key as failed.
func stillRefused(s Scheduler, key string) bool {
	for _, d := range s.GetValueStatus(key).GetDerivedValues() {
		if d.GetKey() == key {
			return d.GetState() == api.ValueStateFailed || d.GetState() == api.ValueStateRetrying
		}
	}
	return false
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
// domain by now (it moved there in the same transaction), is left alone.
// The check matters: VPP's disable looks at no bd_id and takes the
// interface out of whatever domain it is in.
func (p *Plugin) deleteBinding(key string, i *vppl2.BridgeDomain_Interface, _ any) error {
	bd, bdID, sw, err := p.binding(key, i)
	if errors.Is(err, errNoInterface) {
		p.log.Debug("binding to delete: its interface is gone, and its membership with it", "binding", key)
		p.noteRefused(i.GetName(), key, false)
		return nil
	}
	if err != nil {
		if _, ok := p.BridgeDomainIndex(bd); !ok {
			p.log.Debug("binding to delete: its bridge domain is not known; nothing to do", "binding", key)
			p.releaseInterface(i.GetName(), key)
			return nil
		}
		return err
	}
	list, err := p.dumpBDs(bdID)
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
		p.releaseInterface(i.GetName(), key)
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
	p.releaseInterface(i.GetName(), key)
	return nil
}

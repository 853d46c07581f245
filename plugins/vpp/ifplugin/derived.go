package ifplugin

import (
	"context"
	"fmt"
	"net/netip"

	govppapi "go.fd.io/govpp/api"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// The derived values of an interface carry a *vppif.Interface with the
// interface's name and what the value is about (Enabled, one address, the
// VRF, the donor of unnumbered). Their descriptors find the interface's
// sw_if_index in the interface descriptor's metadata map, which the
// scheduler fills as soon as the interface is created (derived values are
// created after their base and deleted before it). When the interface has
// no metadata any more, a Delete is a success: the interface is gone, and
// its settings with it. A Delete also checks that the interface at that
// index still carries the name as its tag (VPP reuses indexes: after a VPP
// restart not yet resynced, the index may be someone else's).

// ---- admin state

// adminStateDescriptor handles AdminStateKey(iface, up). Create sets the
// admin flag to the value's state; Delete of UP sets the interface down
// (DOWN needs nothing). The UP value of a sub-interface depends on the UP
// value of its parent: VPP refuses to bring a sub-interface up while its
// parent is down. Retrieve reports the admin state of the agent's
// interfaces that VPP has as their values ask (see retrieveAdminStates).
func (p *Plugin) adminStateDescriptor() *api.KVDescriptor {
	d := &api.TypedDescriptor[*vppif.Interface, any]{
		Name:               AdminStateDescriptorName,
		KeySelector:        func(key string) bool { return classify(key) == kindAdminState },
		IsRetriableFailure: isRetriable,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppif.Interface, any]) ([]api.TypedKV[*vppif.Interface, any], error) {
			return vppconn.Retrieved(p.retrieveAdminStates(ctx, c))
		},
		RetrieveDependencies: []string{InterfaceDescriptorName},
		Create: func(ctx context.Context, key string, v *vppif.Interface) (any, error) {
			idx, err := p.ownSwIfIndex(v.GetName())
			if err != nil {
				return nil, err
			}
			defer p.recordChange(v.GetName(), agentChange{SwIfIndex: idx, AdminUp: v.GetEnabled()})()
			return nil, adminStateSet(v, p.h.SetAdminUp(ctx, idx, v.GetEnabled()))
		},
		Delete: func(ctx context.Context, key string, v *vppif.Interface, _ any) error {
			if !v.GetEnabled() {
				return nil
			}
			idx, ok, err := p.ownIndex(ctx, v.GetName())
			if err != nil || !ok {
				return err
			}
			defer p.recordChange(v.GetName(), agentChange{SwIfIndex: idx})()
			return adminStateDown(v, p.h.SetAdminUp(ctx, idx, false))
		},
		Dependencies: func(key string, v *vppif.Interface) []api.Dependency {
			if parent := v.GetSub().GetParentName(); v.GetEnabled() && parent != "" {
				return []api.Dependency{{Label: "parent " + parent + " up", Key: AdminStateKey(parent, true)}}
			}
			return nil
		},
	}
	return p.withBatch(d.KVDescriptor(), p.prepareAdminState)
}

// adminStateSet is the result of an admin state's Create given that of its
// sw_interface_set_flags.
func adminStateSet(v *vppif.Interface, err error) error {
	if err != nil {
		return fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	return nil
}

// retrieveAdminStates reports, for each of the agent's interfaces whose
// admin state in VPP is the one its value asks for (Metadata.Value, which
// the interface descriptor's Retrieve sets before this runs), the admin
// state value under the key the interface value derives. An interface whose
// admin state differs reports nothing: its value is not applied, so a
// resync applies it, or it waits (PENDING) for its parent.
func (p *Plugin) retrieveAdminStates(ctx context.Context, _ []api.TypedKV[*vppif.Interface, any]) ([]api.TypedKV[*vppif.Interface, any], error) {
	m := p.index.Load()
	if m == nil {
		return nil, nil
	}
	all, err := p.h.ListInterfaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.TypedKV[*vppif.Interface, any]
	for _, i := range all {
		name, md, ok := p.ownInterfaceAt(m, i)
		if !ok || i.AdminUp != md.Value.GetEnabled() {
			continue
		}
		v := &vppif.Interface{Name: name, Enabled: i.AdminUp}
		if i.Kind == vppcalls.KindSub && i.Sub != nil {
			parent, _ := m.lookupIndex(i.Sub.Parent)
			v.Type = vppif.Interface_SUB_INTERFACE
			v.Link = &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: parent}}
		}
		out = append(out, api.TypedKV[*vppif.Interface, any]{Key: AdminStateKey(name, i.AdminUp), Value: v, Origin: api.FromNB})
	}
	return out, nil
}

// ownInterfaceAt returns the logical name and metadata of a dumped
// interface when it is one of the agent's that the metadata map knows at
// that index (and VPP still tags it so).
func (p *Plugin) ownInterfaceAt(m *indexMap, i *vppcalls.Interface) (string, *Metadata, bool) {
	name, ok := m.lookupIndex(i.SwIfIndex)
	if !ok || i.Tag != name {
		return "", nil, false
	}
	md, ok := p.lookup(name)
	if !ok || md.Foreign {
		return "", nil, false
	}
	return name, md, true
}

// ---- VRF

// vrfDescriptor handles VRFKey(iface, vrf, version) of a non-zero VRF, one
// per IP protocol (VRFVersions): Create binds the interface to the VRF's
// table of the key's protocol (sw_interface_set_table), which must exist:
// the value depends on the VRF table value (models.VrfTableKey) of that
// protocol, and waits for it. Delete binds it back to table 0. The
// addresses of the interface depend on the value of their protocol, so
// they are added after the interface moved, and removed before it moves
// again, as VPP requires.
func (p *Plugin) vrfDescriptor() *api.KVDescriptor {
	d := &api.TypedDescriptor[*vppif.Interface, any]{
		Name:               VRFDescriptorName,
		KeySelector:        func(key string) bool { return classify(key) == kindVRF },
		IsRetriableFailure: isRetriable,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppif.Interface, any]) ([]api.TypedKV[*vppif.Interface, any], error) {
			return vppconn.Retrieved(p.retrieveVRFs(ctx, c))
		},
		RetrieveDependencies: []string{InterfaceDescriptorName},
		Create: func(ctx context.Context, key string, v *vppif.Interface) (any, error) {
			idx, err := p.ownSwIfIndex(v.GetName())
			if err != nil {
				return nil, err
			}
			ipv4, ipv6 := vrfKeyProtocols(key)
			if err := p.h.SetTable(ctx, idx, v.GetVrf(), ipv4, ipv6); err != nil {
				return nil, fmt.Errorf("interface %s: VRF %d: %w", v.GetName(), v.GetVrf(), err)
			}
			return nil, nil
		},
		Delete: func(ctx context.Context, key string, v *vppif.Interface, _ any) error {
			idx, ok, err := p.ownIndex(ctx, v.GetName())
			if err != nil || !ok {
				return err
			}
			ipv4, ipv6 := vrfKeyProtocols(key)
			if err := p.h.SetTable(ctx, idx, 0, ipv4, ipv6); err != nil && !isMissingInterface(err) {
				return fmt.Errorf("interface %s: back to VRF 0: %w", v.GetName(), err)
			}
			return nil
		},
		Dependencies: func(key string, v *vppif.Interface) []api.Dependency {
			ipv4, ipv6 := vrfKeyProtocols(key)
			var deps []api.Dependency
			if ipv4 {
				deps = append(deps, api.Dependency{Label: fmt.Sprintf("VRF table %d (IPv4)", v.GetVrf()), Key: models.VrfTableKey(v.GetVrf(), false)})
			}
			if ipv6 {
				deps = append(deps, api.Dependency{Label: fmt.Sprintf("VRF table %d (IPv6)", v.GetVrf()), Key: models.VrfTableKey(v.GetVrf(), true)})
			}
			return deps
		},
	}
	return d.KVDescriptor()
}

// retrieveVRFs reports the VRF bindings of the agent's interfaces
// (sw_interface_get_table of the refresh's interface dump): per IP
// protocol, the VRFKey of the table VPP has the interface in, when not 0.
// A binding the value asks for that VPP has is in sync; one it lacks (it
// waits for its table, or someone changed it) is created by a resync, and
// one the value does not ask for is deleted (the interface goes back to
// table 0 for that protocol).
func (p *Plugin) retrieveVRFs(ctx context.Context, _ []api.TypedKV[*vppif.Interface, any]) ([]api.TypedKV[*vppif.Interface, any], error) {
	m := p.index.Load()
	if m == nil {
		return nil, nil
	}
	all, err := p.h.DumpInterfaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.TypedKV[*vppif.Interface, any]
	for _, i := range all {
		name, _, ok := p.ownInterfaceAt(m, i)
		if !ok {
			continue
		}
		for _, b := range []struct {
			version string
			table   uint32
		}{{"v4", i.IP4Table}, {"v6", i.IP6Table}} {
			if b.table != 0 {
				out = append(out, api.TypedKV[*vppif.Interface, any]{
					Key: VRFKey(name, b.table, b.version), Value: &vppif.Interface{Name: name, Vrf: b.table}, Origin: api.FromNB,
				})
			}
		}
	}
	return out, nil
}

// vrfKeyProtocols tells which protocols the VRFKey key binds.
func vrfKeyProtocols(key string) (ipv4, ipv6 bool) {
	_, _, version, _ := ParseVRFKey(key)
	return vrfProtocols(version)
}

// ---- addresses

// addressDescriptor handles AddressKey(iface, cidr): Create adds the address
// (one already there is success), Delete removes it (a missing address or
// interface is success). An address of an interface in a non-zero VRF
// depends on the VRF value. Retrieve reports the addresses VPP has on the
// agent's interfaces (see retrieveAddresses).
func (p *Plugin) addressDescriptor() *api.KVDescriptor {
	d := &api.TypedDescriptor[*vppif.Interface, any]{
		Name:               AddressDescriptorName,
		KeySelector:        func(key string) bool { return classify(key) == kindAddress },
		IsRetriableFailure: isRetriable,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppif.Interface, any]) ([]api.TypedKV[*vppif.Interface, any], error) {
			return vppconn.Retrieved(p.retrieveAddresses(ctx, c))
		},
		RetrieveDependencies: []string{InterfaceDescriptorName},
		Create: func(ctx context.Context, key string, v *vppif.Interface) (any, error) {
			addr, idx, err := p.addressTarget(v)
			if err != nil {
				return nil, err
			}
			return nil, p.addressAdded(ctx, v, idx, addr, p.h.AddAddress(ctx, idx, addr))
		},
		Delete: func(ctx context.Context, key string, v *vppif.Interface, _ any) error {
			addr, err := addressOf(v)
			if err != nil {
				return err
			}
			idx, ok, err := p.ownIndex(ctx, v.GetName())
			if err != nil || !ok {
				return err
			}
			return addressRemoved(v, addr, p.h.DelAddress(ctx, idx, addr))
		},
		Dependencies: addressDependencies,
	}
	return p.withBatch(d.KVDescriptor(), p.prepareAddress)
}

// addressDependencies: an address of an interface in a non-zero VRF waits
// for the interface's binding to the VRF's table of its protocol.
func addressDependencies(_ string, v *vppif.Interface) []api.Dependency {
	vrf := v.GetVrf()
	if vrf == 0 {
		return nil
	}
	addr, err := addressOf(v)
	if err != nil {
		return nil
	}
	version := "v4"
	if addr.Addr().Is6() {
		version = "v6"
	}
	return []api.Dependency{{Label: fmt.Sprintf("VRF %d (%s)", vrf, version), Key: VRFKey(v.GetName(), vrf, version)}}
}

// addressTarget is the address of an address value and the index of its
// interface, for its Create.
func (p *Plugin) addressTarget(v *vppif.Interface) (netip.Prefix, uint32, error) {
	addr, err := addressOf(v)
	if err != nil {
		return netip.Prefix{}, 0, err
	}
	idx, err := p.ownSwIfIndex(v.GetName())
	return addr, idx, err
}

// addressAdded is the result of an address's Create given that of its
// request (vppcalls' AddAddress): VPP's refusal of an overlapping address
// names the interface that holds the other.
func (p *Plugin) addressAdded(ctx context.Context, v *vppif.Interface, idx uint32, addr netip.Prefix, err error) error {
	if err == nil {
		return nil
	}
	if holder, other, ok := p.overlapping(ctx, idx, addr, err); ok {
		return fmt.Errorf("interface %s: address %s overlaps %s of interface %s (VPP keeps a subnet on one interface per VRF): %w", v.GetName(), addr, other, holder, err)
	}
	return fmt.Errorf("interface %s: address %s: %w", v.GetName(), addr, err)
}

// retrieveAddresses reports the addresses VPP has on the agent's
// interfaces (ip_address_dump), spelled as their values spell them
// (Metadata.Value, which the interface descriptor's Retrieve sets
// before this runs), leaving out what the interface descriptor's Retrieve
// leaves out: IPv6 link-local addresses the value does not name, and a
// donor's addresses on an unnumbered interface.
func (p *Plugin) retrieveAddresses(ctx context.Context, _ []api.TypedKV[*vppif.Interface, any]) ([]api.TypedKV[*vppif.Interface, any], error) {
	m := p.index.Load()
	if m == nil {
		return nil, nil
	}
	if all, ok := vppcalls.RefreshDump(ctx); ok {
		// The interface descriptor's Retrieve of this refresh dumped every
		// interface's addresses already.
		byIdx := make(map[uint32]*vppcalls.Interface, len(all))
		for _, i := range all {
			byIdx[i.SwIfIndex] = i
		}
		return p.addressesOf(m, all, func(idx uint32) *vppcalls.Interface { return byIdx[idx] }), nil
	}
	all, err := p.h.ListInterfaces(ctx)
	if err != nil {
		return nil, err
	}
	unnumbered, err := p.h.DumpUnnumbered(ctx)
	if err != nil {
		return nil, err
	}
	// The addresses of the agent's interfaces and of their donors, dumped
	// pipelined (VPP has no dump of every interface's addresses).
	type own struct {
		i    *vppcalls.Interface
		name string
		md   *Metadata
	}
	var owned []own
	pipe := p.h.NewPipe()
	dumped := map[uint32]*vppcalls.Result[[]netip.Prefix]{}
	dump := func(idx uint32) {
		if _, ok := dumped[idx]; !ok {
			dumped[idx] = pipe.DumpAddresses(idx)
		}
	}
	for _, i := range all {
		name, md, ok := p.ownInterfaceAt(m, i)
		if !ok {
			continue
		}
		owned = append(owned, own{i, name, md})
		dump(i.SwIfIndex)
		if from, ok := unnumbered[i.SwIfIndex]; ok {
			dump(from)
		}
	}
	pipe.Send(ctx)
	withAddrs := make([]*vppcalls.Interface, 0, len(owned))
	donors := map[uint32]*vppcalls.Interface{}
	for _, o := range owned {
		r := dumped[o.i.SwIfIndex]
		if r.Err != nil {
			return nil, r.Err
		}
		i := *o.i
		i.Addresses = r.Value
		if from, ok := unnumbered[i.SwIfIndex]; ok {
			d := dumped[from]
			if d.Err != nil {
				return nil, d.Err
			}
			i.Unnumbered, i.UnnumberedFrom = true, from
			donors[from] = &vppcalls.Interface{SwIfIndex: from, Addresses: d.Value}
		}
		withAddrs = append(withAddrs, &i)
	}
	return p.addressesOf(m, withAddrs, func(idx uint32) *vppcalls.Interface { return donors[idx] }), nil
}

// addressesOf is retrieveAddresses given the dumped interfaces, with their
// addresses and unnumbered state, and their donors (donorOf: with their
// addresses). all may be the refresh's dump: it is only read.
func (p *Plugin) addressesOf(m *indexMap, all []*vppcalls.Interface, donorOf func(idx uint32) *vppcalls.Interface) []api.TypedKV[*vppif.Interface, any] {
	var out []api.TypedKV[*vppif.Interface, any]
	for _, i := range all {
		name, md, ok := p.ownInterfaceAt(m, i)
		if !ok {
			continue
		}
		want := md.Value.GetIpAddresses()
		for _, a := range observedAddresses(ownAddresses(i, donorOf, want), want) {
			out = append(out, api.TypedKV[*vppif.Interface, any]{
				Key: AddressKey(name, a), Value: &vppif.Interface{Name: name, IpAddresses: []string{a}, Vrf: md.Vrf}, Origin: api.FromNB,
			})
		}
	}
	return out
}

// overlapping finds, when VPP refused addr on interface idx as in use, the
// interface (its logical name, else VPP's) that has an overlapping address
// in the same table, to name it in the error.
func (p *Plugin) overlapping(ctx context.Context, idx uint32, addr netip.Prefix, err error) (holder string, other netip.Prefix, ok bool) {
	if !isVPPError(err, govppapi.ADDRESS_IN_USE) && !isVPPError(err, govppapi.DUPLICATE_IF_ADDRESS) {
		return "", netip.Prefix{}, false
	}
	all, derr := p.h.DumpInterfaces(ctx)
	if derr != nil {
		return "", netip.Prefix{}, false
	}
	table := func(i *vppcalls.Interface) uint32 {
		if addr.Addr().Is6() {
			return i.IP6Table
		}
		return i.IP4Table
	}
	var own *vppcalls.Interface
	for _, i := range all {
		if i.SwIfIndex == idx {
			own = i
		}
	}
	if own == nil {
		return "", netip.Prefix{}, false
	}
	for _, i := range all {
		if i.SwIfIndex == idx || table(i) != table(own) {
			continue
		}
		for _, a := range i.Addresses {
			if a.Overlaps(addr) {
				return logicalName(i), a, true
			}
		}
	}
	return "", netip.Prefix{}, false
}

// adminStateDown is the result of setting an interface down for the
// Delete of its UP value, given VPP's: an interface VPP no longer has is
// down.
func adminStateDown(v *vppif.Interface, err error) error {
	if err != nil && !isMissingInterface(err) {
		return fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	return nil
}

// addressRemoved is the result of the Delete of an address value, given
// VPP's (the handler's: a missing address is success).
func addressRemoved(v *vppif.Interface, addr netip.Prefix, err error) error {
	if err != nil {
		return fmt.Errorf("interface %s: address %s: %w", v.GetName(), addr, err)
	}
	return nil
}

func addressOf(v *vppif.Interface) (netip.Prefix, error) {
	if len(v.GetIpAddresses()) != 1 {
		return netip.Prefix{}, api.NonRetriable(fmt.Errorf("address value of %s carries %d addresses", v.GetName(), len(v.GetIpAddresses())))
	}
	p, err := netip.ParsePrefix(v.GetIpAddresses()[0])
	if err != nil {
		return netip.Prefix{}, api.NonRetriable(fmt.Errorf("address of %s: %w", v.GetName(), err))
	}
	return p, nil
}

// ---- unnumbered

// unnumberedDescriptor handles UnnumberedKey(iface): the interface borrows
// the addresses of interface_with_ip. It depends (AnyOf) on any address of
// that interface: until one exists the interface works in L2 only; when the
// last one goes, the value is deleted first (the interface gives the
// addresses back and returns to L2, it is not deleted) and waits, PENDING,
// for an address to borrow again. Retrieve reports what VPP has
// (ip_unnumbered_dump), so a resync finds whether the borrowing is in place.
func (p *Plugin) unnumberedDescriptor() *api.KVDescriptor {
	d := &api.TypedDescriptor[*vppif.Interface, any]{
		Name:                 UnnumberedDescriptorName,
		KeySelector:          func(key string) bool { return classify(key) == kindUnnumbered },
		IsRetriableFailure:   isRetriable,
		RetrieveDependencies: []string{InterfaceDescriptorName},
		Create: func(ctx context.Context, key string, v *vppif.Interface) (any, error) {
			donor := v.GetUnnumbered().GetInterfaceWithIp()
			idx, err := p.ownSwIfIndex(v.GetName())
			if err != nil {
				return nil, err
			}
			didx, err := p.swIfIndex(donor)
			if err != nil {
				return nil, err
			}
			if err := p.h.SetUnnumbered(ctx, idx, didx); err != nil {
				return nil, fmt.Errorf("interface %s: unnumbered from %s: %w", v.GetName(), donor, err)
			}
			return nil, nil
		},
		Delete: func(ctx context.Context, key string, v *vppif.Interface, _ any) error {
			idx, ok, err := p.ownIndex(ctx, v.GetName())
			if err != nil || !ok {
				return err
			}
			if err := p.h.UnsetUnnumbered(ctx, idx); err != nil {
				return fmt.Errorf("interface %s: unnumbered off: %w", v.GetName(), err)
			}
			return nil
		},
		Dependencies: func(key string, v *vppif.Interface) []api.Dependency {
			donor := v.GetUnnumbered().GetInterfaceWithIp()
			if donor == "" {
				return nil
			}
			return []api.Dependency{{
				Label: "an address of " + donor + " to borrow",
				AnyOf: api.AnyOfDependency{
					KeyPrefixes: []string{AddressKeyPrefix(donor)},
					KeySelector: func(key string) bool {
						iface, _, ok := ParseAddressKey(key)
						return ok && iface == donor
					},
				},
			}}
		},
		Retrieve: func(ctx context.Context, _ []api.TypedKV[*vppif.Interface, any]) ([]api.TypedKV[*vppif.Interface, any], error) {
			un, err := p.h.DumpUnnumbered(ctx)
			if err != nil {
				return vppconn.Retrieved[api.TypedKV[*vppif.Interface, any]](nil, err)
			}
			m := p.index.Load()
			if m == nil {
				return nil, nil
			}
			var out []api.TypedKV[*vppif.Interface, any]
			for idx, didx := range un {
				name, ok1 := m.lookupIndex(idx)
				donor, ok2 := m.lookupIndex(didx)
				if !ok1 || !ok2 {
					continue // an interface without metadata
				}
				if md, _ := p.lookup(name); md == nil || md.Foreign {
					continue // part of a foreign interface's OBTAINED value
				}
				out = append(out, api.TypedKV[*vppif.Interface, any]{
					Key: UnnumberedKey(name), Value: unnumberedValue(name, donor), Origin: api.FromNB,
				})
			}
			return out, nil
		},
	}
	return d.KVDescriptor()
}

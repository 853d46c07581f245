package natplugin

import (
	"context"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

// The original's deprecated lists of the global settings, nat_interfaces
// and address_pool, are derived values of the global value: one per
// interface (its entries add up) and one per address, doing what a
// Nat44Interface and a one-address Nat44AddressPool would do.
const (
	globalInterfaceKeyPrefix = "vpp/nat44/global/interface/"
	globalAddressKeyPrefix   = "vpp/nat44/global/address/"
	twiceNATKeySuffix        = "/twice-nat"
)

// GlobalInterfaceKey is the key of the NAT features that the global
// settings' nat_interfaces give an interface:
// vpp/nat44/global/interface/<name>.
func GlobalInterfaceKey(name string) string { return globalInterfaceKeyPrefix + name }

// GlobalAddressKey is the key of an address of the global settings'
// address_pool: vpp/nat44/global/address/<address>, followed by
// /twice-nat for one of the twice-NAT list (VPP keeps an address once in
// each list).
func GlobalAddressKey(address string, twiceNAT bool) string {
	key := globalAddressKeyPrefix + canonicalIP(address)
	if twiceNAT {
		key += twiceNATKeySuffix
	}
	return key
}

// featuresName is the unique name (api.UniqueName) of the NAT features of
// an interface: a Nat44Interface value and the global settings'
// nat_interfaces cannot both give an interface its features.
func featuresName(iface string) string { return "NAT44 features of VPP interface " + iface }

// globalDerivedValues: one Nat44Interface per interface of nat_interfaces
// (inside when is_inside, else outside; output_feature as a
// Nat44Interface has it, with the side it comes with), one
// Nat44AddressPool per address of address_pool.
func globalDerivedValues(_ string, g *vppnat.Nat44Global) []api.KeyValuePair {
	var names []string
	ifaces := map[string]*vppnat.Nat44Interface{}
	for _, e := range g.GetNatInterfaces() {
		v := ifaces[e.GetName()]
		if v == nil {
			v = &vppnat.Nat44Interface{Name: e.GetName()}
			ifaces[e.GetName()] = v
			names = append(names, e.GetName())
		}
		if e.GetIsInside() {
			v.NatInside = true
		} else {
			v.NatOutside = true
		}
		v.OutputFeature = v.OutputFeature || e.GetOutputFeature()
	}
	out := make([]api.KeyValuePair, 0, len(names)+len(g.GetAddressPool()))
	for _, name := range names {
		out = append(out, api.KeyValuePair{Key: GlobalInterfaceKey(name), Value: ifaces[name]})
	}
	for _, a := range g.GetAddressPool() {
		out = append(out, api.KeyValuePair{
			Key:   GlobalAddressKey(a.GetAddress(), a.GetTwiceNat()),
			Value: &vppnat.Nat44AddressPool{FirstIp: canonicalIP(a.GetAddress()), VrfId: a.GetVrfId(), TwiceNat: a.GetTwiceNat()},
		})
	}
	return out
}

// sameDerived tells whether two lists of derived values hold the same
// values under the same keys, in any order.
func sameDerived(a, b []api.KeyValuePair) bool {
	if len(a) != len(b) {
		return false
	}
	byKey := make(map[string]proto.Message, len(a))
	for _, kv := range a {
		byKey[kv.Key] = kv.Value
	}
	for _, kv := range b {
		if v, ok := byKey[kv.Key]; !ok || !proto.Equal(v, kv.Value) {
			return false
		}
	}
	return true
}

// globalSettings are the global settings the scheduler holds as applied
// (the global descriptor's metadata; its Retrieve puts the expected value
// there), nil without.
func (p *Plugin) globalSettings() *vppnat.Nat44Global {
	p.mu.Lock()
	mm := p.globalMeta
	p.mu.Unlock()
	if md, ok := mm.Snapshot()[GlobalKey].(*vppnat.Nat44Global); ok {
		return md
	}
	return nil
}

// globalInterfaces are the derived interface values of the global
// settings, by interface name.
func (p *Plugin) globalInterfaces() map[string]*vppnat.Nat44Interface {
	out := map[string]*vppnat.Nat44Interface{}
	if g := p.globalSettings(); g != nil {
		for _, kv := range globalDerivedValues(GlobalKey, g) {
			if v, ok := kv.Value.(*vppnat.Nat44Interface); ok {
				out[v.GetName()] = v
			}
		}
	}
	return out
}

// globalAddresses are the derived address values of the global settings,
// by key.
func (p *Plugin) globalAddresses() map[string]*vppnat.Nat44AddressPool {
	out := map[string]*vppnat.Nat44AddressPool{}
	if g := p.globalSettings(); g != nil {
		for _, kv := range globalDerivedValues(GlobalKey, g) {
			if v, ok := kv.Value.(*vppnat.Nat44AddressPool); ok {
				out[kv.Key] = v
			}
		}
	}
	return out
}

// --- nat_interfaces ----------------------------------------------------------

func (p *Plugin) globalInterfaceDescriptor() *api.TypedDescriptor[*vppnat.Nat44Interface, any] {
	return &api.TypedDescriptor[*vppnat.Nat44Interface, any]{
		Name:        GlobalInterfaceDescriptorName,
		KeySelector: func(key string) bool { return strings.HasPrefix(key, globalInterfaceKeyPrefix) },
		ValueComparator: func(_ string, a, b *vppnat.Nat44Interface) bool {
			return a.GetName() == b.GetName() && wantedFeatures(a) == wantedFeatures(b)
		},
		Create: func(ctx context.Context, _ string, i *vppnat.Nat44Interface) (any, error) {
			return nil, p.syncInterface(ctx, i.GetName(), wantedFeatures(i))
		},
		Update: func(ctx context.Context, _ string, _, i *vppnat.Nat44Interface, _ any) (any, error) {
			return nil, p.syncInterface(ctx, i.GetName(), wantedFeatures(i))
		},
		Delete: func(ctx context.Context, _ string, i *vppnat.Nat44Interface, _ any) error {
			return p.clearInterface(ctx, i.GetName())
		},
		Retrieve: func(ctx context.Context, _ []api.TypedKV[*vppnat.Nat44Interface, any]) ([]api.TypedKV[*vppnat.Nat44Interface, any], error) {
			return vppconn.Retrieved(p.retrieveGlobalInterfaces(ctx))
		},
		Dependencies: func(_ string, i *vppnat.Nat44Interface) []api.Dependency {
			return []api.Dependency{{Label: "interface " + i.GetName(), Key: ifplugin.InterfaceKey(i.GetName())}}
		},
		Unique: func(_ string, i *vppnat.Nat44Interface) []api.UniqueName {
			return []api.UniqueName{{Field: "nat44-global nat_interfaces", Name: featuresName(i.GetName())}}
		},
		IsRetriableFailure:   isRetriable,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, GlobalDescriptorName, InterfaceDescriptorName},
	}
}

// retrieveGlobalInterfaces reports the features VPP has on the interfaces
// of the global settings' nat_interfaces, except those the Nat44Interface
// Retrieve reported (a Nat44Interface value of the interface holds them).
func (p *Plugin) retrieveGlobalInterfaces(ctx context.Context) ([]api.TypedKV[*vppnat.Nat44Interface, any], error) {
	expected := p.globalInterfaces()
	p.mu.Lock()
	for name := range p.claimed {
		delete(expected, name)
	}
	p.mu.Unlock()
	if len(expected) == 0 {
		return nil, nil
	}
	all, err := p.h.Interfaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.TypedKV[*vppnat.Nat44Interface, any]
	for name, exp := range expected {
		md, ok := p.ifaces(ctx, name)
		if !ok {
			continue
		}
		f := all[md.SwIfIndex]
		if !f.Inside && !f.Outside && !f.Output {
			continue
		}
		v := &vppnat.Nat44Interface{Name: name, NatInside: f.Inside, NatOutside: f.Outside}
		if f.Output {
			v = &vppnat.Nat44Interface{Name: name, NatOutside: true, OutputFeature: true}
		}
		if wantedFeatures(exp) == wantedFeatures(v) {
			v = proto.Clone(exp).(*vppnat.Nat44Interface)
		}
		out = append(out, api.TypedKV[*vppnat.Nat44Interface, any]{Key: GlobalInterfaceKey(name), Value: v, Origin: api.FromNB})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// --- address_pool ---------------------------------------------------------------

func (p *Plugin) globalAddressDescriptor() *api.TypedDescriptor[*vppnat.Nat44AddressPool, any] {
	return &api.TypedDescriptor[*vppnat.Nat44AddressPool, any]{
		Name:        GlobalAddressDescriptorName,
		KeySelector: func(key string) bool { return strings.HasPrefix(key, globalAddressKeyPrefix) },
		ValueComparator: func(_ string, a, b *vppnat.Nat44AddressPool) bool {
			ra, errA := poolRange(a)
			rb, errB := poolRange(b)
			return errA == nil && errB == nil && ra == rb
		},
		Create: func(ctx context.Context, key string, v *vppnat.Nat44AddressPool) (any, error) {
			_, err := p.syncPool(ctx, key, nil, v)
			return nil, err
		},
		Update: func(ctx context.Context, key string, old, v *vppnat.Nat44AddressPool, _ any) (any, error) {
			_, err := p.syncPool(ctx, key, old, v)
			return nil, err
		},
		Delete: func(ctx context.Context, key string, v *vppnat.Nat44AddressPool, _ any) error {
			_, err := p.syncPool(ctx, key, v, nil)
			return err
		},
		Retrieve: func(ctx context.Context, _ []api.TypedKV[*vppnat.Nat44AddressPool, any]) ([]api.TypedKV[*vppnat.Nat44AddressPool, any], error) {
			return vppconn.Retrieved(p.retrieveGlobalAddresses(ctx))
		},
		IsRetriableFailure:   isRetriable,
		RetrieveDependencies: []string{GlobalDescriptorName},
	}
}

// retrieveGlobalAddresses reports the addresses of the global settings'
// address_pool that VPP has in their list and VRF.
func (p *Plugin) retrieveGlobalAddresses(ctx context.Context) ([]api.TypedKV[*vppnat.Nat44AddressPool, any], error) {
	expected := p.globalAddresses()
	if len(expected) == 0 {
		return nil, nil
	}
	vpp, err := p.dumpAddresses(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.TypedKV[*vppnat.Nat44AddressPool, any]
	for key, v := range expected {
		r, err := poolRange(v)
		if err != nil || !holds(vpp, r) {
			continue
		}
		out = append(out, api.TypedKV[*vppnat.Nat44AddressPool, any]{Key: key, Value: proto.Clone(v).(*vppnat.Nat44AddressPool), Origin: api.FromNB})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// poolName names a pool of syncPool, which takes both the labels of
// Nat44AddressPool values and the keys of the global settings' addresses.
func poolName(label string) string {
	if strings.HasPrefix(label, globalAddressKeyPrefix) {
		return "NAT44 global address_pool address " + label
	}
	return "NAT44 address pool " + label
}

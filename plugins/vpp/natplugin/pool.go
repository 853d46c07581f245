package natplugin

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

func poolLabel(key string) string {
	return strings.TrimPrefix(key, models.VPPNat44AddressPool.KeyPrefix)
}

// addrRange is a pool as VPP keeps it: the addresses first..last (as
// numbers) of one list (twice-NAT or not), in a VRF.
type addrRange struct {
	first, last uint32
	vrf         uint32
	twice       bool
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func addrOf(n uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// poolRange is the range of a valid pool.
func poolRange(v *vppnat.Nat44AddressPool) (addrRange, error) {
	first, err := netip.ParseAddr(v.GetFirstIp())
	if err != nil || !first.Is4() {
		return addrRange{}, api.NonRetriable(fmt.Errorf("first_ip %q is not an IPv4 address", v.GetFirstIp()))
	}
	last := first
	if v.GetLastIp() != "" {
		if last, err = netip.ParseAddr(v.GetLastIp()); err != nil || !last.Is4() {
			return addrRange{}, api.NonRetriable(fmt.Errorf("last_ip %q is not an IPv4 address", v.GetLastIp()))
		}
	}
	return addrRange{first: u32(first), last: u32(last), vrf: v.GetVrfId(), twice: v.GetTwiceNat()}, nil
}

func (r addrRange) String() string {
	list := ""
	if r.twice {
		list = " (twice-NAT)"
	}
	if r.first == r.last {
		return fmt.Sprintf("%s vrf %d%s", addrOf(r.first), r.vrf, list)
	}
	return fmt.Sprintf("%s-%s vrf %d%s", addrOf(r.first), addrOf(r.last), r.vrf, list)
}

// vppAddresses are VPP's pool addresses by list (twice-NAT or not) and
// address: their VRF.
type vppAddresses map[bool]map[uint32]uint32

func (p *Plugin) dumpAddresses(ctx context.Context) (vppAddresses, error) {
	list, err := p.h.Addresses(ctx)
	if err != nil {
		return nil, err
	}
	out := vppAddresses{false: {}, true: {}}
	for _, a := range list {
		if a.IP.Is4() {
			out[a.TwiceNAT][u32(a.IP)] = a.VrfID
		}
	}
	return out, nil
}

func (p *Plugin) poolDescriptor() *api.TypedDescriptor[*vppnat.Nat44AddressPool, *vppnat.Nat44AddressPool] {
	prefix := models.VPPNat44AddressPool.KeyPrefix
	return &api.TypedDescriptor[*vppnat.Nat44AddressPool, *vppnat.Nat44AddressPool]{
		Name:         AddressPoolDescriptorName,
		NBKeyPrefix:  prefix,
		KeySelector:  func(key string) bool { return strings.HasPrefix(key, prefix) },
		KeyLabel:     poolLabel,
		WithMetadata: true,
		MetadataMapFactory: func() api.MetadataMapRW {
			mm := api.NewMetadataMap()
			p.mu.Lock()
			p.poolMeta = mm
			p.mu.Unlock()
			return mm
		},
		ValueComparator: func(_ string, a, b *vppnat.Nat44AddressPool) bool {
			ra, errA := poolRange(a)
			rb, errB := poolRange(b)
			if errA != nil || errB != nil {
				return proto.Equal(a, b)
			}
			return a.GetName() == b.GetName() && ra == rb
		},
		Validate: func(key string, v *vppnat.Nat44AddressPool) error {
			if err := models.VPPNat44AddressPool.CheckKey(key, v); err != nil {
				return validate.Invalid(err)
			}
			return nil
		},
		Create: func(ctx context.Context, key string, v *vppnat.Nat44AddressPool) (*vppnat.Nat44AddressPool, error) {
			return p.syncPool(ctx, poolLabel(key), nil, v)
		},
		Update: func(ctx context.Context, key string, old, v *vppnat.Nat44AddressPool, _ *vppnat.Nat44AddressPool) (*vppnat.Nat44AddressPool, error) {
			return p.syncPool(ctx, poolLabel(key), old, v)
		},
		Delete: func(ctx context.Context, key string, v *vppnat.Nat44AddressPool, _ *vppnat.Nat44AddressPool) error {
			_, err := p.syncPool(ctx, poolLabel(key), v, nil)
			return err
		},
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppnat.Nat44AddressPool, *vppnat.Nat44AddressPool]) ([]api.TypedKV[*vppnat.Nat44AddressPool, *vppnat.Nat44AddressPool], error) {
			return vppconn.Retrieved(p.retrievePools(ctx, c))
		},
		Dependencies:         func(string, *vppnat.Nat44AddressPool) []api.Dependency { return []api.Dependency{globalDependency} },
		IsRetriableFailure:   isRetriable,
		RetrieveDependencies: []string{GlobalDescriptorName},
	}
}

// appliedPools are the pools of the metadata map (applied), by label.
func (p *Plugin) appliedPools() map[string]*vppnat.Nat44AddressPool {
	p.mu.Lock()
	mm := p.poolMeta
	p.mu.Unlock()
	out := map[string]*vppnat.Nat44AddressPool{}
	for label, md := range mm.Snapshot() {
		if v, ok := md.(*vppnat.Nat44AddressPool); ok && v != nil {
			out[label] = v
		}
	}
	return out
}

// syncPool brings the addresses of a pool from old (nil: none) to v (nil:
// none), from what VPP has (one dump): the addresses of old that v does
// not hold are deleted (those VPP has), those of v that VPP lacks are
// added, and those VPP has in another VRF deleted and added again. An
// address of v that VPP has already is taken as it is (an interrupted
// create, a lost reply), unless another applied pool holds it: two pools
// sharing addresses would take them from each other. VPP adds and deletes
// a range address by address and stops at the first that fails: the
// calls are made on runs of addresses that can all pass. It returns the
// metadata (a copy of v). label is a pool's label, or the key of an
// address of the global settings' address_pool; the global settings'
// addresses count as applied pools.
func (p *Plugin) syncPool(ctx context.Context, label string, old, v *vppnat.Nat44AddressPool) (*vppnat.Nat44AddressPool, error) {
	var want, had *addrRange
	if v != nil {
		r, err := poolRange(v)
		if err != nil {
			return nil, err
		}
		want = &r
		others := p.appliedPools()
		for key, a := range p.globalAddresses() {
			others[key] = a
		}
		delete(others, label)
		for other, ov := range others {
			if o, err := poolRange(ov); err == nil && o.twice == r.twice && o.first <= r.last && r.first <= o.last {
				return nil, fmt.Errorf("%s (%s): its addresses overlap those of %s (%s), applied (VPP keeps an address once)", poolName(label), r, poolName(other), o)
			}
		}
	}
	if old != nil {
		r, err := poolRange(old)
		if err != nil {
			return nil, err
		}
		had = &r
	}
	vpp, err := p.dumpAddresses(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", poolName(label), err)
	}
	inWant := func(twice bool, a uint32) bool {
		return want != nil && want.twice == twice && want.first <= a && a <= want.last
	}
	// Deletions: the old addresses v does not hold, and v's addresses VPP
	// has in another VRF (VPP deletes by address in the list: the VRF of
	// the request does not matter).
	type deletion struct {
		twice bool
		addrs []uint32
	}
	var dels []deletion
	if had != nil {
		d := deletion{twice: had.twice}
		for a := had.first; ; a++ {
			if _, ok := vpp[had.twice][a]; ok && !inWant(had.twice, a) {
				d.addrs = append(d.addrs, a)
			}
			if a == had.last {
				break
			}
		}
		dels = append(dels, d)
	}
	var add []uint32
	if want != nil {
		moved := deletion{twice: want.twice}
		for a := want.first; ; a++ {
			vrf, ok := vpp[want.twice][a]
			switch {
			case !ok:
				add = append(add, a)
			case vrf != want.vrf:
				moved.addrs = append(moved.addrs, a)
				add = append(add, a)
			}
			if a == want.last {
				break
			}
		}
		dels = append(dels, moved)
	}
	for _, d := range dels {
		for _, run := range runs(d.addrs) {
			if err := p.h.AddDelAddresses(ctx, addrOf(run[0]), addrOf(run[1]), 0, d.twice, false); err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY) {
				return nil, fmt.Errorf("%s: deleting %s-%s: %w", poolName(label), addrOf(run[0]), addrOf(run[1]), err)
			}
		}
	}
	if want == nil {
		return nil, nil
	}
	for _, run := range runs(add) {
		if err := p.h.AddDelAddresses(ctx, addrOf(run[0]), addrOf(run[1]), want.vrf, want.twice, true); err != nil {
			return nil, fmt.Errorf("%s: adding %s-%s: %w", poolName(label), addrOf(run[0]), addrOf(run[1]), err)
		}
	}
	return proto.Clone(v).(*vppnat.Nat44AddressPool), nil
}

// runs groups sorted-or-not addresses into runs of consecutive ones
// ([first, last] each), in order.
func runs(addrs []uint32) [][2]uint32 {
	if len(addrs) == 0 {
		return nil
	}
	sorted := append([]uint32(nil), addrs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var out [][2]uint32
	cur := [2]uint32{sorted[0], sorted[0]}
	for _, a := range sorted[1:] {
		switch {
		case a == cur[1]:
			// a duplicate
		case a == cur[1]+1:
			cur[1] = a
		default:
			out = append(out, cur)
			cur = [2]uint32{a, a}
		}
	}
	return append(out, cur)
}

// retrievePools reports the pools the NB expects and those the agent has
// applied (the metadata map) whose every address VPP has, in the pool's
// list and VRF: VPP keeps no tag on addresses, so those no such pool holds
// are not reported (someone else's, or a pool the NB dropped while the
// agent was away: left alone). A pool VPP holds only part of is not
// reported either: it is created again (Create adds what is missing).
func (p *Plugin) retrievePools(ctx context.Context, correlate []api.TypedKV[*vppnat.Nat44AddressPool, *vppnat.Nat44AddressPool]) ([]api.TypedKV[*vppnat.Nat44AddressPool, *vppnat.Nat44AddressPool], error) {
	candidates := p.appliedPools()
	for _, c := range correlate {
		if c.Value != nil {
			candidates[poolLabel(c.Key)] = c.Value
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	vpp, err := p.dumpAddresses(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.TypedKV[*vppnat.Nat44AddressPool, *vppnat.Nat44AddressPool]
	for label, v := range candidates {
		r, err := poolRange(v)
		if err != nil || !holds(vpp, r) {
			continue
		}
		out = append(out, api.TypedKV[*vppnat.Nat44AddressPool, *vppnat.Nat44AddressPool]{
			Key: models.VPPNat44AddressPool.KeyPrefix + label, Value: proto.Clone(v).(*vppnat.Nat44AddressPool),
			Metadata: proto.Clone(v).(*vppnat.Nat44AddressPool), Origin: api.FromNB,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// holds tells whether VPP has every address of r in its list and VRF.
func holds(vpp vppAddresses, r addrRange) bool {
	for a := r.first; ; a++ {
		if vrf, ok := vpp[r.twice][a]; !ok || vrf != r.vrf {
			return false
		}
		if a == r.last {
			return true
		}
	}
}

package l3plugin

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// arpSpec is a valid ARP entry in kernel terms.
type arpSpec struct {
	iface string
	ip    netip.Addr
	mac   net.HardwareAddr
}

func parseARP(a *linuxl3.ARPEntry) (arpSpec, error) {
	ip, err := parseAddr(a.GetIpAddress())
	if err != nil || !ip.IsValid() {
		return arpSpec{}, fmt.Errorf("ip_address %q is not an IP address", a.GetIpAddress())
	}
	mac, err := net.ParseMAC(a.GetHwAddress())
	if err != nil {
		return arpSpec{}, fmt.Errorf("hw_address: %w", err)
	}
	return arpSpec{iface: a.GetInterface(), ip: ip, mac: mac}, nil
}

func (s arpSpec) family() int {
	if s.ip.Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}

func (s arpSpec) String() string {
	return s.ip.String() + " lladdr " + s.mac.String() + " dev " + s.iface
}

func (s arpSpec) neigh(index int) *netlink.Neigh {
	return &netlink.Neigh{
		LinkIndex:    index,
		Family:       s.family(),
		State:        netlink.NUD_PERMANENT,
		IP:           net.IP(s.ip.AsSlice()),
		HardwareAddr: s.mac,
	}
}

// arpsEquivalent is the ValueComparator: the same entry whatever the
// spelling of the addresses ("02:AA:..." and "02:aa:...").
func arpsEquivalent(a, b *linuxl3.ARPEntry) bool {
	sa, errA := parseARP(a)
	sb, errB := parseARP(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return sa.iface == sb.iface && sa.ip == sb.ip && bytes.Equal(sa.mac, sb.mac)
}

func (p *Plugin) arpDescriptor() *api.TypedDescriptor[*linuxl3.ARPEntry, *Placement] {
	return &api.TypedDescriptor[*linuxl3.ARPEntry, *Placement]{
		Name:        ARPDescriptorName,
		NBKeyPrefix: models.LinuxARP.KeyPrefix,
		KeySelector: func(key string) bool { return strings.HasPrefix(key, models.LinuxARP.KeyPrefix) },
		ValueComparator: func(_ string, a, b *linuxl3.ARPEntry) bool {
			return arpsEquivalent(a, b)
		},
		WithMetadata: true,
		MetadataMapFactory: func() api.MetadataMapRW {
			m := newPlacementIndex(arpTarget)
			p.arps.Store(m)
			return m
		},
		Validate: validateARP,
		Create:   p.setARP,
		Update: func(ctx context.Context, key string, _, n *linuxl3.ARPEntry, _ *Placement) (*Placement, error) {
			return p.setARP(ctx, key, n)
		},
		Delete:             p.deleteARP,
		Retrieve:           p.retrieveARPs,
		IsRetriableFailure: isRetriable,
		Dependencies: func(_ string, a *linuxl3.ARPEntry) []api.Dependency {
			// Up, not just present: the kernel flushes permanent
			// neighbours when a link goes down.
			return []api.Dependency{{Label: "interface " + a.GetInterface() + " up", Key: ifplugin.StateKey(a.GetInterface(), true)}}
		},
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName},
	}
}

func validateARP(key string, a *linuxl3.ARPEntry) error {
	if err := models.LinuxARP.CheckKey(key, a); err != nil {
		return invalid(err)
	}
	return nil
}

// setARP adds or replaces the permanent neighbour (NeighSet: create or
// replace), so it serves Create and the in-place Update of the MAC, and is
// idempotent. A batch of one (arpBatch).
func (p *Plugin) setARP(ctx context.Context, key string, a *linuxl3.ARPEntry) (*Placement, error) {
	return single(ctx, p.arpBatch, api.BatchOp{Op: api.OpCreate, Key: key, To: a})
}

// deleteARP removes the neighbour; one already gone is success. A batch of
// one (arpBatch).
func (p *Plugin) deleteARP(ctx context.Context, key string, a *linuxl3.ARPEntry, md *Placement) error {
	_, err := single(ctx, p.arpBatch, api.BatchOp{Op: api.OpDelete, Key: key, From: a, Metadata: md})
	return err
}

// retrieveARPs lists the permanent neighbours on the links of the interfaces
// the expected entries use (and of every interface, with
// SetInterfaceLister). Neighbours carry no mark of ownership: the values
// come with an unknown origin, so the scheduler takes those the NB asks for
// (or the agent made) as the agent's and the others as foreign (OBTAINED).
func (p *Plugin) retrieveARPs(ctx context.Context, correlate []api.TypedKV[*linuxl3.ARPEntry, *Placement]) ([]api.TypedKV[*linuxl3.ARPEntry, *Placement], error) {
	names := map[string]struct{}{}
	expected := make(map[string]*linuxl3.ARPEntry, len(correlate))
	for _, c := range correlate {
		if c.Value != nil {
			names[c.Value.GetInterface()] = struct{}{}
			expected[c.Key] = c.Value
		}
	}
	byNS := p.interfacesByNamespace(ctx, names)
	var out []api.TypedKV[*linuxl3.ARPEntry, *Placement]
	seen := map[string]struct{}{}
	for _, ref := range sortedRefs(byNS) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		idx := byNS[ref]
		if len(idx) == 0 {
			continue
		}
		h, err := p.handle(ref)
		if err != nil {
			if isGone(err) {
				continue
			}
			return nil, err
		}
		for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			neighs, err := dump("neighbours of "+ref.String(), func() ([]netlink.Neigh, error) { return h.NeighList(0, family) })
			if err != nil {
				return nil, err
			}
			for _, n := range neighs {
				if n.State&netlink.NUD_PERMANENT == 0 || n.Flags&netlink.NTF_PROXY != 0 || len(n.HardwareAddr) == 0 {
					continue
				}
				name, ok := idx[n.LinkIndex]
				if !ok {
					continue
				}
				ip, ok := netip.AddrFromSlice(n.IP)
				if !ok {
					continue
				}
				v := &linuxl3.ARPEntry{Interface: name, IpAddress: ip.Unmap().String(), HwAddress: n.HardwareAddr.String()}
				key, err := models.LinuxARP.Key(v)
				if err != nil {
					p.log.Debug("retrieve: permanent neighbour has no valid key, skipped", "namespace", ref.String(), "neighbour", n.String(), "error", err)
					continue
				}
				if _, dup := seen[key]; dup {
					continue
				}
				seen[key] = struct{}{}
				if exp, ok := expected[key]; ok && arpsEquivalent(exp, v) {
					v = proto.Clone(exp).(*linuxl3.ARPEntry)
				}
				out = append(out, api.TypedKV[*linuxl3.ARPEntry, *Placement]{
					Key: key, Value: v, Origin: api.UnknownOrigin,
					Metadata: &Placement{Namespace: ref, LinkIndex: n.LinkIndex, Applied: neighApplied(n), target: addrTarget(ip)},
				})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

package l2plugin

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

// FIBDescriptorName is the descriptor of static L2 FIB entries.
const FIBDescriptorName = "vpp-l2-fib"

// FIBMetadata is what the FIB descriptor keeps per entry: the bd_id and
// the outgoing interface's sw_if_index (~0 for a DROP entry) it was added
// with, so that it is deleted as it was added (VPP deletes a forwarding
// entry only when given its interface, and keeps the entries of a deleted
// interface), in the VPP process VPPPID.
type FIBMetadata struct {
	BdID      uint32
	SwIfIndex uint32
	VPPPID    uint32
}

// fibSpec is a FIB entry value in comparable form.
type fibSpec struct {
	bd, mac, iface  string // mac canonical; iface empty for DROP
	drop            bool
	static, bviFlag bool // FORWARD only: VPP makes every DROP entry static
}

func parseFIB(f *vppl2.FIBEntry) fibSpec {
	s := fibSpec{bd: f.GetBridgeDomain(), mac: strings.ToLower(f.GetPhysAddress()), drop: f.GetAction() == vppl2.FIBEntry_DROP}
	if hw, err := net.ParseMAC(f.GetPhysAddress()); err == nil {
		s.mac = hw.String()
	}
	if !s.drop {
		s.iface, s.static, s.bviFlag = f.GetOutgoingInterface(), f.GetStaticConfig(), f.GetBridgedVirtualInterface()
	}
	return s
}

// fibsEquivalent is the ValueComparator: the MAC's spelling aside, and for
// a DROP entry its flags (VPP makes every DROP entry static and no BVI's).
func fibsEquivalent(a, b *vppl2.FIBEntry) bool { return parseFIB(a) == parseFIB(b) }

func (p *Plugin) fibDescriptor() *api.TypedDescriptor[*vppl2.FIBEntry, *FIBMetadata] {
	prefix := models.VPPL2FIB.KeyPrefix
	return &api.TypedDescriptor[*vppl2.FIBEntry, *FIBMetadata]{
		Name:            FIBDescriptorName,
		NBKeyPrefix:     prefix,
		KeySelector:     func(key string) bool { return strings.HasPrefix(key, prefix) },
		ValueComparator: func(_ string, a, b *vppl2.FIBEntry) bool { return fibsEquivalent(a, b) },
		WithMetadata:    true,
		Validate: func(key string, f *vppl2.FIBEntry) error {
			if err := models.VPPL2FIB.CheckKey(key, f); err != nil {
				return validate.Invalid(err)
			}
			return nil
		},
		Create: p.createFIB,
		Update: func(ctx context.Context, key string, _, f *vppl2.FIBEntry, _ *FIBMetadata) (*FIBMetadata, error) {
			return p.createFIB(ctx, key, f)
		},
		// In place (VPP's add replaces the entry) when only the flags of a
		// FORWARD entry change; another action or interface is another
		// dependency: the entry is made again.
		UpdateWithRecreate: func(_ string, a, b *vppl2.FIBEntry, _ *FIBMetadata) bool {
			sa, sb := parseFIB(a), parseFIB(b)
			return sa.drop != sb.drop || sa.iface != sb.iface
		},
		Delete: p.deleteFIB,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppl2.FIBEntry, *FIBMetadata]) ([]api.TypedKV[*vppl2.FIBEntry, *FIBMetadata], error) {
			return vppconn.Retrieved(p.retrieveFIBs(ctx, c))
		},
		IsRetriableFailure:   isRetriable,
		Dependencies:         fibDependencies,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, BridgeDomainDescriptorName, BDInterfaceDescriptorName},
	}
}

// fibDependencies: a FORWARD entry needs its interface in its bridge domain
// (the binding, which needs both), a DROP entry its bridge domain.
func fibDependencies(_ string, f *vppl2.FIBEntry) []api.Dependency {
	bd := f.GetBridgeDomain()
	if f.GetAction() == vppl2.FIBEntry_DROP {
		return []api.Dependency{{Label: "bridge domain " + bd, Key: models.VPPBridgeDomain.KeyPrefix + bd}}
	}
	iface := f.GetOutgoingInterface()
	return []api.Dependency{{Label: "interface " + iface + " in bridge domain " + bd, Key: BDInterfaceKey(bd, iface)}}
}

func toMAC(s string) ethernet_types.MacAddress {
	var m ethernet_types.MacAddress
	hw, _ := net.ParseMAC(s)
	copy(m[:], hw)
	return m
}

// createFIB adds the entry (l2fib_add_del; VPP replaces an entry of that
// MAC in the domain): a DROP entry as a filter, a FORWARD one through its
// interface, static and BVI as the value says.
func (p *Plugin) createFIB(ctx context.Context, key string, f *vppl2.FIBEntry) (*FIBMetadata, error) {
	s := parseFIB(f)
	pid := p.m.PID()
	bdID, ok := p.BridgeDomainIndex(s.bd)
	if !ok {
		return nil, fmt.Errorf("FIB entry %s: bridge domain %s has no bd_id (not created)", key, s.bd)
	}
	sw := noIndex
	if !s.drop {
		md, ok := p.ifaces(ctx, s.iface)
		if !ok {
			// The dependency should have prevented this.
			return nil, fmt.Errorf("FIB entry %s: interface %s has no sw_if_index in the VPP connected now", key, s.iface)
		}
		sw = md.SwIfIndex
	}
	err := p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
		_, err := c.L2fibAddDel(ctx, &l2.L2fibAddDel{
			Mac: toMAC(s.mac), BdID: bdID, SwIfIndex: interface_types.InterfaceIndex(sw), IsAdd: true,
			StaticMac: s.static || s.drop, FilterMac: s.drop, BviMac: s.bviFlag,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("l2fib_add_del (add %s to %s, bd_id %d, sw_if_index %d): %w", s.mac, s.bd, bdID, sw, err)
	}
	return &FIBMetadata{BdID: bdID, SwIfIndex: sw, VPPPID: pid}, nil
}

// deleteFIB removes the entry (l2fib_add_del delete, with the bd_id and the
// interface it was added with: VPP deletes a forwarding entry only when
// given its interface). An entry, domain or interface already gone, or an
// entry added to a VPP that has restarted since, is success.
func (p *Plugin) deleteFIB(ctx context.Context, key string, f *vppl2.FIBEntry, md *FIBMetadata) error {
	s := parseFIB(f)
	if md == nil || md.VPPPID != p.m.PID() {
		return nil
	}
	err := p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
		_, err := c.L2fibAddDel(ctx, &l2.L2fibAddDel{
			Mac: toMAC(s.mac), BdID: md.BdID, SwIfIndex: interface_types.InterfaceIndex(md.SwIfIndex), IsAdd: false,
		})
		return err
	})
	if err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY, govppapi.INVALID_SW_IF_INDEX) {
		return fmt.Errorf("l2fib_add_del (delete %s from %s, bd_id %d): %w", s.mac, s.bd, md.BdID, err)
	}
	return nil
}

// retrieveFIBs reports the entries of the agent's bridge domains
// (l2_fib_table_dump of all domains; the domains' bd_ids from the bridge
// domain descriptor's metadata, which its Retrieve has filled):
//
//   - an expected entry that VPP has, as VPP has it (its interface named
//     through the interface metadata, see interfaceNames), the expected
//     value itself when equivalent;
//   - every other static entry (a filter, or an interface's) that no
//     expected value names: the agent's (origin FromNB), which a full
//     resync deletes;
//   - not the entries VPP makes itself: those it learns (not static) and
//     the BVI's MAC (VPP adds it when an interface joins as the BVI), and
//     not those of an interface without a logical name.
func (p *Plugin) retrieveFIBs(ctx context.Context, correlate []api.TypedKV[*vppl2.FIBEntry, *FIBMetadata]) ([]api.TypedKV[*vppl2.FIBEntry, *FIBMetadata], error) {
	pid := p.m.PID()
	expected := map[string]*vppl2.FIBEntry{}
	var names []string
	for _, c := range correlate {
		if c.Value != nil {
			expected[c.Key] = c.Value
			if i := c.Value.GetOutgoingInterface(); i != "" {
				names = append(names, i)
			}
		}
	}
	bdName := map[uint32]string{}
	p.mu.Lock()
	mm := p.bdMeta
	p.mu.Unlock()
	if mm != nil {
		for _, label := range mm.ListLabels() {
			if md, ok := p.domainMetadata(label); ok {
				bdName[md.Index] = label
			}
		}
	}
	var details []*l2.L2FibTableDetails
	err := p.call(ctx, func(ctx context.Context, _ l2.RPCService, conn govppapi.Connection) (err error) {
		details, err = vppconn.Dump[*l2.L2FibTableDetails](ctx, conn, &l2.L2FibTableDump{BdID: noIndex})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("l2_fib_table_dump: %w", err)
	}
	if len(bdName) == 0 {
		return nil, nil
	}
	nameOf, err := p.interfaceNames(ctx, names)
	if err != nil {
		return nil, err
	}
	var out []api.TypedKV[*vppl2.FIBEntry, *FIBMetadata]
	seen := map[string]bool{}
	for _, d := range details {
		bd, ok := bdName[d.BdID]
		if !ok {
			continue
		}
		v := &vppl2.FIBEntry{PhysAddress: d.Mac.String(), BridgeDomain: bd, StaticConfig: d.StaticMac, BridgedVirtualInterface: d.BviMac}
		if d.FilterMac {
			v.Action, v.StaticConfig, v.BridgedVirtualInterface = vppl2.FIBEntry_DROP, false, false
		} else if n, ok := nameOf[uint32(d.SwIfIndex)]; ok {
			v.OutgoingInterface = n.name
		}
		key := models.VPPL2FIB.KeyPrefix + bd + "/mac/" + v.PhysAddress
		exp := expected[key]
		switch {
		case exp == nil && (!d.StaticMac || d.BviMac):
			continue // VPP's own: learned, or the BVI's MAC
		case !d.FilterMac && v.OutgoingInterface == "":
			// An interface without a logical name: left alone, and an
			// expected entry is not found (a resync adds it again).
			p.log.Debug("retrieve: a FIB entry of an interface without a logical name is left alone", "bridge_domain", bd, "mac", v.PhysAddress, "sw_if_index", d.SwIfIndex)
			continue
		case seen[key]:
			continue
		}
		seen[key] = true
		if exp != nil && fibsEquivalent(exp, v) {
			v = exp
		}
		out = append(out, api.TypedKV[*vppl2.FIBEntry, *FIBMetadata]{
			Key: key, Value: v, Origin: api.FromNB,
			Metadata: &FIBMetadata{BdID: d.BdID, SwIfIndex: uint32(d.SwIfIndex), VPPPID: pid},
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

package l3plugin

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/netagent-io/netagent/plugins/vpp/internal/ipconv"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// arpSpec is an ARP entry in VPP terms.
type arpSpec struct {
	iface  string
	ip     netip.Addr
	mac    net.HardwareAddr
	static bool
}

func parseARP(a *vppl3.ARPEntry) (arpSpec, error) {
	addr, err := netip.ParseAddr(a.GetIpAddress())
	if err != nil {
		return arpSpec{}, fmt.Errorf("ip_address %q: %w", a.GetIpAddress(), err)
	}
	mac, err := net.ParseMAC(a.GetPhysAddress())
	if err != nil || len(mac) != 6 {
		return arpSpec{}, fmt.Errorf("phys_address %q is not a MAC address", a.GetPhysAddress())
	}
	return arpSpec{iface: a.GetInterface(), ip: addr, mac: mac, static: a.GetStatic()}, nil
}

func (s arpSpec) String() string {
	return fmt.Sprintf("%s lladdr %s dev %s static %v", s.ip, s.mac, s.iface, s.static)
}

func (s arpSpec) same(o arpSpec) bool {
	return s.iface == o.iface && s.ip == o.ip && bytes.Equal(s.mac, o.mac) && s.static == o.static
}

// arpsEquivalent is the ValueComparator: MAC and address spellings aside.
func arpsEquivalent(a, b *vppl3.ARPEntry) bool {
	sa, errA := parseARP(a)
	sb, errB := parseARP(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return sa.same(sb)
}

func (p *Plugin) arpDescriptor() *api.TypedDescriptor[*vppl3.ARPEntry, any] {
	prefix := models.VPPARP.KeyPrefix
	return &api.TypedDescriptor[*vppl3.ARPEntry, any]{
		Name:               ARPDescriptorName,
		NBKeyPrefix:        prefix,
		KeySelector:        func(key string) bool { return strings.HasPrefix(key, prefix) },
		ValueComparator:    func(_ string, a, b *vppl3.ARPEntry) bool { return arpsEquivalent(a, b) },
		Validate:           validateARP,
		Create:             p.createARP,
		Update:             p.updateARP,
		UpdateWithRecreate: arpNeedsRecreate,
		Delete:             p.deleteARP,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppl3.ARPEntry, any]) ([]api.TypedKV[*vppl3.ARPEntry, any], error) {
			return vppconn.Retrieved(p.retrieveARPs(ctx, c))
		},
		IsRetriableFailure: isRetriable,
		Dependencies: func(_ string, a *vppl3.ARPEntry) []api.Dependency {
			return []api.Dependency{{Label: "interface " + a.GetInterface(), Key: ifplugin.InterfaceKey(a.GetInterface())}}
		},
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName},
	}
}

func validateARP(key string, a *vppl3.ARPEntry) error {
	if err := models.VPPARP.CheckKey(key, a); err != nil {
		return validate.Invalid(err)
	}
	return nil
}

// arpNeedsRecreate: VPP does not turn a static entry into a dynamic one (an
// add without the STATIC flag over a static entry is refused), so that change
// deletes the entry and adds it again.
func arpNeedsRecreate(_ string, oldValue, newValue *vppl3.ARPEntry, _ any) bool {
	return oldValue.GetStatic() && !newValue.GetStatic()
}

// neighborRequest is the ip_neighbor_add_del of an entry on the interface
// at swIfIndex.
func neighborRequest(isAdd bool, s arpSpec, swIfIndex uint32) *ip_neighbor.IPNeighborAddDel {
	flags := ip_neighbor.IP_API_NEIGHBOR_FLAG_NONE
	if s.static {
		flags = ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC
	}
	var mac ethernet_types.MacAddress
	copy(mac[:], s.mac)
	return &ip_neighbor.IPNeighborAddDel{
		IsAdd: isAdd,
		Neighbor: ip_neighbor.IPNeighbor{
			SwIfIndex: interface_types.InterfaceIndex(swIfIndex), Flags: flags,
			MacAddress: mac, IPAddress: ipconv.ToVPP(s.ip),
		},
	}
}

func (p *Plugin) neighborAddDel(ctx context.Context, req *ip_neighbor.IPNeighborAddDel) error {
	return p.call(ctx, func(ctx context.Context, conn govppapi.Connection) error {
		_, err := ip_neighbor.NewServiceClient(conn).IPNeighborAddDel(ctx, req)
		return err
	})
}

// arpOp is an entry's Create, Update or Delete prepared for its one
// ip_neighbor_add_del (req; nil for a Delete with nothing to send), which
// they send alone and Batch pipelined.
type arpOp struct {
	s   arpSpec
	sw  uint32
	req *ip_neighbor.IPNeighborAddDel
}

// prepareSet prepares the add of an entry, or its change in place
// (ip_neighbor_add_del of an existing entry replaces its MAC and flags).
func (p *Plugin) prepareSet(ctx context.Context, a *vppl3.ARPEntry) (arpOp, error) {
	s, err := parseARP(a)
	if err != nil {
		return arpOp{}, api.NonRetriable(validate.Invalid(err))
	}
	md, ok := p.ifaces(ctx, s.iface)
	if !ok {
		return arpOp{}, fmt.Errorf("ARP entry %s: interface %s has no sw_if_index in the VPP connected now (no metadata of %s, or that of a VPP that has restarted since)", s, s.iface, ifplugin.InterfaceDescriptorName)
	}
	return arpOp{s: s, sw: md.SwIfIndex, req: neighborRequest(true, s, md.SwIfIndex)}, nil
}

// finishSet is the result of an add given VPP's.
func finishSet(op arpOp, err error) error {
	if err != nil {
		return fmt.Errorf("ip_neighbor_add_del (add %s): %w", op.s, err)
	}
	return nil
}

func (p *Plugin) createARP(ctx context.Context, _ string, a *vppl3.ARPEntry) (any, error) {
	op, err := p.prepareSet(ctx, a)
	if err != nil {
		return nil, err
	}
	return nil, finishSet(op, p.neighborAddDel(ctx, op.req))
}

func (p *Plugin) updateARP(ctx context.Context, key string, _, newValue *vppl3.ARPEntry, _ any) (any, error) {
	return p.createARP(ctx, key, newValue)
}

// prepareDeleteARP prepares the removal of an entry; nothing is sent for
// one never added (a value that does not parse) or whose interface has no
// index in the VPP connected now. The agent deletes an interface's entries
// before the interface (they depend on it); an interface deleted by
// someone else leaves its static entries in VPP, where no message reaches
// them (see Limits in doc.go).
func (p *Plugin) prepareDeleteARP(ctx context.Context, a *vppl3.ARPEntry) arpOp {
	s, err := parseARP(a)
	if err != nil {
		return arpOp{} // never added
	}
	md, ok := p.ifaces(ctx, s.iface)
	if !ok {
		p.log.Warn("ARP entry to delete: its interface has no sw_if_index in the VPP connected now (a VPP restarted since, or the interface deleted); nothing is sent", "entry", s.String())
		return arpOp{}
	}
	return arpOp{s: s, sw: md.SwIfIndex, req: neighborRequest(false, s, md.SwIfIndex)}
}

// finishDeleteARP is the result of a removal given VPP's: an entry
// already gone, or whose interface is gone, is success.
func (p *Plugin) finishDeleteARP(op arpOp, err error) error {
	switch {
	case err == nil, vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY):
		return nil
	case vppconn.IsVPPError(err, govppapi.INVALID_SW_IF_INDEX):
		if op.s.static {
			p.log.Warn("ARP entry to delete: VPP no longer has its interface, and keeps a static entry under the deleted interface's sw_if_index, where no message reaches it (the next interface to get that index has it)", "entry", op.s.String(), "sw_if_index", op.sw)
		}
		return nil
	}
	return fmt.Errorf("ip_neighbor_add_del (delete %s): %w", op.s, err)
}

func (p *Plugin) deleteARP(ctx context.Context, _ string, a *vppl3.ARPEntry, _ any) error {
	op := p.prepareDeleteARP(ctx, a)
	if op.req == nil {
		return nil
	}
	return p.finishDeleteARP(op, p.neighborAddDel(ctx, op.req))
}

// arpBatch is the ARP descriptor's Batch: each operation is prepared as
// its Create, Update or Delete prepares it, the ip_neighbor_add_del of all
// are sent pipelined in the batch's order (a delete and an add of one
// entry keep theirs), and each is completed as alone, with its own reply.
func (p *Plugin) arpBatch(ctx context.Context, ops []api.BatchOp) {
	pipelineBatch(ctx, p, ops, func(op *api.BatchOp) (arpOp, vppconn.Call, error) {
		var a arpOp
		var err error
		switch op.Op {
		case api.OpCreate, api.OpUpdate:
			to, _ := op.To.(*vppl3.ARPEntry)
			a, err = p.prepareSet(ctx, to)
		case api.OpDelete:
			from, _ := op.From.(*vppl3.ARPEntry)
			a = p.prepareDeleteARP(ctx, from)
		default:
			err = api.NonRetriable(fmt.Errorf("ARP entry %s: unknown operation %s", op.Key, op.Op))
		}
		if err != nil || a.req == nil {
			return a, vppconn.Call{}, err
		}
		return a, vppconn.Call{Request: a.req, Reply: &ip_neighbor.IPNeighborAddDelReply{}}, nil
	}, func(op *api.BatchOp, a arpOp, err error) (any, error) {
		if op.Op == api.OpDelete {
			return nil, p.finishDeleteARP(a, err)
		}
		return nil, finishSet(a, err)
	})
}

// retrieveARPs dumps the neighbours of every interface (ip_neighbor_dump
// with sw_if_index ~0, once per address family) and keeps those of the
// interfaces of the expected entries (of every configured interface with
// SetInterfaceLister). An expected entry found is the NB's; a static entry
// that no expected value names has an unknown origin (OBTAINED unless the NB
// asks for it); dynamic entries that are not expected are the data plane's
// and are not reported.
func (p *Plugin) retrieveARPs(ctx context.Context, correlate []api.TypedKV[*vppl3.ARPEntry, any]) ([]api.TypedKV[*vppl3.ARPEntry, any], error) {
	names := map[string]struct{}{}
	expected := make(map[string]*vppl3.ARPEntry, len(correlate))
	for _, c := range correlate {
		if c.Value != nil {
			names[c.Value.GetInterface()] = struct{}{}
			expected[c.Key] = c.Value
		}
	}
	index, err := p.interfaceIndex(ctx, names, true)
	if err != nil || len(index) == 0 {
		return nil, err
	}
	nameOf := make(map[uint32]string, len(index))
	for name, sw := range index {
		nameOf[sw] = name
	}
	var out []api.TypedKV[*vppl3.ARPEntry, any]
	seen := map[string]bool{}
	for _, af := range []ip_types.AddressFamily{ip_types.ADDRESS_IP4, ip_types.ADDRESS_IP6} {
		// One dump for all interfaces: a dump per interface would cost a
		// round trip per interface.
		var details []*ip_neighbor.IPNeighborDetails
		err := p.call(ctx, func(ctx context.Context, conn govppapi.Connection) (err error) {
			details, err = vppconn.Dump[*ip_neighbor.IPNeighborDetails](ctx, conn, &ip_neighbor.IPNeighborDump{
				SwIfIndex: interface_types.InterfaceIndex(noIndex), Af: af,
			})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("dumping the neighbours (%s): %w", af, err)
		}
		for _, d := range details {
			n := d.Neighbor
			name, ok := nameOf[uint32(n.SwIfIndex)]
			if !ok {
				continue // an interface without a logical name, or not looked at
			}
			addr, ok := ipconv.FromVPP(n.IPAddress)
			if !ok {
				continue
			}
			v := &vppl3.ARPEntry{
				Interface: name, IpAddress: addr.String(), PhysAddress: n.MacAddress.ToMAC().String(),
				Static: n.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0,
			}
			key, err := models.VPPARP.Key(v)
			if err != nil || seen[key] {
				continue
			}
			kv := api.TypedKV[*vppl3.ARPEntry, any]{Key: key, Value: v, Origin: api.FromNB}
			if exp, ok := expected[key]; ok {
				if arpsEquivalent(exp, v) {
					kv.Value = proto.Clone(exp).(*vppl3.ARPEntry)
				}
			} else if v.Static {
				kv.Origin = api.UnknownOrigin
			} else {
				continue
			}
			seen[key] = true
			out = append(out, kv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

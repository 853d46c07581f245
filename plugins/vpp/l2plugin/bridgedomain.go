package l2plugin

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/netagent-io/netagent/plugins/vpp/internal/ipconv"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

// maxBdID is VPP's highest bridge domain id (L2_BD_ID_MAX).
const maxBdID = 1<<24 - 1

// BridgeDomainMetadata is what the bridge domain descriptor keeps per bridge
// domain: the VPP bd_id the plugin allocated (the lowest free one from 1) or
// found (by tag), so that it survives updates, and the interfaces the value
// names (its bindings), for the binding descriptor's Retrieve.
type BridgeDomainMetadata struct {
	Index uint32
	// Interfaces are the logical names of the value's interfaces, sorted.
	Interfaces []string
}

// newMetadata is the metadata of the domain with bd_id id and value bd.
func newMetadata(id uint32, bd *vppl2.BridgeDomain) *BridgeDomainMetadata {
	md := &BridgeDomainMetadata{Index: id}
	for _, i := range bd.GetInterfaces() {
		md.Interfaces = append(md.Interfaces, i.GetName())
	}
	sort.Strings(md.Interfaces)
	return md
}

// member is a bridge domain interface in comparable form.
type member struct {
	bvi bool
	shg uint32
}

// bdSpec is a bridge domain value in comparable form: members and ARP
// termination entries are sets.
type bdSpec struct {
	flood, uuFlood, forward, learn, arpTerm bool
	macAge                                  uint32
	members                                 map[string]member
	arp                                     map[netip.Addr]string // IP -> canonical MAC
}

func parseBD(bd *vppl2.BridgeDomain) (bdSpec, error) {
	s := bdSpec{
		flood: bd.GetFlood(), uuFlood: bd.GetUnknownUnicastFlood(), forward: bd.GetForward(),
		learn: bd.GetLearn(), arpTerm: bd.GetArpTermination(), macAge: bd.GetMacAge(),
		members: map[string]member{}, arp: map[netip.Addr]string{},
	}
	for _, i := range bd.GetInterfaces() {
		s.members[i.GetName()] = member{bvi: i.GetBridgedVirtualInterface(), shg: i.GetSplitHorizonGroup()}
	}
	for _, e := range bd.GetArpTerminationTable() {
		a, err := netip.ParseAddr(e.GetIpAddress())
		if err != nil {
			return s, fmt.Errorf("arp_termination_table: %q: %w", e.GetIpAddress(), err)
		}
		mac, err := net.ParseMAC(e.GetPhysAddress())
		if err != nil || len(mac) != 6 {
			return s, fmt.Errorf("arp_termination_table: %q is not a MAC address", e.GetPhysAddress())
		}
		s.arp[a] = mac.String()
	}
	return s, nil
}

func (s bdSpec) sameAttrs(o bdSpec) bool {
	return s.flood == o.flood && s.uuFlood == o.uuFlood && s.forward == o.forward &&
		s.learn == o.learn && s.arpTerm == o.arpTerm && s.macAge == o.macAge
}

func (s bdSpec) flags() l2.BdFlags {
	var f l2.BdFlags
	for _, b := range []struct {
		on   bool
		flag l2.BdFlags
	}{
		{s.learn, l2.BRIDGE_API_FLAG_LEARN}, {s.forward, l2.BRIDGE_API_FLAG_FWD},
		{s.flood, l2.BRIDGE_API_FLAG_FLOOD}, {s.uuFlood, l2.BRIDGE_API_FLAG_UU_FLOOD},
		{s.arpTerm, l2.BRIDGE_API_FLAG_ARP_TERM},
	} {
		if b.on {
			f |= b.flag
		}
	}
	return f
}

// bdsEquivalent is the ValueComparator: the order of interfaces and ARP
// termination entries, and address spellings, do not matter.
func bdsEquivalent(a, b *vppl2.BridgeDomain) bool {
	sa, errA := parseBD(a)
	sb, errB := parseBD(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return sa.sameAttrs(sb) && maps.Equal(sa.members, sb.members) && maps.Equal(sa.arp, sb.arp)
}

func bdName(key string) string { return strings.TrimPrefix(key, models.VPPBridgeDomain.KeyPrefix) }

func (p *Plugin) bridgeDomainDescriptor() *api.TypedDescriptor[*vppl2.BridgeDomain, *BridgeDomainMetadata] {
	prefix := models.VPPBridgeDomain.KeyPrefix
	return &api.TypedDescriptor[*vppl2.BridgeDomain, *BridgeDomainMetadata]{
		Name:               BridgeDomainDescriptorName,
		NBKeyPrefix:        prefix,
		KeySelector:        func(key string) bool { return strings.HasPrefix(key, prefix) },
		KeyLabel:           bdName,
		ValueComparator:    func(_ string, a, b *vppl2.BridgeDomain) bool { return bdsEquivalent(a, b) },
		WithMetadata:       true,
		MetadataMapFactory: p.newMetadataMap,
		Validate:           validateBD,
		Create:             p.createBD,
		Update:             p.updateBD,
		Delete:             p.deleteBD,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppl2.BridgeDomain, *BridgeDomainMetadata]) ([]api.TypedKV[*vppl2.BridgeDomain, *BridgeDomainMetadata], error) {
			return vppconn.Retrieved(p.retrieveBDs(ctx, c))
		},
		IsRetriableFailure:   isRetriable,
		DerivedValues:        bdDerivedValues,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName},
	}
}

func validateBD(key string, bd *vppl2.BridgeDomain) error {
	var pr validate.Problems
	if err := models.VPPBridgeDomain.CheckKey(key, bd); err != nil {
		pr.Model(err)
	}
	if bd.GetMacAge() > 255 {
		pr.Add("mac_age", "%d is above 255 minutes (VPP keeps 8 bits)", bd.GetMacAge())
	}
	for k, i := range bd.GetInterfaces() {
		if i.GetSplitHorizonGroup() > 255 {
			pr.Add(fmt.Sprintf("interfaces[%d].split_horizon_group", k), "%d is above 255 (VPP keeps 8 bits)", i.GetSplitHorizonGroup())
		}
	}
	return pr.Err()
}

// bdDerivedValues: one binding per interface, handled by the binding
// descriptor (BDInterfaceKey).
func bdDerivedValues(key string, bd *vppl2.BridgeDomain) []api.KeyValuePair {
	name := bdName(key)
	out := make([]api.KeyValuePair, 0, len(bd.GetInterfaces()))
	for _, i := range bd.GetInterfaces() {
		out = append(out, api.KeyValuePair{Key: BDInterfaceKey(name, i.GetName()), Value: proto.Clone(i)})
	}
	return out
}

// dumpBDs lists bridge domains with their members: all for id ~0. The
// sw_if_index filter is always ~0: VPP 25.10's handler does not implement
// it and returns nothing for any other value, so the domain of an
// interface is found among the members of all domains.
func (p *Plugin) dumpBDs(ctx context.Context, id uint32) ([]*l2.BridgeDomainDetails, error) {
	var out []*l2.BridgeDomainDetails
	err := p.call(ctx, func(ctx context.Context, _ l2.RPCService, conn govppapi.Connection) (err error) {
		out, err = vppconn.Dump[*l2.BridgeDomainDetails](ctx, conn, &l2.BridgeDomainDump{BdID: id, SwIfIndex: interface_types.InterfaceIndex(noIndex)})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bridge_domain_dump: %w", err)
	}
	return out, nil
}

// dumpArpTerm lists the ARP termination entries: of all domains for id ~0.
func (p *Plugin) dumpArpTerm(ctx context.Context, id uint32) ([]*l2.BdIPMacDetails, error) {
	var out []*l2.BdIPMacDetails
	err := p.call(ctx, func(ctx context.Context, _ l2.RPCService, conn govppapi.Connection) (err error) {
		out, err = vppconn.Dump[*l2.BdIPMacDetails](ctx, conn, &l2.BdIPMacDump{BdID: id})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bd_ip_mac_dump: %w", err)
	}
	return out, nil
}

// findByTag returns the bridge domain of VPP tagged name, if any.
func findByTag(all []*l2.BridgeDomainDetails, name string) *l2.BridgeDomainDetails {
	for _, d := range all {
		if d.BdID != 0 && d.BdTag == name {
			return d
		}
	}
	return nil
}

// bdFromVPP builds the value of a dumped bridge domain with the members that
// nameOf maps back to logical names (nil: none); others are left out.
func bdFromVPP(d *l2.BridgeDomainDetails, arp []*l2.BdIPMacDetails, nameOf func(sw uint32) (string, bool)) *vppl2.BridgeDomain {
	v := &vppl2.BridgeDomain{
		Name: d.BdTag, Flood: d.Flood, UnknownUnicastFlood: d.UuFlood, Forward: d.Forward, Learn: d.Learn,
		ArpTermination: d.ArpTerm, MacAge: uint32(d.MacAge),
	}
	if nameOf != nil {
		v.Interfaces = membersFromVPP(d, nameOf)
	}
	for _, e := range arp {
		if e.Entry.BdID != d.BdID {
			continue
		}
		a, ok := ipconv.FromVPP(e.Entry.IP)
		if !ok {
			continue
		}
		v.ArpTerminationTable = append(v.ArpTerminationTable, &vppl2.BridgeDomain_ArpTerminationEntry{
			IpAddress: a.String(), PhysAddress: e.Entry.Mac.ToMAC().String(),
		})
	}
	return v
}

// createBD creates the bridge domain (tag = logical name) with the lowest
// free bd_id from 1, then its ARP termination entries. A domain tagged with
// the name already in VPP (left by an interrupted create, or a lost reply)
// is taken over and brought to the value.
func (p *Plugin) createBD(ctx context.Context, key string, bd *vppl2.BridgeDomain) (*BridgeDomainMetadata, error) {
	name := bdName(key)
	want, err := parseBD(bd)
	if err != nil {
		return nil, api.NonRetriable(err)
	}
	all, err := p.dumpBDs(ctx, noIndex)
	if err != nil {
		return nil, fmt.Errorf("bridge domain %s: %w", name, err)
	}
	if d := findByTag(all, name); d != nil {
		arp, err := p.dumpArpTerm(ctx, d.BdID)
		if err != nil {
			return nil, fmt.Errorf("bridge domain %s: %w", name, err)
		}
		have, _ := parseBD(bdFromVPP(d, arp, nil))
		p.log.Info("bridge domain found in VPP by its tag; taking it over", "bridge-domain", name, "bd_id", d.BdID)
		return newMetadata(d.BdID, bd), p.sync(ctx, name, d.BdID, have, want)
	}
	used := p.usedIndexes()
	for _, d := range all {
		used[d.BdID] = true
	}
	id := uint32(1)
	for used[id] {
		id++
	}
	if id > maxBdID {
		return nil, fmt.Errorf("bridge domain %s: no free bd_id", name)
	}
	err = p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
		r, err := c.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{
			BdID: id, Flood: want.flood, UuFlood: want.uuFlood, Forward: want.forward, Learn: want.learn,
			ArpTerm: want.arpTerm, MacAge: uint8(want.macAge), BdTag: name, IsAdd: true,
		})
		if err == nil && r.BdID != 0 {
			id = r.BdID
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bridge_domain_add_del_v2 (add %s, bd_id %d): %w", name, id, err)
	}
	have := want
	have.arp = map[netip.Addr]string{}
	return newMetadata(id, bd), p.sync(ctx, name, id, have, want)
}

// updateBD changes flags, MAC age and the ARP termination table in place,
// from what VPP has (one dump of the domain and one of its entries), not
// from the old value: VPP deletes an ARP termination entry only when given
// the MAC it has, and a lost reply or a change behind the agent's back
// leaves VPP other than the old value. The bindings are derived values of
// their own.
func (p *Plugin) updateBD(ctx context.Context, key string, _, newValue *vppl2.BridgeDomain, oldMd *BridgeDomainMetadata) (*BridgeDomainMetadata, error) {
	name := bdName(key)
	want, err := parseBD(newValue)
	if err != nil {
		return oldMd, api.NonRetriable(err)
	}
	id := noIndex
	if oldMd != nil {
		id = oldMd.Index
	}
	list, err := p.dumpBDs(ctx, id)
	if err != nil {
		return oldMd, fmt.Errorf("bridge domain %s: %w", name, err)
	}
	d := findByTag(list, name)
	if d == nil {
		return oldMd, fmt.Errorf("bridge domain %s: not in VPP (looked for the tag %q at bd_id %d; ~0 is all)", name, name, id)
	}
	arp, err := p.dumpArpTerm(ctx, d.BdID)
	if err != nil {
		return oldMd, fmt.Errorf("bridge domain %s: %w", name, err)
	}
	have, _ := parseBD(bdFromVPP(d, arp, nil))
	return newMetadata(d.BdID, newValue), p.sync(ctx, name, d.BdID, have, want)
}

// sync brings the attributes and ARP termination entries of bridge domain id
// from have (what VPP has) to want: flags set and cleared (bridge_flags),
// MAC age, and exactly the entries to remove and to add or re-point
// (bd_ip_mac_add_del; VPP takes an add of a known IP as a re-point).
func (p *Plugin) sync(ctx context.Context, name string, id uint32, have, want bdSpec) error {
	hf, wf := have.flags(), want.flags()
	for _, op := range []struct {
		set   bool
		flags l2.BdFlags
	}{{true, wf &^ hf}, {false, hf &^ wf}} {
		if op.flags == 0 {
			continue
		}
		err := p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
			_, err := c.BridgeFlags(ctx, &l2.BridgeFlags{BdID: id, IsSet: op.set, Flags: op.flags})
			return err
		})
		if err != nil {
			return fmt.Errorf("bridge_flags (%s, bd_id %d, set %v, flags %#x): %w", name, id, op.set, uint32(op.flags), err)
		}
	}
	if have.macAge != want.macAge {
		err := p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
			_, err := c.BridgeDomainSetMacAge(ctx, &l2.BridgeDomainSetMacAge{BdID: id, MacAge: uint8(want.macAge)})
			return err
		})
		if err != nil {
			return fmt.Errorf("bridge_domain_set_mac_age (%s, bd_id %d, %d): %w", name, id, want.macAge, err)
		}
	}
	var del, add []netip.Addr
	for a := range have.arp {
		if _, ok := want.arp[a]; !ok {
			del = append(del, a)
		}
	}
	for a, mac := range want.arp {
		if have.arp[a] != mac {
			add = append(add, a)
		}
	}
	sortAddrs(del)
	sortAddrs(add)
	for _, a := range del {
		// VPP deletes an entry only when given its MAC (else UNSPECIFIED):
		// have is what VPP has.
		if err := p.arpTerm(ctx, false, id, a, have.arp[a]); err != nil {
			return fmt.Errorf("bd_ip_mac_add_del (%s, bd_id %d, delete %s): %w", name, id, a, err)
		}
	}
	for _, a := range add {
		if err := p.arpTerm(ctx, true, id, a, want.arp[a]); err != nil {
			return fmt.Errorf("bd_ip_mac_add_del (%s, bd_id %d, add %s %s): %w", name, id, a, want.arp[a], err)
		}
	}
	return nil
}

func sortAddrs(list []netip.Addr) {
	sort.Slice(list, func(i, j int) bool { return list[i].Less(list[j]) })
}

func (p *Plugin) arpTerm(ctx context.Context, isAdd bool, id uint32, a netip.Addr, mac string) error {
	hw, _ := net.ParseMAC(mac)
	var m ethernet_types.MacAddress
	copy(m[:], hw)
	return p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
		_, err := c.BdIPMacAddDel(ctx, &l2.BdIPMacAddDel{IsAdd: isAdd, Entry: l2.BdIPMac{BdID: id, IP: ipconv.ToVPP(a), Mac: m}})
		return err
	})
}

// deleteBD deletes the bridge domain (its members are gone by then: the
// bindings are deleted before it; its ARP termination entries go with it).
// A domain already gone, or whose bd_id now carries another tag, is success.
func (p *Plugin) deleteBD(ctx context.Context, key string, _ *vppl2.BridgeDomain, md *BridgeDomainMetadata) error {
	name := bdName(key)
	var d *l2.BridgeDomainDetails
	if md != nil {
		list, err := p.dumpBDs(ctx, md.Index)
		if err != nil {
			return fmt.Errorf("bridge domain %s: %w", name, err)
		}
		d = findByTag(list, name)
	} else {
		all, err := p.dumpBDs(ctx, noIndex)
		if err != nil {
			return fmt.Errorf("bridge domain %s: %w", name, err)
		}
		d = findByTag(all, name)
	}
	if d == nil {
		p.log.Debug("bridge domain to delete is not in VPP (any more)", "bridge-domain", name)
		return nil
	}
	err := p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
		_, err := c.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: d.BdID, IsAdd: false})
		return err
	})
	if err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY) {
		if vppconn.IsVPPError(err, govppapi.BD_IN_USE) {
			var members []uint32
			for _, m := range d.SwIfDetails {
				members = append(members, uint32(m.SwIfIndex))
			}
			return fmt.Errorf("bridge_domain_add_del_v2 (delete %s, bd_id %d): interfaces the agent did not put there are still members (sw_if_index %v): %w", name, d.BdID, members, err)
		}
		return fmt.Errorf("bridge_domain_add_del_v2 (delete %s, bd_id %d): %w", name, d.BdID, err)
	}
	return nil
}

// retrieveBDs reports the bridge domains of VPP tagged with a valid name
// (the tag marks them as the agent's: origin FromNB); untagged ones are not
// the agent's and are not reported. The interfaces of a domain the NB
// expects are its expected ones, in their order, then the members VPP has
// that the expected value does not name (see namer), so that a resync takes
// them out: whether an expected interface is in VPP is the binding
// descriptor's Retrieve's answer, and a binding that waits for its interface
// or was refused does not make the domain differ. A domain the NB does not
// expect gets the members VPP has. A value equivalent to the expected one is
// returned as the expected one.
func (p *Plugin) retrieveBDs(ctx context.Context, correlate []api.TypedKV[*vppl2.BridgeDomain, *BridgeDomainMetadata]) ([]api.TypedKV[*vppl2.BridgeDomain, *BridgeDomainMetadata], error) {
	expected := make(map[string]*vppl2.BridgeDomain, len(correlate))
	configured := make(map[string][]string, len(correlate))
	for _, c := range correlate {
		if c.Value == nil {
			continue
		}
		expected[bdName(c.Key)] = c.Value
		configured[bdName(c.Key)] = newMetadata(0, c.Value).Interfaces
	}
	all, err := p.dumpBDs(ctx, noIndex)
	if err != nil {
		return nil, err
	}
	var arp []*l2.BdIPMacDetails
	if len(all) > 0 {
		if arp, err = p.dumpArpTerm(ctx, noIndex); err != nil {
			return nil, err
		}
	}
	nm := p.newNamer(ctx, configured)
	var out []api.TypedKV[*vppl2.BridgeDomain, *BridgeDomainMetadata]
	for _, d := range p.ourDomains(all) {
		exp := expected[d.BdTag]
		v := bdFromVPP(d, arp, nm.nameIn(d.BdTag))
		if exp != nil {
			v.Interfaces = withExpectedMembers(exp.GetInterfaces(), v.Interfaces)
			if bdsEquivalent(exp, v) {
				v = proto.Clone(exp).(*vppl2.BridgeDomain)
			}
		}
		out = append(out, api.TypedKV[*vppl2.BridgeDomain, *BridgeDomainMetadata]{
			Key: models.VPPBridgeDomain.KeyPrefix + d.BdTag, Value: v, Metadata: newMetadata(d.BdID, v), Origin: api.FromNB,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// ourDomains returns the dumped domains that are the agent's: tagged with a
// valid name, the first of each tag.
func (p *Plugin) ourDomains(all []*l2.BridgeDomainDetails) []*l2.BridgeDomainDetails {
	var out []*l2.BridgeDomainDetails
	seen := map[string]uint32{}
	for _, d := range all {
		if d.BdID == 0 || d.BdTag == "" {
			continue
		}
		if _, err := models.VPPBridgeDomain.ParseKey(models.VPPBridgeDomain.KeyPrefix + d.BdTag); err != nil {
			p.log.Debug("retrieve: bridge domain tag is not a name of ours, skipped", "bd_id", d.BdID, "tag", d.BdTag)
			continue
		}
		if other, dup := seen[d.BdTag]; dup {
			p.log.Warn("retrieve: two bridge domains carry one tag; reporting the first", "tag", d.BdTag, "bd_ids", []uint32{other, d.BdID})
			continue
		}
		seen[d.BdTag] = d.BdID
		out = append(out, d)
	}
	return out
}

// membersFromVPP lists the members of a dumped domain that nameOf maps back
// to logical names, in VPP's order.
func membersFromVPP(d *l2.BridgeDomainDetails, nameOf func(sw uint32) (string, bool)) []*vppl2.BridgeDomain_Interface {
	var out []*vppl2.BridgeDomain_Interface
	for _, m := range d.SwIfDetails {
		name, ok := nameOf(uint32(m.SwIfIndex))
		if !ok {
			continue
		}
		out = append(out, &vppl2.BridgeDomain_Interface{
			Name: name, BridgedVirtualInterface: m.SwIfIndex == d.BviSwIfIndex, SplitHorizonGroup: uint32(m.Shg),
		})
	}
	return out
}

// withExpectedMembers is the expected interfaces followed by the members VPP
// has that they do not name.
func withExpectedMembers(expected, inVPP []*vppl2.BridgeDomain_Interface) []*vppl2.BridgeDomain_Interface {
	out := make([]*vppl2.BridgeDomain_Interface, 0, len(expected)+len(inVPP))
	names := make(map[string]bool, len(expected))
	for _, i := range expected {
		out = append(out, proto.Clone(i).(*vppl2.BridgeDomain_Interface))
		names[i.GetName()] = true
	}
	for _, i := range inVPP {
		if !names[i.GetName()] {
			out = append(out, i)
		}
	}
	return out
}

// namer maps the members of VPP's bridge domains back to logical names.
// The agent's interfaces (every interface of the lister that is not
// foreign, and the non-foreign interfaces the domains name) are named in
// every domain. A foreign (OBTAINED) interface is named only in a domain
// whose value names it: one someone else put into a domain of ours is left
// there.
type namer struct {
	agent      map[uint32]string
	foreign    map[uint32]string
	configured map[string][]string // bridge domain -> the interfaces its value names, sorted
}

// newNamer resolves the interfaces for configured (bridge domain -> the
// interfaces its value names, sorted); names without metadata are left out.
func (p *Plugin) newNamer(ctx context.Context, configured map[string][]string) namer {
	names := map[string]struct{}{}
	for _, list := range configured {
		for _, n := range list {
			names[n] = struct{}{}
		}
	}
	if p.names != nil {
		for _, n := range p.names(ctx) {
			names[n] = struct{}{}
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	nm := namer{agent: map[uint32]string{}, foreign: map[uint32]string{}, configured: configured}
	for _, n := range sorted {
		md, ok := p.ifaces(ctx, n)
		if !ok {
			continue
		}
		into := nm.agent
		if md.Foreign {
			into = nm.foreign
		}
		if other, dup := into[md.SwIfIndex]; dup {
			p.log.Warn("retrieve: two interfaces claim one sw_if_index", "interfaces", []string{other, n}, "sw_if_index", md.SwIfIndex)
			continue
		}
		into[md.SwIfIndex] = n
	}
	return nm
}

// nameIn returns the name mapping of the members of bridge domain bd.
func (nm namer) nameIn(bd string) func(sw uint32) (string, bool) {
	return func(sw uint32) (string, bool) {
		if n, ok := nm.agent[sw]; ok {
			return n, true
		}
		n, ok := nm.foreign[sw]
		if !ok {
			return "", false
		}
		list := nm.configured[bd]
		k := sort.SearchStrings(list, n)
		return n, k < len(list) && list[k] == n
	}
}

package natplugin

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	"github.com/netagent-io/netagent/plugins/vpp/natplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

// Key prefixes of the mappings, derived from their DNat44 values.
const (
	staticMappingKeyPrefix   = "vpp/nat44/static-mapping/"
	identityMappingKeyPrefix = "vpp/nat44/identity-mapping/"
)

// StaticMappingKey is the key of a static mapping of the DNat44 value with
// that label: vpp/nat44/static-mapping/<label>/<id>, id naming its external
// endpoint (models.StaticMappingID, e.g. tcp/80/ip/192.0.2.1).
func StaticMappingKey(label string, m *vppnat.DNat44_StaticMapping) string {
	id, _ := models.StaticMappingID(m)
	return staticMappingKeyPrefix + label + "/" + id
}

// IdentityMappingKey is the key of an identity mapping of the DNat44 value
// with that label: vpp/nat44/identity-mapping/<label>/<id>
// (models.IdentityMappingID, e.g. vrf/0/tcp/22/ip/192.0.2.1).
func IdentityMappingKey(label string, m *vppnat.DNat44_IdentityMapping) string {
	id, _ := models.IdentityMappingID(m)
	return identityMappingKeyPrefix + label + "/" + id
}

// mappingLabel returns the label of a mapping key, given the mapping's id
// (labels may contain "/": the key is cut at both ends).
func mappingLabel(key, prefix, id string) (string, error) {
	rest, ok := strings.CutPrefix(key, prefix)
	if ok {
		rest, ok = strings.CutSuffix(rest, "/"+id)
	}
	if !ok || rest == "" {
		return "", api.NonRetriable(fmt.Errorf("mapping key %s does not end with its mapping %s", key, id))
	}
	return rest, nil
}

func dnatLabel(key string) string { return strings.TrimPrefix(key, models.VPPDNat44.KeyPrefix) }

// isOurTag tells whether a mapping tag is one the agent gives: a valid
// DNat44 label.
func isOurTag(tag string) bool {
	if tag == "" {
		return false
	}
	_, err := models.VPPDNat44.ParseKey(models.VPPDNat44.KeyPrefix + tag)
	return err == nil
}

func protoNumber(p vppnat.DNat44_Protocol) uint8 {
	switch p {
	case vppnat.DNat44_UDP:
		return vppcalls.ProtoUDP
	case vppnat.DNat44_ICMP:
		return vppcalls.ProtoICMP
	}
	return vppcalls.ProtoTCP
}

func protoOf(n uint8) (vppnat.DNat44_Protocol, bool) {
	switch n {
	case vppcalls.ProtoTCP:
		return vppnat.DNat44_TCP, true
	case vppcalls.ProtoUDP:
		return vppnat.DNat44_UDP, true
	case vppcalls.ProtoICMP:
		return vppnat.DNat44_ICMP, true
	}
	return 0, false
}

func parseIPv4(s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}
	}
	return a
}

func canonicalIP(s string) string {
	if a := parseIPv4(s); a.IsValid() {
		return a.String()
	}
	return s
}

// --- DNat44 values ----------------------------------------------------------

func (p *Plugin) dnatDescriptor() *api.TypedDescriptor[*vppnat.DNat44, *vppnat.DNat44] {
	prefix := models.VPPDNat44.KeyPrefix
	noop := func(_ context.Context, _ string, d *vppnat.DNat44) (*vppnat.DNat44, error) {
		return proto.Clone(d).(*vppnat.DNat44), nil
	}
	return &api.TypedDescriptor[*vppnat.DNat44, *vppnat.DNat44]{
		Name:         DNat44DescriptorName,
		NBKeyPrefix:  prefix,
		KeySelector:  func(key string) bool { return strings.HasPrefix(key, prefix) },
		KeyLabel:     dnatLabel,
		WithMetadata: true,
		MetadataMapFactory: func() api.MetadataMapRW {
			mm := api.NewMetadataMap()
			p.mu.Lock()
			p.dnatMeta = mm
			p.mu.Unlock()
			return mm
		},
		ValueComparator: func(_ string, a, b *vppnat.DNat44) bool { return dnatsEquivalent(a, b) },
		Validate: func(key string, d *vppnat.DNat44) error {
			if err := models.VPPDNat44.CheckKey(key, d); err != nil {
				return validate.Invalid(err)
			}
			return nil
		},
		// VPP keeps no DNat44 of its own: its mappings are the derived
		// values. The metadata is the value, for their Retrieves.
		Create: noop,
		Update: func(ctx context.Context, key string, _, d *vppnat.DNat44, _ *vppnat.DNat44) (*vppnat.DNat44, error) {
			return noop(ctx, key, d)
		},
		Delete: func(context.Context, string, *vppnat.DNat44, *vppnat.DNat44) error { return nil },
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppnat.DNat44, *vppnat.DNat44]) ([]api.TypedKV[*vppnat.DNat44, *vppnat.DNat44], error) {
			return vppconn.Retrieved(p.retrieveDNats(ctx, c))
		},
		DerivedValues:        dnatDerivedValues,
		IsRetriableFailure:   isRetriable,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, GlobalDescriptorName},
	}
}

// dnatDerivedValues: one value per mapping, so that a change of a DNat44
// changes only the mappings that changed.
func dnatDerivedValues(key string, d *vppnat.DNat44) []api.KeyValuePair {
	label := dnatLabel(key)
	out := make([]api.KeyValuePair, 0, len(d.GetStMappings())+len(d.GetIdMappings()))
	for _, m := range d.GetStMappings() {
		out = append(out, api.KeyValuePair{Key: StaticMappingKey(label, m), Value: proto.Clone(m)})
	}
	for _, m := range d.GetIdMappings() {
		out = append(out, api.KeyValuePair{Key: IdentityMappingKey(label, m), Value: proto.Clone(m)})
	}
	return out
}

// dnatsEquivalent: the order of mappings, and the spelling of addresses, do
// not matter.
func dnatsEquivalent(a, b *vppnat.DNat44) bool {
	if a.GetLabel() != b.GetLabel() || len(a.GetStMappings()) != len(b.GetStMappings()) || len(a.GetIdMappings()) != len(b.GetIdMappings()) {
		return false
	}
	sa, sb := staticByID(a), staticByID(b)
	for id, m := range sa {
		if o, ok := sb[id]; !ok || !staticEquivalent(m, o) {
			return false
		}
	}
	ia, ib := identityByID(a), identityByID(b)
	for id, m := range ia {
		if o, ok := ib[id]; !ok || !identityEquivalent(m, o) {
			return false
		}
	}
	return len(sa) == len(sb) && len(ia) == len(ib)
}

func staticByID(d *vppnat.DNat44) map[string]*vppnat.DNat44_StaticMapping {
	out := map[string]*vppnat.DNat44_StaticMapping{}
	for _, m := range d.GetStMappings() {
		if id, ok := models.StaticMappingID(m); ok {
			out[id] = m
		}
	}
	return out
}

func identityByID(d *vppnat.DNat44) map[string]*vppnat.DNat44_IdentityMapping {
	out := map[string]*vppnat.DNat44_IdentityMapping{}
	for _, m := range d.GetIdMappings() {
		if id, ok := models.IdentityMappingID(m); ok {
			out[id] = m
		}
	}
	return out
}

// normalStatic is a static mapping in comparable form: canonical
// addresses, the local endpoints of a load-balanced mapping sorted.
func normalStatic(m *vppnat.DNat44_StaticMapping) *vppnat.DNat44_StaticMapping {
	n := proto.Clone(m).(*vppnat.DNat44_StaticMapping)
	n.ExternalIp = canonicalIP(n.ExternalIp)
	n.TwiceNatPoolIp = canonicalIP(n.TwiceNatPoolIp)
	for _, l := range n.LocalIps {
		l.LocalIp = canonicalIP(l.LocalIp)
	}
	slices.SortFunc(n.LocalIps, func(a, b *vppnat.DNat44_StaticMapping_LocalIP) int {
		if c := strings.Compare(a.LocalIp, b.LocalIp); c != 0 {
			return c
		}
		if a.LocalPort != b.LocalPort {
			return int(a.LocalPort) - int(b.LocalPort)
		}
		return int(a.VrfId) - int(b.VrfId)
	})
	return n
}

func staticEquivalent(a, b *vppnat.DNat44_StaticMapping) bool {
	return proto.Equal(normalStatic(a), normalStatic(b))
}

func identityEquivalent(a, b *vppnat.DNat44_IdentityMapping) bool {
	na, nb := proto.Clone(a).(*vppnat.DNat44_IdentityMapping), proto.Clone(b).(*vppnat.DNat44_IdentityMapping)
	na.IpAddress, nb.IpAddress = canonicalIP(na.IpAddress), canonicalIP(nb.IpAddress)
	return proto.Equal(na, nb)
}

// retrieveDNats reports the DNat44 values of VPP's tagged mappings (the tag
// is the label: the agent's), origin FromNB. An expected value is reported
// as it is (VPP keeps no DNat44: which of its mappings VPP has is the
// mappings' Retrieves' answer, so a mapping that waits or failed does not
// make the DNat44 differ), followed by the mappings VPP has under its label
// that it does not hold (a resync deletes them). A label the NB does not
// expect gets the mappings VPP has.
func (p *Plugin) retrieveDNats(ctx context.Context, correlate []api.TypedKV[*vppnat.DNat44, *vppnat.DNat44]) ([]api.TypedKV[*vppnat.DNat44, *vppnat.DNat44], error) {
	expected := map[string]*vppnat.DNat44{}
	for _, c := range correlate {
		if c.Value != nil {
			expected[dnatLabel(c.Key)] = c.Value
		}
	}
	inVPP, err := p.vppMappings(ctx, expected)
	if err != nil {
		return nil, err
	}
	var out []api.TypedKV[*vppnat.DNat44, *vppnat.DNat44]
	report := func(label string, v *vppnat.DNat44) {
		out = append(out, api.TypedKV[*vppnat.DNat44, *vppnat.DNat44]{
			Key: models.VPPDNat44.KeyPrefix + label, Value: v, Metadata: proto.Clone(v).(*vppnat.DNat44), Origin: api.FromNB,
		})
	}
	for label, exp := range expected {
		v := proto.Clone(exp).(*vppnat.DNat44)
		if got := inVPP[label]; got != nil {
			st, id := staticByID(exp), identityByID(exp)
			for _, m := range got.GetStMappings() {
				if mid, _ := models.StaticMappingID(m); st[mid] == nil {
					v.StMappings = append(v.StMappings, m)
				}
			}
			for _, m := range got.GetIdMappings() {
				if mid, _ := models.IdentityMappingID(m); id[mid] == nil {
					v.IdMappings = append(v.IdMappings, m)
				}
			}
		}
		report(label, v)
	}
	for label, got := range inVPP {
		if expected[label] == nil {
			report(label, got)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// expectedDNats are the DNat44 values the scheduler holds as applied (the
// metadata map; the DNat44 Retrieve puts there what it reports).
func (p *Plugin) expectedDNats() map[string]*vppnat.DNat44 {
	p.mu.Lock()
	mm := p.dnatMeta
	p.mu.Unlock()
	out := map[string]*vppnat.DNat44{}
	for label, md := range mm.Snapshot() {
		if d, ok := md.(*vppnat.DNat44); ok && d != nil {
			out[label] = d
		}
	}
	return out
}

// vppMappings reads VPP's static, load-balanced and identity mappings and
// returns those tagged with a label, as DNat44 values by label. A mapping
// on an interface is named by the interface's logical name (one the namer
// does not map is left out); VPP's mapping of the address of such an
// interface (it keeps both) is left out too. What VPP does not report is
// taken from the expected mapping of the same external endpoint, if any:
// the session affinity and twice-NAT pool address, the external address
// of a mapping on an interface and the interface of a load-balanced one,
// and self twice-NAT of a mapping on an interface without an address.
func (p *Plugin) vppMappings(ctx context.Context, expected map[string]*vppnat.DNat44) (map[string]*vppnat.DNat44, error) {
	statics, err := p.h.StaticMappings(ctx)
	if err != nil {
		return nil, err
	}
	identities, err := p.h.IdentityMappings(ctx)
	if err != nil {
		return nil, err
	}
	configured := map[string]bool{}
	for _, d := range expected {
		for _, m := range d.GetStMappings() {
			if m.GetExternalInterface() != "" {
				configured[m.GetExternalInterface()] = true
			}
		}
		for _, m := range d.GetIdMappings() {
			if m.GetInterface() != "" {
				configured[m.GetInterface()] = true
			}
		}
	}
	nm := p.newNamer(ctx, configured)
	out := map[string]*vppnat.DNat44{}
	get := func(label string) *vppnat.DNat44 {
		if out[label] == nil {
			out[label] = &vppnat.DNat44{Label: label}
		}
		return out[label]
	}

	// The records to resolve, and the mappings VPP made of them.
	type resolveKey struct {
		tag      string
		proto    uint8
		extPort  uint16
		addrOnly bool
		local    vppcalls.Local
	}
	staticKey := func(sm vppcalls.StaticMapping) resolveKey {
		return resolveKey{tag: sm.Tag, proto: sm.Protocol, extPort: sm.ExternalPort, addrOnly: sm.AddrOnly, local: sm.Locals[0]}
	}
	resolved := map[resolveKey]vppcalls.StaticMapping{}
	toResolve := map[resolveKey]bool{}
	for _, sm := range statics {
		if !sm.LB && len(sm.Locals) == 1 && sm.ExternalSwIfIndex != vppcalls.NoIndex {
			toResolve[staticKey(sm)] = true
		}
	}
	for _, sm := range statics {
		if !sm.LB && len(sm.Locals) == 1 && sm.ExternalSwIfIndex == vppcalls.NoIndex && toResolve[staticKey(sm)] {
			resolved[staticKey(sm)] = sm
		}
	}
	for _, sm := range statics {
		if !isOurTag(sm.Tag) || len(sm.Locals) == 0 {
			continue
		}
		m, ok := staticFromVPP(sm, nm)
		if !ok {
			continue
		}
		id, _ := models.StaticMappingID(m)
		exp := staticByID(expected[sm.Tag])[id]
		if !sm.LB && sm.ExternalSwIfIndex == vppcalls.NoIndex && toResolve[staticKey(sm)] && exp == nil {
			continue // the mapping of the address of an interface (not one the label expects)
		}
		if sm.ExternalSwIfIndex != vppcalls.NoIndex {
			if tw, ok := resolved[staticKey(sm)]; ok {
				m.TwiceNat = twiceMode(tw.TwiceNAT, tw.SelfTwiceNAT)
			}
		}
		if exp != nil {
			fillStatic(m, exp, sm)
		}
		d := get(sm.Tag)
		d.StMappings = append(d.StMappings, m)
	}

	type idKey struct {
		tag      string
		proto    uint8
		port     uint16
		addrOnly bool
		vrf      uint32
	}
	idResolve := map[idKey]bool{}
	for _, im := range identities {
		if im.SwIfIndex != vppcalls.NoIndex {
			idResolve[idKey{im.Tag, im.Protocol, im.Port, im.AddrOnly, im.VrfID}] = true
		}
	}
	// VPP keeps one identity mapping per address (or interface), port and
	// protocol, its VRFs entries of it under the tag of the first: an
	// entry of another expected DNat44 (its Exclusive dependency makes it
	// the only one) is that DNat44's.
	idOwner := map[string]string{}
	for label, d := range expected {
		for id := range identityByID(d) {
			idOwner[id] = label
		}
	}
	for _, im := range identities {
		if !isOurTag(im.Tag) {
			continue
		}
		m := &vppnat.DNat44_IdentityMapping{VrfId: im.VrfID}
		if im.SwIfIndex != vppcalls.NoIndex {
			name, ok := nm.name(im.SwIfIndex)
			if !ok {
				continue
			}
			m.Interface = name
		} else {
			m.IpAddress = im.IP.String()
		}
		if !im.AddrOnly {
			proto, ok := protoOf(im.Protocol)
			if !ok {
				continue
			}
			m.Protocol, m.Port = proto, uint32(im.Port)
		}
		id, _ := models.IdentityMappingID(m)
		label := im.Tag
		exp := identityByID(expected[label])[id]
		if owner, ok := idOwner[id]; exp == nil && ok {
			label, exp = owner, identityByID(expected[owner])[id]
		}
		if im.SwIfIndex == vppcalls.NoIndex && idResolve[idKey{im.Tag, im.Protocol, im.Port, im.AddrOnly, im.VrfID}] && exp == nil {
			continue // the mapping of the address of an interface (not one the label expects)
		}
		if exp != nil && m.Interface != "" {
			m.IpAddress = exp.GetIpAddress() // the original's rule: the interface is preferred
		}
		d := get(label)
		d.IdMappings = append(d.IdMappings, m)
	}
	return out, nil
}

func twiceMode(twice, self bool) vppnat.DNat44_StaticMapping_TwiceNatMode {
	switch {
	case self:
		return vppnat.DNat44_StaticMapping_SELF
	case twice:
		return vppnat.DNat44_StaticMapping_ENABLED
	}
	return vppnat.DNat44_StaticMapping_DISABLED
}

// staticFromVPP is a dumped static mapping as a model mapping; false for
// one the model cannot express (an unknown protocol, an interface the
// namer does not map).
func staticFromVPP(sm vppcalls.StaticMapping, nm namer) (*vppnat.DNat44_StaticMapping, bool) {
	m := &vppnat.DNat44_StaticMapping{TwiceNat: twiceMode(sm.TwiceNAT, sm.SelfTwiceNAT), SessionAffinity: sm.Affinity}
	if sm.ExternalSwIfIndex != vppcalls.NoIndex {
		name, ok := nm.name(sm.ExternalSwIfIndex)
		if !ok {
			return nil, false
		}
		m.ExternalInterface = name
	} else {
		m.ExternalIp = sm.ExternalIP.String()
	}
	if !sm.AddrOnly {
		proto, ok := protoOf(sm.Protocol)
		if !ok {
			return nil, false
		}
		m.Protocol, m.ExternalPort = proto, uint32(sm.ExternalPort)
	}
	for _, l := range sm.Locals {
		local := &vppnat.DNat44_StaticMapping_LocalIP{LocalIp: l.IP.String(), VrfId: l.VrfID}
		if !sm.AddrOnly {
			local.LocalPort = uint32(l.Port)
		}
		if sm.LB {
			local.Probability = uint32(l.Probability)
		}
		m.LocalIps = append(m.LocalIps, local)
	}
	return m, true
}

// fillStatic completes a dumped mapping with what VPP does not report,
// from the expected mapping of the same external endpoint.
func fillStatic(m, exp *vppnat.DNat44_StaticMapping, sm vppcalls.StaticMapping) {
	m.SessionAffinity = exp.GetSessionAffinity()
	m.TwiceNatPoolIp = exp.GetTwiceNatPoolIp()
	if len(m.GetLocalIps()) > 1 {
		m.ExternalInterface = exp.GetExternalInterface()
	} else if m.ExternalInterface != "" {
		m.ExternalIp = exp.GetExternalIp()
		// A record to resolve reports twice-NAT, not self twice-NAT.
		if sm.ExternalSwIfIndex != vppcalls.NoIndex && m.TwiceNat == vppnat.DNat44_StaticMapping_DISABLED &&
			exp.GetTwiceNat() == vppnat.DNat44_StaticMapping_SELF {
			m.TwiceNat = vppnat.DNat44_StaticMapping_SELF
		}
	}
}

// --- static mappings ---------------------------------------------------------

func (p *Plugin) staticMappingDescriptor() *api.TypedDescriptor[*vppnat.DNat44_StaticMapping, any] {
	return &api.TypedDescriptor[*vppnat.DNat44_StaticMapping, any]{
		Name:            StaticMappingDescriptorName,
		KeySelector:     func(key string) bool { return strings.HasPrefix(key, staticMappingKeyPrefix) },
		ValueComparator: func(_ string, a, b *vppnat.DNat44_StaticMapping) bool { return staticEquivalent(a, b) },
		Create: func(ctx context.Context, key string, m *vppnat.DNat44_StaticMapping) (any, error) {
			return nil, p.addDelStatic(ctx, key, m, true)
		},
		Delete: func(ctx context.Context, key string, m *vppnat.DNat44_StaticMapping, _ any) error {
			return p.addDelStatic(ctx, key, m, false)
		},
		Retrieve: func(ctx context.Context, _ []api.TypedKV[*vppnat.DNat44_StaticMapping, any]) ([]api.TypedKV[*vppnat.DNat44_StaticMapping, any], error) {
			return vppconn.Retrieved(p.retrieveStatics(ctx))
		},
		Dependencies: func(_ string, m *vppnat.DNat44_StaticMapping) []api.Dependency {
			id, _ := models.StaticMappingID(m)
			deps := []api.Dependency{globalDependency,
				{Label: "external endpoint " + id + " in no other DNat44", Exclusive: "vpp/nat44/static-mapping/" + id}}
			if iface := m.GetExternalInterface(); iface != "" {
				deps = append(deps, api.Dependency{Label: "interface " + iface, Key: ifplugin.InterfaceKey(iface)})
			}
			return deps
		},
		IsRetriableFailure:   isRetriable,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, DNat44DescriptorName},
	}
}

// toVPPStatic is a mapping of the DNat44 with that label as VPP takes it:
// tagged with the label, out2in-only (destination NAT: only connections
// from the outside are translated by it, as the original agent did).
func (p *Plugin) toVPPStatic(ctx context.Context, label string, m *vppnat.DNat44_StaticMapping) (vppcalls.StaticMapping, error) {
	lb := len(m.GetLocalIps()) > 1
	sm := vppcalls.StaticMapping{
		Tag: label, ExternalSwIfIndex: vppcalls.NoIndex, ExternalPort: uint16(m.GetExternalPort()), AddrOnly: m.GetExternalPort() == 0,
		Out2InOnly: true, LB: lb, Affinity: m.GetSessionAffinity(), PoolIP: parseIPv4(m.GetTwiceNatPoolIp()),
		TwiceNAT:     m.GetTwiceNat() == vppnat.DNat44_StaticMapping_ENABLED,
		SelfTwiceNAT: m.GetTwiceNat() == vppnat.DNat44_StaticMapping_SELF,
	}
	if !sm.AddrOnly {
		sm.Protocol = protoNumber(m.GetProtocol())
	}
	if iface := m.GetExternalInterface(); iface != "" && !lb {
		sw, err := p.swIfIndex(ctx, iface)
		if err != nil {
			return sm, err
		}
		sm.ExternalSwIfIndex = sw
	} else {
		sm.ExternalIP = parseIPv4(m.GetExternalIp())
	}
	for _, l := range m.GetLocalIps() {
		sm.Locals = append(sm.Locals, vppcalls.Local{
			IP: parseIPv4(l.GetLocalIp()), Port: uint16(l.GetLocalPort()), VrfID: l.GetVrfId(), Probability: uint8(l.GetProbability()),
		})
	}
	return sm, nil
}

// addDelStatic adds or deletes a static mapping. An add that VPP refuses
// as existing succeeds when VPP has the mapping as the value asks, tagged
// with the label (an interrupted create, a lost reply); a delete of a
// mapping VPP does not have (or of one on an interface that is gone: VPP
// keeps it to resolve, and nothing can name it) succeeds.
func (p *Plugin) addDelStatic(ctx context.Context, key string, m *vppnat.DNat44_StaticMapping, add bool) error {
	id, _ := models.StaticMappingID(m)
	label, err := mappingLabel(key, staticMappingKeyPrefix, id)
	if err != nil {
		return err
	}
	sm, err := p.toVPPStatic(ctx, label, m)
	var missing *missingInterfaceError
	if !add && errors.As(err, &missing) {
		p.log.Debug("static mapping to delete: its external interface is gone", "mapping", key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("DNat44 %s: %s: %w", label, id, err)
	}
	err = p.h.AddDelStaticMapping(ctx, sm, add)
	return p.mappingResult(ctx, key, label, add, err, &vppnat.DNat44{Label: label, StMappings: []*vppnat.DNat44_StaticMapping{m}},
		func(got *vppnat.DNat44) bool {
			have := staticByID(got)[id]
			return have != nil && staticEquivalent(have, m)
		},
		fmt.Sprintf("%s: VPP has a mapping on that external endpoint already (someone else's, or another DNat44's)", sm))
}

// mappingResult is what the add or delete of a mapping (the DNat44 asked
// holds it alone) ends with, given VPP's answer err: the delete of a
// mapping VPP does not have succeeds; an add VPP refuses as existing
// succeeds when VPP has the mapping as asked (read back, compared by
// found: an interrupted create, a lost reply), else fails saying exists.
func (p *Plugin) mappingResult(ctx context.Context, key, label string, add bool, err error, asked *vppnat.DNat44, found func(*vppnat.DNat44) bool, exists string) error {
	switch {
	case err == nil:
		return nil
	case !add && vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY):
		return nil
	case add && vppconn.IsVPPError(err, govppapi.VALUE_EXIST):
		if got, rerr := p.vppMappings(ctx, map[string]*vppnat.DNat44{label: asked}); rerr == nil && found(got[label]) {
			p.log.Info("mapping found in VPP as the value asks; taken as created", "mapping", key)
			return nil
		}
		return fmt.Errorf("DNat44 %s: %s: %w", label, exists, err)
	}
	return fmt.Errorf("DNat44 %s: %w", label, err)
}

// retrievedMappings lists the mappings of one kind (list) that VPP has
// under the agent's labels, keyed by key, in key order.
func retrievedMappings[M proto.Message](inVPP map[string]*vppnat.DNat44, list func(*vppnat.DNat44) []M, key func(string, M) string) []api.TypedKV[M, any] {
	var out []api.TypedKV[M, any]
	for label, d := range inVPP {
		for _, m := range list(d) {
			out = append(out, api.TypedKV[M, any]{Key: key(label, m), Value: m, Origin: api.FromNB})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// retrieveStatics reports the static mappings VPP has under the agent's
// labels, named as the DNat44 Retrieve names them (the expected values
// come from its metadata map, which the scheduler fills with what that
// Retrieve returned before it calls this one).
func (p *Plugin) retrieveStatics(ctx context.Context) ([]api.TypedKV[*vppnat.DNat44_StaticMapping, any], error) {
	inVPP, err := p.vppMappings(ctx, p.expectedDNats())
	if err != nil {
		return nil, err
	}
	return retrievedMappings(inVPP, (*vppnat.DNat44).GetStMappings, StaticMappingKey), nil
}

// --- identity mappings ----------------------------------------------------------

func (p *Plugin) identityMappingDescriptor() *api.TypedDescriptor[*vppnat.DNat44_IdentityMapping, any] {
	return &api.TypedDescriptor[*vppnat.DNat44_IdentityMapping, any]{
		Name:            IdentityMappingDescriptorName,
		KeySelector:     func(key string) bool { return strings.HasPrefix(key, identityMappingKeyPrefix) },
		ValueComparator: func(_ string, a, b *vppnat.DNat44_IdentityMapping) bool { return identityEquivalent(a, b) },
		Create: func(ctx context.Context, key string, m *vppnat.DNat44_IdentityMapping) (any, error) {
			return nil, p.addDelIdentity(ctx, key, m, true)
		},
		Delete: func(ctx context.Context, key string, m *vppnat.DNat44_IdentityMapping, _ any) error {
			return p.addDelIdentity(ctx, key, m, false)
		},
		Retrieve: func(ctx context.Context, _ []api.TypedKV[*vppnat.DNat44_IdentityMapping, any]) ([]api.TypedKV[*vppnat.DNat44_IdentityMapping, any], error) {
			return vppconn.Retrieved(p.retrieveIdentities(ctx))
		},
		Dependencies: func(_ string, m *vppnat.DNat44_IdentityMapping) []api.Dependency {
			id, _ := models.IdentityMappingID(m)
			deps := []api.Dependency{globalDependency,
				{Label: "identity mapping " + id + " in no other DNat44", Exclusive: "vpp/nat44/identity-mapping/" + id}}
			if iface := m.GetInterface(); iface != "" {
				deps = append(deps, api.Dependency{Label: "interface " + iface, Key: ifplugin.InterfaceKey(iface)})
			}
			return deps
		},
		IsRetriableFailure:   isRetriable,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, DNat44DescriptorName},
	}
}

func (p *Plugin) addDelIdentity(ctx context.Context, key string, m *vppnat.DNat44_IdentityMapping, add bool) error {
	id, _ := models.IdentityMappingID(m)
	label, err := mappingLabel(key, identityMappingKeyPrefix, id)
	if err != nil {
		return err
	}
	im := vppcalls.IdentityMapping{Tag: label, SwIfIndex: vppcalls.NoIndex, Port: uint16(m.GetPort()), AddrOnly: m.GetPort() == 0, VrfID: m.GetVrfId()}
	if !im.AddrOnly {
		im.Protocol = protoNumber(m.GetProtocol())
	}
	if iface := m.GetInterface(); iface != "" {
		sw, err := p.swIfIndex(ctx, iface)
		if err != nil {
			if !add {
				p.log.Debug("identity mapping to delete: its interface is gone", "mapping", key)
				return nil
			}
			return fmt.Errorf("DNat44 %s: identity mapping %s: %w", label, id, err)
		}
		im.SwIfIndex = sw
	} else {
		im.IP = parseIPv4(m.GetIpAddress())
	}
	err = p.h.AddDelIdentityMapping(ctx, im, add)
	return p.mappingResult(ctx, key, label, add, err, &vppnat.DNat44{Label: label, IdMappings: []*vppnat.DNat44_IdentityMapping{m}},
		func(got *vppnat.DNat44) bool {
			have := identityByID(got)[id]
			return have != nil && identityEquivalent(have, m)
		},
		fmt.Sprintf("%s: VPP has that mapping, or a static mapping on that address, already (someone else's, or another DNat44's)", im))
}

func (p *Plugin) retrieveIdentities(ctx context.Context) ([]api.TypedKV[*vppnat.DNat44_IdentityMapping, any], error) {
	inVPP, err := p.vppMappings(ctx, p.expectedDNats())
	if err != nil {
		return nil, err
	}
	return retrievedMappings(inVPP, (*vppnat.DNat44).GetIdMappings, IdentityMappingKey), nil
}

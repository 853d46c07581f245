package aclplugin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
)

// ACLMetadata is what the ACL descriptor keeps per ACL: its VPP index (in
// the pool of its kind), its kind, and the interfaces its value names (its
// assignments), for the assignment descriptor.
type ACLMetadata struct {
	Index uint32
	MACIP bool
	// Ingress and Egress are the interfaces the value names, sorted.
	Ingress, Egress []string
}

// newMetadata is the metadata of the ACL at index; a (nil: none) gives the
// interfaces.
func newMetadata(index uint32, macip bool, a *vppacl.ACL) *ACLMetadata {
	md := &ACLMetadata{
		Index: index, MACIP: macip,
		Ingress: slices.Clone(a.GetInterfaces().GetIngress()),
		Egress:  slices.Clone(a.GetInterfaces().GetEgress()),
	}
	sort.Strings(md.Ingress)
	sort.Strings(md.Egress)
	return md
}

// wants tells whether the ACL's value assigns it to iface in direction dir.
func (md *ACLMetadata) wants(dir, iface string) bool {
	list := md.Ingress
	if dir == Egress {
		list = md.Egress
	}
	_, found := slices.BinarySearch(list, iface)
	return found
}

// names tells whether the ACL's value names iface in either direction.
func (md *ACLMetadata) names(iface string) bool {
	return md.wants(Ingress, iface) || md.wants(Egress, iface)
}

func aclName(key string) string { return strings.TrimPrefix(key, models.VPPACL.KeyPrefix) }

func (p *Plugin) aclDescriptor() *api.TypedDescriptor[*vppacl.ACL, *ACLMetadata] {
	prefix := models.VPPACL.KeyPrefix
	return &api.TypedDescriptor[*vppacl.ACL, *ACLMetadata]{
		Name:               ACLDescriptorName,
		NBKeyPrefix:        prefix,
		KeySelector:        func(key string) bool { return strings.HasPrefix(key, prefix) },
		KeyLabel:           aclName,
		ValueComparator:    func(_ string, a, b *vppacl.ACL) bool { return aclsEquivalent(a, b) },
		WithMetadata:       true,
		MetadataMapFactory: p.newMetadataMap,
		Validate:           validateACL,
		Create:             p.createACL,
		Update:             p.updateACL,
		UpdateWithRecreate: func(_ string, oldValue, newValue *vppacl.ACL, _ *ACLMetadata) bool {
			return isMACIP(oldValue) != isMACIP(newValue)
		},
		Delete: p.deleteACL,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppacl.ACL, *ACLMetadata]) ([]api.TypedKV[*vppacl.ACL, *ACLMetadata], error) {
			return vppconn.Retrieved(p.retrieveACLs(ctx, c))
		},
		IsRetriableFailure:   isRetriable,
		DerivedValues:        aclDerivedValues,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName},
	}
}

func validateACL(key string, a *vppacl.ACL) error {
	if err := models.VPPACL.CheckKey(key, a); err != nil {
		return validate.Invalid(err)
	}
	return nil
}

// aclsEquivalent is the ValueComparator: values that make the same VPP ACL
// (the same rules once converted: spellings of addresses and MACs, host
// bits of IP rule networks, unset and full ranges) with the same
// interfaces, in any order, are equal.
func aclsEquivalent(a, b *vppacl.ACL) bool {
	fa, errA := formOf(a)
	fb, errB := formOf(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return a.GetName() == b.GetName() && fa.equal(fb) &&
		sameSet(a.GetInterfaces().GetIngress(), b.GetInterfaces().GetIngress()) &&
		sameSet(a.GetInterfaces().GetEgress(), b.GetInterfaces().GetEgress())
}

func sameSet(a, b []string) bool {
	as, bs := slices.Clone(a), slices.Clone(b)
	sort.Strings(as)
	sort.Strings(bs)
	return slices.Equal(slices.Compact(as), slices.Compact(bs))
}

// aclDerivedValues: one assignment per interface and direction, handled by
// the assignment descriptor (ACLInterfaceKey).
func aclDerivedValues(key string, a *vppacl.ACL) []api.KeyValuePair {
	name, macip := aclName(key), isMACIP(a)
	var out []api.KeyValuePair
	for _, dir := range []string{Ingress, Egress} {
		list := a.GetInterfaces().GetIngress()
		if dir == Egress {
			list = a.GetInterfaces().GetEgress()
		}
		for _, iface := range list {
			out = append(out, api.KeyValuePair{
				Key:   ACLInterfaceKey(name, dir, iface),
				Value: &vppacl.ACLInterface{Acl: name, Interface: iface, Egress: dir == Egress, Macip: macip},
			})
		}
	}
	return out
}

// createACL creates the ACL, tagged with its name. An ACL of its kind
// already tagged with the name (an interrupted create, a lost reply) is
// taken over and brought to the value; one of the other kind (a change of
// kind that did not finish) is deleted.
func (p *Plugin) createACL(ctx context.Context, key string, a *vppacl.ACL) (*ACLMetadata, error) {
	name := aclName(key)
	f, err := formOf(a)
	if err != nil {
		return nil, api.NonRetriable(fmt.Errorf("ACL %s: %w", name, err))
	}
	ips, err := p.h.DumpACLs(ctx)
	if err != nil {
		return nil, fmt.Errorf("ACL %s: %w", name, err)
	}
	macs, err := p.h.DumpMACIPACLs(ctx)
	if err != nil {
		return nil, fmt.Errorf("ACL %s: %w", name, err)
	}
	if f.macip {
		if old := findIP(ips, name); old != nil {
			p.log.Info("IP ACL tagged with the name of a MAC-IP ACL; deleting it", "acl", name, "acl_index", old.Index)
			if err := p.deleteIP(ctx, name, old.Index); err != nil {
				return nil, err
			}
		}
		if old := findMACIP(macs, name); old != nil {
			p.log.Info("MAC-IP ACL found in VPP by its tag; taking it over", "acl", name, "acl_index", old.Index)
			if !slices.Equal(old.Rules, f.mac) {
				if err := p.h.ReplaceMACIPACL(ctx, old.Index, name, f.mac); err != nil {
					return nil, fmt.Errorf("ACL %s: %w", name, err)
				}
			}
			return newMetadata(old.Index, true, a), nil
		}
		idx, err := p.h.AddMACIPACL(ctx, name, f.mac)
		if err != nil {
			return nil, fmt.Errorf("ACL %s: %w", name, err)
		}
		return newMetadata(idx, true, a), nil
	}
	if old := findMACIP(macs, name); old != nil {
		p.log.Info("MAC-IP ACL tagged with the name of an IP ACL; deleting it", "acl", name, "acl_index", old.Index)
		if err := p.h.DeleteMACIPACL(ctx, old.Index); err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY) {
			return nil, fmt.Errorf("ACL %s: %w", name, err)
		}
	}
	if old := findIP(ips, name); old != nil {
		p.log.Info("IP ACL found in VPP by its tag; taking it over", "acl", name, "acl_index", old.Index)
		if !slices.Equal(old.Rules, f.ip) {
			if err := p.h.ReplaceACL(ctx, old.Index, name, f.ip); err != nil {
				return nil, fmt.Errorf("ACL %s: %w", name, err)
			}
		}
		return newMetadata(old.Index, false, a), nil
	}
	idx, err := p.h.AddACL(ctx, name, f.ip)
	if err != nil {
		return nil, fmt.Errorf("ACL %s: %w", name, err)
	}
	return newMetadata(idx, false, a), nil
}

// updateACL replaces the rules of the ACL in place (it keeps its index, so
// its interfaces keep filtering with it, the new rules at once). A change
// of interfaces alone writes nothing: the assignments are derived values.
// The ACL VPP has at the index must still carry the name: one deleted
// behind the agent's back fails the Update (retriable; a resync creates it
// again), and another's that took its index is not touched.
func (p *Plugin) updateACL(ctx context.Context, key string, oldValue, newValue *vppacl.ACL, oldMd *ACLMetadata) (*ACLMetadata, error) {
	name := aclName(key)
	f, err := formOf(newValue)
	if err != nil {
		return oldMd, api.NonRetriable(fmt.Errorf("ACL %s: %w", name, err))
	}
	if oldMd == nil {
		return nil, fmt.Errorf("ACL %s: no metadata (not created)", name)
	}
	md := newMetadata(oldMd.Index, f.macip, newValue)
	if of, err := formOf(oldValue); err == nil && of.equal(f) {
		return md, nil
	}
	if f.macip {
		macs, err := p.h.DumpMACIPACLs(ctx)
		if err != nil {
			return oldMd, fmt.Errorf("ACL %s: %w", name, err)
		}
		if !slices.ContainsFunc(macs, func(m vppcalls.MACIPACL) bool { return m.Index == oldMd.Index && m.Tag == name }) {
			return oldMd, fmt.Errorf("ACL %s: VPP has no MAC-IP ACL tagged %q at index %d (deleted behind the agent's back? a resync creates it again)", name, name, oldMd.Index)
		}
		if err := p.h.ReplaceMACIPACL(ctx, oldMd.Index, name, f.mac); err != nil {
			return oldMd, fmt.Errorf("ACL %s: %w", name, err)
		}
		return md, nil
	}
	ips, err := p.h.DumpACLs(ctx)
	if err != nil {
		return oldMd, fmt.Errorf("ACL %s: %w", name, err)
	}
	if !slices.ContainsFunc(ips, func(a vppcalls.ACL) bool { return a.Index == oldMd.Index && a.Tag == name }) {
		return oldMd, fmt.Errorf("ACL %s: VPP has no IP ACL tagged %q at index %d (deleted behind the agent's back? a resync creates it again)", name, name, oldMd.Index)
	}
	if err := p.h.ReplaceACL(ctx, oldMd.Index, name, f.ip); err != nil {
		return oldMd, fmt.Errorf("ACL %s: %w", name, err)
	}
	return md, nil
}

// deleteACL deletes the ACL VPP has tagged with the name (at the index of
// the metadata, else wherever it is); an ACL already gone is success. Its
// assignments are gone by then (derived values are deleted first); an IP
// ACL that an interface still has (someone else put it there) is taken
// off that interface first, as VPP refuses to delete an ACL in use
// (macip_acl_del does that itself).
func (p *Plugin) deleteACL(ctx context.Context, key string, a *vppacl.ACL, md *ACLMetadata) error {
	name := aclName(key)
	macip := isMACIP(a)
	if md != nil {
		macip = md.MACIP
	}
	if macip {
		macs, err := p.h.DumpMACIPACLs(ctx)
		if err != nil {
			return fmt.Errorf("ACL %s: %w", name, err)
		}
		m := findMACIP(macs, name)
		if md != nil {
			if i := slices.IndexFunc(macs, func(m vppcalls.MACIPACL) bool { return m.Index == md.Index && m.Tag == name }); i >= 0 {
				m = &macs[i]
			}
		}
		if m == nil {
			p.log.Debug("MAC-IP ACL to delete is not in VPP (any more)", "acl", name)
			return nil
		}
		if err := p.h.DeleteMACIPACL(ctx, m.Index); err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY) {
			return fmt.Errorf("ACL %s: %w", name, err)
		}
		return nil
	}
	ips, err := p.h.DumpACLs(ctx)
	if err != nil {
		return fmt.Errorf("ACL %s: %w", name, err)
	}
	found := findIP(ips, name)
	if md != nil {
		if i := slices.IndexFunc(ips, func(a vppcalls.ACL) bool { return a.Index == md.Index && a.Tag == name }); i >= 0 {
			found = &ips[i]
		}
	}
	if found == nil {
		p.log.Debug("IP ACL to delete is not in VPP (any more)", "acl", name)
		return nil
	}
	return p.deleteIP(ctx, name, found.Index)
}

// deleteIP takes the IP ACL at index off every interface that has it, then
// deletes it.
func (p *Plugin) deleteIP(ctx context.Context, name string, index uint32) error {
	lists, err := p.h.AllInterfaceACLs(ctx)
	if err != nil {
		return fmt.Errorf("ACL %s: %w", name, err)
	}
	for _, sw := range sortedKeys(lists) {
		l := lists[sw]
		without := vppcalls.InterfaceACLs{Input: remove(l.Input, index), Output: remove(l.Output, index)}
		if without.Equal(l) {
			continue
		}
		p.log.Info("IP ACL to delete is on an interface the agent did not assign it to; taking it off", "acl", name, "acl_index", index, "sw_if_index", sw)
		if err := p.h.SetInterfaceACLs(ctx, sw, without); err != nil && !vppconn.IsVPPError(err, govppapi.INVALID_SW_IF_INDEX) {
			return fmt.Errorf("ACL %s: %w", name, err)
		}
	}
	if err := p.h.DeleteACL(ctx, index); err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY) {
		return fmt.Errorf("ACL %s: %w", name, err)
	}
	return nil
}

func remove(list []uint32, index uint32) []uint32 {
	return slices.DeleteFunc(slices.Clone(list), func(i uint32) bool { return i == index })
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func findIP(all []vppcalls.ACL, tag string) *vppcalls.ACL {
	for i := range all {
		if all[i].Tag == tag {
			return &all[i]
		}
	}
	return nil
}

func findMACIP(all []vppcalls.MACIPACL, tag string) *vppcalls.MACIPACL {
	for i := range all {
		if all[i].Tag == tag {
			return &all[i]
		}
	}
	return nil
}

// isOurTag tells whether an ACL tag is one the agent gives (a valid name).
func isOurTag(tag string) bool {
	if tag == "" {
		return false
	}
	_, err := models.VPPACL.ParseKey(models.VPPACL.KeyPrefix + tag)
	return err == nil
}

// found is an ACL of the agent's that VPP has.
type found struct {
	name  string
	index uint32
	macip bool
	rules []*vppacl.ACL_Rule
	form  vppForm
	// ingress and egress are the sw_if_indexes that have the ACL, in
	// order.
	ingress, egress []uint32
}

// retrieveACLs reports the ACLs of VPP tagged with a valid name (the tag
// marks them as the agent's: origin FromNB); others are not the agent's and
// are not reported. A value whose rules make what VPP has is returned with
// the expected rules; the interfaces of an expected ACL are its expected
// ones followed by the interfaces VPP has it on that it does not name (a
// resync takes it off them): whether it is on an expected one is the
// assignment descriptor's Retrieve's answer, so an assignment that waits
// for its interface does not make the ACL differ. An ACL the NB does not
// expect gets the interfaces VPP has it on.
func (p *Plugin) retrieveACLs(ctx context.Context, correlate []api.TypedKV[*vppacl.ACL, *ACLMetadata]) ([]api.TypedKV[*vppacl.ACL, *ACLMetadata], error) {
	expected := make(map[string]*vppacl.ACL, len(correlate))
	names := map[string]bool{}
	for _, c := range correlate {
		if c.Value == nil {
			continue
		}
		expected[aclName(c.Key)] = c.Value
		for _, n := range append(slices.Clone(c.Value.GetInterfaces().GetIngress()), c.Value.GetInterfaces().GetEgress()...) {
			names[n] = true
		}
	}
	acls, err := p.foundACLs(ctx)
	if err != nil || len(acls) == 0 {
		return nil, err
	}
	nm := p.newNamer(ctx, names)
	var out []api.TypedKV[*vppacl.ACL, *ACLMetadata]
	for _, f := range acls {
		exp := expected[f.name]
		v := &vppacl.ACL{Name: f.name, Rules: f.rules}
		if exp != nil {
			if ef, err := formOf(exp); err == nil && ef.equal(f.form) {
				v.Rules = cloneRules(exp.GetRules())
			}
		}
		named := func(iface string) bool {
			return exp != nil && (slices.Contains(exp.GetInterfaces().GetIngress(), iface) || slices.Contains(exp.GetInterfaces().GetEgress(), iface))
		}
		ingress := interfaceNames(nm, f.ingress, named)
		egress := interfaceNames(nm, f.egress, named)
		if exp != nil {
			ingress = withExpected(exp.GetInterfaces().GetIngress(), ingress)
			egress = withExpected(exp.GetInterfaces().GetEgress(), egress)
		}
		if len(ingress) > 0 || len(egress) > 0 {
			v.Interfaces = &vppacl.ACL_Interfaces{Ingress: ingress, Egress: egress}
		}
		if exp != nil && aclsEquivalent(exp, v) {
			v = proto.Clone(exp).(*vppacl.ACL)
		}
		out = append(out, api.TypedKV[*vppacl.ACL, *ACLMetadata]{
			Key: models.VPPACL.KeyPrefix + f.name, Value: v, Metadata: newMetadata(f.index, f.macip, exp), Origin: api.FromNB,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// foundACLs lists the ACLs of VPP tagged with a valid name, the first of
// each tag (IP ACLs before MAC-IP ACLs, by index), with the interfaces
// that have them.
func (p *Plugin) foundACLs(ctx context.Context) ([]*found, error) {
	ips, err := p.h.DumpACLs(ctx)
	if err != nil {
		return nil, err
	}
	macs, err := p.h.DumpMACIPACLs(ctx)
	if err != nil {
		return nil, err
	}
	var out []*found
	byTag := map[string]*found{}
	take := func(f *found) bool {
		if !isOurTag(f.name) {
			return false
		}
		if other := byTag[f.name]; other != nil {
			p.log.Warn("retrieve: two ACLs carry one tag; reporting the first", "tag", f.name,
				"first", fmt.Sprintf("index %d (MAC-IP %v)", other.index, other.macip), "second", fmt.Sprintf("index %d (MAC-IP %v)", f.index, f.macip))
			return false
		}
		byTag[f.name] = f
		out = append(out, f)
		return true
	}
	ipByIndex := map[uint32]*found{}
	for _, a := range ips {
		f := &found{name: a.Tag, index: a.Index, rules: ipRulesFromVPP(a.Rules), form: vppForm{ip: a.Rules}}
		if take(f) {
			ipByIndex[a.Index] = f
		}
	}
	macByIndex := map[uint32]*found{}
	for _, m := range macs {
		f := &found{name: m.Tag, index: m.Index, macip: true, rules: macipRulesFromVPP(m.Rules), form: vppForm{macip: true, mac: m.Rules}}
		if take(f) {
			macByIndex[m.Index] = f
		}
	}
	if len(ipByIndex) > 0 {
		lists, err := p.h.AllInterfaceACLs(ctx)
		if err != nil {
			return nil, err
		}
		for _, sw := range sortedKeys(lists) {
			for _, idx := range lists[sw].Input {
				if f := ipByIndex[idx]; f != nil {
					f.ingress = append(f.ingress, sw)
				}
			}
			for _, idx := range lists[sw].Output {
				if f := ipByIndex[idx]; f != nil {
					f.egress = append(f.egress, sw)
				}
			}
		}
	}
	if len(macByIndex) > 0 {
		assigned, err := p.h.AllInterfaceMACIPACLs(ctx)
		if err != nil {
			return nil, err
		}
		for _, sw := range sortedKeys(assigned) {
			if f := macByIndex[assigned[sw]]; f != nil {
				f.ingress = append(f.ingress, sw)
			}
		}
	}
	return out, nil
}

func interfaceNames(nm namer, sws []uint32, named func(string) bool) []string {
	var out []string
	for _, sw := range sws {
		if n, ok := nm.name(sw, named); ok {
			out = append(out, n)
		}
	}
	return out
}

// withExpected is the expected interfaces followed by those of inVPP they
// do not name.
func withExpected(expected, inVPP []string) []string {
	out := slices.Clone(expected)
	for _, n := range inVPP {
		if !slices.Contains(expected, n) {
			out = append(out, n)
		}
	}
	return out
}

func cloneRules(rules []*vppacl.ACL_Rule) []*vppacl.ACL_Rule {
	out := make([]*vppacl.ACL_Rule, len(rules))
	for i, r := range rules {
		out[i] = proto.Clone(r).(*vppacl.ACL_Rule)
	}
	return out
}

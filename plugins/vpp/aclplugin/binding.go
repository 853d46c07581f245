package aclplugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	govppapi "go.fd.io/govpp/api"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
)

func isACLInterfaceKey(key string) bool {
	return strings.HasPrefix(key, aclInterfaceKeyPrefix) && strings.Contains(key, "/interface/")
}

// macipResourcePrefix starts the name of the Exclusive resource the MAC-IP
// assignments of one interface compete for (assignmentDependencies).
const macipResourcePrefix = "vpp/acl/macip-interface/"

// assignmentDependencies: the interface must exist; and, for a MAC-IP ACL,
// no other MAC-IP ACL may be assigned to it: VPP keeps one MAC-IP ACL per
// interface (an add replaces the one it has), so two MAC-IP ACLs naming
// one interface would take it from each other at every resync. While one
// is applied, the scheduler keeps the others PENDING, naming the holder.
func assignmentDependencies(_ string, v *vppacl.ACLInterface) []api.Dependency {
	deps := []api.Dependency{{Label: "interface " + v.GetInterface(), Key: ifplugin.InterfaceKey(v.GetInterface())}}
	if v.GetMacip() {
		deps = append(deps, api.Dependency{
			Label:     "interface " + v.GetInterface() + " has no other MAC-IP ACL",
			Exclusive: macipResourcePrefix + v.GetInterface(),
		})
	}
	return deps
}

func (p *Plugin) aclInterfaceDescriptor() *api.TypedDescriptor[*vppacl.ACLInterface, any] {
	return &api.TypedDescriptor[*vppacl.ACLInterface, any]{
		Name:        ACLInterfaceDescriptorName,
		KeySelector: isACLInterfaceKey,
		Create:      p.createAssignment,
		Delete:      p.deleteAssignment,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppacl.ACLInterface, any]) ([]api.TypedKV[*vppacl.ACLInterface, any], error) {
			return vppconn.Retrieved(p.retrieveAssignments(ctx, c))
		},
		IsRetriableFailure:   isRetriable,
		Dependencies:         assignmentDependencies,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, ACLDescriptorName},
	}
}

var errNoInterface = errors.New("interface has no sw_if_index")

// assignment resolves an assignment to the ACL's metadata and the
// interface's sw_if_index.
func (p *Plugin) assignment(ctx context.Context, key string, v *vppacl.ACLInterface) (md *ACLMetadata, sw uint32, err error) {
	acl, ok := parseACLInterfaceKey(key, direction(v.GetEgress()), v.GetInterface())
	if !ok || acl != v.GetAcl() {
		return nil, 0, api.NonRetriable(fmt.Errorf("assignment key %s is not the key of ACL %q, interface %q, %s", key, v.GetAcl(), v.GetInterface(), direction(v.GetEgress())))
	}
	md, ok = p.aclMetadata(acl)
	if !ok {
		return nil, 0, fmt.Errorf("assignment %s: ACL %s has no index (not created)", key, acl)
	}
	if md.MACIP != v.GetMacip() {
		return nil, 0, fmt.Errorf("assignment %s: ACL %s is a %s ACL in VPP now", key, acl, kindName(md.MACIP))
	}
	ifmd, ok := p.ifaces(ctx, v.GetInterface())
	if !ok {
		return md, 0, errNoInterface
	}
	return md, ifmd.SwIfIndex, nil
}

func kindName(macip bool) string {
	if macip {
		return "MAC-IP"
	}
	return "IP"
}

// createAssignment assigns the ACL to the interface. An IP ACL goes into
// the interface's list of its direction, which is then put in the agent's
// order (see arrange); a MAC-IP ACL becomes the interface's MAC-IP ACL,
// unless the interface has one that is not the agent's
// (*MACIPConflictError).
func (p *Plugin) createAssignment(ctx context.Context, key string, v *vppacl.ACLInterface) (any, error) {
	md, sw, err := p.assignment(ctx, key, v)
	if errors.Is(err, errNoInterface) {
		// The dependency should have prevented this.
		return nil, fmt.Errorf("assignment %s: interface %s has no sw_if_index in the VPP connected now (no metadata of %s, or that of a VPP that has restarted since)", key, v.GetInterface(), ifplugin.InterfaceDescriptorName)
	}
	if err != nil {
		return nil, err
	}
	if v.GetMacip() {
		return nil, p.assignMACIP(ctx, v, md.Index, sw)
	}
	l, ok, err := p.h.InterfaceACLs(ctx, sw)
	if err != nil {
		return nil, fmt.Errorf("assignment %s: %w", key, err)
	}
	if !ok {
		return nil, fmt.Errorf("assignment %s: VPP has no interface with sw_if_index %d (%s)", key, sw, v.GetInterface())
	}
	names := p.ours().ip
	want := l
	if v.GetEgress() {
		want.Output = arrange(l.Output, names, md.Index)
	} else {
		want.Input = arrange(l.Input, names, md.Index)
	}
	if want.Equal(l) {
		return nil, nil
	}
	if err := p.h.SetInterfaceACLs(ctx, sw, want); err != nil {
		return nil, fmt.Errorf("assignment %s: %w", key, err)
	}
	return nil, nil
}

// arrange returns list with add (NoIndex: nothing) in it, in the agent's
// order: the agent's ACLs (those of names, by index) first, ordered by
// name, then the others in the order list has them.
func arrange(list []uint32, names map[uint32]string, add uint32) []uint32 {
	var agent, others []uint32
	for _, idx := range list {
		if _, ok := names[idx]; ok {
			agent = append(agent, idx)
		} else {
			others = append(others, idx)
		}
	}
	if add != vppcalls.NoIndex && !slices.Contains(agent, add) {
		agent = append(agent, add)
	}
	sort.SliceStable(agent, func(i, j int) bool { return names[agent[i]] < names[agent[j]] })
	return append(agent, others...)
}

// MACIPConflictError is the refusal of a MAC-IP assignment whose interface
// has a MAC-IP ACL that is not the agent's: VPP keeps one per interface and
// would replace it, which the agent must not do. It is retriable: it goes
// away when that ACL leaves the interface (the assignment is tried again
// on its retries and at every resync). The agent's own MAC-IP ACLs never
// conflict this way: they wait for each other, PENDING (see
// assignmentDependencies).
type MACIPConflictError struct {
	Interface string
	ACL       string // the refused assignment's
	// HolderIndex is the index of the MAC-IP ACL the interface has,
	// HolderTag its tag.
	HolderIndex uint32
	HolderTag   string
}

func (e *MACIPConflictError) Error() string {
	holder := fmt.Sprintf("MAC-IP ACL %d", e.HolderIndex)
	if e.HolderTag != "" {
		holder += fmt.Sprintf(" (tag %q)", e.HolderTag)
	}
	return fmt.Sprintf("MAC-IP ACL %s not assigned to interface %s: it has %s, not the agent's (VPP keeps one MAC-IP ACL per interface)", e.ACL, e.Interface, holder)
}

func (p *Plugin) assignMACIP(ctx context.Context, v *vppacl.ACLInterface, index, sw uint32) error {
	cur, has, err := p.h.InterfaceMACIPACL(ctx, sw)
	if err != nil {
		return fmt.Errorf("MAC-IP ACL %s on %s: %w", v.GetAcl(), v.GetInterface(), err)
	}
	if has && cur == index {
		return nil
	}
	if has {
		holder, ours := p.ours().macip[cur]
		if !ours {
			e := &MACIPConflictError{Interface: v.GetInterface(), ACL: v.GetAcl(), HolderIndex: cur}
			if macs, err := p.h.DumpMACIPACLs(ctx); err == nil {
				if i := slices.IndexFunc(macs, func(m vppcalls.MACIPACL) bool { return m.Index == cur }); i >= 0 {
					e.HolderTag = macs[i].Tag
				}
			}
			return e
		}
		// Left behind: the scheduler holds no other MAC-IP assignment of
		// the interface when it calls Create (the Exclusive dependency).
		p.log.Info("interface has another MAC-IP ACL of the agent's, left behind; VPP replaces it", "interface", v.GetInterface(), "from", holder, "to", v.GetAcl())
	}
	if err := p.h.SetInterfaceMACIPACL(ctx, sw, index); err != nil {
		return fmt.Errorf("MAC-IP ACL %s on %s: %w", v.GetAcl(), v.GetInterface(), err)
	}
	return nil
}

// deleteAssignment takes the ACL off the interface, if the interface has
// it: an IP ACL out of the list of its direction (the others stay in their
// order); a MAC-IP ACL only when it is the interface's (VPP's delete takes
// off whatever MAC-IP ACL the interface has). An interface or ACL already
// gone is success.
func (p *Plugin) deleteAssignment(ctx context.Context, key string, v *vppacl.ACLInterface, _ any) error {
	md, sw, err := p.assignment(ctx, key, v)
	if errors.Is(err, errNoInterface) {
		p.log.Debug("assignment to delete: its interface is gone, and the assignment with it", "assignment", key)
		return nil
	}
	if err != nil {
		if _, _, ok := p.ACLIndex(v.GetAcl()); !ok {
			p.log.Debug("assignment to delete: its ACL is not known; nothing to do", "assignment", key)
			return nil
		}
		return err
	}
	if v.GetMacip() {
		cur, has, err := p.h.InterfaceMACIPACL(ctx, sw)
		if err != nil {
			return fmt.Errorf("assignment %s: %w", key, err)
		}
		if !has || cur != md.Index {
			return nil
		}
		err = p.h.UnsetInterfaceMACIPACL(ctx, sw)
		if err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY, govppapi.INVALID_SW_IF_INDEX) {
			return fmt.Errorf("assignment %s: %w", key, err)
		}
		return nil
	}
	l, ok, err := p.h.InterfaceACLs(ctx, sw)
	if err != nil {
		return fmt.Errorf("assignment %s: %w", key, err)
	}
	if !ok {
		return nil
	}
	want := l
	if v.GetEgress() {
		want.Output = remove(l.Output, md.Index)
	} else {
		want.Input = remove(l.Input, md.Index)
	}
	if want.Equal(l) {
		return nil
	}
	if err := p.h.SetInterfaceACLs(ctx, sw, want); err != nil && !vppconn.IsVPPError(err, govppapi.INVALID_SW_IF_INDEX) {
		return fmt.Errorf("assignment %s: %w", key, err)
	}
	return nil
}

// retrieveAssignments reports the assignments of the agent's ACLs that VPP
// has, named as the ACL descriptor's Retrieve names the interfaces (with
// the ACLs and the interfaces their values name taken from the metadata
// map, which the scheduler fills with what that Retrieve returned before it
// calls this one). An IP ACL's list that is not in the agent's order (see
// arrange: someone put an ACL before the agent's, or reordered them) hides
// the assignments the values want in it: a resync creates them again,
// which puts the list in order. Assignments no value wants are reported
// whatever the order, so that a resync takes them off.
func (p *Plugin) retrieveAssignments(ctx context.Context, _ []api.TypedKV[*vppacl.ACLInterface, any]) ([]api.TypedKV[*vppacl.ACLInterface, any], error) {
	o := p.ours()
	if len(o.md) == 0 {
		return nil, nil
	}
	wanted := map[string]bool{}
	for _, md := range o.md {
		for _, n := range append(slices.Clone(md.Ingress), md.Egress...) {
			wanted[n] = true
		}
	}
	nm := p.newNamer(ctx, wanted)
	var out []api.TypedKV[*vppacl.ACLInterface, any]
	add := func(acl, dir, iface string, macip bool) {
		out = append(out, api.TypedKV[*vppacl.ACLInterface, any]{
			Key:    ACLInterfaceKey(acl, dir, iface),
			Value:  &vppacl.ACLInterface{Acl: acl, Interface: iface, Egress: dir == Egress, Macip: macip},
			Origin: api.FromNB,
		})
	}
	if len(o.ip) > 0 {
		lists, err := p.h.AllInterfaceACLs(ctx)
		if err != nil {
			return nil, err
		}
		for _, sw := range sortedKeys(lists) {
			for _, dir := range []string{Ingress, Egress} {
				list := lists[sw].Input
				if dir == Egress {
					list = lists[sw].Output
				}
				inOrder := slices.Equal(arrange(list, o.ip, vppcalls.NoIndex), list)
				for _, idx := range list {
					acl, ok := o.ip[idx]
					if !ok {
						continue
					}
					md := o.md[acl]
					iface, ok := nm.name(sw, md.names)
					if !ok || (!inOrder && md.wants(dir, iface)) {
						continue
					}
					add(acl, dir, iface, false)
				}
			}
		}
	}
	if len(o.macip) > 0 {
		assigned, err := p.h.AllInterfaceMACIPACLs(ctx)
		if err != nil {
			return nil, err
		}
		for _, sw := range sortedKeys(assigned) {
			acl, ok := o.macip[assigned[sw]]
			if !ok {
				continue
			}
			if iface, ok := nm.name(sw, o.md[acl].names); ok {
				add(acl, Ingress, iface, true)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

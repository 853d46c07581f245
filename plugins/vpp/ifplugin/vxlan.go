package ifplugin

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// VXLAN tunnels (VXLAN_TUNNEL, vppif.VxlanLink): VPP's vxlan plugin,
// vxlan_add_del_tunnel_v3, an L2 (Ethernet) tunnel interface
// vxlan_tunnel<n> on VPP's default UDP port. As in the original agent, the
// interface's vrf is the encap VRF, the table the encapsulated packets are
// routed in (VPP needs its table of the tunnel's IP version at creation,
// NO_SUCH_FIB otherwise), and the tunnel interface is bound to it like any
// interface (the VRF derived value). The ends, VNI, multicast interface
// and vrf are fixed at creation: a change of one re-creates the tunnel.

// validateVxlan checks what the plugin supports of a VXLAN link (the model
// checked the fields: models.VPPInterface).
func validateVxlan(v *vppif.Interface) error {
	if v.GetVxlan().GetGpe() != nil {
		return invalid("vxlan.gpe", "VXLAN-GPE is not supported: the VPP 25.10 this agent manages has no vxlan-gpe plugin (leave gpe out for a VXLAN tunnel)")
	}
	return nil
}

// vxlanEnds returns the parsed ends of a valid VXLAN link.
func vxlanEnds(x *vppif.VxlanLink) (src, dst netip.Addr) {
	src, _ = netip.ParseAddr(x.GetSrcAddress())
	dst, _ = netip.ParseAddr(x.GetDstAddress())
	return src, dst
}

// vxlanIPv6 tells whether a VXLAN link's ends are IPv6.
func vxlanIPv6(x *vppif.VxlanLink) bool {
	src, _ := vxlanEnds(x)
	return src.Is6()
}

// vxlanDependencies: the multicast interface (its sw_if_index is given at
// creation), and the encap VRF's table of the tunnel's IP version (VPP
// refuses the tunnel without it, and deleting the table under a tunnel
// crashes VPP 25.10: the tunnel goes first).
func vxlanDependencies(v *vppif.Interface) []api.Dependency {
	x := v.GetVxlan()
	var deps []api.Dependency
	if mc := x.GetMulticast(); mc != "" {
		deps = append(deps, api.Dependency{Label: "multicast interface " + mc, Key: InterfaceKey(mc)})
	}
	if vrf := v.GetVrf(); vrf != 0 {
		ipv6 := vxlanIPv6(x)
		version := "IPv4"
		if ipv6 {
			version = "IPv6"
		}
		deps = append(deps, api.Dependency{Label: fmt.Sprintf("encap VRF table %d (%s)", vrf, version), Key: models.VrfTableKey(vrf, ipv6)})
	}
	return deps
}

// vxlanUniqueName is the key VPP keeps a tunnel by: the destination, VNI
// and encap VRF, and the source too for an IPv4 unicast tunnel only (VPP
// 25.10 takes two IPv6 tunnels, or two IPv4 multicast ones, that differ
// only in their source for one: TUNNEL_EXIST).
func vxlanUniqueName(v *vppif.Interface) api.UniqueName {
	x := v.GetVxlan()
	src, dst := vxlanEnds(x)
	from := ""
	if src.Is4() && !dst.IsMulticast() {
		from = " from " + src.String()
	}
	return api.UniqueName{Field: "vxlan.vni", Name: fmt.Sprintf("vpp vxlan tunnel%s to %s vni %d encap vrf %d", from, dst, x.GetVni(), v.GetVrf())}
}

// normalizeVxlan spells the ends of a VXLAN link as VPP reports them
// (2001:DB8::1 and 2001:db8::1 are one address).
func normalizeVxlan(x *vppif.VxlanLink) {
	if x == nil {
		return
	}
	if a, err := netip.ParseAddr(x.SrcAddress); err == nil {
		x.SrcAddress = a.String()
	}
	if a, err := netip.ParseAddr(x.DstAddress); err == nil {
		x.DstAddress = a.String()
	}
}

// createVxlan creates the tunnel of v, joined to its multicast interface.
func (p *Plugin) createVxlan(ctx context.Context, v *vppif.Interface) (uint32, error) {
	x := v.GetVxlan()
	src, dst := vxlanEnds(x)
	mcast := vppcalls.NoIndex
	if mc := x.GetMulticast(); mc != "" {
		md, ok := p.lookup(mc)
		if !ok {
			return 0, fmt.Errorf("multicast interface %s has no VPP interface yet", mc)
		}
		mcast = md.SwIfIndex
	}
	return p.h.CreateVxlan(ctx, vppcalls.VxlanParams{Src: src, Dst: dst, VNI: x.GetVni(), EncapVrf: v.GetVrf(), McastSwIfIndex: mcast})
}

// observedVxlan is the link of a VXLAN tunnel as VPP has it, with the
// configuration's spelling of the addresses where they are the same, and
// its multicast interface by logical name (the configured name when VPP's
// index has no name the agent knows).
func observedVxlan(d *vppcalls.VxlanDetails, want *vppif.VxlanLink, nameOf func(uint32) string) *vppif.VxlanLink {
	x := &vppif.VxlanLink{SrcAddress: d.Src.String(), DstAddress: d.Dst.String(), Vni: d.VNI}
	if a, err := netip.ParseAddr(want.GetSrcAddress()); err == nil && a == d.Src {
		x.SrcAddress = want.GetSrcAddress()
	}
	if a, err := netip.ParseAddr(want.GetDstAddress()); err == nil && a == d.Dst {
		x.DstAddress = want.GetDstAddress()
	}
	if d.McastSwIfIndex != vppcalls.NoIndex {
		x.Multicast = nameOf(d.McastSwIfIndex)
		if x.Multicast == "" {
			x.Multicast = fmt.Sprintf("sw_if_index %d", d.McastSwIfIndex)
		}
	}
	return x
}

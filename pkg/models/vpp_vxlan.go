package models

import (
	"net/netip"

	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// MaxVxlanVNI is the largest VXLAN Network Identifier (24 bits). VPP 25.10
// takes a larger one without complaint and keys the tunnel by its low 24
// bits only, so that the tunnel collides with another (TUNNEL_EXIST).
const MaxVxlanVNI = 1<<24 - 1

// validateVxlanLink checks the link of a VXLAN_TUNNEL: two VTEP addresses
// of one IP version that differ, a unicast source, a 24-bit VNI, and a
// multicast interface exactly when the destination is a multicast group
// (VPP needs the interface to join the group, and would keep one given to
// a unicast tunnel as if it meant something).
func validateVxlanLink(i *vppif.Interface, errs *fieldErrors) {
	x := i.GetVxlan()
	if x == nil {
		errs.add("vxlan", "required for a VXLAN_TUNNEL (src_address, dst_address, vni)")
		return
	}
	src, srcOK := vtepAddress(errs, "vxlan.src_address", x.GetSrcAddress())
	dst, dstOK := vtepAddress(errs, "vxlan.dst_address", x.GetDstAddress())
	if srcOK && src.IsMulticast() {
		errs.add("vxlan.src_address", "%s is a multicast address; the source is a unicast address of this VPP", src)
	}
	if srcOK && dstOK {
		switch {
		case src.Is4() != dst.Is4():
			errs.add("vxlan.dst_address", "%s is not of the IP version of src_address %s", dst, src)
		case src == dst:
			errs.add("vxlan.dst_address", "%s is src_address too: a tunnel has two ends", dst)
		}
	}
	if x.GetVni() > MaxVxlanVNI {
		errs.add("vxlan.vni", "%d is above %d (a VNI has 24 bits)", x.GetVni(), MaxVxlanVNI)
	}
	switch mc := x.GetMulticast(); {
	case dstOK && dst.IsMulticast() && mc == "":
		errs.add("vxlan.multicast", "required: dst_address %s is a multicast group, joined on this interface", dst)
	case dstOK && !dst.IsMulticast() && mc != "":
		errs.add("vxlan.multicast", "only for a multicast dst_address (%s is unicast)", dst)
	case mc != "":
		errs.name("vxlan.multicast", mc)
		if mc == i.GetName() {
			errs.add("vxlan.multicast", "a tunnel cannot carry itself")
		}
	}
}

// vtepAddress checks the address of a tunnel end: an IPv4 or IPv6
// address, specified, written as VPP takes it (an IPv4-mapped IPv6
// address is an IPv6 end to VPP, an IPv4-compatible one such as ::1 or
// ::10.0.0.1 an IPv4 end).
func vtepAddress(errs *fieldErrors, field, v string) (netip.Addr, bool) {
	if !errs.required(field, v) {
		return netip.Addr{}, false
	}
	a, ok := errs.ip(field, v)
	switch {
	case !ok:
		return a, false
	case a.IsUnspecified():
		errs.add(field, "%s is not the address of a tunnel end", a)
		return a, false
	case a.Is4In6():
		errs.add(field, "%s is an IPv4-mapped IPv6 address: write it as IPv4 (%s)", a, a.Unmap())
		return a, false
	case a.Is6() && [12]byte(a.AsSlice()[:12]) == [12]byte{}:
		// ip46_address_is_ip4: VPP 25.10 takes it for the IPv4 address of
		// its last 32 bits.
		b := a.As16()
		errs.add(field, "%s is an IPv4-compatible IPv6 address, which VPP takes for the IPv4 address %s: write that", a, netip.AddrFrom4([4]byte(b[12:])))
		return a, false
	}
	return a, true
}

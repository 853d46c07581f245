// Package ipconv converts IP addresses between net/netip and VPP's binary
// API types, for the VPP plugins.
package ipconv

import (
	"net/netip"

	"go.fd.io/govpp/binapi/ip_types"
)

// ToVPP is a as VPP's address union.
func ToVPP(a netip.Addr) ip_types.Address {
	if a.Is4() {
		return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(a.As4())}
	}
	return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(a.As16())}
}

// FromVPP is VPP's address as a netip.Addr; false for an unknown family.
func FromVPP(a ip_types.Address) (netip.Addr, bool) {
	switch a.Af {
	case ip_types.ADDRESS_IP4:
		return netip.AddrFrom4(a.Un.GetIP4()), true
	case ip_types.ADDRESS_IP6:
		return netip.AddrFrom16(a.Un.GetIP6()), true
	}
	return netip.Addr{}, false
}

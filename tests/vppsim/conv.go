package vppsim

import (
	"net"
	"net/netip"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/ip_types"
)

// VPP error codes (vnet/api_errno.h) used by the handlers, as GoVPP names them.
const (
	errUnspecified              = int32(api.UNSPECIFIED)                     // -1
	errInvalidSwIfIndex         = int32(api.INVALID_SW_IF_INDEX)             // -2
	errNoSuchFib                = int32(api.NO_SUCH_FIB)                     // -3
	errNoSuchEntry              = int32(api.NO_SUCH_ENTRY)                   // -6
	errInvalidValue             = int32(api.INVALID_VALUE)                   // -7
	errUnimplemented            = int32(api.UNIMPLEMENTED)                   // -9
	errInvalidSwIfIndex2        = int32(api.INVALID_SW_IF_INDEX_2)           // -10
	errSyscall1                 = int32(api.SYSCALL_ERROR_1)                 // -11
	errFeatureDisabled          = int32(api.FEATURE_DISABLED)                // -30
	errInvalidRegistration      = int32(api.INVALID_REGISTRATION)            // -31
	errInvalidVlan              = int32(api.INVALID_VLAN)                    // -55
	errAddressNotFound          = int32(api.ADDRESS_NOT_FOUND_FOR_INTERFACE) // -60
	errSubifAlreadyExists       = int32(api.SUBIF_ALREADY_EXISTS)            // -68
	errInvalidInterface         = int32(api.INVALID_INTERFACE)               // -71
	errInvalidArgument          = int32(api.INVALID_ARGUMENT)                // -73
	errUnexpectedIntfState      = int32(api.UNEXPECTED_INTF_STATE)           // -74
	errIfAlreadyExists          = int32(api.IF_ALREADY_EXISTS)               // -79
	errInvalidSubSwIfIndex      = int32(api.INVALID_SUB_SW_IF_INDEX)         // -98
	errAddressInUse             = int32(api.ADDRESS_IN_USE)                  // -105
	errAddressFoundForInterface = int32(api.ADDRESS_FOUND_FOR_INTERFACE)     // -114
	errBdAlreadyExists          = int32(api.BD_ALREADY_EXISTS)               // -119
	errBdInUse                  = int32(api.BD_IN_USE)                       // -120
	errBdNotModifiable          = int32(api.BD_NOT_MODIFIABLE)               // -121
	errBdIDExceedMax            = int32(api.BD_ID_EXCEED_MAX)                // -122
	errDuplicateIfAddress       = int32(api.DUPLICATE_IF_ADDRESS)            // -127
	errNetlinkError             = int32(api.NETLINK_ERROR)                   // -145
	errBdAlreadyHasBvi          = int32(api.BD_ALREADY_HAS_BVI)              // -152
	errNoPathsInRoute           = int32(-158)                                // NO_PATHS_IN_ROUTE (missing from GoVPP's list)
)

func toAddr(a ip_types.Address) (netip.Addr, bool) {
	switch a.Af {
	case ip_types.ADDRESS_IP4:
		return netip.AddrFrom4(a.Un.GetIP4()), true
	case ip_types.ADDRESS_IP6:
		return netip.AddrFrom16(a.Un.GetIP6()), true
	}
	return netip.Addr{}, false
}

func fromAddr(a netip.Addr) ip_types.Address {
	if a.Is4() {
		return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(a.As4())}
	}
	return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(a.As16())}
}

// toPrefix keeps the host bits (interface addresses need them).
func toPrefix(p ip_types.Prefix) (netip.Prefix, bool) {
	a, ok := toAddr(p.Address)
	if !ok || int(p.Len) > a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, int(p.Len)), true
}

func fromPrefix(p netip.Prefix) ip_types.Prefix {
	return ip_types.Prefix{Address: fromAddr(p.Addr()), Len: uint8(p.Bits())}
}

func toMAC(m ethernet_types.MacAddress) net.HardwareAddr {
	return net.HardwareAddr(append([]byte(nil), m[:]...))
}

func fromMAC(m net.HardwareAddr) ethernet_types.MacAddress {
	var out ethernet_types.MacAddress
	copy(out[:], m)
	return out
}

func isZeroMAC(m ethernet_types.MacAddress) bool {
	return m == ethernet_types.MacAddress{}
}

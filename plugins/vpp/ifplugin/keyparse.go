package ifplugin

import (
	"strings"
)

// Parsing of the derived keys (keys.go builds them). Interface names may
// contain "/", so the fixed parts are taken from the end of a key. The
// kinds are told apart in a fixed order (address, admin state, VRF,
// has-IP-address, link state, then unnumbered), so that the keys of an
// interface named "unnumbered" are not taken for unnumbered keys.

const (
	derivedPrefix    = "vpp/interface/"
	unnumberedPrefix = "vpp/interface/unnumbered/"
	addressInfix     = "/address/static/"
	adminInfix       = "/admin-state/"
	linkInfix        = "/link-state/"
	vrfInfix         = "/vrf/"
	ipVersionInfix   = "/ip-version/"
	hasIPSuffix      = "/has-IP-address"
)

// ParseAddressKey splits AddressKey(iface, cidr).
func ParseAddressKey(key string) (iface, cidr string, ok bool) {
	rest, ok := strings.CutPrefix(key, derivedPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(rest, addressInfix)
	if i <= 0 || i+len(addressInfix) == len(rest) {
		return "", "", false
	}
	return rest[:i], rest[i+len(addressInfix):], true
}

// ParseAdminStateKey splits AdminStateKey(iface, up).
func ParseAdminStateKey(key string) (iface string, up, ok bool) {
	return parseStateKey(key, adminInfix)
}

// ParseLinkStateKey splits LinkStateKey(iface, up).
func ParseLinkStateKey(key string) (iface string, up, ok bool) {
	return parseStateKey(key, linkInfix)
}

func parseStateKey(key, infix string) (iface string, up, ok bool) {
	rest, ok := strings.CutPrefix(key, derivedPrefix)
	if !ok {
		return "", false, false
	}
	if name, found := strings.CutSuffix(rest, infix+"UP"); found && name != "" {
		return name, true, true
	}
	if name, found := strings.CutSuffix(rest, infix+"DOWN"); found && name != "" {
		return name, false, true
	}
	return "", false, false
}

// ParseVRFKey splits VRFKey(iface, vrf, version).
func ParseVRFKey(key string) (iface string, vrf uint32, version string, ok bool) {
	rest, ok := strings.CutPrefix(key, derivedPrefix)
	if !ok {
		return "", 0, "", false
	}
	i := strings.LastIndex(rest, vrfInfix)
	if i <= 0 {
		return "", 0, "", false
	}
	num, version, found := strings.Cut(rest[i+len(vrfInfix):], ipVersionInfix)
	if !found || (version != "v4" && version != "v6" && version != "both") {
		return "", 0, "", false
	}
	n, valid := atou32(num)
	if !valid {
		return "", 0, "", false
	}
	return rest[:i], n, version, true
}

// isHasIPAddressKey tells whether key is a HasIPAddressKey.
func isHasIPAddressKey(key string) bool {
	rest, ok := strings.CutPrefix(key, derivedPrefix)
	return ok && strings.HasSuffix(rest, hasIPSuffix) && len(rest) > len(hasIPSuffix)
}

// ParseUnnumberedKey splits UnnumberedKey(iface).
func ParseUnnumberedKey(key string) (iface string, ok bool) {
	if classify(key) != kindUnnumbered {
		return "", false
	}
	return strings.TrimPrefix(key, unnumberedPrefix), true
}

type keyKind int

const (
	kindNone keyKind = iota
	kindAddress
	kindAdminState
	kindVRF
	kindHasIP
	kindLinkState
	kindUnnumbered
)

// classify tells which derived key a key is; the kinds are tried in a fixed
// order so that the descriptors' key selectors never overlap.
func classify(key string) keyKind {
	if !strings.HasPrefix(key, derivedPrefix) {
		return kindNone
	}
	if _, _, ok := ParseAddressKey(key); ok {
		return kindAddress
	}
	if _, _, ok := ParseAdminStateKey(key); ok {
		return kindAdminState
	}
	if _, _, _, ok := ParseVRFKey(key); ok {
		return kindVRF
	}
	if isHasIPAddressKey(key) {
		return kindHasIP
	}
	if _, _, ok := ParseLinkStateKey(key); ok {
		return kindLinkState
	}
	if name, ok := strings.CutPrefix(key, unnumberedPrefix); ok && name != "" {
		return kindUnnumbered
	}
	return kindNone
}

func atou32(s string) (uint32, bool) {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var n uint64
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

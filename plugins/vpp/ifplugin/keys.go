package ifplugin

import (
	"net/netip"

	"github.com/netagent-io/netagent/pkg/models"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// Descriptor names.
const (
	InterfaceDescriptorName  = "vpp-interface"
	AddressDescriptorName    = "vpp-interface-address"
	UnnumberedDescriptorName = "vpp-unnumbered-interface"
	AdminStateDescriptorName = "vpp-interface-admin-state"
	VRFDescriptorName        = "vpp-interface-vrf"
)

// Keys of the derived and SB values (shared/spec/models.md).

// InterfaceKey is the NB key of a VPP interface.
func InterfaceKey(name string) string { return models.VPPInterface.KeyPrefix + name }

// AddressKey: vpp/interface/<iface>/address/static/<ip/len>.
func AddressKey(iface, cidr string) string {
	return "vpp/interface/" + iface + "/address/static/" + cidr
}

// AddressKeyPrefix is the prefix of the address keys of an interface.
func AddressKeyPrefix(iface string) string { return "vpp/interface/" + iface + "/address/" }

// HasIPAddressKey: the property vpp/interface/<iface>/has-IP-address, derived
// while the interface has at least one address.
func HasIPAddressKey(iface string) string { return "vpp/interface/" + iface + "/has-IP-address" }

// UnnumberedKey: vpp/interface/unnumbered/<iface>.
func UnnumberedKey(iface string) string { return "vpp/interface/unnumbered/" + iface }

// AdminStateKey: the admin state of an interface as its own derived value,
// vpp/interface/<iface>/admin-state/<UP|DOWN>; dependents wait for
// AdminStateKey(iface, true).
func AdminStateKey(iface string, up bool) string {
	if up {
		return "vpp/interface/" + iface + "/admin-state/UP"
	}
	return "vpp/interface/" + iface + "/admin-state/DOWN"
}

// LinkStateKey: the link state reported by VPP (SB, OBTAINED),
// vpp/interface/<iface>/link-state/<UP|DOWN>.
func LinkStateKey(iface string, up bool) string {
	if up {
		return "vpp/interface/" + iface + "/link-state/UP"
	}
	return "vpp/interface/" + iface + "/link-state/DOWN"
}

// VRFKey: vpp/interface/<iface>/vrf/<vrf>/ip-version/<v4|v6|both>.
func VRFKey(iface string, vrf uint32, version string) string {
	return "vpp/interface/" + iface + "/vrf/" + itoa(vrf) + "/ip-version/" + version
}

// VRFVersions are the ip-versions of an interface's VRFKeys: one per IP
// protocol whose table the interface is bound to, those of its addresses
// ("v4", "v6"); for an interface without addresses, that of a VXLAN
// tunnel's ends (its encap VRF's table, as in the original agent), "v4"
// for the others (an unnumbered one, one given addresses by DHCP).
func VRFVersions(v *vppif.Interface) []string {
	if len(v.GetIpAddresses()) == 0 && v.GetType() == vppif.Interface_VXLAN_TUNNEL && vxlanIPv6(v.GetVxlan()) {
		return []string{"v6"}
	}
	var v4, v6 bool
	for _, a := range v.GetIpAddresses() {
		if p, err := netip.ParsePrefix(a); err == nil && p.Addr().Is6() {
			v6 = true
		} else {
			v4 = true
		}
	}
	switch {
	case v4 && v6:
		return []string{"v4", "v6"}
	case v6:
		return []string{"v6"}
	}
	return []string{"v4"}
}

// vrfProtocols tells which protocols a VRFKey's version binds ("both", of
// keys the agent no longer derives, binds the two).
func vrfProtocols(version string) (ipv4, ipv6 bool) {
	return version != "v6", version != "v4"
}

func itoa(v uint32) string {
	if v == 0 {
		return "0"
	}
	var b [10]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

// Metadata is what the interface descriptor keeps per interface, in the
// scheduler's metadata map of InterfaceDescriptorName keyed by logical name;
// the map also finds an interface by sw_if_index (IndexMap).
type Metadata struct {
	SwIfIndex uint32
	// VPPPID is the VPP process (vpe_pid) SwIfIndex is valid in. Once
	// another VPP process is connected the metadata is not used: the
	// metadata map hides it (GetValue, LookupBySwIfIndex) until the resync
	// after the restart replaces or removes it. (0 without a
	// vppconn.Manager: NewWithHandler, stand-ins.)
	VPPPID uint32
	// InternalName is VPP's name (loop0, host-veth1, memif1/0, tap0, ...).
	InternalName string
	// DevType is VPP's device type (interface_dev_type: "Loopback",
	// "af-packet", "memif", "virtio", "dpdk", "local" for local0, ...). It
	// says what an interface is where the model's type cannot: a foreign
	// interface of a kind the model has no type for (local0, VPP's own) is
	// UNDEFINED_TYPE.
	DevType string
	Vrf     uint32
	// Foreign: the interface is not the agent's (doc.go, Ownership). Its
	// value is OBTAINED and its logical name is VPP's name; it may be
	// named (a bridge domain member, a route's outgoing interface, a
	// sub-interface's parent, an unnumbered donor) but is never changed.
	Foreign bool
	// Value is the interface's value as created, updated or retrieved (for
	// the agent's interfaces the configuration's admin state and addresses,
	// with the addresses VPP has beyond them; VPP's for a foreign one). The
	// Retrieves of the admin state and address values report VPP's state
	// under the keys it derives. Read-only; a pointer, so that Metadata
	// stays comparable. Left out of JSON: dumps show the value itself.
	Value *vppif.Interface `json:"-"`
}

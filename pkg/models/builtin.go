package models

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// The models of netagent. Their keys and JSON values are those of the
// original agent (shared/spec/models.md).
var (
	VPPInterface = &Model{
		Name:          "vpp.interfaces",
		KeyPrefix:     "config/vpp/v2/interfaces/",
		KeyTemplate:   "config/vpp/v2/interfaces/<name>",
		ConfigSection: "vpp_config", ConfigField: "interfaces",
		prototype:   &vppif.Interface{},
		keySuffix:   func(v proto.Message) (string, error) { return v.(*vppif.Interface).GetName(), nil },
		parseSuffix: vppNameSuffix,
		validate:    validateVPPInterface,
	}
	VPPBridgeDomain = &Model{
		Name:          "vpp.l2.bridge-domain",
		KeyPrefix:     "config/vpp/l2/v2/bridge-domain/",
		KeyTemplate:   "config/vpp/l2/v2/bridge-domain/<name>",
		ConfigSection: "vpp_config", ConfigField: "bridge_domains",
		prototype:   &vppl2.BridgeDomain{},
		keySuffix:   func(v proto.Message) (string, error) { return v.(*vppl2.BridgeDomain).GetName(), nil },
		parseSuffix: vppNameSuffix,
		validate:    validateBridgeDomain,
	}
	VPPRoute = &Model{
		Name:          "vpp.route",
		KeyPrefix:     "config/vpp/v2/route/",
		KeyTemplate:   "config/vpp/v2/route/[if/<outgoing_interface>/]vrf/<vrf_id>/dst/<ip>/<prefix-len>[/gw/<next_hop_addr>]",
		ConfigSection: "vpp_config", ConfigField: "routes",
		prototype:       &vppl3.Route{},
		keySuffix:       vppRouteSuffix,
		parseSuffix:     parseVPPRouteSuffix,
		validate:        validateVPPRoute,
		validateAppend:  validateAppendVPPRoute,
		canonicalSuffix: func(s string) string { return strings.TrimSuffix(s, "/") },
		// The original's route keys had no interface before its template
		// gained "if/<outgoing_interface>/"; etcd data written then still
		// has them.
		omittable: []omittablePart{{name: "outgoing_interface", segment: "if/<outgoing_interface>/"}},
	}
	VPPARP = &Model{
		Name:          "vpp.arp",
		KeyPrefix:     "config/vpp/v2/arp/",
		KeyTemplate:   "config/vpp/v2/arp/<interface>/<ip_address>",
		ConfigSection: "vpp_config", ConfigField: "arps",
		prototype: &vppl3.ARPEntry{},
		keySuffix: func(v proto.Message) (string, error) {
			a := v.(*vppl3.ARPEntry)
			return ifaceIPSuffix(a.GetInterface(), a.GetIpAddress())
		},
		parseSuffix: parseIfaceIPSuffix,
		validate:    validateVPPARP,
	}
	LinuxInterface = &Model{
		Name:          "linux.interfaces.interface",
		KeyPrefix:     "config/linux/interfaces/v2/interface/",
		KeyTemplate:   "config/linux/interfaces/v2/interface/<name>",
		ConfigSection: "linux_config", ConfigField: "interfaces",
		prototype:   &linuxif.Interface{},
		keySuffix:   func(v proto.Message) (string, error) { return v.(*linuxif.Interface).GetName(), nil },
		parseSuffix: linuxIfNameSuffix,
		validate:    validateLinuxInterface,
	}
	LinuxRoute = &Model{
		Name:          "linux.l3.route",
		KeyPrefix:     "config/linux/l3/v2/route/",
		KeyTemplate:   "config/linux/l3/v2/route/<dst ip>/<prefix-len>/<outgoing_interface>",
		ConfigSection: "linux_config", ConfigField: "routes",
		prototype:      &linuxl3.Route{},
		keySuffix:      linuxRouteSuffix,
		parseSuffix:    parseLinuxRouteSuffix,
		validate:       validateLinuxRoute,
		validateAppend: validateAppendLinuxRoute,
	}
	LinuxARP = &Model{
		Name:          "linux.l3.arp",
		KeyPrefix:     "config/linux/l3/v2/arp/",
		KeyTemplate:   "config/linux/l3/v2/arp/<interface>/<ip_address>",
		ConfigSection: "linux_config", ConfigField: "arp_entries",
		prototype: &linuxl3.ARPEntry{},
		keySuffix: func(v proto.Message) (string, error) {
			a := v.(*linuxl3.ARPEntry)
			return ifaceIPSuffix(a.GetInterface(), a.GetIpAddress())
		},
		parseSuffix: parseIfaceIPSuffix,
		validate:    validateLinuxARP,
	}
)

// Builtin returns the models of netagent.
func Builtin() []*Model {
	return []*Model{VPPInterface, VPPBridgeDomain, VPPRoute, VPPARP, LinuxInterface, LinuxRoute, LinuxARP,
		VPPVrfTable, VPPXConnect, VPPL2FIB,
		VPPNat44Global, VPPNat44Interface, VPPNat44AddressPool, VPPDNat44, VPPACL}
}

// Default is the registry of the built-in models.
var Default = mustRegistry(Builtin()...)

func mustRegistry(models ...*Model) *Registry {
	r, err := NewRegistry(models...)
	if err != nil {
		panic(err)
	}
	return r
}

// --- keys -------------------------------------------------------------------

func nameSuffix(s string) (KeyParts, error) {
	if err := keyName("name", s); err != nil {
		return nil, err
	}
	return KeyParts{"name": s}, nil
}

// linuxIfNameSuffix is the logical name of a Linux interface, without "/"
// (linuxIfName).
func linuxIfNameSuffix(s string) (KeyParts, error) {
	if strings.Contains(s, "/") {
		return nil, fmt.Errorf("name %q %s", s, linuxIfNameSlash)
	}
	return nameSuffix(s)
}

// ValidVPPName tells whether s can be the name of a VPP interface or
// bridge domain (which is also its VPP tag): whether the key of that name
// parses (ParseKey), without the key built and parsed.
func ValidVPPName(s string) bool {
	return len(s) <= vppTagLen && checkName(s) == nil
}

// vppNameSuffix is the name of a VPP interface or bridge domain, which is
// also its VPP tag.
func vppNameSuffix(s string) (KeyParts, error) {
	if len(s) > vppTagLen {
		return nil, fmt.Errorf("name %q is longer than %d bytes (it is the VPP tag)", s, vppTagLen)
	}
	return nameSuffix(s)
}

// ifaceIPSuffix is "<interface>/<ip>" (ARP entries).
func ifaceIPSuffix(iface, ip string) (string, error) {
	var errs fieldErrors
	a, ok := errs.ip("ip_address", ip)
	if !ok {
		return "", fmt.Errorf("%s", errs[0])
	}
	return iface + "/" + canonicalIP(a), nil
}

// parseIfaceIPSuffix parses "<interface>/<ip>": the address is the last
// segment, the interface name (which may contain "/") the rest.
func parseIfaceIPSuffix(s string) (KeyParts, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return nil, fmt.Errorf("want <interface>/<ip_address>")
	}
	iface, ip := s[:i], s[i+1:]
	if err := keyName("interface", iface); err != nil {
		return nil, err
	}
	if _, err := keyIP("ip_address", ip); err != nil {
		return nil, err
	}
	return KeyParts{"interface": iface, "ip_address": ip}, nil
}

func vppRouteSuffix(v proto.Message) (string, error) {
	r := v.(*vppl3.Route)
	var errs fieldErrors
	dst, ok := errs.cidr("dst_network", r.GetDstNetwork())
	if !ok {
		return "", fmt.Errorf("%s", errs[0])
	}
	var nh netip.Addr
	if s := r.GetNextHopAddr(); s != "" {
		if nh, ok = errs.ip("next_hop_addr", s); !ok {
			return "", fmt.Errorf("%s", errs[0])
		}
	}
	return string(appendVPPRouteKey(make([]byte, 0, 64), r, dst, nh)), nil
}

// appendVPPRouteKey appends the key suffix of route r, whose destination
// and next hop (zero: none) are parsed.
func appendVPPRouteKey(b []byte, r *vppl3.Route, dst netip.Prefix, nh netip.Addr) []byte {
	if iface := r.GetOutgoingInterface(); iface != "" {
		b = append(append(append(b, "if/"...), iface...), '/')
	}
	dst = dst.Masked()
	b = strconv.AppendUint(append(b, "vrf/"...), uint64(r.GetVrfId()), 10)
	b = dst.Addr().AppendTo(append(b, "/dst/"...))
	b = strconv.AppendInt(append(b, '/'), int64(dst.Bits()), 10)
	if nh.IsValid() {
		b = nh.AppendTo(append(b, "/gw/"...))
	}
	return b
}

// parseVPPRouteSuffix parses
// "[if/<iface>/]vrf/<vrf>/dst/<ip>/<len>[/gw/<next hop>]" from its end, so
// that the interface name may contain "/".
func parseVPPRouteSuffix(s string) (KeyParts, error) {
	const want = "want [if/<outgoing_interface>/]vrf/<vrf_id>/dst/<ip>/<prefix-len>[/gw/<next_hop_addr>]"
	segs := strings.Split(s, "/")
	parts := KeyParts{}
	n := len(segs)
	if n >= 6 && segs[n-1] == "" && segs[n-6] == "vrf" && segs[n-4] == "dst" {
		// The original agent ends the key of a route without a next hop
		// with "/": "vrf/0/dst/10.0.0.0/8/". Accepted; the canonical key
		// has no trailing "/" (CanonicalKey).
		segs = segs[:n-1]
		n--
	} else if n >= 2 && segs[n-2] == "gw" {
		nh, err := keyIP("next hop", segs[n-1])
		if err != nil {
			return nil, err
		}
		parts["next_hop_addr"] = nh.String()
		segs = segs[:n-2]
		n -= 2
	}
	if n < 5 || segs[n-5] != "vrf" || segs[n-3] != "dst" {
		return nil, fmt.Errorf("%s", want)
	}
	vrf, err := keyUint("vrf_id", segs[n-4])
	if err != nil {
		return nil, err
	}
	dst, err := keyPrefix("destination", segs[n-2], segs[n-1])
	if err != nil {
		return nil, err
	}
	if nh, ok := parts["next_hop_addr"]; ok {
		if a, _ := keyIP("next hop", nh); a.Is4() != dst.Addr().Is4() {
			return nil, fmt.Errorf("next hop %s and destination %s are of different IP versions", nh, dst)
		}
	}
	parts["vrf_id"] = strconv.FormatUint(uint64(vrf), 10)
	parts["dst_network"] = dst.String()
	if rest := segs[:n-5]; len(rest) > 0 {
		if rest[0] != "if" || len(rest) < 2 {
			return nil, fmt.Errorf("%s", want)
		}
		iface := strings.Join(rest[1:], "/")
		if err := keyName("outgoing interface", iface); err != nil {
			return nil, err
		}
		parts["outgoing_interface"] = iface
	}
	return parts, nil
}

func linuxRouteSuffix(v proto.Message) (string, error) {
	r := v.(*linuxl3.Route)
	var errs fieldErrors
	dst, ok := errs.cidr("dst_network", r.GetDstNetwork())
	if !ok {
		return "", fmt.Errorf("%s", errs[0])
	}
	return dst.Masked().String() + "/" + r.GetOutgoingInterface(), nil
}

// parseLinuxRouteSuffix parses "<ip>/<len>/<outgoing interface>".
func parseLinuxRouteSuffix(s string) (KeyParts, error) {
	segs := strings.SplitN(s, "/", 3)
	if len(segs) < 3 {
		return nil, fmt.Errorf("want <dst ip>/<prefix-len>/<outgoing_interface>")
	}
	dst, err := keyPrefix("destination", segs[0], segs[1])
	if err != nil {
		return nil, err
	}
	if err := keyName("outgoing interface", segs[2]); err != nil {
		return nil, err
	}
	return KeyParts{"dst_network": dst.String(), "outgoing_interface": segs[2]}, nil
}

// --- validation -------------------------------------------------------------

// vppTagLen is the longest VPP interface or bridge domain tag: the tag holds
// the logical name, so that ownership survives a restart.
const vppTagLen = 63

// linuxIfNameLen is the longest interface name of the kernel (IFNAMSIZ-1).
const linuxIfNameLen = 15

func validateVPPInterface(v proto.Message, errs *fieldErrors) {
	i := v.(*vppif.Interface)
	errs.name("name", i.GetName())
	if len(i.GetName()) > vppTagLen {
		errs.add("name", "%q is longer than %d bytes (it is the VPP interface tag)", i.GetName(), vppTagLen)
	}
	checkEnums(i.ProtoReflect(), "", errs)
	if i.GetPhysAddress() != "" {
		errs.interfaceMAC("phys_address", i.GetPhysAddress())
	}
	addresses(errs, "ip_addresses", i.GetIpAddresses())
	if i.GetMtu() > 9216 {
		errs.add("mtu", "%d is above 9216", i.GetMtu())
	}
	if u := i.GetUnnumbered(); u != nil {
		errs.name("unnumbered.interface_with_ip", u.GetInterfaceWithIp())
		if u.GetInterfaceWithIp() == i.GetName() {
			errs.add("unnumbered.interface_with_ip", "an interface cannot borrow its own addresses")
		}
		if len(i.GetIpAddresses()) > 0 {
			errs.add("ip_addresses", "an unnumbered interface has no addresses of its own")
		}
	}
	// The link must match the type.
	linkFor := map[vppif.Interface_Type]string{
		vppif.Interface_SUB_INTERFACE: "sub",
		vppif.Interface_MEMIF:         "memif",
		vppif.Interface_AF_PACKET:     "afpacket",
		vppif.Interface_TAP:           "tap",
		vppif.Interface_VXLAN_TUNNEL:  "vxlan",
	}
	link := ""
	if f := i.ProtoReflect().WhichOneof(i.ProtoReflect().Descriptor().Oneofs().ByName("link")); f != nil {
		link = string(f.Name())
	}
	if want := linkFor[i.GetType()]; link != "" && link != want {
		errs.add(link, "set, but the interface is of type %s", i.GetType())
	}
	switch i.GetType() {
	case vppif.Interface_SUB_INTERFACE:
		if s := i.GetSub(); s == nil {
			errs.add("sub", "required for a SUB_INTERFACE")
		} else {
			errs.name("sub.parent_name", s.GetParentName())
			if s.GetParentName() == i.GetName() {
				errs.add("sub.parent_name", "an interface cannot be its own parent")
			}
		}
	case vppif.Interface_AF_PACKET:
		a := i.GetAfpacket()
		switch {
		case a == nil || (a.GetHostIfName() == "" && a.GetLinuxInterface() == ""):
			errs.add("afpacket", "host_if_name or linux_interface is required for an AF_PACKET interface")
		case a.GetHostIfName() != "" && a.GetLinuxInterface() != "":
			errs.add("afpacket", "set host_if_name or linux_interface, not both")
		case a.GetHostIfName() != "":
			hostIfName(errs, "afpacket.host_if_name", a.GetHostIfName())
		default:
			errs.name("afpacket.linux_interface", a.GetLinuxInterface())
		}
	case vppif.Interface_VXLAN_TUNNEL:
		validateVxlanLink(i, errs)
	case vppif.Interface_TAP:
		if t := i.GetTap(); t != nil {
			if t.GetVersion() > 2 {
				errs.add("tap.version", "%d is not 0 (default), 1 or 2", t.GetVersion())
			}
			if t.GetHostIfName() != "" {
				hostIfName(errs, "tap.host_if_name", t.GetHostIfName())
			}
		}
	}
}

func validateBridgeDomain(v proto.Message, errs *fieldErrors) {
	bd := v.(*vppl2.BridgeDomain)
	errs.name("name", bd.GetName())
	if len(bd.GetName()) > vppTagLen {
		errs.add("name", "%q is longer than %d bytes (it is the VPP bridge domain tag)", bd.GetName(), vppTagLen)
	}
	seen := map[string]int{}
	bvi := -1
	for k, m := range bd.GetInterfaces() {
		field := fmt.Sprintf("interfaces[%d]", k)
		errs.name(field+".name", m.GetName())
		if j, dup := seen[m.GetName()]; dup && m.GetName() != "" {
			errs.add(field+".name", "%q is already interfaces[%d]", m.GetName(), j)
		}
		seen[m.GetName()] = k
		if m.GetBridgedVirtualInterface() {
			if bvi >= 0 {
				errs.add(field+".bridged_virtual_interface", "interfaces[%d] is the BVI already (at most one)", bvi)
			} else {
				bvi = k
			}
		}
	}
	ips := map[string]int{}
	for k, e := range bd.GetArpTerminationTable() {
		field := fmt.Sprintf("arp_termination_table[%d]", k)
		if a, ok := errs.ip(field+".ip_address", e.GetIpAddress()); ok {
			if j, dup := ips[a.String()]; dup {
				errs.add(field+".ip_address", "%s is already arp_termination_table[%d]", a, j)
			}
			ips[a.String()] = k
		}
		errs.mac(field+".phys_address", e.GetPhysAddress())
	}
}

func validateVPPRoute(v proto.Message, errs *fieldErrors) {
	checkVPPRoute(v.(*vppl3.Route), errs)
}

// validateAppendVPPRoute is validateVPPRoute and, for a valid route,
// its key suffix (vppRouteSuffix) appended to b, with one parse of its
// addresses.
func validateAppendVPPRoute(b []byte, v proto.Message, errs *fieldErrors) []byte {
	r := v.(*vppl3.Route)
	before := len(*errs)
	dst, nh := checkVPPRoute(r, errs)
	if len(*errs) > before {
		return b
	}
	return appendVPPRouteKey(b, r, dst, nh)
}

// checkVPPRoute is validateVPPRoute; it returns the destination and the
// next hop it parsed (valid when errs gained nothing; nh zero without a
// next hop).
func checkVPPRoute(r *vppl3.Route, errs *fieldErrors) (dst netip.Prefix, nh netip.Addr) {
	// type is a Route's one enum and it has no message field
	// (TestRouteChecksEveryEnum): checked directly, without checkEnums'
	// reflection, a third of this check's time for bulk route updates.
	if t := r.GetType(); vppl3.Route_RouteType_name[int32(t)] == "" {
		errs.add("type", "%d is not a value of %s", t, t.Descriptor().FullName())
	}
	dst, dstOK := errs.cidr("dst_network", r.GetDstNetwork())
	if s := r.GetNextHopAddr(); s != "" {
		a, ok := errs.ip("next_hop_addr", s)
		if ok && dstOK && a.Is4() != dst.Addr().Is4() {
			errs.add("next_hop_addr", "%s is not of the IP version of dst_network %s", s, r.GetDstNetwork())
		}
		nh = a
	}
	errs.optName("outgoing_interface", r.GetOutgoingInterface())
	// What each type of route may have: VPP's path types (a drop path, a
	// lookup in another table, a next hop and/or interface).
	switch r.GetType() {
	case vppl3.Route_DROP:
		if r.GetNextHopAddr() != "" {
			errs.add("next_hop_addr", "a DROP route has no next hop")
		}
		if r.GetOutgoingInterface() != "" {
			errs.add("outgoing_interface", "a DROP route has no outgoing interface")
		}
	case vppl3.Route_INTER_VRF:
		if r.GetOutgoingInterface() != "" {
			errs.add("outgoing_interface", "an INTER_VRF route is looked up in via_vrf_id; it has no outgoing interface")
		}
		if r.GetViaVrfId() == r.GetVrfId() {
			errs.add("via_vrf_id", "%d is vrf_id itself: the lookup would loop", r.GetViaVrfId())
		}
	case vppl3.Route_INTRA_VRF:
		if r.GetNextHopAddr() == "" && r.GetOutgoingInterface() == "" {
			errs.add("next_hop_addr", "an INTRA_VRF route needs a next hop or an outgoing interface")
		}
	}
	if r.GetType() != vppl3.Route_INTER_VRF && r.GetViaVrfId() != 0 {
		errs.add("via_vrf_id", "only an INTER_VRF route is looked up in another VRF")
	}
	return dst, nh
}

func validateVPPARP(v proto.Message, errs *fieldErrors) {
	a := v.(*vppl3.ARPEntry)
	errs.name("interface", a.GetInterface())
	errs.ip("ip_address", a.GetIpAddress())
	errs.mac("phys_address", a.GetPhysAddress())
}

func validateLinuxInterface(v proto.Message, errs *fieldErrors) {
	i := v.(*linuxif.Interface)
	nameOK := linuxIfName(errs, "name", i.GetName())
	checkEnums(i.ProtoReflect(), "", errs)
	// The name in the kernel: host_if_name, or the logical name (a
	// LOOPBACK's is lo, whatever its logical name).
	if i.GetHostIfName() != "" {
		hostIfName(errs, "host_if_name", i.GetHostIfName())
	} else if nameOK && i.GetType() != linuxif.Interface_LOOPBACK && hostIfNameProblem(i.GetName()) != "" {
		errs.add("host_if_name", "required: name %q cannot be the kernel name (%s)", i.GetName(), hostIfNameProblem(i.GetName()))
	}
	if ns := i.GetNamespace(); ns != nil {
		switch {
		case ns.GetType() == linuxns.NetNamespace_UNDEFINED && ns.GetReference() != "":
			errs.add("namespace.type", "required with a reference")
		case ns.GetType() != linuxns.NetNamespace_UNDEFINED && ns.GetReference() == "":
			errs.add("namespace.reference", "required for a namespace of type %s", ns.GetType())
		case ns.GetType() == linuxns.NetNamespace_PID:
			if _, err := strconv.ParseUint(ns.GetReference(), 10, 31); err != nil {
				errs.add("namespace.reference", "%q is not a process ID", ns.GetReference())
			}
		}
	}
	if i.GetPhysAddress() != "" {
		errs.interfaceMAC("phys_address", i.GetPhysAddress())
	}
	addresses(errs, "ip_addresses", i.GetIpAddresses())
	errs.optName("vrf_master_interface", i.GetVrfMasterInterface())
	if i.GetVrfMasterInterface() != "" && i.GetVrfMasterInterface() == i.GetName() {
		errs.add("vrf_master_interface", "an interface cannot be its own VRF master")
	}
	link := ""
	if f := i.ProtoReflect().WhichOneof(i.ProtoReflect().Descriptor().Oneofs().ByName("link")); f != nil {
		link = string(f.Name())
	}
	switch i.GetType() {
	case linuxif.Interface_VETH:
		if link != "veth" {
			errs.add("veth", "required for a VETH interface (peer_if_name)")
		} else {
			linuxIfName(errs, "veth.peer_if_name", i.GetVeth().GetPeerIfName())
			if i.GetVeth().GetPeerIfName() == i.GetName() {
				errs.add("veth.peer_if_name", "a veth end cannot be its own peer")
			}
		}
	case linuxif.Interface_TAP_TO_VPP:
		if link != "tap" {
			errs.add("tap", "required for a TAP_TO_VPP interface (vpp_tap_if_name)")
		} else {
			errs.name("tap.vpp_tap_if_name", i.GetTap().GetVppTapIfName())
		}
	default:
		if link != "" {
			errs.add(link, "set, but the interface is of type %s", i.GetType())
		}
	}
}

// linuxIfNameSlash says why the logical name of a Linux interface cannot
// contain "/".
const linuxIfNameSlash = `contains "/" (a Linux interface's name is part of the alias "netagent/<label>/<name>" that marks its link as the agent's)`

// linuxIfName checks the logical name of a Linux interface (its own or its
// veth peer's): a name without "/", because the agent marks the links it
// creates with the alias "netagent/[<label>/]<name>" and recognises its own
// by that form. It tells whether the name is valid.
func linuxIfName(errs *fieldErrors, field, s string) bool {
	n := len(*errs)
	errs.name(field, s)
	if len(*errs) == n && strings.Contains(s, "/") {
		errs.add(field, "name %q %s", s, linuxIfNameSlash)
	}
	return len(*errs) == n
}

func validateLinuxRoute(v proto.Message, errs *fieldErrors) {
	checkLinuxRoute(v.(*linuxl3.Route), errs)
}

// validateAppendLinuxRoute is validateLinuxRoute and, for a valid route,
// its key suffix (linuxRouteSuffix), with one parse of its destination.
func validateAppendLinuxRoute(b []byte, v proto.Message, errs *fieldErrors) []byte {
	r := v.(*linuxl3.Route)
	before := len(*errs)
	dst := checkLinuxRoute(r, errs)
	if len(*errs) > before {
		return b
	}
	return append(append(dst.Masked().AppendTo(b), '/'), r.GetOutgoingInterface()...)
}

// checkLinuxRoute is validateLinuxRoute; it returns the destination it
// parsed (valid when errs gained nothing).
func checkLinuxRoute(r *linuxl3.Route, errs *fieldErrors) netip.Prefix {
	// scope is a Route's one enum and it has no message field
	// (TestLinuxRouteChecksEveryEnum): checked directly, without checkEnums'
	// reflection, as the VPP route's type is.
	if sc := r.GetScope(); linuxl3.Route_Scope_name[int32(sc)] == "" {
		errs.add("scope", "%d is not a value of %s", sc, sc.Descriptor().FullName())
	}
	errs.name("outgoing_interface", r.GetOutgoingInterface())
	dst, dstOK := errs.cidr("dst_network", r.GetDstNetwork())
	if dstOK {
		errs.notMapped("dst_network", dst.Addr())
	}
	if gw := r.GetGwAddr(); gw != "" {
		a, ok := errs.ip("gw_addr", gw)
		if ok {
			errs.notMapped("gw_addr", a)
		}
		if ok && dstOK && !a.Is4In6() && !dst.Addr().Is4In6() && a.Is4() != dst.Addr().Is4() {
			errs.add("gw_addr", "%s is not of the IP version of dst_network %s", gw, r.GetDstNetwork())
		}
	}
	return dst
}

func validateLinuxARP(v proto.Message, errs *fieldErrors) {
	a := v.(*linuxl3.ARPEntry)
	errs.name("interface", a.GetInterface())
	if ip, ok := errs.ip("ip_address", a.GetIpAddress()); ok {
		errs.notMapped("ip_address", ip)
	}
	errs.mac("hw_address", a.GetHwAddress())
}

// addresses checks a list of CIDR addresses, without duplicates.
func addresses(errs *fieldErrors, field string, list []string) {
	seen := map[string]int{}
	for k, s := range list {
		f := fmt.Sprintf("%s[%d]", field, k)
		if p, ok := errs.cidr(f, s); ok {
			if j, dup := seen[p.Addr().String()]; dup {
				errs.add(f, "address %s is already %s[%d]", p.Addr(), field, j)
			}
			seen[p.Addr().String()] = k
		}
	}
}

// hostIfNameProblem says why s cannot be an interface name in the kernel, or
// "".
func hostIfNameProblem(s string) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > linuxIfNameLen:
		return fmt.Sprintf("longer than %d bytes", linuxIfNameLen)
	case s == "." || s == "..":
		return "not a name"
	case strings.ContainsAny(s, "/:"):
		return "contains / or :"
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return "contains spaces or control characters"
		}
	}
	return ""
}

func hostIfName(errs *fieldErrors, field, s string) {
	if p := hostIfNameProblem(s); p != "" {
		errs.add(field, "%q is not a kernel interface name: %s", s, p)
	}
}

// checkEnums reports enum fields holding numbers their enum does not define
// (a binary value from a newer client, say), in any nested message.
func checkEnums(m protoreflect.Message, path string, errs *fieldErrors) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() != protoreflect.EnumKind && fd.Kind() != protoreflect.MessageKind:
		case fd.IsList():
			l := v.List()
			for k := range l.Len() {
				checkEnumValue(fd, l.Get(k), path, k, errs)
			}
		case !fd.IsMap():
			checkEnumValue(fd, v, path, -1, errs)
		}
		return true
	})
}

// checkEnumValue checks the value v of field fd (entry index of a list;
// -1: not a list) of the message at path. The field's name is made only
// for an error or a nested message: values are checked by the thousand.
func checkEnumValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string, index int, errs *fieldErrors) {
	name := func() string {
		if index >= 0 {
			return fmt.Sprintf("%s%s[%d]", path, fd.Name(), index)
		}
		return path + string(fd.Name())
	}
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if fd.Enum().Values().ByNumber(v.Enum()) == nil {
			errs.add(name(), "%d is not a value of %s", v.Enum(), fd.Enum().FullName())
		}
	case protoreflect.MessageKind:
		checkEnums(v.Message(), name()+".", errs)
	}
}

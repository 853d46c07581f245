package vppsim

import (
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	nat "go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

// VPP error codes of the nat plugin.
const (
	errValueExist             = int32(api.VALUE_EXIST)              // -81
	errFeatureAlreadyDisabled = int32(api.FEATURE_ALREADY_DISABLED) // -169
	errFeatureAlreadyEnabled  = int32(api.FEATURE_ALREADY_ENABLED)  // -170
	// natDefaultSessions is the session count of an enable that asks for 0.
	natDefaultSessions = 64512
	// natTagLen is the size of a mapping tag (string[64]), its NUL included.
	natTagLen = 64
)

// natState is the nat plugin's (nat44-ed) part of the state. Its zero value
// is a VPP just started: the plugin loaded, disabled.
type natState struct {
	enabled, forwarding bool
	sessions            uint32
	ifs                 map[uint32]nat_types.NatConfigFlags // NAT_IS_INSIDE / NAT_IS_OUTSIDE
	outputs             map[uint32]bool
	// addrs and twiceAddrs are VPP's vectors: a deleted address's place is
	// taken by the last one.
	addrs, twiceAddrs []natAddress
	// mappings are the static, load-balanced and identity mappings, by
	// their external endpoint, in the order added.
	mappings []*natMapping
	// toResolve are the mappings on interfaces (static and identity), kept
	// until deleted, whatever happens to the interface.
	toResolve []*natMapping
}

type natAddress struct {
	ip  netip.Addr
	vrf uint32
}

// natMapping is a static (lb: load-balanced) or identity mapping.
type natMapping struct {
	identity, lb bool
	tag          string
	flags        nat_types.NatConfigFlags // twice-NAT, self, out2in, address only
	extIP        netip.Addr
	extPort      uint16
	proto        uint8
	swIfIndex    uint32 // of a mapping to resolve, else NoIndex
	locals       []nat.Nat44LbAddrPort
}

// extKey is what VPP knows a mapping by: its external endpoint (the
// address alone for an address mapping).
type natExtKey struct {
	ip    netip.Addr
	port  uint16
	proto uint8
}

func (m *natMapping) key() natExtKey { return natExtKey{m.extIP, m.extPort, m.proto} }

func natKey(ip netip.Addr, port uint16, proto uint8, addrOnly bool) natExtKey {
	if addrOnly {
		return natExtKey{ip: ip}
	}
	return natExtKey{ip, port, proto}
}

func natTag(tag string) string {
	if len(tag) >= natTagLen {
		return tag[:natTagLen-1]
	}
	return tag
}

// resolvedAddress is the IPv4 address a mapping on interface sw takes: the
// interface's first one, if it has one.
func (st *state) resolvedAddress(sw uint32) (netip.Addr, bool) {
	i := st.ifs[sw]
	if i == nil {
		return netip.Addr{}, false
	}
	for _, p := range i.Addresses {
		if p.Addr().Is4() {
			return p.Addr(), true
		}
	}
	return netip.Addr{}, false
}

// natResolved is the mapping VPP makes of a mapping to resolve while its
// interface has an address (nil: none).
func (st *state) natResolved(r *natMapping) *natMapping {
	a, ok := st.resolvedAddress(r.swIfIndex)
	if !ok {
		return nil
	}
	m := *r
	m.extIP, m.swIfIndex = a, NoIndex
	return &m
}

// natMappingAt returns the mapping (a resolved one too) with that external
// endpoint.
func (st *state) natMappingAt(k natExtKey) *natMapping {
	for _, m := range st.nat.mappings {
		if m.key() == k {
			return m
		}
	}
	for _, r := range st.nat.toResolve {
		if m := st.natResolved(r); m != nil && m.key() == k {
			return m
		}
	}
	return nil
}

// natInterfaceDeleted takes the NAT features off a deleted interface (the
// mappings to resolve on it stay, as in VPP).
func (n *natState) natInterfaceDeleted(idx uint32) {
	delete(n.ifs, idx)
	delete(n.outputs, idx)
}

func nat44ShowRunningConfig(c *call, _ *nat.Nat44ShowRunningConfig) api.Message {
	n := &c.st.nat
	r := &nat.Nat44ShowRunningConfigReply{Flags: nat.NAT44_IS_ENDPOINT_DEPENDENT, IpfixLoggingEnabled: true}
	if n.enabled {
		r.Sessions, r.ForwardingEnabled = n.sessions, n.forwarding
		r.Timeouts = nat_types.NatTimeouts{UDP: 300, TCPEstablished: 7440, TCPTransitory: 240, ICMP: 60}
	}
	return r
}

func nat44EdPluginEnableDisable(c *call, m *nat.Nat44EdPluginEnableDisable) api.Message {
	n := &c.st.nat
	r := &nat.Nat44EdPluginEnableDisableReply{}
	switch {
	case m.Enable && m.Flags&(nat.NAT44_IS_STATIC_MAPPING_ONLY|nat.NAT44_IS_CONNECTION_TRACKING) != 0:
		r.Retval = errUnsupported
	case m.Enable && n.enabled:
		r.Retval = errFeatureAlreadyEnabled
	case m.Enable:
		*n = natState{enabled: true, sessions: m.Sessions, ifs: map[uint32]nat_types.NatConfigFlags{}, outputs: map[uint32]bool{}}
		if n.sessions == 0 {
			n.sessions = natDefaultSessions
		}
	case !n.enabled:
		r.Retval = errFeatureAlreadyDisabled
	default:
		*n = natState{} // every NAT setting goes
	}
	return r
}

func nat44ForwardingEnableDisable(c *call, m *nat.Nat44ForwardingEnableDisable) api.Message {
	c.st.nat.forwarding = m.Enable // enabling the plugin resets it
	return &nat.Nat44ForwardingEnableDisableReply{}
}

func nat44InterfaceAddDelFeature(c *call, m *nat.Nat44InterfaceAddDelFeature) api.Message {
	n := &c.st.nat
	sw := uint32(m.SwIfIndex)
	r := &nat.Nat44InterfaceAddDelFeatureReply{}
	side := nat_types.NAT_IS_OUTSIDE
	if m.Flags&nat_types.NAT_IS_INSIDE != 0 {
		side = nat_types.NAT_IS_INSIDE
	}
	have, ok := n.ifs[sw]
	switch {
	case c.st.ifs[sw] == nil:
		r.Retval = errInvalidSwIfIndex
	case !n.enabled:
		r.Retval = errUnsupported
	case m.IsAdd && n.outputs[sw]:
		r.Retval = errValueExist
	case m.IsAdd:
		n.ifs[sw] = have | side
	case !ok:
		r.Retval = errNoSuchEntry
	case have == nat_types.NAT_IS_INSIDE|nat_types.NAT_IS_OUTSIDE:
		n.ifs[sw] = have &^ side
	default:
		// VPP takes the one feature off, whichever was asked for.
		delete(n.ifs, sw)
	}
	return r
}

func nat44InterfaceDump(c *call, _ *nat.Nat44InterfaceDump) []api.Message {
	n := &c.st.nat
	var out []api.Message
	for _, sw := range sortedIndexes(n.ifs) {
		out = append(out, &nat.Nat44InterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(sw), Flags: n.ifs[sw]})
	}
	return out
}

func nat44EdAddDelOutputInterface(c *call, m *nat.Nat44EdAddDelOutputInterface) api.Message {
	n := &c.st.nat
	sw := uint32(m.SwIfIndex)
	r := &nat.Nat44EdAddDelOutputInterfaceReply{}
	switch {
	case c.st.ifs[sw] == nil:
		r.Retval = errInvalidSwIfIndex
	case !n.enabled:
		r.Retval = errUnsupported
	case m.IsAdd && (n.outputs[sw] || n.ifs[sw] != 0):
		r.Retval = errValueExist
	case m.IsAdd:
		n.outputs[sw] = true
	case !n.outputs[sw]:
		r.Retval = errNoSuchEntry
	default:
		delete(n.outputs, sw)
	}
	return r
}

// nat44EdOutputInterfaceGet answers with the details and then the reply,
// all at once (cursor ~0; 0 when there is nothing).
func nat44EdOutputInterfaceGet(c *call, _ *nat.Nat44EdOutputInterfaceGet) []api.Message {
	n := &c.st.nat
	var out []api.Message
	for _, sw := range sortedIndexes(n.outputs) {
		out = append(out, &nat.Nat44EdOutputInterfaceDetails{SwIfIndex: interface_types.InterfaceIndex(sw)})
	}
	r := &nat.Nat44EdOutputInterfaceGetReply{}
	if len(out) > 0 {
		r.Cursor = NoIndex
	}
	return append(out, r)
}

func nat44AddDelAddressRange(c *call, m *nat.Nat44AddDelAddressRange) api.Message {
	n := &c.st.nat
	r := &nat.Nat44AddDelAddressRangeReply{}
	if !n.enabled {
		r.Retval = errUnsupported
		return r
	}
	list := &n.addrs
	if m.Flags&nat_types.NAT_IS_TWICE_NAT != 0 {
		list = &n.twiceAddrs
	}
	first := netip.AddrFrom4(m.FirstIPAddress)
	// VPP counts in an int: a last address below the first is nothing.
	count := int32(u32Of(netip.AddrFrom4(m.LastIPAddress))-u32Of(first)) + 1
	a := first
	for range max(count, 0) {
		i := slices.IndexFunc(*list, func(x natAddress) bool { return x.ip == a })
		switch {
		case m.IsAdd && i >= 0:
			r.Retval = errValueExist
			return r
		case m.IsAdd:
			*list = append(*list, natAddress{ip: a, vrf: m.VrfID})
		case i < 0:
			r.Retval = errNoSuchEntry
			return r
		default:
			l := *list
			l[i] = l[len(l)-1]
			*list = l[:len(l)-1]
		}
		a = a.Next()
	}
	return r
}

func u32Of(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func nat44AddressDump(c *call, _ *nat.Nat44AddressDump) []api.Message {
	n := &c.st.nat
	var out []api.Message
	for _, list := range []struct {
		addrs []natAddress
		flags nat_types.NatConfigFlags
	}{{n.addrs, 0}, {n.twiceAddrs, nat_types.NAT_IS_TWICE_NAT}} {
		for _, a := range list.addrs {
			out = append(out, &nat.Nat44AddressDetails{IPAddress: a.ip.As4(), VrfID: a.vrf, Flags: list.flags})
		}
	}
	return out
}

func nat44AddDelStaticMappingV2(c *call, m *nat.Nat44AddDelStaticMappingV2) api.Message {
	st, n := c.st, &c.st.nat
	r := &nat.Nat44AddDelStaticMappingV2Reply{}
	if !n.enabled {
		r.Retval = errUnsupported
		return r
	}
	addrOnly := m.Flags&nat_types.NAT_IS_ADDR_ONLY != 0
	nm := &natMapping{
		tag: natTag(m.Tag), flags: m.Flags & (nat_types.NAT_IS_TWICE_NAT | nat_types.NAT_IS_SELF_TWICE_NAT | nat_types.NAT_IS_OUT2IN_ONLY | nat_types.NAT_IS_ADDR_ONLY),
		swIfIndex: uint32(m.ExternalSwIfIndex), locals: []nat.Nat44LbAddrPort{{Addr: m.LocalIPAddress, VrfID: m.VrfID}},
	}
	if !addrOnly {
		nm.extPort, nm.proto, nm.locals[0].Port = m.ExternalPort, m.Protocol, m.LocalPort
	}
	if nm.swIfIndex != NoIndex {
		// A mapping on an interface (any index but ~0, unchecked).
		i := slices.IndexFunc(n.toResolve, func(x *natMapping) bool { return !x.identity && x.sameRecord(nm) })
		switch {
		case m.IsAdd && i >= 0:
			r.Retval = errValueExist
		case m.IsAdd:
			n.toResolve = append(n.toResolve, nm)
		case i < 0:
			r.Retval = errNoSuchEntry
		default:
			n.toResolve = slices.Delete(n.toResolve, i, i+1)
		}
		return r
	}
	nm.extIP = netip.AddrFrom4(m.ExternalIPAddress)
	k := natKey(nm.extIP, m.ExternalPort, m.Protocol, addrOnly)
	have := st.natMappingAt(k)
	switch {
	case m.IsAdd && have != nil:
		r.Retval = errValueExist
	case m.IsAdd:
		n.mappings = append(n.mappings, nm)
	case have == nil || have.identity:
		r.Retval = errNoSuchEntry
	case have.lb:
		// VPP answers success and keeps the load-balanced mapping.
	default:
		n.mappings = slices.DeleteFunc(n.mappings, func(x *natMapping) bool { return x == have })
	}
	return r
}

// sameRecord tells whether two mappings to resolve are one: interface,
// local endpoint, ports, protocol and VRF.
func (m *natMapping) sameRecord(o *natMapping) bool {
	return m.swIfIndex == o.swIfIndex && m.extPort == o.extPort && m.proto == o.proto &&
		m.flags&nat_types.NAT_IS_ADDR_ONLY == o.flags&nat_types.NAT_IS_ADDR_ONLY && slices.Equal(m.locals, o.locals)
}

// ip4 is an address as VPP's (0.0.0.0 for none: a mapping to resolve).
func ip4(a netip.Addr) ip_types.IP4Address {
	if !a.Is4() {
		return ip_types.IP4Address{}
	}
	return a.As4()
}

func natDetails(m *natMapping) *nat.Nat44StaticMappingDetails {
	return &nat.Nat44StaticMappingDetails{
		Flags: m.flags, LocalIPAddress: m.locals[0].Addr, ExternalIPAddress: ip4(m.extIP), Protocol: m.proto,
		LocalPort: m.locals[0].Port, ExternalPort: m.extPort, ExternalSwIfIndex: interface_types.InterfaceIndex(NoIndex), VrfID: m.locals[0].VrfID, Tag: m.tag,
	}
}

// nat44StaticMappingDump lists the static mappings (not load-balanced or
// identity ones), those VPP made of mappings on interfaces with an address,
// then the mappings to resolve: interface, no external address, and of
// the flags twice-NAT and address only.
func nat44StaticMappingDump(c *call, _ *nat.Nat44StaticMappingDump) []api.Message {
	st, n := c.st, &c.st.nat
	var out []api.Message
	for _, m := range n.mappings {
		if !m.identity && !m.lb {
			out = append(out, natDetails(m))
		}
	}
	for _, r := range n.toResolve {
		if m := st.natResolved(r); m != nil && !r.identity {
			out = append(out, natDetails(m))
		}
	}
	for _, r := range n.toResolve {
		if r.identity {
			continue
		}
		d := natDetails(r)
		d.ExternalIPAddress, d.ExternalSwIfIndex = ip_types.IP4Address{}, interface_types.InterfaceIndex(r.swIfIndex)
		d.Flags = r.flags & (nat_types.NAT_IS_TWICE_NAT | nat_types.NAT_IS_ADDR_ONLY)
		out = append(out, d)
	}
	return out
}

func nat44AddDelLbStaticMapping(c *call, m *nat.Nat44AddDelLbStaticMapping) api.Message {
	st, n := c.st, &c.st.nat
	r := &nat.Nat44AddDelLbStaticMappingReply{}
	if !n.enabled {
		r.Retval = errUnsupported
		return r
	}
	k := natKey(netip.AddrFrom4(m.ExternalAddr), m.ExternalPort, m.Protocol, false)
	have := st.natMappingAt(k)
	if !m.IsAdd {
		switch {
		case have == nil:
			r.Retval = errNoSuchEntry
		case !have.lb:
			r.Retval = errInvalidValue
		default:
			n.mappings = slices.DeleteFunc(n.mappings, func(x *natMapping) bool { return x == have })
		}
		return r
	}
	out2in := m.Flags&nat_types.NAT_IS_OUT2IN_ONLY != 0
	switch {
	case len(m.Locals) < 2:
		r.Retval = errInvalidValue
	case !out2in && !slices.ContainsFunc(n.addrs, func(a natAddress) bool { return a.ip == k.ip }):
		r.Retval = errNoSuchEntry
	case have != nil:
		r.Retval = errValueExist
	default:
		n.mappings = append(n.mappings, &natMapping{
			lb: true, tag: natTag(m.Tag), extIP: k.ip, extPort: k.port, proto: k.proto, swIfIndex: NoIndex,
			flags:  m.Flags & (nat_types.NAT_IS_TWICE_NAT | nat_types.NAT_IS_SELF_TWICE_NAT | nat_types.NAT_IS_OUT2IN_ONLY),
			locals: slices.Clone(m.Locals),
		})
	}
	return r
}

// nat44LbStaticMappingDump lists the load-balanced mappings; VPP does not
// report their affinity.
func nat44LbStaticMappingDump(c *call, _ *nat.Nat44LbStaticMappingDump) []api.Message {
	var out []api.Message
	for _, m := range c.st.nat.mappings {
		if m.lb {
			out = append(out, &nat.Nat44LbStaticMappingDetails{
				ExternalAddr: ip4(m.extIP), ExternalPort: m.extPort, Protocol: m.proto, Flags: m.flags, Tag: m.tag,
				LocalNum: uint32(len(m.locals)), Locals: slices.Clone(m.locals),
			})
		}
	}
	return out
}

func nat44AddDelIdentityMapping(c *call, m *nat.Nat44AddDelIdentityMapping) api.Message {
	st, n := c.st, &c.st.nat
	r := &nat.Nat44AddDelIdentityMappingReply{}
	if !n.enabled {
		r.Retval = errUnsupported
		return r
	}
	addrOnly := m.Flags&nat_types.NAT_IS_ADDR_ONLY != 0
	im := &natMapping{identity: true, tag: natTag(m.Tag), flags: m.Flags & nat_types.NAT_IS_ADDR_ONLY, swIfIndex: uint32(m.SwIfIndex)}
	if !addrOnly {
		im.extPort, im.proto = m.Port, m.Protocol
	}
	local := nat.Nat44LbAddrPort{VrfID: m.VrfID}
	if im.swIfIndex != NoIndex {
		im.locals = []nat.Nat44LbAddrPort{local}
		i := slices.IndexFunc(n.toResolve, func(x *natMapping) bool { return x.identity && x.sameRecord(im) })
		switch {
		case m.IsAdd && i >= 0:
			r.Retval = errValueExist
		case m.IsAdd:
			n.toResolve = append(n.toResolve, im)
		case i < 0:
			r.Retval = errNoSuchEntry
		default:
			n.toResolve = slices.Delete(n.toResolve, i, i+1)
		}
		return r
	}
	im.extIP = netip.AddrFrom4(m.IPAddress)
	have := st.natMappingAt(natKey(im.extIP, m.Port, m.Protocol, addrOnly))
	vrfAt := -1
	if have != nil && have.identity {
		vrfAt = slices.IndexFunc(have.locals, func(l nat.Nat44LbAddrPort) bool { return l.VrfID == m.VrfID })
	}
	switch {
	case m.IsAdd && have != nil && (!have.identity || vrfAt >= 0):
		r.Retval = errValueExist
	case m.IsAdd && have != nil:
		// One mapping holds a VRF per entry; its tag is the first one's.
		have.locals = append(have.locals, local)
	case m.IsAdd:
		im.locals = []nat.Nat44LbAddrPort{local}
		n.mappings = append(n.mappings, im)
	case have == nil || !have.identity || vrfAt < 0:
		r.Retval = errNoSuchEntry
	default:
		have.locals = slices.Delete(have.locals, vrfAt, vrfAt+1)
		if len(have.locals) == 0 {
			n.mappings = slices.DeleteFunc(n.mappings, func(x *natMapping) bool { return x == have })
		}
	}
	return r
}

func natIdentityDetails(m *natMapping, l nat.Nat44LbAddrPort) *nat.Nat44IdentityMappingDetails {
	return &nat.Nat44IdentityMappingDetails{
		Flags: m.flags, IPAddress: ip4(m.extIP), Protocol: m.proto, Port: m.extPort, SwIfIndex: interface_types.InterfaceIndex(NoIndex), VrfID: l.VrfID, Tag: m.tag,
	}
}

// nat44IdentityMappingDump lists one detail per VRF of each identity
// mapping, then (as the static dump) the mappings VPP made of those on
// interfaces with an address, and the mappings to resolve.
func nat44IdentityMappingDump(c *call, _ *nat.Nat44IdentityMappingDump) []api.Message {
	st, n := c.st, &c.st.nat
	var out []api.Message
	for _, m := range n.mappings {
		if m.identity {
			for _, l := range m.locals {
				out = append(out, natIdentityDetails(m, l))
			}
		}
	}
	for _, r := range n.toResolve {
		if m := st.natResolved(r); m != nil && r.identity {
			out = append(out, natIdentityDetails(m, m.locals[0]))
		}
	}
	for _, r := range n.toResolve {
		if r.identity {
			d := natIdentityDetails(r, r.locals[0])
			d.IPAddress, d.SwIfIndex = ip_types.IP4Address{}, interface_types.InterfaceIndex(r.swIfIndex)
			out = append(out, d)
		}
	}
	return out
}

// sortedIndexes returns the keys of a map by sw_if_index, sorted.
func sortedIndexes[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

package vpptest

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// The readers of VPP's state below ask VPP through its binary API (the
// same dumps against vppsim and a real VPP), on the Manager's connection,
// and fail the test when VPP does not answer. They do not use the plugins'
// own dump code, so that a test does not check the agent's reading of VPP
// with itself.

// NoIndex is VPP's ~0: no interface, no bridge domain, "all".
const NoIndex = ^uint32(0)

// FIB sources of routes (fib_source_t of VPP 25.10), as ip_route_v2_details
// reports an entry's best source.
const (
	SourceInterface uint8 = 4 // the entries of interface addresses
	SourceAPI       uint8 = 8 // ip_route_add_del: the agent's routes
	SourceCLI       uint8 = 9 // "ip route add" on VPP's console
)

// dumpArea is the area of the readers' calls: registered with no Manager,
// so never disabled.
const dumpArea = "vpptest-dumps"

// call runs f with VPP's connection and a call context; an error fails the
// test.
func (v *VPP) call(what string, f func(ctx context.Context, conn api.Connection) error) {
	v.t.Helper()
	if err := v.tryCall(f); err != nil {
		v.t.Fatalf("%s: %v", what, err)
	}
}

func (v *VPP) tryCall(f func(ctx context.Context, conn api.Connection) error) error {
	conn, err := v.M.Conn(dumpArea)
	if err != nil {
		return err
	}
	ctx, cancel := v.M.CallContext(context.Background())
	defer cancel()
	return f(ctx, conn)
}

// dump runs one dump request and returns its details.
func dump[T api.Message](v *VPP, req api.Message) []T {
	v.t.Helper()
	var out []T
	v.call(req.GetMessageName(), func(ctx context.Context, conn api.Connection) (err error) {
		out, err = vppconn.Dump[T](ctx, conn, req)
		return err
	})
	return out
}

// Interface is one VPP interface as its dumps report it.
type Interface struct {
	SwIfIndex    uint32
	SupSwIfIndex uint32 // itself, or the parent of a sub-interface
	Name         string // VPP's name: loop0, host-veth1, memif1/0, tap0, loop0.10
	Tag          string
	DevType      string // "Loopback", "af-packet", "memif", "virtio", ...
	AdminUp      bool
	LinkUp       bool
	MAC          string    // 02:00:00:00:00:01
	LinkMTU      uint32    // link_mtu
	MTU          [4]uint32 // L3, IP4, IP6, MPLS
	SubID        uint32
	OuterVlanID  uint16
	// IP4Table and IP6Table are the VRF (sw_interface_get_table).
	IP4Table, IP6Table uint32
	// Addresses with host bits, IPv4 before IPv6, sorted (ip_address_dump).
	Addresses []string
	// UnnumberedFrom is the interface whose addresses this one borrows,
	// NoIndex when it is not unnumbered (ip_unnumbered_dump).
	UnnumberedFrom uint32
}

// IsSub tells whether the interface is a sub-interface.
func (i Interface) IsSub() bool { return i.SupSwIfIndex != i.SwIfIndex }

// DumpInterfaces returns VPP's interfaces by index, with their addresses,
// VRF and unnumbered setting.
func (v *VPP) DumpInterfaces() []Interface {
	v.t.Helper()
	details := dump[*interfaces.SwInterfaceDetails](v, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(NoIndex)})
	unnumbered := map[uint32]uint32{}
	for _, d := range dump[*ip.IPUnnumberedDetails](v, &ip.IPUnnumberedDump{SwIfIndex: interface_types.InterfaceIndex(NoIndex)}) {
		unnumbered[uint32(d.SwIfIndex)] = uint32(d.IPSwIfIndex)
	}
	out := make([]Interface, 0, len(details))
	for _, d := range details {
		i := Interface{
			SwIfIndex: uint32(d.SwIfIndex), SupSwIfIndex: d.SupSwIfIndex, Name: d.InterfaceName, Tag: d.Tag, DevType: d.InterfaceDevType,
			AdminUp: d.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0, LinkUp: d.Flags&interface_types.IF_STATUS_API_FLAG_LINK_UP != 0,
			MAC: d.L2Address.String(), LinkMTU: uint32(d.LinkMtu), SubID: d.SubID, OuterVlanID: d.SubOuterVlanID, UnnumberedFrom: NoIndex,
		}
		copy(i.MTU[:], d.Mtu)
		if from, ok := unnumbered[i.SwIfIndex]; ok {
			i.UnnumberedFrom = from
		}
		for _, ipv6 := range []bool{false, true} {
			var vrf uint32
			v.call("sw_interface_get_table", func(ctx context.Context, conn api.Connection) error {
				r, err := interfaces.NewServiceClient(conn).SwInterfaceGetTable(ctx, &interfaces.SwInterfaceGetTable{SwIfIndex: d.SwIfIndex, IsIPv6: ipv6})
				if err == nil {
					vrf = r.VrfID
				}
				return err
			})
			if ipv6 {
				i.IP6Table = vrf
			} else {
				i.IP4Table = vrf
			}
			var addrs []netip.Prefix
			for _, a := range dump[*ip.IPAddressDetails](v, &ip.IPAddressDump{SwIfIndex: d.SwIfIndex, IsIPv6: ipv6}) {
				addrs = append(addrs, netip.PrefixFrom(addr(a.Prefix.Address), int(a.Prefix.Len)))
			}
			slices.SortFunc(addrs, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
			for _, a := range addrs {
				i.Addresses = append(i.Addresses, a.String())
			}
		}
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b Interface) int { return cmp.Compare(a.SwIfIndex, b.SwIfIndex) })
	return out
}

// InterfaceTagged returns the interface VPP has with the tag (a logical
// name of the agent's).
func (v *VPP) InterfaceTagged(tag string) (Interface, bool) {
	v.t.Helper()
	return find(v.DumpInterfaces(), func(i Interface) bool { return i.Tag == tag })
}

// InterfaceNamed returns the interface of VPP's name.
func (v *VPP) InterfaceNamed(name string) (Interface, bool) {
	v.t.Helper()
	return find(v.DumpInterfaces(), func(i Interface) bool { return i.Name == name })
}

// SwIfIndex returns the sw_if_index of the interface tagged name, and fails
// the test when VPP has none.
func (v *VPP) SwIfIndex(name string) uint32 {
	v.t.Helper()
	i, ok := v.InterfaceTagged(name)
	if !ok {
		v.t.Fatalf("VPP has no interface tagged %s", name)
	}
	return i.SwIfIndex
}

// NewInterfaces lists the interfaces VPP did not have when the test started.
func (v *VPP) NewInterfaces() []Interface {
	v.t.Helper()
	return slices.DeleteFunc(v.DumpInterfaces(), v.Before.hadInterface)
}

func find[T any](all []T, match func(T) bool) (T, bool) {
	k := slices.IndexFunc(all, match)
	if k < 0 {
		var zero T
		return zero, false
	}
	return all[k], true
}

func addr(a ip_types.Address) netip.Addr {
	if a.Af == ip_types.ADDRESS_IP6 {
		return netip.AddrFrom16(a.Un.GetIP6())
	}
	return netip.AddrFrom4(a.Un.GetIP4())
}

func prefix(p ip_types.Prefix) netip.Prefix {
	return netip.PrefixFrom(addr(p.Address), int(p.Len)).Masked()
}

// DumpMemifs returns VPP's memif interfaces by sw_if_index (memif_dump:
// VPP does not report the secret or the queue counts).
func (v *VPP) DumpMemifs() map[uint32]*memif.MemifDetails {
	v.t.Helper()
	out := map[uint32]*memif.MemifDetails{}
	for _, d := range dump[*memif.MemifDetails](v, &memif.MemifDump{}) {
		out[uint32(d.SwIfIndex)] = d
	}
	return out
}

// DumpMemifSockets returns VPP's memif socket filenames by socket id, as
// VPP reports them (absolute paths; socket 0 is VPP's default).
func (v *VPP) DumpMemifSockets() map[uint32]string {
	v.t.Helper()
	out := map[uint32]string{}
	for _, d := range dump[*memif.MemifSocketFilenameDetails](v, &memif.MemifSocketFilenameDump{}) {
		out[d.SocketID] = d.SocketFilename
	}
	return out
}

// DumpTaps returns VPP's TAP v2 interfaces by sw_if_index.
func (v *VPP) DumpTaps() map[uint32]*tapv2.SwInterfaceTapV2Details {
	v.t.Helper()
	out := map[uint32]*tapv2.SwInterfaceTapV2Details{}
	for _, d := range dump[*tapv2.SwInterfaceTapV2Details](v, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: interface_types.InterfaceIndex(NoIndex)}) {
		out[d.SwIfIndex] = d
	}
	return out
}

// DumpAfPackets returns the host interface of each AF_PACKET interface by
// sw_if_index.
func (v *VPP) DumpAfPackets() map[uint32]string {
	v.t.Helper()
	out := map[uint32]string{}
	for _, d := range dump[*af_packet.AfPacketDetails](v, &af_packet.AfPacketDump{}) {
		out[uint32(d.SwIfIndex)] = d.HostIfName
	}
	return out
}

// BridgeDomain is one bridge domain as bridge_domain_dump and bd_ip_mac_dump
// report it.
type BridgeDomain struct {
	BdID                                             uint32
	Tag                                              string
	Flood, UuFlood, Forward, Learn, ArpTerm, ArpUfwd bool
	MacAge                                           uint8
	BVI                                              uint32         // NoIndex when none
	Members                                          []BridgeMember // the BVI included, by sw_if_index
	ArpEntries                                       []string       // ARP termination entries, "ip=mac", sorted
}

// BridgeMember is one interface of a bridge domain.
type BridgeMember struct {
	SwIfIndex uint32
	SHG       uint8 // split-horizon group
}

// MemberIndexes lists the sw_if_index of the members.
func (b BridgeDomain) MemberIndexes() []uint32 {
	var out []uint32
	for _, m := range b.Members {
		out = append(out, m.SwIfIndex)
	}
	return out
}

// DumpBridgeDomains returns VPP's bridge domains by bd_id.
func (v *VPP) DumpBridgeDomains() []BridgeDomain {
	v.t.Helper()
	var out []BridgeDomain
	for _, d := range dump[*l2.BridgeDomainDetails](v, &l2.BridgeDomainDump{BdID: NoIndex, SwIfIndex: interface_types.InterfaceIndex(NoIndex)}) {
		b := BridgeDomain{
			BdID: d.BdID, Tag: d.BdTag, Flood: d.Flood, UuFlood: d.UuFlood, Forward: d.Forward, Learn: d.Learn,
			ArpTerm: d.ArpTerm, ArpUfwd: d.ArpUfwd, MacAge: d.MacAge, BVI: uint32(d.BviSwIfIndex),
		}
		for _, m := range d.SwIfDetails {
			b.Members = append(b.Members, BridgeMember{SwIfIndex: uint32(m.SwIfIndex), SHG: m.Shg})
		}
		slices.SortFunc(b.Members, func(x, y BridgeMember) int { return cmp.Compare(x.SwIfIndex, y.SwIfIndex) })
		for _, e := range dump[*l2.BdIPMacDetails](v, &l2.BdIPMacDump{BdID: d.BdID}) {
			b.ArpEntries = append(b.ArpEntries, addr(e.Entry.IP).String()+"="+e.Entry.Mac.String())
		}
		slices.Sort(b.ArpEntries)
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b BridgeDomain) int { return cmp.Compare(a.BdID, b.BdID) })
	return out
}

// BridgeDomainTagged returns the bridge domain VPP has with the tag.
func (v *VPP) BridgeDomainTagged(tag string) (BridgeDomain, bool) {
	v.t.Helper()
	return find(v.DumpBridgeDomains(), func(b BridgeDomain) bool { return b.Tag == tag })
}

// FreeBdIDs returns the n lowest bridge domain ids (from 1) VPP had no
// domain with when the test started.
func (v *VPP) FreeBdIDs(n int) []uint32 {
	var out []uint32
	for id := uint32(1); len(out) < n; id++ {
		if !slices.ContainsFunc(v.Before.BridgeDomains, func(b BridgeDomain) bool { return b.BdID == id }) {
			out = append(out, id)
		}
	}
	return out
}

// Table is one IP table (VRF).
type Table struct {
	ID   uint32
	IPv6 bool
}

// DumpTables returns VPP's IP tables, IPv4 first, by id (VPP's own tables
// of id ~0 aside).
func (v *VPP) DumpTables() []Table {
	v.t.Helper()
	var out []Table
	for _, d := range dump[*ip.IPTableDetails](v, &ip.IPTableDump{}) {
		t := Table{ID: d.Table.TableID, IPv6: d.Table.IsIP6}
		if t.ID != NoIndex && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, compareTables)
	return out
}

// DumpTableNames returns the names of VPP's IP tables (the labels VRF
// tables give them).
func (v *VPP) DumpTableNames() map[Table]string {
	v.t.Helper()
	out := map[Table]string{}
	for _, d := range dump[*ip.IPTableDetails](v, &ip.IPTableDump{}) {
		out[Table{ID: d.Table.TableID, IPv6: d.Table.IsIP6}] = d.Table.Name
	}
	return out
}

func compareTables(a, b Table) int {
	if a.IPv6 != b.IPv6 {
		if a.IPv6 {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.ID, b.ID)
}

// Route is one entry of an IP table, with the paths of its best source.
type Route struct {
	TableID uint32
	Prefix  netip.Prefix
	Source  uint8 // the best source (SourceAPI, SourceCLI, ...)
	Paths   []RoutePath
}

// RoutePath is one path of a route.
type RoutePath struct {
	Type       fib_types.FibPathType
	NextHop    netip.Addr // invalid when the path has none
	SwIfIndex  uint32     // NoIndex when none
	TableID    uint32     // the table a next hop is looked up in
	Weight     uint8
	Preference uint8
}

// DumpRoutes returns the entries of every IP table whose best source is one
// of sources (all entries without sources), by table and prefix
// (ip_table_dump, ip_route_v2_dump of each table).
func (v *VPP) DumpRoutes(sources ...uint8) []Route {
	v.t.Helper()
	var out []Route
	for _, t := range v.DumpTables() {
		for _, d := range dump[*ip.IPRouteV2Details](v, &ip.IPRouteV2Dump{Table: ip.IPTable{TableID: t.ID, IsIP6: t.IPv6}}) {
			if len(sources) > 0 && !slices.Contains(sources, d.Route.Src) {
				continue
			}
			r := Route{TableID: t.ID, Prefix: prefix(d.Route.Prefix), Source: d.Route.Src}
			for _, p := range d.Route.Paths {
				rp := RoutePath{Type: p.Type, SwIfIndex: p.SwIfIndex, TableID: p.TableID, Weight: p.Weight, Preference: p.Preference}
				switch p.Proto {
				case fib_types.FIB_API_PATH_NH_PROTO_IP4:
					rp.NextHop = netip.AddrFrom4(p.Nh.Address.GetIP4())
				case fib_types.FIB_API_PATH_NH_PROTO_IP6:
					rp.NextHop = netip.AddrFrom16(p.Nh.Address.GetIP6())
				}
				if rp.NextHop.IsUnspecified() {
					rp.NextHop = netip.Addr{}
				}
				r.Paths = append(r.Paths, rp)
			}
			out = append(out, r)
		}
	}
	return out
}

// NewRoutes lists the routes of sources that VPP did not have when the test
// started (by table, prefix and source).
func (v *VPP) NewRoutes(sources ...uint8) []Route {
	v.t.Helper()
	return slices.DeleteFunc(v.DumpRoutes(sources...), v.Before.hadRoute)
}

// Neighbor is one IP neighbour (ARP / ND entry).
type Neighbor struct {
	SwIfIndex uint32
	IP        netip.Addr
	MAC       string
	Static    bool
}

func (n Neighbor) String() string {
	kind := "dynamic"
	if n.Static {
		kind = "static"
	}
	return fmt.Sprintf("%s neighbour %s lladdr %s on sw_if_index %d", kind, n.IP, n.MAC, n.SwIfIndex)
}

// DumpNeighbors returns the neighbours VPP has, IPv4 then IPv6
// (ip_neighbor_dump of all interfaces). VPP 25.10 keeps the static ones of
// a deleted interface under its sw_if_index, so some may be on no interface
// (StaleNeighbors), and those come back on the next interface that gets
// that index.
func (v *VPP) DumpNeighbors() []Neighbor {
	v.t.Helper()
	var out []Neighbor
	for _, af := range []ip_types.AddressFamily{ip_types.ADDRESS_IP4, ip_types.ADDRESS_IP6} {
		for _, d := range dump[*ip_neighbor.IPNeighborDetails](v, &ip_neighbor.IPNeighborDump{SwIfIndex: interface_types.InterfaceIndex(NoIndex), Af: af}) {
			n := d.Neighbor
			out = append(out, Neighbor{
				SwIfIndex: uint32(n.SwIfIndex), IP: addr(n.IPAddress), MAC: n.MacAddress.String(),
				Static: n.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0,
			})
		}
	}
	return out
}

// Snapshot is what VPP has: what a test compares with, and what the
// cleanup after a test on a real VPP restores.
type Snapshot struct {
	Interfaces    []Interface
	BridgeDomains []BridgeDomain
	Tables        []Table
	// Routes of the API and CLI sources (the others come and go with
	// interfaces, addresses and neighbours).
	Routes       []Route
	MemifSockets map[uint32]string
	// Neighbors of every interface, and those VPP kept of deleted
	// interfaces (see DumpNeighbors).
	Neighbors []Neighbor
}

// Snapshot reads what VPP has.
func (v *VPP) Snapshot() Snapshot {
	v.t.Helper()
	return Snapshot{
		Interfaces: v.DumpInterfaces(), BridgeDomains: v.DumpBridgeDomains(), Tables: v.DumpTables(),
		Routes: v.DumpRoutes(SourceAPI, SourceCLI), MemifSockets: v.DumpMemifSockets(), Neighbors: v.DumpNeighbors(),
	}
}

// hadInterface: the snapshot has the interface (same index and name: VPP
// reuses the indexes of deleted interfaces).
func (s Snapshot) hadInterface(i Interface) bool {
	return slices.ContainsFunc(s.Interfaces, func(b Interface) bool { return b.SwIfIndex == i.SwIfIndex && b.Name == i.Name })
}

// HasInterfaceNamed: the snapshot has an interface of VPP's name.
func (s Snapshot) HasInterfaceNamed(name string) bool {
	return slices.ContainsFunc(s.Interfaces, func(b Interface) bool { return b.Name == name })
}

func (s Snapshot) hadBridgeDomain(b BridgeDomain) bool {
	return slices.ContainsFunc(s.BridgeDomains, func(x BridgeDomain) bool { return x.BdID == b.BdID })
}

func (s Snapshot) hadRoute(r Route) bool {
	return slices.ContainsFunc(s.Routes, func(x Route) bool {
		return x.TableID == r.TableID && x.Prefix == r.Prefix && x.Source == r.Source
	})
}

// HasRoute: the snapshot has a route of the API or CLI source to prefix in
// table.
func (s Snapshot) HasRoute(table uint32, prefix netip.Prefix) bool {
	return slices.ContainsFunc(s.Routes, func(x Route) bool { return x.TableID == table && x.Prefix == prefix })
}

// hadNeighbor: the snapshot has a neighbour of that address under that
// sw_if_index.
func (s Snapshot) hadNeighbor(n Neighbor) bool {
	return slices.ContainsFunc(s.Neighbors, func(x Neighbor) bool { return x.SwIfIndex == n.SwIfIndex && x.IP == n.IP })
}

// StaleNeighbors lists the neighbours of the snapshot whose sw_if_index no
// interface of the snapshot has: static neighbours VPP kept when their
// interface was deleted.
func (s Snapshot) StaleNeighbors() []Neighbor {
	var out []Neighbor
	for _, n := range s.Neighbors {
		if !slices.ContainsFunc(s.Interfaces, func(i Interface) bool { return i.SwIfIndex == n.SwIfIndex }) {
			out = append(out, n)
		}
	}
	return out
}

func (r Route) String() string {
	return fmt.Sprintf("table %d %s (source %d, %d paths)", r.TableID, r.Prefix, r.Source, len(r.Paths))
}

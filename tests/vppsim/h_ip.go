package vppsim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
)

// errNoMatchingInterface is VPP's NO_MATCHING_INTERFACE (-54), the answer to
// a route path through an interface VPP does not have.
const errNoMatchingInterface = int32(api.NO_MATCHING_INTERFACE)

// ipInterfaceDeleted is what happens to layer 3 when an interface is
// deleted, as in VPP 25.10: the route paths through it stay, under its
// sw_if_index (they can no longer be named in ip_route_add_del,
// NO_MATCHING_INTERFACE; a delete without paths removes them); its static
// neighbours stay too (ip_neighbor_dump lists them, ip_neighbor_add_del
// cannot reach them: INVALID_SW_IF_INDEX). An interface that gets the index
// later has both. Its dynamic neighbours are flushed.
func (st *state) ipInterfaceDeleted(idx uint32) {
	st.flushDynamicNeighbors(idx)
}

// flushDynamicNeighbors removes the neighbours of an interface that are not
// static (VPP flushes them when the interface goes admin down or is
// deleted).
func (st *state) flushDynamicNeighbors(idx uint32) {
	for k, n := range st.neighbors {
		if k.swIfIndex == idx && n.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC == 0 {
			delete(st.neighbors, k)
		}
	}
}

// ipAddressDump lists the interface's own addresses of one family. An
// unnumbered interface lists none: VPP reports the subnet on the interface
// that has it only (see ip_unnumbered_dump). An unknown interface: nothing.
func ipAddressDump(c *call, m *ip.IPAddressDump) []api.Message {
	i := c.st.get(uint32(m.SwIfIndex))
	if i == nil {
		return nil
	}
	var out []api.Message
	for _, a := range i.Addresses {
		if a.Addr().Is6() == m.IsIPv6 {
			out = append(out, &ip.IPAddressDetails{SwIfIndex: m.SwIfIndex, Prefix: ip_types.AddressWithPrefix(fromPrefix(a))})
		}
	}
	return out
}

// ipUnnumberedDump: sw_if_index ~0 lists every unnumbered interface, another
// value only that one (so GoVPP's zero value asks about local0).
func ipUnnumberedDump(c *call, m *ip.IPUnnumberedDump) []api.Message {
	var out []api.Message
	for _, i := range c.st.sortedIfs() {
		if !i.Unnumbered || (uint32(m.SwIfIndex) != NoIndex && uint32(m.SwIfIndex) != i.SwIfIndex) {
			continue
		}
		out = append(out, &ip.IPUnnumberedDetails{SwIfIndex: rvIndex(i.SwIfIndex), IPSwIfIndex: rvIndex(i.UnnumberedFrom)})
	}
	return out
}

// ipTableAddDel creates a table (named "ipv4-VRF:<id>" / "ipv6-VRF:<id>"
// unless a name is given; adding an existing one is a no-op) or deletes one:
// the API lets go of it, and it is destroyed with its routes unless
// interfaces bound to it or route paths resolving in it hold it (gcTables);
// table 0 and unknown tables are left alone without error.
func ipTableAddDel(c *call, m *ip.IPTableAddDel) api.Message {
	k := tableKey{m.Table.TableID, m.Table.IsIP6}
	t := c.st.tables[k]
	if m.IsAdd {
		if t == nil {
			name := m.Table.Name
			if name == "" {
				fam := "ipv4"
				if k.ipv6 {
					fam = "ipv6"
				}
				name = fmt.Sprintf("%s-VRF:%d", fam, k.id)
			}
			c.st.tables[k] = &tableState{name: name, apiOwned: k.id != 0}
		} else if k.id != 0 {
			t.apiOwned = true
		}
		return &ip.IPTableAddDelReply{}
	}
	if k.id == 0 || t == nil {
		return &ip.IPTableAddDelReply{}
	}
	t.apiOwned = false
	c.st.gcTables()
	return &ip.IPTableAddDelReply{}
}

func ipTableDump(c *call, _ *ip.IPTableDump) []api.Message {
	var keys []tableKey
	for k := range c.st.tables {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tableKey) int {
		if a.ipv6 != b.ipv6 {
			if a.ipv6 {
				return 1
			}
			return -1
		}
		return int(int64(a.id) - int64(b.id))
	})
	var out []api.Message
	for _, k := range keys {
		out = append(out, &ip.IPTableDetails{Table: ip.IPTable{TableID: k.id, IsIP6: k.ipv6, Name: c.st.tables[k].name}})
	}
	return out
}

func nhProto(ipv6 bool) fib_types.FibPathNhProto {
	if ipv6 {
		return fib_types.FIB_API_PATH_NH_PROTO_IP6
	}
	return fib_types.FIB_API_PATH_NH_PROTO_IP4
}

// decodePath checks and normalises one path: weight 0 becomes 1; a drop (or
// ICMP) path has no interface; a path through an interface needs that
// interface, to add the path or to delete it (NO_MATCHING_INTERFACE); a
// path without interface resolves in table_id, which must exist
// (NO_SUCH_FIB).
func (st *state) decodePath(p fib_types.FibPath, ipv6 bool) (RoutePath, int32) {
	rp := RoutePath{
		Type: p.Type, SwIfIndex: p.SwIfIndex, TableID: p.TableID, Weight: p.Weight,
		Preference: p.Preference, Proto: p.Proto, Flags: p.Flags,
	}
	if rp.Weight == 0 {
		rp.Weight = 1
	}
	var nh netip.Addr
	switch p.Proto {
	case fib_types.FIB_API_PATH_NH_PROTO_IP4:
		nh = netip.AddrFrom4(p.Nh.Address.GetIP4())
	case fib_types.FIB_API_PATH_NH_PROTO_IP6:
		nh = netip.AddrFrom16(p.Nh.Address.GetIP6())
	}
	if nh.IsValid() && !nh.IsUnspecified() {
		rp.NextHop = nh
	}
	switch p.Type {
	case fib_types.FIB_API_PATH_TYPE_DROP, fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH, fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT:
		rp.SwIfIndex, rp.NextHop, rp.TableID = NoIndex, netip.Addr{}, 0
	case fib_types.FIB_API_PATH_TYPE_LOCAL:
		if st.get(rp.SwIfIndex) == nil {
			rp.SwIfIndex = NoIndex
		}
	default:
		if rp.SwIfIndex != NoIndex {
			if st.get(rp.SwIfIndex) == nil {
				return rp, errNoMatchingInterface
			}
			rp.TableID = 0
			break
		}
		fam := ipv6
		if rp.NextHop.IsValid() {
			fam = rp.NextHop.Is6()
		}
		if st.tables[tableKey{rp.TableID, fam}] == nil {
			return rp, errNoSuchFib
		}
	}
	return rp, 0
}

func samePath(a, b RoutePath) bool {
	return a.Type == b.Type && a.NextHop == b.NextHop && a.SwIfIndex == b.SwIfIndex && a.TableID == b.TableID
}

func encodePath(rp RoutePath) fib_types.FibPath {
	fp := fib_types.FibPath{
		SwIfIndex: rp.SwIfIndex, TableID: rp.TableID, Weight: rp.Weight, Preference: rp.Preference,
		Type: rp.Type, Flags: rp.Flags, Proto: rp.Proto,
	}
	if rp.NextHop.IsValid() {
		if rp.NextHop.Is4() {
			fp.Nh.Address = ip_types.AddressUnionIP4(rp.NextHop.As4())
		} else {
			fp.Nh.Address = ip_types.AddressUnionIP6(rp.NextHop.As16())
		}
	}
	return fp
}

// FIB sources, with the values of VPP 25.10's fib_source_t that
// ip_route_add_del_v2 takes and ip_route_v2_dump filters and reports
// (0 is no source: "API" for ip_route_add_del_v2, "all" for
// ip_route_v2_dump).
const (
	SourceSpecial      uint8 = 1  // VPP's fixed entries (class D/E, broadcast drops, ...)
	SourceInterface    uint8 = 4  // interface addresses: attached, local and network/broadcast entries
	SourceAPI          uint8 = 8  // ip_route_add_del
	SourceCLI          uint8 = 9  // "ip route add" on VPP's CLI
	SourceAdjacency    uint8 = 15 // neighbours' host entries
	SourceDefaultRoute uint8 = 20 // the default drops (0.0.0.0/0, ::/0)
)

// sourcePriority is the priority of each built-in FIB source (index: the
// source; lower wins): the entry shows the best source's paths.
var sourcePriority = [...]uint8{
	1: 0x00, 2: 0x01, 3: 0x02, 4: 0x03, 5: 0x10, 6: 0x20, 7: 0x30, 8: 0x80, 9: 0x81, 10: 0x90,
	11: 0xa0, 12: 0xb0, 13: 0xc0, 14: 0xc1, 15: 0xd0, 16: 0xe0, 17: 0xf0, 18: 0xfb, 19: 0xfc, 20: 0xfd,
}

// validSource tells whether src is a built-in source a route can have.
func validSource(src uint8) bool { return src != 0 && int(src) < len(sourcePriority) }

// ipRouteAddDel is ipRouteAddDelV2 with the API source.
func ipRouteAddDel(c *call, m *ip.IPRouteAddDel) api.Message {
	stats, rv := c.st.routeAddDel(m.IsAdd, m.IsMultipath, m.Route.TableID, m.Route.Prefix, m.Route.Paths, SourceAPI)
	return &ip.IPRouteAddDelReply{Retval: rv, StatsIndex: stats}
}

// ipRouteAddDelV2 adds or deletes the paths of one source (route.src, 0 is
// the API source; an unknown source is INVALID_VALUE).
func ipRouteAddDelV2(c *call, m *ip.IPRouteAddDelV2) api.Message {
	src := m.Route.Src
	if src == 0 {
		src = SourceAPI
	}
	if !validSource(src) {
		return &ip.IPRouteAddDelV2Reply{Retval: errInvalidValue}
	}
	stats, rv := c.st.routeAddDel(m.IsAdd, m.IsMultipath, m.Route.TableID, m.Route.Prefix, m.Route.Paths, src)
	return &ip.IPRouteAddDelV2Reply{Retval: rv, StatsIndex: stats}
}

// routeAddDel follows VPP's fib_api_route_add_del for the paths of one
// source: the table must exist (NO_SUCH_FIB); adding without paths is
// NO_PATHS_IN_ROUTE (-158). isMultipath=false: add replaces the source's
// paths, delete removes them all. isMultipath=true: add appends the paths,
// delete removes those paths (the source's route goes with its last path).
// Deleting what does not exist is not an error. The prefix is masked.
func (st *state) routeAddDel(isAdd, isMultipath bool, table uint32, prefix ip_types.Prefix, fps []fib_types.FibPath, src uint8) (stats uint32, retval int32) {
	p, ok := toPrefix(prefix)
	if !ok {
		return 0, errInvalidValue
	}
	p = p.Masked()
	ipv6 := p.Addr().Is6()
	if st.tables[tableKey{table, ipv6}] == nil {
		return 0, errNoSuchFib
	}
	var paths []RoutePath
	for _, fp := range fps {
		rp, rv := st.decodePath(fp, ipv6)
		if rv != 0 {
			return 0, rv
		}
		paths = append(paths, rp)
	}
	// A path gone may let go of the last hold on a table the API deleted.
	defer st.gcTables()
	k := routeKey{table, p, src}
	route := st.routes[k]
	if isAdd {
		if len(paths) == 0 {
			return 0, errNoPathsInRoute
		}
		if route == nil {
			st.nextStats++
			route = &Route{TableID: k.table, Prefix: p, Source: src, stats: st.nextStats}
			st.routes[k] = route
		}
		if !isMultipath {
			route.Paths = nil
		}
		for _, np := range paths {
			if !slices.ContainsFunc(route.Paths, func(o RoutePath) bool { return samePath(o, np) }) {
				route.Paths = append(route.Paths, np)
			}
		}
		return route.stats, 0
	}
	if route == nil {
		return 0, 0
	}
	if isMultipath && len(paths) > 0 {
		route.Paths = slices.DeleteFunc(route.Paths, func(o RoutePath) bool {
			return slices.ContainsFunc(paths, func(d RoutePath) bool { return samePath(o, d) })
		})
		if len(route.Paths) > 0 {
			return route.stats, 0
		}
	}
	delete(st.routes, k)
	return route.stats, 0
}

type fibEntry struct {
	prefix netip.Prefix
	src    uint8 // the best source
	stats  uint32
	paths  []RoutePath
}

// fib is what ip_route_dump shows for one table: the routes added through
// the API and the entries VPP makes itself: per table the default drop
// entries (IPv4 0.0.0.0/0, 0.0.0.0/32, 224.0.0.0/4, 240.0.0.0/4,
// 255.255.255.255/32; IPv6 ::/0 and fe80::/10), per address of an admin-up
// interface of the table the attached subnet, the local /32 (/128) and for
// IPv4 up to /30 the network and broadcast /32 drops, and per neighbour
// (without NO_FIB_ENTRY) its /32 (/128). When several sources have a
// prefix, the entry has the best one's paths.
func (st *state) fib(table uint32, ipv6 bool) []fibEntry {
	m := map[netip.Prefix]fibEntry{}
	proto := nhProto(ipv6)
	put := func(p netip.Prefix, src uint8, stats uint32, paths ...RoutePath) {
		if e, ok := m[p]; ok && sourcePriority[e.src] <= sourcePriority[src] {
			return
		}
		m[p] = fibEntry{prefix: p, src: src, stats: stats, paths: paths}
	}
	drop := RoutePath{Type: fib_types.FIB_API_PATH_TYPE_DROP, SwIfIndex: NoIndex, Weight: 1, Proto: proto}
	if ipv6 {
		put(netip.MustParsePrefix("::/0"), SourceDefaultRoute, 0, drop)
		put(netip.MustParsePrefix("fe80::/10"), SourceSpecial, 0,
			RoutePath{Type: fib_types.FIB_API_PATH_TYPE_LOCAL, SwIfIndex: NoIndex, Weight: 1, Proto: proto})
	} else {
		put(netip.MustParsePrefix("0.0.0.0/0"), SourceDefaultRoute, 0, drop)
		for _, s := range []string{"0.0.0.0/32", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32"} {
			put(netip.MustParsePrefix(s), SourceSpecial, 0, drop)
		}
	}
	for _, i := range st.sortedIfs() {
		if !i.AdminUp || st.table(i, ipv6) != table {
			continue
		}
		for _, a := range i.Addresses {
			if a.Addr().Is6() != ipv6 {
				continue
			}
			full := a.Addr().BitLen()
			if a.Bits() < full {
				put(a.Masked(), SourceInterface, 0, RoutePath{Type: fib_types.FIB_API_PATH_TYPE_NORMAL, SwIfIndex: i.SwIfIndex, Weight: 1, Proto: proto})
			}
			put(netip.PrefixFrom(a.Addr(), full), SourceInterface, 0,
				RoutePath{Type: fib_types.FIB_API_PATH_TYPE_LOCAL, SwIfIndex: i.SwIfIndex, Weight: 1, Proto: proto})
			if !ipv6 && a.Bits() <= 30 {
				net4 := a.Masked().Addr().As4()
				bcast := binary.BigEndian.Uint32(net4[:]) | (1<<(32-a.Bits()) - 1)
				var b [4]byte
				binary.BigEndian.PutUint32(b[:], bcast)
				put(netip.PrefixFrom(a.Masked().Addr(), 32), SourceInterface, 0, drop)
				put(netip.PrefixFrom(netip.AddrFrom4(b), 32), SourceInterface, 0, drop)
			}
		}
	}
	for _, n := range st.neighbors {
		i := st.get(n.SwIfIndex)
		if i == nil || n.IP.Is6() != ipv6 || st.table(i, ipv6) != table ||
			n.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_NO_FIB_ENTRY != 0 {
			continue
		}
		put(netip.PrefixFrom(n.IP, n.IP.BitLen()), SourceAdjacency, 0,
			RoutePath{Type: fib_types.FIB_API_PATH_TYPE_NORMAL, SwIfIndex: n.SwIfIndex, NextHop: n.IP, Weight: 1, Proto: proto})
	}
	for k, r := range st.routes {
		if k.table == table && k.prefix.Addr().Is6() == ipv6 {
			put(k.prefix, k.src, r.stats, r.Paths...)
		}
	}
	out := make([]fibEntry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b fibEntry) int { return comparePrefix(a.prefix, b.prefix) })
	return out
}

// ipRouteDump lists the whole FIB of one table (see fib); an unknown table: nothing.
func ipRouteDump(c *call, m *ip.IPRouteDump) []api.Message {
	if c.st.tables[tableKey{m.Table.TableID, m.Table.IsIP6}] == nil {
		return nil
	}
	var out []api.Message
	for _, e := range c.st.fib(m.Table.TableID, m.Table.IsIP6) {
		d := &ip.IPRouteDetails{Route: ip.IPRoute{
			TableID: m.Table.TableID, StatsIndex: e.stats, Prefix: fromPrefix(e.prefix), NPaths: uint8(len(e.paths)),
		}}
		for _, p := range e.paths {
			d.Route.Paths = append(d.Route.Paths, encodePath(p))
		}
		out = append(out, d)
	}
	return out
}

// ipRouteV2Dump is ipRouteDump with each entry's best source (route.src);
// a non-zero src lists only the entries whose best source it is, as VPP
// does (an API route to an interface's attached subnet is shown under the
// interface source, with the interface's path).
func ipRouteV2Dump(c *call, m *ip.IPRouteV2Dump) []api.Message {
	if c.st.tables[tableKey{m.Table.TableID, m.Table.IsIP6}] == nil {
		return nil
	}
	var out []api.Message
	for _, e := range c.st.fib(m.Table.TableID, m.Table.IsIP6) {
		if m.Src != 0 && e.src != m.Src {
			continue
		}
		d := &ip.IPRouteV2Details{Route: ip.IPRouteV2{
			TableID: m.Table.TableID, StatsIndex: e.stats, Prefix: fromPrefix(e.prefix), NPaths: uint8(len(e.paths)), Src: e.src,
		}}
		for _, p := range e.paths {
			d.Route.Paths = append(d.Route.Paths, encodePath(p))
		}
		out = append(out, d)
	}
	return out
}

// ipNeighborAddDel adds or updates (is_add) or deletes an entry; deleting a
// missing one is NO_SUCH_ENTRY, and an interface VPP does not have (a
// deleted one's static entries included) INVALID_SW_IF_INDEX. An add
// without the STATIC flag does not make a static entry dynamic: with the
// entry's MAC it changes nothing, with another MAC VPP 25.10 refuses it
// with -2 (INVALID_SW_IF_INDEX, its ip_neighbor_add's return value).
func ipNeighborAddDel(c *call, m *ip_neighbor.IPNeighborAddDel) api.Message {
	r := &ip_neighbor.IPNeighborAddDelReply{}
	n := m.Neighbor
	if c.st.get(uint32(n.SwIfIndex)) == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	a, ok := toAddr(n.IPAddress)
	if !ok {
		r.Retval = errInvalidValue
		return r
	}
	k := neighKey{uint32(n.SwIfIndex), a}
	if !m.IsAdd {
		if c.st.neighbors[k] == nil {
			r.Retval = errNoSuchEntry
			return r
		}
		delete(c.st.neighbors, k)
		return r
	}
	mac := toMAC(n.MacAddress)
	if old := c.st.neighbors[k]; old != nil && old.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0 &&
		n.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC == 0 {
		if !bytes.Equal(old.MAC, mac) {
			r.Retval = errInvalidSwIfIndex
		}
		return r
	}
	c.st.nextStats++
	c.st.neighbors[k] = &Neighbor{SwIfIndex: k.swIfIndex, IP: a, MAC: mac, Flags: n.Flags}
	r.StatsIndex = c.st.nextStats
	return r
}

// ipNeighborDump: sw_if_index ~0 for all interfaces (GoVPP's zero value asks
// about local0 only), entries of family af.
func ipNeighborDump(c *call, m *ip_neighbor.IPNeighborDump) []api.Message {
	var list []*Neighbor
	for _, n := range c.st.neighbors {
		if (uint32(m.SwIfIndex) == NoIndex || uint32(m.SwIfIndex) == n.SwIfIndex) &&
			n.IP.Is6() == (m.Af == ip_types.ADDRESS_IP6) {
			list = append(list, n)
		}
	}
	slices.SortFunc(list, func(a, b *Neighbor) int {
		if a.SwIfIndex != b.SwIfIndex {
			return int(int64(a.SwIfIndex) - int64(b.SwIfIndex))
		}
		return a.IP.Compare(b.IP)
	})
	var out []api.Message
	for _, n := range list {
		out = append(out, &ip_neighbor.IPNeighborDetails{Neighbor: ip_neighbor.IPNeighbor{
			SwIfIndex: rvIndex(n.SwIfIndex), Flags: n.Flags, MacAddress: fromMAC(n.MAC), IPAddress: fromAddr(n.IP),
		}})
	}
	return out
}

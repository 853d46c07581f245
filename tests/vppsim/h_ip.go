package vppsim

import (
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
// its API routes are flushed; table 0 and unknown tables are left alone
// without error. A deleted table that interfaces are still bound to lives on
// until they leave it.
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
	for rk := range c.st.routes {
		if rk.table == k.id && rk.prefix.Addr().Is6() == k.ipv6 {
			delete(c.st.routes, rk)
		}
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
// interface (INVALID_SW_IF_INDEX); a path without interface resolves in
// table_id, which must exist (NO_SUCH_FIB).
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
				return rp, errInvalidSwIfIndex
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

// ipRouteAddDel follows VPP's fib_api_route_add_del: the table must exist
// (NO_SUCH_FIB); adding without paths is NO_PATHS_IN_ROUTE (-158).
// is_multipath=false: add replaces the route's paths, delete removes the
// route. is_multipath=true: add appends the paths, delete removes those paths
// (the route goes with its last path). Deleting what does not exist is not
// an error. The prefix is masked.
func ipRouteAddDel(c *call, m *ip.IPRouteAddDel) api.Message {
	r := &ip.IPRouteAddDelReply{}
	p, ok := toPrefix(m.Route.Prefix)
	if !ok {
		r.Retval = errInvalidValue
		return r
	}
	p = p.Masked()
	ipv6 := p.Addr().Is6()
	if c.st.tables[tableKey{m.Route.TableID, ipv6}] == nil {
		r.Retval = errNoSuchFib
		return r
	}
	var paths []RoutePath
	for _, fp := range m.Route.Paths {
		rp, rv := c.st.decodePath(fp, ipv6)
		if rv != 0 {
			r.Retval = rv
			return r
		}
		paths = append(paths, rp)
	}
	k := routeKey{m.Route.TableID, p}
	route := c.st.routes[k]
	if m.IsAdd {
		if len(paths) == 0 {
			r.Retval = errNoPathsInRoute
			return r
		}
		if route == nil {
			c.st.nextStats++
			route = &Route{TableID: k.table, Prefix: p, stats: c.st.nextStats}
			c.st.routes[k] = route
		}
		if !m.IsMultipath {
			route.Paths = nil
		}
		for _, np := range paths {
			if !slices.ContainsFunc(route.Paths, func(o RoutePath) bool { return samePath(o, np) }) {
				route.Paths = append(route.Paths, np)
			}
		}
		r.StatsIndex = route.stats
		return r
	}
	if route == nil {
		return r
	}
	r.StatsIndex = route.stats
	if m.IsMultipath && len(paths) > 0 {
		route.Paths = slices.DeleteFunc(route.Paths, func(o RoutePath) bool {
			return slices.ContainsFunc(paths, func(d RoutePath) bool { return samePath(o, d) })
		})
		if len(route.Paths) > 0 {
			return r
		}
	}
	delete(c.st.routes, k)
	return r
}

// Priorities of FIB sources (lower wins), as in VPP's fib_source.h.
const (
	srcSpecial = iota
	srcInterface
	srcAPI
	srcAdj
	srcDefaultRoute
)

type fibEntry struct {
	prefix netip.Prefix
	src    int
	stats  uint32
	paths  []RoutePath
}

// fib is what ip_route_dump shows for one table: the API routes and the
// entries VPP makes itself: per table the default drop entries (IPv4 0.0.0.0/0,
// 0.0.0.0/32, 224.0.0.0/4, 240.0.0.0/4, 255.255.255.255/32; IPv6 ::/0 and
// fe80::/10), per address of an admin-up interface of the table the attached
// subnet, the local /32 (/128) and for IPv4 up to /30 the network and
// broadcast /32 drops, and per neighbour (without NO_FIB_ENTRY) its /32
// (/128). When several sources have a prefix, the best one is shown.
func (st *state) fib(table uint32, ipv6 bool) []fibEntry {
	m := map[netip.Prefix]fibEntry{}
	proto := nhProto(ipv6)
	put := func(p netip.Prefix, src int, stats uint32, paths ...RoutePath) {
		if e, ok := m[p]; ok && e.src <= src {
			return
		}
		m[p] = fibEntry{prefix: p, src: src, stats: stats, paths: paths}
	}
	drop := RoutePath{Type: fib_types.FIB_API_PATH_TYPE_DROP, SwIfIndex: NoIndex, Weight: 1, Proto: proto}
	if ipv6 {
		put(netip.MustParsePrefix("::/0"), srcDefaultRoute, 0, drop)
		put(netip.MustParsePrefix("fe80::/10"), srcSpecial, 0,
			RoutePath{Type: fib_types.FIB_API_PATH_TYPE_LOCAL, SwIfIndex: NoIndex, Weight: 1, Proto: proto})
	} else {
		put(netip.MustParsePrefix("0.0.0.0/0"), srcDefaultRoute, 0, drop)
		for _, s := range []string{"0.0.0.0/32", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32"} {
			put(netip.MustParsePrefix(s), srcSpecial, 0, drop)
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
				put(a.Masked(), srcInterface, 0, RoutePath{Type: fib_types.FIB_API_PATH_TYPE_NORMAL, SwIfIndex: i.SwIfIndex, Weight: 1, Proto: proto})
			}
			put(netip.PrefixFrom(a.Addr(), full), srcInterface, 0,
				RoutePath{Type: fib_types.FIB_API_PATH_TYPE_LOCAL, SwIfIndex: i.SwIfIndex, Weight: 1, Proto: proto})
			if !ipv6 && a.Bits() <= 30 {
				net4 := a.Masked().Addr().As4()
				bcast := binary.BigEndian.Uint32(net4[:]) | (1<<(32-a.Bits()) - 1)
				var b [4]byte
				binary.BigEndian.PutUint32(b[:], bcast)
				put(netip.PrefixFrom(a.Masked().Addr(), 32), srcInterface, 0, drop)
				put(netip.PrefixFrom(netip.AddrFrom4(b), 32), srcInterface, 0, drop)
			}
		}
	}
	for _, n := range st.neighbors {
		i := st.get(n.SwIfIndex)
		if i == nil || n.IP.Is6() != ipv6 || st.table(i, ipv6) != table ||
			n.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_NO_FIB_ENTRY != 0 {
			continue
		}
		put(netip.PrefixFrom(n.IP, n.IP.BitLen()), srcAdj, 0,
			RoutePath{Type: fib_types.FIB_API_PATH_TYPE_NORMAL, SwIfIndex: n.SwIfIndex, NextHop: n.IP, Weight: 1, Proto: proto})
	}
	for k, r := range st.routes {
		if k.table == table && k.prefix.Addr().Is6() == ipv6 {
			put(k.prefix, srcAPI, r.stats, r.Paths...)
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

// ipNeighborAddDel adds or updates (is_add) or deletes an entry; deleting a
// missing one is NO_SUCH_ENTRY.
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
	c.st.nextStats++
	c.st.neighbors[k] = &Neighbor{SwIfIndex: k.swIfIndex, IP: a, MAC: toMAC(n.MacAddress), Flags: n.Flags}
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

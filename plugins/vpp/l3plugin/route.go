package l3plugin

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/netagent-io/netagent/plugins/vpp/internal/ipconv"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/internal/depcache"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// RouteMetadata is what the route descriptor keeps per route: the
// sw_if_index of its outgoing interface when it was added (~0 for none), so
// that the path is removed as it was added, and the VPP process it was
// added to (vppconn.Manager.PID): a route of a VPP that has restarted since
// went with it, and its index is never sent to the new one.
type RouteMetadata struct {
	SwIfIndex uint32
	VPPPID    uint32
}

// routeSpec is a route value in VPP terms.
type routeSpec struct {
	typ    vppl3.Route_RouteType
	vrf    uint32
	dst    netip.Prefix // masked
	nh     netip.Addr   // invalid: none
	iface  string
	via    uint32
	weight uint32 // 0 is taken as 1, as VPP does
	pref   uint32
}

func parseRoute(r *vppl3.Route) (routeSpec, error) {
	dst, err := netip.ParsePrefix(r.GetDstNetwork())
	if err != nil {
		return routeSpec{}, fmt.Errorf("dst_network %q: %w", r.GetDstNetwork(), err)
	}
	s := routeSpec{
		typ: r.GetType(), vrf: r.GetVrfId(), dst: dst.Masked(), iface: r.GetOutgoingInterface(),
		via: r.GetViaVrfId(), weight: r.GetWeight(), pref: r.GetPreference(),
	}
	if s.weight == 0 {
		s.weight = 1
	}
	if nh := r.GetNextHopAddr(); nh != "" {
		if s.nh, err = netip.ParseAddr(nh); err != nil {
			return routeSpec{}, fmt.Errorf("next_hop_addr %q: %w", nh, err)
		}
		if s.nh.Is4() != s.dst.Addr().Is4() {
			return routeSpec{}, fmt.Errorf("next_hop_addr %s is not of the IP version of dst_network %s", s.nh, s.dst)
		}
	}
	return s, nil
}

func (s routeSpec) ipv6() bool { return !s.dst.Addr().Is4() }

func (s routeSpec) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vrf %d %s", s.vrf, s.dst)
	switch s.typ {
	case vppl3.Route_DROP:
		b.WriteString(" drop")
	case vppl3.Route_INTER_VRF:
		fmt.Fprintf(&b, " lookup in vrf %d", s.via)
	}
	if s.nh.IsValid() {
		b.WriteString(" via " + s.nh.String())
	}
	if s.iface != "" {
		b.WriteString(" dev " + s.iface)
	}
	return b.String()
}

// lookupTable is the table a path without interface resolves in.
func (s routeSpec) lookupTable() uint32 {
	if s.typ == vppl3.Route_INTER_VRF {
		return s.via
	}
	return s.vrf
}

// tables are the tables the route needs: its own and the one it looks up in.
func (s routeSpec) tables() []tableKey {
	out := []tableKey{{s.vrf, s.ipv6()}}
	if s.typ == vppl3.Route_INTER_VRF && s.via != s.vrf {
		out = append(out, tableKey{s.via, s.ipv6()})
	}
	return out
}

// tablesOf names the tables of a route ("10 (IPv4)", "10 (IPv4) or 7 (IPv4)").
func tablesOf(s routeSpec) string {
	var names []string
	for _, t := range s.tables() {
		names = append(names, strings.TrimPrefix(t.String(), "VRF table "))
	}
	return strings.Join(names, " or ")
}

// holdsOwnTable tells whether the route's path resolves in the route's own
// table (a next hop without interface, in a VRF other than 0): such a path
// holds that table in VPP.
func (s routeSpec) holdsOwnTable() bool {
	return s.vrf != 0 && s.typ == vppl3.Route_INTRA_VRF && s.iface == ""
}

func (s routeSpec) proto() fib_types.FibPathNhProto {
	if s.ipv6() {
		return fib_types.FIB_API_PATH_NH_PROTO_IP6
	}
	return fib_types.FIB_API_PATH_NH_PROTO_IP4
}

// path is the one path of the route; swIfIndex is the outgoing interface's
// (~0 for none).
func (s routeSpec) path(swIfIndex uint32) fib_types.FibPath {
	fp := fib_types.FibPath{
		SwIfIndex: noIndex, Weight: uint8(s.weight), Preference: uint8(s.pref), Proto: s.proto(),
		Type: fib_types.FIB_API_PATH_TYPE_NORMAL,
	}
	if s.typ == vppl3.Route_DROP {
		fp.Type = fib_types.FIB_API_PATH_TYPE_DROP
		return fp
	}
	if s.iface != "" {
		fp.SwIfIndex = swIfIndex
	} else {
		fp.TableID = s.lookupTable()
	}
	if s.nh.IsValid() {
		fp.Nh.Address = ipconv.ToVPP(s.nh).Un
	}
	return fp
}

// pathNextHop decodes the next hop of a dumped path (invalid: none).
func pathNextHop(p fib_types.FibPath) netip.Addr {
	var a netip.Addr
	switch p.Proto {
	case fib_types.FIB_API_PATH_NH_PROTO_IP4:
		a = netip.AddrFrom4(p.Nh.Address.GetIP4())
	case fib_types.FIB_API_PATH_NH_PROTO_IP6:
		a = netip.AddrFrom16(p.Nh.Address.GetIP6())
	default:
		return netip.Addr{}
	}
	if a.IsUnspecified() {
		return netip.Addr{}
	}
	return a
}

// matches tells whether a dumped path is the path this route adds (weight and
// preference aside): same type, next hop, and interface, or lookup table
// when it has no interface.
func (s routeSpec) matches(p fib_types.FibPath, swIfIndex uint32) bool {
	if s.typ == vppl3.Route_DROP {
		return p.Type == fib_types.FIB_API_PATH_TYPE_DROP
	}
	if p.Type != fib_types.FIB_API_PATH_TYPE_NORMAL || pathNextHop(p) != s.nh {
		return false
	}
	if s.iface != "" {
		return p.SwIfIndex == swIfIndex
	}
	return p.SwIfIndex == noIndex && p.TableID == s.lookupTable()
}

// routesEquivalent is the ValueComparator: values that make the same VPP
// route are equal (destination host bits, weight 0 and 1, address
// spellings).
func routesEquivalent(a, b *vppl3.Route) bool {
	sa, errA := parseRoute(a)
	sb, errB := parseRoute(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return sa == sb
}

func (p *Plugin) routeDescriptor() *api.TypedDescriptor[*vppl3.Route, *RouteMetadata] {
	prefix := models.VPPRoute.KeyPrefix
	return &api.TypedDescriptor[*vppl3.Route, *RouteMetadata]{
		Name:            RouteDescriptorName,
		NBKeyPrefix:     prefix,
		KeySelector:     func(key string) bool { return strings.HasPrefix(key, prefix) },
		ValueComparator: func(_ string, a, b *vppl3.Route) bool { return routesEquivalent(a, b) },
		WithMetadata:    true,
		Validate:        validateRoute,
		Create:          p.createRoute,
		Delete:          p.deleteRoute,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppl3.Route, *RouteMetadata]) ([]api.TypedKV[*vppl3.Route, *RouteMetadata], error) {
			return vppconn.Retrieved(p.retrieveRoutes(ctx, c))
		},
		Prefetch:             p.prefetchRoutes,
		IsRetriableFailure:   isRetriable,
		Dependencies:         routeDependencies,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName},
	}
}

func validateRoute(key string, r *vppl3.Route) error {
	if err := models.VPPRoute.CheckKey(key, r); err != nil {
		return validate.Invalid(err)
	}
	var pr validate.Problems
	if r.GetWeight() > 255 {
		pr.Add("weight", "%d is above 255 (VPP keeps 8 bits)", r.GetWeight())
	}
	if r.GetPreference() > 255 {
		pr.Add("preference", "%d is above 255 (VPP keeps 8 bits)", r.GetPreference())
	}
	return pr.Err()
}

// routeDependencies: the outgoing interface, and the VRF tables the route
// needs (vrf_id, and via_vrf_id for INTER_VRF) other than table 0, which
// always exists: their values (VrfTableDescriptorName) are the tables.
func routeDependencies(_ string, r *vppl3.Route) []api.Dependency {
	iface := r.GetOutgoingInterface()
	if r.GetVrfId() == 0 && r.GetViaVrfId() == 0 {
		// Table 0 is always there (the common case: no parse), and every
		// route through iface has the same dependencies.
		if iface == "" {
			return nil
		}
		return ifaceDeps.Of(iface, func() []api.Dependency { return ifaceDependency(nil, iface) })
	}
	var deps []api.Dependency
	if iface != "" {
		deps = ifaceDependency(deps, iface)
	}
	s, err := parseRoute(r)
	if err != nil {
		return deps // Validate refuses it
	}
	for _, t := range s.tables() {
		if t.id != 0 {
			deps = append(deps, api.Dependency{Label: t.String(), Key: models.VrfTableKey(t.id, t.ipv6)})
		}
	}
	return deps
}

// ifaceDependency appends the dependency of a route on its outgoing
// interface.
func ifaceDependency(deps []api.Dependency, iface string) []api.Dependency {
	return append(deps, api.Dependency{Label: "interface " + iface, Key: ifplugin.InterfaceKey(iface)})
}

// ifaceDeps are the dependencies of the routes of table 0 by outgoing
// interface (see depcache), for at most 4,096 interfaces at a time.
var ifaceDeps = depcache.New[string](4096)

// tableAddDel makes sure the API holds the table (ip_table_add_del add: a
// no-op for a table the API holds; an unnamed table when VPP has none).
func (p *Plugin) tableAddDel(ctx context.Context, k tableKey) error {
	err := p.call(ctx, func(ctx context.Context, conn govppapi.Connection) error {
		_, err := ip.NewServiceClient(conn).IPTableAddDel(ctx, &ip.IPTableAddDel{
			IsAdd: true, Table: ip.IPTable{TableID: k.id, IsIP6: k.ipv6},
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("ip_table_add_del (table %d, ipv6 %v): %w", k.id, k.ipv6, err)
	}
	return nil
}

// routeRequest is the ip_route_add_del that adds or removes the route's
// path through sw_if_index swIfIndex (~0: none).
func routeRequest(isAdd bool, s routeSpec, swIfIndex uint32) *ip.IPRouteAddDel {
	return &ip.IPRouteAddDel{
		IsAdd: isAdd,
		// Multipath: routes of other keys to the same destination (other
		// next hops) are other paths of one VPP route; each key adds and
		// removes its own path only.
		IsMultipath: true,
		Route: ip.IPRoute{
			TableID: s.vrf, Prefix: toVPPPrefix(s.dst), NPaths: 1,
			Paths: []fib_types.FibPath{s.path(swIfIndex)},
		},
	}
}

func (p *Plugin) routeAddDel(ctx context.Context, req *ip.IPRouteAddDel) error {
	return p.call(ctx, func(ctx context.Context, conn govppapi.Connection) error {
		_, err := ip.NewServiceClient(conn).IPRouteAddDel(ctx, req)
		return err
	})
}

// routeOp is a route's Create or Delete prepared for its one
// ip_route_add_del (req), which Create and Delete send alone and Batch
// pipelined with those of other routes. A nil req: nothing to send (a
// Delete with nothing to remove).
type routeOp struct {
	s   routeSpec
	sw  uint32 // the outgoing interface's sw_if_index, ~0 for none
	pid uint32 // the VPP process before the index was looked up
	req *ip.IPRouteAddDel
}

// prepareCreate looks up the outgoing interface's index. The route's
// tables are values of their own, which it depends on.
func (p *Plugin) prepareCreate(ctx context.Context, r *vppl3.Route) (routeOp, error) {
	s, err := parseRoute(r)
	if err != nil {
		return routeOp{}, api.NonRetriable(validate.Invalid(err))
	}
	op := routeOp{s: s, sw: noIndex, pid: p.m.PID()} // the PID before the index is looked up (see deleteRoute)
	if s.iface != "" {
		md, ok := p.ifaces(ctx, s.iface)
		if !ok {
			// The dependency should have prevented this.
			return routeOp{}, fmt.Errorf("route %s: interface %s has no sw_if_index in the VPP connected now (no metadata of %s, or that of a VPP that has restarted since)", s, s.iface, ifplugin.InterfaceDescriptorName)
		}
		op.sw = md.SwIfIndex
	}
	op.req = routeRequest(true, s, op.sw)
	return op, nil
}

// finishCreate completes a Create given the result of its request.
func (p *Plugin) finishCreate(ctx context.Context, op routeOp, err error) (*RouteMetadata, error) {
	if vppconn.IsVPPError(err, govppapi.NO_SUCH_FIB) {
		// The dependency on the table values should have prevented this.
		return nil, fmt.Errorf("ip_route_add_del (add %s): VPP has no table %s (deleted behind the agent's back? a resync creates it again): %w", op.s, tablesOf(op.s), err)
	}
	if err != nil {
		return nil, fmt.Errorf("ip_route_add_del (add %s): %w", op.s, err)
	}
	pid := op.pid
	if pid == 0 { // no VPP had connected: the route went to the first one
		pid = p.m.PID()
	}
	return &RouteMetadata{SwIfIndex: op.sw, VPPPID: pid}, nil
}

// createRoute adds the route's path, creating its tables first.
func (p *Plugin) createRoute(ctx context.Context, _ string, r *vppl3.Route) (*RouteMetadata, error) {
	op, err := p.prepareCreate(ctx, r)
	if err != nil {
		return nil, err
	}
	return p.finishCreate(ctx, op, p.routeAddDel(ctx, op.req))
}

// prepareDelete finds what a Delete removes; a nil req when nothing is to
// be sent (never added, added to a VPP that has restarted since, or its
// interface unknown in this VPP).
func (p *Plugin) prepareDelete(ctx context.Context, r *vppl3.Route, md *RouteMetadata) (routeOp, error) {
	s, err := parseRoute(r)
	if err != nil {
		return routeOp{}, nil // never added
	}
	if md != nil && md.VPPPID != p.m.PID() {
		return routeOp{}, nil // added to a VPP that has restarted since: gone with it
	}
	if s.holdsOwnTable() {
		// The path resolves in the route's own table, and so holds it in
		// VPP. Someone may have deleted the table through the API since:
		// VPP then kept it for such paths, and removing the last one
		// crashes VPP 25.10 (SIGSEGV in fib_entry_path_remove). The API's
		// hold is taken again first (a no-op when the API has it).
		if err := p.tableAddDel(ctx, tableKey{s.vrf, s.ipv6()}); err != nil {
			return routeOp{}, fmt.Errorf("route %s: %w", s, err)
		}
	}
	sw := noIndex
	if s.iface != "" {
		if md != nil && md.SwIfIndex != noIndex {
			sw = md.SwIfIndex
		} else if imd, ok := p.ifaces(ctx, s.iface); ok {
			sw = imd.SwIfIndex
		} else {
			p.log.Warn("route to delete: its interface has no sw_if_index in the VPP connected now; nothing is sent", "route", s.String())
			return routeOp{}, nil
		}
	}
	return routeOp{s: s, sw: sw, req: routeRequest(false, s, sw)}, nil
}

// finishDelete completes a Delete given the result of its request: a path,
// table or interface already gone is success.
func (p *Plugin) finishDelete(ctx context.Context, op routeOp, err error) error {
	if op.sw != noIndex && vppconn.IsVPPError(err, govppapi.NO_MATCHING_INTERFACE) {
		err = p.removeOrphanPath(ctx, op.s, op.sw)
	}
	if err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_FIB, govppapi.INVALID_SW_IF_INDEX, govppapi.NO_SUCH_ENTRY) {
		return fmt.Errorf("ip_route_add_del (delete %s): %w", op.s, err)
	}
	return nil
}

// deleteRoute removes the route's path; a path, table or interface already
// gone is success.
func (p *Plugin) deleteRoute(ctx context.Context, _ string, r *vppl3.Route, md *RouteMetadata) error {
	op, err := p.prepareDelete(ctx, r, md)
	if err != nil || op.req == nil {
		return err
	}
	return p.finishDelete(ctx, op, p.routeAddDel(ctx, op.req))
}

// routeBatch is the route descriptor's Batch: each operation is prepared
// as its Create or Delete prepares it, the ip_route_add_del of all are
// sent pipelined in the batch's order (vppconn.Manager.Pipeline), and each
// is completed as its Create or Delete completes it, with its own reply.
func (p *Plugin) routeBatch(ctx context.Context, ops []api.BatchOp) {
	pipelineBatch(ctx, p, ops, func(op *api.BatchOp) (routeOp, vppconn.Call, error) {
		var route routeOp
		var err error
		switch op.Op {
		case api.OpCreate:
			r, _ := op.To.(*vppl3.Route)
			route, err = p.prepareCreate(ctx, r)
		case api.OpDelete:
			md, _ := op.Metadata.(*RouteMetadata)
			r, _ := op.From.(*vppl3.Route)
			route, err = p.prepareDelete(ctx, r, md)
		default:
			err = api.NonRetriable(fmt.Errorf("route %s: %s is not an operation of routes (no Update)", op.Key, op.Op))
		}
		if err != nil || route.req == nil {
			return route, vppconn.Call{}, err
		}
		return route, vppconn.Call{Request: route.req, Reply: &ip.IPRouteAddDelReply{}}, nil
	}, func(op *api.BatchOp, route routeOp, err error) (any, error) {
		if op.Op == api.OpCreate {
			return p.finishCreate(ctx, route, err)
		}
		return nil, p.finishDelete(ctx, route, err)
	})
}

// pipelineBatch runs a batch whose operations are one request each:
// prepare gives an operation's state and its call (a call without a
// Request: nothing to send, success; an error: failed without a request);
// the requests are sent pipelined in the batch's order (VPP carries them
// out in that order), each operation prepared as the pipeline comes to it
// (VPP works on the first while the next are prepared), and finish
// completes each operation from its reply's error.
func pipelineBatch[T any](ctx context.Context, p *Plugin, ops []api.BatchOp,
	prepare func(op *api.BatchOp) (T, vppconn.Call, error),
	finish func(op *api.BatchOp, state T, err error) (metadata any, _ error)) {
	states := make([]T, len(ops))
	calls := make([]vppconn.Call, len(ops))
	p.m.PipelinePrepared(ctx, AreaName, calls, func(k int) {
		op := &ops[k]
		state, call, err := prepare(op)
		switch {
		case err != nil:
			op.Fail(err)
		case call.Request == nil:
			op.Done(nil)
		default:
			states[k], calls[k] = state, call
		}
	}, func(k int) {
		// Each operation is completed as its reply comes, while VPP
		// works on the next requests; one not sent was when prepared.
		if calls[k].Request == nil {
			return
		}
		op := &ops[k]
		if md, err := finish(op, states[k], calls[k].Err); err != nil {
			op.Fail(err)
		} else {
			op.Done(md)
		}
	})
}

// removeOrphanPath removes the route's path through sw_if_index sw when VPP
// no longer has that interface (deleted by someone else): VPP keeps the
// paths through a deleted interface, and gives them to the next interface
// that gets its index, but refuses to name the index in ip_route_add_del
// (NO_MATCHING_INTERFACE). The entry's paths of the API source are read
// (ip_route_v2_dump of the table) and replaced by those other than the
// route's (ip_route_add_del without is_multipath), or deleted when none is
// left. Nothing to do when the entry shows no API path (it is gone, or
// behind a better source).
func (p *Plugin) removeOrphanPath(ctx context.Context, s routeSpec, sw uint32) error {
	var details []*ip.IPRouteV2Details
	err := p.call(ctx, func(ctx context.Context, conn govppapi.Connection) (err error) {
		details, err = vppconn.Dump[*ip.IPRouteV2Details](ctx, conn, &ip.IPRouteV2Dump{Table: ip.IPTable{TableID: s.vrf, IsIP6: s.ipv6()}})
		return err
	})
	if err != nil {
		return fmt.Errorf("ip_route_v2_dump (table %d, ipv6 %v): %w", s.vrf, s.ipv6(), err)
	}
	for _, d := range details {
		if dst, ok := fromVPPPrefix(d.Route.Prefix); !ok || dst != s.dst || d.Route.Src != fibSourceAPI {
			continue
		}
		others := slices.DeleteFunc(slices.Clone(d.Route.Paths), func(fp fib_types.FibPath) bool { return s.matches(fp, sw) })
		if len(others) == len(d.Route.Paths) {
			return nil
		}
		p.log.Warn("route to delete: its interface is gone from VPP, which keeps the path; the entry's other paths replace its paths", "route", s.String(), "sw_if_index", sw, "paths_left", len(others))
		return p.call(ctx, func(ctx context.Context, conn govppapi.Connection) error {
			_, err := ip.NewServiceClient(conn).IPRouteAddDel(ctx, &ip.IPRouteAddDel{
				IsAdd: len(others) > 0, IsMultipath: false,
				Route: ip.IPRoute{TableID: s.vrf, Prefix: toVPPPrefix(s.dst), NPaths: uint8(len(others)), Paths: others},
			})
			return err
		})
	}
	return nil
}

// fibSourceAPI is VPP's FIB source of the routes added with
// ip_route_add_del (FIB_SOURCE_API of fib_source_t, as ip_route_v2_details
// reports an entry's best source). VPP's own entries have other sources
// (special, interface, adjacency, default-route), the CLI's "ip route add"
// its own (CLI), control planes that register a source theirs.
const fibSourceAPI = 8

// retrieveRoutes reports the routes of the agent in every IP table of VPP
// (ip_table_dump, then ip_route_v2_dump of each table, all sources):
//
//   - an expected route (correlate) whose path is in its entry, whatever
//     the entry's source, under its key with VPP's weight and preference;
//   - every other path of an entry whose best source is the API's: the
//     agent adds its routes with ip_route_add_del, so such a path is a
//     route of the agent that the configuration no longer has (a resync
//     deletes it). It is reported under the key of the value it makes, its
//     interface named through the interface metadata (an interface with
//     none: the path is skipped).
//
// Entries of other sources (VPP's own, the CLI's, other control planes')
// are never reported beyond the expected paths found in them.
func (p *Plugin) retrieveRoutes(ctx context.Context, correlate []api.TypedKV[*vppl3.Route, *RouteMetadata]) ([]api.TypedKV[*vppl3.Route, *RouteMetadata], error) {
	type routeKV = api.TypedKV[*vppl3.Route, *RouteMetadata]
	// expected is a correlated value; those of one entry are chained
	// (next: the index of the next one, -1 for none), so that the usual
	// entry of one route costs no slice of its own.
	type expected struct {
		kv    routeKV // found: what is reported
		spec  routeSpec
		sw    uint32
		next  int32
		found bool
	}
	type entryKey struct {
		table uint32
		dst   netip.Prefix
	}
	pid := p.m.PID() // the process the indexes below are looked up for
	names := map[string]struct{}{}
	for _, c := range correlate {
		if c.Value != nil && c.Value.GetOutgoingInterface() != "" {
			names[c.Value.GetOutgoingInterface()] = struct{}{}
		}
	}
	index, err := p.interfaceIndex(ctx, names, true)
	if err != nil {
		return nil, err
	}
	exps := make([]expected, 0, len(correlate))
	first := make(map[entryKey]int32, len(correlate)) // entry -> its first expected
	last := map[entryKey]int32{}                      // entries of more than one expected -> the last
	for _, c := range correlate {
		if c.Value == nil {
			continue
		}
		s, err := parseRoute(c.Value)
		if err != nil {
			continue
		}
		sw := noIndex
		if s.iface != "" {
			var ok bool
			if sw, ok = index[s.iface]; !ok {
				continue // no interface, no route through it
			}
		}
		k, i := entryKey{s.vrf, s.dst}, int32(len(exps))
		exps = append(exps, expected{kv: routeKV{Key: c.Key, Value: c.Value, Metadata: c.Metadata, Origin: api.FromNB}, spec: s, sw: sw, next: -1})
		if f, ok := first[k]; !ok {
			first[k] = i
		} else {
			l, ok := last[k]
			if !ok {
				l = f
			}
			exps[l].next, last[k] = i, i
		}
	}
	dump, err := p.routeDump(ctx, pid)
	if err != nil {
		return nil, err
	}
	var unexpected []routeKV // candidates: checked against the expected found below
	for ti, t := range dump.tables {
		for _, d := range dump.routes[ti] {
			dst, ok := fromVPPPrefix(d.Route.Prefix)
			if !ok || dst.Addr().Is6() != t.ipv6 {
				continue
			}
			head, ok := first[entryKey{t.id, dst}]
			if !ok {
				head = -1
			}
			// The paths of expected values, kept for an entry of the API's
			// only (on the stack for the usual few paths).
			var expectedPath []bool
			var few [4]bool
			if d.Route.Src == fibSourceAPI {
				if n := len(d.Route.Paths); n <= len(few) {
					expectedPath = few[:n]
				} else {
					expectedPath = make([]bool, n)
				}
			}
			for k, fp := range d.Route.Paths {
				for i := head; i >= 0; i = exps[i].next {
					e := &exps[i]
					if e.found || !e.spec.matches(fp, e.sw) {
						continue
					}
					e.found = true
					if expectedPath != nil {
						expectedPath[k] = true
					}
					// The expected value itself when VPP has its weight
					// and preference (0 and 1 are the same weight): the
					// scheduler keeps one copy of a value in sync. A copy
					// with VPP's otherwise.
					if max(uint32(fp.Weight), 1) != e.spec.weight || uint32(fp.Preference) != e.spec.pref {
						v := proto.Clone(e.kv.Value).(*vppl3.Route)
						v.Weight, v.Preference = uint32(fp.Weight), uint32(fp.Preference)
						e.kv.Value = v
					}
					// The scheduler's metadata when it is what VPP has (so
					// that an in-sync route changes nothing), a new one
					// otherwise.
					if md := e.kv.Metadata; md == nil || *md != (RouteMetadata{SwIfIndex: e.sw, VPPPID: pid}) {
						e.kv.Metadata = &RouteMetadata{SwIfIndex: e.sw, VPPPID: pid}
					}
					break
				}
			}
			for k, fp := range d.Route.Paths {
				if expectedPath == nil || expectedPath[k] {
					continue
				}
				v, sw, why := unexpectedRoute(t.id, dst, fp, dump.nameOf(index))
				if v == nil {
					p.log.Debug("retrieve: an API route path that no route value makes is left alone", "vrf", t.id, "dst", dst.String(), "reason", why)
					continue
				}
				key, err := models.VPPRoute.Key(v)
				if err != nil {
					p.log.Debug("retrieve: an API route path that no route value makes is left alone", "vrf", t.id, "dst", dst.String(), "reason", err.Error())
					continue
				}
				unexpected = append(unexpected, routeKV{Key: key, Value: v, Metadata: &RouteMetadata{SwIfIndex: sw, VPPPID: pid}, Origin: api.FromNB})
			}
		}
	}
	out := make([]routeKV, 0, len(exps)+len(unexpected))
	for i := range exps {
		if exps[i].found {
			out = append(out, exps[i].kv)
		}
	}
	if len(unexpected) > 0 {
		reported := make(map[string]bool, len(out)+len(unexpected))
		for _, kv := range out {
			reported[kv.Key] = true
		}
		for _, kv := range unexpected {
			if reported[kv.Key] {
				p.log.Warn("retrieve: two paths make one route key; the first is reported", "key", kv.Key)
				continue
			}
			reported[kv.Key] = true
			out = append(out, kv)
		}
	}
	// In key order (correlate usually is already: then this only checks).
	cmpKey := func(a, b routeKV) int { return strings.Compare(a.Key, b.Key) }
	if !slices.IsSortedFunc(out, cmpKey) {
		slices.SortFunc(out, cmpKey)
	}
	return out, nil
}

// unexpectedRoute is the route value that adds the path fp to dst in table
// (and the sw_if_index of its interface, ~0 for none), or nil and why no
// value makes such a path: a path type, flag or protocol the model does not
// have, or an interface without a logical name (nameOf).
func unexpectedRoute(table uint32, dst netip.Prefix, fp fib_types.FibPath, nameOf map[uint32]string) (*vppl3.Route, uint32, string) {
	ipv6 := dst.Addr().Is6()
	wantProto := fib_types.FIB_API_PATH_NH_PROTO_IP4
	if ipv6 {
		wantProto = fib_types.FIB_API_PATH_NH_PROTO_IP6
	}
	switch {
	case fp.Proto != wantProto:
		return nil, 0, "next-hop protocol " + fp.Proto.String()
	case fp.Flags != 0:
		return nil, 0, "path flags " + fp.Flags.String()
	case fp.NLabels > 0:
		return nil, 0, "MPLS labels"
	}
	v := &vppl3.Route{
		VrfId: table, DstNetwork: dst.String(), Weight: uint32(fp.Weight), Preference: uint32(fp.Preference),
	}
	switch fp.Type {
	case fib_types.FIB_API_PATH_TYPE_DROP:
		v.Type = vppl3.Route_DROP
		return v, noIndex, ""
	case fib_types.FIB_API_PATH_TYPE_NORMAL:
	default:
		return nil, 0, "path type " + fp.Type.String()
	}
	if nh := pathNextHop(fp); nh.IsValid() {
		v.NextHopAddr = nh.String()
	}
	switch {
	case fp.SwIfIndex != noIndex:
		name, ok := nameOf[fp.SwIfIndex]
		if !ok {
			return nil, 0, fmt.Sprintf("sw_if_index %d has no logical name", fp.SwIfIndex)
		}
		v.OutgoingInterface = name
		return v, fp.SwIfIndex, ""
	case fp.TableID != table:
		v.Type, v.ViaVrfId = vppl3.Route_INTER_VRF, fp.TableID
	}
	return v, noIndex, ""
}

// routeDump is what the route Retrieve reads of VPP: its IP tables and the
// routes of each, read from the VPP of pid.
type routeDump struct {
	pid    uint32
	tables []vppTable
	routes [][]*ip.IPRouteV2Details // per table
	err    error
	done   chan struct{} // closed when the fields above are set
	names  map[uint32]string
}

// nameOf returns the interface names by sw_if_index of index, made on
// first use (only a path that no expected value has needs it).
func (d *routeDump) nameOf(index map[string]uint32) map[uint32]string {
	if d.names == nil {
		d.names = make(map[uint32]string, len(index))
		for name, sw := range index {
			d.names[sw] = name
		}
	}
	return d.names
}

// memoRouteDump is the refresh memo's key of the route dump Prefetch
// starts.
const memoRouteDump = "vpp/l3/route-dump"

// prefetchRoutes is the route descriptor's Prefetch: it starts the route
// dump of the refresh (readRoutes) in a goroutine, so that VPP sends the
// routes while the interfaces are read and turned into values; the
// Retrieve takes the dump (routeDump).
func (p *Plugin) prefetchRoutes(ctx context.Context) {
	d := &routeDump{done: make(chan struct{})}
	api.RefreshMemo(ctx).Store(memoRouteDump, d)
	go func() {
		defer close(d.done)
		p.readRoutes(ctx, d)
	}()
}

// routeDump returns the route dump of the refresh: the one Prefetch
// started, once it has ended, when it succeeded on the VPP of pid (the VPP
// the Retrieve looks the interfaces up in); otherwise one read now.
func (p *Plugin) routeDump(ctx context.Context, pid uint32) (*routeDump, error) {
	if v, ok := api.RefreshMemo(ctx).Load(memoRouteDump); ok {
		d := v.(*routeDump)
		select {
		case <-d.done:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		if d.err == nil && d.pid == pid {
			return d, nil
		}
		// Failed, or read from a VPP that has restarted since: read again.
	}
	d := &routeDump{}
	p.readRoutes(ctx, d)
	if d.err == nil && d.pid != pid {
		d.err = fmt.Errorf("VPP restarted while its routes were read (pid %d, then %d)", pid, d.pid)
	}
	return d, d.err
}

// readRoutes reads VPP's tables and their routes into d: d.pid is VPP's
// pid when the reads began, and d.err says when it changed before they
// ended.
func (p *Plugin) readRoutes(ctx context.Context, d *routeDump) {
	d.pid = p.m.PID()
	tables, err := p.dumpTables(ctx)
	if err != nil {
		d.err = err
		return
	}
	d.tables, d.routes = tables, make([][]*ip.IPRouteV2Details, len(tables))
	for i, t := range tables {
		err := p.call(ctx, func(ctx context.Context, conn govppapi.Connection) (err error) {
			d.routes[i], err = vppconn.Dump[*ip.IPRouteV2Details](ctx, conn, &ip.IPRouteV2Dump{Table: ip.IPTable{TableID: t.id, IsIP6: t.ipv6}})
			return err
		})
		if err != nil {
			d.err = fmt.Errorf("ip_route_v2_dump (table %d, ipv6 %v): %w", t.id, t.ipv6, err)
			return
		}
	}
	if now := p.m.PID(); now != d.pid {
		d.err = fmt.Errorf("VPP restarted while its routes were read (pid %d, then %d)", d.pid, now)
	}
}

// vppTable is one IP table as ip_table_dump lists it.
type vppTable struct {
	tableKey
	name string
}

// dumpTables lists VPP's IP tables (ip_table_dump) with their names, IPv4
// before IPv6, each once, by id; the tables VPP keeps for itself (id ~0,
// IPv6 link-local) are left out.
func (p *Plugin) dumpTables(ctx context.Context) ([]vppTable, error) {
	var details []*ip.IPTableDetails
	err := p.call(ctx, func(ctx context.Context, conn govppapi.Connection) (err error) {
		details, err = vppconn.Dump[*ip.IPTableDetails](ctx, conn, &ip.IPTableDump{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ip_table_dump: %w", err)
	}
	seen := map[tableKey]bool{}
	var out []vppTable
	for _, d := range details {
		k := tableKey{d.Table.TableID, d.Table.IsIP6}
		if k.id == noIndex || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, vppTable{tableKey: k, name: strings.TrimRight(d.Table.Name, "\x00")})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ipv6 != out[j].ipv6 {
			return !out[i].ipv6
		}
		return out[i].id < out[j].id
	})
	return out, nil
}

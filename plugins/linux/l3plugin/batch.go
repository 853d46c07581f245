package l3plugin

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
)

// Create, Update and Delete of both descriptors are batches of one: every
// operation, alone or in a Batch, goes through the same three steps:
// prepare (parse, find the link, build the netlink request, or settle the
// operation without one), execute (the requests of all the batch's
// operations on one socket per namespace, pipelined, in the batch's order:
// nlbatch.Pool.Run), finish (map each request's own errno as the contract
// says).

// batchCall is one operation of a batch of routes or ARP entries.
type batchCall struct {
	op *api.BatchOp
	// req is the operation's netlink request; nil when prepare settled it.
	req *nlbatch.Request
	// at is where the object goes (Create, Update) or is (Delete).
	at Placement
	// route or arp: the parsed value (To for Create/Update, From for Delete).
	route routeSpec
	arp   arpSpec
	// md is the metadata of a successful Create or Update.
	md *Placement
}

// Close closes the netlink sockets the plugin keeps (one per namespace)
// for its requests. Call it after the scheduler stopped.
func (p *Plugin) Close() { p.pool.Close() }

// single runs one operation as a batch of one and returns its result.
func single(ctx context.Context, batch func(context.Context, []api.BatchOp), op api.BatchOp) (*Placement, error) {
	ops := []api.BatchOp{op}
	batch(ctx, ops)
	md, err, _ := ops[0].Result()
	pl, _ := md.(*Placement)
	return pl, err
}

// placementOf is the metadata of a BatchOp (nil when it has none).
func placementOf(op *api.BatchOp) *Placement {
	pl, _ := op.Metadata.(*Placement)
	return pl
}

// valueOf returns the value of an operation as the descriptor's type.
func valueOf[V proto.Message](descriptor string, m proto.Message) (V, error) {
	v, ok := m.(V)
	if !ok {
		var zero V
		return zero, api.NonRetriable(fmt.Errorf("descriptor %s: value of type %T, expected %T", descriptor, m, zero))
	}
	return v, nil
}

// routeBatch is the Batch of the route descriptor (and, one operation at a
// time, its Create, Update and Delete). The requests are written into one
// buffer, their calls and requests kept in slices of the batch's length:
// nothing is allocated per route but its metadata.
func (p *Plugin) routeBatch(ctx context.Context, ops []api.BatchOp) {
	all := make([]batchCall, len(ops))
	msgs := make([]nl.NetlinkRequest, len(ops))
	held := make([]nlbatch.Request, len(ops))
	buf := make([]byte, 0, len(ops)*nlbatch.MaxRouteSize)
	calls := make([]*batchCall, 0, len(ops))
	reqs := make([]*nlbatch.Request, 0, len(ops))
	for i := range ops {
		c := &all[i]
		c.op = &ops[i]
		kind, ok := p.prepareRoute(ctx, c)
		if !ok {
			continue
		}
		r := c.route.kernel(c.at.LinkIndex)
		if kind == nlbatch.RouteOpDel {
			r.Scope = uint8(netlink.SCOPE_NOWHERE) // any scope, as `ip route del`
		}
		var err error
		if buf, err = nlbatch.AppendRoute(buf, kind, &r, &msgs[i]); err != nil {
			c.op.Fail(api.NonRetriable(fmt.Errorf("route %s: %w", c.route, err)))
			continue
		}
		held[i] = nlbatch.Request{NS: c.at.Namespace, Msg: &msgs[i]}
		c.req = &held[i]
		reqs = append(reqs, c.req)
		calls = append(calls, c)
	}
	p.pool.Run(reqs)
	var exists []*batchCall
	for _, c := range calls {
		err := c.req.Err
		switch c.op.Op {
		case api.OpCreate:
			if errors.Is(err, syscall.EEXIST) {
				exists = append(exists, c)
				continue
			}
			if err != nil {
				c.op.Fail(fmt.Errorf("adding route %s (%s, link %d): %w", c.route, c.at.Namespace, c.at.LinkIndex, err))
				continue
			}
			c.op.Done(c.md)
		case api.OpUpdate:
			if err != nil {
				c.op.Fail(fmt.Errorf("replacing route %s (%s, link %d): %w", c.route, c.at.Namespace, c.at.LinkIndex, err))
				continue
			}
			c.op.Done(c.md)
		case api.OpDelete:
			if err != nil && !isGone(err) {
				c.op.Fail(fmt.Errorf("deleting route %s (%s, link %d): %w", c.route, c.at.Namespace, c.at.LinkIndex, err))
				continue
			}
			c.op.Done(nil)
		}
	}
	p.routesExist(exists)
}

// prepareRoute works out one route operation: the parsed route, where it
// goes or is, its metadata; it returns the request's kind, or false when
// it settled the operation without one.
func (p *Plugin) prepareRoute(ctx context.Context, c *batchCall) (nlbatch.RouteOp, bool) {
	op := c.op
	if op.Op == api.OpDelete {
		r, err := valueOf[*linuxl3.Route](RouteDescriptorName, op.From)
		if err != nil {
			op.Fail(err)
			return 0, false
		}
		s, err := parseRoute(r)
		if err != nil {
			op.Done(nil) // never created
			return 0, false
		}
		pl, ok := p.placement(ctx, placementOf(op), s.iface)
		if !ok {
			p.log.Warn("route to delete: its link is not known any more; it went with it", "route", s.String())
			op.Done(nil)
			return 0, false
		}
		c.route, c.at = s, pl
		return nlbatch.RouteOpDel, true
	}
	r, err := valueOf[*linuxl3.Route](RouteDescriptorName, op.To)
	if err != nil {
		op.Fail(err)
		return 0, false
	}
	s, err := parseRoute(r)
	if err != nil {
		op.Fail(api.NonRetriable(invalid(err)))
		return 0, false
	}
	md, ok := p.ifaces(ctx, s.iface)
	if !ok || md.Index <= 0 {
		// The dependency on the interface should have prevented this; the
		// interface plugin may publish its metadata a moment later.
		op.Fail(fmt.Errorf("route %s: interface %s: its link is not known (no metadata of descriptor %s)", s, s.iface, ifplugin.InterfaceDescriptorName))
		return 0, false
	}
	c.route = s
	c.at = Placement{Namespace: md.Namespace, LinkIndex: md.Index}
	c.md = &Placement{Namespace: md.Namespace, LinkIndex: md.Index, Applied: s.applied(), target: s.dst}
	if op.Op == api.OpUpdate {
		return nlbatch.RouteOpReplace, true
	}
	return nlbatch.RouteOpAdd, true
}

// routesExist explains the EEXIST of route adds: one dump of the table per
// namespace and IP family for all of them, then, for a route of ours with
// other attributes on the same link, a replace (pipelined too).
func (p *Plugin) routesExist(calls []*batchCall) {
	if len(calls) == 0 {
		return
	}
	type table struct {
		ref    nsplugin.Ref
		family int
	}
	dumps := map[table][]netlink.Route{}
	dumpErrs := map[table]error{}
	var replaces []*batchCall
	var reqs []*nlbatch.Request
	for _, c := range calls {
		family := netlink.FAMILY_V4
		if c.route.v6() {
			family = netlink.FAMILY_V6
		}
		t := table{c.at.Namespace, family}
		routes, done := dumps[t]
		err := dumpErrs[t]
		if !done && err == nil {
			var h *netlink.Handle
			if h, err = p.handle(t.ref); err == nil {
				routes, err = dump("routes", func() ([]netlink.Route, error) { return h.RouteListFiltered(family, &netlink.Route{}, 0) })
			}
			if err != nil {
				err = fmt.Errorf("route exists; %w", err)
				dumpErrs[t] = err
			} else {
				dumps[t] = routes
			}
		}
		replace := false
		if err == nil {
			replace, err = p.routeExists(routes, c.route, c.at.LinkIndex)
		}
		switch {
		case err != nil:
			c.op.Fail(fmt.Errorf("adding route %s (%s, link %d): %w", c.route, c.at.Namespace, c.at.LinkIndex, err))
		case !replace:
			c.op.Done(c.md)
		default:
			r := c.route.kernel(c.at.LinkIndex)
			msg := &nl.NetlinkRequest{}
			if _, err := nlbatch.AppendRoute(nil, nlbatch.RouteOpReplace, &r, msg); err != nil {
				c.op.Fail(api.NonRetriable(fmt.Errorf("route %s: %w", c.route, err)))
				continue
			}
			c.req = &nlbatch.Request{NS: c.at.Namespace, Msg: msg}
			replaces = append(replaces, c)
			reqs = append(reqs, c.req)
		}
	}
	p.pool.Run(reqs)
	for _, c := range replaces {
		if err := c.req.Err; err != nil {
			c.op.Fail(fmt.Errorf("adding route %s (%s, link %d): %w", c.route, c.at.Namespace, c.at.LinkIndex, err))
			continue
		}
		c.op.Done(c.md)
	}
}

// arpBatch is the Batch of the ARP descriptor (and, one operation at a
// time, its Create, Update and Delete).
func (p *Plugin) arpBatch(ctx context.Context, ops []api.BatchOp) {
	calls := make([]*batchCall, 0, len(ops))
	var reqs []*nlbatch.Request
	for i := range ops {
		c := &batchCall{op: &ops[i]}
		p.prepareARP(ctx, c)
		if c.req != nil {
			reqs = append(reqs, c.req)
			calls = append(calls, c)
		}
	}
	p.pool.Run(reqs)
	for _, c := range calls {
		err := c.req.Err
		if c.op.Op == api.OpDelete {
			if err != nil && !isGone(err) {
				c.op.Fail(fmt.Errorf("deleting ARP entry %s (%s, link %d): %w", c.arp, c.at.Namespace, c.at.LinkIndex, err))
				continue
			}
			c.op.Done(nil)
			continue
		}
		if err != nil {
			c.op.Fail(fmt.Errorf("setting ARP entry %s (%s, link %d): %w", c.arp, c.at.Namespace, c.at.LinkIndex, err))
			continue
		}
		c.op.Done(c.md)
	}
}

// prepareARP builds the request of one ARP operation (NeighSet, create or
// replace, for Create and Update; NeighDel), or settles it.
func (p *Plugin) prepareARP(ctx context.Context, c *batchCall) {
	op := c.op
	if op.Op == api.OpDelete {
		a, err := valueOf[*linuxl3.ARPEntry](ARPDescriptorName, op.From)
		if err != nil {
			op.Fail(err)
			return
		}
		s, err := parseARP(a)
		if err != nil {
			op.Done(nil) // never created
			return
		}
		pl, ok := p.placement(ctx, placementOf(op), s.iface)
		if !ok {
			p.log.Warn("ARP entry to delete: its link is not known any more; it went with it", "arp", s.String())
			op.Done(nil)
			return
		}
		n := s.neigh(pl.LinkIndex)
		n.State, n.HardwareAddr = 0, nil
		msg, err := nlbatch.NeighDel(n)
		if err != nil {
			op.Fail(api.NonRetriable(fmt.Errorf("deleting ARP entry %s: %w", s, err)))
			return
		}
		c.arp, c.at, c.req = s, pl, &nlbatch.Request{NS: pl.Namespace, Msg: msg}
		return
	}
	a, err := valueOf[*linuxl3.ARPEntry](ARPDescriptorName, op.To)
	if err != nil {
		op.Fail(err)
		return
	}
	s, err := parseARP(a)
	if err != nil {
		op.Fail(api.NonRetriable(invalid(err)))
		return
	}
	md, ok := p.ifaces(ctx, s.iface)
	if !ok || md.Index <= 0 {
		op.Fail(fmt.Errorf("ARP entry %s: interface %s: its link is not known (no metadata of descriptor %s)", s, s.iface, ifplugin.InterfaceDescriptorName))
		return
	}
	msg, err := nlbatch.NeighSet(s.neigh(md.Index))
	if err != nil {
		op.Fail(api.NonRetriable(fmt.Errorf("ARP entry %s: %w", s, err)))
		return
	}
	c.arp = s
	c.at = Placement{Namespace: md.Namespace, LinkIndex: md.Index}
	c.md = &Placement{Namespace: md.Namespace, LinkIndex: md.Index, Applied: s.applied(), target: addrTarget(s.ip)}
	c.req = &nlbatch.Request{NS: md.Namespace, Msg: msg}
}

package vppcalls

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// Pipe collects requests of the interfaces' area (AreaName) and sends them
// together, in the order queued, pipelined on one stream
// (vppconn.Manager.Pipeline): many in flight instead of one request and its
// reply at a time. Each queuing method returns the request's result, which
// Send fills in; the results mean what those of the Handler method of the
// same name mean (same errors, same successes: a missing interface on
// delete...), except that a request the pipeline could not complete fails
// with a *vppconn.PipelineError. Requests of one Pipe that depend on each
// other's replies (an index) go in two Pipes, one after the other; requests
// on one interface may share a Pipe: VPP carries them out in order.
//
// A Pipe is used by one goroutine, once.
type Pipe struct {
	h      *handler
	calls  []vppconn.Call
	finish []func(ctx context.Context)
}

// Result is the result of one queued request, set by Pipe.Send.
type Result[T any] struct {
	Value T
	Err   error
}

// NewPipe returns an empty Pipe.
func (h *handler) NewPipe() *Pipe { return &Pipe{h: h} }

// Len is the number of requests queued.
func (p *Pipe) Len() int { return len(p.calls) }

// queue adds a request; done turns its call (reply or details, error
// prefixed with the message name) into the result.
func (p *Pipe) queue(req, reply govppapi.Message, done func(ctx context.Context, c *vppconn.Call, err error)) {
	p.queueCall(vppconn.Call{Request: req, Reply: reply}, done)
}

// queueCall is queue for a call made by the caller (a dump with More).
func (p *Pipe) queueCall(call vppconn.Call, done func(ctx context.Context, c *vppconn.Call, err error)) {
	req := call.Request
	k := len(p.calls)
	p.calls = append(p.calls, call)
	p.finish = append(p.finish, func(ctx context.Context) {
		c := &p.calls[k]
		var err error
		if c.Err != nil {
			err = fmt.Errorf("%s: %w", req.GetMessageName(), c.Err)
		}
		done(ctx, c, err)
	})
}

// Send sends the queued requests and sets their results, in order. A
// result that needs more than its reply (AddAddress: whether VPP's refusal
// is for an address the interface has) makes its further calls then, one
// at a time. Nothing is sent once ctx has ended (the results say so).
func (p *Pipe) Send(ctx context.Context) {
	p.h.m.Pipeline(ctx, AreaName, p.calls)
	for _, f := range p.finish {
		f(ctx)
	}
}

// CreateLoopback queues create_loopback (Handler.CreateLoopback).
func (p *Pipe) CreateLoopback(hw net.HardwareAddr) *Result[uint32] {
	r := &Result[uint32]{}
	p.queue(&interfaces.CreateLoopback{MacAddress: mac(hw)}, &interfaces.CreateLoopbackReply{}, func(_ context.Context, c *vppconn.Call, err error) {
		r.Err = err
		if err == nil {
			r.Value = uint32(c.Reply.(*interfaces.CreateLoopbackReply).SwIfIndex)
		}
	})
	return r
}

// DeleteLoopback queues delete_loopback (Handler.DeleteLoopback).
func (p *Pipe) DeleteLoopback(idx uint32) *Result[struct{}] {
	r := &Result[struct{}]{}
	p.queue(&interfaces.DeleteLoopback{SwIfIndex: ifIndex(idx)}, &interfaces.DeleteLoopbackReply{}, func(_ context.Context, _ *vppconn.Call, err error) {
		if !isVPPError(err, govppapi.INVALID_SW_IF_INDEX) {
			r.Err = err
		}
	})
	return r
}

// SetTag queues sw_interface_tag_add_del (Handler.SetTag).
func (p *Pipe) SetTag(idx uint32, tag string) *Result[struct{}] {
	return p.plain(tagRequest(idx, tag), &interfaces.SwInterfaceTagAddDelReply{})
}

// SetMTU queues sw_interface_set_mtu (Handler.SetMTU).
func (p *Pipe) SetMTU(idx, mtu uint32) *Result[struct{}] {
	return p.plain(mtuRequest(idx, mtu), &interfaces.SwInterfaceSetMtuReply{})
}

// SetAdminUp queues sw_interface_set_flags (Handler.SetAdminUp).
func (p *Pipe) SetAdminUp(idx uint32, up bool) *Result[struct{}] {
	return p.plain(adminRequest(idx, up), &interfaces.SwInterfaceSetFlagsReply{})
}

func (p *Pipe) plain(req, reply govppapi.Message) *Result[struct{}] {
	r := &Result[struct{}]{}
	p.queue(req, reply, func(_ context.Context, _ *vppconn.Call, err error) { r.Err = err })
	return r
}

// AddAddress queues sw_interface_add_del_address (Handler.AddAddress: an
// address the interface already has is success, which VPP's refusal alone
// does not tell: the interface's addresses are dumped then, after the
// pipeline).
func (p *Pipe) AddAddress(idx uint32, addr netip.Prefix) *Result[struct{}] {
	r := &Result[struct{}]{}
	p.queue(addressRequest(idx, addr, true), &interfaces.SwInterfaceAddDelAddressReply{}, func(ctx context.Context, _ *vppconn.Call, err error) {
		r.Err = p.h.addressAdded(ctx, idx, addr, err)
	})
	return r
}

// DelAddress queues sw_interface_add_del_address (Handler.DelAddress).
func (p *Pipe) DelAddress(idx uint32, addr netip.Prefix) *Result[struct{}] {
	r := &Result[struct{}]{}
	p.queue(addressRequest(idx, addr, false), &interfaces.SwInterfaceAddDelAddressReply{}, func(_ context.Context, _ *vppconn.Call, err error) {
		r.Err = addressDeleted(err)
	})
	return r
}

// GetInterface queues sw_interface_dump of one index
// (Handler.GetInterface: nil when VPP has no interface at idx).
func (p *Pipe) GetInterface(idx uint32) *Result[*Interface] {
	r := &Result[*Interface]{}
	p.queue(&interfaces.SwInterfaceDump{SwIfIndex: ifIndex(idx)}, nil, func(_ context.Context, c *vppconn.Call, err error) {
		if r.Err = err; err != nil {
			return
		}
		for _, d := range c.Details {
			if d, ok := d.(*interfaces.SwInterfaceDetails); ok && uint32(d.SwIfIndex) == idx {
				r.Value = basic(d)
				return
			}
		}
	})
	return r
}

// ListInterfaces queues sw_interface_dump of every interface
// (Handler.ListInterfaces).
func (p *Pipe) ListInterfaces() *Result[[]*Interface] {
	r := &Result[[]*Interface]{}
	p.queue(&interfaces.SwInterfaceDump{SwIfIndex: ifIndex(NoIndex)}, nil, func(_ context.Context, c *vppconn.Call, err error) {
		if r.Err = err; err != nil {
			return
		}
		ds := make([]*interfaces.SwInterfaceDetails, 0, len(c.Details))
		for _, d := range c.Details {
			if d, ok := d.(*interfaces.SwInterfaceDetails); ok {
				ds = append(ds, d)
			}
		}
		r.Value = listed(ds)
	})
	return r
}

// DumpAddresses queues the two ip_address_dump (IPv4, IPv6) of an
// interface (Handler.DumpAddresses).
func (p *Pipe) DumpAddresses(idx uint32) *Result[[]netip.Prefix] {
	r := &Result[[]netip.Prefix]{}
	for _, ipv6 := range []bool{false, true} {
		p.queue(&ip.IPAddressDump{SwIfIndex: ifIndex(idx), IsIPv6: ipv6}, nil, func(_ context.Context, c *vppconn.Call, err error) {
			if r.Err != nil {
				return
			}
			if err != nil {
				r.Value, r.Err = nil, err
				return
			}
			for _, d := range c.Details {
				if d, ok := d.(*ip.IPAddressDetails); ok {
					if a, ok := fromAddressWithPrefix(d.Prefix); ok {
						r.Value = append(r.Value, a)
					}
				}
			}
		})
	}
	return r
}

// addressDumpsPerCall is how many ip_address_dump requests of
// DumpAddressesOf share one control ping: as many as half the pipeline's
// window, so that the window still keeps a second call in flight.
const addressDumpsPerCall = vppconn.PipelineWindow / 2

// DumpAddressesOf queues the two ip_address_dump (IPv4, IPv6) of every
// interface of idxs, as DumpAddresses does for one, with one control ping
// per addressDumpsPerCall requests instead of one per request
// (vppconn.Call.More): the details carry their interface and family, which
// tell them apart. The results are those of idxs, in order; an index given
// twice has one result, the first (the second stays empty).
func (p *Pipe) DumpAddressesOf(idxs []uint32) []*Result[[]netip.Prefix] {
	results := make([]*Result[[]netip.Prefix], len(idxs))
	of := make(map[uint32]*Result[[]netip.Prefix], len(idxs))
	var reqs []govppapi.Message
	for k, idx := range idxs {
		results[k] = &Result[[]netip.Prefix]{}
		if _, twice := of[idx]; twice {
			continue
		}
		of[idx] = results[k]
		reqs = append(reqs, &ip.IPAddressDump{SwIfIndex: ifIndex(idx)}, &ip.IPAddressDump{SwIfIndex: ifIndex(idx), IsIPv6: true})
	}
	for from := 0; from < len(reqs); from += addressDumpsPerCall {
		chunk := reqs[from:min(from+addressDumpsPerCall, len(reqs))]
		p.queueCall(vppconn.Call{Request: chunk[0], More: chunk[1:]}, func(_ context.Context, c *vppconn.Call, err error) {
			if err != nil {
				for _, req := range chunk {
					r := of[uint32(req.(*ip.IPAddressDump).SwIfIndex)]
					r.Value, r.Err = nil, err
				}
				return
			}
			for _, d := range c.Details {
				d, ok := d.(*ip.IPAddressDetails)
				if !ok {
					continue
				}
				if r := of[uint32(d.SwIfIndex)]; r != nil {
					if a, ok := fromAddressWithPrefix(d.Prefix); ok {
						r.Value = append(r.Value, a)
					}
				}
			}
		})
	}
	return results
}

// GetTable queues sw_interface_get_table: the interface's VRF for IPv4 or
// IPv6.
func (p *Pipe) GetTable(idx uint32, ipv6 bool) *Result[uint32] {
	r := &Result[uint32]{}
	p.queue(&interfaces.SwInterfaceGetTable{SwIfIndex: ifIndex(idx), IsIPv6: ipv6}, &interfaces.SwInterfaceGetTableReply{}, func(_ context.Context, c *vppconn.Call, err error) {
		r.Err = err
		if err == nil {
			r.Value = c.Reply.(*interfaces.SwInterfaceGetTableReply).VrfID
		}
	})
	return r
}

// ---- requests and results shared with the Handler's methods

func tagRequest(idx uint32, tag string) *interfaces.SwInterfaceTagAddDel {
	return &interfaces.SwInterfaceTagAddDel{IsAdd: tag != "", SwIfIndex: ifIndex(idx), Tag: tag}
}

func mtuRequest(idx, mtu uint32) *interfaces.SwInterfaceSetMtu {
	return &interfaces.SwInterfaceSetMtu{SwIfIndex: ifIndex(idx), Mtu: []uint32{mtu, 0, 0, 0}}
}

func adminRequest(idx uint32, up bool) *interfaces.SwInterfaceSetFlags {
	var flags interface_types.IfStatusFlags
	if up {
		flags = interface_types.IF_STATUS_API_FLAG_ADMIN_UP
	}
	return &interfaces.SwInterfaceSetFlags{SwIfIndex: ifIndex(idx), Flags: flags}
}

func addressRequest(idx uint32, addr netip.Prefix, isAdd bool) *interfaces.SwInterfaceAddDelAddress {
	return &interfaces.SwInterfaceAddDelAddress{SwIfIndex: ifIndex(idx), IsAdd: isAdd, Prefix: toAddressWithPrefix(addr)}
}

// addressAdded is the result of adding addr to idx, given VPP's answer.
// VPP 25.10 gives the same code to an address the interface already has
// and to one that conflicts with another address (IPv4: ADDRESS_IN_USE,
// IPv6: DUPLICATE_IF_ADDRESS, whatever the interface): only the
// interface's addresses tell which.
func (h *handler) addressAdded(ctx context.Context, idx uint32, addr netip.Prefix, err error) error {
	if isVPPError(err, govppapi.ADDRESS_IN_USE, govppapi.DUPLICATE_IF_ADDRESS) {
		have, derr := h.DumpAddresses(ctx, idx)
		if derr == nil && containsPrefix(have, addr) {
			return nil
		}
	}
	return err
}

// addressDeleted is the result of removing an address: a missing address
// or interface is success.
func addressDeleted(err error) error {
	if isVPPError(err, govppapi.ADDRESS_NOT_FOUND_FOR_INTERFACE, govppapi.INVALID_SW_IF_INDEX, govppapi.NO_SUCH_ENTRY) {
		return nil
	}
	return err
}

func containsPrefix(ps []netip.Prefix, p netip.Prefix) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

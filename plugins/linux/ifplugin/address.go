package ifplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// The address descriptor adds and removes one address of an interface (the
// derived values AddressKey(iface, cidr)). Its value carries what it needs:
// the interface's logical name, kernel name and namespace, and the address.
//
// Contract: Create is idempotent (an address already there, EEXIST, is
// success), Delete of an address or a link that is gone is success. Update
// follows a rename of the link (the only change an address value can have
// under one key): the address is made sure of on the link's new name, not
// removed and added again, which would flush what depends on it in the
// kernel (removing the last IPv4 address of a link flushes all its IPv4
// routes and ARP entries). Failures are retriable: the link may be renamed
// or moved by its interface in the same transaction.
//
// Two link settings keep the addresses as their values say (both per link,
// in the link's namespace, left set when the value goes):
//
//   - net.ipv6.conf.<link>.keep_addr_on_down = 1, set before the first IPv6
//     address is added (with disable_ipv6 = 0): without it the kernel
//     removes every IPv6 address of a link that goes down, so disabling and
//     enabling the interface would lose them while their values still say
//     CONFIGURED.
//   - net.ipv4.conf.<link>.promote_secondaries = 1, set before an IPv4
//     address is removed: without it the kernel removes the secondary
//     addresses of a subnet with its primary, the agent's other addresses
//     as well as an operator's on an adopted link.
//
// Create, Update and Delete are batches of one (addressBatch): the
// requests of a batch go pipelined, one socket per namespace
// (internal/nlbatch), each link looked up and its settings made once per
// batch.
func (p *Plugin) addressDescriptor() *api.KVDescriptor {
	d := &api.TypedDescriptor[*linuxif.Interface, any]{
		Name: AddressDescriptorName,
		KeySelector: func(key string) bool {
			_, _, ok := ParseAddressKey(key)
			return ok
		},
		Create: func(ctx context.Context, key string, v *linuxif.Interface) (any, error) {
			return nil, p.singleAddress(ctx, api.BatchOp{Op: api.OpCreate, Key: key, To: v})
		},
		Update: func(ctx context.Context, key string, old, v *linuxif.Interface, _ any) (any, error) {
			return nil, p.singleAddress(ctx, api.BatchOp{Op: api.OpUpdate, Key: key, From: old, To: v})
		},
		Delete: func(ctx context.Context, key string, v *linuxif.Interface, _ any) error {
			return p.singleAddress(ctx, api.BatchOp{Op: api.OpDelete, Key: key, From: v})
		},
	}
	kv := d.KVDescriptor()
	kv.Batch = p.addressBatch
	return kv
}

func (p *Plugin) singleAddress(ctx context.Context, op api.BatchOp) error {
	ops := []api.BatchOp{op}
	p.addressBatch(ctx, ops)
	_, err, _ := ops[0].Result()
	return err
}

func addrOf(v *linuxif.Interface) (*netlink.Addr, error) {
	if len(v.GetIpAddresses()) != 1 {
		return nil, api.NonRetriable(fmt.Errorf("address value of %s carries %d addresses", v.GetName(), len(v.GetIpAddresses())))
	}
	a, err := netlink.ParseAddr(v.GetIpAddresses()[0])
	if err != nil {
		return nil, api.NonRetriable(fmt.Errorf("address %q of %s: %w", v.GetIpAddresses()[0], v.GetName(), err))
	}
	return a, nil
}

// addrLink is a link the addresses of a batch are on, looked up once.
type addrLink struct {
	ref  nsplugin.Ref
	host string
}

type addrLinkState struct {
	index int
	// nsErr: the namespace's handle failed; linkErr: the lookup by name.
	nsErr, linkErr error
	// settings made (ipv6Settings for adds, ipv4DelSettings for
	// deletes), and their error
	made map[*[]linkSysctl]error
}

// addressBatch adds (Create, Update: the address made sure of on the
// link's current name) and removes addresses: per operation the link by
// name and the link settings (once per link and batch), then the requests
// of all the operations pipelined, each with its own result.
func (p *Plugin) addressBatch(_ context.Context, ops []api.BatchOp) {
	links := map[addrLink]*addrLinkState{}
	lookup := func(ref nsplugin.Ref, host string) *addrLinkState {
		k := addrLink{ref, host}
		if st, ok := links[k]; ok {
			return st
		}
		st := &addrLinkState{made: map[*[]linkSysctl]error{}}
		links[k] = st
		h, err := p.ns.Handle(ref, false)
		if err != nil {
			st.nsErr = err
			return st
		}
		link, err := h.LinkByName(host)
		if err != nil {
			st.linkErr = err
			return st
		}
		st.index = link.Attrs().Index
		return st
	}
	settings := func(st *addrLinkState, ref nsplugin.Ref, host string, which *[]linkSysctl) error {
		if err, done := st.made[which]; done {
			return err
		}
		err := p.linkSysctls(ref, host, *which)
		st.made[which] = err
		return err
	}
	type call struct {
		op   *api.BatchOp
		v    *linuxif.Interface
		addr *netlink.Addr
		req  *nlbatch.Request
	}
	var calls []call
	var reqs []*nlbatch.Request
	for i := range ops {
		op := &ops[i]
		value := op.To
		if op.Op == api.OpDelete {
			value = op.From
		}
		v, ok := value.(*linuxif.Interface)
		if !ok {
			op.Fail(api.NonRetriable(fmt.Errorf("descriptor %s: value of type %T, expected %T", AddressDescriptorName, value, v)))
			continue
		}
		a, err := addrOf(v)
		if err != nil {
			op.Fail(err)
			continue
		}
		ref, host := nsplugin.RefOf(v.GetNamespace()), v.GetHostIfName()
		st := lookup(ref, host)
		var msg *nl.NetlinkRequest
		if op.Op == api.OpDelete {
			if errors.Is(st.nsErr, os.ErrNotExist) || isNotFound(st.linkErr) {
				op.Done(nil) // the namespace or the link is gone, and the address with it
				continue
			}
			if err := errors.Join(st.nsErr, st.linkErr); err != nil {
				op.Fail(err)
				continue
			}
			if a.IP.To4() != nil {
				if err := settings(st, ref, host, &ipv4DelSettings); err != nil {
					op.Fail(err)
					continue
				}
			}
			msg, err = nlbatch.AddrDel(st.index, a)
		} else {
			if st.nsErr != nil {
				op.Fail(st.nsErr)
				continue
			}
			if st.linkErr != nil {
				op.Fail(fmt.Errorf("address %s of %s: link %s: %w", v.GetIpAddresses()[0], v.GetName(), host, st.linkErr))
				continue
			}
			if a.IP.To4() == nil {
				if err := settings(st, ref, host, &ipv6Settings); err != nil {
					op.Fail(err)
					continue
				}
			}
			msg, err = nlbatch.AddrAdd(st.index, a)
		}
		if err != nil {
			op.Fail(api.NonRetriable(fmt.Errorf("address %s of %s: %w", a.IPNet, v.GetName(), err)))
			continue
		}
		c := call{op: op, v: v, addr: a, req: &nlbatch.Request{NS: ref, Msg: msg}}
		calls = append(calls, c)
		reqs = append(reqs, c.req)
	}
	p.pool.Run(reqs)
	for _, c := range calls {
		err := c.req.Err
		if c.op.Op == api.OpDelete {
			// ENODEV: the link went meanwhile (deleted, or with the
			// namespace it was left in when that was deleted), and its
			// addresses with it.
			if err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ESRCH) && !errors.Is(err, syscall.ENODEV) {
				c.op.Fail(fmt.Errorf("removing %s from %s: %w", c.addr.IPNet, c.v.GetHostIfName(), err))
				continue
			}
			c.op.Done(nil)
			continue
		}
		if err != nil && !errors.Is(err, syscall.EEXIST) {
			c.op.Fail(fmt.Errorf("adding %s to %s: %w", c.addr.IPNet, c.v.GetHostIfName(), err))
			continue
		}
		c.op.Done(nil)
	}
}

// linkSysctl is one per-link setting under /proc/sys/net: path/<link>/name.
type linkSysctl struct{ dir, name, value string }

// ipv6Settings are set before an IPv6 address is added: IPv6 on (some
// distributions disable it on new links), and the addresses kept when the
// link goes down.
var ipv6Settings = []linkSysctl{
	{"ipv6/conf", "disable_ipv6", "0"},
	{"ipv6/conf", "keep_addr_on_down", "1"},
}

// ipv4DelSettings are set before an IPv4 address is removed: the other
// addresses of its subnet stay.
var ipv4DelSettings = []linkSysctl{{"ipv4/conf", "promote_secondaries", "1"}}

// linkSysctls sets per-link sysctls of link host in namespace ref (one
// namespace switch for all; a setting already right is not written). A
// setting the kernel does not have (IPv6 not built in) is skipped: the
// netlink request that follows says what is missing.
func (p *Plugin) linkSysctls(ref nsplugin.Ref, host string, settings []linkSysctl) error {
	if strings.ContainsAny(host, "/") || host == "" || host == "." || host == ".." {
		return api.NonRetriable(fmt.Errorf("link name %q", host))
	}
	return p.ns.Do(ref, func() error {
		for _, s := range settings {
			path := "/proc/sys/net/" + s.dir + "/" + host + "/" + s.name
			data, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("reading %s: %w", path, err)
			}
			if strings.TrimSpace(string(data)) == s.value {
				continue
			}
			if err := os.WriteFile(path, []byte(s.value), 0); err != nil {
				return fmt.Errorf("setting %s to %s: %w", path, s.value, err)
			}
		}
		return nil
	})
}

// AddressOf parses the address of an address value (for other plugins).
func AddressOf(v *linuxif.Interface) (*net.IPNet, bool) {
	if len(v.GetIpAddresses()) != 1 {
		return nil, false
	}
	ip, n, err := net.ParseCIDR(v.GetIpAddresses()[0])
	if err != nil {
		return nil, false
	}
	n.IP = ip
	return n, true
}

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

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
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
func (p *Plugin) addressDescriptor() *api.KVDescriptor {
	d := &api.TypedDescriptor[*linuxif.Interface, any]{
		Name: AddressDescriptorName,
		KeySelector: func(key string) bool {
			_, _, ok := ParseAddressKey(key)
			return ok
		},
		Create: func(_ context.Context, key string, v *linuxif.Interface) (any, error) { return nil, p.addAddress(v) },
		Update: func(_ context.Context, key string, _, v *linuxif.Interface, _ any) (any, error) {
			return nil, p.addAddress(v)
		},
		Delete: func(_ context.Context, key string, v *linuxif.Interface, _ any) error { return p.delAddress(v) },
	}
	return d.KVDescriptor()
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

func (p *Plugin) addAddress(v *linuxif.Interface) error {
	a, err := addrOf(v)
	if err != nil {
		return err
	}
	ref := nsplugin.RefOf(v.GetNamespace())
	h, err := p.ns.Handle(ref, false)
	if err != nil {
		return err
	}
	link, err := h.LinkByName(v.GetHostIfName())
	if err != nil {
		return fmt.Errorf("address %s of %s: link %s: %w", v.GetIpAddresses()[0], v.GetName(), v.GetHostIfName(), err)
	}
	if a.IP.To4() == nil {
		if err := p.linkSysctls(ref, v.GetHostIfName(), ipv6Settings); err != nil {
			return err
		}
	}
	if err := h.AddrAdd(link, a); err != nil && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("adding %s to %s: %w", a.IPNet, v.GetHostIfName(), err)
	}
	return nil
}

func (p *Plugin) delAddress(v *linuxif.Interface) error {
	a, err := addrOf(v)
	if err != nil {
		return err
	}
	ref := nsplugin.RefOf(v.GetNamespace())
	h, err := p.ns.Handle(ref, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	link, err := h.LinkByName(v.GetHostIfName())
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.IP.To4() != nil {
		if err := p.linkSysctls(ref, v.GetHostIfName(), ipv4DelSettings); err != nil {
			return err
		}
	}
	// ENODEV: the link went meanwhile (deleted, or with the namespace it
	// was left in when that was deleted), and its addresses with it.
	if err := h.AddrDel(link, a); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ESRCH) && !errors.Is(err, syscall.ENODEV) {
		return fmt.Errorf("removing %s from %s: %w", a.IPNet, v.GetHostIfName(), err)
	}
	return nil
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

package ifplugin

import (
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
// success; IPv6 is enabled on the link first), Delete of an address or a link
// that is gone is success. Failures are retriable: the link may be renamed
// or moved by its interface in the same transaction.
func (p *Plugin) addressDescriptor() *api.KVDescriptor {
	d := &api.TypedDescriptor[*linuxif.Interface, any]{
		Name: AddressDescriptorName,
		KeySelector: func(key string) bool {
			_, _, ok := ParseAddressKey(key)
			return ok
		},
		Create: func(key string, v *linuxif.Interface) (any, error) { return nil, p.addAddress(v) },
		Delete: func(key string, v *linuxif.Interface, _ any) error { return p.delAddress(v) },
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
		if err := p.enableIPv6(ref, v.GetHostIfName()); err != nil {
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
	if err := h.AddrDel(link, a); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("removing %s from %s: %w", a.IPNet, v.GetHostIfName(), err)
	}
	return nil
}

// enableIPv6 clears disable_ipv6 of a link (some distributions disable IPv6
// on new links), inside its namespace.
func (p *Plugin) enableIPv6(ref nsplugin.Ref, host string) error {
	if strings.ContainsAny(host, "/") || host == "." || host == ".." {
		return api.NonRetriable(fmt.Errorf("link name %q", host))
	}
	path := "/proc/sys/net/ipv6/conf/" + host + "/disable_ipv6"
	return p.ns.Do(ref, func() error {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil // IPv6 is not built in: AddrAdd will say so
		}
		if err != nil || strings.TrimSpace(string(data)) == "0" {
			return err
		}
		return os.WriteFile(path, []byte("0"), 0)
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

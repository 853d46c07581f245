package ifplugin

import (
	"strings"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// Descriptor names.
const (
	InterfaceDescriptorName = "linux-interface"
	AddressDescriptorName   = "linux-interface-address"
	WatcherDescriptorName   = "linux-interface-watcher"
)

// AliasPrefix starts the alias of every link the agent creates
// ("netagent/<label>/<logical name>", or "netagent/<logical name>" without a
// label): it marks the link as the agent's, so that it is recognised after
// a restart and nothing else is ever deleted.
const AliasPrefix = "netagent/"

// Key prefixes of the derived and SB values (shared/spec/models.md).
const (
	addressPrefix  = "linux/interface/"
	statePrefix    = "linux/interface/state/"
	hostNamePrefix = "linux/interface/host-name/"
)

// InterfaceKey is the NB key of the Linux interface with that logical name.
func InterfaceKey(name string) string { return models.LinuxInterface.KeyPrefix + name }

// AddressKey is the key of the derived value of one address of an
// interface: linux/interface/<iface>/address/static/<ip/len>.
func AddressKey(iface, cidr string) string {
	return addressPrefix + iface + "/address/static/" + cidr
}

// AddressKeyPrefix is the prefix of the address keys of an interface.
func AddressKeyPrefix(iface string) string { return addressPrefix + iface + "/address/static/" }

// ParseAddressKey splits an address key into the interface and the address.
func ParseAddressKey(key string) (iface, cidr string, ok bool) {
	rest, ok := strings.CutPrefix(key, addressPrefix)
	if !ok || strings.HasPrefix(key, statePrefix) || strings.HasPrefix(key, hostNamePrefix) {
		return "", "", false
	}
	i := strings.LastIndex(rest, "/address/static/")
	if i <= 0 {
		return "", "", false
	}
	return rest[:i], rest[i+len("/address/static/"):], true
}

// StateKey is the key of the admin-state property of an interface:
// linux/interface/state/<iface>/<UP|DOWN>. Routes and ARP entries depend on
// StateKey(iface, true): the interface is up.
func StateKey(iface string, up bool) string {
	if up {
		return statePrefix + iface + "/UP"
	}
	return statePrefix + iface + "/DOWN"
}

// HostNameKey is the key of a link of the agent's namespace as the
// interface watcher reports it (OBTAINED): linux/interface/host-name/<name>.
func HostNameKey(hostName string) string { return hostNamePrefix + hostName }

// HostAddressKey is the key of an address of such a link:
// linux/interface/host-name/<name>/address/<ip/len>.
func HostAddressKey(hostName, cidr string) string {
	return hostNamePrefix + hostName + "/address/" + cidr
}

// Metadata is what the interface descriptor keeps about an interface it
// configured; other plugins read it from the scheduler's metadata map of
// InterfaceDescriptorName, by logical name.
type Metadata struct {
	// Index is the link's ifindex in its namespace.
	Index int
	// HostName is the link's name in the kernel.
	HostName string
	// Namespace the link is in.
	Namespace nsplugin.Ref
	Type      linuxif.Interface_Type
	// Value is the value the link was last configured to (or Retrieve
	// found it as): the drift watcher tells the echo of the agent's own
	// changes from drift with it. Nil: unknown.
	Value *linuxif.Interface
}

// HostName is the name of an interface in the kernel: host_if_name, else
// lo for a LOOPBACK (the namespace's lo, whatever its logical name) and the
// logical name for the others.
func HostName(i *linuxif.Interface) string {
	switch {
	case i.GetHostIfName() != "":
		return i.GetHostIfName()
	case i.GetType() == linuxif.Interface_LOOPBACK:
		return "lo"
	}
	return i.GetName()
}

package ifplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	linuxifplugin "github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// Limits checked by Validate (VPP's).
const (
	maxVLAN            = 4095
	maxMemifRing       = 1 << 15
	maxMemifBuffer     = 65535
	maxMemifQueues     = 255
	maxMemifSecret     = 24
	maxMemifSocketPath = 108
	maxTapRing         = 32768
)

var supportedTypes = "SOFTWARE_LOOPBACK, AF_PACKET, MEMIF, TAP, SUB_INTERFACE or VXLAN_TUNNEL"

func (p *Plugin) interfaceDescriptor() *api.KVDescriptor {
	d := &api.TypedDescriptor[*vppif.Interface, *Metadata]{
		Name:        InterfaceDescriptorName,
		NBKeyPrefix: models.VPPInterface.KeyPrefix,
		KeySelector: func(key string) bool {
			return strings.HasPrefix(key, models.VPPInterface.KeyPrefix)
		},
		KeyLabel: func(key string) string {
			return strings.TrimPrefix(key, models.VPPInterface.KeyPrefix)
		},
		ValueComparator: func(key string, a, b *vppif.Interface) bool {
			return proto.Equal(normalized(a), normalized(b))
		},
		WithMetadata:       true,
		MetadataMapFactory: p.metadataMap,
		Validate:           p.validate,
		Create:             p.create,
		Delete:             p.delete,
		Update:             p.update,
		UpdateWithRecreate: needsRecreate,
		Retrieve:           p.retrieve,
		IsRetriableFailure: isRetriable,
		DerivedValues:      derivedValues,
		Dependencies:       p.dependencies,
		Unique:             uniqueNames,
	}
	kd := d.KVDescriptor()
	kd.Batch = p.interfaceBatch(kd)
	return kd
}

// normalized drops what does not change VPP's state: the order of the
// addresses, the case of the MAC, TAP version 0 (= 2), the spelling of a
// memif socket path (path.Clean), an empty unnumbered. A relative memif
// socket filename stays relative: where VPP puts it (its run-time
// directory) is VPP's to say, so it is not taken for an absolute path.
func normalized(i *vppif.Interface) *vppif.Interface {
	c := proto.Clone(i).(*vppif.Interface)
	c.PhysAddress = strings.ToLower(c.PhysAddress)
	c.IpAddresses = slices.Clone(c.IpAddresses)
	slices.Sort(c.IpAddresses)
	if c.GetUnnumbered().GetInterfaceWithIp() == "" {
		c.Unnumbered = nil
	}
	switch c.GetType() {
	case vppif.Interface_TAP:
		t := c.GetTap()
		if t == nil {
			t = &vppif.TapLink{}
			c.Link = &vppif.Interface_Tap{Tap: t}
		}
		if t.Version == 0 {
			t.Version = 2
		}
	case vppif.Interface_MEMIF:
		if m := c.GetMemif(); m != nil && m.SocketFilename != "" {
			m.SocketFilename = path.Clean(m.SocketFilename)
		}
	case vppif.Interface_VXLAN_TUNNEL:
		normalizeVxlan(c.GetVxlan())
	}
	return c
}

func cloneValue(v *vppif.Interface) *vppif.Interface { return proto.Clone(v).(*vppif.Interface) }

func invalid(field, format string, args ...any) error {
	return &api.InvalidValueError{Err: fmt.Errorf(format, args...), InvalidFields: []string{field}}
}

// validate checks the fields (models.VPPInterface: names, addresses, MTU,
// unnumbered without addresses, the link matching the type), then what this
// plugin supports.
func (p *Plugin) validate(key string, v *vppif.Interface) error {
	if err := models.VPPInterface.CheckKey(key, v); err != nil {
		var ve *models.ValidationError
		if errors.As(err, &ve) {
			return &api.InvalidValueError{Err: err, InvalidFields: ve.FieldNames()}
		}
		return &api.InvalidValueError{Err: err, InvalidFields: []string{"name"}}
	}
	switch v.GetType() {
	case vppif.Interface_SOFTWARE_LOOPBACK, vppif.Interface_AF_PACKET, vppif.Interface_MEMIF,
		vppif.Interface_TAP, vppif.Interface_SUB_INTERFACE, vppif.Interface_VXLAN_TUNNEL:
	case vppif.Interface_UNDEFINED_TYPE:
		return invalid("type", "type is required: %s", supportedTypes)
	default:
		return invalid("type", "type %s is not supported by this agent (supported: %s)", v.GetType(), supportedTypes)
	}
	if v.GetSetDhcpClient() {
		return invalid("set_dhcp_client", "the DHCP client is not supported")
	}
	switch v.GetType() {
	case vppif.Interface_AF_PACKET:
		if l := v.GetAfpacket().GetLinuxInterface(); l != "" && !isKernelName(l) {
			return invalid("afpacket.linux_interface", "%q cannot be a kernel interface name: the Linux interface's logical name is used as its host name (set host_if_name instead)", l)
		}
	case vppif.Interface_MEMIF:
		m := v.GetMemif()
		switch {
		case m.GetSocketFilename() == "":
			return invalid("memif.socket_filename", "required for a MEMIF interface")
		case len(m.GetSocketFilename()) > maxMemifSocketPath:
			return invalid("memif.socket_filename", "%q is longer than %d bytes", m.GetSocketFilename(), maxMemifSocketPath)
		case m.GetMode() == vppif.MemifLink_IP && v.GetPhysAddress() != "":
			return invalid("phys_address", "an IP-mode memif has no MAC address (VPP ignores it at creation and refuses to set one)")
		case m.GetRingSize() != 0 && (m.GetRingSize()&(m.GetRingSize()-1) != 0 || m.GetRingSize() > maxMemifRing):
			return invalid("memif.ring_size", "%d is not a power of two up to %d (or 0 for VPP's default)", m.GetRingSize(), maxMemifRing)
		case m.GetBufferSize() > maxMemifBuffer:
			return invalid("memif.buffer_size", "%d is above %d", m.GetBufferSize(), maxMemifBuffer)
		case m.GetRxQueues() > maxMemifQueues:
			return invalid("memif.rx_queues", "%d is above %d", m.GetRxQueues(), maxMemifQueues)
		case m.GetTxQueues() > maxMemifQueues:
			return invalid("memif.tx_queues", "%d is above %d", m.GetTxQueues(), maxMemifQueues)
		case len(m.GetSecret()) > maxMemifSecret:
			return invalid("memif.secret", "longer than %d bytes", maxMemifSecret)
		}
	case vppif.Interface_TAP:
		t := v.GetTap()
		switch {
		case t.GetVersion() == 1:
			return invalid("tap.version", "TAP version 1 is not supported by VPP 25.10: use 2 (or 0)")
		case t.GetToMicroservice() != "":
			return invalid("tap.to_microservice", "not supported: create the TAP in the agent's namespace and move its host side with a Linux TAP_TO_VPP interface")
		case t.GetEnableTunnel():
			return invalid("tap.enable_tunnel", "TUN mode is not supported")
		case t.GetRxRingSize() != 0 && (t.GetRxRingSize()&(t.GetRxRingSize()-1) != 0 || t.GetRxRingSize() > maxTapRing):
			return invalid("tap.rx_ring_size", "%d is not a power of two up to %d (or 0 for 256)", t.GetRxRingSize(), maxTapRing)
		case t.GetTxRingSize() != 0 && (t.GetTxRingSize()&(t.GetTxRingSize()-1) != 0 || t.GetTxRingSize() > maxTapRing):
			return invalid("tap.tx_ring_size", "%d is not a power of two up to %d (or 0 for 256)", t.GetTxRingSize(), maxTapRing)
		}
	case vppif.Interface_SUB_INTERFACE:
		if id := v.GetSub().GetSubId(); id == 0 || id > maxVLAN {
			return invalid("sub.sub_id", "%d is not a VLAN ID (1 to %d): the sub-interface matches one VLAN tag equal to sub_id", id, maxVLAN)
		}
		if v.GetPhysAddress() != "" {
			return invalid("phys_address", "a sub-interface has the MAC of its parent")
		}
	case vppif.Interface_VXLAN_TUNNEL:
		return validateVxlan(v)
	}
	return nil
}

// isKernelName tells whether s can name a link in the kernel.
func isKernelName(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." || strings.ContainsAny(s, "/:") {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// hostIfName is the kernel interface an AF_PACKET interface binds to:
// host_if_name, or the logical name of the Linux interface.
func hostIfName(v *vppif.Interface) string {
	if h := v.GetAfpacket().GetHostIfName(); h != "" {
		return h
	}
	return v.GetAfpacket().GetLinuxInterface()
}

// withoutLinux is added to the label of a dependency on a Linux interface
// when the agent runs without its Linux side (SetLinuxDisabled): nothing
// reports or creates Linux interfaces then.
const withoutLinux = " (never: this agent runs without its Linux side, linux.disabled)"

func (p *Plugin) dependencies(key string, v *vppif.Interface) []api.Dependency {
	never := ""
	if p.linuxDisabled {
		never = withoutLinux
	}
	switch v.GetType() {
	case vppif.Interface_AF_PACKET:
		if h := v.GetAfpacket().GetHostIfName(); h != "" {
			return []api.Dependency{{Label: "host interface " + h + never, Key: linuxifplugin.HostNameKey(h)}}
		}
		if l := v.GetAfpacket().GetLinuxInterface(); l != "" {
			return []api.Dependency{{Label: "Linux interface " + l + never, Key: linuxifplugin.InterfaceKey(l)}}
		}
	case vppif.Interface_SUB_INTERFACE:
		if parent := v.GetSub().GetParentName(); parent != "" {
			return []api.Dependency{{Label: "parent interface " + parent, Key: InterfaceKey(parent)}}
		}
	case vppif.Interface_VXLAN_TUNNEL:
		return vxlanDependencies(v)
	}
	return nil
}

// uniqueNames are the names VPP keeps once, which two values could
// otherwise both ask for (the second would fail in VPP, or worse, share the
// object with the first and take it away when deleted):
//
//   - a memif's id on its socket file (VPP: SUBIF_ALREADY_EXISTS), see
//     memifSocketName;
//   - a sub-interface's sub_id on its parent (VPP: SUBIF_ALREADY_EXISTS);
//   - an AF_PACKET interface's host interface (VPP: IF_ALREADY_EXISTS; and
//     af_packet_delete deletes by host name, so the second value's Delete
//     would take the first's interface);
//   - a TAP's host_if_name, the name of its link in VPP's namespace (VPP
//     renames the new link to it, which the kernel refuses while another
//     link has it: NETLINK_ERROR). An empty host_if_name is VPP's to
//     choose and uses no name.
//
// Names are qualified with "vpp": a Linux value that adopts the host side
// of a TAP (TAP_TO_VPP), or makes the host interface of an AF_PACKET, names
// the same link on purpose and must not collide.
func uniqueNames(_ string, v *vppif.Interface) []api.UniqueName {
	switch v.GetType() {
	case vppif.Interface_MEMIF:
		m := v.GetMemif()
		return []api.UniqueName{{Field: "memif.id", Name: fmt.Sprintf("vpp memif id %d on socket %s", m.GetId(), memifSocketName(m.GetSocketFilename()))}}
	case vppif.Interface_SUB_INTERFACE:
		s := v.GetSub()
		return []api.UniqueName{{Field: "sub.sub_id", Name: fmt.Sprintf("vpp sub-interface id %d of interface %s", s.GetSubId(), s.GetParentName())}}
	case vppif.Interface_AF_PACKET:
		field := "afpacket.host_if_name"
		if v.GetAfpacket().GetHostIfName() == "" {
			field = "afpacket.linux_interface"
		}
		return []api.UniqueName{{Field: field, Name: "vpp af_packet interface on host interface " + hostIfName(v)}}
	case vppif.Interface_TAP:
		if h := v.GetTap().GetHostIfName(); h != "" {
			return []api.UniqueName{{Field: "tap.host_if_name", Name: "vpp tap host interface " + h}}
		}
	case vppif.Interface_VXLAN_TUNNEL:
		return []api.UniqueName{vxlanUniqueName(v)}
	}
	return nil
}

// memifSocketName names the socket file of a memif socket filename for
// uniqueNames: an absolute path cleaned (two spellings of one path are one
// file), a relative one cleaned and said to be in VPP's run-time directory.
// That directory's path is not put in: Unique is pure, and only the
// connected VPP knows it (the directory of its default socket, which a
// restarted VPP may have elsewhere), so a relative filename and an absolute
// one naming the same file are not found to be one here; VPP refuses the
// second memif then (see vppcalls.Handler.CreateMemif).
func memifSocketName(filename string) string {
	if path.IsAbs(filename) {
		return path.Clean(filename)
	}
	return path.Clean(filename) + " in VPP's run-time directory"
}

// derivedValues: the admin state (always), the VRF (non-zero: one value
// per IP protocol of its addresses, VRFVersions), one value per address
// and the has-IP-address property, the unnumbered setting.
func derivedValues(key string, v *vppif.Interface) []api.KeyValuePair {
	name := v.GetName()
	kvs := make([]api.KeyValuePair, 0, 3+len(v.GetIpAddresses()))
	kvs = append(kvs, api.KeyValuePair{Key: AdminStateKey(name, v.GetEnabled()), Value: adminValue(v)})
	if v.GetVrf() != 0 {
		for _, version := range VRFVersions(v) {
			kvs = append(kvs, api.KeyValuePair{Key: VRFKey(name, v.GetVrf(), version), Value: &vppif.Interface{Name: name, Vrf: v.GetVrf()}})
		}
	}
	for _, cidr := range v.GetIpAddresses() {
		kvs = append(kvs, api.KeyValuePair{Key: AddressKey(name, cidr), Value: &vppif.Interface{Name: name, IpAddresses: []string{cidr}, Vrf: v.GetVrf()}})
	}
	if len(v.GetIpAddresses()) > 0 {
		kvs = append(kvs, api.KeyValuePair{Key: HasIPAddressKey(name), Value: &emptypb.Empty{}})
	}
	if donor := v.GetUnnumbered().GetInterfaceWithIp(); donor != "" {
		kvs = append(kvs, api.KeyValuePair{Key: UnnumberedKey(name), Value: unnumberedValue(name, donor)})
	}
	return kvs
}

// adminValue is the value of AdminStateKey: the name, the state and, for a
// sub-interface, its parent (it can be up only while its parent is).
func adminValue(v *vppif.Interface) *vppif.Interface {
	a := &vppif.Interface{Name: v.GetName(), Enabled: v.GetEnabled()}
	if v.GetType() == vppif.Interface_SUB_INTERFACE {
		a.Type = v.GetType()
		a.Link = &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: v.GetSub().GetParentName()}}
	}
	return a
}

func unnumberedValue(name, donor string) *vppif.Interface {
	return &vppif.Interface{Name: name, Unnumbered: &vppif.Interface_Unnumbered{InterfaceWithIp: donor}}
}

// needsRecreate: a change of type or of the type's link settings re-creates
// the interface (and whatever depends on it), and so does a change of a
// VXLAN tunnel's vrf (its encap VRF, fixed at creation).
// A configured value that takes over the key of a foreign (OBTAINED)
// interface is always created anew: the foreign interface is never changed.
func needsRecreate(key string, old, new *vppif.Interface, md *Metadata) bool {
	if md != nil && md.Foreign {
		return true
	}
	o, n := normalized(old), normalized(new)
	return o.GetType() != n.GetType() ||
		!proto.Equal(&vppif.Interface{Link: o.Link}, &vppif.Interface{Link: n.Link}) ||
		n.GetType() == vppif.Interface_VXLAN_TUNNEL && o.GetVrf() != n.GetVrf()
}

func parseMAC(s string) (net.HardwareAddr, error) {
	if s == "" {
		return nil, nil
	}
	hw, err := net.ParseMAC(s)
	if err != nil {
		return nil, api.NonRetriable(fmt.Errorf("phys_address %q: %w", s, err))
	}
	return hw, nil
}

func (p *Plugin) create(ctx context.Context, key string, v *vppif.Interface) (*Metadata, error) {
	pid := p.currentPID()
	hw, err := parseMAC(v.GetPhysAddress())
	if err != nil {
		return nil, err
	}
	var idx uint32
	switch v.GetType() {
	case vppif.Interface_SOFTWARE_LOOPBACK:
		idx, err = p.h.CreateLoopback(ctx, hw)
	case vppif.Interface_AF_PACKET:
		idx, err = p.h.CreateAfPacket(ctx, hostIfName(v), hw)
	case vppif.Interface_MEMIF:
		m := v.GetMemif()
		var sock uint32
		var sockPath string
		if sock, sockPath, err = p.h.RegisterMemifSocket(ctx, m.GetSocketFilename()); err != nil {
			break
		}
		idx, err = p.h.CreateMemif(ctx, vppcalls.MemifParams{
			SocketID: sock, SocketFilename: sockPath, ID: m.GetId(), Master: m.GetMaster(), Mode: uint32(m.GetMode()), Secret: m.GetSecret(),
			RingSize: m.GetRingSize(), BufferSize: m.GetBufferSize(), RxQueues: m.GetRxQueues(), TxQueues: m.GetTxQueues(), MAC: hw,
		})
		if err != nil {
			_ = p.h.UnregisterMemifSocket(undoCtx(ctx), m.GetSocketFilename())
		}
	case vppif.Interface_TAP:
		t := v.GetTap()
		idx, err = p.h.CreateTap(ctx, vppcalls.TapParams{
			HostIfName: t.GetHostIfName(), RxRingSize: t.GetRxRingSize(), TxRingSize: t.GetTxRingSize(),
			GSO: t.GetEnableGso(), MAC: hw, Tag: v.GetName(),
		})
	case vppif.Interface_SUB_INTERFACE:
		parent := v.GetSub().GetParentName()
		pmd, ok := p.lookup(parent)
		if !ok {
			return nil, fmt.Errorf("interface %s: parent interface %s has no VPP interface yet", v.GetName(), parent)
		}
		idx, err = p.h.CreateSubif(ctx, pmd.SwIfIndex, v.GetSub().GetSubId(), uint16(v.GetSub().GetSubId()))
	case vppif.Interface_VXLAN_TUNNEL:
		idx, err = p.createVxlan(ctx, v)
	default:
		return nil, api.NonRetriable(fmt.Errorf("interface %s: type %s is not supported", v.GetName(), v.GetType()))
	}
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	// Created admin down (a VXLAN tunnel up): what the agent last did to it
	// until its admin state is set (the link-state watcher may list it
	// before that).
	p.recordChange(v.GetName(), agentChange{SwIfIndex: idx, AdminUp: v.GetType() == vppif.Interface_VXLAN_TUNNEL})()
	// The interface exists: tag it (it is ours from now on) and configure
	// it; on failure, delete it again so that no untagged (foreign-looking)
	// interface is left behind and a retry starts afresh.
	md, err := p.configureNew(ctx, v, idx, pid)
	if err != nil {
		if derr := p.deleteByType(undoCtx(ctx), v, idx); derr != nil {
			p.log.Warn("VPP interface: could not delete a half-configured interface", "interface", v.GetName(), "sw_if_index", idx, "error", derr)
		}
		return nil, fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	return md, nil
}

func (p *Plugin) configureNew(ctx context.Context, v *vppif.Interface, idx, pid uint32) (*Metadata, error) {
	if v.GetType() != vppif.Interface_TAP { // tap_create_v3 sets the tag
		if err := p.h.SetTag(ctx, idx, v.GetName()); err != nil {
			return nil, err
		}
	}
	if v.GetType() == vppif.Interface_VXLAN_TUNNEL && v.GetPhysAddress() != "" { // VPP picks a MAC at creation
		hw, err := parseMAC(v.GetPhysAddress())
		if err != nil {
			return nil, err
		}
		if err := p.h.SetMAC(ctx, idx, hw); err != nil {
			return nil, err
		}
	}
	if mtu := v.GetMtu(); mtu != 0 {
		if err := p.h.SetMTU(ctx, idx, mtu); err != nil {
			return nil, err
		}
	}
	cur, err := p.h.GetInterface(ctx, idx)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, vanished(idx)
	}
	return p.newMetadata(v, idx, pid, cur), nil
}

// vanished is the error of an interface VPP does not list right after
// creating it.
func vanished(idx uint32) error {
	return fmt.Errorf("sw_if_index %d vanished right after its creation", idx)
}

// newMetadata is the metadata of interface v created at idx (cur as VPP
// lists it), pid the VPP process read before the calls.
func (p *Plugin) newMetadata(v *vppif.Interface, idx, pid uint32, cur *vppcalls.Interface) *Metadata {
	return &Metadata{SwIfIndex: idx, VPPPID: p.stampPID(pid), InternalName: cur.Name, DevType: cur.DevType, Vrf: v.GetVrf(), Value: cloneValue(v)}
}

// undoCtx is the context of the calls that undo a failed Create: not
// cancelled with ctx, whose end (the scheduler closing, its deadline for the
// callback) may be the very cause of the failure, so that what the Create
// made is still removed; each call stays bounded by the Manager's
// CallContext.
func undoCtx(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// deleteByType deletes the interface idx with the call of its type.
func (p *Plugin) deleteByType(ctx context.Context, v *vppif.Interface, idx uint32) error {
	switch v.GetType() {
	case vppif.Interface_SOFTWARE_LOOPBACK:
		return p.h.DeleteLoopback(ctx, idx)
	case vppif.Interface_AF_PACKET:
		return p.h.DeleteAfPacket(ctx, hostIfName(v))
	case vppif.Interface_MEMIF:
		if err := p.h.DeleteMemif(ctx, idx); err != nil {
			return err
		}
		return p.h.UnregisterMemifSocket(ctx, v.GetMemif().GetSocketFilename())
	case vppif.Interface_TAP:
		return p.h.DeleteTap(ctx, idx)
	case vppif.Interface_SUB_INTERFACE:
		return p.h.DeleteSubif(ctx, idx)
	case vppif.Interface_VXLAN_TUNNEL:
		return p.h.DeleteVxlan(ctx, idx)
	}
	return api.NonRetriable(fmt.Errorf("type %s is not supported", v.GetType()))
}

// own finds the interface of a logical name in VPP: at the index of its
// metadata when it still carries the name as tag (indexes are reused), or by
// tag when there is no metadata or that of a VPP that has restarted since.
// ok is false when VPP has no such interface.
func (p *Plugin) own(ctx context.Context, name string, md *Metadata) (idx uint32, ok bool, err error) {
	if md != nil && p.isCurrent(md) {
		cur, err := p.h.GetInterface(ctx, md.SwIfIndex)
		if err != nil {
			return 0, false, err
		}
		if cur == nil || cur.Tag != name {
			return 0, false, nil
		}
		return md.SwIfIndex, true, nil
	}
	all, err := p.h.DumpInterfaces(ctx)
	if err != nil {
		return 0, false, err
	}
	for _, i := range all {
		if ours(i) && i.Tag == name {
			return i.SwIfIndex, true, nil
		}
	}
	return 0, false, nil
}

// delete removes an interface of the agent. A foreign interface (metadata
// from Retrieve's OBTAINED value, which the NB then took over) is never
// deleted: the Delete succeeds and VPP is left as it is.
func (p *Plugin) delete(ctx context.Context, key string, v *vppif.Interface, md *Metadata) error {
	if md != nil && md.Foreign {
		return nil
	}
	idx, ok, err := p.own(ctx, v.GetName(), md)
	if err != nil {
		return fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	if !ok {
		return nil // already gone
	}
	defer p.recordChange(v.GetName(), agentChange{SwIfIndex: idx, Deleted: true})()
	if err := p.deleteByType(ctx, v, idx); err != nil {
		return fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	return nil
}

// update changes the MAC and the MTU in place; admin state, VRF, addresses
// and unnumbered follow as derived values. An MTU or MAC going back to unset
// (0, "") leaves VPP's as it is.
func (p *Plugin) update(ctx context.Context, key string, old, v *vppif.Interface, md *Metadata) (*Metadata, error) {
	pid := p.currentPID()
	n := &Metadata{Vrf: v.GetVrf(), Value: cloneValue(v)}
	if md != nil {
		n.SwIfIndex, n.VPPPID, n.InternalName, n.DevType = md.SwIfIndex, md.VPPPID, md.InternalName, md.DevType
	}
	setMAC := v.GetPhysAddress() != "" && !strings.EqualFold(v.GetPhysAddress(), old.GetPhysAddress())
	setMTU := v.GetMtu() != 0 && v.GetMtu() != old.GetMtu()
	if !setMAC && !setMTU && md != nil {
		return n, nil // the rest follows as derived values
	}
	idx, ok, err := p.own(ctx, v.GetName(), md)
	if err != nil {
		return md, fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	if !ok {
		return md, fmt.Errorf("interface %s: not found in VPP", v.GetName())
	}
	n.SwIfIndex, n.VPPPID = idx, p.stampPID(pid)
	if setMAC {
		hw, err := parseMAC(v.GetPhysAddress())
		if err != nil {
			return md, err
		}
		if err := p.h.SetMAC(ctx, idx, hw); err != nil {
			return md, fmt.Errorf("interface %s: %w", v.GetName(), err)
		}
	}
	if setMTU {
		if err := p.h.SetMTU(ctx, idx, v.GetMtu()); err != nil {
			return md, fmt.Errorf("interface %s: %w", v.GetName(), err)
		}
	}
	return n, nil
}

// ours tells whether a VPP interface is the agent's: it carries a tag that
// is a valid logical name (its NB key parses) and is of a kind the plugin
// creates. Every other interface is foreign.
func ours(i *vppcalls.Interface) bool {
	return i.Tag != "" && i.Kind != vppcalls.KindOther && models.ValidVPPName(i.Tag)
}

// logicalName is the name an interface is known by: the tag of ours, VPP's
// name of a foreign one.
func logicalName(i *vppcalls.Interface) string {
	if ours(i) {
		return i.Tag
	}
	return i.Name
}

// retrieve dumps VPP's interfaces. The agent's (see ours) are returned under
// their tag with origin FromNB, as values built from VPP with the
// configuration's spelling for what VPP does not report. Foreign interfaces
// (local0, DPDK ports, anything created by someone else) are returned under
// their VPP name with origin FromSB, as VPP has them: the scheduler keeps
// them OBTAINED and never changes or deletes them. A foreign interface whose
// VPP name is the logical name of one of ours, or of a configured interface,
// is not returned: the name is the agent's.
//
// When VPP lacks the interfaces' own messages (vppcalls.AreaName disabled)
// it reports nothing: the agent cannot see or manage interfaces in that
// VPP, and the values are created again and fail, naming the messages (an
// error would leave them as the scheduler knew them: CONFIGURED, with the
// metadata of the VPP before).
func (p *Plugin) retrieve(ctx context.Context, correlate []api.TypedKV[*vppif.Interface, *Metadata]) ([]api.TypedKV[*vppif.Interface, *Metadata], error) {
	pid := p.currentPID()
	all, err := p.h.DumpInterfaces(ctx)
	if vppconn.IsIncompatible(err) {
		p.log.Warn("VPP lacks the interfaces' messages: no interface is reported, the configured ones fail until a compatible VPP connects", "error", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pid = p.stampPID(pid)
	want := make(map[string]*vppif.Interface, len(correlate))
	for _, kv := range correlate {
		if kv.Origin != api.FromSB { // OBTAINED values (a dump's correlate) are not configured
			want[kv.Value.GetName()] = kv.Value
		}
	}
	byIdx := make(map[uint32]*vppcalls.Interface, len(all))
	for _, i := range all {
		byIdx[i.SwIfIndex] = i
	}
	nameOf := func(idx uint32) string {
		if i := byIdx[idx]; i != nil {
			return logicalName(i)
		}
		return ""
	}
	donorOf := func(idx uint32) *vppcalls.Interface { return byIdx[idx] }
	var out []api.TypedKV[*vppif.Interface, *Metadata]
	taken := map[string]bool{}
	for _, i := range all {
		if !ours(i) {
			continue
		}
		if taken[i.Tag] {
			p.log.Warn("VPP interfaces with the same tag: only the first is taken as the agent's", "tag", i.Tag, "sw_if_index", i.SwIfIndex)
			continue
		}
		taken[i.Tag] = true
		v := observed(i, i.Tag, want[i.Tag], false, nameOf, donorOf)
		out = append(out, api.TypedKV[*vppif.Interface, *Metadata]{
			Key: InterfaceKey(i.Tag), Value: v, Origin: api.FromNB,
			Metadata: &Metadata{SwIfIndex: i.SwIfIndex, VPPPID: pid, InternalName: i.Name, DevType: i.DevType, Vrf: v.GetVrf(), Value: cloneValue(v)},
		})
	}
	for _, i := range all {
		if ours(i) {
			continue
		}
		switch {
		case taken[i.Name]:
			p.log.Warn("a foreign VPP interface has the logical name of one of the agent's: it is left alone and not reported", "name", i.Name, "sw_if_index", i.SwIfIndex)
			continue
		case want[i.Name] != nil:
			p.log.Warn("the configuration names an interface like a foreign VPP interface: the configured one is created, the foreign one is left alone and not reported", "name", i.Name, "sw_if_index", i.SwIfIndex)
			continue
		case !models.ValidVPPName(i.Name):
			p.log.Debug("a foreign VPP interface's name cannot be a logical name: not reported", "name", i.Name, "sw_if_index", i.SwIfIndex)
			continue
		}
		taken[i.Name] = true
		v := observed(i, i.Name, nil, true, nameOf, donorOf)
		out = append(out, api.TypedKV[*vppif.Interface, *Metadata]{
			Key: InterfaceKey(i.Name), Value: v, Origin: api.FromSB,
			Metadata: &Metadata{SwIfIndex: i.SwIfIndex, VPPPID: pid, InternalName: i.Name, DevType: i.DevType, Vrf: v.GetVrf(), Foreign: true, Value: cloneValue(v)},
		})
	}
	return out, nil
}

// observedVRF is the VRF of an interface as VPP has it. For the agent's
// interfaces it is the value's: the VRF descriptor's Retrieve says whether
// VPP has the binding. For a foreign interface it is its IPv4 table, or its
// IPv6 table when only that one is not 0.
func observedVRF(i *vppcalls.Interface, want *vppif.Interface, configured bool) uint32 {
	switch {
	case configured:
		return want.GetVrf()
	case i.IP4Table == 0:
		return i.IP6Table
	}
	return i.IP4Table
}

// defaultTapRing is the TAP ring size VPP applies when the configuration
// leaves it 0.
const defaultTapRing = 256

// observed builds the value of an interface, named name, as VPP has it.
// want is the expected value (nil when the configuration has none); its
// spelling is kept where VPP's state is the same, and fields VPP does not
// report faithfully come from it: the memif secret, queue counts, ring and
// buffer sizes (VPP 25.10's memif_dump reports run-time sizes, 1 and 0 until
// a peer connects, and on a master for good) and the TAP version. So do the
// fields whose derived values have a Retrieve of their own, which says
// whether VPP has them: the admin state, the addresses (followed by those
// VPP has beyond them) and unnumbered. So a derived value that waits for a
// dependency, or that VPP refused, does not make the interface differ from
// its value. raw (a foreign interface) reports what VPP has as it has it:
// MAC, MTU, TAP ring sizes and host name included, and no memif ring or
// buffer size.
func observed(i *vppcalls.Interface, name string, want *vppif.Interface, raw bool, nameOf func(uint32) string, donorOf func(uint32) *vppcalls.Interface) *vppif.Interface {
	configured := want != nil && !raw
	if want == nil {
		want = &vppif.Interface{}
	}
	v := &vppif.Interface{Name: name, Enabled: i.AdminUp}
	if configured {
		v.Enabled = want.GetEnabled()
	}
	if (want.GetPhysAddress() != "" || raw && !zeroMAC(i.MAC)) && i.Kind != vppcalls.KindSub {
		v.PhysAddress = i.MAC.String()
		if strings.EqualFold(v.PhysAddress, want.GetPhysAddress()) {
			v.PhysAddress = want.GetPhysAddress()
		}
	}
	if raw || want.GetMtu() != 0 {
		v.Mtu = observedMTU(i, want.GetMtu())
	}
	v.IpAddresses = observedAddresses(ownAddresses(i, donorOf, want.GetIpAddresses()), want.GetIpAddresses())
	if configured {
		v.IpAddresses = append(slices.Clone(want.GetIpAddresses()), addressesBeyond(v.IpAddresses, want.GetIpAddresses())...)
	}
	v.Vrf = observedVRF(i, want, configured)
	switch {
	case want.GetUnnumbered() != nil:
		v.Unnumbered = proto.Clone(want.GetUnnumbered()).(*vppif.Interface_Unnumbered)
	case i.Unnumbered:
		v.Unnumbered = &vppif.Interface_Unnumbered{InterfaceWithIp: nameOf(i.UnnumberedFrom)}
	}
	switch i.Kind {
	case vppcalls.KindLoopback:
		v.Type = vppif.Interface_SOFTWARE_LOOPBACK
	case vppcalls.KindSub:
		v.Type = vppif.Interface_SUB_INTERFACE
		parent := nameOf(i.Sub.Parent)
		if parent == "" {
			parent = want.GetSub().GetParentName()
		}
		v.Link = &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: parent, SubId: i.Sub.SubID}}
	case vppcalls.KindAfPacket:
		v.Type = vppif.Interface_AF_PACKET
		a := &vppif.AfpacketLink{HostIfName: i.AfPacket.HostIfName}
		if l := want.GetAfpacket().GetLinuxInterface(); l != "" && l == a.HostIfName {
			a = &vppif.AfpacketLink{LinuxInterface: l}
		}
		v.Link = &vppif.Interface_Afpacket{Afpacket: a}
	case vppcalls.KindMemif:
		v.Type = vppif.Interface_MEMIF
		// Role, id, mode and socket are VPP's; the rest is the
		// configuration's (see above).
		w := want.GetMemif()
		m := &vppif.MemifLink{
			Mode: vppif.MemifLink_MemifMode(i.Memif.Mode), Master: i.Memif.Master, Id: i.Memif.ID,
			SocketFilename: i.Memif.SocketFilename,
			Secret:         w.GetSecret(), RxQueues: w.GetRxQueues(), TxQueues: w.GetTxQueues(),
			RingSize: w.GetRingSize(), BufferSize: w.GetBufferSize(),
		}
		if w.GetSocketFilename() != "" &&
			vppcalls.MemifSocketPath(i.Memif.RuntimeDir, w.GetSocketFilename()) == vppcalls.MemifSocketPath(i.Memif.RuntimeDir, m.SocketFilename) {
			m.SocketFilename = w.GetSocketFilename()
		}
		v.Link = &vppif.Interface_Memif{Memif: m}
	case vppcalls.KindTap:
		v.Type = vppif.Interface_TAP
		w := want.GetTap()
		t := &vppif.TapLink{
			Version: w.GetVersion(), HostIfName: i.Tap.HostIfName, RxRingSize: i.Tap.RxRingSize, TxRingSize: i.Tap.TxRingSize,
			EnableGso: i.Tap.GSO, EnableTunnel: i.Tap.Tun, ToMicroservice: w.GetToMicroservice(),
		}
		if !raw {
			if w.GetHostIfName() == "" {
				t.HostIfName = "" // VPP's default name
			}
			if w.GetRxRingSize() == 0 && t.RxRingSize == defaultTapRing {
				t.RxRingSize = 0
			}
			if w.GetTxRingSize() == 0 && t.TxRingSize == defaultTapRing {
				t.TxRingSize = 0
			}
		}
		if raw || w != nil || !proto.Equal(t, &vppif.TapLink{}) {
			v.Link = &vppif.Interface_Tap{Tap: t}
		}
	case vppcalls.KindVxlan:
		v.Type = vppif.Interface_VXLAN_TUNNEL
		v.Link = &vppif.Interface_Vxlan{Vxlan: observedVxlan(i.Vxlan, want.GetVxlan(), nameOf)}
		// vrf is the encap VRF, fixed at creation, which VPP reports as it
		// is; the tunnel's binding to it is the VRF value's.
		v.Vrf = i.Vxlan.EncapVrf
	case vppcalls.KindOther:
		// The model has a type for DPDK ports; for the rest (local0, VPP's
		// own, and kinds the agent does not manage) UNDEFINED_TYPE is the
		// truth, and Metadata.DevType says what VPP calls it.
		if i.DevType == "dpdk" {
			v.Type = vppif.Interface_DPDK
		}
	}
	return v
}

// observedMTU is the MTU of an interface as the model has it (one MTU for
// every protocol, which the agent sets as VPP's L3 MTU with no protocol MTU
// of its own): the L3 MTU when it is want and no protocol MTU differs from
// it; otherwise the first MTU (L3, then IPv4, IPv6, MPLS) that differs from
// want, so that a change by hand of any of them is seen. want 0 (a foreign
// interface, or no MTU configured): the L3 MTU, or the first protocol MTU
// when there is no L3 MTU.
func observedMTU(i *vppcalls.Interface, want uint32) uint32 {
	if want == 0 {
		if i.MTU != 0 {
			return i.MTU
		}
		for _, m := range i.ProtocolMTU {
			if m != 0 {
				return m
			}
		}
		return 0
	}
	if i.MTU != want {
		return i.MTU
	}
	for _, m := range i.ProtocolMTU {
		if m != 0 && m != want {
			return m
		}
	}
	return want
}

// zeroMAC tells whether a MAC is absent or all zeros (local0 has none).
func zeroMAC(mac net.HardwareAddr) bool {
	for _, b := range mac {
		if b != 0 {
			return false
		}
	}
	return true
}

// ownAddresses are the addresses of an interface without the IPv6
// link-local ones the configuration does not have (VPP makes them) and, for
// an unnumbered interface, without those of its donor (VPP does not list
// them, but should a version do so they are not the interface's own).
func ownAddresses(i *vppcalls.Interface, donorOf func(uint32) *vppcalls.Interface, want []string) []netip.Prefix {
	var donor []netip.Prefix
	if i.Unnumbered {
		if d := donorOf(i.UnnumberedFrom); d != nil {
			donor = d.Addresses
		}
	}
	out := make([]netip.Prefix, 0, len(i.Addresses))
	for _, a := range i.Addresses {
		if slices.Contains(donor, a) {
			continue
		}
		if a.Addr().IsLinkLocalUnicast() && !slices.ContainsFunc(want, func(w string) bool {
			wp, err := netip.ParsePrefix(w)
			return err == nil && wp == a
		}) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// addressesBeyond returns the addresses of have that want does not list.
func addressesBeyond(have, want []string) []string {
	var out []string
	for _, h := range have {
		hp, err := netip.ParsePrefix(h)
		if err != nil {
			continue
		}
		if !slices.ContainsFunc(want, func(w string) bool {
			wp, err := netip.ParsePrefix(w)
			return err == nil && wp == hp
		}) {
			out = append(out, h)
		}
	}
	return out
}

// observedAddresses lists VPP's addresses in the configuration's spelling
// and order, then the others.
func observedAddresses(have []netip.Prefix, want []string) []string {
	var out []string
	used := make([]bool, len(have))
	for _, w := range want {
		wp, err := netip.ParsePrefix(w)
		if err != nil {
			continue
		}
		for k, h := range have {
			if !used[k] && h == wp {
				used[k] = true
				out = append(out, w)
				break
			}
		}
	}
	for k, h := range have {
		if !used[k] {
			out = append(out, h.String())
		}
	}
	return out
}

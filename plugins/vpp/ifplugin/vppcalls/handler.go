package vppcalls

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path"
	"slices"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// The vppconn areas of the handler's messages. The messages of the
// interface types that VPP plugins provide (af_packet_plugin.so,
// memif_plugin.so, vxlan_plugin.so (VxlanAreaName); TAP is virtio's) are
// areas of their own, so that a VPP
// without one of those plugins disables that type only: the calls of its
// interfaces fail with a *vppconn.IncompatibleError naming the messages,
// DumpInterfaces reports none of its details (such a VPP has no interface
// of the type), and every other interface is managed as usual.
const (
	// AreaName: what every interface needs (loopbacks, sub-interfaces,
	// settings, addresses, tables, dumps).
	AreaName = "interfaces"
	// AfPacketAreaName: AF_PACKET interfaces.
	AfPacketAreaName = "af_packet"
	// MemifAreaName: memif interfaces and their socket filenames.
	MemifAreaName = "memif"
	// TapAreaName: TAP v2 interfaces.
	TapAreaName = "tap"
)

// Areas lists the areas of the handler's messages, for the compatibility
// check at connect (vppconn.Manager.AddArea): every message it sends or
// receives is in one of them. The AF_PACKET, memif and TAP areas are
// optional: a VPP without one of those plugins is ready, and only values of
// that type fail (naming the message VPP lacks).
func Areas() []vppconn.Area {
	return []vppconn.Area{
		{Name: AreaName, Messages: []govppapi.Message{
			&interfaces.CreateLoopback{}, &interfaces.CreateLoopbackReply{},
			&interfaces.DeleteLoopback{}, &interfaces.DeleteLoopbackReply{},
			&interfaces.CreateSubif{}, &interfaces.CreateSubifReply{},
			&interfaces.DeleteSubif{}, &interfaces.DeleteSubifReply{},
			&interfaces.SwInterfaceSetFlags{}, &interfaces.SwInterfaceSetFlagsReply{},
			&interfaces.SwInterfaceSetMtu{}, &interfaces.SwInterfaceSetMtuReply{},
			&interfaces.SwInterfaceSetMacAddress{}, &interfaces.SwInterfaceSetMacAddressReply{},
			&interfaces.SwInterfaceTagAddDel{}, &interfaces.SwInterfaceTagAddDelReply{},
			&interfaces.SwInterfaceAddDelAddress{}, &interfaces.SwInterfaceAddDelAddressReply{},
			&interfaces.SwInterfaceSetUnnumbered{}, &interfaces.SwInterfaceSetUnnumberedReply{},
			&interfaces.SwInterfaceSetTable{}, &interfaces.SwInterfaceSetTableReply{},
			&interfaces.SwInterfaceGetTable{}, &interfaces.SwInterfaceGetTableReply{},
			&interfaces.SwInterfaceDump{}, &interfaces.SwInterfaceDetails{},
			&ip.IPAddressDump{}, &ip.IPAddressDetails{},
			&ip.IPUnnumberedDump{}, &ip.IPUnnumberedDetails{},
		}},
		{Name: AfPacketAreaName, Optional: true, Messages: []govppapi.Message{
			&af_packet.AfPacketCreateV3{}, &af_packet.AfPacketCreateV3Reply{},
			&af_packet.AfPacketDelete{}, &af_packet.AfPacketDeleteReply{},
			&af_packet.AfPacketDump{}, &af_packet.AfPacketDetails{},
		}},
		{Name: MemifAreaName, Optional: true, Messages: []govppapi.Message{
			&memif.MemifSocketFilenameAddDelV2{}, &memif.MemifSocketFilenameAddDelV2Reply{},
			&memif.MemifSocketFilenameDump{}, &memif.MemifSocketFilenameDetails{},
			&memif.MemifCreateV2{}, &memif.MemifCreateV2Reply{},
			&memif.MemifDelete{}, &memif.MemifDeleteReply{},
			&memif.MemifDump{}, &memif.MemifDetails{},
		}},
		{Name: TapAreaName, Optional: true, Messages: []govppapi.Message{
			&tapv2.TapCreateV3{}, &tapv2.TapCreateV3Reply{},
			&tapv2.TapDeleteV2{}, &tapv2.TapDeleteV2Reply{},
			&tapv2.SwInterfaceTapV2Dump{}, &tapv2.SwInterfaceTapV2Details{},
		}},
		vxlanArea(),
	}
}

// DefaultRuntimeDir is VPP's default run-time directory (unix {
// runtime-dir }), taken for a VPP that does not report its default memif
// socket.
const DefaultRuntimeDir = "/run/vpp"

// MemifSocketPath is the path VPP uses for a memif socket filename: a
// relative name is under VPP's run-time directory runtimeDir
// (MemifDetails.RuntimeDir; "" for DefaultRuntimeDir), an absolute one is
// itself. Paths are cleaned, so that two spellings of a file compare equal.
func MemifSocketPath(runtimeDir, filename string) string {
	if filename == "" {
		return ""
	}
	if path.IsAbs(filename) {
		return path.Clean(filename)
	}
	if runtimeDir == "" {
		runtimeDir = DefaultRuntimeDir
	}
	return path.Join(runtimeDir, filename)
}

// memifRuntimeDir is VPP's run-time directory: that of its default memif
// socket (id 0, "memif.sock" there), which cannot be removed.
func memifRuntimeDir(socks map[uint32]string) string {
	if f, ok := socks[0]; ok && path.IsAbs(f) {
		return path.Dir(f)
	}
	return ""
}

type handler struct {
	m    *vppconn.Manager
	area string
}

// NewHandler returns the Handler calling VPP over m's connection, for the
// area AreaName.
func NewHandler(m *vppconn.Manager) Handler {
	return &handler{m: m, area: AreaName}
}

// call runs one request of the handler's area under the call deadline
// with the current connection; errors are prefixed with the message name.
func (h *handler) call(ctx context.Context, msg string, f func(ctx context.Context, conn govppapi.Connection) error) error {
	return h.callIn(ctx, h.area, msg, f)
}

// callIn is call for a request of another area (an interface type's). A
// request is not sent once ctx has ended: GoVPP would send it and give up
// its reply, and VPP would carry it out unseen (a loopback made that no one
// tags, or deletes).
func (h *handler) callIn(ctx context.Context, area, msg string, f func(ctx context.Context, conn govppapi.Connection) error) error {
	if err := h.m.Do(ctx, area, f); err != nil {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return nil
}

// recvAll reads a dump stream to its end.
func recvAll[T any](s interface {
	Recv() (T, error)
	Close() error
}) ([]T, error) {
	var out []T
	for {
		d, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		out = append(out, d)
	}
}

func isVPPError(err error, codes ...govppapi.VPPApiError) bool {
	var e govppapi.VPPApiError
	return errors.As(err, &e) && slices.Contains(codes, e)
}

func mac(hw net.HardwareAddr) ethernet_types.MacAddress {
	if len(hw) == 0 {
		return ethernet_types.MacAddress{}
	}
	return ethernet_types.NewMacAddress(hw)
}

func toAddressWithPrefix(p netip.Prefix) ip_types.AddressWithPrefix {
	var a ip_types.Address
	if p.Addr().Is4() {
		a.Af = ip_types.ADDRESS_IP4
		a.Un.SetIP4(p.Addr().As4())
	} else {
		a.Af = ip_types.ADDRESS_IP6
		a.Un.SetIP6(p.Addr().As16())
	}
	return ip_types.AddressWithPrefix{Address: a, Len: uint8(p.Bits())}
}

func fromAddressWithPrefix(a ip_types.AddressWithPrefix) (netip.Prefix, bool) {
	var addr netip.Addr
	switch a.Address.Af {
	case ip_types.ADDRESS_IP4:
		addr = netip.AddrFrom4(a.Address.Un.GetIP4())
	case ip_types.ADDRESS_IP6:
		addr = netip.AddrFrom16(a.Address.Un.GetIP6())
	default:
		return netip.Prefix{}, false
	}
	p := netip.PrefixFrom(addr, int(a.Len))
	return p, p.IsValid()
}

func ifIndex(idx uint32) interface_types.InterfaceIndex { return interface_types.InterfaceIndex(idx) }

// ---- creation and deletion

func (h *handler) CreateLoopback(ctx context.Context, hw net.HardwareAddr) (uint32, error) {
	var idx uint32
	err := h.call(ctx, "create_loopback", func(ctx context.Context, c govppapi.Connection) error {
		r, err := interfaces.NewServiceClient(c).CreateLoopback(ctx, &interfaces.CreateLoopback{MacAddress: mac(hw)})
		if err == nil {
			idx = uint32(r.SwIfIndex)
		}
		return err
	})
	return idx, err
}

func (h *handler) DeleteLoopback(ctx context.Context, idx uint32) error {
	return h.call(ctx, "delete_loopback", func(ctx context.Context, c govppapi.Connection) error {
		_, err := interfaces.NewServiceClient(c).DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: ifIndex(idx)})
		if isVPPError(err, govppapi.INVALID_SW_IF_INDEX) {
			return nil
		}
		return err
	})
}

func (h *handler) CreateAfPacket(ctx context.Context, hostIfName string, hw net.HardwareAddr) (uint32, error) {
	var idx uint32
	err := h.callIn(ctx, AfPacketAreaName, "af_packet_create_v3", func(ctx context.Context, c govppapi.Connection) error {
		r, err := af_packet.NewServiceClient(c).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
			Mode:            af_packet.AF_PACKET_API_MODE_ETHERNET,
			HwAddr:          mac(hw),
			UseRandomHwAddr: len(hw) == 0,
			HostIfName:      hostIfName,
			// VPP's own defaults (CLI create host-interface): TPACKET_V3,
			// qdisc bypass, checksum offload and GSO.
			Flags:       af_packet.AF_PACKET_API_FLAG_QDISC_BYPASS | af_packet.AF_PACKET_API_FLAG_CKSUM_GSO,
			NumRxQueues: 1,
			NumTxQueues: 1,
		})
		if err == nil {
			idx = uint32(r.SwIfIndex)
		}
		return err
	})
	return idx, err
}

func (h *handler) DeleteAfPacket(ctx context.Context, hostIfName string) error {
	return h.callIn(ctx, AfPacketAreaName, "af_packet_delete", func(ctx context.Context, c govppapi.Connection) error {
		_, err := af_packet.NewServiceClient(c).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: hostIfName})
		if isVPPError(err, govppapi.SYSCALL_ERROR_1, govppapi.INVALID_SW_IF_INDEX, govppapi.NO_SUCH_ENTRY) {
			return nil // no AF_PACKET interface on that host interface
		}
		return err
	})
}

func (h *handler) dumpMemifSockets(ctx context.Context) (map[uint32]string, error) {
	out := map[uint32]string{}
	err := h.callIn(ctx, MemifAreaName, "memif_socket_filename_dump", func(ctx context.Context, c govppapi.Connection) error {
		s, err := memif.NewServiceClient(c).MemifSocketFilenameDump(ctx, &memif.MemifSocketFilenameDump{})
		if err != nil {
			return err
		}
		ds, err := recvAll(s)
		for _, d := range ds {
			out[d.SocketID] = d.SocketFilename
		}
		return err
	})
	return out, err
}

func (h *handler) RegisterMemifSocket(ctx context.Context, filename string) (uint32, string, error) {
	socks, err := h.dumpMemifSockets(ctx)
	if err != nil {
		return 0, "", err
	}
	dir := memifRuntimeDir(socks)
	want := MemifSocketPath(dir, filename)
	ids := make([]uint32, 0, len(socks))
	for id := range socks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if MemifSocketPath(dir, socks[id]) == want {
			return id, want, nil
		}
	}
	// A relative filename goes to VPP as it is: VPP places it under its
	// run-time directory and creates the directories it names.
	var id uint32
	err = h.callIn(ctx, MemifAreaName, "memif_socket_filename_add_del_v2", func(ctx context.Context, c govppapi.Connection) error {
		r, err := memif.NewServiceClient(c).MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{
			IsAdd: true, SocketID: NoIndex, SocketFilename: filename,
		})
		if err == nil {
			id = r.SocketID
		}
		return err
	})
	return id, want, err
}

func (h *handler) dumpMemifs(ctx context.Context) ([]*memif.MemifDetails, error) {
	var out []*memif.MemifDetails
	err := h.callIn(ctx, MemifAreaName, "memif_dump", func(ctx context.Context, c govppapi.Connection) error {
		s, err := memif.NewServiceClient(c).MemifDump(ctx, &memif.MemifDump{})
		if err != nil {
			return err
		}
		out, err = recvAll(s)
		return err
	})
	return out, err
}

func (h *handler) UnregisterMemifSocket(ctx context.Context, filename string) error {
	socks, err := h.dumpMemifSockets(ctx)
	if err != nil {
		return err
	}
	dir := memifRuntimeDir(socks)
	want := MemifSocketPath(dir, filename)
	id, found := uint32(0), false
	for sid, f := range socks {
		if sid != 0 && MemifSocketPath(dir, f) == want {
			id, found = sid, true
		}
	}
	if !found {
		return nil // not registered, or VPP's default socket
	}
	memifs, err := h.dumpMemifs(ctx)
	if err != nil {
		return err
	}
	for _, m := range memifs {
		if m.SocketID == id {
			return nil // still in use
		}
	}
	return h.callIn(ctx, MemifAreaName, "memif_socket_filename_add_del_v2", func(ctx context.Context, c govppapi.Connection) error {
		_, err := memif.NewServiceClient(c).MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{IsAdd: false, SocketID: id})
		if isVPPError(err, govppapi.NO_SUCH_ENTRY, govppapi.UNEXPECTED_INTF_STATE) {
			return nil // gone, or taken by someone else meanwhile
		}
		return err
	})
}

func (h *handler) CreateMemif(ctx context.Context, p MemifParams) (uint32, error) {
	role := memif.MEMIF_ROLE_API_SLAVE
	if p.Master {
		role = memif.MEMIF_ROLE_API_MASTER
	}
	rxq, txq := max(p.RxQueues, 1), max(p.TxQueues, 1)
	var idx uint32
	err := h.callIn(ctx, MemifAreaName, "memif_create_v2", func(ctx context.Context, c govppapi.Connection) error {
		r, err := memif.NewServiceClient(c).MemifCreateV2(ctx, &memif.MemifCreateV2{
			Role: role, Mode: memif.MemifMode(p.Mode), RxQueues: uint8(rxq), TxQueues: uint8(txq),
			ID: p.ID, SocketID: p.SocketID, RingSize: p.RingSize, BufferSize: uint16(p.BufferSize),
			HwAddr: mac(p.MAC), Secret: p.Secret,
		})
		if err == nil {
			idx = uint32(r.SwIfIndex)
		}
		if p.Master {
			return masterSocketError(p.SocketFilename, err)
		}
		return err
	})
	if isVPPError(err, govppapi.SUBIF_ALREADY_EXISTS) {
		err = h.memifTakenError(ctx, p, err)
	}
	return idx, err
}

// memifTakenError explains VPP 25.10's SUBIF_ALREADY_EXISTS of
// memif_create_v2, which it gives both for an id already used on the socket
// and for a socket file used by memifs of the other role: it names the
// memif in the way (VPP's name and tag). Values the agent knows to collide
// never get here (the descriptor's Unique); this is for what only VPP can
// tell: a relative and an absolute filename of one file, a memif someone
// else made, masters and slaves on one socket. It keeps the VPP error in
// the chain; when the dumps fail the error is returned as it is.
func (h *handler) memifTakenError(ctx context.Context, p MemifParams, err error) error {
	memifs, derr := h.dumpMemifs(ctx)
	if derr != nil {
		return err
	}
	role := func(master bool) string {
		if master {
			return "master"
		}
		return "slave"
	}
	describe := func(d *memif.MemifDetails) string {
		what := d.IfName
		if i, gerr := h.GetInterface(ctx, uint32(d.SwIfIndex)); gerr == nil && i != nil && i.Tag != "" {
			what += fmt.Sprintf(" (tag %s)", i.Tag)
		}
		return what
	}
	for _, d := range memifs {
		if d.SocketID == p.SocketID && d.ID == p.ID {
			return fmt.Errorf("memif id %d on socket %s is already used by VPP's memif %s: %w", p.ID, p.SocketFilename, describe(d), err)
		}
	}
	for _, d := range memifs {
		if d.SocketID == p.SocketID && (d.Role == memif.MEMIF_ROLE_API_MASTER) != p.Master {
			return fmt.Errorf("memif socket %s is used by the %s memif %s: VPP does not let masters and slaves share a socket file: %w",
				p.SocketFilename, role(!p.Master), describe(d), err)
		}
	}
	return err
}

// masterSocketError explains the errors of VPP 25.10's memif_create_v2 when
// a master cannot listen on its socket file, which VPP reports as bare
// system call errors; it keeps the VPP error in the chain. Other errors are
// returned as they are.
func masterSocketError(filename string, err error) error {
	if isVPPError(err, govppapi.SYSCALL_ERROR_4, govppapi.SYSCALL_ERROR_8) {
		return fmt.Errorf("VPP cannot listen on the memif socket %s: its directory %s does not exist, VPP may not write there, "+
			"or a file that is no socket is in the way (VPP creates the directories of a relative socket filename, "+
			"under its run-time directory, not those of an absolute one): %w", filename, path.Dir(filename), err)
	}
	return err
}

func (h *handler) DeleteMemif(ctx context.Context, idx uint32) error {
	return h.callIn(ctx, MemifAreaName, "memif_delete", func(ctx context.Context, c govppapi.Connection) error {
		_, err := memif.NewServiceClient(c).MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: ifIndex(idx)})
		if isVPPError(err, govppapi.INVALID_SW_IF_INDEX) {
			return nil
		}
		return err
	})
}

// Default TAP ring size (the API's default=256, which GoVPP does not apply).
const defaultTapRing = 256

func (h *handler) CreateTap(ctx context.Context, p TapParams) (uint32, error) {
	req := &tapv2.TapCreateV3{
		ID:           NoIndex,
		UseRandomMac: len(p.MAC) == 0,
		MacAddress:   mac(p.MAC),
		NumRxQueues:  1,
		NumTxQueues:  1,
		RxRingSz:     uint16(p.RxRingSize),
		TxRingSz:     uint16(p.TxRingSize),
		Tag:          p.Tag,
	}
	if req.RxRingSz == 0 {
		req.RxRingSz = defaultTapRing
	}
	if req.TxRingSz == 0 {
		req.TxRingSz = defaultTapRing
	}
	if p.HostIfName != "" {
		req.HostIfNameSet, req.HostIfName = true, p.HostIfName
	}
	if p.GSO {
		req.TapFlags |= tapv2.TAP_API_FLAG_GSO
	}
	var idx uint32
	err := h.callIn(ctx, TapAreaName, "tap_create_v3", func(ctx context.Context, c govppapi.Connection) error {
		r, err := tapv2.NewServiceClient(c).TapCreateV3(ctx, req)
		if err == nil {
			idx = uint32(r.SwIfIndex)
		}
		return err
	})
	return idx, err
}

func (h *handler) DeleteTap(ctx context.Context, idx uint32) error {
	return h.callIn(ctx, TapAreaName, "tap_delete_v2", func(ctx context.Context, c govppapi.Connection) error {
		_, err := tapv2.NewServiceClient(c).TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: ifIndex(idx)})
		if isVPPError(err, govppapi.INVALID_SW_IF_INDEX) {
			return nil
		}
		return err
	})
}

func (h *handler) CreateSubif(ctx context.Context, parent, subID uint32, vlan uint16) (uint32, error) {
	var idx uint32
	err := h.call(ctx, "create_subif", func(ctx context.Context, c govppapi.Connection) error {
		r, err := interfaces.NewServiceClient(c).CreateSubif(ctx, &interfaces.CreateSubif{
			SwIfIndex:   ifIndex(parent),
			SubID:       subID,
			SubIfFlags:  interface_types.SUB_IF_API_FLAG_ONE_TAG | interface_types.SUB_IF_API_FLAG_EXACT_MATCH,
			OuterVlanID: vlan,
		})
		if err == nil {
			idx = uint32(r.SwIfIndex)
		}
		return err
	})
	return idx, err
}

func (h *handler) DeleteSubif(ctx context.Context, idx uint32) error {
	return h.call(ctx, "delete_subif", func(ctx context.Context, c govppapi.Connection) error {
		_, err := interfaces.NewServiceClient(c).DeleteSubif(ctx, &interfaces.DeleteSubif{SwIfIndex: ifIndex(idx)})
		if isVPPError(err, govppapi.INVALID_SW_IF_INDEX) {
			return nil
		}
		return err
	})
}

// ---- settings

func (h *handler) SetAdminUp(ctx context.Context, idx uint32, up bool) error {
	return h.call(ctx, "sw_interface_set_flags", func(ctx context.Context, c govppapi.Connection) error {
		_, err := interfaces.NewServiceClient(c).SwInterfaceSetFlags(ctx, adminRequest(idx, up))
		return err
	})
}

func (h *handler) SetMTU(ctx context.Context, idx uint32, mtu uint32) error {
	return h.call(ctx, "sw_interface_set_mtu", func(ctx context.Context, c govppapi.Connection) error {
		_, err := interfaces.NewServiceClient(c).SwInterfaceSetMtu(ctx, mtuRequest(idx, mtu))
		return err
	})
}

func (h *handler) SetMAC(ctx context.Context, idx uint32, hw net.HardwareAddr) error {
	return h.call(ctx, "sw_interface_set_mac_address", func(ctx context.Context, c govppapi.Connection) error {
		_, err := interfaces.NewServiceClient(c).SwInterfaceSetMacAddress(ctx, &interfaces.SwInterfaceSetMacAddress{SwIfIndex: ifIndex(idx), MacAddress: mac(hw)})
		return err
	})
}

func (h *handler) SetTag(ctx context.Context, idx uint32, tag string) error {
	return h.call(ctx, "sw_interface_tag_add_del", func(ctx context.Context, c govppapi.Connection) error {
		_, err := interfaces.NewServiceClient(c).SwInterfaceTagAddDel(ctx, tagRequest(idx, tag))
		return err
	})
}

func (h *handler) AddAddress(ctx context.Context, idx uint32, addr netip.Prefix) error {
	err := h.call(ctx, "sw_interface_add_del_address", func(ctx context.Context, c govppapi.Connection) error {
		_, err := interfaces.NewServiceClient(c).SwInterfaceAddDelAddress(ctx, addressRequest(idx, addr, true))
		return err
	})
	return h.addressAdded(ctx, idx, addr, err)
}

func (h *handler) DelAddress(ctx context.Context, idx uint32, addr netip.Prefix) error {
	return h.call(ctx, "sw_interface_add_del_address", func(ctx context.Context, c govppapi.Connection) error {
		_, err := interfaces.NewServiceClient(c).SwInterfaceAddDelAddress(ctx, addressRequest(idx, addr, false))
		return addressDeleted(err)
	})
}

func (h *handler) SetUnnumbered(ctx context.Context, idx, donor uint32) error {
	return h.call(ctx, "sw_interface_set_unnumbered", func(ctx context.Context, c govppapi.Connection) error {
		// sw_if_index has the addresses, unnumbered_sw_if_index borrows them.
		_, err := interfaces.NewServiceClient(c).SwInterfaceSetUnnumbered(ctx, &interfaces.SwInterfaceSetUnnumbered{
			SwIfIndex: ifIndex(donor), UnnumberedSwIfIndex: ifIndex(idx), IsAdd: true,
		})
		return err
	})
}

func (h *handler) UnsetUnnumbered(ctx context.Context, idx uint32) error {
	return h.call(ctx, "sw_interface_set_unnumbered", func(ctx context.Context, c govppapi.Connection) error {
		_, err := interfaces.NewServiceClient(c).SwInterfaceSetUnnumbered(ctx, &interfaces.SwInterfaceSetUnnumbered{
			SwIfIndex: ifIndex(idx), UnnumberedSwIfIndex: ifIndex(idx), IsAdd: false,
		})
		if isVPPError(err, govppapi.INVALID_SW_IF_INDEX, govppapi.INVALID_SW_IF_INDEX_2) {
			return nil
		}
		return err
	})
}

func (h *handler) SetTable(ctx context.Context, idx uint32, vrf uint32, ipv4, ipv6 bool) error {
	for _, v6 := range []bool{false, true} {
		if v6 && !ipv6 || !v6 && !ipv4 {
			continue
		}
		err := h.call(ctx, "sw_interface_set_table", func(ctx context.Context, c govppapi.Connection) error {
			_, err := interfaces.NewServiceClient(c).SwInterfaceSetTable(ctx, &interfaces.SwInterfaceSetTable{SwIfIndex: ifIndex(idx), IsIPv6: v6, VrfID: vrf})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ---- dumps

func basic(d *interfaces.SwInterfaceDetails) *Interface {
	i := &Interface{
		SwIfIndex:    uint32(d.SwIfIndex),
		SupSwIfIndex: d.SupSwIfIndex,
		Name:         d.InterfaceName,
		Tag:          d.Tag,
		DevType:      d.InterfaceDevType,
		MAC:          d.L2Address.ToMAC(),
		LinkMTU:      uint32(d.LinkMtu),
		AdminUp:      d.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0,
		LinkUp:       d.Flags&interface_types.IF_STATUS_API_FLAG_LINK_UP != 0,
	}
	if len(d.Mtu) > 0 {
		i.MTU = d.Mtu[0]
		copy(i.ProtocolMTU[:], d.Mtu[1:])
	}
	if d.Type == interface_types.IF_API_TYPE_SUB {
		i.Kind = KindSub
		i.Sub = &SubDetails{
			Parent: d.SupSwIfIndex, SubID: d.SubID, OuterVlanID: d.SubOuterVlanID, InnerVlanID: d.SubInnerVlanID,
			NumTags: d.SubNumberOfTags, ExactMatch: d.SubIfFlags&interface_types.SUB_IF_API_FLAG_EXACT_MATCH != 0,
		}
	} else if d.InterfaceDevType == "Loopback" {
		i.Kind = KindLoopback
	}
	return i
}

func (h *handler) swInterfaceDump(ctx context.Context, idx uint32) ([]*interfaces.SwInterfaceDetails, error) {
	var out []*interfaces.SwInterfaceDetails
	err := h.call(ctx, "sw_interface_dump", func(ctx context.Context, c govppapi.Connection) error {
		s, err := interfaces.NewServiceClient(c).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ifIndex(idx)})
		if err != nil {
			return err
		}
		out, err = recvAll(s)
		return err
	})
	return out, err
}

func (h *handler) GetInterface(ctx context.Context, idx uint32) (*Interface, error) {
	if idx == NoIndex {
		return nil, nil
	}
	ds, err := h.swInterfaceDump(ctx, idx)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if uint32(d.SwIfIndex) == idx {
			return basic(d), nil
		}
	}
	return nil, nil
}

func (h *handler) DumpUnnumbered(ctx context.Context) (map[uint32]uint32, error) {
	if un, ok := memoized[map[uint32]uint32](ctx, memoUnnumbered); ok {
		return un, nil
	}
	out := map[uint32]uint32{}
	err := h.call(ctx, "ip_unnumbered_dump", func(ctx context.Context, c govppapi.Connection) error {
		s, err := ip.NewServiceClient(c).IPUnnumberedDump(ctx, &ip.IPUnnumberedDump{SwIfIndex: ifIndex(NoIndex)})
		if err != nil {
			return err
		}
		ds, err := recvAll(s)
		for _, d := range ds {
			out[uint32(d.SwIfIndex)] = uint32(d.IPSwIfIndex)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	api.RefreshMemo(ctx).Store(memoUnnumbered, out)
	return out, nil
}

func (h *handler) ListInterfaces(ctx context.Context) ([]*Interface, error) {
	return ListInterfacesOnce(ctx, func(ctx context.Context) ([]*interfaces.SwInterfaceDetails, error) {
		return h.swInterfaceDump(ctx, NoIndex)
	})
}

// listed is the interfaces of a sw_interface_dump of every interface, each
// once, ordered by index.
func listed(ds []*interfaces.SwInterfaceDetails) []*Interface {
	seen := make(map[uint32]bool, len(ds))
	out := make([]*Interface, 0, len(ds))
	for _, d := range ds {
		i := basic(d)
		if seen[i.SwIfIndex] {
			continue
		}
		seen[i.SwIfIndex] = true
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b *Interface) int { return int(int64(a.SwIfIndex) - int64(b.SwIfIndex)) })
	return out
}

func (h *handler) DumpAddresses(ctx context.Context, idx uint32) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, ipv6 := range []bool{false, true} {
		err := h.call(ctx, "ip_address_dump", func(ctx context.Context, c govppapi.Connection) error {
			s, err := ip.NewServiceClient(c).IPAddressDump(ctx, &ip.IPAddressDump{SwIfIndex: ifIndex(idx), IsIPv6: ipv6})
			if err != nil {
				return err
			}
			as, err := recvAll(s)
			for _, a := range as {
				if p, ok := fromAddressWithPrefix(a.Prefix); ok {
					out = append(out, p)
				}
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (h *handler) DumpInterfaces(ctx context.Context) ([]*Interface, error) {
	if all, ok := RefreshDump(ctx); ok {
		return all, nil
	}
	out, err := h.dumpInterfaces(ctx)
	if err != nil {
		return nil, err
	}
	memo := api.RefreshMemo(ctx)
	memo.Store(memoDumped, out)
	memo.Store(memoListed, out)
	return out, nil
}

func (h *handler) dumpInterfaces(ctx context.Context) ([]*Interface, error) {
	list, err := h.ListInterfaces(ctx)
	if err != nil {
		return nil, err
	}
	// The list may be the refresh's (shared, read only): the details are
	// filled in on copies.
	out := make([]*Interface, len(list))
	byIdx := make(map[uint32]*Interface, len(out))
	for k, i := range list {
		c := *i
		out[k] = &c
		byIdx[c.SwIfIndex] = &c
	}

	// Addresses and tables, per interface (VPP has no form of these for
	// every interface): pipelined.
	pipe := h.NewPipe()
	type perInterface struct {
		addrs      *Result[[]netip.Prefix]
		ip4t, ip6t *Result[uint32]
	}
	per := make([]perInterface, len(out))
	idxs := make([]uint32, len(out))
	for k, i := range out {
		idxs[k] = i.SwIfIndex
	}
	for k, addrs := range pipe.DumpAddressesOf(idxs) {
		per[k] = perInterface{addrs, pipe.GetTable(idxs[k], false), pipe.GetTable(idxs[k], true)}
	}
	pipe.Send(ctx)
	for k, i := range out {
		for _, e := range []error{per[k].addrs.Err, per[k].ip4t.Err, per[k].ip6t.Err} {
			if e != nil {
				return nil, e
			}
		}
		i.Addresses, i.IP4Table, i.IP6Table = per[k].addrs.Value, per[k].ip4t.Value, per[k].ip6t.Value
	}

	unnumbered, err := h.DumpUnnumbered(ctx)
	if err != nil {
		return nil, err
	}
	for idx, donor := range unnumbered {
		if i := byIdx[idx]; i != nil {
			i.Unnumbered, i.UnnumberedFrom = true, donor
		}
	}

	// Type-specific details. A VPP without the messages of a type (its VPP
	// plugin not loaded) has no interface of that type: its details are
	// not asked for.
	err = h.callIn(ctx, AfPacketAreaName, "af_packet_dump", func(ctx context.Context, c govppapi.Connection) error {
		s, err := af_packet.NewServiceClient(c).AfPacketDump(ctx, &af_packet.AfPacketDump{})
		if err != nil {
			return err
		}
		ds, err := recvAll(s)
		for _, d := range ds {
			if i := byIdx[uint32(d.SwIfIndex)]; i != nil {
				i.Kind, i.AfPacket = KindAfPacket, &AfPacketDetails{HostIfName: d.HostIfName}
			}
		}
		return err
	})
	if err != nil && !vppconn.IsIncompatible(err) {
		return nil, err
	}

	memifs, err := h.dumpMemifs(ctx)
	if err != nil && !vppconn.IsIncompatible(err) {
		return nil, err
	}
	if len(memifs) > 0 {
		socks, err := h.dumpMemifSockets(ctx)
		if err != nil {
			return nil, err
		}
		dir := memifRuntimeDir(socks)
		for _, d := range memifs {
			if i := byIdx[uint32(d.SwIfIndex)]; i != nil {
				i.Kind = KindMemif
				i.Memif = &MemifDetails{
					SocketID: d.SocketID, SocketFilename: socks[d.SocketID], RuntimeDir: dir, ID: d.ID,
					Master: d.Role == memif.MEMIF_ROLE_API_MASTER, Mode: uint32(d.Mode),
					RingSize: d.RingSize, BufferSize: uint32(d.BufferSize),
				}
			}
		}
	}

	err = h.callIn(ctx, TapAreaName, "sw_interface_tap_v2_dump", func(ctx context.Context, c govppapi.Connection) error {
		s, err := tapv2.NewServiceClient(c).SwInterfaceTapV2Dump(ctx, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: ifIndex(NoIndex)})
		if err != nil {
			return err
		}
		ds, err := recvAll(s)
		for _, d := range ds {
			if i := byIdx[d.SwIfIndex]; i != nil {
				i.Kind = KindTap
				i.Tap = &TapDetails{
					ID: d.ID, HostIfName: d.HostIfName, RxRingSize: uint32(d.RxRingSz), TxRingSize: uint32(d.TxRingSz),
					GSO: d.TapFlags&tapv2.TAP_API_FLAG_GSO != 0, Tun: d.TapFlags&tapv2.TAP_API_FLAG_TUN != 0,
				}
			}
		}
		return err
	})
	if err != nil && !vppconn.IsIncompatible(err) {
		return nil, err
	}
	if err := h.addVxlanDetails(ctx, byIdx); err != nil {
		return nil, err
	}
	return out, nil
}

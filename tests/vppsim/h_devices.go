package vppsim

import (
	"cmp"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path"
	"slices"
	"strings"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"
)

// ---- AF_PACKET

// afPacketMTU is the link and L3 MTU VPP 25.10 gives an AF_PACKET interface
// (seen on a fresh veth whose own MTU is 1500: VPP does not take the host
// interface's).
const afPacketMTU = 9000

// afPacketCreate creates host-<name>. The host interface must exist
// (Options.HostIfExists; INVALID_INTERFACE otherwise) and have no AF_PACKET
// interface yet (IF_ALREADY_EXISTS). VPP uses hw_addr unless
// use_random_hw_addr, so a zero hw_addr with use_random_hw_addr=false gives
// the interface the MAC 00:00:00:00:00:00.
func (c *call) afPacketCreate(p AfPacketParams, hwAddr ethernet_types.MacAddress) (uint32, int32) {
	if p.HostIfName == "" || (c.s.opts.HostIfExists != nil && !c.s.opts.HostIfExists(p.HostIfName)) {
		return NoIndex, errInvalidInterface
	}
	for _, i := range c.st.ifs {
		if i.AfPacket != nil && i.AfPacket.HostIfName == p.HostIfName {
			return NoIndex, errIfAlreadyExists
		}
	}
	mac := toMAC(hwAddr)
	if p.UseRandomHwAddr {
		mac = randomMAC()
	}
	idx := c.st.addHW(&iface{carrier: true, Interface: Interface{
		Name: "host-" + p.HostIfName, Kind: KindAfPacket, DevType: "af-packet",
		MAC: mac, LinkMTU: afPacketMTU, AfPacket: &p,
	}})
	return idx, 0
}

func afPacketCreate(c *call, m *af_packet.AfPacketCreate) api.Message {
	idx, rv := c.afPacketCreate(AfPacketParams{HostIfName: m.HostIfName, UseRandomHwAddr: m.UseRandomHwAddr, Version: 1}, m.HwAddr)
	return &af_packet.AfPacketCreateReply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

func afPacketCreateV2(c *call, m *af_packet.AfPacketCreateV2) api.Message {
	idx, rv := c.afPacketCreate(AfPacketParams{
		HostIfName: m.HostIfName, UseRandomHwAddr: m.UseRandomHwAddr, Version: 2,
		Flags: af_packet.AfPacketFlags(m.Flags), NumRxQueues: m.NumRxQueues,
		RxFrameSize: m.RxFrameSize, TxFrameSize: m.TxFrameSize,
		RxFramesPerBlock: m.RxFramesPerBlock, TxFramesPerBlock: m.TxFramesPerBlock,
	}, m.HwAddr)
	return &af_packet.AfPacketCreateV2Reply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

func afPacketCreateV3(c *call, m *af_packet.AfPacketCreateV3) api.Message {
	idx, rv := c.afPacketCreate(AfPacketParams{
		HostIfName: m.HostIfName, UseRandomHwAddr: m.UseRandomHwAddr, Version: 3, Mode: m.Mode,
		Flags: m.Flags, NumRxQueues: m.NumRxQueues, NumTxQueues: m.NumTxQueues,
		RxFrameSize: m.RxFrameSize, TxFrameSize: m.TxFrameSize,
		RxFramesPerBlock: m.RxFramesPerBlock, TxFramesPerBlock: m.TxFramesPerBlock,
	}, m.HwAddr)
	return &af_packet.AfPacketCreateV3Reply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

// afPacketDelete deletes by host interface name; an unknown name is
// SYSCALL_ERROR_1, as in VPP.
func afPacketDelete(c *call, m *af_packet.AfPacketDelete) api.Message {
	for _, i := range c.st.ifs {
		if i.AfPacket != nil && i.AfPacket.HostIfName == m.HostIfName {
			c.st.deleteIf(i.SwIfIndex)
			return &af_packet.AfPacketDeleteReply{}
		}
	}
	return &af_packet.AfPacketDeleteReply{Retval: errSyscall1}
}

func afPacketDump(c *call, _ *af_packet.AfPacketDump) []api.Message {
	var out []api.Message
	for _, i := range c.st.sortedIfs() {
		if i.AfPacket != nil {
			out = append(out, &af_packet.AfPacketDetails{SwIfIndex: rvIndex(i.SwIfIndex), HostIfName: i.AfPacket.HostIfName})
		}
	}
	return out
}

// ---- memif

func (st *state) memifSocketUsers(id uint32) int {
	n := 0
	for _, i := range st.ifs {
		if i.Memif != nil && i.Memif.SocketID == id {
			n++
		}
	}
	return n
}

// memifSocketAddDel: socket id 0 is the default socket and cannot be changed
// (INVALID_ARGUMENT); a relative filename is taken under /run/vpp; changing
// or deleting a socket that interfaces use is UNEXPECTED_INTF_STATE;
// deleting an unknown one is NO_SUCH_ENTRY. For v2, id ~0 allocates one.
func (st *state) memifSocketAddDel(isAdd bool, id uint32, filename string, v2 bool) (uint32, int32) {
	if id == 0 || (id == NoIndex && (!v2 || !isAdd)) {
		return id, errInvalidArgument
	}
	if !isAdd {
		switch {
		case st.memifSock[id] == "":
			return id, errNoSuchEntry
		case st.memifSocketUsers(id) > 0:
			return id, errUnexpectedIntfState
		}
		delete(st.memifSock, id)
		return id, 0
	}
	if filename == "" {
		return id, errInvalidArgument
	}
	if !path.IsAbs(filename) {
		filename = path.Join("/run/vpp", filename)
	}
	if id == NoIndex {
		for id = 1; st.memifSock[id] != ""; id++ {
		}
	}
	if st.memifSock[id] != "" && st.memifSocketUsers(id) > 0 {
		return id, errUnexpectedIntfState
	}
	st.memifSock[id] = filename
	return id, 0
}

func memifSocketFilenameAddDel(c *call, m *memif.MemifSocketFilenameAddDel) api.Message {
	_, rv := c.st.memifSocketAddDel(m.IsAdd, m.SocketID, m.SocketFilename, false)
	return &memif.MemifSocketFilenameAddDelReply{Retval: rv}
}

func memifSocketFilenameAddDelV2(c *call, m *memif.MemifSocketFilenameAddDelV2) api.Message {
	id, rv := c.st.memifSocketAddDel(m.IsAdd, m.SocketID, m.SocketFilename, true)
	return &memif.MemifSocketFilenameAddDelV2Reply{Retval: rv, SocketID: id}
}

func memifSocketFilenameDump(c *call, _ *memif.MemifSocketFilenameDump) []api.Message {
	var ids []uint32
	for id := range c.st.memifSock {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []api.Message
	for _, id := range ids {
		out = append(out, &memif.MemifSocketFilenameDetails{SocketID: id, SocketFilename: c.st.memifSock[id]})
	}
	return out
}

// errSyscall4 is VPP's SYSCALL_ERROR_4 (-14), which memif_create gives when
// a master cannot listen on its socket file.
const errSyscall4 = int32(api.SYSCALL_ERROR_4)

// memifCreate creates memif<socket-id>/<id>: the socket must be registered
// (INVALID_ARGUMENT), the id free on it and the socket not used with the
// other role (SUBIF_ALREADY_EXISTS); ring_size a power of two (0: 1024),
// buffer_size 0: 2048. The first master on a socket listens on its file, on
// this host's file system as a VPP here would: when the directory of the
// file does not exist, or a file that is no socket is in the way, it fails
// with SYSCALL_ERROR_4 (VPP's run-time directory /run/vpp, where VPP puts
// relative filenames and creates their directories, is taken to exist; no
// file is created). An ethernet memif has the given MAC (a zero hw_addr: a
// random one) and VPP's MTU 9000; an IP-mode memif has no MAC (all zeros,
// hw_addr ignored) and MTU 0. The link stays down (no peer) unless
// SetLinkUp.
func (c *call) memifCreate(p MemifParams, hwAddr ethernet_types.MacAddress) (uint32, int32) {
	filename := c.st.memifSock[p.SocketID]
	if filename == "" {
		return NoIndex, errInvalidArgument
	}
	users := 0
	for _, i := range c.st.ifs {
		if i.Memif == nil || i.Memif.SocketID != p.SocketID {
			continue
		}
		users++
		if i.Memif.ID == p.ID || i.Memif.Role != p.Role {
			return NoIndex, errSubifAlreadyExists
		}
	}
	if p.RingSize == 0 {
		p.RingSize = 1024
	} else if p.RingSize&(p.RingSize-1) != 0 {
		return NoIndex, errInvalidArgument
	}
	if p.BufferSize == 0 {
		p.BufferSize = 2048
	}
	if p.Role == memif.MEMIF_ROLE_API_MASTER && users == 0 && !canListen(filename) {
		return NoIndex, errSyscall4
	}
	mac, mtu := toMAC(hwAddr), uint32(defaultMTU)
	switch {
	case p.Mode == memif.MEMIF_MODE_API_IP:
		mac, mtu = make(net.HardwareAddr, 6), 0
	case isZeroMAC(hwAddr):
		mac = randomMAC()
	}
	idx := c.st.addHW(&iface{Interface: Interface{
		Name: fmt.Sprintf("memif%d/%d", p.SocketID, p.ID), Kind: KindMemif, DevType: "memif",
		MAC: mac, LinkMTU: mtu, Memif: &p,
	}})
	return idx, 0
}

// memifRuntimeDir is the run-time directory of the simulated VPP, where its
// default socket is and relative socket filenames go.
var memifRuntimeDir = path.Dir(defaultMemifSocket)

// canListen tells whether a VPP on this host could listen on a memif socket
// file: one under VPP's run-time directory can (VPP made its directories),
// another needs its directory, and no file that is not a socket in the way.
func canListen(filename string) bool {
	if strings.HasPrefix(filename, memifRuntimeDir+"/") {
		return true
	}
	if fi, err := os.Stat(path.Dir(filename)); err != nil || !fi.IsDir() {
		return false
	}
	fi, err := os.Lstat(filename)
	return err != nil || fi.Mode()&fs.ModeSocket != 0
}

func memifCreate(c *call, m *memif.MemifCreate) api.Message {
	idx, rv := c.memifCreate(MemifParams{
		SocketID: m.SocketID, ID: m.ID, Role: m.Role, Mode: m.Mode, RxQueues: m.RxQueues, TxQueues: m.TxQueues,
		RingSize: m.RingSize, BufferSize: m.BufferSize, Secret: m.Secret, NoZeroCopy: m.NoZeroCopy,
	}, m.HwAddr)
	return &memif.MemifCreateReply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

func memifCreateV2(c *call, m *memif.MemifCreateV2) api.Message {
	idx, rv := c.memifCreate(MemifParams{
		SocketID: m.SocketID, ID: m.ID, Role: m.Role, Mode: m.Mode, RxQueues: m.RxQueues, TxQueues: m.TxQueues,
		RingSize: m.RingSize, BufferSize: m.BufferSize, Secret: m.Secret, NoZeroCopy: m.NoZeroCopy, UseDma: m.UseDma,
	}, m.HwAddr)
	return &memif.MemifCreateV2Reply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

func memifDelete(c *call, m *memif.MemifDelete) api.Message {
	i := c.st.get(uint32(m.SwIfIndex))
	if i == nil || i.Kind != KindMemif {
		return &memif.MemifDeleteReply{Retval: errInvalidSwIfIndex}
	}
	c.st.deleteIf(i.SwIfIndex)
	return &memif.MemifDeleteReply{}
}

// memifDump reports, as VPP 25.10 does, the run-time ring and buffer sizes,
// not the configured ones: 1 and 0 until a peer connects (SetLinkUp), and on
// a master also while connected; a connected slave reports its own sizes.
// An IP-mode memif reports the MAC 00:00:00:00:00:00.
func memifDump(c *call, _ *memif.MemifDump) []api.Message {
	var out []api.Message
	for _, i := range c.st.sortedIfs() {
		if p := i.Memif; p != nil {
			ring, buffer := uint32(1), uint16(0)
			if i.carrier && p.Role == memif.MEMIF_ROLE_API_SLAVE {
				ring, buffer = p.RingSize, p.BufferSize
			}
			out = append(out, &memif.MemifDetails{
				SwIfIndex: rvIndex(i.SwIfIndex), HwAddr: fromMAC(i.MAC), ID: p.ID, Role: p.Role, Mode: p.Mode,
				ZeroCopy: p.Role == memif.MEMIF_ROLE_API_SLAVE && !p.NoZeroCopy, SocketID: p.SocketID,
				RingSize: ring, BufferSize: buffer, Flags: c.st.flags(i), IfName: i.Name,
			})
		}
	}
	return out
}

// ---- TAP v2

const maxTapID = 1024 // TAP_MAX_INSTANCE

// tapCreate creates tap<id>: id ~0 takes the lowest free one, an id in use is
// INVALID_INTERFACE. The MAC is random only with use_random_mac (GoVPP does
// not apply its default true: unset, the MAC is mac_address, possibly zero).
// The host side defaults to the name tap<id> and a random MAC. A host name
// another TAP's host side has in the same namespace is NETLINK_ERROR (VPP
// renames the new link to it, which the kernel refuses: EEXIST); vppsim
// knows no other host links. A TAP has link as soon as it exists. The raw
// queue counts and ring sizes are kept in Tap. Without /dev/vhost-net
// (Options.NoVhostNet) it fails with SYSCALL_ERROR_1.
func (c *call) tapCreate(p TapParams, mac ethernet_types.MacAddress, tag string) (uint32, int32) {
	if c.s.opts.NoVhostNet {
		return NoIndex, errSyscall1
	}
	used := map[uint32]bool{}
	for _, i := range c.st.ifs {
		if i.Tap != nil {
			used[i.Tap.ID] = true
			if p.HostIfName != "" && i.Tap.HostIfName == p.HostIfName && i.Tap.HostNamespace == p.HostNamespace {
				return NoIndex, errNetlinkError
			}
		}
	}
	switch {
	case p.ID == NoIndex:
		for p.ID = 0; used[p.ID]; p.ID++ {
		}
	case p.ID >= maxTapID:
		return NoIndex, errInvalidArgument
	case used[p.ID]:
		return NoIndex, errInvalidInterface
	}
	if p.HostIfName == "" {
		p.HostIfName = fmt.Sprintf("tap%d", p.ID)
	}
	if p.HostMAC == nil {
		p.HostMAC = randomMAC()
	}
	m := toMAC(mac)
	if p.UseRandomMAC {
		m = randomMAC()
	}
	idx := c.st.addHW(&iface{carrier: true, Interface: Interface{
		Name: fmt.Sprintf("tap%d", p.ID), Kind: KindTap, DevType: "virtio", Tag: tag,
		MAC: m, LinkMTU: defaultMTU, Tap: &p,
	}})
	return idx, 0
}

type tapHost struct {
	mtuSet, macSet, ip4Set, ip6Set, gw4Set, gw6Set, nsSet, nameSet, bridgeSet bool
	mtu                                                                       uint32
	mac                                                                       ethernet_types.MacAddress
	ip4                                                                       ip_types.IP4AddressWithPrefix
	ip6                                                                       ip_types.IP6AddressWithPrefix
	gw4                                                                       ip_types.IP4Address
	gw6                                                                       ip_types.IP6Address
	ns, name, bridge                                                          string
}

func (h tapHost) apply(p *TapParams) {
	if h.mtuSet {
		p.HostMTU = h.mtu
	}
	if h.macSet {
		p.HostMAC = toMAC(h.mac)
	}
	if h.ip4Set {
		p.HostIP4Prefix = netip.PrefixFrom(netip.AddrFrom4(h.ip4.Address), int(h.ip4.Len))
	}
	if h.ip6Set {
		p.HostIP6Prefix = netip.PrefixFrom(netip.AddrFrom16(h.ip6.Address), int(h.ip6.Len))
	}
	if h.gw4Set {
		p.HostIP4GW = netip.AddrFrom4(h.gw4)
	}
	if h.gw6Set {
		p.HostIP6GW = netip.AddrFrom16(h.gw6)
	}
	if h.nsSet {
		p.HostNamespace = h.ns
	}
	if h.nameSet {
		p.HostIfName = h.name
	}
	if h.bridgeSet {
		p.HostBridge = h.bridge
	}
}

func tapCreateV2(c *call, m *tapv2.TapCreateV2) api.Message {
	p := TapParams{
		ID: m.ID, Flags: m.TapFlags, NumRxQueues: uint16(m.NumRxQueues), NumTxQueues: 1,
		RxRingSize: m.RxRingSz, TxRingSize: m.TxRingSz, UseRandomMAC: m.UseRandomMac,
	}
	tapHost{
		m.HostMtuSet, m.HostMacAddrSet, m.HostIP4PrefixSet, m.HostIP6PrefixSet, m.HostIP4GwSet, m.HostIP6GwSet,
		m.HostNamespaceSet, m.HostIfNameSet, m.HostBridgeSet, m.HostMtuSize, m.HostMacAddr, m.HostIP4Prefix,
		m.HostIP6Prefix, m.HostIP4Gw, m.HostIP6Gw, m.HostNamespace, m.HostIfName, m.HostBridge,
	}.apply(&p)
	idx, rv := c.tapCreate(p, m.MacAddress, m.Tag)
	return &tapv2.TapCreateV2Reply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

func tapCreateV3(c *call, m *tapv2.TapCreateV3) api.Message {
	p := TapParams{
		ID: m.ID, Flags: m.TapFlags, NumRxQueues: m.NumRxQueues, NumTxQueues: m.NumTxQueues,
		RxRingSize: m.RxRingSz, TxRingSize: m.TxRingSz, UseRandomMAC: m.UseRandomMac,
	}
	tapHost{
		m.HostMtuSet, m.HostMacAddrSet, m.HostIP4PrefixSet, m.HostIP6PrefixSet, m.HostIP4GwSet, m.HostIP6GwSet,
		m.HostNamespaceSet, m.HostIfNameSet, m.HostBridgeSet, m.HostMtuSize, m.HostMacAddr, m.HostIP4Prefix,
		m.HostIP6Prefix, m.HostIP4Gw, m.HostIP6Gw, m.HostNamespace, m.HostIfName, m.HostBridge,
	}.apply(&p)
	idx, rv := c.tapCreate(p, m.MacAddress, m.Tag)
	return &tapv2.TapCreateV3Reply{Retval: rv, SwIfIndex: rvIndex(idx)}
}

func tapDeleteV2(c *call, m *tapv2.TapDeleteV2) api.Message {
	i := c.st.get(uint32(m.SwIfIndex))
	if i == nil || i.Kind != KindTap {
		return &tapv2.TapDeleteV2Reply{Retval: errInvalidSwIfIndex}
	}
	c.st.deleteIf(i.SwIfIndex)
	return &tapv2.TapDeleteV2Reply{}
}

// swInterfaceTapV2Dump: sw_if_index ~0 for all TAPs, another value for that
// one (GoVPP's zero value asks about local0: nothing).
func swInterfaceTapV2Dump(c *call, m *tapv2.SwInterfaceTapV2Dump) []api.Message {
	var list []*iface
	for _, i := range c.st.ifs {
		if i.Tap != nil && (uint32(m.SwIfIndex) == NoIndex || uint32(m.SwIfIndex) == i.SwIfIndex) {
			list = append(list, i)
		}
	}
	slices.SortFunc(list, func(a, b *iface) int { return cmp.Compare(a.SwIfIndex, b.SwIfIndex) })
	var out []api.Message
	for _, i := range list {
		p := i.Tap
		d := &tapv2.SwInterfaceTapV2Details{
			SwIfIndex: i.SwIfIndex, ID: p.ID, TxRingSz: p.TxRingSize, RxRingSz: p.RxRingSize,
			HostMtuSize: p.HostMTU, HostMacAddr: fromMAC(p.HostMAC), TapFlags: p.Flags, DevName: i.Name,
			HostIfName: p.HostIfName, HostNamespace: p.HostNamespace, HostBridge: p.HostBridge,
		}
		if p.HostIP4Prefix.IsValid() {
			d.HostIP4Prefix = ip_types.IP4AddressWithPrefix{Address: p.HostIP4Prefix.Addr().As4(), Len: uint8(p.HostIP4Prefix.Bits())}
		}
		if p.HostIP6Prefix.IsValid() {
			d.HostIP6Prefix = ip_types.IP6AddressWithPrefix{Address: p.HostIP6Prefix.Addr().As16(), Len: uint8(p.HostIP6Prefix.Bits())}
		}
		out = append(out, d)
	}
	return out
}

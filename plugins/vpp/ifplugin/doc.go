// Package ifplugin configures VPP interfaces: the NB values
// config/vpp/v2/interfaces/<name> (vpp.interfaces.Interface) and their
// derived values (admin state, addresses, unnumbered, VRF), through the VPP
// binary API (package vppcalls, GoVPP v0.13.0, VPP 25.10).
//
// # Using it
//
//	m := vppconn.New(vppconn.Options{...})
//	p := ifplugin.New(m, log)
//	p.SetLinuxDisabled(noLinux)  // the agent runs without its Linux side
//	for _, a := range p.Areas() {
//		m.AddArea(a)             // before m.Run: the compatibility check
//	}
//	s.RegisterKVDescriptor(p.Descriptors()...)
//	w := ifplugin.NewLinkStateWatcher(m, s, log) // link states (OBTAINED)
//	w.SetDriftReporter(s)    // interfaces changed outside the agent (see Drift)
//	m.AddArea(w.Area())
//	go w.Run(ctx)            // and w.Resync() on every VPP (re)connect
//	go m.Run(ctx)
//
// Other plugins find an interface by logical name in the scheduler's
// metadata map of InterfaceDescriptorName (*Metadata: sw_if_index, the VPP
// process it is valid in, VPP's name, VRF, the value), and by sw_if_index
// with LookupBySwIfIndex. Their callbacks use SchedulerInterfaces and
// SchedulerInterfaceNames with their own context: inside a callback these
// read the map through the running scheduler's view (api.ViewOf(ctx)), as
// the scheduler's contract asks; only a caller that is no callback (a test
// calling a callback directly) reads it from the scheduler given. They depend on
// InterfaceKey(name) ("the interface exists"), AdminStateKey(name, true)
// ("it is up"), AddressKey / HasIPAddressKey ("it has addresses"). Register
// a Plugin's descriptors with one scheduler only: the derived descriptors
// read the metadata map that scheduler built.
//
// Every Create, Update, Delete and Retrieve, of the interfaces and of their
// derived values alike, makes its VPP calls with the context the scheduler
// gives it, each call bounded by the Manager's CallContext (the call
// timeout): when the scheduler closes, or the scheduler's own deadline for
// the callback passes, the request VPP has not answered yet is given up, no
// other is sent, and the callback fails (a failed Create still deletes the
// interface it made, see below). A callback never calls the scheduler: the
// derived descriptors read the metadata map they kept from
// MetadataMapFactory.
//
// # Ownership
//
// The VPP tag of every interface the agent creates is its logical name. An
// interface is the agent's when its tag is a valid logical name (the NB key
// InterfaceKey(tag) parses) and it is of a type the plugin creates
// (loopback, AF_PACKET, memif, TAP, sub-interface, VXLAN tunnel): Retrieve
// returns it under its tag with origin FromNB (even when no longer
// configured, so that a resync deletes it) and Delete removes it.
//
// Every other interface is foreign: local0, DPDK ports, tunnels of other
// kinds, and anything created by someone else (the VPP CLI, another
// program) without a tag or with a tag that is no logical name ("made by
// hand"). Retrieve
// returns it with origin FromSB under its VPP name as logical name
// (InterfaceKey("local0"), InterfaceKey("tap0"),
// InterfaceKey("GigabitEthernet0/8/0")), its value as VPP has it (MAC, MTU,
// addresses, VRF, type and link details) and its Metadata with Foreign set.
// The type is the model's where the model has one (loopback, AF_PACKET,
// memif, TAP, sub-interface, VXLAN tunnel, DPDK); local0, VPP's own
// interface, and kinds the model lacks are UNDEFINED_TYPE (JSON leaves the
// zero value out), and Metadata.DevType, shown with the value in dumps,
// says what VPP calls them ("local" for local0).
// The scheduler keeps it OBTAINED, with its derived values (admin state,
// addresses, ...): it shows in status and dumps, satisfies dependencies (a
// sub-interface's parent, an unnumbered donor, a bridge domain member, a
// route's outgoing interface) and is found by sw_if_index, but no callback
// ever changes or deletes it (Delete of a foreign value succeeds without a
// call; the derived descriptors refuse to configure it).
//
// The name space is shared: a foreign interface whose VPP name is the
// logical name of one of ours, or of a configured interface, is not
// returned (logged): the configured value gets an interface of its own and
// the foreign one is left alone. A configured value that takes over the key
// of an OBTAINED foreign interface is created anew (UpdateWithRecreate),
// never applied to the foreign interface.
//
// Because VPP reuses sw_if_index values, every Delete (of the interface and
// of its derived values) first checks that the interface at the index still
// carries the tag; when it does not, the interface is gone and the Delete
// succeeds.
//
// # A VPP restart
//
// A restarted VPP has none of the agent's interfaces, and its indexes are
// other interfaces' (its startup configuration's, another client's). The
// metadata carries the VPP process its index was given by (Metadata.VPPPID,
// vppconn.Manager.PID); once another process is connected the metadata map
// hides it (GetValue, SchedulerInterfaces, LookupBySwIfIndex): no index of
// the VPP before reaches the new one. A derived value, route, ARP entry or
// bridge domain member put meanwhile fails (retriably: "has no sw_if_index
// in the VPP connected now"); the resync after the connect finds the
// interfaces missing, creates them again, and then what depends on them,
// with the new indexes.
//
// # Interface types
//
//   - SOFTWARE_LOOPBACK: create_loopback (MAC given at creation).
//   - AF_PACKET: af_packet_create_v3 on a host interface (TPACKET_V3, one
//     queue each way, qdisc bypass, checksum offload/GSO; a random MAC unless
//     phys_address). With host_if_name it depends on the Linux interface
//     watcher's OBTAINED key linux/interface/host-name/<host_if_name>: it is
//     PENDING until the host interface is reported, and deleted (PENDING
//     again) when it goes. With linux_interface it depends on the Linux
//     interface's NB key config/linux/interfaces/v2/interface/<name> and
//     binds to the host interface named like that logical name: the Linux
//     interface must be in the agent's namespace with host_if_name empty or
//     equal to its logical name (a descriptor cannot read another value;
//     use host_if_name otherwise). When the agent runs without its Linux
//     side (SetLinuxDisabled) nothing reports or creates Linux interfaces:
//     the value waits all the same, PENDING, and its reason says the Linux
//     interface never comes (linux.disabled).
//   - MEMIF: the socket filename is registered with VPP first
//     (memif_socket_filename_add_del_v2, an id VPP picks; a registered
//     filename is reused), then memif_create_v2 (master/slave, id, mode,
//     secret, ring and buffer sizes, queues). socket_filename is required
//     (INVALID without). A relative filename is sent as it is: VPP puts it
//     under its run-time directory (unix { runtime-dir }, /run/vpp by
//     default; the agent finds it as the directory of VPP's default socket
//     0) and creates the directories it names. An absolute filename is
//     VPP 25.10's to take as it is: a master listens on it at once and
//     fails when its directory does not exist or VPP may not write there
//     (the error says so, naming the file; VPP only says "System call
//     error #4"); a slave only connects to it. An IP-mode memif has no MAC:
//     phys_address is INVALID there. The filename is unregistered when its
//     last memif is deleted.
//   - TAP: version 2 only (0 means 2), tap_create_v3 with host_if_name,
//     rx/tx ring sizes (default 256), GSO; the tag is set at creation.
//   - SUB_INTERFACE: create_subif on the parent, one dot1q tag, exact match,
//     outer VLAN = sub_id (1..4095). Depends on the parent's NB key; VPP
//     deletes it with its parent, the scheduler deletes it first.
//   - VXLAN_TUNNEL: vxlan_add_del_tunnel_v3 (VPP's vxlan plugin), an L2
//     (Ethernet) tunnel vxlan_tunnel<n> from src_address to dst_address
//     (one IP version), vni (24 bits), VPP's UDP port 4789, decapsulated to
//     l2-input (a bridge domain member, or an L3 interface with addresses).
//     As in the original agent, the interface's vrf is the encap VRF, the
//     table the encapsulated packets are routed in (VPP needs its table of
//     the tunnel's IP version at creation: the value depends on the VRF
//     table value models.VrfTableKey(vrf, ipv6) and waits, PENDING; the
//     tunnel is deleted before that table, whose deletion under a tunnel
//     crashes VPP 25.10), and the tunnel interface is bound to it like any
//     interface (the VRF derived value; without addresses, for the
//     tunnel's IP version). A multicast dst_address needs
//     multicast, the logical name of the interface the group is joined on
//     (a dependency on its NB key; unicast tunnels have none). VPP makes
//     the tunnel admin up with a random MAC: the tag, phys_address (when
//     set) and MTU follow at once, the admin state as a derived value.
//     src_address, dst_address, vni, multicast and vrf are fixed at
//     creation: a change re-creates the tunnel. VXLAN-GPE (gpe) is INVALID:
//     the VPP 25.10 the agent manages has no vxlan-gpe plugin. Delete reads
//     the tunnel's key (ends, VNI, encap VRF, port) at its index from
//     vxlan_tunnel_v2_dump and deletes by that key, as VPP requires.
//   - Any other type (DPDK, GRE_TUNNEL, ...) and UNDEFINED_TYPE are
//     INVALID with the reason, as are set_dhcp_client, TAP to_microservice
//     and enable_tunnel.
//
// # Interface descriptor (InterfaceDescriptorName)
//
//   - Validate: models.VPPInterface.CheckKey (field syntax, MTU 0..9216,
//     unnumbered together with ip_addresses, the link matching the type;
//     *models.ValidationError becomes api.InvalidValueError with the field
//     names), then the supported types and their limits (memif ring a power
//     of two, TAP ring sizes, VLAN range, no phys_address on a
//     sub-interface, which has its parent's MAC, or on an IP-mode memif,
//     which has none).
//   - Dependencies: AF_PACKET, SUB_INTERFACE and VXLAN_TUNNEL as above; none
//     otherwise.
//   - Unique: the names VPP keeps once (see One value per VPP name).
//   - Create: creates the interface by type, sets the tag, the MTU
//     (sw_interface_set_mtu [mtu,0,0,0], only when mtu != 0) and returns the
//     metadata. When anything after the creation fails, the interface is
//     deleted again before the error is returned (even when the failure is
//     the end of the callback's context), so that no untagged interface is
//     left behind and a retry starts afresh.
//   - Update: MAC (sw_interface_set_mac_address) and MTU in place; an MTU
//     of 0 or an empty phys_address leaves VPP's as it is. Admin state, VRF,
//     addresses and unnumbered change through the derived values.
//   - UpdateWithRecreate: a change of type or of the link (memif, TAP,
//     AF_PACKET, sub-interface, VXLAN settings), or of a VXLAN tunnel's vrf,
//     re-creates the interface; the values
//     depending on it are deleted first and created again after it.
//   - ValueComparator: the order of addresses, the case of the MAC, TAP
//     version 0/2 and two spellings of one memif socket path (path.Clean)
//     make no change. A relative socket filename and an absolute one are
//     different values, even where VPP's run-time directory makes them one
//     file (only VPP knows that directory); a Retrieve keeps the
//     configured spelling of the file VPP has.
//   - Delete: by type (delete_loopback, af_packet_delete by host name,
//     memif_delete, tap_delete_v2, delete_subif, vxlan_add_del_tunnel_v3 of
//     the tunnel's key); a missing interface is a success.
//   - Retrieve: dumps every interface with its addresses, VRF, unnumbered
//     state and type details; returns the agent's (origin FromNB) and the
//     foreign ones (origin FromSB, as VPP has them; see Ownership). For the
//     agent's, fields VPP reports faithfully are taken from VPP (type,
//     link settings: memif role, id, mode and socket, AF_PACKET host,
//     sub-interface parent and VLAN, TAP host name, rings and GSO, VXLAN
//     ends, VNI, multicast interface and encap VRF (the vrf of a VXLAN
//     tunnel); MAC and MTU when the configuration sets them). The MTU is
//     VPP's L3 MTU with no protocol MTU of its own (the agent sets
//     [mtu,0,0,0]); an IPv4, IPv6 or MPLS MTU set by hand is reported as
//     the interface's MTU, so a resync sets it back. What VPP does not report, or not faithfully, is
//     the configuration's: the memif secret and queue counts, the memif
//     ring and buffer sizes (VPP 25.10's memif_dump reports run-time sizes:
//     1 and 0 until a peer connects, and on a master also while connected;
//     a foreign memif reports none), the TAP version; so are VPP's defaults
//     for unset fields (TAP rings 256, TAP host name). So an in-sync VPP
//     retrieves exactly the configured values, and a memif is never
//     re-created by a resync unless its role, id, mode or socket differ (or
//     it is gone). The admin
//     state, the addresses (followed by those VPP has beyond them, which a
//     resync removes) and unnumbered are the configuration's: their derived
//     values have Retrieves of their own, which say whether VPP has them. So
//     a derived value that waits (a sub-interface's admin-up while its
//     parent is down) or that VPP refused (an address whose subnet another
//     interface has) does not make the interface differ from its value, and
//     a resync of that state updates nothing. The metadata carries the
//     value (Metadata.Value) for those Retrieves.
//     When VPP lacks the interfaces' own messages (area vppcalls.AreaName)
//     it reports nothing (see Limits); when it lacks those of a type, the
//     interfaces of that type are not looked for.
//   - Errors are retriable (VPP not connected, a VPP error), except when VPP
//     lacks the messages the value needs (*vppconn.IncompatibleError) or
//     the value cannot be applied at all (api.NonRetriable).
//
// # One value per VPP name
//
// Some things a value names VPP keeps once, and the model lets two values
// name them. The interface descriptor's Unique (api.UniqueName) claims
// them, so that the second value is INVALID instead of failing in VPP (or
// sharing the first's interface and removing it when deleted):
//
//   - a memif's id on its socket file: "vpp memif id 3 on socket
//     /run/memif/a.sock", field memif.id (VPP: SUBIF_ALREADY_EXISTS). The
//     file is the filename cleaned (path.Clean: "./a.sock" and "a.sock",
//     "/run//memif/a.sock" and "/run/memif/a.sock" are one file); a relative
//     filename is named as one in VPP's run-time directory ("vpp memif id 3
//     on socket a.sock in VPP's run-time directory"), not resolved against
//     that directory: Unique is pure, and only the connected VPP knows the
//     directory (see Limits);
//   - a sub-interface's sub_id on its parent: "vpp sub-interface id 10 of
//     interface trunk", field sub.sub_id (VPP: SUBIF_ALREADY_EXISTS); the
//     same id on two parents is fine;
//   - an AF_PACKET interface's host interface, whether given as
//     host_if_name or linux_interface: "vpp af_packet interface on host
//     interface veth1", field afpacket.host_if_name or
//     afpacket.linux_interface (VPP: IF_ALREADY_EXISTS; af_packet_delete
//     goes by host name, so the Delete of a second value would remove the
//     first's interface);
//   - a TAP's host_if_name, its link in VPP's network namespace: "vpp tap
//     host interface tap-a", field tap.host_if_name (VPP renames the new
//     link to it, which the kernel refuses while another link has the
//     name: NETLINK_ERROR). A TAP without host_if_name names nothing;
//   - a VXLAN tunnel's key in VPP, its destination, VNI and encap VRF, and
//     its source for an IPv4 unicast tunnel only: "vpp vxlan tunnel from
//     10.0.0.1 to 10.0.0.2 vni 13 encap vrf 0", "vpp vxlan tunnel to
//     2001:db8::2 vni 13 encap vrf 0", field vxlan.vni (VPP:
//     TUNNEL_EXIST; VPP 25.10 takes two IPv6 tunnels, or two IPv4
//     multicast ones, that differ in their source only for one, and
//     deletes by key, so the Delete of a second value would remove the
//     first's tunnel). A tunnel of that key made by someone else makes the
//     Create fail (retriably), naming VPP's tunnel in the way.
//
// A value using a name another valid value uses is INVALID with the error
// "memif.id: vpp memif id 3 on socket ... is already used by
// config/vpp/v2/interfaces/memif1" and the field in its details; nothing is
// sent to VPP for it. When the holder drops the name (deleted, changed,
// invalid) the scheduler validates the refused values again in key order
// and creates the first, in the same transaction, after the holder's
// Delete. Names start with "vpp": the Linux value adopting a TAP's host side
// (TAP_TO_VPP) or making an AF_PACKET's host interface names the same link
// on purpose (linuxifplugin.HostLinkName) and does not collide with them.
//
// Nothing else the model lets two values give is refused by VPP: the
// interface's tag is its logical name (the key); loopbacks may share a MAC;
// TAP instance ids and memif socket ids are VPP's to choose.
//
// # Derived values
//
// Each carries a *vppif.Interface with the interface's name and what the
// value is about. Their descriptors find the interface's sw_if_index in the
// metadata map (published by the scheduler as soon as the interface is
// created; derived values are created after their base and deleted before
// it); a Delete whose interface is gone succeeds.
//
//   - AdminStateKey(name, up), AdminStateDescriptorName: one of the two
//     keys always exists. Create sets the admin flag to the state
//     (sw_interface_set_flags); Delete of UP sets the interface down, of DOWN
//     does nothing. A sub-interface's UP depends on its parent's UP (VPP
//     refuses otherwise): it waits PENDING while the parent is down, and goes
//     down (PENDING) when the parent does. Retrieve (sw_interface_dump)
//     reports the key of each of the agent's interfaces whose admin state in
//     VPP is the one its value asks for (Metadata.Value); an interface that
//     differs reports none, so a resync sets it, or it keeps waiting.
//   - VRFKey(name, vrf, "v4"|"v6"), VRFDescriptorName, for vrf != 0, one
//     per IP protocol of the interface's addresses (VRFVersions; for an
//     interface without addresses, the IP version of a VXLAN tunnel's
//     ends, "v4" for the others; the original agent made one key,
//     "both", for an interface of both): Create binds the interface
//     to the VRF's table of that protocol (sw_interface_set_table), which
//     it does not create: the value depends on the VRF table value of that
//     protocol (models.VrfTableKey, l3plugin's descriptor) and waits,
//     PENDING, until it exists. Delete binds the interface back to table 0
//     for that protocol. Retrieve reports, per protocol, the key of the
//     table VPP has each of the agent's interfaces in, when not 0: a
//     binding that waits makes the interface differ in nothing, one changed
//     behind the agent's back is repaired by a resync, and a protocol the
//     value does not bind goes back to table 0.
//   - AddressKey(name, cidr), AddressDescriptorName: Create adds the
//     address (already there: success); Delete removes it (missing address or
//     interface: success). VPP keeps a subnet on one interface per VRF: an
//     address that overlaps another interface's is refused (VPP 25.10:
//     IPv4 ADDRESS_IN_USE, IPv6 DUPLICATE_IF_ADDRESS, the codes it also
//     gives an address the interface already has, so the interface's
//     addresses are dumped to tell), the error naming that interface and
//     its address; it is retriable (it
//     goes when the other interface lets the subnet go: the retries or the
//     next resync apply it). Retrieve (ip_address_dump per interface of the
//     agent's) reports the addresses VPP has, spelled as the value spells
//     them, without what the interface's Retrieve leaves out. In a
//     non-zero VRF an address depends on the VRF value of its protocol, so
//     addresses are
//     added after the interface moved and removed before it moves again, as
//     VPP requires. The property
//     HasIPAddressKey(name) (no descriptor) exists while the interface has at
//     least one address.
//   - UnnumberedKey(name), UnnumberedDescriptorName: the interface borrows
//     the addresses of interface_with_ip. It depends (AnyOf) on any
//     AddressKey of that interface: until one exists the interface works in
//     L2 only; when the last address goes the value is deleted first (the
//     interface is not deleted: it returns to L2) and waits, PENDING, to
//     borrow again. Create: sw_interface_set_unnumbered is_add; Delete: the
//     same with is_add false. Retrieve reads ip_unnumbered_dump and reports
//     the borrowing of the agent's interfaces, from any interface with
//     metadata (RetrieveDependencies: the interface descriptor, whose
//     metadata names the indexes); a foreign interface's borrowing is part
//     of its OBTAINED value.
//
// # Batches
//
// The interface, admin state and address descriptors have a Batch
// (api.KVDescriptor.Batch): their requests go to VPP pipelined on one
// stream (vppcalls.Pipe over vppconn.Manager.Pipeline), many in flight,
// each operation prepared and completed by the code of its Create or
// Delete and given its own result. A run of loopback Creates is created
// step by step for all of its loopbacks: every create_loopback, then every
// tag (and MTU) with one sw_interface_dump of every interface for VPP's
// names (the metadata), a loopback whose tag VPP refused being deleted
// again as Create does. Admin state and address Creates are one request
// each (an address VPP refuses is then explained, alone, as Create does).
// Deletes of loopbacks, admin states (UP: set down) and addresses are one
// request each too; the check a Delete makes first, that VPP still has
// the interface at its index under its tag, reads one sw_interface_dump
// of every interface per batch instead of one dump per Delete (an
// interface whose index now carries another tag is left alone, one gone
// is deleted with success, as alone). Everything else (Updates, other
// interface types) runs alone, in the batch's order. The Retrieves send
// their per-interface requests (ip_address_dump, sw_interface_get_table)
// pipelined too, the address dumps of up to 64 interfaces and families
// ended by one control ping (vppconn.Call.More: the details name their
// interface) instead of one ping each.
//
// # One interface dump per refresh
//
// The Retrieves of one refresh (a resync, a drift repair, the refresh after
// failures, an SB-view dump) share its memo (api.RefreshMemo): the
// interface descriptor's Retrieve dumps every interface with its addresses,
// tables and unnumbered state (vppcalls' DumpInterfaces), and the admin
// state, address and unnumbered Retrieves, which run after it
// (RetrieveDependencies), and l3plugin's route and ARP Retrieves read that
// dump instead of making their own (one sw_interface_dump, one
// ip_address_dump per interface and address family, one
// ip_unnumbered_dump). A Retrieve called alone, or first in its refresh,
// dumps what it needs itself (the address Retrieve: the addresses of the
// agent's interfaces and their donors only).
//
// # Drift
//
// An interface of the agent's deleted, or set to another admin state,
// outside the agent (the VPP CLI, another API client) is seen by the
// LinkStateWatcher from VPP's sw_interface_event when it has a drift
// reporter (SetDriftReporter: the scheduler). It reports InterfaceKey of a
// deleted interface, AdminStateKey (the key the value derives) of one in
// another admin state, all of one event burst in one ReportDrift call. The
// scheduler's DriftRepair transaction refreshes them with the Retrieves
// above, which report VPP's state field by field (the interface's
// Retrieve does not return a deleted one; the admin state's Retrieve
// returns the key only when VPP has the state asked for), and creates the
// interface again with its derived values, then what depends on it (routes
// and ARP entries of l3plugin, bridge-domain bindings of l2plugin,
// sub-interfaces), or sets the admin state again; with the scheduler's
// DriftReportOnly they stay MISSING, "out of sync with the SB: gone
// (deleted in VPP ...)" in their details, until a resync. The agent's own
// changes report nothing (an interface the agent deletes has no metadata
// left, its admin state is the one its value asks for) or, seen midway
// through a transaction, a refresh that finds them in sync.
//
// VPP sends no event for addresses, unnumbered, VRF, MAC or MTU changed
// outside the agent, nor for routes, ARP entries and bridge domains: those
// are found by the next full resync, which the daemon can run periodically
// (its optional periodic resync); the Retrieves report them faithfully.
//
// # Limits
//
// The compatibility check at connect has one area for what every
// interface needs (vppcalls.AreaName: loopbacks, sub-interfaces, settings,
// addresses, dumps) and one per interface type a VPP plugin provides
// (vppcalls.AfPacketAreaName, MemifAreaName, TapAreaName, VxlanAreaName).
// A VPP without memif_plugin.so disables the memif area only: memif values
// fail, naming the missing messages, and the other interfaces are managed
// as usual (likewise vxlan_plugin.so and the VXLAN values). A VPP
// without the messages of the interfaces' own area disables every interface
// value: the Retrieves report nothing (an error would leave the values as
// the scheduler knew them from the VPP before, CONFIGURED, with that VPP's
// indexes), so the values are created again and fail, naming the messages,
// and what depends on them waits (PENDING) until a compatible VPP connects.
// The link state
// of our interfaces is reported by LinkStateWatcher as OBTAINED values
// LinkStateKey (interface events, re-listed 100 ms after the first event of
// a burst, one SB notification for the whole burst, and every 30 s);
// the link state of untagged foreign interfaces is not reported. A foreign
// interface whose tag happens to be a valid logical name, on a type the
// plugin creates, is taken for one of ours (and deleted by a resync when no
// longer configured). What VPP does not report faithfully (memif secret,
// queue counts, ring and buffer sizes) is not compared, so a change of it
// made behind the agent's back (a memif made again by hand with the same
// role, id, mode and socket) is not found. The model has one vrf for both
// IP protocols; the interface is bound to it for the protocols of its
// addresses only (an unnumbered interface, which has none, for IPv4: its
// IPv6 traffic stays in table 0). A memif socket
// filename is unregistered when no memif uses it any more, whoever
// registered it. What Unique cannot tell, VPP refuses, and the Create
// fails (retriably) naming the memif in the way ("memif id 3 on socket
// /run/vpp/a.sock is already used by VPP's memif memif1/3 (tag m1)"): a
// relative and an absolute filename of one file with one id, a memif made
// by someone else, and a master and a slave on one socket file (VPP wants
// one role for all memifs of a socket; unique names cannot say so). VPP keeps
// the sub_ids of a parent's hardware interface, so a sub-interface of a
// sub-interface shares the ids of its parent's parent, which Unique does
// not see either; and a TAP host_if_name VPP gave a TAP without one
// (tap0, ...) or any other link of VPP's namespace has fails in VPP. Key parsing takes
// the fixed parts from the end of a key: a logical name that itself contains
// "/address/static/", "/admin-state/" or "/vrf/" segments confuses it.
package ifplugin

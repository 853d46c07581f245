// Package vppsim is a stateful stand-in for VPP 25.10 that serves VPP's binary
// API on a unix socket, for tests only (no production code may import it).
//
// It speaks the real socket protocol, so GoVPP v0.13.0's socket client
// (go.fd.io/govpp/adapter/socketclient), its core (channels, streams, RPC
// service clients, health checks, reconnects) and its codec are exercised as
// against a real VPP:
//
//   - framing: each message is preceded by a 16-byte header whose bytes 8..11
//     hold the big-endian length of the message;
//   - handshake: the client sends sockclnt_create with the id 15 (hard-coded
//     in GoVPP) and gets sockclnt_create_reply with its client index and the
//     message table (name_crc -> id). The table holds the messages listed
//     below with the CRCs of GoVPP v0.13.0's bindings (the same as VPP 25.10),
//     memclnt at VPP's fixed ids (sockclnt_create 15 ... control_ping 23,
//     control_ping_reply 24) and the rest from id 100 on;
//   - replies and details echo the request's context; GoVPP ends a dump with
//     control_ping, whose reply (carrying vpe_pid) comes after the details;
//   - events (sw_interface_event) carry no context and go to the connections
//     that registered with want_interface_events;
//   - unknown ids are ignored, as VPP does. A message that is not in the table
//     (Options.Omit, or one the simulator does not have) cannot be sent by
//     GoVPP at all, and Channel.CheckCompatiblity reports it incompatible.
//
// # Using it
//
//	s, err := vppsim.Start(vppsim.Options{SocketPath: dir + "/api.sock"})
//	defer s.Close()
//	conn, err := govpp.Connect(s.SocketPath())
//	...
//	s.Interfaces(); s.BridgeDomains(); s.Routes(); s.Neighbors(); s.Calls()
//
// Test controls: FailNext (the next n requests of a message get a Retval),
// Delay (replies to a message come late; the connection is busy meanwhile),
// Hold (VPP hangs on a message: its requests are neither carried out nor
// answered, and their connections are busy, until the release; Held counts
// the requests waiting),
// Restart (VPP restarted: all clients dropped, all state lost, new vpe_pid,
// same socket), RestartWith (restarted with other plugins or another startup
// configuration: Omit, StartupLoopbacks), SetLinkUp (carrier of a device: host link, memif peer),
// Options.Omit (message table without some messages), Options.StartupLoopbacks
// (untagged loopbacks taking the first indexes), Options.HostIfExists
// (which host interfaces AF_PACKET can bind to), Options.NoVhostNet (TAP
// creation fails as on a host without /dev/vhost-net). Snapshots (Interfaces,
// Interface, BridgeDomains, Routes, Tables, Neighbors, MemifSockets) are
// copies; Calls lists every message received, from every client, handshake,
// control pings and GoVPP health checks included.
//
// # As a process
//
// The command tests/vppsim/cmd/vppsim serves a simulator on a socket until
// it is interrupted: a VPP for the agent where there is none, and for the
// VPP plugins' tests in their real-VPP mode, which checks that mode (skips,
// cleanup, no assumption of an empty VPP) without a VPP:
//
//	go run ./tests/vppsim/cmd/vppsim -socket /tmp/vpp.sock &
//	bin/agent --vpp-socket /tmp/vpp.sock ...
//	VPP_API_SOCKET=/tmp/vpp.sock go test -count=1 ./plugins/vpp/...
//
// Its flags: -pid, -host-ifs (the host interfaces AF_PACKET can bind to;
// default any), -no-vhost-net, -omit, -startup-loopbacks, -v. Its state lives as long as the
// process, like a VPP's; it is a test tool, never built into the daemon.
//
// # Messages
//
//	memclnt      sockclnt_create, sockclnt_delete, memclnt_keepalive, control_ping
//	vpe          show_version ("25.10-release"), show_vpe_system_time
//	interface    sw_interface_dump, sw_interface_set_flags, sw_interface_set_mtu,
//	             hw_interface_set_mtu, sw_interface_set_mac_address,
//	             sw_interface_get_mac_address, sw_interface_tag_add_del,
//	             sw_interface_add_del_address, sw_interface_set_unnumbered,
//	             sw_interface_set_table, sw_interface_get_table, create_loopback,
//	             create_loopback_instance, delete_loopback, create_subif,
//	             create_vlan_subif, delete_subif, want_interface_events
//	             (+ sw_interface_event)
//	ip           ip_address_dump, ip_unnumbered_dump, ip_table_add_del,
//	             ip_table_dump, ip_route_add_del, ip_route_add_del_v2,
//	             ip_route_dump, ip_route_v2_dump
//	ip_neighbor  ip_neighbor_add_del, ip_neighbor_dump
//	l2           bridge_domain_add_del, bridge_domain_add_del_v2,
//	             bridge_domain_dump, sw_interface_set_l2_bridge, bd_ip_mac_add_del,
//	             bd_ip_mac_dump, bridge_flags, bridge_domain_set_mac_age,
//	             sw_interface_set_l2_xconnect, l2_xconnect_dump, l2fib_add_del,
//	             l2_fib_table_dump
//	af_packet    af_packet_create, af_packet_create_v2, af_packet_create_v3,
//	             af_packet_delete, af_packet_dump
//	memif        memif_socket_filename_add_del, memif_socket_filename_add_del_v2,
//	             memif_socket_filename_dump, memif_create, memif_create_v2,
//	             memif_delete, memif_dump
//	tapv2        tap_create_v2, tap_create_v3, tap_delete_v2, sw_interface_tap_v2_dump
//	acl          acl_add_replace, acl_del, acl_dump, acl_interface_add_del,
//	             acl_interface_set_acl_list, acl_interface_list_dump,
//	             macip_acl_add, macip_acl_add_replace, macip_acl_del,
//	             macip_acl_dump, macip_acl_interface_add_del,
//	             macip_acl_interface_get, macip_acl_interface_list_dump
//	vxlan        vxlan_add_del_tunnel_v3, vxlan_tunnel_v2_dump
//	nat44_ed     nat44_show_running_config, nat44_ed_plugin_enable_disable,
//	             nat44_forwarding_enable_disable, nat44_interface_add_del_feature,
//	             nat44_interface_dump, nat44_ed_add_del_output_interface,
//	             nat44_ed_output_interface_get (+ details, then the reply),
//	             nat44_add_del_address_range, nat44_address_dump,
//	             nat44_add_del_static_mapping_v2, nat44_static_mapping_dump,
//	             nat44_add_del_lb_static_mapping, nat44_lb_static_mapping_dump,
//	             nat44_add_del_identity_mapping, nat44_identity_mapping_dump
//
// with their replies and details (X -> X_reply, X_dump -> X_details).
//
// # Behaviour
//
// Errors come back as the reply's Retval (GoVPP turns it into an
// api.VPPApiError) with VPP's codes: -1 UNSPECIFIED, -2 INVALID_SW_IF_INDEX,
// -3 NO_SUCH_FIB, -6 NO_SUCH_ENTRY, -7 INVALID_VALUE, -9 UNIMPLEMENTED,
// -10 INVALID_SW_IF_INDEX_2, -11 SYSCALL_ERROR_1, -14 SYSCALL_ERROR_4,
// -30 FEATURE_DISABLED,
// -31 INVALID_REGISTRATION, -54 NO_MATCHING_INTERFACE, -55 INVALID_VLAN, -60 ADDRESS_NOT_FOUND_FOR_INTERFACE,
// -68 SUBIF_ALREADY_EXISTS, -71 INVALID_INTERFACE, -73 INVALID_ARGUMENT,
// -74 UNEXPECTED_INTF_STATE, -79 IF_ALREADY_EXISTS, -98 INVALID_SUB_SW_IF_INDEX,
// -105 ADDRESS_IN_USE, -114 ADDRESS_FOUND_FOR_INTERFACE, -119 BD_ALREADY_EXISTS,
// -120 BD_IN_USE, -121 BD_NOT_MODIFIABLE, -122 BD_ID_EXCEED_MAX,
// -127 DUPLICATE_IF_ADDRESS, -145 NETLINK_ERROR, -152 BD_ALREADY_HAS_BVI, -158 NO_PATHS_IN_ROUTE.
// A failed request changes nothing.
//
// Zero values are taken as VPP takes them, since GoVPP does not apply the
// default= values of the API: is_add/enable false means delete/disable;
// sw_if_index 0 is local0, so sw_interface_dump, sw_interface_tap_v2_dump,
// ip_unnumbered_dump and ip_neighbor_dump list only local0's when
// sw_if_index is left 0 (use ~0 for all); bridge_domain_dump returns nothing
// for bd_id 0 or an unknown id, and nothing at all for any sw_if_index but
// ~0 (VPP 25.10's handler does not implement that filter: use ~0 for both
// and read the members); tap_create id 0 is tap0 (~0 allocates); use_random_mac /
// use_random_hw_addr false means the given (possibly zero) MAC is used.
//
// The behaviours below were checked against VPP 25.10 (v25.10-release, the
// build of ../shared/vpp), where the plugins' tests run one test body
// against both; the Limits say what vppsim does not imitate.
//
// Interfaces: local0 (sw_if_index 0) always exists. Indexes are allocated
// after it and a freed index is reused first (VPP's pools). Names: loop<n>
// (lowest free instance; MAC de:ad:00:00:00:<n> when none given), host-<ifname>
// (AF_PACKET), memif<socket-id>/<id>, tap<id>, <parent>.<sub-id>; dev types
// "local", "Loopback", "af-packet", "memif", "virtio". Link: a loopback or
// AF_PACKET has link while admin up, a TAP from creation, a memif only once a
// peer connects (SetLinkUp), local0 never; a sub-interface reports its
// parent's link, and can be set admin up only while its parent is up.
// MTU: sw_interface_set_mtu sets the four sw MTUs (L3, IP4, IP6, MPLS; VPP
// shows "9000/0/0/0" by default; AF_PACKET has link and L3 MTU 9000, not its
// host link's; a sub-interface and an IP-mode memif start at 0/0/0/0; a
// protocol MTU alone, as "set interface mtu ip4" sets it, is reported as
// 0/1200/0/0); hw_interface_set_mtu the link MTU and the L3 MTU
// (UNSUPPORTED on a loopback). MAC: a sub-interface and an IP-mode memif
// report 00:00:00:00:00:00 and setting theirs is UNIMPLEMENTED.
//
// Memif: memif_dump reports run-time values, not the configured ones: ring
// size 1 and buffer size 0 until a peer connects (SetLinkUp), and on a
// master also while connected (only a connected slave reports its own
// sizes); no secret. A master whose absolute socket path has no directory,
// or a file that is no socket, fails with SYSCALL_ERROR_4 (vppsim looks at
// this host's file system and takes paths under /run/vpp as existing); its
// socket stays registered. An id already used on the socket, or a socket
// used by memifs of the other role, is SUBIF_ALREADY_EXISTS; so is a
// sub_id already used on the parent's hardware interface.
//
// TAP: a host_if_name that the host side of another TAP has, in the same
// host namespace, is NETLINK_ERROR: VPP 25.10 creates the link and renames
// it, which the kernel refuses (EEXIST); the link is removed again. vppsim
// knows no host links but its TAPs' (read from VPP's tap.c, not run: TAP v2
// needs /dev/vhost-net, which the test host lacks).
//
// Deleting an interface deletes its sub-interfaces and removes its
// addresses, its bridge-domain membership (and BVI / UU-fwd role), its
// dynamic neighbours and the unnumbered setting of interfaces that
// borrowed its addresses. As on VPP, its static neighbours and the route
// paths through it stay under its sw_if_index (ip_neighbor_dump lists them,
// for all interfaces or for that index), and the next interface that gets
// that index has them; until then a neighbour or a route path through the
// missing index cannot be added or deleted (ip_neighbor_add_del
// INVALID_SW_IF_INDEX, ip_route_add_del NO_MATCHING_INTERFACE), while
// deleting or replacing the whole route without that path works. An
// interface going admin down drops its dynamic neighbours (static ones
// stay); ip_neighbor_add_del without STATIC over a static entry changes
// nothing with the same MAC and is INVALID_SW_IF_INDEX with another.
// Subscribers get sw_interface_event (with their pid), as VPP 25.10 sends
// it (checked against it: create, admin up and down, delete of loopbacks
// and sub-interfaces): when an interface is created (flags 0, or the up
// states it starts with: a TAP's link), when its admin state changes, when
// the link state of an interface that is not a sub-interface changes, and
// when it is deleted (deleted=true, flags 0; a parent's sub-interfaces
// each get one). One event per interface and request. Flags are VPP's:
// the states that went up (ADMIN_UP, LINK_UP; an admin up of a loopback
// brings its link up, so both), not the interface's state: a change to
// down, or a carrier loss under an admin-up interface, sends flags 0. Tags,
// addresses, VRF, MTU and MAC send no event; neither does a request that
// changes nothing (admin up of an up interface).
//
// Addresses: listed by ip_address_dump in the order added, with host bits.
// Adding one the interface already has (any prefix length), or one in
// another interface's subnet, is ADDRESS_IN_USE for IPv4 and
// DUPLICATE_IF_ADDRESS for IPv6 (VPP answers both cases alike). An
// unnumbered interface lists none of its donor's addresses in
// ip_address_dump (VPP shows the subnet on the donor only); the borrowing is
// reported by ip_unnumbered_dump and the Interface snapshot.
//
// Routes: tables other than 0 must be created with ip_table_add_del first.
// Each FIB source has its own paths for a prefix: ip_route_add_del adds and
// removes those of the API source (SourceAPI), ip_route_add_del_v2 those of
// route.src (0: the API's; SourceCLI stands for VPP's "ip route add"; a
// source that is not one of VPP's built-in ones is INVALID_VALUE). Without
// is_multipath an add replaces the source's paths and a delete removes
// them; with it, the given paths are added or removed. ip_route_dump shows
// the whole table as VPP does: the routes added through the API and the
// entries VPP makes itself (default drops of the default-route source;
// class D/E and broadcast drops of the special source; the attached subnet,
// local /32, network and broadcast drops of the addresses of admin-up
// interfaces in the table, source interface; neighbour /32s, source
// adjacency), each entry with the paths of its best source (VPP's
// priorities: special, interface, API, CLI, adjacency, default-route).
// ip_route_v2_dump adds the best source (route.src) and, with a non-zero
// src, lists only the entries whose best source it is. Routes() lists the
// routes added through the API, with their Source. Deleting a table through
// the API only ends the API's hold on it: the table and its routes go once
// nothing holds it (no interface bound to it, no route path of any table
// resolving in it).
//
// Bridge domains: bd 0 is reserved (adding it is BD_ALREADY_EXISTS;
// deleting it, bridge_flags and bridge_domain_set_mac_age on it
// BD_NOT_MODIFIABLE); sw_interface_set_l2_bridge into an unknown domain
// creates it (learn, forward, flood, uu-flood); a domain with members cannot
// be deleted. bridge_domain_dump lists the BVI first, then the members in
// the order they joined (a UU-fwd port is the domain's uu_fwd_sw_if_index,
// not a member). sw_interface_set_l2_bridge checks the port type first
// (INVALID_VALUE, also when disabling); disabling ignores bd_id and takes
// the interface out of whatever domain it is in; enabling takes it out of
// its old domain first, so a refused second BVI (BD_ALREADY_HAS_BVI) has
// already taken it out of its old domain, as on VPP. bd_ip_mac_add_del: a
// delete must give the entry's MAC (UNSPECIFIED otherwise, nothing
// deleted), adding a known IP re-points it, bd_id 0 is BD_NOT_MODIFIABLE;
// bd_ip_mac_dump lists a domain's IPv4 entries before its IPv6 ones.
//
// Cross-connects and the L2 FIB (h_l2x.go): an interface is in one L2
// mode, a bridge domain member or a cross-connect's receive interface:
// sw_interface_set_l2_xconnect takes it out of its domain, joining a domain
// ends its cross-connect, and disabling either puts it in L3 mode whatever
// mode it is in. A cross-connect to a missing interface is
// INVALID_SW_IF_INDEX; one whose transmit interface is deleted stays, one
// whose receive interface is deleted goes and puts that interface's
// transmit interface in L3 mode. The FIB is keyed by bd_index (the lowest
// free from 1, bd 0 has 0): l2fib_add_del needs the domain (NO_SUCH_ENTRY);
// a forwarding entry's interface must be a member of a domain, any
// (INVALID_SW_IF_INDEX); an add replaces the entry; a filter is static,
// without interface; a delete must name the entry's interface (not a
// filter's; NO_SUCH_ENTRY otherwise, and for a missing entry). A BVI's MAC
// is in its domain's FIB (static, BVI) while it is the BVI; static entries
// stay when their interface leaves or is deleted, and when their domain is
// deleted (l2_fib_table_dump shows them with bd_id ~0), and the next
// domain that gets that bd_index has them. L2FIB and XConnects are the
// snapshots.
//
// ACLs (h_acl.go): IP and MAC-IP ACLs are two pools (a new ACL gets the
// index freed last, else the next). acl_add_replace refuses a prefix with
// host bits or beyond its family's length, or source and destination of
// different families (INVALID_SRC_ADDRESS, INVALID_DST_ADDRESS), a reversed
// port or ICMP range (INVALID_VALUE_2), a tag of 64 bytes or more
// (INVALID_VALUE, MAC-IP ACLs too) and an unknown acl_index (NO_SUCH_ENTRY);
// zero rules and any action are taken; MAC-IP rules are not checked (host
// bits kept). acl_del of an ACL in an interface's list is
// ACL_IN_USE_INBOUND / _OUTBOUND; macip_acl_del takes the ACL off its
// interfaces. acl_interface_set_acl_list: INVALID_SW_IF_INDEX, then
// NO_SUCH_ENTRY for an unknown ACL (nothing changed); n_input is capped to
// the count; the output list is set first, then the input list, and an ACL
// twice in a list is retval 1 (VPP ORs the two results), a duplicate in
// the input list leaving the new output list in place.
// acl_interface_add_del appends (ACL_IN_USE_* when there already) or
// removes (NO_SUCH_ENTRY when not there). acl_interface_list_dump of ~0
// lists every interface, those without ACLs too. One MAC-IP ACL per
// interface: an add replaces it, a delete ignores acl_index and takes off
// whatever the interface has (NO_SUCH_ENTRY when none);
// macip_acl_interface_list_dump of ~0 lists the interfaces that have one,
// of an index a one-entry list (~0 for none) while VPP's per-interface
// vector reaches the index (it grows with the highest index given an ACL,
// and is what macip_acl_interface_get returns), nothing beyond. Deleting an
// interface takes its ACLs off it.
//
// VXLAN tunnels (h_vxlan.go): vxlan_add_del_tunnel_v3 checks, for an add
// and a delete alike, that the encap table of the source's IP version
// exists (NO_SUCH_FIB), both ends are of one IP version (INVALID_VALUE) and
// differ (SAME_SRC_DST), and a multicast destination has an existing
// interface (INVALID_SW_IF_INDEX; a unicast tunnel keeps whatever index it
// is given); an IPv6 address whose first 12 bytes are zero is IPv4, as
// VPP's ip46 addresses make it. Ports 0 are 4789. A tunnel is keyed by its
// destination, source port, encap VRF and the low 24 bits of its VNI
// (VPP takes a larger VNI), and by its source for an IPv4 unicast tunnel
// only: an add of a key in use is TUNNEL_EXIST, a delete of an unknown one
// NO_SUCH_ENTRY (a delete goes by key; instance and decap next are not
// looked at). decap_next_index ~0 is l2-input (1), 0 drop, others
// INVALID_DECAP_NEXT. A tunnel is vxlan_tunnel<n>, n its instance (asked
// for, INSTANCE_IN_USE when taken, or its pool slot: the slot freed last,
// else the next), dev type "VXLAN", an Ethernet interface with a random
// 02:fe MAC (none with is_l3), admin up at creation, link while admin up,
// MTU 9000; it holds its encap table. vxlan_tunnel_v2_dump of ~0 lists the
// tunnels in pool order, of an index that tunnel or nothing.
//
// NAT44 (h_nat.go, nat44-ed): loaded disabled; while disabled the
// configuration messages are UNSUPPORTED (after INVALID_SW_IF_INDEX for an
// interface message), forwarding is taken, the dumps are empty, and
// nat44_show_running_config reports sessions 0. Enabling (sessions 0: 64512;
// static-mapping-only or connection-tracking: UNSUPPORTED;
// FEATURE_ALREADY_ENABLED when enabled) resets forwarding; disabling
// (FEATURE_ALREADY_DISABLED when disabled) removes every NAT setting.
// Interface features: adding one the interface has is success; the output
// feature excludes the inside and outside ones both ways (VALUE_EXIST);
// deleting from an interface without features is NO_SUCH_ENTRY, deleting
// either feature of an interface with one takes that one off. Addresses
// are two vectors (plain, twice-NAT), added and deleted address by address
// up to the first failure (VALUE_EXIST, NO_SUCH_ENTRY), a deleted
// address's place taken by the last one; a last address below the first is
// nothing. Static, load-balanced and identity mappings share one key, the
// external endpoint (address alone for an address mapping): a second is
// VALUE_EXIST; identity mappings hold a VRF per entry under the first
// entry's tag. A mapping with an interface (any index but ~0, unchecked)
// is a record to resolve, kept until deleted (the interface deleted too),
// dumped after the mappings with the interface, no address and only its
// twice-NAT and address-only flags; while its interface has an IPv4
// address the dumps also list the mapping of that address (the first
// one), which holds the endpoint. Load-balanced mappings need two locals
// (INVALID_VALUE) and out2in-only or the address in the plain pool
// (NO_SUCH_ENTRY); their affinity is not dumped. Deleting a static mapping
// goes by external endpoint (success, nothing deleted, for a load-balanced
// one); deleting a load-balanced one that is static is INVALID_VALUE.
// Deleting an interface takes its features off. vppsim checks the
// external endpoint of a mapping only (VPP also checks the local one of a
// mapping that is not out2in-only), dumps interfaces in index order, and
// has no sessions.
//
// # Limits
//
// No data plane (no packets, no learned MACs, no dynamic neighbours, no
// counters or stats segment). Only the listed messages; other VPP messages are
// absent from the table. Not imitated: three ways to crash VPP 25.10 (SIGSEGV),
// ip_neighbor_flush of all interfaces while a deleted interface's static
// neighbour is kept (vppsim has no ip_neighbor_flush), deleting the last
// route of a VRF table deleted through the API while that route still held
// it, and deleting (ip_table_add_del) the encap table of a VXLAN tunnel
// (vppsim keeps the table while the tunnel holds it); the /32 FIB entries of the neighbours kept on deleted interfaces; the
// order of ip_neighbor_dump (VPP's pool order); neighbour ageing and
// learning; memif socket ids allocated for ~0 (VPP picks random free ones,
// vppsim the lowest from 1: memif1/3 rather than memif1476291629/3), and no
// memif socket files are made; an AF_PACKET MAC change also changing the host
// link's MAC; bridge_domain_add_del_v2 with bd_id
// ~0 takes the lowest free id (VPP picks a pseudo-random unused one); the
// order of a family's ARP termination entries (VPP's is hash order); the
// resulting_feature_bitmap of bridge_flags. The l2 error codes were checked
// against VPP 25.10 (tests/vppsim and l2plugin tests run one body against
// both); error codes for other less common failures are chosen to
// match VPP's code as far as known, not verified against a running VPP, and
// the paths of the routes VPP makes itself are approximations: tests should
// not depend on them. The L2 FIB has no learning and no ageing, lists its
// entries by bd_index and MAC (VPP in hash order), and a BVI's MAC change
// does not move the BVI's entry. One request at a time per connection (a delayed or
// held request holds the connection's later ones), connections are served
// concurrently over one state lock. Events are sent per request, where VPP batches the
// changes its event process sees at once (an admin up and down in quick
// succession may come from VPP as one event with ADMIN_UP); they are
// dropped when a subscriber's queue (8192 messages) is full.
package vppsim

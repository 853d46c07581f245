// Package l3plugin configures VPP layer 3: VRF tables (descriptor
// "vpp-vrf-table", NB key
// config/vpp/v2/vrf-table/id/<id>/protocol/<IPV4|IPV6>), routes
// ("vpp-route", config/vpp/v2/route/[if/<iface>/]vrf/<vrf>/dst/<ip>/<len>[/gw/<nh>])
// and ARP / neighbour entries ("vpp-arp", config/vpp/v2/arp/<iface>/<ip>),
// through GoVPP (go.fd.io/govpp v0.13.0, VPP 25.10).
//
//	p := l3plugin.New(vppManager, ifplugin.SchedulerInterfaces(sched), logger)
//	p.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(sched)) // optional (Retrieve, see Routes and ARP entries)
//	vppManager.AddArea(p.Area()) // before vppManager.Run
//	sched.RegisterKVDescriptor(p.Descriptors()...) // after the VPP interface descriptor
//
// The interface side is ifplugin's: a logical interface name is turned into
// its sw_if_index by the InterfaceLookup (SchedulerInterfaces reads the
// metadata map of ifplugin.InterfaceDescriptorName; ifplugin.Metadata and
// *ifplugin.Metadata are both accepted). The callbacks pass it their
// context: the lookup and the lister read the map through the view of the
// scheduler running the callback (api.ViewOf), never by calling the
// scheduler.
//
// # VRF tables
//
// A VrfTable value is one IP table of VPP (ip_table_add_del; VPP's
// table_id, not its fib_index) of one protocol, named with its label (at
// most 63 bytes; empty: VPP's "ipv4-VRF:<id>" / "ipv6-VRF:<id>"). The
// values that need a table other than 0 depend on its value
// (models.VrfTableKey) and wait, PENDING, until it exists: the routes of
// its vrf_id (and via_vrf_id for INTER_VRF), and the VRF bindings of
// interfaces (ifplugin.VRFKey, one per protocol of the interface's
// addresses). Nothing else creates tables: a configuration that puts
// routes or interfaces in VRF 10 has VRF 10's table values too (the
// original agent's rule).
//
//   - Validate: models.VPPVrfTable.CheckKey (the label's length and
//     characters, the id, the protocol, the key). The original's
//     flow_hash_settings is not modelled (VPP reports none to read back):
//     a value with it does not decode.
//   - Create: ip_table_add_del add with the label as the name (which also
//     makes the API a holder of a table VPP already has under that name).
//     Table 0 of each protocol always exists and VPP ignores
//     ip_table_add_del for it: nothing is sent, and its label is not
//     applied. VPP cannot rename a table: when VPP has the table under
//     another name (someone else holds it: the CLI, interfaces bound to it,
//     routes through it, another API client), Create fails, VPP untouched,
//     naming the table's name (retriable: it passes once the table is
//     freed).
//   - Update: a new label. The agent's own table (Metadata) is deleted and
//     made again (UpdateWithRecreate), the routes and interface bindings in
//     it going first and coming back after it. Another's is not touched:
//     the Update fails (not retriable until the value changes), saying so.
//   - Delete: ip_table_add_del delete, which ends the API's hold: VPP
//     destroys the table once nothing else holds it (another holder keeps
//     it, with its name). Table 0 is never deleted; a table already gone,
//     or made in a VPP that has restarted since, is success.
//   - Retrieve: ip_table_dump (the one of the route dump of the refresh,
//     when its Prefetch made one: see Routes); every table but VPP's own
//     (id ~0) is reported, labelled with its name (an expected value that
//     VPP has as it asks is reported as is). Metadata (*VrfTableMetadata):
//     whether the table is the agent's (Owned) in VPP process VPPPID.
//   - ValueComparator: an empty label is VPP's default name.
//
// # Ownership of VRF tables
//
// VPP records who holds a table (its locks per source: API, CLI,
// interface, routes; "show ip fib" prints them), but ip_table_dump reports
// none of it, and a table's name is the user's label: the agent cannot mark
// its tables as it tags its interfaces and bridge domains. So:
//
//   - table 0 of each protocol is VPP's: reported with origin FromSB
//     (OBTAINED, never deleted), or as the configuration's value when it
//     has one, which is never sent to VPP;
//   - every other table is reported with unknown origin: the scheduler
//     takes it for the NB's when the configuration names it or the agent
//     created it (and deletes it when the configuration drops it), and for
//     someone else's otherwise (OBTAINED: never deleted, changed or
//     relabelled);
//   - a table is the agent's to delete and make again (a label change)
//     when the agent created it, or VPP has it as the configuration asks
//     (VrfTableMetadata.Owned); one VPP has under another name than the
//     configuration's may be someone else's and is left alone (Create and
//     Update fail, saying so). Deleting a table only ends the API's hold:
//     a table the CLI, interfaces or routes of others also hold stays.
//
// Consequences: a table the agent made and the configuration dropped while
// the agent was not running stays in VPP (OBTAINED, empty of the agent's
// routes and interfaces; delete it by hand); a label changed while the
// agent was not running is refused as another's (delete the table from VPP,
// or the value and add it again); another program using the binary API
// whose table the configuration names with its name shares the API's hold
// with the agent, and deleting the value destroys it.
//
// # Routes
//
//   - Validate: models.VPPRoute.CheckKey (the fields, the rules of each
//     route type: a DROP route has neither next hop nor outgoing
//     interface; an INTER_VRF route has no outgoing interface and a
//     via_vrf_id other than its vrf_id; an INTRA_VRF route has a next hop
//     or an outgoing interface; via_vrf_id only for INTER_VRF; then the
//     key), plus what VPP keeps: weight and preference 0..255 (8 bits).
//     Errors are api.InvalidValueError naming the fields.
//   - Dependencies: "interface" (ifplugin.InterfaceKey) when
//     outgoing_interface is set, and "VRF table <id> (IPv4|IPv6)"
//     (models.VrfTableKey) for each table other than 0 the route needs
//     (vrf_id, and via_vrf_id for INTER_VRF): the route waits (PENDING) for
//     them, and is deleted before them.
//   - Create: ip_route_add_del with is_multipath and one path: the outgoing interface's sw_if_index
//     and/or the next hop (a path without interface resolves in vrf_id);
//     DROP is a drop path; INTER_VRF a lookup in via_vrf_id; weight and
//     preference as given. Routes of different keys to one destination
//     (other next hops) are paths of one VPP route: each key adds and
//     removes its own path. Metadata (*RouteMetadata) keeps the sw_if_index
//     the path was added with.
//   - No Update: any change (type, weight, preference, via_vrf_id) deletes
//     the path and adds the new one.
//   - Delete: ip_route_add_del delete of the path; a path or table already
//     gone is success. A route whose path resolves in its own table (a next
//     hop without interface in a VRF other than 0) holds that table in VPP:
//     if someone deleted the table through the API, VPP kept it for such
//     paths, and removing the last one crashes VPP 25.10 (SIGSEGV). So
//     ip_table_add_del add (a no-op when the API holds the table) comes
//     first. VPP keeps the paths through an interface deleted by
//     someone else (under its sw_if_index, for the next interface that
//     gets it) and refuses to name that interface (NO_MATCHING_INTERFACE):
//     then the entry's API paths are dumped and replaced by the others
//     (ip_route_add_del without is_multipath), or deleted when none is
//     left.
//   - Retrieve: ip_table_dump, then ip_route_v2_dump (all sources) of every
//     table of VPP; in a resync these dumps start with the refresh
//     (Prefetch) and run while the interfaces are read, and the Retrieve
//     uses them when they were read from the VPP it reads now (the same
//     pid: after a VPP restart in between it dumps again). An expected route (the correlate values) is reported
//     (origin FromNB) when one of the paths of its destination is the path
//     it adds (type, next hop, and interface, or lookup table without one),
//     with VPP's weight and preference. Every other path of an entry whose
//     best FIB source is the API's is reported too, as the route value that
//     adds it, under that value's key (see Ownership): a route of the agent
//     that the configuration no longer has, which a full resync deletes.
//     The sw_if_index of a path is named through the interface metadata
//     (the expected routes' interfaces and, with SetInterfaceLister, every
//     interface: the agent's and the foreign, OBTAINED ones), checked
//     against VPP (see Interface indexes).
//   - ValueComparator: values that make the same VPP path are equal: host
//     bits of the destination, weight 0 and 1 (VPP's default), address
//     spellings.
//
// # Ownership of routes
//
// VPP keeps, per FIB entry, the sources that added it, and shows the paths
// of the best one; ip_route_v2_dump reports that source. The agent adds its
// routes with ip_route_add_del, whose source is the API's
// (FIB_SOURCE_API, 8). So a path of an entry whose best source is the API
// is taken for the agent's, and deleted by a full resync when no
// configured route makes it. Never reported, hence never deleted: the
// entries VPP makes itself (default, class D/E and broadcast drops of the
// special and default-route sources; the attached, local and
// network/broadcast entries of interface addresses, source interface;
// neighbours' host entries, source adjacency), the routes of the CLI
// ("ip route add", source CLI) and of control planes that register a FIB
// source of their own (fib_source_add, then ip_route_add_del_v2), and the
// paths of an API entry that no route value can make (local, ICMP or other
// special path types, path flags, MPLS labels, an interface without a
// logical name). An API route to a destination that a better source also
// has (an interface's attached subnet) is shown with that source's paths:
// when no longer configured it is not found, and stays in VPP.
//
// # ARP entries
//
//   - Validate: models.VPPARP.Validate and CheckKey.
//   - Dependencies: "interface" (ifplugin.InterfaceKey).
//   - Create and Update: ip_neighbor_add_del add with the STATIC flag when
//     static (VPP replaces an existing entry's MAC and flags in place).
//     UpdateWithRecreate from static to dynamic: VPP refuses to make a
//     static entry dynamic, so it is deleted and added again.
//   - Delete: ip_neighbor_add_del delete; an entry (or interface) already
//     gone is success. Entries depend on their interface, so the agent
//     deletes them before it: VPP keeps the static neighbours of a deleted
//     interface (see Limits).
//   - Retrieve: ip_neighbor_dump of all interfaces (sw_if_index ~0), IPv4
//     and IPv6: two calls whatever the number of interfaces. The entries of
//     the interfaces of the expected entries are kept (with
//     SetInterfaceLister, of every interface with metadata, the foreign
//     OBTAINED ones included; see Interface indexes); those under an index
//     of no interface (VPP keeps the static neighbours of a deleted
//     interface) are not. An expected entry found
//     is the NB's; a static entry no expected value names has an unknown
//     origin (OBTAINED, never deleted, unless the NB asks for it); dynamic
//     entries that are not expected are the data plane's and are not
//     reported.
//   - ValueComparator: MAC and address spellings aside.
//
// # One value per VPP object
//
// A route's key holds what makes its VPP path (table, destination, outgoing
// interface, next hop; a DROP or INTER_VRF route has neither: one per
// table and destination), an ARP entry's key its interface and
// address, all in the canonical spelling (pkg/models rejects any other:
// host bits, upper-case or zero-padded IPv6). So two values never name one
// path or one neighbour, and the plugin declares no unique names
// (api.UniqueName).
//
// # Interface indexes
//
// The Retrieves name sw_if_indexes through the interface metadata, and
// check it with one sw_interface_dump (the one the interface descriptor's
// Retrieve made earlier in the same refresh, when it did: the Retrieves of
// a refresh share it, see vppcalls.ListInterfacesOnce): an interface whose
// metadata names an index at which VPP has no interface of its name
// (tagged with it, as the agent's are, or named so, as foreign ones are) is
// left out, its routes and entries not found. Its metadata outlives an interface deleted
// by someone else while the Retrieves of a resync run, and VPP keeps the
// route paths and static neighbours of a deleted interface under its index
// (another interface may have taken it since): taken for the interface's,
// they kept the resync from creating the routes and entries again on the
// re-created interface.
//
// # Errors
//
// Every callback is idempotent, and makes its VPP calls with the context the
// scheduler gives it, each call bounded by the Manager's CallContext (the
// call timeout): a closing scheduler, or its deadline for the callback,
// gives up a request VPP has not answered and sends no other. Errors name
// the VPP message and the item; they are retriable (VPP not connected, an
// interface without metadata yet, a missing table) except when VPP lacks
// the area's messages (*vppconn.IncompatibleError: the area is disabled
// until a compatible VPP connects) and values that do not parse
// (api.NonRetriable). The Retrieves
// of a disabled area report nothing, so that after a VPP restart the routes
// and entries of the VPP before are not kept CONFIGURED: they are created
// again and fail, naming the messages. Interfaces are found through
// ifplugin's metadata, which hides the indexes of a VPP that has restarted
// since, and a route's metadata keeps the VPP process it was added to (its
// Delete in another process sends nothing): no index of the VPP before
// reaches the new one.
//
// Routes have a Batch (api.KVDescriptor.Batch): each operation is
// prepared as its Create or Delete prepares it (the interface's index; a
// Delete's ip_table_add_del, see Delete, is sent at once, ahead of the
// batch's routes), the ip_route_add_del of all go pipelined in
// the batch's order (vppconn.Manager.Pipeline), and each is completed as
// its Create or Delete completes it, with its own reply: a route VPP
// refuses fails alone. ARP entries have one too, the same way: the
// ip_neighbor_add_del of their Creates, Updates and Deletes pipelined, an
// entry VPP refuses failing alone.
//
// # Limits
//
//   - A route whose path is already in the table for another reason (a
//     default drop for a DROP route to 0.0.0.0/0, an attached prefix for an
//     interface route to the interface's own subnet) is taken as present:
//     the dump shows the best source's paths only.
//   - Another program adding routes through the binary API with
//     ip_route_add_del (the API source) in VPP's tables has them taken for
//     the agent's: a full resync deletes them. Such programs should use a
//     FIB source of their own.
//   - An interface deleted by someone else (not through the agent) leaves
//     its static neighbours and the route paths through it in VPP, under
//     its sw_if_index. No message removes such a neighbour while no
//     interface has that index (ip_neighbor_add_del: INVALID_SW_IF_INDEX;
//     ip_neighbor_flush of all interfaces crashes VPP 25.10), and the next
//     interface that gets the index has them: on an interface of the
//     agent's, such a neighbour is reported as a static entry of unknown
//     origin (OBTAINED), such a path as a route of the agent's that a full
//     resync deletes. When the agent's link-state watcher reports drift
//     (ifplugin.LinkStateWatcher.SetDriftReporter), the deletion is seen
//     within a second and repaired by one DriftRepair transaction: the
//     routes and entries on the interface are deleted (a route's path
//     through the missing index is replaced as above), the interface is
//     created again, and they are added back with its new index. Without
//     it, until the resync after the deletion, values put on that
//     interface are sent with its old index (and fail, or land on the
//     interface that took the index).
//   - VPP sends no event when a route or a neighbour is added, changed or
//     deleted: one changed by someone else is found by the next full
//     resync (the daemon's optional periodic resync), not at once.
//   - VPP flushes the dynamic neighbours of an interface that goes admin
//     down (and deletes them with the interface); the static ones stay. A
//     dynamic entry of the agent's is then missing, still CONFIGURED, until
//     a resync adds it again. A dependency on the interface being up
//     (ifplugin.AdminStateKey) would delete it first and add it back, but
//     makes every full resync of a restarted agent delete and re-add it: the
//     scheduler does not count a derived value (the admin state) as there
//     before the resync has processed its base value (the interface),
//     whose key sorts after the entry's.
//   - One path per route value; multipath flags, MPLS labels, next-hop
//     tables other than the route's VRF, and ICMP-unreachable/prohibit
//     routes are not modelled. Calls are synchronous (one request at a time).
package l3plugin

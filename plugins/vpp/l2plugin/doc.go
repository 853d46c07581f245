// Package l2plugin configures VPP bridge domains (descriptor
// "vpp-bridge-domain", NB key config/vpp/l2/v2/bridge-domain/<name>) and the
// membership of interfaces in them, one derived value per member
// ("vpp-bd-interface", key vpp/bd/<bd>/interface/<iface>, BDInterfaceKey),
// L2 cross-connects ("vpp-xconnect",
// config/vpp/l2/v2/xconnect/<receive_interface>) and static L2 FIB entries
// ("vpp-l2-fib", config/vpp/l2/v2/fib/<bridge_domain>/mac/<phys_address>),
// through GoVPP (go.fd.io/govpp v0.13.0, VPP 25.10).
//
//	p := l2plugin.New(vppManager, ifplugin.SchedulerInterfaces(sched), logger)
//	p.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(sched)) // optional, see Retrieve
//	vppManager.AddArea(p.Area()) // before vppManager.Run
//	sched.RegisterKVDescriptor(p.Descriptors()...) // after the VPP interface descriptor
//
// The interface side is ifplugin's: a logical interface name is turned into
// its sw_if_index by the InterfaceLookup, which reads the metadata the
// interface descriptor publishes (ifplugin.Metadata or *ifplugin.Metadata, in
// the metadata map of ifplugin.InterfaceDescriptorName, keyed by name). The
// callbacks pass it their context: SchedulerInterfaces and
// SchedulerInterfaceNames read the map through the view of the scheduler
// running the callback (api.ViewOf), never by calling the scheduler.
//
// # Ownership
//
// VPP keeps a tag per bridge domain (bd_tag, 63 bytes): the agent tags each
// domain it creates with its logical name, so that a restarted agent finds
// its domains. Untagged domains (someone else's) are never reported,
// changed or deleted, and their bd_ids are never used.
//
// # Names and ids
//
// The model gives a bridge domain no bd_id: the agent picks it (the lowest
// free one, see Create) and keeps it in the metadata, so no two values can
// ask for one bd_id. What a user names is the domain's logical name, the
// last part of its key and its VPP tag (at most 63 bytes, what VPP keeps,
// checked by Validate), unique as keys are. The only VPP resource two
// values can both name is an interface's L2 mode (VPP keeps an interface in
// one domain or one cross-connect), held exclusively by one binding or
// cross-connect at a time (see One L2 mode per interface); a cross-connect
// is keyed by its receive interface, a FIB entry by its domain and MAC, so
// two values never name one: the plugin declares no unique names
// (api.UniqueName; ifplugin does, for memif ids, sub-interface ids,
// AF_PACKET and TAP host interfaces).
//
// # Bridge domains
//
//   - Validate: models.VPPBridgeDomain.Validate and CheckKey (the key must be
//     the value's), plus the VPP ranges: mac_age and split_horizon_group are
//     8-bit in VPP (0..255). Errors are api.InvalidValueError naming the
//     fields (e.g. "interfaces[1].bridged_virtual_interface"); an invalid
//     value is not retried until it changes.
//   - Create: bridge_domain_add_del_v2 with the lowest bd_id from 1 that is
//     neither in VPP (bridge_domain_dump) nor in the metadata map, flood,
//     unknown-unicast flood, forward, learn, ARP termination, MAC age and the
//     tag, then one bd_ip_mac_add_del per ARP termination entry. A domain
//     already tagged with the name (an interrupted create, a lost reply) is
//     taken over and brought to the value. The metadata
//     (*BridgeDomainMetadata{Index, Interfaces}) keeps the bd_id across
//     updates, and the names of the value's interfaces; the binding
//     descriptor and BridgeDomainIndex read it from the metadata map.
//   - Update (in place, never a re-creation): the domain and its ARP
//     termination entries are read from VPP (bridge_domain_dump of its
//     bd_id, bd_ip_mac_dump), not taken from the old value, then
//     bridge_flags once for the flags to set and once for those to clear,
//     bridge_domain_set_mac_age when the age changes, and for the ARP
//     termination table exactly the entries removed (delete, with the MAC
//     VPP has: VPP deletes an entry only when given its MAC) and added or
//     re-pointed to another MAC (add, which VPP takes as a replace). A
//     domain VPP no longer has fails the Update (retriable; a resync creates
//     it again). A change of members only writes nothing: the bindings are
//     derived values.
//   - Delete: after its bindings; bridge_domain_add_del_v2 delete of the
//     bd_id, after checking that it still carries the tag (a domain already
//     gone is success). A domain that still has members the agent did not
//     put there fails with VPP's BD_IN_USE, saying so and naming their
//     sw_if_index.
//   - Retrieve: bridge_domain_dump (all) and bd_ip_mac_dump (all); every
//     domain whose tag is a valid name is reported with origin FromNB, its
//     bd_id as metadata. Members are mapped back from sw_if_index to logical
//     names: the agent's interfaces (those the expected domains name, and
//     every one with SetInterfaceLister) in any domain, a foreign (OBTAINED)
//     interface only in a domain whose value names it; members that map to
//     no name are left out, so left in the domain. The interfaces of an
//     expected domain are its expected ones followed by the members VPP has
//     that it does not name (a resync takes those out): the bindings carry
//     the membership, and the binding descriptor's Retrieve says which of
//     them VPP has. So a binding that waits (for its interface, or for
//     another domain to let the interface go), or that was refused, does
//     not make the domain differ from its value: a resync of
//     an in-sync VPP updates nothing. Values equivalent to the expected one
//     are returned as the expected one. RetrieveDependencies: the interface
//     descriptor.
//   - ValueComparator: the order of interfaces and ARP termination entries,
//     and the spelling of addresses and MACs, do not matter.
//   - DerivedValues: one binding per interface, its value the
//     BridgeDomain.Interface message (name, bridged_virtual_interface,
//     split_horizon_group).
//
// # Bindings
//
//   - Dependencies: "interface <iface>" (ifplugin.InterfaceKey(iface)): a
//     binding waits (PENDING) for its interface while the domain and its
//     other bindings work; and "interface <iface> in no other bridge domain
//     or cross-connect", an Exclusive dependency on the interface's L2 mode
//     (see "One L2 mode per interface").
//   - Create: one bridge_domain_dump of all domains (bd_id ~0), then
//     sw_interface_set_l2_bridge with Enable, the bd_id from the domain's
//     metadata, port type BVI when bridged_virtual_interface (else NORMAL)
//     and Shg = split_horizon_group, unless a domain that is not the agent's
//     has the interface (see below). It fails, VPP untouched, when VPP has no
//     domain with that bd_id and tag (sw_interface_set_l2_bridge would create
//     an untagged one), and when the binding is the BVI of a domain that has
//     another (VPP would take the interface out of its domain before it
//     refuses).
//   - Delete: sw_interface_set_l2_bridge with Enable false, only when the
//     dump of that domain (bridge_domain_dump of its bd_id) lists the
//     interface: VPP's disable looks at no bd_id and takes the interface out
//     of whatever domain it is in, and the interface may be in another domain
//     by now (moved behind the agent's back, or by the binding of another
//     domain while this one was left behind). An interface already gone is
//     success.
//   - No Update: a change of BVI or split-horizon group re-creates the
//     binding.
//   - Retrieve: the members VPP has in the agent's domains, named as the
//     domain's Retrieve names them (the interfaces each domain's value
//     names come from its metadata); a binding of the configuration that
//     VPP lacks is created by a resync, one VPP has with another BVI role or
//     split-horizon group is re-created. RetrieveDependencies: the
//     interface and bridge domain descriptors.
//
// # One L2 mode per interface
//
// VPP keeps an interface in one L2 mode: a member of one bridge domain, or
// the receive interface of one cross-connect (or L3).
// sw_interface_set_l2_bridge moves it out of the domain or cross-connect it
// is in, and so does sw_interface_set_l2_xconnect; disabling either puts
// it in L3 mode whatever mode it is in. Two values that want one interface
// (two domains that name it, a domain and a cross-connect from it) would
// take it from each other at every resync, so the bindings and
// cross-connects of an interface hold its L2 mode exclusively: each has the
// Exclusive dependency "interface <iface> in no other bridge domain or
// cross-connect" on the resource "vpp/l2/interface-mode/<iface>". The
// scheduler applies one of them at a time:
//
//   - while one is applied, every other binding or cross-connect of the
//     interface waits, PENDING, its details naming the holder; VPP is not
//     touched and no Create is called for it;
//   - when the holder is deleted (its domain drops the interface, or is
//     deleted; the cross-connect is deleted), the first waiting value is
//     created, in the same transaction too: an interface moves from one
//     domain to another, or from a domain to a cross-connect, in one
//     transaction, whatever the order of the keys, the old value taking it
//     out before the new one puts it in;
//   - the value applied first keeps the interface; when the agent
//     restarts, which is first is what VPP has (the resync finds the
//     binding or cross-connect VPP has applied, and the other waits).
//
// The transmit interface of a cross-connect keeps its mode: it may be a
// member of a domain, or the transmit interface of other cross-connects.
//
// Create still looks for the interface among the members of all domains
// (one bridge_domain_dump with bd_id and sw_if_index ~0: VPP 25.10 does not
// implement the sw_if_index filter of that dump and returns nothing for any
// other value):
//
//   - none, or this one: it is put in;
//   - another of the agent's: that membership was left behind, as the
//     scheduler holds no other binding of the interface when it calls Create
//     (someone put the interface there behind the agent's back since the
//     last resync, or the Retrieve did not name it: without
//     SetInterfaceLister, an interface the domain's value no longer names),
//     and VPP moves it; the plugin logs the move;
//   - one that is not the agent's: the binding is refused with
//     *MembershipConflictError ("interface x not added to bridge domain
//     bd1: it is already a member of bridge domain with bd_id 7 (not the
//     agent's) (an interface can be in one bridge domain)"), FAILED, and
//     VPP is not touched. The refusal is retriable: the binding is tried
//     again on its retries and at every resync, and applied once the
//     interface has left that domain.
//
// # Cross-connects
//
// An XConnectPair sends what receive_interface receives out of
// transmit_interface (one way: a two-way cross-connect is two values).
//
//   - Validate: models.VPPXConnect.CheckKey (both names, the key).
//   - Dependencies: "receive interface <rx>", "transmit interface <tx>"
//     (ifplugin.InterfaceKey) and the Exclusive L2 mode of the receive
//     interface (above).
//   - Create: sw_interface_set_l2_xconnect with Enable, after one
//     bridge_domain_dump of all domains: a receive interface in a domain
//     that is not the agent's is refused with *L2ModeConflictError, VPP
//     untouched (retriable: it passes once the interface leaves that
//     domain); one in a domain of the agent's (left behind) is moved by VPP.
//     A foreign (OBTAINED) receive interface that VPP has cross-connected to
//     another interface is refused the same way (someone else's
//     cross-connect); the agent's own interface's is replaced.
//   - No Update: another transmit interface re-creates the value.
//   - Delete: sw_interface_set_l2_xconnect with Enable false (which puts the
//     interface in L3 mode, out of a bridge domain too), only when
//     l2_xconnect_dump shows the receive interface cross-connected to the
//     transmit interface; an interface already gone is success.
//   - Retrieve: l2_xconnect_dump; a cross-connect whose interfaces have
//     logical names (the expected values' interfaces and, with
//     SetInterfaceLister, every interface, checked against VPP as the l3
//     plugin does: see interfaceNames) is the agent's (origin FromNB), and
//     a full resync deletes it when not configured, unless its receive
//     interface is foreign and no expected value names it (someone else's
//     cross-connect of someone else's interface is left alone). One on an
//     interface without a logical name is not reported.
//
// # Static L2 FIB entries
//
// A FIBEntry is one MAC address of a bridge domain's forwarding table:
// FORWARD out of outgoing_interface (static_config: never aged or
// overwritten by learning; bridged_virtual_interface: the BVI's MAC), or
// DROP (a filter).
//
//   - Validate: models.VPPL2FIB.CheckKey (MAC, domain, a FORWARD entry's
//     interface, none for DROP; the key's MAC in any case).
//   - Dependencies: a FORWARD entry on the binding of its interface to its
//     domain (BDInterfaceKey: VPP refuses an entry of an interface in no
//     bridge domain, INVALID_SW_IF_INDEX), a DROP entry on its domain.
//   - Create: l2fib_add_del add with the domain's bd_id (BridgeDomainIndex)
//     and the interface's sw_if_index (~0 and filter for DROP, which VPP
//     makes static), static and BVI flags. Metadata (*FIBMetadata) keeps the
//     bd_id and sw_if_index: VPP deletes a FORWARD entry only when given its
//     interface.
//   - Update: a change of flags in place (VPP's add replaces the entry);
//     another action or interface re-creates (UpdateWithRecreate).
//   - Delete: l2fib_add_del delete with the bd_id and sw_if_index it was
//     added with; an entry or domain already gone is success.
//   - Retrieve: l2_fib_table_dump of all domains; the entries of the agent's
//     domains (bd_ids from the bridge domain descriptor's metadata): an
//     expected entry VPP has, as VPP has it; every other static entry whose
//     interface has a logical name, or filter, is the agent's (origin
//     FromNB), which a full resync deletes. VPP's own entries are never
//     reported: those it learns (not static) and the MAC of a domain's BVI
//     (VPP adds it when the interface joins as the BVI).
//   - ValueComparator: the MAC's spelling; a DROP entry's flags (VPP makes
//     every filter static).
//
// # Errors
//
// Every callback is idempotent and passes its context to the VPP calls (it
// ends when the scheduler closes; each call is bounded by the Manager's call
// timeout too). Errors name the VPP message and the domain; they are
// retriable (VPP not connected, an interface not yet there, an interface in
// a domain that is not the agent's) except when VPP lacks the area's
// messages (*vppconn.IncompatibleError, the area is disabled until a
// compatible VPP connects) and values that do not parse (api.NonRetriable).
// The Retrieves of a disabled area report nothing, so that after a VPP
// restart the domains and memberships of the VPP before are not kept
// CONFIGURED: they are created again and fail, naming the messages.
// Interfaces are found through ifplugin's metadata, which hides the indexes
// of a VPP that has restarted since: a member is never added with one.
//
// # Limits
//
//   - One Plugin per scheduler: the bridge domain descriptor's metadata map
//     is built by the plugin (MetadataMapFactory) and read by the binding
//     descriptor.
//   - arp_ufwd, uu-fwd ports and learn limits are not modelled; the flags
//     the plugin does not model are left as VPP has them.
//   - VPP keeps the static FIB entries of a deleted bridge domain (its dump
//     shows them with bd_id ~0) and gives them to the next domain that gets
//     its bd_index: the agent deletes its entries before their domain, but
//     entries someone else left in a deleted domain show up in a new domain
//     of the agent's, where a full resync deletes them (those of interfaces
//     with logical names, and filters).
//   - A FIB value for the BVI's MAC (the original's examples have one)
//     replaces the entry VPP adds for the BVI, and its delete removes it:
//     the BVI then has no entry until it joins its domain again.
//   - An interface deleted in cross-connect mode puts its transmit
//     interface in L3 mode (VPP 25.10), out of its own cross-connect or
//     domain: the agent deletes its cross-connects before their interfaces,
//     and a resync repairs what a deletion behind its back did.
//   - VPP sends no event when a cross-connect or a FIB entry changes: one
//     changed by someone else is found by the next full resync.
//   - A foreign domain that happens to carry one of our names as its tag is
//     taken for ours.
//   - A foreign interface (ifplugin: OBTAINED, Metadata.Foreign) that the
//     agent put into one of its domains and that the configuration dropped
//     while the agent was not running stays a member: a new agent cannot
//     tell it from one someone else put there.
//   - VPP sends no event when a bridge domain or a membership changes: one
//     changed or deleted by someone else is found by the next full resync
//     (the daemon's optional periodic resync), not at once. A member
//     interface deleted by someone else is another matter: the link-state
//     watcher reports it (ifplugin.LinkStateWatcher.SetDriftReporter), and
//     the DriftRepair transaction creates it again and puts it back in its
//     domain.
package l2plugin

// Package aclplugin configures the access control lists of VPP's acl
// plugin: IP ACLs and MAC-IP ACLs (descriptor "vpp-acl", NB key
// config/vpp/acls/v2/acl/<name>, models.VPPACL) and their assignment to
// interfaces, one derived value per interface and direction
// ("vpp-acl-interface", key vpp/acl/<acl>/interface/<ingress|egress>/<iface>,
// ACLInterfaceKey, the original agent's), through GoVPP (go.fd.io/govpp
// v0.13.0, VPP 25.10) behind vppcalls.Handler.
//
//	p := aclplugin.New(vppManager, ifplugin.SchedulerInterfaces(sched), logger)
//	p.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(sched)) // optional, see Retrieve
//	vppManager.AddArea(p.Area()) // before vppManager.Run
//	sched.RegisterKVDescriptor(p.Descriptors()...) // after the VPP interface descriptor
//
// The area is optional: a VPP without the acl plugin is ready, and the
// ACLs fail (not retried) naming the messages it lacks. The interface side
// is ifplugin's, as for l2plugin: a logical name is turned into its
// sw_if_index through the interface descriptor's metadata, read through
// the view of the callback's scheduler (api.ViewOf).
//
// # Ownership
//
// VPP keeps a tag per ACL (64 bytes with its NUL): the agent tags each ACL
// it creates with its name, so that a restarted agent finds its ACLs. ACLs
// whose tag is not a valid name (untagged, someone else's) are never
// reported, changed or deleted, and neither are their places in the
// interfaces' lists. A name is at most 63 bytes (models.VPPACL checks it).
//
// # ACLs
//
//   - Validate: models.VPPACL.CheckKey: at least one rule; all rules IP
//     rules or all MAC-IP rules (VPP keeps them in separate ACLs; the
//     original agent refused to mix them too); per IP rule, CIDR networks
//     of one IP version, the protocol 0..255, at most one of icmp, tcp and
//     udp, agreeing with ip.protocol (icmp with 1 or 58 and the right
//     icmpv6, tcp with 6, udp with 17) and with the networks' version,
//     ports 0..65535 and ICMP types and codes 0..255 in ranges that are
//     not reversed, TCP flags 0..255; per MAC-IP rule, an IP address, a
//     prefix length its version allows and MACs; interfaces named once per
//     direction, and a MAC-IP ACL on ingress only (VPP applies MAC-IP ACLs
//     to incoming packets). Errors are api.InvalidValueError naming the
//     fields ("rules[1].ip_rule.tcp.destination_port_range").
//   - What a rule is in VPP (rules.go): an unset network is any address of
//     the rule's version (that of the other network, else IPv6 for
//     ICMPv6, else IPv4); networks are masked (VPP refuses host bits, the
//     original agent masked them); protocol 0 is taken from icmp (1, or 58
//     with icmpv6), tcp (6) or udp (17), and stays 0 (any) without them;
//     an unset range, and a port range with both ports 0, match any value
//     (ports 0-65535, ICMP 0-255); a port range with lower_port alone is
//     that one port. MAC-IP rules are taken as they are: VPP keeps the
//     host bits of their address; an unset MAC is 00:00:00:00:00:00.
//   - Create: acl_add_replace (or macip_acl_add_replace) with acl_index ~0,
//     the tag and the rules. An ACL of the kind already tagged with the
//     name (an interrupted create, a lost reply) is taken over and brought
//     to the value; one of the other kind (a change of kind that did not
//     finish) is deleted. The metadata (*ACLMetadata) keeps the index, the
//     kind and the interfaces the value names.
//   - Update: the rules replaced in place (acl_add_replace with the index:
//     the interfaces keep filtering, with the new rules at once), after
//     checking that VPP has the ACL at the index with the tag (one deleted
//     behind the agent's back fails the Update, retriable: a resync
//     creates it again). A change of interfaces alone writes nothing: the
//     assignments are derived values. A change of kind (IP to MAC-IP or
//     back) re-creates the ACL (UpdateWithRecreate), its assignments with
//     it.
//   - Delete: after its assignments; acl_del (macip_acl_del) of the ACL VPP
//     has with the tag; one already gone is success. An IP ACL that an
//     interface still has (someone put it there) is taken off that
//     interface first, as VPP refuses to delete an ACL in use
//     (ACL_IN_USE_INBOUND / _OUTBOUND); macip_acl_del does that itself.
//   - Retrieve: acl_dump and macip_acl_dump of all ACLs, and the lists of
//     all interfaces (acl_interface_list_dump, macip_acl_interface_list_dump
//     of ~0) when the agent has ACLs: every ACL tagged with a valid name is
//     reported (origin FromNB, the first of a tag: IP ACLs before MAC-IP
//     ACLs). Its rules are the expected value's when they make what VPP
//     has, else VPP's rules in the model's form (see Limits). Its
//     interfaces are those of the expected value followed by the ones VPP
//     has it on that the value does not name (a resync takes it off them):
//     whether it is on an expected one is the assignment descriptor's
//     Retrieve's answer, so an assignment that waits for its interface does
//     not make the ACL differ, and an in-sync resync executes nothing.
//     Interfaces are named from their sw_if_index as in l2plugin: the
//     agent's everywhere, a foreign (OBTAINED) one only for an ACL whose
//     value names it.
//   - ValueComparator: values that make the same VPP rules, with the same
//     interfaces in any order, are equal (spellings of addresses and MACs,
//     host bits of IP networks, 0.0.0.0/0 and an unset network, protocol 6
//     with tcp and tcp alone, unset and full ranges).
//   - DerivedValues: one assignment per interface and direction, its value
//     a vpp.acl.ACLInterface (ACL, interface, direction, MAC-IP or not).
//
// # Several ACLs on one interface
//
// VPP keeps, per interface, one list of IP ACLs for each direction,
// evaluated in order (the first ACL with a rule that matches decides), and
// acl_interface_set_acl_list replaces both lists at once. The model says
// nothing of the order of the ACLs that name one interface, so the agent
// gives one, the same whatever order the values come in and across
// restarts:
//
//   - the agent's ACLs first, ordered by name (byte order: name them
//     "10-allow-dns", "20-deny-all" to order them), then the ACLs of
//     others, in the order VPP has them;
//   - an assignment's Create reads the interface's lists
//     (acl_interface_list_dump of its sw_if_index), puts the ACL into the
//     list of its direction, orders that list so, and sets both lists (the
//     other one as VPP has it); its Delete takes the ACL out of the list,
//     the others staying in their order. An ACL someone else appends
//     (acl_interface_add_del appends) lands after the agent's, where the
//     order wants it;
//   - the assignment Retrieve reports the assignments of a list that is
//     not in that order (someone put an ACL before the agent's, or
//     reordered them) as missing, but for those no value wants: a resync
//     creates them again, which orders the list, and removes the unwanted
//     ones.
//
// VPP keeps one MAC-IP ACL per interface (an add replaces it): the MAC-IP
// assignments of an interface hold it exclusively (an Exclusive
// dependency on "vpp/acl/macip-interface/<iface>"): while one is applied,
// those of other ACLs wait, PENDING, naming the holder, and the first of
// them is applied when it goes (in the same transaction too). An interface
// whose MAC-IP ACL is someone else's is not taken from it: the assignment
// fails with *MACIPConflictError (retriable: it is applied once that ACL
// has left the interface).
//
// # Assignments
//
//   - Dependencies: "interface <iface>" (ifplugin.InterfaceKey): an
//     assignment waits (PENDING) for its interface while the ACL is
//     created and its other assignments work, and is removed before the
//     interface; MAC-IP assignments the Exclusive dependency above.
//   - Create and Delete: see above. A MAC-IP assignment's Delete sends
//     macip_acl_interface_add_del only when the interface has that ACL
//     (VPP's delete takes off whatever MAC-IP ACL the interface has). An
//     interface or ACL already gone is success. No Update: the key holds
//     everything.
//   - Retrieve: the assignments of the agent's ACLs (from the ACL
//     descriptor's metadata map) that VPP has, named as the ACL Retrieve
//     names interfaces. RetrieveDependencies: the interface and ACL
//     descriptors.
//
// # Errors
//
// Every callback is idempotent, and passes its context to the VPP calls
// (each bounded by the Manager's call timeout). Errors name the VPP message,
// the ACL and the interface; they are retriable except when VPP lacks the
// acl plugin (*vppconn.IncompatibleError) and for values that do not
// convert (api.NonRetriable). The Retrieves of a disabled area report
// nothing.
//
// # Limits
//
//   - A rule VPP has that the model cannot express (ports or TCP flags on a
//     protocol other than TCP and UDP, TCP or UDP port 0 alone, ICMP ranges
//     beyond 255) is reported without them; an ACL of the agent's changed
//     behind its back into such a rule may be taken for its value and not
//     repaired.
//   - A foreign ACL that carries one of the agent's names as its tag is
//     taken for the agent's.
//   - VPP sends no event when an ACL or an interface's list changes: a
//     change by someone else is found by the next full resync, not at once.
//   - An interface takes at most 255 IP ACLs (both lists: the count is 8
//     bits in the API); an assignment beyond fails, saying so.
package aclplugin

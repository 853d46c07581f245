// Package natplugin configures VPP's endpoint-dependent NAT44 (the nat
// plugin's nat44-ed, VPP 25.10) from the original agent's NAT models
// (ligato.vpp.nat, netagent's vpp.nat), through GoVPP (go.fd.io/govpp
// v0.13.0) and the small handler interface of vppcalls.
//
//	p := natplugin.New(vppManager, ifplugin.SchedulerInterfaces(sched), logger)
//	p.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(sched)) // optional, see the Retrieves
//	vppManager.AddArea(p.Area()) // before vppManager.Run; optional: a VPP without the nat plugin is ready
//	sched.RegisterKVDescriptor(p.Descriptors()...) // after the VPP interface descriptor
//
// # Values
//
//	descriptor                  key                                                     VPP
//	vpp-nat44-global            config/vpp/nat/v2/nat44-global (one value)              nat44_ed_plugin_enable_disable, nat44_forwarding_enable_disable
//	vpp-nat44-global-interface  vpp/nat44/global/interface/<name> (derived)             as vpp-nat44-interface
//	vpp-nat44-global-address    vpp/nat44/global/address/<address>[/twice-nat] (derived)
//	                                                                                    as vpp-nat44-address-pool
//	vpp-nat44-interface         config/vpp/nat/v2/nat44-interface/<name>                nat44_interface_add_del_feature, nat44_ed_add_del_output_interface
//	vpp-nat44-address-pool      config/vpp/nat/v2/nat44-pool/{<name>|vrf/<vrf>/address/<first>[-<last>]}
//	                                                                                    nat44_add_del_address_range
//	vpp-dnat44                  config/vpp/nat/v2/dnat44/<label>                        none: its mappings are derived values
//	vpp-nat44-static-mapping    vpp/nat44/static-mapping/<label>/<id> (derived)         nat44_add_del_static_mapping_v2, nat44_add_del_lb_static_mapping
//	vpp-nat44-identity-mapping  vpp/nat44/identity-mapping/<label>/<id> (derived)       nat44_add_del_identity_mapping
//
// with their dumps (nat44_show_running_config, nat44_interface_dump,
// nat44_ed_output_interface_get, nat44_address_dump, nat44_static_mapping_dump,
// nat44_lb_static_mapping_dump, nat44_identity_mapping_dump). The id of a
// mapping names what VPP knows it by (models.StaticMappingID: its external
// endpoint, e.g. tcp/80/ip/192.0.2.1; models.IdentityMappingID: VRF,
// protocol, port and address or interface), so that a change of a DNat44
// changes only the mappings that change: one that keeps its id and changes
// is re-created (VPP has no update of a mapping), the others are not
// touched.
//
// # NAT44 enabled first: the global settings
//
// VPP loads the nat plugin disabled, and refuses every NAT setting until
// it is enabled (UNSUPPORTED). As in the original agent (which documents
// "without Nat44Global, all other NAT44 configuration items will be in the
// PENDING state"), the Nat44Global value enables it: every other NAT44 value
// depends on its key and waits, PENDING, without it. Its Create enables
// NAT44 (with VPP's default session count; one VPP already has enabled is
// taken as it is) and sets forwarding; its Delete disables NAT44, which in
// VPP removes every NAT setting, the agent's (deleted before it, as they
// depend on it) and anyone else's: VPP has no other way to disable it.
// Its Retrieve reports the settings while NAT44 is enabled, of unknown
// origin: the scheduler takes them for the agent's when the NB asks for
// them or the agent enabled NAT44, and otherwise for someone else's
// (OBTAINED: the agent's other NAT values use it, and the agent never
// disables it).
//
// Of the original's global settings, forwarding is VPP's, and
// endpoint_independent is refused by Validate, naming the field (VPP's
// other plugin, nat44-ei, which netagent does not drive).
// virtual_reassembly is accepted and ignored, as the original ignored it
// with VPPs since 20.05: VPP 25.10's NAT44-ED has no reassembly settings
// of its own (it reassembles before NAT by itself); the value's status
// details say so (KVDescriptor.Notes).
//
// # The global settings' deprecated lists
//
// The original's deprecated nat_interfaces and address_pool lists are taken
// as the original took them, as derived values of the global value (shown
// under it in its status and in the graph): one per interface of
// nat_interfaces (its entries add up: is_inside gives the inside feature,
// otherwise the outside one, output_feature the output feature, as a
// Nat44Interface with those fields; an interface with the output feature
// in one entry and not in another is INVALID), which waits for its
// interface; one per address of address_pool, a pool of that one address
// (vrf_id, twice_nat). A change of the lists changes only the entries that
// change (the global value's own Update finds nothing to do in VPP).
// Their Retrieves report what VPP has of the lists of the global value the
// NB expects, so an in-sync resync executes nothing and drift is repaired.
//
// An interface in nat_interfaces and in a Nat44Interface value is a
// conflict, not a merge (the two would fight over one interface's
// features, and VPP's output feature excludes the others): both name the
// unique name "NAT44 features of VPP interface <name>"
// (api.KVDescriptor.Unique), so the one applied first keeps the interface
// and the other is INVALID, its error naming the holder's key, until the
// holder goes (then it is applied). When both come in one transaction (an
// agent's first resync), the Nat44Interface gets it (its key comes first).
// The Nat44Interface Retrieve leaves the interfaces of the lists to their
// own Retrieve, but those a valid Nat44Interface holds. An address of
// address_pool counts as an applied pool: a pool overlapping it fails,
// naming it, and the reverse.
//
// # Interfaces
//
// A Nat44Interface puts the inside and/or outside feature on an interface,
// or the output feature (output_feature with nat_outside or nat_inside:
// VPP's output interface, NAT after routing, takes no side and excludes
// the other two; output_feature alone, or with both sides, is INVALID).
// It depends on the interface and waits for it. Create and Update read
// VPP's features of the interface first and change only what differs (so
// a lost reply or a change behind the agent's back is repaired); Delete
// takes off the features VPP has. Deleting a feature an interface lacks
// is never sent: VPP takes whichever feature is left off an interface with
// one.
//
// # Address pools
//
// A pool is a range of addresses of one list (twice-NAT or not) in a VRF
// (4294967295: any). Create and Update read VPP's addresses first and add
// only those VPP lacks (those it has in another VRF are deleted and added
// again), and delete the ones of the old range the new one does not hold,
// in runs VPP can carry out whole (it stops at the first address that
// fails). A pool whose addresses overlap those of another applied pool of
// the same list fails, naming it (VPP keeps an address once), and is
// applied once that pool is gone (its retry, or a resync).
//
// # DNat44 and its mappings
//
// A DNat44 is a label and its mappings. VPP keeps no DNat44: the value's
// descriptor does nothing in VPP (its metadata is the value, which the
// mappings' Retrieves read), and each static mapping and identity mapping
// is a derived value of its own. Static mappings are out2in-only (only
// connections from the outside are translated by them: destination NAT, as
// the original made them); one with two local endpoints or more is
// load-balanced. The original's rules for fields given together are kept:
// external_interface is preferred over external_ip (VPP takes the address
// of the interface, and follows it), except for a load-balanced mapping,
// which VPP keeps on an address only (its external_interface is then a
// dependency only); interface is preferred over ip_address for an identity
// mapping. Mappings depend on the global settings and on the interface
// they use, and hold their external endpoint (or identity) exclusively
// (api.Dependency Exclusive): a mapping of another DNat44 on the same
// endpoint waits, PENDING, naming the holder, and is created once the
// holder is gone.
//
// # Ownership
//
// VPP keeps a tag on static, load-balanced and identity mappings: the agent
// tags each with the label of its DNat44 (what the original agent did too:
// a netagent taking over from the original owns the original's mappings).
// Mappings tagged with a valid label are the agent's: a full resync deletes
// those no DNat44 of the NB asks for. Untagged mappings (VPP's CLI makes
// them) are someone else's: never reported, changed or deleted; a mapping
// of the agent's on the same endpoint fails with VPP's VALUE_EXIST, saying
// so.
//
// Interface features and pool addresses have no tag, so the agent cannot
// tell its own from an operator's by looking at VPP. It decides so:
//
//   - features: those of the agent's own interfaces (the interfaces the
//     agent configures and does not merely observe) are the agent's: a
//     full resync takes off those no Nat44Interface asks for. Those of
//     foreign interfaces (OBTAINED, or unknown to the agent) are left
//     alone, unless a Nat44Interface names the interface.
//   - addresses: only those of the pools the NB expects, and of the pools
//     the agent has applied while running, are reported; a full resync
//     deletes an applied pool the NB dropped. Addresses no such pool holds
//     are never touched: a pool the NB dropped while the agent was not
//     running stays in VPP (the agent cannot tell it from an operator's).
//
// # Retrieve
//
//   - Global: nat44_show_running_config (sessions 0: disabled).
//   - Interfaces: the features of the interfaces named as above, one value
//     per interface; an expected value without features is reported when
//     VPP has none on the interface. RetrieveDependencies: the interface
//     and global descriptors.
//   - Pools: an expected or applied pool is reported when VPP has every
//     one of its addresses in its list and VRF; a pool VPP holds part of
//     is created again (Create adds what is missing).
//   - DNat44: every expected value as it is, followed by the mappings VPP
//     has under its label that it does not hold (a resync deletes them);
//     labels the NB does not expect get the mappings VPP has.
//   - Mappings: those VPP has under the agent's labels. VPP keeps a mapping
//     on an interface as a record to resolve and, while the interface has
//     an IPv4 address, as a mapping of that address too: the first is
//     reported (named by the interface's logical name), the second left
//     out (unless the label's value has a mapping of that address: VPP
//     cannot tell them apart). What VPP 25.10 does not report (the
//     affinity of a load-balanced mapping: its details' field is never
//     set; the twice-NAT pool address: no dump has it; self twice-NAT of a
//     mapping on an interface without an address: the record to resolve
//     has the twice-NAT flag only) is taken from the expected value: a
//     change of those behind the agent's back is not seen
//     (docs/vpp-25.10.md; TestVPPNATBehaviour checks VPP still does not
//     report them).
//
// A resync of an in-sync VPP executes nothing; drift (a feature, address or
// mapping removed or added behind the agent's back, NAT44 disabled) is
// repaired by the next full resync: VPP sends no event for NAT changes.
//
// # Errors
//
// Every callback is idempotent and passes its context to the VPP calls.
// Errors name the VPP message and the value; they are retriable (VPP not
// connected, a conflict with someone else's mapping, an overlapping pool)
// except when VPP lacks the nat plugin's messages (*vppconn.IncompatibleError:
// the area is optional and disabled until a compatible VPP connects) and
// values that do not parse. The Retrieves of a disabled area report nothing.
//
// # Limits
//
//   - One Plugin per scheduler: the pool and DNat44 descriptors' metadata
//     maps are built by the plugin and read by the other descriptors.
//   - Not modelled: NAT44 session limits and timeouts, VRF tables and
//     routes of NAT44 (nat44_ed_add_del_vrf_table), addresses of interfaces
//     (nat44_add_del_interface_addr), IPFIX logging, MSS clamping.
//   - VPP keeps the records to resolve of a mapping on an interface that
//     is deleted; the agent deletes its mappings before their interfaces
//     (they depend on them), but one left by a crash stays under the
//     index of the deleted interface, unreported (the index maps to no
//     name).
//   - An identity mapping of one address, port and protocol in several
//     VRFs is one mapping in VPP, tagged with the first label (the dump
//     lists one detail per VRF, all with that tag): the Retrieve gives an
//     entry to the DNat44 that expects it whatever its tag; an entry no
//     DNat44 expects is its tag's.
//   - A foreign mapping that carries one of the agent's labels as its tag
//     is taken for the agent's.
package natplugin

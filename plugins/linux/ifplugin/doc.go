// Package ifplugin configures Linux network interfaces through netlink: the
// NB values config/linux/interfaces/v2/interface/<name>
// (linux.interfaces.Interface), their addresses as derived values, and a
// watcher of the host links and of drift (changes outside the agent).
//
// # Interfaces
//
//   - VETH: the two ends are two values that depend on each other, so the
//     scheduler creates them together. The pair is created with each end
//     directly in its namespace (moving a link costs the kernel ~20 ms),
//     both under temporary names ("na" + 12 hex digits of the SHA-1 of the
//     logical name); both are marked, then the first end is renamed, and
//     the peer's own Create renames the peer. A step that fails leaves
//     links under temporary names, which the next Create of either end
//     finds. Deleting either end deletes the pair; the other's Delete then
//     finds nothing, which is success. Retrieve reports each end with the
//     peer the kernel pairs it with (from the peer's alias), so an end
//     whose peer is gone (its namespace deleted with `ip netns del` while
//     the agent held it open) or is not the value's peer is re-created,
//     with its peer, by the next resync.
//   - TAP_TO_VPP: the host side of a VPP TAP. It waits for the VPP
//     interface (config/vpp/v2/interfaces/<vpp_tap_if_name>), then takes the
//     link VPP made in the agent's namespace under host_if_name (the VPP TAP
//     must use the same host name), moves it into its namespace and
//     configures it. Delete gives it back to the agent's namespace, down.
//     When the daemon runs without VPP (Plugin.SetVPPDisabled), it waits
//     all the same, PENDING, and its reason says the TAP never comes.
//   - LOOPBACK: the lo of a namespace, whatever its logical name
//     (host_if_name empty or lo; any other is INVALID); no other type may
//     be called lo. Deleting the value leaves lo as it is, without
//     the addresses the value added.
//   - EXISTING: a link the agent did not create, configured in place. In the
//     agent's namespace it waits for the watcher to report the link, so it is
//     PENDING until the link exists and again after it is deleted. In
//     another namespace nothing reports the links, and a missing link or
//     named namespace is a retriable failure saying so: the agent does not
//     create the namespace of a link it did not create (it would stay,
//     empty, after the value). A PENDING wait would need every named
//     namespace of the host reported as a value, part of every dump. A new
//     host_if_name is another link to adopt (the value is re-created; the
//     link adopted before keeps its name). Deleting the value never deletes
//     the link and does not restore it either: the addresses the value added
//     are removed (derived values), but MTU, MAC and admin state stay as the
//     value set them. The agent does not record what the link had before
//     (neither did the original agent, and the specs promise no more): to
//     give the link its old settings back, set them in the value before
//     deleting it.
//   - DUMMY when the kernel has dummy links (probed at start); otherwise, and
//     for VRF_DEVICE, vrf_master_interface and checksum offloading, the value
//     is INVALID with the reason. A link of the dummy's name that is not
//     this dummy (another kind, or not marked as this value's) is never
//     taken.
//
// An unset mtu is the kernel's default (1500) on a link the agent creates
// (VETH, DUMMY): such a link is kept at it, so a resync sets it back after
// `ip link set ... mtu` by hand, and unsetting an mtu returns the link to
// 1500. On a link someone else made (EXISTING, LOOPBACK, TAP_TO_VPP) an
// unset mtu is not managed: the link keeps whatever MTU it has.
//
// A new host_if_name renames the link in place, up as it is (Linux 6.2
// and later). An older kernel renames only a link that is down, and a link
// that goes down loses its routes and neighbours: the rename then lists the
// link's routes (but those the kernel makes itself) and permanent
// neighbours, takes it down, renames it, sets it up and puts them back, so
// the route and ARP values on the interface stay true. Nothing else an
// Update does takes a link down, but enabled: false, whose DOWN state
// takes the routes and ARP entries away first (they depend on "interface
// up").
//
// MTU, MAC, admin state and the kernel name (host_if_name, but for
// EXISTING) are changed in place; a change of type, namespace or link
// settings re-creates the interface. A named namespace that does not exist
// is created at the first Create in it (but for EXISTING), and removed
// when the last of the agent's interfaces there is deleted, if the agent
// created it (in this run or an earlier one: nsplugin marks it) and
// nothing else uses it: a namespace that still holds a link other than lo
// (the operator's) or a process is kept, and the log says why. The agent's
// interfaces in a namespace are those the scheduler holds as applied (the
// interface descriptor's metadata map): created by this run or found there
// by Retrieve, after a restart too, so the agent does not try to remove a
// namespace (nor log that something else keeps it) while one of its own
// interfaces is still in it.
//
// # One value per link
//
// A link is one value's (KVDescriptor.Unique): each value uses the name of
// its link in its namespace, HostLinkName ("linux link eth0 in netns
// app"; "linux link veth1 in default namespace" for the agent's own,
// however the value leaves it unset), and a value whose link name another
// value already uses is INVALID: "host_if_name: linux link eth0 in netns
// app is already used by config/linux/interfaces/v2/interface/x", the
// field being the one that gives the name (host_if_name; name when the
// host name defaults to the logical name; type for a LOOPBACK's lo).
// Nothing is made for it, and its veth peer waits for it (PENDING). When
// the holder drops the name (deleted, renamed, moved, invalid) the
// scheduler validates the refused values again, in key order, and creates
// the first in the same transaction. This holds for every type:
//
//   - each end of a veth pair is a value of its own and uses its own name
//     in its own namespace;
//   - an EXISTING (or LOOPBACK) value on a link another value makes or
//     adopts is refused, as is a second value adopting the same link (two
//     values would set its MTU, addresses and state in turn, and the link
//     made by one would vanish under the other when it is deleted):
//     configure such a link in the value that makes it;
//   - a TAP_TO_VPP value in another namespace uses its name in the agent's
//     namespace too, where VPP makes the link under that name and where
//     Delete gives it back.
//
// Names are compared as the values spell their namespace: the same
// namespace under two references (its name and its file, or a PID) is not
// seen by the scheduler; the kernel then has one link of the name, and the
// second value fails saying the link is the other interface's.
//
// A name handed over in one transaction works whatever the order of the
// kernel changes: two values swapping their host names, or one renamed
// (moved, deleted) while another takes its old name. The kernel has one
// link of a name at a time, so when a value takes a name that a link of
// another of the agent's interfaces still has (that interface hands it
// over and has not had its turn yet), that link is renamed to its
// interface's temporary name (see VETH above), where that interface's own
// Update or Delete finds it; Retrieve finds it by its alias whatever its
// name, and the host link of a VPP TAP gets its name back when it is given
// back.
//
// # The agent's own loopback
//
// The agent serves its API and the embedded etcd on 127.0.0.1, the lo of
// the namespace it runs in: taking that lo down would cut the agent off
// from its own control plane. So a value for that lo — LOOPBACK, or
// EXISTING on lo, with no namespace (the agent's own) or a reference that
// resolves to the agent's namespace at validation (its PID, a namespace
// file, a named namespace bound to it) — is INVALID when enabled is false
// or unset ("enabled: false (or unset) would take down the loopback of the
// agent's own network namespace ..."), and when ip_addresses lists the
// kernel's own 127.0.0.1/8 or ::1/128 (deleting the value would remove
// them). Should a reference come to resolve to the agent's namespace only
// after validation, Create and Update refuse to set its loopback down
// (non-retriable error). The loopback of any other namespace may be set
// down.
//
// # Ownership
//
// Links the agent creates carry the alias "netagent/<label>/<logical name>"
// (Plugin.SetLabel; "netagent/<logical name>" without a label). The agent
// claims a link only when its alias is exactly its own form: its prefix and
// then a name without "/" (logical names of Linux interfaces never contain
// "/", models.LinuxInterface refuses them). So agents of different labels,
// or with and without a label, never take each other's links, although
// "netagent/" is a prefix of every other agent's alias. Retrieve recognises
// the agent's links after a restart and returns them even when no longer
// configured (so a resync deletes them); Delete refuses to delete a link
// whose alias is not the value's own.
//
// # Links the original agent made
//
// The original agent (Ligato vpp-agent) marks its links with the alias
// "/vnf-agent/<label>/<logical name>/<peer's logical name>" (VETH),
// "/vnf-agent/<label>/<logical name>/<VPP TAP's logical name>/<host name
// VPP gave it>" (TAP_TO_VPP), "/vnf-agent/<label>/<logical name>" (DUMMY,
// and the lo of a namespace). A link that carries it, for this agent's
// label (SetLabel; an agent without a label takes none), is the link of
// the value of that logical name when it is of the value's kind, in the
// value's namespace, and names the value's peer (VETH) or VPP TAP
// (TAP_TO_VPP): it is adopted, never re-created (same ifindex, addresses,
// routes and neighbours). Retrieve reports it as the value it is, with the
// checks of the agent's own links (a veth end's peer is the one the kernel
// pairs it with, named by the peer's alias of either agent; MTU, state,
// addresses, namespace), and the plugin notes that its alias is the
// original's: the descriptor's ValueComparator then reports the value as
// different, the scheduler calls Update, and Update sets this agent's
// alias and drops the note. So switching a host from the original agent
// to this one, on the same NB data and label, executes one UPDATE per
// VETH, DUMMY and TAP_TO_VPP interface (the alias) and nothing else; the
// next resync executes nothing. Until its Update has run, the original's
// alias counts as the interface's own wherever the agent asks whose a link
// is (makeRoom, Delete). A Create that finds such a link under the value's
// name (the value came after the full resync) takes it the same way.
//
// Not adopted, left as they are: a link with another label's alias; one
// whose alias names a logical name no value has (the agent does not delete
// what the original made and the NB no longer wants: remove it by hand);
// a veth end whose alias names another peer than the value's (its value's
// Create fails, non-retriable: "a link named ... is not this veth end
// ...: the original agent made it for <name> with <peer>, this value
// names <peer>"). (A TAP_TO_VPP value whose alias names another VPP TAP is
// not reported by Retrieve either; its Create then takes the host link of
// its name, VPP's, as for any TAP, and marks it.) The original's alias on a lo stays: LOOPBACK values find
// lo by name and the agent marks no lo. Values of the original's VRF
// devices are INVALID here (VRF_DEVICE), so its vrf links are left alone.
//
// # Deletes in bulk
//
// The interface descriptor has Batch (batch.go). The kernel waits for an
// RCU grace period (~18 ms for a veth pair) after each RTM_DELLINK,
// pipelined or not, but only once for `ip link delete group N`. So the
// deletes of VETH and DUMMY values of a batch (the first ends of many veth
// pairs make one wave of the scheduler, the second ends the next) are done
// per namespace the link is in as one group delete: each link is found and
// checked as Delete does (a link or namespace gone is a success, a link
// whose alias is not the value's fails that value alone, non-retriable);
// a dump of the namespace's links gives the groups in use and a random
// number none of them is in is taken (never 0); the links are put into it
// (RTM_SETLINK, pipelined; a link that vanished meanwhile is deleted, one
// that cannot be put in is deleted on its own); a second dump checks that
// the group holds the batch's links only; one RTM_DELLINK of the group
// deletes them. When the check finds another link in the group or the
// kernel refuses the group delete (a link of the group cannot be deleted:
// EOPNOTSUPP, nothing deleted), every link gets its group back and is
// deleted one by one (pipelined), each with its own result. Left: another
// program putting a link into the group between the second dump and the
// delete (microseconds) would lose it. A namespace the agent created is
// removed when the batch deleted the last of the agent's interfaces there.
// Other operations of the batch run as the descriptor's Create, Update or
// Delete, in the batch's order, after the deletes before them.
//
// # Addresses: which are the agent's
//
// On a link the agent creates (VETH, DUMMY) every address but the IPv6
// link-local ones is the value's: Retrieve reports them all, and a resync
// removes one the value does not list. On a link someone else made
// (EXISTING, LOOPBACK, TAP_TO_VPP) only the addresses the value lists are
// the agent's: Retrieve reports those alone, so the addresses the link had
// before it was adopted, or that the operator adds, are never removed, by a
// resync or after a restart, as at creation. Addresses carry no mark of
// the agent's (the kernel's address protocol, IFA_PROTO of Linux 6.1, is
// not in the netlink library used), so an address the NB stops listing
// while the agent is not running stays on such a link.
//
// # Derived values
//
//   - linux/interface/<iface>/address/static/<ip/len>, one per address
//     (descriptor linux-interface-address): added with EEXIST tolerated;
//     removing a missing address or one on a missing link is success; a
//     rename of the link updates it in place (made sure of on the new name,
//     never removed and added again). Two per-link sysctls, set in the
//     link's namespace and left set when the value goes, keep the kernel as
//     the address values say: before an IPv6 address is added, disable_ipv6
//     = 0 and keep_addr_on_down = 1 (otherwise disabling and enabling the
//     interface loses its IPv6 addresses); before an IPv4 address is
//     removed, promote_secondaries = 1 (otherwise the kernel removes the
//     other addresses of the subnet with a primary one, the agent's as well
//     as an operator's). The descriptor has Batch, and its Create, Update
//     and Delete are batches of one: per batch each link is looked up and
//     its sysctls set once, and the RTM_NEWADDR/RTM_DELADDR requests go
//     pipelined on one netlink socket per namespace (internal/nlbatch),
//     each address with its own result. Plugin.Close closes the sockets.
//   - linux/interface/state/<iface>/<UP|DOWN>: a property (no descriptor)
//     that routes and ARP entries depend on ("interface is up").
//
// # Watcher
//
// Watcher reports every link of the agent's namespace as an OBTAINED value
// linux/interface/host-name/<name>, and its addresses as
// .../address/<ip/len>. On each burst of netlink events it lists links and
// addresses again and pushes the difference; after a subscription error it
// subscribes again with a growing delay.
//
// # Drift
//
// The Watcher also reports the values whose kernel objects change outside
// the agent (KVScheduler.ReportDrift), so that the scheduler refreshes them
// and repairs them (or, with DriftReportOnly, marks them MISSING with the
// cause in their details).
//
// What is watched: link and address events, and with SetLinkObjects
// (the daemon passes the l3plugin.Plugin) route and neighbour events, in
// the agent's namespace and in every namespace an interface of the agent
// is in. The interface descriptor's metadata map (built by the plugin)
// indexes the interfaces by link (namespace, ifindex): it says which
// namespaces to watch (subscribed when the first interface is in one,
// unsubscribed when the last leaves) and which interface an event
// concerns. Once subscribed in a namespace the watcher reports every value
// there, so that what changed before (an interface is made before its new
// namespace is watched; events are lost when a subscription fails and is
// made again) is found by the refresh.
//
// What is reported, for the link of one of the agent's interfaces (events
// of other links are ignored), when the event shows it otherwise than the
// agent applied it (the interface's metadata keeps the value the link was
// configured to; the l3plugin's metadata what it applied):
//
//   - link deleted, or moved to another namespace: the interface, and the
//     values on the link (routes, ARP entries: LinkObjects.OnLink), which
//     the kernel flushes without always saying so;
//   - link changed so that its name, MTU (where the agent keeps it), MAC
//     (when the value sets it) or admin state differ from the value: the
//     interface; when it is down, the values on it too (the kernel flushed
//     its routes and neighbours). A carrier change alone is no drift;
//   - address removed that the value lists, or added that it does not
//     list on a link the agent made (VETH, DUMMY; the kernel's fe80:: ones
//     aside): the interface, whose Retrieve reports its addresses;
//   - route or neighbour events that LinkObjects says show a value out of
//     sync (RouteDrift, NeighDrift: deleted, or not as the agent applied
//     it);
//   - a watched named namespace deleted (`ip netns del`, which netlink does
//     not tell: the namespaces are checked every second) or replaced by
//     another of that name: every value in it.
//
// Events are batched: a batch ends 20 ms after its last event or 200 ms
// after its first. Of each kernel object (a link, an address, a route by
// its kernel identity, a neighbour) the last event of the batch counts:
// the state the object was left in, so the steps of the agent's own
// creation of a veth (temporary name, alias, rename, up) are one state.
//
// The echo of the agent's own change is not reported. Its event may be
// read before the scheduler has put what the agent applied into the
// metadata maps (they are updated when the callback returns, the kernel
// queues the event before): an event that looks like drift when its batch
// ends is checked again after KVScheduler.TransactionBarrier, which returns
// once every transaction queued before has finished (the agent's change
// that caused it included). Only what still differs from what the agent
// holds as applied then is reported, with one ReportDrift (each key once
// with the cause of its most telling event, the interfaces first). The
// barrier runs in a goroutine: the watcher keeps reading events meanwhile,
// and the events of later batches wait for the next barrier. This is no
// timing heuristic: a real change is reported, at most one transaction
// later; a value deleted or changed by the agent meanwhile is not reported
// (what it was is no longer the agent's). So a bulk change of the agent
// (10k routes added and deleted) causes no drift transaction, where each
// batch of its events used to cost one refresh. The repair's own changes
// are not reported either.
//
// The refresh relies on Retrieve telling the truth field by field when it
// is asked for some values only: a veth end is retrieved with the
// namespace of its peer (from the metadata, else the value), so that its
// peer is found; MTU, admin state, name, MAC (when the value sets it),
// addresses and namespace are compared.
//
// Limits: a change the kernel sends no event for (a sysctl, a namespace
// deleted between two checks and made again under the same name by someone
// else) is found by a resync only. A namespace referenced by PID or file is
// checked like a named one (its file). An EXISTING link of the agent's
// namespace deleted by hand is also reported by the host links above: the
// value waits PENDING for the link, unless the drift repair runs first and
// fails (FAILED until a retry or a resync).
//
// # Callbacks
//
// Create and Update are idempotent: they find what a failed earlier attempt
// left (a veth under its temporary name, a link already moved or renamed).
// Errors are retriable unless marked (a link of the same name that is not
// ours, an invalid MAC, the agent's own loopback set down). Retrieve reads
// the agent's namespace and every namespace the configuration references,
// and retries dumps the kernel interrupted (netlink.ErrDumpInterrupted)
// instead of trusting them.
//
// Every callback takes the context the scheduler gives it. Netlink requests
// take none and each is short, so Create, Update and Delete run to the end
// once started (stopping between two requests would leave a half-made veth
// pair for the retry to find, and gains nothing); Retrieve stops between
// two namespaces when the context is done (the scheduler closes, or the
// call's deadline passes) and returns its error. No callback waits for a
// link or a namespace: a missing one is a retriable failure, or a
// dependency the scheduler waits for (PENDING). The callbacks never call
// the scheduler.
//
// Registration, and the watcher that reports the host links and drift:
//
//	p := ifplugin.New(nsManager, logger)
//	p.SetLabel(label) // optional: the microservice label in the ownership mark
//	sched.RegisterKVDescriptor(append(p.Descriptors(), ifplugin.WatcherDescriptor())...)
//	w := ifplugin.NewWatcher(nsManager, sched, logger) // after the registration
//	w.SetLinkObjects(l3) // optional: the drift of routes and ARP entries (l3plugin)
//	go w.Run(ctx)
//	<-w.Synced()
//	txn := sched.StartNBTransaction().SetValue(ifplugin.InterfaceKey("veth1"), veth1)
//	_, err := txn.Commit(ctx, api.TxnOptions{Retry: api.DefaultRetry()})
package ifplugin

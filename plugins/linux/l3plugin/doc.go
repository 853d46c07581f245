// Package l3plugin configures Linux layer 3: routes (descriptor
// "linux-route", NB key config/linux/l3/v2/route/<dst ip>/<len>/<iface>) and
// permanent ARP/neighbour entries ("linux-arp",
// config/linux/l3/v2/arp/<iface>/<ip>), in the network namespace of their
// interface, through the netlink handle nsplugin keeps for it.
//
//	p := l3plugin.New(nsManager, l3plugin.SchedulerInterfaces(sched), logger)
//	p.SetInterfaceLister(l3plugin.SchedulerInterfaceNames(sched)) // optional, see below
//	sched.RegisterKVDescriptor(p.Descriptors()...)
//
// The interface side is ifplugin's: a logical interface name is turned into
// its link (namespace and ifindex) by the InterfaceLookup, which reads the
// metadata the interface descriptor publishes (ifplugin.Metadata). The
// lookups SchedulerInterfaces and SchedulerInterfaceNames build read it,
// inside a descriptor callback, through the read view of the callback's
// context (api.ViewOf): a callback never calls the scheduler itself.
//
// Values are then committed as to any descriptor:
//
//	key, err := models.LinuxRoute.Key(route) // config/linux/l3/v2/route/10.1.0.0/16/eth1
//	_, err = sched.StartNBTransaction().SetValue(key, route).
//		Commit(ctx, api.TxnOptions{Retry: api.DefaultRetry()})
//
// # Ownership
//
// Every route the agent adds carries the route protocol RouteProtocol (181,
// `ip route show proto 181`). Retrieve reports only those, and Delete asks
// the kernel to delete a route of that protocol only, so routes added by
// anyone else (the kernel's connected routes, DHCP, an operator) are never
// reported, changed or deleted. The one exception is the route the
// original agent made for a value, which Create takes over (below, "Routes
// the original agent made"). Neighbour entries carry no such mark:
// Retrieve reports the permanent ones with an unknown origin, so that the
// scheduler adopts those the NB asks for and leaves the others alone
// (OBTAINED).
//
// # Routes the original agent made
//
// The original agent (Ligato vpp-agent) added its routes without a route
// protocol: the kernel recorded boot (OriginalRouteProtocol). On a host
// switched from it, Retrieve does not report them (they are not of
// RouteProtocol), so the first full resync plans a Create of each value,
// whose add meets the original's route (EEXIST). When the only route in
// the way is exactly the one the value asks for — protocol boot, main
// table, unicast, on the value's link alone, the same destination,
// gateway, metric and (IPv4) scope, no TOS and no attribute the model
// lacks (preferred source, onlink, mtu and the other route metrics, an
// encapsulation) — Create adopts it: one RTM_NEWROUTE with NLM_F_REPLACE
// gives it protocol RouteProtocol in place, so forwarding never misses it,
// and the value is CONFIGURED with the metadata of any Create. The
// transaction log shows that CREATE; nothing is deleted. Any other route
// in the way (another gateway, scope, link or TOS, an attribute the model
// lacks, another protocol such as static, kernel or dhcp, or a second
// route of that destination and metric) is refused as before, the error
// saying why it is not adopted; a route of another metric is not in the
// way at all and stays beside ours. An identical route an operator added
// with `ip route add` and no "proto" is indistinguishable and is adopted
// too: the value then owns it, and deleting the value deletes it.
// SetAdoptOriginalRoutes(false) turns the adoption off (the daemon's
// linux.adopt_original_routes). The original's permanent neighbours need
// nothing: Retrieve finds them as the values ask, and the scheduler
// adopts them as they are, executing nothing.
//
// # Routes
//
//   - Validate: the model's rules (models.LinuxRoute.Validate, naming the
//     invalid fields), the key must be the value's own
//     (models.LinuxRoute.CheckKey), and scope HOST cannot have a gateway.
//     An invalid value is never retried until it changes.
//   - Dependencies: "interface <iface> up" (ifplugin.StateKey(iface, true)); with a
//     gateway, "gateway <gw> reachable": an address of the interface whose subnet
//     holds the gateway (ifplugin.AddressKeyPrefix) or a link-local route of
//     the interface whose destination holds it (LinkLocalRouteKey). An IPv6
//     link-local gateway (fe80::/10) needs neither.
//   - DerivedValues: a route without gateway whose scope is LINK, or
//     UNDEFINED (the kernel then chooses link), derives the property
//     LinkLocalRouteKey(iface, masked dst).
//   - Create: RouteAdd in the main table of the interface's namespace
//     (scope mapped, UNDEFINED = universe with a gateway, link without;
//     metric = priority; protocol RouteProtocol). Idempotent: when the kernel
//     answers EEXIST and the route there is ours, on the same link, it is
//     success (replaced first if its gateway or scope differ). The route the
//     original agent made for the value is adopted (replaced in place, see
//     "Routes the original agent made"). Any other foreign route (or one of
//     ours on another link) with the same destination and metric is a
//     conflict: a retriable error naming it. Missing interface metadata (the
//     dependency should prevent it) is a retriable error saying so.
//   - Update: RouteReplace, in place, for a new gateway or scope.
//     UpdateWithRecreate when the metric changes: the metric is part of the
//     kernel route's identity, so the old route is deleted and the new one
//     added.
//   - Delete: RouteDel of our protocol on the link recorded when the route
//     was created (metadata Placement). A route that is already gone (ESRCH,
//     ENOENT, its link or namespace gone) is success.
//   - Retrieve: the routes of protocol RouteProtocol in the main table of the
//     namespaces of the interfaces the expected (correlate) routes name, mapped
//     back from (namespace, ifindex) to the logical interface; routes on other
//     links are skipped (logged). Values are built from the kernel
//     (destination masked, gateway, scope, metric) and returned in the
//     expected spelling when equivalent. With SetInterfaceLister every
//     configured interface is looked at, so that a full resync also removes
//     a route of ours the NB dropped while the agent was not running.
//   - ValueComparator: values that give the same kernel route are equal:
//     "10.1.2.3/16" and "10.1.0.0/16", UNDEFINED scope and the scope the
//     kernel chooses, any scope for IPv6 (the kernel keeps none), IPv6 metric
//     0 and 1024 (the kernel's default).
//
// # ARP entries
//
//   - Validate: models.LinuxARP.Validate and CheckKey.
//   - Dependencies: "interface <iface> up" (ifplugin.StateKey(iface,
//     true)), not merely the interface: the kernel flushes the permanent
//     neighbours of a link that goes down, so the entry is deleted first
//     (PENDING) and added again when the interface is up.
//   - Create and Update: NeighSet (create or replace) of a PERMANENT entry:
//     idempotent, and a new MAC is changed in place.
//   - Delete: NeighDel; an entry already gone is success.
//   - Retrieve: the permanent IPv4 and IPv6 neighbours with a link-layer
//     address on the links of the interfaces the expected entries name (all
//     configured interfaces with SetInterfaceLister).
//
// # Drift
//
// The plugin tells the interface watcher (ifplugin.Watcher.SetLinkObjects:
// the Plugin is an ifplugin.LinkObjects) which routes and ARP entries a
// netlink event concerns, so that the watcher reports them to the
// scheduler (ReportDrift) when they change outside the agent:
//
//	w := ifplugin.NewWatcher(nsManager, sched, logger)
//	w.SetLinkObjects(l3) // before w.Run
//
// The metadata maps of both descriptors, built by the plugin, index the
// values by where the agent put them (Placement: namespace and ifindex)
// and, on each link, by the masked destination of a route or the IP of an
// ARP entry (an IPv4-mapped IPv6 address counts as the IPv4 one, as in
// the kernel). Each Placement also carries what the agent applied
// (Applied: gateway, metric and, for IPv4, scope of a route; MAC of an ARP
// entry), from Create and Update, or as Retrieve found it, so that the
// echo of the agent's own changes is not reported:
//
//   - RouteDrift: a route event in the main table, on one link, gives the
//     routes of the agent to its destination on that link that it shows
//     out of sync: a route of ours (protocol RouteProtocol) deleted with
//     the metric the agent gave it; added or replaced with another
//     gateway, scope or metric, or a TOS; a route of another protocol
//     added with the metric of ours (`ip route replace` without
//     "proto 181" takes its place). A route as the agent made it (its own
//     change, or someone adding it again as it was: the SB is as intended)
//     gives nothing, and so do routes the agent does not hold.
//   - NeighDrift: a neighbour event (but proxy entries) gives the ARP entry
//     of its IP on its link when it is deleted or no longer permanent with
//     the MAC the agent set.
//   - OnLink: every route and ARP entry on a link, which the watcher
//     reports with a link deleted or set down outside the agent: the
//     kernel flushes their routes and neighbours without always sending
//     RTM_DELROUTE or RTM_DELNEIGH.
//
// An event of the agent's own delete (or update) may be read before the
// scheduler has updated the metadata map: the watcher checks what looks
// like drift again after a transaction barrier (see ifplugin, "Drift"),
// so only what still differs from what the agent applied is reported.
//
// The refresh compares field by field (Retrieve: destination, gateway,
// scope, metric, link; IP, MAC, permanent state), so a route replaced with
// another gateway is found changed and a neighbour that is no longer
// permanent is found gone. A multipath route or a route of ours in another
// table is never the agent's and is not reported. Limits: a route of
// another protocol put in place of ours on another link (same destination
// and metric) is not seen until a resync.
//
// The indexes hold one entry per value; their maps are rebuilt once they
// hold less than a quarter of their peak (of at least 1024), so that the
// memory of a bulk delete comes back (amortized O(1) per delete).
//
// # Errors
//
// Every callback is idempotent. Create, Update and Delete errors are
// retriable (the scheduler retries them when the transaction asks for it),
// except EINVAL from the kernel (a request it rejects as such, which no
// repetition fixes) and values that do not parse (api.NonRetriable). Deleting
// something that is not there is never an error. Dumps the kernel interrupts
// (netlink.ErrDumpInterrupted: the table changed meanwhile) are run again, a
// few times; a partial dump is never taken as the truth: Retrieve fails
// instead, and the scheduler keeps its view of the kernel.
//
// # Batches
//
// Both descriptors have Batch (api.BatchOp), and their Create, Update and
// Delete are batches of one, so one code path serves both: each operation
// is parsed and its link looked up, its request built (the messages the
// netlink library would send: internal/nlbatch), then the requests of the
// whole batch go on one NETLINK_ROUTE socket per namespace, in the batch's
// order, many in flight, and each operation gets its own result from its
// own ack, mapped as above (EEXIST of an add explained by one dump of the
// table per namespace and family for the whole batch, a gone route or
// neighbour deleted is success, ENETUNREACH or ENODEV the failure of that
// operation alone). The metadata (Placement, with Applied) is the same as
// a lone Create or Update gives. The sockets are kept per namespace
// (reopened when the namespace is made again); Plugin.Close closes them.
//
// # The context
//
// Every callback takes the context the scheduler gives it. Netlink requests
// take none, and Create, Update and Delete are one or two short requests
// each, so they run to the end once started. Retrieve stops between two
// namespaces when the context is done (the scheduler closes, or the call's
// deadline passes) and returns its error. No callback waits for an
// interface: a missing one is a dependency the scheduler waits for
// (PENDING), or a retriable failure.
package l3plugin

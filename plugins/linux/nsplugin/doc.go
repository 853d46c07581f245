// Package nsplugin gives the Linux plugins access to network namespaces: a
// netlink handle per namespace (sockets opened inside it, so no goroutine
// has to switch namespaces to configure it), and, where a namespace switch
// cannot be avoided (sysctl files), a switch on a locked OS thread that is
// never returned to the Go scheduler in a foreign namespace.
//
// A namespace is referenced as in the configuration (linux.namespace
// NetNamespace): by name (NSID: a namespace of `ip netns`, under
// /var/run/netns), by process ID (PID) or by the path of a namespace file
// (FD, e.g. /proc/1234/ns/net). Unset means the agent's own namespace.
// MICROSERVICE references (a container by its microservice label) need a
// container runtime and are not supported: they are reported as invalid.
// One namespace may have several references (its name, its file, the PID
// of a process in it): Manager.IsOwn and Manager.Same tell which resolve
// to the agent's namespace, or to the same one, now.
//
// # Named namespaces the agent makes
//
// Manager.Handle with create makes a named namespace that does not exist
// the way `ip netns add` (iproute2) does, so that iproute2 treats it as one
// of its own: `ip netns list` lists it and, once the agent is stopped (its
// handles closed), `ip netns del NAME` removes it. First the directory
// /var/run/netns is made (if missing) and prepared, under an exclusive
// flock of it as iproute2 takes: it is made a shared mount
// (MS_SHARED|MS_REC) and, if it is not a mount point yet, bind-mounted onto
// itself (MS_BIND|MS_REC) first. Then an empty file is made for the name
// (exclusively: a name made meanwhile by someone else is theirs), a thread
// of the agent unshares a new network namespace and bind-mounts its
// /proc/self/task/<tid>/ns/net onto the file, and goes back to the agent's
// namespace. Had the file been bound while the directory was not a mount
// point (as netns.NewNamed does), the next `ip netns add` would bind the
// directory over it, recursively, leaving a second mount of the file
// hidden under the directory's, and `ip netns del` would fail with "Device
// or resource busy".
//
// Each namespace the agent makes is marked as the agent's, in a file named
// after it in MarkDir (/run/netagent/netns, made 0700) holding what
// identifies that namespace: the kernel's boot ID, the device and inode of
// the namespace file, and the namespace's cookie (SO_NETNS_COOKIE, unique
// for the life of the machine, so a namespace deleted and made again under
// the same name, maybe with the same inode number, is told apart; kernels
// before 5.14 have none, and there the inode is all). The marks survive a
// restart of the agent, not a reboot: /run is a tmpfs on most systems, and
// where it is not the boot ID no longer matches. They live next to the
// namespace, not in it, so `ip netns del` does not break them: a mark whose
// namespace is gone, or is another one now, is stale, is never taken for
// the agent's, and is dropped when seen (by NewManager for those that are
// gone or from another boot, by Created and RemoveIfCreated for the
// others). Marks are read and written under an exclusive flock of
// MarkDir, so agents (or test binaries) sharing it do not lose each
// other's. A namespace left by an agent that stopped between binding it and
// writing its mark is not known as the agent's.
//
// A namespace is the agent's (Created) while its mark, kept in memory by the
// Manager that made it and in MarkDir for later ones, matches it. Only such
// a namespace is ever removed (RemoveIfCreated), and only when nothing
// uses it: a namespace that holds a link other than lo (an operator's, made
// with `ip netns exec` or moved there) or a process is kept, and
// RemoveIfCreated says why (*InUseError); it stays the agent's, so a later
// call may remove it. A namespace the agent did not make, an operator's or
// one made again under the agent's name after `ip netns del`, is never
// removed. Removal is iproute2's: the namespace file is unmounted
// (MNT_DETACH) and unlinked, then the mark dropped.
//
// An agent run in a mount namespace of its own (under `ip netns exec`,
// which makes one, or a container with a private /run) binds the
// namespaces it makes there: when it ends, the bind mounts go with its
// mount namespace and the empty files stay in /var/run/netns, the host's
// if /var/run/netns is shared with it. NewManager removes such an empty
// file when the agent's mark of this boot names it (the namespace is
// made again when needed); an empty file that is not the agent's is
// refused with an error saying what it is (any handle of a file that is
// not a namespace is).
//
// # Concurrency
//
// A Manager is safe for concurrent use. Its handles stay valid until the
// namespace is found deleted or re-created (then reopened) or the Manager
// closes.
package nsplugin

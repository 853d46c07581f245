// Package nlbatch sends netlink requests pipelined: many requests of one
// network namespace on one NETLINK_ROUTE socket opened inside it, each
// with a sequence number of its own, so that the kernel's answers are
// matched to their requests and every request gets its own result,
// instead of one request, its reply, then the next (the netlink library's
// Handle methods).
//
// # Contract
//
//   - Order: the requests of one namespace are sent in the order given and
//     the kernel executes them in that order (one socket, one queue): a
//     delete of a route and the create of a route with the same kernel
//     identity after it work as one after the other.
//   - Results: each request's result is nil (acked) or the kernel's errno
//     (a syscall.Errno, errors.Is works, wrapped with the kernel's
//     extended-ack message when it gives one). A failed request does not
//     stop the ones after it.
//   - Acks: the kernel carries out a socket's requests in order, within
//     the sendmsg that carries them, and answers every failed request; a
//     request asks for an ack (NLM_F_ACK) only when it is the last of its
//     sendmsg, and that ack stands for the requests before it that got no
//     answer (they succeeded). One answer is read per sendmsg and per
//     failure, not per request. A batch with a request that wants its
//     replies (Request.Reply) asks for every ack.
//   - Flow control: at most Window requests are without their result; the
//     socket's receive buffer (4 MiB, SO_RCVBUFFORCE as root) holds the
//     answers of a full window of failures, and answers are capped
//     (NETLINK_CAP_ACK: the request is not echoed back), so none is
//     dropped.
//   - A broken socket (a send or receive error, no answer within 30 s)
//     gives the requests without a result ErrNoReply (their effect is unknown) and
//     the socket is closed; the Pool opens a new one next time.
//   - Namespaces: a Pool keeps one socket per namespace (nsplugin.Ref),
//     opened inside it through nsplugin.Manager.Do, and opens it again when
//     the namespace under the reference was deleted and made again (the
//     Manager's handle changed). Pool.Run executes the requests of several
//     namespaces, each namespace's in order.
//
// The message builders (RouteAdd, RouteReplace, RouteDel, NeighSet,
// NeighDel, AddrAdd, AddrDel, LinkDel, LinkSetGroup, LinkDelGroup) encode
// what the library methods of the same name send for the fields the Linux
// plugins use; fields they do not encode are refused. The tests add
// objects both ways and compare what the kernel keeps, field by field.
// AppendRoute writes the route requests of a batch into one buffer, from
// the plugins' own types (no netlink.Route, net.IPNet or attribute values
// a route), the same bytes as the route builders.
//
// Measured (docs/benchmarks.md, "Issue 17"): a route costs the kernel a
// few µs pipelined against ~10 µs with a request and its reply at a time.
// Deleting links is not made cheaper by pipelining (each RTM_DELLINK
// waits for RCU in the kernel, ~18 ms for a veth pair); deleting them as
// one group (LinkSetGroup, then LinkDelGroup) is.
package nlbatch

package nlbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Subscription says where and how RouteSubscribe and NeighSubscribe
// listen.
type Subscription struct {
	// Enter runs a function inside the namespace watched (as for Open:
	// nsplugin.Manager.Do or DoAt, or a plain call for the current one).
	Enter func(func() error) error
	// ReceiveBufferSize is the socket's receive buffer (0: the system's);
	// with ForceReceiveBuffer it is set past the system's limit
	// (SO_RCVBUFFORCE, which needs CAP_NET_ADMIN: EPERM without).
	ReceiveBufferSize  int
	ForceReceiveBuffer bool
	// OnError is called with the errors of the subscription; an error
	// receiving (e.g. ENOBUFS: notifications were lost) ends it.
	OnError func(error)
}

// The library's subscriptions receive each message into a 64 KiB array
// of their own: the 10,000 route notifications of a bulk change (the echo
// of the agent's own adds) were 650 MB of garbage for the collector while
// the transaction ran. These read every message of a subscription into
// one buffer.

// RouteSubscribe sends the route notifications (IPv4 and IPv6) of a
// namespace on ch, as netlink.RouteSubscribeWithOptions does, until done
// closes; ch is closed when the subscription ends. It fills the fields of
// each netlink.Route that a notification of the main tables carries
// (family, destination, gateway, preferred source, table, protocol, scope,
// type, TOS, flags, metric, output and input link, realm, multipath next
// hops with their gateways), not encapsulations, metrics or MPLS (checked
// against the library by TestRouteSubscribeAsTheLibrary).
func RouteSubscribe(ch chan<- netlink.RouteUpdate, done <-chan struct{}, o Subscription) error {
	return subscribe("route", unix.RTMGRP_IPV4_ROUTE|unix.RTMGRP_IPV6_ROUTE, done, o, func() { close(ch) },
		func(typ, flags uint16, data []byte) (bool, error) {
			r, err := parseRoute(data)
			if err != nil {
				return true, err
			}
			select {
			case ch <- netlink.RouteUpdate{
				Type:    typ,
				NlFlags: flags & (unix.NLM_F_REPLACE | unix.NLM_F_EXCL | unix.NLM_F_CREATE | unix.NLM_F_APPEND),
				Route:   r,
			}:
				return true, nil
			case <-done:
				return false, nil
			}
		})
}

// NeighSubscribe sends the neighbour notifications of a namespace on ch,
// as netlink.NeighSubscribeWithOptions does, until done closes; ch is
// closed when the subscription ends. Each message is decoded by the
// library (netlink.NeighDeserialize) from a copy of its own.
func NeighSubscribe(ch chan<- netlink.NeighUpdate, done <-chan struct{}, o Subscription) error {
	return subscribe("neighbour", unix.RTMGRP_NEIGH, done, o, func() { close(ch) },
		func(typ, _ uint16, data []byte) (bool, error) {
			n, err := netlink.NeighDeserialize(append([]byte(nil), data...))
			if err != nil {
				return true, err
			}
			select {
			case ch <- netlink.NeighUpdate{Type: typ, Neigh: *n}:
				return true, nil
			case <-done:
				return false, nil
			}
		})
}

// subscribe opens a socket in the namespace subscribed to groups and hands
// each notification (its type, flags and data, in the subscription's
// buffer) to deliver, until done closes or a receive fails; then it calls
// end. deliver returns false to stop (done closed).
func subscribe(what string, groups uint32, done <-chan struct{}, o Subscription, end func(), deliver func(typ, flags uint16, data []byte) (bool, error)) error {
	fd := -1
	err := o.Enter(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s subscription: opening a netlink socket: %w", what, err)
	}
	if err := subscribeSetup(fd, groups, o); err != nil {
		unix.Close(fd)
		return fmt.Errorf("%s subscription: %w", what, err)
	}
	f := os.NewFile(uintptr(fd), "netlink")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return fmt.Errorf("%s subscription: %w", what, err)
	}
	onErr := o.OnError
	if onErr == nil {
		onErr = func(error) {}
	}
	closed := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-closed:
		}
		f.Close() // ends a Read in progress
	}()
	go func() {
		defer end()
		defer close(closed)
		buf := make([]byte, 1<<16)
		var from unix.RawSockaddrNetlink
		for {
			var n int
			var rerr error
			err := rc.Read(func(fd uintptr) bool {
				n, rerr = recvFrom(fd, buf, &from)
				return rerr != unix.EAGAIN
			})
			if err == nil {
				err = rerr
			}
			if err != nil {
				select {
				case <-done:
				default:
					onErr(fmt.Errorf("receiving %s notifications: %w", what, err))
				}
				return
			}
			if from.Family != unix.AF_NETLINK || from.Pid != 0 {
				onErr(fmt.Errorf("%s notification from port %d (family %d), not the kernel", what, from.Pid, from.Family))
				continue
			}
			for msg := buf[:n]; len(msg) >= unix.SizeofNlMsghdr; {
				size := int(binary.NativeEndian.Uint32(msg[0:4]))
				if size < unix.SizeofNlMsghdr || size > len(msg) {
					onErr(fmt.Errorf("%s notification of %d bytes in %d", what, size, len(msg)))
					break
				}
				typ := binary.NativeEndian.Uint16(msg[4:6])
				flags := binary.NativeEndian.Uint16(msg[6:8])
				data := msg[unix.SizeofNlMsghdr:size]
				msg = msg[min(len(msg), (size+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1)):]
				switch typ {
				case unix.NLMSG_DONE:
					continue
				case unix.NLMSG_ERROR:
					if len(data) >= 4 {
						if e := int32(binary.NativeEndian.Uint32(data[0:4])); e != 0 {
							onErr(fmt.Errorf("error message: %w", syscall.Errno(-e)))
						}
					}
					continue
				}
				more, err := deliver(typ, flags, data)
				if err != nil {
					onErr(fmt.Errorf("%s notification: %w", what, err))
				}
				if !more {
					return
				}
			}
		}
	}()
	return nil
}

// recvFrom reads one message into buf and its sender into from: recvfrom
// as unix.Recvfrom makes it, without the Sockaddr it allocates for each
// message (a bulk change brings one notification per route).
func recvFrom(fd uintptr, buf []byte, from *unix.RawSockaddrNetlink) (int, error) {
	fromLen := uint32(unsafe.Sizeof(*from))
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0,
		uintptr(unsafe.Pointer(from)), uintptr(unsafe.Pointer(&fromLen)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

func subscribeSetup(fd int, groups uint32, o Subscription) error {
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groups}); err != nil {
		return fmt.Errorf("binding: %w", err)
	}
	if o.ReceiveBufferSize > 0 {
		opt := unix.SO_RCVBUF
		if o.ForceReceiveBuffer {
			opt = unix.SO_RCVBUFFORCE
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, o.ReceiveBufferSize); err != nil {
			return fmt.Errorf("receive buffer: %w", err)
		}
	}
	return nil
}

// errShortRoute is the error of a route message cut short.
var errShortRoute = errors.New("route notification: message cut short")

// parseRoute reads a route message (rtmsg and attributes) as
// netlink's deserializeRoute does for the fields RouteSubscribe fills.
// Addresses are copied: the buffer is the subscription's.
func parseRoute(m []byte) (netlink.Route, error) {
	if len(m) < unix.SizeofRtMsg {
		return netlink.Route{}, errShortRoute
	}
	r := netlink.Route{
		Family:   int(m[0]),
		Tos:      int(m[3]),
		Table:    int(m[4]),
		Protocol: netlink.RouteProtocol(m[5]),
		Scope:    netlink.Scope(m[6]),
		Type:     int(m[7]),
		Flags:    int(binary.NativeEndian.Uint32(m[8:12])),
	}
	dstLen := int(m[1])
	err := eachAttr(m[unix.SizeofRtMsg:], func(typ uint16, v []byte) error {
		switch typ {
		case unix.RTA_GATEWAY:
			r.Gw = ipCopy(v)
		case unix.RTA_PREFSRC:
			r.Src = ipCopy(v)
		case unix.RTA_DST:
			ip := ipCopy(v)
			r.Dst = &net.IPNet{IP: ip, Mask: net.CIDRMask(dstLen, 8*len(ip))}
		case unix.RTA_OIF, unix.RTA_IIF, unix.RTA_PRIORITY, unix.RTA_FLOW, unix.RTA_TABLE:
			if len(v) < 4 {
				return errShortRoute
			}
			x := int(binary.NativeEndian.Uint32(v))
			switch typ {
			case unix.RTA_OIF:
				r.LinkIndex = x
			case unix.RTA_IIF:
				r.ILinkIndex = x
			case unix.RTA_PRIORITY:
				r.Priority = x
			case unix.RTA_FLOW:
				r.Realm = x
			case unix.RTA_TABLE:
				r.Table = x
			}
		case unix.RTA_MULTIPATH:
			for len(v) > 0 {
				if len(v) < unix.SizeofRtNexthop {
					return errShortRoute
				}
				size := int(binary.NativeEndian.Uint16(v[0:2]))
				if size < unix.SizeofRtNexthop || size > len(v) {
					return errShortRoute
				}
				nh := &netlink.NexthopInfo{Flags: int(v[2]), Hops: int(v[3]), LinkIndex: int(int32(binary.NativeEndian.Uint32(v[4:8])))}
				if err := eachAttr(v[unix.SizeofRtNexthop:size], func(typ uint16, a []byte) error {
					if typ == unix.RTA_GATEWAY {
						nh.Gw = ipCopy(a)
					}
					return nil
				}); err != nil {
					return err
				}
				r.MultiPath = append(r.MultiPath, nh)
				v = v[min(len(v), (size+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1)):]
			}
		}
		return nil
	})
	if r.Dst == nil && err == nil {
		// As the library (and iproute2): a route without a destination is
		// the family's default route.
		switch r.Family {
		case netlink.FAMILY_V4:
			r.Dst = &net.IPNet{IP: net.IPv4(0, 0, 0, 0), Mask: net.CIDRMask(dstLen, 8*net.IPv4len)}
		case netlink.FAMILY_V6:
			r.Dst = &net.IPNet{IP: make(net.IP, net.IPv6len), Mask: net.CIDRMask(dstLen, 8*net.IPv6len)}
		}
	}
	return r, err
}

// eachAttr calls f with the type and value of each attribute of b.
func eachAttr(b []byte, f func(typ uint16, v []byte) error) error {
	for len(b) >= unix.SizeofRtAttr {
		size := int(binary.NativeEndian.Uint16(b[0:2]))
		if size < unix.SizeofRtAttr || size > len(b) {
			return errShortRoute
		}
		if err := f(binary.NativeEndian.Uint16(b[2:4])&^unix.NLA_F_NESTED, b[unix.SizeofRtAttr:size]); err != nil {
			return err
		}
		b = b[min(len(b), (size+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1)):]
	}
	return nil
}

func ipCopy(v []byte) net.IP { return net.IP(append([]byte(nil), v...)) }

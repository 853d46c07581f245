package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"
)

// pingInterval is how often ping sends an echo request until a reply
// comes.
const pingInterval = 200 * time.Millisecond

// ICMP and ICMPv6 echo types.
const (
	icmpEchoRequest   = 8
	icmpEchoReply     = 0
	icmpv6EchoRequest = 128
	icmpv6EchoReply   = 129
)

// pingSeq numbers the probes of this process, so that concurrent pings
// to the same address tell their replies apart.
var pingSeq atomic.Uint32

// ping sends ICMP echo requests to p.Target from p.Namespace every
// pingInterval until an echo reply of its own comes from the target or ctx
// ends.
func ping(ctx context.Context, p Probe) error {
	target := netip.MustParseAddr(p.Target).Unmap()
	network, request, reply := "ip4:icmp", byte(icmpEchoRequest), byte(icmpEchoReply)
	if target.Is6() {
		network, request, reply = "ip6:ipv6-icmp", icmpv6EchoRequest, icmpv6EchoReply
	}
	var conn net.PacketConn
	err := inNamespace(p.Namespace, func() error {
		var err error
		conn, err = net.ListenPacket(network, "")
		return err
	})
	if err != nil {
		return fmt.Errorf("ICMP socket: %w", err)
	}
	defer conn.Close()
	id := uint16(os.Getpid())
	seq := uint16(pingSeq.Add(1))
	dst := &net.IPAddr{IP: target.AsSlice()}

	// Replies are read until ctx ends (the deadline wakes the reader).
	got := make(chan error, 1)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				got <- err
				return
			}
			src, ok := from.(*net.IPAddr)
			if !ok {
				continue
			}
			a, _ := netip.AddrFromSlice(src.IP)
			if a.Unmap() != target || n < 8 || buf[0] != reply ||
				binary.BigEndian.Uint16(buf[4:6]) != id || binary.BigEndian.Uint16(buf[6:8]) != seq {
				continue // another host's, another probe's, or not a reply
			}
			got <- nil
			return
		}
	}()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(deadline)
	}
	msg := echoRequest(request, id, seq, !target.Is6())
	tick := time.NewTicker(pingInterval)
	defer tick.Stop()
	var sendErr error
	for {
		if _, err := conn.WriteTo(msg, dst); err != nil {
			sendErr = err // e.g. no route: kept for the error, tried again
		}
		select {
		case err := <-got:
			if err == nil {
				return nil
			}
			if sendErr != nil {
				return sendErr
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("no echo reply from %s: %w", target, err)
			}
			return err
		case <-ctx.Done():
			_ = conn.Close() // ends the reader
			if sendErr != nil {
				return sendErr
			}
			return fmt.Errorf("no echo reply from %s: %w", target, ctx.Err())
		case <-tick.C:
		}
	}
}

// echoRequest is an ICMP (withChecksum: the kernel computes ICMPv6's) echo
// request.
func echoRequest(typ byte, id, seq uint16, withChecksum bool) []byte {
	msg := make([]byte, 16)
	msg[0] = typ
	binary.BigEndian.PutUint16(msg[4:], id)
	binary.BigEndian.PutUint16(msg[6:], seq)
	copy(msg[8:], "netagent")
	if withChecksum {
		binary.BigEndian.PutUint16(msg[2:], checksum(msg))
	}
	return msg
}

// checksum is the Internet checksum (RFC 1071) of b.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

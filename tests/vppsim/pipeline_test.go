package vppsim_test

import (
	"testing"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/core"

	"github.com/netagent-io/netagent/tests/vppsim"
)

// TestPipelinedRequests: as VPP 25.10, vppsim takes many requests in
// flight on one connection, carries them out in order and answers each
// with its request's context. Two GoVPP streams (two channels: the
// channel is in the context) send alternately without waiting: each gets
// exactly its own replies, in the order of its requests (the loopbacks'
// indexes grow; a dump sent after k creates sees them and no later one).
func TestPipelinedRequests(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	const n = 300
	a := must(conn.NewStream(ctx, core.WithReplySize(4*n)))(t)
	b := must(conn.NewStream(ctx, core.WithReplySize(4*n)))(t)
	defer func() { _ = a.Close(); _ = b.Close() }()
	for i := range n {
		if err := a.SendMsg(&interfaces.CreateLoopback{}); err != nil {
			t.Fatal(err)
		}
		if err := b.SendMsg(&interfaces.SwInterfaceSetFlags{SwIfIndex: 1 << 20, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}); err != nil {
			t.Fatal(err)
		}
		if i == n/2 {
			if err := a.SendMsg(&interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}); err != nil {
				t.Fatal(err)
			}
			if err := a.SendMsg(&memclnt.ControlPing{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := uint32(0)
	for i := range n {
		r, ok := must(a.RecvMsg())(t).(*interfaces.CreateLoopbackReply)
		if !ok || r.Retval != 0 || uint32(r.SwIfIndex) <= last {
			t.Fatalf("stream a, reply %d: %+v after sw_if_index %d: want a create_loopback_reply with a greater index", i, r, last)
		}
		last = uint32(r.SwIfIndex)
		if i == n/2 {
			var details int
			for {
				m := must(a.RecvMsg())(t)
				if _, end := m.(*memclnt.ControlPingReply); end {
					break
				}
				d, ok := m.(*interfaces.SwInterfaceDetails)
				if !ok || uint32(d.SwIfIndex) > last {
					t.Fatalf("stream a, dump after %d creates: %+v", i+1, m)
				}
				details++
			}
			if details != i+2 { // local0 and the loopbacks so far
				t.Errorf("the dump after %d creates listed %d interfaces, want %d", i+1, details, i+2)
			}
		}
	}
	for i := range n {
		r, ok := must(b.RecvMsg())(t).(*interfaces.SwInterfaceSetFlagsReply)
		if !ok || r.Retval != int32(api.INVALID_SW_IF_INDEX) {
			t.Fatalf("stream b, reply %d: %+v, want sw_interface_set_flags_reply INVALID_SW_IF_INDEX", i, r)
		}
	}
	if got := len(s.Interfaces()); got != n+1 {
		t.Errorf("vppsim has %d interfaces, want %d", got, n+1)
	}
}

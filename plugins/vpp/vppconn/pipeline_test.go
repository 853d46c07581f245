package vppconn_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// loopbackCalls are n create_loopback requests, with after each k-th a
// sw_interface_set_flags of an index VPP does not have (it fails) and a
// sw_interface_dump of every interface (a dump in the middle).
func loopbackCalls(n, k int) []vppconn.Call {
	var calls []vppconn.Call
	for i := range n {
		calls = append(calls, vppconn.Call{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}})
		if i%k == k-1 {
			calls = append(calls,
				vppconn.Call{Request: &interfaces.SwInterfaceSetFlags{SwIfIndex: 1 << 30, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, Reply: &interfaces.SwInterfaceSetFlagsReply{}},
				vppconn.Call{Request: &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}})
		}
	}
	return calls
}

// TestPipeline: more requests than the window, of three kinds (a request,
// one VPP refuses, a dump), on vppsim and the real VPP: each call gets its
// own reply or error, in the order sent (each dump sees the loopbacks
// created before it and none after), the failures do not stop the others,
// and the metrics count every request.
func TestPipeline(t *testing.T) {
	m, reg := metered(t)
	const n, k = vppconn.PipelineWindow + 88, 50 // > PipelineWindow
	calls := loopbackCalls(n, k)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m.Pipeline(ctx, "interfaces", calls)

	var created []uint32
	for i, c := range calls {
		switch req := c.Request.(type) {
		case *interfaces.CreateLoopback:
			if c.Err != nil {
				t.Fatalf("call %d create_loopback: %v", i, c.Err)
			}
			idx := uint32(c.Reply.(*interfaces.CreateLoopbackReply).SwIfIndex)
			if len(created) > 0 && idx <= created[len(created)-1] {
				t.Fatalf("call %d: create_loopback gave sw_if_index %d after %d: replies out of order", i, idx, created[len(created)-1])
			}
			created = append(created, idx)
		case *interfaces.SwInterfaceSetFlags:
			if !vppconn.IsVPPError(c.Err, govppapi.INVALID_SW_IF_INDEX) {
				t.Errorf("call %d sw_interface_set_flags of index %d: %v, want INVALID_SW_IF_INDEX", i, req.SwIfIndex, c.Err)
			}
		case *interfaces.SwInterfaceDump:
			if c.Err != nil {
				t.Fatalf("call %d sw_interface_dump: %v", i, c.Err)
			}
			have := map[uint32]bool{}
			for _, d := range c.Details {
				have[uint32(d.(*interfaces.SwInterfaceDetails).SwIfIndex)] = true
			}
			for j, idx := range created {
				if !have[idx] {
					t.Fatalf("call %d: the dump after %d loopbacks lacks the %d-th (sw_if_index %d)", i, len(created), j, idx)
				}
			}
			if len(have) < len(created)+1 || len(have) > len(created)+1+8 { // local0, and what the VPP had before (a real VPP: a few)
				t.Errorf("call %d: the dump after %d loopbacks has %d interfaces", i, len(created), len(have))
			}
		}
	}
	if len(created) != n {
		t.Fatalf("%d loopbacks created, want %d", len(created), n)
	}
	counts := callCounts(t, reg)
	want := map[string]int{"create_loopback ok": n, "sw_interface_set_flags error": n / k, "sw_interface_dump ok": n / k}
	for key, w := range want {
		if counts[key] != w {
			t.Errorf("metrics: %d calls %s, want %d (all: %v)", counts[key], key, w, counts)
		}
	}

	// The loopbacks go again, pipelined too.
	deleteLoopbacks(ctx, t, m, created)
}

// metered is a connected Manager with its metrics in a registry of its own.
func metered(t *testing.T) (*vppconn.Manager, *prometheus.Registry) {
	t.Helper()
	m := connected(t)
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// deleteLoopbacks deletes the loopbacks, pipelined, and fails the test on
// any error.
func deleteLoopbacks(ctx context.Context, t *testing.T, m *vppconn.Manager, idxs []uint32) {
	t.Helper()
	dels := make([]vppconn.Call, len(idxs))
	for i, idx := range idxs {
		dels[i] = vppconn.Call{Request: &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(idx)}, Reply: &interfaces.DeleteLoopbackReply{}}
	}
	m.Pipeline(ctx, "interfaces", dels)
	for i, c := range dels {
		if c.Err != nil {
			t.Fatalf("delete_loopback %d: %v", i, c.Err)
		}
	}
}

// loopbacksIn is how many interfaces VPP has besides local0, dumped through
// GoVPP's connection when a pipeline is running.
func loopbacksIn(ctx context.Context, t *testing.T, m *vppconn.Manager) int {
	t.Helper()
	conn, err := m.Conn("interfaces")
	if err != nil {
		t.Fatal(err)
	}
	ifs, err := vppconn.Dump[*interfaces.SwInterfaceDetails](ctx, conn, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		t.Fatal(err)
	}
	return len(ifs) - 1
}

// callCounts reads the Manager's call histogram: "message result" -> count.
func callCounts(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "netagent_vpp_api_call_duration_seconds" {
			continue
		}
		for _, mt := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["message"]+" "+labels["result"]] += int(mt.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// TestPipelineBreaks: when VPP does not answer within the call timeout the
// calls from the one waiting on fail with a *PipelineError wrapping a
// *CallTimeoutError, saying which were sent; a cancelled context sends
// nothing; without a connection every call fails with ErrNotConnected.
func TestPipelineBreaks(t *testing.T) {
	needSim(t, "a VPP slow to answer (Delay)")
	const timeout = 200 * time.Millisecond
	sim, m, rec := simManager(t, timeout)

	sim.Delay("sw_interface_set_flags", 2*timeout)
	calls := loopbackCalls(3*vppconn.PipelineWindow, 100) // the first set_flags is call 100
	m.Pipeline(context.Background(), "interfaces", calls)
	for i, c := range calls[:100] {
		if c.Err != nil {
			t.Fatalf("call %d before the slow one: %v", i, c.Err)
		}
	}
	sent := 0
	for i, c := range calls[100:] {
		var pe *vppconn.PipelineError
		var te *vppconn.CallTimeoutError
		if !errors.As(c.Err, &pe) || !errors.As(c.Err, &te) || te.Message != "sw_interface_set_flags" || te.Timeout != timeout {
			t.Fatalf("call %d after the slow one: %v (%T), want a *PipelineError with a *CallTimeoutError of sw_interface_set_flags", 100+i, c.Err, c.Err)
		}
		if pe.Sent {
			sent++
			if !strings.Contains(c.Err.Error(), "sent, no reply") {
				t.Errorf("call %d: %v does not say it was sent", 100+i, c.Err)
			}
		} else if !strings.Contains(c.Err.Error(), "not sent") {
			t.Errorf("call %d: %v does not say it was not sent", 100+i, c.Err)
		}
	}
	// When the slow reply was awaited, more than half the window and at
	// most the window were in flight (the window is refilled each time half
	// of it is free).
	if sent <= vppconn.PipelineWindow/2 || sent > vppconn.PipelineWindow {
		t.Errorf("%d calls reported sent from the slow one on, want more than half the window and at most the window, %d", sent, vppconn.PipelineWindow)
	}

	// Cancelled: nothing is sent.
	sim.ResetCalls()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = loopbackCalls(3, 10)
	m.Pipeline(ctx, "interfaces", calls)
	for i, c := range calls {
		var pe *vppconn.PipelineError
		if !errors.As(c.Err, &pe) || pe.Sent || !errors.Is(c.Err, context.Canceled) {
			t.Errorf("call %d with a cancelled context: %v, want not sent, context.Canceled", i, c.Err)
		}
	}
	if got := sim.Calls(); slices.Contains(got, "create_loopback") {
		t.Errorf("vppsim received %v after a cancelled pipeline", got)
	}

	noErrorRecords(t, rec)
}

// TestPipelineVPPGoes: when VPP goes while a pipeline waits for a reply,
// the calls from that one on fail at once (not at their timeout) with a
// *PipelineError wrapping ErrNotConnected; later pipelines fail with
// ErrNotConnected. (CI under -race saw the replies of the calls before it
// lost too: the connection broke before GoVPP handed them over.)
func TestPipelineVPPGoes(t *testing.T) {
	needSim(t, "a VPP that does not answer (Delay)")
	sim, m, rec := simManager(t, time.Hour)
	sim.Delay("sw_interface_set_flags", time.Hour)
	sim.ResetCalls()
	calls := loopbackCalls(20, 10)
	done := make(chan struct{})
	go func() { defer close(done); m.Pipeline(context.Background(), "interfaces", calls) }()
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Contains(sim.Calls(), "sw_interface_set_flags") {
		if time.Now().After(deadline) {
			t.Fatal("sw_interface_set_flags not sent")
		}
		runtime.Gosched()
	}
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the pipeline waiting when VPP went still waits")
	}
	for i, c := range calls {
		var pe *vppconn.PipelineError
		// Answered before VPP went: the reply may still have been on its
		// way when the connection broke (GoVPP fails the stream as soon
		// as it notices), so such a call either has its reply or is sent
		// without one (VPP may have carried it out, as it did).
		if i < 10 && c.Err != nil && (!errors.As(c.Err, &pe) || !pe.Sent || !errors.Is(c.Err, vppconn.ErrNotConnected)) {
			t.Errorf("call %d before VPP went: %v, want its reply or sent without one", i, c.Err)
		}
		if i >= 10 && (!errors.As(c.Err, &pe) || !errors.Is(c.Err, vppconn.ErrNotConnected)) {
			t.Errorf("call %d when VPP went: %v, want a *PipelineError wrapping ErrNotConnected", i, c.Err)
		}
	}
	calls = loopbackCalls(3, 10)
	m.Pipeline(context.Background(), "interfaces", calls)
	for i, c := range calls {
		if !errors.Is(c.Err, vppconn.ErrNotConnected) {
			t.Errorf("call %d without VPP: %v, want ErrNotConnected", i, c.Err)
		}
	}
	noErrorRecords(t, rec)
}

// TestPipelineDumpsWithMore: dumps sharing one control ping (Call.More),
// on vppsim and the real VPP: 120 loopbacks, some with an IPv4 and some
// with an IPv6 address; their ip_address_dump, both families of every
// loopback, go as calls of 40 requests each (and once as one call of all
// 240, more than the window: it goes alone), between ordinary calls. The
// details of each call are those of its requests, in order; grouped by
// sw_if_index and family they are each loopback's addresses; the metrics
// count every request. A call with More and a Reply fails every call, sent
// nothing.
func TestPipelineDumpsWithMore(t *testing.T) {
	m, reg := metered(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 120
	loops := loopbackCalls(n, n+1) // loopbacks only
	m.Pipeline(ctx, "interfaces", loops)
	idx := make([]interface_types.InterfaceIndex, n)
	want := map[string][]string{} // "<sw_if_index> <v4|v6>" -> addresses
	var adds []vppconn.Call
	for i := range loops {
		if loops[i].Err != nil {
			t.Fatal(loops[i].Err)
		}
		idx[i] = loops[i].Reply.(*interfaces.CreateLoopbackReply).SwIfIndex
		add := func(family string, a ip_types.AddressWithPrefix) {
			adds = append(adds, vppconn.Call{Request: &interfaces.SwInterfaceAddDelAddress{SwIfIndex: idx[i], IsAdd: true, Prefix: a},
				Reply: &interfaces.SwInterfaceAddDelAddressReply{}})
			key := fmt.Sprintf("%d %s", idx[i], family)
			want[key] = append(want[key], a.String())
		}
		if i%2 == 0 {
			add("v4", ip_types.AddressWithPrefix{Address: ip_types.Address{Af: ip_types.ADDRESS_IP4,
				Un: ip_types.AddressUnionIP4(ip_types.IP4Address{10, 77, byte(i), 1})}, Len: 24})
		}
		if i%3 == 0 {
			add("v6", ip_types.AddressWithPrefix{Address: ip_types.Address{Af: ip_types.ADDRESS_IP6,
				Un: ip_types.AddressUnionIP6(ip_types.IP6Address{0x20, 0x01, 0x0d, 0xb8, 0, 0x77, 0, byte(i), 15: 1})}, Len: 64})
		}
	}
	m.Pipeline(ctx, "interfaces", adds)
	for _, c := range adds {
		if c.Err != nil {
			t.Fatal(c.Err)
		}
	}

	var dumps []govppapi.Message
	for i := range n {
		dumps = append(dumps, &ip.IPAddressDump{SwIfIndex: idx[i]}, &ip.IPAddressDump{SwIfIndex: idx[i], IsIPv6: true})
	}
	check := func(what string, perCall int) {
		t.Helper()
		flags := vppconn.Call{Request: &interfaces.SwInterfaceSetFlags{SwIfIndex: idx[0], Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, Reply: &interfaces.SwInterfaceSetFlagsReply{}}
		calls := []vppconn.Call{flags}
		for from := 0; from < len(dumps); from += perCall {
			to := min(from+perCall, len(dumps))
			calls = append(calls, vppconn.Call{Request: dumps[from], More: dumps[from+1 : to]})
		}
		calls = append(calls, vppconn.Call{Request: &interfaces.SwInterfaceDump{SwIfIndex: idx[n-1]}}, flags)
		before := callCounts(t, reg)["ip_address_dump ok"]
		m.Pipeline(ctx, "interfaces", calls)
		got := map[string][]string{}
		for k, c := range calls {
			if c.Err != nil {
				t.Fatalf("%s: call %d (%s): %v", what, k, c.Request.GetMessageName(), c.Err)
			}
			ds, ok := c.Request.(*ip.IPAddressDump)
			if !ok {
				continue
			}
			// Each detail belongs to one of the call's own requests, in
			// their order.
			pos := 0
			reqs := append([]govppapi.Message{ds}, c.More...)
			for _, d := range c.Details {
				a := d.(*ip.IPAddressDetails)
				family := "v4"
				if a.Prefix.Address.Af == ip_types.ADDRESS_IP6 {
					family = "v6"
				}
				for pos < len(reqs) && (reqs[pos].(*ip.IPAddressDump).SwIfIndex != a.SwIfIndex || reqs[pos].(*ip.IPAddressDump).IsIPv6 != (family == "v6")) {
					pos++
				}
				if pos == len(reqs) {
					t.Fatalf("%s: call %d: detail %d %s is of none of its requests, or out of order", what, k, a.SwIfIndex, a.Prefix)
				}
				key := fmt.Sprintf("%d %s", a.SwIfIndex, family)
				got[key] = append(got[key], a.Prefix.String())
			}
		}
		if !maps.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s: addresses by interface and family %v, want %v", what, got, want)
		}
		if d := callCounts(t, reg)["ip_address_dump ok"] - before; d != len(dumps) {
			t.Errorf("%s: metrics counted %d ip_address_dump, want %d", what, d, len(dumps))
		}
		if details := calls[len(calls)-2].Details; len(details) != 1 {
			t.Errorf("%s: the sw_interface_dump after the address dumps: %d details, want 1", what, len(details))
		}
	}
	check("calls of 40 requests", 40)
	check("one call of every request (above the window)", len(dumps))

	bad := []vppconn.Call{
		{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}},
		{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}, More: []govppapi.Message{&interfaces.CreateLoopback{}}},
	}
	m.Pipeline(ctx, "interfaces", bad)
	for k, c := range bad {
		if c.Err == nil || !strings.Contains(c.Err.Error(), "not a dump") {
			t.Errorf("misused More: call %d: %v, want an error saying More is for dumps", k, c.Err)
		}
	}
}

// TestPipelineLateRepliesDropped: the replies of a pipeline that timed out
// come after it ended (VPP carries its requests out anyway); the next
// pipeline gets its own replies, not those, and PipelineThen reports every
// call once, in order, the failed ones included.
func TestPipelineLateRepliesDropped(t *testing.T) {
	needSim(t, "a VPP that hangs on one message (Hold)")
	const timeout = 200 * time.Millisecond
	sim, m, rec := simManager(t, timeout)

	release := sim.Hold("sw_interface_set_flags")
	defer release()
	first := loopbackCalls(40, 10) // the first set_flags is call 10
	var order []int
	m.PipelineThen(context.Background(), "interfaces", first, func(i int) { order = append(order, i) })
	if len(order) != len(first) || !slices.IsSorted(order) || order[0] != 0 || order[len(order)-1] != len(first)-1 {
		t.Fatalf("then was called for %v, want each of the %d calls once, in order", order, len(first))
	}
	var te *vppconn.CallTimeoutError
	if !errors.As(first[10].Err, &te) {
		t.Fatalf("call 10 (held): %v, want a *CallTimeoutError", first[10].Err)
	}
	// VPP answers the held request and the ones behind it now, late.
	release()
	second := loopbackCalls(30, 1000) // create_loopback only
	m.Pipeline(context.Background(), "interfaces", second)
	last := uint32(0)
	for i, c := range second {
		if c.Err != nil {
			t.Fatalf("call %d of the next pipeline: %v", i, c.Err)
		}
		idx := uint32(c.Reply.(*interfaces.CreateLoopbackReply).SwIfIndex)
		if idx <= last {
			t.Fatalf("call %d of the next pipeline: sw_if_index %d after %d: not its own reply", i, idx, last)
		}
		last = idx
	}
	noErrorRecords(t, rec)
}

// TestPipelineReusesNoBytes: a request encoded where an earlier one of the
// same pipeline was (the window refilled) carries nothing of it: a short
// tag after long ones is that tag alone in VPP.
func TestPipelineReusesNoBytes(t *testing.T) {
	m := connected(t)
	created := []vppconn.Call{{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}}}
	m.Pipeline(context.Background(), "interfaces", created)
	if created[0].Err != nil {
		t.Fatal(created[0].Err)
	}
	idx := created[0].Reply.(*interfaces.CreateLoopbackReply).SwIfIndex
	long := strings.Repeat("L", 60)
	var calls []vppconn.Call
	for i := range vppconn.PipelineWindow + vppconn.PipelineWindow/2 + 1 {
		tag := long
		if i >= vppconn.PipelineWindow {
			tag = fmt.Sprintf("s%d", i)
		}
		calls = append(calls, vppconn.Call{Request: &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: idx, Tag: tag},
			Reply: &interfaces.SwInterfaceTagAddDelReply{}})
	}
	want := calls[len(calls)-1].Request.(*interfaces.SwInterfaceTagAddDel).Tag
	dump := []vppconn.Call{{Request: &interfaces.SwInterfaceDump{SwIfIndex: idx}}}
	m.Pipeline(context.Background(), "interfaces", calls)
	for i, c := range calls {
		if c.Err != nil {
			t.Fatalf("call %d: %v", i, c.Err)
		}
	}
	m.Pipeline(context.Background(), "interfaces", dump)
	if dump[0].Err != nil || len(dump[0].Details) != 1 {
		t.Fatalf("dump of the loopback: %v, %d details", dump[0].Err, len(dump[0].Details))
	}
	if got := dump[0].Details[0].(*interfaces.SwInterfaceDetails).Tag; got != want {
		t.Errorf("tag in VPP %q, want %q", got, want)
	}

	// The next batch encodes in the same buffer (kept between batches):
	// a short tag after the long ones is that tag alone, again.
	kept := m.BatchBuffer()
	if cap(kept) < vppconn.PipelineWindow/2*len(long) {
		t.Fatalf("the batch of %d requests left a buffer of %d bytes for the next, want one with room for its largest write (half a window)", len(calls), cap(kept))
	}
	short := []vppconn.Call{{Request: &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: idx, Tag: "t"},
		Reply: &interfaces.SwInterfaceTagAddDelReply{}}}
	m.Pipeline(context.Background(), "interfaces", short)
	if short[0].Err != nil {
		t.Fatal(short[0].Err)
	}
	if again := m.BatchBuffer(); unsafe.SliceData(again) != unsafe.SliceData(kept) {
		t.Errorf("the next batch encoded in a new buffer (%d bytes), not in the one kept (%d)", cap(again), cap(kept))
	}
	dump = []vppconn.Call{{Request: &interfaces.SwInterfaceDump{SwIfIndex: idx}}}
	m.Pipeline(context.Background(), "interfaces", dump)
	if dump[0].Err != nil || len(dump[0].Details) != 1 {
		t.Fatalf("dump of the loopback: %v, %d details", dump[0].Err, len(dump[0].Details))
	}
	if got := dump[0].Details[0].(*interfaces.SwInterfaceDetails).Tag; got != "t" {
		t.Errorf("tag in VPP %q after the next batch, want %q", got, "t")
	}
}

// TestPipelineKeepsNoHugeBuffer: a batch of large requests (a megabyte and
// more in flight) does not leave its buffer to the next batch, which
// encodes in a new one.
func TestPipelineKeepsNoHugeBuffer(t *testing.T) {
	m := connected(t)
	paths := make([]fib_types.FibPath, 30)
	for i := range paths {
		paths[i] = fib_types.FibPath{SwIfIndex: ^uint32(0), Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4,
			Nh: fib_types.FibPathNh{Address: ip_types.AddressUnion{XXX_UnionData: [16]byte{10, 0, 0, byte(i + 1)}}}}
	}
	var calls []vppconn.Call
	size := 0
	// More than a window: the last of the writes that fill the first
	// window (16, 16, 32... requests, see firstWrite) holds 256 of them,
	// 1.3 MB.
	for i := range 600 {
		req := &ip.IPRouteAddDel{IsAdd: false, Route: ip.IPRoute{NPaths: uint8(len(paths)), Paths: paths,
			Prefix: ip_types.Prefix{Len: 32, Address: ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnion{XXX_UnionData: [16]byte{198, 18, byte(i >> 8), byte(i)}}}}}}
		size += req.Size()
		calls = append(calls, vppconn.Call{Request: req, Reply: &ip.IPRouteAddDelReply{}})
	}
	if size <= 1<<20 {
		t.Fatalf("the requests are %d bytes: not enough to test a huge buffer", size)
	}
	m.Pipeline(context.Background(), "ip", calls)
	for i, c := range calls {
		var pe *vppconn.PipelineError
		if errors.As(c.Err, &pe) {
			t.Fatalf("call %d was not answered: %v", i, c.Err)
		}
	}
	if kept := m.BatchBuffer(); kept != nil {
		t.Errorf("a batch of %d bytes of requests left its buffer (%d bytes) to the next", size, cap(kept))
	}
	small := []vppconn.Call{{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}}}
	m.Pipeline(context.Background(), "interfaces", small)
	if small[0].Err != nil {
		t.Fatal(small[0].Err)
	}
	if kept := m.BatchBuffer(); cap(kept) == 0 || cap(kept) > 1<<20 {
		t.Errorf("after a small batch the buffer kept is %d bytes, want one of its size", cap(kept))
	}
}

// TestPipelinePrepared: PipelinePrepared makes each call as the pipeline
// comes to it, on vppsim and the real VPP. Every call is prepared once, in
// order, before its then; the later calls are made after the first
// replies came (then(0) before prepare of the third window), and the first
// requests are in VPP while the first window is being made (a dump from
// prepare, which VPP answers after the requests written before it, sees
// loopbacks). Calls prepared without a Request, with an Err, or with More
// and a Reply are not sent and keep (or get) their result; the others
// each get their own reply, and only they count in the metrics.
func TestPipelinePrepared(t *testing.T) {
	m, reg := metered(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 3*vppconn.PipelineWindow + 100
	refused := errors.New("refused when prepared")
	var log []string
	seenEarly := -1 // the loopbacks VPP had when the first window was half made
	calls := make([]vppconn.Call, n)
	m.PipelinePrepared(ctx, "interfaces", calls, func(i int) {
		log = append(log, fmt.Sprint("prepare ", i))
		switch {
		case i%100 == 7: // nothing to send
		case i%100 == 42:
			calls[i] = vppconn.Call{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}, Err: refused}
		case i == 300:
			calls[i] = vppconn.Call{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{},
				More: []govppapi.Message{&interfaces.SwInterfaceDump{}}}
		default:
			calls[i] = vppconn.Call{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}}
		}
		if i == vppconn.PipelineWindow/2 {
			seenEarly = loopbacksIn(ctx, t, m)
		}
	}, func(i int) {
		log = append(log, fmt.Sprint("then ", i))
	})

	// The order of the callbacks.
	prepared, thens := 0, 0
	for _, e := range log {
		var i int
		if _, err := fmt.Sscanf(e, "prepare %d", &i); err == nil {
			if i != prepared {
				t.Fatalf("%q after %d calls prepared: want prepare %d (callbacks: %v)", e, prepared, prepared, log)
			}
			prepared++
			continue
		}
		if _, err := fmt.Sscanf(e, "then %d", &i); err != nil || i != thens || i >= prepared {
			t.Fatalf("%q after %d thens and %d calls prepared: want then %d, after its prepare", e, thens, prepared, thens)
		}
		thens++
	}
	if prepared != n || thens != n {
		t.Fatalf("%d calls prepared and %d thens, want %d of each", prepared, thens, n)
	}
	if first, late := slices.Index(log, "then 0"), slices.Index(log, fmt.Sprint("prepare ", 2*vppconn.PipelineWindow)); first > late {
		t.Errorf("then 0 came after call %d was prepared: the calls were all made before the first reply", 2*vppconn.PipelineWindow)
	}
	if seenEarly < firstWriteAtLeast {
		t.Errorf("VPP had %d loopbacks when the first window was half made, want the first requests written already (at least %d)", seenEarly, firstWriteAtLeast)
	}

	// The results.
	var created []uint32
	for i, c := range calls {
		switch {
		case i%100 == 7:
			if c.Request != nil || c.Err != nil {
				t.Errorf("call %d, prepared with nothing to send: %v %v", i, c.Request, c.Err)
			}
		case i%100 == 42:
			if c.Err != refused || c.Reply.(*interfaces.CreateLoopbackReply).SwIfIndex != 0 {
				t.Errorf("call %d, prepared with an error: %v, reply %+v: want the error, no reply", i, c.Err, c.Reply)
			}
		case i == 300:
			if c.Err == nil || !strings.Contains(c.Err.Error(), "has More requests but is not a dump") {
				t.Errorf("call %d, with More and a Reply: %v", i, c.Err)
			}
		default:
			if c.Err != nil {
				t.Fatalf("call %d: %v", i, c.Err)
			}
			idx := uint32(c.Reply.(*interfaces.CreateLoopbackReply).SwIfIndex)
			if len(created) > 0 && idx <= created[len(created)-1] {
				t.Fatalf("call %d: sw_if_index %d after %d: replies out of order", i, idx, created[len(created)-1])
			}
			created = append(created, idx)
		}
	}
	want := 0
	for i := range n {
		if i%100 != 7 && i%100 != 42 && i != 300 {
			want++
		}
	}
	if len(created) != want {
		t.Fatalf("%d loopbacks created, want %d", len(created), want)
	}
	if counts := callCounts(t, reg); counts["create_loopback ok"] != len(created) || counts["create_loopback error"] != 0 {
		t.Errorf("metrics: %v, want %d create_loopback ok and nothing else of it (the calls not sent are not counted)", counts, len(created))
	}
	if in := loopbacksIn(ctx, t, m); in != len(created) {
		t.Errorf("VPP has %d interfaces besides local0, want the %d created", in, len(created))
	}
	deleteLoopbacks(ctx, t, m, created)
}

// firstWriteAtLeast is how many requests a batch writes first, at least
// (vppconn's firstWrite).
const firstWriteAtLeast = 16

// TestPipelinePreparedBreaks: when the pipeline breaks (a reply later than
// the call timeout) or cannot start (cancelled, not connected), the calls
// not yet made are prepared all the same, in order, each once; their
// errors name their own requests, and the calls prepared not to be sent
// keep prepare's result.
func TestPipelinePreparedBreaks(t *testing.T) {
	needSim(t, "a VPP slow to answer (Delay)")
	const timeout = 200 * time.Millisecond
	sim, m, rec := simManager(t, timeout)
	sim.Delay("sw_interface_set_flags", 2*timeout)

	const n = 3 * vppconn.PipelineWindow
	run := func(ctx context.Context, m *vppconn.Manager) []vppconn.Call {
		calls := make([]vppconn.Call, n)
		made, thens := 0, 0
		m.PipelinePrepared(ctx, "interfaces", calls, func(i int) {
			if i != made {
				t.Fatalf("prepare %d after %d calls prepared", i, made)
			}
			made++
			switch {
			case i%10 == 3: // nothing to send
			case i == 100:
				calls[i] = vppconn.Call{Request: &interfaces.SwInterfaceSetFlags{SwIfIndex: 1 << 30}, Reply: &interfaces.SwInterfaceSetFlagsReply{}}
			case i%2 == 0:
				calls[i] = vppconn.Call{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}}
			default:
				calls[i] = vppconn.Call{Request: &interfaces.SwInterfaceGetTable{SwIfIndex: 0}, Reply: &interfaces.SwInterfaceGetTableReply{}}
			}
		}, func(i int) {
			if i != thens || i >= made {
				t.Fatalf("then %d after %d thens and %d calls prepared", i, thens, made)
			}
			thens++
		})
		if made != n || thens != n {
			t.Fatalf("%d calls prepared and %d thens, want %d of each", made, thens, n)
		}
		return calls
	}
	check := func(what string, calls []vppconn.Call, from int, cause error) {
		t.Helper()
		for i, c := range calls {
			switch {
			case i%10 == 3:
				if c.Request != nil || c.Err != nil {
					t.Fatalf("%s: call %d, prepared with nothing to send: %v %v", what, i, c.Request, c.Err)
				}
			case i < from:
				if c.Err != nil {
					t.Fatalf("%s: call %d: %v", what, i, c.Err)
				}
			default:
				var pe *vppconn.PipelineError
				if !errors.As(c.Err, &pe) || pe.Message != c.Request.GetMessageName() || !errors.Is(c.Err, cause) {
					t.Fatalf("%s: call %d (%s): %v, want a *PipelineError naming it, of %v", what, i, c.Request.GetMessageName(), c.Err, cause)
				}
			}
		}
	}

	calls := run(context.Background(), m)
	var te *vppconn.CallTimeoutError
	if !errors.As(calls[100].Err, &te) {
		t.Fatalf("call 100 (the slow one): %v, want a *CallTimeoutError", calls[100].Err)
	}
	check("after the slow reply", calls, 100, te)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sim.ResetCalls()
	check("cancelled", run(ctx, m), 0, context.Canceled)
	if got := sim.Calls(); len(got) != 0 {
		t.Errorf("vppsim received %v after a cancelled pipeline", got)
	}
	noErrorRecords(t, rec)

	// Pipeline refuses calls it cannot send (a call without a Request, a
	// call with More and a Reply) before sending anything.
	for name, bad := range map[string]vppconn.Call{
		"has no Request": {Reply: &interfaces.CreateLoopbackReply{}},
		"(create_loopback) has More requests but is not a dump": {Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{},
			More: []govppapi.Message{&interfaces.CreateLoopback{}}},
	} {
		sim.ResetCalls()
		calls := []vppconn.Call{{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}}, bad}
		m.Pipeline(context.Background(), "interfaces", calls)
		for i, c := range calls {
			if c.Err == nil || !strings.Contains(c.Err.Error(), "call 1 "+name) {
				t.Errorf("Pipeline with a call that %s: call %d: %v, want the refusal naming call 1", name, i, c.Err)
			}
		}
		if got := sim.Calls(); len(got) != 0 {
			t.Errorf("vppsim received %v from a refused pipeline", got)
		}
	}

	// Not connected: every call fails with ErrNotConnected, prepared first.
	m2 := vppconn.New(vppconn.Options{Socket: t.TempDir() + "/none.sock"})
	calls = run(context.Background(), m2)
	for i, c := range calls {
		if i%10 != 3 && !errors.Is(c.Err, vppconn.ErrNotConnected) {
			t.Fatalf("not connected: call %d: %v, want ErrNotConnected", i, c.Err)
		}
	}
}

// TestPipelinePreparedPanics: a prepare that panics in the middle of a
// pipeline panics out of PipelinePrepared with its own value (nothing of
// the pipeline's panics again over the calls not made), and the next
// pipeline of the Manager works, the replies of the broken one dropped.
func TestPipelinePreparedPanics(t *testing.T) {
	m, reg := metered(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n, at = 2 * vppconn.PipelineWindow, vppconn.PipelineWindow + 10
	calls := make([]vppconn.Call, n)
	func() {
		defer func() {
			if p := recover(); p != "prepare fails" {
				t.Errorf("PipelinePrepared panicked with %v, want the prepare's panic", p)
			}
		}()
		m.PipelinePrepared(ctx, "interfaces", calls, func(i int) {
			if i == at {
				panic("prepare fails")
			}
			calls[i] = vppconn.Call{Request: &interfaces.SwInterfaceGetTable{SwIfIndex: 0}, Reply: &interfaces.SwInterfaceGetTableReply{}}
		}, nil)
		t.Error("PipelinePrepared returned")
	}()
	next := loopbackCalls(3, 10)
	m.Pipeline(ctx, "interfaces", next)
	var created []uint32
	for i, c := range next {
		if c.Err != nil {
			t.Fatalf("the next pipeline's call %d: %v", i, c.Err)
		}
		created = append(created, uint32(c.Reply.(*interfaces.CreateLoopbackReply).SwIfIndex))
	}
	deleteLoopbacks(ctx, t, m, created)
	if got := callCounts(t, reg)["sw_interface_get_table ok"]; got > at {
		t.Errorf("metrics: %d sw_interface_get_table calls counted, want at most the %d made", got, at)
	}
}

package vppsim_test

import (
	"fmt"
	"testing"

	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/tests/vppsim"
)

// TestL2FIBKeyedByBdIndex: the snapshots show what the requests did; a
// deleted domain's static entry stays (bd_id ~0) and goes to the next
// domain that gets its bd_index, another bd_id; a domain made later gets
// the next index, without it. (The behaviours shared with a real VPP are
// checked against both in l2plugin's TestVPPXConnectAndFIBBehaviour.)
func TestL2FIBKeyedByBdIndex(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)
	lc := l2.NewServiceClient(conn)
	a := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	b := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 7, IsAdd: true}))(t)
	must(lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: a, BdID: 7, Enable: true}))(t)
	must(lc.SwInterfaceSetL2Xconnect(ctx, &l2.SwInterfaceSetL2Xconnect{RxSwIfIndex: b, TxSwIfIndex: a, Enable: true}))(t)
	mac := ethernet_types.MacAddress{2, 0, 0, 0, 0, 1}
	must(lc.L2fibAddDel(ctx, &l2.L2fibAddDel{Mac: mac, BdID: 7, SwIfIndex: a, IsAdd: true, StaticMac: true}))(t)
	if got := s.XConnects(); len(got) != 1 || got[uint32(b)] != uint32(a) {
		t.Errorf("XConnects %v, want %d -> %d", got, b, a)
	}
	entries := func() string {
		var out string
		for _, e := range s.L2FIB() {
			out += fmt.Sprintf("[%d %s %d static=%v] ", int32(e.BdID), e.MAC, e.SwIfIndex, e.Static)
		}
		return out
	}
	want := fmt.Sprintf("[7 02:00:00:00:00:01 %d static=true] ", a)
	if got := entries(); got != want {
		t.Errorf("L2FIB %s, want %s", got, want)
	}
	must(lc.SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: a, Enable: false}))(t)
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 7, IsAdd: false}))(t)
	if got, want := entries(), fmt.Sprintf("[-1 02:00:00:00:00:01 %d static=true] ", a); got != want {
		t.Errorf("L2FIB after the domain's delete %s, want %s", got, want)
	}
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 9, IsAdd: true}))(t)
	must(lc.BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{BdID: 10, IsAdd: true}))(t)
	if got, want := entries(), fmt.Sprintf("[9 02:00:00:00:00:01 %d static=true] ", a); got != want {
		t.Errorf("L2FIB after new domains %s, want %s (bd 9 has the freed bd_index)", got, want)
	}
}

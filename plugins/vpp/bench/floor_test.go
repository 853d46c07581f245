package vppbench_test

import (
	"context"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// The floor benchmarks do the VPP work of a transaction benchmark with no
// agent: the same requests (or reads), written by hand, pipelined through
// vppconn.Manager.Pipeline in as few rounds as the requests' dependencies
// allow. They are the reference the agent is compared with: what VPP and
// GoVPP need for this workload, whoever sends it. The agent's Create is
// over this floor by the scheduler's and the descriptors' own work, and by
// what it asks beyond the minimum (one sw_interface_dump for VPP's
// interface names).

// pipeline sends calls on the connection of area and fails the benchmark
// on any error.
func (e *benchEnv) pipeline(area string, calls []vppconn.Call) {
	e.b.Helper()
	e.vpp.M.Pipeline(context.Background(), area, calls)
	for i := range calls {
		if err := calls[i].Err; err != nil {
			e.b.Fatalf("%s: %v", calls[i].Request.GetMessageName(), err)
		}
	}
}

// createByHand creates the workload in VPP in three pipelined rounds: the
// loopbacks (their replies carry the indexes the rest needs); then per
// interface its tag, admin state up and address; then the routes.
func (e *benchEnv) createByHand() {
	e.b.Helper()
	loops := make([]vppconn.Call, benchInterfaces)
	for i := range loops {
		loops[i] = vppconn.Call{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}}
	}
	e.pipeline(vppcalls.AreaName, loops)
	index := make([]interface_types.InterfaceIndex, benchInterfaces)
	setUp := make([]vppconn.Call, 0, 3*benchInterfaces)
	for i := range loops {
		index[i] = loops[i].Reply.(*interfaces.CreateLoopbackReply).SwIfIndex
		setUp = append(setUp,
			vppconn.Call{Request: &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: index[i], Tag: ifaceName(i)}, Reply: &interfaces.SwInterfaceTagAddDelReply{}},
			vppconn.Call{Request: &interfaces.SwInterfaceSetFlags{SwIfIndex: index[i], Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, Reply: &interfaces.SwInterfaceSetFlagsReply{}},
			vppconn.Call{Request: &interfaces.SwInterfaceAddDelAddress{SwIfIndex: index[i], IsAdd: true, Prefix: ip_types.AddressWithPrefix{
				Address: ip4(10, byte(i>>8), byte(i), 1), Len: 24}}, Reply: &interfaces.SwInterfaceAddDelAddressReply{}},
		)
	}
	e.pipeline(vppcalls.AreaName, setUp)
	routes := make([]vppconn.Call, benchRoutes)
	for j := range routes {
		i := j % benchInterfaces
		routes[j] = vppconn.Call{Request: &ip.IPRouteAddDel{IsAdd: true, IsMultipath: true, Route: ip.IPRoute{
			Prefix: ip_types.Prefix{Address: ip4(20, byte(j>>8), byte(j), 0), Len: 24},
			NPaths: 1,
			Paths: []fib_types.FibPath{{
				SwIfIndex: uint32(index[i]), Weight: 1, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4,
				Nh: fib_types.FibPathNh{Address: ip4(10, byte(i>>8), byte(i), 2).Un},
			}},
		}}, Reply: &ip.IPRouteAddDelReply{}}
	}
	e.pipeline(l3plugin.AreaName, routes)
}

func ip4(a, b, c, d byte) ip_types.Address {
	return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(ip_types.IP4Address{a, b, c, d})}
}

// readByHand reads what an in-sync resync of the workload must read, with
// the requests the agent uses: every interface; per interface its IPv4 and
// IPv6 addresses (a control ping per half window of dumps) and tables (pipelined); the
// routes of table 0, IPv4 and IPv6. It returns the number of messages VPP sent back.
func (e *benchEnv) readByHand() int {
	e.b.Helper()
	ifs := []vppconn.Call{{Request: &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}}}
	e.pipeline(vppcalls.AreaName, ifs)
	perIf := make([]vppconn.Call, 0, 3*len(ifs[0].Details))
	var addrDumps []govppapi.Message
	for _, d := range ifs[0].Details {
		idx := d.(*interfaces.SwInterfaceDetails).SwIfIndex
		for _, v6 := range []bool{false, true} {
			addrDumps = append(addrDumps, &ip.IPAddressDump{SwIfIndex: idx, IsIPv6: v6})
			perIf = append(perIf, vppconn.Call{Request: &interfaces.SwInterfaceGetTable{SwIfIndex: idx, IsIPv6: v6}, Reply: &interfaces.SwInterfaceGetTableReply{}})
		}
	}
	// The address dumps share a control ping per half window, as the agent's do
	// (vppconn.Call.More).
	for from := 0; from < len(addrDumps); from += vppconn.PipelineWindow / 2 {
		chunk := addrDumps[from:min(from+vppconn.PipelineWindow/2, len(addrDumps))]
		perIf = append(perIf, vppconn.Call{Request: chunk[0], More: chunk[1:]})
	}
	e.pipeline(vppcalls.AreaName, perIf)
	routes := []vppconn.Call{
		{Request: &ip.IPRouteV2Dump{Table: ip.IPTable{TableID: 0, IsIP6: false}}},
		{Request: &ip.IPRouteV2Dump{Table: ip.IPTable{TableID: 0, IsIP6: true}}},
	}
	e.pipeline(l3plugin.AreaName, routes)
	n := len(ifs[0].Details)
	for _, c := range append(perIf, routes...) {
		n += len(c.Details)
	}
	return n
}

// BenchmarkCreateFloor: Create's VPP work without the agent (createByHand):
// 14,000 requests in three pipelined rounds, into a VPP without the
// workload. It skips on the user's VPP, which is never restarted.
func BenchmarkCreateFloor(b *testing.B) {
	e := newBenchEnv(b)
	if !e.vpp.CanRestart() {
		b.Skipf("restarts VPP: not the user's VPP at %s", e.vpp.Socket)
	}
	b.ResetTimer()
	for n := range b.N {
		b.StopTimer()
		if n > 0 {
			e.clearVPP()
		}
		e.startTimer()
		e.createByHand()
		e.stopTimer()
		e.expectWrites("create by hand", createWrites)
		e.expectApplied("create by hand")
	}
	e.report()
}

// BenchmarkResyncInSyncFloor: the reads of ResyncInSync without the agent
// (readByHand), VPP holding the workload.
func BenchmarkResyncInSyncFloor(b *testing.B) {
	e := newBenchEnv(b)
	e.commit(api.TxnOptions{}, e.kvs)
	e.expectApplied("set-up")
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		e.startTimer()
		got := e.readByHand()
		e.stopTimer()
		// The routes (10,000 and each interface's connected and local
		// prefixes) and the interfaces with their addresses at least.
		if min := benchRoutes + 3*benchInterfaces; got < min {
			e.b.Fatalf("read %d details, want at least %d", got, min)
		}
		e.expectWrites("read by hand", map[string]int{})
	}
	e.report()
}

// Package vppbench_test measures the VPP plugins end to end against vppsim:
// the scheduler, the real ifplugin and l3plugin descriptors, vppconn,
// GoVPP's codec and socket client, and the simulator on a unix socket. See
// docs/benchmarks.md ("VPP through vppsim") for how to run them and the
// numbers they gave.
//
// The workload is 1,000 loopback interfaces, each enabled and with one IPv4
// address (so every interface brings two derived values with descriptors:
// admin state and address), and 10,000 IPv4 routes spread over them, each
// with the outgoing interface and a next hop in the interface's subnet:
// 11,000 NB values, 13,000 operations when created.
//
//	config/vpp/v2/interfaces/if-<i>   loopback, enabled, 10.<i/256>.<i%256>.1/24  (i < 1,000)
//	config/vpp/v2/route/if/if-<i>/... 20.<j/256>.<j%256>.0/24 via 10.x.y.2 dev if-<j%1000>  (j < 10,000)
//
// The transaction benchmarks (Create, ResyncInSync, ResyncAfterRestart)
// report, besides ns/op: ns/value (per NB value); msgs/value and msgs/s,
// the binary-API messages vppsim received during the timed transaction
// (every request, the control ping that ends each dump, and GoVPP's
// health-check pings, ten per second here); calls/value, the calls the
// agent made as vppconn's metrics count them (a dump is one); in-calls-%,
// the share of the time spent inside those calls. Each checks outside the
// timer what it did: the operations recorded, the requests that changed
// vppsim, and vppsim's interfaces and routes.
//
// The call benchmarks (CallSync, CallPipelined) time 10,000
// ip_route_add_del through vppconn and GoVPP without the scheduler: the cost
// of a call, one at a time and with many in flight.
package vppbench_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	"github.com/netagent-io/netagent/tests/vppsim"
)

const (
	benchInterfaces = 1_000
	benchRoutes     = 10_000
	// benchValues is the number of NB values of the workload.
	benchValues = benchInterfaces + benchRoutes
	// benchOps is the number of operations creating them: per interface
	// the interface, its admin state UP and its address; per route one.
	benchOps = 3*benchInterfaces + benchRoutes
	// benchWrites is the number of requests that change VPP when they are
	// created: per interface create_loopback, sw_interface_tag_add_del,
	// sw_interface_set_flags and sw_interface_add_del_address; per route
	// ip_route_add_del.
	benchWrites = 4*benchInterfaces + benchRoutes
)

// TestMain: GoVPP notices the simulator's restart within a few probes (its
// default probes once a second). The probes are control pings that vppsim
// counts: ten per second, against thousands of the agent's messages.
func TestMain(m *testing.M) {
	core.HealthCheckProbeInterval = 100 * time.Millisecond
	vpptest.Main(m)
}

// kv is one NB value of the workload.
type kv struct {
	key   string
	value proto.Message
}

func (x kv) KeyValue() (string, proto.Message) { return x.key, x.value }

func ifaceName(i int) string { return "if-" + strconv.Itoa(i) }

// subnet is the third and fourth octets of interface i's /24: "x.y".
func subnet(i int) string { return strconv.Itoa(i>>8) + "." + strconv.Itoa(i&255) }

// workload builds the NB values: the interfaces first, then the routes.
func workload(b *testing.B) []kv {
	b.Helper()
	out := make([]kv, 0, benchValues)
	for i := range benchInterfaces {
		name := ifaceName(i)
		out = append(out, kv{ifplugin.InterfaceKey(name), &vppif.Interface{
			Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true,
			IpAddresses: []string{"10." + subnet(i) + ".1/24"},
		}})
	}
	for j := range benchRoutes {
		i := j % benchInterfaces
		r := &vppl3.Route{
			DstNetwork:        "20." + subnet(j) + ".0/24",
			NextHopAddr:       "10." + subnet(i) + ".2",
			OutgoingInterface: ifaceName(i),
		}
		key, err := models.VPPRoute.Key(r)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, kv{key, r})
	}
	return out
}

// benchEnv is a vppsim, a vppconn.Manager connected to it, and an agent: a
// scheduler with ifplugin's and l3plugin's descriptors, as the daemon
// registers them.
type benchEnv struct {
	b   *testing.B
	sim *vppsim.Sim
	m   *vppconn.Manager
	reg *prometheus.Registry // the Manager's metrics
	s   *kvscheduler.Scheduler
	kvs []kv

	// Totals of the timed transactions.
	msgs      int           // messages vppsim received
	calls     int           // calls the agent made (a dump is one)
	callTime  time.Duration // time spent in them
	callStart vppCalls
}

// vppCalls is the number of VPP calls the Manager counted and their total
// time.
type vppCalls struct {
	n int
	d time.Duration
}

// vppCalls reads the Manager's call histogram.
func (e *benchEnv) vppCalls() vppCalls {
	e.b.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		e.b.Fatal(err)
	}
	var out vppCalls
	for _, f := range families {
		if f.GetName() != "netagent_vpp_api_call_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			out.n += int(m.GetHistogram().GetSampleCount())
			out.d += time.Duration(m.GetHistogram().GetSampleSum() * float64(time.Second))
		}
	}
	return out
}

// startTimer starts the timer of one transaction, after resetting the
// counts.
func (e *benchEnv) startTimer() {
	e.sim.ResetCalls()
	e.callStart = e.vppCalls()
	e.b.StartTimer()
}

// stopTimer stops the timer and adds the transaction's counts to the
// totals.
func (e *benchEnv) stopTimer() {
	e.b.StopTimer()
	e.msgs += len(e.sim.Calls())
	end := e.vppCalls()
	e.calls += end.n - e.callStart.n
	e.callTime += end.d - e.callStart.d
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	areas := append(vppcalls.Areas(), l3plugin.New(nil, nil, nil).Area())
	vpptest.NeedSim(b, "measures the agent against vppsim: counts its messages, restarts it")
	v := vpptest.Start(b, vpptest.Options{Areas: areas})
	e := &benchEnv{b: b, sim: v.Sim, m: v.M, reg: prometheus.NewRegistry(), kvs: workload(b)}
	if err := e.m.Register(e.reg); err != nil {
		b.Fatal(err)
	}
	e.startAgent()
	b.Cleanup(func() { e.s.Close() })
	return e
}

// startAgent replaces the scheduler (and the plugins) with new ones: an
// agent starting with nothing applied.
func (e *benchEnv) startAgent() {
	e.b.Helper()
	if e.s != nil {
		e.s.Close()
	}
	quiet := slog.New(slog.DiscardHandler)
	e.s = kvscheduler.New(kvscheduler.Options{Logger: quiet})
	l3 := l3plugin.New(e.m, ifplugin.SchedulerInterfaces(e.s), quiet)
	l3.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(e.s))
	if err := e.s.RegisterKVDescriptor(ifplugin.New(e.m, quiet).Descriptors()...); err != nil {
		e.b.Fatal(err)
	}
	if err := e.s.RegisterKVDescriptor(l3.Descriptors()...); err != nil {
		e.b.Fatal(err)
	}
}

// restartVPP restarts vppsim (empty) and waits until the Manager is
// connected to the new process.
func (e *benchEnv) restartVPP() {
	e.b.Helper()
	if err := e.sim.Restart(0); err != nil {
		e.b.Fatal(err)
	}
	vpptest.WaitConnected(e.b, e.m, e.sim)
}

// commit runs one transaction of the workload's values with the options of
// ctx, and returns its sequence number.
func (e *benchEnv) commit(ctx context.Context, kvs []kv) uint64 {
	seq, err := vpptest.Commit(ctx, e.s, kvs...)
	if err != nil {
		e.b.Fatalf("commit: %v", err)
	}
	return seq
}

// expectOps checks the operations transaction seq called (NOOPs and
// properties aside): want of them, all of kind op.
func (e *benchEnv) expectOps(what string, seq uint64, want int, op api.TxnOperation) {
	e.b.Helper()
	rec := e.s.GetRecordedTransaction(seq)
	if rec == nil {
		e.b.Fatalf("%s: transaction %d not recorded", what, seq)
	}
	byKind := map[string]int{}
	total := 0
	for _, o := range rec.Executed {
		if o.NOOP || o.Property {
			continue
		}
		if o.Operation != op || o.NewErr != nil {
			e.b.Fatalf("%s: unexpected operation %s %s (error %v)", what, o.Operation, o.Key, o.NewErr)
		}
		byKind[o.Descriptor]++
		total++
	}
	if total != want {
		e.b.Fatalf("%s: %d operations, want %d: %v", what, total, want, byKind)
	}
}

// expectApplied checks that vppsim holds the workload: every interface
// tagged, up, with its address; every route with its path through its
// interface.
func (e *benchEnv) expectApplied(what string) {
	e.b.Helper()
	swIfIndex := map[string]uint32{}
	for _, i := range e.sim.Interfaces() {
		if i.Tag == "" {
			continue
		}
		if !i.AdminUp || len(i.Addresses) != 1 {
			e.b.Fatalf("%s: interface %s (%s): admin up %v, addresses %v", what, i.Tag, i.Name, i.AdminUp, i.Addresses)
		}
		swIfIndex[i.Tag] = i.SwIfIndex
	}
	if len(swIfIndex) != benchInterfaces {
		e.b.Fatalf("%s: vppsim has %d tagged interfaces, want %d", what, len(swIfIndex), benchInterfaces)
	}
	routes := e.sim.Routes()
	if len(routes) != benchRoutes {
		e.b.Fatalf("%s: vppsim has %d API routes, want %d", what, len(routes), benchRoutes)
	}
	for _, r := range routes {
		// 20.x.y.0/24 is route j = x*256+y, through interface j%1000.
		a := r.Prefix.Addr().As4()
		j := int(a[1])<<8 | int(a[2])
		want := swIfIndex[ifaceName(j%benchInterfaces)]
		if len(r.Paths) != 1 || r.Paths[0].SwIfIndex != want || !r.Paths[0].NextHop.IsValid() {
			e.b.Fatalf("%s: route %s: paths %+v, want one via sw_if_index %d", what, r.Prefix, r.Paths, want)
		}
	}
}

// report adds, for the timed transactions: ns/value; msgs/value and
// msgs/s, the messages vppsim received; calls/value, the calls the agent
// made (a dump and its control ping are one); in-calls-%, the share of the
// time spent in them (from the request to the reply, GoVPP, the socket and
// vppsim), the rest being the scheduler's and the descriptors' own work.
func (e *benchEnv) report() {
	b := e.b
	elapsed := b.Elapsed()
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/benchValues, "ns/value")
	b.ReportMetric(float64(e.msgs)/float64(b.N)/benchValues, "msgs/value")
	b.ReportMetric(float64(e.calls)/float64(b.N)/benchValues, "calls/value")
	if elapsed > 0 {
		b.ReportMetric(float64(e.msgs)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(100*e.callTime.Seconds()/elapsed.Seconds(), "in-calls-%")
	}
}

// BenchmarkCreate: one transaction creating the 1,000 interfaces and the
// 10,000 routes in an empty VPP, by an agent that starts with nothing.
func BenchmarkCreate(b *testing.B) {
	e := newBenchEnv(b)
	for n := range b.N {
		b.StopTimer()
		if n > 0 {
			e.restartVPP()
			e.startAgent()
		}
		e.startTimer()
		seq := e.commit(context.Background(), e.kvs)
		e.stopTimer()
		e.expectOps("create", seq, benchOps, api.OpCreate)
		e.expectApplied("create")
		if w := len(vpptest.Writes(e.sim)); w != benchWrites {
			b.Fatalf("create: %d calls changed VPP, want %d", w, benchWrites)
		}
	}
	e.report()
}

// BenchmarkResyncInSync: a full resync of the same values while VPP has
// them all: it retrieves everything and must change nothing.
func BenchmarkResyncInSync(b *testing.B) {
	e := newBenchEnv(b)
	e.commit(context.Background(), e.kvs)
	e.expectApplied("set-up")
	ctx := api.WithResync(context.Background(), api.FullResync, false)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		e.startTimer()
		seq := e.commit(ctx, e.kvs)
		e.stopTimer()
		e.expectOps("resync in sync", seq, 0, api.OpCreate)
		if w := vpptest.Writes(e.sim); len(w) > 0 {
			b.Fatalf("resync in sync: %d calls changed VPP, the first %s", len(w), w[0])
		}
	}
	e.report()
}

// BenchmarkResyncAfterRestart: VPP restarted (empty); the downstream resync
// the daemon runs then re-creates every value.
func BenchmarkResyncAfterRestart(b *testing.B) {
	e := newBenchEnv(b)
	e.commit(context.Background(), e.kvs)
	ctx := api.WithResync(context.Background(), api.DownstreamResync, false)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		e.restartVPP()
		e.startTimer()
		seq := e.commit(ctx, nil)
		e.stopTimer()
		e.expectOps("resync after restart", seq, benchOps, api.OpCreate)
		e.expectApplied("resync after restart")
		if w := len(vpptest.Writes(e.sim)); w != benchWrites {
			b.Fatalf("resync after restart: %d calls changed VPP, want %d", w, benchWrites)
		}
	}
	e.report()
}

// callRoutes are the requests of the call benchmarks: benchRoutes routes
// in table 0 via a next hop, without interface (so that none is needed).
func callRoutes(isAdd bool) []*ip.IPRouteAddDel {
	out := make([]*ip.IPRouteAddDel, benchRoutes)
	for j := range out {
		out[j] = &ip.IPRouteAddDel{IsAdd: isAdd, IsMultipath: true, Route: ip.IPRoute{
			Prefix: ip_types.Prefix{Address: ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(ip_types.IP4Address{20, byte(j >> 8), byte(j), 0})}, Len: 24},
			NPaths: 1,
			Paths: []fib_types.FibPath{{
				SwIfIndex: ^uint32(0), Weight: 1, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4,
				Nh: fib_types.FibPathNh{Address: ip_types.AddressUnionIP4(ip_types.IP4Address{10, 0, 0, 2})},
			}},
		}}
	}
	return out
}

// callEnv is a vppsim and a Manager connected to it, for the call
// benchmarks, with the requests that add and remove the routes.
type callEnv struct {
	sim        *vppsim.Sim
	m          *vppconn.Manager
	adds, dels []*ip.IPRouteAddDel
}

func newCallEnv(b *testing.B) *callEnv {
	vpptest.NeedSim(b, "checks the routes in vppsim's state")
	v := vpptest.Start(b, vpptest.Options{Areas: []vppconn.Area{l3plugin.New(nil, nil, nil).Area()}})
	return &callEnv{sim: v.Sim, m: v.M, adds: callRoutes(true), dels: callRoutes(false)}
}

// sync sends the requests one at a time, each waiting for its reply, as
// the descriptors do: through the Manager's connection, with a call
// context each.
func (e *callEnv) sync(b *testing.B, reqs []*ip.IPRouteAddDel) {
	conn, err := e.m.Conn(l3plugin.AreaName)
	if err != nil {
		b.Fatal(err)
	}
	c := ip.NewServiceClient(conn)
	for _, req := range reqs {
		ctx, cancel := e.m.CallContext(context.Background())
		_, err := c.IPRouteAddDel(ctx, req)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// pipelined sends the requests on one stream with up to window of them in
// flight, and checks every reply.
func (e *callEnv) pipelined(b *testing.B, reqs []*ip.IPRouteAddDel, window int) {
	conn, err := e.m.Conn(l3plugin.AreaName)
	if err != nil {
		b.Fatal(err)
	}
	stream, err := conn.NewStream(context.Background(), core.WithReplySize(window))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	sent := 0
	for received := range reqs {
		for ; sent < len(reqs) && sent-received < window; sent++ {
			if err := stream.SendMsg(reqs[sent]); err != nil {
				b.Fatal(err)
			}
		}
		msg, err := stream.RecvMsg()
		if err != nil {
			b.Fatal(err)
		}
		if r, ok := msg.(*ip.IPRouteAddDelReply); !ok || r.Retval != 0 {
			b.Fatalf("reply %d: %#v", received, msg)
		}
	}
}

// benchCalls times adding the routes with send; removing them again is
// not timed.
func benchCalls(b *testing.B, send func(*callEnv, []*ip.IPRouteAddDel)) {
	e := newCallEnv(b)
	for range b.N {
		b.StopTimer()
		e.sim.ResetCalls()
		b.StartTimer()
		send(e, e.adds)
		b.StopTimer()
		if n := len(e.sim.Routes()); n != benchRoutes {
			b.Fatalf("vppsim has %d routes, want %d", n, benchRoutes)
		}
		send(e, e.dels)
		if n := len(e.sim.Routes()); n != 0 {
			b.Fatalf("vppsim has %d routes left", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRoutes, "ns/call")
	b.ReportMetric(float64(b.N)*benchRoutes/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkCallSync: 10,000 ip_route_add_del, one at a time, straight
// through vppconn and GoVPP (no scheduler, no descriptor): the round trip
// every descriptor call pays.
func BenchmarkCallSync(b *testing.B) {
	benchCalls(b, func(e *callEnv, reqs []*ip.IPRouteAddDel) { e.sync(b, reqs) })
}

// BenchmarkCallPipelined: the same requests with up to 64 in flight on one
// stream.
func BenchmarkCallPipelined(b *testing.B) {
	benchCalls(b, func(e *callEnv, reqs []*ip.IPRouteAddDel) { e.pipelined(b, reqs, 64) })
}

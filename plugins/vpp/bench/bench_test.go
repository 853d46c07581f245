// Package vppbench_test measures the VPP plugins end to end: the scheduler,
// the real ifplugin and l3plugin descriptors, vppconn, GoVPP's codec and
// socket client, and the VPP that vpptest.Start picks: vppsim on a unix
// socket by default, a real VPP of the test process's own with
// NETAGENT_VPP_DIR (make bench-vpp runs both), or the user's VPP with
// VPP_API_SOCKET. See docs/benchmarks.md ("VPP: vppsim and the real VPP
// 25.10") for how to run them and the numbers they gave.
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
// report, besides ns/op: ns/value (per NB value); calls/value and calls/s,
// the calls the agent made as vppconn's metrics count them (a dump is one);
// in-calls-%, the share of the time spent inside those calls; on vppsim
// only, msgs/value and msgs/s, the binary-API messages vppsim received
// during the timed transaction (every request, the control ping that ends
// each dump, and GoVPP's health-check pings, ten per second here); on a
// real VPP whose process is visible here, vpp-cpu-s/op, the CPU time VPP
// used during the timed transaction (cpu_test.go). Each
// checks outside the timer what it did: the operations recorded, the calls
// that change VPP by message (and, on vppsim, the requests that changed
// it), and what VPP holds, read back with vpptest's dumps.
//
// Every iteration starts from a VPP without the workload: vppsim or the
// test process's own VPP is restarted (empty), the user's VPP has the
// workload deleted through the agent. ResyncAfterRestart skips on the
// user's VPP, which is never restarted.
//
// The call benchmarks (CallSync, CallPipelined) time 10,000
// ip_route_add_del through vppconn and GoVPP without the scheduler: the cost
// of a call, one at a time and with many in flight. CallPipelined is the
// reference for what VPP can take.
package vppbench_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
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
)

const (
	benchInterfaces = 1_000
	benchRoutes     = 10_000
	// benchValues is the number of NB values of the workload.
	benchValues = benchInterfaces + benchRoutes
	// benchOps is the number of operations creating them: per interface
	// the interface, its admin state UP and its address; per route one.
	benchOps = 3*benchInterfaces + benchRoutes
)

// createWrites are the calls that change VPP when the workload is created,
// by message: per interface create_loopback, sw_interface_tag_add_del,
// sw_interface_set_flags and sw_interface_add_del_address; per route
// ip_route_add_del.
var createWrites = map[string]int{
	"create_loopback":              benchInterfaces,
	"sw_interface_tag_add_del":     benchInterfaces,
	"sw_interface_set_flags":       benchInterfaces,
	"sw_interface_add_del_address": benchInterfaces,
	"ip_route_add_del":             benchRoutes,
}

// deleteWrites are the calls that change VPP when the workload is deleted,
// by message: per route ip_route_add_del; per interface its address
// removed, admin state down, and the loopback deleted (VPP drops the tag
// with it).
var deleteWrites = map[string]int{
	"ip_route_add_del":             benchRoutes,
	"sw_interface_add_del_address": benchInterfaces,
	"sw_interface_set_flags":       benchInterfaces,
	"delete_loopback":              benchInterfaces,
}

// logCalls (go test ... -calls): each transaction benchmark logs its calls
// by message: number per op, mean time, share of the time.
var logCalls = flag.Bool("calls", false, "log the VPP calls of the transaction benchmarks by message")

// TestMain: GoVPP notices a VPP restart within a few probes (its default
// probes once a second), and waits a second for each answer, so that a
// real VPP busy with a long dump on a loaded machine does not have its
// connection dropped in the middle of a transaction. The probes are control
// pings that vppsim counts: ten per second, against thousands of the
// agent's messages.
func TestMain(m *testing.M) {
	vpptest.QuickHealthChecks(100 * time.Millisecond)
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

// benchEnv is a VPP, a vppconn.Manager connected to it, and an agent: a
// scheduler with ifplugin's and l3plugin's descriptors, as the daemon
// registers them.
type benchEnv struct {
	b   *testing.B
	vpp *vpptest.VPP
	reg *prometheus.Registry // the Manager's metrics
	s   *kvscheduler.Scheduler
	kvs []kv

	// Totals of the timed transactions.
	msgs     int           // messages vppsim received (vppsim only)
	calls    int           // calls the agent made (a dump is one)
	callTime time.Duration // time spent in them

	byMsg map[string]msgCalls

	callStart vppCalls // the Manager's counts when the timer started
	last      vppCalls // the calls of the last timed transaction

	// VPP's CPU time in the timed transactions (vpp-cpu-s/op): its PID
	// when the timer started (0: not measured, cpuWhy says why), its CPU
	// time then, and the total.
	cpuPID   int
	cpuStart time.Duration
	vppCPU   time.Duration
	cpuWhy   string
}

// vppCalls are the VPP calls the Manager counted: their number, total time,
// number by message of those that succeeded, and failures.
type vppCalls struct {
	n      int
	d      time.Duration
	ok     map[string]int
	failed int
	// byMsg is the number and time of the calls by message (failed ones
	// included).
	byMsg map[string]msgCalls
}

// msgCalls is the number and the total time of the calls of one message.
type msgCalls struct {
	n int
	d time.Duration
}

// sub is the calls made since before.
func (c vppCalls) sub(before vppCalls) vppCalls {
	out := vppCalls{n: c.n - before.n, d: c.d - before.d, ok: map[string]int{}, failed: c.failed - before.failed, byMsg: map[string]msgCalls{}}
	for msg, n := range c.ok {
		if d := n - before.ok[msg]; d != 0 {
			out.ok[msg] = d
		}
	}
	for msg, m := range c.byMsg {
		if n := m.n - before.byMsg[msg].n; n != 0 {
			out.byMsg[msg] = msgCalls{n: n, d: m.d - before.byMsg[msg].d}
		}
	}
	return out
}

// writes are the calls that changed VPP, by message: all but dumps and
// reads (ifplugin reads an interface's VRF with sw_interface_get_table).
func (c vppCalls) writes() map[string]int {
	out := map[string]int{}
	for msg, n := range c.ok {
		if !strings.HasSuffix(msg, "_dump") && !strings.Contains(msg, "_get_") && msg != "control_ping" && msg != "show_version" {
			out[msg] = n
		}
	}
	return out
}

// vppCalls reads the Manager's call histogram.
func (e *benchEnv) vppCalls() vppCalls {
	e.b.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		e.b.Fatal(err)
	}
	out := vppCalls{ok: map[string]int{}, byMsg: map[string]msgCalls{}}
	for _, f := range families {
		if f.GetName() != "netagent_vpp_api_call_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			n := int(m.GetHistogram().GetSampleCount())
			d := time.Duration(m.GetHistogram().GetSampleSum() * float64(time.Second))
			out.n += n
			out.d += d
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			mc := out.byMsg[labels["message"]]
			out.byMsg[labels["message"]] = msgCalls{n: mc.n + n, d: mc.d + d}
			if labels["result"] == "ok" {
				out.ok[labels["message"]] += n
			} else {
				out.failed += n
			}
		}
	}
	return out
}

// startTimer starts the timer of one transaction, after resetting the
// counts.
func (e *benchEnv) startTimer() {
	if e.vpp.Sim != nil {
		e.vpp.Sim.ResetCalls()
	}
	e.callStart = e.vppCalls()
	e.cpuPID, e.cpuWhy = e.vppPID()
	if e.cpuPID != 0 {
		var err error
		if e.cpuStart, err = processCPU(e.cpuPID); err != nil {
			e.b.Fatalf("VPP's CPU time: %v", err)
		}
	}
	e.b.StartTimer()
}

// stopTimer stops the timer and adds the transaction's counts to the
// totals.
func (e *benchEnv) stopTimer() {
	e.b.StopTimer()
	if e.cpuPID != 0 {
		cpu, err := processCPU(e.cpuPID)
		if err != nil {
			e.b.Fatalf("VPP's CPU time (did VPP restart during the transaction?): %v", err)
		}
		e.vppCPU += cpu - e.cpuStart
	}
	if e.vpp.Sim != nil {
		e.msgs += len(e.vpp.Sim.Calls())
	}
	e.last = e.vppCalls().sub(e.callStart)
	e.calls += e.last.n
	e.callTime += e.last.d
	for msg, m := range e.last.byMsg {
		t := e.byMsg[msg]
		e.byMsg[msg] = msgCalls{n: t.n + m.n, d: t.d + m.d}
	}
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	areas := append(vppcalls.Areas(), l3plugin.New(nil, nil, nil).Area())
	v := vpptest.Start(b, vpptest.Options{Areas: areas})
	e := &benchEnv{b: b, vpp: v, reg: prometheus.NewRegistry(), kvs: workload(b), byMsg: map[string]msgCalls{}}
	if err := v.M.Register(e.reg); err != nil {
		b.Fatal(err)
	}
	if v.Own != nil {
		// Before Start's clean-up, which would otherwise delete the
		// workload from the test's own VPP one call at a time.
		b.Cleanup(v.Restart)
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
	l3 := l3plugin.New(e.vpp.M, ifplugin.SchedulerInterfaces(e.s), quiet)
	l3.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(e.s))
	if err := e.s.RegisterKVDescriptor(ifplugin.New(e.vpp.M, quiet).Descriptors()...); err != nil {
		e.b.Fatal(err)
	}
	if err := e.s.RegisterKVDescriptor(l3.Descriptors()...); err != nil {
		e.b.Fatal(err)
	}
}

// clearVPP leaves VPP without the workload: vppsim and the test's own VPP
// are restarted (empty; the Manager reconnects); from the user's VPP, which
// is never restarted, the agent deletes the workload.
func (e *benchEnv) clearVPP() {
	e.b.Helper()
	if e.vpp.CanRestart() {
		e.vpp.Restart()
		return
	}
	deletes := make([]kv, len(e.kvs))
	for i, x := range e.kvs {
		deletes[i] = kv{key: x.key}
	}
	e.commit(api.TxnOptions{}, deletes)
	if ifs, routes := e.vpp.NewInterfaces(), e.vpp.NewRoutes(vpptest.SourceAPI); len(ifs) > 0 || len(routes) > 0 {
		e.b.Fatalf("after deleting the workload VPP still has %d new interfaces and %d new API routes", len(ifs), len(routes))
	}
}

// commit runs one transaction of the workload's values with the given
// options, and returns its sequence number.
func (e *benchEnv) commit(opts api.TxnOptions, kvs []kv) uint64 {
	seq, err := vpptest.Commit(context.Background(), e.s, opts, kvs...)
	if err != nil {
		e.b.Fatalf("commit: %v (VPP connection: %+v)", err, e.vpp.M.Status())
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

// expectWrites checks the calls of the last timed transaction that changed
// VPP, by message (none failed), and on vppsim the requests it received
// that change it: want of them.
func (e *benchEnv) expectWrites(what string, want map[string]int) {
	e.b.Helper()
	if got := e.last.writes(); !maps.Equal(got, want) {
		e.b.Fatalf("%s: the calls that changed VPP were %v, want %v", what, got, want)
	}
	if e.last.failed > 0 {
		e.b.Fatalf("%s: %d calls failed", what, e.last.failed)
	}
	if e.vpp.Sim == nil {
		return
	}
	total := 0
	for _, n := range want {
		total += n
	}
	if w := vpptest.Writes(e.vpp.Sim); len(w) != total {
		e.b.Fatalf("%s: vppsim received %d requests that change it, want %d", what, len(w), total)
	}
}

// expectApplied checks, with vpptest's dumps, that VPP holds the workload
// and nothing else it did not have at the start: every interface tagged
// with its name, up, with its address; every route (of the API source) with
// its one path via its next hop through its interface.
func (e *benchEnv) expectApplied(what string) {
	e.b.Helper()
	swIfIndex := map[string]uint32{}
	for _, i := range e.vpp.NewInterfaces() {
		n, err := strconv.Atoi(strings.TrimPrefix(i.Tag, "if-"))
		if err != nil || ifaceName(n) != i.Tag || n >= benchInterfaces {
			e.b.Fatalf("%s: VPP has an interface not of the workload: %s (tag %q)", what, i.Name, i.Tag)
		}
		addr := "10." + subnet(n) + ".1/24"
		if !i.AdminUp || !slices.Equal(i.Addresses, []string{addr}) {
			e.b.Fatalf("%s: interface %s (%s): admin up %v, addresses %v, want up with %s", what, i.Tag, i.Name, i.AdminUp, i.Addresses, addr)
		}
		swIfIndex[i.Tag] = i.SwIfIndex
	}
	if len(swIfIndex) != benchInterfaces {
		e.b.Fatalf("%s: VPP has %d interfaces of the workload, want %d", what, len(swIfIndex), benchInterfaces)
	}
	routes := e.vpp.NewRoutes(vpptest.SourceAPI)
	if len(routes) != benchRoutes {
		e.b.Fatalf("%s: VPP has %d API routes, want %d", what, len(routes), benchRoutes)
	}
	for _, r := range routes {
		// 20.x.y.0/24 is route j = x*256+y, through interface j%1000.
		a := r.Prefix.Addr().As4()
		j := int(a[1])<<8 | int(a[2])
		i := j % benchInterfaces
		nh := netip.MustParseAddr("10." + subnet(i) + ".2")
		want, ok := swIfIndex[ifaceName(i)]
		if r.TableID != 0 || a[0] != 20 || r.Prefix.Bits() != 24 || j >= benchRoutes || !ok ||
			len(r.Paths) != 1 || r.Paths[0].SwIfIndex != want || r.Paths[0].NextHop != nh {
			e.b.Fatalf("%s: route %s: paths %+v, want one via %s sw_if_index %d", what, r, r.Paths, nh, want)
		}
	}
}

// report adds, for the timed transactions: ns/value; calls/value and
// calls/s, the calls the agent made (a dump and its control ping are one);
// in-calls-%, the share of the time spent in them (from the request to the
// reply: GoVPP, the socket and VPP), the rest being the scheduler's and
// the descriptors' own work; on vppsim, msgs/value and msgs/s, the
// messages vppsim received; on a real VPP whose process is here,
// vpp-cpu-s/op, the CPU time VPP used during the timed transactions.
func (e *benchEnv) report() {
	b := e.b
	elapsed := b.Elapsed()
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/benchValues, "ns/value")
	b.ReportMetric(float64(e.calls)/float64(b.N)/benchValues, "calls/value")
	if e.vpp.Sim != nil {
		b.ReportMetric(float64(e.msgs)/float64(b.N)/benchValues, "msgs/value")
	}
	if elapsed > 0 {
		b.ReportMetric(float64(e.calls)/elapsed.Seconds(), "calls/s")
		b.ReportMetric(100*e.callTime.Seconds()/elapsed.Seconds(), "in-calls-%")
		if e.vpp.Sim != nil {
			b.ReportMetric(float64(e.msgs)/elapsed.Seconds(), "msgs/s")
		}
	}
	if e.cpuWhy == "" {
		b.ReportMetric(e.vppCPU.Seconds()/float64(b.N), "vpp-cpu-s/op")
	} else if b.N > 0 {
		b.Logf("vpp-cpu-s/op not measured: %s", e.cpuWhy)
	}
	if *logCalls {
		msgs := slices.SortedFunc(maps.Keys(e.byMsg), func(x, y string) int { return cmp.Compare(e.byMsg[y].d, e.byMsg[x].d) })
		var line strings.Builder
		for _, msg := range msgs {
			m := e.byMsg[msg]
			fmt.Fprintf(&line, "; %s %d × %.1f µs = %.0f%%", msg, m.n/b.N, float64(m.d.Microseconds())/float64(m.n), 100*m.d.Seconds()/elapsed.Seconds())
		}
		b.Logf("calls per op by message (count × mean time = share of the time)%s", line.String())
	}
}

// BenchmarkCreate: one transaction creating the 1,000 interfaces and the
// 10,000 routes in a VPP without them, by an agent that starts with nothing.
func BenchmarkCreate(b *testing.B) {
	e := newBenchEnv(b)
	b.ResetTimer()
	for n := range b.N {
		b.StopTimer()
		if n > 0 {
			e.clearVPP()
			e.startAgent()
		}
		e.startTimer()
		seq := e.commit(api.TxnOptions{}, e.kvs)
		e.stopTimer()
		e.expectOps("create", seq, benchOps, api.OpCreate)
		e.expectWrites("create", createWrites)
		e.expectApplied("create")
	}
	e.report()
}

// BenchmarkResyncInSync: a full resync of the same values while VPP has
// them all: it retrieves everything and must change nothing.
func BenchmarkResyncInSync(b *testing.B) {
	e := newBenchEnv(b)
	e.commit(api.TxnOptions{}, e.kvs)
	e.expectApplied("set-up")
	resync := api.TxnOptions{Resync: api.FullResync}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		e.startTimer()
		seq := e.commit(resync, e.kvs)
		e.stopTimer()
		e.expectOps("resync in sync", seq, 0, api.OpCreate)
		e.expectWrites("resync in sync", map[string]int{})
	}
	e.report()
}

// BenchmarkResyncAfterRestart: VPP restarted (empty); the downstream resync
// the daemon runs then re-creates every value. It skips on the user's VPP.
func BenchmarkResyncAfterRestart(b *testing.B) {
	e := newBenchEnv(b)
	if !e.vpp.CanRestart() {
		b.Skipf("restarts VPP: not the user's VPP at %s", e.vpp.Socket)
	}
	e.commit(api.TxnOptions{}, e.kvs)
	resync := api.TxnOptions{Resync: api.DownstreamResync}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		e.vpp.Restart()
		e.startTimer()
		seq := e.commit(resync, nil)
		e.stopTimer()
		e.expectOps("resync after restart", seq, benchOps, api.OpCreate)
		e.expectWrites("resync after restart", createWrites)
		e.expectApplied("resync after restart")
	}
	e.report()
}

// BenchmarkDelete: one transaction deleting the 11,000 values from VPP,
// by the agent that created them.
func BenchmarkDelete(b *testing.B) {
	e := newBenchEnv(b)
	deletes := make([]kv, len(e.kvs))
	for i, x := range e.kvs {
		deletes[i] = kv{key: x.key}
	}
	b.ResetTimer()
	for n := range b.N {
		b.StopTimer()
		if n > 0 {
			e.clearVPP()
			e.startAgent()
		}
		e.commit(api.TxnOptions{}, e.kvs)
		e.startTimer()
		seq := e.commit(api.TxnOptions{}, deletes)
		e.stopTimer()
		e.expectOps("delete", seq, benchOps, api.OpDelete)
		e.expectWrites("delete", deleteWrites)
		if ifs, routes := e.vpp.NewInterfaces(), e.vpp.NewRoutes(vpptest.SourceAPI); len(ifs) > 0 || len(routes) > 0 {
			b.Fatalf("after the delete VPP still has %d new interfaces and %d new API routes", len(ifs), len(routes))
		}
	}
	e.report()
}

// callRoutes are the requests of the call benchmarks: benchRoutes routes
// 20.x.y.0/24 in table 0 via a next hop, without interface (so that none is
// needed).
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

// callNextHop is the next hop of callRoutes.
var callNextHop = netip.MustParseAddr("10.0.0.2")

// callEnv is a VPP and a Manager connected to it, for the call benchmarks,
// with the requests that add and remove the routes.
type callEnv struct {
	vpp        *vpptest.VPP
	adds, dels []*ip.IPRouteAddDel
}

func newCallEnv(b *testing.B) *callEnv {
	v := vpptest.Start(b, vpptest.Options{Areas: []vppconn.Area{l3plugin.New(nil, nil, nil).Area()}})
	return &callEnv{vpp: v, adds: callRoutes(true), dels: callRoutes(false)}
}

// routesAdded counts the routes of callRoutes that VPP has (read with
// vpptest's dumps), and fails on one whose path is not theirs.
func (e *callEnv) routesAdded(b *testing.B) int {
	b.Helper()
	n := 0
	for _, r := range e.vpp.NewRoutes(vpptest.SourceAPI) {
		a := r.Prefix.Addr().As4()
		if r.TableID != 0 || a[0] != 20 || r.Prefix.Bits() != 24 || int(a[1])<<8|int(a[2]) >= benchRoutes {
			continue
		}
		if len(r.Paths) != 1 || r.Paths[0].NextHop != callNextHop {
			b.Fatalf("route %s: paths %+v, want one via %s", r, r.Paths, callNextHop)
		}
		n++
	}
	return n
}

// sync sends the requests one at a time, each waiting for its reply, as
// the descriptors do: through the Manager's connection, with a call
// context each.
func (e *callEnv) sync(b *testing.B, reqs []*ip.IPRouteAddDel) {
	conn, err := e.vpp.M.Conn(l3plugin.AreaName)
	if err != nil {
		b.Fatal(err)
	}
	c := ip.NewServiceClient(conn)
	for _, req := range reqs {
		ctx, cancel := e.vpp.M.CallContext(context.Background())
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
	conn, err := e.vpp.M.Conn(l3plugin.AreaName)
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
	if n := e.routesAdded(b); n != 0 {
		b.Fatalf("VPP has %d of the routes before the benchmark", n)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		b.StartTimer()
		send(e, e.adds)
		b.StopTimer()
		if n := e.routesAdded(b); n != benchRoutes {
			b.Fatalf("VPP has %d of the routes, want %d", n, benchRoutes)
		}
		send(e, e.dels)
		if n := e.routesAdded(b); n != 0 {
			b.Fatalf("VPP has %d of the routes left", n)
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
// stream: what VPP (or vppsim) can take, the reference for the agent.
func BenchmarkCallPipelined(b *testing.B) {
	benchCalls(b, func(e *callEnv, reqs []*ip.IPRouteAddDel) { e.pipelined(b, reqs, 64) })
}

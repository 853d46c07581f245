package l3plugin_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

const benchRoutes = 1000

// benchDst is the destination of the i-th route of the benchmark.
func benchDst(i int) string { return fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256) }

// BenchmarkRoutes1000 creates, resyncs (full, kernel in sync) and deletes
// 1,000 routes through the scheduler in one namespace, one transaction per
// phase; netlink-direct does the same adds and deletes with one netlink
// request each and no scheduler (the kernel's share), ip-batch with
// `ip -batch`, for comparison. Each phase is reported in ns per route.
func BenchmarkRoutes1000(b *testing.B) {
	b.Run("kvscheduler", func(b *testing.B) {
		e := newEnv(b)
		e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
		iface := e.iface("v0", "192.168.1.1/24")
		e.commit(iface)
		routes := make([]kv, benchRoutes)
		deletes := make([]kv, benchRoutes)
		for i := range routes {
			routes[i] = route(b, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: benchDst(i), GwAddr: "192.168.1.254", Metric: 10})
			deletes[i] = del(routes[i])
		}
		nb := append([]kv{iface}, routes...)
		var create, resync, remove time.Duration
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			t0 := time.Now()
			e.commit(routes...)
			t1 := time.Now()
			seq := e.resync(nb...)
			t2 := time.Now()
			e.commit(deletes...)
			t3 := time.Now()
			create += t1.Sub(t0)
			resync += t2.Sub(t1)
			remove += t3.Sub(t2)
			b.StopTimer()
			if ops := e.executed(seq); len(ops) != 0 {
				b.Fatalf("resync executed %d operations", len(ops))
			}
			if n := len(e.kernelRoutes()); n != 0 {
				b.Fatalf("%d routes left", n)
			}
			b.StartTimer()
		}
		per := float64(b.N * benchRoutes)
		b.ReportMetric(float64(create.Nanoseconds())/per, "create-ns/route")
		b.ReportMetric(float64(resync.Nanoseconds())/per, "resync-ns/route")
		b.ReportMetric(float64(remove.Nanoseconds())/per, "delete-ns/route")
	})
	b.Run("netlink-direct", func(b *testing.B) {
		// The kernel's share: the same routes added and deleted with one
		// netlink request each on the namespace's handle, no scheduler.
		e := newEnv(b)
		e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
		h, err := e.mgr.Handle(nsplugin.Ref{Type: linuxns.NetNamespace_NSID, Reference: e.ns}, false)
		if err != nil {
			b.Fatal(err)
		}
		link, err := h.LinkByName("v0")
		if err != nil {
			b.Fatal(err)
		}
		routes := make([]*netlink.Route, benchRoutes)
		for i := range routes {
			_, dst, _ := net.ParseCIDR(benchDst(i))
			routes[i] = &netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Gw: net.ParseIP("192.168.1.254"), Priority: 10, Protocol: l3plugin.RouteProtocol}
		}
		var create, remove time.Duration
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			t0 := time.Now()
			for _, r := range routes {
				if err := h.RouteAdd(r); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			for _, r := range routes {
				if err := h.RouteDel(r); err != nil {
					b.Fatal(err)
				}
			}
			create += t1.Sub(t0)
			remove += time.Since(t1)
		}
		per := float64(b.N * benchRoutes)
		b.ReportMetric(float64(create.Nanoseconds())/per, "create-ns/route")
		b.ReportMetric(float64(remove.Nanoseconds())/per, "delete-ns/route")
	})
	b.Run("ip-batch", func(b *testing.B) {
		e := newEnv(b)
		e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
		dir := b.TempDir()
		write := func(name, verb string) string {
			var s strings.Builder
			for i := 0; i < benchRoutes; i++ {
				fmt.Fprintf(&s, "route %s %s via 192.168.1.254 dev v0 metric 10 proto 181\n", verb, benchDst(i))
			}
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(s.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			return path
		}
		addFile, delFile := write("add", "add"), write("del", "del")
		batch := func(file string) time.Duration {
			t0 := time.Now()
			if out, err := exec.Command("ip", "-n", e.ns, "-batch", file).CombinedOutput(); err != nil {
				b.Fatalf("ip -batch %s: %v: %s", file, err, out)
			}
			return time.Since(t0)
		}
		var create, remove time.Duration
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			create += batch(addFile)
			remove += batch(delFile)
		}
		per := float64(b.N * benchRoutes)
		b.ReportMetric(float64(create.Nanoseconds())/per, "create-ns/route")
		b.ReportMetric(float64(remove.Nanoseconds())/per, "delete-ns/route")
	})
}

// BenchmarkRoutesAgainstIPBatch: n routes (1,000 and 10,000) created and
// deleted by the agent (scheduler and descriptors, one transaction per
// phase: the descriptor gets them in batches and pipelines them) and by
// `ip -n NS -batch FILE` (same routes), interleaved in each iteration on
// the same namespace. Reported: medians over the iterations (ms) and the
// ratios of the medians, agent over ip, with the spread (min-max) of the
// per-iteration ratios (the agent's and ip's runs of an iteration are
// paired; which goes first alternates). Run with -benchtime 5x or more.
func BenchmarkRoutesAgainstIPBatch(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			e := newEnv(b)
			e.ip("addr", "add", "192.168.1.1/24", "dev", "v0")
			iface := e.iface("v0", "192.168.1.1/24")
			e.commit(iface)
			routes := make([]kv, n)
			deletes := make([]kv, n)
			var add, rm strings.Builder
			for i := range routes {
				dst := fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)
				routes[i] = route(b, &linuxl3.Route{OutgoingInterface: "v0", DstNetwork: dst, GwAddr: "192.168.1.254", Metric: 10})
				deletes[i] = del(routes[i])
				fmt.Fprintf(&add, "route add %s via 192.168.1.254 dev v0 metric 10 proto 181\n", dst)
				fmt.Fprintf(&rm, "route del %s via 192.168.1.254 dev v0 metric 10 proto 181\n", dst)
			}
			dir := b.TempDir()
			addFile, rmFile := filepath.Join(dir, "add"), filepath.Join(dir, "rm")
			if err := os.WriteFile(addFile, []byte(add.String()), 0o600); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(rmFile, []byte(rm.String()), 0o600); err != nil {
				b.Fatal(err)
			}
			ipBatch := func(file string) time.Duration {
				t0 := time.Now()
				if out, err := exec.Command("ip", "-n", e.ns, "-batch", file).CombinedOutput(); err != nil {
					b.Fatalf("ip -batch: %v: %s", err, out)
				}
				return time.Since(t0)
			}
			var agentAdd, agentDel, ipAdd, ipDel []time.Duration
			b.ResetTimer()
			agent := func() {
				t0 := time.Now()
				e.commit(routes...)
				agentAdd = append(agentAdd, time.Since(t0))
				t0 = time.Now()
				e.commit(deletes...)
				agentDel = append(agentDel, time.Since(t0))
			}
			ip := func() {
				ipAdd = append(ipAdd, ipBatch(addFile))
				ipDel = append(ipDel, ipBatch(rmFile))
			}
			for i := range b.N {
				// Who goes first alternates (a slower second run, e.g. a
				// cache or the load, falls on both).
				if i%2 == 0 {
					agent()
					ip()
				} else {
					ip()
					agent()
				}
				b.StopTimer()
				if got := len(e.kernelRoutes()); got != 0 {
					b.Fatalf("%d routes left", got)
				}
				b.StartTimer()
			}
			reportAgainst(b, "create", agentAdd, ipAdd)
			reportAgainst(b, "delete", agentDel, ipDel)
		})
	}
}

// reportAgainst reports the medians (ms) of the agent's and the
// reference's times and the ratio of the medians, with the lowest and
// highest per-iteration ratio.
func reportAgainst(b *testing.B, phase string, agent, ref []time.Duration) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	ratios := make([]float64, len(agent))
	for i := range agent {
		ratios[i] = float64(agent[i]) / float64(ref[i])
	}
	slices.Sort(ratios)
	b.ReportMetric(ms(median(agent)), phase+"-agent-ms")
	b.ReportMetric(ms(median(ref)), phase+"-ip-ms")
	b.ReportMetric(float64(median(agent))/float64(median(ref)), phase+"-x")
	b.ReportMetric(ratios[0], phase+"-x-min")
	b.ReportMetric(ratios[len(ratios)-1], phase+"-x-max")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

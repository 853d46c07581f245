package l3plugin_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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

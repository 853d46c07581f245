package agentctl_test

// What a user waits for when applying many routes: `agentctl config update
// FILE --wait` (and `config delete FILE --wait`) against a running agent,
// timed end to end as the user waits (agentctl's start, reading the
// document, gRPC, the agent's transaction, the reply), against `ip -n NS
// -batch` of the same routes in the same run.

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkConfigUpdateRoutes: 10,000 Linux routes (/32, via the host end
// of a veth pair, in the namespace of its other end) created by one
// `config update --wait` and removed by one `config delete --wait`, the
// document in YAML (one flow mapping a route) and in JSON (sub-benchmarks
// of one agent); the reference is `ip -n NS -batch` adding and deleting
// the same routes.
// Each iteration does all four, interleaved, so that each pair sees the
// same load. Metrics: medians over the iterations (update-s, delete-s,
// ip-add-s, ip-del-s) and the medians of the per-iteration ratios
// (update/ip, delete/ip). Run with -benchtime 5x or more.
func BenchmarkConfigUpdateRoutes(b *testing.B) {
	const routes = 10_000
	n := uniqueNames(b, "bnc")
	a := startAgent(b, agentOptions{Args: []string{"--log-level", "warn"}})
	env := append(a.env(), "AGENTCTL_TIMEOUT=5m")
	base := writeFile(b, "veth.yaml", vethRouteDoc(b, n, 75))
	if _, stderr, code := agentctl(b, env, "config", "update", "--wait", base); code != 0 {
		b.Fatalf("config update of the veth pair: exit %d: %s", code, stderr)
	}
	var yamlDoc, jsonDoc, add, del strings.Builder
	yamlDoc.WriteString("linux_config:\n  routes:\n")
	jsonDoc.WriteString(`{"linux_config": {"routes": [`)
	for i := range routes {
		dst := fmt.Sprintf("10.%d.%d.%d/32", 100+i>>16, (i>>8)&255, i&255)
		fmt.Fprintf(&yamlDoc, "    - {outgoing_interface: %s, dst_network: %s, gw_addr: 172.30.75.1}\n", n.Peer, dst)
		if i > 0 {
			jsonDoc.WriteString(",")
		}
		fmt.Fprintf(&jsonDoc, "\n  {\"outgoing_interface\": %q, \"dst_network\": %q, \"gw_addr\": \"172.30.75.1\"}", n.Peer, dst)
		fmt.Fprintf(&add, "route add %s via 172.30.75.1 dev eth0 proto 181\n", dst)
		fmt.Fprintf(&del, "route del %s via 172.30.75.1 dev eth0 proto 181\n", dst)
	}
	jsonDoc.WriteString("\n]}}\n")
	docs := map[string]string{
		"YAML": writeFile(b, "routes.yaml", yamlDoc.String()),
		"JSON": writeFile(b, "routes.json", jsonDoc.String()),
	}
	addFile, delFile := writeFile(b, "add.batch", add.String()), writeFile(b, "del.batch", del.String())
	count := func() int {
		out, err := ip("-n", n.NS, "route", "show", "proto", "181")
		if err != nil {
			b.Fatal(err)
		}
		return strings.Count(out, "\n")
	}
	batch := func(file string) func() error {
		return func() error {
			out, err := exec.Command("ip", "-n", n.NS, "-batch", file).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}
	}
	// The example's own route (proto 181 too) stays throughout.
	before := count()
	for _, format := range []string{"YAML", "JSON"} {
		docFile := docs[format]
		b.Run(format, func(b *testing.B) {
			var upd, dele, ipAdd, ipDel, rUpd, rDel []float64
			for range b.N {
				u := timed(b, "config update", ctlStep(b, env, "config", "update", "--wait", docFile))
				if got := count(); got != before+routes {
					b.Fatalf("after config update: %d routes of ours, want %d", got, before+routes)
				}
				d := timed(b, "config delete", ctlStep(b, env, "config", "delete", "--wait", docFile))
				if got := count(); got != before {
					b.Fatalf("after config delete: %d routes of ours, want %d", got, before)
				}
				ia := timed(b, "ip -batch add", batch(addFile))
				if got := count(); got != before+routes {
					b.Fatalf("after ip -batch: %d routes, want %d", got, before+routes)
				}
				id := timed(b, "ip -batch del", batch(delFile))
				upd, dele = append(upd, u.Seconds()), append(dele, d.Seconds())
				ipAdd, ipDel = append(ipAdd, ia.Seconds()), append(ipDel, id.Seconds())
				rUpd, rDel = append(rUpd, u.Seconds()/ia.Seconds()), append(rDel, d.Seconds()/id.Seconds())
			}
			b.StopTimer()
			for name, xs := range map[string][]float64{"update-s": upd, "delete-s": dele, "ip-add-s": ipAdd, "ip-del-s": ipDel, "update/ip": rUpd, "delete/ip": rDel} {
				b.ReportMetric(median(xs), name)
			}
		})
	}
}

// timed runs f and returns how long it took; an error fails the
// benchmark, naming what.
func timed(b *testing.B, what string, f func() error) time.Duration {
	b.Helper()
	start := time.Now()
	if err := f(); err != nil {
		b.Fatalf("%s: %v", what, err)
	}
	return time.Since(start)
}

// ctlStep is a step of a benchmark that runs agentctl with args.
func ctlStep(b *testing.B, env []string, args ...string) func() error {
	return func() error {
		if _, stderr, code := agentctl(b, env, args...); code != 0 {
			return fmt.Errorf("exit %d: %s", code, stderr)
		}
		return nil
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

package agentctl_test

// Large documents through gRPC: the message limits of the agent and of
// agentctl, and the errors when a limit is too small.

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// largeRoutes is the size of the large document: the 100k routes
// (a 4.3 MB request, over gRPC's default limit of 4 MiB).
const largeRoutes = 100_000

// routesDoc returns vethRouteDoc with routes more routes in NS: 10.0.0.0/32,
// 10.0.0.1/32, ... via the host end.
func routesDoc(t testing.TB, n netNames, subnet, routes int) string {
	t.Helper()
	var b strings.Builder
	for i := range routes {
		fmt.Fprintf(&b, "    - {outgoing_interface: %s, dst_network: 10.%d.%d.%d/32, gw_addr: 172.30.%d.1}\n",
			n.Peer, i>>16, (i>>8)&255, i&255, subnet)
	}
	doc := vethRouteDoc(t, n, subnet)
	i := strings.Index(doc, "  routes:\n")
	if i < 0 {
		t.Fatal("the example document has no routes")
	}
	i += len("  routes:\n")
	return doc[:i] + b.String() + doc[i:]
}

// TestAgentctlLargeDocument: a document of 100k routes goes through
// `config plan` (every operation listed, exit 2) and `config update --wait`
// (the routes in the kernel) with the default limits, and `config get`
// returns it. A limit too small on either side is one line that says which
// side refused what, its limit and the setting to raise: agentctl's
// (--grpc-max-msg-size, both ways) and the agent's (grpc.max_recv_msg_size,
// grpc.max_send_msg_size), which the agent logs too.
func TestAgentctlLargeDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("100k routes in the kernel: not with -short")
	}
	n := uniqueNames(t, "big")
	file := writeFile(t, "big.yaml", routesDoc(t, n, 73, largeRoutes))
	a := startAgent(t, agentOptions{})
	env := append(a.env(), "AGENTCTL_TIMEOUT=5m")

	start := time.Now()
	stdout, stderr, code := agentctl(t, env, "config", "plan", file)
	if code != 2 {
		t.Fatalf("config plan of %d routes: exit %d, want 2 (changes): %s", largeRoutes, code, stderr)
	}
	// Every route is listed: 100k of the document and the example's.
	if got := regexp.MustCompile(`(?m)^\d+ +CREATE +config/linux/l3/v2/route/`).FindAllStringIndex(stdout, -1); len(got) != largeRoutes+1 {
		t.Errorf("config plan lists %d route creations, want %d", len(got), largeRoutes+1)
	}
	summary := regexp.MustCompile(`Plan: (\d+) operations \((\d+) create\)\.`).FindStringSubmatch(stdout)
	if summary == nil || summary[1] != summary[2] || len(summary[1]) < 6 {
		t.Errorf("config plan: summary %q, want over 100k operations, all create", summary)
	}
	t.Logf("config plan of %d routes: %v", largeRoutes, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	mustCtl(t, env, "config", "update", file, "--wait")
	t.Logf("config update --wait of %d routes: %v", largeRoutes, time.Since(start).Round(time.Millisecond))
	routes, err := ip("-n", n.NS, "route", "show", "proto", "181")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(routes, "\n"); got != largeRoutes+1 {
		t.Errorf("%d routes of the agent in %s, want %d", got, n.NS, largeRoutes+1)
	}
	last := fmt.Sprintf("10.%d.%d.%d", (largeRoutes-1)>>16, ((largeRoutes-1)>>8)&255, (largeRoutes-1)&255)
	if !strings.Contains(routes, last+" via 172.30.73.1") {
		t.Errorf("the last route %s is not in the kernel", last)
	}
	if out := mustCtl(t, env, "config", "get"); !strings.Contains(out, last+"/32") {
		t.Errorf("config get does not hold the last route %s", last)
	}

	sizeRE := regexp.MustCompile(`a (\d+\.\d) MB request`)
	t.Run("agentctl's limit", func(t *testing.T) {
		line := wantError(t, env, "", []string{"config", "plan", file, "--grpc-max-msg-size", "1MiB"},
			"config plan: agentctl refused to send a ", " MB request: its limit is 1 MiB (--grpc-max-msg-size or AGENTCTL_GRPC_MAX_MSG_SIZE)")
		if m := sizeRE.FindStringSubmatch(line); m == nil || m[1] < "4.0" {
			t.Errorf("the size of the refused request in %q: want about 4.3 MB", line)
		}
		wantError(t, append(env, "AGENTCTL_GRPC_MAX_MSG_SIZE=2MB"), "", []string{"config", "get"},
			"config get: agentctl refused the agent's ", " MB answer: its limit is 2000000 B (--grpc-max-msg-size or AGENTCTL_GRPC_MAX_MSG_SIZE)")
		wantError(t, env, "", []string{"config", "get", "--grpc-max-msg-size", "lots"}, `--grpc-max-msg-size: size "lots": want a number of bytes, or one with a unit such as 64MiB or 8MB`)
	})

	t.Run("the agent's limits", func(t *testing.T) {
		small := startAgent(t, agentOptions{Config: "grpc: {max_recv_msg_size: 1MiB, max_send_msg_size: 100KiB}\n"})
		smallEnv := append(small.env(), "AGENTCTL_TIMEOUT=5m")
		line := wantError(t, smallEnv, "", []string{"config", "update", file, "--wait"},
			"config update: the agent refused a ", " MB request: its limit is 1 MiB (grpc.max_recv_msg_size in the agent's configuration)")
		if m := sizeRE.FindStringSubmatch(line); m == nil || m[1] < "4.0" {
			t.Errorf("the size of the refused request in %q: want about 4.3 MB", line)
		}
		wantError(t, smallEnv, "", []string{"config", "plan", file}, "config plan: the agent refused a ", "its limit is 1 MiB (grpc.max_recv_msg_size")
		// A plan of 5,000 routes: a small request, an answer over 100 KiB.
		wantError(t, smallEnv, "", []string{"config", "plan", writeFile(t, "mid.yaml", routesDoc(t, n, 73, 5000))},
			"config plan: the agent refused to send its ", "answer: its limit is 100 KiB (grpc.max_send_msg_size in the agent's configuration)")
		waitFor(t, "the agent's log of its refusals", func() (bool, string) {
			out := small.output()
			return strings.Contains(out, "the agent refused a ") && strings.Contains(out, "its limit is 1 MiB (grpc.max_recv_msg_size in the agent's configuration)") &&
				strings.Contains(out, "the agent refused to send a ") && strings.Contains(out, "call=/netagent.configurator.Configurator/Plan"), "no such lines yet"
		})
		if out := mustCtl(t, small.env(), "config", "get"); strings.Contains(out, n.Peer) {
			t.Errorf("the refused update reached the agent: %s", out)
		}
	})
}

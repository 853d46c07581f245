package agentctl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	vppip "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"
)

// BenchmarkConfigUpdateVPPRoutes: 10,000 VPP routes (/24, via a next hop
// on one loopback of the agent's) created by one `config update --wait`
// of a JSON document and removed by one `config delete --wait`, against
// the real VPP; the reference is the same ip_route_add_del requests sent
// by the benchmark itself, pipelined on one GoVPP stream (64 in flight),
// added and removed. Each iteration does all four, interleaved. Metrics:
// medians over the iterations of the times as the user waits (update-s,
// delete-s), of the agent's transactions as the scheduler records them
// (update-txn-s, delete-txn-s), of the references (pipe-add-s,
// pipe-del-s), and of the per-iteration ratios (update/pipe,
// delete/pipe). Run with -benchtime 5x or more; it skips without a real
// VPP (scripts/test-real-vpp.sh does not run benchmarks: run it with
// NETAGENT_VPP_DIR=$(realpath ../shared/vpp) as root).
func BenchmarkConfigUpdateVPPRoutes(b *testing.B) {
	const routes = 10_000
	v := realVPP(b)
	a := startAgent(b, agentOptions{VPPSocket: v.Socket, Args: []string{"--log-level", "warn"}})
	env := append(a.env(), "AGENTCTL_TIMEOUT=5m")
	base := writeFile(b, "loop.json", `{"vpp_config":{"interfaces":[{"name":"bench-lp","type":"SOFTWARE_LOOPBACK","enabled":true,"ip_addresses":["10.90.0.1/16"]}]}}`)
	if _, stderr, code := agentctl(b, env, "config", "update", "--wait", base); code != 0 {
		b.Fatalf("config update of the loopback: exit %d: %s", code, stderr)
	}
	var doc strings.Builder
	doc.WriteString(`{"vpp_config":{"routes":[`)
	for j := range routes {
		if j > 0 {
			doc.WriteString(",")
		}
		fmt.Fprintf(&doc, `{"dst_network":"20.%d.%d.0/24","next_hop_addr":"10.90.0.2","outgoing_interface":"bench-lp"}`, j>>8, j&255)
	}
	doc.WriteString("]}}")
	docFile := writeFile(b, "routes.json", doc.String())

	core.SetLogLevel(logrus.WarnLevel) // no connection chatter in the output
	conn, err := core.Connect(socketclient.NewVppClient(v.Socket))
	if err != nil {
		b.Fatalf("GoVPP connection of the reference: %v", err)
	}
	b.Cleanup(conn.Disconnect)
	sw := loopbackIndex(b, conn, "bench-lp")
	adds, dels := benchRouteRequests(routes, sw, true), benchRouteRequests(routes, sw, false)
	count := func() int {
		n := 0
		for _, d := range routeDump(b, conn) {
			if a := d.Route.Prefix.Address.Un.GetIP4(); a[0] == 20 && d.Route.Prefix.Len == 24 {
				n++
			}
		}
		return n
	}
	pipe := func(reqs []*vppip.IPRouteAddDel) func() error {
		return func() error { return pipelineRoutes(conn, reqs, 64) }
	}
	var upd, dele, updTxn, delTxn, pAdd, pDel, rUpd, rDel []float64
	b.ResetTimer()
	for range b.N {
		since := time.Now()
		u := timed(b, "config update", ctlStep(b, env, "config", "update", "--wait", docFile))
		b.StopTimer()
		if got := count(); got != routes {
			b.Fatalf("after config update: VPP has %d of the routes, want %d", got, routes)
		}
		updTxn = append(updTxn, txnSeconds(b, a, since, routes))
		since = time.Now()
		b.StartTimer()
		d := timed(b, "config delete", ctlStep(b, env, "config", "delete", "--wait", docFile))
		b.StopTimer()
		if got := count(); got != 0 {
			b.Fatalf("after config delete: VPP has %d of the routes", got)
		}
		delTxn = append(delTxn, txnSeconds(b, a, since, routes))
		b.StartTimer()
		pa := timed(b, "pipelined add", pipe(adds))
		b.StopTimer()
		if got := count(); got != routes {
			b.Fatalf("after the pipelined add: VPP has %d of the routes, want %d", got, routes)
		}
		b.StartTimer()
		pd := timed(b, "pipelined delete", pipe(dels))
		upd, dele, pAdd, pDel = append(upd, u.Seconds()), append(dele, d.Seconds()), append(pAdd, pa.Seconds()), append(pDel, pd.Seconds())
		rUpd, rDel = append(rUpd, u.Seconds()/pa.Seconds()), append(rDel, d.Seconds()/pd.Seconds())
	}
	b.StopTimer()
	if got := count(); got != 0 {
		b.Fatalf("after the pipelined delete: VPP has %d of the routes", got)
	}
	for name, xs := range map[string][]float64{"update-s": upd, "delete-s": dele, "update-txn-s": updTxn, "delete-txn-s": delTxn,
		"pipe-add-s": pAdd, "pipe-del-s": pDel, "update/pipe": rUpd, "delete/pipe": rDel} {
		b.ReportMetric(median(xs), name)
	}
}

// txnSeconds is the duration of the agent's transaction since then that
// executed ops operations (the scheduler's record: from its start to its
// end, as the history has it).
func txnSeconds(b *testing.B, a *agent, since time.Time, ops int) float64 {
	b.Helper()
	code, body, err := a.get("/scheduler/txn-history?format=json&since=" + url.QueryEscape(since.Format(time.RFC3339Nano)))
	if err != nil || code != 200 {
		b.Fatalf("txn-history: %d %v %.200s", code, err, body)
	}
	var h struct {
		Transactions []struct {
			Start, Stop time.Time
			Executed    []json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		b.Fatalf("txn-history: %v", err)
	}
	txns := h.Transactions
	for _, t := range txns {
		if len(t.Executed) == ops {
			return t.Stop.Sub(t.Start).Seconds()
		}
	}
	b.Fatalf("no transaction since %s executed %d operations (%d transactions)", since, ops, len(txns))
	return 0
}

// loopbackIndex is the sw_if_index of the interface tagged tag.
func loopbackIndex(b *testing.B, conn api.Connection, tag string) uint32 {
	b.Helper()
	c := interfaces.NewServiceClient(conn)
	dump, err := c.SwInterfaceDump(context.Background(), &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		b.Fatal(err)
	}
	for {
		d, err := dump.Recv()
		if err != nil {
			break
		}
		if d.Tag == tag {
			return uint32(d.SwIfIndex)
		}
	}
	b.Fatalf("VPP has no interface tagged %s", tag)
	return 0
}

// routeDump lists the entries of IPv4 table 0.
func routeDump(b *testing.B, conn api.Connection) []*vppip.IPRouteV2Details {
	b.Helper()
	dump, err := vppip.NewServiceClient(conn).IPRouteV2Dump(context.Background(), &vppip.IPRouteV2Dump{Table: vppip.IPTable{TableID: 0}})
	if err != nil {
		b.Fatal(err)
	}
	var out []*vppip.IPRouteV2Details
	for {
		d, err := dump.Recv()
		if err != nil {
			return out
		}
		out = append(out, d)
	}
}

// benchRouteRequests are the ip_route_add_del of the document's routes
// through the interface at sw.
func benchRouteRequests(n int, sw uint32, isAdd bool) []*vppip.IPRouteAddDel {
	out := make([]*vppip.IPRouteAddDel, n)
	for j := range out {
		out[j] = &vppip.IPRouteAddDel{IsAdd: isAdd, IsMultipath: true, Route: vppip.IPRoute{
			Prefix: ip_types.Prefix{Address: ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(ip_types.IP4Address{20, byte(j >> 8), byte(j), 0})}, Len: 24},
			NPaths: 1,
			Paths: []fib_types.FibPath{{
				SwIfIndex: sw, Weight: 1, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4,
				Nh: fib_types.FibPathNh{Address: ip_types.AddressUnionIP4(ip_types.IP4Address{10, 90, 0, 2})},
			}},
		}}
	}
	return out
}

// pipelineRoutes sends the requests on one stream with up to window in
// flight and checks every reply.
func pipelineRoutes(conn api.Connection, reqs []*vppip.IPRouteAddDel, window int) error {
	stream, err := conn.NewStream(context.Background(), core.WithReplySize(window))
	if err != nil {
		return err
	}
	defer func() { _ = stream.Close() }()
	sent := 0
	for received := range reqs {
		for ; sent < len(reqs) && sent-received < window; sent++ {
			if err := stream.SendMsg(reqs[sent]); err != nil {
				return err
			}
		}
		msg, err := stream.RecvMsg()
		if err != nil {
			return err
		}
		if r, ok := msg.(*vppip.IPRouteAddDelReply); !ok || r.Retval != 0 {
			return fmt.Errorf("reply %d: %#v", received, msg)
		}
	}
	return nil
}

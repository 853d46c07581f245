package l3plugin_test

import (
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// TestRouteBatchFailures: routes created in one transaction go to VPP as
// one batch, pipelined; a route VPP refuses (its interface was deleted
// behind the agent's back, VPP lacks its index) fails alone, with its own
// error, and the routes before and after it in the batch are applied (read
// back from VPP). Deleting them in one transaction is a batch too, and the
// refused route's delete (nothing in VPP) succeeds. The batch is longer
// than the pipeline's window (vppconn.PipelineWindow), with a refused
// route before and after its end.
func TestRouteBatchFailures(t *testing.T) {
	e := newEnv(t)
	e.waitConnected()
	e.mustCommit(iface("a"), iface("b"))
	a, b := e.swIfIndex("a"), e.swIfIndex("b")
	e.deleteLoopback(b)

	const n = 600
	viaB := map[int]bool{20: true, 550: true} // in the first window, after it
	var routes []kv
	via := map[string]string{}
	for j := range n {
		dev := "a"
		if viaB[j] {
			dev = "b"
		}
		r := routeKV(t, &vppl3.Route{DstNetwork: fmt.Sprintf("20.%d.%d.0/24", j/256, j%256), NextHopAddr: "10.0.0.2", OutgoingInterface: dev})
		routes = append(routes, r)
		via[r.key] = dev
	}
	_, err := e.commit(routes...)
	if err == nil || !strings.Contains(err.Error(), "20.0.20.0/24") || !strings.Contains(err.Error(), "20.2.38.0/24") {
		t.Fatalf("commit: %v, want the errors of the routes via b (20.0.20.0/24, 20.2.38.0/24)", err)
	}
	for _, r := range routes {
		st := e.status(r.key)
		if via[r.key] == "b" {
			if st.GetState() != api.ValueStateFailed || !strings.Contains(st.GetError(), "ip_route_add_del (add vrf 0 20.") {
				t.Errorf("route %s via b: %v %q, want FAILED with its ip_route_add_del error", r.key, st.GetState(), st.GetError())
			}
			continue
		}
		if st.GetState() != api.ValueStateConfigured {
			t.Errorf("route %s via a: %v %q, want CONFIGURED", r.key, st.GetState(), st.GetError())
		}
	}
	inVPP := map[netip.Prefix]bool{}
	for _, r := range e.vpp.NewRoutes(vpptest.SourceAPI) {
		if len(r.Paths) != 1 || r.Paths[0].SwIfIndex != a {
			t.Errorf("VPP route %s: paths %+v, want one via a (%d)", r, r.Paths, a)
		}
		inVPP[r.Prefix] = true
	}
	viaBInVPP := inVPP[netip.MustParsePrefix("20.0.20.0/24")] || inVPP[netip.MustParsePrefix("20.2.38.0/24")]
	if len(inVPP) != n-len(viaB) || viaBInVPP {
		t.Errorf("VPP has %d of the routes (one via b among them: %v), want the %d via a", len(inVPP), viaBInVPP, n-len(viaB))
	}

	dels := make([]kv, len(routes))
	for i, r := range routes {
		dels[i] = del(r.key)
	}
	if _, err := e.commit(dels...); err != nil {
		t.Fatalf("deleting the routes: %v", err)
	}
	if left := e.vpp.NewRoutes(vpptest.SourceAPI); len(left) != 0 {
		t.Errorf("VPP still has %d of the routes: %v", len(left), left)
	}
}

// TestARPBatch: ARP entries created, changed and deleted in one
// transaction each go to VPP as one batch (the descriptor has Batch),
// pipelined; an entry VPP refuses (its interface was deleted behind the
// agent's back) fails alone with its own error, the others are applied
// with their MAC and flag (read back from VPP); changed MACs replace the
// old ones; the deletes leave VPP without them.
func TestARPBatch(t *testing.T) {
	e := newEnv(t)
	for _, d := range l3plugin.New(nil, nil, nil).Descriptors() {
		if d.Name == l3plugin.ARPDescriptorName && d.Batch == nil {
			t.Fatal("the ARP descriptor has no Batch")
		}
	}
	e.waitConnected()
	e.mustCommit(iface("a"), iface("b"))
	a, b := e.swIfIndex("a"), e.swIfIndex("b")
	e.deleteLoopback(b)

	const n = 30
	entry := func(j int, mac byte) kv {
		dev := "a"
		if j == n/2 {
			dev = "b"
		}
		return arpKV(t, &vppl3.ARPEntry{Interface: dev, IpAddress: fmt.Sprintf("10.0.0.%d", 10+j),
			PhysAddress: fmt.Sprintf("02:00:00:00:%02x:%02x", mac, j), Static: j%2 == 0})
	}
	entries := make([]kv, n)
	for j := range entries {
		entries[j] = entry(j, 1)
	}
	_, err := e.commit(entries...)
	if err == nil || !strings.Contains(err.Error(), "10.0.0.25") {
		t.Fatalf("commit: %v, want the error of the entry on b (10.0.0.25)", err)
	}
	for j, x := range entries {
		st := e.status(x.key)
		if j == n/2 {
			if st.GetState() != api.ValueStateFailed || !strings.Contains(st.GetError(), "ip_neighbor_add_del (add") {
				t.Errorf("entry on b: %v %q, want FAILED with its ip_neighbor_add_del error", st.GetState(), st.GetError())
			}
			continue
		}
		if st.GetState() != api.ValueStateConfigured {
			t.Errorf("entry %s: %v %q, want CONFIGURED", x.key, st.GetState(), st.GetError())
		}
	}
	want := func(mac byte, changed func(j int) bool) map[netip.Addr]string {
		out := map[netip.Addr]string{}
		for j := range n {
			if j == n/2 {
				continue
			}
			m := byte(1)
			if changed(j) {
				m = mac
			}
			out[netip.MustParseAddr(fmt.Sprintf("10.0.0.%d", 10+j))] = fmt.Sprintf("02:00:00:00:%02x:%02x/%v", m, j, j%2 == 0)
		}
		return out
	}
	onA := func() map[netip.Addr]string {
		out := map[netip.Addr]string{}
		for _, nb := range e.vpp.DumpNeighbors() {
			if nb.SwIfIndex == a {
				out[nb.IP] = fmt.Sprintf("%s/%v", nb.MAC, nb.Static)
			}
		}
		return out
	}
	if got, w := onA(), want(1, func(int) bool { return false }); !maps.Equal(got, w) {
		t.Errorf("VPP has on a %v, want %v", got, w)
	}

	// New MACs for the odd entries (dynamic ones: changed in place).
	var changes []kv
	for j := 1; j < n; j += 2 {
		if j != n/2 {
			changes = append(changes, entry(j, 2))
		}
	}
	if _, err := e.commit(changes...); err != nil {
		t.Fatalf("changing the MACs: %v", err)
	}
	if got, w := onA(), want(2, func(j int) bool { return j%2 == 1 && j != n/2 }); !maps.Equal(got, w) {
		t.Errorf("after the change VPP has on a %v, want %v", got, w)
	}

	dels := make([]kv, n)
	for j, x := range entries {
		dels[j] = del(x.key)
	}
	if _, err := e.commit(dels...); err != nil {
		t.Fatalf("deleting the entries: %v", err)
	}
	if got := onA(); len(got) != 0 {
		t.Errorf("VPP still has on a %v", got)
	}
}

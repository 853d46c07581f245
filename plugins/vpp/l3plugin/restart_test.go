package l3plugin_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// TestVPPRestartedWithOtherMessages: VPP restarts with other plugins (some
// messages missing) and with interfaces of its startup configuration at
// the indexes the agent's interfaces had. Nothing reaches the new VPP with
// an index of the old one: a value committed before the resync fails
// instead, and after the resync the routes and ARP entries are on the
// interfaces re-created in the new VPP, never on the foreign ones. A
// missing message disables only what needs it (memif), and the values VPP
// can no longer hold are not reported CONFIGURED.
func TestVPPRestartedWithOtherMessages(t *testing.T) {
	vpptest.NeedSim(t, "restarts VPP with other messages")
	e := newEnvWith(t, envOptions{ifplugin: true})
	loop1 := kv{ifplugin.InterfaceKey("loop1"), &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK,
		Enabled: true, IpAddresses: []string{"10.10.0.1/24"}}}
	memif1 := kv{ifplugin.InterfaceKey("memif1"), &vppif.Interface{Name: "memif1", Type: vppif.Interface_MEMIF,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 1, SocketFilename: filepath.Join(t.TempDir(), "memif.sock")}}}}
	route := routeKV(t, &vppl3.Route{DstNetwork: "10.20.0.0/16", NextHopAddr: "10.10.0.2", OutgoingInterface: "loop1"})
	arp := arpKV(t, &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.10.0.3", PhysAddress: "02:00:00:00:00:03", Static: true})
	e.mustCommit(loop1, memif1, route, arp)
	if idx := e.swIfIndex("loop1"); idx != 1 {
		t.Fatalf("loop1 at %d, want 1 (the test needs the first index)", idx)
	}

	// What the new VPP has on its interfaces: routes (API source) and
	// neighbours by sw_if_index.
	routesOn := func() map[uint32][]string {
		out := map[uint32][]string{}
		for _, r := range e.sim.Routes() {
			for _, p := range r.Paths {
				if r.Source == vpptest.SourceAPI {
					out[p.SwIfIndex] = append(out[p.SwIfIndex], r.Prefix.String())
				}
			}
		}
		return out
	}
	neighborsOn := func() map[uint32][]string {
		out := map[uint32][]string{}
		for _, n := range e.sim.Neighbors() {
			out[n.SwIfIndex] = append(out[n.SwIfIndex], n.IP.String())
		}
		return out
	}
	// nothingOnForeign fails the test when a route or neighbour is on an
	// interface the agent did not make (the startup loopbacks).
	nothingOnForeign := func(when string) {
		t.Helper()
		for _, i := range e.sim.Interfaces() {
			if i.Tag != "" {
				continue
			}
			if r := routesOn()[i.SwIfIndex]; len(r) > 0 {
				t.Errorf("%s: routes %v on %s (%d), an interface that is not the agent's", when, r, i.Name, i.SwIfIndex)
			}
			if n := neighborsOn()[i.SwIfIndex]; len(n) > 0 {
				t.Errorf("%s: neighbours %v on %s (%d), an interface that is not the agent's", when, n, i.Name, i.SwIfIndex)
			}
		}
	}
	wantState := func(when string, x kv, state api.ValueState, details ...string) {
		t.Helper()
		st := e.status(x.key)
		text := fmt.Sprint(st.GetError(), " ", strings.Join(st.GetDetails(), " "))
		if st.GetState() != state {
			t.Errorf("%s: %s is %v (%s), want %v", when, x.key, st.GetState(), text, state)
			return
		}
		for _, d := range details {
			if !strings.Contains(text, d) {
				t.Errorf("%s: %s %v: %q does not say %q", when, x.key, state, text, d)
			}
		}
	}

	// 1. VPP without memif (memif_plugin.so not loaded), whose startup
	// configuration made three loopbacks: they take indexes 1 to 3, loop1's
	// among them.
	if err := e.sim.RestartWith(vppsim.Restart{Omit: []string{"memif_create_v2"}, StartupLoopbacks: 3}); err != nil {
		t.Fatal(err)
	}
	e.waitConnected()
	if d := e.m.Status().Disabled; len(d) != 1 || d[vppcalls.MemifAreaName] == nil {
		t.Fatalf("disabled areas %v, want memif only", d)
	}
	// Before the resync that follows the connect, the agent still knows
	// loop1 at index 1: an ARP entry put now must not land on the startup
	// loopback there.
	arp2 := arpKV(t, &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.10.0.4", PhysAddress: "02:00:00:00:00:04", Static: true})
	if _, err := e.commit(arp2); err == nil || !strings.Contains(err.Error(), "has no sw_if_index in the VPP connected now") {
		t.Errorf("ARP entry on loop1 before the resync: %v, want an error saying loop1 has no index in this VPP", err)
	}
	nothingOnForeign("before the resync")
	if _, err := e.resync(api.DownstreamResync); err != nil && !isValueError(err) {
		t.Fatal(err)
	}
	idx := e.swIfIndex("loop1")
	if idx <= 3 {
		t.Fatalf("loop1 re-created at %d, an index of the startup loopbacks", idx)
	}
	if got := routesOn()[idx]; !slices.Equal(got, []string{"10.20.0.0/16"}) {
		t.Errorf("routes on loop1 (%d): %v, want 10.20.0.0/16", idx, got)
	}
	if got := neighborsOn()[idx]; !slices.Equal(got, []string{"10.10.0.3", "10.10.0.4"}) {
		t.Errorf("neighbours on loop1 (%d): %v, want 10.10.0.3 and 10.10.0.4", idx, got)
	}
	nothingOnForeign("after the resync")
	for _, x := range []kv{loop1, route, arp, arp2} {
		wantState("without memif", x, api.ValueStateConfigured)
	}
	wantState("without memif", memif1, api.ValueStateFailed, "memif_create_v2")
	if _, ok := e.vpp.InterfaceTagged("memif1"); ok {
		t.Error("memif1 in a VPP without memif_create_v2")
	}

	// 2. VPP without a message every interface needs: the interface
	// values fail, and what is on them waits; none stays CONFIGURED with
	// the indexes of the VPP before (4 is a startup loopback's now).
	if err := e.sim.RestartWith(vppsim.Restart{Omit: []string{"sw_interface_tag_add_del"}, StartupLoopbacks: 5}); err != nil {
		t.Fatal(err)
	}
	e.waitConnected()
	if _, err := e.resync(api.DownstreamResync); err != nil && !isValueError(err) {
		t.Fatal(err)
	}
	wantState("without the interfaces' messages", loop1, api.ValueStateFailed, "sw_interface_tag_add_del")
	for _, x := range []kv{route, arp, arp2} {
		wantState("without the interfaces' messages", x, api.ValueStatePending, "loop1")
	}
	if r, n := routesOn(), neighborsOn(); len(r) != 0 || len(n) != 0 {
		t.Errorf("without the interfaces' messages: routes %v, neighbours %v in VPP, want none", r, n)
	}

	// 3. VPP without the layer-3 messages: the routes and ARP entries fail
	// (they were lost with the VPP before), the interfaces work.
	if err := e.sim.RestartWith(vppsim.Restart{Omit: []string{"ip_neighbor_add_del"}, StartupLoopbacks: 5}); err != nil {
		t.Fatal(err)
	}
	e.waitConnected()
	if d := e.m.Status().Disabled; len(d) != 1 || d[l3plugin.AreaName] == nil {
		t.Fatalf("disabled areas %v, want %s only", d, l3plugin.AreaName)
	}
	if _, err := e.resync(api.DownstreamResync); err != nil && !isValueError(err) {
		t.Fatal(err)
	}
	wantState("without the layer-3 messages", loop1, api.ValueStateConfigured)
	for _, x := range []kv{route, arp, arp2} {
		wantState("without the layer-3 messages", x, api.ValueStateFailed, "ip_neighbor_add_del")
	}

	// 4. A complete VPP again: everything is back, on loop1.
	if err := e.sim.RestartWith(vppsim.Restart{StartupLoopbacks: 2}); err != nil {
		t.Fatal(err)
	}
	e.waitConnected()
	if _, err := e.resync(api.DownstreamResync); err != nil {
		t.Fatal(err)
	}
	for _, x := range []kv{loop1, memif1, route, arp, arp2} {
		wantState("in a complete VPP", x, api.ValueStateConfigured)
	}
	idx = e.swIfIndex("loop1")
	if got := routesOn()[idx]; !slices.Equal(got, []string{"10.20.0.0/16"}) {
		t.Errorf("complete VPP: routes on loop1 (%d): %v", idx, got)
	}
	nothingOnForeign("in a complete VPP")
}

// isValueError tells whether a commit failed for some values only (the
// transaction ran).
func isValueError(err error) bool {
	var te *api.TransactionError
	return errors.As(err, &te) && te.TxnInitError == nil
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.fd.io/govpp/adapter/socketclient"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/core"

	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// VPP restarts without memif (memif_plugin.so not loaded) and with loopbacks
// of its startup configuration at the indexes the agent's interfaces had;
// then another client creates more. The agent forgets the indexes of the
// VPP before: it re-creates its loopbacks, puts the route, the ARP entry
// and the bridge domain's members on them, never on the foreign ones, and
// reports the memif FAILED for the message VPP lacks, the rest CONFIGURED.
func TestE2EVPPRestartedWithoutMemif(t *testing.T) {
	v := startE2EVPP(t)
	v.needSim("restarts VPP without a plugin and with loopbacks of its startup configuration (RestartWith)")
	a, sim := startVPPAgentOn(t, v), v.sim
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	loop1 := &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.10.0.1/24"}}
	loop2 := &vppif.Interface{Name: "loop2", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true}
	memif1 := &vppif.Interface{Name: "memif1", Type: vppif.Interface_MEMIF, Enabled: true,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 1, SocketFilename: filepath.Join(t.TempDir(), "memif.sock")}}}
	route := &vppl3.Route{DstNetwork: "10.20.0.0/16", NextHopAddr: "10.10.0.2", OutgoingInterface: "loop1"}
	arp := &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.10.0.3", PhysAddress: "02:00:00:00:00:03", Static: true}
	bd := &vppl2.BridgeDomain{Name: "bd1", Forward: true, Interfaces: []*vppl2.BridgeDomain_Interface{
		{Name: "loop1", BridgedVirtualInterface: true}, {Name: "loop2"}}}
	if _, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{WaitDone: true, Update: &configpb.Config{VppConfig: &configpb.VppConfig{
		Interfaces: []*vppif.Interface{loop1, loop2, memif1}, Routes: []*vppl3.Route{route}, Arps: []*vppl3.ARPEntry{arp},
		BridgeDomains: []*vppl2.BridgeDomain{bd}}}}); err != nil {
		t.Fatal(err)
	}
	tagged := func(tag string) (vppsim.Interface, bool) {
		i := slices.IndexFunc(sim.Interfaces(), func(i vppsim.Interface) bool { return i.Tag == tag })
		if i < 0 {
			return vppsim.Interface{}, false
		}
		return sim.Interfaces()[i], true
	}
	if i, ok := tagged("loop1"); !ok || i.SwIfIndex != 1 {
		t.Fatalf("loop1 in VPP: %+v, want it at index 1", i)
	}

	// What VPP has on which interface: routes of the API, neighbours,
	// bridge domain members.
	onInterfaces := func() map[uint32][]string {
		out := map[uint32][]string{}
		for _, r := range sim.Routes() {
			for _, p := range r.Paths {
				out[p.SwIfIndex] = append(out[p.SwIfIndex], "route "+r.Prefix.String())
			}
		}
		for _, n := range sim.Neighbors() {
			out[n.SwIfIndex] = append(out[n.SwIfIndex], "neighbour "+n.IP.String())
		}
		for _, b := range sim.BridgeDomains() {
			for _, m := range b.Members {
				out[m.SwIfIndex] = append(out[m.SwIfIndex], fmt.Sprintf("member of bd %d (bvi %v)", b.BdID, b.BVI == m.SwIfIndex))
			}
		}
		return out
	}
	nothingOnForeign := func(when string) {
		t.Helper()
		on := onInterfaces()
		for _, i := range sim.Interfaces() {
			if i.Tag == "" && len(on[i.SwIfIndex]) > 0 {
				t.Errorf("%s: %v on %s (%d), which is not the agent's", when, on[i.SwIfIndex], i.Name, i.SwIfIndex)
			}
		}
	}

	// VPP started again, without memif, its startup configuration making
	// three loopbacks: indexes 1 to 3, those of loop1, loop2 and memif1.
	if err := sim.RestartWith(vppsim.Restart{Omit: []string{"memif_create_v2"}, StartupLoopbacks: 3}); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{"loop1": keyOf(t, loop1), "loop2": keyOf(t, loop2), "route": keyOf(t, route), "arp": keyOf(t, arp), "bd1": keyOf(t, bd)}
	eventually(t, "loop1 and loop2 re-created in the restarted VPP, memif1 FAILED", func() (bool, string) {
		var st statusJSON
		a.getJSON("/info/status", &st)
		_, has1 := tagged("loop1")
		_, has2 := tagged("loop2")
		m := a.status(keyOf(t, memif1))
		return st.VPP.PID == sim.PID() && has1 && has2 && m.Value.State == "FAILED",
			fmt.Sprintf("agent's VPP pid %d (sim %d), loop1 %v, loop2 %v, memif1 %+v", st.VPP.PID, sim.PID(), has1, has2, m.Value)
	})
	for _, key := range keys {
		a.waitState(key, "CONFIGURED")
	}
	for _, b := range []string{l2plugin.BDInterfaceKey("bd1", "loop1"), l2plugin.BDInterfaceKey("bd1", "loop2")} {
		eventually(t, b+" CONFIGURED", func() (bool, string) {
			st := a.status(b)
			for _, d := range st.DerivedValues {
				if d.Key == b {
					return d.State == "CONFIGURED", fmt.Sprintf("%+v", d)
				}
			}
			return false, fmt.Sprintf("%+v", st)
		})
	}
	i1, _ := tagged("loop1")
	i2, _ := tagged("loop2")
	on := onInterfaces()
	if want := []string{"route 10.20.0.0/16", "neighbour 10.10.0.3", "member of bd 1 (bvi true)"}; !slices.Equal(on[i1.SwIfIndex], want) {
		t.Errorf("on loop1 (%d): %v, want %v", i1.SwIfIndex, on[i1.SwIfIndex], want)
	}
	if want := []string{"member of bd 1 (bvi false)"}; !slices.Equal(on[i2.SwIfIndex], want) {
		t.Errorf("on loop2 (%d): %v, want %v", i2.SwIfIndex, on[i2.SwIfIndex], want)
	}
	nothingOnForeign("after the restart")
	m := a.status(keyOf(t, memif1))
	if !strings.Contains(m.Value.Error, "memif_create_v2") {
		t.Errorf("memif1: error %q, want it to name memif_create_v2", m.Value.Error)
	}
	var st statusJSON
	a.getJSON("/info/status", &st)
	if len(st.VPP.Disabled) != 1 || len(st.VPP.Disabled["memif"]) == 0 {
		t.Errorf("status: disabled %v, want memif only", st.VPP.Disabled)
	}

	// Another client creates loopbacks; a resync changes nothing on them.
	conn, err := core.Connect(socketclient.NewVppClient(sim.SocketPath()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	for range 2 {
		if _, err := interfaces.NewServiceClient(conn).CreateLoopback(ctx, &interfaces.CreateLoopback{}); err != nil {
			t.Fatal(err)
		}
	}
	// (memif1 fails again: the resync's error.)
	if code, body := a.do("POST", "/scheduler/downstream-resync", nil); code != 200 || !strings.Contains(string(body), "memif_create_v2") {
		t.Errorf("downstream resync: %d %s, want 200 and memif1's error", code, body)
	}
	nothingOnForeign("after the foreign loopbacks and a resync")
	for _, key := range keys {
		if st := a.status(key); st.Value.State != "CONFIGURED" {
			t.Errorf("after the foreign loopbacks and a resync: %s %+v", key, st.Value)
		}
	}
}

// An AF_PACKET interface waits for its host interface; when the agent runs
// without its Linux side nothing will ever report it, and the PENDING
// reason says so.
func TestE2EVPPAfPacketWithoutLinux(t *testing.T) {
	a, _ := startVPPAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	host := &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET, Enabled: true,
		Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: "w2veth1"}}}
	linux := &vppif.Interface{Name: "afp2", Type: vppif.Interface_AF_PACKET, Enabled: true,
		Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{LinuxInterface: "w2veth2"}}}
	if _, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{WaitDone: true,
		Update: &configpb.Config{VppConfig: &configpb.VppConfig{Interfaces: []*vppif.Interface{host, linux}}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    *vppif.Interface
		want string
	}{{host, "host interface w2veth1"}, {linux, "Linux interface w2veth2"}} {
		st := a.waitState(keyOf(t, c.v), "PENDING")
		details := strings.Join(st.Value.Details, " ")
		if !strings.Contains(details, c.want) || !strings.Contains(details, "linux.disabled") {
			t.Errorf("%s without Linux: details %q, want them to name %s and say the Linux side is disabled", c.v.GetName(), details, c.want)
		}
	}
}

package ifplugin_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator/probe"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	"github.com/netagent-io/netagent/tests/vpprun"
)

// TestVxlanTrafficBetweenTwoVPPs: two real VPPs, each configured by an
// agent of its own (the interface and L2 descriptors on a scheduler),
// carry a ping between two network namespaces through a VXLAN tunnel:
//
//	ns A 10.77.0.1 --veth-- host-<oA> [VPP A: bridge domain with vxlan]
//	    host-<uA> 192.168.77.1 --veth (underlay)-- 192.168.77.2 host-<uB>
//	[VPP B: bridge domain with vxlan] host-<oB> --veth-- 10.77.0.2 ns B
//
// The ping passes, both tunnels count the packets; with the tunnel of B
// deleted it no longer passes, and with the tunnel configured again it
// passes again. It needs the VPP build (NETAGENT_VPP_DIR: each VPP is
// started in a run directory of its own) and root; vppsim has no data
// plane, and the user's one VPP (VPP_API_SOCKET) is not two.
func TestVxlanTrafficBetweenTwoVPPs(t *testing.T) {
	dir := vpprun.Dir()
	switch {
	case dir == "":
		t.Skipf("needs two real VPPs started from the VPP build (%s): vppsim has no data plane", vpprun.DirEnv)
	case os.Geteuid() != 0:
		t.Skip("needs root: VPP processes, veth pairs, network namespaces, raw sockets for ping")
	}
	n := os.Getpid() % 100000
	uA, uB := fmt.Sprintf("vxu%da", n), fmt.Sprintf("vxu%db", n) // the underlay veth pair
	oA, oB := fmt.Sprintf("vxo%da", n), fmt.Sprintf("vxo%db", n) // VPP's ends of the overlay pairs
	nsA, nsB := fmt.Sprintf("vxns%da", n), fmt.Sprintf("vxns%db", n)

	ipCmd(t, "link", "add", uA, "type", "veth", "peer", "name", uB)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", uA).Run() })
	for _, side := range []struct{ ns, vppEnd, addr string }{{nsA, oA, "10.77.0.1/24"}, {nsB, oB, "10.77.0.2/24"}} {
		ipCmd(t, "netns", "add", side.ns)
		ns := side.ns
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		ipCmd(t, "link", "add", side.vppEnd, "type", "veth", "peer", "name", "eth0", "netns", side.ns)
		vppEnd := side.vppEnd
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", vppEnd).Run() })
		ipCmd(t, "-n", side.ns, "addr", "add", side.addr, "dev", "eth0")
		ipCmd(t, "-n", side.ns, "link", "set", "eth0", "up")
		ipCmd(t, "-n", side.ns, "link", "set", "lo", "up")
	}
	for _, l := range []string{uA, uB, oA, oB} {
		ipCmd(t, "link", "set", l, "up")
	}

	a := startTrafficAgent(t, dir, uA, oA)
	b := startTrafficAgent(t, dir, uB, oB)
	tunnel := func(src, dst string) *vppif.Interface { return vxlanIf("vx", src, dst, 77) }
	a.commit(t, afPacket("underlay", uA, "192.168.77.1/24"), afPacket("overlay", oA), tunnel("192.168.77.1", "192.168.77.2"), bridge())
	b.commit(t, afPacket("underlay", uB, "192.168.77.2/24"), afPacket("overlay", oB), tunnel("192.168.77.2", "192.168.77.1"), bridge())
	for _, x := range []*trafficAgent{a, b} {
		for _, k := range []string{ifplugin.InterfaceKey("vx"), ifplugin.InterfaceKey("underlay"), ifplugin.InterfaceKey("overlay"), l2plugin.BDInterfaceKey("bd-vx", "vx")} {
			if st := vpptest.State(x.S, k); st != api.ValueStateConfigured {
				t.Fatalf("VPP %s: %s is %v, want CONFIGURED (%v)", x.VPP.RunDir, k, st, vpptest.Status(x.S, k))
			}
		}
	}

	ping := func(timeout time.Duration) error {
		r := probe.Run(context.Background(), []probe.Probe{{Kind: probe.Ping, Target: "10.77.0.2", Namespace: nsA, Timeout: timeout}})
		return r[0].Err
	}
	if err := ping(15 * time.Second); err != nil {
		t.Fatalf("ping from %s to 10.77.0.2 in %s through the tunnel: %v\nVPP A:\n%s\nVPP B:\n%s", nsA, nsB, err, a.show(t), b.show(t))
	}
	for _, x := range []*trafficAgent{a, b} {
		rx, tx := x.tunnelCounters(t)
		t.Logf("VPP %s: the tunnel counted rx %d, tx %d packets", x.VPP.RunDir, rx, tx)
		if rx == 0 || tx == 0 {
			t.Errorf("VPP %s: the tunnel counted rx %d, tx %d packets; want both: the ping went through it\n%s", x.VPP.RunDir, rx, tx, x.show(t))
		}
	}

	// Without B's tunnel, no way through; configured again, the way is back.
	b.del(t, ifplugin.InterfaceKey("vx"))
	if err := ping(2 * time.Second); err == nil {
		t.Errorf("ping passed with B's tunnel deleted: it does not go through the tunnel\nVPP B:\n%s", b.show(t))
	}
	b.commit(t, tunnel("192.168.77.2", "192.168.77.1"), bridge())
	if err := ping(15 * time.Second); err != nil {
		t.Errorf("ping after B's tunnel was configured again: %v\nVPP B:\n%s", err, b.show(t))
	}

	// Each agent deletes what it made; the VPPs stop at the end.
	for _, x := range []*trafficAgent{a, b} {
		x.del(t, models.VPPBridgeDomain.KeyPrefix+"bd-vx", ifplugin.InterfaceKey("vx"), ifplugin.InterfaceKey("overlay"), ifplugin.InterfaceKey("underlay"))
		if out, err := x.VPP.CLI("show", "vxlan", "tunnel"); err != nil || strings.Contains(out, "vni") {
			t.Errorf("VPP %s after the deletes: show vxlan tunnel %q (%v), want none", x.VPP.RunDir, out, err)
		}
	}
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func afPacket(name, host string, addrs ...string) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_AF_PACKET, Enabled: true, IpAddresses: addrs,
		Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: host}}}
}

func bridge() *vppl2.BridgeDomain {
	return &vppl2.BridgeDomain{Name: "bd-vx", Flood: true, UnknownUnicastFlood: true, Forward: true, Learn: true,
		Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "overlay"}, {Name: "vx"}}}
}

// trafficAgent is a VPP of its own and an agent configuring it
// (vpptest.TrafficAgent) with the l2 plugin.
type trafficAgent struct{ *vpptest.TrafficAgent }

// startTrafficAgent starts a VPP in a run directory of its own under dir
// and an agent for it, told that the host interfaces exist.
func startTrafficAgent(t *testing.T, dir string, hostIfs ...string) *trafficAgent {
	t.Helper()
	more := func(m *vppconn.Manager, s *kvscheduler.Scheduler) (vppconn.Area, []*api.KVDescriptor) {
		p := l2plugin.New(m, ifplugin.SchedulerInterfaces(s), quiet)
		p.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(s))
		return p.Area(), p.Descriptors()
	}
	return &trafficAgent{vpptest.StartTrafficAgent(t, dir, quiet, []vpptest.More{more}, hostIfs...)}
}

func (x *trafficAgent) commit(t *testing.T, vs ...proto.Message) { t.Helper(); x.Commit(t, vs...) }
func (x *trafficAgent) del(t *testing.T, keys ...string)         { t.Helper(); x.Delete(t, keys...) }

// show is what VPP's console says, for the failure messages.
func (x *trafficAgent) show(*testing.T) string {
	return x.Show([]string{"show", "interface"}, []string{"show", "vxlan", "tunnel"}, []string{"show", "bridge-domain", "1", "detail"}, []string{"show", "ip", "neighbors"})
}

var packetCounter = regexp.MustCompile(`(rx|tx) packets\s+(\d+)`)

// tunnelCounters are the rx and tx packet counters of the tunnel vx.
func (x *trafficAgent) tunnelCounters(t *testing.T) (rx, tx uint64) {
	t.Helper()
	md, ok := x.S.GetMetadataMap(ifplugin.InterfaceDescriptorName).GetValue("vx")
	if !ok {
		t.Fatalf("VPP %s: no metadata of vx", x.VPP.RunDir)
	}
	out, err := x.VPP.CLI("show", "interface", md.(*ifplugin.Metadata).InternalName)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range packetCounter.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseUint(m[2], 10, 64)
		if m[1] == "rx" {
			rx = v
		} else {
			tx = v
		}
	}
	return rx, tx
}

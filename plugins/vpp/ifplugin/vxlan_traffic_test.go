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
	linuxifplugin "github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/orchestrator/probe"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
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
			if st := vpptest.State(x.s, k); st != api.ValueStateConfigured {
				t.Fatalf("VPP %s: %s is %v, want CONFIGURED (%v)", x.vpp.RunDir, k, st, vpptest.Status(x.s, k))
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
		t.Logf("VPP %s: the tunnel counted rx %d, tx %d packets", x.vpp.RunDir, rx, tx)
		if rx == 0 || tx == 0 {
			t.Errorf("VPP %s: the tunnel counted rx %d, tx %d packets; want both: the ping went through it\n%s", x.vpp.RunDir, rx, tx, x.show(t))
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
		if out, err := x.vpp.CLI("show", "vxlan", "tunnel"); err != nil || strings.Contains(out, "vni") {
			t.Errorf("VPP %s after the deletes: show vxlan tunnel %q (%v), want none", x.vpp.RunDir, out, err)
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

// trafficAgent is a VPP of its own and an agent configuring it: a
// scheduler with the interface and L2 descriptors.
type trafficAgent struct {
	vpp *vpprun.VPP
	m   *vppconn.Manager
	s   *kvscheduler.Scheduler
}

// startTrafficAgent starts a VPP from the build dir in a run directory of
// its own and an agent for it, told that the host interfaces exist (as
// the Linux interface watcher would); everything stops at the end of the
// test.
func startTrafficAgent(t *testing.T, dir string, hostIfs ...string) *trafficAgent {
	t.Helper()
	v, err := vpprun.Start(dir, "")
	if err != nil {
		t.Fatalf("starting a VPP: %v", err)
	}
	t.Cleanup(func() { _ = v.Stop() })
	x := &trafficAgent{vpp: v}
	x.m = vppconn.New(vppconn.Options{Socket: v.Socket, CallTimeout: 5 * time.Second, Log: quiet})
	ip := ifplugin.New(x.m, quiet)
	for _, area := range ip.Areas() {
		x.m.AddArea(area)
	}
	x.s = kvscheduler.New(kvscheduler.Options{Logger: quiet})
	l2 := l2plugin.New(x.m, ifplugin.SchedulerInterfaces(x.s), quiet)
	l2.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(x.s))
	x.m.AddArea(l2.Area())
	if err := x.s.RegisterKVDescriptor(append(ip.Descriptors(), l2.Descriptors()...)...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); x.m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	t.Cleanup(x.s.Close)
	vpptest.WaitConnected(t, x.m, nil)
	for _, h := range hostIfs {
		if err := x.s.PushSBNotification(api.KVWithMetadata{Key: linuxifplugin.HostNameKey(h), Value: &linuxif.Interface{Name: h}}); err != nil {
			t.Fatal(err)
		}
	}
	x.s.TransactionBarrier()
	return x
}

func (x *trafficAgent) commit(t *testing.T, vs ...proto.Message) {
	t.Helper()
	txn := x.s.StartNBTransaction()
	for _, v := range vs {
		key, err := models.Default.Key(v)
		if err != nil {
			t.Fatal(err)
		}
		txn.SetValue(key, v)
	}
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatalf("VPP %s: commit: %v", x.vpp.RunDir, err)
	}
}

func (x *trafficAgent) del(t *testing.T, keys ...string) {
	t.Helper()
	txn := x.s.StartNBTransaction()
	for _, k := range keys {
		txn.SetValue(k, nil)
	}
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatalf("VPP %s: delete: %v", x.vpp.RunDir, err)
	}
}

// show is what VPP's console says of its interfaces, tunnels and bridge
// domain, for the failure messages.
func (x *trafficAgent) show(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, cmd := range [][]string{{"show", "interface"}, {"show", "vxlan", "tunnel"}, {"show", "bridge-domain", "1", "detail"}, {"show", "ip", "neighbors"}} {
		out, err := x.vpp.CLI(cmd...)
		fmt.Fprintf(&b, "%s: %s%v\n", strings.Join(cmd, " "), out, err)
	}
	return b.String()
}

var packetCounter = regexp.MustCompile(`(rx|tx) packets\s+(\d+)`)

// tunnelCounters are the rx and tx packet counters of the tunnel vx.
func (x *trafficAgent) tunnelCounters(t *testing.T) (rx, tx uint64) {
	t.Helper()
	md, ok := x.s.GetMetadataMap(ifplugin.InterfaceDescriptorName).GetValue("vx")
	if !ok {
		t.Fatalf("VPP %s: no metadata of vx", x.vpp.RunDir)
	}
	out, err := x.vpp.CLI("show", "interface", md.(*ifplugin.Metadata).InternalName)
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

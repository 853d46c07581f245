package natplugin_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/natplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
	"github.com/netagent-io/netagent/tests/vpprun"
)

// TestTrafficThroughStaticMapping: a real VPP between two network
// namespaces, configured by an agent (the interface and NAT44 descriptors
// on a scheduler):
//
//	ns in 10.66.1.2 --veth-- host-<in> 10.66.1.1 [VPP, NAT44 inside]
//	    [VPP, NAT44 outside] host-<out> 198.51.100.1 --veth-- 198.51.100.2 ns out
//
// ns out reaches 203.0.113.0/24 through VPP. A TCP connection from ns out
// to 203.0.113.10:80 reaches the listener of ns in on 10.66.1.2:8080
// through a static mapping, the listener seeing the client's own address;
// one to 203.0.113.11:80 reaches 10.66.1.2:8081 through a twice-NAT
// mapping, the listener seeing the twice-NAT pool's address 100.64.0.1.
// Before the mappings, and after they are deleted, no connection passes.
// It needs the VPP build (NETAGENT_VPP_DIR) and root; vppsim has no data
// plane.
func TestTrafficThroughStaticMapping(t *testing.T) {
	dir := vpprun.Dir()
	switch {
	case dir == "":
		t.Skipf("needs a real VPP started from the VPP build (%s): vppsim has no data plane", vpprun.DirEnv)
	case os.Geteuid() != 0:
		t.Skip("needs root: a VPP process, veth pairs, network namespaces")
	}
	n := os.Getpid() % 100000
	vIn, vOut := fmt.Sprintf("nati%d", n), fmt.Sprintf("nato%d", n) // VPP's ends of the veth pairs
	nsIn, nsOut := fmt.Sprintf("natns%di", n), fmt.Sprintf("natns%do", n)
	for _, side := range []struct{ ns, vppEnd, addr, route string }{
		{nsIn, vIn, "10.66.1.2/24", "default via 10.66.1.1"},
		{nsOut, vOut, "198.51.100.2/24", "203.0.113.0/24 via 198.51.100.1"},
	} {
		ipCmd(t, "netns", "add", side.ns)
		ns, vppEnd := side.ns, side.vppEnd
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		ipCmd(t, "link", "add", side.vppEnd, "type", "veth", "peer", "name", "eth0", "netns", side.ns)
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", vppEnd).Run() })
		ipCmd(t, "-n", side.ns, "addr", "add", side.addr, "dev", "eth0")
		ipCmd(t, "-n", side.ns, "link", "set", "eth0", "up")
		ipCmd(t, "-n", side.ns, "link", "set", "lo", "up")
		ipCmd(t, "-n", side.ns, "route", "add", strings.Fields(side.route)[0], "via", strings.Fields(side.route)[2])
		ipCmd(t, "link", "set", side.vppEnd, "up")
	}

	// The listeners of ns in say whom they see.
	for _, port := range []int{8080, 8081} {
		l, err := listenIn(nsIn, fmt.Sprintf("10.66.1.2:%d", port))
		if err != nil {
			t.Fatalf("listening in %s: %v", nsIn, err)
		}
		t.Cleanup(func() { _ = l.Close() })
		go serveWhoAmI(l)
	}

	a := startTrafficAgent(t, dir, vIn, vOut)
	afPacket := func(name, host, addr string) *vppif.Interface {
		return &vppif.Interface{Name: name, Type: vppif.Interface_AF_PACKET, Enabled: true, IpAddresses: []string{addr},
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: host}}}
	}
	web := &vppnat.DNat44{Label: "web", StMappings: []*vppnat.DNat44_StaticMapping{
		{ExternalIp: "203.0.113.10", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.66.1.2", LocalPort: 8080}}},
		{ExternalIp: "203.0.113.11", ExternalPort: 80, TwiceNat: vppnat.DNat44_StaticMapping_ENABLED,
			LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.66.1.2", LocalPort: 8081}}},
	}}
	a.commit(t, afPacket("lan", vIn, "10.66.1.1/24"), afPacket("wan", vOut, "198.51.100.1/24"),
		&vppnat.Nat44Global{}, &vppnat.Nat44Interface{Name: "lan", NatInside: true}, &vppnat.Nat44Interface{Name: "wan", NatOutside: true},
		&vppnat.Nat44AddressPool{Name: "twice", FirstIp: "100.64.0.1", TwiceNat: true})

	whoAmI := func(target string, timeout time.Duration) (string, error) { return dialIn(nsOut, target, timeout) }
	if got, err := whoAmI("203.0.113.10:80", 2*time.Second); err == nil {
		t.Fatalf("a connection to 203.0.113.10:80 passed before any mapping: %q", got)
	}

	a.commit(t, web)
	for _, k := range []string{models.VPPDNat44.KeyPrefix + "web", natplugin.StaticMappingKey("web", web.StMappings[0]), natplugin.StaticMappingKey("web", web.StMappings[1])} {
		if st := vpptest.State(a.S, k); st != api.ValueStateConfigured {
			t.Fatalf("%s is %v, want CONFIGURED (%v)", k, st, vpptest.Status(a.S, k))
		}
	}
	for _, c := range []struct{ target, want string }{
		{"203.0.113.10:80", "peer 198.51.100.2 local 10.66.1.2:8080"},
		{"203.0.113.11:80", "peer 100.64.0.1 local 10.66.1.2:8081"},
	} {
		got, err := whoAmI(c.target, 15*time.Second)
		if err != nil {
			t.Fatalf("connecting from %s to %s through the mapping: %v\n%s", nsOut, c.target, err, a.show(t))
		}
		if got != c.want {
			t.Errorf("the listener reached through %s saw %q, want %q", c.target, got, c.want)
		}
	}
	if out, err := a.VPP.CLI("show", "nat44", "sessions"); err != nil || !strings.Contains(out, "203.0.113.10") {
		t.Errorf("VPP's NAT44 sessions %q (%v), want the connection through 203.0.113.10", out, err)
	}

	// Without the mappings, no way through.
	a.del(t, models.VPPDNat44.KeyPrefix+"web")
	if got, err := whoAmI("203.0.113.10:80", 2*time.Second); err == nil {
		t.Errorf("a connection to 203.0.113.10:80 passed after the mapping was deleted: %q", got)
	}
	a.del(t, natplugin.GlobalKey, models.VPPNat44Interface.KeyPrefix+"lan", models.VPPNat44Interface.KeyPrefix+"wan",
		models.VPPNat44AddressPool.KeyPrefix+"twice", ifplugin.InterfaceKey("lan"), ifplugin.InterfaceKey("wan"))
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// inNetns runs f with its OS thread in the named network namespace: the
// sockets f opens stay in it.
func inNetns(name string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		origin, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer origin.Close()
		target, err := netns.GetFromName(name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		ferr := f()
		if err := netns.Set(origin); err != nil {
			errc <- errors.Join(err, ferr)
			return // the thread stays locked and ends with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func listenIn(ns, address string) (net.Listener, error) {
	var l net.Listener
	err := inNetns(ns, func() (err error) {
		l, err = net.Listen("tcp", address)
		return err
	})
	return l, err
}

// serveWhoAmI answers each connection with "peer <ip> local <ip:port>".
func serveWhoAmI(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		peer := c.RemoteAddr().(*net.TCPAddr)
		_, _ = fmt.Fprintf(c, "peer %s local %s\n", peer.IP, c.LocalAddr())
		_ = c.Close()
	}
}

// dialIn connects from namespace ns to target and returns the line the
// listener sends.
func dialIn(ns, target string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		var conn net.Conn
		err := inNetns(ns, func() (err error) {
			d := net.Dialer{Timeout: time.Second}
			conn, err = d.DialContext(ctx, "tcp", target)
			return err
		})
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			line, rerr := bufio.NewReader(conn).ReadString('\n')
			_ = conn.Close()
			return strings.TrimSpace(line), rerr
		}
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(100 * time.Millisecond): // a new SYN: the ARP of a path may be on its way
		}
	}
}

// trafficAgent is a VPP of its own and an agent configuring it
// (vpptest.TrafficAgent) with the NAT44 plugin.
type trafficAgent struct{ *vpptest.TrafficAgent }

// startTrafficAgent starts a VPP in a run directory of its own under dir
// and an agent for it, told that the host interfaces exist.
func startTrafficAgent(t *testing.T, dir string, hostIfs ...string) *trafficAgent {
	t.Helper()
	quiet := logger(t, 8)
	more := func(m *vppconn.Manager, s *kvscheduler.Scheduler) (vppconn.Area, []*api.KVDescriptor) {
		p := natplugin.New(m, ifplugin.SchedulerInterfaces(s), quiet)
		p.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(s))
		return p.Area(), p.Descriptors()
	}
	return &trafficAgent{vpptest.StartTrafficAgent(t, dir, quiet, []vpptest.More{more}, hostIfs...)}
}

func (x *trafficAgent) commit(t *testing.T, vs ...proto.Message) { t.Helper(); x.Commit(t, vs...) }
func (x *trafficAgent) del(t *testing.T, keys ...string)         { t.Helper(); x.Delete(t, keys...) }

// show is what VPP's console says, for the failure messages.
func (x *trafficAgent) show(*testing.T) string {
	return x.Show([]string{"show", "interface"}, []string{"show", "nat44", "interfaces"}, []string{"show", "nat44", "static", "mappings"},
		[]string{"show", "nat44", "sessions"}, []string{"show", "ip", "neighbors"}, []string{"show", "errors"})
}

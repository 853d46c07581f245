package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	configpb "github.com/netagent-io/netagent/proto/config"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
	"github.com/netagent-io/netagent/tests/testsupport"
	"github.com/netagent-io/netagent/tests/vpprun"
)

// The tests of this file run the agent against a real VPP 25.10 (make test
// runs this package a second time with NETAGENT_VPP_DIR=../shared/vpp), as
// an operator would: the agent binary, etcd, the kernel's namespaces and
// what vppctl shows. On vppsim they skip.

// startAgentProcess runs the agent binary with cfg (REST and gRPC on free
// loopback ports, written as the configuration file) until the test ends,
// and waits for /readyz 200. stop sends SIGTERM and waits for the exit.
func startAgentProcess(t *testing.T, cfg Config) *agent {
	t.Helper()
	if cfg.REST.Address == "127.0.0.1:0" {
		cfg.REST.Address = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	if cfg.GRPC.Address == "127.0.0.1:0" {
		cfg.GRPC.Address = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	text, err := json.Marshal(cfg) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(file, text, 0o600); err != nil {
		t.Fatal(err)
	}
	return runAgentFile(t, file, cfg)
}

// runAgentFile runs the agent binary with the configuration file file,
// whose settings cfg repeats (REST and gRPC addresses, shutdown grace,
// token), until the test ends (SIGKILL if still running then), and waits
// for /readyz 200. Its output is logged when the test failed. stop sends
// SIGTERM and waits for the exit.
func runAgentFile(t *testing.T, file string, cfg Config) *agent {
	t.Helper()
	cmd := exec.Command(agentBinary(t), "--config", file)
	logs := &testsupport.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	a := &agent{t: t, cfg: cfg, log: logs, done: exited, process: cmd.Process,
		cancel: func() { _ = cmd.Process.Signal(syscall.SIGTERM) },
		addrs:  Addresses{REST: cfg.REST.Address, GRPC: cfg.GRPC.Address},
		http:   &http.Client{Timeout: waitTimeout, Transport: &http.Transport{DisableKeepAlives: true}}}
	track(t, a)
	t.Cleanup(func() {
		if !a.stopped {
			_ = a.stop()
		}
		if cmd.ProcessState == nil { // stop gave up waiting
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("agent output:\n%s", testsupport.Tail(logs.String(), 30000))
		}
	})
	eventually(t, "/readyz 200 from the agent process", func() (bool, string) {
		select {
		case err := <-exited:
			a.stopped, a.err = true, err
			t.Fatalf("the agent exited: %v", err)
		default:
		}
		resp, err := a.http.Get(a.url("/readyz"))
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, body)
	})
	return a
}

// realVPPAgentConfig is the configuration of an agent on the test's real
// VPP, with the Linux side, and an embedded etcd of its own.
func realVPPAgentConfig(t *testing.T, v *e2eVPP) Config {
	t.Helper()
	cfg := testConfig(t)
	cfg.VPP.Disabled, cfg.VPP.Socket = false, v.socket
	cfg.Linux.Disabled = false
	return cfg
}

// bridgeDomainIDs are the bridge domains `vppctl show bridge-domain` lists
// (bd 0, VPP's own, aside).
func (v *e2eVPP) bridgeDomainIDs() []string {
	v.t.Helper()
	var ids []string
	for _, line := range strings.Split(v.cli("show", "bridge-domain"), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && regexp.MustCompile(`^[0-9]+$`).MatchString(f[0]) && f[0] != "0" {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// bridgeDomainMembers are the interface names `vppctl show bridge-domain
// <id> detail` lists, with their split-horizon group and BVI mark
// ("loop1 shg=0 bvi").
func (v *e2eVPP) bridgeDomainMembers(id string) []string {
	v.t.Helper()
	out := v.cli("show", "bridge-domain", id, "detail")
	var members []string
	inMembers := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "Interface" && f[1] == "If-idx" {
			inMembers = true
			continue
		}
		// Interface  If-idx  ISN  SHG  BVI  TxFlood  VLAN-Tag-Rewrite
		if inMembers && len(f) >= 5 {
			m := f[0] + " shg=" + f[3]
			if f[4] == "*" {
				m += " bvi"
			}
			members = append(members, m)
		}
	}
	slices.Sort(members)
	return members
}

// TestE2ERealVPPRestartInSync: the agent binary on a real VPP with the
// configuration vpp-agent users run: memifs (ethernet master, IP-mode
// slave), a bridge domain with a BVI and members in split-horizon groups,
// routes (via a next hop, out an interface, DROP, IPv6), ARP entries, an
// AF_PACKET interface on a veth made by the agent's Linux side, an
// unnumbered interface, NAT44 (interface features, a pool, static,
// load-balanced and identity mappings), VRF tables (IPv4 and IPv6, with an
// interface, a route and a VXLAN tunnel's encapsulation in them), L2
// cross-connects and a static L2 FIB entry, all written to etcd; VPP's
// binary-API dumps show them. Restarted on that in-sync VPP, the agent's
// first full resync (and the resync when it connects to VPP) executes
// nothing, and the dumps are unchanged.
// Taking an interface out of the bridge domain takes it out in VPP (as
// vppctl shows it), and deleting every key leaves VPP with local0 only.
func TestE2ERealVPPRestartInSync(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("builds and runs the agent binary; skipped with -short")
	}
	v := startE2EVPP(t)
	v.needOwnReal("an AF_PACKET interface on a veth of the test's network namespace, and vppctl")
	n := uniqueNames(t, "rs")
	cfg := realVPPAgentConfig(t, v)
	a := startAgentProcess(t, cfg)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)
	dir := t.TempDir()

	bd := &vppl2.BridgeDomain{Name: "bd-rs", Flood: true, UnknownUnicastFlood: true, Forward: true, Learn: true, MacAge: 2,
		Interfaces: []*vppl2.BridgeDomain_Interface{
			{Name: "bvi1", BridgedVirtualInterface: true},
			{Name: "loop3", SplitHorizonGroup: 1},
			{Name: "memif1", SplitHorizonGroup: 2},
		}}
	keys := []string{
		kv.put(veth(n.host, n.peer, "", 0)),
		kv.put(veth(n.peer, n.host, n.ns, 0, "10.90.5.2/24")),
		kv.put(&vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, PhysAddress: "02:00:00:00:90:01",
			IpAddresses: []string{"10.90.1.1/24", "2001:db8:90::1/64"}, Mtu: 1500}),
		kv.put(&vppif.Interface{Name: "loop2", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true,
			Unnumbered: &vppif.Interface_Unnumbered{InterfaceWithIp: "loop1"}}),
		kv.put(&vppif.Interface{Name: "loop3", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true}),
		kv.put(&vppif.Interface{Name: "bvi1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.90.2.1/24"}}),
		kv.put(&vppif.Interface{Name: "memif1", Type: vppif.Interface_MEMIF, Enabled: true,
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 1, SocketFilename: filepath.Join(dir, "m1.sock")}}}),
		kv.put(&vppif.Interface{Name: "memif2", Type: vppif.Interface_MEMIF, Enabled: true, IpAddresses: []string{"10.90.4.1/24"},
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Mode: vppif.MemifLink_IP, Id: 2, SocketFilename: filepath.Join(dir, "m2.sock"), RingSize: 512, BufferSize: 4096}}}),
		kv.put(&vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET, Enabled: true, IpAddresses: []string{"10.90.5.1/24"},
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{LinuxInterface: n.host}}}),
		kv.put(bd),
		kv.put(&vppl3.Route{DstNetwork: "10.91.0.0/16", NextHopAddr: "10.90.5.2", OutgoingInterface: "afp1", Weight: 3, Preference: 1}),
		kv.put(&vppl3.Route{DstNetwork: "10.92.0.0/24", NextHopAddr: "10.90.1.2"}),
		kv.put(&vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.93.0.0/24"}),
		kv.put(&vppl3.Route{DstNetwork: "2001:db8:91::/48", NextHopAddr: "2001:db8:90::2", OutgoingInterface: "loop1"}),
		kv.put(&vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.90.1.5", PhysAddress: "02:00:00:00:90:05", Static: true}),
		kv.put(&vppl3.ARPEntry{Interface: "afp1", IpAddress: "10.90.5.9", PhysAddress: "02:00:00:00:90:09", Static: true}),
		kv.put(&linuxl3.Route{OutgoingInterface: n.peer, DstNetwork: "10.90.0.0/16", GwAddr: "10.90.5.1"}),
		// NAT44: the global settings, interface features, a pool and a
		// DNat44 with static, load-balanced and identity mappings.
		kv.put(&vppnat.Nat44Global{Forwarding: true}),
		kv.put(&vppnat.Nat44Interface{Name: "loop1", NatInside: true}),
		kv.put(&vppnat.Nat44Interface{Name: "afp1", NatOutside: true}),
		kv.put(&vppnat.Nat44AddressPool{Name: "rs-pool", FirstIp: "10.94.0.1", LastIp: "10.94.0.3"}),
		kv.put(&vppnat.DNat44{Label: "rs-dnat", StMappings: []*vppnat.DNat44_StaticMapping{
			{ExternalIp: "10.94.1.1", ExternalPort: 80, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.90.1.10", LocalPort: 8080}}},
			{ExternalIp: "10.94.1.2", ExternalPort: 53, Protocol: vppnat.DNat44_UDP, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{
				{LocalIp: "10.90.1.11", LocalPort: 53, Probability: 1}, {LocalIp: "10.90.1.12", LocalPort: 53, Probability: 1}}},
			{ExternalInterface: "afp1", ExternalPort: 2222, LocalIps: []*vppnat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.90.1.13", LocalPort: 22}}},
		}, IdMappings: []*vppnat.DNat44_IdentityMapping{{Interface: "afp1", Port: 22}}}),
		// VRF tables of both IP versions, an interface, a route and a
		// VXLAN tunnel (its encap VRF) in them.
		kv.put(&vppl3.VrfTable{Id: 10, Protocol: vppl3.VrfTable_IPV4, Label: "rs-vrf4"}),
		kv.put(&vppl3.VrfTable{Id: 10, Protocol: vppl3.VrfTable_IPV6, Label: "rs-vrf6"}),
		kv.put(&vppif.Interface{Name: "loop4", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, Vrf: 10,
			IpAddresses: []string{"10.96.0.1/24", "2001:db8:96::1/64"}}),
		kv.put(&vppl3.Route{VrfId: 10, DstNetwork: "10.97.0.0/24", NextHopAddr: "10.96.0.2"}),
		kv.put(&vppif.Interface{Name: "vxlan1", Type: vppif.Interface_VXLAN_TUNNEL, Enabled: true, Vrf: 10,
			Link: &vppif.Interface_Vxlan{Vxlan: &vppif.VxlanLink{SrcAddress: "10.96.0.1", DstAddress: "10.96.0.9", Vni: 5000}}}),
		// An L2 cross-connect both ways, and a static L2 FIB entry.
		kv.put(&vppif.Interface{Name: "loop5", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true}),
		kv.put(&vppif.Interface{Name: "loop6", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true}),
		kv.put(&vppl2.XConnectPair{ReceiveInterface: "loop5", TransmitInterface: "loop6"}),
		kv.put(&vppl2.XConnectPair{ReceiveInterface: "loop6", TransmitInterface: "loop5"}),
		kv.put(&vppl2.FIBEntry{PhysAddress: "02:00:00:00:90:77", BridgeDomain: "bd-rs", OutgoingInterface: "memif1", StaticConfig: true}),
	}
	for _, key := range keys {
		a.waitState(key, "CONFIGURED")
	}
	if rec := a.downstreamResync(); len(executedOps(rec)) != 0 {
		t.Errorf("a downstream resync right after the values were applied executed %v", executedOps(rec))
	}
	// VPP's dumps of the VRF tables, cross-connects, FIB and VXLAN.
	l2l3 := func() []string {
		loop4, loop5, loop6 := v.mustTagged("loop4"), v.mustTagged("loop5"), v.mustTagged("loop6")
		bdID := v.bridgeDomainIDs()
		out := slices.Concat(v.vrfTables(), v.routesOfTable(10), v.xconnects(), v.staticFIB(), v.vxlanTunnels(),
			[]string{fmt.Sprintf("loop4 tables %d %d", v.interfaceTable(loop4, false), v.interfaceTable(loop4, true))})
		want := []string{"10 ipv4 rs-vrf4", "10 ipv6 rs-vrf6", "10.97.0.0/24 via 10.96.0.2",
			fmt.Sprintf("%d -> %d", loop5, loop6), fmt.Sprintf("%d -> %d", loop6, loop5),
			fmt.Sprintf("%s 02:00:00:00:90:77 -> %d", strings.Join(bdID, ","), v.mustTagged("memif1")),
			fmt.Sprintf("%d 10.96.0.1 -> 10.96.0.9 vni 5000 encap-vrf 10", v.mustTagged("vxlan1")),
			"loop4 tables 10 10"}
		if !slices.Equal(slices.Sorted(slices.Values(out)), slices.Sorted(slices.Values(want))) {
			t.Errorf("VRF tables, routes of table 10, cross-connects, static FIB, VXLAN tunnels in VPP:\n got  %q\n want %q", out, want)
		}
		return out
	}
	l2l3Before := l2l3()
	ids := v.bridgeDomainIDs()
	if len(ids) != 1 {
		t.Fatalf("bridge domains in VPP: %v, want one\n%s", ids, v.cli("show", "bridge-domain"))
	}
	name := func(tag string) string {
		i, ok := v.tagged(tag)
		if !ok {
			t.Fatalf("VPP has no interface tagged %s: %v", tag, v.interfaces())
		}
		return i.Name
	}
	wantMembers := []string{name("bvi1") + " shg=0 bvi", name("loop3") + " shg=1", name("memif1") + " shg=2"}
	slices.Sort(wantMembers)
	if got := v.bridgeDomainMembers(ids[0]); !slices.Equal(got, wantMembers) {
		t.Fatalf("members of bd %s: %v, want %v", ids[0], got, wantMembers)
	}
	if err := a.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// The agent starts again, on the same etcd and the VPP as it left it.
	a2 := startAgentProcess(t, cfg)
	sawFull := false
	for _, rec := range a2.history("") {
		if rec.Type == "SB notification" {
			continue
		}
		sawFull = sawFull || rec.Resync == "full resync"
		if ops := executedOps(rec); len(ops) != 0 {
			t.Errorf("transaction #%d (%s, %q) of the restarted agent on an in-sync VPP executed %v", rec.SeqNum, rec.Resync, rec.Description, ops)
		}
	}
	if !sawFull {
		t.Fatalf("no full resync in the history of the restarted agent: %+v", a2.history(""))
	}
	for _, key := range keys {
		if st := a2.status(key); st.Value.State != "CONFIGURED" {
			t.Errorf("after the restart %s: %+v", key, st.Value)
		}
	}
	if after := l2l3(); !slices.Equal(after, l2l3Before) {
		t.Errorf("VPP's VRF tables, cross-connects, FIB and VXLAN changed with the restart: %q, were %q", after, l2l3Before)
	}

	// loop3 leaves the bridge domain: VPP no longer has it there.
	bd.Interfaces = slices.DeleteFunc(bd.Interfaces, func(i *vppl2.BridgeDomain_Interface) bool { return i.Name == "loop3" })
	kv.put(bd)
	wantMembers = slices.DeleteFunc(wantMembers, func(m string) bool { return strings.HasPrefix(m, name("loop3")+" ") })
	eventually(t, "loop3 out of the bridge domain in VPP", func() (bool, string) {
		got := v.bridgeDomainMembers(ids[0])
		return slices.Equal(got, wantMembers), fmt.Sprintf("members %v, want %v", got, wantMembers)
	})
	if rec := a2.downstreamResync(); len(executedOps(rec)) != 0 {
		t.Errorf("a downstream resync after loop3 left the bridge domain executed %v", executedOps(rec))
	}

	// Every key deleted: VPP is left with local0 only.
	for _, key := range keys {
		kv.del(key)
	}
	eventually(t, "VPP left with local0 only", func() (bool, string) {
		all := v.interfaces()
		return len(all) == 1 && all[0].Name == "local0" && len(v.bridgeDomainIDs()) == 0 && len(v.vrfTables()) == 0,
			fmt.Sprintf("interfaces %v, bridge domains %v, tables %v", all, v.bridgeDomainIDs(), v.vrfTables())
	})
	for _, show := range [][]string{{"show", "ip", "fib", "10.91.0.0/16"}, {"show", "ip", "neighbors"}, {"show", "nat44", "static", "mappings"}, {"show", "nat44", "addresses"}} {
		out := v.cli(show...)
		if strings.Contains(out, "10.90.") {
			t.Errorf("vppctl %s after every key was deleted:\n%s", strings.Join(show, " "), out)
		}
	}
}

// executedOps lists the operations of a transaction that changed something
// (NOOPs aside).
func executedOps(rec txnRecord) []string {
	var ops []string
	for _, op := range rec.Executed {
		if !op.has("NOOP") {
			ops = append(ops, op.Operation+" "+op.Key)
		}
	}
	return ops
}

// pingFrom pings addr from the namespace ns (one echo a try) until one is
// answered: VPP drops the first packets to a neighbour it has not
// resolved yet.
func pingFrom(t *testing.T, ns, addr string) {
	t.Helper()
	eventually(t, fmt.Sprintf("ping %s from %s", addr, ns), func() (bool, string) {
		out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-n", "-c", "1", "-W", "1", addr).CombinedOutput()
		return err == nil, fmt.Sprintf("%v: %s", err, out)
	})
}

// TestE2ERealVPPTraffic: packets cross a real VPP configured by the agent.
// Four test namespaces, each joined to VPP by a veth pair whose host end
// is an AF_PACKET interface of VPP (all made by the agent, Linux and VPP
// values in one configuration):
//
//	ns1 10.77.1.2 --- afp1 10.77.1.1 [VPP: routes] afp2 10.77.2.1 --- ns2 10.77.2.2 (lo 10.77.9.1)
//	ns3 10.77.3.2 --- afp3 \ bridge domain, BVI bvi1 10.77.3.1
//	ns4 10.77.3.3 --- afp4 /
//
// ns1 reaches ns2 (VPP routes between its interfaces) and 10.77.9.1 on
// ns2's loopback through the agent's VPP route 10.77.9.0/24 via 10.77.2.2;
// ns3 reaches ns4 through the bridge domain, the BVI, and ns1 through the
// BVI. Taking the route away stops the traffic it carried.
func TestE2ERealVPPTraffic(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping (iputils-ping; make test installs it)")
	}
	v := startE2EVPP(t)
	v.needOwnReal("AF_PACKET interfaces on veths of the test's network namespace")
	a := startAgent(t, realVPPAgentConfig(t, v), true)
	kv := newEtcdClient(t, a.cfg.Etcd.EmbeddedClientURL)

	var ns [5]netNames
	for i := 1; i <= 4; i++ {
		ns[i] = uniqueNames(t, fmt.Sprintf("tr%d", i))
	}
	afp := func(i int, addrs ...string) *vppif.Interface {
		return &vppif.Interface{Name: fmt.Sprintf("afp%d", i), Type: vppif.Interface_AF_PACKET, Enabled: true, IpAddresses: addrs,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{LinuxInterface: ns[i].host}}}
	}
	peerAddr := map[int]string{1: "10.77.1.2/24", 2: "10.77.2.2/24", 3: "10.77.3.2/24", 4: "10.77.3.3/24"}
	gateway := map[int]string{1: "10.77.1.1", 2: "10.77.2.1", 3: "10.77.3.1", 4: "10.77.3.1"}
	var keys []string
	for i := 1; i <= 4; i++ {
		keys = append(keys,
			kv.put(veth(ns[i].host, ns[i].peer, "", 0)),
			kv.put(veth(ns[i].peer, ns[i].host, ns[i].ns, 0, peerAddr[i])),
			kv.put(route(ns[i].peer, "10.77.0.0/16", gateway[i])))
	}
	vppRoute := &vppl3.Route{DstNetwork: "10.77.9.0/24", NextHopAddr: "10.77.2.2", OutgoingInterface: "afp2"}
	keys = append(keys,
		kv.put(&linuxif.Interface{Name: fmt.Sprintf("tr2lo%d", pid), Type: linuxif.Interface_LOOPBACK, HostIfName: "lo", Enabled: true,
			Namespace: nsRef(ns[2].ns), IpAddresses: []string{"10.77.9.1/32"}}),
		kv.put(afp(1, "10.77.1.1/24")), kv.put(afp(2, "10.77.2.1/24")), kv.put(afp(3)), kv.put(afp(4)),
		kv.put(&vppif.Interface{Name: "bvi1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.77.3.1/24"}}),
		kv.put(&vppl2.BridgeDomain{Name: "bd-tr", Flood: true, UnknownUnicastFlood: true, Forward: true, Learn: true,
			Interfaces: []*vppl2.BridgeDomain_Interface{{Name: "bvi1", BridgedVirtualInterface: true}, {Name: "afp3"}, {Name: "afp4"}}}),
		kv.put(vppRoute))
	for _, key := range keys {
		a.waitState(key, "CONFIGURED")
	}

	pingFrom(t, ns[1].ns, "10.77.1.1") // VPP's own address
	pingFrom(t, ns[1].ns, "10.77.2.2") // routed by VPP
	pingFrom(t, ns[1].ns, "10.77.9.1") // through the agent's VPP route
	pingFrom(t, ns[3].ns, "10.77.3.3") // through the bridge domain
	pingFrom(t, ns[3].ns, "10.77.3.1") // the BVI
	pingFrom(t, ns[3].ns, "10.77.1.2") // routed through the BVI

	// Without the route, 10.77.9.1 is out of reach.
	kv.del(keyOf(t, vppRoute))
	a.waitState(keyOf(t, vppRoute), "")
	if out, err := exec.Command("ip", "netns", "exec", ns[1].ns, "ping", "-n", "-c", "2", "-W", "1", "10.77.9.1").CombinedOutput(); err == nil {
		t.Errorf("10.77.9.1 answers without the VPP route:\n%s\n%s", out, v.cli("show", "ip", "fib", "10.77.9.1"))
	}
}

// TestE2ERealVPPMemifPair: a memif between the agent's VPP (master) and a
// second real VPP (slave, configured with vppctl) comes up and passes
// traffic both ways.
func TestE2ERealVPPMemifPair(t *testing.T) {
	needRoot(t)
	v := startE2EVPP(t)
	v.needOwnReal("a second VPP started from the same build")
	other, err := vpprun.Start(v.real.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Stop() })
	a := startVPPAgentOn(t, v)
	socket := filepath.Join(t.TempDir(), "pair.sock")
	memif := &vppif.Interface{Name: "memif-pair", Type: vppif.Interface_MEMIF, Enabled: true, IpAddresses: []string{"10.201.0.1/24"},
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 7, SocketFilename: socket}}}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := a.configurator().Update(ctx, &configuratorpb.UpdateRequest{WaitDone: true,
		Update: &configpb.Config{VppConfig: &configpb.VppConfig{Interfaces: []*vppif.Interface{memif}}}}); err != nil {
		t.Fatal(err)
	}
	a.waitState(keyOf(t, memif), "CONFIGURED")
	for _, cmd := range [][]string{
		{"create", "memif", "socket", "id", "1", "filename", socket},
		{"create", "interface", "memif", "socket-id", "1", "id", "7", "slave"},
		{"set", "interface", "state", "memif1/7", "up"},
		{"set", "interface", "ip", "address", "memif1/7", "10.201.0.2/24"},
	} {
		if out, err := other.CLI(cmd...); err != nil || strings.TrimSpace(out) != "" {
			t.Fatalf("second VPP: vppctl %s: %q %v", strings.Join(cmd, " "), out, err)
		}
	}
	t.Cleanup(func() { _, _ = other.CLI("delete", "interface", "memif", "memif1/7") }) // polling memif: a core busy while it exists

	// The link comes up (the agent reports it from VPP's events), and
	// pings cross it both ways.
	mine, ok := v.tagged("memif-pair")
	if !ok {
		t.Fatalf("VPP has no memif-pair: %v", v.interfaces())
	}
	a.waitState("vpp/interface/memif-pair/link-state/UP", "OBTAINED")
	for _, p := range []struct {
		from   func(...string) (string, error)
		target string
	}{{v.real.CLI, "10.201.0.2"}, {other.CLI, "10.201.0.1"}} {
		eventually(t, "ping "+p.target+" over the memif", func() (bool, string) {
			out, err := p.from("ping", p.target, "repeat", "2", "interval", "0.1")
			return err == nil && !strings.Contains(out, " 0 received") && strings.Contains(out, "received"), fmt.Sprintf("%v: %s", err, out)
		})
	}
	if out := v.cli("show", "memif", mine.Name); !strings.Contains(out, "connected") {
		t.Errorf("vppctl show memif %s:\n%s\nwant it connected", mine.Name, out)
	}
}

package l3plugin_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// TestWithTheInterfacePlugin: routes and ARP entries over interfaces made
// by the real interface plugin: the route waits for the address that makes
// its gateway reachable (a derived value of the interface), and both follow
// the interface's admin state.
func TestWithTheInterfacePlugin(t *testing.T) {
	needRoot(t)
	name := fmt.Sprintf("l3int-%d", os.Getpid())
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ns := &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: name}
	mgr, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mgr.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := kvscheduler.New(kvscheduler.Options{Logger: log})
	t.Cleanup(s.Close)
	ifp := ifplugin.New(mgr, log)
	l3 := l3plugin.New(mgr, l3plugin.SchedulerInterfaces(s), log)
	l3.SetInterfaceLister(l3plugin.SchedulerInterfaceNames(s))
	if err := s.RegisterKVDescriptor(ifp.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterKVDescriptor(l3.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	commit := func(kvs map[string]proto.Message) {
		t.Helper()
		txn := s.StartNBTransaction()
		for k, v := range kvs {
			txn.SetValue(k, v)
		}
		if _, err := txn.Commit(context.Background()); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	key := func(m *models.Model, v proto.Message) string {
		k, err := m.Key(v)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	state := func(k string) api.ValueState { return s.GetValueStatus(k).GetValue().GetState() }

	a := &linuxif.Interface{Name: "ia", Type: linuxif.Interface_VETH, Enabled: true, Namespace: ns,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ib"}}}
	b := &linuxif.Interface{Name: "ib", Type: linuxif.Interface_VETH, Enabled: true, Namespace: ns,
		IpAddresses: []string{"10.61.0.2/24"}, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ia"}}}
	route := &linuxl3.Route{OutgoingInterface: "ia", DstNetwork: "10.62.0.0/24", GwAddr: "10.61.0.2", Metric: 10}
	arp := &linuxl3.ARPEntry{Interface: "ia", IpAddress: "10.61.0.9", HwAddress: "02:00:00:00:61:09"}
	routeKey, arpKey := key(models.LinuxRoute, route), key(models.LinuxARP, arp)
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): a, ifplugin.InterfaceKey("ib"): b, routeKey: route, arpKey: arp})
	if st := state(routeKey); st != api.ValueStatePending {
		t.Fatalf("route before ia has an address in the gateway's subnet: %v", st)
	}
	if st := state(arpKey); st != api.ValueStateConfigured {
		t.Errorf("ARP entry: %v", st)
	}
	// The address that makes the gateway reachable.
	a2 := proto.Clone(a).(*linuxif.Interface)
	a2.IpAddresses = []string{"10.61.0.1/24"}
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): a2})
	if st := state(routeKey); st != api.ValueStateConfigured {
		t.Fatalf("route after the address: %v (%v)", st, s.GetValueStatus(routeKey))
	}
	out, err := exec.Command("ip", "-n", name, "route", "show", "proto", "181").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "10.62.0.0/24 via 10.61.0.2 dev ia") || !strings.Contains(string(out), "metric 10") {
		t.Errorf("routes of ours in %s: %s %v", name, out, err)
	}
	// Down: the route and the ARP entry go (PENDING); up: back.
	a3 := proto.Clone(a2).(*linuxif.Interface)
	a3.Enabled = false
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): a3})
	if state(routeKey) != api.ValueStatePending || state(arpKey) != api.ValueStatePending {
		t.Errorf("with ia down: route %v, ARP %v; want both PENDING", state(routeKey), state(arpKey))
	}
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): a2})
	if state(routeKey) != api.ValueStateConfigured || state(arpKey) != api.ValueStateConfigured {
		t.Errorf("with ia up again: route %v, ARP %v", state(routeKey), state(arpKey))
	}
	if out, _ := exec.Command("ip", "-n", name, "neigh", "show", "dev", "ia").CombinedOutput(); !strings.Contains(string(out), "10.61.0.9 lladdr 02:00:00:00:61:09 PERMANENT") {
		t.Errorf("neighbours of ia: %s", out)
	}
	// Everything goes.
	commit(map[string]proto.Message{ifplugin.InterfaceKey("ia"): nil, ifplugin.InterfaceKey("ib"): nil, routeKey: nil, arpKey: nil})
	if out, _ := exec.Command("ip", "-n", name, "-o", "link").CombinedOutput(); strings.Contains(string(out), "ia") || strings.Contains(string(out), "ib") {
		t.Errorf("links left in %s: %s", name, out)
	}
}

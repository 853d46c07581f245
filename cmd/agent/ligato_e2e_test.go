package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
	ligatolinux "github.com/netagent-io/netagent/proto/ligato/linux"
	ligatovpp "github.com/netagent-io/netagent/proto/ligato/vpp"
	ligatovppif "github.com/netagent-io/netagent/proto/ligato/vpp/interfaces"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// The original's client (ligato.configurator.ConfiguratorService, from
// netagent's copies of the original's protos) configures the kernel and VPP
// through the agent's gRPC listener: Update with wait_done applies a veth
// pair with a route and a VPP loopback with an address and a route, and
// reports the ABF policy of the same request (a model netagent lacks) as a
// per-key error; Get and Dump answer in the original's containers; Notify
// tells the loopback's states as they change, filtered ones only those a
// filter names; Delete removes it all from the kernel and VPP.
func TestE2EVPPLigatoConfigurator(t *testing.T) {
	needRoot(t)
	v := startE2EVPP(t)
	n := uniqueNames(t, "lg")
	cfg := testConfig(t)
	cfg.VPP.Disabled, cfg.VPP.Socket = false, v.socket
	cfg.Linux.Disabled = false
	a := startAgent(t, cfg, true)
	c := ligatocfg.NewConfiguratorServiceClient(a.grpcConn())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	// Notify, from the first notification; and filtered: the loopback's
	// notifications with its admin state down.
	notes, err := c.Notify(ctx, &ligatocfg.NotifyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	downs, err := c.Notify(ctx, &ligatocfg.NotifyRequest{Filters: []*ligatocfg.Notification{{
		Notification: &ligatocfg.Notification_VppNotification{VppNotification: &ligatovpp.Notification{
			Interface: &ligatovppif.InterfaceNotification{State: &ligatovppif.InterfaceState{
				Name: "lgloop1", AdminStatus: ligatovppif.InterfaceState_DOWN,
			}},
		}},
	}}})
	if err != nil {
		t.Fatal(err)
	}

	host := veth(n.host, n.peer, "", 0, "172.30.18.1/24")
	peer := veth(n.peer, n.host, n.ns, 0, "172.30.18.2/24")
	lroute := route(n.peer, "172.30.19.0/24", "172.30.18.1")
	loop := &vppif.Interface{Name: "lgloop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.118.0.1/24"}}
	vroute := &vppl3.Route{DstNetwork: "10.119.0.0/16", NextHopAddr: "10.118.0.2", OutgoingInterface: "lgloop1"}
	doc := func() *ligatocfg.Config {
		return &ligatocfg.Config{
			VppConfig:   &ligatovpp.ConfigData{Interfaces: []*vppif.Interface{loop}, Routes: []*vppl3.Route{vroute}},
			LinuxConfig: &ligatolinux.ConfigData{Interfaces: []*linuxif.Interface{host, peer}, Routes: []*linuxl3.Route{lroute}},
		}
	}
	// An ABF policy (the original's vpp_config.abfs, field 21: index 1),
	// a model this agent does not have.
	withABF := doc()
	abf := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)
	withABF.VppConfig.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 21, protowire.BytesType), abf))

	up, err := c.Update(ctx, &ligatocfg.UpdateRequest{Update: withABF, WaitDone: true})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if errs := up.GetErrors(); len(errs) != 1 || errs[0].GetKey() != "vpp_config.abfs[0]" || !strings.Contains(errs[0].GetError(), "ligato.vpp.abf.ABF") {
		t.Errorf("Update errors: %v, want the ABF policy's only", errs)
	}

	// The kernel and VPP have it when Update returns.
	if out, err := nsAddrs("", n.host); err != nil || !strings.Contains(out, "inet 172.30.18.1/24") {
		t.Errorf("after Update: addresses of %s: %q %v", n.host, out, err)
	}
	if out, err := nsAddrs(n.ns, n.peer); err != nil || !strings.Contains(out, "inet 172.30.18.2/24") {
		t.Errorf("after Update: addresses of %s in %s: %q %v", n.peer, n.ns, out, err)
	}
	if out, err := ourRoutes(n.ns); err != nil || !strings.Contains(out, "172.30.19.0/24 via 172.30.18.1 dev "+n.peer) {
		t.Errorf("after Update: routes in %s: %q %v", n.ns, out, err)
	}
	vppLoop, ok := v.tagged("lgloop1")
	if !ok {
		t.Fatalf("after Update: VPP has no interface tagged lgloop1: %v", v.interfaces())
	}
	if got := v.addresses(vppLoop.SwIfIndex); !slices.Equal(got, []string{"10.118.0.1/24"}) {
		t.Errorf("after Update: addresses of %s: %v", vppLoop, got)
	}
	if got := v.routesVia(vppLoop.SwIfIndex); !slices.Contains(got, "10.119.0.0/16 via 10.118.0.2") {
		t.Errorf("after Update: routes via %s: %v", vppLoop, got)
	}

	// Get: what was asked, in the original's containers.
	get, err := c.Get(ctx, &ligatocfg.GetRequest{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if want := doc(); !proto.Equal(get.GetConfig(), want) {
		t.Errorf("Get:\n%v\nwant\n%v", get.GetConfig(), want)
	}
	// Dump: what the kernel and VPP have.
	dump, err := c.Dump(ctx, &ligatocfg.DumpRequest{})
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	d := dump.GetDump()
	if i := findByName(d.GetVppConfig().GetInterfaces(), "lgloop1"); i == nil || !slices.Equal(i.GetIpAddresses(), loop.IpAddresses) || !i.GetEnabled() {
		t.Errorf("Dump: lgloop1 is %v", i)
	}
	if !slices.ContainsFunc(d.GetVppConfig().GetRoutes(), func(r *vppl3.Route) bool { return proto.Equal(r, vroute) }) {
		t.Errorf("Dump: VPP routes %v, want %v", d.GetVppConfig().GetRoutes(), vroute)
	}
	if i := findByName(d.GetLinuxConfig().GetInterfaces(), n.peer); i == nil || i.GetNamespace().GetReference() != n.ns || !slices.Equal(i.GetIpAddresses(), peer.IpAddresses) {
		t.Errorf("Dump: %s is %v", n.peer, i)
	}
	if !slices.ContainsFunc(d.GetLinuxConfig().GetRoutes(), func(r *linuxl3.Route) bool {
		return r.GetDstNetwork() == lroute.DstNetwork && r.GetGwAddr() == lroute.GwAddr && r.GetOutgoingInterface() == n.peer
	}) {
		t.Errorf("Dump: Linux routes %v, want %v", d.GetLinuxConfig().GetRoutes(), lroute)
	}

	// Notify: the loopback in VPP, up; then set down by the client.
	waitNotified(t, notes, "lgloop1 up", func(s *ligatovppif.InterfaceState) bool {
		return s.GetName() == "lgloop1" && s.GetIfIndex() == vppLoop.SwIfIndex && s.GetInternalName() == vppLoop.Name &&
			s.GetAdminStatus() == ligatovppif.InterfaceState_UP && s.GetOperStatus() == ligatovppif.InterfaceState_UP
	})
	downLoop := proto.Clone(loop).(*vppif.Interface)
	downLoop.Enabled = false
	if _, err := c.Update(ctx, &ligatocfg.UpdateRequest{Update: &ligatocfg.Config{VppConfig: &ligatovpp.ConfigData{Interfaces: []*vppif.Interface{downLoop}}}, WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	waitNotified(t, notes, "lgloop1 down", func(s *ligatovppif.InterfaceState) bool {
		return s.GetName() == "lgloop1" && s.GetAdminStatus() == ligatovppif.InterfaceState_DOWN && s.GetOperStatus() == ligatovppif.InterfaceState_DOWN
	})
	// The filtered stream skipped the notifications before it.
	if r, err := downs.Recv(); err != nil || r.GetNotification().GetVppNotification().GetInterface().GetState().GetAdminStatus() != ligatovppif.InterfaceState_DOWN {
		t.Errorf("filtered Notify: first %v %v, want lgloop1 admin DOWN", r, err)
	}
	if _, err := c.Update(ctx, &ligatocfg.UpdateRequest{Update: &ligatocfg.Config{VppConfig: &ligatovpp.ConfigData{Interfaces: []*vppif.Interface{loop}}}, WaitDone: true}); err != nil {
		t.Fatal(err)
	}
	waitNotified(t, notes, "lgloop1 up again", func(s *ligatovppif.InterfaceState) bool {
		return s.GetName() == "lgloop1" && s.GetAdminStatus() == ligatovppif.InterfaceState_UP && s.GetOperStatus() == ligatovppif.InterfaceState_UP
	})
	if v.sim != nil { // the link alone goes down: a carrier lost (vppsim's)
		if err := v.sim.SetLinkUp(vppLoop.SwIfIndex, false); err != nil {
			t.Fatal(err)
		}
		waitNotified(t, notes, "lgloop1's link down", func(s *ligatovppif.InterfaceState) bool {
			return s.GetName() == "lgloop1" && s.GetAdminStatus() == ligatovppif.InterfaceState_UP && s.GetOperStatus() == ligatovppif.InterfaceState_DOWN
		})
	}

	// Delete (key fields only): gone from the kernel and VPP.
	del, err := c.Delete(ctx, &ligatocfg.DeleteRequest{WaitDone: true, Delete: &ligatocfg.Config{
		VppConfig:   &ligatovpp.ConfigData{Interfaces: []*vppif.Interface{{Name: "lgloop1"}}, Routes: []*vppl3.Route{vroute}},
		LinuxConfig: &ligatolinux.ConfigData{Interfaces: []*linuxif.Interface{{Name: n.host}, {Name: n.peer}}, Routes: []*linuxl3.Route{lroute}},
	}})
	if err != nil || len(del.GetErrors()) != 0 {
		t.Fatalf("Delete: %v %v", del, err)
	}
	if out, err := nsLink("", n.host); err == nil {
		t.Errorf("after Delete: %s", out)
	}
	if i, ok := v.tagged("lgloop1"); ok {
		t.Errorf("after Delete: VPP has %v", i)
	}
	if got := v.routesVia(vppLoop.SwIfIndex); slices.Contains(got, "10.119.0.0/16 via 10.118.0.2") {
		t.Errorf("after Delete: VPP routes via %d: %v", vppLoop.SwIfIndex, got)
	}
	waitNotified(t, notes, "lgloop1 deleted", func(s *ligatovppif.InterfaceState) bool {
		return s.GetName() == "lgloop1" && s.GetAdminStatus() == ligatovppif.InterfaceState_DELETED && s.GetOperStatus() == ligatovppif.InterfaceState_DELETED
	})
	get, err = c.Get(ctx, &ligatocfg.GetRequest{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if len(get.GetConfig().GetVppConfig().GetInterfaces())+len(get.GetConfig().GetLinuxConfig().GetInterfaces()) > 0 {
		t.Errorf("Get after Delete: %v", get.GetConfig())
	}
}

// waitNotified receives notifications until one whose interface state
// satisfies want (those before it are skipped); the stream's context
// bounds the wait.
func waitNotified(t *testing.T, s ligatocfg.ConfiguratorService_NotifyClient, what string, want func(*ligatovppif.InterfaceState) bool) {
	t.Helper()
	var seen []string
	for {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("waiting for the notification of %s: %v; got %v", what, err, seen)
		}
		st := r.GetNotification().GetVppNotification().GetInterface().GetState()
		if want(st) {
			return
		}
		seen = append(seen, fmt.Sprintf("%d: %s admin %s oper %s", r.GetNextIdx()-1, st.GetName(), st.GetAdminStatus(), st.GetOperStatus()))
	}
}

func findByName[T interface{ GetName() string }](list []T, name string) T {
	var none T
	for _, v := range list {
		if v.GetName() == name {
			return v
		}
	}
	return none
}

// addresses are the IPv4 addresses of an interface as VPP's
// ip_address_dump reports them.
func (v *e2eVPP) addresses(swIfIndex uint32) []string {
	v.t.Helper()
	var out []string
	v.dump(func(ctx context.Context, conn *core.Connection) error {
		details, err := vppconn.Dump[*ip.IPAddressDetails](ctx, conn, &ip.IPAddressDump{SwIfIndex: interface_types.InterfaceIndex(swIfIndex)})
		for _, d := range details {
			out = append(out, d.Prefix.String())
		}
		return err
	})
	return out
}

// routesVia are the IPv4 routes of table 0 with a path through the
// interface, as ip_route_dump reports them ("10.1.0.0/16 via 10.0.0.2").
func (v *e2eVPP) routesVia(swIfIndex uint32) []string {
	v.t.Helper()
	var out []string
	v.dump(func(ctx context.Context, conn *core.Connection) error {
		details, err := vppconn.Dump[*ip.IPRouteDetails](ctx, conn, &ip.IPRouteDump{Table: ip.IPTable{TableID: 0}})
		for _, d := range details {
			for _, p := range d.Route.Paths {
				if uint32(p.SwIfIndex) == swIfIndex {
					out = append(out, fmt.Sprintf("%s via %s", d.Route.Prefix, netip.AddrFrom4(p.Nh.Address.GetIP4())))
				}
			}
		}
		return err
	})
	return out
}

// dump runs fn on a binary-API connection of the test's own.
func (v *e2eVPP) dump(fn func(context.Context, *core.Connection) error) {
	v.t.Helper()
	conn, err := core.Connect(socketclient.NewVppClient(v.socket))
	if err != nil {
		v.t.Fatalf("connecting to VPP at %s: %v", v.socket, err)
	}
	defer conn.Disconnect()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fn(ctx, conn); err != nil {
		v.t.Fatal(err)
	}
}

package l3plugin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// The callbacks make their VPP calls with the context the scheduler gives
// them: once it is cancelled (the scheduler closing), nothing reaches VPP.
func TestCallbacksCallVPPWithTheirContext(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	route := routeKV(t, &vppl3.Route{DstNetwork: "10.77.0.0/16", VrfId: 7, Type: vppl3.Route_DROP})
	var d *api.KVDescriptor
	for _, x := range e.p.Descriptors() {
		if x.Name == l3plugin.RouteDescriptorName {
			d = x
		}
	}
	e.resetCalls()
	if _, err := d.Create(ctx, route.key, route.value); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context: %v, want context.Canceled", err)
	}
	if w, ok := e.writes(); ok && len(w) != 0 {
		t.Errorf("Create with a cancelled context sent %v", w)
	}
	if got := e.vpp.NewRoutes(vpptest.SourceAPI); len(got) != 0 {
		t.Errorf("Create with a cancelled context added routes %v", got)
	}
	if _, err := d.Retrieve(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Retrieve with a cancelled context: %v, want context.Canceled", err)
	}
}

// The callbacks look their interfaces up through the view of the scheduler
// running them (api.ViewOf), never through the scheduler itself: Create,
// Delete and Retrieve (with the lister) of routes and ARP entries.
func TestCallbacksLookUpInterfacesThroughTheirView(t *testing.T) {
	e := newEnv(t)
	s, _, reads := vpptest.StartAgentCountingReads(t, e.m, l3plugin.New, vpptest.InterfaceStandIn(e.m))
	e.s = s
	route := routeKV(t, &vppl3.Route{DstNetwork: "10.78.0.0/16", OutgoingInterface: "lv1"})
	arp := arpKV(t, &vppl3.ARPEntry{Interface: "lv1", IpAddress: "192.168.78.1", PhysAddress: "02:00:00:00:00:78", Static: true})
	e.mustCommit(iface("lv1"), route, arp)
	for _, k := range []string{route.key, arp.key} {
		if st := e.state(k); st != api.ValueStateConfigured {
			t.Fatalf("%s is %v, want CONFIGURED", k, st)
		}
	}
	if _, err := e.resync(api.FullResync, iface("lv1"), route, arp); err != nil {
		t.Fatal(err)
	}
	e.mustCommit(del(route.key), del(arp.key))
	if got := e.vpp.NewRoutes(vpptest.SourceAPI); len(got) != 0 {
		t.Errorf("routes left after the delete: %v", got)
	}
	if n := reads.Calls(); n != 0 {
		t.Errorf("the callbacks called the scheduler's GetMetadataMap %d times, want 0 (api.ViewOf)", n)
	}
}

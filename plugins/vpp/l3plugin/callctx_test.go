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

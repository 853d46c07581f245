package ifplugin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// descriptor returns the plugin's descriptor of that name, to call its
// callbacks directly.
func (e *env) descriptor(name string) *api.KVDescriptor {
	e.t.Helper()
	for _, d := range e.p.Descriptors() {
		if d.Name == name {
			return d
		}
	}
	e.t.Fatalf("no descriptor %s", name)
	return nil
}

// The callbacks make their VPP calls with the context the scheduler gives
// them: once it is cancelled (the scheduler closing), nothing reaches VPP.
func TestCallbacksCallVPPWithTheirContext(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d := e.descriptor(ifplugin.InterfaceDescriptorName)
	if _, err := d.Create(ctx, ifplugin.InterfaceKey("loopc"), loop("loopc")); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context: %v, want context.Canceled", err)
	}
	if _, ok := e.tagged("loopc"); ok {
		t.Error("Create with a cancelled context made the interface")
	}
	if got := e.untagged(); len(got) != 0 {
		t.Errorf("Create with a cancelled context left untagged interfaces %v", got)
	}
	if _, err := d.Retrieve(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Retrieve with a cancelled context: %v, want context.Canceled", err)
	}
	admin := e.descriptor(ifplugin.AdminStateDescriptorName)
	if _, err := admin.Retrieve(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("admin state Retrieve with a cancelled context: %v, want context.Canceled", err)
	}
}

// A Create whose context ends after the interface was made still deletes
// it again: the end of the context is no reason to leave an untagged
// interface behind.
func TestCreateUndoneAfterItsContextEnded(t *testing.T) {
	vpptest.NeedSim(t, "delays requests (Delay)")
	e := newEnv(t, vppsim.Options{})
	// The tag's reply comes after the Create's deadline, with the loopback
	// made: the Create fails and deletes the loopback with a context of its
	// own, whose request VPP serves once the tag's is done.
	e.sim.Delay("sw_interface_tag_add_del", 1500*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	d := e.descriptor(ifplugin.InterfaceDescriptorName)
	if _, err := d.Create(ctx, ifplugin.InterfaceKey("loopd"), loop("loopd")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Create: %v, want the deadline's error", err)
	}
	e.sim.Delay("sw_interface_tag_add_del", 0)
	if got := e.newInterfaces(); len(got) != 0 {
		t.Errorf("VPP keeps %v after the failed Create, want it as it was", got)
	}
}

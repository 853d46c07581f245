package ifplugin_test

import (
	"slices"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api/apitest"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
)

// Inside a descriptor callback the interface lookups read the metadata
// through the callback's read view and never call the scheduler; a caller
// that is no callback (a test calling Create directly) reads the
// scheduler's map.
func TestInterfaceLookupsReadTheCallbackView(t *testing.T) {
	inView := api.NewMetadataMap()
	inView.Put("loop0", &ifplugin.Metadata{SwIfIndex: 7})
	inScheduler := api.NewMetadataMap()
	inScheduler.Put("loop1", ifplugin.Metadata{SwIfIndex: 3})
	src := &apitest.MetadataSource{Maps: map[string]api.MetadataMap{ifplugin.InterfaceDescriptorName: inScheduler}}
	lookup, names := ifplugin.SchedulerInterfaces(src), ifplugin.SchedulerInterfaceNames(src)

	callback := api.WithCallScope(t.Context(), &apitest.Scope{Maps: map[string]api.MetadataMap{ifplugin.InterfaceDescriptorName: inView}})
	if md, ok := lookup(callback, "loop0"); !ok || md.SwIfIndex != 7 {
		t.Errorf("loop0 in a callback: %+v, %v; want sw_if_index 7 from the view", md, ok)
	}
	if _, ok := lookup(callback, "loop1"); ok {
		t.Error("loop1 in a callback: found; the view does not hold it")
	}
	if got := names(callback); !slices.Equal(got, []string{"loop0"}) {
		t.Errorf("names in a callback: %v, want [loop0]", got)
	}
	if src.Calls != 0 {
		t.Errorf("the lookups called the scheduler %d times from a callback", src.Calls)
	}

	if md, ok := lookup(t.Context(), "loop1"); !ok || md.SwIfIndex != 3 {
		t.Errorf("loop1 outside a callback: %+v, %v; want sw_if_index 3 from the scheduler", md, ok)
	}
	if got := names(t.Context()); !slices.Equal(got, []string{"loop1"}) {
		t.Errorf("names outside a callback: %v, want [loop1]", got)
	}
	if _, ok := lookup(api.WithCallScope(t.Context(), &apitest.Scope{}), "loop0"); ok {
		t.Error("a callback whose scheduler has no interface descriptor found loop0")
	}
}

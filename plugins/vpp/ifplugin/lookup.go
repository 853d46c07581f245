package ifplugin

import (
	"context"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// InterfaceLookup finds the VPP interface of a logical interface name (the
// daemon passes SchedulerInterfaces, reading the metadata the VPP interface
// descriptor publishes). ctx is the context of the descriptor callback that
// asks.
type InterfaceLookup func(ctx context.Context, name string) (Metadata, bool)

// MetadataSource is the part of the scheduler that SchedulerInterfaces and
// SchedulerInterfaceNames need.
type MetadataSource interface {
	GetMetadataMap(descriptor string) api.MetadataMap
}

// interfaceMetadata returns the metadata map of InterfaceDescriptorName:
// through the read view of the descriptor callback whose context ctx is (a
// callback never calls the scheduler; the view shows the map as the running
// transaction has it so far), and from s for a caller that is not a
// callback (a test or a tool calling a callback directly with a context of
// its own).
func interfaceMetadata(ctx context.Context, s MetadataSource) api.MetadataMap {
	if api.InCallback(ctx) {
		return api.ViewOf(ctx).GetMetadataMap(InterfaceDescriptorName)
	}
	return s.GetMetadataMap(InterfaceDescriptorName)
}

// SchedulerInterfaces returns an InterfaceLookup reading the metadata map of
// InterfaceDescriptorName (Metadata or *Metadata): the one of the scheduler
// running the callback (api.ViewOf(ctx)), else the one of s. The map is
// looked up at each call, so the lookup may be built before the interface
// descriptor is registered.
func SchedulerInterfaces(s MetadataSource) InterfaceLookup {
	return func(ctx context.Context, name string) (Metadata, bool) {
		m := interfaceMetadata(ctx, s)
		if m == nil {
			return Metadata{}, false
		}
		v, ok := m.GetValue(name)
		if !ok {
			return Metadata{}, false
		}
		if md, ok := metadataOf(v); ok {
			return *md, true
		}
		return Metadata{}, false
	}
}

// SchedulerInterfaceNames returns a lister of the logical names in the
// metadata map of InterfaceDescriptorName (read as SchedulerInterfaces
// reads it), for SetInterfaceLister: the agent's interfaces and the foreign
// (OBTAINED) ones, whose Metadata.Foreign is set.
func SchedulerInterfaceNames(s MetadataSource) func(ctx context.Context) []string {
	return func(ctx context.Context) []string {
		if m := interfaceMetadata(ctx, s); m != nil {
			return m.ListLabels()
		}
		return nil
	}
}

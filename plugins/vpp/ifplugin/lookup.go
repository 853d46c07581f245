package ifplugin

import "github.com/netagent-io/netagent/plugins/kvscheduler/api"

// InterfaceLookup finds the VPP interface of a logical interface name (the
// daemon passes SchedulerInterfaces, reading the metadata the VPP interface
// descriptor publishes).
type InterfaceLookup func(name string) (Metadata, bool)

// MetadataSource is the part of the scheduler that SchedulerInterfaces and
// SchedulerInterfaceNames need.
type MetadataSource interface {
	GetMetadataMap(descriptor string) api.MetadataMap
}

// SchedulerInterfaces returns an InterfaceLookup reading the metadata map of
// InterfaceDescriptorName in s (Metadata or
// *Metadata). The map is looked up at each call, so the lookup may
// be built before the interface descriptor is registered.
func SchedulerInterfaces(s MetadataSource) InterfaceLookup {
	return func(name string) (Metadata, bool) {
		m := s.GetMetadataMap(InterfaceDescriptorName)
		if m == nil {
			return Metadata{}, false
		}
		v, ok := m.GetValue(name)
		if !ok {
			return Metadata{}, false
		}
		switch md := v.(type) {
		case Metadata:
			return md, true
		case *Metadata:
			if md != nil {
				return *md, true
			}
		}
		return Metadata{}, false
	}
}

// SchedulerInterfaceNames returns a lister of the logical names in the
// metadata map of InterfaceDescriptorName in s, for
// SetInterfaceLister: the agent's interfaces and the foreign (OBTAINED)
// ones, whose Metadata.Foreign is set.
func SchedulerInterfaceNames(s MetadataSource) func() []string {
	return func() []string {
		if m := s.GetMetadataMap(InterfaceDescriptorName); m != nil {
			return m.ListLabels()
		}
		return nil
	}
}

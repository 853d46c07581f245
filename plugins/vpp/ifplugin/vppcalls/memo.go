package vppcalls

import (
	"context"

	interfaces "go.fd.io/govpp/binapi/interface"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// The dumps of every interface are shared by the Retrieves of one refresh
// (api.RefreshMemo): the interface, admin state, address and unnumbered
// Retrieves of ifplugin and the route and ARP Retrieves of l3plugin all
// need them, and a resync runs them one after the other with nothing
// changed in VPP in between. The first dump of a refresh is stored in its
// memo under these keys (private to this package), the others load it.
// Stored values are never modified: the slices and the Interfaces they
// point to are read only once stored (a DumpInterfaces that starts from a
// stored list fills in copies).
const (
	// memoListed: []*Interface of a sw_interface_dump of every interface
	// (ListInterfaces' fields at least: DumpInterfaces stores its result
	// here too).
	memoListed = "vpp/ifplugin/vppcalls: sw_interface_dump"
	// memoDumped: []*Interface of DumpInterfaces.
	memoDumped = "vpp/ifplugin/vppcalls: DumpInterfaces"
	// memoUnnumbered: map[uint32]uint32 of DumpUnnumbered.
	memoUnnumbered = "vpp/ifplugin/vppcalls: ip_unnumbered_dump"
)

// memoized returns the value stored under key in ctx's refresh memo.
func memoized[T any](ctx context.Context, key string) (T, bool) {
	v, ok := api.RefreshMemo(ctx).Load(key)
	t, ok2 := v.(T)
	return t, ok && ok2
}

// ListInterfacesOnce is ListInterfaces for callers with a connection of
// their own (another plugin's area): dump makes the sw_interface_dump of
// every interface (SwIfIndex NoIndex) when no Retrieve of the running
// refresh has made one; the interfaces it gives are then shared with the
// refresh's next Retrieves. Outside a refresh it always dumps. The result
// is read only.
func ListInterfacesOnce(ctx context.Context, dump func(ctx context.Context) ([]*interfaces.SwInterfaceDetails, error)) ([]*Interface, error) {
	if list, ok := memoized[[]*Interface](ctx, memoListed); ok {
		return list, nil
	}
	ds, err := dump(ctx)
	if err != nil {
		return nil, err
	}
	list := listed(ds)
	api.RefreshMemo(ctx).Store(memoListed, list)
	return list, nil
}

// RefreshDump returns what DumpInterfaces gave in the running refresh, when
// a Retrieve of it called DumpInterfaces: every interface with its
// addresses, tables and unnumbered state. The result is read only.
func RefreshDump(ctx context.Context) ([]*Interface, bool) {
	return memoized[[]*Interface](ctx, memoDumped)
}

package l2plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

// XConnectDescriptorName is the descriptor of L2 cross-connects.
const XConnectDescriptorName = "vpp-xconnect"

// l2ModeResourcePrefix starts the name of the Exclusive resource that the
// bridge domain bindings and the cross-connects of one interface compete
// for: VPP keeps an interface in one L2 mode, a member of one bridge domain
// or the receive side of one cross-connect (see "One L2 mode per
// interface" in the package doc).
const l2ModeResourcePrefix = "vpp/l2/interface-mode/"

// l2ModeDependency is the Exclusive dependency on the L2 mode of iface.
func l2ModeDependency(iface string) api.Dependency {
	return api.Dependency{
		Label:     "interface " + iface + " in no other bridge domain or cross-connect",
		Exclusive: l2ModeResourcePrefix + iface,
	}
}

func (p *Plugin) xconnectDescriptor() *api.TypedDescriptor[*vppl2.XConnectPair, any] {
	prefix := models.VPPXConnect.KeyPrefix
	return &api.TypedDescriptor[*vppl2.XConnectPair, any]{
		Name:        XConnectDescriptorName,
		NBKeyPrefix: prefix,
		KeySelector: func(key string) bool { return strings.HasPrefix(key, prefix) },
		Validate: func(key string, x *vppl2.XConnectPair) error {
			if err := models.VPPXConnect.CheckKey(key, x); err != nil {
				return validate.Invalid(err)
			}
			return nil
		},
		Create: p.createXConnect,
		Delete: p.deleteXConnect,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppl2.XConnectPair, any]) ([]api.TypedKV[*vppl2.XConnectPair, any], error) {
			return vppconn.Retrieved(p.retrieveXConnects(ctx, c))
		},
		IsRetriableFailure:   isRetriable,
		Dependencies:         xconnectDependencies,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, BridgeDomainDescriptorName},
	}
}

// xconnectDependencies: both interfaces, and the L2 mode of the receive
// interface, held exclusively (the transmit interface's mode does not
// change: it may be a bridge domain member, or transmit for other
// cross-connects).
func xconnectDependencies(_ string, x *vppl2.XConnectPair) []api.Dependency {
	rx, tx := x.GetReceiveInterface(), x.GetTransmitInterface()
	deps := []api.Dependency{{Label: "receive interface " + rx, Key: ifplugin.InterfaceKey(rx)}}
	if tx != rx {
		deps = append(deps, api.Dependency{Label: "transmit interface " + tx, Key: ifplugin.InterfaceKey(tx)})
	}
	return append(deps, l2ModeDependency(rx))
}

// xconnectIndexes returns the sw_if_index of the receive and the transmit
// interface, and whether the receive interface is foreign (OBTAINED).
func (p *Plugin) xconnectIndexes(ctx context.Context, x *vppl2.XConnectPair) (rx, tx uint32, rxForeign bool, err error) {
	md, ok := p.ifaces(ctx, x.GetReceiveInterface())
	if !ok {
		return 0, 0, false, fmt.Errorf("%w: %s", errNoInterface, x.GetReceiveInterface())
	}
	rx, rxForeign = md.SwIfIndex, md.Foreign
	if md, ok = p.ifaces(ctx, x.GetTransmitInterface()); !ok {
		return 0, 0, false, fmt.Errorf("%w: %s", errNoInterface, x.GetTransmitInterface())
	}
	return rx, md.SwIfIndex, rxForeign, nil
}

// createXConnect puts the receive interface in cross-connect mode to the
// transmit interface (sw_interface_set_l2_xconnect). The scheduler calls
// it while no other bridge domain binding or cross-connect of the receive
// interface is applied (the Exclusive dependency); VPP may still have it
// in a bridge domain, which one dump of all domains shows: a domain that
// is not the agent's keeps it (*L2ModeConflictError, VPP untouched), one
// of the agent's lets VPP move it (a membership left behind). A
// cross-connect of the interface VPP has already is replaced, unless the
// interface is foreign (OBTAINED) and cross-connected elsewhere: that one
// is someone else's (*L2ModeConflictError).
func (p *Plugin) createXConnect(ctx context.Context, key string, x *vppl2.XConnectPair) (any, error) {
	rx, tx, rxForeign, err := p.xconnectIndexes(ctx, x)
	if err != nil {
		// The dependencies should have prevented this.
		return nil, fmt.Errorf("cross-connect %s: %w (no metadata of %s in the VPP connected now)", key, err, ifplugin.InterfaceDescriptorName)
	}
	if rxForeign {
		xcs, err := p.dumpXConnects(ctx)
		if err != nil {
			return nil, fmt.Errorf("cross-connect %s: %w", key, err)
		}
		if have, ok := xcs[rx]; ok && have != tx {
			return nil, &L2ModeConflictError{Interface: x.GetReceiveInterface(), Wanted: "cross-connected to " + x.GetTransmitInterface(), HolderXConnectTo: have}
		}
	}
	all, err := p.dumpBDs(ctx, noIndex)
	if err != nil {
		return nil, fmt.Errorf("cross-connect %s: %w", key, err)
	}
	for _, d := range all {
		if _, in := memberOf(d, rx); !in {
			continue
		}
		if !isOurTag(d.BdTag) {
			return nil, &L2ModeConflictError{Interface: x.GetReceiveInterface(), Wanted: "cross-connected to " + x.GetTransmitInterface(), HolderID: d.BdID, HolderTag: d.BdTag}
		}
		p.log.Info("interface left behind in a bridge domain of the agent's; VPP moves it into the cross-connect", "interface", x.GetReceiveInterface(), "from", d.BdTag, "from_bd_id", d.BdID)
	}
	err = p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
		_, err := c.SwInterfaceSetL2Xconnect(ctx, &l2.SwInterfaceSetL2Xconnect{
			RxSwIfIndex: interface_types.InterfaceIndex(rx), TxSwIfIndex: interface_types.InterfaceIndex(tx), Enable: true,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sw_interface_set_l2_xconnect (%s to %s, sw_if_index %d to %d): %w", x.GetReceiveInterface(), x.GetTransmitInterface(), rx, tx, err)
	}
	return nil, nil
}

// L2ModeConflictError is the refusal of a cross-connect whose receive
// interface VPP has in a bridge domain that is not the agent's: VPP keeps
// an interface in one L2 mode and would take it out of that domain, which
// the agent must not change. It is retriable: it goes away when the
// interface leaves that domain (the value is tried again on its retries
// and at every resync).
type L2ModeConflictError struct {
	Interface string
	// Wanted says what the refused value wanted ("cross-connected to if2").
	Wanted string
	// HolderID is the bd_id of the domain the interface is in, HolderTag
	// its tag (empty for most domains that are not the agent's); or, for a
	// foreign interface cross-connected by someone else,
	// HolderXConnectTo is the sw_if_index it is cross-connected to (0:
	// none; local0 is never a cross-connect's transmit interface).
	HolderID         uint32
	HolderTag        string
	HolderXConnectTo uint32
}

func (e *L2ModeConflictError) Error() string {
	holder := fmt.Sprintf("it is a member of bridge domain with bd_id %d (not the agent's)", e.HolderID)
	switch {
	case e.HolderXConnectTo != 0:
		holder = fmt.Sprintf("it is cross-connected to sw_if_index %d (not by the agent)", e.HolderXConnectTo)
	case e.HolderTag != "":
		holder = fmt.Sprintf("it is a member of bridge domain with bd_id %d, tag %q (not the agent's)", e.HolderID, e.HolderTag)
	}
	return fmt.Sprintf("interface %s not %s: %s (an interface is in one L2 mode: one bridge domain or one cross-connect)", e.Interface, e.Wanted, holder)
}

// dumpXConnects lists VPP's cross-connects: receive sw_if_index ->
// transmit sw_if_index.
func (p *Plugin) dumpXConnects(ctx context.Context) (map[uint32]uint32, error) {
	var details []*l2.L2XconnectDetails
	err := p.call(ctx, func(ctx context.Context, _ l2.RPCService, conn govppapi.Connection) (err error) {
		details, err = vppconn.Dump[*l2.L2XconnectDetails](ctx, conn, &l2.L2XconnectDump{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("l2_xconnect_dump: %w", err)
	}
	out := make(map[uint32]uint32, len(details))
	for _, d := range details {
		out[uint32(d.RxSwIfIndex)] = uint32(d.TxSwIfIndex)
	}
	return out, nil
}

// deleteXConnect takes the receive interface out of cross-connect mode
// (sw_interface_set_l2_xconnect with enable false, which puts it back in
// L3 mode whatever mode it is in), only when VPP has it cross-connected to
// the transmit interface: in a bridge domain by now, or cross-connected
// elsewhere, it is left alone. An interface already gone is success.
func (p *Plugin) deleteXConnect(ctx context.Context, key string, x *vppl2.XConnectPair, _ any) error {
	rx, tx, _, err := p.xconnectIndexes(ctx, x)
	if err != nil {
		p.log.Debug("cross-connect to delete: an interface is gone, and the cross-connect with it", "xconnect", key, "reason", err.Error())
		return nil
	}
	xcs, err := p.dumpXConnects(ctx)
	if err != nil {
		return fmt.Errorf("cross-connect %s: %w", key, err)
	}
	if have, ok := xcs[rx]; !ok || have != tx {
		p.log.Debug("cross-connect to delete: VPP does not have it (any more)", "xconnect", key)
		return nil
	}
	err = p.call(ctx, func(ctx context.Context, c l2.RPCService, _ govppapi.Connection) error {
		_, err := c.SwInterfaceSetL2Xconnect(ctx, &l2.SwInterfaceSetL2Xconnect{
			RxSwIfIndex: interface_types.InterfaceIndex(rx), TxSwIfIndex: interface_types.InterfaceIndex(tx), Enable: false,
		})
		return err
	})
	if err != nil && !vppconn.IsVPPError(err, govppapi.INVALID_SW_IF_INDEX) {
		return fmt.Errorf("sw_interface_set_l2_xconnect (%s out of its cross-connect, sw_if_index %d): %w", x.GetReceiveInterface(), rx, err)
	}
	return nil
}

// retrieveXConnects reports the cross-connects VPP has (l2_xconnect_dump)
// whose interfaces have logical names (see interfaceNames): a receive
// interface of the agent's in any cross-connect, a foreign (OBTAINED) one
// only in a cross-connect the configuration asks for (one someone else
// made is left alone); the transmit interface may be either. They are the
// agent's (origin FromNB): a full resync deletes those the configuration
// does not have. An expected value VPP has is reported as is.
func (p *Plugin) retrieveXConnects(ctx context.Context, correlate []api.TypedKV[*vppl2.XConnectPair, any]) ([]api.TypedKV[*vppl2.XConnectPair, any], error) {
	expected := map[string]*vppl2.XConnectPair{}
	var names []string
	for _, c := range correlate {
		if c.Value != nil {
			expected[c.Value.GetReceiveInterface()] = c.Value
			names = append(names, c.Value.GetReceiveInterface(), c.Value.GetTransmitInterface())
		}
	}
	xcs, err := p.dumpXConnects(ctx)
	if err != nil {
		return nil, err
	}
	if len(xcs) == 0 {
		return nil, nil
	}
	nameOf, err := p.interfaceNames(ctx, names)
	if err != nil {
		return nil, err
	}
	var out []api.TypedKV[*vppl2.XConnectPair, any]
	for rxIdx, txIdx := range xcs {
		rx, ok := nameOf[rxIdx]
		if !ok {
			continue
		}
		tx, ok := nameOf[txIdx]
		if !ok {
			p.log.Debug("retrieve: a cross-connect to an interface without a logical name is left alone", "receive_interface", rx.name, "tx_sw_if_index", txIdx)
			continue
		}
		v := &vppl2.XConnectPair{ReceiveInterface: rx.name, TransmitInterface: tx.name}
		exp := expected[rx.name]
		if rx.foreign && exp == nil {
			continue // someone else's interface, in someone else's cross-connect
		}
		if exp != nil && proto.Equal(exp, v) {
			v = exp
		}
		out = append(out, api.TypedKV[*vppl2.XConnectPair, any]{Key: models.VPPXConnect.KeyPrefix + rx.name, Value: v, Origin: api.FromNB})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// ifName is the logical name of an interface of VPP.
type ifName struct {
	name    string
	foreign bool // OBTAINED: not the agent's
}

// interfaceNames maps VPP's interfaces to logical names: those given and
// every interface of the lister (SetInterfaceLister), through their
// metadata, checked against VPP (one sw_interface_dump per refresh, shared
// with the other Retrieves): an index at which VPP has no interface of that
// name (tagged with it, as the agent's are, or named so, as foreign ones
// are) is left out, as the metadata of an interface deleted by someone
// else outlives it while a resync runs.
func (p *Plugin) interfaceNames(ctx context.Context, given []string) (map[uint32]ifName, error) {
	names := map[string]bool{}
	for _, n := range given {
		names[n] = true
	}
	if p.names != nil {
		for _, n := range p.names(ctx) {
			names[n] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	out := map[uint32]ifName{}
	for _, n := range sorted {
		md, ok := p.ifaces(ctx, n)
		if !ok {
			continue
		}
		if other, dup := out[md.SwIfIndex]; dup {
			p.log.Warn("retrieve: two interfaces claim one sw_if_index", "interfaces", []string{other.name, n}, "sw_if_index", md.SwIfIndex)
			continue
		}
		out[md.SwIfIndex] = ifName{name: n, foreign: md.Foreign}
	}
	if len(out) == 0 {
		return out, nil
	}
	list, err := vppcalls.ListInterfacesOnce(ctx, func(ctx context.Context) (details []*interfaces.SwInterfaceDetails, err error) {
		err = p.call(ctx, func(ctx context.Context, _ l2.RPCService, conn govppapi.Connection) (err error) {
			details, err = vppconn.Dump[*interfaces.SwInterfaceDetails](ctx, conn, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)})
			return err
		})
		return details, err
	})
	if err != nil {
		return nil, fmt.Errorf("sw_interface_dump (the interfaces of the metadata): %w", err)
	}
	inVPP := make(map[uint32]*vppcalls.Interface, len(list))
	for _, i := range list {
		inVPP[i.SwIfIndex] = i
	}
	for sw, n := range out {
		if i := inVPP[sw]; i == nil || (i.Tag != n.name && i.Name != n.name) {
			p.log.Info("retrieve: VPP has no interface of that name at the sw_if_index of its metadata (deleted by someone else?); its L2 settings are not looked for", "interface", n.name, "sw_if_index", sw)
			delete(out, sw)
		}
	}
	return out, nil
}

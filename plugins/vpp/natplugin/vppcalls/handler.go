package vppcalls

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	nat "go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// AreaName is the vppconn area of the handler's messages: VPP's nat plugin
// (nat44-ed).
const AreaName = "nat44"

// Area lists the messages of the handler, for the compatibility check at
// connect (vppconn.Manager.AddArea). It is optional: a VPP without the nat
// plugin is ready, and only NAT values fail, naming the messages it lacks.
func Area() vppconn.Area {
	return vppconn.Area{Name: AreaName, Optional: true, Messages: []govppapi.Message{
		&nat.Nat44ShowRunningConfig{}, &nat.Nat44ShowRunningConfigReply{},
		&nat.Nat44EdPluginEnableDisable{}, &nat.Nat44EdPluginEnableDisableReply{},
		&nat.Nat44ForwardingEnableDisable{}, &nat.Nat44ForwardingEnableDisableReply{},
		&nat.Nat44InterfaceAddDelFeature{}, &nat.Nat44InterfaceAddDelFeatureReply{},
		&nat.Nat44InterfaceDump{}, &nat.Nat44InterfaceDetails{},
		&nat.Nat44EdAddDelOutputInterface{}, &nat.Nat44EdAddDelOutputInterfaceReply{},
		&nat.Nat44EdOutputInterfaceGet{}, &nat.Nat44EdOutputInterfaceGetReply{}, &nat.Nat44EdOutputInterfaceDetails{},
		&nat.Nat44AddDelAddressRange{}, &nat.Nat44AddDelAddressRangeReply{},
		&nat.Nat44AddressDump{}, &nat.Nat44AddressDetails{},
		&nat.Nat44AddDelStaticMappingV2{}, &nat.Nat44AddDelStaticMappingV2Reply{},
		&nat.Nat44StaticMappingDump{}, &nat.Nat44StaticMappingDetails{},
		&nat.Nat44AddDelLbStaticMapping{}, &nat.Nat44AddDelLbStaticMappingReply{},
		&nat.Nat44LbStaticMappingDump{}, &nat.Nat44LbStaticMappingDetails{},
		&nat.Nat44AddDelIdentityMapping{}, &nat.Nat44AddDelIdentityMappingReply{},
		&nat.Nat44IdentityMappingDump{}, &nat.Nat44IdentityMappingDetails{},
	}}
}

// handler implements Handler over a vppconn.Manager.
type handler struct{ m *vppconn.Manager }

var _ Handler = (*handler)(nil)

// NewHandler returns the Handler calling VPP over m's connection.
func NewHandler(m *vppconn.Manager) Handler { return &handler{m: m} }

// call runs f with the connection of the area under the Manager's call
// deadline. Nothing is sent once ctx has ended: GoVPP would send the
// request and give up its reply, and VPP would carry it out unseen.
func (h *handler) call(ctx context.Context, f func(ctx context.Context, c nat.RPCService, conn govppapi.Connection) error) error {
	return h.m.Do(ctx, AreaName, func(ctx context.Context, conn govppapi.Connection) error {
		return f(ctx, nat.NewServiceClient(conn), conn)
	})
}

func dump[T govppapi.Message](ctx context.Context, h *handler, req govppapi.Message) ([]T, error) {
	var out []T
	err := h.call(ctx, func(ctx context.Context, _ nat.RPCService, conn govppapi.Connection) (err error) {
		out, err = vppconn.Dump[T](ctx, conn, req)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	return out, nil
}

func named(msg string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return nil
}

func (h *handler) Global(ctx context.Context) (Global, error) {
	var g Global
	err := h.call(ctx, func(ctx context.Context, c nat.RPCService, _ govppapi.Connection) error {
		r, err := c.Nat44ShowRunningConfig(ctx, &nat.Nat44ShowRunningConfig{})
		if err != nil {
			return err
		}
		// VPP keeps the session count of the last enable and sets it to 0
		// when the plugin is disabled.
		g = Global{Enabled: r.Sessions != 0, Forwarding: r.ForwardingEnabled}
		return nil
	})
	return g, named("nat44_show_running_config", err)
}

func (h *handler) Enable(ctx context.Context, enable bool) error {
	return named("nat44_ed_plugin_enable_disable", h.call(ctx, func(ctx context.Context, c nat.RPCService, _ govppapi.Connection) error {
		_, err := c.Nat44EdPluginEnableDisable(ctx, &nat.Nat44EdPluginEnableDisable{Enable: enable})
		return err
	}))
}

func (h *handler) SetForwarding(ctx context.Context, on bool) error {
	return named("nat44_forwarding_enable_disable", h.call(ctx, func(ctx context.Context, c nat.RPCService, _ govppapi.Connection) error {
		_, err := c.Nat44ForwardingEnableDisable(ctx, &nat.Nat44ForwardingEnableDisable{Enable: on})
		return err
	}))
}

func (h *handler) Interfaces(ctx context.Context) (map[uint32]InterfaceFeatures, error) {
	out := map[uint32]InterfaceFeatures{}
	list, err := dump[*nat.Nat44InterfaceDetails](ctx, h, &nat.Nat44InterfaceDump{})
	if err != nil {
		return nil, err
	}
	for _, d := range list {
		sw := uint32(d.SwIfIndex)
		f := out[sw]
		f.SwIfIndex = sw
		f.Inside = d.Flags&nat_types.NAT_IS_INSIDE != 0
		f.Outside = d.Flags&nat_types.NAT_IS_OUTSIDE != 0
		out[sw] = f
	}
	outputs, err := h.outputInterfaces(ctx)
	if err != nil {
		return nil, err
	}
	for _, sw := range outputs {
		f := out[sw]
		f.SwIfIndex, f.Output = sw, true
		out[sw] = f
	}
	return out, nil
}

// outputInterfaces reads the output interfaces: nat44_ed_output_interface_get
// is answered by details and then a reply, whose EAGAIN asks for another
// request from its cursor.
func (h *handler) outputInterfaces(ctx context.Context) ([]uint32, error) {
	var out []uint32
	err := h.call(ctx, func(ctx context.Context, _ nat.RPCService, conn govppapi.Connection) error {
		stream, err := conn.NewStream(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = stream.Close() }()
		cursor := uint32(0)
		for {
			if err := stream.SendMsg(&nat.Nat44EdOutputInterfaceGet{Cursor: cursor}); err != nil {
				return err
			}
			reply, err := recvOutputInterfaces(stream, &out)
			if err != nil {
				return err
			}
			if reply.Retval == int32(govppapi.EAGAIN) {
				cursor = reply.Cursor
				continue
			}
			return govppapi.RetvalToVPPApiError(reply.Retval)
		}
	})
	return out, named("nat44_ed_output_interface_get", err)
}

func recvOutputInterfaces(stream govppapi.Stream, out *[]uint32) (*nat.Nat44EdOutputInterfaceGetReply, error) {
	for {
		m, err := stream.RecvMsg()
		if err != nil {
			return nil, err
		}
		switch x := m.(type) {
		case *nat.Nat44EdOutputInterfaceDetails:
			*out = append(*out, uint32(x.SwIfIndex))
		case *nat.Nat44EdOutputInterfaceGetReply:
			return x, nil
		default:
			return nil, fmt.Errorf("unexpected %s", m.GetMessageName())
		}
	}
}

func (h *handler) SetFeature(ctx context.Context, swIfIndex uint32, f Feature, add bool) error {
	if f == Output {
		return named("nat44_ed_add_del_output_interface", h.call(ctx, func(ctx context.Context, c nat.RPCService, _ govppapi.Connection) error {
			_, err := c.Nat44EdAddDelOutputInterface(ctx, &nat.Nat44EdAddDelOutputInterface{
				IsAdd: add, SwIfIndex: interface_types.InterfaceIndex(swIfIndex),
			})
			return err
		}))
	}
	var flags nat_types.NatConfigFlags
	if f == Inside {
		flags = nat_types.NAT_IS_INSIDE
	}
	return named("nat44_interface_add_del_feature", h.call(ctx, func(ctx context.Context, c nat.RPCService, _ govppapi.Connection) error {
		_, err := c.Nat44InterfaceAddDelFeature(ctx, &nat.Nat44InterfaceAddDelFeature{
			IsAdd: add, Flags: flags, SwIfIndex: interface_types.InterfaceIndex(swIfIndex),
		})
		return err
	}))
}

func ip4(a netip.Addr) ip_types.IP4Address {
	if a.Is4() {
		return a.As4()
	}
	return ip_types.IP4Address{}
}

func fromIP4(a ip_types.IP4Address) netip.Addr { return netip.AddrFrom4(a) }

func (h *handler) Addresses(ctx context.Context) ([]Address, error) {
	list, err := dump[*nat.Nat44AddressDetails](ctx, h, &nat.Nat44AddressDump{})
	if err != nil {
		return nil, err
	}
	out := make([]Address, 0, len(list))
	for _, d := range list {
		out = append(out, Address{IP: fromIP4(d.IPAddress), VrfID: d.VrfID, TwiceNAT: d.Flags&nat_types.NAT_IS_TWICE_NAT != 0})
	}
	return out, nil
}

func (h *handler) AddDelAddresses(ctx context.Context, first, last netip.Addr, vrfID uint32, twiceNAT, add bool) error {
	var flags nat_types.NatConfigFlags
	if twiceNAT {
		flags = nat_types.NAT_IS_TWICE_NAT
	}
	return named("nat44_add_del_address_range", h.call(ctx, func(ctx context.Context, c nat.RPCService, _ govppapi.Connection) error {
		_, err := c.Nat44AddDelAddressRange(ctx, &nat.Nat44AddDelAddressRange{
			FirstIPAddress: ip4(first), LastIPAddress: ip4(last), VrfID: vrfID, IsAdd: add, Flags: flags,
		})
		return err
	}))
}

func mappingFlags(m StaticMapping) nat_types.NatConfigFlags {
	var f nat_types.NatConfigFlags
	if m.TwiceNAT {
		f |= nat_types.NAT_IS_TWICE_NAT
	}
	if m.SelfTwiceNAT {
		f |= nat_types.NAT_IS_SELF_TWICE_NAT
	}
	if m.Out2InOnly {
		f |= nat_types.NAT_IS_OUT2IN_ONLY
	}
	if m.AddrOnly {
		f |= nat_types.NAT_IS_ADDR_ONLY
	}
	return f
}

func (h *handler) StaticMappings(ctx context.Context) ([]StaticMapping, error) {
	list, err := dump[*nat.Nat44StaticMappingDetails](ctx, h, &nat.Nat44StaticMappingDump{})
	if err != nil {
		return nil, err
	}
	out := make([]StaticMapping, 0, len(list))
	for _, d := range list {
		m := StaticMapping{
			Tag: d.Tag, ExternalSwIfIndex: uint32(d.ExternalSwIfIndex), ExternalPort: d.ExternalPort, Protocol: d.Protocol,
			AddrOnly: d.Flags&nat_types.NAT_IS_ADDR_ONLY != 0, TwiceNAT: d.Flags&nat_types.NAT_IS_TWICE_NAT != 0,
			SelfTwiceNAT: d.Flags&nat_types.NAT_IS_SELF_TWICE_NAT != 0, Out2InOnly: d.Flags&nat_types.NAT_IS_OUT2IN_ONLY != 0,
			Locals: []Local{{IP: fromIP4(d.LocalIPAddress), Port: d.LocalPort, VrfID: d.VrfID}},
		}
		if m.ExternalSwIfIndex == NoIndex {
			m.ExternalIP = fromIP4(d.ExternalIPAddress)
		}
		out = append(out, m)
	}
	lbs, err := dump[*nat.Nat44LbStaticMappingDetails](ctx, h, &nat.Nat44LbStaticMappingDump{})
	if err != nil {
		return nil, err
	}
	for _, d := range lbs {
		m := StaticMapping{
			Tag: d.Tag, ExternalSwIfIndex: NoIndex, ExternalIP: fromIP4(d.ExternalAddr), ExternalPort: d.ExternalPort,
			Protocol: d.Protocol, TwiceNAT: d.Flags&nat_types.NAT_IS_TWICE_NAT != 0,
			SelfTwiceNAT: d.Flags&nat_types.NAT_IS_SELF_TWICE_NAT != 0, Out2InOnly: d.Flags&nat_types.NAT_IS_OUT2IN_ONLY != 0,
			LB: true, Affinity: d.Affinity,
		}
		for _, l := range d.Locals {
			m.Locals = append(m.Locals, Local{IP: fromIP4(l.Addr), Port: l.Port, VrfID: l.VrfID, Probability: l.Probability})
		}
		out = append(out, m)
	}
	return out, nil
}

// errNoLocal refuses a mapping without a local endpoint.
var errNoLocal = errors.New("no local endpoint")

func (h *handler) AddDelStaticMapping(ctx context.Context, m StaticMapping, add bool) error {
	if len(m.Locals) == 0 {
		return fmt.Errorf("%s: %w", m, errNoLocal)
	}
	if m.LB {
		req := &nat.Nat44AddDelLbStaticMapping{
			IsAdd: add, Flags: mappingFlags(m) &^ nat_types.NAT_IS_ADDR_ONLY, ExternalAddr: ip4(m.ExternalIP),
			ExternalPort: m.ExternalPort, Protocol: m.Protocol, Tag: m.Tag,
		}
		if add {
			req.Affinity = m.Affinity
			for _, l := range m.Locals {
				req.Locals = append(req.Locals, nat.Nat44LbAddrPort{Addr: ip4(l.IP), Port: l.Port, Probability: l.Probability, VrfID: l.VrfID})
			}
			req.LocalNum = uint32(len(req.Locals))
		}
		return named("nat44_add_del_lb_static_mapping", h.call(ctx, func(ctx context.Context, c nat.RPCService, _ govppapi.Connection) error {
			_, err := c.Nat44AddDelLbStaticMapping(ctx, req)
			return err
		}))
	}
	l := m.Locals[0]
	req := &nat.Nat44AddDelStaticMappingV2{
		IsAdd: add, Flags: mappingFlags(m), LocalIPAddress: ip4(l.IP), ExternalIPAddress: ip4(m.ExternalIP),
		ExternalSwIfIndex: interface_types.InterfaceIndex(m.ExternalSwIfIndex), VrfID: l.VrfID, Tag: m.Tag,
	}
	if !m.AddrOnly {
		req.Protocol, req.LocalPort, req.ExternalPort = m.Protocol, l.Port, m.ExternalPort
	}
	if m.PoolIP.IsValid() {
		req.MatchPool, req.PoolIPAddress = true, ip4(m.PoolIP)
	}
	return named("nat44_add_del_static_mapping_v2", h.call(ctx, func(ctx context.Context, c nat.RPCService, _ govppapi.Connection) error {
		_, err := c.Nat44AddDelStaticMappingV2(ctx, req)
		return err
	}))
}

func (h *handler) IdentityMappings(ctx context.Context) ([]IdentityMapping, error) {
	list, err := dump[*nat.Nat44IdentityMappingDetails](ctx, h, &nat.Nat44IdentityMappingDump{})
	if err != nil {
		return nil, err
	}
	out := make([]IdentityMapping, 0, len(list))
	for _, d := range list {
		m := IdentityMapping{
			Tag: d.Tag, SwIfIndex: uint32(d.SwIfIndex), Port: d.Port, Protocol: d.Protocol,
			AddrOnly: d.Flags&nat_types.NAT_IS_ADDR_ONLY != 0, VrfID: d.VrfID,
		}
		if m.SwIfIndex == NoIndex {
			m.IP = fromIP4(d.IPAddress)
		}
		out = append(out, m)
	}
	return out, nil
}

func (h *handler) AddDelIdentityMapping(ctx context.Context, m IdentityMapping, add bool) error {
	req := &nat.Nat44AddDelIdentityMapping{
		IsAdd: add, IPAddress: ip4(m.IP), SwIfIndex: interface_types.InterfaceIndex(m.SwIfIndex), VrfID: m.VrfID, Tag: m.Tag,
	}
	if m.AddrOnly {
		req.Flags = nat_types.NAT_IS_ADDR_ONLY
	} else {
		req.Protocol, req.Port = m.Protocol, m.Port
	}
	return named("nat44_add_del_identity_mapping", h.call(ctx, func(ctx context.Context, c nat.RPCService, _ govppapi.Connection) error {
		_, err := c.Nat44AddDelIdentityMapping(ctx, req)
		return err
	}))
}

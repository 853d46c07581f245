package vppcalls

import (
	"context"
	"fmt"
	"net/netip"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/vxlan"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// VxlanAreaName: VXLAN tunnels (vxlan_plugin.so). Optional: a VPP without
// the plugin fails the VXLAN values only.
const VxlanAreaName = "vxlan"

func vxlanArea() vppconn.Area {
	return vppconn.Area{Name: VxlanAreaName, Optional: true, Messages: []govppapi.Message{
		&vxlan.VxlanAddDelTunnelV3{}, &vxlan.VxlanAddDelTunnelV3Reply{},
		&vxlan.VxlanTunnelV2Dump{}, &vxlan.VxlanTunnelV2Details{},
	}}
}

// VxlanParams create a VXLAN tunnel: an L2 (Ethernet) interface, VPP's
// default UDP ports (4789), VPP's instance number (vxlan_tunnel<n>).
type VxlanParams struct {
	Src, Dst netip.Addr // one IP version; Dst may be a multicast group
	VNI      uint32     // 24 bits
	EncapVrf uint32     // the table of Src's IP version must exist
	// McastSwIfIndex is the interface a multicast tunnel joins its group
	// on; NoIndex for a unicast tunnel.
	McastSwIfIndex uint32
}

// VxlanDetails of a VXLAN tunnel, as vxlan_tunnel_v2_dump reports it.
type VxlanDetails struct {
	Instance         uint32 // n of vxlan_tunnel<n>
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	VNI              uint32
	EncapVrf         uint32
	McastSwIfIndex   uint32 // NoIndex for a unicast tunnel
	DecapNextIndex   uint32
}

func ipAddress(a netip.Addr) ip_types.Address {
	var out ip_types.Address
	if a.Is4() {
		out.Af = ip_types.ADDRESS_IP4
		out.Un.SetIP4(a.As4())
	} else {
		out.Af = ip_types.ADDRESS_IP6
		out.Un.SetIP6(a.As16())
	}
	return out
}

func fromIPAddress(a ip_types.Address) netip.Addr {
	if a.Af == ip_types.ADDRESS_IP6 {
		return netip.AddrFrom16(a.Un.GetIP6())
	}
	return netip.AddrFrom4(a.Un.GetIP4())
}

func (h *handler) CreateVxlan(ctx context.Context, p VxlanParams) (uint32, error) {
	var idx uint32
	err := h.callIn(ctx, VxlanAreaName, "vxlan_add_del_tunnel_v3", func(ctx context.Context, c govppapi.Connection) error {
		r, err := vxlan.NewServiceClient(c).VxlanAddDelTunnelV3(ctx, &vxlan.VxlanAddDelTunnelV3{
			IsAdd:          true,
			Instance:       NoIndex, // VPP's choice (GoVPP does not apply the default ~0)
			SrcAddress:     ipAddress(p.Src),
			DstAddress:     ipAddress(p.Dst),
			McastSwIfIndex: interface_types.InterfaceIndex(p.McastSwIfIndex),
			EncapVrfID:     p.EncapVrf,
			DecapNextIndex: NoIndex, // l2-input: an Ethernet tunnel
			Vni:            p.VNI,
		})
		if err == nil {
			idx = uint32(r.SwIfIndex)
		}
		return err
	})
	switch {
	case isVPPError(err, govppapi.TUNNEL_EXIST):
		err = h.vxlanTakenError(ctx, p, err)
	case isVPPError(err, govppapi.NO_SUCH_FIB):
		err = fmt.Errorf("the encap VRF %d has no %s table in VPP: %w", p.EncapVrf, ipVersion(p.Src), err)
	}
	return idx, err
}

func ipVersion(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// vxlanTakenError explains VPP's TUNNEL_EXIST: it names the tunnel in the
// way. VPP keys a tunnel by its destination, VNI and encap VRF, and by its
// source too for an IPv4 unicast tunnel only: two IPv6 tunnels (or two IPv4
// multicast ones) that differ only in their source are one to VPP. The VPP
// error stays in the chain; when the dump fails it is returned as it is.
func (h *handler) vxlanTakenError(ctx context.Context, p VxlanParams, err error) error {
	all, derr := h.dumpVxlan(ctx, NoIndex)
	if derr != nil {
		return err
	}
	for idx, d := range all {
		sameSrc := d.Src == p.Src || !p.Src.Is4() || p.Dst.IsMulticast()
		if sameSrc && d.Dst == p.Dst && d.VNI&maxVNI == p.VNI&maxVNI && d.EncapVrf == p.EncapVrf && d.SrcPort == vxlanPort {
			what := fmt.Sprintf("vxlan_tunnel%d", d.Instance)
			if i, gerr := h.GetInterface(ctx, idx); gerr == nil && i != nil {
				what = i.Name
				if i.Tag != "" {
					what += fmt.Sprintf(" (tag %s)", i.Tag)
				}
			}
			return fmt.Errorf("VPP's VXLAN tunnel %s (from %s to %s, VNI %d, encap VRF %d) is in the way: %w", what, d.Src, d.Dst, d.VNI, d.EncapVrf, err)
		}
	}
	return err
}

// vxlanPort is VPP's default UDP port of VXLAN (IPv4 and IPv6), which the
// agent's tunnels use.
const vxlanPort = 4789

// maxVNI is the largest VXLAN Network Identifier (24 bits): VPP keys a
// tunnel by the VNI's low 24 bits.
const maxVNI = 1<<24 - 1

// DeleteVxlan deletes the VXLAN tunnel at idx: VPP deletes a tunnel by its
// key (ends, VNI, encap VRF, port), which is read from VPP first, so that
// the tunnel deleted is the one at idx whatever the configuration says. An
// index without a tunnel (gone) is a success.
func (h *handler) DeleteVxlan(ctx context.Context, idx uint32) error {
	all, err := h.dumpVxlan(ctx, idx)
	if err != nil {
		return err
	}
	d, ok := all[idx]
	if !ok {
		return nil
	}
	return h.callIn(ctx, VxlanAreaName, "vxlan_add_del_tunnel_v3", func(ctx context.Context, c govppapi.Connection) error {
		_, err := vxlan.NewServiceClient(c).VxlanAddDelTunnelV3(ctx, &vxlan.VxlanAddDelTunnelV3{
			IsAdd: false, Instance: NoIndex,
			SrcAddress: ipAddress(d.Src), DstAddress: ipAddress(d.Dst), SrcPort: d.SrcPort, DstPort: d.DstPort,
			McastSwIfIndex: interface_types.InterfaceIndex(d.McastSwIfIndex), EncapVrfID: d.EncapVrf,
			DecapNextIndex: d.DecapNextIndex, Vni: d.VNI,
		})
		switch {
		case isVPPError(err, govppapi.NO_SUCH_ENTRY):
			return nil // deleted meanwhile
		case isVPPError(err, govppapi.INVALID_SW_IF_INDEX) && d.McastSwIfIndex != NoIndex:
			return fmt.Errorf("VPP refuses to delete the multicast tunnel while its multicast interface (sw_if_index %d) is gone: %w", d.McastSwIfIndex, err)
		}
		return err
	})
}

// dumpVxlan returns the VXLAN tunnels by sw_if_index: every tunnel (idx
// NoIndex) or the one at idx (none when idx is no tunnel).
func (h *handler) dumpVxlan(ctx context.Context, idx uint32) (map[uint32]*VxlanDetails, error) {
	out := map[uint32]*VxlanDetails{}
	err := h.callIn(ctx, VxlanAreaName, "vxlan_tunnel_v2_dump", func(ctx context.Context, c govppapi.Connection) error {
		s, err := vxlan.NewServiceClient(c).VxlanTunnelV2Dump(ctx, &vxlan.VxlanTunnelV2Dump{SwIfIndex: ifIndex(idx)})
		if err != nil {
			return err
		}
		ds, err := recvAll(s)
		for _, d := range ds {
			out[uint32(d.SwIfIndex)] = &VxlanDetails{
				Instance: d.Instance, Src: fromIPAddress(d.SrcAddress), Dst: fromIPAddress(d.DstAddress),
				SrcPort: d.SrcPort, DstPort: d.DstPort, VNI: d.Vni, EncapVrf: d.EncapVrfID,
				McastSwIfIndex: uint32(d.McastSwIfIndex), DecapNextIndex: d.DecapNextIndex,
			}
		}
		return err
	})
	return out, err
}

// addVxlanDetails marks the VXLAN tunnels of a dump (byIdx) with their
// details. A VPP without the vxlan plugin has none.
func (h *handler) addVxlanDetails(ctx context.Context, byIdx map[uint32]*Interface) error {
	all, err := h.dumpVxlan(ctx, NoIndex)
	if vppconn.IsIncompatible(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for idx, d := range all {
		if i := byIdx[idx]; i != nil {
			i.Kind, i.Vxlan = KindVxlan, d
		}
	}
	return nil
}

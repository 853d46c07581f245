package vpptest

import (
	"context"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/vxlan"
)

// DumpVxlans returns VPP's VXLAN tunnels by sw_if_index
// (vxlan_tunnel_v2_dump).
func (v *VPP) DumpVxlans() map[uint32]*vxlan.VxlanTunnelV2Details {
	v.t.Helper()
	out := map[uint32]*vxlan.VxlanTunnelV2Details{}
	for _, d := range dump[*vxlan.VxlanTunnelV2Details](v, &vxlan.VxlanTunnelV2Dump{SwIfIndex: interface_types.InterfaceIndex(NoIndex)}) {
		out[uint32(d.SwIfIndex)] = d
	}
	return out
}

// deleteVxlan is the vxlan_add_del_tunnel_v3 call that deletes the tunnel
// d reports: VPP deletes a tunnel by its key, not its index.
func deleteVxlan(d *vxlan.VxlanTunnelV2Details) func(ctx context.Context, conn api.Connection) error {
	return func(ctx context.Context, conn api.Connection) error {
		_, err := vxlan.NewServiceClient(conn).VxlanAddDelTunnelV3(ctx, &vxlan.VxlanAddDelTunnelV3{
			IsAdd: false, Instance: NoIndex, SrcAddress: d.SrcAddress, DstAddress: d.DstAddress,
			SrcPort: d.SrcPort, DstPort: d.DstPort, McastSwIfIndex: d.McastSwIfIndex,
			EncapVrfID: d.EncapVrfID, DecapNextIndex: d.DecapNextIndex, Vni: d.Vni,
		})
		return err
	}
}

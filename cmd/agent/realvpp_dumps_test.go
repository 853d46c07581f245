package main

import (
	"context"
	"fmt"
	"slices"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/vxlan"
	"go.fd.io/govpp/core"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// What the real VPP's binary-API dumps report of VRF tables, L2
// cross-connects, the L2 FIB and VXLAN tunnels, as sorted strings naming
// interfaces by sw_if_index.

// vrfTables are VPP's IP tables but table 0, "<id> ipv4|ipv6 <name>"
// (ip_table_dump).
func (v *e2eVPP) vrfTables() []string {
	v.t.Helper()
	var out []string
	v.dump(func(ctx context.Context, conn *core.Connection) error {
		details, err := vppconn.Dump[*ip.IPTableDetails](ctx, conn, &ip.IPTableDump{})
		for _, d := range details {
			if d.Table.TableID == 0 {
				continue
			}
			family := "ipv4"
			if d.Table.IsIP6 {
				family = "ipv6"
			}
			out = append(out, fmt.Sprintf("%d %s %s", d.Table.TableID, family, d.Table.Name))
		}
		return err
	})
	slices.Sort(out)
	return out
}

// routesOfTable are the routes of an IPv4 table, "<prefix> via <next hop>"
// for those with a next hop but VPP's host routes of its neighbours (their
// next hop is their prefix) (ip_route_dump).
func (v *e2eVPP) routesOfTable(table uint32) []string {
	v.t.Helper()
	var out []string
	v.dump(func(ctx context.Context, conn *core.Connection) error {
		details, err := vppconn.Dump[*ip.IPRouteDetails](ctx, conn, &ip.IPRouteDump{Table: ip.IPTable{TableID: table}})
		for _, d := range details {
			for _, p := range d.Route.Paths {
				nh := p.Nh.Address.GetIP4()
				via := fmt.Sprintf("%d.%d.%d.%d", nh[0], nh[1], nh[2], nh[3])
				if nh != [4]byte{} && d.Route.Prefix.String() != via+"/32" {
					out = append(out, fmt.Sprintf("%s via %s", d.Route.Prefix, via))
				}
			}
		}
		return err
	})
	slices.Sort(out)
	return out
}

// interfaceTable is the IPv4 or IPv6 table of an interface
// (sw_interface_get_table).
func (v *e2eVPP) interfaceTable(swIfIndex uint32, ipv6 bool) uint32 {
	v.t.Helper()
	var table uint32
	v.dump(func(ctx context.Context, conn *core.Connection) error {
		r, err := interfaces.NewServiceClient(conn).SwInterfaceGetTable(ctx, &interfaces.SwInterfaceGetTable{SwIfIndex: interface_types.InterfaceIndex(swIfIndex), IsIPv6: ipv6})
		if err == nil {
			table = r.VrfID
		}
		return err
	})
	return table
}

// xconnects are VPP's L2 cross-connects, "<rx> -> <tx>" (l2_xconnect_dump).
func (v *e2eVPP) xconnects() []string {
	v.t.Helper()
	var out []string
	v.dump(func(ctx context.Context, conn *core.Connection) error {
		details, err := vppconn.Dump[*l2.L2XconnectDetails](ctx, conn, &l2.L2XconnectDump{})
		for _, d := range details {
			out = append(out, fmt.Sprintf("%d -> %d", d.RxSwIfIndex, d.TxSwIfIndex))
		}
		return err
	})
	slices.Sort(out)
	return out
}

// staticFIB are the static entries of VPP's L2 FIB, "<bd> <mac> -> <sw>",
// but those VPP makes of BVIs' MACs (l2_fib_table_dump of every bridge
// domain).
func (v *e2eVPP) staticFIB() []string {
	v.t.Helper()
	var out []string
	v.dump(func(ctx context.Context, conn *core.Connection) error {
		details, err := vppconn.Dump[*l2.L2FibTableDetails](ctx, conn, &l2.L2FibTableDump{BdID: ^uint32(0)})
		for _, d := range details {
			if d.StaticMac && !d.BviMac {
				out = append(out, fmt.Sprintf("%d %s -> %d", d.BdID, d.Mac, d.SwIfIndex))
			}
		}
		return err
	})
	slices.Sort(out)
	return out
}

// vxlanTunnels are VPP's VXLAN tunnels, "<sw> <src> -> <dst> vni <vni>
// encap-vrf <vrf>" (vxlan_tunnel_v2_dump).
func (v *e2eVPP) vxlanTunnels() []string {
	v.t.Helper()
	var out []string
	v.dump(func(ctx context.Context, conn *core.Connection) error {
		details, err := vppconn.Dump[*vxlan.VxlanTunnelV2Details](ctx, conn, &vxlan.VxlanTunnelV2Dump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
		for _, d := range details {
			out = append(out, fmt.Sprintf("%d %s -> %s vni %d encap-vrf %d", d.SwIfIndex, d.SrcAddress, d.DstAddress, d.Vni, d.EncapVrfID))
		}
		return err
	})
	slices.Sort(out)
	return out
}

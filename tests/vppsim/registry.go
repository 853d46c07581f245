package vppsim

import (
	"cmp"
	"fmt"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/af_packet"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/memif"
	nat "go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/binapi/vxlan"
)

// call is the context of one request being handled (with Sim.mu held).
type call struct {
	s   *Sim
	st  *state
	cl  *client
	ctx uint32
}

// msgDef describes one request the simulator serves.
type msgDef struct {
	name   string
	req    api.Message
	reply  api.Message   // nil for dumps
	others []api.Message // details and events it produces
	handle func(*call, api.Message) []api.Message
}

// rpc defines a request answered by one reply.
func rpc[T api.Message](req T, reply api.Message, fn func(*call, T) api.Message, others ...api.Message) *msgDef {
	return &msgDef{
		name: req.GetMessageName(), req: req, reply: reply, others: others,
		handle: func(c *call, m api.Message) []api.Message { return []api.Message{fn(c, m.(T))} },
	}
}

// dump defines a dump answered by details (GoVPP ends it with control_ping).
func dump[T api.Message](req T, details api.Message, fn func(*call, T) []api.Message) *msgDef {
	return &msgDef{
		name: req.GetMessageName(), req: req, others: []api.Message{details},
		handle: func(c *call, m api.Message) []api.Message { return fn(c, m.(T)) },
	}
}

// definitions lists every served request, in message-table order.
func definitions() []*msgDef {
	return []*msgDef{
		// memclnt
		rpc(new(memclnt.SockclntCreate), new(memclnt.SockclntCreateReply), sockclntCreate),
		rpc(new(memclnt.SockclntDelete), new(memclnt.SockclntDeleteReply), sockclntDelete),
		rpc(new(memclnt.MemclntKeepalive), new(memclnt.MemclntKeepaliveReply), memclntKeepalive),
		rpc(new(memclnt.ControlPing), new(memclnt.ControlPingReply), controlPing),
		// vpe
		rpc(new(vpe.ShowVersion), new(vpe.ShowVersionReply), showVersion),
		rpc(new(vpe.ShowVpeSystemTime), new(vpe.ShowVpeSystemTimeReply), showVpeSystemTime),
		// interface
		dump(new(interfaces.SwInterfaceDump), new(interfaces.SwInterfaceDetails), swInterfaceDump),
		rpc(new(interfaces.SwInterfaceSetFlags), new(interfaces.SwInterfaceSetFlagsReply), swInterfaceSetFlags),
		rpc(new(interfaces.SwInterfaceSetMtu), new(interfaces.SwInterfaceSetMtuReply), swInterfaceSetMtu),
		rpc(new(interfaces.HwInterfaceSetMtu), new(interfaces.HwInterfaceSetMtuReply), hwInterfaceSetMtu),
		rpc(new(interfaces.SwInterfaceSetMacAddress), new(interfaces.SwInterfaceSetMacAddressReply), swInterfaceSetMacAddress),
		rpc(new(interfaces.SwInterfaceGetMacAddress), new(interfaces.SwInterfaceGetMacAddressReply), swInterfaceGetMacAddress),
		rpc(new(interfaces.SwInterfaceTagAddDel), new(interfaces.SwInterfaceTagAddDelReply), swInterfaceTagAddDel),
		rpc(new(interfaces.SwInterfaceAddDelAddress), new(interfaces.SwInterfaceAddDelAddressReply), swInterfaceAddDelAddress),
		rpc(new(interfaces.SwInterfaceSetUnnumbered), new(interfaces.SwInterfaceSetUnnumberedReply), swInterfaceSetUnnumbered),
		rpc(new(interfaces.SwInterfaceSetTable), new(interfaces.SwInterfaceSetTableReply), swInterfaceSetTable),
		rpc(new(interfaces.SwInterfaceGetTable), new(interfaces.SwInterfaceGetTableReply), swInterfaceGetTable),
		rpc(new(interfaces.CreateLoopback), new(interfaces.CreateLoopbackReply), createLoopback),
		rpc(new(interfaces.CreateLoopbackInstance), new(interfaces.CreateLoopbackInstanceReply), createLoopbackInstance),
		rpc(new(interfaces.DeleteLoopback), new(interfaces.DeleteLoopbackReply), deleteLoopback),
		rpc(new(interfaces.CreateSubif), new(interfaces.CreateSubifReply), createSubif),
		rpc(new(interfaces.CreateVlanSubif), new(interfaces.CreateVlanSubifReply), createVlanSubif),
		rpc(new(interfaces.DeleteSubif), new(interfaces.DeleteSubifReply), deleteSubif),
		rpc(new(interfaces.WantInterfaceEvents), new(interfaces.WantInterfaceEventsReply), wantInterfaceEvents,
			new(interfaces.SwInterfaceEvent)),
		// ip
		dump(new(ip.IPAddressDump), new(ip.IPAddressDetails), ipAddressDump),
		dump(new(ip.IPUnnumberedDump), new(ip.IPUnnumberedDetails), ipUnnumberedDump),
		rpc(new(ip.IPTableAddDel), new(ip.IPTableAddDelReply), ipTableAddDel),
		dump(new(ip.IPTableDump), new(ip.IPTableDetails), ipTableDump),
		rpc(new(ip.IPRouteAddDel), new(ip.IPRouteAddDelReply), ipRouteAddDel),
		rpc(new(ip.IPRouteAddDelV2), new(ip.IPRouteAddDelV2Reply), ipRouteAddDelV2),
		dump(new(ip.IPRouteDump), new(ip.IPRouteDetails), ipRouteDump),
		dump(new(ip.IPRouteV2Dump), new(ip.IPRouteV2Details), ipRouteV2Dump),
		// ip_neighbor
		rpc(new(ip_neighbor.IPNeighborAddDel), new(ip_neighbor.IPNeighborAddDelReply), ipNeighborAddDel),
		dump(new(ip_neighbor.IPNeighborDump), new(ip_neighbor.IPNeighborDetails), ipNeighborDump),
		// l2
		rpc(new(l2.BridgeDomainAddDel), new(l2.BridgeDomainAddDelReply), bridgeDomainAddDel),
		rpc(new(l2.BridgeDomainAddDelV2), new(l2.BridgeDomainAddDelV2Reply), bridgeDomainAddDelV2),
		dump(new(l2.BridgeDomainDump), new(l2.BridgeDomainDetails), bridgeDomainDump),
		rpc(new(l2.SwInterfaceSetL2Bridge), new(l2.SwInterfaceSetL2BridgeReply), swInterfaceSetL2Bridge),
		rpc(new(l2.BdIPMacAddDel), new(l2.BdIPMacAddDelReply), bdIPMacAddDel),
		dump(new(l2.BdIPMacDump), new(l2.BdIPMacDetails), bdIPMacDump),
		rpc(new(l2.BridgeFlags), new(l2.BridgeFlagsReply), bridgeFlags),
		rpc(new(l2.BridgeDomainSetMacAge), new(l2.BridgeDomainSetMacAgeReply), bridgeDomainSetMacAge),
		// l2: cross-connects and the L2 FIB (h_l2x.go)
		rpc(new(l2.SwInterfaceSetL2Xconnect), new(l2.SwInterfaceSetL2XconnectReply), swInterfaceSetL2Xconnect),
		dump(new(l2.L2XconnectDump), new(l2.L2XconnectDetails), l2XconnectDump),
		rpc(new(l2.L2fibAddDel), new(l2.L2fibAddDelReply), l2fibAddDel),
		dump(new(l2.L2FibTableDump), new(l2.L2FibTableDetails), l2FibTableDump),
		// af_packet
		rpc(new(af_packet.AfPacketCreate), new(af_packet.AfPacketCreateReply), afPacketCreate),
		rpc(new(af_packet.AfPacketCreateV2), new(af_packet.AfPacketCreateV2Reply), afPacketCreateV2),
		rpc(new(af_packet.AfPacketCreateV3), new(af_packet.AfPacketCreateV3Reply), afPacketCreateV3),
		rpc(new(af_packet.AfPacketDelete), new(af_packet.AfPacketDeleteReply), afPacketDelete),
		dump(new(af_packet.AfPacketDump), new(af_packet.AfPacketDetails), afPacketDump),
		// memif
		rpc(new(memif.MemifSocketFilenameAddDel), new(memif.MemifSocketFilenameAddDelReply), memifSocketFilenameAddDel),
		rpc(new(memif.MemifSocketFilenameAddDelV2), new(memif.MemifSocketFilenameAddDelV2Reply), memifSocketFilenameAddDelV2),
		dump(new(memif.MemifSocketFilenameDump), new(memif.MemifSocketFilenameDetails), memifSocketFilenameDump),
		rpc(new(memif.MemifCreate), new(memif.MemifCreateReply), memifCreate),
		rpc(new(memif.MemifCreateV2), new(memif.MemifCreateV2Reply), memifCreateV2),
		rpc(new(memif.MemifDelete), new(memif.MemifDeleteReply), memifDelete),
		dump(new(memif.MemifDump), new(memif.MemifDetails), memifDump),
		// tapv2
		rpc(new(tapv2.TapCreateV2), new(tapv2.TapCreateV2Reply), tapCreateV2),
		rpc(new(tapv2.TapCreateV3), new(tapv2.TapCreateV3Reply), tapCreateV3),
		rpc(new(tapv2.TapDeleteV2), new(tapv2.TapDeleteV2Reply), tapDeleteV2),
		dump(new(tapv2.SwInterfaceTapV2Dump), new(tapv2.SwInterfaceTapV2Details), swInterfaceTapV2Dump),
		// acl (h_acl.go)
		rpc(new(acl.ACLAddReplace), new(acl.ACLAddReplaceReply), aclAddReplace),
		rpc(new(acl.ACLDel), new(acl.ACLDelReply), aclDel),
		dump(new(acl.ACLDump), new(acl.ACLDetails), aclDump),
		rpc(new(acl.ACLInterfaceAddDel), new(acl.ACLInterfaceAddDelReply), aclInterfaceAddDel),
		rpc(new(acl.ACLInterfaceSetACLList), new(acl.ACLInterfaceSetACLListReply), aclInterfaceSetACLList),
		dump(new(acl.ACLInterfaceListDump), new(acl.ACLInterfaceListDetails), aclInterfaceListDump),
		rpc(new(acl.MacipACLAdd), new(acl.MacipACLAddReply), macipACLAdd),
		rpc(new(acl.MacipACLAddReplace), new(acl.MacipACLAddReplaceReply), macipACLAddReplace),
		rpc(new(acl.MacipACLDel), new(acl.MacipACLDelReply), macipACLDel),
		dump(new(acl.MacipACLDump), new(acl.MacipACLDetails), macipACLDump),
		rpc(new(acl.MacipACLInterfaceAddDel), new(acl.MacipACLInterfaceAddDelReply), macipACLInterfaceAddDel),
		rpc(new(acl.MacipACLInterfaceGet), new(acl.MacipACLInterfaceGetReply), macipACLInterfaceGet),
		dump(new(acl.MacipACLInterfaceListDump), new(acl.MacipACLInterfaceListDetails), macipACLInterfaceListDump),
		// vxlan (h_vxlan.go)
		rpc(new(vxlan.VxlanAddDelTunnelV3), new(vxlan.VxlanAddDelTunnelV3Reply), vxlanAddDelTunnelV3),
		dump(new(vxlan.VxlanTunnelV2Dump), new(vxlan.VxlanTunnelV2Details), vxlanTunnelV2Dump),
		// nat44-ed (h_nat.go)
		rpc(new(nat.Nat44ShowRunningConfig), new(nat.Nat44ShowRunningConfigReply), nat44ShowRunningConfig),
		rpc(new(nat.Nat44EdPluginEnableDisable), new(nat.Nat44EdPluginEnableDisableReply), nat44EdPluginEnableDisable),
		rpc(new(nat.Nat44ForwardingEnableDisable), new(nat.Nat44ForwardingEnableDisableReply), nat44ForwardingEnableDisable),
		rpc(new(nat.Nat44InterfaceAddDelFeature), new(nat.Nat44InterfaceAddDelFeatureReply), nat44InterfaceAddDelFeature),
		dump(new(nat.Nat44InterfaceDump), new(nat.Nat44InterfaceDetails), nat44InterfaceDump),
		rpc(new(nat.Nat44EdAddDelOutputInterface), new(nat.Nat44EdAddDelOutputInterfaceReply), nat44EdAddDelOutputInterface),
		{ // details, then the reply (no control_ping)
			name: "nat44_ed_output_interface_get", req: new(nat.Nat44EdOutputInterfaceGet), reply: new(nat.Nat44EdOutputInterfaceGetReply),
			others: []api.Message{new(nat.Nat44EdOutputInterfaceDetails)},
			handle: func(c *call, m api.Message) []api.Message {
				return nat44EdOutputInterfaceGet(c, m.(*nat.Nat44EdOutputInterfaceGet))
			},
		},
		rpc(new(nat.Nat44AddDelAddressRange), new(nat.Nat44AddDelAddressRangeReply), nat44AddDelAddressRange),
		dump(new(nat.Nat44AddressDump), new(nat.Nat44AddressDetails), nat44AddressDump),
		rpc(new(nat.Nat44AddDelStaticMappingV2), new(nat.Nat44AddDelStaticMappingV2Reply), nat44AddDelStaticMappingV2),
		dump(new(nat.Nat44StaticMappingDump), new(nat.Nat44StaticMappingDetails), nat44StaticMappingDump),
		rpc(new(nat.Nat44AddDelLbStaticMapping), new(nat.Nat44AddDelLbStaticMappingReply), nat44AddDelLbStaticMapping),
		dump(new(nat.Nat44LbStaticMappingDump), new(nat.Nat44LbStaticMappingDetails), nat44LbStaticMappingDump),
		rpc(new(nat.Nat44AddDelIdentityMapping), new(nat.Nat44AddDelIdentityMappingReply), nat44AddDelIdentityMapping),
		dump(new(nat.Nat44IdentityMappingDump), new(nat.Nat44IdentityMappingDetails), nat44IdentityMappingDump),
	}
}

// fixedIDs are the ids VPP gives the memclnt messages (memclnt is always
// registered first). GoVPP's socket client hard-codes 15 for sockclnt_create.
var fixedIDs = map[string]uint16{
	"sockclnt_create":         15,
	"sockclnt_create_reply":   16,
	"sockclnt_delete":         17,
	"sockclnt_delete_reply":   18,
	"memclnt_keepalive":       21,
	"memclnt_keepalive_reply": 22,
	"control_ping":            23,
	"control_ping_reply":      24,
}

const firstDynamicID = 100

// msgTable is the message table announced in the handshake.
type msgTable struct {
	byID    map[uint16]*msgDef // served requests
	ids     map[string]uint16  // every message in the table, by name
	entries []memclnt.MessageTableEntry
}

func buildTable(omit []string) (*msgTable, error) {
	known := map[string]bool{}
	for _, d := range definitions() {
		for _, m := range append([]api.Message{d.req, d.reply}, d.others...) {
			if m != nil {
				known[m.GetMessageName()] = true
			}
		}
	}
	omitted := map[string]bool{}
	for _, n := range omit {
		switch {
		case n == "sockclnt_create" || n == "sockclnt_create_reply":
			return nil, fmt.Errorf("vppsim: %s cannot be omitted (the handshake needs it)", n)
		case !known[n]:
			return nil, fmt.Errorf("vppsim: cannot omit %q: not a message the simulator has (give the name without CRC)", n)
		}
		omitted[n] = true
	}
	t := &msgTable{byID: map[uint16]*msgDef{}, ids: map[string]uint16{}}
	next := uint16(firstDynamicID)
	add := func(m api.Message) uint16 {
		name := m.GetMessageName()
		if id, ok := t.ids[name]; ok {
			return id
		}
		id, ok := fixedIDs[name]
		if !ok {
			id = next
			next++
		}
		t.ids[name] = id
		t.entries = append(t.entries, memclnt.MessageTableEntry{Index: id, Name: name + "_" + m.GetCrcString()})
		return id
	}
	for _, d := range definitions() {
		if omitted[d.name] {
			continue // its reply and details go with it
		}
		t.byID[add(d.req)] = d
		for _, m := range append([]api.Message{d.reply}, d.others...) {
			if m != nil && !omitted[m.GetMessageName()] {
				add(m)
			}
		}
	}
	// VPP sends the table in hash order. GoVPP takes the id of the last entry
	// starting with "sockclnt_delete_" for its goodbye, which may be the
	// reply's; listing the table by descending id makes it sockclnt_delete's.
	slices.SortFunc(t.entries, func(a, b memclnt.MessageTableEntry) int { return cmp.Compare(b.Index, a.Index) })
	return t, nil
}

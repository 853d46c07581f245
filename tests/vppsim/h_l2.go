package vppsim

import (
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/l2"
)

const maxBdID = 1<<24 - 1 // L2_BD_ID_MAX

// bdAdd creates a bridge domain. id ~0 (v2 only) takes the lowest free id
// (VPP 25.10 takes a pseudo-random unused one); id 0 is VPP's default
// domain, which always exists (BD_ALREADY_EXISTS, as VPP answers).
func (st *state) bdAdd(id uint32, v2 bool, bd BridgeDomain) (uint32, int32) {
	switch {
	case id == NoIndex && v2:
		for id = 1; st.bds[id] != nil; id++ {
		}
	case id == 0:
		return id, errBdAlreadyExists
	case id > maxBdID:
		return id, errBdIDExceedMax
	case st.bds[id] != nil:
		return id, errBdAlreadyExists
	}
	bd.BdID, bd.BVI, bd.UUFwd = id, NoIndex, NoIndex
	st.bds[id] = &bd
	st.bdAdded(id)
	return id, 0
}

// bdDel deletes an empty bridge domain (BD_IN_USE while it has members).
func (st *state) bdDel(id uint32) int32 {
	bd := st.bds[id]
	switch {
	case id == 0:
		return errBdNotModifiable
	case bd == nil:
		return errNoSuchEntry
	case len(bd.Members) > 0:
		return errBdInUse
	}
	delete(st.bds, id)
	st.bdDeleted(id)
	return 0
}

// bridgeDomainAddDel: note that GoVPP leaves is_add false unless set, which
// asks for a delete.
func bridgeDomainAddDel(c *call, m *l2.BridgeDomainAddDel) api.Message {
	if !m.IsAdd {
		return &l2.BridgeDomainAddDelReply{Retval: c.st.bdDel(m.BdID)}
	}
	_, rv := c.st.bdAdd(m.BdID, false, BridgeDomain{
		Tag: m.BdTag, Flood: m.Flood, UuFlood: m.UuFlood, Forward: m.Forward, Learn: m.Learn,
		ArpTerm: m.ArpTerm, ArpUfwd: m.ArpUfwd, MacAge: m.MacAge,
	})
	return &l2.BridgeDomainAddDelReply{Retval: rv}
}

func bridgeDomainAddDelV2(c *call, m *l2.BridgeDomainAddDelV2) api.Message {
	if !m.IsAdd {
		return &l2.BridgeDomainAddDelV2Reply{Retval: c.st.bdDel(m.BdID), BdID: m.BdID}
	}
	id, rv := c.st.bdAdd(m.BdID, true, BridgeDomain{
		Tag: m.BdTag, Flood: m.Flood, UuFlood: m.UuFlood, Forward: m.Forward, Learn: m.Learn,
		ArpTerm: m.ArpTerm, ArpUfwd: m.ArpUfwd, MacAge: m.MacAge,
	})
	return &l2.BridgeDomainAddDelV2Reply{Retval: rv, BdID: id}
}

// bridgeDomainDump: as VPP 25.10's handler, a sw_if_index other than ~0
// returns nothing (the filter is not implemented: "UNIMPLEMENTED" in
// l2_api.c), whatever the bd_id; bd_id 0 or an unknown one returns nothing;
// bd_id ~0 lists all, another id that one. So GoVPP's zero values return
// nothing: set BdID and SwIfIndex to ~0 to list all. The members are the
// interfaces in the domain, its BVI included and its UU-fwd port not.
func bridgeDomainDump(c *call, m *l2.BridgeDomainDump) []api.Message {
	if uint32(m.SwIfIndex) != NoIndex || m.BdID == 0 {
		return nil
	}
	var ids []uint32
	switch {
	case m.BdID == NoIndex:
		for id := range c.st.bds {
			ids = append(ids, id)
		}
		slices.Sort(ids)
	case c.st.bds[m.BdID] != nil:
		ids = append(ids, m.BdID)
	}
	var out []api.Message
	for _, id := range ids {
		bd := c.st.bds[id]
		d := &l2.BridgeDomainDetails{
			BdID: id, Flood: bd.Flood, UuFlood: bd.UuFlood, Forward: bd.Forward, Learn: bd.Learn,
			ArpTerm: bd.ArpTerm, ArpUfwd: bd.ArpUfwd, MacAge: bd.MacAge, BdTag: bd.Tag,
			BviSwIfIndex: rvIndex(bd.BVI), UuFwdSwIfIndex: rvIndex(bd.UUFwd), NSwIfs: uint32(len(bd.Members)),
		}
		for _, mb := range bd.Members {
			d.SwIfDetails = append(d.SwIfDetails, l2.BridgeDomainSwIf{Context: c.ctx, SwIfIndex: rvIndex(mb.SwIfIndex), Shg: mb.SHG})
		}
		out = append(out, d)
	}
	return out
}

// swInterfaceSetL2Bridge, as VPP 25.10's handler: the port type must be
// normal, BVI or UU-fwd (INVALID_VALUE, also when disabling).
// enable=false (GoVPP's zero value) takes the interface out of whatever
// domain it is in: the bd_id is not looked at. enable puts it into the
// domain (out of the one it was in; VPP creates a missing domain with
// learn, forward, flood and uu-flood on). A BVI becomes the first member,
// other members are added last (bridge_domain_dump lists them so); a
// UU-fwd port becomes the domain's UU-fwd interface and is not a member. A
// BVI into a domain that has another one is refused with
// BD_ALREADY_HAS_BVI after the interface left the domain it was in: VPP
// undoes the old membership first, so that failed request does change
// something.
func swInterfaceSetL2Bridge(c *call, m *l2.SwInterfaceSetL2Bridge) api.Message {
	r := &l2.SwInterfaceSetL2BridgeReply{}
	i := c.st.get(uint32(m.RxSwIfIndex))
	if i == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	switch m.PortType {
	case l2.L2_API_PORT_TYPE_NORMAL, l2.L2_API_PORT_TYPE_BVI, l2.L2_API_PORT_TYPE_UU_FWD:
	default:
		r.Retval = errInvalidValue
		return r
	}
	if !m.Enable {
		c.st.removeFromBridge(i)
		return r
	}
	if m.BdID > maxBdID {
		r.Retval = errBdIDExceedMax
		return r
	}
	bd := c.st.bds[m.BdID]
	if bd == nil && m.BdID != 0 {
		c.st.bdAdd(m.BdID, false, BridgeDomain{Learn: true, Forward: true, Flood: true, UuFlood: true})
		bd = c.st.bds[m.BdID]
	}
	c.st.removeFromBridge(i)
	if bd != nil && m.PortType == l2.L2_API_PORT_TYPE_BVI && bd.BVI != NoIndex {
		r.Retval = errBdAlreadyHasBvi
		return r
	}
	c.st.addToBridge(i, m.BdID, m.PortType, m.Shg)
	if bd == nil {
		return r
	}
	switch m.PortType {
	case l2.L2_API_PORT_TYPE_UU_FWD:
		bd.Members = slices.DeleteFunc(bd.Members, func(mb BridgeMember) bool { return mb.SwIfIndex == i.SwIfIndex })
	case l2.L2_API_PORT_TYPE_BVI: // first, the others in the order they joined
		last := len(bd.Members) - 1
		bd.Members = append([]BridgeMember{bd.Members[last]}, bd.Members[:last]...)
	}
	return r
}

// bdIPMacAddDel adds (or re-points) an ARP-termination entry; the domain must
// exist (NO_SUCH_ENTRY; bd 0: BD_NOT_MODIFIABLE). A delete must name the
// entry's MAC: deleting a missing entry, or one with another MAC, is
// UNSPECIFIED and deletes nothing (VPP's bd_add_del_ip_mac).
func bdIPMacAddDel(c *call, m *l2.BdIPMacAddDel) api.Message {
	r := &l2.BdIPMacAddDelReply{}
	if m.Entry.BdID == 0 {
		r.Retval = errBdNotModifiable
		return r
	}
	bd := c.st.bds[m.Entry.BdID]
	if bd == nil {
		r.Retval = errNoSuchEntry
		return r
	}
	a, ok := toAddr(m.Entry.IP)
	if !ok {
		r.Retval = errInvalidValue
		return r
	}
	idx := slices.IndexFunc(bd.ArpEntries, func(e ArpTermEntry) bool { return e.IP == a })
	switch {
	case m.IsAdd && idx >= 0:
		bd.ArpEntries[idx].MAC = toMAC(m.Entry.Mac)
	case m.IsAdd:
		bd.ArpEntries = append(bd.ArpEntries, ArpTermEntry{IP: a, MAC: toMAC(m.Entry.Mac)})
	case idx < 0 || !slices.Equal(bd.ArpEntries[idx].MAC, toMAC(m.Entry.Mac)):
		r.Retval = errUnspecified
	default:
		bd.ArpEntries = slices.Delete(bd.ArpEntries, idx, idx+1)
	}
	return r
}

// bdIPMacDump: bd_id ~0 for all domains, another id for that one; per
// domain the IPv4 entries before the IPv6 ones (VPP keeps one hash table
// per family; within a family vppsim lists them in the order added, VPP in
// its hash order).
func bdIPMacDump(c *call, m *l2.BdIPMacDump) []api.Message {
	var ids []uint32
	for id := range c.st.bds {
		if m.BdID == NoIndex || m.BdID == id {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []api.Message
	for _, id := range ids {
		for _, ipv4 := range []bool{true, false} {
			for _, e := range c.st.bds[id].ArpEntries {
				if e.IP.Is4() == ipv4 {
					out = append(out, &l2.BdIPMacDetails{Entry: l2.BdIPMac{BdID: id, IP: fromAddr(e.IP), Mac: fromMAC(e.MAC)}})
				}
			}
		}
	}
	return out
}

// bridgeFlags sets (is_set) or clears flags (bd 0: BD_NOT_MODIFIABLE); the
// reply's resulting_feature_bitmap is given as bd_flags bits (VPP reports
// its internal l2input feature bits, which mean nothing to a client).
func bridgeFlags(c *call, m *l2.BridgeFlags) api.Message {
	r := &l2.BridgeFlagsReply{}
	if m.BdID == 0 {
		r.Retval = errBdNotModifiable
		return r
	}
	bd := c.st.bds[m.BdID]
	if bd == nil {
		r.Retval = errNoSuchEntry
		return r
	}
	set := func(flag l2.BdFlags, field *bool) {
		if m.Flags&flag != 0 {
			*field = m.IsSet
		}
	}
	set(l2.BRIDGE_API_FLAG_LEARN, &bd.Learn)
	set(l2.BRIDGE_API_FLAG_FWD, &bd.Forward)
	set(l2.BRIDGE_API_FLAG_FLOOD, &bd.Flood)
	set(l2.BRIDGE_API_FLAG_UU_FLOOD, &bd.UuFlood)
	set(l2.BRIDGE_API_FLAG_ARP_TERM, &bd.ArpTerm)
	set(l2.BRIDGE_API_FLAG_ARP_UFWD, &bd.ArpUfwd)
	var bits l2.BdFlags
	for _, f := range []struct {
		on   bool
		flag l2.BdFlags
	}{
		{bd.Learn, l2.BRIDGE_API_FLAG_LEARN}, {bd.Forward, l2.BRIDGE_API_FLAG_FWD},
		{bd.Flood, l2.BRIDGE_API_FLAG_FLOOD}, {bd.UuFlood, l2.BRIDGE_API_FLAG_UU_FLOOD},
		{bd.ArpTerm, l2.BRIDGE_API_FLAG_ARP_TERM}, {bd.ArpUfwd, l2.BRIDGE_API_FLAG_ARP_UFWD},
	} {
		if f.on {
			bits |= f.flag
		}
	}
	r.ResultingFeatureBitmap = uint32(bits)
	return r
}

// bridgeDomainSetMacAge: bd 0 is BD_NOT_MODIFIABLE, an unknown domain
// NO_SUCH_ENTRY.
func bridgeDomainSetMacAge(c *call, m *l2.BridgeDomainSetMacAge) api.Message {
	r := &l2.BridgeDomainSetMacAgeReply{}
	if m.BdID == 0 {
		r.Retval = errBdNotModifiable
		return r
	}
	bd := c.st.bds[m.BdID]
	if bd == nil {
		r.Retval = errNoSuchEntry
		return r
	}
	bd.MacAge = m.MacAge
	return r
}

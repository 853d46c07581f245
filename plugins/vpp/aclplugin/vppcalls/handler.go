package vppcalls

import (
	"context"
	"fmt"
	"net/netip"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/plugins/vpp/internal/ipconv"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// AreaName is the vppconn area of the handler's messages: VPP's acl
// plugin.
const AreaName = "acl"

// Area lists the messages of the handler, for the compatibility check at
// connect (vppconn.Manager.AddArea). It is optional: a VPP without the acl
// plugin is ready, and only ACL values fail, naming the messages it lacks.
func Area() vppconn.Area {
	return vppconn.Area{Name: AreaName, Optional: true, Messages: []govppapi.Message{
		&acl.ACLAddReplace{}, &acl.ACLAddReplaceReply{},
		&acl.ACLDel{}, &acl.ACLDelReply{},
		&acl.ACLDump{}, &acl.ACLDetails{},
		&acl.ACLInterfaceSetACLList{}, &acl.ACLInterfaceSetACLListReply{},
		&acl.ACLInterfaceListDump{}, &acl.ACLInterfaceListDetails{},
		&acl.MacipACLAddReplace{}, &acl.MacipACLAddReplaceReply{},
		&acl.MacipACLDel{}, &acl.MacipACLDelReply{},
		&acl.MacipACLDump{}, &acl.MacipACLDetails{},
		&acl.MacipACLInterfaceAddDel{}, &acl.MacipACLInterfaceAddDelReply{},
		&acl.MacipACLInterfaceListDump{}, &acl.MacipACLInterfaceListDetails{},
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
func (h *handler) call(ctx context.Context, f func(ctx context.Context, c acl.RPCService, conn govppapi.Connection) error) error {
	return h.m.Do(ctx, AreaName, func(ctx context.Context, conn govppapi.Connection) error {
		return f(ctx, acl.NewServiceClient(conn), conn)
	})
}

func dump[T govppapi.Message](ctx context.Context, h *handler, req govppapi.Message) ([]T, error) {
	var out []T
	err := h.call(ctx, func(ctx context.Context, _ acl.RPCService, conn govppapi.Connection) (err error) {
		out, err = vppconn.Dump[T](ctx, conn, req)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	return out, nil
}

func (h *handler) AddACL(ctx context.Context, tag string, rules []IPRule) (uint32, error) {
	return h.addReplaceACL(ctx, NoIndex, tag, rules)
}

func (h *handler) ReplaceACL(ctx context.Context, index uint32, tag string, rules []IPRule) error {
	_, err := h.addReplaceACL(ctx, index, tag, rules)
	return err
}

func (h *handler) addReplaceACL(ctx context.Context, index uint32, tag string, rules []IPRule) (uint32, error) {
	req := &acl.ACLAddReplace{ACLIndex: index, Tag: tag, Count: uint32(len(rules)), R: make([]acl_types.ACLRule, len(rules))}
	for i, r := range rules {
		req.R[i] = acl_types.ACLRule{
			IsPermit:               acl_types.ACLAction(r.Action),
			SrcPrefix:              toPrefix(r.Src),
			DstPrefix:              toPrefix(r.Dst),
			Proto:                  ip_types.IPProto(r.Proto),
			SrcportOrIcmptypeFirst: r.SrcPort.First,
			SrcportOrIcmptypeLast:  r.SrcPort.Last,
			DstportOrIcmpcodeFirst: r.DstPort.First,
			DstportOrIcmpcodeLast:  r.DstPort.Last,
			TCPFlagsMask:           r.TCPFlagsMask,
			TCPFlagsValue:          r.TCPFlagsValue,
		}
	}
	out := NoIndex
	err := h.call(ctx, func(ctx context.Context, c acl.RPCService, _ govppapi.Connection) error {
		r, err := c.ACLAddReplace(ctx, req)
		if err == nil {
			out = r.ACLIndex
		}
		return err
	})
	if err != nil {
		return NoIndex, fmt.Errorf("acl_add_replace (acl_index %d, tag %q, %d rules): %w", int32(index), tag, len(rules), err)
	}
	return out, nil
}

func (h *handler) DeleteACL(ctx context.Context, index uint32) error {
	err := h.call(ctx, func(ctx context.Context, c acl.RPCService, _ govppapi.Connection) error {
		_, err := c.ACLDel(ctx, &acl.ACLDel{ACLIndex: index})
		return err
	})
	if err != nil {
		return fmt.Errorf("acl_del (acl_index %d): %w", index, err)
	}
	return nil
}

func (h *handler) DumpACLs(ctx context.Context) ([]ACL, error) {
	ds, err := dump[*acl.ACLDetails](ctx, h, &acl.ACLDump{ACLIndex: NoIndex})
	if err != nil {
		return nil, err
	}
	out := make([]ACL, 0, len(ds))
	for _, d := range ds {
		a := ACL{Index: d.ACLIndex, Tag: d.Tag, Rules: make([]IPRule, len(d.R))}
		for i, r := range d.R {
			a.Rules[i] = IPRule{
				Action:        Action(r.IsPermit),
				Src:           fromPrefix(r.SrcPrefix),
				Dst:           fromPrefix(r.DstPrefix),
				Proto:         uint8(r.Proto),
				SrcPort:       Range{r.SrcportOrIcmptypeFirst, r.SrcportOrIcmptypeLast},
				DstPort:       Range{r.DstportOrIcmpcodeFirst, r.DstportOrIcmpcodeLast},
				TCPFlagsMask:  r.TCPFlagsMask,
				TCPFlagsValue: r.TCPFlagsValue,
			}
		}
		out = append(out, a)
	}
	return out, nil
}

func (h *handler) AddMACIPACL(ctx context.Context, tag string, rules []MACIPRule) (uint32, error) {
	return h.addReplaceMACIPACL(ctx, NoIndex, tag, rules)
}

func (h *handler) ReplaceMACIPACL(ctx context.Context, index uint32, tag string, rules []MACIPRule) error {
	_, err := h.addReplaceMACIPACL(ctx, index, tag, rules)
	return err
}

func (h *handler) addReplaceMACIPACL(ctx context.Context, index uint32, tag string, rules []MACIPRule) (uint32, error) {
	req := &acl.MacipACLAddReplace{ACLIndex: index, Tag: tag, Count: uint32(len(rules)), R: make([]acl_types.MacipACLRule, len(rules))}
	for i, r := range rules {
		req.R[i] = acl_types.MacipACLRule{
			IsPermit: acl_types.ACLAction(r.Action), SrcMac: r.SrcMAC, SrcMacMask: r.SrcMACMask, SrcPrefix: toPrefix(r.Src),
		}
	}
	out := NoIndex
	err := h.call(ctx, func(ctx context.Context, c acl.RPCService, _ govppapi.Connection) error {
		r, err := c.MacipACLAddReplace(ctx, req)
		if err == nil {
			out = r.ACLIndex
		}
		return err
	})
	if err != nil {
		return NoIndex, fmt.Errorf("macip_acl_add_replace (acl_index %d, tag %q, %d rules): %w", int32(index), tag, len(rules), err)
	}
	return out, nil
}

func (h *handler) DeleteMACIPACL(ctx context.Context, index uint32) error {
	err := h.call(ctx, func(ctx context.Context, c acl.RPCService, _ govppapi.Connection) error {
		_, err := c.MacipACLDel(ctx, &acl.MacipACLDel{ACLIndex: index})
		return err
	})
	if err != nil {
		return fmt.Errorf("macip_acl_del (acl_index %d): %w", index, err)
	}
	return nil
}

func (h *handler) DumpMACIPACLs(ctx context.Context) ([]MACIPACL, error) {
	ds, err := dump[*acl.MacipACLDetails](ctx, h, &acl.MacipACLDump{ACLIndex: NoIndex})
	if err != nil {
		return nil, err
	}
	out := make([]MACIPACL, 0, len(ds))
	for _, d := range ds {
		a := MACIPACL{Index: d.ACLIndex, Tag: d.Tag, Rules: make([]MACIPRule, len(d.R))}
		for i, r := range d.R {
			a.Rules[i] = MACIPRule{Action: Action(r.IsPermit), Src: fromPrefix(r.SrcPrefix), SrcMAC: r.SrcMac, SrcMACMask: r.SrcMacMask}
		}
		out = append(out, a)
	}
	return out, nil
}

func listOf(d *acl.ACLInterfaceListDetails) InterfaceACLs {
	n := min(int(d.NInput), len(d.Acls))
	return InterfaceACLs{Input: append([]uint32(nil), d.Acls[:n]...), Output: append([]uint32(nil), d.Acls[n:]...)}
}

func (h *handler) InterfaceACLs(ctx context.Context, sw uint32) (InterfaceACLs, bool, error) {
	ds, err := dump[*acl.ACLInterfaceListDetails](ctx, h, &acl.ACLInterfaceListDump{SwIfIndex: interface_types.InterfaceIndex(sw)})
	if err != nil {
		return InterfaceACLs{}, false, err
	}
	for _, d := range ds {
		if uint32(d.SwIfIndex) == sw {
			return listOf(d), true, nil
		}
	}
	return InterfaceACLs{}, false, nil
}

func (h *handler) AllInterfaceACLs(ctx context.Context) (map[uint32]InterfaceACLs, error) {
	ds, err := dump[*acl.ACLInterfaceListDetails](ctx, h, &acl.ACLInterfaceListDump{SwIfIndex: interface_types.InterfaceIndex(NoIndex)})
	if err != nil {
		return nil, err
	}
	out := map[uint32]InterfaceACLs{}
	for _, d := range ds {
		if len(d.Acls) > 0 {
			out[uint32(d.SwIfIndex)] = listOf(d)
		}
	}
	return out, nil
}

func (h *handler) SetInterfaceACLs(ctx context.Context, sw uint32, l InterfaceACLs) error {
	acls := append(append([]uint32(nil), l.Input...), l.Output...)
	if len(acls) > 255 {
		return fmt.Errorf("acl_interface_set_acl_list (sw_if_index %d, %s): %d ACLs, VPP takes at most 255 per interface", sw, l, len(acls))
	}
	err := h.call(ctx, func(ctx context.Context, c acl.RPCService, _ govppapi.Connection) error {
		_, err := c.ACLInterfaceSetACLList(ctx, &acl.ACLInterfaceSetACLList{
			SwIfIndex: interface_types.InterfaceIndex(sw), Count: uint8(len(acls)), NInput: uint8(len(l.Input)), Acls: acls,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("acl_interface_set_acl_list (sw_if_index %d, %s): %w", sw, l, err)
	}
	return nil
}

func (h *handler) InterfaceMACIPACL(ctx context.Context, sw uint32) (uint32, bool, error) {
	ds, err := dump[*acl.MacipACLInterfaceListDetails](ctx, h, &acl.MacipACLInterfaceListDump{SwIfIndex: interface_types.InterfaceIndex(sw)})
	if err != nil {
		return NoIndex, false, err
	}
	for _, d := range ds {
		if uint32(d.SwIfIndex) == sw && len(d.Acls) > 0 && d.Acls[0] != NoIndex {
			return d.Acls[0], true, nil
		}
	}
	return NoIndex, false, nil
}

func (h *handler) AllInterfaceMACIPACLs(ctx context.Context) (map[uint32]uint32, error) {
	ds, err := dump[*acl.MacipACLInterfaceListDetails](ctx, h, &acl.MacipACLInterfaceListDump{SwIfIndex: interface_types.InterfaceIndex(NoIndex)})
	if err != nil {
		return nil, err
	}
	out := map[uint32]uint32{}
	for _, d := range ds {
		if len(d.Acls) > 0 && d.Acls[0] != NoIndex {
			out[uint32(d.SwIfIndex)] = d.Acls[0]
		}
	}
	return out, nil
}

func (h *handler) SetInterfaceMACIPACL(ctx context.Context, sw, index uint32) error {
	return h.macipInterface(ctx, true, sw, index)
}

func (h *handler) UnsetInterfaceMACIPACL(ctx context.Context, sw uint32) error {
	return h.macipInterface(ctx, false, sw, NoIndex)
}

func (h *handler) macipInterface(ctx context.Context, isAdd bool, sw, index uint32) error {
	err := h.call(ctx, func(ctx context.Context, c acl.RPCService, _ govppapi.Connection) error {
		_, err := c.MacipACLInterfaceAddDel(ctx, &acl.MacipACLInterfaceAddDel{IsAdd: isAdd, SwIfIndex: interface_types.InterfaceIndex(sw), ACLIndex: index})
		return err
	})
	if err != nil {
		return fmt.Errorf("macip_acl_interface_add_del (is_add %v, sw_if_index %d, acl_index %d): %w", isAdd, sw, int32(index), err)
	}
	return nil
}

func toPrefix(p netip.Prefix) ip_types.Prefix {
	if !p.IsValid() {
		return ip_types.Prefix{Address: ip_types.Address{Af: ip_types.ADDRESS_IP4}}
	}
	return ip_types.Prefix{Address: ipconv.ToVPP(p.Addr()), Len: uint8(p.Bits())}
}

// fromPrefix keeps the host bits (MAC-IP rules have them); a prefix of an
// unknown family, or too long for its family, is the zero Prefix.
func fromPrefix(p ip_types.Prefix) netip.Prefix {
	a, ok := ipconv.FromVPP(p.Address)
	if !ok || int(p.Len) > a.BitLen() {
		return netip.Prefix{}
	}
	return netip.PrefixFrom(a, int(p.Len))
}

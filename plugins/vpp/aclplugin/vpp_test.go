package aclplugin_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/plugins/vpp/aclplugin"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// TestVPPACLBehaviour checks, against vppsim or the real VPP alike, the
// behaviours of VPP 25.10's acl plugin that the plugin is built on, so
// that vppsim cannot drift from them unnoticed (the package doc of
// vppcalls lists them).
func TestVPPACLBehaviour(t *testing.T) {
	e := newEnv(t)
	conn, err := e.m.Conn(aclplugin.AreaName)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, ic := acl.NewServiceClient(conn), interfaces.NewServiceClient(conn)
	var loops []interface_types.InterfaceIndex
	for range 2 {
		r, err := ic.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		if err != nil {
			t.Fatal(err)
		}
		loops = append(loops, r.SwIfIndex)
	}
	a, b := loops[0], loops[1]
	prefix := func(s string) ip_types.Prefix {
		p, err := ip_types.ParsePrefix(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	any4 := prefix("0.0.0.0/0")
	add := func(idx uint32, tag string, rules ...acl_types.ACLRule) (uint32, error) {
		r, err := c.ACLAddReplace(ctx, &acl.ACLAddReplace{ACLIndex: idx, Tag: tag, Count: uint32(len(rules)), R: rules})
		if err != nil {
			return vppcalls.NoIndex, err
		}
		return r.ACLIndex, nil
	}
	mustAdd := func(tag string, rules ...acl_types.ACLRule) uint32 {
		t.Helper()
		idx, err := add(vppcalls.NoIndex, tag, rules...)
		if err != nil {
			t.Fatalf("acl_add_replace %s: %v", tag, err)
		}
		return idx
	}
	wantErr := func(what string, err error, code govppapi.VPPApiError) {
		t.Helper()
		var got govppapi.VPPApiError
		if !errors.As(err, &got) || got != code {
			t.Errorf("%s: %v, want %v", what, err, code)
		}
	}

	// Rules VPP refuses, and what it takes.
	for _, bad := range []struct {
		what string
		rule acl_types.ACLRule
		want govppapi.VPPApiError
	}{
		{"source with host bits", acl_types.ACLRule{SrcPrefix: prefix("10.0.0.1/24"), DstPrefix: any4}, govppapi.INVALID_SRC_ADDRESS},
		{"destination with host bits", acl_types.ACLRule{SrcPrefix: any4, DstPrefix: prefix("10.0.0.1/8")}, govppapi.INVALID_DST_ADDRESS},
		{"IPv4 length 33", acl_types.ACLRule{SrcPrefix: ip_types.Prefix{Address: any4.Address, Len: 33}, DstPrefix: any4}, govppapi.INVALID_SRC_ADDRESS},
		{"families differ", acl_types.ACLRule{SrcPrefix: any4, DstPrefix: prefix("2001:db8::/32")}, govppapi.INVALID_SRC_ADDRESS},
		{"source ports reversed", acl_types.ACLRule{SrcPrefix: any4, DstPrefix: any4, Proto: 17, SrcportOrIcmptypeFirst: 100, SrcportOrIcmptypeLast: 10}, govppapi.INVALID_VALUE_2},
		{"ICMP codes reversed", acl_types.ACLRule{SrcPrefix: any4, DstPrefix: any4, Proto: 1, DstportOrIcmpcodeFirst: 9, DstportOrIcmpcodeLast: 3}, govppapi.INVALID_VALUE_2},
	} {
		_, err := add(vppcalls.NoIndex, "bad", bad.rule)
		wantErr(bad.what, err, bad.want)
	}
	_, err = add(vppcalls.NoIndex, strings.Repeat("t", 64))
	wantErr("a 64-byte tag", err, govppapi.INVALID_VALUE)
	_, err = add(1<<30, "replace a missing ACL")
	wantErr("replacing a missing ACL", err, govppapi.NO_SUCH_ENTRY)
	empty := mustAdd(strings.Repeat("t", 63)) // no rules, the longest tag
	odd := mustAdd("odd", acl_types.ACLRule{IsPermit: 9, SrcPrefix: any4, DstPrefix: any4, Proto: 47, SrcportOrIcmptypeFirst: 5, SrcportOrIcmptypeLast: 6})
	x, y := mustAdd("x"), mustAdd("y")

	// Pools: the index freed last is taken first.
	for _, idx := range []uint32{empty, odd} {
		if _, err := c.ACLDel(ctx, &acl.ACLDel{ACLIndex: idx}); err != nil {
			t.Fatal(err)
		}
	}
	if idx := mustAdd("reuse"); idx != odd {
		t.Errorf("new ACL got index %d, want %d (freed last)", idx, odd)
	}

	set := func(sw interface_types.InterfaceIndex, nInput uint8, acls ...uint32) (int32, error) {
		r, err := c.ACLInterfaceSetACLList(ctx, &acl.ACLInterfaceSetACLList{SwIfIndex: sw, Count: uint8(len(acls)), NInput: nInput, Acls: acls})
		if r == nil {
			return 0, err
		}
		return r.Retval, err
	}
	lists := func(sw interface_types.InterfaceIndex) vppcalls.InterfaceACLs {
		t.Helper()
		l, ok, err := e.h.InterfaceACLs(ctx, uint32(sw))
		if err != nil || !ok {
			t.Fatalf("lists of %d: %v %v", sw, ok, err)
		}
		return l
	}
	wantLists := func(what string, sw interface_types.InterfaceIndex, in, out []uint32) {
		t.Helper()
		if l := lists(sw); !slices.Equal(l.Input, in) || !slices.Equal(l.Output, out) {
			t.Errorf("%s: lists of %d: %v, want input %v output %v", what, sw, l, in, out)
		}
	}
	if _, err := set(a, 1, x, y); err != nil {
		t.Fatal(err)
	}
	wantLists("set", a, []uint32{x}, []uint32{y})
	if _, err := set(a, 5, y); err != nil {
		t.Fatal(err)
	}
	wantLists("n_input above the count", a, []uint32{y}, nil)
	if _, err := set(a, 1, x, y); err != nil {
		t.Fatal(err)
	}
	rv, err := set(a, 2, y, y)
	if rv != 1 || err == nil {
		t.Errorf("a duplicate in the input list: retval %d (%v), want 1", rv, err)
	}
	wantLists("a duplicate in the input list", a, []uint32{x}, nil)
	if _, err := set(a, 1, x, y); err != nil {
		t.Fatal(err)
	}
	rv, _ = set(a, 0, x, x)
	if rv != 1 {
		t.Errorf("a duplicate in the output list: retval %d, want 1", rv)
	}
	wantLists("a duplicate in the output list", a, []uint32{x}, []uint32{y})
	_, err = set(a, 1, y, 1<<30)
	wantErr("an unknown ACL in the list", err, govppapi.NO_SUCH_ENTRY)
	wantLists("an unknown ACL in the list", a, []uint32{x}, []uint32{y})
	_, err = set(1<<30, 0)
	wantErr("a list of no interface", err, govppapi.INVALID_SW_IF_INDEX)

	// The dump of all interfaces lists those without ACLs too.
	all, err := vppDump[*acl.ACLInterfaceListDetails](ctx, e, &acl.ACLInterfaceListDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(all, func(d *acl.ACLInterfaceListDetails) bool { return d.SwIfIndex == b && d.Count == 0 }) {
		t.Errorf("acl_interface_list_dump of ~0 does not list %d without ACLs: %+v", b, all)
	}
	if got, err := vppDump[*acl.ACLInterfaceListDetails](ctx, e, &acl.ACLInterfaceListDump{SwIfIndex: 1 << 30}); err != nil || len(got) != 0 {
		t.Errorf("acl_interface_list_dump of no interface: %+v %v, want nothing", got, err)
	}

	// acl_interface_add_del appends.
	if _, err := c.ACLInterfaceAddDel(ctx, &acl.ACLInterfaceAddDel{IsAdd: true, IsInput: true, SwIfIndex: a, ACLIndex: y}); err != nil {
		t.Fatal(err)
	}
	wantLists("acl_interface_add_del", a, []uint32{x, y}, []uint32{y})
	_, err = c.ACLInterfaceAddDel(ctx, &acl.ACLInterfaceAddDel{IsAdd: true, IsInput: false, SwIfIndex: a, ACLIndex: y})
	wantErr("appending an ACL an output list has", err, govppapi.ACL_IN_USE_OUTBOUND)

	// An ACL in use cannot be deleted; the interface's deletion frees it.
	_, err = c.ACLDel(ctx, &acl.ACLDel{ACLIndex: x})
	wantErr("deleting an ACL in an input list", err, govppapi.ACL_IN_USE_INBOUND)
	if _, err := set(a, 0, y); err != nil {
		t.Fatal(err)
	}
	_, err = c.ACLDel(ctx, &acl.ACLDel{ACLIndex: y})
	wantErr("deleting an ACL in an output list", err, govppapi.ACL_IN_USE_OUTBOUND)
	if _, err := ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ACLDel(ctx, &acl.ACLDel{ACLIndex: y}); err != nil {
		t.Errorf("deleting an ACL whose only interface was deleted: %v", err)
	}

	// MAC-IP ACLs: not checked, one per interface.
	mac, _ := ethernet_types.ParseMacAddress("02:00:00:00:00:01")
	mask, _ := ethernet_types.ParseMacAddress("ff:ff:ff:ff:00:00")
	mrule := acl_types.MacipACLRule{IsPermit: 1, SrcMac: mac, SrcMacMask: mask, SrcPrefix: prefix("192.168.1.5/24")}
	madd := func(idx uint32, tag string, rules ...acl_types.MacipACLRule) (uint32, error) {
		r, err := c.MacipACLAddReplace(ctx, &acl.MacipACLAddReplace{ACLIndex: idx, Tag: tag, Count: uint32(len(rules)), R: rules})
		if err != nil {
			return vppcalls.NoIndex, err
		}
		return r.ACLIndex, nil
	}
	m1, err := madd(vppcalls.NoIndex, "m1", mrule, acl_types.MacipACLRule{SrcPrefix: ip_types.Prefix{Address: any4.Address, Len: 40}})
	if err != nil {
		t.Fatalf("a MAC-IP ACL with host bits and a length beyond IPv4's: %v", err)
	}
	m2, err := madd(vppcalls.NoIndex, "m2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = madd(vppcalls.NoIndex, strings.Repeat("t", 64))
	wantErr("a MAC-IP ACL with a 64-byte tag", err, govppapi.INVALID_VALUE)
	_, err = madd(1<<30, "m")
	wantErr("replacing a missing MAC-IP ACL", err, govppapi.NO_SUCH_ENTRY)
	if got, _ := e.macipACL("m1"); len(got.Rules) != 2 || got.Rules[0].Src.String() != "192.168.1.5/24" {
		t.Errorf("MAC-IP ACL m1 in VPP: %+v, want the host bits kept", got)
	}
	mif := func(isAdd bool, sw interface_types.InterfaceIndex, idx uint32) error {
		_, err := c.MacipACLInterfaceAddDel(ctx, &acl.MacipACLInterfaceAddDel{IsAdd: isAdd, SwIfIndex: sw, ACLIndex: idx})
		return err
	}
	macipOf := func(sw interface_types.InterfaceIndex) uint32 {
		t.Helper()
		idx, ok, err := e.h.InterfaceMACIPACL(ctx, uint32(sw))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return vppcalls.NoIndex
		}
		return idx
	}
	if err := mif(true, b, m1); err != nil {
		t.Fatal(err)
	}
	if err := mif(true, b, m2); err != nil {
		t.Fatal(err)
	}
	if got := macipOf(b); got != m2 {
		t.Errorf("after a second add: MAC-IP ACL %d, want %d (replaced)", int32(got), m2)
	}
	if err := mif(false, b, m1); err != nil {
		t.Errorf("delete naming another ACL: %v", err)
	}
	if got := macipOf(b); got != vppcalls.NoIndex {
		t.Errorf("after a delete naming another ACL: MAC-IP ACL %d, want none (acl_index ignored)", got)
	}
	wantErr("a delete from an interface without one", mif(false, b, m2), govppapi.NO_SUCH_ENTRY)
	wantErr("an add of a missing ACL", mif(true, b, 1<<30), govppapi.NO_SUCH_ENTRY)
	wantErr("an add on no interface", mif(true, 1<<30, m1), govppapi.INVALID_SW_IF_INDEX)
	if err := mif(true, b, m1); err != nil {
		t.Fatal(err)
	}
	// The list of one index: a one-entry list, ~0 for none.
	one, err := vppDump[*acl.MacipACLInterfaceListDetails](ctx, e, &acl.MacipACLInterfaceListDump{SwIfIndex: 0})
	if err != nil || len(one) != 1 || len(one[0].Acls) != 1 || one[0].Acls[0] != vppcalls.NoIndex {
		t.Errorf("macip_acl_interface_list_dump of local0: %+v %v, want one list of ~0", one, err)
	}
	if _, err := c.MacipACLDel(ctx, &acl.MacipACLDel{ACLIndex: m1}); err != nil {
		t.Errorf("deleting a MAC-IP ACL in use: %v", err)
	}
	if got := macipOf(b); got != vppcalls.NoIndex {
		t.Errorf("after its MAC-IP ACL was deleted, %d has %d", b, got)
	}
	if err := mif(true, b, m2); err != nil {
		t.Fatal(err)
	}
	if _, err := ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: b}); err != nil {
		t.Fatal(err)
	}
	got, err := e.h.AllInterfaceMACIPACLs(ctx)
	if _, has := got[uint32(b)]; err != nil || has {
		t.Errorf("MAC-IP ACLs of interfaces after %d was deleted: %v %v", b, got, err)
	}
	wantErr("a delete on a deleted interface", mif(false, b, m2), govppapi.INVALID_SW_IF_INDEX)
}

// vppDump runs a dump of the acl plugin.
func vppDump[T govppapi.Message](ctx context.Context, e *env, req govppapi.Message) ([]T, error) {
	conn, err := e.m.Conn(aclplugin.AreaName)
	if err != nil {
		return nil, err
	}
	return vppconn.Dump[T](ctx, conn, req)
}

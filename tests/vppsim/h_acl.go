package vppsim

import (
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
)

// VPP error codes of the acl plugin.
const (
	errInvalidValue2     = int32(api.INVALID_VALUE_2)     // -8
	errInvalidSrcAddress = int32(api.INVALID_SRC_ADDRESS) // -57
	errInvalidDstAddress = int32(api.INVALID_DST_ADDRESS) // -58
	errACLInUseInbound   = int32(api.ACL_IN_USE_INBOUND)  // -142
	errACLInUseOutbound  = int32(api.ACL_IN_USE_OUTBOUND) // -143
	// retvalOrred is acl_interface_set_acl_list's retval when setting a
	// list fails: VPP 25.10's handler ORs the results of its two lists.
	retvalOrred = int32(1)
	// aclTagLen is the size of an ACL tag (string[64]), its NUL included.
	aclTagLen = 64
)

// ACL is a snapshot of one IP ACL of the acl plugin.
type ACL struct {
	Index uint32
	Tag   string
	Rules []acl_types.ACLRule
}

// MACIPACL is a snapshot of one MAC-IP ACL of the acl plugin.
type MACIPACL struct {
	Index uint32
	Tag   string
	Rules []acl_types.MacipACLRule
}

// InterfaceACLs are the IP ACL lists of an interface, in order.
type InterfaceACLs struct {
	Input, Output []uint32
}

// aclPool is a VPP pool of ACLs: a new entry takes the index freed last,
// else the next one.
type aclPool[T any] struct {
	items map[uint32]*T
	free  []uint32
	next  uint32
}

func (p *aclPool[T]) add(v *T) uint32 {
	if p.items == nil {
		p.items = map[uint32]*T{}
	}
	var idx uint32
	if n := len(p.free); n > 0 {
		idx, p.free = p.free[n-1], p.free[:n-1]
	} else {
		idx = p.next
		p.next++
	}
	p.items[idx] = v
	return idx
}

func (p *aclPool[T]) del(idx uint32) {
	delete(p.items, idx)
	p.free = append(p.free, idx)
}

func (p *aclPool[T]) sorted() []uint32 {
	out := make([]uint32, 0, len(p.items))
	for idx := range p.items {
		out = append(out, idx)
	}
	slices.Sort(out)
	return out
}

// aclState is the acl plugin's part of the state. Its zero value is a VPP
// just started.
type aclState struct {
	ip    aclPool[ACL]
	macip aclPool[MACIPACL]
	lists map[uint32]*InterfaceACLs // by sw_if_index
	// macipByIf is VPP's vector of the MAC-IP ACL of each sw_if_index
	// (NoIndex: none). It grows to the highest index given one and never
	// shrinks: macip_acl_interface_list_dump and _get show its length.
	macipByIf []uint32
}

// aclInterfaceDeleted forgets the ACLs of a deleted interface, as VPP's
// acl plugin does.
func (a *aclState) aclInterfaceDeleted(idx uint32) {
	delete(a.lists, idx)
	if idx < uint32(len(a.macipByIf)) {
		a.macipByIf[idx] = NoIndex
	}
}

func tagOK(tag string) bool { return len(tag) < aclTagLen }

// checkACLRules is VPP 25.10's check of IP rules: each prefix of a known
// family, no longer than it and without host bits, both of one family
// (INVALID_SRC_ADDRESS, INVALID_DST_ADDRESS), ranges in order
// (INVALID_VALUE_2). Actions and protocols are not checked.
func checkACLRules(rules []acl_types.ACLRule) int32 {
	valid := func(p ip_types.Prefix) bool {
		pp, ok := toPrefix(p)
		return ok && pp.Masked() == pp
	}
	for _, r := range rules {
		switch {
		case !valid(r.SrcPrefix):
			return errInvalidSrcAddress
		case !valid(r.DstPrefix):
			return errInvalidDstAddress
		case r.SrcPrefix.Address.Af != r.DstPrefix.Address.Af:
			return errInvalidSrcAddress
		case r.SrcportOrIcmptypeFirst > r.SrcportOrIcmptypeLast, r.DstportOrIcmpcodeFirst > r.DstportOrIcmpcodeLast:
			return errInvalidValue2
		}
	}
	return 0
}

func aclAddReplace(c *call, m *acl.ACLAddReplace) api.Message {
	r := &acl.ACLAddReplaceReply{ACLIndex: m.ACLIndex}
	a := &c.st.acl
	switch {
	case !tagOK(m.Tag):
		r.Retval = errInvalidValue
	case m.ACLIndex != NoIndex && a.ip.items[m.ACLIndex] == nil:
		r.Retval = errNoSuchEntry
	default:
		r.Retval = checkACLRules(m.R)
	}
	if r.Retval != 0 {
		return r
	}
	v := &ACL{Tag: m.Tag, Rules: slices.Clone(m.R)}
	if m.ACLIndex == NoIndex {
		r.ACLIndex = a.ip.add(v)
	} else {
		a.ip.items[m.ACLIndex] = v
	}
	return r
}

func aclDel(c *call, m *acl.ACLDel) api.Message {
	a := &c.st.acl
	r := &acl.ACLDelReply{}
	if a.ip.items[m.ACLIndex] == nil {
		r.Retval = errNoSuchEntry
		return r
	}
	for _, sw := range sortedLists(a.lists) {
		if slices.Contains(a.lists[sw].Input, m.ACLIndex) {
			r.Retval = errACLInUseInbound
			return r
		}
	}
	for _, sw := range sortedLists(a.lists) {
		if slices.Contains(a.lists[sw].Output, m.ACLIndex) {
			r.Retval = errACLInUseOutbound
			return r
		}
	}
	a.ip.del(m.ACLIndex)
	return r
}

func sortedLists(m map[uint32]*InterfaceACLs) []uint32 {
	out := make([]uint32, 0, len(m))
	for sw := range m {
		out = append(out, sw)
	}
	slices.Sort(out)
	return out
}

// aclDump: ~0 lists every IP ACL by index; another index that ACL, or
// nothing.
func aclDump(c *call, m *acl.ACLDump) []api.Message {
	a := &c.st.acl
	var out []api.Message
	for _, idx := range a.ip.sorted() {
		if m.ACLIndex != NoIndex && m.ACLIndex != idx {
			continue
		}
		v := a.ip.items[idx]
		out = append(out, &acl.ACLDetails{ACLIndex: idx, Tag: v.Tag, Count: uint32(len(v.Rules)), R: slices.Clone(v.Rules)})
	}
	return out
}

// aclInterfaceSetACLList: an interface that does not exist is
// INVALID_SW_IF_INDEX, an unknown ACL NO_SUCH_ENTRY (nothing changed);
// n_input is capped to the count. As VPP 25.10's handler, the output list
// is set before the input list and their results are ORed: an ACL twice
// in a list is retval 1, and a duplicate in the input list leaves the new
// output list in place.
func aclInterfaceSetACLList(c *call, m *acl.ACLInterfaceSetACLList) api.Message {
	a := &c.st.acl
	r := &acl.ACLInterfaceSetACLListReply{}
	sw := uint32(m.SwIfIndex)
	if c.st.ifs[sw] == nil {
		r.Retval = errInvalidSwIfIndex
		return r
	}
	for _, idx := range m.Acls {
		if a.ip.items[idx] == nil {
			r.Retval = errNoSuchEntry
			return r
		}
	}
	n := min(int(m.NInput), len(m.Acls))
	in, out := slices.Clone(m.Acls[:n]), slices.Clone(m.Acls[n:])
	dup := func(list []uint32) bool {
		s := slices.Clone(list)
		slices.Sort(s)
		return len(slices.Compact(s)) != len(list)
	}
	if a.lists == nil {
		a.lists = map[uint32]*InterfaceACLs{}
	}
	l := a.lists[sw]
	if l == nil {
		l = &InterfaceACLs{}
		a.lists[sw] = l
	}
	if dup(out) {
		r.Retval = retvalOrred
		return r
	}
	l.Output = out
	if dup(in) {
		r.Retval = retvalOrred
		return r
	}
	l.Input = in
	return r
}

// aclInterfaceAddDel appends an ACL to an interface's input or output list
// (ACL_IN_USE_INBOUND / _OUTBOUND when it is there already) or takes it out
// (NO_SUCH_ENTRY when it is not).
func aclInterfaceAddDel(c *call, m *acl.ACLInterfaceAddDel) api.Message {
	a := &c.st.acl
	r := &acl.ACLInterfaceAddDelReply{}
	sw := uint32(m.SwIfIndex)
	switch {
	case c.st.ifs[sw] == nil:
		r.Retval = errInvalidSwIfIndex
		return r
	case a.ip.items[m.ACLIndex] == nil:
		r.Retval = errNoSuchEntry
		return r
	}
	if a.lists == nil {
		a.lists = map[uint32]*InterfaceACLs{}
	}
	l := a.lists[sw]
	if l == nil {
		l = &InterfaceACLs{}
		a.lists[sw] = l
	}
	list, inUse := &l.Output, errACLInUseOutbound
	if m.IsInput {
		list, inUse = &l.Input, errACLInUseInbound
	}
	has := slices.Contains(*list, m.ACLIndex)
	switch {
	case m.IsAdd && has:
		r.Retval = inUse
	case m.IsAdd:
		*list = append(*list, m.ACLIndex)
	case !has:
		r.Retval = errNoSuchEntry
	default:
		*list = remove32(*list, m.ACLIndex)
	}
	return r
}

func remove32(list []uint32, v uint32) []uint32 {
	return slices.DeleteFunc(slices.Clone(list), func(x uint32) bool { return x == v })
}

// aclInterfaceListDump: ~0 lists every interface, by index, those without
// ACLs too; another index that interface, or nothing.
func aclInterfaceListDump(c *call, m *acl.ACLInterfaceListDump) []api.Message {
	var out []api.Message
	for _, i := range c.st.sortedIfs() {
		if uint32(m.SwIfIndex) != NoIndex && uint32(m.SwIfIndex) != i.SwIfIndex {
			continue
		}
		d := &acl.ACLInterfaceListDetails{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)}
		if l := c.st.acl.lists[i.SwIfIndex]; l != nil {
			d.Acls = append(slices.Clone(l.Input), l.Output...)
			d.NInput = uint8(len(l.Input))
		}
		d.Count = uint8(len(d.Acls))
		out = append(out, d)
	}
	return out
}

func macipAdd(c *call, idx uint32, tag string, rules []acl_types.MacipACLRule) (uint32, int32) {
	a := &c.st.acl
	switch {
	case !tagOK(tag):
		return NoIndex, errInvalidValue
	case idx != NoIndex && a.macip.items[idx] == nil:
		return idx, errNoSuchEntry
	}
	v := &MACIPACL{Tag: tag, Rules: slices.Clone(rules)}
	if idx == NoIndex {
		return a.macip.add(v), 0
	}
	a.macip.items[idx] = v
	return idx, 0
}

// macipACLAdd creates a MAC-IP ACL. VPP 25.10 checks nothing of its rules
// (prefixes keep their host bits; a length beyond the family is taken).
func macipACLAdd(c *call, m *acl.MacipACLAdd) api.Message {
	idx, rv := macipAdd(c, NoIndex, m.Tag, m.R)
	return &acl.MacipACLAddReply{ACLIndex: idx, Retval: rv}
}

func macipACLAddReplace(c *call, m *acl.MacipACLAddReplace) api.Message {
	idx, rv := macipAdd(c, m.ACLIndex, m.Tag, m.R)
	return &acl.MacipACLAddReplaceReply{ACLIndex: idx, Retval: rv}
}

// macipACLDel takes the ACL off the interfaces that have it, then deletes
// it.
func macipACLDel(c *call, m *acl.MacipACLDel) api.Message {
	a := &c.st.acl
	if a.macip.items[m.ACLIndex] == nil {
		return &acl.MacipACLDelReply{Retval: errNoSuchEntry}
	}
	for sw, idx := range a.macipByIf {
		if idx == m.ACLIndex {
			a.macipByIf[sw] = NoIndex
		}
	}
	a.macip.del(m.ACLIndex)
	return &acl.MacipACLDelReply{}
}

func macipACLDump(c *call, m *acl.MacipACLDump) []api.Message {
	a := &c.st.acl
	var out []api.Message
	for _, idx := range a.macip.sorted() {
		if m.ACLIndex != NoIndex && m.ACLIndex != idx {
			continue
		}
		v := a.macip.items[idx]
		out = append(out, &acl.MacipACLDetails{ACLIndex: idx, Tag: v.Tag, Count: uint32(len(v.Rules)), R: slices.Clone(v.Rules)})
	}
	return out
}

// macipACLInterfaceAddDel: an interface that does not exist is
// INVALID_SW_IF_INDEX. An add of an unknown ACL is NO_SUCH_ENTRY, else the
// ACL replaces the interface's. A delete ignores acl_index: it takes off
// whatever MAC-IP ACL the interface has, NO_SUCH_ENTRY when it has none.
func macipACLInterfaceAddDel(c *call, m *acl.MacipACLInterfaceAddDel) api.Message {
	a := &c.st.acl
	r := &acl.MacipACLInterfaceAddDelReply{}
	sw := uint32(m.SwIfIndex)
	switch {
	case c.st.ifs[sw] == nil:
		r.Retval = errInvalidSwIfIndex
	case m.IsAdd && a.macip.items[m.ACLIndex] == nil:
		r.Retval = errNoSuchEntry
	case m.IsAdd:
		for uint32(len(a.macipByIf)) <= sw {
			a.macipByIf = append(a.macipByIf, NoIndex)
		}
		a.macipByIf[sw] = m.ACLIndex
	case sw >= uint32(len(a.macipByIf)) || a.macipByIf[sw] == NoIndex:
		r.Retval = errNoSuchEntry
	default:
		a.macipByIf[sw] = NoIndex
	}
	return r
}

// macipACLInterfaceListDump: ~0 lists the interfaces that have a MAC-IP
// ACL; another index gets a list of one entry, ~0 when it has none, as long
// as VPP's vector reaches that index (nothing beyond it, whether or not
// the interface exists).
func macipACLInterfaceListDump(c *call, m *acl.MacipACLInterfaceListDump) []api.Message {
	a := &c.st.acl
	detail := func(sw uint32) api.Message {
		return &acl.MacipACLInterfaceListDetails{SwIfIndex: interface_types.InterfaceIndex(sw), Count: 1, Acls: []uint32{a.macipByIf[sw]}}
	}
	sw := uint32(m.SwIfIndex)
	if sw != NoIndex {
		if sw < uint32(len(a.macipByIf)) {
			return []api.Message{detail(sw)}
		}
		return nil
	}
	var out []api.Message
	for sw, idx := range a.macipByIf {
		if idx != NoIndex {
			out = append(out, detail(uint32(sw)))
		}
	}
	return out
}

// macipACLInterfaceGet returns VPP's vector: one entry per sw_if_index it
// reaches.
func macipACLInterfaceGet(c *call, _ *acl.MacipACLInterfaceGet) api.Message {
	v := slices.Clone(c.st.acl.macipByIf)
	return &acl.MacipACLInterfaceGetReply{Count: uint32(len(v)), Acls: v}
}

// ACLs returns a copy of the IP ACLs, ordered by index.
func (s *Sim) ACLs() []ACL {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &s.st.acl
	var out []ACL
	for _, idx := range a.ip.sorted() {
		v := *a.ip.items[idx]
		v.Index, v.Rules = idx, slices.Clone(v.Rules)
		out = append(out, v)
	}
	return out
}

// MACIPACLs returns a copy of the MAC-IP ACLs, ordered by index.
func (s *Sim) MACIPACLs() []MACIPACL {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &s.st.acl
	var out []MACIPACL
	for _, idx := range a.macip.sorted() {
		v := *a.macip.items[idx]
		v.Index, v.Rules = idx, slices.Clone(v.Rules)
		out = append(out, v)
	}
	return out
}

// InterfaceACLs returns a copy of the IP ACL lists of the interfaces that
// have any, by sw_if_index.
func (s *Sim) InterfaceACLs() map[uint32]InterfaceACLs {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint32]InterfaceACLs{}
	for sw, l := range s.st.acl.lists {
		if len(l.Input)+len(l.Output) > 0 {
			out[sw] = InterfaceACLs{Input: slices.Clone(l.Input), Output: slices.Clone(l.Output)}
		}
	}
	return out
}

// InterfaceMACIPACLs returns the MAC-IP ACL of each interface that has
// one, by sw_if_index.
func (s *Sim) InterfaceMACIPACLs() map[uint32]uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint32]uint32{}
	for sw, idx := range s.st.acl.macipByIf {
		if idx != NoIndex {
			out[uint32(sw)] = idx
		}
	}
	return out
}

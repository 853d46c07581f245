package ifplugin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/internal/nlbatch"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// The Batch of the interface descriptor deletes links in bulk. The
// kernel waits for RCU (~18 ms for a veth pair) after each RTM_DELLINK,
// pipelined or not; deleting the links of a namespace as one group
// (`ip link delete group N`: one request, one wait for them all) costs
// about what deleting one does. So the deletes of VETH and DUMMY values
// that follow each other in a batch are done together, per namespace (the
// one the link is in): each link found and checked as Delete does (the
// agent's mark; a link gone is a success), then deleteGroup. Every other
// operation is the descriptor's Create, Update or Delete, in the batch's
// order (the pending deletes are done before it).
// linkDelete is a delete of a VETH or DUMMY value whose link was found.
type linkDelete struct {
	op    *api.BatchOp
	v     *linuxif.Interface
	ref   nsplugin.Ref // the value's namespace (for release)
	where nsplugin.Ref // where the link is
	index int
	name  string
	group uint32 // the link's group before the batch
}

// bulkDelete tells a delete deleteLinks takes (VETH and DUMMY values).
func bulkDelete(op *api.BatchOp) bool {
	if op.Op != api.OpDelete {
		return false
	}
	v, ok := op.From.(*linuxif.Interface)
	return ok && (v.GetType() == linuxif.Interface_VETH || v.GetType() == linuxif.Interface_DUMMY)
}

func (p *Plugin) interfaceBatch(ctx context.Context, ops []api.BatchOp) {
	var pending []linkDelete
	// gone: the interfaces whose links this batch deleted, per namespace,
	// for release (a namespace the agent made goes with its last
	// interface: the others of the batch count as gone too).
	gone := map[nsplugin.Ref][]string{}
	var refs []nsplugin.Ref
	deleted := func(ref nsplugin.Ref, name string) {
		if _, ok := gone[ref]; !ok {
			refs = append(refs, ref)
		}
		gone[ref] = append(gone[ref], name)
		p.setInherited(name, false)
	}
	dumps := linkDumps{}
	flush := func() {
		p.deleteLinks(pending, dumps, deleted)
		pending = pending[:0]
		clear(dumps)
		for _, ref := range refs {
			p.release(ref, gone[ref]...)
		}
		clear(gone)
		refs = refs[:0]
	}
	for i := range ops {
		op := &ops[i]
		if bulkDelete(op) {
			if d, ok := p.prepareLinkDelete(op, dumps, deleted); ok {
				pending = append(pending, d)
			}
			continue
		}
		flush()
		var err error
		switch op.Op {
		case api.OpDelete:
			v, ok := op.From.(*linuxif.Interface)
			if !ok {
				err = api.NonRetriable(fmt.Errorf("descriptor %s: value of type %T, expected %T", InterfaceDescriptorName, op.From, v))
				break
			}
			md, _ := op.Metadata.(*Metadata)
			if err = p.delete(ctx, op.Key, v, md); err == nil {
				op.Done(nil)
			}
		default:
			value, ok := op.To.(*linuxif.Interface)
			if !ok {
				err = api.NonRetriable(fmt.Errorf("descriptor %s: value of type %T, expected %T", InterfaceDescriptorName, op.To, value))
				break
			}
			md, _ := op.Metadata.(*Metadata)
			var newMd *Metadata
			if op.Op == api.OpCreate {
				newMd, err = p.create(ctx, op.Key, value)
			} else {
				old, _ := op.From.(*linuxif.Interface)
				newMd, err = p.update(ctx, op.Key, old, value, md)
			}
			if err == nil {
				op.Done(newMd)
			}
		}
		if err != nil {
			op.Fail(err)
		}
	}
	flush()
}

// prepareLinkDelete finds the link of a VETH or DUMMY delete for
// deleteLinks (ok), or settles the delete (the link or its namespace is
// gone: done; not ours, or the lookup failed: that error).
func (p *Plugin) prepareLinkDelete(op *api.BatchOp, dumps linkDumps, deleted func(nsplugin.Ref, string)) (linkDelete, bool) {
	v := op.From.(*linuxif.Interface)
	ref := nsplugin.RefOf(v.GetNamespace())
	settle := func(err error) (linkDelete, bool) {
		if err != nil {
			op.Fail(err)
		} else {
			deleted(ref, v.GetName())
			op.Done(nil)
		}
		return linkDelete{}, false
	}
	h, err := p.ns.Handle(ref, false)
	if errors.Is(err, errNotExist) {
		return settle(nil) // the namespace is gone, and the link with it
	}
	if err != nil {
		return settle(err)
	}
	link, where, err := p.linkToDelete(h, ref, v, dumps.lookup)
	if link == nil {
		return settle(err)
	}
	a := link.Attrs()
	return linkDelete{op: op, v: v, ref: ref, where: where, index: a.Index, name: a.Name, group: a.Group}, true
}

// deleteLinks deletes the links, per namespace as one group when there
// are several (deleteGroup), the others one by one (pipelined), and
// settles each operation with its own result (a link gone meanwhile, with
// its peer, is deleted).
func (p *Plugin) deleteLinks(dels []linkDelete, dumps linkDumps, deleted func(nsplugin.Ref, string)) {
	if len(dels) == 0 {
		return
	}
	var byNS [][]*linkDelete
	at := map[nsplugin.Ref]int{}
	for i := range dels {
		d := &dels[i]
		j, ok := at[d.where]
		if !ok {
			j = len(byNS)
			at[d.where] = j
			byNS = append(byNS, nil)
		}
		byNS[j] = append(byNS[j], d)
	}
	errs := map[*linkDelete]error{}
	for _, group := range byNS {
		left := group
		if len(group) > 1 {
			left = p.deleteGroup(group[0].where, group, dumps[group[0].where])
		}
		if len(left) == 0 {
			continue
		}
		reqs := make([]*nlbatch.Request, len(left))
		for i, d := range left {
			reqs[i] = &nlbatch.Request{NS: d.where, Msg: nlbatch.LinkDel(d.index)}
		}
		p.pool.Run(reqs)
		for i, d := range left {
			// A namespace gone took its links with it.
			if err := reqs[i].Err; err != nil && !isNotFound(err) && !errors.Is(err, errNotExist) {
				errs[d] = fmt.Errorf("deleting %s: %w", d.name, err)
			}
		}
	}
	for i := range dels {
		d := &dels[i]
		if err := errs[d]; err != nil {
			d.op.Fail(err)
			continue
		}
		deleted(d.ref, d.v.GetName())
		d.op.Done(nil)
	}
}

// deleteGroup deletes the links of the namespace where as one group and
// returns those left for one-by-one deletes: the links it could not put
// into the group, or all when the group delete did not happen.
//
// The group is one no link of the namespace is in (a random number not
// among the groups of a dump). The links are put into it, a second dump
// checks that the group holds only them (else something else took the
// number meanwhile: the group is not deleted), then one RTM_DELLINK of the
// group deletes them. Whenever the group is not deleted, the links put
// into it get their own group back.
func (p *Plugin) deleteGroup(where nsplugin.Ref, group []*linkDelete, dump *linkDump) (left []*linkDelete) {
	h, err := p.ns.Handle(where, false)
	if err != nil {
		return group
	}
	var links []netlink.Link
	if dump != nil && dump.err == nil {
		links = dump.links // made by this batch's lookups, before any change
	} else if links, err = h.LinkList(); err != nil {
		p.log.Warn("listing links to delete them as a group; deleting them one by one", "netns", where.String(), "error", err)
		return group
	}
	id := unusedGroup(links)
	reqs := make([]*nlbatch.Request, len(group))
	for i, d := range group {
		reqs[i] = &nlbatch.Request{NS: where, Msg: nlbatch.LinkSetGroup(d.index, id)}
	}
	p.pool.Run(reqs)
	if testHookGroupSet != nil {
		testHookGroupSet(where, id)
	}
	var in []*linkDelete
	for i, d := range group {
		switch err := reqs[i].Err; {
		case err == nil:
			in = append(in, d)
		case isNotFound(err):
			// Gone meanwhile (with its peer): deleted.
		default:
			// Not in the group: deleted one by one, with its own result.
			p.log.Debug("putting a link into the group to delete failed", "link", d.name, "netns", where.String(), "error", err)
			left = append(left, d)
		}
	}
	if len(in) == 0 {
		return left
	}
	restore := func(why string, err error) []*linkDelete {
		p.log.Warn("deleting links as one group: "+why+"; deleting them one by one", "netns", where.String(), "links", len(in), "error", err)
		reqs := make([]*nlbatch.Request, len(in))
		for i, d := range in {
			reqs[i] = &nlbatch.Request{NS: where, Msg: nlbatch.LinkSetGroup(d.index, d.group)}
		}
		p.pool.Run(reqs)
		for i, d := range in {
			if err := reqs[i].Err; err != nil && !isNotFound(err) {
				p.log.Warn("giving a link its group back", "link", d.name, "netns", where.String(), "group", d.group, "error", err)
			}
		}
		return append(left, in...)
	}
	// Only ours in the group: a dump after setting it (the window left is
	// the one between this dump and the delete).
	links, err = h.LinkList()
	if err != nil {
		return restore("listing links", err)
	}
	ours := make(map[int]bool, len(in))
	for _, d := range in {
		ours[d.index] = true
	}
	for _, l := range links {
		if a := l.Attrs(); a.Group == id && !ours[a.Index] {
			return restore("another link is in the group", fmt.Errorf("link %s (index %d) is in group %d too", a.Name, a.Index, id))
		}
	}
	del := &nlbatch.Request{NS: where, Msg: nlbatch.LinkDelGroup(id)}
	p.pool.Run([]*nlbatch.Request{del})
	// ENODEV: no link left in the group (all gone meanwhile).
	if del.Err != nil && !isNotFound(del.Err) {
		return restore("the kernel refused the group delete", del.Err)
	}
	return left
}

// unusedGroup returns a link group none of the links is in (not 0, the
// default group, which the kernel refuses to delete).
func unusedGroup(links []netlink.Link) uint32 {
	used := make(map[uint32]bool, len(links))
	for _, l := range links {
		used[l.Attrs().Group] = true
	}
	for {
		if id := groupCandidate(); !used[id] {
			return id
		}
	}
}

// groupCandidate draws a group number for unusedGroup (tests replace it).
var groupCandidate = func() uint32 { return rand.Uint32N(1<<31-2) + 1 }

// testHookGroupSet, when set (tests), runs after deleteGroup put the links
// into group id, before it checks the group.
var testHookGroupSet func(where nsplugin.Ref, id uint32)

// linkDumps holds the links of namespaces, one dump each, for the lookups
// of the deletes of a batch (one dump instead of a request per link). It
// is cleared once the deletes are done.
type linkDumps map[nsplugin.Ref]*linkDump

type linkDump struct {
	links  []netlink.Link
	byName map[string]netlink.Link
	err    error
}

// lookup finds a link by name in namespace ref (handle h) in its dump, or
// with a request when the dump failed.
func (d linkDumps) lookup(ref nsplugin.Ref, h *netlink.Handle, name string) (netlink.Link, error) {
	dump, ok := d[ref]
	if !ok {
		dump = &linkDump{}
		dump.links, dump.err = h.LinkList()
		dump.byName = make(map[string]netlink.Link, len(dump.links))
		for _, l := range dump.links {
			dump.byName[l.Attrs().Name] = l
		}
		d[ref] = dump
	}
	if dump.err != nil {
		return h.LinkByName(name)
	}
	if l, ok := dump.byName[name]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("link %s: %w", name, syscall.ENODEV)
}

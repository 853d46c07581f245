package ifplugin

import (
	"context"
	"fmt"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// Batches (api.KVDescriptor.Batch): the interface, admin state and address
// descriptors send the requests of many operations pipelined
// (vppcalls.Pipe) instead of one request and its reply at a time. Each
// operation is prepared and completed by the same code as its Create or
// Delete, and gets its own result. The batch's order is kept: a run of
// operations that pipeline is sent together, in order; any other operation
// (an Update, an interface of a type other than loopback) flushes what is
// queued and runs as its own Create, Update or Delete, then the batch goes
// on.
//
// A Delete first checks that VPP still has the interface at its index
// under its tag (own: VPP reuses indexes). Alone it reads that one
// interface; in a batch the Deletes share one sw_interface_dump of every
// interface (a vppList), read when the first of them is prepared: the
// operations of an admin state or address batch change no interface's
// index or tag, and a run of loopback Deletes only removes interfaces
// other than the ones it checks.

// queued is an operation queued as a request on a Pipe: complete, called
// after the Pipe is sent, gives its result.
type queued func(pipe *vppcalls.Pipe) (complete func(ctx context.Context) (metadata any, err error))

// done is a queued operation that needs no request: it succeeds.
func done(*vppcalls.Pipe) func(context.Context) (any, error) {
	return func(context.Context) (any, error) { return nil, nil }
}

// preparer prepares one operation of a batch (see runBatch); list is the
// batch's list of VPP's interfaces, for Deletes.
type preparer func(op *api.BatchOp, list *vppList) (queued, error)

// runBatch runs the operations in order. prepare returns an operation's
// request (queued), nil to run it alone (its descriptor's Create, Update or
// Delete: d), or an error that fails it without a request.
func (p *Plugin) runBatch(ctx context.Context, d *api.KVDescriptor, ops []api.BatchOp, prepare preparer) {
	type pendingOp struct {
		op       *api.BatchOp
		complete func(ctx context.Context) (any, error)
	}
	var pipe *vppcalls.Pipe
	var pending []pendingOp
	list := p.newVPPList(ctx)
	flush := func() {
		if len(pending) == 0 {
			return
		}
		pipe.Send(ctx)
		for _, x := range pending {
			if md, err := x.complete(ctx); err != nil {
				x.op.Fail(err)
			} else {
				x.op.Done(md)
			}
		}
		pipe, pending = nil, pending[:0]
	}
	for i := range ops {
		op := &ops[i]
		q, err := prepare(op, list)
		switch {
		case err != nil:
			op.Fail(err)
		case q == nil:
			flush()
			runAlone(ctx, d, op)
		default:
			if pipe == nil {
				pipe = p.h.NewPipe()
			}
			pending = append(pending, pendingOp{op, q(pipe)})
		}
	}
	flush()
}

// runAlone runs one operation of a batch with d's Create, Update or
// Delete.
func runAlone(ctx context.Context, d *api.KVDescriptor, op *api.BatchOp) {
	var md any
	var err error
	switch op.Op {
	case api.OpCreate:
		md, err = d.Create(ctx, op.Key, op.To)
	case api.OpUpdate:
		md, err = d.Update(ctx, op.Key, op.From, op.To, op.Metadata)
	case api.OpDelete:
		err = d.Delete(ctx, op.Key, op.From, op.Metadata)
	default:
		err = api.NonRetriable(fmt.Errorf("%s: unknown operation %s", op.Key, op.Op))
	}
	if err != nil {
		op.Fail(err)
		return
	}
	op.Done(md)
}

// withBatch sets d.Batch to run the batch with prepare (see runBatch).
func (p *Plugin) withBatch(d *api.KVDescriptor, prepare preparer) *api.KVDescriptor {
	d.Batch = func(ctx context.Context, ops []api.BatchOp) { p.runBatch(ctx, d, ops, prepare) }
	return d
}

// ---- interfaces

// interfaceBatch is the interface descriptor's Batch: runs of loopback
// Creates are created together (createLoopbacks), runs of loopback Deletes
// deleted together (deleteLoopbacks), everything else as its own Create,
// Update or Delete.
func (p *Plugin) interfaceBatch(d *api.KVDescriptor) func(ctx context.Context, ops []api.BatchOp) {
	return func(ctx context.Context, ops []api.BatchOp) {
		for i := 0; i < len(ops); {
			j := i
			for j < len(ops) && isLoopbackOp(&ops[j], api.OpCreate) {
				j++
			}
			if j > i {
				p.createLoopbacks(ctx, ops[i:j])
				i = j
				continue
			}
			for j < len(ops) && isLoopbackOp(&ops[j], api.OpDelete) {
				j++
			}
			if j > i {
				p.runBatch(ctx, d, ops[i:j], p.prepareLoopbackDelete)
				i = j
				continue
			}
			runAlone(ctx, d, &ops[i])
			i++
		}
	}
}

// isLoopbackOp tells whether op is the operation kind on a loopback.
func isLoopbackOp(op *api.BatchOp, kind api.TxnOperation) bool {
	v := op.To
	if kind == api.OpDelete {
		v = op.From
	}
	i, ok := v.(*vppif.Interface)
	return ok && op.Op == kind && i.GetType() == vppif.Interface_SOFTWARE_LOOPBACK
}

// prepareLoopbackDelete queues the delete_loopback of a loopback's Delete
// (as delete: a foreign interface, or one VPP no longer has, is left as
// it is, with success).
func (p *Plugin) prepareLoopbackDelete(op *api.BatchOp, list *vppList) (queued, error) {
	v := op.From.(*vppif.Interface)
	md, _ := op.Metadata.(*Metadata)
	if md != nil && md.Foreign {
		return done, nil
	}
	idx, ok, err := list.own(v.GetName(), md)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", v.GetName(), err)
	}
	if !ok {
		return done, nil
	}
	return func(pipe *vppcalls.Pipe) func(context.Context) (any, error) {
		settle := p.recordChange(v.GetName(), agentChange{SwIfIndex: idx, Deleted: true})
		r := pipe.DeleteLoopback(idx)
		return func(context.Context) (any, error) {
			settle()
			if r.Err != nil {
				return nil, fmt.Errorf("interface %s: %w", v.GetName(), r.Err)
			}
			return nil, nil
		}
	}, nil
}

// vppList is VPP's interfaces as one sw_interface_dump of every interface
// lists them, read once, when first asked for: the Deletes of a batch
// check their interfaces against it.
type vppList struct {
	p      *Plugin
	ctx    context.Context
	read   bool
	err    error
	byIdx  map[uint32]*vppcalls.Interface
	ourTag map[string]uint32 // the first of ours carrying each tag
}

func (p *Plugin) newVPPList(ctx context.Context) *vppList { return &vppList{p: p, ctx: ctx} }

// own is Plugin.own against the list: the index of the interface of a
// logical name, ok false when VPP has none.
func (l *vppList) own(name string, md *Metadata) (idx uint32, ok bool, err error) {
	if !l.read {
		l.read = true
		var all []*vppcalls.Interface
		if all, l.err = l.p.h.ListInterfaces(l.ctx); l.err == nil {
			l.byIdx = make(map[uint32]*vppcalls.Interface, len(all))
			l.ourTag = make(map[string]uint32, len(all))
			for _, i := range all {
				l.byIdx[i.SwIfIndex] = i
				if _, dup := l.ourTag[i.Tag]; ours(i) && !dup {
					l.ourTag[i.Tag] = i.SwIfIndex
				}
			}
		}
	}
	if l.err != nil {
		return 0, false, l.err
	}
	if md != nil && l.p.isCurrent(md) {
		cur := l.byIdx[md.SwIfIndex]
		return md.SwIfIndex, cur != nil && cur.Tag == name, nil
	}
	idx, ok = l.ourTag[name]
	return idx, ok, nil
}

// createLoopbacks creates loopbacks as create does, step by step for all
// of them: every create_loopback; then every tag (and MTU), with one
// sw_interface_dump of every interface at the end for VPP's names (the
// metadata); a loopback whose tag or MTU VPP refused, or that the dump
// lacks, is deleted again, as create does.
func (p *Plugin) createLoopbacks(ctx context.Context, ops []api.BatchOp) {
	pid := p.currentPID()
	type loop struct {
		op      *api.BatchOp
		v       *vppif.Interface
		created *vppcalls.Result[uint32]
		set     []*vppcalls.Result[struct{}]
	}
	loops := make([]loop, 0, len(ops))
	create := p.h.NewPipe()
	for i := range ops {
		v := ops[i].To.(*vppif.Interface)
		hw, err := parseMAC(v.GetPhysAddress())
		if err != nil {
			ops[i].Fail(err)
			continue
		}
		loops = append(loops, loop{op: &ops[i], v: v, created: create.CreateLoopback(hw)})
	}
	if create.Len() == 0 {
		return
	}
	create.Send(ctx)
	configure := p.h.NewPipe()
	for k := range loops {
		l := &loops[k]
		if l.created.Err != nil {
			l.op.Fail(fmt.Errorf("interface %s: %w", l.v.GetName(), l.created.Err))
			continue
		}
		idx := l.created.Value
		// Created admin down: what the agent last did to it until its
		// admin state is set (the watcher may list it before that).
		p.recordChange(l.v.GetName(), agentChange{SwIfIndex: idx})()
		l.set = append(l.set, configure.SetTag(idx, l.v.GetName()))
		if mtu := l.v.GetMtu(); mtu != 0 {
			l.set = append(l.set, configure.SetMTU(idx, mtu))
		}
	}
	if configure.Len() == 0 {
		return
	}
	list := configure.ListInterfaces()
	configure.Send(ctx)
	byIdx := make(map[uint32]*vppcalls.Interface, len(list.Value))
	for _, i := range list.Value {
		byIdx[i.SwIfIndex] = i
	}
	for k := range loops {
		l := &loops[k]
		if l.created.Err != nil {
			continue
		}
		idx := l.created.Value
		err := list.Err
		for _, r := range l.set {
			if r.Err != nil {
				err = r.Err
				break
			}
		}
		if err == nil && byIdx[idx] == nil {
			err = vanished(idx)
		}
		if err != nil {
			if derr := p.deleteByType(undoCtx(ctx), l.v, idx); derr != nil {
				p.log.Warn("VPP interface: could not delete a half-configured interface", "interface", l.v.GetName(), "sw_if_index", idx, "error", derr)
			}
			l.op.Fail(fmt.Errorf("interface %s: %w", l.v.GetName(), err))
			continue
		}
		l.op.Done(p.newMetadata(l.v, idx, pid, byIdx[idx]))
	}
}

// ---- admin state and addresses

// prepareAdminState queues the Create of an admin state value, and the
// Delete of UP (as its descriptor's Delete: the interface set down; one
// gone, or no longer under its tag at its index, needs nothing).
func (p *Plugin) prepareAdminState(op *api.BatchOp, list *vppList) (queued, error) {
	if op.Op == api.OpDelete {
		v, _ := op.From.(*vppif.Interface)
		if !v.GetEnabled() {
			return done, nil
		}
		idx, ok, err := p.ownIndexIn(list, v.GetName())
		if err != nil || !ok {
			return done, err
		}
		return func(pipe *vppcalls.Pipe) func(context.Context) (any, error) {
			settle := p.recordChange(v.GetName(), agentChange{SwIfIndex: idx})
			r := pipe.SetAdminUp(idx, false)
			return func(context.Context) (any, error) { settle(); return nil, adminStateDown(v, r.Err) }
		}, nil
	}
	if op.Op != api.OpCreate {
		return nil, nil
	}
	v, _ := op.To.(*vppif.Interface)
	idx, err := p.ownSwIfIndex(v.GetName())
	if err != nil {
		return nil, err
	}
	return func(pipe *vppcalls.Pipe) func(context.Context) (any, error) {
		settle := p.recordChange(v.GetName(), agentChange{SwIfIndex: idx, AdminUp: v.GetEnabled()})
		r := pipe.SetAdminUp(idx, v.GetEnabled())
		return func(context.Context) (any, error) { settle(); return nil, adminStateSet(v, r.Err) }
	}, nil
}

// prepareAddress queues the Create of an address value, and its Delete
// (as its descriptor's Delete: an interface gone, or no longer under its
// tag at its index, needs nothing).
func (p *Plugin) prepareAddress(op *api.BatchOp, list *vppList) (queued, error) {
	if op.Op == api.OpDelete {
		v, _ := op.From.(*vppif.Interface)
		addr, err := addressOf(v)
		if err != nil {
			return nil, err
		}
		idx, ok, err := p.ownIndexIn(list, v.GetName())
		if err != nil || !ok {
			return done, err
		}
		return func(pipe *vppcalls.Pipe) func(context.Context) (any, error) {
			r := pipe.DelAddress(idx, addr)
			return func(context.Context) (any, error) { return nil, addressRemoved(v, addr, r.Err) }
		}, nil
	}
	if op.Op != api.OpCreate {
		return nil, nil
	}
	v, _ := op.To.(*vppif.Interface)
	addr, idx, err := p.addressTarget(v)
	if err != nil {
		return nil, err
	}
	return func(pipe *vppcalls.Pipe) func(context.Context) (any, error) {
		r := pipe.AddAddress(idx, addr)
		return func(ctx context.Context) (any, error) { return nil, p.addressAdded(ctx, v, idx, addr, r.Err) }
	}, nil
}

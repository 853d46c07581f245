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
// (an Update, a Delete that first reads VPP, an interface of a type other
// than loopback) flushes what is queued and runs as its own Create, Update
// or Delete, then the batch goes on.

// queued is an operation queued as a request on a Pipe: complete, called
// after the Pipe is sent, gives its result.
type queued func(pipe *vppcalls.Pipe) (complete func(ctx context.Context) (metadata any, err error))

// runBatch runs the operations in order. prepare returns an operation's
// request (queued), nil to run it alone (its descriptor's Create, Update or
// Delete: d), or an error that fails it without a request.
func (p *Plugin) runBatch(ctx context.Context, d *api.KVDescriptor, ops []api.BatchOp, prepare func(op *api.BatchOp) (queued, error)) {
	type pendingOp struct {
		op       *api.BatchOp
		complete func(ctx context.Context) (any, error)
	}
	var pipe *vppcalls.Pipe
	var pending []pendingOp
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
		q, err := prepare(op)
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
func (p *Plugin) withBatch(d *api.KVDescriptor, prepare func(op *api.BatchOp) (queued, error)) *api.KVDescriptor {
	d.Batch = func(ctx context.Context, ops []api.BatchOp) { p.runBatch(ctx, d, ops, prepare) }
	return d
}

// ---- interfaces

// interfaceBatch is the interface descriptor's Batch: runs of loopback
// Creates are created together (createLoopbacks), everything else as its
// own Create, Update or Delete.
func (p *Plugin) interfaceBatch(d *api.KVDescriptor) func(ctx context.Context, ops []api.BatchOp) {
	return func(ctx context.Context, ops []api.BatchOp) {
		for i := 0; i < len(ops); {
			j := i
			for j < len(ops) && isLoopbackCreate(&ops[j]) {
				j++
			}
			if j > i {
				p.createLoopbacks(ctx, ops[i:j])
				i = j
				continue
			}
			runAlone(ctx, d, &ops[i])
			i++
		}
	}
}

func isLoopbackCreate(op *api.BatchOp) bool {
	v, ok := op.To.(*vppif.Interface)
	return ok && op.Op == api.OpCreate && v.GetType() == vppif.Interface_SOFTWARE_LOOPBACK
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

// prepareAdminState queues the Create of an admin state value; a Delete
// runs alone (it first checks VPP's tag at the interface's index).
func (p *Plugin) prepareAdminState(op *api.BatchOp) (queued, error) {
	if op.Op != api.OpCreate {
		return nil, nil
	}
	v, _ := op.To.(*vppif.Interface)
	idx, err := p.ownSwIfIndex(v.GetName())
	if err != nil {
		return nil, err
	}
	return func(pipe *vppcalls.Pipe) func(context.Context) (any, error) {
		p.recordChange(v.GetName(), agentChange{SwIfIndex: idx, AdminUp: v.GetEnabled()})
		r := pipe.SetAdminUp(idx, v.GetEnabled())
		return func(context.Context) (any, error) { return nil, adminStateSet(v, r.Err) }
	}, nil
}

// prepareAddress queues the Create of an address value; a Delete runs
// alone (it first checks VPP's tag at the interface's index).
func (p *Plugin) prepareAddress(op *api.BatchOp) (queued, error) {
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

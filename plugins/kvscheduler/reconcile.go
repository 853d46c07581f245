package kvscheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	kvs "github.com/netagent-io/netagent/proto/kvscheduler"
)

// txnRun is one pass of a transaction over the graph: the simulation (no
// descriptor called, every operation assumed to succeed) or the execution.
// Both run the same code, so the plan is what execution does when nothing
// fails.
type txnRun struct {
	s     *Scheduler
	g     *graph
	descs *descriptorSet
	// exec makes the descriptor calls (see executor).
	exec executor
	// deep makes in-sync values check their derived values too (resync).
	deep bool
	// revert: stop at the first failure (TxnOptions.Revert).
	revert  bool
	stopped bool
	// retryTxn flags operations as retries.
	retryTxn bool
	// retryPolicy is the transaction's retry policy, given to the values
	// whose intent it sets (NB transactions only).
	retryPolicy uint8
	// reverting flags operations as undoing earlier ones.
	reverting bool

	ops    []*api.RecordedTxnOp
	opSlab []api.RecordedTxnOp // records are allocated in slabs
	// failedOps counts the ops with an error (most transactions have none:
	// their records need not be read again).
	failedOps int
	failed    []*node
	// done lists successful SB operations, for revert.
	done []doneOp
	// id tells this run's marks on nodes from other runs' marks.
	id uint64
	// steps are the descriptor calls the simulation plans (planExec).
	steps chunks[step]
	// changed lists the base values whose status changed (when
	// trackChanges).
	trackChanges bool
	changed      []*node
	// errs are errors not tied to one operation (Retrieve, bad input).
	errs []api.KeyWithError
	// revalidate are values refused a unique name that its holder dropped
	// during the run (see revalidated).
	revalidate []*node
}

// errBlockedByDependent is the error of a value whose deletion waits for a
// dependent value that failed to be deleted.
var errBlockedByDependent = errors.New("not deleted: a value that depends on it could not be deleted")

// doneOp is an executed SB operation, with what is needed to undo it.
type doneOp struct {
	n                   *node
	op                  api.TxnOperation
	prevValue, newValue proto.Message
	prevMeta, newMeta   any
}

type opFlags struct {
	recreate bool
	noop     bool
}

func (r *txnRun) markChanged(n *node) {
	if !r.trackChanges {
		return
	}
	for n.base != nil {
		n = n.base
	}
	if n.changedRun != r.id {
		n.changedRun = r.id
		r.changed = appendDoubling(r.changed, n)
	}
}

func (r *txnRun) setStatus(n *node, state api.ValueState, op api.TxnOperation, err error, details []string) {
	if n.state == state && n.lastOp == op && n.err == err && equalStrings(n.details, details) {
		return
	}
	r.g.setStatus(n, status{state, op, err, details})
	r.markChanged(n)
}

func (r *txnRun) recordOp(n *node, op api.TxnOperation, prevValue, newValue proto.Message, prev status, err error, fl opFlags) {
	if len(r.opSlab) == 0 {
		r.opSlab = make([]api.RecordedTxnOp, min(opSlabOps, 4+len(r.ops)))
	}
	rec := &r.opSlab[0]
	r.opSlab = r.opSlab[1:]
	r.ops = appendDoubling(r.ops, rec)
	if err != nil {
		r.failedOps++
	}
	*rec = api.RecordedTxnOp{
		Operation:  op,
		Key:        n.key,
		Descriptor: n.descName(),
		PrevValue:  prevValue,
		NewValue:   newValue,
		PrevState:  prev.state,
		NewState:   n.state,
		PrevErr:    prev.err,
		NewErr:     err,
		Derived:    n.base != nil,
		Property:   n.base != nil && n.desc == nil,
		NOOP:       fl.noop,
		IsRevert:   r.reverting,
		IsRetry:    r.retryTxn,
		IsRecreate: fl.recreate,
		WasPending: prev.state == api.ValueStatePending,
		IsPending:  n.state == api.ValueStatePending,
		IsFixed: err == nil && (prev.state == api.ValueStateFailed || prev.state == api.ValueStateRetrying || prev.state == api.ValueStateInvalid) &&
			(n.state == api.ValueStateConfigured || n.state == api.ValueStateObtained || n.state == api.ValueStateRemoved),
	}
}

func statusOf(n *node) status { return status{n.state, n.lastOp, n.err, n.details} }

// --- descriptor calls -------------------------------------------------------

// pure runs a callback that must not call the scheduler (Validate,
// Dependencies, DerivedValues, comparators), converting a panic into an error.
func pure[T any](f func() T) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f(), nil
}

func (r *txnRun) callCreate(n *node) (any, error) {
	if n.desc == nil {
		return nil, nil
	}
	if n.desc.d.Create == nil {
		if n.base != nil {
			return nil, nil
		}
		return nil, api.NonRetriable(fmt.Errorf("descriptor %s does not create values (it has no Create)", n.descName()))
	}
	return r.exec.call(r, n, api.OpCreate)
}

func (r *txnRun) callDelete(n *node) error {
	if n.desc == nil || n.obtained || n.desc.d.Delete == nil {
		return nil
	}
	_, err := r.exec.call(r, n, api.OpDelete)
	return err
}

func (r *txnRun) callUpdate(n *node) (any, error) {
	if n.desc == nil {
		return n.metadata, nil
	}
	return r.exec.call(r, n, api.OpUpdate)
}

func (r *txnRun) equivalent(n *node, a, b proto.Message) bool {
	return equivalentValues(n, a, b)
}

// shareApplied makes the applied value, equivalent to the intended one, the
// intended value itself when the two are equal copies (a refresh's or a
// Retrieve's copy of what the NB asked): one copy per value in memory, not
// two. A value the SB holds otherwise (equivalent but not equal: the
// descriptor's comparator ignores the difference) keeps the SB's copy.
func (r *txnRun) shareApplied(n *node) {
	if n.applied == n.intended {
		return
	}
	if n.desc != nil && n.desc.d.ValueComparator != nil && !sameValue(n.applied, n.intended) {
		return
	}
	r.g.setApplied(n, n.intended)
}

func (r *txnRun) needsRecreate(n *node) bool {
	if n.desc == nil || (n.base != nil && n.desc.d.Create == nil) {
		return false // properties are just replaced
	}
	if n.desc.d.Update == nil {
		return true
	}
	if f := n.desc.d.UpdateWithRecreate; f != nil {
		recreate, err := pure(func() bool { return f(n.key, n.applied, n.intended, n.metadata) })
		return err != nil || recreate
	}
	return false
}

// --- intents ----------------------------------------------------------------

// setIntent makes value the intended value of n and computes what depends on
// the value: validity and dependencies.
func (r *txnRun) setIntent(n *node, value proto.Message) {
	held := r.g.uniqueHeld(n)
	r.g.setIntended(n, value)
	r.g.setRevision(n, n.revision+1)
	r.computeIntent(n, held)
}

// computeIntent computes validity, uniqueness and dependencies of n's
// intended value; held are the unique names n held before.
func (r *txnRun) computeIntent(n *node, held []string) {
	value := n.intended
	var invalid error
	var deps []api.Dependency
	if iv, ok := value.(*kvs.InvalidValue); ok {
		invalid = api.NewInvalidValueError(errors.New(iv.GetReason()))
	} else if n.desc != nil && value != nil {
		invalid = r.validate(n, value)
		if f := n.desc.d.Dependencies; f != nil && invalid == nil {
			var err error
			deps, err = pure(func() []api.Dependency { return f(n.key, value) })
			if err != nil {
				invalid = api.NewInvalidValueError(fmt.Errorf("descriptor %s: Dependencies: %w", n.descName(), err))
			}
		}
	} else if n.desc != nil && n.applied != nil && n.desc.d.Dependencies != nil {
		// Nothing intended: keep the dependencies of what is applied, so it
		// is deleted before what it depends on.
		applied := n.applied
		deps, _ = pure(func() []api.Dependency { return n.desc.d.Dependencies(n.key, applied) })
	}
	if invalid == nil && value != nil && n.desc != nil && n.desc.d.Unique != nil {
		var names []api.UniqueName
		names, invalid = r.uniqueNames(n, value)
		if len(names) > 0 {
			// The descriptor's slice may be shared (api.KVDescriptor.
			// Dependencies): the names go to a copy.
			deps = slices.Clip(deps)
		}
		for _, un := range names {
			if invalid == nil {
				if h := r.g.uniqueHolder(un.Name, n); h != nil {
					invalid = api.NewInvalidValueError(&uniqueError{name: un, holder: h.key}, un.Field)
				}
			}
			deps = append(deps, api.Dependency{Label: un.Field, Exclusive: uniquePrefix + un.Name})
		}
	}
	if invalid != nil || n.invalidErr() != nil {
		r.g.setInvalid(n, invalid)
	}
	r.g.setDeps(n, validDeps(deps))
	if len(held) > 0 {
		// The values refused a name n no longer holds are validated again
		// (at the end of the run, see revalidate).
		still := r.g.uniqueHeld(n)
		for _, name := range held {
			if !slices.Contains(still, name) {
				r.g.eachUniqueUser(name, func(c *node) {
					if c != n && isUniqueRefusal(c.invalidErr()) {
						r.revalidate = append(r.revalidate, c)
					}
				})
			}
		}
	}
}

// uniqueNames asks the descriptor of n for the unique names of value.
func (r *txnRun) uniqueNames(n *node, value proto.Message) ([]api.UniqueName, error) {
	names, err := pure(func() []api.UniqueName { return n.desc.d.Unique(n.key, value) })
	if err != nil {
		return nil, api.NewInvalidValueError(fmt.Errorf("descriptor %s: Unique: %w", n.descName(), err))
	}
	out := names[:0:0]
	for _, un := range names {
		if un.Name != "" {
			out = append(out, un)
		}
	}
	return out, nil
}

// revalidated validates again, and reconciles, the values refused a unique
// name that its holder dropped during the run, in key order.
func (r *txnRun) revalidated() {
	for len(r.revalidate) > 0 && !r.stopped {
		batch := r.revalidate
		r.revalidate = nil
		slices.SortFunc(batch, func(a, b *node) int { return strings.Compare(a.key, b.key) })
		for i, c := range batch {
			if r.stopped || (i > 0 && batch[i-1] == c) || !c.inGraph || c.intended == nil {
				continue
			}
			if isUniqueRefusal(c.invalidErr()) {
				r.computeIntent(c, nil)
			}
			r.reconcile(c) // (nothing to do when its batch did it)
		}
	}
}

// recheckRefused validates again, before a batch is reconciled, the values
// refused a unique name that its holder dropped while the batch's intents
// were set, so that the batch does not reconcile them as still refused (and
// record a stale refusal); revalidated reconciles them at the end of the
// run.
func (r *txnRun) recheckRefused() {
	if len(r.revalidate) == 0 {
		return
	}
	batch := slices.Clone(r.revalidate)
	slices.SortFunc(batch, func(a, b *node) int { return strings.Compare(a.key, b.key) })
	for i, c := range batch {
		if (i > 0 && batch[i-1] == c) || !c.inGraph || c.intended == nil || !isUniqueRefusal(c.invalidErr()) {
			continue
		}
		r.computeIntent(c, nil)
	}
}

// uniquePrefix marks the Exclusive names of the edges that index unique
// names (they are not dependencies: always satisfied).
const uniquePrefix = "\x00unique\x00"

// uniqueError is the refusal of a unique name another value holds.
type uniqueError struct {
	name   api.UniqueName
	holder string
}

func (e *uniqueError) Error() string {
	return fmt.Sprintf("%s: %s is already used by %s", e.name.Field, e.name.Name, e.holder)
}

// isUniqueRefusal tells whether an invalid-value error is the refusal of a
// unique name.
func isUniqueRefusal(err error) bool {
	var ue *uniqueError
	return err != nil && errors.As(err, &ue)
}

// validDeps drops dependencies that name nothing (no Key, AnyOf or
// Exclusive).
func validDeps(deps []api.Dependency) []api.Dependency {
	valid := true
	for _, d := range deps {
		valid = valid && (d.Key != "" || !d.AnyOf.IsZero() || d.Exclusive != "")
	}
	if valid {
		return deps
	}
	out := deps[:0:0]
	for _, d := range deps {
		if d.Key != "" || !d.AnyOf.IsZero() || d.Exclusive != "" {
			out = append(out, d)
		}
	}
	return out
}

func (r *txnRun) validate(n *node, value proto.Message) error {
	d := n.desc.d
	if d.ValueTypeName != "" {
		if got, ok := n.desc.ofValueType(value); !ok {
			return api.NewInvalidValueError(fmt.Errorf("value of type %s, descriptor %s expects %s", got, d.Name, d.ValueTypeName))
		}
	}
	if d.Validate == nil {
		return nil
	}
	err, perr := pure(func() error { return d.Validate(n.key, value) })
	if perr != nil {
		return api.NewInvalidValueError(fmt.Errorf("descriptor %s: Validate: %w", d.Name, perr))
	}
	if err != nil {
		var inv *api.InvalidValueError
		if !errors.As(err, &inv) {
			err = api.NewInvalidValueError(err)
		}
	}
	return err
}

// applyNB applies NB changes (nil value: delete). Every intended value is
// set first, then the values are reconciled dependencies first, so that no
// value is created against, or deleted because of, the old state of a value
// the same transaction changes.
func (r *txnRun) applyNB(changes []kvChange) {
	deletes := 0
	for _, kv := range changes {
		if kv.value == nil {
			deletes++
		}
	}
	b := batch{deletes: make([]*node, 0, deletes), others: make([]*node, 0, len(changes)-deletes)}
	for _, kv := range changes {
		if n := r.setNBIntent(r.g.get(kv.key), kv.key, kv.value); n != nil {
			r.enqueue(&b, n)
		}
	}
	r.recheckRefused()
	r.reconcileBatch(&b)
}

// batch is the values a transaction reconciles: the deletes (nothing
// intended) first, in their order, then the other values in their order,
// each after the values of the batch it depends on (by Key; cycles are
// broken where they are entered). Until its turn comes, a value of the batch
// is not reconciled from elsewhere (notifyAvailable): a value waits for the
// values of the same batch it depends on to be reconciled first, rather than
// being created against their old state.
//
// The order is found while reconciling, not computed first: in a bulk
// transaction every pass over the values costs a cache miss per value.
type batch struct {
	deletes, others []*node
}

// enqueue adds n to the batch. node.queued tells the batch's values that
// wait for their turn: r.id until the value is visited, r.id+1 while the
// values it depends on are reconciled before it (run ids go in steps of 2).
func (r *txnRun) enqueue(b *batch, n *node) {
	n.queued = r.id
	if n.intended == nil {
		b.deletes = append(b.deletes, n)
	} else {
		b.others = append(b.others, n)
	}
}

// waiting tells whether n waits for its turn in the run's batch.
func (r *txnRun) waiting(n *node) bool { return n.queued == r.id || n.queued == r.id+1 }

func (r *txnRun) reconcileBatch(b *batch) {
	r.g.batchRun = r.id
	defer func() { r.g.batchRun = 0 }()
	for _, n := range b.deletes {
		n.queued = 0
		if !r.stopped {
			r.reconcile(n)
		}
	}
	for _, n := range b.others {
		if n.queued == r.id {
			r.reconcileAfterDeps(n)
		}
	}
}

// reconcileAfterDeps reconciles the values of the batch that n depends on,
// then n.
func (r *txnRun) reconcileAfterDeps(n *node) {
	n.queued = r.id + 1
	for ei := range n.deps {
		e := &n.deps[ei]
		if e.dep.Key == "" {
			continue
		}
		if t := r.g.targetOf(e); t != nil && t.queued == r.id && t.intended != nil {
			r.reconcileAfterDeps(t)
		}
	}
	n.queued = 0
	if !r.stopped {
		r.reconcile(n)
	}
}

// setNBIntent records what the NB asks for one key, whose node is n (nil:
// none yet), and returns the node to reconcile (nil when there is nothing to
// do).
func (r *txnRun) setNBIntent(n *node, key string, value proto.Message) *node {
	if n != nil && n.base != nil {
		r.errs = append(r.errs, api.KeyWithError{Key: key, Operation: api.OpUndefined,
			Error: fmt.Errorf("key %s is derived from %s: change the base value instead", key, n.base.key)})
		return nil
	}
	if value == nil {
		if n == nil || n.obtained || n.intended == nil {
			return nil
		}
		r.g.setRetryPolicy(n, r.retryPolicy)
		r.setIntent(n, nil)
		return n
	}
	if n == nil {
		n = &node{key: key, desc: r.descs.forKey(key)}
		r.g.addNode(n)
	}
	r.g.setRetryPolicy(n, r.retryPolicy)
	if n.obtained {
		// The NB takes over a value the SB reported.
		r.g.setObtained(n, false)
		r.setIntent(n, value)
	} else if n.intended == nil || !sameValue(n.intended, value) {
		r.setIntent(n, value)
	}
	return n
}

// --- reconciliation ---------------------------------------------------------

// reconcile makes the applied value of n match the intended one, as far as
// dependencies allow.
func (r *txnRun) reconcile(n *node) {
	if r.stopped || n.removing || n.obtained {
		return
	}
	if n.intended == nil {
		r.adoptLeftover(n)
		if n.applied != nil && !r.removeFromSB(n, removeKeep) {
			return
		}
		if n.base == nil {
			r.dropNode(n)
		}
		return
	}
	if n.base != nil && (n.base.applied == nil || n.base.removing || n.base.intended == nil) {
		return // derived values exist only while their base does; it decides
	}
	if n.desc == nil && n.base == nil && n.invalidErr() == nil {
		if n.state != api.ValueStateUnimplemented {
			prev := statusOf(n)
			r.setStatus(n, api.ValueStateUnimplemented, api.OpUndefined, nil, nil)
			r.recordOp(n, api.OpCreate, nil, n.intended, prev, nil, opFlags{noop: true})
		}
		return
	}
	if invalid := n.invalidErr(); invalid != nil {
		r.adoptLeftover(n)
		if n.applied != nil && !r.removeFromSB(n, removeKeep) {
			return
		}
		if n.state != api.ValueStateInvalid || n.err != invalid {
			prev := statusOf(n)
			var fields []string
			var inv *api.InvalidValueError
			if errors.As(invalid, &inv) {
				fields = inv.InvalidFields
			}
			r.setStatus(n, api.ValueStateInvalid, api.OpValidate, invalid, fields)
			r.recordOp(n, api.OpValidate, n.applied, n.intended, prev, invalid, opFlags{noop: true})
		}
		return
	}
	if !r.g.depsMet(n) {
		r.adoptLeftover(n)
		if n.applied != nil && !r.removeFromSB(n, removeKeep) {
			return
		}
		if r.createCycle(n) {
			return
		}
		r.setPending(n)
		return
	}
	if n.applied == nil {
		r.create(n, opFlags{})
		return
	}
	if !r.equivalent(n, n.applied, n.intended) {
		r.update(n)
		return
	}
	r.shareApplied(n)
	if n.state != api.ValueStateConfigured {
		// In place already (found by a refresh, or a failure that did its
		// job after all): now it counts for what waits for it.
		op := n.lastOp
		if op == api.OpUndefined || op == api.OpValidate {
			op = api.OpCreate
		}
		r.setStatus(n, api.ValueStateConfigured, op, nil, nil)
		r.syncDerived(n, nil, false)
		r.notifyAvailable(n)
		return
	}
	if r.deep {
		r.syncDerived(n, nil, false)
	}
}

// adoptLeftover takes what a failed Create may have left in the SB as applied,
// when the value must not be in the SB, so that it is deleted (deleting a
// missing value succeeds by the descriptor contract).
func (r *txnRun) adoptLeftover(n *node) {
	if n.applied == nil && n.leftoverValue() != nil {
		r.g.setApplied(n, n.leftoverValue())
		r.g.setLeftover(n, nil)
	}
}

// setPending marks a value that waits for dependencies.
func (r *txnRun) setPending(n *node) {
	unmet := r.g.unmetDeps(n)
	if n.state == api.ValueStatePending && equalStrings(n.details, unmet) {
		return
	}
	prev := statusOf(n)
	r.setStatus(n, api.ValueStatePending, n.lastOp, nil, unmet)
	if prev.state != api.ValueStatePending {
		r.recordOp(n, api.OpCreate, nil, n.intended, prev, nil, opFlags{noop: true})
	}
}

// create creates n (dependencies are met), then its derived values, then
// whatever waited for it.
func (r *txnRun) create(n *node, fl opFlags) bool {
	if !r.createOne(n, fl) {
		return false
	}
	r.afterCreate(n)
	return true
}

func (r *txnRun) createOne(n *node, fl opFlags) bool {
	prev := statusOf(n)
	md, err := r.callCreate(n)
	if err != nil {
		r.fail(n, api.OpCreate, err)
		r.recordOp(n, api.OpCreate, nil, n.intended, prev, err, fl)
		return false
	}
	r.g.setApplied(n, n.intended)
	if n.leftoverValue() != nil {
		r.g.setLeftover(n, nil)
	}
	if n.desc != nil && n.desc.d.WithMetadata {
		r.g.setMetadata(n, md, r.exec.real())
	}
	if n.retryTicket() != nil {
		r.g.setRetry(n, nil)
	}
	r.setStatus(n, api.ValueStateConfigured, api.OpCreate, nil, nil)
	r.recordOp(n, api.OpCreate, nil, n.intended, prev, nil, fl)
	r.remember(n, api.OpCreate, nil, n.applied, nil, md)
	return true
}

func (r *txnRun) afterCreate(n *node) {
	if n.deps != nil && n.hasClaim() {
		r.notifyClaimed(n)
	}
	r.syncDerived(n, nil, false)
	r.notifyAvailable(n)
}

// notifyClaimed updates the details of the values waiting for a resource n
// now holds, so that they name it.
func (r *txnRun) notifyClaimed(n *node) {
	for ei := range n.deps {
		e := &n.deps[ei]
		if !e.isClaim() {
			continue
		}
		for x := r.g.claims[e.dep.Exclusive]; x != nil; x = x.next {
			if c := x.owner; c != n && c.state == api.ValueStatePending && c.applied == nil {
				r.setPending(c)
			}
		}
	}
}

func (r *txnRun) remember(n *node, op api.TxnOperation, prevValue, newValue proto.Message, prevMeta, newMeta any) {
	if r.revert && r.exec.real() && n.desc != nil && !r.reverting {
		r.done = append(r.done, doneOp{n: n, op: op, prevValue: prevValue, newValue: newValue, prevMeta: prevMeta, newMeta: newMeta})
	}
}

func (r *txnRun) fail(n *node, op api.TxnOperation, err error) {
	r.setStatus(n, api.ValueStateFailed, op, err, nil)
	r.failed = append(r.failed, n)
	if r.revert {
		r.stopped = true
	}
}

// update applies a changed intended value to an applied one.
func (r *txnRun) update(n *node) {
	if r.needsRecreate(n) {
		if !r.removeFromSB(n, removeRecreate) {
			return
		}
		if !r.g.depsMet(n) {
			r.reconcile(n) // it depended on one of its obsolete derived values
			return
		}
		r.create(n, opFlags{recreate: true})
		return
	}
	want, _ := r.derivedValues(n, n.intended)
	if !r.removeObsoleteDerived(n, want) {
		return
	}
	if n.applied == nil || !r.g.depsMet(n) {
		// It depended on one of its obsolete derived values.
		r.reconcile(n)
		return
	}
	prev := statusOf(n)
	prevValue, prevMeta := n.applied, n.metadata
	var md any = n.metadata
	var err error
	if n.desc != nil && (n.base == nil || n.desc.d.Update != nil) {
		md, err = r.callUpdate(n)
	}
	if err != nil {
		r.fail(n, api.OpUpdate, err)
		r.recordOp(n, api.OpUpdate, prevValue, n.intended, prev, err, opFlags{})
		return
	}
	r.g.setApplied(n, n.intended)
	if n.desc != nil && n.desc.d.WithMetadata {
		r.g.setMetadata(n, md, r.exec.real())
	}
	if n.retryTicket() != nil {
		r.g.setRetry(n, nil)
	}
	r.setStatus(n, api.ValueStateConfigured, api.OpUpdate, nil, nil)
	r.recordOp(n, api.OpUpdate, prevValue, n.intended, prev, nil, opFlags{})
	r.remember(n, api.OpUpdate, prevValue, n.applied, prevMeta, md)
	r.syncDerived(n, want, true)
	// It may have become available again (e.g. set again by the NB after
	// its delete failed).
	r.notifyAvailable(n)
}

// removal says what becomes of a value that removeFromSB deletes.
type removal uint8

const (
	// removeKeep: the value stays in the graph, PENDING while it is still
	// intended (REMOVED otherwise).
	removeKeep removal = iota
	// removeRecreate: the value keeps its state; the same transaction
	// creates it again.
	removeRecreate
	// removeForGood: a derived value its base no longer derives: it leaves
	// the graph, REMOVED.
	removeForGood
)

// removeFromSB deletes an applied value: first its derived values, then every
// applied value that can no longer stand without it, then the value itself.
// It reports false when something could not be deleted; the value then stays
// applied. The derived values of a value being deleted leave the graph with
// it (REMOVED): its next Create derives them again.
func (r *txnRun) removeFromSB(n *node, how removal) bool {
	if n.base != nil && n.base.removing {
		how = removeForGood
	}
	recreate := how == removeRecreate
	r.g.setRemoving(n, true)
	ok := true
	for i := len(n.derived) - 1; i >= 0; i-- {
		if d := n.derived[i]; d.applied != nil && !d.removing && !r.removeFromSB(d, removeKeep) {
			ok = false
		}
	}
	blockedByDependent := false
	if ok {
		for _, dep := range r.g.dependents(n) {
			if dep.applied == nil || dep.removing || dep.obtained || dep == n || isAncestor(dep, n) {
				continue // a base depending on its own derived value follows it
			}
			if r.g.depsMet(dep) {
				continue // an AnyOf still satisfied by another key
			}
			if !r.removeFromSB(dep, removeKeep) {
				ok, blockedByDependent = false, true
			}
		}
	}
	if !ok || r.stopped {
		r.g.setRemoving(n, false)
		if blockedByDependent && !r.stopped && n.state != api.ValueStateFailed {
			// Fail too, so that the retry of the dependent is followed by
			// this one. It is not an operation of its own: only the root
			// cause is reported as an error of the transaction. (A value
			// whose derived value could not be deleted keeps its state: the
			// retry of the derived value deletes the base after it.)
			r.setStatus(n, api.ValueStateFailed, api.OpDelete, errBlockedByDependent, nil)
			r.failed = append(r.failed, n)
		}
		return false
	}
	prev := statusOf(n)
	prevValue, prevMeta := n.applied, n.metadata
	if err := r.callDelete(n); err != nil {
		r.g.setRemoving(n, false)
		r.fail(n, api.OpDelete, err)
		r.recordOp(n, api.OpDelete, prevValue, nil, prev, err, opFlags{recreate: recreate})
		return false
	}
	r.g.setApplied(n, nil)
	if n.metadata != nil {
		r.g.setMetadata(n, nil, r.exec.real())
	}
	r.g.setRemoving(n, false)
	r.dropDerived(n)
	switch {
	case recreate:
		r.setStatus(n, n.state, api.OpDelete, nil, nil)
	case n.intended != nil && how != removeForGood:
		r.setStatus(n, api.ValueStatePending, api.OpDelete, nil, r.g.unmetDeps(n))
	default:
		r.setStatus(n, api.ValueStateRemoved, api.OpDelete, nil, nil)
	}
	r.recordOp(n, api.OpDelete, prevValue, nil, prev, nil, opFlags{recreate: recreate, noop: n.obtained})
	r.remember(n, api.OpDelete, prevValue, nil, prevMeta, nil)
	if !recreate {
		r.notifyReleased(n) // (a re-created value takes its resources back)
	}
	return true
}

// notifyReleased creates the values that waited for a resource n held (its
// Exclusive dependencies) now that n left the SB: the first in key order of
// those that can be created; the others wait for it in turn.
func (r *txnRun) notifyReleased(n *node) {
	for ei := range n.deps {
		e := &n.deps[ei]
		if !e.isClaim() || r.stopped {
			continue
		}
		var waiting []*node
		for x := r.g.claims[e.dep.Exclusive]; x != nil; x = x.next {
			c := x.owner
			if c != n && c.intended != nil && c.applied == nil && !c.obtained && c.invalidErr() == nil && !c.removing &&
				c.state != api.ValueStateFailed && c.state != api.ValueStateRetrying && !r.waiting(c) {
				waiting = append(waiting, c)
			}
		}
		slices.SortFunc(waiting, func(a, b *node) int { return strings.Compare(a.key, b.key) })
		for _, c := range waiting {
			if r.stopped {
				return
			}
			r.reconcile(c)
		}
	}
}

// isAncestor tells whether a is the base (or a base of the base) of n.
func isAncestor(a, n *node) bool {
	for b := n.base; b != nil; b = b.base {
		if b == a {
			return true
		}
	}
	return false
}

// dropDerived forgets the derived values of a value that left the SB.
func (r *txnRun) dropDerived(n *node) {
	if len(n.derived) == 0 {
		return
	}
	for _, d := range n.derived {
		r.dropDerived(d)
		r.endRemoved(d)
		r.g.removeNode(d)
		r.markChanged(n)
	}
	r.g.setDerived(n, nil)
}

// dropNode forgets a base value that is neither intended nor applied.
func (r *txnRun) dropNode(n *node) {
	if n.intended != nil || n.applied != nil || n.base != nil {
		return
	}
	if !n.inGraph {
		return
	}
	r.dropDerived(n)
	r.endRemoved(n)
	r.g.removeNode(n)
	r.markChanged(n)
}

// endRemoved marks a value that leaves the graph without a Delete REMOVED.
// One that was waiting or refused (nothing of it in the SB) gets a no-op
// Delete in the record, so that its history ends where it went.
func (r *txnRun) endRemoved(n *node) {
	if n.state == api.ValueStateRemoved {
		return
	}
	prev := statusOf(n)
	r.setStatus(n, api.ValueStateRemoved, api.OpDelete, nil, nil)
	if prev.state == api.ValueStatePending || prev.state == api.ValueStateInvalid || prev.state == api.ValueStateUnimplemented ||
		prev.state == api.ValueStateFailed || prev.state == api.ValueStateRetrying {
		r.recordOp(n, api.OpDelete, nil, nil, prev, nil, opFlags{noop: true})
	}
}

// notifyAvailable creates the values that waited for n. Those competing
// for a resource (Exclusive) come last, in key order, so that the first of
// them in key order gets it.
func (r *txnRun) notifyAvailable(n *node) {
	if !n.available() {
		return
	}
	var competing []*node
	for _, dep := range r.g.dependents(n) {
		if r.stopped {
			return
		}
		// A failed value is not tried again because a dependency appeared:
		// its retry, an NB change or a resync does that.
		if dep.intended != nil && dep.applied == nil && !dep.obtained && dep.invalidErr() == nil && !dep.removing &&
			dep.state != api.ValueStateFailed && dep.state != api.ValueStateRetrying && !r.waiting(dep) {
			if dep.hasClaim() {
				competing = append(competing, dep)
				continue
			}
			r.reconcile(dep)
		}
	}
	if len(competing) > 1 {
		slices.SortFunc(competing, func(a, b *node) int { return strings.Compare(a.key, b.key) })
	}
	for _, dep := range competing {
		if r.stopped {
			return
		}
		r.reconcile(dep)
	}
}

// --- derived values ---------------------------------------------------------

func (r *txnRun) derivedValues(n *node, value proto.Message) ([]api.KeyValuePair, error) {
	if n.desc == nil || n.desc.d.DerivedValues == nil || value == nil {
		return nil, nil
	}
	if kvs, ok := derivedIn(r.s.derivedMemo, n, value); ok {
		return kvs, nil // as the last full refresh derived it
	}
	kvs, err := pure(func() []api.KeyValuePair { return n.desc.d.DerivedValues(n.key, value) })
	if err != nil {
		r.errs = append(r.errs, api.KeyWithError{Key: n.key, Error: fmt.Errorf("descriptor %s: DerivedValues: %w", n.descName(), err)})
	}
	return kvs, nil
}

// maxDerivedDepth bounds derived values of derived values, so a descriptor
// that derives from its own derived values fails clearly instead of looping.
const maxDerivedDepth = 8

func derivedDepth(n *node) int {
	depth := 0
	for ; n.base != nil; n = n.base {
		depth++
	}
	return depth
}

func findDerived(list []*node, key string) *node {
	for _, d := range list {
		if d.key == key {
			return d
		}
	}
	return nil
}

func wants(want []api.KeyValuePair, key string) bool {
	for _, kv := range want {
		if kv.Key == key {
			return true
		}
	}
	return false
}

// removeObsoleteDerived deletes the derived values of n that are not wanted
// any more.
func (r *txnRun) removeObsoleteDerived(n *node, want []api.KeyValuePair) bool {
	ok := true
	var keep []*node
	list := n.derived // a cascade may drop n's derived values meanwhile
	for i := len(list) - 1; i >= 0; i-- {
		d := list[i]
		if wants(want, d.key) || !d.inGraph {
			continue
		}
		if d.applied != nil && !r.removeFromSB(d, removeForGood) {
			ok = false
			continue
		}
		r.dropDerived(d)
		r.endRemoved(d)
		r.g.removeNode(d)
		r.markChanged(n)
	}
	if len(n.derived) > 0 {
		for _, d := range n.derived {
			if d.inGraph {
				keep = append(keep, d)
			}
		}
		if len(keep) != len(n.derived) {
			r.g.setDerived(n, keep)
		}
	}
	return ok
}

// syncDerived makes the derived values of an applied n match its intended
// value: obsolete ones deleted, new ones created, changed ones updated.
func (r *txnRun) syncDerived(n *node, want []api.KeyValuePair, haveWant bool) {
	if !haveWant {
		want, _ = r.derivedValues(n, n.intended)
	}
	if len(want) == 0 && len(n.derived) == 0 {
		return
	}
	if !r.removeObsoleteDerived(n, want) {
		return
	}
	list := n.derived
	changedList := false
	for _, kv := range want {
		if kv.Key == "" || kv.Value == nil {
			continue
		}
		d := findDerived(list, kv.Key)
		if d == nil {
			if derivedDepth(n) >= maxDerivedDepth {
				r.errs = append(r.errs, api.KeyWithError{Key: kv.Key, Operation: api.OpCreate,
					Error: fmt.Errorf("derived key %s of %s: values derived more than %d levels deep (does a descriptor derive from its own derived values?)", kv.Key, n.key, maxDerivedDepth)})
				continue
			}
			if other := r.g.get(kv.Key); other != nil {
				r.errs = append(r.errs, api.KeyWithError{Key: kv.Key, Operation: api.OpCreate,
					Error: fmt.Errorf("derived key %s of %s is already used by another value", kv.Key, n.key)})
				continue
			}
			d = &node{key: kv.Key, base: n, desc: r.descs.forKey(kv.Key)}
			r.g.addNode(d)
			if !changedList {
				list = append([]*node(nil), list...)
				changedList = true
			}
			list = append(list, d)
		}
	}
	if changedList {
		r.g.setDerived(n, list)
	}
	for _, kv := range want {
		d := findDerived(n.derived, kv.Key)
		if d == nil || d.base != n {
			continue
		}
		if d.intended == nil || !sameValue(d.intended, kv.Value) {
			r.setIntent(d, kv.Value)
		}
		r.reconcile(d)
		if r.stopped {
			return
		}
	}
}

// --- dependency cycles ------------------------------------------------------

// createCycle handles a pending value that is part of a dependency cycle (two
// veth ends): when every dependency leaving the cycle is met, the members are
// created together, in one go, and it reports true.
func (r *txnRun) createCycle(n *node) bool {
	if n.applied != nil {
		return false
	}
	g := r.g
	g.epoch++
	epoch := g.epoch
	group := []*node{n}
	n.mark = epoch
	for i := 0; i < len(group); i++ {
		for ei := range group[i].deps {
			e := &group[i].deps[ei]
			if g.edgeSatisfied(e) {
				continue
			}
			if e.dep.Key == "" {
				return false // AnyOf dependencies never close a cycle
			}
			t := g.targetOf(e)
			if t != nil && t.mark == epoch {
				continue // already in the group (the value itself included)
			}
			if !cycleCandidate(t) {
				return false
			}
			t.mark = epoch
			group = append(group, t)
		}
	}
	if len(group) == 1 {
		return false
	}
	var cycle []*node
	for _, scc := range stronglyConnected(g, group, epoch) {
		for _, m := range scc {
			if m == n {
				cycle = scc
			}
		}
	}
	if len(cycle) < 2 {
		return false
	}
	// Every dependency that leaves the cycle must be met.
	inCycle := make(map[*node]bool, len(cycle))
	for _, m := range cycle {
		inCycle[m] = true
	}
	for _, m := range cycle {
		for ei := range m.deps {
			e := &m.deps[ei]
			if g.edgeSatisfied(e) {
				continue
			}
			if e.dep.Key == "" || !inCycle[g.targetOf(e)] {
				return false
			}
		}
	}
	var created []*node
	for _, m := range createGroupOrder(g, cycle, n) {
		if m.applied != nil {
			continue
		}
		if !r.createOne(m, opFlags{}) {
			// A member failed: the others cannot stand without it.
			for _, c := range created {
				r.reconcile(c)
			}
			return true
		}
		created = append(created, m)
	}
	for _, m := range created {
		r.afterCreate(m)
	}
	return true
}

// createGroupOrder orders the members of a cycle for creation: the value that
// triggered it first (or the first found), then each member as soon as its
// dependencies inside the cycle are created, so that the order follows the
// dependencies wherever the cycle allows.
func createGroupOrder(g *graph, scc []*node, trigger *node) []*node {
	remaining := append([]*node(nil), scc...)
	for i, m := range remaining {
		if m == trigger {
			copy(remaining[1:i+1], remaining[:i])
			remaining[0] = trigger
			break
		}
	}
	created := map[*node]bool{}
	ready := func(m *node) bool {
		for ei := range m.deps {
			e := &m.deps[ei]
			if e.dep.Key == "" || g.edgeSatisfied(e) {
				continue
			}
			if t := g.targetOf(e); t == nil || !created[t] {
				return false
			}
		}
		return true
	}
	out := make([]*node, 0, len(scc))
	for len(remaining) > 0 {
		pick := 0
		if len(out) > 0 {
			for i, m := range remaining {
				if ready(m) {
					pick = i
					break
				}
			}
		}
		m := remaining[pick]
		remaining = append(remaining[:pick], remaining[pick+1:]...)
		created[m] = true
		out = append(out, m)
	}
	return out
}

func cycleCandidate(t *node) bool {
	return t != nil && t.state != api.ValueStateFailed && t.state != api.ValueStateRetrying &&
		t.intended != nil && t.applied == nil && !t.obtained && t.invalidErr() == nil &&
		!t.removing && (t.desc != nil || t.base != nil) && (t.base == nil || t.base.applied != nil)
}

// stronglyConnected returns the strongly connected components of the group
// (nodes marked with epoch) over their unmet Key dependencies, dependencies
// first (Tarjan's algorithm emits components in reverse topological order).
func stronglyConnected(g *graph, group []*node, epoch uint64) [][]*node {
	index := make(map[*node]int, len(group))
	low := make(map[*node]int, len(group))
	onStack := make(map[*node]bool, len(group))
	var stack []*node
	var out [][]*node
	next := 0
	var visit func(v *node)
	visit = func(v *node) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for ei := range v.deps {
			e := &v.deps[ei]
			if e.dep.Key == "" {
				continue
			}
			w := g.targetOf(e)
			if w == nil || w.mark != epoch {
				continue
			}
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []*node
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			// Keep the order in which the group was found: deterministic.
			for i, j := 0, len(scc)-1; i < j; i, j = i+1, j-1 {
				scc[i], scc[j] = scc[j], scc[i]
			}
			out = append(out, scc)
		}
	}
	for _, v := range group {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package kvscheduler

// Verification after apply: the values a transaction changed, read back
// from the SB (see "Verification after apply" in the package doc).

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// verifyTarget is a value to read back: n is its node, nil when the
// transaction removed it from the graph (deleted: it must be absent).
type verifyTarget struct {
	key string
	n   *node
	di  *descriptorInfo
}

// verifyFailure is a value the SB does not hold as applied.
type verifyFailure struct {
	verifyTarget
	op        api.TxnOperation
	want, got proto.Message
	gotMeta   any
}

// verifies tells whether the transaction is verified after apply.
func (s *Scheduler) verifies(qt *queuedTxn) bool {
	return qt.verify || s.opts.Verify == VerifyReport
}

// verifyExecuted verifies the transaction run by exe, when asked, records
// what failed and, with TxnOptions.Verify, reverts the transaction (done
// gives the executed operations when exe did not remember them: executed
// as planned). It returns whether the transaction was reverted. Call it
// while the graph records the transaction's undo log.
func (s *Scheduler) verifyExecuted(qt *queuedTxn, exe *txnRun, rec *api.RecordedTxn, done func() []doneOp) bool {
	if !s.verifies(qt) {
		return false
	}
	failures, unverified := exe.verify()
	if len(failures) == 0 && (!unverified || !qt.verify) {
		return false
	}
	if qt.verify {
		if len(exe.done) == 0 && done != nil {
			exe.done = done()
		}
		s.revertUnverified(exe, failures)
	}
	rec.VerifyFailed = make([]api.KeyWithError, len(failures))
	for i, f := range failures {
		rec.VerifyFailed[i] = api.KeyWithError{Key: f.key, Operation: f.op,
			Error: &api.VerifyError{Key: f.key, Want: f.want, Got: f.got, Reverted: qt.verify}}
	}
	exe.errs = append(exe.errs, rec.VerifyFailed...)
	return qt.verify
}

// verify reads back, with one Retrieve per descriptor, the values the run
// executed an operation on with success, and compares each with what the
// graph holds as applied (nil: absent). A derived value is read through its
// base unless its own descriptor retrieves it (retrievedOnItsOwn), as the
// refresh after a failure does; values without Retrieve, OBTAINED ones and
// those a failure left FAILED or RETRYING (refreshed already) are not
// verified. The graph takes what the SB holds for the values that fail
// (markUnverified). The failures are returned in key order; unverified
// says a Retrieve failed (its values are not verified; the error is in
// r.errs).
func (r *txnRun) verify() (failures []verifyFailure, unverified bool) {
	var targets []verifyTarget
	var seen map[string]bool
	add := func(t verifyTarget) {
		if t.di == nil || t.di.d.Retrieve == nil {
			return
		}
		if seen == nil {
			seen = make(map[string]bool, len(r.ops))
		}
		if !seen[t.key] {
			seen[t.key] = true
			targets = append(targets, t)
		}
	}
	for _, op := range r.ops {
		if op.NewErr != nil || op.NOOP || op.Property || op.IsRevert {
			continue
		}
		n := r.g.get(op.Key)
		if n == nil {
			add(verifyTarget{key: op.Key, di: r.descs.byName[op.Descriptor]})
			continue
		}
		if n.obtained || n.state == api.ValueStateFailed || n.state == api.ValueStateRetrying {
			continue
		}
		if n.base != nil && !retrievedOnItsOwn(n, n.base) {
			for n.base != nil {
				n = n.base
			}
			if n.obtained {
				continue
			}
		}
		add(verifyTarget{key: n.key, n: n, di: n.desc})
	}
	if len(targets) == 0 {
		return nil, false
	}
	byDesc := map[*descriptorInfo][]verifyTarget{}
	var order []*descriptorInfo
	for _, t := range targets {
		if _, ok := byDesc[t.di]; !ok {
			order = append(order, t.di)
		}
		byDesc[t.di] = append(byDesc[t.di], t)
	}
	defer r.s.refreshRound()()
	for _, di := range order {
		group := byDesc[di]
		correlate := make([]api.KVWithMetadata, 0, len(group))
		for _, t := range group {
			if t.n != nil && t.n.applied != nil {
				correlate = append(correlate, api.KVWithMetadata{Key: t.key, Value: t.n.applied, Metadata: t.n.metadata, Origin: api.FromNB})
			}
		}
		kvs, err := r.s.retrieve(di, correlate)
		if err != nil {
			// Cannot tell: the values are left as the graph has them.
			r.errs = append(r.errs, api.KeyWithError{Error: &verifyRetrieveError{descriptor: di.d.Name, err: err}})
			unverified = true
			continue
		}
		found := make(map[string]api.KVWithMetadata, len(group))
		for _, kv := range kvs {
			found[kv.Key] = kv
		}
		for _, t := range group {
			f := verifyFailure{verifyTarget: t, op: api.OpDelete}
			if t.n != nil {
				f.want, f.op = t.n.applied, t.n.lastOp
			}
			if kv, ok := found[t.key]; ok {
				f.got, f.gotMeta = kv.Value, kv.Metadata
			}
			if f.want == nil && f.got == nil || f.want != nil && f.got != nil && (sameValue(f.want, f.got) || equivalentValues(t.n, f.want, f.got)) {
				continue
			}
			failures = append(failures, f)
		}
	}
	slices.SortFunc(failures, func(a, b verifyFailure) int { return strings.Compare(a.key, b.key) })
	for i := range failures {
		r.markUnverified(&failures[i])
	}
	return failures, unverified
}

// markUnverified makes the graph hold what the SB holds of a value that
// failed verification: its applied value is what Retrieve found (a deleted
// value still held is back in the graph), its status MISSING with the
// *api.VerifyError when it is intended, FAILED (its delete did not happen)
// when not; derived values of a value found gone are gone with it
// (MISSING). Nothing is called: what depends on the value stays as
// verified on its own.
func (r *txnRun) markUnverified(f *verifyFailure) {
	n := f.n
	if n == nil || !n.inGraph {
		n = &node{key: f.key, desc: f.di}
		r.g.addNode(n)
		f.n = n
	}
	r.g.setApplied(n, f.got)
	switch {
	case f.got == nil && n.metadata != nil:
		r.g.setMetadata(n, nil, true)
	case f.got != nil && f.gotMeta != nil && n.base == nil && f.di.d.WithMetadata:
		r.g.setMetadata(n, f.gotMeta, true)
	}
	state := api.ValueStateMissing
	if n.intended == nil {
		state = api.ValueStateFailed
	}
	r.setStatus(n, state, f.op, &api.VerifyError{Key: f.key, Want: f.want, Got: f.got, Reverted: r.reverting}, nil)
	if f.got == nil {
		r.derivedGone(n)
	}
}

// verifyRetrieveError is a Retrieve that failed during verification: the
// values it was to read back are not verified.
type verifyRetrieveError struct {
	descriptor string
	err        error
}

func (e *verifyRetrieveError) Error() string {
	return "verification after apply: Retrieve of " + e.descriptor + " failed, its values are not verified: " + e.err.Error()
}

func (e *verifyRetrieveError) Unwrap() error { return e.err }

// doneOfSteps lists the steps of a plan executed as planned, as revert
// needs them (md: the metadata they returned, nil when none has any).
func doneOfSteps(steps *chunks[step], md []any) []doneOp {
	done := make([]doneOp, 0, steps.len())
	steps.each(func(i int, st *step) {
		d := doneOp{n: st.n, op: st.op, prevValue: st.from, newValue: st.to}
		if md != nil {
			d.newMeta = md[i]
		}
		done = append(done, d)
	})
	return done
}

package kvscheduler

// The revision of the state, and the check of TxnOptions.ExpectedRevision.

import (
	"sort"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// CurrentRevision implements api.KVScheduler. It reads under mu, as the
// other readers do, so that it is the revision of the state they see.
func (s *Scheduler) CurrentRevision() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.revision.Load()
}

// checkRevision refuses a transaction planned against a revision other than
// the current one (TxnOptions.ExpectedRevision). Worker only: no
// transaction runs between the check and the transaction.
func (s *Scheduler) checkRevision(qt *queuedTxn) error {
	if qt.expectedRevision == 0 {
		return nil
	}
	cur := s.revision.Load()
	if qt.expectedRevision == cur {
		return nil
	}
	err := &api.RevisionError{Expected: qt.expectedRevision, Current: cur}
	if qt.expectedRevision < s.firstRevision {
		err.Since = s.firstRevision // a revision of an earlier run
		return err
	}
	if qt.expectedRevision < cur {
		err.ChangedBy = s.history.changeAfter(qt.expectedRevision)
		if err.ChangedBy == nil {
			last := s.lastChange
			err.ChangedBy = &last
		}
	}
	return err
}

// advanceRevision records that the transaction of rec changed the state:
// the revision goes one up. Worker only, under mu, before rec is added to
// the history.
func (s *Scheduler) advanceRevision(rec *api.RecordedTxn) {
	rev := s.revision.Add(1)
	rec.Revision = rev
	s.lastChange = api.RevisionChange{SeqNum: rec.SeqNum, TxnType: rec.TxnType, Description: rec.Description, Revision: rev}
}

// changed tells whether the running transaction changed the graph: one of
// the undo logs it keeps (those of the changes rolled back are dropped) has
// an entry. A setter writes an entry only when it is called, and the
// algorithm calls none for a value in sync, so this costs one check per
// log, nothing per value.
func (rt *runningTxn) changed() bool {
	for _, l := range rt.logs {
		if l.len() > 0 {
			return true
		}
	}
	return false
}

// changeAfter returns the kept record of the transaction that advanced the
// revision past rev, nil when it is no longer kept. Revisions grow with
// sequence numbers: a binary search.
func (h *history) changeAfter(rev uint64) *api.RevisionChange {
	h.mu.RLock()
	defer h.mu.RUnlock()
	recs := h.kept()
	i := sort.Search(len(recs), func(i int) bool { return recs[i].Revision > rev })
	// recs[i] advanced it unless the record before it, which did, was
	// trimmed.
	if i == len(recs) || recs[i].Revision != rev+1 || (i == 0 && h.trimmed > 0) {
		return nil
	}
	r := recs[i]
	return &api.RevisionChange{SeqNum: r.SeqNum, TxnType: r.TxnType, Description: r.Description, Revision: r.Revision}
}

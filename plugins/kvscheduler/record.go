package kvscheduler

// What a transaction tells when it ends: watchers, the log.

import (
	"sort"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/txnlog"
)

func (s *Scheduler) publishStatus(r *txnRun) {
	if len(r.changed) == 0 || s.watch.empty() {
		return
	}
	sort.Slice(r.changed, func(i, j int) bool { return r.changed[i].key < r.changed[j].key })
	out := make([]*api.BaseValueStatus, 0, len(r.changed))
	for i, n := range r.changed {
		if i > 0 && r.changed[i-1].key == n.key {
			continue
		}
		if cur := s.g.get(n.key); cur != nil && cur.base == nil {
			out = append(out, s.withNote(baseStatus(cur)))
		} else {
			out = append(out, &api.BaseValueStatus{Value: &api.ValueStatus{Key: n.key, State: api.ValueStateRemoved, LastOperation: api.OpDelete}})
		}
	}
	s.watch.publish(out)
}

func (s *Scheduler) logPlan(rec *api.RecordedTxn) {
	s.logger.Debug("transaction planned", "txn", rec.SeqNum, "type", rec.TxnType.String(),
		"resync", rec.ResyncType.String(), "values", len(rec.Values), "planned", len(rec.Planned))
	if s.opts.TxnLog != nil {
		s.txnLogMu.Lock()
		defer s.txnLogMu.Unlock()
		if err := txnlog.WritePlan(s.opts.TxnLog, rec, txnlog.Options{MaxItems: s.opts.TxnLogMaxItems}); err != nil {
			s.logger.Warn("writing the transaction log", "txn", rec.SeqNum, "error", err)
		}
	}
}

func (s *Scheduler) logResult(rec *api.RecordedTxn, errors int) {
	level := s.logger.Debug
	if errors > 0 {
		level = s.logger.Warn
	}
	level("transaction done", "txn", rec.SeqNum, "type", rec.TxnType.String(),
		"executed", len(rec.Executed), "errors", errors, "duration", rec.Stop.Sub(rec.Start).Round(time.Microsecond))
	if s.opts.TxnLog != nil {
		s.txnLogMu.Lock()
		defer s.txnLogMu.Unlock()
		if err := txnlog.WriteResult(s.opts.TxnLog, rec, txnlog.Options{MaxItems: s.opts.TxnLogMaxItems}); err != nil {
			s.logger.Warn("writing the transaction log", "txn", rec.SeqNum, "error", err)
		}
	}
}

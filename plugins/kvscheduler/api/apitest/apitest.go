// Package apitest holds stand-ins for tests: the scheduler's side of the
// descriptor API, for tests that call descriptor callbacks or metadata
// lookups directly, without a scheduler (Scope), and a scheduler clock a
// test moves by hand (Clock).
package apitest

import (
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Scope is an api.CallScope (give it to api.WithCallScope): the metadata
// maps it holds by descriptor name, every value unknown, and the keys
// requested for reconciliation recorded in order.
type Scope struct {
	Maps      map[string]api.MetadataMap
	Requested []string
}

var _ api.CallScope = (*Scope)(nil)

// GetValueStatus returns a status of nothing known about key.
func (s *Scope) GetValueStatus(key string) *api.BaseValueStatus {
	return &api.BaseValueStatus{Value: &api.ValueStatus{Key: key}}
}

// GetMetadataMap returns the map held for descriptor, or nil.
func (s *Scope) GetMetadataMap(descriptor string) api.MetadataMap {
	if m, ok := s.Maps[descriptor]; ok {
		return m
	}
	return nil
}

// RequestReconcile records keys.
func (s *Scope) RequestReconcile(keys ...string) {
	s.Requested = append(s.Requested, keys...)
}

// MetadataSource stands for a scheduler read for its metadata maps (what
// lookups built on KVScheduler.GetMetadataMap take); Calls counts the
// reads.
type MetadataSource struct {
	Maps  map[string]api.MetadataMap
	Calls int
}

// GetMetadataMap returns the map held for descriptor, or nil, and counts
// the call.
func (m *MetadataSource) GetMetadataMap(descriptor string) api.MetadataMap {
	m.Calls++
	if mm, ok := m.Maps[descriptor]; ok {
		return mm
	}
	return nil
}

// History is what the transaction helpers read of a scheduler.
type History interface {
	GetTransactionHistory(since, until time.Time) []*api.RecordedTxn
}

// LastSeq is the sequence number of the last transaction recorded (0:
// none).
func LastSeq(h History) uint64 {
	var seq uint64
	for _, rec := range h.GetTransactionHistory(time.Time{}, time.Time{}) {
		seq = max(seq, rec.SeqNum)
	}
	return seq
}

// DriftTxns returns the drift-repair transactions recorded after seq.
func DriftTxns(h History, after uint64) []*api.RecordedTxn {
	var out []*api.RecordedTxn
	for _, rec := range h.GetTransactionHistory(time.Time{}, time.Time{}) {
		if rec.SeqNum > after && rec.TxnType == api.DriftRepair {
			out = append(out, rec)
		}
	}
	return out
}

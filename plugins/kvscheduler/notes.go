package kvscheduler

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// applyNotes records the notes of an NB transaction that was applied (see
// api.NotedTxn) and marks the values whose note changed in run r, so that
// watchers are told. It tells whether a note changed. Called under mu;
// not called at all while no value has a note and the transaction carries
// none, so that transactions without notes pay nothing.
func (s *Scheduler) applyNotes(qt *queuedTxn, r *txnRun) bool {
	changed := false
	mark := func(key string) {
		changed = true
		if n := s.g.get(key); n != nil {
			r.markChanged(n)
		}
	}
	if qt.resync == api.FullResync || qt.resync == api.UpstreamResync {
		// The transaction holds the whole NB state: its notes are all.
		old := s.notes
		s.notes = nil
		for _, kv := range qt.values {
			if note := qt.notes[kv.key]; note != "" && kv.value != nil {
				s.setNote(kv.key, note)
			}
		}
		for key, note := range old {
			if s.notes[key] != note {
				mark(key)
			}
		}
		for key := range s.notes {
			if _, had := old[key]; !had {
				mark(key)
			}
		}
		return changed
	}
	for _, kv := range qt.values {
		note := qt.notes[kv.key]
		if kv.value == nil {
			note = ""
		}
		if s.notes[kv.key] == note {
			continue
		}
		if note == "" {
			delete(s.notes, kv.key)
		} else {
			s.setNote(kv.key, note)
		}
		mark(kv.key)
	}
	if len(s.notes) == 0 {
		s.notes = nil // the memory of notes gone comes back
	}
	return changed
}

func (s *Scheduler) setNote(key, note string) {
	if s.notes == nil {
		s.notes = map[string]string{}
	}
	s.notes[key] = note
}

// withNote appends the note of a base value, if it has one, to its details
// (see api.NotedTxn). Called under mu (read or write).
func (s *Scheduler) withNote(bs *api.BaseValueStatus) *api.BaseValueStatus {
	if len(s.notes) == 0 {
		return bs
	}
	if note, ok := s.notes[bs.GetValue().GetKey()]; ok {
		// Clipped: the details may be the node's own slice.
		bs.Value.Details = append(slices.Clip(bs.Value.Details), note)
	}
	return bs
}

// descriptorNotes appends to the details of a value what its descriptor
// says about its intended value (api.KVDescriptor.Notes), if anything: not
// for an INVALID value, whose error says what matters.
func descriptorNotes(desc *descriptorInfo, key string, intended proto.Message, state api.ValueState, details []string) []string {
	if desc == nil || desc.d.Notes == nil || intended == nil || state == api.ValueStateInvalid {
		return details
	}
	notes, err := pure(func() []string { return desc.d.Notes(key, intended) })
	if err != nil || len(notes) == 0 {
		return details
	}
	// Clipped: the details may be the node's own slice.
	return append(slices.Clip(details), notes...)
}

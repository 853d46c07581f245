package fleet

import (
	"fmt"
	"sort"
)

// Check checks the operations a southbound recorded against the etcd
// writes of its agent's label (History.Writes), the agent having started
// with an empty southbound before the first of them. It is a model-based
// check: each operation is matched to the write it applies, by key and
// sequence number (a delete: to the key's first delete after the write
// applied before it), and must be one a correct agent can make:
//
//   - a create of a key the southbound does not hold, an update or a
//     delete of one it holds (no doubled create, no delete of what is not
//     there);
//   - of a value that was written (nothing invented), after the write the
//     key's previous operation applied (never an older value again, never
//     one write applied twice, no deleted value coming back);
//   - a delete only where etcd deleted the key after the value deleted.
//
// With exact, every write must be applied by exactly one operation: a
// test whose writes of a key are far enough apart for the agent to see
// each (every key written once while a fault lasts, the agent caught up
// before) asks for it. Without it a write may be skipped when a later
// write of its key supersedes it (a burst coalesced, a resync after an
// outage); that the last write of every key is applied is the final
// state's check (Southbound.WaitFor with Final).
//
// It returns the violations, empty when there is none.
func Check(writes []Write, ops []Op, exact bool) []string {
	type keyWrites struct {
		writes  []Write
		applied []int // how many operations applied each write
	}
	byKey := map[string]*keyWrites{}
	for _, w := range writes {
		kw := byKey[w.Key]
		if kw == nil {
			kw = &keyWrites{}
			byKey[w.Key] = kw
		}
		kw.writes = append(kw.writes, w)
		kw.applied = append(kw.applied, 0)
	}
	type keyState struct {
		present bool
		seq     uint32
		rev     int64 // the revision of the write applied last
	}
	states := map[string]*keyState{}
	var out []string
	for i, op := range ops {
		st := states[op.Key]
		if st == nil {
			st = &keyState{}
			states[op.Key] = st
		}
		kw := byKey[op.Key]
		if kw == nil {
			out = append(out, fmt.Sprintf("op %d (%v): etcd never had the key", i, op))
			continue
		}
		switch op.Kind {
		case "create", "update":
			if op.Kind == "create" && st.present {
				out = append(out, fmt.Sprintf("op %d (%v): doubled create, the southbound has seq %d", i, op, st.seq))
			}
			if op.Kind == "update" && !st.present {
				out = append(out, fmt.Sprintf("op %d (%v): update of a key the southbound does not have", i, op))
			}
			w := -1
			for j, cand := range kw.writes {
				if !cand.Delete && cand.Seq == op.Seq {
					w = j
					break
				}
			}
			if w < 0 {
				out = append(out, fmt.Sprintf("op %d (%v): no write of that value", i, op))
				continue
			}
			if rev := kw.writes[w].Rev; rev <= st.rev {
				out = append(out, fmt.Sprintf("op %d (%v): applies the write of rev %d after that of rev %d (older or twice)", i, op, rev, st.rev))
			}
			kw.applied[w]++
			st.present, st.seq, st.rev = true, op.Seq, kw.writes[w].Rev
		case "delete":
			if !st.present {
				out = append(out, fmt.Sprintf("op %d (%v): delete of a key the southbound does not have", i, op))
			} else if op.Seq != st.seq {
				out = append(out, fmt.Sprintf("op %d (%v): deletes seq %d, the southbound has %d", i, op, op.Seq, st.seq))
			}
			w := -1
			for j, cand := range kw.writes {
				if cand.Delete && cand.Rev > st.rev {
					w = j
					break
				}
			}
			if w < 0 {
				out = append(out, fmt.Sprintf("op %d (%v): etcd did not delete the key after rev %d", i, op, st.rev))
				st.present = false
				continue
			}
			kw.applied[w]++
			st.present, st.seq, st.rev = false, 0, kw.writes[w].Rev
		default:
			out = append(out, fmt.Sprintf("op %d (%v): unknown operation", i, op))
		}
	}
	if exact {
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kw := byKey[k]
			for j, w := range kw.writes {
				if kw.applied[j] != 1 {
					out = append(out, fmt.Sprintf("%v: applied %d times, want exactly once", w, kw.applied[j]))
				}
			}
		}
	}
	return out
}

package shrinkmap

import (
	"runtime"
	"testing"

	"github.com/netagent-io/netagent/tests/testsupport"
)

// 100k entries put, all but 10 deleted: the memory comes back, and what is
// left is still found.
func TestMapGivesBackMemory(t *testing.T) {
	const n, kept = 100_000, 10
	base := testsupport.LiveHeap()
	m := New[int, [4]int]()
	for i := range n {
		m.Put(i, [4]int{i})
	}
	full := testsupport.LiveHeap()
	for i := kept; i < n; i++ {
		m.Delete(i)
	}
	after := testsupport.LiveHeap()
	if grown, held := full-base, after-base; held > grown/20 {
		t.Errorf("after deleting %d of %d: %d bytes held, want under %d (5%% of the %d the entries took)", n-kept, n, held, grown/20, grown)
	}
	if m.Len() != kept {
		t.Errorf("Len %d, want %d", m.Len(), kept)
	}
	for i := range kept {
		if v, ok := m.Get(i); !ok || v[0] != i {
			t.Errorf("Get(%d) = %v, %v", i, v, ok)
		}
	}
	if _, ok := m.Get(kept); ok {
		t.Error("a deleted entry is found")
	}
	seen := 0
	m.All(func(int, [4]int) bool { seen++; return true })
	if seen != kept {
		t.Errorf("All saw %d entries, want %d", seen, kept)
	}
	runtime.KeepAlive(&m)
}

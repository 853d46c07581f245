package kvscheduler

import (
	"math/bits"
	"reflect"
	"sort"
	"sync"
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// history keeps the most recent transaction records, ordered by sequence
// number, so a record is found by binary search. It is bounded by count, by
// an estimate of the bytes the records hold, and by age; the newest record is
// always kept.
type history struct {
	mu       sync.RWMutex
	maxCount int
	maxBytes int
	maxAge   time.Duration
	records  []*api.RecordedTxn
	sizes    []int
	first    int // records[first:] are kept
	bytes    int
	trimmed  uint64 // records dropped by the limits
	sizer    sizer
}

func newHistory(maxCount, maxBytes int, maxAge time.Duration) *history {
	return &history{maxCount: maxCount, maxBytes: maxBytes, maxAge: maxAge}
}

// The size of a record is an estimate of the memory it alone keeps alive:
// what the history gives back when the limits trim it, oldest first. A
// record shares some of what it points to with the graph and with other
// records, and counts only what it holds on its own, so that the estimates
// of the kept records add up to the history's memory (docs/memory.md has
// the measurements; TestHistoryBytesMatchTheHeap checks them):
//
//   - its structs: the record, the input pairs, the operations (allocated in
//     slabs) and the pointer slices, by their capacity;
//   - the previous value of an operation that replaced or removed it
//     (PrevValue, when it is not NewValue): the graph holds the new value,
//     the record the old one. A new value is shared with the graph until a
//     later transaction replaces it, and that transaction's record counts
//     it then: each value is counted once, by the record that removed it,
//     which is trimmed after the records that created it;
//   - the key of an operation without a new value (the key left the graph);
//   - the input pairs of a delete (their key strings are the NB's, not the
//     graph's), and every input pair of a resync, whose values mostly equal
//     what the graph has and are then kept only by the record (the graph
//     keeps its own copy).
//
// Not seen, so not counted: errors held by operations (shared with the
// graph, or small); a value the graph let go without an operation (a
// resync's refresh that replaced the applied value with the SB's copy: the
// NB's value stays with the record that created it, and the record of the
// delete counts the copy); keys that are substrings of longer strings (the
// etcd source's). In the agent these put the estimate some 10-20% under.
//
// The estimate must cost little next to the transaction (a one-route
// update takes a few microseconds): on a big record only a sample of the
// operations and input pairs is looked at (recordSample of them, in runs
// spread over the record) and the sum is scaled to all of them, and a
// value's size is the mean size of the values of its type, which walks a
// value (protoreflect: its struct, strings, lists, maps and nested
// messages, rounded up as the allocator rounds them) for the first
// valueWalks values of a type and then for one in valueWalkEvery.
const (
	recordSample   = 64
	sampleRuns     = 8
	valueWalks     = 16
	valueWalkEvery = 64
)

var (
	recordStructBytes = allocPtrBytes(int(unsafe.Sizeof(api.RecordedTxn{})))
	recordOpBytes     = int(unsafe.Sizeof(api.RecordedTxnOp{}))
	// opSlabOps is the most operations of a slab (recordOp in reconcile.go):
	// as many as fill the 8 KiB size class with the allocator's 8-byte
	// header, 63 (8192 bytes, 130 per operation); 64 would take the
	// 9472-byte class (148 per operation).
	opSlabOps       = (8<<10 - 8) / recordOpBytes
	recordPairBytes = int(unsafe.Sizeof(api.RecordedKVPair{}))
	recordPtrBytes  = int(unsafe.Sizeof(uintptr(0)))
)

// sizer estimates the sizes of records; it keeps the sizes of the value
// types it has seen.
type sizer struct {
	mu      sync.Mutex
	values  map[reflect.Type]*typeSize
	structs map[reflect.Type]int // a message's Go struct, rounded
	// The type of the last value and its sizes: values of one type come
	// in runs.
	lastType reflect.Type
	last     *typeSize
}

// typeSize is the sizes of the values of one type seen so far.
type typeSize struct {
	seen, walked int
	walkedBytes  int
}

func (z *sizer) recordSize(r *api.RecordedTxn) int {
	size := recordStructBytes + allocBytes(len(r.Description))
	size += allocPtrBytes(cap(r.Values) * recordPairBytes)
	size += allocPtrBytes(cap(r.Planned)*recordPtrBytes) + opSlabBytes(len(r.Planned))
	ops := r.Planned
	if len(r.Executed) > 0 && (len(r.Planned) == 0 || &r.Executed[0] != &r.Planned[0]) {
		// Executed apart from the plan (a re-run after a failure, a
		// revert): its own operations, mostly with the plan's values.
		size += allocPtrBytes(cap(r.Executed)*recordPtrBytes) + opSlabBytes(len(r.Executed))
		if len(ops) == 0 {
			ops = r.Executed
		}
	}
	if len(ops) == 0 && len(r.Values) == 0 {
		return size
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	size += sampled(len(ops), func(i int) int {
		op := ops[i]
		owned := 0
		if op.PrevValue != nil && op.PrevValue != op.NewValue {
			owned += z.valueBytes(op.PrevValue)
		}
		if op.NewValue == nil {
			owned += allocBytes(len(op.Key))
		}
		return owned
	})
	resync := r.ResyncType != api.NotResync
	size += sampled(len(r.Values), func(i int) int {
		switch kv := &r.Values[i]; {
		case kv.Value == nil:
			return allocBytes(len(kv.Key))
		case resync:
			return allocBytes(len(kv.Key)) + z.valueBytes(kv.Value)
		}
		return 0
	})
	return size
}

// sampled returns the sum of bytes(i) over i in [0, n), calling it for at
// most recordSample of them and scaling their sum to n: sampleRuns runs of
// consecutive items, one in each of sampleRuns equal strata of the record,
// at a pseudo-random place in it (a hash of the stratum and n). Operations
// come in patterns (the addresses, the interface and the route of each
// interface in turn): a run of consecutive items sees a pattern of up to
// its length whole, where single items at a fixed stride would alias with
// it and see one kind of operation only. The sum is unbiased and exact on
// patterns whose length divides the run's (TestSampledSeesEveryKindOfAPattern).
func sampled(n int, bytes func(i int) int) int {
	if n <= recordSample {
		sum := 0
		for i := range n {
			sum += bytes(i)
		}
		return sum
	}
	const runLen = recordSample / sampleRuns
	sum := 0
	for k := range sampleRuns {
		lo, hi := k*n/sampleRuns, (k+1)*n/sampleRuns
		offset, _ := bits.Mul64(mix64(uint64(n)<<8|uint64(k)), uint64(hi-lo-runLen+1))
		for i := lo + int(offset); i < lo+int(offset)+runLen; i++ {
			sum += bytes(i)
		}
	}
	return int(int64(sum) * int64(n) / recordSample)
}

// mix64 is SplitMix64's finalizer: a well-spread hash of x.
func mix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

// valueBytes estimates the heap a value takes: the mean of the walked
// values of its type (z.mu held).
func (z *sizer) valueBytes(v proto.Message) int {
	t := reflect.TypeOf(v)
	ts := z.last
	if ts == nil || z.lastType != t {
		ts = z.values[t]
	}
	if ts == nil {
		if z.values == nil {
			z.values, z.structs = map[reflect.Type]*typeSize{}, map[reflect.Type]int{}
		}
		ts = &typeSize{}
		z.values[t] = ts
	}
	z.last, z.lastType = ts, t
	ts.seen++
	if ts.walked < valueWalks || ts.seen%valueWalkEvery == 0 {
		ts.walkedBytes += z.messageBytes(v.ProtoReflect())
		ts.walked++
	}
	return ts.walkedBytes / ts.walked
}

// messageBytes walks a message: its struct, and what its fields point to.
func (z *sizer) messageBytes(m protoreflect.Message) int {
	if !m.IsValid() {
		return 0
	}
	size := z.structBytes(m) + allocBytes(len(m.GetUnknown()))
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			list := v.List()
			if k := fd.Kind(); k == protoreflect.StringKind || k == protoreflect.BytesKind || k == protoreflect.MessageKind || k == protoreflect.GroupKind {
				size += allocPtrBytes(list.Len() * sliceElemBytes(fd))
			} else {
				size += allocBytes(list.Len() * sliceElemBytes(fd))
			}
			for j := range list.Len() {
				size += z.pointedBytes(fd, list.Get(j))
			}
		case fd.IsMap():
			// Per entry: its key and value slots, twice for the table's
			// slack, and what they point to.
			size += v.Map().Len() * 2 * (sliceElemBytes(fd.MapKey()) + sliceElemBytes(fd.MapValue()))
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				size += z.pointedBytes(fd.MapKey(), k.Value()) + z.pointedBytes(fd.MapValue(), mv)
				return true
			})
		default:
			size += z.pointedBytes(fd, v)
			if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
				size += 16 // the oneof's wrapper struct
			}
		}
	}
	return size
}

// pointedBytes is what a singular value takes beyond its slot in the
// struct: the bytes of a string, the whole of a message.
func (z *sizer) pointedBytes(fd protoreflect.FieldDescriptor, v protoreflect.Value) int {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return allocBytes(len(v.String()))
	case protoreflect.BytesKind:
		return allocBytes(len(v.Bytes()))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return z.messageBytes(v.Message())
	}
	return 0
}

// sliceElemBytes is the slot of one element of a repeated field.
func sliceElemBytes(fd protoreflect.FieldDescriptor) int {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return 16
	case protoreflect.BytesKind:
		return 24
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return 8 // a pointer
	case protoreflect.BoolKind:
		return 1
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Sfixed32Kind, protoreflect.FloatKind, protoreflect.EnumKind:
		return 4
	}
	return 8
}

// structBytes is the size of m's Go struct, rounded to its size class (by
// type, computed once); 64 for messages that are not a struct (dynamicpb).
func (z *sizer) structBytes(m protoreflect.Message) int {
	t := reflect.TypeOf(m.Interface())
	if size, ok := z.structs[t]; ok {
		return size
	}
	size := 64
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		size = allocPtrBytes(int(t.Elem().Size()))
	}
	z.structs[t] = size
	return size
}

// opSlabBytes is the memory of n operations of one run: recordOp (in
// reconcile.go) allocates them in slabs of min(opSlabOps, 4+n so far)
// operations.
func opSlabBytes(n int) int {
	size := 0
	for used, slab := 0, min(opSlabOps, 4); used < n; used, slab = used+slab, min(opSlabOps, 4+used+slab) {
		if slab == opSlabOps {
			size += (n - used + opSlabOps - 1) / opSlabOps * allocPtrBytes(opSlabOps*recordOpBytes)
			break
		}
		size += allocPtrBytes(slab * recordOpBytes)
	}
	return size
}

// allocBytes is what the Go allocator takes for an object of n bytes
// without pointers: its size class, whose steps are at most 1/8 of the size
// (n itself under 16 bytes, which the allocator packs together), or whole
// 8 KiB pages beyond 32 KiB.
func allocBytes(n int) int {
	switch {
	case n < 16:
		return max(n, 0)
	case n > 32<<10:
		return (n + 8<<10 - 1) &^ (8<<10 - 1)
	}
	step := max(16, 1<<(bits.Len(uint(n-1))-4))
	return (n + step - 1) / step * step
}

// allocPtrBytes is allocBytes for an object with pointers: beyond 512
// bytes the allocator puts an 8-byte header in front of it (a slab of 63
// operations, 8064 bytes, takes the 8192-byte class; one of 64 would take
// the 9472-byte class).
func allocPtrBytes(n int) int {
	if n > 512 && n <= 32<<10 {
		n += 8
	}
	return allocBytes(n)
}

func (h *history) add(r *api.RecordedTxn) {
	size := h.sizer.recordSize(r) // outside mu: readers wait for less
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	h.sizes = append(h.sizes, size)
	h.bytes += size
	for h.first < len(h.records)-1 {
		kept := len(h.records) - h.first
		old := h.records[h.first]
		if kept <= h.maxCount && h.bytes <= h.maxBytes && (h.maxAge <= 0 || r.Stop.Sub(old.Stop) <= h.maxAge) {
			break
		}
		h.bytes -= h.sizes[h.first]
		h.records[h.first] = nil
		h.first++
		h.trimmed++
	}
	// Compact when half the slice is trimmed records.
	if h.first > 64 && h.first > len(h.records)/2 {
		n := copy(h.records, h.records[h.first:])
		clear(h.records[n:])
		h.records = h.records[:n]
		copy(h.sizes, h.sizes[h.first:])
		h.sizes = h.sizes[:n]
		h.first = 0
	}
}

func (h *history) kept() []*api.RecordedTxn { return h.records[h.first:] }

func (h *history) get(seq uint64) *api.RecordedTxn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	recs := h.kept()
	i := sort.Search(len(recs), func(i int) bool { return recs[i].SeqNum >= seq })
	if i < len(recs) && recs[i].SeqNum == seq {
		return recs[i]
	}
	return nil
}

// between returns the records that started in [since, until] (zero times
// leave that end open). Records are in sequence order and start in that
// order, so both ends are found by binary search.
func (h *history) between(since, until time.Time) []*api.RecordedTxn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	recs := h.kept()
	lo, hi := 0, len(recs)
	if !since.IsZero() {
		lo = sort.Search(len(recs), func(i int) bool { return !recs[i].Start.Before(since) })
	}
	if !until.IsZero() {
		hi = sort.Search(len(recs), func(i int) bool { return recs[i].Start.After(until) })
	}
	if lo >= hi {
		return nil
	}
	return append([]*api.RecordedTxn(nil), recs[lo:hi]...)
}

// snapshot returns the kept records (a copy of the slice) and the history's
// description.
func (h *history) snapshot() ([]*api.RecordedTxn, api.HistoryInfo) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	recs := append([]*api.RecordedTxn(nil), h.kept()...)
	return recs, h.infoLocked()
}

func (h *history) info() api.HistoryInfo {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.infoLocked()
}

func (h *history) infoLocked() api.HistoryInfo {
	info := api.HistoryInfo{Trimmed: h.trimmed, Kept: len(h.records) - h.first, Bytes: h.bytes,
		MaxCount: h.maxCount, MaxBytes: h.maxBytes, MaxAge: h.maxAge}
	if recs := h.kept(); len(recs) > 0 {
		info.OldestSeq, info.OldestStart = recs[0].SeqNum, recs[0].Start
		info.NewestSeq = recs[len(recs)-1].SeqNum
	}
	return info
}

// DryRunsKept is how many records of dry runs (plans) the scheduler keeps,
// apart from the history (and within its byte and age limits): enough for
// the callers that plan and then read the plan's record
// (GetRecordedTransaction), and plans never push transactions out of the
// history.
const DryRunsKept = 16

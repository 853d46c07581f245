package kvscheduler_test

// Property tests of the engine: random descriptors' values over a small key
// space, random dependencies among them, random derived values and random
// injected failures, checked against an independent model of what the SB must
// end up holding (propExpected).
//
// The world:
//
//   - descriptors "a" (with metadata), "b" (re-creates on some changes) and
//     "c" (no Update: every change re-creates) describe NB keys a/1..a/5,
//     b/1..b/5, c/1..c/5; the keys a/6, b/6, c/6 are never set by the NB and
//     exist only when the SB reports them as foreign values;
//   - a value is "v<n>[ dep=k1,k2][ der=s1,s2]": it depends on the keys after
//     dep= and derives, for each spec after der=, "p<i>" the property
//     prop/<key>/p<i> (no descriptor), "d<i>" the value d/<key>/d<i> of
//     descriptor "d", "e<i>~<k>" the value d/<key>/e<i> of descriptor "d"
//     that itself depends on k;
//   - base values may depend on base keys, on properties and on "d<i>"
//     derived values; "e<i>" derived values are never depended on. So Key
//     dependency cycles form among base values only, and the model can treat
//     each cycle (strongly connected component) as created together, as
//     doc.go says.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

const (
	// propNBIndexes: the NB sets <d>/1..<d>/propNBIndexes; <d>/propNBIndexes+1
	// is a dependency target only the SB can provide.
	propNBIndexes = 5
	// propRetryMax is high enough that injected failures (a few per key) never
	// exhaust the retries: convergence must always be reached.
	propRetryMax = 50
)

var (
	propBaseDescriptors = []string{"a", "b", "c"}
	propNBKeys          []string // a/1..c/5
	propForeignKeys     []string // a/6, b/6, c/6
	propBaseTargets     []string // propNBKeys + propForeignKeys
	propDerivedTargets  []string // d/<nb key>/d1, d/<nb key>/d2, prop/<nb key>/p1
)

func init() {
	for _, d := range propBaseDescriptors {
		for i := 1; i <= propNBIndexes; i++ {
			propNBKeys = append(propNBKeys, d+"/"+strconv.Itoa(i))
		}
		propForeignKeys = append(propForeignKeys, d+"/"+strconv.Itoa(propNBIndexes+1))
	}
	propBaseTargets = append(append([]string(nil), propNBKeys...), propForeignKeys...)
	for _, k := range propNBKeys {
		propDerivedTargets = append(propDerivedTargets, "d/"+k+"/d1", "d/"+k+"/d2", "prop/"+k+"/p1")
	}
}

// ---------------------------------------------------------------------------
// Values: text format, parsing, descriptor callbacks.

// propDerivedValue is one derived value of a base value.
type propDerivedValue struct {
	key  string
	text string
	deps []string
}

// propParsed is a parsed value text.
type propParsed struct {
	version int
	deps    []string
	derived []propDerivedValue // unique keys, in text order
}

func propParse(key, text string) propParsed {
	var p propParsed
	for _, field := range strings.Fields(text) {
		switch {
		case strings.HasPrefix(field, "v"):
			p.version, _ = strconv.Atoi(field[1:])
		case strings.HasPrefix(field, "dep="):
			for _, k := range strings.Split(field[len("dep="):], ",") {
				if k != "" {
					p.deps = append(p.deps, k)
				}
			}
		case strings.HasPrefix(field, "der="):
			seen := map[string]bool{}
			for _, spec := range strings.Split(field[len("der="):], ",") {
				if spec == "" {
					continue
				}
				dv := propDerivedOf(key, spec, p.version)
				if !seen[dv.key] {
					seen[dv.key] = true
					p.derived = append(p.derived, dv)
				}
			}
		}
	}
	return p
}

// propDerivedOf turns a der= spec into the derived value. Its text depends on
// the base version's parity, so some base updates change derived values and
// some do not.
func propDerivedOf(base, spec string, version int) propDerivedValue {
	name, dep, _ := strings.Cut(spec, "~")
	text := fmt.Sprintf("%s:%d", name, version%2)
	if dep != "" {
		text += " dep=" + dep
	}
	dv := propDerivedValue{key: "d/" + base + "/" + name, text: text}
	if strings.HasPrefix(name, "p") {
		dv.key = "prop/" + base + "/" + name
	}
	if dep != "" {
		dv.deps = []string{dep}
	}
	return dv
}

func propDerivedValues(key string, value proto.Message) []api.KeyValuePair {
	var out []api.KeyValuePair
	for _, dv := range propParse(key, mocksb.Text(value)).derived {
		out = append(out, api.KeyValuePair{Key: dv.key, Value: mocksb.Str(dv.text)})
	}
	return out
}

// propRecreate makes descriptor b re-create (rather than update) a value
// whose new version is a multiple of 3.
func propRecreate(key string, _, newValue proto.Message) bool {
	return propParse(key, mocksb.Text(newValue)).version%3 == 0
}

// propValueGen generates the value of a base key.
func propValueGen(key string) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		var b strings.Builder
		fmt.Fprintf(&b, "v%d", rapid.IntRange(0, 3).Draw(t, "version"))
		var deps []string
		for range rapid.IntRange(0, 2).Draw(t, "deps") {
			var dep string
			if rapid.IntRange(0, 3).Draw(t, "onDerived") == 0 {
				dep = rapid.SampledFrom(propDerivedTargets).Draw(t, "dep")
			} else {
				dep = rapid.SampledFrom(propBaseTargets).Draw(t, "dep")
			}
			// A value depending on itself is a degenerate cycle whose meaning
			// the documentation does not settle; leave it out.
			if dep != key {
				deps = append(deps, dep)
			}
		}
		if len(deps) > 0 {
			b.WriteString(" dep=" + strings.Join(deps, ","))
		}
		var specs []string
		for range rapid.IntRange(0, 2).Draw(t, "derived") {
			switch spec := rapid.SampledFrom([]string{"p1", "d1", "d2", "e1", "e2"}).Draw(t, "spec"); spec {
			case "e1", "e2":
				specs = append(specs, spec+"~"+rapid.SampledFrom(propBaseTargets).Draw(t, "derivedDep"))
			default:
				specs = append(specs, spec)
			}
		}
		if len(specs) > 0 {
			b.WriteString(" der=" + strings.Join(specs, ","))
		}
		return b.String()
	})
}

// propKV is one change of a transaction; an empty Value deletes the key.
type propKV struct {
	Key   string
	Value string
}

func (kv propKV) String() string {
	if kv.Value == "" {
		return kv.Key + " DELETE"
	}
	return kv.Key + "=" + strconv.Quote(kv.Value)
}

func propKVGen() *rapid.Generator[propKV] {
	return rapid.Custom(func(t *rapid.T) propKV {
		key := rapid.SampledFrom(propNBKeys).Draw(t, "key")
		if rapid.IntRange(0, 4).Draw(t, "delete") == 0 {
			return propKV{Key: key}
		}
		return propKV{Key: key, Value: propValueGen(key).Draw(t, "value")}
	})
}

// propTxnGen generates a transaction of changes to distinct keys.
func propTxnGen(minLen, maxLen int) *rapid.Generator[[]propKV] {
	return rapid.SliceOfNDistinct(propKVGen(), minLen, maxLen, func(kv propKV) string { return kv.Key })
}

// propFailure is a failure injected into the mock SB.
type propFailure struct {
	Kind  string // create, update, delete, retrieve
	Key   string // the key, or the descriptor name for retrieve
	Times int
	Leave bool // a failed create still stores the value
}

func propFailureGen() *rapid.Generator[propFailure] {
	crudKeys := append(append([]string(nil), propNBKeys...), propDerivedTargets...)
	crudKeys = slices.DeleteFunc(crudKeys, func(k string) bool { return strings.HasPrefix(k, "prop/") })
	return rapid.Custom(func(t *rapid.T) propFailure {
		f := propFailure{
			Kind:  rapid.SampledFrom([]string{"create", "update", "delete", "create", "retrieve"}).Draw(t, "kind"),
			Times: rapid.IntRange(1, 2).Draw(t, "times"),
		}
		if f.Kind == "retrieve" {
			f.Key = rapid.SampledFrom(propBaseDescriptors).Draw(t, "descriptor")
			return f
		}
		f.Key = rapid.SampledFrom(crudKeys).Draw(t, "key")
		if f.Kind == "create" && !strings.HasPrefix(f.Key, "d/") {
			f.Leave = rapid.Bool().Draw(t, "leave")
		}
		return f
	})
}

func (f propFailure) inject(sb *mocksb.SB) {
	if f.Leave {
		sb.FailLeaving(f.Key, nil, f.Times)
		return
	}
	sb.Fail(f.Kind, f.Key, nil, f.Times)
}

// ---------------------------------------------------------------------------
// Fake clock: retry timers fire only when the test says so.

type propClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*propTimer
}

type propTimer struct {
	at   time.Time
	f    func()
	done bool
}

func propNewClock() *propClock {
	return &propClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *propClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *propClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &propTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.done {
			return false
		}
		t.done = true
		return true
	}
}

// fireNext advances the time to the earliest pending timer and runs it (in
// the calling goroutine, so that whatever it queues is queued when it
// returns). It reports whether there was one.
func (c *propClock) fireNext() bool {
	c.mu.Lock()
	c.timers = slices.DeleteFunc(c.timers, func(t *propTimer) bool { return t.done })
	if len(c.timers) == 0 {
		c.mu.Unlock()
		return false
	}
	next := c.timers[0]
	for _, t := range c.timers[1:] {
		if t.at.Before(next.at) {
			next = t
		}
	}
	next.done = true
	if next.at.After(c.now) {
		c.now = next.at
	}
	c.mu.Unlock()
	next.f()
	return true
}

// ---------------------------------------------------------------------------
// Environment: a scheduler over the mock SB with the four descriptors, and the
// NB state the test has committed.

// propTB is what both *testing.T and *rapid.T offer.
type propTB interface {
	rapid.TB
	Cleanup(func())
}

type propEnv struct {
	t     propTB
	sb    *mocksb.SB
	clock *propClock
	s     *kvscheduler.Scheduler
	// nb is the NB state committed so far: key -> value text.
	nb map[string]string
	// wedged is set when a call got stuck: Close would hang too.
	wedged bool
}

func propNewEnv(t propTB) *propEnv {
	e := &propEnv{t: t, sb: mocksb.New(), clock: propNewClock(), nb: map[string]string{}}
	e.s = kvscheduler.New(kvscheduler.Options{
		Clock:  e.clock,
		Logger: slog.New(slog.DiscardHandler),
	})
	t.Cleanup(func() {
		if !e.wedged {
			e.s.Close()
		}
	})
	err := e.s.RegisterKVDescriptor(
		e.sb.Descriptor(mocksb.Options{Name: "a", Prefix: "a/", NB: true, WithMetadata: true,
			Deps: mocksb.DependsOn, Derived: propDerivedValues, Batch: true}),
		e.sb.Descriptor(mocksb.Options{Name: "b", Prefix: "b/", NB: true, RecreateIf: propRecreate,
			Deps: mocksb.DependsOn, Derived: propDerivedValues, RetrieveDependencies: []string{"a"}}),
		e.sb.Descriptor(mocksb.Options{Name: "c", Prefix: "c/", NB: true, NoUpdate: true,
			Deps: mocksb.DependsOn, Derived: propDerivedValues, Batch: true}),
		e.sb.Descriptor(mocksb.Options{Name: "d", Prefix: "d/", NoRetrieve: true, Deps: mocksb.DependsOn, Batch: true}),
	)
	if err != nil {
		t.Fatalf("register descriptors: %v", err)
	}
	return e
}

// guard runs f and fails the test if it does not return (see mustReturn).
func (e *propEnv) guard(what string, f func()) {
	e.t.Helper()
	mustReturn(e.t, what, func() { e.wedged = true }, f)
}

// commit commits kvs with ctx and returns what Commit returned. It does not
// change e.nb: see apply.
func (e *propEnv) commit(ctx context.Context, kvs []propKV) (seq uint64, err error) {
	e.t.Helper()
	e.guard("Commit", func() {
		txn := e.s.StartNBTransaction()
		for _, kv := range kvs {
			if kv.Value == "" {
				txn.SetValue(kv.Key, nil)
			} else {
				txn.SetValue(kv.Key, mocksb.Str(kv.Value))
			}
		}
		seq, err = txn.Commit(ctx, optsOf(ctx))
	})
	// A failure of a value is reported as *api.TransactionError; anything
	// else (closed, queue full, context) is unexpected here.
	var txnErr *api.TransactionError
	if err != nil && (!errors.As(err, &txnErr) || txnErr.TxnInitError != nil) {
		e.t.Fatalf("Commit %v: unexpected error %v", kvs, err)
	}
	return seq, err
}

// apply records kvs as committed in e.nb.
func (e *propEnv) apply(kvs []propKV) {
	for _, kv := range kvs {
		if kv.Value == "" {
			delete(e.nb, kv.Key)
		} else {
			e.nb[kv.Key] = kv.Value
		}
	}
}

// commitApply commits kvs as a best-effort transaction with retries and
// records them.
func (e *propEnv) commitApply(kvs []propKV) error {
	e.t.Helper()
	ctx := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second, MaxCount: propRetryMax, ExpBackoff: false}})
	_, err := e.commit(ctx, kvs)
	e.apply(kvs)
	return err
}

// nbKVs returns the NB state as a transaction, sorted by key.
func (e *propEnv) nbKVs() []propKV {
	var kvs []propKV
	for _, k := range slices.Sorted(maps.Keys(e.nb)) {
		kvs = append(kvs, propKV{Key: k, Value: e.nb[k]})
	}
	return kvs
}

func (e *propEnv) barrier() {
	e.t.Helper()
	e.guard("TransactionBarrier", e.s.TransactionBarrier)
}

// fireRetry fires the earliest retry timer, if any, and waits for what it
// queued.
func (e *propEnv) fireRetry() bool {
	e.t.Helper()
	e.barrier()
	var fired bool
	e.guard("retry timer", func() { fired = e.clock.fireNext() })
	e.barrier()
	return fired
}

// settle runs every queued transaction and every retry until none is left.
func (e *propEnv) settle() {
	e.t.Helper()
	for range 10 * propRetryMax {
		if !e.fireRetry() {
			return
		}
	}
	e.t.Fatalf("retries still scheduled after %d rounds", 10*propRetryMax)
}

// stateOf returns the state of a base or derived key ("" when unknown).
func (e *propEnv) stateOf(key string) string {
	st := e.s.GetValueStatus(key)
	if st == nil {
		return ""
	}
	if st.GetValue().GetKey() == key {
		return st.GetValue().GetState().String()
	}
	for _, d := range st.GetDerivedValues() {
		if d.GetKey() == key {
			return d.GetState().String()
		}
	}
	return ""
}

// states returns the state of every base key of the world and of every
// derived value the scheduler reports for them.
func (e *propEnv) states() map[string]string {
	out := map[string]string{}
	for _, k := range propBaseTargets {
		st := e.s.GetValueStatus(k)
		if st.GetValue() == nil {
			continue
		}
		out[k] = st.GetValue().GetState().String()
		for _, d := range st.GetDerivedValues() {
			out[d.GetKey()] = d.GetState().String()
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// The model.

// propExpected computes, from the NB state and the foreign values present in
// the SB, what the SB must hold and the state of every value:
//
//   - a base value exists once every dependency outside its dependency cycle
//     exists (a value outside any cycle is a cycle of one);
//   - a derived value exists once its base exists and its own dependencies
//     exist; a property is never in the SB;
//   - foreign values exist, are OBTAINED and stay in the SB.
func propExpected(nb, foreign map[string]string) (sb map[string]string, states map[string]string) {
	parsed := map[string]propParsed{}
	for k, text := range nb {
		parsed[k] = propParse(k, text)
	}
	exists := map[string]bool{}
	for k := range foreign {
		exists[k] = true
	}
	sccs := propSCCs(parsed)
	done := make([]bool, len(sccs))
	for changed := true; changed; {
		changed = false
		for i, scc := range sccs {
			if done[i] || !propSCCReady(scc, parsed, exists) {
				continue
			}
			done[i], changed = true, true
			for _, k := range scc {
				exists[k] = true
			}
		}
		for k, p := range parsed {
			if !exists[k] {
				continue
			}
			for _, dv := range p.derived {
				if !exists[dv.key] && propAllExist(dv.deps, exists) {
					exists[dv.key], changed = true, true
				}
			}
		}
	}

	sb = maps.Clone(foreign)
	if sb == nil {
		sb = map[string]string{}
	}
	states = map[string]string{}
	for k := range foreign {
		states[k] = api.ValueStateObtained.String()
	}
	for k, p := range parsed {
		if !exists[k] {
			states[k] = api.ValueStatePending.String()
			continue
		}
		states[k] = api.ValueStateConfigured.String()
		sb[k] = nb[k]
		for _, dv := range p.derived {
			if !exists[dv.key] {
				states[dv.key] = api.ValueStatePending.String()
				continue
			}
			states[dv.key] = api.ValueStateConfigured.String()
			if strings.HasPrefix(dv.key, "d/") {
				sb[dv.key] = dv.text
			}
		}
	}
	return sb, states
}

func propAllExist(keys []string, exists map[string]bool) bool {
	for _, k := range keys {
		if !exists[k] {
			return false
		}
	}
	return true
}

func propSCCReady(scc []string, parsed map[string]propParsed, exists map[string]bool) bool {
	for _, k := range scc {
		for _, dep := range parsed[k].deps {
			if !slices.Contains(scc, dep) && !exists[dep] {
				return false
			}
		}
	}
	return true
}

// propSCCs returns the strongly connected components of the dependency graph
// among NB base values (Tarjan).
func propSCCs(parsed map[string]propParsed) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var sccs [][]string
	var visit func(k string)
	visit = func(k string) {
		index[k] = len(index)
		low[k] = index[k]
		stack = append(stack, k)
		onStack[k] = true
		for _, dep := range parsed[k].deps {
			if _, ok := parsed[dep]; !ok {
				continue
			}
			if _, seen := index[dep]; !seen {
				visit(dep)
				low[k] = min(low[k], low[dep])
			} else if onStack[dep] {
				low[k] = min(low[k], index[dep])
			}
		}
		if low[k] == index[k] {
			var scc []string
			for {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[top] = false
				scc = append(scc, top)
				if top == k {
					break
				}
			}
			sccs = append(sccs, scc)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(parsed)) {
		if _, seen := index[k]; !seen {
			visit(k)
		}
	}
	return sccs
}

// checkConverged checks the SB and the states against the model.
func (e *propEnv) checkConverged(what string, foreign map[string]string) {
	e.t.Helper()
	wantSB, wantStates := propExpected(e.nb, foreign)
	gotSB := e.sb.Snapshot()
	var problems []string
	for _, k := range propUnion(wantSB, gotSB) {
		want, inWant := wantSB[k]
		got, inGot := gotSB[k]
		switch {
		case !inGot:
			problems = append(problems, fmt.Sprintf("SB lacks %s=%q", k, want))
		case !inWant:
			problems = append(problems, fmt.Sprintf("SB has %s=%q, expected nothing", k, got))
		case want != got:
			problems = append(problems, fmt.Sprintf("SB has %s=%q, expected %q", k, got, want))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(wantStates)) {
		if got := e.stateOf(k); got != wantStates[k] {
			problems = append(problems, fmt.Sprintf("state of %s is %q, expected %s", k, got, wantStates[k]))
		}
	}
	if len(problems) > 0 {
		e.t.Fatalf("%s: SB does not match the NB:\n  %s\nNB: %v\nforeign: %v\nSB: %v\n%s",
			what, strings.Join(problems, "\n  "), e.nbKVs(), foreign, gotSB, e.describeHistory())
	}
}

// describeHistory renders the recorded operations of the mock SB and the
// executed operations of every recorded transaction, for failure messages.
func (e *propEnv) describeHistory() string {
	var b strings.Builder
	fmt.Fprintf(&b, "SB operations: %s\n", mocksb.String(e.sb.OpStrings(true)))
	for _, rec := range e.s.GetTransactionHistory(time.Time{}, time.Time{}) {
		fmt.Fprintf(&b, "txn %d (%s, %s):", rec.SeqNum, rec.TxnType, rec.ResyncType)
		for _, op := range rec.Executed {
			fmt.Fprintf(&b, " [%s %s %s->%s", op.Operation, op.Key, op.PrevState, op.NewState)
			if op.NewErr != nil {
				fmt.Fprintf(&b, " err=%v", op.NewErr)
			}
			b.WriteString("]")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func propUnion(a, b map[string]string) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// propCRUDOps returns the create, update and delete operations the mock SB
// recorded (not the retrieves).
func propCRUDOps(sb *mocksb.SB) []string {
	return sb.OpStrings(false)
}

// propDiff renders the differences between two maps.
func propDiff(before, after map[string]string) string {
	var lines []string
	for _, k := range propUnion(before, after) {
		b, inB := before[k]
		a, inA := after[k]
		if inB != inA || a != b {
			lines = append(lines, fmt.Sprintf("%s: %s -> %s", k, propShow(b, inB), propShow(a, inA)))
		}
	}
	return strings.Join(lines, "\n  ")
}

func propShow(v string, ok bool) string {
	if !ok {
		return "(none)"
	}
	return strconv.Quote(v)
}

// ---------------------------------------------------------------------------
// Properties.

// (a) Random transactions with random failures and retries converge: once
// every retry has run, the SB holds exactly the NB values whose dependencies
// can be met (with their derived values), and the states say so.
func TestPropConvergesWithRetries(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		e := propNewEnv(rt)
		for i := range rapid.IntRange(1, 5).Draw(rt, "transactions") {
			for _, f := range rapid.SliceOfN(propFailureGen(), 0, 3).Draw(rt, fmt.Sprintf("txn%d failures", i)) {
				f.inject(e.sb)
			}
			_ = e.commitApply(propTxnGen(1, 6).Draw(rt, fmt.Sprintf("txn%d", i)))
			// Let some retries run between NB transactions, so that they
			// meet keys changed since they were scheduled.
			for range rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("retries after txn%d", i)) {
				e.fireRetry()
			}
		}
		e.settle()
		e.checkConverged("after all retries", nil)
	})
}

// (b) Committing the state the scheduler already has executes no SB
// operation, and deleting keys that are not there neither.
func TestPropRecommitIsNoop(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		e := propNewEnv(rt)
		for i := range rapid.IntRange(1, 3).Draw(rt, "transactions") {
			for _, f := range rapid.SliceOfN(propFailureGen(), 0, 2).Draw(rt, fmt.Sprintf("txn%d failures", i)) {
				f.inject(e.sb)
			}
			_ = e.commitApply(propTxnGen(1, 6).Draw(rt, fmt.Sprintf("txn%d", i)))
		}
		e.settle()
		e.checkConverged("before the re-commit", nil)
		statesBefore := e.states()

		again := e.nbKVs()
		for _, k := range propNBKeys {
			if _, ok := e.nb[k]; !ok && rapid.Bool().Draw(rt, "delete absent "+k) {
				again = append(again, propKV{Key: k})
			}
		}
		again = rapid.Permutation(again).Draw(rt, "re-commit order")
		e.sb.ClearOps()
		if err := e.commitApply(again); err != nil {
			rt.Fatalf("re-commit of the current state failed: %v", err)
		}
		if ops := e.sb.OpStrings(true); len(ops) > 0 {
			rt.Fatalf("re-commit of the current state executed %s\n%s", mocksb.String(ops), e.describeHistory())
		}
		if diff := propDiff(statesBefore, e.states()); diff != "" {
			rt.Fatalf("re-commit of the current state changed states:\n  %s", diff)
		}
		e.settle()
		if ops := e.sb.OpStrings(true); len(ops) > 0 {
			rt.Fatalf("re-commit of the current state scheduled retries that executed %s", mocksb.String(ops))
		}
	})
}

// (c) A transaction WithRevert that hits a failure returns the error and
// leaves the SB and the states exactly as they were; the same transaction
// without the failure then applies normally.
func TestPropRevertRestoresSB(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		e := propNewEnv(rt)
		_ = e.commitApply(propTxnGen(1, 8).Draw(rt, "initial state"))
		e.settle()
		e.checkConverged("initial state", nil)

		txn := propTxnGen(1, 6).Draw(rt, "reverted txn")
		sbBefore, statesBefore := e.sb.Snapshot(), e.states()

		// The plan says which SB operations the transaction will execute;
		// pick one to fail.
		e.sb.ClearOps()
		seq, err := e.commit(withOpts(context.Background(), api.TxnOptions{DryRun: true}), txn)
		if err != nil {
			rt.Fatalf("dry run: %v", err)
		}
		if ops := e.sb.OpStrings(true); len(ops) > 0 {
			rt.Fatalf("dry run executed %s", mocksb.String(ops))
		}
		rec := e.s.GetRecordedTransaction(seq)
		if rec == nil {
			rt.Fatalf("no record of dry-run transaction %d", seq)
		}
		var planned []*api.RecordedTxnOp
		for _, op := range rec.Planned {
			if op.Descriptor != "" && !op.NOOP && !op.Property &&
				(op.Operation == api.OpCreate || op.Operation == api.OpUpdate || op.Operation == api.OpDelete) {
				planned = append(planned, op)
			}
		}

		ctx := withOpts(context.Background(), api.TxnOptions{Revert: true})
		if len(planned) == 0 {
			// Nothing to execute: nothing can fail.
			if _, err := e.commit(ctx, txn); err != nil {
				rt.Fatalf("transaction with no SB operation failed: %v", err)
			}
			e.apply(txn)
			e.checkConverged("after a transaction with nothing to do", nil)
			return
		}
		failAt := planned[rapid.IntRange(0, len(planned)-1).Draw(rt, "failing planned op")]
		f := propFailure{Kind: strings.ToLower(failAt.Operation.String()), Key: failAt.Key, Times: 1}
		if f.Kind == "create" && failAt.Descriptor != "d" {
			// A partial create leaves the value in the SB; the refresh
			// finds it and the revert must remove it too.
			f.Leave = rapid.Bool().Draw(rt, "failed create leaves the value")
		}
		rt.Logf("injected failure: %+v", f)
		f.inject(e.sb)

		e.sb.ClearOps()
		_, err = e.commit(ctx, txn)
		if err == nil {
			rt.Fatalf("reverted transaction hit %+v but returned no error\n%s", f, e.describeHistory())
		}
		if !errors.Is(err, mocksb.ErrInjected) {
			rt.Fatalf("reverted transaction returned %v, which does not wrap the injected failure", err)
		}
		if diff := propDiff(sbBefore, e.sb.Snapshot()); diff != "" {
			rt.Fatalf("reverted transaction changed the SB:\n  %s\n%s", diff, e.describeHistory())
		}
		if diff := propDiff(statesBefore, e.states()); diff != "" {
			rt.Fatalf("reverted transaction changed states:\n  %s\n%s", diff, e.describeHistory())
		}
		e.checkConverged("after the revert", nil)

		// The graph is consistent after the revert: the same transaction,
		// now without failure, applies as usual.
		if _, err := e.commit(context.Background(), txn); err != nil {
			rt.Fatalf("transaction after the revert: %v", err)
		}
		e.apply(txn)
		e.checkConverged("transaction after the revert", nil)
	})
}

// (d) The order of the keys in a transaction changes neither the final SB nor
// the final states.
func TestPropKeyOrderIrrelevant(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		initial := propTxnGen(0, 8).Draw(rt, "initial state")
		txn := propTxnGen(2, 8).Draw(rt, "txn")
		permuted := rapid.Permutation(txn).Draw(rt, "permuted txn")

		run := func(kvs []propKV) *propEnv {
			e := propNewEnv(rt)
			if len(initial) > 0 {
				_ = e.commitApply(initial)
			}
			_ = e.commitApply(kvs)
			e.settle()
			e.checkConverged(fmt.Sprintf("order %v", kvs), nil)
			return e
		}
		e1, e2 := run(txn), run(permuted)
		if diff := propDiff(e1.sb.Snapshot(), e2.sb.Snapshot()); diff != "" {
			rt.Fatalf("SB differs between the two orders:\n  %s", diff)
		}
		if diff := propDiff(e1.states(), e2.states()); diff != "" {
			rt.Fatalf("states differ between the two orders:\n  %s", diff)
		}
	})
}

// propDrift is a change made in the SB behind the scheduler's back.
type propDrift struct {
	Kind string // change, remove, foreign, stale
	Key  string
	Text string
	// Origin of a foreign value: FromSB or UnknownOrigin.
	Origin api.ValueOrigin
}

// apply makes the change in the SB. Removing a base value removes its
// derived values too, as removing an interface removes its addresses.
func (d propDrift) apply(sb *mocksb.SB) {
	switch d.Kind {
	case "change":
		it, _ := sb.Get(d.Key)
		var md any
		if it != nil {
			md = it.Metadata
		}
		sb.Put(d.Key, mocksb.Str(d.Text), md, api.FromNB)
	case "remove":
		sb.Remove(d.Key)
		for _, k := range sb.Keys() {
			if strings.HasPrefix(k, "d/"+d.Key+"/") {
				sb.Remove(k)
			}
		}
	case "foreign":
		sb.Put(d.Key, mocksb.Str(d.Text), nil, d.Origin)
	case "stale":
		sb.Put(d.Key, mocksb.Str(d.Text), nil, api.FromNB)
	}
}

func propDriftGen(sb *mocksb.SB, nb map[string]string) *rapid.Generator[propDrift] {
	return rapid.Custom(func(t *rapid.T) propDrift {
		var ours []string // base values in the SB
		for _, k := range sb.Keys() {
			if it, ok := sb.Get(k); ok && it.Origin == api.FromNB && !strings.HasPrefix(k, "d/") {
				ours = append(ours, k)
			}
		}
		var notIntended []string
		for _, k := range propBaseTargets {
			if _, ok := nb[k]; !ok {
				notIntended = append(notIntended, k)
			}
		}
		kinds := []string{"foreign", "stale"}
		if len(ours) > 0 {
			kinds = append(kinds, "change", "remove")
		}
		d := propDrift{Kind: rapid.SampledFrom(kinds).Draw(t, "kind")}
		switch d.Kind {
		case "change":
			d.Key = rapid.SampledFrom(ours).Draw(t, "key")
			it, _ := sb.Get(d.Key)
			d.Text = rapid.SampledFrom([]string{"drift", mocksb.Text(it.Value) + " drift"}).Draw(t, "text")
		case "remove":
			d.Key = rapid.SampledFrom(ours).Draw(t, "key")
		case "foreign":
			d.Key = rapid.SampledFrom(propForeignKeys).Draw(t, "key")
			d.Text = "foreign"
			d.Origin = rapid.SampledFrom([]api.ValueOrigin{api.FromSB, api.UnknownOrigin}).Draw(t, "origin")
		case "stale":
			d.Key = rapid.SampledFrom(notIntended).Draw(t, "key")
			d.Text = "v9 stale"
		}
		return d
	})
}

// (e) A full resync of the current NB state on an SB in sync executes no
// create, update or delete; after drift in the SB a downstream resync
// restores it (foreign values stay, OBTAINED), and a second one, like a full
// resync, has nothing left to do.
func TestPropResync(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		e := propNewEnv(rt)
		for i := range rapid.IntRange(1, 3).Draw(rt, "transactions") {
			_ = e.commitApply(propTxnGen(1, 6).Draw(rt, fmt.Sprintf("txn%d", i)))
		}
		e.settle()
		e.checkConverged("before the resync", nil)
		statesBefore := e.states()

		e.sb.ClearOps()
		full := withOpts(context.Background(), api.TxnOptions{Resync: api.FullResync})
		if _, err := e.commit(full, e.nbKVs()); err != nil {
			rt.Fatalf("full resync in sync: %v", err)
		}
		if ops := propCRUDOps(e.sb); len(ops) > 0 {
			rt.Fatalf("full resync of an SB in sync executed %s\n%s", mocksb.String(ops), e.describeHistory())
		}
		if diff := propDiff(statesBefore, e.states()); diff != "" {
			rt.Fatalf("full resync of an SB in sync changed states:\n  %s", diff)
		}

		for i := range rapid.IntRange(1, 4).Draw(rt, "drifts") {
			d := propDriftGen(e.sb, e.nb).Draw(rt, fmt.Sprintf("drift%d", i))
			d.apply(e.sb)
		}
		foreign := map[string]string{}
		for _, k := range e.sb.Keys() {
			if it, _ := e.sb.Get(k); it.Origin != api.FromNB {
				foreign[k] = mocksb.Text(it.Value)
			}
		}
		drifted := e.sb.Snapshot()

		e.sb.ClearOps()
		down := withOpts(context.Background(), api.TxnOptions{Resync: api.DownstreamResync})
		if _, err := e.commit(down, nil); err != nil {
			rt.Fatalf("downstream resync: %v", err)
		}
		e.settle()
		e.checkConverged(fmt.Sprintf("downstream resync after drift (drifted SB %v)", drifted), foreign)

		e.sb.ClearOps()
		if _, err := e.commit(down, nil); err != nil {
			rt.Fatalf("second downstream resync: %v", err)
		}
		if _, err := e.commit(full, e.nbKVs()); err != nil {
			rt.Fatalf("full resync after repair: %v", err)
		}
		if ops := propCRUDOps(e.sb); len(ops) > 0 {
			rt.Fatalf("resyncs of a repaired SB executed %s\n%s", mocksb.String(ops), e.describeHistory())
		}
		e.checkConverged("resyncs after repair", foreign)
	})
}

// TestPropModel checks the model itself on hand-made cases, so that a
// property failure points at the engine, not at the test.
func TestPropModel(t *testing.T) {
	cases := []struct {
		name      string
		nb        map[string]string
		foreign   map[string]string
		wantSB    map[string]string
		wantState map[string]string
	}{{
		name:      "chain with a missing end",
		nb:        map[string]string{"a/1": "v0 dep=b/1", "b/1": "v0 dep=c/6"},
		wantSB:    map[string]string{},
		wantState: map[string]string{"a/1": "PENDING", "b/1": "PENDING"},
	}, {
		name:      "chain met by a foreign value",
		nb:        map[string]string{"a/1": "v0 dep=b/1", "b/1": "v0 dep=c/6"},
		foreign:   map[string]string{"c/6": "foreign"},
		wantSB:    map[string]string{"a/1": "v0 dep=b/1", "b/1": "v0 dep=c/6", "c/6": "foreign"},
		wantState: map[string]string{"a/1": "CONFIGURED", "b/1": "CONFIGURED", "c/6": "OBTAINED"},
	}, {
		name:      "cycle created together",
		nb:        map[string]string{"a/1": "v0 dep=b/1", "b/1": "v0 dep=c/1", "c/1": "v0 dep=a/1"},
		wantSB:    map[string]string{"a/1": "v0 dep=b/1", "b/1": "v0 dep=c/1", "c/1": "v0 dep=a/1"},
		wantState: map[string]string{"a/1": "CONFIGURED", "b/1": "CONFIGURED", "c/1": "CONFIGURED"},
	}, {
		name:      "cycle waiting for an outside dependency",
		nb:        map[string]string{"a/1": "v0 dep=b/1,a/6", "b/1": "v0 dep=a/1"},
		wantSB:    map[string]string{},
		wantState: map[string]string{"a/1": "PENDING", "b/1": "PENDING"},
	}, {
		name: "derived values and dependencies on them",
		nb: map[string]string{
			"a/1": "v1 der=p1,d1,e1~b/6",
			"b/1": "v0 dep=prop/a/1/p1,d/a/1/d1",
		},
		wantSB: map[string]string{
			"a/1": "v1 der=p1,d1,e1~b/6", "d/a/1/d1": "d1:1",
			"b/1": "v0 dep=prop/a/1/p1,d/a/1/d1",
		},
		wantState: map[string]string{
			"a/1": "CONFIGURED", "prop/a/1/p1": "CONFIGURED", "d/a/1/d1": "CONFIGURED",
			"d/a/1/e1": "PENDING", "b/1": "CONFIGURED",
		},
	}, {
		name:      "value depending on its own derived value never exists",
		nb:        map[string]string{"a/1": "v0 dep=d/a/1/d1 der=d1"},
		wantSB:    map[string]string{},
		wantState: map[string]string{"a/1": "PENDING"},
	}, {
		name:      "cycle through a derived value never exists",
		nb:        map[string]string{"a/1": "v0 dep=b/1", "b/1": "v0 dep=d/a/1/d1", "c/1": "v2 der=d1"},
		wantSB:    map[string]string{"c/1": "v2 der=d1", "d/c/1/d1": "d1:0"},
		wantState: map[string]string{"a/1": "PENDING", "b/1": "PENDING", "c/1": "CONFIGURED", "d/c/1/d1": "CONFIGURED"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gotSB, gotStates := propExpected(tc.nb, tc.foreign)
			if diff := propDiff(tc.wantSB, gotSB); diff != "" {
				t.Errorf("SB:\n  %s", diff)
			}
			if diff := propDiff(tc.wantState, gotStates); diff != "" {
				t.Errorf("states:\n  %s", diff)
			}
		})
	}
}

// TestPropShrunkCases replays, step by step, the smallest failing inputs the
// properties above have found, so that each engine bug they revealed has a
// readable test of its own.
func TestPropShrunkCases(t *testing.T) {
	retry := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second, MaxCount: propRetryMax, ExpBackoff: false}})

	t.Run("dependency cycle is created together", func(t *testing.T) {
		// a/4 and b/5 depend on each other and on nothing else: doc.go says
		// they are created together, in one go.
		e := propNewEnv(t)
		e.commitApply([]propKV{{Key: "a/4", Value: "v0 dep=b/5"}, {Key: "b/5", Value: "v0 dep=a/4"}})
		e.checkConverged("after the commit", nil)
	})

	t.Run("failed delete of a dependent is retried", func(t *testing.T) {
		// Removing a/1 must first delete a/5, which depends on it. That
		// delete fails once: a/5 must be retried (then PENDING) and a/1
		// deleted after it.
		e := propNewEnv(t)
		e.commitApply([]propKV{{Key: "a/1", Value: "v0"}, {Key: "a/5", Value: "v0 dep=a/1"}})
		e.sb.Fail("delete", "a/5", nil, 1)
		if _, err := e.commit(retry, []propKV{{Key: "a/1"}}); !errors.Is(err, mocksb.ErrInjected) {
			t.Errorf("commit: error %v, want the injected failure", err)
		}
		e.apply([]propKV{{Key: "a/1"}})
		if got := e.stateOf("a/5"); got != api.ValueStateRetrying.String() {
			t.Errorf("state of a/5 after its delete failed = %q, want RETRYING", got)
		}
		e.settle()
		e.checkConverged("after retries", nil)
	})

	t.Run("partial create failing again in a cycle leaves nothing behind", func(t *testing.T) {
		// a/2 and a/5 depend on each other. a/5's create fails twice,
		// leaving a/5 in the SB each time: the first is refreshed (found,
		// completed, then deleted again as the cycle's other member is
		// not there), the second is not (a value is refreshed once per
		// transaction). Once a/2 is removed, a/5's retry finds its
		// dependency gone: what its failed create may have left must go.
		e := propNewEnv(t)
		e.commitApply([]propKV{{Key: "a/1"}})
		e.sb.FailLeaving("a/5", nil, 2)
		_, _ = e.commit(retry, []propKV{{Key: "a/2", Value: "v0 dep=a/5"}, {Key: "a/5", Value: "v0 dep=a/2"}})
		e.apply([]propKV{{Key: "a/2", Value: "v0 dep=a/5"}, {Key: "a/5", Value: "v0 dep=a/2"}})
		e.commitApply([]propKV{{Key: "a/2"}})
		e.settle()
		e.checkConverged("after retries", nil)
	})

	t.Run("partial create: derived values are created", func(t *testing.T) {
		// Create of a/1 fails but leaves a/1 in the SB; the refresh finds
		// it. Its derived value d/a/1/d1 must then be created (and not
		// reported CONFIGURED while absent).
		e := propNewEnv(t)
		e.sb.FailLeaving("a/1", nil, 1)
		_ = e.commitApply([]propKV{{Key: "a/1", Value: "v0 der=d1"}})
		e.settle()
		e.checkConverged("after retries", nil)
	})

	t.Run("revert of a partial create of a pending value", func(t *testing.T) {
		// c/1 is PENDING; a reverted change makes it creatable, its create
		// fails leaving it in the SB, the revert removes it. Committing the
		// same change again must create it.
		e := propNewEnv(t)
		e.commitApply([]propKV{{Key: "c/1", Value: "v0 dep=a/6"}})
		e.sb.FailLeaving("c/1", nil, 1)
		if _, err := e.commit(withOpts(context.Background(), api.TxnOptions{Revert: true}), []propKV{{Key: "c/1", Value: "v0"}}); err == nil {
			t.Fatalf("reverted commit returned no error")
		}
		e.checkConverged("after the revert", nil)
		e.commitApply([]propKV{{Key: "c/1", Value: "v0"}})
		e.checkConverged("same change without failure", nil)
	})

	t.Run("full resync leaves a pending derived value alone", func(t *testing.T) {
		// d/a/1/e1 is derived from a/1 and waits for a/2, which never
		// comes: it was never created, and a resync of the SB in sync has
		// nothing to do.
		e := propNewEnv(t)
		e.commitApply([]propKV{{Key: "a/1", Value: "v0 der=e1~a/2"}})
		e.checkConverged("before the resync", nil)
		e.sb.ClearOps()
		if _, err := e.commit(withOpts(context.Background(), api.TxnOptions{Resync: api.FullResync}), e.nbKVs()); err != nil {
			t.Errorf("full resync: %v", err)
		}
		if ops := propCRUDOps(e.sb); len(ops) > 0 {
			t.Errorf("full resync of an SB in sync executed %s", mocksb.String(ops))
		}
		e.checkConverged("after the resync", nil)
	})

	t.Run("update depending on an obsolete derived value stays pending", func(t *testing.T) {
		// The new a/2 depends on prop/a/2/p1, a property only the old a/2
		// derives: once the update removes it, a/2 cannot exist. It must
		// end PENDING and absent, not updated after being deleted.
		e := propNewEnv(t)
		e.commitApply([]propKV{{Key: "a/2", Value: "v0 der=p1"}})
		e.commitApply([]propKV{{Key: "a/2", Value: "v0 dep=prop/a/2/p1"}})
		e.settle()
		e.checkConverged("after the update", nil)
	})

	t.Run("update depending on an obsolete derived value with a descriptor", func(t *testing.T) {
		// Same with d/a/1/d1, a derived value with CRUD: it is deleted
		// first, then a/1 (PENDING), and nothing else.
		e := propNewEnv(t)
		e.commitApply([]propKV{{Key: "a/1", Value: "v0 der=d1"}})
		e.sb.ClearOps()
		e.commitApply([]propKV{{Key: "a/1", Value: "v0 dep=d/a/1/d1"}})
		want := []string{"delete d/a/1/d1", "delete a/1"}
		if got := propCRUDOps(e.sb); !slices.Equal(got, want) {
			t.Errorf("SB operations %s, want %s", mocksb.String(got), mocksb.String(want))
		}
		e.checkConverged("after the update", nil)
	})
	t.Run("failed delete in a derivation cycle", func(t *testing.T) {
		// a/1 comes to depend on a/4, which comes to depend on d/a/1/d1,
		// derived from a/1: a derivation cycle, so neither can exist. The
		// delete of a/1 fails twice; the retries must delete it, not take
		// it back as CONFIGURED.
		e := propNewEnv(t)
		e.commitApply([]propKV{{Key: "a/1", Value: "v0"}})
		e.commitApply([]propKV{{Key: "a/4", Value: "v0"}})
		e.sb.Fail("delete", "a/1", nil, 2)
		_ = e.commitApply([]propKV{{Key: "a/1", Value: "v0 dep=a/4 der=d1"}, {Key: "a/4", Value: "v0 dep=d/a/1/d1"}})
		e.settle()
		e.checkConverged("after retries", nil)
	})
	t.Run("value found missing by a refresh takes its dependents along", func(t *testing.T) {
		// The create of a/1 fails and so does the refresh after it: a/1 may
		// have been left in the SB. The next transaction makes a/1 depend on
		// its own derived value (it cannot exist) and adds a/2 on top of
		// a/1. The delete of what a/1 may have left fails, so a/2 is created
		// on it; the refresh then finds a/1 missing, and a/2 must go too.
		e := propNewEnv(t)
		e.sb.Fail("create", "a/1", nil, 1)
		e.sb.Fail("delete", "a/1", nil, 1)
		e.sb.Fail("retrieve", "a", nil, 1)
		_ = e.commitApply([]propKV{{Key: "a/1", Value: "v0"}})
		_ = e.commitApply([]propKV{{Key: "a/1", Value: "v0 dep=d/a/1/d1"}, {Key: "a/2", Value: "v0 dep=a/1"}})
		e.settle()
		e.checkConverged("after retries", nil)
	})
}

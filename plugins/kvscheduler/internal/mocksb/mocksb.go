// Package mocksb is a southbound for engine tests: an in-memory store of
// key-value pairs, descriptors that create, update, delete and retrieve in it,
// a record of every operation in the order it was called, and injectable
// failures. Values are wrapperspb.StringValue (Str) for simplicity.
package mocksb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Str makes a test value.
func Str(s string) proto.Message { return wrapperspb.String(s) }

// Text returns the text of a test value ("" for nil or another type).
func Text(v proto.Message) string {
	if s, ok := v.(*wrapperspb.StringValue); ok {
		return s.GetValue()
	}
	return ""
}

// Op is one recorded operation.
type Op struct {
	Kind  string // "create", "update", "delete" or "retrieve"
	Key   string // for "retrieve": the descriptor name
	Value string // the new value's text ("" for delete and retrieve)
}

func (o Op) String() string {
	if o.Value == "" {
		return o.Kind + " " + o.Key
	}
	return o.Kind + " " + o.Key + "=" + o.Value
}

// Item is one value stored in the SB.
type Item struct {
	Value    proto.Message
	Metadata any
	Origin   api.ValueOrigin
}

// Meta is the metadata the mock descriptors return: a unique index per
// created value, like a VPP sw_if_index.
type Meta struct{ Index int }

// ErrInjected is the default injected failure.
var ErrInjected = errors.New("injected failure")

type failure struct {
	err   error
	times int
	// leave: a failed create still stores the value (partial success).
	leave bool
}

// SB is the mock southbound. It is safe for concurrent use.
type SB struct {
	mu       sync.Mutex
	items    map[string]*Item
	ops      []Op
	failures map[string]*failure // "kind key"
	// quirks: calls that succeed without doing what they say ("kind key").
	quirks    map[string]quirk
	nextIndex int
	// Hook, when set, is called (without the SB lock) after every successful
	// create, update and delete: tests use it to re-enter the scheduler.
	Hook func(ctx context.Context, kind, key string)
}

// New returns an empty SB.
func New() *SB {
	return &SB{items: make(map[string]*Item), failures: make(map[string]*failure), quirks: make(map[string]quirk)}
}

// quirk is a call that reports success but does something else.
type quirk struct {
	// instead is what a create or update stores in place of its value
	// (nil: the call changes nothing).
	instead proto.Message
}

// Lose makes the next call of kind ("create", "update", "delete") for key
// report success without changing anything: a created value is not
// stored, an updated one keeps its old value, a deleted one stays.
func (sb *SB) Lose(kind, key string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.quirks[kind+" "+key] = quirk{}
}

// Substitute makes the next create or update (kind) of key report success
// but store value instead of the one it was given.
func (sb *SB) Substitute(kind, key string, value proto.Message) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.quirks[kind+" "+key] = quirk{instead: value}
}

// takeQuirk returns and forgets the quirk of a call, if any. Called with
// sb.mu held.
func (sb *SB) takeQuirk(kind, key string) (quirk, bool) {
	q, ok := sb.quirks[kind+" "+key]
	if ok {
		delete(sb.quirks, kind+" "+key)
	}
	return q, ok
}

// Put stores a value directly, as if created before (or outside) the agent.
func (sb *SB) Put(key string, value proto.Message, metadata any, origin api.ValueOrigin) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.items[key] = &Item{Value: value, Metadata: metadata, Origin: origin}
}

// Remove deletes a value directly, as if removed outside the agent.
func (sb *SB) Remove(key string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	delete(sb.items, key)
}

// Get returns the stored value of a key.
func (sb *SB) Get(key string) (*Item, bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	it, ok := sb.items[key]
	return it, ok
}

// Snapshot returns key -> value text of every stored value.
func (sb *SB) Snapshot() map[string]string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	out := make(map[string]string, len(sb.items))
	for k, it := range sb.items {
		out[k] = Text(it.Value)
	}
	return out
}

// Keys returns the stored keys, sorted.
func (sb *SB) Keys() []string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	keys := make([]string, 0, len(sb.items))
	for k := range sb.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Ops returns the recorded operations.
func (sb *SB) Ops() []Op {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return append([]Op(nil), sb.ops...)
}

// OpStrings returns the recorded operations as strings, without the
// "retrieve" ones unless withRetrieve.
func (sb *SB) OpStrings(withRetrieve bool) []string {
	var out []string
	for _, op := range sb.Ops() {
		if op.Kind == "retrieve" && !withRetrieve {
			continue
		}
		out = append(out, op.String())
	}
	return out
}

// ClearFailures drops the failures injected and not yet taken.
func (sb *SB) ClearFailures() {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	clear(sb.failures)
}

// ClearOps forgets the recorded operations.
func (sb *SB) ClearOps() {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.ops = nil
}

// Fail makes the next `times` calls of kind ("create", "update", "delete",
// "retrieve") for key fail with err (ErrInjected when nil). For retrieve, key
// is the descriptor name.
func (sb *SB) Fail(kind, key string, err error, times int) {
	sb.failWith(kind, key, &failure{err: err, times: times})
}

// FailLeaving is Fail for "create", except that the failed create still
// stores the value, like an SB that applied part of a request.
func (sb *SB) FailLeaving(key string, err error, times int) {
	sb.failWith("create", key, &failure{err: err, times: times, leave: true})
}

func (sb *SB) failWith(kind, key string, f *failure) {
	if f.err == nil {
		f.err = ErrInjected
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.failures[kind+" "+key] = f
}

// takeFailure records the op and returns the injected failure, if any.
// Called with sb.mu held.
func (sb *SB) takeFailure(op Op) *failure {
	sb.ops = append(sb.ops, op)
	f := sb.failures[op.Kind+" "+op.Key]
	if f == nil || f.times <= 0 {
		return nil
	}
	f.times--
	return f
}

// Options shape a mock descriptor.
type Options struct {
	// Name of the descriptor; its keys are those starting with Prefix.
	Name   string
	Prefix string
	// Keys, when set, narrows the keys of the descriptor to those starting
	// with Prefix that it also accepts (e.g. "iface/a" but not
	// "iface/a/address/10.0.0.1"); Retrieve returns only those.
	Keys func(key string) bool
	// NB: the descriptor describes NB values (sets NBKeyPrefix).
	NB           bool
	WithMetadata bool
	// NoUpdate leaves Update unset: every change re-creates.
	NoUpdate bool
	// NoRetrieve leaves Retrieve unset.
	NoRetrieve bool
	// RetrieveKeys, when set, narrows what Retrieve returns to the keys it
	// accepts (e.g. a descriptor of both base and derived values whose
	// Retrieve returns only the base values).
	RetrieveKeys func(key string) bool
	// RecreateIf makes UpdateWithRecreate true for these changes.
	RecreateIf func(key string, oldValue, newValue proto.Message) bool
	// Deps and Derived are the Dependencies and DerivedValues callbacks.
	Deps    func(key string, value proto.Message) []api.Dependency
	Derived func(key string, value proto.Message) []api.KeyValuePair
	// Validate is the Validate callback.
	Validate func(key string, value proto.Message) error
	// Comparator is the ValueComparator callback.
	Comparator func(key string, oldValue, newValue proto.Message) bool
	// Retriable is the IsRetriableFailure callback.
	Retriable            func(err error) bool
	RetrieveDependencies []string
	// OnRetrieve, when set, is called with the correlate values every time
	// Retrieve runs.
	OnRetrieve func(correlate []api.KVWithMetadata)
	// Batch sets Batch: it records "batch N" (N operations) and then runs
	// them one by one in order, each with its own result.
	Batch bool
}

// Descriptor returns a descriptor backed by this SB.
func (sb *SB) Descriptor(o Options) *api.KVDescriptor {
	selects := func(key string) bool {
		return strings.HasPrefix(key, o.Prefix) && (o.Keys == nil || o.Keys(key))
	}
	d := &api.KVDescriptor{
		Name:                 o.Name,
		KeySelector:          selects,
		WithMetadata:         o.WithMetadata,
		Validate:             o.Validate,
		ValueComparator:      o.Comparator,
		IsRetriableFailure:   o.Retriable,
		DerivedValues:        o.Derived,
		Dependencies:         o.Deps,
		RetrieveDependencies: o.RetrieveDependencies,
	}
	if o.NB {
		d.NBKeyPrefix = o.Prefix
	}
	d.Create = func(ctx context.Context, key string, value proto.Message) (any, error) {
		sb.mu.Lock()
		f := sb.takeFailure(Op{Kind: "create", Key: key, Value: Text(value)})
		var md any
		if o.WithMetadata {
			sb.nextIndex++
			md = &Meta{Index: sb.nextIndex}
		}
		if q, ok := sb.takeQuirk("create", key); ok && f == nil {
			if q.instead != nil {
				sb.items[key] = &Item{Value: q.instead, Metadata: md, Origin: api.FromNB}
			}
		} else if f == nil || f.leave {
			sb.items[key] = &Item{Value: value, Metadata: md, Origin: api.FromNB}
		}
		sb.mu.Unlock()
		if f != nil {
			return nil, f.err
		}
		sb.hook(ctx, "create", key)
		return md, nil
	}
	d.Delete = func(ctx context.Context, key string, value proto.Message, metadata any) error {
		sb.mu.Lock()
		f := sb.takeFailure(Op{Kind: "delete", Key: key})
		if _, lost := sb.takeQuirk("delete", key); f == nil && !lost {
			delete(sb.items, key)
		}
		sb.mu.Unlock()
		if f != nil {
			return f.err
		}
		sb.hook(ctx, "delete", key)
		return nil
	}
	if !o.NoUpdate {
		d.Update = func(ctx context.Context, key string, oldValue, newValue proto.Message, oldMetadata any) (any, error) {
			sb.mu.Lock()
			f := sb.takeFailure(Op{Kind: "update", Key: key, Value: Text(newValue)})
			if q, ok := sb.takeQuirk("update", key); ok && f == nil {
				if it, found := sb.items[key]; found && q.instead != nil {
					it.Value = q.instead
				}
			} else if f == nil {
				if it, ok := sb.items[key]; ok {
					it.Value = newValue
				} else {
					sb.items[key] = &Item{Value: newValue, Metadata: oldMetadata, Origin: api.FromNB}
				}
			}
			sb.mu.Unlock()
			if f != nil {
				return oldMetadata, f.err
			}
			sb.hook(ctx, "update", key)
			return oldMetadata, nil
		}
	}
	if o.Batch {
		d.Batch = func(ctx context.Context, ops []api.BatchOp) {
			sb.mu.Lock()
			sb.ops = append(sb.ops, Op{Kind: "batch", Key: fmt.Sprint(len(ops))})
			sb.mu.Unlock()
			for i := range ops {
				op := &ops[i]
				switch op.Op {
				case api.OpCreate:
					md, err := d.Create(ctx, op.Key, op.To)
					if err != nil {
						op.Fail(err)
					} else {
						op.Done(md)
					}
				case api.OpUpdate:
					md, err := d.Update(ctx, op.Key, op.From, op.To, op.Metadata)
					if err != nil {
						op.Fail(err)
					} else {
						op.Done(md)
					}
				case api.OpDelete:
					op.Fail(d.Delete(ctx, op.Key, op.From, op.Metadata))
				}
			}
		}
	}
	if o.RecreateIf != nil {
		d.UpdateWithRecreate = func(key string, oldValue, newValue proto.Message, _ any) bool {
			return o.RecreateIf(key, oldValue, newValue)
		}
	}
	if !o.NoRetrieve {
		d.Retrieve = func(ctx context.Context, correlate []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			if o.OnRetrieve != nil {
				o.OnRetrieve(correlate)
			}
			sb.mu.Lock()
			defer sb.mu.Unlock()
			if f := sb.takeFailure(Op{Kind: "retrieve", Key: o.Name}); f != nil {
				return nil, f.err
			}
			var out []api.KVWithMetadata
			for k, it := range sb.items {
				if selects(k) && (o.RetrieveKeys == nil || o.RetrieveKeys(k)) {
					out = append(out, api.KVWithMetadata{Key: k, Value: it.Value, Metadata: it.Metadata, Origin: it.Origin})
				}
			}
			sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
			return out, nil
		}
	}
	return d
}

func (sb *SB) hook(ctx context.Context, kind, key string) {
	sb.mu.Lock()
	h := sb.Hook
	sb.mu.Unlock()
	if h != nil {
		h(ctx, kind, key)
	}
}

// DependsOn is a Deps callback that makes every value depend on the keys that
// follow "dep=" in its text, comma separated: Str("x dep=a,b").
func DependsOn(_ string, value proto.Message) []api.Dependency {
	text := Text(value)
	i := strings.Index(text, "dep=")
	if i < 0 {
		return nil
	}
	rest := text[i+len("dep="):]
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		rest = rest[:j]
	}
	var deps []api.Dependency
	for _, k := range strings.Split(rest, ",") {
		if k != "" {
			deps = append(deps, api.Dependency{Label: k, Key: k})
		}
	}
	return deps
}

// String renders an op list for failure messages.
func String(ops []string) string { return fmt.Sprintf("%q", ops) }

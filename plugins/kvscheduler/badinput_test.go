package kvscheduler_test

// Bad input to the scheduler's API gets a clear error or status, and the
// scheduler keeps working afterwards: every test ends by committing a good
// value (badEnv.proveWorking).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

type badEnv struct {
	t      *testing.T
	sb     *mocksb.SB
	s      *kvscheduler.Scheduler
	proofs int
	// wedged is set when a call got stuck: Close would hang too.
	wedged bool
}

// badNewEnv starts a scheduler over a mock SB with the descriptor "ok" (keys
// ok/...), used to prove the scheduler still works.
func badNewEnv(t *testing.T) *badEnv {
	t.Helper()
	e := &badEnv{t: t, sb: mocksb.New()}
	e.s = kvscheduler.New(kvscheduler.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		if !e.wedged {
			e.s.Close()
		}
	})
	e.register(e.sb.Descriptor(mocksb.Options{Name: "ok", Prefix: "ok/", NB: true, Deps: mocksb.DependsOn}))
	return e
}

func (e *badEnv) register(descriptors ...*api.KVDescriptor) {
	e.t.Helper()
	if err := e.s.RegisterKVDescriptor(descriptors...); err != nil {
		e.t.Fatalf("register: %v", err)
	}
}

// guard runs f and fails the test if it does not return (see mustReturn).
func (e *badEnv) guard(what string, f func()) {
	e.t.Helper()
	mustReturn(e.t, what, func() { e.wedged = true }, f)
}

// noPanic runs f and turns a panic into a test failure.
func (e *badEnv) noPanic(what string, f func()) {
	e.t.Helper()
	var panicked any
	e.guard(what, func() {
		defer func() { panicked = recover() }()
		f()
	})
	if panicked != nil {
		e.t.Fatalf("%s panicked: %v", what, panicked)
	}
}

// commit commits key=value (nil value deletes) with ctx.
func (e *badEnv) commit(ctx context.Context, key string, value proto.Message) error {
	e.t.Helper()
	var err error
	e.noPanic("Commit", func() {
		_, err = e.s.StartNBTransaction().SetValue(key, value).Commit(ctx, optsOf(ctx))
	})
	return err
}

func (e *badEnv) barrier() {
	e.t.Helper()
	e.guard("TransactionBarrier", e.s.TransactionBarrier)
}

func (e *badEnv) state(key string) api.ValueState {
	st := e.s.GetValueStatus(key)
	if st.GetValue().GetKey() == key {
		return st.GetValue().GetState()
	}
	for _, d := range st.GetDerivedValues() {
		if d.GetKey() == key {
			return d.GetState()
		}
	}
	return api.ValueStateNonexistent
}

func (e *badEnv) wantState(key string, want api.ValueState) {
	e.t.Helper()
	if got := e.state(key); got != want {
		e.t.Fatalf("state of %s = %s, want %s (status %v)", key, got, want, e.s.GetValueStatus(key))
	}
}

func (e *badEnv) wantSB(key, text string) {
	e.t.Helper()
	it, ok := e.sb.Get(key)
	switch {
	case text == "" && ok:
		e.t.Fatalf("SB has %s=%q, want nothing", key, mocksb.Text(it.Value))
	case text != "" && !ok:
		e.t.Fatalf("SB lacks %s, want %q; SB ops %s", key, text, mocksb.String(e.sb.OpStrings(true)))
	case text != "" && mocksb.Text(it.Value) != text:
		e.t.Fatalf("SB has %s=%q, want %q", key, mocksb.Text(it.Value), text)
	}
}

// proveWorking commits a new good value and checks that it is applied.
func (e *badEnv) proveWorking() {
	e.t.Helper()
	e.proofs++
	key, text := fmt.Sprintf("ok/proof%d", e.proofs), fmt.Sprintf("good %d", e.proofs)
	if err := e.commit(context.Background(), key, mocksb.Str(text)); err != nil {
		e.t.Fatalf("good commit after bad input: %v", err)
	}
	e.wantSB(key, text)
	e.wantState(key, api.ValueStateConfigured)
}

func TestBadRegisterDescriptor(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)
	e.register(e.sb.Descriptor(mocksb.Options{Name: "dup-desc", Prefix: "x/", NB: true}))

	checkErr := func(what string, err error, mention string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: registered without error", what)
		}
		if mention != "" && !strings.Contains(err.Error(), mention) {
			t.Errorf("%s: error %q does not name %q", what, err, mention)
		}
	}

	var err error
	e.noPanic("register duplicate", func() {
		err = e.s.RegisterKVDescriptor(e.sb.Descriptor(mocksb.Options{Name: "dup-desc", Prefix: "y/", NB: true}))
	})
	checkErr("duplicate name", err, "dup-desc")

	e.noPanic("register empty name", func() {
		err = e.s.RegisterKVDescriptor(e.sb.Descriptor(mocksb.Options{Name: "", Prefix: "z/", NB: true}))
	})
	checkErr("empty name", err, "")

	noSelector := e.sb.Descriptor(mocksb.Options{Name: "no-selector", Prefix: "w/", NB: true})
	noSelector.KeySelector = nil
	e.noPanic("register nil KeySelector", func() { err = e.s.RegisterKVDescriptor(noSelector) })
	checkErr("nil KeySelector", err, "no-selector")

	e.noPanic("register nil descriptor", func() { err = e.s.RegisterKVDescriptor(nil) })
	checkErr("nil descriptor", err, "")

	// The first registration still holds, the rejected ones took nothing.
	if err := e.commit(context.Background(), "x/1", mocksb.Str("x1")); err != nil {
		t.Fatalf("commit for the first dup-desc: %v", err)
	}
	e.wantSB("x/1", "x1")
	for _, key := range []string{"y/1", "z/1", "w/1"} {
		if err := e.commit(context.Background(), key, mocksb.Str("v")); err != nil {
			t.Logf("commit %s for a rejected descriptor: %v", key, err)
		}
		e.wantState(key, api.ValueStateUnimplemented)
		e.wantSB(key, "")
	}
	if got := e.s.GetRegisteredNBKeyPrefixes(); !slices.Equal(got, []string{"ok/", "x/"}) {
		t.Errorf("GetRegisteredNBKeyPrefixes() = %q, want [ok/ x/]", got)
	}
	e.proveWorking()
}

func TestBadEmptyKey(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)
	e.proveWorking()

	err := e.commit(context.Background(), "", mocksb.Str("no key"))
	if !errors.Is(err, api.ErrNilKey) {
		t.Fatalf("commit with an empty key: error %v, want api.ErrNilKey", err)
	}
	var txnErr error
	e.noPanic("commit empty key with others", func() {
		_, txnErr = e.s.StartNBTransaction().
			SetValue("ok/with-empty", mocksb.Str("v")).
			SetValue("", mocksb.Str("no key")).
			Commit(context.Background(), api.TxnOptions{})
	})
	if !errors.Is(txnErr, api.ErrNilKey) {
		t.Fatalf("transaction with an empty key among others: error %v, want api.ErrNilKey", txnErr)
	}
	e.wantState("ok/proof1", api.ValueStateConfigured)
	e.wantSB("ok/proof1", "good 1")
	e.proveWorking()
}

func TestBadUnclaimedKeyWaitsForDescriptor(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)
	if err := e.commit(context.Background(), "late/1", mocksb.Str("late")); err != nil {
		t.Logf("commit for a key no descriptor claims: %v", err)
	}
	if err := e.commit(context.Background(), "late/2", mocksb.Str("late2 dep=late/1")); err != nil {
		t.Logf("commit for a key no descriptor claims: %v", err)
	}
	e.wantState("late/1", api.ValueStateUnimplemented)
	e.wantState("late/2", api.ValueStateUnimplemented)
	e.wantSB("late/1", "")
	e.proveWorking()

	e.register(e.sb.Descriptor(mocksb.Options{Name: "late", Prefix: "late/", NB: true, Deps: mocksb.DependsOn}))
	e.barrier()
	e.wantSB("late/1", "late")
	e.wantSB("late/2", "late2 dep=late/1")
	e.wantState("late/1", api.ValueStateConfigured)
	e.wantState("late/2", api.ValueStateConfigured)
	e.proveWorking()
}

func TestBadWrongValueType(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)
	typed := e.sb.Descriptor(mocksb.Options{Name: "typed", Prefix: "typed/", NB: true})
	typed.ValueTypeName = string((&wrapperspb.StringValue{}).ProtoReflect().Descriptor().FullName())
	e.register(typed)

	// A new value of the wrong type.
	err := e.commit(context.Background(), "typed/1", wrapperspb.Int64(7))
	var txnErr *api.TransactionError
	if !errors.As(err, &txnErr) || txnErr.ErrorOf("typed/1") == nil {
		t.Fatalf("commit of a wrong-type value: error %v, want a TransactionError for typed/1", err)
	}
	e.wantState("typed/1", api.ValueStateInvalid)
	e.wantSB("typed/1", "")
	e.proveWorking()

	// The right type fixes it.
	if err := e.commit(context.Background(), "typed/1", mocksb.Str("right")); err != nil {
		t.Fatalf("commit of the right type: %v", err)
	}
	e.wantState("typed/1", api.ValueStateConfigured)
	e.wantSB("typed/1", "right")

	// A wrong-type change of an applied value: INVALID, and the previous
	// version is removed (doc.go: "intended, Validate fails: not applied,
	// INVALID (an applied previous version is deleted)").
	e.sb.ClearOps()
	if err := e.commit(context.Background(), "typed/1", wrapperspb.Int64(8)); err == nil {
		t.Fatalf("wrong-type update accepted without error")
	}
	e.wantState("typed/1", api.ValueStateInvalid)
	for _, op := range e.sb.Ops() {
		if op.Kind == "update" || op.Kind == "create" {
			t.Fatalf("wrong-type update reached the SB: %v", op)
		}
	}
	e.wantSB("typed/1", "")
	e.proveWorking()

	// Messages of no generated type (dynamicpb) have their type's name
	// checked, also after values of the generated type were accepted: one
	// of the type is accepted, one of another type after it refused.
	if err := e.commit(context.Background(), "typed/1", mocksb.Str("right again")); err != nil {
		t.Fatalf("commit of the right type: %v", err)
	}
	dynamic := func(m proto.Message) proto.Message {
		d := dynamicpb.NewMessage(m.ProtoReflect().Descriptor())
		proto.Merge(d, m)
		return d
	}
	if err := e.commit(context.Background(), "typed/3", dynamic(wrapperspb.String("dynamic"))); err != nil {
		t.Fatalf("commit of a dynamic message of the right type: %v", err)
	}
	e.wantState("typed/3", api.ValueStateConfigured)
	err = e.commit(context.Background(), "typed/2", dynamic(wrapperspb.Int64(9)))
	if !errors.As(err, &txnErr) || txnErr.ErrorOf("typed/2") == nil ||
		!strings.Contains(txnErr.ErrorOf("typed/2").Error(), "value of type google.protobuf.Int64Value, descriptor typed expects google.protobuf.StringValue") {
		t.Fatalf("commit of a dynamic message of the wrong type: %v, want its type named", err)
	}
	e.wantState("typed/2", api.ValueStateInvalid)
	e.proveWorking()
}

func TestBadRevertWithResync(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)
	e.proveWorking()

	// An empty full resync would delete everything; with revert it must not
	// even start.
	ctx := withOpts(withOpts(context.Background(), api.TxnOptions{Resync: api.FullResync}), api.TxnOptions{Revert: true})
	e.sb.ClearOps()
	var err error
	e.noPanic("Commit", func() { _, err = e.s.StartNBTransaction().Commit(ctx, optsOf(ctx)) })
	if !errors.Is(err, api.ErrRevertNotSupportedWithResync) {
		t.Fatalf("revert with resync: error %v, want api.ErrRevertNotSupportedWithResync", err)
	}
	if ops := e.sb.OpStrings(true); len(ops) > 0 {
		t.Fatalf("revert with resync executed %s", mocksb.String(ops))
	}
	e.wantSB("ok/proof1", "good 1")
	e.wantState("ok/proof1", api.ValueStateConfigured)
	e.proveWorking()
}

func TestBadCommitAfterClose(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)
	e.proveWorking()
	e.guard("Close", e.s.Close)

	if err := e.commit(context.Background(), "ok/after-close", mocksb.Str("v")); !errors.Is(err, api.ErrClosed) {
		t.Fatalf("commit after Close: error %v, want api.ErrClosed", err)
	}
	if err := e.commit(withOpts(context.Background(), api.TxnOptions{NonBlocking: true}), "ok/after-close", mocksb.Str("v")); !errors.Is(err, api.ErrClosed) {
		t.Fatalf("non-blocking commit after Close: error %v, want api.ErrClosed", err)
	}
	e.noPanic("TransactionBarrier after Close", e.s.TransactionBarrier)
	e.noPanic("PushSBNotification after Close", func() {
		_ = e.s.PushSBNotification(api.KVWithMetadata{Key: "ok/sb", Value: mocksb.Str("v"), Origin: api.FromSB})
	})
	e.noPanic("second Close", e.s.Close)
	e.wantSB("ok/after-close", "")
	// What was applied before Close can still be read.
	e.wantState("ok/proof1", api.ValueStateConfigured)
}

func TestBadCancelledContext(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)

	t.Run("before commit", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := e.commit(ctx, "ok/cancelled", mocksb.Str("v")); !errors.Is(err, context.Canceled) {
			t.Fatalf("commit with a cancelled context: error %v, want context.Canceled", err)
		}
		e.proveWorking()
	})

	t.Run("while queued", func(t *testing.T) {
		// Hold the worker inside a Create so the next commit has to wait.
		entered, release := make(chan struct{}), make(chan struct{})
		var holding atomic.Bool
		e.sb.Hook = func(_ context.Context, kind, key string) {
			if kind == "create" && key == "ok/slow" && holding.CompareAndSwap(false, true) {
				close(entered)
				<-release
			}
		}
		defer func() { e.sb.Hook = nil }()
		slowDone := make(chan error, 1)
		go func() {
			_, err := e.s.StartNBTransaction().SetValue("ok/slow", mocksb.Str("slow")).Commit(context.Background(), api.TxnOptions{})
			slowDone <- err
		}()
		select {
		case <-entered:
		case <-time.After(stuckAfter):
			t.Fatalf("the slow Create was never called")
		}

		ctx, cancel := context.WithCancel(context.Background())
		queuedDone := make(chan error, 1)
		go func() {
			_, err := e.s.StartNBTransaction().SetValue("ok/queued", mocksb.Str("queued")).Commit(ctx, optsOf(ctx))
			queuedDone <- err
		}()
		cancel()
		select {
		case err := <-queuedDone:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("queued commit whose context was cancelled: error %v, want context.Canceled", err)
			}
		case <-time.After(stuckAfter):
			close(release)
			t.Fatalf("queued commit did not return after its context was cancelled")
		}
		close(release)
		select {
		case err := <-slowDone:
			if err != nil {
				t.Fatalf("slow commit: %v", err)
			}
		case <-time.After(stuckAfter):
			e.wedged = true
			t.Fatalf("slow commit never returned\n%s", allStacks())
		}
		e.barrier()
		e.wantSB("ok/slow", "slow")
		e.proveWorking()
	})
}

// badGarbageDescriptor is descriptor "g" over the mock SB whose Retrieve can
// be replaced by a test.
func badGarbageDescriptor(sb *mocksb.SB, garbage *atomic.Pointer[func([]api.KVWithMetadata, error) ([]api.KVWithMetadata, error)]) *api.KVDescriptor {
	d := sb.Descriptor(mocksb.Options{Name: "g", Prefix: "g/", NB: true})
	honest := d.Retrieve
	d.Retrieve = func(ctx context.Context, correlate []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
		values, err := honest(ctx, correlate)
		if f := garbage.Load(); f != nil {
			return (*f)(values, err)
		}
		return values, err
	}
	return d
}

func TestBadRetrieveGarbage(t *testing.T) {
	t.Parallel()
	errRetrieve := errors.New("retrieve broke")
	cases := []struct {
		name    string
		garbage func(values []api.KVWithMetadata, err error) ([]api.KVWithMetadata, error)
		// fails: the resync is expected to report the retrieve error.
		fails bool
	}{{
		name: "duplicate keys",
		garbage: func(values []api.KVWithMetadata, err error) ([]api.KVWithMetadata, error) {
			var out []api.KVWithMetadata
			for _, v := range values {
				out = append(out, v, v, api.KVWithMetadata{Key: v.Key, Value: mocksb.Str("other"), Origin: api.FromNB})
			}
			return out, err
		},
	}, {
		name: "keys outside the selector",
		garbage: func(values []api.KVWithMetadata, err error) ([]api.KVWithMetadata, error) {
			return append(values,
				api.KVWithMetadata{Key: "h/1", Value: mocksb.Str("not g's"), Origin: api.FromSB},
				api.KVWithMetadata{Key: "nobody/1", Value: mocksb.Str("no descriptor"), Origin: api.FromSB},
				api.KVWithMetadata{Key: "", Value: mocksb.Str("empty key"), Origin: api.FromSB},
			), err
		},
	}, {
		name: "nil values",
		garbage: func(values []api.KVWithMetadata, err error) ([]api.KVWithMetadata, error) {
			for i := range values {
				if values[i].Key == "g/2" {
					values[i].Value = nil
				}
			}
			return append(values, api.KVWithMetadata{Key: "g/9", Origin: api.FromSB}), err
		},
	}, {
		name: "error",
		garbage: func([]api.KVWithMetadata, error) ([]api.KVWithMetadata, error) {
			return nil, errRetrieve
		},
		fails: true,
	}, {
		name: "error with values",
		garbage: func(values []api.KVWithMetadata, _ error) ([]api.KVWithMetadata, error) {
			return values, errRetrieve
		},
		fails: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := badNewEnv(t)
			var garbage atomic.Pointer[func([]api.KVWithMetadata, error) ([]api.KVWithMetadata, error)]
			e.register(badGarbageDescriptor(e.sb, &garbage),
				e.sb.Descriptor(mocksb.Options{Name: "h", Prefix: "h/", NB: true}))
			for _, k := range []string{"g/1", "g/2", "g/3"} {
				if err := e.commit(context.Background(), k, mocksb.Str(k)); err != nil {
					t.Fatalf("commit %s: %v", k, err)
				}
			}
			// Drift, so that the resync has something to do.
			e.sb.Remove("g/3")

			garbage.Store(&tc.garbage)
			var err error
			full := withOpts(context.Background(), api.TxnOptions{Resync: api.FullResync})
			e.noPanic("full resync", func() {
				_, err = e.s.StartNBTransaction().
					SetValue("g/1", mocksb.Str("g/1")).
					SetValue("g/2", mocksb.Str("g/2")).
					SetValue("g/3", mocksb.Str("g/3")).
					Commit(full, optsOf(full))
			})
			if tc.fails {
				if !errors.Is(err, errRetrieve) && !badStatusMentions(e.s, "retrieve broke", "g/1", "g/2", "g/3") {
					t.Errorf("resync with a failing Retrieve: error %v and no status mentions the failure", err)
				}
			} else {
				// The garbage may be reported (it is a descriptor bug), as
				// long as it is named for what it is.
				var txnErr *api.TransactionError
				if err != nil && (!errors.As(err, &txnErr) || !strings.Contains(err.Error(), "Retrieve")) {
					t.Errorf("resync with garbage from Retrieve: error %v does not say Retrieve is at fault", err)
				}
				for _, k := range []string{"g/1", "g/2", "g/3"} {
					e.wantSB(k, k)
					e.wantState(k, api.ValueStateConfigured)
				}
			}
			for _, prefix := range []string{"h/", "nobody/", "g/9"} {
				dump, err := e.s.DumpValuesByKeyPrefix(prefix, api.CachedView)
				if err != nil {
					t.Errorf("dump %s: %v", prefix, err)
				}
				if len(dump) > 0 {
					t.Errorf("garbage from g's Retrieve was taken in: %v", dump)
				}
			}
			e.proveWorking()

			// With an honest Retrieve again, a resync repairs everything.
			garbage.Store(nil)
			e.noPanic("full resync", func() {
				_, err = e.s.StartNBTransaction().
					SetValue("g/1", mocksb.Str("g/1")).
					SetValue("g/2", mocksb.Str("g/2")).
					SetValue("g/3", mocksb.Str("g/3")).
					Commit(full, optsOf(full))
			})
			if err != nil {
				t.Fatalf("honest resync: %v", err)
			}
			for _, k := range []string{"g/1", "g/2", "g/3"} {
				e.wantSB(k, k)
				e.wantState(k, api.ValueStateConfigured)
			}
			e.proveWorking()
		})
	}
}

// badStatusMentions tells whether the status of one of the keys carries an
// error containing text.
func badStatusMentions(s *kvscheduler.Scheduler, text string, keys ...string) bool {
	for _, k := range keys {
		if strings.Contains(s.GetValueStatus(k).GetValue().GetError(), text) {
			return true
		}
	}
	return false
}

func TestBadValidateInvalidValue(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)
	errMTU := errors.New("mtu out of range")
	e.register(e.sb.Descriptor(mocksb.Options{Name: "val", Prefix: "val/", NB: true, Deps: mocksb.DependsOn,
		Validate: func(_ string, value proto.Message) error {
			if strings.Contains(mocksb.Text(value), "bad") {
				return api.NewInvalidValueError(errMTU, "field")
			}
			return nil
		}}))

	err := e.commit(context.Background(), "val/1", mocksb.Str("bad"))
	var txnErr *api.TransactionError
	if !errors.As(err, &txnErr) {
		t.Fatalf("commit of an invalid value: error %v, want *api.TransactionError", err)
	}
	var invalid *api.InvalidValueError
	if !errors.As(txnErr.ErrorOf("val/1"), &invalid) || !errors.Is(err, errMTU) {
		t.Fatalf("error of val/1 = %v, want the InvalidValueError wrapping %v", txnErr.ErrorOf("val/1"), errMTU)
	}
	st := e.s.GetValueStatus("val/1").GetValue()
	if st.GetState() != api.ValueStateInvalid || !strings.Contains(strings.Join(st.GetDetails(), " "), "field") {
		t.Fatalf("status of val/1 = %v, want INVALID with details naming \"field\"", st)
	}
	if ops := e.sb.OpStrings(false); len(ops) > 0 {
		t.Fatalf("invalid value reached the SB: %s", mocksb.String(ops))
	}

	// What depends on an invalid value waits for it.
	if err := e.commit(context.Background(), "val/2", mocksb.Str("good dep=val/1")); err != nil {
		t.Fatalf("commit val/2: %v", err)
	}
	e.wantState("val/2", api.ValueStatePending)
	e.proveWorking()

	if err := e.commit(context.Background(), "val/1", mocksb.Str("fixed")); err != nil {
		t.Fatalf("commit of the fixed value: %v", err)
	}
	e.wantSB("val/1", "fixed")
	e.wantSB("val/2", "good dep=val/1")
	e.wantState("val/1", api.ValueStateConfigured)
	e.wantState("val/2", api.ValueStateConfigured)
	e.proveWorking()
}

// TestBadCommitFromCallback: a callback that commits with its context is
// refused (it would wait for itself); it reads statuses through its view and
// asks for follow-up work with RequestReconcile, which the scheduler does in
// a transaction of its own after the running one.
func TestBadCommitFromCallback(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)
	e.register(e.sb.Descriptor(mocksb.Options{Name: "n", Prefix: "n/", NB: true, Deps: mocksb.DependsOn}))
	// n/2 fails once and is not retried: FAILED until something asks.
	e.sb.Fail("create", "n/2", errors.New("refused"), 1)
	if err := e.commit(context.Background(), "n/2", mocksb.Str("second")); err == nil {
		t.Fatal("n/2: no error for the failing create")
	}
	e.wantState("n/2", api.ValueStateFailed)

	type seen struct {
		commitErr, pushErr, reqErr error
		view                       api.ValueState
	}
	got := make(chan seen, 1)
	e.sb.Hook = func(ctx context.Context, kind, key string) {
		if kind != "create" || key != "n/1" {
			return
		}
		var sn seen
		_, sn.commitErr = e.s.StartNBTransaction().SetValue("n/3", mocksb.Str("nested")).Commit(ctx, api.TxnOptions{})
		sn.view = api.ViewOf(ctx).GetValueStatus("n/1").GetValue().GetState()
		sn.reqErr = api.RequestReconcile(ctx, "n/2", "n/unknown")
		sn.pushErr = e.s.PushSBNotification(api.KVWithMetadata{Key: "n/ext", Value: mocksb.Str("from SB"), Origin: api.FromSB})
		got <- sn
	}
	seq := uint64(0)
	e.noPanic("Commit", func() {
		var err error
		seq, err = e.s.StartNBTransaction().SetValue("n/1", mocksb.Str("outer")).Commit(context.Background(), api.TxnOptions{})
		if err != nil {
			t.Errorf("outer commit: %v", err)
		}
	})
	var sn seen
	select {
	case sn = <-got:
	default:
		t.Fatal("the Create hook did not run")
	}
	if !errors.Is(sn.commitErr, api.ErrCommitInCallback) {
		t.Errorf("Commit with a callback's context: %v, want api.ErrCommitInCallback", sn.commitErr)
	}
	if sn.view != api.ValueStateConfigured {
		t.Errorf("the callback's view of n/1 during its Create: %v, want CONFIGURED (the plan so far)", sn.view)
	}
	if sn.reqErr != nil || sn.pushErr != nil {
		t.Errorf("RequestReconcile: %v; PushSBNotification: %v", sn.reqErr, sn.pushErr)
	}
	if err := api.RequestReconcile(context.Background(), "n/2"); !errors.Is(err, api.ErrNotInCallback) {
		t.Errorf("RequestReconcile outside a callback: %v, want api.ErrNotInCallback", err)
	}
	e.barrier()
	e.wantSB("n/1", "outer")
	e.wantSB("n/2", "second")
	e.wantState("n/2", api.ValueStateConfigured)
	e.wantState("n/3", api.ValueStateNonexistent)
	e.wantState("n/ext", api.ValueStateObtained)
	// After the outer transaction: the notification pushed during it, then
	// the follow-up.
	follow := e.s.GetRecordedTransaction(seq + 2)
	if follow == nil || follow.TxnType != api.FollowUp || !strings.Contains(follow.Description, "n/2") ||
		!strings.Contains(follow.Description, "requested by n") || len(follow.Executed) != 1 || follow.Executed[0].Key != "n/2" {
		t.Errorf("follow-up transaction: %+v", follow)
	}
	e.proveWorking()
}

func TestBadStuckWatcherDoesNotBlock(t *testing.T) {
	t.Parallel()
	e := badNewEnv(t)
	const commits, keys = 1000, 100
	keyOf := func(i int) string { return fmt.Sprintf("ok/w%02d", i%keys) }

	stuck := make(chan *api.BaseValueStatus) // nobody reads it until the end
	stop := e.s.WatchValueStatus(stuck, func(key string) bool { return strings.HasPrefix(key, "ok/w") })
	defer stop()
	// Another stuck watcher that is never stopped: Close must end it (the
	// package's goleak check would report it otherwise).
	e.s.WatchValueStatus(make(chan *api.BaseValueStatus), nil)

	e.guard(fmt.Sprintf("%d commits with a stuck watcher", commits), func() {
		for i := range commits {
			value := fmt.Sprintf("v%d", i)
			if i == commits-1 {
				value = "last dep=ok/missing" // the latest status of ok/w99 is PENDING
			}
			if _, err := e.s.StartNBTransaction().SetValue(keyOf(i), mocksb.Str(value)).Commit(context.Background(), api.TxnOptions{}); err != nil {
				t.Errorf("commit %d: %v", i, err)
				return
			}
		}
	})
	if t.Failed() {
		return
	}

	want := map[string]api.ValueState{}
	for i := range keys {
		want[keyOf(i)] = api.ValueStateConfigured
	}
	want[keyOf(commits-1)] = api.ValueStatePending
	latest := map[string]api.ValueState{}
	deadline := time.After(stuckAfter)
	for !badSameStates(latest, want) {
		select {
		case st := <-stuck:
			latest[st.GetValue().GetKey()] = st.GetValue().GetState()
		case <-deadline:
			t.Fatalf("the watcher never received the latest statuses: got %v", latest)
		}
	}
	e.proveWorking()
}

func badSameStates(got, want map[string]api.ValueState) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		if got[k] != w {
			return false
		}
	}
	return true
}

// TestUndecodableValueIsInvalid: the NB could not decode a value and commits
// an api.UndecodableValue in its place: the key is INVALID with the reason
// (with or without a descriptor), the rest of the transaction applies, and a
// good value later applies normally.
func TestUndecodableValueIsInvalid(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
	bad := &api.UndecodableValue{Reason: `not a valid JSON value: unexpected token "}"`}
	_, err := e.commit(context.Background(), kv{"iface/a", bad}, kv{"unknown/x", &api.UndecodableValue{Reason: "no model for this key"}}, set("iface/b", "b"))
	if err == nil {
		t.Fatal("commit with undecodable values: no error")
	}
	st := e.expectState("iface/a", api.ValueStateInvalid)
	if !strings.Contains(st.GetError(), "unexpected token") {
		t.Errorf("error of iface/a: %q", st.GetError())
	}
	if st := e.expectState("unknown/x", api.ValueStateInvalid); !strings.Contains(st.GetError(), "no model") {
		t.Errorf("error of unknown/x: %q", st.GetError())
	}
	e.expectState("iface/b", api.ValueStateConfigured)
	e.expectOps("undecodable", "create iface/b=b")
	e.mustCommit(context.Background(), set("iface/a", "a"))
	e.expectState("iface/a", api.ValueStateConfigured)
	e.expectOps("fixed", "create iface/a=a")
}

// TestNonBlockingCommitRunsAfterItsContextEnds: a non-blocking commit is
// queued; its context ending before the worker gets to it (a gRPC call that
// already replied) must not drop it.
func TestNonBlockingCommitRunsAfterItsContextEnds(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
	block, entered := make(chan struct{}), make(chan struct{})
	e.sb.Hook = func(_ context.Context, kind, key string) {
		if key == "iface/first" {
			close(entered)
			<-block
		}
	}
	// The first transaction holds the worker in its Create.
	firstDone := make(chan error, 1)
	go func() { _, err := e.commit(context.Background(), set("iface/first", "1")); firstDone <- err }()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := e.commit(withOpts(ctx, api.TxnOptions{NonBlocking: true}), set("iface/second", "2")); err != nil {
		t.Fatal(err)
	}
	cancel()
	close(block)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	e.s.TransactionBarrier()
	e.expectState("iface/second", api.ValueStateConfigured)
}

// TestReadersDoNotWaitForTheRunningTransaction: while a transaction's
// descriptor call blocks (a hung SB), every reader answers at once with the
// state as of the last finished transaction (never ahead of the SB: the
// graph already shows what the plan leads to): statuses, listings, stats,
// NB and cached dumps, graph snapshots and neighbours, and key timelines. An SB-view dump
// waits for the call (callbacks are never concurrent).
func TestReadersDoNotWaitForTheRunningTransaction(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
	e.mustCommit(context.Background(), set("iface/c", "c1"), set("iface/x", "x"))
	block, entered := make(chan struct{}), make(chan struct{})
	e.sb.Fail("create", "iface/b", nil, 1)
	e.sb.Hook = func(_ context.Context, kind, key string) {
		if key == "iface/a" {
			close(entered)
			<-block
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.commit(context.Background(), set("iface/a", "a"), set("iface/b", "b"), set("iface/c", "c2"), del("iface/x"))
		done <- err
	}()
	<-entered
	released := false
	release := func() {
		if !released {
			released = true
			close(block)
		}
	}
	defer release()
	read := func(what string, f func()) {
		t.Helper()
		mustReturn(t, what+" while a descriptor call blocks", release, f)
	}
	for key, want := range map[string]api.ValueState{
		"iface/a": api.ValueStateNonexistent, "iface/b": api.ValueStateNonexistent,
		"iface/c": api.ValueStateConfigured, "iface/x": api.ValueStateConfigured,
	} {
		read("GetValueStatus", func() {
			if got := e.s.GetValueStatus(key).GetValue().GetState(); got != want {
				t.Errorf("status of %s during the transaction: %v, want %v", key, got, want)
			}
		})
	}
	read("ListValueStatuses", func() {
		var keys []string
		for _, st := range e.s.ListValueStatuses("iface/") {
			keys = append(keys, st.GetValue().GetKey()+"="+st.GetValue().GetState().String())
		}
		if got := strings.Join(keys, " "); got != "iface/c=CONFIGURED iface/x=CONFIGURED" {
			t.Errorf("listing during the transaction: %s", got)
		}
	})
	read("GetStats", func() {
		if st := e.s.GetStats(); st.ValuesByState["CONFIGURED"] != 2 || len(st.ValuesByState) != 1 {
			t.Errorf("stats during the transaction: %v, want 2 CONFIGURED", st.ValuesByState)
		}
	})
	for _, view := range []api.View{api.NBView, api.CachedView} {
		read("dump "+view.String(), func() {
			kvs, err := e.s.DumpValuesByKeyPrefix("iface/", view)
			var got []string
			for _, kv := range kvs {
				got = append(got, kv.Key+"="+mocksb.Text(kv.Value))
			}
			if err != nil || strings.Join(got, " ") != "iface/c=c1 iface/x=x" {
				t.Errorf("%s dump during the transaction: %v %v", view, got, err)
			}
		})
	}
	read("GetGraphSnapshot", func() {
		snap, err := e.s.GetGraphSnapshot(time.Time{})
		var got []string
		if err == nil {
			for _, n := range snap.Nodes {
				got = append(got, n.Key+"="+n.State.String())
			}
		}
		if err != nil || strings.Join(got, " ") != "iface/c=CONFIGURED iface/x=CONFIGURED" {
			t.Errorf("graph snapshot during the transaction: %v %v", got, err)
		}
	})
	read("GetGraphNeighbours", func() {
		var got []string
		for _, nb := range e.s.GetGraphNeighbours("iface/a", "iface/b", "iface/c", "iface/x") {
			got = append(got, nb.Node.Key+"="+nb.Node.State.String()+"="+mocksb.Text(nb.Node.Value))
		}
		if strings.Join(got, " ") != "iface/c=CONFIGURED=c1 iface/x=CONFIGURED=x" {
			t.Errorf("graph neighbours during the transaction: %v", got)
		}
	})
	read("GetKeyTimeline", func() {
		revs := e.s.GetKeyTimeline("iface/x")
		if len(revs) == 0 || revs[len(revs)-1].State != api.ValueStateConfigured {
			t.Errorf("timeline of iface/x during the transaction: %+v", revs)
		}
	})
	// The SB-view dump waits for the blocked call, then answers.
	sbDone := make(chan []api.KVWithMetadata, 1)
	go func() {
		kvs, _ := e.s.DumpValuesByKeyPrefix("iface/", api.SBView)
		sbDone <- kvs
	}()
	for range 100 {
		runtime.Gosched()
	}
	select {
	case kvs := <-sbDone:
		t.Errorf("SB-view dump returned while a Create was blocked: %v", kvs)
	default:
	}
	release()
	if err := <-done; err == nil {
		t.Error("commit: no error for the failing create")
	}
	<-sbDone
	for key, want := range map[string]api.ValueState{
		"iface/a": api.ValueStateConfigured, "iface/b": api.ValueStateFailed,
		"iface/c": api.ValueStateConfigured, "iface/x": api.ValueStateNonexistent,
	} {
		if got := e.s.GetValueStatus(key).GetValue().GetState(); got != want {
			t.Errorf("status of %s after the transaction: %v, want %v", key, got, want)
		}
	}
}

// TestReadersDuringARevertedTransaction: a transaction that fails and is
// reverted runs its descriptor calls twice (the plan, then the undo); a
// reader during the undo still sees the state before the transaction.
func TestReadersDuringARevertedTransaction(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
	e.mustCommit(context.Background(), set("iface/c", "c1"))
	e.sb.Fail("create", "iface/b", nil, 1)
	seen := make(chan string, 4)
	e.sb.Hook = func(_ context.Context, kind, key string) {
		if kind == "delete" && key == "iface/a" { // the undo of iface/a's Create
			st := e.s.GetValueStatus("iface/c").GetValue()
			seen <- fmt.Sprintf("a=%v c=%v", e.s.GetValueStatus("iface/a").GetValue().GetState(), st.GetState())
		}
	}
	if _, err := e.commit(withOpts(context.Background(), api.TxnOptions{Revert: true}),
		set("iface/a", "a"), set("iface/b", "b"), set("iface/c", "c2")); err == nil {
		t.Fatal("commit: no error for the failing create")
	}
	select {
	case got := <-seen:
		if got != "a=NONEXISTENT c=CONFIGURED" {
			t.Errorf("reader during the undo: %s, want a=NONEXISTENT c=CONFIGURED", got)
		}
	default:
		t.Fatal("the undo never deleted iface/a")
	}
	kvs, _ := e.s.DumpValuesByKeyPrefix("iface/", api.NBView)
	if len(kvs) != 1 || mocksb.Text(kvs[0].Value) != "c1" {
		t.Errorf("NB dump after the revert: %v", kvs)
	}
}

// An SB-view dump by a reader calls the descriptors' Retrieve under the
// same rule as the worker's callbacks: never at the same time as another
// callback. While the dump's Retrieve blocks, a transaction committed
// meanwhile does not call its Create; it runs once the Retrieve is over.
func TestSBDumpIsNotConcurrentWithTransactions(t *testing.T) {
	s := kvscheduler.New(kvscheduler.Options{})
	t.Cleanup(s.Close)
	inRetrieve, releaseRetrieve := make(chan struct{}), make(chan struct{})
	created := make(chan struct{}, 1)
	var retrieving atomic.Bool
	var overlap atomic.Bool
	d := &api.KVDescriptor{
		Name:          "slow",
		NBKeyPrefix:   "slow/",
		KeySelector:   func(key string) bool { return strings.HasPrefix(key, "slow/") },
		ValueTypeName: string((&wrapperspb.StringValue{}).ProtoReflect().Descriptor().FullName()),
		Create: func(context.Context, string, proto.Message) (any, error) {
			overlap.Store(overlap.Load() || retrieving.Load())
			created <- struct{}{}
			return nil, nil
		},
		Delete: func(context.Context, string, proto.Message, any) error { return nil },
		Retrieve: func(context.Context, []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			retrieving.Store(true)
			defer retrieving.Store(false)
			close(inRetrieve)
			<-releaseRetrieve
			return nil, nil
		},
	}
	if err := s.RegisterKVDescriptor(d); err != nil {
		t.Fatal(err)
	}
	dumped := make(chan error, 1)
	go func() {
		_, err := s.DumpValuesByDescriptor("slow", api.SBView)
		dumped <- err
	}()
	<-inRetrieve
	committed := make(chan error, 1)
	go func() {
		txn := s.StartNBTransaction()
		txn.SetValue("slow/a", wrapperspb.String("a"))
		_, err := txn.Commit(context.Background(), api.TxnOptions{})
		committed <- err
	}()
	for range 100 {
		runtime.Gosched()
	}
	select {
	case <-created:
		t.Fatal("Create called while the SB dump's Retrieve runs")
	default:
	}
	close(releaseRetrieve)
	if err := <-dumped; err != nil {
		t.Fatal(err)
	}
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if overlap.Load() {
		t.Error("Create ran during Retrieve")
	}
}

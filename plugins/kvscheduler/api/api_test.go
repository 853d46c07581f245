package api

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTransactionErrorNamesKeysAndUnwraps(t *testing.T) {
	root := errors.New("vpp: no such interface")
	te := &TransactionError{KVErrors: []KeyWithError{
		{Key: "config/vpp/v2/route/x", Operation: OpCreate, Error: root},
		{Key: "config/vpp/v2/interfaces/a", Operation: OpValidate, Error: NewInvalidValueError(errors.New("bad mtu"), "mtu")},
	}}
	msg := te.Error()
	for _, want := range []string{"2 values failed", "CREATE config/vpp/v2/route/x", "no such interface", "fields mtu"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Error() = %q, missing %q", msg, want)
		}
	}
	if !errors.Is(te, root) {
		t.Error("errors.Is does not find a value's error through the transaction error")
	}
	var inv *InvalidValueError
	if !errors.As(te, &inv) || inv.InvalidFields[0] != "mtu" {
		t.Errorf("errors.As *InvalidValueError: %v", inv)
	}
	if te.ErrorOf("config/vpp/v2/route/x") != root || te.ErrorOf("nope") != nil {
		t.Error("ErrorOf returns the wrong error")
	}
	// An error of the transaction itself (no key, e.g. a Retrieve that
	// failed) is shown without an operation or an empty key.
	mixed := &TransactionError{KVErrors: []KeyWithError{
		{Error: errors.New("refresh after failure: VPP is not connected")},
		{Key: "config/vpp/v2/interfaces/a", Error: root},
	}}
	if got, want := mixed.Error(), "1 value failed, and 1 other error: [refresh after failure: VPP is not connected] [config/vpp/v2/interfaces/a: vpp: no such interface]"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	one := &TransactionError{KVErrors: []KeyWithError{{Key: "k", Operation: OpDelete, Error: root}}}
	if got, want := one.Error(), "1 value failed: [DELETE k: vpp: no such interface]"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	init := &TransactionError{TxnInitError: ErrRevertNotSupportedWithResync}
	if !errors.Is(init, ErrRevertNotSupportedWithResync) || !strings.Contains(init.Error(), "not started") {
		t.Errorf("init error: %v", init)
	}
}

func TestTransactionErrorMessageIsBounded(t *testing.T) {
	te := &TransactionError{}
	for i := 0; i < 1000; i++ {
		te.KVErrors = append(te.KVErrors, KeyWithError{Key: "k", Operation: OpCreate, Error: errors.New("e")})
	}
	msg := te.Error()
	if !strings.Contains(msg, "and 990 more") || len(msg) > 500 {
		t.Errorf("message of 1000 errors is %d bytes: %q", len(msg), msg)
	}
}

func TestNonRetriableWraps(t *testing.T) {
	base := errors.New("driver missing")
	err := NonRetriable(base)
	var nr *NonRetriableError
	if !errors.Is(err, base) || !errors.As(err, &nr) || err.Error() != base.Error() {
		t.Errorf("NonRetriable(%v) = %v", base, err)
	}
}

func TestParseView(t *testing.T) {
	for in, want := range map[string]View{"NB": NBView, "sb": SBView, "Cached": CachedView, "internal": CachedView} {
		if got, ok := ParseView(in); !ok || got != want {
			t.Errorf("ParseView(%q) = %v, %v", in, got, ok)
		}
	}
	if _, ok := ParseView("nbx"); ok {
		t.Error("ParseView accepts a bad view")
	}
}

func TestMemMetadataMapConcurrentReaders(t *testing.T) {
	m := NewMetadataMap()
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				m.GetValue("b")
				m.ListLabels()
			}
		}()
	}
	for i := 0; i < 1000; i++ {
		m.Put("b", i)
		m.Put("a", i)
		m.Delete("a")
	}
	wg.Wait()
	if labels := m.ListLabels(); len(labels) != 1 || labels[0] != "b" {
		t.Errorf("labels = %v", labels)
	}
	if v, ok := m.GetValue("b"); !ok || v != 999 {
		t.Errorf("b = %v, %v", v, ok)
	}
}

// TestTxnOptionsValidate: every invalid option is refused with an
// *OptionError naming the field; valid combinations pass.
func TestTxnOptionsValidate(t *testing.T) {
	valid := []TxnOptions{
		{},
		{Resync: FullResync, Verbose: true, Retry: DefaultRetry()},
		{Revert: true, Description: "d", DryRun: true},
		{NonBlocking: true, DryRun: true},
		{Resync: DownstreamResync},
	}
	for _, o := range valid {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	bad := []struct {
		o     TxnOptions
		field string
	}{
		{TxnOptions{Resync: 7}, "Resync"},
		{TxnOptions{Resync: -1}, "Resync"},
		{TxnOptions{Verbose: true}, "Verbose"},
		{TxnOptions{Retry: &RetryOpt{MaxCount: 3}}, "Retry.Period"},
		{TxnOptions{Retry: &RetryOpt{Period: -time.Second, MaxCount: 3}}, "Retry.Period"},
		{TxnOptions{Retry: &RetryOpt{Period: time.Second}}, "Retry.MaxCount"},
		{TxnOptions{Retry: &RetryOpt{Period: time.Second, MaxCount: -2}}, "Retry.MaxCount"},
		{TxnOptions{Revert: true, Resync: FullResync}, "Revert"},
		{TxnOptions{Revert: true, Retry: DefaultRetry()}, "Revert"},
	}
	for _, c := range bad {
		err := c.o.Validate()
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Field != c.field || !strings.Contains(err.Error(), c.field+" ") {
			t.Errorf("%+v: error %v, want one naming %s", c.o, err, c.field)
		}
	}
	if err := (TxnOptions{Revert: true, Resync: UpstreamResync}).Validate(); !errors.Is(err, ErrRevertNotSupportedWithResync) {
		t.Errorf("revert with resync: %v does not match ErrRevertNotSupportedWithResync", err)
	}
}

// TestCallScopeOutsideACallback: outside a callback the view is empty and
// follow-up requests are refused.
func TestCallScopeOutsideACallback(t *testing.T) {
	ctx := t.Context()
	if InCallback(ctx) {
		t.Error("a test context counts as a callback's")
	}
	if st := ViewOf(ctx).GetValueStatus("k").GetValue(); st.GetKey() != "k" || st.GetState() != ValueStateNonexistent {
		t.Errorf("empty view status: %v", st)
	}
	if ViewOf(ctx).GetMetadataMap("d") != nil {
		t.Error("empty view has a metadata map")
	}
	if err := RequestReconcile(ctx, "k"); !errors.Is(err, ErrNotInCallback) {
		t.Errorf("RequestReconcile outside a callback: %v", err)
	}
}

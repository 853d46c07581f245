package kvscheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// GetValueErrors returns the statuses in error of the given base values and
// their derived values, as GetValueStatus and StatusInError tell them one
// by one: an INVALID value, a FAILED one, a FAILED derived value of a
// CONFIGURED base (asked for by the derived key too); not a CONFIGURED or
// a PENDING value, nor a key of no value; each status once.
func TestGetValueErrors(t *testing.T) {
	e := newEnv(t)
	base := baseOpts()
	base.Validate = func(_ string, v proto.Message) error {
		if strings.Contains(fmt.Sprint(v), "bad") {
			return errors.New("bad value")
		}
		return nil
	}
	base.Deps = func(key string, _ proto.Message) []api.Dependency {
		if key == "a/pend" {
			return []api.Dependency{{Label: "missing", Key: "a/missing"}}
		}
		return nil
	}
	e.register(base, derivedOpts())
	e.sb.Fail("create", "a/fail", errors.New("refused"), 100)
	e.sb.Fail("create", "a/dfail/y", errors.New("item refused"), 100)
	_, err := e.commit(context.Background(), set("a/ok", "items=x"), set("a/bad", "items=bad"), set("a/fail", "items=z"),
		set("a/dfail", "items=y,w"), set("a/pend", "items=p"))
	if err == nil {
		t.Fatal("commit: no error, want the failures of a/fail and a/dfail/y")
	}
	e.expectState("a/ok", api.ValueStateConfigured)
	e.expectState("a/bad", api.ValueStateInvalid)
	e.expectState("a/fail", api.ValueStateFailed)
	e.expectState("a/dfail", api.ValueStateConfigured)
	e.expectState("a/dfail/y", api.ValueStateFailed)
	e.expectState("a/pend", api.ValueStatePending, "missing")

	keys := []string{"a/ok", "a/bad", "a/none", "a/dfail/y", "a/fail", "a/dfail", "a/pend", "a/bad"}
	got, want := valueErrors(e, keys)
	if !slices.Equal(got, want) {
		t.Errorf("GetValueErrors:\n got %q\nwant %q (GetValueStatus one by one)", got, want)
	}
	// The oracle itself: what the states above say.
	var wantKeys []string
	for _, w := range want {
		wantKeys = append(wantKeys, strings.Fields(w)[0])
	}
	if exp := []string{"a/bad", "a/dfail/y", "a/fail"}; !slices.Equal(wantKeys, exp) {
		t.Errorf("statuses in error %q, want those of %q", wantKeys, exp)
	}
	if got := e.s.GetValueErrors([]string{"a/ok", "a/pend", "a/none"}); len(got) != 0 {
		t.Errorf("GetValueErrors of values not in error: %v, want none", got)
	}
	if got := e.s.GetValueErrors(nil); len(got) != 0 {
		t.Errorf("GetValueErrors(nil) = %v", got)
	}

	// While a transaction fixes a/bad, readers see the state before it:
	// a/bad still INVALID, as GetValueStatus says.
	var during, duringWant []string
	e.sb.Hook = func(_ context.Context, kind, key string) {
		if kind == "create" && key == "a/bad" {
			during, duringWant = valueErrors(e, keys)
		}
	}
	e.mustCommit(context.Background(), set("a/bad", "items=good"))
	if !slices.Equal(during, duringWant) || len(during) == 0 || !strings.HasPrefix(during[0], "a/bad INVALID") {
		t.Errorf("GetValueErrors during the transaction that fixes a/bad:\n got %q\nwant %q (GetValueStatus one by one), a/bad INVALID first", during, duringWant)
	}
	if got, _ := valueErrors(e, []string{"a/bad"}); len(got) != 0 {
		t.Errorf("GetValueErrors of the fixed a/bad: %q, want none", got)
	}
}

// valueErrors returns, as "key STATE error", what GetValueErrors says of
// keys and what GetValueStatus and StatusInError say one key at a time.
func valueErrors(e *env, keys []string) (got, want []string) {
	seen := map[string]bool{}
	for _, key := range keys {
		bs := e.s.GetValueStatus(key)
		if seen[bs.GetValue().GetKey()] {
			continue
		}
		seen[bs.GetValue().GetKey()] = true
		for _, st := range append([]*api.ValueStatus{bs.GetValue()}, bs.GetDerivedValues()...) {
			if api.StatusInError(st) {
				want = append(want, st.GetKey()+" "+st.GetState().String()+" "+st.GetError())
			}
		}
	}
	for _, st := range e.s.GetValueErrors(keys) {
		got = append(got, st.GetKey()+" "+st.GetState().String()+" "+st.GetError())
	}
	return got, want
}

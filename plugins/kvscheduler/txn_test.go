package kvscheduler_test

import (
	"context"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// A key set more than once in one transaction keeps the value set last,
// whether that is a value or a delete, and is applied once.
func TestTxnKeySetTwiceKeepsLast(t *testing.T) {
	e := newEnv(t)
	e.register(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})
	ctx := context.Background()

	e.mustCommit(ctx, set("iface/a", "first"), set("iface/b", "b"), set("iface/a", "second"))
	e.expectOps("set twice", "create iface/a=second", "create iface/b=b")

	e.mustCommit(ctx, del("iface/a"), set("iface/a", "third"), set("iface/b", "b2"), del("iface/b"))
	e.expectOps("delete then set, set then delete", "delete iface/b", "update iface/a=third")
	e.expectState("iface/a", api.ValueStateConfigured)
	e.expectSB("after", map[string]string{"iface/a": "third"})
}

package ifplugin_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: watchers and their
// netlink subscriptions end with their context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

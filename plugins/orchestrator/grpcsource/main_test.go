package grpcsource_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine is left behind: a stream whose watch
// was not stopped, a server or scheduler a test did not close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

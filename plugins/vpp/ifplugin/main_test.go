package ifplugin_test

import (
	"testing"
	"time"

	"go.fd.io/govpp/core"
	"go.uber.org/goleak"
)

// TestMain: GoVPP notices a restarted VPP quickly (its default probes once a
// second), and nothing outlives the tests (managers, connections and
// schedulers are closed by each test).
func TestMain(m *testing.M) {
	core.HealthCheckProbeInterval = 50 * time.Millisecond
	goleak.VerifyTestMain(m)
}

package ifplugin_test

import (
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/tests/vpprun"
)

// TestMain: GoVPP notices a restarted VPP quickly (its default probes once a
// second), nothing outlives the tests (managers, connections and
// schedulers are closed by each test), and the real VPP of the tests' own
// (NETAGENT_VPP_DIR) is stopped after them.
func TestMain(m *testing.M) {
	vpptest.QuickHealthChecks(50 * time.Millisecond)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		vpprun.StopShared()
		os.Exit(code)
	}))
}

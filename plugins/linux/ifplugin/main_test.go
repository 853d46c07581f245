package ifplugin_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/netagent-io/netagent/tests/netnstest"
)

// isolatedEnv is the variable of netnstest.Run: set to 0 it keeps the
// tests in the caller's namespace (to watch them with the host's tools;
// never next to a running agent).
const isolatedEnv = "NETAGENT_LINUX_TESTS_ISOLATED"

// TestMain runs the tests, as root, in a network namespace of their own
// (netnstest): they create links in the agent's namespace, and a full
// resync deletes every link there that carries the agent's alias and is not
// configured, which in the host namespace would be the links of an agent
// running there and of other packages' tests. The named namespaces
// (/var/run/netns) are shared: the tests give theirs unique names and
// remove them. It then checks that no goroutine outlives the tests:
// watchers and their netlink subscriptions end with their context.
func TestMain(m *testing.M) {
	code := netnstest.Run(m, isolatedEnv)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestRunsInANetworkNamespaceOfItsOwn(t *testing.T) { netnstest.Check(t, isolatedEnv) }

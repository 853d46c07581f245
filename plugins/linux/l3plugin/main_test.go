package l3plugin_test

import (
	"testing"

	"github.com/netagent-io/netagent/tests/netnstest"
)

// isolatedEnv is the variable of netnstest.Run: set to 0 it keeps the
// tests in the caller's namespace (to watch them with the host's tools;
// never next to a running agent).
const isolatedEnv = "NETAGENT_LINUX_TESTS_ISOLATED"

// TestMain runs the tests, as root, in a network namespace of their own
// (netnstest): some run the interface plugin, whose full resync deletes
// every link of the agent's namespace that carries the agent's alias and is
// not configured, which in the host namespace would be the links of an
// agent running there and of other packages' tests. The named namespaces
// (/var/run/netns) are shared: the tests give theirs unique names and
// remove them.
func TestMain(m *testing.M) { netnstest.Main(m, isolatedEnv) }

func TestRunsInANetworkNamespaceOfItsOwn(t *testing.T) { netnstest.Check(t, isolatedEnv) }

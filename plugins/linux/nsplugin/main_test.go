package nsplugin_test

import (
	"testing"

	"github.com/netagent-io/netagent/tests/netnstest"
)

// isolatedEnv is the variable of netnstest.Run: set to 0 it keeps the
// tests in the caller's namespace (to watch them with the host's tools).
const isolatedEnv = "NETAGENT_LINUX_TESTS_ISOLATED"

// TestMain runs the tests, as root, in a network namespace of their own
// (netnstest): they create links, and what they take for the agent's own
// namespace must not be the host's, where an agent may run. The named
// namespaces (/var/run/netns) are shared: the tests give theirs unique
// names and remove them.
func TestMain(m *testing.M) { netnstest.Main(m, isolatedEnv) }

func TestRunsInANetworkNamespaceOfItsOwn(t *testing.T) { netnstest.Check(t, isolatedEnv) }

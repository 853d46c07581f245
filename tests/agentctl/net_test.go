package agentctl_test

// Names of namespaces and links, configuration files, and checks of the
// kernel through ip.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pid makes the names of the tests unique among the test processes that
// share /var/run/netns.
var pid = os.Getpid()

// netNames are a test's unique names: a named network namespace and the two
// ends of a veth pair.
type netNames struct {
	NS   string // ctl-<tag>-<pid>, in /var/run/netns
	Host string // <tag>h<pid>, the end in the test's namespace
	Peer string // <tag>p<pid>, the end meant for NS
}

// uniqueNames returns the names of a test (tag: a few letters and digits,
// unique among the package's tests; link names are at most 15 bytes) and
// removes, before and when the test ends (failed or not), the namespace and
// the host end of the veth pair, which removes the pair. Call it before
// startAgent, so that the agent stops before they are removed.
func uniqueNames(t testing.TB, tag string) netNames {
	t.Helper()
	n := netNames{
		NS:   fmt.Sprintf("ctl-%s-%d", tag, pid),
		Host: fmt.Sprintf("%sh%d", tag, pid),
		Peer: fmt.Sprintf("%sp%d", tag, pid),
	}
	if len(n.Host) > 15 {
		t.Fatalf("tag %q makes link names longer than 15 bytes (%s)", tag, n.Host)
	}
	n.remove()
	t.Cleanup(n.remove)
	return n
}

// remove deletes the host end of the veth pair and the namespace, if there.
func (n netNames) remove() {
	if _, err := ip("link", "show", "dev", n.Host); err == nil {
		_, _ = ip("link", "del", "dev", n.Host)
	}
	if _, err := os.Stat(filepath.Join("/var/run/netns", n.NS)); err == nil {
		_, _ = ip("netns", "del", n.NS)
	}
}

// placeholders returns the names, for normalize: <NS>, <HOST_IF>,
// <PEER_IF>.
func (n netNames) placeholders() []string {
	return []string{n.NS, "<NS>", n.Host, "<HOST_IF>", n.Peer, "<PEER_IF>"}
}

// writeFile writes content to a file name in a new temporary directory of
// the test and returns its path (a configuration document for
// agentOptions.InitFile or agentctl -f, a token file, ...).
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// vethRouteDoc returns the configuration document of
// examples/veth-route.yaml with the test's names and the subnet
// 172.30.<subnet>.0/24 instead of 192.168.50.0/24 (tests that run at the
// same time need different subnets): a namespace NS joined to the test's
// namespace by the veth pair Host (172.30.<subnet>.1/24) and Peer (eth0 in
// NS, .2), the route 10.200.0.0/16 via .1 in NS, and the ARP entry .9 ->
// 02:00:00:00:50:09 on eth0 in NS.
func vethRouteDoc(t testing.TB, n netNames, subnet int) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join(root, "examples", "veth-route.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(
		"veth-host", n.Host,
		"veth-app", n.Peer,
		"reference: app", "reference: "+n.NS,
		"192.168.50.", fmt.Sprintf("172.30.%d.", subnet),
	).Replace(string(example))
}

// ip runs ip with args and returns its output; the error holds the output.
func ip(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// waitIP polls `ip args...` until its output contains want and returns
// that output (e.g. waitIP(t, "10.200.0.0/16 via", "-n", n.NS, "route")).
func waitIP(t *testing.T, want string, args ...string) string {
	t.Helper()
	var out string
	waitFor(t, fmt.Sprintf("ip %s shows %q", strings.Join(args, " "), want), func() (bool, string) {
		var err error
		out, err = ip(args...)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(out, want), out
	})
	return out
}

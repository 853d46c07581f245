package agentctl_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestAgentctlWatchLabelsDetails: config watch says what the details of a
// status are: the dependencies a PENDING value waits for, the invalid
// fields of an INVALID value (never "waiting for" a field name).
func TestAgentctlWatchLabelsDetails(t *testing.T) {
	t.Parallel()
	a := startAgent(t, agentOptions{})
	env := a.env()
	const invalidKey = "config/linux/l3/v2/route/10.205.0.0/16/wd0"
	const pendingKey = "config/linux/l3/v2/route/10.206.0.0/16/wd0"
	watch := startCtl(t, env, "config", "watch", "--key-prefix", "config/linux/l3/v2/route/")

	doc := writeFile(t, "details.yaml", "linux_config:\n  routes:\n"+
		"    - outgoing_interface: wd0\n      dst_network: 10.205.0.0/16\n      gw_addr: 172.30.73.1\n      scope: HOST\n"+
		"    - outgoing_interface: wd0\n      dst_network: 10.206.0.0/16\n")
	if _, stderr, code := agentctl(t, env, "config", "update", doc); code != 0 {
		t.Fatalf("config update: exit %d, %s", code, stderr)
	}

	// The two statuses come in either order.
	lines := map[string]string{}
	for len(lines) < 2 {
		line := watch.next("the INVALID and the PENDING route", func(line string) bool {
			return (strings.Contains(line, " INVALID ") && strings.Contains(line, invalidKey)) ||
				(strings.Contains(line, " PENDING ") && strings.Contains(line, pendingKey))
		})
		if strings.Contains(line, invalidKey) {
			lines["INVALID"] = line
		} else {
			lines["PENDING"] = line
		}
	}
	invalid, pending := lines["INVALID"], lines["PENDING"]
	if !regexp.MustCompile(`  error: invalid value \(fields gw_addr\): .*  invalid fields: gw_addr$`).MatchString(invalid) || strings.Contains(invalid, "waiting for") {
		t.Errorf("config watch, INVALID route: %q; want its error and \"invalid fields: gw_addr\", not \"waiting for\"", invalid)
	}
	if !strings.HasSuffix(pending, "  waiting for: interface wd0 up") {
		t.Errorf("config watch, PENDING route: %q; want \"waiting for: interface wd0 up\"", pending)
	}
	watch.stop()
}

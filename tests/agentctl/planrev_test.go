package agentctl_test

// Plans bound to a revision (issue 19): config plan prints the revision it
// was made against; config update --plan-revision refuses a stale plan.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// planRevisions finds the revisions in config plan's output.
var planRevisions = regexp.MustCompile(`(revision|--plan-revision) \d+`)

// planRevision runs config plan on doc (exit 2: changes) and returns the
// revision its last line prints.
func planRevision(t *testing.T, env []string, doc string) uint64 {
	t.Helper()
	stdout, stderr, code := agentctl(t, env, "config", "plan", doc)
	if code != 2 {
		t.Fatalf("config plan: exit %d, want 2 (changes); stderr %q", code, stderr)
	}
	m := regexp.MustCompile(`(?m)^Planned against revision (\d+): config update --plan-revision (\d+) applies it only if nothing changed since\.$`).FindStringSubmatch(stdout)
	if m == nil || m[1] != m[2] {
		t.Fatalf("config plan: no \"Planned against revision N\" line:\n%s", stdout)
	}
	rev, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil || rev == 0 {
		t.Fatalf("config plan: revision %q", m[1])
	}
	return rev
}

// TestAgentctlPlanRevision: a plan, another change in between, the update
// bound to the plan's revision refused with one line naming both
// revisions (nothing applied); planned again, the update is applied. Bad
// revisions are refused with a clear line.
func TestAgentctlPlanRevision(t *testing.T) {
	t.Parallel()
	a := startAgent(t, agentOptions{})
	env := a.env()
	// VPP values: no effect on the kernel (VPP is off: UNIMPLEMENTED), but
	// a change of the agent's state all the same.
	doc := writeFile(t, "lp.yaml", "vpp_config:\n  interfaces:\n    - {name: lp, type: SOFTWARE_LOOPBACK}\n")
	other := writeFile(t, "lq.yaml", "vpp_config:\n  interfaces:\n    - {name: lq, type: SOFTWARE_LOOPBACK}\n")

	rev := planRevision(t, env, doc)
	stdout, _, code := agentctl(t, env, "config", "plan", doc, "-o", "json")
	var plan struct {
		Changes  int    `json:"changes"`
		Revision uint64 `json:"revision"`
	}
	parseJSON(t, "config plan -o json", stdout, &plan)
	if code != 2 || plan.Changes == 0 || plan.Revision < rev {
		t.Errorf("config plan -o json: exit %d, %+v; want 2, changes and a revision from %d", code, plan, rev)
	}
	stdout, _, _ = agentctl(t, env, "config", "plan", doc, "-o", "yaml")
	if !regexp.MustCompile(`(?m)^revision: \d+$`).MatchString(stdout) {
		t.Errorf("config plan -o yaml: no revision:\n%s", stdout)
	}

	// Another change comes in between: the plan is stale.
	mustCtl(t, env, "config", "update", other, "--wait")
	args := []string{"config", "update", doc, "--wait", "--plan-revision", strconv.FormatUint(rev, 10)}
	line := wantError(t, env, "", args, "config update", fmt.Sprintf("planned against revision %d, now at revision ", rev), "changed", "plan again")
	t.Logf("stale plan: %s", line)
	if out := mustCtl(t, env, "config", "get"); strings.Contains(out, "name: lp") {
		t.Fatalf("the refused update was applied:\n%s", out)
	}

	// Planned again, it is applied. The agent's own events (SB
	// notifications of the kernel shared with other tests) may move the
	// revision between the plan and the update: a refusal then is right,
	// and the client plans again, as here, a few times at most.
	var out string
	for attempt := 1; ; attempt++ {
		rev = planRevision(t, env, doc)
		stdout, stderr, code := agentctl(t, env, "config", "update", doc, "--wait", "--plan-revision", strconv.FormatUint(rev, 10))
		if code == 0 {
			out = stdout
			break
		}
		if attempt == 5 || !strings.Contains(stderr, "plan again") {
			t.Fatalf("update of a current plan (attempt %d): exit %d, %s", attempt, code, stderr)
		}
	}
	if !regexp.MustCompile(`^update of 1 value: transaction #\d+ done\n$`).MatchString(out) {
		t.Errorf("update of the current plan: %q", out)
	}
	if out := mustCtl(t, env, "config", "get"); !strings.Contains(out, "name: lp") {
		t.Errorf("the update of the current plan is not applied:\n%s", out)
	}

	// Bad revisions.
	del := writeFile(t, "del.yaml", "vpp_config:\n  interfaces:\n    - {name: lq}\n")
	ahead := strconv.FormatUint(rev+1_000_000, 10)
	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"config", "update", doc, "--plan-revision", "0"}, []string{"--plan-revision 0: a revision is a positive number", "config plan"}},
		{[]string{"config", "update", doc, "--plan-revision", "-3"}, []string{"--plan-revision -3: a revision is a positive number"}},
		{[]string{"config", "delete", del, "--plan-revision", "0"}, []string{"--plan-revision 0: a revision is a positive number"}},
		{[]string{"config", "update", doc, "--plan-revision", "x"}, []string{"--plan-revision", `"x"`}},
		{[]string{"config", "update", doc, "--plan-revision", ahead}, []string{"planned against revision " + ahead + ", which is ahead of the current revision", "plan again"}},
		// Revisions grow over restarts: a small number is from before.
		{[]string{"config", "update", doc, "--plan-revision", "1000000"}, []string{"planned against revision 1000000, from before the agent started", "plan again"}},
	} {
		wantError(t, env, "", c.args, c.wants...)
	}
	if out := mustCtl(t, env, "config", "get"); !strings.Contains(out, "name: lq") {
		t.Errorf("a refused delete removed lq:\n%s", out)
	}
}

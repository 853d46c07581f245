package agentctl_test

// Safe changes (issue 19): changes to confirm and probes, against the
// agent binary, in real namespaces.

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A change that moves the host end's address and is not confirmed is
// reverted at its deadline (the kernel has the old address again, the
// revert is in the history); one confirmed in time stays; a probe to an
// address nothing answers reverts its change at once, a probe that passes
// keeps it; an agent restarted while a change is pending reverts it when
// due (the pending change kept in its state directory).
func TestAgentctlConfirmAndProbes(t *testing.T) {
	n := uniqueNames(t, "cf")
	stateDir := t.TempDir()
	opts := agentOptions{Label: fmt.Sprintf("cf%d", pid), Args: []string{"--state-dir", stateDir}}
	a := startAgent(t, opts)
	env := a.env()
	old := vethRouteDoc(t, n, 83)
	moved := strings.Replace(old, "ip_addresses: [172.30.83.1/24]", "ip_addresses: [172.30.83.11/24]", 1)
	if moved == old {
		t.Fatal("the example's host address is not where the test expects it")
	}
	oldDoc, movedDoc := writeFile(t, "old.yaml", old), writeFile(t, "moved.yaml", moved)
	mustCtl(t, env, "config", "update", oldDoc, "--wait")
	waitIP(t, "172.30.83.1/24", "addr", "show", "dev", n.Host)
	hostHas := func(addr string) bool {
		out, _ := ip("addr", "show", "dev", n.Host)
		return strings.Contains(out, addr+"/24")
	}

	// Not confirmed: reverted at the deadline.
	out := mustCtl(t, env, "config", "update", movedDoc, "--confirm-within", "2s")
	seq := regexp.MustCompile(`transaction #(\d+) done, pending confirmation: reverted in 2s unless "agentctl config confirm (\d+)"`).FindStringSubmatch(out)
	if seq == nil || seq[1] != seq[2] {
		t.Fatalf("update to confirm: %q", out)
	}
	if !hostHas("172.30.83.11") || hostHas("172.30.83.1") {
		t.Fatalf("the change to confirm is not applied: %s", out)
	}
	if st := mustCtl(t, env, "config", "status"); !strings.Contains(st, "change #"+seq[1]+" (gRPC update, to be confirmed within 2s) is pending confirmation") {
		t.Errorf("config status while pending: %q", st)
	}
	if st := mustCtl(t, env, "status"); !strings.Contains(st, "Pending:") || !strings.Contains(st, "agentctl config confirm "+seq[1]) {
		t.Errorf("status while pending: %q", st)
	}
	wantError(t, env, "", []string{"config", "update", oldDoc}, "refused", "#"+seq[1], "confirm it or wait")
	waitIP(t, "172.30.83.1/24", "addr", "show", "dev", n.Host)
	if hostHas("172.30.83.11") {
		t.Error("after the revert the host end still has the moved address")
	}
	waitFor(t, "the revert in the history", func() (bool, string) {
		h, _, _ := agentctl(t, env, "config", "history")
		return strings.Contains(h, "revert of unconfirmed change #"+seq[1]+": not confirmed within 2s"), h
	})
	if st := mustCtl(t, env, "config", "status"); st != "no change is pending confirmation\n" {
		t.Errorf("config status after the revert: %q", st)
	}

	// Confirmed in time: stays.
	mustCtl(t, env, "config", "update", movedDoc, "--confirm-within", "5m")
	if out := mustCtl(t, env, "config", "confirm"); !strings.Contains(out, "confirmed: it stays") {
		t.Errorf("config confirm: %q", out)
	}
	wantError(t, env, "", []string{"config", "confirm"}, "no change is pending confirmation")
	if !hostHas("172.30.83.11") {
		t.Error("the confirmed change is not there")
	}
	mustCtl(t, env, "config", "update", oldDoc, "--wait")

	// Probes from the namespace: an address nothing answers reverts the
	// change; the host end's new address answers, the change stays.
	wantError(t, env, "", []string{"config", "update", movedDoc, "--probe", "ping 172.30.83.99 netns=" + n.NS + " timeout=500ms"},
		"reverted: probes failed", "ping 172.30.83.99 from netns "+n.NS)
	if !hostHas("172.30.83.1") || hostHas("172.30.83.11") {
		t.Error("the change whose probe failed was not reverted")
	}
	out = mustCtl(t, env, "config", "update", movedDoc, "--probe", "ping 172.30.83.11 netns="+n.NS+" timeout=3s")
	if !strings.Contains(out, "probe ping 172.30.83.11 from netns "+n.NS+": ok") {
		t.Errorf("update with a probe that passes: %q", out)
	}
	if !hostHas("172.30.83.11") {
		t.Error("the change whose probe passed is not there")
	}
	wantError(t, env, "", []string{"config", "update", movedDoc, "--probe", "ping"}, `--probe "ping"`)
	wantError(t, env, "", []string{"config", "update", movedDoc, "--probe", "tcp 10.0.0.1:1 timeout=-1s"}, "timeout")

	// A restart while a change is pending: the next agent keeps it pending
	// and reverts it when due (or, started after the deadline, starts from
	// the values before it).
	out = mustCtl(t, env, "config", "update", oldDoc, "--confirm-within", "4s")
	seq = regexp.MustCompile(`transaction #(\d+) done, pending`).FindStringSubmatch(out)
	if seq == nil || !hostHas("172.30.83.1") {
		t.Fatalf("update to confirm before the restart: %q", out)
	}
	if err := a.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	b := startAgent(t, opts)
	waitIP(t, "172.30.83.11/24", "addr", "show", "dev", n.Host)
	if hostHas("172.30.83.1") {
		t.Error("after the restart and the deadline the host end still has the unconfirmed change's address")
	}
	waitFor(t, "the revert after the restart in the history", func() (bool, string) {
		h, _, _ := agentctl(t, b.env(), "config", "history")
		return strings.Contains(h, "unconfirmed change #"+seq[1]), h
	})
}

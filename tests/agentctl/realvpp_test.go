package agentctl_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/tests/vpprun"
)

// realVPP is the real VPP the environment gives the tests (make test runs
// this package a second time with NETAGENT_VPP_DIR=../shared/vpp); the test
// skips without one. The tests' own VPP is restarted first (empty); on the
// user's VPP (VPP_API_SOCKET) the test takes its turn.
func realVPP(t testing.TB) *vpprun.VPP {
	t.Helper()
	if !strings.Contains(t.Name(), "VPP") {
		t.Fatalf("%s uses a VPP: its name must contain VPP (scripts/test-real-vpp.sh runs only those of this package against the real VPP)", t.Name())
	}
	v, err := vpprun.ForTests()
	if err != nil {
		t.Fatalf("the tests' real VPP: %v", err)
	}
	if v == nil {
		t.Skipf("needs a real VPP: set %s to a VPP build folder (make test uses ../shared/vpp) or %s", vpprun.DirEnv, vpprun.SocketEnv)
	}
	unlock, err := vpprun.Lock(v.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unlock)
	if ok, why := v.HasCLI(); !ok {
		t.Skipf("reads VPP with vppctl: %s", why)
	}
	if !v.User {
		if err := v.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// vppctl runs a command on the VPP's console.
func vppctl(t *testing.T, v *vpprun.VPP, args ...string) string {
	t.Helper()
	out, err := v.CLI(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAgentctlRealVPP: agentctl against an agent on a real VPP 25.10:
// status names the VPP and its version, config update --wait puts a
// loopback, a bridge domain with it as BVI, a route and an ARP entry into
// VPP (as vppctl shows them), plan says in sync, dump --view SB reads them
// back from VPP, config delete --wait takes them out again.
func TestAgentctlRealVPP(t *testing.T) {
	v := realVPP(t)
	a := startAgent(t, agentOptions{VPPSocket: v.Socket})
	env := a.env()

	var st struct {
		VPP struct {
			Connected bool   `json:"connected"`
			Version   string `json:"version"`
			PID       uint32 `json:"pid"`
		} `json:"vpp"`
	}
	parseJSON(t, "status", mustCtl(t, env, "status", "-o", "json"), &st)
	if !st.VPP.Connected || !strings.Contains(st.VPP.Version, "25.10") || (!v.User && int(st.VPP.PID) != v.PID()) {
		t.Errorf("status: VPP %+v, want connected to VPP 25.10 (pid %d)", st.VPP, v.PID())
	}

	doc := writeFile(t, "vpp.yaml", `vpp_config:
  interfaces:
    - {name: ctl-lp1, type: SOFTWARE_LOOPBACK, enabled: true, ip_addresses: [10.88.0.1/24]}
  bridge_domains:
    - {name: ctl-bd1, forward: true, learn: true, interfaces: [{name: ctl-lp1, bridged_virtual_interface: true}]}
  routes:
    - {dst_network: 10.89.0.0/16, next_hop_addr: 10.88.0.2, outgoing_interface: ctl-lp1}
  arps:
    - {interface: ctl-lp1, ip_address: 10.88.0.9, phys_address: "02:00:00:00:88:09", static: true}
`)
	mustCtl(t, env, "config", "update", doc, "--wait")
	if v.User {
		// Nothing restarts the user's VPP: a failed test must not leave
		// the document there for the next tests (before the agent stops).
		t.Cleanup(func() { _, _, _ = agentctl(t, env, "config", "delete", doc, "--wait") })
	}
	if out := vppctl(t, v, "show", "interface", "address"); !strings.Contains(out, "L3 10.88.0.1/24") {
		t.Errorf("vppctl show interface address:\n%s\nwant 10.88.0.1/24", out)
	}
	if out := vppctl(t, v, "show", "ip", "fib", "10.89.0.0/16"); !strings.Contains(out, "10.89.0.0/16") || !strings.Contains(out, "via 10.88.0.2") {
		t.Errorf("vppctl show ip fib 10.89.0.0/16:\n%s\nwant the route via 10.88.0.2", out)
	}
	if out := vppctl(t, v, "show", "ip", "neighbors"); !regexp.MustCompile(`10\.88\.0\.9\s+S\s+02:00:00:00:88:09`).MatchString(out) {
		t.Errorf("vppctl show ip neighbors:\n%s\nwant 10.88.0.9 static", out)
	}
	if out := vppctl(t, v, "show", "bridge-domain"); !strings.Contains(out, "loop") {
		t.Errorf("vppctl show bridge-domain:\n%s\nwant a domain with the loopback as BVI", out)
	}
	if stdout, stderr, code := agentctl(t, env, "config", "plan", doc); code != 0 {
		t.Errorf("plan of the applied document: exit %d, %s%s; want 0 (in sync)", code, stdout, stderr)
	}
	sb := mustCtl(t, env, "dump", "vpp.interfaces", "--view", "SB", "-o", "json")
	if !strings.Contains(sb, `"ctl-lp1"`) || !strings.Contains(sb, "10.88.0.1/24") {
		t.Errorf("dump vpp.interfaces --view SB: %s, want ctl-lp1 with 10.88.0.1/24", sb)
	}

	mustCtl(t, env, "config", "delete", doc, "--wait")
	waitFor(t, "VPP with local0 only", func() (bool, string) {
		out := vppctl(t, v, "show", "interface")
		lines := 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(l, " ") {
				lines++
			}
		}
		return lines == 1 && strings.Contains(out, "local0"), fmt.Sprintf("vppctl show interface:\n%s", out)
	})
}

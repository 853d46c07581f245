package agentctl_test

// Tests of the harness itself (the agent without agentctl, normalize,
// golden) and the first test of agentctl.

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestHarnessAgent: the agent binary starts on its free ports, /readyz
// answers 200, its embedded etcd is at EtcdEndpoint, and SIGTERM stops it
// with status 0, its ports released.
func TestHarnessAgent(t *testing.T) {
	a := startAgent(t, agentOptions{})
	code, body, err := a.get("/readyz")
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"ready"`) {
		t.Fatalf("GET /readyz: %d %q %v, want 200 ready", code, body, err)
	}
	resp, err := a.http.Get(a.EtcdEndpoint + "/health")
	if err != nil {
		t.Fatalf("the embedded etcd at %s: %v", a.EtcdEndpoint, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s/health: %s", a.EtcdEndpoint, resp.Status)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	etcdPort, err := strconv.Atoi(a.EtcdEndpoint[strings.LastIndex(a.EtcdEndpoint, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []int{a.RESTPort, a.GRPCPort, etcdPort, a.EtcdPeerPort} {
		if !portFree(port) {
			t.Errorf("port %d still bound after the agent exited", port)
		}
	}
}

// TestHarnessAgentOptions: the init file is applied to the kernel under the
// test's unique names, and the token is required for changes.
func TestHarnessAgentOptions(t *testing.T) {
	n := uniqueNames(t, "hs")
	doc := writeFile(t, "init.yaml", vethRouteDoc(t, n, 61))
	a := startAgent(t, agentOptions{Label: "vpp1", Token: "s3cret", InitFile: doc})

	waitIP(t, "10.200.0.0/16 via 172.30.61.1 dev eth0", "-n", n.NS, "route", "show", "proto", "181")
	waitIP(t, "172.30.61.9 lladdr 02:00:00:00:50:09 PERMANENT", "-n", n.NS, "neigh", "show", "dev", "eth0")
	if out := waitIP(t, "172.30.61.1/24", "-o", "addr", "show", "dev", n.Host); !strings.Contains(out, n.Host) {
		t.Errorf("ip addr show dev %s: %q", n.Host, out)
	}

	const resync = "/scheduler/downstream-resync"
	if code, body, err := a.do(http.MethodPost, resync, nil); err != nil || code != http.StatusUnauthorized {
		t.Errorf("POST %s without the token: %d %s %v, want 401", resync, code, body, err)
	}
	if code, body, err := a.do(http.MethodPost, resync, http.Header{"Authorization": {"Bearer " + a.Token}}); err != nil || code != http.StatusOK {
		t.Errorf("POST %s with the token: %d %s %v, want 200", resync, code, body, err)
	}
	if a.Label != "vpp1" || !strings.Contains(a.output(), "vpp1") {
		t.Errorf("label %q; the agent's log does not name vpp1", a.Label)
	}
}

// TestHarnessNormalize: each volatile part and each placeholder of an agent
// and of names.
func TestHarnessNormalize(t *testing.T) {
	a := &agent{Label: "ctl007", Host: "127.0.0.1", RESTPort: 40001, GRPCPort: 40002,
		EtcdEndpoint: "http://127.0.0.1:40003", EtcdPeerPort: 40004, EtcdDir: "/tmp/TestX123/001/etcd"}
	n := netNames{NS: "ctl-st-4242", Host: "sth4242", Peer: "stp4242"}
	placeholders := append(a.placeholders(), n.placeholders()...)
	for _, tc := range []struct{ in, want string }{
		{"at 2025-03-04T05:06:07Z and 2025-03-04T05:06:07.123456+02:00.", "at <TIME> and <TIME>."},
		{"started 2025-03-04 05:06:07.5 +0000 UTC m=+0.012345 ok", "started <TIME> ok"},
		{"took 12ms, 1.5s, 2m3s, 750µs, 3h; not 10.0.0.1/24 or eth0s", "took <DURATION>, <DURATION>, <DURATION>, <DURATION>, <DURATION>; not 10.0.0.1/24 or eth0s"},
		{"dial 10.1.2.3:9191, [::1]:9111, localhost:2379; not 10.1.2.3/24", "dial 10.1.2.3:<PORT>, [::1]:<PORT>, localhost:<PORT>; not 10.1.2.3/24"},
		{`pid 42, pid=43, "pid": 44, vpe_pid: 45, PID 46; rapid 47`, `pid <PID>, pid=<PID>, "pid": <PID>, vpe_pid: <PID>, PID <PID>; rapid 47`},
		{"etcd http://127.0.0.1:40003 rest 127.0.0.1:40001 grpc 127.0.0.1:40002 peer 127.0.0.1:40004",
			"etcd <ETCD_ENDPOINT> rest <REST_ADDRESS> grpc <GRPC_ADDRESS> peer <ETCD_PEER_ADDRESS>"},
		{"/vnf-agent/ctl007/config in /tmp/TestX123/001/etcd/member", "/vnf-agent/<LABEL>/config in <ETCD_DIR>/member"},
		{"ctl-st-4242: sth4242 <-> stp4242", "<NS>: <HOST_IF> <-> <PEER_IF>"},
		{"fe80::586a:14ff:fe27:17a1/64 and fe80::1 on eth0", "fe80::<IID>/64 and fe80::<IID> on eth0"},
		{"MTU 1500, 3 values, 02:00:00:00:50:09, 2001:db8::1/64", "MTU 1500, 3 values, 02:00:00:00:50:09, 2001:db8::1/64"},
	} {
		if got := normalize(tc.in, placeholders...); got != tc.want {
			t.Errorf("normalize(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestHarnessSqueezeColumns: gaps between columns become two spaces,
// indentation stays.
func TestHarnessSqueezeColumns(t *testing.T) {
	got := squeezeColumns("KEY             STATE\n  a/<HOST_IF>    CONFIGURED   -\n")
	want := "KEY  STATE\n  a/<HOST_IF>  CONFIGURED  -\n"
	if got != want {
		t.Errorf("squeezeColumns: %q, want %q", got, want)
	}
}

// TestHarnessGolden: testdata/harness/normalized.golden holds a normalized
// output (and -update writes it).
func TestHarnessGolden(t *testing.T) {
	out := "KEY                      STATE      LAST UPDATE\n" +
		"config/linux/veth-host   CONFIGURED 2025-03-04T05:06:07Z (1.5s ago)\n" +
		"agent at 127.0.0.1:9191, pid 1234\n"
	golden(t, "harness/normalized", normalize(out))
}

// TestHarnessLineDiff: lines only in want are -, only in got +.
func TestHarnessLineDiff(t *testing.T) {
	got := lineDiff("a\nb\nc\n", "a\nB\nc\nd")
	want := "  a\n- b\n+ B\n  c\n+ d (no newline at end)\n"
	if got != want {
		t.Errorf("lineDiff:\n%s\nwant:\n%s", got, want)
	}
}

// TestAgentctlVersion: agentctl --help exits 0 and names the command.
func TestAgentctlVersion(t *testing.T) {
	stdout, stderr, code := agentctl(t, nil, "--help")
	if code != 0 || !strings.Contains(stdout, "agentctl") {
		t.Errorf("agentctl --help: exit %d, stdout %q, stderr %q; want exit 0 and agentctl in stdout", code, stdout, stderr)
	}
}

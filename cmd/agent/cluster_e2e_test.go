package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	"github.com/netagent-io/netagent/tests/etcdcluster"
)

// TestE2EReadinessShowsAClusterOutage runs the agent against a real
// 3-member etcd cluster, connected to one follower, and cuts that member
// off from the others: the agent's /readyz says it is degraded, naming
// etcd and why ("no leader"), within seconds, for as long as the member
// is cut off, and ready again once it is back; what was written meanwhile
// through the other members then reaches the agent. (tests/fleet checks
// the other faults and that each write is applied exactly once.)
func TestE2EReadinessShowsAClusterOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-member etcd cluster: not in -short")
	}
	c := etcdcluster.Start(t, etcdcluster.Options{})
	cut := (c.Leader() + 1) % len(c.Members)
	cfg := testConfig(t)
	cfg.Etcd.EmbeddedDir, cfg.Etcd.EmbeddedClientURL, cfg.Etcd.EmbeddedPeerURL = "", "", ""
	cfg.Etcd.Endpoints = []string{c.Members[cut].Endpoint()}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, cfg, true)

	readyz := func() readyzJSON {
		_, body := a.do("GET", "/readyz", nil)
		var r readyzJSON
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("/readyz: %v: %s", err, body)
		}
		return r
	}
	c.Isolate(cut)
	var last readyzJSON
	eventually(t, "/readyz degraded", func() (bool, string) {
		last = readyz()
		return last.Status == "degraded", last.Status + " " + strings.Join(last.Degraded, "; ")
	})
	if why := strings.Join(last.Degraded, "; "); !strings.Contains(why, "source etcd lost its connection") || !strings.Contains(why, "no leader") {
		t.Errorf("/readyz degraded for %q, want the etcd source's loss and why (no leader)", why)
	}

	// Written through the members that still form the cluster.
	cli := c.Client(c.Others(cut)...)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	host, peer := veth("cut-a", "cut-b", "", 0), veth("cut-b", "cut-a", "", 0)
	t.Cleanup(func() { removeNet("", "cut-a", "cut-b") })
	for _, v := range []*linuxif.Interface{host, peer} {
		if _, err := cli.Put(ctx, "/vnf-agent/"+cfg.Label+"/"+keyOf(t, v), jsonOfValue(t, v)); err != nil {
			t.Fatal(err)
		}
	}
	if r := readyz(); r.Status != "degraded" {
		t.Errorf("/readyz %q while the member is still cut off, want degraded", r.Status)
	}
	if st := a.status(keyOf(t, host)); st.Value.State != "" {
		t.Errorf("the agent on the member cut off has a value written after it was cut off: %+v", st.Value)
	}

	c.Heal(cut)
	eventually(t, "/readyz ready", func() (bool, string) {
		last = readyz()
		return last.Status == "ready", last.Status + " " + strings.Join(last.Degraded, "; ")
	})
	a.waitState(keyOf(t, host), "CONFIGURED")
	a.waitState(keyOf(t, peer), "CONFIGURED")
	if out, err := nsLink("", "cut-a"); err != nil || !strings.Contains(out, "cut-b") {
		t.Errorf("ip link show cut-a: %v %s", err, out)
	}
}

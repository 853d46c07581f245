package main

import (
	"os"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	statuspb "github.com/netagent-io/netagent/proto/status"
)

// valueStatus reads the published status of a value ("" raw: no key).
func (e *etcdKV) valueStatus(key string) (string, *api.BaseValueStatus) {
	e.t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.c.Get(ctx, etcdstatus.ValueKey(models.DefaultLabel, key))
	if err != nil {
		e.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	var st api.BaseValueStatus
	if err := protojson.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
		e.t.Fatalf("the status of %s %q: %v", key, resp.Kvs[0].Value, err)
	}
	return string(resp.Kvs[0].Value), &st
}

// TestE2EValueStatusesInEtcd: with etcd.status.values the agent publishes
// a value's status beside its own, under its lease, and deletes it with the
// value; the etcd source does not take it for configuration (the value
// key's status, under /vnf-agent/<label>/check/, is no value of its own).
func TestE2EValueStatusesInEtcd(t *testing.T) {
	cfg := testConfig(t)
	cfg.Etcd.Status.Values = true
	cfg.Linux.Disabled = os.Geteuid() != 0
	a := startAgent(t, cfg, true)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)

	// A route through an interface that never comes: not CONFIGURED (PENDING
	// with the Linux plugins, UNIMPLEMENTED without), and nothing in the
	// kernel.
	key := kv.put(route("nosuch-e2e0", "10.203.0.0/16", "172.30.9.1"))
	var raw string
	var st *api.BaseValueStatus
	eventually(t, "the route's status in etcd", func() (bool, string) {
		raw, st = kv.valueStatus(key)
		return st != nil && st.GetValue().GetState().String() == a.status(key).Value.State, raw
	})
	t.Logf("%s: %s", etcdstatus.ValueKey(models.DefaultLabel, key), raw)
	if s := st.GetValue().GetState(); s == api.ValueStateConfigured || st.GetValue().GetKey() != key {
		t.Errorf("the route's status %s", raw)
	}
	agentStatus := kv.waitStatus("published", func(*statuspb.AgentStatus) bool { return true })
	ctx, cancel := kv.ctx()
	defer cancel()
	resp, err := kv.c.Get(ctx, etcdstatus.ValueKey(models.DefaultLabel, key))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != agentStatus.lease {
		t.Errorf("the route's status %v %v, want under the agent's lease %x", resp, err, agentStatus.lease)
	}
	if got := a.status("check/status/v1/value/" + key); got.Value.State != "" {
		t.Errorf("the status key taken for configuration: %v", got)
	}

	kv.del(key)
	eventually(t, "the route's status gone from etcd", func() (bool, string) {
		raw, st = kv.valueStatus(key)
		return st == nil, raw
	})
}

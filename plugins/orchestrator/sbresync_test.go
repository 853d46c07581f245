package orchestrator_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// TestSouthboundResync: a request before the first full sync does nothing;
// after it, a request makes the agent not ready, naming the southbound, and
// commits a downstream resync that re-creates what the southbound lost;
// the agent is ready again when it is done.
func TestSouthboundResync(t *testing.T) {
	o, s, b := newEnv(t, nil)
	r := o.NewSouthboundResync("VPP")
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran }) // before the scheduler closes

	entered, release := make(chan string), make(chan struct{})
	o.Register(orchestrator.SourceEtcd)
	r.Request("VPP connected (before the first sync)")
	if ready, why := o.Ready(); ready || slices.Contains(why, "VPP connected, its configuration being applied") {
		t.Errorf("before the first sync: ready %v %v, want waiting for the etcd source only", ready, why)
	}
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/held", "h"), kv("item/a", "a")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if ops := b.takeOps(); len(ops) != 2 {
		t.Fatalf("first full sync: %v", ops)
	}
	if n := len(s.GetTransactionHistory(time.Time{}, time.Time{})); n != 1 {
		t.Errorf("%d transactions after the first sync, want 1: the request before it committed one", n)
	}

	// The southbound restarted empty.
	b.mu.Lock()
	clear(b.items)
	b.mu.Unlock()
	// The resync blocks in Create of item/held until released.
	b.hold = func(key string) {
		if key == "item/held" {
			entered <- key
			<-release
		}
	}
	r.Request("VPP connected (restarted: true)")
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("no resync after the request")
	}
	if ready, why := o.Ready(); ready || !slices.Equal(why, []string{"VPP connected, its configuration being applied"}) {
		t.Errorf("during the resync: ready %v %v, want not ready, VPP's configuration being applied", ready, why)
	}
	close(release)
	deadline := time.Now().Add(time.Minute)
	for ready, _ := o.Ready(); !ready; ready, _ = o.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("not ready after the resync")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ops := b.takeOps()
	slices.Sort(ops)
	if want := []string{"create item/a=a", "create item/held=h"}; !slices.Equal(ops, want) {
		t.Errorf("resync after the restart: %v, want %v", ops, want)
	}
	recs := s.GetTransactionHistory(time.Time{}, time.Time{})
	if last := recs[len(recs)-1]; last.ResyncType != api.DownstreamResync || last.Description != "VPP connected (restarted: true)" {
		t.Errorf("last transaction: %v %q, want the downstream resync described by the request", last.ResyncType, last.Description)
	}
}

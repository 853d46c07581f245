package etcdsource_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func kvMap(t *testing.T, kvs []orchestrator.KV) map[string]orchestrator.KV {
	t.Helper()
	m := map[string]orchestrator.KV{}
	for _, kv := range kvs {
		if _, dup := m[kv.Key]; dup {
			t.Errorf("key %s twice", kv.Key)
		}
		m[kv.Key] = kv
	}
	return m
}

// The first state is read at one revision and given in one Resync, decoded;
// keys of other labels and outside the agent's prefix are not.
func TestInitialResync(t *testing.T) {
	h := newHarness(t)
	h.put(prefix+vppIfKey+"loop1", `{"name":"loop1","type":"SOFTWARE_LOOPBACK"}`)
	h.put(prefix+linuxIfKey+"lo1", `{"name":"lo1","type":"LOOPBACK","enabled":true,"ip_addresses":["10.9.0.1/32"]}`)
	h.put(prefix+"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/192.168.1.1", `{"dst_network":"10.0.0.0/8","next_hop_addr":"192.168.1.1"}`)
	// The original agent's spelling of a route without a next hop.
	h.put(prefix+"config/vpp/v2/route/vrf/1/dst/10.2.0.0/16/", `{"type":"DROP","vrf_id":1,"dst_network":"10.2.0.0/16"}`)
	// Not ours.
	h.put("/vnf-agent/vpp2/"+vppIfKey+"other2", vppIf("other2", 0))
	h.put("/vnf-agent/vpp10/"+vppIfKey+"other10", vppIf("other10", 0))
	h.put("/vnf-agent/"+vppIfKey+"other", vppIf("other", 0))
	h.put("/elsewhere/"+vppIfKey+"other", vppIf("other", 0))

	h.run(etcdsource.Options{})
	h.waitSynced()
	calls, _ := h.sink.snapshot()
	if len(calls) != 1 || !calls[0].resync {
		t.Fatalf("calls %v, want one Resync", calls)
	}
	got := kvMap(t, calls[0].kvs)
	want := map[string]proto.Message{
		vppIfKey + "loop1": &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK},
		linuxIfKey + "lo1": &linuxif.Interface{Name: "lo1", Type: linuxif.Interface_LOOPBACK, Enabled: true, IpAddresses: []string{"10.9.0.1/32"}},
		"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/192.168.1.1": &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "192.168.1.1"},
		"config/vpp/v2/route/vrf/1/dst/10.2.0.0/16":               &vppl3.Route{Type: vppl3.Route_DROP, VrfId: 1, DstNetwork: "10.2.0.0/16"},
	}
	if len(got) != len(want) {
		t.Errorf("Resync has %d keys %v, want %d", len(got), calls[0], len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("Resync lacks %s", k)
		case g.Err != nil:
			t.Errorf("%s: %v", k, g.Err)
		case !proto.Equal(g.Value, w):
			t.Errorf("%s: %v, want %v", k, g.Value, w)
		}
	}
	h.waitEtcdState()
}

// Puts and deletes become Changes; a Txn is one Change with all its keys;
// other labels are ignored; route keys are canonical.
func TestChanges(t *testing.T) {
	h := newHarness(t)
	h.run(etcdsource.Options{})
	h.waitSynced()
	if calls, _ := h.sink.snapshot(); len(calls) != 1 || !calls[0].resync || len(calls[0].kvs) != 0 {
		t.Fatalf("calls %v, want one empty Resync", calls)
	}
	lastCall := func() call {
		calls, _ := h.sink.snapshot()
		return calls[len(calls)-1]
	}

	h.put(prefix+vppIfKey+"loop1", vppIf("loop1", 1))
	h.waitEtcdState()
	if c := lastCall(); c.resync || len(c.kvs) != 1 || c.kvs[0].Key != vppIfKey+"loop1" || version(c.kvs[0]) != 1 {
		t.Errorf("after a put: %v", c)
	}
	h.put(prefix+vppIfKey+"loop1", vppIf("loop1", 2))
	h.waitEtcdState()
	h.del(prefix + vppIfKey + "loop1")
	h.waitEtcdState()
	if c := lastCall(); c.resync || len(c.kvs) != 1 || c.kvs[0] != (orchestrator.KV{Key: vppIfKey + "loop1"}) {
		t.Errorf("after a delete: %v, want a Change deleting loop1", c)
	}

	// A transaction: one Change with all its keys.
	h.put(prefix+vppIfKey+"d", vppIf("d", 1))
	h.waitEtcdState()
	before, _ := h.sink.snapshot()
	h.txn(
		clientv3.OpPut(prefix+vppIfKey+"a", vppIf("a", 1)),
		clientv3.OpPut(prefix+vppIfKey+"b", vppIf("b", 1)),
		clientv3.OpPut(prefix+linuxIfKey+"c", `{"name":"c","type":"LOOPBACK"}`),
		clientv3.OpDelete(prefix+vppIfKey+"d"),
		clientv3.OpPut("/vnf-agent/vpp2/"+vppIfKey+"other", vppIf("other", 1)),
	)
	h.waitEtcdState()
	after, _ := h.sink.snapshot()
	if len(after) != len(before)+1 {
		t.Fatalf("the txn gave %v, want one Change", after[len(before):])
	}
	got := kvMap(t, after[len(before)].kvs)
	for _, k := range []string{vppIfKey + "a", vppIfKey + "b", linuxIfKey + "c", vppIfKey + "d"} {
		if _, ok := got[k]; !ok {
			t.Errorf("the txn's Change lacks %s", k)
		}
	}
	if len(got) != 4 || got[vppIfKey+"d"].Value != nil {
		t.Errorf("the txn's Change: %v", after[len(before)])
	}

	// Other labels: never seen.
	h.put("/vnf-agent/vpp10/"+vppIfKey+"other", vppIf("other", 2))
	h.put("/vnf-agent/vpp2/"+vppIfKey+"other", vppIf("other", 3))
	h.put(prefix+vppIfKey+"e", vppIf("e", 1))
	h.waitEtcdState()

	// A route without a next hop, written the original agent's way.
	h.put(prefix+"config/vpp/v2/route/vrf/0/dst/10.3.0.0/16/", `{"type":"DROP","dst_network":"10.3.0.0/16"}`)
	h.waitEtcdState()
	if c := lastCall(); c.kvs[0].Key != "config/vpp/v2/route/vrf/0/dst/10.3.0.0/16" {
		t.Errorf("route key %q, want it canonical", c.kvs[0].Key)
	}
	h.del(prefix + "config/vpp/v2/route/vrf/0/dst/10.3.0.0/16/")
	h.waitEtcdState()

	calls, _ := h.sink.snapshot()
	for _, c := range calls {
		for _, kv := range c.kvs {
			if strings.Contains(kv.Key, "other") {
				t.Errorf("%v: key of another label", c)
			}
		}
	}
}

// The agent's status (check/..., which the agent publishes itself in the
// original's place), its values' statuses among it, is not configuration:
// neither the full read nor the
// watch passes it to the sink, not even as an invalid value, and a
// revision of status keys alone makes no Change.
func TestStatusKeysIgnored(t *testing.T) {
	h := newHarness(t)
	agentKey, pluginKey := etcdstatus.AgentKey(label), etcdstatus.PluginKey(label, "etcd")
	valueKey := etcdstatus.ValueKey(label, vppIfKey+"loop1")
	h.put(agentKey, `{"state":"OK"}`)
	h.put(pluginKey, `{"state":"OK"}`)
	h.put(valueKey, `{"value":{"key":"`+vppIfKey+`loop1","state":"PENDING"}}`)
	h.put(prefix+vppIfKey+"loop1", vppIf("loop1", 1))
	h.run(etcdsource.Options{})
	h.waitSynced()
	calls, _ := h.sink.snapshot()
	if got := kvMap(t, calls[0].kvs); len(got) != 1 || got[vppIfKey+"loop1"].Value == nil {
		t.Errorf("the first Resync: %v, want loop1 only", calls[0])
	}

	h.put(agentKey, `{"state":"ERROR"}`)
	h.del(pluginKey)
	h.put(valueKey, `{"value":{"key":"`+vppIfKey+`loop1","state":"CONFIGURED"}}`)
	h.put(etcdstatus.ValueKey(label, vppIfKey+"loop2"), `{"value":{"key":"`+vppIfKey+`loop2","state":"PENDING"}}`)
	h.put(prefix+vppIfKey+"loop2", vppIf("loop2", 1))
	h.sink.waitFor(t, "loop2", func() bool { _, ok := h.sink.state[vppIfKey+"loop2"]; return ok })
	calls, _ = h.sink.snapshot()
	if len(calls) != 2 || len(calls[1].kvs) != 1 {
		t.Errorf("calls %v, want the Resync and one Change of loop2", calls)
	}
	for _, c := range calls {
		for _, kv := range c.kvs {
			if strings.HasPrefix(kv.Key, etcdstatus.KeyPrefix) {
				t.Errorf("%v passes the status key %s", c, kv.Key)
			}
		}
	}
}

// A burst of revisions arriving while a Change runs is coalesced into one
// Change with the last event of each key; a key created and deleted within
// the burst is left out.
func TestCoalesce(t *testing.T) {
	h := newHarness(t)
	h.put(prefix+vppIfKey+"b", vppIf("b", 1))
	h.run(etcdsource.Options{BatchMaxDelay: time.Second})
	h.waitSynced()

	release := h.sink.holdNext(false)
	h.put(prefix+vppIfKey+"x", vppIf("x", 1))
	h.sink.waitEntered(t)
	for i := 1; i <= 5; i++ {
		h.put(prefix+vppIfKey+"a", vppIf("a", i))
	}
	h.del(prefix + vppIfKey + "b")
	h.put(prefix+vppIfKey+"tmp", vppIf("tmp", 1)) // created and deleted: left out
	h.del(prefix + vppIfKey + "tmp")
	h.txn(clientv3.OpPut(prefix+vppIfKey+"c", vppIf("c", 1)), clientv3.OpPut(prefix+vppIfKey+"d", vppIf("d", 1)))
	h.put(prefix+vppIfKey+"a", vppIf("a", 6))
	want := etcdState(t, h.cli)
	release()
	h.sink.waitState(t, want)

	calls, _ := h.sink.snapshot()
	if len(calls) != 3 {
		t.Fatalf("calls %v, want the Resync, the held Change and one Change", calls)
	}
	c := calls[2]
	var keys []string
	for _, kv := range c.kvs {
		keys = append(keys, strings.TrimPrefix(kv.Key, vppIfKey))
	}
	if got := strings.Join(keys, " "); got != "b c d a" {
		t.Errorf("coalesced keys %q, want %q (in the order of their last events)", got, "b c d a")
	}
	if kv := c.kvs[len(c.kvs)-1]; version(kv) != 6 {
		t.Errorf("a has version %d, want the last, 6", version(kv))
	}
}

// A lone put after a quiet spell goes to the sink at once, in a Change of
// its own: it does not wait BatchMaxDelay (an hour here) for others that
// may never come. A put that follows a Change closely waits to be
// coalesced (TestCoalesce).
func TestLonePutGoesAtOnce(t *testing.T) {
	h := newHarness(t)
	h.run(etcdsource.Options{BatchMaxDelay: time.Hour})
	h.waitSynced()
	h.put(prefix+vppIfKey+"a", vppIf("a", 1))
	h.sink.waitState(t, etcdState(t, h.cli))
	calls, _ := h.sink.snapshot()
	if len(calls) != 2 || len(calls[1].kvs) != 1 {
		t.Errorf("calls %v, want the Resync and one Change of the put", calls)
	}
}

// 10,000 keys in 10 transactions of 1,000: few Changes, none above 1,000
// keys, every key once, in order (over an established watch: waitWatching).
func TestBurst(t *testing.T) {
	h := newHarness(t)
	h.run(etcdsource.Options{})
	h.waitSynced()
	base := h.waitWatching()

	const txns, perTxn = 10, 1000
	var order []string
	for i := range txns {
		ops := make([]clientv3.Op, 0, perTxn)
		for j := range perTxn {
			name := fmt.Sprintf("if%05d", i*perTxn+j)
			order = append(order, vppIfKey+name)
			ops = append(ops, clientv3.OpPut(prefix+vppIfKey+name, vppIf(name, 1)))
		}
		h.txn(ops...)
	}
	h.sink.waitFor(t, "10,000 keys", func() bool { return len(h.sink.state) == txns*perTxn })

	calls, state := h.sink.snapshot()
	var got []string
	changes := 0
	for _, c := range calls[base:] {
		if c.resync {
			t.Fatalf("unexpected %v", c)
		}
		changes++
		if len(c.kvs) > perTxn {
			t.Errorf("%v: more than %d keys", c, perTxn)
		}
		for _, kv := range c.kvs {
			got = append(got, kv.Key)
		}
	}
	t.Logf("%d keys in %d Changes", len(got), changes)
	if changes > 20 {
		t.Errorf("%d Changes for 10 transactions, want few", changes)
	}
	if len(got) != len(order) {
		t.Fatalf("%d keys delivered, want %d", len(got), len(order))
	}
	for i := range order {
		if got[i] != order[i] {
			t.Fatalf("key %d is %s, want %s", i, got[i], order[i])
		}
	}
	for _, k := range order {
		if name := strings.TrimPrefix(k, vppIfKey); state[k].Value.(*vppif.Interface).GetName() != name {
			t.Fatalf("%s: %v", k, state[k].Value)
		}
	}
	h.waitEtcdState()

	// A second source reads the 10,000 keys (in pages, at one revision).
	sink2 := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	src2 := etcdsource.New(h.cli, sink2, etcdsource.Options{Log: testLog()})
	done := make(chan error, 1)
	go func() { done <- src2.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	select {
	case <-src2.Synced():
	case <-time.After(waitTimeout):
		t.Fatal("the second source did not sync")
	}
	calls2, _ := sink2.snapshot()
	if len(calls2) != 1 || len(calls2[0].kvs) != len(order) {
		t.Fatalf("second source: %v, want a Resync of %d keys", calls2, len(order))
	}
	for i, kv := range calls2[0].kvs {
		if kv.Key != order[i] || kv.Err != nil {
			t.Fatalf("second source: key %d is %v, want %s", i, kv, order[i])
		}
	}
}

// A value that cannot be decoded, or a key of no model, is a KV with an
// error naming the key and the problem; fixing it applies normally.
func TestBadValues(t *testing.T) {
	h := newHarness(t)
	h.put(prefix+vppIfKey+"bad1", `{"name":"bad1","type":"SOFTWARE_LOOPBACK"`)
	h.put(prefix+"config/vpp/v2/unknown/x", `{}`)
	h.put(prefix+vppIfKey+"wrong", vppIf("right", 0))
	h.put(prefix+vppIfKey+"loop1", `{"name":"loop1","type":"NO_SUCH_TYPE"}`)
	h.put(prefix+vppIfKey+"good", vppIf("good", 1))
	h.put(prefix+"/x", `{}`) // not /vnf-agent/<label>/<model key>: key "/x", an error
	h.put(prefix, `{}`)      // no model key at all: ignored

	h.run(etcdsource.Options{})
	h.waitSynced()
	calls, _ := h.sink.snapshot()
	got := kvMap(t, calls[0].kvs)
	for key, problem := range map[string]string{
		vppIfKey + "bad1":         "not a valid",
		"config/vpp/v2/unknown/x": "matches no model",
		vppIfKey + "wrong":        "right",
		vppIfKey + "loop1":        "NO_SUCH_TYPE",
		"/x":                      "is not /vnf-agent/<label>/<model key>",
	} {
		kv, ok := got[key]
		switch {
		case !ok:
			t.Errorf("Resync lacks %s", key)
		case kv.Err == nil || kv.Value != nil:
			t.Errorf("%s: value %v, error %v; want an error", key, kv.Value, kv.Err)
		case !strings.Contains(kv.Err.Error(), key) || !strings.Contains(kv.Err.Error(), problem):
			t.Errorf("%s: error %q, want it to name the key and %q", key, kv.Err, problem)
		default:
			t.Logf("%s: %v", key, kv.Err)
		}
	}
	if kv := got[vppIfKey+"good"]; kv.Err != nil || kv.Value == nil {
		t.Errorf("good: %v", kv)
	}
	if len(got) != 6 {
		t.Errorf("Resync: %v, want 6 keys", calls[0])
	}

	// Fixed: applies.
	h.put(prefix+vppIfKey+"bad1", vppIf("bad1", 1))
	h.waitEtcdState()
	// Broken after the sync: a Change with the error.
	h.put(prefix+vppIfKey+"good", `[1,2`)
	h.waitEtcdState()
	calls, _ = h.sink.snapshot()
	if c := calls[len(calls)-1]; len(c.kvs) != 1 || c.kvs[0].Err == nil || !strings.Contains(c.kvs[0].Err.Error(), vppIfKey+"good") {
		t.Errorf("after breaking good: %v", c)
	}
	h.del(prefix + "config/vpp/v2/unknown/x")
	h.del(prefix + "/x")
	h.del(prefix)
	h.waitEtcdState()
}

// An invalid label: Run fails at once.
func TestBadLabel(t *testing.T) {
	err := etcdsource.New(nil, newSink(), etcdsource.Options{Label: "a/b"}).Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "a/b") {
		t.Errorf("Run: %v, want an error about the label", err)
	}
}

// The source fell behind a compaction (the sink held its first Resync while
// etcd changed and was compacted): it reads everything again and Resyncs,
// deletes included, and watches on.
func TestCompaction(t *testing.T) {
	h := newHarness(t)
	h.put(prefix+vppIfKey+"a", vppIf("a", 1))
	h.put(prefix+vppIfKey+"b", vppIf("b", 1))
	release := h.sink.holdNext(true)
	h.run(etcdsource.Options{})
	if c := h.sink.waitEntered(t); len(c.kvs) != 2 {
		t.Fatalf("first Resync %v", c)
	}
	h.put(prefix+vppIfKey+"c", vppIf("c", 1))
	h.put(prefix+vppIfKey+"b", vppIf("b", 2))
	rev := h.del(prefix + vppIfKey + "a")
	if _, err := h.cli.Compact(h.ctx(), rev); err != nil {
		t.Fatal(err)
	}
	release()
	h.waitEtcdState()
	calls, _ := h.sink.snapshot()
	if len(calls) != 2 || !calls[1].resync {
		t.Fatalf("calls %v, want two Resyncs", calls)
	}
	if _, ok := kvMap(t, calls[1].kvs)[vppIfKey+"a"]; ok {
		t.Errorf("the second Resync has the deleted key: %v", calls[1])
	}
	// And it watches on.
	h.put(prefix+vppIfKey+"d", vppIf("d", 1))
	h.del(prefix + vppIfKey + "b")
	h.waitEtcdState()
	calls, _ = h.sink.snapshot()
	for _, c := range calls[2:] {
		if c.resync {
			t.Errorf("unexpected %v", c)
		}
	}
}

// etcd stops and starts again on the same directory and ports while the
// source watches: the source reconnects and catches up, applying nothing
// twice.
func TestEtcdRestart(t *testing.T) {
	h := newHarness(t)
	h.put(prefix+vppIfKey+"a", vppIf("a", 1))
	h.put(prefix+vppIfKey+"b", vppIf("b", 1))
	h.run(etcdsource.Options{})
	h.waitSynced()
	h.put(prefix+vppIfKey+"c", vppIf("c", 1))
	h.waitEtcdState()

	for round := 2; round <= 3; round++ {
		h.etcd.stop()
		h.etcd.start()
		h.put(prefix+vppIfKey+"b", vppIf("b", round))
		h.del(prefix + vppIfKey + "a")
		h.put(prefix+vppIfKey+"a", vppIf("a", round))
		h.put(prefix+vppIfKey+fmt.Sprintf("new%d", round), vppIf(fmt.Sprintf("new%d", round), 1))
		h.txn(clientv3.OpPut(prefix+vppIfKey+"c", vppIf("c", round)), clientv3.OpDelete(prefix+vppIfKey+fmt.Sprintf("new%d", round-1)))
		h.waitEtcdState()
	}
	calls, _ := h.sink.snapshot()
	t.Logf("calls: %v", calls)
	resyncs := 0
	for _, c := range calls {
		if c.resync {
			resyncs++
		}
	}
	if resyncs < 3 {
		t.Errorf("%d Resyncs, want one at the start and one per reconnect", resyncs)
	}
}

// etcd comes back empty (a new data directory on the same ports): its
// revisions start again, so resuming the watch would miss events. The
// source resyncs: the sink loses the old keys and gets the new ones.
func TestEtcdRestartEmpty(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		h.put(prefix+vppIfKey+name, vppIf(name, 1))
	}
	h.run(etcdsource.Options{})
	h.waitSynced()
	h.waitEtcdState()

	h.etcd.stop()
	h.etcd.cfg.Dir = filepath.Join(t.TempDir(), "etcd")
	h.etcd.start()
	// Revision 2 and 3 of the new etcd: the old watch waits for 7.
	h.put(prefix+vppIfKey+"x", vppIf("x", 1))
	h.put(prefix+vppIfKey+"a", vppIf("a", 2))
	h.waitEtcdState()
	h.put(prefix+vppIfKey+"y", vppIf("y", 1))
	h.waitEtcdState()
}

// etcd restarts empty between the source's full read and its watch (the
// sink holds the Resync meanwhile): the watch would be created on the new
// etcd, at a revision it has not reached, and see nothing. The source
// notices the lost connection and reads again.
func TestEtcdRestartEmptyBetweenReadAndWatch(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		h.put(prefix+vppIfKey+name, vppIf(name, 1))
	}
	release := h.sink.holdNext(true)
	h.run(etcdsource.Options{})
	if c := h.sink.waitEntered(t); len(c.kvs) != 5 {
		t.Fatalf("first Resync %v", c)
	}
	h.etcd.stop()
	h.etcd.cfg.Dir = filepath.Join(t.TempDir(), "etcd")
	h.etcd.start()
	// The client is connected to the new etcd before the watch is made.
	h.put(prefix+vppIfKey+"x", vppIf("x", 1))
	h.put(prefix+vppIfKey+"a", vppIf("a", 2))
	release()
	h.waitEtcdState()
	h.put(prefix+vppIfKey+"y", vppIf("y", 1))
	h.waitEtcdState()
}

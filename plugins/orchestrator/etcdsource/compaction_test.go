package etcdsource_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
)

// startCompactingEtcd starts an embedded etcd that compacts revisions older
// than retention.
func startCompactingEtcd(t *testing.T, retention time.Duration) *etcdServer {
	t.Helper()
	ports := freePorts(t, 2)
	s := &etcdServer{t: t, cfg: etcdsource.EmbeddedConfig{
		Dir:                 filepath.Join(t.TempDir(), "etcd"),
		ClientURL:           fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		PeerURL:             fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		Log:                 testLog(),
		CompactionRetention: retention,
	}}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// waitCompacted waits until the revisions before rev are compacted away: a
// read at rev-1 fails with ErrCompacted.
func waitCompacted(t *testing.T, c *clientv3.Client, key string, rev int64) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		_, err := c.Get(ctx, key, clientv3.WithRev(rev-1))
		cancel()
		if errors.Is(err, rpctypes.ErrCompacted) {
			return
		}
		if err != nil {
			t.Fatalf("get %s at revision %d: %v", key, rev-1, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("revision %d of %s still readable after %v: the embedded etcd does not compact", rev-1, key, waitTimeout)
		}
		time.Sleep(50 * time.Millisecond) // polling etcd, not waiting for a duration
	}
}

// The embedded etcd compacts on its own: the revisions a key had before its
// current one are gone after the retention, the current value stays, and a
// watch open from the current revision goes on across the compaction.
func TestEmbeddedCompacts(t *testing.T) {
	s := startCompactingEtcd(t, time.Second)
	c := newClient(t, s.e.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var revs []int64
	for i := range 3 {
		resp, err := c.Put(ctx, "k", fmt.Sprintf("v%d", i))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, resp.Header.Revision)
	}
	last := revs[len(revs)-1]
	watch := c.Watch(ctx, "k", clientv3.WithRev(last+1))
	if _, err := c.Get(ctx, "k", clientv3.WithRev(revs[0])); err != nil {
		t.Fatalf("revision %d read before any compaction: %v", revs[0], err)
	}
	waitCompacted(t, c, "k", last)
	resp, err := c.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v2" {
		t.Fatalf("current value after compaction: %v %v", resp, err)
	}
	if _, err := c.Put(ctx, "k", "v3"); err != nil {
		t.Fatal(err)
	}
	select {
	case wr := <-watch:
		if err := wr.Err(); err != nil || len(wr.Events) != 1 || string(wr.Events[0].Kv.Value) != "v3" {
			t.Fatalf("watch after compaction: %+v %v", wr, err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the watch open across the compaction got no event")
	}
}

// The Source on an embedded etcd that compacts: its watch is at the head,
// so compactions never cut it: one Resync, then every change as a Change.
func TestSourceAcrossAutoCompaction(t *testing.T) {
	s := startCompactingEtcd(t, time.Second)
	h := &harness{t: t, etcd: s, cli: newClient(t, s.e.ClientURL()), sink: newSink()}
	h.put(prefix+vppIfKey+"a", vppIf("a", 1))
	h.run(etcdsource.Options{})
	h.waitSynced()
	h.put(prefix+vppIfKey+"b", vppIf("b", 1))
	rev := h.put(prefix+vppIfKey+"b", vppIf("b", 2))
	h.waitEtcdState()
	waitCompacted(t, h.cli, prefix+vppIfKey+"b", rev)
	h.put(prefix+vppIfKey+"c", vppIf("c", 1))
	h.del(prefix + vppIfKey + "a")
	h.waitEtcdState()
	calls, _ := h.sink.snapshot()
	for i, c := range calls {
		if c.resync != (i == 0) {
			t.Errorf("call %d %v: want one Resync, then Changes", i, c)
		}
	}
}

// A retention under a second is refused (etcd would compact every tenth of
// it), naming the value; a negative one turns compaction off.
func TestEmbeddedCompactionRetentionChecked(t *testing.T) {
	_, err := etcdsource.NewEmbedded(etcdsource.EmbeddedConfig{Dir: t.TempDir(), CompactionRetention: 10 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "compaction retention 10ms") {
		t.Errorf("retention 10ms: error %v, want one naming it", err)
	}
	if _, err := etcdsource.NewEmbedded(etcdsource.EmbeddedConfig{Dir: t.TempDir(), CompactionRetention: -1}); err != nil {
		t.Errorf("negative retention (off): %v", err)
	}
}

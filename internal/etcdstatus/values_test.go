package etcdstatus_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	statuspb "github.com/netagent-io/netagent/proto/status"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// The scheduler of these tests has one descriptor, of the keys under
// valuePrefix, whose values are strings of space-separated words:
// "needs=<key>" makes the value depend on that key (PENDING until it
// exists), "addr=<a>" derives the value <key>/address/<a>. Its SB is
// nothing: Create and Delete succeed. (The scheduler's own mocksb is
// internal to plugins/kvscheduler.)
const (
	valueDescriptor = "test-value"
	valuePrefix     = "test/"
)

func words(value proto.Message, prefix string) []string {
	var out []string
	for _, w := range strings.Fields(value.(*wrapperspb.StringValue).GetValue()) {
		if rest, ok := strings.CutPrefix(w, prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

func newScheduler(t testing.TB) *kvscheduler.Scheduler {
	t.Helper()
	s := kvscheduler.New(kvscheduler.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(s.Close)
	err := s.RegisterKVDescriptor(&api.KVDescriptor{
		Name:        valueDescriptor,
		NBKeyPrefix: valuePrefix,
		KeySelector: func(key string) bool { return strings.HasPrefix(key, valuePrefix) },
		Create:      func(context.Context, string, proto.Message) (any, error) { return nil, nil },
		Delete:      func(context.Context, string, proto.Message, any) error { return nil },
		Dependencies: func(_ string, value proto.Message) []api.Dependency {
			var deps []api.Dependency
			for _, key := range words(value, "needs=") {
				deps = append(deps, api.Dependency{Label: key, Key: key})
			}
			return deps
		},
		DerivedValues: func(key string, value proto.Message) []api.KeyValuePair {
			var derived []api.KeyValuePair
			for _, a := range words(value, "addr=") {
				derived = append(derived, api.KeyValuePair{Key: key + "/address/" + a, Value: wrapperspb.String("address")})
			}
			return derived
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// commit applies a transaction of key, value pairs ("" value: delete).
func commit(t testing.TB, s *kvscheduler.Scheduler, kvs ...string) {
	t.Helper()
	txn := s.StartNBTransaction()
	for i := 0; i < len(kvs); i += 2 {
		var value proto.Message
		if kvs[i+1] != "" {
			value = wrapperspb.String(kvs[i+1])
		}
		txn.SetValue(kvs[i], value)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := txn.Commit(ctx, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
}

// valueStatus reads the published status of a value (nil: no key).
func valueStatus(t *testing.T, c *clientv3.Client, key string) (published, *api.BaseValueStatus) {
	t.Helper()
	p := get(t, c, etcdstatus.ValueKey(label, key))
	if p.raw == "" {
		return p, nil
	}
	var st api.BaseValueStatus
	if err := protojson.Unmarshal([]byte(p.raw), &st); err != nil {
		t.Fatalf("the status of %s %q: %v", key, p.raw, err)
	}
	return p, &st
}

// waitValue waits until the published status of a value satisfies cond
// (given nil when there is no key).
func waitValue(t *testing.T, c *clientv3.Client, key, what string, cond func(*api.BaseValueStatus) bool) (published, *api.BaseValueStatus) {
	t.Helper()
	var p published
	var st *api.BaseValueStatus
	testsupport.Eventually(t, waitTimeout, func() error {
		p, st = valueStatus(t, c, key)
		if !cond(st) {
			return fmt.Errorf("%s %s: %q", key, what, p.raw)
		}
		return nil
	})
	return p, st
}

func inState(state api.ValueState) func(*api.BaseValueStatus) bool {
	return func(st *api.BaseValueStatus) bool { return st.GetValue().GetState() == state }
}

func absent(st *api.BaseValueStatus) bool { return st == nil }

// countValues is how many value statuses the agent has in etcd.
func countValues(t testing.TB, c *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := c.Get(ctx, etcdstatus.ValueKeyPrefix(label), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestValueStatuses: with Options.Values every value's status is published
// under its key, in the JSON of BaseValueStatus (its derived values in
// it), under the agent status's lease; those that exist before the
// publisher starts (the listing) as those that come later (the watch). A
// change of state is written (PENDING -> CONFIGURED), a value removed has
// its key deleted.
func TestValueStatuses(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	sched := newScheduler(t)
	commit(t, sched, "test/a", "needs=test/b")
	startPublisher(t, c, starting, etcdstatus.Options{Values: sched, RefreshInterval: time.Hour})

	if k := etcdstatus.ValueKey(label, "test/a"); k != "/vnf-agent/vpp7/check/status/v1/value/test/a" {
		t.Errorf("value key %s", k)
	}
	agent, _ := waitAgent(t, c, "the first status", func(published, *statuspb.AgentStatus) bool { return true })
	pa, st := waitValue(t, c, "test/a", "PENDING", inState(api.ValueStatePending))
	t.Logf("%s: %s", etcdstatus.ValueKey(label, "test/a"), pa.raw)
	for _, field := range []string{`"key":\s*"test/a"`, `"state":\s*"PENDING"`, `"descriptor_name":\s*"test-value"`, `"details":\s*\[\s*"test/b"`} {
		if !regexp.MustCompile(field).MatchString(pa.raw) {
			t.Errorf("the JSON %s lacks %s", pa.raw, field)
		}
	}
	if regexp.MustCompile(`"descriptorName"|"derived_values"`).MatchString(pa.raw) {
		t.Errorf("the JSON %s: proto names only, no empty list", pa.raw)
	}
	if pa.lease != agent.lease || pa.lease == 0 {
		t.Errorf("test/a under lease %x, the agent's status under %x", pa.lease, agent.lease)
	}

	// test/b comes, with a derived value: test/a is CONFIGURED now.
	commit(t, sched, "test/b", "addr=10.0.0.1")
	waitValue(t, c, "test/a", "CONFIGURED", inState(api.ValueStateConfigured))
	pb, st := waitValue(t, c, "test/b", "CONFIGURED with its derived value", func(st *api.BaseValueStatus) bool {
		return st.GetValue().GetState() == api.ValueStateConfigured && len(st.GetDerivedValues()) == 1
	})
	t.Logf("%s: %s", etcdstatus.ValueKey(label, "test/b"), pb.raw)
	if d := st.GetDerivedValues()[0]; d.GetKey() != "test/b/address/10.0.0.1" || !d.GetDerived() || d.GetState() != api.ValueStateConfigured {
		t.Errorf("test/b's derived value: %v", d)
	}
	if p, _ := valueStatus(t, c, "test/b/address/10.0.0.1"); p.raw != "" {
		t.Errorf("a derived value has a key of its own: %s", p.raw)
	}

	// test/b goes: its key goes, test/a is PENDING again.
	commit(t, sched, "test/b", "")
	waitValue(t, c, "test/b", "deleted", absent)
	waitValue(t, c, "test/a", "PENDING again", inState(api.ValueStatePending))
	commit(t, sched, "test/a", "")
	waitValue(t, c, "test/a", "deleted", absent)
	if n := countValues(t, c); n != 0 {
		t.Errorf("%d value statuses left, want none", n)
	}
	if agent := get(t, c, etcdstatus.AgentKey(label)); agent.raw == "" {
		t.Error("the agent's status is gone")
	}
}

// TestValueStatusesOff: without Options.Values no value's status is
// published.
func TestValueStatusesOff(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	sched := newScheduler(t)
	commit(t, sched, "test/a", "needs=test/b")
	p := startPublisher(t, c, starting, etcdstatus.Options{})
	waitAgent(t, c, "the first status", func(published, *statuspb.AgentStatus) bool { return true })
	commit(t, sched, "test/b", "addr=10.0.0.1")
	calls := p.rep.callCount()
	testsupport.Eventually(t, waitTimeout, func() error {
		if n := p.rep.callCount(); n < calls+10 {
			return fmt.Errorf("%d reports since", n-calls)
		}
		return nil
	})
	if n := countValues(t, c); n != 0 {
		t.Errorf("%d value statuses published with the option off", n)
	}
}

// TestValueStatusesAfterTheLeaseWent: the lease revoked behind the
// publisher's back takes the values' statuses with the agent's; under the
// new lease they come back, listed from the scheduler, with what changed
// meanwhile.
func TestValueStatusesAfterTheLeaseWent(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	sched := newScheduler(t)
	commit(t, sched, "test/a", "needs=test/b", "test/c", "")
	startPublisher(t, c, starting, etcdstatus.Options{Values: sched, RefreshInterval: time.Hour})
	first, _ := waitValue(t, c, "test/a", "PENDING", inState(api.ValueStatePending))
	if _, err := c.Revoke(context.Background(), first.lease); err != nil {
		t.Fatal(err)
	}
	if n := countValues(t, c); n != 0 {
		t.Fatalf("%d value statuses outlived their revoked lease", n)
	}
	commit(t, sched, "test/c", "x")
	again, _ := waitValue(t, c, "test/a", "back", inState(api.ValueStatePending))
	waitValue(t, c, "test/c", "back", inState(api.ValueStateConfigured))
	agent, _ := waitAgent(t, c, "the agent's status back", func(published, *statuspb.AgentStatus) bool { return true })
	if again.lease == first.lease || again.lease != agent.lease {
		t.Errorf("test/a back under lease %x (the revoked one %x), the agent's status under %x", again.lease, first.lease, agent.lease)
	}
}

// TestValueStatusesWhileEtcdIsAway: while etcd is away the scheduler goes
// on (its transactions do not wait for the publisher); an empty etcd at the
// same URL gets the statuses as they are then, and not those of values
// removed meanwhile.
func TestValueStatusesWhileEtcdIsAway(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	sched := newScheduler(t)
	startPublisher(t, c, starting, etcdstatus.Options{Values: sched, RefreshInterval: time.Hour})
	commit(t, sched, "test/a", "needs=test/b", "test/gone", "x")
	waitValue(t, c, "test/gone", "CONFIGURED", inState(api.ValueStateConfigured))

	etcd.stop()
	for i := range 200 {
		commit(t, sched, fmt.Sprintf("test/v%03d", i), "x")
	}
	commit(t, sched, "test/b", "", "test/gone", "")
	commit(t, sched, "test/b", "y")
	etcd.cfg.Dir = filepath.Join(t.TempDir(), "empty")
	etcd.start()
	waitValue(t, c, "test/a", "CONFIGURED in the new etcd", inState(api.ValueStateConfigured))
	testsupport.Eventually(t, waitTimeout, func() error {
		if n := countValues(t, c); n != 202 {
			return fmt.Errorf("%d value statuses, want 202", n)
		}
		return nil
	})
	if p, _ := valueStatus(t, c, "test/gone"); p.raw != "" {
		t.Errorf("the status of a value removed while etcd was away: %s", p.raw)
	}
}

// TestValueTxnOpsAboveTheServers: a ValueTxnOps above the server's
// --max-txn-ops (128 by default) is halved until etcd takes the
// transactions; every status is published.
func TestValueTxnOpsAboveTheServers(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	sched := newScheduler(t)
	var kvs []string
	for i := range 300 {
		kvs = append(kvs, fmt.Sprintf("test/v%03d", i), "x")
	}
	commit(t, sched, kvs...)
	p := startPublisher(t, c, starting, etcdstatus.Options{Values: sched, ValueTxnOps: 500, RefreshInterval: time.Hour})
	testsupport.Eventually(t, waitTimeout, func() error {
		if n := countValues(t, c); n != 300 {
			return fmt.Errorf("%d value statuses, want 300", n)
		}
		return nil
	})
	if log := p.log.String(); !strings.Contains(log, "txn_ops=125") || strings.Contains(log, "cannot publish") {
		t.Errorf("want the transactions halved to 125 operations, without a failure:\n%s", log)
	}
}

// burstSize is the burst of TestValueBurstIsBatched and
// BenchmarkValueBurst.
const burstSize = 10_000

// burst commits burstSize values (delete: removes them) in one transaction
// and waits until etcd has all their statuses (none); it returns the etcd
// revisions it took: one per etcd transaction.
func burst(t testing.TB, c *clientv3.Client, sched *kvscheduler.Scheduler, remove bool) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	before, err := c.Get(ctx, "none")
	if err != nil {
		t.Fatal(err)
	}
	kvs := make([]string, 0, 2*burstSize)
	for i := range burstSize {
		value := "x"
		if remove {
			value = ""
		}
		kvs = append(kvs, fmt.Sprintf("test/burst/%05d", i), value)
	}
	commit(t, sched, kvs...)
	want := int64(burstSize)
	if remove {
		want = 0
	}
	testsupport.Eventually(t, waitTimeout, func() error {
		if n := countValues(t, c); n != want {
			return fmt.Errorf("%d value statuses, want %d", n, want)
		}
		return nil
	})
	after, err := c.Get(ctx, "none")
	if err != nil {
		t.Fatal(err)
	}
	return after.Header.Revision - before.Header.Revision
}

// TestValueBurstIsBatched: a burst of 10k values is written in about
// 10k/ValueTxnOps etcd transactions (each one revision), not 10k; the
// removal as well.
func TestValueBurstIsBatched(t *testing.T) {
	etcd := startEtcd(t)
	c := newClient(t, etcd.e.ClientURL())
	sched := newScheduler(t)
	startPublisher(t, c, starting, etcdstatus.Options{Values: sched, RefreshInterval: time.Hour})
	waitAgent(t, c, "the first status", func(published, *statuspb.AgentStatus) bool { return true })

	// At least ceil(10000/128) = 79; the watch may split the burst in a few
	// more (and the agent's status may be written meanwhile).
	const most = 2 * (burstSize + etcdstatus.DefaultValueTxnOps - 1) / etcdstatus.DefaultValueTxnOps
	for _, remove := range []bool{false, true} {
		start := time.Now()
		revs := burst(t, c, sched, remove)
		t.Logf("%d values (remove %v): %d etcd transactions, %v", burstSize, remove, revs, time.Since(start).Round(time.Millisecond))
		if revs > most {
			t.Errorf("%d values (remove %v) took %d etcd transactions, want at most %d", burstSize, remove, revs, most)
		}
	}
}

// BenchmarkValueBurst: one op is a transaction creating 10k values in the
// scheduler until their statuses are in etcd, then one removing them until
// their statuses are gone (the embedded etcd, the scheduler without SB);
// txns/op is the etcd transactions it took.
//
//	go test -run '^$' -bench ValueBurst ./internal/etcdstatus
func BenchmarkValueBurst(b *testing.B) {
	etcd := startEtcd(b)
	c := newClient(b, etcd.e.ClientURL())
	sched := newScheduler(b)
	startPublisher(b, c, starting, etcdstatus.Options{Values: sched, RefreshInterval: time.Hour})
	var txns int64
	for b.Loop() {
		txns += burst(b, c, sched, false)
		txns += burst(b, c, sched, true)
	}
	b.ReportMetric(float64(txns)/float64(b.N), "txns/op")
}

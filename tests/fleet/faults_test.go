package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/netagent-io/netagent/tests/etcdcluster"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// settleTimeout bounds the wait for agents to catch up after a fault (an
// agent whose etcd came back reconnects within its backoff, at most 5 s).
const settleTimeout = 60 * time.Second

// noticeTimeout bounds the time an agent takes to notice that its etcd
// member is gone or cut off: the issue asks for seconds. With the test
// cluster's 500 ms election timeout etcd ends a require-leader watch about
// 2 s after its member lost the leader; a hung member is noticed within
// two progress intervals.
const noticeTimeout = 10 * time.Second

// world is a cluster, agents on it, a writer and the history of its
// writes.
type world struct {
	t      *testing.T
	c      *etcdcluster.Cluster
	cli    *clientv3.Client
	hist   *History
	seq    atomic.Uint32
	agents []*Agent
	logs   map[string]*testsupport.SyncBuffer
	// names counts the values written per label (each name written once
	// per phase: see put).
	names map[string]int
	// churned are the labels churn wrote to.
	churned map[string]bool
	// keepAliveTimeout is given to the agents started next (0: the
	// daemon's).
	keepAliveTimeout time.Duration
}

func newWorld(t *testing.T) *world {
	t.Helper()
	if testing.Short() {
		t.Skip("a 3-member etcd cluster: not in -short")
	}
	c := etcdcluster.Start(t, etcdcluster.Options{})
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, c: c, cli: cli, hist: RecordHistory(t, cli, resp.Header.Revision),
		logs: map[string]*testsupport.SyncBuffer{}, names: map[string]int{}, churned: map[string]bool{}}
}

// agent starts an agent labelled label connected to the members given
// (all when none).
func (w *world) agent(label string, progress time.Duration, members ...int) *Agent {
	w.t.Helper()
	eps := w.c.Endpoints()
	if len(members) > 0 {
		eps = nil
		for _, i := range members {
			eps = append(eps, w.c.Members[i].Endpoint())
		}
	}
	buf := &testsupport.SyncBuffer{}
	w.logs[label] = buf
	a := StartAgent(w.t, AgentOptions{Label: label, Endpoints: eps, ProgressInterval: progress, KeepAliveTimeout: w.keepAliveTimeout,
		Log: slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	w.agents = append(w.agents, a)
	return a
}

// put writes a new value of label (a name never written before) and
// returns its name; update writes a new value of an existing name; del
// deletes one. Each waits until etcd applied the write; a write whose
// answer was lost is read back rather than written twice.
func (w *world) put(label string) string {
	w.t.Helper()
	w.names[label]++
	name := fmt.Sprintf("if%d", w.names[label])
	w.update(label, name)
	return name
}

func (w *world) update(label, name string) {
	w.t.Helper()
	seq := w.seq.Add(1)
	key, value := EtcdKey(label, name), Value(name, seq)
	w.write(key, func(ctx context.Context) error {
		_, err := w.cli.Put(ctx, key, value)
		return err
	}, func(kv []byte) bool { return string(kv) == value })
}

func (w *world) del(label, name string) {
	w.t.Helper()
	key := EtcdKey(label, name)
	w.write(key, func(ctx context.Context) error {
		_, err := w.cli.Delete(ctx, key)
		return err
	}, func(kv []byte) bool { return kv == nil })
}

func (w *world) write(key string, do func(context.Context) error, landed func([]byte) bool) {
	w.t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := do(ctx)
		cancel()
		if err == nil {
			return
		}
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		resp, gerr := w.cli.Get(ctx, key)
		cancel()
		if gerr == nil {
			var v []byte
			if len(resp.Kvs) > 0 {
				v = resp.Kvs[0].Value
			}
			if landed(v) {
				return
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("writing %s: %v", key, err)
		}
	}
}

// writeVia makes the writes through a client of the members given.
func (w *world) writeVia(members ...int) { w.cli = w.c.Client(members...) }

// churn puts and deletes the values c0 to c9 of label at random, as fast
// as the cluster takes them, through a client of the members given (all
// when none), until the returned stop is called; stop returns the number
// of writes that succeeded (etcd's history has every one that was
// applied, whatever the client saw). The label's agent is then checked
// without exact: a value written again before the agent saw it is
// superseded, not lost.
func (w *world) churn(label string, members ...int) (stop func() int) {
	w.t.Helper()
	w.churned[label] = true
	cli := w.c.Client(members...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 20))
	go func() {
		n := 0
		defer func() { done <- n }()
		for ctx.Err() == nil {
			name := fmt.Sprintf("c%d", rng.IntN(10))
			key := EtcdKey(label, name)
			wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
			var err error
			if rng.IntN(4) == 0 {
				_, err = cli.Delete(wctx, key)
			} else {
				_, err = cli.Put(wctx, key, Value(name, w.seq.Add(1)))
			}
			wcancel()
			if err == nil {
				n++
			}
		}
	}()
	return func() int {
		cancel()
		return <-done
	}
}

// rev is the cluster's current revision.
func (w *world) rev() int64 {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := w.cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.Header.Revision
}

// settle waits until every agent is ready, not degraded, and holds what
// etcd holds for its label.
func (w *world) settle() {
	w.t.Helper()
	if err := w.hist.WaitRev(w.rev(), settleTimeout); err != nil {
		w.t.Fatal(err)
	}
	for _, a := range w.agents {
		if ok, diff := a.SB.WaitFor(Final(w.hist.Writes(a.Label)), settleTimeout); !ok {
			w.t.Fatalf("agent %s did not catch up within %v: %s\n%s", a.Label, settleTimeout, diff, testsupport.Tail(w.logs[a.Label].String(), 30))
		}
		testsupport.Eventually(w.t, settleTimeout, func() error {
			if !a.Ready() {
				return fmt.Errorf("agent %s not ready", a.Label)
			}
			if d := a.Degraded(); len(d) > 0 {
				return fmt.Errorf("agent %s degraded: %v", a.Label, d)
			}
			return nil
		})
	}
}

// check runs Check for every agent (exactly once for all but the agents
// of churned labels: see churn), with the southbound's own refusals and
// the history's problems.
func (w *world) check(exact bool) {
	w.t.Helper()
	for _, e := range w.hist.Errors() {
		w.t.Error(e)
	}
	for _, a := range w.agents {
		exact := exact && !w.churned[a.Label]
		writes := w.hist.Writes(a.Label)
		for _, v := range a.SB.Violations() {
			w.t.Errorf("agent %s: southbound refused: %s", a.Label, v)
		}
		for _, v := range Check(writes, a.SB.Ops(), exact) {
			w.t.Errorf("agent %s: %s", a.Label, v)
		}
		w.t.Logf("agent %s: %d writes, %d operations", a.Label, len(writes), len(a.SB.Ops()))
	}
}

// noticed waits until agent a reports itself degraded (what /readyz says)
// and returns how long that took, failing after noticeTimeout.
func (w *world) noticed(a *Agent, since time.Time) time.Duration {
	w.t.Helper()
	testsupport.Eventually(w.t, noticeTimeout, func() error {
		if len(a.Degraded()) == 0 {
			return fmt.Errorf("agent %s did not notice the fault (connection %+v)\n%s", a.Label, a.Source.Connection(), testsupport.Tail(w.logs[a.Label].String(), 30))
		}
		return nil
	})
	took := time.Since(since)
	w.t.Logf("agent %s degraded after %v: %s", a.Label, took.Round(time.Millisecond), strings.Join(a.Degraded(), "; "))
	return took
}

// stillDegraded fails when agent a is not degraded: the fault still
// lasts.
func (w *world) stillDegraded(a *Agent) {
	w.t.Helper()
	if d := a.Degraded(); len(d) == 0 {
		w.t.Errorf("agent %s is not degraded while its member is away (connection %+v)", a.Label, a.Source.Connection())
	}
}

// before writes the values each agent has before the fault and waits
// until the agents hold them.
func (w *world) before(n int) {
	w.t.Helper()
	for _, a := range w.agents {
		for range n {
			w.put(a.Label)
		}
	}
	w.settle()
}

// during makes the writes of a fault, for every agent: new values, new
// values of existing ones, deletes; each name written once.
func (w *world) during(existing int) {
	w.t.Helper()
	for _, a := range w.agents {
		for range 10 {
			w.put(a.Label)
		}
		for i := 1; i <= existing; i++ {
			name := fmt.Sprintf("if%d", i)
			if i%3 == 0 {
				w.del(a.Label, name)
			} else {
				w.update(a.Label, name)
			}
		}
	}
}

func TestMemberOfTheAgentStops(t *testing.T) {
	w := newWorld(t)
	one := w.agent("on-m0", 0, 0)
	w.agent("on-all", 0)
	w.before(12)

	start := time.Now()
	w.c.Stop(0)
	t.Logf("member 0 stopped in %v", time.Since(start).Round(time.Millisecond))
	w.noticed(one, start)
	w.during(12)
	w.stillDegraded(one)
	w.c.Restart(0)
	w.settle()
	w.check(true)
}

func TestLeaderLost(t *testing.T) {
	w := newWorld(t)
	lead := w.c.Leader()
	one := w.agent("on-leader", 0, lead)
	w.agent("on-all", 0)
	w.agent("churned", 0)
	w.before(12)

	stop := w.churn("churned")
	start := time.Now()
	w.c.Kill(lead)
	w.noticed(one, start)
	if now := w.c.Leader(); now == lead {
		t.Fatalf("member %d still leads after it was killed", lead)
	}
	w.during(12)
	w.stillDegraded(one)
	w.c.Restart(lead)
	t.Logf("churn: %d writes", stop())
	w.settle()
	w.check(true)
}

func TestMemberCutOff(t *testing.T) {
	w := newWorld(t)
	cut := (w.c.Leader() + 1) % len(w.c.Members) // a follower
	one := w.agent("on-cut", 0, cut)
	w.agent("on-all", 0)
	w.agent("churned", 0, cut)
	w.before(12)

	stop := w.churn("churned", w.c.Others(cut)...)
	start := time.Now()
	w.c.Isolate(cut)
	w.noticed(one, start)
	w.writeVia(w.c.Others(cut)...)
	w.during(12)
	w.stillDegraded(one)
	if got := one.SB.State(); len(got) != 12 {
		t.Errorf("the agent on the member cut off applied changes the member cannot have: %d values, want 12", len(got))
	}
	w.c.Heal(cut)
	t.Logf("churn: %d writes", stop())
	w.settle()

	w.check(true)
}

func TestClusterRestarts(t *testing.T) {
	w := newWorld(t)
	a := w.agent("a", 0)
	b := w.agent("b", 0, 1)
	w.before(12)

	start := time.Now()
	w.c.StopAll()
	w.noticed(a, start)
	w.noticed(b, start)
	w.c.StartAll()
	// Written while the agents reconnect (their backoff is up to 5 s).
	w.during(12)
	w.settle()
	w.check(true)
}

func TestHungMemberNoticed(t *testing.T) {
	w := newWorld(t)
	one := w.agent("on-hung", time.Second, 2)
	w.agent("on-all", time.Second)
	w.before(12)

	start := time.Now()
	w.c.Members[2].Hold()
	w.noticed(one, start)
	if c := one.Source.Connection(); !strings.Contains(c.Error, "sent nothing") {
		t.Errorf("the error does not say the member is silent: %q", c.Error)
	}
	w.during(12)
	w.stillDegraded(one)
	w.c.Members[2].Release()
	w.settle()
	w.check(true)
}

// TestCompactionWhileLagging holds the connection of an agent's member
// while enough is written for etcd to stop sending to the agent's watch
// (its flow-control window and buffers full: etcd moves the watcher aside
// and catches it up from its store later), compacts the history the
// watcher still needs and lets the connection go: etcd can only tell the
// watch that its revisions are compacted, and the agent must read
// everything again, applying each change once.
func TestCompactionWhileLagging(t *testing.T) {
	w := newWorld(t)
	// Without progress requests, and with a keepalive timeout longer than
	// the writes take on a loaded machine (25 s seen, the daemon's client
	// gives up after 15): the agent must not give up on the watch before
	// etcd tells it of the compaction.
	w.keepAliveTimeout = 2 * time.Minute
	lag := w.agent("lagging", -1, 2)
	w.keepAliveTimeout = 0
	w.agent("on-all", 0)
	w.before(12)

	w.c.Members[2].Hold()
	w.during(12)
	// etcd sends a watch the events of its prefix only: the bulk goes to
	// the agent's own label, under names never written before, with large
	// values (25 MB in all: 6,000 addresses each), within the lagging
	// client's keepalive (above), which must not give up on the held
	// connection first.
	var addrs []string
	for i := range 6000 {
		addrs = append(addrs, fmt.Sprintf(`"10.%d.%d.1/32"`, i/256, i%256))
	}
	pad := `"enabled":true,"ip_addresses":[` + strings.Join(addrs, ",") + `]`
	for i := range 250 {
		name := fmt.Sprintf("bulk%d", i)
		seq := w.seq.Add(1)
		value := strings.Replace(Value(name, seq), `"enabled":true`, pad, 1)
		key := EtcdKey(lag.Label, name)
		w.write(key, func(ctx context.Context) error {
			_, err := w.cli.Put(ctx, key, value)
			return err
		}, func(v []byte) bool { return string(v) == value })
	}
	rev := w.rev()
	w.c.Compact(context.Background(), w.cli, rev)
	w.c.Members[2].Release()
	w.settle()
	w.check(true)
	if log := w.logs[lag.Label].String(); !strings.Contains(log, "fell behind a compaction") {
		t.Errorf("the agent's watch was not told of the compaction (the test did not make it lag):\n%s", testsupport.Tail(log, 20))
	}
}

package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/tests/etcdcluster"
	"github.com/netagent-io/netagent/tests/testsupport"
)

// BenchmarkFleet runs many agents in this process on one 3-member etcd
// cluster (tests/etcdcluster), each an Agent with its own label, its own
// etcd client (through the cluster's proxies, to all three members), the
// status publisher on as deployments run it, and a simulated southbound
// holding its values. It measures how long a put takes to be CONFIGURED
// while all of them watch, and what they cost etcd. The sub-benchmarks are
// agents=N/values=V/status-values=off|on (select one with an anchored
// pattern: -bench 'Fleet/^agents=10$/'); one round is one run of the whole
// workload (use -benchtime 1x), which is, in order:
//
//  1. sync: the N×V values are written (transactions of 100 puts), then
//     the N agents are started. sync-s: from the first start until every
//     southbound holds all its values (each agent reads its V values in
//     one full read). heap-MiB/agent, goroutines/agent: what the process
//     holds then, after a full collection, over what it held before the
//     agents started, per agent (the etcd server's state for each client
//     and watch included).
//  2. load: every value of every agent is written again while all agents
//     watch: single puts from 32 concurrent writers, the agents
//     interleaved. load-s: from the first put until every southbound
//     applied every update; load-puts/s: the writers' rate; load-lag-ms:
//     from the return of the last put to the last update applied;
//     load-cpu-%: the process's CPU time meanwhile, in % of one CPU.
//  3. single: 400 puts, each of a new value of an agent picked at random,
//     one every 50 ms (open loop: a put does not wait for the one before).
//     p50-ms, p99-ms, max-ms: from the moment the writer calls Put to the
//     moment a watcher of the agent's scheduler (WatchValueStatus)
//     receives the value's status CONFIGURED. commit-p50-ms: the Put
//     alone, until etcd answered. req/s and watchers: the requests the
//     agents sent to etcd per second during this phase (counted at their
//     clients, requestCounter; the writer's puts not included) and etcd's
//     watchers (all members).
//  4. burst: one put of a new value to every agent at once (N concurrent
//     puts), 200 ms after the previous burst was CONFIGURED everywhere,
//     for at least 5 bursts and 400 puts. burst-p50-ms, burst-p99-ms: as
//     above; burst-all-ms: the median over the bursts of the time from
//     the first Put call to the last CONFIGURED.
//  5. idle: 30 s without writes. idle-req/s/agent: the agents' requests
//     per second and agent (status refresh, lease keep-alives, watch
//     progress requests: the log has each kind, and etcd's own count);
//     progress/s/agent: the watch progress requests alone; idle-cpu-%:
//     the CPU time of the whole process (cluster and agents) in % of one
//     CPU.
//
// With status-values=on each agent also publishes its values' statuses in
// etcd (etcdstatus), and a watch of the benchmark follows them there (one
// more watcher in etcd's count): status-p50-ms and status-p99-ms run from
// the Put to that watch receiving the CONFIGURED status of the value (what
// a fleet controller reading etcd sees); status-sync-s and status-load-s
// until etcd held the status of every value after sync and load.
//
// Everything runs in one process: the three members, the N agents and the
// writer share its CPUs, so the latencies include their contention.
func BenchmarkFleet(b *testing.B) {
	if testing.Short() {
		b.Skip("a 3-member etcd cluster and up to 100 agents: not in -short")
	}
	for _, sc := range []fleetScale{
		{agents: 10, values: 1000},
		{agents: 100, values: 1000},
		{agents: 100, values: 1000, statusValues: true},
	} {
		b.Run(sc.name(), func(b *testing.B) { benchFleet(b, sc) })
	}
}

// fleetScale is one size of BenchmarkFleet.
type fleetScale struct {
	agents, values int
	statusValues   bool
}

func (sc fleetScale) name() string {
	onOff := map[bool]string{false: "off", true: "on"}
	return fmt.Sprintf("agents=%d/values=%d/status-values=%s", sc.agents, sc.values, onOff[sc.statusValues])
}

// The workload of BenchmarkFleet (see its documentation).
const (
	setupTxnPuts   = 100
	loadWriters    = 32
	singleSamples  = 400
	singleInterval = 50 * time.Millisecond
	burstMin       = 5
	burstSamples   = 400
	burstPause     = 200 * time.Millisecond
	idleWindow     = 30 * time.Second
	// phaseTimeout bounds each wait of the benchmark: beyond it, something
	// is broken, not slow.
	phaseTimeout = 5 * time.Minute
)

// maxMTU is the largest MTU the interface model takes: the sequence
// numbers (Value) are counted per agent and must stay below.
const maxMTU = 9216

// fleetBench is one run of BenchmarkFleet.
type fleetBench struct {
	b      *testing.B
	sc     fleetScale
	c      *etcdcluster.Cluster
	cli    *clientv3.Client // the writer's
	agents []*benchAgent
	reqs   *requestCounter
	logs   *testsupport.SyncBuffer
	rand   *rand.Rand

	// phase counts the southbound operations of the running sync or load.
	phase atomic.Pointer[opPhase]
	// statusPhase counts the value statuses the benchmark's watch sees in
	// etcd (status-values=on).
	statusPhase atomic.Pointer[statusPhase]

	mu sync.Mutex
	// retries counts the writes made again (write), lastRetry the error
	// of the last.
	retries   int
	lastRetry error
	// samples are the measured puts not CONFIGURED yet, by etcd key (of
	// the value, and of its status with status-values=on).
	samples, statusSamples map[string]*sample
}

// benchAgent is an agent of the benchmark with the sequence numbers of
// its writes (Value).
type benchAgent struct {
	*Agent
	seq atomic.Uint32
}

// sample is one measured put.
type sample struct {
	key, statusKey string // etcd keys of the value and of its status
	value          string
	sent, answered time.Time // the Put's call and return
	putErr         error
	// configured is when the scheduler's watcher got CONFIGURED; status
	// when the benchmark's watch saw the status in etcd (status-values=on).
	configured, status time.Time
	done               chan struct{} // closed when the sample is complete
	pending            int           // what it still waits for (under fleetBench.mu)
}

// opPhase counts the southbound operations of one kind, with a sequence
// number above after, until target.
type opPhase struct {
	kind   string
	after  uint32
	target int64
	n      atomic.Int64
	last   time.Time // the operation that reached target (read after done)
	done   chan struct{}
}

func newOpPhase(kind string, after uint32, target int) *opPhase {
	return &opPhase{kind: kind, after: after, target: int64(target), done: make(chan struct{})}
}

func (p *opPhase) observe(op Op) {
	if op.Kind != p.kind || op.Seq <= p.after {
		return
	}
	if p.n.Add(1) == p.target {
		p.last = op.At
		close(p.done)
	}
}

// statusPhase counts the distinct value statuses CONFIGURED by lastOp the
// benchmark's watch sees in etcd, until target.
type statusPhase struct {
	lastOp string
	target int
	seen   map[string]bool // the watch's goroutine only
	last   time.Time
	done   chan struct{}
}

func newStatusPhase(lastOp string, target int) *statusPhase {
	return &statusPhase{lastOp: lastOp, target: target, seen: map[string]bool{}, done: make(chan struct{})}
}

func benchFleet(b *testing.B, sc fleetScale) {
	f := &fleetBench{b: b, sc: sc, reqs: newRequestCounter(), logs: &testsupport.SyncBuffer{},
		rand: rand.New(rand.NewPCG(20, uint64(sc.agents))), samples: map[string]*sample{}, statusSamples: map[string]*sample{}}
	f.c = etcdcluster.Start(b, etcdcluster.Options{})
	f.cli = f.c.Client()
	leaderChanges := readEtcdMetrics(b)["etcd_server_leader_changes_seen_total"]
	defer func() {
		if b.Failed() {
			b.Logf("agents' warnings (last 40 lines):\n%s", testsupport.Tail(f.logs.String(), 40))
		}
	}()

	synced := f.syncAgents()
	loaded := f.load()
	f.watchSchedulers()

	var single, burst, commit, status []time.Duration
	var burstAll []time.Duration
	var active etcdStats
	var activeReqs requestRates
	for b.Loop() {
		reqs0, stats0, t0 := f.reqs.snapshot(), readEtcdStats(b), time.Now()
		samples := f.single()
		d := time.Since(t0)
		activeReqs = ratesBetween(reqs0, f.reqs.snapshot(), d)
		active = readEtcdStats(b).ratesSince(stats0, d)
		for _, s := range samples {
			single = append(single, s.configured.Sub(s.sent))
			commit = append(commit, s.answered.Sub(s.sent))
			if sc.statusValues {
				status = append(status, s.status.Sub(s.sent))
			}
		}
		bursts := max(burstMin, (burstSamples+sc.agents-1)/sc.agents)
		for range bursts {
			samples := f.burst()
			first, last := samples[0].sent, samples[0].configured
			for _, s := range samples {
				burst = append(burst, s.configured.Sub(s.sent))
				if s.sent.Before(first) {
					first = s.sent
				}
				if s.configured.After(last) {
					last = s.configured
				}
			}
			burstAll = append(burstAll, last.Sub(first))
			time.Sleep(burstPause) // spacing the bursts, not waiting for anything
		}
	}
	b.StopTimer()

	idle, idleStats, idleCPU := f.idle()
	f.checkSouthbounds()

	// Reported after the loop: b.Loop's start clears what was reported
	// before.
	n := float64(sc.agents)
	b.ReportMetric(synced.took.Seconds(), "sync-s")
	b.ReportMetric(synced.heapPerAgent/(1<<20), "heap-MiB/agent")
	b.ReportMetric(synced.goroutinesPerAgent, "goroutines/agent")
	b.ReportMetric(loaded.took.Seconds(), "load-s")
	b.ReportMetric(loaded.putsPerSecond, "load-puts/s")
	b.ReportMetric(float64(loaded.lag)/float64(time.Millisecond), "load-lag-ms")
	b.ReportMetric(loaded.cpu, "load-cpu-%")
	p50, p99, maxMs := latencies(single)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	b.ReportMetric(maxMs, "max-ms")
	c50, _, _ := latencies(commit)
	b.ReportMetric(c50, "commit-p50-ms")
	p50, p99, _ = latencies(burst)
	b.ReportMetric(p50, "burst-p50-ms")
	b.ReportMetric(p99, "burst-p99-ms")
	all50, _, _ := latencies(burstAll)
	b.ReportMetric(all50, "burst-all-ms")
	if sc.statusValues {
		b.ReportMetric(synced.statuses.Seconds(), "status-sync-s")
		b.ReportMetric(loaded.statuses.Seconds(), "status-load-s")
		p50, p99, _ = latencies(status)
		b.ReportMetric(p50, "status-p50-ms")
		b.ReportMetric(p99, "status-p99-ms")
	}
	b.ReportMetric(activeReqs.total(), "req/s")
	b.ReportMetric(active.watchers, "watchers")
	b.ReportMetric(idle.total()/n, "idle-req/s/agent")
	b.ReportMetric(idle["Watch/progress"]/n, "progress/s/agent")
	b.ReportMetric(idleCPU, "idle-cpu-%")
	b.Logf("single phase: %d puts, agents' requests %.1f/s: %s", len(single), activeReqs.total(), activeReqs.perAgent(sc.agents))
	b.Logf("single phase, etcd: %v", active)
	b.Logf("idle %v: agents' requests %.1f/s: %s", idleWindow, idle.total(), idle.perAgent(sc.agents))
	b.Logf("idle, etcd: %v", idleStats)
	// Each member counts the changes it saw: one election seen by all
	// three counts 3.
	leaderChanges = readEtcdMetrics(b)["etcd_server_leader_changes_seen_total"] - leaderChanges
	f.mu.Lock()
	b.Logf("leader changes seen by the members after the start: %.0f; writes made again: %d (the last error: %v)", leaderChanges, f.retries, f.lastRetry)
	f.mu.Unlock()
}

// phaseResult is what the sync and load steps measured (see
// BenchmarkFleet).
type phaseResult struct {
	took     time.Duration // until every southbound held every value
	statuses time.Duration // until etcd held every value's status (status-values=on)
	// sync only
	heapPerAgent, goroutinesPerAgent float64
	// load only: the writers' rate, and how long after the last put
	// returned the last update was applied
	putsPerSecond float64
	lag           time.Duration
	cpu           float64 // the process's CPU time in % of one CPU
}

// syncAgents writes every agent's values, starts the agents and waits
// until all hold them (step 1).
func (f *fleetBench) syncAgents() phaseResult {
	b, sc := f.b, f.sc
	labels := make([]string, sc.agents)
	for i := range labels {
		labels[i] = fmt.Sprintf("agent%03d", i)
	}
	var ops []clientv3.Op
	flush := func() {
		if err := f.write(func(ctx context.Context) error {
			_, err := f.cli.Txn(ctx).Then(ops...).Commit()
			return err
		}); err != nil {
			b.Fatalf("writing the values: %v", err)
		}
		ops = ops[:0]
	}
	for _, label := range labels {
		for v := range sc.values {
			name := valueName(v)
			ops = append(ops, clientv3.OpPut(EtcdKey(label, name), Value(name, uint32(v+1))))
			if len(ops) == setupTxnPuts {
				flush()
			}
		}
	}
	if len(ops) > 0 {
		flush()
	}
	statuses := newStatusPhase("CREATE", sc.agents*sc.values)
	if sc.statusValues {
		f.followStatuses()
		f.statusPhase.Store(statuses)
	}
	heap0, goroutines0 := testsupport.LiveHeap(), runtime.NumGoroutine()

	phase := newOpPhase("create", 0, sc.agents*sc.values)
	f.phase.Store(phase)
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start := time.Now()
	for _, label := range labels {
		a := &benchAgent{}
		a.seq.Store(uint32(sc.values))
		a.Agent = StartAgent(b, AgentOptions{Label: label, Endpoints: f.c.Endpoints(), Status: true, StatusValues: sc.statusValues,
			Log: log, OnOp: f.onOp, DialOptions: f.reqs.dialOptions()})
		f.agents = append(f.agents, a)
	}
	f.await(phase.done, "every agent's first sync")
	r := phaseResult{took: phase.last.Sub(start)}
	testsupport.Eventually(b, phaseTimeout, func() error {
		for _, a := range f.agents {
			if !a.Ready() {
				return fmt.Errorf("agent %s not ready", a.Label)
			}
		}
		return nil
	})
	if sc.statusValues {
		f.await(statuses.done, "every value's status in etcd after sync")
		r.statuses = statuses.last.Sub(start)
	}
	heap1, goroutines1 := testsupport.LiveHeap(), runtime.NumGoroutine()
	n := float64(sc.agents)
	r.heapPerAgent = (float64(heap1) - float64(heap0)) / n
	r.goroutinesPerAgent = float64(goroutines1-goroutines0) / n
	return r
}

func valueName(v int) string { return fmt.Sprintf("if%04d", v) }

// onOp is every southbound's OnOp.
func (f *fleetBench) onOp(op Op) {
	if p := f.phase.Load(); p != nil {
		p.observe(op)
	}
}

// load writes every value of every agent again (step 2).
func (f *fleetBench) load() phaseResult {
	b, sc := f.b, f.sc
	phase := newOpPhase("update", uint32(sc.values), sc.agents*sc.values)
	f.phase.Store(phase)
	statuses := newStatusPhase("UPDATE", sc.agents*sc.values)
	if sc.statusValues {
		f.statusPhase.Store(statuses)
	}
	type write struct{ key, value string }
	writes := make(chan write, loadWriters)
	errs := make(chan error, loadWriters)
	var wg sync.WaitGroup
	for range loadWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range writes {
				if err := f.write(func(ctx context.Context) error {
					_, err := f.cli.Put(ctx, w.key, w.value)
					return err
				}); err != nil {
					errs <- fmt.Errorf("put %s: %w", w.key, err)
					for range writes {
						// Drain: the benchmark fails.
					}
					return
				}
			}
		}()
	}
	start, cpu0 := time.Now(), cpuTime(b)
	for v := range sc.values {
		for _, a := range f.agents {
			name := valueName(v)
			writes <- write{EtcdKey(a.Label, name), Value(name, a.seq.Add(1))}
		}
	}
	close(writes)
	wg.Wait()
	written := time.Since(start)
	select {
	case err := <-errs:
		b.Fatalf("load: %v", err)
	default:
	}
	f.await(phase.done, "every update applied")
	cpu, took := cpuTime(b)-cpu0, time.Since(start)
	r := phaseResult{took: phase.last.Sub(start), putsPerSecond: float64(sc.agents*sc.values) / written.Seconds(),
		lag: phase.last.Sub(start.Add(written)), cpu: 100 * cpu.Seconds() / took.Seconds()}
	if sc.statusValues {
		f.await(statuses.done, "every value's status in etcd after load")
		r.statuses = statuses.last.Sub(start)
	}
	f.phase.Store(nil)
	return r
}

func (f *fleetBench) await(done <-chan struct{}, what string) {
	f.b.Helper()
	select {
	case <-done:
	case <-time.After(phaseTimeout):
		f.b.Fatalf("%s: not within %v", what, phaseTimeout)
	}
}

// watchSchedulers starts a watcher of every agent's scheduler that
// completes the samples when their values are CONFIGURED.
func (f *fleetBench) watchSchedulers() {
	for _, a := range f.agents {
		ch := make(chan *api.BaseValueStatus, 16)
		stop := a.Sched.WatchValueStatus(ch, func(key string) bool { return strings.HasPrefix(key, KeyPrefix) })
		quit := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			prefix := models.EtcdKeyPrefix(a.Label)
			for {
				select {
				case <-quit:
					return
				case st := <-ch:
					at := time.Now()
					v := st.GetValue()
					if v.GetState() == api.ValueStateConfigured && v.GetLastOperation() == api.OpCreate {
						f.complete(f.samples, prefix+v.GetKey(), at, func(s *sample) { s.configured = at })
					}
				}
			}
		}()
		f.b.Cleanup(func() {
			stop()
			close(quit)
			<-done
		})
	}
}

// followStatuses watches the value statuses the agents publish in etcd
// (status-values=on): it counts them for the sync and load phases and
// completes the samples.
func (f *fleetBench) followStatuses() {
	ctx, cancel := context.WithCancel(context.Background())
	wch := f.cli.Watch(ctx, models.EtcdPrefix, clientv3.WithPrefix())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wr := range wch {
			at := time.Now()
			for _, ev := range wr.Events {
				key := string(ev.Kv.Key)
				if ev.Type != clientv3.EventTypePut || !strings.Contains(key, "/"+etcdstatus.KeyPrefix+"status/v1/value/") {
					continue
				}
				var st struct {
					Value struct {
						State         string `json:"state"`
						LastOperation string `json:"last_operation"`
					} `json:"value"`
				}
				if json.Unmarshal(ev.Kv.Value, &st) != nil || st.Value.State != "CONFIGURED" {
					continue
				}
				if p := f.statusPhase.Load(); p != nil && st.Value.LastOperation == p.lastOp && !p.seen[key] {
					p.seen[key] = true
					if len(p.seen) == p.target {
						p.last = at
						f.statusPhase.Store(nil)
						close(p.done)
					}
				}
				if st.Value.LastOperation == "CREATE" {
					f.complete(f.statusSamples, key, at, func(s *sample) { s.status = at })
				}
			}
		}
	}()
	f.b.Cleanup(func() {
		cancel()
		<-done
	})
}

// complete records what the sample waiting under key in waiting got.
func (f *fleetBench) complete(waiting map[string]*sample, key string, at time.Time, record func(*sample)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := waiting[key]
	if s == nil {
		return
	}
	delete(waiting, key)
	record(s)
	if s.pending--; s.pending == 0 {
		close(s.done)
	}
}

// newSample prepares a put of a new value of agent a.
func (f *fleetBench) newSample(a *benchAgent) *sample {
	seq := a.seq.Add(1)
	if seq > maxMTU {
		f.b.Fatalf("agent %s: sequence number %d above the largest MTU, %d: fewer values or rounds", a.Label, seq, maxMTU)
	}
	name := fmt.Sprintf("new%d", seq)
	s := &sample{key: EtcdKey(a.Label, name), value: Value(name, seq), done: make(chan struct{}), pending: 1}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.samples[s.key] = s
	if f.sc.statusValues {
		s.statusKey = etcdstatus.ValueKey(a.Label, Key(name))
		f.statusSamples[s.statusKey] = s
		s.pending++
	}
	return s
}

// put makes the sample's put.
func (f *fleetBench) put(s *sample) {
	s.sent = time.Now()
	s.putErr = f.write(func(ctx context.Context) error {
		_, err := f.cli.Put(ctx, s.key, s.value)
		return err
	})
	s.answered = time.Now()
}

// write makes one write of the writer (a put, a transaction of puts), and
// again when it fails, for up to phaseTimeout: a leader change (the test
// cluster's election timeout is 500 ms, and the host is shared) fails the
// writes meanwhile. The writes put values, so one made twice changes
// nothing the agents see. The retries are counted and logged.
func (f *fleetBench) write(do func(context.Context) error) error {
	deadline := time.Now().Add(phaseTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := do(ctx)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		f.mu.Lock()
		f.retries++
		f.lastRetry = err
		f.mu.Unlock()
		<-time.After(100 * time.Millisecond)
	}
}

// awaitSamples waits until every sample is complete (the puts returned).
func (f *fleetBench) awaitSamples(samples []*sample) {
	f.b.Helper()
	deadline := time.After(phaseTimeout)
	for _, s := range samples {
		if s.putErr != nil {
			f.b.Fatalf("put %s: %v", s.key, s.putErr)
		}
		select {
		case <-s.done:
		case <-deadline:
			f.b.Fatalf("%s (put at %v) not CONFIGURED within %v", s.key, s.sent.Format(time.TimeOnly), phaseTimeout)
		}
	}
}

// single runs step 3.
func (f *fleetBench) single() []*sample {
	samples := make([]*sample, 0, singleSamples)
	tick := time.NewTicker(singleInterval)
	defer tick.Stop()
	var wg sync.WaitGroup
	for i := range singleSamples {
		if i > 0 {
			<-tick.C
		}
		s := f.newSample(f.agents[f.rand.IntN(len(f.agents))])
		samples = append(samples, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.put(s)
		}()
	}
	wg.Wait()
	f.awaitSamples(samples)
	return samples
}

// burst runs one burst of step 4.
func (f *fleetBench) burst() []*sample {
	samples := make([]*sample, 0, len(f.agents))
	for _, a := range f.agents {
		samples = append(samples, f.newSample(a))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range samples {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f.put(s)
		}()
	}
	close(start)
	wg.Wait()
	f.awaitSamples(samples)
	return samples
}

// idle measures step 5.
func (f *fleetBench) idle() (requestRates, etcdStats, float64) {
	reqs0, stats0, cpu0, t0 := f.reqs.snapshot(), readEtcdStats(f.b), cpuTime(f.b), time.Now()
	time.Sleep(idleWindow) // a measuring window, not a wait for something
	d := time.Since(t0)
	cpu := cpuTime(f.b) - cpu0
	return ratesBetween(reqs0, f.reqs.snapshot(), d), readEtcdStats(f.b).ratesSince(stats0, d), 100 * cpu.Seconds() / d.Seconds()
}

// cpuTime is the CPU time the process used so far (user and system).
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// checkSouthbounds fails the benchmark when a southbound refused an
// operation: the agents did not do what the writes asked.
func (f *fleetBench) checkSouthbounds() {
	for _, a := range f.agents {
		if v := a.SB.Violations(); len(v) > 0 {
			f.b.Fatalf("agent %s: %d operations refused, the first: %s", a.Label, len(v), v[0])
		}
	}
}

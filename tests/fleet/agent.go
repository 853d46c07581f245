// Package fleet runs many netagents in one test process against one etcd
// cluster (tests/etcdcluster), each with its own label and a simulated
// southbound, and checks what they applied against what was written to
// etcd (Check).
//
// An Agent is the agent's northbound and engine as the daemon wires them
// (cmd/agent): the KV scheduler, the orchestrator, the etcd source with its
// etcd client (the daemon's keepalive settings) and, when asked, the status
// publisher. Its southbound is a Southbound: a descriptor of VPP interfaces
// (the model under config/vpp/v2/interfaces/, decoded from etcd as the
// daemon decodes it) that keeps the values in memory and records every
// Create, Update and Delete, so that a test sees exactly what the engine
// did. A Create of a value it holds, and an Update or a Delete of one it
// does not hold, fail as a dataplane would refuse them, and are recorded
// as violations.
//
// The tests write each value with a unique sequence number in its MTU
// (Value), which identifies the write a southbound operation applies.
package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	statuspb "github.com/netagent-io/netagent/proto/status"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// KeyPrefix is the model key prefix of the values the southbound takes.
const KeyPrefix = "config/vpp/v2/interfaces/"

// Key is the model key of the value named name.
func Key(name string) string { return KeyPrefix + name }

// Value is the JSON of value name written with sequence number seq.
func Value(name string, seq uint32) string {
	return fmt.Sprintf(`{"name":%q,"type":"SOFTWARE_LOOPBACK","enabled":true,"mtu":%d}`, name, seq)
}

// EtcdKey is the etcd key of value name of the agent labelled label.
func EtcdKey(label, name string) string { return models.EtcdKeyPrefix(label) + Key(name) }

// AgentOptions configure an Agent.
type AgentOptions struct {
	// Label is the agent's microservice label.
	Label string
	// Endpoints are the etcd endpoints the agent connects to.
	Endpoints []string
	// Status publishes the agent's status (etcdstatus), with the values'
	// statuses when StatusValues.
	Status, StatusValues bool
	// ProgressInterval is the etcd source's (0: its default).
	ProgressInterval time.Duration
	// Log receives the agent's logs (default: discarded).
	Log *slog.Logger
	// OnOp, when set, is the southbound's OnOp (see Southbound), in place
	// from the agent's start.
	OnOp func(Op)
	// DialOptions are added to those of the agent's etcd client (a test
	// counting the agent's requests adds its interceptors).
	DialOptions []grpc.DialOption
	// KeepAliveTimeout, when set, replaces the daemon's keepalive timeout
	// of the etcd client (5 s after a 10 s silence): for a test whose
	// fault must outlast it.
	KeepAliveTimeout time.Duration
}

// Agent is one agent run in the test process (see the package
// documentation).
type Agent struct {
	Label  string
	Sched  *kvscheduler.Scheduler
	Orch   *orchestrator.Orchestrator
	Source *etcdsource.Source
	SB     *Southbound

	client *clientv3.Client
	cancel context.CancelFunc
	done   sync.WaitGroup
	once   sync.Once
}

// The etcd client's settings: the daemon's (cmd/agent northbound.go).
const (
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 5 * time.Second
)

// StartAgent starts an agent; it stops when the test ends (or by Stop).
func StartAgent(t testing.TB, opts AgentOptions) *Agent {
	t.Helper()
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("label", opts.Label)
	kaTimeout := keepAliveTimeout
	if opts.KeepAliveTimeout > 0 {
		kaTimeout = opts.KeepAliveTimeout
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: opts.Endpoints, DialTimeout: 5 * time.Second,
		DialKeepAliveTime: keepAliveTime, DialKeepAliveTimeout: kaTimeout, Logger: zap.NewNop(),
		DialOptions: append([]grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: 5 * time.Second})}, opts.DialOptions...)})
	if err != nil {
		t.Fatalf("agent %s: etcd client: %v", opts.Label, err)
	}
	sched := kvscheduler.New(kvscheduler.Options{Logger: log})
	sb := NewSouthbound()
	sb.OnOp = opts.OnOp
	if err := sched.RegisterKVDescriptor(sb.Descriptor()); err != nil {
		t.Fatalf("agent %s: %v", opts.Label, err)
	}
	orch := orchestrator.New(sched, log)
	src := etcdsource.New(cli, orch, etcdsource.Options{Label: opts.Label, Log: log, ProgressInterval: opts.ProgressInterval})
	orch.Register(orchestrator.SourceEtcd)
	orch.RegisterConnection(orchestrator.SourceEtcd, src)
	a := &Agent{Label: opts.Label, Sched: sched, Orch: orch, Source: src, SB: sb, client: cli}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	run := func(f func()) {
		a.done.Add(1)
		go func() {
			defer a.done.Done()
			f()
		}()
	}
	run(func() {
		if err := src.Run(ctx); err != nil {
			log.Error("etcd source stopped", "error", err)
		}
	})
	run(func() { _ = orch.Start(ctx) })
	if opts.Status {
		popts := etcdstatus.Options{Label: opts.Label, Started: time.Now(), Log: log}
		if opts.StatusValues {
			popts.Values = sched
		}
		pub := etcdstatus.New(cli, a.report, popts)
		run(func() { pub.Run(ctx) })
	}
	t.Cleanup(a.Stop)
	return a
}

// report is the agent's status as the daemon reports it, for the parts
// this agent has: the orchestrator and etcd.
func (a *Agent) report() etcdstatus.Report {
	r := etcdstatus.Report{State: statuspb.OperationalState_OK}
	orch := statuspb.OperationalState_INIT
	select {
	case <-a.Orch.Started():
		orch = statuspb.OperationalState_OK
	default:
		r.State = statuspb.OperationalState_INIT
	}
	r.Plugins = append(r.Plugins, etcdstatus.Plugin{Name: "orchestrator", State: orch})
	c := a.Source.Connection()
	switch c.State {
	case orchestrator.SourceConnected:
		r.Plugins = append(r.Plugins, etcdstatus.Plugin{Name: "etcd", State: statuspb.OperationalState_OK})
	case orchestrator.SourceConnecting:
		r.Plugins = append(r.Plugins, etcdstatus.Plugin{Name: "etcd", State: statuspb.OperationalState_INIT, Error: c.Error})
	default:
		r.State = statuspb.OperationalState_ERROR
		r.Plugins = append(r.Plugins, etcdstatus.Plugin{Name: "etcd", State: statuspb.OperationalState_ERROR, Error: c.Error})
	}
	return r
}

// Stop stops the agent and waits for it.
func (a *Agent) Stop() {
	a.once.Do(func() {
		a.cancel()
		a.done.Wait()
		a.Sched.Close()
		a.client.Close()
	})
}

// Ready tells whether the agent made its first full sync.
func (a *Agent) Ready() bool {
	ok, _ := a.Orch.Ready()
	return ok
}

// Degraded is what the agent's /readyz says besides "ready": why it is
// degraded (a lost etcd connection), nil when it is not.
func (a *Agent) Degraded() []string { return a.Orch.Degraded() }

// Op is one operation of the southbound.
type Op struct {
	Kind string // "create", "update", "delete"
	Key  string
	Seq  uint32 // the value's sequence number (create, update) or the deleted one's
	At   time.Time
}

func (o Op) String() string { return fmt.Sprintf("%s %s=%d", o.Kind, o.Key, o.Seq) }

// Southbound is the simulated southbound of an Agent (see the package
// documentation). It is safe for concurrent use.
type Southbound struct {
	mu         sync.Mutex
	state      map[string]uint32
	values     map[string]*vppif.Interface // what Retrieve returns: the values applied
	ops        []Op
	violations []string
	changed    chan struct{} // closed and replaced at every operation
	// OnOp, when set before the agent starts, is called after every
	// operation, outside the southbound's lock.
	OnOp func(Op)
}

// NewSouthbound returns an empty southbound.
func NewSouthbound() *Southbound {
	return &Southbound{state: map[string]uint32{}, values: map[string]*vppif.Interface{}, changed: make(chan struct{})}
}

// Descriptor is the southbound's descriptor for the scheduler.
func (sb *Southbound) Descriptor() *api.KVDescriptor {
	return &api.KVDescriptor{
		Name:          "fleet-sb",
		NBKeyPrefix:   KeyPrefix,
		KeySelector:   func(key string) bool { return len(key) > len(KeyPrefix) && key[:len(KeyPrefix)] == KeyPrefix },
		ValueTypeName: string((&vppif.Interface{}).ProtoReflect().Descriptor().FullName()),
		Create: func(_ context.Context, key string, v proto.Message) (any, error) {
			return nil, sb.apply("create", key, v.(*vppif.Interface))
		},
		Update: func(_ context.Context, key string, _, v proto.Message, _ any) (any, error) {
			return nil, sb.apply("update", key, v.(*vppif.Interface))
		},
		Delete: func(_ context.Context, key string, v proto.Message, _ any) error {
			return sb.apply("delete", key, v.(*vppif.Interface))
		},
		Retrieve: func(context.Context, []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			sb.mu.Lock()
			defer sb.mu.Unlock()
			out := make([]api.KVWithMetadata, 0, len(sb.values))
			for key, v := range sb.values {
				out = append(out, api.KVWithMetadata{Key: key, Origin: api.FromNB, Value: proto.Clone(v)})
			}
			return out, nil
		},
	}
}

// apply does one operation, refusing what a dataplane would refuse.
func (sb *Southbound) apply(kind, key string, v *vppif.Interface) error {
	seq := v.GetMtu()
	op := Op{Kind: kind, Key: key, Seq: seq, At: time.Now()}
	sb.mu.Lock()
	_, has := sb.state[key]
	var err error
	switch {
	case kind == "create" && has:
		err = fmt.Errorf("create of %s (seq %d): the southbound has it already (seq %d)", key, seq, sb.state[key])
	case kind != "create" && !has:
		err = fmt.Errorf("%s of %s (seq %d): the southbound does not have it", kind, key, seq)
	case kind == "delete":
		delete(sb.state, key)
		delete(sb.values, key)
	default:
		sb.state[key] = seq
		sb.values[key] = proto.Clone(v).(*vppif.Interface)
	}
	if err != nil {
		sb.violations = append(sb.violations, err.Error())
	}
	sb.ops = append(sb.ops, op)
	close(sb.changed)
	sb.changed = make(chan struct{})
	onOp := sb.OnOp
	sb.mu.Unlock()
	if onOp != nil && err == nil {
		onOp(op)
	}
	return err
}

// Ops returns the operations so far, in order.
func (sb *Southbound) Ops() []Op {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return append([]Op(nil), sb.ops...)
}

// Violations returns the operations the southbound refused.
func (sb *Southbound) Violations() []string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return append([]string(nil), sb.violations...)
}

// State returns what the southbound holds: key -> sequence number.
func (sb *Southbound) State() map[string]uint32 {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	out := make(map[string]uint32, len(sb.state))
	for k, v := range sb.state {
		out[k] = v
	}
	return out
}

// WaitFor waits until the southbound holds exactly want, and returns
// false (with what differs) when it did not within timeout.
func (sb *Southbound) WaitFor(want map[string]uint32, timeout time.Duration) (bool, string) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		sb.mu.Lock()
		diff := stateDiff(sb.state, want)
		changed := sb.changed
		sb.mu.Unlock()
		if diff == "" {
			return true, ""
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false, diff
		}
	}
}

// stateDiff describes how have differs from want ("" when equal), with
// at most a few keys.
func stateDiff(have, want map[string]uint32) string {
	var out []string
	for k, w := range want {
		if h, ok := have[k]; !ok {
			out = append(out, fmt.Sprintf("%s missing (want seq %d)", k, w))
		} else if h != w {
			out = append(out, fmt.Sprintf("%s has seq %d, want %d", k, h, w))
		}
	}
	for k, h := range have {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s (seq %d) should not be there", k, h))
		}
	}
	if len(out) == 0 {
		return ""
	}
	n := len(out)
	if len(out) > 5 {
		out = out[:5]
	}
	return fmt.Sprintf("%d differences: %v", n, out)
}

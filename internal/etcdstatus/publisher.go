package etcdstatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	statuspb "github.com/netagent-io/netagent/proto/status"
)

// KeyPrefix starts the model key of every key of the status tree (under
// /vnf-agent/<label>/): the original's check/ tree, which holds no
// configuration.
const KeyPrefix = "check/"

// The model keys of the statuses (under /vnf-agent/<label>/).
const (
	agentModelKey      = KeyPrefix + "status/v1/agent"
	pluginModelKeyRoot = KeyPrefix + "status/v1/plugin/"
)

// AgentKey is the etcd key of the agent's status.
func AgentKey(label string) string { return models.EtcdKey(label, agentModelKey) }

// PluginKey is the etcd key of the status of the agent's part name.
func PluginKey(label, name string) string { return models.EtcdKey(label, pluginModelKeyRoot+name) }

// Report is the status of the agent at one moment, as its report function
// tells it to the publisher.
type Report struct {
	// State is the state of the agent as a whole.
	State statuspb.OperationalState
	// Plugins are the states of the agent's parts, in the order to publish
	// them; the same names at every call.
	Plugins []Plugin
}

// Plugin is the state of one part of the agent.
type Plugin struct {
	// Name is the part's name, the last element of its key.
	Name  string
	State statuspb.OperationalState
	// Error says what is wrong ("" when nothing is).
	Error string
}

// Build is the build information published with the agent's status.
type Build struct {
	Version string
	// Date is the date of the build, as the agent reports it elsewhere.
	Date   string
	Commit string
}

// Options configure a Publisher.
type Options struct {
	// Label is the microservice label (default models.DefaultLabel).
	Label string
	// TTL is the lease's time to live (default DefaultTTL): a dead agent's
	// keys disappear within it. It is rounded up to whole seconds, and etcd
	// raises a TTL below its minimum (about 1.5 s with the default
	// election timeout) to that minimum.
	TTL time.Duration
	// CheckInterval is how often the report function is asked (default
	// DefaultCheckInterval).
	CheckInterval time.Duration
	// RefreshInterval is how often the keys are put again when nothing
	// changed (default DefaultRefreshInterval).
	RefreshInterval time.Duration
	// Started is when the agent started (start_time).
	Started time.Time
	Build   Build
	// Values, when set, has the status of every value of the scheduler
	// published as well (see "Value statuses" in the package
	// documentation); nil publishes none.
	Values ValueStatuses
	// ValueTxnOps is the most operations in one etcd transaction of value
	// statuses (default DefaultValueTxnOps, etcd's default limit): at most
	// the etcd server's --max-txn-ops (a server that refuses as many is
	// given half as many, until it takes them).
	ValueTxnOps int
	// Log receives the publisher's logs (default slog.Default()).
	Log *slog.Logger
}

// Defaults of Options.
const (
	DefaultTTL             = 10 * time.Second
	DefaultCheckInterval   = 500 * time.Millisecond
	DefaultRefreshInterval = 10 * time.Second
)

// Retry timing after a failed grant or put.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Publisher keeps the agent's status in etcd. Create it with New and run it
// with Run, once.
type Publisher struct {
	client *clientv3.Client
	report func() Report
	opts   Options
	log    *slog.Logger

	// agent is the status as published (or to publish); plugins are in
	// its Plugins, and each is also put under its own key.
	agent *statuspb.AgentStatus
	// dirty: agent changed since it was last put.
	dirty bool

	lease clientv3.LeaseID // 0: none
	// nextKeepAlive, nextRefresh and retryAt are when to renew the lease,
	// to put the keys again and to retry a failed grant or put.
	nextKeepAlive, nextRefresh, retryAt time.Time
	backoff                             time.Duration
	// failingSince is when the publication started failing (zero: it
	// works, or it never succeeded and never failed).
	failingSince time.Time
	published    bool // the keys were put once
	// nextCheck is when to ask the report function next.
	nextCheck time.Time

	values *values // nil: Options.Values unset
}

// New returns a publisher putting the status that report returns into etcd
// through client (which it does not close). report is called from Run's
// goroutine only, every Options.CheckInterval; it must be quick and must
// not block on etcd.
func New(client *clientv3.Client, report func() Report, opts Options) *Publisher {
	if opts.Label == "" {
		opts.Label = models.DefaultLabel
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	if opts.ValueTxnOps <= 0 {
		opts.ValueTxnOps = DefaultValueTxnOps
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Publisher{client: client, report: report, opts: opts, backoff: minBackoff,
		log: opts.Log.With("status_key", AgentKey(opts.Label))}
}

// Run publishes the status until ctx ends, then revokes the lease (the keys
// go at once). It returns when it stopped; etcd's errors do not end it
// (see "Failures" in the package documentation).
func (p *Publisher) Run(ctx context.Context) {
	p.startValues()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			p.stopValues()
			p.revoke()
			return
		case <-timer.C:
		case st := <-p.valueUpdates():
			p.receiveValues(st)
		}
		if now := time.Now(); !now.Before(p.nextCheck) {
			p.observe(p.report())
			p.nextCheck = now.Add(p.opts.CheckInterval)
		}
		p.step(ctx)
		timer.Reset(p.wait())
	}
}

// opTimeout bounds each call to etcd: a keep-alive must be answered well
// within the TTL.
func (p *Publisher) opTimeout() time.Duration { return p.opts.TTL / 3 }

// observe records a report: the state (and error) that changed get
// last_change now, and the keys are to be put.
func (p *Publisher) observe(r Report) {
	now := time.Now().Unix()
	if p.agent == nil {
		p.agent = &statuspb.AgentStatus{BuildVersion: validUTF8(p.opts.Build.Version), BuildDate: validUTF8(p.opts.Build.Date),
			CommitHash: validUTF8(p.opts.Build.Commit), StartTime: p.opts.Started.Unix(), State: r.State, LastChange: now}
		p.dirty = true
	}
	if r.State != p.agent.State {
		p.agent.State, p.agent.LastChange = r.State, now
		p.dirty = true
	}
	byName := make(map[string]*statuspb.PluginStatus, len(p.agent.Plugins))
	for _, ps := range p.agent.Plugins {
		byName[ps.Name] = ps
	}
	plugins := make([]*statuspb.PluginStatus, 0, len(r.Plugins))
	for _, rp := range r.Plugins {
		rp.Name, rp.Error = validUTF8(rp.Name), validUTF8(rp.Error)
		ps := byName[rp.Name]
		switch {
		case ps == nil:
			ps = &statuspb.PluginStatus{Name: rp.Name, State: rp.State, Error: rp.Error, LastChange: now}
			p.dirty = true
		case ps.State != rp.State || ps.Error != rp.Error:
			ps.State, ps.Error, ps.LastChange = rp.State, rp.Error, now
			p.dirty = true
		}
		plugins = append(plugins, ps)
	}
	p.agent.Plugins = plugins
}

// validUTF8 replaces what is not UTF-8 (an error quoting a name made of
// bytes), which protojson refuses in a string field.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// step does what is due: grant a lease, renew it, put the keys.
func (p *Publisher) step(ctx context.Context) {
	now := time.Now()
	if p.lease == 0 {
		if now.Before(p.retryAt) {
			return
		}
		if !p.grant(ctx) {
			return
		}
	} else if !now.Before(p.nextKeepAlive) && !p.keepAlive(ctx) {
		return
	}
	if (p.dirty || !now.Before(p.nextRefresh)) && !now.Before(p.retryAt) {
		p.put(ctx)
	}
	if due := p.valuesDue(); !due.IsZero() && !time.Now().Before(due) {
		p.flushValues(ctx)
	}
}

// wait is how long Run sleeps until the next thing is due: the next
// report, the lease's renewal, a retry or writing the values' statuses,
// whichever comes first (a value's change wakes it earlier).
func (p *Publisher) wait() time.Duration {
	now := time.Now()
	next := p.nextCheck
	if due := p.valuesDue(); !due.IsZero() {
		if !due.After(now) {
			return 0
		}
		if due.Before(next) {
			next = due
		}
	}
	due := []time.Time{p.retryAt}
	if p.lease != 0 {
		due = append(due, p.nextKeepAlive)
	}
	for _, t := range due {
		if t.After(now) && t.Before(next) {
			next = t
		}
	}
	return next.Sub(now)
}

// grant grants a new lease; the keys are to be put under it.
func (p *Publisher) grant(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, p.opTimeout())
	defer cancel()
	resp, err := p.client.Grant(cctx, int64((p.opts.TTL+time.Second-1)/time.Second))
	if err != nil {
		p.failed(ctx, fmt.Errorf("granting a lease: %w", err))
		return false
	}
	p.lease, p.dirty = resp.ID, true
	p.nextKeepAlive = time.Now().Add(p.opTimeout())
	if p.values != nil {
		p.values.relist()
	}
	return true
}

// keepAlive renews the lease; false when it is gone (expired, revoked,
// etcd restored: a new one is granted at once) or could not be renewed
// now (tried again soon).
func (p *Publisher) keepAlive(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, p.opTimeout())
	defer cancel()
	_, err := p.client.KeepAliveOnce(cctx, p.lease)
	switch {
	case err == nil:
		p.nextKeepAlive = time.Now().Add(p.opTimeout())
		return true
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		p.leaseLost()
		return p.grant(ctx)
	default:
		// Keep trying until etcd says the lease is gone.
		p.nextKeepAlive = time.Now().Add(minBackoff)
		p.failed(ctx, fmt.Errorf("renewing the lease: %w", err))
		return false
	}
}

// leaseLost forgets a lease etcd no longer has (its keys went with it).
func (p *Publisher) leaseLost() {
	p.log.Info("the status's lease is gone from etcd (expired, revoked or etcd restored); publishing under a new one", "lease", fmt.Sprintf("%x", int64(p.lease)))
	p.lease, p.retryAt = 0, time.Time{}
}

// put puts every key under the lease, in one transaction.
func (p *Publisher) put(ctx context.Context) {
	now := time.Now()
	p.agent.LastUpdate = now.Unix()
	for _, ps := range p.agent.Plugins {
		ps.LastUpdate = p.agent.LastUpdate
	}
	ops, err := p.putOps()
	if err != nil {
		p.failed(ctx, err)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, p.opTimeout())
	defer cancel()
	if _, err := p.client.Txn(cctx).Then(ops...).Commit(); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			p.leaseLost()
			return // granted and put at the next step
		}
		p.failed(ctx, fmt.Errorf("putting the status: %w", err))
		return
	}
	p.dirty, p.nextRefresh = false, now.Add(p.opts.RefreshInterval)
	p.succeeded()
}

// putOps are the puts of the agent's key and of each plugin's (whose value
// does not repeat its name, as the original's does not), under the lease.
func (p *Publisher) putOps() ([]clientv3.Op, error) {
	agent, err := marshal(p.agent)
	if err != nil {
		return nil, err
	}
	ops := []clientv3.Op{clientv3.OpPut(AgentKey(p.opts.Label), agent, clientv3.WithLease(p.lease))}
	for _, ps := range p.agent.Plugins {
		value, err := marshal(&statuspb.PluginStatus{State: ps.State, LastChange: ps.LastChange, LastUpdate: ps.LastUpdate, Error: ps.Error})
		if err != nil {
			return nil, err
		}
		ops = append(ops, clientv3.OpPut(PluginKey(p.opts.Label, ps.Name), value, clientv3.WithLease(p.lease)))
	}
	return ops, nil
}

// marshal is the original's JSON of a status message (see the package
// documentation). It fails only on a string that is not UTF-8, which
// observe replaces.
func marshal(m proto.Message) (string, error) {
	data, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding the status: %w", err)
	}
	return string(data), nil
}

// failed records a failure of the publication: logged at warn level when
// it worked until then (or had not started), at debug level while it keeps
// failing; the grant or put is retried after the backoff.
func (p *Publisher) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // stopping
	}
	now := time.Now()
	p.retryAt = now.Add(p.backoff)
	if p.failingSince.IsZero() {
		p.failingSince = now
		p.log.Warn("cannot publish the agent's status in etcd; retrying", "error", err, "retry_in", p.backoff)
	} else {
		p.log.Debug("publishing the agent's status in etcd failed again", "error", err, "retry_in", p.backoff)
	}
	p.backoff = min(2*p.backoff, maxBackoff)
}

// succeeded records a put that worked.
func (p *Publisher) succeeded() {
	switch {
	case !p.failingSince.IsZero():
		p.log.Info("publishing the agent's status in etcd again", "failing_for", time.Now().Sub(p.failingSince).Round(time.Millisecond))
	case !p.published:
		p.log.Info("publishing the agent's status in etcd", "ttl", p.opts.TTL, "state", p.agent.State.String())
	}
	p.published, p.failingSince, p.retryAt, p.backoff = true, time.Time{}, time.Time{}, minBackoff
}

// revoke revokes the lease, so that the keys go at once (a graceful stop).
func (p *Publisher) revoke() {
	if p.lease == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opTimeout())
	defer cancel()
	if _, err := p.client.Revoke(ctx, p.lease); err != nil {
		p.log.Warn("could not remove the agent's status from etcd; it goes when its lease expires", "error", err, "ttl", p.opts.TTL)
		return
	}
	p.log.Debug("removed the agent's status from etcd")
}

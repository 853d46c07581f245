// Package etcdcluster runs a real etcd cluster of several members in the
// test process (go.etcd.io/etcd/server/v3/embed), on loopback ports, and
// makes the faults a distributed northbound has: a member stopped or
// killed, the leader lost, a member cut off from the others, the whole
// cluster restarted, a client's connection hung, a compaction.
//
// # Layout
//
// Member i has a data directory under the cluster's directory, a peer URL
// and a client URL, all fixed for the cluster's life (a restarted member
// comes back where it was). Clients reach a member through a TCP proxy of
// the harness (Member.Endpoint), so that a test can hang their connection
// (Member.Hold) without touching the member; Cluster.Client talks to the
// members directly.
//
// # Faults
//
//   - Stop: a graceful stop (a leader hands its leadership over first).
//   - Kill: the member is cut off from its peers, then stopped: a leader
//     cannot hand over, as when its host dies; the others elect a new one
//     after the election timeout.
//   - Isolate / Heal: the member and its peers drop the raft messages
//     between them (etcd's rafthttp Pause, as etcd's own tests cut peers);
//     its clients still reach it. An isolated member loses its leader and,
//     after a few election timeouts, ends the watches and refuses the
//     requests that require a leader; the others go on as a cluster of the
//     remaining members.
//   - StopAll / StartAll: the whole cluster restarts on its data.
//   - Member.Hold / Release: the member's client proxy stops passing bytes
//     either way (connections stay open): a hung connection, a member
//     frozen for its clients.
//
// Methods fail the test (t.Fatal) when the cluster cannot do what is
// asked; call them from the test's goroutine.
package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
)

// Options configures a cluster.
type Options struct {
	// Members is the number of members (default 3).
	Members int
	// TickMs and ElectionMs are etcd's heartbeat interval and election
	// timeout (defaults 50 and 500 ms: etcd's own are 100 and 1000; the
	// tests wait for elections).
	TickMs, ElectionMs uint
	// Log receives etcd's logs (default: discarded; etcd logs from warn
	// level up).
	Log *slog.Logger
}

// Cluster is a running etcd cluster.
type Cluster struct {
	t       testing.TB
	opts    Options
	token   string
	initial string
	Members []*Member
}

// Member is one member of the cluster.
type Member struct {
	Name      string
	dir       string
	peerURL   url.URL
	clientURL url.URL
	proxy     *proxy

	mu   sync.Mutex
	etcd *embed.Etcd // nil while stopped
}

// Start starts a cluster and waits until every member serves clients. The
// cluster is stopped when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Members <= 0 {
		opts.Members = 3
	}
	if opts.TickMs == 0 {
		opts.TickMs = 50
	}
	if opts.ElectionMs == 0 {
		opts.ElectionMs = 10 * opts.TickMs
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	dir := t.TempDir()
	c := &Cluster{t: t, opts: opts, token: fmt.Sprintf("netagent-test-%d", time.Now().UnixNano())}
	var initial []string
	for i := range opts.Members {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			dir:       filepath.Join(dir, fmt.Sprintf("m%d", i)),
			peerURL:   url.URL{Scheme: "http", Host: freeAddr(t)},
			clientURL: url.URL{Scheme: "http", Host: freeAddr(t)},
		}
		p, err := newProxy(m.clientURL.Host)
		if err != nil {
			t.Fatalf("etcd cluster: client proxy of %s: %v", m.Name, err)
		}
		m.proxy = p
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.peerURL.String())
	}
	c.initial = strings.Join(initial, ",")
	t.Cleanup(func() {
		for _, m := range c.Members {
			m.proxy.close()
		}
		c.stopAll()
	})
	c.StartAll()
	return c
}

// freeAddr returns a loopback address with a port free at the time,
// below the kernel's ephemeral range (32768 and up by default): the
// members keep their ports for the cluster's life (the peer URLs are in
// the initial cluster, a restarted member listens again), and a port
// from the ephemeral range, which listen(:0) and every outgoing
// connection draw from, would be taken by another test or connection
// before the member binds it, or while it is stopped.
func freeAddr(t testing.TB) string {
	for range 1000 {
		port := 10000 + rand.IntN(22000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	t.Fatalf("etcd cluster: no free port below the ephemeral range")
	return ""
}

// config is member m's etcd configuration.
func (c *Cluster) config(m *Member) *embed.Config {
	ec := embed.NewConfig()
	ec.Name = m.Name
	ec.Dir = m.dir
	ec.ListenClientUrls = []url.URL{m.clientURL}
	ec.AdvertiseClientUrls = []url.URL{m.clientURL}
	ec.ListenPeerUrls = []url.URL{m.peerURL}
	ec.AdvertisePeerUrls = []url.URL{m.peerURL}
	ec.InitialCluster = c.initial
	ec.InitialClusterToken = c.token
	ec.ClusterState = embed.ClusterStateFlagNew // ignored on a data directory that has a cluster
	ec.TickMs = c.opts.TickMs
	ec.ElectionMs = c.opts.ElectionMs
	ec.LogLevel = "warn"
	ec.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdsource.ZapLogger(c.opts.Log.With("member", m.Name)))
	return ec
}

// StartAll starts every stopped member and waits until all serve clients
// (a member is ready once the cluster has a leader and it caught up).
func (c *Cluster) StartAll() {
	c.t.Helper()
	var stopped []int
	for i, m := range c.Members {
		if m.server() == nil {
			stopped = append(stopped, i)
		}
	}
	c.start(stopped...)
}

// Restart starts stopped member i and waits until it serves clients.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.start(i)
}

func (c *Cluster) start(members ...int) {
	c.t.Helper()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for k, i := range members {
		m := c.Members[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := embed.StartEtcd(c.config(m))
			if err != nil {
				errs[k] = fmt.Errorf("%s: %w", m.Name, err)
				return
			}
			select {
			case <-e.Server.ReadyNotify():
			case err := <-e.Err():
				e.Close()
				errs[k] = fmt.Errorf("%s failed while starting: %v", m.Name, err)
				return
			case <-time.After(time.Minute):
				e.Close()
				errs[k] = fmt.Errorf("%s not ready within a minute", m.Name)
				return
			}
			m.mu.Lock()
			m.etcd = e
			m.mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.t.Fatalf("etcd cluster: %v", err)
	}
}

// server is the member's running etcd, nil while it is stopped.
func (m *Member) server() *embed.Etcd {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.etcd
}

// ID is the member's raft ID (0 while it is stopped).
func (m *Member) ID() types.ID {
	if e := m.server(); e != nil {
		return e.Server.MemberID()
	}
	return 0
}

// Running tells whether the member runs.
func (m *Member) Running() bool { return m.server() != nil }

// Endpoint is the URL clients reach the member at, through its proxy.
func (m *Member) Endpoint() string { return "http://" + m.proxy.addr() }

// DirectEndpoint is the member's own client URL.
func (m *Member) DirectEndpoint() string { return m.clientURL.String() }

// Hold hangs the member's client connections: its proxy passes no byte
// either way until Release. New connections are accepted and hang too.
func (m *Member) Hold() { m.proxy.hold() }

// Release ends Hold: what was held is passed on.
func (m *Member) Release() { m.proxy.release() }

// DropConnections closes the client connections through the proxy (the
// member keeps running; clients reconnect).
func (m *Member) DropConnections() { m.proxy.dropConnections() }

// Endpoints are the client URLs of every member, through their proxies.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.Endpoint())
	}
	return out
}

// Client returns a client of the members given, every member when none
// (directly, not through the proxies), closed when the test ends. (A
// client of an isolated member waits for its requests' timeouts there: a
// writer that must not wait leaves it out.)
func (c *Cluster) Client(members ...int) *clientv3.Client {
	c.t.Helper()
	if len(members) == 0 {
		for i := range c.Members {
			members = append(members, i)
		}
	}
	var eps []string
	for _, i := range members {
		eps = append(eps, c.Members[i].DirectEndpoint())
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatalf("etcd cluster: client: %v", err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// Others are the indexes of every member but i.
func (c *Cluster) Others(i int) []int {
	var out []int
	for j := range c.Members {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}

// Leader returns the index of the leader as the running members see it,
// waiting up to a minute for one that all running members that are not
// isolated agree on.
func (c *Cluster) Leader() int {
	c.t.Helper()
	deadline := time.After(time.Minute)
	// Raft's state is polled every heartbeat: no notification covers all
	// members.
	tick := time.NewTicker(time.Duration(c.opts.TickMs) * time.Millisecond)
	defer tick.Stop()
	for {
		if i, ok := c.leader(); ok {
			return i
		}
		select {
		case <-deadline:
			c.t.Fatalf("etcd cluster: no leader within a minute")
		case <-tick.C:
		}
	}
}

func (c *Cluster) leader() (int, bool) {
	var lead types.ID
	for _, m := range c.Members {
		e := m.server()
		if e == nil || m.proxy.isolated.Load() {
			continue
		}
		l := e.Server.Leader()
		if l == 0 || (lead != 0 && l != lead) {
			return 0, false
		}
		lead = l
	}
	for i, m := range c.Members {
		if m.ID() == lead && lead != 0 {
			return i, true
		}
	}
	return 0, false
}

// Stop stops member i gracefully (a leader hands its leadership over).
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	c.Members[i].stop()
}

// Kill stops member i as a crash would: it is cut off from its peers
// first, so that a leader cannot hand its leadership over.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	c.Isolate(i)
	c.Members[i].stop()
	c.Heal(i)
}

func (m *Member) stop() {
	m.mu.Lock()
	e := m.etcd
	m.etcd = nil
	m.mu.Unlock()
	if e == nil {
		return
	}
	e.Close()
	<-e.Server.StopNotify()
}

// StopAll stops every member.
func (c *Cluster) StopAll() {
	c.t.Helper()
	c.stopAll()
}

func (c *Cluster) stopAll() {
	var wg sync.WaitGroup
	for _, m := range c.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.stop()
		}()
	}
	wg.Wait()
}

// Isolate cuts member i off from the other members (both ways); its
// clients still reach it.
func (c *Cluster) Isolate(i int) {
	c.t.Helper()
	c.cut(i, true)
}

// Heal ends Isolate.
func (c *Cluster) Heal(i int) {
	c.t.Helper()
	c.cut(i, false)
}

func (c *Cluster) cut(i int, cut bool) {
	m := c.Members[i]
	m.proxy.isolated.Store(cut)
	for j, o := range c.Members {
		if j == i {
			continue
		}
		for _, pair := range [][2]*Member{{m, o}, {o, m}} {
			e, peer := pair[0].server(), pair[1]
			if e == nil {
				continue
			}
			id := peer.ID()
			if id == 0 {
				id = c.memberID(pair[0], peer)
			}
			if cut {
				e.Server.CutPeer(id)
			} else {
				e.Server.MendPeer(id)
			}
		}
	}
}

// memberID is peer's ID as member m knows it (peer may be stopped).
func (c *Cluster) memberID(m, peer *Member) types.ID {
	e := m.server()
	if e == nil {
		return 0
	}
	for _, mm := range e.Server.Cluster().Members() {
		if mm.Name == peer.Name {
			return mm.ID
		}
	}
	return 0
}

// Compact compacts the cluster's history up to rev (physically: it waits
// until the members applied it).
func (c *Cluster) Compact(ctx context.Context, cli *clientv3.Client, rev int64) {
	c.t.Helper()
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		c.t.Fatalf("etcd cluster: compact to %d: %v", rev, err)
	}
}

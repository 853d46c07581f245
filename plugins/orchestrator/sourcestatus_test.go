package orchestrator_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// connector is a Connector whose state the test sets.
type connector struct {
	mu   sync.Mutex
	conn orchestrator.Connection
}

func (c *connector) Connection() orchestrator.Connection {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn
}

func (c *connector) set(conn orchestrator.Connection) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = conn
}

// TestSourcesAndDegraded: the sources are listed highest priority first,
// active without a connection and as their connector says with one; a
// lost or stopped connection makes the agent degraded (with the reason),
// not unready, and nothing of the lost source is deleted while the other
// sources' changes still apply.
func TestSourcesAndDegraded(t *testing.T) {
	o, _, b := newEnv(t, nil)
	ctx := context.Background()
	etcd := &connector{conn: orchestrator.Connection{State: orchestrator.SourceConnecting, Error: "dial tcp 127.0.0.1:2379: connection refused"}}
	o.Register(orchestrator.SourceInitFile, orchestrator.SourceEtcd, orchestrator.SourceGRPC)
	o.RegisterConnection(orchestrator.SourceEtcd, etcd)

	states := func() string {
		var out []string
		for _, st := range o.Sources() {
			s := string(st.ID) + "=" + string(st.State)
			if st.Synced {
				s += "(synced)"
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	if got, want := states(), "grpc=active etcd=connecting init-file=active"; got != want {
		t.Errorf("Sources before any state: %s, want %s", got, want)
	}
	if d := o.Degraded(); d != nil {
		t.Errorf("Degraded while etcd connects for the first time: %q, want none (the agent is not ready instead)", d)
	}

	since := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	etcd.set(orchestrator.Connection{State: orchestrator.SourceConnected, Since: since, Revision: 7})
	for _, id := range []orchestrator.SourceID{orchestrator.SourceGRPC, orchestrator.SourceInitFile} {
		if _, err := o.Resync(ctx, id, nil, api.TxnOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{kv("item/e", "from etcd")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := states(), "grpc=active(synced) etcd=connected(synced) init-file=active(synced)"; got != want {
		t.Errorf("Sources after the first sync: %s, want %s", got, want)
	}
	if got := o.Sources()[1].Connection; !reflect.DeepEqual(got, etcd.Connection()) {
		t.Errorf("Sources: etcd's connection %+v, want what its connector says: %+v", got, etcd.Connection())
	}
	if d := o.Degraded(); d != nil {
		t.Errorf("Degraded with etcd connected: %q", d)
	}

	// etcd lost: degraded with the reason, still ready; etcd's value stays
	// and a gRPC change applies.
	etcd.set(orchestrator.Connection{State: orchestrator.SourceLost, Since: since, Error: "context deadline exceeded", Revision: 7, Losses: 1})
	d := o.Degraded()
	want := "source etcd lost its connection at 2025-03-04T05:06:07Z (context deadline exceeded); its last state (revision 7) stays applied"
	if len(d) != 1 || !strings.HasPrefix(d[0], want) {
		t.Errorf("Degraded with etcd lost: %q, want one reason starting %q", d, want)
	}
	if ok, why := o.Ready(); !ok {
		t.Errorf("Ready with etcd lost: not ready, waiting for %q; want ready (degraded)", why)
	}
	if _, err := o.Change(ctx, orchestrator.SourceGRPC, []orchestrator.KV{kv("item/g", "from gRPC")}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	if got := b.items; !reflect.DeepEqual(got, map[string]string{"item/e": "from etcd", "item/g": "from gRPC"}) {
		t.Errorf("SB with etcd lost after a gRPC change: %v", got)
	}
	b.mu.Unlock()

	etcd.set(orchestrator.Connection{State: orchestrator.SourceStopped, Since: since, Error: "etcdserver: permission denied", Revision: 7, Losses: 1})
	if d := o.Degraded(); len(d) != 1 || !strings.HasPrefix(d[0], "source etcd stopped at 2025-03-04T05:06:07Z (etcdserver: permission denied)") {
		t.Errorf("Degraded with etcd stopped: %q", d)
	}

	etcd.set(orchestrator.Connection{State: orchestrator.SourceConnected, Since: since.Add(time.Minute), Revision: 9, Losses: 1})
	if d := o.Degraded(); d != nil {
		t.Errorf("Degraded with etcd back: %q", d)
	}
}

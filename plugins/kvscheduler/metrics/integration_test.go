package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
	"github.com/netagent-io/netagent/plugins/kvscheduler/metrics"
	"github.com/netagent-io/netagent/plugins/kvscheduler/rest"
)

// TestWiredToAScheduler: the metrics of a real scheduler, as the daemon
// wires them: the observer in the options, the scheduler as the source.
func TestWiredToAScheduler(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := kvscheduler.New(kvscheduler.Options{Observer: m, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer s.Close()
	m.SetSource(s)
	sb := mocksb.New()
	if err := s.RegisterKVDescriptor(
		sb.Descriptor(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true}),
		sb.Descriptor(mocksb.Options{Name: "route", Prefix: "route/", NB: true, Deps: mocksb.DependsOn}),
	); err != nil {
		t.Fatal(err)
	}
	sb.Fail("create", "iface/b", nil, 1)
	txn := s.StartNBTransaction().
		SetValue("iface/a", mocksb.Str("a")).
		SetValue("iface/b", mocksb.Str("b")).
		SetValue("route/r1", mocksb.Str("dep=iface/a")).
		SetValue("route/r2", mocksb.Str("dep=iface/x"))
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err == nil {
		t.Fatal("commit with a failing create: no error")
	}
	want := `
# HELP netagent_scheduler_operations_total Descriptor CRUD callbacks that returned, by descriptor, operation and result.
# TYPE netagent_scheduler_operations_total counter
netagent_scheduler_operations_total{descriptor="iface",operation="create",result="error"} 1
netagent_scheduler_operations_total{descriptor="iface",operation="create",result="ok"} 1
netagent_scheduler_operations_total{descriptor="route",operation="create",result="ok"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "netagent_scheduler_operations_total"); err != nil {
		t.Error(err)
	}
	wantValues := `
# HELP netagent_scheduler_values Values in the KV Scheduler's graph by descriptor and state (derived values included).
# TYPE netagent_scheduler_values gauge
netagent_scheduler_values{descriptor="iface",state="configured"} 1
netagent_scheduler_values{descriptor="iface",state="failed"} 1
netagent_scheduler_values{descriptor="route",state="configured"} 1
netagent_scheduler_values{descriptor="route",state="pending"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantValues), "netagent_scheduler_values"); err != nil {
		t.Error(err)
	}
}

// followUpWatch is an observer that passes the events on to the metrics
// and tells when a follow-up transaction is done.
type followUpWatch struct {
	*metrics.Metrics
	done chan struct{}
}

func (w followUpWatch) TxnDone(rec *api.RecordedTxn, wait time.Duration, failed bool) {
	w.Metrics.TxnDone(rec, wait, failed)
	if rec != nil && rec.TxnType == api.FollowUp {
		w.done <- struct{}{}
	}
}

// TestFollowUpTransaction: the transaction of a descriptor's
// api.RequestReconcile is counted under its own type.
func TestFollowUpTransaction(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := followUpWatch{Metrics: m, done: make(chan struct{}, 1)}
	s := kvscheduler.New(kvscheduler.Options{Observer: w, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer s.Close()
	m.SetSource(s)
	var asked atomic.Bool
	if err := s.RegisterKVDescriptor(&api.KVDescriptor{
		Name:        "item",
		NBKeyPrefix: "item/",
		KeySelector: func(k string) bool { return strings.HasPrefix(k, "item/") },
		Create: func(ctx context.Context, key string, _ proto.Message) (any, error) {
			// The first create asks for one more look at its value.
			if !asked.Swap(true) {
				return nil, api.RequestReconcile(ctx, key)
			}
			return nil, nil
		},
		Delete: func(context.Context, string, proto.Message, any) error { return nil },
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartNBTransaction().SetValue("item/a", mocksb.Str("a")).Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("no follow-up transaction after a RequestReconcile")
	}
	want := `
# HELP netagent_scheduler_transactions_total Transactions finished by the KV Scheduler, by type, resync type and result.
# TYPE netagent_scheduler_transactions_total counter
netagent_scheduler_transactions_total{result="ok",resync="none",type="follow_up_requested_by_a_descriptor"} 1
netagent_scheduler_transactions_total{result="ok",resync="none",type="nb_transaction"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "netagent_scheduler_transactions_total"); err != nil {
		t.Error(err)
	}
}

// TestScrapeAndRESTAnswerDuringABlockedCall: while a descriptor call of a
// transaction blocks (a hung VPP), the Prometheus scrape and the REST
// status, stats and NB/cached dumps answer, from the state as of the last
// finished transaction.
func TestScrapeAndRESTAnswerDuringABlockedCall(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := kvscheduler.New(kvscheduler.Options{Observer: m, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer s.Close()
	m.SetSource(s)
	sb := mocksb.New()
	if err := s.RegisterKVDescriptor(sb.Descriptor(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartNBTransaction().SetValue("iface/a", mocksb.Str("a")).Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // before Close, also when the test fails
	sb.Hook = func(_ context.Context, kind, key string) {
		if key == "iface/slow" {
			close(entered)
			<-release
		}
	}
	committed := make(chan error, 1)
	go func() {
		_, err := s.StartNBTransaction().SetValue("iface/slow", mocksb.Str("s")).Commit(context.Background(), api.TxnOptions{})
		committed <- err
	}()
	<-entered

	mux := http.NewServeMux()
	mux.Handle("/scheduler/", rest.NewHandler(s, rest.Options{}))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	for path, want := range map[string]string{
		"/scheduler/status?key=iface/a":                `"CONFIGURED"`,
		"/scheduler/stats":                             `"CONFIGURED": 1`,
		"/scheduler/dump?descriptor=iface&view=NB":     `iface/a`,
		"/scheduler/dump?descriptor=iface&view=cached": `iface/a`,
		"/metrics": `netagent_scheduler_values{descriptor="iface",state="configured"} 1`,
	} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Errorf("GET %s during a blocked call: %v", path, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %s, want %s", path, resp.StatusCode, body, want)
		}
		if strings.Contains(string(body), "iface/slow") && strings.Contains(path, "dump") {
			t.Errorf("GET %s shows iface/slow before its transaction ended: %s", path, body)
		}
	}
	// The value of the running transaction is not known yet.
	if resp, err := client.Get(srv.URL + "/scheduler/status?key=iface/slow"); err != nil {
		t.Errorf("status of iface/slow during its transaction: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("status of iface/slow during its transaction: %d, want 404 (not yet there)", resp.StatusCode)
		}
	}
	unblock()
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
}

package webui_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
	"github.com/netagent-io/netagent/plugins/kvscheduler/webui"
)

// BenchmarkWebUI100k measures one request of each page over HTTP
// (loopback, rendering and transfer included) against a scheduler holding
// 100,001 values, committed in one transaction (no-op mock descriptors):
//
//	iface/hub and route/hub/NNNN (1,000 routes on the hub)
//	iface/ifNNNNNN and route/rNNNNNN (44,500 interfaces, a route on each)
//	route/pNNNNN (10,000 routes on missing interfaces: PENDING)
//
// Warm: the index of the revision is built (the first request after a
// change builds it; the "after a change" cases measure that request:
// a one-value transaction, untimed, then the page).
//
// Run: go test -run '^$' -bench WebUI100k -benchtime 20x -count 5 -cpu 2 ./plugins/kvscheduler/webui/
func BenchmarkWebUI100k(b *testing.B) {
	const ifaces, hubRoutes, pending = 44_500, 1_000, 10_000
	sb := mocksb.New()
	s := kvscheduler.New(kvscheduler.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer s.Close()
	if err := s.RegisterKVDescriptor(
		sb.Descriptor(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true}),
		sb.Descriptor(mocksb.Options{Name: "route", Prefix: "route/", NB: true, Deps: mocksb.DependsOn}),
	); err != nil {
		b.Fatal(err)
	}
	txn := s.StartNBTransaction()
	txn.SetValue("iface/hub", mocksb.Str("hub"))
	for i := range hubRoutes {
		txn.SetValue(fmt.Sprintf("route/hub/%04d", i), mocksb.Str("via hub dep=iface/hub"))
	}
	for i := range ifaces {
		txn.SetValue(fmt.Sprintf("iface/if%06d", i), mocksb.Str("if"))
		txn.SetValue(fmt.Sprintf("route/r%06d", i), mocksb.Str(fmt.Sprintf("r dep=iface/if%06d", i)))
	}
	for i := range pending {
		txn.SetValue(fmt.Sprintf("route/p%05d", i), mocksb.Str(fmt.Sprintf("p dep=iface/missing%05d", i)))
	}
	seq, err := txn.Commit(context.Background(), api.TxnOptions{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(webui.NewHandler(s, webui.Options{}))
	defer srv.Close()
	client := srv.Client()
	get := func(b *testing.B, path string) {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
	change := 0
	commitOne := func(b *testing.B) {
		change++
		_, err := s.StartNBTransaction().SetValue("iface/churn", mocksb.Str(fmt.Sprint(change))).Commit(context.Background(), api.TxnOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct{ name, path string }{
		{"summary", "/ui/"},
		{"values/first-page", "/ui/values"},
		{"values/state=PENDING", "/ui/values?state=PENDING"},
		{"values/state=CONFIGURED&descriptor=route", "/ui/values?state=CONFIGURED&descriptor=route"},
		{"values/prefix=route/r0123", "/ui/values?prefix=route/r0123"},
		{"values/q=f0123", "/ui/values?q=f0123"},
		{"values/last-page", "/ui/values?page=1001"},
		{"values/size=1000", "/ui/values?size=1000&page=50"},
		{"value/hub-1000-dependents", "/ui/value?key=iface/hub"},
		{"value/route", "/ui/value?key=route/r012345"},
		{"value/pending", "/ui/value?key=route/p01234"},
		{"txns", "/ui/txns"},
		{"txn/100k-ops", fmt.Sprintf("/ui/txn?seq=%d", seq)},
	} {
		b.Run(c.name, func(b *testing.B) {
			get(b, c.path) // the index of this revision
			b.ResetTimer()
			for b.Loop() {
				get(b, c.path)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/req")
		})
	}
	for _, c := range []struct{ name, path string }{
		{"after-a-change/summary", "/ui/"},
		{"after-a-change/values/state=PENDING", "/ui/values?state=PENDING"},
		{"after-a-change/value/hub-1000-dependents", "/ui/value?key=iface/hub"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				commitOne(b)
				b.StartTimer()
				get(b, c.path)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/req")
		})
	}
}

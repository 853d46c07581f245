package rest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api/apitest"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
	"github.com/netagent-io/netagent/plugins/kvscheduler/rest"
)

// fuzzEndpoints are the endpoints FuzzQuery sends every query to.
var fuzzEndpoints = []struct{ method, path string }{
	{"GET", "/scheduler/"},
	{"GET", "/scheduler/txn-history"},
	{"GET", "/scheduler/key-timeline"},
	{"GET", "/scheduler/graph-snapshot"},
	{"GET", "/scheduler/graph"},
	{"GET", "/scheduler/dump"},
	{"GET", "/scheduler/status"},
	{"GET", "/scheduler/stats"},
	{"POST", "/scheduler/downstream-resync"},
}

// FuzzQuery: whatever the query, every endpoint answers 200, 400, 404 or
// 501 (never 500, never a panic), and a JSON answer is valid JSON.
func FuzzQuery(f *testing.F) {
	clock := apitest.NewClock(t0)
	s := kvscheduler.New(kvscheduler.Options{Clock: clock, Logger: discardLogger(), HistorySize: 50})
	f.Cleanup(s.Close)
	sb := mocksb.New()
	if err := s.RegisterKVDescriptor(
		sb.Descriptor(mocksb.Options{Name: "iface", Prefix: "iface/", NB: true}),
		sb.Descriptor(mocksb.Options{Name: "route", Prefix: "route/", NB: true, Deps: mocksb.DependsOn}),
	); err != nil {
		f.Fatal(err)
	}
	for _, step := range []map[string]string{
		{"route/r1": "via a dep=iface/a"},
		{"iface/a": "a"},
		{"iface/b": "b", "route/r2": "dep=iface/zzz"},
	} {
		clock.Advance(time.Second)
		txn := s.StartNBTransaction()
		for k, v := range step {
			txn.SetValue(k, mocksb.Str(v))
		}
		if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
			f.Fatal(err)
		}
	}
	h := rest.NewHandler(s, rest.Options{GraphTimeout: 10 * time.Second})

	for _, seed := range []string{
		"",
		"seq-num=1", "seq-num=2&format=text", "seq-num=0", "seq-num=abc", "seq-num=999", "seq-num=1&seq-num=2",
		"since=1795262401&until=1795262402", "since=2026-11-21T12:00:01Z&format=text", "since=1795262401.5",
		"since=2026-11-21T13:00:02%2B01:00", "since=yesterday", "since=-5", "until=0&since=1", "since=1e12", "since=NaN",
		"key=route/r1", "key=route/r1&time=1795262401.5", "key=route/r1&format=text", "key=iface/nope", "key=",
		"time=1795262402", "time=0", "time=2026-11-21T12:00:02.5Z",
		"txn=1", "txn=2&format=dot", "txn=3&format=mermaid", "format=json", "format=svg", "txn=999", "format=png",
		"descriptor=iface", "descriptor=iface&view=NB", "key-prefix=route/&view=cached", "key-prefix=&view=SB",
		"descriptor=nope", "descriptor=iface&key-prefix=route/", "view=XY", "descriptor=",
		"key=iface/a", "descriptor=route", "key-prefix=iface/", "key=a&descriptor=b",
		"retry=true&verbose=1", "retry=maybe",
		"%zz", ";", "a=1;b=2", "&&&", "=", "key=%00%ff", "key=%E2%80%AE", "format=text&format=text",
		strings.Repeat("x=1&", 50), "since=" + strings.Repeat("9", 400), "time=1e-400", "seq-num=18446744073709551615",
	} {
		f.Add(seed)
	}

	f.Fuzz(func(t *testing.T, rawQuery string) {
		for _, ep := range fuzzEndpoints {
			req := httptest.NewRequest(ep.method, ep.path, nil)
			req.URL.RawQuery = rawQuery
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			switch rec.Code {
			case http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusNotImplemented:
			default:
				t.Fatalf("%s %s?%s: %d %s", ep.method, ep.path, rawQuery, rec.Code, rec.Body)
			}
			if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s %s?%s: invalid JSON: %q", ep.method, ep.path, rawQuery, rec.Body)
			}
			if rec.Code != http.StatusOK {
				var body map[string]string
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] == "" {
					t.Fatalf("%s %s?%s: %d without a JSON error: %q", ep.method, ep.path, rawQuery, rec.Code, rec.Body)
				}
			}
		}
	})
}

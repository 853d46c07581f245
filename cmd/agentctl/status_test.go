package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPrintStatusNorthbound: the Agent, etcd and Sources lines of the
// status table for an agent whose etcd is connected, lost (degraded), and
// for an agent older than the northbound status (no Sources line, etcd
// without a state).
func TestPrintStatusNorthbound(t *testing.T) {
	since := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	local := since.Local().Format("2006-01-02 15:04:05")
	for _, c := range []struct {
		name, status string
		want         []string // lines of the table, columns squeezed
	}{
		{
			name: "connected",
			status: `{"ready":true,"first_sync":true,"etcd":{"endpoints":["http://127.0.0.1:2379"],"embedded":true},
				"northbound":[{"source":"grpc","state":"active","synced":true},
					{"source":"etcd","state":"connected","since":"2025-03-04T05:06:07Z","for":"3m0s","revision":42,"synced":true},
					{"source":"init-file","state":"active","synced":true}]}`,
			want: []string{
				"Agent: ready",
				"etcd: http://127.0.0.1:2379 (embedded): connected since " + local + " (3m0s), revision 42",
				"Sources: grpc active, etcd connected, init-file active",
			},
		},
		{
			name: "lost",
			status: `{"ready":true,"first_sync":true,"etcd":{"endpoints":["http://10.0.0.1:2379"]},
				"degraded":["source etcd lost its connection at 2025-03-04T05:06:07Z (boom); its last state (revision 42) stays applied"],
				"northbound":[{"source":"grpc","state":"active","synced":true},
					{"source":"etcd","state":"lost","since":"2025-03-04T05:06:07Z","for":"1m30s","error":"reading the state: boom","revision":42,"losses":2,"synced":true}]}`,
			want: []string{
				"Agent: ready, DEGRADED: source etcd lost its connection at 2025-03-04T05:06:07Z (boom); its last state (revision 42) stays applied",
				"etcd: http://10.0.0.1:2379: LOST since " + local + " (1m30s): reading the state: boom; last revision 42; 2 losses since the start",
				"Sources: grpc active, etcd lost",
			},
		},
		{
			name: "connecting for the first time",
			status: `{"ready":false,"waiting_for":["first state of source etcd"],"etcd":{"endpoints":["http://10.0.0.1:2379"]},
				"northbound":[{"source":"grpc","state":"active","synced":true},
					{"source":"etcd","state":"connecting","since":"2025-03-04T05:06:07Z","for":"5s","error":"refused"}]}`,
			want: []string{
				"Agent: NOT READY, waiting for: first state of source etcd",
				"etcd: http://10.0.0.1:2379: connecting since " + local + " (5s): refused",
				"Sources: grpc active, etcd connecting (no state yet)",
			},
		},
		{
			name:   "an older agent",
			status: `{"ready":true,"first_sync":true,"etcd":{"endpoints":["http://127.0.0.1:2379"],"embedded":true}}`,
			want:   []string{"Agent: ready", "etcd: http://127.0.0.1:2379 (embedded)"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var st agentStatus
			if err := json.Unmarshal([]byte(c.status), &st); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			a := &app{stdout: &out}
			if err := a.printStatus(st); err != nil {
				t.Fatal(err)
			}
			squeezed := regexp.MustCompile(`(?m)^(\S+:) +`).ReplaceAllString(out.String(), "$1 ")
			got := map[string]string{}
			for _, line := range strings.Split(squeezed, "\n") {
				if head, _, ok := strings.Cut(line, " "); ok {
					got[head] = line
				}
			}
			for _, want := range c.want {
				head, _, _ := strings.Cut(want, " ")
				if got[head] != want {
					t.Errorf("line %s: %q, want %q", head, got[head], want)
				}
			}
			if _, has := got["Sources:"]; has != (len(st.Northbound) > 0) {
				t.Errorf("a Sources line: %v, want one when the agent tells the sources:\n%s", has, out.String())
			}
		})
	}
}

package etcdsource

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// TestConnectionStates walks the connection through its states on a fake
// clock and checks the state and the lines logged above debug level at
// each step: one when etcd cannot be reached at first, one at the
// connection, one at each loss and one at each recovery, none per retry.
func TestConnectionStates(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	t0 := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	now := t0
	c := newConnection(log, func() time.Time { return now })
	lines := func() string {
		defer buf.Reset()
		return strings.TrimSpace(buf.String())
	}
	step := func(what string, want orchestrator.Connection, wantLog string) {
		t.Helper()
		if got := c.get(); got != want {
			t.Errorf("%s: %+v, want %+v", what, got, want)
		}
		if got := lines(); got != wantLog {
			t.Errorf("%s: logged\n%s\nwant\n%s", what, got, wantLog)
		}
	}

	c.starting()
	step("starting", orchestrator.Connection{State: orchestrator.SourceConnecting, Since: t0}, "")
	now = t0.Add(time.Second)
	c.failed(errors.New("refused"), time.Second)
	c.failed(errors.New("refused again"), 2*time.Second)
	step("two failures before the first connection",
		orchestrator.Connection{State: orchestrator.SourceConnecting, Since: t0, Error: "refused again"},
		`level=WARN msg="cannot reach etcd; retrying until it answers (the agent is not ready before it read etcd's state)" error=refused`)

	now = t0.Add(3 * time.Second)
	c.established(10)
	c.seen(12)
	c.established(11) // a read after a compaction: still connected since then
	step("connected", orchestrator.Connection{State: orchestrator.SourceConnected, Since: now, Revision: 12},
		`level=INFO msg="connected to etcd" revision=10 after=3s`)

	for round := uint64(1); round <= 2; round++ {
		lostAt := now.Add(time.Minute)
		now = lostAt
		c.failed(errors.New("watch ended"), time.Second)
		now = now.Add(90 * time.Second)
		c.failed(errors.New("deadline"), 2*time.Second)
		c.seen(99) // a late watch response: not a revision of the lost connection
		step(fmt.Sprintf("lost (%d)", round),
			orchestrator.Connection{State: orchestrator.SourceLost, Since: lostAt, Error: "deadline", Revision: 12, Losses: round},
			`level=WARN msg="lost the connection to etcd; retrying until it is back (the agent keeps serving; the last state read from etcd stays applied)" error="watch ended" revision=12`)
		c.established(12)
		step(fmt.Sprintf("back (%d)", round), orchestrator.Connection{State: orchestrator.SourceConnected, Since: now, Revision: 12, Losses: round},
			`level=INFO msg="the connection to etcd is back; applying its state" revision=12 lost-for=1m30s lost-at-revision=12`)
	}

	c.stopped(errors.New("permission denied"))
	c.failed(errors.New("late"), time.Second)
	c.established(13)
	step("stopped", orchestrator.Connection{State: orchestrator.SourceStopped, Since: now, Error: "permission denied", Revision: 12, Losses: 2}, "")
}

package etcdsource_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
)

// logRecords is a slog.Handler that keeps the records (all levels).
type logRecords struct {
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }

func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, rec)
	return nil
}

// matching returns the records at level whose message starts with prefix.
func (l *logRecords) matching(level slog.Level, prefix string) []logRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logRecord
	for _, r := range l.records {
		if r.level == level && strings.HasPrefix(r.msg, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// withAttr returns the records that have an attribute key.
func (l *logRecords) withAttr(key string) []logRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logRecord
	for _, r := range l.records {
		if _, ok := r.attrs[key]; ok {
			out = append(out, r)
		}
	}
	return out
}

// above returns the records above debug level, as text.
func (l *logRecords) above() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.records {
		if r.level > slog.LevelDebug {
			out = append(out, fmt.Sprintf("%s %s %v", r.level, r.msg, r.attrs))
		}
	}
	return out
}

// waitConnection waits until the source's connection satisfies cond.
func waitConnection(t *testing.T, src *etcdsource.Source, what string, cond func(orchestrator.Connection) bool) orchestrator.Connection {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		c := src.Connection()
		if cond(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection not %s after %v: %+v", what, waitTimeout, c)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnectionFollowsEtcd: etcd stopped and started again under a
// running source. The connection is connected with the last revision
// seen, lost (since the loss, with the error, counted) while etcd is away,
// and connected again once it is back; the loss is logged once (warn, with
// the error) and the recovery once (info, with how long it lasted),
// however many retries failed in between; what changed is applied.
func TestConnectionFollowsEtcd(t *testing.T) {
	h := newHarness(t)
	h.put(prefix+vppIfKey+"a", vppIf("a", 1))
	logs := &logRecords{}
	// A short read timeout: each retry while etcd is away fails quickly.
	h.run(etcdsource.Options{Log: slog.New(logs), ReadTimeout: 300 * time.Millisecond})
	h.waitSynced()

	rev := h.put(prefix+vppIfKey+"b", vppIf("b", 1))
	h.waitEtcdState()
	up := waitConnection(t, h.src, "connected at the revision of the last put", func(c orchestrator.Connection) bool {
		return c.State == orchestrator.SourceConnected && c.Revision >= rev
	})
	if up.Since.IsZero() || up.Error != "" || up.Losses != 0 {
		t.Errorf("connection before etcd stops: %+v", up)
	}
	if n := len(logs.matching(slog.LevelInfo, "connected to etcd")); n != 1 {
		t.Errorf("%d info lines 'connected to etcd', want 1; logs: %q", n, logs.above())
	}

	stoppedAt := time.Now()
	h.etcd.stop()
	lost := waitConnection(t, h.src, "lost", func(c orchestrator.Connection) bool { return c.State == orchestrator.SourceLost })
	if lost.Since.Before(stoppedAt) || lost.Error == "" || lost.Losses != 1 || lost.Revision != up.Revision {
		t.Errorf("connection after etcd stopped at %v: %+v, want lost since then, with an error, 1 loss, revision %d", stoppedAt, lost, up.Revision)
	}
	// Retries fail meanwhile (each logged with the wait before the next).
	deadline := time.Now().Add(waitTimeout)
	for len(logs.withAttr("retry-in")) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no 3 failed retries while etcd is away; logs: %q", logs.above())
		}
		time.Sleep(10 * time.Millisecond)
	}
	still := h.src.Connection()
	if still.State != orchestrator.SourceLost || !still.Since.Equal(lost.Since) || still.Losses != 1 || !strings.HasPrefix(still.Error, "reading the state: ") {
		t.Errorf("connection after failed retries: %+v, want lost since %v with the error of the last read", still, lost.Since)
	}
	if retries := logs.withAttr("retry-in"); slices.ContainsFunc(retries, func(r logRecord) bool { return r.level != slog.LevelDebug }) {
		t.Errorf("failed retries logged above debug level: %+v", retries)
	}
	warns := logs.matching(slog.LevelWarn, "lost the connection to etcd")
	if len(warns) != 1 || warns[0].attrs["error"] == "" {
		t.Errorf("warn lines of the loss: %+v, want one with the error; logs: %q", warns, logs.above())
	}

	h.etcd.start()
	back := waitConnection(t, h.src, "connected again", func(c orchestrator.Connection) bool { return c.State == orchestrator.SourceConnected })
	if !back.Since.After(lost.Since) || back.Error != "" || back.Losses != 1 || back.Revision < rev {
		t.Errorf("connection after etcd is back: %+v", back)
	}
	rev = h.put(prefix+vppIfKey+"c", vppIf("c", 1))
	h.del(prefix + vppIfKey + "a")
	h.waitEtcdState()
	waitConnection(t, h.src, "at the revision of the put after the restart", func(c orchestrator.Connection) bool { return c.Revision > rev })

	infos := logs.matching(slog.LevelInfo, "the connection to etcd is back")
	if len(infos) != 1 || infos[0].attrs["lost-for"] == "" {
		t.Errorf("info lines of the recovery: %+v, want one with how long it was lost; logs: %q", infos, logs.above())
	}
	if n := len(logs.matching(slog.LevelWarn, "")); n != 1 {
		t.Errorf("%d warn lines, want only the loss's; logs: %q", n, logs.above())
	}
	calls, _ := h.sink.snapshot()
	if resyncs := slices.IndexFunc(calls[1:], func(c call) bool { return c.resync }); resyncs < 0 {
		t.Errorf("no Resync after etcd came back: %v", calls)
	}
}

// TestConnectionStopped: a source that stops on an error retrying cannot
// fix says so, with the error.
func TestConnectionStopped(t *testing.T) {
	h := newHarness(t)
	src := etcdsource.New(h.cli, h.sink, etcdsource.Options{Label: "a/b", Log: testLog()})
	if c := src.Connection(); c.State != orchestrator.SourceConnecting {
		t.Errorf("connection before Run: %+v, want connecting", c)
	}
	err := src.Run(context.Background())
	c := src.Connection()
	if err == nil || c.State != orchestrator.SourceStopped || c.Error != err.Error() || c.Since.IsZero() {
		t.Errorf("Run: %v; connection %+v, want stopped with the error", err, c)
	}
}

package etcdsource

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logLines decodes the JSON lines of a slog.JSONHandler.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestSlogCore(t *testing.T) {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
	closing := new(atomic.Bool)
	core := newSlogCore(slog.New(h), zapcore.WarnLevel, closing)

	if core.Enabled(zapcore.InfoLevel) || !core.Enabled(zapcore.WarnLevel) || !core.Enabled(zapcore.ErrorLevel) {
		t.Error("Enabled does not follow the minimum level warn")
	}
	lg := zap.New(core).Named("raft").With(zap.String("member", "m1"))
	lg.Info("not shown")
	lg.Warn("slow", zap.Int("n", 2), zap.Error(errors.New("boom")), zap.Namespace("ns"), zap.String("k", "v"))
	lg.Error("failed", zap.Strings("urls", []string{"a", "b"}))
	closing.Store(true)
	lg.Error("serving failed", zap.Error(errors.New("accept tcp: use of closed network connection")))
	lg.Error("real problem", zap.Error(errors.New("disk full")))

	// While closing, the errors of closed listeners are debug: shown only
	// when debug is.
	debug := zap.New(newSlogCore(slog.New(h), zapcore.DebugLevel, closing))
	debug.Error("serving failed", zap.Error(errors.New("mux: server closed")))

	lines := logLines(t, &buf)
	want := []map[string]any{
		{"level": "WARN", "msg": "slow", "logger": "raft", "member": "m1", "n": float64(2), "error": "boom", "ns": map[string]any{"k": "v"}},
		{"level": "ERROR", "msg": "failed", "logger": "raft", "member": "m1", "urls": []any{"a", "b"}},
		{"level": "ERROR", "msg": "real problem", "error": "disk full"},
		{"level": "DEBUG", "msg": "serving failed", "error": "mux: server closed"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		for k, v := range w {
			got, _ := json.Marshal(lines[i][k])
			exp, _ := json.Marshal(v)
			if string(got) != string(exp) {
				t.Errorf("line %d: %s = %s, want %s (line %v)", i, k, got, exp, lines[i])
			}
		}
	}

	// The handler's level applies too.
	buf.Reset()
	quiet := newSlogCore(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError})), zapcore.DebugLevel, nil)
	if quiet.Enabled(zapcore.WarnLevel) || !quiet.Enabled(zapcore.ErrorLevel) {
		t.Error("Enabled does not follow the handler's level")
	}
}

func TestLevels(t *testing.T) {
	for _, c := range []struct {
		slog slog.Level
		zap  zapcore.Level
	}{
		{slog.LevelDebug - 4, zapcore.DebugLevel},
		{slog.LevelDebug, zapcore.DebugLevel},
		{slog.LevelInfo, zapcore.InfoLevel},
		{slog.LevelWarn, zapcore.WarnLevel},
		{slog.LevelError, zapcore.ErrorLevel},
	} {
		if got := zapLevel(c.slog); got != c.zap {
			t.Errorf("zapLevel(%v) = %v, want %v", c.slog, got, c.zap)
		}
	}
	for z, s := range map[zapcore.Level]slog.Level{
		zapcore.DebugLevel: slog.LevelDebug, zapcore.InfoLevel: slog.LevelInfo, zapcore.WarnLevel: slog.LevelWarn,
		zapcore.ErrorLevel: slog.LevelError, zapcore.DPanicLevel: slog.LevelError, zapcore.FatalLevel: slog.LevelError,
	} {
		if got := slogLevel(z); got != s {
			t.Errorf("slogLevel(%v) = %v, want %v", z, got, s)
		}
	}
}

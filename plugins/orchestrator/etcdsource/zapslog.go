package etcdsource

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogCore is a zapcore.Core writing to a slog.Handler, so that etcd's zap
// logs go where the agent's logs go.
type slogCore struct {
	h   slog.Handler
	min zapcore.Level
	// closing: the server is being closed; the errors of its listeners
	// being closed are expected and logged at debug level.
	closing *atomic.Bool
}

// newSlogCore returns a core writing entries at min and above to log.
func newSlogCore(log *slog.Logger, min zapcore.Level, closing *atomic.Bool) zapcore.Core {
	return &slogCore{h: log.Handler(), min: min, closing: closing}
}

// slogLevel maps a zap level to a slog level.
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default: // error, dpanic, panic, fatal
		return slog.LevelError
	}
}

// zapLevel maps a slog level to the lowest zap level it lets through.
func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l <= slog.LevelDebug:
		return zapcore.DebugLevel
	case l <= slog.LevelInfo:
		return zapcore.InfoLevel
	case l <= slog.LevelWarn:
		return zapcore.WarnLevel
	default:
		return zapcore.ErrorLevel
	}
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return l >= c.min && c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	if len(fields) == 0 {
		return c
	}
	return &slogCore{h: c.h.WithAttrs(attrs(fields)), min: c.min, closing: c.closing}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slogLevel(e.Level)
	if c.closing != nil && c.closing.Load() && closeNoise(fields) {
		level = slog.LevelDebug
		if c.min > zapcore.DebugLevel || !c.h.Enabled(context.Background(), level) {
			return nil
		}
	}
	r := slog.NewRecord(e.Time, level, e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(attrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }

// closeNoise tells whether an entry's error is that of a listener or server
// being closed.
func closeNoise(fields []zapcore.Field) bool {
	for _, f := range fields {
		if f.Type != zapcore.ErrorType {
			continue
		}
		if err, ok := f.Interface.(error); ok && err != nil {
			msg := strings.ToLower(err.Error())
			if strings.Contains(msg, "use of closed network connection") || strings.Contains(msg, "server closed") {
				return true
			}
		}
	}
	return false
}

// attrs converts zap fields to slog attributes, in their order. A zap
// namespace becomes a group holding the fields that follow it.
func attrs(fields []zapcore.Field) []slog.Attr {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	out := make([]slog.Attr, 0, len(fields))
	done := map[string]bool{}
	for _, f := range fields {
		v, ok := enc.Fields[f.Key]
		if !ok || done[f.Key] {
			continue
		}
		done[f.Key] = true
		out = append(out, attr(f.Key, v))
	}
	return out
}

// attr converts a value of a zapcore.MapObjectEncoder to an attribute.
func attr(key string, v any) slog.Attr {
	if m, ok := v.(map[string]any); ok {
		group := make([]any, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			group = append(group, attr(k, m[k]))
		}
		return slog.Group(key, group...)
	}
	return slog.Any(key, v)
}

// ZapLogger returns a zap logger that writes into log (warnings and above),
// for the etcd client, so that etcd's logging goes where the agent's goes.
func ZapLogger(log *slog.Logger) *zap.Logger {
	return zap.New(newSlogCore(log, zapcore.WarnLevel, &atomic.Bool{}))
}

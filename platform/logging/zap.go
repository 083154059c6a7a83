package logging

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Zap returns a zap logger writing into log at level and above, so
// libraries that log with zap (the etcd client) share the process's one
// log format.
func Zap(log *slog.Logger, level zapcore.Level) *zap.Logger {
	return zap.New(&zapCore{h: log.Handler(), level: level})
}

// zapCore is a zapcore.Core that turns entries into slog records.
type zapCore struct {
	h     slog.Handler
	level zapcore.Level
	attrs []slog.Attr
}

func (c *zapCore) Enabled(l zapcore.Level) bool {
	return l >= c.level && c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *zapCore) With(fields []zapcore.Field) zapcore.Core {
	return &zapCore{h: c.h, level: c.level, attrs: append(append([]slog.Attr(nil), c.attrs...), toAttrs(fields)...)}
}

func (c *zapCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *zapCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(c.attrs...)
	r.AddAttrs(toAttrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

func (c *zapCore) Sync() error { return nil }

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

// toAttrs renders zap fields through zap's own map encoder, which knows
// every field type.
func toAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	out := make([]slog.Attr, 0, len(enc.Fields))
	for k, v := range enc.Fields {
		out = append(out, slog.Any(k, v))
	}
	return out
}

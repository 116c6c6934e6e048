package raftlog

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// slogLogger adapts a *slog.Logger to hclog.Logger, the logger hashicorp/raft takes: records
// go to the slog handler with hclog's key/value pairs as attributes, Trace as Debug-4, and the
// hclog name as a "raft" attribute. Its level is the handler's.
type slogLogger struct {
	log  *slog.Logger
	name string
	args []any
}

var _ hclog.Logger = (*slogLogger)(nil)

// NewHCLogger returns an hclog.Logger that writes to log.
func NewHCLogger(log *slog.Logger) hclog.Logger { return &slogLogger{log: log} }

const levelTrace = slog.LevelDebug - 4

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return levelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (l *slogLogger) Log(level hclog.Level, msg string, args ...any) {
	lv := slogLevel(level)
	if !l.log.Enabled(context.Background(), lv) {
		return
	}
	l.log.Log(context.Background(), lv, msg, args...)
}

func (l *slogLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *slogLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *slogLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *slogLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *slogLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *slogLogger) enabled(lv hclog.Level) bool {
	return l.log.Enabled(context.Background(), slogLevel(lv))
}

func (l *slogLogger) IsTrace() bool { return l.enabled(hclog.Trace) }
func (l *slogLogger) IsDebug() bool { return l.enabled(hclog.Debug) }
func (l *slogLogger) IsInfo() bool  { return l.enabled(hclog.Info) }
func (l *slogLogger) IsWarn() bool  { return l.enabled(hclog.Warn) }
func (l *slogLogger) IsError() bool { return l.enabled(hclog.Error) }

func (l *slogLogger) ImpliedArgs() []any { return l.args }

func (l *slogLogger) With(args ...any) hclog.Logger {
	return &slogLogger{log: l.log.With(args...), name: l.name, args: append(append([]any(nil), l.args...), args...)}
}

func (l *slogLogger) Name() string { return l.name }

func (l *slogLogger) Named(name string) hclog.Logger {
	if l.name != "" {
		name = l.name + "." + name
	}
	return l.ResetNamed(name)
}

func (l *slogLogger) ResetNamed(name string) hclog.Logger {
	return &slogLogger{log: l.log.With("raft", name), name: name, args: l.args}
}

// SetLevel is ignored: the slog handler decides.
func (l *slogLogger) SetLevel(hclog.Level) {}

func (l *slogLogger) GetLevel() hclog.Level {
	for _, lv := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn} {
		if l.enabled(lv) {
			return lv
		}
	}
	return hclog.Error
}

func (l *slogLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

func (l *slogLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer { return stdWriter{l} }

// stdWriter logs each line written at Info, or at the level its "[LEVEL]" prefix names.
type stdWriter struct{ l *slogLogger }

func (w stdWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := hclog.Info
	for prefix, lv := range map[string]hclog.Level{"[TRACE]": hclog.Trace, "[DEBUG]": hclog.Debug,
		"[INFO]": hclog.Info, "[WARN]": hclog.Warn, "[ERR]": hclog.Error, "[ERROR]": hclog.Error} {
		if strings.HasPrefix(msg, prefix) {
			level, msg = lv, strings.TrimSpace(strings.TrimPrefix(msg, prefix))
			break
		}
	}
	w.l.Log(level, msg)
	return len(p), nil
}

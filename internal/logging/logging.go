package logging

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"gopkg.in/natefinch/lumberjack.v2"
)

// Config holds the logging keys of the broker and the name server.
type Config struct {
	// LogDir is the folder of the log files (RocketMQ's ${user.home}/logs/rocketmqlogs); "" = stderr only.
	LogDir string `mapstructure:"logDir"`
	// LogLevel is DEBUG, INFO (default), WARN or ERROR (RocketMQ's names; WARNING is WARN too).
	LogLevel string `mapstructure:"logLevel"`
	// LogFileMaxSize is the size in MiB at which a log file is rotated (128).
	LogFileMaxSize int `mapstructure:"logFileMaxSize"`
	// LogFileMaxIndex is how many rotated files are kept per log (10); 0 keeps them all.
	LogFileMaxIndex int `mapstructure:"logFileMaxIndex"`
}

// DefaultConfig is RocketMQ's layout under the user's home: ~/logs/rocketmqlogs, INFO, 128 MiB, 10 files.
func DefaultConfig() Config {
	dir := ""
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		dir = filepath.Join(home, "logs", "rocketmqlogs")
	}
	return Config{LogDir: dir, LogLevel: "INFO", LogFileMaxSize: 128, LogFileMaxIndex: 10}
}

// ParseLevel reads a logLevel value.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "DEBUG", "TRACE", "ALL":
		return slog.LevelDebug, nil
	case "INFO":
		return slog.LevelInfo, nil
	case "WARN", "WARNING":
		return slog.LevelWarn, nil
	case "ERROR", "OFF":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%q is not DEBUG, INFO, WARN or ERROR", s)
}

// Validate names the first bad key.
func (c Config) Validate() error {
	if _, err := ParseLevel(c.LogLevel); err != nil {
		return fmt.Errorf("config key logLevel: %w", err)
	}
	if c.LogFileMaxSize <= 0 {
		return fmt.Errorf("config key logFileMaxSize: %d must be positive (MiB)", c.LogFileMaxSize)
	}
	if c.LogFileMaxIndex < 0 {
		return fmt.Errorf("config key logFileMaxIndex: %d is negative (0 keeps every rotated file)", c.LogFileMaxIndex)
	}
	return nil
}

// Layout says which file each component's records go to.
type Layout struct {
	Default    string            // file of records with no listed component (broker.log, namesrv.log)
	Components map[string]string // component -> file
	FileOnly   map[string]bool   // components written to their file only, not to stderr (stats)
	Plain      map[string]bool   // files written as RocketMQ's plain lines (stats.log)
}

// Component names that carry meaning to the layouts (the "component" attribute's values).
const (
	ComponentKey   = "component"
	ComponentStats = "stats"
)

// BrokerLayout is mqbroker's: broker.log, store.log, remoting.log, stats.log.
func BrokerLayout() Layout {
	return Layout{
		Default: "broker.log",
		Components: map[string]string{
			"store": "store.log", "raftlog": "store.log", "ha-master": "store.log", "ha-slave": "store.log",
			"remoting": "remoting.log", "namesrv-client": "remoting.log",
			ComponentStats: "stats.log",
		},
		FileOnly: map[string]bool{ComponentStats: true},
		Plain:    map[string]bool{"stats.log": true},
	}
}

// NamesrvLayout is mqnamesrv's: everything in namesrv.log.
func NamesrvLayout() Layout { return Layout{Default: "namesrv.log"} }

// Logs is a process's logging: the root logger, its level and the open files.
type Logs struct {
	Logger *slog.Logger
	level  *slog.LevelVar
	dir    string
	files  map[string]*lumberjack.Logger
}

// Open builds the logger of cfg and layout over stderr and the files (created as needed in cfg.LogDir,
// which is created too). With an empty LogDir only stderr is written.
func Open(cfg Config, layout Layout, stderr io.Writer) (*Logs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lv, _ := ParseLevel(cfg.LogLevel)
	l := &Logs{level: new(slog.LevelVar), dir: cfg.LogDir, files: map[string]*lumberjack.Logger{}}
	l.level.Set(lv)
	opts := &slog.HandlerOptions{Level: l.level}
	r := &router{layout: layout, level: l.level, stderr: slog.NewTextHandler(stderr, opts), files: map[string]slog.Handler{}}
	if cfg.LogDir != "" {
		if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
			return nil, fmt.Errorf("config key logDir: %w", err)
		}
		names := map[string]bool{layout.Default: true}
		for _, f := range layout.Components {
			names[f] = true
		}
		for name := range names {
			path := filepath.Join(cfg.LogDir, name)
			// Open the file now, so a folder we cannot write to stops start-up with the reason.
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, fmt.Errorf("config key logDir: %w", err)
			}
			_ = f.Close()
			lj := &lumberjack.Logger{Filename: path, MaxSize: cfg.LogFileMaxSize, MaxBackups: cfg.LogFileMaxIndex, LocalTime: true}
			l.files[name] = lj
			if layout.Plain[name] {
				r.files[name] = &plainHandler{w: lj, level: l.level, mu: new(sync.Mutex)}
			} else {
				r.files[name] = slog.NewTextHandler(lj, opts)
			}
		}
	}
	l.Logger = slog.New(r)
	return l, nil
}

// Dir is the folder of the files ("" when only stderr is written).
func (l *Logs) Dir() string { return l.dir }

// Level is the level in force.
func (l *Logs) Level() slog.Level { return l.level.Level() }

// SetLevel changes the level of every logger derived from Logger, at once.
func (l *Logs) SetLevel(s string) error {
	lv, err := ParseLevel(s)
	if err != nil {
		return fmt.Errorf("config key logLevel: %w", err)
	}
	if old := l.level.Level(); old != lv {
		l.level.Set(lv)
		l.Logger.Info("log level changed", "logLevel", lv.String(), "was", old.String())
	}
	return nil
}

// Rotate starts a new file for every log now (the old ones are kept as if they had reached their size).
func (l *Logs) Rotate() error {
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Rotate())
	}
	return errors.Join(errs...)
}

// Close closes the files. Records logged afterwards go to stderr and reopen their file.
func (l *Logs) Close() error {
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// router is the slog.Handler of Open: each record to stderr and to its component's file.
type router struct {
	layout    Layout
	level     slog.Leveler
	stderr    slog.Handler
	files     map[string]slog.Handler // by file name, with the attributes and groups of this logger
	component string                  // set by With("component", ...)
}

func (r *router) Enabled(_ context.Context, lv slog.Level) bool { return lv >= r.level.Level() }

func (r *router) Handle(ctx context.Context, rec slog.Record) error {
	comp := r.component
	if comp == "" {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == ComponentKey {
				comp = a.Value.String()
				return false
			}
			return true
		})
	}
	var errs []error
	if !r.layout.FileOnly[comp] {
		errs = append(errs, r.stderr.Handle(ctx, rec))
	}
	file := r.layout.Default
	if f, ok := r.layout.Components[comp]; ok {
		file = f
	}
	if h := r.files[file]; h != nil {
		errs = append(errs, h.Handle(ctx, rec))
	}
	return errors.Join(errs...)
}

func (r *router) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := r.clone()
	for _, a := range attrs {
		if a.Key == ComponentKey {
			n.component = a.Value.String()
		}
	}
	n.stderr = r.stderr.WithAttrs(attrs)
	for name, h := range r.files {
		n.files[name] = h.WithAttrs(attrs)
	}
	return n
}

func (r *router) WithGroup(name string) slog.Handler {
	n := r.clone()
	n.stderr = r.stderr.WithGroup(name)
	for f, h := range r.files {
		n.files[f] = h.WithGroup(name)
	}
	return n
}

func (r *router) clone() *router {
	n := *r
	n.files = make(map[string]slog.Handler, len(r.files))
	return &n
}

// plainHandler writes RocketMQ's stats.log lines: "2026-12-02 17:01:00,004 INFO - <message>", attributes
// left out.
type plainHandler struct {
	w     io.Writer
	level slog.Leveler
	mu    *sync.Mutex
}

func (h *plainHandler) Enabled(_ context.Context, lv slog.Level) bool { return lv >= h.level.Level() }

func (h *plainHandler) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Time.Format("2006-01-02 15:04:05,000") + " " + rec.Level.String() + " - " + rec.Message + "\n"
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line)
	return err
}

func (h *plainHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *plainHandler) WithGroup(string) slog.Handler      { return h }

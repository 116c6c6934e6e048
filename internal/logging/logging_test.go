package logging

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, cfg Config, layout Layout) (*Logs, *bytes.Buffer) {
	t.Helper()
	var stderr bytes.Buffer
	l, err := Open(cfg, layout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, &stderr
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Each component's records land in its file and on stderr; stats only in stats.log, as RocketMQ's lines.
func TestRoutingByComponent(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.LogDir = dir
	l, stderr := open(t, cfg, BrokerLayout())
	l.Logger.Info("broker started", "addr", "127.0.0.1:10911")
	l.Logger.With("component", "store").Info("commitlog recovered")
	l.Logger.With("component", "ha-master").With("slave", "x").Warn("slave fell behind")
	l.Logger.Info("conn closed", "component", "remoting") // the attribute on the record itself
	l.Logger.With("component", "raft").Info("leader elected")
	l.Logger.With("component", ComponentStats).Info("[TOPIC_PUT_NUMS] [T] Stats In One Minute, SUM: 6 TPS: 0.10 AVGPT: 1.00")

	for file, want := range map[string][]string{
		"broker.log":   {"msg=\"broker started\"", "msg=\"leader elected\""},
		"store.log":    {"msg=\"commitlog recovered\"", "msg=\"slave fell behind\" component=ha-master slave=x"},
		"remoting.log": {"msg=\"conn closed\""},
		"stats.log":    {" INFO - [TOPIC_PUT_NUMS] [T] Stats In One Minute, SUM: 6 TPS: 0.10 AVGPT: 1.00\n"},
	} {
		got := read(t, dir, file)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q:\n%s", file, w, got)
			}
		}
		if n := strings.Count(got, "\n"); n != len(want) {
			t.Errorf("%s has %d lines, want %d:\n%s", file, n, len(want), got)
		}
	}
	if s := read(t, dir, "stats.log"); !regexpStatsLine(s) {
		t.Errorf("stats.log line not in RocketMQ's form: %q", s)
	}
	if strings.Contains(stderr.String(), "Stats In One Minute") {
		t.Error("stats lines reached stderr")
	}
	if n := strings.Count(stderr.String(), "\n"); n != 5 {
		t.Errorf("stderr has %d lines, want the 5 non-stats records:\n%s", n, stderr.String())
	}

	dir2 := t.TempDir()
	cfg.LogDir = dir2
	ns, _ := open(t, cfg, NamesrvLayout())
	ns.Logger.With("component", "remoting").Info("conn closed")
	ns.Logger.Info("broker registered")
	if got := read(t, dir2, "namesrv.log"); strings.Count(got, "\n") != 2 {
		t.Errorf("namesrv.log should hold both records:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir2, "remoting.log")); !os.IsNotExist(err) {
		t.Errorf("the name server wrote a remoting.log: %v", err)
	}
}

func regexpStatsLine(s string) bool {
	// 2026-12-02 17:01:00,004 INFO - [...]
	if len(s) < 24 {
		return false
	}
	_, err := time.Parse("2006-01-02 15:04:05,000", s[:23])
	return err == nil && strings.HasPrefix(s[23:], " INFO - [")
}

// A file past logFileMaxSize is rotated; at most logFileMaxIndex rotated files are kept.
func TestRotationBySizeAndCount(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{LogDir: dir, LogLevel: "INFO", LogFileMaxSize: 1, LogFileMaxIndex: 2}
	l, _ := open(t, cfg, BrokerLayout())
	store := l.Logger.With("component", "store")
	pad := strings.Repeat("x", 1000)
	for i := 0; i < 4*1100; i++ { // about 4.4 MiB: four rotations
		store.Info("filler", "i", i, "pad", pad)
	}
	rotated := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "store-*.log"))
		return m
	}
	// lumberjack removes the oldest files on a goroutine of its own after a rotation: poll.
	deadline := time.Now().Add(10 * time.Second)
	for len(rotated()) != 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := rotated(); len(got) != 2 {
		t.Fatalf("rotated store logs %v, want 2 (logFileMaxIndex)", got)
	}
	for _, f := range append(rotated(), filepath.Join(dir, "store.log")) {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 1<<20 {
			t.Errorf("%s is %d bytes, above logFileMaxSize 1 MiB", f, st.Size())
		}
	}
	if got := read(t, dir, "store.log"); !strings.Contains(got, "i=4399 ") {
		t.Errorf("the newest record is not in store.log")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "broker.log")); len(b) != 0 {
		t.Errorf("store records leaked into broker.log")
	}
}

// The level applies to stderr and files, changes at run time for loggers made before, and a bad value
// names logLevel.
func TestLevelChangeAtRunTime(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.LogDir = dir
	l, stderr := open(t, cfg, BrokerLayout())
	store := l.Logger.With("component", "store") // derived before the change
	store.Debug("hidden at INFO")
	if err := l.SetLevel("debug"); err != nil {
		t.Fatal(err)
	}
	store.Debug("shown at DEBUG")
	if err := l.SetLevel("WARN"); err != nil {
		t.Fatal(err)
	}
	store.Info("hidden at WARN")
	store.Warn("shown at WARN")
	got := read(t, dir, "store.log")
	for _, w := range []string{"shown at DEBUG", "shown at WARN"} {
		if !strings.Contains(got, w) || !strings.Contains(stderr.String(), w) {
			t.Errorf("%q missing from store.log or stderr", w)
		}
	}
	for _, w := range []string{"hidden at INFO", "hidden at WARN"} {
		if strings.Contains(got, w) || strings.Contains(stderr.String(), w) {
			t.Errorf("%q was written", w)
		}
	}
	if !strings.Contains(read(t, dir, "broker.log"), "log level changed") {
		t.Error("the change itself is not logged")
	}
	if err := l.SetLevel("LOUD"); err == nil || !strings.Contains(err.Error(), "config key logLevel") {
		t.Errorf("SetLevel(LOUD) = %v, want an error naming logLevel", err)
	}
	if l.Level().String() != "WARN" {
		t.Errorf("a refused level changed the level to %s", l.Level())
	}
}

func TestBadConfigNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{LogLevel: "LOUD", LogFileMaxSize: 1}, "logLevel"},
		{Config{LogLevel: "INFO", LogFileMaxSize: 0}, "logFileMaxSize"},
		{Config{LogLevel: "INFO", LogFileMaxSize: 1, LogFileMaxIndex: -1}, "logFileMaxIndex"},
	} {
		if _, err := Open(tc.cfg, BrokerLayout(), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{LogDir: filepath.Join(file, "sub"), LogLevel: "INFO", LogFileMaxSize: 1}, BrokerLayout(), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "logDir") {
		t.Errorf("a logDir under a file: %v, want an error naming logDir", err)
	}
}

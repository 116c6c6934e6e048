package testutil

import (
	"strings"
	"sync"
	"testing"
)

// LogLines is an io.Writer for a test's slog handler: it keeps every line for assertions (Count) and
// passes each to t.Log until the test ends (a server goroutine may still log after that, which t.Log
// would refuse). Safe for concurrent use.
type LogLines struct {
	t  testing.TB
	mu struct {
		sync.Mutex
		lines []string
		ended bool
	}
}

// NewLogLines returns a LogLines that forwards to t.Log while the test runs.
func NewLogLines(t testing.TB) *LogLines {
	l := &LogLines{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.mu.ended = true
		l.mu.Unlock()
	})
	return l
}

// Write keeps p as one line (a handler writes one record per call).
func (l *LogLines) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.lines = append(l.mu.lines, line)
	if !l.mu.ended {
		l.t.Log(line)
	}
	return len(p), nil
}

// Count is the number of lines holding every one of parts.
func (l *LogLines) Count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, line := range l.mu.lines {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		n++
	}
	return n
}

package testutil

import (
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/rocketraft/rocketraft/internal/freeport"
)

// FreePort is a TCP port free on 127.0.0.1 at the time of the call, from below the kernel's ephemeral
// range (internal/freeport), so no outbound connection is given it before the caller's server listens.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Logger is a logger at level whose lines go to t.Log until the test ends (later lines, from
// goroutines still winding down, are dropped: t.Log would refuse them).
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// testWriter sends log lines to t.Log until the test ends.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool // guarded by mu
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

package testutil

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor checks its condition: short next to the waits it serves, long
// enough not to spin a core on a loaded machine.
const pollEvery = 2 * time.Millisecond

// WaitFor polls cond until it holds, failing the test with what after timeout. The timeout only
// guards against a hang: pass one generous for a loaded machine, never one a passing run is timed by.
// cond runs on the calling goroutine.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pollEvery)
	}
}

package store

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestFileBudgetWarnsThenRefuses: with a vm.max_map_count 200 mappings (plus the runtime's reserve) above
// what the process maps now, new mappings are counted from the process's real total, the one that would
// eat into the reserve is refused with ErrMapLimit naming the limit and a value to raise it to, nothing is
// left counted for it, and past 80 % of a limit the check warns naming vm.max_map_count.
func TestFileBudgetWarnsThenRefuses(t *testing.T) {
	now, err := countLines("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	var logs bytes.Buffer
	b := &budget{nextCheck: 1, keep: 10, mapLimit: now + 10 + 200, log: slog.New(slog.NewTextHandler(&logs, nil))}
	var refused error
	made := 0
	for range 10_000 {
		if refused = b.reserve("f"); refused != nil {
			break
		}
		made++
	}
	if !errors.Is(refused, ErrMapLimit) || !strings.Contains(refused.Error(), "vm.max_map_count") ||
		!strings.Contains(refused.Error(), "sysctl -w vm.max_map_count=262144") {
		t.Fatalf("after %d reservations: %v, want ErrMapLimit naming vm.max_map_count and a value", made, refused)
	}
	// The process's own mappings may move a little meanwhile (the runtime, other tests).
	if made < 150 || made > 250 {
		t.Fatalf("refused after %d reservations, want about 200 (limit %d, keep %d, mapped %d)", made, b.mapLimit, b.keep, now)
	}
	if got := b.live.Load(); got != int64(made) {
		t.Fatalf("live %d after %d reservations and one refusal", got, made)
	}
	for range made {
		b.release()
	}
	if b.live.Load() != 0 {
		t.Fatalf("live %d after releasing all", b.live.Load())
	}
	if now*100 < b.mapLimit*budgetWarnPercent && strings.Contains(logs.String(), "vm.max_map_count") {
		t.Fatalf("warned below 80 %%: %s", logs.String())
	}
	b.mu.Lock()
	b.mapLimit = now // at 100 % now
	b.checkLocked(0)
	b.mu.Unlock()
	if !strings.Contains(logs.String(), "vm.max_map_count") || !strings.Contains(logs.String(), "raiseTo=262144") {
		t.Fatalf("no warning naming vm.max_map_count and a value to raise it to; log:\n%s", logs.String())
	}
}

func TestSuggestLimit(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{{0, 262_144}, {60_000, 262_144}, {140_000, 327_680}} {
		if got := suggestLimit(c.n); got != c.want {
			t.Errorf("suggestLimit(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

package testutil

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	WaitFor(t, time.Minute, "the third poll", func() bool { return n.Add(1) >= 3 })
	if got := n.Load(); got != 3 {
		t.Fatalf("cond ran %d times, want 3", got)
	}
}

// fatalRecorder records Fatalf instead of ending the test, so the failure path can be checked.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

func TestWaitForFailsNamingWhatAfterTheTimeout(t *testing.T) {
	r := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		WaitFor(r, 20*time.Millisecond, "never", func() bool { return false })
	}()
	if !strings.Contains(r.msg, "never") {
		t.Fatalf("WaitFor failed with %q, want a message naming what it waited for", r.msg)
	}
}

func TestLogLinesCountsLinesHoldingEveryPart(t *testing.T) {
	l := NewLogLines(t)
	for _, s := range []string{"level=WARN msg=\"peer refused\" peer=n2\n", "level=WARN msg=\"peer refused\" peer=n3\n", "level=INFO msg=started\n"} {
		if n, err := l.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got := l.Count("peer refused"); got != 2 {
		t.Errorf("Count(peer refused) = %d, want 2", got)
	}
	if got := l.Count("peer refused", "n3"); got != 1 {
		t.Errorf("Count(peer refused, n3) = %d, want 1", got)
	}
	if got := l.Count("nowhere"); got != 0 {
		t.Errorf("Count(nowhere) = %d, want 0", got)
	}
}

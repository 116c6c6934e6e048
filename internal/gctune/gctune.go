package gctune

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultFloorMB is the floor of the servers' gcHeapFloorMB key and of the benchmark drivers;
// MaxFloorMB is the largest floor a configuration may ask for.
const (
	DefaultFloorMB = 64
	MaxFloorMB     = 1 << 16
)

// CheckFloorMB says what is wrong with a configured floor of mb MiB, nil when nothing is.
func CheckFloorMB(mb int) error {
	if mb < 0 || mb > MaxFloorMB {
		return fmt.Errorf("%d is not within [0, %d] MiB", mb, MaxFloorMB)
	}
	return nil
}

// maxPercent bounds the GOGC the tuner sets (a live heap of a few hundred KiB would otherwise ask
// for a six-figure percentage).
const maxPercent = 10000

// Tuner is a running tuner; Stop ends it.
type Tuner struct {
	floor    uint64
	log      *slog.Logger
	adjusted func(live uint64, percent int) // tests: called after every check, once re-armed

	mu      sync.Mutex // Stop and adjust (the finalizer goroutine)
	stopped bool
	percent int // the GOGC last set
	samples []metrics.Sample
}

// Start starts keeping the heap target at least floor bytes, unless floor is 0 or GOGC is set in
// the environment (then it returns nil: nothing to stop). Only one tuner should run in a process:
// GOGC is process-wide.
func Start(floor uint64, log *slog.Logger) *Tuner { return start(floor, log, nil) }

func start(floor uint64, log *slog.Logger, adjusted func(live uint64, percent int)) *Tuner {
	if floor == 0 {
		return nil
	}
	if v, ok := os.LookupEnv("GOGC"); ok {
		log.Info("GOGC is set in the environment: the heap floor is not applied", "GOGC", v)
		return nil
	}
	t := &Tuner{floor: floor, log: log, adjusted: adjusted, percent: 100,
		samples: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.arm()
	return t
}

// Stop ends the tuning and gives GOGC back its default (100). Safe on a nil Tuner.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(100)
	}
}

// sentinel is garbage made to be collected: its finalizer runs after the collection that freed
// it, which is the tuner's hook into every GC cycle.
type sentinel struct{ t *Tuner }

func (t *Tuner) arm() {
	s := &sentinel{t: t}
	runtime.SetFinalizer(s, func(s *sentinel) { s.t.collected() })
}

// collected runs on the finalizer goroutine after a collection freed the sentinel: it adjusts,
// arms a new sentinel for the next collection and only then tells a test's hook, so that a
// collection the test starts after hearing of this one is seen too (told before re-arming, the
// test's next runtime.GC could run before the new sentinel existed, and no check would follow).
func (t *Tuner) collected() {
	live, percent, running := t.adjust()
	if !running {
		return
	}
	t.arm()
	if t.adjusted != nil {
		t.adjusted(live, percent)
	}
}

// percentFor is the GOGC that puts the target of a heap with live bytes at the floor, at least
// 100 and at most maxPercent.
func percentFor(live, floor uint64) int {
	if live == 0 || live*2 >= floor {
		return 100
	}
	p := (floor - live) * 100 / live
	return int(min(max(p, 100), maxPercent))
}

// adjust sets GOGC for the live heap the last collection left, when it moved by more than a
// tenth, and returns that live heap and the GOGC in force; running is false once the tuner is
// stopped.
func (t *Tuner) adjust() (live uint64, percent int, running bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return 0, 0, false
	}
	metrics.Read(t.samples)
	if t.samples[0].Value.Kind() == metrics.KindUint64 {
		live = t.samples[0].Value.Uint64()
	}
	p := percentFor(live, t.floor)
	if d := p - t.percent; d*10 > t.percent || -d*10 > t.percent {
		debug.SetGCPercent(p)
		t.log.Debug("heap target", "liveBytes", live, "GOGC", p, "floorBytes", t.floor)
		t.percent = p
	}
	return live, t.percent, true
}

package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The kernel bounds two per-process costs of a mapped file (a CommitLog file, a ConsumeQueue file once
// the queue has a unit, an IndexFile): one memory mapping, limited by vm.max_map_count (65,530 by
// default; the Go runtime's own heap needs mappings from the same budget, and a process that cannot map
// heap dies), and one open descriptor, limited by RLIMIT_NOFILE. A ConsumeQueue without messages has
// neither, so only queues that were written to count: 10,000 topics x 8 queues with a message in each
// need about 80,000 of both, which the defaults do not allow.
//
// fileBudget counts the store's live mappings (every store of the process) and, every budgetCheckEvery
// new ones, the process's real totals (lines of /proc/self/maps, entries of /proc/self/fd). Above
// budgetWarnPercent of a limit it logs a warning naming the limit and a value to raise it to; a new
// mapping that would leave fewer than budgetReserve mappings to the runtime is refused with
// ErrMapLimit, so the broker reports errors for the new queues instead of dying.
var fileBudget = newFileBudget()

const (
	budgetCheckEvery  = 512
	budgetWarnPercent = 80
	budgetReserve     = 2048
)

// ErrMapLimit is wrapped when a file is not mapped because the process is close to vm.max_map_count.
var ErrMapLimit = errors.New("store: too close to vm.max_map_count to map another file")

type budget struct {
	live atomic.Int64 // mappings made by mapFile and not yet unmapped

	mu        sync.Mutex
	log       *slog.Logger
	mapLimit  int64 // vm.max_map_count; 0 when unknown
	fdLimit   int64 // RLIMIT_NOFILE (soft); 0 when unknown
	nextCheck int64 // live count at which the totals are read again
	maps      int64 // process mappings at the last check ...
	liveThen  int64 // ... when live was this
	fds       int64 // process descriptors at the last check
	keep      int64 // mappings left to the runtime (budgetReserve)
}

func newFileBudget() *budget {
	b := &budget{nextCheck: budgetCheckEvery, keep: budgetReserve}
	if v, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		b.mapLimit, _ = strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur < 1<<40 {
		b.fdLimit = int64(rl.Cur)
	}
	return b
}

// setLogger gives the budget a logger for its warnings (the first store opened).
func (b *budget) setLogger(l *slog.Logger) {
	b.mu.Lock()
	if b.log == nil {
		b.log = l
	}
	b.mu.Unlock()
}

// reserve accounts for one more mapping, or refuses it with ErrMapLimit; release undoes it.
func (b *budget) reserve(path string) error {
	n := b.live.Add(1)
	if b.mapLimit <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n >= b.nextCheck {
		b.checkLocked(n)
	}
	if est := b.maps + n - b.liveThen; est >= b.mapLimit-b.keep {
		b.live.Add(-1)
		return fmt.Errorf("%w: mapping %s would make about %d of vm.max_map_count %d (%d kept for the runtime); "+
			"raise it, e.g. sysctl -w vm.max_map_count=%d", ErrMapLimit, path, est+1, b.mapLimit, b.keep, suggestLimit(est))
	}
	return nil
}

func (b *budget) release() { b.live.Add(-1) }

// checkLocked reads the process's mappings and descriptors and warns above budgetWarnPercent of a limit.
// Lock should be held.
func (b *budget) checkLocked(live int64) {
	b.nextCheck = live + budgetCheckEvery
	if maps, err := countLines("/proc/self/maps"); err == nil {
		b.maps, b.liveThen = maps, live
	} else {
		b.maps, b.liveThen = live, live
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		b.fds = int64(len(ents))
	}
	log := b.log
	if log == nil {
		log = slog.Default()
	}
	if b.maps*100 >= b.mapLimit*budgetWarnPercent {
		log.Warn("memory mappings near vm.max_map_count: each ConsumeQueue with messages, CommitLog and index file maps one; "+
			"raise vm.max_map_count (sysctl -w vm.max_map_count=N, and in /etc/sysctl.conf)",
			"mappings", b.maps, "vm.max_map_count", b.mapLimit, "raiseTo", suggestLimit(b.maps), "storeMappings", live)
	}
	if b.fdLimit > 0 && b.fds*100 >= b.fdLimit*budgetWarnPercent {
		log.Warn("open files near RLIMIT_NOFILE: each ConsumeQueue with messages, CommitLog and index file holds one; "+
			"raise the limit (ulimit -n N, LimitNOFILE=N under systemd)",
			"openFiles", b.fds, "limit", b.fdLimit, "raiseTo", suggestLimit(b.fds))
	}
}

// suggestLimit is a limit with room to grow for a process using n: twice n, at least 262,144, rounded up
// to a multiple of 65,536.
func suggestLimit(n int64) int64 {
	v := max(2*n, 262_144)
	return (v + 65_535) / 65_536 * 65_536
}

func countLines(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return int64(strings.Count(string(data), "\n")), nil
}

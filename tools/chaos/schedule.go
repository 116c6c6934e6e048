package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Fault kinds. A writer is the node that takes writes (the master; a Raft group's leader), a follower any
// other broker of the group; a replication link is a proxy returned by Cluster.ReplicationLinks.
const (
	KillWriter    = "kill-writer"    // SIGKILL the writer; restart it on its data after the fault's length
	KillFollower  = "kill-follower"  // SIGKILL a follower; restart it after the length
	PauseWriter   = "pause-writer"   // SIGSTOP the writer; SIGCONT after the length
	PauseFollower = "pause-follower" // SIGSTOP a follower; SIGCONT after the length
	PartitionRepl = "partition-repl" // blackhole a follower's replication links; heal after the length
	DelayRepl     = "delay-repl"     // delay a follower's replication links by Fault.Delay; heal after the length
	CutRepl       = "cut-repl"       // close a follower's replication connections (instant); the length is watched
	// OneWayRepl blackholes one direction of a follower's replication links (Fault.Inbound: what goes to the
	// follower, else what comes from it), the other direction passing; heal after the length.
	OneWayRepl = "oneway-repl"
	// LossyRepl makes a follower's replication links lossy (faultnet.Lossy: seeded stalls, jitter and resets
	// standing in for packet loss and reordering); heal after the length.
	LossyRepl = "lossy-repl"
	// CutClientWriter blackholes the writer's client proxy (Node.Client): the producer and the consumers
	// cannot reach the writer, while its peers and the name server still can; heal after the length.
	CutClientWriter = "cut-client-writer"
	// PowerLossWriter is a power loss of the writer's machine: SIGKILL, its store cut back to what it had
	// synced (internal/powerloss, power.go); restart it on that after the length.
	PowerLossWriter = "power-loss-writer"
	// PowerLossFollower is a power loss of a follower's machine; restart it after the length.
	PowerLossFollower = "power-loss-follower"
	// PowerLossAll is a power loss of every broker's machine at once (a rack, a data centre); restart them
	// all after the length.
	PowerLossAll = "power-loss-all"
	// DiskEIOWriter fails the writer's disk (Disk.Fail: its store disk answers every I/O with EIO, so the
	// broker's syncs fail); at the heal the broker is stopped (SIGTERM), the disk repaired (Disk.Repair:
	// what the broker had not synced is gone) and the broker restarted on it (disk_faults.go).
	DiskEIOWriter = "disk-eio-writer"
	// DiskEIOFollower fails a follower's disk, as DiskEIOWriter.
	DiskEIOFollower = "disk-eio-follower"
	// DiskFullWriter fills the writer's disk (Disk.Fill: its next block allocation fails with ENOSPC); at
	// the heal the space is freed, and a node that does not move again by itself within diskRecoverWait is
	// restarted.
	DiskFullWriter = "disk-full-writer"
	// DiskFullFollower fills a follower's disk, as DiskFullWriter.
	DiskFullFollower = "disk-full-follower"
	// DiskSlowWriter slows the writer's disk down to Fault.IOPS reads and writes a second (Disk.Slow); at
	// the heal the limit is lifted, then as DiskFullWriter.
	DiskSlowWriter = "disk-slow-writer"
	// DiskSlowFollower slows a follower's disk down, as DiskSlowWriter.
	DiskSlowFollower = "disk-slow-follower"
)

// DefaultSlowIOPS is the disk-slow kinds' limit unless set (ScheduleConfig.IOPS): a disk doing 5 reads and
// 5 writes a second, on which a sync takes a few hundred milliseconds to a few seconds.
const DefaultSlowIOPS = 5

// Kinds lists every fault kind, in the order the usage text names them.
var Kinds = []string{KillWriter, KillFollower, PauseWriter, PauseFollower, PartitionRepl, DelayRepl, CutRepl,
	OneWayRepl, LossyRepl, CutClientWriter, PowerLossWriter, PowerLossFollower, PowerLossAll,
	DiskEIOWriter, DiskEIOFollower, DiskFullWriter, DiskFullFollower, DiskSlowWriter, DiskSlowFollower}

// DefaultKinds is every kind this machine can run: Kinds, without the disk kinds when DiskSupport says
// they cannot (the error then says why).
func DefaultKinds() ([]string, error) {
	err := DiskSupport()
	if err == nil {
		return Kinds, nil
	}
	return slices.DeleteFunc(slices.Clone(Kinds), isDiskFault), err
}

// isDiskFault reports the disk kinds (disk_faults.go).
func isDiskFault(kind string) bool {
	switch kind {
	case DiskEIOWriter, DiskEIOFollower, DiskFullWriter, DiskFullFollower, DiskSlowWriter, DiskSlowFollower:
		return true
	}
	return false
}

// hasDiskFault reports whether the schedule holds a disk fault (the brokers' stores then lie on disks of
// their own, GroupConfig.Disks).
func (s Schedule) hasDiskFault() bool {
	return slices.ContainsFunc(s.Faults, func(f Fault) bool { return isDiskFault(f.Kind) })
}

// dropsUnsynced reports the kinds after which a node restarts on what it had synced, having lost what it
// had only written: the power losses, and a failed disk (its page cache is never written back).
func dropsUnsynced(kind string) bool {
	return isPowerLoss(kind) || kind == DiskEIOWriter || kind == DiskEIOFollower
}

// hasPowerLoss reports whether the schedule holds a power-loss fault (the brokers then journal their syncs).
func (s Schedule) hasPowerLoss() bool {
	return slices.ContainsFunc(s.Faults, func(f Fault) bool { return isPowerLoss(f.Kind) })
}

// powerLossLoses reports whether a power loss may take acknowledged messages under this flush type: only
// SYNC_FLUSH promises that an acknowledged message was synced.
func powerLossLoses(flush string) bool { return flush != "SYNC_FLUSH" }

// isPowerLoss reports the power-loss kinds.
func isPowerLoss(kind string) bool {
	return kind == PowerLossWriter || kind == PowerLossFollower || kind == PowerLossAll
}

// Fault is one entry of a schedule.
type Fault struct {
	Kind  string
	Gap   time.Duration // quiet time before the fault (after the previous one healed, or the warm-up)
	For   time.Duration // how long the fault lasts
	Delay time.Duration // DelayRepl: the one-way delay
	// Inbound (OneWayRepl): the way to the follower is dropped; else the way from it.
	Inbound bool
	// IOPS (DiskSlowWriter, DiskSlowFollower): the slowed disk's reads and writes a second.
	IOPS int
}

func (f Fault) String() string {
	s := fmt.Sprintf("after %v: %s for %v", f.Gap, f.Kind, f.For)
	if f.Kind == DelayRepl {
		s += fmt.Sprintf(" (delay %v)", f.Delay)
	}
	if f.Kind == OneWayRepl {
		s += " (" + f.way() + ")"
	}
	if f.Kind == DiskSlowWriter || f.Kind == DiskSlowFollower {
		s += fmt.Sprintf(" (%d IOPS)", f.IOPS)
	}
	return s
}

// way names a OneWayRepl's dropped direction.
func (f Fault) way() string {
	if f.Inbound {
		return "to the follower dropped"
	}
	return "from the follower dropped"
}

// ScheduleConfig says how NewSchedule draws faults.
type ScheduleConfig struct {
	Seed   uint64
	Rounds int      // number of faults
	Kinds  []string // the kinds to draw from; each appears once in a shuffled pass before any repeats
	MinFor time.Duration
	MaxFor time.Duration
	MinGap time.Duration
	MaxGap time.Duration
	Delay  time.Duration // DelayRepl's delay
	IOPS   int           // the disk-slow kinds' limit: reads and writes a second
}

// Validate names the first bad field.
func (c ScheduleConfig) Validate() error {
	if c.Rounds < 0 {
		return fmt.Errorf("chaos: schedule: rounds %d < 0", c.Rounds)
	}
	if len(c.Kinds) == 0 && c.Rounds > 0 {
		return fmt.Errorf("chaos: schedule: no fault kinds")
	}
	for _, k := range c.Kinds {
		if !isKind(k) {
			return fmt.Errorf("chaos: schedule: unknown fault kind %q (known: %s)", k, strings.Join(Kinds, ", "))
		}
	}
	if c.MinFor <= 0 || c.MaxFor < c.MinFor {
		return fmt.Errorf("chaos: schedule: fault length [%v, %v] is not a range of positive lengths", c.MinFor, c.MaxFor)
	}
	if c.MinGap < 0 || c.MaxGap < c.MinGap {
		return fmt.Errorf("chaos: schedule: gap [%v, %v] is not a range", c.MinGap, c.MaxGap)
	}
	if c.IOPS <= 0 && (slices.Contains(c.Kinds, DiskSlowWriter) || slices.Contains(c.Kinds, DiskSlowFollower)) {
		return fmt.Errorf("chaos: schedule: the disk-slow kinds need a positive IOPS limit, not %d", c.IOPS)
	}
	return nil
}

func isKind(k string) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Schedule is the faults of a run, in order, drawn from a seed: the same seed and config give the same
// schedule (and the targets the run picks among followers come from the same seed).
type Schedule struct {
	Seed   uint64
	Faults []Fault
}

// NewSchedule draws a schedule.
func NewSchedule(c ScheduleConfig) (Schedule, error) {
	if err := c.Validate(); err != nil {
		return Schedule{}, err
	}
	r := rand.New(rand.NewPCG(c.Seed, 0x6368616f73))
	s := Schedule{Seed: c.Seed}
	var pass []string
	for range c.Rounds {
		if len(pass) == 0 {
			pass = append([]string(nil), c.Kinds...)
			r.Shuffle(len(pass), func(i, j int) { pass[i], pass[j] = pass[j], pass[i] })
		}
		f := Fault{Kind: pass[0], Gap: between(r, c.MinGap, c.MaxGap), For: between(r, c.MinFor, c.MaxFor)}
		pass = pass[1:]
		if f.Kind == DelayRepl {
			f.Delay = c.Delay
		}
		if f.Kind == OneWayRepl {
			f.Inbound = r.IntN(2) == 0
		}
		if f.Kind == DiskSlowWriter || f.Kind == DiskSlowFollower {
			f.IOPS = c.IOPS
		}
		s.Faults = append(s.Faults, f)
	}
	return s, nil
}

// between draws a length in [lo, hi], rounded to 100 ms.
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	d := lo
	if hi > lo {
		d += time.Duration(r.Int64N(int64(hi - lo + 1)))
	}
	return d.Round(100 * time.Millisecond)
}

// Length is the schedule's total gap and fault time (restarts and scans come on top).
func (s Schedule) Length() time.Duration {
	var d time.Duration
	for _, f := range s.Faults {
		d += f.Gap + f.For
	}
	return d
}

func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule (seed %d, %d faults, %v of gaps and faults):\n", s.Seed, len(s.Faults), s.Length())
	for i, f := range s.Faults {
		fmt.Fprintf(&b, "  %2d  %s\n", i, f)
	}
	return b.String()
}

package chaos

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// diskRecoverWait is how long a node has, after a full or slow disk healed, to move again by itself (a
// writer stores a new message, a follower holds what the writer held at the heal) before the runner
// restarts it as an operator would. A classic store that refused puts for a full disk looks again every
// cleanResourceInterval (10 s).
const diskRecoverWait = 60 * time.Second

// diskStopGrace is how long a broker whose disk failed has to stop after SIGTERM; one that takes longer is
// killed, and the run fails (a broker that cannot be stopped after a disk error needs a kill -9).
const diskStopGrace = 30 * time.Second

// logSigns are what a broker's log says when its disk fails it: counted in the fault's notes, so a
// report shows the fault reached the broker.
var logSigns = []string{"input/output error", "no space left on device", "disk full", "write fault", "slow"}

// diskFault runs a disk fault on target and heals it (schedule.go has each kind's heal): the fault starts,
// lasts f.For, then the disk is repaired (EIO: the broker stopped, the disk checked, the broker restarted),
// emptied or sped up, and a node that does not move again by itself is restarted.
func (r *runner) diskFault(ctx context.Context, i int, f Fault, target *Node, start time.Time, rec *FaultRecord, note func(string, ...any)) {
	d := target.Disk
	logFrom := target.Proc.logSize()
	var err error
	switch f.Kind {
	case DiskEIOWriter, DiskEIOFollower:
		err = d.Fail()
	case DiskFullWriter, DiskFullFollower:
		var n int64
		n, err = d.Fill()
		note("%d MiB taken", n>>20)
	case DiskSlowWriter, DiskSlowFollower:
		err = d.Slow(f.IOPS)
	}
	if err != nil {
		r.errorf("fault %d: %v", i, err)
	}
	_ = sleepCtx(ctx, time.Until(start.Add(f.For)))
	if s := logSignsSince(target.Proc, logFrom); s != "" {
		note("%s's log: %s", target.Name, s)
	}
	exited := !target.Proc.Running()
	if exited {
		note("%s exited during the fault", target.Name)
	}
	switch f.Kind {
	case DiskEIOWriter, DiskEIOFollower:
		if !exited {
			r.stopForDisk(i, target, note)
		}
		if f.Kind == DiskEIOWriter && !r.cl.Elects() {
			// What the slave held when the master's disk died (as at a kill of the master).
			rec.Scanned = r.outageScan(ctx, i, target, note)
		}
		summary, err := d.Repair()
		if err != nil {
			r.errorf("fault %d: repair %s's disk: %v", i, target.Name, err)
		}
		note("e2fsck: %s", summary)
		r.restartForDisk(i, target, note)
		return
	case DiskFullWriter, DiskFullFollower:
		err = d.Unfill()
	case DiskSlowWriter, DiskSlowFollower:
		err = d.Slow(0)
	}
	if err != nil {
		r.errorf("fault %d: heal %s's disk: %v", i, target.Name, err)
	}
	if !exited {
		t0 := time.Now()
		what, err := r.movesAgain(ctx, target, diskRecoverWait)
		if err == nil {
			note("%s moved again by itself %v after the heal (%s)", target.Name, time.Since(t0).Round(time.Millisecond), what)
			return
		}
		note("%s did not move again (%v; %v after the heal): restarted", target.Name, err, time.Since(t0).Round(time.Millisecond))
		r.stopForDisk(i, target, note)
	}
	r.restartForDisk(i, target, note)
}

// stopForDisk stops target with SIGTERM, as an operator does before fixing its disk; a broker that does
// not stop within diskStopGrace is killed and fails the run.
func (r *runner) stopForDisk(i int, target *Node, note func(string, ...any)) {
	t0 := time.Now()
	if err := target.Proc.Stop(diskStopGrace); err != nil {
		r.errorf("fault %d: %v", i, err)
		return
	}
	note("%s stopped %v after SIGTERM", target.Name, time.Since(t0).Round(time.Millisecond))
}

// restartForDisk starts target again on its disk.
func (r *runner) restartForDisk(i int, target *Node, note func(string, ...any)) {
	t0 := time.Now()
	if err := r.cl.Restart(target); err != nil {
		r.errorf("fault %d: restart %s: %v", i, target.Name, err)
		return
	}
	note("restart to listening %v", time.Since(t0).Round(time.Millisecond))
}

// movesAgain waits up to wait for n to move again: when it is the writer, until it stores a new message
// (the max offset of a queue passes what it was at the call); else until it holds what the writer held at
// the call (every queue's max offset at least the writer's then). It says which, or why not; a Raft node
// whose Raft stopped is given up at once.
func (r *runner) movesAgain(ctx context.Context, n *Node, wait time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w := waitWriter(ctx, r.cl, wait)
	if w == nil {
		return "", fmt.Errorf("no writer")
	}
	base, err := r.offsets(ctx, w)
	if err != nil {
		return "", err
	}
	var last error
	for {
		if r.cl.Elects() && raftStopped(ctx, r.wire, n) {
			// The node stopped its Raft when its store failed (raftlog/doc.go): it cannot
			// move again without a restart, as mqadmin getRaftStatus would tell an operator.
			return "", fmt.Errorf("its Raft stopped (getRaftStatus: Shutdown)")
		}
		got, err := r.offsets(ctx, n)
		switch {
		case err != nil:
			last = err
		case w == n && slices.ContainsFunc(pairs(got, base), func(p [2]int64) bool { return p[0] > p[1] }):
			return "a new message stored", nil
		case w != n && !slices.ContainsFunc(pairs(got, base), func(p [2]int64) bool { return p[0] < p[1] }):
			return "holds what " + w.Name + " held", nil
		case w == n:
			last = fmt.Errorf("max offsets %v, none past %v", got, base)
		default:
			last = fmt.Errorf("max offsets %v, %s's %v", got, w.Name, base)
		}
		if sleepCtx(ctx, 200*time.Millisecond) != nil {
			return "", last
		}
	}
}

// raftStopped reports whether n answers GET_RAFT_STATUS with the role Shutdown.
func raftStopped(ctx context.Context, w *client.Client, n *Node) bool {
	var st protocol.RaftStatus
	return w.CallJSON(ctx, n.Addr, remoting.GetRaftStatus, nil, &st) == nil && st.Role == "Shutdown"
}

// offsets are n's max offsets of every queue of the topic.
func (r *runner) offsets(ctx context.Context, n *Node) ([]int64, error) {
	out := make([]int64, r.cfg.Queues)
	for q := range out {
		var err error
		if out[q], err = maxOffset(ctx, r.wire, n.Addr, r.cfg.Topic, int32(q)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pairs zips two offset lists of the same queues.
func pairs(a, b []int64) [][2]int64 {
	out := make([][2]int64, min(len(a), len(b)))
	for i := range out {
		out[i] = [2]int64{a[i], b[i]}
	}
	return out
}

// logSignsSince counts the lines of p's log from offset from on that name each of logSigns: "3 lines
// name \"input/output error\", ...", or "" when none does.
func logSignsSince(p *Process, from int64) string {
	f, err := os.Open(p.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, from, 1<<40))
	if err != nil {
		return ""
	}
	counts := make([]int, len(logSigns))
	for line := range bytes.Lines(bytes.ToLower(b)) {
		for i, s := range logSigns {
			if bytes.Contains(line, []byte(s)) {
				counts[i]++
			}
		}
	}
	var parts []string
	for i, n := range counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d lines name %q", n, logSigns[i]))
		}
	}
	return strings.Join(parts, ", ")
}

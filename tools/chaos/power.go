package chaos

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/rocketraft/rocketraft/internal/powerloss"
)

// powerLoss runs a power-loss fault (PowerLossWriter, PowerLossFollower, PowerLossAll) on targets: every
// target is killed (SIGKILL, one right after the other, before any cut: the survivors of a partial kill
// must not acknowledge more meanwhile), then each one's store is cut back to what it had synced
// (powerloss.Cut; the broker journals its syncs, GroupConfig.PowerLoss); when the writer of a group that
// does not elect was the target, the follower is scanned as at a kill of the writer; after the fault's
// length every target is restarted on what the cut left, all at once (a group that lost every node elects
// again only once a majority is up).
func (r *runner) powerLoss(ctx context.Context, i int, f Fault, targets []*Node, start time.Time, rec *FaultRecord, note func(string, ...any)) {
	// SIGKILL to every target first, then wait for each: a broker with its files mapped takes a while
	// to go, and the others must not take acknowledgements meanwhile.
	var exits []<-chan struct{}
	for _, n := range targets {
		exited, err := n.Proc.signal(syscall.SIGKILL)
		if err != nil {
			r.errorf("fault %d: %v", i, err)
			continue
		}
		exits = append(exits, exited)
	}
	for _, exited := range exits {
		<-exited
	}
	for _, n := range targets {
		rep, err := powerloss.CutAt(n.Store, n.journal())
		if err != nil {
			r.errorf("fault %d: power loss of %s: %v", i, n.Name, err)
			continue
		}
		note("%s: %s", n.Name, rep)
	}
	if f.Kind == PowerLossWriter && !r.cl.Elects() {
		rec.Scanned = r.outageScan(ctx, i, targets[0], note)
	}
	_ = sleepCtx(ctx, time.Until(start.Add(f.For)))
	restart := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(targets))
	for j, n := range targets {
		wg.Go(func() { errs[j] = r.cl.Restart(n) })
	}
	wg.Wait()
	for j, err := range errs {
		if err != nil {
			r.errorf("fault %d: restart %s: %v", i, targets[j].Name, err)
		}
	}
	note("restart to listening %v", time.Since(restart).Round(time.Millisecond))
}

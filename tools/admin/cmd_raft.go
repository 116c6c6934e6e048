package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// raftStatus is a broker's answer to GET_RAFT_STATUS (remoting.GetRaftStatus) as mqadmin shows it: the
// status, or the error asking that broker gave.
type raftStatus struct {
	protocol.RaftStatus
	Error string `json:"error,omitempty"`
}

// raftStatusOf asks the broker at addr for its Raft status.
func (r *runner) raftStatusOf(ctx context.Context, addr string) (raftStatus, error) {
	var st raftStatus
	err := r.c.CallJSON(ctx, addr, remoting.GetRaftStatus, nil, &st)
	if client.HasCode(err, remoting.RequestCodeNotSupported) {
		err = fmt.Errorf("broker %s does not run the Raft mode (enableDLegerCommitLog=false)", addr)
	}
	if err != nil || st.BrokerAddr == "" {
		st.BrokerAddr = addr // the node's own address when it answers (asked at the master's virtual address too)
	}
	return st, err
}

type raftStatusResult struct {
	Nodes []raftStatus `json:"nodes"`
}

func (r *raftStatusResult) writeText(w io.Writer) error {
	tb := newTable("#Group", "#SelfId", "#Addr", "#BID", "#Role", "#Term", "#CommitIndex", "#AppliedIndex", "#Leader")
	for _, n := range r.Nodes {
		if n.Error != "" {
			tb.add(dash(n.Group), "-", n.BrokerAddr, "-", "UNREACHABLE", "-", "-", "-", n.Error)
			continue
		}
		role := n.Role
		if n.Role == "Leader" && !n.Master {
			role = "Leader(not master yet)"
		}
		addr := n.BrokerAddr
		if n.MasterVipAddress != "" {
			addr += " (" + n.MasterVipAddress + ")"
		}
		tb.add(n.Group, n.SelfID, addr, n.BrokerID, role, n.Term, n.CommitIndex, n.AppliedIndex, dash(n.LeaderID))
	}
	return tb.write(w)
}

// getRaftStatusCmd is getRaftStatus: per node of each Raft group its dLegerSelfId, address, brokerId,
// role, term, commit and applied index, and the leader it knows.
func getRaftStatusCmd() *command {
	return &command{name: "getRaftStatus", desc: "Show the Raft status of every node of a Raft broker group", setup: func(f *flags) runFunc {
		target := chooseBrokers(f, "Broker address (one node)", "which cluster (every node of its Raft groups)")
		var group string
		f.String(&group, "g", "dLegerGroup", "only this Raft group (brokerName or dLegerGroup)", false)
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := target.resolve(ctx, r, false)
			if err != nil {
				return nil, err
			}
			res := &raftStatusResult{Nodes: []raftStatus{}}
			// A node answers with its own address, so one asked twice (a master behind masterVipAddress,
			// whose slave entry the name servers list until it unregisters it, a moment after it
			// registered as brokerId 0) is one node: listed once.
			type nodeKey struct{ group, self, addr string }
			seen := map[nodeKey]bool{}
			_, err = eachBroker(refs, func(ref brokerRef) error {
				if group != "" && ref.name != "" && ref.name != group {
					return nil
				}
				st, err := r.raftStatusOf(ctx, ref.addr)
				if err != nil {
					st.Group, st.Error = ref.name, err.Error()
				} else if k := (nodeKey{st.Group, st.SelfID, st.BrokerAddr}); st.SelfID != "" {
					if seen[k] {
						return nil
					}
					seen[k] = true
				}
				if group == "" || st.Group == group || ref.name == group {
					res.Nodes = append(res.Nodes, st)
				}
				return err
			})
			sort.SliceStable(res.Nodes, func(i, j int) bool {
				a, b := res.Nodes[i], res.Nodes[j]
				return a.Group < b.Group || a.Group == b.Group && a.SelfID < b.SelfID
			})
			return res, err
		}
	}}
}

type transferResult struct {
	Group     string `json:"group"`
	OldLeader string `json:"oldLeader"` // selfId@address
	NewLeader string `json:"newLeader"`
	Took      string `json:"took"`
	Drained   string `json:"drained,omitempty"` // --drain: how long the old leader then served without leading
	// Failed are the attempts asked again (transferWithin), each its error, in order.
	Failed []string `json:"failedAttempts,omitempty"`
	// Already: -t led when asked, nothing moved; OldLeader is then the node at -b.
	Already bool `json:"already,omitempty"`
}

func (r *transferResult) writeText(w io.Writer) error {
	var err error
	if r.Already {
		_, err = fmt.Fprintf(w, "Raft group %s: %s already leads, nothing moved (the name servers route brokerId 0 to it, not to %s)\n",
			r.Group, r.NewLeader, r.OldLeader)
	} else {
		_, err = fmt.Fprintf(w, "Raft group %s: leadership moved from %s to %s in %s (the name servers route brokerId 0 to the new leader)\n",
			r.Group, r.OldLeader, r.NewLeader, r.Took)
	}
	for i, f := range r.Failed {
		if err == nil {
			_, err = fmt.Fprintf(w, "attempt %d failed and was asked again: %s\n", i+1, f)
		}
	}
	if err == nil && r.Drained != "" {
		_, err = fmt.Fprintf(w, "then %s drained for %s: clients re-read their routes; it forwarded what still reached it\n", r.OldLeader, r.Drained)
	}
	return err
}

// transferLeadershipCmd is transferLeadership: the leader of the Raft group of the broker at -b hands
// leadership to -t (or the most up-to-date follower), asked again within --wait while the transfer fails
// for a reason of timing (transferWithin); the command waits until the name servers route the group's
// brokerId 0 to the new leader. When -t leads already and -b is another node, nothing is moved and the
// command goes on as if it had moved from -b (so a run asked again after its transfer went through passes). With --drain D it then waits D more while checking that the old
// leader does not lead again (the group holds preferred-leader moves for D plus --wait, so the restart
// that follows is covered too): the official clients re-read routes every 30 s, and until they do they
// send to the old leader, which forwards to the new one. A rolling restart stops the node only after.
func transferLeadershipCmd() *command {
	return &command{name: "transferLeadership", desc: "Move a Raft broker group's leadership to another node", setup: func(f *flags) runFunc {
		var addr, targetID string
		var wait time.Duration = 30 * time.Second
		f.String(&addr, "b", "brokerAddr", "address of any node of the Raft group", true)
		f.String(&targetID, "t", "targetSelfId", "dLegerSelfId of the new leader (default: the most up-to-date follower)", false)
		f.Duration(&wait, "", "wait", "how long to wait for a master to ask, to have the transfer done (a transfer Raft gave up is asked again), then for the name servers to route brokerId 0 to the new leader (default 30s each)")
		var drain time.Duration
		f.Duration(&drain, "", "drain", "then wait this long more, the old leader kept from leading, so clients re-read their routes before it stops (rolling restarts: 35s; default 0)")
		return func(ctx context.Context, r *runner) (result, error) {
			ci, err := r.c.ClusterInfo(ctx)
			if err != nil {
				return nil, err
			}
			name, ok := brokerNameOf(ci, addr)
			if !ok {
				return nil, fmt.Errorf("no broker registered at %s", addr)
			}
			deadline := time.Now().Add(wait)
			leader, err := r.raftLeader(ctx, ci.BrokerAddrTable[name])
			for err != nil && time.Now().Before(deadline) { // an election may be under way
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
				if ci, err = r.c.ClusterInfo(ctx); err == nil {
					leader, err = r.raftLeader(ctx, ci.BrokerAddrTable[name])
				}
			}
			if err != nil {
				return nil, err
			}
			start := time.Now()
			ext := map[string]string{"targetId": targetID}
			if drain > 0 {
				ext["holdPreferredMillis"] = strconv.FormatInt((drain + wait).Milliseconds(), 10)
			}
			res := &transferResult{Group: leader.Group}
			if targetID != "" && leader.SelfID == targetID {
				// -t leads already: nothing to move (a run asked again after its transfer went through, as
				// a rolling restart's retry does). The routes must leave the node at -b, and --drain
				// watches it; no hold is committed (only a transfer request does that).
				self, err := r.raftStatusOf(ctx, addr)
				if err != nil {
					return nil, err
				}
				if self.SelfID == targetID {
					return nil, fmt.Errorf("node %s (%s) already leads Raft group %s: nothing to transfer", targetID, addr, leader.Group)
				}
				leader, res.Already = self, true
			} else if res.Failed, err = r.transferWithin(ctx, name, leader, targetID, ext, time.Now().Add(wait)); err != nil {
				return nil, err
			}
			res.OldLeader = leader.SelfID + "@" + leader.BrokerAddr
			deadline = time.Now().Add(wait)
			for {
				ci, err := r.c.ClusterInfo(ctx)
				if err == nil {
					// The node brokerId 0 reaches (its own address, or the master's virtual address the old
					// master registered too) must be another node, and master.
					if a := ci.BrokerAddrTable[name].BrokerAddrs[protocol.MasterID]; a != "" {
						if st, err := r.raftStatusOf(ctx, a); err == nil && st.Master && st.SelfID != leader.SelfID {
							res.NewLeader, res.Took = st.SelfID+"@"+st.BrokerAddr, time.Since(start).Round(time.Millisecond).String()
							if drain <= 0 {
								return res, nil
							}
							return res, r.drainOldLeader(ctx, leader.BrokerAddr, st.Term, drain, res)
						}
					}
				}
				if time.Now().After(deadline) {
					return nil, fmt.Errorf("leadership of %s left %s, but no other node was routed as brokerId 0 within %v", name, res.OldLeader, wait)
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}}
}

// transferWithin asks the leader of group name (first, as found) to hand leadership to targetID ("":
// the most up-to-date follower), again until deadline while the answer leaves it to timing: a transfer
// Raft gave up (SYSTEM_ERROR: the target did not catch up within an election timeout, or an RPC to it
// failed, as one to a node restarted a moment before did in issue 37), a node that no longer leads
// (SERVICE_NOT_AVAILABLE), or a request that got no answer. Before each new attempt it looks the leader
// up again: leadership that already moved as asked (the transfer went through though its answer said
// otherwise, or an election chose the target) ends it; another leader is asked in turn. A refusal that
// asking again cannot change (an unknown target, no permission) is returned at once, and so is the last
// failure at the deadline, with the count. failed are the errors of the attempts asked again.
func (r *runner) transferWithin(ctx context.Context, name string, first raftStatus, targetID string, ext map[string]string,
	deadline time.Time) (failed []string, err error) {
	leader := first
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := r.c.Call(ctx, leader.BrokerAddr, remoting.TransferRaftLeadership, ext, nil)
		if err == nil {
			return failed, nil
		}
		var re *client.ResponseError
		if errors.As(err, &re) && re.Code != remoting.SystemError && re.Code != remoting.ServiceNotAvailable {
			return failed, err
		}
		if ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return failed, fmt.Errorf("attempt %d to transfer the leadership of %s, the last within --wait: %w", attempt, first.Group, err)
		}
		failed = append(failed, err.Error())
		if err := pause(ctx, backoff); err != nil {
			return failed, err
		}
		backoff = min(2*backoff, 2*time.Second)
		ci, err := r.c.ClusterInfo(ctx)
		if err != nil {
			continue // the same leader is asked again
		}
		cur, err := r.raftLeader(ctx, ci.BrokerAddrTable[name])
		if err != nil {
			continue
		}
		if cur.SelfID != first.SelfID && (targetID == "" || cur.SelfID == targetID) {
			return failed, nil // it moved as asked
		}
		leader = cur
	}
}

// drainOldLeader waits d while checking, twice a second, that the node at addr does not lead again: that
// it is not master in a term after newTerm, the term its successor was found master in. A status of the
// old leader's own term may still say master for a moment after its successor took over (it steps down
// when it hears of the newer term, and its broker role follows that), which is not leading again.
func (r *runner) drainOldLeader(ctx context.Context, addr string, newTerm uint64, d time.Duration, res *transferResult) error {
	start := time.Now()
	for time.Since(start) < d {
		if st, err := r.raftStatusOf(ctx, addr); err == nil && st.Master && st.Term > newTerm {
			return fmt.Errorf("%s leads Raft group %s again %v into the drain: it cannot be stopped without failing sends",
				res.OldLeader, res.Group, time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(500*time.Millisecond, d-time.Since(start))):
		}
	}
	res.Drained = d.String()
	return nil
}

// raftLeader finds the node of a Raft group that is its master.
func (r *runner) raftLeader(ctx context.Context, bd protocol.BrokerData) (raftStatus, error) {
	var errs []error
	for _, a := range bd.BrokerAddrs {
		st, err := r.raftStatusOf(ctx, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Master {
			return st, nil
		}
	}
	return raftStatus{}, errors.Join(append([]error{fmt.Errorf("Raft group %s has no master right now (an election may be under way)", bd.BrokerName)}, errs...)...)
}

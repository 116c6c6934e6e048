package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/rocketraft/rocketraft/namesrv"
	"github.com/rocketraft/rocketraft/remoting"
)

// raftStatus is a broker's answer to GET_RAFT_STATUS (remoting.GetRaftStatus; broker.RaftStatus).
type raftStatus struct {
	Group        string `json:"group"`
	SelfID       string `json:"selfId"`
	Peers        string `json:"peers"`
	BrokerAddr   string `json:"brokerAddr"`
	BrokerID     int64  `json:"brokerId"`
	Role         string `json:"role"`
	Master       bool   `json:"master"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commitIndex"`
	AppliedIndex uint64 `json:"appliedIndex"`
	LastIndex    uint64 `json:"lastIndex"`
	LeaderID     string `json:"leaderId"`
	LeaderAddr   string `json:"leaderAddr"`
	Failovers    uint64 `json:"failovers"`
	// MasterVipAddress is the master's virtual address while this node holds it (masterVipAddress).
	MasterVipAddress string `json:"masterVipAddress,omitempty"`
	Error            string `json:"error,omitempty"`
}

// raftStatusOf asks the broker at addr for its Raft status.
func (r *runner) raftStatusOf(ctx context.Context, addr string) (raftStatus, error) {
	var st raftStatus
	err := r.c.invokeJSON(ctx, addr, remoting.GetRaftStatus, nil, &st)
	if answered(err, remoting.RequestCodeNotSupported) {
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
			_, err = eachBroker(refs, func(ref brokerRef) error {
				if group != "" && ref.name != "" && ref.name != group {
					return nil
				}
				st, err := r.raftStatusOf(ctx, ref.addr)
				if err != nil {
					st.Group, st.Error = ref.name, err.Error()
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
}

func (r *transferResult) writeText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "Raft group %s: leadership moved from %s to %s in %s (the name servers route brokerId 0 to the new leader)\n",
		r.Group, r.OldLeader, r.NewLeader, r.Took)
	return err
}

// transferLeadershipCmd is transferLeadership: the leader of the Raft group of the broker at -b hands
// leadership to -t (or the most up-to-date follower); the command waits until the name servers route the
// group's brokerId 0 to the new leader.
func transferLeadershipCmd() *command {
	return &command{name: "transferLeadership", desc: "Move a Raft broker group's leadership to another node", setup: func(f *flags) runFunc {
		var addr, targetID string
		var wait time.Duration = 30 * time.Second
		f.String(&addr, "b", "brokerAddr", "address of any node of the Raft group", true)
		f.String(&targetID, "t", "targetSelfId", "dLegerSelfId of the new leader (default: the most up-to-date follower)", false)
		f.Duration(&wait, "", "wait", "how long to wait for a master to ask, then for the name servers to route brokerId 0 to the new leader (default 30s each)")
		return func(ctx context.Context, r *runner) (result, error) {
			ci, err := r.c.clusterInfo(ctx)
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
				if ci, err = r.c.clusterInfo(ctx); err == nil {
					leader, err = r.raftLeader(ctx, ci.BrokerAddrTable[name])
				}
			}
			if err != nil {
				return nil, err
			}
			start := time.Now()
			if _, err := r.c.invoke(ctx, leader.BrokerAddr, remoting.TransferRaftLeadership, map[string]string{"targetId": targetID}, nil); err != nil {
				return nil, err
			}
			res := &transferResult{Group: leader.Group, OldLeader: leader.SelfID + "@" + leader.BrokerAddr}
			deadline = time.Now().Add(wait)
			for {
				ci, err := r.c.clusterInfo(ctx)
				if err == nil {
					// The node brokerId 0 reaches (its own address, or the master's virtual address the old
					// master registered too) must be another node, and master.
					if a := ci.BrokerAddrTable[name].BrokerAddrs[namesrv.MasterID]; a != "" {
						if st, err := r.raftStatusOf(ctx, a); err == nil && st.Master && st.SelfID != leader.SelfID {
							res.NewLeader, res.Took = st.SelfID+"@"+st.BrokerAddr, time.Since(start).Round(time.Millisecond).String()
							return res, nil
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

// raftLeader finds the node of a Raft group that is its master.
func (r *runner) raftLeader(ctx context.Context, bd namesrv.BrokerData) (raftStatus, error) {
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

package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// The membership commands of a Raft broker group (ADD_RAFT_PEER / REMOVE_RAFT_PEER, codes of ours,
// broker/raft_membership.go):
//
//   - addRaftPeer -b brokerAddr --id n3 --peer host:port: the group's leader adds node n3 at Raft address
//     host:port as a voter. Start that node first with dLegerJoin=true and a dLegerPeers that lists the
//     group including itself; it catches up from the leader's log once added.
//   - removeRaftPeer -b brokerAddr --id n3: the leader removes n3. Removing the leader itself first hands
//     leadership to the most up-to-date follower (TRANSFER_RAFT_LEADERSHIP), then asks the new leader.
//
// -b may be any node: a follower's status names no broker address of the leader, so the leader is then
// found through the name servers (the master of the node's brokerName), as transferLeadership does.

// raftMembershipResult is the answer to ADD_RAFT_PEER / REMOVE_RAFT_PEER, plus what the command did.
type raftMembershipResult struct {
	Action  string                `json:"action"` // added, removed
	PeerID  string                `json:"peerId"`
	Group   string                `json:"group"`
	Leader  string                `json:"leader"` // selfId@brokerAddr of the leader that made the change
	Members []protocol.RaftMember `json:"members"`
	// Transferred is the old leader (selfId@brokerAddr) when removeRaftPeer removed the leader itself.
	Transferred string `json:"transferred,omitempty"`
}

func (r *raftMembershipResult) writeText(w io.Writer) error {
	if r.Transferred != "" {
		if _, err := fmt.Fprintf(w, "leadership handed over from %s first\n", r.Transferred); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(w, "Raft group %s: node %s %s by leader %s; members now:\n", r.Group, r.PeerID, r.Action, r.Leader); err != nil {
		return err
	}
	tb := newTable("#Id", "#RaftAddr", "#Suffrage")
	for _, m := range r.Members {
		tb.add(m.ID, m.Addr, m.Suffrage)
	}
	return tb.write(w)
}

func addRaftPeerCmd() *command {
	return &command{name: "addRaftPeer", desc: "Add a node to a running Raft broker group (start it with dLegerJoin=true first)", setup: func(f *flags) runFunc {
		var addr, id, peer string
		wait := 30 * time.Second
		f.String(&addr, "b", "brokerAddr", "address of any node of the Raft group", true)
		f.String(&id, "", "id", "dLegerSelfId of the new node", true)
		f.String(&peer, "", "peer", "Raft address host:port of the new node (its entry in dLegerPeers)", true)
		f.Duration(&wait, "", "wait", "how long to wait for a leader when an election is under way (default 30s)")
		return func(ctx context.Context, r *runner) (result, error) {
			leader, err := r.raftLeaderOf(ctx, addr, wait)
			if err != nil {
				return nil, err
			}
			res := &raftMembershipResult{Action: "added", PeerID: id}
			return res, r.changeRaftMembership(ctx, leader, remoting.AddRaftPeer, map[string]string{"peerId": id, "peerAddr": peer}, res)
		}
	}}
}

func removeRaftPeerCmd() *command {
	return &command{name: "removeRaftPeer", desc: "Remove a node from a Raft broker group", setup: func(f *flags) runFunc {
		var addr, id string
		wait := 30 * time.Second
		f.String(&addr, "b", "brokerAddr", "address of any node of the Raft group", true)
		f.String(&id, "", "id", "dLegerSelfId of the node to remove", true)
		f.Duration(&wait, "", "wait", "how long to wait for a leader when an election is under way or leadership is handed over (default 30s)")
		return func(ctx context.Context, r *runner) (result, error) {
			leader, err := r.raftLeaderOf(ctx, addr, wait)
			if err != nil {
				return nil, err
			}
			res := &raftMembershipResult{Action: "removed", PeerID: id}
			if leader.SelfID == id {
				old := leader
				if _, err := r.c.Call(ctx, old.BrokerAddr, remoting.TransferRaftLeadership, map[string]string{"targetId": ""}, nil); err != nil {
					return nil, fmt.Errorf("node %s leads Raft group %s, and handing its leadership over first failed: %w", id, old.Group, err)
				}
				res.Transferred = old.SelfID + "@" + old.BrokerAddr
				deadline := time.Now().Add(wait)
				for {
					leader, err = r.raftLeaderOf(ctx, addr, wait)
					if err == nil && leader.SelfID != id {
						break
					}
					if time.Now().After(deadline) {
						return nil, fmt.Errorf("node %s handed its leadership over, but no other node of Raft group %s became master within %v", id, old.Group, wait)
					}
					if err := pause(ctx, 100*time.Millisecond); err != nil {
						return nil, err
					}
				}
			}
			return res, r.changeRaftMembership(ctx, leader, remoting.RemoveRaftPeer, map[string]string{"peerId": id}, res)
		}
	}}
}

// changeRaftMembership sends a membership request to the leader and fills res from its answer.
func (r *runner) changeRaftMembership(ctx context.Context, leader raftStatus, code remoting.RequestCode, ext map[string]string, res *raftMembershipResult) error {
	ext["waitMs"] = strconv.FormatInt((r.com.timeout * 4 / 5).Milliseconds(), 10)
	resp, err := r.c.Call(ctx, leader.BrokerAddr, code, ext, nil)
	if err != nil {
		return err
	}
	var ans struct {
		Group   string                `json:"group"`
		Members []protocol.RaftMember `json:"members"`
	}
	if err := json.Unmarshal(resp.Body, &ans); err != nil {
		return fmt.Errorf("%s from %s: decode answer: %w", code, leader.BrokerAddr, err)
	}
	res.Group, res.Members, res.Leader = ans.Group, ans.Members, leader.SelfID+"@"+leader.BrokerAddr
	if res.Members == nil {
		res.Members = []protocol.RaftMember{}
	}
	return nil
}

// raftLeaderOf finds the master of the Raft group of the broker at addr: addr itself when it is, else the
// master of its brokerName in the name servers' cluster info, waiting up to wait for an election.
func (r *runner) raftLeaderOf(ctx context.Context, addr string, wait time.Duration) (raftStatus, error) {
	st, err := r.raftStatusOf(ctx, addr)
	if err != nil {
		return raftStatus{}, err
	}
	if st.Master {
		return st, nil
	}
	deadline := time.Now().Add(wait)
	for {
		ci, err := r.c.ClusterInfo(ctx)
		if err != nil {
			return raftStatus{}, fmt.Errorf("node %s (%s) is a follower (the leader is %q); finding the leader's broker address needs the name servers: %w",
				st.SelfID, addr, st.LeaderID, err)
		}
		name, ok := brokerNameOf(ci, addr)
		if !ok {
			return raftStatus{}, fmt.Errorf("node %s (%s) is a follower (the leader is %q) and not registered with the name servers: give -b the leader's broker address",
				st.SelfID, addr, st.LeaderID)
		}
		leader, err := r.raftLeader(ctx, ci.BrokerAddrTable[name])
		if err == nil {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return raftStatus{}, err
		}
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			return raftStatus{}, err
		}
	}
}

// pause waits d or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

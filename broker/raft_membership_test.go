package broker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestRaftMembershipRefusals: with ACL on, ADD_RAFT_PEER / REMOVE_RAFT_PEER need an admin account; a
// follower answers SERVICE_NOT_AVAILABLE naming the leader; the leader refuses to remove itself, an
// unknown node and a bad Raft address. (The changes themselves: tools/admin's
// TestRaftMembershipCommands.)
func TestRaftMembershipRefusals(t *testing.T) {
	aclPath := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(aclPath, []byte(`accounts:
  - accessKey: raftAdmin
    secretKey: adminSecret123
    admin: true
  - accessKey: raftProducer
    secretKey: producerSecret1
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := cluster.Start(t, cluster.Options{RaftNodes: 3, Configure: func(_ int, cfg *broker.Config) {
		cfg.ACL.AclEnable, cfg.ACL.AclFile = true, aclPath
		cfg.ACL.AccessKey, cfg.ACL.SecretKey = "raftAdmin", "adminSecret123"
	}})
	m := c.RaftMaster("broker-a")
	leader, follower := c.Broker(m), c.Broker((m+1)%3)
	call := func(ak, sk, addr string, code remoting.RequestCode, ext map[string]string) *remoting.Command {
		t.Helper()
		cl := remoting.NewClient(remoting.ClientConfig{DialTimeout: time.Second,
			Credentials: remoting.Credentials{AccessKey: ak, SecretKey: remoting.Secret(sk)}}, cluster.TestLogger(t, slog.LevelWarn))
		defer func() { _ = cl.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(code, ext, nil))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	admin := func(addr string, code remoting.RequestCode, ext map[string]string) *remoting.Command {
		return call("raftAdmin", "adminSecret123", addr, code, ext)
	}
	selfID := leader.Config().Raft.DLegerSelfId
	// The master passed its barrier with one follower; the other learns who leads at its first append.
	cluster.Eventually(t, 30*time.Second, func() bool { return follower.RaftNode().Status().LeaderID == selfID },
		"the follower knows the leader %s", selfID)
	expectCode(t, "a producer account removes a node", call("raftProducer", "producerSecret1", leader.Addr(), remoting.RemoveRaftPeer,
		map[string]string{"peerId": "n9"}), remoting.NoPermission, "not admin", "REMOVE_RAFT_PEER")
	expectCode(t, "a producer account adds a node", call("raftProducer", "producerSecret1", leader.Addr(), remoting.AddRaftPeer,
		map[string]string{"peerId": "n9", "peerAddr": "127.0.0.1:1"}), remoting.NoPermission, "not admin", "ADD_RAFT_PEER")
	expectCode(t, "add through a follower", admin(follower.Addr(), remoting.AddRaftPeer,
		map[string]string{"peerId": "n9", "peerAddr": "127.0.0.1:1"}), remoting.ServiceNotAvailable, "not the leader", `the leader is "`+selfID+`"`)
	expectCode(t, "the leader removes itself", admin(leader.Addr(), remoting.RemoveRaftPeer,
		map[string]string{"peerId": selfID}), remoting.InvalidParameter, "is the leader", "transfer leadership")
	expectCode(t, "remove an unknown node", admin(leader.Addr(), remoting.RemoveRaftPeer,
		map[string]string{"peerId": "n9"}), remoting.InvalidParameter, "not a member")
	expectCode(t, "add at a bad address", admin(leader.Addr(), remoting.AddRaftPeer,
		map[string]string{"peerId": "n9", "peerAddr": "nowhere"}), remoting.InvalidParameter, "host:port")
	resp := admin(follower.Addr(), remoting.GetRaftStatus, nil)
	expectCode(t, "status", resp, remoting.Success)
	var st protocol.RaftStatus
	if err := json.Unmarshal(resp.Body, &st); err != nil || len(st.Members) != 3 {
		t.Fatalf("status members: %+v %v", st.Members, err)
	}
}

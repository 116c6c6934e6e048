package broker_test

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestRaftFollowerForwards, over the wire: a follower forwards a send and an offset commit to the master
// and relays the master's answer (its queue offset, its message id); a request that was forwarded once
// is not forwarded again; a request past dLegerForwardMaxInflightBytes is refused SYSTEM_BUSY naming the
// key; with no master to be found the follower answers SERVICE_NOT_AVAILABLE naming
// dLegerForwardTimeoutMs.
func TestRaftFollowerForwards(t *testing.T) {
	c := cluster.Start(t, cluster.Options{RaftNodes: 3, Configure: func(i int, cfg *broker.Config) {
		cfg.Raft.DLegerForwardMaxInflightBytes = 4096
		cfg.Raft.DLegerForwardTimeoutMs = 1000
	}})
	m := c.RaftMaster("broker-a")
	f, other := (m+1)%3, (m+2)%3
	master, follower := c.Broker(m), c.Broker(f)
	mw, fw := newWire(t, master.Addr()), newWire(t, follower.Addr())
	for i := 0; i < 3; i++ {
		expectCode(t, "send to the master", mw.send("RaftFwd", 0, []byte("m"), ""), remoting.Success)
	}
	cluster.Eventually(t, 10*time.Second, func() bool {
		st, _ := follower.RaftStatus()
		return st.MasterBrokerAddr == master.Addr()
	}, "the follower learnt the master's broker address from its announcement")

	resp := fw.send("RaftFwd", 0, []byte("through the follower"), "")
	expectCode(t, "send to a follower", resp, remoting.Success)
	if off, _ := resp.OptInt64("queueOffset", -1); off != 3 {
		t.Fatalf("forwarded send: queue offset %d, want 3 (the master's next)", off)
	}
	u, err := master.Store().ConsumeQueueUnit("RaftFwd", 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := master.Store().LookMessageByOffset(u.PhysicalOffset)
	if err != nil || !bytes.Equal(msg.Body, []byte("through the follower")) {
		t.Fatalf("the master's message at queue offset 3: %v %q", err, msg.Body)
	}
	// The answer is the master's: its message id names the master's store host and the offset.
	if id := resp.OptString("msgId", ""); id != message.CreateOffsetMsgID(netip.MustParseAddrPort(master.Addr()), u.PhysicalOffset) {
		t.Fatalf("forwarded send: msgId %q, want the master's (%s) id of physical offset %d", id, master.Addr(), u.PhysicalOffset)
	}

	commit := map[string]string{"consumerGroup": "FwdGroup", "topic": "RaftFwd", "queueId": "0", "commitOffset": "2"}
	expectCode(t, "commit an offset on a follower", fw.call(remoting.UpdateConsumerOffset, commit, nil), remoting.Success)
	query := map[string]string{"consumerGroup": "FwdGroup", "topic": "RaftFwd", "queueId": "0"}
	if off, _ := mw.call(remoting.QueryConsumerOffset, query, nil).OptInt64("offset", -1); off != 2 {
		t.Fatalf("the master's offset of the group after a commit through a follower: %d, want 2", off)
	}
	cluster.Eventually(t, 10*time.Second, func() bool {
		off, _ := fw.call(remoting.QueryConsumerOffset, query, nil).OptInt64("offset", -1)
		return off == 2
	}, "the follower has the offset through the master's offsets entry")
	if st, _ := follower.RaftStatus(); st.Forwarded < 2 {
		t.Fatalf("the follower counted %d forwarded requests, want at least 2", st.Forwarded)
	}

	// A forwarded request is served by the master but never forwarded again by a follower.
	again := remoting.NewRequest(remoting.UpdateConsumerOffset, commit, nil)
	again.Flag = remoting.FlagForwarded
	resp = invoke(t, fw, again)
	expectCode(t, "a forwarded request to a follower", resp, remoting.ServiceNotAvailable,
		"does not forward a forwarded request", "leader")
	if resp.ExtFields["rocketraftNotMaster"] != "true" {
		t.Fatalf("the refusal of a forwarded request is not marked for the forwarding node: ext %v", resp.ExtFields)
	}
	again = remoting.NewRequest(remoting.UpdateConsumerOffset, commit, nil)
	again.Flag = remoting.FlagForwarded
	expectCode(t, "a forwarded request to the master", invoke(t, mw, again), remoting.Success)

	expectCode(t, "a send past the in-flight bound", fw.send("RaftFwd", 0, make([]byte, 5000), ""), remoting.SystemBusy,
		"dLegerForwardMaxInflightBytes")

	// No master: stop the two others; the follower forwards to no one and says which key bounded the wait.
	c.StopBroker(m)
	c.StopBroker(other)
	cluster.Eventually(t, 20*time.Second, func() bool { return !follower.IsRaftMaster() }, "the last node is not master")
	expectCode(t, "a send with no master", fw.send("RaftFwd", 0, []byte("x"), ""), remoting.ServiceNotAvailable,
		"dLegerForwardTimeoutMs")
}

func invoke(t *testing.T, w *wire, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := w.client.Invoke(ctx, w.addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

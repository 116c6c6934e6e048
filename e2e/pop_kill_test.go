package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/internal/cluster"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestPopRaftKill9Leader: RocketMQ 5's pop across a SIGKILL of the Raft leader (child processes,
// SYNC_FLUSH). Four messages are popped, two acked, the leader is killed; the new master redelivers the
// two not acked (attempt 2) and not the two acked, though the offset sync (dLegerOffsetSyncIntervalMs,
// a minute here) never carried the pop offsets: check points and acks are Raft entries of the revive
// topic, and the pop offsets are lifted past the check points read.
func TestPopRaftKill9Leader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	const group = "broker-p"
	nodes := startRaftChildren(t, c, group, "", "--dLegerOffsetSyncIntervalMs=60000", "--reviveInterval=100")
	w := newWireClient(t)
	m := raftChildMaster(t, c, w, group, "", nodes, "")
	const topic, cg = "PopKill9", "CG_pop_kill"
	raftCreateTopic(t, w, m.addr, topic)
	nc := client.New(client.Config{Timeout: 5 * time.Second})
	t.Cleanup(func() { _ = nc.Close() })
	ctx := context.Background()
	addr := m.addr
	for i := range 4 {
		props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: fmt.Sprintf("%032d", i)})
		if _, err := nc.SendMessage(ctx, addr, &client.Send{Group: "P", Topic: topic, BrokerName: group, QueueID: 0,
			Properties: props, Body: []byte(fmt.Sprintf("k%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	pop := func(invisible time.Duration) []*client.PoppedMessage {
		res, err := nc.PopMessage(ctx, addr, &client.Pop{Group: cg, Topic: topic, BrokerName: group, QueueID: 0, MaxNums: 32,
			Invisible: invisible, FromStart: true})
		if err != nil {
			t.Logf("pop from %s: %v", addr, err)
			return nil
		}
		return res.Msgs
	}
	got := map[string]*client.PoppedMessage{}
	cluster.Eventually(t, 30*time.Second, func() bool {
		for _, p := range pop(5 * time.Second) {
			got[string(p.Body)] = p
		}
		return len(got) == 4
	}, "four messages popped")
	for _, b := range []string{"k0", "k1"} {
		if err := nc.AckMessage(ctx, addr, cg, topic, got[b].ReceiptHandle); err != nil {
			t.Fatalf("ack %s: %v", b, err)
		}
	}
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = m.cmd.Wait()
	addr = raftChildMaster(t, c, w, group, "", nodes, m.addr).addr
	back := map[string]*client.PoppedMessage{}
	cluster.Eventually(t, 90*time.Second, func() bool {
		for _, p := range pop(time.Hour) {
			if back[string(p.Body)] != nil {
				t.Fatalf("%s popped twice on the new master %s", p.Body, addr)
			}
			back[string(p.Body)] = p
		}
		return back["k2"] != nil && back["k3"] != nil
	}, "k2 and k3 redelivered by the new master")
	for _, p := range pop(time.Hour) {
		back[string(p.Body)] = p
	}
	for _, b := range []string{"k0", "k1"} {
		if back[b] != nil {
			t.Errorf("acked %s delivered again after the kill", b)
		}
	}
	for _, b := range []string{"k2", "k3"} {
		if back[b].Attempt != 2 {
			t.Errorf("%s came back with attempt %d, want 2", b, back[b].Attempt)
		}
		if err := nc.AckMessage(ctx, addr, cg, topic, back[b].ReceiptHandle); err != nil {
			t.Errorf("ack of redelivered %s: %v", b, err)
		}
	}
	if err := nc.AckMessage(ctx, addr, cg, topic, got["k2"].ReceiptHandle); !client.HasCode(err, remoting.NoMessage) {
		t.Errorf("ack with the handle from before the kill after the redelivery: %v, want NO_MESSAGE", err)
	}
}

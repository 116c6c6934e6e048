package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestPopRaftKill9Leader: RocketMQ 5's pop across a SIGKILL of the Raft leader (child processes,
// SYNC_FLUSH). Four messages are popped, two acked, the leader is killed; the offset sync
// (dLegerOffsetSyncIntervalMs, a minute here) never carried the pop offsets.
//
//   - stored: the check point and the acks were written to the revive log before the kill (their stay in the
//     pop engine's merge buffer, popCkStayBufferTime, had passed): they are Raft entries, the new master
//     redelivers the two not acked (attempt 2) and not the two acked, the pop offset lifted past the check
//     point it read.
//   - buffered: the kill came while the check point and the acks were in the old leader's memory only: the
//     pop offset had not passed the pop, so the new master hands the four out again from the queue (attempt
//     1); the two not acked come back, the two acked may too (at least once: their acks died with the
//     leader). Nothing popped and not acked is lost either way.
func TestPopRaftKill9Leader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	t.Run("stored", func(t *testing.T) { popKill9(t, true) })
	t.Run("buffered", func(t *testing.T) { popKill9(t, false) })
}

func popKill9(t *testing.T, stored bool) {
	popAcrossFault(t, "broker-p", stored, false, func(c *cluster.Cluster, w *remoting.Client, flags ...string) (string, func() string) {
		nodes := startRaftChildren(t, c, "broker-p", "", append([]string{"--dLegerOffsetSyncIntervalMs=60000"}, flags...)...)
		m := raftChildMaster(t, c, w, "broker-p", "", nodes, "")
		return m.addr, func() string {
			if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = m.cmd.Wait()
			return raftChildMaster(t, c, w, "broker-p", "", nodes, m.addr).addr
		}
	})
}

// popAcrossFault pops four messages of one queue of the broker group named group, acks two, brings the
// fault and checks what the broker serving after it hands out. start starts the group with flags (the
// revive loop's pace, the merge buffer's stay) and returns the address serving pops and the fault, which
// returns the address serving after it.
//
//   - stored: the check point and its acks reached the revive log before the fault (a stay of 500 ms,
//     waited for); graceful: the fault lets the broker close (SIGTERM), which writes its merge buffer.
//     Either way the two acked never come back and the two not acked come back from the revive service
//     (attempt 2).
//   - otherwise the check point and the acks died in the merge buffer: the pop offset had not passed the
//     pop, so the four are handed out again from the queue (attempt 1); the two acked may come back (their
//     acks are gone), the two not acked must.
func popAcrossFault(t *testing.T, group string, stored, graceful bool, start func(c *cluster.Cluster, w *remoting.Client, flags ...string) (string, func() string)) {
	c := cluster.Start(t, cluster.Options{NoBrokers: true})
	stay := "--popCkStayBufferTime=600000"
	if stored {
		stay = "--popCkStayBufferTime=500"
	}
	w := newWireClient(t)
	addr, fault := start(c, w, "--reviveInterval=100", stay)
	const topic, cg = "PopFault", "CG_pop_fault"
	raftCreateTopic(t, w, addr, topic)
	nc := client.New(client.Config{Timeout: 5 * time.Second})
	t.Cleanup(func() { _ = nc.Close() })
	ctx := context.Background()
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
	if stored {
		// Past the stay: the check point and then its acks are written by the revive loop (every 100 ms).
		var n float64
		cluster.Eventually(t, 30*time.Second, func() bool {
			n = reviveRecords(t, nc, group, addr)
			return n >= 2
		}, "the check point and its acks in the revive log")
	} else if n := reviveRecords(t, nc, group, addr); n != 0 {
		t.Fatalf("%v revive records before the fault, want none (the check point and its acks in the merge buffer)", n)
	}
	addr = fault()
	back := map[string]*client.PoppedMessage{}
	cluster.Eventually(t, 90*time.Second, func() bool {
		for _, p := range pop(time.Hour) {
			if back[string(p.Body)] != nil {
				t.Fatalf("%s popped twice at %s after the fault", p.Body, addr)
			}
			back[string(p.Body)] = p
		}
		return back["k2"] != nil && back["k3"] != nil
	}, "k2 and k3 delivered again after the fault")
	for _, p := range pop(time.Hour) {
		back[string(p.Body)] = p
	}
	kept := stored || graceful
	for _, b := range []string{"k0", "k1"} {
		switch {
		case kept && back[b] != nil:
			t.Errorf("acked %s delivered again after the fault", b)
		case back[b] != nil:
			t.Logf("acked %s delivered again after the fault (its ack was in the merge buffer)", b)
			if err := nc.AckMessage(ctx, addr, cg, topic, back[b].ReceiptHandle); err != nil {
				t.Errorf("ack of %s delivered again: %v", b, err)
			}
		}
	}
	want := int32(2) // redelivered by the revive service, from the retry topic
	if !kept {
		want = 1 // handed out again from the queue
	}
	for _, b := range []string{"k2", "k3"} {
		if back[b].Attempt != want {
			t.Errorf("%s came back with attempt %d, want %d", b, back[b].Attempt, want)
		}
		if err := nc.AckMessage(ctx, addr, cg, topic, back[b].ReceiptHandle); err != nil {
			t.Errorf("ack of redelivered %s: %v", b, err)
		}
	}
	if err := nc.AckMessage(ctx, addr, cg, topic, got["k2"].ReceiptHandle); !client.HasCode(err, remoting.NoMessage) {
		t.Errorf("ack with the handle from before the fault after the redelivery: %v, want NO_MESSAGE", err)
	}
}

// reviveRecords is how many records the revive topic's queues hold at the broker group's broker at addr.
func reviveRecords(t *testing.T, w *client.Client, group, addr string) float64 {
	t.Helper()
	var n float64
	for q := range int32(8) {
		off, err := w.QueueOffset(context.Background(), remoting.GetMaxOffset, client.Queue{MessageQueue: protocol.MessageQueue{
			Topic: protocol.ReviveTopic("DefaultCluster"), BrokerName: group, QueueID: q}, Addr: addr}, 0)
		if err == nil {
			n += float64(off)
		}
	}
	return n
}

package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
)

// TestProducerTopics: --topics 3 creates Scale_0..Scale_2 and spreads a run's sends evenly over their queues
// (three goroutines of ten sync sends each, going round the six queues, put ten messages in each topic).
func TestProducerTopics(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	sum := runJSON(t, "producer", "-n", c.NamesrvAddr(), "-t", "Scale", "--topics", "3", "--queues", "2",
		"-w", "3", "-s", "100", "-q", "30")
	if sum.Messages != 30 || sum.Failed != 0 || sum.Rejected != 0 || sum.Topics != 3 {
		t.Fatalf("summary %+v: want 30 messages, no failure, 3 topics", sum)
	}
	rc := remoting.NewClient(remoting.ClientConfig{}, nil)
	defer rc.Close()
	for i := range 3 {
		topic := "Scale_" + strconv.Itoa(i)
		// Dispatch to the consume queues runs behind the store: poll, bounded, for the ten messages.
		var n int64
		for try := 0; try < 200 && n < 10; try++ {
			if try > 0 {
				time.Sleep(20 * time.Millisecond) // poll interval, not synchronisation: the loop checks the count
			}
			n = storedIn(t, rc, c.Broker(0).Addr(), topic, 2)
		}
		if n != 10 {
			t.Errorf("%s holds %d messages, want 10", topic, n)
		}
	}
}

// storedIn adds up the max offsets of the topic's queues on the broker at addr.
func storedIn(t *testing.T, rc *remoting.Client, addr, topic string, queues int) int64 {
	t.Helper()
	var sum int64
	for q := range queues {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.GetMaxOffset,
			map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil))
		cancel()
		if err != nil || resp.Code != int32(remoting.Success) {
			t.Fatalf("max offset of %s/%d: %v %v", topic, q, err, resp)
		}
		n, _ := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		sum += n
	}
	return sum
}

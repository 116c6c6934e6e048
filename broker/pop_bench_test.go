package broker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
)

// popBenchSetup stores n messages over 4 queues.
func popBenchSetup(b *testing.B, topic string, n int) *popHarness {
	c := popCluster(b)
	h := newPopHarness(b, c.Broker(0).Addr, topic, 4)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				h.send(int32(i%4), "bench-message-body-of-some-length")
			}
		}()
	}
	wg.Wait()
	return h
}

// BenchmarkPopBatchAck pops 32 at a time over the wire and acks them in one BATCH_ACK_MESSAGE; compare
// BenchmarkPullCommit, the 4.x way, in the same run (-benchtime=Nx).
func BenchmarkPopBatchAck(b *testing.B) {
	h := popBenchSetup(b, "BPOP", b.N)
	ctx := context.Background()
	b.ResetTimer()
	for done := 0; done < b.N; {
		res := h.pop(32, time.Minute)
		handles := make([]string, len(res.Msgs))
		for i, m := range res.Msgs {
			handles[i] = m.ReceiptHandle
		}
		if len(handles) > 0 {
			errs, err := h.c.BatchAck(ctx, h.addr(), h.group, h.topic, handles)
			if err == nil {
				err = errors.Join(errs...)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		done += len(handles)
	}
}

// BenchmarkPullCommit pulls 32 at a time from each queue in turn and commits the offset with the next pull.
func BenchmarkPullCommit(b *testing.B) {
	h := popBenchSetup(b, "BPULL", b.N)
	ctx := context.Background()
	b.ResetTimer()
	next := make([]int64, 4)
	for done, q := 0, 0; done < b.N; q = (q + 1) % 4 {
		res, err := h.c.PullMessage(ctx, h.addr(), &client.Pull{Group: h.group, Topic: h.topic, BrokerName: h.broker,
			QueueID: int32(q), Offset: next[q], MaxNums: 32, Commit: true, CommitOffset: next[q]})
		if err != nil {
			b.Fatal(err)
		}
		if res.Status == client.PullFound {
			next[q] = res.NextBegin
			done += len(res.Msgs)
		}
	}
}

// BenchmarkPopAckConcurrent: 8 consumers pop 8 at a time and ack each message alone, over one revive
// queue, with SYNC_FLUSH: the acks of the revive queue are written side by side and share fsyncs.
func BenchmarkPopAckConcurrent(b *testing.B) {
	c := cluster.Start(b, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.BrokerName = "broker-a"
		cfg.Pop.ReviveQueueNum = 1
		cfg.FlushDiskType = "SYNC_FLUSH"
	}})
	h := newPopHarness(b, c.Broker(0).Addr, "BPOPC", 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < b.N; i += 8 {
				h.send(int32(i%8), "bench-message-body-of-some-length")
			}
		}()
	}
	wg.Wait()
	ctx := context.Background()
	var done atomic.Int64
	b.ResetTimer()
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(b.N) {
				res, err := h.c.PopMessage(ctx, h.addr(), &client.Pop{Group: h.group, Topic: h.topic, BrokerName: h.broker,
					QueueID: int32(w), MaxNums: 8, Invisible: time.Minute, FromStart: true})
				if err != nil {
					b.Error(err)
					return
				}
				for _, m := range res.Msgs {
					if err := h.ack(m); err != nil {
						b.Error(err)
						return
					}
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
}

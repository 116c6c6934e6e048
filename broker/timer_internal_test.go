package broker

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
)

// TestTimerSkipsRecordNoLongerStored: a timer message whose CommitLog record is gone (its file expired or
// was cleaned under disk pressure after the service loaded the unit) is skipped with a warning; it does not
// hold back the message due after it, which used to wait behind it for ever (retried at the head of the heap).
func TestTimerSkipsRecordNoLongerStored(t *testing.T) {
	b := newLoopbackBroker(t, func(cfg *Config) {
		cfg.MappedFileSizeCommitLog = 1 << 20
		cfg.MaxMessageSize = 64 << 10
	})
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}

	const topic = "TimerGone"
	putTimer := func(due int64) {
		t.Helper()
		m := &message.Message{Topic: topic, Body: []byte("due " + strconv.FormatInt(due, 10)),
			Properties: message.PropertyTimerDeliverMs + "\x01" + strconv.FormatInt(due, 10) + "\x02"}
		if _, err := b.put(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	loaded := func(queueOffset int64) func() bool {
		return func() bool {
			b.timer.mu.Lock()
			defer b.timer.mu.Unlock()
			for _, e := range b.timer.pending {
				if e.queueOffset == queueOffset {
					return true
				}
			}
			return false
		}
	}

	now := time.Now().UnixMilli()
	putTimer(now + 2*timerPrecisionMs)
	testutil.WaitFor(t, 20*time.Second, "the first timer message in the heap", loaded(0))
	// Its record goes: point the loaded unit at a position the CommitLog does not hold, as after the file
	// holding it was deleted (LookMessageByOffset answers store.ErrNotFound for both).
	gone := b.store.MaxPhyOffset() + 64<<20
	if _, err := b.store.LookMessageByOffset(gone); err == nil {
		t.Fatalf("offset %d readable; want store.ErrNotFound", gone)
	}
	b.timer.mu.Lock()
	for i := range b.timer.pending {
		if b.timer.pending[i].queueOffset == 0 {
			b.timer.pending[i].phy = gone
		}
	}
	b.timer.mu.Unlock()

	putTimer(now + 2*timerPrecisionMs + 200)
	testutil.WaitFor(t, 20*time.Second, "the second timer message delivered to its topic", func() bool { return b.store.MaxOffsetInQueue(topic, 0) >= 1 })
	if n := b.store.MaxOffsetInQueue(topic, 0); n != 1 {
		t.Fatalf("%d messages delivered to %s, want 1 (the first one's record is gone)", n, topic)
	}
	testutil.WaitFor(t, 20*time.Second, "both timer units past the checkpoint's low water", func() bool {
		b.timer.mu.Lock()
		defer b.timer.mu.Unlock()
		return b.timer.lowWater == 2
	})
}

// newLoopbackBroker is a broker (not started) on 127.0.0.1 with free ports, a temporary store, no metrics
// and no name server, its configuration changed by tune; closed at cleanup.
func newLoopbackBroker(t *testing.T, tune func(*Config)) *Broker {
	t.Helper()
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.ListenPort = testutil.FreePort(t)
	cfg.Replication.HAListenPort = testutil.FreePort(t)
	cfg.MetricsPort = 0
	tune(&cfg)
	b, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

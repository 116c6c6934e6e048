package store

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
)

func testLogger(t testing.TB) *slog.Logger { return testutil.Logger(t, slog.LevelInfo) }

var testStoreHost = netip.MustParseAddrPort("10.0.0.5:10911")

// smallConfig is a store with tiny files so tests cross file boundaries quickly.
func smallConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.MappedFileSizeCommitLog = 16 << 10
	cfg.MaxMessageSize = 4 << 10
	cfg.MappedFileSizeConsumeQueue = 32 * cqUnitSize
	cfg.MaxHashSlotNum = 64
	cfg.MaxIndexNum = 128
	cfg.FlushIntervalCommitLog = 10
	cfg.FlushIntervalConsumeQueue = 10
	cfg.CommitIntervalCommitLog = 10
	cfg.CleanResourceInterval = 3600 * 1000
	// A loaded CI machine must not turn a slow fsync into a test failure.
	cfg.SyncFlushTimeout = 60000
	return cfg
}

// forEachFlush runs fn as a subtest per flush type, with smallConfig set to it.
func forEachFlush(t *testing.T, fn func(t *testing.T, cfg Config)) {
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		t.Run(flush, func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.FlushDiskType = flush
			fn(t, cfg)
		})
	}
}

func testOptions(t testing.TB) Options {
	return Options{Logger: testLogger(t), StoreHost: testStoreHost}
}

// openStore opens and starts a store that is closed at the end of the test.
func openStore(t testing.TB, cfg Config, opts Options) *Store {
	t.Helper()
	s, err := Open(cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testMessage(topic string, queueID int32, body string, props map[string]string) *message.Message {
	return &message.Message{
		Topic:         topic,
		QueueID:       queueID,
		Flag:          7,
		Body:          []byte(body),
		Properties:    message.EncodeProperties(props),
		BornTimestamp: 1700000000000,
		BornHost:      netip.MustParseAddrPort("192.168.1.20:50000"),
	}
}

func mustPut(t testing.TB, s *Store, m *message.Message) PutResult {
	t.Helper()
	res, err := s.PutMessage(context.Background(), m)
	if err != nil {
		t.Fatalf("PutMessage(%s/%d): %v", m.Topic, m.QueueID, err)
	}
	if res.Status != PutOK {
		t.Fatalf("PutMessage(%s/%d): status %v", m.Topic, m.QueueID, res.Status)
	}
	return res
}

// waitFor is testutil.WaitFor with this package's deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, what, cond)
}

// waitDispatched waits until dispatch reached the CommitLog end.
func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	waitFor(t, "dispatch to catch up", func() bool { return s.reput.from.Load() >= s.commitLog.q.maxWrote() })
}

// readQueue reads a whole queue from offset 0 and returns the decoded messages.
func readQueue(t testing.TB, s *Store, topic string, queueID int32) []*message.MessageExt {
	t.Helper()
	var out []*message.MessageExt
	off := s.MinOffsetInQueue(topic, queueID)
	for {
		r, err := s.GetMessage("g", topic, queueID, off, 32, 1<<20, nil)
		if err != nil {
			t.Fatalf("GetMessage: %v", err)
		}
		for _, rec := range r.Records {
			m, err := message.DecodeMessage(rec, true)
			if err != nil {
				t.Fatalf("DecodeMessage: %v", err)
			}
			out = append(out, m)
		}
		r.Release()
		if r.Status != Found {
			return out
		}
		off = r.NextBeginOffset
	}
}

func bodyOf(i, size int) string {
	s := fmt.Sprintf("message-%06d-", i)
	if len(s) < size {
		s += strings.Repeat("x", size-len(s))
	}
	return s
}

// fakeClock is a Clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

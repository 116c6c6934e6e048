package pop

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// The engine's tests run it over a real store in a temporary folder, an offset table in memory and the
// store's own put: what a broker gives it, without the broker.

var testHost = netip.MustParseAddrPort("127.0.0.1:10911")

// memOffsets is an offset table in memory. persisted is what a crash leaves of it (the broker persists
// its table every flushConsumerOffsetInterval and on close): see harness.crash.
type memOffsets struct {
	mu sync.Mutex
	m  map[GroupQueue]int64
}

func (o *memOffsets) Query(group, topic string, q int32) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v, ok := o.m[GroupQueue{group, topic, q}]; ok {
		return v
	}
	return -1
}

func (o *memOffsets) Commit(group, topic string, q int32, off int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m[GroupQueue{group, topic, q}] = off
}

func (o *memOffsets) snapshot() map[GroupQueue]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.m)
}

// countingStore counts the reads of the revive topic; while hidden is set it answers every record read
// by position as the store does in Raft mode for a record not visible yet, and counts those reads.
type countingStore struct {
	*store.Store
	reviveReads *atomic.Int64
	hidden      *atomic.Bool
	hiddenLooks *atomic.Int64
}

func (s countingStore) LookMessageByOffset(phy int64) (*message.MessageExt, error) {
	if s.hidden.Load() {
		s.hiddenLooks.Add(1)
		return nil, fmt.Errorf("%w: %w %d", store.ErrNotFound, store.ErrNotVisibleYet, phy)
	}
	return s.Store.LookMessageByOffset(phy)
}

func (s countingStore) GetMessage(group, topic string, q int32, off int64, n, maxBytes int, f store.MessageFilter) (*store.GetResult, error) {
	if topic == protocol.ReviveTopic(testCluster) {
		s.reviveReads.Add(1)
	}
	return s.Store.GetMessage(group, topic, q, off, n, maxBytes, f)
}

const (
	testCluster = "C"
	testGroup   = "G"
	testTopic   = "T"
)

// harness is an engine over a store in dir.
type harness struct {
	t           *testing.T
	dir         string
	cfg         Config
	st          *store.Store
	offsets     *memOffsets
	e           *Engine
	reviveReads atomic.Int64
	hidden      atomic.Bool  // countingStore: records read by position are not visible yet
	hiddenLooks atomic.Int64 // reads answered so
	topics      sync.Map     // topics put to: HasTopic
}

func testConfig() Config {
	c := DefaultConfig()
	c.ReviveInterval = 20
	return c
}

func newHarness(t *testing.T, cfg Config) *harness {
	h := &harness{t: t, dir: t.TempDir(), cfg: cfg, offsets: &memOffsets{m: map[GroupQueue]int64{}}}
	h.open()
	t.Cleanup(h.close)
	return h
}

func (h *harness) open() {
	h.t.Helper()
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = h.dir
	scfg.MappedFileSizeCommitLog, scfg.MaxMessageSize = 1<<20, 64<<10
	scfg.MappedFileSizeConsumeQueue = 1024 * 20
	scfg.MaxHashSlotNum, scfg.MaxIndexNum = 64, 256
	scfg.FlushIntervalCommitLog, scfg.FlushIntervalConsumeQueue = 10, 10
	scfg.CleanResourceInterval = 3600 * 1000
	st, err := store.Open(scfg, store.Options{Logger: testutil.Logger(h.t, slog.LevelWarn), StoreHost: testHost})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.st = st
	put := func(ctx context.Context, m *message.Message) (store.PutResult, error) {
		h.topics.Store(m.Topic, true)
		return st.PutMessage(ctx, m)
	}
	h.e = New(Options{Store: countingStore{st, &h.reviveReads, &h.hidden, &h.hiddenLooks}, Offsets: h.offsets, Put: put,
		Clock: clockFunc(time.Now), Log: testutil.Logger(h.t, slog.LevelWarn), Config: h.cfg, Cluster: testCluster,
		Broker: "b", Host: testHost,
		EnsureTopic: func(string, int32) error { return nil },
		HasTopic:    func(topic string) bool { _, ok := h.topics.Load(topic); return ok },
		Unblocked:   func(string, int32) {},
		RecordGet:   func(string, string, int32, int, int, int64) {},
		MaxAttempts: func(string) int32 { return 16 },
		DeadLetter: func(group string, m *message.MessageExt) (*message.Message, error) {
			out := m.Message
			out.Topic, out.QueueID = "%DLQ%"+group, 0
			return &out, nil
		},
	})
	h.e.Start()
}

// close ends the engine's term as a broker's Close does, then closes the store.
func (h *harness) close() {
	if h.e != nil {
		if err := h.e.Close(); err != nil {
			h.t.Error(err)
		}
		h.e = nil
	}
	if h.st != nil {
		_ = h.st.Close()
		h.st = nil
	}
}

// restart closes everything in order and opens it again: a broker restarted, or a new master.
func (h *harness) restart() {
	h.close()
	h.open()
}

// crash stops the engine without its Close (its goroutine ends; nothing of its memory is written) and
// reopens: the offset table is what was persisted (persisted), the store keeps what it wrote (a process
// crash keeps the page cache).
func (h *harness) crash(persisted map[GroupQueue]int64) {
	h.e.mu.Lock()
	cancel := h.e.mu.cancel
	h.e.mu.running, h.e.mu.cancel = false, nil
	h.e.mu.Unlock()
	cancel()
	h.e.wg.Wait()
	h.e = nil
	h.offsets.mu.Lock()
	h.offsets.m = maps.Clone(persisted)
	h.offsets.mu.Unlock()
	h.close()
	h.open()
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// send puts n messages into topic queue q and waits until they are dispatched; it returns their offsets.
func (h *harness) send(topic string, q int32, n int) []int64 {
	h.t.Helper()
	var offs []int64
	for i := range n {
		res, err := h.st.PutMessage(context.Background(), &message.Message{Topic: topic, QueueID: q,
			Body: fmt.Appendf(nil, "%d/%d", q, i), BornTimestamp: time.Now().UnixMilli(), BornHost: testHost})
		if err != nil {
			h.t.Fatal(err)
		}
		offs = append(offs, res.QueueOffset)
	}
	h.topics.Store(topic, true)
	testutil.WaitFor(h.t, 10*time.Second, "the messages dispatched", func() bool {
		return h.st.MaxOffsetInQueue(topic, q) > offs[len(offs)-1]
	})
	return offs
}

// popped is one message of a pop: its queue offset in the topic read and its handle. Its body is
// "queue/index" of the message as send put it.
type popped struct {
	topic  string // the topic read (the retry topic for a redelivery)
	offset int64
	handle protocol.ExtraInfo
	body   string
}

// pop pops up to max messages of testTopic queue q (-1: any) for testGroup, hidden for invisible.
func (h *harness) pop(q int32, max int, invisible time.Duration) []popped {
	h.t.Helper()
	a, err := h.e.Pop(context.Background(), &Request{Group: testGroup, Topic: testTopic, QueueID: q, ReadQueues: 1,
		Max: max, Invisible: invisible.Milliseconds(), InitMode: protocol.PopInitModeMin})
	if err != nil {
		h.t.Fatal(err)
	}
	defer a.Release()
	return h.decode(a)
}

// decode is the messages of a pop's answer, each with its handle as a client builds it.
func (h *harness) decode(a *Answer) []popped {
	h.t.Helper()
	starts, err := protocol.ParseOffsetInfo(a.Header.StartOffsetInfo)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []popped
	for _, rec := range a.Parts {
		m, err := message.DecodeMessage(rec, true)
		if err != nil {
			h.t.Fatal(err)
		}
		p := popped{topic: m.Topic, offset: m.QueueOffset, body: string(m.Body)}
		if ck, ok := message.FindProperty(m.Properties, message.PropertyPopCK); ok {
			if p.handle, err = protocol.ParseExtraInfo(ck); err != nil {
				h.t.Fatal(err)
			}
			p.topic = h.e.RetryTopic(testTopic, testGroup)
		} else {
			start := starts[protocol.OffsetInfoKey(m.Topic, m.QueueID)]
			p.handle = protocol.ExtraInfo{CKQueueOffset: start[0], PopTime: a.Header.PopTime,
				InvisibleTime: a.Header.InvisibleTime, ReviveQueueID: a.Header.ReviveQid,
				RetryMark: protocol.RetryMark(m.Topic), BrokerName: "b", QueueID: m.QueueID, QueueOffset: m.QueueOffset}
		}
		out = append(out, p)
	}
	return out
}

func (h *harness) ack(p popped) error {
	return h.e.Ack(context.Background(), testGroup, p.topic, p.handle.QueueID, p.offset, p.handle)
}

// bodies are the messages' bodies, sorted.
func bodies(ps []popped) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.body)
	}
	slices.Sort(out)
	return out
}

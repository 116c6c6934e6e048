package txcheck

import (
	"context"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// The Checker's tests run its walks one at a time (check) over a real store, with the store's own put, an
// offset table in memory, a producer table the test connects and a clock the test moves.

// fakeProducers records what the Checker asks; connected says whether a producer of the group is there.
type fakeProducers struct {
	mu        sync.Mutex
	connected bool
	asked     []Check
}

func (p *fakeProducers) Connected(string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connected
}

func (p *fakeProducers) Ask(c Check) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.connected {
		return "", ErrNoProducer
	}
	p.asked = append(p.asked, c)
	return "127.0.0.9:1234", nil
}

// memOffsets is an offset table in memory, keyed "group topic queue".
type memOffsets struct{ m sync.Map }

func offsetKey(group, topic string, q int32) string {
	return group + " " + topic + " " + strconv.Itoa(int(q))
}

func (o *memOffsets) Query(group, topic string, q int32) int64 {
	if v, ok := o.m.Load(offsetKey(group, topic, q)); ok {
		return v.(int64)
	}
	return -1
}

func (o *memOffsets) Commit(group, topic string, q int32, off int64) {
	o.m.Store(offsetKey(group, topic, q), off)
}

type manualClock struct{ now time.Time }

func (c *manualClock) Now() time.Time { return c.now }

const (
	testGroup = "TxProducers"
	testTopic = "TxTopic"
	checkMax  = 2
)

// TestCheckerWalk: a half message younger than the timeout is left alone; an older one is put back and its
// producer asked about the copy (its check counted only while a producer is connected); one with an op
// record is done, and the op queue moves past it; one checked checkMax times is given up.
func TestCheckerWalk(t *testing.T) {
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.MappedFileSizeCommitLog, cfg.MaxMessageSize = 1<<20, 64<<10
	log := testutil.Logger(t, slog.LevelInfo)
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	st, err := store.Open(cfg, store.Options{Logger: log, StoreHost: host})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	clock := &manualClock{now: time.UnixMilli(1_700_000_000_000)}
	producers := &fakeProducers{}
	offsets := &memOffsets{}
	var ensured []string
	c := New(Options{Store: st, Put: st.PutMessage, Offsets: offsets, Producers: producers, Clock: clock, Log: log,
		StoreHost: host, Interval: time.Hour, Timeout: 6 * time.Second, CheckMax: checkMax,
		EnsureTopic: func(topic string, queues, perm int32) error {
			ensured = append(ensured, topic+" "+strconv.Itoa(int(queues))+" "+strconv.Itoa(int(perm)))
			return nil
		}})

	// put stores m and waits until its topic's queue 0 holds n units (dispatched).
	put := func(m *message.Message, n int64) {
		t.Helper()
		if _, err := st.PutMessage(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		dispatched(t, st, m.Topic, n)
	}
	half := func(checks int) *message.Message {
		props := map[string]string{message.PropertyRealTopic: testTopic, message.PropertyRealQueueID: "1",
			message.PropertyProducerGroup: testGroup, message.PropertyUniqKey: "u-" + strconv.Itoa(checks),
			message.PropertyTransactionPrepared: "true"}
		if checks > 0 {
			props[message.PropertyTransactionCheckTimes] = strconv.Itoa(checks)
		}
		return &message.Message{Topic: protocol.TopicTransHalf, Body: []byte("tx"), Properties: message.EncodeProperties(props),
			BornTimestamp: clock.now.UnixMilli(), BornHost: host}
	}
	halfOffset := func() int64 { return offsets.Query(transGroup, protocol.TopicTransHalf, 0) }
	checksAt := func(off int64) string {
		t.Helper()
		u, err := st.ConsumeQueueUnit(protocol.TopicTransHalf, 0, off)
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.LookMessageByOffset(u.PhysicalOffset)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := message.FindProperty(m.Properties, message.PropertyTransactionCheckTimes)
		return v
	}

	put(half(0), 1) // offset 0
	c.check()
	if halfOffset() != 0 || st.MaxOffsetInQueue(protocol.TopicTransHalf, 0) != 1 {
		t.Fatalf("a young half message: walk at %d, %d half units; want it left alone", halfOffset(), st.MaxOffsetInQueue(protocol.TopicTransHalf, 0))
	}

	clock.now = clock.now.Add(7 * time.Second) // past the timeout; no producer connected
	c.check()
	dispatched(t, st, protocol.TopicTransHalf, 2)
	if halfOffset() != 1 || checksAt(1) != "0" || len(producers.asked) != 0 {
		t.Fatalf("no producer: walk at %d, copy's checks %q, %d asked; want 1, \"0\" (not counted), none", halfOffset(), checksAt(1), len(producers.asked))
	}

	producers.connected = true
	c.check()
	dispatched(t, st, protocol.TopicTransHalf, 3)
	if halfOffset() != 2 || checksAt(2) != "1" || len(producers.asked) != 1 {
		t.Fatalf("a producer: walk at %d, copy's checks %q, %d asked; want 2, \"1\", one", halfOffset(), checksAt(2), len(producers.asked))
	}
	ask := producers.asked[0]
	u, err := st.ConsumeQueueUnit(protocol.TopicTransHalf, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ask.Group != testGroup || ask.TranStateTableOffset != 2 || ask.CommitLogOffset != u.PhysicalOffset || ask.MsgID != "u-0" ||
		ask.TransactionID != "u-0" || ask.Topic != testTopic || ask.OffsetMsgID != message.CreateOffsetMsgID(host, u.PhysicalOffset) {
		t.Fatalf("asked %+v; want the copy at queue offset 2, CommitLog offset %d", ask, u.PhysicalOffset)
	}
	rec, err := message.DecodeMessage(ask.Record, true)
	if err != nil || rec.Topic != testTopic || rec.QueueID != 1 || rec.QueueOffset != 2 || string(rec.Body) != "tx" {
		t.Fatalf("the check's record: %+v, %v; want the copy with its real topic and queue", rec, err)
	}

	// END_TRANSACTION's op record for the copy: the copy is done.
	put(&message.Message{Topic: protocol.TopicTransOpHalf, Body: []byte("2"), BornHost: host}, 1)
	c.check()
	if halfOffset() != 3 || offsets.Query(transGroup, protocol.TopicTransOpHalf, 0) != 1 || len(producers.asked) != 1 {
		t.Fatalf("a done half message: walk at %d, op walk at %d, %d asked; want 3, 1, still one",
			halfOffset(), offsets.Query(transGroup, protocol.TopicTransOpHalf, 0), len(producers.asked))
	}

	put(half(checkMax), 4) // offset 3, checked checkMax times already
	c.check()
	dispatched(t, st, protocol.TopicTransCheckMax, 1)
	if halfOffset() != 4 || len(producers.asked) != 1 || st.MaxOffsetInQueue(protocol.TopicTransHalf, 0) != 4 {
		t.Fatalf("a half message checked %d times: walk at %d, %d asked, %d half units; want it given up, not put back",
			checkMax, halfOffset(), len(producers.asked), st.MaxOffsetInQueue(protocol.TopicTransHalf, 0))
	}
	if len(ensured) != 1 || ensured[0] != protocol.TopicTransCheckMax+" 1 "+strconv.Itoa(int(protocol.PermRead)) {
		t.Fatalf("topics ensured %q; want %s with 1 read-only queue", ensured, protocol.TopicTransCheckMax)
	}
}

// dispatched waits until topic's queue 0 holds n units.
func dispatched(t *testing.T, st *store.Store, topic string, n int64) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, topic+" dispatched", func() bool { return st.MaxOffsetInQueue(topic, 0) >= n })
	if got := st.MaxOffsetInQueue(topic, 0); got != n {
		t.Fatalf("%s holds %d units, want %d", topic, got, n)
	}
}

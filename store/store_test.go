package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rocketraft/rocketraft/message"
)

type putRecord struct {
	topic string
	queue int32
	body  string
	tag   string
	res   PutResult
}

// putMixed stores n messages over two topics and three queues with sizes that cross files.
func putMixed(t testing.TB, s *Store, n int) []putRecord {
	t.Helper()
	var out []putRecord
	for i := 0; i < n; i++ {
		topic := []string{"TopicA", "TopicB"}[i%2]
		q := int32(i % 3)
		tag := []string{"TagA", "TagB", "TagC"}[i%3]
		body := bodyOf(i, 50+(i*397)%1500)
		m := testMessage(topic, q, body, map[string]string{message.PropertyTags: tag, message.PropertyKeys: fmt.Sprintf("key-%d", i), message.PropertyUniqKey: fmt.Sprintf("UNIQ%06d", i)})
		out = append(out, putRecord{topic, q, body, tag, mustPut(t, s, m)})
	}
	return out
}

// checkAll verifies every put message is readable through its queue, in order, intact.
func checkAll(t testing.TB, s *Store, puts []putRecord) {
	t.Helper()
	byQueue := map[queueKey][]putRecord{}
	for _, p := range puts {
		k := queueKey{p.topic, p.queue}
		byQueue[k] = append(byQueue[k], p)
	}
	for k, want := range byQueue {
		got := readQueue(t, s, k.topic, k.queueID)
		if len(got) != len(want) {
			t.Fatalf("%s/%d: read %d messages, want %d", k.topic, k.queueID, len(got), len(want))
		}
		for i, m := range got {
			w := want[i]
			if string(m.Body) != w.body || m.QueueOffset != int64(i) || m.PhysicalOffset != w.res.PhysicalOffset ||
				m.Topic != w.topic || m.QueueID != w.queue || m.StoreHost != testStoreHost || m.StoreTimestamp != w.res.StoreTimestamp {
				t.Fatalf("%s/%d offset %d: got %+v, want body %q at %d", k.topic, k.queueID, i, m, w.body, w.res.PhysicalOffset)
			}
			if id := message.CreateOffsetMsgID(testStoreHost, m.PhysicalOffset); id != w.res.MsgID {
				t.Fatalf("msg id %s, put returned %s", id, w.res.MsgID)
			}
			if props := message.ParseProperties(m.Properties); w.tag != "" && props[message.PropertyTags] != w.tag {
				t.Fatalf("tags %q, want %q", props[message.PropertyTags], w.tag)
			}
		}
	}
}

func TestRoundTripAcrossFileBoundaries(t *testing.T) {
	for _, mode := range []string{"mmap", "transientPool", "syncFlush"} {
		t.Run(mode, func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.TransientStorePoolEnable = mode == "transientPool"
			cfg.TransientStorePoolSize = 3
			if mode == "syncFlush" {
				cfg.FlushDiskType = SyncFlush
			}
			s := openStore(t, cfg, testOptions(t))
			puts := putMixed(t, s, 300)
			waitDispatched(t, s)
			if n := len(s.commitLog.q.snapshot()); n < 5 {
				t.Fatalf("only %d commitlog files: the test must cross file boundaries", n)
			}
			checkAll(t, s, puts)
			for i, p := range puts[:20] {
				m, err := s.LookMessageByOffset(p.res.PhysicalOffset)
				if err != nil || string(m.Body) != p.body {
					t.Fatalf("LookMessageByOffset #%d: %v %v", i, m, err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}

			s2 := openStore(t, cfg, testOptions(t))
			if !s2.lastExitOK {
				t.Fatal("reopen after Close took the abnormal path")
			}
			checkAll(t, s2, puts)
			more := putMixed(t, s2, 30)
			waitDispatched(t, s2)
			for _, p := range more {
				if p.res.PhysicalOffset < puts[len(puts)-1].res.PhysicalOffset {
					t.Fatalf("new message at %d, before the old end", p.res.PhysicalOffset)
				}
			}
			checkAll(t, s2, append(puts, more...))
		})
	}
}

func TestGetMessageStatuses(t *testing.T) {
	s := openStore(t, smallConfig(t), testOptions(t))
	for i := 0; i < 5; i++ {
		mustPut(t, s, testMessage("T", 0, bodyOf(i, 100), nil))
	}
	waitDispatched(t, s)
	for _, tc := range []struct {
		topic    string
		offset   int64
		status   GetStatus
		next     int64
		messages int
	}{
		{"T", 0, Found, 5, 5},
		{"T", 3, Found, 5, 2},
		{"T", 5, OffsetOverflowOne, 5, 0},
		{"T", 9, OffsetOverflowBadly, 5, 0},
		{"T", -1, OffsetTooSmall, 0, 0},
		{"Unknown", 0, NoMessageInQueue, 0, 0},
		{"Unknown", 4, NoMessageInQueue, 0, 0},
	} {
		r, err := s.GetMessage("g", tc.topic, 0, tc.offset, 32, 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != tc.status || r.NextBeginOffset != tc.next || len(r.Records) != tc.messages {
			t.Errorf("%s@%d: status %v next %d records %d; want %v %d %d", tc.topic, tc.offset, r.Status, r.NextBeginOffset,
				len(r.Records), tc.status, tc.next, tc.messages)
		}
		r.Release()
		r.Release()
	}
	r, _ := s.GetMessage("g", "T", 0, 0, 2, 1<<20, nil)
	if len(r.Records) != 2 || r.NextBeginOffset != 2 || r.MinOffset != 0 || r.MaxOffset != 5 {
		t.Errorf("maxMsgNums 2: %d records, next %d, min %d max %d", len(r.Records), r.NextBeginOffset, r.MinOffset, r.MaxOffset)
	}
	r.Release()
}

type tagFilter struct{ code int64 }

func (f tagFilter) MatchByConsumeQueue(code int64) bool             { return code == f.code }
func (f tagFilter) MatchByCommitLog([]byte, map[string]string) bool { return true }

func TestTagFilter(t *testing.T) {
	s := openStore(t, smallConfig(t), testOptions(t))
	for i := 0; i < 12; i++ {
		tag := []string{"TagA", "TagB"}[min(i/6, 1)]
		mustPut(t, s, testMessage("T", 0, bodyOf(i, 64), map[string]string{message.PropertyTags: tag}))
	}
	waitDispatched(t, s)
	r, _ := s.GetMessage("g", "T", 0, 0, 32, 1<<20, tagFilter{message.TagsHash("TagB")})
	if r.Status != Found || len(r.Records) != 6 || r.NextBeginOffset != 12 {
		t.Fatalf("TagB: %v, %d records, next %d", r.Status, len(r.Records), r.NextBeginOffset)
	}
	for _, rec := range r.Records {
		if p, _ := message.RecordProperties(rec); p[message.PropertyTags] != "TagB" {
			t.Fatalf("got tag %q", p[message.PropertyTags])
		}
	}
	r.Release()
	r, _ = s.GetMessage("g", "T", 0, 0, 4, 1<<20, tagFilter{message.TagsHash("TagZ")})
	if r.Status != NoMatchedMessage || len(r.Records) != 0 || r.NextBeginOffset != 12 {
		t.Fatalf("TagZ: %v, %d records, next %d", r.Status, len(r.Records), r.NextBeginOffset)
	}
	r.Release()
}

func TestArrivingListenerAndTagsCodeOverride(t *testing.T) {
	var mu sync.Mutex
	var got []Arrival
	opts := testOptions(t)
	var tags []string
	opts.ArrivingListener = func(a Arrival) {
		mu.Lock()
		got = append(got, a)
		tags = append(tags, a.PropertyMap()[message.PropertyTags])
		mu.Unlock()
	}
	opts.TagsCode = func(topic string, props []byte, ts int64) (int64, bool) {
		if topic == "SCHEDULE_TOPIC_XXXX" {
			return ts + 1000, true
		}
		return 0, false
	}
	s := openStore(t, smallConfig(t), opts)
	mustPut(t, s, testMessage("T", 1, "a", map[string]string{message.PropertyTags: "TagA"}))
	res := mustPut(t, s, testMessage("SCHEDULE_TOPIC_XXXX", 2, "b", map[string]string{message.PropertyDelayLevel: "3"}))
	waitFor(t, "two arrivals", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if a := got[0]; a.Topic != "T" || a.QueueID != 1 || a.QueueOffset != 0 || a.TagsCode != message.TagsHash("TagA") || tags[0] != "TagA" {
		t.Errorf("arrival 0 = %+v", a)
	}
	if a := got[1]; a.Topic != "SCHEDULE_TOPIC_XXXX" || a.TagsCode != res.StoreTimestamp+1000 || a.StoreTimestamp != res.StoreTimestamp {
		t.Errorf("arrival 1 = %+v, store time %d", a, res.StoreTimestamp)
	}
}

func TestPutMessagesBatch(t *testing.T) {
	s := openStore(t, smallConfig(t), testOptions(t))
	mustPut(t, s, testMessage("T", 0, "first", nil))
	var batch []*message.Message
	for i := 0; i < 5; i++ {
		batch = append(batch, testMessage("T", 0, bodyOf(i, 30), nil))
	}
	res, err := s.PutMessages(context.Background(), batch)
	if err != nil || res.Status != PutOK || res.Count != 5 || res.QueueOffset != 1 {
		t.Fatalf("PutMessages = %+v, %v", res, err)
	}
	ids := strings.Split(res.MsgID, ",")
	if len(ids) != 5 {
		t.Fatalf("msg ids %q", res.MsgID)
	}
	waitDispatched(t, s)
	got := readQueue(t, s, "T", 0)
	if len(got) != 6 {
		t.Fatalf("read %d messages", len(got))
	}
	total := 0
	for i, m := range got[1:] {
		if m.QueueOffset != int64(i+1) || message.CreateOffsetMsgID(testStoreHost, m.PhysicalOffset) != ids[i] {
			t.Errorf("batch message %d: queue offset %d, id %s vs %s", i, m.QueueOffset, message.CreateOffsetMsgID(testStoreHost, m.PhysicalOffset), ids[i])
		}
		total += int(m.StoreSize)
	}
	if total != res.WroteBytes {
		t.Errorf("WroteBytes %d, records %d", res.WroteBytes, total)
	}
	bad := []*message.Message{testMessage("T", 0, "x", nil), testMessage("T", 1, "y", nil)}
	if _, err := s.PutMessages(context.Background(), bad); !errors.Is(err, ErrBatchMismatch) {
		t.Errorf("mixed batch: %v", err)
	}
}

func TestPutLimitsWriteNothing(t *testing.T) {
	cfg := smallConfig(t)
	s := openStore(t, cfg, testOptions(t))
	mustPut(t, s, testMessage("T", 0, "ok", nil))
	before := s.MaxPhyOffset()
	for _, tc := range []struct {
		name string
		m    *message.Message
		want error
	}{
		{"body", &message.Message{Topic: "T", Body: make([]byte, cfg.MaxMessageSize+1)}, ErrMessageTooLarge},
		{"topic", &message.Message{Topic: strings.Repeat("t", 128)}, ErrTopicTooLong},
		{"empty topic", &message.Message{Topic: ""}, ErrTopicTooLong},
		{"properties", &message.Message{Topic: "T", Properties: strings.Repeat("p", 32768)}, ErrPropertiesTooLarge},
	} {
		_, err := s.PutMessage(context.Background(), tc.m)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		done := make(chan error, 1)
		s.PutMessageAsync(tc.m, func(_ PutResult, err error) { done <- err })
		if err := <-done; !errors.Is(err, tc.want) {
			t.Errorf("%s async: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A batch that does not fit one file is refused whole.
	var big []*message.Message
	for i := 0; i < 8; i++ {
		big = append(big, &message.Message{Topic: "T", Body: make([]byte, cfg.MaxMessageSize)})
	}
	if _, err := s.PutMessages(context.Background(), big); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("oversized batch: %v", err)
	}
	if after := s.MaxPhyOffset(); after != before {
		t.Errorf("refused puts moved the commitlog end from %d to %d", before, after)
	}
}

func TestPutBeforeStartAndAfterClose(t *testing.T) {
	cfg := smallConfig(t)
	s, err := Open(cfg, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutMessage(context.Background(), testMessage("T", 0, "x", nil)); !errors.Is(err, ErrServiceNotAvailable) {
		t.Errorf("before Start: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutMessage(context.Background(), testMessage("T", 0, "x", nil)); !errors.Is(err, ErrServiceNotAvailable) {
		t.Errorf("after Close: %v", err)
	}
	if _, err := s.GetMessage("g", "T", 0, 0, 1, 1, nil); !errors.Is(err, ErrServiceNotAvailable) {
		t.Errorf("GetMessage after Close: %v", err)
	}
}

func TestSlaveRefusesPuts(t *testing.T) {
	cfg := smallConfig(t)
	cfg.BrokerRole = RoleSlave
	s := openStore(t, cfg, testOptions(t))
	if _, err := s.PutMessage(context.Background(), testMessage("T", 0, "x", nil)); !errors.Is(err, ErrNotWritable) {
		t.Errorf("slave put: %v", err)
	}
}

func TestPrepareTransactionSkipsConsumeQueue(t *testing.T) {
	s := openStore(t, smallConfig(t), testOptions(t))
	mustPut(t, s, testMessage("T", 0, "normal-0", nil))
	half := testMessage("T", 0, "half", map[string]string{message.PropertyTransactionPrepared: "true"})
	half.SysFlag = message.SysFlagTransactionPrepared
	res := mustPut(t, s, half)
	if res.QueueOffset != 0 {
		t.Errorf("prepared message got queue offset %d", res.QueueOffset)
	}
	if r2 := mustPut(t, s, testMessage("T", 0, "normal-1", nil)); r2.QueueOffset != 1 {
		t.Errorf("message after a prepared one got queue offset %d, want 1", r2.QueueOffset)
	}
	waitDispatched(t, s)
	got := readQueue(t, s, "T", 0)
	if len(got) != 2 || string(got[0].Body) != "normal-0" || string(got[1].Body) != "normal-1" {
		t.Fatalf("queue holds %d messages", len(got))
	}
	m, err := s.LookMessageByOffset(res.PhysicalOffset)
	if err != nil || !bytes.Equal(m.Body, []byte("half")) {
		t.Fatalf("prepared message not in the commitlog: %v", err)
	}
}

func TestSelectRecordAndOffsets(t *testing.T) {
	s := openStore(t, smallConfig(t), testOptions(t))
	var puts []PutResult
	for i := 0; i < 40; i++ {
		puts = append(puts, mustPut(t, s, testMessage("T", 2, bodyOf(i, 700), nil)))
	}
	waitDispatched(t, s)
	if s.MaxOffsetInQueue("T", 2) != 40 || s.MinOffsetInQueue("T", 2) != 0 || s.MaxOffsetInQueue("T", 3) != 0 {
		t.Fatalf("offsets: max %d min %d", s.MaxOffsetInQueue("T", 2), s.MinOffsetInQueue("T", 2))
	}
	for i, p := range puts {
		phy, err := s.CommitLogOffsetInQueue("T", 2, int64(i))
		if err != nil || phy != p.PhysicalOffset {
			t.Fatalf("CommitLogOffsetInQueue(%d) = %d, %v; want %d", i, phy, err, p.PhysicalOffset)
		}
		ts, err := s.MessageStoreTime("T", 2, int64(i))
		if err != nil || ts != p.StoreTimestamp {
			t.Fatalf("MessageStoreTime(%d) = %d, %v", i, ts, err)
		}
		rec, release, err := s.SelectRecord(p.PhysicalOffset)
		if err != nil {
			t.Fatal(err)
		}
		m, err := message.DecodeMessage(rec, true)
		release()
		release()
		if err != nil || string(m.Body) != bodyOf(i, 700) {
			t.Fatalf("SelectRecord(%d): %v", i, err)
		}
	}
	if _, err := s.LookMessageByOffset(puts[0].PhysicalOffset + 1); err == nil {
		t.Error("LookMessageByOffset inside a record succeeded")
	}
	if _, err := s.LookMessageByOffset(s.MaxPhyOffset() + 100); !errors.Is(err, ErrNotFound) {
		t.Errorf("LookMessageByOffset past the end: %v", err)
	}
	if _, err := s.CommitLogOffsetInQueue("T", 2, 40); !errors.Is(err, ErrNotFound) {
		t.Errorf("CommitLogOffsetInQueue past the end: %v", err)
	}
	if ts, err := s.EarliestMessageTime("T", 2); err != nil || ts != puts[0].StoreTimestamp {
		t.Errorf("EarliestMessageTime = %d, %v", ts, err)
	}
}

func TestConfirmOffsetLimitsDispatch(t *testing.T) {
	s := openStore(t, smallConfig(t), testOptions(t))
	if s.ConfirmOffset() != -1 {
		t.Fatalf("confirm offset %d before any SetConfirmOffset", s.ConfirmOffset())
	}
	var puts []PutResult
	for i := 0; i < 10; i++ {
		puts = append(puts, mustPut(t, s, testMessage("T", 0, bodyOf(i, 100), nil)))
	}
	waitDispatched(t, s)
	limit := puts[9].PhysicalOffset + int64(puts[9].WroteBytes)
	s.SetConfirmOffset(limit)
	for i := 10; i < 20; i++ {
		puts = append(puts, mustPut(t, s, testMessage("T", 0, bodyOf(i, 100), nil)))
	}
	// Nothing past the confirm offset is dispatched, however long we wait for it.
	waitFor(t, "dispatch to reach the confirm offset", func() bool { return s.reput.from.Load() == limit })
	s.reput.wakeup()
	if got := s.MaxOffsetInQueue("T", 0); got != 10 {
		t.Fatalf("max offset %d past the confirm offset, want 10", got)
	}
	if s.DispatchBehindBytes() != 0 {
		t.Fatalf("dispatch behind %d bytes with everything up to the confirm offset dispatched", s.DispatchBehindBytes())
	}
	// A confirm offset inside a record stops before it.
	s.SetConfirmOffset(puts[14].PhysicalOffset + 10)
	waitFor(t, "dispatch to reach record 14", func() bool { return s.MaxOffsetInQueue("T", 0) == 14 })
	s.SetConfirmOffset(s.MaxPhyOffset())
	waitFor(t, "dispatch of everything", func() bool { return s.MaxOffsetInQueue("T", 0) == 20 })
}

func TestDeleteTopics(t *testing.T) {
	cfg := smallConfig(t)
	s := openStore(t, cfg, testOptions(t))
	for i := 0; i < 5; i++ {
		mustPut(t, s, testMessage("Gone", 1, bodyOf(i, 100), nil))
		mustPut(t, s, testMessage("Kept", 1, bodyOf(i, 100), nil))
	}
	waitDispatched(t, s)
	if err := s.DeleteTopics([]string{"Gone"}); err != nil {
		t.Fatal(err)
	}
	if s.MaxOffsetInQueue("Gone", 1) != 0 || s.MaxOffsetInQueue("Kept", 1) != 5 {
		t.Fatalf("after delete: Gone %d, Kept %d", s.MaxOffsetInQueue("Gone", 1), s.MaxOffsetInQueue("Kept", 1))
	}
	if _, err := os.Stat(filepath.Join(cfg.consumeQueueDir(), "Gone")); !os.IsNotExist(err) {
		t.Fatalf("consume queue folder of a deleted topic: %v", err)
	}
	if r := mustPut(t, s, testMessage("Gone", 1, "reborn", nil)); r.QueueOffset != 0 {
		t.Fatalf("recreated topic starts at queue offset %d", r.QueueOffset)
	}
	waitDispatched(t, s)
	if got := readQueue(t, s, "Gone", 1); len(got) != 1 || string(got[0].Body) != "reborn" {
		t.Fatalf("recreated topic reads %d messages", len(got))
	}
}

func TestPutMessagesAsyncAndStats(t *testing.T) {
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		cfg := smallConfig(t)
		cfg.FlushDiskType = flush
		s := openStore(t, cfg, testOptions(t))
		done := make(chan PutResult, 1)
		batch := []*message.Message{testMessage("T", 3, "a", nil), testMessage("T", 3, "b", nil)}
		s.PutMessagesAsync(batch, func(r PutResult, err error) {
			if err != nil {
				t.Errorf("%s: %v", flush, err)
			}
			done <- r
		})
		if r := <-done; r.Status != PutOK || r.Count != 2 || len(strings.Split(r.MsgID, ",")) != 2 {
			t.Fatalf("%s: async batch %+v", flush, r)
		}
		s.PutMessagesAsync(nil, func(_ PutResult, err error) {
			if !errors.Is(err, ErrBatchMismatch) {
				t.Errorf("%s: empty batch: %v", flush, err)
			}
		})
		waitDispatched(t, s)
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.PutMessages != 2 || st.PutBytes <= 0 || st.PutLatency.Count != 1 || st.MaxPhyOffset != s.MaxPhyOffset() ||
			st.FlushLagBytes != 0 || st.DispatchBehindBytes != 0 || !st.Writable || st.TransientPoolFree != -1 || st.FlushLatency.Count == 0 {
			t.Fatalf("%s: stats %+v", flush, st)
		}
		if n := st.PutLatency.Counts; len(n) != len(st.PutLatency.Bounds)+1 {
			t.Fatalf("histogram has %d counts for %d bounds", len(n), len(st.PutLatency.Bounds))
		}
	}
}

func TestTransientPool(t *testing.T) {
	p, err := newTransientPool(2, 64<<10, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	a, b := p.get(), p.get()
	if a == nil || b == nil || len(a) != 64<<10 || p.get() != nil || p.available() != 0 {
		t.Fatal("pool did not hand out exactly two buffers")
	}
	a[0], b[len(b)-1] = 1, 2
	p.put(a)
	if p.available() != 1 || p.get()[0] != 1 {
		t.Fatal("returned buffer not handed out again")
	}
}

func TestStoreFolderLocked(t *testing.T) {
	cfg := smallConfig(t)
	s := openStore(t, cfg, testOptions(t))
	if _, err := Open(cfg, testOptions(t)); !errors.Is(err, ErrStoreLocked) {
		t.Fatalf("second Open of the same folder: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(cfg, testOptions(t))
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	_ = s2.Close()
}

package broker_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/logging"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// jumpClock is a broker.Clock whose wall clock a test steps; its monotonic clock is the real one.
type jumpClock struct {
	start  time.Time
	offset atomic.Int64 // ns added to the real wall clock
}

func (c *jumpClock) Now() time.Time         { return time.Now().Round(0).Add(time.Duration(c.offset.Load())) }
func (c *jumpClock) Elapsed() time.Duration { return time.Since(c.start) }
func (c *jumpClock) jump(d time.Duration)   { c.offset.Add(int64(d)) }

// TestClockJumpsDelayNothingEarlyNothingLost: timer messages (TIMER_DELAY_MS relative, TIMER_DELIVER_MS
// absolute) and delay-level messages are sent over the wire in three batches, the broker's wall clock
// stepping an hour forward after the first and two hours back (an hour behind) after the second. Every
// message reaches its topic (none lost, the timers do not stall for the hour the clock went back), and none
// is read before its delay has passed since it was sent (none early, though the clock went an hour ahead).
func TestClockJumpsDelayNothingEarlyNothingLost(t *testing.T) {
	clock := &jumpClock{start: time.Now()}
	b := startBrokerWith(t, cluster.TestBrokerConfig(t, "127.0.0.1:1", "broker-clock"), broker.Options{Clock: clock})
	w := newWire(t, b.Addr())
	const topic = "ClockJump"
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)

	var mu sync.Mutex
	type sent struct {
		at    time.Time // before the send (monotonic)
		delay time.Duration
	}
	sends := map[string]sent{}
	// send sends a message due delay after it is sent, or at due (the sender's clock) when due is set.
	send := func(id string, delay time.Duration, due time.Time, props string) {
		t.Helper()
		at := time.Now()
		if !due.IsZero() {
			// Measured from at, not from when the caller computed due: on a loaded machine the two can be
			// milliseconds apart (a-deliver-2 "read 2.991s after its send, delay 3s" counted that gap early).
			delay = due.Sub(at)
		}
		expectCode(t, "send "+id, w.send(topic, 0, []byte(id), props), remoting.Success)
		mu.Lock()
		sends[id] = sent{at: at, delay: delay}
		mu.Unlock()
	}
	prop := func(k, v string) string { return k + "\x01" + v + "\x02" }
	batch := func(name string) {
		for i := range 5 {
			send(fmt.Sprintf("%s-timer-%d", name, i), 2*time.Second, time.Time{}, prop("TIMER_DELAY_MS", "2000"))
			// An absolute time from the sender's clock (the real one): the broker compares it with its steady time.
			due := time.Now().Add(3 * time.Second)
			send(fmt.Sprintf("%s-deliver-%d", name, i), 0, due, prop(message.PropertyTimerDeliverMs, strconv.FormatInt(due.UnixMilli(), 10)))
			send(fmt.Sprintf("%s-level-%d", name, i), 5*time.Second, time.Time{}, prop(message.PropertyDelayLevel, "2")) // level 2: 5 s
		}
	}

	read, stopReader := readTopic(t, w, topic, &mu)
	defer stopReader()

	batch("a")
	clock.jump(time.Hour)
	batch("b")
	clock.jump(-2 * time.Hour)
	batch("c")

	// Every message is due within 5 s of its send; a minute is the bound for "the timers recover" (a service
	// waiting on the wall clock would stall for the hour it went back).
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(read)
		mu.Unlock()
		if n >= len(sends) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var early []string
	for id, s := range sends {
		got, ok := read[id]
		if !ok {
			t.Errorf("%s never read", id)
			continue
		}
		// 5 ms: delivery times are whole milliseconds (a due time rounds down by up to 1 ms).
		if waited := got.Sub(s.at); waited < s.delay-5*time.Millisecond {
			early = append(early, fmt.Sprintf("%s read %v after its send, delay %v", id, waited.Round(time.Millisecond), s.delay.Round(time.Millisecond)))
		}
	}
	for id := range read {
		if _, ok := sends[id]; !ok {
			t.Errorf("read %q, never sent", id)
		}
	}
	if len(early) > 0 {
		t.Fatalf("delivered early across the clock's steps:\n%s", strings.Join(early, "\n"))
	}
}

// readTopic long-polls queue 0 of topic and notes when each message (by body) was first read, under mu;
// stop ends it.
func readTopic(t *testing.T, w *wire, topic string, mu *sync.Mutex) (read map[string]time.Time, stop func()) {
	read = map[string]time.Time{}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var next int64
		for {
			select {
			case <-quit:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := w.client.Invoke(ctx, w.addr, remoting.NewRequest(remoting.PullMessage, map[string]string{
				"consumerGroup": "clock-readers", "topic": topic, "queueId": "0", "queueOffset": strconv.FormatInt(next, 10),
				"maxMsgNums": "32", "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "1000",
				"subscription": "*", "subVersion": "0", "expressionType": "TAG"}, nil))
			cancel()
			now := time.Now()
			if err != nil {
				t.Errorf("pull: %v", err)
				return
			}
			if resp.Code != int32(remoting.Success) {
				continue
			}
			for body := resp.Body; len(body) >= 4; {
				size := int(binary.BigEndian.Uint32(body))
				m, err := message.DecodeMessage(body[:size], true)
				if err != nil {
					t.Errorf("decode a pulled message: %v", err)
					return
				}
				mu.Lock()
				if _, dup := read[string(m.Body)]; !dup {
					read[string(m.Body)] = now
				}
				mu.Unlock()
				body = body[size:]
			}
			next, _ = strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
		}
	}()
	return read, func() { close(quit); <-done }
}

// TestClockJumpsTransactionChecks: half messages are sent over the wire in three batches, the broker's wall
// clock stepping an hour forward after the first and two hours back after the second, by a producer that
// answers every CHECK_TRANSACTION_STATE with a commit. No half message is asked about before
// transactionTimeOut has passed since it was sent (a step forward does not ask every producer at once),
// every one is asked about (a step back does not stop the checks for an hour), and every committed message
// reaches its topic.
func TestClockJumpsTransactionChecks(t *testing.T) {
	clock := &jumpClock{start: time.Now()}
	cfg := cluster.TestBrokerConfig(t, "127.0.0.1:1", "broker-clock-tx")
	cfg.TransactionCheckInterval = 200
	cfg.TransactionTimeOut = 2000
	b := startBrokerWith(t, cfg, broker.Options{Clock: clock})
	w := newWire(t, b.Addr())
	const topic, group = "ClockTx", "ClockTxProducers"
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)

	var mu sync.Mutex
	sentAt := map[string]time.Time{}  // by UNIQ_KEY (= body): before the send
	checked := map[string]time.Time{} // by UNIQ_KEY: the first check
	w.client.RegisterHandler(remoting.CheckTransactionState, func(req *remoting.Command) *remoting.Command {
		now := time.Now()
		id := req.ExtFields["msgId"]
		mu.Lock()
		if _, ok := checked[id]; !ok {
			checked[id] = now
		}
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := w.client.Invoke(ctx, w.addr, remoting.NewRequest(remoting.EndTransaction, map[string]string{
			"producerGroup": group, "tranStateTableOffset": req.ExtFields["tranStateTableOffset"],
			"commitLogOffset": req.ExtFields["commitLogOffset"], "commitOrRollback": "8", "fromTransactionCheck": "true",
			"msgId": id, "transactionId": req.ExtFields["transactionId"]}, nil))
		if err != nil || resp.Code != int32(remoting.Success) {
			t.Errorf("commit %s after its check: %v %v", id, err, resp)
		}
		return nil
	})
	body, _ := json.Marshal(map[string]any{"clientID": "clock-tx-producer",
		"producerDataSet": []any{map[string]any{"groupName": group}}, "consumerDataSet": []any{}})
	expectCode(t, "heartbeat", w.call(remoting.HeartBeat, nil, body), remoting.Success)

	batch := func(name string) {
		for i := range 5 {
			id := fmt.Sprintf("%s-half-%d", name, i)
			props := message.PropertyTransactionPrepared + "\x01true\x02" + message.PropertyProducerGroup + "\x01" + group + "\x02" +
				message.PropertyUniqKey + "\x01" + id + "\x02"
			at := time.Now()
			expectCode(t, "send "+id, w.call(remoting.SendMessage, map[string]string{
				"producerGroup": group, "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
				"queueId": "0", "sysFlag": strconv.Itoa(int(message.SysFlagTransactionPrepared)),
				"bornTimestamp": strconv.FormatInt(at.UnixMilli(), 10), "flag": "0", "properties": props,
				"reconsumeTimes": "0", "unitMode": "false", "batch": "false"}, []byte(id)), remoting.Success)
			mu.Lock()
			sentAt[id] = at
			mu.Unlock()
		}
	}
	read, stopReader := readTopic(t, w, topic, &mu)
	defer stopReader()
	// waitFor polls until every id starting with prefix is in m, for at most a minute.
	waitFor := func(m map[string]time.Time, prefix string) {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			mu.Lock()
			missing := false
			for id := range sentAt {
				if _, ok := m[id]; !ok && strings.HasPrefix(id, prefix) {
					missing = true
				}
			}
			mu.Unlock()
			if !missing {
				return
			}
		}
	}
	batch("a")
	clock.jump(time.Hour)
	batch("b")
	waitFor(checked, "a-") // the checks run an hour ahead for a while
	clock.jump(-2 * time.Hour)
	batch("c")
	waitFor(read, "")

	mu.Lock()
	defer mu.Unlock()
	for id, at := range sentAt {
		c, ok := checked[id]
		switch {
		case !ok:
			t.Errorf("%s never checked", id)
		case c.Sub(at) < 2*time.Second-5*time.Millisecond: // born timestamps are whole milliseconds
			t.Errorf("%s checked %v after its send, before transactionTimeOut (2s)", id, c.Sub(at).Round(time.Millisecond))
		}
		if _, ok := read[id]; !ok {
			t.Errorf("%s committed but never read", id)
		}
	}
}

// startBrokerWith starts a broker of cfg with opts (a test logger when opts has none), closed at cleanup.
func startBrokerWith(t *testing.T, cfg broker.Config, opts broker.Options) *broker.Broker {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = cluster.TestLogger(t, 0)
	}
	b, err := broker.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// openTestLogs opens log files (INFO, broker layout) under a temporary folder, closed at cleanup.
func openTestLogs(t *testing.T) (*logging.Logs, string) {
	t.Helper()
	dir := t.TempDir()
	logs, err := logging.Open(logging.Config{LogDir: dir, LogLevel: "INFO", LogFileMaxSize: 1, LogFileMaxIndex: 1},
		logging.BrokerLayout(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	return logs, dir
}

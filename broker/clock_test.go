package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/cluster"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
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
	cfg := cluster.TestBrokerConfig(t, "127.0.0.1:1", "broker-clock")
	b, err := broker.New(cfg, broker.Options{Logger: cluster.TestLogger(t, 0), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	w := newWire(t, b.Addr())
	const topic = "ClockJump"
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)

	type sent struct {
		at    time.Time // before the send (monotonic)
		delay time.Duration
	}
	var mu sync.Mutex
	sends := map[string]sent{}
	send := func(id string, delay time.Duration, props string) {
		t.Helper()
		at := time.Now()
		expectCode(t, "send "+id, w.send(topic, 0, []byte(id), props), remoting.Success)
		mu.Lock()
		sends[id] = sent{at: at, delay: delay}
		mu.Unlock()
	}
	prop := func(k, v string) string { return k + "\x01" + v + "\x02" }
	batch := func(name string) {
		for i := range 5 {
			send(fmt.Sprintf("%s-timer-%d", name, i), 2*time.Second, prop("TIMER_DELAY_MS", "2000"))
			// An absolute time from the sender's clock (the real one): the broker compares it with its steady time.
			due := time.Now().Add(3 * time.Second)
			send(fmt.Sprintf("%s-deliver-%d", name, i), time.Until(due), prop(store.PropertyTimerDeliverMs, strconv.FormatInt(due.UnixMilli(), 10)))
			send(fmt.Sprintf("%s-level-%d", name, i), 5*time.Second, prop(store.PropertyDelayLevel, "2")) // level 2: 5 s
		}
	}

	// The reader long-polls the topic and notes when each message came.
	read := map[string]time.Time{}
	stop := make(chan struct{})
	done := make(chan struct{})
	defer func() { close(stop); <-done }()
	go func() {
		defer close(done)
		var next int64
		for {
			select {
			case <-stop:
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
				m, err := store.DecodeMessage(body[:size], true)
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

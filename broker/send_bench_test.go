package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/remoting"
)

// The send and pull paths of one ASYNC_FLUSH broker over the real wire, as the Go client drives them
// (issue 16): frame decode, header decode, message build, store put, response encode and write. The
// allocations and the CPU time (cpu-us/op, from getrusage: client and broker together, since both run in
// this process) are what to compare before and after a change; ns/op moves with the machine's load.
//
//	go test ./broker -run '^$' -bench 'SendWire|PullWire' -benchmem -count 3

// wireBench is one ASYNC_FLUSH broker with topic BENCH (8 queues) and a raw remoting client.
type wireBench struct {
	cl   *remoting.Client
	addr string
}

func newWireBench(b *testing.B) *wireBench {
	c := cluster.Start(b, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.FlushDiskType = "ASYNC_FLUSH"
	}})
	w := &wireBench{cl: remoting.NewClient(remoting.ClientConfig{DialTimeout: time.Second}, slog.New(slog.DiscardHandler)),
		addr: c.Broker(0).Addr()}
	b.Cleanup(func() { _ = w.cl.Close() })
	resp := w.invoke(b, remoting.NewRequest(remoting.UpdateAndCreateTopic,
		map[string]string{"topic": "BENCH", "readQueueNums": "8", "writeQueueNums": "8", "perm": "6"}, nil))
	if resp.Code != int32(remoting.Success) {
		b.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
	return w
}

func (w *wireBench) invoke(b *testing.B, req *remoting.Command) *remoting.Command {
	resp, err := w.cl.Invoke(context.Background(), w.addr, req)
	if err != nil {
		b.Fatal(err)
	}
	return resp
}

// sendV2 is SEND_MESSAGE_V2 as the official Go client builds it for a 1 KiB message with a UNIQ_KEY.
func sendV2(queueID int, body []byte) *remoting.Command {
	return remoting.NewRequest(remoting.SendMessageV2, map[string]string{
		"a": "PG", "b": "BENCH", "c": "TBW102", "d": "4", "e": strconv.Itoa(queueID), "f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0",
		"i": "UNIQ_KEY\x017F0000010001000000000000000001\x02WAIT\x01true\x02", "j": "0", "k": "false", "l": "0",
		"m": "false", "bname": "broker-a"}, body)
}

// cpuMeter reports the process's CPU time (user + system) per operation as cpu-us/op.
type cpuMeter struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuMeter { return cpuMeter{cpuNow()} }

func (m cpuMeter) report(b *testing.B, ops int) {
	b.ReportMetric(float64((cpuNow()-m.start).Microseconds())/float64(max(ops, 1)), "cpu-us/op")
}

// BenchmarkSendWire: one producer, one send in flight.
func BenchmarkSendWire(b *testing.B) {
	w := newWireBench(b)
	body := bytes.Repeat([]byte("m"), 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	cpu := startCPU()
	i := 0
	for b.Loop() {
		if resp := w.invoke(b, sendV2(i%8, body)); resp.Code != int32(remoting.Success) {
			b.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
		i++
	}
	cpu.report(b, b.N)
}

// BenchmarkSendWireParallel: 16 producers on one connection, as mqbench's 16 sync producers.
func BenchmarkSendWireParallel(b *testing.B) {
	w := newWireBench(b)
	body := bytes.Repeat([]byte("m"), 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.SetParallelism(16)
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			resp, err := w.cl.Invoke(context.Background(), w.addr, sendV2(i%8, body))
			if err != nil || resp.Code != int32(remoting.Success) {
				b.Errorf("send: %v %v", err, resp)
				return
			}
		}
	})
	cpu.report(b, b.N)
}

// BenchmarkPullWire: pulls of 32 messages of 1 KiB from queue 0, which holds 4096; an op is one message
// pulled (so allocs/op and cpu-us/op compare with a send's).
func BenchmarkPullWire(b *testing.B) {
	w := newWireBench(b)
	body := bytes.Repeat([]byte("m"), 1024)
	const stored = 4096
	for range stored {
		if resp := w.invoke(b, sendV2(0, body)); resp.Code != int32(remoting.Success) {
			b.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	pull := func(offset int64) *remoting.Command {
		return remoting.NewRequest(remoting.PullMessage, map[string]string{
			"consumerGroup": "G", "topic": "BENCH", "queueId": "0", "queueOffset": strconv.FormatInt(offset, 10),
			"maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
			"subscription": "*", "subVersion": "0", "expressionType": "TAG"}, nil)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	cpu := startCPU()
	var offset int64
	for got := 0; got < b.N; {
		resp := w.invoke(b, pull(offset))
		if resp.Code != int32(remoting.Success) {
			b.Fatalf("pull at %d: %d %s", offset, resp.Code, resp.Remark)
		}
		next, err := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		got += int(next - offset)
		if offset = next; offset >= stored {
			offset = 0
		}
	}
	b.StopTimer()
	cpu.report(b, b.N)
}

// BenchmarkSendWireTopics: BenchmarkSendWireParallel's load spread round robin over the 8 queues of 1 and
// of 1,000 topics (issue 16 point 2: what a topic costs on the send and dispatch paths), each queue sent
// to once before the timer starts. Compare cpu-us/op between the two; a fixed -benchtime keeps the
// topic creation out of the repeats:
//
//	go test ./broker -run '^$' -bench SendWireTopics -benchtime 200000x -count 3
func BenchmarkSendWireTopics(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run("topics="+strconv.Itoa(n), func(b *testing.B) {
			w := newWireBench(b)
			names := make([]string, n)
			for i := range names {
				names[i] = "Scale_" + strconv.Itoa(i)
				resp := w.invoke(b, remoting.NewRequest(remoting.UpdateAndCreateTopic,
					map[string]string{"topic": names[i], "readQueueNums": "8", "writeQueueNums": "8", "perm": "6"}, nil))
				if resp.Code != int32(remoting.Success) {
					b.Fatalf("create topic %s: %d %s", names[i], resp.Code, resp.Remark)
				}
			}
			body := bytes.Repeat([]byte("m"), 1024)
			send := func(i int) *remoting.Command {
				req := sendV2(i%8, body)
				req.ExtFields["b"] = names[(i/8)%n]
				return req
			}
			for i := range 8 * n {
				if resp := w.invoke(b, send(i)); resp.Code != int32(remoting.Success) {
					b.Fatalf("warm-up send: %d %s", resp.Code, resp.Remark)
				}
			}
			w.waitDispatched(b)
			var next atomic.Int64
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			b.SetParallelism(16)
			b.ResetTimer()
			stopProfile := profileTimed(b, n)
			cpu := startCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := w.cl.Invoke(context.Background(), w.addr, send(int(next.Add(1))))
					if err != nil || resp.Code != int32(remoting.Success) {
						b.Errorf("send: %v %v", err, resp)
						return
					}
				}
			})
			cpu.report(b, b.N)
			stopProfile()
		})
	}
}

// profileTimed starts a CPU profile of the timed sends when SENDWIRE_CPUPROFILE names a file (%d: the
// topic count), as -cpuprofile would profile the topic creation and warm-up too; it returns the stop.
func profileTimed(b *testing.B, topics int) func() {
	name := os.Getenv("SENDWIRE_CPUPROFILE")
	if name == "" {
		return func() {}
	}
	f, err := os.Create(strings.ReplaceAll(name, "%d", strconv.Itoa(topics)))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// waitDispatched waits until dispatch has caught up with the CommitLog (the broker's runtime info: the
// warm-up's queue files created), so that the timed sends do not pay for them.
func (w *wireBench) waitDispatched(b *testing.B) {
	testutil.WaitFor(b, time.Minute, "dispatch to catch up", func() bool {
		var kv struct {
			Table map[string]string `json:"table"`
		}
		if err := json.Unmarshal(w.invoke(b, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil)).Body, &kv); err != nil {
			b.Fatal(err)
		}
		return kv.Table["dispatchBehindBytes"] == "0"
	})
}

package raftlog

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// benchProposers and benchBody: 16 concurrent producers of 1 KiB messages.
const (
	benchProposers = 16
	benchBody      = 1024
)

// storeMsgsPerSec is the last classic-store figure per flush type, for the ratio.
var storeMsgsPerSec sync.Map

// BenchmarkPropose compares, in one process, 1 KiB puts from 16 goroutines on the leader of a
// three-node group (TCP on loopback, every node on its own store) with the same puts on one
// classic store (framed-less, no replication), for SYNC_FLUSH and ASYNC_FLUSH. The raft3 runs
// report msgs/s and the ratio to the store run before them (x_store):
//
//	go test ./raftlog -run '^$' -bench Propose -benchtime 20000x
func BenchmarkPropose(b *testing.B) {
	for _, flush := range []string{store.AsyncFlush, store.SyncFlush} {
		sync := flush == store.SyncFlush
		storeCfg := func(c *store.Config) {
			c.MappedFileSizeCommitLog = 64 << 20
			c.MaxMessageSize = 4 << 20
			c.MappedFileSizeConsumeQueue = 300000 * 20
			c.MaxHashSlotNum = 500000
			c.MaxIndexNum = 2000000
			c.FlushIntervalCommitLog = 500
			c.FlushIntervalConsumeQueue = 1000
		}
		b.Run(flush+"/store", func(b *testing.B) {
			cfg := testStoreConfig(b.TempDir(), sync)
			storeCfg(&cfg)
			s, err := store.Open(cfg, store.Options{Logger: testLogger(b, slog.LevelWarn), StoreHost: testHost})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Start(); err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rate := runPuts(b, func(ctx context.Context, m *message.Message) error {
				_, err := s.PutMessage(ctx, m)
				return err
			})
			storeMsgsPerSec.Store(flush, rate)
		})
		b.Run(flush+"/raft3", func(b *testing.B) {
			c := newCluster(b, clusterOptions{tcp: true, sync: sync, storeTune: storeCfg, tune: func(cfg *Config) {
				d := DefaultConfig()
				d.SelfID, d.Peers, d.Sync = cfg.SelfID, cfg.Peers, cfg.Sync
				*cfg = d
			}})
			ld := c.nodes[c.leader()].n
			rate := runPuts(b, func(ctx context.Context, m *message.Message) error {
				for {
					// A leader change under load (the machine may be busy): at least once.
					_, err := c.put(ctx, []*message.Message{m})
					if !errors.Is(err, ErrLeadershipLost) {
						return err
					}
				}
			})
			ld = c.nodes[c.leader()].n
			if base, ok := storeMsgsPerSec.Load(flush); ok && base.(float64) > 0 {
				b.ReportMetric(rate/base.(float64), "x_store")
			}
			st := ld.Status()
			b.ReportMetric(float64(b.N)/float64(max(st.LastIndex, 1)), "msgs/entry")
		})
	}
}

// runPuts runs b.N puts of 1 KiB messages from benchProposers goroutines over 8 queues and
// reports msgs/s, which it returns.
func runPuts(b *testing.B, put func(context.Context, *message.Message) error) float64 {
	body := strings.Repeat("m", benchBody)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.SetBytes(benchBody)
	b.ReportAllocs()
	b.ResetTimer()
	for g := range benchProposers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				m := testMsg("Bench", int32(g%8), body)
				if err := put(ctx, m); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "msgs/s")
	return rate
}

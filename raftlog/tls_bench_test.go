package raftlog

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/peertls/peertlstest"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// plainMsgsPerSec is the last plain-TCP figure per flush type, for the ratio.
var plainMsgsPerSec sync.Map

// BenchmarkPeerTLS compares, in one process, 1 KiB puts from 16 goroutines on the leader of a
// three-node group over plain TCP and over peer TLS (the transport of tls.go), for ASYNC_FLUSH
// and SYNC_FLUSH, with AppendEntries as append frames (Config.FramedAppends) and as msgpack.
// The tls runs report msgs/s and the ratio to the plain run before them (x_plain):
//
//	go test ./raftlog -run '^$' -bench PeerTLS -benchtime 20000x
func BenchmarkPeerTLS(b *testing.B) {
	ca := peertlstest.NewCA(b, "bench")
	for _, flush := range []string{store.AsyncFlush, store.SyncFlush} {
		for _, wire := range []string{"frames", "msgpack"} {
			for _, mode := range []string{"plain", "tls"} {
				b.Run(flush+"/"+wire+"/"+mode, func(b *testing.B) {
					o := clusterOptions{tcp: true, sync: flush == store.SyncFlush, storeTune: func(c *store.Config) {
						c.MappedFileSizeCommitLog = 64 << 20
						c.MaxMessageSize = 4 << 20
						c.MappedFileSizeConsumeQueue = 300000 * 20
					}, tune: func(cfg *Config) {
						d := DefaultConfig()
						d.SelfID, d.Peers, d.Sync = cfg.SelfID, cfg.Peers, cfg.Sync
						d.FramedAppends = wire == "frames"
						*cfg = d
					}}
					if mode == "tls" {
						o.peerTLS = func(id string) *peertls.Material {
							m, err := peertls.Load(ca.Node("g", id), "g", nil)
							if err != nil {
								b.Fatal(err)
							}
							return m
						}
					}
					c := newCluster(b, o)
					c.leader()
					rate := benchPuts(b, c)
					if mode == "plain" {
						plainMsgsPerSec.Store(flush+wire, rate)
					} else if base, ok := plainMsgsPerSec.Load(flush + wire); ok && base.(float64) > 0 {
						b.ReportMetric(rate/base.(float64), "x_plain")
					}
				})
			}
		}
	}
}

// benchPuts runs b.N puts of 1 KiB from 16 goroutines over 8 queues on whichever node leads and
// reports msgs/s, which it returns.
func benchPuts(b *testing.B, c *cluster) float64 {
	body := strings.Repeat("m", 1024)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				for {
					_, err := c.put(ctx, []*message.Message{testMsg("Bench", int32(g%8), body)})
					if errors.Is(err, ErrLeadershipLost) {
						continue // a leader change under load: at least once
					}
					if err != nil {
						b.Error(err)
						return
					}
					break
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

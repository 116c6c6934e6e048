package raftlog

import (
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// benchBatch is what one StoreLogs call gets in the benchmarks: benchEntries message entries
// of benchRecords records with 512-byte bodies, as a leader hands its batch to the log.
const (
	benchEntries = 64
	benchRecords = 8
)

func benchLogs(rng *rand.Rand, next uint64) ([]*raft.Log, int) {
	logs := make([]*raft.Log, benchEntries)
	bytes := 0
	for i := range logs {
		data := []byte{KindMessages}
		for range benchRecords {
			var err error
			data, err = message.EncodeRecord(data, &message.MessageExt{Message: message.Message{Topic: "Bench", QueueID: int32(rng.IntN(8)),
				Body: randomBytes(rng, 512), BornHost: testHost}, StoreHost: testHost})
			if err != nil {
				panic(err)
			}
		}
		logs[i] = &raft.Log{Index: next + uint64(i), Term: 1, Type: raft.LogCommand, Data: data}
		bytes += len(data)
	}
	return logs, bytes
}

// BenchmarkAppend compares StoreLogs of the same entries on raftlog (the CommitLog, SYNC_FLUSH:
// one fdatasync per call; ASYNC_FLUSH: none) and on raft-boltdb (one fsync per call), the
// LogStore hashicorp/raft users usually take. Report as entries/s and MB/s in one run:
//
//	go test ./raftlog -run '^$' -bench Append -benchtime 2s
func BenchmarkAppend(b *testing.B) {
	run := func(b *testing.B, ls raft.LogStore) {
		rng := rand.New(rand.NewPCG(1, 1))
		var batches [][]*raft.Log
		bytes := 0
		for i := range 16 {
			logs, n := benchLogs(rng, uint64(i*benchEntries+1))
			batches, bytes = append(batches, logs), n
		}
		b.SetBytes(int64(bytes))
		b.ReportAllocs()
		b.ResetTimer()
		next := uint64(1)
		for i := 0; i < b.N; i++ {
			logs := batches[i%len(batches)]
			for j, l := range logs {
				l.Index = next + uint64(j)
			}
			if err := ls.StoreLogs(logs); err != nil {
				b.Fatal(err)
			}
			next += benchEntries
		}
		b.ReportMetric(float64(b.N*benchEntries)/b.Elapsed().Seconds(), "entries/s")
	}
	for _, sync := range []bool{true, false} {
		name := map[bool]string{true: "raftlog-sync", false: "raftlog-async"}[sync]
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			cfg := testStoreConfig(root, sync)
			cfg.MappedFileSizeCommitLog = 256 << 20
			cl, err := store.Open(cfg, store.Options{Logger: testLogger(b, slog.LevelWarn), StoreHost: testHost, Framed: true})
			if err != nil {
				b.Fatal(err)
			}
			s, err := Open(cl, filepath.Join(root, "raft"), Options{Sync: sync})
			if err != nil {
				b.Fatal(err)
			}
			if err := cl.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Close(); _ = cl.Close() }()
			run(b, s)
		})
	}
	b.Run("boltdb", func(b *testing.B) {
		bs, err := raftboltdb.NewBoltStore(filepath.Join(b.TempDir(), "raft.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer bs.Close()
		run(b, bs)
	})
}

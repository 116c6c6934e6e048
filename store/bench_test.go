package store

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// benchFileSize is the CommitLog file size of the benchmarks (RocketMQ's default), also the
// size at which BenchmarkRawWrite rolls to a new file.
const benchFileSize = 1 << 30

var benchBodySizes = []struct {
	name string
	size int
}{{"128B", 128}, {"1KiB", 1024}}

func benchMessage(bodySize int) *Message {
	return &Message{
		Topic:         "BenchTopic",
		Body:          make([]byte, bodySize),
		Properties:    EncodeProperties(map[string]string{PropertyTags: "TagA", PropertyUniqKey: "0A0000050000000000000000000000AA"}),
		BornTimestamp: 1700000000000,
		BornHost:      netip.MustParseAddrPort("10.0.0.9:50000"),
	}
}

func benchRecordSize(b *testing.B, bodySize int) int {
	n, err := RecordSize(benchMessage(bodySize), testStoreHost)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkRawWrite is the disk baseline: the bytes of the same records written with one
// write(2) each to sequential files of the CommitLog's size, no fsync (as ASYNC_FLUSH).
func BenchmarkRawWrite(b *testing.B) {
	for _, bs := range benchBodySizes {
		b.Run(bs.name, func(b *testing.B) {
			rec, err := EncodeRecord(nil, &MessageExt{Message: *benchMessage(bs.size), StoreHost: testStoreHost})
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			var f *os.File
			var written int64
			roll := func() {
				if f != nil {
					f.Close()
				}
				f, err = os.Create(filepath.Join(dir, offsetFileName(written)))
				if err != nil {
					b.Fatal(err)
				}
			}
			roll()
			defer func() { f.Close() }()
			b.SetBytes(int64(len(rec)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if written%benchFileSize+int64(len(rec)) > benchFileSize {
					written += benchFileSize - written%benchFileSize
					roll()
				}
				if _, err := f.Write(rec); err != nil {
					b.Fatal(err)
				}
				written += int64(len(rec))
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func benchStore(b *testing.B, flushDiskType string, writeWithoutMmap bool) *Store {
	cfg := DefaultConfig()
	cfg.WriteWithoutMmap = writeWithoutMmap
	cfg.StorePathRootDir = b.TempDir()
	cfg.FlushDiskType = flushDiskType
	cfg.MappedFileSizeCommitLog = benchFileSize
	s, err := Open(cfg, Options{StoreHost: testStoreHost})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkPutMessage measures PutMessage for 128 B and 1 KiB bodies, one and 16 writers,
// ASYNC_FLUSH and SYNC_FLUSH. Bytes are record bytes, as in BenchmarkRawWrite.
func BenchmarkPutMessage(b *testing.B) {
	for _, bs := range benchBodySizes {
		for _, writers := range []int{1, 16} {
			for _, flush := range []string{AsyncFlush, SyncFlush} {
				b.Run(fmt.Sprintf("%s/writers=%d/%s", bs.name, writers, flush), func(b *testing.B) {
					benchPut(b, benchStore(b, flush, false), bs.size, writers)
				})
			}
		}
	}
}

// BenchmarkPutMessageWriteWithoutMmap is the SYNC_FLUSH part of BenchmarkPutMessage with
// writeWithoutMmap (records written with pwrite).
func BenchmarkPutMessageWriteWithoutMmap(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("1KiB/writers=%d/%s", writers, SyncFlush), func(b *testing.B) {
			benchPut(b, benchStore(b, SyncFlush, true), 1024, writers)
		})
	}
}

func benchPut(b *testing.B, s *Store, bodySize, writers int) {
	b.SetBytes(int64(benchRecordSize(b, bodySize)))
	b.ReportAllocs()
	ctx := context.Background()
	put := func(m *Message) {
		res, err := s.PutMessage(ctx, m)
		if err != nil || res.Status != PutOK {
			b.Errorf("put: %v %v", res.Status, err)
		}
	}
	b.ResetTimer()
	if writers == 1 {
		m := benchMessage(bodySize)
		for i := 0; i < b.N; i++ {
			put(m)
		}
	} else {
		// RunParallel starts parallelism x GOMAXPROCS goroutines.
		b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			m := benchMessage(bodySize)
			for pb.Next() {
				put(m)
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkSyncFlushMode compares msync of the dirty range with fdatasync of the file for
// one SYNC_FLUSH writer of 1 KiB messages.
func BenchmarkSyncFlushMode(b *testing.B) {
	for _, mode := range []struct {
		name string
		mode flushMode
	}{{"msync", flushMsync}, {"fdatasync", flushFdatasync}} {
		b.Run(mode.name, func(b *testing.B) {
			s := benchStore(b, SyncFlush, false)
			s.commitLog.q.flushMode = mode.mode
			m := benchMessage(1024)
			b.SetBytes(int64(benchRecordSize(b, 1024)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.PutMessage(context.Background(), m); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func BenchmarkEncodeDecode(b *testing.B) {
	m := &MessageExt{Message: *benchMessage(1024), StoreHost: testStoreHost}
	buf, _ := EncodeRecord(nil, m)
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf, _ = EncodeRecord(buf[:0], m)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := DecodeMessage(buf, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGetMessage pulls 32 messages at a time from a queue of 1 KiB messages.
func BenchmarkGetMessage(b *testing.B) {
	s := benchStore(b, AsyncFlush, false)
	const n = 4096
	for i := 0; i < n; i++ {
		if _, err := s.PutMessage(context.Background(), benchMessage(1024)); err != nil {
			b.Fatal(err)
		}
	}
	for s.reput.from.Load() < s.MaxPhyOffset() {
		time.Sleep(time.Millisecond)
	}
	b.SetBytes(int64(32 * benchRecordSize(b, 1024)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := s.GetMessage("g", "BenchTopic", 0, int64(i*32)%n, 32, 1<<20, nil)
		if err != nil || r.Status != Found || len(r.Records) != 32 {
			b.Fatalf("get: %v %v %d", err, r.Status, len(r.Records))
		}
		r.Release()
	}
}

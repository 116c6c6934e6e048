package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

func testLogger(t testing.TB, level slog.Level) *slog.Logger { return testutil.Logger(t, level) }

var testHost = netip.MustParseAddrPort("10.0.0.7:10911")

// testStoreConfig is a framed store with tiny CommitLog files, so entries cross files often.
func testStoreConfig(root string, sync bool) store.Config {
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = root
	cfg.MappedFileSizeCommitLog = 32 << 10
	cfg.MaxMessageSize = 4 << 10
	cfg.MappedFileSizeConsumeQueue = 64 * 20
	cfg.MaxHashSlotNum = 64
	cfg.MaxIndexNum = 256
	cfg.FlushIntervalCommitLog = 10
	cfg.FlushIntervalConsumeQueue = 10
	cfg.CleanResourceInterval = 3600 * 1000
	cfg.SyncFlushTimeout = 60000
	if sync {
		cfg.FlushDiskType = store.SyncFlush
	}
	return cfg
}

// testLog is a raftlog Store over its own framed store.
type testLog struct {
	root string
	sync bool
	cl   *store.Store
	s    *Store
}

func openTestLog(t testing.TB, root string, sync bool) *testLog {
	t.Helper()
	cfg := testStoreConfig(root, sync)
	cl, err := store.Open(cfg, store.Options{Logger: testLogger(t, slog.LevelWarn), StoreHost: testHost, Framed: true})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	s, err := Open(cl, filepath.Join(root, "raft"), Options{Logger: testLogger(t, slog.LevelWarn), Sync: sync,
		SlotsPerIndexFile: 64, CheckCRCOnRecover: true})
	if err != nil {
		_ = cl.Close()
		t.Fatalf("raftlog.Open: %v", err)
	}
	if err := cl.Start(); err != nil {
		t.Fatalf("store.Start: %v", err)
	}
	l := &testLog{root: root, sync: sync, cl: cl, s: s}
	t.Cleanup(l.close)
	return l
}

func (l *testLog) close() {
	_ = l.s.Close()
	_ = l.cl.Close()
}

// crashCopy copies the folder of a running log as a killed process leaves it (every byte in
// the files, abort file included) and opens the copy.
func (l *testLog) crashCopy(t testing.TB) *testLog {
	t.Helper()
	to := t.TempDir()
	copyTree(t, l.root, to)
	return openTestLog(t, to, l.sync)
}

func copyTree(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil // deleted while the copy ran (a file made ahead, discarded): as if before the crash
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if info.Name() == "lock" {
			return nil
		}
		in, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// entryGen makes random entries of every type and kind.
type entryGen struct {
	rng  *rand.Rand
	term uint64
}

func (g *entryGen) next(index uint64) *raft.Log {
	if g.rng.IntN(20) == 0 {
		g.term++
	}
	l := &raft.Log{Index: index, Term: g.term}
	if g.rng.IntN(3) == 0 {
		l.AppendedAt = time.Unix(1700000000, int64(g.rng.IntN(1e9)))
	}
	if g.rng.IntN(6) == 0 {
		l.Extensions = randomBytes(g.rng, 1+g.rng.IntN(40))
	}
	switch g.rng.IntN(8) {
	case 0:
		l.Type = raft.LogNoop
	case 1:
		l.Type = raft.LogBarrier
	case 2:
		l.Type = raft.LogConfiguration
		l.Data = raft.EncodeConfiguration(raft.Configuration{Servers: []raft.Server{
			{Suffrage: raft.Voter, ID: "n0", Address: "127.0.0.1:40911"},
			{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:40912"},
		}})
	case 3:
		l.Data = append([]byte{KindMeta}, randomBytes(g.rng, g.rng.IntN(300))...)
	case 4:
		// Raw command data, whatever its first byte says (but a kind's).
		l.Data = randomBytes(g.rng, g.rng.IntN(200))
		if len(l.Data) > 0 && (l.Data[0] == KindMessages || l.Data[0] == KindMeta) {
			l.Data[0] = 0xEE
		}
	default:
		l.Data = messageData(g.rng, 1+g.rng.IntN(4))
	}
	return l
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// messageData is a message entry's Data: the kind byte and n stored-message records.
func messageData(rng *rand.Rand, n int) []byte {
	data := []byte{KindMessages}
	for range n {
		m := &message.MessageExt{
			Message: message.Message{
				Topic:         fmt.Sprintf("Topic%d", rng.IntN(3)),
				QueueID:       int32(rng.IntN(4)),
				Body:          randomBytes(rng, rng.IntN(1500)),
				Properties:    message.EncodeProperties(map[string]string{message.PropertyKeys: fmt.Sprintf("k%d", rng.IntN(1000))}),
				BornTimestamp: 1700000000000,
				BornHost:      netip.MustParseAddrPort("192.168.0.9:4000"),
			},
			StoreHost:      testHost,
			StoreTimestamp: 1700000000123,
			QueueOffset:    int64(rng.IntN(100)), // the store zeroes it
		}
		var err error
		if data, err = message.EncodeRecord(data, m); err != nil {
			panic(err)
		}
	}
	return data
}

// normalized is l's data with the fields the store assigns zeroed in message records
// (physical and queue offsets), so a stored entry compares with what was handed in.
func normalized(l *raft.Log) []byte {
	if len(l.Data) == 0 {
		return nil
	}
	d := append([]byte(nil), l.Data...)
	if l.Type != raft.LogCommand || d[0] != KindMessages {
		return d
	}
	for off := 1; off+36 <= len(d); {
		n := int(binary.BigEndian.Uint32(d[off:]))
		clear(d[off+20 : off+36])
		if n <= 0 {
			break
		}
		off += n
	}
	return d
}

// sameEntry reports how two entries differ ("" when they do not).
func sameEntry(got, want *raft.Log) string {
	switch {
	case got.Index != want.Index || got.Term != want.Term || got.Type != want.Type:
		return fmt.Sprintf("index/term/type %d/%d/%v, want %d/%d/%v", got.Index, got.Term, got.Type, want.Index, want.Term, want.Type)
	case string(got.Extensions) != string(want.Extensions):
		return fmt.Sprintf("extensions %x, want %x", got.Extensions, want.Extensions)
	case !got.AppendedAt.Equal(want.AppendedAt):
		return fmt.Sprintf("appendedAt %v, want %v", got.AppendedAt, want.AppendedAt)
	case string(normalized(got)) != string(normalized(want)):
		return fmt.Sprintf("data of %d bytes differs from the %d bytes stored", len(got.Data), len(want.Data))
	}
	return ""
}

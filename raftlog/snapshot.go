package raftlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// Snapshot stream (doc.go draws it). Wire format: never change.
const (
	snapshotMagic      = uint32(0x524C534E) // "RLSN"
	snapshotVersion    = uint32(1)
	snapshotHeaderSize = 16
	filesHeaderSize    = 16
	// copyChunk is how much of the CommitLog a snapshot send or restore moves at a time.
	copyChunk = 1 << 20
)

// encodeSnapshotHeader is what FSM.Persist writes: magic, version, metadata length and CRC,
// metadata.
func encodeSnapshotHeader(meta []byte) []byte {
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(meta))
	be := binary.BigEndian
	be.PutUint32(b[0:], snapshotMagic)
	be.PutUint32(b[4:], snapshotVersion)
	be.PutUint32(b[8:], uint32(len(meta)))
	be.PutUint32(b[12:], crc32.Checksum(meta, castagnoli))
	return append(b, meta...)
}

// readSnapshotHeader reads what encodeSnapshotHeader wrote and returns the metadata.
func readSnapshotHeader(r io.Reader) ([]byte, error) {
	var h [snapshotHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("raftlog: snapshot header: %w", err)
	}
	be := binary.BigEndian
	if be.Uint32(h[0:]) != snapshotMagic || be.Uint32(h[4:]) != snapshotVersion {
		return nil, fmt.Errorf("raftlog: snapshot: magic 0x%08X version %d", be.Uint32(h[0:]), be.Uint32(h[4:]))
	}
	meta := make([]byte, be.Uint32(h[8:]))
	if _, err := io.ReadFull(r, meta); err != nil {
		return nil, fmt.Errorf("raftlog: snapshot metadata: %w", err)
	}
	if crc32.Checksum(meta, castagnoli) != be.Uint32(h[12:]) {
		return nil, errors.New("raftlog: snapshot metadata CRC mismatch")
	}
	return meta, nil
}

// SnapshotStore wraps the store that keeps the (small) snapshots the FSM writes: when Raft
// opens one to send it to a follower that is too far behind, the stream gets the CommitLog
// files that follow the metadata, from the first file still on disk to the end of the
// snapshot's last entry; the follower's FSM.Restore writes them into its own CommitLog. A
// snapshot received that way (stored with its files) is opened as it was stored. While a send
// is under way the retention keeps the files it reads.
type SnapshotStore struct {
	raft.SnapshotStore
	log *Store
}

// NewSnapshotStore wraps inner (raft.FileSnapshotStore) for log.
func NewSnapshotStore(inner raft.SnapshotStore, log *Store) *SnapshotStore {
	return &SnapshotStore{SnapshotStore: inner, log: log}
}

// Open returns the snapshot id with the CommitLog files it needs (see SnapshotStore).
func (ss *SnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := ss.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReader(rc)
	metaBytes, err := readSnapshotHeader(br)
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	if _, err := br.Peek(1); err == nil {
		// Received with its files: as stored.
		stored := io.MultiReader(bytes.NewReader(encodeSnapshotHeader(metaBytes)), br)
		return meta, newReadCloser(stored, rc.Close), nil
	}
	rc.Close()
	p, ok := ss.log.Position(meta.Index)
	if !ok {
		return nil, nil, fmt.Errorf("raftlog: snapshot %s: its last entry %d is not in the log any more", id, meta.Index)
	}
	from := ss.log.cl.MinPhyOffset()
	unpin := ss.log.pinFiles(from)
	if ss.log.cl.MinPhyOffset() != from {
		unpin()
		return nil, nil, fmt.Errorf("raftlog: snapshot %s: commitlog files deleted while opening it", id)
	}
	head := encodeSnapshotHeader(metaBytes)
	var fh [filesHeaderSize]byte
	binary.BigEndian.PutUint64(fh[0:], uint64(from))
	binary.BigEndian.PutUint64(fh[8:], uint64(p.End))
	out := *meta
	out.Size = int64(len(head)+filesHeaderSize) + p.End - from
	r := io.MultiReader(bytes.NewReader(head), bytes.NewReader(fh[:]), &commitLogReader{s: ss.log, off: from, end: p.End})
	return &out, newReadCloser(r, func() error { unpin(); return nil }), nil
}

// readCloser is a reader with its close func (called once).
type readCloser struct {
	io.Reader
	close func() error
	once  *sync.Once
}

func newReadCloser(r io.Reader, close func() error) readCloser {
	return readCloser{Reader: r, close: close, once: new(sync.Once)}
}

func (r readCloser) Close() error {
	var err error
	r.once.Do(func() { err = r.close() })
	return err
}

// commitLogReader reads the CommitLog [off, end) a file piece at a time.
type commitLogReader struct {
	s        *Store
	off, end int64
}

func (r *commitLogReader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.end-r.off, copyChunk))
	data, release, err := r.s.cl.ReadCommitLog(r.off, n)
	if err != nil {
		return 0, fmt.Errorf("raftlog: snapshot read of the commitlog at %d: %w", r.off, err)
	}
	copied := copy(p, data)
	release()
	if copied == 0 {
		return 0, fmt.Errorf("raftlog: snapshot read of the commitlog at %d: nothing readable before %d", r.off, r.end)
	}
	r.off += int64(copied)
	return copied, nil
}

// restoreFiles replaces the log with the CommitLog files of a snapshot stream (after its
// header): the store is emptied at the first file, the bytes appended, the frames scanned
// into the index, and the message entries dispatched with the queue offsets they carry. It
// returns the last entry, the snapshot's. Runs on the FSM goroutine while Raft waits.
func (s *Store) restoreFiles(r io.Reader, fsm *FSM) (uint64, error) {
	var fh [filesHeaderSize]byte
	if _, err := io.ReadFull(r, fh[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, errNoFiles
		}
		return 0, fmt.Errorf("raftlog: snapshot files header: %w", err)
	}
	from, to := int64(binary.BigEndian.Uint64(fh[0:])), int64(binary.BigEndian.Uint64(fh[8:]))
	if from < 0 || to < from || from%s.fileSize != 0 {
		return 0, fmt.Errorf("raftlog: snapshot files [%d, %d) do not start at a file boundary", from, to)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cl.ResetCommitLog(from); err != nil {
		return 0, err
	}
	if err := s.idx.clearFrom(0); err != nil {
		return 0, err
	}
	s.mu.state = logState{end: from}
	s.syncedEnd.Store(min(s.syncedEnd.Load(), from))
	s.cutDurableLocked(0)
	s.mu.minPhy = from
	buf := make([]byte, copyChunk)
	for off := from; off < to; {
		n := min(int64(len(buf)), to-off, s.fileSize-off%s.fileSize)
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return 0, fmt.Errorf("raftlog: snapshot files at %d: %w", off, err)
		}
		if err := s.cl.AppendCommitLog(off, buf[:n]); err != nil {
			return 0, err
		}
		off += n
	}
	if err := s.cl.SyncCommitLog(); err != nil {
		return 0, err
	}
	sc := scanner{s: s, checkCRC: true, fileEnd: to}
	if err := sc.scan(from); err != nil {
		return 0, err
	}
	if sc.reason != "" || sc.end != to || sc.last == 0 {
		return 0, fmt.Errorf("raftlog: snapshot files [%d, %d) hold entries up to %d only (%s)", from, to, sc.end, sc.reason)
	}
	s.mu.state = logState{first: sc.first, last: sc.last, lastTerm: sc.lastTerm, end: to}
	s.syncedEnd.Store(to)
	s.markDurableLocked(sc.last)
	if err := s.idx.sync(); err != nil {
		return 0, err
	}
	if err := s.dispatchRestored(sc.first, sc.last); err != nil {
		return 0, err
	}
	s.log.Info("installed the commitlog files of a snapshot", "from", from, "to", to, "first", sc.first, "last", sc.last)
	return sc.last, s.cl.Flush()
}

// dispatchRestored dispatches the copied entries first..last as they are. wmu and mu held.
func (s *Store) dispatchRestored(first, last uint64) error {
	for i := first; i <= last; i++ {
		sl, ok := s.idx.get(i)
		if !ok {
			return fmt.Errorf("%w: restored entry %d has no index slot", ErrCorruptFrame, i)
		}
		end := sl.pos + sl.size
		if sl.kind != KindMessages || raft.LogType(sl.typ) != raft.LogCommand {
			s.cl.AdvanceDispatch(end)
			continue
		}
		h, err := s.headerAt(sl.pos)
		if err != nil {
			return err
		}
		if _, err := s.cl.DispatchMessages(sl.pos+h.dataOffset(), end, end, false, nil); err != nil {
			return err
		}
	}
	return nil
}

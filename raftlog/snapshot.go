package raftlog

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/rocketraft/rocketraft/store"
)

// Snapshot stream (doc.go draws it). Wire format: never change; version 2 added the queue
// offset table, and version 1 (no table) is still read.
const (
	snapshotMagic      = uint32(0x524C534E) // "RLSN"
	snapshotVersion    = uint32(2)
	snapshotHeaderSize = 16
	filesHeaderSize    = 16
	// copyChunk is how much of the CommitLog a snapshot send or restore moves at a time.
	copyChunk = 1 << 20
	// maxQueueTable bounds the queue offset table a snapshot header may declare (a corrupt
	// length must not allocate gigabytes): 64 MiB, over a million queues.
	maxQueueTable = 64 << 20
)

// snapshotHead is what a snapshot holds before the CommitLog files: the broker's metadata and
// the next queue offset of every queue as of the snapshot's last entry.
type snapshotHead struct {
	version uint32
	meta    []byte
	queues  []store.QueueNext
}

// encodeSnapshotHeader is what FSM.Persist writes (version 2): magic, version, metadata length
// and CRC, metadata, queue table length and CRC, queue table.
func encodeSnapshotHeader(h snapshotHead) []byte {
	table := encodeQueueTable(h.queues)
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(h.meta)+8+len(table))
	be := binary.BigEndian
	be.PutUint32(b[0:], snapshotMagic)
	be.PutUint32(b[4:], snapshotVersion)
	be.PutUint32(b[8:], uint32(len(h.meta)))
	be.PutUint32(b[12:], crc32.Checksum(h.meta, castagnoli))
	b = append(b, h.meta...)
	b = be.AppendUint32(b, uint32(len(table)))
	b = be.AppendUint32(b, crc32.Checksum(table, castagnoli))
	return append(b, table...)
}

// encodeQueueTable lays out the table: count, then per queue topic length (2), topic, queue id
// (4), next queue offset (8).
func encodeQueueTable(queues []store.QueueNext) []byte {
	be := binary.BigEndian
	b := be.AppendUint32(nil, uint32(len(queues)))
	for _, q := range queues {
		b = be.AppendUint16(b, uint16(len(q.Topic)))
		b = append(b, q.Topic...)
		b = be.AppendUint32(b, uint32(q.QueueID))
		b = be.AppendUint64(b, uint64(q.Next))
	}
	return b
}

func decodeQueueTable(b []byte) ([]store.QueueNext, error) {
	be := binary.BigEndian
	bad := func(what string) error { return fmt.Errorf("raftlog: snapshot queue table: %s", what) }
	if len(b) < 4 {
		return nil, bad("no count")
	}
	n := be.Uint32(b)
	b = b[4:]
	if uint64(n)*14 > uint64(len(b)) {
		return nil, bad(fmt.Sprintf("%d queues in %d bytes", n, len(b)))
	}
	out := make([]store.QueueNext, 0, n)
	for range n {
		if len(b) < 2 || len(b) < 2+int(be.Uint16(b))+12 {
			return nil, bad(fmt.Sprintf("entry %d cut short", len(out)))
		}
		l := int(be.Uint16(b))
		q := store.QueueNext{Topic: string(b[2 : 2+l]), QueueID: int32(be.Uint32(b[2+l:])), Next: int64(be.Uint64(b[6+l:]))}
		if q.Topic == "" || q.QueueID < 0 || q.Next < 0 {
			return nil, bad(fmt.Sprintf("entry %d: topic %q queue %d next %d", len(out), q.Topic, q.QueueID, q.Next))
		}
		out = append(out, q)
		b = b[14+l:]
	}
	if len(b) != 0 {
		return nil, bad(fmt.Sprintf("%d bytes after %d queues", len(b), n))
	}
	return out, nil
}

// readSnapshotHeader reads what encodeSnapshotHeader wrote (or version 1: no queue table).
func readSnapshotHeader(r io.Reader) (snapshotHead, error) {
	var h [snapshotHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return snapshotHead{}, fmt.Errorf("raftlog: snapshot header: %w", err)
	}
	be := binary.BigEndian
	version := be.Uint32(h[4:])
	if be.Uint32(h[0:]) != snapshotMagic || version < 1 || version > snapshotVersion {
		return snapshotHead{}, fmt.Errorf("raftlog: snapshot: magic 0x%08X version %d (this node reads 0x%08X versions 1 to %d)",
			be.Uint32(h[0:]), version, snapshotMagic, snapshotVersion)
	}
	head := snapshotHead{version: version}
	var err error
	if head.meta, err = readChecked(r, be.Uint32(h[8:]), be.Uint32(h[12:]), "metadata"); err != nil || version == 1 {
		return head, err
	}
	var th [8]byte
	if _, err := io.ReadFull(r, th[:]); err != nil {
		return head, fmt.Errorf("raftlog: snapshot queue table header: %w", err)
	}
	if n := be.Uint32(th[0:]); n > maxQueueTable {
		return head, fmt.Errorf("raftlog: snapshot queue table of %d bytes, over the limit %d", n, maxQueueTable)
	}
	table, err := readChecked(r, be.Uint32(th[0:]), be.Uint32(th[4:]), "queue table")
	if err != nil {
		return head, err
	}
	head.queues, err = decodeQueueTable(table)
	return head, err
}

// readChecked reads n bytes and checks their CRC32C. The buffer grows with what the stream
// holds, so a length that lies costs no more memory than the stream itself.
func readChecked(r io.Reader, n, crc uint32, what string) ([]byte, error) {
	var buf bytes.Buffer
	if got, err := buf.ReadFrom(io.LimitReader(r, int64(n))); err != nil || got < int64(n) {
		return nil, fmt.Errorf("raftlog: snapshot %s: %d of %d bytes: %w", what, got, n, cmp.Or(err, io.ErrUnexpectedEOF))
	}
	b := buf.Bytes()
	if crc32.Checksum(b, castagnoli) != crc {
		return nil, fmt.Errorf("raftlog: snapshot %s CRC mismatch", what)
	}
	return b, nil
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

// NewSnapshotStore wraps inner (raft.FileSnapshotStore) for log, and tells log the last entry
// of the newest snapshot inner holds.
func NewSnapshotStore(inner raft.SnapshotStore, log *Store) *SnapshotStore {
	if list, err := inner.List(); err == nil && len(list) > 0 {
		log.noteSnapshot(list[0].Index)
	}
	return &SnapshotStore{SnapshotStore: inner, log: log}
}

// Create is inner's; once the snapshot is stored whole, the log store learns its last entry,
// whose CommitLog file the retention then keeps (Store.retentionAllows): Open needs the entry.
func (ss *SnapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := ss.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &notingSink{SnapshotSink: sink, stored: func() { ss.log.noteSnapshot(index) }}, nil
}

// notingSink calls stored once its snapshot is closed whole.
type notingSink struct {
	raft.SnapshotSink
	stored func()
}

func (s *notingSink) Close() error {
	err := s.SnapshotSink.Close()
	if err == nil {
		s.stored()
	}
	return err
}

// Open returns the snapshot id with the CommitLog files it needs (see SnapshotStore).
func (ss *SnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := ss.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReader(rc)
	head, err := readSnapshotHeader(br)
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	if _, err := br.Peek(1); err == nil {
		// Received with its files: as stored.
		stored := io.MultiReader(bytes.NewReader(encodeSnapshotHeader(head)), br)
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
	headBytes := encodeSnapshotHeader(head)
	var fh [filesHeaderSize]byte
	binary.BigEndian.PutUint64(fh[0:], uint64(from))
	binary.BigEndian.PutUint64(fh[8:], uint64(p.End))
	out := *meta
	out.Size = int64(len(headBytes)+filesHeaderSize) + p.End - from
	r := io.MultiReader(bytes.NewReader(headBytes), bytes.NewReader(fh[:]), &commitLogReader{s: ss.log, off: from, end: p.End})
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
// into the index, and the message entries dispatched with the queue offsets they carry; then
// the queues of the snapshot's table are seeded (store.SeedQueueOffsets), so a queue whose
// records all lay in files that expired before these goes on where the leader's went on. It
// returns the last entry, the snapshot's. Runs on the FSM goroutine while Raft waits.
func (s *Store) restoreFiles(r io.Reader, queues []store.QueueNext) (uint64, error) {
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
	s.pred.stale.Store(true)
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
	if err := s.cl.SeedQueueOffsets(queues); err != nil {
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

package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// ConsumeQueue unit layout. Wire format: never change.
const (
	// cqUnitSize is the size of one unit: physical offset (8), size (4), tags code (8).
	cqUnitSize = 20
	// cqBlankSize marks a filler unit (physical offset 0, tags code 0) written where a
	// queue offset has no record, as RocketMQ's fillPreBlank does.
	cqBlankSize = math.MaxInt32
)

// cqUnit is one decoded ConsumeQueue unit.
type cqUnit struct {
	phy  int64
	size int32
	tags int64
}

func readUnit(b []byte) cqUnit {
	return cqUnit{
		phy:  int64(binary.BigEndian.Uint64(b)),
		size: int32(binary.BigEndian.Uint32(b[8:])),
		tags: int64(binary.BigEndian.Uint64(b[12:])),
	}
}

func putUnit(b []byte, u cqUnit) {
	binary.BigEndian.PutUint64(b, uint64(u.phy))
	binary.BigEndian.PutUint32(b[8:], uint32(u.size))
	binary.BigEndian.PutUint64(b[12:], uint64(u.tags))
}

// valid is RocketMQ's recovery test of a unit; fillers are valid.
func (u cqUnit) valid() bool { return u.phy >= 0 && u.size > 0 }

// blank reports a filler unit, which points at no record.
func (u cqUnit) blank() bool { return u.size == cqBlankSize && u.phy == 0 }

// consumeQueue is the index of one topic/queue: unit n describes the record with queue
// offset n. Only the dispatch goroutine (or recovery) appends; readers hold the file they
// read. mu serialises appends, truncation and destruction.
type consumeQueue struct {
	topic   string
	queueID int32
	q       *mappedFileQueue
	log     *slog.Logger

	mu        sync.Mutex
	destroyed bool

	// maxPhysicOffset is the end (offset + size) of the last record indexed, -1 for none.
	maxPhysicOffset atomic.Int64
	// minLogicOffset is the byte position of the first unit that still points at the
	// CommitLog.
	minLogicOffset atomic.Int64
	// damaged is set by load/recover when units were lost (resized file, gap, garbage after
	// the end); the store then re-dispatches from this queue's end.
	damaged bool
}

func newConsumeQueue(root, topic string, queueID int32, fileSize int64, observer SyncObserver, ops FileOps, log *slog.Logger) *consumeQueue {
	dir := filepath.Join(root, topic, strconv.Itoa(int(queueID)))
	cq := &consumeQueue{topic: topic, queueID: queueID, log: log,
		q: newMappedFileQueue(dir, fileSize, preallocateFiles, log)}
	cq.q.observer = observer
	cq.q.ops = ops
	cq.maxPhysicOffset.Store(-1)
	return cq
}

// load maps the existing files, repairing sizes and gaps (the data is rebuilt from the
// CommitLog), and finds the end of the valid units.
func (cq *consumeQueue) load() error {
	repaired, err := cq.q.load(loadOptions{repairAll: true})
	if err != nil {
		return err
	}
	cq.damaged = len(repaired) > 0
	return cq.recover()
}

// recover scans the last three files for the first invalid unit and truncates there.
func (cq *consumeQueue) recover() error {
	files := cq.q.snapshot()
	if len(files) == 0 {
		return nil
	}
	start := max(len(files)-3, 0)
	end := files[start].from
	lastPhy := int64(-1)
scan:
	for _, f := range files[start:] {
		for pos := int64(0); pos+cqUnitSize <= f.size; pos += cqUnitSize {
			u := readUnit(f.data[pos:])
			if !u.valid() {
				if !allZero(f.data[pos:min(pos+2*cqUnitSize, f.size)]) {
					cq.damaged = true
					cq.log.Warn("consume queue has an invalid unit before more data, truncating and rebuilding",
						"file", f.path, "pos", pos)
				}
				break scan
			}
			end = f.from + pos + cqUnitSize
			if !u.blank() {
				lastPhy = u.phy + int64(u.size)
			}
		}
	}
	if err := cq.q.truncate(end); err != nil {
		return err
	}
	cq.q.flushedWhere.Store(end)
	cq.q.committedWhere.Store(end)
	if lastPhy < 0 {
		lastPhy = cq.lastPhysicEnd()
	}
	cq.maxPhysicOffset.Store(lastPhy)
	if first := cq.q.first(); first != nil && cq.minLogicOffset.Load() < first.from {
		cq.minLogicOffset.Store(first.from)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// lastPhysicEnd scans back from the end for the last non-filler unit.
func (cq *consumeQueue) lastPhysicEnd() int64 {
	files := cq.q.snapshot()
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		for pos := f.readable() - cqUnitSize; pos >= 0; pos -= cqUnitSize {
			if u := readUnit(f.data[pos:]); !u.blank() {
				return u.phy + int64(u.size)
			}
		}
	}
	return -1
}

// maxOffset is the next queue offset to be written (the number of units).
func (cq *consumeQueue) maxOffset() int64 { return cq.q.maxOffset() / cqUnitSize }

// minOffset is the first queue offset that still points at the CommitLog.
func (cq *consumeQueue) minOffset() int64 {
	return max(cq.minLogicOffset.Load(), max(cq.q.minOffset(), 0)) / cqUnitSize
}

// put appends the unit for the record (phy, size, tags) with queue offset qo and reports
// whether it did. A unit already present is skipped (dispatch is idempotent); a gap is
// filled with filler units.
func (cq *consumeQueue) put(phy int64, size int32, tags int64, qo int64) (bool, error) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.destroyed || phy+int64(size) <= cq.maxPhysicOffset.Load() {
		return false, nil
	}
	want := qo * cqUnitSize
	if last := cq.q.last(); last == nil {
		if err := cq.startLocked(want); err != nil {
			return false, err
		}
	} else if cur := cq.q.maxOffset(); want < cur {
		return false, nil
	} else if want > cur {
		cq.log.Warn("consume queue gap, filling", "topic", cq.topic, "queueId", cq.queueID,
			"expectedOffset", qo, "currentOffset", cur/cqUnitSize)
	}
	if err := cq.fillLocked(want); err != nil {
		return false, err
	}
	var unit [cqUnitSize]byte
	putUnit(unit[:], cqUnit{phy: phy, size: size, tags: tags})
	f, err := cq.q.lastOrCreate(0)
	if err != nil {
		return false, err
	}
	f.appendRaw(unit[:])
	cq.maxPhysicOffset.Store(phy + int64(size))
	return true, nil
}

// fillLocked appends filler units up to the byte position want. mu held.
func (cq *consumeQueue) fillLocked(want int64) error {
	var unit [cqUnitSize]byte
	putUnit(unit[:], cqUnit{phy: 0, size: cqBlankSize})
	for cq.q.maxOffset() < want {
		f, err := cq.q.lastOrCreate(0)
		if err != nil {
			return err
		}
		f.appendRaw(unit[:])
	}
	return nil
}

// seed makes the queue's next offset at least next: a queue that ends below it is filled
// with filler units up to it (an empty one gets its first file where next lies, filled from
// the file's start, as put does for a first unit), so the queue starts there, as a queue
// whose records all expired does. It reports whether it wrote.
func (cq *consumeQueue) seed(next int64) (bool, error) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	want := next * cqUnitSize
	if cq.destroyed || want <= cq.q.maxOffset() {
		return false, nil
	}
	if cq.q.last() == nil {
		if err := cq.startLocked(want); err != nil {
			return false, err
		}
	}
	return true, cq.fillLocked(want)
}

// startLocked gives an empty queue its first file, the one holding the byte position want,
// where the queue then starts. mu held.
func (cq *consumeQueue) startLocked(want int64) error {
	first, err := cq.q.newFile(want - want%cq.q.fileSize)
	if err != nil {
		return err
	}
	cq.q.flushedWhere.Store(first.from)
	cq.q.committedWhere.Store(first.from)
	cq.minLogicOffset.Store(want)
	return nil
}

// unitsFrom returns the units from queue offset qo to the readable end of the file holding
// it, at most limit bytes of them, with a reference held on that file; nil when qo is not in
// a file, and an error (ErrReadFault) when the file does not read.
func (cq *consumeQueue) unitsFrom(qo int64, limit int) ([]byte, *mappedFile, error) {
	off := qo * cqUnitSize
	f := cq.q.holdAt(off)
	if f == nil {
		return nil, nil, nil
	}
	pos, end := off-f.from, f.readable()
	if pos >= end {
		f.release()
		return nil, nil, nil
	}
	units := f.data[pos:min(end, pos+int64(limit))]
	if err := probe(units, f.fileName(), pos); err != nil {
		f.release()
		return nil, nil, err
	}
	return units, f, nil
}

// unitAt returns the unit of queue offset qo (false also when its file does not read).
func (cq *consumeQueue) unitAt(qo int64) (cqUnit, bool) {
	units, f, err := cq.unitsFrom(qo, cqUnitSize)
	if f == nil || err != nil {
		return cqUnit{}, false
	}
	defer f.release()
	return readUnit(units), true
}

// rollNextFile is the first queue offset of the file after the one holding qo.
func (cq *consumeQueue) rollNextFile(qo int64) int64 {
	perFile := cq.q.fileSize / cqUnitSize
	return qo + perFile - qo%perFile
}

// truncateAbove drops the units pointing at or past phy (the CommitLog was cut there), as
// RocketMQ's truncateDirtyLogicFiles does: the queue is cut at the first unit that points at
// or past phy, with whatever follows it; the fillers before that unit stay (they say the
// queue starts above them: a seeded start, or offsets whose records expired or lie on
// another replica), and so do fillers after the last unit that stays.
func (cq *consumeQueue) truncateAbove(phy int64) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	// The flush service must not move the flushed position past the cut meanwhile.
	cq.q.flushMu.Lock()
	defer cq.q.flushMu.Unlock()
	files := cq.q.snapshot()
	if len(files) == 0 {
		return nil
	}
	end := cq.q.maxOffset()
	for pos := end - cqUnitSize; pos >= files[0].from; pos -= cqUnitSize {
		f := cq.q.find(pos)
		if f == nil {
			break
		}
		u := readUnit(f.data[pos-f.from:])
		if u.blank() {
			continue
		}
		if u.phy < phy {
			break
		}
		end = pos
	}
	if end == cq.q.maxOffset() {
		return nil
	}
	cq.log.Info("truncating consume queue past the commitlog end", "topic", cq.topic, "queueId", cq.queueID,
		"fromOffset", end/cqUnitSize, "commitlogEnd", phy)
	if err := cq.q.truncate(end); err != nil {
		return err
	}
	if first := cq.q.first(); first == nil || end <= first.from {
		// Nothing left: let the next unit start the queue where it belongs (a file at 0
		// kept empty would make it fill the queue with fillers up to there).
		if err := cq.q.dropAll(); err != nil {
			return err
		}
		cq.minLogicOffset.Store(0)
	}
	cq.maxPhysicOffset.Store(cq.lastPhysicEnd())
	return nil
}

// correctMinOffset moves the minimum to the first unit pointing at or past minPhy.
func (cq *consumeQueue) correctMinOffset(minPhy int64) {
	f := cq.q.first()
	if f == nil || !f.hold() {
		return
	}
	defer f.release()
	n := int(f.readable() / cqUnitSize)
	i := sort.Search(n, func(i int) bool {
		u := readUnit(f.data[int64(i)*cqUnitSize:])
		return !u.blank() && u.phy >= minPhy
	})
	// None there (every unit a filler or below minPhy): the queue starts after this file's
	// units, at its end when this is its last file.
	cq.minLogicOffset.Store(max(cq.minLogicOffset.Load(), f.from+int64(i)*cqUnitSize))
}

// deleteExpired deletes the files whose units all point below minPhy, then moves the minimum.
func (cq *consumeQueue) deleteExpired(minPhy int64, pause func() bool) int {
	n := cq.q.deleteFirst(func(f *mappedFile) bool {
		if f.readable() < cqUnitSize {
			return false
		}
		// RocketMQ's rule: the last unit's record starts below the CommitLog minimum.
		return readUnit(f.data[f.readable()-cqUnitSize:]).phy < minPhy
	}, math.MaxInt, pause)
	cq.correctMinOffset(minPhy)
	return n
}

// flush makes the units durable when leastPages pages are dirty.
func (cq *consumeQueue) flush(leastPages int) error {
	_, err := cq.q.flush(leastPages)
	return err
}

// destroy deletes the queue's files and folder; later appends are ignored.
func (cq *consumeQueue) destroy() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	cq.destroyed = true
	return cq.q.destroyAll()
}

// consumeQueueTable holds every ConsumeQueue, created on first dispatch.
type consumeQueueTable struct {
	root     string
	fileSize int64
	observer SyncObserver // given to every queue; nil: none
	ops      FileOps      // given to every queue
	log      *slog.Logger

	mu     sync.RWMutex
	queues map[queueKey]*consumeQueue
}

func newConsumeQueueTable(root string, fileSize int64, observer SyncObserver, ops FileOps, log *slog.Logger) *consumeQueueTable {
	return &consumeQueueTable{root: root, fileSize: fileSize, observer: observer, ops: ops, log: log, queues: make(map[queueKey]*consumeQueue)}
}

// load opens consumequeue/<topic>/<queueId>/ folders.
func (t *consumeQueueTable) load() error {
	topics, err := os.ReadDir(t.root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: read %s: %w", t.root, err)
	}
	for _, td := range topics {
		if !td.IsDir() {
			continue
		}
		qdirs, err := os.ReadDir(filepath.Join(t.root, td.Name()))
		if err != nil {
			return fmt.Errorf("store: read %s: %w", filepath.Join(t.root, td.Name()), err)
		}
		for _, qd := range qdirs {
			id, err := strconv.ParseInt(qd.Name(), 10, 32)
			if !qd.IsDir() || err != nil {
				t.log.Warn("ignoring an entry that is not a queue folder", "dir", filepath.Join(t.root, td.Name()), "name", qd.Name())
				continue
			}
			cq := newConsumeQueue(t.root, td.Name(), int32(id), t.fileSize, t.observer, t.ops, t.log)
			if err := cq.load(); err != nil {
				return err
			}
			t.queues[queueKey{td.Name(), int32(id)}] = cq
		}
	}
	return nil
}

// get returns the queue or nil.
func (t *consumeQueueTable) get(topic string, queueID int32) *consumeQueue {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.queues[queueKey{topic, queueID}]
}

// getOrCreate returns the queue, creating it (without files) when absent.
func (t *consumeQueueTable) getOrCreate(topic string, queueID int32) *consumeQueue {
	if cq := t.get(topic, queueID); cq != nil {
		return cq
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	key := queueKey{topic, queueID}
	if cq := t.queues[key]; cq != nil {
		return cq
	}
	cq := newConsumeQueue(t.root, topic, queueID, t.fileSize, t.observer, t.ops, t.log)
	t.queues[key] = cq
	return cq
}

// getOrCreateFor is getOrCreate for a topic read from a record: the lookup allocates no
// string (only the creation of a queue does); the queue's topic is the string to use after it.
func (t *consumeQueueTable) getOrCreateFor(topic []byte, queueID int32) *consumeQueue {
	t.mu.RLock()
	cq := t.queues[queueKey{string(topic), queueID}]
	t.mu.RUnlock()
	if cq != nil {
		return cq
	}
	return t.getOrCreate(string(topic), queueID)
}

// all returns a snapshot of the queues.
func (t *consumeQueueTable) all() []*consumeQueue {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*consumeQueue, 0, len(t.queues))
	for _, cq := range t.queues {
		out = append(out, cq)
	}
	return out
}

// remove deletes the queues of a topic and returns them.
func (t *consumeQueueTable) remove(topic string) []*consumeQueue {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*consumeQueue
	for k, cq := range t.queues {
		if k.topic == topic {
			out = append(out, cq)
			delete(t.queues, k)
		}
	}
	return out
}

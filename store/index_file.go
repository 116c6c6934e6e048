package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"golang.org/x/sys/unix"
)

// IndexFile layout. Wire format: never change.
const (
	indexHeaderSize = 40
	indexSlotSize   = 4
	indexEntrySize  = 20
	// indexInvalid is the empty slot / end of chain.
	indexInvalid = 0
	// indexFileNameLen is the length of yyyyMMddHHmmssSSS, the creation time naming a file.
	indexFileNameLen = 17
)

// Header field offsets.
const (
	ihBeginTimestamp = 0
	ihEndTimestamp   = 8
	ihBeginPhyOffset = 16
	ihEndPhyOffset   = 24
	ihHashSlotCount  = 32
	ihIndexCount     = 36
)

func indexFileSize(slots, entries int) int64 {
	return indexHeaderSize + int64(slots)*indexSlotSize + int64(entries)*indexEntrySize
}

// indexKeyHash is RocketMQ's indexKeyHashMethod: |String.hashCode(key)|, MIN_VALUE -> 0.
func indexKeyHash(key string) int32 {
	return positiveHash(message.JavaStringHash(key))
}

// indexKeyHashParts is indexKeyHash(topic + "#" + key) without building the string.
func indexKeyHashParts(topic, key []byte) int32 {
	h := message.JavaStringHashAppend(0, topic)
	h = 31*h + '#'
	return positiveHash(message.JavaStringHashAppend(h, key))
}

func positiveHash(h int32) int32 {
	if h < 0 {
		h = -h
	}
	if h < 0 {
		h = 0
	}
	return h
}

// indexFile is one hash index file: a header, hash slots holding the number of the newest
// entry for the slot, and entries chained to the previous entry of the same slot. Entry 0 is
// never used (indexCount starts at 1). The indexService lock guards it.
type indexFile struct {
	mf      *mappedFile
	slots   int
	entries int
	// allocated is how far the file's holes have been written with zeros (allocateTo).
	allocated int64
	// shadow holds the hash slots of the file being written, as in the file (index_slots.go); nil for a file
	// not written to since it was mapped, whose slots are read through the mapping.
	shadow []byte
	// dirty has a bit per shadowChunk of shadow changed since it was last written to the file.
	dirty []uint64
}

func (f *indexFile) u32(off int64) int32 { return int32(binary.BigEndian.Uint32(f.mf.data[off:])) }
func (f *indexFile) u64(off int64) int64 { return int64(binary.BigEndian.Uint64(f.mf.data[off:])) }
func (f *indexFile) put32(off int64, v int32) {
	binary.BigEndian.PutUint32(f.mf.data[off:], uint32(v))
}
func (f *indexFile) put64(off int64, v int64) {
	binary.BigEndian.PutUint64(f.mf.data[off:], uint64(v))
}

func (f *indexFile) beginTimestamp() int64 { return f.u64(ihBeginTimestamp) }
func (f *indexFile) endTimestamp() int64   { return f.u64(ihEndTimestamp) }
func (f *indexFile) beginPhyOffset() int64 { return f.u64(ihBeginPhyOffset) }
func (f *indexFile) endPhyOffset() int64   { return f.u64(ihEndPhyOffset) }
func (f *indexFile) indexCount() int32     { return f.u32(ihIndexCount) }

// slotIndex is the slot of a key hash.
func (f *indexFile) slotIndex(hash int32) int {
	return int(hash % int32(f.slots))
}

func (f *indexFile) entryPos(n int32) int64 {
	return indexHeaderSize + int64(f.slots)*indexSlotSize + int64(n)*indexEntrySize
}

// putKey adds an entry for the key of the given indexKeyHash (RocketMQ IndexFile.putKey);
// false when the file is full. The entry and the header are written through the mapping,
// the slot in memory (index_slots.go). The caller holds the index lock and started the shadow.
func (f *indexFile) putKey(hash int32, phy, storeTimestamp int64) bool {
	count := f.indexCount()
	if int(count) >= f.entries {
		return false
	}
	si := f.slotIndex(hash)
	prev := f.slot(si)
	if prev <= indexInvalid || prev > count {
		prev = indexInvalid
	}
	if count <= 1 {
		// The first entry starts the file's time range (RocketMQ sets it after computing the
		// first entry's time difference from the inherited one, mis-dating that entry).
		f.put64(ihBeginPhyOffset, phy)
		f.put64(ihBeginTimestamp, storeTimestamp)
	}
	diff := int64(0)
	if begin := f.beginTimestamp(); begin > 0 {
		diff = min(max((storeTimestamp-begin)/1000, 0), int64(^uint32(0)>>1))
	}
	ep := f.entryPos(count)
	f.put32(ep, hash)
	f.put64(ep+4, phy)
	f.put32(ep+12, int32(diff))
	f.put32(ep+16, prev)
	f.setSlot(si, count)
	if prev == indexInvalid {
		f.put32(ihHashSlotCount, f.u32(ihHashSlotCount)+1)
	}
	f.put32(ihIndexCount, count+1)
	f.put64(ihEndPhyOffset, phy)
	f.put64(ihEndTimestamp, storeTimestamp)
	return true
}

// allocateTo makes the file ready for writes up to a chunk past pos: its blocks allocated
// and its pages mapped writable (prefault: one MADV_POPULATE_WRITE call, or zeros written
// over the holes where that is refused). An index file is sparse; without this, the first
// write to each page allocated its block inside a page fault (5,000 faults per new file for
// the slots alone, measured in TestIndexFileAllocatedAhead's setting with MADV_DONTNEED).
// Pages the kernel writes back are mapped read-only again and fault on their next write
// through the mapping, which is why the slots, written at random, are kept in memory while
// the file is written (index_slots.go). The bytes do not change, so readers see no
// difference. putKeyLocked calls this before every entry; the caller holds the index lock.
func (f *indexFile) allocateTo(pos int64) error {
	if pos <= f.allocated {
		return nil
	}
	to := chunkEnd(pos+warmChunk, f.mf.size)
	if err := f.mf.prefault(f.allocated, to); err != nil {
		return err
	}
	f.allocated = to
	return nil
}

// timeMatched is RocketMQ's isTimeMatched.
func (f *indexFile) timeMatched(begin, end int64) bool {
	b, e := f.beginTimestamp(), f.endTimestamp()
	return (begin < b && end > e) || (begin >= b && begin <= e) || (end >= b && end <= e)
}

// selectPhyOffsets appends the physical offsets of entries for a key hash within [begin, end].
func (f *indexFile) selectPhyOffsets(out []int64, hash int32, maxNum int, begin, end int64) []int64 {
	count := f.indexCount()
	next := f.slot(f.slotIndex(hash))
	if next <= indexInvalid || next > count || count <= 1 {
		return out
	}
	for steps := int32(0); len(out) < maxNum && steps < count; steps++ {
		ep := f.entryPos(next)
		diff := int64(f.u32(ep + 12))
		if diff < 0 {
			break
		}
		t := f.beginTimestamp() + diff*1000
		if f.u32(ep) == hash && t >= begin && t <= end {
			out = append(out, f.u64(ep+4))
		}
		prev := f.u32(ep + 16)
		if prev <= indexInvalid || prev > count || prev == next || t < begin {
			break
		}
		next = prev
	}
	return out
}

// truncateAbove removes the entries pointing at or past phy. Entries are appended in
// physical order, so they form a tail; unlinking it newest first restores each slot's head.
func (f *indexFile) truncateAbove(phy int64) int {
	count := f.indexCount()
	keep := count
	for keep > 1 && f.u64(f.entryPos(keep-1)+4) >= phy {
		keep--
	}
	for n := count - 1; n >= keep; n-- {
		ep := f.entryPos(n)
		si := f.slotIndex(f.u32(ep))
		if f.slot(si) == n {
			prev := f.u32(ep + 16)
			f.setSlot(si, prev)
			if prev == indexInvalid {
				f.put32(ihHashSlotCount, max(f.u32(ihHashSlotCount)-1, 0))
			}
		}
		clear(f.mf.data[ep : ep+indexEntrySize])
	}
	f.put32(ihIndexCount, keep)
	if keep > 1 {
		last := f.entryPos(keep - 1)
		f.put64(ihEndPhyOffset, f.u64(last+4))
		f.put64(ihEndTimestamp, f.beginTimestamp()+int64(f.u32(last+12))*1000)
	} else if f.endPhyOffset() >= phy {
		f.put64(ihEndPhyOffset, min(f.beginPhyOffset(), max(phy-1, 0)))
	}
	return int(count - keep)
}

func (f *indexFile) flush() error {
	if err := unix.Msync(f.mf.data, unix.MS_SYNC); err != nil {
		return fmt.Errorf("store: flush %s: %w", f.mf.path, err)
	}
	return nil
}

// indexService builds and queries the index files (RocketMQ IndexService). The dispatch
// goroutine writes; queries read under the read lock.
type indexService struct {
	dir     string
	slots   int
	entries int
	clock   Clock
	log     *slog.Logger

	mu    sync.RWMutex
	files []*indexFile
	// indexedThrough is the physical offset of the last record processed, -1 for none.
	indexedThrough int64
	// damaged is set when load dropped a file; the store then rebuilds from the CommitLog.
	damaged bool
}

func newIndexService(dir string, slots, entries int, clock Clock, log *slog.Logger) *indexService {
	return &indexService{dir: dir, slots: slots, entries: entries, clock: clock, log: log, indexedThrough: -1}
}

// load maps the existing files; a file of the wrong size or with a broken header is
// deleted (the index is rebuilt from the CommitLog).
func (s *indexService) load() error {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: read %s: %w", s.dir, err)
	}
	var names []string
	for _, e := range entries {
		if !isDigits(e.Name(), indexFileNameLen) || e.IsDir() {
			s.log.Warn("ignoring a file that is not an index file", "dir", s.dir, "name", e.Name())
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	size := indexFileSize(s.slots, s.entries)
	for _, name := range names {
		path := filepath.Join(s.dir, name)
		mf, _, err := openMappedFile(path, 0, size, sizeMustMatch)
		if err == nil {
			f := &indexFile{mf: mf, slots: s.slots, entries: s.entries}
			c := f.indexCount()
			if c >= 1 && int(c) <= s.entries {
				s.files = append(s.files, f)
				continue
			}
			_ = mf.destroy(false) // unmaps: the count was read before
			err = fmt.Errorf("header index count %d outside 1..%d", c, s.entries)
		}
		s.log.Warn("dropping a damaged index file; it is rebuilt from the commitlog", "file", path, "err", err)
		s.damaged = true
		_ = os.Remove(path)
	}
	if n := len(s.files); n > 0 {
		s.indexedThrough = s.files[n-1].endPhyOffset()
	}
	return nil
}

// ensureFile makes the first index file when there is none (Start runs it beside the other services).
// Making one prefaults its hash slots (20 MB by default); done by the first record's dispatch, it held
// up that dispatch and every ConsumeQueue unit behind it (under load for hundreds of milliseconds, in
// which a new broker's first messages were stored but not yet visible to consumers). A failure is logged:
// the dispatch tries again when it indexes.
func (s *indexService) ensureFile() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.files) > 0 {
		return
	}
	if _, err := s.lastWritableLocked(0); err != nil {
		s.log.Warn("could not make the first index file ahead of the first record", "err", err)
	}
}

// lastWritableLocked returns the file to write to, creating one when there is none or the
// last one has no room for need more entries. Lock held.
func (s *indexService) lastWritableLocked(need int) (*indexFile, error) {
	var prev *indexFile
	if n := len(s.files); n > 0 {
		prev = s.files[n-1]
		if int(prev.indexCount())+need <= prev.entries {
			return prev, nil
		}
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCreateMappedFile, s.dir, err)
	}
	now := s.clock.Now()
	var path string
	for {
		path = filepath.Join(s.dir, indexFileName(now))
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			break
		}
		now = now.Add(time.Millisecond)
	}
	mf, err := createMappedFile(path, 0, indexFileSize(s.slots, s.entries), false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCreateMappedFile, err)
	}
	f := &indexFile{mf: mf, slots: s.slots, entries: s.entries}
	if err := f.allocateTo(f.entryPos(1) + indexEntrySize); err != nil {
		_ = mf.destroy(true)
		return nil, fmt.Errorf("%w: %v", ErrCreateMappedFile, err)
	}
	f.put32(ihIndexCount, 1)
	if prev != nil {
		f.put64(ihBeginPhyOffset, prev.endPhyOffset())
		f.put64(ihEndPhyOffset, prev.endPhyOffset())
		f.put64(ihBeginTimestamp, prev.endTimestamp())
		f.put64(ihEndTimestamp, prev.endTimestamp())
		if err := prev.stopShadow(); err != nil {
			_ = mf.destroy(true)
			return nil, err
		}
		if err := prev.flush(); err != nil {
			s.log.Warn("flushing the full index file", "err", err)
		}
	}
	s.files = append(s.files, f)
	return f, nil
}

func isDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func indexFileName(t time.Time) string {
	return t.Format("20060102150405") + fmt.Sprintf("%03d", t.Nanosecond()/int(time.Millisecond))
}

// indexRecord is what dispatch hands to the index for one record.
type indexRecord struct {
	phy            int64
	storeTimestamp int64
	sysFlag        int32
	topic          []byte
	properties     []byte
}

// build indexes the keys and unique key of a record (not rolled-back ones); records at or
// before indexedThrough were done already.
func (s *indexService) build(r indexRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.phy <= s.indexedThrough {
		return nil
	}
	f, err := s.lastWritableLocked(0)
	if err != nil {
		return err
	}
	if r.sysFlag&message.SysFlagTransactionMask != message.SysFlagTransactionRollback {
		uniq, _ := message.PropertyValue(r.properties, message.PropertyUniqKey)
		keys, _ := message.PropertyValue(r.properties, message.PropertyKeys)
		n := countKeys(keys)
		if len(uniq) > 0 {
			n++
		}
		// A record's keys do not span two files (unless they outnumber a file's entries), so
		// a file's endPhyOffset names a record indexed in full: recovery resumes after it.
		if c := int(f.indexCount()); c > 1 && c+n > f.entries && n < f.entries {
			if f, err = s.lastWritableLocked(n); err != nil {
				return err
			}
		}
		if len(uniq) > 0 {
			if f, err = s.putKeyLocked(f, indexKeyHashParts(r.topic, uniq), r); err != nil {
				return err
			}
		}
		for k, rest := nextKey(keys); k != nil; k, rest = nextKey(rest) {
			if f, err = s.putKeyLocked(f, indexKeyHashParts(r.topic, k), r); err != nil {
				return err
			}
		}
	}
	if f.endPhyOffset() < r.phy {
		f.put64(ihEndPhyOffset, r.phy)
	}
	s.indexedThrough = r.phy
	return nil
}

func (s *indexService) putKeyLocked(f *indexFile, hash int32, r indexRecord) (*indexFile, error) {
	for {
		if err := f.allocateTo(f.entryPos(f.indexCount()) + indexEntrySize); err != nil {
			return f, err
		}
		f.startShadow()
		if f.putKey(hash, r.phy, r.storeTimestamp) {
			return f, nil
		}
		var err error
		if f, err = s.lastWritableLocked(1); err != nil {
			return f, err
		}
	}
}

// nextKey returns the first non-empty space-separated key of ks (nil when none) and the rest.
func nextKey(ks []byte) (key, rest []byte) {
	for len(ks) > 0 {
		i := bytes.IndexByte(ks, ' ')
		if i < 0 {
			return ks, nil
		}
		if i > 0 {
			return ks[:i], ks[i+1:]
		}
		ks = ks[1:]
	}
	return nil, nil
}

func countKeys(ks []byte) int {
	n := 0
	for k, rest := nextKey(ks); k != nil; k, rest = nextKey(rest) {
		n++
	}
	return n
}

// query returns up to maxNum physical offsets for topic#key stored within [begin, end],
// newest files first, and the last file's end time and offset.
func (s *indexService) query(topic, key string, maxNum int, begin, end int64) (offs []int64, lastTs, lastPhy int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := len(s.files); n > 0 {
		lastTs, lastPhy = s.files[n-1].endTimestamp(), s.files[n-1].endPhyOffset()
	}
	hash := indexKeyHash(topic + "#" + key)
	for i := len(s.files) - 1; i >= 0 && len(offs) < maxNum; i-- {
		f := s.files[i]
		if f.timeMatched(begin, end) {
			offs = f.selectPhyOffsets(offs, hash, maxNum, begin, end)
		}
		if f.beginTimestamp() < begin {
			break
		}
	}
	return offs, lastTs, lastPhy
}

// truncateAbove removes entries pointing at or past phy and files that start past it.
func (s *indexService) truncateAbove(phy int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := s.files[:0]
	for _, f := range s.files {
		if f.indexCount() > 1 && f.beginPhyOffset() >= phy {
			s.log.Info("deleting an index file past the commitlog end", "file", f.mf.path, "commitlogEnd", phy)
			_ = f.mf.destroy(true)
			continue
		}
		if n := f.truncateAbove(phy); n > 0 {
			s.log.Info("dropped index entries past the commitlog end", "file", f.mf.path, "entries", n, "commitlogEnd", phy)
		}
		keep = append(keep, f)
	}
	s.files = keep
	s.indexedThrough = -1
	if n := len(s.files); n > 0 {
		s.indexedThrough = min(s.files[n-1].endPhyOffset(), phy-1)
	}
}

// deleteExpired deletes the files whose entries all point below minPhy (never the last).
func (s *indexService) deleteExpired(minPhy int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for len(s.files) > 1 && s.files[0].endPhyOffset() < minPhy {
		_ = s.files[0].mf.destroy(true)
		s.log.Info("deleted index file", "file", s.files[0].mf.path)
		s.files = s.files[1:]
		n++
	}
	return n
}

// flush writes the slots held in memory to the file being written and syncs it (full files
// were synced when the next one was created); it returns the indexedThrough and end timestamp
// it made durable. Writing the slots holds the lock (dispatch waits): at most maxHashSlotNum x 4
// bytes (20 MB by default) copied into the page cache, once per thorough flush: 3 ms with every
// slot changed on the development machine (BenchmarkIndexWriteSlots).
func (s *indexService) flush() (through, endTs int64, err error) {
	s.mu.Lock()
	through = s.indexedThrough
	var f *indexFile
	if n := len(s.files); n > 0 && s.files[n-1].mf.hold() {
		f = s.files[n-1]
		endTs = f.endTimestamp()
		err = f.writeSlots()
	}
	s.mu.Unlock()
	if f != nil {
		if err == nil {
			err = f.flush()
		}
		f.mf.release()
	}
	return through, endTs, err
}

// syncAll writes out the slots held in memory and syncs every index file (after truncateAbove).
func (s *indexService) syncAll() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var firstErr error
	for _, f := range s.files {
		err := f.writeSlots()
		if err == nil {
			err = f.flush()
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// repairSlots replays into the last file's slots the entries of records from flushedPhy on
// (-1: all of them), which a process that died before writing its slots out had only in
// memory (index_slots.go). Recovery calls it before dispatch.
func (s *indexService) repairSlots(flushedPhy int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.files)
	if n == 0 || s.files[n-1].shadow != nil {
		return
	}
	if r := s.files[n-1].repairSlots(flushedPhy); r > 0 {
		s.log.Info("index slots replayed from the entries past the last index flush", "file", s.files[n-1].mf.path,
			"entries", r, "flushedOffset", flushedPhy)
	}
}

// close unmaps the files. Slots changed since the last flush are not written: Store.Close
// flushes before, and a store closed as after a crash (shutdown(false)) must leave what a
// process that died would.
func (s *indexService) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		_ = f.mf.destroy(false)
	}
	s.files = nil
}

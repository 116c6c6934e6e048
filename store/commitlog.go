package store

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"golang.org/x/sys/unix"
)

// queueKey names one ConsumeQueue.
type queueKey struct {
	topic   string
	queueID int32
}

// commitLog is the single append-only log of every stored record (RocketMQ CommitLog).
//
// Writers serialise on putMu, which covers only offset assignment and the copy of the
// encoded record into the mapped file (or the transient pool buffer): validation, CRC and
// sizing happen before, waiting for the flush after.
type commitLog struct {
	q              *mappedFileQueue
	fileSize       int64
	maxMessageSize int
	storeHost      netip.AddrPort
	hostBytes      []byte // encoded store host, the prefix of every offset msg id
	clock          Clock
	// writeWithoutMmap writes records with pwrite instead of copying into the mapping.
	writeWithoutMmap bool
	// staged keeps records in putMu.stage until the flusher writes them (SYNC_FLUSH).
	staged bool
	stager stager
	// warmAhead is how far the warm frontier is kept ahead of the writes (staged writes
	// only, 0 otherwise; see warm.go); warmWake wakes the warm service. warmBytes counts the
	// zeros written ahead, warmStalls the staged writes that had to warm first.
	warmAhead int64
	warmWake  chan struct{}
	// populateAhead is how far ahead of the writes the pages of the file being written
	// through the mapping are faulted in (populate.go); 0 for the other write paths.
	populateAhead         int64
	warmBytes, warmStalls atomic.Int64
	log                   *slog.Logger
	// beforeWrite (tests) runs in writeStage just before staged records go to their file.
	beforeWrite func(f *mappedFile, pos, n int64)
	// beforeWarm (tests) runs in the warm service before it moves a frontier.
	beforeWarm func()
	// faultInBeforeLock: see faultIn (SYNC_FLUSH writes through the mapping).
	faultInBeforeLock bool
	// readLimit is where reads of records stop: math.MaxInt64, or in framed mode the
	// dispatched position (nothing after it is committed and applied).
	readLimit atomic.Int64

	putMu struct {
		sync.Mutex
		closed bool
		// scratch holds the records being written with writeWithoutMmap.
		scratch []byte
		// stage holds the records not yet written to their file (staged).
		stage stagedWrites
		// queueOffsets is the next queue offset to assign per topic/queue (RocketMQ's
		// topicQueueTable), behind a pointer made once per queue (queueNextLocked): an
		// assignment to a map replaces a string key with the one assigned, so writing the
		// value back would keep the last request's topic as the key (its whole frame alive,
		// and a cache miss to compare with at the next lookup) instead of the queue's own copy.
		queueOffsets map[queueKey]*int64
	}
	// lockedSince is when the append holding putMu took it (unix nanoseconds), 0 while no append holds
	// it: RocketMQ's beginTimeInLock, behind pageCacheLockTimeMills.
	lockedSince atomic.Int64
}

func newCommitLog(cfg Config, storeHost netip.AddrPort, clock Clock, q *mappedFileQueue) *commitLog {
	c := &commitLog{q: q, fileSize: cfg.MappedFileSizeCommitLog, maxMessageSize: cfg.MaxMessageSize,
		storeHost: storeHost, clock: clock, writeWithoutMmap: cfg.pwriteCommitLog(),
		faultInBeforeLock: cfg.FlushDiskType == SyncFlush && !cfg.pwriteCommitLog(),
		staged:            cfg.syncFlushFiles(), warmAhead: cfg.warmAheadBytes(), warmWake: make(chan struct{}, 1),
		populateAhead: cfg.populateAheadBytes(),
		log:           slog.Default()}
	var hb [message.HostV6Length]byte
	c.hostBytes = append([]byte(nil), hb[:message.PutHost(hb[:], storeHost)]...)
	c.putMu.queueOffsets = make(map[queueKey]*int64)
	c.readLimit.Store(math.MaxInt64)
	return c
}

// appendResult is what one locked append produced.
type appendResult struct {
	physicalOffset int64
	queueOffset    int64
	wroteBytes     int
	count          int
	storeTimestamp int64
}

// prepare validates msgs against the store limits and encodes their sizes, CRCs and flags.
func (c *commitLog) prepare(msgs []*message.Message, enc []message.Encoded) (int, error) {
	total := 0
	for i, m := range msgs {
		if m == nil {
			return 0, fmt.Errorf("%w: message %d is nil", ErrMessageTooLarge, i)
		}
		if len(m.Body) > c.maxMessageSize {
			return 0, fmt.Errorf("%w: body is %d bytes, limit maxMessageSize %d", ErrMessageTooLarge, len(m.Body), c.maxMessageSize)
		}
		e, err := message.Prepare(m, c.storeHost)
		if err != nil {
			return 0, err
		}
		enc[i] = e
		total += e.Length
	}
	if limit := c.fileSize - message.BlankRecordMinLength; int64(total) > limit {
		return 0, fmt.Errorf("%w: %d bytes of records do not fit a commitlog file of %d bytes (limit %d)",
			ErrMessageTooLarge, total, c.fileSize, limit)
	}
	return total, nil
}

// isTransactionSkipped reports the prepared and rolled-back messages: they get queue offset 0,
// do not advance the queue and are not dispatched to a ConsumeQueue.
func isTransactionSkipped(sysFlag int32) bool { return !message.TakesQueueOffset(sysFlag) }

// append writes enc (one message, or a batch for one topic/queue) as consecutive records.
// On an error nothing of enc is written. A write fault in the mapping (file truncated under
// us, disk gone) is caught and reported as errWriteFault.
func (c *commitLog) append(enc []message.Encoded, total int) (res appendResult, err error) {
	c.putMu.Lock()
	defer c.putMu.Unlock()
	c.lockedSince.Store(time.Now().UnixNano())
	defer c.lockedSince.Store(0)
	if c.putMu.closed {
		return res, fmt.Errorf("%w: store is closed", ErrServiceNotAvailable)
	}
	defer catchWriteFault(&err)
	f, err := c.q.lastOrCreate(0)
	if err != nil {
		return res, err
	}
	pos := f.wrote.Load()
	if pos+int64(total)+message.BlankRecordMinLength > f.size {
		if err := c.writeBlank(f, pos); err != nil {
			return res, err
		}
		if f, err = c.q.lastOrCreate(0); err != nil {
			return res, err
		}
		pos = f.wrote.Load()
	}
	now := c.clock.Now().UnixMilli()
	first := enc[0].Msg
	nextp := c.queueNextLocked(queueKey{first.Topic, first.QueueID})
	next := *nextp
	res = appendResult{physicalOffset: f.from + pos, queueOffset: next, wroteBytes: total, count: len(enc), storeTimestamp: now}
	buf := c.reserveLocked(f, pos, total)
	off := 0
	for i := range enc {
		qo := next
		if isTransactionSkipped(enc[i].SysFlag) {
			qo = 0
		} else {
			next++
		}
		if i == 0 {
			res.queueOffset = qo
		}
		message.EncodeRecordAt(buf[off:], &enc[i], qo, res.physicalOffset+int64(off), now)
		off += enc[i].Length
	}
	if err := c.finishLocked(f, pos, buf, pos+int64(total)); err != nil {
		return appendResult{}, err
	}
	*nextp = next
	f.storeTimestamp.Store(now)
	return res, nil
}

// reserveLocked returns where n bytes of records bound for pos in f are encoded: the staged
// writes, a scratch buffer for pwrite, the transient pool buffer or the mapping.
func (c *commitLog) reserveLocked(f *mappedFile, pos int64, n int) []byte {
	switch {
	case f.writeBuf != nil:
		return f.writeSlice(pos, int64(n))
	case c.staged:
		return c.putMu.stage.reserve(f, pos, n)
	case c.writeWithoutMmap:
		if cap(c.putMu.scratch) < n {
			c.putMu.scratch = make([]byte, n)
		}
		return c.putMu.scratch[:n]
	}
	return f.writeSlice(pos, int64(n))
}

// finishLocked completes a write reserved at pos (pwrite when it went to scratch) and moves
// the write position to end (and the readable end, unless a commit does that later).
func (c *commitLog) finishLocked(f *mappedFile, pos int64, buf []byte, end int64) error {
	switch {
	case f.writeBuf != nil:
	case c.staged:
		f.wrote.Store(end)
		c.wakeWarmLocked(f, end)
		return nil
	case c.writeWithoutMmap:
		if _, err := f.file.WriteAt(buf, pos); err != nil {
			return fmt.Errorf("%w: write %s at %d: %v", errWriteFault, f.path, pos, err)
		}
	}
	f.publish(end)
	// After the publish: the populate service reads the write position this wake is about. A
	// no-op unless the copies go into the mapping (populateAhead is 0 for the other paths).
	c.wakePopulateLocked(f, end)
	return nil
}

// writeBlank closes the unused tail of f with a blank record (size + blank magic); the rest
// of the file is zeros already, except in a reused transient pool buffer.
func (c *commitLog) writeBlank(f *mappedFile, pos int64) error {
	rest := f.size - pos
	b := c.reserveLocked(f, pos, message.BlankRecordMinLength)
	binary.BigEndian.PutUint32(b[0:], uint32(rest))
	message.PutInt32(b[4:], message.BlankMagicCode)
	if f.writeBuf != nil {
		clear(f.writeBuf[pos+message.BlankRecordMinLength:])
	}
	if c.staged {
		c.putMu.stage.closeFile(f)
	}
	return c.finishLocked(f, pos, b, f.size)
}

// catchWriteFault turns a fault on mapped memory (SIGBUS/SIGSEGV, made a panic by
// debug.SetPanicOnFault) into errWriteFault. Deferred by the writers of mapped memory.
func catchWriteFault(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: fault writing mapped memory: %v", errWriteFault, r)
	}
}

// withFaultPanics runs fn with memory faults turned into recoverable panics.
func withFaultPanics(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer catchWriteFault(&err)
	return fn()
}

// putMessages appends msgs (one, or a batch for one topic/queue) and builds the result.
func (c *commitLog) putMessages(msgs []*message.Message) (PutResult, error) {
	var one [1]message.Encoded
	enc := one[:]
	if len(msgs) > 1 {
		enc = make([]message.Encoded, len(msgs))
	}
	total, err := c.prepare(msgs, enc)
	if err != nil {
		return PutResult{}, err
	}
	if c.faultInBeforeLock {
		c.faultIn(total)
	}
	var res appendResult
	err = withFaultPanics(func() error {
		var err error
		res, err = c.append(enc, total)
		return err
	})
	if err != nil {
		return PutResult{}, err
	}
	return PutResult{
		Status:         PutOK,
		MsgID:          c.msgIDs(enc, res.physicalOffset),
		PhysicalOffset: res.physicalOffset,
		QueueOffset:    res.queueOffset,
		Count:          res.count,
		WroteBytes:     res.wroteBytes,
		StoreTimestamp: res.storeTimestamp,
	}, nil
}

// faultIn makes the pages the next total bytes will probably go to writable before the put
// lock is taken. With SYNC_FLUSH every flush write-protects the page being written, and the
// next writer would otherwise take that page fault (which updates the file time, a journal
// handle on ext4) while holding the lock, with every other writer queued behind it.
func (c *commitLog) faultIn(total int) {
	f := c.q.last()
	if f == nil || !f.hold() {
		return
	}
	defer f.release()
	pos := f.wrote.Load()
	if end := min(pos+int64(total), f.size); pos < end {
		_ = unix.Madvise(f.data[pos&^(osPageSize-1):end], unix.MADV_POPULATE_WRITE)
	}
}

// msgIDs is the offset msg id of each record, comma-joined for a batch.
func (c *commitLog) msgIDs(enc []message.Encoded, phy int64) string {
	idLen := 2 * (len(c.hostBytes) + 8)
	var stack [2 * (message.HostV6Length + 8)]byte
	b := stack[:0]
	if n := len(enc)*(idLen+1) - 1; n > len(stack) {
		b = make([]byte, 0, n)
	}
	for i := range enc {
		if i > 0 {
			b = append(b, ',')
		}
		b = message.AppendOffsetMsgID(b, c.hostBytes, phy)
		phy += int64(enc[i].Length)
	}
	return string(b)
}

// errNoRecord says nothing readable is at an offset (below the minimum, beyond the end, or
// in a file being deleted).
var errNoRecord = fmt.Errorf("store: no record at offset")

// ErrNotVisibleYet is returned (wrapped, with ErrNotFound) for a record past the read limit: in
// framed mode its ConsumeQueue unit can be seen before the state machine has raised the limit
// over the entry holding it; it becomes readable then. A reader that skips what is not found
// (a record whose file expired) must wait for this one instead: skipping it loses the message.
var ErrNotVisibleYet = fmt.Errorf("%w (not visible yet)", errNoRecord)

// selectRange returns size bytes at phy from mapped memory with a reference held on the file,
// probed (every page read once, a fault an error).
func (c *commitLog) selectRange(phy int64, size int) ([]byte, *mappedFile, error) {
	b, f, err := c.locateRange(phy, size)
	if err != nil {
		return nil, nil, err
	}
	if err := probe(b, f.fileName(), phy-f.from); err != nil {
		f.release()
		return nil, nil, err
	}
	return b, f, nil
}

// locateRange is selectRange without the probe: the bytes may not have been read yet.
func (c *commitLog) locateRange(phy int64, size int) ([]byte, *mappedFile, error) {
	if size <= 0 {
		return nil, nil, fmt.Errorf("%w %d: size %d", errNoRecord, phy, size)
	}
	if limit := c.readLimit.Load(); phy+int64(size) > limit {
		return nil, nil, fmt.Errorf("%w %d: %d bytes pass the visible end %d", ErrNotVisibleYet, phy, size, limit)
	}
	f := c.q.holdAt(phy)
	if f == nil {
		return nil, nil, fmt.Errorf("%w %d: no mapped file (min %d, max %d)", errNoRecord, phy, c.q.minOffset(), c.q.maxOffset())
	}
	pos := phy - f.from
	if pos+int64(size) > f.readable() {
		f.release()
		return nil, nil, fmt.Errorf("%w %d: %d bytes pass the readable end %d of %s", errNoRecord, phy, size, f.from+f.readable(), f.fileName())
	}
	return f.data[pos : pos+int64(size)], f, nil
}

// selectRecord returns the whole record at phy, checked for framing, with a reference held.
func (c *commitLog) selectRecord(phy int64) ([]byte, *mappedFile, error) {
	head, f, err := c.selectRange(phy, 8)
	if err != nil {
		return nil, nil, err
	}
	size := int64(int32(binary.BigEndian.Uint32(head)))
	magic := int32(binary.BigEndian.Uint32(head[4:]))
	pos := phy - f.from
	if (magic != message.MessageMagicCode && magic != message.MessageMagicCodeV2) || size < message.RecordFixedLength || pos+size > f.readable() {
		f.release()
		return nil, nil, fmt.Errorf("%w: no record at %s offset %d (physical %d): size %d magic 0x%08X",
			ErrCorruptRecord, f.fileName(), pos, phy, size, uint32(magic))
	}
	b := f.data[pos : pos+size]
	if err := probe(b[8:], f.fileName(), pos+8); err != nil {
		f.release()
		return nil, nil, err
	}
	return b, f, nil
}

// storeTimestampAt reads the store timestamp of the record at phy (size from a ConsumeQueue
// unit), or -1 when it cannot be read.
func (c *commitLog) storeTimestampAt(phy int64, size int32) int64 {
	rec, f, err := c.selectRange(phy, int(size))
	if err != nil {
		return -1
	}
	defer f.release()
	v, err := message.ParseRecord(rec)
	if err != nil {
		return -1
	}
	return v.StoreTimestamp
}

// rollNextFile is the first offset of the file after the one holding offset.
func (c *commitLog) rollNextFile(offset int64) int64 {
	return offset + c.fileSize - offset%c.fileSize
}

// setQueueOffsets replaces the next-offset table (recovery, topic deletion).
func (c *commitLog) setQueueOffset(key queueKey, next int64, remove bool) {
	c.putMu.Lock()
	defer c.putMu.Unlock()
	if remove {
		delete(c.putMu.queueOffsets, key)
		return
	}
	*c.queueNextLocked(key) = next
}

// queueNextLocked is where the next queue offset of key is kept, made (0) with a copy of the
// topic for the key on the queue's first use. putMu held.
func (c *commitLog) queueNextLocked(key queueKey) *int64 {
	p := c.putMu.queueOffsets[key]
	if p == nil {
		p = new(int64)
		key.topic = strings.Clone(key.topic)
		c.putMu.queueOffsets[key] = p
	}
	return p
}

// raiseQueueOffset makes the next queue offset of key at least next.
func (c *commitLog) raiseQueueOffset(key queueKey, next int64) {
	c.putMu.Lock()
	defer c.putMu.Unlock()
	if p := c.queueNextLocked(key); *p < next {
		*p = next
	}
}

// close refuses further appends; in-flight appends finish first (they hold putMu).
func (c *commitLog) close() {
	c.putMu.Lock()
	c.putMu.closed = true
	c.putMu.Unlock()
}

// describeOffset names the file and in-file position of a physical offset, for errors.
func (c *commitLog) describeOffset(phy int64) string {
	name := offsetFileName(phy - phy%c.fileSize)
	return fmt.Sprintf("%s offset %d (physical %d)", filepath.Join(c.q.dir, name), phy%c.fileSize, phy)
}

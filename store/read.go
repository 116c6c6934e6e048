package store

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/rocketraft/rocketraft/message"
)

// GetStatus is RocketMQ's GetMessageStatus.
type GetStatus int

const (
	Found GetStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowBadly
	OffsetOverflowOne
	OffsetTooSmall
	NoMatchedLogicQueue
	NoMessageInQueue
)

func (s GetStatus) String() string {
	switch s {
	case Found:
		return "FOUND"
	case NoMatchedMessage:
		return "NO_MATCHED_MESSAGE"
	case MessageWasRemoving:
		return "MESSAGE_WAS_REMOVING"
	case OffsetFoundNull:
		return "OFFSET_FOUND_NULL"
	case OffsetOverflowBadly:
		return "OFFSET_OVERFLOW_BADLY"
	case OffsetOverflowOne:
		return "OFFSET_OVERFLOW_ONE"
	case OffsetTooSmall:
		return "OFFSET_TOO_SMALL"
	case NoMatchedLogicQueue:
		return "NO_MATCHED_LOGIC_QUEUE"
	case NoMessageInQueue:
		return "NO_MESSAGE_IN_QUEUE"
	}
	return fmt.Sprintf("GetStatus(%d)", int(s))
}

// maxPullMsgSize caps the bytes of one GetMessage (RocketMQ MAX_PULL_MSG_SIZE).
const maxPullMsgSize = 128 << 20

// MessageFilter decides which records a GetMessage returns. Both methods run on the
// caller's goroutine and must not keep record.
type MessageFilter interface {
	// MatchByConsumeQueue sees the tag code of the ConsumeQueue unit.
	MatchByConsumeQueue(tagsCode int64) bool
	// MatchByCommitLog sees the whole stored record; props is nil (call RecordProperties
	// when the filter needs the properties).
	MatchByCommitLog(record []byte, props map[string]string) bool
}

// heldFiles are the mapped files and cold-read chunks a result keeps referenced, released once.
type heldFiles struct {
	files    []*mappedFile
	chunks   []*coldChunk
	cold     *coldCache
	released atomic.Bool
}

// addChunk holds ch (which arrives held) for the result.
func (h *heldFiles) addChunk(c *coldCache, ch *coldChunk) {
	h.cold = c
	h.chunks = append(h.chunks, ch)
}

// add holds f for the result; f arrives already held, so a repeat drops the extra reference.
func (h *heldFiles) add(f *mappedFile) {
	if n := len(h.files); n > 0 && h.files[n-1] == f {
		f.release()
		return
	}
	h.files = append(h.files, f)
}

func (h *heldFiles) release() {
	if h.released.CompareAndSwap(false, true) {
		for _, f := range h.files {
			f.release()
		}
		for _, ch := range h.chunks {
			h.cold.release(ch)
		}
	}
}

// GetResult is the answer of GetMessage. Records are slices of mapped memory, valid until
// Release; the caller must call Release (idempotent) when done with them.
type GetResult struct {
	Status                                GetStatus
	NextBeginOffset, MinOffset, MaxOffset int64
	Records                               [][]byte
	BufferTotalSize                       int
	MessageCount                          int
	SuggestPullingFromSlave               bool

	held heldFiles
}

// Release drops the references on the mapped files the records point into.
func (r *GetResult) Release() { r.held.release() }

// QueryResult is the answer of QueryMessage; Records are valid until Release.
type QueryResult struct {
	Records                  [][]byte
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyoffset int64

	held heldFiles
}

// Release drops the references on the mapped files the records point into.
func (r *QueryResult) Release() { r.held.release() }

// nextOffsetCorrection is RocketMQ's: a slave keeps the requested offset.
func (s *Store) nextOffsetCorrection(old, next int64) int64 {
	if s.cfg.BrokerRole == RoleSlave {
		return old
	}
	return next
}

// GetMessage reads up to maxMsgNums records (and about maxBytes bytes) of a queue from
// offset, as RocketMQ's DefaultMessageStore.getMessage: the status and next offset follow
// its table (unknown queues answer as empty ones).
func (s *Store) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int, maxBytes int, f MessageFilter) (*GetResult, error) {
	if s.state.Load() == stateClosed {
		return nil, fmt.Errorf("%w: store is closed", ErrServiceNotAvailable)
	}
	r := &GetResult{Status: NoMessageInQueue, NextBeginOffset: offset}
	cq := s.cqs.get(topic, queueID)
	if cq != nil {
		r.MinOffset, r.MaxOffset = cq.minOffset(), cq.maxOffset()
	}
	switch {
	case r.MaxOffset == 0:
		r.Status, r.NextBeginOffset = NoMessageInQueue, s.nextOffsetCorrection(offset, 0)
	case offset < r.MinOffset:
		r.Status, r.NextBeginOffset = OffsetTooSmall, s.nextOffsetCorrection(offset, r.MinOffset)
	case offset == r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowOne, s.nextOffsetCorrection(offset, offset)
	case offset > r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowBadly, s.nextOffsetCorrection(offset, r.MaxOffset)
	default:
		if err := s.readQueue(r, cq, offset, maxMsgNums, maxBytes, f); err != nil {
			r.Release()
			s.stats.getMiss.Add(1)
			return nil, err
		}
	}
	if r.Status == Found {
		s.stats.getFound.Add(1)
	} else {
		s.stats.getMiss.Add(1)
	}
	return r, nil
}

// readQueue fills r from the units of the ConsumeQueue file holding offset. It fails
// (ErrReadFault) only when the first record it would return, or the units, do not read.
func (s *Store) readQueue(r *GetResult, cq *consumeQueue, offset int64, maxMsgNums, maxBytes int, f MessageFilter) error {
	maxFilter := max(s.cfg.MaxFilterMessageSize, maxMsgNums*cqUnitSize)
	units, cqFile, err := cq.unitsFrom(offset, maxFilter+cqUnitSize)
	if err != nil {
		return err
	}
	if cqFile == nil {
		r.Status = OffsetFoundNull
		r.NextBeginOffset = s.nextOffsetCorrection(offset, cq.rollNextFile(offset))
		return nil
	}
	defer cqFile.release()
	maxPhy := s.commitLog.q.maxOffset()
	memory := s.memoryBytes * int64(s.cfg.AccessMessageInMemoryMaxRatio) / 100
	maxPull := min(max(maxBytes, 100), maxPullMsgSize)
	r.Status = NoMatchedMessage
	next := offset
	maxPhyPulling := int64(0)
	nextPhyFileStart := int64(math.MinInt64)
	var run coldRun
	for i := 0; (i+1)*cqUnitSize <= len(units) && next < r.MaxOffset; i++ {
		u := readUnit(units[i*cqUnitSize:])
		if i*cqUnitSize >= maxFilter {
			break
		}
		inMem := maxPhy-u.phy <= memory
		if s.batchFull(int(u.size), maxMsgNums, maxPull, r.BufferTotalSize, r.MessageCount, inMem) || r.BufferTotalSize >= maxPull {
			break
		}
		maxPhyPulling = u.phy
		next = offset + int64(i) + 1
		if u.blank() || u.phy < nextPhyFileStart {
			continue
		}
		if f != nil && !f.MatchByConsumeQueue(u.tags) {
			continue
		}
		rec, file, err := s.selectForQueue(&run, &r.held, u.phy, int(u.size))
		if errors.Is(err, ErrNotVisibleYet) {
			// Framed mode: the unit is ahead of its record. Stop before it, never past it: the
			// read limit is one position, so every later unit of the queue is unreadable too,
			// and the consumer asks again from here.
			next = offset + int64(i)
			break
		}
		if errors.Is(err, ErrReadFault) {
			// Never skip what cannot be read: answer what was read before it, or the error,
			// and the consumer asks again from here.
			next = offset + int64(i)
			if r.MessageCount == 0 {
				return err
			}
			break
		}
		if err != nil {
			if r.BufferTotalSize == 0 {
				r.Status = MessageWasRemoving
			}
			nextPhyFileStart = s.commitLog.rollNextFile(u.phy)
			continue
		}
		if f != nil && !f.MatchByCommitLog(rec, nil) {
			file.release()
			continue
		}
		r.held.add(file)
		r.Records = append(r.Records, rec)
		r.BufferTotalSize += len(rec)
		r.MessageCount++
		r.Status = Found
		nextPhyFileStart = math.MinInt64
	}
	r.NextBeginOffset = next
	r.SuggestPullingFromSlave = maxPhy-maxPhyPulling > memory
	return nil
}

// selectForQueue is commitLog.selectRange for readQueue: the record from its chunk's buffer when
// the chunk is read directly (cold_read.go), else from the mapping, probed.
func (s *Store) selectForQueue(run *coldRun, held *heldFiles, phy int64, size int) ([]byte, *mappedFile, error) {
	if s.cold == nil {
		return s.commitLog.selectRange(phy, size)
	}
	b, f, err := s.commitLog.locateRange(phy, size)
	if err != nil {
		return nil, nil, err
	}
	if rec, ok := s.cold.record(run, held, f, phy, size); ok {
		return rec, f, nil
	}
	if err := probe(b, f.fileName(), phy-f.from); err != nil {
		f.release()
		return nil, nil, err
	}
	return b, f, nil
}

// batchFull is RocketMQ's isTheBatchFull.
func (s *Store) batchFull(size, maxMsgNums, maxPull, total, count int, inMem bool) bool {
	if total == 0 || count == 0 {
		return false
	}
	if count+1 > maxMsgNums || total+size > maxPull {
		return true
	}
	if inMem {
		return total+size > s.cfg.MaxTransferBytesOnMessageInMemory || count > s.cfg.MaxTransferCountOnMessageInMemory-1
	}
	return total+size > s.cfg.MaxTransferBytesOnMessageInDisk || count > s.cfg.MaxTransferCountOnMessageInDisk-1
}

// MaxOffsetInQueue is the next queue offset to be dispatched (0 for an unknown queue).
func (s *Store) MaxOffsetInQueue(topic string, queueID int32) int64 {
	if cq := s.cqs.get(topic, queueID); cq != nil {
		return cq.maxOffset()
	}
	return 0
}

// MinOffsetInQueue is the first queue offset still readable (0 for an unknown queue).
func (s *Store) MinOffsetInQueue(topic string, queueID int32) int64 {
	if cq := s.cqs.get(topic, queueID); cq != nil {
		return cq.minOffset()
	}
	return 0
}

// ErrNotFound is returned (wrapped) when a queue, offset or record does not exist.
var ErrNotFound = errors.New("store: not found")

// CommitLogOffsetInQueue is the physical offset of the record at a queue offset.
func (s *Store) CommitLogOffsetInQueue(topic string, queueID int32, queueOffset int64) (int64, error) {
	u, err := s.unit(topic, queueID, queueOffset)
	if err != nil {
		return 0, err
	}
	return u.phy, nil
}

func (s *Store) unit(topic string, queueID int32, qo int64) (cqUnit, error) {
	cq := s.cqs.get(topic, queueID)
	if cq == nil {
		return cqUnit{}, fmt.Errorf("%w: queue %s/%d", ErrNotFound, topic, queueID)
	}
	if qo < cq.minOffset() || qo >= cq.maxOffset() {
		return cqUnit{}, fmt.Errorf("%w: offset %d of %s/%d outside %d..%d", ErrNotFound, qo, topic, queueID, cq.minOffset(), cq.maxOffset())
	}
	u, ok := cq.unitAt(qo)
	if !ok || u.blank() {
		return cqUnit{}, fmt.Errorf("%w: offset %d of %s/%d has no record", ErrNotFound, qo, topic, queueID)
	}
	return u, nil
}

// MessageStoreTime is the store timestamp of the record at a queue offset.
func (s *Store) MessageStoreTime(topic string, queueID int32, queueOffset int64) (int64, error) {
	u, err := s.unit(topic, queueID, queueOffset)
	if err != nil {
		return 0, err
	}
	ts := s.commitLog.storeTimestampAt(u.phy, u.size)
	if ts < 0 {
		return 0, fmt.Errorf("%w: record at %s", ErrNotFound, s.commitLog.describeOffset(u.phy))
	}
	return ts, nil
}

// EarliestMessageTime is the store timestamp of the first readable record of a queue.
func (s *Store) EarliestMessageTime(topic string, queueID int32) (int64, error) {
	return s.MessageStoreTime(topic, queueID, s.MinOffsetInQueue(topic, queueID))
}

// OffsetInQueueByTime is the first queue offset whose record was stored at or after
// timestampMs (binary search); the max offset when every record is older, the min offset
// when every record is newer, 0 for an unknown queue.
func (s *Store) OffsetInQueueByTime(topic string, queueID int32, timestampMs int64) int64 {
	cq := s.cqs.get(topic, queueID)
	if cq == nil {
		return 0
	}
	lo, hi := cq.minOffset(), cq.maxOffset()
	// Invariant: every offset below lo is older than timestampMs (or unreadable); hi is newer
	// or the end.
	for lo < hi {
		mid := lo + (hi-lo)/2
		ts := s.unitTime(cq, mid)
		if ts < timestampMs {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// unitTime is the store time of the record at qo; fillers and unreadable records count as
// older than anything, so the search moves past them.
func (s *Store) unitTime(cq *consumeQueue, qo int64) int64 {
	u, ok := cq.unitAt(qo)
	if !ok || u.blank() {
		return math.MinInt64
	}
	return s.commitLog.storeTimestampAt(u.phy, u.size)
}

// LookMessageByOffset decodes a copy of the record at a physical offset.
func (s *Store) LookMessageByOffset(phyOffset int64) (*message.MessageExt, error) {
	rec, f, err := s.commitLog.selectRecord(phyOffset)
	if err != nil {
		return nil, lookupErr(err)
	}
	defer f.release()
	return message.DecodeMessage(rec, true)
}

// SelectRecord returns the record at a physical offset without copying; rec is valid until
// release is called (once).
func (s *Store) SelectRecord(phyOffset int64) (rec []byte, release func(), err error) {
	rec, f, err := s.commitLog.selectRecord(phyOffset)
	if err != nil {
		return nil, nil, lookupErr(err)
	}
	var once atomic.Bool
	return rec, func() {
		if once.CompareAndSwap(false, true) {
			f.release()
		}
	}, nil
}

func lookupErr(err error) error {
	if errors.Is(err, errNoRecord) {
		return fmt.Errorf("%w: %w", ErrNotFound, err) // ErrNotVisibleYet stays visible to errors.Is
	}
	return err
}

// QueryMessage finds the records of topic whose KEYS or UNIQ_KEY hold key, stored within
// [beginMs, endMs], up to maxNum (capped by defaultQueryMaxNum), newest index files first.
// Index hash collisions are filtered out.
func (s *Store) QueryMessage(topic, key string, maxNum int, beginMs, endMs int64) (*QueryResult, error) {
	if s.index == nil {
		return nil, fmt.Errorf("%w: messageIndexEnable is false", ErrServiceNotAvailable)
	}
	maxNum = min(max(maxNum, 1), s.cfg.DefaultQueryMaxNum)
	offs, ts, phy := s.index.query(topic, key, maxNum, beginMs, endMs)
	r := &QueryResult{IndexLastUpdateTimestamp: ts, IndexLastUpdatePhyoffset: phy}
	var fault error
	for _, off := range offs {
		rec, f, err := s.commitLog.selectRecord(off)
		if errors.Is(err, ErrReadFault) && fault == nil {
			fault = err
		}
		if err != nil {
			continue
		}
		if !recordHasKey(rec, topic, key) {
			f.release()
			continue
		}
		r.held.files = append(r.held.files, f)
		r.Records = append(r.Records, rec)
	}
	if len(r.Records) == 0 && fault != nil {
		// Every match found was unreadable: say so rather than answer "no such message".
		return nil, fault
	}
	return r, nil
}

// recordHasKey checks that a record belongs to topic and carries key in KEYS or UNIQ_KEY.
func recordHasKey(rec []byte, topic, key string) bool {
	v, err := message.ParseRecord(rec)
	if err != nil || string(v.Topic) != topic {
		return false
	}
	if u, ok := message.PropertyValue(v.Properties, message.PropertyUniqKey); ok && string(u) == key {
		return true
	}
	keys, _ := message.PropertyValue(v.Properties, message.PropertyKeys)
	for k, rest := nextKey(keys); k != nil; k, rest = nextKey(rest) {
		if string(k) == key {
			return true
		}
	}
	return false
}

package ha

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/rocketraft/rocketraft/message"
)

// memLog is an in-memory CommitLog with the store's file rules (records never cross a file, a
// blank record closes a file), for tests of the protocol without disks.
type memLog struct {
	fileSize int64

	mu     sync.Mutex
	base   int64 // offset of data[0]
	data   []byte
	notify chan struct{} // closed at the next append
	failAt int64         // AppendCommitLog fails once the log would pass this (0: never)
}

var _ CommitLog = (*memLog)(nil)

var errMemLog = errors.New("memlog: offset not in the log")

func newMemLog(fileSize int64) *memLog { return &memLog{fileSize: fileSize} }

func (l *memLog) MaxPhyOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.base + int64(len(l.data))
}

func (l *memLog) MinPhyOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.base
}

func (l *memLog) ReadCommitLog(offset int64, maxBytes int) ([]byte, func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.base + int64(len(l.data))
	if offset < l.base || offset > end {
		return nil, nil, fmt.Errorf("%w: %d outside %d..%d", errMemLog, offset, l.base, end)
	}
	n := min(int64(maxBytes), end-offset, l.fileSize-offset%l.fileSize)
	out := append([]byte(nil), l.data[offset-l.base:offset-l.base+n]...)
	return out, func() {}, nil
}

func (l *memLog) AppendCommitLog(offset int64, data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.base + int64(len(l.data))
	if len(l.data) == 0 {
		l.base, end = offset, offset
	}
	if offset != end {
		return fmt.Errorf("memlog: append at %d, the log ends at %d", offset, end)
	}
	if l.failAt > 0 && end+int64(len(data)) > l.failAt {
		return errors.New("memlog: injected append failure")
	}
	l.data = append(l.data, data...)
	l.wakeLocked()
	return nil
}

func (l *memLog) TruncateCommitLog(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset < l.base || offset > l.base+int64(len(l.data)) {
		return fmt.Errorf("%w: truncate at %d", errMemLog, offset)
	}
	l.data = l.data[:offset-l.base]
	return nil
}

func (l *memLog) WaitForNewData(ctx context.Context, after int64) (int64, error) {
	for {
		l.mu.Lock()
		end := l.base + int64(len(l.data))
		if end > after {
			l.mu.Unlock()
			return end, nil
		}
		if l.notify == nil {
			l.notify = make(chan struct{})
		}
		ch := l.notify
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (l *memLog) wakeLocked() {
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
	}
}

// bytes returns a copy of the whole log and its start.
func (l *memLog) bytes() (int64, []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.base, append([]byte(nil), l.data...)
}

// putRecords appends n records of random sizes (and blank records at file ends), as the
// store's put would; seed makes their bytes distinct from another log's.
func (l *memLog) putRecords(n int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	for range n {
		l.putRecord(100+rng.IntN(900), rng)
	}
}

func (l *memLog) putRecord(size int, rng *rand.Rand) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.base + int64(len(l.data))
	if rest := l.fileSize - end%l.fileSize; int64(size)+8 > rest {
		blank := make([]byte, rest)
		binary.BigEndian.PutUint32(blank, uint32(rest))
		blankMagic := message.BlankMagicCode
		binary.BigEndian.PutUint32(blank[4:], uint32(blankMagic))
		l.data = append(l.data, blank...)
	}
	rec := make([]byte, size)
	binary.BigEndian.PutUint32(rec, uint32(size))
	m := message.MessageMagicCode
	binary.BigEndian.PutUint32(rec[4:], uint32(m))
	for i := 8; i < size; i++ {
		rec[i] = byte(rng.Uint32())
	}
	l.data = append(l.data, rec...)
	l.wakeLocked()
}

package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Checkpoint file layout: RocketMQ's five fields, then this store's offsets (RocketMQ reads
// only the first 40 bytes). Wire format: never change.
const (
	checkpointFileSize       = osPageSize
	cpPhysicMsgTimestamp     = 0
	cpLogicsMsgTimestamp     = 8
	cpIndexMsgTimestamp      = 16
	cpMasterFlushedOffset    = 24
	cpConfirmPhyOffset       = 32
	cpPhysicFlushedOffset    = 40
	cpLogicsFlushedOffset    = 48
	cpIndexFlushedOffset     = 56
	checkpointUsedBytes      = 64
	checkpointRocketMQLength = 40
)

// checkpointData is the content of the checkpoint file. The offsets say how far each part
// is known to be durable: the CommitLog up to physicFlushedOffset, the ConsumeQueues for
// every record before logicsFlushedOffset, the index for records up to indexFlushedOffset.
type checkpointData struct {
	physicMsgTimestamp  int64
	logicsMsgTimestamp  int64
	indexMsgTimestamp   int64
	masterFlushedOffset int64
	confirmPhyOffset    int64
	physicFlushedOffset int64
	logicsFlushedOffset int64
	indexFlushedOffset  int64
}

// checkpoint is the checkpoint file, rewritten in place (one 64-byte write, then fdatasync).
type checkpoint struct {
	path    string
	existed bool

	mu   sync.Mutex
	f    *os.File
	data checkpointData
	last checkpointData
}

// openCheckpoint opens or creates the file; existed is false when it was missing or too
// short to hold RocketMQ's fields.
func openCheckpoint(path string) (*checkpoint, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: open checkpoint %s: %w", path, err)
	}
	cp := &checkpoint{path: path, f: f}
	var buf [checkpointUsedBytes]byte
	n, err := f.ReadAt(buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, fmt.Errorf("store: read checkpoint %s: %w", path, err)
	}
	if n >= checkpointRocketMQLength {
		cp.existed = true
		be := binary.BigEndian
		cp.data = checkpointData{
			physicMsgTimestamp:  int64(be.Uint64(buf[cpPhysicMsgTimestamp:])),
			logicsMsgTimestamp:  int64(be.Uint64(buf[cpLogicsMsgTimestamp:])),
			indexMsgTimestamp:   int64(be.Uint64(buf[cpIndexMsgTimestamp:])),
			masterFlushedOffset: int64(be.Uint64(buf[cpMasterFlushedOffset:])),
			confirmPhyOffset:    int64(be.Uint64(buf[cpConfirmPhyOffset:])),
		}
		if n >= checkpointUsedBytes {
			cp.data.physicFlushedOffset = int64(be.Uint64(buf[cpPhysicFlushedOffset:]))
			cp.data.logicsFlushedOffset = int64(be.Uint64(buf[cpLogicsFlushedOffset:]))
			cp.data.indexFlushedOffset = int64(be.Uint64(buf[cpIndexFlushedOffset:]))
		}
		cp.last = cp.data
	}
	if err := f.Truncate(checkpointFileSize); err != nil {
		f.Close()
		return nil, fmt.Errorf("store: size checkpoint %s: %w", path, err)
	}
	return cp, nil
}

// update changes the in-memory fields under the lock.
func (cp *checkpoint) update(fn func(d *checkpointData)) {
	cp.mu.Lock()
	fn(&cp.data)
	cp.mu.Unlock()
}

func (cp *checkpoint) snapshot() checkpointData {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.data
}

// flush writes the fields when they changed and syncs the file.
func (cp *checkpoint) flush() error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.data == cp.last {
		return nil
	}
	var buf [checkpointUsedBytes]byte
	be := binary.BigEndian
	d := cp.data
	for _, fv := range []struct {
		off int
		v   int64
	}{
		{cpPhysicMsgTimestamp, d.physicMsgTimestamp},
		{cpLogicsMsgTimestamp, d.logicsMsgTimestamp},
		{cpIndexMsgTimestamp, d.indexMsgTimestamp},
		{cpMasterFlushedOffset, d.masterFlushedOffset},
		{cpConfirmPhyOffset, d.confirmPhyOffset},
		{cpPhysicFlushedOffset, d.physicFlushedOffset},
		{cpLogicsFlushedOffset, d.logicsFlushedOffset},
		{cpIndexFlushedOffset, d.indexFlushedOffset},
	} {
		be.PutUint64(buf[fv.off:], uint64(fv.v))
	}
	if _, err := cp.f.WriteAt(buf[:], 0); err != nil {
		return fmt.Errorf("store: write checkpoint %s: %w", cp.path, err)
	}
	if err := unix.Fdatasync(int(cp.f.Fd())); err != nil {
		return fmt.Errorf("store: sync checkpoint %s: %w", cp.path, err)
	}
	cp.last = d
	return nil
}

// safeOffset is where abnormal recovery must start checking the CommitLog: everything
// before it is durable in the CommitLog and dispatched durably to the ConsumeQueues (and the
// index, with messageIndexSafe).
func (d checkpointData) safeOffset(indexSafe bool) int64 {
	off := min(d.physicFlushedOffset, d.logicsFlushedOffset)
	if indexSafe {
		off = min(off, d.indexFlushedOffset)
	}
	return max(off, 0)
}

package store

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"golang.org/x/sys/unix"
)

// The hash slots of the index file being written live in memory (indexFile.shadow) and reach the file in
// runs of changed chunks: at every thorough flush, when the file is full, and before a truncation syncs the
// files. Every key writes a slot at random (5,000,000 slots, 4,883 pages); a store through the mapping took a
// write-protect fault on nearly every key once writeback had cleaned the page, and a pwrite per key cost a
// system call per message (7 % of a broker's CPU at 42,000 msgs/s). The file's entries and header are still
// written through the mapping, in order.
//
// A process that dies loses the slots changed since the last write-out; the entries survive in the page cache.
// repairSlots puts them back on the next start by replaying, in order, the entries of the last file for records
// at or after the checkpoint's indexFlushedOffset (at: the offset 0 of a checkpoint written before anything was
// indexed reads the same as the first record's): every slot they touch gets its newest entry, and the chains
// are in the entries themselves. A slot the replay does not touch was last changed by an entry of a record
// before the flushed offset, which the write-out before that checkpoint carried to the file. A power loss loses what the
// mapping held as well, as before: the index is made durable at the thorough flush, the checkpoint after it.

// shadowChunk is the unit in which changed slots are tracked and written: 1,024 slots.
const shadowChunk = 4096

// startShadow moves the slots into memory for writing, copied from the file unless it has no entry yet (a
// slot naming an entry past the count reads as empty, so all of them do then). The caller holds the index lock.
func (f *indexFile) startShadow() {
	if f.shadow != nil {
		return
	}
	n := f.slots * indexSlotSize
	f.shadow = make([]byte, n)
	if f.indexCount() > 1 {
		copy(f.shadow, f.mf.data[indexHeaderSize:indexHeaderSize+n])
	}
	f.dirty = make([]uint64, (n+shadowChunk*64-1)/(shadowChunk*64))
}

// slot returns the head of slot i (the number of its newest entry).
func (f *indexFile) slot(i int) int32 {
	if f.shadow != nil {
		return int32(binary.BigEndian.Uint32(f.shadow[i*indexSlotSize:]))
	}
	return f.u32(indexHeaderSize + int64(i)*indexSlotSize)
}

// setSlot sets the head of slot i: in memory when the file is being written, else through the mapping.
func (f *indexFile) setSlot(i int, v int32) {
	if f.shadow == nil {
		f.put32(indexHeaderSize+int64(i)*indexSlotSize, v)
		return
	}
	off := i * indexSlotSize
	binary.BigEndian.PutUint32(f.shadow[off:], uint32(v))
	c := off / shadowChunk
	f.dirty[c/64] |= 1 << (c % 64)
}

// writeSlots writes the changed chunks of the slots to the file, a run of adjacent chunks with one pwrite. A
// chunk stays marked until its write succeeded. The caller holds the index lock.
func (f *indexFile) writeSlots() error {
	if f.shadow == nil {
		return nil
	}
	chunks := (len(f.shadow) + shadowChunk - 1) / shadowChunk
	for c := 0; c < chunks; {
		if f.dirty[c/64]&(1<<(c%64)) == 0 {
			if w := f.dirty[c/64] >> (c % 64); w == 0 {
				c += 64 - c%64 // nothing more in this word
			} else {
				c += bits.TrailingZeros64(w)
			}
			continue
		}
		end := c
		for end < chunks && f.dirty[end/64]&(1<<(end%64)) != 0 {
			end++
		}
		from, to := c*shadowChunk, min(end*shadowChunk, len(f.shadow))
		off := int64(indexHeaderSize + from)
		if err := pwriteFull(int(f.mf.file.Fd()), f.shadow[from:to], off); err != nil {
			return fmt.Errorf("store: index %s: write slots at %d: %w", f.mf.path, off, err)
		}
		for ; c < end; c++ {
			f.dirty[c/64] &^= 1 << (c % 64)
		}
	}
	return nil
}

// stopShadow writes the slots out and leaves them to the mapping (the file is full). Lock held.
func (f *indexFile) stopShadow() error {
	if err := f.writeSlots(); err != nil {
		return err
	}
	f.shadow, f.dirty = nil, nil
	return nil
}

// repairSlots replays the entries of the file for records at or after flushedPhy (see the top of this file):
// each one becomes the head of its slot. It returns how many it replayed. The caller holds the index lock or
// owns the file; the file has no shadow yet.
func (f *indexFile) repairSlots(flushedPhy int64) int {
	count := f.indexCount()
	// Entries are in physical order: find the first at or past flushedPhy.
	lo, hi := int32(1), count
	for lo < hi {
		mid := lo + (hi-lo)/2
		if f.u64(f.entryPos(mid)+4) >= flushedPhy {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	for n := lo; n < count; n++ {
		f.setSlot(f.slotIndex(f.u32(f.entryPos(n))), n)
	}
	return int(count - lo)
}

// pwriteFull writes all of b at off.
func pwriteFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

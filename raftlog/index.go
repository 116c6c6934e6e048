package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	mmap "github.com/edsrzf/mmap-go"
	"golang.org/x/sys/unix"
)

// Dense index slot layout (doc.go draws it). Wire format: never change.
const (
	slotSize   = 24
	slotPos    = 0
	slotTerm   = 8
	slotLength = 16
	slotType   = 20
	slotKind   = 21
)

// slot is one decoded index slot: where entry i lies and what it is.
type slot struct {
	pos  int64
	term uint64
	size int64
	typ  uint8
	kind uint8
}

func (s slot) empty() bool { return s.size == 0 }

// indexFile is one mapped file of slots, named by the Raft index of its first slot.
type indexFile struct {
	first uint64
	path  string
	f     *os.File
	data  mmap.MMap
	dirty bool // guarded by denseIndex.mu (writers)
}

// denseIndex maps a Raft index to its frame: slot i lies at (i - first) * 24 in the file
// whose first index is i - i % perFile, so GetLog finds an entry with one slot read. Files are
// created sparse and grow one at a time at the end; the writer (the log store's single
// writer) creates and deletes them, readers look slots up concurrently.
type denseIndex struct {
	dir     string
	perFile uint64

	mu    sync.RWMutex
	files map[uint64]*indexFile // by first index
	// maxPut is the highest slot written (guarded by mu); syncedThrough is maxPut as of the
	// last sync: the slots a machine crash is sure to keep (the crash test reads it).
	maxPut        uint64
	syncedThrough atomic.Uint64
}

func openDenseIndex(dir string, perFile uint64) (*denseIndex, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftlog: create %s: %w", dir, err)
	}
	d := &denseIndex{dir: dir, perFile: perFile, files: make(map[uint64]*indexFile)}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("raftlog: read %s: %w", dir, err)
	}
	for _, e := range entries {
		first, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || len(e.Name()) != 20 || first%perFile != 0 || e.IsDir() {
			continue
		}
		f, err := d.mapFile(first, false)
		if err != nil {
			d.close()
			return nil, err
		}
		d.files[first] = f
	}
	return d, nil
}

// mapFile opens (or creates) the file of slots from first, sized and mapped.
func (d *denseIndex) mapFile(first uint64, create bool) (*indexFile, error) {
	path := filepath.Join(d.dir, fmt.Sprintf("%020d", first))
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("raftlog: open index file: %w", err)
	}
	size := int64(d.perFile * slotSize)
	if st, err := f.Stat(); err != nil || st.Size() != size {
		// A file of another size (slots per file changed, or cut short) is made the right
		// size; recovery checks the slots against the CommitLog anyway.
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, fmt.Errorf("raftlog: size index file %s: %w", path, err)
		}
	}
	data, err := mmap.MapRegion(f, int(size), mmap.RDWR, 0, 0)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("raftlog: map index file %s: %w", path, err)
	}
	return &indexFile{first: first, path: path, f: f, data: data}, nil
}

// at returns the slot bytes of i, or nil when its file does not exist. Caller holds mu.
func (d *denseIndex) at(i uint64) []byte {
	f := d.files[i-i%d.perFile]
	if f == nil {
		return nil
	}
	off := (i % d.perFile) * slotSize
	return f.data[off : off+slotSize]
}

// get reads slot i.
func (d *denseIndex) get(i uint64) (slot, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	b := d.at(i)
	if b == nil {
		return slot{}, false
	}
	be := binary.BigEndian
	s := slot{pos: int64(be.Uint64(b[slotPos:])), term: be.Uint64(b[slotTerm:]),
		size: int64(be.Uint32(b[slotLength:])), typ: b[slotType], kind: b[slotKind]}
	return s, !s.empty()
}

// put writes slot i, creating its file when needed. Writer only.
func (d *denseIndex) put(i uint64, s slot) error {
	d.mu.RLock()
	b := d.at(i)
	d.mu.RUnlock()
	if b == nil {
		first := i - i%d.perFile
		f, err := d.mapFile(first, true)
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.files[first] = f
		d.mu.Unlock()
		b = d.at(i)
	}
	err := d.writeMapped(i, func() {
		be := binary.BigEndian
		be.PutUint64(b[slotPos:], uint64(s.pos))
		be.PutUint64(b[slotTerm:], s.term)
		be.PutUint32(b[slotLength:], uint32(s.size))
		b[slotType], b[slotKind] = s.typ, s.kind
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.files[i-i%d.perFile].dirty = true
	d.maxPut = max(d.maxPut, i)
	d.mu.Unlock()
	return nil
}

// writeMapped runs write, a store into the mapped slots of the file holding slot i, and
// returns ErrIndexFault naming the file when the kernel could not back it with a page
// (SIGBUS: no block for a hole of the sparse file on a full disk, a page a failed disk cannot
// read in, a file cut beneath its mapping) instead of letting the fault end the process; the
// slots it covers may then be partly written, and the caller fails the call that wrote them
// (StoreLogs publishes nothing, so a later StoreLogs writes them again; recovery rebuilds the
// index from the frames). Any other panic goes on.
func (d *denseIndex) writeMapped(i uint64, write func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			path := filepath.Join(d.dir, fmt.Sprintf("%020d", i-i%d.perFile))
			err = fmt.Errorf("%w: slot %d of %s: %v", ErrIndexFault, i, path, r)
		}
	}()
	write()
	return nil
}

// clearFrom zeroes the slots from i on and deletes the files after the one holding i. Writer
// only, with no reader looking at those slots.
func (d *denseIndex) clearFrom(i uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.maxPut = min(d.maxPut, max(i, 1)-1)
	var errs []error
	for first, f := range d.files {
		switch {
		case first+d.perFile <= i:
		case first > i || i == first:
			errs = append(errs, d.removeLocked(f))
		default:
			if err := d.writeMapped(i, func() { clear(f.data[(i%d.perFile)*slotSize:]) }); err != nil {
				errs = append(errs, err)
			}
			f.dirty = true
		}
	}
	return errors.Join(errs...)
}

// dropBelow deletes the files whose slots all lie below i. Writer only.
func (d *denseIndex) dropBelow(i uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for first, f := range d.files {
		if first+d.perFile <= i {
			errs = append(errs, d.removeLocked(f))
		}
	}
	return errors.Join(errs...)
}

func (d *denseIndex) removeLocked(f *indexFile) error {
	delete(d.files, f.first)
	_ = f.data.Unmap()
	_ = f.f.Close()
	if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("raftlog: remove index file: %w", err)
	}
	return nil
}

// firstFile is the first index of the lowest file, and false with no file.
func (d *denseIndex) firstFile() (uint64, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if len(d.files) == 0 {
		return 0, false
	}
	keys := make([]uint64, 0, len(d.files))
	for k := range d.files {
		keys = append(keys, k)
	}
	return slices.Min(keys), true
}

// sync makes the written slots durable (msync of the files written since the last sync).
func (d *denseIndex) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, f := range d.files {
		if !f.dirty {
			continue
		}
		if err := unix.Msync(f.data, unix.MS_SYNC); err != nil {
			errs = append(errs, fmt.Errorf("raftlog: sync index file %s: %w", f.path, err))
			continue
		}
		f.dirty = false
	}
	if len(errs) == 0 {
		d.syncedThrough.Store(d.maxPut)
	}
	return errors.Join(errs...)
}

func (d *denseIndex) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.files {
		_ = f.data.Unmap()
		_ = f.f.Close()
	}
	d.files = nil
}

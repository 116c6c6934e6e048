package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// mappedFileQueue is a folder of contiguous fixed-size mapped files named by their first
// offset (RocketMQ MappedFileQueue). Readers take a snapshot of the file list without a lock;
// changes (a new file at the end, files deleted at the front, truncation) copy the list under
// mu. One writer appends at a time (the CommitLog put lock, or the dispatch goroutine for a
// ConsumeQueue); flush and commit each run on one goroutine.
type mappedFileQueue struct {
	// tail is the last element of files (nil with none), set with it by setFiles: last() is one
	// load from the queue's first cache line, where a ConsumeQueue's put went through the slice
	// header and its array to the file (with 8,000 queues each of those a cache miss).
	tail        atomic.Pointer[mappedFile]
	dir         string
	fileSize    int64
	preallocate bool
	// warm files are kept warm: a truncated tail is zeroed by writing zeros (see zeroFrom).
	warm bool
	// adviseWrites maps the part of the last file not written yet MADV_RANDOM (CommitLog
	// files; see mappedFile.adviseUnwritten).
	adviseWrites bool
	flushMode    flushMode
	log          *slog.Logger
	// create makes the file that starts at from; nil means createMappedFile inline.
	create func(path string, from int64) (*mappedFile, error)
	// observer is told of new files, syncs and cuts (Options.SyncObserver); nil: none.
	observer SyncObserver
	// ops writes and syncs the files (Options.FileOps; nil: the system calls).
	ops FileOps

	mu    sync.Mutex
	files atomic.Pointer[[]*mappedFile]
	// retired are deleted files readers may still hold (guarded by mu).
	retired []*mappedFile

	// flushMu and commitMu serialise flushes (flush service, Flush, Close) and commits, so
	// the positions only grow.
	flushMu        sync.Mutex
	commitMu       sync.Mutex
	flushedWhere   atomic.Int64
	committedWhere atomic.Int64
}

func newMappedFileQueue(dir string, fileSize int64, preallocate bool, log *slog.Logger) *mappedFileQueue {
	q := &mappedFileQueue{dir: dir, fileSize: fileSize, preallocate: preallocate, flushMode: flushFdatasync, log: log}
	q.setFiles(nil)
	return q
}

// setFiles makes fs the file list (not modified afterwards), and its last file the tail.
func (q *mappedFileQueue) setFiles(fs []*mappedFile) {
	q.files.Store(&fs)
	var last *mappedFile
	if len(fs) > 0 {
		last = fs[len(fs)-1]
	}
	q.tail.Store(last)
}

// loadOptions say how load treats damaged folders.
type loadOptions struct {
	// repairLast extends or cuts a last file of the wrong size to the configured size.
	repairLast bool
	// repairAll does that for every file and, on a gap in the names, keeps the files after it.
	repairAll bool
}

// load maps the files already in the folder with every position at the file end (recovery
// then sets the real end). It returns the names it had to repair.
func (q *mappedFileQueue) load(opts loadOptions) (repaired []string, err error) {
	entries, err := os.ReadDir(q.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", q.dir, err)
	}
	type named struct {
		name string
		from int64
	}
	var names []named
	for _, e := range entries {
		from, ok := parseOffsetFileName(e.Name())
		if !ok || e.IsDir() {
			q.log.Warn("ignoring a file that is not named by its offset", "dir", q.dir, "name", e.Name())
			continue
		}
		names = append(names, named{e.Name(), from})
	}
	slices.SortFunc(names, func(a, b named) int { return compareInt64(a.from, b.from) })
	for i := 1; i < len(names); i++ {
		if names[i].from == names[i-1].from+q.fileSize {
			continue
		}
		if !opts.repairAll {
			return nil, fmt.Errorf("store: %s: file %s does not follow %s (file size %d)", q.dir, names[i].name, names[i-1].name, q.fileSize)
		}
		q.log.Warn("gap in mapped files, dropping the files before it", "dir", q.dir, "before", names[i-1].name, "after", names[i].name)
		for _, n := range names[:i] {
			repaired = append(repaired, n.name)
			_ = os.Remove(filepath.Join(q.dir, n.name))
		}
		names = names[i:]
		i = 0
	}
	files := make([]*mappedFile, 0, len(names))
	for i, n := range names {
		fix := sizeMustMatch
		if opts.repairAll || (opts.repairLast && i == len(names)-1) {
			fix = sizeRepair
		}
		mf, fixed, err := openMappedFile(filepath.Join(q.dir, n.name), n.from, q.fileSize, fix)
		if err != nil {
			for _, f := range files {
				_ = f.destroy(false)
			}
			return nil, err
		}
		if fixed {
			q.log.Warn("mapped file had the wrong size, resized", "file", mf.path, "size", q.fileSize)
			repaired = append(repaired, n.name)
		}
		mf.setPositions(q.fileSize)
		files = append(files, mf)
	}
	q.setFiles(files)
	return repaired, nil
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// snapshot is the current file list; do not modify it.
func (q *mappedFileQueue) snapshot() []*mappedFile { return *q.files.Load() }

func (q *mappedFileQueue) first() *mappedFile {
	fs := q.snapshot()
	if len(fs) == 0 {
		return nil
	}
	return fs[0]
}

func (q *mappedFileQueue) last() *mappedFile { return q.tail.Load() }

// minOffset is the first offset still on disk, or -1 with no file.
func (q *mappedFileQueue) minOffset() int64 {
	if f := q.first(); f != nil {
		return f.from
	}
	return -1
}

// maxOffset is the readable end (committed position of the last file), 0 with no file.
func (q *mappedFileQueue) maxOffset() int64 {
	if f := q.last(); f != nil {
		return f.from + f.readable()
	}
	return 0
}

// maxWrote is the write end (wrote position of the last file), 0 with no file.
func (q *mappedFileQueue) maxWrote() int64 {
	if f := q.last(); f != nil {
		return f.from + f.wrote.Load()
	}
	return 0
}

// find returns the file holding offset, or nil.
func (q *mappedFileQueue) find(offset int64) *mappedFile {
	fs := q.snapshot()
	if len(fs) == 0 || offset < fs[0].from {
		return nil
	}
	i := (offset - fs[0].from) / q.fileSize
	if i >= int64(len(fs)) {
		return nil
	}
	f := fs[i]
	if offset < f.from || offset >= f.from+f.size {
		return nil
	}
	return f
}

// holdAt returns the file holding offset with a reader reference, or nil when there is none
// or it is being deleted.
func (q *mappedFileQueue) holdAt(offset int64) *mappedFile {
	f := q.find(offset)
	if f == nil || !f.hold() {
		return nil
	}
	return f
}

// lastOrCreate returns the file to append to: the last one if it has room, else a new one
// (at from when the folder is empty, after the last file otherwise). Single writer only.
func (q *mappedFileQueue) lastOrCreate(from int64) (*mappedFile, error) {
	last := q.last()
	if last != nil && !last.isFull() {
		return last, nil
	}
	if last != nil {
		from = last.from + last.size
	}
	return q.newFile(from)
}

// newFile creates the file that starts at from and adds it at the end.
func (q *mappedFileQueue) newFile(from int64) (*mappedFile, error) {
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCreateMappedFile, q.dir, err)
	}
	path := filepath.Join(q.dir, offsetFileName(from))
	var mf *mappedFile
	var err error
	if q.create != nil {
		mf, err = q.create(path, from)
	} else {
		mf, err = createMappedFile(path, from, q.fileSize, q.preallocate)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCreateMappedFile, err)
	}
	if q.observer != nil {
		q.observer.Created(mf.path, mf.size)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	old := q.snapshot()
	if q.adviseWrites {
		if len(old) > 0 {
			old[len(old)-1].adviseWritten()
		}
		mf.adviseUnwritten(0)
	}
	files := make([]*mappedFile, len(old), len(old)+1)
	copy(files, old)
	files = append(files, mf)
	q.setFiles(files)
	return mf, nil
}

// truncate drops everything at and after offset: the file holding it keeps its head (its tail
// is zeroed on disk), later files are deleted. No writer or reader may be active.
func (q *mappedFileQueue) truncate(offset int64) error { return q.truncateTo(offset, true) }

// truncateTo is truncate; zeroTail=false trusts that the tail of the file holding offset is
// zeros already (a CommitLog recovered after a clean Close), sparing the rewrite of a warm
// file's tail.
func (q *mappedFileQueue) truncateTo(offset int64, zeroTail bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	files := q.snapshot()
	var firstErr error
	// The files after the cut go first, the last one first: a crash part way leaves the
	// folder without a gap (recovery then cuts what is left past the end).
	n := len(files)
	for n > 0 && files[n-1].from > offset {
		if err := files[n-1].destroy(true); err != nil && firstErr == nil {
			firstErr = err
		}
		n--
	}
	keep := slices.Clone(files[:n])
	if n > 0 {
		if f := keep[n-1]; offset < f.from+f.size {
			pos := offset - f.from
			if q.observer != nil {
				q.observer.Cut(f.path, pos)
			}
			if zeroTail {
				if err := f.zeroFrom(pos, q.warm); err != nil && firstErr == nil {
					firstErr = err
				}
			}
			f.setPositions(pos)
			if q.adviseWrites {
				f.adviseUnwritten(pos)
			}
			f.cutPopulated(pos)
		}
	}
	q.setFiles(keep)
	if q.flushedWhere.Load() > offset {
		q.flushedWhere.Store(offset)
	}
	if q.committedWhere.Load() > offset {
		q.committedWhere.Store(offset)
	}
	return firstErr
}

// deleteFirst deletes files from the front while expired(f) says so, never the last file,
// at most maxBatch of them; pause runs between two deletions and false from it stops.
// expired runs with a reference held on f, so it may read f's data even while another
// goroutine deletes the file.
func (q *mappedFileQueue) deleteFirst(expired func(*mappedFile) bool, maxBatch int, pause func() bool) int {
	deleted := 0
	for deleted < maxBatch {
		fs := q.snapshot()
		if len(fs) < 2 {
			break
		}
		if !fs[0].hold() {
			// Being deleted by someone else: look again once they are done.
			q.mu.Lock()
			cur := q.snapshot()
			q.mu.Unlock()
			if len(cur) > 0 && cur[0] == fs[0] {
				break
			}
			continue
		}
		ok := expired(fs[0])
		fs[0].release()
		if !ok {
			break
		}
		q.mu.Lock()
		cur := q.snapshot()
		if len(cur) < 2 || cur[0] != fs[0] {
			q.mu.Unlock()
			continue
		}
		rest := slices.Clone(cur[1:])
		q.setFiles(rest)
		q.retired = append(q.retired, fs[0])
		q.mu.Unlock()
		if err := fs[0].destroy(true); err != nil {
			q.log.Warn("deleting expired file", "file", fs[0].path, "err", err)
		}
		q.log.Info("deleted file", "file", fs[0].path)
		deleted++
		if pause != nil && !pause() {
			break
		}
	}
	return deleted
}

// hangingFiles forgets the deleted files already unmapped and names those still held by
// readers longer than d after their deletion.
func (q *mappedFileQueue) hangingFiles(d time.Duration) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	keep := q.retired[:0]
	for _, f := range q.retired {
		if f.cleaned.Load() {
			continue
		}
		keep = append(keep, f)
		if f.hanging(d) {
			out = append(out, f.path)
		}
	}
	clear(q.retired[len(keep):])
	q.retired = keep
	return out
}

// flush makes the committed bytes durable, file after file, honouring leastPages on the last
// one. It returns the flushed offset.
func (q *mappedFileQueue) flush(leastPages int) (int64, error) {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	for {
		where := q.flushedWhere.Load()
		f := q.find(where)
		if f == nil {
			if first := q.first(); first != nil && where < first.from {
				q.flushedWhere.Store(first.from)
				continue
			}
			return where, nil
		}
		before := f.flushed.Load()
		pos, err := f.flush(leastPages, q.flushMode, q.ops)
		if err != nil {
			return where, err
		}
		if q.observer != nil && pos > before {
			q.observer.Synced(f.path, pos)
		}
		next := f.from + pos
		if next <= where {
			return where, nil
		}
		q.flushedWhere.Store(next)
		if pos < f.size {
			return next, nil
		}
	}
}

// commit copies pool-buffered writes into the files (transient pool only).
func (q *mappedFileQueue) commit(leastPages int) int64 {
	q.commitMu.Lock()
	defer q.commitMu.Unlock()
	return q.commitLocked(leastPages)
}

// commitLocked is commit with commitMu held.
func (q *mappedFileQueue) commitLocked(leastPages int) int64 {
	for {
		where := q.committedWhere.Load()
		f := q.find(where)
		if f == nil {
			if first := q.first(); first != nil && where < first.from {
				q.committedWhere.Store(first.from)
				continue
			}
			return where
		}
		next := f.from + f.commit(leastPages)
		if next <= where {
			return where
		}
		q.committedWhere.Store(next)
		if next < f.from+f.size {
			return next
		}
	}
}

// lastFlushTimestamp is the store time of the last record made durable.
func (q *mappedFileQueue) lastFlushTimestamp() int64 {
	if f := q.find(max(q.flushedWhere.Load()-1, 0)); f != nil {
		return f.lastFlushTimestamp.Load()
	}
	return 0
}

// close unmaps every file (at once for files no reader holds, otherwise at the last release).
func (q *mappedFileQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, f := range q.snapshot() {
		_ = f.destroy(false)
	}
	q.setFiles(nil)
}

// dropAll deletes every file of the queue; the folder and anything else in it stay (a file
// the allocate service made ahead, for one).
func (q *mappedFileQueue) dropAll() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var firstErr error
	for _, f := range q.snapshot() {
		if err := f.destroy(true); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	q.setFiles(nil)
	return firstErr
}

// destroyAll deletes every file and the folder.
func (q *mappedFileQueue) destroyAll() error {
	err := q.dropAll()
	if rmErr := os.RemoveAll(q.dir); rmErr != nil && err == nil {
		err = rmErr
	}
	return err
}

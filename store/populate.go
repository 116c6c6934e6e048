package store

import "context"

// defaultPopulateAhead is how far ahead of the writes the populate service keeps the pages of
// the file being written through the mapping faulted in (see Config.populateAheadBytes): more
// than a second of writes at a broker's rate, and enough that the store's own benchmark
// (AsyncPutVsWrite, one writer at over 1 GB/s) rarely outruns it. The pages it faults in are
// dirty zeros until the records land in them, so this CommitLog is flushed with msync of the
// written range, not fdatasync, which would write the zeros ahead too.
const defaultPopulateAhead = 16 << 20

// populateTo faults the pages of [populated, to) in writable (prefault: one
// MADV_POPULATE_WRITE per chunk, zeros written over the holes where the kernel refuses it)
// and moves the populate frontier there. The bytes do not change.
func (f *mappedFile) populateTo(from, to int64) error {
	to = min(to, f.size)
	f.warmMu.Lock()
	defer f.warmMu.Unlock()
	from = max(from, f.populated.Load())
	from &^= osPageSize - 1
	for from < to {
		end := min(from+warmChunk, to)
		if err := f.prefault(from, end); err != nil {
			return err
		}
		f.populated.Store(end)
		from = end
	}
	return nil
}

// cutPopulated moves the populate frontier back to pos after a cut there: the zeroing of the
// tail dropped those pages, and the writes after pos must find them faulted in again.
func (f *mappedFile) cutPopulated(pos int64) {
	f.warmMu.Lock()
	defer f.warmMu.Unlock()
	if f.populated.Load() > pos {
		f.populated.Store(pos)
	}
}

// runPopulate is the populate service (ASYNC_FLUSH, copies into the mapping): woken by the
// writers when the write position comes within half of populateAhead of the last file's
// populate frontier, it moves the frontier to populateAhead past the write position, so the
// copies find their pages mapped writable instead of faulting them in (and allocating their
// blocks) under the put lock.
func (s *Store) runPopulate(ctx context.Context) {
	c := s.commitLog
	s.serveLastFile(ctx, func(f *mappedFile) {
		if wrote := f.wrote.Load(); wrote < f.size && !f.populateFailed.Load() {
			if err := f.populateTo(wrote, chunkEnd(wrote+c.populateAhead, f.size)); err != nil {
				f.populateFailed.Store(true)
				s.log.Warn("could not fault in the commitlog ahead of the writes; its writes fault their pages in themselves",
					"file", f.path, "err", err)
			}
		}
	})
}

// wakePopulateLocked wakes the populate service when a write that ends at end in f has come
// within half of populateAhead of f's populate frontier. Put lock held, and the write
// published: the service moves the frontier from the write position it reads.
func (c *commitLog) wakePopulateLocked(f *mappedFile, end int64) {
	if c.populateAhead > 0 && !f.populateFailed.Load() {
		c.wakeAheadLocked(f, end, c.populateAhead, f.populated.Load())
	}
}

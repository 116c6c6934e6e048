package store

// SyncObserver is told what the store makes durable in its CommitLog and ConsumeQueue files,
// file by file, so a test harness can later cut the files back to what a power loss could
// have left (internal/powerloss journals the calls; store/doc.go, "Power loss", says what is
// modelled). The files are fixed-size and written from the front, so what a sync made
// durable is one number per file: the watermark.
//
// Calls come from the store's goroutines (flush services, dispatch, the writers, Open's
// recovery), concurrently for different files; they must be quick and must not call into
// the store. A call happens after the file operation it reports and before the store
// acknowledges anything that depends on it. Paths are absolute.
type SyncObserver interface {
	// Created: the file at path was made (or emptied) with size bytes, nothing of it durable
	// but zeros (watermark 0).
	Created(path string, size int64)
	// Synced: every byte the store wrote to [0, n) of the file before the sync began is
	// durable (watermark n).
	Synced(path string, n int64)
	// Cut: the store cut the file at n (truncation; the bytes after n are zeroed): its
	// watermark is at most n.
	Cut(path string, n int64)
}

// reportAllSynced tells the observer that every CommitLog and ConsumeQueue file is durable
// up to its write position (after Open's syncfs of a crashed store's folders; the bytes
// after the write positions are zeros, recovery cut them).
func (s *Store) reportAllSynced() {
	obs := s.opts.SyncObserver
	if obs == nil {
		return
	}
	for _, f := range s.commitLog.q.snapshot() {
		obs.Synced(f.path, f.wrote.Load())
	}
	for _, cq := range s.cqs.all() {
		for _, f := range cq.q.snapshot() {
			obs.Synced(f.path, f.wrote.Load())
		}
	}
}

package powerloss

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// FileName is the journal's name in the store's root folder.
const FileName = "powerloss.journal"

// EnvVar is the environment variable that makes mqbroker journal its syncs (any value but
// empty or "0"): the chaos suite sets it on the brokers it may cut. An absolute path names
// the journal file (JournalPath); any other value puts it in the store's root.
const EnvVar = "ROCKETRAFT_POWERLOSS_JOURNAL"

// Enabled reports whether EnvVar asks for a journal.
func Enabled() bool {
	v := os.Getenv(EnvVar)
	return v != "" && v != "0"
}

// JournalPath is where the journal of the store folder root goes: EnvVar's value when it is
// an absolute path, else root/FileName. The chaos suite keeps it off a disk its disk faults
// fail or fill (a torn or lost line would make the journal unreadable, and the journal is the
// harness's record, not the store's data).
func JournalPath(root string) string {
	if v := os.Getenv(EnvVar); filepath.IsAbs(v) {
		return v
	}
	return filepath.Join(root, FileName)
}

// Journal appends a store's sync events to root/powerloss.journal (doc.go). It satisfies
// store.SyncObserver. Safe for concurrent use; events after Close are dropped.
//
// It also keeps every file's watermark in memory and, every compactEvery events, rewrites the
// journal as one "sync" line per file (to a temporary file renamed over it, so a SIGKILL
// leaves the old journal or the new one), so a long run with SYNC_FLUSH (an event per flush)
// does not grow it without bound.
type Journal struct {
	root string
	path string

	mu struct {
		sync.Mutex
		f      *os.File
		buf    []byte
		marks  map[string]int64 // watermark by journaled path
		events int              // appended since the last compaction
		err    error            // the first write error, returned by Close
	}
}

// compactEvery is how many events the journal takes between two compactions.
const compactEvery = 1 << 16

// Open opens (or creates) the journal of the store folder root, root/FileName, keeping what an
// earlier run of the store journaled (compacted).
func Open(root string) (*Journal, error) { return OpenAt(root, filepath.Join(root, FileName)) }

// OpenAt is Open with the journal at path.
func OpenAt(root, path string) (*Journal, error) {
	for _, dir := range []string{root, filepath.Dir(path)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("powerloss: create %s: %w", dir, err)
		}
	}
	j := &Journal{root: root, path: path}
	marks, err := readJournal(j.path)
	switch {
	case errors.Is(err, ErrNoJournal):
		marks = map[string]int64{}
	case err != nil:
		return nil, err
	}
	j.mu.marks = marks
	if err := j.compactLocked(); err != nil {
		return nil, err
	}
	return j, nil
}

// compactLocked rewrites the journal from marks and reopens it for appending. mu held (or j
// not shared yet).
func (j *Journal) compactLocked() error {
	if j.mu.f != nil {
		j.mu.f.Close()
		j.mu.f = nil
	}
	var lines []byte
	for _, rel := range slices.Sorted(maps.Keys(j.mu.marks)) {
		lines = fmt.Appendf(lines, "sync %d %s\n", j.mu.marks[rel], rel)
	}
	if err := rewrite(j.path, lines); err != nil {
		return err
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("powerloss: open journal: %w", err)
	}
	j.mu.f, j.mu.events = f, 0
	return nil
}

// Created records that the file at path was made, or emptied, with size bytes.
func (j *Journal) Created(path string, size int64) { j.event("create", size, path) }

// Synced records that the first n bytes of the file at path are durable.
func (j *Journal) Synced(path string, n int64) { j.event("sync", n, path) }

// Cut records that the file at path was cut at n: its watermark is at most n.
func (j *Journal) Cut(path string, n int64) { j.event("cut", n, path) }

func (j *Journal) event(kind string, n int64, path string) {
	rel, err := filepath.Rel(j.root, path)
	if err != nil || !filepath.IsLocal(rel) {
		rel = path // outside the root: kept absolute, Cut still finds it
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.mu.f == nil {
		return
	}
	b := append(j.mu.buf[:0], kind...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, n, 10)
	b = append(b, ' ')
	b = append(b, filepath.ToSlash(rel)...)
	b = append(b, '\n')
	j.mu.buf = b
	if _, err := j.mu.f.Write(b); err != nil && j.mu.err == nil {
		j.mu.err = fmt.Errorf("powerloss: write journal: %w", err)
	}
	rel = filepath.ToSlash(rel)
	apply(j.mu.marks, kind, n, rel)
	if j.mu.events++; j.mu.events >= compactEvery {
		if err := j.compactLocked(); err != nil && j.mu.err == nil {
			j.mu.err = err
		}
	}
}

// Close closes the journal file; it returns the first write error, if any.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.mu.f == nil {
		return nil
	}
	err := j.mu.f.Close()
	j.mu.f = nil
	if j.mu.err != nil {
		return j.mu.err
	}
	return err
}

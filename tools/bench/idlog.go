package bench

import (
	"bufio"
	"fmt"
	"os"
	"sync"
)

// idLog writes message ids to a file, one per line (--ids, official client only): the producer the client
// id (UNIQ_KEY) of every message answered SEND_OK, the consumer that of every message consumed, so a
// script can check that every acknowledged message was consumed (scripts/deploy-local.sh compares the
// sorted files). A nil idLog writes nothing.
type idLog struct {
	mu   sync.Mutex
	path string
	f    *os.File
	w    *bufio.Writer
	err  error // the first write error
}

// openIDLog creates (truncates) path; nil, nil when path is empty.
func openIDLog(path string) (*idLog, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--ids: %w", err)
	}
	return &idLog{path: path, f: f, w: bufio.NewWriter(f)}, nil
}

// add writes the ids.
func (l *idLog) add(ids ...string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		if _, err := l.w.WriteString(id + "\n"); err != nil && l.err == nil {
			l.err = err
		}
	}
	if err := l.w.Flush(); err != nil && l.err == nil { // a script reads the file while the run goes on
		l.err = err
	}
}

// close flushes and closes the file and returns the first error.
func (l *idLog) close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.w.Flush(); err != nil && l.err == nil {
		l.err = err
	}
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = err
	}
	if l.err != nil {
		return fmt.Errorf("--ids %s: %w", l.path, l.err)
	}
	return nil
}

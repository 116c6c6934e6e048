package broker

import (
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

// nextVersion moves d after a change at now: timestamp now, counter + 1 (DataVersion.nextVersion).
func nextVersion(d *protocol.DataVersion, now time.Time) {
	d.Timestamp = now.UnixMilli()
	d.Counter++
}

// versionedTable is a name -> config table with a DataVersion that moves on every change: the shape
// shared by topics.json and subscriptionGroup.json. Values are copied in and out, so callers never
// share a pointer with the table.
type versionedTable[T any] struct {
	mu      sync.RWMutex
	table   map[string]*T        // guarded by mu
	version protocol.DataVersion // guarded by mu
}

func newVersionedTable[T any]() versionedTable[T] {
	return versionedTable[T]{table: map[string]*T{}}
}

// get returns a copy of name's value, or nil.
func (t *versionedTable[T]) get(name string) *T {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.table[name]
	if !ok {
		return nil
	}
	c := *v
	return &c
}

// put stores a copy of v under name and moves the version.
func (t *versionedTable[T]) put(name string, v *T) {
	c := *v
	t.mu.Lock()
	t.table[name] = &c
	nextVersion(&t.version, time.Now())
	t.mu.Unlock()
}

// putIfAbsent stores mk() under name unless name exists; it returns a copy of the value now there and
// whether it was created.
func (t *versionedTable[T]) putIfAbsent(name string, mk func() *T) (*T, bool) {
	if v := t.get(name); v != nil {
		return v, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.table[name]
	if !ok {
		v = mk()
		t.table[name] = v
		nextVersion(&t.version, time.Now())
	}
	c := *v
	return &c, !ok
}

// remove deletes name and reports whether it existed.
func (t *versionedTable[T]) remove(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.table[name]; !ok {
		return false
	}
	delete(t.table, name)
	nextVersion(&t.version, time.Now())
	return true
}

// load merges loaded values (nil ones skipped) over the table and takes the loaded version.
func (t *versionedTable[T]) load(values map[string]*T, version protocol.DataVersion) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range values {
		if v != nil {
			t.table[k] = v
		}
	}
	t.version = version
}

// snapshot returns a deep copy of the table and its version.
func (t *versionedTable[T]) snapshot() (map[string]*T, protocol.DataVersion) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string]*T, len(t.table))
	for k, v := range t.table {
		c := *v
		out[k] = &c
	}
	return out, t.version
}

// runEvery calls fn every interval on a goroutine tracked by wg, until stop is closed.
func runEvery(stop <-chan struct{}, wg *sync.WaitGroup, interval time.Duration, fn func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// size is the number of entries.
func (t *versionedTable[T]) size() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.table)
}

package broker

import (
	"log/slog"
	"strings"
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
	// changed names the entries put since the last takeChanges, nil when the table does not track
	// its changes (trackChanges; the topic table does, for incremental registration); dropped says an
	// entry was removed or the table replaced since then. Guarded by mu.
	changed map[string]struct{}
	dropped bool
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

// lookup returns a copy of name's value by value (nothing allocated: the send path asks for every message).
func (t *versionedTable[T]) lookup(name string) (T, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if v, ok := t.table[name]; ok {
		return *v, true
	}
	var zero T
	return zero, false
}

// put stores a copy of v under name and moves the version.
func (t *versionedTable[T]) put(name string, v *T) {
	c := *v
	name = strings.Clone(name) // not the request's bytes: the keys outlive it
	t.mu.Lock()
	t.table[name] = &c
	t.noteLocked(name)
	nextVersion(&t.version, time.Now())
	t.mu.Unlock()
}

// nextVersionAt is the version the next change made at now gives the table (what put would set). A
// classic master writes it into the change's record before it makes the change (putAt, removeAt), so its
// slaves take the same version (ha_meta.go).
func (t *versionedTable[T]) nextVersionAt(now time.Time) protocol.DataVersion {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v := t.version
	nextVersion(&v, now)
	return v
}

// putAt stores a copy of v under name and takes version as the table's.
func (t *versionedTable[T]) putAt(name string, v *T, version protocol.DataVersion) {
	c := *v
	name = strings.Clone(name)
	t.mu.Lock()
	t.table[name] = &c
	t.noteLocked(name)
	t.version = version
	t.mu.Unlock()
}

// removeAt deletes name, takes version as the table's (whether or not name was there) and reports whether
// name existed.
func (t *versionedTable[T]) removeAt(name string, version protocol.DataVersion) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.table[name]
	if ok {
		delete(t.table, name)
		t.dropped = true
	}
	t.version = version
	return ok
}

// currentVersion is the table's version.
func (t *versionedTable[T]) currentVersion() protocol.DataVersion {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.version
}

// noteLocked records a change of name for takeChanges. Lock should be held for writing.
func (t *versionedTable[T]) noteLocked(name string) {
	if t.changed != nil {
		t.changed[name] = struct{}{}
	}
}

// trackChanges makes the table record its changes for takeChanges.
func (t *versionedTable[T]) trackChanges() {
	t.mu.Lock()
	t.changed = map[string]struct{}{}
	t.mu.Unlock()
}

// takeChanges returns copies of the entries put since the last call (those still present), the version
// that counts them, and whether an entry was removed or the table replaced meanwhile (then only the whole
// table tells the change); it starts the next round of recording. Changes and version are read under one
// lock, so every change the version counts is in this answer or an earlier one.
func (t *versionedTable[T]) takeChanges() (map[string]*T, protocol.DataVersion, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]*T, len(t.changed))
	for name := range t.changed {
		if v, ok := t.table[name]; ok {
			c := *v
			out[name] = &c
		}
	}
	dropped := t.dropped
	if t.changed != nil {
		t.changed = map[string]struct{}{}
	}
	t.dropped = false
	return out, t.version, dropped
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
		name = strings.Clone(name)
		t.table[name] = v
		t.noteLocked(name)
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
	t.dropped = true
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
	t.dropped = true
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

// applyPut stores a copy of v under name (with create only when name is absent), persists the table when
// it changed, and returns a copy of the value now there.
func (t *versionedTable[T]) applyPut(name string, v *T, create bool, persist func() error, lg *slog.Logger) *T {
	got, changed := v, true
	if create {
		got, changed = t.putIfAbsent(name, func() *T { c := *v; return &c })
	} else {
		t.put(name, v)
	}
	if changed {
		if err := persist(); err != nil {
			lg.Error("raft: persist applied metadata", "name", name, "err", err)
		}
	}
	return got
}

// applyRemove deletes name, persists the table when it held it, and reports whether it did.
func (t *versionedTable[T]) applyRemove(name string, persist func() error, lg *slog.Logger) bool {
	if !t.remove(name) {
		return false
	}
	if err := persist(); err != nil {
		lg.Error("raft: persist applied metadata", "name", name, "err", err)
	}
	return true
}

// replace swaps the contents for copies of values (nil ones skipped); the version moves.
func (t *versionedTable[T]) replace(values map[string]*T) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.table = map[string]*T{}
	for k, v := range values {
		if v != nil {
			c := *v
			t.table[k] = &c
		}
	}
	t.dropped = true
	t.version.Counter++
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

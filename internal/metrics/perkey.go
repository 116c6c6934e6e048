package metrics

import "sync"

// PerKey is a table of counter sets keyed by K (a topic, a request code), for counting on a hot path: Get of
// a key seen before is one lock-free sync.Map read, and V is meant to be a struct of atomics (or one
// atomic) that the caller adds to. A new key costs one allocation and a short lock, once. The zero value
// is ready to use; every method may be called concurrently.
type PerKey[K comparable, V any] struct {
	m sync.Map // K -> *V
}

// Get returns the counters of k, creating them (zero) on first use. The pointer stays valid, and keeps
// counting, even after Delete; a Get after Delete starts from zero.
func (p *PerKey[K, V]) Get(k K) *V {
	if v, ok := p.m.Load(k); ok {
		return v.(*V)
	}
	v, _ := p.m.LoadOrStore(k, new(V))
	return v.(*V)
}

// Range calls f for every key until f returns false, in no particular order (sync.Map.Range's guarantees).
func (p *PerKey[K, V]) Range(f func(k K, v *V) bool) {
	p.m.Range(func(k, v any) bool { return f(k.(K), v.(*V)) })
}

// Delete forgets k (a deleted topic, so that its series go away).
func (p *PerKey[K, V]) Delete(k K) { p.m.Delete(k) }

// Lookup returns the counters of k without creating them; ok is false when k has none.
func (p *PerKey[K, V]) Lookup(k K) (v *V, ok bool) {
	x, ok := p.m.Load(k)
	if !ok {
		return nil, false
	}
	return x.(*V), true
}

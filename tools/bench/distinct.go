package bench

import (
	"slices"
	"sync"
)

// queueKey names one consume queue: a message is identified by its queue and its offset in it, which stay
// the same when a message is delivered again (a rebalance, an offset committed late, a slave read after a
// failover), so a consumer counts each message once and the repeats apart.
type queueKey struct {
	topic  string
	broker string // the broker name; the store host when the client did not say
	queue  int
}

// distinct remembers which queue offsets a consumer run has counted. Per queue it keeps the offsets seen as
// sorted, disjoint half-open ranges: a queue read in order is one range, whatever the number of messages,
// so memory grows with the gaps in what was delivered, not with the messages. Safe for concurrent use.
type distinct struct {
	mu     sync.Mutex
	queues map[queueKey]*offsetRanges
}

func newDistinct() *distinct {
	return &distinct{queues: make(map[queueKey]*offsetRanges)}
}

// add records offset in q and reports whether it is new (false: counted before, a duplicate).
func (d *distinct) add(q queueKey, offset int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.queues[q]
	if r == nil {
		r = &offsetRanges{}
		d.queues[q] = r
	}
	return r.add(offset)
}

// offsetRanges is a set of int64 held as sorted, disjoint, non-adjacent ranges [lo, hi).
type offsetRanges struct {
	r [][2]int64
}

// add inserts v and reports whether it was absent.
func (s *offsetRanges) add(v int64) bool {
	// i: the first range that ends after v (hi > v).
	i, _ := slices.BinarySearchFunc(s.r, v, func(r [2]int64, v int64) int {
		if r[1] <= v {
			return -1
		}
		return 1
	})
	if i < len(s.r) && s.r[i][0] <= v {
		return false // inside range i
	}
	joinsPrev := i > 0 && s.r[i-1][1] == v
	joinsNext := i < len(s.r) && s.r[i][0] == v+1
	switch {
	case joinsPrev && joinsNext:
		s.r[i-1][1] = s.r[i][1]
		s.r = slices.Delete(s.r, i, i+1)
	case joinsPrev:
		s.r[i-1][1] = v + 1
	case joinsNext:
		s.r[i][0] = v
	default:
		s.r = slices.Insert(s.r, i, [2]int64{v, v + 1})
	}
	return true
}

// ranges returns how many ranges the set holds (for tests).
func (s *offsetRanges) ranges() int { return len(s.r) }

package remoting

import (
	"sync"
	"sync/atomic"
	"time"
)

// Large request frames whose handler keeps nothing of them (RegisterTransient) are read into memory used
// before. A name server in front of 300 brokers receives each one's topic table, about 200 KB, every 30
// seconds, all at the same moment: left to the garbage collector that was 60 MB allocated in a burst, which
// set off a collection during it more often than not, and on the name server's one core the collection's
// assists and the burst's page faults came on top of the burst itself: route queries due in it waited about
// 200 ms where they waited about 50 in a burst without a collection (mqbench namesrv, docs/bench/namesrv.md).
//
// A frameCache keeps up to maxBytes of such frames' memory between uses, shared by a server's connections.
// Frames from largeFrameMin to readChunk bytes take part; smaller ones cost the collector little and larger
// ones are read in growing pieces (readFrame). A buffer is never handed out for a frame less than half its
// size, so one large table does not pin memory for small ones.
//
// Turns. While the cache is active a connection waits for a turn before it reads a frame that takes part,
// and the turn ends when the frame's handler has answered (a transient route: Server.recycle) or when the
// request goes to a route that is not transient (the handler may keep the memory). At most frameTurns large
// frames are then read or handled at once, so a burst of 300 tables is read into the same few buffers (the
// cache serves them all: nothing for the collector) instead of 300 at once (60 MB, most of it garbage the
// next moment, whose collection a minute later cost route queries 30 to 60 ms on a one-core name server:
// docs/bench/namesrv.md), and the readers of a burst wait parked, not runnable ahead of the route queries.
// A peer slow to send its frame does not keep a turn: after turnSlice it reads the rest outside the
// turns (Conn.readLarge), so a connection that announces a table and sends it byte by byte cannot hold the
// other brokers' registrations back by more than turnSlice each.

const (
	largeFrameMin    = 64 << 10
	frameGranule     = 16 << 10 // capacities are rounded up to this, so that similar sizes share buffers
	frameCacheMaxDef = 16 << 20
	frameTurns       = 2                     // large frames read or handled at once (above)
	turnSlice        = 50 * time.Millisecond // how long a turn waits for a slow peer's frame
)

type frameCache struct {
	// active: the server has a transient route (RegisterTransient). Until then get hands out nothing, so
	// that a server whose frames never come back (a broker's large sends) allocates them as before.
	active   atomic.Bool
	mu       sync.Mutex
	bufs     [][]byte // free buffers, each of len 0 and its own capacity
	bytes    int      // the sum of their capacities
	maxBytes int
	hits     uint64        // frames read into a kept buffer (tests)
	turns    chan struct{} // a token per turn taken (above); capacity frameTurns
	waiting  atomic.Int32  // readers waiting for a turn (tests)
	taken    atomic.Int32  // turns taken so far (tests)
}

func newFrameCache(maxBytes int) *frameCache {
	return &frameCache{maxBytes: maxBytes, turns: make(chan struct{}, frameTurns)}
}

// takesPart reports whether a frame of size bytes is read in a turn into the cache's memory.
func (fc *frameCache) takesPart(size int) bool {
	return fc != nil && size >= largeFrameMin && size <= readChunk && fc.active.Load()
}

// takeTurn waits for a turn, first come first served; false when done closed first.
func (fc *frameCache) takeTurn(done <-chan struct{}) bool {
	select {
	case fc.turns <- struct{}{}:
		fc.taken.Add(1)
		return true
	default:
	}
	fc.waiting.Add(1)
	defer fc.waiting.Add(-1)
	select {
	case fc.turns <- struct{}{}:
		fc.taken.Add(1)
		return true
	case <-done:
		return false
	}
}

// endTurn ends a turn taken with takeTurn.
func (fc *frameCache) endTurn() { <-fc.turns }

// get returns a slice of len size for a frame: the smallest kept buffer that fits, or a new one. It is nil
// for a size that does not take part, or while the cache is not active (the caller allocates as before).
func (fc *frameCache) get(size int) []byte {
	if fc == nil || size < largeFrameMin || size > readChunk || !fc.active.Load() {
		return nil
	}
	fc.mu.Lock()
	best := -1
	for i, b := range fc.bufs {
		if c := cap(b); c >= size && c <= 2*size && (best < 0 || c < cap(fc.bufs[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := fc.bufs[best]
		last := len(fc.bufs) - 1
		fc.bufs[best] = fc.bufs[last]
		fc.bufs[last] = nil
		fc.bufs = fc.bufs[:last]
		fc.bytes -= cap(b)
		fc.hits++
		fc.mu.Unlock()
		return b[:size]
	}
	fc.mu.Unlock()
	return make([]byte, size, (size+frameGranule-1)/frameGranule*frameGranule)
}

// put keeps b for a later frame, unless the cache is full. b must come from get and nothing may refer to
// its memory any more.
func (fc *frameCache) put(b []byte) {
	if fc == nil || cap(b) < largeFrameMin || cap(b) > readChunk+frameGranule {
		return
	}
	fc.mu.Lock()
	if fc.bytes+cap(b) <= fc.maxBytes {
		fc.bufs = append(fc.bufs, b[:0])
		fc.bytes += cap(b)
	}
	fc.mu.Unlock()
}

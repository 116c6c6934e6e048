package pop

import "context"

// Where a group's pops of a queue read, and its committed pop offset (doc.go, "The pop offset"). A pop reads
// from the queue's cursor, in memory; the offset table holds the committed pop offset, which passes a pop
// only once it and every pop before it on the queue are settled (ckState.settled). A value in the table that
// the engine did not commit (an admin's offset reset, the lift of a load, the first use in a term) moves the
// cursor there.

// cursor is where the next pop of the queue reads, -1 when the term of epoch is over. qs.pop must be held.
func (s *Engine) cursor(epoch uint64, qs *queueState, initMode int32) int64 {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.epoch != epoch {
		return -1
	}
	gq := qs.gq
	tbl := s.o.Offsets.Query(gq.Group, gq.Topic, gq.QueueID)
	if qs.known && tbl == qs.committed {
		return qs.cursor
	}
	if qs.known {
		s.o.Log.Info("pop offset set from outside: pops read from there", "group", gq.Group, "topic", gq.Topic,
			"queue", gq.QueueID, "from", qs.cursor, "to", tbl)
	}
	if tbl < 0 {
		tbl = s.initialOffset(gq.Topic, gq.QueueID, initMode)
		s.o.Offsets.Commit(gq.Group, gq.Topic, gq.QueueID, tbl)
	}
	// The pops before it no longer decide the committed offset (they stay in flight: acks and the revive
	// service still find them).
	clear(qs.fifo)
	qs.fifo = qs.fifo[:0]
	qs.known, qs.cursor, qs.committed = true, tbl, tbl
	return tbl
}

// moveCursor moves the queue's cursor to off without a pop (messages nothing matched, or gone from the
// store). qs.pop must be held.
func (s *Engine) moveCursor(epoch uint64, qs *queueState, off int64) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.epoch == epoch {
		qs.cursor = off
		s.advanceLocked(qs)
	}
}

// advanceLocked commits the queue's pop offset as far as its settled pops allow: past every pop at the head
// of its fifo that is settled, to the cursor once none is left. s.st.mu must be held.
func (s *Engine) advanceLocked(qs *queueState) {
	if !qs.known {
		return
	}
	i := 0
	for i < len(qs.fifo) && qs.fifo[i].settled() {
		i++
	}
	off := int64(-1)
	switch {
	case i == len(qs.fifo):
		off = qs.cursor
	case i > 0:
		off = qs.fifo[i-1].next
	}
	if i > 0 {
		n := copy(qs.fifo, qs.fifo[i:])
		clear(qs.fifo[n:])
		qs.fifo = qs.fifo[:n]
	}
	if off >= 0 && off != qs.committed {
		gq := qs.gq
		s.o.Offsets.Commit(gq.Group, gq.Topic, gq.QueueID, off)
		qs.committed = off
	}
}

// finishLocked forgets c once it is done (unless its record is being written: the writer finishes it) and
// commits its queue's pop offset as far as that allows. s.st.mu must be held.
func (s *Engine) finishLocked(c *ckState) {
	if c.epoch != s.st.epoch || c.storing {
		return
	}
	if c.done() {
		s.st.removeLocked(c)
	}
	if c.queue != nil && c.settled() {
		s.advanceLocked(c.queue)
	}
}

// nextPop is where the group's next pop of the queue reads: the cursor when this term knows it, else the
// table's offset (-1: none).
func (s *Engine) nextPop(gq GroupQueue, order bool) int64 {
	tbl := s.o.Offsets.Query(gq.Group, gq.Topic, gq.QueueID)
	if order {
		return tbl
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if qs := s.st.queues[gq]; qs != nil && qs.known && qs.committed == tbl {
		return qs.cursor
	}
	return tbl
}

// writeCheckPoint writes c's record to its revive queue and then, with s.st.mu held, sets where it is
// (when the write succeeded) and calls then with the write's error. While the write runs the revive offset
// of the queue stays at or below where the record lands.
func (s *Engine) writeCheckPoint(ctx context.Context, c *ckState, then func(err error)) error {
	s.st.mu.Lock()
	rs := &s.st.revive[c.rq]
	rs.writing[c] = rs.end
	s.st.mu.Unlock()
	res, err := s.rlog.writeCheckPoint(ctx, c.rq, &c.ck, c.ck.PopTime)
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	delete(rs.writing, c)
	if err == nil {
		c.at = res.QueueOffset
		rs.end = max(rs.end, res.QueueOffset+1)
	}
	then(err)
	return err
}

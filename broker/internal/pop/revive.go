package pop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/store"
)

// The revive log (doc.go): the check-point (CK) and ack records of rmq_sys_REVIVE_LOG_<cluster>, messages
// like any other, so they are flushed, replicated and (in the Raft mode) committed like any other. The
// engine writes them and keeps what they say in memory from each put's result; it reads them only when a
// term begins (load.go), from each revive queue's revive offset (the ReviveGroup's consumer offset of that
// queue: the position of its oldest check point in flight).

// reviveLog writes and reads the revive topic.
type reviveLog struct {
	topic   string
	queues  int32
	store   Store
	offsets Offsets
	put     PutFunc
	host    netip.AddrPort // born host of the records: this broker
	// counted is told of every record put: group, topic, CK or ACK, and the put's error.
	counted func(group, topic, kind string, err error)
}

// writeCheckPoint writes ck to revive queue q and returns once the put path answered.
func (l *reviveLog) writeCheckPoint(ctx context.Context, q int32, ck *protocol.PopCheckPoint, born int64) (store.PutResult, error) {
	res, err := l.write(ctx, q, protocol.CheckPointTag, ck, born)
	l.counted(ck.CID, ck.Topic, "CK", err)
	return res, err
}

// writeAck writes an ack record (one offset) or a batch ack record (AckOffsetList) to revive queue q.
func (l *reviveLog) writeAck(ctx context.Context, q int32, a *protocol.AckMsg, born int64) error {
	tag := protocol.AckTag
	if len(a.AckOffsetList) > 0 {
		tag, a.AckOffset = protocol.BatchAckTag, -1
	}
	_, err := l.write(ctx, q, tag, a, born)
	l.counted(a.ConsumerGroup, a.Topic, "ACK", err)
	return err
}

func (l *reviveLog) write(ctx context.Context, q int32, tag string, body any, born int64) (store.PutResult, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return store.PutResult{}, fmt.Errorf("pop: encode %s record: %w", tag, err)
	}
	m := &message.Message{Topic: l.topic, QueueID: q, Body: b, BornTimestamp: born, BornHost: l.host,
		Properties: message.EncodeProperties(map[string]string{message.PropertyTags: tag})}
	res, err := l.put(ctx, m)
	if err != nil {
		return res, fmt.Errorf("pop: write %s record to %s queue %d: %w", tag, l.topic, q, err)
	}
	return res, nil
}

// reviveOffset is where a read of queue q starts when a term begins.
func (l *reviveLog) reviveOffset(q int32) int64 {
	return max(l.offsets.Query(protocol.ReviveGroup, l.topic, q), l.store.MinOffsetInQueue(l.topic, q))
}

// scanned is what one revive queue's records say: its check points in flight (at set, acked and written
// from its acks), and the offset after its last record.
type scanned struct {
	cks map[ckKey]*ckState
	end int64
}

// scan reads revive queue q from its revive offset to its end. A record that does not decode is skipped
// (it cannot name a check point); an ack of a check point not read is ignored. Reading a record again
// changes nothing (a check point is kept once, an ack sets bits), so a scan is idempotent.
func (l *reviveLog) scan(q int32) (scanned, error) {
	sc := scanned{cks: map[ckKey]*ckState{}, end: l.reviveOffset(q)}
	for {
		res, err := l.store.GetMessage(protocol.ReviveGroup, l.topic, q, sc.end, 64, maxReadBytes, nil)
		if err != nil {
			return sc, fmt.Errorf("pop: read revive queue %d at %d: %w", q, sc.end, err)
		}
		if res.Status != store.Found {
			next := res.NextBeginOffset
			res.Release()
			switch {
			case res.Status == store.OffsetOverflowBadly && next < sc.end:
				sc.end = next // the revive offset passed the queue's end (a log cut back): read from there
				continue
			case next > sc.end && res.Status != store.OffsetOverflowOne:
				sc.end = next // a hole (expired files): skip it
				continue
			}
			return sc, nil
		}
		for _, rec := range res.Records {
			m, err := message.DecodeMessage(rec, true)
			if err != nil {
				res.Release()
				return sc, fmt.Errorf("pop: revive queue %d at %d: %w", q, sc.end, err)
			}
			sc.apply(q, m)
			sc.end = m.QueueOffset + 1
		}
		res.Release()
	}
}

// apply applies one record of revive queue q.
func (sc *scanned) apply(q int32, m *message.MessageExt) {
	tag, _ := message.FindProperty(m.Properties, message.PropertyTags)
	switch tag {
	case protocol.CheckPointTag:
		var ck protocol.PopCheckPoint
		if json.Unmarshal(m.Body, &ck) != nil || ck.Num <= 0 || ck.Num > 32 || len(ck.QueueOffsetDiff) != int(ck.Num) {
			return
		}
		if k := keyOf(&ck); sc.cks[k] == nil {
			sc.cks[k] = &ckState{ck: ck, rq: q, at: m.QueueOffset, next: -1}
		}
	case protocol.AckTag, protocol.BatchAckTag:
		var a protocol.AckMsg
		if json.Unmarshal(m.Body, &a) != nil {
			return
		}
		k := ckKey{a.ConsumerGroup, a.Topic, a.QueueID, a.StartOffset, a.PopTime}
		c := sc.cks[k]
		if c == nil {
			return
		}
		offs := a.AckOffsetList
		if tag == protocol.AckTag {
			offs = []int64{a.AckOffset}
		}
		mask, _ := c.mask(offs)
		c.acked |= mask
		c.written |= mask
		if c.done() {
			delete(sc.cks, k)
		}
	}
}

// ackOf is the ack record of the messages of mask of c.
func (s *Engine) ackOf(c *ckState, mask uint32) *protocol.AckMsg {
	a := &protocol.AckMsg{StartOffset: c.ck.StartOffset, ConsumerGroup: c.ck.CID, Topic: c.ck.Topic,
		QueueID: c.ck.QueueID, PopTime: c.ck.PopTime, BrokerName: c.ck.BrokerName, AckOffsetList: c.offsets(mask)}
	if len(a.AckOffsetList) == 1 {
		a.AckOffset, a.AckOffsetList = a.AckOffsetList[0], nil
	}
	return a
}

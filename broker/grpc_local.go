package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/rocketraft/rocketraft/broker/internal/pop"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/proxy"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// grpcLocal is the broker as the gRPC endpoint of its local mode calls it (proxy.Local): sends, pops, acks,
// changes of invisible time and offsets run the handlers' own checks and the broker's own paths in process,
// with no connection, no header map and no copy of a body; a refusal carries the remoting code the request
// is answered with over remoting. The ACL is the endpoint's (it checks every call's signature).
type grpcLocal struct{ b *Broker }

var _ proxy.Local = grpcLocal{}

// localRefusal is a handler's refusal as the endpoint reads it.
func localRefusal(code remoting.RequestCode, resp *remoting.Command) error {
	return &client.ResponseError{Request: code, Addr: "local", Code: remoting.ResponseCode(resp.Code), Remark: resp.Remark}
}

// Serving reports whether this broker is its group's master now (a Raft leader that took the role, a
// classic master): a slave's endpoint reaches the master over remoting.
func (l grpcLocal) Serving() bool { return l.b.role.acceptsWrites() }

// sendOutcome is a put's answer, handed from the store's callback to the waiting call.
type sendOutcome struct {
	res store.PutResult
	err error
}

// SendMessage is SEND_MESSAGE_V2 of s: the checks of checkSendOn, the broker's properties, the retry and
// transaction rewrites, the put and its statistics, as send.go does them.
func (l grpcLocal) SendMessage(ctx context.Context, s *client.Send) (*client.SendResult, error) {
	b := l.b
	if s.Batch {
		return nil, &client.ResponseError{Request: remoting.SendBatchMessage, Addr: "local", Code: remoting.InvalidParameter,
			Remark: "local mode sends one message at a time"}
	}
	born := s.Born
	if born.IsZero() {
		born = time.Now()
	}
	h := &sendHeader{producerGroup: s.Group, topic: s.Topic, defaultTopic: TopicAutoCreate, defaultTopicQueueNums: 4,
		queueID: s.QueueID, sysFlag: s.SysFlag, bornTimestamp: born.UnixMilli(), properties: s.Properties}
	qid, resp := b.checkSendOn(h, nil, true)
	if resp != nil {
		return nil, localRefusal(remoting.SendMessageV2, resp)
	}
	if h.sysFlag&message.SysFlagTransactionPrepared != 0 && b.liveConfig().RejectTransactionMessage {
		return nil, localRefusal(remoting.SendMessageV2, errResponse(remoting.NoPermission,
			"the broker[%s] sending transaction message is forbidden (rejectTransactionMessage=true)", b.addr))
	}
	m := &message.Message{Topic: h.topic, QueueID: qid, Body: s.Body, Properties: b.addBrokerProperties(h.properties),
		SysFlag: h.sysFlag, BornTimestamp: h.bornTimestamp, BornHost: b.storeHost}
	if resp := b.redirectRetry(h, m, 0); resp != nil {
		return nil, localRefusal(remoting.SendMessageV2, resp)
	}
	if h.sysFlag&message.SysFlagTransactionMask == message.SysFlagTransactionPrepared {
		if err := b.toHalf(m); err != nil {
			return nil, localRefusal(remoting.SendMessageV2, errResponse(remoting.SystemError, "park the half message: %v", err))
		}
	}
	start := time.Now()
	done := make(chan sendOutcome, 1)
	b.putAsync(m, func(res store.PutResult, err error) { done <- sendOutcome{res, err} })
	var out sendOutcome
	select {
	case out = <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s in process: %w", remoting.SendMessageV2, ctx.Err())
	}
	if out.err != nil {
		return nil, localRefusal(remoting.SendMessageV2, putErrorResponse(out.err, h.topic))
	}
	b.countTimerPut(h.topic, m)
	b.admin.putTimes.recordPut(time.Since(start))
	b.countSend(h, out.res)
	uniq, _ := message.PropertyString(m.Properties, message.PropertyUniqKey)
	r := &client.SendResult{BrokerName: b.cfg.BrokerName, QueueID: qid, SendStatus: "SEND_OK", MsgID: uniq,
		OffsetMsgID: out.res.MsgID, QueueOffset: out.res.QueueOffset, RecallHandle: b.recallHandleOf(m)}
	switch out.res.Status {
	case store.PutFlushDiskTimeout:
		r.SendStatus = "FLUSH_DISK_TIMEOUT"
	case store.PutFlushSlaveTimeout:
		r.SendStatus = "FLUSH_SLAVE_TIMEOUT"
	case store.PutSlaveNotAvailable:
		r.SendStatus = "SLAVE_NOT_AVAILABLE"
	}
	return r, nil
}

// PopMessage is POP_MESSAGE of p: a pop that finds nothing waits, up to p.Poll, for a message of its topic
// or its group's retry topic (held with the remoting pops: popPollingSize and maxPopPollingSize count it),
// then pops again. The messages' bodies point into the store until the result's Release.
func (l grpcLocal) PopMessage(ctx context.Context, p *client.Pop) (*client.PopResult, error) {
	b := l.b
	h := &protocol.PopMessageRequestHeader{ConsumerGroup: p.Group, Topic: p.Topic, QueueID: p.QueueID,
		MaxMsgNums: int32(p.MaxNums), InvisibleTime: p.Invisible.Milliseconds(), PollTime: p.Poll.Milliseconds(),
		InitMode: protocol.PopInitModeMax, ExpType: p.ExpType, Exp: p.Exp, Order: p.Order, AttemptID: p.AttemptID}
	if p.FromStart {
		h.InitMode = protocol.PopInitModeMin
	}
	r, resp := b.popRequest(h, "in process")
	if resp != nil {
		return nil, localRefusal(remoting.PopMessage, resp)
	}
	deadline := time.Now().Add(p.Poll)
	for {
		a, err := b.pop.Pop(ctx, r)
		if err != nil {
			return nil, localRefusal(remoting.PopMessage, popErrResponse(err))
		}
		if a.Count > 0 {
			return l.popped(p, a)
		}
		a.Release()
		res := &client.PopResult{Status: client.PopNoNewMsg, PopTime: a.Header.PopTime, Invisible: a.Header.InvisibleTime}
		if !time.Now().Before(deadline) {
			return res, nil
		}
		held := &heldPop{wake: make(chan struct{}, 1), group: r.Group, topics: []string{r.Topic}, queueID: r.QueueID,
			deadline: deadline}
		if !r.Order {
			held.topics = append(held.topics, b.pop.RetryTopic(r.Topic, r.Group))
		}
		if !b.popPoll.hold(held) {
			res.Status = client.PopPollingFull
			return res, nil
		}
		if b.pop.HasMessage(r) { // arrived between the pop and the hold
			b.popPoll.arrived(r.Topic, r.QueueID)
		}
		select {
		case <-held.wake:
		case <-ctx.Done():
			b.popPoll.forget(held)
			return res, nil
		}
	}
}

// popped is the FOUND result of a's records, each with its receipt handle.
func (l grpcLocal) popped(p *client.Pop, a *pop.Answer) (*client.PopResult, error) {
	msgs := make([]*message.MessageExt, 0, len(a.Parts))
	for _, rec := range a.Parts {
		m, err := message.DecodeMessageView(rec)
		if err != nil {
			a.Release()
			return nil, fmt.Errorf("%s in process: %w", remoting.PopMessage, err)
		}
		msgs = append(msgs, m)
	}
	q := *p
	q.BrokerName = l.b.cfg.BrokerName
	out, err := client.PoppedMessages(&q, &a.Header, msgs)
	if err != nil {
		a.Release()
		return nil, fmt.Errorf("%s in process: %w", remoting.PopMessage, err)
	}
	return &client.PopResult{Status: client.PopFound, Msgs: out, PopTime: a.Header.PopTime, Invisible: a.Header.InvisibleTime,
		RestNum: a.Header.RestNum, Release: a.Release}, nil
}

// BatchAck is BATCH_ACK_MESSAGE of handles: one entry per pop, one result per handle.
func (l grpcLocal) BatchAck(ctx context.Context, group, topic string, handles []protocol.ExtraInfo) ([]error, error) {
	b := l.b
	errs := make([]error, len(handles))
	var acks []protocol.BatchAck
	entryOf := make([]int, len(handles))
	for hi, ei := range handles {
		entryOf[hi] = -1
		real, err := protocol.RealTopic(topic, group, ei.RetryMark)
		if err != nil || ei.QueueOffset < ei.CKQueueOffset {
			errs[hi] = &client.ResponseError{Request: remoting.BatchAckMessage, Addr: "local", Code: remoting.InvalidParameter,
				Remark: fmt.Sprintf("receipt handle %q does not name a message of its check point of %s", ei.String(), topic)}
			continue
		}
		if resp := b.checkHandle(real, ei); resp != nil {
			errs[hi] = localRefusal(remoting.BatchAckMessage, resp)
			continue
		}
		i := -1
		for j := range acks {
			a := &acks[j]
			if a.Retry == ei.RetryMark && a.QueueID == ei.QueueID && a.StartOffset == ei.CKQueueOffset &&
				a.PopTime == ei.PopTime && a.ReviveQueueID == ei.ReviveQueueID {
				i = j
				break
			}
		}
		if i < 0 {
			i = len(acks)
			acks = append(acks, protocol.BatchAck{ConsumerGroup: group, Topic: topic, Retry: ei.RetryMark,
				StartOffset: ei.CKQueueOffset, QueueID: ei.QueueID, ReviveQueueID: ei.ReviveQueueID, PopTime: ei.PopTime,
				InvisibleTime: ei.InvisibleTime})
		}
		acks[i].SetOffset(ei.QueueOffset)
		entryOf[hi] = i
	}
	if len(acks) == 0 {
		return errs, nil
	}
	results, err := b.pop.BatchAck(ctx, acks)
	if err != nil {
		return nil, localRefusal(remoting.BatchAckMessage, popErrResponse(err))
	}
	for hi, i := range entryOf {
		if i < 0 {
			continue
		}
		r := results[i]
		for _, off := range r.NotInFlight {
			if off == handles[hi].QueueOffset {
				errs[hi] = localRefusal(remoting.BatchAckMessage, popErrResponse(fmt.Errorf("%w: queue offset %d", pop.ErrHandleNotInFlight, off)))
			}
		}
		if errs[hi] == nil && r.Err != nil {
			errs[hi] = localRefusal(remoting.BatchAckMessage, popErrResponse(r.Err))
		}
	}
	return errs, nil
}

// ChangeInvisibleTime is CHANGE_MESSAGE_INVISIBLETIME of the message of h.
func (l grpcLocal) ChangeInvisibleTime(ctx context.Context, group, topic string, h protocol.ExtraInfo, invisible time.Duration) (string, error) {
	b := l.b
	real, err := protocol.RealTopic(topic, group, h.RetryMark)
	if err != nil || h.QueueOffset < 0 {
		return "", &client.ResponseError{Request: remoting.ChangeMessageInvisibleTime, Addr: "local", Code: remoting.InvalidParameter,
			Remark: fmt.Sprintf("receipt handle %q does not name a message (queue offset, retry mark)", h.String())}
	}
	if invisible.Milliseconds() <= 0 {
		return "", &client.ResponseError{Request: remoting.ChangeMessageInvisibleTime, Addr: "local", Code: remoting.InvalidParameter,
			Remark: fmt.Sprintf("invisibleTime %d must be positive (ms)", invisible.Milliseconds())}
	}
	if resp := b.checkHandle(real, h); resp != nil {
		return "", localRefusal(remoting.ChangeMessageInvisibleTime, resp)
	}
	popTime, err := b.pop.ChangeInvisible(ctx, group, real, h.QueueID, h.QueueOffset, h, invisible.Milliseconds())
	if err != nil {
		return "", localRefusal(remoting.ChangeMessageInvisibleTime, popErrResponse(err))
	}
	h.CKQueueOffset, h.PopTime, h.InvisibleTime = h.QueueOffset, popTime, invisible.Milliseconds()
	return h.String(), nil
}

// QueryConsumerOffset is QUERY_CONSUMER_OFFSET (consumer_manage.go).
func (l grpcLocal) QueryConsumerOffset(ctx context.Context, group, topic string, queueID int32) (int64, bool, error) {
	b := l.b
	if off := b.offsets.query(group, topic, queueID); off >= 0 {
		return off, true, nil
	}
	if b.store.MinOffsetInQueue(topic, queueID) <= 0 && !b.store.CheckInDiskByConsumeOffset(topic, queueID, 0) {
		return 0, true, nil
	}
	return 0, false, nil
}

// UpdateConsumerOffset is UPDATE_CONSUMER_OFFSET from one of the group's consumers (consumer_manage.go: a
// commit is held off while a reset of the queue is pending).
func (l grpcLocal) UpdateConsumerOffset(ctx context.Context, group, topic string, queueID int32, offset int64) error {
	b := l.b
	if b.topics.get(topic) == nil {
		return localRefusal(remoting.UpdateConsumerOffset, errResponse(remoting.TopicNotExist, "topic[%s] not exist", topic))
	}
	if b.resets.blocks(group, topic, queueID, offset) {
		return nil // as RocketMQ 5: answered SUCCESS, not applied
	}
	b.offsets.commit(group, topic, queueID, offset)
	return nil
}

// QueueOffset is GET_MIN_OFFSET, GET_MAX_OFFSET or SEARCH_OFFSET_BY_TIMESTAMP.
func (l grpcLocal) QueueOffset(ctx context.Context, code remoting.RequestCode, topic string, queueID int32, ts int64) (int64, error) {
	st := l.b.store
	switch code {
	case remoting.GetMinOffset:
		return st.MinOffsetInQueue(topic, queueID), nil
	case remoting.GetMaxOffset:
		return st.MaxOffsetInQueue(topic, queueID), nil
	case remoting.SearchOffsetByTimestamp:
		return st.OffsetInQueueByTime(topic, queueID, ts), nil
	}
	return 0, &client.ResponseError{Request: code, Addr: "local", Code: remoting.RequestCodeNotSupported,
		Remark: fmt.Sprintf("%s is not an offset query", code)}
}

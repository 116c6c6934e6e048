package proxy

import (
	"context"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
	"github.com/rocketraft/rocketraft/remoting"
)

// queueOf resolves a v2 message queue to the native client's queue at addr (the master for writes, else a
// node to read from).
func (s *Server) queueOf(ctx context.Context, mq *v2pb.MessageQueue, write bool) (client.Queue, error) {
	topic := mq.GetTopic().GetName()
	if err := checkTopic(topic); err != nil {
		return client.Queue{}, err
	}
	name := mq.GetBroker().GetName()
	if name == "" {
		return client.Queue{}, fail(v2pb.Code_BAD_REQUEST, "the message queue names no broker")
	}
	if mq.GetId() < 0 {
		return client.Queue{}, fail(v2pb.Code_BAD_REQUEST, "queue id %d: this call needs one queue", mq.GetId())
	}
	r, err := s.routes.get(ctx, topic)
	if err != nil {
		return client.Queue{}, err
	}
	addr := r.master(name)
	if !write {
		addr = r.reader(name)
	}
	if addr == "" {
		return client.Queue{}, fail(v2pb.Code_NOT_FOUND, "broker %s serves topic %s from no node now", name, topic)
	}
	q := client.Queue{Addr: addr}
	q.Topic, q.BrokerName, q.QueueID = topic, name, mq.GetId()
	return q, nil
}

// filterOf is a filter expression as the pull's subscription: a tag expression ("" = "*"); SQL92 is refused
// here (a pull's SQL subscription needs a heartbeat-registered one).
func filterOf(f *v2pb.FilterExpression) (string, error) {
	switch f.GetType() {
	case v2pb.FilterType_FILTER_TYPE_UNSPECIFIED, v2pb.FilterType_TAG:
		if e := f.GetExpression(); e != "" {
			return e, nil
		}
		return "*", nil
	}
	return "", fail(v2pb.Code_ILLEGAL_FILTER_EXPRESSION, "filter type %s is not served by PullMessage; use TAG", f.GetType())
}

// PullMessage pulls one queue from an offset (PULL_MESSAGE, held up to long_polling_timeout when nothing is
// there): the stream answers a status, the messages, then the next offset.
func (s *Server) PullMessage(req *v2pb.PullMessageRequest, stream v2pb.MessagingService_PullMessageServer) error {
	ctx := stream.Context()
	answer := func(st *v2pb.Status) error {
		return stream.Send(&v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_Status{Status: st}})
	}
	group := req.GetGroup().GetName()
	if err := checkGroup(group); err != nil {
		return answer(toStatus(err))
	}
	sub, err := filterOf(req.GetFilterExpression())
	if err != nil {
		return answer(toStatus(err))
	}
	q, err := s.queueOf(ctx, req.GetMessageQueue(), false)
	if err != nil {
		return answer(toStatus(err))
	}
	batch := int(req.GetBatchSize())
	if batch <= 0 || batch > 32 {
		batch = 32
	}
	if req.GetOffset() < 0 {
		return answer(st(v2pb.Code_ILLEGAL_OFFSET, "offset %d is negative", req.GetOffset()))
	}
	hold := req.GetLongPollingTimeout().AsDuration()
	p := &client.Pull{Group: group, Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID, Offset: req.GetOffset(),
		MaxNums: batch, LongPoll: hold > 0, Suspend: hold, Subscription: sub}
	pctx, cancel := context.WithTimeout(ctx, hold+s.c.Timeout())
	defer cancel()
	resp, err := s.c.Invoke(pctx, q.Addr, s.c.PullCommand(p))
	if err != nil {
		return answer(toStatus(err))
	}
	res, err := client.ParsePull(q.Addr, resp)
	if err != nil && res == nil {
		return answer(toStatus(err))
	}
	switch res.Status {
	case client.PullOffsetIllegal:
		if err := answer(st(v2pb.Code_ILLEGAL_OFFSET, "offset %d is out of the queue's range; next %d", req.GetOffset(), res.NextBegin)); err != nil {
			return err
		}
	case client.PullFound:
		if err := answer(ok()); err != nil {
			return err
		}
		for _, m := range res.Msgs {
			if err := stream.Send(&v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_Message{Message: fromMessageExt(m, q.Topic)}}); err != nil {
				return err
			}
		}
	default:
		if err := answer(st(v2pb.Code_MESSAGE_NOT_FOUND, "no new message in %s after offset %d", q, req.GetOffset())); err != nil {
			return err
		}
	}
	next := res.NextBegin
	if next < 0 {
		next = req.GetOffset()
	}
	return stream.Send(&v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_NextOffset{NextOffset: next}})
}

// UpdateOffset stores a pull consumer's offset of one queue (UPDATE_CONSUMER_OFFSET).
func (s *Server) UpdateOffset(ctx context.Context, req *v2pb.UpdateOffsetRequest) (*v2pb.UpdateOffsetResponse, error) {
	group := req.GetGroup().GetName()
	if err := checkGroup(group); err != nil {
		return &v2pb.UpdateOffsetResponse{Status: toStatus(err)}, nil
	}
	if req.GetOffset() < 0 {
		return &v2pb.UpdateOffsetResponse{Status: st(v2pb.Code_ILLEGAL_OFFSET, "offset %d is negative", req.GetOffset())}, nil
	}
	q, err := s.queueOf(ctx, req.GetMessageQueue(), true)
	if err == nil {
		err = s.pop.UpdateConsumerOffset(ctx, group, q, req.GetOffset())
	}
	if err != nil {
		return &v2pb.UpdateOffsetResponse{Status: toStatus(err)}, nil
	}
	return &v2pb.UpdateOffsetResponse{Status: ok()}, nil
}

// GetOffset answers a pull consumer's stored offset of one queue; OFFSET_NOT_FOUND when it has none.
func (s *Server) GetOffset(ctx context.Context, req *v2pb.GetOffsetRequest) (*v2pb.GetOffsetResponse, error) {
	group := req.GetGroup().GetName()
	if err := checkGroup(group); err != nil {
		return &v2pb.GetOffsetResponse{Status: toStatus(err)}, nil
	}
	q, err := s.queueOf(ctx, req.GetMessageQueue(), false)
	if err != nil {
		return &v2pb.GetOffsetResponse{Status: toStatus(err)}, nil
	}
	off, found, err := s.pop.QueryConsumerOffset(ctx, group, q)
	switch {
	case err != nil:
		return &v2pb.GetOffsetResponse{Status: toStatus(err)}, nil
	case !found:
		return &v2pb.GetOffsetResponse{Status: st(v2pb.Code_OFFSET_NOT_FOUND, "group %s has no offset of %s", group, q)}, nil
	}
	return &v2pb.GetOffsetResponse{Status: ok(), Offset: off}, nil
}

// QueryOffset answers a queue's first offset (BEGINNING), its end (END) or the first at or after a time
// (TIMESTAMP).
func (s *Server) QueryOffset(ctx context.Context, req *v2pb.QueryOffsetRequest) (*v2pb.QueryOffsetResponse, error) {
	q, err := s.queueOf(ctx, req.GetMessageQueue(), false)
	if err != nil {
		return &v2pb.QueryOffsetResponse{Status: toStatus(err)}, nil
	}
	code, ts := remoting.GetMinOffset, int64(0)
	switch req.GetQueryOffsetPolicy() {
	case v2pb.QueryOffsetPolicy_END:
		code = remoting.GetMaxOffset
	case v2pb.QueryOffsetPolicy_TIMESTAMP:
		if req.Timestamp == nil {
			return &v2pb.QueryOffsetResponse{Status: st(v2pb.Code_BAD_REQUEST, "policy TIMESTAMP needs a timestamp")}, nil
		}
		code, ts = remoting.SearchOffsetByTimestamp, req.GetTimestamp().AsTime().UnixMilli()
	}
	off, err := s.pop.QueueOffset(ctx, code, q, ts)
	if err != nil {
		return &v2pb.QueryOffsetResponse{Status: toStatus(err)}, nil
	}
	return &v2pb.QueryOffsetResponse{Status: ok(), Offset: off}, nil
}

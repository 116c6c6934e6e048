package broker

import (
	"context"

	"github.com/rocketraft/rocketraft/remoting"
)

// processQueryMessage is QUERY_MESSAGE: messages of a topic by key (or unique id) in a time range.
func (b *Broker) processQueryMessage(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, err := req.ExtString("topic")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	key, err := req.ExtString("key")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	maxNum, err := req.OptInt32("maxNum", 32)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	begin, err := req.OptInt64("beginTimestamp", 0)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	end, err := req.OptInt64("endTimestamp", 1<<62)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if uniq, _ := req.OptBool("_UNIQUE_KEY_QUERY", false); uniq {
		maxNum = 32 // RocketMQ's defaultQueryMaxNum for id lookups
	}
	res, err := b.store.QueryMessage(topic, key, int(maxNum), begin, end)
	if err != nil {
		return errResponse(remoting.SystemError, "query %s by key %q: %v", topic, key, err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.SetExt("indexLastUpdateTimestamp", itoa(res.IndexLastUpdateTimestamp))
	resp.SetExt("indexLastUpdatePhyoffset", itoa(res.IndexLastUpdatePhyoffset))
	if len(res.Records) == 0 {
		res.Release()
		return errResponse(remoting.QueryNotFound, "can not find message, maybe time range not correct")
	}
	resp.BodyParts = res.Records
	resp.Release = res.Release
	return resp
}

// processViewMessageByID is VIEW_MESSAGE_BY_ID: one stored message by its physical offset.
func (b *Broker) processViewMessageByID(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	off, err := req.ExtInt64("offset")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	rec, release, err := b.store.SelectRecord(off)
	if err != nil {
		return errResponse(remoting.SystemError, "can not find message by the offset, %d: %v", off, err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.BodyParts = [][]byte{rec}
	resp.Release = release
	return resp
}

package broker

import (
	"context"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

// Admin requests the broker passes on to one consumer client (RocketMQ's callConsumer): the admin tool
// cannot reach clients, the broker holds a connection to each.
const (
	// minCallConsumerVersion is V3_1_8_SNAPSHOT: older clients answer neither request.
	minCallConsumerVersion = 62
	// callConsumerTimeout bounds the wait for the client's answer (RocketMQ: 5 s).
	callConsumerTimeout = 5 * time.Second
)

// processGetConsumerRunningInfo is GET_CONSUMER_RUNNING_INFO (mqadmin consumerProgress -s): the client's
// own report of the queues it holds, its subscriptions and its rates, asked of the client and answered as
// it came.
func (b *Broker) processGetConsumerRunningInfo(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return b.callConsumer(ctx, req, nil)
}

// processConsumeMessageDirectly is CONSUME_MESSAGE_DIRECTLY (mqadmin queryMsgById -g -d): the message named
// by its offset id (msgId) is handed to one client of the group to consume now; the client's
// ConsumeMessageDirectlyResult is the answer.
func (b *Broker) processConsumeMessageDirectly(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	id, err := req.ExtString("msgId")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	_, phy, err := message.DecodeOffsetMsgID(id)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "msgId %s is not an offset message id: %v", id, err)
	}
	rec, release, err := b.store.SelectRecord(phy)
	if err != nil {
		return errResponse(remoting.SystemError, "can not find message by the offset, %d: %v", phy, err)
	}
	body := append([]byte(nil), rec...) // the client's answer may outlive the mapped file's hold
	release()
	return b.callConsumer(ctx, req, body)
}

// callConsumer sends req's code and header (plus brokerName, and body when not nil) to the client
// req.clientId of group req.consumerGroup and answers with the client's response.
func (b *Broker) callConsumer(ctx context.Context, req *remoting.Command, body []byte) *remoting.Command {
	group, err := req.ExtString("consumerGroup")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	clientID, err := req.ExtString("clientId")
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	var target *clientChannel
	for _, ch := range b.clients.consumerChannels(group) {
		if ch.clientID == clientID {
			target = &ch
			break
		}
	}
	if target == nil {
		return errResponse(remoting.SystemError, "The Consumer <%s> <%s> not online", group, clientID)
	}
	if target.version < minCallConsumerVersion {
		return errResponse(remoting.SystemError, "The Consumer <%s> Version <%d> too low to finish, please upgrade it to V3_1_8_SNAPSHOT",
			clientID, target.version)
	}
	ext := make(map[string]string, len(req.ExtFields)+1)
	for k, v := range req.ExtFields {
		ext[k] = v
	}
	ext["brokerName"] = b.cfg.BrokerName
	ctx, cancel := context.WithTimeout(ctx, callConsumerTimeout)
	defer cancel()
	resp, err := target.conn.Invoke(ctx, remoting.NewRequest(remoting.RequestCode(req.Code), ext, body))
	if err != nil {
		return errResponse(remoting.SystemError, "invoke consumer <%s> <%s>: %v", group, clientID, err)
	}
	out := remoting.NewResponse(remoting.ResponseCode(resp.Code), resp.Remark)
	out.Body = resp.Body
	return out
}

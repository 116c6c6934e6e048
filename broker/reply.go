package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// pushReplyTimeout bounds the PUSH_REPLY_MESSAGE_TO_CLIENT call to the requester.
const pushReplyTimeout = 3 * time.Second

// processSendReply is SEND_REPLY_MESSAGE(_V2): a responder's reply goes straight to the requesting
// client (found by REPLY_TO_CLIENT) as PUSH_REPLY_MESSAGE_TO_CLIENT, and is also stored in the reply topic
// when storeReplyMessageEnable is set.
func (b *Broker) processSendReply(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := parseSendHeader(req)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "bad reply header: %v", err)
	}
	qid, resp := b.checkSend(h, conn)
	if resp != nil {
		return resp
	}
	m := &message.Message{Topic: h.topic, QueueID: qid, Flag: h.flag, Body: req.Body, Properties: h.properties,
		SysFlag: h.sysFlag, BornTimestamp: h.bornTimestamp, BornHost: addrPortOf(b.role.clientAddr(conn, req)), ReconsumeTimes: h.reconsumeTimes}
	pushErr := b.pushReply(ctx, h, m)
	if !b.cfg.StoreReplyMessageEnable {
		if pushErr != nil {
			return errResponse(remoting.SystemError, "push reply message failed: %v", pushErr)
		}
		return remoting.NewResponse(remoting.Success, "")
	}
	if pushErr != nil {
		b.log.Warn("push reply message failed; it is stored in the reply topic", "topic", h.topic, "err", pushErr)
	}
	b.putAsync(m, func(res store.PutResult, err error) {
		if err := conn.Reply(req, b.sendResponse(h, qid, res, err)); err != nil {
			b.log.Debug("reply to responder", "client", conn.RemoteAddr(), "err", err)
		}
	})
	return nil
}

// pushReply sends the reply to the connection of the client named by REPLY_TO_CLIENT.
func (b *Broker) pushReply(ctx context.Context, h *sendHeader, m *message.Message) error {
	clientID, ok := message.FindProperty(m.Properties, message.PropertyReplyToClient)
	if !ok || clientID == "" {
		return &putError{"the reply message has no REPLY_TO_CLIENT property"}
	}
	target := b.clients.clientConn(clientID)
	if target == nil {
		return &putError{"no connection of the requesting client " + clientID + " on this broker"}
	}
	now := time.Now().UnixMilli()
	props := message.EditProperties(m.Properties, func(p map[string]string) {
		p[message.PropertyPushReplyTime] = strconv.FormatInt(now, 10)
	})
	ext := map[string]string{
		"producerGroup":         h.producerGroup,
		"topic":                 h.topic,
		"defaultTopic":          h.defaultTopic,
		"defaultTopicQueueNums": strconv.Itoa(int(h.defaultTopicQueueNums)),
		"queueId":               strconv.Itoa(int(m.QueueID)),
		"sysFlag":               strconv.Itoa(int(h.sysFlag)),
		"bornTimestamp":         strconv.FormatInt(h.bornTimestamp, 10),
		"flag":                  strconv.Itoa(int(h.flag)),
		"properties":            props,
		"reconsumeTimes":        strconv.Itoa(int(h.reconsumeTimes)),
		"unitMode":              strconv.FormatBool(h.unitMode),
		"bornHost":              m.BornHost.String(),
		"storeHost":             b.addr,
		"storeTimestamp":        strconv.FormatInt(now, 10),
	}
	cctx, cancel := context.WithTimeout(ctx, pushReplyTimeout)
	defer cancel()
	resp, err := target.Invoke(cctx, remoting.NewRequest(remoting.PushReplyMessageToClient, ext, m.Body))
	if err != nil {
		return err
	}
	if resp.Code != int32(remoting.Success) {
		return &remoteError{code: resp.Code, remark: resp.Remark}
	}
	return nil
}

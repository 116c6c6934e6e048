package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// The requests the broker passes on to one consumer client (its callConsumer): GET_CONSUMER_RUNNING_INFO for
// consumerProgress -s, CONSUME_MESSAGE_DIRECTLY for queryMsgById -g -d. And queryMsgById -s (resend).

// queueOwners asks each client of group (through the broker that lists its connections) which queues it
// holds, and returns the owner's address (the client id's part before '@', as RocketMQ shows it). Clients
// that do not answer are left out, as in RocketMQ's tool. (The official Go client often cannot answer: it
// fails to encode its own report when a rate is NaN, and sends SUCCESS with an empty body.)
func (r *runner) queueOwners(ctx context.Context, group string) map[protocol.MessageQueue]string {
	owners := map[protocol.MessageQueue]string{}
	refs, err := r.groupBrokers(ctx, group)
	if err != nil || len(refs) == 0 {
		return owners
	}
	cc, err := r.consumerConnection(ctx, group, refs[0].addr)
	if err != nil {
		return owners
	}
	for _, c := range cc.ConnectionSet {
		resp, err := r.c.Call(ctx, refs[0].addr, remoting.GetConsumerRunningInfo,
			map[string]string{"consumerGroup": group, "clientId": c.ClientID, "jstackEnable": "false"}, nil)
		if err != nil {
			continue
		}
		var info protocol.ConsumerRunningInfo
		if protocol.UnmarshalFastJSON(resp.Body, &info) != nil {
			continue
		}
		ip, _, _ := strings.Cut(c.ClientID, "@")
		for _, e := range info.MQTable {
			owners[e.MQ] = ip
		}
	}
	return owners
}

// consumeResultNames are RocketMQ's CMResult names by ordinal (the Go client sends the ordinal, Java the name).
var consumeResultNames = []string{"CR_SUCCESS", "CR_LATER", "CR_ROLLBACK", "CR_COMMIT", "CR_THROW_EXCEPTION", "CR_RETURN_NULL"}

// directResult is a ConsumeMessageDirectlyResult.
type directResult struct {
	MsgID          string `json:"msgId"`
	Order          bool   `json:"order"`
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  string `json:"consumeResult"`
	Remark         string `json:"remark"`
	SpentTimeMills int64  `json:"spentTimeMills"`
}

func (d directResult) String() string {
	return fmt.Sprintf("ConsumeMessageDirectlyResult [order=%t, autoCommit=%t, consumeResult=%s, remark=%s, spentTimeMills=%d]",
		d.Order, d.AutoCommit, d.ConsumeResult, orNull(d.Remark), d.SpentTimeMills)
}

type directResults struct {
	Results []directResult `json:"results"`
}

func (r *directResults) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, d := range r.Results {
		t.printf("%s\n", d)
	}
	return t.err
}

// consumeDirectly has client clientID of group consume each message now (CONSUME_MESSAGE_DIRECTLY through
// the broker that stores it).
func (r *runner) consumeDirectly(ctx context.Context, msgs []*message.MessageExt, group, clientID string) (*directResults, error) {
	res := &directResults{Results: []directResult{}}
	for _, m := range msgs {
		v := newMessageView(m)
		resp, err := r.c.Call(ctx, v.StoreHost, remoting.ConsumeMessageDirectly, map[string]string{
			"consumerGroup": group, "clientId": clientID, "msgId": v.OffsetMsgID, "topic": v.Topic}, nil)
		if err != nil {
			return res, err
		}
		var raw struct {
			Order          bool            `json:"order"`
			AutoCommit     bool            `json:"autoCommit"`
			ConsumeResult  json.RawMessage `json:"consumeResult"`
			Remark         string          `json:"remark"`
			SpentTimeMills int64           `json:"spentTimeMills"`
		}
		if err := json.Unmarshal(resp.Body, &raw); err != nil {
			return res, fmt.Errorf("consume directly answer of %s: %w", clientID, err)
		}
		d := directResult{MsgID: v.MsgID, Order: raw.Order, AutoCommit: raw.AutoCommit, Remark: raw.Remark,
			SpentTimeMills: raw.SpentTimeMills, ConsumeResult: strings.Trim(string(raw.ConsumeResult), `"`)}
		if n, err := strconv.Atoi(d.ConsumeResult); err == nil && n >= 0 && n < len(consumeResultNames) {
			d.ConsumeResult = consumeResultNames[n]
		}
		res.Results = append(res.Results, d)
	}
	return res, nil
}

type resendResult struct {
	Results []resent `json:"results"`
}

type resent struct {
	OriginalMsgID string `json:"originalMsgId"`
	client.SendResult
}

func (r *resendResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, s := range r.Results {
		t.printf("prepare resend msg. originalMsgId=%s\n", s.OriginalMsgID)
		sm := &sendMessageResult{s.SendResult}
		if t.err == nil {
			t.err = sm.writeText(w)
		}
	}
	return t.err
}

// resend sends each message again to its topic, with its properties (its unique id too) and body, as
// RocketMQ's tool does with a producer.
func (r *runner) resend(ctx context.Context, msgs []*message.MessageExt) (result, error) {
	res := &resendResult{Results: []resent{}}
	for _, m := range msgs {
		v := newMessageView(m)
		route, err := r.c.Route(ctx, m.Topic)
		if err != nil {
			return res, err
		}
		queues := client.RouteQueues(route, m.Topic, "", true)
		if len(queues) == 0 {
			return res, fmt.Errorf("topic %s has no writable queue", m.Topic)
		}
		sr, err := r.sendToAny(ctx, queues, message.ParseProperties(m.Properties), v.body)
		if err != nil {
			return res, err
		}
		res.Results = append(res.Results, resent{OriginalMsgID: v.MsgID, SendResult: *sr})
	}
	return res, nil
}

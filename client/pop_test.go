package client_test

import (
	"net/netip"
	"testing"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

func popRecord(t *testing.T, topic string, queueID int32, offset int64, props map[string]string) []byte {
	t.Helper()
	host := netip.MustParseAddrPort("10.0.0.5:10911")
	m := &message.MessageExt{Message: message.Message{Topic: topic, QueueID: queueID, Body: []byte("b"),
		Properties: message.EncodeProperties(props), BornHost: host, ReconsumeTimes: 2}, QueueOffset: offset, StoreHost: host}
	b, err := message.EncodeRecord(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ParsePop builds receipt handles as the 5.x Java client does: from startOffsetInfo and the answer's
// popTime, invisibleTime and reviveQid, or the broker's POP_CK for a redelivered message, and an ordered
// pop's attempt from orderCountInfo.
func TestParsePopHandles(t *testing.T) {
	h := protocol.PopMessageResponseHeader{PopTime: 1000, InvisibleTime: 60000, ReviveQid: 3, RestNum: 7,
		StartOffsetInfo: "0 1 40", MsgOffsetInfo: "0 1 40,42"}
	body := append(popRecord(t, "T", 1, 40, nil), popRecord(t, "T", 1, 42, nil)...)
	retried := protocol.ExtraInfo{CKQueueOffset: 5, PopTime: 1000, InvisibleTime: 60000, ReviveQueueID: 3,
		RetryMark: protocol.RetryMarkV1, BrokerName: "b", QueueID: 0, QueueOffset: 5}.String()
	body = append(body, popRecord(t, "T", 0, 5, map[string]string{message.PropertyPopCK: retried})...)
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields, resp.Body = h.Ext(), body
	res, err := client.ParsePop("b:1", &client.Pop{Topic: "T", BrokerName: "b"}, resp)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"40 1000 60000 3 0 b 1 40", "40 1000 60000 3 0 b 1 42", retried}
	if res.Status != client.PopFound || res.RestNum != 7 || len(res.Msgs) != 3 {
		t.Fatalf("result %+v", res)
	}
	for i, m := range res.Msgs {
		if m.ReceiptHandle != want[i] || m.Attempt != 3 {
			t.Errorf("message %d: handle %q attempt %d, want %q attempt 3", i, m.ReceiptHandle, m.Attempt, want[i])
		}
	}
	// An ordered pop: the attempt is the broker's count of deliveries.
	h = protocol.PopMessageResponseHeader{PopTime: 1000, InvisibleTime: 60000, ReviveQid: protocol.PopOrderReviveQueue,
		StartOffsetInfo: "0 0 7", MsgOffsetInfo: "0 0 7", OrderCountInfo: "0 0 4"}
	resp.ExtFields, resp.Body = h.Ext(), popRecord(t, "T", 0, 7, nil)
	if res, err = client.ParsePop("b:1", &client.Pop{Topic: "T", BrokerName: "b", Order: true}, resp); err != nil {
		t.Fatal(err)
	}
	if m := res.Msgs[0]; !m.Handle.Order() || m.Attempt != 5 {
		t.Errorf("ordered: handle %q attempt %d, want revive queue 999 and attempt 5", m.ReceiptHandle, m.Attempt)
	}
	// No message: POLLING_TIMEOUT; another code is a *ResponseError.
	resp = remoting.NewResponse(remoting.PollingTimeout, "")
	if res, err := client.ParsePop("b:1", &client.Pop{Topic: "T"}, resp); err != nil || res.Status != client.PopNoNewMsg {
		t.Errorf("POLLING_TIMEOUT: %+v, %v", res, err)
	}
	resp = remoting.NewResponse(remoting.SubscriptionGroupNotExist, "no group")
	if _, err := client.ParsePop("b:1", &client.Pop{Topic: "T"}, resp); !client.HasCode(err, remoting.SubscriptionGroupNotExist) {
		t.Errorf("SUBSCRIPTION_GROUP_NOT_EXIST: %v", err)
	}
}

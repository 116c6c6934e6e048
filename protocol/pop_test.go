package protocol

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestExtraInfoText(t *testing.T) {
	e := ExtraInfo{CKQueueOffset: 5, PopTime: 1700000000000, InvisibleTime: 60000, ReviveQueueID: 3,
		RetryMark: RetryMarkV1, BrokerName: "broker-a", QueueID: 2, QueueOffset: 7}
	const want = "5 1700000000000 60000 3 1 broker-a 2 7" // ExtraInfoUtil.buildExtraInfo's layout
	if got := e.String(); got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	back, err := ParseExtraInfo(want)
	if err != nil || back != e {
		t.Fatalf("ParseExtraInfo = %+v, %v", back, err)
	}
	seven, err := ParseExtraInfo("5 1 2 999 0 b 0")
	if err != nil || seven.QueueOffset != -1 || !seven.Order() {
		t.Fatalf("seven fields: %+v, %v", seven, err)
	}
	for _, bad := range []string{"", "1 2 3", "x 1 2 3 0 b 0 1", "1 2 3 4 9 b 0 1", "1 2 3 4 0 b q 1"} {
		if _, err := ParseExtraInfo(bad); err == nil {
			t.Errorf("ParseExtraInfo(%q) accepted", bad)
		}
	}
}

func TestPopTopicNames(t *testing.T) {
	if got := PopRetryTopicV1("T", "G"); got != "%RETRY%G_T" || RetryMark(got) != RetryMarkV1 {
		t.Errorf("v1 %q mark %q", got, RetryMark(got))
	}
	if got := PopRetryTopicV2("T", "G"); got != "%RETRY%G+T" || RetryMark(got) != RetryMarkV2 {
		t.Errorf("v2 %q mark %q", got, RetryMark(got))
	}
	if ReviveTopic("DefaultCluster") != "rmq_sys_REVIVE_LOG_DefaultCluster" || RetryMark("T") != RetryMarkNormal {
		t.Error("revive topic or normal mark")
	}
	if real, err := RealTopic("T", "G", "1"); err != nil || real != "%RETRY%G_T" {
		t.Errorf("RealTopic = %q, %v", real, err)
	}
}

func TestOffsetInfo(t *testing.T) {
	var b strings.Builder
	AppendStartOffsetInfo(&b, "T", 0, 10)
	AppendStartOffsetInfo(&b, "%RETRY%G_T", 0, 3)
	if b.String() != "0 0 10;1 0 3" {
		t.Fatalf("startOffsetInfo %q", b.String())
	}
	var o strings.Builder
	AppendMsgOffsetInfo(&o, "T", 1, []int64{4, 6})
	m, err := ParseOffsetInfo(o.String())
	if err != nil || !slices.Equal(m[OffsetInfoKey("T", 1)], []int64{4, 6}) {
		t.Fatalf("ParseOffsetInfo(%q) = %v, %v", o.String(), m, err)
	}
	for _, bad := range []string{"0 1", "0 1 x", "0 1 2;0 1 3"} {
		if _, err := ParseOffsetInfo(bad); err == nil {
			t.Errorf("ParseOffsetInfo(%q) accepted", bad)
		}
	}
}

// BatchAck's bit set is java.util.BitSet.toByteArray, base64 in JSON as fastjson writes a byte[].
func TestBatchAckBitSet(t *testing.T) {
	a := BatchAck{StartOffset: 100}
	a.SetOffset(100)
	a.SetOffset(109)
	b, err := json.Marshal(&a)
	if err != nil || !strings.Contains(string(b), `"b":"AQI="`) {
		t.Fatalf("json %s, %v", b, err)
	}
	var back BatchAck
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.Offsets(), []int64{100, 109}) {
		t.Fatalf("Offsets = %v, %v", back.Offsets(), err)
	}
}

func TestPopHeadersRoundTrip(t *testing.T) {
	h := &PopMessageRequestHeader{ConsumerGroup: "G", Topic: "T", QueueID: -1, MaxMsgNums: 32, InvisibleTime: 1000,
		PollTime: 0, BornTime: 1, InitMode: PopInitModeMin, ExpType: "TAG", Exp: "*", Order: true, AttemptID: "a"}
	back, err := ParsePopMessageRequestHeader(h.Ext())
	if err != nil || *back != *h {
		t.Fatalf("pop header %+v, %v", back, err)
	}
	ext := h.Ext()
	delete(ext, "invisibleTime")
	if _, err := ParsePopMessageRequestHeader(ext); err == nil || !strings.Contains(err.Error(), "invisibleTime") {
		t.Errorf("missing invisibleTime: %v", err)
	}
	c := &ChangeInvisibleTimeRequestHeader{AckMessageRequestHeader: AckMessageRequestHeader{ConsumerGroup: "G", Topic: "T",
		QueueID: 1, ExtraInfo: "e", Offset: 4}, InvisibleTime: 9}
	if back, err := ParseChangeInvisibleTimeRequestHeader(c.Ext()); err != nil || *back != *c {
		t.Errorf("change header %+v, %v", back, err)
	}
}

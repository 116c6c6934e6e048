package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The operations pages' API against the fake: arguments checked and named, what reaches the Source and the
// Admin, and the answers' shape.
func TestOpsReadAPI(t *testing.T) {
	src := newFakeSource()
	src.messages = []Message{{MsgID: "U1", OffsetMsgID: "O1", Topic: "%DLQ%G1", ReconsumeTimes: 3, Body: []byte("poison"),
		Properties: map[string]string{"DLQ_ORIGIN_TOPIC": "Orders", "DLQ_ORIGIN_MESSAGE_ID": "O0"}}}
	s := newTestServer(t, src)

	var tb traceBody
	call(t, s, get("/api/messages/U1/trace"), http.StatusOK, &tb)
	if tb.TraceTopic != DefaultTraceTopic || len(tb.Records) != 1 || src.count("MessageTrace RMQ_SYS_TRACE_TOPIC U1") != 1 {
		t.Fatalf("trace: %+v %v", tb, src.calls)
	}
	call(t, s, get("/api/messages/U1/trace?traceTopic=MyTrace"), http.StatusOK, &tb)
	if tb.TraceTopic != "MyTrace" || src.count("MessageTrace MyTrace U1") != 1 {
		t.Fatalf("trace topic: %+v", tb)
	}
	callError(t, s, get("/api/messages/U1/trace?traceTopic=a%20b"), http.StatusBadRequest, "parameter traceTopic")

	var db dlqBody
	call(t, s, get("/api/dlq?group=G1&begin=1000&end=2000&max=7"), http.StatusOK, &db)
	if db.Topic != "%DLQ%G1" || len(db.Messages) != 1 || db.Messages[0].OriginTopic != "Orders" || db.Messages[0].OriginMsgID != "O0" ||
		db.Messages[0].ReconsumeTimes != 3 || src.count("MessagesByTime %DLQ%G1 1000 2000 7") != 1 {
		t.Fatalf("dlq: %+v %v", db, src.calls)
	}
	callError(t, s, get("/api/dlq"), http.StatusBadRequest, "parameter group is required")
	callError(t, s, get("/api/dlq?group=G1&begin=5&end=5"), http.StatusBadRequest, "begin (5) must be before end (5)")
	callError(t, s, get("/api/dlq?group=a%20b"), http.StatusBadRequest, "parameter group")

	// The export is a download of the messages in full.
	w := serve(t, s, get("/api/dlq/export?group=G1&begin=1000&end=2000"))
	if cd := w.Header().Get("Content-Disposition"); w.Code != http.StatusOK || !strings.HasPrefix(cd, `attachment; filename="DLQG1-`) {
		t.Fatalf("export: %d %q", w.Code, cd)
	}
	var eb exportBody
	if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil || len(eb.Messages) != 1 || string(eb.Messages[0].Body) != "poison" {
		t.Fatalf("export body: %v %s", err, w.Body.String())
	}
	callError(t, s, get("/api/dlq/export"), http.StatusBadRequest, "parameter group is required")

	var sb subGroupsBody
	call(t, s, get("/api/subgroups"), http.StatusOK, &sb)
	if len(sb.Groups) != 1 || sb.Groups[0].Config.GroupName != "G1" {
		t.Fatalf("subgroups: %+v", sb)
	}
	var ri RunningInfo
	call(t, s, get("/api/groups/G1/clients/10.0.0.1@c1"), http.StatusOK, &ri)
	if ri.ClientID != "10.0.0.1@c1" || src.count("RunningInfo G1 10.0.0.1@c1") != 1 {
		t.Fatalf("running info: %+v", ri)
	}
	var bc brokerConfigBody
	call(t, s, get("/api/brokers/127.0.0.1:10911/config"), http.StatusOK, &bc)
	if bc.Config["brokerName"] != "broker-a" {
		t.Fatalf("broker config: %+v", bc)
	}
	callError(t, s, get("/api/brokers/10.1.1.1:10911/config"), http.StatusNotFound, "no broker at 10.1.1.1:10911")
	var tt topicTPSBody
	call(t, s, get("/api/tps/topics"), http.StatusOK, &tt)
	if len(tt.Topics) != 1 || tt.Topics[0].InTPS != 2.5 {
		t.Fatalf("topic tps: %+v", tt)
	}
	call(t, s, get("/api/tps/topics"), http.StatusOK, &tt) // within five intervals: the held answer
	if n := src.count("TopicTPS"); n != 1 {
		t.Fatalf("the topics' TPS asked of the cluster %d times, want 1", n)
	}
}

func TestOpsChangeAPI(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src)

	var rb resendBody
	call(t, s, change("POST", "/api/dlq/resend", `{"group":"G1","ids":["O1","O2"]}`), http.StatusOK, &rb)
	if a := src.lastAdmin(); len(rb.Results) != 2 || len(a.resent) != 2 || a.resent[1] != "%DLQ%G1 O2" {
		t.Fatalf("resend: %+v %+v", rb, a)
	}
	callError(t, s, change("POST", "/api/dlq/resend", `{"group":"G1","ids":[]}`), http.StatusBadRequest, "give 1 to 1000 message ids")
	callError(t, s, change("POST", "/api/dlq/resend", `{"ids":["O1"]}`), http.StatusBadRequest, "group is required")
	callError(t, s, request{method: "POST", path: "/api/dlq/resend", body: `{"group":"G1","ids":["O1"]}`,
		header: map[string]string{"Content-Type": "application/json"}}, http.StatusForbidden, "X-Console-Request")

	var bb brokersBody
	call(t, s, change("POST", "/api/subgroups", `{"cluster":"DefaultCluster","config":{"groupName":"G2","retryMaxTimes":3}}`), http.StatusOK, &bb)
	call(t, s, change("DELETE", "/api/subgroups/G2?cluster=DefaultCluster", ""), http.StatusOK, &bb)
	if a := src.lastAdmin(); len(a.subgroups) != 1 || a.subgroups[0] != "delete G2@DefaultCluster" {
		t.Fatalf("subgroups: %+v", a)
	}
	for _, c := range []struct{ body, want string }{
		{`{"config":{"groupName":"G2"}}`, "cluster is required"},
		{`{"cluster":"C","config":{"groupName":"a b"}}`, `config.groupName "a b"`},
		{`{"cluster":"C","config":{"groupName":"G","retryMaxTimes":-2}}`, "config.retryMaxTimes -2"},
		{`{"cluster":"C","config":{"groupName":"G","retryQueueNums":5000}}`, "config.retryQueueNums 5000"},
		{`{"cluster":"C","config":{"groupName":"G","brokerId":-1}}`, "config.brokerId"},
		{`{"cluster":"C","config":{"groupName":"G","bogus":1}}`, "unknown field"},
	} {
		callError(t, s, change("POST", "/api/subgroups", c.body), http.StatusBadRequest, c.want)
	}
	callError(t, s, change("DELETE", "/api/subgroups/G2", ""), http.StatusBadRequest, "parameter cluster is required")

	var sr SendResult
	call(t, s, change("POST", "/api/topics/Orders/send", `{"tags":"TagA","keys":"k1 k2","body":"hello"}`), http.StatusOK, &sr)
	if a := src.lastAdmin(); sr.Status != "SEND_OK" || len(a.sent) != 1 || a.sent[0] != (TestMessage{Topic: "Orders", Tags: "TagA", Keys: "k1 k2", Body: "hello"}) {
		t.Fatalf("send: %+v %+v", sr, a)
	}
	callError(t, s, change("POST", "/api/topics/Orders/send", `{"body":""}`), http.StatusBadRequest, "body is required")
	callError(t, s, change("POST", "/api/topics/Orders/send", `{"body":"x","tags":"a||b"}`), http.StatusBadRequest, "one tag")
	callError(t, s, change("POST", "/api/topics/Orders/send", `{"body":"`+strings.Repeat("x", maxTestBody+1)+`"}`), http.StatusBadRequest, "more than the 32768")

	var dr DirectResult
	call(t, s, change("POST", "/api/messages/O1/consume", `{"topic":"Orders","group":"G1","clientId":"c1"}`), http.StatusOK, &dr)
	if a := src.lastAdmin(); dr.ConsumeResult != "CR_SUCCESS" || len(a.direct) != 1 || a.direct[0] != "Orders O1 G1 c1" {
		t.Fatalf("consume: %+v %+v", dr, a)
	}
	callError(t, s, change("POST", "/api/messages/O1/consume", `{"group":"G1"}`), http.StatusBadRequest, "clientId is required")
	callError(t, s, change("POST", "/api/messages/O1/consume", `{"clientId":"c"}`), http.StatusBadRequest, "group is required")
}

// The topics' TPS is sampled every fifth interval, and only once a page asked for it.
func TestSamplerTopicTPS(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src) // interval 1 s, history one minute
	ctx := context.Background()
	t0 := time.Now()
	s.sampler.sample(ctx, t0)
	if n := src.count("TopicTPS"); n != 0 || len(s.hist.topicSnapshot()) != 0 {
		t.Fatalf("topics sampled (%d calls) before a page asked", n)
	}
	var tt topicTPSBody
	call(t, s, get("/api/tps/topics"), http.StatusOK, &tt)
	for i := 1; i <= 6; i++ { // samples 2 to 7 of the sampler: the 6th is due
		s.sampler.sample(ctx, t0.Add(time.Duration(i)*time.Second))
	}
	topics := s.hist.topicSnapshot()
	if len(topics) != 1 || topics[0].Topic != "Orders" || len(topics[0].Points) != 1 || topics[0].Points[0].In != 2.5 {
		t.Fatalf("topic history: %+v", topics)
	}
	if n := src.count("TopicTPS"); n != 1 { // the page's answer, held, was the sample
		t.Fatalf("the topics' TPS asked %d times, want 1", n)
	}
	var hb historyBody
	call(t, s, get("/api/history"), http.StatusOK, &hb)
	if len(hb.Topics) != 1 || hb.Topics[0].Topic != "Orders" {
		t.Fatalf("history topics: %+v", hb.Topics)
	}
}

package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
)

// traceRecord joins the fields of one trace record as clients write them.
func traceRecord(fields ...string) string {
	return strings.Join(fields, string(rune(message.TraceContentSep))) + string(rune(message.TraceFieldSep))
}

// queryMsgTraceById over trace messages in older clients' forms, sent with mqadmin sendMessage: the records
// of the message asked for are kept (not those of another message in the same trace message), a record
// without a client host gets the trace message's born host, and a SubAfter its SubBefore's.
func TestQueryMsgTraceById(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) { cfg.TraceTopicEnable = true }})
	ns := c.NamesrvAddr()
	c.WaitTopicRoute(defaultTraceTopic)
	const m1, m2 = "C0A80001000018B4AAC2000000000001", "C0A80001000018B4AAC2000000000002"
	pubs := traceRecord("Pub", "1700000000100", "DefaultRegion", "PG", "Orders", m1, "TagA", "k1", "127.0.0.1:10911", "5", "3", "0", "true") +
		traceRecord("Pub", "1700000000101", "DefaultRegion", "PG", "Orders", m2, "TagA", "k2", "127.0.0.1:10911", "5", "3", "0", "true")
	subs := traceRecord("SubBefore", "1700000000200", "DefaultRegion", "CG", "R1", m1, "0", "k1", "10.0.0.8") +
		traceRecord("SubAfter", "R1", m1, "4", "false", "k1", "4", "1700000000204", "CG")
	ok(t, "sendMessage", "-n", ns, "-t", defaultTraceTopic, "-p", pubs, "-k", m1+" "+m2)
	ok(t, "sendMessage", "-n", ns, "-t", defaultTraceTopic, "-p", subs, "-k", m1)

	var res traceResult
	testutil.WaitFor(t, 20*time.Second, "the three records of "+m1, func() bool {
		okJSON(t, &res, "queryMsgTraceById", "-n", ns, "-i", m1)
		return len(res.Records) == 3
	})
	pub, before, after := res.Records[0], res.Records[1], res.Records[2]
	if pub.Type != message.TracePub || pub.MsgID != m1 || pub.Group != "PG" || pub.ClientHost != "127.0.0.1" || !pub.Success {
		t.Errorf("Pub: %+v", pub)
	}
	if before.Type != message.TraceSubBefore || before.ClientHost != "10.0.0.8" || before.RequestID != "R1" {
		t.Errorf("SubBefore: %+v", before)
	}
	if after.Type != message.TraceSubAfter || after.ClientHost != "10.0.0.8" || after.Success || after.CostTime != 4 || after.ContextCode != 4 {
		t.Errorf("SubAfter: %+v", after)
	}
	out := ok(t, "queryMsgTraceById", "-n", ns, "-i", m1)
	contains(t, out, "#ProducerGroup", "Pub        PG                   127.0.0.1", "#ConsumerGroup",
		"Sub        CG                   10.0.0.8", "4ms        failed")
	if out := ok(t, "queryMsgTraceById", "-n", ns, "-i", "C0A80001000018B4AAC2000000000009"); !strings.Contains(out, "no trace of message") {
		t.Fatalf("unknown message: %q", out)
	}
	failing(t, ExitBadArgs, []string{"option -c (--maxNum) must be positive"}, "queryMsgTraceById", "-n", ns, "-i", m1, "-c", "0")
}

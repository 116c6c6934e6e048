package protocol

import (
	"reflect"
	"testing"
)

// What the broker writes, the tools read back: AppendQueueTable's fastjson through UnmarshalFastJSON into
// a QueueTable, sorted as MessageQueue.compareTo.
func TestQueueTableRoundTrip(t *testing.T) {
	in := []QueueEntry[OffsetWrapper]{
		{MQ: MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}, Value: OffsetWrapper{BrokerOffset: 5, ConsumerOffset: 3}},
		{MQ: MessageQueue{Topic: "T", BrokerName: "a", QueueID: 7}, Value: OffsetWrapper{BrokerOffset: 2, LastTimestamp: 9}},
		{MQ: MessageQueue{Topic: "S", BrokerName: "b", QueueID: 0}, Value: OffsetWrapper{BrokerOffset: 1}},
	}
	b, err := AppendQueueTable([]byte(`{"offsetTable":`), append([]QueueEntry[OffsetWrapper](nil), in...))
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '}')
	want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"S"}:{"brokerOffset":1,"consumerOffset":0,"lastTimestamp":0,"pullOffset":0},` +
		`{"brokerName":"a","queueId":7,"topic":"T"}:{"brokerOffset":2,"consumerOffset":0,"lastTimestamp":9,"pullOffset":0},` +
		`{"brokerName":"b","queueId":1,"topic":"T"}:{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":0,"pullOffset":0}}}`
	if string(b) != want {
		t.Fatalf("fastjson\n%s\nwant\n%s", b, want)
	}
	var out struct {
		OffsetTable QueueTable[OffsetWrapper] `json:"offsetTable"`
	}
	if err := UnmarshalFastJSON(b, &out); err != nil {
		t.Fatal(err)
	}
	sorted := QueueTable[OffsetWrapper]{in[2], in[1], in[0]}
	if !reflect.DeepEqual(out.OffsetTable, sorted) {
		t.Fatalf("decoded %+v, want %+v", out.OffsetTable, sorted)
	}
	var empty struct {
		OffsetTable QueueTable[int64] `json:"offsetTable"`
	}
	if err := UnmarshalFastJSON([]byte(`{"offsetTable":{}}`), &empty); err != nil || empty.OffsetTable != nil {
		t.Fatalf("empty table: %+v %v", empty, err)
	}
}

func TestUnmarshalBareIntKeys(t *testing.T) {
	var m map[string]map[int32]int64
	if err := UnmarshalBareIntKeys([]byte(`{"T@g":{0:5, 1:7},"U@g":{-1:2}}`), &m); err != nil {
		t.Fatal(err)
	}
	if m["T@g"][0] != 5 || m["T@g"][1] != 7 || m["U@g"][-1] != 2 {
		t.Fatalf("decoded %v", m)
	}
	if err := UnmarshalBareIntKeys([]byte(`{"T@g":{0:}`), &m); err == nil {
		t.Fatal("a broken body decoded")
	}
}

package protocol

import (
	"bytes"
	"compress/zlib"
	"reflect"
	"testing"
)

// FuzzDecodeRegisterBrokerBody: REGISTER_BROKER's body comes from any peer that can reach the port, as JSON
// or in RocketMQ's compressed form. The decoder never panics and never allocates past its limits (the
// fuzzer's own memory limit catches that), and a compressed body it accepts encodes again to one that
// decodes to the same table. The fuzzer works on the inflated bytes: the zlib checksum would stop it at the
// door otherwise.
func FuzzDecodeRegisterBrokerBody(f *testing.F) {
	rb := RegisterBrokerBody{FilterServerList: []string{}}
	rb.TopicConfigSerializeWrapper.TopicConfigTable = map[string]*TopicConfig{
		"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"},
	}
	rb.TopicConfigSerializeWrapper.DataVersion.Counter = 3
	z, err := EncodeRegisterBrokerBodyCompressed(rb)
	if err != nil {
		f.Fatal(err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		f.Fatal(err)
	}
	var inflated bytes.Buffer
	if _, err := inflated.ReadFrom(zr); err != nil {
		f.Fatal(err)
	}
	f.Add(inflated.Bytes(), true)
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"T","perm":6}},"dataVersion":{"counter":1,"timestamp":2}},"filterServerList":[]}`), false)
	f.Fuzz(func(t *testing.T, b []byte, compressed bool) {
		body := b
		if compressed {
			var zb bytes.Buffer
			zw := zlib.NewWriter(&zb)
			_, _ = zw.Write(b)
			_ = zw.Close()
			body = zb.Bytes()
		}
		got, err := DecodeRegisterBrokerBody(body, compressed)
		if err != nil || !compressed {
			return
		}
		again, err := EncodeRegisterBrokerBodyCompressed(got)
		if err != nil {
			return
		}
		back, err := DecodeRegisterBrokerBody(again, true)
		if err != nil {
			t.Fatalf("re-encoded body does not decode: %v", err)
		}
		if !reflect.DeepEqual(back.TopicConfigSerializeWrapper.TopicConfigTable, got.TopicConfigSerializeWrapper.TopicConfigTable) {
			t.Fatalf("topic table changed in a round trip:\n%+v\n%+v", got.TopicConfigSerializeWrapper.TopicConfigTable,
				back.TopicConfigSerializeWrapper.TopicConfigTable)
		}
	})
}
